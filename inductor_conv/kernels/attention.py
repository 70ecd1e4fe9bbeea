"""Flash-attention Triton kernels (forward, backward, dropout replay) and their eager launchers.

Semantics are those of `F.scaled_dot_product_attention` with native GQA; the math lives in kernels/attn_math.py
(shared with the Inductor templates), this file only indexes, launches and stores.

Shapes: q [B, Hq, Sq, D], k / v [B, Hkv, Sk, D], Hq % Hkv == 0 (query head h reads kv head h // (Hq // Hkv)),
attn_mask broadcastable to [B, Hq, Sq, Sk] (bool: True = attend, or additive float), out [B, Hq, Sq, D] with q's
stride order (`torch.empty_like(q)`), lse [B, Hq, Sq] fp32 (natural log; see attn_math's Note [finite-floor rows]).
Any strides are read as given (no hidden copies); broadcast mask dims are read with stride 0.
"""
import functools
import math

import torch
import triton
import triton.language as tl

from inductor_conv import config as _config  # for functions whose `config` argument is a tile override
from inductor_conv.heuristics.attention import (
    SHORT_MASK_LENGTH,
    attn_bwd_tile,
    attn_fwd_tile,
    fit_bwd_tile,
    fit_fwd_tile,
    head_dim_tiles,
    short_sequences,
)
from inductor_conv.kernels import attention_decode, empty_like_q, interpreting
from inductor_conv.kernels.attn_common import (MASK_ADDITIVE, check_softcap, mask_kind, score_scales, softcap_mode,
                                              wide_offsets)
from inductor_conv.kernels.launch import FastLaunch, cdiv
from inductor_conv.reference.attention import dropout_threshold

from .attn_mask_summary import summarise
from .attn_math import (attn_bwd_dkdv_cols, attn_bwd_dq_rows, attn_fwd_rows, bwd_program, head_cols, head_pad,
                        head_ptrs, load_tile, multiple_hint, store_head, wide)

# float64 is for tests (gradcheck through the launchers): it accumulates in float64 but keeps the fp32 LSE and scalars.
_DTYPES = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32, torch.float64: tl.float64}


# ================================================================ kernels
# Note [one kernel per configuration]: each kernel is compiled once per configuration -- its constexprs: dtype, head
# dim, mask kind, causal, dropout, soft-capping, tile, plus the GQA group (a model constant) and EVEN (Note [even
# lengths] in attn_math.py) -- and serves every batch, head count and sequence length of it.  The lengths are
# runtime values that Triton does not specialise (do_not_specialize: it would otherwise compile again for a length
# divisible by 16 and one that is not), so a new length costs no compile; the kernels tell the compiler what EVEN
# implies about them instead (Note [length hints] in attn_math.py).  What a process can compile is bounded: per
# configuration, one kernel for each GQA group it meets times EVEN or not (the forward's also times whether Sq is a
# multiple of 16), times whether the call is short (queries and keys at most SHORT_MASK_LENGTH: Note [short
# sequences] in heuristics/attention.py), times the rare stride whose divisibility by 16 differs (Triton specialises
# strides, and must, for 16-byte loads).  A shape always runs the same kernel, so repeated calls give the same bits.  Triton keeps
# compiled kernels in its on-disk cache (~/.triton/cache, TRITON_CACHE_DIR), so a later process loads them instead
# of compiling.
@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K", "SEED_VALUE"])
def _attn_fwd_kernel(
    Q, K, V, MASK, SEED, OUT, LSE, ROWS,
    stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
    stride_ob, stride_oh, stride_om, stride_od, stride_rb, stride_rh,
    H_Q, SEQ_Q, SEQ_K, SEED_VALUE, qk_scale2, dropout_scale, softcap_scale, dropout_threshold: tl.constexpr,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, ACC_DTYPE: tl.constexpr, PAIR: tl.constexpr,
    SOFTCAP: tl.constexpr, EVEN: tl.constexpr, HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr,
    MASK_RANGES: tl.constexpr, BLOCK_D2: tl.constexpr, ROWS16: tl.constexpr, SEED_ARG: tl.constexpr,
    WIDE: tl.constexpr,
):
    """Grid (cdiv(Sq, BLOCK_M) * B * Hq,): one program = BLOCK_M query rows of one (b, h); the row blocks of a
    head run together (K/V stay in L2), the longest causal rows first.  One grid axis: B * Hq may pass 65535.
    PAIR (causal): grid (cdiv(cdiv(Sq, BLOCK_M), 2) * B * Hq,), program u of a (b, h) runs row blocks n - 1 - u and
    u, as the template's CAUSAL_PAIR (lowerings/attention.py).  ROWS16: SEQ_Q % 16 == 0 (Note [length hints]).
    SEED_ARG (with dropout): the seed is SEED_VALUE, and program 0 writes it to SEED for the backward (Note [host
    dropout seed]); otherwise SEED holds it.  WIDE: Note [int64 offsets] in attn_common.py."""
    if WIDE:
        stride_qm, stride_qd, stride_kn, stride_kd = wide(stride_qm), wide(stride_qd), wide(stride_kn), wide(stride_kd)
        stride_vn, stride_vd, stride_mm, stride_mn = wide(stride_vn), wide(stride_vd), wide(stride_mm), wide(stride_mn)
        stride_om, stride_od = wide(stride_om), wide(stride_od)
    if SEED_ARG and HAS_DROPOUT:
        if tl.program_id(0) == 0:
            tl.store(SEED, SEED_VALUE)
    SEQ_Q = multiple_hint(SEQ_Q, 16, ROWS16)  # Note [length hints]
    SEQ_K = multiple_hint(SEQ_K, BLOCK_N, EVEN)
    n_m = tl.cdiv(SEQ_Q, BLOCK_M)
    if PAIR:
        u = tl.program_id(0) % ((n_m + 1) // 2)
        i_bh = tl.program_id(0) // ((n_m + 1) // 2)
        n_rounds = tl.minimum(2, n_m - 2 * u)
    else:
        u = tl.program_id(0) % n_m
        i_bh = tl.program_id(0) // n_m
        n_rounds = 1
    i_b, i_h = i_bh // H_Q, i_bh % H_Q
    for r in range(n_rounds):
        i_m = tl.where(r == 0, n_m - 1 - u, u)
        _attn_fwd_block(Q, K, V, MASK, SEED, OUT, LSE, ROWS, i_b=i_b, i_h=i_h, i_bh=i_bh, i_m=i_m,
                        stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
                        stride_kb=stride_kb, stride_kh=stride_kh, stride_kn=stride_kn, stride_kd=stride_kd,
                        stride_vb=stride_vb, stride_vh=stride_vh, stride_vn=stride_vn, stride_vd=stride_vd,
                        stride_mb=stride_mb, stride_mh=stride_mh, stride_mm=stride_mm, stride_mn=stride_mn,
                        stride_ob=stride_ob, stride_oh=stride_oh, stride_om=stride_om, stride_od=stride_od,
                        stride_rb=stride_rb, stride_rh=stride_rh,
                        GROUP=GROUP, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_scale=dropout_scale,
                        softcap_scale=softcap_scale, dropout_threshold=dropout_threshold, HEAD_DIM=HEAD_DIM,
                        BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
                        HAS_DROPOUT=HAS_DROPOUT, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, ACC_DTYPE=ACC_DTYPE,
                        SOFTCAP=SOFTCAP, EVEN=EVEN, HEAD_DIM_V=HEAD_DIM_V, BLOCK_DV=BLOCK_DV, MASK_RANGES=MASK_RANGES,
                        BLOCK_D2=BLOCK_D2, SEED_ARG=SEED_ARG, SEED_VALUE=SEED_VALUE)


@triton.jit
def _attn_fwd_block(
    Q, K, V, MASK, SEED, OUT, LSE, ROWS, i_b, i_h, i_bh, i_m,
    stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
    stride_ob, stride_oh, stride_om, stride_od, stride_rb, stride_rh,
    GROUP, SEQ_Q, SEQ_K, qk_scale2, dropout_scale, softcap_scale, dropout_threshold: tl.constexpr,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, ACC_DTYPE: tl.constexpr, SOFTCAP: tl.constexpr,
    EVEN: tl.constexpr, HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr, MASK_RANGES: tl.constexpr,
    BLOCK_D2: tl.constexpr, SEED_ARG: tl.constexpr, SEED_VALUE,
):
    """Row block i_m of (b, h): O [BLOCK_M, HEAD_DIM_V] and LSE."""
    b_o, b_lse = attn_fwd_rows(
        Q, K, V, MASK, SEED, i_b=i_b, i_h=i_h, i_hk=i_h // GROUP, start_m=i_m * BLOCK_M,
        stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
        stride_kb=stride_kb, stride_kh=stride_kh, stride_kn=stride_kn, stride_kd=stride_kd,
        stride_vb=stride_vb, stride_vh=stride_vh, stride_vn=stride_vn, stride_vd=stride_vd,
        stride_mb=stride_mb, stride_mh=stride_mh, stride_mm=stride_mm, stride_mn=stride_mn,
        SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale,
        softcap_scale=softcap_scale,
        HEAD_DIM=HEAD_DIM, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
        HAS_DROPOUT=HAS_DROPOUT, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, ACC_DTYPE=ACC_DTYPE, SOFTCAP=SOFTCAP,
        EVEN=EVEN, MASK_RANGES=MASK_RANGES, HEAD_DIM_V=HEAD_DIM_V, BLOCK_DV=BLOCK_DV, ROWS=ROWS, stride_rb=stride_rb,
        stride_rh=stride_rh, BLOCK_D2=BLOCK_D2, SEED_ARG=SEED_ARG, SEED_VALUE=SEED_VALUE)
    o_i, o_dv = i_m * BLOCK_M + tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_DV)
    m_i = o_i < SEQ_Q
    p_o = OUT + i_b.to(tl.int64) * stride_ob + i_h.to(tl.int64) * stride_oh + o_i[:, None] * stride_om + o_dv[None, :] * stride_od
    tl.store(p_o, b_o.to(OUT.dtype.element_ty), mask=m_i[:, None] & (o_dv < HEAD_DIM_V)[None, :])
    tl.store(LSE + i_bh.to(tl.int64) * SEQ_Q + o_i, b_lse, mask=m_i)


@triton.jit
def _attn_bwd_delta_kernel(
    OUT, DO, DELTA, stride_ob, stride_oh, stride_om, stride_od, stride_dob, stride_doh, stride_dom, stride_dod,
    H_Q, SEQ_Q, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, ACC_DTYPE: tl.constexpr,
    WIDE: tl.constexpr,
):
    """Δ_i = Σ_d dO_id O_id (fp32): the softmax-backward row term, since Σ_j P_ij dP_ij = dO_i · O_i.
    Grid (cdiv(Sq, BLOCK_M) * B * Hq,).  WIDE: Note [int64 offsets] in attn_common.py."""
    if WIDE:
        stride_om, stride_od, stride_dom, stride_dod = wide(stride_om), wide(stride_od), wide(stride_dom), wide(stride_dod)
    n_m = tl.cdiv(SEQ_Q, BLOCK_M)
    i_bh = tl.program_id(0) // n_m
    i_b, i_h = i_bh // H_Q, i_bh % H_Q
    o_i, o_d = tl.program_id(0) % n_m * BLOCK_M + tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_D)
    m_i, m_d = o_i < SEQ_Q, o_d < HEAD_DIM
    p_o = OUT + i_b.to(tl.int64) * stride_ob + i_h.to(tl.int64) * stride_oh + o_i[:, None] * stride_om + o_d[None, :] * stride_od
    p_do = DO + i_b.to(tl.int64) * stride_dob + i_h.to(tl.int64) * stride_doh + o_i[:, None] * stride_dom + o_d[None, :] * stride_dod
    b_o = load_tile(p_o, m_i, m_d, True, True).to(ACC_DTYPE)
    b_do = load_tile(p_do, m_i, m_d, True, True).to(ACC_DTYPE)
    tl.store(DELTA + i_bh.to(tl.int64) * SEQ_Q + o_i, tl.sum(b_o * b_do, 1), mask=m_i)


@triton.jit
def _attn_bwd_cols(
    Q, K, V, MASK, SEED, DO, LSE, DELTA, DK, DV, COLS, i_b, i_hk, i_n, p_dk, p_dv, m_j, m_d, m_out_v,
    stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
    stride_dob, stride_doh, stride_dom, stride_dod, stride_cb, stride_ch,
    H_Q, GROUP, SEQ_Q, SEQ_K, qk_scale2, scale, dropout_scale, softcap_scale, dropout_threshold: tl.constexpr,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
    DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, ACC_DTYPE: tl.constexpr, MASKED_FIRST: tl.constexpr,
    SOFTCAP: tl.constexpr, PART: tl.constexpr, EVEN: tl.constexpr, HEAD_DIM_V: tl.constexpr,
    BLOCK_DV: tl.constexpr, MASK_RANGES: tl.constexpr, BLOCK_D2: tl.constexpr, PAD_D: tl.constexpr,
):
    """dK and / or dV (PART 0 / 2 / 1, Note [split dK/dV]) of key block i_n of (b, kv head i_hk), stored through
    p_dk (head_ptrs: a pair with a split head dim) under m_j / m_d and p_dv under m_out_v: attn_bwd_dkdv_cols with
    this kernel's arguments."""
    dk, dv = attn_bwd_dkdv_cols(
        Q, K, V, MASK, SEED, DO, LSE, DELTA, i_b=i_b, i_hk=i_hk, start_n=i_n * BLOCK_N,
        stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
        stride_kb=stride_kb, stride_kh=stride_kh, stride_kn=stride_kn, stride_kd=stride_kd,
        stride_vb=stride_vb, stride_vh=stride_vh, stride_vn=stride_vn, stride_vd=stride_vd,
        stride_mb=stride_mb, stride_mh=stride_mh, stride_mm=stride_mm, stride_mn=stride_mn,
        stride_dob=stride_dob, stride_doh=stride_doh, stride_dom=stride_dom, stride_dod=stride_dod,
        H_Q=H_Q, GROUP=GROUP, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, scale=scale,
        dropout_threshold=dropout_threshold, dropout_scale=dropout_scale, softcap_scale=softcap_scale,
        HEAD_DIM=HEAD_DIM, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
        HAS_DROPOUT=HAS_DROPOUT, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, ACC_DTYPE=ACC_DTYPE,
        MASKED_FIRST=MASKED_FIRST, SOFTCAP=SOFTCAP, PART=PART, EVEN=EVEN, MASK_RANGES=MASK_RANGES,
        HEAD_DIM_V=HEAD_DIM_V, BLOCK_DV=BLOCK_DV, COLS=COLS, stride_cb=stride_cb, stride_ch=stride_ch,
        BLOCK_D2=BLOCK_D2)
    if PART != 1:
        store_head(p_dk, dk, m_j, m_d, PAD_D)
    if PART != 2:
        tl.store(p_dv, dv.to(DV.dtype.element_ty), mask=m_out_v)


@triton.jit(do_not_specialize=["SEQ_Q", "SEQ_K"])
def _attn_bwd_kernel(
    Q, K, V, MASK, SEED, DO, LSE, DELTA, DQ, DK, DV, DS, ROWS, COLS,
    stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
    stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
    stride_dob, stride_doh, stride_dom, stride_dod, stride_dqb, stride_dqh, stride_dqm, stride_dqd,
    stride_dkb, stride_dkh, stride_dkn, stride_dkd, stride_dvb, stride_dvh, stride_dvn, stride_dvd,
    stride_rb, stride_rh, stride_cb, stride_ch,
    H_Q, H_KV, SEQ_Q, SEQ_K, qk_scale2, scale, dropout_scale, softcap_scale, dropout_threshold: tl.constexpr,
    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr, MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
    STORE_DS: tl.constexpr, DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, ACC_DTYPE: tl.constexpr,
    MASKED_FIRST: tl.constexpr, KV_FIRST: tl.constexpr, SOFTCAP: tl.constexpr, SPLIT_KV: tl.constexpr,
    EVEN: tl.constexpr, HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr, MASK_RANGES: tl.constexpr,
    BLOCK_D2: tl.constexpr, WIDE: tl.constexpr,
):
    """Grid ((cdiv(Sk, BLOCK_N) + GROUP * cdiv(Sq, BLOCK_N)) * B * Hkv,), two kinds of program in one launch (as
    FlexAttention's backward), per (b, kv head): the first cdiv(Sk, BLOCK_N) own BLOCK_N keys and produce dK/dV
    (query tiles of BLOCK_M), the others own BLOCK_N query rows of one query head and produce dQ (key tiles of
    BLOCK_M); KV_FIRST (under GQA) launches every slice's dK/dV programs first (bwd_program).  SPLIT_KV (Note [split
    dK/dV]): 2 * cdiv(Sk, BLOCK_N) key programs per slice, the dK ones, then the dV ones.  WIDE: Note [int64
    offsets] in attn_common.py."""
    if WIDE:
        stride_qm, stride_qd, stride_kn, stride_kd = wide(stride_qm), wide(stride_qd), wide(stride_kn), wide(stride_kd)
        stride_vn, stride_vd, stride_mm, stride_mn = wide(stride_vn), wide(stride_vd), wide(stride_mm), wide(stride_mn)
        stride_dom, stride_dod, stride_dqm, stride_dqd = wide(stride_dom), wide(stride_dod), wide(stride_dqm), wide(
            stride_dqd)
        stride_dkn, stride_dkd, stride_dvn, stride_dvd = wide(stride_dkn), wide(stride_dkd), wide(stride_dvn), wide(
            stride_dvd)
    SEQ_Q = multiple_hint(SEQ_Q, BLOCK_M, EVEN)  # Note [length hints]
    SEQ_K = multiple_hint(SEQ_K, BLOCK_N, EVEN)
    n_kv_blocks = tl.cdiv(SEQ_K, BLOCK_N)
    n_kv_programs = 2 * n_kv_blocks if SPLIT_KV else n_kv_blocks
    n_p = n_kv_programs + GROUP * tl.cdiv(SEQ_Q, BLOCK_N)
    i_bhk, pid = bwd_program(tl.program_id(0), tl.num_programs(0), n_kv_programs, n_p, KV_FIRST)
    i_b, i_hk = i_bhk // H_KV, i_bhk % H_KV
    PAD_D: tl.constexpr = head_pad(HEAD_DIM, BLOCK_D, BLOCK_D2)  # Note [split head dim] in attn_math.py
    o_d, m_d = head_cols(HEAD_DIM, BLOCK_D, BLOCK_D2)
    if pid < n_kv_programs:
        i_n = pid % n_kv_blocks
        o_j = i_n * BLOCK_N + tl.arange(0, BLOCK_N)
        o_dv = tl.arange(0, BLOCK_DV)
        m_j = o_j < SEQ_K
        m_out_v = m_j[:, None] & (o_dv < HEAD_DIM_V)[None, :]
        p_dk = head_ptrs(DK, i_b.to(tl.int64) * stride_dkb + i_hk.to(tl.int64) * stride_dkh, o_j, o_d, stride_dkn,
                         stride_dkd, PAD_D)
        p_dv = DV + i_b.to(tl.int64) * stride_dvb + i_hk.to(tl.int64) * stride_dvh + o_j[:, None] * stride_dvn + o_dv[None, :] * stride_dvd
        # without SPLIT_KV every key program runs both gradients (PART 0); with it the first n_kv_blocks run dK
        # (PART 2), the others dV (PART 1): Note [split dK/dV]
        if pid < n_kv_blocks:
            _attn_bwd_cols(
                Q, K, V, MASK, SEED, DO, LSE, DELTA, DK, DV, COLS, i_b=i_b, i_hk=i_hk, i_n=i_n, p_dk=p_dk, p_dv=p_dv,
                m_j=m_j, m_d=m_d, m_out_v=m_out_v,
                stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
                stride_kb=stride_kb, stride_kh=stride_kh, stride_kn=stride_kn, stride_kd=stride_kd,
                stride_vb=stride_vb, stride_vh=stride_vh, stride_vn=stride_vn, stride_vd=stride_vd,
                stride_mb=stride_mb, stride_mh=stride_mh, stride_mm=stride_mm, stride_mn=stride_mn,
                stride_dob=stride_dob, stride_doh=stride_doh, stride_dom=stride_dom, stride_dod=stride_dod,
                stride_cb=stride_cb, stride_ch=stride_ch,
                H_Q=H_Q, GROUP=GROUP, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, scale=scale,
                dropout_scale=dropout_scale, softcap_scale=softcap_scale, dropout_threshold=dropout_threshold,
                HEAD_DIM=HEAD_DIM, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, MASK_KIND=MASK_KIND,
                IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=HAS_DROPOUT, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION,
                ACC_DTYPE=ACC_DTYPE, MASKED_FIRST=MASKED_FIRST, SOFTCAP=SOFTCAP,
                PART=2 if SPLIT_KV else 0, EVEN=EVEN, MASK_RANGES=MASK_RANGES, HEAD_DIM_V=HEAD_DIM_V, BLOCK_DV=BLOCK_DV,
                BLOCK_D2=BLOCK_D2, PAD_D=PAD_D)
        elif SPLIT_KV:
            _attn_bwd_cols(
                Q, K, V, MASK, SEED, DO, LSE, DELTA, DK, DV, COLS, i_b=i_b, i_hk=i_hk, i_n=i_n, p_dk=p_dk, p_dv=p_dv,
                m_j=m_j, m_d=m_d, m_out_v=m_out_v,
                stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
                stride_kb=stride_kb, stride_kh=stride_kh, stride_kn=stride_kn, stride_kd=stride_kd,
                stride_vb=stride_vb, stride_vh=stride_vh, stride_vn=stride_vn, stride_vd=stride_vd,
                stride_mb=stride_mb, stride_mh=stride_mh, stride_mm=stride_mm, stride_mn=stride_mn,
                stride_dob=stride_dob, stride_doh=stride_doh, stride_dom=stride_dom, stride_dod=stride_dod,
                stride_cb=stride_cb, stride_ch=stride_ch,
                H_Q=H_Q, GROUP=GROUP, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, scale=scale,
                dropout_scale=dropout_scale, softcap_scale=softcap_scale, dropout_threshold=dropout_threshold,
                HEAD_DIM=HEAD_DIM, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, MASK_KIND=MASK_KIND,
                IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=HAS_DROPOUT, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION,
                ACC_DTYPE=ACC_DTYPE, MASKED_FIRST=MASKED_FIRST, SOFTCAP=SOFTCAP,
                PART=1, EVEN=EVEN, MASK_RANGES=MASK_RANGES, HEAD_DIM_V=HEAD_DIM_V, BLOCK_DV=BLOCK_DV,
                BLOCK_D2=BLOCK_D2, PAD_D=PAD_D)
    else:
        n_q_blocks = tl.cdiv(SEQ_Q, BLOCK_N)
        i_g, i_m = (pid - n_kv_programs) // n_q_blocks, (pid - n_kv_programs) % n_q_blocks
        i_m = n_q_blocks - 1 - i_m  # the longest causal rows first
        i_h = i_hk * GROUP + i_g
        dq = attn_bwd_dq_rows(
            Q, K, V, MASK, SEED, DO, LSE, DELTA, DS, i_b=i_b, i_h=i_h, i_hk=i_hk, start_m=i_m * BLOCK_N,
            stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
            stride_kb=stride_kb, stride_kh=stride_kh, stride_kn=stride_kn, stride_kd=stride_kd,
            stride_vb=stride_vb, stride_vh=stride_vh, stride_vn=stride_vn, stride_vd=stride_vd,
            stride_mb=stride_mb, stride_mh=stride_mh, stride_mm=stride_mm, stride_mn=stride_mn,
            stride_dob=stride_dob, stride_doh=stride_doh, stride_dom=stride_dom, stride_dod=stride_dod,
            H_Q=H_Q, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, scale=scale, dropout_threshold=dropout_threshold,
            dropout_scale=dropout_scale, softcap_scale=softcap_scale,
            HEAD_DIM=HEAD_DIM, BLOCK_D=BLOCK_D, BLOCK_M=BLOCK_N, BLOCK_N=BLOCK_M, MASK_KIND=MASK_KIND,
            IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=HAS_DROPOUT, STORE_DS=STORE_DS, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION,
            ACC_DTYPE=ACC_DTYPE, MASKED_FIRST=MASKED_FIRST, SOFTCAP=SOFTCAP, EVEN=EVEN, MASK_RANGES=MASK_RANGES,
            HEAD_DIM_V=HEAD_DIM_V, BLOCK_DV=BLOCK_DV, ROWS=ROWS, stride_rb=stride_rb, stride_rh=stride_rh,
            BLOCK_D2=BLOCK_D2)
        o_i = i_m * BLOCK_N + tl.arange(0, BLOCK_N)
        p_dq = head_ptrs(DQ, i_b.to(tl.int64) * stride_dqb + i_h.to(tl.int64) * stride_dqh, o_i, o_d, stride_dqm,
                         stride_dqd, PAD_D)
        store_head(p_dq, dq, o_i < SEQ_Q, m_d, PAD_D)


# ================================================================ launchers
# Note [eager launch path] in kernels/launch.py: each kernel is launched through FastLaunch, with a `plan` (the
# lru-cached constexprs and launch options of one configuration) and the shape's GROUP / EVEN as the meta of its
# cache key.
_FWD = FastLaunch(_attn_fwd_kernel)
_DELTA = FastLaunch(_attn_bwd_delta_kernel)
_BWD = FastLaunch(_attn_bwd_kernel)
_DELTA_BLOCK_M = 64


def _check_inputs(q, k, v, attn_mask, dropout_p, scale, seed):
    """Validate SDPA-style inputs; returns (scale, mask4d)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a 4-D tensor (B, H, S, D), got {getattr(t, 'shape', type(t))}")
        if t.dtype not in _DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16, float32 (or float64), got {t.dtype}")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must share a device, got {q.device}, {k.device}, {v.device}")
    B, Hq, Sq, D = q.shape
    Bk, Hkv, Sk, Dk = k.shape
    if k.shape[:3] != v.shape[:3] or Bk != B or Dk != D:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must be (B, Hkv, Sk, D) and (B, Hkv, Sk, Dv) "
                         f"with q {tuple(q.shape)}")
    if Hkv == 0 or Hq % Hkv != 0:
        raise ValueError(f"query heads ({Hq}) must be a multiple of key/value heads ({Hkv})")
    if not 1 <= D <= 256 or not 1 <= v.shape[-1] <= 256:
        raise ValueError(f"head dims must be in 1..256, got {D} (q, k) and {v.shape[-1]} (v)")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p}")
    if dropout_p > 0.0 and (not isinstance(seed, torch.Tensor) or seed.dtype != torch.int64
                            or seed.numel() != 1 or seed.device != q.device):
        raise ValueError(f"seed must be an int64 tensor of one element on {q.device} when dropout_p > 0")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    if not scale > 0.0:
        raise ValueError(f"scale must be positive (the kernels fold it into exp2 after the row max), got {scale}")
    mask4d = None
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool and not attn_mask.dtype.is_floating_point:
            raise TypeError(f"attn_mask must be bool or floating point, got {attn_mask.dtype}")
        if attn_mask.device != q.device or attn_mask.dim() > 4:
            raise ValueError(f"attn_mask must be on {q.device} with at most 4 dims, got {attn_mask.shape}")
        try:
            mask4d = attn_mask.expand(B, Hq, Sq, Sk)  # a view: broadcast dims get stride 0
        except RuntimeError as e:
            raise ValueError(f"attn_mask {tuple(attn_mask.shape)} is not broadcastable to {(B, Hq, Sq, Sk)}") from e
    return scale, mask4d


@functools.lru_cache(maxsize=None)
def _kernel_options(dtype, dropout_p, interpret):
    """Constexprs shared by every launch: dot operand dtype / precision and dropout threshold and scale."""
    # The interpreter's bf16/fp16 tl.dot is wrong, so it multiplies fp32 operands; fp32 on GPU stays IEEE fp32
    # (no tf32) so fp32 results compare with fp64 at fp32 accuracy.
    dot_dtype = _DTYPES[dtype]
    if interpret and dtype.itemsize == 2:
        dot_dtype = tl.float32
    precision = "ieee" if dtype.itemsize >= 4 or interpret else "tf32"
    acc_dtype = tl.float64 if dtype == torch.float64 else tl.float32
    return (dict(DOT_DTYPE=dot_dtype, PRECISION=precision, ACC_DTYPE=acc_dtype), dropout_threshold(dropout_p),
            1.0 / (1.0 - dropout_p))


def _tile(kind, config, dtype, head_dim, device, is_causal, dropout, split_v=None, short=False):
    """(block_m, block_n, num_warps, num_stages, pair (forward) or split (backward)): the override, else the table in
    inductor_conv/heuristics/attention.py, fitted to SHORT_MASK_LENGTH rows for a short call (Note [short
    sequences]: one configuration for every length up to it)."""
    if config is not None:
        c = config
    elif kind == "fwd":
        c = attn_fwd_tile(dtype, head_dim, device, causal=is_causal, dropout=dropout, split_v=split_v)
        c = fit_fwd_tile(c, SHORT_MASK_LENGTH, SHORT_MASK_LENGTH) if short else c
    else:
        c = attn_bwd_tile(dtype, head_dim, device, eager=True, causal=is_causal, dropout=dropout, split_v=split_v)
        c = fit_bwd_tile(c, SHORT_MASK_LENGTH, SHORT_MASK_LENGTH) if short else c
    tile = (c["BLOCK_M"], c["BLOCK_N"], c["num_warps"], c["num_stages"]) if isinstance(c, dict) else (
        c.block_m, c.block_n, c.num_warps, c.num_stages)
    if kind == "fwd":  # causal pairs (AttnFwdTile.pair)
        tile += (bool(c.get("pair", False) if isinstance(c, dict) else c.pair),)
    else:  # dK and dV in programs of their own (AttnBwdTile.split)
        tile += (bool(c.get("split", False) if isinstance(c, dict) else c.split),)
    outer, inner = (tile[0], tile[1]) if kind == "fwd" else (tile[1], tile[0])
    if min(outer, inner) < 16 or outer % inner or any(b & (b - 1) for b in (outer, inner)):
        raise ValueError(f"{kind} config {c}: tiles must be powers of two >= 16 (tl.dot's K >= 16), with "
                         f"{'BLOCK_M % BLOCK_N' if kind == 'fwd' else 'BLOCK_N % BLOCK_M'} == 0")
    return tile


class _Plan:
    """Everything a launch derives from its configuration alone (constexprs, tile, options), made once per
    configuration (`_plan`'s cache) and used by identity as FastLaunch's `meta` (Note [eager launch path]): the
    configuration names every pointer argument's dtype and None-ness."""

    __slots__ = ("rows", "block_m", "block_n", "num_warps", "num_stages", "dropout_scale", "constexprs",
                 "delta_constexprs", "kv_programs", "_variants")

    def __init__(self, kind, dtype, mask_dtype, head_dim, is_causal, dropout_p, softcap, mask_grad, interpret,
                 device, fast_tanh=False, head_dim_v=None, mask_ranges=False, split_head_dim=False, short=False,
                 masked_first=True, config=None):
        opts, threshold, self.dropout_scale = _kernel_options(dtype, dropout_p, interpret)
        head_dim_v = head_dim if head_dim_v is None else head_dim_v  # Note [value head dim] in attn_math.py
        # Note [split head dim] in attn_math.py: a split head dim has tiles of its own
        block_d, block_d2, tile_head_dim, split_v = head_dim_tiles(head_dim, head_dim_v, split_head_dim)
        tile = _tile(kind, config, dtype, tile_head_dim, "interpreter" if interpret else device, is_causal,
                     dropout_p > 0, split_v=split_v, short=short)
        self.block_m, self.block_n, self.num_warps, self.num_stages = tile[:4]
        block_dv = max(16, triton.next_power_of_2(head_dim_v))
        self.constexprs = dict(dropout_threshold=threshold, HEAD_DIM=head_dim, BLOCK_D=block_d, BLOCK_D2=block_d2,
                               BLOCK_M=self.block_m, BLOCK_N=self.block_n, MASK_KIND=mask_kind(mask_dtype),
                               IS_CAUSAL=is_causal,
                               HAS_DROPOUT=dropout_p > 0, SOFTCAP=softcap_mode(softcap, dtype, interpret),
                               HEAD_DIM_V=head_dim_v, BLOCK_DV=block_dv,
                               # Note [mask ranges]; a short call's one or two tiles a slice: SHORT_MASK_LENGTH
                               MASK_RANGES=mask_ranges and mask_dtype is not None and not short, **opts)
        if kind == "fwd":
            pair = tile[4] and is_causal
            self.rows = 2 * self.block_m if pair else self.block_m  # pairs: cdiv(cdiv(Sq, BM), 2) row blocks
            self.constexprs["PAIR"] = pair
        else:
            # Note [masked tiles first]: causal backward programs visit their masked tiles first, as the templates do
            # (H200, B4 H16 S2048 D128 p = 0.1: 844 -> 738 us; B8 H16 S1024 D64: 258 -> 247), unless
            # config.attention_masked_first is off.
            self.constexprs.update(STORE_DS=mask_grad, MASKED_FIRST=is_causal and masked_first, SPLIT_KV=tile[4])
            self.kv_programs = 2 if tile[4] else 1  # key programs per key block (Note [split dK/dV])
            self.delta_constexprs = dict(HEAD_DIM=head_dim_v, BLOCK_D=block_dv, BLOCK_M=_DELTA_BLOCK_M,
                                         ACC_DTYPE=opts["ACC_DTYPE"], WIDE=False)
        self._variants = {}

    def variant(self, group: int, even: bool, rows16: bool | None = None, seed_arg: bool = False, wide: bool = False):
        """(meta, constexprs) of the kernel for a GQA group and EVEN (Note [one kernel per configuration]), and for
        the forward ROWS16 (Note [length hints]) and SEED_ARG (Note [host dropout seed]), and WIDE (Note [int64
        offsets] in attn_common.py): the meta is FastLaunch's key, made once per variant."""
        key = (group, even, rows16, seed_arg, wide)
        entry = self._variants.get(key)
        if entry is None:
            constexprs = dict(self.constexprs, GROUP=group, EVEN=even, WIDE=wide)
            if "SPLIT_KV" in constexprs:  # the backward: every dK/dV program first under GQA (bwd_program)
                constexprs["KV_FIRST"] = group > 1
            else:
                constexprs.update(ROWS16=bool(rows16), SEED_ARG=seed_arg)
            entry = self._variants[key] = ((self, *key), constexprs)
        return entry


_plan = functools.lru_cache(maxsize=None)(_Plan)


def planning_switches() -> tuple[bool, bool, bool, bool]:
    """The config switches _plan_for reads (the plans' constexprs follow them): a key of every launch planned ahead
    (the native Programs' caches, the registered forms of Note [eager attention from C++]) holds them."""
    return (_config.attention_fast_tanh, _config.attention_mask_ranges, _config.attention_split_head_dim,
            _config.attention_masked_first)


def _plan_for(kind, q, v, mask4d, is_causal, dropout_p, softcap, mask_grad, config):
    args = (kind, q.dtype, None if mask4d is None else mask4d.dtype, q.shape[-1], bool(is_causal), float(dropout_p),
            softcap > 0, mask_grad, interpreting(), q.device.type, _config.attention_fast_tanh, v.shape[-1],
            _config.attention_mask_ranges, _config.attention_split_head_dim,
            short_sequences(q.shape[2], v.shape[2]),  # Note [short sequences]: v has the keys' length
            bool(_config.attention_masked_first))
    # a tile override of the tables' frozen dataclasses is hashable: its plan is cached like the default's
    return _plan(*args, config=config) if config is None or not isinstance(config, dict) else _Plan(*args, config=config)


def _mask_strides(mask4d):
    return mask4d.stride() if mask4d is not None else (0, 0, 0, 0)


def _summaries(plan, mask4d, cols: bool, rows=None, flags=None):
    """(rows, cols, flags): the mask summaries of Note [mask ranges] when the plan skips tiles (cols only for the
    backward) and the flags they came from, else Nones; `rows` / `flags`, the forward's, are not made again."""
    if not plan.constexprs["MASK_RANGES"]:
        return None, None, None
    return summarise(mask4d, cols, rows, flags)


def _summary_strides(summary):
    """(batch, head) strides of a compact [Bs, Hs, n, 4] summary read as [B, H, n, 4]: 0 along a dim of extent 1."""
    if summary is None:
        return 0, 0
    return tuple(0 if summary.shape[d] == 1 else summary.stride(d) for d in (0, 1))


def attention_fwd(q, k, v, attn_mask, dropout_p: float, is_causal: bool, scale: float, seed, *, config=None,
                  softcap: float = 0.0):
    """Flash-attention forward.  Returns (out [B, Hq, Sq, D] like q, lse [B, Hq, Sq] fp32).

    dropout_p > 0 needs seed (int64 tensor of shape (1,) on q's device); the keep mask is a pure function of
    (seed, b, h, i, j) (attn_math Note [dropout replay]).  lse is the log-sum-exp of the undropped scores (natural
    log); -inf for rows with no allowed key (whose output is 0), a sentinel <= -2^120 for rows whose keys all carry a
    finite "minus infinity" mask (Note [finite-floor rows]).  config: AttnFwdTile or dict(BLOCK_M, BLOCK_N,
    num_warps, num_stages) overriding the heuristic tile (powers of two >= 16, BLOCK_M % BLOCK_N == 0).
    softcap > 0: scores capped to softcap * tanh(scale qkᵀ / softcap) before the mask (Note [soft-capping]).
    """
    scale, mask4d = _check_inputs(q, k, v, attn_mask, dropout_p, scale, seed)
    return launch_fwd(q, k, v, mask4d, dropout_p, is_causal, scale, seed, check_softcap(softcap), config)


def launch_fwd(q, k, v, mask4d, dropout_p: float, is_causal: bool, scale: float, seed, softcap: float = 0.0,
               config=None, seed_value: int | None = None):
    """attention_fwd without its argument checks, for callers that made them (the ops): mask4d is the mask expanded
    to [B, Hq, Sq, Sk] or None, scale a positive float, softcap a float >= 0; seed_value as launch_fwd_rows'."""
    return launch_fwd_rows(q, k, v, mask4d, dropout_p, is_causal, scale, seed, softcap, config, seed_value)[:2]


# Note [host dropout seed]: the eager op's dropout seed is drawn on the host (ops/attention.py's host_dropout_seed:
# from the device's CUDA generator, whose offset it advances, as torch's own dropout kernels take their Philox seed
# and offset) and passed to the forward kernel as SEED_VALUE; the kernel's program 0 writes it into the one-element
# `seed` tensor the backward reads.  A seed drawn on the device (torch.randint) is a launch of its own: 4-35 us of
# host time per call on the lent H100s (benchmarks/diagnostics/wall_gap.py and cProfile, 2026-12-07; up to 12% of a
# tiny shape's forward+backward).  Triton specialises neither the value (do_not_specialize) nor its width (the host seed lies in
# [2^61, 2^62), an int64 argument always; 2^61 stands in where SEED_ARG is off), so every seed runs the same kernel.
_UNUSED_SEED = 1 << 61


def launch_fwd_rows(q, k, v, mask4d, dropout_p: float, is_causal: bool, scale: float, seed, softcap: float = 0.0,
                    config=None, seed_value: int | None = None):
    """launch_fwd, and the mask's rows summary and flags it made (Note [mask ranges], Note [mask summary passes];
    Nones without them) for launch_bwd's `rows` and `flags`: (out, lse, rows, flags).  seed_value: the dropout seed,
    which the kernel writes into `seed` (an int64 tensor of one element; Note [host dropout seed]); None: `seed`
    holds it."""
    B, Hq, Sq, D = q.shape
    if (config is None and Sq <= attention_decode.MAX_QUERIES and dropout_p == 0.0 and attention_decode.use_decode(q, k)
            and v.shape[-1] == D):
        # few queries against many keys: keys split over programs (Note [flash-decoding]), the same O and LSE
        return (*attention_decode.attention_decode_fwd(q, k, v, mask4d, is_causal, scale, softcap), None, None)
    out = empty_like_q(q, v.shape[-1])
    lse = torch.empty((B, Hq, Sq), device=q.device, dtype=torch.float32)
    if out.numel() == 0:
        if seed_value is not None and seed is not None:
            seed.fill_(seed_value)
        return out, lse.fill_(float("-inf")), None, None
    plan = _plan_for("fwd", q, v, mask4d, is_causal, dropout_p, softcap, False, config)
    rows, _, flags = _summaries(plan, mask4d, False)
    launcher, grid, meta, ptrs, ints, unkeyed, floats, constexprs, options = _fwd_launch(
        q, k, v, mask4d, dropout_p, scale, seed, softcap, out, lse, rows, plan, seed_value)
    launcher(grid, meta, ptrs, ints, floats, constexprs, unkeyed=unkeyed, **options)
    return out, lse, rows, flags


def _fwd_launch(q, k, v, mask4d, dropout_p, scale, seed, softcap, out, lse, rows, plan, seed_value):
    """The forward kernel's launch: (launcher, grid, meta, ptrs, ints, unkeyed, floats, constexprs, options), as
    FastLaunch takes them; out, lse, seed and rows may be Phantoms (the native forward's Program)."""
    B, Hq, Sq, _ = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    qk_scale2, softcap_scale = score_scales(scale, softcap)
    grid = (cdiv(Sq, plan.rows) * B * Hq,)
    ptrs = (q, k, v, mask4d, seed if dropout_p > 0 else None, out, lse, rows)
    strides = (*q.stride(), *k.stride(), *v.stride(), *_mask_strides(mask4d), *out.stride(), *_summary_strides(rows))
    floats = (qk_scale2, plan.dropout_scale, softcap_scale)
    # Note [one kernel per configuration], Note [length hints]
    seed_arg = seed_value is not None and dropout_p > 0
    meta, constexprs = plan.variant(Hq // Hkv, Sk % plan.block_n == 0, Sq % 16 == 0, seed_arg,
                                    wide_offsets(q, k, v, mask4d, out))
    return (_FWD, grid, meta, ptrs, strides + (Hq, Sq, Sk), (seed_value if seed_arg else _UNUSED_SEED,), floats,
            constexprs, dict(num_warps=plan.num_warps, num_stages=plan.num_stages))


def attention_bwd(dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed, *, mask_grad: bool,
                  deterministic=True, config=None, softcap: float = 0.0):
    """Flash-attention backward from (q, k, v, out, lse) and the same seed: returns (dq, dk, dv, dmask or None).

    dq/dk/dv follow q/k/v's stride order.  mask_grad=True (float attn_mask that requires grad) also writes dS as a
    [B, Hq, Sq, Sk] fp32 buffer and sums it over the mask's broadcast dims.  The backward is deterministic by
    construction (one owner per output row, no atomics); `deterministic` is accepted for the op's signature.
    config: AttnBwdTile or dict; dK/dV programs use (BLOCK_M queries x BLOCK_N keys), dQ programs the swap.
    softcap: as in attention_fwd, the same value.
    """
    del deterministic
    scale, mask4d = _check_inputs(q, k, v, attn_mask, dropout_p, scale, seed)
    softcap = check_softcap(softcap)
    if mask_grad and mask_kind(None if mask4d is None else mask4d.dtype) != MASK_ADDITIVE:
        raise ValueError("mask_grad=True needs a floating-point attn_mask")
    B, Hq, Sq, _ = q.shape
    if dout.dtype != q.dtype or out.dtype != q.dtype:
        raise TypeError(f"dout and out must have q's dtype {q.dtype}, got {dout.dtype} and {out.dtype}")
    o_shape = (B, Hq, Sq, v.shape[-1])
    if dout.shape != o_shape or out.shape != o_shape or lse.shape != (B, Hq, Sq):
        raise ValueError(f"dout {tuple(dout.shape)} / out {tuple(out.shape)} must be {o_shape}, "
                         f"lse {tuple(lse.shape)} must be {(B, Hq, Sq)}")
    dq, dk, dv, ds = launch_bwd(dout, q, k, v, mask4d, out, lse, dropout_p, is_causal, scale, seed, mask_grad,
                                softcap, config)
    return dq, dk, dv, (reduce_dmask(ds, attn_mask) if mask_grad else None)


def launch_bwd(dout, q, k, v, mask4d, out, lse, dropout_p, is_causal, scale, seed, mask_grad: bool,
               softcap: float = 0.0, config=None, rows=None, flags=None):
    """attention_bwd without its argument checks (as launch_fwd): returns (dq, dk, dv, dS [B, Hq, Sq, Sk] fp32 or
    None); dS is not yet summed over the mask's broadcast dims (reduce_dmask).  rows, flags: launch_fwd_rows' summary
    and flags of this mask (not made again)."""
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    ds_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    ds = torch.zeros((B, Hq, Sq, Sk), device=q.device, dtype=ds_dtype) if mask_grad else None
    if q.numel() == 0 or k.numel() == 0:
        dq.zero_(), dk.zero_(), dv.zero_()
        return dq, dk, dv, ds
    lse = lse.contiguous()  # (B, Hq, Sq) fp32 rows, written contiguous by attention_fwd
    plan = _plan_for("bwd", q, v, mask4d, is_causal, dropout_p, softcap, mask_grad, config)
    delta = torch.empty((B, Hq, Sq), device=q.device, dtype=torch.float32)
    rows, cols, _ = _summaries(plan, mask4d, True, rows, flags)
    for launcher, grid, meta, ptrs, ints, floats, constexprs, options in _bwd_launches(
            dout, q, k, v, mask4d, out, lse, dropout_p, scale, seed, softcap, plan, delta, dq, dk, dv, ds, rows, cols):
        launcher(grid, meta, ptrs, ints, floats, constexprs, **options)
    return dq, dk, dv, ds


def _bwd_launches(dout, q, k, v, mask4d, out, lse, dropout_p, scale, seed, softcap, plan, delta, dq, dk, dv, ds, rows,
                  cols):
    """The backward's launches, (launcher, grid, meta, ptrs, ints, floats, constexprs, options) each: Δ, then the
    dK/dV and dQ programs.  dout, delta, dq, dk and dv may be Phantoms (kernels/native.py: the forward planning a
    native backward)."""
    B, Hq, Sq, D = q.shape
    Hkv, Sk = k.shape[1], k.shape[2]
    qk_scale2, softcap_scale = score_scales(scale, softcap)
    # Note [int64 offsets]; the delta kernel's WIDE follows out and dout alone, the strides and length its
    # FastLaunch key holds beside the plan (its meta)
    delta_constexprs = plan.delta_constexprs
    if wide_offsets(out, dout):
        delta_constexprs = dict(delta_constexprs, WIDE=True)
    launches = [(_DELTA, (cdiv(Sq, _DELTA_BLOCK_M) * B * Hq,), plan, (out, dout, delta),
                 (*out.stride(), *dout.stride(), Hq, Sq), (), delta_constexprs, {})]
    grid = ((plan.kv_programs * cdiv(Sk, plan.block_n) + (Hq // Hkv) * cdiv(Sq, plan.block_n)) * B * Hkv,)
    ptrs = (q, k, v, mask4d, seed if dropout_p > 0 else None, dout, lse, delta, dq, dk, dv, ds, rows, cols)
    strides = (*q.stride(), *k.stride(), *v.stride(), *_mask_strides(mask4d), *dout.stride(), *dq.stride(),
               *dk.stride(), *dv.stride(), *_summary_strides(rows), *_summary_strides(cols))
    floats = (qk_scale2, scale, plan.dropout_scale, softcap_scale)
    # EVEN: the dK/dV programs step over queries, the dQ programs over keys, both by BLOCK_M, and the dK/dV programs'
    # key blocks of BLOCK_N are whole (Note [even lengths])
    even = Sq % plan.block_m == 0 and Sk % plan.block_m == 0 and Sk % plan.block_n == 0
    # WIDE from the tensors the kernel reads and writes (not out: the delta kernel's alone)
    meta, constexprs = plan.variant(Hq // Hkv, even, wide=wide_offsets(q, k, v, mask4d, dout, dq, dk, dv))
    launches.append((_BWD, grid, meta, ptrs, strides + (Hq, Hkv, Sq, Sk), floats, constexprs,
                     dict(num_warps=plan.num_warps, num_stages=plan.num_stages)))
    return launches


# Note [native backward] (inductor_conv/csrc/backward_node.cpp): the Programs made for the eager op (without a mask,
# or with one that needs no gradient), per configuration and shape (native.cached_program).
_NATIVE_PROGRAMS: dict = {}


def native_backward(q, k, v, mask4d, dropout_p, is_causal, scale, softcap):
    """The Program of the backward launch_bwd would run, for the C++ node (kernels/native.py), planned before the
    forward runs; None where that path does not apply: not on a GPU, q not on the current device, the extension not
    built (yet), empty inputs, q, k or v not dense or not 16-byte aligned (the mask too), a value head dim of its
    own, few queries.  mask4d: the mask expanded to [B, Hq, Sq, Sk] (as launch_fwd_rows takes it), one that needs
    no gradient.  Slots: q, k, v, out, lse (, seed) (, the mask (, its rows summary and flags, which launch_fwd_rows
    returns)), then dO (given out's strides and dtype by the node), then dq, dk, dv, Δ (, the cols summary).  The
    forward's out is empty_like(q), so it has q's strides (q dense), and its lse, rows and flags are fresh contiguous
    buffers: the Program plans them so."""
    from inductor_conv.kernels import native

    key = _program_key(q, k, v, mask4d, dropout_p, is_causal, scale, softcap)
    if key is None:
        return None
    return native.cached_program(_NATIVE_PROGRAMS, key, _native_program, (q, k, v, mask4d), q, k, v, mask4d,
                                 dropout_p, is_causal, scale, softcap)


def _program_key(q, k, v, mask4d, dropout_p, is_causal, scale, softcap):
    """The key of a call's native Programs (native_backward's, native_forward's): what decides their launches, with
    the switches _plan_for reads (a Program planned under others would not match the launches the Python path
    makes); None for q off the current device: a Program holds the kernels Triton loaded there (autograd's device
    thread runs the node on q's device)."""
    from inductor_conv._compat import cuda_current_device

    if not q.is_cuda or q.device.index != cuda_current_device():
        return None
    mask_key = None if mask4d is None else (mask4d.shape, mask4d.stride(), mask4d.dtype)
    return (q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), q.dtype, mask_key, dropout_p, is_causal,
            scale, softcap, q.device.index, planning_switches())


def native_saved(q, k, v, mask4d, out, lse, seed, rows, flags) -> list:
    """The tensors the node saves for a Program of native_backward, in its slot order."""
    saved = [q, k, v, out, lse] + ([seed] if seed is not None else [])
    if mask4d is not None:
        saved += [mask4d] + ([rows, flags] if rows is not None else [])
    return saved


def _native_applies(q, k, v) -> bool:
    """Whether the native Programs (backward and forward) take a call: no empty input, dense q, k, v (O, dq, dk, dv
    are their empty_like), one head dim for q, k and v, and more than MAX_QUERIES queries (fewer: launch_fwd_rows's
    flash-decoding outputs)."""
    from inductor_conv.kernels.native import dense

    return not (q.numel() == 0 or k.numel() == 0 or v.shape[-1] != q.shape[-1] or not all(dense(t) for t in (q, k, v))
                or q.shape[2] <= attention_decode.MAX_QUERIES)


def _native_program(ext, q, k, v, mask4d, dropout_p, is_causal, scale, softcap, order_out=None):
    from inductor_conv.kernels.attn_mask_summary import cols_launch, summary_layout
    from inductor_conv.kernels.native import Phantom, program_launch

    B, Hq, Sq, D = q.shape
    if not _native_applies(q, k, v):
        return None
    plan = _plan_for("bwd", q, v, mask4d, is_causal, dropout_p, softcap, False, None)
    # the forward's plan summarises the mask exactly when this one does (_Plan: MASK_RANGES follows the switch, the
    # mask's dtype and the lengths alone), so launch_fwd_rows returns the rows and flags the slots below expect
    ranges = bool(plan.constexprs["MASK_RANGES"])

    out, dout = (Phantom(q.shape, q.stride(), q.dtype) for _ in range(2))  # out: empty_like(q), launch_fwd's
    lse, delta = (Phantom.contiguous((B, Hq, Sq), torch.float32) for _ in range(2))
    seed = Phantom.contiguous((1,), torch.int64) if dropout_p > 0 else None
    rows = flags = cols = None
    if mask4d is not None and ranges:
        row_shape, col_shape, flag_shape = summary_layout(mask4d)
        rows, cols, flags = (Phantom.contiguous(shape, torch.int32) for shape in (row_shape, col_shape, flag_shape))
    dq, dk, dv = (Phantom(t.shape, t.stride(), t.dtype) for t in (q, k, v))
    saved = native_saved(q, k, v, mask4d, out, lse, seed, rows, flags)
    order = [*saved, dout, dq, dk, dv, delta] + ([cols] if cols is not None else [])
    slots = {id(t): i for i, t in enumerate(order)}
    program = ext.Program()
    program.name = "AttentionBackward"
    program.dy_like = 3  # dO in out's strides and dtype
    program.n_saved = len(saved)
    for like in (0, 1, 2):
        program.add_alloc(like, [], "float32", False)  # dq, dk, dv: empty_like(q), (k), (v)
    program.add_alloc(-1, [B, Hq, Sq], "float32", False)  # delta
    launches = _bwd_launches(dout, q, k, v, mask4d, out, lse, dropout_p, scale, seed, softcap, plan, delta, dq, dk, dv,
                             None, rows, cols)
    if cols is not None:
        program.add_alloc(-1, list(cols.shape), "int32", False)
        launches.insert(0, cols_launch(mask4d, flags, rows, cols))  # as launch_bwd's _summaries makes them
    for launcher, grid, meta, ptrs, ints, floats, constexprs, options in launches:
        if not program_launch(program, launcher, grid, ptrs, ints, floats, constexprs, options, slots):
            return None
    program.outputs = [slots[id(dq)], slots[id(dk)], slots[id(dv)]]
    if order_out is not None:  # (tests) what each slot stands for
        order_out.extend(order)
    return program


# Note [eager attention from C++] (inductor_conv/csrc/backward_node.cpp): the forward Programs of the calls without a
# mask, per configuration and shape, as _NATIVE_PROGRAMS holds the backward ones.
_NATIVE_FORWARDS: dict = {}


def native_forward(q, k, v, dropout_p, is_causal, scale, seed_value):
    """The Program of the forward launch_fwd_rows makes for a call without a mask or soft-capping (the dropout seed
    a per-run value, seed_value given), for the extension's eager_attention; None where it does not apply (as
    native_backward's conditions, and a seed drawn on the device)."""
    from inductor_conv.kernels import native

    key = _program_key(q, k, v, None, dropout_p, is_causal, scale, 0.0)
    if key is None or (dropout_p > 0 and seed_value is None):
        return None
    return native.cached_program(_NATIVE_FORWARDS, key, native_forward_program, (q, k, v), q, k, v, dropout_p,
                                 is_causal, scale)


def native_forward_program(ext, q, k, v, dropout_p, is_causal, scale, order_out=None):
    """The forward's Program (Note [eager attention from C++]): O = empty_like(q), LSE (B, Hq, Sq) fp32 and, with
    dropout, the one-element seed tensor, then launch_fwd_rows's launch with the seed value as the run's call value
    0; its node saves q, k, v, O, LSE (, seed), native_saved's order.  None where _native_program refuses the call."""
    from inductor_conv.kernels.native import Phantom, program_launch

    B, Hq, Sq, D = q.shape
    if not _native_applies(q, k, v):
        return None
    plan = _plan_for("fwd", q, v, None, is_causal, dropout_p, 0.0, False, None)
    out = Phantom(q.shape, q.stride(), q.dtype)  # empty_like(q): empty_like_q's O for a dense q
    lse = Phantom.contiguous((B, Hq, Sq), torch.float32)
    seed = Phantom.contiguous((1,), torch.int64) if dropout_p > 0 else None
    order = [q, k, v, out, lse] + ([seed] if seed is not None else [])
    slots = {id(t): i for i, t in enumerate(order)}
    program = ext.Program()
    program.name = "AttentionForward"
    program.n_saved = 3
    program.add_alloc(0, [], "float32", False)  # O: empty_like(q)
    program.add_alloc(-1, [B, Hq, Sq], "float32", False)  # LSE
    if seed is not None:
        program.add_alloc(-1, [1], "int64", False)  # the seed the kernel writes
    # a stand-in seed value of the range the host draws (Note [host dropout seed]): Triton types it int64 as every
    # value of that range; the run passes its own
    seed_value = 1 << 61 if seed is not None else None
    launcher, grid, _, ptrs, ints, unkeyed, floats, constexprs, options = _fwd_launch(
        q, k, v, None, dropout_p, scale, seed, 0.0, out, lse, None, plan, seed_value)
    calls = {len(ptrs) + len(ints): 0} if seed is not None else {}  # the seed value: call value 0
    if not program_launch(program, launcher, grid, ptrs, ints + unkeyed, floats, constexprs, options, slots, calls):
        return None
    program.outputs = [slots[id(out)]]
    program.node_saves = list(range(len(order)))
    if order_out is not None:  # (tests) what each slot stands for
        order_out.extend(order)
    return program


def reduce_dmask(ds, attn_mask):
    """The mask's gradient from dS [B, Hq, Sq, Sk] (launch_bwd's fourth result): dS summed over the dims the mask
    broadcasts along, in the mask's shape and dtype."""
    shape4 = (1,) * (4 - attn_mask.dim()) + tuple(attn_mask.shape)
    dims = [d for d in range(4) if shape4[d] == 1 and ds.shape[d] != 1]
    red = ds.sum(dim=dims, keepdim=True) if dims else ds
    return red.reshape(attn_mask.shape).to(attn_mask.dtype)
