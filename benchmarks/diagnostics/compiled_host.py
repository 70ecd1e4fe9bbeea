"""Host time of a compiled attention forward+backward with the mask as a graph input against the same call built
causal in the graph (benchmarks/attention_masks.py's hf_attention), and where the masked call's host time goes: a
cProfile of its steady-state calls, top functions by own time; the masked call with the mask summary's kernels
launched from the graph (the default) and with the summary op as a fallback kernel (config.attention_summary_in_graph).

    python benchmarks/diagnostics/compiled_host.py
"""
from __future__ import annotations

import cProfile
import os
import pstats
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from attention_masks import additive, hf_attention  # noqa: E402
from common import compile_with_plugin  # noqa: E402

from overhead import host_ms  # noqa: E402

SHAPES = [(1, 8, 8, 256, 64), (4, 16, 8, 2048, 128)]


def main():
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for B, Hq, Hkv, S, D in SHAPES:
        q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        do = torch.randn_like(q)
        allowed = torch.ones(S, S, dtype=torch.bool, device="cuda").tril()[None, None].expand(B, 1, S, S)
        mask = additive(allowed, torch.bfloat16).contiguous()
        for p in (0.0, 0.1):
            causal = compile_with_plugin(lambda q, k, v: hf_attention(q, k, v, None, p), plugin=True)
            fc = lambda: torch.autograd.grad(causal(q, k, v), (q, k, v), do)  # noqa: E731
            t_causal = host_ms(fc)
            counts_c = dict(inductor_conv.counters())
            # the summary's kernels launched from the graph (Note [summary kernels in the graph]), then the summary
            # op as a fallback kernel
            t_masked = {}
            for in_graph in (False, True):
                inductor_conv.config.attention_summary_in_graph = in_graph
                masked = compile_with_plugin(lambda q, k, v, m: hf_attention(q, k, v, m, p), plugin=True)
                fm = lambda: torch.autograd.grad(masked(q, k, v, mask), (q, k, v), do)  # noqa: E731
                t_masked[in_graph] = host_ms(fm)
                counts_m = dict(inductor_conv.counters())
            with torch.no_grad():
                t_summary = host_ms(lambda: torch.ops.inductor_conv.attention_mask_summary(
                    mask.expand(B, Hq, S, S), True))
            print(f"B{B} H{Hq}/{Hkv} S{S} D{D} p {p}: host us per fwd+bwd: causal {1e3 * t_causal:.1f}, "
                  f"mask input {1e3 * t_masked[True]:.1f} (summary op as a fallback kernel: "
                  f"{1e3 * t_masked[False]:.1f}); one summary op call (rows+cols) {1e3 * t_summary:.1f}; "
                  f"counters causal {counts_c} masked {counts_m}", flush=True)
            if (B, p) == (1, 0.1):
                for name, fn in (("mask input", fm), ("causal", fc)):
                    prof = cProfile.Profile()
                    prof.enable()
                    for _ in range(50):
                        fn()
                    prof.disable()
                    torch.cuda.synchronize()
                    print(f"## cProfile, {name}, 50 calls")
                    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
