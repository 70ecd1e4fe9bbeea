"""The gradient of a bucketed relative-position bias (HF T5's `relative_attention_bias`, an nn.Embedding of 32
buckets x H heads looked up at an (S, S) bucket index) from the attention's dS, summed over the batch and over the
layers that share the bias: wall and GPU ms per call of each way to compute it, and the error against float64.

    python benchmarks/diagnostics/bucket_bias_grad.py

Ways: `inductor` (the embedding backward compiled by default Inductor: an atomic add per (h, i, j), the adds of one
bucket all to one 32-byte sector), `eager` (ATen's CUDA embedding backward: sorts the indices, sums segments),
`onehot-mm` (compiled: the one-hot of the bucket index times the summed dS, one matmul), `where-sum` (compiled: one
reduction over the index per row).  Cases: t5-small's encoder and decoder, WavLM's 320 buckets, and tables looked
up per token (BERT's token types; 64 rows at random).
"""
from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/

from common import bench, top_kernels  # noqa: E402

BUCKETS = 32


def buckets(S: int, n: int, device) -> torch.Tensor:
    """T5's bidirectional bucket of each (query, key) pair among n buckets, max distance 128 (its own function)."""
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(S, device=device)[None, :] - torch.arange(S, device=device)[:, None]
    return T5Attention._relative_position_bucket(rel, bidirectional=True, num_buckets=n, max_distance=128)


def relative_bias_grad(B, H, S, layers):
    """dS of `layers` layers (B, H, S, S) bf16 -> the looked-up values' gradient (S, S, H), as T5's graph has it."""
    gs = [torch.randn(B, H, S, S, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]
    return gs, lambda gs: sum(g.float() for g in gs).sum(0).permute(1, 2, 0)


def rows_grad(B, S, D):
    """An embedding looked up per token: (B, S, D) bf16 -> its gradient in float32."""
    return [torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)], lambda gs: gs[0].float()


# name, rows, index, (inputs, their values' gradient)
CASES = [
    ("T5 encoder, B8 H8 S512, 2 layers", 32, lambda: buckets(512, 32, "cuda"), lambda: relative_bias_grad(8, 8, 512, 2)),
    ("T5 decoder, B8 H8 S256, 2 layers", 32, lambda: buckets(256, 32, "cuda"), lambda: relative_bias_grad(8, 8, 256, 2)),
    ("WavLM, 320 buckets, B16 H12 S249", 320, lambda: buckets(249, 320, "cuda"),
     lambda: relative_bias_grad(16, 12, 249, 1)),
    ("token types (BERT), 2 rows, B8 S512 D768", 2, lambda: torch.zeros(8, 512, dtype=torch.long, device="cuda"),
     lambda: rows_grad(8, 512, 768)),
    ("64 rows, random index, B8 S512 D768", 64, lambda: torch.randint(0, 64, (8, 512), device="cuda"),
     lambda: rows_grad(8, 512, 768)),
]


def ways(rows: int, values_of):
    def inductor(gs, idx):
        return torch.ops.aten.embedding_dense_backward(values_of(gs), idx, rows, -1, False)

    def onehot_mm(gs, idx):
        values = values_of(gs)
        return F.one_hot(idx.flatten(), rows).float().t() @ values.reshape(idx.numel(), -1)

    def where_sum(gs, idx):
        values = values_of(gs).reshape(idx.numel(), -1)
        hit = idx.flatten() == torch.arange(rows, device=idx.device)[:, None]  # (rows, index elements)
        return torch.where(hit[:, :, None], values[None], 0.0).sum(1)

    return [("inductor", torch.compile(inductor)), ("eager", inductor), ("onehot-mm", torch.compile(onehot_mm)),
            ("where-sum", torch.compile(where_sum))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| case | way | wall ms | GPU ms | max rel. error vs float64 | top kernels |")
    print("|---|---|---|---|---|---|")
    for name, rows, index, make in CASES:
        idx = index()
        gs, values_of = make()
        values = values_of(gs).double().reshape(idx.numel(), -1)
        ref = torch.zeros(rows, values.shape[1], dtype=torch.float64, device="cuda").index_add_(0, idx.flatten(), values)
        for way, fn in ways(rows, values_of):
            torch._dynamo.reset()
            out = fn(gs, idx).reshape(rows, -1)
            err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
            wall = bench(lambda: fn(gs, idx))
            gpu, top = top_kernels(lambda: fn(gs, idx), top=3, width=40)
            print(f"| {name} | {way} | {wall:.3f} | {gpu:.3f} | {err:.1e} | {top} |", flush=True)


if __name__ == "__main__":
    main()
