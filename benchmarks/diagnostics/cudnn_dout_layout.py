"""Whether SDPA's cuDNN backward reads dO correctly when dO's memory layout differs from O's, and whether ours does.

    python benchmarks/diagnostics/cudnn_dout_layout.py

torch 2.11 on the H200 (2026-12-04): SDPA's default backend there is cuDNN, and its backward returned dq / dk / dv
off by 1-13 against float64 for a dO in another layout than O's (transposed), where the same call with dO in O's
layout is within 0.01.  Our eager op and lowerings hand cuDNN a dO in O's layout (Note [cuDNN route] in
inductor_conv/heuristics/attention.py; ops/attention.py's _dout_in_layout and _cudnn_bwd).  One line per (form, dO
layout, implementation): the backend SDPA chose, the node that ran, and each gradient's largest error against
float64.  When SDPA's rows read like ours for every layout, torch has fixed its node and the views are no longer
needed.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))  # helpers.node_below_views

import inductor_conv  # noqa: E402
from helpers import node_below_views  # noqa: E402
from inductor_conv.reference.attention import attention_ref  # noqa: E402


def main():
    print(f"# cuDNN backward vs dO layout, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    torch.manual_seed(0)
    for causal, gqa in ((True, True), (False, False)):
        B, Hq, Hkv, S, D = 2, 8, 2 if gqa else 8, 256, 64
        q = torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        k, v = (torch.randn(B, Hkv, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        choice = torch._fused_sdp_choice(q, k, v, None, 0.0, causal, scale=None, enable_gqa=gqa)
        leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
        ref = attention_ref(*leaves, is_causal=causal)
        douts = {
            "O's layout": lambda: torch.randn(B, Hq, S, D, device="cuda", dtype=torch.bfloat16),
            "transposed": lambda: torch.randn(B, S, Hq, D, device="cuda", dtype=torch.bfloat16).transpose(1, 2),
            "broadcast": lambda: torch.randn(1, 1, 1, D, device="cuda", dtype=torch.bfloat16).expand(B, Hq, S, D),
        }
        for layout, make in douts.items():
            dout = make()
            exact = torch.autograd.grad(ref, leaves, dout.double(), retain_graph=True)
            for name, out in (("SDPA", F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)),
                              ("ours", inductor_conv.attention(q, k, v, is_causal=causal, enable_gqa=gqa))):
                grads = torch.autograd.grad(out, (q, k, v), dout)
                errors = " ".join(f"d{n} {(g.double() - e).abs().max().item():.4f}"
                                  for n, g, e in zip("qkv", grads, exact))
                print(f"causal={causal} GQA={gqa} SDPA backend {choice} | dO {layout:10s} | {name:4s} "
                      f"{node_below_views(out):45s} {errors}", flush=True)


if __name__ == "__main__":
    main()
