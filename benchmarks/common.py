"""Pieces both benchmarks share: timing, memory held by a forward, compiling with and without the plugin."""
from __future__ import annotations

import argparse
import contextlib
import importlib

import torch

import inductor_conv
from inductor_conv.demo import gpu_ms  # noqa: F401  (re-exported: GPU kernel time per call)


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="first case only")
    parser.add_argument("--cases", default=None, help="comma-separated indices of the cases to run (default: all)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.add_argument("--impls", default=None, help="comma-separated implementation names (default: all)")
    parser.add_argument("--autotune", action="store_true",
                        help="diagnostics/conv_tiles.py: also the templates' max-autotune tables")
    parser.add_argument("--profile", action="store_true", help="overhead.py: also cProfile's top host functions")
    parser.add_argument("--dropout", default="0.1,0", help="overhead.py: the attention rows' dropout probabilities")
    parser.add_argument("--rounds", type=int, default=1,
                        help="overhead.py: interleaved measurements of each eager row (the median is reported)")
    return parser.parse_args()


def bench(fn, rep: int = 60) -> float:
    """Median milliseconds of fn over ~rep ms of runs (triton.testing.do_bench: CUDA events, L2 flushed)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=10, rep=rep, return_mode="median")


@contextlib.contextmanager
def config_patch(overrides: dict):
    """inductor_conv.config with these values set while open (a graph reads them when it compiles)."""
    saved = {name: getattr(inductor_conv.config, name) for name in overrides}
    try:
        for name, value in overrides.items():
            setattr(inductor_conv.config, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(inductor_conv.config, name, value)


def impl_settings(name: str) -> tuple[str, dict, dict]:
    """A diagnostic's implementation name, ``base:key=value,...``: (base, the settings that are inductor_conv.config
    switches, as that switch's type from an int (an int where the switch is None: its automatic choice), for
    config_patch; the other settings, as strings)."""
    base, _, settings = name.partition(":")
    others = dict(s.split("=") for s in settings.split(",") if s)
    switches = {}
    for key in [key for key in others if hasattr(inductor_conv.config, key)]:
        current = getattr(inductor_conv.config, key)
        switches[key] = int(others.pop(key)) if current is None else type(current)(int(others.pop(key)))
    return base, switches, others


def report_variant(name: str, run, top: int = 4) -> None:
    """Run ``run`` once (compiling it), then print its wall and GPU ms, the attention rewrites and the top kernels:
    one line of a diagnostic's comparison."""
    run()
    wall = bench(run)
    gpu, shown = top_kernels(run, top=top)
    print(f"  {name:34s} wall {wall:.3f} ms  GPU {gpu:.3f} ms  rewrites {inductor_conv.counters()['attention']}  "
          f"| {shown}")


def repeat_kv(q, k, v):
    """HF's repeat_kv: K and V expanded to q's heads (unchanged without GQA); each keeps its own head dim."""
    n_rep = q.shape[1] // k.shape[1]
    if n_rep == 1:
        return k, v
    B, H, S = k.shape[:3]
    return tuple(t[:, :, None].expand(B, H, n_rep, S, t.shape[-1]).reshape(B, H * n_rep, S, t.shape[-1])
                 for t in (k, v))


def attention_tflops(ms: float, B: int, Hq: int, S: int, D: int, causal: bool, backward: bool) -> float:
    """TFLOP/s by the anchors' count: forward 4·B·Hq·S²·D (half of it causal), forward+backward 3.5× that."""
    flops = 4 * B * Hq * S * S * D * (0.5 if causal else 1.0) * (3.5 if backward else 1.0)
    return flops / ms / 1e9


def held_bytes(run_forward) -> int:
    """Device bytes a forward leaves allocated besides its output: what it holds for the backward."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = run_forward()
    torch.cuda.synchronize()
    held = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    del out
    return held


def compile_with_plugin(fn, plugin: bool):
    """torch.compile(fn) with inductor_conv enabled or disabled (fresh Dynamo state, static shapes)."""
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    if plugin:
        inductor_conv.enable(("cuda",))
    else:
        inductor_conv.disable()
    return torch.compile(fn, dynamic=False)


def pick_impls(names, args: argparse.Namespace) -> set:
    """The implementation names --impls asks for (all by default); an unknown name is an error."""
    if not args.impls:
        return set(names)
    wanted = set(args.impls.split(","))
    if wanted - set(names):
        raise SystemExit(f"--impls: unknown {sorted(wanted - set(names))}; known: {sorted(names)}")
    return wanted


def pick(cases: list, args: argparse.Namespace) -> list:
    """The cases --quick (the first) or --cases (indices) asks for, else all."""
    if args.cases:
        return [cases[int(i)] for i in args.cases.split(",")]
    return cases[:1] if args.quick else cases


def conv_kernel_name(name: str) -> bool:
    """Whether a kernel, by its name, belongs to a causal conv. Inductor names a kernel after the graph nodes whose
    lowering made it: our templates and the dw/dβ sums (triton_tem_fused_causal_conv1d_fwd_0), and around default
    Inductor's extern conv the copy of x into the layout it asks for, the bias it peels off into a pointwise add
    (fused with the SiLU after it) and the bias gradient's sum (..._fused_convolution_...)."""
    return "causal_conv1d" in name or (name.startswith("triton_") and "convolution" in name)


def _profiled(fn, iters: int, activities):
    """torch.profiler over `iters` synchronised calls of fn, after one warm-up call."""
    from torch.profiler import profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=activities) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    return prof


def kernel_launches(fn, iters: int = 3) -> float:
    """Kernels launched per call of fn: the CUDA kernel events of one torch.profiler run, after one warm-up call."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity

    events = _profiled(fn, iters, [ProfilerActivity.CUDA]).events()
    return sum(1 for e in events if e.device_type == DeviceType.CUDA) / iters


def step_kernel_ms(fn, iters: int = 3) -> tuple[float, float]:
    """(all kernels, conv kernels): GPU milliseconds per call of fn, from one torch.profiler run (CPU ops and CUDA
    kernels) after one warm-up call. Conv kernels are those conv_kernel_name picks, and every kernel launched inside
    an ATen convolution or its backward (default Inductor's extern conv and its backward's ATen fallback: cuDNN or
    ATen's depthwise kernels, whatever their names). Kernels replayed by a CUDA graph have no launching CPU op, so
    under reduce-overhead only conv_kernel_name counts: right for the plugin's templates, short of an extern conv."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity

    prof = _profiled(fn, iters, [ProfilerActivity.CPU, ProfilerActivity.CUDA])

    def in_aten_conv(event) -> bool:
        while event is not None:
            if event.name in ("aten::convolution", "aten::convolution_backward"):
                return True
            event = event.cpu_parent
        return False

    events = prof.events()
    kernels = [e for e in events if e.device_type == DeviceType.CUDA]
    total = sum(e.device_time_total for e in kernels)
    conv = sum(e.device_time_total for e in kernels if conv_kernel_name(e.name))
    # a kernel is listed under the innermost CPU op that launched it (aten::cudnn_convolution, ...)
    conv += sum(k.duration for e in events if e.device_type == DeviceType.CPU and e.kernels and in_aten_conv(e)
                for k in e.kernels if not conv_kernel_name(k.name))
    return total / iters / 1e3, conv / iters / 1e3


def top_kernels(fn, iters: int = 5, top: int = 4, width: int = 28) -> tuple[float, str]:
    """(GPU milliseconds per call of fn, its `top` kernels by time as "name ms, ...", each name cut to `width`
    characters) from one torch.profiler run of CUDA activity after one warm-up call."""
    from torch.profiler import ProfilerActivity

    prof = _profiled(fn, iters, [ProfilerActivity.CUDA])
    rows = [(e.key, e.device_time_total / iters / 1e3) for e in prof.key_averages() if e.device_time_total > 0]
    shown = ", ".join(f"{k[:width]} {ms:.3f}" for k, ms in sorted(rows, key=lambda r: -r[1])[:top])
    return sum(ms for _, ms in rows), shown


def write_table(lines: list[str], path: str | None) -> None:
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")


@contextlib.contextmanager
def scan_outside_graph(path: str | None, replacement=None):
    """While open, the function at ``path`` ("package.module.name": an HF mixer's scan) is wrapped in
    torch.compiler.disable (``replacement`` instead of it, if given): Dynamo breaks the graph at its call and runs it
    eagerly, what a user does where Inductor cannot compile a scan (torch 2.11: Mamba-2's split cumsum) or takes
    minutes.  HF's mixers look the function up in their module at call time."""
    if path is None:
        yield
        return
    module_name, name = path.rsplit(".", 1)
    module = importlib.import_module(module_name)
    original = getattr(module, name)
    setattr(module, name, torch.compiler.disable(replacement or original))
    try:
        yield
    finally:
        setattr(module, name, original)
