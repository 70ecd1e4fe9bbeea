"""Note [summaries saved for the backward] (patterns/attention_summary.py): on a joint graph over CUDA fake tensors
(the pass looks at devices, dtypes and shapes only, so no GPU is needed), the mask's summary is made once before
the first forward over it, handed to each backward over it, and the min-cut partitioner puts it in the forward
and saves it.  The rewritten graphs are pinned with assertExpectedInline (EXPECTTEST_ACCEPT=1 regenerates them)."""
import expecttest
import pytest
import torch
from helpers import normalize_graph
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import inductor_conv
from inductor_conv.patterns.attention_summary import SUMMARY_OP, saved_mask_summaries

B, H, S, D = 2, 4, 256, 64
ops = torch.ops.inductor_conv


def _joint(layers: int, mask_grad: bool = False):
    """A joint graph of `layers` attentions over one mask, chained through their outputs (forward, then the
    backwards in reverse), as AOTAutograd hands it to our pass."""

    def joint(q, k, v, mask, seed, tangents_1):
        outs, x = [], q
        for _ in range(layers):
            out, lse = ops.attention_fwd(x, k, v, mask, 0.1, False, 0.125, seed)
            outs.append((x, out, lse))
            x = out
        grads, dx = [], tangents_1
        for inp, out, lse in reversed(outs):
            dx, dk, dv, dmask = ops.attention_bwd(dx, inp, k, v, mask, out, lse, 0.1, False, 0.125, seed, mask_grad,
                                                  False)
            grads += [dk, dv, dmask]
        return (x, dx, *grads)

    return joint


def _trace(joint, mask_device="cuda", seq=S):
    with FakeTensorMode():
        q, k, v = (torch.empty(B, H, seq, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        mask = torch.empty(seq, seq, device=mask_device, dtype=torch.bfloat16).expand(B, 1, seq, seq)
        seed = torch.empty(1, device="cuda", dtype=torch.int64)
        tangent = torch.empty(B, H, seq, D, device="cuda", dtype=torch.bfloat16)
        inputs = (q, k, v, mask, seed, tangent)
        return make_fx(joint)(*inputs), inputs


@pytest.fixture(autouse=True)
def _enabled(monkeypatch):
    inductor_conv.enable()
    for name, value in (("attention_mask_ranges", True), ("attention_summary_in_graph", True)):
        monkeypatch.setattr(inductor_conv.config, name, value)


def _summaries(graph) -> int:
    return len(graph.find_nodes(op="call_function", target=SUMMARY_OP))


class TestSavedSummaries(expecttest.TestCase):
    def test_one_summary_per_mask_made_before_the_first_forward(self):
        gm, _ = _trace(_joint(layers=2))
        self.assertEqual(saved_mask_summaries(gm.graph), 2)
        gm.graph.lint()
        self.assertExpectedInline(normalize_graph(gm.graph), """\
class Graph:
    def forward(self, q_1: "bf16[2, 4, 256, 64]", k_1: "bf16[2, 4, 256, 64]", v_1: "bf16[2, 4, 256, 64]", mask_1: "bf16[2, 1, 256, 256]", seed_1: "i64[1]", tangents_1_1: "bf16[2, 4, 256, 64]"):
        attention_mask_summary_default = torch.ops.inductor_conv.attention_mask_summary.default(mask_1, True)
        getitem_12: "i32[1, 1, 16, 4]" = attention_mask_summary_default[0]
        getitem_13: "i32[1, 1, 4, 4]" = attention_mask_summary_default[1];  attention_mask_summary_default = None
        attention_fwd = torch.ops.inductor_conv.attention_fwd.default(q_1, k_1, v_1, mask_1, 0.1, False, 0.125, seed_1, mask_rows = getitem_12)
        getitem: "bf16[2, 4, 256, 64]" = attention_fwd[0]
        getitem_1: "f32[2, 4, 256]" = attention_fwd[1];  attention_fwd = None
        attention_fwd_1 = torch.ops.inductor_conv.attention_fwd.default(getitem, k_1, v_1, mask_1, 0.1, False, 0.125, seed_1, mask_rows = getitem_12)
        getitem_2: "bf16[2, 4, 256, 64]" = attention_fwd_1[0]
        getitem_3: "f32[2, 4, 256]" = attention_fwd_1[1];  attention_fwd_1 = None
        attention_bwd = torch.ops.inductor_conv.attention_bwd.default(tangents_1_1, getitem, k_1, v_1, mask_1, getitem_2, getitem_3, 0.1, False, 0.125, seed_1, False, False, mask_rows = getitem_12, mask_cols = getitem_13);  tangents_1_1 = getitem_3 = None
        getitem_4: "bf16[2, 4, 256, 64]" = attention_bwd[0]
        getitem_5: "bf16[2, 4, 256, 64]" = attention_bwd[1]
        getitem_6: "bf16[2, 4, 256, 64]" = attention_bwd[2]
        getitem_7: "bf16[0]" = attention_bwd[3];  attention_bwd = None
        attention_bwd_1 = torch.ops.inductor_conv.attention_bwd.default(getitem_4, q_1, k_1, v_1, mask_1, getitem, getitem_1, 0.1, False, 0.125, seed_1, False, False, mask_rows = getitem_12, mask_cols = getitem_13);  getitem_4 = q_1 = k_1 = v_1 = mask_1 = getitem = getitem_1 = seed_1 = getitem_12 = getitem_13 = None
        getitem_8: "bf16[2, 4, 256, 64]" = attention_bwd_1[0]
        getitem_9: "bf16[2, 4, 256, 64]" = attention_bwd_1[1]
        getitem_10: "bf16[2, 4, 256, 64]" = attention_bwd_1[2]
        getitem_11: "bf16[0]" = attention_bwd_1[3];  attention_bwd_1 = None
        return (getitem_2, getitem_8, getitem_5, getitem_6, getitem_7, getitem_9, getitem_10, getitem_11)
""")

    def test_partitioner_saves_the_summary(self):
        """The summary lands in the forward graph, and the backward reads it as a saved input: no summary there."""
        from torch._functorch.partitioners import min_cut_rematerialization_partition

        gm, inputs = _trace(_joint(layers=1))
        saved_mask_summaries(gm.graph)
        gm.recompile()
        forward, backward = min_cut_rematerialization_partition(gm, inputs, num_fwd_outputs=1)
        self.assertEqual((_summaries(forward.graph), _summaries(backward.graph)), (1, 0))
        bwd = backward.graph.find_nodes(op="call_function", target=ops.attention_bwd.default)[0]
        self.assertEqual([bwd.kwargs[name].op for name in ("mask_rows", "mask_cols")], ["placeholder"] * 2)

    def test_left_alone(self):
        """No summary where no template reads one: a mask whose gradient is computed, a mask on another device, and
        sequences too short to skip a tile (heuristics/attention.py's SHORT_MASK_LENGTH)."""
        for joint, device, seq in ((_joint(1, mask_grad=True), "cuda", S), (_joint(1), "cpu", S),
                                   (_joint(1), "cuda", 64)):
            gm, _ = _trace(joint, device, seq)
            self.assertEqual((saved_mask_summaries(gm.graph), _summaries(gm.graph)), (0, 0))

    def test_config_switches_leave_it_alone(self):
        for name in ("attention_mask_ranges", "attention_summary_in_graph"):
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(inductor_conv.config, name, False)
                gm, _ = _trace(_joint(layers=1))
                self.assertEqual((saved_mask_summaries(gm.graph), _summaries(gm.graph)), (0, 0))
