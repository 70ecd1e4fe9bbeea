"""Compile a causal conv1d case of conv_forms_cases.py with our pass and check it, one helper per kind of check:
``run_and_compare`` (outputs and gradients against float64 eager), ``check_recognised`` (the exact rewrite count and
activation, no convolution left) and ``frozen_conv_graph`` (a conv with frozen parameters in a training graph).
tests/test_patterns_causal_conv1d.py and tests/test_golden_graphs_conv.py both call them.
"""
from __future__ import annotations

import copy

import torch
from conv_forms_cases import RECOGNISED, make_case
from helpers import compile_and_run, fused_activations, ops_in

from inductor_conv._compat import inductor_config

# Compiled fp32 (fused kernel: K products + bias + SiLU, or its backward: sums over B·L ≤ 24 terms of O(1) size)
# against float64 eager: rounding is ~1e-6 absolute at most, so 1e-5 fails on any real mistake.
TOL = dict(atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# One helper per kind of check
# ---------------------------------------------------------------------------------------------------------------
def grads_of(model, x, out, dy):
    """The gradients of x and of every parameter of model."""
    params = [p for p in model.parameters()]
    return torch.autograd.grad(out, [x, *params], dy)


def _forward_graphs():
    """Record each post-partition graph Inductor lowers (forward first) through its post-grad hook."""
    seen: list[torch.fx.Graph] = []
    return seen, inductor_config.patch(post_grad_custom_pre_pass=lambda g: seen.append(g))


def run_and_compare(model, x, *, train, dynamic, device_types=("cpu",), grads=True):
    """Compile model(x) with our pass; compare outputs (and, when training and ``grads``, the grads of x and every
    parameter) with float64 eager.

    Returns (counters, recorded graph texts, post-partition graphs).
    """
    ref = copy.deepcopy(model).double()
    x64 = x.double().requires_grad_(train)
    x = x.clone().requires_grad_(train)
    partitioned, hook = _forward_graphs()
    with torch.set_grad_enabled(train), hook:
        out, counts, graphs = compile_and_run(model, x, dynamic=dynamic, device_types=device_types)
        expected = ref(x64)
        torch.testing.assert_close(out, expected.float(), **TOL)
        if train and grads:
            dy = torch.randn_like(out)
            for got, want in zip(grads_of(model, x, out, dy), grads_of(ref, x64, expected, dy.double())):
                torch.testing.assert_close(got, want.float(), **TOL)
    return counts, graphs, partitioned


CONVS = (torch.ops.aten.convolution.default, torch.ops.aten.convolution_backward.default)


def check_recognised(name, *, train, dynamic):
    """Compile a RECOGNISED form; assert exact rewrite count, activation, numerics and that no aten convolution is
    left in what Inductor lowers. Returns the texts of the graphs our pass produced."""
    kwargs, layout, count, activation = RECOGNISED[name]
    model, x = make_case(kwargs, layout)
    counts, graphs, partitioned = run_and_compare(model, x, train=train, dynamic=dynamic)
    assert counts["causal_conv1d"] == count
    assert fused_activations(graphs) == [activation] * count
    assert ops_in("".join(graphs)).count("causal_conv1d_bwd") == (count if train else 0)
    # After partitioning (dead code gone): no convolution, forward or backward.
    assert not any(n.target in CONVS for g in partitioned for n in g.nodes)
    return graphs


def frozen_conv_graph(name="mamba1_nn_silu", dynamic=False, dtype=torch.float32):
    """A conv whose weight and bias are frozen inside a training graph (x needs its gradient): convolution_backward
    computes dx alone (mask [T, F, F]). Returns the graphs after checking one rewrite and dx against float64."""
    model, x = make_case(RECOGNISED[name][0], RECOGNISED[name][1])
    model = model.to(dtype).requires_grad_(False)
    x = x.to(dtype).requires_grad_()
    out, counts, graphs = compile_and_run(model, x, dynamic=dynamic)
    assert counts["causal_conv1d"] == 1, graphs
    ref_model = copy.deepcopy(model).double()
    x64 = x.detach().double().requires_grad_()
    ref = ref_model(x64)
    tol = TOL if dtype == torch.float32 else dict(rtol=3e-2, atol=3e-2)  # bf16: one storage rounding of O(1) values
    torch.testing.assert_close(out, ref.to(dtype), **tol)
    dy = torch.randn_like(ref)
    (got,), (want,) = torch.autograd.grad(out, [x], dy.to(dtype)), torch.autograd.grad(ref, [x64], dy)
    torch.testing.assert_close(got.double(), want, **tol)
    return graphs
