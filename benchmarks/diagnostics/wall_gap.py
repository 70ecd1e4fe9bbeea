"""The eager ops' host and wall time beside SDPA's, per measure, and what each call launches.

    python benchmarks/diagnostics/wall_gap.py [--calls 200]

Rows: at overhead.py's tiny shape with dropout 0.1, the attention op (its seed drawn on the host, Note [host dropout
seed]; with it drawn on the device; with the Python backward) and SDPA, and the conv op; then, without dropout, at
each of overhead.py's attention shapes, the op (cuDNN route, Note [cuDNN route]; on our kernels) and SDPA with its
default, cuDNN and flash backends.

overhead.py reports do_bench's wall (CUDA events around each call, L2 flushed before it) beside the host time of
back-to-back calls.  For a call whose GPU work is far shorter than its host work both should agree within the flush's
length; where the wall is longer, something in the call waits for the GPU or issues work the host time does not see.
For the eager ops and SDPA (bf16, forward + ``torch.autograd.grad``) this prints, in ms per call:
  host        back-to-back calls, no synchronisation (overhead.py's host column)
  loop        N back-to-back calls between two synchronisations: what a training loop's clock shows
  events      CUDA events around each call, back to back, no flush (median)
  do_bench    overhead.py's wall column (median, L2 flushed)
  latency     one call between two synchronisations (median)
then the CUDA runtime and driver calls one forward+backward makes (torch.profiler, counts per call), which shows a
synchronisation, a copy to the host or an allocation from the driver where there is one, and the kernels it runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from inductor_conv.ops import attention as ops_attention  # noqa: E402

from common import bench, config_patch  # noqa: E402
from overhead import host_ms  # noqa: E402


def loop_ms(fn, calls):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


def events_ms(fn, calls):
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    torch.cuda.synchronize()
    for a, b in pairs:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in pairs)


def latency_ms(fn, calls):
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def runtime_calls(fn, calls=5):
    """{CUDA runtime / driver call name: count per call} over `calls` calls, from torch.profiler's CPU events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    counts = {}
    for e in prof.events():
        if e.name.startswith(("cuda", "cu")) and e.device_type == torch.autograd.DeviceType.CPU:
            counts[e.name] = counts.get(e.name, 0) + 1
    return {k: v / calls for k, v in sorted(counts.items())}


def kernel_names(fn) -> str:
    """The names of the GPU kernels one call launches (torch.profiler), shortened: which backend ran."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return ", ".join(n[:40] for n in names)


def with_config(fn, **settings):
    """fn run with these inductor_conv.config settings."""
    def run():
        with config_patch(settings):
            fn()
    return run


def measure(rows, calls, rounds=2):
    print("| call | host | loop | events | do_bench | latency |\n|---|---|---|---|---|---|", flush=True)
    for _ in range(rounds):  # interleaved rounds: the lent machine's host clock drifts
        for name, fn in rows:
            for _ in range(5):
                fn()
            cols = (host_ms(fn), loop_ms(fn, calls), events_ms(fn, calls), bench(fn), latency_ms(fn, calls // 4))
            print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cols) + " |", flush=True)
    print()
    for name, fn in rows:
        print(f"{name}: {runtime_calls(fn)}\n    kernels: {kernel_names(fn)}", flush=True)
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    torch.manual_seed(0)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from inductor_conv.kernels.native import build

    build(wait=True)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; ms per forward+backward\n")

    def attention_rows(B, H, S, D, p):
        q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        do = torch.randn_like(q)

        def ours():
            torch.autograd.grad(inductor_conv.attention(q, k, v, dropout_p=p, is_causal=True), (q, k, v), do)

        def device_seed():  # the op with its seed drawn on the device (torch.randint), as before Note [host dropout seed]
            real = ops_attention.host_dropout_seed
            ops_attention.host_dropout_seed = lambda device: None
            try:
                ours()
            finally:
                ops_attention.host_dropout_seed = real

        def sdpa(backend=None):
            def run():
                if backend is None:
                    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
                else:
                    with sdpa_kernel(backend):
                        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
                torch.autograd.grad(out, (q, k, v), do)
            return run

        label = f"B{B} H{H} S{S} D{D} p{p:g}"
        if p > 0:
            return [(f"{label} ours", ours), (f"{label} ours, device seed", device_seed),
                    (f"{label} ours, Python backward", with_config(ours, native_backward=False)),
                    (f"{label} SDPA", sdpa())]
        return [(f"{label} ours (default)", ours),
                (f"{label} ours, cuDNN route", with_config(ours, attention_cudnn_eager_min_work=0)),
                (f"{label} ours, our kernels", with_config(ours, attention_cudnn=False)),
                (f"{label} SDPA", sdpa()), (f"{label} SDPA cuDNN", sdpa(SDPBackend.CUDNN_ATTENTION)),
                (f"{label} SDPA flash", sdpa(SDPBackend.FLASH_ATTENTION))]

    x = torch.randn(1, 2048, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = (torch.randn(2048, 4, device="cuda", dtype=torch.bfloat16) / 4).requires_grad_()
    b = torch.randn(2048, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(x)

    def conv():
        torch.autograd.grad(inductor_conv.causal_conv1d(x, w, b, activation="silu"), (x, w, b), dy)

    measure(attention_rows(1, 8, 256, 64, 0.1) + [("conv + SiLU B1 C2048 L256, ours", conv)], args.calls)
    for shape in ((1, 8, 256, 64), (8, 16, 1024, 64), (4, 16, 2048, 128)):
        measure(attention_rows(*shape, 0.0), args.calls, rounds=1)


if __name__ == "__main__":
    main()
