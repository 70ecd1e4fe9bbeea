"""The eager conv op's C++ backward node (Note [native backward] in inductor_conv/csrc/backward_node.cpp): the same
launches as the Python backward, so the same bits, for every layout, dtype, bias and reduction mode it takes; dy in
other strides; the cases it leaves to the Python backward; autograd's checks on saved tensors."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import inductor_conv
from inductor_conv.kernels import causal_conv1d as kc
from inductor_conv.kernels import native
from inductor_conv.kernels.attention_decode import MAX_QUERIES
from inductor_conv.ops import attention as ops_attention


@pytest.fixture(scope="module")
def ext():
    built = native.build(wait=True)
    assert built is not None, "the native backward extension did not build"
    return built


@pytest.mark.xdist_group("native_extension")
def test_program_node_mechanics(ext):
    """On the CPU, a Program without launches: its allocations become the gradients (zeros, and a buffer of the
    given shape), dy is copied into x's strides, an input that needs no gradient gets none, and the node is named.
    Builds the extension as a user's first call on a GPU does."""
    x = torch.randn(2, 3, 5, requires_grad=True)
    w = torch.randn(3, 4)  # needs no gradient
    b = torch.randn(3, requires_grad=True)
    program = ext.Program()
    program.name = "TestBackward"
    program.dy_like = 0
    program.add_alloc(0, [], "float32", True)  # slot 4: zeros_like(x)
    program.add_alloc(-1, [3], "float32", True)  # slot 5: zeros(3)
    program.outputs = [4, -1, 5]
    with pytest.raises(Exception, match="bad launch"):
        program.add_launch(0, [1, 1], 128, 0, [], [])
    y = x.detach() * 2
    ext.attach(y, [x, w, b], [x, w, b], program)
    assert y.requires_grad and y.grad_fn.name() == "TestBackward"
    dy = torch.randn(2, 5, 3).transpose(1, 2)  # not in x's strides: copied
    dx, db = torch.autograd.grad(y, (x, b), dy)
    assert torch.equal(dx, torch.zeros_like(x)) and torch.equal(db, torch.zeros(3))
    with pytest.raises(RuntimeError, match="does not require grad|One of the differentiated Tensors"):
        torch.autograd.grad(ext_output(ext, program, x, w, b), (w,), torch.ones(2, 3, 5))


@pytest.mark.xdist_group("native_extension")
def test_run_forward_mechanics(ext):
    """On the CPU, Programs without launches (Note [native forward]): run_forward returns the allocation the forward
    Program names (empty_like of x: a channel-last x's strides) and, given a backward Program, makes it the output of
    that node over the inputs (its gradients the backward's allocations); without one, a tensor with no history; and
    refuses another number of tensors than the Program's slots."""
    x = torch.randn(2, 5, 3).transpose(1, 2).requires_grad_()
    w = torch.randn(3, 4, requires_grad=True)
    forward = ext.Program()
    forward.name = "TestForward"
    forward.n_saved = 2
    forward.add_alloc(0, [], "float32", False)  # slot 2: empty_like(x)
    forward.outputs = [2]
    backward = ext.Program()
    backward.name = "TestBackward"
    backward.n_saved = 2
    backward.add_alloc(0, [], "float32", True)  # slots 3, 4 (after x, w and dy): zeros_like(x), zeros_like(w)
    backward.add_alloc(1, [], "float32", True)
    backward.outputs = [3, 4]
    y = ext.run_forward(forward, [x, w], [x, w], backward)
    assert y.shape == x.shape and y.stride() == x.stride() and y.grad_fn.name() == "TestBackward"
    dx, dw = torch.autograd.grad(y, (x, w), torch.randn(2, 3, 5))
    assert torch.equal(dx, torch.zeros_like(x)) and torch.equal(dw, torch.zeros_like(w))
    y = ext.run_forward(forward, [x, w], [x, w], None)
    assert y.grad_fn is None and not y.requires_grad and y.stride() == x.stride()
    with pytest.raises(Exception, match="given 1 tensors"):
        ext.run_forward(forward, [x], [x], None)


@pytest.mark.xdist_group("native_extension")
def test_programs_make_the_python_paths_launches(ext):
    """Without a GPU: the conv's and the attention's backward Programs and their forward ones (the attention's without
    a mask; channel-first and channel-last or (B, S, H, D) inputs, with and without bias, both reduction modes, fp32
    parameters with bf16 x, seq_idx, initial states, GQA with dropout, its seed a value of each run, soft-capping,
    head dims 64-256, bool and additive mask tensors with their summaries) launch what the Python path launches,
    parameter by parameter, as Triton specialises them for sm_90 (tests/tools/native_programs.py)."""
    from tools.compile_sm90 import run_script

    lines = [json.loads(line) for line in run_script("tests/tools/native_programs.py").splitlines()
             if line.startswith("{")]
    assert len(lines) == 25, lines
    for line in lines:
        assert line["problems"] == [], line
    # a summarised mask: the cols summary's launch, then Δ and the dK/dV + dQ programs
    masked = [line["launches"] for line in lines if "mask=" in line["case"] and "mask=None" not in line["case"]]
    assert masked == [3, 3, 3], lines


@pytest.mark.xdist_group("native_extension")
def test_cudnn_node_is_attached_with_its_saved_tensors(ext):
    """On the CPU: attach_cudnn makes O the output of a CudnnAttentionBackward over q, k, v (its backward needs
    cuDNN: the GPU tests run it) and refuses another number of inputs or saved tensors."""
    q, k, v = (torch.randn(1, 2, 8, 16, requires_grad=True) for _ in range(3))
    out = torch.randn(1, 2, 8, 16)
    saved = [q, k, v, out.detach(), torch.randn(1, 2, 8, 1), torch.zeros(1), torch.zeros(1)]
    ext.attach_cudnn(out, [q, k, v], saved, 8, 8, True, 0.25)
    assert out.requires_grad and out.grad_fn.name() == "CudnnAttentionBackward"
    assert [fn is not None for fn, _ in out.grad_fn.next_functions] == [True] * 3
    with pytest.raises(Exception, match="seven tensors"):
        ext.attach_cudnn(torch.randn(1), [q, k, v], saved[:5], 8, 8, True, 0.25)


def _route_call(rng: random.Random):
    """A random call of the eager attention without mask or dropout on the CPU, (q, k, v, is_causal, scale,
    enable_gqa), often on the cuDNN route, often one or two properties off it (sizes, dtypes, layouts, alignment,
    the arguments' types)."""
    pick = rng.choice
    B, Hkv = pick([1, 2]), pick([1, 2, 4])
    Hq = Hkv * pick([1, 1, 2]) if rng.random() > 0.1 else pick([0, 3])
    Sq, Sk = pick([16, 17, 40, 40, 40]), pick([1, 2, 40, 40, 40, 40]) if rng.random() > 0.05 else 0
    D = pick([64, 64, 128, 256]) if rng.random() > 0.15 else pick([8, 24, 68, 264])
    Dv = D if rng.random() > 0.05 else pick([16, 128])
    dtype = pick([torch.bfloat16, torch.float16, torch.bfloat16]) if rng.random() > 0.1 else torch.float32

    def make(H, S, d, dt=dtype):
        layout = pick(["bhsd", "bhsd", "bshd"]) if rng.random() > 0.05 else pick(["bhds", "offset"])
        if layout == "bshd":
            return torch.randn(B, S, H, d, dtype=dt).transpose(1, 2)
        if layout == "bhds":
            return torch.randn(B, H, d, S, dtype=dt).transpose(-1, -2)
        n = B * H * S * d
        base = torch.randn(n + 72, dtype=dt)
        start = (-base.data_ptr() // base.element_size()) % 8 + (4 if layout == "offset" else 0)
        return base[start:start + n].view(B, H, S, d)

    q, k, v = make(Hq, Sq, D), make(Hkv, Sk, D), make(Hkv, Sk, Dv)
    if rng.random() < 0.05:
        k = k.to(torch.float16 if dtype == torch.bfloat16 else torch.bfloat16)
    if rng.random() < 0.03:
        v = v[0]  # 3-d
    if rng.random() < 0.05:
        q = torch.nn.Parameter(q) if rng.random() < 0.5 else q.as_subclass(_Subclass)
    causal = pick([True, False]) if rng.random() > 0.05 else pick([1, 0, None])
    scale = pick([None, None, 0.125, 2]) if rng.random() > 0.1 else pick([-0.5, 0.0, math.inf, math.nan, True,
                                                                         np.float64(0.3), 10 ** 400])
    gqa = pick([True, False]) if rng.random() > 0.05 else pick([1, 0])
    return q, k, v, causal, scale, gqa


class _Subclass(torch.Tensor):
    pass


def _python_route_scale(q, k, v, causal, scale, gqa) -> float:
    """What the Python path does with a call on a GPU that takes the cuDNN route (sm_90, cuDNN built): the scale it
    runs the route with, else 0.  The bools and the scale's types are those the C++ verdict reads (True / False,
    None / float / int); other values go to the Python path, which checks them (Note [cuDNN route from C++])."""
    from helpers import PretendCuda

    if type(causal) is not bool or type(gqa) is not bool or not (scale is None or type(scale) in (float, int)):
        return 0.0
    try:
        ops_attention._check_args(q, k, v, None, 0.0, causal, scale, gqa)
    except (TypeError, ValueError, OverflowError):
        return 0.0
    if any(type(t) not in (torch.Tensor, torch.nn.Parameter) for t in (q, k, v)) or ops_attention._is_empty(q, k):
        return 0.0
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    if not 0.0 < scale < math.inf:  # the Python path scales q and runs our kernels
        return 0.0
    on_gpu = [t.as_subclass(PretendCuda) for t in (q, k, v)]
    return scale if ops_attention._cudnn_eager(*on_gpu, None, 0.0, causal, None) else 0.0


@pytest.mark.xdist_group("native_extension")
def test_cudnn_route_from_cpp_decides_as_the_python_path(ext, monkeypatch):
    """Note [cuDNN route from C++]: the C++ verdict (without the device, capability and cuDNN-build conditions,
    which need a GPU) takes exactly the calls the Python checks pass and route to cuDNN, with the same scale, on 600
    random calls under random floors of work (config.attention_cudnn_eager_min_work); and refuses under a functorch
    transform, a dispatch mode, torch's deterministic mode and with cuDNN's SDPA backend off."""
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(ops_attention, "_capability", lambda index: (9, 0))
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", True)
    assert ext.MAX_DECODE_QUERIES == MAX_QUERIES
    rng = random.Random(torch.initial_seed())
    verdicts = []
    for _ in range(600):
        call = _route_call(rng)
        min_work = rng.choice([0, 0, 0, 1 << 16, 1 << 20])  # the calls' work: ~2^8 to ~2^24
        monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", min_work)
        want, got = _python_route_scale(*call), ext.cudnn_route_scale(*call, min_work)
        assert got == want, (want, got, [getattr(a, "shape", a) for a in call], [getattr(a, "stride", list)()
                                                                                for a in call[:3]])
        verdicts.append(got > 0)
    assert 40 <= sum(verdicts) <= len(verdicts) - 40, sum(verdicts)  # both verdicts, dozens of times

    q, k, v = (torch.randn(1, 2, 32, 64, dtype=torch.bfloat16) for _ in range(3))
    verdict = lambda x: ext.cudnn_route_scale(x, k, v, True, None, False, 0)  # noqa: E731
    assert verdict(q) == 0.125
    seen = []
    torch.func.grad(lambda x: seen.append(verdict(x)) or x.float().sum())(q)
    torch.func.vmap(lambda x: seen.append(verdict(x)) or x)(q[None])
    assert seen == [0.0, 0.0]

    class Passing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Passing():
        assert verdict(q) == 0.0
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        assert verdict(q) == 0.0
    finally:
        torch.backends.cuda.enable_cudnn_sdp(True)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert verdict(q) == 0.0
    finally:
        torch.use_deterministic_algorithms(was)
    assert verdict(q) == 0.125


@pytest.mark.xdist_group("native_extension")
def test_host_dropout_seed_hash_is_the_pythons(ext):
    """Note [host dropout seed]: the C++ draw (Note [eager attention from C++]) hashes a generator's seed and offset
    as ops/attention.py's seed_hash does, into [2^61, 2^62), for random 64-bit seeds and offsets and the extremes."""
    rng = random.Random(torch.initial_seed())
    pairs = [(0, 0), (2 ** 64 - 1, 2 ** 64 - 4), (42, 4)] + [(rng.getrandbits(64), 4 * rng.getrandbits(40))
                                                               for _ in range(200)]
    for seed, offset in pairs:
        value = ops_attention.seed_hash(seed, offset)
        assert ext.dropout_seed_hash(seed, offset) == value and 2 ** 61 <= value < 2 ** 62, (seed, offset)
    assert len({ops_attention.seed_hash(42, 4 * i) for i in range(100)}) == 100


def test_registered_forms_key_every_switch_the_planning_reads(monkeypatch):
    """Note [eager attention from C++]: a registered form is keyed by the config switches of
    kernels/attention.py's planning_switches (ops/attention.py's _switches): every config setting the attention's
    planning reads, for the forms that register (no mask, soft-capping or not, dropout or not, head dims 64-256 and
    80), is one of them, and each of them changes the key.  A switch read but not keyed would let a form planned
    under one value serve calls made under another."""
    import inductor_conv.kernels.attention as ka
    from inductor_conv.kernels import attn_common

    read, config = set(), inductor_conv.config

    class Recording:
        def __getattr__(self, name):
            read.add(name)
            return getattr(config, name)

    recorder = Recording()
    for module, name in ((ka, "_config"), (attn_common, "config"), (inductor_conv, "config")):
        monkeypatch.setattr(module, name, recorder)
    real_plan = ka._plan
    monkeypatch.setattr(ka, "_plan", real_plan.__wrapped__)  # plan afresh: every read happens
    for D, p, causal, kind in ((64, 0.1, True, "fwd"), (128, 0.0, False, "bwd"), (256, 0.1, True, "bwd"),
                               (80, 0.0, True, "fwd")):
        q = torch.empty(1, 2, 200, D, dtype=torch.bfloat16)
        for softcap in (0.0, 30.0):
            plan = ka._plan_for(kind, q, q, None, causal, p, softcap, False, None)
            plan.variant(1, True, True, p > 0)
    keyed = {"attention_fast_tanh", "attention_mask_ranges", "attention_split_head_dim", "attention_masked_first"}
    assert read == keyed, read ^ keyed  # a switch read and not keyed, or a recorder that saw nothing
    monkeypatch.undo()
    before = ops_attention._switches()
    for name in keyed:
        monkeypatch.setattr(inductor_conv.config, name, not getattr(inductor_conv.config, name))
        assert ops_attention._switches() != before, name
        monkeypatch.undo()


@pytest.mark.xdist_group("native_extension")
def test_registered_forms_mechanics(ext):
    """On the CPU (Note [eager attention from C++], Note [eager conv from C++]): the two ops' forms share one
    registry, counted and cleared per op; a form registered again replaces itself; forms that differ in a stride, a
    dtype, dropout_p, the scale, the flags or the switches are distinct; a call on the CPU is never run from it."""
    program = ext.Program()
    program.outputs = [3]
    q, k, v = (torch.randn(1, 2, 32, 64) for _ in range(3))
    ext.clear_attention_forms()
    ext.clear_conv_forms()
    variants = [(q, 0.1, True, 0.125, 0), (q.transpose(1, 2).contiguous().transpose(1, 2), 0.1, True, 0.125, 0),
                (q.half(), 0.1, True, 0.125, 0), (q, 0.0, True, 0.125, 0), (q, 0.1, False, 0.125, 0),
                (q, 0.1, True, 0.25, 0), (q, 0.1, True, 0.125, 4)]
    for q_, p, causal, scale, switches in variants + variants[:1]:
        ext.register_attention(q_, k, v, p, causal, scale, switches, program, None)
    assert ext.attention_forms() == len(variants) and ext.conv_forms() == 0
    x, w = torch.randn(2, 8, 16), torch.randn(8, 4)
    ext.register_conv(x, w, None, None, None, True, True, program, program)
    ext.register_conv(x, w, torch.randn(8), None, None, True, True, program, None)
    assert ext.conv_forms() == 2 and ext.attention_forms() == len(variants)
    assert ext.eager_attention(q, k, v, 0.1, True, 0.125, False, 0) is None  # not on a GPU
    assert ext.eager_causal_conv1d(x, w, None, None, None, "silu", True) is None
    ext.clear_conv_forms()
    assert ext.conv_forms() == 0 and ext.attention_forms() == len(variants)
    ext.clear_attention_forms()
    assert ext.attention_forms() == 0
    with pytest.raises(Exception, match="no forward Program"):
        ext.register_attention(q, k, v, 0.1, True, 0.125, 0, ext.Program(), None)


def ext_output(ext, program, x, w, b):
    y = x.detach() * 2
    ext.attach(y, [x, w, b], [x, w, b], program)
    return y


def _inputs(B, C, L, K, dtype, layout, bias, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, L, C, generator=g) if layout == "blc" else torch.randn(B, C, L, generator=g)
    x = (x.transpose(1, 2) if layout == "blc" else x).to("cuda", dtype)
    w = torch.randn(C, K, generator=g).to("cuda", dtype)
    b = torch.randn(C, generator=g).to("cuda", dtype) if bias else None
    return [t.requires_grad_() if t is not None else None for t in (x, w, b)]


def _grads(native_on, monkeypatch, x, w, b, dy, activation, seq_idx=None, init=None):
    monkeypatch.setattr(inductor_conv.config, "native_backward", native_on)
    leaves = [t for t in (x, w, b, init) if t is not None]
    y = inductor_conv.causal_conv1d(x, w, b, seq_idx=seq_idx, initial_states=init, activation=activation)
    return y, torch.autograd.grad(y, leaves, dy), y.grad_fn.name()


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["bcl", "blc"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("bias,activation,K,deterministic,extra", [
    (True, "silu", 4, True, None), (False, None, 3, True, None), (True, "silu", 2, False, None),
    (True, "silu", 4, True, "packed"), (True, "silu", 4, True, "initial"), (False, None, 3, False, "initial")])
def test_native_backward_equals_python_backward(ext, monkeypatch, layout, dtype, bias, activation, K, deterministic,
                                                extra):
    """The conv's C++ node gives the Python backward's bits (deterministic) or its values to rounding (atomics), for
    both layouts and dtypes, with and without bias, for packed sequences (seq_idx with padding slots) and with
    initial states (their gradient too; in Dao's (B, K - 1, C)-transposed layout beside a channel-last x)."""
    monkeypatch.setattr(inductor_conv.config, "deterministic", deterministic)
    x, w, b = _inputs(2, 96, 300, K, dtype, layout, bias, seed=K)
    seq_idx = init = None
    if extra == "packed":  # documents of random lengths, the last 20 positions padding (-1)
        cuts = torch.randint(1, 300, (2, 3)).sort(1).values
        seq_idx = (torch.arange(300)[None, :, None] >= cuts[:, None, :]).sum(-1).to(torch.int32)
        seq_idx[:, -20:] = -1
        seq_idx = seq_idx.cuda()
    if extra == "initial":
        init = torch.randn(2, K - 1, 96, device="cuda", dtype=dtype).transpose(1, 2) if layout == "blc" else \
            torch.randn(2, 96, K - 1, device="cuda", dtype=dtype)
        init.requires_grad_()
    dy = torch.randn(x.shape, device="cuda", dtype=dtype)
    y0, want, name0 = _grads(False, monkeypatch, x, w, b, dy, activation, seq_idx, init)
    y1, got, name1 = _grads(True, monkeypatch, x, w, b, dy, activation, seq_idx, init)
    assert name0 == "_EagerCausalConv1dBackward" and name1 == "CausalConv1dBackward", (name0, name1)
    assert torch.equal(y0, y1)
    for i, (a, c) in enumerate(zip(want, got)):
        if deterministic:
            assert torch.equal(a, c), f"gradient {i}: max diff {(a.double() - c.double()).abs().max().item()}"
        else:  # atomics: the order of the sums may differ between runs
            torch.testing.assert_close(c, a, rtol=1e-2 if dtype != torch.float32 else 1e-5, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_native_forward_is_launch_fwds_launch(ext, monkeypatch, layout):
    """Note [native forward]: once the extension is built the eager conv's forward runs its Program, with grad and
    without (Python's launch_fwd is not called), and gives launch_fwd's bits; a call the Programs do not take (a
    non-dense x) runs launch_fwd."""
    x, w, b = _inputs(2, 96, 300, 4, torch.bfloat16, layout, True, seed=11)
    want = kc.launch_fwd(x, w, b, None, None, "silu")
    python_launches = []
    launch_fwd = kc.launch_fwd
    monkeypatch.setattr(kc, "launch_fwd", lambda *a: python_launches.append(a) or launch_fwd(*a))
    y = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    assert y.grad_fn.name() == "CausalConv1dBackward" and torch.equal(y, want)
    with torch.no_grad():
        y = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    assert y.grad_fn is None and torch.equal(y, want) and python_launches == []
    strided = x[..., ::2]
    with torch.no_grad():
        y = inductor_conv.causal_conv1d(strided, w, b, activation="silu")
    assert len(python_launches) == 1 and torch.equal(y, launch_fwd(strided, w, b, None, None, "silu"))


@pytest.mark.gpu
@pytest.mark.parametrize("extra", [None, "packed", "initial"])
def test_eager_conv_from_cpp_gives_the_python_paths_bits(ext, monkeypatch, extra):
    """Note [eager conv from C++]: a form's first call runs the Python path, which registers it; later calls of the
    form run from C++ (the Python checks are not reached) with the same output and gradients, bit for bit, with and
    without grad, "swish" as "silu"; another activation, a 3-d weight, final states, a subclass and a misaligned x
    take the Python path."""
    from inductor_conv.ops import causal_conv1d as ops_conv

    ext.clear_conv_forms()
    x, w, b = _inputs(2, 64, 200, 4, torch.bfloat16, "blc", True, seed=13)
    seq_idx = init = None
    if extra == "packed":
        seq_idx = (torch.arange(200, device="cuda") // 70).to(torch.int32).expand(2, 200).contiguous()
    if extra == "initial":
        init = torch.randn(2, 3, 64, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    leaves = [t for t in (x, w, b, init) if t is not None]
    dy = torch.randn(x.shape, device="cuda", dtype=torch.bfloat16)
    checks = []
    check_args = ops_conv._check_args
    monkeypatch.setattr(ops_conv, "_check_args", lambda *a: checks.append(1) or check_args(*a))

    def step(activation="silu", **kw):
        y = inductor_conv.causal_conv1d(x, w, b, seq_idx, init, activation=activation, **kw)
        return y, torch.autograd.grad(y, leaves, dy)

    first = step()
    assert len(checks) == 1 and ext.conv_forms() == 1 and first[0].grad_fn.name() == "CausalConv1dBackward"
    for second in (step(), step("swish")):
        assert len(checks) == 1 and second[0].grad_fn.name() == "CausalConv1dBackward"
        assert torch.equal(first[0], second[0]) and all(torch.equal(a, c) for a, c in zip(first[1], second[1]))
    with torch.no_grad():
        assert torch.equal(inductor_conv.causal_conv1d(x, w, b, seq_idx, init, activation="silu"), first[0])
    assert len(checks) == 1
    step(None)
    inductor_conv.causal_conv1d(x, w[:, None], b, seq_idx, init, activation="silu")
    if extra is None:
        inductor_conv.causal_conv1d(x, w, b, activation="silu", return_final_states=True)
    else:
        checks.append(1)
    inductor_conv.causal_conv1d(x.as_subclass(_Subclass), w, b, seq_idx, init, activation="silu")
    base = torch.empty(x.numel() + 8, device="cuda", dtype=x.dtype)
    misaligned = base[1:1 + x.numel()].view(2, 200, 64).transpose(1, 2).copy_(x)
    inductor_conv.causal_conv1d(misaligned, w, b, seq_idx, init, activation="silu")
    assert len(checks) == 6


@pytest.mark.gpu
@pytest.mark.parametrize("dy_kind", ["channel-last", "expanded", "offset"])
def test_native_backward_takes_dy_in_any_strides(ext, monkeypatch, dy_kind):
    """dy with other strides than x (a channel-last or expanded one, or one 16-byte misaligned) is copied into x's
    layout first, as the kernels were planned for: the same gradients as the Python backward."""
    x, w, b = _inputs(2, 64, 200, 4, torch.bfloat16, "bcl", True, seed=5)
    if dy_kind == "channel-last":
        dy = torch.randn(2, 200, 64, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    elif dy_kind == "expanded":
        dy = torch.randn(1, 64, 1, device="cuda", dtype=torch.bfloat16).expand(2, 64, 200)
    else:
        dy = torch.randn(x.numel() + 1, device="cuda", dtype=torch.bfloat16)[1:].view(x.shape)
    _, want, _ = _grads(False, monkeypatch, x, w, b, dy, "silu")
    _, got, name = _grads(True, monkeypatch, x, w, b, dy, "silu")
    assert name == "CausalConv1dBackward"
    for a, c in zip(want, got):
        assert torch.equal(a, c)


@pytest.mark.gpu
def test_native_backward_leaves_other_calls_to_python(ext, monkeypatch):
    """initial_states that are not dense, a misaligned x and a weight that is not contiguous take the Python
    backward."""
    monkeypatch.setattr(inductor_conv.config, "native_backward", True)
    x, w, b = _inputs(2, 64, 128, 4, torch.bfloat16, "bcl", True, seed=7)
    init = torch.randn(2, 64, 6, device="cuda", dtype=torch.bfloat16)[..., ::2].requires_grad_()
    y = inductor_conv.causal_conv1d(x, w, b, initial_states=init, activation="silu")
    assert y.grad_fn.name() == "_EagerCausalConv1dBackward"
    base = torch.randn(2 * 64 * 128 + 1, device="cuda", dtype=torch.bfloat16)
    x_odd = base[1:].view(2, 64, 128).requires_grad_()
    y = inductor_conv.causal_conv1d(x_odd, w, b, activation="silu")
    assert y.grad_fn.name() == "_EagerCausalConv1dBackward"
    w_t = torch.randn(4, 64, device="cuda", dtype=torch.bfloat16).t().requires_grad_()
    y = inductor_conv.causal_conv1d(x, w_t, b, activation="silu")
    assert y.grad_fn.name() == "_EagerCausalConv1dBackward"


@pytest.mark.gpu
def test_native_backward_checks_saved_tensors(ext, monkeypatch):
    """An input changed in place after the forward is refused at the backward, as for any autograd node; a frozen
    weight gets no gradient."""
    monkeypatch.setattr(inductor_conv.config, "native_backward", True)
    x, w, b = _inputs(1, 32, 64, 4, torch.bfloat16, "bcl", True, seed=9)
    x_in = x.detach().clone().requires_grad_()
    leaf = x_in * 1
    y = inductor_conv.causal_conv1d(leaf, w, b, activation="silu")
    assert y.grad_fn.name() == "CausalConv1dBackward"
    with torch.no_grad():
        leaf.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    w_frozen = w.detach()
    y = inductor_conv.causal_conv1d(x, w_frozen, b, activation="silu")
    dx, db = torch.autograd.grad(y.sum(), (x, b))
    assert dx.shape == x.shape and db.shape == b.shape
    assert kc._NATIVE_PROGRAMS, "programs are cached per configuration and shape"


def _attention_grads(native_on, monkeypatch, q, k, v, do, **kwargs):
    monkeypatch.setattr(inductor_conv.config, "native_backward", native_on)
    torch.manual_seed(0)  # the dropout seed the op draws
    kwargs = dict(kwargs, enable_gqa=q.shape[1] != k.shape[1])
    softcap = kwargs.pop("softcap", None)
    if softcap is None:
        out = inductor_conv.attention(q, k, v, **kwargs)
    else:
        out = inductor_conv.softcapped_attention(q, k, v, softcap, **kwargs)
    return out, torch.autograd.grad(out, (q, k, v), do), out.grad_fn.name()


def _qkv(B, Hq, Hkv, S, D, layout, g):
    """bf16 q, k, v on the GPU that require grad, as (B, H, S, D) tensors or (layout "bshd") views of (B, S, H, D)."""
    def make(H):
        shape = (B, S, H, D) if layout == "bshd" else (B, H, S, D)
        t = torch.randn(shape, generator=g).to("cuda", torch.bfloat16)
        return (t.transpose(1, 2) if layout == "bshd" else t).requires_grad_()

    return make(Hq), make(Hkv), make(Hkv)


def _attention_mask(kind, B, S, g):
    """A mask for a (B, S, S) attention: a bool causal (B, 1, S, S) tensor, or HF's additive padding mask (B, 1, 1,
    S) in bf16 with the first keys of batch 0 masked."""
    if kind is None:
        return None
    if kind == "bool":
        return torch.ones(S, S, dtype=torch.bool).tril().expand(B, 1, S, S).contiguous().cuda()
    mask = torch.zeros(B, 1, 1, S)
    mask[0, ..., : int(torch.randint(1, S // 2, (1,), generator=g))] = torch.finfo(torch.bfloat16).min
    return mask.to("cuda", torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("B,Hq,Hkv,S,D,kwargs", [
    (2, 4, 2, 300, 64, dict(is_causal=True, dropout_p=0.1)),
    (1, 4, 4, 257, 128, dict(dropout_p=0.0, softcap=30.0)),
    (2, 8, 2, 130, 32, dict(is_causal=True, dropout_p=0.0)),
    (2, 4, 2, 300, 64, dict(dropout_p=0.1, mask="bool")),  # summarised: the cols launch reads the forward's rows
    (2, 4, 4, 257, 128, dict(dropout_p=0.0, mask="additive")),
    (2, 4, 2, 200, 256, dict(dropout_p=0.0, softcap=50.0, mask="additive")),  # Gemma 2's heads with its mask
    (2, 4, 2, 48, 64, dict(dropout_p=0.1, mask="bool")),  # a short mask: not summarised
])
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_native_attention_backward_equals_python_backward(ext, monkeypatch, B, Hq, Hkv, S, D, kwargs, layout):
    """Attention without a mask or with one that needs no gradient: the C++ node's gradients are the Python
    backward's bits (GQA, dropout replayed from the same seed, soft-capping, bool and additive masks with and without
    their summaries, q / k / v as (B, H, S, D) or the (B, S, H, D) view) for a dO in O's layout; the output is the
    same.  A dO in other strides the node copies into O's layout first, where the Python backward reads it as it
    is: kernels specialised for other strides, whose sums may round differently (an ulp of dq on the H100), so
    those gradients agree to rounding."""
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)  # p 0 without a cap: our kernels, not cuDNN's
    g = torch.Generator().manual_seed(S)
    q, k, v = _qkv(B, Hq, Hkv, S, D, layout, g)
    kwargs = dict(kwargs)
    mask = _attention_mask(kwargs.pop("mask", None), B, S, g)
    if mask is not None:
        kwargs["attn_mask"] = mask
    do = torch.randn(q.shape, generator=g).to("cuda", torch.bfloat16)
    do = torch.empty_like(q).copy_(do)  # O's layout: O is empty_like(q)
    o0, want, name0 = _attention_grads(False, monkeypatch, q, k, v, do, **kwargs)
    o1, got, name1 = _attention_grads(True, monkeypatch, q, k, v, do, **kwargs)
    assert name0 == "_EagerAttentionBackward" and name1 == "AttentionBackward", (name0, name1)
    assert torch.equal(o0, o1)
    for name, a, c in zip(("dq", "dk", "dv"), want, got):
        assert torch.equal(a, c), f"{name}: max diff {(a.double() - c.double()).abs().max().item()}"
    strided = do.transpose(-1, -2).contiguous().transpose(-1, -2)  # the head dim strided: copied by the node
    _, want, _ = _attention_grads(False, monkeypatch, q, k, v, strided, **kwargs)
    _, got, _ = _attention_grads(True, monkeypatch, q, k, v, strided, **kwargs)
    for a, c in zip(want, got):
        torch.testing.assert_close(c, a, rtol=1.6e-2, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("B,Hq,Hkv,S,D,causal", [(2, 4, 2, 300, 64, True), (1, 8, 8, 256, 128, False)])
@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_cudnn_route_node_equals_sdpa_node_under_views(ext, monkeypatch, B, Hq, Hkv, S, D, causal, layout,
                                                      eager_cudnn_at_every_size):
    """Note [cuDNN route]: the eager op's cuDNN calls get the C++ CudnnAttentionBackward, which gives the bits of the
    route's Python form (SDPA's node under the views that put dO into O's layout), for a dO in O's layout and in
    other strides (both copy it into O's layout before cuDNN's backward); and they agree with float64."""
    if not ops_attention._cudnn_eager(*(torch.empty(B, H, S, D, device="cuda", dtype=torch.bfloat16)
                                        for H in (Hq, Hkv, Hkv)), None, 0.0, causal, None):
        pytest.skip("no cuDNN attention here")
    g = torch.Generator().manual_seed(S)
    q, k, v = _qkv(B, Hq, Hkv, S, D, layout, g)
    do = torch.randn(q.shape, generator=g).to("cuda", torch.bfloat16)
    for dout in (do, do.transpose(-1, -2).contiguous().transpose(-1, -2)):
        results = []
        for native_on in (False, True):
            monkeypatch.setattr(inductor_conv.config, "native_backward", native_on)
            out = inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=Hq != Hkv)
            results.append((out, out.grad_fn.name(), *torch.autograd.grad(out, (q, k, v), dout)))
        (o0, name0, *want), (o1, name1, *got) = results
        assert name1 == "CudnnAttentionBackward" and name0 != name1, (name0, name1)
        assert torch.equal(o0, o1)
        for name, a, c in zip(("dq", "dk", "dv"), want, got):
            assert torch.equal(a, c), f"{name}: max diff {(a.double() - c.double()).abs().max().item()}"
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal, enable_gqa=Hq != Hkv)
    for t, r in zip(got, torch.autograd.grad(ref, leaves, dout.double())):
        torch.testing.assert_close(t.double(), r, rtol=0, atol=3e-2 * r.abs().max().item())


@pytest.mark.gpu
@pytest.mark.parametrize("causal, gqa, layout", [(True, True, "bhsd"), (False, False, "bshd")])
def test_cudnn_route_from_cpp_gives_the_python_routes_bits(ext, monkeypatch, causal, gqa, layout,
                                                           eager_cudnn_at_every_size):
    """Note [cuDNN route from C++]: on the GPU the public function's cuDNN calls are made by the C++ entry (the
    Python path is not reached) with the bits of the Python route's call at the same scale: the output, and the
    gradients for a dO in O's layout and in another; without grad and with a scale given too.  Calls it refuses
    (dropout, few queries, less work than config.attention_cudnn_eager_min_work) run the Python path."""
    g = torch.Generator().manual_seed(7)
    B, Hq, Hkv, S, D = 2, 8, 2 if gqa else 8, 256, 64
    q, k, v = _qkv(B, Hq, Hkv, S, D, layout, g)
    if ext.eager_cudnn_attention(q.detach(), k.detach(), v.detach(), causal, None, gqa, 0) is None:
        pytest.skip("no cuDNN attention here")
    ext.clear_attention_forms()  # the dropout call below is its form's first
    calls = []
    python_path = ops_attention._attention
    monkeypatch.setattr(ops_attention, "_attention", lambda *a: calls.append(a[5]) or python_path(*a))
    out = inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    assert calls == [] and out.grad_fn.name() == "CudnnAttentionBackward"
    want = ops_attention._cudnn_attention(q, k, v, causal, 1.0 / math.sqrt(D), True)
    assert torch.equal(out, want)
    do = torch.randn(q.shape, generator=g).to("cuda", torch.bfloat16)
    for dout in (do, do.transpose(1, 2).contiguous().transpose(1, 2)):
        got = torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)
        for a, b in zip(got, torch.autograd.grad(want, (q, k, v), dout, retain_graph=True)):
            assert torch.equal(a, b)
    with torch.no_grad():
        out = inductor_conv.attention(q, k, v, is_causal=causal, scale=0.3, enable_gqa=gqa)
        assert out.grad_fn is None and torch.equal(out, ops_attention._cudnn_attention(q, k, v, causal, 0.3, False))
    assert calls == []
    inductor_conv.attention(q, k, v, dropout_p=0.1, is_causal=causal, enable_gqa=gqa)
    inductor_conv.attention(q[:, :, :MAX_QUERIES], k, v, enable_gqa=gqa)
    assert len(calls) == 2
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", B * Hq * S * S * (D // 8) ** 2 + 1)
    assert inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=gqa).grad_fn.name() == "AttentionBackward"
    assert len(calls) == 3


@pytest.mark.gpu
@pytest.mark.parametrize("p, causal, gqa, layout, dtype", [
    (0.1, True, True, "bhsd", torch.bfloat16), (0.1, False, False, "bshd", torch.bfloat16),
    (0.0, True, False, "bhsd", torch.float32)])  # p = 0 in fp32: not the cuDNN route
def test_eager_attention_from_cpp_gives_the_python_paths_bits(ext, monkeypatch, p, causal, gqa, layout, dtype):
    """Note [eager attention from C++]: a form's first call runs the Python path, which registers it; the next call
    of the form runs from C++ (the Python path is not reached) and, from the same generator state, gives the same
    output, dropout mask and gradients, bit for bit, and advances the generator as the Python path does; a call
    without grad too."""
    g = torch.Generator().manual_seed(5)
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in _qkv(2, 8, 2 if gqa else 8, 200, 64, layout, g))
    dout = torch.randn(q.shape, generator=g).to("cuda", dtype)
    ext.clear_attention_forms()
    python_path = ops_attention._attention
    calls = []
    monkeypatch.setattr(ops_attention, "_attention", lambda *a: calls.append(a[4]) or python_path(*a))

    def step():
        torch.manual_seed(3)
        out = inductor_conv.attention(q, k, v, dropout_p=p, is_causal=causal, enable_gqa=gqa)
        return out, torch.autograd.grad(out, (q, k, v), dout), torch.cuda.default_generators[0].get_offset()

    first = step()
    assert calls == [p] and ext.attention_forms() == 1 and first[0].grad_fn.name() == "AttentionBackward"
    second = step()
    assert calls == [p] and second[0].grad_fn.name() == "AttentionBackward"
    assert torch.equal(first[0], second[0]) and first[2] == second[2]
    for name, a, b in zip(("dq", "dk", "dv"), first[1], second[1]):
        assert torch.equal(a, b), name
    with torch.no_grad():
        torch.manual_seed(3)
        out = inductor_conv.attention(q, k, v, dropout_p=p, is_causal=causal, enable_gqa=gqa)
    assert calls == [p] and out.grad_fn is None and torch.equal(out, first[0])
    if p:  # the next draw differs
        assert not torch.equal(inductor_conv.attention(q, k, v, dropout_p=p, is_causal=causal, enable_gqa=gqa),
                               first[0])


@pytest.mark.gpu
def test_eager_attention_from_cpp_forms_and_refusals(ext, monkeypatch):
    """Note [eager attention from C++]: a form first seen without grad is registered without a backward: its calls
    without grad run from C++, a call with grad runs the Python path once, which registers the backward; a
    misaligned q, another scale, a subclass and a non-bool flag take the Python path; under a CUDA graph capture the
    dropout seed is drawn on the device (the Python path), so replays drop differently."""
    g = torch.Generator().manual_seed(9)
    q, k, v = _qkv(1, 4, 4, 128, 64, "bhsd", g)
    ext.clear_attention_forms()
    python_path = ops_attention._attention
    calls = []
    monkeypatch.setattr(ops_attention, "_attention", lambda *a: calls.append(1) or python_path(*a))
    attend = lambda q, **kw: inductor_conv.attention(q, k, v, dropout_p=0.1, is_causal=True, **kw)  # noqa: E731
    with torch.no_grad():
        attend(q), attend(q)
    assert len(calls) == 1 and ext.attention_forms() == 1
    attend(q).sum().backward()
    attend(q).sum().backward()
    assert len(calls) == 2
    base = torch.empty(q.numel() + 8, device="cuda", dtype=q.dtype)
    misaligned = base[4:4 + q.numel()].view(q.shape).copy_(q)
    for other in (lambda: attend(misaligned), lambda: attend(q, scale=0.3), lambda: attend(q.as_subclass(_Subclass)),
                  lambda: inductor_conv.attention(q, k, v, dropout_p=0.1, is_causal=1)):
        before = len(calls)
        other()
        assert len(calls) == before + 1
    with torch.no_grad():
        static_q = q.detach().clone()
        attend(static_q)  # registers the no-grad form of these tensors' layout (the same as q's)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            attend(static_q)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = attend(static_q)
        graph.replay()
        first = static_out.clone()
        graph.replay()
        assert not torch.equal(first, static_out)


@pytest.mark.gpu
def test_native_attention_backward_leaves_other_calls_to_python(ext, monkeypatch):
    """A mask that needs a gradient (a learned bias), and few queries (flash-decoding's forward), take the Python
    backward; a mask changed in place after the forward is refused at the backward, as the Function refuses it."""
    monkeypatch.setattr(inductor_conv.config, "native_backward", True)
    q, k, v = (torch.randn(1, 2, 64, 32, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    bias = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    out = inductor_conv.attention(q, k, v, attn_mask=bias, dropout_p=0.1)
    assert out.grad_fn.name() == "_EagerAttentionBackward"
    out = inductor_conv.softcapped_attention(q[:, :, :1], k, v, 20.0)
    assert out.grad_fn.name() == "_EagerAttentionBackward"
    mask = torch.ones(64, 64, device="cuda", dtype=torch.bool).tril()
    out = inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=0.1)
    assert out.grad_fn.name() == "AttentionBackward"
    mask[0, 0] = False
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
