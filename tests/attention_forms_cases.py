"""The attention forms the pattern tests compile, as data: each model's own eager spelling (HF BERT, nanoGPT, HF GPT-2,
HF Llama with repeat_kv, Gemma 2's soft-capping, T5, Kimi-Linear, bmm forms, scale, mask and layout variants) as an
``Attention`` module, the RECOGNISED and LEFT_ALONE tables of named cases, ``make_case`` / ``make_left_alone`` (a
case with seeded parameters and inputs) and the dropout probe.

tests/test_patterns_attention.py compiles every case; attention_forms_checks.py holds the checks it and
tests/test_golden_graphs_attention.py share.
"""
from __future__ import annotations

import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import repeat_kv

B, H, HKV, S, D = 3, 4, 2, 8, 16  # distinct sizes: dynamic shapes must not merge them into one symbol
S_MAX = 12  # causal buffers and masks longer than S, sliced like the models slice them


# ---------------------------------------------------------------------------------------------------------------
# Models: ``forward(q, k, v, mask)`` is ``spelling(self, q, k, v, mask)`` with q/k/v in the (B, S, H, D) layout a
# projection gives; buffers and the learned bias are module state (static under dynamic=True, as in real models).
# ---------------------------------------------------------------------------------------------------------------
class Attention(nn.Module):
    def __init__(self, spelling, p=0.0, bias_shape=None):
        super().__init__()
        self.spelling, self.p, self.scaling = spelling, p, D**-0.5
        self.drop = nn.Dropout(p)  # BERT's module spelling; the other spellings call F.dropout
        causal = torch.ones(S_MAX, S_MAX, dtype=torch.bool).tril().view(1, 1, S_MAX, S_MAX)
        self.register_buffer("causal_float", causal.float())  # nanoGPT's ``bias`` buffer
        self.register_buffer("causal_bool", causal)  # HF GPT-2's ``bias`` buffer
        slopes = torch.tensor([2.0 ** -(h + 1) for h in range(H)]).view(1, H, 1, 1)
        self.register_buffer("alibi", -slopes * torch.arange(S, dtype=torch.float32))  # (1, H, 1, S), not learned
        self.bias = nn.Parameter(torch.randn(bias_shape)) if bias_shape else None
        # SwinV2's logit scale, the log of one factor per head (distinct, no draw: the other cases' draws stay)
        self.register_buffer("log_scale", torch.linspace(1.5, 3.0, H).view(H, 1, 1))

    def forward(self, q, k, v, mask=None):
        return self.spelling(self, q, k, v, mask)


def heads(*xs):
    """(B, S, H, D) -> (B, H, S, D): the models' ``.view(B, S, H, D).transpose(1, 2)``."""
    return [x.transpose(1, 2) for x in xs]


def merge(o):
    return o.transpose(1, 2).reshape(o.shape[0], o.shape[2], -1)


def bert(m, q, k, v, mask):  # HF BERT eager self-attention
    q, k, v = heads(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s + mask
    p = m.drop(F.softmax(s, dim=-1))
    return merge(torch.matmul(p, v))


def nanogpt(m, q, k, v, mask):  # nanoGPT CausalSelfAttention (slow path)
    q, k, v = heads(q, k, v)
    T = q.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(m.causal_float[:, :, :T, :T] == 0, float("-inf"))
    att = F.dropout(F.softmax(att, dim=-1), m.p, m.training)
    return merge(att @ v)


def _gpt2(m, q, k, v, mask):  # HF GPT-2 eager_attention_forward
    q, k, v = heads(q, k, v)
    w = torch.matmul(q, k.transpose(-1, -2))
    w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
    ql, kl = q.size(-2), k.size(-2)
    causal = m.causal_bool[:, :, kl - ql : kl, :kl]
    min_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
    w = torch.where(causal, w.to(w.dtype), min_value)
    if mask is not None:
        w = w + mask
    w = F.dropout(F.softmax(w, dim=-1).type(v.dtype), m.p, m.training)
    return merge(torch.matmul(w, v))


def _gpt2_scalar_fill(m, q, k, v, mask):  # GPT-2's where with a Python number for min_value, then the padding
    q, k, v = heads(q, k, v)
    w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
    causal = m.causal_bool[:, :, : q.size(-2), : k.size(-2)]
    w = torch.where(causal, w, torch.finfo(w.dtype).min) + mask
    return merge(torch.matmul(F.softmax(w, dim=-1), v))


def llama(m, q, k, v, mask):  # HF Llama eager_attention_forward (GQA through repeat_kv)
    q, k, v = heads(q, k, v)
    k, v = repeat_kv(k, q.shape[1] // k.shape[1]), repeat_kv(v, q.shape[1] // v.shape[1])
    w = torch.matmul(q, k.transpose(2, 3)) * m.scaling
    if mask is not None:
        w = w + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=m.p, training=m.training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def gemma2(cap_div=1.5, cap_mul=1.5):
    """HF Gemma 2 eager_attention_forward: repeat_kv, ``* scaling``, logit soft-capping (``/ cap``, tanh, ``* cap``:
    1.5 bends the scaled scores, std ~1 here), the mask, fp32 softmax, dropout.  Two different constants are not
    soft-capping (left alone)."""

    def spelling(m, q, k, v, mask):
        q, k, v = heads(q, k, v)
        k, v = repeat_kv(k, q.shape[1] // k.shape[1]), repeat_kv(v, q.shape[1] // v.shape[1])
        w = torch.matmul(q, k.transpose(2, 3)) * m.scaling
        w = w / cap_div
        w = torch.tanh(w)
        w = w * cap_mul
        if mask is not None:
            w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=m.p, training=m.training)
        return torch.matmul(w, v).transpose(1, 2).contiguous()

    return spelling


def t5(m, q, k, v, mask, inplace=False):  # HF T5Attention: no scale, learned position bias (+ mask), fp32 softmax
    q, k, v = heads(q, k, v)
    scores = torch.matmul(q, k.transpose(3, 2))
    bias = m.bias if mask is None else m.bias + mask
    if inplace:
        scores += bias  # T5's own spelling: test_patterns_attention.py's test_t5_inplace_bias
    else:
        scores = scores + bias
    w = F.softmax(scores.float(), dim=-1).type_as(scores)
    w = F.dropout(w, p=m.p, training=m.training)
    return merge(torch.matmul(w, v))


def _mpnet(m, q, k, v, mask):
    """HF MPNet: a (S, S, H) position bias (its embedding lookup) permuted to (1, H, S, S), expanded over the batch
    and made contiguous: a full (B, H, S, S) bias whose gradient is then summed over the batch outside the attention,
    as a broadcast bias's is inside it. Added in place, then the padding mask."""
    q, k, v = heads(q, k, v)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    scores += m.bias.permute(2, 0, 1).unsqueeze(0).expand(q.shape[0], -1, -1, -1).contiguous()
    scores = scores + mask
    return merge(torch.matmul(F.softmax(scores, dim=-1), v))


def _sam(m, q, k, v, mask):
    """HF SAM / ViTDet: (B·H, N, D) heads, ``(q * scale) @ kᵀ`` on 3-D tensors (a matmul whose decomposition expands
    each operand to its own shape), plus relative positions computed from q (SAM's decomposed ones are einsums of q
    with learned tables: a bias trained through q and the table), softmax in float32 cast back."""
    b, s, h, d = q.shape
    q, k, v = (x.transpose(1, 2).reshape(b * h, s, d) for x in (q, k, v))
    w = (q * m.scaling) @ k.transpose(-2, -1)
    w = w + q @ m.bias.transpose(0, 1)
    w = F.softmax(w, dtype=torch.float32, dim=-1).to(q.dtype)
    w = F.dropout(w, p=m.p, training=m.training)
    return (w @ v).view(b, h, s, d).transpose(1, 2).reshape(b, s, h * d)


def deberta(m, q, k, v, mask, relative=True, position_bmms=False):
    """HF DeBERTa-v2/v3 (DisentangledSelfAttention): (B·H, S, D) heads, kᵀ divided by sqrt(3·D) made in the graph,
    with ``relative`` a disentangled bias computed from q and k (here against a learned (S, D) position table, in
    place of its content-to-position and position-to-content gathers), viewed to 4-D for ``masked_fill(~mask,
    finfo.min)``, the softmax, dropout, viewed back to 3-D. ``position_bmms``: the bias through bmms with the table
    expanded over B·H, as DeBERTa's own; the position-to-content one's backward then reads kᵀ, the node the scores'
    bmm reads (test_patterns_attention.py's test_views_of_inputs_read_outside_the_match)."""
    b, s, h, d = q.shape
    q, k, v = (x.permute(0, 2, 1, 3).contiguous().view(-1, s, d) for x in (q, k, v))
    scale = torch.sqrt(torch.tensor(d, dtype=torch.float) * 3)
    w = torch.bmm(q, k.transpose(-1, -2) / scale.to(dtype=q.dtype))
    if relative:
        if position_bmms:
            pos = m.bias.expand(q.shape[0], -1, -1)
            c2p, p2c = torch.bmm(q, pos.transpose(-1, -2)), torch.bmm(k, pos.transpose(-1, -2))
        else:
            c2p, p2c = torch.matmul(q, m.bias.t()), torch.matmul(k, m.bias.t())
        w = w + (c2p + p2c.transpose(-1, -2)) / scale.to(dtype=q.dtype)
    w = w.view(-1, h, s, s).masked_fill(~mask, torch.finfo(q.dtype).min)
    w = F.dropout(F.softmax(w, dim=-1), p=m.p, training=m.training)
    return torch.bmm(w.view(-1, s, s), v).view(-1, h, s, d).permute(0, 2, 1, 3).reshape(b, s, h * d)


def _deberta_v2_absolute(m, q, k, v, mask):  # DeBERTa-v2 without relative attention: no bias
    return deberta(m, q, k, v, mask, relative=False)


def _torch_mha(m, q, k, v, mask):
    """torch.nn.functional.multi_head_attention_forward with its weights (nn.MultiheadAttention's default
    need_weights=True, the weights then dropped): (B·H, L, D) heads as transposed views of (L, B·H, D), q scaled by
    1/sqrt(D), ``baddbmm`` onto the float mask it builds, softmax, dropout, bmm."""
    b, s, h, d = q.shape
    q, k, v = (x.transpose(0, 1).reshape(s, b * h, d).transpose(0, 1) for x in (q, k, v))
    w = torch.baddbmm(mask, q * d**-0.5, k.transpose(-2, -1))
    w = F.dropout(F.softmax(w, dim=-1), p=m.p, training=m.training)
    return torch.bmm(w, v).transpose(0, 1).reshape(s, b, h * d).transpose(0, 1)


def _wavlm(m, q, k, v, mask):
    """HF WavLM: torch's multi-head attention (above) onto its gated relative position bias, trained: a (H, S, S)
    bias repeated over the batch to (B·H, S, S), scaled per query by a gate computed from the hidden states, with the
    key padding mask added (``F.multi_head_attention_forward`` merges the two so)."""
    b, s, h, _ = q.shape
    gate = 2.0 * torch.sigmoid(q.mean(-1)).transpose(1, 2).reshape(b * h, s, 1)
    bias = gate * m.bias[None].repeat(b, 1, 1, 1).view(b * h, s, s)
    return _torch_mha(m, q, k, v, bias + mask)


def _levit(m, q, k, v, mask):
    """HF LeViT: its attention biases, one (S, S) table row per head gathered to an (H, S, S) parameter-derived
    tensor (no batch dim), added to the scaled scores."""
    q, k, v = heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling + m.bias).softmax(dim=-1)
    return merge(w @ v)


def _t5_v5(m, q, k, v, mask):  # HF T5 in transformers 5: `* 1.0`, then the position bias and the mask added apart
    q, k, v = heads(q, k, v)
    scores = torch.matmul(q, k.transpose(2, 3)) * 1.0
    scores = scores + m.bias
    scores = scores + mask
    w = F.softmax(scores, dim=-1)
    w = F.dropout(w, p=m.p, training=m.training)
    return merge(torch.matmul(w, v))


def _kimi(m, q, k, v, mask):
    """HF Kimi-Linear (KimiLinearAttention.expand_kv, then Llama's eager attention): the key assembled in a new tensor
    from a per-head part and a part shared by the heads (its rotary half, one head expanded)."""
    q, k, v = heads(q, k, v)
    nope = D // 2
    key = k.new_empty(k.shape)
    key[..., :nope].copy_(k[..., :nope])
    key[..., nope:].copy_(k[:, :1, :, nope:].expand(-1, k.shape[1], -1, -1))
    w = torch.matmul(q, key.transpose(2, 3)) * m.scaling + mask
    w = F.dropout(F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), p=m.p, training=m.training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def _key_copied(m, q, k, v, mask):  # the key copied into a new tensor (issue 32's reduction of Kimi-Linear's)
    q, k, v = heads(q, k, v)
    key = k.new_empty(k.shape)
    key.copy_(k)
    return merge(torch.matmul(F.softmax(torch.matmul(q, key.transpose(-1, -2)) * m.scaling, dim=-1), v))


def _alibi_then_mask(m, q, k, v, mask):  # a fixed per-head linear bias (a buffer), then the padding mask
    q, k, v = heads(q, k, v)
    w = torch.matmul(q, k.transpose(-1, -2)) * m.scaling + m.alibi + mask
    w = F.softmax(w, dim=-1)
    return merge(torch.matmul(w, v))


def _bloom(m, q, k, v, mask):
    """HF BLOOM: the ALiBi bias as (B·H, 1, S) through ``baddbmm`` on (B·H)-batched scores, viewed as (B, H, S, S)
    for the mask, fp32 softmax, dropout, viewed back for the bmm with v."""
    q, k, v = heads(q, k, v)
    b, h, s, d = q.shape
    alibi = m.alibi.expand(b, h, 1, s).reshape(b * h, 1, s)
    w = alibi.baddbmm(batch1=q.reshape(b * h, s, d), batch2=k.reshape(b * h, s, d).transpose(-1, -2), beta=1.0,
                      alpha=m.scaling)
    w = w.view(b, h, s, -1) + mask
    p = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    p = F.dropout(p, p=m.p, training=m.training)
    return merge(torch.bmm(p.view(b * h, s, -1), v.reshape(b * h, s, d)).view(b, h, s, d))


def _gpt_neox_japanese(m, q, k, v, mask):
    """HF GPT-NeoX-Japanese: ``baddbmm`` of the (B·H)-batched q kᵀ onto zeros, viewed as (B, H, S, S) for the mask,
    softmax, dropout, cast to v's dtype, a 4-D ``matmul`` with v."""
    q, k, v = heads(q, k, v)
    b, h, s, d = q.shape
    zeros = torch.zeros(b * h, s, s, dtype=q.dtype, device=q.device)
    w = torch.baddbmm(zeros, q.reshape(b * h, s, d), k.reshape(b * h, s, d).transpose(1, 2), beta=1.0,
                      alpha=m.scaling)
    p = F.dropout(F.softmax(w.view(b, h, s, -1) + mask, dim=-1), p=m.p, training=m.training)
    return merge(torch.matmul(p.to(v.dtype), v))


def _mpt(fill=None):
    def spelling(m, q, k, v, hidden):
        """HF MPT: the ALiBi buffer as (H, 1, S) added to the scaled scores, then ``masked_fill(hidden, fill)`` (a bool
        mask, True = hidden; finfo(q.dtype).min by default), the softmax of ``.float()`` scores, dropout. (The
        scores are widened to at least float32 rather than cast to it: the same graph for float32 and half models, and
        the float64 reference keeps its own finfo.min, where float32 would turn it into -inf.)"""
        q, k, v = heads(q, k, v)
        s = torch.matmul(q, k.transpose(-1, -2)) * m.scaling + m.alibi[0]
        s = s.masked_fill(hidden, torch.finfo(q.dtype).min if fill is None else fill)
        s = s.to(torch.promote_types(s.dtype, torch.float32))
        p = F.dropout(F.softmax(s, dim=-1).to(v.dtype), p=m.p, training=m.training)
        return merge(torch.matmul(p, v))

    return spelling


def _falcon(m, q, k, v, mask):
    """HF Falcon with ALiBi: the scores widened to at least float32 (a cast in half models), the ALiBi buffer added
    before the in-place scale, the additive mask (Falcon's holds ALiBi again), the softmax in the model's dtype,
    dropout, ``@ v``; K and V with one head are broadcast by the matmuls (multi-query)."""
    q, k, v = heads(q, k, v)
    s = q @ k.transpose(-1, -2)
    s = s.to(torch.promote_types(s.dtype, torch.float32)) + m.alibi
    s *= m.scaling
    p = F.dropout(F.softmax(s + mask, dim=-1, dtype=q.dtype), p=m.p, training=m.training)
    return merge(p @ v)


def _xglm(m, q, k, v, mask):
    """HF XGLM: q scaled by its projection, heads folded into the batch, the mask added on a 4-D view of the bmm
    scores and clamped at finfo.min, softmax (in fp32 for fp16), two views (for the weights it can return),
    dropout."""
    q, k, v = heads(q * m.scaling, k, v)
    b, h, s, d = q.shape
    w = torch.bmm(q.reshape(b * h, s, d), k.reshape(b * h, s, d).transpose(1, 2)).view(b, h, s, s) + mask
    # (XGLM's full has the default dtype: float32 cannot hold the float64 reference's finfo.min)
    w = torch.max(w, torch.full((), torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)).view(b * h, s, s)
    if w.dtype == torch.float16:
        p = F.softmax(w, dim=-1, dtype=torch.float32).to(torch.float16)
    else:
        p = F.softmax(w, dim=-1)
    p = F.dropout(p.view(b, h, s, s).view(b * h, s, s), p=m.p, training=m.training)
    return merge(torch.bmm(p, v.reshape(b * h, s, d)).view(b, h, s, d))


def _bart_bmm(m, q, k, v, mask):
    """The older HF BART spelling (TrOCR, MVP, LED, FSMT, SpeechT5): q scaled by its projection, heads folded into
    the batch, the mask added on a 4-D view of the bmm scores, viewed back, softmax, dropout, bmm."""
    q, k, v = heads(q * m.scaling, k, v)
    b, h, s, d = q.shape
    w = torch.bmm(q.reshape(b * h, s, d), k.reshape(b * h, s, d).transpose(1, 2))
    w = (w.view(b, h, s, s) + mask).view(b * h, s, s)
    p = F.dropout(F.softmax(w, dim=-1), p=m.p, training=m.training)
    return merge(torch.bmm(p, v.reshape(b * h, s, d)).view(b, h, s, d))


def _fsmt(m, q, k, v, mask):
    """HF FSMT (fairseq): q scaled by its projection and laid out (T, B·H, D) then transposed, k and v folded into
    (B·H, S, D); the key padding mask (B, 1, 1, S) filled with finfo.min on a 4-D view of the bmm scores, viewed
    back, softmax, dropout, bmm."""
    q, k, v = heads(q * m.scaling, k, v)
    b, h, s, d = q.shape
    q3 = q.permute(2, 0, 1, 3).reshape(s, b * h, d).transpose(0, 1)
    w = torch.bmm(q3, k.reshape(b * h, s, d).transpose(1, 2))
    w = w.view(b, h, s, s).masked_fill(mask, torch.finfo(w.dtype).min).view(b * h, s, s)
    p = F.dropout(F.softmax(w, dim=-1), p=m.p, training=m.training)
    return merge(torch.bmm(p, v.reshape(b * h, s, d)).view(b, h, s, d))


def _fsmt_heads_first(m, q, k, v, mask):
    """FSMT's scores viewed as (H, B, Sq, Sk), heads first, for a (1, B, 1, Sk) mask: the 4-D view does not put the
    (B·H) rows where a (B, H) split does, so the mask hides other rows than the op's would."""
    q, k, v = heads(q * m.scaling, k, v)
    b, h, s, d = q.shape
    w = torch.bmm(q.reshape(b * h, s, d), k.reshape(b * h, s, d).transpose(1, 2))
    w = w.view(h, b, s, s).masked_fill(mask, torch.finfo(w.dtype).min).view(b * h, s, s)
    return merge(torch.bmm(F.softmax(w, dim=-1), v.reshape(b * h, s, d)).view(b, h, s, d))


def gpt_neo(m, q, k, v, mask, upcast=True):
    """HF GPT-Neo: q and k upcast to float32 (real casts in half, Note [float32 scores]; ``upcast=False``: the same
    attention with half scores), no scale, the causal buffer's ``where`` with a ``torch.tensor`` constant for the
    fill (a 0-d constant in the graph, where GPT-2 has ``full``), then the padding mask; the probabilities cast to
    v's dtype."""
    q, k, v = heads(q, k, v)
    if upcast:
        q, k = q.to(torch.float32), k.to(torch.float32)
    s = torch.matmul(q, k.transpose(-1, -2))
    fill = torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype, device=s.device)
    s = torch.where(m.causal_bool[:, :, :S, :S], s, fill) + mask
    return merge(torch.matmul(F.softmax(s, dim=-1).to(v.dtype), v))


def _codegen(m, q, k, v, mask):
    """HF CodeGen's own ``_attn`` (transformers 5.17 and earlier): GPT-J's float32 scores with the mask added before
    the scale, ``(s + mask) / sqrt(D)``, then softmax, the cast to v's dtype, dropout."""
    q, k, v = heads(q, k, v)
    s = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
    s = (s + mask) / math.sqrt(q.shape[-1])
    p = F.dropout(F.softmax(s, dim=-1).to(v.dtype), p=m.p, training=m.training)
    return merge(torch.matmul(p, v))


def _bros(m, q, k, v, mask):
    """HF Bros: a position term computed from q (trained through q and the table) added before the scale,
    ``(s + q·rᵀ) / sqrt(D) + mask``."""
    q, k, v = heads(q, k, v)
    s = (torch.matmul(q, k.transpose(-1, -2)) + q @ m.bias.transpose(0, 1)) / math.sqrt(D)
    p = F.dropout(F.softmax(s + mask, dim=-1), p=m.p, training=m.training)
    return merge(torch.matmul(p, v))


def _xlnet(m, q, k, v, hidden):
    """HF XLNet's ``rel_attn_core``: einsum over (S, B, H, D) heads, the position term computed from q, the absent
    segment term added as 0, the scale, then the mask subtracted: ``score - 1e30 * hidden`` (hidden 1 = masked)."""
    q, k, v = (x.transpose(0, 1) for x in (q, k, v))  # (B, S, H, D) -> (S, B, H, D)
    ac = torch.einsum("ibnd,jbnd->bnij", q, k)
    bd = q.permute(1, 2, 0, 3) @ m.bias.transpose(0, 1)  # (B, H, S, S)
    s = (ac + bd + 0) * m.scaling - 1e30 * hidden
    p = F.dropout(F.softmax(s, dim=3), p=m.p, training=m.training)
    return torch.einsum("bnij,jbnd->ibnd", p, v).transpose(0, 1).reshape(B, S, -1)


def _funnel(m, q, k, v, keep):
    """HF Funnel: q pre-scaled, two terms (one computed from q, one fixed) added to the scores, in float32, then the
    mask subtracted, ``- 1e6 * (1 - keep)``, softmax in the input's dtype. (Funnel's own q-dependent terms read the
    pre-scaled q and its content term q plus a per-head bias; a pre-scale that both read is not matched.)"""
    q, k, v = heads(q, k, v)
    s = torch.matmul(q * m.scaling, k.transpose(-1, -2)) + q @ m.bias.transpose(0, 1) + m.alibi
    s = s.float() - 1e6 * (1 - keep[:, None, None].float())
    p = F.dropout(torch.softmax(s, dim=-1, dtype=q.dtype), p=m.p, training=m.training)
    return merge(torch.matmul(p, v))


def _scores_then(m, q, k, v, masking):
    """softmax(masking(q kᵀ)) v, dropout between."""
    q, k, v = heads(q, k, v)
    p = F.dropout(F.softmax(masking(torch.matmul(q, k.transpose(-1, -2))), dim=-1), p=m.p, training=m.training)
    return merge(torch.matmul(p, v))


def _mimo(m, q, k, v, mask):
    """HF MiMo-V2-Flash's full-attention layers: the row max subtracted from the masked scores before the softmax (a
    difference that is no mask: graph_pass.subtracted_masks_as_adds leaves it)."""
    q, k, v = heads(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) * m.scaling + mask
    s = s - s.max(dim=-1, keepdim=True).values
    p = F.dropout(F.softmax(s, dim=-1), p=m.p, training=m.training)
    return merge(torch.matmul(p, v))


def _bmm(m, q, k, v, mask):  # heads folded into the batch (HF BART/Whisper style), q pre-scaled
    q, k, v = (x.transpose(1, 2).reshape(-1, x.shape[1], x.shape[3]) for x in (q, k, v))
    w = torch.bmm(q * m.scaling, k.transpose(1, 2))
    if mask is not None:
        w = w + mask
    w = F.dropout(F.softmax(w, dim=-1), p=m.p, training=m.training)
    return torch.bmm(w, v)


def _masked_fill(fill):
    def spelling(m, q, k, v, mask):  # mask: bool, True = hidden
        q, k, v = heads(q, k, v)
        s = torch.matmul(q, k.transpose(-2, -1)) * m.scaling
        s = s.masked_fill(mask, fill if fill is not None else torch.finfo(s.dtype).min)
        return merge(torch.matmul(s.softmax(-1), v))

    return spelling


def _remasked_tensor_fill(m, q, k, v, hidden):
    """SEW-D's XSoftmax inlined: the fill a 0-d tensor, ``torch.tensor(finfo.min)`` (a ``full`` in the graph)."""
    q, k, v = heads(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) * m.scaling
    w = torch.softmax(s.masked_fill(hidden, torch.tensor(torch.finfo(s.dtype).min)), dim=-1)
    return merge(torch.matmul(w.masked_fill(hidden, 0), v))


def _remasked(fill, returned=False, used=False):
    """CPM-Ant (``-inf``) and FastSpeech2-Conformer (``finfo.min``): the probabilities masked again after the softmax
    with the mask that hid the scores (an all-hidden row gives zeros: Note [remasked probabilities] in
    patterns/graph_pass.py); ``returned``: the remasked weights are returned too (output_attentions); ``used``: they
    have a second consumer in the graph (each row's largest weight added to the output)."""

    def spelling(m, q, k, v, hidden):
        q, k, v = heads(q, k, v)
        s = torch.matmul(q, k.transpose(-1, -2)) * m.scaling
        s = s.masked_fill(hidden, fill if fill is not None else torch.finfo(s.dtype).min)
        w = torch.softmax(s, dim=-1).masked_fill(hidden, 0.0)
        o = merge(torch.matmul(F.dropout(w, p=m.p, training=m.training), v))
        if used:
            o = o + w.amax(dim=(1, 3))[..., None]
        return (o, w) if returned else o

    return spelling


def _cpmant(m, q, k, v, keep, used=False):
    """HF CPM-Ant: scaled scores plus a trained position bias, hidden keys filled with -inf by a mask computed anew
    for each of its two fills (``keep == tensor(False)``), the probabilities filled with zeros again after the
    softmax (Note [masked fill over a bias], Note [remasked probabilities] in patterns/graph_pass.py); ``used``: the
    weights have a second consumer (each row's largest added to the output)."""
    q, k, v = heads(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + m.bias
    s = torch.masked_fill(s, keep == torch.tensor(False), torch.scalar_tensor(float("-inf"), dtype=s.dtype))
    w = torch.softmax(s, dim=-1)
    w = torch.masked_fill(w, keep == torch.tensor(False), torch.scalar_tensor(0, dtype=w.dtype))
    o = merge(torch.matmul(F.dropout(w, p=m.p, training=m.training), v))
    return o + w.amax(dim=(1, 3))[..., None] if used else o


def _fastspeech2(m, q, k, v, hidden):
    """HF FastSpeech2-Conformer's relative-position attention (its bias computed from q, here a trained tensor): kᵀ
    as one permute of the (B, S, H, D) key, ``(s + bias) / sqrt(d)``, ``masked_fill(hidden, finfo.min)``, the
    softmax filled with zeros again."""
    (q, v), kt = heads(q, v), k.permute(0, 2, 3, 1)
    s = (torch.matmul(q, kt) + m.bias) / math.sqrt(q.shape[-1])
    w = torch.softmax(s.masked_fill(hidden, torch.finfo(s.dtype).min), dim=-1).masked_fill(hidden, 0.0)
    return merge(torch.matmul(F.dropout(w, p=m.p, training=m.training), v))


def _bmm_masked(kind):
    """bmm scores with a (1, S, S) bool mask broadcast over B·H: ``masked_fill(hidden, -inf)`` (HF's older
    encoder-decoders, nanoGPT-style buffers) or GPT-2's ``where(keep, s, finfo.min)`` (a 0-d tensor or a number)."""

    def spelling(m, q, k, v, hidden):
        q, k, v = (x.transpose(1, 2).reshape(-1, x.shape[1], x.shape[3]) for x in (q, k, v))
        s = torch.bmm(q, k.transpose(1, 2)) * m.scaling
        if kind == "masked_fill":
            s = s.masked_fill(hidden, float("-inf"))
        elif kind == "where":
            s = torch.where(~hidden, s, torch.full([], torch.finfo(s.dtype).min, dtype=s.dtype))
        else:  # "where_scalar": the same with a Python number
            s = torch.where(~hidden, s, torch.finfo(s.dtype).min)
        return torch.bmm(F.softmax(s, dim=-1), v)

    return spelling


def _where_scalar(fill):
    """GPT-2's ``torch.where(keep, s, min_value)`` with a Python number for min_value: ``torch.finfo(s.dtype).min``
    (fill None), ``float("-inf")`` or another number; ``hidden`` is True where masked out."""

    def spelling(m, q, k, v, hidden):
        q, k, v = heads(q, k, v)
        s = torch.matmul(q, k.transpose(-1, -2)) * m.scaling
        s = torch.where(~hidden, s, torch.finfo(s.dtype).min if fill is None else fill)
        return merge(torch.matmul(F.softmax(s, dim=-1), v))

    return spelling


def _bmm_learned_bias(m, q, k, v, mask):  # bmm scores plus a learned (B·H or 1, S, S) bias, an nn.Parameter
    q, k, v = (x.transpose(1, 2).reshape(-1, x.shape[1], x.shape[3]) for x in (q, k, v))
    w = torch.bmm(q, k.transpose(1, 2)) * m.scaling + m.bias
    return torch.bmm(F.softmax(w, dim=-1), v)


SCALES = {  # score scale spellings, d = q.size(-1) (symbolic under dynamic=True)
    "mul": lambda s, d: s * (d**-0.5),
    "div": lambda s, d: s / (d**0.5),
    "div_math_sqrt": lambda s, d: s / math.sqrt(d),
    "div_torch_full": lambda s, d: s / torch.full([], d**0.5, dtype=s.dtype, device=s.device),
    "none": lambda s, d: s,
}


def _scaled(scale):
    def spelling(m, q, k, v, mask):
        q, k, v = heads(q, k, v)
        return merge(SCALES[scale](q @ k.transpose(-2, -1), q.size(-1)).softmax(dim=-1) @ v)

    return spelling


def _swinv2(m, q, k, v, mask):
    """HF SwinV2's cosine attention: unit q and k rows, the scores scaled by one factor per head (the exp of its
    clamped log, an (H, 1, 1) tensor), the mask. The factors are a buffer here; SwinV2 trains them
    (test_trained_per_head_scale)."""
    q, k, v = heads(q, k, v)
    s = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
    s = s * torch.clamp(m.log_scale, max=math.log(100.0)).exp()
    s = s + mask
    return merge(F.dropout(s.softmax(dim=-1), m.p, m.training) @ v)


def _swin_windows(m, q, k, v, mask):
    """HF Donut-Swin, MaskFormer-Swin, Swin2SR, CLAP's HTSAT: (B·nW, H, S, S) window scores, the learned relative
    position bias (an (H, S, S) table gathered per head, unsqueezed), then each window's shift mask (nW, S, S) added
    on a (B, nW, H, S, S) view, viewed back."""
    q, k, v = heads(q, k, v)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    s = s + m.bias.unsqueeze(0)
    windows = mask.shape[0]
    s = s.view(s.shape[0] // windows, windows, *s.shape[1:]) + mask.unsqueeze(1).unsqueeze(0)
    s = s.view(-1, *s.shape[2:])
    return merge(F.dropout(s.softmax(dim=-1), m.p, m.training) @ v)


def _swinv2_windows(m, q, k, v, mask):
    """HF SwinV2's / Swin2SR's shifted block: cosine scores scaled per head, the position bias, then the window mask
    added twice on the (B, nW, H, S, S) view, each time through its own unsqueezes (HF's code)."""
    q, k, v = heads(q, k, v)
    s = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
    s = s * torch.clamp(m.log_scale, max=math.log(100.0)).exp() + m.bias.unsqueeze(0)
    windows = mask.shape[0]
    s = s.view(s.shape[0] // windows, windows, *s.shape[1:]) + mask.unsqueeze(1).unsqueeze(0)
    s = s + mask.unsqueeze(1).unsqueeze(0)
    s = s.view(-1, *s.shape[2:])
    return merge(F.dropout(s.softmax(dim=-1), m.p, m.training) @ v)


def _nystromformer(m, q, k, v, mask):
    """HF Nystromformer with as many landmarks as tokens (its exact path): q and k each divided by d^(1/4), the mask,
    softmax, @ v, then a depthwise convolution of v over the sequence added in place; the incoming gradient, copied
    to one layout, feeds both backwards."""
    q, k, v = heads(q, k, v)
    c = math.sqrt(math.sqrt(q.shape[-1]))
    out = ((q / c) @ (k / c).transpose(-1, -2) + mask).softmax(dim=-1) @ v
    weight = torch.linspace(0.5, 1.5, v.shape[1] * 3, dtype=v.dtype, device=v.device).view(-1, 1, 3, 1)
    out += F.conv2d(v, weight, padding=(1, 0), groups=v.shape[1])
    return merge(out)


def _einsum(m, q, k, v, mask):
    """Attention written with einsum (research code's spelling): (B, H, S, D) heads, the mask, dropout."""
    q, k, v = heads(q, k, v)
    s = torch.einsum("bhid,bhjd->bhij", q, k) * m.scaling + mask
    p = F.dropout(s.softmax(dim=-1), m.p, m.training)
    return merge(torch.einsum("bhij,bhjd->bhid", p, v))


def _einsum_sequence_first(m, q, k, v, mask):
    """HF XLNet's einsums: (S, B, H, D) heads in, scores (B, H, Sq, Sk), the output (S, B, H, D)."""
    q, k, v = (x.transpose(0, 1) for x in (q, k, v))
    s = torch.einsum("ibnd,jbnd->bnij", q, k) * m.scaling + mask
    return torch.einsum("bnij,jbnd->ibnd", s.softmax(dim=-1), v).transpose(0, 1).flatten(2)


def _einsum_key_transposed(m, q, k, v, mask):
    """HF ProphetNet's einsum: kᵀ made by the model (B, H, D, Sk), q pre-scaled, the fp32 softmax cast back."""
    q, k, v = heads(q, k, v)
    s = torch.einsum("bntc,bncs->bnts", q * m.scaling, k.transpose(2, 3)) + mask
    p = F.softmax(s, dim=-1, dtype=torch.float32).type_as(s)
    return merge(torch.einsum("bnts,bnsc->bntc", p, v))


def _prescaled_q(m, q, k, v, mask):  # (q * s) @ kᵀ, 4-D
    q, k, v = heads(q, k, v)
    return merge(torch.softmax((q * m.scaling) @ k.transpose(-2, -1), dim=-1) @ v)


# ---------------------------------------------------------------------------------------------------------------
# Cases: name -> (spelling, Attention kwargs, mask builder or None, Hkv). Masks are built from a seeded generator
# and need no gradient, except in ``MASK_GRAD`` cases (a bias computed upstream that is trained through the mask).
# ---------------------------------------------------------------------------------------------------------------
def additive(*shape):
    return lambda: torch.randn(*shape)


def _hidden(*shape):
    """A bool "hidden" mask (True = masked out) that leaves the diagonal visible, so no row is empty."""

    def build():
        hidden = torch.rand(*shape) < 0.4
        return hidden & ~torch.eye(shape[-2], shape[-1], dtype=torch.bool)

    return build


def _hidden_with_empty_row(*shape):
    """As _hidden, but query row 0 hides every key: finfo.min must give that row a uniform softmax, as eager."""

    def build():
        hidden = _hidden(*shape)()
        hidden[..., 0, :] = True
        return hidden

    return build


def _causal_left_padding():
    """HF's causal mask with left padding (B, 1, S, S), 0 / finfo.min: batch 0's first two keys are padding, so its
    first two query rows see no key (eager's softmax of an all-finfo.min row is uniform). bf16's finfo.min, which
    float32 holds exactly, so the bf16 cases get HF's bf16 mask (float32's min rounds to -inf in bf16)."""

    def build():
        keep = torch.ones(S, S, dtype=torch.bool).tril().expand(B, 1, S, S).clone()
        keep[0, ..., :2] = False
        return torch.zeros(B, 1, S, S).masked_fill(~keep, torch.finfo(torch.bfloat16).min)

    return build


def _key_padding():
    """fairseq's key padding mask (B, 1, 1, S), True = padding: batch 0's last three keys."""

    def build():
        hidden = torch.zeros(B, 1, 1, S, dtype=torch.bool)
        hidden[0, ..., -3:] = True
        return hidden

    return build


def _right_padding():
    """GPT-2 padding mask (B, 1, 1, S): 0 or finfo.min for the last two keys of batch 0."""

    def build():
        mask = torch.zeros(B, 1, 1, S)
        mask[0, ..., -2:] = torch.finfo(torch.float32).min
        return mask

    return build


def _token_pairs():
    """DeBERTa's bool mask (B, 1, S, S): query i may read key j where neither is padding (the outer product of the
    padding mask), so a padding query hides every key (finfo.min fills its row: uniform, as eager)."""

    def build():
        keep = torch.ones(B, S, dtype=torch.bool)
        keep[1, -3:] = False
        keep[2, -1:] = False
        return keep[:, None, :, None] & keep[:, None, None, :]

    return build


def _mha_causal():
    """torch's float attn_mask from a bool causal one: (1, S, S), -inf above the diagonal."""
    return lambda: torch.zeros(S, S).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), -math.inf)[None]


def _mha_key_padding():
    """torch's key_padding_mask merged into the float mask: (B·H, 1, S), -inf for batch 0's last two keys."""

    def build():
        mask = torch.zeros(B, H, 1, S)
        mask[0, ..., -2:] = -math.inf
        return mask.reshape(B * H, 1, S)

    return build


RECOGNISED = {
    "bert_additive_mask": (bert, {}, additive(B, 1, 1, S), H),
    "bert_mask_b1sk": (bert, {}, additive(B, 1, S, S), H),
    "bert_mask_1hsk": (bert, {}, additive(1, H, S, S), H),
    "bert_learned_mask_b11s": (bert, {}, additive(B, 1, 1, S), H),
    "bert_learned_mask_bhss": (bert, {}, additive(B, H, S, S), H),
    "bert_no_mask": (bert, {}, None, H),
    "nanogpt": (nanogpt, {}, None, H),
    "hf_gpt2": (_gpt2, {}, None, H),
    "hf_gpt2_padding": (_gpt2, {}, _right_padding(), H),
    "gpt2_scalar_fill_padding": (_gpt2_scalar_fill, {}, _right_padding(), H),
    "hf_llama_repeat_kv": (llama, {}, additive(B, 1, S, S_MAX), HKV),
    "hf_llama_no_gqa": (llama, {}, additive(B, 1, S, S_MAX), H),
    "hf_gemma2_softcap": (gemma2(), {}, additive(B, 1, S, S), HKV),
    "softcap_no_mask_no_gqa": (gemma2(), {}, None, H),
    # Falcon's multi-query attention: one K/V head that matmul broadcasts over the query heads (no repeat_kv)
    "multi_query_broadcast": (bert, {}, additive(B, 1, 1, S), 1),
    "t5_learned_bias": (t5, dict(bias_shape=(1, H, S, S)), None, H),
    "t5_learned_bias_and_mask": (t5, dict(bias_shape=(1, H, S, S)), additive(B, 1, 1, S), H),
    "t5_v5_bias_then_padding": (_t5_v5, dict(bias_shape=(1, H, S, S)), _right_padding(), H),
    "t5_v5_batch_bias_then_mask": (_t5_v5, dict(bias_shape=(B, H, S, S)), additive(B, 1, S, S), H),
    "mpnet_bias_expanded_over_batch": (_mpnet, dict(bias_shape=(S, S, H)), _right_padding(), H),
    "sam_rel_pos_3d_matmul": (_sam, dict(bias_shape=(S, D)), None, H),
    "torch_mha_causal": (_torch_mha, {}, _mha_causal(), H),
    "torch_mha_key_padding": (_torch_mha, {}, _mha_key_padding(), H),
    "wavlm_gated_position_bias": (_wavlm, dict(bias_shape=(H, S, S)), _mha_key_padding(), H),
    "levit_per_head_bias": (_levit, dict(bias_shape=(H, S, S)), None, H),
    # nn.MultiheadAttention given a trained (L, S) attn_mask: the function adds it as (1, L, S) to every head
    "torch_mha_trained_attn_mask": (lambda m, q, k, v, mask: _torch_mha(m, q, k, v, m.bias[None]),
                                    dict(bias_shape=(S, S)), None, H),
    "deberta_v3_disentangled": (deberta, dict(bias_shape=(S, D)), _token_pairs(), H),
    "deberta_v2_absolute": (_deberta_v2_absolute, {}, _token_pairs(), H),
    "alibi_then_padding": (_alibi_then_mask, {}, _right_padding(), H),
    "kimi_key_assembled": (_kimi, {}, additive(B, 1, S, S), H),
    "bloom_alibi_baddbmm": (_bloom, {}, _causal_left_padding(), H),
    "gpt_neox_japanese_baddbmm": (_gpt_neox_japanese, {}, _causal_left_padding(), H),
    "mpt_alibi_masked_fill": (_mpt(), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "mpt_alibi_masked_fill_minus_inf": (_mpt(float("-inf")), {}, _hidden(B, 1, S, S), H),
    "xglm_clamped_bmm": (_xglm, {}, _causal_left_padding(), H),
    "bart_masked_bmm": (_bart_bmm, {}, _causal_left_padding(), H),
    "falcon_alibi_twice": (_falcon, {}, _causal_left_padding(), H),
    "falcon_alibi_multi_query": (_falcon, {}, _causal_left_padding(), 1),
    "gpt_neo_tensor_fill": (gpt_neo, {}, _right_padding(), H),
    "fsmt_key_padding": (_fsmt, {}, _key_padding(), H),
    "codegen_mask_then_scale": (_codegen, {}, _causal_left_padding(), H),
    "codegen_random_mask_then_scale": (_codegen, {}, additive(B, 1, S, S), H),  # a mask the scale changes
    "mimo_row_max_subtracted": (_mimo, {}, additive(B, 1, S, S), H),
    # a trained bias subtracted from the scores: added negated, its gradient the op's mask gradient negated (one
    # broadcast over the batch is left alone: its gradient negates dS before the batch sum the forms have after it)
    "learned_bias_subtracted": (lambda m, q, k, v, mask: _scores_then(m, q, k, v, lambda s: s * m.scaling - m.bias),
                                dict(bias_shape=(B, H, S, S)), None, H),
    "bros_bias_then_scale": (_bros, dict(bias_shape=(S, D)), _right_padding(), H),
    "xlnet_subtracted_mask": (_xlnet, dict(bias_shape=(S, D)), lambda: (torch.rand(B, 1, S, S) < 0.3).float(), H),
    "funnel_three_terms": (_funnel, dict(bias_shape=(S, D)), lambda: (torch.rand(B, S) < 0.7).float(), H),
    "key_copied_into_new_empty": (_key_copied, {}, None, H),
    "bmm_prescaled_q": (_bmm, {}, None, H),
    "bmm_additive_mask": (_bmm, {}, additive(B * H, S, S), H),
    "bmm_masked_fill": (_bmm_masked("masked_fill"), {}, _hidden(1, S, S), H),
    "bmm_where_finfo_min": (_bmm_masked("where"), {}, _hidden_with_empty_row(1, S, S), H),
    "bmm_where_scalar_finfo_min": (_bmm_masked("where_scalar"), {}, _hidden_with_empty_row(1, S, S), H),
    "bmm_learned_bias": (_bmm_learned_bias, dict(bias_shape=(B * H, S, S)), None, H),
    "bmm_learned_bias_broadcast": (_bmm_learned_bias, dict(bias_shape=(1, S, S)), None, H),
    "where_scalar_finfo_min": (_where_scalar(None), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "where_scalar_minus_inf": (_where_scalar(float("-inf")), {}, _hidden(B, 1, S, S), H),
    "masked_fill_minus_inf": (_masked_fill(float("-inf")), {}, _hidden(B, 1, S, S), H),
    "masked_fill_finfo_min": (_masked_fill(None), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "remasked_minus_inf": (_remasked(float("-inf")), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "remasked_finfo_min": (_remasked(None), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "remasked_tensor_fill": (_remasked_tensor_fill, {}, _hidden_with_empty_row(B, 1, S, S), H),
    "cpmant_bias_masked_fill_remasked": (_cpmant, dict(bias_shape=(B, H, S, S)),
                                         lambda: ~_hidden_with_empty_row(B, 1, S, S)(), H),
    "fastspeech2_bias_then_scale_masked_fill_remasked": (_fastspeech2, dict(bias_shape=(B, H, S, S)),
                                                         _hidden(B, 1, 1, S), H),
    "prescaled_q": (_prescaled_q, {}, None, H),
    "swinv2_per_head_scale": (_swinv2, {}, additive(B, 1, 1, S), H),
    "einsum": (_einsum, {}, additive(B, 1, S, S), H),
    "nystromformer_conv_on_v": (_nystromformer, {}, additive(B, 1, 1, S), H),
    # one image of B windows; Swin's shift mask holds 0 and -100
    "swin_window_mask": (_swin_windows, dict(bias_shape=(H, S, S)), lambda: (torch.rand(B, S, S) < 0.3) * -100.0, H),
    "swinv2_window_mask_twice": (_swinv2_windows, dict(bias_shape=(H, S, S)),
                                 lambda: (torch.rand(B, S, S) < 0.3) * -100.0, H),
    "einsum_sequence_first": (_einsum_sequence_first, {}, additive(B, 1, 1, S), H),
    "einsum_key_transposed": (_einsum_key_transposed, {}, additive(B, 1, 1, S), H),
    **{f"scale_{name}": (_scaled(name), {}, None, H) for name in SCALES},
}
MASK_GRAD = ("bert_learned_mask_b11s", "bert_learned_mask_bhss")


def make_case(name, dtype=torch.float32, seed=0, table=None):
    """(model, [q, k, v, mask]) with fresh random parameters and inputs (never zeros)."""
    spelling, kwargs, mask, hkv = (table or RECOGNISED)[name]
    torch.manual_seed(seed)
    model = Attention(spelling, **kwargs).to(dtype)
    q, k, v = torch.randn(B, S, H, D), torch.randn(B, S, hkv, D), torch.randn(B, S, hkv, D)
    args = [q.to(dtype), k.to(dtype), v.to(dtype)]
    if mask is not None:
        m = mask()
        args.append(m if m.dtype == torch.bool else m.to(dtype))
    return model, args


# ---------------------------------------------------------------------------------------------------------------
# Left alone: spellings the op does not compute
# ---------------------------------------------------------------------------------------------------------------
def _softmax_dim_minus2(m, q, k, v, mask):
    q, k, v = heads(q, k, v)
    return merge((q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-2) @ v)


def _weights_returned(m, q, k, v, mask):
    q, k, v = heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-1)
    return merge(w @ v), w


def _weights_used_in_graph(m, q, k, v, mask):  # e.g. an attention-entropy regulariser: P has a second consumer
    q, k, v = heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-1)
    return merge(w @ v + w.amax(-1, keepdim=True))


def _weights_stored(m, q, k, v, mask):  # output_attentions-style: P kept on the module (a graph output for dynamo)
    q, k, v = heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-1)
    m.last_weights = w
    return merge(w @ v)


def _mask_from_scores(m, q, k, v, mask):
    q, k, v = heads(q, k, v)
    s = q @ k.transpose(-2, -1) * m.scaling
    return merge(s.masked_fill(s < -1.0, float("-inf")).softmax(-1) @ v)


def _scale_along_keys(m, q, k, v, mask):  # a (Sk,) temperature is not a scalar scale
    q, k, v = heads(q, k, v)
    return merge((q @ k.transpose(-2, -1) * mask).softmax(-1) @ v)


LEFT_ALONE = {  # name: (spelling, Attention kwargs, mask builder, Hkv, head dim)
    "softmax_dim_minus2": (_softmax_dim_minus2, {}, None, H, D),
    "weights_returned": (_weights_returned, {}, None, H, D),
    "weights_used_in_graph": (_weights_used_in_graph, {}, None, H, D),
    "weights_stored": (_weights_stored, {}, None, H, D),
    "mask_from_scores": (_mask_from_scores, {}, None, H, D),
    "head_dim_8": (bert, {}, None, H, 8),
    "masked_fill_minus_1e4": (_masked_fill(-1e4), {}, _hidden(B, 1, S, S), H, D),
    "where_scalar_minus_1e4": (_where_scalar(-1e4), {}, _hidden(B, 1, S, S), H, D),
    "remasked_minus_1e4": (_remasked(-1e4), {}, _hidden_with_empty_row(B, 1, S, S), H, D),
    "remasked_weights_returned": (_remasked(None, returned=True), {}, _hidden_with_empty_row(B, 1, S, S), H, D),
    "remasked_weights_used": (_remasked(None, used=True), {}, _hidden_with_empty_row(B, 1, S, S), H, D),
    "cpmant_weights_used": (functools.partial(_cpmant, used=True), dict(bias_shape=(B, H, S, S)),
                            lambda: ~_hidden_with_empty_row(B, 1, S, S)(), H, D),
    "int_additive_mask": (bert, {}, lambda: torch.randint(-2, 2, (B, 1, 1, S)), H, D),
    "scale_along_keys": (_scale_along_keys, {}, lambda: torch.rand(S) + 0.5, H, D),
    "softcap_two_constants": (gemma2(1.5, 2.0), {}, additive(B, 1, S, S), HKV, D),
    "fsmt_mask_view_heads_first": (_fsmt_heads_first, {}, lambda: torch.rand(1, B, 1, S) < 0.3, H, D),
}
# the routing table (inductor_conv/heuristics/attention.py template_pays): soft-capping at head dim 256 with a mask
# input the pass cannot prove causal is measured slower fused than in Inductor's own graph when the template computes
# every tile (config.attention_mask_ranges off); test_softcap_head_dim_256_routing runs it both ways
ROUTED = {"softcap_d256_mask_input": (gemma2(), {}, additive(B, 1, S, S), HKV, 256)}


def make_left_alone(name):
    spelling, kwargs, mask, hkv, d = LEFT_ALONE[name] if name in LEFT_ALONE else ROUTED[name]
    torch.manual_seed(0)
    model = Attention(spelling, **kwargs)
    args = [torch.randn(B, S, H, d), torch.randn(B, S, hkv, d), torch.randn(B, S, hkv, d)]
    if mask is not None:
        args.append(mask())
    return model, args


# ---------------------------------------------------------------------------------------------------------------
# The dropout probe (p > 0)
# ---------------------------------------------------------------------------------------------------------------
P_DROP = 0.5


def one_hot_probe():
    """q, k random; v = one-hot rows (v[j, j] = 1), so O[..., :S] is the dropped, rescaled P itself."""
    torch.manual_seed(1)
    q, k = torch.randn(B, S, H, D), torch.randn(B, S, H, D)
    v = torch.eye(S, D).expand(B, H, S, D).transpose(1, 2).contiguous()
    return q, k, v
