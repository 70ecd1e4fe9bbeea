"""Tiles of the causal depthwise conv1d kernels, and the geometry a tile resolves to for one call.

The eager launchers (kernels/causal_conv1d.py) and the templates' lowering (lowerings/causal_conv1d_silu.py) both
read this module, so an op launches the same programs eagerly and compiled.

Layouts, the table's second key:
    "bcl"    positions contiguous (x [B, C, L] contiguous): column tiles of block_c channels x block_t positions
    "blc"    channels contiguous (the channel-last view [B, L, C].transpose(1, 2)): row tiles of block_t rows of
             block_c channels; numbers for 2-byte x, fp32 halves block_c (16-byte vectors either way)
    "blc_t"  channels contiguous in x, positions in y or dy: the forward whose y leaves the graph in eager's layout
             (Note [conv output layout] in patterns/conv_output_layout.py) stores tall row tiles (32 rows, 64 bytes of
             a channel at once) through shared memory; the backward reading such a dy (DY_T) keeps one channel a
             thread, so that dy's [block_c, 8] loads and x's rows share a register layout (two channels a thread
             convert between the two through shared memory)

Provenance lines: H200, bf16, GPU microseconds of the kernels alone (medians of interleaved rounds), on
benchmarks/conv.py's four SHAPES in order: B8 C5120 L2048 K4 / B4 C2048 L8192 K4 / B16 C1536 L1024 K4 /
B8 C5120 L2048 K2.  Commands are in benchmarks/diagnostics/: conv_waves.py (programs per SM and the backward's unroll,
each op compiled alone) and conv_tiles.py (tile sweeps of the eager launchers; --autotune: the templates' max-autotune
tables).  Runs differ by up to ~6%; compare numbers of one line only.
"""
from __future__ import annotations

import dataclasses
import functools

import torch

__all__ = ["ConvTile", "TILES", "conv_tile", "conv_autotune_tiles", "ConvGeometry", "conv_geometry", "conv_chunks",
           "num_sms"]


@dataclasses.dataclass(frozen=True)
class ConvTile:
    """One program's tile of the causal conv1d kernels.

    Column tiles ("bcl"): block_c channels x block_t positions held as V columns [block_c, N lanes] with V = 16 bytes
    / element size and N = block_t / V.  Keep N = 32 (block_t = 256 for 2-byte x, 128 for fp32) or 16 so that the
    lane shifts stay inside a warp, and block_c a multiple of num_warps; N is raised to next_pow2(K - 1) when smaller.
    Row tiles ("blc", "blc_t"): block_t rows of block_c channels, block_c / (32 * num_warps) channels a thread (8 =
    one 16-byte vector of bf16).  All powers of two.
    waves: each program loops over tiles along L so that about waves x #SMs programs remain (fewer programs, and in
    the backward fewer dw / dbeta partial rows).
    unroll (backward only): the tile loop's loop_unroll_factor.  2 lets the row tiles' sliding windows move by
    renaming registers instead of copying them at the loop's back edge (channel-last backward template, sm_90: 41 ->
    6 MOVs a tile, benchmarks/diagnostics/conv_template_sass.py; H200: 168.1 -> 151.5 us); it loses on column tiles.
    """
    block_c: int
    block_t: int
    num_warps: int = 4
    waves: int = 4
    unroll: int = 1


# (direction, layout) -> the default tile; one provenance line each (see the module docstring).
TILES = {
    # H200 2026-11-30, conv_waves.py --kinds fwd:bcl: waves 128: 84.5/67.8/26.4; 32: 85.6/71.7/26.7; 8: 85.4/78.0/26.2
    ("fwd", "bcl"): ConvTile(block_c=4, block_t=256, num_warps=4, waves=128),
    # H200 2026-11-30, conv_waves.py --kinds fwd:blc: waves 64: 90.7/72.3/28.1; 32: 95.6/77.9/29.3
    ("fwd", "blc"): ConvTile(block_c=256, block_t=4, num_warps=2, waves=64),
    # H200 2026-11-30, conv_waves.py --kinds fwd:blc_t: waves 512 (a tile a program): 86.7/70.4/27.7; 32: 93.4/78.9/28.3
    ("fwd", "blc_t"): ConvTile(block_c=256, block_t=32, num_warps=4, waves=512),
    # H200 2026-11-30, conv_waves.py --kinds bwd:bcl: waves 4: 144.4/116.1/51.9; 64: 144.5/126.4/58.6
    ("bwd", "bcl"): ConvTile(block_c=4, block_t=256, num_warps=4),
    # H200 2026-12-01, conv_waves.py --kinds bwd:blc: waves 8: 136.5/119.2/46.2/128.6; 32: 146.0/124.1/54.6/147.7
    ("bwd", "blc"): ConvTile(block_c=128, block_t=4, num_warps=2, waves=8, unroll=2),
    # H200 2026-12-01, conv_waves.py --kinds bwd:blc_t: waves 8: 171.0/142.1/57.2/169.0; 64: 173.5/149.2/65.5/164.9
    ("bwd", "blc_t"): ConvTile(block_c=64, block_t=8, num_warps=2, waves=8, unroll=2),
}


def conv_tile(direction: str, layout: str, dtype: torch.dtype, K: int) -> ConvTile:
    """The default tile for a kernel direction ("fwd" / "bwd"), layout ("bcl" / "blc" / "blc_t"), x dtype and
    width K."""
    tile = TILES[(direction, layout)]
    if (direction, layout) == ("bwd", "blc_t"):  # one channel a thread whatever the dtype
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


# ---------------------------------------------------------------------------------------------------------------
# Geometry of one call
# ---------------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ConvGeometry:
    """What a tile resolves to for one call: BC channels x N lanes x V positions (column tiles), or, when `rows`
    (channels contiguous), BC channels x V rows with N = 1."""
    block_c: int
    lanes: int
    vec: int
    num_warps: int
    waves: int
    rows: bool = False
    unroll: int = 1

    @property
    def block_t(self) -> int:
        return self.lanes * self.vec


def _cdiv(a: int, b: int) -> int:
    return -(a // -b)


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def conv_geometry(layout: str, dtype: torch.dtype, K: int, direction: str, config=None) -> ConvGeometry:
    """Resolve the tile for a layout ("bcl", "blc", "blc_t"), x dtype and width K: the default tile (conv_tile),
    overridden by `config` (a ConvTile or a dict of its fields).  (B, C, L): column tiles, V = 16 bytes of x,
    N = block_t / V lanes (N * V >= K - 1: a neighbouring tile holds the look-back / look-ahead).  Channel-last: row
    tiles of block_t rows."""
    tile = conv_tile(direction, layout, dtype, K)
    if isinstance(config, ConvTile):
        tile = config
    elif config is not None:
        tile = dataclasses.replace(tile, **dict(config))
    if layout in ("blc", "blc_t"):
        return ConvGeometry(tile.block_c, 1, tile.block_t, tile.num_warps, tile.waves, rows=True,
                            unroll=tile.unroll)
    vec = 16 // dtype.itemsize
    lanes = max(tile.block_t // vec, _next_pow2(max(K - 1, 1)))
    return ConvGeometry(tile.block_c, lanes, vec, tile.num_warps, tile.waves, unroll=tile.unroll)


def conv_chunks(B: int, C: int, L: int, g: ConvGeometry, num_sms: int) -> tuple[int, int]:
    """(tiles_per_prog, n_chunks): each program loops over tiles along L so that about waves x #SMs programs
    remain (in the backward: few dw / dbeta partial rows, B * n_chunks)."""
    n_tiles = _cdiv(L, g.block_t)
    n_chunks = max(1, min(n_tiles, _cdiv(g.waves * num_sms, B * _cdiv(C, g.block_c))))
    tiles_per_prog = _cdiv(n_tiles, n_chunks)
    return tiles_per_prog, _cdiv(n_tiles, tiles_per_prog)


@functools.lru_cache(maxsize=None)
def num_sms(device_index: int) -> int:
    """The CUDA device's SM count (what `waves` multiplies)."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count
