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

# A rewritten conv whose output y (or a view of it) leaves the compiled graph returns y in the layout eager's conv1d
# gives it (contiguous), as Inductor keeps eager's output strides; inside a graph y is laid out like x (channel-last
# for the (B, L, C).transpose(1, 2) view).  Note [conv output layout] in patterns/causal_conv1d_silu.py.  False: y
# leaves in x's layout too -- a channel-last forward ~10% faster at such a boundary, but views that need eager's
# strides fail there, and in training AOTAutograd copies the gradient into eager's layout first (0.84 ms against
# 0.31 for forward+backward at B8 C5120 L2048 on the H200).
conv_eager_output_layout: bool = True

# Search patterns ship traced with the package (patterns/serialized/, used whatever this says).  For a torch release
# without them, the patterns traced by the first process are kept on disk and rebuilt by later ones instead of traced
# again (a minute on a 2-core CPU): Note [pattern cache] in patterns/pattern_cache.py.  The directory defaults to
# inductor_conv_patterns/ in Inductor's cache directory; Inductor's force_disable_caches turns this off too.
pattern_cache: bool = True
pattern_cache_dir: str | None = None

# Soft-capped attention with fp16 / bf16 inputs on a GPU computes tanh with the hardware's tanh.approx.f32 (one
# instruction, relative error <= 5e-4, as FlashAttention does; a 16-bit score's own rounding is 2e-3) instead of the
# exact exp2-and-divide form (Note [soft-capping] in kernels/attn_math.py): H200, B2 H16/8 S4096 D256 causal, forward
# 1.50 -> 1.38 ms, backward 5.02 -> 4.56 ms.  fp32 inputs, and False, take the exact form.
attention_fast_tanh: bool = True
