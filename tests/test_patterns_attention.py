"""The attention pattern pass (patterns/attention.py, attention_forms.py, attention_relax.py, attention_checks.py).

Every recognised spelling (the models' own eager code: BERT, nanoGPT, HF GPT-2, HF Llama with repeat_kv, T5, a
bmm form, scale, mask and layout variants) is compiled on CPU with our pass (tests/helpers.compile_and_run: caches
off, counters cleared) for inference and training, static shapes and (a representative subset) dynamic shapes;
each must be rewritten exactly once into ``attention_fwd`` (+ ``attention_bwd``) and match float64 eager in
outputs and gradients. Static cases run the op's Triton kernels in the interpreter (tests/conftest.py), dynamic
ones its torch fallback. Dropout is checked at p = 0 / eval for numerics and at p > 0 for the count, determinism
under ``torch.manual_seed``, the keep fraction, and a backward that uses the forward's keep mask. Each spelling the
op does not compute is compiled too and must be left alone (count 0, eager results). Every extra_check predicate
gets positive and negative unit tests on small traced graphs, and a training test reads what the partitioned
forward saves (q, k, v, mask, O, LSE: no Sq × Sk tensor).
"""
from __future__ import annotations

import contextlib
import copy
import functools
import math
import re
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from helpers import assert_as_close_as_eager, compile_and_run, ops_in, recording_graphs
from torch.fx.experimental.proxy_tensor import make_fx

import inductor_conv
from inductor_conv._compat import compiled_graph_caches_disabled, dynamo_counters, inductor_config
from inductor_conv.patterns import attention_checks as checks

# fp32 compiled (the op: S = 8 keys, D = 16 products per score, fp32 accumulate) against float64 eager: rounding
# stays below ~1e-6 for O(1) inputs, so 1e-5 still fails on any wrong term, scale or mask (>= 1e-3 here).
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5),
       # bf16: inputs/outputs carry 8 mantissa bits (4e-3 relative) and the backward rounds dS; 3e-2 is ~8 ulps.
       torch.bfloat16: dict(atol=3e-2, rtol=3e-2)}
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

    def forward(self, q, k, v, mask=None):
        return self.spelling(self, q, k, v, mask)


def _heads(*xs):
    """(B, S, H, D) -> (B, H, S, D): the models' ``.view(B, S, H, D).transpose(1, 2)``."""
    return [x.transpose(1, 2) for x in xs]


def _merge(o):
    return o.transpose(1, 2).reshape(o.shape[0], o.shape[2], -1)


def _bert(m, q, k, v, mask):  # HF BERT eager self-attention
    q, k, v = _heads(q, k, v)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s + mask
    p = m.drop(F.softmax(s, dim=-1))
    return _merge(torch.matmul(p, v))


def _nanogpt(m, q, k, v, mask):  # nanoGPT CausalSelfAttention (slow path)
    q, k, v = _heads(q, k, v)
    T = q.size(-2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(m.causal_float[:, :, :T, :T] == 0, float("-inf"))
    att = F.dropout(F.softmax(att, dim=-1), m.p, m.training)
    return _merge(att @ v)


def _gpt2(m, q, k, v, mask):  # HF GPT-2 eager_attention_forward
    q, k, v = _heads(q, k, v)
    w = torch.matmul(q, k.transpose(-1, -2))
    w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
    ql, kl = q.size(-2), k.size(-2)
    causal = m.causal_bool[:, :, kl - ql : kl, :kl]
    min_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
    w = torch.where(causal, w.to(w.dtype), min_value)
    if mask is not None:
        w = w + mask
    w = F.dropout(F.softmax(w, dim=-1).type(v.dtype), m.p, m.training)
    return _merge(torch.matmul(w, v))


def _gpt2_scalar_fill(m, q, k, v, mask):  # GPT-2's where with a Python number for min_value, then the padding
    q, k, v = _heads(q, k, v)
    w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
    causal = m.causal_bool[:, :, : q.size(-2), : k.size(-2)]
    w = torch.where(causal, w, torch.finfo(w.dtype).min) + mask
    return _merge(torch.matmul(F.softmax(w, dim=-1), v))


def _repeat_kv(x, n_rep):  # HF Llama repeat_kv
    if n_rep == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


def _llama(m, q, k, v, mask):  # HF Llama eager_attention_forward (GQA through repeat_kv)
    q, k, v = _heads(q, k, v)
    k, v = _repeat_kv(k, q.shape[1] // k.shape[1]), _repeat_kv(v, q.shape[1] // v.shape[1])
    w = torch.matmul(q, k.transpose(2, 3)) * m.scaling
    if mask is not None:
        w = w + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=m.p, training=m.training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def _gemma2(cap_div=1.5, cap_mul=1.5):
    """HF Gemma 2 eager_attention_forward: repeat_kv, ``* scaling``, logit soft-capping (``/ cap``, tanh, ``* cap``:
    1.5 bends the scaled scores, std ~1 here), the mask, fp32 softmax, dropout.  Two different constants are not
    soft-capping (left alone)."""

    def spelling(m, q, k, v, mask):
        q, k, v = _heads(q, k, v)
        k, v = _repeat_kv(k, q.shape[1] // k.shape[1]), _repeat_kv(v, q.shape[1] // v.shape[1])
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


def _t5(m, q, k, v, mask, inplace=False):  # HF T5Attention: no scale, learned position bias (+ mask), fp32 softmax
    q, k, v = _heads(q, k, v)
    scores = torch.matmul(q, k.transpose(3, 2))
    bias = m.bias if mask is None else m.bias + mask
    if inplace:
        scores += bias  # T5's own spelling: see test_t5_inplace_bias
    else:
        scores = scores + bias
    w = F.softmax(scores.float(), dim=-1).type_as(scores)
    w = F.dropout(w, p=m.p, training=m.training)
    return _merge(torch.matmul(w, v))


def _t5_v5(m, q, k, v, mask):  # HF T5 in transformers 5: `* 1.0`, then the position bias and the mask added apart
    q, k, v = _heads(q, k, v)
    scores = torch.matmul(q, k.transpose(2, 3)) * 1.0
    scores = scores + m.bias
    scores = scores + mask
    w = F.softmax(scores, dim=-1)
    w = F.dropout(w, p=m.p, training=m.training)
    return _merge(torch.matmul(w, v))


def _kimi(m, q, k, v, mask):
    """HF Kimi-Linear (KimiLinearAttention.expand_kv, then Llama's eager attention): the key assembled in a new tensor
    from a per-head part and a part shared by the heads (its rotary half, one head expanded)."""
    q, k, v = _heads(q, k, v)
    nope = D // 2
    key = k.new_empty(k.shape)
    key[..., :nope].copy_(k[..., :nope])
    key[..., nope:].copy_(k[:, :1, :, nope:].expand(-1, k.shape[1], -1, -1))
    w = torch.matmul(q, key.transpose(2, 3)) * m.scaling + mask
    w = F.dropout(F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), p=m.p, training=m.training)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def _key_copied(m, q, k, v, mask):  # the key copied into a new tensor (issue 32's reduction of Kimi-Linear's)
    q, k, v = _heads(q, k, v)
    key = k.new_empty(k.shape)
    key.copy_(k)
    return _merge(torch.matmul(F.softmax(torch.matmul(q, key.transpose(-1, -2)) * m.scaling, dim=-1), v))


def _alibi_then_mask(m, q, k, v, mask):  # a fixed per-head linear bias (a buffer), then the padding mask
    q, k, v = _heads(q, k, v)
    w = torch.matmul(q, k.transpose(-1, -2)) * m.scaling + m.alibi + mask
    w = F.softmax(w, dim=-1)
    return _merge(torch.matmul(w, v))


def _bmm(m, q, k, v, mask):  # heads folded into the batch (HF BART/Whisper style), q pre-scaled
    q, k, v = (x.transpose(1, 2).reshape(-1, x.shape[1], x.shape[3]) for x in (q, k, v))
    w = torch.bmm(q * m.scaling, k.transpose(1, 2))
    if mask is not None:
        w = w + mask
    w = F.dropout(F.softmax(w, dim=-1), p=m.p, training=m.training)
    return torch.bmm(w, v)


def _masked_fill(fill):
    def spelling(m, q, k, v, mask):  # mask: bool, True = hidden
        q, k, v = _heads(q, k, v)
        s = torch.matmul(q, k.transpose(-2, -1)) * m.scaling
        s = s.masked_fill(mask, fill if fill is not None else torch.finfo(s.dtype).min)
        return _merge(torch.matmul(s.softmax(-1), v))

    return spelling


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
        q, k, v = _heads(q, k, v)
        s = torch.matmul(q, k.transpose(-1, -2)) * m.scaling
        s = torch.where(~hidden, s, torch.finfo(s.dtype).min if fill is None else fill)
        return _merge(torch.matmul(F.softmax(s, dim=-1), v))

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
        q, k, v = _heads(q, k, v)
        return _merge(SCALES[scale](q @ k.transpose(-2, -1), q.size(-1)).softmax(dim=-1) @ v)

    return spelling


def _prescaled_q(m, q, k, v, mask):  # (q * s) @ kᵀ, 4-D
    q, k, v = _heads(q, k, v)
    return _merge(torch.softmax((q * m.scaling) @ k.transpose(-2, -1), dim=-1) @ v)


# ---------------------------------------------------------------------------------------------------------------
# Cases: name -> (spelling, Attention kwargs, mask builder or None, Hkv). Masks are built from a seeded generator
# and need no gradient, except in ``MASK_GRAD`` cases (a bias computed upstream that is trained through the mask).
# ---------------------------------------------------------------------------------------------------------------
def _additive(*shape):
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


def _right_padding():
    """GPT-2 padding mask (B, 1, 1, S): 0 or finfo.min for the last two keys of batch 0."""

    def build():
        mask = torch.zeros(B, 1, 1, S)
        mask[0, ..., -2:] = torch.finfo(torch.float32).min
        return mask

    return build


RECOGNISED = {
    "bert_additive_mask": (_bert, {}, _additive(B, 1, 1, S), H),
    "bert_mask_b1sk": (_bert, {}, _additive(B, 1, S, S), H),
    "bert_mask_1hsk": (_bert, {}, _additive(1, H, S, S), H),
    "bert_learned_mask_b11s": (_bert, {}, _additive(B, 1, 1, S), H),
    "bert_learned_mask_bhss": (_bert, {}, _additive(B, H, S, S), H),
    "bert_no_mask": (_bert, {}, None, H),
    "nanogpt": (_nanogpt, {}, None, H),
    "hf_gpt2": (_gpt2, {}, None, H),
    "hf_gpt2_padding": (_gpt2, {}, _right_padding(), H),
    "gpt2_scalar_fill_padding": (_gpt2_scalar_fill, {}, _right_padding(), H),
    "hf_llama_repeat_kv": (_llama, {}, _additive(B, 1, S, S_MAX), HKV),
    "hf_llama_no_gqa": (_llama, {}, _additive(B, 1, S, S_MAX), H),
    "hf_gemma2_softcap": (_gemma2(), {}, _additive(B, 1, S, S), HKV),
    "softcap_no_mask_no_gqa": (_gemma2(), {}, None, H),
    # Falcon's multi-query attention: one K/V head that matmul broadcasts over the query heads (no repeat_kv)
    "multi_query_broadcast": (_bert, {}, _additive(B, 1, 1, S), 1),
    "t5_learned_bias": (_t5, dict(bias_shape=(1, H, S, S)), None, H),
    "t5_learned_bias_and_mask": (_t5, dict(bias_shape=(1, H, S, S)), _additive(B, 1, 1, S), H),
    "t5_v5_bias_then_padding": (_t5_v5, dict(bias_shape=(1, H, S, S)), _right_padding(), H),
    "t5_v5_batch_bias_then_mask": (_t5_v5, dict(bias_shape=(B, H, S, S)), _additive(B, 1, S, S), H),
    "alibi_then_padding": (_alibi_then_mask, {}, _right_padding(), H),
    "kimi_key_assembled": (_kimi, {}, _additive(B, 1, S, S), H),
    "key_copied_into_new_empty": (_key_copied, {}, None, H),
    "bmm_prescaled_q": (_bmm, {}, None, H),
    "bmm_additive_mask": (_bmm, {}, _additive(B * H, S, S), H),
    "bmm_masked_fill": (_bmm_masked("masked_fill"), {}, _hidden(1, S, S), H),
    "bmm_where_finfo_min": (_bmm_masked("where"), {}, _hidden_with_empty_row(1, S, S), H),
    "bmm_where_scalar_finfo_min": (_bmm_masked("where_scalar"), {}, _hidden_with_empty_row(1, S, S), H),
    "bmm_learned_bias": (_bmm_learned_bias, dict(bias_shape=(B * H, S, S)), None, H),
    "bmm_learned_bias_broadcast": (_bmm_learned_bias, dict(bias_shape=(1, S, S)), None, H),
    "where_scalar_finfo_min": (_where_scalar(None), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "where_scalar_minus_inf": (_where_scalar(float("-inf")), {}, _hidden(B, 1, S, S), H),
    "masked_fill_minus_inf": (_masked_fill(float("-inf")), {}, _hidden(B, 1, S, S), H),
    "masked_fill_finfo_min": (_masked_fill(None), {}, _hidden_with_empty_row(B, 1, S, S), H),
    "prescaled_q": (_prescaled_q, {}, None, H),
    **{f"scale_{name}": (_scaled(name), {}, None, H) for name in SCALES},
}
MASK_GRAD = ("bert_learned_mask_b11s", "bert_learned_mask_bhss")
# Forms whose training graph adds nothing over another case's (the scale or mask shape only changes the forward;
# div_torch_full keeps training: its tensor scale reaches the backward), and learned masks, which are training only.
_INFERENCE_ONLY = ("scale_mul", "scale_div", "scale_div_math_sqrt", "scale_none", "bert_mask_b1sk", "bert_mask_1hsk")
STATIC = [(name, train) for name in RECOGNISED for train in (False, True)
          if not (train and name in _INFERENCE_ONLY) and not (not train and name in MASK_GRAD)]
# Dynamic shapes on a representative subset: every mask kind, GQA (repeat_kv and broadcast), bmm, a tensor scale
# from math.sqrt(d).
DYNAMIC = [("hf_llama_repeat_kv", True), ("multi_query_broadcast", True), ("nanogpt", True), ("t5_learned_bias", True),
           ("t5_v5_bias_then_padding", True), ("alibi_then_padding", False), ("bert_additive_mask", False),
           ("hf_gpt2_padding", False), ("gpt2_scalar_fill_padding", True), ("bmm_additive_mask", False),
           ("masked_fill_finfo_min", False),
           ("bmm_where_finfo_min", True), ("where_scalar_finfo_min", True), ("where_scalar_minus_inf", False),
           ("bmm_learned_bias_broadcast", True), ("scale_mul", False), ("scale_div_math_sqrt", False),
           ("prescaled_q", False), ("bmm_prescaled_q", False), ("masked_fill_minus_inf", False)]


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
# One helper per kind of check
# ---------------------------------------------------------------------------------------------------------------
def _grads(model, args, out, dy):
    inputs = [a for a in args if a.requires_grad] + [p for p in model.parameters() if p.requires_grad]
    return torch.autograd.grad(out, inputs, dy)


def run_and_compare(model, args, *, train, dynamic, device_types=("cpu",), mask_grad=False, autocast=None, frozen=""):
    """Compile model(*args) with our pass; compare outputs (and gradients of q, k, v, every parameter and, with
    mask_grad, the float mask) with float64 eager. ``autocast``: a dtype the compiled model runs under
    ``torch.autocast`` with; the float64 reference runs without, and each result is then compared with eager
    autocast's error (helpers.assert_as_close_as_eager). ``frozen``: letters of the inputs that get no gradient in
    training ("q", "k", "v"; "p": the model's parameters).
    Returns (counters, recorded graph texts)."""
    dtype = autocast or args[0].dtype
    model.requires_grad_("p" not in frozen)
    ref = copy.deepcopy(model).double()
    eager = copy.deepcopy(model)

    def trains(i, a):  # q, k, v unless frozen; the mask (args[3]) with mask_grad
        if not (train and a.is_floating_point()):
            return False
        return "qkv"[i] not in frozen if i < 3 else mask_grad and i == 3

    trained = [trains(i, a) for i, a in enumerate(args)]
    args64 = [a.double().requires_grad_(g) if a.is_floating_point() else a for a, g in zip(args, trained)]
    args_eager = [a.clone().requires_grad_(g) for a, g in zip(args, trained)]
    args = [a.clone().requires_grad_(g) for a, g in zip(args, trained)]
    amp = torch.autocast("cpu", dtype=autocast) if autocast else contextlib.nullcontext()
    with torch.set_grad_enabled(train):
        with amp:
            out, counts, graphs = compile_and_run(model, *args, dynamic=dynamic, device_types=device_types)
            out_eager = eager(*args_eager) if autocast else None
        assert out.dtype == dtype
        expected = ref(*args64)
        got, want, eager_got = [out], [expected], [out_eager]
        if train:
            dy = torch.randn_like(out)
            got += _grads(model, args, out, dy)
            want += _grads(ref, args64, expected, dy.double())
            eager_got += _grads(eager, args_eager, out_eager, dy) if autocast else [None] * (len(got) - 1)
        if autocast:
            assert_as_close_as_eager(got, eager_got, want)
        else:
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w.to(g.dtype), **TOL[dtype])
    return counts, graphs


# tests/test_golden_graphs_attention.py pins the graphs of these compilations, which check_recognised's and
# check_left_alone's caches serve to both files: under pytest-xdist (README's ``-n 2 --dist loadgroup``) the tests of
# both files that read them run in one worker (the group), so each case is compiled once.
GOLDEN = pytest.mark.xdist_group("attention_golden")
GOLDEN_RECOGNISED = {  # (name, train)
    *((name, train) for name in ("bert_additive_mask", "bert_no_mask", "nanogpt", "hf_gpt2", "hf_llama_repeat_kv",
                                 "hf_gemma2_softcap", "t5_learned_bias", "t5_v5_bias_then_padding", "bmm_additive_mask",
                                 "masked_fill_finfo_min", "prescaled_q", "scale_div_torch_full")
      for train in (False, True)),
    ("bert_learned_mask_bhss", True), ("hf_gpt2_padding", False), ("hf_gpt2_padding", True),
    ("gpt2_scalar_fill_padding", False), ("multi_query_broadcast", True), ("alibi_then_padding", False),
    ("bmm_masked_fill", False), ("bmm_where_finfo_min", True), ("where_scalar_finfo_min", True),
    ("bmm_learned_bias_broadcast", True), ("kimi_key_assembled", True)}
GOLDEN_LEFT_ALONE = {"weights_used_in_graph", "weights_stored", "softmax_dim_minus2", "weights_returned",
                     "mask_from_scores", "head_dim_8", "masked_fill_minus_1e4", "int_additive_mask", "scale_along_keys",
                     "softcap_two_constants"}


@functools.cache
def check_recognised(name, *, train, dynamic, dtype=torch.float32) -> list[str]:
    """Compile a recognised case: one rewrite, no bmm or softmax left, eager-equal results. Returns the graphs
    (cached: tests/test_golden_graphs_attention.py pins the same compilations)."""
    model, args = make_case(name, dtype)
    counts, graphs = run_and_compare(model, args, train=train, dynamic=dynamic, mask_grad=name in MASK_GRAD)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert ops_in(text) == (["attention_fwd", "attention_bwd"] if train else ["attention_fwd"]), text
    assert "aten.bmm" not in text and "aten.amax" not in text, text
    return graphs


# ---------------------------------------------------------------------------------------------------------------
# Recognised forms
# ---------------------------------------------------------------------------------------------------------------
def _ids(cases):
    return [f"{name}-{'training' if train else 'inference'}" for name, train in cases]


@pytest.mark.parametrize("name, train", [pytest.param(*case, id=_ids([case])[0], marks=GOLDEN)
                                         if case in GOLDEN_RECOGNISED else pytest.param(*case, id=_ids([case])[0])
                                         for case in STATIC])
def test_recognised_static(name, train):
    check_recognised(name, train=train, dynamic=False)


@pytest.mark.parametrize("name, train", DYNAMIC, ids=_ids(DYNAMIC))
def test_recognised_dynamic(name, train, monkeypatch):
    # The op's torch fallback (TRITON_INTERPRET=0, read at call time) keeps these fast; the static tests run the
    # same forms through the Triton kernels in the interpreter.
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    check_recognised(name, train=train, dynamic=True)


BF16 = [("hf_llama_repeat_kv", False), ("hf_llama_repeat_kv", True), ("hf_gpt2", True)]


@pytest.mark.parametrize("name, train", BF16, ids=_ids(BF16))
def test_recognised_bf16(name, train):
    # bf16 graphs carry the dtype converts of half softmax (plain for GPT-2/BERT, fp32 softmax for Llama).
    check_recognised(name, train=train, dynamic=False, dtype=torch.bfloat16)


# torch.autocast casts a matmul's operands after the model transposed them (Note [autocast respellings] in
# patterns/autocast.py): fp32 parameters and inputs, bf16 matmuls, an fp32 mask and softmax.
AUTOCAST = [("hf_llama_repeat_kv", False), ("hf_llama_repeat_kv", True), ("bert_additive_mask", True),
            ("hf_gpt2_padding", False), ("nanogpt", True), ("bmm_masked_fill", False), ("alibi_then_padding", True),
            ("t5_learned_bias", True), ("t5_v5_bias_then_padding", True), ("hf_gpt2", True),
            ("t5_v5_batch_bias_then_mask", True), ("bert_learned_mask_bhss", True), ("bmm_masked_fill", True),
            ("bmm_where_finfo_min", True), ("bmm_learned_bias_broadcast", True)]


@pytest.mark.parametrize("name, train", AUTOCAST, ids=_ids(AUTOCAST))
def test_recognised_under_autocast(name, train):
    model, args = make_case(name)
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False, autocast=torch.bfloat16,
                                     mask_grad=name in MASK_GRAD)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert ops_in(text) == (["attention_fwd", "attention_bwd"] if train else ["attention_fwd"]), text
    assert "aten.bmm" not in text, text


def test_casts_move_outside_transposes_only_next_to_a_matmul():
    """The cast of kᵀ moves before the transpose and the cast of its gradient after the transpose back (of a 4-D
    matmul's ``view(bmm)`` and of a 3-D one's ``bmm``); a cast that feeds no matmul stays where it is. Values and
    strides are unchanged."""
    from inductor_conv.patterns.autocast import casts_outside_layout_ops

    aten, cast = torch.ops.aten, torch.ops.prims.convert_element_type.default

    def f(q, k, w):
        kt = cast(aten.transpose.int(k, 1, 2), torch.bfloat16)  # autocast's cast of kᵀ
        s3 = aten.bmm.default(cast(q, torch.bfloat16), kt)
        s = aten.view.default(s3, [2, 5, 6])
        dk = aten.transpose.int(cast(s, torch.float32), 1, 2)  # the gradient's cast, then the transpose back
        dk3 = aten.transpose.int(cast(s3, torch.float32), 1, 2)  # the same of a 3-D matmul (bmm itself)
        return dk, dk3, aten.sin.default(cast(aten.transpose.int(w, 0, 1), torch.bfloat16))  # not an operand

    def order(gm):
        return [(n.target, n.args[0].target) for n in gm.graph.nodes if n.op == "call_function"
                and n.target in (cast, aten.transpose.int) and n.args[0].op == "call_function"]

    q, k, w = torch.randn(2, 5, 4), torch.randn(2, 6, 4), torch.randn(3, 5)
    gm = make_fx(f)(q, k, w)
    assert casts_outside_layout_ops(gm.graph) == 3
    gm.recompile()
    assert order(gm) == [(aten.transpose.int, cast), (aten.transpose.int, aten.view.default),
                         (cast, aten.transpose.int), (aten.transpose.int, aten.bmm.default),
                         (cast, aten.transpose.int), (cast, aten.transpose.int)], order(gm)
    for got, want in zip(gm(q, k, w), f(q, k, w)):
        assert got.stride() == want.stride() and got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_backward_reuses_the_forwards_views():
    """A joint graph's backward (from the first node reading a tangent) that repeats a view chain of the forward on
    the same tensor reads the forward's nodes instead; a forward view repeated in the forward (a second attention's
    kᵀ), a backward permute with other dims or of another tensor, and every view of a graph without tangents stay.
    Values and strides are unchanged."""
    from inductor_conv.patterns.graph_pass import merge_repeated_views

    aten = torch.ops.aten

    def k_t(k):
        return aten.view.default(aten.expand.default(aten.permute.default(k, [0, 2, 1]), [2, 4, 6]), [2, 4, 6])

    def f(primals_k, primals_j, tangents_1):
        first, second = k_t(primals_k) * 2, k_t(primals_k) * 3  # forward: two readers of kᵀ
        grad = tangents_1 * 4  # the backward starts here
        again = k_t(primals_k) * grad  # the replayed chain
        return (first, second, again, aten.permute.default(primals_k, [2, 1, 0]),
                aten.permute.default(primals_j, [0, 2, 1]))

    def permutes(gm):
        return [(n.args[0].name, n.args[1]) for n in gm.graph.find_nodes(op="call_function",
                                                                         target=aten.permute.default)]

    args = (torch.randn(2, 6, 4), torch.randn(2, 6, 4), torch.randn(2, 4, 6))
    gm = make_fx(f)(*args)
    k, j = (n.name for n in list(gm.graph.find_nodes(op="placeholder"))[:2])
    assert merge_repeated_views(gm.graph) == 3
    gm.graph.eliminate_dead_code()
    gm.recompile()
    assert sorted(permutes(gm)) == sorted([(k, [0, 2, 1])] * 2 + [(k, [2, 1, 0]), (j, [0, 2, 1])]), gm.code
    muls = list(gm.graph.find_nodes(op="call_function", target=aten.mul.Tensor))
    assert muls[3].args[0] is muls[0].args[0] and muls[1].args[0] is not muls[0].args[0], gm.code
    for got, want in zip(gm(*args), f(*args)):
        assert got.stride() == want.stride()
        torch.testing.assert_close(got, want, atol=0, rtol=0)
    inference = make_fx(lambda k: (k_t(k) * 2, k_t(k) * 3))(args[0])
    assert merge_repeated_views(inference.graph) == 0


def test_round_trip_casts_are_removed_only_when_exact():
    """bf16 -> fp32 -> bf16 is the identity and goes; fp32 -> bf16 -> fp32 rounds and bf16 -> fp16 -> bf16 may
    overflow or round: both stay."""
    from inductor_conv.patterns.autocast import round_trip_casts

    cast = torch.ops.prims.convert_element_type.default

    def f(x16, x32):
        return (cast(cast(x16, torch.float32), torch.bfloat16), cast(cast(x32, torch.bfloat16), torch.float32),
                cast(cast(x16, torch.float16), torch.bfloat16))

    x16, x32 = torch.randn(4, 6).to(torch.bfloat16) * 1e5, torch.randn(4, 6)
    gm = make_fx(f, tracing_mode="fake")(x16, x32)
    assert round_trip_casts(gm.graph) == 1
    gm.recompile()
    assert len(gm.graph.find_nodes(op="call_function", target=cast)) == 4
    for got, want in zip(gm(x16, x32), f(x16, x32)):
        torch.testing.assert_close(got, want, atol=0, rtol=0, equal_nan=True)


def op_arg_shapes(text: str) -> list[str]:
    """The shapes of attention_fwd's q, k, v arguments in a recorded graph text."""
    (args,) = re.findall(r"attention_fwd\.default\((\w+), (\w+), (\w+),", text)
    return [re.search(rf"\b{a}: \"\w+\[([\d, ]+)\]\"", text).group(1) for a in args]


def test_gqa_passes_unexpanded_kv():
    text = "".join(check_recognised("hf_llama_repeat_kv", train=True, dynamic=False))
    assert op_arg_shapes(text) == [f"{B}, {H}, {S}, {D}", f"{B}, {HKV}, {S}, {D}", f"{B}, {HKV}, {S}, {D}"], text
    assert not re.search(r'"f32\[\d+, \d+, \d+, \d+, \d+\]"', text), text  # no (B, Hkv, G, S, D) repeat left


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_value_head_dim_differs(train):
    """q and k with head dim 24, v with 16 (FlashAttention 3's (192, 128), DeepSeek's MLA, made small): rewritten
    with v as it is, the output (B, H, S, 16); GQA through repeat_kv too."""
    torch.manual_seed(0)
    model = Attention(_llama)
    args = [torch.randn(B, S, H, 24), torch.randn(B, S, HKV, 24), torch.randn(B, S, HKV, 16), torch.randn(B, 1, S, S)]
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert op_arg_shapes(text) == [f"{B}, {H}, {S}, 24", f"{B}, {HKV}, {S}, 24", f"{B}, {HKV}, {S}, 16"], text


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_t5_inplace_bias(train):
    spelling = lambda m, q, k, v, mask: _t5(m, q, k, v, mask, inplace=True)  # noqa: E731
    model, args = make_case("t5", table={"t5": (spelling, dict(bias_shape=(1, H, S, S)), None, H)})
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    assert counts["attention"] == 1, graphs


def _contiguous_heads(m, q, k, v, mask):  # q, k, v given as contiguous (B, H, S, D): no layout copies at all
    return torch.softmax(q @ k.transpose(-2, -1) * m.scaling, dim=-1) @ v


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("layout", ["batch_1", "contiguous_heads"])
def test_layouts_without_copies(layout, train):
    """The traced pattern has layout copies (transposed q/k/v, B > 1); graphs without them match too."""
    torch.manual_seed(0)
    if layout == "batch_1":  # (1, H, S, D) views reshape to (H, S, D) without a copy
        model, args = Attention(_bert), [torch.randn(1, S, H, D) for _ in range(3)]
    else:
        model, args = Attention(_contiguous_heads), [torch.randn(B, H, S, D) for _ in range(3)]
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    assert counts["attention"] == 1 and "aten.clone" not in "".join(graphs).split("attention_fwd")[0], graphs


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["hf_llama_repeat_kv", "hf_gpt2", "nanogpt"])
def test_recognised_on_cuda_bf16(name):
    """The default device type: the rewrite on CUDA graphs, through the Triton templates."""
    model, args = make_case(name, torch.bfloat16)
    model, args = model.cuda(), [a.cuda() for a in args]
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False, device_types=("cuda",))
    assert counts["attention"] == 1, graphs


def test_two_layers_two_rewrites():
    def two_layers(m, q, k, v, mask):
        h = _bert(m, q, k, v, mask).view(B, S, H, D)
        return _nanogpt(m, h, k, v, None)

    model, args = make_case("x", table={"x": (two_layers, {}, _additive(B, 1, 1, S), H)})
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False)
    assert counts["attention"] == 2 and ops_in("".join(graphs)).count("attention_bwd") == 2, graphs


@pytest.mark.parametrize("scores", ["matmul", "bmm"])
def test_bool_mask_added_to_scores_adds_one(scores):
    """``scores + bool_mask`` adds 1.0 where the mask is True (type promotion), unlike SDPA's attend / hide bool
    masks: the rewrite must pass 0 / 1 as an additive mask (it handed the bool mask over, off by ~1 in the output)."""
    torch.manual_seed(0)
    if scores == "matmul":
        q, k, v = (torch.randn(2, 2, 8, 16) for _ in range(3))
        mask = torch.rand(2, 1, 1, 8) > 0.5

        def f(q, k, v, mask):
            return torch.softmax(q @ k.transpose(-2, -1) / 4.0 + mask, dim=-1) @ v
    else:
        q, k, v = (torch.randn(4, 8, 16) for _ in range(3))
        mask = torch.rand(4, 8, 8) > 0.3

        def f(q, k, v, mask):
            return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.25 + mask, dim=-1), v)

    out, counts, _ = compile_and_run(f, q, k, v, mask)
    assert counts["attention"] == 1
    ref = f(*(t.double() for t in (q, k, v)), mask)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)


def test_negative_scale_prescales_q():
    """The op takes positive scales only; ``scores * -0.25`` (legal eager code) is rewritten with q pre-scaled."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8, 16, requires_grad=True) for _ in range(3))

    def f(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * -0.25, dim=-1) @ v

    out, counts, _ = compile_and_run(f, q, k, v)
    assert counts["attention"] == 1
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    ref = f(*leaves)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)
    dout = torch.randn_like(ref)
    for g, r in zip(torch.autograd.grad(out, (q, k, v), dout.float()), torch.autograd.grad(ref, leaves, dout)):
        torch.testing.assert_close(g.double(), r, atol=1e-5, rtol=1e-5)


def test_scale_passed_to_op():
    graphs = check_recognised("scale_div", train=False, dynamic=False)
    assert f"False, {D**-0.5}, None)" in "".join(graphs)


def test_our_rewrite_runs_before_inductor_fuse_attention():
    """Our joint pre-pass owns the plain form: Inductor's own SDPA rewrite finds nothing left. With our pass off
    (config.attention = False) Inductor does rewrite it, so this test can fail."""
    model, args = make_case("bert_no_mask")
    dynamo_counters["inductor"].clear()
    counts, _ = run_and_compare(model, args, train=False, dynamic=False)
    assert counts["attention"] == 1 and dynamo_counters["inductor"]["fuse_attention"] == 0
    inductor_conv.config.attention = False
    try:
        dynamo_counters["inductor"].clear()
        counts, _ = run_and_compare(model, args, train=False, dynamic=False)
        assert counts["attention"] == 0 and dynamo_counters["inductor"]["fuse_attention"] >= 1
    finally:
        inductor_conv.config.attention = True


# ---------------------------------------------------------------------------------------------------------------
# Dropout (p > 0): count, p reaches the op, determinism, keep fraction, backward uses the forward's keep mask
# ---------------------------------------------------------------------------------------------------------------
P_DROP = 0.5


def _one_hot_probe():
    """q, k random; v = one-hot rows (v[j, j] = 1), so O[..., :S] is the dropped, rescaled P itself."""
    torch.manual_seed(1)
    q, k = torch.randn(B, S, H, D), torch.randn(B, S, H, D)
    v = torch.eye(S, D).expand(B, H, S, D).transpose(1, 2).contiguous()
    return q, k, v


def _compiled_dropout(train, spelling=_bert, dynamic=False):
    model = Attention(spelling, p=P_DROP).train()
    q, k, v = (x.requires_grad_(train) for x in _one_hot_probe())
    with torch.set_grad_enabled(train):
        torch.manual_seed(123)
        out, counts, graphs = compile_and_run(model, q, k, v, dynamic=dynamic)
    return model, (q, k, v), out, counts, graphs


DROPOUT_SPELLINGS = {"nn_dropout": _bert, "f_dropout": _nanogpt}


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("spelling", list(DROPOUT_SPELLINGS))
def test_dropout_counted_and_p_reaches_op(spelling, train):
    _, _, _, counts, graphs = _compiled_dropout(train, DROPOUT_SPELLINGS[spelling])
    text = "".join(graphs)
    assert counts["attention"] == 1 and f", {P_DROP}, False, " in text, text
    assert "aten.randint.low" in text and "aten.rand.default" not in text, text


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_dropout_dynamic_shapes(train):
    _, _, _, counts, graphs = _compiled_dropout(train, _nanogpt, dynamic=True)
    text = "".join(graphs)
    assert counts["attention"] == 1 and f", {P_DROP}, False, " in text and "aten.randint.low" in text, text


def test_dropout_deterministic_keep_fraction_and_backward():
    model, (q, k, v), out, counts, _ = _compiled_dropout(train=True)
    assert counts["attention"] == 1
    compiled = torch.compile(model, backend="inductor", fullgraph=True)  # the graph cached by compile_and_run
    with inductor_conv.enabled(("cpu",)):
        torch.manual_seed(7)
        o1 = compiled(q, k, v)
        torch.manual_seed(7)
        o2 = compiled(q, k, v)
        torch.manual_seed(8)
        o3 = compiled(q, k, v)
    assert torch.equal(o1, o2) and not torch.equal(o1, o3)
    kept = o1.view(B, S, H, D).transpose(1, 2)[..., :S]  # (B, H, Sq, Sk) = keep ∘ P / (1 - p)
    keep = kept != 0
    # B·H·S·S = 768 Bernoulli(1 - p) draws: std 0.018, so ±0.1 is > 5 sigma.
    assert abs(keep.double().mean().item() - (1 - P_DROP)) < 0.1
    # Backward against a float64 reconstruction from the same keep mask: dS = P ∘ (dP' − rowsum(dP' ∘ P)).
    dy = torch.randn_like(o1)
    dq, dk, dv = torch.autograd.grad(o1, (q, k, v), dy)
    qh, kh, vh, dyh = (x.double().view(B, S, H, D).transpose(1, 2) for x in (q, k, v, dy))
    scale = 1 / math.sqrt(D)
    p = torch.softmax(qh @ kh.transpose(-2, -1) * scale, dim=-1)
    torch.testing.assert_close(kept.double(), p * keep / (1 - P_DROP), atol=1e-5, rtol=1e-5)
    dp = (dyh @ vh.transpose(-2, -1)) * keep / (1 - P_DROP)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    want = {"q": ds @ kh * scale, "k": ds.transpose(-2, -1) @ qh * scale,
            "v": (p * keep / (1 - P_DROP)).transpose(-2, -1) @ dyh}
    for got, name in ((dq, "q"), (dk, "k"), (dv, "v")):
        torch.testing.assert_close(got.view(B, S, H, D).transpose(1, 2).double(), want[name], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("mode", ["p0", "eval"])
def test_dropout_off_is_the_plain_rewrite(mode):
    # F.dropout(p=0, training=True) and F.dropout(p, training=False) are identities: no dropout in the graph.
    model, args = make_case("hf_llama_repeat_kv")
    model.p = 0.0 if mode == "p0" else P_DROP
    model.train(mode == "p0")
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False)
    assert counts["attention"] == 1 and "randint" not in "".join(graphs) and ", 0.0, False, " in "".join(graphs)


# ---------------------------------------------------------------------------------------------------------------
# Some inputs frozen: the joint graph has only some gradients (Note [partial gradients] in patterns/attention.py)
# ---------------------------------------------------------------------------------------------------------------
# (name, frozen): cross-attention with frozen K/V ("kv"), a frozen query projection ("q"), one of each, a learned
# bias alone ("qkv": only the parameter trains) or with V; GQA, multi-query broadcast, bmm, soft-capping, a mask.
FROZEN = [("bert_additive_mask", "kv"), ("bert_additive_mask", "q"), ("hf_llama_repeat_kv", "kv"),
          ("hf_llama_repeat_kv", "q"), ("hf_llama_repeat_kv", "k"), ("hf_llama_repeat_kv", "qk"),
          ("multi_query_broadcast", "kv"), ("multi_query_broadcast", "q"), ("bmm_additive_mask", "kv"),
          ("hf_gemma2_softcap", "q"), ("nanogpt", "kv"), ("t5_learned_bias", "qkv"), ("t5_learned_bias", "qk"),
          ("bmm_learned_bias", "qkv"), ("kimi_key_assembled", "q")]
GOLDEN_FROZEN = {("bert_additive_mask", "kv"), ("hf_llama_repeat_kv", "q")}


@functools.cache
def check_frozen(name, frozen) -> list[str]:
    """Train a recognised case with ``frozen`` inputs (run_and_compare's letters): one rewrite, no bmm or softmax
    left, the gradients that exist equal to float64 eager's. Returns the graphs (test_golden_graphs_attention.py)."""
    model, args = make_case(name)
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False, frozen=frozen)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert ops_in(text) == ["attention_fwd", "attention_bwd"], text
    assert "aten.bmm" not in text and "aten.amax" not in text, text
    return graphs


@pytest.mark.parametrize("name, frozen", [pytest.param(*c, marks=GOLDEN) if c in GOLDEN_FROZEN else c for c in FROZEN],
                         ids=[f"{name}-frozen_{frozen}" for name, frozen in FROZEN])
def test_recognised_with_frozen_inputs(name, frozen):
    check_frozen(name, frozen)


def test_frozen_inputs_with_dropout():
    """Frozen K/V with dropout: rewritten, and dQ uses the forward's keep mask (a float64 reconstruction from the
    dropped probabilities the one-hot V reveals, as test_dropout_deterministic_keep_fraction_and_backward)."""
    model = Attention(_bert, p=P_DROP).train()
    q, k, v = _one_hot_probe()
    q.requires_grad_(True)
    torch.manual_seed(123)
    out, counts, graphs = compile_and_run(model, q, k, v)
    assert counts["attention"] == 1 and ops_in("".join(graphs)) == ["attention_fwd", "attention_bwd"], graphs
    kept = out.view(B, S, H, D).transpose(1, 2)[..., :S]
    keep = kept != 0
    assert 0 < keep.double().mean().item() < 1
    dy = torch.randn_like(out)
    (dq,) = torch.autograd.grad(out, (q,), dy)
    qh, kh, vh, dyh = (x.double().view(B, S, H, D).transpose(1, 2) for x in (q.detach(), k, v, dy))
    scale = 1 / math.sqrt(D)
    p = torch.softmax(qh @ kh.transpose(-2, -1) * scale, dim=-1)
    dp = (dyh @ vh.transpose(-2, -1)) * keep / (1 - P_DROP)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    torch.testing.assert_close(dq.view(B, S, H, D).transpose(1, 2).double(), ds @ kh * scale, atol=1e-5, rtol=1e-5)


def test_frozen_inputs_weights_used_elsewhere_left_alone():
    """Frozen K/V do not loosen the other checks: weights with another consumer still keep the graph eager's."""
    model, args = make_left_alone("weights_used_in_graph")
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False, frozen="kv")
    assert counts["attention"] == 0 and not ops_in("".join(graphs)), graphs


def test_predicate_computes_a_gradient():
    """A training match with some gradient (absent ones are None) may be rewritten, one with none is left to the
    inference patterns; an inference match (one output) is not a training match."""
    node = object()

    def match(*outputs):
        return SimpleNamespace(output_nodes=lambda: list(outputs))

    assert checks.gradients_present(match(node, node, None, None, None)) == (True, False, False, False)
    assert checks.computes_a_gradient(match(node, None, None, node, None))
    assert not checks.computes_a_gradient(match(node, None, None, None, None))
    assert checks.gradients_present(match(node)) is None and checks.computes_a_gradient(match(node))


# ---------------------------------------------------------------------------------------------------------------
# Saved tensors: the partitioned forward saves q, k, v, O, LSE (nothing of shape (..., Sq, Sk))
# ---------------------------------------------------------------------------------------------------------------
def _saved_by_forward(name, enabled=True, p=None):
    model, args = make_case(name)
    if p is not None:  # an F.dropout spelling, training: the rewrite also saves the dropout seed
        model.p = p
        model.train(True)
    args = [a.requires_grad_(i < 3) for i, a in enumerate(args)]
    seen = []
    inductor_conv.config.attention = enabled
    try:
        # Without our rewrite, keep Inductor's own SDPA rewrite off too, to see what eager attention saves.
        with inductor_config.patch(post_grad_custom_pre_pass=lambda g: seen.append(g), pattern_matcher=enabled):
            compile_and_run(model, *args)
    finally:
        inductor_conv.config.attention = True
    forward = seen[0]  # Inductor compiles the forward first; its outputs are (result, *saved for backward)
    (out_node,) = forward.find_nodes(op="output")
    saved = [n for n in out_node.args[0][1:] if isinstance(n, torch.fx.Node)]
    return [tuple(n.meta["val"].shape) for n in saved]


@pytest.mark.parametrize("name", ["bert_no_mask", "hf_llama_repeat_kv"])
def test_forward_saves_only_inputs_output_and_lse(name):
    shapes = _saved_by_forward(name)
    _, _, mask, hkv = RECOGNISED[name]
    assert not any(s[-2:] == (S, S) for s in shapes), shapes
    # q (B, H, S, D) or its (B, S, H, D) source, k and v with Hkv heads, O (B, H, S, D), LSE (B, H, S), the mask.
    assert (B, H, S) in shapes and len(shapes) == 5 + (mask is not None), shapes
    assert sum(s in ((B, hkv, S, D), (B, S, hkv, D)) for s in shapes) >= 2, shapes  # k, v unexpanded


def test_forward_with_dropout_saves_the_seed_not_a_mask():
    shapes = _saved_by_forward("hf_llama_repeat_kv", p=P_DROP)
    _, _, mask, hkv = RECOGNISED["hf_llama_repeat_kv"]
    assert not any(s[-2:] == (S, S) for s in shapes), shapes  # no keep mask, no P
    # q, k, v, O, LSE, the mask, and the seed: one int64 (shape (1,) or ())
    assert (B, H, S) in shapes and len(shapes) == 6 + (mask is not None), shapes
    assert sum(s in ((1,), ()) for s in shapes) == 1, shapes


def test_forward_saves_scores_without_our_rewrite():
    # The same check fails when nothing is rewritten: eager attention saves P (B, H, S, S).
    assert any(s[-2:] == (S, S) for s in _saved_by_forward("bert_no_mask", enabled=False))


# ---------------------------------------------------------------------------------------------------------------
# Left alone: count 0 and eager results
# ---------------------------------------------------------------------------------------------------------------
def _softmax_dim_minus2(m, q, k, v, mask):
    q, k, v = _heads(q, k, v)
    return _merge((q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-2) @ v)


def _weights_returned(m, q, k, v, mask):
    q, k, v = _heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-1)
    return _merge(w @ v), w


def _weights_used_in_graph(m, q, k, v, mask):  # e.g. an attention-entropy regulariser: P has a second consumer
    q, k, v = _heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-1)
    return _merge(w @ v + w.amax(-1, keepdim=True))


def _weights_stored(m, q, k, v, mask):  # output_attentions-style: P kept on the module (a graph output for dynamo)
    q, k, v = _heads(q, k, v)
    w = (q @ k.transpose(-2, -1) * m.scaling).softmax(dim=-1)
    m.last_weights = w
    return _merge(w @ v)


def _mask_from_scores(m, q, k, v, mask):
    q, k, v = _heads(q, k, v)
    s = q @ k.transpose(-2, -1) * m.scaling
    return _merge(s.masked_fill(s < -1.0, float("-inf")).softmax(-1) @ v)


def _scale_along_keys(m, q, k, v, mask):  # a (Sk,) temperature is not a scalar scale
    q, k, v = _heads(q, k, v)
    return _merge((q @ k.transpose(-2, -1) * mask).softmax(-1) @ v)


def _repeat_heads_tiled(m, q, k, v, mask):  # k.repeat(1, G, 1, 1): head h reads kv head h % Hkv, not h // G
    q, k, v = _heads(q, k, v)
    k, v = k.repeat(1, H // HKV, 1, 1), v.repeat(1, H // HKV, 1, 1)
    return _merge((q @ k.transpose(-2, -1) * m.scaling).softmax(-1) @ v)


LEFT_ALONE = {  # name: (spelling, Attention kwargs, mask builder, Hkv, head dim)
    "softmax_dim_minus2": (_softmax_dim_minus2, {}, None, H, D),
    "weights_returned": (_weights_returned, {}, None, H, D),
    "weights_used_in_graph": (_weights_used_in_graph, {}, None, H, D),
    "weights_stored": (_weights_stored, {}, None, H, D),
    "mask_from_scores": (_mask_from_scores, {}, None, H, D),
    "head_dim_8": (_bert, {}, None, H, 8),
    "masked_fill_minus_1e4": (_masked_fill(-1e4), {}, _hidden(B, 1, S, S), H, D),
    "where_scalar_minus_1e4": (_where_scalar(-1e4), {}, _hidden(B, 1, S, S), H, D),
    "int_additive_mask": (_bert, {}, lambda: torch.randint(-2, 2, (B, 1, 1, S)), H, D),
    "scale_along_keys": (_scale_along_keys, {}, lambda: torch.rand(S) + 0.5, H, D),
    "softcap_two_constants": (_gemma2(1.5, 2.0), {}, _additive(B, 1, S, S), HKV, D),
    # the routing table (inductor_conv/heuristics/attention.py template_pays): soft-capping at head dim 256 with a mask
    # input the pass cannot prove causal is measured slower fused than in Inductor's own graph
    "softcap_d256_mask_input": (_gemma2(), {}, _additive(B, 1, S, S), HKV, 256),
}


def make_left_alone(name):
    spelling, kwargs, mask, hkv, d = LEFT_ALONE[name]
    torch.manual_seed(0)
    model = Attention(spelling, **kwargs)
    args = [torch.randn(B, S, H, d), torch.randn(B, S, hkv, d), torch.randn(B, S, hkv, d)]
    if mask is not None:
        args.append(mask())
    return model, args


# Inductor's own SDPA rewrite ignores the softmax dim and miscompiles this one (pytorch/pytorch#196468, open):
# its numerics are compared with Inductor's pattern matcher off. Our pass runs either way.
INDUCTOR_MISCOMPILES = ("softmax_dim_minus2",)


@functools.cache
def check_left_alone(name, *, train=False, device_types=("cpu",)) -> list[str]:
    """Compile a left-alone case: no rewrite, eager-equal results. Returns the graphs (cached, like
    check_recognised)."""
    with inductor_config.patch(pattern_matcher=name not in INDUCTOR_MISCOMPILES):
        return _check_left_alone(name, train, device_types)


def _check_left_alone(name, train, device_types):
    model, args = make_left_alone(name)
    if name == "weights_returned":
        out, counts, graphs = compile_and_run(model, *args, device_types=device_types)
        ref = model(*args)
        for got, want in zip(out, ref):
            torch.testing.assert_close(got, want, **TOL[torch.float32])
    else:
        counts, graphs = run_and_compare(model, args, train=train, dynamic=False, device_types=device_types)
    if name == "weights_stored":  # the weights the compiled model kept are eager's too
        ref = copy.deepcopy(model).double()
        ref(*(a.double() for a in args))
        torch.testing.assert_close(model.last_weights, ref.last_weights.float(), **TOL[torch.float32])
    assert counts["attention"] == 0 and not ops_in("".join(graphs)), graphs
    return graphs


@pytest.mark.parametrize("name", [pytest.param(name, marks=GOLDEN) if name in GOLDEN_LEFT_ALONE else name
                                  for name in LEFT_ALONE])
def test_left_alone(name):
    check_left_alone(name)


def test_repeat_tiled_heads_not_taken_for_gqa():
    # The tiled repeat is recognised as plain attention over the repeated K/V (correct), never as GQA.
    model, args = make_case("x", table={"x": (_repeat_heads_tiled, {}, None, HKV)})
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert op_arg_shapes(text) == [f"{B}, {H}, {S}, {D}"] * 3, text


def test_left_alone_on_other_device_types():
    check_left_alone("softmax_dim_minus2", device_types=("cuda",))
    model, args = make_case("bert_no_mask")
    counts, _ = run_and_compare(model, args, train=False, dynamic=False, device_types=("cuda",))
    assert counts["attention"] == 0


def _gemma2_causal_built_in_graph(m, q, k, v, mask=None):
    """Gemma 2's soft-capped attention with its causal mask built in the graph (a whole-model compile): provably
    causal, so the routing table keeps the rewrite at head dim 256 (the op runs is_causal)."""
    S = q.shape[1]
    causal = torch.full((S, S), torch.finfo(q.dtype).min, dtype=q.dtype).triu(1)
    return _gemma2()(m, q, k, v, causal)


def test_softcap_head_dim_256_routing():
    """template_pays: at head dim 256 a soft-capped attention is rewritten when its mask is provably causal, and
    left to Inductor when the mask is an input (the LEFT_ALONE case softcap_d256_mask_input)."""
    torch.manual_seed(0)
    model = Attention(_gemma2_causal_built_in_graph)
    args = [torch.randn(B, S, H, 256), torch.randn(B, S, HKV, 256), torch.randn(B, S, HKV, 256)]
    counts, graphs = run_and_compare(model, args, train=False, dynamic=False)
    assert counts["attention"] == 1, graphs
    check_left_alone("softcap_d256_mask_input")


def test_softcap_under_dynamic_shapes(monkeypatch):
    """Automatic dynamic shapes (a second length recompiles one dynamic graph) keep the soft-capping constant a
    number, so that graph is rewritten too; ``dynamic=True`` passes every Python float into the graph as a 0-d tensor
    input (no compile-time value), and the op's cap must be a number: left alone there, with eager's results."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # the op's torch fallback, as test_recognised_dynamic
    model, args = make_case("hf_gemma2_softcap")
    counts, graphs = run_and_compare(model, args, train=True, dynamic=True)
    assert counts["attention"] == 0 and not ops_in("".join(graphs)), graphs
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="inductor")
    with compiled_graph_caches_disabled(), inductor_conv.enabled(("cpu",)), recording_graphs() as graphs:
        for length in (S, S + 3):  # the second length: one recompile, dynamic
            q, k, v = torch.randn(B, length, H, D), torch.randn(B, length, HKV, D), torch.randn(B, length, HKV, D)
            mask = torch.randn(B, 1, length, length)
            inductor_conv.reset_counters()
            torch.testing.assert_close(compiled(q, k, v, mask), model(q, k, v, mask), **TOL[torch.float32])
            assert inductor_conv.counters()["attention"] == 1, length
    assert "Sym(" in graphs[-1], graphs[-1]  # the second graph is the dynamic one


def test_left_alone_when_attention_disabled():
    inductor_conv.config.attention = False
    try:
        model, args = make_case("hf_llama_repeat_kv")
        counts, _ = run_and_compare(model, args, train=True, dynamic=False)
        assert counts["attention"] == 0
    finally:
        inductor_conv.config.attention = True


# ---------------------------------------------------------------------------------------------------------------
# Predicates: each on a small traced graph, positive and negative
# ---------------------------------------------------------------------------------------------------------------
def _fake_match(fn, inputs, kwargs_names, **scalars):
    """A Match-like object over make_fx(fn)(*inputs): kwargs map names to placeholders (plus scalars), nodes are
    every call_function node, and the output node is the graph's first output."""
    gm = make_fx(fn, tracing_mode="fake")(*inputs)
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    (out,) = gm.graph.find_nodes(op="output")
    first = out.args[0][0] if isinstance(out.args[0], (list, tuple)) else out.args[0]
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    return SimpleNamespace(kwargs={**dict(zip(kwargs_names, placeholders)), **scalars}, nodes=nodes,
                           output_nodes=lambda: [first])


def _softmax_decomposed(s, dim):
    e = torch.exp(s - torch.amax(s, [dim], True))
    return e / torch.sum(e, [dim], True)


def _attention_fn(softmax_dim=-1, perm=(0, 1, 3, 2)):
    def fn(q, k, v):
        s = torch.matmul(q, k.permute(perm))
        return torch.matmul(_softmax_decomposed(s, softmax_dim), v)

    return fn


def _qkv(d=D, hkv=H, dtype=torch.float32, kb=B):
    return [torch.randn(B, H, S, d, dtype=dtype), torch.randn(kb, hkv, S, d, dtype=dtype),
            torch.randn(kb, hkv, S, d, dtype=dtype)]


QKV = ("query", "key", "value")


def test_predicate_device_enabled():
    m = _fake_match(_attention_fn(), _qkv(), QKV)
    with inductor_conv.enabled(("cpu",)):
        assert checks.device_enabled(m)
    with inductor_conv.enabled(("cuda",)):
        assert not checks.device_enabled(m)


def test_predicate_attention_enabled():
    m = _fake_match(_attention_fn(), _qkv(), QKV)
    assert checks.attention_enabled(m)
    inductor_conv.config.attention = False
    try:
        assert not checks.attention_enabled(m)
    finally:
        inductor_conv.config.attention = True


def test_predicate_qkv_consistent():
    assert checks.qkv_consistent(_fake_match(_attention_fn(), _qkv(), QKV))
    q, k, v = _qkv()
    assert not checks.qkv_consistent(_fake_match(lambda q, k, v: q, [q, k.double(), v], QKV))
    assert not checks.qkv_consistent(_fake_match(lambda q, k, v: q, [x.double() for x in (q, k, v)], QKV))


def test_predicate_head_dim_supported():
    assert checks.head_dim_supported(_fake_match(_attention_fn(), _qkv(d=16), QKV))
    assert not checks.head_dim_supported(_fake_match(_attention_fn(), _qkv(d=8), QKV))
    assert not checks.head_dim_supported(_fake_match(lambda q, k, v: q, _qkv(d=264), QKV))
    # v's head dim may differ from q's and k's (MLA), each within the limits; k's must be q's
    q, k, _ = _qkv(d=24)
    for d_v, supported in ((16, True), (256, True), (8, False), (264, False)):
        v = torch.randn(B, H, S, d_v)
        assert checks.head_dim_supported(_fake_match(lambda q, k, v: q, [q, k, v], QKV)) == supported, d_v
    assert not checks.head_dim_supported(_fake_match(lambda q, k, v: q, [q, k[..., :16], k[..., :16]], QKV))


def test_predicate_qkv_shapes_consistent():
    assert checks.qkv_shapes_consistent(_fake_match(lambda q, k, v: q, _qkv(hkv=2), QKV))
    assert not checks.qkv_shapes_consistent(_fake_match(lambda q, k, v: q, _qkv(hkv=3), QKV))  # 4 % 3
    assert not checks.qkv_shapes_consistent(_fake_match(lambda q, k, v: q, _qkv(kb=1), QKV))  # batch broadcast


def test_predicate_scores_and_output_shaped():
    assert checks.scores_and_output_shaped(_fake_match(_attention_fn(), _qkv(), QKV))
    q, k, _ = _qkv(d=24)  # the output has v's head dim
    assert checks.scores_and_output_shaped(_fake_match(_attention_fn(), [q, k, torch.randn(B, H, S, 16)], QKV))
    # q (B, H, S, D) against a "key" whose transpose gives (B, H, D, S) scores of another shape:
    q, k, v = _qkv()
    fn = lambda q, k, v: torch.matmul(_softmax_decomposed(q @ q.transpose(-2, -1), -1)[..., :4, :], v)  # noqa: E731
    assert not checks.scores_and_output_shaped(_fake_match(fn, [q, k[..., :4, :], v], QKV))


def test_predicate_softmax_over_last_dim():
    assert checks.softmax_over_last_dim(_fake_match(_attention_fn(softmax_dim=-1), _qkv(), QKV))
    assert checks.softmax_over_last_dim(_fake_match(_attention_fn(softmax_dim=3), _qkv(), QKV))
    assert not checks.softmax_over_last_dim(_fake_match(_attention_fn(softmax_dim=-2), _qkv(), QKV))


def test_predicate_key_transposed_last_two():
    assert checks.key_transposed_last_two(_fake_match(_attention_fn(perm=(0, 1, 3, 2)), _qkv(), QKV))
    # Swapping batch and heads instead (sizes chosen equal so the matmul still runs):
    q = torch.randn(H, H, S, D)
    fn = _attention_fn(perm=(1, 0, 3, 2))
    assert not checks.key_transposed_last_two(_fake_match(fn, [q, q.clone(), q.clone()], QKV))


def test_predicate_repeat_kv_interleaves():
    q, k, v = _qkv(hkv=HKV)

    def interleaved(q, k, v):
        return _repeat_kv(k, H // HKV)

    def tiled(q, k, v):  # head h <- kv head h % Hkv
        b, h, s, d = k.shape
        return k[:, None].expand(b, H // HKV, h, s, d).reshape(b, H, s, d)

    assert checks.repeat_kv_interleaves(_fake_match(interleaved, [q, k, v], QKV))
    assert not checks.repeat_kv_interleaves(_fake_match(tiled, [q, k, v], QKV))


def test_predicate_masks_supported():
    q, k, v = _qkv()
    names = (*QKV, "mask")
    ok = [torch.randn(B, 1, 1, S), torch.zeros(1, H, S, S, dtype=torch.bool), torch.randn(S)]
    bad = [torch.randint(0, 2, (B, 1, 1, S)), torch.randn(()), torch.randn(B, 1, 1, 2 * S), torch.randn(2, B, H, S, S)]
    for mask in ok:
        assert checks.masks_supported(_fake_match(lambda q, k, v, m: q, [q, k, v, mask], names)), mask.shape
    for mask in bad:
        assert not checks.masks_supported(_fake_match(lambda q, k, v, m: q, [q, k, v, mask], names)), mask.shape


def test_predicate_fill_supported():
    def m(fill, dtype=torch.float32):
        return _fake_match(lambda q, k, v: q, _qkv(dtype=dtype), QKV, fill=fill)

    assert checks.fill_supported(m(float("-inf")))
    assert checks.fill_supported(m(torch.finfo(torch.float32).min))
    assert checks.fill_supported(m(torch.finfo(torch.bfloat16).min, torch.bfloat16))
    assert not checks.fill_supported(m(-1e4))
    assert not checks.fill_supported(m(torch.finfo(torch.float16).min))  # not fp32's min: a finite, other value


def test_predicate_dropout_consistent():
    def dropped(p, scale):
        def fn(q, k, v):
            keep = torch.rand(B, H, S, S) > p
            return keep * _softmax_decomposed(q @ k.transpose(-2, -1), -1) * scale

        return fn

    q, k, v = _qkv()
    assert checks.dropout_consistent(_fake_match(dropped(0.25, 1 / 0.75), [q, k, v], QKV, dropout_p=0.25))
    assert not checks.dropout_consistent(_fake_match(dropped(0.25, 2.0), [q, k, v], QKV, dropout_p=0.25))
    assert not checks.dropout_consistent(_fake_match(dropped(0.25, 1 / 0.75), [q, k, v], QKV, dropout_p=1.5))
    assert checks.dropout_consistent(_fake_match(_attention_fn(), [q, k, v], QKV, dropout_p=0.0))


def test_predicate_no_outside_users():
    def fn(q, k, v):
        p = _softmax_decomposed(q @ k.transpose(-2, -1), -1)
        return p @ v, p

    assert not checks.no_outside_users(_fake_match(fn, _qkv(), QKV))  # p is also returned
    assert checks.no_outside_users(_fake_match(_attention_fn(), _qkv(), QKV))


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_dynamic_batch_equal_to_heads(train):
    """Under dynamic=True, q/k/v inputs whose batch equals their head count share one symbol, and the graph then
    reads a length from the scores (sym_size) for the reshapes after P @ V: a size query is not a use of the weights
    (it missed the rewrite). The bmm is gone from the compiled graph all the same."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 3, 8, 16) for _ in range(3))

    class Plain(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v

    counts, graphs = run_and_compare(Plain(), [q, k, v], train=train, dynamic=True)
    text = "".join(graphs)
    assert counts["attention"] == 1 and "aten.bmm" not in text, text
