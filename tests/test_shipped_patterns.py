"""Note [pattern cache]: the shipped search patterns (patterns/serialized/) equal a fresh trace on the running torch.

Like Inductor's test_fused_attention.py check of its serialized_patterns/: every capability is traced afresh (the
one slow test of the file: a few minutes on a 2-core CPU) and the text it would ship is compared with the shipped
file's; each serialised pattern must also rebuild into a pattern equal to the one traced (``PatternExpr.pattern_eq``),
so the text is a faithful copy.  A failure names the command that regenerates the files.
"""
from __future__ import annotations

import difflib

import pytest

from inductor_conv._compat import pattern_namespace
from inductor_conv.patterns import pattern_cache, serialize
from inductor_conv.patterns.pattern_cache import REGENERATE, RELEASE

SUPPORTED = ("2.11", "2.13")  # README, Supported versions


@pytest.fixture(scope="module")
def fresh():
    """{capability: {variant name: Python}} of a fresh trace, each pattern's Python checked to rebuild it."""
    original = pattern_cache.pattern_source

    def faithful(pattern):
        source = original(pattern)
        namespace = pattern_namespace()
        exec(source, namespace)  # noqa: S102 (our own serialiser's output)
        assert namespace["output"].pattern_eq(pattern), f"the serialised pattern does not rebuild it:\n{source}"
        return source

    with pytest.MonkeyPatch.context() as m:
        m.setattr(pattern_cache, "pattern_source", faithful)
        return serialize.fresh_sources()


@pytest.mark.skipif(RELEASE not in SUPPORTED, reason=f"patterns are shipped for torch {SUPPORTED} only")
def test_the_shipped_patterns_equal_a_fresh_trace(fresh):
    assert set(fresh) >= {"causal_conv1d", "attention"}, fresh.keys()
    problems = []
    for capability, sources in fresh.items():
        found = pattern_cache.shipped(capability)
        if found is None:
            problems.append(f"{capability}: no shipped file for torch {RELEASE}")
            continue
        path, module = found
        expected = serialize.expected_text(capability, sources, module.TORCH)
        actual = path.read_text()
        if actual != expected:
            diff = difflib.unified_diff(actual.splitlines(), expected.splitlines(), str(path), "a fresh trace",
                                        lineterm="", n=1)
            problems.append(f"{capability}: {path} differs from a fresh trace under torch {RELEASE}:\n"
                            + "\n".join(list(diff)[:40]))
    assert not problems, "\n".join(problems) + f"\nRegenerate the shipped patterns with `{REGENERATE}`."
