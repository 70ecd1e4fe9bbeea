"""The demo behind ``python -m inductor_conv demo``.

A small Mamba/Llama-style block written in plain eager PyTorch — in_proj Linear, causal depthwise ``nn.Conv1d``
sliced back to length L, SiLU, then hand-written causal attention — compiled by Inductor with inductor_conv
enabled. Prints which patterns were rewritten, the max error against eager (forward and gradients), and on GPU the
time and peak memory against the same model compiled with the plugin disabled.
"""
from __future__ import annotations

import math
import time

import torch
import torch.nn.functional as F
from torch import nn

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled


class ShortConvAttentionBlock(nn.Module):
    def __init__(self, dim: int, heads: int, width: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.in_proj = nn.Linear(dim, dim)
        self.conv = nn.Conv1d(dim, dim, width, groups=dim, padding=width - 1)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):  # x (B, L, dim)
        B, L, dim = x.shape
        h = self.in_proj(x).transpose(1, 2)  # (B, dim, L): a transposed view of the Linear output
        h = F.silu(self.conv(h)[..., :L]).transpose(1, 2)  # causal depthwise conv + SiLU
        q, k, v = self.qkv(h).view(B, L, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ v
        return self.out(attn.transpose(1, 2).reshape(B, L, dim)) + x


def _timed(fn, device, iters, rounds=7, warmup=5):
    """(median ms per call over `rounds` rounds of `iters` calls, peak MiB): a few warm-up calls first (lazy kernel
    and cuDNN plan builds), and the median, because a ~2 ms step is bound by CPU time that varies between rounds."""
    if device != "cuda":
        return float("nan"), float("nan")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / iters * 1e3)
    return sorted(times)[rounds // 2], torch.cuda.max_memory_allocated() / 2**20


def kernel_times(fn, iters: int = 10) -> list[tuple[str, float, int]]:
    """(kernel name, GPU µs per call, launches per call) of every kernel fn launches, longest first (torch.profiler,
    device self time), after one warm-up call."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows = [(e.key, e.self_device_time_total / iters, e.count // iters) for e in prof.key_averages()
            if e.self_device_time_total > 0]
    return sorted(rows, key=lambda r: -r[1])


def gpu_ms(fn, iters: int = 10) -> float:
    """Milliseconds of GPU kernel time per call of fn, every kernel it launches summed: what a CPU-bound wall time
    hides (benchmarks/common.py uses it too)."""
    return sum(us for _, us, _ in kernel_times(fn, iters)) / 1e3


def run_demo(device: str) -> int:
    torch.manual_seed(0)
    if device == "cuda":
        B, L, dim, heads, dtype, iters = 8, 1024, 1024, 8, torch.bfloat16, 20
    else:
        B, L, dim, heads, dtype, iters = 2, 16, 32, 2, torch.float32, 1
    model = ShortConvAttentionBlock(dim, heads).to(device=device, dtype=dtype)
    x = torch.randn(B, L, dim, device=device, dtype=dtype, requires_grad=True)

    def step(m):
        x.grad = None
        for p in model.parameters():
            p.grad = None
        y = m(x)
        y.float().square().mean().backward()
        return y.detach(), x.grad.detach(), model.conv.weight.grad.detach()

    eager = step(model)
    results = {}
    for label, on in (("inductor_conv", True), ("plain Inductor", False)):
        torch._dynamo.reset()
        inductor_conv.reset_counters()
        with fx_graph_cache_disabled():
            if on:
                inductor_conv.enable(device_types=(device,))
            compiled = torch.compile(model)
            out = step(compiled)
            inductor_conv.disable()
        ms, mib = _timed(lambda: step(compiled), device, iters)
        gpu = gpu_ms(lambda: step(compiled), iters) if device == "cuda" else float("nan")
        results[label] = (out, dict(inductor_conv.counters()), ms, gpu, mib)

    out, counts, *_ = results["inductor_conv"]
    print(f"device: {device}, dtype: {dtype}, B={B} L={L} dim={dim} heads={heads}")
    print(f"patterns rewritten: {counts}")
    for name, a, b in zip(("output", "dx", "dconv_weight"), out, eager):
        err = (a.float() - b.float()).abs().max().item()
        print(f"max |compiled - eager| {name}: {err:.3e}")
    if device == "cuda":
        for label, (_, _, t, g, m) in results.items():
            print(f"{label:>15}: {t:7.3f} ms / training step (wall; GPU kernels {g:6.3f} ms), "
                  f"peak memory {m:8.1f} MiB")
    ok = counts["causal_conv1d"] >= 1 and counts["attention"] >= 1
    print("OK" if ok else "FAILED: a pattern was not rewritten")
    return 0 if ok else 1
