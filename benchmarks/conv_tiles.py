"""Tile sweep of the conv kernels on the GPU (how lowerings/heuristics/conv.py's numbers were found).

    PYTHONPATH=$PWD python benchmarks/conv_tiles.py      (OUT=dir for the log; SWEEP_LIMIT=seconds per table)

Times the eager launchers over the FWD / BWD tile tables below for both layouts at B8 C5120 L2048 K4 (errors against
an fp32 autograd reference), the best and default tiles on the issue's other shapes, and the two ops compiled alone
(templates) with the profiler's kernel sum. Entries: (block_c, block_t, num_warps, waves).
"""
import os, time
T0 = time.time()
import torch, triton
import torch.nn.functional as F
from triton.testing import do_bench
from inductor_conv.kernels import causal_conv1d as KM
from inductor_conv.kernels.causal_conv1d import causal_conv1d_fwd, causal_conv1d_bwd
OUT = os.environ.get("OUT", "/tmp"); LIMIT = float(os.environ.get("SWEEP_LIMIT", "100"))
log = open(f"{OUT}/sweep_conv.txt", "w")
def p(*a):
    s = " ".join(str(x) for x in a); print(s, flush=True); log.write(s + "\n"); log.flush()
def bench(fn, rep=40): return do_bench(fn, warmup=10, rep=rep, return_mode="median")
def regs(kern):
    try:
        for dev, c in kern.device_caches.items():
            k = list(c[0].values())[-1]; return f"r{k.n_regs}/s{k.n_spills}"
    except Exception: return "r?"
src = torch.empty(2**30, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
COPY = 2 * src.numel() / bench(lambda: dst.copy_(src)) / 1e6; del src, dst
p(f"# {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}; copy {COPY:.0f} GB/s")
def inputs(B, C, L, K, layout, dtype=torch.bfloat16):
    mk = (lambda: torch.randn(B, C, L, device="cuda", dtype=dtype)) if layout == "bcl" else (lambda: torch.randn(B, L, C, device="cuda", dtype=dtype).transpose(1, 2))
    x, dy = mk(), mk(); w = (torch.randn(C, K, device="cuda") / K).to(dtype); b = torch.randn(C, device="cuda").to(dtype)
    return x, w, b, dy
def reference(x, w, b, dy):
    K = w.shape[1]; xf, wf, bf = [t.detach().float().requires_grad_() for t in (x, w, b)]
    y = F.silu(F.conv1d(F.pad(xf, (K - 1, 0)), wf[:, None, :], bf, groups=x.shape[1]))
    return (y.detach(),) + torch.autograd.grad(y, (xf, wf, bf), dy.float())
def rel(a, r): return ((a.float() - r).norm() / r.norm()).item()
FWD = {"bcl": [(4, 256, 4, 4), (2, 256, 2, 4), (8, 256, 4, 4), (4, 256, 4, 8), (8, 256, 8, 4)],
       "blc": [(512, 4, 4, 16)]}
BWD = {"bcl": [(4, 256, 4, 4), (2, 256, 2, 4), (4, 256, 2, 4), (8, 256, 4, 4), (4, 256, 4, 8), (4, 256, 4, 2), (8, 256, 8, 4)],
       "blc": [(256, 4, 2, 4)]}
best = {}
SHAPE = (8, 5120, 2048, 4); B, C, L, K = SHAPE; xb = B * C * L * 2
for layout in ("blc", "bcl"):
    x, w, b, dy = inputs(B, C, L, K, layout); ry, rdx, rdw, rdb = reference(x, w, b, dy)
    for direction, table in (("fwd", FWD), ("bwd", BWD)):
        res = []
        for bc, bt, nw, wv in table[layout]:
            if time.time() - T0 > LIMIT and res: p("  (time guard)"); break
            c = dict(block_c=bc, block_t=bt, num_warps=nw, waves=wv)
            try:
                if direction == "fwd":
                    out = causal_conv1d_fwd(x, w, b, None, None, "silu", config=c); torch.cuda.synchronize()
                    err = rel(out, ry); fn = lambda: causal_conv1d_fwd(x, w, b, None, None, "silu", config=c); nbytes = 2 * xb; kern = KM.causal_conv1d_fwd_kernel
                else:
                    dx, dw, db, _ = causal_conv1d_bwd(x, w, b, None, None, dy, "silu", config=c); torch.cuda.synchronize()
                    err = max(rel(dx, rdx), rel(dw, rdw), rel(db, rdb)); fn = lambda: causal_conv1d_bwd(x, w, b, None, None, dy, "silu", config=c); nbytes = 3 * xb; kern = KM.causal_conv1d_bwd_kernel
            except Exception as e:
                p(f"{direction} {layout} {c} FAILED {type(e).__name__}: {str(e)[:300]}"); continue
            ms = bench(fn); gbs = nbytes / ms / 1e6
            p(f"{direction} {layout} {c}: {ms*1e3:.1f} us {gbs:.0f} GB/s {100*gbs/COPY:.0f}% err={err:.1e} {regs(kern)}")
            if err < 2e-2: res.append((ms, c))
        if res: best[(direction, layout)] = min(res, key=lambda r: r[0]); p(f"BEST {direction} {layout}: {best[(direction, layout)]}")
    del x, w, b, dy, ry, rdx, rdw, rdb
p("\n| shape | layout | fwd us best (default) | fwd % copy | bwd us best (default) |")
for shape in [SHAPE, (4, 2048, 8192, 4), (16, 1536, 1024, 4), (8, 5120, 2048, 2)]:
    for layout in ("bcl", "blc"):
        x, w, b, dy = inputs(*shape, layout)
        cf = best.get(("fwd", layout), (0, None))[1]; cb = best.get(("bwd", layout), (0, None))[1]
        tf = bench(lambda: causal_conv1d_fwd(x, w, b, None, None, "silu", config=cf)); tb = bench(lambda: causal_conv1d_bwd(x, w, b, None, None, dy, "silu", config=cb))
        tfd = bench(lambda: causal_conv1d_fwd(x, w, b, None, None, "silu")); tbd = bench(lambda: causal_conv1d_bwd(x, w, b, None, None, dy, "silu"))
        n = x.numel() * 2
        p(f"| {shape} | {layout} | {tf*1e3:.1f} ({tfd*1e3:.1f}) | {100*2*n/tf/1e6/COPY:.0f}% ({100*2*n/tfd/1e6/COPY:.0f}%) | {tb*1e3:.1f} ({tbd*1e3:.1f}) |")
p(f"kernels done {time.time()-T0:.0f}s")
try:
    from torch.profiler import profile, ProfilerActivity
    from inductor_conv.lowerings import causal_conv1d_silu as low
    low.register(); OPS = torch.ops.inductor_conv
    def fb(x, w, b, dy):
        y = OPS.causal_conv1d_fwd(x, w, b, None, None, "silu")
        return (y,) + tuple(OPS.causal_conv1d_bwd(x, w, b, None, None, dy, "silu", True))
    for layout in ("bcl", "blc"):
        x, w, b, dy = inputs(*SHAPE, layout); torch._dynamo.reset()
        cfb = torch.compile(fb, fullgraph=True); outs = cfb(x, w, b, dy); torch.cuda.synchronize()
        ry, rdx, rdw, rdb = reference(x, w, b, dy)
        err = max(rel(outs[0], ry), rel(outs[1], rdx), rel(outs[2], rdw), rel(outs[3], rdb))
        t2 = bench(lambda: cfb(x, w, b, dy))
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10): cfb(x, w, b, dy)
            torch.cuda.synchronize()
        ks = {e.key: e.self_device_time_total / 10 for e in prof.key_averages() if e.self_device_time_total > 0}
        p(f"compiled {layout}: fwd+bwd wall {t2*1e3:.1f} us, kernel sum {sum(ks.values()):.1f} us {ks} err {err:.1e}")
except Exception:
    import traceback; p("compiled FAILED", traceback.format_exc()[-2000:])
p(f"total {time.time()-T0:.0f}s")
