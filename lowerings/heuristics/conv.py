"""Tile tables of the causal depthwise conv1d kernels (eager launchers and Inductor templates).

Pure data: no Inductor imports, so the eager launchers can read it too.
"""
from __future__ import annotations

import dataclasses

import torch

__all__ = ["ConvTile", "conv_tile", "conv_autotune_tiles"]


@dataclasses.dataclass(frozen=True)
class ConvTile:
    """One program's tile of the causal conv1d kernels (conv_math's column tiles): block_c channels x block_t
    positions, held as V columns [block_c, N lanes] with V = 16 bytes / element size and N = block_t / V.

    Keep N = 32 (block_t = 256 for 2-byte x, 128 for fp32) so that the lane shifts stay inside a warp, and
    block_c a multiple of num_warps. Powers of two; N is raised to next_pow2(K - 1) when smaller.
    waves: each program loops over tiles along L so that about waves x #SMs programs remain (fewer programs, and
    in the backward fewer dw / dbeta partial rows).
    """
    block_c: int
    block_t: int
    num_warps: int = 4
    waves: int = 4


# Keyed by (direction, layout); layout "bcl": positions contiguous, "blc": channels contiguous. The same numbers
# serve every dtype (block_t is set to 32 lanes x 16 bytes) and every K <= 33.
# Where they come from (2026-11-30, helper H1): not timed yet. They are the tiles that compiled for sm_90 (Triton
# 3.6 ptxas, offline) without spills and with the fewest registers for 4 warps, bf16, K = 4: forward 8 channels
# (56 registers), backward 4 channels (64) for (B, C, L); 8 channels (56 / 128) for the channel-last view, whose tile
# is transposed through 4 KB of shared memory. Re-time them with the device sweep named in the H1 report.
_TILES = {
    ("fwd", "bcl"): ConvTile(block_c=8, block_t=256, num_warps=4),
    ("fwd", "blc"): ConvTile(block_c=8, block_t=256, num_warps=4),
    ("bwd", "bcl"): ConvTile(block_c=4, block_t=256, num_warps=4),
    ("bwd", "blc"): ConvTile(block_c=8, block_t=256, num_warps=4),
}


def conv_tile(direction: str, layout: str, dtype: torch.dtype, K: int) -> ConvTile:
    """The default tile for a kernel direction ("fwd" / "bwd"), layout ("bcl" / "blc"), x dtype and width K."""
    tile = _TILES[(direction, layout)]
    tile = dataclasses.replace(tile, block_t=32 * (16 // dtype.itemsize))  # 32 lanes of 16 bytes
    return tile


def conv_autotune_tiles(direction: str, layout: str, dtype: torch.dtype, K: int) -> list[ConvTile]:
    """Tiles tried under mode="max-autotune": the default first, then neighbours in channels per program, warps
    and (backward) programs per SM."""
    base = conv_tile(direction, layout, dtype, K)
    variants = [dict(block_c=base.block_c // 2), dict(block_c=base.block_c * 2),
                dict(block_c=base.block_c * 2, num_warps=8), dict(waves=base.waves * 2)]
    if direction == "bwd":
        variants.append(dict(waves=max(base.waves // 2, 1)))
    tiles = [base]
    for change in variants:
        tile = dataclasses.replace(base, **change)
        if tile.block_c >= tile.num_warps and tile not in tiles:
            tiles.append(tile)
    return tiles
