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


def check_softcap(softcap) -> float:
    """softcap as a float, refused unless finite and >= 0 (0: no soft-capping)."""
    softcap = float(softcap)
    if not 0.0 <= softcap < math.inf:
        raise ValueError(f"softcap must be a finite float >= 0 (0: no soft-capping), got {softcap}")
    return softcap
