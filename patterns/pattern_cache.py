"""Traced search patterns kept on disk, so that a process does not trace them again.

Note [pattern cache]
Tracing a capability's search patterns (``gen_pattern``: make_fx of each variant's search function, and of its
joint forward+backward for the training variants) takes 7-13 s a capability on a CPU, paid by every process on its
first graph with one of the capability's anchor ops.  Inductor avoids the same cost for its own attention patterns
by shipping them serialised as Python (``PatternPrettyPrinter``, torch/_inductor/fx_passes/serialized_patterns/).
Ours are serialised the same way the first time a process traces them, into a JSON file under Inductor's cache
directory, and rebuilt from it (~0.1 s) by later processes.

* The key is torch's version and the hash of our sources (those of the pass's ``uuid``, which include every
  file that can change a trace): another torch or an edited search function misses and traces afresh.  A variant
  is named by its position and name in the capability's list, so a file holds exactly one key's variants.
* What is stored is ``gen_pattern``'s output, before our own widening (``_generalise`` / ``relax`` mutate the
  pattern in place); the caller widens the loaded pattern exactly as a fresh one.
* A file that does not parse or a variant whose Python fails is traced again and the file rewritten (written to a
  temporary name and renamed: a concurrent reader sees the old file or the new one).  Writing a file removes the
  capability's files of other sources for the same torch; other torch versions' files stay.
* The file is Python run with ``exec``, from the per-user directory where Inductor keeps the Python it imports
  for its own compiled graphs: the same trust.
* ``config.pattern_cache = False``, or Inductor's ``force_disable_caches`` (``TORCHINDUCTOR_FORCE_DISABLE_CACHES``),
  traces every time.  tests/test_pattern_cache.py checks that each loaded pattern equals a fresh trace
  (``PatternExpr.pattern_eq``) for every variant of both capabilities.
"""
from __future__ import annotations

import functools
import json
import os
import pathlib
import tempfile

import torch

from inductor_conv import config
from inductor_conv._compat import (
    get_hash_for_files,
    inductor_cache_dir,
    inductor_caches_disabled,
    pattern_namespace,
    pattern_source,
)

FORMAT = 1  # bump when the file's layout changes


@functools.cache
def _source_key() -> str:
    """torch's version and the hash of our sources (the pass's own uuid files: a superset of what a trace reads)."""
    from inductor_conv.patterns.graph_pass import _source_files

    return f"{FORMAT}-{torch.__version__}-{get_hash_for_files(_source_files()).hex()[:24]}"


def cache_enabled() -> bool:
    return config.pattern_cache and not inductor_caches_disabled()


def cache_dir() -> pathlib.Path:
    return pathlib.Path(config.pattern_cache_dir or os.path.join(inductor_cache_dir(), "inductor_conv_patterns"))


class PatternCache:
    """The traced patterns of one capability: ``pattern(name, trace)`` returns the stored pattern of ``name``, or
    ``trace()``'s (then stored); ``save()`` writes the file if anything was traced."""

    def __init__(self, capability: str) -> None:
        self.enabled = cache_enabled()
        self.path = cache_dir() / f"{capability}-{_source_key()}.json"
        self.sources: dict[str, str] = self._read() if self.enabled else {}
        self.traced = 0  # variants traced by this object (tests read it)
        self.changed = False
        self._namespace: dict | None = None  # the names a stored pattern's Python refers to, built on first use

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("key") != _source_key():
            return {}
        sources = data.get("patterns")
        return sources if isinstance(sources, dict) else {}

    def pattern(self, name: str, trace):
        source = self.sources.get(name)
        if source is not None:
            if self._namespace is None:
                self._namespace = pattern_namespace()
            namespace = dict(self._namespace)  # exec adds the pattern's own names
            try:
                exec(source, namespace)  # noqa: S102 (Note [pattern cache]: Inductor's code-cache trust)
                return namespace["output"]
            except Exception:  # a damaged entry: trace it again
                pass
        pattern = trace()
        self.traced += 1
        if self.enabled:
            try:
                self.sources[name] = pattern_source(pattern)
                self.changed = True
            except Exception:  # a pattern Inductor's serialiser cannot write: traced again next time
                pass
        return pattern

    def save(self) -> None:
        if not (self.enabled and self.changed):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump({"key": _source_key(), "patterns": self.sources}, f)
            os.replace(tmp, self.path)
            self.changed = False
            self._prune()
        except OSError:  # a read-only or full disk: the next process traces again
            pass

    def _prune(self) -> None:
        """Remove this capability's files of earlier sources for the same torch (another torch's files stay: two
        environments may share the directory)."""
        same_torch = self.path.name.rsplit("-", 1)[0]  # <capability>-<FORMAT>-<torch version>
        for old in self.path.parent.glob(f"{same_torch}-*.json"):
            if old != self.path:
                old.unlink(missing_ok=True)
