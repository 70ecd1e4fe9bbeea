"""Triton kernel and eager launcher of the causal conv's decode step with its state (``causal_conv1d_update``).

Shapes (any strides, no copies): x [B, C, T] (T new tokens), conv_state [B_cache, C, S] (S >= K - 1), weight
[C, K], bias [C], cache_seqlens [B] and conv_state_indices [B] int32, y [B, C, T].  Notation as in
reference/conv.py ``causal_conv1d_update_ref``: batch row b uses cache row r (conv_state_indices[b], or b); its line
is the K - 1 state entries before the new tokens (the window), then x[b, :, 0 .. T - 1]; y[:, t] = act(bias +
sum_k w[:, k] line[t + k]).  Linear state (no cache_seqlens): the window is columns S - K + 1 .. S - 1 and the state
becomes the last S entries of cat(state, x).  Circular: the window is columns (n - K + 1 .. n - 1) mod S and x[:, t]
goes to column (n + t) mod S, n = cache_seqlens[b].  r < 0 is a padding slot: y = 0 and no state is touched;
so is an r past the cache (r >= B_cache): the kernel never addresses memory outside conv_state, and checking the
indices on the host would cost a device sync every step.

One program per (batch row, BC channels): it reads its x, state window and weight once (each tap is one masked
load of the line: x where the tap lands on a new token, the state where it lands on the window), writes y, then
the state columns: a barrier first, because a column that one thread still reads as a tap or as the source of the
shift may be another thread's destination.  Grid (B, cdiv(C, BC)): the batch on axis 0 (no 65535 cap).
Inference only (no backward).
"""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from inductor_conv.heuristics.conv import num_sms
from inductor_conv.kernels.causal_conv1d import fast_math
from inductor_conv.kernels.conv_math import silu
from inductor_conv.kernels.launch import FastLaunch, cdiv

__all__ = ["causal_conv1d_update"]


@triton.jit
def causal_conv1d_update_kernel(
    x, state, w, bias, seqlens, indices, y,
    C, T, S, R,
    s_xb, s_xc, s_xt, s_sb, s_sc, s_ss, s_wc, s_wk, s_bc, s_yb, s_yc, s_yt,
    K: tl.constexpr, BC: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr,
    HAS_BIAS: tl.constexpr, CIRCULAR: tl.constexpr, HAS_INDICES: tl.constexpr, SILU: tl.constexpr,
    FAST: tl.constexpr,
):
    """y [BC, T] and the state row of one batch row, for BC channels; tiles of BT tokens, BS state columns.  R: the
    cache's rows (B_cache)."""
    i_b, i_c = tl.program_id(0).to(tl.int64), tl.program_id(1)
    o_c = (i_c * BC + tl.arange(0, BC)).to(tl.int64)
    m_c = (o_c < C)[:, None]                                                  # [BC, 1]
    if HAS_INDICES:
        i_r = tl.load(indices + i_b).to(tl.int64)
        i_r = tl.where(i_r < R, i_r, -1)  # a row past the cache is a padding slot too: nothing outside the state
    else:
        i_r = i_b
    m_live = m_c & (i_r >= 0)  # a negative cache row is a padding slot: its state is neither read nor written
    if CIRCULAR:  # int32 column arithmetic (an int64 remainder is a long instruction sequence)
        i_n = tl.load(seqlens + i_b) % S
        i_n = tl.where(i_n < 0, i_n + S, i_n)  # the column of token 0, in [0, S)
    p_x = x + i_b * s_xb + o_c[:, None] * s_xc
    p_s = state + tl.maximum(i_r, 0) * s_sb + o_c[:, None] * s_sc
    p_y = y + i_b * s_yb + o_c[:, None] * s_yc
    p_w = w + o_c[:, None] * s_wc
    b_bias = tl.zeros([BC, 1], tl.float32)
    if HAS_BIAS:
        b_bias += tl.load(bias + o_c[:, None] * s_bc, mask=m_c, other=0.0).to(tl.float32)
    o_t = tl.arange(0, BT)[None, :]                                           # [1, BT]

    # ---- y: tap k of token t reads the line at t + k, i.e. x[t + k - K + 1], or the window when that is < 0
    for t0 in range(0, T, BT):
        o_tt = t0 + o_t
        m_t = o_tt < T
        b_z = b_bias + tl.zeros([BC, BT], tl.float32)
        for k in tl.static_range(K):
            o_p = o_tt + (k - (K - 1))                 # position in x; -K + 1 .. -1: the window
            if CIRCULAR:  # a window tap: -K + 1 <= o_p < 0, so -S <= i_n + o_p < S
                o_col = i_n + o_p
                o_col = tl.where(o_col < 0, o_col + S, o_col)
            else:
                o_col = S + o_p
            b_xk = tl.load(p_x + o_p * s_xt, mask=m_c & m_t & (o_p >= 0), other=0.0)
            b_sk = tl.load(p_s + o_col * s_ss, mask=m_live & m_t & (o_p < 0), other=0.0)
            b_wk = tl.load(p_w + k * s_wk, mask=m_c, other=0.0).to(tl.float32)
            b_z += b_wk * tl.where(o_p >= 0, b_xk.to(tl.float32), b_sk.to(tl.float32))
        if SILU:
            b_z = silu(b_z, FAST)
        b_z = tl.where(m_live, b_z, 0.0)  # a padding slot's y is 0 (as Dao's kernel writes)
        tl.store(p_y + o_tt * s_yt, b_z.to(y.dtype.element_ty), mask=m_c & m_t)

    # ---- the state row: every read of it above precedes every write below (the barriers)
    if CIRCULAR:  # x[:, t] -> column (n + t) mod S; only the last S tokens survive, so only they are written
        tl.debug_barrier()
        for t0 in range(tl.maximum(T - S, 0), T, BT):
            o_tt = t0 + o_t
            m = m_live & (o_tt < T)
            b_x = tl.load(p_x + o_tt * s_xt, mask=m, other=0.0)
            tl.store(p_s + ((i_n + o_tt) % S) * s_ss, b_x.to(state.dtype.element_ty), mask=m)
    else:  # column j <- cat(state, x)[j + T]: the state shifted left by T, then the last tokens
        o_j = tl.arange(0, BS)[None, :]
        for j0 in range(0, S, BS):  # ascending: a block reads only columns that no earlier block wrote
            o_jj = j0 + o_j
            o_src = o_jj + T
            m = m_live & (o_jj < S)
            b_old = tl.load(p_s + o_src * s_ss, mask=m & (o_src < S), other=0.0)
            b_new = tl.load(p_x + (o_src - S) * s_xt, mask=m & (o_src >= S), other=0.0)
            b_v = tl.where(o_src < S, b_old, b_new.to(state.dtype.element_ty))
            tl.debug_barrier()
            tl.store(p_s + o_jj * s_ss, b_v, mask=m)


# ---------------------------------------------------------------------------------------------------------------
# Launcher
# ---------------------------------------------------------------------------------------------------------------
# Note [eager launch path] in kernels/launch.py: FastLaunch with a per-configuration plan as the key's meta.
_UPDATE = FastLaunch(causal_conv1d_update_kernel)


class _Plan:
    """What a launch derives from its configuration alone, made once per configuration (``_plan``'s cache) and used
    by identity as FastLaunch's meta: the configuration names every pointer argument's dtype and None-ness (x's
    dtype is the state's and y's; a missing optional input is x or the weight standing in).

    The tile: about 4 programs a multiprocessor (a step moves a few bytes a channel, so the grid, not the tile, hides
    latency), BC 32..256 channels; BT up to 16 tokens and BS up to 32 state columns a tile (decode has T 1..4 and
    S = K - 1 or K: one tile each).  Chosen without a GPU measurement."""

    __slots__ = ("block_c", "num_warps", "constexprs")

    def __init__(self, B, C, T, S, K, device, dtype, w_dtype, b_dtype, circular, indexed, activation, fast):
        sms = num_sms(device.index or 0) if device.type == "cuda" else 1
        self.block_c = min(256, max(32, triton.next_power_of_2(cdiv(B * C, 4 * sms))))
        self.num_warps = max(1, min(4, self.block_c // 32))
        self.constexprs = dict(K=K, BC=self.block_c, BT=min(16, triton.next_power_of_2(T)),
                               BS=min(32, triton.next_power_of_2(S)), HAS_BIAS=b_dtype is not None,
                               CIRCULAR=circular, HAS_INDICES=indexed, SILU=activation == "silu", FAST=fast)


_plan = functools.lru_cache(maxsize=1024)(_Plan)


def causal_conv1d_update(x, conv_state, weight, bias, activation: str, cache_seqlens, conv_state_indices):
    """y [B, C, T] like x; conv_state [B_cache, C, S] updated in place.  Arguments as checked by the public
    ``inductor_conv.causal_conv1d_update`` (this launcher checks nothing: its callers have)."""
    B, C, T = x.shape
    y = torch.empty_like(x)
    if y.numel() == 0:
        return y
    S = conv_state.shape[2]
    plan = _plan(B, C, T, S, weight.shape[1], x.device, x.dtype, weight.dtype, None if bias is None else bias.dtype,
                 cache_seqlens is not None, conv_state_indices is not None, activation, fast_math())
    _UPDATE((B, cdiv(C, plan.block_c)), plan,
            (x, conv_state, weight, weight if bias is None else bias, x if cache_seqlens is None else cache_seqlens,
             x if conv_state_indices is None else conv_state_indices, y),
            (C, T, S, conv_state.shape[0], *x.stride(), *conv_state.stride(), *weight.stride(),
             0 if bias is None else bias.stride(0), *y.stride()), (), plan.constexprs, num_warps=plan.num_warps)
    return y
