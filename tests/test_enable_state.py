"""The plugin's state when a compiled function is called decides what runs (Note [plugin state guard] in
inductor_conv/_enable.py): enable() after a function was compiled rewrites it from its next call on, disable()
and leaving ``enabled()`` put Inductor's own code back, and switching back and forth compiles nothing more.

Each call is profiled to see whether our op ran; results are compared with a float64 reference (fp32 attention,
4e-6 absolute: a few fp32 roundings of values of size ~1).
"""
import pytest
import torch

import inductor_conv
from inductor_conv._compat import dynamo_counters, fx_graph_cache_disabled


def _attention(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v


@pytest.fixture
def inputs():
    torch.manual_seed(0)
    return [torch.randn(1, 2, 8, 16) for _ in range(3)]


@pytest.fixture(autouse=True)
def fresh():
    """Disabled, counters cleared, and no compiled code of another test around (before and after)."""
    inductor_conv.disable()
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    yield
    inductor_conv.disable()
    torch._dynamo.reset()


def _call(f, args, expect_ours: bool) -> None:
    """Call f (inference), check it against float64 and that our attention op ran iff ``expect_ours``."""
    with torch.no_grad(), torch.profiler.profile() as prof:
        out = f(*args)
    ran = {e.name for e in prof.events()}
    assert ("inductor_conv::attention_fwd" in ran) == expect_ours, sorted(n for n in ran if "::" in n)
    torch.testing.assert_close(out.double(), _attention(*(a.double() for a in args)), atol=4e-6, rtol=0)


def _graphs() -> int:
    """Graphs Dynamo compiled in this process (not reset by torch._dynamo.reset())."""
    return dynamo_counters["stats"]["unique_graphs"]


def test_enable_and_disable_after_compiling(inputs):
    """off -> on -> off -> on: the function compiled while off is rewritten after enable(), whether called through
    the same torch.compile object or a new one (the issue's case), and runs Inductor's code again after disable().
    One rewrite in all: each state compiles once, later switches reuse both cached entries."""
    f, start = torch.compile(_attention), _graphs()
    with fx_graph_cache_disabled():
        _call(f, inputs, expect_ours=False)
        inductor_conv.enable(("cpu",))
        _call(torch.compile(_attention), inputs, expect_ours=True)
        _call(f, inputs, expect_ours=True)
        assert inductor_conv.counters()["attention"] == 1
        inductor_conv.disable()
        _call(f, inputs, expect_ours=False)
        compiled = _graphs()
        inductor_conv.enable(("cpu",))
        _call(f, inputs, expect_ours=True)
        inductor_conv.disable()
        _call(torch.compile(_attention), inputs, expect_ours=False)
    assert _graphs() == compiled == start + 2
    assert inductor_conv.counters()["attention"] == 1


def test_enabled_context_and_device_types(inputs):
    """``with enabled():`` in a loop: rewritten inside, Inductor's own code outside, two compiles in all. Enabled
    for CUDA only, a CPU graph is Inductor's; a nested ``enabled(("cpu",))`` rewrites it and its exit goes back."""
    f, start = torch.compile(_attention), _graphs()
    with fx_graph_cache_disabled():
        for _ in range(2):
            with inductor_conv.enabled(("cpu",)):
                _call(f, inputs, expect_ours=True)
            _call(f, inputs, expect_ours=False)
        assert _graphs() == start + 2
        inductor_conv.enable(("cuda",))
        _call(f, inputs, expect_ours=False)
        with inductor_conv.enabled(("cpu",)):
            _call(f, inputs, expect_ours=True)
        _call(f, inputs, expect_ours=False)
    assert inductor_conv.counters()["attention"] == 1


def test_inductor_caches_follow_the_state(inputs, tmp_path, monkeypatch):
    """With Inductor's caches on: off -> on -> off without a Dynamo reset (our guard recompiles), then after a
    reset on -> off -> on again from the FX graph / AOTAutograd caches: each state gets its own cache key (the
    pass's uuid() is in it only while enabled), so no state replays the other's graph. A cache hit rewrites
    nothing in this process (counters stay at the first rewrite) but runs our op."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    f = torch.compile(_attention)
    _call(f, inputs, expect_ours=False)
    inductor_conv.enable(("cpu",))
    _call(f, inputs, expect_ours=True)
    inductor_conv.disable()
    _call(f, inputs, expect_ours=False)
    torch._dynamo.reset()
    inductor_conv.enable(("cpu",))
    _call(torch.compile(_attention), inputs, expect_ours=True)
    inductor_conv.disable()
    _call(torch.compile(_attention), inputs, expect_ours=False)
    inductor_conv.enable(("cpu",))
    _call(torch.compile(_attention), inputs, expect_ours=True)
    assert inductor_conv.counters()["attention"] == 1
