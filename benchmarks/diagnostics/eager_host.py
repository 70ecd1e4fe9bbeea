"""Where an eager forward+backward's host time goes: the host milliseconds (overhead.py's host_ms) of the public ops
called through autograd beside their launchers called directly on the calling thread, the autograd floor with and
without autograd's device threads, and the pieces a call is made of (allocations, the dropout seed).

    python benchmarks/diagnostics/eager_host.py

One line per measurement; the shapes are overhead.py's tiny ones (attention B1 H8 S256 D64 causal p 0.1, conv
B1 C2048 L256 K4 + SiLU, both bf16), where the GPU work is a few microseconds and every call is host-bound.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from inductor_conv.kernels import attention as ka  # noqa: E402
from inductor_conv.kernels import causal_conv1d as kc  # noqa: E402

from overhead import _Identity, host_ms  # noqa: E402


def line(name, fn):
    print(f"{name:70s} {1e3 * host_ms(fn):8.1f} us", flush=True)


def main():
    print(f"# eager host time, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    dev, bf16 = "cuda", torch.bfloat16
    x8 = torch.randn(8, device=dev, requires_grad=True)
    g8 = torch.ones_like(x8)
    line("floor: identity Function + autograd.grad", lambda: torch.autograd.grad(_Identity.apply(x8), (x8,), g8))
    with torch.autograd.set_multithreading_enabled(False):
        line("floor, autograd's device threads off", lambda: torch.autograd.grad(_Identity.apply(x8), (x8,), g8))
    line("torch.empty (1 MB)", lambda: torch.empty(1 << 19, device=dev, dtype=bf16))
    line("torch.randint seed", lambda: torch.randint(0, 2 ** 62, (1,), device=dev))

    q, k, v = (torch.randn(1, 8, 256, 64, device=dev, dtype=bf16, requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    seed = torch.randint(0, 2 ** 62, (1,), device=dev)
    op = lambda: inductor_conv.attention(q, k, v, is_causal=True, dropout_p=0.1)  # noqa: E731
    with torch.no_grad():
        line("attention op forward (no grad)", op)
        out, lse = ka.launch_fwd(q, k, v, None, 0.1, True, 0.125, seed)
        line("attention launch_fwd", lambda: ka.launch_fwd(q, k, v, None, 0.1, True, 0.125, seed))
        line("attention launch_bwd", lambda: ka.launch_bwd(do, q, k, v, None, out, lse, 0.1, True, 0.125, seed, False))
    line("attention op forward+backward (autograd.grad)", lambda: torch.autograd.grad(op(), (q, k, v), do))
    with torch.autograd.set_multithreading_enabled(False):
        line("attention op forward+backward, device threads off", lambda: torch.autograd.grad(op(), (q, k, v), do))
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1)  # noqa: E731
    line("SDPA forward+backward (autograd.grad)", lambda: torch.autograd.grad(sdpa(), (q, k, v), do))

    x = torch.randn(1, 256, 2048, device=dev, dtype=bf16).transpose(1, 2).requires_grad_()
    w = torch.randn(2048, 4, device=dev, requires_grad=True)
    b = torch.randn(2048, device=dev, requires_grad=True)
    dy = torch.randn_like(x)
    conv = lambda: inductor_conv.causal_conv1d(x, w, b, activation="silu")  # noqa: E731
    with torch.no_grad():
        line("conv op forward (no grad)", conv)
        line("conv launch_fwd", lambda: kc.launch_fwd(x, w, b, None, None, "silu"))
        line("conv launch_bwd", lambda: kc.launch_bwd(x, w, b, None, None, dy, "silu"))
    line("conv op forward+backward (autograd.grad)", lambda: torch.autograd.grad(conv(), (x, w, b), dy))
    with torch.autograd.set_multithreading_enabled(False):
        line("conv op forward+backward, device threads off", lambda: torch.autograd.grad(conv(), (x, w, b), dy))


if __name__ == "__main__":
    main()
