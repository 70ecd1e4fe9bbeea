"""Host time against GPU time of the cuDNN route (Note [cuDNN route] in inductor_conv/heuristics/attention.py) in
compiled graphs: plain attention (no mask, p 0, not causal: ViT's and BERT's without padding) compiled by default
Inductor, with the plugin (cuDNN's fused kernels), and with the plugin and config.attention_cudnn off (our
templates), forward+backward: wall ms (do_bench), host ms to issue one call (overhead.host_ms), GPU ms (profiler).

    python benchmarks/diagnostics/cudnn_host.py

cuDNN's call looks its graph up in a cache on the host each time; where one call's GPU time is below that host time
and the step is host-bound (small encoders), the route can cost wall time that its faster kernels do not repay. The
cuDNN variant takes the route at every head dim (the compiled route's floor, CUDNN_COMPILED_MIN_HEAD_DIM, lowered):
this is the comparison that set the floor.
"""
from __future__ import annotations

import os
import sys
from unittest import mock

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from inductor_conv.heuristics import attention as heuristics  # noqa: E402
from common import bench, compile_with_plugin, config_patch, step_kernel_ms  # noqa: E402

from overhead import host_ms  # noqa: E402

# (B, H, S, D): ViT-B/16 at 224 x 224, BERT-base at S 512, a mid size, the op benchmark's large one
SHAPES = [(64, 12, 197, 64), (16, 12, 512, 64), (8, 16, 1024, 64), (4, 16, 2048, 128)]
VARIANTS = {"default Inductor": (False, {}), "plugin, cuDNN": (True, {}),
            "plugin, templates": (True, {"attention_cudnn": False})}


def attention(q, k, v):
    """ViT's / BERT's eager attention between the projections (no mask, p 0)."""
    scores = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def main():
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}\n")
    print("| B H S D | variant | fwd+bwd wall ms | host ms | GPU ms | rewrites |")
    print("|---|---|---|---|---|---|")
    for B, H, S, D in SHAPES:
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
                   for _ in range(3))
        do = torch.randn_like(q)
        for name, (plugin, overrides) in VARIANTS.items():
            # cuDNN at every head dim here, below the compiled route's floor too: the comparison that set the floor
            with config_patch(overrides), mock.patch.object(heuristics, "CUDNN_COMPILED_MIN_HEAD_DIM", 8):
                fn = compile_with_plugin(attention, plugin)
                call = lambda: torch.autograd.grad(fn(q, k, v), (q, k, v), do)  # noqa: E731
                call()
                wall, host = bench(call), host_ms(call)
                gpu = step_kernel_ms(call)[0]
            print(f"| {B} {H} {S} {D} | {name} | {wall:.3f} | {host:.3f} | {gpu:.3f} | "
                  f"{inductor_conv.counters()['attention'] if plugin else '-'} |", flush=True)
    inductor_conv.disable()


if __name__ == "__main__":
    main()
