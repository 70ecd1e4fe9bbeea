"""The mask summary kernels (kernels/attn_mask_summary.py) at other program shapes: GPU time of the rows kernel per
(rows a program, keys a step, warps) and of the cols kernel per (queries a step, warps), for a causal (B, 1, S, S)
mask, bool and bf16 additive.  The rows tensor each rows variant writes has its own row granularity and is only
timed; the cols kernel reads the rows summary of the shipped granularity (MASK_ROWS).

    python benchmarks/diagnostics/mask_summary_tiles.py [--shape B,S]
"""
import argparse
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from inductor_conv.kernels import attn_mask_summary as ms  # noqa: E402
from inductor_conv.kernels.attn_common import mask_kind  # noqa: E402

ROWS_VARIANTS = [(16, 512, 4), (16, 256, 4), (16, 1024, 8), (32, 512, 8), (32, 256, 4), (64, 256, 8), (64, 512, 8)]
COLS_VARIANTS = [(256, 8), (128, 4), (512, 8), (256, 4)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4,2048")
    args = parser.parse_args()
    B, S = map(int, args.shape.split(","))
    allowed = torch.ones(S, S, dtype=torch.bool, device="cuda").tril()
    masks = {"bool": allowed.expand(B, 1, S, S),
             "bf16 floor": torch.where(allowed, 0.0, torch.finfo(torch.bfloat16).min).to(torch.bfloat16)
             .expand(B, 1, S, S).contiguous()}
    print(f"# mask summary kernels, {torch.cuda.get_device_name()}, B{B} S{S}, causal (B, 1, S, S); GPU us "
          f"(triton.testing.do_bench); shipped: rows ({int(ms.MASK_ROWS)}, {ms._ROWS_CHUNK}, 4), "
          f"cols ({ms._COLS_CHUNK}, 8)")
    for name, mask in masks.items():
        kind = mask_kind(mask.dtype)
        b_s, h_s = ms.summary_slices(mask)
        ints = (*mask.stride(), h_s, S, S)
        for r, chunk, warps in ROWS_VARIANTS:
            n_r = triton.cdiv(S, r)
            out = torch.empty(b_s, h_s, n_r, 4, device="cuda", dtype=torch.int32)

            def rows():
                ms._mask_rows_kernel[(n_r * b_s * h_s,)](mask, out, *ints, MASK_KIND=kind, CHUNK=chunk, R=r,
                                                         num_warps=warps)

            us = triton.testing.do_bench(rows) * 1e3
            print(f"{name:10s} rows R={r:3d} CHUNK={chunk:5d} warps={warps}: {us:7.1f} us", flush=True)
        rows_sum, _ = ms.mask_summary(mask, False)
        n_c = triton.cdiv(S, int(ms.MASK_TILE))
        cols_out = torch.empty(b_s, h_s, n_c, 4, device="cuda", dtype=torch.int32)
        for chunk, warps in COLS_VARIANTS:
            def cols():
                ms._mask_cols_kernel[(n_c * b_s * h_s,)](mask, rows_sum, cols_out, *ints, MASK_KIND=kind,
                                                         CHUNK=chunk, num_warps=warps)

            print(f"{name:10s} cols CHUNK={chunk:5d} warps={warps}: {triton.testing.do_bench(cols) * 1e3:7.1f} us",
                  flush=True)


if __name__ == "__main__":
    main()
