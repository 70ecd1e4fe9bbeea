"""Float64 attention reference (materialised). Also the torch fallback of the op (inductor_conv/ops/attention.py).

Triton-free, so the fallback works where triton is absent; the tests' reconstruction of the kernels' dropout mask
lives in ``reference/attention_dropout.py``.
"""
import math

import torch


def probs_ref(q, k, attn_mask=None, is_causal=False, scale=None, softcap=0.0):
    """(P, LSE) in float64: P = softmax(cap(scale * q kᵀ) + mask) row-wise, LSE its natural-log row log-sum-exp.

    q [B, Hq, Sq, D], k [B, Hkv, Sk, D] (query head h uses kv head h // (Hq // Hkv)); attn_mask bool (True =
    attend) or additive, broadcastable to [B, Hq, Sq, Sk]; is_causal allows key j for query i iff j <= i (top-left);
    softcap > 0 caps the scaled scores, cap(x) = softcap * tanh(x / softcap) (Gemma 2), before the mask; 0: cap(x) = x.
    Extension: a row with no allowed key (all -inf) has P = 0 and LSE = -inf. Differentiable.
    """
    Hq, Hkv = q.shape[1], k.shape[1]
    k = k.double().repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = scale * (q.double() @ k.transpose(-1, -2))
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask.double()
    if is_causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    empty = torch.isneginf(s).all(dim=-1, keepdim=True)
    p = torch.softmax(s.masked_fill(empty, 0.0), dim=-1).masked_fill(empty, 0.0)
    return p, torch.logsumexp(s, dim=-1)


def attention_ref(q, k, v, attn_mask=None, dropout_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                  softcap=0.0):
    """SDPA in float64: softmax(cap(scale * q kᵀ) + mask) (∘ dropout_mask / (1 - p)) v, with native GQA.

    Arguments as in ``probs_ref``; dropout_mask bool [B, Hq, Sq, Sk] (True = keep). Extension: a row with no allowed
    key (all -inf) outputs 0. Differentiable (autograd in float64), so it also gives reference gradients.
    """
    p, _ = probs_ref(q, k, attn_mask, is_causal, scale, softcap)
    if dropout_mask is not None:
        p = p * dropout_mask / (1.0 - dropout_p)
    return p @ v.double().repeat_interleave(q.shape[1] // v.shape[1], dim=1)


def lse_ref(q, k, attn_mask=None, is_causal=False, scale=None, softcap=0.0):
    """Row log-sum-exp (natural log, float64) of the scores, -inf for rows with no allowed key."""
    return probs_ref(q, k, attn_mask, is_causal, scale, softcap)[1]


def dropout_threshold(p: float) -> int:
    """The 16-bit keep threshold of Note [dropout replay] (kernels/attn_math.py): element kept iff its 16 hash bits
    are >= round(p * 2^16); 2^16 (p = 1) drops everything. Shared by the kernels, templates, fallback and tests."""
    return min(int(round(p * 65536.0)), 65536)
