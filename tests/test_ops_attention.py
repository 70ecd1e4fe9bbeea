"""The public ``inductor_conv.attention``: SDPA semantics, declared extension, errors, autograd, torch.compile.

Kernel numerics in depth (tiles, dropout replay, large scores) live in test_kernels_attention.py; here the op is
checked end to end against eager ``F.scaled_dot_product_attention`` evaluated in float64.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from helpers import compiled_fullgraph

import inductor_conv
from inductor_conv import _compat
from inductor_conv.reference.attention import attention_ref

# fp32 kernels (fp32 dot products of length D <= 256, sums over <= 129 keys of O(1) terms, an fp32 online softmax)
# vs float64 SDPA: observed <= 2e-6; 2e-4 relative with a 2e-5 floor still fails on any wrong term, scale or mask
# entry (>= 1e-3 here).
FP32_TOL = dict(rtol=2e-4, atol=2e-5)


def _qkv(B=2, Hq=4, Hkv=2, Sq=9, Sk=13, D=16, dtype=torch.float32, requires_grad=False):
    q = torch.randn(B, Hq, Sq, D, dtype=dtype)
    k = torch.randn(B, Hkv, Sk, D, dtype=dtype)
    v = torch.randn(B, Hkv, Sk, D, dtype=dtype)
    return [t.requires_grad_(requires_grad) for t in (q, k, v)]


def _sdpa64(q, k, v, **kw):
    q, k, v = (t.detach().double().requires_grad_(True) for t in (q, k, v))
    G = q.shape[1] // k.shape[1]
    kk, vv = (t.repeat_interleave(G, dim=1) for t in (k, v))
    mask = kw.pop("attn_mask", None)
    if mask is not None and mask.is_floating_point():
        mask = mask.detach().double().requires_grad_(mask.requires_grad)
    out = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask, **kw)
    return out, (q, k, v, mask)


@pytest.mark.parametrize(
    "case",
    ["plain", "causal", "scale", "bool_mask", "float_mask_b11k", "float_mask_1hqk", "gqa4"],
)
def test_matches_sdpa_with_grads(case):
    Hq, Hkv = (4, 1) if case == "gqa4" else (4, 2)
    q, k, v = _qkv(Hq=Hq, Hkv=Hkv, requires_grad=True)
    B, _, Sq, _ = q.shape
    Sk = k.shape[2]
    kw = {}
    if case == "causal":
        kw["is_causal"] = True
    elif case == "scale":
        kw["scale"] = 0.3
    elif case == "bool_mask":
        mask = torch.rand(B, 1, Sq, Sk) > 0.3
        mask[..., 0] = True  # every row keeps a key: eager SDPA is NaN on empty rows
        kw["attn_mask"] = mask
    elif case == "float_mask_b11k":
        kw["attn_mask"] = torch.randn(B, 1, 1, Sk)
    elif case == "float_mask_1hqk":
        kw["attn_mask"] = torch.randn(1, Hq, Sq, Sk)
    out = inductor_conv.attention(q, k, v, enable_gqa=True, **kw)
    g = torch.randn_like(out)
    out.backward(g)
    ref, leaves = _sdpa64(q, k, v, **dict(kw))
    ref.backward(g.double())
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    for ours, leaf in zip((q, k, v), leaves[:3]):
        torch.testing.assert_close(ours.grad.double(), leaf.grad, **FP32_TOL)


# ---------------------------------------------------------------------------------------------------------------
# Edges of the tiles, heads and head dims against float64 SDPA, outputs and every gradient
# ---------------------------------------------------------------------------------------------------------------
def _check_against_sdpa(B, Hq, Hkv, Sq, Sk, D, *, causal=False, dtype=torch.float32, tol=FP32_TOL):
    q = torch.randn(B, Hq, Sq, D).to(dtype).requires_grad_()
    k, v = (torch.randn(B, Hkv, Sk, D).to(dtype).requires_grad_() for _ in range(2))
    out = inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=True)
    assert out.dtype == dtype
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), dout)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    G = Hq // Hkv
    ref = F.scaled_dot_product_attention(leaves[0], *(t.repeat_interleave(G, dim=1) for t in leaves[1:]),
                                         is_causal=causal)
    torch.testing.assert_close(out.double(), ref, **tol)
    for got, want in zip(grads, torch.autograd.grad(ref, leaves, dout.double())):
        assert got.shape == want.shape  # dK, dV per kv head: the G query heads' contributions summed
        torch.testing.assert_close(got.double(), want, **tol)


@pytest.mark.parametrize("causal", [False, True])
def test_gqa_ratio_8_matches_sdpa(causal):
    torch.manual_seed(1)
    _check_against_sdpa(1, 8, 1, 9, 11, 16, causal=causal)


@pytest.mark.parametrize("Sq, Sk, causal", [(129, 129, True), (129, 17, False), (17, 129, True)])
def test_ragged_last_tiles_at_length_129(Sq, Sk, causal):
    """129 = one past a power of two: a ragged last tile on the query and on the key axis."""
    torch.manual_seed(2)
    _check_against_sdpa(1, 2, 1, Sq, Sk, 16, causal=causal)


@pytest.mark.parametrize("D", [80, 256])
def test_head_dims_up_to_256_match_sdpa(D):
    torch.manual_seed(3)
    _check_against_sdpa(1, 2, 1, 5, 7, D)


def test_fp16_storage_matches_sdpa():
    """fp16 q/k/v (the interpreter's tl.dot on fp16 is the known trap). One fp16 rounding of O and of the gradients
    (2^-11 relative) on top of fp32 math; 2e-3 is a 4x margin."""
    torch.manual_seed(4)
    _check_against_sdpa(1, 4, 2, 17, 19, 16, causal=True, dtype=torch.float16, tol=dict(rtol=2e-3, atol=2e-3))


def _eager_causal(q, k, v, scale):
    """HF's eager spelling: scores in the inputs' dtype, softmax in float32, probabilities back in the inputs' dtype."""
    s = torch.matmul(q, k.transpose(2, 3)) * scale
    s = s + torch.full(s.shape[-2:], float("-inf"), dtype=s.dtype, device=s.device).triu(1)
    return torch.softmax(s, -1, dtype=torch.float32).to(q.dtype) @ v


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_bf16_error_is_below_the_eager_spellings(device):
    """bf16 inputs, against float64 from the same inputs: the op's output and gradients are closer than eager's
    spelling of the same attention, which rounds its scores to bf16 where the kernels keep float32 (both round the
    probabilities for the P·V product). Mean relative error over 4 draws; observed 0.5-0.6x eager's with
    round-to-nearest bf16 conversions, 1.1-1.2x with the Triton interpreter's own truncating one (Note [interpreter
    bf16 rounding] in helpers.py, installed by conftest.py)."""
    torch.manual_seed(11)
    errors = {"eager": torch.zeros(4, dtype=torch.float64), "op": torch.zeros(4, dtype=torch.float64)}
    for _ in range(4):
        q, k, v, do = (torch.randn(2, 4, 32, 16, device=device).to(torch.bfloat16) for _ in range(4))
        inputs = [t.double().requires_grad_() for t in (q, k, v)]
        ref = _eager_causal(*inputs, 0.25)
        want = (ref, *torch.autograd.grad(ref, inputs, do.double()))
        for name, fn in (("eager", lambda *a: _eager_causal(*a, 0.25)),
                         ("op", lambda *a: inductor_conv.attention(*a, is_causal=True))):
            x = [t.clone().requires_grad_() for t in (q, k, v)]
            out = fn(*x)
            got = (out, *torch.autograd.grad(out, x, do))
            errors[name] += torch.tensor([((g.double() - w).norm() / w.norm()).item() for g, w in zip(got, want)])
    assert (errors["op"] < errors["eager"]).all(), errors


def test_learned_bias_gets_its_gradient_reduced_over_broadcast_dims():
    q, k, v = _qkv(Hq=2, Hkv=2, requires_grad=True)
    bias = torch.randn(1, 2, q.shape[2], k.shape[2], requires_grad=True)
    out = inductor_conv.attention(q, k, v, attn_mask=bias)
    g = torch.randn_like(out)
    out.backward(g)
    assert bias.grad.shape == bias.shape
    ref, leaves = _sdpa64(q, k, v, attn_mask=bias)
    ref.backward(g.double())
    torch.testing.assert_close(bias.grad.double(), leaves[3].grad, **FP32_TOL)
    # Softmax is shift-invariant per row, so each row of the bias gradient sums to zero.
    torch.testing.assert_close(bias.grad.sum(-1), torch.zeros_like(bias.grad.sum(-1)), rtol=0, atol=1e-5)


def test_compiled_learned_mask_gets_its_gradient():
    """A float mask that requires grad (a learned position bias), broadcast over the batch: its gradient, summed
    over the broadcast dim, through a compiled graph against float64 autograd."""
    torch.manual_seed(23)
    q, k, v = (torch.randn(2, 2, 9, 16, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, 2, 9, 9, requires_grad=True)
    out = compiled_fullgraph(lambda q, k, v, m: inductor_conv.attention(q, k, v, attn_mask=m))(q, k, v, bias)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v, bias)]
    ref = attention_ref(*leaves[:3], attn_mask=leaves[3])
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    g = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad(out, (q, k, v, bias), g),
                         torch.autograd.grad(ref, leaves, g.double())):
        torch.testing.assert_close(got.double(), want, **FP32_TOL)


def _sdpa64_empty_rows_zero(q, k, v, attn_mask, **kw):
    """float64 SDPA with the declared extension: a row with no allowed key outputs zeros, so it passes no gradient
    to q, k or v (SDPA runs such a row with every key allowed, then its output is filled with zeros)."""
    empty = ~attn_mask.any(dim=-1, keepdim=True)
    out, leaves = _sdpa64(q, k, v, attn_mask=attn_mask | empty, **kw)
    return out.masked_fill(empty, 0.0), leaves


@pytest.mark.parametrize("mask_shape", ["11qk", "bhqk"])
def test_fully_masked_rows_are_zero_with_zero_grads(mask_shape):
    """Declared extension: eager gives NaN, we give zeros (and zero gradients), with GQA summing dK / dV over the
    query heads of a KV head; the other rows of the same heads are ordinary SDPA."""
    torch.manual_seed(11)
    q, k, v = _qkv(Hq=4, Hkv=2, requires_grad=True)
    B, Hq, Sq, _ = q.shape
    if mask_shape == "11qk":
        mask = torch.rand(1, 1, Sq, k.shape[2]) > 0.3
        mask[..., 0] = True  # no row is empty by chance
        empty_rows = [(0, 0, 3)]  # row 3 of every batch and head
    else:
        mask = torch.rand(B, Hq, Sq, k.shape[2]) > 0.3
        mask[..., 0] = True
        empty_rows = [(0, 0, 3), (0, 1, 3), (1, 2, 0), (1, 3, Sq - 1)]  # heads 0 and 1 share KV head 0
    for b, h, i in empty_rows:
        mask[b, h, i] = False
    out = inductor_conv.attention(q, k, v, attn_mask=mask, enable_gqa=True)
    dout = torch.randn_like(out)
    out.backward(dout)
    ref, leaves = _sdpa64_empty_rows_zero(q, k, v, mask)
    ref.backward(dout.double())
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    for ours, leaf in zip((q, k, v), leaves[:3]):
        torch.testing.assert_close(ours.grad.double(), leaf.grad, **FP32_TOL)
    for b, h, i in empty_rows:  # exactly zero, not merely small
        rows = (slice(None), slice(None), i) if mask_shape == "11qk" else (b, h, i)
        assert (out[rows] == 0).all() and (q.grad[rows] == 0).all()


def test_finfo_min_mask_row_is_uniform_like_eager():
    q, k, v = _qkv(Hq=2, Hkv=2)
    mask = torch.zeros(1, 1, q.shape[2], k.shape[2])
    mask[..., 2, :] = torch.finfo(torch.float32).min
    out = inductor_conv.attention(q, k, v, attn_mask=mask)
    ref, _ = _sdpa64(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    torch.testing.assert_close(out[:, :, 2], v.mean(dim=2), **FP32_TOL)


@pytest.mark.parametrize("scale", [-0.5, 0.0])
def test_non_positive_scale_like_sdpa(scale):
    """SDPA takes any finite scale; the kernels fold a positive one into exp2, so the op scales q instead."""
    q, k, v = _qkv(Hq=2, Hkv=2, requires_grad=True)
    out = inductor_conv.attention(q, k, v, scale=scale)
    ref, leaves = _sdpa64(q, k, v, scale=scale)
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    dout = torch.randn_like(ref)
    for g, r in zip(torch.autograd.grad(out, (q, k, v), dout.float()), torch.autograd.grad(ref, leaves[:3], dout)):
        torch.testing.assert_close(g.double(), r, **FP32_TOL)


def test_scale_from_the_shape_under_dynamic_compile():
    """scale = 1 / sqrt(q.shape[-1]) is symbolic under dynamic=True: validating it must not break the graph."""
    torch._dynamo.reset()
    f = torch.compile(lambda q, k, v: inductor_conv.attention(q, k, v, scale=1 / math.sqrt(q.shape[-1])),
                      fullgraph=True, dynamic=True)
    for D in (16, 24):
        q, k, v = (torch.randn(1, 2, 5, D) for _ in range(3))
        torch.testing.assert_close(f(q, k, v).double(), _sdpa64(q, k, v)[0], **FP32_TOL)


def test_gradcheck_float64():
    """The op's autograd wiring, through its torch fallback (float64 does not take the kernels here);
    test_kernels_attention.py::test_gradcheck_fp64 gradchecks the Triton launchers themselves."""
    torch.manual_seed(0)
    q, k, v = _qkv(B=1, Hq=2, Hkv=1, Sq=3, Sk=5, D=16, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(1, 1, 3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v: inductor_conv.attention(q, k, v, is_causal=True, enable_gqa=True), (q, k, v))
    assert torch.autograd.gradcheck(lambda q, k, v, m: inductor_conv.attention(q, k, v, attn_mask=m, enable_gqa=True), (q, k, v, bias))


def _gemma2_eager64(q, k, v, mask, scale, cap):
    """HF Gemma 2's eager attention in float64: scale, cap * tanh(s / cap), + mask, softmax (repeat_kv GQA)."""
    G = q.shape[1] // k.shape[1]
    s = (q.double() @ k.double().repeat_interleave(G, 1).transpose(-2, -1)) * scale
    s = torch.tanh(s / cap) * cap + mask.double()
    return torch.softmax(s, -1) @ v.double().repeat_interleave(G, 1)


def test_softcap_is_gemma2_soft_capping():
    """softcapped_attention: the scaled scores become cap * tanh(s / cap) before the mask, as HF Gemma 2 writes it;
    float32 through the kernels, the learned mask trained too, against float64 eager.  A cap of 0 is attention."""
    torch.manual_seed(1)
    q, k, v = _qkv(Hq=4, Hkv=2, Sq=13, Sk=13, requires_grad=True)
    bias = torch.randn(1, 4, 13, 13, requires_grad=True)
    out = inductor_conv.softcapped_attention(q * 2.0, k * 2.0, v, 2.0, attn_mask=bias, scale=0.25, enable_gqa=True)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v, bias)]
    ref = _gemma2_eager64(leaves[0] * 2.0, leaves[1] * 2.0, leaves[2], leaves[3], 0.25, 2.0)
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    dy = torch.randn_like(out)
    for ours, want in zip(torch.autograd.grad(out, (q, k, v, bias), dy), torch.autograd.grad(ref, leaves, dy.double())):
        torch.testing.assert_close(ours.double(), want, **FP32_TOL)
    plain = inductor_conv.attention(q * 2.0, k * 2.0, v, attn_mask=bias, scale=0.25, enable_gqa=True)
    assert not torch.allclose(out, plain, atol=1e-2)
    off = inductor_conv.softcapped_attention(q * 2.0, k * 2.0, v, 0.0, attn_mask=bias, scale=0.25, enable_gqa=True)
    torch.testing.assert_close(off, plain, atol=0, rtol=0)
    for bad in (-1.0, math.inf, True):
        with pytest.raises(ValueError, match="softcap must be"):
            inductor_conv.softcapped_attention(q, k, v, bad, enable_gqa=True)


def test_softcap_gradcheck_float64():
    """The softcap path of the op's autograd and torch fallback: finite differences, a learned bias included."""
    torch.manual_seed(2)
    q, k, v = _qkv(B=1, Hq=2, Hkv=1, Sq=3, Sk=5, D=16, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(1, 2, 3, 5, dtype=torch.float64, requires_grad=True)
    fn = lambda q, k, v, m: inductor_conv.softcapped_attention(q, k, v, 0.6, attn_mask=m, enable_gqa=True)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v, bias))


def test_dropout_reproduces_under_manual_seed():
    q, k, v = _qkv(Hq=2, Hkv=2, Sq=16, Sk=16, requires_grad=True)
    torch.manual_seed(123)
    a = inductor_conv.attention(q, k, v, dropout_p=0.25)
    torch.manual_seed(123)
    b = inductor_conv.attention(q, k, v, dropout_p=0.25)
    c = inductor_conv.attention(q, k, v, dropout_p=0.25)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    plain = inductor_conv.attention(q, k, v)
    assert not torch.allclose(a, plain)


def test_host_dropout_seed_follows_the_generator_state(monkeypatch):
    """Note [host dropout seed]: the value is a function of the CUDA generator's (seed, offset), which it advances by
    4, so a restored state (manual_seed, set_rng_state, activation checkpointing) gives it again; a CUDA graph under
    capture gets None (the op then draws on the device).  A stand-in generator, so it runs without a GPU."""
    from inductor_conv.ops import attention as ops_attention

    class Generator:
        def __init__(self):
            self.seed, self.offset = 3, 0

        def initial_seed(self):
            return self.seed

        def get_offset(self):
            return self.offset

        def set_offset(self, offset):
            self.offset = offset

    gen, capturing = Generator(), [False]
    monkeypatch.setattr(torch.cuda, "default_generators", (gen,), raising=False)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: capturing[0])
    monkeypatch.setitem(ops_attention._HOST_SEED, "ok", True)
    # the Python draw (the extension's C++ one reads the real generator: tests/test_native_backward.py checks its hash)
    monkeypatch.setattr(ops_attention, "native_extension_built", lambda: None)
    device = torch.device("cuda", 0)
    first, second = (ops_attention.host_dropout_seed(device) for _ in range(2))
    assert gen.offset == 8 and first != second
    assert all((1 << 61) <= s < (1 << 62) for s in (first, second))  # an int64 argument, one kernel for every seed
    gen.offset = 0
    assert ops_attention.host_dropout_seed(device) == first
    gen.seed, gen.offset = 4, 0
    assert ops_attention.host_dropout_seed(device) not in (first, second)
    capturing[0] = True
    assert ops_attention.host_dropout_seed(device) is None and gen.offset == 4
    assert ops_attention.host_dropout_seed(torch.device("cpu")) is None


@pytest.mark.gpu
def test_host_dropout_seed_under_checkpointing_and_cuda_graphs():
    """On a GPU: activation checkpointing replays the op's forward with the RNG state restored, so the recomputed
    dropout mask, and every gradient, is the one of the plain call; under CUDA graph capture the seed is drawn on the
    device, so each replay drops other elements."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    q, k, v = (t.cuda().to(torch.bfloat16).requires_grad_() for t in _qkv(Sq=64, Sk=64))
    do = torch.randn(2, 4, 64, 16, device="cuda", dtype=torch.bfloat16)

    def f(q, k, v):
        return inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True, enable_gqa=True)

    torch.manual_seed(1)
    out = f(q, k, v)
    grads = torch.autograd.grad(out, (q, k, v), do)
    torch.manual_seed(1)
    out_ckpt = checkpoint(f, q, k, v, use_reentrant=False)
    assert torch.equal(out, out_ckpt)
    for a, b in zip(grads, torch.autograd.grad(out_ckpt, (q, k, v), do)):
        assert torch.equal(a, b)
    torch.manual_seed(2)
    assert not torch.equal(out, f(q, k, v))

    static = [t.detach() for t in (q, k, v)]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        f(*static)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = f(*static)
    graph.replay()
    first = captured.clone()
    graph.replay()
    assert not torch.equal(first, captured)


def test_dropout_fallback_and_kernels_drop_the_same_elements():
    """float64 runs the torch fallback, float32 the Triton kernels (interpreter or GPU); under the same
    torch.manual_seed they draw the same seed and, bit-identical masks, give the same output and gradients."""
    q, k, v = _qkv(Hq=4, Hkv=2, Sq=11, Sk=19)
    outs, grads = [], []
    for dtype in (torch.float32, torch.float64):
        leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
        torch.manual_seed(5)
        out = inductor_conv.attention(*leaves, dropout_p=0.4, is_causal=True, enable_gqa=True)
        out.backward(torch.ones_like(out))
        outs.append(out.double())
        grads.append([t.grad.double() for t in leaves])
    assert not torch.allclose(outs[1], inductor_conv.attention(q.double(), k.double(), v.double(), is_causal=True,
                                                               enable_gqa=True))  # dropout did drop
    torch.testing.assert_close(outs[0], outs[1], **FP32_TOL)
    for g32, g64 in zip(*grads):
        torch.testing.assert_close(g32, g64, **FP32_TOL)


def test_dropout_output_reveals_the_mask_and_dv_uses_it():
    """q = k = 0 makes P uniform (1/Sk), v = I (Sk = D) makes out[i, j] = keep_ij / ((1 - p) Sk), so the output
    *is* the forward's dropped P; the backward must give dV = Pᵀ dO with that same P (a backward that drew another
    mask, or none, fails). q = k = 0 is the point of the check (not a lazy input); dO is random."""
    B, H, Sq, Sk, p = 1, 2, 24, 16, 0.5
    q, k = torch.zeros(B, H, Sq, Sk, requires_grad=True), torch.zeros(B, H, Sk, Sk, requires_grad=True)
    v = torch.eye(Sk).expand(B, H, Sk, Sk).clone().requires_grad_()
    torch.manual_seed(5)
    out = inductor_conv.attention(q, k, v, dropout_p=p)
    dropped = out.detach().double()  # (B, H, Sq, Sk): the dropped, rescaled P itself
    kept = 1.0 / ((1 - p) * Sk)
    assert ((dropped == 0) | ((dropped - kept).abs() < 1e-6)).all()
    n, frac = dropped.numel(), (dropped != 0).double().mean().item()
    assert abs(frac - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)  # binomial keep fraction, 5 sigma over 768 draws
    dout = torch.randn_like(out)
    (dv,) = torch.autograd.grad(out, (v,), dout)
    torch.testing.assert_close(dv.double(), dropped.transpose(-2, -1) @ dout.double(), rtol=1e-5, atol=1e-6)


def test_compiled_dropout_reproduces_under_manual_seed_and_matches_eager():
    """The seed comes from torch's generator, so torch.manual_seed reproduces a compiled step too."""
    torch.manual_seed(22)
    q, k, v = (torch.randn(1, 2, 12, 16) for _ in range(3))
    f = compiled_fullgraph(lambda q, k, v: inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True))
    torch.manual_seed(7)
    a = f(q, k, v)
    torch.manual_seed(7)
    b = f(q, k, v)
    c = f(q, k, v)  # the generator has moved on: another mask
    assert torch.equal(a, b) and not torch.equal(a, c)
    # Inductor draws random numbers its own way (as for any random op in a compiled graph); with
    # fallback_random it draws them as eager does, and the compiled op then drops what the eager op drops.
    from torch._inductor import config as inductor_config

    with inductor_config.patch(fallback_random=True):
        f = compiled_fullgraph(lambda q, k, v: inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True))
        torch.manual_seed(7)
        a = f(q, k, v)
    torch.manual_seed(7)
    eager = inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True)
    torch.testing.assert_close(a, eager, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, exc, needle",
    [
        (dict(query=torch.randn(2, 8, 16)), ValueError, "query must have shape"),
        (dict(key=torch.randn(1, 2, 8, 16).half()), TypeError, "share a dtype"),
        (dict(query=torch.randn(1, 4, 8, 16)), ValueError, "enable_gqa"),
        (dict(query=torch.randn(1, 2, 8, 8), key=torch.randn(1, 2, 8, 8), value=torch.randn(1, 2, 8, 8)), ValueError,
         "head dim"),
        (dict(key=torch.randn(1, 0, 8, 16), value=torch.randn(1, 0, 8, 16), enable_gqa=True), ValueError,
         "key and value have no heads but query has 2"),
        (dict(dropout_p=1.0), ValueError, "dropout_p"),
        (dict(attn_mask=torch.randn(3, 8)), ValueError, "attn_mask of shape"),
        (dict(attn_mask=torch.ones(8, 8, dtype=torch.int32)), TypeError, "attn_mask must be bool"),
        (dict(attn_mask=torch.ones(8, 8, dtype=torch.bool), is_causal=True), ValueError, "is_causal"),
        (dict(attn_mask=torch.randn(1, 1, 2, 8, 8)), ValueError, "attn_mask must have at most 4 dims"),
        (dict(scale=float("inf")), TypeError, "scale must be a finite"),
        (dict(scale=float("nan")), TypeError, "scale must be a finite"),
        (dict(scale=10 ** 400), TypeError, "scale must be a finite"),  # an int beyond the largest float
        (dict(key=torch.randn(1, 2, 8, 16).to("meta")), ValueError, "share a device"),  # meta: another device
        (dict(attn_mask=torch.ones(8, 8, device="meta")), ValueError, "attn_mask is on meta"),
        (dict(query=torch.randn(1, 2, 8, 16).tolist()), TypeError, "query must be a Tensor"),
        (dict(query=torch.randn(1, 3, 8, 16), enable_gqa=True), ValueError, r"query's heads \(3\) must be a multiple"),
        (dict(key=torch.randn(1, 2, 8, 32)), ValueError, "query and key must share the head dim"),
        (dict(value=torch.randn(1, 2, 8, 8)), ValueError, "value's head dim"),  # value may differ (MLA), >= 16
        (dict(value=torch.randn(1, 2, 9, 16)), ValueError, "key and value must agree"),
        (dict(key=torch.randn(2, 2, 8, 16), value=torch.randn(2, 2, 8, 16)), ValueError,
         "key and value must have batch size"),
        (dict(dropout_p=-0.1), ValueError, "dropout_p"),
        (dict(dropout_p="0.1"), TypeError, "dropout_p must be a float, got str"),
        (dict(dropout_p=None), TypeError, "dropout_p must be a float, got NoneType"),
        (dict(query=torch.randn(1, 2, 8, 16).long(), key=torch.randn(1, 2, 8, 16).long(),
              value=torch.randn(1, 2, 8, 16).long()), TypeError, "query must be float32"),
    ],
)
def test_errors_name_the_argument(kwargs, exc, needle):
    args = dict(query=torch.randn(1, 2, 8, 16), key=torch.randn(1, 2, 8, 16), value=torch.randn(1, 2, 8, 16))
    args.update(kwargs)
    with pytest.raises(exc, match=needle):
        inductor_conv.attention(**args)


def test_sdpa_keyword_calls():
    """SDPA's keyword names (query, key, value, ...) and its keyword-only scale / enable_gqa; softcapped_attention
    takes the same names plus softcap. Against float64 SDPA, and bit for bit against the positional call."""
    q, k, v = _qkv(Hq=4, Hkv=2)
    mask = torch.randn(1, 4, q.shape[2], k.shape[2])
    out = inductor_conv.attention(query=q, key=k, value=v, attn_mask=mask, dropout_p=0.0, is_causal=False, scale=0.3,
                                  enable_gqa=True)
    torch.testing.assert_close(out.double(), _sdpa64(q, k, v, attn_mask=mask, scale=0.3)[0], **FP32_TOL)
    assert torch.equal(out, inductor_conv.attention(q, k, v, mask, 0.0, False, scale=0.3, enable_gqa=True))
    capped = inductor_conv.softcapped_attention(query=q, key=k, value=v, softcap=2.0, attn_mask=mask, scale=0.3,
                                                enable_gqa=True)
    assert torch.equal(capped, inductor_conv.softcapped_attention(q, k, v, 2.0, mask, scale=0.3, enable_gqa=True))
    with pytest.raises(TypeError):  # keyword-only, as in SDPA's schema
        inductor_conv.attention(q, k, v, None, 0.0, False, 0.3)


# (B, Hq, Hkv, Sq, Sk): each dimension zero alone, and zero query heads against two KV heads (GQA).
EMPTY = {"batch": (0, 2, 2, 5, 7), "heads": (1, 0, 0, 5, 7), "query_heads_gqa": (1, 0, 2, 5, 7),
         "queries": (1, 2, 2, 0, 7), "keys": (1, 2, 2, 5, 0)}


@pytest.mark.parametrize("how", ["eager", "fallback", "compiled"])
@pytest.mark.parametrize("dims", list(EMPTY))
def test_empty_dims_give_sdpas_result(dims, how):
    """Note [empty attention] in ops/attention.py: SDPA's output (empty; zeros for zero keys) and gradients (zeros,
    empty where the input is), with causal masking and dropout, and with a learned mask. float32 eagerly is the
    public function's kernel path (interpreter), float64 the torch fallback; compiled, the custom op in a graph.
    The mask's gradient is empty here (B·H·Sq·Sk = 0): ours is that empty tensor, SDPA's shortcut leaves the mask
    out of its graph (None)."""
    B, Hq, Hkv, Sq, Sk = EMPTY[dims]
    if Hkv == 0 and _compat.TORCH_VERSION < (2, 13):
        pytest.skip("torch 2.11's SDPA, the reference here, divides by the zero KV heads (SIGFPE ends the process)")
    dtype = torch.float64 if how == "fallback" else torch.float32
    torch._dynamo.reset()  # each case compiles the lambda below afresh: stay under Dynamo's recompile limit
    q, k, v = _qkv(B=B, Hq=Hq, Hkv=Hkv, Sq=Sq, Sk=Sk, dtype=dtype, requires_grad=True)
    bias = torch.randn(B, Hq, Sq, Sk, dtype=dtype, requires_grad=True)
    for kw in (dict(is_causal=True, dropout_p=0.3), dict(attn_mask=bias)):
        fn = lambda q, k, v: inductor_conv.attention(q, k, v, enable_gqa=True, **kw)  # noqa: E731
        out = torch.compile(fn, backend="inductor", fullgraph=True)(q, k, v) if how == "compiled" else fn(q, k, v)
        want = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kw)
        assert out.shape == want.shape and out.dtype == dtype
        assert torch.equal(out, want), (out, want)
        leaves = (q, k, v, bias) if "attn_mask" in kw else (q, k, v)
        dout = torch.randn_like(out)
        grads = torch.autograd.grad(out, leaves, dout, allow_unused=True)
        for g, w in zip(grads, torch.autograd.grad(want, leaves, dout, allow_unused=True)):
            w = torch.zeros_like(bias) if w is None else w  # the mask's (docstring)
            assert g.shape == w.shape and torch.equal(g, w)
    if dims == "keys":  # the one case with elements: SDPA's zeros, not NaN (softmax over no key is an empty sum)
        assert out.numel() > 0 and not out.isnan().any()


def test_compiles_fullgraph_without_break():
    torch._dynamo.reset()
    q, k, v = _qkv(Hq=4, Hkv=2, requires_grad=True)

    def f(q, k, v):
        return inductor_conv.attention(q, k, v, is_causal=True, enable_gqa=True, scale=1 / math.sqrt(16))

    out = torch.compile(f, fullgraph=True, backend="inductor")(q, k, v)
    out.sum().backward()
    # against float64 SDPA, not the eager op (which runs the same kernels as the compiled fallback)
    ref, leaves = _sdpa64(q, k, v, is_causal=True, scale=1 / math.sqrt(16))
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    ref.sum().backward()
    for ours, leaf in zip((q.grad, k.grad, v.grad), leaves):
        torch.testing.assert_close(ours.double(), leaf.grad, **FP32_TOL)


# Note [eager attention under autocast]: the public functions cast their inputs as autocast casts SDPA's. Against
# the same call made with the inputs cast by hand (outside autocast): the same kernels on the same bf16 values, so
# the outputs and the float32 leaves' gradients (the casts' backward) are equal bit for bit; without the cast the
# output would be float32, computed in float32.
AUTOCAST_CALLS = {
    "attention, float mask": lambda q, k, v, m, s: inductor_conv.attention(q, k, v, m, 0.1, enable_gqa=True),
    "attention, causal": lambda q, k, v, m, s: inductor_conv.attention(q, k, v, is_causal=True, enable_gqa=True),
    "softcapped, float mask": lambda q, k, v, m, s: inductor_conv.softcapped_attention(q, k, v, 7.0, m,
                                                                                      enable_gqa=True),
    "sinks, float mask": lambda q, k, v, m, s: inductor_conv.attention_with_sinks(q, k, v, s, m, enable_gqa=True),
}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(AUTOCAST_CALLS))
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_autocast_casts_like_sdpa(device, name, compiled):
    call = AUTOCAST_CALLS[name]
    if compiled:
        call = compiled_fullgraph(call)
    q, k, v = (t.to(device) for t in _qkv(Sq=24, Sk=24, D=32))
    mask = torch.randn(24, 24, device=device)
    sinks = torch.randn(4, device=device)
    leaves = [t.requires_grad_(True) for t in (q, k, v, mask)]
    with torch.autocast(device, dtype=torch.bfloat16):
        torch.manual_seed(0)
        out = call(q, k, v, mask, sinks)
        sdpa = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), mask)
    assert out.dtype == sdpa.dtype == torch.bfloat16
    dout = torch.randn_like(out)
    grads = torch.autograd.grad(out, leaves, dout, allow_unused=True)

    by_hand = [t.detach().bfloat16().requires_grad_(True) for t in leaves]
    torch.manual_seed(0)
    ref = call(*by_hand, sinks)
    assert torch.equal(out, ref)
    ref_grads = torch.autograd.grad(ref, by_hand, dout, allow_unused=True)
    assert grads[0] is not None and (grads[3] is None) == (name == "attention, causal")
    for name_, got, want in zip(("query", "key", "value", "attn_mask"), grads, ref_grads):
        if got is None:
            continue
        assert got.dtype == torch.float32, name_
        if name_ == "attn_mask" and compiled and device == "cuda":
            # the graph sums dS into the float32 mask's gradient without rounding it to bf16 first (Inductor fuses
            # the cast's backward), where the bf16 leaf's gradient is rounded: equal to bf16's rounding
            torch.testing.assert_close(got, want.float(), rtol=2**-7, atol=1e-4, msg=name_)
        else:
            assert torch.equal(got, want.float()), name_


def test_autocast_leaves_float64_alone():
    """As SDPA: float64 arguments are not autocast's to cast; the call runs in float64."""
    q, k, v = (t.double() for t in _qkv())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = inductor_conv.attention(q, k, v, enable_gqa=True)
    assert out.dtype == torch.float64
    assert torch.equal(out, inductor_conv.attention(q, k, v, enable_gqa=True))
    q, k, v = _qkv()  # and outside autocast nothing is cast
    assert inductor_conv.attention(q, k, v, enable_gqa=True).dtype == torch.float32
