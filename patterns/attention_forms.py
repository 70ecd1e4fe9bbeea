"""The search/replace table of the attention rewrite: eager attention forms and how each maps onto our op.

Notation: q (B, Hq, Sq, D), k/v (B, Hkv, Sk, D); S = scores (B, Hq, Sq, Sk); P = softmax(S); O = P v.

One search function, ``attention_search``, is plain eager PyTorch assembled from the pieces below according to a
``Form``; ``attention_replacement`` (same signature) calls ``torch.ops.inductor_conv.attention_fwd``. Every piece
names the models it comes from. ``attention.register`` traces each form of ``FORMS`` once per graph kind (training:
joint forward + backward; inference) with GQA and fp32-softmax versions (``attention.variants``).

Some choices are not forms but are read from the matched graph (Note [relaxed attention search patterns] in
``attention_relax.py``): fp32 or half, the layout of q/k/v, dropout or none, the score scale (``* s``, ``/ s``,
``/ math.sqrt(d)``, ``/ torch.full([], s)``, a 0-d tensor, or none) and the query pre-scale (``(q * s) @ kᵀ`` or
none). The pattern binds the scales as ``scale``/``scale_kind`` and ``q_scale``/``q_scale_kind`` and dropout as
``dropout_p``; the kinds are floats (``SCALE_*``) because ``register_replacement`` hands bound non-tensor values
to the replacement untouched, as it does Inductor's own ``dropout_p``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from inductor_conv.ops.attention import dropout_seed, sink_attention, softcap_kwargs


SCALE_NONE, SCALE_MUL, SCALE_DIV = 0.0, 1.0, 2.0

@dataclass(frozen=True)
class Form:
    """One eager attention form. ``mask`` is a key of ``MASKS``; ``scores`` is "matmul" (4-D) or "bmm" (3-D)."""

    name: str
    mask: str = "none"
    scores: str = "matmul"
    gqa: bool = False  # K/V expanded by HF ``repeat_kv``; the op gets the unexpanded K/V (native GQA)
    upcast: bool = False  # softmax in fp32, cast back (HF Llama, T5); differs from plain softmax only in half training
    softcap: bool = False  # the scaled scores soft-capped, tanh(s / cap) * cap, before the mask (HF Gemma 2)
    # a logit joins the softmax as a column, then dropped, spelled as SINKS[sinks]: one per query head (HF gpt-oss,
    # Flint) or per query row (HF Inkling 2); "" for none
    sinks: str = ""
    # the same sinks applied after the softmax: the output scaled by sigmoid(logsumexp(s) - sink) (HF Granite-SWA)
    lse_sinks: bool = False
    # the row max subtracted from the scores before the softmax, which that leaves unchanged (HF MiMo-V2-Flash's
    # full-attention layers; its sliding layers subtract it with gpt-oss's sinks)
    max_subtracted: bool = False
    # the mask added before the scale, (s + mask)·c (HF CodeGen's own ``_attn``, transformers 5.17 and earlier): the
    # op's mask is mask·c, in float32 as eager adds the mask to float32 scores
    mask_then_scale: bool = False
    # the pair's first term (a bias) added before the scale and its second (the mask) after, (s + bias)·c + mask (HF
    # Bros; XLNet, whose mask is subtracted, normalised to an add by graph_pass.subtracted_masks_as_adds): the op's mask
    # is bias·c + mask, in float32
    bias_then_scale: bool = False
    # (a variant, as gqa and upcast are; set on a form, its only one) the additive masks float32 in a half graph,
    # autocast's: where the scale comes after the mask, the backward casts dS to half after the scale's backward
    # instead of before it; MPNet's rounded sum casts the scores back to half between its two masks
    float32_mask: bool = False

    @property
    def takes_sinks(self) -> bool:
        return bool(self.sinks) or self.lse_sinks


# ---------------------------------------------------------------------------------------------------------------
# Masks: (search piece, op mask). ``mask``/``fill``/``padding`` are the pattern's inputs; ``to_op`` returns
# (query, op mask): a bool mask (True = attend) or an additive float mask, broadcastable to (B, Hq, Sq, Sk).
# ---------------------------------------------------------------------------------------------------------------
def _search_none(s, mask, fill, padding):
    return s


def _search_additive(s, mask, fill, padding):
    """BERT/RoBERTa extended mask, HF Llama ``attention_mask[:, :, :, :Sk]``; T5 position bias / ALiBi (learned,
    also on bmm scores: a (B·H or 1, Sq, Sk) parameter)."""
    return s + mask


def _search_additive_pair(s, mask, fill, padding):
    """HF T5 in transformers 5 (``eager_attention_forward``): the position bias, then the attention mask, each
    added to the scores (``mask`` is the first term, ``padding`` the second)."""
    return s + mask + padding


def _search_rounded_pair(s, mask, fill, padding):
    """HF MPNet under autocast: ``scores += position_bias`` in place, so half scores plus a float32 bias are rounded
    back to half, then ``+ attention_mask`` (float32)."""
    return (s + mask).to(s.dtype) + padding


def _search_masked_fill(s, mask, fill, padding):
    """nanoGPT ``masked_fill(bias[:, :, :T, :T] == 0, -inf)`` (``mask`` is the ``== 0`` node, outside the pattern);
    HF ``masked_fill(mask, finfo(dtype).min)``."""
    return s.masked_fill(mask, fill)


def _search_window_pair(s, mask, fill, padding):
    """HF Donut-Swin, MaskFormer-Swin, Swin2SR, CLAP's HTSAT (Swin's spelling before transformers 5.24): the
    relative position bias added to the (B·nW, H, S, S) window scores, then each window's shift mask ``padding``
    (1, nW, 1, S, S) added on a (B, nW, H, S, S) view, viewed back."""
    s = s + mask
    windows = padding.shape[1]
    return (s.view(-1, windows, *s.shape[1:]) + padding).view(-1, *s.shape[1:])


def _search_masked_fill_heads(s, mask, fill, padding):
    """HF FSMT (fairseq's ``key_padding_mask``): the (B·H, Sq, Sk) bmm scores viewed as (B, H, Sq, Sk) for a
    (B, 1, 1, Sk) bool mask, ``masked_fill(mask, finfo.min)``, viewed back."""
    return s.view(mask.shape[0], -1, *s.shape[1:]).masked_fill(mask, fill).view(s.shape)


def _search_where(s, mask, fill, padding):
    """HF GPT-2 ``torch.where(causal, s, torch.full([], finfo(dtype).min))`` (True = attend)."""
    return torch.where(mask, s, torch.full([], fill, dtype=s.dtype, device=s.device))


def _search_where_scalar(s, mask, fill, padding):
    """``torch.where(causal, s, torch.finfo(s.dtype).min)`` or ``float("-inf")``: GPT-2's where with a Python
    number for the fill (a ``scalar_tensor`` in the graph, where GPT-2's 0-d tensor is a ``full``)."""
    return torch.where(mask, s, fill)


def _search_where_padding(s, mask, fill, padding):
    """HF GPT-2 with a padding ``attention_mask``: the causal ``where``, then ``+ attention_mask``."""
    return _search_where(s, mask, fill, padding) + padding


def _search_where_scalar_padding(s, mask, fill, padding):
    """The same with a Python number for the fill."""
    return _search_where_scalar(s, mask, fill, padding) + padding


# Note [finite fill]: masked_fill(m, finfo.min) and GPT-2's where(keep, s, finfo.min) differ from a -inf mask
# only on a query row whose keys are all hidden: eager gives that row a uniform softmax and, since the fill
# replaces the scores, zero gradient to its scores. The replacement unhides such rows and zeroes their q (scores
# 0, so uniform; q's and k's gradients through them 0) and passes a bool mask; every other row is unchanged, as
# exp(finfo.min - max) == 0 == exp(-inf - max). A -inf fill keeps our convention (an all-hidden row is 0, where
# eager gives NaN).
def _unhide_empty_rows(query, keep, fill):
    if fill == -math.inf:
        return query, keep
    empty = ~keep.any(dim=-1, keepdim=True)  # (..., Sq, 1): rows eager fills entirely with finfo.min
    return torch.where(empty, 0.0, query).to(query.dtype), keep | empty


def _op_mask_none(query, mask, fill, padding):
    return query, None


def _op_mask_additive(query, mask, fill, padding):
    """``scores + mask``: a bool mask adds 1.0 where True in eager (type promotion), while the op reads a bool mask
    as attend / hide, so it gets the 0 / 1 values as an additive mask in the scores' dtype."""
    return query, (mask if mask.is_floating_point() else mask.to(query.dtype))


def _op_mask_additive_pair(query, mask, fill, padding):
    """``(scores + mask) + padding``: one additive mask, their sum (each term as ``_op_mask_additive`` reads it). The
    sum rounds once where eager rounds the scores twice; a term's gradient is the sum's, reduced to its shape."""
    _, mask = _op_mask_additive(query, mask, fill, padding)
    _, padding = _op_mask_additive(query, padding, fill, padding)
    return query, mask + padding


def _op_mask_window_pair(query, mask, fill, padding):
    """The bias plus the window mask, (B·nW, H or 1, S, S): window w's mask goes to the batch rows b·nW + w, where
    the (B, nW, H, S, S) view put it (attention_checks.window_mask_splits_batch proves the views)."""
    batch, windows = query.shape[0], padding.shape[1]
    window = padding.expand(batch // windows, *padding.shape[1:]).reshape(batch, *padding.shape[2:])
    return _op_mask_additive_pair(query, mask, fill, window)


def _op_mask_masked_fill(query, mask, fill, padding):
    return _unhide_empty_rows(query, ~mask, fill)  # masked_fill hides True entries


def _op_mask_where(query, mask, fill, padding):
    return _unhide_empty_rows(query, mask, fill)  # where keeps True entries


def _op_mask_where_padding(query, mask, fill, padding):
    query, keep = _unhide_empty_rows(query, mask, fill)
    return query, torch.where(keep, 0.0, -math.inf) + padding.float()


@dataclass(frozen=True)
class MaskPiece:
    search: object
    to_op: object
    inputs: tuple[str, ...]  # which of mask/fill/padding the pattern binds
    learned: bool = False  # the mask requires grad (its gradient is a pattern output)
    window: bool = False  # Swin's window mask: the scores are viewed (B, nW, H, S, S) to add it


MASKS = {
    "none": MaskPiece(_search_none, _op_mask_none, ()),
    "additive": MaskPiece(_search_additive, _op_mask_additive, ("mask",)),
    "bias": MaskPiece(_search_additive, _op_mask_additive, ("mask",), learned=True),
    "additive_pair": MaskPiece(_search_additive_pair, _op_mask_additive_pair, ("mask", "padding")),
    "bias_pair": MaskPiece(_search_additive_pair, _op_mask_additive_pair, ("mask", "padding"), learned=True),
    # the op adds the float32 sum to its float32 scores: eager's rounding of s + mask to half is not repeated (the
    # op's scores are more exact, as for every half form)
    "additive_rounded_pair": MaskPiece(_search_rounded_pair, _op_mask_additive_pair, ("mask", "padding")),
    "bias_rounded_pair": MaskPiece(_search_rounded_pair, _op_mask_additive_pair, ("mask", "padding"), learned=True),
    # Swin's window mask (``padding``) after its position bias (``mask``; trained in "bias_window")
    "additive_window": MaskPiece(_search_window_pair, _op_mask_window_pair, ("mask", "padding"), window=True),
    "bias_window": MaskPiece(_search_window_pair, _op_mask_window_pair, ("mask", "padding"), learned=True,
                             window=True),
    "masked_fill": MaskPiece(_search_masked_fill, _op_mask_masked_fill, ("mask", "fill")),
    # q, k, v reach the op with the mask's batch split off (attention_replacement), so its to_op is masked_fill's
    "masked_fill_heads": MaskPiece(_search_masked_fill_heads, _op_mask_masked_fill, ("mask", "fill")),
    "where": MaskPiece(_search_where, _op_mask_where, ("mask", "fill")),
    "where_scalar": MaskPiece(_search_where_scalar, _op_mask_where, ("mask", "fill")),
    "where_padding": MaskPiece(_search_where_padding, _op_mask_where_padding, ("mask", "fill", "padding")),
    "where_scalar_padding": MaskPiece(_search_where_scalar_padding, _op_mask_where_padding,
                                      ("mask", "fill", "padding")),
}


# ---------------------------------------------------------------------------------------------------------------
# The forms. Search and replacement share one signature: the names in ``argnames(form)``.
# ---------------------------------------------------------------------------------------------------------------
def repeat_kv(x, n_rep: int):
    """HF Llama ``repeat_kv``: (B, Hkv, S, D) -> (B, Hkv * n_rep, S, D)."""
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


def _apply_scale(x, scale, kind):
    if kind == SCALE_MUL:
        return x * scale
    if kind == SCALE_DIV:
        return x / scale
    return x


def _softcap(s, softcap):
    """HF Gemma 2 (``attn_logit_softcapping``): ``s / softcap``, ``tanh``, ``* softcap``."""
    return torch.tanh(s / softcap) * softcap


def _gpt_oss_sinks(s, sinks, dtype):
    """HF gpt-oss (``eager_attention_forward``): each head's sink logit appended to every row, the row max
    subtracted, softmax in the scores' dtype, the sink's column dropped (Note [attention sinks] in ops/attention.py)."""
    sink = sinks.reshape(1, -1, 1, 1).expand(s.shape[0], -1, s.shape[-2], -1)
    combined = torch.cat([s, sink], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    # the slice is a strided view that P @ v copies (a clone in the graph) unless dropout's product came first:
    # the traced clone is optional (attention_relax), so both graphs match
    return F.softmax(combined, dim=-1, dtype=combined.dtype)[..., :-1].clone()


def _flint_sinks(s, sinks, dtype):
    """HF Flint: gpt-oss's sinks joined to scores that are float32 in every model (q and k upcast; the traced cast
    makes the sinks' gradient a cast of the float32 column's, as in a half model's graph), no row max subtracted
    (the softmax shifts each row itself), the probabilities cast to ``dtype``."""
    s = s.float()
    combined = torch.cat([s, sinks.reshape(1, -1, 1, 1).expand(s.shape[0], -1, s.shape[-2], -1)], dim=-1)
    return F.softmax(combined, dim=-1, dtype=combined.dtype)[..., :-1].clone().to(dtype)


def _inkling2_sinks(s, sinks, dtype):
    """HF Inkling 2: one sink logit per query row, (B, Hq, Sq) unsqueezed to the column appended, the joined scores'
    softmax in float32, cast to ``dtype``. (The unsqueeze's squeeze in the backward tells the sinks' gradient, a
    slice of the joined scores', from the scores' own slice: two bare slices differing only in their ignored ints
    would both bind the first one.)"""
    combined = torch.cat([s, sinks.unsqueeze(-1)], dim=-1).float()
    return F.softmax(combined, dim=-1)[..., :-1].clone().to(dtype)


SINKS = {"gpt_oss": _gpt_oss_sinks, "flint": _flint_sinks, "inkling2": _inkling2_sinks}


def _lse_sink_scale(s, sinks):
    """HF Granite-SWA: ``sigmoid(logsumexp(s) - sink)`` per row in float32, the factor by which a sink logit in the
    softmax's denominator shrinks the row's output: exp(LSE) / (exp(LSE) + exp(sink)) (Note [attention sinks] in
    ops/attention.py)."""
    lse = torch.logsumexp(s, dim=-1)
    return (lse - sinks.view(1, -1, 1)).to(torch.float32).sigmoid()


def probabilities(s, dtype, upcast: bool, dropout_p, sinks=None, spelling: str = ""):
    """softmax over the keys (with ``sinks``: as SINKS[spelling]; ``upcast``: in fp32, cast back to ``dtype``), then
    dropout (optional in the relaxed pattern: dropout_p = 0 when the graph has none)."""
    if sinks is not None:
        p = SINKS[spelling](s, sinks, dtype)
    elif upcast:
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(dtype)
    else:
        p = F.softmax(s, dim=-1)
    return F.dropout(p, dropout_p)


def attention_search(query, key, value, mask, fill, padding, sinks, scale, scale_kind, q_scale, q_scale_kind,
                     softcap, dropout_p, *, form: Form):
    """Eager attention as the models write it; the arguments a form does not use are never read."""
    if form.gqa:
        n_rep = query.shape[1] // key.shape[1]
        key, value = repeat_kv(key, n_rep), repeat_kv(value, n_rep)
    query = _apply_scale(query, q_scale, q_scale_kind)
    if form.scores == "bmm":
        s = torch.bmm(query, key.transpose(1, 2))
    else:
        s = torch.matmul(query, key.transpose(-2, -1))
    if form.mask_then_scale:
        s = _apply_scale(MASKS[form.mask].search(s, mask, fill, padding), scale, scale_kind)
    elif form.bias_then_scale:
        s = _apply_scale(s + mask, scale, scale_kind) + padding
    else:
        s = _apply_scale(s, scale, scale_kind)
        if form.softcap:
            s = _softcap(s, softcap)
        s = MASKS[form.mask].search(s, mask, fill, padding)
    if form.lse_sinks:
        sink_scale = _lse_sink_scale(s, sinks)
    if form.max_subtracted:
        s = s - s.max(dim=-1, keepdim=True).values
    p = probabilities(s, query.dtype, form.upcast, dropout_p, sinks if form.sinks else None, form.sinks)
    out = torch.bmm(p, value) if form.scores == "bmm" else torch.matmul(p, value)
    if form.lse_sinks:
        out = out * sink_scale.unsqueeze(-1).to(out.dtype)
    return out


def _op_scale(query, scale, kind):
    """(query, float scale) for the op. A tensor scale without a compile-time value (``/ math.sqrt(d)`` under
    dynamic shapes, a 0-d tensor input) or of row factors (one per head or per query row) pre-scales q instead:
    (q / s) kᵀ == (q kᵀ) / s up to rounding. So does a
    number that is not positive: the op takes positive scales only (the kernels fold the scale into exp2 after the
    row max), and ``/ 0`` must give eager's infinities, not a ZeroDivisionError while compiling.
    (``torch.full([], s)`` arrives here as the number s: attention_relax reads the constant.)"""
    if kind == SCALE_NONE:
        return query, 1.0
    if isinstance(scale, torch.Tensor) or not scale > 0:
        # a float32 tensor of row factors (SwinV2's per-head scale) would widen a half q: q keeps its dtype
        return _apply_scale(query, scale, kind).to(query.dtype), 1.0
    return query, (scale if kind == SCALE_MUL else 1.0 / scale)


def attention_replacement(query, key, value, mask, fill, padding, sinks, scale, scale_kind, q_scale, q_scale_kind,
                          softcap, dropout_p, *, form: Form):
    split_heads = form.mask == "masked_fill_heads"
    if split_heads:  # (B·H, S, D) -> (B, H, S, D), B the mask's batch (attention_checks.mask_splits_heads)
        query, key, value = (x.unflatten(0, (mask.shape[0], -1)) for x in (query, key, value))
    query, op_scale = _op_scale(query, scale, scale_kind)
    query, op_q_scale = _op_scale(query, q_scale, q_scale_kind)
    if form.bias_then_scale:  # (s + bias)·c + mask == s·c + (bias·c + mask)
        _, bias = _op_mask_additive(query, mask, fill, padding)
        _, attn_mask = _op_mask_additive(query, padding, fill, padding)
        attn_mask = _apply_scale(bias.float(), scale, scale_kind) + attn_mask
    else:
        query, attn_mask = MASKS[form.mask].to_op(query, mask, fill, padding)
    if form.mask_then_scale:  # (s + mask)·c == s·c + mask·c
        attn_mask = _apply_scale(attn_mask.float(), scale, scale_kind)
    if form.scores == "bmm" and not split_heads:  # (B·H, S, D) -> (1, B·H, S, D); the mask broadcasts over (Sq, Sk)
        query, key, value = query[None], key[None], value[None]
    B, Hq, Sq, _ = query.shape
    if attn_mask is not None:
        attn_mask = attn_mask.expand(B, Hq, Sq, key.shape[-2])  # a view: broadcast dims get stride 0
    out = attention_op(query, key, value, attn_mask, dropout_p, op_scale * op_q_scale,
                       softcap if form.softcap else 0.0, sinks if form.takes_sinks else None)
    if split_heads:
        return out.flatten(0, 1)
    return out.squeeze(0) if form.scores == "bmm" else out


# Note [float32 scores]
# GPT-Neo, GPT-J and CodeGen compute their scores in float32 from half q and k (``query.to(torch.float32)``,
# ``key.to(torch.float32)``), take the softmax in float32 and cast the probabilities to v's half dtype before
# ``@ v``. float16 and bfloat16 values are exactly float32 values, so those scores are the products of the half q
# and k summed in float32, which is what the kernels compute from the half q and k (their dots accumulate in float32),
# up to the order of the sum. ``qkv_consistent`` proves that the matched q and k are such upcasts, and the replacement
# casts them back to v's dtype (exact) and calls the op in half. Their gradients come back in half, are cast to
# float32 where the match returns them, and the graph's own casts take them to half again. The backward rounds dS to
# half before dS·K, as every half attention backward does (FlashAttention's, SDPA's), where eager multiplies float32
# dS by float32 K.
def attention_op(query, key, value, attn_mask, dropout_p, scale, softcap=0.0, sinks=None):
    """The op's output as a replacement calls it (with ``sinks``: the op with sinks, Note [attention sinks] in
    ops/attention.py): q and k in v's dtype (Note [float32 scores]; the identity when they are), not causal (a
    causal mask is inferred after the rewrite, attention_causal.py), the dropout seed drawn."""
    query, key = query.to(value.dtype), key.to(value.dtype)
    seed = dropout_seed(dropout_p, query.device)
    if sinks is not None:
        return sink_attention(query, key, value, attn_mask, sinks, float(dropout_p), False, float(scale), seed,
                              softcap)
    out, _ = torch.ops.inductor_conv.attention_fwd(query, key, value, attn_mask, float(dropout_p), False,
                                                   float(scale), seed, **softcap_kwargs(softcap))
    return out


def argnames(form: Form) -> tuple[str, ...]:
    """The pattern inputs of a form, in signature order: tensors, then the scalars the relaxed pattern binds, then
    the sentinel scalars (fill, dropout_p) last, where older ``register_replacement``s expect them (they index
    requires_grad by example input, which the sentinels are not)."""
    tensors = [n for n in MASKS[form.mask].inputs if n != "fill"] + (["sinks"] if form.takes_sinks else [])
    sentinels = ["fill"] if "fill" in MASKS[form.mask].inputs else []
    sentinels += ["softcap"] if form.softcap else []
    return ("query", "key", "value", *tensors, "scale", "scale_kind", "q_scale", "q_scale_kind", *sentinels,
            "dropout_p")


# Model-named forms; ``attention.variants`` adds the fp32-softmax and GQA versions where they exist.
FORMS = (
    Form("bert_no_mask"),
    Form("bert_additive_mask", mask="additive"),
    Form("t5_learned_bias", mask="bias"),
    Form("t5_bias_then_mask", mask="bias_pair"),
    Form("two_additive_masks", mask="additive_pair"),
    # HF MPNet under autocast (its float32 position bias added in place, then the float32 mask)
    Form("mpnet_bias_rounded_then_mask", mask="bias_rounded_pair", float32_mask=True),
    Form("mpnet_rounded_then_mask", mask="additive_rounded_pair", float32_mask=True),
    Form("swin_bias_then_window_mask", mask="additive_window"),
    Form("swin_learned_bias_then_window_mask", mask="bias_window"),
    Form("nanogpt_masked_fill", mask="masked_fill"),
    Form("hf_gpt2_where", mask="where"),
    Form("hf_gpt2_where_padding", mask="where_padding"),
    Form("where_scalar_fill", mask="where_scalar"),
    Form("where_scalar_fill_padding", mask="where_scalar_padding"),
    Form("bmm_3d", scores="bmm"),
    Form("bmm_3d_additive_mask", scores="bmm", mask="additive"),
    Form("bmm_3d_learned_bias", scores="bmm", mask="bias"),
    Form("bmm_3d_masked_fill", scores="bmm", mask="masked_fill"),
    Form("fsmt_bmm_masked_fill_heads", scores="bmm", mask="masked_fill_heads"),
    Form("bmm_3d_where", scores="bmm", mask="where"),
    Form("bmm_3d_where_scalar_fill", scores="bmm", mask="where_scalar"),
    Form("gemma2_softcap_additive_mask", mask="additive", softcap=True),
    Form("softcap_no_mask", softcap=True),
    Form("gpt_oss_sinks_additive_mask", mask="additive", sinks="gpt_oss"),
    Form("sinks_no_mask", sinks="gpt_oss"),
    Form("flint_float32_sinks_additive_mask", mask="additive", sinks="flint"),
    # Inkling 2: a position bias computed from the hidden states (trained through; fixed in inference), the mask,
    # sinks per query row
    Form("inkling2_bias_then_mask_query_sinks", mask="bias_pair", sinks="inkling2"),
    Form("inkling2_two_additive_masks_query_sinks", mask="additive_pair", sinks="inkling2"),
    Form("query_sinks_additive_mask", mask="additive", sinks="inkling2"),
    Form("granite_swa_lse_sinks_additive_mask", mask="additive", lse_sinks=True),
    Form("mimo_max_subtracted_additive_mask", mask="additive", max_subtracted=True),
    Form("codegen_mask_then_scale", mask="additive", mask_then_scale=True),
    # HF Bros (a bias computed from q, trained through) and XLNet (its relative-position term, the same; the segment
    # term absent): a bias added before the scale, the mask after
    Form("bros_bias_then_scale_then_mask", mask="bias_pair", bias_then_scale=True),
    Form("xlnet_additive_then_scale_then_mask", mask="additive_pair", bias_then_scale=True),
)
