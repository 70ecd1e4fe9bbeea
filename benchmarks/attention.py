"""Attention on the GPU: ours vs SDPA backends, FlexAttention and Inductor default, TFLOP/s and memory held.

    python benchmarks/attention.py [--quick] [--out results.md]

Cases: bf16 (B, H, S, D) = (4, 16, 2048, 128), (2, 16, 8192, 128), (8, 16, 1024, 64), causal and not, dropout
p in {0, 0.1}, and GQA 32/8 at (4, ., 2048, 128). Implementations:
  ours-op        inductor_conv.attention called eagerly
  ours-compiled  the hand-written eager attention below compiled with inductor_conv enabled (default config:
                 cuDNN's forward and backward where config.attention_cudnn admits the form, else our templates)
  ours-templates the same with config.attention_cudnn = False (our templates everywhere; p = 0 only: the
                 forms with dropout run our templates anyway)
  inductor       the same eager code compiled by plain Inductor (its own fuse_attention may rewrite it to SDPA)
  sdpa-flash / sdpa-cudnn / sdpa-efficient   F.scaled_dot_product_attention pinned to one backend
  flex           FlexAttention compiled (p = 0 only: it has no dropout)
FLOPs: forward 4·B·H·S²·D (half when causal), forward+backward 3.5× that. TFLOP/s from wall time (do_bench) and,
in the GPU columns, from the summed kernel time (torch.profiler): a compiled forward+backward at B4 S2048 costs
about 1 ms of CPU (Dynamo, AOTAutograd, autograd), so a fast kernel can be CPU-bound in wall time. "held" = device
memory a forward leaves allocated besides its output, in units of |q|.
"""
from __future__ import annotations

import contextlib
import datetime
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from common import (attention_tflops, bench, compile_with_plugin, config_patch, gpu_ms, held_bytes, parse_args, pick,
                    pick_impls, repeat_kv, write_table)

CASES = [(4, 16, 16, 2048, 128), (2, 16, 16, 8192, 128), (8, 16, 16, 1024, 64), (4, 32, 8, 2048, 128)]


def eager_attention(q, k, v, causal: bool, p: float):
    """Hand-written attention in the HF style: repeat_kv for GQA, scaled scores, causal mask, softmax, dropout."""
    k, v = repeat_kv(q, k, v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        S = q.shape[-2]
        mask = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    probs = F.dropout(probs, p=p, training=p > 0)
    return probs @ v


def sdpa(backend):
    def run(q, k, v, causal, p):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal, enable_gqa=True)

    return run


def flex(score_mod=None):
    """FlexAttention compiled, with a causal block mask built once per length; score_mod as flex_attention's."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    compiled_flex = torch.compile(flex_attention, dynamic=False)
    block_masks = {}  # built once per length, outside the timed region, as users do

    def run(q, k, v, causal, p):
        if p > 0:
            raise NotImplementedError("FlexAttention has no dropout")
        block_mask = None
        if causal:
            S = q.shape[-2]
            if S not in block_masks:
                block_masks[S] = create_block_mask(lambda b, h, i, j: j <= i, None, None, S, S, device=q.device)
            block_mask = block_masks[S]
        return compiled_flex(q, k, v, score_mod=score_mod, block_mask=block_mask, enable_gqa=True)

    return run


def implementations():
    # Cheapest and most important first: a run cut short by its time limit still has the key rows.
    impls = {
        "ours-op": lambda q, k, v, causal, p: inductor_conv.attention(
            q, k, v, dropout_p=p, is_causal=causal, enable_gqa=True
        ),
        "ours-compiled": "compiled-on",
        "ours-templates": ("compiled-on", {"attention_cudnn": False}),
        "sdpa-flash": sdpa(SDPBackend.FLASH_ATTENTION),
        "sdpa-cudnn": sdpa(SDPBackend.CUDNN_ATTENTION),
    }
    with contextlib.suppress(Exception):
        impls["flex"] = flex()
    impls["inductor"] = "compiled-off"
    impls["sdpa-efficient"] = sdpa(SDPBackend.EFFICIENT_ATTENTION)
    return impls


def measure(fn, shape, causal, p):
    B, Hq, Hkv, S, D = shape
    dtype = torch.bfloat16
    q = torch.randn(B, Hq, S, D, device="cuda", dtype=dtype, requires_grad=True)
    k = torch.randn(B, Hkv, S, D, device="cuda", dtype=dtype, requires_grad=True)
    v = torch.randn(B, Hkv, S, D, device="cuda", dtype=dtype, requires_grad=True)
    with torch.no_grad():
        fwd_ms = bench(lambda: fn(q, k, v, causal, p))
    do = torch.randn(B, Hq, S, D, device="cuda", dtype=dtype)

    def fwd_bwd():
        out = fn(q, k, v, causal, p)
        torch.autograd.grad(out, (q, k, v), do)

    fb_ms = bench(fwd_bwd)
    with torch.no_grad():
        gpu_fwd_ms = gpu_ms(lambda: fn(q, k, v, causal, p))
    gpu_fb_ms = gpu_ms(fwd_bwd)
    held = held_bytes(lambda: fn(q, k, v, causal, p))
    tflops = [attention_tflops(ms, B, Hq, S, D, causal, backward=bwd)
              for ms, bwd in ((fwd_ms, False), (fb_ms, True), (gpu_fwd_ms, False), (gpu_fb_ms, True))]
    return (*tflops, held / (q.numel() * q.element_size()))


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    lines = [
        f"# attention benchmark {datetime.date.today()} on {torch.cuda.get_device_name()}, torch {torch.__version__}",
        "",
        "| B Hq/Hkv S D | causal | p | impl | fwd TFLOP/s | fwd+bwd TFLOP/s | GPU fwd | GPU fwd+bwd | held (×|q|) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    cases = pick(CASES, args)
    wanted = pick_impls(implementations(), args)
    rewrites = {}
    with fx_graph_cache_disabled():
        for shape in cases:
            for p in (0.0, 0.1):
                for causal in (False, True):
                    for name, fn in implementations().items():
                        if name not in wanted:
                            continue
                        overrides = {}
                        if isinstance(fn, tuple):
                            if p > 0:
                                continue  # the config variants only change the p = 0 forms
                            fn, overrides = fn
                        if name == "flex" and p > 0:
                            continue  # FlexAttention has no dropout
                        if isinstance(fn, str):
                            fn = compile_with_plugin(eager_attention, plugin=fn == "compiled-on")
                        try:
                            with config_patch(overrides):  # read when the first call compiles
                                fwd, fb, gpu_fwd, gpu_fb, held = measure(fn, shape, causal, p)
                        except Exception as e:  # one failing implementation must not hide the others
                            inductor_conv.disable()
                            msg = f"{type(e).__name__}: {str(e)[:80]}"
                            lines.append(f"| {shape} | {causal} | {p} | {name} | n/a ({msg}) | | | | |")
                            print(lines[-1], flush=True)
                            continue
                        if name.startswith("ours-") and name != "ours-op":
                            rewrites[(shape, causal, p, name)] = inductor_conv.counters()["attention"]
                        inductor_conv.disable()  # every other implementation compiles without our pass
                        B, Hq, Hkv, S, D = shape
                        lines.append(
                            f"| {B} {Hq}/{Hkv} {S} {D} | {causal} | {p} | {name} | {fwd:.0f} | {fb:.0f} | "
                            f"{gpu_fwd:.0f} | {gpu_fb:.0f} | {held:.2f} |"
                        )
                        print(lines[-1], flush=True)
    inductor_conv.disable()
    lines += ["", f"rewrites by ours-compiled (one per compiled graph: inference + training = 2 per case): {rewrites}"]
    print(lines[-1])
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
