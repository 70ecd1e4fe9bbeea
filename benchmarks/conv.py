"""Causal depthwise conv1d + SiLU on the GPU: ours vs Inductor default, fla and Dao, in both layouts.

    python benchmarks/conv.py [--quick] [--out results.md]

For each (B, C, L, K) and layout — (B, C, L) contiguous, and the channel-last view (B, L, C).transpose(1, 2) — it
times (median of triton.testing.do_bench; and GPU kernel time from the profiler) the forward and forward+backward of:
  ours-op        inductor_conv.causal_conv1d called eagerly
  ours-compiled  the eager pattern below compiled with inductor_conv enabled (the rewrite + our templates)
  inductor       the same eager pattern compiled by plain Inductor
  fla            fla's Triton causal_conv1d (fla-core, when importable; it takes (B, T, D))
  dao            Dao-AILab's causal_conv1d_fn (when importable)
and prints GB/s (forward moves 2·|x| bytes: read x, write y), % of the device-copy bandwidth measured in the same
run, forward+backward (wall time, and GPU kernel time from the profiler, which excludes autograd's CPU overhead)
against the 5·|x| byte floor, and the bytes each forward holds for backward.
"""
from __future__ import annotations

import contextlib
import datetime

import torch
import torch.nn.functional as F

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from common import bench, compile_with_plugin, gpu_ms, held_bytes, parse_args, pick, pick_impls, write_table

SHAPES = [(8, 5120, 2048, 4), (4, 2048, 8192, 4), (16, 1536, 1024, 4), (8, 5120, 2048, 2)]


def eager_pattern(x, w, b):
    """The Mamba-style short conv as users write it: pad left, depthwise conv, SiLU."""
    K = w.shape[-1]
    return F.silu(F.conv1d(F.pad(x, (K - 1, 0)), w, b, groups=x.shape[1]))


def copy_bandwidth() -> float:
    """Device-to-device copy, bytes read + written per second (GB/s)."""
    src = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    return 2 * src.numel() / ms / 1e6


def make_inputs(B, C, L, K, channel_last, requires_grad):
    dtype = torch.bfloat16
    if channel_last:
        x = torch.randn(B, L, C, device="cuda", dtype=dtype).transpose(1, 2)
    else:
        x = torch.randn(B, C, L, device="cuda", dtype=dtype)
    w = torch.randn(C, 1, K, device="cuda", dtype=dtype) / K
    b = torch.randn(C, device="cuda", dtype=dtype)
    return [t.requires_grad_(requires_grad) for t in (x, w, b)]


def implementations():
    impls = {
        "ours-op": lambda x, w, b: inductor_conv.causal_conv1d(x, w, b, activation="silu"),
        "ours-compiled": "compiled-on",
        "inductor": "compiled-off",
    }
    with contextlib.suppress(Exception):
        from fla.modules.causal_conv1d import causal_conv1d as fla_conv

        impls["fla"] = lambda x, w, b: fla_conv(
            x.transpose(1, 2), w.squeeze(1), b, activation="silu", backend="triton"
        )[0].transpose(1, 2)
    with contextlib.suppress(Exception):
        from causal_conv1d import causal_conv1d_fn

        impls["dao"] = lambda x, w, b: causal_conv1d_fn(x, w.squeeze(1), b, activation="silu")
    return impls


def measure(fn, shape, channel_last):
    B, C, L, K = shape
    x, w, b = make_inputs(B, C, L, K, channel_last, requires_grad=False)
    fwd_ms = bench(lambda: fn(x, w, b))
    fwd_gpu_ms = gpu_ms(lambda: fn(x, w, b))
    xg, wg, bg = make_inputs(B, C, L, K, channel_last, requires_grad=True)
    # dy in the layout this implementation returns y (the gradient a next layer would send): contiguous for eager
    # conv1d and for a compiled graph's output (Note [conv output layout]), x's layout for the public op
    dy = torch.randn_like(fn(xg, wg, bg))

    def fwd_bwd():
        y = fn(xg, wg, bg)
        torch.autograd.grad(y, (xg, wg, bg), dy)

    fb_ms = bench(fwd_bwd)
    fb_gpu_ms = gpu_ms(fwd_bwd)
    held = held_bytes(lambda: fn(xg, wg, bg))
    return fwd_ms, fwd_gpu_ms, fb_ms, fb_gpu_ms, held


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    copy_gbs = copy_bandwidth()
    lines = [
        f"# conv benchmark {datetime.date.today()} on {torch.cuda.get_device_name()}, torch {torch.__version__}",
        f"device copy: {copy_gbs:.0f} GB/s (read + write)",
        "",
        "| B C L K | layout | impl | fwd ms | fwd GB/s | % copy | fwd GPU ms | GPU % copy | fwd+bwd ms "
        "| fwd+bwd GPU ms | GPU × floor (5·|x|) | held after fwd |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    shapes = pick(SHAPES, args)
    wanted = pick_impls(implementations(), args)
    rewrites = {}
    with fx_graph_cache_disabled():
        for shape in shapes:
            B, C, L, K = shape
            x_bytes = B * C * L * 2
            for channel_last in (False, True):
                for name, fn in implementations().items():
                    if name not in wanted:
                        continue
                    if isinstance(fn, str):
                        fn = compile_with_plugin(eager_pattern, plugin=fn == "compiled-on")
                    try:
                        fwd_ms, fwd_gpu_ms, fb_ms, fb_gpu_ms, held = measure(fn, shape, channel_last)
                    except Exception as e:  # an anchor failing must not hide the others
                        inductor_conv.disable()
                        layout = "CL" if channel_last else "BCL"
                        print(f"| {shape} | {layout} | {name} | failed: {type(e).__name__}: {e} |")
                        continue
                    if name == "ours-compiled":
                        rewrites[(shape, channel_last)] = inductor_conv.counters()["causal_conv1d"]
                    inductor_conv.disable()  # every other implementation compiles (if at all) without our pass
                    gbs = 2 * x_bytes / fwd_ms / 1e6
                    floor_ms = 5 * x_bytes / copy_gbs / 1e6
                    line = (
                        f"| {B} {C} {L} {K} | {'channel-last' if channel_last else '(B,C,L)'} | {name} | "
                        f"{fwd_ms:.3f} | {gbs:.0f} | {100 * gbs / copy_gbs:.0f}% | {fwd_gpu_ms:.3f} | "
                        f"{100 * 2 * x_bytes / fwd_gpu_ms / 1e6 / copy_gbs:.0f}% | {fb_ms:.3f} | {fb_gpu_ms:.3f} | "
                        f"{fb_gpu_ms / floor_ms:.2f} | {held / x_bytes:.2f}·|x| |"
                    )
                    lines.append(line)
                    print(line, flush=True)
    inductor_conv.disable()
    lines.append("")
    lines.append(f"rewrites by ours-compiled (one per compiled graph: inference + training = 2 per case): {rewrites}")
    print(lines[-1])
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
