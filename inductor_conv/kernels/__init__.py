"""Triton kernels (eager launchers) and the @triton.jit math helpers they share with the templates.

This module itself imports no Triton: the ops' fake implementations use its helpers."""
import os

import torch


def interpreting() -> bool:
    """Whether Triton runs kernels through its interpreter (TRITON_INTERPRET=1: CPU tensors, no PTX)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def empty_like_q(q, head_dim_v: int):
    """The output O: [B, Hq, Sq, Dv] in q's dim order (``torch.empty_like(q)`` when Dv is q's head dim)."""
    if head_dim_v == q.shape[-1]:
        return torch.empty_like(q)
    shape = (*q.shape[:-1], head_dim_v)
    order = sorted(range(4), key=lambda d: (q.stride(d), d), reverse=True)  # outermost first, as q's memory
    strides, acc = [0] * 4, 1
    for d in reversed(order):
        strides[d] = acc
        acc *= shape[d]
    return torch.empty_strided(shape, strides, dtype=q.dtype, device=q.device)
