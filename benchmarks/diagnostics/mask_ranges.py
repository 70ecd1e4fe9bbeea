"""Where a mask tensor's time goes in the eager attention op: forward alone and forward+backward, and each kernel's
GPU time (torch.profiler), for is_causal=True against the same causal mask as a bool and as an additive floor tensor,
config.attention_mask_ranges off and on, with and without GQA; "host" is the host time a forward+backward call takes to
enqueue its work.

    python benchmarks/diagnostics/mask_ranges.py
"""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inductor_conv  # noqa: E402
from common import bench, config_patch, top_kernels  # noqa: E402


def host_ms(fn, n=20):
    """Host milliseconds a call takes to enqueue its work (no sync inside the loop; the queue does not fill in n
    calls)."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / n * 1e3


def main():
    B, S, D = 4, 2048, 128
    for hq, hkv in ((16, 8), (16, 16)):
        q = torch.randn(B, hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(B, hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        do = torch.randn_like(q)
        allowed = torch.ones(S, S, dtype=torch.bool, device="cuda").tril()
        masks = {"bool (B,1,S,S)": allowed.expand(B, 1, S, S), "bool (S,S)": allowed,
                 "floor bf16 (B,1,S,S)": torch.where(allowed, 0.0, torch.finfo(torch.bfloat16).min).to(
                     torch.bfloat16).expand(B, 1, S, S).contiguous()}
        cases = [("is_causal", None, False)] + [(n, m, r) for n, m in masks.items() for r in (False, True)]
        for name, mask, ranges in cases:
            with config_patch({"attention_mask_ranges": ranges}):
                def fwd():
                    with torch.no_grad():
                        inductor_conv.attention(q, k, v, attn_mask=mask, is_causal=mask is None, enable_gqa=True)

                def fwd_bwd():
                    out = inductor_conv.attention(q, k, v, attn_mask=mask, is_causal=mask is None, enable_gqa=True)
                    torch.autograd.grad(out, (q, k, v), do)

                print(f"{hq}/{hkv} {name:22s} ranges={ranges!s:5s} fwd {bench(fwd):.3f} ms  fwd+bwd "
                      f"{bench(fwd_bwd):.3f} ms (host {host_ms(fwd_bwd):.3f}) | {top_kernels(fwd_bwd)[1]}", flush=True)


if __name__ == "__main__":
    main()
