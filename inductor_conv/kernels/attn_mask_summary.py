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

The rows kernel's programs take MASK_ROWS rows each, a quarter of a tile, so a (4, 1, 2048, 2048) mask gets 512
programs rather than 128: with one program per SM each streamed its 128 KB of mask a chunk at a time (H200: 63 us
for the bool mask, 77 us bf16 additive; 33 / 57 us now).
"""
import torch
import triton
import triton.language as tl

from .attn_common import mask_kind
from .attn_math import MASK_ROWS, MASK_TILE, load_mask_tile, mask_real
from .launch import FastLaunch

# Keys a rows-kernel step reads ([MASK_ROWS, _ROWS_CHUNK] elements, 4 warps) and queries a cols-kernel step reads
# ([_COLS_CHUNK, MASK_TILE], 8 warps).  H200 2026-12-04, benchmarks/diagnostics/mask_summary_tiles.py (B4 S2048 causal,
# bool / bf16 us): rows (16, 512, 4) 33 / 57; (16, 1024, 8) 29 / 60, (16, 256, 4) 34 / 90, (32, 256, 4) 40 / 79,
# (64, 256, 8) 63 / 77; cols (256, 8) 34 / 45; (512, 8) 32 / 54, (128, 4) 56 / 59.
_ROWS_CHUNK = 512
_COLS_CHUNK = 256


@triton.jit
def _neutral(b_mask, MASK_KIND: tl.constexpr):
    """Entries that let attention through unchanged: True, or an additive 0."""
    if MASK_KIND == 1:
        return b_mask
    else:
        return b_mask == 0.0


@triton.jit
def _first_run(t_full, idx, t0, f_lo, f_hi, CT: tl.constexpr):
    """Extend the first run of full tiles [f_lo, f_hi) (f_lo = BIG: none yet) by the chunk of tiles idx = t0 + [0, CT)
    whose fullness is t_full: a run starts at the first full tile, and one that reached the chunk's start goes on."""
    BIG: tl.constexpr = 1 << 30
    first = tl.min(tl.where(t_full > 0, idx, BIG), 0)
    start = tl.where(f_lo == BIG, first, tl.where(f_hi == t0, f_hi, BIG))
    end = tl.min(tl.where((t_full == 0) & (idx >= start), idx, t0 + CT), 0)
    f_lo = tl.where((f_lo == BIG) & (first < BIG), first, f_lo)
    f_hi = tl.where(start < BIG, end, f_hi)
    return f_lo, f_hi


@triton.jit
def _rows_step(MASK, mask_off, o_i, c0, stride_mm, stride_mn, SEQ_Q, SEQ_K, row_real, lo, hi, f_lo, f_hi,
               MASK_KIND: tl.constexpr, CHUNK: tl.constexpr, CHECK_KEYS: tl.constexpr):
    """The rows kernel's state after the keys [c0, c0 + CHUNK) of its rows o_i.  CHECK_KEYS=False: every key is
    below SEQ_K, and the mask rows load as vectors (load_mask_tile)."""
    T: tl.constexpr = MASK_TILE
    CT: tl.constexpr = CHUNK // T
    BIG: tl.constexpr = 1 << 30
    o_j = c0 + tl.arange(0, CHUNK)
    b_mask = load_mask_tile(MASK, mask_off, o_i=o_i[:, None], o_j=o_j[None, :], stride_mm=stride_mm,
                            stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, MASK_KIND=MASK_KIND, CHECK_KEYS=CHECK_KEYS)
    inside = (o_i < SEQ_Q)[:, None] & (o_j < SEQ_K)[None, :]
    real = (mask_real(b_mask, MASK_KIND) & inside).to(tl.int32)  # [R, CHUNK]
    neutral = (_neutral(b_mask, MASK_KIND) | (inside == 0)).to(tl.int32)
    row_real = tl.maximum(row_real, tl.max(real, 1))
    # over the rows first, then over each tile's keys: a [CHUNK] vector is reshaped, not the [T, CHUNK] tile
    t_real = tl.max(tl.reshape(tl.max(real, 0), [CT, T]), 1)  # [CT]
    t_full = tl.min(tl.reshape(tl.min(neutral, 0), [CT, T]), 1) * t_real
    idx = c0 // T + tl.arange(0, CT)
    lo = tl.minimum(lo, tl.min(tl.where(t_real > 0, idx, BIG), 0))
    hi = tl.maximum(hi, tl.max(tl.where(t_real > 0, idx + 1, 0), 0))
    f_lo, f_hi = _first_run(t_full, idx, c0 // T, f_lo, f_hi, CT)
    return row_real, lo, hi, f_lo, f_hi


@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K"])
def _mask_rows_kernel(MASK, ROWS, stride_mb, stride_mh, stride_mm, stride_mn, H_S, SEQ_Q, SEQ_K,
                      MASK_KIND: tl.constexpr, CHUNK: tl.constexpr, R: tl.constexpr = MASK_ROWS):
    """Grid (cdiv(SEQ_Q, R) * Bs * Hs,): one block of R (MASK_ROWS) query rows of one mask slice."""
    T: tl.constexpr = MASK_TILE
    BIG: tl.constexpr = 1 << 30
    n_r = tl.cdiv(SEQ_Q, R)
    i_r = tl.program_id(0) % n_r
    i_bh = tl.program_id(0) // n_r
    mask_off = (i_bh // H_S).to(tl.int64) * stride_mb + (i_bh % H_S).to(tl.int64) * stride_mh
    o_i = i_r * R + tl.arange(0, R)
    row_real = tl.zeros([R], dtype=tl.int32)
    lo = BIG
    hi = 0
    f_lo = BIG
    f_hi = -1
    n_whole = SEQ_K // CHUNK * CHUNK
    for c0 in range(0, n_whole, CHUNK):  # whole chunks: vector loads
        row_real, lo, hi, f_lo, f_hi = _rows_step(
            MASK, mask_off, o_i, c0, stride_mm, stride_mn, SEQ_Q, SEQ_K, row_real, lo, hi, f_lo, f_hi,
            MASK_KIND=MASK_KIND, CHUNK=CHUNK, CHECK_KEYS=False)
    if n_whole < SEQ_K:  # the ragged end
        row_real, lo, hi, f_lo, f_hi = _rows_step(
            MASK, mask_off, o_i, n_whole, stride_mm, stride_mn, SEQ_Q, SEQ_K, row_real, lo, hi, f_lo, f_hi,
            MASK_KIND=MASK_KIND, CHUNK=CHUNK, CHECK_KEYS=True)
    every_row = tl.min(tl.where(o_i < SEQ_Q, row_real, 1), 0) > 0
    f_hi = tl.where(f_lo == BIG, lo, f_hi)
    f_lo = tl.where(f_lo == BIG, lo, f_lo)
    p = ROWS + (i_bh.to(tl.int64) * n_r + i_r) * 4
    tl.store(p, tl.where(every_row, lo * T, 0))
    tl.store(p + 1, tl.where(every_row, f_lo * T, 0))
    tl.store(p + 2, tl.where(every_row, f_hi * T, -1))
    tl.store(p + 3, tl.where(every_row, hi * T, tl.cdiv(SEQ_K, T) * T))


@triton.jit
def _cols_loop(MASK, ROWS, mask_off, o_j, i_bh, n_r, stride_mm, stride_mn, SEQ_Q, SEQ_K, MASK_KIND: tl.constexpr,
               CHUNK: tl.constexpr, CHECK_KEYS: tl.constexpr):
    """(lo, hi, f_lo, f_hi) in query tiles of the MASK_TILE keys o_j, over every query (the cols kernel); n_r: the
    rows summary's entries (of MASK_ROWS rows) per slice."""
    T: tl.constexpr = MASK_TILE
    CT: tl.constexpr = CHUNK // T
    RT: tl.constexpr = T // MASK_ROWS  # rows-summary entries per query tile
    BIG: tl.constexpr = 1 << 30
    lo = BIG
    hi = 0
    f_lo = BIG
    f_hi = -1
    for r0 in range(0, SEQ_Q, CHUNK):
        o_i = r0 + tl.arange(0, CHUNK)
        b_mask = load_mask_tile(MASK, mask_off, o_i=o_i[:, None], o_j=o_j[None, :], stride_mm=stride_mm,
                                stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, MASK_KIND=MASK_KIND,
                                CHECK_KEYS=CHECK_KEYS)
        inside = (o_i < SEQ_Q)[:, None] & (o_j < SEQ_K)[None, :]
        real = (mask_real(b_mask, MASK_KIND) & inside).to(tl.int32)  # [CHUNK, T]
        neutral = (_neutral(b_mask, MASK_KIND) | (inside == 0)).to(tl.int32)
        t_real = tl.max(tl.reshape(tl.max(real, 1), [CT, T]), 1)  # [CT]: over the keys first, as _rows_step
        t_full = tl.min(tl.reshape(tl.min(neutral, 1), [CT, T]), 1) * t_real
        idx = r0 // T + tl.arange(0, CT)
        i_e = idx[:, None] * RT + tl.arange(0, RT)[None, :]  # [CT, RT]
        unreal = tl.min(tl.load(ROWS + (i_bh.to(tl.int64) * n_r + i_e) * 4 + 2, mask=i_e < n_r, other=0), 1) < 0
        needed = (t_real > 0) | unreal
        t_full = tl.where(unreal, 0, t_full)
        lo = tl.minimum(lo, tl.min(tl.where(needed, idx, BIG), 0))
        hi = tl.maximum(hi, tl.max(tl.where(needed, idx + 1, 0), 0))
        f_lo, f_hi = _first_run(t_full, idx, r0 // T, f_lo, f_hi, CT)
    return lo, hi, f_lo, f_hi


@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K"])
def _mask_cols_kernel(MASK, ROWS, COLS, stride_mb, stride_mh, stride_mm, stride_mn, H_S, SEQ_Q, SEQ_K,
                      MASK_KIND: tl.constexpr, CHUNK: tl.constexpr):
    """Grid (cdiv(SEQ_K, MASK_TILE) * Bs * Hs,): one block of MASK_TILE keys of one mask slice; ROWS (the rows
    kernel's result) marks the row blocks holding a row without a real entry (full_hi = -1)."""
    T: tl.constexpr = MASK_TILE
    BIG: tl.constexpr = 1 << 30
    n_c = tl.cdiv(SEQ_K, T)
    n_r = tl.cdiv(SEQ_Q, MASK_ROWS)
    i_c = tl.program_id(0) % n_c
    i_bh = tl.program_id(0) // n_c
    mask_off = (i_bh // H_S).to(tl.int64) * stride_mb + (i_bh % H_S).to(tl.int64) * stride_mh
    o_j = i_c * T + tl.arange(0, T)
    if (i_c + 1) * T <= SEQ_K:  # a whole key block: vector loads
        lo, hi, f_lo, f_hi = _cols_loop(MASK, ROWS, mask_off, o_j, i_bh, n_r, stride_mm, stride_mn, SEQ_Q, SEQ_K,
                                        MASK_KIND=MASK_KIND, CHUNK=CHUNK, CHECK_KEYS=False)
    else:
        lo, hi, f_lo, f_hi = _cols_loop(MASK, ROWS, mask_off, o_j, i_bh, n_r, stride_mm, stride_mn, SEQ_Q, SEQ_K,
                                        MASK_KIND=MASK_KIND, CHUNK=CHUNK, CHECK_KEYS=True)
    lo = tl.where(lo == BIG, 0, lo)  # nothing needed: an empty range
    f_hi = tl.where(f_lo == BIG, lo, f_hi)
    f_lo = tl.where(f_lo == BIG, lo, f_lo)
    p = COLS + (i_bh.to(tl.int64) * n_c + i_c) * 4
    tl.store(p, lo * T)
    tl.store(p + 1, f_lo * T)
    tl.store(p + 2, f_hi * T)
    tl.store(p + 3, hi * T)


def summary_slices(mask4d: torch.Tensor) -> tuple[int, int]:
    """(Bs, Hs): the mask's batch and head extents, 1 along a broadcast (stride-0) dim."""
    B, H = mask4d.shape[:2]
    return (1 if mask4d.stride(0) == 0 else B), (1 if mask4d.stride(1) == 0 else H)


def summary_shapes(mask4d: torch.Tensor) -> tuple[tuple, tuple]:
    """The shapes of mask_summary's rows and cols."""
    B_s, H_s = summary_slices(mask4d)
    Sq, Sk = mask4d.shape[2:]
    rows, tile = int(MASK_ROWS), int(MASK_TILE)
    return (B_s, H_s, (Sq + rows - 1) // rows, 4), (B_s, H_s, (Sk + tile - 1) // tile, 4)


# Note [eager launch path] in kernels/launch.py; a launch's meta: (kernel, the mask's dtype), which fixes MASK_KIND
_ROWS = FastLaunch(_mask_rows_kernel)
_COLS = FastLaunch(_mask_cols_kernel)


def mask_summary(mask4d: torch.Tensor, cols: bool,
                 rows: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(rows, cols or None), compact [Bs, Hs, n, 4] int32 (module docstring) of a mask viewed as [B, H, Sq, Sk].
    rows: the rows summary of this mask made earlier (the eager op's forward), which is then not made again."""
    row_shape, col_shape = summary_shapes(mask4d)
    B_s, H_s, n_r, _ = row_shape
    n_c = col_shape[2]
    Sq, Sk = mask4d.shape[2:]
    ints = (*mask4d.stride(), H_s, Sq, Sk)
    kind = mask_kind(mask4d.dtype)
    if rows is not None:
        if tuple(rows.shape) != row_shape or rows.dtype != torch.int32:
            raise ValueError(f"rows must be the mask's [{', '.join(map(str, row_shape))}] int32 rows summary, got "
                             f"{rows.dtype} {tuple(rows.shape)}")
    else:
        rows = torch.empty(row_shape, device=mask4d.device, dtype=torch.int32)
        if rows.numel():
            _ROWS((n_r * B_s * H_s,), ("rows", mask4d.dtype), (mask4d, rows), ints, (),
                  dict(MASK_KIND=kind, CHUNK=_ROWS_CHUNK), num_warps=4)
    if not cols:
        return rows, None
    col_sum = torch.empty(col_shape, device=mask4d.device, dtype=torch.int32)
    if col_sum.numel() and rows.numel():
        _COLS((n_c * B_s * H_s,), ("cols", mask4d.dtype), (mask4d, rows, col_sum), ints, (),
              dict(MASK_KIND=kind, CHUNK=_COLS_CHUNK), num_warps=8)
    return rows, col_sum
