"""GPU kernel time of one conv forward+backward, kernel by kernel (torch.profiler): where a step's time goes.

    python benchmarks/diagnostics/conv_profile.py [--shape B,C,L,K] [--layout bcl|cl]
                                                  [--impls ours-op,ours-compiled]
    python benchmarks/diagnostics/conv_profile.py --inside [--shapes all]

benchmarks/conv.py's inputs and implementations (its `dy` convention: y's own layout); each implementation is
called once to warm up, then 10 steps are profiled; the table lists every kernel's GPU µs per step, longest first.
--inside: the channel-last conv inside a graph, as in a Mamba block -- x the channel-last view of a (B, L, C)
tensor and y read by the next layer, here a matmul with a (C, 64) weight (out_proj's place), so y stays in x's
layout (Note [conv output layout]); prints the conv kernels' GPU time (names containing causal_conv1d) against the
5·|x| floor at the device copy's bandwidth.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: common, conv

import inductor_conv  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402
from inductor_conv.demo import kernel_times as kernels  # noqa: E402

import conv  # noqa: E402
from common import compile_with_plugin  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shape", default="8,5120,2048,4")
    parser.add_argument("--layout", default="cl", choices=("bcl", "cl"))
    parser.add_argument("--impls", default="ours-op,ours-compiled")
    parser.add_argument("--inside", action="store_true")
    args = parser.parse_args()
    if args.inside:
        return inside()
    B, C, L, K = map(int, args.shape.split(","))
    torch.manual_seed(0)
    impls = conv.implementations()
    with fx_graph_cache_disabled():
        for name in args.impls.split(","):
            fn = impls[name]
            if isinstance(fn, str):
                fn = compile_with_plugin(conv.eager_pattern, plugin=fn == "compiled-on")
            x, w, b = conv.make_inputs(B, C, L, K, args.layout == "cl", requires_grad=True)
            dy = torch.randn_like(fn(x, w, b))

            def step():
                torch.autograd.grad(fn(x, w, b), (x, w, b), dy)

            rows = kernels(step)
            inductor_conv.disable()
            print(f"\n{name}, B{B} C{C} L{L} K{K}, {args.layout}: {sum(r[1] for r in rows):.1f} µs per step")
            for key, us, count in rows:
                print(f"  {us:8.1f} µs  x{count}  {key[:110]}")


def inside():
    torch.manual_seed(0)
    copy_gbs = conv.copy_bandwidth()
    print(f"device copy {copy_gbs:.0f} GB/s")
    print("| B C L K | rewrites | conv kernels fwd+bwd GPU µs | × floor (5·|x|) | kernels (µs) |")
    print("|---|---|---|---|---|")

    def block(x, w, b, out_w):
        return conv.eager_pattern(x, w, b).transpose(1, 2) @ out_w

    with fx_graph_cache_disabled():
        for B, C, L, K in conv.SHAPES:
            fn = compile_with_plugin(block, plugin=True)
            x, w, b = conv.make_inputs(B, C, L, K, channel_last=True, requires_grad=True)
            out_w = torch.randn(C, 64, device="cuda", dtype=x.dtype, requires_grad=True)
            dy = torch.randn(B, L, 64, device="cuda", dtype=x.dtype)

            def step():
                torch.autograd.grad(fn(x, w, b, out_w), (x, w, b, out_w), dy)

            rows = [r for r in kernels(step) if "causal_conv1d" in r[0]]
            rewrites = inductor_conv.counters()["causal_conv1d"]
            inductor_conv.disable()
            us = sum(r[1] for r in rows)
            floor_us = 5 * B * C * L * x.element_size() / copy_gbs / 1e3
            names = ", ".join(f"{key.removeprefix('triton_')[:40]} {t:.1f}" for key, t, _ in rows)
            print(f"| {B} {C} {L} {K} | {rewrites} | {us:.1f} | {us / floor_us:.2f} | {names} |", flush=True)


if __name__ == "__main__":
    main()
