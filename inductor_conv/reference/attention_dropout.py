"""The dropout keep mask our attention kernels draw, evaluated over a whole grid (tests only)."""
import torch
import triton
import triton.language as tl

from inductor_conv.kernels.attn_math import dropout_keep
from inductor_conv.reference.attention import dropout_threshold


@triton.jit
def _dropout_mask_kernel(SEED, OUT, H, SEQ_Q, SEQ_K, threshold, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         KEYS_ON_ROWS: tl.constexpr):
    i_bh = tl.program_id(2)
    start_n = tl.program_id(1) * BLOCK_N
    o_i = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    o_j = start_n + tl.arange(0, BLOCK_N)
    keep = dropout_keep(tl.load(SEED), i_bh // H, i_bh % H, o_i, start_n, threshold, BLOCK_N, KEYS_ON_ROWS)
    if KEYS_ON_ROWS:  # the backward's transposed tile [BN, BM]
        i, j = o_i[None, :], o_j[:, None]
    else:
        i, j = o_i[:, None], o_j[None, :]
    tl.store(OUT + (i_bh.to(tl.int64) * SEQ_Q + i) * SEQ_K + j, keep, mask=(i < SEQ_Q) & (j < SEQ_K))


def dropout_keep_mask(seed, B, H, Sq, Sk, dropout_p, block=(16, 32), keys_on_rows=False):
    """The keep mask [B, H, Sq, Sk] (bool) our kernels use for `seed` (int64 tensor (1,)) and `dropout_p`.

    Evaluates attn_math.dropout_keep over the whole grid with its own tiling (`block` = (queries, keys); keys a
    multiple of 16), in the forward's tile orientation or, `keys_on_rows`, the backward's transposed one, so
    comparing two calls also checks that the mask depends on neither.
    """
    out = torch.empty((B, H, Sq, Sk), dtype=torch.bool, device=seed.device)
    threshold = dropout_threshold(dropout_p)
    grid = (triton.cdiv(Sq, block[0]), triton.cdiv(Sk, block[1]), B * H)
    _dropout_mask_kernel[grid](seed, out, H, Sq, Sk, threshold, BLOCK_M=block[0], BLOCK_N=block[1],
                               KEYS_ON_ROWS=keys_on_rows)
    return out
