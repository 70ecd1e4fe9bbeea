"""Whole-model training steps of many Hugging Face model types, default Inductor against the plugin, on the GPU.

benchmarks/models.py measures a few families in depth, each layer compiled; this survey asks the question a new
user asks of every other type: is ``torch.compile(model)`` with the plugin ever slower than without it?  Each type is
built from its config's own defaults (the sizes the config class describes, mostly the base or released model's)
with its layers cut to two (``--layers``), attn_implementation="eager", bf16 weights, dropout as the config sets it;
the model and its loss (the first floating output's mean square, model_survey.py's) are compiled whole, and a step is
that forward, the backward and zero_grad (no optimizer: it is the same in both variants).  Inputs are
model_survey.py's at real sizes: ``--batch`` rows of ``--length`` token ids (one row right-padded), images at the
config's size, ``--seconds`` of 16 kHz audio.  Per variant: compile s (the first step), wall ms (median of --steps
synchronised steps after two warm-up steps), host ms (the median time the host takes to queue a step: near wall ms,
the step is host-bound), GPU ms and kernels (torch.profiler: every kernel's time, and the launches per step), peak
GiB, rewrites (inductor_conv.counters(), and "tables N": small tables' gradients summed per row, Note [small table
gradients]); "vs inductor" is default Inductor's wall (the median of its rows') over
this row's.  Where the step is host-bound, the host's own speed drifts during a run by more than the variants differ;
``--interleave`` compiles every variant in one process and then takes their steps in turns (ABBA), so that the
drift moves every variant alike.  ``--cprofile N`` prints, for one type, each variant's N functions with the most
host time of their own (cProfile over --steps steps): where a host-bound step's time goes; ``--top N`` each
variant's N longest kernels.  Variants: benchmarks/models.py's without CUDA graphs (inductor, plugin, and the plugin
with config overrides, e.g. plugin-summaryop: the mask summary op as a fallback kernel).

    python benchmarks/diagnostics/model_speed.py [TYPES...] [--variants inductor,plugin] [--budget 120]

The default types are those models.py does not measure.  A type that fails to build or compile is reported as such.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import inductor_conv  # noqa: E402
import models as M  # noqa: E402
from common import config_patch, kernel_launches, step_kernel_ms, top_kernels  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402
from model_survey import _first_float, inputs  # noqa: E402

# type -> config keys besides the layer count (whose key is found by name)
TYPES = {
    # text encoders (token ids)
    "roberta": {"max_position_embeddings": 514},  # roberta-base's: positions start after the padding index
    "distilbert": {}, "albert": {}, "electra": {}, "mpnet": {}, "modernbert": {},
    # decoders (their base models: the language-model head, large beside two layers, is the same in both variants)
    "opt": {}, "mistral": {}, "phi": {}, "falcon": {}, "gemma": {}, "qwen2": {},
    # encoder-decoders (the decoder's last hidden state)
    "t5": {}, "bart": {}, "whisper": {},
    # vision (the config's image size, 224 x 224 but MobileViT's 256); SegFormer (MiT-b0) and MobileViT whole
    "deit": {}, "beit": {}, "dinov2": {}, "clip_vision_model": {}, "siglip_vision_model": {},
    "segformer": {"image_size": 512}, "mobilevit": {},
    # audio
    "hubert": {}, "wav2vec2-bert": {},
}
_WHOLE = {"segformer", "mobilevit"}  # their configs' own stages and depths (MiT-b0 at 512 x 512, MobileViT-S)
_LAYER_KEYS = ("num_hidden_layers", "n_layers", "n_layer", "num_layers", "encoder_layers", "decoder_layers",
               "num_decoder_layers")


def build(model_type: str, layers: int, device: str):
    """The base model (AutoModel) of the type's default config with `layers` layers, bf16 on the GPU (float32 on the
    CPU: `--device cpu`, a smoke run of this script)."""
    defaults = transformers.AutoConfig.for_model(model_type)
    keys = {} if model_type in _WHOLE else {
        k: layers for k in _LAYER_KEYS if isinstance(getattr(defaults, k, None), int)}
    config = transformers.AutoConfig.for_model(model_type, **keys, **TYPES.get(model_type, {}))
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(config, attn_implementation="eager")
    return model.to(device, torch.bfloat16 if device == "cuda" else torch.float32).train()


# variant -> (plugin on, the config settings it compiles under): models.py's variants without CUDA graphs
VARIANTS = {name: (plugin, overrides) for name, (plugin, mode, overrides) in M.VARIANTS.items() if mode is None}


class Variant:
    """One variant of one model type compiled and warmed up: its step, compile seconds and rewrites, and the timings
    collected so far (wall ms of synchronised steps, host ms to queue each)."""

    def __init__(self, model_type: str, variant: str, args):
        (self.plugin, overrides), self.device = VARIANTS[variant], args.device
        inductor_conv.reset_counters()
        with config_patch(overrides):  # read while the graphs compile (here)
            try:
                self.model = model = build(model_type, args.layers, args.device)
                self.cuda = args.device == "cuda"
                kwargs = inputs(model, next(model.parameters()).dtype, True, batch=args.batch, length=args.length,
                                vocab=getattr(model.config, "vocab_size", 64), samples=int(16000 * args.seconds))
                self.kwargs = {k: v.to(args.device) if isinstance(v, torch.Tensor) else v
                               for k, v in kwargs.items()}
                # a code object of its own per variant: Dynamo caches compiled frames by code object, so variants
                # alive in one process (--interleave) each find their own entry first instead of failing another's
                # guards
                loss = eval(compile("lambda kw: _first_float(model(**kw)).float().square().mean()",
                                    f"<loss {model_type} {variant} {id(self)}>", "eval"),
                            {"_first_float": _first_float, "model": model})
                self.loss_of = torch.compile(loss, dynamic=False)
                self.times, self.issued = [], []
                self.compile_s = self.timed() / 1e3  # forward and backward compiled here, under use()'s state
                self.step(), self.step()
                self.times.clear(), self.issued.clear()
            finally:
                inductor_conv.disable()
        self.rewrites = dict(inductor_conv.counters())
        tables = torch._dynamo.utils.counters["inductor_conv"]["small_table_grad"]  # Note [small table gradients]
        if tables:
            self.rewrites["tables"] = tables

    def use(self):
        """The plugin's state this variant was compiled under: a compiled frame called under the other state is
        compiled again for it (Note [plugin state guard] in _enable.py), so each variant's steps run under its own,
        as a user's would."""
        if self.plugin:
            inductor_conv.enable((self.device,))
        else:
            inductor_conv.disable()

    def step(self):
        self.loss_of(self.kwargs).backward()
        self.model.zero_grad(set_to_none=True)

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def timed(self) -> float:
        self.use()
        self.sync()
        start = time.perf_counter()
        self.step()
        self.issued.append((time.perf_counter() - start) * 1e3)  # the host has queued the step's work
        self.sync()
        self.times.append((time.perf_counter() - start) * 1e3)
        return self.times[-1]

    def peak_gib(self) -> float:
        """The step's peak memory: what the model, its inputs and the step hold at once (other variants' models,
        alive beside it under --interleave, not counted)."""
        if not self.cuda:
            return float("nan")
        held = sum(t.numel() * t.element_size() for t in [*self.model.parameters(), *self.model.buffers(),
                                                            *self.kwargs.values()] if isinstance(t, torch.Tensor))
        self.sync()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        self.step()
        self.sync()
        return (held + torch.cuda.max_memory_allocated() - before) / 2**30

    def result(self, args, model_type: str, variant: str) -> dict:
        self.use()
        gpu = step_kernel_ms(self.step)[0] if self.cuda else float("nan")
        kernels = kernel_launches(self.step) if self.cuda else 0
        if args.top and self.cuda:
            shown = top_kernels(self.step, top=args.top, width=90)[1].replace(", ", "\n    ")
            print(f"## top kernels, {model_type} {variant} (ms per step)\n    {shown}", flush=True)
        if args.cprofile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.steps):
                self.step()
            self.sync()
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.cprofile)
            print(f"## host profile, {model_type} {variant}, {args.steps} steps\n{text.getvalue()}", flush=True)
        peak = self.peak_gib()
        inductor_conv.disable()
        return dict(compile_s=self.compile_s, wall=statistics.median(self.times), host=statistics.median(self.issued),
                    gpu=gpu, kernels=kernels, peak=peak, rewrites=self.rewrites)


def run_variant(model_type: str, variant: str, args) -> dict:
    M.release()  # the previous variant's model and compiled frames gone (Dynamo reset)
    v = Variant(model_type, variant, args)
    for _ in range(args.steps):
        v.timed()
    return v.result(args, model_type, variant)


def run_interleaved(model_type: str, variants: list[str], args) -> list[dict]:
    """Every variant compiled in one process, then their steps taken in turns (ABBA: each round's order the previous
    round's reversed), so that a host that speeds up or slows down during the run moves every variant alike."""
    M.release()
    plugins = {variant for variant in variants if VARIANTS[variant][0]}
    if len(plugins) > 1:
        # Dynamo's cache holds the compiled frames of the model's own functions (a graph break's resumed frames),
        # shared by every variant alive: guarded by the plugin's state, not by its config, so a second plugin variant
        # would run the first one's frames
        raise ValueError(f"--interleave takes one plugin variant, got {sorted(plugins)}: run them in turn instead")
    alive = [Variant(model_type, variant, args) for variant in variants]
    with torch._dynamo.config.patch(error_on_recompile=True):  # each variant runs the graphs it compiled
        for i in range(args.steps):
            for v in alive if i % 2 == 0 else alive[::-1]:
                v.timed()
    return [v.result(args, model_type, variant) for v, variant in zip(alive, variants)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_types", nargs="*", default=list(TYPES))
    parser.add_argument("--variants", default="inductor,plugin")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--budget", type=float, default=120, help="seconds per model type, all variants")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--interleave", action="store_true",
                        help="compile every variant in one process, then take their steps in turns")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N",
                        help="print each variant's N functions with the most host time of their own (one type)")
    parser.add_argument("--top", type=int, default=0, metavar="N",
                        help="print each variant's N longest kernels (GPU ms per step)")
    parser.add_argument("--out")
    parser.add_argument("--rows-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    lines = [f"# model_speed {time.strftime('%Y-%m-%d')} on {device_name}, torch {torch.__version__}, "
             f"transformers {transformers.__version__}; {args.layers} layers, B{args.batch} x {args.length} tokens, "
             f"{args.seconds:g} s audio; plugin patterns traced in {M.trace_patterns():.1f} s", "",
             "| type | variant | compile s | wall ms | host ms | GPU ms | kernels | peak GiB | rewrites "
             "| vs inductor |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    if not args.rows_only:
        print("\n".join(lines), flush=True)
    if args.cprofile and len(args.model_types) > 1:
        parser.error("--cprofile profiles one model type")
    unknown = [variant for variant in args.variants.split(",") if variant not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}, not among {list(VARIANTS)}")
    if len(args.model_types) > 1:  # one process per type: a device-side assert ends its process, not the survey
        rest = [f"--{k}={getattr(args, k)}" for k in ("variants", "layers", "batch", "length", "seconds", "steps",
                                                       "budget", "device", "top")]
        for model_type in args.model_types:
            try:
                child = subprocess.run([sys.executable, __file__, model_type, "--rows-only", *rest,
                                        *["--interleave"] * args.interleave],
                                       capture_output=True, text=True, timeout=args.budget + 120)
                rows = [line for line in child.stdout.splitlines() if line.startswith(f"| {model_type} |")]
                print("\n".join(line for line in child.stdout.splitlines() if line.startswith(("##", "    "))))
                rows = rows or [f"| {model_type} | - | failed: exit {child.returncode}: "
                                f"{(child.stderr.strip().splitlines() or [''])[-1][:200]} |"]
            except subprocess.TimeoutExpired:
                rows = [f"| {model_type} | - | timed out |"]
            lines += rows
            print("\n".join(rows), flush=True)
        if args.out:
            Path(args.out).write_text("\n".join(lines) + "\n")
        return
    variants = args.variants.split(",")
    with fx_graph_cache_disabled():
        for model_type in args.model_types:
            results = []  # one per variant, in order; a variant not measured gets {"error": why}
            try:
                with M.time_limit(args.budget, "interrupted: budget ran out"):
                    if args.interleave:
                        results = run_interleaved(model_type, variants, args)
                    else:
                        for variant in variants:
                            results.append(run_variant(model_type, variant, args))
            except (M.BudgetSpent, Exception) as e:  # noqa: BLE001 - one failing type must not hide the others
                why = str(e).splitlines()[0][:200] if str(e) else ""
                if not isinstance(e, M.BudgetSpent):
                    why = f"failed: {type(e).__name__}: {why}"
                results += [dict(error=why)] * (len(variants) - len(results))
            finally:
                M.release()
            walls = [r["wall"] for r, v in zip(results, variants) if v == "inductor" and "wall" in r]
            baseline = statistics.median(walls) if walls else None
            for r, variant in zip(results, variants):
                if "error" in r:
                    line = f"| {model_type} | {variant} | {r['error']} |"
                else:
                    ratio = f"{baseline / r['wall']:.2f}x" if baseline else "-"
                    line = (f"| {model_type} | {variant} | {r['compile_s']:.1f} | {r['wall']:.2f} | {r['host']:.2f} | "
                            f"{r['gpu']:.2f} | {r['kernels']:.0f} | {r['peak']:.2f} | "
                            f"{M.fmt_rewrites(r['rewrites'])} | {ratio} |")
                lines.append(line)
                print(line, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
