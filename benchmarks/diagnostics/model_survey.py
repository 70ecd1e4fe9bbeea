"""Which Hugging Face model types the plugin rewrites, per dtype and mode: a survey on tiny configs, on the CPU.

For each model type: a one-layer config (hidden size 64, 4 heads, random weights, ``attn_implementation="eager"``),
compiled whole with Inductor and the plugin, in inference and in training (one backward), in float32 and bfloat16
weights; prints the rewrites counted (``counters()``) and the largest output difference to eager in the same dtype,
and in half precision each one's relative error against the same model in float64 (eager's rounds its scores to
half where the kernels keep float32, so a large difference to eager can be eager's error).
A model type that gets fewer rewrites in bf16 than in float32 has an attention spelling the patterns miss in half
precision (``TORCH_LOGS=inductor_conv`` then names the check that refused it).

    python benchmarks/diagnostics/model_survey.py llama gptj ... [--dtypes float32 bfloat16] [--modes infer train]
    python benchmarks/diagnostics/model_survey.py --base vit wav2vec2 deberta-v2 ...

``--base`` builds the base model (``AutoModel``: encoders, vision and audio models) and feeds it what its
``main_input_name`` asks for (token ids with right padding, 32 x 32 images in 8 x 8 patches, 0.1 s of audio, 32 mel
frames; encoder-decoder models also get decoder ids); the output compared is the first floating one (the last hidden
state), the training loss its mean square.

A type whose tiny config or eager code fails is reported as such. Runs on the CPU in about 5-15 s per model type.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import pathlib
import sys
import time
import traceback
import warnings

import torch
import transformers

import inductor_conv

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))
from helpers import interpreter_rounds_bf16_to_nearest, no_cpu_codegen  # noqa: E402

from inductor_conv._compat import compiled_graph_caches_disabled  # noqa: E402

VOCAB, BATCH, LENGTH = 64, 2, 16
BASE = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
            intermediate_size=128, max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2)
# Encoder-decoder families' decoders (their CausalLM): their own names for width, heads and layers.
_SEQ2SEQ = dict(d_model=64, encoder_attention_heads=4, decoder_attention_heads=4, encoder_layers=1, decoder_layers=1,
                encoder_ffn_dim=128, decoder_ffn_dim=128)
# A base key a type's config refuses to be given (its setter raises): left out.
_UNSET = object()
# Per-type keys the base config lacks or names otherwise.
EXTRA = {**{t: _SEQ2SEQ for t in ("bart", "blenderbot", "blenderbot-small", "marian", "mbart", "mvp", "pegasus",
                                  "plbart", "whisper", "m2m_100", "bigbird_pegasus", "pegasus_x")},
         # LED: its encoder's local attention windows 8 wide (512 pads every input to 512 tokens); Longformer's too
         "led": dict(_SEQ2SEQ, attention_window=8), "longformer": dict(attention_window=8),
         # one decoder layer too (num_layers sets the encoder's only)
         **{t: dict(num_decoder_layers=1) for t in ("mt5", "umt5", "longt5")},
         # layers and heads by encoder and decoder only; its decoder's n-gram streams: one
         "prophetnet": dict(num_hidden_layers=_UNSET, num_encoder_layers=1, num_decoder_layers=1,
                            num_encoder_attention_heads=4, num_decoder_attention_heads=4, encoder_ffn_dim=128,
                            decoder_ffn_dim=128, ngram=1),
         "musicgen_decoder": dict(ffn_dim=128, num_codebooks=1),  # one codebook: (batch x codebooks) rows of ids
         "trocr": dict(d_model=64, decoder_attention_heads=4, decoder_layers=1, decoder_ffn_dim=128),
         "gptj": dict(rotary_dim=8), "codegen": dict(rotary_dim=8), "gpt_neo": dict(attention_types=[[["global"], 1]]),
         "xglm": dict(d_model=64, num_layers=1, attention_heads=4, ffn_dim=128),
         "opt": dict(ffn_dim=128, word_embed_proj_dim=64),
         # hybrids: a Mamba-2 layer (short conv) and an attention layer
         "bamba": dict(num_hidden_layers=2, attn_layer_indices=[1], mamba_n_heads=4, mamba_d_head=32,
                       mamba_n_groups=1, mamba_d_state=8),
         "jamba": dict(num_hidden_layers=2, attn_layer_period=2, attn_layer_offset=1, num_experts=1),
         # a sliding-window layer (gpt-oss's sinks, twice the KV heads) and a full one (the row max subtracted)
         "mimo_v2_flash": dict(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
                               sliding_window=8, num_key_value_heads=1),
         # a sliding-window layer (head dim 256) and a full one (head dim 512: beyond the kernels, left eager)
         "gemma4_text": dict(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
                             sliding_window=8),
         "gemma4_unified_text": dict(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
                                     sliding_window=8),
         "embedding_gemma2_text": dict(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
                                       sliding_window=8),
         # linear-attention layers (Gated DeltaNet: short conv) and a full-attention one
         "qwen3_5_text": dict(num_hidden_layers=4),
         "longcat_flash": dict(num_hidden_layers=2),  # always 2 * num_layers: one of its double layers
         # head_dim defaults to 128 or to None (not hidden size / heads)
         "helium": dict(head_dim=16), "ministral": dict(head_dim=16), "hunyuan_v1_dense": dict(head_dim=16),
         "hunyuan_v1_moe": dict(head_dim=16),
         # nested configs: the attention reads rope_theta and clamps by clip_qkv unguarded; the experts read d_model
         # before hidden_size is mapped onto it
         "dbrx": dict(d_model=64, attn_config=dict(rope_theta=10000.0, clip_qkv=8.0),
                      ffn_config=dict(ffn_hidden_size=128)),
         # multi-head latent attention: query/key head dim 24, value head dim 16
         "deepseek_v2": dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, kv_lora_rank=16,
                             q_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16),
         "dots1": dict(n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, n_shared_experts=1),
         # no layers reusing another's KV (15 by default); the per-layer inputs' own vocabulary and width shrunk
         "gemma3n_text": dict(head_dim=16, num_kv_shared_layers=0, vocab_size_per_layer_input=VOCAB,
                              hidden_size_per_layer_input=16),
         # a short-conv layer (no activation) and an attention layer with MoE
         "lfm2_moe": dict(num_hidden_layers=2, layer_types=["conv", "full_attention"], num_dense_layers=1,
                          num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
         # a linear-attention layer (Gated DeltaNet: short conv) and a full-attention one
         "olmo_hybrid": dict(num_hidden_layers=2),
         # one hybrid layer: the shared attention block, then a Mamba-2 layer (short conv)
         "zamba2": dict(layers_block_type=["hybrid"]),
         "cohere_compass_text": dict(rope_parameters={"full_attention": dict(rope_theta=10000.0)}),  # per layer type
         # hybrids whose first layers are linear attention or short conv: enough layers, or layer types, that one
         # attention layer comes too
         "bailing_hybrid": dict(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"]),
         "granitemoehybrid": dict(num_hidden_layers=2, layer_types=["linear_attention", "attention"]),
         "kimi_linear": dict(num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
                             mlp_layer_types=["dense", "dense"], kv_lora_rank=16, qk_nope_head_dim=8,
                             qk_rope_head_dim=8, v_head_dim=16),
         "lara_mini": dict(num_hidden_layers=4), "lfm3": dict(num_hidden_layers=3),
         "qwen3_5_moe_text": dict(num_hidden_layers=4), "recurrent_gemma": dict(num_hidden_layers=3),
         # two hybrid layers: they share one attention block (tied weights need a second layer)
         "zamba": dict(num_hidden_layers=2, layers_block_type=["hybrid", "hybrid"]),
         # (--base) Swin: one stage of two blocks, 4 x 4 windows of 8 x 8 patches, the second block's shifted (its
         # window mask); DINOv3 without its training-time random rescaling of RoPE coordinates (drawn otherwise by
         # eager and compiled code alike, so unequal)
         **{t: dict(embed_dim=32, depths=[2], num_attention_heads=[2], window_size=4, patch_size=4)
            for t in ("swin", "swinv2", "donut-swin", "maskformer-swin")},
         # (--base) Swin2SR: 32 x 32 images in 1 x 1 patches, one stage of two blocks in 4 x 4 windows
         "swin2sr": dict(embed_dim=32, depths=[2], num_attention_heads=[2], window_size=4, patch_size=1),
         "dinov3_vit": dict(pos_embed_rescale=None),
         # (--base) Funnel: blocks, not layers (two blocks, the second's queries mean-pooled 2x, and a decoder layer),
         # head width its own key; XLNet: no position limit to set; X-MOD: a default language for its adapters
         # (its architectures None, which AutoModel cannot read)
         "funnel": dict(num_hidden_layers=_UNSET, block_sizes=[1, 1], num_decoder_layers=1, d_head=16, d_inner=128,
                        architectures=["FunnelModel"]),
         "xlnet": dict(max_position_embeddings=_UNSET, d_inner=128, d_head=16),
         "xmod": dict(default_language="en_XX"),
         # (--base) Hiera: two stages of one block, 8 x 8 tokens in 4 x 4 mask units (windowed attention, then
         # global attention over 2x-pooled queries)
         "hiera": dict(image_size=[32, 32], patch_size=[7, 7], embed_dim=64, depths=[1, 1], num_heads=[4, 4],
                       num_query_pool=1, masked_unit_size=[4, 4], masked_unit_attention=[True, False]),
         # (--base) CvT: one stage (its keys and values strided 2x, a class token), no random drop path (a list)
         "cvt": dict(embed_dim=[64], num_heads=[4], depth=[1], patch_sizes=[7], patch_stride=[4], patch_padding=[2],
                     mlp_ratio=[4.0], attention_drop_rate=[0.0], drop_rate=[0.0], drop_path_rate=[0.0],
                     qkv_bias=[True], cls_token=[True], qkv_projection_method=["dw_bn"], kernel_qkv=[3],
                     padding_kv=[1], stride_kv=[2], padding_q=[1], stride_q=[1]),
         "timesformer": dict(num_frames=4),  # (--base) 4 frames of 4 x 4 patches: divided space-time attention
         # (--base) SpeechT5 without its pre-nets (hidden states in): encoder, decoder and cross-attention
         "speecht5": dict(_SEQ2SEQ, hidden_size=64),
         # (--base) LayoutLMv3: its 2D position embeddings concatenated to the width (4 coordinates, 2 sizes)
         "layoutlmv3": dict(coordinate_size=8, shape_size=16),
         # (--base) video: 4 frames in tubelets of 2; AST: 32 frames of 16 mel bins in 8 x 8 patches; YOLOS: its
         # image size as (height, width) and 4 detection tokens; SegFormer: one stage, keys and values reduced 2x;
         # Speech2Text: 16 features a frame
         "videomae": dict(num_frames=4, tubelet_size=2),
         "audio-spectrogram-transformer": dict(max_length=32, num_mel_bins=16, patch_size=8, frequency_stride=8,
                                               time_stride=8),
         "yolos": dict(image_size=[32, 32], num_detection_tokens=4),
         "segformer": dict(num_encoder_blocks=1, depths=[1], sr_ratios=[2], hidden_sizes=[64], patch_sizes=[7],
                           strides=[4], num_attention_heads=[4], mlp_ratios=[2]),
         "speech_to_text": dict(_SEQ2SEQ, input_feat_per_channel=16, max_source_positions=64),
         # MobileViT: 64 x 64 images in its 2 x 2 patches (smaller, its last stages attend over one token: a bmm
         # that Inductor decomposes on the CPU, so no attention is left to rewrite there)
         "mobilevit": dict(image_size=64, patch_size=2),
         # CLAP's audio tower (HTSAT, a Swin): 64 frames of 16 mel bins folded into 32 x 32, one stage of two blocks,
         # 4 x 4 windows of 8 x 8 patches
         "clap_audio_model": dict(spec_size=32, num_mel_bins=16, patch_size=4, patch_stride=4,
                                  patch_embeds_hidden_size=64, depths=[2], num_attention_heads=[4], window_size=4),
         # per-stage lists: one or two small stages (LeViT's values twice its keys' width, its attention biases)
         "levit": dict(image_size=64, patch_size=16, hidden_sizes=[64, 128], num_attention_heads=[4, 4], depths=[1, 1],
                       key_dim=[16, 16], mlp_ratio=[2, 2], attention_ratio=[2, 2],
                       down_ops=[["Subsample", 16, 4, 4, 2, 2]]),
         "pvt_v2": dict(image_size=[32, 32], num_encoder_blocks=1, depths=[1], sr_ratios=[2], hidden_sizes=[64],
                        num_attention_heads=[4], patch_sizes=[7], strides=[4], mlp_ratios=[2]),
         # DETR with transformers' own ResNet backbone (no timm), 128 x 128 images: 4 x 4 features
         "detr": dict(use_timm_backbone=False, use_pretrained_backbone=False, image_size=128, d_model=64,
                      encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                      encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=8),
         # DeBERTa (v1) as released: relative attention, both disentangled terms
         "deberta": dict(relative_attention=True, pos_att_type=["c2p", "p2c"]),
         # RWKV: its init divides by num_hidden_layers - 1
         "rwkv": dict(num_hidden_layers=2),
         # Reformer: a local-attention layer and an LSH one (its layers are attn_layers), chunks of 8, axial position
         # embeddings over 4 x 4 = LENGTH positions (its training asserts the sequence is that long), causal
         "reformer": dict(attn_layers=["local", "lsh"], axial_pos_shape=[4, 4], axial_pos_embds_dim=[32, 32],
                          local_attn_chunk_length=8, lsh_attn_chunk_length=8, num_buckets=2, is_decoder=True),
         # (--base) Perceiver without pre/post-processors: LENGTH inputs of d_model features, cross-attended by 8
         # latents, one self-attention layer
         "perceiver": dict(d_model=64, d_latents=64, num_latents=8, num_self_attends_per_block=1,
                           num_self_attention_heads=4, num_cross_attention_heads=4),
         # (--base) BridgeTower: its text and vision towers shrunk too (one layer each, 32 x 32 images in 8 x 8 patches)
         "bridgetower": dict(text_config=dict(hidden_size=64, num_hidden_layers=1, num_attention_heads=4,
                                              intermediate_size=128, vocab_size=VOCAB),
                             vision_config=dict(hidden_size=64, num_hidden_layers=1, image_size=32, patch_size=8)),
         # (--base) Pix2Struct's vision tower: 16 flattened 8 x 8 patches (row, column, pixels)
         "pix2struct_vision_model": dict(patch_embed_hidden_size=3 * 8 * 8, d_ff=128, d_kv=16, seq_len=16),
         "pix2struct_text_model": dict(d_ff=128, d_kv=16, num_layers=1, num_heads=4, initializer_range=0.02),
         # (--base) MobileViTV2 as MobileViT; PVT (v1) as PVT-v2; MGP-STR: square images; LXMERT: one layer of each
         "mobilevitv2": dict(image_size=64, patch_size=2),
         "pvt": dict(num_encoder_blocks=2, depths=[1, 1], sequence_reduction_ratios=[2, 1], hidden_sizes=[32, 64],
                     patch_sizes=[4, 2], strides=[4, 2], num_attention_heads=[2, 4], mlp_ratios=[2, 2]),
         "mgp-str": dict(image_size=[32, 32]),
         "lxmert": dict(l_layers=1, x_layers=1, r_layers=1),
         # (--base) Moonshine: heads and layers by encoder and decoder (8 heads of 64 / 8 = 8 dims otherwise)
         "moonshine": dict(encoder_num_attention_heads=4, decoder_num_attention_heads=4, encoder_num_hidden_layers=1,
                           decoder_num_hidden_layers=1),
         # (--base) NLLB-MoE and SeamlessM4T (its text-to-text path): 4 heads and one layer in every stack (16 heads of
         # 64 / 16 = 4 dims, 12 or 24 layers otherwise)
         "nllb-moe": _SEQ2SEQ,
         "seamless_m4t": dict(_SEQ2SEQ, speech_encoder_layers=1, speech_encoder_attention_heads=4, t2u_encoder_layers=1,
                              t2u_decoder_layers=1, t2u_encoder_attention_heads=4, t2u_decoder_attention_heads=4),
         # its indexed (sparse) attention every 4th layer: the indexer's sizes
         "qwen4_exp_text": dict(num_hidden_layers=4, head_dim=16, indexer_n_heads=2, indexer_kv_heads=1,
                                indexer_head_dim=16, indexer_budget=8, indexer_compress_ratio=4)}


# Base models (--base): image, patch and audio sizes the tiny configs fit; SpecAugment off (random in training).
_BASE_MODEL = dict(image_size=32, patch_size=8, num_channels=3, mask_time_prob=0.0, mask_feature_prob=0.0,
                   max_source_positions=16)


def _randomness_off(config) -> None:
    """Dropout, drop path and router noise off (random in training), in the config and in the configs nested in it
    (a composite model's towers, a backbone)."""
    for name, value in vars(config).items():
        if ("drop" in name or "jitter" in name) and isinstance(value, float):
            setattr(config, name, 0.0)
        elif isinstance(value, transformers.PretrainedConfig):
            _randomness_off(value)


def build(model_type: str, dtype: torch.dtype, train: bool, base: bool = False):
    keys = BASE | (_BASE_MODEL if base else {}) | EXTRA.get(model_type, {})
    keys = {k: v for k, v in keys.items() if v is not _UNSET}
    config = transformers.AutoConfig.for_model(model_type, **keys)
    _randomness_off(config)
    torch.manual_seed(0)
    # Mixture-of-experts layers as batched matmuls: transformers 5.17's default grouped-mm fallback reads the routing
    # offsets on the host, which Inductor cannot compile, so each layer's graph would be split around it
    auto = transformers.AutoModel if base else transformers.AutoModelForCausalLM
    kwargs = dict(attn_implementation="eager", experts_implementation="batched_mm")
    try:
        model = auto.from_config(config, **kwargs)
    except ValueError:  # a composite model's tower (``blip_text_model``...), not in the auto mapping: its own class
        module = importlib.import_module(type(config).__module__.replace(".configuration_", ".modeling_"))
        suffix = "Model" if base else "ForCausalLM"
        cls = next(c for n, c in vars(module).items()
                   if n.endswith(suffix) and not n.endswith("PreTrainedModel")
                   and getattr(c, "config_class", None) is type(config))
        model = cls._from_config(config, **kwargs)
    return model.float().to(dtype).train(train)


def _image_size(config) -> int:
    """A square image's side: ``image_size`` given as one number or as (height, width)."""
    return config.image_size if isinstance(config.image_size, int) else config.image_size[0]


def inputs(model, dtype: torch.dtype, base: bool, batch: int = BATCH, length: int = LENGTH, vocab: int = VOCAB,
           samples: int = 1600) -> dict:
    """The model's inputs: token ids with a right-padded row (a causal LM's, or a base model's whose main input they
    are), else what its ``main_input_name`` asks for (``--base``), in ``dtype``; ``batch`` rows, ``length`` tokens
    (or frames) of ids below ``vocab``, ``samples`` audio samples (diagnostics/model_speed.py asks for real sizes)."""
    generator = torch.Generator().manual_seed(1)
    config, name = model.config, model.main_input_name
    if name == "input_ids":
        ids = torch.randint(3, vocab, (batch, length), generator=generator)
        mask = torch.ones(batch, length, dtype=torch.long)
        mask[1, -5:] = 0  # right padding
        kwargs = dict(input_ids=ids, attention_mask=mask)
    elif name == "pixel_values" and config.model_type == "siglip2_vision_model":  # NaFlex: patches, their grid
        side = _image_size(config) // config.patch_size
        kwargs = dict(pixel_values=torch.randn(batch, side * side, config.num_channels * config.patch_size ** 2,
                                               generator=generator),
                      pixel_attention_mask=torch.ones(batch, side * side, dtype=torch.long),
                      spatial_shapes=torch.tensor([[side, side]] * batch))
    elif name == "pixel_values":
        size = _image_size(config)
        video = hasattr(config, "tubelet_size") or config.model_type == "timesformer"
        frames = (config.num_frames,) if video else ()  # video
        kwargs = dict(pixel_values=torch.randn(batch, *frames, config.num_channels, size, size, generator=generator))
    elif name == "flattened_patches":  # Pix2Struct: (B, N, 2 + patch pixels), each row its patch's row and column
        side = 4
        rows, cols = torch.meshgrid(torch.arange(1, side + 1), torch.arange(1, side + 1), indexing="ij")
        grid = torch.stack([rows.flatten(), cols.flatten()], -1).float().expand(batch, -1, -1)
        patches = torch.randn(batch, side * side, config.patch_embed_hidden_size, generator=generator)
        kwargs = dict(flattened_patches=torch.cat([grid, patches], -1))
    elif name == "inputs" and config.model_type == "perceiver":  # no pre-processor: (B, M, d_model) features
        kwargs = dict(inputs=torch.randn(batch, length, config.d_model, generator=generator))
    elif name == "input_values" and config.model_type == "speecht5":  # without pre-nets: hidden states in and out
        kwargs = dict(input_values=torch.randn(batch, length, config.hidden_size, generator=generator),
                      decoder_input_values=torch.randn(batch, length // 2, config.hidden_size, generator=generator))
    elif name == "input_values" and hasattr(config, "max_length") and hasattr(config, "num_mel_bins"):  # AST
        kwargs = dict(input_values=torch.randn(batch, config.max_length, config.num_mel_bins, generator=generator))
    elif name == "input_values":
        kwargs = dict(input_values=torch.randn(batch, samples, generator=generator))
    elif name == "input_features" and hasattr(config, "spec_size"):  # CLAP's HTSAT: (B, 1, frames, mel bins)
        frames = config.spec_size * (config.spec_size // config.num_mel_bins)  # folded into a spec_size square
        kwargs = dict(input_features=torch.randn(batch, 1, frames, config.num_mel_bins, generator=generator))
    elif name == "input_features" and hasattr(config, "feature_projection_input_dim"):  # w2v-BERT: (B, frames, feats)
        kwargs = dict(input_features=torch.randn(batch, length, config.feature_projection_input_dim,
                                                 generator=generator))
    elif name == "input_features" and hasattr(config, "input_feat_per_channel"):  # Speech2Text: (B, frames, feats)
        kwargs = dict(input_features=torch.randn(batch, 32, config.input_feat_per_channel, generator=generator))
    elif name == "input_features":
        frames = 2 * getattr(config, "max_source_positions", 16)  # Whisper's two convs halve them once
        kwargs = dict(input_features=torch.randn(batch, config.num_mel_bins, frames, generator=generator))
    else:
        raise ValueError(f"main input {name!r}")
    if name == "input_ids" and base and "pixel_values" in inspect.signature(model.forward).parameters:  # ViLT...
        size = _image_size(config)
        kwargs["pixel_values"] = torch.randn(batch, config.num_channels, size, size, generator=generator)
    if name == "input_ids" and "visual_feats" in inspect.signature(model.forward).parameters:  # LXMERT: 4 regions
        kwargs["visual_feats"] = torch.randn(batch, 4, config.visual_feat_dim, generator=generator)
        kwargs["visual_pos"] = torch.rand(batch, 4, config.visual_pos_dim, generator=generator)
    if name == "input_ids" and "bbox" in inspect.signature(model.forward).parameters:  # layouts: a box a token
        corner, size = (torch.randint(0, 500, (batch, length, 2), generator=generator) for _ in range(2))
        kwargs["bbox"] = torch.cat([corner, corner + size], -1)
    # ViT-MAE's random patch masking: one draw for both (Hiera's, by mask unit, its base model does not draw)
    if "noise" in inspect.signature(model.forward).parameters and isinstance(config.patch_size, int):
        kwargs["noise"] = torch.rand(batch, (_image_size(config) // config.patch_size) ** 2, generator=generator)
    if base and config.is_encoder_decoder and "decoder_input_values" not in kwargs:
        kwargs["decoder_input_ids"] = torch.randint(3, vocab, (batch, length // 2), generator=generator)
    kwargs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in kwargs.items()}
    return kwargs if base else kwargs | {"use_cache": False}


def _first_float(output) -> torch.Tensor:
    """A model output's logits, else its first floating tensor (a base model's last hidden state)."""
    if getattr(output, "logits", None) is not None:
        return output.logits[0] if isinstance(output.logits, tuple) else output.logits  # MGP-STR: three heads
    return next(v for v in output.values() if isinstance(v, torch.Tensor) and v.is_floating_point())


def step(model, kwargs: dict, train: bool, compiled: bool):
    fn = (lambda kw: _first_float(model(**kw)))
    fn = torch.compile(fn, backend="inductor") if compiled else fn
    with torch.set_grad_enabled(train):
        out = fn(kwargs)
        if train:
            out.float().square().mean().backward()
    return out.detach()


def survey(model_type: str, dtype: torch.dtype, train: bool, base: bool = False) -> str:
    try:
        model = build(model_type, dtype, train, base)
        kwargs = inputs(model, dtype, base)
    except Exception as e:  # noqa: BLE001 - a config the tiny sizes do not fit: report, go on
        return f"config failed: {type(e).__name__}: {str(e)[:80]}"
    try:
        want = step(model, kwargs, train, compiled=False)
    except Exception as e:  # noqa: BLE001
        return f"eager failed: {type(e).__name__}: {str(e)[:80]}"
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    start = time.perf_counter()
    try:
        with compiled_graph_caches_disabled(), no_cpu_codegen("cpu"), inductor_conv.enabled(device_types=("cpu",)):
            got = step(model, kwargs, train, compiled=True)
    except Exception:  # noqa: BLE001
        return "compile failed: " + traceback.format_exc().strip().splitlines()[-1][:100]
    counts = inductor_conv.counters()
    seconds = time.perf_counter() - start
    diff = (got.float() - want.float()).abs().max().item()
    result = f"attention {counts['attention']}, conv {counts['causal_conv1d']}, max |diff| {diff:.2e}"
    if dtype != torch.float32:  # half: eager's own rounding error is the yardstick (float64 weights, same init)
        try:
            ref = step(build(model_type, torch.float64, train, base), inputs(model, torch.float64, base), train,
                       compiled=False)
        except Exception as e:  # noqa: BLE001 - e.g. MoE layers calling grouped_mm, which has no float64
            result += f", no float64 reference ({type(e).__name__})"
        else:
            norm = ref.norm().item()
            errors = [((x.double() - ref).norm() / norm).item() for x in (want, got)]
            result += f", relative error vs float64: eager {errors[0]:.1e}, compiled {errors[1]:.1e}"
    return f"{result} ({seconds:.0f} s)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_types", nargs="+")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--modes", nargs="+", default=["infer", "train"], choices=["infer", "train"])
    parser.add_argument("--base", action="store_true", help="the base model (AutoModel), not the causal LM")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    interpreter_rounds_bf16_to_nearest()  # interpreted bf16 rounded as on the GPU: Note [interpreter bf16 rounding]
    for model_type in args.model_types:
        for dtype in args.dtypes:
            for mode in args.modes:
                result = survey(model_type, getattr(torch, dtype), mode == "train", args.base)
                print(f"{model_type:16s} {dtype:9s} {mode:5s} {result}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
