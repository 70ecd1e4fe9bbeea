"""Triton kernels and eager launchers of the causal depthwise conv1d (+ SiLU), forward and fused backward.

Shapes: x [B, C, L] with any strides (no copies: contiguous [B, C, L] and the channel-last view [B, L, C].T(1, 2)
are both read in place), weight [C, K], bias [C], seq_idx [B, L] int32, initial_states [B, C, K - 1]. The math and
the tiles (shifts in registers, so x and dy are read once) are in conv_math.py.

A program owns BC channels of one batch row and loops over `tiles_per_prog` consecutive tiles of BT = N * V
positions: column tiles (V = 16 bytes of x, N lanes) when positions are contiguous, row tiles (ROWS: V rows, N = 1)
when channels are; the loop carries each tile's neighbours (previous x, next delta) to the next step. Grid (C / BC,
chunks of L, B).

Backward in one pass: z is recomputed (Note [conv backward recomputes z] in inductor_conv/ops/causal_conv1d.py), dx
is gathered (each element written once), and dw / dbeta are reduced in fp32 into one partial row [C, K + 1] per
program (batch row x chunk of L), then summed in a fixed order by a second small kernel: bit-identical across runs.
`deterministic=False` adds the partials atomically into a single row instead.
"""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from inductor_conv.heuristics.conv import conv_chunks, conv_geometry, num_sms
from inductor_conv.kernels import interpreting
from inductor_conv.kernels.launch import FastLaunch, cdiv
from inductor_conv.kernels.conv_math import (
    bwd_cols, bwd_rows, delta_cols, delta_rows, dinit_tile, drop_rows, fwd_cols, fwd_rows, load_cols, load_rows,
    param_grad_rows, slide_rows, store_cols, store_rows, weight_rows, x_rows, x_tilde_cols, zero_cols,
)

__all__ = ["causal_conv1d_fwd", "causal_conv1d_bwd", "fast_math"]


@triton.jit
def causal_conv1d_fwd_kernel(
    x, w, bias, seq_idx, init, y,
    C, L, tiles_per_prog,
    s_xb, s_xc, s_xl, s_wc, s_wk, s_bc, s_sb, s_sl, s_ib, s_ic, s_ik, s_yb, s_yc, s_yl,
    K: tl.constexpr, BC: tl.constexpr, N: tl.constexpr, V: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_SEQ: tl.constexpr, HAS_INIT: tl.constexpr, SILU: tl.constexpr, ROWS: tl.constexpr,
    IDX_DTYPE: tl.constexpr, FAST: tl.constexpr,
):
    """y for BC channels x tiles_per_prog tiles of N * V positions of one batch row (ROWS: row tiles, N = 1)."""
    i_c, i_chunk, i_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    o_c = (i_c * BC + tl.arange(0, BC)).to(IDX_DTYPE)  # IDX_DTYPE: int64 when a row's offsets pass int32
    m_c = (o_c < C)[:, None]                                                  # [BC, 1]
    i_b = i_b.to(tl.int64)
    b_bias = tl.zeros([BC, 1], tl.float32)
    if HAS_BIAS:
        b_bias += tl.load(bias + o_c[:, None] * s_bc, mask=m_c, other=0.0).to(tl.float32)
    p_xc = x + i_b * s_xb + o_c[:, None] * s_xc
    p_ic = init + i_b * s_ib + o_c[:, None] * s_ic
    p_wc = w + o_c[:, None] * s_wc
    p_yc = y + i_b * s_yb + o_c[:, None] * s_yc
    p_seq = seq_idx + i_b * s_sb
    t_s = (i_chunk * tiles_per_prog * (N * V)).to(IDX_DTYPE)
    t_stop = tl.minimum(L, t_s + tiles_per_prog * (N * V))  # the next tile's loads stop at the chunk's end
    b_ws = weight_rows(p_wc, m_c, s_wk, K)  # the K taps, [BC, 1] each
    if ROWS:  # V rows a tile; the window b_xs holds x~ at t0 - K + 1 .. t0 + V - 1
        b_xs = x_rows(p_xc, p_ic, m_c, t0=t_s, L=L, s_xl=s_xl, s_ik=s_ik, K=K, R=V, HAS_INIT=HAS_INIT)
    else:  # column tiles of x~: b_xs this tile's, b_xp the previous tile's
        b_xp = x_tilde_cols(p_xc, p_ic, m_c, t0=t_s - N * V, L=L, s_xl=s_xl, s_ik=s_ik, K=K, BC=BC, N=N, V=V,
                            HAS_INIT=HAS_INIT)
        b_xs = load_cols(p_xc, m_c, t_s, L, s_xl, BC, N, V)
    for i_tile in range(tiles_per_prog):
        t0 = t_s + i_tile * (N * V)
        if ROWS:
            b_next = load_rows(p_xc, m_c, t0 + V, t_stop, s_xl, V)  # in flight while this tile computes
            b_ys = fwd_rows(b_xs, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0, L=L, s_sl=s_sl, K=K, R=V, HAS_SEQ=HAS_SEQ,
                            SILU=SILU, FAST=FAST)
            store_rows(p_yc, b_ys, m_c, t0, L, s_yl, V)
            b_xs = slide_rows(b_xs, b_next, K - 1 + V, V)
        else:
            b_next = load_cols(p_xc, m_c, t0 + N * V, t_stop, s_xl, BC, N, V)
            b_ys = fwd_cols(b_xs, b_xp, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0, L=L, s_sl=s_sl, K=K, N=N, V=V,
                            HAS_SEQ=HAS_SEQ, SILU=SILU, FAST=FAST)
            store_cols(p_yc, b_ys, m_c, t0=t0, L=L, s_l=s_yl, BC=BC, N=N, V=V)
            b_xp = b_xs
            b_xs = b_next


@triton.jit
def causal_conv1d_bwd_kernel(
    x, w, bias, seq_idx, init, dy, dx, part, dinit,
    C, L, tiles_per_prog, n_chunks,
    s_xb, s_xc, s_xl, s_wc, s_wk, s_bc, s_sb, s_sl, s_ib, s_ic, s_ik,
    s_gb, s_gc, s_gl, s_dxb, s_dxc, s_dxl, s_pp, s_pc, s_dib, s_dic, s_dik,
    K: tl.constexpr, KW: tl.constexpr, KP: tl.constexpr, BC: tl.constexpr, N: tl.constexpr,
    V: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SEQ: tl.constexpr, HAS_INIT: tl.constexpr,
    SILU: tl.constexpr, ATOMIC: tl.constexpr, ROWS: tl.constexpr, IDX_DTYPE: tl.constexpr, FAST: tl.constexpr,
    UNROLL: tl.constexpr,
):
    """dx for BC channels x tiles_per_prog column tiles, and this program's dw / dbeta partial row.

    Partial row i_b * n_chunks + i_chunk of part [P, C, K + 1] (dw taps, then dbeta); ATOMIC: all add into row 0.
    KW = next_pow2(K) columns of dw; KP = next_pow2(K - 1) virtual positions of d(initial_states).
    """
    i_c, i_chunk, i_b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    o_c = (i_c * BC + tl.arange(0, BC)).to(IDX_DTYPE)  # IDX_DTYPE: int64 when a row's offsets pass int32
    m_c = (o_c < C)[:, None]                                                  # [BC, 1]
    o_k = tl.arange(0, KW)
    i_b = i_b.to(tl.int64)
    p_xc = x + i_b * s_xb + o_c[:, None] * s_xc
    p_ic = init + i_b * s_ib + o_c[:, None] * s_ic
    p_gc = dy + i_b * s_gb + o_c[:, None] * s_gc
    p_wc = w + o_c[:, None] * s_wc
    p_seq = seq_idx + i_b * s_sb
    b_bias = tl.zeros([BC, 1], tl.float32)
    if HAS_BIAS:
        b_bias += tl.load(bias + o_c[:, None] * s_bc, mask=m_c, other=0.0).to(tl.float32)

    p_dxc = dx + i_b * s_dxb + o_c[:, None] * s_dxc
    b_acc = zero_cols(BC, N, K + 1)  # per-lane sums of x~[s] delta[s + j] (j < K) and of delta
    t_s = (i_chunk * tiles_per_prog * (N * V)).to(IDX_DTYPE)
    b_ws = weight_rows(p_wc, m_c, s_wk, K)  # the K taps, [BC, 1] each
    if ROWS:  # V rows a tile; windows at t0 .. t0 + V + K - 2: b_xs of x~, b_ds of delta (tile and look-ahead)
        b_xs = x_rows(p_xc, p_ic, m_c, t0=t_s, L=L, s_xl=s_xl, s_ik=s_ik, K=K, R=V + K - 1, HAS_INIT=HAS_INIT)
        b_ds = delta_rows(b_xs, gs=load_rows(p_gc, m_c, t_s, L, s_gl, V + K - 1), b_ws=b_ws, p_seq=p_seq, b_bias=b_bias,
                          t0=t_s, L=L, s_sl=s_sl, K=K, R=V + K - 1, HAS_SEQ=HAS_SEQ, SILU=SILU, FAST=FAST)
        b_xs = drop_rows(b_xs, V + 2 * K - 2, K - 1)
        b_xn = load_rows(p_xc, m_c, t_s + V + K - 1, L, s_xl, V)  # the windows' next rows: two tiles in flight
        b_gn = load_rows(p_gc, m_c, t_s + V + K - 1, L, s_gl, V)
    else:  # column tiles of this tile: b_xs of x~, b_ds of delta; the next tile's are computed one step ahead
        b_xs = load_cols(p_xc, m_c, t_s, L, s_xl, BC, N, V)
        b_ds = delta_cols(b_xs, xp=x_tilde_cols(p_xc, p_ic, m_c, t0=t_s - N * V, L=L, s_xl=s_xl, s_ik=s_ik, K=K, BC=BC,
                                                N=N, V=V, HAS_INIT=HAS_INIT),
                          gs=load_cols(p_gc, m_c, t_s, L, s_gl, BC, N, V), b_ws=b_ws, p_seq=p_seq, b_bias=b_bias,
                          t0=t_s, L=L, s_sl=s_sl, K=K, N=N, V=V, HAS_SEQ=HAS_SEQ, SILU=SILU, FAST=FAST)
    for i_tile in tl.range(0, tiles_per_prog, loop_unroll_factor=UNROLL):  # ConvTile.unroll
        t0 = t_s + i_tile * (N * V)
        if ROWS:
            b_xn2 = load_rows(p_xc, m_c, t0 + 2 * V + K - 1, L, s_xl, V)  # the rows after next, in flight meanwhile
            b_gn2 = load_rows(p_gc, m_c, t0 + 2 * V + K - 1, L, s_gl, V)
            b_dxs, b_acc = bwd_rows(b_xs, b_ds, b_ws, p_seq=p_seq, b_acc=b_acc, t0=t0, L=L, s_sl=s_sl, K=K, R=V,
                                    HAS_SEQ=HAS_SEQ)
            store_rows(p_dxc, b_dxs, m_c, t0, L, s_dxl, V)
            b_xs = slide_rows(b_xs, b_xn, V + K - 1, V)
            b_ds = slide_rows(b_ds, delta_rows(b_xs, b_gn, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0 + V + K - 1, L=L,
                                               s_sl=s_sl, K=K, R=V, HAS_SEQ=HAS_SEQ, SILU=SILU, FAST=FAST),
                              V + K - 1, V)
            b_xn = b_xn2
            b_gn = b_gn2
        else:
            b_xn = load_cols(p_xc, m_c, t0 + N * V, L, s_xl, BC, N, V)
            b_dn = delta_cols(b_xn, b_xs, gs=load_cols(p_gc, m_c, t0 + N * V, L, s_gl, BC, N, V), b_ws=b_ws,
                              p_seq=p_seq, b_bias=b_bias, t0=t0 + N * V, L=L, s_sl=s_sl, K=K, N=N, V=V, HAS_SEQ=HAS_SEQ,
                              SILU=SILU, FAST=FAST)
            b_dxs, b_acc = bwd_cols(b_xs, b_ds, b_dn, b_ws, p_seq=p_seq, b_acc=b_acc, t0=t0, L=L, s_sl=s_sl, K=K, N=N,
                                    V=V, HAS_SEQ=HAS_SEQ)
            store_cols(p_dxc, b_dxs, m_c, t0=t0, L=L, s_l=s_dxl, BC=BC, N=N, V=V)
            b_xs = b_xn
            b_ds = b_dn
    b_dw, b_db = param_grad_rows(b_acc, K, KW)
    if HAS_INIT:
        if i_chunk == 0:
            b_dw = dinit_tile(p_xc, p_ic, p_wc, p_seq, p_gc, dinit + i_b * s_dib + o_c[:, None] * s_dic, m_c,
                              b_bias=b_bias, b_dw=b_dw, L=L, s_xl=s_xl, s_ik=s_ik, s_wk=s_wk, s_sl=s_sl, s_gl=s_gl,
                              s_dik=s_dik, K=K, KW=KW, KP=KP, HAS_SEQ=HAS_SEQ, SILU=SILU, FAST=FAST)

    if ATOMIC:
        p_row = part + o_c[:, None] * s_pc
        tl.atomic_add(p_row + o_k[None, :], b_dw, mask=m_c & (o_k < K)[None, :])
        tl.atomic_add(p_row + K, b_db[:, None], mask=m_c)
    else:
        p_row = part + (i_b * n_chunks + i_chunk) * s_pp + o_c[:, None] * s_pc
        tl.store(p_row + o_k[None, :], b_dw, mask=m_c & (o_k < K)[None, :])
        tl.store(p_row + K, b_db[:, None], mask=m_c)


@triton.jit
def causal_conv1d_param_grad_kernel(
    part, dw, db, P, C, s_pp, s_dwc, s_dwk, s_dbc,
    K: tl.constexpr, BF: tl.constexpr, BP: tl.constexpr, HAS_BIAS: tl.constexpr,
):
    """dw [C, K] and dbeta [C] = the sum over the P partial rows of part [P, C, K + 1] (each row contiguous), in a
    fixed order (deterministic): BF values of the rows a program, BP rows at a time summed by tl.sum's fixed tree,
    the blocks of rows in order.  Grid (cdiv(C * (K + 1), BF),): rows and values in parallel -- one program per
    channel block looping over the rows one by one took 89 us for 96 rows at C = 1536 on the H200."""
    o_f = tl.program_id(0) * BF + tl.arange(0, BF)   # flat index c * (K + 1) + k within a row
    m_f = o_f < C * (K + 1)
    o_p = tl.arange(0, BP)
    b_acc = tl.zeros([BF], tl.float32)
    for p0 in range(0, P, BP):
        m = ((p0 + o_p) < P)[:, None] & m_f[None, :]
        b_acc += tl.sum(tl.load(part + (p0 + o_p)[:, None] * s_pp + o_f[None, :], mask=m, other=0.0), axis=0)
    o_c, o_k = o_f // (K + 1), o_f % (K + 1)
    tl.store(dw + o_c * s_dwc + o_k * s_dwk, b_acc.to(dw.dtype.element_ty), mask=m_f & (o_k < K))
    if HAS_BIAS:  # column K
        tl.store(db + o_c * s_dbc, b_acc.to(db.dtype.element_ty), mask=m_f & (o_k == K))


# ---------------------------------------------------------------------------------------------------------------
# Launchers
# ---------------------------------------------------------------------------------------------------------------
def fast_math() -> bool:
    """The kernels' FAST constexpr (conv_math.sigmoid: PTX ex2 / rcp approximations): on wherever the kernels are
    compiled for a GPU, off under the Triton interpreter, which cannot run inline PTX."""
    return not interpreting()


def _layout(x: torch.Tensor) -> str:
    return "bcl" if x.stride(2) == 1 else "blc"


def _sms(x: torch.Tensor) -> int:
    return num_sms(x.device.index or 0) if x.is_cuda else 1


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


# The kernels' grid is (channel blocks, chunks of L, batch rows); CUDA caps grid axes 1 and 2 at 65535, so the
# launchers run a larger batch as consecutive launches over batch slices (the kernels take any strides).
MAX_GRID_BATCH = 65535


def _batch_slices(B: int):
    return [(b0, min(B, b0 + MAX_GRID_BATCH)) for b0 in range(0, B, MAX_GRID_BATCH)]


# Offsets within a batch row (channel x stride, position x stride) are int32 products unless the kernels are told
# otherwise: a tensor whose storage reaches 2^31 elements gets IDX_DTYPE = int64 (the batch offset is always int64).
INT32_OFFSETS = 2**31


def _index_dtype(*tensors):
    big = any(t is not None and t.untyped_storage().nbytes() // t.element_size() >= INT32_OFFSETS for t in tensors)
    return tl.int64 if big else tl.int32


def _rows(t, b0, b1, B):
    return t if t is None or b1 - b0 == B else t[b0:b1]


# Note [eager launch path] in kernels/launch.py: FastLaunch with a per-configuration plan as the key's meta.
_FWD = FastLaunch(causal_conv1d_fwd_kernel)
_BWD = FastLaunch(causal_conv1d_bwd_kernel)
_PARAM_GRAD = FastLaunch(causal_conv1d_param_grad_kernel)
_PARAM_GRAD_BLOCK = 128  # values of the partial rows a program (part is contiguous: row i at i * C * (K + 1))


class _Plan:
    """What a launch derives from its configuration alone: the geometry and the constexprs, made once per
    configuration (`_plan`'s cache) and used by identity as FastLaunch's meta: the configuration names every
    pointer argument's dtype (x, weight, bias, initial_states; a missing optional input is x standing in)."""

    __slots__ = ("g", "constexprs", "param_grad_constexprs")

    def __init__(self, direction, layout, dtype, w_dtype, b_dtype, has_seq, i_dtype, K, activation, idx64,
                 deterministic, fast, config=None):
        self.g = g = conv_geometry(layout, dtype, K, direction, config)
        self.constexprs = dict(K=K, BC=g.block_c, N=g.lanes, V=g.vec, HAS_BIAS=b_dtype is not None,
                               HAS_SEQ=has_seq, HAS_INIT=i_dtype is not None, SILU=activation == "silu", ROWS=g.rows,
                               IDX_DTYPE=tl.int64 if idx64 else tl.int32, FAST=fast)
        if direction == "bwd":
            self.constexprs.update(KW=triton.next_power_of_2(K), KP=triton.next_power_of_2(max(K - 1, 1)),
                                   ATOMIC=not deterministic, UNROLL=g.unroll)
            self.param_grad_constexprs = dict(K=K, BF=_PARAM_GRAD_BLOCK, HAS_BIAS=b_dtype is not None)


_plan = functools.lru_cache(maxsize=None)(_Plan)


def _plan_for(direction, x, weight, bias, seq_idx, initial_states, activation, idx64, deterministic, config):
    args = (direction, _layout(x), x.dtype, weight.dtype, None if bias is None else bias.dtype, seq_idx is not None,
            None if initial_states is None else initial_states.dtype, weight.shape[1], activation, idx64 is tl.int64,
            deterministic, fast_math())
    return _plan(*args) if config is None else _Plan(*args, config=config)


def causal_conv1d_fwd(x, weight, bias, seq_idx, initial_states, activation: str, *, out=None, config=None):
    """y = act(causal_conv1d(x, weight) + bias) [B, C, L] in x's dtype (layout of x), fp32 accumulation.

    Args: x [B, C, L] any strides; weight [C, K]; bias [C] | None; seq_idx [B, L] int32 | None;
    initial_states [B, C, K - 1] | None; activation "none" | "silu"; out: optional [B, C, L] output;
    config: optional ConvTile / dict overriding the tile (tests).
    """
    _check_args(x, weight, bias, seq_idx, initial_states, activation)
    if out is not None and (out.shape != x.shape or out.dtype != x.dtype):
        raise ValueError(f"out must be {tuple(x.shape)} {x.dtype}, got {tuple(out.shape)} {out.dtype}")
    return launch_fwd(x, weight, bias, seq_idx, initial_states, activation, out, config)


def launch_fwd(x, weight, bias, seq_idx, initial_states, activation: str, out=None, config=None):
    """causal_conv1d_fwd without its argument checks, for callers that made them (the ops)."""
    B, C, L = x.shape
    y = torch.empty_like(x) if out is None else out
    if x.numel() == 0:
        return y
    plan = _plan_for("fwd", x, weight, bias, seq_idx, initial_states, activation,
                     _index_dtype(x, y, initial_states), True, config)
    for launcher, grid, meta, ptrs, ints, constexprs, options in _fwd_launches(x, weight, bias, seq_idx,
                                                                                initial_states, y, plan):
        launcher(grid, meta, ptrs, ints, (), constexprs, **options)
    return y


def _fwd_launches(x, weight, bias, seq_idx, initial_states, y, plan):
    """The forward's launches, one per batch slice, as _bwd_launches describes them; y may be a Phantom (the native
    forward's Program)."""
    B, C, L = x.shape
    g = plan.g
    n_c = cdiv(C, g.block_c)
    tiles_per_prog, n_chunks = conv_chunks(B, C, L, g, _sms(x))
    launches = []
    for b0, b1 in _batch_slices(B):
        x_s, y_s = (x, y) if b1 - b0 == B else (x[b0:b1], y[b0:b1])
        (p_b, p_s, p_i), strides = _optional_args(x_s, bias, _rows(seq_idx, b0, b1, B),
                                                  _rows(initial_states, b0, b1, B))
        launches.append((_FWD, (n_c, n_chunks, b1 - b0), plan, (x_s, weight, p_b, p_s, p_i, y_s),
                         (C, L, tiles_per_prog, *x_s.stride(), *weight.stride(), *strides, *y_s.stride()),
                         plan.constexprs, dict(num_warps=g.num_warps)))
    return launches


def causal_conv1d_bwd(x, weight, bias, seq_idx, initial_states, dy, activation: str, *, deterministic=True,
                      config=None):
    """Gradients of causal_conv1d_fwd: (dx [B, C, L] x.dtype, dweight [C, K] weight.dtype, dbias [C] | None,
    dinitial_states [B, C, K - 1] | None), in one fused pass plus a small fixed-order reduction of dw / dbias."""
    _check_args(x, weight, bias, seq_idx, initial_states, activation)
    if dy.shape != x.shape:
        raise ValueError(f"dy must be {tuple(x.shape)}, got {tuple(dy.shape)}")
    return launch_bwd(x, weight, bias, seq_idx, initial_states, dy, activation, deterministic, config)


def launch_bwd(x, weight, bias, seq_idx, initial_states, dy, activation: str, deterministic=True, config=None):
    """causal_conv1d_bwd without its argument checks (as launch_fwd)."""
    B, C, L = x.shape
    K = weight.shape[1]
    if dy.dtype != x.dtype or (_layout(dy) != _layout(x) and x.numel() > 0):
        # One tile reads x and dy alike; a dy across the grain (a contiguous dy with the channel-last view as x) is
        # copied into x's layout first: on the H200 (B8 C5120 L2048) the kernel took 417 us reading it strided and
        # 216 in x's layout, and the copy ~85.  (The compiled backward reads such a dy in place: DY_T.)
        dy = torch.empty_like(x).copy_(dy)
    dx = torch.empty_like(x)
    dw = torch.empty_like(weight)  # strides as the op's fake impl
    db = torch.empty(C, dtype=bias.dtype, device=x.device) if bias is not None else None
    dinit = torch.empty_like(initial_states) if initial_states is not None else None
    if x.numel() == 0:
        dw.zero_()
        if db is not None:
            db.zero_()
        if dinit is not None:
            dinit.zero_()
        return dx, dw, db, dinit
    plan = _plan_for("bwd", x, weight, bias, seq_idx, initial_states, activation,
                     _index_dtype(x, dy, dx, initial_states, dinit), deterministic, config)
    n_rows, n_chunks, tiles_per_prog = _bwd_partials(x, plan, deterministic)
    part = (torch.zeros if not deterministic else torch.empty)(n_rows, C, K + 1, dtype=torch.float32,
                                                                device=x.device)
    for launcher, grid, meta, ptrs, ints, constexprs, options in _bwd_launches(
            x, weight, bias, seq_idx, initial_states, dy, dx, dw, db, dinit, part, plan, deterministic, n_rows,
            n_chunks, tiles_per_prog):
        launcher(grid, meta, ptrs, ints, (), constexprs, **options)
    return dx, dw, db, dinit


def _bwd_partials(x, plan, deterministic):
    """(rows of the dw / dbeta partials, chunks of L, tiles per program) of a backward."""
    B, C, L = x.shape
    tiles_per_prog, n_chunks = conv_chunks(B, C, L, plan.g, _sms(x))  # few chunks along L: few partial rows
    return (1 if not deterministic else B * n_chunks), n_chunks, tiles_per_prog


def _bwd_launches(x, weight, bias, seq_idx, initial_states, dy, dx, dw, db, dinit, part, plan, deterministic, n_rows,
                  n_chunks, tiles_per_prog):
    """The backward's launches, (launcher, grid, meta, ptrs, ints, constexprs, options) each: the fused pass per
    batch slice, then the fixed-order sum of the partial rows into dw / dbeta.  dy, dx, dw, db and part may be
    Phantoms (kernels/native.py: the forward planning a native backward)."""
    B, C, L = x.shape
    K = weight.shape[1]
    g = plan.g
    n_c = cdiv(C, g.block_c)
    s_di = dinit.stride() if dinit is not None else (0, 0, 0)
    launches = []
    for b0, b1 in _batch_slices(B):
        whole = b1 - b0 == B
        x_s = x if whole else x[b0:b1]
        (p_b, p_s, p_i), strides = _optional_args(x_s, bias, _rows(seq_idx, b0, b1, B),
                                                  _rows(initial_states, b0, b1, B))
        part_s = part if whole or not deterministic else part[b0 * n_chunks:b1 * n_chunks]  # the slice's rows
        dinit_s = _rows(dinit, b0, b1, B) if dinit is not None else x_s
        dy_s, dx_s = (dy, dx) if whole else (dy[b0:b1], dx[b0:b1])
        launches.append((_BWD, (n_c, n_chunks, b1 - b0), plan,
                         (x_s, weight, p_b, p_s, p_i, dy_s, dx_s, part_s, dinit_s),
                         (C, L, tiles_per_prog, n_chunks, *x_s.stride(), *weight.stride(), *strides, *dy.stride(),
                          *dx.stride(), part.stride(0), part.stride(1), *s_di), plan.constexprs,
                         dict(num_warps=g.num_warps)))
    launches.append((_PARAM_GRAD, (cdiv(C * (K + 1), _PARAM_GRAD_BLOCK),), plan,
                     (part, dw, db if db is not None else dw),
                     (n_rows, C, part.stride(0), *dw.stride(), db.stride(0) if db is not None else 0),
                     dict(plan.param_grad_constexprs, BP=min(32, 1 << (n_rows - 1).bit_length())), dict(num_warps=4)))
    return launches


# Note [native backward] (inductor_conv/csrc/backward_node.cpp): the Programs made for the eager op's common case,
# per configuration and shape (native.cached_program).
_NATIVE_PROGRAMS: dict = {}
_NATIVE_FORWARDS: dict = {}


def native_programs(x, weight, bias, seq_idx, activation: str, deterministic: bool, initial_states=None,
                    grad: bool = True):
    """(forward, backward): the Programs of the forward launch_fwd and (with `grad`; else None) the backward
    launch_bwd would run (with seq_idx or initial_states or neither), for the C++ calls of kernels/native.py (Note
    [native forward] in inductor_conv/csrc/backward_node.cpp), or None where that path does not apply: not on a GPU,
    x not on the current device, the extension not built (yet), a batch past one launch, an empty or non-dense
    input, a pointer not 16-byte aligned, 64-bit offsets (_native_applies).  A call without grad plans no backward
    (no backward compile for inference).  The C++ node gives dy x's strides (copying it where they differ), so every
    launch argument is known here."""
    from inductor_conv._compat import cuda_current_device
    from inductor_conv.kernels import native

    # x on the current device: the Programs hold the kernels Triton loaded there, and the forward launches on it
    if not x.is_cuda or x.device.index != cuda_current_device():
        return None
    key = (x.shape, x.stride(), x.dtype, weight.shape, weight.stride(), weight.dtype,
           None if bias is None else (bias.dtype, bias.stride()),
           None if seq_idx is None else (seq_idx.dtype, seq_idx.stride()),
           None if initial_states is None else (initial_states.dtype, initial_states.stride()), activation,
           deterministic, x.device.index)
    tensors = (x, weight, bias, seq_idx, initial_states)
    forward = native.cached_program(_NATIVE_FORWARDS, key, _native_forward_program, tensors, *tensors, activation)
    if forward is None or not grad:
        return None if forward is None else (forward, None)
    backward = _NATIVE_PROGRAMS.get(key)  # the forward's lookup checked the pointers and the extension
    if backward is None:
        backward = native.cached_program(_NATIVE_PROGRAMS, key, _native_program, tensors, *tensors, activation,
                                         deterministic)
    return None if backward is None else (forward, backward)


def _native_applies(x, weight, bias, initial_states) -> bool:
    """Whether the native Programs take a call: one batch slice, a non-empty dense x and initial_states, a
    contiguous weight, a unit-stride bias, 32-bit offsets (y and dx are empty_like(x): x's strides)."""
    from inductor_conv.kernels.native import dense

    return not (x.numel() == 0 or x.shape[0] > MAX_GRID_BATCH or not dense(x) or not weight.is_contiguous()
                or (bias is not None and bias.stride(0) != 1)
                or (initial_states is not None and not dense(initial_states))
                or _index_dtype(x, initial_states) is not tl.int32)


def native_saved(x, weight, bias, seq_idx, initial_states=None) -> list:
    """The tensors the node saves for a Program of native_backward, in its slot order."""
    return [t for t in (x, weight, bias, seq_idx, initial_states) if t is not None]


def _native_forward_program(ext, x, weight, bias, seq_idx, initial_states, activation, order_out=None):
    """The forward's Program (Note [native forward]): y allocated as empty_like(x), then launch_fwd's one launch;
    None where _native_applies refuses the call or a Program cannot make the launch."""
    from inductor_conv.kernels.native import Phantom, program_launch

    if not _native_applies(x, weight, bias, initial_states):
        return None
    plan = _plan_for("fwd", x, weight, bias, seq_idx, initial_states, activation, tl.int32, True, None)
    y = Phantom(x.shape, x.stride(), x.dtype)
    saved = native_saved(x, weight, bias, seq_idx, initial_states)
    order = [*saved, y]
    slots = {id(t): i for i, t in enumerate(order)}
    program = ext.Program()
    program.name = "CausalConv1dForward"
    program.n_saved = len(saved)
    program.add_alloc(0, [], "float32", False)  # y: empty_like(x)
    for launcher, grid, _, ptrs, ints, constexprs, options in _fwd_launches(x, weight, bias, seq_idx, initial_states,
                                                                            y, plan):
        if not program_launch(program, launcher, grid, ptrs, ints, (), constexprs, options, slots):
            return None
    program.outputs = [slots[id(y)]]
    if order_out is not None:  # (tests) what each slot stands for
        order_out.extend(order)
    return program


def _native_program(ext, x, weight, bias, seq_idx, initial_states, activation, deterministic, order_out=None):
    from inductor_conv.kernels.native import Phantom, program_launch

    B, C, L = x.shape
    K = weight.shape[1]
    if not _native_applies(x, weight, bias, initial_states):
        return None
    plan = _plan_for("bwd", x, weight, bias, seq_idx, initial_states, activation, tl.int32, deterministic, None)
    n_rows, n_chunks, tiles_per_prog = _bwd_partials(x, plan, deterministic)
    dy, dx = (Phantom(x.shape, x.stride(), x.dtype) for _ in range(2))
    dw = Phantom(weight.shape, weight.stride(), weight.dtype)
    db = Phantom(bias.shape, (1,), bias.dtype) if bias is not None else None
    dinit = (Phantom(initial_states.shape, initial_states.stride(), initial_states.dtype)
             if initial_states is not None else None)  # empty_like(initial_states): its strides (dense)
    part = Phantom.contiguous((n_rows, C, K + 1), torch.float32)
    saved = native_saved(x, weight, bias, seq_idx, initial_states)
    grads = [dx, dw, db, dinit]
    order = [*saved, dy, *(g for g in grads if g is not None), part]
    slots = {id(t): i for i, t in enumerate(order)}
    program = ext.Program()
    program.name = "CausalConv1dBackward"
    program.dy_like = 0
    program.n_saved = len(saved)
    program.add_alloc(0, [], "float32", False)  # dx: empty_like(x)
    program.add_alloc(1, [], "float32", False)  # dw: empty_like(weight)
    if bias is not None:
        program.add_alloc(2, [], "float32", False)  # db: empty_like(bias)
    if initial_states is not None:
        program.add_alloc(slots[id(initial_states)], [], "float32", False)  # empty_like(initial_states)
    program.add_alloc(-1, list(part.shape), "float32", not deterministic)
    for launcher, grid, _, ptrs, ints, constexprs, options in _bwd_launches(
            x, weight, bias, seq_idx, initial_states, dy, dx, dw, db, dinit, part, plan, deterministic, n_rows,
            n_chunks, tiles_per_prog):
        if not program_launch(program, launcher, grid, ptrs, ints, (), constexprs, options, slots):
            return None
    program.outputs = [slots[id(g)] if g is not None else -1 for g in grads]  # x, weight, bias, initial_states
    if order_out is not None:  # (tests) what each slot stands for
        order_out.extend(order)
    return program
