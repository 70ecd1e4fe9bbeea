"""Attention whose mask arrives as a tensor, packed documents, and MLA head dims: what each costs against the call
that needs no mask, with config.attention_mask_ranges (Note [mask ranges]) off and on.

    python benchmarks/attention_masks.py [--quick] [--cases 0] [--out results.md]

bf16, causal, dropout p in {0, 0.1}, forward+backward per call. Rows, for one shape (B, Hq/Hkv, S, D):
  op causal            inductor_conv.attention(is_causal=True): the reference every masked row is compared with
  op mask ranges=..    the same causal mask passed as a (B, 1, S, S) bool tensor, ranges off / on
  op packed N ranges=. N documents packed in each row (random boundaries, every document >= 64 tokens): causal
                       within a document, nothing across, as a (B, 1, S, S) bool tensor
  compiled causal      the hand-written HF-style attention compiled with the plugin, causal mask built in the graph
  compiled mask ..     the same with HF's additive mask (0 / finfo.min, bf16) as a graph input: what each decoder
                       layer of a per-layer compiled HF model receives; packed likewise
  sdpa mask            F.scaled_dot_product_attention with the same bool mask (memory-efficient backend): what a
                       user without the plugin runs
  MLA rows             q, k head dim 192, v head dim 128 (DeepSeek-V2/V3, Kimi), causal, op and compiled, beside
                       the D = 128 op row of the same shape
Columns: wall ms (do_bench), GPU ms (profiler), TFLOP/s from wall by the causal count (forward 2·B·Hq·S²·(Dqk + Dv)
halved, forward+backward 3.5x; a packed row is counted as causal too, so its TFLOP/s is its speed-up),
"vs causal" = the op causal row's wall / this row's wall, and for packed rows "tiles" = the fraction of the causal
mask's (128, 64) tiles the packed mask leaves empty: issue 32 asks a packed batch to be faster than the dense causal
mask by at least half that fraction.
"""
from __future__ import annotations

import datetime
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from common import bench, compile_with_plugin, config_patch, gpu_ms, parse_args, pick, repeat_kv, write_table

CASES = [(4, 16, 8, 2048, 128), (2, 16, 8, 8192, 128)]
DOCS = (4, 8)
MLA_DIMS = (192, 128)
TILE = (128, 64)


def hf_attention(q, k, v, mask, p):
    """HF's eager attention: repeat_kv, scaled scores plus the additive mask, fp32 softmax, dropout, @ v."""
    k, v = repeat_kv(q, k, v)
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    if mask is None:
        S = q.shape[-2]
        causal = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    else:
        scores = scores + mask
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    probs = F.dropout(probs, p=p, training=p > 0)
    return probs @ v


def packed_mask(B, S, n_docs, generator):
    """(B, 1, S, S) bool: causal within each of n_docs documents per row (random boundaries, each >= 64 tokens)."""
    rows = []
    for _ in range(B):
        cuts = torch.randperm(S // 64 - 1, generator=generator)[: n_docs - 1].add(1).sort().values * 64
        doc = torch.zeros(S, dtype=torch.long)
        doc[cuts] = 1
        rows.append(doc.cumsum(0))
    doc = torch.stack(rows)
    i = torch.arange(S)
    allowed = (i[None, :] <= i[:, None]) & (doc[:, :, None] == doc[:, None, :])
    return allowed[:, None].cuda()


def empty_tile_fraction(allowed):
    """Fraction of the causal mask's non-empty TILE tiles that `allowed` leaves empty (averaged over the batch)."""
    B, _, S, _ = allowed.shape
    tm, tn = TILE
    tiles = allowed.view(B, S // tm, tm, S // tn, tn).any(dim=(2, 4)).float()
    i = torch.arange(S // tm)[:, None] * tm + tm - 1
    j = torch.arange(S // tn)[None, :] * tn
    causal_tiles = (j <= i).float().sum().item()
    return 1.0 - tiles.sum().item() / (B * causal_tiles)


def additive(allowed, dtype):
    """HF's spelling of a mask: 0 where allowed, finfo(dtype).min elsewhere."""
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.finfo(dtype).min)


def measure(fn, q, k, v):
    do = torch.randn(q.shape[:-1] + (v.shape[-1],), device="cuda", dtype=q.dtype)

    def fwd_bwd():
        torch.autograd.grad(fn(q, k, v), (q, k, v), do)

    return bench(fwd_bwd), gpu_ms(fwd_bwd)


def tflops(ms, B, Hq, S, dqk, dv):
    return 3.5 * 2 * B * Hq * S * S * (dqk + dv) / 2 / (ms * 1e-3) / 1e12


def main():
    args = parse_args(__doc__)
    lines = [f"# attention with mask tensors {datetime.date.today()} on {torch.cuda.get_device_name()}, "
             f"torch {torch.__version__}", "",
             "| B Hq/Hkv S D | p | row | wall ms | GPU ms | TFLOP/s | vs causal | tiles | rewrites |",
             "|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    gen = torch.Generator().manual_seed(0)

    def emit(shape, p, name, ms, gpu, dqk, dv, ref_ms=None, tiles="", rewrites=""):
        B, Hq, Hkv, S, _ = shape
        vs = f"{ref_ms / ms:.2f}" if ref_ms else ""
        lines.append(f"| {B} {Hq}/{Hkv} {S} {dqk}/{dv} | {p} | {name} | {ms:.3f} | {gpu:.3f} | "
                     f"{tflops(ms, B, Hq, S, dqk, dv):.0f} | {vs} | {tiles} | {rewrites} |")
        print(lines[-1], flush=True)

    def guarded(shape, p, name, thunk, dqk, dv, ref=None, tiles="", counted=False):
        try:
            ms, gpu = thunk()
        except Exception as e:  # one failing row must not hide the others
            lines.append(f"| {shape} | {p} | {name} | n/a ({type(e).__name__}: {str(e)[:80]}) | | | | | |")
            print(lines[-1], flush=True)
            return None
        rewrites = str(inductor_conv.counters()["attention"]) if counted else ""
        emit(shape, p, name, ms, gpu, dqk, dv, ref, tiles, rewrites)
        return ms

    def compiled(fn, overrides):
        def run():
            with config_patch(overrides):
                compiled_fn = compile_with_plugin(fn, plugin=True)
                inductor_conv.reset_counters()
                result = measure(compiled_fn, q, k, v)
            inductor_conv.disable()
            return result
        return run

    with fx_graph_cache_disabled():
        for shape in pick(CASES, args):
            B, Hq, Hkv, S, D = shape
            causal = torch.ones(S, S, dtype=torch.bool, device="cuda").tril().expand(B, 1, S, S)
            packed = {n: packed_mask(B, S, n, gen) for n in DOCS}
            for p in (0.0, 0.1):
                q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                        for _ in range(2))
                op = inductor_conv.attention
                ref = guarded(shape, p, "op causal", lambda: measure(
                    lambda q, k, v: op(q, k, v, dropout_p=p, is_causal=True, enable_gqa=True), q, k, v), D, D)
                for ranges in (False, True):
                    with config_patch({"attention_mask_ranges": ranges}):
                        guarded(shape, p, f"op mask ranges={ranges}", lambda: measure(
                            lambda q, k, v: op(q, k, v, attn_mask=causal, dropout_p=p, enable_gqa=True), q, k, v),
                            D, D, ref)
                        for n, allowed in packed.items():
                            guarded(shape, p, f"op packed {n} ranges={ranges}", lambda: measure(
                                lambda q, k, v: op(q, k, v, attn_mask=allowed, dropout_p=p, enable_gqa=True),
                                q, k, v), D, D, ref, tiles=f"{empty_tile_fraction(allowed):.2f}")
                with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                    guarded(shape, p, "sdpa mask", lambda: measure(
                        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=causal, dropout_p=p,
                                                                       enable_gqa=True), q, k, v), D, D, ref)
                guarded(shape, p, "compiled causal", compiled(lambda q, k, v: hf_attention(q, k, v, None, p), {}),
                        D, D, ref, counted=True)
                for ranges in (False, True):
                    for name, allowed in (("mask", causal), *((f"packed {n}", m) for n, m in packed.items())):
                        hf_mask = additive(allowed, q.dtype)
                        guarded(shape, p, f"compiled {name} ranges={ranges}",
                                compiled(lambda q, k, v: hf_attention(q, k, v, hf_mask, p),
                                         {"attention_mask_ranges": ranges}), D, D, ref,
                                tiles=f"{empty_tile_fraction(allowed):.2f}" if name != "mask" else "",
                                counted=True)
                # MLA: q, k head dim 192, v 128, against the D = 128 op row above (same B, heads, S)
                dqk, dv = MLA_DIMS
                q = torch.randn(B, Hq, S, dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                k = torch.randn(B, Hq, S, dqk, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                v = torch.randn(B, Hq, S, dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                guarded(shape, p, "MLA op causal", lambda: measure(
                    lambda q, k, v: op(q, k, v, dropout_p=p, is_causal=True), q, k, v), dqk, dv)
                guarded(shape, p, "MLA compiled causal", compiled(
                    lambda q, k, v: hf_attention(q, k, v, None, p), {}), dqk, dv,
                    counted=True)
                with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                    guarded(shape, p, "MLA sdpa causal", lambda: measure(
                        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True),
                        q, k, v), dqk, dv)
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
