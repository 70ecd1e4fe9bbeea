"""Mask summaries for attention with a mask tensor (Note [mask ranges] in attn_math.py): one pass over the mask per
call, shared by every head the mask broadcasts over, that tells each attention program which tiles it must visit and
which it may run without reading the mask.

rows [Bs, Hs, cdiv(Sq, MASK_ROWS), 4] int32: for each block of MASK_ROWS query rows, (lo, full_lo, full_hi, hi) in
keys, multiples of MASK_TILE: key tiles outside [lo, hi) hold no real entry (True, or an additive value above the
floor) for any of its rows, and those of [full_lo, full_hi) allow every entry (True / exactly 0.0).  A block with a
row that has no real entry anywhere (a fully masked or floor row: Note [finite-floor rows]) gets (0, 0, -1, all):
every tile, none full.
cols [Bs, Hs, cdiv(Sk, MASK_TILE), 4]: the same for each block of MASK_TILE keys, in queries (tiles of MASK_TILE),
for the dK/dV programs; a query tile with such a row counts as partial for every key (a floor row spreads its
probability over its floor entries).  A key block no query attends gets (0, 0, 0, 0).
Bs / Hs are 1 where the mask broadcasts (stride 0), so a (B, 1, S, S) mask is read once per batch, not per head.

Three kernels make them (Note [mask summary passes]): one pass over the mask writes a flag per (block of MASK_ROWS
rows, tile of MASK_TILE keys), and two small kernels turn the flags into the rows and the cols summaries.
"""
import functools
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from .attn_common import INT32_SPAN, mask_kind, slice_span
from .attn_math import MASK_ROWS, MASK_TILE, load_mask_tile, mask_real, wide
from .launch import FastLaunch, cdiv

# Note [mask summary passes]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# The summaries need, per (row block, key tile), only two facts: which of the block's rows have a real entry in
# the tile, and whether every entry of the tile is neutral (True / 0.0).  The flags kernel reads the mask once and
# writes them as one int32 per (row block, key tile): bit r (r < MASK_ROWS) for row r of the block, bit MASK_ROWS
# for "all neutral" (rows past SEQ_Q and keys past SEQ_K count as neutral and not real).  Its programs each load one
# [rows, keys] block of the mask (_FLAG_SHAPES) with no loop, so every program's loads are in flight at once (on an
# H200 the pass reads a bool mask at ~0.8 TB/s and a bf16 one at ~1.5 TB/s: below the copy bandwidth, the per-element
# tests and reductions bound it).  The rows kernel then reads a row block's flags (cdiv(SEQ_K, MASK_TILE) of them),
# the cols kernel a key tile's flags and the rows summary's "row without a real entry" marks.  The flags are
# 1/256 of the mask's elements.
#
# Program shapes: flags (rows, keys, warps) per MASK_KIND (bool 1, additive 2); rows: _ROWS_ENTRIES entries a
# program, _ROWS_TILES flags a step; cols: _COLS_ENTRIES entries a program, _COLS_TILES query tiles a step.
# H200 2026-12-04, benchmarks/diagnostics/mask_summary_tiles.py (B4 S2048, causal (B, 1, S, S), GPU us, two runs):
# flags bool (16, 256, 4) 21.1-21.6, (32, 512, 4) 20.5-21.1, (64, 256, 4) 22.6-23.6, (64, 256, 8) 34; flags bf16
# (16, 64, 2) 21.7-21.8, (16, 128, 4) 22.2, (64, 256, 4) 31; rows (16, 32) 4.7-5.6, (4, 64) 5.6-7.4; cols (4, 32)
# 5.2-9.9, (16, 16) 9.2-10.5.  The single-pass kernels these replace took 30 (bool) / 62 (bf16) us a rows summary and
# 31 / 38 us a cols summary, each reading the mask.
_ROWS_PER_ENTRY, _TILE = int(MASK_ROWS), int(MASK_TILE)  # as host ints
ROW_BITS = tl.constexpr((1 << int(MASK_ROWS)) - 1)  # a flag's row bits
NEUTRAL_BIT = tl.constexpr(1 << int(MASK_ROWS))  # a flag's "all neutral" bit
_FLAG_SHAPES = {1: (16, 256, 4), 2: (16, 64, 2)}
_ROWS_ENTRIES = 16
_ROWS_TILES = 32
_COLS_ENTRIES = 4
_COLS_TILES = 32


@triton.jit
def _neutral(b_mask, MASK_KIND: tl.constexpr):
    """Entries that let attention through unchanged: True, or an additive 0."""
    if MASK_KIND == 1:
        return b_mask
    else:
        return b_mask == 0.0


@triton.jit
def _or(a, b):
    return a | b


@triton.jit
def _first_run(t_full, idx, t0, f_lo, f_hi, CT: tl.constexpr):
    """Extend each entry's first run of full tiles [f_lo, f_hi) (f_lo = BIG: none yet) by the chunk of tiles
    idx = t0 + [0, CT) whose fullness is t_full [E, CT] (f_lo, f_hi: [E]): a run starts at the first full tile, and
    one that reached the chunk's start goes on."""
    BIG: tl.constexpr = 1 << 30
    first = tl.min(tl.where(t_full > 0, idx[None, :], BIG), 1)
    start = tl.where(f_lo == BIG, first, tl.where(f_hi == t0, f_hi, BIG))
    end = tl.min(tl.where((t_full == 0) & (idx[None, :] >= start[:, None]), idx[None, :], t0 + CT), 1)
    f_lo = tl.where((f_lo == BIG) & (first < BIG), first, f_lo)
    f_hi = tl.where(start < BIG, end, f_hi)
    return f_lo, f_hi


@triton.jit
def _flags_block(MASK, FLAGS, mask_off, flag_off, i_q, i_k, stride_mm, stride_mn, SEQ_Q, SEQ_K,
                 MASK_KIND: tl.constexpr, P_ROWS: tl.constexpr, P_KEYS: tl.constexpr, CHECK_KEYS: tl.constexpr):
    """The flags of the mask block [i_q * P_ROWS, +P_ROWS) x [i_k * P_KEYS, +P_KEYS), loaded as a [P_ROWS * CT, T]
    tile whose row (row, tile) holds one row's keys of one key tile: each flag bit is then a reduction along the
    tile's contiguous axis, and only [P_ROWS * CT] vectors are regrouped into row blocks."""
    R: tl.constexpr = MASK_ROWS
    T: tl.constexpr = MASK_TILE
    RB: tl.constexpr = P_ROWS // R
    CT: tl.constexpr = P_KEYS // T
    e = tl.arange(0, P_ROWS * CT)  # (row, tile) pairs, row-major
    o_i = i_q * P_ROWS + e // CT
    o_j = (i_k * CT + e % CT)[:, None] * T + tl.arange(0, T)[None, :]
    b_mask = load_mask_tile(MASK, mask_off, o_i=o_i[:, None], o_j=o_j, stride_mm=stride_mm, stride_mn=stride_mn,
                            SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, MASK_KIND=MASK_KIND, CHECK_KEYS=CHECK_KEYS)
    inside = (o_i < SEQ_Q)[:, None] & (o_j < SEQ_K)
    row_real = tl.max((mask_real(b_mask, MASK_KIND) & inside).to(tl.int32), 1)  # [P_ROWS * CT]
    row_neutral = tl.min((_neutral(b_mask, MASK_KIND) | (inside == 0)).to(tl.int32), 1)
    bits = tl.reshape(row_real << ((e // CT) % R), [RB, R, CT])
    row_bits = tl.sum(bits, 1)  # [RB, CT]: distinct bits, so a sum is an or
    full = tl.min(tl.reshape(row_neutral, [RB, R, CT]), 1)
    o_r = i_q * RB + tl.arange(0, RB)
    o_t = i_k * CT + tl.arange(0, CT)
    n_r = tl.cdiv(SEQ_Q, R)
    n_c = tl.cdiv(SEQ_K, T)
    tl.store(FLAGS + flag_off + o_r[:, None].to(tl.int64) * n_c + o_t[None, :], row_bits | (full << R),
             mask=(o_r < n_r)[:, None] & (o_t < n_c)[None, :])


@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K"])
def _mask_flags_kernel(MASK, FLAGS, stride_mb, stride_mh, stride_mm, stride_mn, H_S, SEQ_Q, SEQ_K,
                       MASK_KIND: tl.constexpr, P_ROWS: tl.constexpr, P_KEYS: tl.constexpr, WIDE: tl.constexpr):
    """Grid (cdiv(SEQ_K, P_KEYS) * cdiv(SEQ_Q, P_ROWS) * Bs * Hs,): the flags (Note [mask summary passes]) of one
    [P_ROWS, P_KEYS] block of one mask slice, FLAGS [Bs * Hs, cdiv(SEQ_Q, MASK_ROWS), cdiv(SEQ_K, MASK_TILE)].
    WIDE: Note [int64 offsets] in attn_common.py."""
    if WIDE:
        stride_mm, stride_mn = wide(stride_mm), wide(stride_mn)
    n_k = tl.cdiv(SEQ_K, P_KEYS)
    n_q = tl.cdiv(SEQ_Q, P_ROWS)
    i_k = tl.program_id(0) % n_k
    i_q = (tl.program_id(0) // n_k) % n_q
    i_bh = tl.program_id(0) // (n_k * n_q)
    mask_off = (i_bh // H_S).to(tl.int64) * stride_mb + (i_bh % H_S).to(tl.int64) * stride_mh
    flag_off = i_bh.to(tl.int64) * tl.cdiv(SEQ_Q, MASK_ROWS) * tl.cdiv(SEQ_K, MASK_TILE)
    if (i_k + 1) * P_KEYS <= SEQ_K:  # whole key tiles: vector loads
        _flags_block(MASK, FLAGS, mask_off, flag_off, i_q, i_k, stride_mm, stride_mn, SEQ_Q, SEQ_K,
                     MASK_KIND=MASK_KIND, P_ROWS=P_ROWS, P_KEYS=P_KEYS, CHECK_KEYS=False)
    else:
        _flags_block(MASK, FLAGS, mask_off, flag_off, i_q, i_k, stride_mm, stride_mn, SEQ_Q, SEQ_K,
                     MASK_KIND=MASK_KIND, P_ROWS=P_ROWS, P_KEYS=P_KEYS, CHECK_KEYS=True)


@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K"])
def _mask_rows_kernel(FLAGS, ROWS, SEQ_Q, SEQ_K, E: tl.constexpr, CT: tl.constexpr):
    """Grid (cdiv(cdiv(SEQ_Q, MASK_ROWS), E) * Bs * Hs,): E rows-summary entries of one mask slice from their flags,
    CT key tiles a step."""
    R: tl.constexpr = MASK_ROWS
    T: tl.constexpr = MASK_TILE
    BIG: tl.constexpr = 1 << 30
    n_r = tl.cdiv(SEQ_Q, R)
    n_c = tl.cdiv(SEQ_K, T)
    n_e = tl.cdiv(n_r, E)
    i_bh = tl.program_id(0) // n_e
    o_e = (tl.program_id(0) % n_e) * E + tl.arange(0, E)  # row blocks
    base = FLAGS + (i_bh.to(tl.int64) * n_r + o_e[:, None]) * n_c
    row_or = tl.zeros([E], dtype=tl.int32)
    lo = tl.full([E], BIG, tl.int32)
    hi = tl.zeros([E], dtype=tl.int32)
    f_lo = tl.full([E], BIG, tl.int32)
    f_hi = tl.full([E], -1, tl.int32)
    for t0 in range(0, n_c, CT):
        idx = t0 + tl.arange(0, CT)
        flags = tl.load(base + idx[None, :], mask=(o_e < n_r)[:, None] & (idx < n_c)[None, :], other=0)
        bits = flags & ROW_BITS
        row_or = row_or | tl.reduce(bits, 1, _or)
        t_real = bits != 0
        t_full = ((flags >> R) & 1) * t_real.to(tl.int32)
        lo = tl.minimum(lo, tl.min(tl.where(t_real, idx[None, :], BIG), 1))
        hi = tl.maximum(hi, tl.max(tl.where(t_real, idx[None, :] + 1, 0), 1))
        f_lo, f_hi = _first_run(t_full, idx, t0, f_lo, f_hi, CT)
    rows_in = tl.minimum(SEQ_Q - o_e * R, R)  # the block's rows below SEQ_Q
    want = (1 << rows_in) - 1
    every_row = (row_or & want) == want
    f_hi = tl.where(f_lo == BIG, lo, f_hi)
    f_lo = tl.where(f_lo == BIG, lo, f_lo)
    p = ROWS + (i_bh.to(tl.int64) * n_r + o_e) * 4
    keep = o_e < n_r
    tl.store(p, tl.where(every_row, lo * T, 0), mask=keep)
    tl.store(p + 1, tl.where(every_row, f_lo * T, 0), mask=keep)
    tl.store(p + 2, tl.where(every_row, f_hi * T, -1), mask=keep)
    tl.store(p + 3, tl.where(every_row, hi * T, n_c * T), mask=keep)


@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K"])
def _mask_cols_kernel(FLAGS, ROWS, COLS, SEQ_Q, SEQ_K, E: tl.constexpr, QT: tl.constexpr):
    """Grid (cdiv(cdiv(SEQ_K, MASK_TILE), E) * Bs * Hs,): E cols-summary entries (key tiles) of one mask slice from
    their flags, QT query tiles a step; ROWS (the rows kernel's result) marks the row blocks holding a row without a
    real entry (full_hi = -1)."""
    R: tl.constexpr = MASK_ROWS
    T: tl.constexpr = MASK_TILE
    RT: tl.constexpr = T // R  # row blocks per query tile
    BIG: tl.constexpr = 1 << 30
    n_r = tl.cdiv(SEQ_Q, R)
    n_c = tl.cdiv(SEQ_K, T)
    n_e = tl.cdiv(n_c, E)
    i_bh = tl.program_id(0) // n_e
    o_e = (tl.program_id(0) % n_e) * E + tl.arange(0, E)  # key tiles
    lo = tl.full([E], BIG, tl.int32)
    hi = tl.zeros([E], dtype=tl.int32)
    f_lo = tl.full([E], BIG, tl.int32)
    f_hi = tl.full([E], -1, tl.int32)
    for q0 in range(0, tl.cdiv(SEQ_Q, T), QT):
        idx = q0 + tl.arange(0, QT)  # query tiles
        o_r = q0 * RT + tl.arange(0, QT * RT)  # their row blocks
        # a row block past SEQ_Q (the last query tile's) holds no row: neutral, nothing real
        flags = tl.load(FLAGS + (i_bh.to(tl.int64) * n_r + o_r[None, :]) * n_c + o_e[:, None],
                        mask=(o_r < n_r)[None, :] & (o_e < n_c)[:, None], other=NEUTRAL_BIT)
        t_real = tl.max(tl.reshape(((flags & ROW_BITS) != 0).to(tl.int32), [E, QT, RT]), 2)
        t_full = tl.min(tl.reshape((flags >> R) & 1, [E, QT, RT]), 2) * t_real
        unreal = tl.min(tl.reshape(tl.load(ROWS + (i_bh.to(tl.int64) * n_r + o_r) * 4 + 2, mask=o_r < n_r, other=0),
                                   [QT, RT]), 1) < 0
        needed = (t_real > 0) | unreal[None, :]
        t_full = tl.where(unreal[None, :], 0, t_full)
        lo = tl.minimum(lo, tl.min(tl.where(needed, idx[None, :], BIG), 1))
        hi = tl.maximum(hi, tl.max(tl.where(needed, idx[None, :] + 1, 0), 1))
        f_lo, f_hi = _first_run(t_full, idx, q0, f_lo, f_hi, QT)
    lo = tl.where(lo == BIG, 0, lo)  # nothing needed: an empty range
    f_hi = tl.where(f_lo == BIG, lo, f_hi)
    f_lo = tl.where(f_lo == BIG, lo, f_lo)
    p = COLS + (i_bh.to(tl.int64) * n_c + o_e) * 4
    keep = o_e < n_c
    tl.store(p, lo * T, mask=keep)
    tl.store(p + 1, f_lo * T, mask=keep)
    tl.store(p + 2, f_hi * T, mask=keep)
    tl.store(p + 3, hi * T, mask=keep)


def _slices(shape, stride, broadcast) -> tuple:
    """(Bs, Hs) of a mask viewed as [B, H, Sq, Sk]: its batch and head extents, 1 along a dim whose stride
    ``broadcast`` says is 0."""
    return tuple(1 if broadcast(st) else n for n, st in zip(shape[:2], stride[:2]))


def _is_zero(stride) -> bool:
    return stride == 0


def _below_int32_span(span) -> bool:
    return span < INT32_SPAN


def summary_slices(mask4d: torch.Tensor) -> tuple[int, int]:
    """(Bs, Hs): the mask's batch and head extents, 1 along a broadcast (stride-0) dim."""
    return _slices(mask4d.shape, mask4d.stride(), _is_zero)


def summary_shapes(mask4d: torch.Tensor) -> tuple[tuple, tuple]:
    """The shapes of mask_summary's rows and cols."""
    B_s, H_s = summary_slices(mask4d)
    Sq, Sk = mask4d.shape[2:]
    return (B_s, H_s, cdiv(Sq, _ROWS_PER_ENTRY), 4), (B_s, H_s, cdiv(Sk, _TILE), 4)


# Note [eager launch path] in kernels/launch.py; a launch's meta: (kernel, the mask's dtype or the program shape),
# which fixes the constexprs
_FLAGS = FastLaunch(_mask_flags_kernel)
_ROWS = FastLaunch(_mask_rows_kernel)
_COLS = FastLaunch(_mask_cols_kernel)


class Launch(NamedTuple):
    """One summary kernel's launch: its grid, its scalar arguments by name (in the kernel's order, after its tensor
    arguments), its constexprs and its warps."""
    kernel: object
    grid: tuple
    scalars: dict
    constexprs: dict
    num_warps: int


def launches(shape: tuple, stride: tuple, kind: int, cdiv, programs: tuple | None = None, broadcast=_is_zero,
             small=_below_int32_span):
    """(flags, rows, cols) Launches and (row, col, flag) shapes for a mask viewed as [B, H, Sq, Sk] with these sizes
    and strides: ints for the eager op, sympy expressions (with Inductor's ceiling division as cdiv, and broadcast
    proving a stride 0 without a guard, and small proving a span below 2^31, Note [int64 offsets]) for the lowering,
    which launches the same kernels from a compiled graph (Note [summary kernels in the graph] in
    lowerings/attention.py).  programs: (flags (rows, keys, warps), rows
    (entries, tiles), cols (entries, tiles)), the module's shapes when None."""
    (p_rows, p_keys, warps), (r_e, r_t), (c_e, c_t) = programs or (
        _FLAG_SHAPES[kind], (_ROWS_ENTRIES, _ROWS_TILES), (_COLS_ENTRIES, _COLS_TILES))
    if p_rows % _ROWS_PER_ENTRY or p_keys % _TILE:  # _flags_block's bits and tiles
        raise ValueError(f"a flags program covers whole row blocks of {_ROWS_PER_ENTRY} and key tiles of {_TILE}, "
                         f"got ({p_rows}, {p_keys})")
    (B_s, H_s), (Sq, Sk) = _slices(shape, stride, broadcast), shape[2:]
    n_r, n_c = cdiv(Sq, _ROWS_PER_ENTRY), cdiv(Sk, _TILE)
    seqs = dict(SEQ_Q=Sq, SEQ_K=Sk)
    flags = Launch(_mask_flags_kernel, (cdiv(Sq, p_rows) * cdiv(Sk, p_keys) * B_s * H_s,),
                   dict(stride_mb=stride[0], stride_mh=stride[1], stride_mm=stride[2], stride_mn=stride[3], H_S=H_s,
                        **seqs),
                   dict(MASK_KIND=kind, P_ROWS=p_rows, P_KEYS=p_keys, WIDE=not small(slice_span(shape, stride))),
                   warps)
    rows = Launch(_mask_rows_kernel, (cdiv(n_r, r_e) * B_s * H_s,), seqs, dict(E=r_e, CT=r_t), 4)
    cols = Launch(_mask_cols_kernel, (cdiv(n_c, c_e) * B_s * H_s,), seqs, dict(E=c_e, QT=c_t), 4)
    return (flags, rows, cols), ((B_s, H_s, n_r, 4), (B_s, H_s, n_c, 4), (B_s * H_s, n_r, n_c))


class _Plan(NamedTuple):
    """What summarise launches for a mask of one shape, strides and dtype: the outputs' shapes and, per kernel,
    FastLaunch's (grid, meta, ints, constexprs, num_warps)."""
    row_shape: tuple
    col_shape: tuple
    flag_shape: tuple
    flags: tuple
    rows: tuple
    cols: tuple


@functools.lru_cache(maxsize=256)
def _plan(shape: tuple, stride: tuple, dtype: torch.dtype, programs: tuple) -> _Plan:
    """programs: as launches' (the module's shapes at the call, passed in: a test changes them)."""
    specs, shapes = launches(shape, stride, mask_kind(dtype), cdiv, programs)
    fast = [(spec.grid, (name, dtype, *spec.constexprs.values(), spec.num_warps), tuple(spec.scalars.values()),
             spec.constexprs, spec.num_warps) for name, spec in zip(("flags", "rows", "cols"), specs)]
    return _Plan(*shapes, *fast)


def _plan_for(mask4d: torch.Tensor) -> _Plan:
    programs = (_FLAG_SHAPES[mask_kind(mask4d.dtype)], (_ROWS_ENTRIES, _ROWS_TILES), (_COLS_ENTRIES, _COLS_TILES))
    return _plan(tuple(mask4d.shape), mask4d.stride(), mask4d.dtype, programs)


def _launch(launcher: FastLaunch, spec: tuple, ptrs: tuple) -> None:
    grid, meta, ints, constexprs, warps = spec
    launcher(grid, meta, ptrs, ints, (), constexprs, num_warps=warps)


def mask_flags(mask4d: torch.Tensor, plan: _Plan | None = None) -> torch.Tensor:
    """The flags of Note [mask summary passes]: [Bs * Hs, cdiv(Sq, MASK_ROWS), cdiv(Sk, MASK_TILE)] int32."""
    plan = plan or _plan_for(mask4d)
    flags = torch.empty(plan.flag_shape, device=mask4d.device, dtype=torch.int32)
    if flags.numel():
        _launch(_FLAGS, plan.flags, (mask4d, flags))
    return flags


def mask_summary(mask4d: torch.Tensor, cols: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(rows, cols or None), compact [Bs, Hs, n, 4] int32 (module docstring) of a mask viewed as [B, H, Sq, Sk]."""
    return summarise(mask4d, cols)[:2]


def summarise(mask4d: torch.Tensor, cols: bool, rows: torch.Tensor | None = None,
              flags: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """mask_summary, and the flags it read them from (None for an empty mask): (rows, cols or None, flags).  rows /
    flags: this mask's, made earlier (the eager op's forward, for its backward), which are then not made again."""
    plan = _plan_for(mask4d)
    for name, given, shape in (("rows", rows, plan.row_shape), ("flags", flags, plan.flag_shape)):
        if given is not None and (tuple(given.shape) != shape or given.dtype != torch.int32):
            raise ValueError(f"{name} must be the mask's [{', '.join(map(str, shape))}] int32 {name}, got "
                             f"{given.dtype} {tuple(given.shape)}")
    if rows is not None and not cols:
        return rows, None, flags
    device = mask4d.device
    if not (plan.row_shape[2] and plan.col_shape[2]):
        # no keys: every row block is (0, 0, -1, 0), no row has a real entry; no queries: zero cols
        if rows is None:
            rows = torch.zeros(plan.row_shape, device=device, dtype=torch.int32)
            rows[..., 2] = -1
        return rows, torch.zeros(plan.col_shape, device=device, dtype=torch.int32) if cols else None, None
    if flags is None:
        flags = mask_flags(mask4d, plan)
    if rows is None:
        rows = torch.empty(plan.row_shape, device=device, dtype=torch.int32)
        _launch(_ROWS, plan.rows, (flags, rows))
    if not cols:
        return rows, None, flags
    col_sum = torch.empty(plan.col_shape, device=device, dtype=torch.int32)
    launcher, *args, options = cols_launch(mask4d, flags, rows, col_sum)
    launcher(*args, **options)
    return rows, col_sum, flags


def summary_layout(mask4d: torch.Tensor) -> tuple[tuple, tuple, tuple]:
    """The (rows, cols, flags) shapes summarise gives this mask (each a contiguous int32 buffer)."""
    plan = _plan_for(mask4d)
    return plan.row_shape, plan.col_shape, plan.flag_shape


def cols_launch(mask4d: torch.Tensor, flags, rows, col_sum) -> tuple:
    """The cols kernel's launch for this mask from its flags and rows, as the attention backward describes its own
    launches: (launcher, grid, meta, ptrs, ints, floats, constexprs, options).  flags, rows and col_sum may be
    Phantoms (kernels/native.py: the forward planning a native backward)."""
    grid, meta, ints, constexprs, warps = _plan_for(mask4d).cols
    return _COLS, grid, meta, (flags, rows, col_sum), ints, (), constexprs, dict(num_warps=warps)
