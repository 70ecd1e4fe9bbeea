"""Rewrite counters: how many graph rewrites each capability performed since ``reset_counters()``.

Kept here and mirrored in ``torch._dynamo.utils.counters["inductor_conv"]`` (where Inductor's own pattern counters
live), so either can be read in tests.
"""
from collections import Counter

from inductor_conv._compat import dynamo_counters

KEYS = ("causal_conv1d", "attention")
_counts: Counter = Counter()


def bump(key: str, n: int = 1) -> None:
    if key not in KEYS:
        raise KeyError(f"unknown inductor_conv counter {key!r}; expected one of {KEYS}")
    _counts[key] += n
    dynamo_counters["inductor_conv"][key] += n


def counters() -> dict[str, int]:
    """Rewrites performed since the last ``reset_counters()``, keyed ``"causal_conv1d"`` and ``"attention"``.

    Counted when our pass rewrites a graph: a compile that Inductor serves from its caches (FX graph / AOTAutograd
    cache, on by default) replays code that was rewritten in an earlier process and counts nothing here. To count,
    compile with caches off (``torch._inductor.config.force_disable_caches``), as the tests and the demo do."""
    return {key: _counts[key] for key in KEYS}


def reset_counters() -> None:
    _counts.clear()
    dynamo_counters["inductor_conv"].clear()
