"""The conv templates as sm_90 machine code, without a GPU: registers, spills and each loop's instruction mix.

    python benchmarks/diagnostics/conv_template_sass.py [--shape B,C,L,K] [--kind bwd:blc]
                                                        [--tile BC,BT,WARPS,WAVES,UNROLL] [--sass FILE]

Renders `inductor_conv_causal_conv1d_fwd` / `_bwd` the way Inductor does for static shapes (sizes and strides as
literals, the lowering's own constexprs from `_template_kwargs`, N_CHUNKS for 132 SMs, 16-byte aligned pointers, a
plain tl.store for store_output: tests/tools/compile_sm90.py's compile_conv_template), compiles it for sm_90 with
Triton's NVIDIA backend (no GPU needed) and prints registers, stack and, per loop of the SASS, its length and the
instructions that count in a stream kernel: loads, stores, MUFU, FFMA, register copies (MOV), shuffles, barriers,
local memory.  Kinds: "bcl" (x (B, C, L) contiguous), "blc" (the channel-last view, y / dy in x's layout), "blc_t"
(x channel-last, y / dy contiguous).  bf16 x, fp32 weight and bias.  The eager kernels' offline numbers
(tests/tools/compile_sm90.py) see runtime strides (unit ones as constants, as Triton's launcher specialises them); these
see the template's literals, as on the GPU.  Internal Triton API (ASTSource); written for triton 3.6 and 3.7.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # tools.compile_sm90

from tools.compile_sm90 import compile_conv_template, loops, resources, sass  # noqa: E402

from inductor_conv.heuristics.conv import ConvTile  # noqa: E402

_SHOWN = ("LDG", "STG", "MUFU", "FFMA", "FMUL", "FADD", "MOV", "PRMT", "SHFL", "BAR", "LDS", "STS", "LDL", "STL")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="8,5120,2048,4")
    parser.add_argument("--kind", default="bwd:blc", help="direction:layout, layout in bcl / blc / blc_t")
    parser.add_argument("--tile", default=None, help="BC,BT,WARPS,WAVES,UNROLL (default: the tile table's)")
    parser.add_argument("--sass", default=None, help="also write the SASS listing to this file")
    args = parser.parse_args()
    shape = tuple(map(int, args.shape.split(",")))
    direction, layout = args.kind.split(":")
    tile = ConvTile(*map(int, args.tile.split(","))) if args.tile else None
    compiled, g, n_chunks = compile_conv_template(direction, layout, shape, tile)
    usage = resources(compiled)
    per_tile = g.block_c * g.block_t // (32 * g.num_warps)  # elements a thread handles per tile
    print(f"{args.kind} shape {shape} tile BC={g.block_c} BT={g.block_t} warps={g.num_warps} waves={g.waves} "
          f"unroll={g.unroll} N_CHUNKS={n_chunks}: regs {usage['regs']}, stack {usage['stack']} B, "
          f"shared {usage['shared']} B; {per_tile} elements a thread a tile")
    listing = sass(compiled)
    if args.sass:
        with open(args.sass, "w") as f:
            f.write(listing)
    for first, last, ops in loops(listing):
        n = last - first + 1
        counts = ", ".join(f"{op} {ops[op]}" for op in _SHOWN if ops[op])
        print(f"  loop at instruction {first}: {n} instructions ({n / per_tile:.1f} an element if it is one tile; "
              f"/ unroll for an unrolled loop); {counts}")


if __name__ == "__main__":
    main()
