"""User-facing switches of inductor_conv (a module, like ``torch._inductor.config``).

Read at graph-rewrite and launch time; change them before compiling. ``enable(device_types=...)`` sets
``device_types``.
"""
# Devices on which the pattern passes rewrite graphs. ``enable()`` sets it; ("cpu",) lets tests rewrite on CPU.
device_types: tuple[str, ...] = ("cuda",)

# Which capabilities the pattern passes rewrite.
causal_conv1d: bool = True
attention: bool = True

# Backward passes reduce parameter gradients (conv dw/dβ, attention GQA dK/dV) in a fixed order, so two runs on the
# same inputs are bit-identical. False allows atomics where a kernel offers them.
deterministic: bool = True

# Attention forward without mask, causal band or dropout, one KV head per query head, fp16/bf16, head dim <= 128
# (multiple of 8), on a GPU where cuDNN's fused attention runs: the lowering calls cuDNN's forward (the kernel
# Inductor's own SDPA rewrite reaches for that form; 640 vs our template's 468 TFLOP/s on the H200) and keeps our
# backward, which reads cuDNN's row log-sum-exp.  False: our template everywhere.
attention_cudnn_forward: bool = True
