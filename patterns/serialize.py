"""``python -m inductor_conv.patterns.serialize``: trace every search pattern afresh and write the shipped files.

Run it after changing a search function or a variant list (tests/test_shipped_patterns.py fails until you do), under
each supported torch (2.11 and 2.13; a CPU build will do): each run updates the files of its own torch release, and a
release whose trace equals another's shares that file (its ``TORCH`` lists both).  Note [pattern cache] in
pattern_cache.py.  Takes a few minutes on a 2-core CPU (every variant of every capability is traced).
"""
from __future__ import annotations

import argparse
import importlib
import pathlib
import time

from inductor_conv._compat import PatternMatcherPass
from inductor_conv.patterns import graph_pass, pattern_cache
from inductor_conv.patterns.pattern_cache import (
    RELEASE,
    SHIPPED_DIR,
    pattern_key,
    releases_in,
    render_module,
    with_releases,
)



def fresh_sources() -> dict[str, dict[str, str]]:
    """{capability: {variant name: Python}} of a fresh trace of every capability the pass registers."""
    with pattern_cache.recording() as recorded:
        for module, _, _ in graph_pass.CAPABILITIES:
            # past register's functools.cache: a real registration, into a pass nobody applies
            importlib.import_module(module).register.__wrapped__(PatternMatcherPass())
    return recorded


def expected_text(capability: str, sources: dict[str, str], releases: tuple[str, ...]) -> str:
    return render_module(capability, pattern_key(capability), releases, sources)


def _release_order(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def write(capability: str, sources: dict[str, str], release: str = RELEASE,
          directory: pathlib.Path = SHIPPED_DIR) -> tuple[pathlib.Path, bool]:
    """Make ``release``'s shipped file of ``capability`` hold ``sources``; return (its path, whether a file changed).

    The file whose text, but for its TORCH line, equals the new one gains ``release``; the others lose it and go when
    they serve no release.  A capability with one file names it ``<capability>.py``; with several (traces that differ
    between releases), each is ``<capability>.torch<its first release>.py``."""
    body = expected_text(capability, sources, ())
    files = {path: path.read_text() for path in pattern_cache.shipped_files(capability, directory)}
    kept = []
    for text in files.values():
        releases = set(releases_in(text)) - {release}
        if with_releases(text, ()) == body:
            releases.add(release)
        if releases:
            kept.append(with_releases(text, tuple(sorted(releases, key=_release_order))))
    if not any(release in releases_in(text) for text in kept):
        kept.append(with_releases(body, (release,)))
    named = {directory / (f"{capability}.py" if len(kept) == 1 else f"{capability}.torch{releases_in(text)[0]}.py"):
             text for text in kept}
    directory.mkdir(parents=True, exist_ok=True)
    for path in files.keys() - named.keys():
        path.unlink()
    for path, text in named.items():
        if files.get(path) != text:
            path.write_text(text)
    (mine,) = [path for path, text in named.items() if release in releases_in(text)]
    return mine, named != files


def main(argv=None) -> int:
    argparse.ArgumentParser(prog="python -m inductor_conv.patterns.serialize", description=__doc__.split("\n\n")[0]
                            ).parse_args(argv)
    start = time.perf_counter()
    recorded = fresh_sources()
    print(f"traced every variant under torch {RELEASE} in {time.perf_counter() - start:.0f} s")
    for capability, sources in recorded.items():
        path, changed = write(capability, sources)
        print(f"{capability}: {len(sources)} patterns -> {path} (torch {', '.join(releases_in(path.read_text()))})"
              f"{'' if changed else ', unchanged'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
