"""Note [pattern cache]: the shipped search patterns (patterns/serialized/) equal a fresh trace on the running torch.

Like Inductor's test_fused_attention.py check of its serialized_patterns/: every capability is traced afresh (the
one slow test: a few minutes on a 2-core CPU; the recording keeps only Python that rebuilds an equal pattern) and
the text it would ship is compared with the shipped file's.  A failure names the command that regenerates the files.
"""
from __future__ import annotations

import difflib

import pytest

from inductor_conv.patterns import pattern_cache, serialize
from inductor_conv.patterns.pattern_cache import REGENERATE, RELEASE

SUPPORTED = ("2.11", "2.13")  # README, Supported versions


@pytest.mark.skipif(RELEASE not in SUPPORTED, reason=f"patterns are shipped for torch {SUPPORTED} only")
def test_the_shipped_patterns_equal_a_fresh_trace():
    fresh = serialize.fresh_sources()  # {capability: {variant name: Python}}
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
