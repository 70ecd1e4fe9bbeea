"""Host time of the eager ops' autograd: a Python torch.autograd.Function against a C++ autograd node that calls
the same Python backward (backward_node.cpp beside this script, built with torch.utils.cpp_extension), both around
the same launchers, beside the public ops, SDPA and their forwards alone, at overhead.py's tiny shapes (host-bound).
Rows are measured in a shuffled order over 9 rounds (median, min, max): the lent machine's host speed drifts.

    python benchmarks/diagnostics/cpp_node_host.py
"""
from __future__ import annotations

import os
import random
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.cpp_extension import load

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from inductor_conv.kernels import attention as ka  # noqa: E402
from inductor_conv.kernels import causal_conv1d as kc  # noqa: E402

from overhead import _Identity, host_ms  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "backward_node.cpp")


def line(name, fn):
    print(f"{name:70s} {1e3 * host_ms(fn):8.1f} us", flush=True)


def main():
    t = time.perf_counter()
    node = load(name="ic_backward_node", sources=[SOURCE], extra_cflags=["-O2"],
                extra_include_paths=[os.path.join(os.path.dirname(SOURCE), "..", "..", "inductor_conv", "csrc")])
    print(f"# build {time.perf_counter() - t:.1f} s; {torch.cuda.get_device_name()}, torch {torch.__version__}")
    dev, bf16 = "cuda", torch.bfloat16
    x8 = torch.randn(8, device=dev, requires_grad=True)
    g8 = torch.ones_like(x8)

    def ident(x):
        with torch.no_grad():
            y = x.view_as(x)
        node.attach(y, [x], [], lambda g, out: (g,))
        return y

    def ident_cpp(x):
        with torch.no_grad():
            y = x.view_as(x)
        node.attach_identity(y, x)
        return y

    for threads in (True, False):
        with torch.autograd.set_multithreading_enabled(threads):
            tag = "" if threads else ", device threads off"
            line("floor: C++ node, C++ backward" + tag, lambda: torch.autograd.grad(ident_cpp(x8), (x8,), g8))
            line("floor: Python identity Function" + tag, lambda: torch.autograd.grad(_Identity.apply(x8), (x8,), g8))
            line("floor: C++ node, Python backward" + tag, lambda: torch.autograd.grad(ident(x8), (x8,), g8))

    q, k, v = (torch.randn(1, 8, 256, 64, device=dev, dtype=bf16, requires_grad=True) for _ in range(3))
    do = torch.randn_like(q)

    def attn_bwd(dout, q, k, v, seed, lse, rows, flags, out):
        dq, dk, dv, _ = ka.launch_bwd(dout, q, k, v, None, out, lse, 0.1, True, 0.125, seed, False, 0.0,
                                      rows=rows, flags=flags)
        return dq, dk, dv

    def attn_node():
        seed = torch.randint(0, 2 ** 62, (1,), device=dev)
        out, lse, rows, flags = ka.launch_fwd_rows(q, k, v, None, 0.1, True, 0.125, seed, 0.0)
        node.attach(out, [q, k, v], [q, k, v, seed, lse, rows, flags], attn_bwd)
        return out

    op = lambda: inductor_conv.attention(q, k, v, is_causal=True, dropout_p=0.1)  # noqa: E731
    sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.1)  # noqa: E731
    x = torch.randn(1, 256, 2048, device=dev, dtype=bf16).transpose(1, 2).requires_grad_()
    w = torch.randn(2048, 4, device=dev, requires_grad=True)
    b = torch.randn(2048, device=dev, requires_grad=True)
    dy = torch.randn_like(x)

    def conv_bwd(dy, x, w, b, y):
        dx, dw, db, _ = kc.launch_bwd(x, w, b, None, None, dy, "silu", inductor_conv.config.deterministic)
        return dx, dw, db

    def conv_node():
        y = kc.launch_fwd(x, w, b, None, None, "silu")
        node.attach(y, [x, w, b], [x, w, b], conv_bwd)
        return y

    conv = lambda: inductor_conv.causal_conv1d(x, w, b, activation="silu")  # noqa: E731
    from inductor_conv.ops.attention import _eager_attention
    from inductor_conv.ops.causal_conv1d import _eager_causal_conv1d

    def attn_fn():
        seed = torch.randint(0, 2 ** 62, (1,), device=dev)
        return _eager_attention(q, k, v, None, 0.1, True, 0.125, seed, 0.0)

    rows = [
        ("attention B1 H8 S256 D64 causal p 0.1: op", lambda: torch.autograd.grad(op(), (q, k, v), do)),
        ("attention: Python Function on the launchers", lambda: torch.autograd.grad(attn_fn(), (q, k, v), do)),
        ("attention: C++ node on the launchers", lambda: torch.autograd.grad(attn_node(), (q, k, v), do)),
        ("attention: SDPA", lambda: torch.autograd.grad(sdpa(), (q, k, v), do)),
        ("conv B1 C2048 L256 + SiLU: op", lambda: torch.autograd.grad(conv(), (x, w, b), dy)),
        ("conv: Python Function on the launchers", lambda: torch.autograd.grad(
            _eager_causal_conv1d(x, w, b, None, None, "silu"), (x, w, b), dy)),
        ("conv: C++ node on the launchers", lambda: torch.autograd.grad(conv_node(), (x, w, b), dy)),
    ]
    with torch.no_grad():
        rows += [
            ("attention forward, no grad: op", op),
            ("attention forward, no grad: launchers", lambda: ka.launch_fwd(
                q, k, v, None, 0.1, True, 0.125, torch.randint(0, 2 ** 62, (1,), device=dev))),
            ("attention forward, no grad: SDPA", sdpa),
            ("conv forward, no grad: op", conv),
            ("conv forward, no grad: launcher", lambda: kc.launch_fwd(x, w, b, None, None, "silu")),
        ]
    rows.append(("floor: Python identity Function", lambda: torch.autograd.grad(_Identity.apply(x8), (x8,), g8)))
    results = {name: [] for name, _ in rows}
    rng = random.Random(0)
    for _ in range(9):  # rounds in a shuffled order: the lent machine's host speed drifts
        order = list(rows)
        rng.shuffle(order)
        for name, fn in order:
            grad = not name.startswith(("attention forward", "conv forward"))
            with torch.set_grad_enabled(grad):
                results[name].append(1e3 * host_ms(fn))
    for name, _ in rows:
        vals = sorted(results[name])
        print(f"{name:60s} median {vals[len(vals) // 2]:7.1f} us  (min {vals[0]:6.1f}, max {vals[-1]:6.1f})")

if __name__ == "__main__":
    main()
