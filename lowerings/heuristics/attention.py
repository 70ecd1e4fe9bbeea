"""Tile tables for the attention kernels (eager launchers and Inductor templates), keyed by (dtype, padded head dim).

Pure data: no Inductor imports, so kernels/attention.py can read it for the eager path.
"""
import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class AttnFwdTile:
    """Forward (and the shape of the dQ pass): BLOCK_M query rows per program, BLOCK_N keys per loop step.

    Constraints: BLOCK_M % BLOCK_N == 0 (the causal band starts on a key-tile boundary), both powers of two >= 16
    (tl.dot needs K >= 16).  pair (causal only): each program runs two row blocks, n - 1 - u then u, so that every
    program visits n + 1 key tiles (lowerings/attention.py's CAUSAL_PAIR).
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    pair: bool = False


@dataclasses.dataclass(frozen=True)
class AttnBwdTile:
    """Backward: dK/dV programs own BLOCK_N keys and step over BLOCK_M queries; dQ programs own BLOCK_N queries and
    step over BLOCK_M keys (FlexAttention's symmetric pairing).  Constraints: BLOCK_N % BLOCK_M == 0, both powers of
    two >= 16 (tl.dot needs K >= 16).  split: dK and dV of a key block in two programs, one accumulator each
    (Note [split dK/dV] in kernels/attn_math.py).
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    split: bool = False


# Keyed by head dim (padded, see _bucket) for the 16-bit dtypes: fp16 and bf16 run the same tensor-core code, timed in
# bf16.  H200 (torch 2.11 / triton 3.6), B4 H16 S2048 D128 bf16, medians of triton.testing.do_bench, 2026-11-30.
# Forward, non-causal: (128, 64, 8, 3) 446 TFLOP/s eager and 465 as the compiled template; (128, 128, 8, 3) 446;
# (128, 128, 8, 2) 391; (128, 64, 4, 3) 190; (128, 128, 8, 4) exceeds shared memory.  Causal: (64, 64, 4, 3) 364,
# (128, 128, 8, 3) 338, (128, 64, 8, 3) 333, (128, 64, 8, 2) 270 -- smaller tiles waste less of the diagonal band
# and balance the uneven row blocks.  Other head dims follow FlexAttention's sm90 table (torch 2.13
# template_heuristics/triton.py), not measured here.
_CUDA_FWD = {
    64: AttnFwdTile(128, 64, 4, 3),
    128: AttnFwdTile(128, 64, 8, 3),
    # H200, 2026-12-03, B2 H16/8 S4096 D256 causal softcap 50 bf16, eager forward ms p=0 / 0.1
    # (benchmarks/diagnostics/attention_bwd_tiles.py --fwd-tiles): (128, 64, 8, 2) 0.70 / 0.76; (64, 32, 4, 2) 0.79 /
    # 0.96; (128, 32, 8, 2) 0.93 / 1.03; (64, 32, 4, 3) 0.99 / 1.04; (64, 64, 4, 2) 1.00 / 1.09; (64, 64, 8, 2) 1.25.
    256: AttnFwdTile(128, 64, 8, 2),
}
# Causal head dim 64 (max-autotune sweep of the compiled template, third session, B8 H16 S1024 D64): (64, 64, 4, 3)
# 0.063 ms, (64, 64, 4, 4) 0.068, (128, 64, 4, 3) 0.070, (128, 128, 8, 3) 0.088.  With causal pairs (fifteenth
# session, profiler, same shape): (128, 64, 4, 3) paired 59.9 us, (128, 64, 8, 3) paired 63.1, (64, 64, 4, 3) 65.5
# alone and 71.4 paired.
_CUDA_FWD_CAUSAL = {
    64: AttnFwdTile(128, 64, 4, 3, pair=True),
    128: AttnFwdTile(64, 64, 4, 3),
}
# With dropout, head dim 128 (same sweep at B4 H16 S2048, p = 0.1): non-causal (64, 64, 4, 3) 0.333 ms,
# (128, 64, 8, 4) 0.343, (128, 64, 8, 3) 0.344, (128, 128, 8, 3) 0.351; causal (64, 64, 4, 3) 0.209, (64, 32, 4, 3)
# 0.225, (128, 64, 8, 3) 0.236.  The hash's integer work favours the smaller tile.  Head dim 64 keeps its default:
# (128, 64, 4, 3) 0.120 ms, (64, 64, 4, 3) 0.125.
_CUDA_FWD_DROPOUT = {
    128: AttnFwdTile(64, 64, 4, 3),
}
# Backward (one launch, dK/dV and dQ programs), non-causal: the compiled template at (64, 128, 8, 3) gives 429
# TFLOP/s forward+backward (~416 backward alone).  The eager kernel, whose lengths and strides are runtime values,
# prefers two stages: (64, 128, 8, 2) 361, (64, 128, 8, 3) 319, (32, 128, 4, 3) 158, (64, 128, 4, 3) 132.
# Head dim 256.  H200, 2026-12-03, B2 H16/8 S4096 D256 causal softcap 50 bf16, eager backward ms p=0 / 0.1, one run
# (benchmarks/diagnostics/attention_bwd_tiles.py): (64, 64, 8, 2) 4.02 / 4.54; split (64, 64, 8, 2) (Note [split
# dK/dV]) 4.92 / 5.40; (32, 64, 8, 2) 5.08 / 5.36; (32, 64, 8, 3) 6.34 / 6.75; (16, 64, 8, 2) 7.72 / 7.88.
_CUDA_BWD = {
    64: AttnBwdTile(64, 64, 4, 3),
    128: AttnBwdTile(64, 128, 8, 3),
    256: AttnBwdTile(64, 64, 8, 2),
}
# max-autotune candidates at head dim 256 (the head-dim-128 ones exceed shared memory there), after the default.
_CUDA_BWD_AUTOTUNE_256 = [AttnBwdTile(64, 64, 8, 2, split=True), AttnBwdTile(32, 64, 8, 2)]
# Causal or dropout, head dim 128 (same sweeps): non-causal p=0.1 (64, 64, 4, 2) 0.936 ms, (32, 64, 4, 3) 1.001,
# (64, 128, 8, 3) 1.012, (64, 128, 8, 2) 1.074; causal p=0 (128, 128, 8, 2) 0.578, (64, 64, 4, 2) 0.583,
# (64, 128, 8, 3) 0.595; causal p=0.1 (64, 64, 4, 2) 0.690, (64, 128, 8, 3) 0.698.  Three stages of (64, 64, 4)
# lose there (1.31 / 0.89 / 1.00).  Head dim 64, causal: (32, 64, 4, 3) 0.184 ms, (64, 64, 4, 3) 0.201,
# (64, 64, 4, 2) 0.215 (p=0.1: 0.222 / 0.234 / 0.241); non-causal keeps (64, 64, 4, 3) with or without dropout
# (0.249 ms p=0, 0.334 p=0.1, the best of ten tiles both times).
# Causal, re-timed with the masked tiles first (Note [masked tiles first], ungrouped backward; max-autotune tables,
# H200): D128 S2048 p=0 (64, 64, 4, 2) 0.443 ms, (32, 64, 4, 3) 0.492, (64, 128, 8, 3) 0.516, (128, 128, 8, 2) 0.568;
# S8192 p=0.1 (64, 64, 4, 2) 3.614, (64, 128, 8, 3) 3.839, (32, 64, 4, 3) 3.933; GQA 32/8 (32, 64, 4, 3) 0.998,
# (64, 64, 4, 2) 1.006; D64 S1024 (64, 64, 4, 3) 0.168, (64, 64, 4, 2) 0.172, (32, 64, 4, 3) 0.182.  (64, 64, 8, 2),
# spill-free offline, ran 2x slower (S8192 8.3 ms) and left the candidates.
_CUDA_BWD_CAUSAL = {
    64: AttnBwdTile(64, 64, 4, 3),
    128: AttnBwdTile(64, 64, 4, 2),
}
_CUDA_BWD_DROPOUT = {
    128: AttnBwdTile(64, 64, 4, 2),
}
_EAGER_BWD_STAGES = {128: 2}
# fp32 runs IEEE fp32 dots on the FMA units: small tiles keep registers in bounds.
_CUDA_FP32_FWD = AttnFwdTile(64, 32, 4, 2)
_CUDA_FP32_BWD = AttnBwdTile(32, 64, 4, 1)
# The CPU interpreter's cost grows with the program count, and tiles smaller than the test lengths exercise the
# causal band and ragged-end paths.
_INTERPRETER_FWD = AttnFwdTile(32, 16, 4, 1)
_INTERPRETER_BWD = AttnBwdTile(16, 32, 4, 1)


_HALF = (torch.float16, torch.bfloat16)


def _bucket(head_dim: int) -> int:
    return max(64, 1 << (max(head_dim, 1) - 1).bit_length())


def attn_fwd_tile(dtype: torch.dtype, head_dim: int, device: str, causal: bool = False,
                  dropout: bool = False) -> AttnFwdTile:
    """Default forward tile for `device` ("cuda", or "interpreter" for TRITON_INTERPRET=1)."""
    if device != "cuda":
        return _INTERPRETER_FWD
    if dtype == torch.float32:
        return _CUDA_FP32_FWD
    key = _bucket(head_dim) if dtype in _HALF else None
    if causal and key in _CUDA_FWD_CAUSAL:
        return _CUDA_FWD_CAUSAL[key]
    if dropout and key in _CUDA_FWD_DROPOUT:
        return _CUDA_FWD_DROPOUT[key]
    return _CUDA_FWD.get(key, AttnFwdTile(64, 32, 4, 2))


def attn_bwd_tile(dtype: torch.dtype, head_dim: int, device: str, eager: bool = False, causal: bool = False,
                  dropout: bool = False) -> AttnBwdTile:
    """Default backward tile (see AttnBwdTile for how the two kinds of program use it); `eager` for the launcher,
    whose kernel sees runtime lengths and strides (the templates see Inductor's static ones)."""
    if device != "cuda":
        return _INTERPRETER_BWD
    if dtype == torch.float32:
        return _CUDA_FP32_BWD
    key = _bucket(head_dim) if dtype in _HALF else None
    if causal and key in _CUDA_BWD_CAUSAL:
        return _CUDA_BWD_CAUSAL[key]
    if dropout and key in _CUDA_BWD_DROPOUT:
        return _CUDA_BWD_DROPOUT[key]
    tile = _CUDA_BWD.get(key, AttnBwdTile(32, 64, 4, 1))
    if eager and _bucket(head_dim) in _EAGER_BWD_STAGES:
        tile = dataclasses.replace(tile, num_stages=_EAGER_BWD_STAGES[_bucket(head_dim)])
    return tile


def attn_fwd_autotune_tiles(dtype: torch.dtype, head_dim: int, causal: bool = False,
                            dropout: bool = False) -> list[AttnFwdTile]:
    """Candidates for max-autotune, the default first (fp32 keeps its one small tile)."""
    default = attn_fwd_tile(dtype, head_dim, "cuda", causal, dropout)
    extra = [AttnFwdTile(128, 64, 8, 3), AttnFwdTile(128, 128, 8, 3), AttnFwdTile(64, 64, 4, 3)]
    if dtype == torch.float32 or head_dim > 128:
        return [default]
    return [default] + [t for t in extra if t != default]


def attn_bwd_autotune_tiles(dtype: torch.dtype, head_dim: int, causal: bool = False,
                            dropout: bool = False) -> list[AttnBwdTile]:
    default = attn_bwd_tile(dtype, head_dim, "cuda", causal=causal, dropout=dropout)
    extra = [AttnBwdTile(64, 128, 8, 3), AttnBwdTile(64, 64, 4, 3), AttnBwdTile(64, 64, 4, 2),
             AttnBwdTile(64, 128, 8, 2), AttnBwdTile(128, 128, 8, 2), AttnBwdTile(32, 64, 4, 3)]
    if dtype == torch.float32:
        return [default]
    if head_dim > 128:
        extra = _CUDA_BWD_AUTOTUNE_256
    return [default] + [t for t in extra if t != default]


# ---------------------------------------------------------------- routing
# Where the fused template is measured slower than what Inductor runs without the rewrite, the pattern is left to
# Inductor (patterns/attention_checks.py's template_pays; the decision table is in docs/attention.md).  Soft-capped
# attention at head dim 256 with a mask tensor the pass cannot prove causal (HF builds the mask outside the layers,
# so a per-layer compile receives it as an input): the template computes every tile and loads the mask; Inductor's
# unfused graph runs the two products in cuBLAS.  H200, 2026-12-03, benchmarks/models.py --models gemma2 (8 layers x
# 4 x 2048, 8/4 heads of 256, sliding and full layers): default Inductor 39.9 ms a step, the plugin 47.5 ms (0.84x)
# at 7.8 vs 11.8 GiB.  With the causal mask built in the graph (proven causal: the band only) the template wins:
# 181 vs 154 TFLOP/s forward+backward (benchmarks/attention_softcap.py --quick, B2 H16/8 S4096 D256).
_SOFTCAP_DENSE_MASK_MAX_HEAD_DIM = 128


def template_pays(head_dim: int, softcap: bool, dense_mask: bool) -> bool:
    """Whether the rewrite is measured no slower than Inductor's own code for this form.  dense_mask: a mask tensor
    that stays one (not provably causal), so every tile is computed."""
    return not (softcap and dense_mask and head_dim > _SOFTCAP_DENSE_MASK_MAX_HEAD_DIM)
