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
Columns: wall = do_bench's median (CUDA events around back-to-back calls, L2 flushed before each: host-bound calls
show their host time here); GPU = the calls' kernel time alone (torch.profiler, each call after an L2 flush, the
flush's own time subtracted); floor = the time to read K and V once at the copy bandwidth measured in this run
(a 1 GiB device-to-device copy moves 2 GiB); "% floor" = floor / time, for the wall and the GPU time.  Target:
>= 80% of the floor (issue 26).
"""
from __future__ import annotations

import argparse
import datetime
import itertools

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import inductor_conv
from inductor_conv.kernels import attention_decode
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


def sweep_runs():
    """ours at every tile and split count of the sweep (name, fn, splits)."""
    return [(f"ours {t.block_n}k {t.num_warps}w {t.num_stages}s",
             lambda q, k, v, mask, t=t, s=s: attention_decode_fwd(q, k, v, None, False, None, num_splits=s,
                                                                  tile=t)[0], s)
            for t, s in itertools.product(SWEEP_TILES, SWEEP_SPLITS)]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="first case only")
    parser.add_argument("--cases", default=None, help="comma-separated indices of the cases to run (default: all)")
    parser.add_argument("--impls", default=None, help="comma-separated implementation names (default: all)")
    parser.add_argument("--sweep", action="store_true", help="ours only, at every split count and tile of the sweep")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    return parser.parse_args()


class Timer:
    """Wall and GPU time of a call, and the copy bandwidth its floor is measured against."""

    def __init__(self):
        self.flush_buf = torch.empty(512 * 2**20, dtype=torch.int8, device="cuda")  # > L2 (50-60 MB)
        src = torch.empty(2**30, dtype=torch.int8, device="cuda")
        dst = torch.empty_like(src)
        self.copy_gbps = 2 * src.numel() / (bench(lambda: dst.copy_(src)) * 1e-3) / 1e9
        del src, dst
        self.flush_ms = gpu_ms(self.flush)

    def flush(self):
        self.flush_buf.zero_()

    def wall_ms(self, fn):
        return bench(fn)  # do_bench flushes L2 before each run itself

    def gpu_ms(self, fn):
        return gpu_ms(lambda: (self.flush(), fn())) - self.flush_ms

    def floor_ms(self, nbytes):
        return nbytes / (self.copy_gbps * 1e9) * 1e3


def _inputs(B, Sk, Sq):
    q = torch.randn(B, HQ, Sq, D, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(B, HKV, Sk, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    return q, k, v


def main():
    args = parse_args()
    torch.manual_seed(0)
    timer = Timer()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    lines = [f"# attention decode benchmark {datetime.date.today()} on {torch.cuda.get_device_name()} ({sms} SMs), "
             f"torch {torch.__version__}; copy bandwidth {timer.copy_gbps:.0f} GB/s (1 GiB device copy, read + write)",
             "", "| B Sk Sq | impl | wall us | GPU us | floor us | % floor wall | % floor GPU | splits |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    impls = implementations()
    wanted = pick_impls(impls, args)
    for B, Sk, Sq in pick(CASES, args):
        torch._dynamo.reset()  # flex recompiles per shape: past Dynamo's recompile limit it would run eagerly
        q, k, v = _inputs(B, Sk, Sq)
        mask = _hf_mask(B, Sq, Sk, q.dtype)
        floor = timer.floor_ms(2 * k.numel() * k.element_size())
        splits = plan_for(q, k, v, None, False, None).n_splits
        runs = sweep_runs() if args.sweep else [(name, fn, splits if name.startswith("ours") else "")
                                                 for name, fn in impls.items() if name in wanted]
        for name, fn, n_splits in runs:
            call = lambda: fn(q, k, v, mask)  # noqa: E731
            try:
                with torch.no_grad():
                    call()
                    wall, gpu = timer.wall_ms(call), timer.gpu_ms(call)
            except Exception as e:  # one failing implementation must not hide the others
                lines.append(f"| {B} {Sk} {Sq} | {name} | n/a ({type(e).__name__}: {str(e)[:80]}) | | | | | |")
            else:
                lines.append(f"| {B} {Sk} {Sq} | {name} | {wall * 1e3:.1f} | {gpu * 1e3:.1f} | {floor * 1e3:.1f} | "
                             f"{100 * floor / wall:.0f} | {100 * floor / gpu:.0f} | {n_splits} |")
            print(lines[-1], flush=True)
        del q, k, v, mask
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
