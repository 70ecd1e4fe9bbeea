"""Tile tables for the attention kernels (eager launchers and Inductor templates), keyed by (dtype, padded head dim).

Pure data: no Inductor imports, so kernels/attention.py can read it for the eager path.
"""
import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class AttnFwdTile:
    """Forward (and the shape of the dQ pass): BLOCK_M query rows per program, BLOCK_N keys per loop step.

    Constraints: BLOCK_M % BLOCK_N == 0 (the causal band starts on a key-tile boundary), both powers of two >= 16
    (tl.dot needs K >= 16).
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


@dataclasses.dataclass(frozen=True)
class AttnBwdTile:
    """Backward: dK/dV programs own BLOCK_N keys and step over BLOCK_M queries; dQ programs own BLOCK_N queries and
    step over BLOCK_M keys (FlexAttention's symmetric pairing).  Constraints: BLOCK_N % BLOCK_M == 0, both powers of
    two >= 16 (tl.dot needs K >= 16).
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


# H200 (torch 2.11 / triton 3.6), B4 H16 S2048 D128 bf16, medians of triton.testing.do_bench, 2026-11-30.
# Forward, non-causal: (128, 64, 8, 3) 446 TFLOP/s eager and 465 as the compiled template; (128, 128, 8, 3) 446;
# (128, 128, 8, 2) 391; (128, 64, 4, 3) 190; (128, 128, 8, 4) exceeds shared memory.  Causal: (64, 64, 4, 3) 364,
# (128, 128, 8, 3) 338, (128, 64, 8, 3) 333, (128, 64, 8, 2) 270 -- smaller tiles waste less of the diagonal band
# and balance the uneven row blocks.  Other head dims follow FlexAttention's sm90 table (torch 2.13
# template_heuristics/triton.py), not measured here.
_CUDA_FWD = {
    (torch.bfloat16, 64): AttnFwdTile(128, 64, 4, 3),
    (torch.bfloat16, 128): AttnFwdTile(128, 64, 8, 3),
    (torch.bfloat16, 256): AttnFwdTile(64, 32, 4, 3),
    (torch.float16, 64): AttnFwdTile(128, 64, 4, 3),
    (torch.float16, 128): AttnFwdTile(128, 64, 8, 3),
    (torch.float16, 256): AttnFwdTile(64, 32, 4, 3),
}
_CUDA_FWD_CAUSAL = {
    (torch.bfloat16, 128): AttnFwdTile(64, 64, 4, 3),
    (torch.float16, 128): AttnFwdTile(64, 64, 4, 3),
}
# Backward (one launch, dK/dV and dQ programs), non-causal: the compiled template at (64, 128, 8, 3) gives 429
# TFLOP/s forward+backward (~416 backward alone).  The eager kernel, whose lengths and strides are runtime values,
# prefers two stages: (64, 128, 8, 2) 361, (64, 128, 8, 3) 319, (32, 128, 4, 3) 158, (64, 128, 4, 3) 132.
_CUDA_BWD = {
    (torch.bfloat16, 64): AttnBwdTile(64, 64, 4, 3),
    (torch.bfloat16, 128): AttnBwdTile(64, 128, 8, 3),
    (torch.bfloat16, 256): AttnBwdTile(32, 64, 4, 2),
    (torch.float16, 64): AttnBwdTile(64, 64, 4, 3),
    (torch.float16, 128): AttnBwdTile(64, 128, 8, 3),
    (torch.float16, 256): AttnBwdTile(32, 64, 4, 2),
}
_EAGER_BWD_STAGES = {128: 2}
# fp32 runs IEEE fp32 dots on the FMA units: small tiles keep registers in bounds.
_CUDA_FP32_FWD = AttnFwdTile(64, 32, 4, 2)
_CUDA_FP32_BWD = AttnBwdTile(32, 64, 4, 1)
# The CPU interpreter's cost grows with the program count, and tiles smaller than the test lengths exercise the
# causal band and ragged-end paths.
_INTERPRETER_FWD = AttnFwdTile(32, 16, 4, 1)
_INTERPRETER_BWD = AttnBwdTile(16, 32, 4, 1)


def _bucket(head_dim: int) -> int:
    return max(64, 1 << (max(head_dim, 1) - 1).bit_length())


def attn_fwd_tile(dtype: torch.dtype, head_dim: int, device: str, causal: bool = False) -> AttnFwdTile:
    """Default forward tile for `device` ("cuda", or "interpreter" for TRITON_INTERPRET=1)."""
    if device != "cuda":
        return _INTERPRETER_FWD
    if dtype == torch.float32:
        return _CUDA_FP32_FWD
    key = (dtype, _bucket(head_dim))
    if causal and key in _CUDA_FWD_CAUSAL:
        return _CUDA_FWD_CAUSAL[key]
    return _CUDA_FWD.get(key, AttnFwdTile(64, 32, 4, 2))


def attn_bwd_tile(dtype: torch.dtype, head_dim: int, device: str, eager: bool = False) -> AttnBwdTile:
    """Default backward tile (see AttnBwdTile for how the two kinds of program use it); `eager` for the launcher,
    whose kernel sees runtime lengths and strides (the templates see Inductor's static ones)."""
    if device != "cuda":
        return _INTERPRETER_BWD
    if dtype == torch.float32:
        return _CUDA_FP32_BWD
    tile = _CUDA_BWD.get((dtype, _bucket(head_dim)), AttnBwdTile(32, 64, 4, 1))
    if eager and _bucket(head_dim) in _EAGER_BWD_STAGES:
        tile = dataclasses.replace(tile, num_stages=_EAGER_BWD_STAGES[_bucket(head_dim)])
    return tile


def attn_fwd_autotune_tiles(dtype: torch.dtype, head_dim: int, causal: bool = False) -> list[AttnFwdTile]:
    """Candidates for max-autotune, the default first (fp32 keeps its one small tile)."""
    default = attn_fwd_tile(dtype, head_dim, "cuda", causal)
    extra = [AttnFwdTile(128, 64, 8, 3), AttnFwdTile(128, 128, 8, 3), AttnFwdTile(64, 64, 4, 3)]
    if dtype == torch.float32 or head_dim > 128:
        return [default]
    return [default] + [t for t in extra if t != default]


def attn_bwd_autotune_tiles(dtype: torch.dtype, head_dim: int) -> list[AttnBwdTile]:
    default = attn_bwd_tile(dtype, head_dim, "cuda")
    extra = [AttnBwdTile(64, 128, 8, 2), AttnBwdTile(64, 64, 4, 3), AttnBwdTile(32, 128, 8, 3)]
    if dtype == torch.float32 or head_dim > 128:
        return [default]
    return [default] + [t for t in extra if t != default]
