"""Flash-attention kernels (kernels/attention.py) against the float64 reference.

On CPU the kernels run in the Triton interpreter (tests/conftest.py), with fp32 dots (exact IEEE products summed in
fp32), so fp32 inputs are compared at fp32 accuracy.  With CUDA the same tests run compiled on the GPU (fp32 dots stay
IEEE there; bf16 dots round P to bf16, inside the bf16 test's tolerance).  Shapes are tiny and tiles small (the interpreter default,
inductor_conv/heuristics/attention.py) so that causal bands, ragged ends and several tiles per row are all exercised.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import rows_apart

import inductor_conv
from inductor_conv.kernels.attention import attention_bwd, attention_fwd
from inductor_conv.ops.attention import _torch_dropout_keep
from inductor_conv.reference.attention import attention_ref, lse_ref
from inductor_conv.reference.attention_dropout import dropout_keep_mask

# fp32 kernels against float64: scores and sums over <= 64 terms in fp32 with O(1) inputs, so errors are a few
# hundred ulps of 1 at most; 2e-5 leaves room while still catching any wrong term (>= 1e-3 here).
FP32_TOL = dict(atol=2e-5, rtol=2e-5)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

CASES = {  # name: (B, Hq, Hkv, Sq, Sk, D)
    "len1": (1, 2, 1, 1, 1, 16),
    "odd17_gqa2_d24": (2, 4, 2, 17, 17, 24),
    "sq37_sk29_gqa4": (1, 4, 1, 37, 29, 24),
    "sq9_sk40_d40": (1, 2, 2, 9, 40, 40),
    "even_sq64_sk96_gqa2": (1, 4, 2, 64, 96, 24),  # lengths multiples of every tile: EVEN (Note [even lengths])
}


def _inputs(B, Hq, Hkv, Sq, Sk, D, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = ((B, Hq, Sq, D), (B, Hkv, Sk, D), (B, Hkv, Sk, D))
    return [torch.randn(*shape, generator=g).to(device=DEVICE, dtype=dtype) for shape in shapes]


def _randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(DEVICE)


def _seed(value):
    return torch.tensor([value], dtype=torch.int64, device=DEVICE)


def _ours(q, k, v, mask=None, causal=False, p=0.0, seed=None, scale=None, mask_grad=False, fwd_cfg=None,
          bwd_cfg=None, do=None, softcap=0.0):
    out, lse = attention_fwd(q, k, v, mask, p, causal, scale, seed, config=fwd_cfg, softcap=softcap)
    do = torch.randn_like(out) if do is None else do
    grads = attention_bwd(do, q, k, v, mask, out, lse, p, causal, scale, seed, mask_grad=mask_grad, config=bwd_cfg,
                          softcap=softcap)
    return out, lse, do, grads


def _reference(q, k, v, do, mask=None, causal=False, keep=None, p=0.0, scale=None, mask_grad=False, softcap=0.0):
    """float64 output and gradients (dq, dk, dv, dmask or None) by autograd through attention_ref."""
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    m = mask
    if mask_grad:
        m = mask.detach().double().requires_grad_()
        leaves.append(m)
    out = attention_ref(*leaves[:3], attn_mask=m, dropout_mask=keep, dropout_p=p, is_causal=causal, scale=scale,
                        softcap=softcap)
    grads = torch.autograd.grad(out, leaves, do.double())
    return out.detach(), list(grads) + ([] if mask_grad else [None])


def _assert_close(actual, expected, atol, rtol, name):
    assert torch.isfinite(actual).all(), f"{name}: non-finite values"
    torch.testing.assert_close(actual.double(), expected, atol=atol, rtol=rtol, msg=lambda m: f"{name}: {m}")


def _check(q, k, v, mask=None, causal=False, mask_grad=False, tol=FP32_TOL, **kw):
    out, lse, do, grads = _ours(q, k, v, mask, causal, mask_grad=mask_grad, **kw)
    ref_out, ref_grads = _reference(q, k, v, do, mask, causal, mask_grad=mask_grad, scale=kw.get("scale"),
                                    softcap=kw.get("softcap", 0.0))
    _assert_close(out, ref_out, name="out", **tol)
    for name, g, r in zip(("dq", "dk", "dv", "dmask"), grads, ref_grads):
        if r is not None:
            _assert_close(g, r, name=name, **tol)
    return out, lse, grads


# ---------------------------------------------------------------- shapes, GQA, causal
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_fp64(case, causal):
    q, k, v = _inputs(*CASES[case])
    out, lse, _ = _check(q, k, v, causal=causal)
    _assert_close(lse, lse_ref(q, k, is_causal=causal), name="lse", **FP32_TOL)


def test_any_strides_and_output_layout():
    """(B, S, H, D) storage viewed as (B, H, S, D), K broadcast over batch (stride 0), V a column slice."""
    B, H, S, D = 2, 2, 19, 24
    q = _randn(B, S, H, D, seed=1).transpose(1, 2)
    k = _randn(1, H, S, D, seed=2).expand(B, H, S, D)
    v = _randn(B, H, S, 2 * D, seed=3)[..., ::2]
    out, _, grads = _check(q, k, v, causal=True, scale=0.3)
    assert out.stride() == q.stride()
    assert grads[0].stride() == q.stride()


def test_bf16_storage():
    q, k, v = _inputs(1, 4, 2, 21, 33, 32, dtype=torch.bfloat16)
    # bf16 inputs/outputs: one rounding of O and of dq/dk/dv (2^-8 relative) on top of fp32 math.
    _check(q, k, v, causal=True, tol=dict(atol=2e-2, rtol=2e-2))


# ---------------------------------------------------------------- masks
def _bool_mask(B, H, Sq, Sk, gen):
    m = torch.rand(B, H, Sq, Sk, generator=gen) > 0.3
    m[..., 0, :] = False  # a row with no allowed key
    return m.to(DEVICE)


@pytest.mark.parametrize("causal", [False, True])
def test_bool_mask_and_empty_rows(causal):
    B, Hq, Hkv, Sq, Sk, D = 2, 4, 2, 13, 22, 16
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    mask = _bool_mask(B, 1, Sq, Sk, torch.Generator().manual_seed(1))
    out, lse, (dq, _, _, _) = _check(q, k, v, mask, causal)
    assert torch.equal(out[:, :, 0], torch.zeros_like(out[:, :, 0]))  # declared extension: zeros, not NaN
    assert torch.isneginf(lse[:, :, 0]).all()
    assert torch.equal(dq[:, :, 0], torch.zeros_like(dq[:, :, 0]))


@pytest.mark.parametrize("kind", ["bool", "additive"])
@pytest.mark.parametrize("lengths", [(13, 48), (32, 48), (32, 64)], ids=lambda t: f"sq{t[0]}_sk{t[1]}")
def test_mask_of_whole_key_tiles_loads_without_key_checks(kind, lengths):
    """A whole key tile's mask loads without a per-key bound check (load_mask_tile's CHECK_KEYS; Note [even
    lengths]); the ragged ones keep it.  With the interpreter's tiles (forward 32 x 16, backward 16 x 32): Sk 48
    makes the forward EVEN and leaves a ragged half block to the dK/dV programs, Sq 13 ragged query rows, (32, 64)
    everything whole.  Against float64: the variants that drop the check and those that keep it give the reference
    (a variant taking ragged lengths for whole ones would skip their tail)."""
    Sq, Sk = lengths
    B, Hq, Hkv, D = 2, 4, 2, 16
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D, seed=2)
    allowed = _bool_mask(B, 1, Sq, Sk, torch.Generator().manual_seed(4))
    mask = allowed if kind == "bool" else torch.where(allowed, _randn(B, 1, Sq, Sk, seed=5), -math.inf)
    _check(q, k, v, mask)


@pytest.mark.parametrize("shape", ["B11Sk", "1HSqSk", "SqSk"])
def test_additive_mask_broadcast_and_grad(shape):
    B, Hq, Hkv, Sq, Sk, D = 2, 2, 1, 11, 26, 24
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    mshape = {"B11Sk": (B, 1, 1, Sk), "1HSqSk": (1, Hq, Sq, Sk), "SqSk": (Sq, Sk)}[shape]
    bias = _randn(*mshape, seed=2)
    _, _, grads = _check(q, k, v, bias, causal=True, mask_grad=True)
    assert grads[3].shape == bias.shape and grads[3].dtype == bias.dtype


def test_finite_minus_infinity_rows():
    """finfo.min behaves like eager: a row all finfo.min is uniform (and its gradients flow), finfo.min entries lose
    against ordinary ones; a row all -inf gives zeros (extension)."""
    B, Hq, Hkv, Sq, Sk, D = 1, 2, 1, 6, 21, 16
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    fmin = torch.finfo(torch.float32).min
    mask = _randn(B, Hq, Sq, Sk, seed=3)
    mask[:, :, 0] = fmin
    mask[:, :, 1, ::2] = fmin
    mask[:, :, 2] = float("-inf")
    mask[:, :, 3, :5] = float("-inf")
    mask[:, :, 3, 5:] = fmin  # -inf and finfo.min mixed: uniform over the finfo.min keys
    mask[:, :, 4, 7] = -(2.0**24)  # at the floor threshold, beside ordinary keys
    out, lse, grads = _check(q, k, v, mask, mask_grad=True)
    torch.testing.assert_close(out[:, :, 0], v.mean(dim=2).expand(B, Hq, D), atol=1e-6, rtol=1e-6)
    assert torch.equal(out[:, :, 2], torch.zeros_like(out[:, :, 2])) and torch.isneginf(lse[:, :, 2]).all()
    assert torch.equal(grads[0][:, :, 2], torch.zeros_like(grads[0][:, :, 2]))


@pytest.mark.parametrize("form", ["spread", "offset"])
def test_large_scores(form):
    """|S| ~ 1e4.  fp32 rounds such scores to ~1e-3 absolute, so P carries ~1e-3 relative error (tolerances 3e-3).
    "spread": scores 1e4 apart, P is one-hot: no overflow / NaN; O, LSE, dV checked (dQ, dK vanish, their error
    is that rounding times |K| and is not meaningful).  "offset": every score ~1e4 with O(1) differences, P is spread
    out and every gradient is meaningful."""
    q, k, v = _inputs(1, 2, 1, 23, 30, 16)
    if form == "spread":
        q, k = q * 100.0, k * 100.0
    else:
        q[..., 0], k[..., 0] = 400.0, 100.0  # scale * q.k = 1e4 + O(1): the same 1e4 for every key of a row
    out, lse, do, grads = _ours(q, k, v, causal=True)
    ref_out, ref_grads = _reference(q, k, v, do, causal=True)
    assert lse.abs().max() > 3e3
    _assert_close(lse, lse_ref(q, k, is_causal=True), atol=0.0, rtol=1e-6, name="lse")
    _assert_close(out, ref_out, atol=3e-3, rtol=0.0, name="out")
    checked = ("dv",) if form == "spread" else ("dq", "dk", "dv")
    for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads):
        assert torch.isfinite(g).all()
        if name in checked:
            _assert_close(g, r, atol=3e-3 * r.abs().max().item(), rtol=0.0, name=name)


@pytest.mark.parametrize("mask_kind,causal", [(None, False), (None, True), ("bool", False), ("additive", False)])
def test_softcap_matches_fp64(mask_kind, causal):
    """Logit soft-capping (Note [soft-capping]): scores capped at 1.5 where q, k of std 2 give scaled scores of std
    ~3, so most scores sit on tanh's bend or its flat tails (a cap the kernels ignored, or applied after the mask,
    or without the (1 - t²) chain factor, is off by >= 1e-2 here).  The learned additive mask's gradient is dS
    before the cap's derivative.  GQA 4/2, odd lengths, a padded head dim."""
    q, k, v = _inputs(2, 4, 2, 37, 29, 24)
    q, k = q * 2.0, k * 2.0
    mask = None
    if mask_kind == "bool":
        mask = torch.rand(2, 1, 37, 29, generator=torch.Generator().manual_seed(3)).to(DEVICE) > 0.3
        mask[..., 0] = True  # no empty rows
    elif mask_kind == "additive":
        mask = _randn(1, 4, 1, 29, seed=3)
    out, _, _ = _check(q, k, v, mask, causal, mask_grad=mask_kind == "additive", softcap=1.5)
    uncapped = attention_ref(q, k, v, attn_mask=mask, is_causal=causal)
    assert (out.double() - uncapped).abs().max() > 0.1  # the cap changes the result a lot here


def test_softcap_large_scores_saturate():
    """|scale q.k| ~ 1e4 against a cap of 30: tanh saturates to exactly +-1 (no inf / inf), the capped scores are
    +-30 and everything stays finite and equal to the fp64 reference; the cap's derivative is 0 there."""
    q, k, v = _inputs(1, 2, 1, 23, 30, 16)
    q, k = q * 100.0, k * 100.0
    out, lse, do, grads = _ours(q, k, v, causal=True, softcap=30.0)
    ref_out, ref_grads = _reference(q, k, v, do, causal=True, softcap=30.0)
    assert lse.abs().max() <= 30.0 + math.log(30) + 1e-3  # capped scores bound the LSE
    _assert_close(out, ref_out, atol=1e-4, rtol=1e-4, name="out")
    for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads):
        _assert_close(g, r, atol=1e-4 * max(r.abs().max().item(), 1.0), rtol=0.0, name=name)


def test_row_shift_invariance_of_mask_grad():
    """softmax(S + c_i) = softmax(S), so each row of dS (= d mask) sums to 0."""
    q, k, v = _inputs(2, 2, 2, 15, 27, 24)
    bias = _randn(2, 2, 15, 27, seed=4)
    _, _, _, (_, _, _, dmask) = _ours(q, k, v, bias, causal=True, mask_grad=True)
    row_sum, row_abs = dmask.sum(-1), dmask.abs().sum(-1)
    assert (row_abs[..., 1:] > 1e-3).all()  # causal row 0 has one key: dS = 0 there
    # dS_ij = P_ij (dP_ij - Δ_i) carries fp32 rounding of dP and Δ (~1e-7 of |dP| ~ 1), summed over <= 27 keys
    assert (row_sum.abs() <= 1e-5 * row_abs + 2e-6).all()


class _Attention(torch.autograd.Function):
    """The launchers as one differentiable function, for gradcheck."""

    @staticmethod
    def forward(ctx, q, k, v, bias, causal, p, seed, softcap):
        out, lse = attention_fwd(q, k, v, bias, p, causal, None, seed, softcap=softcap)
        ctx.save_for_backward(q, k, v, bias, out, lse)
        ctx.causal, ctx.p, ctx.seed, ctx.softcap = causal, p, seed, softcap
        return out

    @staticmethod
    def backward(ctx, do):
        q, k, v, bias, out, lse = ctx.saved_tensors
        dq, dk, dv, dbias = attention_bwd(do, q, k, v, bias, out, lse, ctx.p, ctx.causal, None, ctx.seed,
                                          mask_grad=True, softcap=ctx.softcap)
        return dq, dk, dv, dbias, None, None, None, None


# softcap 0.7 bends scores of std ~1.  fp64 is a test-only dtype of the launchers (the ops run float64 in torch):
# on the GPU triton 3.6 fails an assertion compiling the fp64 dots of the dropout backward ("fp64 don't support
# largeK MMA", H200), so the dropout cases run in the interpreter only.
@pytest.mark.parametrize("p,softcap", [
    (0.0, 0.0),
    pytest.param(0.4, 0.0, marks=pytest.mark.skipif(DEVICE == "cuda", reason="triton: fp64 largeK MMA")),
    pytest.param(0.4, 0.7, marks=pytest.mark.skipif(DEVICE == "cuda", reason="triton: fp64 largeK MMA"))])
def test_gradcheck_fp64(p, softcap):
    """Finite differences in float64 (kernels accumulate in fp64; LSE and scale stay fp32, ~1e-7 relative, well
    inside gradcheck's atol=1e-5 / rtol=1e-3).  A fixed seed makes dropout a fixed function of the inputs."""
    q, k, v, bias = (_randn(*s, seed=i, dtype=torch.float64).requires_grad_()
                     for i, s in enumerate(((1, 2, 5, 6), (1, 1, 7, 6), (1, 1, 7, 6), (1, 2, 1, 7))))
    fn = lambda q, k, v, b: _Attention.apply(q, k, v, b, True, p, _seed(1234), softcap)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v, bias), fast_mode=True)


# ---------------------------------------------------------------- dropout
def _hash_from_note(seed, B, H, Sq, Sk):
    """attn_math's Note [dropout replay] spelled in numpy (uint64 masked to 32 bits): the 16 bits u(i, j) of x."""
    u, m32 = np.uint64, np.uint64(0xFFFFFFFF)

    def mix(x):  # M
        x = (x * u(0x7FEB352D)) & m32
        return ((x ^ (x >> u(15))) * u(0x846CA68B)) & m32

    def lowbias32(x):  # H
        x = mix(x ^ (x >> u(16)))
        return x ^ (x >> u(16))

    b, h, i, j = np.meshgrid(*(np.arange(n, dtype=np.uint64) for n in (B, H, Sq, Sk)), indexing="ij")
    s = seed % 2**64
    k = lowbias32(lowbias32(lowbias32(u((s >> 32) ^ 0x6A09E667)) ^ u(s & 0xFFFFFFFF)) ^ b)
    k_r = lowbias32(k ^ h)
    k_c = lowbias32(k_r ^ u(0xBB67AE85))
    g = (j >> u(4)) * u(8) + (j & u(7))  # keys j and j + 8 of each 16 share a word
    x = mix(mix(k_r ^ i) ^ k_c ^ ((g * u(0x9E3779B9)) & m32))
    return np.where(j & u(8), x >> u(16), x & u(0xFFFF))


@pytest.mark.parametrize("seed", [(7 << 32) + 11, 5, -3])
def test_dropout_mask_is_the_documented_hash_and_the_torch_fallbacks(seed):
    """The kernels' mask (dropout_keep evaluated by reference/attention_dropout.py, in the forward's and the
    backward's tile orientation) is the Note's formula and, bit for bit, the torch fallback's (ops/attention.py), also
    at the threshold ends 0 (keep all) and 2^16 (drop all)."""
    B, H, Sq, Sk = 2, 3, 21, 37
    u16 = _hash_from_note(seed, B, H, Sq, Sk)
    for p in (0.3, 0.5, 1e-6, 1.0 - 1e-7):
        keep = dropout_keep_mask(_seed(seed), B, H, Sq, Sk, p)
        np.testing.assert_array_equal(keep.cpu().numpy(), u16 >= min(round(p * 65536), 65536))
        assert torch.equal(keep, dropout_keep_mask(_seed(seed), B, H, Sq, Sk, p, block=(32, 16), keys_on_rows=True))
        assert torch.equal(keep.cpu(), _torch_dropout_keep(_seed(seed).cpu(), (B, H, Sq, Sk), p, "cpu"))
    assert keep.sum() == 0 and dropout_keep_mask(_seed(seed), B, H, Sq, Sk, 1e-6).all()


def test_dropout_mask_neighbours_are_uncorrelated():
    """Weak independence: Pearson r of the p = 1/2 keep bits between neighbouring keys (lags 1, 8, 16; lag 8 within
    an aligned 16 is the two halves of one 32-bit word), rows (lag 1), heads, batches and seeds.  Under independence r * sqrt(n) ~ N(0, 1); |r| * sqrt(n) < 5 fails by chance with
    probability ~6e-7 per pair (the seeds are fixed, so the outcome is too).  A key, row, head, batch or seed that did
    not enter the hash would give r = 1.  Uses the torch fallback, which is bit-identical (test above)."""
    B, H, S = 2, 4, 256
    keep = _torch_dropout_keep(_seed(77).cpu(), (B, H, S, S), 0.5, "cpu").double()
    other = _torch_dropout_keep(_seed(78).cpu(), (B, H, S, S), 0.5, "cpu").double()
    pairs = {
        "key+1": (keep[..., :-1], keep[..., 1:]), "key+8": (keep[..., :-8], keep[..., 8:]),
        "word halves": (keep.unflatten(-1, (-1, 2, 8))[..., 0, :], keep.unflatten(-1, (-1, 2, 8))[..., 1, :]),
        "key+16": (keep[..., :-16], keep[..., 16:]),
        "row+1": (keep[..., :-1, :], keep[..., 1:, :]), "diag": (keep[..., :-1, :-1], keep[..., 1:, 1:]),
        "head+1": (keep[:, :-1], keep[:, 1:]), "batch+1": (keep[0], keep[1]), "seed+1": (keep, other),
    }
    for name, (a, b) in pairs.items():
        r = torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1].item()
        assert abs(r) * math.sqrt(a.numel()) < 5.0, f"{name}: r = {r:.4f} over {a.numel()} pairs"


def test_dropout_keep_fraction_and_seeds():
    B, H, Sq, Sk, p = 2, 3, 40, 72, 0.25
    keep = dropout_keep_mask(_seed(5), B, H, Sq, Sk, p)
    n = keep.numel()
    assert abs(keep.sum().item() - n * (1 - p)) < 5 * math.sqrt(n * p * (1 - p))  # binomial, 5 sigma
    assert torch.equal(keep, dropout_keep_mask(_seed(5), B, H, Sq, Sk, p, block=(32, 16)))  # other tiles
    assert not torch.equal(keep, dropout_keep_mask(_seed(6), B, H, Sq, Sk, p))


def test_dropout_forward_reveals_mask_for_any_tiles():
    """q = k = 0 makes P uniform (1/Sk) and v = I makes out[i, j] = keep_ij / ((1-p) Sk)."""
    B, H, Sq, Sk, p = 1, 2, 20, 24, 0.5
    q, k = torch.zeros(B, H, Sq, Sk, device=DEVICE), torch.zeros(B, H, Sk, Sk, device=DEVICE)
    v = torch.eye(Sk, device=DEVICE).expand(B, H, Sk, Sk)
    expected = dropout_keep_mask(_seed(9), B, H, Sq, Sk, p)
    for cfg in (dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1),
                dict(BLOCK_M=64, BLOCK_N=32, num_warps=4, num_stages=1)):
        out, _ = attention_fwd(q, k, v, None, p, False, None, _seed(9), config=cfg)
        torch.testing.assert_close(out * (1 - p) * Sk, expected.float(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_dropout_forward_backward_use_the_same_mask(causal):
    B, Hq, Hkv, Sq, Sk, D, p = 1, 4, 2, 19, 27, 24, 0.3
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    keep = dropout_keep_mask(_seed(21), B, Hq, Sq, Sk, p)
    out, _, do, grads = _ours(q, k, v, causal=causal, p=p, seed=_seed(21),
                              fwd_cfg=dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1),
                              bwd_cfg=dict(BLOCK_M=16, BLOCK_N=64, num_warps=4, num_stages=1))
    ref_out, ref_grads = _reference(q, k, v, do, causal=causal, keep=keep, p=p)
    _assert_close(out, ref_out, name="out", **FP32_TOL)
    for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads):
        _assert_close(g, r, name=name, **FP32_TOL)


@pytest.mark.parametrize("Sq,Sk", [(75, 75), (64, 90), (90, 64)])
def test_causal_pairs_compute_the_same_rows(Sq, Sk):
    """The causal forward whose programs each run two row blocks (n - 1 - u, then u; the middle one alone for an odd
    count, Sq = 75 with 32-row blocks) writes every row, bit-identically to one block a program, and matches fp64."""
    B, Hq, Hkv, D, p = 2, 4, 2, 24, 0.3
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    mask = _randn(1, Hq, 1, Sk, seed=5)
    cfg = dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1)
    out, lse, do, _ = _ours(q, k, v, mask, causal=True, p=p, seed=_seed(4), fwd_cfg=cfg | dict(pair=True))
    single = attention_fwd(q, k, v, mask, p, True, None, _seed(4), config=cfg)
    assert torch.equal(out, single[0]) and torch.equal(lse, single[1])
    ref_out, _ = _reference(q, k, v, do, mask, causal=True, keep=dropout_keep_mask(_seed(4), B, Hq, Sq, Sk, p), p=p)
    _assert_close(out, ref_out, name="out", **FP32_TOL)


@pytest.mark.parametrize("causal,p,softcap,mask_kind", [(True, 0.3, 0.0, None), (False, 0.0, 5.0, "float"),
                                                      (True, 0.0, 0.0, "bool"), (False, 0.3, 0.0, None)])
def test_split_dkdv_programs_compute_the_same_gradients(causal, p, softcap, mask_kind):
    """Note [split dK/dV]: with dK and dV in programs of their own (AttnBwdTile.split) every gradient is bit-identical
    to the one-program backward (each accumulator sums the same products in the same order) and matches fp64, under
    GQA, ragged lengths, dropout, soft-capping and both mask kinds (the additive one with its gradient)."""
    B, Hq, Hkv, Sq, Sk, D = 2, 4, 2, 45, 37, 24
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D, seed=3)
    mask = {None: None, "bool": _randn(B, 1, Sq, Sk, seed=6) > -1.0, "float": _randn(1, Hq, Sq, Sk, seed=6)}[mask_kind]
    mask_grad = mask_kind == "float"
    seed = _seed(11) if p else None
    cfg = dict(BLOCK_M=16, BLOCK_N=32, num_warps=4, num_stages=1)
    out, lse, do, joint = _ours(q, k, v, mask, causal, p, seed, mask_grad=mask_grad, bwd_cfg=cfg, softcap=softcap)
    split = attention_bwd(do, q, k, v, mask, out, lse, p, causal, None, seed, mask_grad=mask_grad,
                          config=cfg | dict(split=True), softcap=softcap)
    for name, a, b in zip(("dq", "dk", "dv", "dmask"), split, joint):
        assert (a is None and b is None) or torch.equal(a, b), name
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p else None
    _, ref_grads = _reference(q, k, v, do, mask, causal, keep=keep, p=p, mask_grad=mask_grad, softcap=softcap)
    for name, g, r in zip(("dq", "dk", "dv", "dmask"), split, ref_grads):
        if r is not None:
            _assert_close(g, r, name=name, **FP32_TOL)


@pytest.mark.parametrize("split", [False, True])
def test_masked_first_switch_reaches_the_eager_backward(monkeypatch, split):
    """Note [masked tiles first]: config.attention_masked_first sets the eager causal backward's visiting order as it
    does the templates' (a non-causal backward has no masked band first); the gradients of either order match fp64
    under GQA, ragged lengths and dropout, one-program and split dK/dV."""
    from inductor_conv.kernels.attention import _plan_for

    B, Hq, Hkv, Sq, Sk, D = 2, 4, 2, 45, 37, 24
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D, seed=5)
    p, seed = 0.3, _seed(13)
    cfg = dict(BLOCK_M=16, BLOCK_N=32, num_warps=4, num_stages=1, split=split)
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p)
    for first in (True, False):
        monkeypatch.setattr(inductor_conv.config, "attention_masked_first", first)
        for causal in (True, False):
            plan = _plan_for("bwd", q, v, None, causal, p, 0.0, False, None)
            assert plan.constexprs["MASKED_FIRST"] == (first and causal), (first, causal)
        out, lse, do, grads = _ours(q, k, v, None, True, p, seed, bwd_cfg=cfg)
        _, ref_grads = _reference(q, k, v, do, None, True, keep=keep, p=p)
        for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads):
            _assert_close(g, r, name=f"{name} masked_first={first}", **FP32_TOL)


def test_dropout_same_seed_bit_identical():
    q, k, v = _inputs(1, 2, 1, 17, 23, 16)
    do = torch.ones_like(q)
    a = _ours(q, k, v, p=0.2, seed=_seed(3), do=do)
    b = _ours(q, k, v, p=0.2, seed=_seed(3), do=do)
    for x, y in zip([a[0], a[1], *a[3][:3]], [b[0], b[1], *b[3][:3]]):
        assert torch.equal(x, y)
    c, _ = attention_fwd(q, k, v, None, 0.2, False, None, _seed(4))
    assert not torch.equal(a[0], c)


@pytest.mark.parametrize("causal", [False, True])
def test_host_seed_is_written_for_the_backward(causal):
    """Note [host dropout seed]: a forward given the seed as a value (SEED_ARG) drops what a forward reading the same
    value from the seed tensor drops, bit for bit, writes the value into the tensor it is given, and the backward
    reading that tensor matches float64 with that mask."""
    from inductor_conv.kernels.attention import launch_bwd, launch_fwd

    B, Hq, Hkv, Sq, Sk, D, p = 2, 4, 2, 21, 37, 16, 0.3
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D, seed=8)
    value = (1 << 61) | 0x1234_5678_9ABC_DEF
    scale = D ** -0.5
    ref_out, _ = launch_fwd(q, k, v, None, p, causal, scale, _seed(value))
    seed = torch.full((1,), -1, dtype=torch.int64, device=DEVICE)
    out, lse = launch_fwd(q, k, v, None, p, causal, scale, seed, seed_value=value)
    assert seed.item() == value
    assert torch.equal(out, ref_out)
    do = _randn(*out.shape, seed=9)
    grads = launch_bwd(do, q, k, v, None, out, lse, p, causal, scale, seed, False)[:3]
    keep = dropout_keep_mask(_seed(value), B, Hq, Sq, Sk, p)
    ref_out, ref_grads = _reference(q, k, v, do, causal=causal, keep=keep, p=p)
    _assert_close(out, ref_out, name="out", **FP32_TOL)
    for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads):
        _assert_close(g, r, name=name, **FP32_TOL)


@pytest.mark.gpu
def test_backward_deterministic():
    """GPU only: the interpreter runs programs one after another, so there any reduction order is bit-identical."""
    q, k, v = _inputs(1, 8, 2, 25, 25, 16)
    bias = _randn(1, 1, 25, 25, seed=5)
    r1 = _ours(q, k, v, bias, causal=True, mask_grad=True, do=_randn(1, 8, 25, 16, seed=6))
    r2 = _ours(q, k, v, bias, causal=True, mask_grad=True, do=r1[2])
    for x, y in zip(r1[3], r2[3]):
        assert torch.equal(x, y)


# ---------------------------------------------------------------- errors
def test_errors_name_the_argument():
    q, k, v = _inputs(1, 3, 2, 4, 4, 16)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        attention_fwd(q, k, v, None, 0.0, False, None, None)
    q, k, v = _inputs(1, 2, 1, 4, 4, 16)
    with pytest.raises(ValueError, match="dropout_p"):
        attention_fwd(q, k, v, None, 1.0, False, None, _seed(0))
    with pytest.raises(ValueError, match="seed"):
        attention_fwd(q, k, v, None, 0.1, False, None, None)
    with pytest.raises(TypeError, match="attn_mask"):
        attention_fwd(q, k, v, torch.ones(4, 4, dtype=torch.int32, device=DEVICE), 0.0, False, None, None)
    with pytest.raises(ValueError, match="broadcastable"):
        attention_fwd(q, k, v, torch.ones(3, 4, device=DEVICE), 0.0, False, None, None)
    with pytest.raises(ValueError, match="scale"):
        attention_fwd(q, k, v, None, 0.0, False, -1.0, None)
    with pytest.raises(ValueError, match="softcap"):
        attention_fwd(q, k, v, None, 0.0, False, None, None, softcap=-1.0)
    with pytest.raises(ValueError, match="config"):
        attention_fwd(q, k, v, None, 0.0, False, None, None, config=dict(BLOCK_M=32, BLOCK_N=64, num_warps=4,
                                                                          num_stages=1))


def test_short_calls_plan_fitted_tiles_without_summaries():
    """Note [short sequences]: an eager call of at most SHORT_MASK_LENGTH queries and keys is one configuration of
    its own: the CUDA tables' tiles fitted to that length (the forward's 128 rows become 64, head dim 128's 128-key
    backward block 64) and no mask summaries (nothing to skip); a longer call keeps both.  Plans only: nothing
    launches."""
    from inductor_conv.kernels.attention import _Plan

    def plan(kind, head_dim, short):
        # kind, dtype, mask dtype, head dim, causal, p, softcap, mask grad, interpret, device, fast tanh, value head
        # dim, mask ranges, split head dim, short
        return _Plan(kind, torch.bfloat16, torch.bfloat16, head_dim, False, 0.0, False, False, False, "cuda", False,
                     head_dim, True, False, short)

    long_fwd, short_fwd = plan("fwd", 32, False), plan("fwd", 32, True)
    assert (long_fwd.block_m, long_fwd.constexprs["MASK_RANGES"]) == (128, True)
    assert (short_fwd.block_m, short_fwd.block_n, short_fwd.constexprs["MASK_RANGES"]) == (64, 64, False)
    long_bwd, short_bwd = plan("bwd", 128, False), plan("bwd", 128, True)
    assert (long_bwd.block_n, long_bwd.constexprs["MASK_RANGES"]) == (128, True)
    assert (short_bwd.block_n, short_bwd.constexprs["MASK_RANGES"]) == (64, False)
    assert short_bwd.block_n % short_bwd.block_m == 0


@pytest.mark.parametrize("how", ["eager", pytest.param("compiled", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("Sq", [20, 5], ids=["flash", "decode"])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_slices_spanning_2_to_the_31_elements(device, Sq, how):
    """q, k, v (and dO) whose rows are 2^31 / (S - 1) elements apart: the int32 row offsets would wrap and read
    outside the tensors (a segfault under the interpreter); WIDE makes them int64.  Forward and backward against
    float64 (the flash kernels); forward only with 5 queries (the decode kernels, which take no gradient).  On a
    GPU the eager call runs twice (the second from C++, Note [eager attention from C++]), and compiled: the
    templates, whose lowering proves WIDE from the layouts."""
    if how == "compiled" and device == "cpu":
        pytest.skip("the templates run on a GPU")
    views = rows_apart(Sq, 16, 4, torch.bfloat16, device)
    if views is None:
        pytest.skip("no room for a 4 GiB (untouched) allocation")
    q, k, v, do = views
    grad = Sq > 5
    leaves = [t.detach().requires_grad_(grad) for t in (q, k, v)]

    def call(q, k, v):
        return inductor_conv.attention(q, k, v, is_causal=grad)

    if how == "compiled":
        torch._dynamo.reset()
        call = torch.compile(call, fullgraph=True, backend="inductor")
    out = call(*leaves)
    ref = F.scaled_dot_product_attention(*(t.detach().double().requires_grad_(grad) for t in (q, k, v)),
                                         is_causal=grad)
    bf16 = dict(atol=2e-2, rtol=2e-2)  # bf16 output rounding (2^-8 relative) of values <= 3
    torch.testing.assert_close(out.double(), ref, **bf16)
    if grad:
        dq, dk, dv = torch.autograd.grad(out, leaves, do)
        ref_leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
        ref_grads = torch.autograd.grad(F.scaled_dot_product_attention(*ref_leaves, is_causal=True), ref_leaves,
                                        do.double())
        for name, got, want in zip(("dq", "dk", "dv"), (dq, dk, dv), ref_grads):
            torch.testing.assert_close(got.double(), want, **bf16, msg=lambda m: f"{name}: {m}")
    if device == "cuda" and how == "eager":
        assert torch.equal(call(*leaves), out)


def test_wide_offsets_threshold():
    """WIDE (Note [int64 offsets]) from the largest offset inside a slice, (S - 1)·stride_s + (D - 1)·stride_d: off
    up to 2^31 - 1, on from 2^31; batch and head strides do not count (their products are int64 anyway)."""
    from inductor_conv.kernels.attn_common import wide_offsets

    class Layout:
        def __init__(self, shape, stride):
            self.shape, self._stride = shape, stride

        def stride(self):
            return self._stride

    last = 2**31 - 1  # (S - 1) * stride_s + (D - 1) * 1 == last with S = 2, D = 128
    assert not wide_offsets(Layout((1, 1, 2, 128), (2**40, 2**40, last - 127, 1)), None)
    assert wide_offsets(None, Layout((1, 1, 2, 128), (0, 0, last - 126, 1)))
    assert wide_offsets(Layout((1, 1, 1, 2), (0, 0, 1, 2**31)))  # a head-dim stride alone
