"""Golden graphs of the causal conv1d pattern pass: the graph our joint pass hands on, normalised
(tests/helpers.normalize_graph), pinned with ``assertExpectedInline``.

Recognised forms (static shapes, inference and training) must show ``causal_conv1d_fwd`` (and ``causal_conv1d_bwd``
in training) with no convolution left; left-alone forms (inference) keep their convolution and call no
inductor_conv op. Each test also asserts the exact rewrite count and compares outputs and gradients with float64
eager (conv_forms_checks.check_recognised / run_and_compare): static shapes are checked here only.

Regenerate with ``EXPECTTEST_ACCEPT=1 pytest tests/test_golden_graphs_conv.py`` and review every diff.
"""
import unittest

import expecttest
from conv_forms_cases import LEFT_ALONE, PAD, SILU_FORMS, make_case
from conv_forms_checks import check_recognised, frozen_conv_graph, run_and_compare

from inductor_conv import _compat


def recognised(name: str, train: bool) -> str:
    return "".join(check_recognised(name, train=train, dynamic=False))


def silu_form(name: str, train: bool = False) -> str:
    model, x = make_case(dict(spelling=SILU_FORMS[name][0], **PAD), "BCL")
    counts, graphs, _ = run_and_compare(model, x, train=train, dynamic=False)
    assert counts["causal_conv1d"] == 1
    return "".join(graphs)


def left_alone(name: str) -> str:
    model, x = make_case(*LEFT_ALONE[name])
    counts, graphs, _ = run_and_compare(model, x, train=False, dynamic=False)
    assert counts["causal_conv1d"] == 0
    text = "".join(graphs)
    assert "aten.convolution.default" in text and "inductor_conv" not in text
    return text


class TestRecognisedGraphs(expecttest.TestCase):
    def test_mamba1_nn_silu_inference(self):
        self.assertExpectedInline(recognised("mamba1_nn_silu", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_mamba1_nn_silu_training(self):
        self.assertExpectedInline(recognised("mamba1_nn_silu", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_mamba1_nn_silu_frozen_parameters_training(self):
        self.assertExpectedInline("".join(frozen_conv_graph("mamba1_nn_silu")), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0];  causal_conv1d_bwd_default = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, None, None, getitem_3], self._out_spec)
""")

    def test_left_pad_f_silu_inference(self):
        self.assertExpectedInline(recognised("left_pad_f_silu", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 4, 10]", arg1_1: "f32[4, 1, 3]", arg2_1: "f32[4]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg1_1, 1);  arg1_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg0_1, squeeze_dim, arg2_1, None, None, 'silu');  arg0_1 = squeeze_dim = arg2_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_left_pad_f_silu_training(self):
        self.assertExpectedInline(recognised("left_pad_f_silu", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[2, 4, 10]"; primals_2: "f32[4, 1, 3]"; primals_3: "f32[4]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_2, 1);  primals_2 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_1, squeeze_dim, primals_3, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_1, squeeze_dim, primals_3, None, None, tangents_1, 'silu', True);  primals_1 = squeeze_dim = primals_3 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, getitem_3, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_left_pad_no_act_inference(self):
        self.assertExpectedInline(recognised("left_pad_no_act", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 4, 10]", arg1_1: "f32[4, 1, 4]", arg2_1: "f32[4]"):
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(arg1_1, 1);  arg1_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg0_1, squeeze_dim, arg2_1, None, None, 'none');  arg0_1 = squeeze_dim = arg2_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_left_pad_no_act_training(self):
        self.assertExpectedInline(recognised("left_pad_no_act", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[2, 4, 10]"; primals_2: "f32[4, 1, 4]"; primals_3: "f32[4]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(primals_2, 1);  primals_2 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_1, squeeze_dim, primals_3, None, None, 'none')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_1, squeeze_dim, primals_3, None, None, tangents_1, 'none', True);  primals_1 = squeeze_dim = primals_3 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 4]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 4]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, getitem_3, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_colon_slice_K4_inference(self):
        self.assertExpectedInline(recognised("colon_slice_K4", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_colon_slice_K4_training(self):
        self.assertExpectedInline(recognised("colon_slice_K4", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 4]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 4]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 4]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_silu_then_negative_slice_inference(self):
        self.assertExpectedInline(recognised("silu_then_negative_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_silu_then_negative_slice_training(self):
        self.assertExpectedInline(recognised("silu_then_negative_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_mul_sigmoid_inference(self):
        self.assertExpectedInline(recognised("mul_sigmoid", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_mul_sigmoid_training(self):
        self.assertExpectedInline(recognised("mul_sigmoid", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_mul_sigmoid_then_slice_inference(self):
        self.assertExpectedInline(recognised("mul_sigmoid_then_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_mul_sigmoid_then_slice_training(self):
        self.assertExpectedInline(recognised("mul_sigmoid_then_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_sigmoid_times_z_inference(self):
        self.assertExpectedInline(recognised("sigmoid_times_z", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_sigmoid_times_z_training(self):
        self.assertExpectedInline(recognised("sigmoid_times_z", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_mamba1_inplace_silu_inference(self):
        self.assertExpectedInline(silu_form("mamba1_inplace_silu"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_mamba1_inplace_silu_training(self):
        self.assertExpectedInline(silu_form("mamba1_inplace_silu", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_linear_transposed_inference(self):
        self.assertExpectedInline(recognised("linear_transposed", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 10, 4]", arg3_1: "f32[4, 1, 3]", arg4_1: "f32[4]"):
        view: "f32[20, 4]" = torch.ops.aten.view.default(arg2_1, [20, 4]);  arg2_1 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(arg1_1, view, permute);  arg1_1 = view = permute = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg3_1, 1);  arg3_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, arg4_1, None, None, 'silu', contiguous_out = True);  permute_1 = squeeze_dim = arg4_1 = None
        permute_2: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        return (permute_2,)
""")

    def test_linear_transposed_training(self):
        self.assertExpectedInline(recognised("linear_transposed", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 4]"; primals_2: "f32[4]"; primals_3: "f32[2, 10, 4]"; primals_4: "f32[4, 1, 3]"; primals_5: "f32[4]"; tangents_1: "f32[2, 10, 4]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        view: "f32[20, 4]" = torch.ops.aten.view.default(primals_3, [20, 4]);  primals_3 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(primals_2, view, permute);  primals_2 = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_4, 1);  primals_4 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, primals_5, None, None, 'silu', contiguous_out = True)
        permute_2: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        permute_3: "f32[2, 4, 10]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1]);  tangents_1 = None
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(permute_1, squeeze_dim, primals_5, None, None, permute_3, 'silu', True);  permute_1 = squeeze_dim = primals_5 = permute_3 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        permute_4: "f32[2, 10, 4]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1]);  getitem_3 = None
        clone: "f32[2, 10, 4]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_2: "f32[20, 4]" = torch.ops.aten.view.default(clone, [20, 4]);  clone = None
        permute_5: "f32[4, 4]" = torch.ops.aten.permute.default(permute, [1, 0]);  permute = None
        mm: "f32[20, 4]" = torch.ops.aten.mm.default(view_2, permute_5);  permute_5 = None
        permute_6: "f32[4, 20]" = torch.ops.aten.permute.default(view_2, [1, 0])
        mm_1: "f32[4, 4]" = torch.ops.aten.mm.default(permute_6, view);  permute_6 = view = None
        sum_1: "f32[1, 4]" = torch.ops.aten.sum.dim_IntList(view_2, [0], True);  view_2 = None
        view_3: "f32[4]" = torch.ops.aten.view.default(sum_1, [4]);  sum_1 = None
        view_4: "f32[2, 10, 4]" = torch.ops.aten.view.default(mm, [2, 10, 4]);  mm = None
        return pytree.tree_unflatten([permute_2, mm_1, view_3, view_4, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_mamba2_transpose_slice_inference(self):
        self.assertExpectedInline(recognised("mamba2_transpose_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 10, 4]", arg3_1: "f32[4, 1, 4]", arg4_1: "f32[4]"):
        view: "f32[20, 4]" = torch.ops.aten.view.default(arg2_1, [20, 4]);  arg2_1 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(arg1_1, view, permute);  arg1_1 = view = permute = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(arg3_1, 1);  arg3_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, arg4_1, None, None, 'silu', contiguous_out = True);  permute_1 = squeeze_dim = arg4_1 = None
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        return (permute_default,)
""")

    def test_mamba2_transpose_slice_training(self):
        self.assertExpectedInline(recognised("mamba2_transpose_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 4]"; primals_2: "f32[4]"; primals_3: "f32[2, 10, 4]"; primals_4: "f32[4, 1, 4]"; primals_5: "f32[4]"; tangents_1: "f32[2, 10, 4]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        view: "f32[20, 4]" = torch.ops.aten.view.default(primals_3, [20, 4]);  primals_3 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(primals_2, view, permute);  primals_2 = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(primals_4, 1);  primals_4 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, primals_5, None, None, 'silu', contiguous_out = True)
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        permute_default_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1]);  tangents_1 = None
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(permute_1, squeeze_dim, primals_5, None, None, permute_default_1, 'silu', True);  permute_1 = squeeze_dim = primals_5 = permute_default_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 4]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 4]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        permute_4: "f32[2, 10, 4]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1]);  getitem_3 = None
        clone: "f32[2, 10, 4]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_2: "f32[20, 4]" = torch.ops.aten.view.default(clone, [20, 4]);  clone = None
        permute_5: "f32[4, 4]" = torch.ops.aten.permute.default(permute, [1, 0]);  permute = None
        mm: "f32[20, 4]" = torch.ops.aten.mm.default(view_2, permute_5);  permute_5 = None
        permute_6: "f32[4, 20]" = torch.ops.aten.permute.default(view_2, [1, 0])
        mm_1: "f32[4, 4]" = torch.ops.aten.mm.default(permute_6, view);  permute_6 = view = None
        sum_1: "f32[1, 4]" = torch.ops.aten.sum.dim_IntList(view_2, [0], True);  view_2 = None
        view_3: "f32[4]" = torch.ops.aten.view.default(sum_1, [4]);  sum_1 = None
        view_4: "f32[2, 10, 4]" = torch.ops.aten.view.default(mm, [2, 10, 4]);  mm = None
        return pytree.tree_unflatten([permute_default, mm_1, view_3, view_4, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_silu_then_transpose_slice_inference(self):
        self.assertExpectedInline(recognised("silu_then_transpose_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 10, 4]", arg3_1: "f32[4, 1, 3]", arg4_1: "f32[4]"):
        view: "f32[20, 4]" = torch.ops.aten.view.default(arg2_1, [20, 4]);  arg2_1 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(arg1_1, view, permute);  arg1_1 = view = permute = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg3_1, 1);  arg3_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, arg4_1, None, None, 'silu', contiguous_out = True);  permute_1 = squeeze_dim = arg4_1 = None
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        return (permute_default,)
""")

    def test_silu_then_transpose_slice_training(self):
        self.assertExpectedInline(recognised("silu_then_transpose_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 4]"; primals_2: "f32[4]"; primals_3: "f32[2, 10, 4]"; primals_4: "f32[4, 1, 3]"; primals_5: "f32[4]"; tangents_1: "f32[2, 10, 4]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        view: "f32[20, 4]" = torch.ops.aten.view.default(primals_3, [20, 4]);  primals_3 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(primals_2, view, permute);  primals_2 = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_4, 1);  primals_4 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, primals_5, None, None, 'silu', contiguous_out = True)
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        permute_default_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1]);  tangents_1 = None
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(permute_1, squeeze_dim, primals_5, None, None, permute_default_1, 'silu', True);  permute_1 = squeeze_dim = primals_5 = permute_default_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        permute_4: "f32[2, 10, 4]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1]);  getitem_3 = None
        clone: "f32[2, 10, 4]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_2: "f32[20, 4]" = torch.ops.aten.view.default(clone, [20, 4]);  clone = None
        permute_5: "f32[4, 4]" = torch.ops.aten.permute.default(permute, [1, 0]);  permute = None
        mm: "f32[20, 4]" = torch.ops.aten.mm.default(view_2, permute_5);  permute_5 = None
        permute_6: "f32[4, 20]" = torch.ops.aten.permute.default(view_2, [1, 0])
        mm_1: "f32[4, 4]" = torch.ops.aten.mm.default(permute_6, view);  permute_6 = view = None
        sum_1: "f32[1, 4]" = torch.ops.aten.sum.dim_IntList(view_2, [0], True);  view_2 = None
        view_3: "f32[4]" = torch.ops.aten.view.default(sum_1, [4]);  sum_1 = None
        view_4: "f32[2, 10, 4]" = torch.ops.aten.view.default(mm, [2, 10, 4]);  mm = None
        return pytree.tree_unflatten([permute_default, mm_1, view_3, view_4, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_mul_sigmoid_then_transpose_slice_inference(self):
        self.assertExpectedInline(recognised("mul_sigmoid_then_transpose_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 10, 4]", arg3_1: "f32[4, 1, 4]", arg4_1: "f32[4]"):
        view: "f32[20, 4]" = torch.ops.aten.view.default(arg2_1, [20, 4]);  arg2_1 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(arg1_1, view, permute);  arg1_1 = view = permute = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(arg3_1, 1);  arg3_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, arg4_1, None, None, 'silu', contiguous_out = True);  permute_1 = squeeze_dim = arg4_1 = None
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        return (permute_default,)
""")

    def test_mul_sigmoid_then_transpose_slice_training(self):
        self.assertExpectedInline(recognised("mul_sigmoid_then_transpose_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 4]"; primals_2: "f32[4]"; primals_3: "f32[2, 10, 4]"; primals_4: "f32[4, 1, 4]"; primals_5: "f32[4]"; tangents_1: "f32[2, 10, 4]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        view: "f32[20, 4]" = torch.ops.aten.view.default(primals_3, [20, 4]);  primals_3 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(primals_2, view, permute);  primals_2 = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(primals_4, 1);  primals_4 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, primals_5, None, None, 'silu', contiguous_out = True)
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        permute_default_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1]);  tangents_1 = None
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(permute_1, squeeze_dim, primals_5, None, None, permute_default_1, 'silu', True);  permute_1 = squeeze_dim = primals_5 = permute_default_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 4]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 4]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        permute_4: "f32[2, 10, 4]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1]);  getitem_3 = None
        clone: "f32[2, 10, 4]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_2: "f32[20, 4]" = torch.ops.aten.view.default(clone, [20, 4]);  clone = None
        permute_5: "f32[4, 4]" = torch.ops.aten.permute.default(permute, [1, 0]);  permute = None
        mm: "f32[20, 4]" = torch.ops.aten.mm.default(view_2, permute_5);  permute_5 = None
        permute_6: "f32[4, 20]" = torch.ops.aten.permute.default(view_2, [1, 0])
        mm_1: "f32[4, 4]" = torch.ops.aten.mm.default(permute_6, view);  permute_6 = view = None
        sum_1: "f32[1, 4]" = torch.ops.aten.sum.dim_IntList(view_2, [0], True);  view_2 = None
        view_3: "f32[4]" = torch.ops.aten.view.default(sum_1, [4]);  sum_1 = None
        view_4: "f32[2, 10, 4]" = torch.ops.aten.view.default(mm, [2, 10, 4]);  mm = None
        return pytree.tree_unflatten([permute_default, mm_1, view_3, view_4, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_mamba2_simple_transpose_silu_slice_inference(self):
        self.assertExpectedInline(recognised("mamba2_simple_transpose_silu_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 10, 4]", arg3_1: "f32[4, 1, 4]", arg4_1: "f32[4]"):
        view: "f32[20, 4]" = torch.ops.aten.view.default(arg2_1, [20, 4]);  arg2_1 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(arg0_1, [1, 0]);  arg0_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(arg1_1, view, permute);  arg1_1 = view = permute = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(arg3_1, 1);  arg3_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, arg4_1, None, None, 'silu', contiguous_out = True);  permute_1 = squeeze_dim = arg4_1 = None
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        return (permute_default,)
""")

    def test_mamba2_simple_transpose_silu_slice_training(self):
        self.assertExpectedInline(recognised("mamba2_simple_transpose_silu_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 4]"; primals_2: "f32[4]"; primals_3: "f32[2, 10, 4]"; primals_4: "f32[4, 1, 4]"; primals_5: "f32[4]"; tangents_1: "f32[2, 10, 4]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        view: "f32[20, 4]" = torch.ops.aten.view.default(primals_3, [20, 4]);  primals_3 = None
        permute: "f32[4, 4]" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[20, 4]" = torch.ops.aten.addmm.default(primals_2, view, permute);  primals_2 = None
        view_1: "f32[2, 10, 4]" = torch.ops.aten.view.default(addmm, [2, 10, 4]);  addmm = None
        permute_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(view_1, [0, 2, 1]);  view_1 = None
        squeeze_dim: "f32[4, 4]" = torch.ops.aten.squeeze.dim(primals_4, 1);  primals_4 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute_1, squeeze_dim, primals_5, None, None, 'silu', contiguous_out = True)
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        permute_default_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1]);  tangents_1 = None
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(permute_1, squeeze_dim, primals_5, None, None, permute_default_1, 'silu', True);  permute_1 = squeeze_dim = primals_5 = permute_default_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 4]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 4]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        permute_4: "f32[2, 10, 4]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1]);  getitem_3 = None
        clone: "f32[2, 10, 4]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_2: "f32[20, 4]" = torch.ops.aten.view.default(clone, [20, 4]);  clone = None
        permute_5: "f32[4, 4]" = torch.ops.aten.permute.default(permute, [1, 0]);  permute = None
        mm: "f32[20, 4]" = torch.ops.aten.mm.default(view_2, permute_5);  permute_5 = None
        permute_6: "f32[4, 20]" = torch.ops.aten.permute.default(view_2, [1, 0])
        mm_1: "f32[4, 4]" = torch.ops.aten.mm.default(permute_6, view);  permute_6 = view = None
        sum_1: "f32[1, 4]" = torch.ops.aten.sum.dim_IntList(view_2, [0], True);  view_2 = None
        view_3: "f32[4]" = torch.ops.aten.view.default(sum_1, [4]);  sum_1 = None
        view_4: "f32[2, 10, 4]" = torch.ops.aten.view.default(mm, [2, 10, 4]);  mm = None
        return pytree.tree_unflatten([permute_default, mm_1, view_3, view_4, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_transpose_f_silu_then_slice_inference(self):
        self.assertExpectedInline(recognised("transpose_f_silu_then_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 10, 4]", arg1_1: "f32[4, 1, 3]", arg2_1: "f32[4]"):
        permute: "f32[2, 4, 10]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1]);  arg0_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg1_1, 1);  arg1_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute, squeeze_dim, arg2_1, None, None, 'silu', contiguous_out = True);  permute = squeeze_dim = arg2_1 = None
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        return (permute_default,)
""")

    def test_transpose_f_silu_then_slice_training(self):
        self.assertExpectedInline(recognised("transpose_f_silu_then_slice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[2, 10, 4]"; primals_2: "f32[4, 1, 3]"; primals_3: "f32[4]"; tangents_1: "f32[2, 10, 4]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[2, 4, 10]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1]);  primals_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_2, 1);  primals_2 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(permute, squeeze_dim, primals_3, None, None, 'silu', contiguous_out = True)
        permute_default: "f32[2, 10, 4]" = torch.ops.aten.permute.default(causal_conv1d_fwd_default, [0, 2, 1]);  causal_conv1d_fwd_default = None
        permute_default_1: "f32[2, 4, 10]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1]);  tangents_1 = None
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(permute, squeeze_dim, primals_3, None, None, permute_default_1, 'silu', True);  permute = squeeze_dim = primals_3 = permute_default_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        permute_3: "f32[2, 10, 4]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1]);  getitem_3 = None
        return pytree.tree_unflatten([permute_default, permute_3, unsqueeze_default, getitem_5], self._out_spec)
""")

    def test_nn_silu_then_slice_inference(self):
        self.assertExpectedInline(recognised("nn_silu_then_slice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_no_act_inference(self):
        self.assertExpectedInline(recognised("no_act", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim, arg1_1, None, None, 'none');  arg2_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    def test_no_act_training(self):
        self.assertExpectedInline(recognised("no_act", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim, primals_2, None, None, 'none')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim, primals_2, None, None, tangents_1, 'none', True);  primals_3 = squeeze_dim = primals_2 = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_5: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_5, getitem_3], self._out_spec)
""")

    def test_no_bias_inference(self):
        self.assertExpectedInline(recognised("no_bias", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[2, 4, 10]"):
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg1_1, squeeze_dim, None, None, None, 'silu');  arg1_1 = squeeze_dim = None
        return (causal_conv1d_fwd_default,)
""")

    def test_no_bias_training(self):
        self.assertExpectedInline(recognised("no_bias", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_2, squeeze_dim, None, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_2, squeeze_dim, None, None, None, tangents_1, 'silu', True);  primals_2 = squeeze_dim = tangents_1 = None
        getitem_3: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        getitem_4: "f32[4, 3]" = causal_conv1d_bwd_default[1];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_4, 1);  getitem_4 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, unsqueeze_default, getitem_3], self._out_spec)
""")

    def test_two_convs_inference(self):
        self.assertExpectedInline(recognised("two_convs", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        squeeze_dim_1: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1)
        causal_conv1d_fwd_default_1: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(arg2_1, squeeze_dim_1, arg1_1, None, None, 'silu');  arg2_1 = squeeze_dim_1 = None
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(arg0_1, 1);  arg0_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(causal_conv1d_fwd_default_1, squeeze_dim, arg1_1, None, None, 'silu');  causal_conv1d_fwd_default_1 = squeeze_dim = arg1_1 = None
        return (causal_conv1d_fwd_default,)
""")

    @unittest.skipIf(_compat.TORCH_VERSION < (2, 13), "torch 2.11 numbers the two gradient sums add_6 and add_7")
    def test_two_convs_training(self):
        self.assertExpectedInline(recognised("two_convs", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[4, 1, 3]"; primals_2: "f32[4]"; primals_3: "f32[2, 4, 10]"; tangents_1: "f32[2, 4, 10]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        squeeze_dim_1: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1)
        causal_conv1d_fwd_default_1: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(primals_3, squeeze_dim_1, primals_2, None, None, 'silu')
        squeeze_dim: "f32[4, 3]" = torch.ops.aten.squeeze.dim(primals_1, 1);  primals_1 = None
        causal_conv1d_fwd_default: "f32[2, 4, 10]" = torch.ops.inductor_conv.causal_conv1d_fwd.default(causal_conv1d_fwd_default_1, squeeze_dim, primals_2, None, None, 'silu')
        causal_conv1d_bwd_default = torch.ops.inductor_conv.causal_conv1d_bwd.default(causal_conv1d_fwd_default_1, squeeze_dim, primals_2, None, None, tangents_1, 'silu', True);  causal_conv1d_fwd_default_1 = squeeze_dim = tangents_1 = None
        getitem_6: "f32[2, 4, 10]" = causal_conv1d_bwd_default[0]
        causal_conv1d_bwd_default_1 = torch.ops.inductor_conv.causal_conv1d_bwd.default(primals_3, squeeze_dim_1, primals_2, None, None, getitem_6, 'silu', True);  primals_3 = squeeze_dim_1 = primals_2 = getitem_6 = None
        getitem_9: "f32[2, 4, 10]" = causal_conv1d_bwd_default_1[0]
        getitem_10: "f32[4, 3]" = causal_conv1d_bwd_default_1[1]
        unsqueeze_default_1: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_10, 1);  getitem_10 = None
        getitem_11: "f32[4]" = causal_conv1d_bwd_default_1[2];  causal_conv1d_bwd_default_1 = None
        getitem_7: "f32[4, 3]" = causal_conv1d_bwd_default[1]
        getitem_8: "f32[4]" = causal_conv1d_bwd_default[2];  causal_conv1d_bwd_default = None
        unsqueeze_default: "f32[4, 1, 3]" = torch.ops.aten.unsqueeze.default(getitem_7, 1);  getitem_7 = None
        add_4: "f32[4, 1, 3]" = torch.ops.aten.add.Tensor(unsqueeze_default, unsqueeze_default_1);  unsqueeze_default = unsqueeze_default_1 = None
        add_5: "f32[4]" = torch.ops.aten.add.Tensor(getitem_8, getitem_11);  getitem_8 = getitem_11 = None
        return pytree.tree_unflatten([causal_conv1d_fwd_default, add_4, add_5, getitem_9], self._out_spec)
""")


class TestLeftAloneGraphs(expecttest.TestCase):
    def test_groups_2(self):
        self.assertExpectedInline(left_alone("groups_2"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 2, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [1], [2], [1], False, [0], 2);  arg2_1 = arg0_1 = arg1_1 = None
        slice_1: "f32[2, 4, 10]" = torch.ops.aten.slice.Tensor(convolution, 2, 0, 10);  convolution = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(slice_1)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(slice_1, add);  slice_1 = add = None
        return (div,)
""")

    def test_channel_multiplier_2(self):
        self.assertExpectedInline(left_alone("channel_multiplier_2"), """\
class Graph:
    def forward(self, arg0_1: "f32[8, 1, 3]", arg1_1: "f32[8]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 8, 12]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [1], [2], [1], False, [0], 4);  arg2_1 = arg0_1 = arg1_1 = None
        slice_1: "f32[2, 8, 10]" = torch.ops.aten.slice.Tensor(convolution, 2, 0, 10);  convolution = None
        neg: "f32[2, 8, 10]" = torch.ops.aten.neg.default(slice_1)
        exp: "f32[2, 8, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 8, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 8, 10]" = torch.ops.aten.div.Tensor(slice_1, add);  slice_1 = add = None
        return (div,)
""")

    def test_symmetric_pad_no_slice(self):
        self.assertExpectedInline(left_alone("symmetric_pad_no_slice"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 4, 10]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [1], [1], [1], False, [0], 4);  arg2_1 = arg0_1 = arg1_1 = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(convolution)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(convolution, add);  convolution = add = None
        return (div,)
""")

    def test_right_pad(self):
        self.assertExpectedInline(left_alone("right_pad"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 4, 10]", arg1_1: "f32[4, 1, 3]", arg2_1: "f32[4]"):
        constant_pad_nd: "f32[2, 4, 12]" = torch.ops.aten.constant_pad_nd.default(arg0_1, [0, 2], 0.0);  arg0_1 = None
        convolution: "f32[2, 4, 10]" = torch.ops.aten.convolution.default(constant_pad_nd, arg1_1, arg2_1, [1], [0], [1], False, [0], 4);  constant_pad_nd = arg1_1 = arg2_1 = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(convolution)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(convolution, add);  convolution = add = None
        return (div,)
""")

    def test_keep_last(self):
        self.assertExpectedInline(left_alone("keep_last"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [1], [2], [1], False, [0], 4);  arg2_1 = arg0_1 = arg1_1 = None
        slice_1: "f32[2, 4, 10]" = torch.ops.aten.slice.Tensor(convolution, 2, 2, 9223372036854775807);  convolution = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(slice_1)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(slice_1, add);  slice_1 = add = None
        return (div,)
""")

    def test_slice_too_short(self):
        self.assertExpectedInline(left_alone("slice_too_short"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [1], [2], [1], False, [0], 4);  arg2_1 = arg0_1 = arg1_1 = None
        slice_1: "f32[2, 4, 9]" = torch.ops.aten.slice.Tensor(convolution, 2, 0, -3);  convolution = None
        neg: "f32[2, 4, 9]" = torch.ops.aten.neg.default(slice_1)
        exp: "f32[2, 4, 9]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 9]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 9]" = torch.ops.aten.div.Tensor(slice_1, add);  slice_1 = add = None
        return (div,)
""")

    def test_transpose_act_padded_also_read(self):
        self.assertExpectedInline(left_alone("transpose_act_padded_also_read"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 10, 4]", arg1_1: "f32[4, 1, 3]", arg2_1: "f32[4]"):
        permute: "f32[2, 4, 10]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1]);  arg0_1 = None
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(permute, arg1_1, arg2_1, [1], [2], [1], False, [0], 4);  permute = arg1_1 = arg2_1 = None
        permute_1: "f32[2, 12, 4]" = torch.ops.aten.permute.default(convolution, [0, 2, 1]);  convolution = None
        neg: "f32[2, 12, 4]" = torch.ops.aten.neg.default(permute_1)
        exp: "f32[2, 12, 4]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 12, 4]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 12, 4]" = torch.ops.aten.div.Tensor(permute_1, add);  permute_1 = add = None
        slice_1: "f32[2, 10, 4]" = torch.ops.aten.slice.Tensor(div, 1, 0, 10)
        mean: "f32[2, 1, 4]" = torch.ops.aten.mean.dim(div, [1], True);  div = None
        mul: "f32[2, 10, 4]" = torch.ops.aten.mul.Tensor(slice_1, mean);  slice_1 = mean = None
        return (mul,)
""")

    def test_transpose_act_slice_keeps_more(self):
        self.assertExpectedInline(left_alone("transpose_act_slice_keeps_more"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 10, 4]", arg1_1: "f32[4, 1, 3]", arg2_1: "f32[4]"):
        permute: "f32[2, 4, 10]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1]);  arg0_1 = None
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(permute, arg1_1, arg2_1, [1], [2], [1], False, [0], 4);  permute = arg1_1 = arg2_1 = None
        permute_1: "f32[2, 12, 4]" = torch.ops.aten.permute.default(convolution, [0, 2, 1]);  convolution = None
        neg: "f32[2, 12, 4]" = torch.ops.aten.neg.default(permute_1)
        exp: "f32[2, 12, 4]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 12, 4]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 12, 4]" = torch.ops.aten.div.Tensor(permute_1, add);  permute_1 = add = None
        slice_1: "f32[2, 11, 4]" = torch.ops.aten.slice.Tensor(div, 1, 0, 11);  div = None
        return (slice_1,)
""")

    def test_transpose_act_slice_starts_late(self):
        self.assertExpectedInline(left_alone("transpose_act_slice_starts_late"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 10, 4]", arg1_1: "f32[4, 1, 3]", arg2_1: "f32[4]"):
        permute: "f32[2, 4, 10]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1]);  arg0_1 = None
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(permute, arg1_1, arg2_1, [1], [2], [1], False, [0], 4);  permute = arg1_1 = arg2_1 = None
        permute_1: "f32[2, 12, 4]" = torch.ops.aten.permute.default(convolution, [0, 2, 1]);  convolution = None
        neg: "f32[2, 12, 4]" = torch.ops.aten.neg.default(permute_1)
        exp: "f32[2, 12, 4]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 12, 4]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 12, 4]" = torch.ops.aten.div.Tensor(permute_1, add);  permute_1 = add = None
        slice_1: "f32[2, 10, 4]" = torch.ops.aten.slice.Tensor(div, 1, 1, 11);  div = None
        return (slice_1,)
""")

    def test_stride_2(self):
        self.assertExpectedInline(left_alone("stride_2"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 4, 6]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [2], [2], [1], False, [0], 4);  arg2_1 = arg0_1 = arg1_1 = None
        neg: "f32[2, 4, 6]" = torch.ops.aten.neg.default(convolution)
        exp: "f32[2, 4, 6]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 6]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 6]" = torch.ops.aten.div.Tensor(convolution, add);  convolution = add = None
        return (div,)
""")

    def test_dilation_2(self):
        self.assertExpectedInline(left_alone("dilation_2"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        convolution: "f32[2, 4, 14]" = torch.ops.aten.convolution.default(arg2_1, arg0_1, arg1_1, [1], [4], [2], False, [0], 4);  arg2_1 = arg0_1 = arg1_1 = None
        slice_1: "f32[2, 4, 10]" = torch.ops.aten.slice.Tensor(convolution, 2, 0, 10);  convolution = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(slice_1)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(slice_1, add);  slice_1 = add = None
        return (div,)
""")

    def test_circular(self):
        self.assertExpectedInline(left_alone("circular"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        empty: "f32[2, 4, 14]" = torch.ops.aten.empty.memory_format([2, 4, 14], dtype = torch.float32, layout = torch.strided, device = device, pin_memory = False)
        slice_1: "f32[2, 4, 10]" = torch.ops.aten.slice.Tensor(empty, 2, 2, 12)
        copy: "f32[2, 4, 10]" = torch.ops.aten.copy.default(slice_1, arg2_1);  slice_1 = arg2_1 = None
        slice_scatter: "f32[2, 4, 14]" = torch.ops.aten.slice_scatter.default(empty, copy, 2, 2, 12);  empty = copy = None
        slice_7: "f32[2, 4, 2]" = torch.ops.aten.slice.Tensor(slice_scatter, 2, 10, 12)
        slice_scatter_1: "f32[2, 4, 14]" = torch.ops.aten.slice_scatter.default(slice_scatter, slice_7, 2, 0, 2);  slice_scatter = slice_7 = None
        slice_12: "f32[2, 4, 2]" = torch.ops.aten.slice.Tensor(slice_scatter_1, 2, 2, 4)
        slice_scatter_2: "f32[2, 4, 14]" = torch.ops.aten.slice_scatter.default(slice_scatter_1, slice_12, 2, 12, 14);  slice_scatter_1 = slice_12 = None
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(slice_scatter_2, arg0_1, arg1_1, [1], [0], [1], False, [0], 4);  slice_scatter_2 = arg0_1 = arg1_1 = None
        slice_14: "f32[2, 4, 10]" = torch.ops.aten.slice.Tensor(convolution, 2, 0, 10);  convolution = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(slice_14)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(slice_14, add);  slice_14 = add = None
        return (div,)
""")

    def test_reflect(self):
        self.assertExpectedInline(left_alone("reflect"), """\
class Graph:
    def forward(self, arg0_1: "f32[4, 1, 3]", arg1_1: "f32[4]", arg2_1: "f32[2, 4, 10]"):
        iota: "i64[14]" = torch.ops.prims.iota.default(14, start = -2, step = 1, dtype = torch.int64, device = device, requires_grad = False)
        abs_1: "i64[14]" = torch.ops.aten.abs.default(iota);  iota = None
        sub: "i64[14]" = torch.ops.aten.sub.Tensor(9, abs_1);  abs_1 = None
        abs_2: "i64[14]" = torch.ops.aten.abs.default(sub);  sub = None
        sub_1: "i64[14]" = torch.ops.aten.sub.Tensor(9, abs_2);  abs_2 = None
        _unsafe_index: "f32[2, 4, 14]" = torch.ops.aten._unsafe_index.Tensor(arg2_1, [None, None, sub_1]);  arg2_1 = sub_1 = None
        convolution: "f32[2, 4, 12]" = torch.ops.aten.convolution.default(_unsafe_index, arg0_1, arg1_1, [1], [0], [1], False, [0], 4);  _unsafe_index = arg0_1 = arg1_1 = None
        slice_1: "f32[2, 4, 10]" = torch.ops.aten.slice.Tensor(convolution, 2, 0, 10);  convolution = None
        neg: "f32[2, 4, 10]" = torch.ops.aten.neg.default(slice_1)
        exp: "f32[2, 4, 10]" = torch.ops.aten.exp.default(neg);  neg = None
        add: "f32[2, 4, 10]" = torch.ops.aten.add.Tensor(exp, 1);  exp = None
        div: "f32[2, 4, 10]" = torch.ops.aten.div.Tensor(slice_1, add);  slice_1 = add = None
        return (div,)
""")
