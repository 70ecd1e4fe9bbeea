"""The compiled attention templates with a causal mask passed as a tensor (HF's bf16 additive mask as a graph
input, mask summaries on): forward+backward wall and per-kernel GPU time at other forward / backward tiles than the
tables', beside the same call compiled with is_causal=True at its own tiles.  Picks the tiles a masked template runs
(heuristics/attention.py); the tile is forced by replacing the lowering's table lookup.

    python benchmarks/diagnostics/mask_template_tiles.py [--p P,...] [--fwd I,...] [--bwd I,...] [--no-causal]

(--fwd / --bwd: indices into FWD / BWD, 0 = the table's tile)
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inductor_conv  # noqa: E402
from common import bench, top_kernels  # noqa: E402
from inductor_conv.heuristics.attention import AttnBwdTile, AttnFwdTile  # noqa: E402

FWD = [None, AttnFwdTile(128, 64, 8, 3), AttnFwdTile(64, 64, 4, 3)]  # None: the table's
BWD = [None, AttnBwdTile(64, 128, 8, 3), AttnBwdTile(64, 128, 8, 2), AttnBwdTile(64, 64, 4, 2),
       AttnBwdTile(64, 64, 4, 2, split=True), AttnBwdTile(64, 128, 8, 2, split=True),
       AttnBwdTile(32, 64, 4, 2, split=True), AttnBwdTile(32, 64, 4, 2),
       # 8 warps: no spills in template_sass.py --p 0.1 --mask 2 (0-32 B of stack, where (64, 64, 4, 2) has 472)
       AttnBwdTile(64, 64, 8, 2), AttnBwdTile(32, 64, 8, 2), AttnBwdTile(32, 128, 8, 2), AttnBwdTile(64, 64, 8, 3)]


def main():
    import torch._inductor.config as inductor_config

    from inductor_conv.lowerings import attention as lowering

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--p", default="0,0.1")
    parser.add_argument("--fwd", default=",".join(map(str, range(len(FWD)))))
    parser.add_argument("--bwd", default=",".join(map(str, range(1, len(BWD)))))
    parser.add_argument("--no-causal", action="store_true", help="leave out the is_causal reference")
    args = parser.parse_args()
    fwd_tiles = [FWD[int(i)] for i in args.fwd.split(",") if i]
    bwd_tiles = [BWD[int(i)] for i in args.bwd.split(",") if i]
    inductor_config.force_disable_caches = True
    inductor_conv.enable()
    B, Hq, Hkv, S, D = 4, 16, 8, 2048, 128
    q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    do = torch.randn_like(q)
    allowed = torch.ones(S, S, dtype=torch.bool, device="cuda").tril()
    mask = torch.where(allowed, 0.0, torch.finfo(torch.bfloat16).min).to(torch.bfloat16).expand(B, 1, S, S)
    table_fwd, table_bwd = lowering.attn_fwd_tile, lowering.attn_bwd_tile
    print(f"# compiled attention, causal mask tensor, {torch.cuda.get_device_name()}, B{B} {Hq}/{Hkv} S{S} D{D}")
    for p in map(float, args.p.split(",")):
        cases = [] if args.no_causal else [(None, None, True)]
        cases += [(f, None, False) for f in fwd_tiles] + [(None, b, False) for b in bwd_tiles]
        for fwd_tile, bwd_tile, causal in cases:
            lowering.attn_fwd_tile = (lambda *a, t=fwd_tile, **kw: t) if fwd_tile else table_fwd
            lowering.attn_bwd_tile = (lambda *a, t=bwd_tile, **kw: t) if bwd_tile else table_bwd
            torch._dynamo.reset()

            @torch.compile(fullgraph=True)
            def attn(q, k, v, mask):
                if causal:
                    return inductor_conv.attention(q, k, v, dropout_p=p, is_causal=True, enable_gqa=True)
                return inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=True)

            def step():
                torch.autograd.grad(attn(q, k, v, mask), (q, k, v), do)

            try:
                step()
                wall = bench(step)
                gpu, top = top_kernels(step)
                form = "is_causal" if causal else "mask"
                print(f"p={p} {form:9s} fwd {fwd_tile or 'table'} bwd {bwd_tile or 'table'}: wall {wall:.3f} ms, "
                      f"GPU {gpu:.3f} | {top}", flush=True)
            except Exception as e:  # a tile that does not compile or fit
                print(f"p={p} fwd {fwd_tile} bwd {bwd_tile}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    lowering.attn_fwd_tile, lowering.attn_bwd_tile = table_fwd, table_bwd


if __name__ == "__main__":
    main()
