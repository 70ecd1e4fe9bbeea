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
GiB, rewrites (inductor_conv.counters()); "vs inductor" is default Inductor's wall over this row's.  ``--cprofile N``
prints, for one type, each variant's N functions with the most host time of its own (cProfile over --steps steps):
where a host-bound step's time goes.

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
from common import step_kernel_ms  # noqa: E402
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


def run_variant(model_type: str, plugin: bool, args) -> dict:
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    if plugin:
        inductor_conv.enable((args.device,))
    else:
        inductor_conv.disable()
    model = build(model_type, args.layers, args.device)
    cuda = args.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    kwargs = inputs(model, next(model.parameters()).dtype, True, batch=args.batch, length=args.length,
                    vocab=getattr(model.config, "vocab_size", 64),
                    samples=int(16000 * args.seconds))
    kwargs = {k: v.to(args.device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    loss_of = torch.compile(lambda kw: _first_float(model(**kw)).float().square().mean(), dynamic=False)

    def step():
        loss_of(kwargs).backward()
        model.zero_grad(set_to_none=True)

    issued = []

    def timed() -> float:
        sync()
        start = time.perf_counter()
        step()
        issued.append((time.perf_counter() - start) * 1e3)  # the host has queued the step's work
        sync()
        return (time.perf_counter() - start) * 1e3

    try:
        compile_s = timed() / 1e3
        step(), step()
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        issued.clear()
        times = [timed() for _ in range(args.steps)]
        peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
        gpu = step_kernel_ms(step)[0] if cuda else float("nan")
        kernels = launches(step) if cuda else 0
        if args.cprofile:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.steps):
                step()
            sync()
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(args.cprofile)
            print(f"## host profile, {model_type} {'plugin' if plugin else 'inductor'}, {args.steps} steps\n"
                  f"{text.getvalue()}", flush=True)
    finally:
        inductor_conv.disable()
    return dict(compile_s=compile_s, wall=statistics.median(times), host=statistics.median(issued), gpu=gpu,
                kernels=kernels, peak=peak, rewrites=dict(inductor_conv.counters()))


def launches(fn, iters: int = 3) -> float:
    """Kernels launched per call of fn (torch.profiler's CUDA kernel events over `iters` calls, after a warm-up)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA) / iters


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
    parser.add_argument("--cprofile", type=int, default=0, metavar="N",
                        help="print each variant's N functions with the most host time of their own (one type)")
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
    if len(args.model_types) > 1:  # one process per type: a device-side assert ends its process, not the survey
        rest = [f"--{k}={getattr(args, k)}" for k in ("variants", "layers", "batch", "length", "seconds", "steps",
                                                       "budget", "device")]
        for model_type in args.model_types:
            try:
                child = subprocess.run([sys.executable, __file__, model_type, "--rows-only", *rest],
                                       capture_output=True, text=True, timeout=args.budget + 120)
                rows = [line for line in child.stdout.splitlines() if line.startswith(f"| {model_type} |")]
                rows = rows or [f"| {model_type} | - | failed: exit {child.returncode}: "
                                f"{(child.stderr.strip().splitlines() or [''])[-1][:200]} |"]
            except subprocess.TimeoutExpired:
                rows = [f"| {model_type} | - | timed out |"]
            lines += rows
            print("\n".join(rows), flush=True)
        if args.out:
            Path(args.out).write_text("\n".join(lines) + "\n")
        return
    with fx_graph_cache_disabled():
        for model_type in args.model_types:
            baseline, start = None, time.perf_counter()
            for variant in args.variants.split(","):
                left = args.budget - (time.perf_counter() - start)
                try:
                    if left <= 0:
                        raise M.BudgetSpent("skipped: budget spent")
                    with M.time_limit(left, "interrupted: budget ran out"):
                        r = run_variant(model_type, variant == "plugin", args)
                except M.BudgetSpent as e:
                    line = f"| {model_type} | {variant} | {e} |"
                except Exception as e:  # noqa: BLE001 - one failing type must not hide the others
                    first = str(e).splitlines()[0][:200] if str(e) else ""
                    line = f"| {model_type} | {variant} | failed: {type(e).__name__}: {first} |"
                else:
                    if variant == "inductor":
                        baseline = r["wall"]
                    ratio = f"{baseline / r['wall']:.2f}x" if baseline else "-"
                    line = (f"| {model_type} | {variant} | {r['compile_s']:.1f} | {r['wall']:.2f} | {r['host']:.2f} | "
                            f"{r['gpu']:.2f} | {r['kernels']:.0f} | {r['peak']:.2f} | "
                            f"{M.fmt_rewrites(r['rewrites'])} | {ratio} |")
                finally:
                    M.release()
                lines.append(line)
                print(line, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
