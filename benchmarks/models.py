"""Training step time of real Hugging Face models (built from configs, random weights, no download) compiled three
ways, side by side in one process: default Inductor, the plugin, and the plugin with CUDA graphs.

    python benchmarks/models.py [--models llama,gpt2] [--variants inductor,plugin,plugin-cg] [--layers N]
        [--seq S] [--batch B] [--steps N] [--quick] [--compile block|model] [--out results.md]
    python benchmarks/models.py --device cpu --tiny     (smoke test: every model and variant, tiny, fp32, 1 step)

A step is what a training loop does: forward with the loss (HF's own shifted cross-entropy on labels = input ids),
backward, AdamW step (fused, bf16 parameters), zero_grad. Models use attn_implementation="eager" (the hand-written
attention the plugin rewrites); Mamba/Mamba2 run HF's torch path (no causal_conv1d / mamba_ssm kernels).

Compilation is per decoder layer (``layer.compile()``, as torchtitan compiles each block): identical layers reuse one
compiled graph, so compile time does not grow with depth; the graphs column (Dynamo's unique graphs) shows it
(1 for every model on the CPU smoke test: Gemma 2's sliding-window and full layers differ only in the mask tensor
they receive). Embedding, final norm, LM head and loss run eagerly in every
variant. One consequence: HF builds the attention mask outside the layers, so each layer receives it as an input
tensor and the plugin cannot prove it causal (patterns/attention_causal.py): attention runs with an explicit mask.
``--compile model`` compiles the whole model instead (the mask is then built in the graph).

Variants: inductor (default Inductor), plugin (``inductor_conv.enable()``), plugin-cg (the plugin with
``mode="reduce-overhead"``: CUDA graph trees), and, on request, inductor-cg. Dynamo is reset and the model rebuilt
from the same seed before each variant; Inductor's caches are off, so compile times are cold (the plugin's search
patterns are traced once per process, before the first variant, and that time is printed apart).

Columns: compile s = the first step (Dynamo, AOTAutograd and Inductor for forward and backward, plus that step's
run); wall ms = median over --steps steps of one step, synchronised, after 3 warm-up steps (CUDA graph trees record
on the second call); GPU ms = kernel time per step (torch.profiler, every kernel summed; wall >> GPU means host
bound); tok/s = batch x seq / wall; peak GiB = torch.cuda.max_memory_allocated over the timed steps; rewrites =
inductor_conv.counters() (per compiled graph, not per layer); graphs = Dynamo's unique graphs; cg skips = Inductor's
cudagraph_skips counter; vs inductor = the inductor row's wall / this row's wall.
Each row is printed (flushed) as soon as it is measured, so a run stopped by a time limit keeps what it printed.

Mamba-2 compiles under ``_compat.split_scans_off()`` in every variant: torch 2.11's code generation of a split cumsum
fails on its chunked scan, default Inductor and the plugin alike.

Mamba: under torch.compile HF's Mamba scans with torch's associative_scan (config.use_associative_scan, default on),
whose compile time does not depend on the sequence length. ``mamba_loop`` is the same model with the scan as HF's
Python loop over the sequence, which Dynamo unrolls (compile time grows with the length; default S 128).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import importlib.util
import operator
import statistics
import time
import warnings

import torch
import transformers

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled, split_scans_off

from common import gpu_ms

VOCAB = 32000  # every model's vocabulary (Gemma 2's 256000 would make the eager LM head dominate the step)


@dataclasses.dataclass(frozen=True)
class Spec:
    """One benchmarked model: an HF model type and its config at the benchmark's size."""

    model_type: str
    config: dict
    layers: str  # attribute path of the decoder-layer ModuleList
    batch: int
    seq: int
    n_layers: int
    tiny: dict = dataclasses.field(default_factory=dict)  # config overrides of the CPU smoke test

    def build_config(self, n_layers: int, seq: int, tiny: bool):
        kwargs = dict(self.config, vocab_size=VOCAB, num_hidden_layers=n_layers)
        if tiny:
            kwargs.update(self.tiny, vocab_size=128)
        if self.model_type == "gpt2":
            kwargs["n_positions"] = max(seq, 64)
        elif self.model_type in ("llama", "gemma2"):
            kwargs["max_position_embeddings"] = max(seq, 64)
        if self.model_type == "gemma2":
            kwargs["sliding_window"] = seq // 2  # half the context, as Gemma 2's 4096 of 8192
        return transformers.AutoConfig.for_model(self.model_type, **kwargs)


_TINY_ATTENTION = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)
_LLAMA = dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=16, num_key_value_heads=4)
_MAMBA = dict(hidden_size=1024, state_size=16, expand=2, conv_kernel=4, use_associative_scan=True)
_TINY_MAMBA = dict(hidden_size=32, state_size=4)

MODELS = {
    # Llama with GQA 16/4 (TinyLlama's widths), head dim 128, dropout on the attention probabilities
    "llama": Spec("llama", dict(_LLAMA, attention_dropout=0.1), "model.layers", 4, 2048, 8, _TINY_ATTENTION),
    "llama_p0": Spec("llama", dict(_LLAMA, attention_dropout=0.0), "model.layers", 4, 2048, 8, _TINY_ATTENTION),
    # GPT-2 medium's widths (16 heads of 64), 12 layers; attention, residual and embedding dropout 0.1
    "gpt2": Spec("gpt2", dict(n_embd=1024, n_head=16, attn_pdrop=0.1, resid_pdrop=0.1, embd_pdrop=0.1,
                              bos_token_id=0, eos_token_id=0),  # GPT-2's 50256 is outside the vocabulary
                 "transformer.h", 8, 1024, 12, dict(n_embd=64, n_head=4)),
    # Mamba-370m's widths (d_model 1024, inner 2048, state 16)
    "mamba": Spec("mamba", _MAMBA, "backbone.layers", 4, 2048, 8, _TINY_MAMBA),
    "mamba_loop": Spec("mamba", dict(_MAMBA, use_associative_scan=False), "backbone.layers", 8, 128, 8,
                       _TINY_MAMBA),
    # Mamba-2: inner 2048 = 32 heads of 64, state 128, one group, chunks of 256 (HF's torch path is chunked)
    "mamba2": Spec("mamba2", dict(hidden_size=1024, num_heads=32, head_dim=64, state_size=128, n_groups=1,
                                  expand=2, conv_kernel=4, chunk_size=256), "backbone.layers", 4, 2048, 8,
                   dict(hidden_size=32, num_heads=4, head_dim=16, state_size=8, chunk_size=16)),
    # Gemma 2 narrowed: Gemma-2-2B's heads (8 of 256, 4 KV heads, logit soft-capping 50, final 30), alternating
    # sliding-window (half the sequence) and full layers
    "gemma2": Spec("gemma2", dict(hidden_size=1024, intermediate_size=4096, num_attention_heads=8,
                                  num_key_value_heads=4, head_dim=256, query_pre_attn_scalar=256,
                                  attn_logit_softcapping=50.0, final_logit_softcapping=30.0), "model.layers", 4,
                   2048, 8, dict(_TINY_ATTENTION, head_dim=16, query_pre_attn_scalar=16)),
}
DEFAULT_MODELS = ("llama", "llama_p0", "gpt2", "mamba", "mamba2", "gemma2")

# variant -> (plugin on, torch.compile mode)
VARIANTS = {
    "inductor": (False, None),
    "plugin": (True, None),
    "plugin-cg": (True, "reduce-overhead"),
    "inductor-cg": (False, "reduce-overhead"),
}
DEFAULT_VARIANTS = ("inductor", "plugin", "plugin-cg")
WARMUP = 3  # steps before timing: compile, CUDA graph recording, one more


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS), help=f"comma-separated, of {list(MODELS)}")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help=f"comma-separated, of {list(VARIANTS)}")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default: each model's)")
    parser.add_argument("--seq", type=int, default=None, help="sequence length (default: each model's)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (default: each model's)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per variant, median reported (20)")
    parser.add_argument("--quick", action="store_true", help="2 layers, half the sequence, 5 timed steps")
    parser.add_argument("--compile", choices=("block", "model"), default="block",
                        help="compile each decoder layer (default) or the whole model")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny configs, fp32, 1 timed step (the CPU smoke test)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    for name, known in (("models", MODELS), ("variants", VARIANTS)):
        wanted = getattr(args, name).split(",")
        if set(wanted) - set(known):
            parser.error(f"--{name}: unknown {sorted(set(wanted) - set(known))}; known: {list(known)}")
        setattr(args, name, wanted)
    return args


def sizes(spec: Spec, args) -> tuple[int, int, int]:
    """(layers, batch, seq) for this run."""
    if args.tiny:
        n_layers, batch, seq = 2, 2, 32
    else:
        n_layers, batch, seq = spec.n_layers, spec.batch, spec.seq
        if args.quick:
            n_layers, seq = 2, max(seq // 2, 64)
    return args.layers or n_layers, args.batch or batch, args.seq or seq


def build(spec: Spec, n_layers: int, seq: int, args) -> torch.nn.Module:
    """The model on the device in the benchmark's dtype, from seed 0, training mode (dropout on)."""
    torch.manual_seed(0)
    config = spec.build_config(n_layers, seq, args.tiny)
    with warnings.catch_warnings(), torch.device(args.device):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    dtype = torch.float32 if args.tiny else torch.bfloat16
    return model.to(device=args.device, dtype=dtype).train()


def compile_model(model, spec: Spec, mode, whole: bool) -> None:
    """Compile each decoder layer in place (or the whole model)."""
    kwargs = dict(dynamic=False) if mode is None else dict(dynamic=False, mode=mode)
    if whole:
        model.compile(**kwargs)
        return
    for layer in operator.attrgetter(spec.layers)(model):
        layer.compile(**kwargs)


def trace_patterns() -> float:
    """Trace (or load from the pattern cache) the plugin's search patterns now, so that no variant's compile time
    includes this once-per-process cost; returns the seconds it took."""
    import importlib

    from inductor_conv.patterns import graph_pass

    start = time.perf_counter()
    for module, *_ in graph_pass._CAPABILITIES:
        importlib.import_module(module).register(graph_pass.PATTERNS)
    return time.perf_counter() - start


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run_variant(spec: Spec, variant: str, args, n_layers: int, batch: int, seq: int) -> dict:
    """Build, compile and train one model under one variant; returns the row's measurements."""
    plugin, mode = VARIANTS[variant]
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
    ids = torch.randint(0, model.config.vocab_size, (batch, seq), device=args.device,
                        generator=torch.Generator(args.device).manual_seed(1))

    def step():
        if mode == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def timed_step() -> float:
        sync(args.device)
        start = time.perf_counter()
        step()
        sync(args.device)
        return (time.perf_counter() - start) * 1e3

    try:
        compile_s = timed_step() / 1e3
        for _ in range(0 if args.tiny else WARMUP - 1):
            step()
        if args.device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        times = [timed_step() for _ in range(args.steps)]
        peak = torch.cuda.max_memory_allocated() / 2**30 if args.device == "cuda" else float("nan")
        gpu = gpu_ms(step, iters=3) if args.device == "cuda" else float("nan")
    finally:
        inductor_conv.disable()
    dynamo = torch._dynamo.utils.counters
    return dict(compile_s=compile_s, wall=statistics.median(times), gpu=gpu, peak=peak,
                rewrites=dict(inductor_conv.counters()), graphs=dynamo["stats"]["unique_graphs"],
                cg_skips=dynamo["inductor"]["cudagraph_skips"], tokens=batch * seq)


def release() -> None:
    """Free the previous variant's model, optimizer state and CUDA graph pools before the next one."""
    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def fmt_rewrites(counts: dict) -> str:
    return ", ".join(f"{k.replace('causal_conv1d', 'conv').replace('attention', 'attn')} {v}"
                     for k, v in counts.items()) or "-"


def main() -> None:
    args = parse_args()
    args.steps = 1 if args.tiny else args.steps or (5 if args.quick else 20)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    kernels = [m for m in ("causal_conv1d", "mamba_ssm") if importlib.util.find_spec(m)]
    lines = [f"# models benchmark {datetime.date.today()} on {device_name}, torch {torch.__version__}, "
             f"transformers {transformers.__version__}, compile per {'model' if args.compile == 'model' else 'layer'}"
             + (f"; installed (HF takes them over the torch path): {kernels}" if kernels else ""), ""]
    print("\n".join(lines), flush=True)
    if args.device == "cuda":
        gpu_ms(lambda: torch.ones(1, device="cuda") + 1, iters=1)  # start the profiler (CUPTI) before any capture
    if any(VARIANTS[v][0] for v in args.variants):
        line = f"plugin patterns traced or loaded in {trace_patterns():.1f} s (once per process, not in the rows)"
        lines.append(line)
        print(line, flush=True)
    header = ["", "| model | layers x B x S | variant | compile s | wall ms | GPU ms | tok/s | peak GiB | rewrites | "
              "graphs | cg skips | vs inductor |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += header
    print("\n".join(header), flush=True)
    with fx_graph_cache_disabled():
        for name in args.models:
            spec = MODELS[name]
            n_layers, batch, seq = sizes(spec, args)
            baseline = None
            for variant in args.variants:
                try:
                    with split_scans_off() if spec.model_type == "mamba2" else contextlib.nullcontext():
                        r = run_variant(spec, variant, args, n_layers, batch, seq)
                except Exception as e:  # one failing variant must not hide the others
                    line = f"| {name} | {n_layers} x {batch} x {seq} | {variant} | failed: {type(e).__name__}: " \
                           f"{str(e).splitlines()[0][:300] if str(e) else ''} |"
                else:
                    baseline = r["wall"] if variant == "inductor" else baseline
                    ratio = f"{baseline / r['wall']:.2f}x" if baseline else "-"
                    line = (f"| {name} | {n_layers} x {batch} x {seq} | {variant} | {r['compile_s']:.1f} | "
                            f"{r['wall']:.1f} | {r['gpu']:.1f} | {r['tokens'] / r['wall'] * 1e3:,.0f} | "
                            f"{r['peak']:.1f} | {fmt_rewrites(r['rewrites'])} | {r['graphs']} | {r['cg_skips']} | "
                            f"{ratio} |")
                finally:
                    release()
                lines.append(line)
                print(line, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
