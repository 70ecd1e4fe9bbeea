"""Flash-decoding: attention of a few queries (Sq <= 16) against a long KV cache, forward only.

Note [flash-decoding]: with Sq in 1..16 a (b, query head) slice has too few rows to fill a tile, and B * Hkv is
often below the SM count, so the forward kernel (one program per BLOCK_M query rows of one query head) leaves most
of the GPU idle and reads each K/V head G = Hq / Hkv times.  Here one program owns one (b, kv head, key split):
    rows     the G * Sq (query head, query) pairs that share the kv head, packed into the tile's M dimension
             (row r = g * Sq + i is query i of head hk * G + g), padded to a power of two >= 16 for tl.dot; more than
             the tile holds (MQA, long query blocks) take several row blocks
    split    KEYS_PER_SPLIT consecutive keys (a multiple of BLOCK_N), so the cache is read once, by
             B * Hkv * n_splits programs at the same time
and streams its keys with attn_math's attn_fwd_inner (the forward's online softmax, masks, soft-capping).  Each
program stores its unnormalised accumulator acc_s [rows, D] and its running (m_s, l_s) (log2 domain) in fp32; the
combine kernel merges the splits of a row:  M = max_s m_s,  w_s = 2^(m_s - M),  l = Σ w_s l_s,
O = Σ w_s acc_s / l,  LSE = lse_pack(M, l).  m and l are kept apart (not m + log2 l): a split whose every key is a
floor entry has m_s = FLOOR2 = -2^126, where adding log2 l would round l away (attn_math's Note [finite-floor
rows]); merged this way a row made of floor entries only gets the forward's sentinel LSE, a split with an ordinary
key wins over floor-only splits (their w_s = 2^(FLOOR2 - M) = 0), and a split with no allowed key (m_s = -inf,
l_s = 0) adds nothing; a row with no allowed key at all gets O = 0 and LSE = -inf.  With one split the split
kernel writes O and LSE itself (no partials, one launch).  The result has attention_fwd's contract
(kernels/attention.py), so attention_bwd can take it: only the summation order differs.

is_causal is the op's top-left alignment (key j for query i iff j <= i): keys at or past Sq are never allowed, so the
launcher reads only min(Sk, Sq) keys.  A KV cache's bottom-right causal mask comes as attn_mask.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import torch
import triton
import triton.language as tl

from inductor_conv.kernels import interpreting
from inductor_conv.kernels.attn_common import (INT32_SPAN, MASK_ADDITIVE, MASK_BOOL, MASK_NONE, check_softcap,
                                              score_scales, slice_span, wide_offsets)
from inductor_conv.kernels.launch import FastLaunch, cdiv

from .attn_math import attn_fwd_inner, lse_pack, tile_source, wide

MAX_QUERIES = 16  # decode takes Sq <= 16 (use_decode)
_TL_DTYPES = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}
# Split planning (_num_splits): about WAVES programs per SM, each streaming at least MIN_SPLIT_TILES key tiles (with
# num_stages in flight, fewer would leave the pipeline half full), at most MAX_SPLITS splits (the combine loads a
# row's splits as one [BLOCK_S, BLOCK_D] tile).  Not yet timed on a GPU: benchmarks/attention_decode.py --sweep
# times other values (module globals, read when a shape is first planned).
WAVES = 2
MIN_SPLIT_TILES = 4
MAX_SPLITS = 64


@dataclasses.dataclass(frozen=True)
class DecodeTile:
    """Split kernel tile: at most max_block_m packed (head, query) rows a program (a power of two >= 16), BLOCK_N
    keys a loop step (a power of two >= 16)."""

    max_block_m: int
    block_n: int
    num_warps: int
    num_stages: int


def decode_tile(dtype: torch.dtype, block_d: int) -> DecodeTile:
    """The split kernel's tile.  CUDA: a K and a V tile of 64 keys x 128 dims in bf16 are 32 KB a stage, four stages
    in flight (128 KB of shared memory); wider or fp32 rows halve BLOCK_N to keep a stage's bytes.  Chosen offline
    (sm_90 compile, tests/test_attention_decode.py), not yet timed.  Interpreter: small tiles, so that the CPU tests
    see several key tiles, several splits and several row blocks."""
    if interpreting():
        return DecodeTile(16, 16, 4, 1)
    row_bytes = block_d * dtype.itemsize
    return DecodeTile(64, 64 if row_bytes <= 256 else 32, 4, 4 if row_bytes <= 256 else 3)


# ================================================================ kernels
@triton.jit
def _decode_split_kernel(
    Q, K, V, MASK, WS, OUT, LSE,
    stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
    stride_ob, stride_oh, stride_om, stride_od,
    H_KV, GROUP, SEQ_Q, SEQ_K, N_SPLITS, KEYS_PER_SPLIT, ML_OFF, N_ROWS, qk_scale2, softcap_scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, SOFTCAP: tl.constexpr, FINAL: tl.constexpr,
    DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, WIDE: tl.constexpr,
):
    """Grid (n_row_blocks * N_SPLITS * B * H_KV,), row blocks fastest (they read the same keys: L2), then splits.
    One program: packed rows [i_mb * BLOCK_M, +BLOCK_M) of (b, kv head) against keys [lo, lo + KEYS_PER_SPLIT).
    FINAL (one split): O and LSE.  Else the partials of Note [flash-decoding] into the fp32 workspace WS:
    acc at (row * N_SPLITS + split) * HEAD_DIM, m at ML_OFF + row * N_SPLITS + split, l N_ROWS * N_SPLITS after m,
    where row = (b * H_KV + kv head) * GROUP * SEQ_Q + r indexes [B, Hq, Sq] (LSE's layout) as well.
    WIDE: Note [int64 offsets] in attn_common.py."""
    if WIDE:
        stride_qm, stride_qd, stride_kn, stride_kd = wide(stride_qm), wide(stride_qd), wide(stride_kn), wide(stride_kd)
        stride_vn, stride_vd, stride_mm, stride_mn = wide(stride_vn), wide(stride_vd), wide(stride_mm), wide(stride_mn)
        stride_om, stride_od = wide(stride_om), wide(stride_od)
    n_mb = tl.cdiv(GROUP * SEQ_Q, BLOCK_M)
    i_mb = tl.program_id(0) % n_mb
    i_split = tl.program_id(0) // n_mb % N_SPLITS
    i_bhk = tl.program_id(0) // (n_mb * N_SPLITS)
    i_b, i_hk = i_bhk // H_KV, i_bhk % H_KV
    # ---- packed rows: r = g * Sq + i  ->  query head hk * G + g, query i; padding rows get i = Sq (nothing allowed)
    o_r = i_mb * BLOCK_M + tl.arange(0, BLOCK_M)
    m_r = o_r < GROUP * SEQ_Q
    o_h = i_hk * GROUP + o_r // SEQ_Q
    o_i = tl.where(m_r, o_r % SEQ_Q, SEQ_Q)
    o_d = tl.arange(0, BLOCK_D)
    m_d = o_d < HEAD_DIM
    PAD_D: tl.constexpr = BLOCK_D != HEAD_DIM
    p_q = Q + i_b.to(tl.int64) * stride_qb + o_h[:, None].to(tl.int64) * stride_qh + o_i[:, None] * stride_qm \
        + o_d[None, :] * stride_qd
    b_q = tl.load(p_q, mask=m_r[:, None] & m_d[None, :], other=0.0).to(DOT_DTYPE)  # [BM, BD]
    mask_off = i_b.to(tl.int64) * stride_mb + o_h[:, None].to(tl.int64) * stride_mh  # [BM, 1] (row heads differ)
    o_jb = tl.arange(0, BLOCK_N)
    p_k = tile_source(K, i_b.to(tl.int64) * stride_kb + i_hk.to(tl.int64) * stride_kh, o_rows=o_jb, o_d=o_d,
                      stride_row=stride_kn, stride_d=stride_kd, n_rows=SEQ_K, HEAD_DIM=HEAD_DIM, BLOCK_R=BLOCK_N,
                      BLOCK_D=BLOCK_D, USE_TMA=False)
    p_v = tile_source(V, i_b.to(tl.int64) * stride_vb + i_hk.to(tl.int64) * stride_vh, o_rows=o_jb, o_d=o_d,
                      stride_row=stride_vn, stride_d=stride_vd, n_rows=SEQ_K, HEAD_DIM=HEAD_DIM, BLOCK_R=BLOCK_N,
                      BLOCK_D=BLOCK_D, USE_TMA=False)
    # ---- keys [lo, hi): whole tiles unmasked, the ragged end (every tile when causal) masked
    lo = i_split * KEYS_PER_SPLIT
    hi = tl.minimum(lo + KEYS_PER_SPLIT, SEQ_K)
    if IS_CAUSAL:
        mid = lo
    else:
        mid = tl.minimum(tl.maximum(SEQ_K // BLOCK_N * BLOCK_N, lo), hi)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    b_m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    b_l = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc, b_m, b_l = attn_fwd_inner(
        acc, b_m, b_l, b_q, p_k, p_v, MASK=MASK, mask_off=mask_off, seed=0, i_b=i_b, i_h=i_hk, o_i=o_i, m_d=m_d,
        m_dv=m_d, lo=lo, hi=mid, stride_kn=stride_kn, stride_vn=stride_vn, stride_mm=stride_mm, stride_mn=stride_mn,
        SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=0,
        BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_D, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=False,
        MASKED=False, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=False, softcap_scale=softcap_scale,
        SOFTCAP=SOFTCAP)
    acc, b_m, b_l = attn_fwd_inner(
        acc, b_m, b_l, b_q, p_k, p_v, MASK=MASK, mask_off=mask_off, seed=0, i_b=i_b, i_h=i_hk, o_i=o_i, m_d=m_d,
        m_dv=m_d, lo=mid, hi=hi, stride_kn=stride_kn, stride_vn=stride_vn, stride_mm=stride_mm, stride_mn=stride_mn,
        SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=0,
        BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_D, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=False,
        MASKED=True, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=False, softcap_scale=softcap_scale,
        SOFTCAP=SOFTCAP)
    # ---- store
    o_row = i_bhk.to(tl.int64) * (GROUP * SEQ_Q) + o_r  # [BM] index into [B, Hq, Sq]
    m_out = m_r[:, None] & m_d[None, :]
    if FINAL:  # a row with no allowed key has l = 0 and acc = 0: output 0, lse = -inf
        b_o = acc / tl.where(b_l == 0.0, 1.0, b_l)[:, None]
        p_o = OUT + i_b.to(tl.int64) * stride_ob + o_h[:, None].to(tl.int64) * stride_oh + o_i[:, None] * stride_om \
            + o_d[None, :] * stride_od
        tl.store(p_o, b_o.to(OUT.dtype.element_ty), mask=m_out)
        tl.store(LSE + o_row, lse_pack(b_m, b_l), mask=m_r)
    else:
        p_part = o_row * N_SPLITS + i_split
        tl.store(WS + p_part[:, None] * HEAD_DIM + o_d[None, :], acc, mask=m_out)
        tl.store(WS + ML_OFF + p_part, b_m, mask=m_r)
        tl.store(WS + ML_OFF + N_ROWS * N_SPLITS + p_part, b_l, mask=m_r)


@triton.jit
def _decode_combine_kernel(
    WS, OUT, LSE, stride_ob, stride_oh, stride_om, stride_od, H_Q, SEQ_Q, N_SPLITS, ML_OFF, N_ROWS,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_S: tl.constexpr,
):
    """Grid (B * Hq * Sq,): one program merges the N_SPLITS partials of one row (Note [flash-decoding]) and writes
    its O [D] and LSE.  All splits load at once ([BLOCK_S, BLOCK_D]): one round trip, not N_SPLITS."""
    row = tl.program_id(0).to(tl.int64)
    o_s, o_d = tl.arange(0, BLOCK_S), tl.arange(0, BLOCK_D)
    m_s, m_d = o_s < N_SPLITS, o_d < HEAD_DIM
    p_part = row * N_SPLITS + o_s
    b_m = tl.load(WS + ML_OFF + p_part, mask=m_s, other=float("-inf"))  # [BS]
    b_l = tl.load(WS + ML_OFF + N_ROWS * N_SPLITS + p_part, mask=m_s, other=0.0)
    b_acc = tl.load(WS + p_part[:, None] * HEAD_DIM + o_d[None, :], mask=m_s[:, None] & m_d[None, :], other=0.0)
    m_max = tl.max(b_m, 0)
    w = tl.math.exp2(b_m - tl.where(m_max == float("-inf"), 0.0, m_max))  # 0 for splits with no allowed key
    l_sum = tl.sum(w * b_l, 0)
    b_o = tl.sum(w[:, None] * b_acc, 0) / tl.where(l_sum == 0.0, 1.0, l_sum)  # [BD]
    i_b, i_h, i_i = row // (H_Q * SEQ_Q), row // SEQ_Q % H_Q, row % SEQ_Q
    p_o = OUT + i_b * stride_ob + i_h * stride_oh + i_i * stride_om + o_d * stride_od
    tl.store(p_o, b_o.to(OUT.dtype.element_ty), mask=m_d)
    tl.store(LSE + row, lse_pack(m_max, l_sum))


# ================================================================ launchers
_SPLIT = FastLaunch(_decode_split_kernel)  # Note [eager launch path] in kernels/launch.py
_COMBINE = FastLaunch(_decode_combine_kernel)


def use_decode(q: torch.Tensor, k: torch.Tensor, dropout_p: float = 0.0, needs_grad: bool = False) -> bool:
    """Whether attention_fwd should run attention_decode_fwd: few queries (Sq <= 16), no dropout, no gradient
    wanted (decode is inference; the training path keeps the kernels its backward was tuned with), a dtype and head
    dim the kernels take, on CUDA (or Triton's interpreter, for CPU tests).  Any B, Hkv, Sk, mask and is_causal:
    with B * Hkv past the SM count the plan is one split, which is still one read of K/V per kv head where the
    forward kernel reads it once per query head."""
    return (dropout_p == 0.0 and not needs_grad and q.dim() == 4 and decode_shape_ok(q.shape[-2], q.shape[-1],
                                                                                     q.dtype)
            and q.dtype == k.dtype and (q.is_cuda or (q.device.type == "cpu" and interpreting())))


def decode_shape_ok(seq_q: int, head_dim: int, dtype: torch.dtype) -> bool:
    """The shape / dtype part of use_decode (the compiled lowering asks it with static sizes): 1 <= Sq <= 16,
    1 <= D <= 256, fp16 / bf16 / fp32."""
    return 1 <= seq_q <= MAX_QUERIES and 1 <= head_dim <= 256 and dtype in _TL_DTYPES


def attention_decode_fwd(q, k, v, attn_mask, is_causal: bool, scale, softcap: float = 0.0, *, num_splits=None,
                         tile: DecodeTile | None = None):
    """Flash-decoding forward (Note [flash-decoding]).  Returns (out [B, Hq, Sq, D] like q (empty_like), lse
    [B, Hq, Sq] fp32), the contract of kernels/attention.py's attention_fwd without dropout.

    q [B, Hq, Sq, D], k / v [B, Hkv, Sk, D] (Hq % Hkv == 0; query head h reads kv head h // (Hq // Hkv)), fp16 / bf16 /
    fp32, any strides; attn_mask None, bool (True = attend) or additive float, broadcastable to [B, Hq, Sq, Sk] (any
    view; broadcast dims are read with stride 0); is_causal top-left (j <= i, as the op); scale None = 1 / sqrt(D),
    else > 0; softcap > 0: cap(x) = softcap * tanh(x / softcap) on the scaled scores before the mask.  Any Sq works
    (use_decode says when it pays).  lse: natural log; -inf and O = 0 for a row with no allowed key; attn_math's
    floor sentinel for a row whose keys all carry a mask <= -2^24.  num_splits / tile override the plan (tests,
    benchmarks).  Everything derived from the shapes is cached (_plan) and the kernels launch through FastLaunch
    (Note [eager launch path]), so a call costs two or three allocations and one or two launches.
    """
    p = plan_for(q, k, v, attn_mask, is_causal, scale, softcap, num_splits, tile)
    out = torch.empty_like(q)
    lse = torch.empty(p.lse_shape, device=q.device, dtype=torch.float32)
    if p.empty:  # no rows, or no keys (then every row has no allowed key)
        return out.zero_(), lse.fill_(float("-inf"))
    ws = None if p.n_splits == 1 else torch.empty(p.ws_numel, device=q.device, dtype=torch.float32)
    constexprs = p.split_constexprs  # WIDE for the mask's layout (the plan's key); for q, k, v and out here
    if not constexprs["WIDE"] and wide_offsets(q, k, v, out):  # (their strides are in FastLaunch's key)
        constexprs = dict(constexprs, WIDE=True)
    _SPLIT(p.grid, p, (q, k, v, attn_mask, ws, out, lse),
           (*q.stride(), *k.stride(), *v.stride(), *p.mask_strides, *out.stride(), *p.split_ints), p.split_floats,
           constexprs, num_warps=p.num_warps, num_stages=p.num_stages)
    if p.n_splits > 1:
        _COMBINE((p.n_rows,), p, (ws, out, lse), (*out.stride(), *p.combine_ints), (), p.combine_constexprs,
                 num_warps=p.combine_warps)
    return out, lse


def plan_for(q, k, v, attn_mask, is_causal, scale, softcap=0.0, num_splits=None, tile=None) -> _Plan:
    """The cached plan of a call (its n_splits: benchmarks/attention_decode.py)."""
    mask_key = None if attn_mask is None else (attn_mask.dtype, attn_mask.device, attn_mask.shape, attn_mask.stride())
    return _plan(q.shape, q.dtype, q.device, k.shape, k.dtype, k.device, v.shape, v.dtype, v.device, mask_key,
                 bool(is_causal), scale, softcap, num_splits, tile)


@dataclasses.dataclass(frozen=True, eq=False)
class _Plan:
    """One configuration's launch arguments (_plan), used by identity as FastLaunch's meta (Note [eager launch path]
    in kernels/launch.py): it names q's dtype (Q, K, V, OUT), the mask's dtype or None, and whether the workspace
    exists (n_splits > 1)."""

    lse_shape: tuple
    empty: bool
    n_splits: int = 0
    n_rows: int = 0
    ws_numel: int = 0
    grid: tuple = ()
    mask_strides: tuple = ()
    split_ints: tuple = ()
    split_floats: tuple = ()
    split_constexprs: dict = dataclasses.field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 1
    combine_ints: tuple = ()
    combine_constexprs: dict = dataclasses.field(default_factory=dict)
    combine_warps: int = 1


@functools.lru_cache(maxsize=512)
def _plan(q_shape, q_dtype, q_device, k_shape, k_dtype, k_device, v_shape, v_dtype, v_device, mask_key, is_causal,
          scale, softcap, num_splits, tile) -> _Plan:
    """Validation and every launch argument that depends only on shapes, dtypes, the mask's layout and the scalars
    (strides of q, k, v and out are read per call).  Errors name the argument."""
    for name, shape, dtype, device in (("q", q_shape, q_dtype, q_device), ("k", k_shape, k_dtype, k_device),
                                       ("v", v_shape, v_dtype, v_device)):
        if len(shape) != 4:
            raise ValueError(f"{name} must be a 4-D tensor (B, H, S, D), got shape {tuple(shape)}")
        if dtype not in _TL_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16 or float32, got {dtype}")
        if dtype != q_dtype or device != q_device:
            raise ValueError(f"q, k, v must share a dtype and device, got {name} {dtype} on {device}")
    B, Hq, Sq, D = q_shape
    _, Hkv, Sk, _ = k_shape
    if tuple(k_shape) != tuple(v_shape) or k_shape[0] != B or k_shape[3] != D:
        raise ValueError(f"k {tuple(k_shape)} and v {tuple(v_shape)} must be (B, Hkv, Sk, D) with q {tuple(q_shape)}")
    if Hkv == 0 or Hq % Hkv != 0:
        raise ValueError(f"query heads ({Hq}) must be a multiple of key/value heads ({Hkv})")
    if not 1 <= D <= 256:
        raise ValueError(f"head dim must be in 1..256, got {D}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    if not scale > 0.0:
        raise ValueError(f"scale must be positive (folded into exp2 after the row max), got {scale}")
    softcap = check_softcap(softcap)
    mask_kind, mask_strides = _mask_layout(mask_key, q_device, (B, Hq, Sq, Sk))
    if num_splits is not None and not (isinstance(num_splits, int) and 1 <= num_splits <= MAX_SPLITS):
        raise ValueError(f"num_splits must be an int in 1..{MAX_SPLITS} or None, got {num_splits!r}")

    n_keys = min(Sk, Sq) if is_causal else Sk  # top-left causal: keys >= Sq are never allowed
    n_rows = B * Hq * Sq
    lse_shape = (B, Hq, Sq)
    if n_rows == 0 or n_keys == 0:
        return _Plan(lse_shape, True)
    block_d = max(16, triton.next_power_of_2(D))
    tile = tile or decode_tile(q_dtype, block_d)
    group_rows = (Hq // Hkv) * Sq
    block_m = min(tile.max_block_m, max(16, triton.next_power_of_2(group_rows)))
    n_mb = cdiv(group_rows, block_m)
    n_tiles = cdiv(n_keys, tile.block_n)
    if num_splits is None:
        num_splits = _num_splits(B * Hkv * n_mb, n_tiles, q_device)
    tiles_per_split = cdiv(n_tiles, min(num_splits, n_tiles))
    n_splits = cdiv(n_tiles, tiles_per_split)  # no empty split
    ml_off = n_rows * n_splits * D
    qk_scale2, softcap_scale = score_scales(scale, softcap)
    dot_dtype = _TL_DTYPES[q_dtype]
    if interpreting() and q_dtype.itemsize == 2:
        dot_dtype = tl.float32  # the interpreter's 16-bit tl.dot is wrong (kernels/attention.py's _kernel_options)
    split_constexprs = dict(
        HEAD_DIM=D, BLOCK_D=block_d, BLOCK_M=block_m, BLOCK_N=tile.block_n, MASK_KIND=mask_kind,
        IS_CAUSAL=bool(is_causal), SOFTCAP=softcap > 0, FINAL=n_splits == 1, DOT_DTYPE=dot_dtype,
        PRECISION="ieee" if q_dtype == torch.float32 or interpreting() else "tf32",
        WIDE=slice_span((B, Hq, Sq, Sk), mask_strides) >= INT32_SPAN)  # Note [int64 offsets]
    block_s = max(2, triton.next_power_of_2(n_splits))
    return _Plan(
        lse_shape, False, n_splits, n_rows, ml_off + 2 * n_rows * n_splits, (n_mb * n_splits * B * Hkv,), mask_strides,
        split_ints=(Hkv, Hq // Hkv, Sq, n_keys, n_splits, tiles_per_split * tile.block_n, ml_off, n_rows),
        split_floats=(qk_scale2, softcap_scale), split_constexprs=split_constexprs, num_warps=tile.num_warps,
        num_stages=tile.num_stages, combine_ints=(Hq, Sq, n_splits, ml_off, n_rows),
        combine_constexprs=dict(HEAD_DIM=D, BLOCK_D=block_d, BLOCK_S=block_s),
        combine_warps=max(1, min(4, block_s * block_d // 1024)))


def _mask_layout(mask_key, device, target):
    """(MASK_KIND, its strides as a view expanded to target [B, Hq, Sq, Sk]: 0 along broadcast dims)."""
    if mask_key is None:
        return MASK_NONE, (0, 0, 0, 0)
    dtype, mask_device, shape, stride = mask_key
    if dtype == torch.bool:
        kind = MASK_BOOL
    elif dtype.is_floating_point:
        kind = MASK_ADDITIVE
    else:
        raise TypeError(f"attn_mask must be bool or floating point, got {dtype}")
    if mask_device != device or len(shape) > 4:
        raise ValueError(f"attn_mask must be on {device} with at most 4 dims, got {tuple(shape)} on {mask_device}")
    pad = 4 - len(shape)
    shape, stride = (1,) * pad + tuple(shape), (0,) * pad + tuple(stride)
    if any(s != t and s != 1 for s, t in zip(shape, target)):
        raise ValueError(f"attn_mask {tuple(shape[pad:])} is not broadcastable to {target}")
    return kind, tuple(st if s != 1 else 0 for s, st in zip(shape, stride))


def _num_splits(slices: int, n_tiles: int, device: torch.device) -> int:
    """Key splits per (b, kv head, row block): enough programs for WAVES per SM, each with >= MIN_SPLIT_TILES key
    tiles, at most MAX_SPLITS; 1 when the slices alone fill the GPU."""
    sms = _sm_count(device)
    wanted = cdiv(WAVES * sms, slices)
    return max(1, min(wanted, n_tiles // MIN_SPLIT_TILES, MAX_SPLITS))


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    """The device's SM count; 4 for the interpreter (so that CPU tests plan several splits)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4
