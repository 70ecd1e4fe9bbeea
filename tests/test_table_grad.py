"""A small table's gradient summed per row instead of by atomic adds (Note [small table gradients] in
patterns/table_grad.py): which lookups are rewritten, the rewritten graph, and the gradients against float64."""
from __future__ import annotations

import re

import pytest
import torch
from expecttest import assert_expected_inline

import inductor_conv
from helpers import compile_and_run
from inductor_conv._compat import TORCH_VERSION, dynamo_counters
from inductor_conv.heuristics.table_grad import sum_per_row

S = 24


def _buckets(n: int) -> torch.Tensor:
    """A T5-like bucket per (query, key): the relative position clamped to n buckets (most pairs in the end ones)."""
    rel = torch.arange(S)[None, :] - torch.arange(S)[:, None]
    return rel.clamp(-(n // 2), n // 2 - 1) + n // 2


def _t5_attention(table, q, k, v, idx):
    """T5's attention: the bias looked up from a table of buckets x heads, unscaled scores, fp32 softmax."""
    padding = 3 if table.shape[0] > 3 else None
    bias = torch.nn.functional.embedding(idx, table, padding_idx=padding).permute(2, 0, 1).unsqueeze(0)
    return (q @ k.transpose(-1, -2) + bias).softmax(-1) @ v


def _indexed_bias(table, q, k, v, idx):
    """The bias as ``table[idx]`` (Swin's spelling), whose backward is an accumulating index_put."""
    return (q @ k.transpose(-1, -2) + table[idx].permute(2, 0, 1)).softmax(-1) @ v


def _compiled_and_reference(fn, rows: int, heads: int, idx: torch.Tensor, device: str = "cpu"):
    """(the compiled run's table gradient, float64 eager's, the recorded graphs, the rewrites counted), fresh random
    inputs on ``device``."""
    table64 = torch.randn(rows, heads, dtype=torch.float64, device=device)
    qkv64 = [torch.randn(2, heads, S, 8, dtype=torch.float64, device=device) for _ in range(3)]
    dout64 = torch.randn(2, heads, S, 8, dtype=torch.float64, device=device)
    idx = idx.to(device)
    leaves = [t.float().requires_grad_() for t in (table64, *qkv64)]
    out, _, graphs = compile_and_run(fn, *leaves, idx, device_types=(device,))
    rewrites = dynamo_counters["inductor_conv"]["small_table_grad"]
    out.backward(dout64.float())
    ref_leaves = [t.clone().requires_grad_() for t in (table64, *qkv64)]
    fn(*ref_leaves, idx).backward(dout64)
    return leaves[0].grad, ref_leaves[0].grad, graphs, rewrites


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("fn, idx", [
    (_t5_attention, _buckets(32)),
    (_indexed_bias, _buckets(32)),
    (_indexed_bias, _buckets(32) - 32),  # negative indices: Python's wrap-around, the same rows
], ids=["embedding", "index", "negative_index"])
def test_relative_bias_gradient_is_summed_per_row(fn, idx, device):
    grad, ref, graphs, rewrites = _compiled_and_reference(fn, 32, 4, idx, device)
    backward = graphs[-1]
    assert rewrites == 1
    assert not re.search(r"index_put", backward), "the accumulating index_put is still in the graph"
    torch.testing.assert_close(grad.double(), ref, rtol=1e-5, atol=1e-5)  # fp32 sums of ~600 terms
    if fn is _t5_attention:
        assert grad[3].abs().max() == 0 and ref[3].abs().max() == 0  # the padding row gets nothing


def test_the_rewritten_graph():
    *_, graphs, _ = _compiled_and_reference(_t5_attention, 32, 4, _buckets(32))
    lines = graphs[-1].splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith(("lt_scalar", "iota_default")))
    last = next(i for i, line in enumerate(lines) if line.strip().startswith("sum_dim_int_list"))
    rewritten = "\n".join(re.sub(r";.*", "", line.strip()) for line in lines[first:last + 1])
    if TORCH_VERSION >= (2, 13):  # the embedding's backward: a masked accumulation, its mask joined to the compare
        assert_expected_inline(rewritten, """\
iota_default: "i64[32]" = torch.ops.prims.iota.default(32, start = 0, step = 1, dtype = torch.int64, device = device, requires_grad = False)
view_default: "i64[32, 1, 1, 1]" = torch.ops.aten.view.default(iota_default, [32, 1, 1, 1])
eq_tensor: "b8[32, 24, 24, 1]" = torch.ops.aten.eq.Tensor(unsqueeze_default, view_default)
bitwise_and_tensor: "b8[32, 24, 24, 1]" = torch.ops.aten.bitwise_and.Tensor(eq_tensor, unsqueeze_1)
full_default: "f32[]" = torch.ops.aten.full.default([], 0.0, dtype = torch.float32, device = device, pin_memory = False)
where_self: "f32[32, 24, 24, 4]" = torch.ops.aten.where.self(bitwise_and_tensor, permute_7, full_default)
sum_dim_int_list: "f32[32, 4]" = torch.ops.aten.sum.dim_IntList(where_self, [1, 2])""")
    else:  # torch 2.11: the masked-out values zeroed first, then an index_put (its negative indices wrapped)
        assert_expected_inline(rewritten, """\
lt_scalar: "b8[24, 24]" = torch.ops.aten.lt.Scalar(primals_2, 0)
add_tensor: "i64[24, 24]" = torch.ops.aten.add.Tensor(primals_2, 32)
where_self: "i64[24, 24]" = torch.ops.aten.where.self(lt_scalar, add_tensor, primals_2)
unsqueeze_default: "i64[24, 24, 1]" = torch.ops.aten.unsqueeze.default(where_self, -1)
iota_default: "i64[32]" = torch.ops.prims.iota.default(32, start = 0, step = 1, dtype = torch.int64, device = device, requires_grad = False)
view_default: "i64[32, 1, 1, 1]" = torch.ops.aten.view.default(iota_default, [32, 1, 1, 1])
eq_tensor: "b8[32, 24, 24, 1]" = torch.ops.aten.eq.Tensor(unsqueeze_default, view_default)
full_default: "f32[]" = torch.ops.aten.full.default([], 0.0, dtype = torch.float32, device = device, pin_memory = False)
where_self_1: "f32[32, 24, 24, 4]" = torch.ops.aten.where.self(eq_tensor, clone, full_default)
sum_dim_int_list: "f32[32, 4]" = torch.ops.aten.sum.dim_IntList(where_self_1, [1, 2])""")


@pytest.mark.parametrize("rows, heads, summed", [
    (32, 4, True),    # T5: narrow rows, few of them
    (64, 31, True),
    (65, 4, False),   # too many rows to read the gradient once for each
    (8, 32, False),   # rows as wide as a warp: its lanes do not collide
    (2, 64, True),    # token types: two rows at any width
])
def test_which_tables_are_summed(rows, heads, summed):
    assert sum_per_row(rows, heads) == summed
    idx = torch.arange(S * S).reshape(S, S) % rows
    grad, ref, graphs, rewrites = _compiled_and_reference(_t5_attention, rows, heads, idx)
    assert rewrites == int(summed)
    assert ("index_put" not in graphs[-1]) == summed
    torch.testing.assert_close(grad.double(), ref, rtol=1e-5, atol=1e-5)


def test_off_keeps_the_atomics(monkeypatch):
    monkeypatch.setattr(inductor_conv.config, "small_table_grads", False)
    *_, graphs, rewrites = _compiled_and_reference(_t5_attention, 32, 4, _buckets(32))
    assert rewrites == 0 and "index_put" in graphs[-1]


def test_dynamic_lengths_keep_the_sum():
    """Under dynamic shapes (a sequence length that changes between batches) the index's sizes are symbolic; the
    table, a parameter, keeps static sizes (Dynamo's default for parameters), and the rewrite still applies."""
    emb = torch.nn.Embedding(32, 4, padding_idx=3)
    emb64 = torch.nn.Embedding(32, 4, padding_idx=3, dtype=torch.float64)
    emb64.weight.data.copy_(emb.weight.data)

    def attend(table):
        def fn(q, k, v, idx):
            bias = table(idx).permute(2, 0, 1).unsqueeze(0)
            return (q @ k.transpose(-1, -2) + bias).softmax(-1) @ v
        return fn

    for length in (S, S + 8):
        idx = (torch.arange(length)[None, :] - torch.arange(length)[:, None]).clamp(-16, 15) + 16
        qkv64 = [torch.randn(2, 4, length, 8, dtype=torch.float64) for _ in range(3)]
        out, _, graphs = compile_and_run(attend(emb), *(t.float().requires_grad_() for t in qkv64), idx,
                                         dynamic=True)
        assert dynamo_counters["inductor_conv"]["small_table_grad"] == 1
        assert "index_put" not in graphs[-1] and "s" in re.search(r'eq_tensor: "b8\[32, (\w+)', graphs[-1])[1]
        dout = torch.randn(out.shape, dtype=torch.float64)
        out.backward(dout.float())
        attend(emb64)(*qkv64, idx).backward(dout)
        torch.testing.assert_close(emb.weight.grad.double(), emb64.weight.grad, rtol=1e-5, atol=1e-5)
        emb.weight.grad = emb64.weight.grad = None
