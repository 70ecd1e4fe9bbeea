"""Rewrite attention in the spellings of single HF model families that the form table (attention_forms.py) does not
cover into ``torch.ops.inductor_conv.attention_fwd``: BLOOM's, MPT's and Falcon's ALiBi, XGLM's and the older BART
spelling's 3-D scores viewed to 4-D for the mask, GPT-NeoX-Japanese's BLOOM-like scores onto zeros, DeBERTa's
disentangled position bias on scaled keys, torch's ``nn.MultiheadAttention`` with a mask.

HF BLOOM (``BloomAttention.forward``; bloom-560m ... bloom-176b, bloomz) writes::

    q3 = q.reshape(B * H, Sq, D); k3 = k.reshape(B * H, Sk, D).transpose(-1, -2); v3 = v.reshape(B * H, Sk, D)
    s = alibi.baddbmm(batch1=q3, batch2=k3, beta=1.0, alpha=1 / sqrt(D))    # alibi (B·H, 1, Sk)
    s = s.view(B, H, Sq, Sk) + attention_mask                              # mask (B, 1, Sq, Sk), 0 / finfo.min
    p = dropout(softmax(s, dim=-1, dtype=float32).to(q.dtype))
    o3 = torch.bmm(p.view(B * H, Sq, Sk), v3)                             # (B·H, Sq, D)

The scores are ``alpha·q kᵀ + alibi + mask``: attention with scale ``alpha`` and one additive mask, the sum of the
ALiBi bias (viewed as (B, H, Sq or 1, Sk)) and the mask. The replacement adds the two (ALiBi varies with (b, h, key),
the mask with (b, query, key), so their sum is a (B, H, Sq, Sk) tensor in their dtype) and calls the op on the 4-D
q, k, v; its output, viewed back as (B·H, Sq, D), is the match's. The sum rounds where eager's bf16 scores round
anyway: a 0 / finfo.min mask adds to ALiBi exactly.

HF MPT (``MptAttention.forward``; mpt-7b, mpt-30b) adds its ALiBi buffer (H, 1, Sk) to the scaled 4-D scores and then
hides keys with ``masked_fill(mask, finfo.min)`` (a bool mask, True = hidden)::

    s = torch.matmul(q, k.transpose(-1, -2)) * scale + position_bias
    p = dropout(softmax(s.masked_fill(mask, finfo.min).float(), dim=-1).to(v.dtype))
    o = torch.matmul(p, v)

The op's mask is the bias where a key is visible and -inf where hidden. A row whose keys are all hidden gets, as in
eager, a uniform softmax and no gradient to its scores: its q is zeroed and its mask row is 0 (Note [finite fill] in
attention_forms.py, which this extends to a bias).

HF Falcon with ALiBi (``FalconAttention.forward`` with ``config.alibi``; falcon-rw-1b, falcon-rw-7b) adds its ALiBi
(B, H, 1, Sk) to float32 scores before the scale, and the model adds it again, scaled, inside the mask it passes to
every layer (``masked_fill(alibi / sqrt(D), causal < -1, finfo.min)``, (B, H, Sq, Sk))::

    s = (q @ k.transpose(-1, -2)).view(B, H, Sq, Sk).float()          # the cast only in half models
    s = (s + alibi.view(B, H, 1, Sk)) * inv_norm_factor                # 1 / sqrt(D)
    p = dropout(softmax(s + attention_mask, dim=-1, dtype=hidden_states.dtype))
    o = (p @ v).flatten(0, 1)

That is ``s·c + (alibi·c + mask)``: attention with scale c and one additive mask, which the replacement forms in
float32 (eager's scores are float32 there, and ALiBi's values reach S·slope, which a half sum would round). A row
whose keys the mask all hide holds finfo.min plus small terms in eager and in the sum alike: uniform in both. K and
V of multi-query configs (one head, broadcast by ``matmul``) go to the op unexpanded, as in Falcon's rotary form.

HF GPT-NeoX-Japanese (``GPTNeoXJapaneseAttention._attn``) computes BLOOM's scores onto a zero bias,
``torch.baddbmm(torch.zeros(B·H, Sq, Sk), q3, k3ᵀ, beta=1.0, alpha=1 / norm_factor)``, views them to 4-D for the
mask and ends with a 4-D ``torch.matmul(p, v)``: BLOOM's replacement (the zeros are the bias), the op's 4-D output.

HF XGLM (``XGLMAttention.forward``; xglm-564M ... xglm-7.5B) folds the heads into the batch as BLOOM does, with q
already scaled by its projection, and adds the mask on a 4-D view of the scores, clamped::

    s = torch.bmm(q3, k3.transpose(1, 2)).view(B, H, Sq, Sk) + attention_mask
    s = torch.max(s, torch.full((), finfo(s.dtype).min)).view(B * H, Sq, Sk)
    p = dropout(softmax(s, dim=-1).view(B, H, Sq, Sk).view(B * H, Sq, Sk))      # fp32 softmax for fp16
    o3 = torch.bmm(p, v3)

That is attention with scale 1 and the additive mask. The clamp only turns scores below finfo.min (a -inf mask entry,
an fp16 sum that overflowed) into finfo.min; the op adds the mask in float32, where a finfo.min entry stays at least
as far below the row's other scores, so a hidden key keeps probability 0, as the clamped one does. (A row with every
key hidden differs only for a float16 mask: eager's clamp makes it uniform, the op gives the softmax of its scores.)

The older HF BART spelling, kept in 5.x by TrOCR, MVP, LED, FSMT, SpeechT5 and others (``attn_weights.view(bsz,
self.num_heads, tgt_len, src_len) + attention_mask``), is XGLM's without the clamp: the form ``bart_masked_bmm``
shares its scores and its replacement.

HF DeBERTa-v2 and -v3 (``DisentangledSelfAttention``; deberta-v3-base/large, mdeberta) keep their heads as
(B·H, S, D) tensors, divide kᵀ by a 0-d tensor made in the graph (``sqrt(D·factor)``, factor 1 + the number of
relative terms) and add the disentangled position bias, computed from q and k (content-to-position and
position-to-content bmms and gathers), before viewing the scores to 4-D for the mask::

    s = torch.bmm(q3, k3.transpose(-1, -2) / scale) + rel_att              # rel_att (B·H, Sq, Sk), trained
    s = s.view(-1, H, Sq, Sk).masked_fill(~mask, finfo.min)                # mask (B, 1, Sq, Sk) bool
    p = dropout(softmax(s, dim=-1))
    o3 = torch.bmm(p.view(-1, Sq, Sk), v3)

The replacement splits the mask's batch off q, k and v (a view, as FSMT's form does; ``mask_splits_heads`` proves
every view splits (B·H) as (B, H)), gives the op the keys divided by the scale (the same elementwise division eager
does, so the same rounded keys) with scale 1, and MPT's mask: the bias where a key is visible, -inf where hidden,
rows hidden entirely uniform. The bias's gradient is the op's (from dS), through that ``where``: 0 where hidden, as
masked_fill's backward gives. Without relative attention (``deberta_key_scaled``) there is no bias and the mask is
the bool one. Its kᵀ is read by the position-to-content bmm's backward too: ``checks.no_outside_users`` lets views of
the pattern's inputs keep outside readers, since the rewrite leaves them as they are.

torch's own ``F.multi_head_attention_forward`` (``nn.MultiheadAttention``, whose ``need_weights=True`` default makes
it compute the weights by hand rather than call SDPA) scales q, and with a mask (a bool or float ``attn_mask`` and a
``key_padding_mask``, which it merges into one float mask of 0 and -inf) adds it through ``baddbmm``::

    s = torch.baddbmm(mask, q3 * D ** -0.5, k3.transpose(-2, -1))         # (B·H, L, D) heads, mask (B·H or 1, L, S)
    o3 = torch.bmm(dropout(softmax(s, dim=-1)), v3)

The form ``torch_mha_baddbmm`` gives the op the 3-D heads as one batch of B·H heads (as the table's bmm forms do),
the scale, and the mask broadcast to them; the weights the function also returns are dead code once the caller drops
them (``out, _ = mha(...)``). Without a mask it calls ``bmm`` and the table's ``bmm_3d`` form matches. HF WavLM
calls the function with its gated relative position bias as ``attn_mask``, a (B·H, S, S) float tensor computed from
the hidden states and trained (the key padding mask added to it): ``torch_mha_baddbmm_learned_mask`` is the same form
traced with the mask requiring grad, whose gradient is the op's (from dS; 0 where a key is hidden, as eager's), and
``torch_mha_baddbmm_learned_broadcast_mask`` the same for a trained (L, S) ``attn_mask`` without a key padding mask
(the function broadcasts it over the heads as (1, L, S); its gradient is dS summed over them).

A capability of its own (not forms of ``attention_forms.py``): BLOOM's and XGLM's search functions reshape 4-D inputs
to 3-D and BLOOM's holds a ``baddbmm``, and the shipped patterns of these forms have their own file and key (Note
[pattern cache]), so adding them left the attention table's shipped patterns valid. It shares the attention
rewrite's widening (``relax``: optional layout copies, dtype converts, dropout, scale spellings and gradients), its
predicates, its counter (``counters()["attention"]``) and its partial-gradient handling (Note [partial gradients] in
attention.py).

What the patterns ignore and the checks prove, besides the attention rewrite's own (softmax over the last dim, kᵀ,
dropout, the fill, no user outside the match): for BLOOM ``beta == 1`` and a positive finite ``alpha``
(``baddbmm_scaled_scores``), every reshape in the match splits or merges exactly the (B, H) dims of q, k, v, the
scores and the probabilities (``reshapes_split_batch_heads``), the bias broadcasts to the 3-D scores
(``alibi_supported``); for MPT the bias is a float tensor and the mask a bool one, each broadcasting to the scores
(``bias_and_hidden_supported``); for Falcon the bias and the mask are float tensors, each broadcasting to the
scores (``alibi_and_mask_supported``); for XGLM the reshapes as BLOOM's and the clamp at finfo.min of the scores' dtype
(``clamp_at_finfo_min``); for DeBERTa the mask's batch splitting every view, the divisor a 0-d floating tensor
and the bias broadcasting to the 3-D scores (``deberta_inputs_supported``); for torch's multi-head attention
3-D heads, ``baddbmm`` with beta and alpha 1, and a mask broadcasting to the 3-D scores that needs no gradient
(``mha_mask_supported``) or is trained (``mha_learned_mask_supported``). Only DeBERTa's bias and WavLM's mask are
trained (their gradients come from dS, the patterns traced with them requiring grad); the other forms leave a bias
that requires grad alone.
"""
from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass

import torch

from inductor_conv.patterns import attention_checks as checks
from inductor_conv.patterns.attention import SENTINELS, Registration, register_all
from inductor_conv.patterns.attention_checks import _nodes, _same_shape, _shape, _val
from inductor_conv.patterns.attention_forms import (
    SCALE_MUL,
    SCALE_NONE,
    _apply_scale,
    _op_mask_masked_fill,
    _op_scale,
    attention_op,
    probabilities,
)
from inductor_conv.patterns.rewrite_log import predicate

aten = torch.ops.aten

# baddbmm's alpha joins the attention rewrite's sentinels (attention.SENTINELS): a float equal to it in the trace
# becomes KeywordArg("alpha"), in the forward's baddbmm and in the backward's ``* alpha`` alike.
_SENTINELS = {"alpha": 0.337711, **SENTINELS}
# Example shapes (as attention.py's): sizes distinct enough that the trace keeps every op.
_B, _H, _S, _D = 2, 4, 8, 16


def _baddbmm_probabilities(query, key, alibi, mask, alpha, dropout_p, upcast: bool):
    """BLOOM's and GPT-NeoX-Japanese's scores (module docstring) and their probabilities, (B, H, Sq, Sk)."""
    B, H, Sq, D = query.shape
    Sk = key.shape[-2]
    q = query.reshape(B * H, Sq, D)
    k = key.reshape(B * H, Sk, D).transpose(-1, -2)
    s = alibi.baddbmm(q, k, beta=1.0, alpha=alpha)
    return probabilities(s.view(B, H, Sq, Sk) + mask, query.dtype, upcast, dropout_p)


def alibi_baddbmm_search(query, key, value, alibi, mask, alpha, dropout_p, *, upcast: bool):
    """HF BLOOM's attention (module docstring); ``upcast``: the softmax in fp32, cast back."""
    B, H, Sq, Sk = query.shape[0], query.shape[1], query.shape[2], key.shape[-2]
    p = _baddbmm_probabilities(query, key, alibi, mask, alpha, dropout_p, upcast)
    return torch.bmm(p.view(B * H, Sq, Sk), value.reshape(B * H, Sk, value.shape[-1]))


def baddbmm_matmul_search(query, key, value, alibi, mask, alpha, dropout_p, *, upcast: bool):
    """HF GPT-NeoX-Japanese's attention (module docstring): BLOOM's scores onto zeros, a 4-D ``matmul`` with v."""
    return torch.matmul(_baddbmm_probabilities(query, key, alibi, mask, alpha, dropout_p, upcast), value)


def _baddbmm_op(query, key, value, alibi, mask, alpha, dropout_p):
    B, H, Sq, _ = query.shape
    Sk = key.shape[-2]
    # (B·H, Sq or 1, Sk) -> (B, H, Sq, Sk): the expand broadcasts, the view splits dim 0 (always a view)
    bias = alibi.expand(B * H, Sq, Sk).view(B, H, Sq, Sk)
    attn_mask = (bias + mask).expand(B, H, Sq, Sk)
    return attention_op(query, key, value, attn_mask, dropout_p, float(alpha))


def alibi_baddbmm_replacement(query, key, value, alibi, mask, alpha, dropout_p, *, upcast: bool):
    out = _baddbmm_op(query, key, value, alibi, mask, alpha, dropout_p)
    return out.reshape(query.shape[0] * query.shape[1], query.shape[2], value.shape[-1])


def baddbmm_matmul_replacement(query, key, value, alibi, mask, alpha, dropout_p, *, upcast: bool):
    return _baddbmm_op(query, key, value, alibi, mask, alpha, dropout_p)


def alibi_masked_fill_search(query, key, value, bias, hidden, scale, scale_kind, fill, dropout_p, *, upcast: bool):
    """HF MPT's attention (module docstring)."""
    s = _apply_scale(torch.matmul(query, key.transpose(-1, -2)), scale, scale_kind) + bias
    return torch.matmul(probabilities(s.masked_fill(hidden, fill), query.dtype, upcast, dropout_p), value)


def alibi_masked_fill_replacement(query, key, value, bias, hidden, scale, scale_kind, fill, dropout_p, *,
                                  upcast: bool):
    query, op_scale = _op_scale(query, scale, scale_kind)
    keep = ~hidden
    attn_mask = torch.where(keep, bias, -math.inf)
    if fill != -math.inf:  # Note [finite fill]: a row eager fills entirely is uniform, and passes no gradient to s
        empty = ~keep.any(dim=-1, keepdim=True)
        query = torch.where(empty, 0.0, query).to(query.dtype)
        attn_mask = torch.where(empty, 0.0, attn_mask)
    B, H, Sq, _ = query.shape
    attn_mask = attn_mask.expand(B, H, Sq, key.shape[-2])
    return attention_op(query, key, value, attn_mask, dropout_p, float(op_scale))


def falcon_alibi_search(query, key, value, alibi, mask, scale, scale_kind, dropout_p, *, upcast: bool):
    """HF Falcon with ALiBi (module docstring): float32 logits cast to the model's dtype for the softmax (``upcast``:
    taken in fp32 and cast back; an optional convert in the relaxed pattern, so both match Falcon's graph)."""
    s = torch.matmul(query, key.transpose(-1, -2)).float()
    s = _apply_scale(s + alibi, scale, scale_kind) + mask
    return torch.matmul(probabilities(s.to(query.dtype), query.dtype, upcast, dropout_p), value)


def falcon_alibi_replacement(query, key, value, alibi, mask, scale, scale_kind, dropout_p, *, upcast: bool):
    query, op_scale = _op_scale(query, scale, scale_kind)
    # (s + alibi)·c + mask == s·c + (alibi·c + mask); the bias in float32, as eager adds it to its float32 scores
    bias = _apply_scale(alibi.float(), scale, scale_kind) + mask.float()
    B, H, Sq, _ = query.shape
    return attention_op(query, key, value, bias.expand(B, H, Sq, key.shape[-2]), dropout_p, float(op_scale))


def _masked_bmm_scores(query, key, value, mask, fill):
    """XGLM's and the older BART spelling's scores: (B·H)-batched ``bmm``, the mask added on a 4-D view, (XGLM) the
    clamp at ``fill``, viewed back to 3-D; and v as (B·H, Sk, D_v)."""
    B, H, Sq, D = query.shape
    Sk = key.shape[-2]
    q = query.reshape(B * H, Sq, D)
    k = key.reshape(B * H, Sk, D)
    s = torch.bmm(q, k.transpose(1, 2)).view(B, H, Sq, Sk) + mask
    if fill is not None:
        s = torch.max(s, torch.full((), fill, dtype=s.dtype, device=s.device))
    return s.view(B * H, Sq, Sk), value.reshape(B * H, Sk, value.shape[-1])


def clamped_bmm_search(query, key, value, mask, fill, dropout_p, *, upcast: bool):
    """HF XGLM's attention (module docstring)."""
    s, v = _masked_bmm_scores(query, key, value, mask, fill)
    # (XGLM views p to 4-D and back, for the weights it may return: the pass removes that no-op pair before matching)
    return torch.bmm(probabilities(s, query.dtype, upcast, dropout_p), v)


def masked_bmm_search(query, key, value, mask, dropout_p, *, upcast: bool):
    """The older BART spelling (module docstring): XGLM's without the clamp."""
    s, v = _masked_bmm_scores(query, key, value, mask, None)
    return torch.bmm(probabilities(s, query.dtype, upcast, dropout_p), v)


def masked_bmm_replacement(query, key, value, mask, dropout_p, *, upcast: bool):
    B, H, Sq, _ = query.shape
    attn_mask = mask.expand(B, H, Sq, key.shape[-2])
    out = attention_op(query, key, value, attn_mask, dropout_p, 1.0)
    return out.reshape(B * H, Sq, value.shape[-1])


def clamped_bmm_replacement(query, key, value, mask, fill, dropout_p, *, upcast: bool):
    return masked_bmm_replacement(query, key, value, mask, dropout_p, upcast=upcast)


def _deberta_search(query, key, value, bias, mask, key_scale, fill, dropout_p, upcast):
    """DeBERTa-v2's attention on its (B·H, S, D) heads (module docstring); ``bias``: the disentangled one, or None."""
    s = torch.bmm(query, key.transpose(-1, -2) / key_scale)
    if bias is not None:
        s = s + bias
    s = s.view(mask.shape[0], -1, *s.shape[1:])
    p = probabilities(s.masked_fill(mask, fill), query.dtype, upcast, dropout_p)
    return torch.bmm(p.view(-1, *p.shape[2:]), value)


def disentangled_search(query, key, value, bias, mask, key_scale, fill, dropout_p, *, upcast: bool):
    """HF DeBERTa-v2/v3's attention with relative attention (module docstring)."""
    return _deberta_search(query, key, value, bias, mask, key_scale, fill, dropout_p, upcast)


def key_scaled_search(query, key, value, mask, key_scale, fill, dropout_p, *, upcast: bool):
    """HF DeBERTa-v2's attention without relative attention: the same, no bias."""
    return _deberta_search(query, key, value, None, mask, key_scale, fill, dropout_p, upcast)


def _deberta_op(query, key, value, bias, mask, key_scale, fill, dropout_p):
    # (B·H, S, D) -> (B, H, S, D), B the mask's batch (attention_checks.mask_splits_heads); eager divides kᵀ by the
    # 0-d scale elementwise, so the op gets those same keys, and scale 1
    B = mask.shape[0]
    query, key, value = (x.unflatten(0, (B, -1)) for x in (query, key, value))
    key = key / key_scale
    _, H, Sq, _ = query.shape
    Sk = key.shape[-2]
    if bias is None:
        query, keep = _op_mask_masked_fill(query, mask, fill, None)
        out = attention_op(query, key, value, keep.expand(B, H, Sq, Sk), dropout_p, 1.0)
    else:  # MPT's: the bias where a key is visible, -inf where hidden, rows hidden entirely uniform
        bias = bias.expand(B * H, Sq, Sk).view(B, H, Sq, Sk)
        out = alibi_masked_fill_replacement(query, key, value, bias, mask, 1.0, SCALE_NONE, fill, dropout_p,
                                            upcast=False)
    return out.flatten(0, 1)


def disentangled_replacement(query, key, value, bias, mask, key_scale, fill, dropout_p, *, upcast: bool):
    return _deberta_op(query, key, value, bias, mask, key_scale, fill, dropout_p)


def key_scaled_replacement(query, key, value, mask, key_scale, fill, dropout_p, *, upcast: bool):
    return _deberta_op(query, key, value, None, mask, key_scale, fill, dropout_p)


def mha_baddbmm_search(query, key, value, mask, scale, scale_kind, dropout_p, *, upcast: bool):
    """torch's ``multi_head_attention_forward`` returning its weights (module docstring)."""
    s = torch.baddbmm(mask, _apply_scale(query, scale, scale_kind), key.transpose(-2, -1))
    return torch.bmm(probabilities(s, query.dtype, upcast, dropout_p), value)


def mha_baddbmm_replacement(query, key, value, mask, scale, scale_kind, dropout_p, *, upcast: bool):
    query, op_scale = _op_scale(query, scale, scale_kind)
    query, key, value = query[None], key[None], value[None]  # (B·H, L, D) -> (1, B·H, L, D), as the bmm forms'
    _, H, L, _ = query.shape
    attn_mask = mask.expand(H, L, key.shape[-2])[None]  # (B·H or 1, L or 1, S): a view
    return attention_op(query, key, value, attn_mask, dropout_p, float(op_scale)).squeeze(0)


# ---------------------------------------------------------------------------------------------------------------
# Predicates of this form (the attention rewrite's are in attention_checks.py)
# ---------------------------------------------------------------------------------------------------------------
@predicate
def baddbmm_scaled_scores(match) -> bool:
    """The scores are ``baddbmm(alibi, q, kᵀ)`` with beta 1 and alpha a positive finite number (the op's scale);
    another beta scales the bias, which the op cannot express."""
    alpha = match.kwargs.get("alpha")
    if not isinstance(alpha, (int, float)) or isinstance(alpha, bool) or not 0.0 < alpha < math.inf:
        return False
    nodes = _nodes(match, aten.baddbmm.default)
    return len(nodes) == 1 and nodes[0].kwargs.get("beta", 1) == 1 and nodes[0].kwargs.get("alpha") == alpha


@predicate
def reshapes_split_batch_heads(match) -> bool:
    """q, k and v are (B, H, S, D) with one H (no GQA here), every 3-D reshape in the match is (B·H, x, y) of a
    4-D (B, H, x, y) and every 4-D one (B, H, x, y) of a 3-D (B·H, x, y): the views merge or split the batch and
    head dims and nothing else; the softmax runs on (B, H, Sq, Sk) or (B·H, Sq, Sk) and the output is
    (B·H, Sq, D_v) or (B, H, Sq, D_v)."""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    if not (q.dim() == k.dim() == v.dim() == 4 and _same_shape(k.shape[:2], q.shape[:2])
            and _same_shape(v.shape[:3], k.shape[:3])):
        return False
    B, H, Sq, _ = q.shape
    Sk = k.shape[-2]
    views = checks.views_between_3d_and_4d(match)
    if views is None or not all(_same_shape(four[:2], (B, H)) and _same_shape(three, (B * H, *four[2:]))
                                for three, four in views):
        return False
    amaxes = _nodes(match, aten.amax.default)
    out = match.output_nodes()[0]
    scores = ((B, H, Sq, Sk), (B * H, Sq, Sk))  # BLOOM's softmax runs on the 4-D view, XGLM's on the 3-D one
    outputs = ((B * H, Sq, v.shape[-1]), (B, H, Sq, v.shape[-1]))  # BLOOM's and XGLM's bmm, GPT-NeoX-Japanese's matmul
    return (bool(amaxes) and all(any(_same_shape(_shape(a.args[0]), s) for s in scores) for a in amaxes)
            and any(_same_shape(_shape(out), o) for o in outputs))


def _bias(bias, q, scores) -> bool:
    """A floating tensor on q's device that broadcasts to ``scores`` without growing them."""
    return (isinstance(bias, torch.Tensor) and bias.is_floating_point() and bias.device == q.device
            and checks.broadcasts_to(bias, scores))


def _fixed_bias(bias, q, scores) -> bool:
    """``_bias`` that needs no gradient (the op does not return one)."""
    return _bias(bias, q, scores) and not bias.requires_grad


@predicate
def alibi_supported(match) -> bool:
    """The ALiBi bias is a floating tensor on q's device, 1-3 dims, that broadcasts to the (B·H, Sq, Sk) scores
    without growing them, and needs no gradient (BLOOM builds it from the attention mask)."""
    q, k, alibi = _val(match, "query"), _val(match, "key"), _val(match, "alibi")
    return _fixed_bias(alibi, q, (q.shape[0] * q.shape[1], q.shape[2], k.shape[-2]))


@predicate
def masks_broadcast_to_scores(match) -> bool:
    """The mask is a floating tensor on q's device that broadcasts to the (B, H, Sq, Sk) scores without growing
    them (attention_checks.masks_supported): an additive mask, added to the bias as eager adds it to the scores."""
    return checks.masks_supported(match) and _val(match, "mask").is_floating_point()


@predicate
def bias_and_hidden_supported(match) -> bool:
    """MPT: the bias is a floating tensor and the mask a bool one, both on q's device, each broadcasting to the
    (B, H, Sq, Sk) scores without growing them; the bias needs no gradient (MPT's is a buffer)."""
    q, k, bias, hidden = (_val(match, n) for n in ("query", "key", "bias", "hidden"))
    scores = (*q.shape[:-1], k.shape[-2])
    return (_fixed_bias(bias, q, scores) and isinstance(hidden, torch.Tensor) and hidden.dtype == torch.bool
            and hidden.device == q.device and checks.broadcasts_to(hidden, scores))


@predicate
def alibi_and_mask_supported(match) -> bool:
    """Falcon: the ALiBi bias and the mask are floating tensors on q's device, each broadcasting to the
    (B, H, Sq, Sk) scores without growing them; the bias needs no gradient (Falcon builds it from the attention
    mask)."""
    q, k, alibi = _val(match, "query"), _val(match, "key"), _val(match, "alibi")
    return _fixed_bias(alibi, q, (*q.shape[:-1], k.shape[-2])) and masks_broadcast_to_scores(match)


@predicate
def clamp_at_finfo_min(match) -> bool:
    """XGLM's clamp ``max(s, full((), c))`` has c = finfo(scores dtype).min: a clamp at a higher value would lift
    hidden keys' scores to where they still get probability."""
    fill = match.kwargs.get("fill")
    maxima = _nodes(match, aten.maximum.default)
    return (isinstance(fill, float) and len(maxima) == 1
            and fill == torch.finfo(maxima[0].meta["val"].dtype).min)


@predicate
def deberta_inputs_supported(match) -> bool:
    """DeBERTa: the keys' divisor is a 0-d floating tensor (``sqrt(D·factor)``, made in the graph: the op divides the
    keys by it as eager does) and the disentangled bias (if the form has one) a floating tensor on q's device that
    broadcasts to the (B·H, Sq, Sk) scores without growing them."""
    q, k, key_scale = (_val(match, n) for n in ("query", "key", "key_scale"))
    if not (isinstance(key_scale, torch.Tensor) and key_scale.dim() == 0 and key_scale.is_floating_point()):
        return False
    return "bias" not in match.kwargs or _bias(_val(match, "bias"), q, (*q.shape[:-1], k.shape[-2]))


def _mha_scores(match, mask_ok) -> bool:
    """q, k and v are (B·H, L or S, D), the scores ``baddbmm(mask, q, kᵀ)`` with beta and alpha 1, and
    ``mask_ok(mask, q, (B·H, L, S))``."""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    if not (q.dim() == k.dim() == v.dim() == 3):
        return False
    nodes = _nodes(match, aten.baddbmm.default)
    if len(nodes) != 1 or nodes[0].kwargs.get("beta", 1) != 1 or nodes[0].kwargs.get("alpha", 1) != 1:
        return False
    return mask_ok(_val(match, "mask"), q, (q.shape[0], q.shape[1], k.shape[-2]))


@predicate
def mha_mask_supported(match) -> bool:
    """torch's multi-head attention: 3-D heads, ``baddbmm`` with beta and alpha 1 (``_mha_scores``), and the mask a
    floating tensor on q's device that needs no gradient and broadcasts to the (B·H, L, S) scores without growing
    them (the float mask the function builds from a bool or float ``attn_mask`` and ``key_padding_mask``)."""
    return _mha_scores(match, _fixed_bias)


@predicate
def mha_learned_mask_supported(match) -> bool:
    """torch's multi-head attention onto a trained float mask (WavLM's gated position bias with the key padding
    added): as ``mha_mask_supported``, the mask's gradient the op's (the pattern's training trace has it)."""
    return _mha_scores(match, _bias)


# The attention rewrite's predicates every form here needs (attention_checks.all_hold's, less the form-specific).
_COMMON = (checks.attention_enabled, checks.device_enabled, checks.qkv_consistent, checks.head_dim_supported,
           checks.softmax_over_last_dim, checks.key_transposed_last_two, checks.computes_a_gradient,
           checks.no_outside_users)


# ---------------------------------------------------------------------------------------------------------------
# Forms, variants and registration
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelForm:
    name: str
    search: object
    replacement: object
    argnames: tuple[str, ...]  # tensors, then bound scalars, then the sentinel scalars (as attention_forms.argnames)
    predicates: tuple  # besides _COMMON and dropout_consistent
    bias_shape: tuple  # of the example bias (a fixed one's is ignored by the trace; a learned one's gradient has it)
    mask_dtype: torch.dtype  # of the example mask
    # The input ("bias", "mask") that a half model may add in float32 (MPT builds its ALiBi in float32; a float32
    # mask under autocast): training is traced with it half and float32. Float32, it makes the scores float32 from
    # the addition on, so the backward's cast to half sits after the masked_fill's or clamp's backward, not before.
    float32_input: str | None = None
    # The input trained through the scores (DeBERTa's disentangled bias, computed from q and k): it requires grad in
    # the training trace, so its gradient (the op's, from dS) is a pattern output.
    learned: str | None = None
    # q, k and v come as (B·H, S, D) heads (DeBERTa's, torch's multi-head attention's), not (B, H, S, D)
    heads_batched: bool = False
    # of the example mask where it is not (B, 1, S, S) (torch's multi-head attention's is 3-D)
    mask_shape: tuple | None = None
    # traced for training only: without gradients its pattern is another form's (a learned mask's inference is
    # the fixed mask's)
    training_only: bool = False


# BLOOM's scores: the inputs and the predicates its and GPT-NeoX-Japanese's forms share
_BADDBMM_ARGS = ("query", "key", "value", "alibi", "mask", "alpha", "dropout_p")
_BADDBMM_PREDICATES = (reshapes_split_batch_heads, baddbmm_scaled_scores, alibi_supported, masks_broadcast_to_scores)


def _mha_form(name: str, mask_supported, mask_shape: tuple, learned: bool = False) -> ModelForm:
    """A form of torch's multi-head attention (``mha_baddbmm_search``): the mask's check, the example mask's shape,
    and whether the mask is trained (then traced for training only: its inference is the fixed mask's form)."""
    return ModelForm(name, mha_baddbmm_search, mha_baddbmm_replacement,
                     ("query", "key", "value", "mask", "scale", "scale_kind", "dropout_p"),
                     (checks.qkv_shapes_consistent, checks.scores_and_output_shaped, mask_supported), (),
                     torch.float16, learned="mask" if learned else None, heads_batched=True, mask_shape=mask_shape,
                     training_only=learned)


FORMS = (
    ModelForm("bloom_alibi_baddbmm", alibi_baddbmm_search, alibi_baddbmm_replacement, _BADDBMM_ARGS,
              _BADDBMM_PREDICATES, (_B * _H, 1, _S), torch.float16),
    ModelForm("gpt_neox_japanese_baddbmm", baddbmm_matmul_search, baddbmm_matmul_replacement, _BADDBMM_ARGS,
              _BADDBMM_PREDICATES, (_B * _H, _S, _S), torch.float16),
    ModelForm("mpt_alibi_masked_fill", alibi_masked_fill_search, alibi_masked_fill_replacement,
              ("query", "key", "value", "bias", "hidden", "scale", "scale_kind", "fill", "dropout_p"),
              (checks.qkv_shapes_consistent, checks.scores_and_output_shaped, checks.head_sums_reduce_broadcast_kv,
               bias_and_hidden_supported, checks.fill_supported),
              (_H, 1, _S), torch.bool, float32_input="bias"),
    ModelForm("falcon_alibi_twice", falcon_alibi_search, falcon_alibi_replacement,
              ("query", "key", "value", "alibi", "mask", "scale", "scale_kind", "dropout_p"),
              (checks.qkv_shapes_consistent, checks.scores_and_output_shaped, checks.head_sums_reduce_broadcast_kv,
               alibi_and_mask_supported),
              (_B, _H, 1, _S), torch.float16),
    ModelForm("xglm_clamped_bmm", clamped_bmm_search, clamped_bmm_replacement,
              ("query", "key", "value", "mask", "fill", "dropout_p"),
              (reshapes_split_batch_heads, masks_broadcast_to_scores, clamp_at_finfo_min),
              (), torch.float16, float32_input="mask"),
    ModelForm("bart_masked_bmm", masked_bmm_search, masked_bmm_replacement,
              ("query", "key", "value", "mask", "dropout_p"), (reshapes_split_batch_heads, masks_broadcast_to_scores),
              (), torch.float16, float32_input="mask"),
    _mha_form("torch_mha_baddbmm", mha_mask_supported, (1, _S, _S)),
    _mha_form("torch_mha_baddbmm_learned_mask", mha_learned_mask_supported, (_B * _H, _S, _S), learned=True),
    # a trained (L, S) attn_mask, which the function broadcasts over the (B·H) heads: its gradient sums dS over them
    _mha_form("torch_mha_baddbmm_learned_broadcast_mask", mha_learned_mask_supported, (1, _S, _S), learned=True),
    ModelForm("deberta_disentangled", disentangled_search, disentangled_replacement,
              ("query", "key", "value", "bias", "mask", "key_scale", "fill", "dropout_p"),
              (checks.mask_splits_heads, deberta_inputs_supported, checks.fill_supported),
              (_B * _H, _S, _S), torch.bool, learned="bias", heads_batched=True),
    ModelForm("deberta_key_scaled", key_scaled_search, key_scaled_replacement,
              ("query", "key", "value", "mask", "key_scale", "fill", "dropout_p"),
              (checks.mask_splits_heads, deberta_inputs_supported, checks.fill_supported), (), torch.bool,
              heads_batched=True),
)


def _all_hold(match, form: ModelForm) -> bool:
    from inductor_conv.heuristics.attention import template_pays

    if not (all(p(match) for p in (*_COMMON, *form.predicates, checks.dropout_consistent))
            and checks.gradients_shaped_like_inputs(match, names=form.argnames)):
        return False
    return template_pays(_val(match, "query").shape[-1], False, dense_mask=True)


def variants():
    """(name, form, upcast, float32 input or None, training): the fp32 softmax (the models') and the plain one, a half
    and a float32 bias or mask, differ only in half training (converts are optional in the relaxed pattern)."""
    for form in FORMS:
        for training in (True,) if form.training_only else (True, False):
            for upcast in (True, False) if training else (True,):
                # float32 scores need the fp32 softmax's cast back before P @ v (a model without it cannot run)
                wide = training and upcast and form.float32_input
                for float32_input in (None, form.float32_input) if wide else (None,):
                    name = "_".join(filter(None, (form.name, upcast and "fp32_softmax",
                                                  float32_input and f"fp32_{float32_input}",
                                                  "training" if training else "inference")))
                    yield name, form, upcast, float32_input, training


def _example_inputs(form: ModelForm, training: bool, float32_input: str | None) -> list:
    """float16 (the trace gets half graphs' converts) but ``float32_input``, q/k/v transposed views (B, S, H, D) ->
    (B, H, S, D) (it gets the layout copies; ``relax`` makes both optional), the models' bias and mask shapes, a 0-d
    scale (relax finds its KeywordArg); the sentinel scalars left out."""
    half = torch.float16

    def heads():
        if form.heads_batched:
            return torch.empty(_B * _H, _S, _D, dtype=half).requires_grad_(training)
        return torch.empty(_B, _S, _H, _D, dtype=half).transpose(1, 2).requires_grad_(training)

    values = {"query": heads(), "key": heads(), "value": heads(), "scale": torch.tensor(2.0, dtype=half),
              "scale_kind": SCALE_MUL, "mask": torch.empty(form.mask_shape or (_B, 1, _S, _S), dtype=form.mask_dtype),
              "hidden": torch.empty(_B, 1, _S, _S, dtype=form.mask_dtype)}
    values["alibi"] = values["bias"] = torch.empty(form.bias_shape, dtype=half)
    values["key_scale"] = torch.tensor(2.0, dtype=half)
    if form.learned:
        values[form.learned].requires_grad_(training)
    if float32_input:
        values[float32_input] = values[float32_input].float()
    return [values[n] for n in form.argnames if n not in _SENTINELS]


def _signature_fn(fn, form: ModelForm, upcast: bool):
    """``fn(..., upcast=upcast)`` with the form's argument names as its signature (register_replacement reads it)."""

    def bound(*args):
        return fn(*args, upcast=upcast)

    bound.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                             for n in form.argnames])
    bound.__name__ = f"{fn.__name__}{'_fp32_softmax' if upcast else ''}"
    return bound


def _registrations():
    for name, form, upcast, float32_input, training in variants():
        yield Registration(name, _signature_fn(form.search, form, upcast),
                           _signature_fn(form.replacement, form, upcast),
                           training, _example_inputs(form, training, float32_input),
                           {k: v for k, v in _SENTINELS.items() if k in form.argnames},
                           functools.partial(_all_hold, form=form))


@functools.cache
def register(pass_dict) -> None:
    """Trace every variant once (or rebuild it from the shipped file) and register it into ``pass_dict``."""
    register_all(pass_dict, "attention_model_forms", _registrations)
