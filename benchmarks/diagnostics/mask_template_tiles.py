"""The compiled attention templates with a causal mask passed as a tensor (HF's bf16 additive mask as a graph
input, mask summaries on): forward+backward wall and per-kernel GPU time at other forward / backward tiles than the
tables', beside the same call compiled with is_causal=True at its own tiles.  Picks the tiles a masked template runs
(heuristics/attention.py); the tile is forced by replacing the lowering's table lookup.

    python benchmarks/diagnostics/mask_template_tiles.py [--p P,...] [--fwd I,...] [--bwd I,...] [--no-causal]
        [--groups default,0,...] [--shape B,HQ,HKV,S,D] [--softcap CAP] [--window W] [--causal-bwd]
        [--configs "default;K=V,..."]
    python benchmarks/diagnostics/mask_template_tiles.py --mla [--p P,...] [--fwd I,...] [--bwd I,...]

(--fwd / --bwd: indices into FWD / BWD, or MLA_FWD / MLA_BWD with --mla, 0 = the table's tile; --groups: the mask
rows again at each config.attention_causal_group, the forward's launch order; --shape: default 4,16,8,2048,128;
--softcap: softcapped_attention with this cap; --window: the mask also hides keys W or more behind the query, as
Gemma 2's sliding-window layers, and the is_causal row is left out; --causal-bwd: the is_causal call at each --bwd
tile too (its own table's tile otherwise); --configs: the mask rows again under each
semicolon-separated set of inductor_conv.config assignments, e.g. "default;attention_row_offsets=0")
--mla: DeepSeek's MLA head dims (q/k 192, v 128, Note [split head dim]), B4 H16 S2048 is_causal, at each tile,
after the same call at head dim 128 (its table tiles): the split templates' tiles against the D128 template's
throughput per FLOP.
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inductor_conv  # noqa: E402
from common import bench, config_patch, impl_settings, top_kernels  # noqa: E402
from inductor_conv.heuristics.attention import AttnBwdTile, AttnFwdTile  # noqa: E402

# None: the table's.  mask_stages=2: the mask-reading loop on two stages, which keeps (64, 64, 4, 3) at the shared
# memory of the causal template (114688 bytes, two programs an SM; 131072 with three stages, one), Note [mask loop
# stages]
FWD = [None, AttnFwdTile(128, 64, 8, 3), AttnFwdTile(64, 64, 4, 3), AttnFwdTile(64, 64, 4, 3, mask_stages=2),
       AttnFwdTile(128, 64, 8, 3, mask_stages=2)]
BWD = [None, AttnBwdTile(64, 128, 8, 3), AttnBwdTile(64, 128, 8, 2), AttnBwdTile(64, 64, 4, 2),
       AttnBwdTile(64, 64, 4, 2, split=True), AttnBwdTile(64, 128, 8, 2, split=True),
       AttnBwdTile(32, 64, 4, 2, split=True), AttnBwdTile(32, 64, 4, 2),
       # 8 warps: no spills in template_sass.py --p 0.1 --mask 2 (0-32 B of stack, where (64, 64, 4, 2) has 472)
       AttnBwdTile(64, 64, 8, 2), AttnBwdTile(32, 64, 8, 2), AttnBwdTile(32, 128, 8, 2), AttnBwdTile(64, 64, 8, 3),
       # narrow query tiles: no spills in template_sass.py (head dim 128 with --p 0.1 --mask 2; head dim 256 with
       # --softcap 50, 8 warps), where the tables' tiles spill
       AttnBwdTile(32, 64, 4, 3), AttnBwdTile(16, 64, 4, 2), AttnBwdTile(16, 64, 4, 3), AttnBwdTile(16, 64, 8, 2),
       AttnBwdTile(16, 64, 8, 3), AttnBwdTile(32, 64, 8, 3),
       # dK and dV in programs of their own at 8 warps: no spills in template_sass.py at head dim 256 (--softcap 50
       # --mask 2), where the one-program (64, 64, 8, 2) reloads 22-41 values a tile; yet (64, 64, 8, 2, split) ran
       # 1.2x slower than it (CUDA_BWD_MASKED's provenance)
       AttnBwdTile(64, 64, 8, 2, split=True), AttnBwdTile(32, 64, 8, 2, split=True),
       AttnBwdTile(64, 64, 8, 3, split=True), AttnBwdTile(64, 128, 8, 2, split=True),
       # 4 warps, split, 32-query steps: at head dim 256 (--softcap 50 --mask 2) 0-22 reloads a tile in template_sass.py,
       # the dQ loops included (about 50 at the split (64, 64, 4, 2)); (32, 64, 4, 2, split) is index 6
       AttnBwdTile(32, 64, 4, 3, split=True),
       # split, head dim 256 (--softcap 50, causal --masked-first or --mask 2), template_sass.py: 32-query steps on
       # four stages (0-24 reloads a tile, one program an SM); 16-query steps, no reloads in any loop, on three stages
       # (114944 bytes causal: two programs an SM; 119040 masked: one) and on two (98432 / 100480 bytes: two)
       AttnBwdTile(32, 64, 4, 4, split=True), AttnBwdTile(16, 64, 4, 3, split=True),
       AttnBwdTile(16, 64, 4, 2, split=True),
       # (16, 64, 4, 3, split) with its mask loops on two stages: 114944 bytes over a mask too (Note [mask loop stages])
       AttnBwdTile(16, 64, 4, 3, split=True, mask_stages=2)]
# --mla: the split head dim's candidates (the eager sweep's in docs/benchmarks.md, plus 8-warp and 3-stage ones)
MLA_FWD = [None, AttnFwdTile(128, 64, 8, 2), AttnFwdTile(128, 64, 8, 3), AttnFwdTile(128, 128, 8, 2),
           AttnFwdTile(64, 64, 4, 3), AttnFwdTile(64, 128, 4, 2)]
MLA_BWD = [None, AttnBwdTile(32, 128, 8, 2), AttnBwdTile(64, 128, 8, 2, split=True), AttnBwdTile(32, 64, 4, 3),
           AttnBwdTile(32, 64, 8, 2), AttnBwdTile(64, 64, 8, 2), AttnBwdTile(64, 64, 4, 2), AttnBwdTile(32, 128, 4, 2),
           AttnBwdTile(16, 64, 4, 2)]


def _tiles(indices, tiles, first):
    """The tiles at the comma-separated `indices`, or tiles[first:] when None."""
    if indices is None:
        return tiles[first:]
    return [tiles[int(i)] for i in indices.split(",") if i]


def main():
    import torch._inductor.config as inductor_config

    from inductor_conv.lowerings import attention as lowering

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--p", default="0,0.1")
    parser.add_argument("--fwd", default=None, help="default: every forward tile")
    parser.add_argument("--bwd", default=None, help="default: every backward tile but the table's")
    parser.add_argument("--no-causal", action="store_true", help="leave out the is_causal reference")
    parser.add_argument("--causal-bwd", action="store_true", help="the is_causal call at each --bwd tile as well")
    parser.add_argument("--mla", action="store_true", help="q/k head dim 192, v 128, is_causal (see above)")
    parser.add_argument("--groups", default="default",
                        help="config.attention_causal_group values for the mask rows (default: the lowering's)")
    parser.add_argument("--shape", default="4,16,8,2048,128", help="B,HQ,HKV,S,D")
    parser.add_argument("--softcap", type=float, default=0.0, help="logit soft-capping (0: none)")
    parser.add_argument("--window", type=int, default=0, help="sliding window of the mask (0: causal only)")
    parser.add_argument("--configs", default="default", help="config assignments per mask row set (see above)")
    args = parser.parse_args()
    inductor_config.force_disable_caches = True
    inductor_conv.enable()
    if args.mla:
        return mla(args, lowering)
    fwd_tiles, bwd_tiles = _tiles(args.fwd, FWD, 0), _tiles(args.bwd, BWD, 1)
    B, Hq, Hkv, S, D = map(int, args.shape.split(","))
    q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    do = torch.randn_like(q)
    allowed = torch.ones(S, S, dtype=torch.bool, device="cuda").tril()
    if args.window:
        allowed = allowed & ~torch.ones_like(allowed).tril(-args.window)
    mask = torch.where(allowed, 0.0, torch.finfo(torch.bfloat16).min).to(torch.bfloat16).expand(B, 1, S, S)
    table_fwd, table_bwd = lowering.attn_fwd_tile, lowering.attn_bwd_tile
    print(f"# compiled attention, causal mask tensor, {torch.cuda.get_device_name()}, B{B} {Hq}/{Hkv} S{S} D{D}"
          f" softcap {args.softcap} window {args.window}")
    for conf in args.configs.split(";"):
        _overrides(conf, "default")  # unknown switches stop here, before any compile
    for p in map(float, args.p.split(",")):
        cases = [] if args.no_causal or args.window else [(None, None, True, "default", "default")]
        if args.causal_bwd and not args.window:  # the table's tile (None) only where no reference row has it
            cases += [(None, b, True, "default", "default") for b in bwd_tiles if b is not None or args.no_causal]
        for group in args.groups.split(","):
            for conf in args.configs.split(";"):
                cases += [(f, None, False, group, conf) for f in fwd_tiles]
                cases += [(None, b, False, group, conf) for b in bwd_tiles]
        ref = None
        for fwd_tile, bwd_tile, causal, group, conf in cases:
            lowering.attn_fwd_tile = (lambda *a, t=fwd_tile, **kw: t) if fwd_tile else table_fwd
            lowering.attn_bwd_tile = (lambda *a, t=bwd_tile, **kw: t) if bwd_tile else table_bwd
            torch._dynamo.reset()

            @torch.compile(fullgraph=True)
            def attn(q, k, v, mask):
                if args.softcap:
                    return inductor_conv.softcapped_attention(q, k, v, args.softcap, attn_mask=None if causal else mask,
                                                              dropout_p=p, is_causal=causal, enable_gqa=True)
                if causal:
                    return inductor_conv.attention(q, k, v, dropout_p=p, is_causal=True, enable_gqa=True)
                return inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=p, enable_gqa=True)

            def step():
                torch.autograd.grad(attn(q, k, v, mask), (q, k, v), do)

            try:
                with config_patch(_overrides(conf, group)):  # read as the graphs compile, at the first calls
                    torch.manual_seed(0)  # dropout replays from the seed and the logical index: every tile, same keep
                    grads = torch.autograd.grad(attn(q, k, v, mask), (q, k, v), do)
                    if ref is None:
                        ref = grads
                    # against the first case of this p (every case computes the same function; tiles change only the
                    # order of the sums)
                    err = max(((g - r).abs().max() / r.abs().max()).item() for g, r in zip(grads, ref))
                    wall = bench(step)
                    gpu, top = top_kernels(step)
                form = "is_causal" if causal else "mask" if group == "default" else f"mask g{group}"
                form += "" if conf == "default" else f" [{conf}]"
                print(f"p={p} {form:9s} fwd {fwd_tile or 'table'} bwd {bwd_tile or 'table'}: wall {wall:.3f} ms, "
                      f"GPU {gpu:.3f}, grads vs first {err:.1e} | {top}", flush=True)
            except Exception as e:  # a tile that does not compile or fit
                print(f"p={p} fwd {fwd_tile} bwd {bwd_tile}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    lowering.attn_fwd_tile, lowering.attn_bwd_tile = table_fwd, table_bwd


def _overrides(conf: str, group: str) -> dict:
    """The inductor_conv.config values of one row: --configs' assignments ("default": none) and --groups' causal
    group ("default": the lowering's)."""
    _, switches, unknown = impl_settings(":" + ("" if conf == "default" else conf))
    if unknown:
        raise SystemExit(f"--configs: not inductor_conv.config switches: {sorted(unknown)}")
    return switches | {"attention_causal_group": None if group == "default" else int(group)}


def mla(args, lowering):
    """--mla: forward+backward TFLOP/s (wall, GPU) of the compiled is_causal call at head dim 128, then at q/k 192 /
    v 128 with each forward / backward tile (one forced at a time, the other the table's)."""
    fwd_tiles, bwd_tiles = _tiles(args.fwd, MLA_FWD, 0), _tiles(args.bwd, MLA_BWD, 1)
    B, H, S = 4, 16, 2048
    table_fwd, table_bwd = lowering.attn_fwd_tile, lowering.attn_bwd_tile
    print(f"# compiled attention, is_causal, {torch.cuda.get_device_name()}, B{B} H{H} S{S}, TFLOP/s wall / GPU")
    for p in map(float, args.p.split(",")):
        cases = [(128, 128, None, None)] + [(192, 128, f, None) for f in fwd_tiles]
        cases += [(192, 128, None, b) for b in bwd_tiles]
        for dqk, dv, fwd_tile, bwd_tile in cases:
            lowering.attn_fwd_tile = (lambda *a, t=fwd_tile, **kw: t) if fwd_tile else table_fwd
            lowering.attn_bwd_tile = (lambda *a, t=bwd_tile, **kw: t) if bwd_tile else table_bwd
            torch._dynamo.reset()
            q = torch.randn(B, H, S, dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            k = torch.randn(B, H, S, dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            v = torch.randn(B, H, S, dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            do = torch.randn(B, H, S, dv, device="cuda", dtype=torch.bfloat16)

            @torch.compile(fullgraph=True)
            def attn(q, k, v):
                return inductor_conv.attention(q, k, v, dropout_p=p, is_causal=True)

            def step():
                torch.autograd.grad(attn(q, k, v), (q, k, v), do)

            # causal forward+backward: 3.5 passes of 2·S²/2 multiply-adds over dqk + dv per (b, h)
            flop = 3.5 * 2 * B * H * S * S * (dqk + dv) / 2
            try:
                step()
                wall = bench(step)
                gpu, top = top_kernels(step)
                print(f"p={p} {dqk}/{dv} fwd {fwd_tile or 'table'} bwd {bwd_tile or 'table'}: "
                      f"{flop / wall / 1e9:.0f} / {flop / gpu / 1e9:.0f} TFLOP/s (wall {wall:.3f} ms, GPU {gpu:.3f})"
                      f" | {top}", flush=True)
            except Exception as e:  # a tile that does not compile or fit
                print(f"p={p} {dqk}/{dv} fwd {fwd_tile} bwd {bwd_tile}: {type(e).__name__}: {str(e)[:200]}",
                      flush=True)
    lowering.attn_fwd_tile, lowering.attn_bwd_tile = table_fwd, table_bwd


if __name__ == "__main__":
    main()
