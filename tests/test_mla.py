"""Attention whose values have another head dim than queries and keys (Note [value head dim] in
kernels/attn_math.py): DeepSeek's MLA (192 / 128), FlashAttention 3's hdim_qk != hdim_v.

The kernels (eager launchers) and the public op against the float64 reference, on the Triton interpreter (CPU) or
the GPU; the op's float64 torch path under gradcheck.  fp32 kernels: errors of a few hundred ulps of 1 at these sizes
(tests/test_kernels_attention.py's FP32_TOL), bf16 at its own rounding.
"""
import pytest
import torch

import inductor_conv
from inductor_conv.kernels.attention import attention_bwd, attention_fwd
from inductor_conv.heuristics.attention import AttnBwdTile
from inductor_conv.reference.attention import attention_ref
from inductor_conv.reference.attention_dropout import dropout_keep_mask

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FP32_TOL = dict(atol=2e-5, rtol=2e-5)


def _randn(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype).to(DEVICE)


def _reference(q, k, v, do, mask, causal, keep, p, softcap, mask_grad):
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    m = mask
    if mask_grad:
        m = mask.detach().double().requires_grad_()
        leaves.append(m)
    out = attention_ref(*leaves[:3], attn_mask=m, dropout_mask=keep, dropout_p=p, is_causal=causal, softcap=softcap)
    return out.detach(), torch.autograd.grad(out, leaves, do.double())


def _check_kernels(q, k, v, mask, causal, p, softcap, split):
    """The eager launchers' O and dQ, dK, dV (and, for a float mask, its gradient) against the float64 reference;
    split: dK and dV in programs of their own (the interpreter's small tile; the table's on the GPU)."""
    B, Hq, Sq, _ = q.shape
    Sk, Dv = k.shape[2], v.shape[-1]
    mask_grad = mask is not None and mask.is_floating_point()
    seed = torch.tensor([7], dtype=torch.int64, device=DEVICE)
    out, lse = attention_fwd(q, k, v, mask, p, causal, None, seed, softcap=softcap)
    assert out.shape == (B, Hq, Sq, Dv)
    do = _randn(B, Hq, Sq, Dv, seed=4)
    tile = AttnBwdTile(16, 32, 4, 1, split=split) if DEVICE == "cpu" else None
    grads = attention_bwd(do, q, k, v, mask, out, lse, p, causal, None, seed, mask_grad=mask_grad, softcap=softcap,
                          config=tile)
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p else None
    ref, ref_grads = _reference(q, k, v, do, mask, causal, keep, p, softcap, mask_grad)
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    for name, got, want in zip(("dq", "dk", "dv", "dmask"), grads, ref_grads):
        assert got.shape == want.shape, name
        torch.testing.assert_close(got.double(), want, **FP32_TOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("causal,p,softcap,mask_kind,split", [
    (True, 0.3, 0.0, None, False), (False, 0.0, 2.0, "float", False), (False, 0.3, 0.0, "bool", True),
    (True, 0.0, 0.0, None, True)])
def test_kernels_match_fp64(causal, p, softcap, mask_kind, split):
    """O [B, Hq, Sq, Dv] and dQ, dK, dV (and a learned mask's gradient) for Dqk = 24, Dv = 16 under GQA with ragged
    lengths, causal or not, dropout, soft-capping, both mask kinds, and the split dK / dV programs."""
    B, Hq, Hkv, Sq, Sk, D, Dv = 2, 4, 2, 37, 45, 24, 16
    q, k, v = _randn(B, Hq, Sq, D, seed=0), _randn(B, Hkv, Sk, D, seed=1), _randn(B, Hkv, Sk, Dv, seed=2)
    mask = {None: None, "float": _randn(1, Hq, Sq, Sk, seed=3), "bool": _randn(B, 1, Sq, Sk, seed=3) > -1.0}[mask_kind]
    _check_kernels(q, k, v, mask, causal, p, softcap, split)


@pytest.mark.parametrize("D,Dv,causal,p,softcap,mask_kind,split", [
    (192, 128, True, 0.3, 0.0, "bool", False), (72, 72, False, 0.0, 2.0, "float", True)])
def test_split_head_dim_kernels_match_fp64(monkeypatch, D, Dv, causal, p, softcap, mask_kind, split):
    """Note [split head dim]: MLA's q/k head dim 192 runs as 128 + 64 tiles (its listed default) and 72, listed for
    the test, as 64 + 16 with the second tile padded; O and every gradient against float64 (the mask's too), GQA,
    ragged lengths, and the split dK / dV programs."""
    import inductor_conv.heuristics.attention as heuristics
    from inductor_conv.kernels.attention import _plan_for

    monkeypatch.setattr(heuristics, "SPLIT_HEAD_DIMS", heuristics.SPLIT_HEAD_DIMS | {(72, 72)})
    B, Hq, Hkv, Sq, Sk = 1, 4, 2, 37, 45
    q, k, v = _randn(B, Hq, Sq, D, seed=0), _randn(B, Hkv, Sk, D, seed=1), _randn(B, Hkv, Sk, Dv, seed=2)
    mask = {"float": _randn(1, Hq, Sq, Sk, seed=3), "bool": _randn(B, 1, Sq, Sk, seed=3) > -1.0}[mask_kind]
    plan = _plan_for("fwd", q, v, mask.expand(B, Hq, Sq, Sk), causal, p, softcap, False, None)
    assert (plan.constexprs["BLOCK_D"], plan.constexprs["BLOCK_D2"]) == ((128, 64) if D == 192 else (64, 16))
    _check_kernels(q, k, v, mask, causal, p, softcap, split)


def test_head_dim_blocks():
    """Which head dims split, and into what (Note [split head dim]): the listed (q/k, v) pairs by default, any head
    dim that two tiles cover with fewer columns than the padded one when asked."""
    from inductor_conv.heuristics.attention import head_dim_blocks, head_dim_tiles

    assert head_dim_blocks(192, True, 128) == (128, 64)
    # ... and the tile lookup's (head dim, split_v): a split by both head dims, one padded tile by the larger
    assert head_dim_tiles(192, 128, True) == (128, 64, 192, 128)
    assert head_dim_tiles(192, 128, False) == (256, 0, 192, None)
    assert head_dim_tiles(64, 128, True) == (64, 0, 128, None)
    assert head_dim_blocks(192, False, 128) == (256, 0)
    assert head_dim_blocks(192, True, 192) == (256, 0)  # not listed: its tiles were sized for v's 128
    assert head_dim_blocks(80, True) == (64, 16) and head_dim_blocks(96, True) == (64, 32)
    assert head_dim_blocks(112, True, any_dim=True) == (128, 0) and head_dim_blocks(80, False) == (128, 0)
    anyd = {d: head_dim_blocks(d, True, any_dim=True) for d in (16, 24, 40, 64, 72, 80, 96, 112, 128, 160, 192, 256)}
    assert anyd == {16: (16, 0), 24: (32, 0), 40: (32, 16), 64: (64, 0), 72: (64, 16), 80: (64, 16), 96: (64, 32),
                    112: (128, 0), 128: (128, 0), 160: (128, 32), 192: (128, 64), 256: (256, 0)}


def test_split_tiles_are_keyed_by_both_head_dims():
    """A split head dim's own tiles are sized for its value head dim: MLA's (192, 128) takes them, a split 192 with
    values of 192 (not listed by default) its bucket's (256), whose tiles leave shared memory for 256-wide V tiles."""
    from inductor_conv.heuristics.attention import (CUDA_BWD, CUDA_FWD, EAGER_BWD_STAGES, attn_bwd_autotune_tiles,
                                                    attn_bwd_tile, attn_fwd_autotune_tiles, attn_fwd_tile)

    bf16 = torch.bfloat16
    assert attn_bwd_tile(bf16, 192, "cuda", causal=True, split_v=128) == CUDA_BWD[(192, 128)]
    # the eager kernel takes its own stages where they were measured to differ (runtime lengths and strides)
    eager = attn_bwd_tile(bf16, 192, "cuda", eager=True, causal=True, split_v=128)
    assert eager.num_stages == EAGER_BWD_STAGES[(192, 128)] != CUDA_BWD[(192, 128)].num_stages
    assert attn_fwd_tile(bf16, 192, "cuda", causal=True, split_v=128) == CUDA_FWD[(192, 128)]
    assert attn_bwd_tile(bf16, 192, "cuda", causal=True, split_v=192) == attn_bwd_tile(bf16, 256, "cuda", causal=True)
    assert attn_bwd_tile(bf16, 96, "cuda", causal=True, split_v=96) == attn_bwd_tile(bf16, 128, "cuda", causal=True)
    # max-autotune: MLA's default first, then its measured runners-up (the padded 256's candidates would not fit)
    fwd = attn_fwd_autotune_tiles(bf16, 192, causal=True, split_v=128)
    bwd = attn_bwd_autotune_tiles(bf16, 192, causal=True, split_v=128)
    assert fwd[0] == CUDA_FWD[(192, 128)] and len(fwd) == 3 and len(set(fwd)) == 3
    assert bwd[0] == CUDA_BWD[(192, 128)] and len(bwd) == 4 and len(set(bwd)) == 4
    assert attn_fwd_autotune_tiles(bf16, 256) == [attn_fwd_tile(bf16, 256, "cuda")]


def test_public_op_eager_and_gradients():
    """inductor_conv.attention with value's head dim 16 and query / key's 32: SDPA's result (SDPA takes Dv != D too),
    eagerly, with gradients, bf16."""
    q = _randn(1, 4, 40, 32, seed=0, dtype=torch.bfloat16).requires_grad_()
    k = _randn(1, 2, 40, 32, seed=1, dtype=torch.bfloat16).requires_grad_()
    v = _randn(1, 2, 40, 16, seed=2, dtype=torch.bfloat16).requires_grad_()
    out = inductor_conv.attention(q, k, v, is_causal=True, enable_gqa=True)
    do = _randn(*out.shape, seed=3, dtype=torch.bfloat16)
    grads = torch.autograd.grad(out, (q, k, v), do)
    ref, ref_grads = _reference(q, k, v, do, None, True, None, 0.0, 0.0, False)
    for got, want in zip((out, *grads), (ref, *ref_grads)):  # bf16 storage: 2^-8 relative, twice
        assert got.shape == want.shape
        assert (got.double() - want).abs().max() <= 2e-2 * want.abs().max() + 1e-3


def test_op_gradcheck_fp64():
    """The op's float64 path (torch math) under finite differences, with Dv != Dqk, a mask and dropout."""
    q = torch.randn(1, 2, 5, 24, dtype=torch.float64, requires_grad=True)
    k = torch.randn(1, 1, 7, 24, dtype=torch.float64, requires_grad=True)
    v = torch.randn(1, 1, 7, 16, dtype=torch.float64, requires_grad=True)
    mask = torch.randn(1, 2, 5, 7, dtype=torch.float64)

    def fn(q, k, v):
        torch.manual_seed(0)
        return inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=0.3, enable_gqa=True)

    assert fn(q, k, v).shape == (1, 2, 5, 16)
    assert torch.autograd.gradcheck(fn, (q, k, v), fast_mode=True)


def test_errors_name_the_argument():
    q, k = torch.randn(1, 2, 8, 32), torch.randn(1, 2, 8, 32)
    with pytest.raises(ValueError, match="query and key must share the head dim"):
        inductor_conv.attention(q, torch.randn(1, 2, 8, 16), k)
    with pytest.raises(ValueError, match="value's head dim"):
        inductor_conv.attention(q, k, torch.randn(1, 2, 8, 512))
