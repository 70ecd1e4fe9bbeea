"""y's layout where it leaves a compiled graph: Note [conv output layout].

A pass over the graph after the rewrites (graph_pass.py), kept apart from the patterns' defining file
(causal_conv1d_silu.py, whose hash keys the shipped patterns: Note [pattern cache]) since it changes no trace.
"""
from __future__ import annotations

import operator

import torch
from torch.fx.node import map_arg

from inductor_conv import config
from inductor_conv._compat import statically_known_true, values_recomputed
from inductor_conv.patterns import checks

aten = torch.ops.aten


# Note [conv output layout]: the op lays y out like x.  For the channel-last view (B, L, C).transpose(1, 2) that is
# channels-contiguous, which the next layer of a Mamba block reads without a copy; eager's conv1d returns y
# contiguous whatever x's layout.  Inside a compiled graph the layout is ours to choose, but a y that leaves the
# graph is the user's: a .view() that eager allows would fail on ours, and in training AOTAutograd has fixed the
# layout of the gradient it hands the backward from eager's trace, so a dy in our layout would be copied into
# eager's by an ATen transpose (551 us at B8 C5120 L2048 bf16 on the H200) and back into x's layout by our
# backward's lowering (85 us).  So where y, or a view of it, is a graph output and y is not already contiguous,
# the op is asked for eager's layout (contiguous_out=True) and the lowering stores y through tall row tiles whose
# rows are runs of positions (H200, B8 C5120 L2048 K4 bf16: 87 us, 92% of the device copy, one tile a program), and
# the backward reads the contiguous dy in place (DY_T in the backward template): compiled forward+backward 0.27 ms
# (0.95 without this rule).  Inside the graph y keeps x's layout.
# Only y and its views (transposes, slices, Mamba-2's split) are covered: a graph returning an op on y (say y * 2)
# gets that op's layout from Inductor.
# config.conv_eager_output_layout = False turns this off.
_VIEW_OPS = (aten.transpose.int, aten.permute.default, aten.slice.Tensor, aten.view.default, aten.alias.default,
             aten.unsqueeze.default, aten.squeeze.dim, aten.select.int, aten.split.Tensor,
             aten.split_with_sizes.default, aten.unbind.int, operator.getitem)  # Mamba-2 splits y into x, B, C


def _views_of(node) -> list:
    """node and every node reached from it through view ops only, each after the node it views."""
    found, todo = [], [node]
    while todo:
        n = todo.pop()
        found.append(n)
        todo += [u for u in n.users if u.op == "call_function" and u.target in _VIEW_OPS and u.args[0] is n]
    return found


def _is_contiguous(val) -> bool:
    """val's strides are provably the contiguous ones (no guard is added; unknown counts as not)."""
    expected = 1
    for size, stride in reversed(list(zip(val.shape, val.stride()))):
        if not (statically_known_true(size <= 1) or checks.known_equal(stride, expected)):
            return False
        expected = expected * size
    return True


def keep_eager_output_layout(graph: torch.fx.Graph, existing=frozenset()) -> int:
    """Set contiguous_out on every causal_conv1d_fwd a rewrite made (not in `existing`: a call of the public op
    keeps its documented layout) whose y, or a view of it, is a graph output not laid out as eager's (Note [conv
    output layout]); re-derive the abstract values of the op and those views.  Returns the number changed."""
    if not config.conv_eager_output_layout:
        return 0
    op = torch.ops.inductor_conv.causal_conv1d_fwd.default
    outputs = set()
    for out in graph.find_nodes(op="output"):
        map_arg(out.args, outputs.add)
    changed = 0
    for node in graph.find_nodes(op="call_function", target=op):
        val = node.meta.get("val")
        chain = _views_of(node)
        if (node in existing or val is None or node.kwargs.get("contiguous_out") or _is_contiguous(val)
                or outputs.isdisjoint(chain)):
            continue
        node.kwargs = {**node.kwargs, "contiguous_out": True}
        values_recomputed(chain, val)  # the op, then each view after what it views
        changed += 1
    return changed
