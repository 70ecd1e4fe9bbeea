"""Requirements of issues 2 and 3 that the other test files do not pin down (from a specification audit).

Public API: the exact signatures, and the error messages that name the argument for each rejected input not covered
elsewhere. The attention op against float64 SDPA at the issue's listed edges: GQA ratio 8, length 129, head dim 256,
fp16 storage, and dropout replay checked the issue's way (q = k = 0 makes P uniform, so the output reveals the keep
mask, and dV must be that mask times dO). The attention pattern pass on spellings and shapes no other test
compiles: repeat_kv with ratios 4 and 8, cross-attention (Sq != Sk) with a permuted output, T5's
``softmax(s.float()).type_as(s)`` in bf16. (Weights with another consumer left alone: test_patterns_attention's
LEFT_ALONE.)

Everything runs on CPU: op tests through the Triton interpreter (tests/conftest.py), compiled tests with our pass
on CPU graphs (tests/helpers.compile_and_run: caches off, counters cleared).
"""
from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from helpers import compile_and_run, ops_in
from test_patterns_attention import _repeat_kv, op_arg_shapes

import inductor_conv
from inductor_conv._compat import dynamo_counters

# fp32 kernels vs float64: scores and sums over <= 129 keys of O(1) terms in fp32 (observed <= 2e-6); 2e-4 relative
# with a 2e-5 floor still fails on any wrong term, scale or mask entry (>= 1e-3 here). Same as test_ops_attention.
FP32_TOL = dict(rtol=2e-4, atol=2e-5)
# Compiled fp32 vs float64 eager at S <= 11, D = 16: rounding ~1e-6 (test_patterns_attention's TOL).
PATTERN_TOL = dict(atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# Public API: exact signatures (other code and ported Dao / SDPA call sites depend on them)
# ---------------------------------------------------------------------------------------------------------------
def _params(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


P, K, E = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.empty


def test_attention_signature_is_sdpa_s():
    assert _params(inductor_conv.attention) == [
        ("query", P, E), ("key", P, E), ("value", P, E), ("attn_mask", P, None), ("dropout_p", P, 0.0),
        ("is_causal", P, False), ("scale", K, None), ("enable_gqa", K, False)]


def test_causal_conv1d_signature_is_dao_s():
    assert _params(inductor_conv.causal_conv1d) == [
        ("x", P, E), ("weight", P, E), ("bias", P, None), ("seq_idx", P, None), ("initial_states", P, None),
        ("return_final_states", P, False), ("final_states_out", P, None), ("activation", P, None)]


def test_enable_disable_counters_signatures():
    assert _params(inductor_conv.enable) == [("device_types", P, ("cuda",))]
    assert _params(inductor_conv.enabled) == [("device_types", P, ("cuda",))]
    assert _params(inductor_conv.disable) == []
    assert _params(inductor_conv.reset_counters) == []
    assert set(inductor_conv.counters()) == {"causal_conv1d", "attention"}


# ---------------------------------------------------------------------------------------------------------------
# Errors that name the argument (the cases test_ops_*.py do not list). meta tensors stand in for another device.
# ---------------------------------------------------------------------------------------------------------------
def _q(*shape):
    return torch.randn(*shape) if shape else torch.randn(1, 2, 8, 16)


@pytest.mark.parametrize(
    "kwargs, exc, needle",
    [
        (dict(scale=float("inf")), TypeError, "scale must be a finite"),
        (dict(scale=float("nan")), TypeError, "scale must be a finite"),
        (dict(key=_q().to("meta")), ValueError, "share a device"),
        (dict(attn_mask=torch.ones(8, 8, device="meta")), ValueError, "attn_mask is on meta"),
        (dict(query=_q().tolist()), TypeError, "query must be a Tensor"),
        (dict(query=_q(1, 3, 8, 16), enable_gqa=True), ValueError, r"query's heads \(3\) must be a multiple"),
        (dict(value=_q(1, 2, 8, 32)), ValueError, "head dim"),
        (dict(value=_q(1, 2, 9, 16)), ValueError, "key and value must agree"),
        (dict(key=_q(2, 2, 8, 16), value=_q(2, 2, 8, 16)), ValueError, "key and value must have batch size"),
        (dict(dropout_p=-0.1), ValueError, "dropout_p"),
        (dict(dropout_p="0.1"), TypeError, "dropout_p must be a float, got str"),
        (dict(dropout_p=None), TypeError, "dropout_p must be a float, got NoneType"),
        (dict(query=_q().long(), key=_q().long(), value=_q().long()), TypeError, "query must be float32"),
    ],
)
def test_attention_errors_name_the_argument(kwargs, exc, needle):
    args = dict(query=_q(), key=_q(), value=_q())
    args.update(kwargs)
    with pytest.raises(exc, match=needle):
        inductor_conv.attention(**args)


@pytest.mark.parametrize(
    "kwargs, exc, needle",
    [
        (dict(weight=torch.ones(3, 3, dtype=torch.int64)), TypeError, "weight must be a floating-point"),
        (dict(bias=torch.ones(3, dtype=torch.int64)), TypeError, "bias must be a floating-point"),
        (dict(initial_states=torch.ones(2, 3, 2, dtype=torch.int64)), TypeError, "initial_states must be a floating"),
        (dict(weight=torch.randn(3, 3, device="meta")), ValueError, "weight is on meta but x is on cpu"),
        (dict(bias=torch.randn(3, device="meta")), ValueError, "bias is on meta"),
        (dict(initial_states=torch.randn(2, 3, 2, device="meta")), ValueError, "initial_states is on meta"),
        (dict(seq_idx=torch.zeros(2, 4, dtype=torch.int32, device="meta")), ValueError, "seq_idx is on meta"),
        (dict(x=torch.randn(2, 3, 4).tolist()), TypeError, "x must be a Tensor"),
        (dict(weight=torch.randn(3, 3).tolist()), TypeError, "weight must be a Tensor"),
        (dict(bias=torch.randn(3).tolist()), TypeError, "bias must be a Tensor or None, got list"),
        (dict(activation=["silu"]), TypeError, "activation must be None, 'silu' or 'swish', got a list"),
    ],
)
def test_causal_conv1d_errors_name_the_argument(kwargs, exc, needle):
    args = dict(x=torch.randn(2, 3, 4), weight=torch.randn(3, 3), bias=None)
    args.update(kwargs)
    x, weight, bias = args.pop("x"), args.pop("weight"), args.pop("bias")
    with pytest.raises(exc, match=needle):
        inductor_conv.causal_conv1d(x, weight, bias, **args)


def test_causal_conv1d_fp16_input_fp32_weights():
    """Dao's mixed dtypes with fp16 (bf16 is test_ops_causal_conv1d's): output in x's dtype. One fp16 rounding of
    O(1) outputs (2^-11 = 4.9e-4) with a 4x margin."""
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 5, 16).half(), torch.randn(5, 4), torch.randn(5)
    y = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    assert y.dtype == torch.float16
    ref = F.silu(F.conv1d(F.pad(x.double(), (3, 0)), w.double()[:, None], b.double(), groups=5))
    torch.testing.assert_close(y.double(), ref, rtol=2e-3, atol=2e-3)


# ---------------------------------------------------------------------------------------------------------------
# The attention op at the listed edges, against float64 SDPA, outputs and every gradient
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
def test_gqa_ratio_8(causal):
    torch.manual_seed(1)
    _check_against_sdpa(1, 8, 1, 9, 11, 16, causal=causal)


@pytest.mark.parametrize("Sq, Sk, causal", [(129, 129, True), (129, 17, False), (17, 129, True)])
def test_length_129(Sq, Sk, causal):
    """129 = one past a power of two: a ragged last tile on the query and on the key axis."""
    torch.manual_seed(2)
    _check_against_sdpa(1, 2, 1, Sq, Sk, 16, causal=causal)


@pytest.mark.parametrize("D", [80, 256])
def test_head_dims_up_to_256(D):
    torch.manual_seed(3)
    _check_against_sdpa(1, 2, 1, 5, 7, D)


def test_fp16_storage():
    """fp16 q/k/v (the interpreter's tl.dot on fp16 is the known trap). One fp16 rounding of O and of the gradients
    (2^-11 relative) on top of fp32 math; 2e-3 is a 4x margin."""
    torch.manual_seed(4)
    _check_against_sdpa(1, 4, 2, 17, 19, 16, causal=True, dtype=torch.float16, tol=dict(rtol=2e-3, atol=2e-3))


def test_dropout_q_k_zero_reveals_the_mask_and_dv_uses_it():
    """Issue 3's check: q = k = 0 makes P uniform (1/Sk), v = I (Sk = D) makes out[i, j] = keep_ij / ((1 - p) Sk),
    so the output *is* the forward's dropped P; the backward must give dV = Pᵀ dO with that same P (a backward that
    drew another mask, or none, fails). q = k = 0 is the point of the check (not a lazy input); dO is random."""
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


# ---------------------------------------------------------------------------------------------------------------
# The attention pattern pass on spellings and shapes no other test compiles
# ---------------------------------------------------------------------------------------------------------------
def _llama(q, k, v, mask):
    n_rep = q.shape[1] // k.shape[1]
    k, v = _repeat_kv(k, n_rep), _repeat_kv(v, n_rep)
    w = torch.matmul(q, k.transpose(2, 3)) * 0.25 + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def _compare_training(fn, inputs, n_grad, **compile_kw):
    """Compile fn(*inputs) with the first n_grad inputs needing grad; compare output and those grads with float64
    eager. Returns (counters, graph texts)."""
    leaves = [t.clone().requires_grad_(i < n_grad) for i, t in enumerate(inputs)]
    out, counts, graphs = compile_and_run(fn, *leaves, **compile_kw)
    leaves64 = [t.double().requires_grad_(i < n_grad) for i, t in enumerate(inputs)]
    ref = fn(*leaves64)
    torch.testing.assert_close(out.double(), ref, **PATTERN_TOL)
    dout = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad(out, leaves[:n_grad], dout),
                         torch.autograd.grad(ref, leaves64[:n_grad], dout.double())):
        torch.testing.assert_close(got.double(), want, **PATTERN_TOL)
    return counts, graphs


@pytest.mark.parametrize("ratio", [4, 8])
def test_repeat_kv_ratios_become_native_gqa(ratio):
    """repeat_kv with G = 4 and 8 (test_patterns_attention covers G = 1, 2): one rewrite, the op gets the
    unexpanded K/V, outputs and gradients match, and the count is mirrored in torch's dynamo counters."""
    torch.manual_seed(6)
    Hq, Hkv, S, D = 8, 8 // ratio, 8, 16
    inputs = [torch.randn(1, Hq, S, D), torch.randn(1, Hkv, S, D), torch.randn(1, Hkv, S, D), torch.randn(1, 1, S, 12)]
    counts, graphs = _compare_training(_llama, inputs, n_grad=3)
    text = "".join(graphs)
    assert counts["attention"] == 1 and ops_in(text) == ["attention_fwd", "attention_bwd"], text
    assert op_arg_shapes(text)[1:] == [f"1, {Hkv}, {S}, {D}"] * 2, text
    assert dynamo_counters["inductor_conv"]["attention"] == 1


def _cross(q, k, v, mask):  # encoder-decoder attention: Sq != Sk, padding mask (B, 1, 1, Sk), permuted output
    s = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + mask, dim=-1)
    return (s @ v).permute(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], -1)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_cross_attention_unequal_lengths(dynamic, monkeypatch):
    if dynamic:  # the op's torch fallback keeps it fast (as test_patterns_attention's dynamic cases)
        monkeypatch.setenv("TRITON_INTERPRET", "0")
    torch.manual_seed(7)
    B, H, Sq, Sk, D = 3, 2, 5, 11, 16  # B != H: equal sizes would share one symbol under dynamic=True
    inputs = [torch.randn(B, H, Sq, D), torch.randn(B, H, Sk, D), torch.randn(B, H, Sk, D), torch.randn(B, 1, 1, Sk)]
    counts, graphs = _compare_training(_cross, inputs, n_grad=3, dynamic=dynamic)
    assert counts["attention"] == 1, graphs


def _t5_spelling(q, k, v, bias):  # HF T5: no scale, position bias, fp32 softmax cast back with type_as
    scores = torch.matmul(q, k.transpose(3, 2)) + bias
    return torch.matmul(F.softmax(scores.float(), dim=-1).type_as(scores), v)


def test_t5_float_type_as_softmax_in_bf16():
    """In fp32 ``.float()`` / ``.type_as`` are no-ops; in bf16 they are real converts the pattern must take.
    Compared with float64 eager: bf16 inputs, a bf16 output rounding and bf16 scores in eager (2^-8 relative on
    |S| ~ 4 shifts P by ~2e-2 at most), so 3e-2 (test_patterns_attention's bf16 tolerance)."""
    torch.manual_seed(8)
    q, k, v = (torch.randn(1, 2, 8, 16, dtype=torch.bfloat16) for _ in range(3))
    bias = torch.randn(1, 2, 8, 8, dtype=torch.bfloat16)
    with torch.no_grad():
        out, counts, graphs = compile_and_run(_t5_spelling, q, k, v, bias)
    assert counts["attention"] == 1, graphs
    ref = _t5_spelling(*(t.double() for t in (q, k, v, bias)))
    torch.testing.assert_close(out.double(), ref, atol=3e-2, rtol=3e-2)


# ---------------------------------------------------------------------------------------------------------------
# The public ops inside torch.compile(fullgraph=True), with the optional inputs no other compiled test passes
# ---------------------------------------------------------------------------------------------------------------
def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend="inductor")


def test_compiled_causal_conv1d_with_seq_idx_and_with_initial_states():
    """Packed sequences and carried-in states through a compiled graph: output, final states and every gradient
    against the float64 reference (fp32 kernels through the interpreter)."""
    from inductor_conv.reference.conv import causal_conv1d_ref

    torch.manual_seed(21)
    B, C, L, K = 2, 5, 13, 4
    x = torch.randn(B, L, C).transpose(1, 2).requires_grad_()  # the channel-last view
    w, b = torch.randn(C, K, requires_grad=True), torch.randn(C, requires_grad=True)
    seq_idx = torch.tensor([[0] * 5 + [1] * 8, [0] * 9 + [2] * 4], dtype=torch.int32)
    init = torch.randn(B, C, K - 1, requires_grad=True)
    g = torch.randn(B, C, L)

    y = _compiled(lambda x, w, b, s: inductor_conv.causal_conv1d(x, w, b, activation="silu", seq_idx=s))(
        x, w, b, seq_idx)
    leaves = [t.detach().double().requires_grad_() for t in (x, w, b)]
    ref = causal_conv1d_ref(*leaves, seq_idx=seq_idx, activation="silu")
    torch.testing.assert_close(y.double(), ref, **FP32_TOL)
    for got, want in zip(torch.autograd.grad(y, (x, w, b), g), torch.autograd.grad(ref, leaves, g.double())):
        torch.testing.assert_close(got.double(), want, **FP32_TOL)

    def with_states(x, w, b, init):
        return inductor_conv.causal_conv1d(x, w, b, initial_states=init, return_final_states=True)

    y, final = _compiled(with_states)(x, w, b, init)
    leaves = [t.detach().double().requires_grad_() for t in (x, w, b, init)]
    ref = causal_conv1d_ref(*leaves[:3], initial_states=leaves[3])
    torch.testing.assert_close(y.double(), ref, **FP32_TOL)
    torch.testing.assert_close(final.double(), leaves[0][..., -(K - 1):].detach(), **FP32_TOL)
    got = torch.autograd.grad(y, (x, w, b, init), g)
    for got_t, want in zip(got, torch.autograd.grad(ref, leaves, g.double())):
        torch.testing.assert_close(got_t.double(), want, **FP32_TOL)


def test_compiled_attention_dropout_reproduces_under_manual_seed_and_matches_eager():
    """Issue 3: the seed comes from torch's generator, so torch.manual_seed reproduces a compiled step too."""
    torch.manual_seed(22)
    q, k, v = (torch.randn(1, 2, 12, 16) for _ in range(3))
    f = _compiled(lambda q, k, v: inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True))
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
        f = _compiled(lambda q, k, v: inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True))
        torch.manual_seed(7)
        a = f(q, k, v)
    torch.manual_seed(7)
    eager = inductor_conv.attention(q, k, v, dropout_p=0.3, is_causal=True)
    torch.testing.assert_close(a, eager, rtol=0, atol=1e-6)


def test_compiled_attention_learned_mask_gets_its_gradient():
    """A float mask that requires grad (a learned position bias), broadcast over the batch: its gradient, summed
    over the broadcast dim, through a compiled graph against float64 autograd."""
    from inductor_conv.reference.attention import attention_ref

    torch.manual_seed(23)
    q, k, v = (torch.randn(2, 2, 9, 16, requires_grad=True) for _ in range(3))
    bias = torch.randn(1, 2, 9, 9, requires_grad=True)
    out = _compiled(lambda q, k, v, m: inductor_conv.attention(q, k, v, attn_mask=m))(q, k, v, bias)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v, bias)]
    ref = attention_ref(*leaves[:3], attn_mask=leaves[3])
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    g = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad(out, (q, k, v, bias), g),
                         torch.autograd.grad(ref, leaves, g.double())):
        torch.testing.assert_close(got.double(), want, **FP32_TOL)
