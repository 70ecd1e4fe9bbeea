"""What the ops' eager calls share: where their kernels run, and when the public functions may skip the custom ops.

Note [eager fast path]: the public functions (``attention``, ``causal_conv1d``) called eagerly launch their kernels
through a plain ``torch.autograd.Function`` instead of their custom ops.  The custom op's eager dispatch (the
dispatcher's Python kernels, torch.library's aliasing checks, its autograd wrapper binding arguments by signature)
cost hundreds of microseconds of CPU per call on the H200 box (docs/benchmarks.md), more than the kernels at small
shapes.  The custom ops stay wherever something must see them: under torch.compile (Dynamo traces the public
function into the op), under a TorchDispatchMode (FakeTensorMode, functionalization, FlopCounterMode, ...), under
functorch transforms, for tensor subclasses (DTensor, ...), and where the torch fallback runs (float64, CPU without
the interpreter).  Both paths call the same launchers with the same arguments, so they agree bit for bit
(tests/test_ops_*.py), and the custom ops keep their whole contract (fake impls, opcheck, autograd).  One difference
on a GPU: the attention's dropout seed, which the fast path draws on the host (Note [host dropout seed] in
kernels/attention.py) and the custom op's path with torch.randint, as a traced graph must.
"""
from __future__ import annotations

import torch
from torch import Tensor

from inductor_conv._compat import dispatch_mode_depth, functorch_transforms_active
from inductor_conv.kernels import interpreting

_PLAIN_TENSORS = (Tensor, torch.nn.Parameter)


def use_triton(x: Tensor) -> bool:
    """GPU tensors run the Triton kernels; CPU tensors run them through the Triton interpreter when it is on."""
    if x.device.type == "cuda":
        return True
    return x.device.type == "cpu" and interpreting() and x.dtype != torch.float64


def fast_path(*tensors) -> bool:
    """Note [eager fast path]: whether a public function may launch its kernels without its custom op (tensors:
    the call's tensor arguments, the first one deciding the device; None for an absent optional one)."""
    if torch.compiler.is_compiling():  # first: Dynamo folds it and never traces the checks below
        return False
    if functorch_transforms_active() or dispatch_mode_depth() or not use_triton(tensors[0]):
        return False
    return all(t is None or type(t) in _PLAIN_TENSORS for t in tensors)


def needs_grad(*tensors) -> bool:
    """Whether autograd will record the call (grad mode on and some tensor argument requires grad)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)
