"""Attention math shared by the eager Triton kernels (kernels/attention.py) and the Inductor templates.

The templates append this file's text to theirs, so everything here is a `@triton.jit` helper that uses only the
names `triton` and `tl`: constants are local `tl.constexpr`s, never Python globals.

Notation (one (batch b, query head h) slice; the kv head is h // GROUP):
    i, j          query row, key column (absolute indices);  Sq = SEQ_Q, Sk = SEQ_K
    qk            Q Kᵀ tile (fp32);  scale = softmax scale;  LOG2E = log2(e)
    s2            log2-domain score, s2 = log2(e) * (scale * qk + mask);  softmax(S) = 2^(s2 - max) / sum
    s, c          what the helpers pass around: s2 = s * c.  Without an additive mask s = qk (or -inf where a key
                  is not allowed) and c = scale*LOG2E, so the scale folds into the FFMA before exp2; with an
                  additive mask s = s2 already and c = 1.
    m, l          running row max of s2 and running sum of 2^(s2 - m) (online softmax)
    lse           stored row log-sum-exp (natural log, fp32), see Note [finite-floor rows]
    MASK_KIND     0 none, 1 bool (True = attend), 2 additive float
    Tile index blocks o_i / o_j are passed already shaped for broadcasting ([BM, 1] / [1, BN], or transposed in the
    dK/dV kernel whose tiles have keys as rows), so one helper serves both orientations.

Note [finite-floor rows]: eager softmax on `scale*qk + finfo.min` absorbs qk (finfo.min's ulp is ~2e31), so a row whose
every key carries such a mask is uniform over those keys, and any ordinary key wins over them.  In fp32 this cannot be
reproduced through an LSE: m + log2(l) rounds to m and backward would rebuild p = 1 instead of 1/l.  So an additive mask
value <= -2^24 (whose ulp is >= 1: it can carry no score information in fp32) is a "floor" entry: its log2 score is
the constant FLOOR2 = -2^126, qk dropped (as eager's rounding drops it).  A row whose max is FLOOR2 stores the sentinel
lse = -2^120 * (1 + log2(l) / 64) (<= -2^120, far below any real LSE) and backward rebuilds p = 2^((s2 - FLOOR2) - log2 l).
A row with no allowed key at all stores lse = -inf and gets zero output and zero gradients (declared extension).

Note [dropout replay]: element (b, h, i, j) is kept iff u(i, j) >= threshold = round(p * 2^16), where u is one half
of a 32-bit word x drawn per query i and key pair: keys j and j + 8 of each aligned 16 share the pair index
g = 8 (j >> 4) + (j & 7); u = x & 0xFFFF for the lower key (bit 3 of j clear), x >> 16 for the upper.  On uint32
with wrapping products (xs16(x) = x ^ (x >> 16), φ = 0x9E3779B9):
    M(x) = ((x*A) ^ ((x*A) >> 15)) * B,  A = 0x7FEB352D, B = 0x846CA68B    (the core of Wellons' lowbias32)
    H(x) = xs16(M(xs16(x)))                                                (lowbias32 itself)
    k = H(H(H(seed_hi ^ 0x6A09E667) ^ seed_lo) ^ b),  k_r = H(k ^ h),  k_c = H(k_r ^ 0xBB67AE85)
    x = M(M(k_r ^ i) ^ k_c ^ φ*g)
So the keys are scalars per (b, h), each query row of a tile costs one M, each key pair one multiply, each pair a
xor and M, each element a mask or shift and a compare.  Pairing j with j + 8 (not j + 1) keeps both halves in one
thread in both tile orientations (a wgmma accumulator thread holds columns c, c + 8 and rows r, r + 8), so the mask
adds no layout conversion: against one word per element it takes 10% of the forward loop's instructions and 7-12% of
the backward's (sm_90 SASS, D128, p = 0.1: 616 -> 554, 856 -> 793, 550 -> 483); H200, B4 H16 S2048 D128, p = 0.1,
non-causal: 1296 -> 1236 us of GPU per forward+backward, the same profiling call.  The draw does not depend on tiles
(which start on multiples of 16), grid order or pass; i and g enter whole (no wrap below 2^32).  The keep
probability is 1 - threshold / 2^16 (|error| <= 2^-17 against 1 - p; threshold 2^16 drops all); kept values are
scaled by 1 / (1 - p).  φ*g matters: M(c ^ g) of consecutive g fails a pair test of neighbouring outputs; with
φ*g no uniformity (per half, 256 bins), per-bit, pair (keys at lags 1-32, rows, diagonals, the two halves of a word,
also their joint 16 x 16 histogram), 2x2-block or periodogram test over 3.4e7 elements and two seeds found a
deviation (all |z| < 2.5).
ops/attention.py's torch fallback computes the same bits (`_torch_dropout_keep`); the tests check neighbouring keys,
rows, heads, batches, seeds and the two halves of one word for correlation.

Note [masked tiles first]: the backward visits two or three ranges of tiles per program, masked (causal band, ragged
end) and not.  In the causal templates (static shapes, sm_90, triton 3.6) a masked range after the unmasked one makes
ptxas serialise every wgmma of the kernel (performance advisory C7515, "non wgmma instructions defining accumulator
registers ... between start and end of the pipeline stage"); ncu on the H200 (B2 H16 S8192 D128, p = 0.1) showed the
causal backward at 42% tensor-pipe activity against 57% non-causal, 2.7x the barrier stalls, and 95x the local-memory
spill requests.  MASKED_FIRST = True visits the masked ranges first when causal (only the summation order changes);
compiled offline it removes the advisory in every causal variant tried (p 0 / 0.1, divisible and ragged lengths) but
spilled in the dK/dV main loop (14 local loads an iteration at p = 0.1, 33 at p = 0) with the grouped causal launch
order, whose extra scalars live across the loop; ungrouped it compiles spill-free.  On the H200 (D128) the causal
backward takes 3569 instead of 4740 us at S8192 p = 0.1, 448 instead of 564 us at S2048 p = 0.  The templates take
it from config.attention_masked_first (default True; config.attention_causal_bwd_group then defaults to ungrouped);
the eager kernel too when causal (no advisory there either way at head dim 128, yet 738 against 844 us on the H200 at
B4 H16 S2048 D128 p = 0.1).  At head dim 256 the order works the other way in the eager kernel's split dK/dV tiles:
compiled for sm_90 (B1 4/2 S512, cap 50), split (16, 64, 4, 3) and (32, 64, 4, 3) get the advisory with the masked
tiles first and not without them (then 57 and 187 local loads and stores in their loops, p 0.1 / 0), and split
(16, 64, 4, 2) not with them (32), while the templates at the same tiles keep their wgmmas pipelined with the masked
tiles first and spill nothing.  Untimed on the GPU, so the eager table keeps its one-program tile (EAGER_BWD, 577
local loads and stores in its loops there); benchmarks/diagnostics/attention_bwd_tiles.py --masked-first 0,1 times
both orders.
Under GQA the dK/dV programs then run two head loops (every head's masked ranges, then every head's whole tiles): one
head loop around all three ranges spilled (376 bytes of stack) and cost 16% (32/8 heads, S2048: 1129 -> 953 us).
Non-causal programs keep the ragged end last (first, it costs a third more shared memory).

Note [soft-capping]: with SOFTCAP the scaled scores are capped before the mask, cap(x) = softcap * tanh(x / softcap)
(Gemma 2's attn_logit_softcapping, FlashAttention's softcap).  With t = tanh(qk * softcap_scale), softcap_scale =
scale / softcap, the log2-domain score is s2 = (softcap * log2 e) * t + log2(e) * mask: exactly the plain form with
qk replaced by t and scale * log2 e by softcap * log2 e, so the launchers pass qk_scale2 = softcap * log2(e) and the
helpers insert one line, t = softcap_tanh(qk), after each QKᵀ product (forward and both backward loops).  The
backward's chain rule: d cap(scale * qk) / d qk = scale * (1 - t²), so dS is multiplied by (1 - t²) before the dQ
and dK products (whose factor `scale` stays); the attn_mask's gradient (STORE_DS) is dS itself, the mask being
added after the cap.  t is finite everywhere (masked keys have p = 0), so the product never meets an infinity.

Note [split dK/dV]: a dK/dV program holds two fp32 [BLOCK_N, BLOCK_D] accumulators across its loop.  At head dim
256 that is 128 registers a thread for BLOCK_N 64 on 8 warps before K, V and the score tiles, so the one-program
backward needs query steps of 16 (wgmma products 16 wide) to stay spill-free.  With SPLIT_KV a key block gets two
programs: one accumulates dK (PART 2: Kᵀ Q, V dOᵀ, dSᵀ Q), the other dV (PART 1: Kᵀ Q, Pᵀ dO); each holds one
accumulator and can step over 32 queries spill-free (benchmarks/diagnostics/template_sass.py --split).  The price is one more
Kᵀ Q product (and soft-capping's tanh) per score tile: 8 products a tile instead of 7.  Each gradient sums the same
terms in the same order as the one-program backward, so the results are bit-identical (tests).  Spill-free is not
the same as fast: at head dim 256 over a summarised mask (Gemma 2's form) the split programs on 8 warps compile
without spills and run 1.2x slower than the one-program tile, while on 4 warps, still reloading some values, they run
faster: 4-6% with (64, 64) on two stages, 10% over the mask and 21% with is_causal stepping over 32 queries on three
stages (one 4-warp program an SM, its loads in flight two tiles ahead).  Stepping over 16 queries on three stages,
the kernel fits two programs an SM (Note [mask loop stages]) and has no spills in any loop at all: a further 6% with
is_causal at p 0.1 (equal at p 0) and 10-19% over the mask, the templates' tile there (heuristics/attention.py's
CUDA_BWD_MASKED / CUDA_BWD_CAUSAL and their provenance).

Note [even lengths]: EVEN (a constexpr the launchers and lowerings compute) says the lengths a program steps over
are multiples of its tiles: the forward's and dQ programs' SEQ_K of their key tiles, the dK/dV programs' SEQ_Q of
their query tiles and SEQ_K of their key block (so a mask tile loads without a per-key check: load_mask_tile's
CHECK_KEYS).  Then n_full = SEQ_K (or SEQ_Q) and the ragged-end ranges, empty at run time, are not compiled at
all; the causal band still is.  Where the lengths are constexprs (the templates' static shapes) the compiler folds
this by itself; where they are runtime values (the eager kernels, which serve every length of a configuration) it
cannot.

Note [length hints]: the eager kernels take the lengths as runtime values that Triton does not specialise (Note [one
kernel per configuration] in kernels/attention.py), so the compiler cannot see that they are multiples of 16, which
Triton's specialisation would otherwise tell it (its alignment analysis then proves less about the pointers and
offsets that the lengths enter: the LSE / DELTA rows of a (b, h), the dropout offsets, the causal and ragged bounds).
Under EVEN the launcher has checked that they are multiples of the tiles (and for the forward's SEQ_Q, under ROWS16,
of 16: the forward's EVEN says nothing of it), so the kernels rewrite them as n // BLOCK * BLOCK (multiple_hint):
the same value, of a form whose divisibility the compiler derives (a product by a constant), and no further compile
under EVEN (ROWS16 is one more variant of the forward, and in self-attention EVEN implies it).  H200, 2026-12-04,
benchmarks/diagnostics/eager_shapes.py --specialise, eager kernel ms without the hints -> with them (Triton's own
specialisation of the lengths in brackets): B4 H16 S2048 D128 p = 0.1 causal, backward 0.669 -> 0.597 (0.595),
forward 0.228 -> 0.211 (0.211); not causal, backward 1.146 -> 0.989 (0.988), forward 0.380 -> 0.353 (0.346); B4
H32/8 p = 0 causal, backward 1.139 -> 1.114, forward 0.382 -> 0.350 (0.349).

Note [fixed band]: the causal band of a dK/dV program is the query tiles [start_n, start_n + BLOCK_N), also where
that passes Sq: the rows past Sq load as zeros with LSE = +inf, so they add exact zeros to dK and dV.  A loop whose
trip count is a constant (BLOCK_N // BLOCK_M) keeps ptxas' wgmma pipeline: with the bound min(start_n + BLOCK_N, Sq)
and Sq a runtime value (the eager kernels serve every length), the 0-or-1-trip loop in front of the main loop made
ptxas serialise every wgmma of the kernel (C7515; B4 H16 S2048 D128 causal p = 0.1, sm_90 SASS: 48 WARPGROUP waits
a main-loop iteration instead of 6).

Note [value head dim]: V (and so O, dO and dV) may have a head dim HEAD_DIM_V other than Q's and K's HEAD_DIM, as in
DeepSeek's MLA (192 for the scores, 128 for the values; FlashAttention 3 supports it the same way).  The scores only
see HEAD_DIM; the V tiles, the O / dV accumulators and the dO tiles are BLOCK_DV wide.  HEAD_DIM_V = 0 (the default
of the helpers) means HEAD_DIM, and BLOCK_DV = 0 means BLOCK_D.

Note [split head dim]: a q/k head dim that is not a power of two is padded to one by the tiles (BLOCK_D), and the
padding is computed: at DeepSeek's MLA 192 a third of every Q·Kᵀ, dSᵀQ and dS·K product is zeros.  With BLOCK_D2 > 0
the head dim is two tiles instead: columns [0, BLOCK_D) (BLOCK_D a power of two below HEAD_DIM, all real) and
[BLOCK_D, BLOCK_D + BLOCK_D2) (the rest, padded to a power of two >= 16), so 192 runs as 128 + 64 and 80 as 64 + 16.
The Q / K tiles, their pointers and bounds and the dK / dQ accumulators are then pairs (Triton tuples) and every
product over the head dim is two tl.dot's into one accumulator (scores) or one per part (dK, dQ); the helpers below
take either form, told by PAD_D: 0 / 1 (one tile, unpadded / padded), 2 / 3 (a pair, second part unpadded /
padded).  The sums run in another order than one padded product (fp32 accumulation: the same to rounding).  The
launchers and lowerings choose the split (head_dim_blocks); TMA descriptors are for one tile only (USE_TMA is
refused with a split).

Note [mask ranges]: with MASK_RANGES (config.attention_mask_ranges) each program takes its tile bounds from a
summary of the mask made once per call (kernels/attn_mask_summary.py: one pass over the mask per slice it does not
broadcast over, so a (B, 1, S, S) mask is read once per batch row, not once per head).  For every block of
MASK_ROWS query rows the summary holds (lo, full_lo, full_hi, hi) in keys, multiples of MASK_TILE: key tiles outside
[lo, hi) hold no real entry (True, or an additive value above the floor) for any of its rows, and the tiles of
[full_lo, full_hi) allow every entry (True, or an additive 0); the same per block of MASK_TILE keys over queries for
the dK/dV programs.  A program reads the
entries covering its rows (mask_tile_range), narrows each of its loops to [lo, hi) and splits its unmasked loop in
three, in key order: [lo, f_lo) and [f_hi, hi) read and apply the mask, and the full tiles [f_lo, f_hi) run a loop of
their own with no mask code at all (ALL_FULL: no addresses, loads or selects), the loop an is_causal program runs
left of its band.  A causal mask tensor then costs the is_causal structure: a mask-free loop, then the diagonal
tiles (the dK/dV programs: the diagonal tiles, then the mask-free ones).  Exact: outside [lo, hi) every score is
-inf or a floor entry of a row whose maximum is real, so the skipped tiles would add exact zeros (+0 for -0 at
most), and a full tile's mask is the True / 0.0 it holds; the tiles are summed in the order of one loop.  A
block with a row that has no real entry (fully masked, or only floor entries, whose probability spreads over those
floor entries: Note [finite-floor rows]) gets every tile in the forward, and counts as needed by every key block in
the dK/dV programs.  A causal mask passed as a tensor then costs its band, with the mask read on the diagonal tiles
only; a sliding window its window, a left-padded batch starts at its first token, a packed sequence of documents
stays in its document.  Not with the mask's gradient (a template's dS buffer is not zero-filled).  The summary is
one read of the mask into flags and one small launch per summary (rows; cols for the backward) per call (Note [mask
summary passes]); the eager op's backward reuses its forward's flags and rows (ops/attention.py's _EagerAttention),
a compiled graph makes them in each pass (the op saves only its inputs, O, LSE and the seed).
Loop structure: ptxas serialises every wgmma of a kernel (advisory C7512 or C7515) when the loops multiply, so the
forward runs two loops, not three (the full tiles, then one loop over [lo, f_lo) and [f_hi, hi) that steps across
the gap: GAP); the dQ programs the same, partial tiles first; the dK/dV programs run two head loops, every head's
partial tiles (with the causal band and ragged tail) before every head's full tiles, as Note [masked tiles first]
does.  Compiled for sm_90 (tests/test_kernels_compile_sm90.py), the eager masked kernels then keep their wgmmas
pipelined; H200, B4 H16/8 S2048 D128, a causal mask tensor: forward 0.44 -> 0.20 ms, backward 1.55 -> 0.59 (is_causal
0.21 / 0.57).

Note [full tiles in reverse]: the full tiles of a dK/dV program (ALL_FULL: the second head loop under MASK_RANGES,
Note [mask ranges]) run as a count from 0, from the last query tile to the first, not as
`range(lo, hi, BLOCK_M)`.  The bounds come from the mask's summary, loaded at run time; with that lower bound in the
loop's header ptxas spilled in this loop, the masked backward's hottest, at the 4-warp (64, 64) tile: 62 local
loads and 42 stores an iteration at head dim 128 with dropout and an additive mask, against 15 and 2 counted from
the top (benchmarks/diagnostics/template_sass.py --shape 4,16,2048,128 --hkv 8 --mask 2 --p 0.1 --tile 64,64,4,2;
head dim 256 with soft-capping, Gemma 2's form at (64, 64, 8, 2): 46 / 25 -> 32 / 18).  On an H100 that backward
went from 0.688 to 0.58 ms and became the table's tile (heuristics/attention.py's CUDA_BWD_MASKED_DROPOUT).  The
tiles are those of the range, so only the order of the dK / dV sums changes (fixed: still the same bits every run);
lo and hi are multiples of BLOCK_M there (the summary's entries are rounded to the tile, and so are the causal and
whole-tile bounds they are clipped to).  The other loops keep the range form: counted, the causal band's loop
changes its pipelining and at head dim 256 asks for more shared memory than an SM has.

Note [mask loop stages]: Triton pipelines a loop's loads through shared memory, one buffer a stage, and a loop that
reads mask tiles has a third tile to buffer beside K and V.  A kernel's shared memory is that of its largest loop, so
the forward's mask-reading loop (the partial tiles of Note [mask ranges], or a whole unsummarised mask) can set it
alone, and shared memory decides how many programs share an SM.  At the (64, 64, 4, 3) tile with an additive mask
(head dim 128) the mask loop took the kernel from the causal template's 114688 bytes to 131072: one program an SM
where two fit (an H100 / H200 SM has 233472 bytes for its programs, less 1024 reserved for each).  MASK_STAGES > 0
runs the loops that read a mask on that many stages (`tl.range(num_stages=...)`), the others on the kernel's: on
two, that kernel is back at 114688 bytes with its wgmmas still pipelined and no spills
(benchmarks/diagnostics/template_sass.py --fwd --shape 4,16,2048,128 --hkv 8 --p 0.1 --mask 2 --tile 64,64,4,3
--mask-stages 2).  A causal mask tensor has one or two partial tiles a row block, so their shallower pipeline costs
little.  The backward's loops that read mask tiles (the dK/dV programs' partial tiles and the dQ programs') take the
same setting: at head dim 256 the split (16, 64, 4, 3) tile takes 119040 bytes over a mask on three stages, one
program an SM, and 114944 with them on two, the causal template's and two programs an SM (CUDA_BWD_MASKED's tile
there).  The templates take it from the tile (AttnFwdTile / AttnBwdTile.mask_stages; config.attention_mask_stages
overrides it); the eager kernels keep the kernel's stages.

Note [TMA loads]: with USE_TMA the tiles an inner loop streams (K / V in the forward and the dQ programs, Q / dO in
the dK/dV programs) come through TMA tensor descriptors (`tl.make_tensor_descriptor` of the (b, h) slice, built in
the kernel; Inductor's launcher gives Triton the allocator for their scratch) instead of pointer tiles.  TMA fills
rows past the sequence and columns past the head dim with zeros, as the masked pointer loads do, so the values, and
every output bit, are the same.  The lowering allows it only for fp16 / bf16 with a unit-stride head dim of a
multiple of 16 bytes and 16-byte aligned strides and offset (lowerings/attention.py's _use_tma), and only when
config.attention_tma is set.  It is off by default: on the H200 with triton 3.6 every template is slower with it
(B4 H16 S2048 D128 forward 294 -> 333 us, backward 799 -> 808; causal 164 -> 168 / 447 -> 461; B8 H16 S1024 D64
forward 89 -> 101, backward 254 -> 274), and `tl.range(warp_specialize=True)` on top left the head-dim-128 forward
unchanged and failed to compile at head dim 64.
"""
import triton
import triton.language as tl


# ---------------------------------------------------------------- loads
@triton.jit
def load_tile(p, m_rows, m_cols, CHECK_ROWS: tl.constexpr, CHECK_COLS: tl.constexpr):
    """Load a [R, C] tile; m_rows [R] / m_cols [C] are the bounds, checked only where the constexpr asks."""
    if CHECK_ROWS and CHECK_COLS:
        return tl.load(p, mask=m_rows[:, None] & m_cols[None, :], other=0.0)
    elif CHECK_ROWS:
        return tl.load(p, mask=m_rows[:, None], other=0.0)
    elif CHECK_COLS:
        return tl.load(p, mask=m_cols[None, :], other=0.0)
    else:
        return tl.load(p)


@triton.jit
def wide(stride):
    """A stride as int64, so that its products are (a kernel's WIDE: Note [int64 offsets] in attn_common.py)."""
    return tl.cast(stride, tl.int64)


@triton.jit
def multiple_hint(n, BLOCK: tl.constexpr, KNOWN: tl.constexpr):
    """n, a length the caller knows to be a multiple of BLOCK when KNOWN, written so that the compiler knows it too
    (Note [length hints])."""
    if KNOWN:
        return n // BLOCK * BLOCK
    else:
        return n


@triton.constexpr_function
def head_pad(HEAD_DIM, BLOCK_D, BLOCK_D2):
    """PAD_D of Note [split head dim]: 0 / 1 one head-dim tile (unpadded / padded), 2 / 3 a pair (second part
    unpadded / padded); the helpers below branch on it."""
    if BLOCK_D2 > 0:
        return 2 + (BLOCK_D + BLOCK_D2 != HEAD_DIM)
    return int(BLOCK_D != HEAD_DIM)


@triton.jit
def head_cols(HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_D2: tl.constexpr):
    """(o_d, m_d): the head-dim columns of a Q / K tile and their bounds, pairs with a split (Note [split head
    dim])."""
    if BLOCK_D2 > 0:
        o_d = (tl.arange(0, BLOCK_D), BLOCK_D + tl.arange(0, BLOCK_D2))
        return o_d, (o_d[0] < HEAD_DIM, o_d[1] < HEAD_DIM)
    else:
        o_d = tl.arange(0, BLOCK_D)
        return o_d, o_d < HEAD_DIM


@triton.jit
def head_ptrs(X, off, o_rows, o_d, stride_row, stride_d, PAD_D: tl.constexpr):
    """Pointers of the [rows, head dim] tile of the slice at X + off (a pair with a split)."""
    if PAD_D >= 2:
        return (X + off + o_rows[:, None] * stride_row + o_d[0][None, :] * stride_d,
                X + off + o_rows[:, None] * stride_row + o_d[1][None, :] * stride_d)
    else:
        return X + off + o_rows[:, None] * stride_row + o_d[None, :] * stride_d


@triton.jit
def load_head(p, m_rows, m_d, CHECK_ROWS: tl.constexpr, PAD_D: tl.constexpr, DTYPE: tl.constexpr):
    """load_tile of a head_ptrs tile, cast to DTYPE (a pair with a split)."""
    if PAD_D >= 2:
        return (load_tile(p[0], m_rows, m_d[0], CHECK_ROWS, False).to(DTYPE),
                load_tile(p[1], m_rows, m_d[1], CHECK_ROWS, PAD_D == 3).to(DTYPE))
    else:
        return load_tile(p, m_rows, m_d, CHECK_ROWS, PAD_D).to(DTYPE)


@triton.jit
def store_head(p, val, m_rows, m_d, PAD_D: tl.constexpr):
    """Store a head-dim tile (a pair with a split) through head_ptrs pointers, in the pointers' dtype."""
    if PAD_D >= 2:
        tl.store(p[0], val[0].to(p[0].dtype.element_ty), mask=m_rows[:, None] & m_d[0][None, :])
        tl.store(p[1], val[1].to(p[1].dtype.element_ty), mask=m_rows[:, None] & m_d[1][None, :])
    else:
        tl.store(p, val.to(p.dtype.element_ty), mask=m_rows[:, None] & m_d[None, :])


@triton.jit
def head_zeros(ROWS: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_D2: tl.constexpr, ACC_DTYPE: tl.constexpr):
    """A zero dK / dQ accumulator [ROWS, head dim] (a pair with a split)."""
    if BLOCK_D2 > 0:
        return (tl.zeros([ROWS, BLOCK_D], dtype=ACC_DTYPE), tl.zeros([ROWS, BLOCK_D2], dtype=ACC_DTYPE))
    else:
        return tl.zeros([ROWS, BLOCK_D], dtype=ACC_DTYPE)


@triton.jit
def first_head(x, PAD_D: tl.constexpr):
    """The tile, or a pair's first part (for its dtype)."""
    if PAD_D >= 2:
        return x[0]
    else:
        return x


@triton.jit
def head_scale(x, f, PAD_D: tl.constexpr):
    """x * f for a head-dim tile (a pair with a split)."""
    if PAD_D >= 2:
        return (x[0] * f, x[1] * f)
    else:
        return x * f


@triton.jit
def dot_heads(a, b, PAD_D: tl.constexpr, DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr,
              OUT_DTYPE: tl.constexpr):
    """a · bᵀ summed over the head dim, [rows of a, rows of b] in OUT_DTYPE: one tl.dot, or one per part of a
    split head dim (Note [split head dim]); b is cast to DOT_DTYPE (a is already)."""
    if PAD_D >= 2:
        acc = tl.dot(a[0], tl.trans(b[0].to(DOT_DTYPE)), input_precision=PRECISION, out_dtype=OUT_DTYPE)
        return tl.dot(a[1], tl.trans(b[1].to(DOT_DTYPE)), acc, input_precision=PRECISION, out_dtype=OUT_DTYPE)
    else:
        return tl.dot(a, tl.trans(b.to(DOT_DTYPE)), input_precision=PRECISION, out_dtype=OUT_DTYPE)


@triton.jit
def dot_into_heads(a, b, acc, PAD_D: tl.constexpr, DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr):
    """acc + a · b for a head-dim b and acc (pairs with a split): dK += dSᵀQ, dQ += dS·K."""
    if PAD_D >= 2:
        return (tl.dot(a, b[0].to(DOT_DTYPE), acc[0], input_precision=PRECISION, out_dtype=acc[0].dtype),
                tl.dot(a, b[1].to(DOT_DTYPE), acc[1], input_precision=PRECISION, out_dtype=acc[1].dtype))
    else:
        return tl.dot(a, b.to(DOT_DTYPE), acc, input_precision=PRECISION, out_dtype=acc.dtype)


@triton.jit
def tile_source(X, off, o_rows, o_d, stride_row, stride_d, n_rows, HEAD_DIM: tl.constexpr, BLOCK_R: tl.constexpr,
                BLOCK_D: tl.constexpr, USE_TMA: tl.constexpr, PAD_D: tl.constexpr = 0,
                ROW_OFFSETS: tl.constexpr = False):
    """What an inner loop streams [BLOCK_R, BLOCK_D] tiles of the (n_rows, HEAD_DIM) slice at X + off from: a TMA
    tensor descriptor (USE_TMA: unit stride_d, 16-byte aligned base and rows -- the lowering checks), the slice's
    base pointer and the integer offsets of its first tile (ROW_OFFSETS: Note [row offsets] in
    heuristics/attention.py) or the pointers of its first tile (o_rows = arange(BLOCK_R); a pair with a split head
    dim, PAD_D >= 2).  Note [TMA loads]."""
    if USE_TMA:
        tl.static_assert(PAD_D < 2, "TMA tiles take one head-dim tile (Note [split head dim])")
        return tl.make_tensor_descriptor(X + off, shape=[n_rows, HEAD_DIM], strides=[stride_row, 1],
                                         block_shape=[BLOCK_R, BLOCK_D])
    elif ROW_OFFSETS:
        tl.static_assert(PAD_D < 2, "row offsets take one head-dim tile (Note [split head dim])")
        return X + off, o_rows[:, None] * stride_row + o_d[None, :] * stride_d
    else:
        return head_ptrs(X, off, o_rows, o_d, stride_row, stride_d, PAD_D)


@triton.jit
def load_stream_tile(src, start, stride_row, m_rows, m_d, CHECK_ROWS: tl.constexpr, CHECK_COLS: tl.constexpr,
                     USE_TMA: tl.constexpr, ROW_OFFSETS: tl.constexpr = False):
    """The tile of rows [start, start + BLOCK_R) of a tile_source; rows past n_rows and columns past HEAD_DIM are 0
    either way (TMA fills out-of-bounds elements with zeros), so both give the same values.  CHECK_COLS is the
    source's PAD_D: 2 / 3 load a pair (Note [split head dim])."""
    if USE_TMA:
        return src.load([start, 0])
    elif ROW_OFFSETS:  # the pointers made here, per tile (Note [row offsets])
        return load_tile(src[0] + (start * stride_row + src[1]), m_rows, m_d, CHECK_ROWS, CHECK_COLS)
    elif CHECK_COLS >= 2:
        return (load_tile(src[0] + start * stride_row, m_rows, m_d[0], CHECK_ROWS, False),
                load_tile(src[1] + start * stride_row, m_rows, m_d[1], CHECK_ROWS, CHECK_COLS == 3))
    else:
        return load_tile(src + start * stride_row, m_rows, m_d, CHECK_ROWS, CHECK_COLS)


@triton.jit
def load_mask_tile(MASK, mask_off, o_i, o_j, stride_mm, stride_mn, SEQ_Q, SEQ_K, MASK_KIND: tl.constexpr,
                   CHECK_KEYS: tl.constexpr = True):
    """The attn_mask tile at rows o_i, cols o_j (broadcast-shaped); MASK is None when MASK_KIND == 0.

    mask_off is the int64 offset of this (b, h) slice; broadcast dims have stride 0, so nothing is materialised.
    CHECK_KEYS=False: the caller knows every key o_j is below SEQ_K (a whole key tile). The keys run along the
    mask's unit stride, and a per-key bound check with a runtime SEQ_K (not specialised: Note [one kernel per
    configuration]) makes every element its own predicated one-byte or two-byte load; without it the row's keys
    load as 16-byte vectors (sm_90 SASS of the eager forward with a bool mask, D128: 32 LDG.E.U8 a thread and a step
    and ptxas serialising the step's wgmmas, against pipelined copies and wgmmas; H200, B4 H16/8 S2048 bf16 with a
    causal mask tensor: forward 0.92 -> 0.44 ms, forward+backward 2.89 -> 2.02 ms).
    """
    if MASK_KIND == 0:
        return 0.0
    else:
        p = MASK + mask_off + o_i.to(tl.int64) * stride_mm + o_j * stride_mn
        if CHECK_KEYS:
            m = (o_i < SEQ_Q) & (o_j < SEQ_K)
        else:
            m = o_i < SEQ_Q
        if MASK_KIND == 1:
            return tl.load(p, mask=m, other=0) != 0
        else:
            b_mask = tl.load(p, mask=m, other=0.0)
            return b_mask.to(tl.float64) if b_mask.dtype == tl.float64 else b_mask.to(tl.float32)


# ---------------------------------------------------------------- scores
@triton.jit
def additive_mask_log2(b_mask):
    """log2(e) * mask, except floor entries (mask <= -2^24) -> FLOOR2 and -inf -> -inf (Note [finite-floor rows])."""
    LOG2E: tl.constexpr = 1.4426950408889634
    FLOOR_MASK: tl.constexpr = -16777216.0  # -2^24
    FLOOR2: tl.constexpr = -8.507059173023462e37  # -2^126
    floor = tl.where(b_mask == float("-inf"), float("-inf"), FLOOR2)
    return tl.where(b_mask > FLOOR_MASK, b_mask * LOG2E, floor)


@triton.jit
def softcap_tanh(qk, softcap_scale, SOFTCAP: tl.constexpr = 1):
    """t = tanh(softcap_scale * qk) (Note [soft-capping]).

    SOFTCAP 1: as 1 - 2 / (2^(2 log2(e) y) + 1): an exp2 and a division that saturate to exactly +-1 for large |y|
    (inf in the exp2 gives 1, 0 gives -1), never inf / inf.  Near 0 it is accurate to ~1 ulp of 1 absolute (6e-8,
    3e-6 of a score capped at 50): below bf16's and fp32 scores' own rounding at that magnitude.  On sm_90 (fp32,
    Triton's `/` is div.full.f32) about ten instructions an element, two of them MUFU (ex2, rcp): the D128 forward
    template's loop grows from 351 to 602 instructions (benchmarks/diagnostics/template_sass.py --softcap).
    SOFTCAP 2: the GPU's tanh.approx.f32, one MUFU instruction, relative error <= 2^-10.99 (5e-4: 0.025 of a score
    capped at 50), what FlashAttention uses; an fp16 / bf16 score carries 2^-9 of its own rounding, so 16-bit
    inputs lose nothing they had (the launchers choose it for those on a GPU; the interpreter cannot run it)."""
    if SOFTCAP == 2:
        y = qk * softcap_scale
        return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [y], dtype=tl.float32, is_pure=True,
                                         pack=1)
    else:
        TWO_LOG2E: tl.constexpr = 2.8853900817779268
        return 1.0 - 2.0 / (tl.math.exp2(qk * (softcap_scale * TWO_LOG2E)) + 1.0)


# Note [full tiles without the mask's arithmetic]
# With an additive mask the scores live in the log2 domain as s2 = qk * scale2 + log2(e) * mask (c = 1), and the
# backward's P = 2^((s2 - anchor) - offset) keeps an anchor for floor rows (Note [finite-floor rows]): a multiply
# and two subtractions an element.  A tile the mask summary calls full (Note [mask ranges]) has mask 0 everywhere,
# and every row of it holds a real entry there, so none is a floor row and every anchor is 0: its scores are those
# of attention without a mask, s = qk with c = scale2, and P = 2^(qk * c - offset) is one fused multiply-add, as
# for is_causal's whole tiles.  The values differ from the masked arithmetic's only by that rounding.
# sm_90 SASS (template_sass.py --mask 2, instructions a tile): at B4 16/8 S2048 D128 p 0.1 the dK/dV whole-tile
# loop 808 -> 762, dQ 476 -> 444, forward 575 -> 545; H200 (mask_template_tiles.py, HF's bf16 causal mask): the
# backward template 0.576 -> 0.577 ms there (unchanged), and 1.071 -> 1.045 ms at Gemma 2's B4 8/4 S2048 D256,
# cap 50, p 0.  Leaving out lse_unpack's floor test as well (rows known normal: full tiles, no mask) saved more
# instructions (is_causal's dK/dV loops 729 -> 680) but made ptxas spill more at head dim 256: there it made the
# backward slower (is_causal 0.971 -> 1.028 ms, masked 1.045 -> 1.165), and no faster at 128.


@triton.jit
def score_scale(qk_scale2, MASK_KIND: tl.constexpr, ALL_FULL: tl.constexpr = False):
    """c in s2 = s * c: the folded scale*log2(e), or 1 when the additive mask already put s in the log2 domain
    (not in ALL_FULL tiles, whose scores carry no mask: Note [full tiles without the mask's arithmetic])."""
    if MASK_KIND == 2 and not ALL_FULL:
        return 1.0
    else:
        return qk_scale2


@triton.jit
def attn_scores(qk, o_i, o_j, b_mask, qk_scale2, SEQ_K,
                MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, MASKED: tl.constexpr,
                ALL_FULL: tl.constexpr = False):
    """Scores s of one tile (s2 = s * score_scale(...)); -inf where key j is not allowed for query i.

    MASKED tiles (causal band, ragged key end) also get j < Sk and, if IS_CAUSAL, j <= i (top-left aligned, as SDPA).
    Whole tiles above the causal band are never visited (loop bounds), so they cost nothing.  ALL_FULL: the mask
    tile allows every entry (True / 0.0, Note [mask ranges]; b_mask is not read): s is qk, as without a mask
    (Note [full tiles without the mask's arithmetic]).
    """
    if MASK_KIND == 2 and not ALL_FULL:
        s = qk * qk_scale2 + additive_mask_log2(b_mask)
    elif MASK_KIND == 1 and not ALL_FULL:
        s = tl.where(b_mask, qk, float("-inf"))
    else:
        s = qk
    if MASKED:
        allowed = o_j < SEQ_K
        if IS_CAUSAL:
            allowed = allowed & (o_j <= o_i)
        s = tl.where(allowed, s, float("-inf"))
    return s


# ---------------------------------------------------------------- softmax
@triton.jit
def online_softmax_step(s, c, m_i, l_i):
    """One tile of the streaming softmax in the log2 domain (rows of s are queries).

    Returns p = 2^(s*c - m_new) [BM, BN], alpha = 2^(m_i - m_new) (rescales the old accumulators), m_new, l_new.
    A row with no allowed key so far keeps m = -inf; using 0 in its place avoids (-inf) - (-inf) = nan.
    """
    m_new = tl.maximum(m_i, tl.max(s, 1) * c)
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.math.exp2(s * c - m_safe[:, None])
    alpha = tl.math.exp2(m_i - m_safe)
    l_new = l_i * alpha + tl.sum(p, 1)
    return p, alpha, m_new, l_new


@triton.jit
def lse_pack(m_i, l_i):
    """Row LSE to store (natural log): -inf for a row with no allowed key, the floor sentinel (Note
    [finite-floor rows]) for a row made only of floor entries, else (m + log2 l) * ln 2."""
    LN2: tl.constexpr = 0.6931471805599453
    FLOOR2: tl.constexpr = -8.507059173023462e37  # -2^126
    SENTINEL: tl.constexpr = -1.329227995784916e36  # -2^120
    log2_l = tl.math.log2(l_i)
    return tl.where(m_i == FLOOR2, SENTINEL * (1.0 + log2_l * 0.015625), (m_i + log2_l) * LN2)


@triton.jit
def lse_unpack(lse):
    """Stored LSE -> (anchor, offset) such that p = 2^((s2 - anchor) - offset).

    Normal rows: (0, lse*log2 e).  Floor rows: (FLOOR2, log2 l).  lse = -inf (no allowed key) decodes as a floor row
    with offset +inf and lse = +inf (padding rows) as offset +inf: both give p = 0 everywhere.
    """
    LOG2E: tl.constexpr = 1.4426950408889634
    FLOOR2: tl.constexpr = -8.507059173023462e37  # -2^126
    SENTINEL_LIMIT: tl.constexpr = -6.64613997892458e35  # -2^119
    INV_SENTINEL: tl.constexpr = -7.52316384526264e-37  # 1 / -2^120
    is_floor = lse < SENTINEL_LIMIT
    offset = tl.where(is_floor, (lse * INV_SENTINEL - 1.0) * 64.0, lse * LOG2E)
    anchor = tl.where(is_floor, FLOOR2, 0.0)
    return anchor, offset


@triton.jit
def probs_from_lse(s, c, anchor, offset, MASK_KIND: tl.constexpr, ALL_FULL: tl.constexpr = False):
    """Backward's P = exp(S - LSE) with the whole row's LSE (anchor/offset broadcast-shaped like s).  ALL_FULL: no
    row of the tile is a floor row, so the anchor is 0 (Note [full tiles without the mask's arithmetic])."""
    if MASK_KIND == 2 and not ALL_FULL:
        return tl.math.exp2((s - anchor) - offset)
    else:
        return tl.math.exp2(s * c - offset)


# ---------------------------------------------------------------- dropout
@triton.jit
def _mix32(x):
    """M(x) of Note [dropout replay] on uint32 (wrapping): multiply, xorshift 15, multiply."""
    x = x * 0x7FEB352D
    x = x ^ (x >> 15)
    return x * 0x846CA68B


@triton.jit
def _lowbias32(x):
    """H(x) = xs16(M(xs16(x))), xs16(x) = x ^ (x >> 16): Wellons' lowbias32 finalizer, for the per-(b, h) keys."""
    x = _mix32(x ^ (x >> 16))
    return x ^ (x >> 16)


@triton.jit
def dropout_keep(seed, i_b, i_h, o_i, start_n, threshold, BLOCK_N: tl.constexpr, KEYS_ON_ROWS: tl.constexpr):
    """Keep mask of queries o_i [BM] and keys [start_n, start_n + BLOCK_N): [BM, BN], or [BN, BM] when
    KEYS_ON_ROWS (the backward's transposed tiles).  A pure function of (seed, b, h, i, j), Note [dropout replay].

    One 32-bit draw per (row, key pair j, j + 8) feeds both keys (low and high 16 bits).  The pair is built with
    join / permute / reshape, which on sm_90 stays in registers in both tile orientations: in a wgmma accumulator a
    thread holds columns c and c + 8 and rows r and r + 8.
    """
    tl.static_assert(BLOCK_N % 16 == 0, "dropout draws pair keys j and j + 8 of each 16")
    s = seed.to(tl.int64)
    k = _lowbias32((s >> 32).to(tl.uint32) ^ 0x6A09E667)
    k = _lowbias32(k ^ s.to(tl.uint32))
    k = _lowbias32(k ^ i_b.to(tl.uint32))
    k_r = _lowbias32(k ^ i_h.to(tl.uint32))
    k_c = _lowbias32(k_r ^ 0xBB67AE85)
    b_r = _mix32(k_r ^ o_i.to(tl.uint32)) ^ k_c  # [BM]
    o_a, o_c = tl.arange(0, BLOCK_N // 16), tl.arange(0, 8)
    # pair index g = 8 (j >> 4) + (j & 7) of keys j = start_n + 16 a + 8 half + c (start_n is a multiple of 16)
    b_c = (start_n // 2 + o_a[:, None] * 8 + o_c[None, :]).to(tl.uint32) * 0x9E3779B9  # [BN/16, 8]
    if KEYS_ON_ROWS:
        x = _mix32(b_c[:, :, None] ^ b_r[None, None, :])  # [BN/16, 8, BM]
        keep = tl.permute(tl.join((x & 0xFFFF) >= threshold, (x >> 16) >= threshold), (0, 3, 1, 2))
        return tl.reshape(keep, (BLOCK_N, o_i.shape[0]))  # [BN/16, 2, 8, BM] -> [BN, BM]
    else:
        x = _mix32(b_r[:, None, None] ^ b_c[None, :, :])  # [BM, BN/16, 8]
        keep = tl.permute(tl.join((x & 0xFFFF) >= threshold, (x >> 16) >= threshold), (0, 1, 3, 2))
        return tl.reshape(keep, (o_i.shape[0], BLOCK_N))  # [BM, BN/16, 2, 8] -> [BM, BN]



# ---------------------------------------------------------------- mask ranges
@triton.jit
def mask_real(b_mask, MASK_KIND: tl.constexpr):
    """Entries of a mask tile that can carry probability next to a real score: True (bool) or an additive value
    above the floor (> -2^24: Note [finite-floor rows]; -inf and floor entries are not real)."""
    if MASK_KIND == 1:
        return b_mask
    else:
        FLOOR_MASK: tl.constexpr = -16777216.0  # -2^24
        return b_mask > FLOOR_MASK


MASK_TILE = tl.constexpr(64)  # keys (rows summary) or queries (cols summary) per tile of a mask summary
MASK_ROWS = tl.constexpr(16)  # query rows per entry of the rows summary (a cols entry covers MASK_TILE keys)


@triton.jit
def mask_tile_range(RANGES, i_b, i_h, stride_b, stride_h, start, length, BLOCK: tl.constexpr, TILE: tl.constexpr,
                    ENTRY: tl.constexpr):
    """Note [mask ranges]: (lo, full_lo, full_hi, hi) for the rows [start, start + BLOCK) (the keys, for a dK/dV
    program) of slice (i_b, i_h) from the summary entries of ENTRY rows (MASK_ROWS; keys: MASK_TILE) that cover them
    (RANGES: [.., .., n, 4] int32 with strides (stride_b, stride_h, 4, 1), n = cdiv(length, ENTRY) for the axis of
    `start`), in units of the other axis, rounded to its TILE (lo and full_hi down, full_lo and hi up, so [lo, hi)
    only grows and [full_lo, full_hi) only shrinks).  Tiles outside [lo, hi) add exact zeros; the mask tiles of
    [full_lo, full_hi) allow every entry and need not be read.  full_hi < full_lo means none."""
    E: tl.constexpr = BLOCK // ENTRY if BLOCK > ENTRY else 1
    BIG: tl.constexpr = 1 << 30
    ranges_off = i_b.to(tl.int64) * stride_b + i_h.to(tl.int64) * stride_h
    n_entries = tl.cdiv(length, ENTRY)
    lo = BIG
    f_lo = 0
    f_hi = BIG
    hi = 0
    for e in tl.static_range(E):
        i_e = start // ENTRY + e
        ok = i_e < n_entries
        p = RANGES + ranges_off + i_e.to(tl.int64) * 4
        lo = tl.minimum(lo, tl.load(p, mask=ok, other=BIG))
        f_lo = tl.maximum(f_lo, tl.load(p + 1, mask=ok, other=0))
        f_hi = tl.minimum(f_hi, tl.load(p + 2, mask=ok, other=BIG))
        hi = tl.maximum(hi, tl.load(p + 3, mask=ok, other=0))
    f_hi = tl.maximum(f_hi, 0)
    return (lo // TILE * TILE, (f_lo + TILE - 1) // TILE * TILE, f_hi // TILE * TILE,
            (hi + TILE - 1) // TILE * TILE)


@triton.jit
def clip_range(a, b, lo_r, hi_r, f_lo, f_hi):
    """Note [mask ranges]: a loop's tiles [a, b) narrowed to a summary's [lo_r, hi_r), and the summary's full range
    [f_lo, f_hi) placed inside the result: (a', b', f_lo', f_hi') with a' <= f_lo' <= f_hi' <= b'."""
    a = tl.maximum(a, lo_r)
    b = tl.maximum(tl.minimum(b, hi_r), a)
    f_lo = tl.minimum(tl.maximum(f_lo, a), b)
    return a, b, f_lo, tl.minimum(tl.maximum(f_hi, f_lo), b)


# ---------------------------------------------------------------- forward
@triton.jit
def attn_fwd_tiles(acc, m_i, l_i, q, p_k, p_v, MASK, mask_off, seed, i_b, i_h, o_i, m_d, m_dv, lo, hi,
                   stride_kn, stride_vn, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
                   BLOCK_N: tl.constexpr, PAD_D: tl.constexpr, PAD_DV: tl.constexpr, MASK_KIND: tl.constexpr,
                   IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr, MASKED: tl.constexpr,
                   DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, USE_TMA: tl.constexpr, softcap_scale,
                   SOFTCAP: tl.constexpr, ALL_FULL: tl.constexpr = False, gap_lo=0, gap_hi=0,
                   GAP: tl.constexpr = False, MASK_STAGES: tl.constexpr = 0):
    """Stream key tiles [lo, hi) into (acc [BM, BDV], m_i, l_i).  p_k / p_v: tile_source's of K and V; m_d / m_dv
    the head-dim bounds of q, k and of v (Note [value head dim]).  ALL_FULL: the mask allows every entry of these
    tiles and is not read (Note [mask ranges]); GAP: leaving out the tiles of [gap_lo, gap_hi), lo <= gap_lo <=
    gap_hi <= hi.  MASK_STAGES > 0: the pipeline stages of a loop that reads mask tiles (Note [mask loop stages]).
    Dropout zeroes p after l is summed: the LSE is that of the undropped P.
    """
    c = score_scale(qk_scale2, MASK_KIND, ALL_FULL)
    o_jb = tl.arange(0, BLOCK_N)
    STAGES: tl.constexpr = MASK_STAGES if MASK_STAGES and MASK_KIND != 0 and not ALL_FULL else None
    if GAP:
        hi = hi - (gap_hi - gap_lo)
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=STAGES):
        if GAP:
            start_n = tl.where(start_n >= gap_lo, start_n + (gap_hi - gap_lo), start_n)
        start_n = tl.multiple_of(start_n, BLOCK_N)
        o_j = start_n + o_jb
        m_j = o_j < SEQ_K
        k = load_stream_tile(p_k, start_n, stride_kn, m_j, m_d, MASKED, PAD_D, USE_TMA)  # [BN, BD]
        qk = dot_heads(q, k, PAD_D, DOT_DTYPE, PRECISION, acc.dtype)  # [BM, BN]
        if SOFTCAP:  # Note [soft-capping]: qk -> t, qk_scale2 = softcap * log2(e)
            qk = softcap_tanh(qk, softcap_scale, SOFTCAP)
        if ALL_FULL:
            b_mask = 0.0
        else:
            b_mask = load_mask_tile(MASK, mask_off, o_i=o_i[:, None], o_j=o_j[None, :], stride_mm=stride_mm,
                                    stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, MASK_KIND=MASK_KIND,
                                    CHECK_KEYS=MASKED)  # unmasked steps visit whole key tiles
        s = attn_scores(qk, o_i=o_i[:, None], o_j=o_j[None, :], b_mask=b_mask, qk_scale2=qk_scale2, SEQ_K=SEQ_K,
                        MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, MASKED=MASKED, ALL_FULL=ALL_FULL)
        p, alpha, m_i, l_i = online_softmax_step(s, c, m_i, l_i)
        acc = acc * alpha[:, None]
        v = load_stream_tile(p_v, start_n, stride_vn, m_j, m_dv, MASKED, PAD_DV, USE_TMA)  # [BN, BDV]
        if HAS_DROPOUT:  # a product, not tl.where: LLVM would sink the select past the cast to DOT_DTYPE
            p = p * dropout_keep(seed, i_b, i_h, o_i, start_n, dropout_threshold, BLOCK_N, False).to(p.dtype)
        acc = tl.dot(p.to(DOT_DTYPE), v.to(DOT_DTYPE), acc, input_precision=PRECISION, out_dtype=acc.dtype)
    return acc, m_i, l_i


@triton.jit
def attn_fwd_inner(acc, m_i, l_i, q, p_k, p_v, MASK, mask_off, seed, i_b, i_h, o_i, m_d, m_dv, lo, hi,
                   stride_kn, stride_vn, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
                   BLOCK_N: tl.constexpr, PAD_D: tl.constexpr, PAD_DV: tl.constexpr, MASK_KIND: tl.constexpr,
                   IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr, MASKED: tl.constexpr,
                   DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, USE_TMA: tl.constexpr, softcap_scale,
                   SOFTCAP: tl.constexpr, f_lo=0, f_hi=0, SKIP_FULL: tl.constexpr = False,
                   MASK_STAGES: tl.constexpr = 0):
    """attn_fwd_tiles over [lo, hi); SKIP_FULL: in two loops, first the tiles of [f_lo, f_hi) without the mask,
    then those of [lo, f_lo) and [f_hi, hi) with it (lo <= f_lo <= f_hi <= hi: clip_range).  A third loop makes
    ptxas serialise the eager kernels' wgmmas (Note [mask ranges]).  MASK_STAGES: attn_fwd_tiles'.

    Called twice per program: MASKED=False over whole tiles left of the causal band, MASKED=True over the band and
    the ragged end (Triton tutorial 06).
    """
    if SKIP_FULL:
        acc, m_i, l_i = attn_fwd_tiles(
            acc, m_i, l_i, q, p_k, p_v, MASK, mask_off, seed, i_b, i_h, o_i, m_d, m_dv, f_lo, f_hi, stride_kn,
            stride_vn, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold, BLOCK_N, PAD_D, PAD_DV,
            MASK_KIND, IS_CAUSAL, HAS_DROPOUT, MASKED, DOT_DTYPE, PRECISION, USE_TMA, softcap_scale, SOFTCAP,
            ALL_FULL=True)
    return attn_fwd_tiles(
        acc, m_i, l_i, q, p_k, p_v, MASK, mask_off, seed, i_b, i_h, o_i, m_d, m_dv, lo, hi, stride_kn, stride_vn,
        stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold, BLOCK_N, PAD_D, PAD_DV, MASK_KIND,
        IS_CAUSAL, HAS_DROPOUT, MASKED, DOT_DTYPE, PRECISION, USE_TMA, softcap_scale, SOFTCAP, gap_lo=f_lo,
        gap_hi=f_hi, GAP=SKIP_FULL, MASK_STAGES=MASK_STAGES)


# ---------------------------------------------------------------- backward
@triton.jit
def _dkdv_tile(dk, dv, k, v, p_q, p_do, LSE, DELTA, MASK, mask_off, seed, i_b, i_h, start_n, start_m, o_ib, o_j, c,
               m_d, m_dv, stride_qm, stride_dom, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
               dropout_scale, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAD_D: tl.constexpr,
               PAD_DV: tl.constexpr, MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
               MASKED: tl.constexpr, DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, USE_TMA: tl.constexpr,
               softcap_scale, SOFTCAP: tl.constexpr, PART: tl.constexpr, WHOLE_KEYS: tl.constexpr,
               ALL_FULL: tl.constexpr, ROW_OFFSETS: tl.constexpr):
    """One query tile [start_m, start_m + BLOCK_M) of attn_bwd_dkdv_inner (which see)."""
    start_m = tl.multiple_of(start_m, BLOCK_M)
    o_i = start_m + o_ib
    m_i = o_i < SEQ_Q
    q = load_stream_tile(p_q, start_m, stride_qm, m_i, m_d, MASKED, PAD_D, USE_TMA, ROW_OFFSETS)  # [BM, BD]
    do = load_stream_tile(p_do, start_m, stride_dom, m_i, m_dv, MASKED, PAD_DV, USE_TMA, ROW_OFFSETS)  # [BM, BDV]
    # The statements keep one order for every PART (dPᵀ's product before dV's): ptxas spills otherwise at
    # head dim 128 with dropout (benchmarks/diagnostics/template_sass.py, 16 LDL a masked iteration).
    if MASKED:
        lse = tl.load(LSE + o_i, mask=m_i, other=float("inf"))
        if PART != 1:
            delta = tl.load(DELTA + o_i, mask=m_i, other=0.0)
    else:
        lse = tl.load(LSE + o_i)
        if PART != 1:
            delta = tl.load(DELTA + o_i)
    anchor, offset = lse_unpack(lse)
    if HAS_DROPOUT and PART != 1:  # dSᵀ = s Pᵀ∘(keep∘dPᵀ - Δ / s), s = 1 / (1-p): the caller applies s to dK
        delta = delta * (1.0 / dropout_scale)
    qk_t = dot_heads(k, q, PAD_D, DOT_DTYPE, PRECISION, dv.dtype)  # [BN, BM]
    if SOFTCAP:  # Note [soft-capping]
        qk_t = softcap_tanh(qk_t, softcap_scale, SOFTCAP)
    if ALL_FULL:
        b_mask = 0.0
    else:
        b_mask = load_mask_tile(MASK, mask_off, o_i=o_i[None, :], o_j=o_j[:, None], stride_mm=stride_mm,
                                stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, MASK_KIND=MASK_KIND,
                                CHECK_KEYS=not WHOLE_KEYS)
    s_t = attn_scores(qk_t, o_i=o_i[None, :], o_j=o_j[:, None], b_mask=b_mask, qk_scale2=qk_scale2, SEQ_K=SEQ_K,
                      MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, MASKED=MASKED, ALL_FULL=ALL_FULL)
    p_t = probs_from_lse(s_t, c, anchor[None, :], offset[None, :], MASK_KIND, ALL_FULL)
    if PART != 1:
        dp_t = tl.dot(v, tl.trans(do.to(DOT_DTYPE)), input_precision=PRECISION, out_dtype=dv.dtype)  # [BN, BM]
    if HAS_DROPOUT:
        z_t = dropout_keep(seed, i_b, i_h, o_i, start_n, dropout_threshold, BLOCK_N, True).to(p_t.dtype)
        if PART != 2:  # a product, not tl.where, as in attn_fwd_inner
            dv = tl.dot((p_t * z_t).to(DOT_DTYPE), do.to(DOT_DTYPE), dv, input_precision=PRECISION,
                        out_dtype=dv.dtype)
        if PART != 1:
            dp_t = dp_t * z_t
    elif PART != 2:
        dv = tl.dot(p_t.to(DOT_DTYPE), do.to(DOT_DTYPE), dv, input_precision=PRECISION,
                    out_dtype=dv.dtype)
    if PART != 1:
        ds_t = p_t * (dp_t - delta[None, :])
        if SOFTCAP:  # the cap's derivative (Note [soft-capping])
            ds_t = ds_t * (1.0 - qk_t * qk_t)
        dk = dot_into_heads(ds_t.to(DOT_DTYPE), q, dk, PAD_D, DOT_DTYPE, PRECISION)
    return dk, dv


@triton.jit
def attn_bwd_dkdv_inner(dk, dv, k, v, p_q, p_do, LSE, DELTA, MASK, mask_off, seed, i_b, i_h, start_n, m_d, m_dv,
                        lo, hi, stride_qm, stride_dom, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2,
                        dropout_threshold, dropout_scale,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PAD_D: tl.constexpr, PAD_DV: tl.constexpr,
                        MASK_KIND: tl.constexpr,
                        IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr, MASKED: tl.constexpr,
                        DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, USE_TMA: tl.constexpr, softcap_scale,
                        SOFTCAP: tl.constexpr, PART: tl.constexpr = 0, WHOLE_KEYS: tl.constexpr = False,
                        ALL_FULL: tl.constexpr = False, gap_lo=0, gap_hi=0, GAP: tl.constexpr = False,
                        ROW_OFFSETS: tl.constexpr = False, MASK_STAGES: tl.constexpr = 0):
    """Accumulate dK, dV [BN, BD] of the key tile o_j over query tiles [lo, hi) of one query head (ALL_FULL: the
    mask allows every entry of these tiles and is not read, Note [mask ranges]; GAP: leaving out the tiles of
    [gap_lo, gap_hi), lo <= gap_lo <= gap_hi <= hi).

    Tiles are transposed (keys are rows): sᵀ = K Qᵀ, so Pᵀ feeds the dV product from registers.
        dV += (P∘Z)ᵀ dO,   dPᵀ = Z∘(V dOᵀ),   dSᵀ = Pᵀ∘(dPᵀ - Δ),   dK += dSᵀ Q   (Z = keep / (1-p))
    With dropout Z is applied as keep and Δ divided by 1 / (1-p): dK and dV miss that factor, and dK the factor
    scale, both applied once by the caller.  Ragged query rows load LSE = +inf, so their P is 0.
    PART (Note [split dK/dV]): 0 both, 1 dV only (no dPᵀ, Δ or dK), 2 dK only (no dV product); the other
    accumulator is returned as it came.  WHOLE_KEYS: every key of the tile is below SEQ_K (EVEN), so the mask tile
    loads without a per-key check (load_mask_tile's CHECK_KEYS).  ROW_OFFSETS: p_q / p_do are tile_source's
    (base, offsets) pairs (Note [row offsets]).  MASK_STAGES > 0: the pipeline stages of a loop that reads mask tiles
    (Note [mask loop stages]).
    """
    c = score_scale(qk_scale2, MASK_KIND, ALL_FULL)
    o_ib = tl.arange(0, BLOCK_M)
    o_j = start_n + tl.arange(0, BLOCK_N)
    if GAP:
        hi = hi - (gap_hi - gap_lo)
    if ALL_FULL:  # Note [full tiles in reverse]: lo and hi are multiples of BLOCK_M here
        for t in range(0, (hi - lo) // BLOCK_M):
            start_m = hi - (t + 1) * BLOCK_M
            dk, dv = _dkdv_tile(
                dk, dv, k, v, p_q, p_do, LSE, DELTA, MASK, mask_off, seed, i_b, i_h, start_n, start_m, o_ib, o_j, c,
                m_d, m_dv, stride_qm, stride_dom, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
                dropout_scale, BLOCK_M, BLOCK_N, PAD_D, PAD_DV, MASK_KIND, IS_CAUSAL, HAS_DROPOUT, MASKED,
                DOT_DTYPE, PRECISION, USE_TMA, softcap_scale, SOFTCAP, PART, WHOLE_KEYS, ALL_FULL, ROW_OFFSETS)
    else:
        STAGES: tl.constexpr = MASK_STAGES if MASK_STAGES and MASK_KIND != 0 else None
        for start_m in tl.range(lo, hi, BLOCK_M, num_stages=STAGES):
            if GAP:
                start_m = tl.where(start_m >= gap_lo, start_m + (gap_hi - gap_lo), start_m)
            dk, dv = _dkdv_tile(
                dk, dv, k, v, p_q, p_do, LSE, DELTA, MASK, mask_off, seed, i_b, i_h, start_n, start_m, o_ib, o_j, c,
                m_d, m_dv, stride_qm, stride_dom, stride_mm, stride_mn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
                dropout_scale, BLOCK_M, BLOCK_N, PAD_D, PAD_DV, MASK_KIND, IS_CAUSAL, HAS_DROPOUT, MASKED,
                DOT_DTYPE, PRECISION, USE_TMA, softcap_scale, SOFTCAP, PART, WHOLE_KEYS, ALL_FULL, ROW_OFFSETS)
    return dk, dv


@triton.jit
def attn_bwd_dq_tiles(dq, q, do, anchor, offset, delta, p_k, p_v, p_ds, MASK, mask_off, seed, i_b, i_h, o_i, m_d,
                      m_dv, lo, hi, stride_kn, stride_vn, stride_mm, stride_mn, stride_dsn, SEQ_Q, SEQ_K, qk_scale2,
                      dropout_threshold, dropout_scale,
                      BLOCK_N: tl.constexpr, PAD_D: tl.constexpr, PAD_DV: tl.constexpr, MASK_KIND: tl.constexpr,
                      IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr, MASKED: tl.constexpr, STORE_DS: tl.constexpr,
                      DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, USE_TMA: tl.constexpr, softcap_scale,
                      SOFTCAP: tl.constexpr, ALL_FULL: tl.constexpr = False, gap_lo=0, gap_hi=0,
                      GAP: tl.constexpr = False, MASK_STAGES: tl.constexpr = 0):
    """Accumulate dQ [BM, BD] (without the factor scale) over key tiles [lo, hi) (ALL_FULL: the mask allows every
    entry of these tiles and is not read, Note [mask ranges]; GAP: leaving out the tiles of [gap_lo, gap_hi),
    lo <= gap_lo <= gap_hi <= hi):
        dP = Z∘(dO Vᵀ),  dS = P∘(dP - Δ),  dQ += dS K.
    With dropout Z is applied as keep and `delta` arrives divided by 1 / (1-p): dQ misses that factor (and scale),
    applied by the caller.  STORE_DS writes dS (the factor included; the store rounds it to p_ds's dtype) through
    p_ds for the attn_mask gradient.
    Ragged keys are masked in MASKED tiles.  MASK_STAGES: as attn_bwd_dkdv_inner's.
    """
    c = score_scale(qk_scale2, MASK_KIND, ALL_FULL)
    o_jb = tl.arange(0, BLOCK_N)
    STAGES: tl.constexpr = MASK_STAGES if MASK_STAGES and MASK_KIND != 0 and not ALL_FULL else None
    if GAP:
        hi = hi - (gap_hi - gap_lo)
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=STAGES):
        if GAP:
            start_n = tl.where(start_n >= gap_lo, start_n + (gap_hi - gap_lo), start_n)
        start_n = tl.multiple_of(start_n, BLOCK_N)
        o_j = start_n + o_jb
        m_j = o_j < SEQ_K
        k = load_stream_tile(p_k, start_n, stride_kn, m_j, m_d, MASKED, PAD_D, USE_TMA)  # [BN, BD]
        v = load_stream_tile(p_v, start_n, stride_vn, m_j, m_dv, MASKED, PAD_DV, USE_TMA)  # [BN, BDV]
        qk = dot_heads(q, k, PAD_D, DOT_DTYPE, PRECISION, first_head(dq, PAD_D).dtype)  # [BM, BN]
        if SOFTCAP:  # Note [soft-capping]
            qk = softcap_tanh(qk, softcap_scale, SOFTCAP)
        if ALL_FULL:
            b_mask = 0.0
        else:
            b_mask = load_mask_tile(MASK, mask_off, o_i=o_i[:, None], o_j=o_j[None, :], stride_mm=stride_mm,
                                    stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, MASK_KIND=MASK_KIND,
                                    CHECK_KEYS=MASKED)  # unmasked steps visit whole key tiles
        s = attn_scores(qk, o_i=o_i[:, None], o_j=o_j[None, :], b_mask=b_mask, qk_scale2=qk_scale2, SEQ_K=SEQ_K,
                        MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, MASKED=MASKED, ALL_FULL=ALL_FULL)
        p = probs_from_lse(s, c, anchor[:, None], offset[:, None], MASK_KIND, ALL_FULL)
        dp = tl.dot(do, tl.trans(v.to(DOT_DTYPE)), input_precision=PRECISION, out_dtype=qk.dtype)  # [BM, BN]
        if HAS_DROPOUT:
            keep = dropout_keep(seed, i_b, i_h, o_i, start_n, dropout_threshold, BLOCK_N, False)
            dp = tl.where(keep, dp, 0.0)
        ds = p * (dp - delta[:, None])
        if STORE_DS:
            tl.store(p_ds + start_n * stride_dsn, ds * dropout_scale, mask=(o_i < SEQ_Q)[:, None] & m_j[None, :])
        if SOFTCAP:  # the cap's derivative, after the mask's gradient (Note [soft-capping])
            ds = ds * (1.0 - qk * qk)
        dq = dot_into_heads(ds.to(DOT_DTYPE), k, dq, PAD_D, DOT_DTYPE, PRECISION)
    return dq


@triton.jit
def attn_bwd_dq_inner(dq, q, do, anchor, offset, delta, p_k, p_v, p_ds, MASK, mask_off, seed, i_b, i_h, o_i, m_d,
                      m_dv, lo, hi, stride_kn, stride_vn, stride_mm, stride_mn, stride_dsn, SEQ_Q, SEQ_K, qk_scale2,
                      dropout_threshold, dropout_scale,
                      BLOCK_N: tl.constexpr, PAD_D: tl.constexpr, PAD_DV: tl.constexpr, MASK_KIND: tl.constexpr,
                      IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr, MASKED: tl.constexpr, STORE_DS: tl.constexpr,
                      DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, USE_TMA: tl.constexpr, softcap_scale,
                      SOFTCAP: tl.constexpr, f_lo=0, f_hi=0, SKIP_FULL: tl.constexpr = False,
                      MASK_STAGES: tl.constexpr = 0):
    """attn_bwd_dq_tiles over key tiles [lo, hi); SKIP_FULL: in two loops, first the tiles of [lo, f_lo) and
    [f_hi, hi) with the mask (one loop stepping across the gap), then those of [f_lo, f_hi) without it (lo <= f_lo <=
    f_hi <= hi: clip_range); partial tiles first, as in Note [masked tiles first] (Note [mask ranges]).  MASK_STAGES:
    attn_bwd_dq_tiles'."""
    if SKIP_FULL:
        dq = attn_bwd_dq_tiles(
            dq, q, do, anchor, offset, delta, p_k, p_v, p_ds, MASK, mask_off, seed, i_b, i_h, o_i, m_d, m_dv, lo, hi,
            stride_kn, stride_vn, stride_mm, stride_mn, stride_dsn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
            dropout_scale, BLOCK_N, PAD_D, PAD_DV, MASK_KIND, IS_CAUSAL, HAS_DROPOUT, MASKED, STORE_DS, DOT_DTYPE,
            PRECISION, USE_TMA, softcap_scale, SOFTCAP, gap_lo=f_lo, gap_hi=f_hi, GAP=True, MASK_STAGES=MASK_STAGES)
        lo = f_lo
        hi = f_hi
    return attn_bwd_dq_tiles(
        dq, q, do, anchor, offset, delta, p_k, p_v, p_ds, MASK, mask_off, seed, i_b, i_h, o_i, m_d, m_dv, lo, hi,
        stride_kn, stride_vn, stride_mm, stride_mn, stride_dsn, SEQ_Q, SEQ_K, qk_scale2, dropout_threshold,
        dropout_scale, BLOCK_N, PAD_D, PAD_DV, MASK_KIND, IS_CAUSAL, HAS_DROPOUT, MASKED, STORE_DS, DOT_DTYPE,
        PRECISION, USE_TMA, softcap_scale, SOFTCAP, ALL_FULL=SKIP_FULL, MASK_STAGES=MASK_STAGES)


# ---------------------------------------------------------------- whole programs (eager kernels and templates)
@triton.jit
def attn_fwd_rows(Q, K, V, MASK, SEED, i_b, i_h, i_hk, start_m,
                  stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
                  stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
                  SEQ_Q, SEQ_K, qk_scale2, dropout_threshold, dropout_scale, softcap_scale,
                  HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
                  DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, ACC_DTYPE: tl.constexpr, SOFTCAP: tl.constexpr,
                  USE_TMA: tl.constexpr = False, EVEN: tl.constexpr = False, HEAD_DIM_V: tl.constexpr = 0,
                  BLOCK_DV: tl.constexpr = 0, MASK_RANGES: tl.constexpr = False, ROWS=None, stride_rb=0,
                  stride_rh=0, BLOCK_D2: tl.constexpr = 0, SEED_ARG: tl.constexpr = False, SEED_VALUE=0,
                  MASK_STAGES: tl.constexpr = 0):
    """Forward of query rows [start_m, start_m + BLOCK_M) of (b, h) (kv head i_hk): returns O [BM, BDV] (already
    divided by l and scaled for dropout) and the packed LSE [BM].  Key tiles left of the causal band run unmasked,
    the band and the ragged end masked; tiles right of the band are never visited.  EVEN: SEQ_K % BLOCK_N == 0
    (Note [even lengths]).  MASK_RANGES: ROWS is the mask's row summary (Note [mask ranges]), [.., .., n, 4] int32
    with strides (stride_rb, stride_rh, 4, 1).  BLOCK_D2: Note [split head dim].  SEED_ARG: the dropout seed is
    SEED_VALUE, not read from SEED (Note [host dropout seed] in kernels/attention.py).  MASK_STAGES: Note [mask loop
    stages]."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0, "the causal band must start on a key-tile boundary")
    DV: tl.constexpr = HEAD_DIM_V if HEAD_DIM_V else HEAD_DIM  # Note [value head dim]
    BDV: tl.constexpr = BLOCK_DV if BLOCK_DV else BLOCK_D
    PAD_D: tl.constexpr = head_pad(HEAD_DIM, BLOCK_D, BLOCK_D2)
    PAD_DV: tl.constexpr = BDV != DV
    o_i, o_jb = start_m + tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N)
    o_d, m_d = head_cols(HEAD_DIM, BLOCK_D, BLOCK_D2)
    o_dv = tl.arange(0, BDV)
    m_dv = o_dv < DV
    p_q = head_ptrs(Q, i_b.to(tl.int64) * stride_qb + i_h.to(tl.int64) * stride_qh, o_i, o_d, stride_qm, stride_qd,
                    PAD_D)
    p_k = tile_source(K, i_b.to(tl.int64) * stride_kb + i_hk.to(tl.int64) * stride_kh, o_rows=o_jb, o_d=o_d,
                      stride_row=stride_kn, stride_d=stride_kd, n_rows=SEQ_K, HEAD_DIM=HEAD_DIM, BLOCK_R=BLOCK_N,
                      BLOCK_D=BLOCK_D, USE_TMA=USE_TMA, PAD_D=PAD_D)
    p_v = tile_source(V, i_b.to(tl.int64) * stride_vb + i_hk.to(tl.int64) * stride_vh, o_rows=o_jb, o_d=o_dv,
                      stride_row=stride_vn, stride_d=stride_vd, n_rows=SEQ_K, HEAD_DIM=DV, BLOCK_R=BLOCK_N, BLOCK_D=BDV,
                      USE_TMA=USE_TMA)
    mask_off = i_b.to(tl.int64) * stride_mb + i_h.to(tl.int64) * stride_mh
    if not HAS_DROPOUT:
        seed = 0
    elif SEED_ARG:
        seed = SEED_VALUE
    else:
        seed = tl.load(SEED)
    b_q = load_head(p_q, o_i < SEQ_Q, m_d, True, PAD_D, DOT_DTYPE)  # [BM, BD]
    acc = tl.zeros([BLOCK_M, BDV], dtype=ACC_DTYPE)
    b_m = tl.full([BLOCK_M], float("-inf"), dtype=ACC_DTYPE)
    b_l = tl.zeros([BLOCK_M], dtype=ACC_DTYPE)
    n_full = SEQ_K if EVEN else SEQ_K // BLOCK_N * BLOCK_N
    if IS_CAUSAL:
        full_end = tl.minimum(start_m, n_full)
        hi = tl.minimum(start_m + BLOCK_M, SEQ_K)
    else:
        full_end = n_full
        hi = SEQ_K
    lo = 0
    band_lo = full_end
    f_lo = 0
    f_hi = 0
    RANGES: tl.constexpr = MASK_RANGES and MASK_KIND != 0
    if RANGES:  # Note [mask ranges]: tiles without a real entry are not visited, tiles without a masked one not read
        lo_r, f_lo, f_hi, hi_r = mask_tile_range(ROWS, i_b, i_h, stride_rb, stride_rh, start=start_m, length=SEQ_Q,
                                                 BLOCK=BLOCK_M, TILE=BLOCK_N, ENTRY=MASK_ROWS)
        lo, full_end, f_lo, f_hi = clip_range(lo, full_end, lo_r, hi_r, f_lo, f_hi)
        band_lo, hi, _, _ = clip_range(band_lo, hi, lo_r, hi_r, 0, 0)
    acc, b_m, b_l = attn_fwd_inner(
        acc, b_m, b_l, b_q, p_k, p_v, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b, i_h=i_h, o_i=o_i, m_d=m_d,
        m_dv=m_dv, lo=lo, hi=full_end, stride_kn=stride_kn, stride_vn=stride_vn, stride_mm=stride_mm,
        stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=dropout_threshold,
        BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=HAS_DROPOUT,
        MASKED=False, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA, softcap_scale=softcap_scale,
        SOFTCAP=SOFTCAP, f_lo=f_lo, f_hi=f_hi, SKIP_FULL=RANGES, MASK_STAGES=MASK_STAGES)
    if IS_CAUSAL or not EVEN:  # the causal band, the ragged end
        acc, b_m, b_l = attn_fwd_inner(
            acc, b_m, b_l, b_q, p_k, p_v, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b, i_h=i_h, o_i=o_i, m_d=m_d,
            m_dv=m_dv, lo=band_lo, hi=hi, stride_kn=stride_kn, stride_vn=stride_vn, stride_mm=stride_mm,
            stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=dropout_threshold,
            BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
            HAS_DROPOUT=HAS_DROPOUT, MASKED=True, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
            softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, MASK_STAGES=MASK_STAGES)
    # a row with no allowed key has l = 0 and acc = 0: output 0, lse = -inf
    b_o = acc * (dropout_scale / tl.where(b_l == 0.0, 1.0, b_l))[:, None]
    return b_o, lse_pack(b_m, b_l)


@triton.jit
def bwd_program(lin, n_programs, n_kv_blocks, n_p, KV_FIRST: tl.constexpr):
    """(slice b * Hkv + kv head, pid) of backward program `lin` of a launch of n_programs, n_p per slice: pid <
    n_kv_blocks is the dK/dV program of that key block, the others dQ programs.  KV_FIRST: every slice's dK/dV
    programs, then every slice's dQ programs (slice-major within each kind): under GQA a dK/dV program sums GROUP
    query heads, GROUP times a dQ program's work, and interleaved per slice the last slice's long dK/dV programs
    would start near the end of the launch and run alone.  Otherwise one slice after the other."""
    if KV_FIRST:
        n_kv_all = n_programs // n_p * n_kv_blocks
        w = tl.maximum(lin - n_kv_all, 0)
        i_bhk = tl.where(lin < n_kv_all, lin // n_kv_blocks, w // (n_p - n_kv_blocks))
        pid = tl.where(lin < n_kv_all, lin % n_kv_blocks, n_kv_blocks + w % (n_p - n_kv_blocks))
    else:
        i_bhk = lin // n_p
        pid = lin % n_p
    return i_bhk, pid


@triton.jit
def dkdv_head_ptrs(Q, DO, LSE, DELTA, i_b, i_h, o_ib, o_d, o_dv, stride_qb, stride_qh, stride_qm, stride_qd,
                   stride_dob, stride_doh, stride_dom, stride_dod, stride_mb, stride_mh, H_Q, SEQ_Q,
                   HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr, USE_TMA: tl.constexpr,
                   HEAD_DIM_V: tl.constexpr, BLOCK_DV: tl.constexpr, PAD_D: tl.constexpr = 0,
                   ROW_OFFSETS: tl.constexpr = False):
    """Query head i_h's Q / dO tile sources, LSE / DELTA rows and mask offset (attn_bwd_dkdv_cols)."""
    i_bh = i_b * H_Q + i_h
    p_q = tile_source(Q, i_b.to(tl.int64) * stride_qb + i_h.to(tl.int64) * stride_qh, o_rows=o_ib, o_d=o_d,
                      stride_row=stride_qm, stride_d=stride_qd, n_rows=SEQ_Q, HEAD_DIM=HEAD_DIM, BLOCK_R=BLOCK_M,
                      BLOCK_D=BLOCK_D, USE_TMA=USE_TMA, PAD_D=PAD_D, ROW_OFFSETS=ROW_OFFSETS)
    p_do = tile_source(DO, i_b.to(tl.int64) * stride_dob + i_h.to(tl.int64) * stride_doh, o_rows=o_ib, o_d=o_dv,
                       stride_row=stride_dom, stride_d=stride_dod, n_rows=SEQ_Q, HEAD_DIM=HEAD_DIM_V, BLOCK_R=BLOCK_M,
                       BLOCK_D=BLOCK_DV, USE_TMA=USE_TMA, ROW_OFFSETS=ROW_OFFSETS)
    p_lse, p_delta = LSE + i_bh.to(tl.int64) * SEQ_Q, DELTA + i_bh.to(tl.int64) * SEQ_Q
    mask_off = i_b.to(tl.int64) * stride_mb + i_h.to(tl.int64) * stride_mh
    return p_q, p_do, p_lse, p_delta, mask_off, i_h


@triton.jit
def attn_bwd_dkdv_cols(Q, K, V, MASK, SEED, DO, LSE, DELTA, i_b, i_hk, start_n,
                       stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
                       stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
                       stride_dob, stride_doh, stride_dom, stride_dod,
                       H_Q, GROUP, SEQ_Q, SEQ_K, qk_scale2, scale, dropout_threshold, dropout_scale, softcap_scale,
                       HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
                       DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr, ACC_DTYPE: tl.constexpr,
                       MASKED_FIRST: tl.constexpr, SOFTCAP: tl.constexpr, USE_TMA: tl.constexpr = False,
                       PART: tl.constexpr = 0, EVEN: tl.constexpr = False, HEAD_DIM_V: tl.constexpr = 0,
                       BLOCK_DV: tl.constexpr = 0, MASK_RANGES: tl.constexpr = False, COLS=None, stride_cb=0,
                       stride_ch=0, BLOCK_D2: tl.constexpr = 0, ROW_OFFSETS: tl.constexpr = False,
                       MASK_STAGES: tl.constexpr = 0):
    """dK [BN, BD], dV [BN, BDV] of keys [start_n, start_n + BLOCK_N) of (b, kv head), summed over the GROUP query heads that
    share it and over query tiles of BLOCK_M: one owner per dK/dV row, so no atomics and a fixed order.
    LSE / DELTA are contiguous [B, Hq, Sq] fp32.  MASKED_FIRST: Note [masked tiles first].  PART: 0 both, 1 dV
    only, 2 dK only (Note [split dK/dV]; the other is returned as zeros).  EVEN: SEQ_Q % BLOCK_M == 0, no ragged
    tail (Note [even lengths]).  MASK_RANGES: COLS is the mask's column summary (Note [mask ranges]), as
    attn_fwd_rows' ROWS.  BLOCK_D2: Note [split head dim] (dK is then a pair).  ROW_OFFSETS: Q and dO tiles
    addressed from integer offsets (Note [row offsets]).  MASK_STAGES: Note [mask loop stages]."""
    tl.static_assert(BLOCK_N % BLOCK_M == 0, "the causal band must end on a query-tile boundary")
    DV: tl.constexpr = HEAD_DIM_V if HEAD_DIM_V else HEAD_DIM  # Note [value head dim]
    BDV: tl.constexpr = BLOCK_DV if BLOCK_DV else BLOCK_D
    PAD_D: tl.constexpr = head_pad(HEAD_DIM, BLOCK_D, BLOCK_D2)
    PAD_DV: tl.constexpr = BDV != DV
    o_j, o_ib = start_n + tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_M)
    o_d, m_d = head_cols(HEAD_DIM, BLOCK_D, BLOCK_D2)
    o_dv = tl.arange(0, BDV)
    m_j, m_dv = o_j < SEQ_K, o_dv < DV
    p_k = head_ptrs(K, i_b.to(tl.int64) * stride_kb + i_hk.to(tl.int64) * stride_kh, o_j, o_d, stride_kn, stride_kd,
                    PAD_D)
    p_v = V + i_b.to(tl.int64) * stride_vb + i_hk.to(tl.int64) * stride_vh + o_j[:, None] * stride_vn + o_dv[None, :] * stride_vd
    b_k = load_head(p_k, m_j, m_d, True, PAD_D, DOT_DTYPE)  # [BN, BD]
    b_v = load_tile(p_v, m_j, m_dv, True, PAD_DV).to(DOT_DTYPE)  # [BN, BDV]
    seed = tl.load(SEED) if HAS_DROPOUT else 0
    dk = head_zeros(BLOCK_N, BLOCK_D, BLOCK_D2, ACC_DTYPE)
    dv = tl.zeros([BLOCK_N, BDV], dtype=ACC_DTYPE)
    # query ranges: causal band [start_n, start_n + BN) masked, whole tiles unmasked, ragged tail masked
    m_full = SEQ_Q if EVEN else SEQ_Q // BLOCK_M * BLOCK_M
    if IS_CAUSAL:
        full_lo = start_n + BLOCK_N
    else:
        full_lo = 0
    full_hi = tl.maximum(full_lo, m_full)
    TAIL_FIRST: tl.constexpr = IS_CAUSAL and MASKED_FIRST  # Note [masked tiles first]
    RANGES: tl.constexpr = MASK_RANGES and MASK_KIND != 0
    # Two head loops when the masked tiles go first (TAIL_FIRST) or a mask summary splits off the full tiles
    # (RANGES): every head's masked ranges (causal band, ragged tail, tiles that read the mask), then every head's
    # whole tiles (without the mask's tiles under RANGES).  In one head loop the second kind of loop makes ptxas
    # serialise every wgmma of the kernel or spill (32/8 heads, S2048: 1129 -> 953 us causal; Note [masked tiles
    # first]).  Otherwise, per head: causal band, whole tiles, ragged tail.
    TWO_LOOPS: tl.constexpr = TAIL_FIRST or RANGES
    for g in range(GROUP):
        p_q, p_do, p_lse, p_delta, mask_off, i_h = dkdv_head_ptrs(
            Q, DO, LSE, DELTA, i_b=i_b, i_h=i_hk * GROUP + g, o_ib=o_ib, o_d=o_d, o_dv=o_dv,
            stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
            stride_dob=stride_dob, stride_doh=stride_doh, stride_dom=stride_dom, stride_dod=stride_dod,
            stride_mb=stride_mb, stride_mh=stride_mh, H_Q=H_Q, SEQ_Q=SEQ_Q, HEAD_DIM=HEAD_DIM, BLOCK_M=BLOCK_M,
            BLOCK_D=BLOCK_D, USE_TMA=USE_TMA, HEAD_DIM_V=DV, BLOCK_DV=BDV, PAD_D=PAD_D, ROW_OFFSETS=ROW_OFFSETS)
        band_lo, band_hi, w_lo, w_hi, t_lo, t_hi = start_n, start_n + BLOCK_N, full_lo, full_hi, full_hi, SEQ_Q
        f_lo = 0
        f_hi = 0
        if RANGES:  # Note [mask ranges]: query tiles that add nothing are not visited, full ones not read
            q_lo, f_lo, f_hi, q_hi = mask_tile_range(COLS, i_b, i_h, stride_cb, stride_ch, start=start_n,
                                                     length=SEQ_K, BLOCK=BLOCK_N, TILE=BLOCK_M, ENTRY=MASK_TILE)
            band_lo, band_hi, _, _ = clip_range(band_lo, band_hi, q_lo, q_hi, 0, 0)
            w_lo, w_hi, f_lo, f_hi = clip_range(w_lo, w_hi, q_lo, q_hi, f_lo, f_hi)
            t_lo, t_hi, _, _ = clip_range(t_lo, t_hi, q_lo, q_hi, 0, 0)
        if IS_CAUSAL:  # the band: a fixed BLOCK_N // BLOCK_M query tiles (Note [fixed band])
            dk, dv = attn_bwd_dkdv_inner(
                dk, dv, b_k, b_v, p_q, p_do, LSE=p_lse, DELTA=p_delta, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b,
                i_h=i_h, start_n=start_n, m_d=m_d, m_dv=m_dv, lo=band_lo, hi=band_hi, stride_qm=stride_qm,
                stride_dom=stride_dom, stride_mm=stride_mm, stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K,
                qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale, BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
                HAS_DROPOUT=HAS_DROPOUT, MASKED=True, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
                softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, PART=PART, WHOLE_KEYS=EVEN, ROW_OFFSETS=ROW_OFFSETS,
                MASK_STAGES=MASK_STAGES)
        if TAIL_FIRST and not EVEN:  # the ragged tail
            dk, dv = attn_bwd_dkdv_inner(
                dk, dv, b_k, b_v, p_q, p_do, LSE=p_lse, DELTA=p_delta, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b,
                i_h=i_h, start_n=start_n, m_d=m_d, m_dv=m_dv, lo=t_lo, hi=t_hi, stride_qm=stride_qm,
                stride_dom=stride_dom, stride_mm=stride_mm, stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K,
                qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale, BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
                HAS_DROPOUT=HAS_DROPOUT, MASKED=True, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
                softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, PART=PART, WHOLE_KEYS=EVEN, ROW_OFFSETS=ROW_OFFSETS,
                MASK_STAGES=MASK_STAGES)
        if RANGES or not TAIL_FIRST:  # whole tiles (RANGES: those that read the mask, without [f_lo, f_hi))
            dk, dv = attn_bwd_dkdv_inner(
                dk, dv, b_k, b_v, p_q, p_do, LSE=p_lse, DELTA=p_delta, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b,
                i_h=i_h, start_n=start_n, m_d=m_d, m_dv=m_dv, lo=w_lo, hi=w_hi, stride_qm=stride_qm,
                stride_dom=stride_dom, stride_mm=stride_mm, stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K,
                qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale, BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
                HAS_DROPOUT=HAS_DROPOUT, MASKED=False, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
                softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, PART=PART, WHOLE_KEYS=EVEN, gap_lo=f_lo, gap_hi=f_hi,
                GAP=RANGES, ROW_OFFSETS=ROW_OFFSETS, MASK_STAGES=MASK_STAGES)
        if not TAIL_FIRST and not EVEN:  # the ragged tail
            dk, dv = attn_bwd_dkdv_inner(
                dk, dv, b_k, b_v, p_q, p_do, LSE=p_lse, DELTA=p_delta, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b,
                i_h=i_h, start_n=start_n, m_d=m_d, m_dv=m_dv, lo=t_lo, hi=t_hi, stride_qm=stride_qm,
                stride_dom=stride_dom, stride_mm=stride_mm, stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K,
                qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale, BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
                HAS_DROPOUT=HAS_DROPOUT, MASKED=True, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
                softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, PART=PART, WHOLE_KEYS=EVEN, ROW_OFFSETS=ROW_OFFSETS,
                MASK_STAGES=MASK_STAGES)
    if TWO_LOOPS:
        for g in range(GROUP):
            p_q, p_do, p_lse, p_delta, mask_off, i_h = dkdv_head_ptrs(
                Q, DO, LSE, DELTA, i_b=i_b, i_h=i_hk * GROUP + g, o_ib=o_ib, o_d=o_d, o_dv=o_dv,
                stride_qb=stride_qb, stride_qh=stride_qh, stride_qm=stride_qm, stride_qd=stride_qd,
                stride_dob=stride_dob, stride_doh=stride_doh, stride_dom=stride_dom, stride_dod=stride_dod,
                stride_mb=stride_mb, stride_mh=stride_mh, H_Q=H_Q, SEQ_Q=SEQ_Q, HEAD_DIM=HEAD_DIM, BLOCK_M=BLOCK_M,
                BLOCK_D=BLOCK_D, USE_TMA=USE_TMA, HEAD_DIM_V=DV, BLOCK_DV=BDV, PAD_D=PAD_D,
                ROW_OFFSETS=ROW_OFFSETS)
            w_lo, w_hi = full_lo, full_hi
            if RANGES:  # Note [mask ranges]: only the full tiles are left, and the mask is not read
                q_lo, f_lo, f_hi, q_hi = mask_tile_range(COLS, i_b, i_h, stride_cb, stride_ch, start=start_n,
                                                         length=SEQ_K, BLOCK=BLOCK_N, TILE=BLOCK_M, ENTRY=MASK_TILE)
                _, _, w_lo, w_hi = clip_range(w_lo, w_hi, q_lo, q_hi, f_lo, f_hi)
            dk, dv = attn_bwd_dkdv_inner(
                dk, dv, b_k, b_v, p_q, p_do, LSE=p_lse, DELTA=p_delta, MASK=MASK, mask_off=mask_off, seed=seed, i_b=i_b,
                i_h=i_h, start_n=start_n, m_d=m_d, m_dv=m_dv, lo=w_lo, hi=w_hi, stride_qm=stride_qm,
                stride_dom=stride_dom, stride_mm=stride_mm, stride_mn=stride_mn, SEQ_Q=SEQ_Q, SEQ_K=SEQ_K,
                qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale, BLOCK_M=BLOCK_M,
                BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
                HAS_DROPOUT=HAS_DROPOUT, MASKED=False, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
                softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, PART=PART, WHOLE_KEYS=EVEN, ALL_FULL=RANGES,
                ROW_OFFSETS=ROW_OFFSETS, MASK_STAGES=MASK_STAGES)
    return head_scale(dk, scale * dropout_scale, PAD_D), dv * dropout_scale


@triton.jit
def attn_bwd_dq_rows(Q, K, V, MASK, SEED, DO, LSE, DELTA, DS, i_b, i_h, i_hk, start_m,
                     stride_qb, stride_qh, stride_qm, stride_qd, stride_kb, stride_kh, stride_kn, stride_kd,
                     stride_vb, stride_vh, stride_vn, stride_vd, stride_mb, stride_mh, stride_mm, stride_mn,
                     stride_dob, stride_doh, stride_dom, stride_dod,
                     H_Q, SEQ_Q, SEQ_K, qk_scale2, scale, dropout_threshold, dropout_scale, softcap_scale,
                     HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr, HAS_DROPOUT: tl.constexpr,
                     STORE_DS: tl.constexpr, DOT_DTYPE: tl.constexpr, PRECISION: tl.constexpr,
                     ACC_DTYPE: tl.constexpr, MASKED_FIRST: tl.constexpr, SOFTCAP: tl.constexpr,
                     USE_TMA: tl.constexpr = False, EVEN: tl.constexpr = False, HEAD_DIM_V: tl.constexpr = 0,
                     BLOCK_DV: tl.constexpr = 0, MASK_RANGES: tl.constexpr = False, ROWS=None, stride_rb=0,
                     stride_rh=0, BLOCK_D2: tl.constexpr = 0, MASK_STAGES: tl.constexpr = 0):
    """dQ [BM, BD] of query rows [start_m, start_m + BLOCK_M) of (b, h), looping over key tiles like the forward.
    EVEN: SEQ_K % BLOCK_N == 0 (Note [even lengths]).  ROWS: as attn_fwd_rows'.
    STORE_DS also writes dS into DS, a contiguous [B, Hq, Sq, Sk] buffer (for the attn_mask gradient; fp32 in
    the eager op, the mask's dtype in the template).
    MASKED_FIRST: Note [masked tiles first].  BLOCK_D2: Note [split head dim] (dQ is then a pair).  MASK_STAGES: Note
    [mask loop stages]."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0, "the causal band must start on a key-tile boundary")
    DV: tl.constexpr = HEAD_DIM_V if HEAD_DIM_V else HEAD_DIM  # Note [value head dim]
    BDV: tl.constexpr = BLOCK_DV if BLOCK_DV else BLOCK_D
    PAD_D: tl.constexpr = head_pad(HEAD_DIM, BLOCK_D, BLOCK_D2)
    PAD_DV: tl.constexpr = BDV != DV
    i_bh = i_b * H_Q + i_h
    o_i, o_jb = start_m + tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N)
    o_d, m_d = head_cols(HEAD_DIM, BLOCK_D, BLOCK_D2)
    o_dv = tl.arange(0, BDV)
    m_i, m_dv = o_i < SEQ_Q, o_dv < DV
    p_q = head_ptrs(Q, i_b.to(tl.int64) * stride_qb + i_h.to(tl.int64) * stride_qh, o_i, o_d, stride_qm, stride_qd,
                    PAD_D)
    p_do = DO + i_b.to(tl.int64) * stride_dob + i_h.to(tl.int64) * stride_doh + o_i[:, None] * stride_dom + o_dv[None, :] * stride_dod
    p_k = tile_source(K, i_b.to(tl.int64) * stride_kb + i_hk.to(tl.int64) * stride_kh, o_rows=o_jb, o_d=o_d,
                      stride_row=stride_kn, stride_d=stride_kd, n_rows=SEQ_K, HEAD_DIM=HEAD_DIM, BLOCK_R=BLOCK_N,
                      BLOCK_D=BLOCK_D, USE_TMA=USE_TMA, PAD_D=PAD_D)
    p_v = tile_source(V, i_b.to(tl.int64) * stride_vb + i_hk.to(tl.int64) * stride_vh, o_rows=o_jb, o_d=o_dv,
                      stride_row=stride_vn, stride_d=stride_vd, n_rows=SEQ_K, HEAD_DIM=DV, BLOCK_R=BLOCK_N, BLOCK_D=BDV,
                      USE_TMA=USE_TMA)
    p_ds = DS + (i_bh.to(tl.int64) * SEQ_Q + o_i[:, None]) * SEQ_K + o_jb[None, :] if STORE_DS else DS
    mask_off = i_b.to(tl.int64) * stride_mb + i_h.to(tl.int64) * stride_mh
    seed = tl.load(SEED) if HAS_DROPOUT else 0
    b_q = load_head(p_q, m_i, m_d, True, PAD_D, DOT_DTYPE)
    b_do = load_tile(p_do, m_i, m_dv, True, PAD_DV).to(DOT_DTYPE)
    anchor, offset = lse_unpack(tl.load(LSE + i_bh.to(tl.int64) * SEQ_Q + o_i, mask=m_i, other=float("inf")))
    delta = tl.load(DELTA + i_bh.to(tl.int64) * SEQ_Q + o_i, mask=m_i, other=0.0)
    if HAS_DROPOUT:  # dS = s P∘(keep∘dP - Δ / s), s = 1 / (1-p), applied to dQ at the end
        delta = delta * (1.0 / dropout_scale)
    dq = head_zeros(BLOCK_M, BLOCK_D, BLOCK_D2, ACC_DTYPE)
    n_full = SEQ_K if EVEN else SEQ_K // BLOCK_N * BLOCK_N
    if IS_CAUSAL:
        full_end = tl.minimum(start_m, n_full)
        hi = tl.minimum(start_m + BLOCK_M, SEQ_K)
    else:
        full_end = n_full
        hi = SEQ_K
    lo = 0
    band_lo = full_end
    f_lo = 0
    f_hi = 0
    RANGES: tl.constexpr = MASK_RANGES and MASK_KIND != 0
    if RANGES:  # Note [mask ranges]
        lo_r, f_lo, f_hi, hi_r = mask_tile_range(ROWS, i_b, i_h, stride_rb, stride_rh, start=start_m, length=SEQ_Q,
                                                 BLOCK=BLOCK_M, TILE=BLOCK_N, ENTRY=MASK_ROWS)
        lo, full_end, f_lo, f_hi = clip_range(lo, full_end, lo_r, hi_r, f_lo, f_hi)
        band_lo, hi, _, _ = clip_range(band_lo, hi, lo_r, hi_r, 0, 0)
    BAND_FIRST: tl.constexpr = IS_CAUSAL and MASKED_FIRST  # Note [masked tiles first]
    if BAND_FIRST:
        lo_1, hi_1, lo_2, hi_2 = band_lo, hi, lo, full_end
    else:
        lo_1, hi_1, lo_2, hi_2 = lo, full_end, band_lo, hi
    dq = attn_bwd_dq_inner(
        dq, b_q, b_do, anchor=anchor, offset=offset, delta=delta, p_k=p_k, p_v=p_v, p_ds=p_ds, MASK=MASK,
        mask_off=mask_off, seed=seed, i_b=i_b, i_h=i_h, o_i=o_i, m_d=m_d, m_dv=m_dv, lo=lo_1, hi=hi_1,
        stride_kn=stride_kn, stride_vn=stride_vn, stride_mm=stride_mm, stride_mn=stride_mn, stride_dsn=1, SEQ_Q=SEQ_Q,
        SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=dropout_threshold, dropout_scale=dropout_scale,
        BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL, HAS_DROPOUT=HAS_DROPOUT,
        MASKED=BAND_FIRST, STORE_DS=STORE_DS, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION, USE_TMA=USE_TMA,
        softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, f_lo=f_lo, f_hi=f_hi, SKIP_FULL=RANGES and not BAND_FIRST,
        MASK_STAGES=MASK_STAGES)
    if IS_CAUSAL or not EVEN:  # (without BAND_FIRST) the causal band or the ragged end
        dq = attn_bwd_dq_inner(
            dq, b_q, b_do, anchor=anchor, offset=offset, delta=delta, p_k=p_k, p_v=p_v, p_ds=p_ds, MASK=MASK,
            mask_off=mask_off, seed=seed, i_b=i_b, i_h=i_h, o_i=o_i, m_d=m_d, m_dv=m_dv, lo=lo_2, hi=hi_2,
            stride_kn=stride_kn, stride_vn=stride_vn, stride_mm=stride_mm, stride_mn=stride_mn, stride_dsn=1,
            SEQ_Q=SEQ_Q, SEQ_K=SEQ_K, qk_scale2=qk_scale2, dropout_threshold=dropout_threshold,
            dropout_scale=dropout_scale,
            BLOCK_N=BLOCK_N, PAD_D=PAD_D, PAD_DV=PAD_DV, MASK_KIND=MASK_KIND, IS_CAUSAL=IS_CAUSAL,
            HAS_DROPOUT=HAS_DROPOUT, MASKED=not BAND_FIRST, STORE_DS=STORE_DS, DOT_DTYPE=DOT_DTYPE, PRECISION=PRECISION,
            USE_TMA=USE_TMA, softcap_scale=softcap_scale, SOFTCAP=SOFTCAP, f_lo=f_lo, f_hi=f_hi,
            SKIP_FULL=RANGES and BAND_FIRST, MASK_STAGES=MASK_STAGES)
    return head_scale(dq, scale * dropout_scale, PAD_D)
