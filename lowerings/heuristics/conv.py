"""Tile tables of the causal depthwise conv1d kernels (eager launchers and Inductor templates).

Pure data: no Inductor imports, so the eager launchers can read it too.
"""
from __future__ import annotations

import dataclasses

import torch

__all__ = ["ConvTile", "conv_tile", "conv_autotune_tiles"]


@dataclasses.dataclass(frozen=True)
class ConvTile:
    """One program's tile: block_c channels x block_t positions (both powers of two).

    x_gather: taps x~[t - d] come from the loaded tile by tl.gather (costs a left halo of K - 1 positions, rounded
        up to 8 when positions are contiguous) instead of shifted loads served from cache.
    d_gather: (backward) the shifted delta[s + j] that dx needs come from tl.gather (costs a right halo) instead of
        recomputing delta (K sigmoids an element instead of one).
    waves: (backward) the launcher loops each program over enough tiles along L to leave about waves x #SMs
        programs, so that few dw / dbeta partial rows are written.
    The launcher widens block_t to more than twice the halos when needed.
    """
    block_c: int
    block_t: int
    num_warps: int = 4
    x_gather: bool = False
    d_gather: bool = True
    waves: int = 4


# Keyed by (direction, layout, K <= 4 or wider); layout "bcl": positions contiguous, "blc": channels contiguous.
# First guesses (2026-11-30, not yet measured): vectorise along the contiguous axis, ~4K elements a program.
_TILES = {
    ("fwd", "bcl", "narrow"): ConvTile(block_c=4, block_t=1024, num_warps=4),
    ("fwd", "blc", "narrow"): ConvTile(block_c=128, block_t=32, num_warps=4),
    ("bwd", "bcl", "narrow"): ConvTile(block_c=4, block_t=512, num_warps=4, d_gather=True),
    ("bwd", "blc", "narrow"): ConvTile(block_c=128, block_t=64, num_warps=4, d_gather=True),
}


def conv_tile(direction: str, layout: str, dtype: torch.dtype, K: int) -> ConvTile:
    """The default tile for a kernel direction ("fwd" / "bwd"), layout ("bcl" / "blc"), x dtype and width K."""
    tile = _TILES[(direction, layout, "narrow")]
    if K > 8:  # wide filters: keep the halos a small fraction of the tile
        tile = dataclasses.replace(tile, block_t=max(tile.block_t, 16 * K))
    return tile


def conv_autotune_tiles(direction: str, layout: str, dtype: torch.dtype, K: int) -> list[ConvTile]:
    """Tiles tried under mode="max-autotune": the default first, then neighbours."""
    base = conv_tile(direction, layout, dtype, K)
    return [base]
