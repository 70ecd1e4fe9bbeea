"""The causal conv1d (+SiLU) pattern pass (patterns/causal_conv1d_silu.py, patterns/checks.py).

Every recognised spelling is compiled on CPU with our pass (tests/helpers.compile_and_run: caches off, counters
cleared) for inference and training, static and dynamic shapes; each must be rewritten an exact number of times,
call the fused op with the right activation, and match a float64 eager run in outputs and gradients. Each spelling
the op does not compute is compiled too and must be left alone (count 0, eager results). The extra_check
predicates get negative unit tests on small traced graphs, and a training test reads what the partitioned forward
graph saves (x, w, β only).

The cases (models' spellings, RECOGNISED, LEFT_ALONE, SILU_FORMS) are in conv_forms_cases.py, the checks this file
shares with tests/test_golden_graphs_conv.py in conv_forms_checks.py.
"""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from conv_forms_cases import LEFT_ALONE, PAD, RECOGNISED, SILU_FORMS, B, C, L, make_case, mamba2
from conv_forms_checks import CONVS, TOL, check_recognised, frozen_conv_graph, grads_of, run_and_compare
from helpers import assert_as_close_as_eager, compile_and_run, fused_activations, ops_in
from torch.fx.experimental.proxy_tensor import make_fx

import inductor_conv
from inductor_conv.patterns import causal_conv1d_silu, checks, graph_pass


# ---------------------------------------------------------------------------------------------------------------
# What the partitioned forward saves for backward
# ---------------------------------------------------------------------------------------------------------------
def saved_results_of(forward: torch.fx.Graph, weight_shape) -> list[str]:
    """Names of tensors the partitioned forward saves for backward that were computed from the conv weight (other
    than the weight and views of it): the conv output z, or SiLU intermediates, if the rewrite did not happen."""
    (weight,) = [n for n in forward.find_nodes(op="placeholder") if _shape(n) == tuple(weight_shape)]
    from_weight, frontier = set(), [weight]
    while frontier:
        node = frontier.pop()
        for user in node.users:
            if user not in from_weight:
                from_weight.add(user)
                frontier.append(user)
    views = (torch.ops.aten.squeeze.dim, torch.ops.aten.view.default, torch.ops.aten.unsqueeze.default)
    (output,) = forward.find_nodes(op="output")
    saved = output.args[0][1:]  # one user output; the rest is saved for backward
    return [
        n.name
        for n in saved
        if isinstance(n, torch.fx.Node) and n in from_weight and not (n.target in views and n.args[0] is weight)
    ]


_VIEWS = (torch.ops.aten.squeeze.dim, torch.ops.aten.view.default, torch.ops.aten.unsqueeze.default,
          torch.ops.aten.reshape.default, torch.ops.aten.permute.default, torch.ops.aten.t.default)


def saved_computed_tensors(forward: torch.fx.Graph) -> list[str]:
    """Names of tensors the partitioned forward saves that are computed (not graph inputs or views of them) and are
    not an input x of one of our conv ops: with the rewrite, the convs save only their inputs (the rest of a model,
    here a Linear, saves its own graph inputs)."""
    def base(n):
        while isinstance(n, torch.fx.Node) and n.target in _VIEWS:
            n = n.args[0]
        return n

    conv_x = {base(n.args[0]) for n in forward.nodes if n.target == torch.ops.inductor_conv.causal_conv1d_fwd.default}
    (output,) = forward.find_nodes(op="output")
    saved = [n for n in output.args[0][1:] if isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"),
                                                                                      torch.Tensor)]
    return [n.name for n in saved if base(n).op != "placeholder" and base(n) not in conv_x]


def _shape(node):
    val = node.meta.get("val")
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


# ---------------------------------------------------------------------------------------------------------------
# Recognised forms
# ---------------------------------------------------------------------------------------------------------------
# Static shapes are compiled (with the same numerics checks) by test_golden_graphs_conv.py, which pins their graphs.
MODES = [pytest.param(False, True, id="inference-dynamic"), pytest.param(True, True, id="training-dynamic")]


@pytest.mark.parametrize("train,dynamic", MODES)
@pytest.mark.parametrize("name", list(RECOGNISED))
def test_recognised(name, train, dynamic):
    check_recognised(name, train=train, dynamic=dynamic)


# Mixed precision: fp32 parameters and input under torch.autocast(bf16), which casts the conv's operands itself,
# after F.pad (Note [autocast respellings] in patterns/autocast.py). Every recognised spelling, training.
@pytest.mark.parametrize("name", list(RECOGNISED))
def test_recognised_under_autocast(name):
    """Rewritten as often as without autocast; outputs and gradients as close to float64 as eager autocast's are
    (helpers.assert_as_close_as_eager)."""
    kwargs, layout, count, _ = RECOGNISED[name]
    model, x = make_case(kwargs, layout)
    ref, eager = copy.deepcopy(model).double(), copy.deepcopy(model)
    x64, x_eager, x = x.double().requires_grad_(), x.clone().requires_grad_(), x.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, counts, graphs = compile_and_run(model, x)
        out_eager = eager(x_eager)
    expected = ref(x64)
    dy = torch.randn_like(expected)
    assert_as_close_as_eager([out, *grads_of(model, x, out, dy.to(out.dtype))],
                             [out_eager, *grads_of(eager, x_eager, out_eager, dy.to(out_eager.dtype))],
                             [expected, *grads_of(ref, x64, expected, dy)], name)
    assert counts["causal_conv1d"] == count, "".join(graphs)


class Mamba2SimpleConv(nn.Module):
    """The conv step of state-spaces mamba's Mamba2Simple (mamba_ssm/modules/mamba2_simple.py) as its torch path
    writes it, with mamba's parameter names: in_proj -> split into z and xBC (B, L, conv_dim), a strided view of
    the projection -> conv1d(padding=d_conv - 1) on its channel-last transpose -> act -> [:, :seqlen, :] -> split
    into x, B, C. A gate and a product stand in for the SSM scan (dt and A omitted)."""

    def __init__(self, d_model=4, d_inner=4, d_state=2, ngroups=1, d_conv=4):
        super().__init__()
        self.d_inner, self.bc_dim = d_inner, ngroups * d_state
        conv_dim = d_inner + 2 * self.bc_dim
        self.in_proj = nn.Linear(d_model, d_inner + conv_dim, bias=False)
        self.conv1d = nn.Conv1d(conv_dim, conv_dim, d_conv, groups=conv_dim, padding=d_conv - 1)
        self.act = nn.SiLU()

    def forward(self, u):  # u (B, L, d_model) -> (B, L, d_inner)
        batch, seqlen, dim = u.shape
        z, xBC = torch.split(self.in_proj(u), [self.d_inner, self.d_inner + 2 * self.bc_dim], dim=-1)
        xBC = self.act(self.conv1d(xBC.transpose(1, 2)).transpose(1, 2))  # (B, L + d_conv - 1, conv_dim)
        xBC = xBC[:, :seqlen, :]
        x, B, C = torch.split(xBC, [self.d_inner, self.bc_dim, self.bc_dim], dim=-1)
        return x * F.silu(z) + (B * C).sum(-1, keepdim=True)


@pytest.mark.parametrize("train,dynamic", MODES + [pytest.param(True, False, id="training-static")])
def test_mamba2_simple_module(train, dynamic):
    """Mamba2Simple's activation before the slice, in a module shaped like mamba's: one rewrite with SiLU fused, no
    convolution left after partitioning, outputs and the gradients of u, in_proj, conv weight and bias as float64
    eager's."""
    torch.manual_seed(0)
    model, u = Mamba2SimpleConv(), torch.randn(B, L, 4)
    counts, graphs, partitioned = run_and_compare(model, u, train=train, dynamic=dynamic)
    assert counts["causal_conv1d"] == 1 and fused_activations(graphs) == ["silu"], graphs
    assert ops_in("".join(graphs)).count("causal_conv1d_bwd") == int(train)
    assert not any(n.target in CONVS for g in partitioned for n in g.nodes)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name", list(SILU_FORMS))
def test_inplace_and_quotient_silu(name, dynamic):
    """An in-place SiLU decomposes to z / (1 + exp(-z)) (the form the inference patterns traced from F.silu have), and
    on a view of the conv output (act_(z[..., :L])) the result is a slice of a slice_scatter into z, normalised away
    by causal_conv1d_silu.slices_of_slice_scatter. Fused in inference; in training the in-place SiLU on a view has
    another backward (a clone of z for SiLU', a copy of the gradient, a second scatter at the slice's place), traced
    as its own activation spelling ("silu_inplace") and fused too (None: the count is not pinned, the results are
    checked)."""
    spelling, inference, training = SILU_FORMS[name]
    model, x = make_case(dict(spelling=spelling, **PAD), "BCL")
    counts, graphs, _ = run_and_compare(model, x, train=False, dynamic=dynamic)
    assert counts["causal_conv1d"] == inference and fused_activations(graphs) == ["silu"] * inference, graphs
    counts, graphs, _ = run_and_compare(model, x, train=True, dynamic=dynamic)
    if training is not None:
        assert counts["causal_conv1d"] == training, graphs


def test_slices_of_slice_scatter_only_where_the_ranges_agree():
    """slice(slice_scatter(base, src, d, s, e), d, s, e) is src; another range or dim keeps both nodes."""

    def same(base, src):
        return torch.slice_scatter(base, src, 2, 0, 4)[:, :, 0:4] * 2

    def shifted(base, src):
        return torch.slice_scatter(base, src, 2, 1, 5)[:, :, 0:4] * 2

    base, src = torch.randn(2, 3, 6), torch.randn(2, 3, 4)
    for fn, replaced in ((same, 1), (shifted, 0)):
        gm = make_fx(fn)(base, src)
        assert causal_conv1d_silu.slices_of_slice_scatter(gm.graph) == replaced
        gm.recompile()
        torch.testing.assert_close(gm(base, src), fn(base, src), rtol=0, atol=0)
        assert ("slice_scatter" in gm.code) == (replaced == 0)


def _channel_last_out(m, h):  # x: the channel-last view of a (B, L, C) activation; y leaves the graph
    return m.act(m.conv(h.transpose(1, 2))[..., : h.shape[1]])


def _channel_last_split(m, h):  # Mamba-2: y, back in (B, L, C), split along channels into x, B, C
    return torch.split(mamba2(m, h), [1, 1, C - 2], dim=-1)


def _channel_last_inside(m, h):  # the same conv inside a block: its next layer consumes y in the graph
    return m.linear(_channel_last_out(m, h).transpose(1, 2))


@pytest.mark.parametrize("train,dynamic", MODES + [pytest.param(True, False, id="training-static")])
def test_conv_output_leaving_the_graph_has_eager_layout(train, dynamic):
    """Note [conv output layout]: a channel-last x gives our op a channel-last y, but a y the graph returns (or views
    of it: Mamba-2's split) keeps the layout eager's conv1d gives it (contiguous), so views that work eagerly work
    compiled and, in training, the gradient arrives in the layout AOTAutograd traced; inside a graph y keeps x's
    layout (no contiguous_out).
    The backward compiles after the pass is disabled here (compile_and_run), as a lazily compiled backward may."""
    model, h = make_case(dict(spelling=_channel_last_out, **PAD), "BLC")
    ref = copy.deepcopy(model).double()
    h = h.clone().requires_grad_(train)
    with torch.set_grad_enabled(train):
        out, counts, graphs = compile_and_run(model, h, dynamic=dynamic)
        h64 = h.detach().double().requires_grad_(train)
        expected = ref(h64)
    assert counts["causal_conv1d"] == 1 and "contiguous_out = True" in "".join(graphs)
    assert out.stride() == expected.stride() == (C * L, L, 1)
    out.view(B, C * L)  # what eager allows
    torch.testing.assert_close(out, expected.float(), **TOL)
    if train:
        dy = torch.randn_like(expected)
        for got, want in zip(grads_of(model, h, out, dy.float()), grads_of(ref, h64, expected, dy)):
            torch.testing.assert_close(got, want.float(), **TOL)

    model, h = make_case(dict(spelling=_channel_last_split, linear=True, K=4, padding=3), "BLC")
    h = h.clone().requires_grad_(train)
    with torch.set_grad_enabled(train):
        outs, counts, graphs = compile_and_run(model, h, dynamic=dynamic)
        h64 = h.detach().double().requires_grad_(train)
        expected = copy.deepcopy(model).double()(h64)
    assert counts["causal_conv1d"] == 1 and "contiguous_out = True" in "".join(graphs)
    assert [o.stride() for o in outs] == [e.stride() for e in expected]
    for o, e in zip(outs, expected):
        torch.testing.assert_close(o, e.float(), **TOL)

    model, h = make_case(dict(spelling=_channel_last_inside, linear=True, **PAD), "BLC")
    counts, graphs, _ = run_and_compare(model, h, train=train, dynamic=dynamic)
    assert counts["causal_conv1d"] == 1 and "contiguous_out" not in "".join(graphs)


def test_conv_output_layout_switch(monkeypatch):
    """config.conv_eager_output_layout = False: y leaves the graph in x's (channel-last) layout, values unchanged."""
    monkeypatch.setattr(inductor_conv.config, "conv_eager_output_layout", False)
    model, h = make_case(dict(spelling=_channel_last_out, **PAD), "BLC")
    out, counts, graphs = compile_and_run(model, h)
    assert counts["causal_conv1d"] == 1 and "contiguous_out" not in "".join(graphs)
    assert out.stride() == (C * L, 1, C)
    torch.testing.assert_close(out, copy.deepcopy(model).double()(h.double()).float(), **TOL)


def test_x_without_grad_is_rewritten():
    """The conv as first layer: parameters need grads, x does not (convolution_backward's mask [F, T, T])."""
    model, x = make_case(RECOGNISED["mamba1_nn_silu"][0], "BCL")
    out, counts, graphs = compile_and_run(model, x)  # grad mode on, x.requires_grad False: a joint graph without dx
    assert counts["causal_conv1d"] == 1
    ref_model = copy.deepcopy(model).double()
    ref = ref_model(x.double())
    torch.testing.assert_close(out, ref.float(), **TOL)
    assert "causal_conv1d_bwd" in "".join(graphs)
    dy = torch.randn_like(ref)
    got = torch.autograd.grad(out, [model.conv.weight, model.conv.bias], dy.float())
    want = torch.autograd.grad(ref, [ref_model.conv.weight, ref_model.conv.bias], dy)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double(), w, **TOL)


@pytest.mark.parametrize("name,dynamic,dtype", [("mamba1_nn_silu", False, torch.float32),
                                                ("mamba2_transpose_slice", True, torch.float32),
                                                ("mamba1_nn_silu", False, torch.bfloat16)])
def test_frozen_conv_parameters_are_rewritten(name, dynamic, dtype):
    """Fine-tuning around a frozen conv: weight and bias need no gradient, x does."""
    text = "".join(frozen_conv_graph(name, dynamic, dtype))
    assert "causal_conv1d_bwd" in text and "convolution" not in text, text


@pytest.mark.parametrize("name,dynamic", [("mamba1_nn_silu", False), ("mamba2_transpose_slice", True)])
def test_training_saves_only_inputs(name, dynamic):
    """Note [conv backward recomputes z]: with the rewrite the compiled forward saves x, w, β but no tensor computed
    from w (test_saved_check_fails_without_rewrite shows the check can fail)."""
    kwargs, layout, _, _ = RECOGNISED[name]
    model, x = make_case(kwargs, layout)
    _, _, partitioned = run_and_compare(model, x, train=True, dynamic=dynamic)
    assert saved_results_of(partitioned[0], model.conv.weight.shape) == []


@pytest.mark.parametrize("name", list(RECOGNISED))
def test_training_saves_graph_inputs_and_conv_inputs_only(name):
    """Every recognised form, in training: the partitioned forward saves graph inputs (x or h, w, β, the Linear's
    weight), views of them, and the conv's input x where a Linear computes it -- nothing else computed (no z, no
    SiLU intermediate, no padded copy of x)."""
    kwargs, layout, _, _ = RECOGNISED[name]
    model, x = make_case(kwargs, layout)
    _, _, partitioned = run_and_compare(model, x, train=True, dynamic=False)
    assert saved_computed_tensors(partitioned[0]) == []


def test_saved_check_fails_without_rewrite(monkeypatch):
    monkeypatch.setattr(inductor_conv.config, "causal_conv1d", False)
    model, x = make_case(RECOGNISED["mamba1_nn_silu"][0], "BCL")
    counts, _, partitioned = run_and_compare(model, x, train=True, dynamic=False)
    assert counts["causal_conv1d"] == 0
    assert saved_results_of(partitioned[0], model.conv.weight.shape) != []  # z (the convolution's output)
    assert saved_computed_tensors(partitioned[0]) != []


def _functional_mamba1(x, w, b):
    return F.silu(F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=C)[..., : x.shape[-1]])


def _functional_mamba1_inplace(x, w, b):
    return F.silu(F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=C)[..., : x.shape[-1]], inplace=True)


def _functional_mamba2(x, w, b):
    return F.silu(F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=C).transpose(1, 2)[:, : x.shape[-1]])


def _functional_mamba2_simple(x, w, b):
    return F.silu(F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=C).transpose(1, 2))[:, : x.shape[-1]]


def _functional_left_pad(x, w, b):
    return F.silu(F.conv1d(F.pad(x, (w.shape[-1] - 1, 0)), w, b, groups=C))


# bf16 / fp16: the SiLU's decomposition computes in fp32 between convert_element_type nodes; the rewrite must take
# the SiLU too (fused_activations == silu, no sigmoid left), not only the conv. Tolerances: the unrewritten graph
# rounds the conv output to the half dtype before the SiLU, ours keeps fp32: one half-precision rounding apart.
_HALF_TOL = {torch.float32: TOL, torch.bfloat16: dict(atol=3e-2, rtol=3e-2), torch.float16: dict(atol=4e-3, rtol=4e-3)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fn", [_functional_mamba1, _functional_mamba1_inplace, _functional_mamba2,
                                _functional_mamba2_simple, _functional_left_pad])
def test_cuda_style_training_graph(fn, dtype, monkeypatch):
    """On CUDA, Inductor takes dβ out of convolution_backward (a sum over batch and time). Such a joint graph is
    built here on CPU (joint_fwd_bwd_gpu), normalised as the pass does, and our patterns are applied to it directly:
    one rewrite, no convolution left, and the rewritten graph computes the same outputs and gradients."""
    monkeypatch.setattr(inductor_conv.config, "device_types", ("cpu",))
    torch.manual_seed(0)
    args = [torch.randn(shape, dtype=dtype, requires_grad=True) for shape in ((B, C, L), (C, 1, 3), (C,))]
    gm = causal_conv1d_silu.joint_fwd_bwd_gpu(fn, args)
    assert "aten.sum.dim_IntList" in str(gm.graph)  # dβ as on a GPU
    dy = torch.randn_like(fn(*args))

    def run():  # an Interpreter binds placeholders by position (the joint graph's own code renames them)
        return torch.fx.Interpreter(gm).run(*args, dy)

    expected = run()
    causal_conv1d_silu.register(graph_pass.PATTERNS)
    inductor_conv.reset_counters()
    causal_conv1d_silu.normalize(gm.graph)
    graph_pass.PATTERNS.apply(gm.graph)
    assert inductor_conv.counters()["causal_conv1d"] == 1
    assert not any(n.target in CONVS for n in gm.graph.nodes)
    assert [n.args[-1] for n in gm.graph.nodes if n.target == torch.ops.inductor_conv.causal_conv1d_fwd.default] == [
        "silu"]
    assert "sigmoid" not in str(gm.graph)
    for got, want in zip(run(), expected):
        torch.testing.assert_close(got.float(), want.float(), **_HALF_TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_inference_fuses_silu(dtype):
    """No-grad graphs in half precision decompose the SiLU with fp32 upcasts too: conv and SiLU are still one op."""
    torch.manual_seed(1)
    x, w, b = torch.randn(B, C, L, dtype=dtype), (torch.randn(C, 1, 3) / 3).to(dtype), torch.randn(C, dtype=dtype)
    with torch.no_grad():
        out, counts, graphs = compile_and_run(_functional_left_pad, x, w, b)
    assert counts["causal_conv1d"] == 1 and fused_activations(graphs) == ["silu"]
    assert "exp" not in "".join(graphs) and "sigmoid" not in "".join(graphs)
    torch.testing.assert_close(out.float(), _functional_left_pad(x.double(), w.double(), b.double()).float(),
                               **_HALF_TOL[dtype])


# ---------------------------------------------------------------------------------------------------------------
# Left-alone forms
# ---------------------------------------------------------------------------------------------------------------
# Every LEFT_ALONE form is compiled for inference (count 0, eager results, pinned graph) by
# test_golden_graphs_conv.py; here the ones closest to a recognised form are compiled as training graphs too, where a
# forward-only or partial match could hide.
@pytest.mark.parametrize("name", ["groups_2", "keep_last", "slice_too_short", "dilation_2", "circular",
                                  "transpose_act_padded_also_read", "transpose_act_slice_keeps_more",
                                  "transpose_act_slice_starts_late"])
def test_left_alone_training(name):
    """Gradients are skipped: nothing of ours runs when the count is 0, and each backward is one more C++ compile."""
    model, x = make_case(*LEFT_ALONE[name])
    counts, graphs, _ = run_and_compare(model, x, train=True, dynamic=False, grads=False)
    assert counts["causal_conv1d"] == 0
    assert ops_in("".join(graphs)) == []
    assert "aten.convolution_backward.default" in "".join(graphs)


def _other_consumer(m, x):
    z = m.conv(x)[..., : x.shape[-1]]
    return F.silu(z) + z


def test_other_consumer_of_z_keeps_silu_unfused():
    """z feeds SiLU and something else: SiLU is not fused (z must exist); the conv alone still is ("none")."""
    model, x = make_case(dict(spelling=_other_consumer, **PAD), "BCL")
    counts, graphs, _ = run_and_compare(model, x, train=True, dynamic=False)
    assert counts["causal_conv1d"] == 1
    assert fused_activations(graphs) == ["none"]


def test_device_not_enabled():
    model, x = make_case(RECOGNISED["mamba1_nn_silu"][0], "BCL")
    counts, graphs, _ = run_and_compare(model, x, train=True, dynamic=False, device_types=("cuda",))
    assert counts["causal_conv1d"] == 0


def test_config_flag_off(monkeypatch):
    monkeypatch.setattr(inductor_conv.config, "causal_conv1d", False)
    model, x = make_case(RECOGNISED["mamba1_nn_silu"][0], "BCL")
    counts, graphs, _ = run_and_compare(model, x, train=False, dynamic=False)
    assert counts["causal_conv1d"] == 0 and ops_in("".join(graphs)) == []


def test_patterns_registered_only_for_graphs_with_an_anchor(monkeypatch):
    """Tracing a capability's patterns costs seconds: a graph without a convolution or bmm registers none."""
    calls = []
    for module in ("causal_conv1d_silu", "attention"):
        monkeypatch.setattr(f"inductor_conv.patterns.{module}.register", lambda d, m=module: calls.append(m))
    plain = make_fx(lambda x: torch.relu(x @ x) + 1)(torch.randn(4, 4)).graph
    assert not graph_pass._register_for(plain) and calls == []
    conv = make_fx(lambda x, w: F.conv1d(x, w, groups=C))(torch.randn(B, C, L), torch.randn(C, 1, 3)).graph
    assert graph_pass._register_for(conv) and calls == ["causal_conv1d_silu"]
    monkeypatch.setattr(inductor_conv.config, "causal_conv1d", False)
    assert not graph_pass._register_for(conv)


# ---------------------------------------------------------------------------------------------------------------
# extra_check predicates, one negative (and one positive) each, on small traced graphs
# ---------------------------------------------------------------------------------------------------------------
aten = torch.ops.aten


def _trace(fn, *args):
    """The call_function nodes of fn traced to aten with fake values, by target."""
    gm = make_fx(fn, tracing_mode="fake")(*args)
    gm.graph.eliminate_dead_code()
    return gm, {n.target: n for n in gm.graph.nodes if n.op == "call_function"}


class _Match:
    """The three things the predicates read from a pattern-matcher Match."""

    def __init__(self, gm, kwargs, outputs=()):
        self.nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
        self.kwargs = kwargs
        self._outputs = list(outputs)

    def output_nodes(self):
        return self._outputs


def _conv(stride=1, padding=0, dilation=1, groups=C, mult=1, K=3):
    x, w = torch.randn(B, C, L), torch.randn(C * mult, C // groups, K)
    def conv(x, w):
        return aten.convolution(x, w, None, [stride], [padding], [dilation], False, [0], groups)

    _, nodes = _trace(conv, x, w)
    return x, w, nodes[aten.convolution.default]


def test_is_depthwise():
    x, w, conv = _conv()
    assert checks.is_depthwise(x, w, conv)
    x, w, conv = _conv(groups=2)
    assert not checks.is_depthwise(x, w, conv)
    x, w, conv = _conv(mult=2)
    assert not checks.is_depthwise(x, w, conv)


def test_is_unit_stride_dilation():
    assert checks.is_unit_stride_dilation(_conv()[2])
    assert not checks.is_unit_stride_dilation(_conv(stride=2)[2])
    assert not checks.is_unit_stride_dilation(_conv(dilation=2)[2])


@pytest.mark.parametrize(
    "pad,value,ok", [((2, 0), 0.0, True), ((1, 1), 0.0, False), ((0, 2), 0.0, False), ((2, 0), 1.0, False)]
)
def test_is_left_causal_pad(pad, value, ok):
    _, nodes = _trace(lambda x: F.pad(x, pad, value=value), torch.randn(B, C, L))
    assert checks.is_left_causal_pad(nodes[aten.constant_pad_nd.default], 3) == ok


@pytest.mark.parametrize("end,ok", [(L, True), (-2, True), (L - 1, False), (-1, False)])
def test_keeps_first(end, ok):
    _, nodes = _trace(lambda z: z[..., :end], torch.randn(B, C, L + 2))
    assert checks.keeps_first(nodes[aten.slice.Tensor], L, dim=2) == ok


def test_keeps_first_rejects_a_late_start_and_wrong_dim():
    _, nodes = _trace(lambda z: z[..., 1 : L + 1], torch.randn(B, C, L + 2))
    assert not checks.keeps_first(nodes[aten.slice.Tensor], L, dim=2)
    _, nodes = _trace(lambda z: z[:, :L], torch.randn(B, L + 2, L + 2))
    assert not checks.keeps_first(nodes[aten.slice.Tensor], L, dim=2)


def test_same_device_dtype():
    x, w = torch.randn(2, 3), torch.randn(3)
    assert checks.same_device_dtype(x, w, None)
    assert not checks.same_device_dtype(x, w.double())
    assert not checks.same_device_dtype(x, torch.empty(3, device="meta"))
    assert not checks.same_device_dtype(x.long(), w.long())


def test_on_enabled_device(monkeypatch):
    monkeypatch.setattr(inductor_conv.config, "device_types", ("cpu",))
    assert checks.on_enabled_device(torch.randn(2), None)
    monkeypatch.setattr(inductor_conv.config, "device_types", ("cuda",))
    assert not checks.on_enabled_device(torch.randn(2))


def test_scalars_are_one():
    gm, _ = _trace(lambda z: z / (1 + torch.exp(-z)), torch.randn(3))
    assert checks.scalars_are_one(_Match(gm, {}))
    gm, _ = _trace(lambda z: z / (2 + torch.exp(-z)), torch.randn(3))
    assert not checks.scalars_are_one(_Match(gm, {}))


def test_no_outside_users():
    def f(z):
        s = torch.sigmoid(z)
        return z * s, s

    gm, nodes = _trace(f, torch.randn(3))
    mul, sig = nodes[aten.mul.Tensor], nodes[aten.sigmoid.default]
    assert checks.no_outside_users(_Match(gm, {}, outputs=[mul, sig]))
    assert not checks.no_outside_users(_Match(gm, {}, outputs=[mul]))  # sigmoid escapes to the graph output


def _conv_backward(mask, padding_bwd=2):
    x, w, dy = torch.randn(B, C, L), torch.randn(C, 1, 3), torch.randn(B, C, L + 2)

    def f(x, w, dy):
        z = aten.convolution(x, w, None, [1], [2], [1], False, [0], C)
        grads = aten.convolution_backward(dy, x, w, [C], [1], [padding_bwd], [1], False, [0], C, mask)
        return z, grads[0], grads[1]

    gm, nodes = _trace(f, x, w, dy)
    return _Match(gm, {}), nodes[aten.convolution.default]


def test_output_mask_matches_outputs():
    assert checks.output_mask_matches_outputs(_conv_backward([True, True, False])[0])
    assert not checks.output_mask_matches_outputs(_conv_backward([True, True, True])[0])  # dβ computed, unread


def test_backward_mirrors_forward():
    match, conv = _conv_backward([True, True, False])
    assert checks.backward_mirrors_forward(match, conv)
    match, conv = _conv_backward([True, True, False], padding_bwd=1)
    assert not checks.backward_mirrors_forward(match, conv)


@pytest.mark.parametrize("inner,outer,ok", [((0, L), (0, L), True), ((0, L), (1, L + 1), False),
                                            ((1, L + 1), (0, L), False)])
def test_backward_mirrors_forward_scattered_twice(inner, outer, ok):
    """An in-place activation on the slice scatters its gradient over the slice's backward at the same place;
    another place, for either scatter, does not undo the slice."""

    def f(z, g, h):
        zeros = aten.full([B, C, L + 2], 0, dtype=torch.float32)  # the slice's backward, as in joint graphs
        return z[..., 0:L], torch.slice_scatter(torch.slice_scatter(zeros, g, 2, *inner), h, 2, *outer)

    gm, _ = _trace(f, torch.randn(B, C, L + 2), torch.randn(B, C, L), torch.randn(B, C, L))
    conv = type("Conv", (), {"args": (None,)})()  # no pad, no convolution_backward: only the scatters are read
    assert checks.backward_mirrors_forward(_Match(gm, {}), conv) == ok


@pytest.mark.parametrize("dst,ok", [((B, C, L), True), ((B, C, 1), False), ("double", False)])
def test_copies_are_exact(dst, ok):
    """copy(dst, src) is src only without a broadcast of src or a cast to dst's dtype."""
    src = torch.randn(B, C, L)
    target = torch.randn(B, C, L).double() if dst == "double" else torch.randn(*dst)
    gm, _ = _trace(lambda d, s: aten.copy(d, s) if d.shape == s.shape else aten.copy(s, d), target, src)
    assert checks.copies_are_exact(_Match(gm, {})) == ok


def test_permutes_swap_channels_and_time():
    gm, _ = _trace(lambda z: z.transpose(1, 2), torch.randn(B, C, L))
    assert checks.permutes_swap_channels_and_time(_Match(gm, {}))
    gm, _ = _trace(lambda z: z.permute(1, 0, 2), torch.randn(B, C, L))
    assert not checks.permutes_swap_channels_and_time(_Match(gm, {}))
