"""Tile sweep of the causal conv1d kernels on the GPU: where inductor_conv/heuristics/conv.py's tiles come from.

    python benchmarks/diagnostics/conv_tiles.py [--quick] [--autotune] [--out sweep.md]

For both layouts at B8 C5120 L2048 K4 (bf16) it times the eager launchers (kernels/causal_conv1d.py) over the tile
tables below, checking each result against an fp32 autograd reference; then the best and the default tile of each
direction on the issue's other shapes; then the two ops compiled alone (our templates) with the GPU kernel time of
forward + backward (--autotune: and their max-autotune tables, on stderr). Table entries: (block_c, block_t,
num_warps, waves), see inductor_conv/heuristics/conv.py.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: common, conv

from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402
from inductor_conv.kernels.causal_conv1d import causal_conv1d_bwd, causal_conv1d_fwd  # noqa: E402

import conv  # noqa: E402
from common import bench, gpu_ms, parse_args, write_table  # noqa: E402
from conv import SHAPES, copy_bandwidth  # noqa: E402

TILES = {
    ("fwd", "bcl"): [(4, 256, 4, 4), (4, 256, 4, 8), (2, 256, 2, 4), (8, 256, 4, 4), (8, 256, 8, 4)],
    ("bwd", "bcl"): [(4, 256, 4, 4), (4, 256, 4, 2), (4, 256, 4, 8), (4, 256, 2, 4), (2, 256, 2, 4), (8, 256, 4, 4),
                     (8, 256, 8, 4)],
    ("fwd", "blc"): [(256, 4, 2, 32), (512, 4, 4, 16), (512, 4, 4, 32), (512, 4, 4, 4), (1024, 4, 8, 8), (256, 4, 2, 8),
                     (512, 8, 4, 8)],
    ("bwd", "blc"): [(256, 4, 2, 4), (256, 4, 2, 2), (256, 4, 2, 8), (512, 4, 4, 4), (128, 4, 2, 4), (128, 4, 2, 8),
                     (128, 8, 2, 4), (128, 8, 2, 8), (256, 8, 4, 4), (64, 8, 1, 4), (64, 8, 1, 8), (128, 4, 1, 4),
                     (256, 2, 2, 4)],
}
TOL = 2e-2  # relative L2 error of bf16 results against the fp32 reference


def make_inputs(B, C, L, K, layout):
    """benchmarks/conv.py's bf16 inputs with the launchers' [C, K] weight, plus a dy in x's layout."""
    x, w, b = conv.make_inputs(B, C, L, K, channel_last=layout == "blc", requires_grad=False)
    return x, w.squeeze(1), b, torch.randn_like(x)


def reference(x, w, b, dy):
    """(y, dx, dw, db) in fp32 autograd."""
    xf, wf, bf = (t.detach().float().requires_grad_() for t in (x, w, b))
    y = F.silu(F.conv1d(F.pad(xf, (w.shape[1] - 1, 0)), wf[:, None, :], bf, groups=x.shape[1]))
    return (y.detach(),) + torch.autograd.grad(y, (xf, wf, bf), dy.float())


def rel_err(got, want):
    return ((got.float() - want).norm() / want.norm()).item()


def run(direction, x, w, b, dy, config=None):
    if direction == "fwd":
        return (causal_conv1d_fwd(x, w, b, None, None, "silu", config=config),)
    return causal_conv1d_bwd(x, w, b, None, None, dy, "silu", config=config)[:3]


def sweep(direction, layout, lines, copy_gbs, quick):
    """Time every tile of the table; return the fastest that is correct (or None)."""
    B, C, L, K = SHAPES[0]
    x, w, b, dy = make_inputs(B, C, L, K, layout)
    ref = reference(x, w, b, dy)
    ref = ref[:1] if direction == "fwd" else ref[1:]
    moved = (2 if direction == "fwd" else 3) * x.numel() * x.element_size()
    timed = []
    for block_c, block_t, num_warps, waves in TILES[(direction, layout)][: 2 if quick else None]:
        config = dict(block_c=block_c, block_t=block_t, num_warps=num_warps, waves=waves)
        err = max(rel_err(g, r) for g, r in zip(run(direction, x, w, b, dy, config), ref))
        ms = bench(lambda: run(direction, x, w, b, dy, config))
        gbs = moved / ms / 1e6
        lines.append(f"| {direction} | {layout} | {block_c} {block_t} {num_warps} {waves} | {ms * 1e3:.1f} | "
                     f"{100 * gbs / copy_gbs:.0f}% | {err:.1e} |")
        print(lines[-1], flush=True)
        if err < TOL:
            timed.append((ms, config))
    return min(timed, key=lambda t: t[0])[1] if timed else None


def compiled_kernel_time(layout):
    """GPU us of forward + backward of the two ops compiled alone (templates), and their largest relative error."""
    ops = torch.ops.inductor_conv

    def fwd_bwd(x, w, b, dy):
        y = ops.causal_conv1d_fwd(x, w, b, None, None, "silu")
        return (y,) + tuple(ops.causal_conv1d_bwd(x, w, b, None, None, dy, "silu", True))[:3]

    x, w, b, dy = make_inputs(*SHAPES[0], layout)
    torch._dynamo.reset()
    compiled = torch.compile(fwd_bwd, fullgraph=True)
    err = max(rel_err(g, r) for g, r in zip(compiled(x, w, b, dy), reference(x, w, b, dy)))
    return 1e3 * gpu_ms(lambda: compiled(x, w, b, dy)), err


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    copy_gbs = copy_bandwidth()
    lines = [f"device copy {copy_gbs:.0f} GB/s; B C L K = {SHAPES[0]}, bf16", "",
             "| direction | layout | block_c block_t warps waves | us | % copy | rel. error |",
             "|---|---|---|---|---|---|"]
    best = {key: sweep(*key, lines, copy_gbs, args.quick) for key in TILES}
    lines += ["", "| B C L K | layout | fwd us best (default) | bwd us best (default) |", "|---|---|---|---|"]
    for shape in SHAPES[:1] if args.quick else SHAPES:
        for layout in ("bcl", "blc"):
            x, w, b, dy = make_inputs(*shape, layout)
            cells = []
            for direction in ("fwd", "bwd"):
                tuned = bench(lambda: run(direction, x, w, b, dy, best[(direction, layout)]))
                default = bench(lambda: run(direction, x, w, b, dy))
                cells.append(f"{tuned * 1e3:.1f} ({default * 1e3:.1f})")
            lines.append(f"| {' '.join(map(str, shape))} | {layout} | {cells[0]} | {cells[1]} |")
            print(lines[-1], flush=True)
    from inductor_conv.lowerings import causal_conv1d_silu

    causal_conv1d_silu.register()
    lines.append("")
    with fx_graph_cache_disabled():
        for layout in ("bcl", "blc"):
            us, err = compiled_kernel_time(layout)
            lines.append(f"templates {layout}: forward + backward {us:.1f} us GPU (rel. error {err:.1e})")
            print(lines[-1], flush=True)
    if args.autotune:  # the templates' own max-autotune tables (stderr), the two ops compiled alone per layout
        from torch._inductor import config as inductor_config

        with fx_graph_cache_disabled(), inductor_config.patch(max_autotune=True):
            for layout in ("bcl", "blc"):
                print(f"--- max-autotune, {layout}", flush=True)
                compiled_kernel_time(layout)
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
