"""Lowering of inductor_conv::causal_conv1d_update (the decode step of the causal conv with its state).

On every device the op stays one extern kernel that runs the eager op (its Triton launcher on CUDA): the step reads
a few bytes a channel, so a template would gain nothing from fusing the reads, and an extern kernel is also what
can declare the in-place write of conv_state (the FallbackKernel marks the state buffer mutated, so Inductor
orders every later read of the cache after it).  The op reaches the lowering already in place: Inductor's
reinplacing pass turned ``auto_functionalized`` back into the mutating call on the cache (Note [decode state
write-back] in patterns/causal_conv1d_update.py).  The kernel takes any strides, so the inputs keep their layouts.
"""
from __future__ import annotations

import torch

import inductor_conv.ops  # noqa: F401  (registers the custom ops)
from inductor_conv._compat import fallback_handler
from inductor_conv.lowerings import install

OP = torch.ops.inductor_conv.causal_conv1d_update.default
OPS = (OP,)


def causal_conv1d_update_lowering(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices):
    """The eager op as a fallback kernel that mutates conv_state; returns y [B, C, T] (x's layout)."""
    return fallback_handler(OP, add_to_fallback_set=False)(x, conv_state, weight, bias, activation, cache_seqlens,
                                                            conv_state_indices)


def register() -> None:
    """Install the lowering (idempotent; enable() calls it, disable() removes it)."""
    install(OP, causal_conv1d_update_lowering)
