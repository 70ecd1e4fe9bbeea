"""Hugging Face transformers' own model code, compiled with the plugin and no change to the model.

Tiny configurations (one or two layers, hidden size 32-64, random weights) of the model families whose eager code
our patterns were written from: each compiled model must have the expected number of rewrites (every attention and
every short conv of the model, none left behind) and compute eager's outputs and, in training, eager's parameter
gradients. The models use ``attn_implementation="eager"`` (the hand-written attention a user gets without SDPA or
flash-attention); the Mamba-style models use their torch fallback (no ``causal_conv1d`` / ``mamba_ssm`` kernels).

transformers is a test dependency on CPU (pinned in .ci/constraints-cpu.txt, so a new release that respells a model
shows up as a deliberate update); the module is skipped where transformers is not installed. The ``cuda`` cases
(``gpu`` marker) run the same models on the device with the rewrite enabled for CUDA graphs.
"""
from __future__ import annotations

import copy
import warnings

import pytest
import torch

import inductor_conv
from helpers import assert_as_close_as_eager, no_cpu_codegen
from inductor_conv._compat import compiled_graph_caches_disabled

transformers = pytest.importorskip("transformers")

# fp32 compiled against fp32 eager. On a CPU our kernels run in the interpreter and the ops around them as ATen calls
# (helpers.no_cpu_codegen); on CUDA Inductor's own fused reductions and matmuls round differently from eager's at the
# 1e-5 level.
TOL = {"cpu": dict(atol=1e-4, rtol=1e-4), "cuda": dict(atol=1e-3, rtol=1e-3)}
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
VOCAB, BATCH, LENGTH = 64, 2, 16


def _config(model_type: str, **kwargs):
    base = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=1, num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=64)
    return transformers.AutoConfig.for_model(model_type, **(base | kwargs))


def _causal_lm(model_type, **kwargs):
    return transformers.AutoModelForCausalLM.from_config(_config(model_type, **kwargs), attn_implementation="eager")


def _encoder(model_type, **kwargs):
    return transformers.AutoModel.from_config(_config(model_type, **kwargs), attn_implementation="eager")


def _t5():
    config = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=1, num_heads=4,
                                   dropout_rate=0.0)
    return transformers.T5ForConditionalGeneration._from_config(config, attn_implementation="eager")


def _kimi_linear():
    pytest.importorskip("transformers.models.kimi_linear")  # older releases lack it; CI pins one that has it
    return _causal_lm("kimi_linear", num_key_value_heads=4, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8,
                      v_head_dim=16, pad_token_id=0, bos_token_id=1, eos_token_id=2, layer_types=["full_attention"],
                      mlp_layer_types=["dense"])


# name -> (builder, expected counters, extra inputs). Counts are the model's attentions and short convs.
MODELS = {
    # GQA 4 query heads / 2 KV heads through repeat_kv, causal mask built in the graph
    "llama": (lambda: _causal_lm("llama", num_key_value_heads=2), dict(attention=1, causal_conv1d=0), {}),
    # GPT-2's attention with a left-padded batch: rows with no key left get eager's uniform softmax (finfo.min)
    "gpt2_left_padding": (lambda: _causal_lm("gpt2", n_embd=64, n_layer=1, n_head=4, n_positions=64),
                          dict(attention=1, causal_conv1d=0), dict(padding="left")),
    "bert_padding": (lambda: _encoder("bert"), dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # Falcon (rotary, multi-query): one K/V head that matmul broadcasts over the query heads, a padding mask
    "falcon": (lambda: _causal_lm("falcon"), dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # encoder self-attention, decoder self-attention, cross-attention: each adds a position bias, then a mask
    "t5": (_t5, dict(attention=3, causal_conv1d=0), dict(padding="right", decoder=True)),
    # length 8: the torch fallback's selective scan is a Python loop over positions that Dynamo unrolls (a graph,
    # and a compile, that grow with the length); 8 positions still span two conv windows of 4
    "mamba": (lambda: _causal_lm("mamba", hidden_size=32, state_size=4, expand=2, conv_kernel=4),
              dict(attention=0, causal_conv1d=1), dict(length=8)),
    # LFM2: a gated short conv with no activation, and an attention layer
    "lfm2": (lambda: _causal_lm("lfm2", num_key_value_heads=2, conv_L_cache=3, num_hidden_layers=2,
                                layer_types=["conv", "full_attention"]), dict(attention=1, causal_conv1d=1), {}),
    # Gemma 2: logit soft-capping (a cap of 1, so it bends these scores; the default 50 would not), GQA, a
    # sliding-window layer (window 8 of 16 positions) and a full one
    "gemma2": (lambda: _causal_lm("gemma2", num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                                  sliding_window=8, attn_logit_softcapping=1.0, query_pre_attn_scalar=16),
               dict(attention=2, causal_conv1d=0), {}),
    # Kimi-Linear's full-attention layer (KimiLinearAttention): its key is written into a new tensor by two slice
    # copies, a per-head part and a part one head shares with all; q/k head dim 8 + 8 equal to v's 16 (the op takes
    # one head dim); the layer types keep its linear-attention (KDA) layers out
    "kimi_linear": (_kimi_linear, dict(attention=1, causal_conv1d=0), {}),
}
TRAINING = ("llama", "falcon", "t5", "mamba", "gemma2", "kimi_linear")
# Mixed precision as people train: fp32 parameters under torch.autocast(bf16).
AUTOCAST = {"llama": dict(attention=1, causal_conv1d=0), "mamba": dict(attention=0, causal_conv1d=1),
            "lfm2": dict(attention=1, causal_conv1d=1), "t5": dict(attention=3, causal_conv1d=0),
            "gemma2": dict(attention=2, causal_conv1d=0)}


def _inputs(extra, generator, device="cpu"):
    ids = torch.randint(0, VOCAB, (BATCH, extra.get("length", LENGTH)), generator=generator)
    inputs = dict(input_ids=ids)
    if "padding" in extra:
        mask = torch.ones(BATCH, LENGTH, dtype=torch.long)
        if extra["padding"] == "left":
            mask[1, :3] = 0  # batch 1's first three query rows see no key at all
        else:
            mask[1, -5:] = 0
        inputs["attention_mask"] = mask
    if extra.get("decoder"):
        inputs["decoder_input_ids"] = torch.randint(0, VOCAB, (BATCH, LENGTH // 2), generator=generator)
    return {k: v.to(device) for k, v in inputs.items()}


def _run(model, inputs, *, train, compiled, autocast=False):
    """(output, parameter gradients or None)."""
    model.zero_grad(set_to_none=True)

    def forward(**kwargs):
        return model(**kwargs, use_cache=False)[0] if "decoder_input_ids" not in kwargs else model(**kwargs)[0]

    fn = torch.compile(forward, backend="inductor") if compiled else forward
    device = next(model.parameters()).device.type
    amp = torch.autocast(device, dtype=torch.bfloat16, enabled=autocast)
    with torch.set_grad_enabled(train), amp:
        out = fn(**inputs)
        if not train:
            return out, None
        out.float().square().mean().backward()
    return out, [p.grad for p in model.parameters() if p.grad is not None]


def _model(name, train, device="cpu"):
    build, _, _ = MODELS[name]
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build().float().train(train).to(device)
    if train:  # dropout off: the rewrite replays its own mask, not eager's, so values are compared without it
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        for attn in model.modules():
            if hasattr(attn, "attention_dropout") and isinstance(attn.attention_dropout, float):
                attn.attention_dropout = 0.0
    return model


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, train", [(n, False) for n in MODELS] + [(n, True) for n in TRAINING])
def test_model_is_rewritten_and_matches_eager(name, train, device):
    _, expected, extra = MODELS[name]
    model = _model(name, train, device)
    inputs = _inputs(extra, torch.Generator().manual_seed(1), device)
    want, want_grads = _run(model, inputs, train=train, compiled=False)

    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with compiled_graph_caches_disabled(), no_cpu_codegen(device), inductor_conv.enabled(device_types=(device,)):
        got, got_grads = _run(model, inputs, train=train, compiled=True)
    assert inductor_conv.counters() == expected
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
    model = _model(name, train=True, device=device)
    inputs = _inputs(extra, torch.Generator().manual_seed(1), device)
    want, want_grads = _run(model, inputs, train=True, compiled=False, autocast=True)
    model64 = copy.deepcopy(model).double()
    ref, ref_grads = _run(model64, inputs, train=True, compiled=False)
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with compiled_graph_caches_disabled(), no_cpu_codegen(device), inductor_conv.enabled(device_types=(device,)):
        got, got_grads = _run(model, inputs, train=True, compiled=True, autocast=True)
    assert inductor_conv.counters() == AUTOCAST[name]
    assert got.dtype == want.dtype
    assert_as_close_as_eager([got, *got_grads], [want, *want_grads], [ref, *ref_grads], name)


def test_llama_generate_with_kv_cache():
    """model.generate with a compiled forward: the prefill (Sq = Sk) and the decode steps (one query against the
    cached keys, Sq != Sk) are rewritten and the greedy tokens are eager's."""
    model = _model("llama", train=False)
    ids = torch.randint(0, VOCAB, (BATCH, 8), generator=torch.Generator().manual_seed(1))
    want = model.generate(ids, max_new_tokens=4, do_sample=False)
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with compiled_graph_caches_disabled(), no_cpu_codegen("cpu"), inductor_conv.enabled(device_types=("cpu",)):
        model.forward = torch.compile(model.forward)
        got = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert inductor_conv.counters()["attention"] >= 2  # one rewrite per compiled graph: prefill, decode
    assert torch.equal(got, want)


def test_llama_output_attentions_is_left_alone():
    """output_attentions=True returns the attention weights: the pattern is left alone, eager values kept."""
    model = _model("llama", train=False)
    ids = torch.randint(0, VOCAB, (BATCH, LENGTH), generator=torch.Generator().manual_seed(1))
    want = model(input_ids=ids, output_attentions=True)
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with compiled_graph_caches_disabled(), no_cpu_codegen("cpu"), inductor_conv.enabled(device_types=("cpu",)):
        got = torch.compile(lambda i: model(input_ids=i, output_attentions=True))(ids)
    assert inductor_conv.counters()["attention"] == 0
    torch.testing.assert_close(got.logits, want.logits, **TOL["cpu"])
    torch.testing.assert_close(got.attentions[0], want.attentions[0], **TOL["cpu"])
