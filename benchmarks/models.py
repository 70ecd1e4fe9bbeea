"""Training step time of real Hugging Face models (built from configs, random weights, no download) compiled three
ways, side by side in one process: default Inductor, the plugin, and the plugin with CUDA graphs.

    python benchmarks/models.py [--models llama,gpt2] [--variants inductor,plugin,plugin-cg] [--layers N]
        [--seq S] [--batch B] [--steps N] [--quick] [--compile block|model] [--budget S] [--out results.md]
    python benchmarks/models.py --device cpu --tiny     (smoke test: every model and variant, tiny, fp32, 1 step)

Models: the decoder families the README says are rewritten, at a realistic size: attention only (Llama with and
without attention dropout, GPT-2, Gemma 2, Qwen3), SSMs (Mamba, Mamba-2), and models with a short conv beside or
instead of attention (LFM2, the Mamba-2 hybrid Nemotron-H, Qwen3-Next's Gated DeltaNet layers). ``bamba``, another
Mamba-2 hybrid, is not run by default: its decoder layer returns the attention probabilities, so they leave each
compiled graph, and a fused attention, which never forms them, cannot replace its attention.
Encoders (``--models encoders``, not run by default): the base models of the README's survey at their base sizes,
BERT (dropout 0.1, right padding), DeBERTa-v3 (its disentangled bias trained), XLNet-base (its relative-position term
trained, dropout 0.1), ViT-B/16, Swin-T (its 7 x 7 windows and shifted-window mask), wav2vec2 and WavLM (5 s of audio,
attention dropout 0.1; WavLM's gated position bias trained) and Parakeet's encoder, each ``AutoModel`` trained on its
last hidden state's mean square.

A step is what a training loop does: forward with the loss (HF's own shifted cross-entropy on labels = input ids),
backward, AdamW step (fused, bf16 parameters), zero_grad. Models use attn_implementation="eager" (the hand-written
attention the plugin rewrites) and HF's torch paths (no causal_conv1d / mamba_ssm / fla kernels).

Compilation is per decoder layer (``layer.compile()``, as torchtitan compiles each block): identical layers reuse one
compiled graph, so compile time does not grow with depth; the graphs column (Dynamo's unique graphs) shows it
(Gemma 2's sliding-window and full layers differ only in the mask tensor they receive; a hybrid has one graph per
kind of layer, more where the scan is kept out of the graph). Embedding, final norm, LM head and loss run eagerly in
every variant. One consequence: HF builds the attention mask outside the layers, so each layer receives it as an
input tensor and the plugin cannot prove it causal (patterns/attention_causal.py): attention runs with an explicit
mask. ``--compile model`` compiles the whole model instead (the mask is then built in the graph).

Scans kept out of the graph (model names ending in "scan eager" in the table). torch 2.11's Inductor cannot compile
Mamba-2's chunked scan ("list indices must be integers or slices, not NoneType" in the code generation of a split
cumsum: Inductor's split_reductions switch does not prevent it) and compiles Mamba's associative scan for minutes;
Dynamo unrolls Qwen3-Next's loop over chunks of 64 positions, so its compile time grows with S (32 chunks at S
2048). As a user would, the benchmark puts ``torch.compiler.disable`` around the scan, the same in every variant, so
the conv, projections and norms around it still compile (such a layer compiles as several graphs around the scan).
The seam is HF's module-level function that does only the scan, looked up by the mixer at call time and replaced
for the run: ``mamba2_chunk_scan`` (Mamba-2, Nemotron-H, Bamba) and ``torch_chunk_gated_delta_rule`` (Qwen3-Next),
both run eagerly as they are, and Mamba's ``mamba_selective_scan``, whose eager replacement is the same math with
the scan as torch's associative_scan in its "generic" mode (a log-depth sequence of tensor ops, autograd included):
HF's own function takes its associative-scan branch only while compiling, and outside it loops over the sequence in
Python (thousands of launches a layer at S 2048). ``qwen3_next_in_graph`` (not run by default) compiles Qwen3-Next's
delta rule too.

Variants: inductor (default Inductor), plugin (``inductor_conv.enable()``), plugin-cg (the plugin with
``mode="reduce-overhead"``: CUDA graph trees), and, on request, inductor-cg and plugin-noranges (the plugin with
config.attention_mask_ranges off: every tile of a mask tensor, Note [mask ranges]), plugin-layoutprop
(config.channels_last_stops off) and plugin-summaryop (config.attention_summary_in_graph off: the mask summary op as a
fallback kernel, Note [summary kernels in the graph] in lowerings/attention.py). Dynamo is reset and the model rebuilt
from the same seed before each variant; Inductor's caches are off, so compile times are cold (the plugin's search
patterns are traced once per process, before the first variant, and that time is printed apart).

Columns: compile s = the first step (Dynamo, AOTAutograd and Inductor for forward and backward, plus that step's
run); wall ms = median over --steps steps of one step, synchronised, after 3 warm-up steps (CUDA graph trees record
on the second call); GPU ms = kernel time per step (torch.profiler, every kernel summed; wall >> GPU means host
bound); tok/s = batch x seq / wall; peak GiB = torch.cuda.max_memory_allocated over the timed steps; rewrites =
inductor_conv.counters() (per compiled graph, not per layer); graphs = Dynamo's unique graphs; cg skips = Inductor's
cudagraph_skips counter; vs inductor = the last inductor row's wall / this row's wall (a variant may be named twice,
``--variants inductor,plugin,plugin,inductor``, to see whether the order of the variants in the process moves them);
min-max = the fastest and slowest timed step; host ms = the median time the host takes to queue a step's work (the
step's call returning, before the synchronize): near wall ms, the step is host-bound (the GPU waits for launches);
well below it, the GPU sets the pace (unless a step waits for the device midway); gc ms = time per timed step in
Python's cyclic garbage collector (a collection of the oldest generation walks every object the process holds, and
an earlier variant's compile leaves many), with the number of such full collections over the timed steps in
brackets.
Models with a causal conv also get, from the same profile: conv ms = GPU time of the conv kernels per step (the
plugin's templates and their dw/dβ sums; default Inductor's extern conv and its backward, and the Triton kernels it
names after them: common.step_kernel_ms), conv % = their share of the step's GPU ms, conv x = the inductor row's
conv ms / this row's: the conv kernels' own speed-up, which with conv % bounds what the rewrite can gain end to end.
Default Inductor's SiLU after the conv is fused into other kernels, ours into the conv template.
Each row is printed (flushed) as soon as it is measured, so a run stopped by a time limit keeps what it printed;
--budget S bounds each model's variants together: a variant still running when its model has had S seconds is
interrupted (SIGALRM; its row says so) and the model's remaining variants are skipped.

Mamba: ``mamba_loop`` is Mamba compiled with the scan as HF's Python loop over the sequence, which Dynamo unrolls
(compile time grows with the length; default S 128).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import importlib
import importlib.util
import operator
import signal
import statistics
import time
import warnings
from typing import Callable

import torch
import torch.nn.functional as F
import transformers

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from common import config_patch, scan_outside_graph as common_scan_outside_graph, step_kernel_ms

VOCAB = 32000  # every model's vocabulary (Gemma 2's 256000 would make the eager LM head dominate the step)


@dataclasses.dataclass(frozen=True)
class Spec:
    """One benchmarked model: an HF model type and its config at the benchmark's size."""

    model_type: str
    config: dict
    layers: str | None  # attribute path of the decoder-layer ModuleList; None: the model is compiled whole
    batch: int
    seq: int
    n_layers: int
    tiny: dict = dataclasses.field(default_factory=dict)  # config overrides of the CPU smoke test
    tiny_layers: int = 2  # a hybrid's smoke test needs a layer of each kind
    layer_kinds: Callable[[int], dict] | None = None  # config entries placing each kind of layer, given the count
    scan: str | None = None  # "module.function": HF's scan, kept out of the graph (module docstring)
    conv: bool = False  # has a causal depthwise conv: the row measures the conv kernels' share of the step
    # an encoder (AutoModel) fed "text" (token ids, right padding), "image" (pixel values), "audio" (raw samples) or
    # "mel" (log-mel frames); None: a causal LM fed token ids
    encoder: str | None = None

    def build_config(self, n_layers: int, seq: int, tiny: bool):
        kwargs = dict(self.config)
        if self.encoder in (None, "text"):
            kwargs["vocab_size"] = 128 if tiny else VOCAB
        if self.model_type != "swin":  # Swin's depth is its stages' depths
            kwargs["num_hidden_layers"] = n_layers
        if tiny:
            kwargs.update(self.tiny)
        if self.layer_kinds is not None:
            kwargs.update(self.layer_kinds(n_layers))
        if self.model_type == "gpt2":
            kwargs["n_positions"] = max(seq, 64)
        elif self.model_type in ("llama", "gemma2"):
            kwargs["max_position_embeddings"] = max(seq, 64)
        if self.model_type == "gemma2":
            kwargs["sliding_window"] = seq // 2  # half the context, as Gemma 2's 4096 of 8192
        return transformers.AutoConfig.for_model(self.model_type, **kwargs)


def _every_third(n_layers: int) -> list[int]:
    """Attention at layers 2, 5, 8...: LFM2-1.2B's first layers (conv, conv, attention), Bamba's 1:2 at this depth."""
    return [i for i in range(n_layers) if i % 3 == 2]


def _nemotron_blocks(n_layers: int) -> str:
    """Nemotron-H's block pattern for n blocks: M-M*- repeated (M-M*-M-M*- for 10); below 5 blocks M*-M, so that 3
    already hold each kind."""
    return (("M*-M" if n_layers < 5 else "M-M*-") * n_layers)[:n_layers]


_TINY_ATTENTION = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
_LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=16, num_key_value_heads=4)
_MAMBA = dict(hidden_size=1024, state_size=16, expand=2, conv_kernel=4, use_associative_scan=True)
_TINY_MAMBA = dict(hidden_size=32, state_size=4)
_MAMBA2_SCAN = "transformers.models.mamba2.modeling_mamba2.mamba2_chunk_scan"
# BERT-base's widths (12 heads of 64, feed-forward 3072), HF's default dropout 0.1 on the probabilities
_BASE = dict(hidden_size=768, intermediate_size=3072, num_attention_heads=12)
_TINY_BASE = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4)
# wav2vec2-base's feature encoder and positional conv; no SpecAugment (its masks are drawn with numpy on the host)
# and no layer drop (a host-side coin per layer, which breaks the graph)
_AUDIO = dict(_BASE, attention_dropout=0.1, mask_time_prob=0.0, mask_feature_prob=0.0, feat_extract_norm="group",
              layerdrop=0.0)
_TINY_AUDIO = dict(_TINY_BASE, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                   num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)

MODELS = {
    # Llama with GQA 16/4 (TinyLlama's widths), head dim 128, dropout on the attention probabilities
    "llama": Spec("llama", dict(_LLAMA, attention_dropout=0.1), "model.layers", 4, 2048, 8, _TINY_ATTENTION),
    "llama_p0": Spec("llama", dict(_LLAMA, attention_dropout=0.0), "model.layers", 4, 2048, 8, _TINY_ATTENTION),
    # GPT-2 medium's widths (16 heads of 64), 12 layers; attention, residual and embedding dropout 0.1
    "gpt2": Spec("gpt2", dict(n_embd=1024, n_head=16, attn_pdrop=0.1, resid_pdrop=0.1, embd_pdrop=0.1,
                              bos_token_id=0, eos_token_id=0),  # GPT-2's 50256 is outside the vocabulary
                 "transformer.h", 8, 1024, 12, dict(n_embd=64, n_head=4)),
    # Gemma 2 narrowed: Gemma-2-2B's heads (8 of 256, 4 KV heads, logit soft-capping 50, final 30), alternating
    # sliding-window (half the sequence) and full layers
    "gemma2": Spec("gemma2", dict(hidden_size=1024, intermediate_size=4096, num_attention_heads=8,
                                  num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256,
                                  attn_logit_softcapping=50.0, final_logit_softcapping=30.0), "model.layers", 4,
                   2048, 8, dict(_TINY_ATTENTION, head_dim=16, query_pre_attn_scalar=16)),
    # Qwen3-1.7B's widths: GQA 16/8, head dim 128, RMSNorm on q and k
    "qwen3": Spec("qwen3", dict(hidden_size=2048, intermediate_size=6144, num_attention_heads=16,
                                num_key_value_heads=8, head_dim=128), "model.layers", 4, 2048, 8,
                  dict(_TINY_ATTENTION, head_dim=16)),
    # Mamba-370m's widths (d_model 1024, inner 2048, state 16); scan eager: its (B, inner, S, state) fp32 states
    # are 0.5 GiB a layer at B2 S2048
    "mamba": Spec("mamba", _MAMBA, "backbone.layers", 2, 2048, 8, _TINY_MAMBA,
                  scan="transformers.models.mamba.modeling_mamba.mamba_selective_scan", conv=True),
    "mamba_loop": Spec("mamba", dict(_MAMBA, use_associative_scan=False), "backbone.layers", 8, 128, 8,
                       _TINY_MAMBA, conv=True),
    # Mamba-2: inner 2048 = 32 heads of 64, state 128, one group, chunks of 256 (HF's torch path is chunked)
    "mamba2": Spec("mamba2", dict(hidden_size=1024, num_heads=32, head_dim=64, state_size=128, n_groups=1,
                                  expand=2, conv_kernel=4, chunk_size=256), "backbone.layers", 4, 2048, 8,
                   dict(hidden_size=32, num_heads=4, head_dim=16, state_size=8, chunk_size=16),
                   scan=_MAMBA2_SCAN, conv=True),
    # LFM2-1.2B's widths (hidden 2048, GQA 32/8 of head dim 64, feed-forward 8192 -> 5632 by its auto-adjust) and its
    # first six layers: short conv (K 3, no activation, gated by B and C), conv, attention, conv, conv, attention
    "lfm2": Spec("lfm2", dict(hidden_size=2048, intermediate_size=8192, num_attention_heads=32,
                              num_key_value_heads=8, conv_L_cache=3), "model.layers", 4, 2048, 6,
                 dict(_TINY_ATTENTION, block_multiple_of=16), tiny_layers=3,
                 layer_kinds=lambda n: dict(full_attn_idxs=_every_third(n)), conv=True),
    # Bamba-9B narrowed to hidden 2048: Mamba-2 mixers of 64 heads of 64, state 128, one group, chunks of 256;
    # attention GQA 16/4 of head dim 128 (half of it rotary) at layers 2 and 5; SwiGLU feed-forward in every layer.
    # Not a default: BambaDecoderLayer returns its attention probabilities, which keeps its attention unrewritten
    "bamba": Spec("bamba", dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=16,
                                num_key_value_heads=4, mamba_n_heads=64, mamba_d_head=64, mamba_d_state=128,
                                mamba_n_groups=1, mamba_expand=2, mamba_d_conv=4, mamba_chunk_size=256),
                  "model.layers", 4, 2048, 6,
                  dict(_TINY_ATTENTION, mamba_n_heads=4, mamba_d_head=32, mamba_d_state=8, mamba_chunk_size=16),
                  tiny_layers=3, layer_kinds=lambda n: dict(attn_layer_indices=_every_third(n)),
                  scan="transformers.models.bamba.modeling_bamba.mamba2_chunk_scan", conv=True),
    # Nemotron-H-8B narrowed to hidden 2048, its blocks (one mixer each: Mamba-2 M, attention *, MLP -) in its
    # pattern's proportions, M-M*-M-M*-: Mamba-2 of 64 heads of 64, state 128, 8 groups, chunks of 128; attention GQA
    # 16/4 of head dim 128 without positional encoding; squared-ReLU MLP 10752 (its 5.25 x hidden)
    "nemotron_h": Spec("nemotron_h", dict(hidden_size=2048, intermediate_size=10752, num_attention_heads=16,
                                          num_key_value_heads=4, head_dim=128, mamba_num_heads=64, mamba_head_dim=64,
                                          ssm_state_size=128, n_groups=8, expand=2, conv_kernel=4, chunk_size=128),
                       "model.layers", 4, 2048, 10,
                       dict(_TINY_ATTENTION, head_dim=16, mamba_num_heads=4, mamba_head_dim=32, ssm_state_size=8,
                            n_groups=2, chunk_size=16),
                       tiny_layers=3, layer_kinds=lambda n: dict(hybrid_override_pattern=_nemotron_blocks(n)),
                       scan="transformers.models.nemotron_h.modeling_nemotron_h.mamba2_chunk_scan", conv=True),
    # Qwen3-Next-80B-A3B's Gated DeltaNet (16 key heads and 32 value heads of 128, conv K 4 over q, k and v: 8192
    # channels) in every layer, each with a dense SwiGLU feed-forward instead of its mixture of experts
    "qwen3_next": Spec("qwen3_next", dict(hidden_size=2048, intermediate_size=5632, linear_num_key_heads=16,
                                          linear_num_value_heads=32, linear_key_head_dim=128,
                                          linear_value_head_dim=128, linear_conv_kernel_dim=4),
                       "model.layers", 4, 2048, 4,
                       dict(hidden_size=64, intermediate_size=128, linear_num_key_heads=2,
                            linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16),
                       layer_kinds=lambda n: dict(layer_types=["linear_attention"] * n,
                                                  mlp_only_layers=list(range(n))),
                       scan="transformers.models.qwen3_next.modeling_qwen3_next.torch_chunk_gated_delta_rule",
                       conv=True),
    # Encoders (AutoModel, training on the last hidden state's mean square): the base models the README's survey
    # lists, at their base sizes. S is the tokens the attention sees (ViT: 14 x 14 patches and the class token of a
    # 224 x 224 image; Swin: 7 x 7 windows; audio: ~50 frames a second of 16 kHz samples).
    "bert": Spec("bert", _BASE, "encoder.layer", 16, 512, 12, _TINY_BASE, encoder="text"),
    # DeBERTa-v3-base: disentangled attention (position buckets 256, c2p and p2c), its bias trained through the op
    "deberta_v3": Spec("deberta-v2", dict(_BASE, relative_attention=True, position_buckets=256,
                                          norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                                          max_relative_positions=-1, position_biased_input=False),
                       "encoder.layer", 8, 512, 12, dict(_TINY_BASE, position_buckets=8), encoder="text"),
    # XLNet-base: einsum attention over (S, B, H, D) heads, its relative-position term computed from q (trained) added
    # before the scale, the padding mask subtracted after it; dropout 0.1 (also on the probabilities)
    "xlnet": Spec("xlnet", dict(d_model=768, d_inner=3072, n_head=12), "layer", 16, 512, 12,
                  dict(d_model=64, d_inner=128, n_head=4), encoder="text"),
    # ViT-B/16 at 224 x 224: 197 tokens, no attention dropout
    "vit": Spec("vit", dict(_BASE, image_size=224, patch_size=16), "layers", 64, 197, 12,
                dict(_TINY_BASE, image_size=32, patch_size=8), encoder="image"),
    # Swin-T at 224 x 224: windows of 7 x 7 = 49 tokens, heads of 32, every other block with the shifted-window mask;
    # compiled whole (layers None): its blocks and stages return their attention probabilities, which only the
    # model drops
    "swin": Spec("swin", dict(embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24], window_size=7,
                              image_size=224, patch_size=4), None, 64, 49, 4,
                 dict(embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=4, image_size=32, patch_size=4),
                 encoder="image"),
    # wav2vec2-base on 5 s of audio (249 frames), attention dropout 0.1
    "wav2vec2": Spec("wav2vec2", _AUDIO, "encoder.layers", 16, 249, 12, _TINY_AUDIO, encoder="audio"),
    # WavLM-base-plus: torch's multi-head attention onto a gated relative position bias (320 buckets), trained
    "wavlm": Spec("wavlm", dict(_AUDIO, num_buckets=320, max_bucket_distance=800), "encoder.layers", 16, 249, 12,
                  dict(_TINY_AUDIO, num_buckets=16, max_bucket_distance=32), encoder="audio"),
    # Parakeet-CTC-0.6b's encoder (NVIDIA's FastConformer: Transformer-XL relative positions, a bias computed from q
    # and trained through, 8 heads of 128), 20 s of audio: 2000 mel frames subsampled 8x to 250; dropout 0.1
    "parakeet": Spec("parakeet_encoder", dict(hidden_size=1024, intermediate_size=4096, num_attention_heads=8,
                                              layerdrop=0.0), "layers", 16, 250, 12,
                     dict(_TINY_BASE, subsampling_conv_channels=16), encoder="mel"),
}
# the same with the delta rule's loop over chunks in the graph (its compile time grows with S)
MODELS["qwen3_next_in_graph"] = dataclasses.replace(MODELS["qwen3_next"], scan=None)
DEFAULT_MODELS = ("llama", "llama_p0", "gpt2", "gemma2", "qwen3", "mamba", "mamba2", "lfm2", "nemotron_h",
                  "qwen3_next")
ENCODERS = tuple(name for name, spec in MODELS.items() if spec.encoder)

# variant -> (plugin on, torch.compile mode, inductor_conv.config overrides)
VARIANTS = {
    "inductor": (False, None, {}),
    "plugin": (True, None, {}),
    "plugin-cg": (True, "reduce-overhead", {}),
    "inductor-cg": (False, "reduce-overhead", {}),
    "plugin-noranges": (True, None, {"attention_mask_ranges": False}),  # Note [mask ranges] off: every tile
    # Note [channels-last stops at our ops] off: in a layer with a convolution, q, k, v and the bias head-fastest
    "plugin-layoutprop": (True, None, {"channels_last_stops": False}),
    # Note [summary kernels in the graph] off: the mask summary op called as a fallback kernel
    "plugin-summaryop": (True, None, {"attention_summary_in_graph": False}),
}
DEFAULT_VARIANTS = ("inductor", "plugin", "plugin-cg")
WARMUP = 3  # steps before timing: compile, CUDA graph recording, one more


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help=f"comma-separated, of {list(MODELS)}; 'encoders' names {list(ENCODERS)}")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help=f"comma-separated, of {list(VARIANTS)}")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default: each model's)")
    parser.add_argument("--seq", type=int, default=None, help="sequence length (default: each model's)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (default: each model's)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per variant, median reported (20)")
    parser.add_argument("--quick", action="store_true", help="2 layers (a hybrid 3), half the sequence, 5 timed steps")
    parser.add_argument("--compile", choices=("block", "model"), default="block",
                        help="compile each decoder layer (default) or the whole model")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds for all variants of one model, after which the rest are skipped (0: none)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny configs, fp32, 1 timed step (the CPU smoke test)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    args.models = args.models.replace("encoders", ",".join(ENCODERS))
    for name, known in (("models", MODELS), ("variants", VARIANTS)):
        wanted = getattr(args, name).split(",")
        if set(wanted) - set(known):
            parser.error(f"--{name}: unknown {sorted(set(wanted) - set(known))}; known: {list(known)}")
        setattr(args, name, wanted)
    return args


def sizes(spec: Spec, args) -> tuple[int, int, int]:
    """(layers, batch, seq) for this run."""
    if args.tiny:
        n_layers, batch, seq = spec.tiny_layers, 2, 32
    else:
        n_layers, batch, seq = spec.n_layers, spec.batch, spec.seq
        if args.quick:
            n_layers, seq = max(2, spec.tiny_layers), max(seq // 2, 64)
    return args.layers or n_layers, args.batch or batch, args.seq or seq


def _mamba_combine(left, right):
    """One step of h_t = a_t h_{t-1} + b_t composed with another, as HF's combine_fn."""
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


def mamba_scan_eager(hidden_states, dt, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                     return_last_state=False, **kwargs):
    """HF Mamba's ``mamba_selective_scan`` (its torch path: same arguments, same math as its associative-scan
    branch) with the scan as torch's associative_scan in "generic" mode, which runs eagerly: the replacement that
    keeps the scan out of the graph (module docstring). x, dt, z: (B, inner, S); A: (inner, state); B, C: (B,
    state, S)."""
    from torch._higher_order_ops.associative_scan import associative_scan

    input_dtype = hidden_states.dtype
    if delta_bias is not None:
        dt = dt + delta_bias.to(dt.dtype)[..., None]
    if delta_softplus:
        dt = F.softplus(dt)
    B, C = B.transpose(1, 2), C.transpose(1, 2)
    discrete_A = torch.exp(A[None, :, None, :] * dt[:, :, :, None])  # (B, inner, S, state)
    deltaB_u = dt[:, :, :, None] * B[:, None, :, :].float() * hidden_states[:, :, :, None].float()
    _, states = associative_scan(_mamba_combine, (discrete_A, deltaB_u), dim=2, combine_mode="generic")
    out = torch.matmul(states.transpose(1, 2).to(input_dtype), C.unsqueeze(-1)).squeeze(-1).transpose(1, 2)
    if D is not None:
        out = out + hidden_states * D[None, :, None]
    if z is not None:
        out = out * F.silu(z)
    return (out, states[:, :, -1]) if return_last_state else out


# a seam whose eager run is not HF's own function (the rest run HF's function as it is)
_EAGER_SCANS = {"transformers.models.mamba.modeling_mamba.mamba_selective_scan": mamba_scan_eager}


def scan_outside_graph(spec: Spec):
    """common.scan_outside_graph for the model's scan (its eager replacement where HF's own is a Python loop)."""
    return common_scan_outside_graph(spec.scan, _EAGER_SCANS.get(spec.scan))


def build(spec: Spec, n_layers: int, seq: int, args) -> torch.nn.Module:
    """The model on the device in the benchmark's dtype, from seed 0, training mode (dropout on)."""
    torch.manual_seed(0)
    config = spec.build_config(n_layers, seq, args.tiny)
    auto = transformers.AutoModel if spec.encoder else transformers.AutoModelForCausalLM
    with warnings.catch_warnings(), torch.device(args.device):
        warnings.simplefilter("ignore")
        model = auto.from_config(config, attn_implementation="eager")
    dtype = torch.float32 if args.tiny else torch.bfloat16
    return model.to(device=args.device, dtype=dtype).train()


def encoder_inputs(spec: Spec, config, batch: int, seq: int, device: str, dtype: torch.dtype) -> dict:
    """An encoder's inputs: token ids and an attention mask (the first row's last quarter padding), images at the
    config's size, or the raw samples that give ``seq`` frames (wav2vec2's feature encoder: 320 samples a frame)."""
    g = torch.Generator(device).manual_seed(1)
    if spec.encoder == "text":
        mask = torch.ones(batch, seq, dtype=torch.long, device=device)
        mask[0, seq - seq // 4:] = 0
        return dict(input_ids=torch.randint(0, config.vocab_size, (batch, seq), device=device, generator=g),
                    attention_mask=mask)
    if spec.encoder == "image":
        side = config.image_size
        return dict(pixel_values=torch.randn(batch, 3, side, side, device=device, generator=g).to(dtype))
    if spec.encoder == "mel":  # log-mel frames, 8 a token (Parakeet's subsampling), no padding frames
        features = torch.randn(batch, 8 * seq, config.num_mel_bins, device=device, generator=g).to(dtype)
        return dict(input_features=features, attention_mask=torch.ones(batch, 8 * seq, dtype=torch.long,
                                                                       device=device))
    samples = 400 + 320 * (seq - 1)  # the feature encoder's receptive field, then its hop
    return dict(input_values=torch.randn(batch, samples, device=device, generator=g).to(dtype))


def compile_model(model, spec: Spec, mode, whole: bool) -> None:
    """Compile each decoder layer in place (or the whole model)."""
    kwargs = dict(dynamic=False) if mode is None else dict(dynamic=False, mode=mode)
    if whole or spec.layers is None:
        model.compile(**kwargs)
        return
    for layer in operator.attrgetter(spec.layers)(model):
        layer.compile(**kwargs)


def trace_patterns() -> float:
    """Trace (or load from the pattern cache) the plugin's search patterns now, so that no variant's compile time
    includes this once-per-process cost; returns the seconds it took."""
    from inductor_conv.patterns import graph_pass

    start = time.perf_counter()
    for module, *_ in graph_pass.CAPABILITIES:
        importlib.import_module(module).register(graph_pass.PATTERNS)
    return time.perf_counter() - start


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def gc_time():
    """Yields a dict that, once the block ends, holds ms (time in the cyclic garbage collector) and full (the number
    of collections of the oldest generation) over the block."""
    spent = dict(ms=0.0, full=0)
    started = []

    def callback(phase, info):
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            spent["ms"] += (time.perf_counter() - started.pop()) * 1e3
            spent["full"] += info["generation"] == 2

    gc.callbacks.append(callback)
    try:
        yield spent
    finally:
        gc.callbacks.remove(callback)


def run_variant(spec: Spec, variant: str, args, n_layers: int, batch: int, seq: int) -> dict:
    """Build, compile and train one model under one variant; returns the row's measurements."""
    plugin, mode, overrides = VARIANTS[variant]
    with config_patch(overrides):  # read when each graph compiles
        return _run_variant(spec, plugin, mode, args, n_layers, batch, seq)


def _run_variant(spec: Spec, plugin: bool, mode, args, n_layers: int, batch: int, seq: int) -> dict:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    inductor_conv.reset_counters()
    if plugin:
        inductor_conv.enable((args.device,))
    else:
        inductor_conv.disable()
    model = build(spec, n_layers, seq, args)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=args.device == "cuda")
    compile_model(model, spec, mode, args.compile == "model")
    if spec.encoder:
        inputs = encoder_inputs(spec, model.config, batch, seq, args.device, next(model.parameters()).dtype)
    else:
        ids = torch.randint(0, model.config.vocab_size, (batch, seq), device=args.device,
                            generator=torch.Generator(args.device).manual_seed(1))
        inputs = dict(input_ids=ids, labels=ids, use_cache=False)

    def step():
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        out = model(**inputs)
        loss = out.last_hidden_state.float().square().mean() if spec.encoder else out.loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    issue_ms = []

    def timed_step() -> float:
        sync(args.device)
        start = time.perf_counter()
        step()
        issue_ms.append((time.perf_counter() - start) * 1e3)  # the host has queued the step's work
        sync(args.device)
        return (time.perf_counter() - start) * 1e3

    try:
        compile_s = timed_step() / 1e3
        for _ in range(0 if args.tiny else WARMUP - 1):
            step()
        if args.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        issue_ms.clear()
        with gc_time() as gc_spent:
            times = [timed_step() for _ in range(args.steps)]
        peak = torch.cuda.max_memory_allocated() / 2**30 if args.device == "cuda" else float("nan")
        gpu, conv = step_kernel_ms(step) if args.device == "cuda" else (float("nan"), float("nan"))
    finally:
        inductor_conv.disable()
    dynamo = torch._dynamo.utils.counters
    return dict(compile_s=compile_s, wall=statistics.median(times), fastest=min(times), slowest=max(times),
                host=statistics.median(issue_ms),
                gc_ms=gc_spent["ms"] / len(times), gc_full=gc_spent["full"], gpu=gpu, conv=conv, peak=peak,
                rewrites=dict(inductor_conv.counters()), graphs=dynamo["stats"]["unique_graphs"],
                cg_skips=dynamo["inductor"]["cudagraph_skips"], tokens=batch * seq)


def release() -> None:
    """Free the previous variant's model, optimizer state and CUDA graph pools before the next one."""
    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class BudgetSpent(BaseException):
    """A model's --budget ran out. Not an Exception, so that no `except Exception` on the way swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float, message: str):
    """Raise BudgetSpent(message) in the main thread once `seconds` have passed (SIGALRM)."""
    def expire(signum, frame):
        raise BudgetSpent(message)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def fmt_rewrites(counts: dict) -> str:
    return ", ".join(f"{k.replace('causal_conv1d', 'conv').replace('attention', 'attn')} {v}"
                     for k, v in counts.items()) or "-"


def fmt_conv(spec: Spec, r: dict, baseline_conv: float | None) -> str:
    """The conv columns: ms, share of the step's GPU ms, speed-up over the inductor row's conv kernels."""
    if not spec.conv or r["conv"] != r["conv"]:  # no conv, or not measured (CPU)
        return "- | - | -"
    speedup = f"{baseline_conv / r['conv']:.2f}x" if baseline_conv and r["conv"] else "-"
    return f"{r['conv']:.2f} | {100 * r['conv'] / r['gpu']:.1f}% | {speedup}"


def main() -> None:
    args = parse_args()
    args.steps = 1 if args.tiny else args.steps or (5 if args.quick else 20)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    kernels = [m for m in ("causal_conv1d", "mamba_ssm", "fla") if importlib.util.find_spec(m)]
    lines = [f"# models benchmark {datetime.date.today()} on {device_name}, torch {torch.__version__}, "
             f"transformers {transformers.__version__}, compile per {'model' if args.compile == 'model' else 'layer'}"
             + (f"; installed (HF takes them over the torch path): {kernels}" if kernels else ""), ""]
    print("\n".join(lines), flush=True)
    if args.device == "cuda":
        # start the profiler (CUPTI) before any CUDA graph capture
        step_kernel_ms(lambda: torch.ones(1, device="cuda") + 1, iters=1)
    if any(VARIANTS[v][0] for v in args.variants):
        line = f"plugin patterns traced or loaded in {trace_patterns():.1f} s (once per process, not in the rows)"
        lines.append(line)
        print(line, flush=True)
    header = ["", "| model | layers x B x S | variant | compile s | wall ms | min-max | host ms | gc ms | GPU ms | tok/s | "
              "peak GiB | rewrites | graphs | cg skips | vs inductor | conv ms | conv % | conv x |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += header
    print("\n".join(header), flush=True)
    with fx_graph_cache_disabled():
        for name in args.models:
            spec = MODELS[name]
            n_layers, batch, seq = sizes(spec, args)
            label = f"{name}, scan eager" if spec.scan else name
            baseline = baseline_conv = None
            start = time.perf_counter()
            for variant in args.variants:
                left = args.budget - (time.perf_counter() - start)
                try:
                    if args.budget and left <= 0:
                        raise BudgetSpent(f"skipped: the model's {args.budget:.0f} s budget is spent")
                    limit = (time_limit(left, f"interrupted: the model's {args.budget:.0f} s budget ran out")
                             if args.budget else contextlib.nullcontext())
                    with limit, scan_outside_graph(spec):
                        r = run_variant(spec, variant, args, n_layers, batch, seq)
                except BudgetSpent as e:
                    line = f"| {label} | {n_layers} x {batch} x {seq} | {variant} | {e} |"
                except Exception as e:  # one failing variant must not hide the others
                    line = f"| {label} | {n_layers} x {batch} x {seq} | {variant} | failed: {type(e).__name__}: " \
                           f"{str(e).splitlines()[0][:300] if str(e) else ''} |"
                else:
                    if variant == "inductor":
                        baseline, baseline_conv = r["wall"], r["conv"]
                    ratio = f"{baseline / r['wall']:.2f}x" if baseline else "-"
                    line = (f"| {label} | {n_layers} x {batch} x {seq} | {variant} | {r['compile_s']:.1f} | "
                            f"{r['wall']:.1f} | {r['fastest']:.1f}-{r['slowest']:.1f} | {r['host']:.1f} | "
                            f"{r['gc_ms']:.1f} ({r['gc_full']}) | "
                            f"{r['gpu']:.1f} | {r['tokens'] / r['wall'] * 1e3:,.0f} | "
                            f"{r['peak']:.1f} | {fmt_rewrites(r['rewrites'])} | {r['graphs']} | {r['cg_skips']} | "
                            f"{ratio} | {fmt_conv(spec, r, baseline_conv)} |")
                finally:
                    release()
                lines.append(line)
                print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
