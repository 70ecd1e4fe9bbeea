"""Attention with ALiBi as HF BLOOM (baddbmm), HF MPT (a bias buffer, then masked_fill) and HF Falcon-RW (ALiBi
added to the float32 scores before the scale, and again, scaled, inside the mask) write it
(patterns/attention_model_forms.py): the eager attention compiled by default Inductor and with the plugin, and SDPA
given the same bias as a float mask (the eager alternative a user has: no fused ALiBi in SDPA), forward+backward wall
ms (GPU ms beside it) and peak GiB, bf16.

    python benchmarks/attention_alibi.py [--quick]

Shapes: bloom-560m's heads (16, head dim 64) and bloom-7b1's / mpt-7b's (32, head dim 128), HF's causal mask and
ALiBi built once outside the layer (what each decoder layer of the model receives), dropout 0 (the models' default)
and 0.1.
"""
from __future__ import annotations

import itertools
import math

import torch
import torch.nn.functional as F

import inductor_conv
from common import bench, compile_with_plugin, gpu_ms, parse_args, pick, write_table

CASES = [(4, 16, 2048, 64), (2, 32, 2048, 128)]
DROPOUTS = (0.0, 0.1)


def bloom_attention(q, k, v, alibi, mask, p):
    """HF BLOOM's BloomAttention.forward between the projections (transformers 5), q/k/v (B, H, S, D)."""
    B, H, S, D = q.shape
    scores = alibi.baddbmm(batch1=q.reshape(B * H, S, D), batch2=k.reshape(B * H, S, D).transpose(-1, -2),
                           beta=1.0, alpha=1 / math.sqrt(D))
    w = scores.view(B, H, S, -1) + mask
    probs = F.dropout(F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype), p=p, training=True)
    return torch.bmm(probs.view(B * H, S, -1), v.reshape(B * H, S, D))


def mpt_attention(q, k, v, alibi, hidden, p):
    """HF MPT's MptAttention.forward between the projections (transformers 5): alibi (H, 1, S), hidden bool."""
    s = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5 + alibi
    s = s.masked_fill(hidden, torch.finfo(q.dtype).min)
    probs = F.dropout(F.softmax(s.float(), dim=-1).to(v.dtype), p=p, training=True)
    return torch.matmul(probs, v)


def falcon_attention(q, k, v, alibi, mask, p):
    """HF Falcon's FalconAttention.forward with ``config.alibi`` between the projections (transformers 5): alibi
    (B, H, 1, S), mask (B, H, S, S) = ALiBi / sqrt(D) where visible, finfo.min where hidden."""
    s = (q @ k.transpose(-1, -2)).float()
    s = (s + alibi) * (1 / math.sqrt(q.shape[-1]))
    probs = F.dropout(F.softmax(s + mask, dim=-1, dtype=q.dtype), p=p, training=True)
    return probs @ v


def bloom_alibi_and_mask(B, H, S, dtype):
    """HF's build_alibi_tensor (no padding: positions 0..S-1) and its causal mask, 0 / finfo.min."""
    base = 2 ** (-(2 ** -(math.log2(H) - 3)))
    slopes = torch.tensor([base ** (i + 1) for i in range(H)], device="cuda")
    alibi = (slopes[:, None] * torch.arange(S, device="cuda")[None]).expand(B, H, S).reshape(B * H, 1, S)
    i = torch.arange(S, device="cuda")
    zero = torch.zeros((), dtype=dtype, device="cuda")
    mask = torch.where(i[None, :] <= i[:, None], zero, torch.finfo(dtype).min)[None, None].expand(B, 1, S, S)
    return alibi.to(dtype), mask


def main():
    args = parse_args(__doc__)
    lines = ["| model | B H S D | p | impl | fwd+bwd ms | GPU ms | peak GiB | rewrites |",
             "|---|---|---|---|---|---|---|---|"]
    for B, H, S, D in pick(CASES, args):
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
                   for _ in range(3))  # the models' layout: heads split from one projection, then transposed
        alibi, mask = bloom_alibi_and_mask(B, H, S, torch.bfloat16)
        hidden = mask != 0
        bias = alibi.view(B, H, 1, S) + mask  # the float mask SDPA needs, made once outside the timing
        # Falcon's layer mask: HF's masked_fill(alibi / sqrt(D), causal < -1, finfo.min), (B, H, S, S)
        falcon_mask = (alibi.view(B, H, 1, S) / math.sqrt(D)).masked_fill(hidden, torch.finfo(alibi.dtype).min)
        models = {"BLOOM": (bloom_attention, (alibi, mask), lambda o: o.view(B, H, S, D)),
                  "MPT": (mpt_attention, (alibi.view(B, H, 1, S)[0], hidden), lambda o: o),
                  "Falcon-RW": (falcon_attention, (alibi.view(B, H, 1, S), falcon_mask), lambda o: o)}
        do = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
        for (model, (attention, inputs, as_4d)), p in itertools.product(models.items(), DROPOUTS):
            def timed(name, fn, rewrites=""):
                def step():
                    torch.autograd.grad(as_4d(fn()), (q, k, v), do)

                try:
                    torch.cuda.reset_peak_memory_stats()
                    wall, gpu = bench(step), gpu_ms(step)
                    peak = torch.cuda.max_memory_allocated() / 2**30
                    row = f"{wall:.3f} | {gpu:.3f} | {peak:.2f}"
                except Exception as e:  # a failing variant is a row, not the end of the run
                    row = f"failed: {type(e).__name__}: {str(e)[:80]} | - | -"
                line = f"| {model} | {B} {H} {S} {D} | {p} | {name} | {row} | {rewrites} |"
                print(line, flush=True)
                lines.append(line)

            for plugin in (False, True):
                fn = compile_with_plugin(attention, plugin=plugin)
                fn(q, k, v, *inputs, p)
                name = "compiled, plugin" if plugin else "compiled, default Inductor"
                timed(name, lambda: fn(q, k, v, *inputs, p),
                      str(inductor_conv.counters()["attention"]) if plugin else "")
            torch._dynamo.reset()
            if model == "BLOOM":
                timed("SDPA, ALiBi + mask as a float mask",
                      lambda: F.scaled_dot_product_attention(q, k, v, bias, dropout_p=p))
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
