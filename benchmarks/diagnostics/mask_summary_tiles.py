"""The mask summary kernels (kernels/attn_mask_summary.py, Note [mask summary passes]) at other program shapes, for
a causal (B, 1, S, S) mask, bool and bf16 additive: GPU us of the flags kernel per ([rows, keys] a program, warps),
of the rows kernel per (entries a program, tiles a step) and of the cols kernel per (entries a program, query tiles
a step), then of mask_summary as shipped (rows only: a forward; rows and cols: a backward).

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

FLAG_VARIANTS = [(64, 256, 4), (64, 256, 8), (32, 256, 4), (64, 128, 4), (32, 128, 4), (16, 256, 4), (16, 128, 4),
                 (16, 128, 2), (32, 128, 2), (16, 64, 2), (128, 256, 8), (32, 512, 4)]
ROWS_VARIANTS = [(16, 32), (8, 32), (32, 32), (16, 64), (4, 64)]
COLS_VARIANTS = [(16, 16), (8, 16), (32, 8), (16, 32), (4, 32)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="4,2048")
    args = parser.parse_args()
    B, S = map(int, args.shape.split(","))
    allowed = torch.ones(S, S, dtype=torch.bool, device="cuda").tril()
    masks = {"bool": allowed.expand(B, 1, S, S).contiguous(),
             "bf16 floor": torch.where(allowed, 0.0, torch.finfo(torch.bfloat16).min).to(torch.bfloat16)
             .expand(B, 1, S, S).contiguous()}
    print(f"# mask summary kernels, {torch.cuda.get_device_name()}, B{B} S{S}, causal (B, 1, S, S); GPU us "
          f"(triton.testing.do_bench); shipped: flags {ms._FLAG_SHAPES} (by mask kind), rows "
          f"({ms._ROWS_ENTRIES}, {ms._ROWS_TILES}), cols ({ms._COLS_ENTRIES}, {ms._COLS_TILES})")
    for name, mask in masks.items():
        kind = mask_kind(mask.dtype)
        b_s, h_s = ms.summary_slices(mask)
        ints = (*mask.stride(), h_s, S, S)
        flags = ms.mask_flags(mask)
        n_r, n_c = flags.shape[1:]
        gb = mask.numel() * mask.element_size() / 1e9
        best = None
        for p_rows, p_keys, warps in FLAG_VARIANTS:
            out = torch.empty_like(flags)
            grid = (triton.cdiv(S, p_rows) * triton.cdiv(S, p_keys) * b_s * h_s,)

            def run():
                ms._mask_flags_kernel[grid](mask, out, *ints, MASK_KIND=kind, P_ROWS=p_rows, P_KEYS=p_keys, WIDE=False,
                                            num_warps=warps)

            us = triton.testing.do_bench(run) * 1e3
            assert torch.equal(out, flags)
            print(f"{name:10s} flags [{p_rows:3d}, {p_keys:4d}] warps={warps}: {us:7.1f} us ({gb / us * 1e6:5.0f} GB/s)",
                  flush=True)
            best = min(best or (us, p_rows, p_keys, warps), (us, p_rows, p_keys, warps))
        print(f"best flags kind {kind}: {best[1:]}", flush=True)
        rows = torch.empty(b_s, h_s, n_r, 4, device="cuda", dtype=torch.int32)
        for e, ct in ROWS_VARIANTS:
            def run():
                ms._mask_rows_kernel[(triton.cdiv(n_r, e) * b_s * h_s,)](flags, rows, S, S, E=e, CT=ct)

            print(f"{name:10s} rows E={e:3d} CT={ct:3d}: {triton.testing.do_bench(run) * 1e3:7.1f} us", flush=True)
        cols = torch.empty(b_s, h_s, n_c, 4, device="cuda", dtype=torch.int32)
        for e, qt in COLS_VARIANTS:
            def run():
                ms._mask_cols_kernel[(triton.cdiv(n_c, e) * b_s * h_s,)](flags, rows, cols, S, S, E=e, QT=qt)

            print(f"{name:10s} cols E={e:3d} QT={qt:3d}: {triton.testing.do_bench(run) * 1e3:7.1f} us", flush=True)
        for want_cols in (False, True):
            us = triton.testing.do_bench(lambda: ms.mask_summary(mask, want_cols)) * 1e3
            print(f"{name:10s} mask_summary(cols={want_cols}): {us:7.1f} us", flush=True)


if __name__ == "__main__":
    main()
