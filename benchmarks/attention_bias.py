"""Attention with a trained bias (its gradient comes from dS) as HF T5, DeBERTa-v3 and SAM write it: the eager
attention compiled by default Inductor and with the plugin, forward+backward (gradients of q, k, v and the bias) wall
ms (GPU ms beside it) and peak GiB, bf16.

    python benchmarks/attention_bias.py [--quick] [--impls Parakeet] [--profile]

--impls: the models whose attention runs; --profile: each row's top kernels by GPU time printed under it.

The bias is a leaf tensor of the shape each model adds (its own computation, the same in both variants, is left
out): T5's relative position bias (1, H, S, S), broadcast over the batch, plus a padding mask, no scale, fp32 softmax;
DeBERTa-v3's disentangled bias (B·H, S, S) on (B·H, S, D) heads with the keys divided by sqrt(3·D) and a
(B, 1, S, S) bool mask; SAM's decomposed relative positions (B·H, N, N) on 3-D heads through ``@``, fp32 softmax.
Parakeet's (NVIDIA FastConformer's) full (B, H, S, S) bias (the shifted relative-position term, computed from q in
the model, a leaf here), its eager_attention_forward (scale, bias, fp32 softmax), no padding.
Shapes: t5-base / deberta-v3-base (12 heads of 64, S 512, B 8), SAM ViT-B's global attention (12 heads of 64,
64 x 64 = 4096 patches, B 1) and Parakeet-CTC-0.6b (8 heads of 128, 250 frames = 20 s of audio, B 16; the same with 16
heads of 64, and 1000 frames); dropout 0.1 where the model has it in training (T5, DeBERTa, Parakeet) and 0.
"""
from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

import inductor_conv
from common import bench, compile_with_plugin, gpu_ms, parse_args, pick, pick_impls, top_kernels, write_table

CASES = [(8, 12, 512, 64)]
SAM = (1, 12, 4096, 64)
PARAKEET = [(16, 8, 250, 128), (16, 16, 250, 64), (4, 8, 1000, 128)]


def t5_attention(q, k, v, bias, mask, p):
    """HF T5's eager_attention_forward (transformers 5) between the projections: q/k/v (B, H, S, D)."""
    scores = torch.matmul(q, k.transpose(2, 3)) * 1.0 + bias + mask
    w = F.dropout(F.softmax(scores.float(), dim=-1).type_as(scores), p=p, training=True)
    return torch.matmul(w, v)


def deberta_attention(q, k, v, bias, mask, p):
    """HF DeBERTa-v2's DisentangledSelfAttention.forward between the projections: q/k/v (B·H, S, D), bias
    (B·H, S, S), mask (B, 1, S, S) bool (True = attend)."""
    H, S, D = bias.shape[0] // mask.shape[0], q.shape[1], q.shape[2]
    scale = torch.sqrt(torch.tensor(D, dtype=torch.float) * 3)
    s = torch.bmm(q, k.transpose(-1, -2) / scale.to(dtype=q.dtype)) + bias
    s = s.view(-1, H, S, S).masked_fill(~mask, torch.finfo(q.dtype).min)
    w = F.dropout(F.softmax(s, dim=-1), p=p, training=True)
    return torch.bmm(w.view(-1, S, S), v)


def sam_attention(q, k, v, bias, mask, p):
    """HF SAM's SamVisionAttention.forward between the projections: q/k/v (B·H, N, D), bias (B·H, N, N)."""
    w = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1) + bias
    w = F.dropout(F.softmax(w, dtype=torch.float32, dim=-1).to(q.dtype), p=p, training=True)
    return w @ v


def parakeet_attention(q, k, v, bias, mask, p):
    """HF Parakeet's eager_attention_forward between the projections: q/k/v (B, H, S, D) (q with pos_bias_u added),
    bias (B, H, S, S) the scaled relative-position term passed as the attention mask."""
    w = torch.matmul(q, k.transpose(2, 3)) * q.shape[-1] ** -0.5 + bias
    w = F.dropout(F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), p=p, training=True)
    return torch.matmul(w, v)


def _inputs(model, B, H, S, D):
    """q, k, v in the model's layout, its bias (a leaf that requires grad) and mask."""
    dev, dt = "cuda", torch.bfloat16
    if model == "Parakeet":
        q, k, v = (torch.randn(B, S, H, D, device=dev, dtype=dt).transpose(1, 2) for _ in range(3))
        return [x.requires_grad_() for x in (q, k, v, torch.randn(B, H, S, S, device=dev, dtype=dt))], None
    if model == "T5":
        q, k, v = (torch.randn(B, S, H, D, device=dev, dtype=dt).transpose(1, 2) for _ in range(3))
        bias = torch.randn(1, H, S, S, device=dev, dtype=dt)
        mask = torch.zeros(B, 1, 1, S, device=dev, dtype=dt)
        mask[0, ..., -S // 4:] = torch.finfo(dt).min  # one row's last quarter is padding
    else:
        q, k, v = (torch.randn(B * H, S, D, device=dev, dtype=dt) for _ in range(3))
        bias = torch.randn(B * H, S, S, device=dev, dtype=dt)
        keep = torch.ones(B, S, dtype=torch.bool, device=dev)
        keep[0, -S // 4:] = False
        mask = keep[:, None, :, None] & keep[:, None, None, :]  # DeBERTa's token pairs
    return [x.requires_grad_() for x in (q, k, v, bias)], mask


def main():
    args = parse_args(__doc__)
    lines = ["| model | B H S D | p | impl | fwd+bwd ms | GPU ms | peak GiB | rewrites |",
             "|---|---|---|---|---|---|---|---|"]
    runs = [(m, shape, p) for shape in pick(CASES, args)
            for m, p in itertools.product(("T5", "DeBERTa-v3"), (0.0, 0.1))]
    runs += [("SAM", SAM, 0.0)]
    runs += [("Parakeet", shape, p) for shape in pick(PARAKEET, args) for p in (0.0, 0.1)]
    attention = {"T5": t5_attention, "DeBERTa-v3": deberta_attention, "SAM": sam_attention,
                 "Parakeet": parakeet_attention}
    models = pick_impls(attention, args)
    runs = [run for run in runs if run[0] in models]
    for model, (B, H, S, D), p in runs:
        (q, k, v, bias), mask = _inputs(model, B, H, S, D)
        for plugin in (False, True):
            fn = compile_with_plugin(attention[model], plugin=plugin)
            out = fn(q, k, v, bias, mask, p)
            do = torch.randn_like(out)

            def step():
                torch.autograd.grad(fn(q, k, v, bias, mask, p), (q, k, v, bias), do)

            try:
                step()
                torch.cuda.reset_peak_memory_stats()
                wall, gpu = bench(step), gpu_ms(step)
                row = f"{wall:.3f} | {gpu:.3f} | {torch.cuda.max_memory_allocated() / 2**30:.2f}"
            except Exception as e:  # a failing variant is a row, not the end of the run
                row = f"failed: {type(e).__name__}: {str(e)[:80]} | - | -"
            name = "compiled, plugin" if plugin else "compiled, default Inductor"
            rewrites = str(inductor_conv.counters()["attention"]) if plugin else ""
            line = f"| {model} | {B} {H} {S} {D} | {p} | {name} | {row} | {rewrites} |"
            print(line, flush=True)
            lines.append(line)
            if args.profile and not row.startswith("failed"):
                print("    top kernels:", top_kernels(step, top=8)[1], flush=True)
        torch._dynamo.reset()
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
