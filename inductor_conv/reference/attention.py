"""Float64 attention reference (materialised) and the dropout keep mask our kernels draw (tests only)."""
import math

import torch
import triton
import triton.language as tl

from inductor_conv.kernels.attn_math import dropout_keep


def attention_ref(q, k, v, attn_mask=None, dropout_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """SDPA in float64: softmax(scale * q kᵀ + mask) (∘ dropout_mask / (1 - p)) v, with native GQA.

    q [B, Hq, Sq, D], k/v [B, Hkv, Sk, D] (query head h uses kv head h // (Hq // Hkv)); attn_mask bool (True =
    attend) or additive, broadcastable to [B, Hq, Sq, Sk]; is_causal allows key j for query i iff j <= i (top-left);
    dropout_mask bool [B, Hq, Sq, Sk] (True = keep).  Extension: a row with no allowed key (all -inf) outputs 0.
    Differentiable (autograd in float64), so it also gives reference gradients.
    """
    q, k, v = q.double(), k.double(), v.double()
    Hq, Hkv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(Hq // Hkv, dim=1)
    v = v.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * (q @ k.transpose(-1, -2))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask.double()
    if is_causal:
        i = torch.arange(s.shape[-2], device=s.device)[:, None]
        j = torch.arange(s.shape[-1], device=s.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
    empty = torch.isneginf(s).all(dim=-1, keepdim=True)
    p = torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    if dropout_mask is not None:
        p = p * dropout_mask / (1.0 - dropout_p)
    return p @ v


def lse_ref(q, k, attn_mask=None, is_causal=False, scale=None):
    """Row log-sum-exp (natural log, float64) of the scores, -inf for rows with no allowed key."""
    Hq, Hkv = q.shape[1], k.shape[1]
    k = k.double().repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * (q.double() @ k.transpose(-1, -2))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask.double()
    if is_causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.logsumexp(s, dim=-1)


@triton.jit
def _dropout_mask_kernel(SEED, OUT, H, SEQ_Q, SEQ_K, threshold, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    i_bh = tl.program_id(2)
    o_i = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    start_n = tl.program_id(1) * BLOCK_N
    o_j = start_n + tl.arange(0, BLOCK_N)
    keep = dropout_keep(tl.load(SEED), i_bh // H, i_bh % H, o_i, start_n, threshold, BLOCK_N, False)
    p = OUT + (i_bh.to(tl.int64) * SEQ_Q + o_i[:, None]) * SEQ_K + o_j[None, :]
    tl.store(p, keep, mask=(o_i < SEQ_Q)[:, None] & (o_j < SEQ_K)[None, :])


def dropout_keep_mask(seed, B, H, Sq, Sk, dropout_p, block=(16, 32)):
    """The keep mask [B, H, Sq, Sk] (bool) our kernels use for `seed` (int64 tensor (1,)) and `dropout_p`.

    Evaluates attn_math.dropout_keep over the whole grid with its own tiling (`block`), so comparing two blocks
    also checks that the mask does not depend on tiles.
    """
    out = torch.empty((B, H, Sq, Sk), dtype=torch.bool, device=seed.device)
    threshold = min(int(round(dropout_p * 65536.0)), 65536)
    grid = (triton.cdiv(Sq, block[0]), triton.cdiv(Sk, block[1]), B * H)
    _dropout_mask_kernel[grid](seed, out, H, Sq, Sk, threshold, BLOCK_M=block[0], BLOCK_N=block[1])
    return out
