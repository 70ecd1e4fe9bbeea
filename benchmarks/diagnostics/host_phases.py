"""Where the host time of one eager forward+backward goes, phase by phase, at overhead.py's tiny shapes.

    python benchmarks/diagnostics/host_phases.py [--calls 200]

For the eager ops' autograd Functions (Note [eager fast path] in inductor_conv/ops/eager.py) it takes timestamps
around and inside each call: before the public function, on entry to and exit from Function.forward, after the
function returns, before ``torch.autograd.grad``, on entry to and exit from Function.backward (on autograd's device
thread), and after ``grad`` returns.  The means of the differences split a call's host time into: the function's
Python before forward, forward's launch work, the Function's return path (autograd's graph recording), the engine's
start (handing the work to the device thread), backward's launch work, and the engine's finish.  The same with
autograd's device threads off, and the totals of SDPA and of the autograd floor (an identity Function) beside them;
both ops' totals also with their C++ backward nodes (config.native_backward, Note [native backward]).
Each row is the mean over --calls back-to-back calls (no synchronisation inside a run), after a warm-up.
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
from inductor_conv.ops import causal_conv1d as ops_conv  # noqa: E402

from overhead import _Identity  # noqa: E402

_NOW = time.perf_counter


class _Marks:
    def __init__(self):
        self.t = {}

    def __call__(self, name):
        self.t[name] = _NOW()


MARK = _Marks()


def _instrument(cls):
    """Wrap cls.forward / cls.backward with entry and exit marks (the originals are returned for restoring)."""
    fwd, bwd = cls.forward, cls.backward

    def forward(ctx, *args):
        MARK("fwd_in")
        out = fwd(ctx, *args)
        MARK("fwd_out")
        return out

    def backward(ctx, *grads):
        MARK("bwd_in")
        out = bwd(ctx, *grads)
        MARK("bwd_out")
        return out

    cls.forward, cls.backward = staticmethod(forward), staticmethod(backward)
    return fwd, bwd


PHASES = [("python before forward", "call", "fwd_in"), ("forward's body", "fwd_in", "fwd_out"),
          ("return path (graph recording)", "fwd_out", "ret"), ("engine start", "grad", "bwd_in"),
          ("backward's body", "bwd_in", "bwd_out"), ("engine finish", "bwd_out", "done")]


def phases(call, inputs, grad_out, calls: int):
    """Mean microseconds of each phase over `calls` forward+backward calls, and of the whole call."""
    sums = {name: 0.0 for name, _, _ in PHASES}
    total = []
    for i in range(calls + 20):
        MARK("call")
        out = call()
        MARK("ret")
        MARK("grad")
        torch.autograd.grad(out, inputs, grad_out)
        MARK("done")
        if i >= 20:
            for name, a, b in PHASES:
                sums[name] += MARK.t[b] - MARK.t[a]
            total.append(MARK.t["done"] - MARK.t["call"])
    torch.cuda.synchronize()
    return {name: 1e6 * s / calls for name, s in sums.items()}, 1e6 * statistics.mean(total)


def plain(call, calls: int) -> float:
    """Mean microseconds of call() over `calls` back-to-back calls."""
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    start = _NOW()
    for _ in range(calls):
        call()
    elapsed = _NOW() - start
    torch.cuda.synchronize()
    return 1e6 * elapsed / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    dev, bf16 = "cuda", torch.bfloat16
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    q, k, v = (torch.randn(1, 8, 256, 64, device=dev, dtype=bf16, requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)
    x = torch.randn(1, 2048, 256, device=dev, dtype=bf16, requires_grad=True)
    w = torch.randn(2048, 4, device=dev, dtype=bf16, requires_grad=True)
    b = torch.randn(2048, device=dev, dtype=bf16, requires_grad=True)
    dy = torch.randn_like(x)
    x8 = torch.randn(8, device=dev, requires_grad=True)
    from inductor_conv.kernels.native import build

    native = inductor_conv.config.native_backward = build(wait=True) is not None
    print(f"# native backward extension built: {native}")
    cases = [
        ("attention B1 H8 S256 D64 causal p 0.1", ops_attention._EagerAttention,
         lambda: inductor_conv.attention(q, k, v, is_causal=True, dropout_p=0.1), (q, k, v), do),
        ("conv B1 C2048 L256 K4 + SiLU", ops_conv._EagerCausalConv1d,
         lambda: inductor_conv.causal_conv1d(x, w, b, activation="silu"), (x, w, b), dy),
        ("identity Function (autograd's floor)", _Identity, lambda: _Identity.apply(x8), (x8,), torch.ones_like(x8)),
    ]
    sdpa = [
        ("SDPA B1 H8 S256 D64 causal p 0.1", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                                                     dropout_p=0.1), (q, k, v), do),
        ("SDPA B1 H8 S256 D64 causal p 0", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
         (q, k, v), do),
        ("ours B1 H8 S256 D64 causal p 0 (its default route)", lambda: inductor_conv.attention(q, k, v, is_causal=True),
         (q, k, v), do),
    ]
    for threads in (True, False):
        torch.autograd.set_multithreading_enabled(threads)
        print(f"\n## autograd device threads {'on' if threads else 'off'}; us per call, mean of {args.calls}\n")
        print("| case | " + " | ".join(name for name, _, _ in PHASES) + " | total |")
        print("|---|" + "---|" * (len(PHASES) + 1))
        for name, cls, call, inputs, grad_out in cases:
            saved = _instrument(cls)
            inductor_conv.config.native_backward = False  # the Python Functions, instrumented
            try:
                split, total = phases(call, inputs, grad_out, args.calls)
            finally:
                cls.forward, cls.backward = (staticmethod(f) for f in saved)
                inductor_conv.config.native_backward = native
            print(f"| {name} | " + " | ".join(f"{split[p]:.1f}" for p, _, _ in PHASES) + f" | {total:.1f} |")
        for name, call, inputs, grad_out in sdpa:
            fwd_bwd = plain(lambda: torch.autograd.grad(call(), inputs, grad_out), args.calls)
            fwd = plain(call, args.calls)
            with torch.no_grad():
                nograd = plain(call, args.calls)
            print(f"| {name}: forward+backward {fwd_bwd:.1f}, forward with grad {fwd:.1f}, no grad {nograd:.1f} |")
        for (name, cls, call, inputs, grad_out), on in ((cases[0], False), (cases[0], native), (cases[1], False),
                                                           (cases[1], native)):
            inductor_conv.config.native_backward = on
            fwd_bwd = plain(lambda: torch.autograd.grad(call(), inputs, grad_out), args.calls)
            fwd = plain(call, args.calls)
            with torch.no_grad():
                nograd = plain(call, args.calls)
            node = type(call().grad_fn).__name__  # a Python Function's node has no name()
            print(f"| {name}, uninstrumented ({node}): forward+backward {fwd_bwd:.1f}, forward with grad {fwd:.1f}, "
                  f"no grad {nograd:.1f} |")
        inductor_conv.config.native_backward = native
    torch.autograd.set_multithreading_enabled(True)


if __name__ == "__main__":
    main()
