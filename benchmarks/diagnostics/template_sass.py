"""The attention templates as sm_90 machine code, without a GPU: registers, spills, wgmma serialisation, loop bodies.

    python benchmarks/diagnostics/template_sass.py [--shape B,H,S,D] [--hkv HKV] [--causal] [--p P]
                                                   [--tile BM,BN,WARPS,STAGES] [--masked-first] [--group N]
                                                   [--kv-first 0|1] [--pair] [--tma] [--mask-stages N]
                                                   [--row-offsets 0|1]
                                                   [--softcap CAP] [--mask 0|1|2] [--fwd]
                                                   [--wide] [--sass FILE] [--ttgir FILE]

Renders `inductor_conv_attention_bwd` (or `_fwd` with --fwd) the way Inductor does for static shapes — sizes and
strides as literals, kernel options as constexpr lines, 16-byte aligned pointers — with a plain tl.store for
store_output (tests/tools/compile_sm90.py's render_attention, the constexprs of its attention_constexprs), compiles it
with Triton's NVIDIA backend for sm_90 (Triton ships ptxas; no GPU needed), and prints
registers, stack, shared memory, ptxas' wgmma-serialisation advisory (C7515) and, per loop of the SASS, its size and
HGMMA / WARPGROUP / local-memory (LDL, STL) instruction counts.  This is a stand-in for Inductor's renderer (the
same jinja hooks the CPU test harness in tests/test_lowerings_attention.py fakes, but static), checked against the
GPU: it gave the backward's shared memory exactly (98816 / 99328 bytes) and the causal backward's serialised wgmmas
that ncu's barrier stalls and tensor-pipe activity showed (Note [masked tiles first] in kernels/attn_math.py).
Internal Triton API (ASTSource); written for triton 3.6 and 3.7.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # tools.compile_sm90

from tools.compile_sm90 import attention_constexprs, compile_attention_template, loops, resources, sass  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="2,16,8192,128")
    parser.add_argument("--hkv", type=int, default=None, help="key/value heads (GQA; default: H)")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--p", type=float, default=0.0)
    parser.add_argument("--tile", default=None, help="BM,BN,WARPS,STAGES (default: the CUDA tile table's)")
    parser.add_argument("--masked-first", action="store_true")
    parser.add_argument("--group", type=int, default=None,
                        help="CAUSAL_GROUP (default as the lowering: 8 forward; backward 0 masked-first, else 2)")
    parser.add_argument("--kv-first", type=int, default=1,
                        help="the backward's KV_FIRST (default as the lowering: 1, every dK/dV program first)")
    parser.add_argument("--pair", action="store_true", help="CAUSAL_PAIR: two row blocks a causal forward program")
    parser.add_argument("--tma", action="store_true", help="USE_TMA: streamed tiles through TMA descriptors")
    parser.add_argument("--mask-stages", type=int, default=None,
                        help="MASK_STAGES: the mask-reading loops' stages (Note [mask loop stages]; 0: the tile's "
                             "num_stages; default: the table tile's)")
    parser.add_argument("--row-offsets", type=int, default=None,
                        help="ROW_OFFSETS 0 / 1 (Note [row offsets]; default: as the lowering picks it)")
    parser.add_argument("--softcap", type=float, default=0.0, help="SOFTCAP: scores capped at this value (0: off)")
    parser.add_argument("--mask", type=int, default=0,
                        help="MASK_KIND: 0 none, 1 bool, 2 additive ((S, S) tensor; MASK_RANGES as the lowering's default)")
    parser.add_argument("--split", action="store_true", help="SPLIT_KV: dK and dV in programs of their own")
    parser.add_argument("--fwd", action="store_true")
    parser.add_argument("--wide", action="store_true",
                        help="WIDE: int64 products inside a slice (Note [int64 offsets] in kernels/attn_common.py)")
    parser.add_argument("--sass", default=None, help="also write the SASS listing to this file")
    parser.add_argument("--ttgir", default=None, help="also write Triton's GPU IR (layouts, convert_layout) here")
    args = parser.parse_args()
    import torch

    shape = tuple(map(int, args.shape.split(",")))
    constexprs, warps, stages = attention_constexprs(
        torch.bfloat16, shape[3], fwd=args.fwd, causal=args.causal, p=args.p, softcap=args.softcap,
        mask_kind=args.mask,
        tile=tuple(map(int, args.tile.split(","))) if args.tile else None, masked_first=args.masked_first,
        group=args.group, kv_first=bool(args.kv_first), pair=args.pair, tma=args.tma,
        split=args.split if args.tile else None, wide=args.wide,
        row_offsets=args.row_offsets, mask_stages=args.mask_stages)
    bm, bn = constexprs["BLOCK_M"], constexprs["BLOCK_N"]
    name = "inductor_conv_attention_fwd" if args.fwd else "inductor_conv_attention_bwd"
    compiled = compile_attention_template(args.fwd, shape, constexprs, warps, stages, args.hkv)
    usage = resources(compiled)
    print(f"{name} shape {shape} hkv={args.hkv or shape[1]} causal={args.causal} p={args.p} mask={args.mask} "
          f"tile ({bm}, {bn}, {warps}, {stages}) masked_first={args.masked_first} softcap={args.softcap}: "
          f"regs {usage['regs']}, "
          f"stack {usage['stack']} B, shared "
          f"{usage['shared']} B, wgmma {'SERIALISED (C7515)' if usage['wgmma_serialized'] else 'pipelined'}")
    listing = sass(compiled)
    if args.ttgir:
        with open(args.ttgir, "w") as f:
            f.write(compiled.asm["ttgir"])
    if args.sass:
        with open(args.sass, "w") as f:
            f.write(listing)
    for first, last, ops in loops(listing):
        counts = ", ".join(f"{op} {ops[op]}" for op in ("HGMMA", "WARPGROUP", "MUFU", "LDGSTS", "LDL", "STL"))
        print(f"  loop at instruction {first}: {last - first + 1} instructions; {counts}")


if __name__ == "__main__":
    main()
