"""patterns/attention.py on head ratios, lengths and dtypes the model table of test_patterns_attention.py does not
compile: repeat_kv with ratios 4 and 8, cross-attention (Sq != Sk) with a permuted output, T5's
``softmax(s.float()).type_as(s)`` in bf16.

Each function is compiled on CPU with our pass (helpers.compile_and_run: caches off, counters cleared); the rewrite
count is asserted exactly, outputs and gradients compared with float64 eager.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers import compile_and_run, op_arg_shapes, ops_in, repeat_kv

from inductor_conv._compat import dynamo_counters

# Compiled fp32 vs float64 eager at S <= 11, D = 16: rounding ~1e-6 (test_patterns_attention's TOL).
TOL = dict(atol=1e-5, rtol=1e-5)


def _llama(q, k, v, mask):
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    w = torch.matmul(q, k.transpose(2, 3)) * 0.25 + mask[:, :, :, : k.shape[-2]]
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(w, v).transpose(1, 2).contiguous()


def _compare_training(fn, inputs, n_grad, **compile_kw):
    """Compile fn(*inputs) with the first n_grad inputs needing grad; compare output and those grads with float64
    eager. Returns (counters, graph texts)."""
    leaves = [t.clone().requires_grad_(i < n_grad) for i, t in enumerate(inputs)]
    out, counts, graphs = compile_and_run(fn, *leaves, **compile_kw)
    leaves64 = [t.double().requires_grad_(i < n_grad) for i, t in enumerate(inputs)]
    ref = fn(*leaves64)
    torch.testing.assert_close(out.double(), ref, **TOL)
    dout = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad(out, leaves[:n_grad], dout),
                         torch.autograd.grad(ref, leaves64[:n_grad], dout.double())):
        torch.testing.assert_close(got.double(), want, **TOL)
    return counts, graphs


@pytest.mark.parametrize("ratio", [4, 8])
def test_repeat_kv_ratios_become_native_gqa(ratio):
    """repeat_kv with G = 4 and 8 (test_patterns_attention covers G = 1, 2): one rewrite, the op gets the
    unexpanded K/V, outputs and gradients match, and the count is mirrored in torch's dynamo counters."""
    torch.manual_seed(6)
    Hq, Hkv, S, D = 8, 8 // ratio, 8, 16
    inputs = [torch.randn(1, Hq, S, D), torch.randn(1, Hkv, S, D), torch.randn(1, Hkv, S, D), torch.randn(1, 1, S, 12)]
    counts, graphs = _compare_training(_llama, inputs, n_grad=3)
    text = "".join(graphs)
    assert counts["attention"] == 1 and ops_in(text) == ["attention_fwd", "attention_bwd"], text
    assert op_arg_shapes(text)[1:] == [f"1, {Hkv}, {S}, {D}"] * 2, text
    assert dynamo_counters["inductor_conv"]["attention"] == 1


def _cross(q, k, v, mask):  # encoder-decoder attention: Sq != Sk, padding mask (B, 1, 1, Sk), permuted output
    s = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + mask, dim=-1)
    return (s @ v).permute(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], -1)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_cross_attention_unequal_lengths(dynamic, monkeypatch):
    if dynamic:  # the op's torch fallback keeps it fast (as test_patterns_attention's dynamic cases)
        monkeypatch.setenv("TRITON_INTERPRET", "0")
    torch.manual_seed(7)
    B, H, Sq, Sk, D = 3, 2, 5, 11, 16  # B != H: equal sizes would share one symbol under dynamic=True
    inputs = [torch.randn(B, H, Sq, D), torch.randn(B, H, Sk, D), torch.randn(B, H, Sk, D), torch.randn(B, 1, 1, Sk)]
    counts, graphs = _compare_training(_cross, inputs, n_grad=3, dynamic=dynamic)
    assert counts["attention"] == 1, graphs


def _t5_spelling(q, k, v, bias):  # HF T5: no scale, position bias, fp32 softmax cast back with type_as
    scores = torch.matmul(q, k.transpose(3, 2)) + bias
    return torch.matmul(F.softmax(scores.float(), dim=-1).type_as(scores), v)


def test_t5_float_type_as_softmax_in_bf16():
    """In fp32 ``.float()`` / ``.type_as`` are no-ops; in bf16 they are real converts the pattern must take.
    Compared with float64 eager: bf16 inputs, a bf16 output rounding and bf16 scores in eager (2^-8 relative on
    |S| ~ 4 shifts P by ~2e-2 at most), so 3e-2 (test_patterns_attention's bf16 tolerance)."""
    torch.manual_seed(8)
    q, k, v = (torch.randn(1, 2, 8, 16, dtype=torch.bfloat16) for _ in range(3))
    bias = torch.randn(1, 2, 8, 8, dtype=torch.bfloat16)
    with torch.no_grad():
        out, counts, graphs = compile_and_run(_t5_spelling, q, k, v, bias)
    assert counts["attention"] == 1, graphs
    ref = _t5_spelling(*(t.double() for t in (q, k, v, bias)))
    torch.testing.assert_close(out.double(), ref, atol=3e-2, rtol=3e-2)
