"""Attention with sinks: HF gpt-oss's eager attention (a learned sink logit per head) and HF Inkling 2's (a sink
logit per query row, projected from the hidden states) compiled by default Inductor and with the plugin, the eager
op ``inductor_conv.attention_with_sinks``, and SDPA without sinks (the same shape's speed reference, not the same
math), forward+backward wall ms (GPU ms beside it), bf16.

    python benchmarks/attention_sinks.py [--quick]

Shapes: gpt-oss-20b's heads (64 query, 8 key/value, head dim 64), HF's additive mask as a graph input (what each
decoder layer of a per-layer compiled model receives): causal (the full-attention layers) and a 128-token sliding
window (the sliding layers); the per-row sinks on the same heads, causal.
"""
from __future__ import annotations


import torch
import torch.nn.functional as F

import inductor_conv
from common import bench, compile_with_plugin, gpu_ms, parse_args, pick, repeat_kv, write_table

CASES = [(2, 64, 8, 2048, 64), (1, 64, 8, 8192, 64)]
WINDOWS = (None, 128)


def gpt_oss_attention(q, k, v, mask, sinks):
    """HF gpt-oss's eager_attention_forward (transformers 5), dropout 0."""
    k, v = repeat_kv(q, k, v)
    s = torch.matmul(q, k.transpose(2, 3)) * q.shape[-1] ** -0.5 + mask
    sink = sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[-2], -1)
    c = torch.cat([s, sink], dim=-1)
    c = c - c.max(dim=-1, keepdim=True).values
    probs = F.softmax(c, dim=-1, dtype=c.dtype)[..., :-1]
    return torch.matmul(probs.to(v.dtype), v)


def inkling2_attention(q, k, v, mask, sinks):
    """HF Inkling 2's attention between the projections: sinks (B, Hq, Sq), one logit per query row, joined to the
    scores as a last column, the softmax in float32, the column dropped, dropout 0."""
    k, v = repeat_kv(q, k, v)
    s = torch.matmul(q, k.transpose(2, 3)) * q.shape[-1] ** -0.5 + mask
    c = torch.cat([s, sinks.unsqueeze(-1)], dim=-1).float()
    return torch.matmul(F.softmax(c, dim=-1)[..., :-1].to(v.dtype), v)


def hf_mask(S, window, dtype):
    i = torch.arange(S, device="cuda")
    allowed = i[None, :] <= i[:, None]
    if window:
        allowed &= i[:, None] - i[None, :] < window
    zero = torch.zeros((), dtype=dtype, device="cuda")
    return torch.where(allowed, zero, torch.finfo(dtype).min)[None, None]


def main():
    args = parse_args(__doc__)
    lines = ["| sinks | B Hq/Hkv S D | mask | impl | fwd+bwd ms | GPU ms | rewrites |", "|---|---|---|---|---|---|---|"]
    for B, Hq, Hkv, S, D in pick(CASES, args):
        q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        per_head = torch.randn(Hq, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        per_row = torch.randn(B, Hq, S, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        do = torch.randn_like(q)
        spellings = [("gpt-oss, per head", gpt_oss_attention, per_head, window) for window in WINDOWS]
        spellings.append(("Inkling 2, per query row", inkling2_attention, per_row, None))
        for kind, attention, sinks, window in spellings:
            mask = hf_mask(S, window, torch.bfloat16)

            def timed(name, fn, leaves, rewrites=""):
                def step():
                    torch.autograd.grad(fn(), leaves, do)

                try:
                    wall, gpu = bench(step), gpu_ms(step)
                    row = f"{wall:.3f} | {gpu:.3f}"
                except Exception as e:  # a failing variant is a row, not the end of the run
                    row = f"failed: {type(e).__name__}: {str(e)[:80]} | -"
                masked = f"window {window}" if window else "causal"
                line = f"| {kind} | {B} {Hq}/{Hkv} {S} {D} | {masked} | {name} | {row} | {rewrites} |"
                print(line, flush=True)
                lines.append(line)

            leaves = (q, k, v, sinks)
            for plugin in (False, True):
                fn = compile_with_plugin(attention, plugin=plugin)
                fn(q, k, v, mask, sinks)
                name = "compiled, plugin" if plugin else "compiled, default Inductor"
                timed(name, lambda: fn(q, k, v, mask, sinks), leaves,
                      str(inductor_conv.counters()["attention"]) if plugin else "")
            torch._dynamo.reset()
            if window is None:
                timed("eager op, is_causal", lambda: inductor_conv.attention_with_sinks(
                    q, k, v, sinks, is_causal=True, enable_gqa=True), leaves)
            timed("eager op, mask tensor", lambda: inductor_conv.attention_with_sinks(
                q, k, v, sinks, mask, enable_gqa=True), leaves)
            if window is None and kind.startswith("gpt-oss"):
                timed("SDPA is_causal, no sinks", lambda: F.scaled_dot_product_attention(
                    q, k, v, is_causal=True, enable_gqa=True), (q, k, v))
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
