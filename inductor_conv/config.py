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
