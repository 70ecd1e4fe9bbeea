"""Attention backward tiles on the GPU: the eager backward kernel at each tile (and split dK/dV programs, and the
fast tanh), checked against the float64 reference at a small shape and timed at the benchmark shape, beside SDPA's
backends on the same shape without soft-capping.

    python benchmarks/diagnostics/attention_bwd_tiles.py [--shape B,HQ,HKV,S,D] [--softcap CAP] [--p 0,0.1]
        [--tiles BM,BN,WARPS,STAGES[,split];...] [--no-causal] [--fast-tanh 0,1] [--sdpa] [--mask bool|additive]
        [--dv DV] [--split-head-dim 0,1] [--masked-first 0,1]

Backward TFLOP/s count 2.5x the forward's 4·B·Hq·S²·D (half of it causal); "fwd+bwd" adds the forward's measured
time and counts 3.5x, as benchmarks/attention.py.  The kernels are the eager ones compiled for the shape (Note
[static shapes]), the closest eager stand-in for the Inductor template, which renders the same attn_math code.
--mask passes the attention's mask as a (B, 1, S, S) tensor instead (causal, or all-true with --no-causal; bool, or
HF's additive 0 / finfo.min in the inputs' dtype), with is_causal off: the masked configurations' tiles.
--dv: a value head dim other than D (MLA: --shape 4,16,8,2048,192 --dv 128; FLOPs then count 2·B·Hq·S²·(D + Dv)
for 4·B·Hq·S²·D); --split-head-dim: config.attention_split_head_dim values to compare (Note [split head dim]);
--masked-first: config.attention_masked_first values (Note [masked tiles first]; causal only).
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import inductor_conv  # noqa: E402
from inductor_conv.heuristics.attention import AttnBwdTile, AttnFwdTile, attn_bwd_tile  # noqa: E402
from inductor_conv.kernels import attention as ka  # noqa: E402
from inductor_conv.reference.attention import attention_ref  # noqa: E402
from inductor_conv.reference.attention_dropout import dropout_keep_mask  # noqa: E402

from common import bench  # noqa: E402


def parse_tiles(text: str) -> list[AttnBwdTile]:
    tiles = []
    for item in text.split(";"):
        parts = item.split(",")
        tiles.append(AttnBwdTile(*map(int, parts[:4]), split=len(parts) > 4 and parts[4] == "split"))
    return tiles


def inputs(B, Hq, Hkv, S, D, dtype=torch.bfloat16, seed=0, Dv=None):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, Hq, S, D, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(B, Hkv, S, D, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(B, Hkv, S, Dv or D, device="cuda", dtype=dtype, generator=g)
    return q, k, v, torch.randn(B, Hq, S, Dv or D, device="cuda", dtype=dtype, generator=g)


def make_mask(kind, B, S, causal, dtype=torch.bfloat16):
    """(mask, is_causal) for --mask: None and `causal` itself, or the same attention as a (B, 1, S, S) tensor."""
    if kind is None:
        return None, causal
    allowed = torch.ones(S, S, dtype=torch.bool, device="cuda")
    allowed = (allowed.tril() if causal else allowed).expand(B, 1, S, S)
    if kind == "bool":
        return allowed, False
    return torch.where(allowed, 0.0, torch.finfo(dtype).min).to(dtype), False


def check(tile, causal, p, cap, mask_kind=None, D=256, Dv=None) -> float:
    """max |grad - fp64| / max |fp64| over dq, dk, dv at a small GQA shape with ragged lengths."""
    B, Hq, Hkv, S = 1, 4, 2, 333
    q, k, v, do = inputs(B, Hq, Hkv, S, D, seed=1, Dv=Dv)
    mask, is_causal = make_mask(mask_kind, B, S, causal)
    seed = torch.tensor([5], dtype=torch.int64, device="cuda")
    out, lse = ka.attention_fwd(q, k, v, mask, p, is_causal, None, seed, softcap=cap)
    grads = ka.attention_bwd(do, q, k, v, mask, out, lse, p, is_causal, None, seed, mask_grad=False, config=tile,
                             softcap=cap)[:3]
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    keep = dropout_keep_mask(seed, B, Hq, S, S, p) if p else None
    ref = attention_ref(*leaves, attn_mask=None if mask is None else mask.double() if mask.is_floating_point()
                        else mask, dropout_mask=keep, dropout_p=p, is_causal=is_causal, softcap=cap)
    refs = torch.autograd.grad(ref, leaves, do.double())
    return max(((g.double() - r).abs().max() / r.abs().max()).item() for g, r in zip(grads, refs))


def flops(B, Hq, S, D, causal, Dv=None) -> float:
    return 2 * B * Hq * S * S * (D + (Dv or D)) * (0.5 if causal else 1.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="2,16,8,4096,256")
    parser.add_argument("--softcap", type=float, default=50.0)
    parser.add_argument("--p", default="0,0.1")
    parser.add_argument("--no-causal", action="store_true")
    parser.add_argument("--fast-tanh", default="0", help="comma-separated 0 / 1: config.attention_fast_tanh")
    parser.add_argument("--tiles", default="16,64,8,2;32,64,8,2,split;64,64,8,2,split;32,64,8,2")
    parser.add_argument("--sdpa", action="store_true", help="also SDPA's backends without soft-capping")
    parser.add_argument("--fwd-tiles", default="", help="BM,BN,WARPS,STAGES;... forward tiles to time too")
    parser.add_argument("--mask", choices=("bool", "additive"), default=None, help="the mask as a tensor")
    parser.add_argument("--dv", type=int, default=None, help="the value head dim (default D)")
    parser.add_argument("--split-head-dim", default="1", help="comma-separated 0 / 1: config.attention_split_head_dim")
    parser.add_argument("--masked-first", default="1", help="comma-separated 0 / 1: config.attention_masked_first")
    parser.add_argument("--any-split", action="store_true",
                        help="split this (D, Dv) too, though heuristics' SPLIT_HEAD_DIMS does not list it")
    args = parser.parse_args()
    B, Hq, Hkv, S, D = map(int, args.shape.split(","))
    causal, cap = not args.no_causal, args.softcap
    tiles = parse_tiles(args.tiles)
    if args.any_split:
        import inductor_conv.heuristics.attention as heuristics

        heuristics.SPLIT_HEAD_DIMS = heuristics.SPLIT_HEAD_DIMS | {(D, args.dv or D)}
    f = flops(B, Hq, S, D, causal, args.dv)
    print(f"# backward tiles, {torch.cuda.get_device_name()}, torch {torch.__version__}, B{B} H{Hq}/{Hkv} S{S} D{D} "
          f"Dv{args.dv or D} "
          f"causal={causal} softcap={cap}; default table tile {attn_bwd_tile(torch.bfloat16, D, 'cuda', causal=causal)}")
    print("| split | p | fast tanh | masked first | tile | rel err (fp64, small) | bwd ms | bwd TFLOP/s | fwd ms | "
          "fwd+bwd TFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    q, k, v, do = inputs(B, Hq, Hkv, S, D, Dv=args.dv)
    mask, is_causal = make_mask(args.mask, B, S, causal)
    seed = torch.tensor([3], dtype=torch.int64, device="cuda")
    values = (list(map(int, a.split(","))) for a in (args.split_head_dim, args.fast_tanh, args.masked_first))
    for split, fast, first in itertools.product(*values):
        inductor_conv.config.attention_split_head_dim = bool(split)
        inductor_conv.config.attention_fast_tanh = bool(fast)
        inductor_conv.config.attention_masked_first = bool(first)
        for p in map(float, args.p.split(",")):
            fwd_ms = bench(lambda: ka.attention_fwd(q, k, v, mask, p, is_causal, None, seed, softcap=cap))
            out, lse = ka.attention_fwd(q, k, v, mask, p, is_causal, None, seed, softcap=cap)
            for tile in tiles:
                try:  # the fp64 check once per tile and tanh, at the largest p (dropout and soft-capping together)
                    err = (check(tile, causal, p, cap, args.mask, D, args.dv) if p == max(map(float, args.p.split(",")))
                           else float("nan"))
                    ms = bench(lambda: ka.attention_bwd(do, q, k, v, mask, out, lse, p, is_causal, None, seed,
                                                        mask_grad=False, config=tile, softcap=cap))
                except Exception as e:  # one failing tile must not hide the others
                    print(f"| {split} | {p} | {fast} | {first} | {tile} | {type(e).__name__}: {str(e)[:100]} | | | | |",
                          flush=True)
                    continue
                print(f"| {split} | {p} | {fast} | {first} | {tuple(dataclass_values(tile))} | {err:.1e} | {ms:.3f} | "
                      f"{2.5 * f / ms / 1e9:.0f} | {fwd_ms:.3f} | {3.5 * f / (ms + fwd_ms) / 1e9:.0f} |", flush=True)
    for item in filter(None, args.fwd_tiles.split(";")):
        bm, bn, w, st = map(int, item.split(","))
        cfg = AttnFwdTile(bm, bn, w, st)
        for p in map(float, args.p.split(",")):
            try:
                ms = bench(lambda: ka.attention_fwd(q, k, v, mask, p, is_causal, None, seed, softcap=cap,
                                                    config=cfg))
            except Exception as e:
                print(f"| fwd {cfg} p={p} | {type(e).__name__}: {str(e)[:100]} |", flush=True)
                continue
            print(f"| fwd {(bm, bn, w, st)} p={p} split={inductor_conv.config.attention_split_head_dim} | {ms:.3f} ms | "
                  f"{f / ms / 1e9:.0f} TFLOP/s |", flush=True)
    if args.sdpa:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        print("\n| SDPA backend (no soft-capping) | p | fwd ms | fwd+bwd ms | fwd+bwd TFLOP/s |\n|---|---|---|---|---|")
        for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            for p in map(float, args.p.split(",")):
                qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))

                def fwd():
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(qg, kg, vg, dropout_p=p, is_causal=causal,
                                                              enable_gqa=True)

                def fwd_bwd():
                    fwd().backward(do)

                try:
                    a, b = bench(fwd), bench(fwd_bwd)
                except Exception as e:
                    print(f"| {backend.name} | {p} | {type(e).__name__}: {str(e)[:80]} | | |", flush=True)
                    continue
                print(f"| {backend.name} | {p} | {a:.3f} | {b:.3f} | {3.5 * f / b / 1e9:.0f} |", flush=True)


def dataclass_values(tile):
    return (tile.block_m, tile.block_n, tile.num_warps, tile.num_stages) + (("split",) if tile.split else ())


if __name__ == "__main__":
    main()
