"""Attention over a KV cache (few queries, long cache) on the GPU: flash-decoding against SDPA and FlexAttention.

    python benchmarks/attention_decode.py [--quick] [--cases 0,3] [--impls ours,sdpa-flash] [--out results.md]
    python benchmarks/attention_decode.py --sweep [--cases ...]     # ours at every split count and tile

Cases: bf16, Hq/Hkv 32/8, D 128, B in {1, 2, 4, 8}, Sk in {4k, 32k, 128k}, Sq in {1, 4}; no mask (Sq = 1 is
exactly a KV cache's decode step; at Sq = 4 the bottom-right causal corner would drop 6 of 4 Sk scores, the same
bytes).  Implementations:
  ours           kernels/attention_decode.py's launcher (Note [flash-decoding]): the planned split count
  ours+mask      the same with HF's additive [B, 1, Sq, Sk] mask over the cache (a bottom-right causal corner)
  ours-op        inductor_conv.attention called eagerly (no grad): the op's own dispatch
  sdpa-flash / sdpa-cudnn / sdpa-efficient   F.scaled_dot_product_attention pinned to one backend, enable_gqa
  flex           FlexAttention compiled, no block mask (Sq < 128 takes its flex_decoding kernel)
Calls run as a model's decode step runs them: back to back, each layer with its own K/V cache (as many layers as
make 512 MiB, so no call finds its cache in L2), q and the mask shared.  Columns: wall = CUDA events around 200
such calls, per call (a host-bound call shows its host time); GPU = the kernels' time alone (torch.profiler);
floor = the time to read K and V once at the copy bandwidth measured in this run (a 1 GiB device-to-device copy
moves 2 GiB); "% floor" = floor / time, for the wall and the GPU time.  Target: >= 80% of the floor (issue 26).
"""
from __future__ import annotations

import argparse
import datetime
import itertools

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import inductor_conv
from inductor_conv.kernels.attention_decode import DecodeTile, attention_decode_fwd, plan_for

from common import bench, gpu_ms, pick, pick_impls, write_table

HQ, HKV, D = 32, 8, 128
CASES = [(B, Sk, Sq) for Sq in (1, 4) for Sk in (4096, 32768, 131072) for B in (1, 2, 4, 8)]
SWEEP_SPLITS = (1, 2, 4, 8, 16, 32, 64)
SWEEP_TILES = (DecodeTile(64, 64, 4, 4), DecodeTile(64, 64, 4, 3), DecodeTile(64, 32, 4, 4), DecodeTile(64, 128, 4, 3),
               DecodeTile(64, 64, 8, 4))


def _hf_mask(B, Sq, Sk, dtype):
    """HF's eager mask over a full cache: additive [B, 1, Sq, Sk], finfo.min right of each query's causal corner."""
    j = torch.arange(Sk, device="cuda").view(1, 1, 1, Sk)
    last = Sk - Sq + torch.arange(Sq, device="cuda").view(1, 1, Sq, 1)
    return torch.zeros(B, 1, Sq, Sk, device="cuda", dtype=dtype).masked_fill(j > last, torch.finfo(dtype).min)


def sdpa(backend):
    def run(q, k, v, mask):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    return run


def flex():
    from torch.nn.attention.flex_attention import flex_attention

    compiled = torch.compile(flex_attention, dynamic=False)
    return lambda q, k, v, mask: compiled(q, k, v, enable_gqa=True)


def implementations():
    """name -> fn(q, k, v, mask); only ours+mask reads the mask."""
    return {
        "ours": lambda q, k, v, mask: attention_decode_fwd(q, k, v, None, False, None)[0],
        "ours+mask": lambda q, k, v, mask: attention_decode_fwd(q, k, v, mask, False, None)[0],
        "ours-op": lambda q, k, v, mask: inductor_conv.attention(q, k, v, enable_gqa=True),
        "sdpa-flash": sdpa(SDPBackend.FLASH_ATTENTION),
        "sdpa-cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
        "sdpa-efficient": sdpa(SDPBackend.EFFICIENT_ATTENTION),
        "flex": flex(),
    }


def sweep_runs(q, k, v):
    """ours at every tile and split count of the sweep: (name, fn, the split count the plan makes of it)."""
    return [(f"ours {t.block_n}k {t.num_warps}w {t.num_stages}s",
             lambda q, k, v, mask, t=t, s=s: attention_decode_fwd(q, k, v, None, False, None, num_splits=s,
                                                                  tile=t)[0],
             plan_for(q, k, v, None, False, None, 0.0, s, t).n_splits)
            for t, s in itertools.product(SWEEP_TILES, SWEEP_SPLITS)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="first case only")
    parser.add_argument("--cases", default=None, help="comma-separated indices of the cases to run (default: all)")
    parser.add_argument("--impls", default=None, help="comma-separated implementation names (default: all)")
    parser.add_argument("--sweep", action="store_true", help="ours only, at every split count and tile of the sweep")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    return parser.parse_args()


LAYER_BYTES = 512 * 2**20  # K/V of all layers together at least this (> 2x the L2): a call never finds its cache there


def copy_gbps() -> float:
    """Device copy bandwidth (GB/s of reads + writes): a 1 GiB copy, do_bench's median."""
    src = torch.empty(2**30, dtype=torch.int8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.numel() / (bench(lambda: dst.copy_(src)) * 1e-3) / 1e9


def layers(B, Sk, Sq):
    """Per-layer inputs (q, k, v, mask) as a model's decode step sees them: one K/V cache per layer, as many layers
    as make LAYER_BYTES (at least one); q and HF's mask are shared."""
    q = torch.randn(B, HQ, Sq, D, device="cuda", dtype=torch.bfloat16)
    mask = _hf_mask(B, Sq, Sk, q.dtype)
    kv_bytes = 2 * B * HKV * Sk * D * q.element_size()
    return [(q, *(torch.randn(B, HKV, Sk, D, device="cuda", dtype=q.dtype) for _ in range(2)), mask)
            for _ in range(max(1, -(-LAYER_BYTES // kv_bytes)))]


def measure(fn, inputs, reps: int = 200):
    """(wall, GPU) milliseconds a call: wall = CUDA events around `reps` back-to-back calls cycling through the
    layers (a host-bound call shows its host time), GPU = the kernels' time alone (torch.profiler)."""
    def every_layer():
        for args in inputs:
            fn(*args)

    every_layer()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(reps):
        fn(*inputs[i % len(inputs)])
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps, gpu_ms(every_layer, iters=max(1, 20 // len(inputs))) / len(inputs)


def main():
    args = parse_args()
    torch.manual_seed(0)
    gbps = copy_gbps()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    lines = [f"# attention decode benchmark {datetime.date.today()} on {torch.cuda.get_device_name()} ({sms} SMs), "
             f"torch {torch.__version__}; copy bandwidth {gbps:.0f} GB/s (1 GiB device copy, read + write)",
             "", "| B Sk Sq | impl | wall us | GPU us | floor us | % floor wall | % floor GPU | splits |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    impls = implementations()
    wanted = pick_impls(impls, args)
    for B, Sk, Sq in pick(CASES, args):
        torch._dynamo.reset()  # flex recompiles per shape: past Dynamo's recompile limit it would run eagerly
        inputs = layers(B, Sk, Sq)
        floor = 2 * B * HKV * Sk * D * 2 / (gbps * 1e9) * 1e3  # ms to read K and V once
        splits = plan_for(*inputs[0][:3], None, False, None).n_splits
        runs = sweep_runs(*inputs[0][:3]) if args.sweep else [(name, fn, splits if name.startswith("ours") else "")
                                                 for name, fn in impls.items() if name in wanted]
        for name, fn, n_splits in runs:
            try:
                with torch.no_grad():
                    wall, gpu = measure(fn, inputs)
            except Exception as e:  # one failing implementation must not hide the others
                lines.append(f"| {B} {Sk} {Sq} | {name} | n/a ({type(e).__name__}: {str(e)[:80]}) | | | | | |")
            else:
                lines.append(f"| {B} {Sk} {Sq} | {name} | {wall * 1e3:.1f} | {gpu * 1e3:.1f} | {floor * 1e3:.1f} | "
                             f"{100 * floor / wall:.0f} | {100 * floor / gpu:.0f} | {n_splits} |")
            print(lines[-1], flush=True)
        del inputs
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
