"""patterns/attention_causal.py: attention masks built in the graph that are provably top-left causal become
``attn_mask=None, is_causal=True`` on attention_fwd and its attention_bwd; every other mask is kept.

Each model is compiled on CPU with our pass (helpers.compile_and_run: caches off, counters cleared); the recorded
graph (after the rewrite) is checked through its attention calls' arguments, and outputs / gradients against
float64 eager. Most cases run the op's torch fallback (TRITON_INTERPRET=0) for speed; the unequal-length case runs
the Triton kernels in the interpreter, so their causal loop bounds with Sq != Sk are checked too.
"""
from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn as nn
from helpers import compile_and_run
from torch.fx.experimental.proxy_tensor import make_fx

import inductor_conv.kernels.attention  # noqa: F401  (jit-decorated now, under conftest's TRITON_INTERPRET=1)
from inductor_conv.patterns.attention_causal import Tri, abstract_values

# fp32 compiled (<= 16 keys, D = 16 products per score, fp32 accumulate) vs float64 eager: rounding ~1e-6 for O(1)
# inputs; a wrong mask entry changes outputs by >= 1e-2, so 1e-5 still fails on any masking difference.
TOL = dict(atol=1e-5, rtol=1e-5)
B, H, S, D = 1, 2, 8, 16
S_MAX = 12  # buffers longer than S, sliced like nanoGPT slices them


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _softmax_v(s, v):
    return torch.softmax(s, dim=-1) @ v


def demo_bool(q, k, v):  # (a) demo / benchmarks/attention.py
    T = q.shape[-2]
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return _softmax_v(_scores(q, k).masked_fill(~keep, float("-inf")), v)


def additive_triu(q, k, v):  # (b)
    T = q.shape[-2]
    return _softmax_v(_scores(q, k) + torch.full((T, T), float("-inf"), device=q.device, dtype=q.dtype).triu(1), v)


def float_tril_eq0(q, k, v):  # (c) nanoGPT's mask, built in forward
    T = q.shape[-2]
    m = torch.tril(torch.ones(T, T, device=q.device)).view(1, 1, T, T)
    return _softmax_v(_scores(q, k).masked_fill(m == 0, float("-inf")), v)


def sliced_unequal(q, k, v):  # tril of a longer constant, [:Sq, :Sk] with Sq != Sk: still top-left causal
    m = torch.ones(S_MAX, S_MAX, dtype=torch.bool, device=q.device).tril()[None, None, : q.shape[-2], : k.shape[-2]]
    return _softmax_v(_scores(q, k).masked_fill(~m, float("-inf")), v)


def triu_diag0(q, k, v):  # hides the diagonal too: not causal
    T = q.shape[-2]
    hide = torch.ones(T, T, dtype=torch.bool, device=q.device).triu()
    return _softmax_v(_scores(q, k).masked_fill(hide, float("-inf")), v)


def tril_diag1(q, k, v):  # lets each query see one future key: not causal
    T = q.shape[-2]
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril(1)
    return _softmax_v(_scores(q, k).masked_fill(~keep, float("-inf")), v)


def additive_small_fill(q, k, v):  # -1e4 is a finite penalty, not a mask
    T = q.shape[-2]
    return _softmax_v(_scores(q, k) + torch.full((T, T), -1e4, device=q.device, dtype=q.dtype).triu(1), v)


class NanoGPTBuffer(nn.Module):  # the mask is a buffer, i.e. a graph input: never proven
    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(S_MAX, S_MAX)).view(1, 1, S_MAX, S_MAX))

    def forward(self, q, k, v):
        T = q.shape[-2]
        return _softmax_v(_scores(q, k).masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), v)


class LearnedCausalBias(nn.Module):  # a causal-valued additive bias that requires grad: kept (and gets its grad)
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.full((S, S), -1e30).triu(1).expand(1, H, S, S).clone())

    def forward(self, q, k, v):
        return _softmax_v(_scores(q, k) + self.bias, v)


def _attention_calls(graph_text: str) -> list[tuple[str, list[str]]]:
    """(op, top-level args) of each attention call in a recorded graph."""
    calls = re.findall(r"torch\.ops\.inductor_conv\.(attention_(?:fwd|bwd))\.default\(([^)]*)\)", graph_text)
    return [(op, [a.strip() for a in args.split(",")]) for op, args in calls]


def _causal_flags(graph_text: str) -> list[tuple[str, bool, bool]]:
    """(op, has a mask, is_causal) per attention call: fwd args (q, k, v, mask, p, causal, ...), bwd (dout, q, k, v,
    mask, out, lse, p, causal, ...)."""
    at = {"attention_fwd": (3, 5), "attention_bwd": (4, 8)}
    return [(op, args[at[op][0]] != "None", args[at[op][1]] == "True") for op, args in _attention_calls(graph_text)]


def _run(fn, training, sq=S, sk=S, dynamic=False):
    """Compile and run fn; compare with float64 eager (outputs, and q/k/v grads in training). Returns the flags."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(B, H, sq, D, generator=gen)
    k, v = (torch.randn(B, H, sk, D, generator=gen) for _ in range(2))
    inputs = [x.clone().requires_grad_(training) for x in (q, k, v)]
    out, counters, graphs = compile_and_run(fn, *inputs, dynamic=dynamic)
    ref_inputs = [x.double().requires_grad_(training) for x in (q, k, v)]
    ref_fn = fn.double() if isinstance(fn, nn.Module) else fn
    ref = ref_fn(*ref_inputs)
    # a fully masked row (triu_diag0's row 0) is 0 in the op (declared extension) where eager gives NaN
    torch.testing.assert_close(out.double(), ref.nan_to_num(0.0), **TOL)
    if training:
        dout = torch.randn(out.shape, generator=gen)
        out.backward(dout)
        ref.backward(dout.double())
        for x, r in zip(inputs, ref_inputs):
            torch.testing.assert_close(x.grad.double(), r.grad, **TOL)
    assert counters["attention"] == 1
    assert len(graphs) == 1
    return _causal_flags(graphs[0])


def _expected(training, causal):
    mask = not causal
    ops = ["attention_fwd", "attention_bwd"] if training else ["attention_fwd"]
    return [(op, mask, causal) for op in ops]


@pytest.fixture
def torch_fallback(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # the op reads it at call time; the static kernel path is slow


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("fn", [demo_bool, additive_triu, float_tril_eq0], ids=lambda f: f.__name__)
def test_causal_mask_becomes_is_causal(fn, training, torch_fallback):
    assert _run(fn, training) == _expected(training, causal=True)


def test_causal_dynamic(torch_fallback):
    assert _run(demo_bool, training=True, dynamic=True) == _expected(True, causal=True)


def test_causal_unequal_lengths_triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _run(sliced_unequal, training=True, sq=S, sk=S + 4) == _expected(True, causal=True)


@pytest.mark.parametrize("model", [triu_diag0, tril_diag1, additive_small_fill, NanoGPTBuffer, LearnedCausalBias],
                         ids=lambda m: m.__name__)
def test_mask_kept(model, torch_fallback):
    fn = model() if isinstance(model, type) else model
    training = model is LearnedCausalBias or model is NanoGPTBuffer
    assert _run(fn, training) == _expected(training, causal=False)


# ---------------------------------------------------------------------------------------------------------------
# The abstract values on small traced graphs (no compile): each fact separately
# ---------------------------------------------------------------------------------------------------------------
def _sliding(rows, window):
    """HF's sliding-window causal mask (masking_utils: the causal mask and ``kv_idx > q_idx - window``)."""
    q_idx, kv_idx = torch.arange(rows)[:, None], torch.arange(rows)[None, :]
    return (kv_idx <= q_idx) & (kv_idx > q_idx - window)


def _mask_value(build):
    """Trace ``build()`` (a mask from constants) decomposed like Inductor's joint graph; its output's value."""
    from torch._decomp import core_aten_decompositions

    gm = make_fx(build, decomposition_table=core_aten_decompositions(), tracing_mode="fake")()
    out = next(iter(gm.graph.find_nodes(op="output"))).args[0]
    out = out[0] if isinstance(out, (list, tuple)) else out
    return abstract_values(gm.graph).get(out), out


@pytest.mark.parametrize("build, d", [
    (lambda: torch.ones(S, S, dtype=torch.bool).tril(), 0),
    (lambda: torch.ones(S, S, dtype=torch.bool).tril(-1), -1),
    (lambda: ~torch.ones(S, S, dtype=torch.bool).triu(1), 0),
    (lambda: torch.arange(S)[None, :] <= torch.arange(S)[:, None], 0),
    (lambda: torch.arange(S)[:, None] >= torch.arange(S)[None, :], 0),
    (lambda: torch.tril(torch.ones(S, S)).view(1, 1, S, S) != 0, 0),
    (lambda: torch.ones_like(torch.empty(S, S), dtype=torch.bool).tril().unsqueeze(0).expand(3, S, S), 0),
    (lambda: torch.ones(S + 4, S + 4, dtype=torch.bool).tril()[None, None, :S, :S + 2], 0),
    (lambda: _sliding(S, S), 0),  # a window no shorter than the rows: HF's sliding mask is the causal one
    (lambda: _sliding(S, 4 * S), 0),
    (lambda: _sliding(S, S)[:, : S - 2], 0),  # fewer keys than rows
])
def test_bool_masks_are_triangles(build, d):
    value, _ = _mask_value(build)
    assert isinstance(value, Tri) and value.d == d and bool(value.lower) and not bool(value.upper)


@pytest.mark.parametrize("build", [
    lambda: torch.ones(S, S, dtype=torch.bool).tril().transpose(0, 1),  # transposed: upper triangle
    lambda: torch.ones(S, S, dtype=torch.bool).tril()[1:, 1:],  # both dims shifted by 1 (equal here, but not proven)
    lambda: torch.ones(S, S, dtype=torch.bool).tril()[2:],  # rows shifted by 2: j <= i + 2
    lambda: torch.ones(1, S, dtype=torch.bool).tril().expand(S, S),  # row 0 broadcast over rows
    lambda: torch.rand(S, S) > 2.0,  # random
    lambda: torch.ones(S, S, dtype=torch.bool).tril()[:1] & torch.ones(S, S, dtype=torch.bool),  # row 0, broadcast
    lambda: (torch.arange(1)[None, :] <= torch.arange(S)[:, None]).expand(S, S),  # one key index, broadcast
    lambda: torch.ones(2, S, S, dtype=torch.bool).tril().view(S, 2, S),  # a view that moves the row index
    lambda: _sliding(S, S - 1),  # the last row's window misses key 0: a band
    lambda: _sliding(S + 4, S + 1)[:S, :S],  # proven on the whole 12 x 12 mask only: a band there, whatever its slice
    lambda: torch.arange(S)[None, :] > torch.arange(S)[:, None] - S,  # all True, but not causal
])
def test_other_masks_are_not_proven_causal(build):
    value, _ = _mask_value(build)
    assert not (isinstance(value, Tri) and value.d == 0 and bool(value.lower) and not bool(value.upper))


# ---------------------------------------------------------------------------------------------------------------
# A model: HF Gemma 2 compiled whole, so its masks are built in the graph
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("window, causal_layers", [(16, 2), (8, 1)], ids=["window=length", "window<length"])
def test_gemma2_sliding_window_covering_the_sequence_is_causal(window, causal_layers, torch_fallback):
    """HF Gemma 2 (a sliding-window layer, then a full one) on 16 tokens: with a window of 16 the sliding layer's
    mask is the causal one, and both layers run is_causal; with 8 the sliding layer keeps its mask.  Logits and
    gradients against the same model in float64 eager."""
    pytest.importorskip("transformers")
    from hf_models import _causal_lm

    torch.manual_seed(0)
    model = _causal_lm("gemma2", num_key_value_heads=2, head_dim=16, num_hidden_layers=2, sliding_window=window,
                       attn_logit_softcapping=1.0, query_pre_attn_scalar=16)
    ids = torch.randint(0, model.config.vocab_size, (2, 16))

    def loss(m):
        return m(input_ids=ids).logits.square().mean()

    out, counters, graphs = compile_and_run(loss, model, fullgraph=False)
    flags = [f for g in graphs for f in _causal_flags(g)]
    assert counters["attention"] == 2 and len(flags) == 4
    assert sum(causal for op, _, causal in flags if op == "attention_fwd") == causal_layers
    assert all(has_mask != causal for _, has_mask, causal in flags)
    out.backward()
    ref_model = _causal_lm("gemma2", num_key_value_heads=2, head_dim=16, num_hidden_layers=2, sliding_window=window,
                           attn_logit_softcapping=1.0, query_pre_attn_scalar=16).double()
    ref_model.load_state_dict(model.state_dict())
    ref = loss(ref_model)
    ref.backward()
    torch.testing.assert_close(out.double(), ref, atol=1e-6, rtol=1e-5)
    for (name, p), r in zip(model.named_parameters(), ref_model.parameters()):
        torch.testing.assert_close(p.grad.double(), r.grad, atol=1e-6, rtol=1e-4, msg=name)
