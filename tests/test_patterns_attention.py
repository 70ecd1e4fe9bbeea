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
forward saves (q, k, v, mask, O, LSE: no Sq × Sk tensor). Head ratios, lengths and dtypes the case table does
not cover (repeat_kv with G = 4 and 8, cross-attention with Sq != Sk, T5's fp32 softmax in bf16) are compiled as
plain functions.

The cases (models' spellings, RECOGNISED, LEFT_ALONE) are in attention_forms_cases.py, the checks this file shares
with tests/test_golden_graphs_attention.py in attention_forms_checks.py.
"""
from __future__ import annotations

import copy
import functools
import math
import re
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from attention_forms_cases import (
    LEFT_ALONE, MASK_GRAD, P_DROP, RECOGNISED, B, D, H, HKV, S, Attention, additive, bert, deberta, gemma2, gpt_neo,
    heads, llama,
    make_case, make_left_alone, merge, nanogpt, one_hot_probe, t5,
)
from attention_forms_checks import (
    GOLDEN, GOLDEN_FROZEN, GOLDEN_LEFT_ALONE, GOLDEN_RECOGNISED, TOL, check_dropout_replay, check_frozen,
    check_left_alone, check_recognised, compiled_dropout, run_and_compare,
)
from helpers import assert_as_close_as_eager, compile_and_run, op_arg_shapes, ops_in, recording_graphs, repeat_kv
from torch.fx.experimental.proxy_tensor import make_fx

import inductor_conv
from inductor_conv._compat import compiled_graph_caches_disabled, dynamo_counters, inductor_config
from inductor_conv.patterns import attention_checks as checks

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
           ("masked_fill_finfo_min", False), ("sam_rel_pos_3d_matmul", True), ("mpnet_bias_expanded_over_batch", True),
           ("deberta_v3_disentangled", True), ("xlnet_subtracted_mask", True), ("funnel_three_terms", True),
           ("bros_bias_then_scale", True),
           ("bmm_where_finfo_min", True), ("where_scalar_finfo_min", True), ("where_scalar_minus_inf", False),
           ("bmm_learned_bias_broadcast", True), ("scale_mul", False), ("scale_div_math_sqrt", False),
           ("prescaled_q", False), ("bmm_prescaled_q", False), ("masked_fill_minus_inf", False),
           ("bloom_alibi_baddbmm", True), ("mpt_alibi_masked_fill", True), ("xglm_clamped_bmm", True),
           ("gpt_neo_tensor_fill", True), ("gpt_neox_japanese_baddbmm", True), ("falcon_alibi_multi_query", True),
           ("bart_masked_bmm", True), ("fsmt_key_padding", True), ("wavlm_gated_position_bias", True),
           ("levit_per_head_bias", True), ("torch_mha_trained_attn_mask", True), ("swinv2_per_head_scale", True),
           ("einsum", True), ("einsum_sequence_first", False), ("einsum_key_transposed", True),
           ("swin_window_mask", True)]


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


BF16 = [("hf_llama_repeat_kv", False), ("hf_llama_repeat_kv", True), ("hf_gpt2", True), ("bloom_alibi_baddbmm", True),
        ("mpt_alibi_masked_fill", True), ("xglm_clamped_bmm", True), ("gpt_neo_tensor_fill", False),
        ("falcon_alibi_twice", False), ("falcon_alibi_twice", True), ("bart_masked_bmm", True),
        ("fsmt_key_padding", True), ("deberta_v2_absolute", True), ("wavlm_gated_position_bias", True),
        ("swinv2_per_head_scale", True), ("xlnet_subtracted_mask", True), ("bros_bias_then_scale", True)]


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
            ("bmm_where_finfo_min", True), ("bmm_learned_bias_broadcast", True), ("bloom_alibi_baddbmm", True),
            ("mpt_alibi_masked_fill", True), ("xglm_clamped_bmm", True), ("falcon_alibi_twice", True),
            ("bart_masked_bmm", True), ("codegen_mask_then_scale", True), ("codegen_random_mask_then_scale", True),
            ("fsmt_key_padding", True), ("sam_rel_pos_3d_matmul", True), ("mpnet_bias_expanded_over_batch", False),
            ("mpnet_bias_expanded_over_batch", True), ("wavlm_gated_position_bias", True), ("levit_per_head_bias", True),
            ("swinv2_per_head_scale", False)]


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


def test_casts_cross_reshapes_between_a_matmul_and_its_operands():
    """BLOOM under autocast: the casts of baddbmm's operands, made after the reshapes that fold the heads into the
    batch, move before them (to q itself), and the cast of a scaled gradient ``bmm * alpha`` moves after the view back
    to 4-D; a cast after a reshape that feeds no matmul stays. Values and strides are unchanged."""
    from inductor_conv.patterns.autocast import casts_outside_layout_ops

    aten, cast = torch.ops.aten, torch.ops.prims.convert_element_type.default
    bf16, fp32 = torch.bfloat16, torch.float32

    def f(q, k, bias, w):
        q3 = cast(aten.view.default(aten.clone.default(q, memory_format=torch.contiguous_format), [6, 5, 4]), bf16)
        kt = cast(aten.permute.default(aten.view.default(k, [6, 5, 4]), [0, 2, 1]), bf16)
        s = aten.baddbmm.default(cast(bias, bf16), q3, kt, beta=1.0, alpha=0.5)
        dq = aten.view.default(cast(aten.mul.Scalar(aten.bmm.default(s, q3), 0.5), fp32), [2, 3, 5, 4])
        other = aten.sin.default(cast(aten.view.default(w, [6]), bf16))  # feeds no matmul
        return dq, other

    def cast_inputs(gm):
        return [n.args[0].target if n.args[0].op == "call_function" else n.args[0].op
                for n in gm.graph.nodes if n.op == "call_function" and n.target is cast]

    q = torch.randn(2, 5, 3, 4).transpose(1, 2)  # (2, 3, 5, 4) with BLOOM's strides: its reshape copies
    k, bias, w = torch.randn(2, 3, 5, 4), torch.randn(6, 1, 5), torch.randn(2, 3)
    gm = make_fx(f)(q, k, bias, w)
    assert casts_outside_layout_ops(gm.graph) == 5
    gm.recompile()
    # q's cast before its clone, k's before its view (then the transpose), the bias's unmoved (no reshape before
    # it), the gradient's after its view, and w's unmoved
    assert sorted(map(str, cast_inputs(gm))) == sorted(map(str, [
        "placeholder", "placeholder", "placeholder", aten.view.default, aten.view.default])), cast_inputs(gm)
    for got, want in zip(gm(q, k, bias, w), f(q, k, bias, w)):
        assert got.stride() == want.stride() and got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_cast_between_a_view_and_the_view_back_stays():
    """The older BART spelling under autocast: dS comes back from the mask's 4-D view as ``view(convert(view(dS,
    4-D)), 3-D)`` into the bmms' backward. That cast is not an operand's (the patterns are traced with it between
    the views) and stays; a cast after a view that is not undone still moves before it."""
    from inductor_conv.patterns.autocast import casts_outside_layout_ops

    aten, cast = torch.ops.aten, torch.ops.prims.convert_element_type.default

    def f(ds, k, x):
        ds3 = aten.view.default(cast(aten.view.default(ds, [2, 3, 5, 5]), torch.bfloat16), [6, 5, 5])
        x3 = cast(aten.view.default(aten.sin.default(x), [6, 5, 4]), torch.bfloat16)  # an operand's cast
        return aten.bmm.default(ds3, cast(k, torch.bfloat16)), aten.bmm.default(ds3, x3)

    def cast_inputs(gm):
        return [n.args[0].target if n.args[0].op == "call_function" else n.args[0].op
                for n in gm.graph.nodes if n.op == "call_function" and n.target is cast]

    ds, k, x = torch.randn(6, 5, 5), torch.randn(6, 5, 4), torch.randn(2, 3, 5, 4)
    gm = make_fx(f)(ds, k, x)
    assert casts_outside_layout_ops(gm.graph) == 1
    gm.recompile()
    assert sorted(map(str, cast_inputs(gm))) == sorted(map(str, [aten.view.default, "placeholder",
                                                                 aten.sin.default])), cast_inputs(gm)
    for got, want in zip(gm(ds, k, x), f(ds, k, x)):
        torch.testing.assert_close(got, want, atol=0, rtol=0)


def test_cast_of_a_transposed_gradient_stays():
    """GPT-Neo in bf16 upcasts k and then transposes it, so dK comes back as ``permute(convert(permute(dkᵀ)))``:
    the cast reads a matmul's gradient (through the transpose back), it is not an operand's cast, and it stays
    where the attention pattern leaves it outside the match. An operand's cast after a transpose still moves."""
    from inductor_conv.patterns.autocast import casts_outside_layout_ops

    aten, cast = torch.ops.aten, torch.ops.prims.convert_element_type.default

    def f(s, q, k):
        dk_t = aten.view.default(aten.bmm.default(s, q), [2, 3, 4, 5])  # (B, H, D, S): the gradient of kᵀ
        dk = aten.permute.default(cast(aten.permute.default(dk_t, [0, 1, 3, 2]), torch.bfloat16), [0, 2, 1, 3])
        kt = cast(aten.permute.default(k, [0, 2, 1]), torch.bfloat16)  # an operand's cast: moves to k
        return dk, aten.bmm.default(kt, cast(s, torch.bfloat16))

    s, q, k = torch.randn(6, 4, 5), torch.randn(6, 5, 5), torch.randn(6, 4, 5)
    gm = make_fx(f)(s, q, k)
    assert casts_outside_layout_ops(gm.graph) == 1
    gm.recompile()
    sources = [n.args[0] for n in gm.graph.nodes if n.op == "call_function" and n.target is cast
               and n.args[1] == torch.bfloat16]
    assert sorted(str(x.target if x.op == "call_function" else x.op) for x in sources) == sorted(
        [str(aten.permute.default), "placeholder", "placeholder"]), gm.code
    for got, want in zip(gm(s, q, k), f(s, q, k)):
        assert got.stride() == want.stride() and got.dtype == want.dtype
        torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.parametrize("then, merged", [("softmax", 1), ("relu", 0), ("other_mask", 0), ("numbers", 0)])
def test_mask_added_twice_merged_before_a_softmax(then, merged):
    """SwinV2's window mask added twice through two unsqueeze chains becomes one add of m + m, where the sum feeds a
    softmax; elsewhere, with two different masks, or adding a number twice (FSMT's `+ 1`s), the graph stays as it
    is."""
    from inductor_conv.patterns.graph_pass import repeated_mask_adds_merged

    def f(x, m, other):
        if then == "numbers":
            s = x + 1 + 1
        else:
            s = x + m.unsqueeze(1).unsqueeze(0)
            s = s + (other if then == "other_mask" else m).unsqueeze(1).unsqueeze(0)
        if then == "relu":
            return s.relu()
        e = (s - s.amax(dim=-1, keepdim=True)).exp()  # softmax as the joint graph has it, decomposed
        return e / e.sum(dim=-1, keepdim=True)

    torch.manual_seed(0)
    x, m, other = torch.randn(2, 3, 4, 8, 8), (torch.rand(3, 8, 8) < 0.3) * -100.0, torch.randn(3, 8, 8)
    gm = make_fx(f, tracing_mode="fake")(x, m, other)
    assert repeated_mask_adds_merged(gm.graph) == merged
    gm.recompile()
    torch.testing.assert_close(gm(x, m, other), f(x, m, other))


def test_scalar_constants_become_full():
    """GPT-Neo's ``torch.tensor(finfo.min, dtype, device)`` fill: a 0-d floating constant becomes ``full([], c)`` of
    the same value, dtype and device; a constant with elements is left as it is."""
    from inductor_conv.patterns.graph_pass import scalar_constants_as_full

    aten = torch.ops.aten

    def f(s, keep):
        fill = torch.tensor(torch.finfo(torch.float32).min, dtype=torch.float32)
        table = torch.tensor([1.5, -2.0])
        return torch.where(keep, s, fill) + table

    s, keep = torch.randn(3, 2), torch.rand(3, 2) > 0.5
    gm = make_fx(f)(s, keep)
    assert scalar_constants_as_full(gm.graph) == 1
    gm.recompile()
    (full,) = gm.graph.find_nodes(op="call_function", target=aten.full.default)
    assert full.args == ([], torch.finfo(torch.float32).min) and full.kwargs["dtype"] == torch.float32
    assert len(gm.graph.find_nodes(op="call_function", target=aten.lift_fresh_copy.default)) == 1  # the table
    torch.testing.assert_close(gm(s, keep), f(s, keep), atol=0, rtol=0)


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


def test_gqa_passes_unexpanded_kv():
    text = "".join(check_recognised("hf_llama_repeat_kv", train=True, dynamic=False))
    assert op_arg_shapes(text) == [f"{B}, {H}, {S}, {D}", f"{B}, {HKV}, {S}, {D}", f"{B}, {HKV}, {S}, {D}"], text
    assert not re.search(r'"f32\[\d+, \d+, \d+, \d+, \d+\]"', text), text  # no (B, Hkv, G, S, D) repeat left


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_value_head_dim_differs(train):
    """q and k with head dim 24, v with 16 (FlashAttention 3's (192, 128), DeepSeek's MLA, made small): rewritten
    with v as it is, the output (B, H, S, 16); GQA through repeat_kv too."""
    torch.manual_seed(0)
    model = Attention(llama)
    args = [torch.randn(B, S, H, 24), torch.randn(B, S, HKV, 24), torch.randn(B, S, HKV, 16), torch.randn(B, 1, S, S)]
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    text = "".join(graphs)
    assert counts["attention"] == 1, text
    assert op_arg_shapes(text) == [f"{B}, {H}, {S}, 24", f"{B}, {HKV}, {S}, 24", f"{B}, {HKV}, {S}, 16"], text


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_t5_inplace_bias(train):
    spelling = lambda m, q, k, v, mask: t5(m, q, k, v, mask, inplace=True)  # noqa: E731
    model, args = make_case("t5", table={"t5": (spelling, dict(bias_shape=(1, H, S, S)), None, H)})
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    assert counts["attention"] == 1, graphs


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_views_of_inputs_read_outside_the_match(train):
    """A view of a pattern input (kᵀ) that a node outside the match reads too stays for it: no_outside_users lets
    the rewrite happen, and the results are eager's."""
    spelling = functools.partial(deberta, position_bmms=True)
    model, args = make_case("deberta", table={"deberta": (spelling, dict(bias_shape=(S, D)),
                                                          RECOGNISED["deberta_v3_disentangled"][2], H)})
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    assert counts["attention"] == 1, graphs


class _MultiheadAttention(torch.nn.Module):
    """nn.MultiheadAttention as people call it: weights returned (its default) and dropped."""

    def __init__(self, p):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(H * D, H, dropout=p, batch_first=True)

    def forward(self, x, attn_mask, key_padding_mask):
        return self.mha(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask)[0]


@pytest.mark.parametrize("masks", ["attn_mask", "key_padding_mask", "both"])
def test_nn_multihead_attention(masks):
    """torch's multi-head attention with a bool causal attn_mask and/or a bool key_padding_mask (merged into one
    float mask under baddbmm) is rewritten; training compared with float64 eager (dropout off), and with dropout
    the rewrite still happens."""
    causal = torch.ones(S, S, dtype=torch.bool).triu(1) if masks != "key_padding_mask" else None
    padding = None
    if masks != "attn_mask":
        padding = torch.zeros(B, S, dtype=torch.bool)
        padding[1, -3:] = True
    model, x = _MultiheadAttention(0.0), torch.randn(B, S, H * D)
    counts, graphs = run_and_compare(_MhaInputs(model, causal, padding), [x], train=True, dynamic=False)
    assert counts["attention"] == 1 and ops_in("".join(graphs)) == ["attention_fwd", "attention_bwd"], graphs
    _, counts, _ = compile_and_run(_MultiheadAttention(0.1).train(), x, causal, padding)
    assert counts["attention"] == 1


class _MhaInputs(torch.nn.Module):
    """``model(x, *masks)`` as a module of x alone (run_and_compare gives its inputs gradients)."""

    def __init__(self, model, *masks):
        super().__init__()
        self.model, self.masks = model, masks

    def forward(self, x):
        return self.model(x, *self.masks)


def _contiguous_heads(m, q, k, v, mask):  # q, k, v given as contiguous (B, H, S, D): no layout copies at all
    return torch.softmax(q @ k.transpose(-2, -1) * m.scaling, dim=-1) @ v


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("layout", ["batch_1", "contiguous_heads"])
def test_layouts_without_copies(layout, train):
    """The traced pattern has layout copies (transposed q/k/v, B > 1); graphs without them match too."""
    torch.manual_seed(0)
    if layout == "batch_1":  # (1, H, S, D) views reshape to (H, S, D) without a copy
        model, args = Attention(bert), [torch.randn(1, S, H, D) for _ in range(3)]
    else:
        model, args = Attention(_contiguous_heads), [torch.randn(B, H, S, D) for _ in range(3)]
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    assert counts["attention"] == 1 and "aten.clone" not in "".join(graphs).split("attention_fwd")[0], graphs


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["hf_llama_repeat_kv", "hf_gpt2", "nanogpt", "bloom_alibi_baddbmm",
                                  "mpt_alibi_masked_fill", "xglm_clamped_bmm", "falcon_alibi_twice",
                                  "bart_masked_bmm", "codegen_random_mask_then_scale", "fsmt_key_padding",
                                  "sam_rel_pos_3d_matmul", "mpnet_bias_expanded_over_batch",
                                  "deberta_v3_disentangled", "wavlm_gated_position_bias", "levit_per_head_bias",
                                  "torch_mha_trained_attn_mask", "swinv2_per_head_scale", "einsum",
                                  "einsum_sequence_first", "swin_window_mask"])
def test_recognised_on_cuda_bf16(name):
    """The default device type: the rewrite on CUDA graphs, through the Triton templates; errors against float64 as
    eager bf16's (a fixed bf16 tolerance fails on single entries of SAM's gradients, whose bias is computed from q)."""
    model, args = make_case(name, torch.bfloat16)
    model, args = model.cuda(), [a.cuda() for a in args]
    counts, graphs = run_and_compare(model, args, train=True, dynamic=False, device_types=("cuda",), as_eager=True)
    assert counts["attention"] == 1, graphs


def test_two_layers_two_rewrites():
    def two_layers(m, q, k, v, mask):
        h = bert(m, q, k, v, mask).view(B, S, H, D)
        return nanogpt(m, h, k, v, None)

    model, args = make_case("x", table={"x": (two_layers, {}, additive(B, 1, 1, S), H)})
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


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_trained_per_head_scale(train):
    """SwinV2 trains its per-head logit scale: the scale's gradient reads the unscaled scores, which the op does not
    return, so training keeps eager's attention (no_outside_users), with eager's values and gradients; inference,
    where no gradient is taken, is rewritten with q's rows scaled."""
    model, args = make_case("swinv2_per_head_scale")
    model.log_scale = torch.nn.Parameter(model.log_scale.clone())
    counts, graphs = run_and_compare(model, args, train=train, dynamic=False)
    assert counts["attention"] == (0 if train else 1), graphs


def test_row_scale_across_the_head_dim_left_alone():
    """A factor per query row and head dim (last dim not 1) scales the scores' columns, not q's rows: no rewrite."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 8, 16) for _ in range(3))
    factors = torch.rand(3, 8, 8) + 0.5

    def f(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) * factors, dim=-1) @ v

    out, counts, _ = compile_and_run(f, q, k, v)
    assert counts["attention"] == 0
    torch.testing.assert_close(out, f(q, k, v), atol=1e-5, rtol=1e-5)


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
# Head ratios, lengths and dtypes the case table does not compile: plain functions of (B, H, S, D) tensors
# ---------------------------------------------------------------------------------------------------------------
def _llama_function(q, k, v, mask):  # HF Llama's GQA on (B, H, S, D) tensors
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    w = torch.matmul(q, k.transpose(2, 3)) * 0.25 + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def _compare_training(fn, inputs, n_grad, **compile_kw):
    """Compile fn(*inputs) with the first n_grad inputs needing grad; compare output and those grads with float64
    eager (TOL[torch.float32]: rounding stays ~1e-6 at S <= 11, D = 16). Returns (counters, graph texts)."""
    leaves = [t.clone().requires_grad_(i < n_grad) for i, t in enumerate(inputs)]
    out, counts, graphs = compile_and_run(fn, *leaves, **compile_kw)
    leaves64 = [t.double().requires_grad_(i < n_grad) for i, t in enumerate(inputs)]
    ref = fn(*leaves64)
    torch.testing.assert_close(out.double(), ref, **TOL[torch.float32])
    dout = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad(out, leaves[:n_grad], dout),
                         torch.autograd.grad(ref, leaves64[:n_grad], dout.double())):
        torch.testing.assert_close(got.double(), want, **TOL[torch.float32])
    return counts, graphs


@pytest.mark.parametrize("ratio", [4, 8])
def test_repeat_kv_ratios_become_native_gqa(ratio):
    """repeat_kv with G = 4 and 8 (the case table covers G = 1, 2): one rewrite, the op gets the
    unexpanded K/V, outputs and gradients match, and the count is mirrored in torch's dynamo counters."""
    torch.manual_seed(6)
    Hq, Hkv, S, D = 8, 8 // ratio, 8, 16
    inputs = [torch.randn(1, Hq, S, D), torch.randn(1, Hkv, S, D), torch.randn(1, Hkv, S, D), torch.randn(1, 1, S, 12)]
    counts, graphs = _compare_training(_llama_function, inputs, n_grad=3)
    text = "".join(graphs)
    assert counts["attention"] == 1 and ops_in(text) == ["attention_fwd", "attention_bwd"], text
    assert op_arg_shapes(text)[1:] == [f"1, {Hkv}, {S}, {D}"] * 2, text
    assert dynamo_counters["inductor_conv"]["attention"] == 1


def _cross(q, k, v, mask):  # encoder-decoder attention: Sq != Sk, padding mask (B, 1, 1, Sk), permuted output
    s = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + mask, dim=-1)
    return (s @ v).permute(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], -1)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_cross_attention_unequal_lengths(dynamic, monkeypatch):
    if dynamic:  # the op's torch fallback keeps it fast (as test_recognised_dynamic)
        monkeypatch.setenv("TRITON_INTERPRET", "0")
    torch.manual_seed(7)
    B, H, Sq, Sk, D = 3, 2, 5, 11, 16  # B != H: equal sizes would share one symbol under dynamic=True
    inputs = [torch.randn(B, H, Sq, D), torch.randn(B, H, Sk, D), torch.randn(B, H, Sk, D), torch.randn(B, 1, 1, Sk)]
    counts, graphs = _compare_training(_cross, inputs, n_grad=3, dynamic=dynamic)
    assert counts["attention"] == 1, graphs


def _t5_spelling(q, k, v, bias):  # HF T5: no scale, position bias, fp32 softmax cast back with type_as
    scores = torch.matmul(q, k.transpose(3, 2)) + bias
    return torch.matmul(F.softmax(scores.float(), dim=-1).type_as(scores), v)


def test_t5_float_type_as_softmax_in_bf16():
    """In fp32 ``.float()`` / ``.type_as`` are no-ops; in bf16 they are real converts the pattern must take.
    Compared with float64 eager: bf16 inputs, a bf16 output rounding and bf16 scores in eager (2^-8 relative on
    |S| ~ 4 shifts P by ~2e-2 at most), so 3e-2 (TOL[torch.bfloat16])."""
    torch.manual_seed(8)
    q, k, v = (torch.randn(1, 2, 8, 16, dtype=torch.bfloat16) for _ in range(3))
    bias = torch.randn(1, 2, 8, 8, dtype=torch.bfloat16)
    with torch.no_grad():
        out, counts, graphs = compile_and_run(_t5_spelling, q, k, v, bias)
    assert counts["attention"] == 1, graphs
    ref = _t5_spelling(*(t.double() for t in (q, k, v, bias)))
    torch.testing.assert_close(out.double(), ref, atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_float32_scores_from_half_q_and_k(device):
    """GPT-Neo's spelling in bf16 (Note [float32 scores]): the scores in float32 from upcast q and k. The rewrite
    computes that attention in bf16, as HF's own flash-attention path for GPT-Neo and GPT-J does, so it is compared
    as FlashAttention's tests compare: against float64, within a few times the error of the same attention computed
    by eager PyTorch in bf16 (helpers.assert_as_close_as_eager; eager's float32 scores themselves are more exact
    than either, its dQ and dK several times so)."""
    torch.manual_seed(11)
    model, args = make_case("gpt_neo_tensor_fill", torch.bfloat16, seed=11)
    half = Attention(functools.partial(gpt_neo, upcast=False)).to(torch.bfloat16)
    model, half = model.to(device), half.to(device)
    args = [a.to(device) for a in args]
    ref = copy.deepcopy(model).double()
    qkv = [a.clone().requires_grad_() for a in args[:3]]
    out, counts, graphs = compile_and_run(model, *qkv, args[3], device_types=(device,))
    assert counts["attention"] == 1 and ops_in("".join(graphs)) == ["attention_fwd", "attention_bwd"], graphs
    dy = torch.randn_like(out)
    qkv64, qkv_half = [a.double().requires_grad_() for a in args[:3]], [a.clone().requires_grad_() for a in args[:3]]
    want, got_half = ref(*qkv64, args[3].double()), half(*qkv_half, args[3])
    assert_as_close_as_eager([out, *torch.autograd.grad(out, qkv, dy)],
                             [got_half, *torch.autograd.grad(got_half, qkv_half, dy)],
                             [want, *torch.autograd.grad(want, qkv64, dy.double())], what="gpt_neo bf16")


# ---------------------------------------------------------------------------------------------------------------
# Dropout (p > 0): count, p reaches the op, determinism, keep fraction, backward uses the forward's keep mask
# ---------------------------------------------------------------------------------------------------------------


DROPOUT_SPELLINGS = {"nn_dropout": bert, "f_dropout": nanogpt}


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("spelling", list(DROPOUT_SPELLINGS))
def test_dropout_counted_and_p_reaches_op(spelling, train):
    _, _, _, counts, graphs = compiled_dropout(train, DROPOUT_SPELLINGS[spelling])
    text = "".join(graphs)
    assert counts["attention"] == 1 and f", {P_DROP}, False, " in text, text
    assert "aten.randint.low" in text and "aten.rand.default" not in text, text


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_dropout_dynamic_shapes(train):
    _, _, _, counts, graphs = compiled_dropout(train, nanogpt, dynamic=True)
    text = "".join(graphs)
    assert counts["attention"] == 1 and f", {P_DROP}, False, " in text and "aten.randint.low" in text, text


def test_dropout_deterministic_keep_fraction_and_backward():
    model, (q, k, v), out, counts, _ = compiled_dropout(train=True)
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
    qh, kh = (x.double().view(B, S, H, D).transpose(1, 2) for x in (q, k))
    p = torch.softmax(qh @ kh.transpose(-2, -1) * (1 / math.sqrt(D)), dim=-1)
    # B·H·S·S = 768 Bernoulli(1 - p) draws: std 0.018, so ±0.1 is > 5 sigma.
    check_dropout_replay(o1, q, k, v, p, keep_tolerance=0.1)


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


@pytest.mark.parametrize("name, frozen", [pytest.param(*c, marks=GOLDEN) if c in GOLDEN_FROZEN else c for c in FROZEN],
                         ids=[f"{name}-frozen_{frozen}" for name, frozen in FROZEN])
def test_recognised_with_frozen_inputs(name, frozen):
    check_frozen(name, frozen)


def test_frozen_inputs_with_dropout():
    """Frozen K/V with dropout: rewritten, and dQ uses the forward's keep mask (a float64 reconstruction from the
    dropped probabilities the one-hot V reveals, as test_dropout_deterministic_keep_fraction_and_backward)."""
    model = Attention(bert, p=P_DROP).train()
    q, k, v = one_hot_probe()
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


def _repeat_heads_tiled(m, q, k, v, mask):  # k.repeat(1, G, 1, 1): head h reads kv head h % Hkv, not h // G
    q, k, v = heads(q, k, v)
    k, v = k.repeat(1, H // HKV, 1, 1), v.repeat(1, H // HKV, 1, 1)
    return merge((q @ k.transpose(-2, -1) * m.scaling).softmax(-1) @ v)


@pytest.mark.parametrize("name", [pytest.param(name, marks=GOLDEN) if name in GOLDEN_LEFT_ALONE else name
                                  for name in LEFT_ALONE])
def test_left_alone(name):
    check_left_alone(name)


@pytest.mark.parametrize("name, fill", [("remasked_weights_used", "-3.4028234663852886e+38"),
                                        ("cpmant_weights_used", "-inf")])
def test_remask_restored_in_training_when_left_alone(name, fill):
    """Note [remasked probabilities] and Note [masked fill over a bias]: where the probabilities are not rewritten
    (they have a second consumer), both respellings are undone in the forward and the backward alike: eager's
    graph, eager's results."""
    (graph,) = check_left_alone(name, train=True)
    fills = re.findall(r"torch\.ops\.aten\.where\.self\((\w+), (\w+), \w+\)", graph)
    assert len(fills) == 4, graph  # the fill, the remask and the backward of each
    assert re.search(rf"scalar_tensor\.default\({re.escape(fill)},", graph), graph  # the fill as eager has it
    assert "aten.add.Tensor(add" not in graph, graph  # no fill left as an add


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
    return gemma2()(m, q, k, v, causal)


def test_softcap_head_dim_256_routing(monkeypatch):
    """template_pays: at head dim 256 a soft-capped attention is rewritten when its mask is provably causal, and
    when the mask is an input only while the template skips the tiles the mask empties (config.attention_mask_ranges,
    on by default); without that it is left to Inductor (the case softcap_d256_mask_input)."""
    torch.manual_seed(0)
    model = Attention(_gemma2_causal_built_in_graph)
    args = [torch.randn(B, S, H, 256), torch.randn(B, S, HKV, 256), torch.randn(B, S, HKV, 256)]
    counts, graphs = run_and_compare(model, args, train=False, dynamic=False)
    assert counts["attention"] == 1, graphs
    model, args = make_left_alone("softcap_d256_mask_input")
    counts, graphs = run_and_compare(model, args, train=False, dynamic=False)
    assert counts["attention"] == 1, graphs
    monkeypatch.setattr(inductor_conv.config, "attention_mask_ranges", False)
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
        return repeat_kv(k, H // HKV)

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
