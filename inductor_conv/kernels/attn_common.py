"""What the attention launchers (kernels/attention.py, kernels/attention_decode.py) and the template lowering
(lowerings/attention.py) derive alike from a call's arguments: the mask kind, the scores' scale factors and the
soft-capping mode.  Plain Python (no Triton), so that each of them imports it without importing another."""
import math

import torch

from inductor_conv import config

# The kernels' MASK_KIND constexpr.
MASK_NONE, MASK_BOOL, MASK_ADDITIVE = 0, 1, 2


def mask_kind(mask_dtype) -> int:
    """MASK_KIND of a mask of this dtype (None: no mask): bool masks say which keys a query attends, float masks
    are added to the scores."""
    if mask_dtype is None:
        return MASK_NONE
    return MASK_BOOL if mask_dtype == torch.bool else MASK_ADDITIVE


def score_scales(scale: float, softcap: float) -> tuple[float, float]:
    """(qk_scale2, softcap_scale) of the kernels: scale * log2(e) and 0, or with soft-capping softcap * log2(e) and
    scale / softcap (attn_math's Note [soft-capping])."""
    if softcap:
        return softcap * math.log2(math.e), scale / softcap
    return scale * math.log2(math.e), 0.0


def softcap_mode(softcap: bool, dtype: torch.dtype, interpret: bool) -> int:
    """The kernels' SOFTCAP constexpr: 0 off, 1 the exact tanh, 2 the GPU's tanh.approx for fp16 / bf16 inputs
    when config.attention_fast_tanh (attn_math.softcap_tanh)."""
    if not softcap:
        return 0
    fast = config.attention_fast_tanh and not interpret and dtype in (torch.float16, torch.bfloat16)
    return 2 if fast else 1


# Note [int64 offsets]: the kernels' offsets into a tensor are int64 products for its batch and head, and int32
# products inside one (b, h) slice: a row index times the row stride (in the loops, the tile's first row times it)
# plus a head-dim column times its stride, what Triton computes cheapest (a 32-bit multiply-add into the 64-bit
# pointer).  They wrap once a slice spans 2^31 elements -- q in HF's (B, S, H, D) layout with 32 heads of 128 does at
# about 512K tokens -- and a wrapped offset reads or writes outside the tensor.  A call where some tensor's slice
# spans that far runs its kernels with WIDE: they cast their strides to int64 first, so every product is int64.  Only
# then: every pointer product in int64 changes the SASS of the tuned loops (sm_90, template_sass.py: the causal
# forward's wgmmas serialised, the masked dropout backward's whole-tile loop spilling twice as much), so the common
# calls keep the int32 products.  The flag is a function of the lengths and strides, which the eager launchers'
# FastLaunch keys hold; the lowering decides it from the layouts as Inductor picks its own index dtype (proven small,
# or small by the size hints and then guarded, so dynamic shapes keep the int32 kernels: lowerings/attention.py's
# _fits_int32).
INT32_SPAN = 2**31


def slice_span(size, stride):
    """The largest element offset inside one (b, h) slice of a 4-D [B, H, S, D] tensor: Σ (n - 1) · stride over its
    last two dims (ints, or sympy expressions for the lowering)."""
    return sum((n - 1) * st for n, st in zip(size[2:], stride[2:]))


def wide_offsets(*tensors) -> bool:
    """WIDE of Note [int64 offsets] for an eager launch: some tensor's slice spans 2^31 elements (Nones skipped;
    anything with a 4-D shape and stride(), the native Programs' Phantoms too).  slice_span written out: a launch
    asks it, ~0.3 us a tensor."""
    for t in tensors:
        if t is not None:
            _, _, n, d = t.shape
            _, _, stride_n, stride_d = t.stride()
            if (n - 1) * stride_n + (d - 1) * stride_d >= INT32_SPAN:
                return True
    return False


def check_softcap(softcap) -> float:
    """softcap as a float, refused unless finite and >= 0 (0: no soft-capping)."""
    softcap = float(softcap)
    if not 0.0 <= softcap < math.inf:
        raise ValueError(f"softcap must be a finite float >= 0 (0: no soft-capping), got {softcap}")
    return softcap
