"""Dropout cost of the eager flash kernels on one GPU.

Run from the repo root: PYTHONPATH=$PWD python3 benchmarks/diagnostics/attention_kernels.py [--quick] [--no-sdpa]

B4 H16 S2048 D128 bf16, causal False / True, p in (0, 0.1): kernels.attention.attention_fwd and attention_fwd +
attention_bwd timed with triton.testing.do_bench (median ms), against SDPA's flash backend with the same dropout.
TFLOP/s: forward 4·B·H·S²·D (half for causal), forward+backward 3.5x that.  Then two checks against float64 math
with the kernels' own dropout mask (reference/attention_dropout.py): the forward output at the benchmark shape on two
(b, h) slices, and output + gradients at a smaller shape.  Options: --quick (fewer reps), --no-sdpa.
"""
import math
import os
import sys
import time

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: common

from inductor_conv.kernels.attention import attention_bwd, attention_fwd  # noqa: E402
from inductor_conv.reference.attention import attention_ref  # noqa: E402
from inductor_conv.reference.attention_dropout import dropout_keep_mask  # noqa: E402

from common import attention_tflops  # noqa: E402

B, H, S, D = 4, 16, 2048, 128
DTYPE = torch.bfloat16
QUICK = "--quick" in sys.argv
REP = dict(warmup=10, rep=30, return_mode="median") if QUICK else dict(warmup=25, rep=100, return_mode="median")


def tflops(ms, causal, bwd):
    return attention_tflops(ms, B, H, S, D, causal, backward=bwd)


def bench_ours(q, k, v, do, p, causal, seed):
    fwd = lambda: attention_fwd(q, k, v, None, p, causal, None, seed)  # noqa: E731

    def fwd_bwd():
        out, lse = attention_fwd(q, k, v, None, p, causal, None, seed)
        return attention_bwd(do, q, k, v, None, out, lse, p, causal, None, seed, mask_grad=False)

    return triton.testing.do_bench(fwd, **REP), triton.testing.do_bench(fwd_bwd, **REP)


def bench_sdpa(q, k, v, do, p, causal):
    qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        sdpa = torch.nn.functional.scaled_dot_product_attention
        fwd = lambda: sdpa(q, k, v, dropout_p=p, is_causal=causal)  # noqa: E731

        def fwd_bwd():
            sdpa(qg, kg, vg, dropout_p=p, is_causal=causal).backward(do)

        return (triton.testing.do_bench(fwd, **REP),
                triton.testing.do_bench(fwd_bwd, grad_to_none=[qg, kg, vg], **REP))


def check_big_forward(q, k, v, p, causal, seed):
    """Forward output at the benchmark shape, on the (b, h) slices (0, 0) and (B-1, H-1), vs float64 math."""
    out, _ = attention_fwd(q, k, v, None, p, causal, None, seed)
    keep = dropout_keep_mask(seed, B, H, S, S, p)
    frac = keep.float().mean().item()
    err = 0.0
    for b, h in ((0, 0), (B - 1, H - 1)):
        sl = (slice(b, b + 1), slice(h, h + 1))
        ref = attention_ref(q[sl].double(), k[sl].double(), v[sl].double(), dropout_mask=keep[sl], dropout_p=p,
                            is_causal=causal)
        err = max(err, (out[sl].double() - ref).abs().max().item())
    return err, frac


def check_small_grads(p, causal, seed):
    """Output and dq/dk/dv at B1 H2 S512 D128 bf16 (the benchmark's kernels: same tiles and specialisations) vs
    autograd through float64 math (ragged ends are covered by the CPU tests)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v, do = (torch.randn(1, 2, 512, D, device="cuda", generator=g).to(DTYPE) for _ in range(4))
    out, lse = attention_fwd(q, k, v, None, p, causal, None, seed)
    dq, dk, dv, _ = attention_bwd(do, q, k, v, None, out, lse, p, causal, None, seed, mask_grad=False)
    keep = dropout_keep_mask(seed, 1, 2, q.shape[2], k.shape[2], p)
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    ref = attention_ref(*leaves, dropout_mask=keep, dropout_p=p, is_causal=causal)
    grads = torch.autograd.grad(ref, leaves, do.double())
    errs = {"out": (out.double() - ref).abs().max().item()}
    for name, a, r in zip(("dq", "dk", "dv"), (dq, dk, dv), grads):
        errs[name] = (a.double() - r).abs().max().item() / max(r.abs().max().item(), 1e-30)
    return errs


def main():
    t0 = time.time()
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=DTYPE) for _ in range(4))
    seed = torch.tensor([1234567], dtype=torch.int64, device="cuda")
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}  "
          f"B{B} H{H} S{S} D{D} bf16", flush=True)
    print(f"{'causal':>6} {'p':>4} | {'ours fwd':>9} {'ours f+b':>9} | {'sdpa fwd':>9} {'sdpa f+b':>9} | "
          f"{'fwd x':>6} {'f+b x':>6}   (TFLOP/s; x = ours / SDPA flash)", flush=True)
    for causal in (False, True):
        for p in (0.0, 0.1):
            f_ms, fb_ms = bench_ours(q, k, v, do, p, causal, seed)
            ours = (tflops(f_ms, causal, False), tflops(fb_ms, causal, True))
            if "--no-sdpa" in sys.argv:
                sdpa = (math.nan, math.nan)
            else:
                sf_ms, sfb_ms = bench_sdpa(q, k, v, do, p, causal)
                sdpa = (tflops(sf_ms, causal, False), tflops(sfb_ms, causal, True))
            print(f"{causal!s:>6} {p:>4} | {ours[0]:9.1f} {ours[1]:9.1f} | {sdpa[0]:9.1f} {sdpa[1]:9.1f} | "
                  f"{ours[0] / sdpa[0]:6.2f} {ours[1] / sdpa[1]:6.2f}   [{time.time() - t0:.0f} s]", flush=True)
    for causal in (False, True):
        err, frac = check_big_forward(q, k, v, 0.1, causal, seed)
        # bf16 output: one rounding (2^-9 relative) of |O| <~ 1 after 1/(1-p) scaling, plus bf16 P in the PV product
        print(f"check fwd B{B} H{H} S{S} causal={causal} p=0.1: max|out - ref64| = {err:.2e} (bf16: expect <~2e-2), "
              f"keep fraction {frac:.5f} (expect 0.9 +- 1e-4)", flush=True)
        errs = check_small_grads(0.1, causal, seed)
        print(f"check fwd+bwd B1 H2 S512 causal={causal} p=0.1: max|out - ref| = {errs['out']:.2e}, "
              f"max|d - ref| / max|ref|: dq {errs['dq']:.2e} dk {errs['dk']:.2e} dv {errs['dv']:.2e} "
              f"(bf16: expect <~2e-2)", flush=True)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
