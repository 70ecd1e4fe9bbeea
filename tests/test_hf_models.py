"""Hugging Face transformers' own model code, compiled with the plugin and no change to the model.

Tiny configurations (one or two layers, hidden size 32-64, random weights; tests/hf_models.py) of the model families
whose eager code our patterns were written from: each compiled model must have the expected number of rewrites
(every attention and every short conv of the model, none left behind) and compute eager's outputs and, in training,
eager's parameter gradients. The models use ``attn_implementation="eager"`` (the hand-written attention a user gets
without SDPA or flash-attention); the Mamba-style models use their torch fallback (no ``causal_conv1d`` /
``mamba_ssm`` kernels).

transformers is a test dependency on CPU (pinned in .ci/constraints-cpu.txt, so a new release that respells a model
shows up as a deliberate update); the module is skipped where transformers is not installed. The ``cuda`` cases
(``gpu`` marker) run the same models on the device with the rewrite enabled for CUDA graphs.
"""
from __future__ import annotations

import contextlib
import copy

import pytest
import torch

import inductor_conv
from helpers import assert_as_close_as_eager, no_cpu_codegen
from inductor_conv._compat import compiled_graph_caches_disabled, dynamo_counters

pytest.importorskip("transformers")
from hf_models import BATCH, LENGTH, MODELS, VOCAB, build_model, model_inputs, run_model  # noqa: E402

# fp32 compiled against fp32 eager. On a CPU our kernels run in the interpreter and the ops around them as ATen calls
# (helpers.no_cpu_codegen); on CUDA Inductor's own fused reductions and matmuls round differently from eager's at the
# 1e-5 level.
TOL = {"cpu": dict(atol=1e-4, rtol=1e-4), "cuda": dict(atol=1e-3, rtol=1e-3)}
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
TRAINING = ("llama", "falcon", "t5", "mamba", "gemma2", "kimi_linear", "gpt_oss", "bloom", "mpt", "xglm", "gpt_neo",
            "granite_swa", "mimo_v2_flash", "gpt_neox_japanese", "falcon_alibi", "flint", "inkling2", "trocr",
            "fsmt", "deberta_v3", "mpnet", "wavlm", "wav2vec2_conformer", "parakeet", "wav2vec2_bert", "xlnet",
            "xlnet_segments", "funnel", "bros", "cpmant", "fastspeech2_conformer")
# Trained models whose relative-position bias is looked up from a small table (32 buckets x heads): its gradient is
# summed per row, one table per encoder / decoder stack (Note [small table gradients] in patterns/table_grad.py).
TABLE_GRADS = {"t5": 2, "mpnet": 1}
# Mixed precision as people train: fp32 parameters under torch.autocast(bf16). (XGLM's own code fails in float64,
# the reference here. FSMT is rewritten under autocast too, but its tiny config's q/k gradients come out at 3-6x eager
# autocast's relative error: its attention is nearly uniform, so dS = P∘(dP - Δ) cancels, and Δ comes from the bf16
# output, as in FlashAttention's backward; benchmarks/diagnostics/autocast_error.py --models fsmt. WavLM's tiny
# config is left out: its layers' float64 gradients are 1e-8 to 1e-27, below eager autocast's own errors. Funnel is
# not rewritten under autocast: it rounds its float32 masked scores to half before the softmax, README.)
AUTOCAST = {"llama": dict(attention=1, causal_conv1d=0), "mamba": dict(attention=0, causal_conv1d=1),
            "lfm2": dict(attention=1, causal_conv1d=1), "t5": dict(attention=3, causal_conv1d=0),
            "gemma2": dict(attention=2, causal_conv1d=0), "bloom": dict(attention=1, causal_conv1d=0),
            "mpt": dict(attention=1, causal_conv1d=0), "falcon_alibi": dict(attention=1, causal_conv1d=0),
            "trocr": dict(attention=1, causal_conv1d=0), "codegen": dict(attention=1, causal_conv1d=0),
            "deberta_v3": dict(attention=1, causal_conv1d=0), "mpnet": dict(attention=1, causal_conv1d=0),
            "xlnet": dict(attention=1, causal_conv1d=0), "bros": dict(attention=1, causal_conv1d=0)}


@contextlib.contextmanager
def _compiling(device):
    """Dynamo's caches and the rewrite counters reset, Inductor's graph caches off, the plugin on for ``device`` (on
    a CPU without C++ for the ops around ours: helpers.no_cpu_codegen)."""
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with compiled_graph_caches_disabled(), no_cpu_codegen(device), inductor_conv.enabled(device_types=(device,)):
        yield


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, train", [(n, False) for n in MODELS] + [(n, True) for n in TRAINING])
def test_model_is_rewritten_and_matches_eager(name, train, device):
    _, expected, extra = MODELS[name]
    model = build_model(name, train, device)
    inputs = model_inputs(extra, torch.Generator().manual_seed(1), device)
    # cuDNN's convolutions in float32, not TF32 (on by default), while eager and compiled runs are compared in float32:
    # TF32 rounds each convolution's inputs to 10 mantissa bits, so two runs whose conv inputs differ in their last
    # bits (a compiled graph's fused ops round differently) can differ by ~1e-3 after a stack of convolutions, as
    # FastSpeech2-Conformer's postnet and predictors are (2.5e-3-4.2e-3 on an H100 with TF32 on, against TOL's 1e-3;
    # Parakeet's subsampling convs, up to 4% of a gradient entry; both within TOL with it off, H100 2026-12-06).
    # The attention kernels compute float32 in IEEE precision. (No effect on a CPU.)
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        want, want_grads = run_model(model, inputs, train=train, compiled=False)
        with _compiling(device):
            got, got_grads = run_model(model, inputs, train=train, compiled=True)
    if device == "cpu" and "cpu_attention" in extra:  # a CPU graph Inductor decomposed differently (FSMT)
        expected = dict(expected, attention=extra["cpu_attention"])
    assert inductor_conv.counters() == expected
    if train and name in TABLE_GRADS:
        assert dynamo_counters["inductor_conv"]["small_table_grad"] == TABLE_GRADS[name]
    torch.testing.assert_close(got, want, **TOL[device])
    if train:
        assert len(got_grads) == len(want_grads)
        for g, w in zip(got_grads, want_grads):
            torch.testing.assert_close(g, w, **TOL[device])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", AUTOCAST)
def test_model_under_autocast(name, device):
    """Training under torch.autocast(bf16): the rewrites happen (patterns/autocast.py moves autocast's casts to
    where the patterns have them), and outputs and gradients are as close to a float64 run as eager autocast's are
    (helpers.assert_as_close_as_eager)."""
    _, _, extra = MODELS[name]
    model = build_model(name, train=True, device=device)
    inputs = model_inputs(extra, torch.Generator().manual_seed(1), device)
    want, want_grads = run_model(model, inputs, train=True, compiled=False, autocast=True)
    model64 = copy.deepcopy(model).double()
    ref, ref_grads = run_model(model64, inputs, train=True, compiled=False)
    with _compiling(device):
        got, got_grads = run_model(model, inputs, train=True, compiled=True, autocast=True)
    assert inductor_conv.counters() == AUTOCAST[name]
    assert got.dtype == want.dtype
    assert_as_close_as_eager([got, *got_grads], [want, *want_grads], [ref, *ref_grads], name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["gpt_neo", "gptj", "codegen", "flint"])
def test_model_in_bf16_with_float32_scores(name, device):
    """bf16 weights, training: these models upcast q and k to compute their scores in float32 (Flint joins its bf16
    sinks to them), which the rewrite computes in bf16 as HF's flash-attention path for them does (Note [float32
    scores] in attention_forms.py). Outputs and gradients are as close to a float64 run as eager bf16's are
    (helpers.assert_as_close_as_eager)."""
    _, expected, extra = MODELS[name]
    model = build_model(name, train=True, device=device)
    model64 = copy.deepcopy(model).double()
    model = model.to(torch.bfloat16)
    inputs = model_inputs(extra, torch.Generator().manual_seed(1), device)
    want, want_grads = run_model(model, inputs, train=True, compiled=False)
    ref, ref_grads = run_model(model64, inputs, train=True, compiled=False)
    with _compiling(device):
        got, got_grads = run_model(model, inputs, train=True, compiled=True)
    assert inductor_conv.counters() == expected
    assert got.dtype == want.dtype == torch.bfloat16
    assert_as_close_as_eager([got, *got_grads], [want, *want_grads], [ref, *ref_grads], name)


@pytest.mark.parametrize("name", ["llama", "bloom", "mpt", "xglm", "gpt_neo"])
def test_generate_with_kv_cache(name):
    """model.generate with a compiled forward: the prefill (Sq = Sk) and the decode steps (one query against the
    cached keys, Sq != Sk) are rewritten and the greedy tokens are eager's; for BLOOM and MPT the decode steps slice
    the ALiBi bias to the cached keys (patterns/attention_model_forms.py)."""
    model = build_model(name, train=False)
    model.generation_config.pad_token_id = 0
    ids = torch.randint(3, VOCAB, (BATCH, 8), generator=torch.Generator().manual_seed(1))  # no special tokens
    want = model.generate(ids, max_new_tokens=4, do_sample=False)
    with _compiling("cpu"):
        model.forward = torch.compile(model.forward)
        got = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert inductor_conv.counters()["attention"] >= 2  # one rewrite per compiled graph: prefill, decode
    assert torch.equal(got, want)


def test_llama_output_attentions_is_left_alone():
    """output_attentions=True returns the attention weights: the pattern is left alone, eager values kept."""
    model = build_model("llama", train=False)
    ids = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=torch.Generator().manual_seed(1))
    want = model(input_ids=ids, output_attentions=True)
    with _compiling("cpu"):
        got = torch.compile(lambda i: model(input_ids=i, output_attentions=True))(ids)
    assert inductor_conv.counters()["attention"] == 0
    torch.testing.assert_close(got.logits, want.logits, **TOL["cpu"])
    torch.testing.assert_close(got.attentions[0], want.attentions[0], **TOL["cpu"])
