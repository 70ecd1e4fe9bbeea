"""Conv templates against `waves` (programs per SM), each op compiled alone: inductor_conv/heuristics/conv.py's waves.

    python benchmarks/diagnostics/conv_waves.py [--kinds fwd:blc_t,bwd:bcl] [--rounds 7] [--default-only]
                                                [--waves 8,32] [--unroll 2]

For each kind (direction:layout; "blc_t" is a channel-last x with y, or dy, laid out (B, C, L)) and each of
benchmarks/conv.py's shapes it compiles the op once per `waves` value of WAVES (the other tile fields are the table's
defaults), checks each against an fp32 reference, then times them in interleaved rounds (GPU kernel time, medians;
the backward includes the dw / dbeta sum).  Differences between device calls reach ~6% for one configuration, so
only compare numbers of one run.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import types

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: common, conv

from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402
from inductor_conv.heuristics import conv as heuristics  # noqa: E402
from inductor_conv.lowerings import causal_conv1d_silu  # noqa: E402

import conv  # noqa: E402
from common import gpu_ms  # noqa: E402
from conv_tiles import reference, rel_err  # noqa: E402

WAVES = {
    ("fwd", "bcl"): [8, 32, 128], ("bwd", "bcl"): [4, 16, 64],
    ("fwd", "blc"): [32, 64, 128], ("bwd", "blc"): [8, 16, 32, 64],
    ("fwd", "blc_t"): [16, 32, 64, 512], ("bwd", "blc_t"): [8, 16, 32, 64, 128],
}


def fwd(x, w, b, dy, contiguous_out):
    return (torch.ops.inductor_conv.causal_conv1d_fwd(x, w, b, None, None, "silu", contiguous_out),)


def bwd(x, w, b, dy, contiguous_out):
    return torch.ops.inductor_conv.causal_conv1d_bwd(x, w, b, None, None, dy, "silu", True)[:3]


def fresh(fn, tag):
    """fn under a new code object: Dynamo keeps its compiled graphs on the code object, so each copy compiles anew
    (with the tile table of that moment)."""
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{tag}")
    return types.FunctionType(code, fn.__globals__, code.co_name)


def build(direction, layout, shape, waves):
    """(a call of the compiled op, its relative error) with the (direction, layout) tile's waves replaced."""
    key = (direction, layout)
    default = heuristics.TILES[key]
    heuristics.TILES[key] = dataclasses.replace(default, waves=waves)
    try:
        x, w, b = conv.make_inputs(*shape, channel_last=layout != "bcl", requires_grad=False)
        w = w.squeeze(1)
        dy = torch.randn_like(x) if layout != "blc_t" else torch.randn(x.shape, device=x.device, dtype=x.dtype)
        op = torch.compile(fresh(fwd if direction == "fwd" else bwd, f"{layout}_{waves}"), fullgraph=True,
                           dynamic=False)
        want = reference(x, w, b, dy)
        want = want[:1] if direction == "fwd" else want[1:]
        err = max(rel_err(g, r) for g, r in zip(op(x, w, b, dy, layout == "blc_t"), want))
        return (lambda: op(x, w, b, dy, layout == "blc_t")), err
    finally:
        heuristics.TILES[key] = default


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kinds", default=None, help="comma-separated direction:layout (default: all)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--default-only", action="store_true", help="only the table's own waves (a code change)")
    parser.add_argument("--waves", default=None, help="comma-separated waves for every kind (default: WAVES)")
    parser.add_argument("--unroll", type=int, default=None, help="the backward tiles' loop unroll factor")
    args = parser.parse_args()
    kinds = [tuple(k.split(":")) for k in args.kinds.split(",")] if args.kinds else list(WAVES)
    if args.unroll is not None:  # the table's tiles, unrolled: every build below starts from them
        for kind in kinds:
            heuristics.TILES[kind] = dataclasses.replace(heuristics.TILES[kind], unroll=args.unroll)
    torch.manual_seed(0)
    torch._dynamo.config.recompile_limit = 1000
    torch._dynamo.config.automatic_dynamic_shapes = False  # a second shape must not make the op dynamic
    causal_conv1d_silu.register()
    print("| kind | B C L K | waves: GPU us median (min-max), rel. error |\n|---|---|---|")
    with fx_graph_cache_disabled():
        for kind in kinds:
            for shape in conv.SHAPES:
                values = [heuristics.TILES[kind].waves] if args.default_only else WAVES[kind]
                if args.waves:
                    values = [int(v) for v in args.waves.split(",")]
                runs = {waves: build(*kind, shape, waves) for waves in values}
                times = {waves: [] for waves in runs}
                for _ in range(args.rounds):
                    for waves, (run, _) in runs.items():
                        times[waves].append(1e3 * gpu_ms(run, iters=5))
                cells = " / ".join(f"{waves}: {statistics.median(t):.1f} ({min(t):.1f}-{max(t):.1f}) "
                                   f"{runs[waves][1]:.0e}"
                                   for waves, t in times.items())
                print(f"| {':'.join(kind)} | {' '.join(map(str, shape))} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
