"""Traced search patterns shipped with the package, or kept on disk, so that a process does not trace them.

Note [pattern cache]
Tracing a capability's search patterns (``gen_pattern``: make_fx of each variant's search function, and of its
joint forward+backward for the training variants) takes 40-80 s a capability on a 2-core CPU.  Inductor never pays
this for its own attention patterns: it ships them serialised as Python (``PatternPrettyPrinter``,
torch/_inductor/fx_passes/serialized_patterns/, written by a script and checked by a test).  So do we:

* Shipped: ``patterns/serialized/<capability>.py`` holds every variant's pattern as a function that rebuilds it,
  for the torch releases listed in its ``TORCH`` (one file serves several releases whose traces are equal;
  ``<capability>.torch<release>.py`` when they differ).  Written by ``python -m inductor_conv.patterns.serialize``
  (REGENERATE), checked by tests/test_shipped_patterns.py (the shipped text equals a fresh trace's), installed as
  package data (pyproject.toml).  Used whatever the cache settings: they are part of the package, not a cache.
  Imported as a module, so Python's bytecode cache applies (pip compiles it at install): importing and rebuilding
  every variant of both capabilities takes a few tenths of a second, their whole registration ~1.5 s of CPU.
* Disk cache, for a torch release with no shipped file, or sources edited since the shipped one was written: the
  first process traces and writes the same kind of module to ``inductor_conv_patterns/<capability>.torch<version>.py``
  in Inductor's cache directory (a temporary file renamed: a concurrent reader sees the old file or the new one);
  later processes import it.  ``config.pattern_cache = False`` or Inductor's ``force_disable_caches`` turn this part
  off.  It is Python run from the per-user directory where Inductor keeps the Python it imports for its own compiled
  graphs: the same trust.
* Otherwise every variant is traced.  The log (``TORCH_LOGS=inductor_conv``) says which source served each
  capability, and a stale shipped file is a warning that names REGENERATE.
* A variant is stored only if its Python rebuilds an equal pattern (``PatternExpr.pattern_eq``): Inductor's printer
  cannot write every pattern (``rebuilding_source``).  One it cannot is traced by every process (the serialiser warns).
* The printer writes each use of an argument as its own ``KeywordArg(name)``, where a trace shares one object per
  name, and ``pattern_eq`` cannot tell the two apart.  The matcher can: a ``MultiOutputPattern`` finds each further
  output from nodes already bound to pattern objects, so a training pattern whose forward and backward share only
  their inputs (the conv without activation: ``convolution(x, w)`` and ``convolution_backward(.., x, w)``) finds its
  backward only through the shared ``KeywordArg`` objects.  ``share_keyword_args`` makes one object per name in
  every pattern, rebuilt or traced (a trace repeats a scalar's ``KeywordArg``), and a variant is stored only if its
  rebuilt pattern shares the objects the traced one shares (without this the conv without activation went
  unrewritten in training).

The key.  A stored pattern is paired by its name (index and name in the capability's variant list) with that
variant's replacement and ``extra_check``, so it must never outlive a change of the search functions or of the
variant list: ``KEY`` hashes the files that define them (``_DEFINED_IN``; an unlisted capability hashes every file
of patterns/), and a file whose ``KEY`` differs is not used.  The kernels, lowerings, checks (checks.py,
attention_checks.py), the attention widening (``relax``, applied to a loaded pattern exactly as to a fresh one) and
the passes that run after the rewrites (conv_output_layout.py) live in other files and are left out: they do not
change a trace, and editing them must not throw the shipped patterns away (the conv capabilities' ``_generalise``
is in their defining files, so an edit there means regenerating).  What else shapes a trace (torch's
decompositions, the normalisation in the trace functions, ``_compat``'s wrappers) can only change the form a pattern
is written in, never what it computes: a stale form would miss graphs, not rewrite them wrongly.  Those are what the
shipped test catches, and the shipped file is chosen by torch release (``TORCH``), the disk file by torch's full
version.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import importlib.util
import logging
import os
import pathlib
import re
import tempfile
import time
import types

import torch

from inductor_conv import _compat, config
from inductor_conv._compat import (
    CallFunction,
    KeywordArg,
    MultiOutputPattern,
    PatternExpr,
    TORCH_VERSION,
    inductor_cache_dir,
    inductor_caches_disabled,
    pattern_namespace,
    pattern_source,
)
from inductor_conv.patterns.rewrite_log import name_pattern

log = logging.getLogger(__name__)

FORMAT = 2  # bump when the generated module's layout changes (it is part of KEY)
REGENERATE = "python -m inductor_conv.patterns.serialize"
SHIPPED_DIR = pathlib.Path(__file__).parent / "serialized"
RELEASE = f"{TORCH_VERSION[0]}.{TORCH_VERSION[1]}"  # what a shipped file's TORCH lists
# The files (in patterns/) whose text defines a capability's variants: search functions, variant list, example inputs.
_DEFINED_IN = {
    "causal_conv1d": ("causal_conv1d_silu.py",),
    "attention": ("attention.py", "attention_forms.py"),
    # its forms and variants, and the table's pieces they are built from (probabilities, scales); the widening is
    # attention's
    "attention_model_forms": ("attention_model_forms.py", "attention_forms.py"),
    "causal_conv1d_update": ("causal_conv1d_update.py", "causal_conv1d_silu.py"),  # its activations are the conv's
}

# While serialize.fresh_sources runs: {capability: {variant name: Python}} of every pattern traced (Note above).
_recording: dict[str, dict[str, str]] | None = None


@functools.cache
def pattern_key(capability: str) -> str:
    """FORMAT and the hash of the files that define ``capability``'s variants (Note [pattern cache], the key)."""
    here = pathlib.Path(__file__).parent
    names = _DEFINED_IN.get(capability) or sorted(p.name for p in here.glob("*.py"))
    digest = hashlib.sha256()
    for name in names:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return f"{FORMAT}-{digest.hexdigest()[:24]}"


def cache_enabled() -> bool:
    return config.pattern_cache and not inductor_caches_disabled()


def cache_dir() -> pathlib.Path:
    return pathlib.Path(config.pattern_cache_dir or os.path.join(inductor_cache_dir(), "inductor_conv_patterns"))


def shipped_files(capability: str, directory: pathlib.Path | None = None) -> list[pathlib.Path]:
    """The shipped pattern files of ``capability`` (one per distinct trace), whatever torch they serve."""
    directory = directory or SHIPPED_DIR
    return sorted([*directory.glob(f"{capability}.py"), *directory.glob(f"{capability}.torch*.py")])


def load_module(path: pathlib.Path, bytecode: bool = True):
    """Run a generated pattern module from ``path`` (not entered into ``sys.modules``).  ``bytecode``: through Python's
    bytecode cache (the shipped files); else compiled from the text (the disk cache, whose files are replaced in place
    faster than the cache's one-second timestamps tell apart)."""
    name = f"inductor_conv.patterns.serialized.{path.stem}"
    if not bytecode:
        module = types.ModuleType(name)
        module.__file__ = str(path)
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102 (Note [pattern cache])
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_TORCH_LINE = re.compile(r"^TORCH = (.*?)  #.*$", re.M)


def releases_in(text: str) -> tuple[str, ...]:
    """The ``TORCH`` of a generated module's text (read without running it: the other releases' files are large)."""
    return ast.literal_eval(_TORCH_LINE.search(text).group(1))


def with_releases(text: str, releases: tuple[str, ...]) -> str:
    """A generated module's text with ``TORCH = releases``."""
    return _TORCH_LINE.sub(lambda m: m.group(0).replace(m.group(1), repr(releases), 1), text, count=1)


def shipped(capability: str):
    """(path, module) of the shipped file whose ``TORCH`` lists this torch's release, or None."""
    for path in shipped_files(capability):
        with open(path) as f:
            head = f.read(4096)
        if RELEASE not in releases_in(head):
            continue
        try:
            return path, load_module(path)
        except Exception as e:  # a file this torch cannot import (a name _compat lacks): not ours to use
            log.warning("%s: cannot import the shipped %s (%s)", capability, path.name, e)
    return None


def render_module(capability: str, key: str, torch_versions: tuple[str, ...], sources: dict[str, str]) -> str:
    """The text of a generated pattern module: ``PATTERNS`` maps each variant name to a function rebuilding its
    pattern from ``sources[name]`` (``pattern_source``'s Python, which assigns the pattern to ``output``)."""
    names = sorted({n for source in sources.values() for n in re.findall(r"\b([A-Z]\w*)\(", source)})
    missing = [n for n in names if not hasattr(_compat, n)]
    if missing:
        raise ValueError(f"the traced patterns use {missing}: import them in inductor_conv/_compat.py")
    lines = [
        f"# Traced search patterns of inductor_conv's {capability} capability (Note [pattern cache] in",
        f"# patterns/pattern_cache.py). Generated by `{REGENERATE}`: do not edit.",
        "# mypy: ignore-errors",
        "# ruff: noqa",
        "# flake8: noqa",
        "# fmt: off",
        "import operator",
        "",
        "import torch",
        "",
        *([f"from inductor_conv._compat import {', '.join(names)}", ""] if names else []),
        "aten, prims = torch.ops.aten, torch.ops.prims",
        f"CAPABILITY = {capability!r}",
        f"TORCH = {tuple(torch_versions)!r}  # the torch releases whose trace this is",
        f"KEY = {key!r}  # pattern_key(CAPABILITY) of the sources traced",
    ]
    for i, (name, source) in enumerate(sources.items()):
        lines += ["", "", f"def _p{i}():  # {name}", *(f"    {line}" for line in source.strip().splitlines()),
                  "    return output"]
    lines += ["", "", "PATTERNS = {", *(f"    {name!r}: _p{i}," for i, name in enumerate(sources)), "}", ""]
    return "\n".join(lines)


def _disk_module(path: pathlib.Path, capability: str, key: str):
    try:
        module = load_module(path, bytecode=False)
    except FileNotFoundError:
        return None
    except Exception as e:  # a damaged file: traced again and rewritten
        log.info("%s: cannot import %s (%s)", capability, path, e)
        return None
    ours = module.__dict__.get("KEY") == key and torch.__version__ in module.__dict__.get("TORCH", ())
    return module if ours else None


def share_keyword_args(pattern):
    """``pattern`` with one ``KeywordArg`` object per name, as a trace makes it (Note [pattern cache]); in place."""
    shared: dict[str, KeywordArg] = {}
    seen: set[int] = set()

    def share(a):  # a KeywordArg by its name's one object, also inside a list argument (aten.cat's tensors)
        if type(a) is KeywordArg:
            return shared.setdefault(a.name, a)
        if isinstance(a, (list, tuple)):
            items = [share(x) for x in a]
            return a if all(x is y for x, y in zip(items, a)) else type(a)(items)
        return a

    def visit(p):
        if id(p) in seen:
            return
        seen.add(id(p))
        if isinstance(p, MultiOutputPattern):
            for out in p.outputs:
                visit(out)
        elif isinstance(p, (list, tuple)):
            for a in p:
                visit(a)
        elif isinstance(p, CallFunction):
            args = [share(a) for a in p.args]
            kwargs = {k: share(a) for k, a in p.kwargs.items()}
            if any(a is not b for a, b in zip((*args, *kwargs.values()), (*p.args, *p.kwargs.values()))):
                p.__init__(p.fns, *args, _users=p.users, **kwargs)
            for a in (*args, *kwargs.values()):
                visit(a)

    visit(pattern)
    return pattern


def _sharing(pattern) -> list[int]:
    """Which pattern objects are one object, in a walk of ``pattern``: each visited node's index in first-visit order
    (``pattern_eq`` compares values; the matcher also relies on identity: Note [pattern cache])."""
    order: dict[int, int] = {}
    walk: list[int] = []

    def visit(p):
        seen = id(p) in order
        walk.append(order.setdefault(id(p), len(order)))
        if seen:
            return
        children = p.outputs if isinstance(p, MultiOutputPattern) else getattr(p, "flat_args_kwargs", ((),))[0]
        for child in children:
            if isinstance(child, PatternExpr):
                visit(child)

    visit(pattern)
    return walk


def rebuilding_source(pattern) -> str | None:
    """``pattern_source``'s Python for ``pattern``, or None where it does not rebuild an equal pattern (with the
    objects shared as the trace shares them)."""
    try:
        source = pattern_source(pattern)
        namespace = pattern_namespace()
        exec(source, namespace)  # noqa: S102 (the printer's own output)
        rebuilt = share_keyword_args(namespace["output"])
        return source if rebuilt.pattern_eq(pattern) and _sharing(rebuilt) == _sharing(pattern) else None
    except Exception:
        return None


@contextlib.contextmanager
def recording():
    """Within: every PatternCache ignores shipped and stored patterns, traces every variant and records its Python;
    yields {capability: {variant name: Python}}, filled as each registration ends (``PatternCache.save``)."""
    global _recording
    _recording, previous = {}, _recording
    try:
        yield _recording
    finally:
        _recording = previous


class PatternCache:
    """The traced patterns of one capability: ``pattern(name, trace)`` returns the shipped or stored pattern of
    ``name``, or ``trace()``'s; ``save()`` stores what was traced and logs where the patterns came from."""

    def __init__(self, capability: str) -> None:
        self.capability = capability
        self.key = pattern_key(capability)
        self.path = cache_dir() / f"{capability}.torch{torch.__version__}.py"
        self.disk = cache_enabled() and _recording is None
        self.kind, self.origin, self.builders = self._builders()
        self.sources: dict[str, str] = {}  # Python of the patterns this object traced (for the disk or a recording)
        self.loaded = self.traced = 0
        self.damaged = False
        self.unwritable: list[str] = []  # traced variants whose Python does not rebuild them (rebuilding_source)
        self.start = time.perf_counter()

    def _builders(self) -> tuple[str, str, dict]:
        """(kind: "shipped", "disk" or "trace"; where from, in words; {variant name: function rebuilding it})."""
        if _recording is not None:
            return "trace", "a fresh trace (recording for the shipped files)", {}
        found = shipped(self.capability)
        if found is not None:
            path, module = found
            if module.KEY == self.key:
                return "shipped", f"the shipped {path.name} (torch {', '.join(module.TORCH)})", module.PATTERNS
            log.warning("%s: the shipped %s was traced from other search functions than these: tracing them instead; "
                        "regenerate it with `%s`", self.capability, path.name, REGENERATE)
        else:
            log.info("%s: no shipped patterns for torch %s", self.capability, RELEASE)
        module = _disk_module(self.path, self.capability, self.key) if self.disk else None
        if module is not None:
            return "disk", f"the disk cache ({self.path})", module.PATTERNS
        return "trace", "a fresh trace", {}

    def pattern(self, name: str, trace):
        """The pattern of variant ``name`` ("<index>:<variant>"), rebuilt or ``trace()``'s; named for the rewrite
        log (Note [rewrite log] in rewrite_log.py: the widening that follows changes it in place)."""
        pattern = self._pattern(name, trace)
        name_pattern(pattern, self.capability, name.partition(":")[2] or name)
        return pattern

    def _pattern(self, name: str, trace):
        build = self.builders.get(name)
        if build is not None:
            try:
                pattern = share_keyword_args(build())
                self.loaded += 1
                return pattern
            except Exception as e:  # a damaged entry: trace it
                log.info("%s: cannot rebuild %s (%s)", self.capability, name, e)
                self.damaged = True
        pattern = share_keyword_args(trace())  # as a rebuilt one (a trace may repeat a scalar's KeywordArg)
        self.traced += 1
        if _recording is not None or self.disk:
            source = rebuilding_source(pattern)
            if source is None:  # not stored: traced by every process
                self.unwritable.append(name)
            else:
                self.sources[name] = source
        return pattern

    def save(self) -> None:
        """Store what was traced (a recording, or the disk cache after a clean miss: every variant traced), and log
        where this registration's patterns came from."""
        log.info("%s: %d search patterns in %.2f s from %s (%d rebuilt, %d traced)", self.capability,
                 self.loaded + self.traced, time.perf_counter() - self.start, self.origin, self.loaded, self.traced)
        if self.unwritable:  # a warning where it is news: when the shipped files are written
            log.log(logging.INFO if _recording is None else logging.WARNING,
                    "%s: Inductor's pattern printer cannot write %d variants, traced by every process: %s",
                    self.capability, len(self.unwritable), ", ".join(self.unwritable))
        if _recording is not None:
            _recording[self.capability] = dict(self.sources)
        elif self.disk and self.damaged and self.kind == "disk":
            self.path.unlink(missing_ok=True)  # the next process traces every variant and writes a whole file
        elif self.disk and self.traced and not self.loaded and self.sources:
            self._write(render_module(self.capability, self.key, (torch.__version__,), self.sources))

    def _write(self, text: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.stem, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except OSError:  # a read-only or full disk: the next process traces again
            pass
