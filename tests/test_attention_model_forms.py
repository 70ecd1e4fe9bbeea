"""Attention as single HF model families write it (patterns/attention_model_forms.py): BLOOM's ALiBi (``baddbmm`` on
scores viewed between 3-D and 4-D), MPT's (a bias buffer, then ``masked_fill``), Falcon's (before the scale, and
again in the mask), XGLM's clamped 3-D scores and the older BART spelling without the clamp, GPT-NeoX-Japanese's
BLOOM-like scores onto zeros.

The recognised cases ``bloom_alibi_baddbmm``, ``mpt_alibi_masked_fill``, ``falcon_alibi_twice``,
``xglm_clamped_bmm``, ``bart_masked_bmm`` (and ``gpt_neox_japanese_baddbmm``, in the pattern tests' static and
dynamic shapes) also run with every other form in test_patterns_attention.py (static and dynamic shapes, bf16,
autocast, CUDA) and their graphs are pinned in test_golden_graphs_attention.py; the HF models run in
test_hf_models.py. Here: dropout replayed from one keep mask in the forward and the backward (against a float64
reconstruction), and the spellings the rewrite must leave alone, each still computing eager's values.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from attention_forms_cases import (
    B, D, H, P_DROP, S, Attention, _bart_bmm, _bloom, _causal_left_padding, _falcon, _hidden, _mpt, heads, merge,
    one_hot_probe,
)
from attention_forms_checks import check_dropout_replay, run_and_compare
from helpers import compile_and_run, ops_in


def _bloom_like(beta=1.0, return_weights=False):
    """_bloom with another baddbmm beta, or returning the probabilities as well (BLOOM's layer returns them)."""

    def spelling(m, q, k, v, mask):
        q, k, v = heads(q, k, v)
        b, h, s, d = q.shape
        alibi = m.alibi.expand(b, h, 1, s).reshape(b * h, 1, s) if m.bias is None else m.bias
        w = alibi.baddbmm(q.reshape(b * h, s, d), k.reshape(b * h, s, d).transpose(-1, -2), beta=beta,
                          alpha=m.scaling)
        p = F.softmax(w.view(b, h, s, -1) + mask, dim=-1, dtype=torch.float32).to(q.dtype)
        o = merge(torch.bmm(p.view(b * h, s, -1), v.reshape(b * h, s, d)).view(b, h, s, d))
        return (o, p) if return_weights else o

    return spelling


def _inputs(build_mask=_causal_left_padding()):
    """Fresh q, k, v (B, S, H, D) and the mask ``build_mask`` makes (BLOOM's and XGLM's additive one by default)."""
    torch.manual_seed(0)
    return [torch.randn(B, S, H, D), torch.randn(B, S, H, D), torch.randn(B, S, H, D), build_mask()]


def _bloom_scores(model, q, k, mask):
    """BLOOM's scores in float64: q kᵀ / √D + ALiBi + the additive mask."""
    return q @ k.transpose(-2, -1) / math.sqrt(D) + model.alibi.double().expand(B, H, 1, S) + mask.double()


def _mpt_scores(model, q, k, hidden):
    """MPT's scores in float64: q kᵀ / √D + ALiBi, hidden keys at float32's finfo.min."""
    s = q @ k.transpose(-2, -1) / math.sqrt(D) + model.alibi.double()[0]
    return s.masked_fill(hidden, torch.finfo(torch.float32).min)


def _falcon_scores(model, q, k, mask):
    """Falcon's scores in float64: (q kᵀ + ALiBi) / √D + the additive mask."""
    return (q @ k.transpose(-2, -1) + model.alibi.double()) / math.sqrt(D) + mask.double()


def _bart_scores(model, q, k, mask):
    """The older BART spelling's scores in float64: (q / √D) kᵀ + the additive mask."""
    return q / math.sqrt(D) @ k.transpose(-2, -1) + mask.double()


DROPOUT = {"bloom": (_bloom, _causal_left_padding(), _bloom_scores), "mpt": (_mpt(), _hidden(B, 1, S, S), _mpt_scores),
           "falcon": (_falcon, _causal_left_padding(), _falcon_scores),
           "bart": (_bart_bmm, _causal_left_padding(), _bart_scores)}


@pytest.mark.parametrize("spelling", list(DROPOUT))
def test_dropout_replays_one_keep_mask_forward_and_backward(spelling):
    """One keep mask, read from the dropout probe's output, gives the output and the gradients of q, k and v with
    float64 math (attention_forms_checks.check_dropout_replay)."""
    forward, build_mask, scores = DROPOUT[spelling]
    model = Attention(forward, p=P_DROP).train()
    q, k, v = (x.requires_grad_() for x in one_hot_probe())
    mask = build_mask()
    torch.manual_seed(123)
    out, counts, graphs = compile_and_run(model, q, k, v, mask)
    text = "".join(graphs)
    assert counts["attention"] == 1 and ops_in(text) == ["attention_fwd", "attention_bwd"], text
    assert f", {P_DROP}, False, " in text and "aten.randint.low" in text, text

    qh, kh = (x.detach().double().transpose(1, 2) for x in (q, k))
    # a few hundred Bernoulli(1 - p) draws: std <= 0.03, so ±0.15 is > 5 sigma
    check_dropout_replay(out, q, k, v, torch.softmax(scores(model, qh, kh, mask), dim=-1), keep_tolerance=0.15)


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_baddbmm_beta_other_than_one_is_left_alone(train):
    # beta scales the bias: alpha·q kᵀ + beta·alibi is not the op's scores plus one mask the replacement builds
    counts, graphs = run_and_compare(Attention(_bloom_like(beta=0.5)), _inputs(), train=train, dynamic=False)
    assert counts["attention"] == 0 and not ops_in("".join(graphs))


def test_probabilities_returned_are_left_alone():
    model, args = Attention(_bloom_like(return_weights=True)), _inputs()
    (out, weights), counts, graphs = compile_and_run(model, *args)
    want_out, want_weights = model(*args)
    assert counts["attention"] == 0 and not ops_in("".join(graphs))
    torch.testing.assert_close(out, want_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, want_weights, atol=1e-5, rtol=1e-5)


def test_learned_bias_is_left_alone():
    # a bias that is trained gets its gradient from dS, which the op does not return
    model = Attention(_bloom_like(), bias_shape=(B * H, 1, S))
    counts, graphs = run_and_compare(model, _inputs(), train=True, dynamic=False)
    assert counts["attention"] == 0 and not ops_in("".join(graphs))


def test_mpt_fill_other_than_min_is_left_alone():
    # a finite fill above finfo.min is a score that can still get probability: no mask expresses it
    counts, graphs = run_and_compare(Attention(_mpt(-1e4)), _inputs(_hidden(B, 1, S, S)), train=False, dynamic=False)
    assert counts["attention"] == 0 and not ops_in("".join(graphs))


def test_mpt_learned_bias_is_left_alone():
    def learned(m, q, k, v, hidden):  # MPT's spelling with a trained (H, 1, S) bias
        q, k, v = heads(q, k, v)
        s = (torch.matmul(q, k.transpose(-1, -2)) * m.scaling + m.bias).masked_fill(hidden, torch.finfo(q.dtype).min)
        return merge(torch.matmul(F.softmax(s.float(), dim=-1).to(v.dtype), v))

    counts, graphs = run_and_compare(Attention(learned, bias_shape=(H, 1, S)), _inputs(_hidden(B, 1, S, S)),
                                     train=True, dynamic=False)
    assert counts["attention"] == 0 and not ops_in("".join(graphs))


def test_xglm_clamp_above_finfo_min_is_left_alone():
    def clamped(m, q, k, v, mask):  # XGLM's spelling clamped at -1e4: hidden keys would get probability back
        q, k, v = heads(q * m.scaling, k, v)
        b, h, s, d = q.shape
        w = torch.bmm(q.reshape(b * h, s, d), k.reshape(b * h, s, d).transpose(1, 2)).view(b, h, s, s) + mask
        w = torch.max(w, torch.full((), -1e4, dtype=w.dtype)).view(b * h, s, s)
        return merge(torch.bmm(F.softmax(w, dim=-1), v.reshape(b * h, s, d)).view(b, h, s, d))

    counts, graphs = run_and_compare(Attention(clamped), _inputs(), train=False, dynamic=False)
    assert counts["attention"] == 0 and not ops_in("".join(graphs))
