"""Golden graphs of the attention pattern pass: the graph our joint pass hands on, normalised
(tests/helpers.normalize_graph), pinned with ``assertExpectedInline``.

Recognised forms (static shapes, inference and training) must show ``attention_fwd`` (and ``attention_bwd`` in
training) with no bmm or softmax left; left-alone forms (inference) keep their bmm/softmax and call no inductor_conv
op. Each test also asserts the exact rewrite count and compares outputs and gradients with float64 eager
(attention_forms_checks.check_recognised / check_frozen / check_left_alone, cached: one compilation serves this
file and tests/test_patterns_attention.py).

Regenerate with ``EXPECTTEST_ACCEPT=1 pytest tests/test_golden_graphs_attention.py`` and review every diff.
"""
import expecttest
from attention_forms_checks import (
    GOLDEN, GOLDEN_FROZEN, GOLDEN_LEFT_ALONE, GOLDEN_RECOGNISED, check_frozen, check_left_alone, check_recognised,
    compiled_dropout,
)
from helpers import ops_in

pytestmark = GOLDEN  # one pytest-xdist worker with the tests that share these compilations


def recognised(name: str, train: bool) -> str:
    assert (name, train) in GOLDEN_RECOGNISED, "list the case in GOLDEN_RECOGNISED (its xdist group)"
    return "".join(check_recognised(name, train=train, dynamic=False))


def left_alone(name: str) -> str:
    assert name in GOLDEN_LEFT_ALONE, "list the case in GOLDEN_LEFT_ALONE (its xdist group)"
    text = "".join(check_left_alone(name))
    assert "aten.bmm.default" in text and "inductor_conv" not in text
    return text


def frozen(name: str, frozen_inputs: str) -> str:
    """A recognised case trained with some inputs frozen (test_patterns_attention.py's FROZEN): the op's backward still
    returns every gradient, the graph keeps the ones it had and returns None for the others."""
    assert (name, frozen_inputs) in GOLDEN_FROZEN, "list the case in GOLDEN_FROZEN (its xdist group)"
    return "".join(check_frozen(name, frozen_inputs))


def dropout_training() -> str:
    """nn.Dropout(p=0.5) in training (attention_forms_cases.one_hot_probe): p and a fresh seed reach both ops."""
    _, _, _, counts, graphs = compiled_dropout(train=True)
    text = "".join(graphs)
    assert counts["attention"] == 1 and ops_in(text) == ["attention_fwd", "attention_bwd"], text
    return text


class TestRecognisedGraphs(expecttest.TestCase):
    def test_bert_additive_mask_inference(self):
        self.assertExpectedInline(recognised("bert_additive_mask", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [3, 4, 8, 8]);  arg3_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_bert_additive_mask_training(self):
        self.assertExpectedInline(recognised("bert_additive_mask", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 1, 1, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_bert_no_mask_inference(self):
        self.assertExpectedInline(recognised("bert_no_mask", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_bert_no_mask_training(self):
        self.assertExpectedInline(recognised("bert_no_mask", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, None, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11], self._out_spec)
""")

    def test_bert_learned_mask_bhss_training(self):
        self.assertExpectedInline(recognised("bert_learned_mask_bhss", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 4, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, True, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, getitem_5], self._out_spec)
""")

    def test_nanogpt_inference(self):
        self.assertExpectedInline(recognised("nanogpt", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 1, 12, 12]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        slice_1: "f32[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(arg3_1, 2, 0, 8);  arg3_1 = None
        slice_2: "f32[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        eq: "b8[1, 1, 8, 8]" = torch.ops.aten.eq.Scalar(slice_2, 0);  slice_2 = None
        bitwise_not_default: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(eq);  eq = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_not_default, [3, 4, 8, 8]);  bitwise_not_default = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_nanogpt_training(self):
        self.assertExpectedInline(recognised("nanogpt", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 1, 12, 12]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        slice_1: "f32[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(primals_4, 2, 0, 8);  primals_4 = None
        slice_2: "f32[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        eq: "b8[1, 1, 8, 8]" = torch.ops.aten.eq.Scalar(slice_2, 0);  slice_2 = None
        bitwise_not_default: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(eq);  eq = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_not_default, [3, 4, 8, 8]);  bitwise_not_default = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_hf_gpt2_inference(self):
        self.assertExpectedInline(recognised("hf_gpt2", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "b8[1, 1, 12, 12]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        slice_1: "b8[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(arg3_1, 2, 0, 8);  arg3_1 = None
        slice_2: "b8[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        any_dim: "b8[1, 1, 8, 1]" = torch.ops.aten.any.dim(slice_2, -1, True)
        bitwise_not_default: "b8[1, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(slice_2, bitwise_not_default);  slice_2 = bitwise_not_default = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_or_tensor, [3, 4, 8, 8]);  bitwise_or_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  where_self = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_hf_gpt2_training(self):
        self.assertExpectedInline(recognised("hf_gpt2", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "b8[1, 1, 12, 12]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        slice_1: "b8[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(primals_4, 2, 0, 8);  primals_4 = None
        slice_2: "b8[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        any_dim: "b8[1, 1, 8, 1]" = torch.ops.aten.any.dim(slice_2, -1, True)
        bitwise_not_default: "b8[1, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(slice_2, bitwise_not_default);  slice_2 = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_or_tensor, [3, 4, 8, 8]);  bitwise_or_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, where_self, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = where_self = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        where_self_1: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default_1, getitem_2);  bitwise_not_default = scalar_tensor_default_1 = getitem_2 = None
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(where_self_1, [0, 2, 1, 3]);  where_self_1 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_hf_gpt2_padding_inference(self):
        self.assertExpectedInline(recognised("hf_gpt2_padding", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "b8[1, 1, 12, 12]", arg4_1: "f32[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        slice_1: "b8[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(arg3_1, 2, 0, 8);  arg3_1 = None
        slice_2: "b8[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        any_dim: "b8[1, 1, 8, 1]" = torch.ops.aten.any.dim(slice_2, -1, True)
        bitwise_not_default: "b8[1, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(slice_2, bitwise_not_default);  slice_2 = bitwise_not_default = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_2: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[1, 1, 8, 8]" = torch.ops.aten.where.self(bitwise_or_tensor, scalar_tensor_default_2, scalar_tensor_default_1);  bitwise_or_tensor = scalar_tensor_default_2 = scalar_tensor_default_1 = None
        add_tensor: "f32[3, 1, 8, 8]" = torch.ops.aten.add.Tensor(where_self_1, arg4_1);  where_self_1 = arg4_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  where_self = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_gpt2_scalar_fill_padding_inference(self):
        self.assertExpectedInline(recognised("gpt2_scalar_fill_padding", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "b8[1, 1, 12, 12]", arg4_1: "f32[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        slice_1: "b8[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(arg3_1, 2, 0, 8);  arg3_1 = None
        slice_2: "b8[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        any_dim: "b8[1, 1, 8, 1]" = torch.ops.aten.any.dim(slice_2, -1, True)
        bitwise_not_default: "b8[1, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(slice_2, bitwise_not_default);  slice_2 = bitwise_not_default = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_2: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[1, 1, 8, 8]" = torch.ops.aten.where.self(bitwise_or_tensor, scalar_tensor_default_2, scalar_tensor_default_1);  bitwise_or_tensor = scalar_tensor_default_2 = scalar_tensor_default_1 = None
        add_tensor: "f32[3, 1, 8, 8]" = torch.ops.aten.add.Tensor(where_self_1, arg4_1);  where_self_1 = arg4_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  where_self = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_hf_gpt2_padding_training(self):
        self.assertExpectedInline(recognised("hf_gpt2_padding", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "b8[1, 1, 12, 12]"; primals_5: "f32[3, 1, 1, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        slice_1: "b8[1, 1, 8, 12]" = torch.ops.aten.slice.Tensor(primals_4, 2, 0, 8);  primals_4 = None
        slice_2: "b8[1, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_1, 3, 0, 8);  slice_1 = None
        any_dim: "b8[1, 1, 8, 1]" = torch.ops.aten.any.dim(slice_2, -1, True)
        bitwise_not_default: "b8[1, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[1, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(slice_2, bitwise_not_default);  slice_2 = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_2: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[1, 1, 8, 8]" = torch.ops.aten.where.self(bitwise_or_tensor, scalar_tensor_default_2, scalar_tensor_default_1);  bitwise_or_tensor = scalar_tensor_default_2 = scalar_tensor_default_1 = None
        add_tensor: "f32[3, 1, 8, 8]" = torch.ops.aten.add.Tensor(where_self_1, primals_5);  where_self_1 = primals_5 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        scalar_tensor_default_3: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, where_self, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = where_self = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        where_self_2: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default_3, getitem_2);  bitwise_not_default = scalar_tensor_default_3 = getitem_2 = None
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(where_self_2, [0, 2, 1, 3]);  where_self_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None, None], self._out_spec)
""")

    def test_hf_llama_repeat_kv_inference(self):
        self.assertExpectedInline(recognised("hf_llama_repeat_kv", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 2, 16]", arg2_1: "f32[3, 8, 2, 16]", arg3_1: "f32[3, 1, 8, 12]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        slice_1: "f32[3, 1, 8, 8]" = torch.ops.aten.slice.Tensor(arg3_1, 3, 0, 8);  arg3_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(slice_1, [3, 4, 8, 8]);  slice_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        return (clone_4,)
""")

    def test_hf_llama_repeat_kv_training(self):
        self.assertExpectedInline(recognised("hf_llama_repeat_kv", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 2, 16]"; primals_3: "f32[3, 8, 2, 16]"; primals_4: "f32[3, 1, 8, 12]"; tangents_1: "f32[3, 8, 4, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        slice_1: "f32[3, 1, 8, 8]" = torch.ops.aten.slice.Tensor(primals_4, 3, 0, 8);  primals_4 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(slice_1, [3, 4, 8, 8]);  slice_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1, 3]);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 2, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 2, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 2, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 2, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([clone_4, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_hf_gemma2_softcap_inference(self):
        self.assertExpectedInline(recognised("hf_gemma2_softcap", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 2, 16]", arg2_1: "f32[3, 8, 2, 16]", arg3_1: "f32[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [3, 4, 8, 8]);  arg3_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None, 1.5);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        return (clone_4,)
""")

    def test_hf_gemma2_softcap_training(self):
        self.assertExpectedInline(recognised("hf_gemma2_softcap", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 2, 16]"; primals_3: "f32[3, 8, 2, 16]"; primals_4: "f32[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 4, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None, 1.5)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1, 3]);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True, 1.5);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 2, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 2, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 2, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 2, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([clone_4, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_multi_query_broadcast_training(self):
        self.assertExpectedInline(recognised("multi_query_broadcast", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 1, 16]"; primals_3: "f32[3, 8, 1, 16]"; primals_4: "f32[3, 1, 1, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 1, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 1, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 1, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 1, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 1, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 1, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_t5_learned_bias_inference(self):
        self.assertExpectedInline(recognised("t5_learned_bias", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 4, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [3, 4, 8, 8]);  arg3_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_t5_learned_bias_training(self):
        self.assertExpectedInline(recognised("t5_learned_bias", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 4, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 1.0, None, True, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        sum_dim_int_list: "f32[1, 4, 8, 8]" = torch.ops.aten.sum.dim_IntList(getitem_5, [0], True);  getitem_5 = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, sum_dim_int_list], self._out_spec)
""")

    def test_t5_v5_bias_then_padding_inference(self):
        self.assertExpectedInline(recognised("t5_v5_bias_then_padding", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 4, 8, 8]", arg4_1: "f32[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(arg3_1, arg4_1);  arg3_1 = arg4_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_t5_v5_bias_then_padding_training(self):
        self.assertExpectedInline(recognised("t5_v5_bias_then_padding", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 4, 8, 8]"; primals_5: "f32[3, 1, 1, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(primals_4, primals_5);  primals_4 = primals_5 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 1.0, None, True, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        sum_dim_int_list: "f32[1, 4, 8, 8]" = torch.ops.aten.sum.dim_IntList(getitem_5, [0], True);  getitem_5 = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, sum_dim_int_list, None], self._out_spec)
""")

    def test_alibi_then_padding_inference(self):
        self.assertExpectedInline(recognised("alibi_then_padding", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 4, 1, 8]", arg4_1: "f32[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        add_tensor: "f32[3, 4, 1, 8]" = torch.ops.aten.add.Tensor(arg3_1, arg4_1);  arg3_1 = arg4_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_bloom_alibi_baddbmm_inference(self):
        self.assertExpectedInline(recognised("bloom_alibi_baddbmm", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 4, 1, 8]", arg4_1: "f32[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        expand: "f32[3, 4, 1, 8]" = torch.ops.aten.expand.default(arg3_1, [3, 4, 1, 8]);  arg3_1 = None
        clone: "f32[3, 4, 1, 8]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 1, 8]" = torch.ops.aten.view.default(clone, [12, 1, 8]);  clone = None
        expand_default: "f32[12, 8, 8]" = torch.ops.aten.expand.default(view, [12, 8, 8]);  view = None
        view_default: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(expand_default, [3, 4, 8, 8]);  expand_default = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(view_default, arg4_1);  view_default = arg4_1 = None
        expand_default_1: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default_1, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default_1 = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        clone_default: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(getitem, memory_format = torch.contiguous_format);  getitem = None
        view_default_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_default, [12, 8, 16]);  clone_default = None
        view_6: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default_1, [3, 4, 8, 16]);  view_default_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_6, [0, 2, 1, 3]);  view_6 = None
        clone_5: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_7: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_5, [3, 8, 64]);  clone_5 = None
        return (view_7,)
""")

    def test_bloom_alibi_baddbmm_training(self):
        self.assertExpectedInline(recognised("bloom_alibi_baddbmm", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 4, 1, 8]"; primals_5: "f32[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand: "f32[3, 4, 1, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 1, 8]);  primals_4 = None
        clone: "f32[3, 4, 1, 8]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 1, 8]" = torch.ops.aten.view.default(clone, [12, 1, 8]);  clone = None
        expand_default: "f32[12, 8, 8]" = torch.ops.aten.expand.default(view, [12, 8, 8]);  view = None
        view_default: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(expand_default, [3, 4, 8, 8]);  expand_default = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(view_default, primals_5);  view_default = primals_5 = None
        expand_default_1: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default_1, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        clone_default: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(getitem, memory_format = torch.contiguous_format)
        view_default_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_default, [12, 8, 16]);  clone_default = None
        view_6: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default_1, [3, 4, 8, 16]);  view_default_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_6, [0, 2, 1, 3]);  view_6 = None
        clone_5: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_7: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_5, [3, 8, 64]);  clone_5 = None
        view_8: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_8, [0, 2, 1, 3]);  view_8 = None
        clone_6: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_5, memory_format = torch.contiguous_format);  permute_5 = None
        view_9: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_6, [12, 8, 16]);  clone_6 = None
        view_default_2: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_9, [3, 4, 8, 16]);  view_9 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(view_default_2, permute, permute_1, permute_2, expand_default_1, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  view_default_2 = permute = permute_1 = permute_2 = expand_default_1 = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_7, permute_13, permute_12, permute_11, None, None], self._out_spec)
""")

    def test_mpt_alibi_masked_fill_inference(self):
        self.assertExpectedInline(recognised("mpt_alibi_masked_fill", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 4, 1, 8]", arg4_1: "b8[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        select: "f32[4, 1, 8]" = torch.ops.aten.select.int(arg3_1, 0, 0);  arg3_1 = None
        bitwise_not_default: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(arg4_1);  arg4_1 = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default, select, scalar_tensor_default);  select = scalar_tensor_default = None
        any_dim: "b8[3, 1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not_default, -1, True);  bitwise_not_default = None
        bitwise_not_default_1: "b8[3, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_1, permute);  scalar_tensor_default_1 = permute = None
        scalar_tensor_default_2: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_2: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_2, where_self);  bitwise_not_default_1 = scalar_tensor_default_2 = where_self = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(where_self_2, [3, 4, 8, 8]);  where_self_2 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self_1, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  where_self_1 = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_mpt_alibi_masked_fill_training(self):
        self.assertExpectedInline(recognised("mpt_alibi_masked_fill", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 4, 1, 8]"; primals_5: "b8[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        select: "f32[4, 1, 8]" = torch.ops.aten.select.int(primals_4, 0, 0);  primals_4 = None
        bitwise_not_default: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(primals_5);  primals_5 = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default, select, scalar_tensor_default);  select = scalar_tensor_default = None
        any_dim: "b8[3, 1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not_default, -1, True);  bitwise_not_default = None
        bitwise_not_default_1: "b8[3, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_1, permute);  scalar_tensor_default_1 = permute = None
        scalar_tensor_default_2: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_2: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_2, where_self);  scalar_tensor_default_2 = where_self = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(where_self_2, [3, 4, 8, 8]);  where_self_2 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self_1, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        scalar_tensor_default_3: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, where_self_1, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = where_self_1 = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        where_self_3: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_3, getitem_2);  bitwise_not_default_1 = scalar_tensor_default_3 = getitem_2 = None
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(where_self_3, [0, 2, 1, 3]);  where_self_3 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None, None], self._out_spec)
""")

    def test_xglm_clamped_bmm_inference(self):
        self.assertExpectedInline(recognised("xglm_clamped_bmm", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[3, 1, 8, 8]"):
        mul: "f32[3, 8, 4, 16]" = torch.ops.aten.mul.Tensor(arg0_1, 0.25);  arg0_1 = None
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(mul, [0, 2, 1, 3]);  mul = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [3, 4, 8, 8]);  arg3_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        clone_default: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(getitem, memory_format = torch.contiguous_format);  getitem = None
        view_default: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_default, [12, 8, 16]);  clone_default = None
        view_7: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default, [3, 4, 8, 16]);  view_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_8: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_8,)
""")

    def test_xglm_clamped_bmm_training(self):
        self.assertExpectedInline(recognised("xglm_clamped_bmm", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mul: "f32[3, 8, 4, 16]" = torch.ops.aten.mul.Tensor(primals_1, 0.25);  primals_1 = None
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(mul, [0, 2, 1, 3]);  mul = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        clone_default: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(getitem, memory_format = torch.contiguous_format)
        view_default: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_default, [12, 8, 16]);  clone_default = None
        view_7: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default, [3, 4, 8, 16]);  view_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_8: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_9: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_9, [0, 2, 1, 3]);  view_9 = None
        clone_5: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_5, memory_format = torch.contiguous_format);  permute_5 = None
        view_10: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_5, [12, 8, 16]);  clone_5 = None
        view_default_1: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_10, [3, 4, 8, 16]);  view_10 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(view_default_1, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 1.0, None, False, True);  view_default_1 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        mul_2: "f32[3, 8, 4, 16]" = torch.ops.aten.mul.Tensor(permute_13, 0.25);  permute_13 = None
        return pytree.tree_unflatten([view_8, mul_2, permute_12, permute_11, None], self._out_spec)
""")

    def test_falcon_alibi_twice_inference(self):
        self.assertExpectedInline(recognised("falcon_alibi_twice", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[1, 4, 1, 8]", arg4_1: "f32[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        mul_tensor: "f32[1, 4, 1, 8]" = torch.ops.aten.mul.Tensor(arg3_1, 0.25);  arg3_1 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(mul_tensor, arg4_1);  mul_tensor = arg4_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_falcon_alibi_twice_training(self):
        self.assertExpectedInline(recognised("falcon_alibi_twice", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 4, 1, 8]"; primals_5: "f32[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        mul_tensor: "f32[1, 4, 1, 8]" = torch.ops.aten.mul.Tensor(primals_4, 0.25);  primals_4 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(mul_tensor, primals_5);  mul_tensor = primals_5 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None, None], self._out_spec)
""")

    def test_bart_masked_bmm_inference(self):
        self.assertExpectedInline(recognised("bart_masked_bmm", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[3, 1, 8, 8]"):
        mul: "f32[3, 8, 4, 16]" = torch.ops.aten.mul.Tensor(arg0_1, 0.25);  arg0_1 = None
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(mul, [0, 2, 1, 3]);  mul = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [3, 4, 8, 8]);  arg3_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        clone_default: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(getitem, memory_format = torch.contiguous_format);  getitem = None
        view_default: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_default, [12, 8, 16]);  clone_default = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default, [3, 4, 8, 16]);  view_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_bart_masked_bmm_training(self):
        self.assertExpectedInline(recognised("bart_masked_bmm", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mul: "f32[3, 8, 4, 16]" = torch.ops.aten.mul.Tensor(primals_1, 0.25);  primals_1 = None
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(mul, [0, 2, 1, 3]);  mul = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 1.0, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        clone_default: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(getitem, memory_format = torch.contiguous_format)
        view_default: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_default, [12, 8, 16]);  clone_default = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default, [3, 4, 8, 16]);  view_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        clone_5: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_5, memory_format = torch.contiguous_format);  permute_5 = None
        view_8: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_5, [12, 8, 16]);  clone_5 = None
        view_default_1: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_8, [3, 4, 8, 16]);  view_8 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(view_default_1, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 1.0, None, False, True);  view_default_1 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        mul_2: "f32[3, 8, 4, 16]" = torch.ops.aten.mul.Tensor(permute_13, 0.25);  permute_13 = None
        return pytree.tree_unflatten([view_6, mul_2, permute_12, permute_11, None], self._out_spec)
""")

    def test_bmm_additive_mask_inference(self):
        self.assertExpectedInline(recognised("bmm_additive_mask", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[12, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [12, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view, 0);  view = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_1, 0);  view_1 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        expand_default: "f32[1, 12, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [1, 12, 8, 8]);  arg3_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, 0.0, False, 0.25, None);  unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = expand_default = None
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0);  getitem = None
        return (squeeze_dim,)
""")

    def test_bmm_additive_mask_training(self):
        self.assertExpectedInline(recognised("bmm_additive_mask", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[12, 8, 8]"; tangents_1: "f32[12, 8, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [12, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view, 0);  view = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_1, 0);  view_1 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        expand_default: "f32[1, 12, 8, 8]" = torch.ops.aten.expand.default(primals_4, [1, 12, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[1, 12, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0)
        unsqueeze_default_3: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(tangents_1, 0);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(unsqueeze_default_3, unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  unsqueeze_default_3 = unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[1, 12, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[1, 12, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[1, 12, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        squeeze_dim_1: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_4, 0);  getitem_4 = None
        squeeze_dim_2: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_3, 0);  getitem_3 = None
        squeeze_dim_3: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_2, 0);  getitem_2 = None
        view_3: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_1, [3, 4, 8, 16]);  squeeze_dim_1 = None
        permute_9: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_3, [0, 2, 1, 3]);  view_3 = None
        view_4: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_2, [3, 4, 8, 16]);  squeeze_dim_2 = None
        permute_10: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_4, [0, 2, 1, 3]);  view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_3, [3, 4, 8, 16]);  squeeze_dim_3 = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        return pytree.tree_unflatten([squeeze_dim, permute_11, permute_10, permute_9, None], self._out_spec)
""")

    def test_bmm_masked_fill_inference(self):
        self.assertExpectedInline(recognised("bmm_masked_fill", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "b8[1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [12, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bitwise_not_default: "b8[1, 8, 8]" = torch.ops.aten.bitwise_not.default(arg3_1);  arg3_1 = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view, 0);  view = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_1, 0);  view_1 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        expand_default: "b8[1, 12, 8, 8]" = torch.ops.aten.expand.default(bitwise_not_default, [1, 12, 8, 8]);  bitwise_not_default = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, 0.0, False, 0.25, None);  unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = expand_default = None
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0);  getitem = None
        return (squeeze_dim,)
""")

    def test_bmm_where_finfo_min_training(self):
        self.assertExpectedInline(recognised("bmm_where_finfo_min", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "b8[1, 8, 8]"; tangents_1: "f32[12, 8, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [12, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bitwise_not: "b8[1, 8, 8]" = torch.ops.aten.bitwise_not.default(primals_4);  primals_4 = None
        any_dim: "b8[1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not, -1, True)
        bitwise_not_default: "b8[1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[12, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, view);  scalar_tensor_default = view = None
        bitwise_or_tensor: "b8[1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(bitwise_not, bitwise_not_default);  bitwise_not = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(where_self, 0);  where_self = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_1, 0);  view_1 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        expand_default: "b8[1, 12, 8, 8]" = torch.ops.aten.expand.default(bitwise_or_tensor, [1, 12, 8, 8]);  bitwise_or_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[1, 12, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0)
        unsqueeze_default_3: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(tangents_1, 0);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(unsqueeze_default_3, unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  unsqueeze_default_3 = unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[1, 12, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[1, 12, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[1, 12, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        squeeze_dim_1: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_4, 0);  getitem_4 = None
        squeeze_dim_2: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_3, 0);  getitem_3 = None
        squeeze_dim_3: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_2, 0);  getitem_2 = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[12, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default_1, squeeze_dim_3);  bitwise_not_default = scalar_tensor_default_1 = squeeze_dim_3 = None
        view_3: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_1, [3, 4, 8, 16]);  squeeze_dim_1 = None
        permute_9: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_3, [0, 2, 1, 3]);  view_3 = None
        view_4: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_2, [3, 4, 8, 16]);  squeeze_dim_2 = None
        permute_10: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_4, [0, 2, 1, 3]);  view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(where_self_1, [3, 4, 8, 16]);  where_self_1 = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        return pytree.tree_unflatten([squeeze_dim, permute_11, permute_10, permute_9, None], self._out_spec)
""")

    def test_masked_fill_finfo_min_inference(self):
        self.assertExpectedInline(recognised("masked_fill_finfo_min", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "b8[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        bitwise_not_default: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(arg3_1);  arg3_1 = None
        any_dim: "b8[3, 1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not_default, -1, True)
        bitwise_not_default_1: "b8[3, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(bitwise_not_default, bitwise_not_default_1);  bitwise_not_default = bitwise_not_default_1 = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_or_tensor, [3, 4, 8, 8]);  bitwise_or_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  where_self = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_masked_fill_finfo_min_training(self):
        self.assertExpectedInline(recognised("masked_fill_finfo_min", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "b8[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        bitwise_not_default: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(primals_4);  primals_4 = None
        any_dim: "b8[3, 1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not_default, -1, True)
        bitwise_not_default_1: "b8[3, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(bitwise_not_default, bitwise_not_default_1);  bitwise_not_default = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_or_tensor, [3, 4, 8, 8]);  bitwise_or_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, where_self, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = where_self = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        where_self_1: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_1, getitem_2);  bitwise_not_default_1 = scalar_tensor_default_1 = getitem_2 = None
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(where_self_1, [0, 2, 1, 3]);  where_self_1 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_prescaled_q_inference(self):
        self.assertExpectedInline(recognised("prescaled_q", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_prescaled_q_training(self):
        self.assertExpectedInline(recognised("prescaled_q", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, None, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11], self._out_spec)
""")

    def test_scale_div_torch_full_inference(self):
        self.assertExpectedInline(recognised("scale_div_torch_full", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_scale_div_torch_full_training(self):
        self.assertExpectedInline(recognised("scale_div_torch_full", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, None, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11], self._out_spec)
""")

    def test_where_scalar_finfo_min_training(self):
        self.assertExpectedInline(recognised("where_scalar_finfo_min", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "b8[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        bitwise_not: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(primals_4);  primals_4 = None
        any_dim: "b8[3, 1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not, -1, True)
        bitwise_not_default: "b8[3, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default, permute);  scalar_tensor_default = permute = None
        bitwise_or_tensor: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_or.Tensor(bitwise_not, bitwise_not_default);  bitwise_not = None
        expand_default: "b8[3, 4, 8, 8]" = torch.ops.aten.expand.default(bitwise_or_tensor, [3, 4, 8, 8]);  bitwise_or_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, where_self, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = where_self = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        where_self_1: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default, scalar_tensor_default_1, getitem_2);  bitwise_not_default = scalar_tensor_default_1 = getitem_2 = None
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(where_self_1, [0, 2, 1, 3]);  where_self_1 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, None], self._out_spec)
""")

    def test_bmm_learned_bias_broadcast_training(self):
        self.assertExpectedInline(recognised("bmm_learned_bias_broadcast", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[1, 8, 8]"; tangents_1: "f32[12, 8, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [12, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view, 0);  view = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_1, 0);  view_1 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        expand_default: "f32[1, 12, 8, 8]" = torch.ops.aten.expand.default(primals_4, [1, 12, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[1, 12, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0)
        unsqueeze_default_3: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(tangents_1, 0);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(unsqueeze_default_3, unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, True, True);  unsqueeze_default_3 = unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[1, 12, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[1, 12, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[1, 12, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[1, 12, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        sum_dim_int_list: "f32[1, 1, 8, 8]" = torch.ops.aten.sum.dim_IntList(getitem_5, [0, 1], True);  getitem_5 = None
        view_default: "f32[1, 8, 8]" = torch.ops.aten.view.default(sum_dim_int_list, [1, 8, 8]);  sum_dim_int_list = None
        squeeze_dim_1: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_4, 0);  getitem_4 = None
        squeeze_dim_2: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_3, 0);  getitem_3 = None
        squeeze_dim_3: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem_2, 0);  getitem_2 = None
        view_3: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_1, [3, 4, 8, 16]);  squeeze_dim_1 = None
        permute_9: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_3, [0, 2, 1, 3]);  view_3 = None
        view_4: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_2, [3, 4, 8, 16]);  squeeze_dim_2 = None
        permute_10: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_4, [0, 2, 1, 3]);  view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim_3, [3, 4, 8, 16]);  squeeze_dim_3 = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        return pytree.tree_unflatten([squeeze_dim, permute_11, permute_10, permute_9, view_default], self._out_spec)
""")

    def test_bert_dropout_training(self):
        self.assertExpectedInline(dropout_training(), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        randint_low: "i64[1]" = torch.ops.aten.randint.low(0, 2147483647, [1], device = device, pin_memory = False)
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, None, 0.5, False, 0.25, randint_low)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, None, getitem, getitem_1, 0.5, False, 0.25, randint_low, False, True);  permute_5 = permute = permute_1 = permute_2 = getitem = getitem_1 = randint_low = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11], self._out_spec)
""")

    def test_kimi_key_assembled_training(self):
        # Kimi-Linear's key written into a new tensor: the op reads the written tensor (the slice_scatter of both
        # copies), and the backward's gradient of it flows into the two parts
        self.assertExpectedInline(recognised("kimi_key_assembled", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 4, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        empty: "f32[3, 4, 8, 16]" = torch.ops.aten.empty.memory_format([3, 4, 8, 16], dtype = torch.float32, layout = torch.strided, device = device, pin_memory = False)
        slice_1: "f32[3, 4, 8, 8]" = torch.ops.aten.slice.Tensor(empty, 3, 0, 8)
        slice_2: "f32[3, 4, 8, 8]" = torch.ops.aten.slice.Tensor(permute_1, 3, 0, 8)
        copy: "f32[3, 4, 8, 8]" = torch.ops.aten.copy.default(slice_1, slice_2);  slice_1 = slice_2 = None
        slice_scatter: "f32[3, 4, 8, 16]" = torch.ops.aten.slice_scatter.default(empty, copy, 3, 0, 8);  empty = copy = None
        slice_6: "f32[3, 1, 8, 16]" = torch.ops.aten.slice.Tensor(permute_1, 1, 0, 1);  permute_1 = None
        slice_7: "f32[3, 1, 8, 8]" = torch.ops.aten.slice.Tensor(slice_6, 3, 8, 9223372036854775807);  slice_6 = None
        expand: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(slice_7, [-1, 4, -1, -1]);  slice_7 = None
        slice_8: "f32[3, 4, 8, 8]" = torch.ops.aten.slice.Tensor(slice_scatter, 3, 8, 9223372036854775807)
        copy_1: "f32[3, 4, 8, 8]" = torch.ops.aten.copy.default(slice_8, expand);  slice_8 = expand = None
        slice_scatter_1: "f32[3, 4, 8, 16]" = torch.ops.aten.slice_scatter.default(slice_scatter, copy_1, 3, 8, 9223372036854775807);  slice_scatter = copy_1 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, slice_scatter_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_7: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_7, memory_format = torch.contiguous_format);  permute_7 = None
        permute_8: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1, 3]);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_8, permute, slice_scatter_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_8 = permute = slice_scatter_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        new_empty_strided: "f32[3, 4, 8, 16]" = torch.ops.aten.new_empty_strided.default(getitem_3, [3, 4, 8, 16], [512, 128, 16, 1])
        copy_2: "f32[3, 4, 8, 16]" = torch.ops.aten.copy.default(new_empty_strided, getitem_3);  new_empty_strided = getitem_3 = None
        slice_12: "f32[3, 4, 8, 8]" = torch.ops.aten.slice.Tensor(copy_2, 3, 8, 9223372036854775807)
        clone_5: "f32[3, 4, 8, 8]" = torch.ops.aten.clone.default(slice_12, memory_format = torch.contiguous_format)
        full: "f32[3, 4, 8, 8]" = torch.ops.aten.full.default([3, 4, 8, 8], 0, dtype = torch.float32, layout = torch.strided, device = device, pin_memory = False)
        copy_3: "f32[3, 4, 8, 8]" = torch.ops.aten.copy.default(slice_12, full);  slice_12 = full = None
        slice_scatter_2: "f32[3, 4, 8, 16]" = torch.ops.aten.slice_scatter.default(copy_2, copy_3, 3, 8, 9223372036854775807);  copy_2 = copy_3 = None
        sum_3: "f32[3, 1, 8, 8]" = torch.ops.aten.sum.dim_IntList(clone_5, [1], True);  clone_5 = None
        full_1: "f32[3, 1, 8, 16]" = torch.ops.aten.full.default([3, 1, 8, 16], 0, dtype = torch.float32, layout = torch.strided, device = device, pin_memory = False)
        slice_scatter_3: "f32[3, 1, 8, 16]" = torch.ops.aten.slice_scatter.default(full_1, sum_3, 3, 8, 9223372036854775807);  full_1 = sum_3 = None
        full_2: "f32[3, 4, 8, 16]" = torch.ops.aten.full.default([3, 4, 8, 16], 0, dtype = torch.float32, layout = torch.strided, device = device, pin_memory = False)
        slice_scatter_4: "f32[3, 4, 8, 16]" = torch.ops.aten.slice_scatter.default(full_2, slice_scatter_3, 1, 0, 1);  full_2 = slice_scatter_3 = None
        slice_15: "f32[3, 4, 8, 8]" = torch.ops.aten.slice.Tensor(slice_scatter_2, 3, 0, 8);  slice_scatter_2 = None
        clone_6: "f32[3, 4, 8, 8]" = torch.ops.aten.clone.default(slice_15, memory_format = torch.contiguous_format);  slice_15 = None
        full_3: "f32[3, 4, 8, 16]" = torch.ops.aten.full.default([3, 4, 8, 16], 0, dtype = torch.float32, layout = torch.strided, device = device, pin_memory = False)
        slice_scatter_5: "f32[3, 4, 8, 16]" = torch.ops.aten.slice_scatter.default(full_3, clone_6, 3, 0, 8);  full_3 = clone_6 = None
        add_1: "f32[3, 4, 8, 16]" = torch.ops.aten.add.Tensor(slice_scatter_4, slice_scatter_5);  slice_scatter_4 = slice_scatter_5 = None
        permute_16: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_17: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(add_1, [0, 2, 1, 3]);  add_1 = None
        permute_18: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([clone_3, permute_18, permute_17, permute_16, None], self._out_spec)
""")

    def test_bert_additive_mask_training_frozen_kv(self):
        self.assertExpectedInline(frozen("bert_additive_mask", "kv"), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 1, 1, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0];  attention_bwd_default = None
        permute_8: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_8, None, None, None], self._out_spec)
""")

    def test_hf_llama_repeat_kv_training_frozen_q(self):
        self.assertExpectedInline(frozen("hf_llama_repeat_kv", "q"), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 2, 16]"; primals_3: "f32[3, 8, 2, 16]"; primals_4: "f32[3, 1, 8, 12]"; tangents_1: "f32[3, 8, 4, 16]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        slice_1: "f32[3, 1, 8, 8]" = torch.ops.aten.slice.Tensor(primals_4, 3, 0, 8);  primals_4 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(slice_1, [3, 4, 8, 8]);  slice_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(tangents_1, [0, 2, 1, 3]);  tangents_1 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, False, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 2, 8, 16]" = attention_bwd_default[1]
        getitem_3: "f32[3, 2, 8, 16]" = attention_bwd_default[2];  attention_bwd_default = None
        permute_10: "f32[3, 8, 2, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_11: "f32[3, 8, 2, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([clone_4, None, permute_11, permute_10, None], self._out_spec)
""")


    def test_sam_rel_pos_3d_matmul_inference(self):
        self.assertExpectedInline(recognised("sam_rel_pos_3d_matmul", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[8, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [12, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        permute_4: "f32[16, 8]" = torch.ops.aten.permute.default(arg3_1, [1, 0]);  arg3_1 = None
        view_6: "f32[96, 16]" = torch.ops.aten.view.default(view, [96, 16])
        mm: "f32[96, 8]" = torch.ops.aten.mm.default(view_6, permute_4);  view_6 = permute_4 = None
        view_7: "f32[12, 8, 8]" = torch.ops.aten.view.default(mm, [12, 8, 8]);  mm = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view, 0);  view = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_1, 0);  view_1 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(view_2, 0);  view_2 = None
        expand_default: "f32[1, 12, 8, 8]" = torch.ops.aten.expand.default(view_7, [1, 12, 8, 8]);  view_7 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, expand_default, 0.0, False, 0.25, None);  unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = expand_default = None
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0);  getitem = None
        view_11: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(squeeze_dim, [3, 4, 8, 16]);  squeeze_dim = None
        permute_5: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_11, [0, 2, 1, 3]);  view_11 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_5, memory_format = torch.contiguous_format);  permute_5 = None
        view_12: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_12,)
""")

    def test_torch_mha_key_padding_inference(self):
        self.assertExpectedInline(recognised("torch_mha_key_padding", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[12, 1, 8]"):
        permute: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(arg0_1, [1, 0, 2, 3]);  arg0_1 = None
        clone: "f32[8, 3, 4, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[8, 12, 16]" = torch.ops.aten.view.default(clone, [8, 12, 16]);  clone = None
        permute_1: "f32[12, 8, 16]" = torch.ops.aten.permute.default(view, [1, 0, 2]);  view = None
        permute_2: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(arg1_1, [1, 0, 2, 3]);  arg1_1 = None
        clone_1: "f32[8, 3, 4, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_1: "f32[8, 12, 16]" = torch.ops.aten.view.default(clone_1, [8, 12, 16]);  clone_1 = None
        permute_3: "f32[12, 8, 16]" = torch.ops.aten.permute.default(view_1, [1, 0, 2]);  view_1 = None
        permute_4: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(arg2_1, [1, 0, 2, 3]);  arg2_1 = None
        clone_2: "f32[8, 3, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_2: "f32[8, 12, 16]" = torch.ops.aten.view.default(clone_2, [8, 12, 16]);  clone_2 = None
        permute_5: "f32[12, 8, 16]" = torch.ops.aten.permute.default(view_2, [1, 0, 2]);  view_2 = None
        unsqueeze_default: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(permute_1, 0);  permute_1 = None
        unsqueeze_default_1: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(permute_3, 0);  permute_3 = None
        unsqueeze_default_2: "f32[1, 12, 8, 16]" = torch.ops.aten.unsqueeze.default(permute_5, 0);  permute_5 = None
        expand_default: "f32[12, 8, 8]" = torch.ops.aten.expand.default(arg3_1, [12, 8, 8]);  arg3_1 = None
        unsqueeze_default_3: "f32[1, 12, 8, 8]" = torch.ops.aten.unsqueeze.default(expand_default, 0);  expand_default = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(unsqueeze_default, unsqueeze_default_1, unsqueeze_default_2, unsqueeze_default_3, 0.0, False, 0.25, None);  unsqueeze_default = unsqueeze_default_1 = unsqueeze_default_2 = unsqueeze_default_3 = None
        getitem: "f32[1, 12, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        squeeze_dim: "f32[12, 8, 16]" = torch.ops.aten.squeeze.dim(getitem, 0);  getitem = None
        permute_7: "f32[8, 12, 16]" = torch.ops.aten.permute.default(squeeze_dim, [1, 0, 2]);  squeeze_dim = None
        clone_4: "f32[8, 12, 16]" = torch.ops.aten.clone.default(permute_7, memory_format = torch.contiguous_format);  permute_7 = None
        view_3: "f32[8, 3, 64]" = torch.ops.aten.view.default(clone_4, [8, 3, 64]);  clone_4 = None
        permute_8: "f32[3, 8, 64]" = torch.ops.aten.permute.default(view_3, [1, 0, 2]);  view_3 = None
        return (permute_8,)
""")

    def test_xlnet_subtracted_mask_inference(self):
        # the mask subtracted after the scale is added negated; the term computed from q, added before the scale
        # with a 0, reaches the op scaled
        self.assertExpectedInline(recognised("xlnet_subtracted_mask", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[8, 16]", arg4_1: "f32[3, 1, 8, 8]"):
        permute: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(arg0_1, [1, 0, 2, 3]);  arg0_1 = None
        permute_1: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(arg1_1, [1, 0, 2, 3]);  arg1_1 = None
        permute_2: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(arg2_1, [1, 0, 2, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(permute, [1, 2, 0, 3])
        permute_4: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(permute_1, [1, 2, 0, 3]);  permute_1 = None
        permute_6: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(permute, [1, 2, 0, 3]);  permute = None
        permute_7: "f32[16, 8]" = torch.ops.aten.permute.default(arg3_1, [1, 0]);  arg3_1 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_6, memory_format = torch.contiguous_format);  permute_6 = None
        view_3: "f32[96, 16]" = torch.ops.aten.view.default(clone_2, [96, 16]);  clone_2 = None
        mm: "f32[96, 8]" = torch.ops.aten.mm.default(view_3, permute_7);  view_3 = permute_7 = None
        view_4: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(mm, [3, 4, 8, 8]);  mm = None
        mul_1: "f32[3, 1, 8, 8]" = torch.ops.aten.mul.Tensor(arg4_1, 1e+30);  arg4_1 = None
        neg_default: "f32[3, 1, 8, 8]" = torch.ops.aten.neg.default(mul_1);  mul_1 = None
        permute_8: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(permute_2, [1, 2, 0, 3]);  permute_2 = None
        mul_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_4, 0.25);  view_4 = None
        add_tensor_1: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(mul_tensor, neg_default);  mul_tensor = neg_default = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor_1, [3, 4, 8, 8]);  add_tensor_1 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute_3, permute_4, permute_8, expand_default, 0.0, False, 0.25, None);  permute_3 = permute_4 = permute_8 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_9: "f32[8, 3, 4, 16]" = torch.ops.aten.permute.default(getitem, [2, 0, 1, 3]);  getitem = None
        permute_10: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(permute_9, [1, 0, 2, 3]);  permute_9 = None
        clone_5: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_10, memory_format = torch.contiguous_format);  permute_10 = None
        view_8: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_5, [3, 8, 64]);  clone_5 = None
        return (view_8,)
""")

    def test_funnel_three_terms_inference(self):
        # the two terms added to the scores are summed first, then the negated mask
        self.assertExpectedInline(recognised("funnel_three_terms", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[8, 16]", arg4_1: "f32[1, 4, 1, 8]", arg5_1: "f32[3, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_4: "f32[16, 8]" = torch.ops.aten.permute.default(arg3_1, [1, 0]);  arg3_1 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format)
        view_3: "f32[96, 16]" = torch.ops.aten.view.default(clone_2, [96, 16]);  clone_2 = None
        mm: "f32[96, 8]" = torch.ops.aten.mm.default(view_3, permute_4);  view_3 = permute_4 = None
        view_4: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(mm, [3, 4, 8, 8]);  mm = None
        add_tensor_1: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(view_4, arg4_1);  view_4 = arg4_1 = None
        unsqueeze: "f32[3, 1, 8]" = torch.ops.aten.unsqueeze.default(arg5_1, 1);  arg5_1 = None
        unsqueeze_1: "f32[3, 1, 1, 8]" = torch.ops.aten.unsqueeze.default(unsqueeze, 2);  unsqueeze = None
        sub: "f32[3, 1, 1, 8]" = torch.ops.aten.sub.Tensor(1, unsqueeze_1);  unsqueeze_1 = None
        mul_1: "f32[3, 1, 1, 8]" = torch.ops.aten.mul.Tensor(sub, 1000000.0);  sub = None
        neg_default: "f32[3, 1, 1, 8]" = torch.ops.aten.neg.default(mul_1);  mul_1 = None
        add_tensor_2: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(add_tensor_1, neg_default);  add_tensor_1 = neg_default = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor_2, [3, 4, 8, 8]);  add_tensor_2 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None);  permute = permute_1 = permute_2 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_5: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_5: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_5, memory_format = torch.contiguous_format);  permute_5 = None
        view_8: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_5, [3, 8, 64]);  clone_5 = None
        return (view_8,)
""")

    def test_cpmant_bias_masked_fill_remasked_training(self):
        self.assertExpectedInline(recognised("cpmant_bias_masked_fill_remasked", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[3, 4, 8, 8]"; primals_5: "b8[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        _tensor_constant0: "b8[]" = self._tensor_constant0
        lift_fresh_copy: "b8[]" = torch.ops.aten.lift_fresh_copy.default(_tensor_constant0);  _tensor_constant0 = None
        eq: "b8[3, 1, 8, 8]" = torch.ops.aten.eq.Tensor(primals_5, lift_fresh_copy);  primals_5 = lift_fresh_copy = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 1, 8, 8]" = torch.ops.aten.where.self(eq, scalar_tensor_default, scalar_tensor_default_1);  eq = scalar_tensor_default = scalar_tensor_default_1 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(primals_4, where_self);  primals_4 = where_self = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, True, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, getitem_5, None], self._out_spec)
""")

    def test_fastspeech2_bias_then_scale_masked_fill_remasked_inference(self):
        self.assertExpectedInline(recognised("fastspeech2_bias_then_scale_masked_fill_remasked", train=False), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[3, 4, 8, 8]", arg4_1: "b8[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_default: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 1, 1, 8]" = torch.ops.aten.where.self(arg4_1, scalar_tensor_default, scalar_tensor_default_1);  arg4_1 = scalar_tensor_default = scalar_tensor_default_1 = None
        div_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(arg3_1, 4.0);  arg3_1 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(div_tensor, where_self);  div_tensor = where_self = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_default, permute_1, expand_default, 0.0, False, 0.25, None);  permute = permute_default = permute_1 = expand_default = None
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0];  attention_fwd_default = None
        permute_3: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3]);  getitem = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_3, memory_format = torch.contiguous_format);  permute_3 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_bros_bias_then_scale_training(self):
        self.assertExpectedInline(recognised("bros_bias_then_scale", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[8, 16]"; primals_5: "f32[3, 1, 1, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        permute_4: "f32[16, 8]" = torch.ops.aten.permute.default(primals_4, [1, 0]);  primals_4 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format)
        view_3: "f32[96, 16]" = torch.ops.aten.view.default(clone_2, [96, 16]);  clone_2 = None
        mm: "f32[96, 8]" = torch.ops.aten.mm.default(view_3, permute_4)
        view_4: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(mm, [3, 4, 8, 8]);  mm = None
        div_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(view_4, 4.0);  view_4 = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(div_tensor, primals_5);  div_tensor = primals_5 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(add_tensor, [3, 4, 8, 8]);  add_tensor = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_5: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_5: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_5, memory_format = torch.contiguous_format);  permute_5 = None
        view_8: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_5, [3, 8, 64]);  clone_5 = None
        view_9: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_6: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_9, [0, 2, 1, 3]);  view_9 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_6, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, True, True);  permute_6 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        div_tensor_1: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(getitem_5, 4.0);  getitem_5 = None
        view_13: "f32[96, 8]" = torch.ops.aten.view.default(div_tensor_1, [96, 8]);  div_tensor_1 = None
        permute_9: "f32[8, 96]" = torch.ops.aten.permute.default(view_13, [1, 0])
        mm_1: "f32[8, 16]" = torch.ops.aten.mm.default(permute_9, view_3);  permute_9 = view_3 = None
        permute_11: "f32[8, 16]" = torch.ops.aten.permute.default(permute_4, [1, 0]);  permute_4 = None
        mm_2: "f32[96, 16]" = torch.ops.aten.mm.default(view_13, permute_11);  view_13 = permute_11 = None
        view_14: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(mm_2, [3, 4, 8, 16]);  mm_2 = None
        add_2: "f32[3, 4, 8, 16]" = torch.ops.aten.add.Tensor(view_14, getitem_2);  view_14 = getitem_2 = None
        permute_16: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_17: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_18: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(add_2, [0, 2, 1, 3]);  add_2 = None
        return pytree.tree_unflatten([view_8, permute_18, permute_17, permute_16, mm_1, None], self._out_spec)
""")

    def test_deberta_v3_disentangled_training(self):
        self.assertExpectedInline(recognised("deberta_v3_disentangled", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[8, 16]"; primals_5: "b8[3, 1, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, primals_5, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format);  permute = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [-1, 8, 16]);  clone = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        clone_1: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_1, memory_format = torch.contiguous_format);  permute_1 = None
        view_1: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_1, [-1, 8, 16]);  clone_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_2, memory_format = torch.contiguous_format);  permute_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [-1, 8, 16]);  clone_2 = None
        full_default: "f32[]" = torch.ops.aten.full.default([], 16.0, dtype = torch.float32, device = device, pin_memory = False)
        mul: "f32[]" = torch.ops.aten.mul.Tensor(full_default, 3);  full_default = None
        sqrt: "f32[]" = torch.ops.aten.sqrt.default(mul);  mul = None
        permute_4: "f32[16, 8]" = torch.ops.aten.permute.default(primals_4, [1, 0])
        view_3: "f32[96, 16]" = torch.ops.aten.view.default(view, [96, 16])
        mm: "f32[96, 8]" = torch.ops.aten.mm.default(view_3, permute_4)
        view_4: "f32[12, 8, 8]" = torch.ops.aten.view.default(mm, [12, 8, 8]);  mm = None
        permute_5: "f32[16, 8]" = torch.ops.aten.permute.default(primals_4, [1, 0]);  primals_4 = None
        view_5: "f32[96, 16]" = torch.ops.aten.view.default(view_1, [96, 16])
        mm_1: "f32[96, 8]" = torch.ops.aten.mm.default(view_5, permute_5)
        view_6: "f32[12, 8, 8]" = torch.ops.aten.view.default(mm_1, [12, 8, 8]);  mm_1 = None
        permute_6: "f32[12, 8, 8]" = torch.ops.aten.permute.default(view_6, [0, 2, 1]);  view_6 = None
        add: "f32[12, 8, 8]" = torch.ops.aten.add.Tensor(view_4, permute_6);  view_4 = permute_6 = None
        div_1: "f32[12, 8, 8]" = torch.ops.aten.div.Tensor(add, sqrt);  add = None
        bitwise_not: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(primals_5);  primals_5 = None
        view_default: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view, [3, 4, 8, 16]);  view = None
        view_default_1: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_1, [3, 4, 8, 16]);  view_1 = None
        view_default_2: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_2, [3, 4, 8, 16]);  view_2 = None
        div_tensor: "f32[3, 4, 8, 16]" = torch.ops.aten.div.Tensor(view_default_1, sqrt);  view_default_1 = None
        expand_default: "f32[12, 8, 8]" = torch.ops.aten.expand.default(div_1, [12, 8, 8]);  div_1 = None
        view_default_3: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(expand_default, [3, 4, 8, 8]);  expand_default = None
        bitwise_not_default: "b8[3, 1, 8, 8]" = torch.ops.aten.bitwise_not.default(bitwise_not);  bitwise_not = None
        scalar_tensor_default: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        where_self: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default, view_default_3, scalar_tensor_default);  view_default_3 = scalar_tensor_default = None
        any_dim: "b8[3, 1, 8, 1]" = torch.ops.aten.any.dim(bitwise_not_default, -1, True)
        bitwise_not_default_1: "b8[3, 1, 8, 1]" = torch.ops.aten.bitwise_not.default(any_dim);  any_dim = None
        scalar_tensor_default_1: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_1: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_1, view_default);  scalar_tensor_default_1 = view_default = None
        scalar_tensor_default_2: "f32[]" = torch.ops.aten.scalar_tensor.default(0.0, dtype = torch.float32, layout = torch.strided, device = device)
        where_self_2: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_2, where_self);  scalar_tensor_default_2 = where_self = None
        expand_default_1: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(where_self_2, [3, 4, 8, 8]);  where_self_2 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(where_self_1, div_tensor, view_default_2, expand_default_1, 0.0, False, 1.0, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        view_default_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(getitem, [12, 8, 16])
        scalar_tensor_default_3: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_4: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        scalar_tensor_default_5: "f32[]" = torch.ops.aten.scalar_tensor.default(0, dtype = torch.float32, layout = torch.strided, device = device)
        view_9: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default_4, [-1, 4, 8, 16]);  view_default_4 = None
        permute_7: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_9, [0, 2, 1, 3]);  view_9 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_7, memory_format = torch.contiguous_format);  permute_7 = None
        view_10: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        view_11: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_8: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_11, [0, 2, 1, 3]);  view_11 = None
        clone_5: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(permute_8, memory_format = torch.contiguous_format);  permute_8 = None
        view_12: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_5, [12, 8, 16]);  clone_5 = None
        view_default_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_12, [3, 4, 8, 16]);  view_12 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(view_default_5, where_self_1, div_tensor, view_default_2, expand_default_1, getitem, getitem_1, 0.0, False, 1.0, None, True, True);  view_default_5 = where_self_1 = div_tensor = view_default_2 = expand_default_1 = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        where_self_4: "f32[3, 4, 8, 16]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_4, getitem_2);  scalar_tensor_default_4 = getitem_2 = None
        view_default_9: "f32[12, 8, 16]" = torch.ops.aten.view.default(where_self_4, [12, 8, 16]);  where_self_4 = None
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        div_tensor_1: "f32[3, 4, 8, 16]" = torch.ops.aten.div.Tensor(getitem_3, sqrt);  getitem_3 = None
        view_default_8: "f32[12, 8, 16]" = torch.ops.aten.view.default(div_tensor_1, [12, 8, 16]);  div_tensor_1 = None
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        view_default_7: "f32[12, 8, 16]" = torch.ops.aten.view.default(getitem_4, [12, 8, 16]);  getitem_4 = None
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        where_self_3: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default_1, scalar_tensor_default_3, getitem_5);  bitwise_not_default_1 = scalar_tensor_default_3 = getitem_5 = None
        where_self_5: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(bitwise_not_default, where_self_3, scalar_tensor_default_5);  bitwise_not_default = where_self_3 = scalar_tensor_default_5 = None
        view_default_6: "f32[12, 8, 8]" = torch.ops.aten.view.default(where_self_5, [12, 8, 8]);  where_self_5 = None
        div_3: "f32[12, 8, 8]" = torch.ops.aten.div.Tensor(view_default_6, sqrt);  view_default_6 = sqrt = None
        permute_11: "f32[12, 8, 8]" = torch.ops.aten.permute.default(div_3, [0, 2, 1])
        clone_6: "f32[12, 8, 8]" = torch.ops.aten.clone.default(permute_11, memory_format = torch.contiguous_format);  permute_11 = None
        view_15: "f32[96, 8]" = torch.ops.aten.view.default(clone_6, [96, 8]);  clone_6 = None
        permute_12: "f32[8, 96]" = torch.ops.aten.permute.default(view_15, [1, 0])
        mm_2: "f32[8, 16]" = torch.ops.aten.mm.default(permute_12, view_5);  permute_12 = view_5 = None
        permute_14: "f32[8, 16]" = torch.ops.aten.permute.default(permute_5, [1, 0]);  permute_5 = None
        mm_3: "f32[96, 16]" = torch.ops.aten.mm.default(view_15, permute_14);  view_15 = permute_14 = None
        view_16: "f32[12, 8, 16]" = torch.ops.aten.view.default(mm_3, [12, 8, 16]);  mm_3 = None
        view_17: "f32[96, 8]" = torch.ops.aten.view.default(div_3, [96, 8]);  div_3 = None
        permute_16: "f32[8, 96]" = torch.ops.aten.permute.default(view_17, [1, 0])
        mm_4: "f32[8, 16]" = torch.ops.aten.mm.default(permute_16, view_3);  permute_16 = view_3 = None
        permute_18: "f32[8, 16]" = torch.ops.aten.permute.default(permute_4, [1, 0]);  permute_4 = None
        mm_5: "f32[96, 16]" = torch.ops.aten.mm.default(view_17, permute_18);  view_17 = permute_18 = None
        view_18: "f32[12, 8, 16]" = torch.ops.aten.view.default(mm_5, [12, 8, 16]);  mm_5 = None
        add_2: "f32[8, 16]" = torch.ops.aten.add.Tensor(mm_2, mm_4);  mm_2 = mm_4 = None
        add_3: "f32[12, 8, 16]" = torch.ops.aten.add.Tensor(view_18, view_default_9);  view_18 = view_default_9 = None
        add_4: "f32[12, 8, 16]" = torch.ops.aten.add.Tensor(view_16, view_default_8);  view_16 = view_default_8 = None
        view_19: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(view_default_7, [3, 4, 8, 16]);  view_default_7 = None
        permute_23: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_19, [0, 2, 1, 3]);  view_19 = None
        view_20: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(add_4, [3, 4, 8, 16]);  add_4 = None
        permute_24: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_20, [0, 2, 1, 3]);  view_20 = None
        view_21: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(add_3, [3, 4, 8, 16]);  add_3 = None
        permute_25: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_21, [0, 2, 1, 3]);  view_21 = None
        return pytree.tree_unflatten([view_10, permute_25, permute_24, permute_23, add_2, None], self._out_spec)
""")

class TestLeftAloneGraphs(expecttest.TestCase):
    def test_weights_used_in_graph(self):
        self.assertExpectedInline(left_alone("weights_used_in_graph"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, 0.25);  view_2 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(mul, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(mul, amax);  mul = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8])
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        amax_1: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(div, [-1], True);  div = None
        add: "f32[3, 4, 8, 16]" = torch.ops.aten.add.Tensor(view_5, amax_1);  view_5 = amax_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(add, [0, 2, 1, 3]);  add = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_weights_stored(self):
        self.assertExpectedInline(left_alone("weights_stored"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, 0.25);  view_2 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(mul, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(mul, amax);  mul = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8])
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6, div)
""")

    def test_softmax_dim_minus2(self):
        self.assertExpectedInline(left_alone("softmax_dim_minus2"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, 0.25);  view_2 = None
        amax: "f32[3, 4, 1, 8]" = torch.ops.aten.amax.default(mul, [-2], True)
        neg_default: "f32[3, 4, 1, 8]" = torch.ops.aten.neg.default(amax);  amax = None
        add_tensor: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(mul, neg_default);  mul = neg_default = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(add_tensor);  add_tensor = None
        sum_1: "f32[3, 4, 1, 8]" = torch.ops.aten.sum.dim_IntList(exp, [-2], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8]);  div = None
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_weights_returned(self):
        self.assertExpectedInline(left_alone("weights_returned"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, 0.25);  view_2 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(mul, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(mul, amax);  mul = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8])
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6, div)
""")

    def test_mask_from_scores(self):
        self.assertExpectedInline(left_alone("mask_from_scores"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, 0.25);  view_2 = None
        lt: "b8[3, 4, 8, 8]" = torch.ops.aten.lt.Scalar(mul, -1.0)
        scalar_tensor: "f32[]" = torch.ops.aten.scalar_tensor.default(-inf, dtype = torch.float32, layout = torch.strided, device = device)
        where: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(lt, scalar_tensor, mul);  lt = scalar_tensor = mul = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(where, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(where, amax);  where = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8]);  div = None
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_head_dim_8(self):
        self.assertExpectedInline(left_alone("head_dim_8"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 8]", arg1_1: "f32[3, 8, 4, 8]", arg2_1: "f32[3, 8, 4, 8]"):
        permute: "f32[3, 4, 8, 8]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 8]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 8]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 8, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 8]);  permute = None
        clone: "f32[3, 4, 8, 8]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 8]" = torch.ops.aten.view.default(clone, [12, 8, 8]);  clone = None
        expand_1: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 8, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 8, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 8, 8]" = torch.ops.aten.view.default(clone_1, [12, 8, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(view_2, 2.8284271247461903);  view_2 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(div, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(div, amax);  div = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div_1: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div_1, [3, 4, 8, 8]);  div_1 = None
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 8]);  permute_2 = None
        clone_3: "f32[3, 4, 8, 8]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 8]" = torch.ops.aten.view.default(clone_3, [12, 8, 8]);  clone_3 = None
        bmm_1: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 8]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 8]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_4: "f32[3, 8, 4, 8]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 32]" = torch.ops.aten.view.default(clone_4, [3, 8, 32]);  clone_4 = None
        return (view_6,)
""")

    def test_masked_fill_minus_1e4(self):
        self.assertExpectedInline(left_alone("masked_fill_minus_1e4"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "b8[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, 0.25);  view_2 = None
        scalar_tensor: "f32[]" = torch.ops.aten.scalar_tensor.default(-10000.0, dtype = torch.float32, layout = torch.strided, device = device)
        where: "f32[3, 4, 8, 8]" = torch.ops.aten.where.self(arg3_1, scalar_tensor, mul);  arg3_1 = scalar_tensor = mul = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(where, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(where, amax);  where = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8]);  div = None
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_int_additive_mask(self):
        self.assertExpectedInline(left_alone("int_additive_mask"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "i64[3, 1, 1, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(view_2, 4.0);  view_2 = None
        add: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(div, arg3_1);  div = arg3_1 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(add, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(add, amax);  add = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div_1: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div_1, [3, 4, 8, 8]);  div_1 = None
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_3: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_3, [12, 8, 16]);  clone_3 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_4, [3, 8, 64]);  clone_4 = None
        return (view_6,)
""")

    def test_scale_along_keys(self):
        self.assertExpectedInline(left_alone("scale_along_keys"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 4, 16]", arg2_1: "f32[3, 8, 4, 16]", arg3_1: "f32[8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(permute_1, [0, 1, 3, 2]);  permute_1 = None
        expand: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone, [12, 8, 16]);  clone = None
        expand_1: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        clone_1: "f32[3, 4, 16, 8]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[12, 16, 8]" = torch.ops.aten.view.default(clone_1, [12, 16, 8]);  clone_1 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view, view_1);  view = view_1 = None
        view_2: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_2, arg3_1);  view_2 = arg3_1 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(mul, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(mul, amax);  mul = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_2: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div, [3, 4, 8, 8]);  div = None
        view_3: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_2, [12, 8, 8]);  expand_2 = None
        expand_3: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute_2, [3, 4, 8, 16]);  permute_2 = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_3, memory_format = torch.contiguous_format);  expand_3 = None
        view_4: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_3, view_4);  view_3 = view_4 = None
        view_5: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_5, [0, 2, 1, 3]);  view_5 = None
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        return (view_6,)
""")

    def test_softcap_two_constants(self):
        self.assertExpectedInline(left_alone("softcap_two_constants"), """\
class Graph:
    def forward(self, arg0_1: "f32[3, 8, 4, 16]", arg1_1: "f32[3, 8, 2, 16]", arg2_1: "f32[3, 8, 2, 16]", arg3_1: "f32[3, 1, 8, 8]"):
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(arg0_1, [0, 2, 1, 3]);  arg0_1 = None
        permute_1: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(arg1_1, [0, 2, 1, 3]);  arg1_1 = None
        permute_2: "f32[3, 2, 8, 16]" = torch.ops.aten.permute.default(arg2_1, [0, 2, 1, 3]);  arg2_1 = None
        unsqueeze: "f32[3, 2, 1, 8, 16]" = torch.ops.aten.unsqueeze.default(permute_1, 2);  permute_1 = None
        expand: "f32[3, 2, 2, 8, 16]" = torch.ops.aten.expand.default(unsqueeze, [3, 2, 2, 8, 16]);  unsqueeze = None
        clone: "f32[3, 2, 2, 8, 16]" = torch.ops.aten.clone.default(expand, memory_format = torch.contiguous_format);  expand = None
        view: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(clone, [3, 4, 8, 16]);  clone = None
        unsqueeze_1: "f32[3, 2, 1, 8, 16]" = torch.ops.aten.unsqueeze.default(permute_2, 2);  permute_2 = None
        expand_1: "f32[3, 2, 2, 8, 16]" = torch.ops.aten.expand.default(unsqueeze_1, [3, 2, 2, 8, 16]);  unsqueeze_1 = None
        clone_1: "f32[3, 2, 2, 8, 16]" = torch.ops.aten.clone.default(expand_1, memory_format = torch.contiguous_format);  expand_1 = None
        view_1: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(clone_1, [3, 4, 8, 16]);  clone_1 = None
        permute_3: "f32[3, 4, 16, 8]" = torch.ops.aten.permute.default(view, [0, 1, 3, 2]);  view = None
        expand_2: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(permute, [3, 4, 8, 16]);  permute = None
        clone_2: "f32[3, 4, 8, 16]" = torch.ops.aten.clone.default(expand_2, memory_format = torch.contiguous_format);  expand_2 = None
        view_2: "f32[12, 8, 16]" = torch.ops.aten.view.default(clone_2, [12, 8, 16]);  clone_2 = None
        expand_3: "f32[3, 4, 16, 8]" = torch.ops.aten.expand.default(permute_3, [3, 4, 16, 8]);  permute_3 = None
        view_3: "f32[12, 16, 8]" = torch.ops.aten.view.default(expand_3, [12, 16, 8]);  expand_3 = None
        bmm: "f32[12, 8, 8]" = torch.ops.aten.bmm.default(view_2, view_3);  view_2 = view_3 = None
        view_4: "f32[3, 4, 8, 8]" = torch.ops.aten.view.default(bmm, [3, 4, 8, 8]);  bmm = None
        mul: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(view_4, 0.25);  view_4 = None
        div: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(mul, 1.5);  mul = None
        tanh: "f32[3, 4, 8, 8]" = torch.ops.aten.tanh.default(div);  div = None
        mul_1: "f32[3, 4, 8, 8]" = torch.ops.aten.mul.Tensor(tanh, 2.0);  tanh = None
        add: "f32[3, 4, 8, 8]" = torch.ops.aten.add.Tensor(mul_1, arg3_1);  mul_1 = arg3_1 = None
        amax: "f32[3, 4, 8, 1]" = torch.ops.aten.amax.default(add, [-1], True)
        sub: "f32[3, 4, 8, 8]" = torch.ops.aten.sub.Tensor(add, amax);  add = amax = None
        exp: "f32[3, 4, 8, 8]" = torch.ops.aten.exp.default(sub);  sub = None
        sum_1: "f32[3, 4, 8, 1]" = torch.ops.aten.sum.dim_IntList(exp, [-1], True)
        div_1: "f32[3, 4, 8, 8]" = torch.ops.aten.div.Tensor(exp, sum_1);  exp = sum_1 = None
        expand_4: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(div_1, [3, 4, 8, 8]);  div_1 = None
        view_5: "f32[12, 8, 8]" = torch.ops.aten.view.default(expand_4, [12, 8, 8]);  expand_4 = None
        expand_5: "f32[3, 4, 8, 16]" = torch.ops.aten.expand.default(view_1, [3, 4, 8, 16]);  view_1 = None
        view_6: "f32[12, 8, 16]" = torch.ops.aten.view.default(expand_5, [12, 8, 16]);  expand_5 = None
        bmm_1: "f32[12, 8, 16]" = torch.ops.aten.bmm.default(view_5, view_6);  view_5 = view_6 = None
        view_7: "f32[3, 4, 8, 16]" = torch.ops.aten.view.default(bmm_1, [3, 4, 8, 16]);  bmm_1 = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        clone_4: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        return (clone_4,)
""")

    def test_levit_per_head_bias_training(self):
        self.assertExpectedInline(recognised("levit_per_head_bias", train=True), """\
class Graph:
    def forward(self, primals, tangents):
        primals_1: "f32[3, 8, 4, 16]"; primals_2: "f32[3, 8, 4, 16]"; primals_3: "f32[3, 8, 4, 16]"; primals_4: "f32[4, 8, 8]"; tangents_1: "f32[3, 8, 64]"; 
        primals_1, primals_2, primals_3, primals_4, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        permute: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        expand_default: "f32[3, 4, 8, 8]" = torch.ops.aten.expand.default(primals_4, [3, 4, 8, 8]);  primals_4 = None
        attention_fwd_default = torch.ops.inductor_conv.attention_fwd.default(permute, permute_1, permute_2, expand_default, 0.0, False, 0.25, None)
        getitem: "f32[3, 4, 8, 16]" = attention_fwd_default[0]
        getitem_1: "f32[3, 4, 8]" = attention_fwd_default[1];  attention_fwd_default = None
        permute_4: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        clone_3: "f32[3, 8, 4, 16]" = torch.ops.aten.clone.default(permute_4, memory_format = torch.contiguous_format);  permute_4 = None
        view_6: "f32[3, 8, 64]" = torch.ops.aten.view.default(clone_3, [3, 8, 64]);  clone_3 = None
        view_7: "f32[3, 8, 4, 16]" = torch.ops.aten.view.default(tangents_1, [3, 8, 4, 16]);  tangents_1 = None
        permute_5: "f32[3, 4, 8, 16]" = torch.ops.aten.permute.default(view_7, [0, 2, 1, 3]);  view_7 = None
        attention_bwd_default = torch.ops.inductor_conv.attention_bwd.default(permute_5, permute, permute_1, permute_2, expand_default, getitem, getitem_1, 0.0, False, 0.25, None, True, True);  permute_5 = permute = permute_1 = permute_2 = expand_default = getitem = getitem_1 = None
        getitem_2: "f32[3, 4, 8, 16]" = attention_bwd_default[0]
        getitem_3: "f32[3, 4, 8, 16]" = attention_bwd_default[1]
        getitem_4: "f32[3, 4, 8, 16]" = attention_bwd_default[2]
        getitem_5: "f32[3, 4, 8, 8]" = attention_bwd_default[3];  attention_bwd_default = None
        sum_dim_int_list: "f32[1, 4, 8, 8]" = torch.ops.aten.sum.dim_IntList(getitem_5, [0], True);  getitem_5 = None
        view_default: "f32[4, 8, 8]" = torch.ops.aten.view.default(sum_dim_int_list, [4, 8, 8]);  sum_dim_int_list = None
        unsqueeze_default: "f32[1, 4, 8, 8]" = torch.ops.aten.unsqueeze.default(view_default, 0);  view_default = None
        view_11: "f32[4, 8, 8]" = torch.ops.aten.view.default(unsqueeze_default, [4, 8, 8]);  unsqueeze_default = None
        permute_11: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_12: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_13: "f32[3, 8, 4, 16]" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return pytree.tree_unflatten([view_6, permute_13, permute_12, permute_11, view_11], self._out_spec)
""")
