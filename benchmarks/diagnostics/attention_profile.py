"""Per-kernel GPU time of one attention forward+backward (torch.profiler), for finding where time goes.

    python benchmarks/diagnostics/attention_profile.py [--shape B,Hq,Hkv,S,D] [--causal] [--p P] [--impl NAME ...]
                                                       [--warmup S]

NAME: ours (the eager code of benchmarks/attention.py compiled with inductor_conv; `ours:deterministic=0` or
`ours:attention_cudnn=0` set config switches first; `group=N` / `bwd_group=N` force the forward's / backward's causal
launch-order group, config.attention_causal_group / attention_causal_bwd_group; `masked_first=0` sets
config.attention_masked_first, `kv_first=0` attention_bwd_kv_first, `pair=0|1` attention_causal_pair, `tma=1`
attention_tma;
`bwd_tile=64.64.8.2` / `fwd_tile=...` replace the default backward / forward tile (BLOCK_M.BLOCK_N.warps.stages,
a forward's with `.1` appended runs in causal pairs) of this run's kind), inductor (plain Inductor on the same
code), sdpa-cudnn, sdpa-flash.  Prints each kernel's self device time per call, largest first; with --cpu also the
wall time per step and the operators with the most self CPU time (where a small, CPU-bound step spends its time);
with --code DIR writes each compiled implementation's generated code to DIR/NAME.py; --warmup S runs S seconds of
steps before profiling (sustained-load clocks).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from unittest import mock

import torch
from torch._inductor.utils import run_and_get_code
from torch.nn.attention import SDPBackend
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/: attention, common

import inductor_conv  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402

from attention import config_patch, eager_attention, sdpa  # noqa: E402
from common import compile_with_plugin  # noqa: E402


def build(name):
    base, _, settings = name.partition(":")
    overrides = {k: v if k.endswith("_tile") else int(v) for k, v in (s.split("=") for s in settings.split(",") if s)}
    if base in ("ours", "inductor"):
        return compile_with_plugin(eager_attention, plugin=base == "ours"), overrides
    backend = {"sdpa-cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa-flash": SDPBackend.FLASH_ATTENTION}[base]
    return sdpa(backend), overrides


# build()'s override names for the lowering's experiment switches in config
_LOWERING_KNOBS = {"group": "attention_causal_group", "bwd_group": "attention_causal_bwd_group",
                   "masked_first": "attention_masked_first", "kv_first": "attention_bwd_kv_first",
                   "pair": "attention_causal_pair", "tma": "attention_tma"}


def lowering_overrides(overrides, q, causal, p):
    """The lowering switches and forward / backward tiles that `overrides` names, popped from it, set until exit."""
    from inductor_conv.heuristics import attention as heur

    stack = contextlib.ExitStack()
    knobs = {attr: overrides.pop(key) for key, attr in _LOWERING_KNOBS.items() if key in overrides}
    for flag in ("attention_masked_first", "attention_bwd_kv_first", "attention_causal_pair", "attention_tma"):
        if flag in knobs:
            knobs[flag] = bool(knobs[flag])
    if knobs:
        stack.enter_context(mock.patch.multiple(inductor_conv.config, **knobs))
    for key, kind in (("fwd_tile", "FWD"), ("bwd_tile", "BWD")):  # "BM.BN.W.S": replaces the default tile of
        if key in overrides:                                        # q's head dim for this causal/dropout kind
            table = getattr(heur, f"CUDA_{kind}" + ("_CAUSAL" if causal else "_DROPOUT" if p else ""))
            tile = getattr(heur, f"Attn{kind.title()}Tile")(*map(int, overrides.pop(key).split(".")))
            stack.enter_context(mock.patch.dict(table, {heur.head_dim_bucket(q.shape[-1]): tile}))
    return stack


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4,16,16,2048,128")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--p", type=float, default=0.0)
    parser.add_argument("--impl", nargs="+", default=["ours", "sdpa-cudnn"])
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--code", default=None)
    parser.add_argument("--warmup", type=float, default=0.0, help="seconds of steps before profiling (sustained load)")
    args = parser.parse_args()
    B, Hq, Hkv, S, D = map(int, args.shape.split(","))
    torch.manual_seed(0)
    q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    do = torch.randn_like(q)
    with fx_graph_cache_disabled():
        for name in args.impl:
            fn, overrides = build(name)

            def step():
                out = fn(q, k, v, args.causal, args.p)
                torch.autograd.grad(out, (q, k, v), do)

            knobs = lowering_overrides(overrides, q, args.causal, args.p)
            with knobs, config_patch({k: bool(v) for k, v in overrides.items()}):
                code = run_and_get_code(step)[1]  # compiles on the first call, with the settings above
                for _ in range(2):
                    step()
            if args.code and code:
                os.makedirs(args.code, exist_ok=True)
                with open(os.path.join(args.code, f"{name.replace(':', '_')}.py"), "w") as f:
                    f.write("\n\n# ==== next module\n\n".join(code))
            torch.cuda.synchronize()
            start = time.perf_counter()
            while time.perf_counter() - start < args.warmup:
                step()
                torch.cuda.synchronize()
            iters = 10
            if args.cpu:
                start = time.perf_counter()
                for _ in range(100):
                    step()
                torch.cuda.synchronize()
                print(f"== {name}: {(time.perf_counter() - start) * 1e4:.0f} us wall per step (100 steps)")
            activities = [ProfilerActivity.CUDA] + [ProfilerActivity.CPU] * args.cpu
            with profile(activities=activities) as prof:
                for _ in range(iters):
                    step()
                torch.cuda.synchronize()
            rows = sorted(prof.key_averages(), key=lambda e: -e.self_device_time_total)
            total = sum(e.self_device_time_total for e in rows) / iters
            print(f"== {name} {args.shape} causal={args.causal} p={args.p}: {total:.0f} us GPU per fwd+bwd")
            for e in rows:
                if e.self_device_time_total > 0:
                    print(f"  {e.self_device_time_total / iters:8.1f} us  x{e.count // iters:<3d} {e.key[:110]}")
            if args.cpu:
                rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
                print(f"  CPU: {sum(e.self_cpu_time_total for e in rows) / iters:.0f} us self CPU per step (profiled)")
                for e in rows[:30]:
                    print(f"  {e.self_cpu_time_total / iters:8.1f} us CPU  x{e.count // iters:<3d} {e.key[:110]}")
            inductor_conv.disable()


if __name__ == "__main__":
    main()
