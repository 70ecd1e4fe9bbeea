"""Tiles of the attention kernels (eager launchers and Inductor templates), keyed by padded head dim, and where the
fused template pays at all (template_pays).

Read by kernels/attention.py (the eager launchers) and lowerings/attention.py (the templates), so both run the same
tile for a form.  fp16 and bf16 run the same tensor-core code and share the tables (timed in bf16); fp32 and the
Triton interpreter have one tile each.  Head dims are padded to a power of two >= 64 (head_dim_bucket), except the
(q/k, v) pairs of SPLIT_HEAD_DIMS, which run as two tiles and may have tiles of their own (Note [split head dim]).

Provenance lines: GPU, date and how the time of one forward or backward was taken (torch 2.11, triton 3.6, bf16, at
B4 H16 S2048 D128 unless the line names another shape):
    autotune             the table Inductor prints for the compiled template under max-autotune
                         (TORCHINDUCTOR_MAX_AUTOTUNE=1 python benchmarks/attention.py --cases N)
    eager                triton.testing.do_bench medians of the eager launchers per tile (benchmarks/diagnostics/
                         attention_bwd_tiles.py --shape 4,16,16,2048,128 --softcap 0 --no-causal --tiles / --fwd-tiles)
    profile              benchmarks/diagnostics/attention_profile.py's kernel time
    attention_bwd_tiles  benchmarks/diagnostics/attention_bwd_tiles.py at its default shape (B2 H16/8 S4096 D256,
                         causal, softcap 50)
FlexAttention's sm90 table is torch 2.13's _inductor/template_heuristics/triton.py.
"""
import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class AttnFwdTile:
    """Forward (and the shape of the dQ pass): BLOCK_M query rows per program, BLOCK_N keys per loop step.

    Constraints: BLOCK_M % BLOCK_N == 0 (the causal band starts on a key-tile boundary), both powers of two >= 16
    (tl.dot needs K >= 16).  pair (causal only): each program runs two row blocks, n - 1 - u then u, so that every
    program visits n + 1 key tiles (config.attention_causal_pair overrides it).  mask_stages (templates with a mask
    tensor): the pipeline stages of the loops that read mask tiles, 0 for num_stages (Note [mask loop stages] in
    kernels/attn_math.py; config.attention_mask_stages overrides it).
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    pair: bool = False
    mask_stages: int = 0


@dataclasses.dataclass(frozen=True)
class AttnBwdTile:
    """Backward: dK/dV programs own BLOCK_N keys and step over BLOCK_M queries; dQ programs own BLOCK_N queries and
    step over BLOCK_M keys (FlexAttention's symmetric pairing).  Constraints: BLOCK_N % BLOCK_M == 0, both powers of
    two >= 16 (tl.dot needs K >= 16).  split: dK and dV of a key block in two programs, one accumulator each
    (Note [split dK/dV] in kernels/attn_math.py).  mask_stages: as AttnFwdTile's.
    """

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    split: bool = False
    mask_stages: int = 0


# Forward, fp16 / bf16, by head_dim_bucket; one provenance line each (see the module docstring).
CUDA_FWD = {
    # FlexAttention's sm90 table; H200 2026-11-30, autotune B8 H16 S1024 p=0.1: 0.120 ms, (64, 64, 4, 3) 0.125
    64: AttnFwdTile(128, 64, 4, 3),
    # H200 2026-11-30, eager: 446 TFLOP/s (compiled 465); (128, 128, 8, 3) 446, (128, 128, 8, 2) 391
    128: AttnFwdTile(128, 64, 8, 3),
    # H200 2026-12-03, attention_bwd_tiles --fwd-tiles, p=0/0.1: 0.70/0.76 ms; (64, 32, 4, 2) 0.79/0.96
    256: AttnFwdTile(128, 64, 8, 2),
    # split 128 + 64 (MLA, Dv 128); H200 2026-12-04, attention_bwd_tiles --shape 4,16,8,2048,192 --dv 128 --softcap 0
    # --fwd-tiles, causal p=0: 0.235 ms; (128, 128, 8, 2) 0.252, (64, 64, 4, 2) 0.266, (128, 64, 8, 2) 0.288; p=0.1
    # 0.286 ms, (128, 128, 8, 2) 0.282.  The template (mask_template_tiles.py --mla, B4 H16 S2048 causal), p=0 / 0.1:
    # 0.220 / 0.253 ms; (128, 128, 8, 2) 0.236 / 0.269, (64, 64, 4, 3) 0.272 / 0.292, (128, 64, 8, 2) 0.278 / 0.306
    (192, 128): AttnFwdTile(128, 64, 8, 3),
    # split 128 + 32 (v 128): the bucket-256 tile, the one measured (SPLIT_HEAD_DIMS' provenance)
    (160, 128): AttnFwdTile(128, 64, 8, 2),
}
CUDA_FWD_CAUSAL = {
    # H200 2026-12-01, profile B8 H16 S1024: paired 59.9 us; (128, 64, 8, 3) paired 63.1, (64, 64, 4, 3) alone 65.5
    64: AttnFwdTile(128, 64, 4, 3, pair=True),
    # H200 2026-11-30, eager: 364 TFLOP/s; (128, 128, 8, 3) 338, (128, 64, 8, 3) 333, (128, 64, 8, 2) 270
    128: AttnFwdTile(64, 64, 4, 3),
}
CUDA_FWD_DROPOUT = {
    # H200 2026-11-30, autotune p=0.1: 0.333 ms; (128, 64, 8, 4) 0.343, (128, 64, 8, 3) 0.344, (128, 128, 8, 3) 0.351
    128: AttnFwdTile(64, 64, 4, 3),
}
# Backward, fp16 / bf16, by head_dim_bucket.
CUDA_BWD = {
    # H200 2026-11-30, autotune B8 H16 S1024: the best of ten tiles, p=0 0.249 ms, p=0.1 0.334 ms
    64: AttnBwdTile(64, 64, 4, 3),
    # H200 2026-11-30, benchmarks/attention.py --cases 0: the compiled template 429 TFLOP/s forward+backward
    128: AttnBwdTile(64, 128, 8, 3),
    # H200 2026-12-03, attention_bwd_tiles, p=0/0.1: 4.02/4.54 ms; split 4.92/5.40, (32, 64, 8, 2) 5.08/5.36.  The
    # masked template at Gemma 2's shape (H100 2026-12-07, mask_template_tiles.py --shape 4,8,4,2048,256 --softcap 50
    # --p 0 --fwd 0 --bwd 0,15,16,17): 1.034 / 1.049 ms; (32, 64, 8, 3) 1.235, (16, 64, 8, 3) 1.887, (16, 64, 8, 2)
    # 2.132 (the narrow query tiles do not spill, template_sass.py, but run 2x slower)
    256: AttnBwdTile(64, 64, 8, 2),
    # split 128 + 64 (MLA, Dv 128); H200 2026-12-04, attention_bwd_tiles --shape 4,16,8,2048,192 --dv 128 --softcap 0,
    # causal p=0/0.1: 0.759/0.832 ms; (32, 128, 8, 2) 0.851/0.954, split (64, 128, 8, 2) 0.961/1.110,
    # (64, 64, 8, 2) 1.355/1.491, (64, 64, 4, 3) 1.344/1.545, (32, 64, 4, 3) 0.891/0.964 (EAGER_BWD_STAGES).  The
    # template (H200 2026-12-04, mask_template_tiles.py --mla, B4 H16 S2048 causal), p=0/0.1: 0.622/0.724 ms;
    # (32, 64, 4, 2) 0.690/0.779, (32, 128, 8, 2) 0.788/0.866, split (64, 128, 8, 2) 0.805/0.934, (16, 64, 4, 2)
    # 0.928/1.000, (64, 64, 4, 2) 1.189/1.279
    (192, 128): AttnBwdTile(32, 64, 4, 3),
    # split 128 + 32 (v 128); H200 2026-12-04, attention_bwd_tiles --shape 4,16,8,2048,160 --dv 128 --any-split, causal
    # p=0: 0.717 ms; (64, 64, 8, 2) 1.289 (the bucket-256 tile; padded 1.543)
    (160, 128): AttnBwdTile(32, 64, 4, 2),
}
CUDA_BWD_CAUSAL = {
    # H200 2026-11-30, autotune B8 H16 S1024: 0.168 ms; (64, 64, 4, 2) 0.172, (32, 64, 4, 3) 0.182
    64: AttnBwdTile(64, 64, 4, 3),
    # H200 2026-11-30, autotune: 0.443 ms; (32, 64, 4, 3) 0.492, (64, 128, 8, 3) 0.516, (128, 128, 8, 2) 0.568
    128: AttnBwdTile(64, 64, 4, 2),
    # dK and dV in programs of their own (Note [split dK/dV]), 16-query steps.  H100 2026-12-07, mask_template_tiles.py
    # --shape 4,8,4,2048,256 --softcap 50 --p 0.1,0 --fwd "" --bwd 0,22,23,24,25,26 --causal-bwd (Gemma 2's
    # attention), p=0.1/0: 0.778/0.756 ms; split (32, 64, 4, 3) 0.828/0.758, split (32, 64, 4, 4) 0.840/0.757, split
    # (16, 64, 4, 2) 0.889/0.872.  H200 2026-12-07 (--p 0 --bwd 0,6,22): split (32, 64, 4, 3) 0.763, the plain
    # table's (64, 64, 8, 2) 0.971, split (32, 64, 4, 2) 0.898
    256: AttnBwdTile(16, 64, 4, 3, split=True),
}
CUDA_BWD_DROPOUT = {
    # H200 2026-11-30, autotune p=0.1: 0.936 ms; (32, 64, 4, 3) 1.001, (64, 128, 8, 3) 1.012, (64, 128, 8, 2) 1.074
    128: AttnBwdTile(64, 64, 4, 2),
}
# Templates with dropout and a mask tensor summarised by mask ranges (Note [mask ranges]; not causal): the masks that
# arrive as tensors are mostly causal-shaped (HF's), so these tiles were timed on a causal mask tensor.  The
# backward's equals the dropout table's tile (its full-tile loop keeps its registers: Note [full tiles in
# reverse]); the entry keeps this form's own measurement.  The eager kernels keep the plain tables (not measured
# there).
CUDA_FWD_MASKED_DROPOUT = {
    # The mask loop on two stages (Note [mask loop stages]).  H200 2026-12-07, mask_template_tiles.py --p 0.1,0 --fwd
    # 0,2,3,1,4 --bwd "": 0.200 ms; (64, 64, 4, 3) on three stages 0.271, (128, 64, 8, 3) 0.209 (two stages in the
    # mask loop 0.207); is_causal 0.194.  H200 2026-12-04: (128, 64, 8, 3) 0.225, (64, 64, 4, 3) 0.269
    128: AttnFwdTile(64, 64, 4, 3, mask_stages=2),
}
# Forward templates with a summarised mask tensor (not causal) and no dropout.
CUDA_FWD_MASKED = {
    # H200 2026-12-07, mask_template_tiles.py --p 0.1,0 --fwd 0,2,3,1,4 --bwd "", p=0: 0.179 ms; (64, 64, 4, 3) on
    # three stages 0.237, (128, 64, 8, 3) (CUDA_FWD's) 0.188 / 0.189 (two stages in its mask loop 0.189)
    128: AttnFwdTile(64, 64, 4, 3, mask_stages=2),
}
CUDA_BWD_MASKED_DROPOUT = {
    # H100 2026-12-06, mask_template_tiles.py --p 0.1 --fwd "" --bwd 0,3, twice: 0.581 / 0.578 ms with the full tiles
    # in reverse (Note [full tiles in reverse]); (32, 64, 4, 2) 0.618 / 0.617 (0.603 / 0.604 before it, and (64, 64, 4,
    # 2) 0.688).  Before: H200 2026-12-04, (32, 64, 4, 2) 0.614; (64, 128, 8, 2) 0.691, split (64, 64, 4, 2) 0.702,
    # (64, 128, 8, 3) 0.697, and the 8-warp tiles that do not spill: (32, 128, 8, 2) 0.730, (64, 64, 8, 3) 1.100,
    # (64, 64, 8, 2) 1.131, (32, 64, 8, 2) 1.551.  H100 2026-12-07 (--p 0.1 --fwd 0 --bwd 0,12,13,14): 0.578 / 0.579;
    # (32, 64, 4, 3) 0.579, (16, 64, 4, 3) 0.705, (16, 64, 4, 2) 0.881.  With Note [row offsets]: 0.552 against 0.579
    # (H100 2026-12-07, --p 0.1 --fwd 0 --bwd= --configs "default;attention_row_offsets=0")
    128: AttnBwdTile(64, 64, 4, 2),
}
# Backward templates with a summarised mask tensor (not causal), with or without dropout, where
# CUDA_BWD_MASKED_DROPOUT has no entry.
CUDA_BWD_MASKED = {
    # dK and dV in programs of their own (Note [split dK/dV]).  H100 2026-12-07, mask_template_tiles.py --shape
    # 4,8,4,2048,256 --softcap 50 --p 0,0.1 --fwd "" --bwd 8,4,18 (Gemma 2's form), p=0/0.1: 0.990/1.082 ms; the
    # one-program (64, 64, 8, 2) 1.027/1.150, split (64, 64, 8, 2) 1.232/1.300 (spill-free in template_sass.py, yet
    # slower: Gemma 2 in models.py 36.5 against 35.3 GPU ms a step with it).  A second run, p=0: 0.985 against 1.038.
    # 32-query steps on three stages: H200 2026-12-07 (--p 0 --fwd "" --bwd 0,6,22): 0.890 ms; split (64, 64, 4, 2)
    # 0.985, split (32, 64, 4, 2) 0.988.  16-query steps, the mask loops on two stages (Note [mask loop stages]: 114944
    # bytes of shared memory, two programs an SM, against 119040 on three): H100 2026-12-07 (--p 0.1,0 --fwd ""
    # --bwd 0,22,23,24,25,26 --causal-bwd), p=0.1/0: 0.809/0.795 ms (is_causal at CUDA_BWD_CAUSAL's tile 0.778/0.756);
    # split (32, 64, 4, 3) 0.990/0.885, (32, 64, 4, 4) 1.045/0.898, (16, 64, 4, 3) with the mask on three stages
    # 1.078/1.030, (16, 64, 4, 2) 0.927/0.892
    256: AttnBwdTile(16, 64, 4, 3, split=True, mask_stages=2),
}
# The eager backward's tile where a form's table was measured on the templates only (its lengths and strides are
# runtime values, which change the code ptxas gets): head dim 256 keeps the one-program tile its eager sweep chose
# (CUDA_BWD's provenance) when causal too, where the templates take CUDA_BWD_CAUSAL's split tile.
EAGER_BWD = {256: AttnBwdTile(64, 64, 8, 2)}
# The eager backward's stages where they differ from the template's.
EAGER_BWD_STAGES = {
    # H200 2026-11-30, eager: (64, 128, 8, 2) 361 TFLOP/s, (64, 128, 8, 3) 319, (32, 128, 4, 3) 158
    128: 2,
    # CUDA_BWD's (192, 128) provenance: eager (32, 64, 4, 2) 0.755 / 0.816 ms (p 0 / 0.1), (32, 64, 4, 3) 0.891 / 0.964
    (192, 128): 2,
}
# max-autotune candidates at head dim 256, after the default (the head-dim-128 ones exceed shared memory there); the
# split 16-query tiles are the causal and masked templates' defaults, the one-program (64, 64, 8, 2) the plain one's.
CUDA_BWD_AUTOTUNE_256 = [AttnBwdTile(64, 64, 8, 2), AttnBwdTile(16, 64, 4, 3, split=True, mask_stages=2),
                         AttnBwdTile(32, 64, 4, 3, split=True), AttnBwdTile(64, 64, 4, 2, split=True)]
# ... and at a split head dim with tiles of its own (Note [split head dim]; the runners-up of its eager sweep:
# CUDA_FWD's / CUDA_BWD's (192, 128) provenance lines)
CUDA_FWD_AUTOTUNE_SPLIT = {(192, 128): [AttnFwdTile(128, 128, 8, 2), AttnFwdTile(128, 64, 8, 3),
                                        AttnFwdTile(64, 64, 4, 2)]}
CUDA_BWD_AUTOTUNE_SPLIT = {(192, 128): [AttnBwdTile(32, 64, 4, 2), AttnBwdTile(32, 128, 8, 2),
                                        AttnBwdTile(64, 128, 8, 2, split=True)]}
# fp32 runs IEEE fp32 dots on the FMA units: small tiles keep registers in bounds.
CUDA_FP32_FWD = AttnFwdTile(64, 32, 4, 2)
CUDA_FP32_BWD = AttnBwdTile(32, 64, 4, 1)
# The CPU interpreter (tests): fp32's tiles.  An interpreted op costs about the same at any block size, so a test's
# time follows the steps its programs take: these halve the CPU suite's attention kernel time against (32, 16) /
# (16, 32) (test_mask_ranges.py 222 -> 123 s).  Still smaller than most test lengths (64-96 tokens), so the causal
# band, ragged ends and multi-tile loops run, and a forward row block spans several summary entries (MASK_ROWS).
INTERPRETER_FWD = AttnFwdTile(64, 32, 4, 1)
INTERPRETER_BWD = AttnBwdTile(32, 64, 4, 1)


_HALF = (torch.float16, torch.bfloat16)


# Note [split head dim] in kernels/attn_math.py: the q/k head dims that run as two tiles rather than one padded to a
# power of two (config.attention_split_head_dim), each measured faster so; their tiles are keyed by the head dim.
# H200 2026-12-04, attention_bwd_tiles.py --shape 4,16,8,2048,192 --dv 128 --softcap 0 --split-head-dim 0 / 1
# (MLA, causal): at the (64, 64, 8, 2) tile backward 1.533 -> 1.355 ms (p 0), 1.749 -> 1.491 (p 0.1); forward
# (128, 64, 8, 2) 0.309 -> 0.288 / 0.341 -> 0.330.  The same, --shape 4,16,8,2048,D --any-split, the bucket's
# tiles either way (backward (64, 64, 4, 2), causal, p 0 / 0.1): D80 (Phi-2) backward 0.587 -> 0.524 / 0.700 -> 0.607
# ms, forward 0.194 -> 0.178 / 0.233 -> 0.205; D96 (Phi-3) backward 0.591 -> 0.555 / 0.702 -> 0.669, forward 0.194 ->
# 0.184 / 0.233 -> 0.210; q/k 160, v 128, p 0: backward at (32, 64, 4, 2) 1.043 -> 0.717, forward 0.315 -> 0.271.
# Keyed by (q/k head dim, v head dim), as the tables' tiles of a split head dim (sized for that value head dim); a
# split without tiles of its own takes its bucket's.
SPLIT_HEAD_DIMS = frozenset({(80, 80), (96, 96), (160, 128), (192, 128)})


def head_dim_blocks(head_dim: int, split: bool, head_dim_v: int | None = None,
                    any_dim: bool = False) -> tuple[int, int]:
    """(BLOCK_D, BLOCK_D2) of a q/k head dim: one tile padded to a power of two (BLOCK_D2 = 0), or, with `split`
    (config.attention_split_head_dim) for a (head dim, value head dim) of SPLIT_HEAD_DIMS (any_dim: any, for tests),
    two tiles covering fewer columns than the padded one: the largest power of two below the head dim and the rest
    padded to a power of two >= 16.  192 -> (128, 64); 80 -> (64, 16), 96 -> (64, 32), 160 -> (128, 32) with
    any_dim; 112 stays (128, 0), as 64 + 64 pads as much."""
    padded = max(16, 1 << (head_dim - 1).bit_length())
    low = 1 << (head_dim.bit_length() - 1) if head_dim > 0 else 0
    listed = (head_dim, head_dim if head_dim_v is None else head_dim_v) in SPLIT_HEAD_DIMS
    if not split or head_dim <= 16 or low == head_dim or not (any_dim or listed):
        return padded, 0
    rest = max(16, 1 << (head_dim - low - 1).bit_length())
    return (low, rest) if low + rest < padded else (padded, 0)


def head_dim_tiles(head_dim: int, head_dim_v: int, split: bool) -> tuple[int, int, int, int | None]:
    """(BLOCK_D, BLOCK_D2, tile head dim, split_v): head_dim_blocks' head-dim tiles and the tile lookup's arguments
    for them (attn_fwd_tile / attn_bwd_tile's head_dim and split_v).  A split head dim picks its tiles by (q/k head
    dim, value head dim), split_v being the value head dim (Note [split head dim]); one padded tile by the larger of
    the two (Note [value head dim]), split_v None."""
    block_d, block_d2 = head_dim_blocks(head_dim, split, head_dim_v)
    if block_d2:
        return block_d, block_d2, head_dim, head_dim_v
    return block_d, block_d2, max(head_dim, head_dim_v), None


def head_dim_bucket(head_dim: int) -> int:
    """The tables' key: the head dim padded to a power of two, at least 64."""
    return max(64, 1 << (max(head_dim, 1) - 1).bit_length())


def _table_key(dtype: torch.dtype, head_dim: int, split_v: int | None = None):
    """The key of the 16-bit tables (None for another dtype: no entry).  split_v: the value head dim, given when the
    q/k head dim runs as two tiles (Note [split head dim]); the key is then (head dim, value head dim) where the
    tables have tiles for that pair, else the bucket of the larger head dim (a split head dim's tiles hold fewer
    columns than its bucket's, so the bucket's tiles fit)."""
    if dtype not in _HALF:
        return None
    if split_v is not None and (head_dim, split_v) in CUDA_FWD and (head_dim, split_v) in CUDA_BWD:
        return head_dim, split_v
    return head_dim_bucket(max(head_dim, split_v or 0))


def _form_tile(kind: str, dtype: torch.dtype, head_dim: int, device: str, causal: bool, dropout: bool,
               masked: bool = False, split_v: int | None = None):
    """The tile that comes before the plain table of `kind` ("fwd" / "bwd"): the interpreter's, fp32's, or the causal,
    masked-dropout (a template with a summarised mask tensor: `masked`), masked (the backward with or without
    dropout, the forward without) or dropout table's for such a form; None when the plain table decides."""
    fwd = kind == "fwd"
    if device != "cuda":
        return INTERPRETER_FWD if fwd else INTERPRETER_BWD
    if dtype == torch.float32:
        return CUDA_FP32_FWD if fwd else CUDA_FP32_BWD
    key = _table_key(dtype, head_dim, split_v)
    causal_table, dropout_table = (CUDA_FWD_CAUSAL, CUDA_FWD_DROPOUT) if fwd else (CUDA_BWD_CAUSAL, CUDA_BWD_DROPOUT)
    if causal and key in causal_table:
        return causal_table[key]
    masked_table = CUDA_FWD_MASKED_DROPOUT if fwd else CUDA_BWD_MASKED_DROPOUT
    if masked and dropout and not causal and key in masked_table:
        return masked_table[key]
    masked_table = CUDA_FWD_MASKED if fwd else CUDA_BWD_MASKED
    if masked and not causal and key in masked_table and (not fwd or not dropout):
        return masked_table[key]
    if dropout and key in dropout_table:
        return dropout_table[key]
    return None


def attn_fwd_tile(dtype: torch.dtype, head_dim: int, device: str, causal: bool = False,
                  dropout: bool = False, masked: bool = False, split_v: int | None = None) -> AttnFwdTile:
    """Default forward tile for `device` ("cuda", or "interpreter" for TRITON_INTERPRET=1); `masked`: a template whose
    mask tensor is summarised (MASK_RANGES); `split_v`: the value head dim when the q/k head dim runs as two tiles
    (head_dim_blocks; head_dim is then q's and k's alone)."""
    tile = _form_tile("fwd", dtype, head_dim, device, causal, dropout, masked, split_v)
    return tile if tile is not None else CUDA_FWD.get(_table_key(dtype, head_dim, split_v), AttnFwdTile(64, 32, 4, 2))


def attn_bwd_tile(dtype: torch.dtype, head_dim: int, device: str, eager: bool = False, causal: bool = False,
                  dropout: bool = False, masked: bool = False, split_v: int | None = None) -> AttnBwdTile:
    """Default backward tile (see AttnBwdTile for how the two kinds of program use it); `eager` for the launcher,
    whose kernel sees runtime lengths and strides (the templates see Inductor's static ones); `masked` as
    attn_fwd_tile's."""
    key = _table_key(dtype, head_dim, split_v)
    if eager and device == "cuda" and key in EAGER_BWD:
        return EAGER_BWD[key]
    tile = _form_tile("bwd", dtype, head_dim, device, causal, dropout, masked, split_v)
    if tile is not None:
        return tile
    tile = CUDA_BWD.get(key, AttnBwdTile(32, 64, 4, 1))
    if eager and key in EAGER_BWD_STAGES:
        tile = dataclasses.replace(tile, num_stages=EAGER_BWD_STAGES[key])
    return tile


def attn_fwd_autotune_tiles(dtype: torch.dtype, head_dim: int, causal: bool = False,
                            dropout: bool = False, masked: bool = False,
                            split_v: int | None = None) -> list[AttnFwdTile]:
    """Candidates for max-autotune, the default first (fp32 keeps its one small tile)."""
    default = attn_fwd_tile(dtype, head_dim, "cuda", causal, dropout, masked, split_v)
    extra = [AttnFwdTile(128, 64, 8, 3), AttnFwdTile(128, 128, 8, 3), AttnFwdTile(64, 64, 4, 3)]
    return _autotune_tiles(default, extra, dtype, head_dim, split_v, CUDA_FWD_AUTOTUNE_SPLIT, wide=[])


def attn_bwd_autotune_tiles(dtype: torch.dtype, head_dim: int, causal: bool = False,
                            dropout: bool = False, masked: bool = False,
                            split_v: int | None = None) -> list[AttnBwdTile]:
    """Candidates for max-autotune, the default first (fp32 keeps its one small tile; a split head dim its measured
    ones, which the head-dim-256 candidates' shared memory does not fit beside)."""
    default = attn_bwd_tile(dtype, head_dim, "cuda", causal=causal, dropout=dropout, masked=masked, split_v=split_v)
    extra = [AttnBwdTile(64, 128, 8, 3), AttnBwdTile(64, 64, 4, 3), AttnBwdTile(64, 64, 4, 2),
             AttnBwdTile(64, 128, 8, 2), AttnBwdTile(128, 128, 8, 2), AttnBwdTile(32, 64, 4, 3)]
    return _autotune_tiles(default, extra, dtype, head_dim, split_v, CUDA_BWD_AUTOTUNE_SPLIT,
                           wide=CUDA_BWD_AUTOTUNE_256)


# Note [short sequences]: a slice of at most BLOCK / 2 rows runs in one block whatever the block, so a smaller block
# keeps the grid and does less work per program.  Short sequences are set by the model, not by batch or head count:
# Swin's and LeViT's windows of 49 tokens meet the forward's 128-row tiles of every head dim (half the rows wasted
# twice over) and head dim 128's 128-key backward tile.  With a static length, the compiled templates' tiles shrink
# to the smallest power of two >= the length, at least MIN_SHORT_BLOCK (tl.dot needs 16; 32 keeps a 4-warp tile's
# rows whole), keeping BLOCK_M % BLOCK_N == 0 (forward) and BLOCK_N % BLOCK_M == 0 (backward).  The eager kernels
# compile per configuration, not per length (Note [static shapes]): a call whose queries and keys are at most
# SHORT_MASK_LENGTH is one more configuration, its tiles fitted to that length.
MIN_SHORT_BLOCK = 32
# A mask over at most SHORT_MASK_LENGTH queries and keys (static) is not summarised (Note [mask ranges]): its
# slices are one or two tiles, which the summary cannot make cheaper, and its pass costs a launch and a read of the
# mask.  H100 2026-12-05, Swin-T's stage 1 (4096 windows x 3 heads x 49 tokens, D32), one layer forward+backward
# (benchmarks/diagnostics/window_attention.py --stages 1): summarised / not, forward template 0.394 / 0.329 ms,
# layer GPU 1.444 / 1.378 ms (learned bias alone) and 0.412 / 0.346, 1.701 / 1.477 (with the window mask; the
# summary's pass 0.136 ms); default Inductor's layer 1.891 and 1.989 ms.
SHORT_MASK_LENGTH = 64


def short_sequences(q_len: int | None, kv_len: int | None) -> bool:
    """Both lengths known (None: symbolic) and at most SHORT_MASK_LENGTH: no mask summary (above); the eager op's
    short configuration (Note [short sequences])."""
    return all(n is not None and n <= SHORT_MASK_LENGTH for n in (q_len, kv_len))


# Note [mask row alignment]: a mask's tile loads in 16-byte vectors only when its rows are known to be a multiple of
# 16 bytes apart.  A bf16 mask over an odd number of keys (ViT's 197 tokens, wav2vec2's 249, Swin's 49) has rows 2
# bytes apart, so every element is a load of its own, and with the tables' tiles the forward spills registers in its
# loop (compiled for sm_90: head dim 32 at 197 tokens, 1158 local loads and stores in the loop, 0 with padded rows;
# docs/attention.md).  So the kernels read such a mask with its rows padded:
# - the compiled templates (lowerings/attention.py `_padded_mask`) see static strides as literals, so rows of a
#   multiple of config.attention_mask_row_bytes suffice (`template_mask_row`).  A mask the graph computes is laid
#   out padded by its own kernel, at no cost; one that arrives as a graph input is copied once, its broadcast dims
#   kept at stride 0.  Only static sizes and strides: a symbolic row stride cannot be proven aligned.
# - the eager kernels take strides as arguments, which Triton specializes as aligned only when divisible by 16, so
#   the eager op copies the mask into rows of a multiple of 16 elements (`eager_mask_row`; ops/attention.py), at
#   head dims up to EAGER_MASK_PAD_HEAD_DIM only: there the spills cost far more than the copy; at head dim 64 the
#   forward gains about what the copy costs, and a learned bias's gradient then pays a second copy.
# H100 2026-12-05 (benchmarks/diagnostics/mask_rows.py, window_attention.py), forward+backward GPU ms, as read /
# padded.  Compiled: B64 H3 S197 D32 with a position bias 0.461 / 0.185 (the forward 0.320 / 0.025); Swin-T stage 1
# 1.369 / 1.160 and, with the window mask, 1.469 / 1.343; D64 at 197 and 249 tokens, a mask input copied once,
# 0.248 / 0.239 and 0.167 / 0.157, a computed bias 0.257 / 0.249.  Eager: B64 H3 S197 D32 with a position bias
# 0.628 / 0.282 (the forward 0.407 / 0.029), Swin-T stage 1's window forward 0.575 / 0.162; D64 at 249 with a
# [B, H, S, S] learned bias 0.365 / 0.426 (two copies of 0.03 ms), a [B, 1, S, S] mask input 0.309 / 0.292 at 197.
def template_mask_row(keys: int, itemsize: int) -> int:
    """The row stride, in elements, of a mask over `keys` static keys as the compiled templates read it (Note [mask
    row alignment]); tests/tools/compile_sm90.py renders masks with it."""
    from inductor_conv import config

    row = max(1, config.attention_mask_row_bytes // itemsize)
    return -(-keys // row) * row


EAGER_MASK_PAD_HEAD_DIM = 32  # the eager op pads unaligned mask rows up to this head dim (above)


def eager_mask_row(keys: int) -> int:
    """The row stride, in elements, the eager op copies an unaligned mask to (Note [mask row alignment])."""
    return -(-keys // 16) * 16


def _short_block(block: int, length: int | None) -> int:
    """`block` shrunk to the power of two >= length (>= MIN_SHORT_BLOCK) when that is smaller; None: unknown."""
    if length is None:
        return block
    return min(block, max(MIN_SHORT_BLOCK, 1 << max(length - 1, 0).bit_length()))


def fit_fwd_tile(tile: AttnFwdTile, q_len: int | None, kv_len: int | None) -> AttnFwdTile:
    """The forward tile for static lengths (None: symbolic), Note [short sequences]."""
    block_m = _short_block(tile.block_m, q_len)
    block_n = min(_short_block(tile.block_n, kv_len), block_m)
    return dataclasses.replace(tile, block_m=block_m, block_n=block_n)


def fit_bwd_tile(tile: AttnBwdTile, q_len: int | None, kv_len: int | None) -> AttnBwdTile:
    """The backward tile for static lengths (None: symbolic), Note [short sequences]: BLOCK_N is the rows a dK/dV or
    dQ program owns (keys or queries), BLOCK_M the step over the other."""
    longest = None if q_len is None or kv_len is None else max(q_len, kv_len)
    block_m = _short_block(tile.block_m, longest)
    block_n = max(_short_block(tile.block_n, longest), block_m)
    return dataclasses.replace(tile, block_m=block_m, block_n=block_n)


def _autotune_tiles(default, extra, dtype, head_dim, split_v, split_table, wide):
    """The default, then the other candidates without it: fp32's default alone, a split head dim's own measured
    ones (split_table), `wide` above head dim 128, else `extra`."""
    if dtype == torch.float32:
        return [default]
    key = _table_key(dtype, head_dim, split_v)
    if key in split_table:
        extra = split_table[key]
    elif head_dim > 128:
        extra = wide
    return [default] + [t for t in extra if t != default]


# Note [row offsets]: a dK/dV program streams its query heads' Q and dO tiles, and by default holds them as pointer
# tiles made once per head (tile_source in kernels/attn_math.py): 64-bit addresses, one per vector a thread loads.
# With ROW_OFFSETS it holds the slice's base pointer and the tile's int32 offsets instead and makes the addresses
# per tile, a few integer adds more a tile and half the registers for them.  Where the loop body is already at the
# register limit this is the difference between spilling and not: the summarised-mask backward (a mask tensor,
# Note [mask ranges]) at the dropout tile, compiled for sm_90 (benchmarks/diagnostics/template_sass.py --shape
# 4,16,2048,128 --hkv 8 --mask 2 --p 0.1 --tile 64,64,4,2, --row-offsets 0 / 1), reloads 18 -> 0 values a tile in its
# full-tile loop and 24 -> 6 in its partial one (stack 200 -> 80 B); Gemma 2's form (--shape 4,8,2048,256 --hkv 4
# --mask 2 --softcap 50) 43 -> 22 and 51 -> 27.  In the causal backward (is_causal) the same change spills more: at
# head dim 128 with dropout 0 -> 17 local loads a tile in its full-tile loop and 89 -> 144 in a head's causal band, so
# it is on for summarised masks only.  The values are the same either way.  config.attention_row_offsets forces it.
# On the GPU (H100 2026-12-07, benchmarks/diagnostics/mask_template_tiles.py --fwd 0 --bwd= --configs
# "default;attention_row_offsets=0", HF's bf16 causal mask as a graph input), the backward template with / without:
# B4 16/8 S2048 D128 p 0.1 0.552 / 0.579 ms (is_causal's 0.508), p 0 at its (64, 128, 8, 3) tile, which did not
# spill, 0.524 / 0.525; Gemma 2's attention (B4 8/4 S2048 D256, cap 50) 1.017 / 1.035 at p 0, 1.139 / 1.143 at p 0.1.
# Under triton 3.7.1 (torch 2.13's CUDA pin) the full-tile loops gain as much (head dim 128 with dropout 14 -> 0,
# Gemma 2's form 42 -> 19 reloads a tile).
def row_offsets(masked: bool, causal: bool, split: bool, tma: bool, forced: bool | None = None) -> bool:
    """Whether a backward template streams its dK/dV programs' Q / dO tiles from integer offsets (Note [row offsets]):
    with a summarised mask tensor (`masked`) and not causal, one head-dim tile (not `split`: Note [split head dim]),
    not through TMA.  `forced` (default config.attention_row_offsets) turns it on (where allowed) or off."""
    from inductor_conv import config

    if split or tma:
        return False
    if forced is None:
        forced = config.attention_row_offsets
    return (masked and not causal) if forced is None else bool(forced)


# ---------------------------------------------------------------- routing
# Where the fused template is measured slower than what Inductor runs without the rewrite, the pattern is left to
# Inductor (patterns/attention_checks.py's template_pays; the decision table is in docs/attention.md).  Soft-capped
# attention at head dim > 128 with a mask tensor the pass cannot prove causal (HF builds the mask outside the layers,
# so a per-layer compile receives it as an input): the template computes every tile and loads the mask, while
# Inductor's unfused graph runs the two products in cuBLAS.  With the mask proven causal (the band only) the
# template wins: 181 vs 154 TFLOP/s forward+backward (benchmarks/attention_softcap.py --quick).
# H200 2026-12-03, benchmarks/models.py --models gemma2: 39.9 ms a step default Inductor, 47.5 with the rewrite (0.84x).
# With config.attention_mask_ranges the template skips the mask's empty tiles and the rewrite pays: H200 2026-12-03,
# benchmarks/models.py --models gemma2 --variants inductor,plugin,plugin-noranges: 38.4 ms default Inductor, 36.2 with
# the rewrite (1.06x), 38.9 routed to Inductor with ranges off.
SOFTCAP_DENSE_MASK_MAX_HEAD_DIM = 128


def template_pays(head_dim: int, softcap: bool, dense_mask: bool) -> bool:
    """Whether the rewrite is measured no slower than Inductor's own code for this form.  dense_mask: a mask tensor
    that stays one (not provably causal).  With config.attention_mask_ranges the template computes only the tiles
    the mask lets through (Note [mask ranges]), so a mask tensor costs what its content needs, not every tile."""
    from inductor_conv import config

    every_tile = dense_mask and not config.attention_mask_ranges
    return not (softcap and every_tile and head_dim > SOFTCAP_DENSE_MASK_MAX_HEAD_DIM)


# Note [cuDNN route]: without a mask, dropout or soft-capping, with one head dim for q, k and v, cuDNN's fused
# attention (SDPA's cuDNN backend, aten._scaled_dot_product_cudnn_attention[_backward]) computes what our kernels do
# -- the same O and the same natural-log row LSE, GQA read natively -- and runs faster on Hopper: H200 2026-12-04,
# B4 H16 S2048 D128 causal p 0 forward+backward, cuDNN 0.605 ms of GPU time against the eager kernels' 0.771
# (benchmarks/overhead.py --dropout 0 --rounds 5) and, at 16/8 heads, 0.61 against our template's 0.75
# (attention_masks.py); at head dim 256, 371 TFLOP/s against 204.  The lowerings (lowerings/attention.py's
# _use_cudnn) and the eager op (ops/attention.py's _cudnn_eager) both call it there; each adds the size and layout
# conditions it can prove (Sk > 1, Sq > 0, causal only with Sq == Sk, B and H <= 65535, 16-byte aligned rows; few
# queries run flash-decoding first; compiled graphs a head dim of at least CUDNN_COMPILED_MIN_HEAD_DIM, below).  A
# value head dim of its own (MLA) stays ours: cuDNN's call was slower by wall time (0.806 ms GPU, 1.248 wall
# against our 0.891 / 0.862; H200 2026-12-04, mask_template_tiles.py --mla).
#
# In compiled graphs the route starts at head dim 128. Below it cuDNN's kernels were no faster than our templates
# and their calls cost more wall time: one layer's compiled forward+backward, no mask, p 0, not causal, GPU ms cuDNN /
# templates 0.259 / 0.233 at ViT-B's (64, 12, 197, 64), 0.201 / 0.182 at BERT-base's (16, 12, 512, 64), 0.385 /
# 0.384 at (8, 16, 1024, 64), wall 1.39 / 1.21 and 1.57 / 1.39 ms at the first two; at (4, 16, 2048, 128) cuDNN's GPU
# time was 0.99 against 1.23. (H100, 2026-12-05, `python benchmarks/diagnostics/cudnn_host.py`.) The eager op keeps
# the route at every head dim, from config.attention_cudnn_eager_min_work of work: below it the host time decides,
# and its calls of our kernels from C++ (Note [eager attention from C++]) cost less than cuDNN's.
CUDNN_COMPILED_MIN_HEAD_DIM = 128


def eager_cudnn_work(B: int, H: int, Sq: int, Sk: int, head_dim: int, causal: bool) -> int:
    """The eager cuDNN route's measure of a call (config.attention_cudnn_eager_min_work): its score elements
    B · H · Sq · Sk (halved when causal) times (head_dim / 8)², the FLOPs weighted by head_dim / 64, as cuDNN's
    kernels gain on ours with the head dim (alike at 64, 1.2x at 128, 1.8x at 256).  backward_node.cpp's
    cudnn_route_scale computes the same."""
    return (B * H * Sq * Sk * (head_dim // 8) ** 2) >> bool(causal)


def cudnn_attention_form(dtype: torch.dtype, head_dim: int, head_dim_v: int, capability: tuple[int, int]) -> bool:
    """Whether a form without mask, dropout or soft-capping goes to cuDNN's fused attention (Note [cuDNN route]),
    from what does not depend on sizes or layout: config.attention_cudnn, fp16 / bf16, one head dim (a multiple of 8,
    at most 256), an sm_90+ GPU, cuDNN available with SDPA's cuDNN backend on, and torch's deterministic mode off
    (cuDNN's backward is not run-to-run deterministic; SDPA refuses it there too, we refuse in warn-only mode as
    well: our kernels are deterministic)."""
    from inductor_conv import config

    if not config.attention_cudnn or dtype not in (torch.float16, torch.bfloat16):
        return False
    if head_dim % 8 or head_dim > 256 or head_dim_v != head_dim or tuple(capability) < (9, 0):
        return False
    return (torch.backends.cudnn.is_available() and torch.backends.cuda.cudnn_sdp_enabled()
            and not torch.are_deterministic_algorithms_enabled())
