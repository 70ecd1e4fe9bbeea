"""User-facing switches of inductor_conv (a module, like ``torch._inductor.config``).

Read at graph-rewrite and launch time; change them before compiling. ``enable(device_types=...)`` sets
``device_types``.
"""
# Devices on which the pattern passes rewrite graphs. ``enable()`` sets it; ("cpu",) lets tests rewrite on CPU.
device_types: tuple[str, ...] = ("cuda",)

# Which capabilities the pattern passes rewrite.
causal_conv1d: bool = True
attention: bool = True

# The conv backward reduces dw/dβ in a fixed order (partial rows, then a fixed-order sum), so two runs on the same
# inputs are bit-identical. False allows atomics where a kernel offers them.  (Our attention templates are always
# deterministic: one owner per dQ/dK/dV row, GQA heads summed in a fixed order.  cuDNN's attention backward, chosen by
# ``attention_cudnn`` below, is not -- it follows torch.use_deterministic_algorithms, as SDPA does.)
deterministic: bool = True

# Attention without mask or dropout (causal only with Sq == Sk), any GQA ratio, fp16/bf16, head dim <= 256 (multiple
# of 8), on a GPU where SDPA itself would run cuDNN's fused attention: the lowerings call cuDNN's forward and backward
# (the kernels Inductor's own SDPA rewrite reaches for; faster than our templates on Hopper, docs/benchmarks.md).
# Refused under torch.use_deterministic_algorithms(True) (as SDPA does; in warn-only mode too): then our
# deterministic templates run.
# False: our templates everywhere.
attention_cudnn: bool = True

# The eager op takes that route only for calls of at least this much work (heuristics/attention.py's
# eager_cudnn_work: B · Hq · Sq · Sk · (D / 8)², halved when causal -- the FLOPs weighted by D / 64, as cuDNN's
# kernels gain on ours with the head dim): below it our kernels' calls from C++ (Note [eager attention from C++]) cost
# less host time than cuDNN's (its graph look-up, memsets and four launches a forward+backward) at a GPU time like
# cuDNN's, and a new shape costs no cuDNN graph build (~150 ms).  H100 2026-12-07, causal forward+backward, our
# kernels against the cuDNN route: B1 H8 S256 D64 (2^24) host 0.134 against 0.288 ms (`diagnostics/wall_gap.py`);
# wall / GPU / host ms (`benchmarks/overhead.py --impls ours-op,ours-op-kernels,sdpa --dropout 0 --rounds 5`) B8 H16
# S1024 D64 (2^32) 0.257 / 0.250 / 0.151 against 0.265 / 0.259 / 0.221, B4 H16 S2048 D128 (2^35) 0.752 / 0.760 /
# 0.178 against 0.635 / 0.622 / 0.237.  0: the route at every size (the compiled graphs' rule).
attention_cudnn_eager_min_work: int = 1 << 33

# A rewritten conv whose output y (or a view of it) leaves the compiled graph returns y in the layout eager's conv1d
# gives it (contiguous), as Inductor keeps eager's output strides; inside a graph y is laid out like x (channel-last
# for the (B, L, C).transpose(1, 2) view).  Note [conv output layout] in patterns/conv_output_layout.py.  False: y
# leaves in x's layout too -- a channel-last forward ~10% faster at such a boundary, but views that need eager's
# strides fail there, and in training AOTAutograd copies the gradient into eager's layout first (0.84 ms against
# 0.31 for forward+backward at B8 C5120 L2048 on the H200).
conv_eager_output_layout: bool = True

# Search patterns ship traced with the package (patterns/serialized/, used whatever this says).  For a torch release
# without them, the patterns traced by the first process are kept on disk and rebuilt by later ones instead of traced
# again (40-80 s a capability on a 2-core CPU): Note [pattern cache] in patterns/pattern_cache.py.  The directory defaults to
# inductor_conv_patterns/ in Inductor's cache directory; Inductor's force_disable_caches turns this off too.
pattern_cache: bool = True
pattern_cache_dir: str | None = None

# Soft-capped attention with fp16 / bf16 inputs on a GPU computes tanh with the hardware's tanh.approx.f32 (one
# instruction, relative error <= 5e-4, as FlashAttention does; a 16-bit score's own rounding is 2e-3) instead of the
# exact exp2-and-divide form (Note [soft-capping] in kernels/attn_math.py): H200, B2 H16/8 S4096 D256 causal, forward
# 1.50 -> 1.38 ms, backward 5.02 -> 4.56 ms.  fp32 inputs, and False, take the exact form.
attention_fast_tanh: bool = True

# Attention with a mask tensor: a summary of the mask, made once per call, tells each program which tiles can
# contribute and which allow every entry; it skips the others and does not read the mask of those (Note [mask
# ranges] in kernels/attn_math.py).  Exact either way (the sums run in another order).  H200, B4 H16/8 S2048 D128
# bf16, a causal mask as a bool tensor, eager forward+backward 2.01 -> 0.91 ms (is_causal: 0.79); HF Llama with its
# mask as a layer input 1.21x -> 1.36x default Inductor (benchmarks/diagnostics/mask_ranges.py, benchmarks/models.py
# --variants inductor,plugin,plugin-noranges).  False reads and computes every tile.
attention_mask_ranges: bool = True
# A compiled graph launches the mask summary's kernels from its wrapper code (Note [summary kernels in the graph] in
# lowerings/attention.py); False calls the summary op as a fallback kernel (the same kernels behind a custom-op
# dispatch).
attention_summary_in_graph: bool = True
# The eager ops' backward (the conv op's; the attention op's unless its mask needs a gradient, its cuDNN route's too)
# as a C++ autograd node that launches the same Triton kernels with the same arguments without Python (Note [native
# backward] in inductor_conv/csrc/backward_node.cpp): a Python backward runs on autograd's device thread, where it
# costs several times its own time (docs/benchmarks.md, host time by phase).  H100, forward+backward wall ms, Python
# backward -> this node (SDPA): attention causal p 0.1 B1 H8 S256 D64 0.728 -> 0.663 (0.461), B8 H16 S1024 D64
# 0.408 -> 0.315 (0.582); conv + SiLU B1 C2048 L256 0.654 -> 0.340, B16 C1536 L1024 0.877 -> 0.171
# (benchmarks/overhead.py; with the host dropout seed too, a later call: 0.131 against SDPA's 0.134 at the tiny
# shape, docs/benchmarks.md).  The extension builds in the background on the first GPU call (a C++ compiler and ninja,
# a dependency, are needed; ~30-60 s of one core, once per torch version: torch's extension cache keeps it); until it
# is ready, or where it cannot be built, the Python backward runs.  The gradients are the Python backward's bits,
# except that a dO not in O's layout is copied into it first, where the Python backward reads it as it is (kernels
# specialised for other strides may round a sum differently).  The node plans its backward when the forward runs, so
# it reads ``deterministic`` then (the Python backward reads it when it runs).  The same extension runs the conv's
# forward launch (Note [native forward]) and decides and runs the attention's cuDNN calls (Note [cuDNN route from
# C++]), with the Python path's kernels and bits.  False: the Python forward and backward everywhere.
native_backward: bool = True

# Attention with a mask tensor whose rows are not a multiple of this many bytes apart (a bf16 mask over 197 or 249
# keys): the compiled templates read it from a copy with rows padded to it, or lay out a mask the graph computes that
# way at no cost; the eager op copies it into rows of a multiple of 16 elements (Note [mask row alignment] in
# heuristics/attention.py).  0 reads the mask as it is.
attention_mask_row_bytes: int = 16

# ---------------------------------------------------------------------------------------------------------------
# Experiment switches of the template lowerings: each default is the measured best (H200, torch 2.11, triton 3.6).
# benchmarks/diagnostics/attention_profile.py sets the attention ones (`group=`, `bwd_group=`, `masked_first=`,
# `kv_first=`, `pair=`, `tma=`).  They change the generated code, so the pass's uuid() hashes them with the rest.
# ---------------------------------------------------------------------------------------------------------------
# Causal attention forward (and a forward over a summarised mask tensor, Note [mask ranges]): (b, h) slices per
# longest-first launch group; None: by size (lowerings/attention.py _causal_group), an int forces it (0: no groups,
# each slice's row blocks in turn).
attention_causal_group: int | None = None
# The causal backward's group; None: 0 (ungrouped) with the masked tiles first, else by size.  Grouped, the dK/dV
# loop spills with the mapping's scalars: B2 H16 S8192 D128 p=0.1 backward 4074 us grouped, 3569 ungrouped.
attention_causal_bwd_group: int | None = None
# Note [masked tiles first] in kernels/attn_math.py: the causal backward (template and eager kernel) visits its masked
# tiles first.  D128 S8192 p=0.1 backward 4740 -> 3569 us, S2048 p=0 564 -> 448 us.
attention_masked_first: bool = True
# Under GQA the backward template launches every (b, kv head) slice's dK/dV programs before any dQ program (without
# GQA it changes nothing and stays off).  32/8 heads S2048 D128 backward: causal 953 -> 875 us, p=0.1 1085 -> 970.
attention_bwd_kv_first: bool = True
# Causal pairs in the forward template (two row blocks a program, AttnFwdTile.pair); None: as the tile says.
attention_causal_pair: bool | None = None
# Note [mask loop stages] in kernels/attn_math.py: the pipeline stages of the templates' loops that read mask tiles
# (0: the tile's num_stages); None: as the tile says (AttnFwdTile / AttnBwdTile.mask_stages).
attention_mask_stages: int | None = None
# Note [split head dim] in kernels/attn_math.py: the q/k head dims that are not a power of two and were measured
# faster so (heuristics/attention.py's SPLIT_HEAD_DIMS: MLA's 192 with v 128, 80, 96, 160 with v 128) run as two
# tiles (128 + 64, ...) instead of one padded to the next power of two, in the eager kernels and the templates.
attention_split_head_dim: bool = True
# Note [TMA loads] in kernels/attn_math.py: the templates stream tiles through TMA descriptors where inputs allow.
# Off: slower with triton 3.6, forward 3-13%, backward 2-8%.
attention_tma: bool = False
# Note [row offsets] in heuristics/attention.py: the backward template's dK/dV programs address their Q / dO tiles
# from integer offsets; None: with a summarised mask tensor only (measured), a bool forces it.
attention_row_offsets: bool | None = None
# Note [channels-last stops at our ops] in _compat.py: in a graph with a convolution, Inductor's channels-last layout
# propagation stops at our ops and their inputs, as at a bmm.  False lets it run through them (q, k, v, the bias and
# the output realised head-fastest).
channels_last_stops: bool = True
# Note [small table gradients] in patterns/table_grad.py: the gradient of a lookup into a small table (T5's
# relative-position bias, token types) summed per row instead of by one atomic add per element, in every graph
# compiled for config.device_types; which tables in inductor_conv/heuristics/table_grad.py.
small_table_grads: bool = True
# The conv backward template reads a contiguous dy beside a channel-last x in place (DY_T); False copies dy first.
# B8 C5120 L2048: 57 us less than copying dy into x's layout.
conv_bwd_dy_t: bool = True
