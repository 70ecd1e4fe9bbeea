"""Compile an attention case of attention_forms_cases.py with our pass and check it, one helper per kind of check:
``run_and_compare`` (outputs and gradients against float64 eager), ``check_recognised`` / ``check_frozen`` (one
rewrite, no bmm or softmax left), ``check_left_alone`` (no rewrite) and ``compiled_dropout`` (the dropout probe).

tests/test_patterns_attention.py and tests/test_golden_graphs_attention.py both call them; the ``check_*`` results
are cached, so under pytest-xdist the GOLDEN group compiles each case once for both files.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import math

import pytest
import torch
from attention_forms_cases import (
    B, D, H, MASK_GRAD, P_DROP, S, Attention, bert, make_case, make_left_alone, one_hot_probe,
)
from helpers import assert_as_close_as_eager, compile_and_run, ops_in

from inductor_conv._compat import inductor_config

# fp32 compiled (the op: S = 8 keys, D = 16 products per score, fp32 accumulate) against float64 eager: rounding
# stays below ~1e-6 for O(1) inputs, so 1e-5 still fails on any wrong term, scale or mask (>= 1e-3 here).
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5),
       # bf16: inputs/outputs carry 8 mantissa bits (4e-3 relative) and the backward rounds dS; 3e-2 is ~8 ulps.
       torch.bfloat16: dict(atol=3e-2, rtol=3e-2)}


# ---------------------------------------------------------------------------------------------------------------
# One helper per kind of check
# ---------------------------------------------------------------------------------------------------------------
def _grads(model, args, out, dy):
    inputs = [a for a in args if a.requires_grad] + [p for p in model.parameters() if p.requires_grad]
    return torch.autograd.grad(out, inputs, dy)


def run_and_compare(model, args, *, train, dynamic, device_types=("cpu",), mask_grad=False, autocast=None, frozen="",
                    as_eager=False):
    """Compile model(*args) with our pass; compare outputs (and gradients of q, k, v, every parameter and, with
    mask_grad, the float mask) with float64 eager. ``autocast``: a dtype the compiled model runs under
    ``torch.autocast`` with; the float64 reference runs without, and each result is then compared with eager
    autocast's error (helpers.assert_as_close_as_eager); ``as_eager``: the same comparison for half inputs without
    autocast (eager in the inputs' dtype sets the error allowed). ``frozen``: letters of the inputs that get no gradient in
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
    against_eager = autocast or as_eager
    with torch.set_grad_enabled(train):
        with amp:
            out, counts, graphs = compile_and_run(model, *args, dynamic=dynamic, device_types=device_types)
            out_eager = eager(*args_eager) if against_eager else None
        assert out.dtype == dtype
        expected = ref(*args64)
        got, want, eager_got = [out], [expected], [out_eager]
        if train:
            dy = torch.randn_like(out)
            got += _grads(model, args, out, dy)
            want += _grads(ref, args64, expected, dy.double())
            eager_got += _grads(eager, args_eager, out_eager, dy) if against_eager else [None] * (len(got) - 1)
        if against_eager:
            assert_as_close_as_eager(got, eager_got, want)
        else:
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w.to(g.dtype), **TOL[dtype])
    return counts, graphs


# tests/test_golden_graphs_attention.py pins the graphs of these compilations, which the caches of check_recognised,
# check_frozen and check_left_alone serve to both files: under pytest-xdist (README's ``-n 2 --dist loadgroup``) the
# tests of both files that read them run in one worker (the group), so each case is compiled once.
GOLDEN = pytest.mark.xdist_group("attention_golden")
GOLDEN_RECOGNISED = {  # (name, train)
    *((name, train) for name in ("bert_additive_mask", "bert_no_mask", "nanogpt", "hf_gpt2", "hf_llama_repeat_kv",
                                 "hf_gemma2_softcap", "t5_learned_bias", "t5_v5_bias_then_padding", "bmm_additive_mask",
                                 "masked_fill_finfo_min", "prescaled_q", "scale_div_torch_full")
      for train in (False, True)),
    ("bert_learned_mask_bhss", True), ("hf_gpt2_padding", False), ("hf_gpt2_padding", True),
    ("gpt2_scalar_fill_padding", False), ("multi_query_broadcast", True), ("alibi_then_padding", False),
    ("bmm_masked_fill", False), ("bmm_where_finfo_min", True), ("where_scalar_finfo_min", True),
    ("bmm_learned_bias_broadcast", True), ("kimi_key_assembled", True), ("bloom_alibi_baddbmm", False),
    ("bloom_alibi_baddbmm", True), ("mpt_alibi_masked_fill", False), ("mpt_alibi_masked_fill", True),
    ("xglm_clamped_bmm", False), ("xglm_clamped_bmm", True), ("falcon_alibi_twice", False),
    ("falcon_alibi_twice", True), ("bart_masked_bmm", False), ("bart_masked_bmm", True),
    ("sam_rel_pos_3d_matmul", False), ("torch_mha_key_padding", False), ("deberta_v3_disentangled", True),
    ("levit_per_head_bias", True), ("xlnet_subtracted_mask", False), ("funnel_three_terms", False),
    ("bros_bias_then_scale", True), ("cpmant_bias_masked_fill_remasked", True),
    ("fastspeech2_bias_then_scale_masked_fill_remasked", False)}
GOLDEN_LEFT_ALONE = {"weights_used_in_graph", "weights_stored", "softmax_dim_minus2", "weights_returned",
                     "mask_from_scores", "head_dim_8", "masked_fill_minus_1e4", "int_additive_mask", "scale_along_keys",
                     "softcap_two_constants"}
GOLDEN_FROZEN = {("bert_additive_mask", "kv"), ("hf_llama_repeat_kv", "q")}


@functools.cache
def check_recognised(name, *, train, dynamic, dtype=torch.float32) -> list[str]:
    """Compile a recognised case: one rewrite, no bmm or softmax left, eager-equal results (in half precision, as
    close to float64 as eager in that dtype is: run_and_compare's ``as_eager``). Returns the graphs (cached:
    tests/test_golden_graphs_attention.py pins the same compilations)."""
    model, args = make_case(name, dtype)
    counts, graphs = run_and_compare(model, args, train=train, dynamic=dynamic, mask_grad=name in MASK_GRAD,
                                     as_eager=dtype != torch.float32)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert ops_in(text) == (["attention_fwd", "attention_bwd"] if train else ["attention_fwd"]), text
    assert "aten.bmm" not in text and "aten.amax" not in text, text
    return graphs


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
    if name.endswith("weights_returned"):
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


def compiled_dropout(train, spelling=bert, dynamic=False):
    """The dropout probe (one_hot_probe) through ``spelling`` with p = P_DROP in training mode, compiled under a
    fixed seed. Returns (model, (q, k, v), output, counters, recorded graph texts)."""
    model = Attention(spelling, p=P_DROP).train()
    q, k, v = (x.requires_grad_(train) for x in one_hot_probe())
    with torch.set_grad_enabled(train):
        torch.manual_seed(123)
        out, counts, graphs = compile_and_run(model, q, k, v, dynamic=dynamic)
    return model, (q, k, v), out, counts, graphs


def check_dropout_replay(out, q, k, v, p, keep_tolerance):
    """The dropout probe's output (one_hot_probe's one-hot v: O[..., :S] is the dropped, rescaled P itself) read back
    as the keep mask must give, with the float64 probabilities ``p`` (B, H, S, S): a kept fraction within
    ``keep_tolerance`` of 1 − P_DROP over the entries P lets show (P > 0; a masked key cannot show its draw), the
    output itself, and the gradients of q, k and v (dS = P ∘ (dP' − rowsum(dP' ∘ P)), dP' = keep ∘ dO vᵀ / (1 − p)).
    q, k, v: the (B, S, H, D) leaves ``out`` was computed from."""
    kept = out.view(B, S, H, D).transpose(1, 2)[..., :S].double()  # (B, H, Sq, Sk) = keep ∘ P / (1 - p)
    keep = kept != 0
    assert abs(keep[p > 0].double().mean().item() - (1 - P_DROP)) < keep_tolerance
    torch.testing.assert_close(kept, p * keep / (1 - P_DROP), atol=1e-5, rtol=1e-5)
    qh, kh, vh = (x.detach().double().transpose(1, 2) for x in (q, k, v))
    dy = torch.randn_like(out)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), dy)
    dyh = dy.double().view(B, S, H, D).transpose(1, 2)
    scale = 1 / math.sqrt(D)
    dp = (dyh @ vh.transpose(-2, -1)) * keep / (1 - P_DROP)
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    want = {"q": ds @ kh * scale, "k": ds.transpose(-2, -1) @ qh * scale,
            "v": (p * keep / (1 - P_DROP)).transpose(-2, -1) @ dyh}
    for got, name in ((dq, "q"), (dk, "k"), (dv, "v")):
        torch.testing.assert_close(got.transpose(1, 2).double(), want[name], atol=1e-5, rtol=1e-5)
