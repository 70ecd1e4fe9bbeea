"""Tile tables of the causal depthwise conv1d kernels (eager launchers and Inductor templates).

Pure data: no Inductor imports, so the eager launchers can read it too.
"""
from __future__ import annotations

import dataclasses

import torch

__all__ = ["ConvTile", "conv_tile", "conv_autotune_tiles"]


@dataclasses.dataclass(frozen=True)
class ConvTile:
    """One program's tile of the causal conv1d kernels.

    Positions contiguous ((B, C, L)): conv_math's column tiles, block_c channels x block_t positions held as V
    columns [block_c, N lanes] with V = 16 bytes / element size and N = block_t / V. Keep N = 32 (block_t = 256
    for 2-byte x, 128 for fp32) or 16 so that the lane shifts stay inside a warp, and block_c a multiple of
    num_warps; N is raised to next_pow2(K - 1) when smaller.
    Channels contiguous (the channel-last view): row tiles, block_t in (1, 2, 4, 8) rows of block_c channels;
    block_c / (32 * num_warps) channels a thread (8 = one 16-byte vector of bf16).
    Powers of two. waves: each program loops over tiles along L so that about waves x #SMs programs remain (fewer
    programs, and in the backward fewer dw / dbeta partial rows). unroll (backward only): the tile loop's
    loop_unroll_factor; 2 lets the row tiles' sliding windows move by renaming registers instead of copying them
    at the loop's back edge (the channel-last backward template, sm_90 offline by benchmarks/diagnostics/conv_template_sass.py:
    281 -> 243.5 instructions a tile, 41 -> 6 MOVs, registers 72 -> 80).
    """
    block_c: int
    block_t: int
    num_warps: int = 4
    waves: int = 4
    unroll: int = 1


# Keyed by (direction, layout); layout "bcl": positions contiguous (column tiles), "blc": channels contiguous (row
# tiles: block_t rows of block_c channels, the numbers for 2-byte x; fp32 halves block_c, keeping 16-byte vectors).
# Column-tile numbers serve every dtype (block_t is set to 32 lanes x 16 bytes) and every K <= 33.
# Timed on the H200 (2026-11-30, bf16, B8 C5120 L2048 K4, eager launchers, medians; runs differ by ~5-10%), with
# neighbouring tiles carried through the loop (no edge loads):
#   columns, forward: 4 channels 4 warps 91 us at waves 8 (106 at waves 4), 8 channels 96 us; backward: 4 channels
#   193-194 us at 4 warps (waves 2..8) and at 2 warps, 2 channels 271 us, 8 channels 198 us.
#   rows, forward (channels a thread = block_c / 32 / num_warps): 4 channels x 4 rows, 4 warps: 106 / 115 / 102 / 98 us
#   at waves 4 / 8 / 16 / 32; 8 channels 118-136 us; 8 rows 110 us.  Fifth session: 106.0 / 102.3 / 98.2 us at
#   waves 4 / 16 / 32 (waves 32 also ahead of 16 on B4 C2048 L8192 and B16 C1536 L1024, behind on the K2 shape); the
#   compiled template (max-autotune tables, two runs) prefers smaller programs with the same 4 channels a thread:
#   256 channels x 4 rows, 2 warps, waves 32: 94.8 / 95.7 us against 99.3 / 99.6 for 512 x 4, 4 warps at waves 32
#   and 96.3 / 96.4 at waves 16 (B4 C2048 L8192: 80.9 vs 78.6 us, and 75.5 at waves 64 -- within the spread between
#   runs).  The eager launcher reads the same table: 95 us of GPU at 256 x 4 / 2 warps / waves 32 in conv.py, as at
#   the old 512 x 4 / 4 warps / waves 16.
#   Backward: 4 channels x 4 rows, 2 warps, waves 4: 242 us; waves 2 / 16: 326 / 378 us; 8 rows or 8 channels spill
#   or run at 255 registers (320+ us).  Tenth session, with conv_math.sigmoid's FAST path (32 instead of 40 loop
#   instructions an element): 2 channels a thread is ahead, with twice the programs -- 95 registers instead of 168
#   (sm_90 offline) leave more warps resident to hide the loads' latency.  Template (max-autotune table, 1280
#   programs): 128 x 4, 2 warps 164.8 us; 128 x 4, 1 warp 179.8; 64 x 8, 1 warp 189.8; 128 x 8 193.7; the old
#   256 x 4 (640 programs) 195.0; 512 x 4 208.5.  128 x 4 at 640 programs (waves 4) lost 36 us in conv.py.  Eager
#   sweep: 128 x 4 waves 8 220.0 us; 128 x 8 224.9; 64 x 8, 1 warp, waves 8 226.8; 256 x 4 waves 4 235.6; 128 x 4
#   waves 4 268.4.  Columns, backward with FAST: template 141.3 us (was ~168), eager 162 us.
# "blc_t": channels contiguous in x, positions contiguous in y (the forward's output where it leaves a graph, Note
# [conv output layout] in patterns/causal_conv1d_silu.py): tall row tiles, each thread storing block_t positions of
# its channels as one run (64 bytes of bf16), through shared memory.  H200 (max-autotune table, B8 C5120 L2048 K4):
# 256 x 32 rows, 4 warps 105.8 us; 128 x 32, 2 warps 106.7; 64 x 32, 2 warps 112.3 (waves 32: 114.4); 128 x 32,
# 4 warps 115.7; 64 x 64 117.6; 128 x 64 125.0; 16 rows 137.5 (128) / 158.5 (64) -- a transposing copy, 76% of the
# device copy against 86% for y in x's layout.  Tenth session, one channel a thread (its rows stored as one run, no
# shared memory): 8 rows 470-490 us (64 / 128 / 32 channels, waves 8-64; a 16-byte run is half a 32-byte sector,
# likely the cause), 16 rows 133-146 us, against 107.8 for the 32-row default in the same run.
# Eleventh session (ops compiled alone, GPU us, medians of 7 interleaved rounds; B8 C5120 L2048 / B4 C2048 L8192 /
# B16 C1536 L1024, K4), after the forward's next-tile loads stopped at the chunk's end (they read the next chunk's
# rows, a fifth of this forward's DRAM reads by ncu):
#   "blc_t" forward, 256 x 32 rows, 4 warps, waves 16 / 32 / 64 / 512: 100.3 / 93.4 / 98.8 / 86.7, 78.8 / 78.9 / 70.6
#   / 70.4, 32.0 / 28.3 / 28.0 / 27.7 -- one tile a program is best everywhere (waves 512 gives that up to
#   B * C / 256 * L / 32 = 67584 tiles): every row of the window is loaded at once, and 128 registers a thread allow
#   only 4 programs an SM, which a loop's one-tile prefetch does not make up for.  93 / 92 / 87% of the copy.
#   "blc" forward, waves 32 / 64 / 128: 95.6 / 90.7 / 86.5, 77.9 / 72.3 / 72.0, 29.3 / 28.1 / 29.9.
#   "blc" backward, waves 8 / 16 / 32 / 64: 172.5 / 188.3 / 185.1 / 186.1, 154.6 / 158.5 / 140.0 / 142.9, 60.6 / 67.3
#   / 63.6 / 71.8, and (K2) 161.2 / 138.2 / 142.0 / 142.6 -- kept at 8 (the first shape's).
#   "blc_t" backward, waves 8 / 16 / 32 / 64 / 128: 200.8 / 204.0 / 187-199 / 187.5 / 186.9, 176.5 / 173.8 / 150.0 /
#   153.2 / 153.1, 68.6 / 70.0 / 64.1 / 68.1 / 82.3, (K2) 199.4 / 216.5 / 196.7 / 185.1 / 178.1 -- at waves 8 its
#   1280 programs of 2 warps filled 0.6 of the GPU's 16 programs an SM (ncu: 28% occupancy, 60% of the warps' time
#   waiting on loads).  The same configuration moved by up to 6% between device calls (187 / 199), not within one.
#   (B, C, L) forward, waves 8 / 32 / 128: 85.4 / 85.6 / 84.5, 78.0 / 71.7 / 67.8, 26.2 / 26.7 / 26.4, (K2) 85.1 /
#   85.2 / 84.6 -- at waves 8, B4 C2048 L8192's 2048 programs were whole rows (32 tiles), about two waves with a
#   long tail.  Backward, waves 4 / 16 / 64: 144.4 / 144.7 / 144.5, 116.1 / 116.3 / 126.4, 51.9 / 55.8 / 58.6,
#   130.6 / 130.5 / 130.1 -- kept at 4.
_TILES = {
    ("fwd", "bcl"): ConvTile(block_c=4, block_t=256, num_warps=4, waves=128),
    ("fwd", "blc"): ConvTile(block_c=256, block_t=4, num_warps=2, waves=64),
    ("fwd", "blc_t"): ConvTile(block_c=256, block_t=32, num_warps=4, waves=512),  # one tile a program
    # Thirteenth session: loading the column tiles two ahead as well (raw tiles carried through the loop, 68
    # registers) lost: 142.0 / 114.9 / 50.4 / 126.2 -> 147.3 / 116.0 / 55.6 / 130.7 us (one call, two runs each).
    ("bwd", "bcl"): ConvTile(block_c=4, block_t=256, num_warps=4),
    # Twelfth session (H200, backward templates alone, one call, medians of 7 rounds, B8 C5120 L2048 / B4 C2048 L8192
    # / B16 C1536 L1024 / B8 C5120 L2048 K2, GPU us): unroll 1 -> 2: 168.1 / 149.0 / 59.4 / 158.3 -> 151.5 / 138.0 /
    # 53.2 / 134.5.  The same unrolling lost on the column tiles (139.6 / 114.5 / 49.8 / 127.0 -> 146.0 / 117.8 / 49.0
    # / 132.3): kept at 1.  On "blc_t" it was mixed at waves 32 and wins with more programs (below).
    # Thirteenth session: the row tiles' next rows are loaded two tiles ahead (conv_math Note [row prefetch]; one
    # call, medians of 5 rounds, old -> new): 152.1 / 136.5-139.0 / 53.1 / 134.1-142.2 -> 136.5 / 119.2 / 46.2 / 128.6
    # at waves 8 (12 / 32: 166.3 / 146.0, 133.4 / 124.1, 52.7 / 54.6, 136.5 / 147.7).
    ("bwd", "blc"): ConvTile(block_c=128, block_t=4, num_warps=2, waves=8, unroll=2),
    # channel-last x, dy laid out (B, C, L) (DY_T: the gradient of a y that left the graph in eager's layout): one
    # channel a thread, so that dy's [BC, 8] block loads (16 bytes a channel) and x's rows share a layout -- with
    # two channels a thread Triton converts between them through shared memory (26 barriers a step, sm_90 offline).
    # H200, B8 C5120 L2048 K4 (max-autotune table): 64 x 8, 2 warps 200.0 us (with the dw / dbeta sum); 128 x 8,
    # 4 warps 200.1; 32 x 8, 1 warp 206.8; 64 x 4 253.1; 128 x 4, 2 warps 313.7; against 256.7 for a copy of dy
    # into x's layout and the "blc" tile.  16 rows (32 bytes a channel) bring back conversions through shared memory
    # (18 barriers a step offline) and were not timed.
    # Twelfth session, unroll x waves (one call, medians of 5 rounds, the four shapes, GPU us): unroll 1 at waves 16 /
    # 32 / 64: 207.2 / 186.3 / 182.6, 176.0 / 156.3 / 164.1, 67.8 / 63.2 / 66.2, 228.4 / 193.0 / 179.1; unroll 2 at
    # 16 / 32 / 64 / 128: 206.8 / 189.1 / 179.1 / 177.9, 169.5 / 164.6 / 149.8 / 146.0, 63.3 / 60.0 / 63.7 / 72.8,
    # 208.4 / 188.1 / 175.0 / 171.8 -- unroll 2 at waves 64: 5% less in all (B16 C1536 L1024 +0.5 us).
    # Thirteenth session, two tiles in flight (same call as "blc"): waves 64 175.1-180.4 / 148.9-156.7 / 63.7 / 174.0
    # -> 173.5 / 149.2 / 65.5 / 164.9; waves 8 / 12 / 32 with it: 171.0 / 197.2 / 177.5, 142.1 / 166.2 / 148.8, 57.2 /
    # 66.8 / 60.8, 169.0 / 189.1 / 171.2 -- waves 8 (every program resident at once, ~95 registers a thread).
    ("bwd", "blc_t"): ConvTile(block_c=64, block_t=8, num_warps=2, waves=8, unroll=2),
}


def conv_tile(direction: str, layout: str, dtype: torch.dtype, K: int) -> ConvTile:
    """The default tile for a kernel direction ("fwd" / "bwd"), layout ("bcl" / "blc", or "blc_t" for a forward
    whose y is laid out (B, C, L) while x is channel-last), x dtype and width K."""
    tile = _TILES[(direction, layout)]
    if (direction, layout) == ("bwd", "blc_t"):  # one channel a thread whatever the dtype (see the table)
        return tile
    if layout in ("blc", "blc_t"):
        return dataclasses.replace(tile, block_c=tile.block_c * 2 // dtype.itemsize) if dtype.itemsize > 2 else tile
    return dataclasses.replace(tile, block_t=32 * (16 // dtype.itemsize))  # 32 lanes of 16 bytes


def conv_autotune_tiles(direction: str, layout: str, dtype: torch.dtype, K: int) -> list[ConvTile]:
    """Tiles tried under mode="max-autotune": the default first, then neighbours in channels per program, positions
    per tile, warps and programs per SM."""
    base = conv_tile(direction, layout, dtype, K)
    if (direction, layout) == ("bwd", "blc_t"):
        variants = [dict(block_c=base.block_c * 2, num_warps=base.num_warps * 2),
                    dict(block_c=base.block_c // 2, num_warps=max(base.num_warps // 2, 1)), dict(block_t=4),
                    dict(block_c=base.block_c * 2, block_t=4)]
    elif layout == "blc_t":
        variants = [dict(block_c=base.block_c // 2, num_warps=max(base.num_warps // 2, 1)),
                    dict(block_c=base.block_c // 4, num_warps=max(base.num_warps // 2, 1)), dict(waves=32)]
    elif layout == "blc":
        variants = [dict(block_t=4), dict(block_c=base.block_c // 2, num_warps=max(base.num_warps // 2, 1)),
                    dict(block_c=base.block_c * 2, num_warps=base.num_warps * 2), dict(waves=base.waves * 2)]
    else:
        variants = [dict(block_c=base.block_c // 2), dict(block_c=base.block_c * 2),
                    dict(block_c=base.block_c * 2, num_warps=8), dict(waves=base.waves * 2),
                    dict(block_t=base.block_t // 2)]
    if direction == "bwd":
        # The backward's choices share the default tile's chunk count (one buffer of dw / dbeta partial rows, see
        # lowerings/causal_conv1d_silu.py), so a change of waves alone would repeat the default.
        variants = [v for v in variants if set(v) != {"waves"}] + [dict(unroll=3 - base.unroll)]  # 1 <-> 2
        if layout == "blc":
            variants += [dict(block_c=base.block_c * 2), dict(block_t=base.block_t * 2),
                         dict(block_c=base.block_c // 2, block_t=base.block_t * 2,
                              num_warps=max(base.num_warps // 2, 1))]
    tiles = [base]
    for change in variants:
        tile = dataclasses.replace(base, **change)
        if tile.block_c >= tile.num_warps and tile not in tiles:
            tiles.append(tile)
    return tiles
