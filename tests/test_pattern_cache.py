"""Note [pattern cache]: traced search patterns stored on disk and rebuilt by later processes.

The property that matters: a pattern rebuilt from the file equals a fresh trace of the same variant
(``PatternExpr.pattern_eq``), for every variant of both capabilities; and a warm cache rewrites graphs without
tracing anything.
"""
from __future__ import annotations

import importlib
import json

import pytest
import torch
import torch.nn.functional as F

import inductor_conv
from inductor_conv import config
from inductor_conv._compat import PatternMatcherPass, fx_graph_cache_disabled
from inductor_conv.patterns import graph_pass, pattern_cache
from inductor_conv.patterns.pattern_cache import PatternCache

from helpers import recording_graphs

aten = torch.ops.aten
CAPABILITIES = ("inductor_conv.patterns.causal_conv1d_silu", "inductor_conv.patterns.attention")


@pytest.fixture
def cache_at(tmp_path, monkeypatch):
    """The pattern cache switched on (whatever Inductor's cache switches say) in an empty directory."""
    monkeypatch.setattr(config, "pattern_cache", True)
    monkeypatch.setattr(config, "pattern_cache_dir", str(tmp_path))
    monkeypatch.setattr(pattern_cache, "inductor_caches_disabled", lambda: False)
    return tmp_path


def _small_pattern():
    from inductor_conv._compat import CallFunction, KeywordArg

    return CallFunction(aten.mul.Tensor, CallFunction(aten.add.Tensor, KeywordArg("x"), KeywordArg("y")),
                        KeywordArg("y"))


def _untraceable():
    raise AssertionError("traced although the cache holds the pattern")


def test_round_trip_through_the_file(cache_at):
    cache = PatternCache("unit")
    first = cache.pattern("0:mul_add", _small_pattern)
    assert cache.traced == 1
    cache.save()
    assert len(list(cache_at.glob("unit-*.json"))) == 1
    again = PatternCache("unit")
    loaded = again.pattern("0:mul_add", _untraceable)
    assert again.traced == 0 and loaded is not first and loaded.pattern_eq(first)
    # a pattern of another shape is not equal: pattern_eq can fail
    from inductor_conv._compat import CallFunction, KeywordArg

    assert not loaded.pattern_eq(CallFunction(aten.mul.Tensor, KeywordArg("x"), KeywordArg("y")))


@pytest.mark.parametrize("damage", ["not json", "other key", "bad entry"])
def test_a_damaged_file_is_traced_again_and_rewritten(cache_at, damage):
    cache = PatternCache("unit")
    cache.pattern("0:mul_add", _small_pattern)
    cache.save()
    (path,) = cache_at.glob("unit-*.json")
    data = json.loads(path.read_text())
    if damage == "not json":
        path.write_text("{ truncated")
    elif damage == "other key":
        path.write_text(json.dumps({**data, "key": "0-other-torch"}))
    else:
        path.write_text(json.dumps({**data, "patterns": {"0:mul_add": "output = undefined_name"}}))
    again = PatternCache("unit")
    assert again.pattern("0:mul_add", _small_pattern).pattern_eq(_small_pattern())
    assert again.traced == 1
    again.save()
    assert PatternCache("unit").pattern("0:mul_add", _untraceable).pattern_eq(_small_pattern())


def test_a_pattern_the_serialiser_cannot_write_is_still_used(cache_at, monkeypatch):
    def fails(pattern):
        raise NotImplementedError("no pretty_print for this pattern")

    monkeypatch.setattr(pattern_cache, "pattern_source", fails)
    cache = PatternCache("unit")
    assert cache.pattern("0:mul_add", _small_pattern).pattern_eq(_small_pattern())
    cache.save()
    assert not list(cache_at.iterdir())


def test_a_new_source_replaces_the_old_file_of_the_same_torch(cache_at, monkeypatch):
    """Files of earlier sources for this torch are removed when a new one is written; another torch's file stays."""
    key = pattern_cache._source_key()
    stale = cache_at / f"unit-{key.rsplit('-', 1)[0]}-0123456789abcdef01234567.json"
    other_torch = cache_at / "unit-1-0.0.0-0123456789abcdef01234567.json"
    for path in (stale, other_torch):
        path.write_text(json.dumps({"key": path.stem[len("unit-"):], "patterns": {}}))
    cache = PatternCache("unit")
    cache.pattern("0:mul_add", _small_pattern)
    cache.save()
    assert sorted(p.name for p in cache_at.iterdir()) == sorted([cache.path.name, other_torch.name])


def test_an_unwritable_directory_is_not_an_error(cache_at, monkeypatch):
    blocker = cache_at / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(config, "pattern_cache_dir", str(blocker / "patterns"))  # mkdir fails: a file is in the way
    cache = PatternCache("unit")
    assert cache.pattern("0:mul_add", _small_pattern).pattern_eq(_small_pattern())
    cache.save()
    assert cache.changed  # nothing written; the next process traces again


@pytest.mark.parametrize("switch", ["config", "inductor"])
def test_switched_off_traces_and_writes_nothing(cache_at, monkeypatch, switch):
    if switch == "config":
        monkeypatch.setattr(config, "pattern_cache", False)
    else:
        monkeypatch.setattr(pattern_cache, "inductor_caches_disabled", lambda: True)
    for _ in range(2):
        cache = PatternCache("unit")
        cache.pattern("0:mul_add", _small_pattern)
        cache.save()
        assert cache.traced == 1
    assert not list(cache_at.iterdir())


def test_inductor_force_disable_caches_switches_it_off():
    with fx_graph_cache_disabled():
        assert not pattern_cache.cache_enabled()


@pytest.mark.parametrize("module", CAPABILITIES)
def test_every_cached_variant_equals_a_fresh_trace(cache_at, monkeypatch, module):
    """Register the capability twice into fresh pass dicts: the first traces every variant and writes the file, the
    second rebuilds each from the file, and each rebuilt pattern is compared with a fresh trace of its variant before
    the capability widens it (_generalise / relax mutate the pattern in place)."""
    register = importlib.import_module(module).register.__wrapped__  # past functools.cache: a real registration
    register(PatternMatcherPass())
    assert len(list(cache_at.glob("*.json"))) == 1

    original, checked = PatternCache.pattern, []

    def pattern(self, name, trace):
        hit = name in self.sources
        loaded = original(self, name, trace)
        assert hit, f"{name} missing from the file"
        assert loaded.pattern_eq(trace()), f"{name}: the rebuilt pattern differs from a fresh trace"
        checked.append(name)
        return loaded

    monkeypatch.setattr(PatternCache, "pattern", pattern)
    register(PatternMatcherPass())
    assert len(checked) > 50, checked  # conv: 300 variants, attention: 69


def test_a_warm_cache_rewrites_without_tracing(cache_at, monkeypatch):
    """A process whose cache holds the conv patterns rewrites a training graph with them and traces nothing."""
    from inductor_conv.patterns import causal_conv1d_silu

    causal_conv1d_silu.register.__wrapped__(PatternMatcherPass())  # the earlier process: writes the file
    monkeypatch.setattr(causal_conv1d_silu, "gen_pattern", lambda *a, **k: _untraceable())
    monkeypatch.setattr(graph_pass, "PATTERNS", PatternMatcherPass(pass_name="inductor_conv"))  # nothing registered

    C, K, L = 6, 4, 11
    x = torch.randn(2, C, L, dtype=torch.float64, requires_grad=True)
    w = torch.randn(C, 1, K, dtype=torch.float64, requires_grad=True)
    b = torch.randn(C, dtype=torch.float64, requires_grad=True)

    def fn(x, w, b):
        return F.silu(F.conv1d(F.pad(x, (K - 1, 0)), w, b, groups=C))

    torch._dynamo.reset()
    inductor_conv.reset_counters()
    # Inductor's own caches off (a hit would skip the pass), the pattern cache on (the fixture ignores that switch)
    with fx_graph_cache_disabled(), inductor_conv.enabled(("cpu",)), recording_graphs() as graphs:
        y = torch.compile(fn, backend="inductor", fullgraph=True)(x, w, b)
    assert inductor_conv.counters()["causal_conv1d"] == 1, graphs
    grads = torch.autograd.grad(y, (x, w, b), torch.ones_like(y))
    expected = fn(x, w, b)
    torch.testing.assert_close(y, expected)
    for got, want in zip(grads, torch.autograd.grad(expected, (x, w, b), torch.ones_like(expected))):
        torch.testing.assert_close(got, want)
