"""The eager op's plain causal attention (p 0, no mask or cap: Note [cuDNN route]) against SDPA's own backends, per
shape: host us per call (no grad / forward with grad / forward+backward), and GPU ms of a forward+backward.

    python benchmarks/diagnostics/cudnn_eager_host.py [--calls 100]

Rows: inductor_conv.attention; F.scaled_dot_product_attention as it dispatches (its choice printed: torch's
_fused_sdp_choice); SDPA restricted to its cuDNN backend and to its flash backend.  Host times are means of
back-to-back calls without synchronisation (overhead.py's host_ms); GPU time is triton's do_bench (CUDA events).
"""
from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from common import bench  # noqa: E402
from overhead import host_ms  # noqa: E402

SHAPES = [(1, 8, 256, 64), (8, 16, 1024, 64), (4, 16, 2048, 64), (4, 16, 2048, 128), (2, 16, 4096, 128)]
_BACKENDS = {int(b): name for name, b in SDPBackend.__members__.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; host us: no grad / forward with grad / "
          "forward+backward; wall ms of a forward+backward")
    print("| B H S D | impl | no grad | fwd with grad | fwd+bwd | fwd+bwd wall ms |")
    print("|---|---|---|---|---|---|")
    for B, H, S, D in SHAPES:
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        do = torch.randn_like(q)
        choice = _BACKENDS.get(int(torch._fused_sdp_choice(q, k, v, is_causal=True)), "?")
        impls = [("ours", lambda: inductor_conv.attention(q, k, v, is_causal=True), None),
                 (f"SDPA ({choice})", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), None),
                 ("SDPA cuDNN", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  SDPBackend.CUDNN_ATTENTION),
                 ("SDPA flash", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  SDPBackend.FLASH_ATTENTION)]
        for name, fn, backend in impls:
            def fwd_bwd(fn=fn):
                return torch.autograd.grad(fn(), (q, k, v), do)

            with sdpa_kernel(backend) if backend is not None else _null():
                try:
                    with torch.no_grad():
                        nograd = host_ms(fn, calls=args.calls // 4, rounds=5)
                    fwd = host_ms(fn, calls=args.calls // 4, rounds=5)
                    both = host_ms(fwd_bwd, calls=args.calls // 4, rounds=5)
                    wall = bench(fwd_bwd)
                except RuntimeError as e:
                    print(f"| {B} {H} {S} {D} | {name} | failed: {str(e).splitlines()[0][:80]} | | | |")
                    continue
            print(f"| {B} {H} {S} {D} | {name} | {1e3 * nograd:.1f} | {1e3 * fwd:.1f} | {1e3 * both:.1f} | "
                  f"{wall:.3f} |", flush=True)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
