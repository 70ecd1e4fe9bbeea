"""The conv templates as sm_90 machine code, without a GPU: registers, spills and each loop's instruction mix.

    python benchmarks/conv_template_sass.py [--shape B,C,L,K] [--kind bwd:blc] [--tile BC,BT,WARPS,WAVES,UNROLL]
                                            [--sass FILE]

Renders `inductor_conv_causal_conv1d_fwd` / `_bwd` the way Inductor does for static shapes (sizes and strides as
literals, the lowering's own constexprs from `_template_kwargs`, N_CHUNKS for 132 SMs, 16-byte aligned pointers, a
plain tl.store for store_output), compiles it for sm_90 with Triton's NVIDIA backend (no GPU needed) and prints
registers, stack and, per loop of the SASS, its length and the instructions that count in a stream kernel: loads,
stores, MUFU, FFMA, register copies (MOV), shuffles, barriers, local memory.  Kinds: "bcl" (x (B, C, L)
contiguous), "blc" (the channel-last view, y / dy in x's layout), "blc_t" (x channel-last, y / dy contiguous).
bf16 x, fp32 weight and bias.  The eager kernels' offline numbers (tests/compile_sm90.py) see runtime strides;
these see the template's literals, as on the GPU.  Internal Triton API (ASTSource); written for triton 3.6.
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from compile_sm90 import loops, resources, sass  # noqa: E402
from template_sass import compile_source, render_template  # noqa: E402

from inductor_conv.kernels.causal_conv1d import conv_chunks, conv_geometry  # noqa: E402
from inductor_conv.lowerings import causal_conv1d_silu as lowering  # noqa: E402
from inductor_conv.lowerings.heuristics.conv import ConvTile  # noqa: E402

_TYPES = dict(X="*bf16", W="*fp32", BIAS="*fp32", DY="*bf16", PART="*fp32")
_SHOWN = ("LDG", "STG", "MUFU", "FFMA", "FMUL", "FADD", "MOV", "PRMT", "SHFL", "BAR", "LDS", "STS", "LDL", "STL")


def _strides(shape, order):
    """Strides of a dense tensor of `shape` whose dims are laid out innermost first in `order`."""
    strides, acc = [0] * len(shape), 1
    for d in order:
        strides[d] = acc
        acc *= shape[d]
    return strides


def render(direction: str, layout: str, shape, constexprs: dict, n_chunks: int) -> tuple[str, list[str]]:
    B, C, L, K = shape
    x_strides = _strides((B, C, L), (2, 1, 0) if layout == "bcl" else (1, 2, 0))
    y_strides = _strides((B, C, L), (2, 1, 0)) if layout in ("bcl", "blc_t") else x_strides
    tensors = dict(X=((B, C, L), x_strides), W=((C, K), (K, 1)), BIAS=((C,), (1,)), DY=((B, C, L), y_strides),
                   PART=((B * n_chunks, C, K + 1), _strides((B * n_chunks, C, K + 1), (2, 1, 0))))
    out = y_strides if direction == "fwd" else x_strides

    def store_output(indices, val, mask, indent_width=4, val_shape=None):
        offset = " + ".join(f"({i}) * {s}" for i, s in zip(indices, out))
        return f"tl.store(out_ptr0 + {offset}, {val}.to(tl.bfloat16), {mask})"

    return render_template(lowering._load(f"inductor_conv_causal_conv1d_{direction}"), constexprs,
                           lambda n, d: str(tensors[n][1][d]), lambda n, d: str(tensors[n][0][d]), store_output,
                           literal=repr)


def compile_template(direction, layout, shape, tile: ConvTile | None):
    B, C, L, K = shape
    g = conv_geometry(layout, torch.bfloat16, K, direction, tile)
    kwargs = lowering._template_kwargs(g, K, True, None, None, "silu", None if direction == "fwd" else
                                       layout == "blc_t")
    num_warps = kwargs.pop("num_warps")
    kwargs.pop("num_stages")
    _, n_chunks = conv_chunks(B, C, L, g, 132)
    constexprs = dict(kwargs, N_CHUNKS=n_chunks)
    source, names = render(direction, layout, shape, constexprs, n_chunks)
    return compile_source(source, names, _TYPES, num_warps, 1), g, n_chunks


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
    compiled, g, n_chunks = compile_template(direction, layout, shape, tile)
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
