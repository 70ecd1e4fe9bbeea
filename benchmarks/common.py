"""Pieces both benchmarks share: timing, memory held by a forward, compiling with and without the plugin."""
from __future__ import annotations

import argparse

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
                        help="conv_tiles.py: also the templates' max-autotune tables")
    parser.add_argument("--profile", action="store_true", help="overhead.py: also cProfile's top host functions")
    return parser.parse_args()


def bench(fn, rep: int = 60) -> float:
    """Median milliseconds of fn over ~rep ms of runs (triton.testing.do_bench: CUDA events, L2 flushed)."""
    from triton.testing import do_bench

    return do_bench(fn, warmup=10, rep=rep, return_mode="median")


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


def write_table(lines: list[str], path: str | None) -> None:
    if path:
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
