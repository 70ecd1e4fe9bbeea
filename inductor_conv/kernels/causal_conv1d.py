"""Triton kernels and eager launchers of the causal depthwise conv1d (+ SiLU), forward and fused backward.

Shapes: x [B, C, L] with any strides (no copies: contiguous [B, C, L] and the channel-last view [B, L, C].T(1, 2)
both run at full speed, the vectorised axis being whichever one is contiguous), weight [C, K], bias [C],
seq_idx [B, L] int32, initial_states [B, C, K - 1]. Math in conv_math.py (notation there).

Tiling: a program owns BC channels x STEP positions of one batch row; its tile spans BT = HL + STEP + HR positions,
HL / HR being halos recomputed by neighbours, needed only when taps of x (X_GATHER, left) or shifted delta
(D_GATHER, right) are taken from registers by tl.gather instead of shifted loads / recomputation. Halos are rounded
up to 8 positions when positions are contiguous in memory, so that every tile starts 16-byte aligned.

Backward in one pass: z is recomputed (Note [causal conv1d backward recomputes z] in conv_math.py), dx is gathered
(each element written once), and dw / dbeta are reduced in fp32 into per-program partial rows [P, C, K + 1] (one
row per batch row and chunk of positions), then summed in a fixed order by a second small kernel: bit-identical
across runs. `deterministic=False` adds the partials atomically instead.
"""
from __future__ import annotations

import dataclasses
import functools

import torch
import triton
import triton.language as tl

from inductor_conv.kernels.conv_math import conv_delta, conv_delta_at, conv_z, load_x_tilde, same_sequence, silu

__all__ = ["causal_conv1d_fwd", "causal_conv1d_bwd", "conv_geometry"]


@triton.jit
def causal_conv1d_fwd_kernel(
    x, w, bias, seq_idx, init, y,
    C, L,
    s_xb, s_xc, s_xl, s_wc, s_wk, s_bc, s_sb, s_sl, s_ib, s_ic, s_ik, s_yb, s_yc, s_yl,
    K: tl.constexpr, BC: tl.constexpr, BT: tl.constexpr, HL: tl.constexpr, X_GATHER: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_SEQ: tl.constexpr, HAS_INIT: tl.constexpr, SILU: tl.constexpr,
):
    """y for BC channels x (BT - HL) positions of one batch row; grid (C / BC, L / (BT - HL), B)."""
    i_c, i_t, i_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    o_c = i_c * BC + tl.arange(0, BC)
    m_c = (o_c < C)[:, None]                                                  # [BC, 1]
    l_t = tl.arange(0, BT)
    o_t = i_t * (BT - HL) - HL + l_t                                          # [BT], the first HL are halo
    i_b = i_b.to(tl.int64)
    p_xc = x + i_b * s_xb + o_c[:, None] * s_xc
    p_ic = init + i_b * s_ib + o_c[:, None] * s_ic
    p_wc = w + o_c[:, None] * s_wc

    b_x = load_x_tilde(p_xc, p_ic, m_c, o_t[None, :], L, s_xl, s_ik, K, HAS_INIT)          # [BC, BT]
    b_z = conv_z(b_x, p_xc, p_ic, p_wc, seq_idx + i_b * s_sb, m_c, o_t, l_t, L, s_xl, s_ik, s_wk, s_sl,
                 K, HAS_INIT, HAS_SEQ, X_GATHER)
    if HAS_BIAS:
        b_z += tl.load(bias + o_c[:, None] * s_bc, mask=m_c, other=0.0).to(tl.float32)
    if SILU:
        b_z = silu(b_z)
    m_t = (l_t >= HL) & (o_t < L)
    p_y = y + i_b * s_yb + o_c[:, None] * s_yc + o_t[None, :] * s_yl
    tl.store(p_y, b_z.to(y.dtype.element_ty), mask=m_c & m_t[None, :])


@triton.jit
def causal_conv1d_bwd_kernel(
    x, w, bias, seq_idx, init, dy, dx, part, dinit,
    C, L, tiles_per_prog, n_chunks,
    s_xb, s_xc, s_xl, s_wc, s_wk, s_bc, s_sb, s_sl, s_ib, s_ic, s_ik,
    s_gb, s_gc, s_gl, s_dxb, s_dxc, s_dxl, s_pp, s_pc, s_dib, s_dic, s_dik,
    K: tl.constexpr, KW: tl.constexpr, KP: tl.constexpr, BC: tl.constexpr, BT: tl.constexpr,
    HL: tl.constexpr, HR: tl.constexpr, X_GATHER: tl.constexpr, D_GATHER: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_SEQ: tl.constexpr, HAS_INIT: tl.constexpr, SILU: tl.constexpr,
    ATOMIC: tl.constexpr,
):
    """dx for BC channels x tiles_per_prog tiles of STEP positions, and that chunk's dw / dbeta partial row.

    grid (C / BC, n_chunks, B); partial row i_b * n_chunks + i_chunk of part [P, C, K + 1] (dw taps, then dbeta).
    KW = next_pow2(K) columns of dw; KP = next_pow2(K - 1) virtual positions of d(initial_states).
    """
    STEP: tl.constexpr = BT - HL - HR
    tl.static_assert(STEP > 0, "the tile must be wider than its halos")
    i_c, i_chunk, i_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    o_c = i_c * BC + tl.arange(0, BC)
    m_c = (o_c < C)[:, None]                                                  # [BC, 1]
    l_t = tl.arange(0, BT)
    o_k = tl.arange(0, KW)
    i_b64 = i_b.to(tl.int64)
    p_xc = x + i_b64 * s_xb + o_c[:, None] * s_xc
    p_ic = init + i_b64 * s_ib + o_c[:, None] * s_ic
    p_gc = dy + i_b64 * s_gb + o_c[:, None] * s_gc
    p_wc = w + o_c[:, None] * s_wc
    p_seq = seq_idx + i_b64 * s_sb
    b_bias = tl.zeros([BC, 1], tl.float32)
    if HAS_BIAS:
        b_bias += tl.load(bias + o_c[:, None] * s_bc, mask=m_c, other=0.0).to(tl.float32)

    b_dw = tl.zeros([BC, KW], tl.float32)
    b_db = tl.zeros([BC], tl.float32)
    for i_tile in range(tiles_per_prog):
        o_t = (i_chunk * tiles_per_prog + i_tile) * STEP - HL + l_t           # [BT]
        m_own = (l_t >= HL) & (l_t < HL + STEP) & (o_t < L)
        b_x = load_x_tilde(p_xc, p_ic, m_c, o_t[None, :], L, s_xl, s_ik, K, HAS_INIT)       # [BC, BT]
        b_g = tl.load(p_gc + o_t[None, :] * s_gl, mask=m_c & ((o_t >= 0) & (o_t < L))[None, :],
                      other=0.0).to(tl.float32)
        b_d = conv_delta(b_x, b_g, b_bias, p_xc, p_ic, p_wc, p_seq, m_c, o_t, l_t, L, s_xl, s_ik, s_wk, s_sl,
                         K, HAS_INIT, HAS_SEQ, X_GATHER, SILU)                # delta at o_t
        b_db += tl.sum(tl.where(m_own[None, :], b_d, 0.0), axis=1)
        # dx[s] = sum_j w[K-1-j] delta[s+j]; the same products give dw[K-1-j] += x[s] delta[s+j] (one pair each).
        b_dx = tl.zeros([BC, BT], tl.float32)
        for j in tl.static_range(K):
            if j == 0:
                b_dj = b_d
            elif D_GATHER:
                b_dj = tl.gather(b_d, tl.broadcast_to(tl.minimum(l_t + j, BT - 1)[None, :], b_d.shape), axis=1)
            else:
                b_dj = conv_delta_at(p_xc, p_ic, p_wc, p_seq, p_gc, m_c, o_t + j, b_bias, L, s_xl, s_ik, s_wk,
                                     s_sl, s_gl, K, HAS_INIT, HAS_SEQ, SILU)
            if HAS_SEQ:
                b_dj = tl.where(same_sequence(p_seq, o_t + j, o_t, L, s_sl)[None, :], b_dj, 0.0)
            b_dx += tl.load(p_wc + (K - 1 - j) * s_wk, mask=m_c, other=0.0).to(tl.float32) * b_dj
            b_xd = tl.sum(tl.where(m_own[None, :], b_x * b_dj, 0.0), axis=1)
            b_dw += tl.where(o_k[None, :] == K - 1 - j, b_xd[:, None], 0.0)
        p_dx = dx + i_b64 * s_dxb + o_c[:, None] * s_dxc + o_t[None, :] * s_dxl
        tl.store(p_dx, b_dx.to(dx.dtype.element_ty), mask=m_c & m_own[None, :])

    if HAS_INIT:
        if i_chunk == 0:
            # d(initial_states): dx of the virtual positions -K+1 .. -1, and their share of dw.
            o_s = tl.arange(0, KP) - KP                                       # [KP]
            m_s = o_s > -K
            b_i = load_x_tilde(p_xc, p_ic, m_c, o_s[None, :], L, s_xl, s_ik, K, HAS_INIT)   # [BC, KP]
            b_di = tl.zeros([BC, KP], tl.float32)
            for j in tl.static_range(K):
                b_dj = conv_delta_at(p_xc, p_ic, p_wc, p_seq, p_gc, m_c, o_s + j, b_bias, L, s_xl, s_ik, s_wk,
                                     s_sl, s_gl, K, HAS_INIT, HAS_SEQ, SILU)
                b_di += tl.load(p_wc + (K - 1 - j) * s_wk, mask=m_c, other=0.0).to(tl.float32) * b_dj
                b_xd = tl.sum(tl.where(m_s[None, :], b_i * b_dj, 0.0), axis=1)
                b_dw += tl.where(o_k[None, :] == K - 1 - j, b_xd[:, None], 0.0)
            p_di = dinit + i_b64 * s_dib + o_c[:, None] * s_dic + (o_s + K - 1)[None, :] * s_dik
            tl.store(p_di, b_di.to(dinit.dtype.element_ty), mask=m_c & m_s[None, :])

    p_row = part + (i_b * n_chunks + i_chunk).to(tl.int64) * s_pp + o_c[:, None] * s_pc
    if ATOMIC:
        tl.atomic_add(p_row + o_k[None, :], b_dw, mask=m_c & (o_k < K)[None, :])
        tl.atomic_add(p_row + K, b_db[:, None], mask=m_c)
    else:
        tl.store(p_row + o_k[None, :], b_dw, mask=m_c & (o_k < K)[None, :])
        tl.store(p_row + K, b_db[:, None], mask=m_c)


@triton.jit
def causal_conv1d_param_grad_kernel(
    part, dw, db, P, C, s_pp, s_pc, s_dwc, s_dwk, s_dbc,
    K: tl.constexpr, KW1: tl.constexpr, BC: tl.constexpr, HAS_BIAS: tl.constexpr,
):
    """dw [C, K] and dbeta [C] = sum over the P partial rows, in row order (deterministic); grid (C / BC,)."""
    o_c = tl.program_id(0) * BC + tl.arange(0, BC)
    o_k = tl.arange(0, KW1)
    m = (o_c < C)[:, None] & (o_k <= K)[None, :]
    p_part = part + o_c[:, None] * s_pc + o_k[None, :]
    b_acc = tl.zeros([BC, KW1], tl.float32)
    for i_p in range(P):
        b_acc += tl.load(p_part + i_p * s_pp, mask=m, other=0.0)
    tl.store(dw + o_c[:, None] * s_dwc + o_k[None, :] * s_dwk, b_acc.to(dw.dtype.element_ty), mask=m & (o_k < K)[None, :])
    if HAS_BIAS:
        tl.store(db + o_c[:, None] * s_dbc + o_k[None, :] * 0, b_acc.to(db.dtype.element_ty), mask=m & (o_k == K)[None, :])


# ---------------------------------------------------------------------------------------------------------------
# Launchers
# ---------------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ConvGeometry:
    """What the tile config resolves to for one call: halos, tile width and the number of tiles along L."""
    block_c: int
    block_t: int
    halo_l: int
    halo_r: int
    num_warps: int
    x_gather: bool
    d_gather: bool
    waves: int

    @property
    def step(self) -> int:
        return self.block_t - self.halo_l - self.halo_r


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def conv_geometry(x: torch.Tensor, K: int, direction: str, config=None) -> ConvGeometry:
    """Resolve the tile for x's layout and width K: defaults from lowerings/heuristics/conv.py, overridden by
    `config` (a ConvTile or a dict of its fields); halos follow from the gather flags, the layout and K."""
    from inductor_conv.lowerings.heuristics.conv import ConvTile, conv_tile

    tile = conv_tile(direction, "bcl" if x.stride(2) == 1 else "blc", x.dtype, K)
    if isinstance(config, ConvTile):
        tile = config
    elif config is not None:
        tile = dataclasses.replace(tile, **dict(config))
    x_gather = tile.x_gather and K > 1
    d_gather = tile.d_gather and K > 1 and direction == "bwd"
    align = 8 if x.stride(2) == 1 else 1  # contiguous positions: keep every tile start 16-byte aligned
    halo_l = _round_up(K - 1, align) if x_gather else 0
    halo_r = _round_up(K - 1, align) if d_gather else 0
    block_t = max(tile.block_t, triton.next_power_of_2(2 * (halo_l + halo_r) + 1))
    return ConvGeometry(tile.block_c, block_t, halo_l, halo_r, tile.num_warps, x_gather, d_gather, tile.waves)


@functools.lru_cache(maxsize=None)
def _num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _check_args(x, weight, bias, seq_idx, initial_states, activation):
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or not x.is_floating_point():
        raise ValueError(f"x must be a floating tensor [B, C, L], got {getattr(x, 'shape', x)}")
    B, C, L = x.shape
    if weight.dim() != 2 or weight.shape[0] != C or weight.shape[1] < 1 or not weight.is_floating_point():
        raise ValueError(f"weight must be a floating tensor [C, K] with C = {C}, got {tuple(weight.shape)}")
    K = weight.shape[1]
    if bias is not None and (tuple(bias.shape) != (C,) or not bias.is_floating_point()):
        raise ValueError(f"bias must be a floating tensor [{C}], got {tuple(bias.shape)}")
    if seq_idx is not None:
        if tuple(seq_idx.shape) != (B, L):
            raise ValueError(f"seq_idx must be [B, L] = [{B}, {L}], got {tuple(seq_idx.shape)}")
        if seq_idx.dtype != torch.int32:
            raise TypeError(f"seq_idx must be int32, got {seq_idx.dtype}")
    if initial_states is not None:
        if tuple(initial_states.shape) != (B, C, K - 1) or not initial_states.is_floating_point():
            raise ValueError(f"initial_states must be a floating tensor [B, C, K - 1] = [{B}, {C}, {K - 1}], "
                             f"got {tuple(initial_states.shape)}")
        if seq_idx is not None:
            raise ValueError("initial_states cannot be combined with seq_idx")
    if activation not in (None, "none", "silu"):
        raise ValueError(f"activation must be 'none' or 'silu', got {activation!r}")
    for name, t in (("weight", weight), ("bias", bias), ("seq_idx", seq_idx), ("initial_states", initial_states)):
        if t is not None and t.device != x.device:
            raise ValueError(f"{name} is on {t.device}, x on {x.device}")
    return B, C, L, K


def _optional_args(x, bias, seq_idx, initial_states):
    """Pointer and strides of each optional input (x and zero strides stand in for a missing one)."""
    s_b = (bias.stride(0),) if bias is not None else (0,)
    s_s = tuple(seq_idx.stride()) if seq_idx is not None else (0, 0)
    s_i = tuple(initial_states.stride()) if initial_states is not None else (0, 0, 0)
    ptrs = tuple(t if t is not None else x for t in (bias, seq_idx, initial_states))
    return ptrs, s_b + s_s + s_i


def causal_conv1d_fwd(x, weight, bias, seq_idx, initial_states, activation: str, *, out=None, config=None):
    """y = act(causal_conv1d(x, weight) + bias) [B, C, L] in x's dtype (layout of x), fp32 accumulation.

    Args: x [B, C, L] any strides; weight [C, K]; bias [C] | None; seq_idx [B, L] int32 | None;
    initial_states [B, C, K - 1] | None; activation "none" | "silu"; out: optional [B, C, L] output;
    config: optional ConvTile / dict overriding the tile (tests).
    """
    B, C, L, K = _check_args(x, weight, bias, seq_idx, initial_states, activation)
    y = torch.empty_like(x) if out is None else out
    if y.shape != x.shape or y.dtype != x.dtype:
        raise ValueError(f"out must be {tuple(x.shape)} {x.dtype}, got {tuple(y.shape)} {y.dtype}")
    if x.numel() == 0:
        return y
    g = conv_geometry(x, K, "fwd", config)
    (p_b, p_s, p_i), strides = _optional_args(x, bias, seq_idx, initial_states)
    grid = (triton.cdiv(C, g.block_c), triton.cdiv(L, g.block_t - g.halo_l), B)
    causal_conv1d_fwd_kernel[grid](
        x, weight, p_b, p_s, p_i, y,
        C, L, *x.stride(), *weight.stride(), *strides, *y.stride(),
        K=K, BC=g.block_c, BT=g.block_t, HL=g.halo_l, X_GATHER=g.x_gather,
        HAS_BIAS=bias is not None, HAS_SEQ=seq_idx is not None, HAS_INIT=initial_states is not None,
        SILU=activation == "silu", num_warps=g.num_warps,
    )
    return y


def causal_conv1d_bwd(x, weight, bias, seq_idx, initial_states, dy, activation: str, *, deterministic=True,
                      config=None):
    """Gradients of causal_conv1d_fwd: (dx [B, C, L] x.dtype, dweight [C, K] weight.dtype, dbias [C] | None,
    dinitial_states [B, C, K - 1] | None), in one fused pass plus a small fixed-order reduction of dw / dbias."""
    B, C, L, K = _check_args(x, weight, bias, seq_idx, initial_states, activation)
    if dy.shape != x.shape:
        raise ValueError(f"dy must be {tuple(x.shape)}, got {tuple(dy.shape)}")
    dx = torch.empty_like(x)
    dw = torch.empty(C, K, dtype=weight.dtype, device=x.device)
    db = torch.empty(C, dtype=bias.dtype, device=x.device) if bias is not None else None
    dinit = torch.empty_like(initial_states) if initial_states is not None else None
    if x.numel() == 0:
        dw.zero_()
        if db is not None:
            db.zero_()
        if dinit is not None:
            dinit.zero_()
        return dx, dw, db, dinit
    g = conv_geometry(x, K, "bwd", config)
    n_c = triton.cdiv(C, g.block_c)
    n_tiles = triton.cdiv(L, g.step)
    # Few chunks along L keep the partial rows few; enough of them to fill the GPU with `waves` x SMs programs.
    sms = _num_sms(x.device.index or 0) if x.is_cuda else 1
    n_chunks = max(1, min(n_tiles, triton.cdiv(g.waves * sms, B * n_c)))
    tiles_per_prog = triton.cdiv(n_tiles, n_chunks)
    n_chunks = triton.cdiv(n_tiles, tiles_per_prog)
    n_rows = 1 if not deterministic else B * n_chunks
    part = (torch.zeros if not deterministic else torch.empty)(n_rows, C, K + 1, dtype=torch.float32,
                                                                device=x.device)
    (p_b, p_s, p_i), strides = _optional_args(x, bias, seq_idx, initial_states)
    s_di = dinit.stride() if dinit is not None else (0, 0, 0)
    causal_conv1d_bwd_kernel[(n_c, n_chunks, B)](
        x, weight, p_b, p_s, p_i, dy, dx, part, dinit if dinit is not None else x,
        C, L, tiles_per_prog, n_chunks if deterministic else 0,
        *x.stride(), *weight.stride(), *strides, *dy.stride(), *dx.stride(), part.stride(0), part.stride(1), *s_di,
        K=K, KW=triton.next_power_of_2(K), KP=triton.next_power_of_2(max(K - 1, 1)),
        BC=g.block_c, BT=g.block_t, HL=g.halo_l, HR=g.halo_r, X_GATHER=g.x_gather, D_GATHER=g.d_gather,
        HAS_BIAS=bias is not None, HAS_SEQ=seq_idx is not None, HAS_INIT=initial_states is not None,
        SILU=activation == "silu", ATOMIC=not deterministic, num_warps=g.num_warps,
    )
    block_c = min(256, triton.next_power_of_2(C))
    causal_conv1d_param_grad_kernel[(triton.cdiv(C, block_c),)](
        part, dw, db if db is not None else dw, n_rows, C, part.stride(0), part.stride(1), *dw.stride(),
        db.stride(0) if db is not None else 0,
        K=K, KW1=triton.next_power_of_2(K + 1), BC=block_c, HAS_BIAS=db is not None,
    )
    return dx, dw, db, dinit
