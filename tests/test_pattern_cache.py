"""Note [pattern cache]: search patterns rebuilt from the shipped files or the disk cache instead of traced.

The properties that matter: a registration takes its patterns from the shipped file whatever the cache settings and
traces nothing; a shipped file of other search functions (another KEY) or of other torch releases is never used,
and tracing (with the disk cache when it is on) takes over, saying so in the log; the disk cache round-trips and
survives damage; the serialiser shares one file between releases whose traces are equal.  That the shipped text
equals a fresh trace is tests/test_shipped_patterns.py's (slow) check.
"""
from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F

import inductor_conv
from inductor_conv import config
from inductor_conv._compat import CallFunction, Ignored, KeywordArg, PatternMatcherPass, fx_graph_cache_disabled
from inductor_conv.patterns import (attention, causal_conv1d_silu, causal_conv1d_update, graph_pass, pattern_cache,
                                    serialize)
from inductor_conv.patterns.pattern_cache import REGENERATE, RELEASE, PatternCache

from helpers import recording_graphs

aten = torch.ops.aten
LOGGER = pattern_cache.__name__


def _small_pattern():
    return CallFunction(aten.mul.Tensor, CallFunction(aten.add.Tensor, KeywordArg("x"), KeywordArg("y")),
                        KeywordArg("y"))


def _other_pattern():
    return CallFunction(aten.mul.Tensor, KeywordArg("x"), KeywordArg("y"))


def _untraceable():
    raise AssertionError("traced although a file holds the pattern")


@pytest.fixture
def shipped_at(tmp_path, monkeypatch):
    """An empty directory of shipped files, and one for the disk cache (on, whatever Inductor's switches say)."""
    monkeypatch.setattr(pattern_cache, "SHIPPED_DIR", tmp_path / "serialized")
    monkeypatch.setattr(config, "pattern_cache", True)
    monkeypatch.setattr(config, "pattern_cache_dir", str(tmp_path / "disk"))
    monkeypatch.setattr(pattern_cache, "inductor_caches_disabled", lambda: False)
    return tmp_path


def _ship(release=RELEASE, key=None, pattern=_small_pattern):
    """Write a shipped file of the "unit" capability holding ``pattern`` as "0:mul_add" for ``release``."""
    sources = {"0:mul_add": pattern_cache.pattern_source(pattern())}
    path, _ = serialize.write("unit", sources, release, pattern_cache.SHIPPED_DIR)
    if key is not None:
        path.write_text(path.read_text().replace(repr(pattern_cache.pattern_key("unit")), repr(key)))
    return path


def _register(name="0:mul_add", trace=_small_pattern):
    """One registration of the "unit" capability: (pattern, cache)."""
    cache = PatternCache("unit")
    pattern = cache.pattern(name, trace)
    cache.save()
    return pattern, cache


@pytest.mark.parametrize("switch", ["none", "config", "inductor"])
def test_shipped_patterns_are_used_whatever_the_cache_settings(shipped_at, monkeypatch, caplog, switch):
    _ship()
    if switch == "config":
        monkeypatch.setattr(config, "pattern_cache", False)
    elif switch == "inductor":
        monkeypatch.setattr(pattern_cache, "inductor_caches_disabled", lambda: True)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        pattern, cache = _register(trace=_untraceable)
    assert cache.loaded == 1 and cache.traced == 0 and pattern.pattern_eq(_small_pattern())
    assert not pattern.pattern_eq(_other_pattern())  # pattern_eq can fail
    assert "from the shipped unit.py" in caplog.text
    assert not (shipped_at / "disk").exists()  # nothing traced, nothing stored


@pytest.mark.parametrize("mismatch", ["release", "key"])
def test_shipped_patterns_of_another_torch_or_other_sources_are_not_used(shipped_at, caplog, mismatch):
    """Tracing takes over (its pattern is the one returned), and the log says why."""
    if mismatch == "release":
        _ship(release="0.1", pattern=_other_pattern)
    else:
        _ship(key="2-0123456789abcdef01234567", pattern=_other_pattern)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        pattern, cache = _register()
    assert cache.traced == 1 and cache.loaded == 0 and pattern.pattern_eq(_small_pattern())
    if mismatch == "release":
        assert f"no shipped patterns for torch {RELEASE}" in caplog.text
    else:
        assert "traced from other search functions" in caplog.text and REGENERATE in caplog.text
    assert "from a fresh trace" in caplog.text


def test_the_disk_cache_round_trips(shipped_at, caplog):
    _, first = _register()
    assert first.traced == 1 and first.path.exists()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        pattern, again = _register(trace=_untraceable)
    assert again.loaded == 1 and pattern.pattern_eq(_small_pattern())
    assert "from the disk cache" in caplog.text


@pytest.mark.parametrize("damage", ["not python", "other key", "bad entry"])
def test_a_damaged_disk_file_is_traced_again(shipped_at, damage):
    """Traced again; the file is then rewritten (or removed, for a bad entry in a file otherwise read), and a later
    registration reads it whole."""
    _, cache = _register()
    text = cache.path.read_text()
    if damage == "not python":
        cache.path.write_text(text[: len(text) // 2])
    elif damage == "other key":
        cache.path.write_text(text.replace(repr(cache.key), repr("2-0123456789abcdef01234567")))
    else:
        cache.path.write_text(text.replace("return output", "return undefined_name"))
    pattern, again = _register()
    assert again.traced == 1 and pattern.pattern_eq(_small_pattern())
    if damage == "bad entry":
        assert not cache.path.exists()
        _register()
    pattern, last = _register(trace=_untraceable)
    assert last.loaded == 1 and pattern.pattern_eq(_small_pattern())


def test_a_pattern_inside_a_list_argument_is_written():
    """Inductor's printer writes a list argument as its repr (``*`` for an Ignored(), not Python); pattern_source
    writes its items (aten.index's indices, aten.cat's tensors), and the rebuilt pattern shares the KeywordArg
    objects a trace shares, inside the list too."""
    x = KeywordArg("x")
    add = CallFunction(aten.add.Tensor, x, Ignored())
    traced = CallFunction(aten.cat.default, [add, x, CallFunction(aten.index.Tensor, x, [None, add])], Ignored())
    source = pattern_cache.rebuilding_source(traced)
    assert source is not None and "[add_Tensor, KeywordArg('x'), index_Tensor]" in source
    assert "[None, add_Tensor]" in source


def test_a_pattern_the_printer_cannot_write_is_traced_and_not_stored(shipped_at, caplog):
    """Inductor's printer writes an argument that is not a pattern as its repr, which is not always Python (a
    torch.device prints as ``device(type='cpu')``): that variant is left out of the file (and traced by every
    process, which the log says), the others are stored."""
    def index_pattern():
        return CallFunction(aten.index.Tensor, KeywordArg("x"),
                            [None, CallFunction(aten.add.Tensor, KeywordArg("i"), torch.device("cpu"))])

    def register_both(trace_small=_small_pattern):
        cache = PatternCache("unit")
        patterns = cache.pattern("0:index", index_pattern), cache.pattern("1:mul_add", trace_small)
        cache.save()
        return patterns, cache

    with caplog.at_level(logging.INFO, logger=LOGGER):
        (index, _), first = register_both()
    assert index.pattern_eq(index_pattern()) and first.unwritable == ["0:index"] and "0:index" in caplog.text
    (index, small), again = register_both(trace_small=_untraceable)
    assert (again.loaded, again.traced) == (1, 1) and small.pattern_eq(_small_pattern())


def test_an_unwritable_cache_directory_is_not_an_error(shipped_at, monkeypatch):
    blocker = shipped_at / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(config, "pattern_cache_dir", str(blocker / "patterns"))  # mkdir fails: a file is in the way
    pattern, cache = _register()
    assert cache.traced == 1 and pattern.pattern_eq(_small_pattern())


@pytest.mark.parametrize("switch", ["config", "inductor"])
def test_the_disk_cache_switched_off_traces_and_writes_nothing(shipped_at, monkeypatch, switch):
    if switch == "config":
        monkeypatch.setattr(config, "pattern_cache", False)
    else:
        monkeypatch.setattr(pattern_cache, "inductor_caches_disabled", lambda: True)
    for _ in range(2):
        _, cache = _register()
        assert cache.traced == 1
    assert not (shipped_at / "disk").exists()


def test_inductor_force_disable_caches_switches_the_disk_cache_off():
    with fx_graph_cache_disabled():
        assert not pattern_cache.cache_enabled()


def test_releases_with_equal_traces_share_one_file(tmp_path):
    """Regenerating under each release: an equal trace joins the file, a different one splits it into one file per
    trace, and a file that serves no release any more goes."""
    small = {"0:mul_add": pattern_cache.pattern_source(_small_pattern())}
    other = {"0:mul_add": pattern_cache.pattern_source(_other_pattern())}

    def files():
        return {p.name: pattern_cache.releases_in(p.read_text()) for p in tmp_path.iterdir()}

    assert serialize.write("unit", small, "2.11", tmp_path) == (tmp_path / "unit.py", True)
    assert serialize.write("unit", small, "2.13", tmp_path) == (tmp_path / "unit.py", True)
    assert serialize.write("unit", small, "2.13", tmp_path) == (tmp_path / "unit.py", False)
    assert files() == {"unit.py": ("2.11", "2.13")}
    assert serialize.write("unit", other, "2.13", tmp_path) == (tmp_path / "unit.torch2.13.py", True)
    assert files() == {"unit.torch2.11.py": ("2.11",), "unit.torch2.13.py": ("2.13",)}
    assert serialize.write("unit", other, "2.11", tmp_path) == (tmp_path / "unit.py", True)
    assert files() == {"unit.py": ("2.11", "2.13")}
    assert "0:mul_add" in pattern_cache.load_module(tmp_path / "unit.py").PATTERNS


def test_registration_with_the_shipped_patterns_traces_nothing_and_rewrites(monkeypatch):
    """Every capability registers from the shipped files with every cache off and tracing made impossible, and
    the conv patterns so registered rewrite a training graph (forward and gradients against float64 eager)."""
    def no_tracing(*args, **kwargs):
        raise AssertionError(f"traced although the shipped patterns hold it: run `{REGENERATE}`")

    monkeypatch.setattr(config, "pattern_cache", False)
    patterns = PatternMatcherPass(pass_name="inductor_conv")
    for module in (causal_conv1d_silu, attention, causal_conv1d_update):
        monkeypatch.setattr(module, "gen_pattern", no_tracing)
        with fx_graph_cache_disabled():
            module.register.__wrapped__(patterns)  # past functools.cache: a real registration
    monkeypatch.setattr(graph_pass, "PATTERNS", patterns)

    C, K, L = 6, 4, 11
    x = torch.randn(2, C, L, dtype=torch.float64, requires_grad=True)
    w = torch.randn(C, 1, K, dtype=torch.float64, requires_grad=True)
    b = torch.randn(C, dtype=torch.float64, requires_grad=True)

    def fn(x, w, b):
        return F.silu(F.conv1d(F.pad(x, (K - 1, 0)), w, b, groups=C))

    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with fx_graph_cache_disabled(), inductor_conv.enabled(("cpu",)), recording_graphs() as graphs:
        y = torch.compile(fn, backend="inductor", fullgraph=True)(x, w, b)
    assert inductor_conv.counters()["causal_conv1d"] == 1, graphs
    expected = fn(x, w, b)
    torch.testing.assert_close(y, expected)
    grads = torch.autograd.grad(y, (x, w, b), torch.ones_like(y))
    for got, want in zip(grads, torch.autograd.grad(expected, (x, w, b), torch.ones_like(expected))):
        torch.testing.assert_close(got, want)
