"""Attention written with torch.einsum, respelled as matmuls before AOTAutograd (Note [einsum attention] in
patterns/einsum.py): which equations are batched matrix products, and that other einsums stay as they are. The
einsum attention cases themselves (recognised, with float64 references) are in tests/test_patterns_attention.py."""
from __future__ import annotations

import pytest
import torch

import inductor_conv
from helpers import compile_and_run
from inductor_conv.patterns.einsum import einsum_attention_as_matmul, matmul_plan


@pytest.mark.parametrize("equation, plan", [  # (perm of a, perm of b, b transposed after, perm of the product)
    ("bhqd,bhkd->bhqk", (None, None, True, None)),
    ("bhqk,bhkd->bhqd", (None, None, False, None)),
    ("b h i d, b h j d -> b h i j", (None, None, True, None)),
    ("ibnd,jbnd->bnij", ([1, 2, 0, 3], [1, 2, 0, 3], True, None)),
    ("bnij,jbnd->ibnd", (None, [1, 2, 0, 3], False, [2, 0, 1, 3])),
    ("bntc,bncs->bnts", (None, None, False, None)),
    ("bqhd,bkhd->bhqk", ([0, 2, 1, 3], [0, 2, 1, 3], True, None)),
    ("bij,bjd->bid", (None, None, False, None)),
])
def test_batched_products_become_matmuls(equation, plan):
    assert matmul_plan(equation) == plan


@pytest.mark.parametrize("equation", [
    "bhd,bhd->bh",  # a dot product per row: no rows or columns
    "bhqd,bhkd->bhk",  # q's rows summed away
    "bhqd,bhqd->bhq",
    "bhde,bhdf->bhef" + "x",  # an output letter in neither operand
    "bii,bij->bj",  # a repeated letter
    "...qd,...kd->...qk",  # ellipsis
    "bhqd,bhkd",  # implicit output
    "bhqde,bhkde->bhqk",  # two contracted letters
    "a,b,c->abc",
])
def test_other_equations_stay(equation):
    assert matmul_plan(equation) is None


def _dynamo_graph(fn, *args) -> torch.fx.GraphModule:
    """The graph Dynamo hands a backend for fn(*args): what Inductor's pre-grad passes receive."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(fn, backend=backend, fullgraph=True)(*args)
    return graphs[0]


def _attention(q, k, v):
    return torch.einsum("bhij,bhjd->bhid", torch.einsum("bhid,bhjd->bhij", q, k).softmax(-1), v)


def _bilinear(x, w):
    return torch.einsum("bhid,bhdj->bhij", x, w).relu()


@pytest.mark.parametrize("fn, respelled", [(_attention, 2), (_bilinear, 0)], ids=["attention", "bilinear"])
def test_only_attention_einsums_respelled(fn, respelled, monkeypatch):
    """Both einsums of an attention are respelled; an einsum with no softmax near it keeps eager's own
    decomposition, so a graph without attention compiles as it would without the plugin."""
    monkeypatch.setattr(inductor_conv.config, "device_types", ("cpu",))
    torch.manual_seed(0)
    args = [torch.randn(2, 3, 8, 16) for _ in range(3 if fn is _attention else 1)]
    if fn is _bilinear:
        args.append(torch.randn(2, 3, 16, 8))
    gm = _dynamo_graph(fn, *args)
    assert einsum_attention_as_matmul(gm.graph) == respelled
    gm.recompile()
    torch.testing.assert_close(gm(*args)[0], fn(*args))
    einsums = [n for n in gm.graph.nodes if n.target in (torch.einsum, torch.functional.einsum)]
    assert len(einsums) == (2 - respelled if fn is _attention else 1)


def test_einsum_on_a_device_not_enabled_stays(monkeypatch):
    monkeypatch.setattr(inductor_conv.config, "device_types", ("cuda",))
    gm = _dynamo_graph(_attention, *(torch.randn(2, 3, 8, 16) for _ in range(3)))
    assert einsum_attention_as_matmul(gm.graph) == 0


def test_einsum_attention_rewritten_only_with_attention_on(monkeypatch):
    """config.attention off: einsum attention is neither respelled nor rewritten."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 8, 16) for _ in range(3))
    _, counts, _ = compile_and_run(_attention, q, k, v)
    assert counts["attention"] == 1
    monkeypatch.setattr(inductor_conv.config, "attention", False)
    out, counts, _ = compile_and_run(_attention, q, k, v)
    assert counts["attention"] == 0
    torch.testing.assert_close(out, _attention(q, k, v))
