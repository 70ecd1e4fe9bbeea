"""The eager attention kernels per configuration (Note [one kernel per configuration] in kernels/attention.py):
their kernel time at fixed shapes, and the first call of each new sequence length beside SDPA's first call there.

    python benchmarks/diagnostics/eager_shapes.py [--lengths 20] [--specialise]

Run from a tree that still has per-shape kernels (config.eager_static_shapes), it times both kinds for comparison.
--specialise: also the steady-state times with the forward and backward kernels compiled without do_not_specialize,
so that Triton specialises the sequence lengths as it does other ints (divisible by 16 or not): what the
lengths' divisibility is worth to the compiled code, at one more compile per configuration at most.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from inductor_conv.kernels import attention as ka  # noqa: E402

from common import bench  # noqa: E402

CASES = [  # B, Hq, Hkv, S, D, causal, p
    (4, 16, 16, 2048, 128, True, 0.1),
    (4, 16, 16, 2048, 128, False, 0.1),
    (8, 16, 16, 1024, 64, True, 0.1),
    (4, 32, 8, 2048, 128, True, 0.0),
]


def _reset_static():
    """Forget per-shape decisions (where the tree being measured has them)."""
    for name in ("_static_state", "_static_count"):
        getattr(ka, name, {}).clear()


def _label(static: int) -> str:
    if static == "specialised":
        return "lengths specialised"
    if not hasattr(ka, "_static_state"):
        return "per configuration"
    return "static" if static else "any-shape"


def _specialised():
    """Swap the launchers' forward and backward kernels for copies that Triton specialises on every int."""
    import triton

    from inductor_conv.kernels.launch import FastLaunch

    ka._FWD = FastLaunch(triton.jit(ka._attn_fwd_kernel.fn))
    ka._BWD = FastLaunch(triton.jit(ka._attn_bwd_kernel.fn))


def steady(static):
    if static == "specialised":
        _specialised()
    else:
        inductor_conv.config.eager_static_shapes = static
    _reset_static()
    for B, Hq, Hkv, S, D, causal, p in CASES:
        q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        seed = torch.tensor([1], dtype=torch.int64, device="cuda")
        out, lse = ka.attention_fwd(q, k, v, None, p, causal, None, seed)
        do = torch.randn_like(out)
        fwd = bench(lambda: ka.attention_fwd(q, k, v, None, p, causal, None, seed))
        bwd = bench(lambda: ka.attention_bwd(do, q, k, v, None, out, lse, p, causal, None, seed, mask_grad=False))
        print(f"| {_label(static)} | B{B} H{Hq}/{Hkv} S{S} D{D} causal={causal} p={p} | "
              f"{fwd:.3f} | {bwd:.3f} |", flush=True)


def first_calls(static: int, lengths: int):
    """First fwd+bwd call of each of `lengths` new sequence lengths (B2 H8 D64 causal bf16), ms: ours, then SDPA."""
    inductor_conv.config.eager_static_shapes = static
    _reset_static()
    ours, sdpa = [], []
    for i in range(lengths):
        S = 300 + 37 * i
        q, k, v = (torch.randn(2, 8, S, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        for fn, times in ((lambda: inductor_conv.attention(q, k, v, is_causal=True, dropout_p=0.1), ours),
                          (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1), sdpa)):
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn().sum().backward()
            torch.cuda.synchronize()
            times.append(1e3 * (time.perf_counter() - start))
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"| {_label(static)} | first fwd+bwd of {lengths} new lengths: ours median "
          f"{med(ours):.1f} ms, total {sum(ours):.0f} ms (first {ours[0]:.0f}); SDPA median {med(sdpa):.1f} ms, "
          f"total {sum(sdpa):.0f} ms |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, default=20)
    parser.add_argument("--specialise", action="store_true")
    args = parser.parse_args()
    print(f"# eager kernels per shape or not, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| kernels | case | fwd ms | bwd ms |\n|---|---|---|---|", flush=True)
    # a tree without per-shape kernels (Note [one kernel per configuration]) ignores eager_static_shapes: run once
    modes = (1, 0) if hasattr(ka, "_static_state") else (0,)
    for static in modes:
        steady(static)
    for static in reversed(modes):
        first_calls(static, args.lengths)
    if args.specialise:
        steady("specialised")


if __name__ == "__main__":
    main()
