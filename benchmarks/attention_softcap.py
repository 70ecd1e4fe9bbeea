"""Soft-capped attention (Gemma 2) on the GPU: ours vs FlexAttention and Inductor default, TFLOP/s and memory held.

    python benchmarks/attention_softcap.py [--quick] [--cases 0,1] [--impls ...] [--out results.md]

Cases: bf16, causal, attn_logit_softcapping 50, Gemma 2's head layouts: (B, Hq/Hkv, S, D) = (2, 16/8, 4096, 256)
(Gemma 2 9B), (4, 8/4, 2048, 256) (2B) and (4, 16/8, 2048, 128) (the head dim of the other benchmarks); dropout
p in {0, 0.1}. Implementations:
  ours-op        inductor_conv.softcapped_attention(q, k, v, 50, is_causal=True, ...) called eagerly
  ours-compiled  HF Gemma 2's eager attention (below) compiled with inductor_conv enabled
  inductor       the same eager code compiled by plain Inductor (no attention rewrite knows soft-capping)
  flex           FlexAttention compiled with a tanh score_mod and a causal block mask (p = 0 only)
  sdpa-flash     SDPA's flash backend *without* soft-capping (it has none): the cost of the rest of the math
Counting as benchmarks/attention.py (causal: half of 4·B·H·S²·D forward, 3.5× for forward+backward).
"""
from __future__ import annotations

import datetime

import torch
import torch.nn.functional as F

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from attention import flex, measure, sdpa
from common import compile_with_plugin, parse_args, pick, pick_impls, repeat_kv, write_table
from torch.nn.attention import SDPBackend

CAP = 50.0
CASES = [(2, 16, 8, 4096, 256), (4, 8, 4, 2048, 256), (4, 16, 8, 2048, 128)]


def gemma2_attention(q, k, v, causal: bool, p: float):
    """transformers' Gemma 2 eager_attention_forward: repeat_kv, scale, soft-capping, causal mask, fp32 softmax,
    dropout (causal is always True here; the mask is the additive one HF builds)."""
    k, v = repeat_kv(q, k, v)
    S, D = q.shape[-2:]
    w = torch.matmul(q, k.transpose(2, 3)) * D ** -0.5
    w = softcap(w)
    mask = torch.full((S, S), torch.finfo(q.dtype).min, device=q.device, dtype=q.dtype).triu(1)
    w = w + mask
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = F.dropout(w, p=p, training=p > 0)
    return torch.matmul(w, v)


def softcap(score):
    """Gemma 2's soft-capping."""
    return torch.tanh(score / CAP) * CAP


def softcap_score_mod(score, b, h, i, j):
    """The same as a FlexAttention score_mod (its five positional arguments)."""
    return softcap(score)


def implementations():
    return {
        "ours-op": lambda q, k, v, causal, p: inductor_conv.softcapped_attention(
            q, k, v, CAP, dropout_p=p, is_causal=True, enable_gqa=True),
        "ours-compiled": "compiled-on",
        "flex": flex(score_mod=softcap_score_mod),  # causal: main always measures causal
        "inductor": "compiled-off",
        "sdpa-flash": sdpa(SDPBackend.FLASH_ATTENTION),
    }


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    lines = [f"# soft-capped attention benchmark {datetime.date.today()} on {torch.cuda.get_device_name()}, "
             f"torch {torch.__version__}, cap {CAP}, causal", "",
             "| B Hq/Hkv S D | p | impl | fwd TFLOP/s | fwd+bwd TFLOP/s | GPU fwd | GPU fwd+bwd | held (×|q|) |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    wanted = pick_impls(implementations(), args)
    rewrites = {}
    with fx_graph_cache_disabled():
        for shape in pick(CASES, args):
            for p in (0.0, 0.1):
                for name, fn in implementations().items():
                    if name not in wanted or (name == "flex" and p > 0):
                        continue
                    if isinstance(fn, str):
                        fn = compile_with_plugin(gemma2_attention, plugin=fn == "compiled-on")
                    try:
                        fwd, fb, gpu_fwd, gpu_fb, held = measure(fn, shape, True, p)
                    except Exception as e:  # one failing implementation must not hide the others
                        lines.append(f"| {shape} | {p} | {name} | n/a ({type(e).__name__}: {str(e)[:80]}) | | | | |")
                        print(lines[-1], flush=True)
                        inductor_conv.disable()
                        continue
                    if name == "ours-compiled":
                        rewrites[(shape, p)] = inductor_conv.counters()["attention"]
                    inductor_conv.disable()
                    B, Hq, Hkv, S, D = shape
                    lines.append(f"| {B} {Hq}/{Hkv} {S} {D} | {p} | {name} | {fwd:.0f} | {fb:.0f} | {gpu_fwd:.0f} | "
                                 f"{gpu_fb:.0f} | {held:.2f} |")
                    print(lines[-1], flush=True)
    lines += ["", f"rewrites by ours-compiled (inference + training = 2 per case): {rewrites}"]
    print(lines[-1])
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
