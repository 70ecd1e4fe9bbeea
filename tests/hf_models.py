"""Tiny Hugging Face models for tests/test_hf_models.py and benchmarks/diagnostics/autocast_error.py: transformers'
own model code in one- or two-layer configurations (hidden size 32-64, random weights), their inputs, and one
forward (+ backward) step, eager or compiled.

The models use ``attn_implementation="eager"`` (the hand-written attention a user gets without SDPA or
flash-attention); the Mamba-style models use their torch fallback (no ``causal_conv1d`` / ``mamba_ssm`` kernels).
Importing this module needs transformers (test_hf_models.py skips itself first where it is not installed).
"""
from __future__ import annotations

import warnings

import pytest
import torch
import transformers

VOCAB, BATCH, LENGTH = 64, 2, 16
_TRANSFORMERS = tuple(int(x) for x in transformers.__version__.split(".")[:2])


def _config(model_type: str, **kwargs):
    base = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=1, num_attention_heads=4, intermediate_size=128,
                max_position_embeddings=64)
    return transformers.AutoConfig.for_model(model_type, **(base | kwargs))


def _causal_lm(model_type, **kwargs):
    """Mixture-of-experts layers run as batched matmuls: transformers' default grouped-mm fallback (5.17) reads the
    routing offsets on the host (``offs.tolist()``), which Inductor cannot compile, so Dynamo splits every layer's
    graph around it and the attention is never in a graph the pass sees (a dense model ignores the setting)."""
    return transformers.AutoModelForCausalLM.from_config(_config(model_type, **kwargs), attn_implementation="eager",
                                                         experts_implementation="batched_mm")


def _encoder(model_type, **kwargs):
    return transformers.AutoModel.from_config(_config(model_type, **kwargs), attn_implementation="eager")


def _t5():
    config = transformers.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=1, num_heads=4,
                                   dropout_rate=0.0)
    return transformers.T5ForConditionalGeneration._from_config(config, attn_implementation="eager")


def _fsmt():
    config = transformers.FSMTConfig(langs=["en", "de"], src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, d_model=64,
                                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=1,
                                     decoder_layers=1, encoder_ffn_dim=128, decoder_ffn_dim=128, dropout=0.0,
                                     attention_dropout=0.0, activation_dropout=0.0, max_position_embeddings=64,
                                     pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    return transformers.FSMTForConditionalGeneration._from_config(config, attn_implementation="eager")


def _recent_causal_lm(model_type, module=None, **kwargs):
    """A model type newer than some transformers installs (the GPU machine's 5.17): skipped where its module
    (``transformers.models.<module or model_type>``) is missing."""
    pytest.importorskip(f"transformers.models.{module or model_type}")
    return _causal_lm(model_type, **kwargs)


def _fastspeech2_conformer():
    model = _encoder("fastspeech2_conformer", encoder_layers=1, decoder_layers=1, encoder_num_attention_heads=4,
                     decoder_num_attention_heads=4, encoder_linear_units=128, decoder_linear_units=128)
    with torch.no_grad():
        model.duration_predictor.linear.bias.fill_(1.5)  # exp(1.5) - 1: about 3.5 frames a token
    return model


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
    # BLOOM: ALiBi as a (B·H, 1, S) bias through baddbmm on (B·H)-batched scores, viewed to 4-D for the mask (the
    # capability patterns/attention_model_forms.py), with a padding mask. (Left padding, rows that see no key, is
    # attention_forms_cases' bloom_alibi_baddbmm: HF BLOOM in float64, the autocast test's reference, gives NaN there.)
    "bloom": (lambda: _causal_lm("bloom"), dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # MPT: an ALiBi buffer (H, 1, S) added to the scaled scores, then masked_fill(bool mask, finfo.min)
    "mpt": (lambda: _causal_lm("mpt", d_model=64, n_heads=4, n_layers=1, expansion_ratio=2, max_seq_len=64),
            dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # XGLM: heads folded into the batch, the mask added on a 4-D view of the bmm scores and clamped at finfo.min
    # (its dropouts are float attributes, which build_model cannot switch off: the config does)
    "xglm": (lambda: _causal_lm("xglm", d_model=64, num_layers=1, attention_heads=4, ffn_dim=128, dropout=0.0,
                                attention_dropout=0.0, activation_dropout=0.0),
             dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # Falcon-RW: ALiBi added to the float32 scores before the scale, and again, scaled, inside the mask the model
    # passes to each layer; left padding (ALiBi counts positions from each row's first token, padded rows see no key)
    "falcon_alibi": (lambda: _causal_lm("falcon", alibi=True, multi_query=False, new_decoder_architecture=False,
                                        parallel_attn=False, bias=True),
                     dict(attention=1, causal_conv1d=0), dict(padding="left")),
    # FSMT (fairseq's WMT19 translation models): q laid out (T, B·H, D), the encoder's and the cross-attention's key
    # padding mask filled on a 4-D view of the bmm scores. Called with its cache on, it runs the decoder on the last
    # token only: the decoder self-attention is one query against one key, whose bmm Inductor decomposes on the CPU
    # (into a multiply and a sum: fewer rewrites there; on CUDA it stays a bmm and is rewritten). transformers 5.17
    # adds the causal mask on a 4-D view of the scores, 5.24 passes none: the CPU count is 3 on 5.24
    "fsmt": (_fsmt, dict(attention=3, causal_conv1d=0), dict(padding="right", decoder=True,
                                                             cpu_attention=3 if _TRANSFORMERS >= (5, 24) else 2)),
    # TrOCR's decoder: the older BART spelling, the mask added on a 4-D view of (B·H)-batched bmm scores (its
    # dropouts are float attributes, as XGLM's: the config switches them off)
    "trocr": (lambda: _causal_lm("trocr", d_model=64, decoder_attention_heads=4, decoder_layers=1, decoder_ffn_dim=128,
                                 dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=0,
                                 bos_token_id=1, eos_token_id=2),
              dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # GPT-Neo: no scale, the fill a torch.tensor constant (graph_pass.scalar_constants_as_full), a global and a local
    # (window 8 of 16 positions) layer
    "gpt_neo": (lambda: _causal_lm("gpt_neo", num_hidden_layers=2, attention_types=[[["global", "local"], 1]],
                                   window_size=8, pad_token_id=0, bos_token_id=1, eos_token_id=2),
                dict(attention=2, causal_conv1d=0), dict(padding="right")),
    # GPT-J and CodeGen: q and k upcast to float32 for the scores (Note [float32 scores] in attention_forms.py; real
    # casts in half precision), partial rotary embeddings, a 0-d tensor divisor
    "gptj": (lambda: _causal_lm("gptj", rotary_dim=8, pad_token_id=0, bos_token_id=1, eos_token_id=2),
             dict(attention=1, causal_conv1d=0), dict(padding="right")),
    "codegen": (lambda: _causal_lm("codegen", rotary_dim=8, pad_token_id=0, bos_token_id=1, eos_token_id=2),
                dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # GPT-NeoX-Japanese: baddbmm of the (B·H)-batched scores onto zeros, a 4-D matmul with v
    "gpt_neox_japanese": (lambda: _causal_lm("gpt_neox_japanese", pad_token_id=0, bos_token_id=1, eos_token_id=2),
                          dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # Granite-SWA: the sinks applied after the softmax, the output scaled by sigmoid(logsumexp(scores) - sink)
    "granite_swa": (lambda: _recent_causal_lm("granite_swa", pad_token_id=0, bos_token_id=1, eos_token_id=2),
                    dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # MiMo-V2-Flash: q/k head dim 192, v 128; a sliding-window layer (gpt-oss's sinks, twice the KV heads) and a full
    # one (the row max subtracted before the softmax)
    "mimo_v2_flash": (lambda: _recent_causal_lm("mimo_v2_flash", num_hidden_layers=2, num_key_value_heads=1,
                                                layer_types=["sliding_attention", "full_attention"], sliding_window=8,
                                                pad_token_id=0, bos_token_id=1, eos_token_id=2),
                      dict(attention=2, causal_conv1d=0), dict(padding="right")),
    # Flint: gpt-oss's sinks joined to float32 scores without the row max subtracted, GQA, a sliding-window layer
    # (rotary) and a full one (no positional encoding); dense MLPs
    "flint": (lambda: _recent_causal_lm("flint", num_hidden_layers=2, sliding_window=8, num_key_value_heads=2,
                                        layer_types=["sliding_attention", "full_attention"], head_dim=16,
                                        mlp_only_layers=[0, 1], pad_token_id=0, bos_token_id=1, eos_token_id=2),
              dict(attention=2, causal_conv1d=0), dict(padding="right")),
    # Inkling 2: a sink logit per query row and a position bias, both computed from the hidden states (trained
    # through), short convs on q/k/v; hidden size 320 keeps its block-attention residuals (head dim = hidden size,
    # queries broadcast over the batch) beyond the kernels' head dims, as in the released sizes
    "inkling2": (lambda: _recent_causal_lm("inkling2_text", "inkling2", hidden_size=320, head_dim=16,
                                           swa_head_dim=16, swa_num_attention_heads=4, swa_num_key_value_heads=2,
                                           n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                           pad_token_id=0, bos_token_id=1, eos_token_id=2),
                 dict(attention=1, causal_conv1d=4), dict(padding="right")),
    # DeBERTa-v3: (B·H, S, D) heads, kᵀ divided by a 0-d tensor, the disentangled position bias computed from q and k
    # (trained through), masked_fill(~mask, finfo.min) on a 4-D view; the (B, 1, S, S) mask hides every key of a
    # padding query
    "deberta_v3": (lambda: _encoder("deberta-v2", relative_attention=True, pos_att_type=["p2c", "c2p"],
                                    position_buckets=8, max_relative_positions=-1, norm_rel_ebd="layer_norm",
                                    share_att_key=True),
                   dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # MPNet: a relative position bias expanded over the batch (its gradient summed outside the attention), added in
    # place, then the padding mask
    "mpnet": (lambda: _encoder("mpnet"), dict(attention=1, causal_conv1d=0), dict(padding="right")),
    # WavLM: torch's multi-head attention (F.multi_head_attention_forward, computing its weights) onto a gated
    # relative position bias, computed from the hidden states (trained through); two layers, as the first makes the
    # position bias the second gets; 400 samples of audio (39 frames), no SpecAugment or layer drop
    "wavlm": (lambda: _encoder("wavlm", num_hidden_layers=2, conv_dim=(32, 32), conv_stride=(5, 2),
                               conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                               num_buckets=16, max_bucket_distance=32, mask_time_prob=0.0, layerdrop=0.0,
                               attention_dropout=0.0),
              dict(attention=2, causal_conv1d=0), dict(audio=400)),
    # Wav2Vec2-Conformer's Transformer-XL relative positions: a position bias computed from q (through a per-head
    # bias added to it, pos_bias_v) and trained through, and q itself offset by a per-head bias (pos_bias_u), whose
    # gradient sums dQ over the batch and the rows.  One layer: transformers 5.17 breaks the graph between layers,
    # and a second layer would reuse the first one's compiled frame, counted once
    "wav2vec2_conformer": (lambda: _encoder("wav2vec2-conformer", num_hidden_layers=1, conv_dim=(32, 32),
                                            conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                            num_conv_pos_embedding_groups=4, position_embeddings_type="relative",
                                            conv_depthwise_kernel_size=3, mask_time_prob=0.0, layerdrop=0.0,
                                            attention_dropout=0.0),
                           dict(attention=1, causal_conv1d=0), dict(audio=400)),
    # Parakeet's encoder (NVIDIA's FastConformer): the same relative positions, the bias computed from q passed as the
    # attention mask after a masked_fill of the padding; 64 mel frames subsampled to 8 by convolutions (compared with
    # cuDNN's TF32 off, as test_hf_models does: with it on, eager and compiled gradients differ by up to 4%)
    "parakeet": (lambda: _encoder("parakeet_encoder", subsampling_conv_channels=16, num_mel_bins=80, dropout=0.0,
                                  layerdrop=0.0, activation_dropout=0.0, attention_dropout=0.0,
                                  dropout_positions=0.0),
                 dict(attention=1, causal_conv1d=0), dict(mel=(64, 80))),
    # Wav2Vec2-BERT (w2v-BERT 2.0, SeamlessM4T v2's speech encoder): a conformer whose conv module pads on the left,
    # runs the depthwise conv and then a layer norm (the short conv without activation), and attention with the
    # relative positions above; stacked log-mel frames (2 x 80 features)
    "wav2vec2_bert": (lambda: _encoder("wav2vec2-bert", position_embeddings_type="relative",
                                       conv_depthwise_kernel_size=3, conformer_conv_dropout=0.0, mask_time_prob=0.0,
                                       layerdrop=0.0, attention_dropout=0.0),
                      dict(attention=1, causal_conv1d=1), dict(mel=(40, 160))),
    # XLNet (its base model, one layer, the content stream): einsum attention over (S, B, H, D) heads, q offset by a
    # per-head bias; the relative-position term, computed from q and trained through, added before the scale, the
    # absent segment term as ``+ 0``, the mask subtracted after it (``- 1e30 * mask``); with token types (two
    # segments), the segment term computed from q too: three terms before the scale
    "xlnet": (lambda: transformers.AutoModel.from_config(transformers.AutoConfig.for_model(
                  "xlnet", vocab_size=VOCAB, d_model=64, n_layer=1, n_head=4, d_inner=128, dropout=0.0),
                  attn_implementation="eager"),
              dict(attention=1, causal_conv1d=0), dict(padding="right")),
    "xlnet_segments": (lambda: MODELS["xlnet"][0](), dict(attention=1, causal_conv1d=0),
                       dict(padding="right", segments=True)),
    # Funnel: two blocks (the second's queries pooled 2x) and a decoder layer; q pre-scaled, two terms computed from q
    # (relative positions, token types) added to the scores, then the mask subtracted
    "funnel": (lambda: transformers.FunnelModel._from_config(transformers.FunnelConfig(
                   vocab_size=VOCAB, block_sizes=[1, 1], num_decoder_layers=1, d_model=64, n_head=4, d_head=16,
                   d_inner=128, hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0),
                   attn_implementation="eager"),
               dict(attention=3, causal_conv1d=0), dict(padding="right")),
    # Bros: a bounding-box position term computed from q (einsum) added before the scale, the mask after it
    "bros": (lambda: _encoder("bros"), dict(attention=1, causal_conv1d=0), dict(padding="right", bbox=True)),
    # CPM-Ant: a trained position bias, then masked_fill(-inf) over it, the probabilities filled with zeros again
    # after the softmax (Note [remasked probabilities], Note [masked fill over a bias] in patterns/graph_pass.py);
    # token id 0 is padding, whose query rows see no key (eager: NaN, then zeros; the op: zeros)
    "cpmant": (lambda: _causal_lm("cpmant", dim_head=16, dim_ff=128, num_hidden_layers=1, dropout_p=0.0,
                                  position_bias_num_buckets=32, position_bias_max_distance=64, prompt_length=4),
               dict(attention=1, causal_conv1d=0), dict(zero_padding=True)),
    # FastSpeech2-Conformer: the relative-position bias computed from q, added before the scale, kᵀ as one permute
    # of the (B, S, H, D) key, masked_fill(finfo.min) and the probabilities filled with zeros again after the
    # softmax. Inference: the duration predictor's bias set so that each token lasts a few frames (random weights
    # give the decoder one frame). Training: its labels (speech_labels), 3 frames a token, the padded row's frames
    # past its tokens' labelled -100 (the decoder's padding); the output is the model's loss
    "fastspeech2_conformer": (lambda: _fastspeech2_conformer(), dict(attention=2, causal_conv1d=0),
                              dict(padding="right", speech_labels=3)),
    # gpt-oss: a learned sink logit per head joins each softmax (Note [attention sinks]), GQA, a sliding-window layer
    # (window 8 of 16 positions) and a full one, mixture-of-experts MLPs
    "gpt_oss": (lambda: _causal_lm("gpt_oss", num_key_value_heads=2, head_dim=16, num_hidden_layers=2,
                                   num_local_experts=4, num_experts_per_tok=2, sliding_window=8,
                                   layer_types=["sliding_attention", "full_attention"]),
                dict(attention=2, causal_conv1d=0), dict(padding="right")),
}


def build_model(name, train, device="cpu"):
    """MODELS[name] built from seed 0 in fp32 on ``device``; in training with dropout off."""
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


def model_inputs(extra, generator, device="cpu"):
    """The input_ids (and attention mask, decoder input_ids), or the audio samples, that ``extra`` (a MODELS entry's
    third field) asks for."""
    if "audio" in extra:
        return dict(input_values=torch.randn(BATCH, extra["audio"], generator=generator).to(device))
    if "mel" in extra:  # (frames, mel bins), no padding frames: a padding frame's query row sees no key, which
        # transformers 5.17's Parakeet fills with -inf (eager NaN there, the op 0: Note [finite fill])
        frames, bins = extra["mel"]
        features = torch.randn(BATCH, frames, bins, generator=generator)
        return dict(input_features=features.to(device), attention_mask=torch.ones(BATCH, frames, dtype=torch.long,
                                                                                  device=device))
    ids = torch.randint(0, VOCAB, (BATCH, extra.get("length", LENGTH)), generator=generator)
    inputs = dict(input_ids=ids)
    if "padding" in extra:
        mask = torch.ones(BATCH, LENGTH, dtype=torch.long)
        if extra["padding"] == "left":
            mask[1, :3] = 0  # batch 1's first three query rows see no key at all
        else:
            mask[1, -5:] = 0
        inputs["attention_mask"] = mask
    if extra.get("zero_padding"):  # token id 0 marks padding (CPM-Ant): batch 1's last five
        ids[1, -5:] = 0
    if extra.get("segments"):  # two segments: the second half of each row
        inputs["token_type_ids"] = (torch.arange(LENGTH) >= LENGTH // 2).long().expand(BATCH, LENGTH)
    if extra.get("bbox"):  # layouts: a box per token, (x0, y0, x1, y1) in [0, 1]
        corner, size = (torch.rand(BATCH, LENGTH, 2, generator=generator) / 2 for _ in range(2))
        inputs["bbox"] = torch.cat([corner, corner + size], -1)
    if extra.get("speech_labels"):  # FastSpeech2's training labels (inference ignores them)
        frames = extra["speech_labels"]
        durations = frames * inputs["attention_mask"]  # (B, S): padding tokens last no frame
        inputs["duration_labels"] = durations
        inputs["pitch_labels"], inputs["energy_labels"] = (torch.randn(BATCH, LENGTH, 1, generator=generator)
                                                           for _ in range(2))
        spectrogram = torch.randn(BATCH, frames * LENGTH, 80, generator=generator)
        spectrogram[durations.sum(1, keepdim=True) <= torch.arange(frames * LENGTH)] = -100.0
        inputs["spectrogram_labels"] = spectrogram
    if extra.get("decoder"):
        inputs["decoder_input_ids"] = torch.randint(0, VOCAB, (BATCH, LENGTH // 2), generator=generator)
    return {k: v.to(device) for k, v in inputs.items()}


def run_model(model, inputs, *, train, compiled, autocast=False):
    """One step, compiled with Inductor or eager, under torch.autocast(bf16) or not: (output, parameter gradients
    or None); training backpropagates the mean square of the output. Floating inputs are cast to the parameters'
    dtype."""
    model.zero_grad(set_to_none=True)

    def forward(**kwargs):
        return model(**kwargs, use_cache=False)[0] if "decoder_input_ids" not in kwargs else model(**kwargs)[0]

    fn = torch.compile(forward, backend="inductor") if compiled else forward
    param = next(model.parameters())
    device = param.device.type
    # floating inputs (audio samples) in the parameters' dtype: the float64 reference run gets float64 samples
    inputs = {k: v.to(param.dtype) if v.is_floating_point() else v for k, v in inputs.items()}
    amp = torch.autocast(device, dtype=torch.bfloat16, enabled=autocast)
    with torch.set_grad_enabled(train), amp:
        out = fn(**inputs)
        if not train:
            return out, None
        out.float().square().mean().backward()
    return out, [p.grad for p in model.parameters() if p.grad is not None]
