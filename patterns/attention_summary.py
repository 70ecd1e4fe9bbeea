"""The mask summary an attention's compiled backward reads, made by its forward and saved (Note below)."""
from __future__ import annotations

import operator

import torch

from inductor_conv import config
from inductor_conv._compat import value_hint
from inductor_conv.heuristics.attention import short_sequences
from inductor_conv.patterns.attention_causal import (_BWD_MASK, _BWD_MASK_GRAD, _BWD_Q, _BWD_V, _FWD_MASK,
                                                     backward_nodes)

# Note [summaries saved for the backward]
# A compiled attention over a mask tensor reads the mask's summaries (Note [mask ranges] in kernels/attn_math.py):
# rows in the forward, rows and cols in the backward.  Inductor lowers the forward and the backward as two graphs,
# so each would make its own (Note [summary kernels in the graph] in lowerings/attention.py), and the backward's
# pass over the mask (HF's (B, 1, S, S) bf16 mask, B4 S2048: ~0.02 ms of flags, then rows and cols) would run again
# in every layer's backward.  This pass, on the joint graph, makes the summaries once, in the forward: one
# attention_mask_summary(mask, cols=True) call before the first attention_fwd over that mask, passed to each
# attention_fwd over it as mask_rows and to each attention_bwd as mask_rows / mask_cols.  A forward reads it, so the
# partitioner computes it in the forward graph and saves its outputs for the backward rather than recompute them
# there (a custom op is not on its list of ops to recompute): 1/256 of the mask's elements.
# Only where the templates will skip tiles from a summary: a CUDA mask, no gradient for it,
# config.attention_mask_ranges and config.attention_summary_in_graph, the templates' dtypes and head dims, and no
# short sequences (what lowerings/attention.py's _options and _summarise check again on the IR; where they decide
# otherwise the saved summary goes unread, which costs its kernels and nothing else).
SUMMARY_OP = torch.ops.inductor_conv.attention_mask_summary.default
_FWD = torch.ops.inductor_conv.attention_fwd.default
_BWD = torch.ops.inductor_conv.attention_bwd.default
_TEMPLATE_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_DEVICES = ("cuda",)  # where the templates run (tests/test_lowerings_dry_run.py adds the CPU)


def _static(n) -> int | None:
    return n if isinstance(n, int) else None


def _summarised(bwd: torch.fx.Node) -> bool:
    """The backward's templates will read a summary of its mask (Note above)."""
    args = bwd.args
    if len(args) <= _BWD_MASK_GRAD or args[_BWD_MASK_GRAD] is not False or "mask_rows" in bwd.kwargs:
        return False
    mask, q, v = args[_BWD_MASK], args[_BWD_Q], args[_BWD_V]
    if not isinstance(mask, torch.fx.Node):
        return False
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in (mask, q, v)]
    if any(not isinstance(t, torch.Tensor) for t in vals):
        return False
    mask_val, q_val, v_val = vals
    if mask_val.dim() != 4 or mask_val.device.type not in _DEVICES or q_val.dtype not in _TEMPLATE_DTYPES:
        return False
    # a symbolic head dim by its hint: the lowering specialises it (_use_template's guard_int)
    hints = [value_hint(d) for d in (q_val.shape[-1], v_val.shape[-1])]
    if not all(h is not None and h <= 256 for h in hints):
        return False
    return not short_sequences(_static(q_val.shape[2]), _static(mask_val.shape[3]))


def _unaliased(node):
    """node without AOTAutograd's aliases of saved values (aten.alias) around it."""
    while isinstance(node, torch.fx.Node) and node.target is torch.ops.aten.alias.default:
        node = node.args[0]
    return node


def saved_mask_summaries(graph: torch.fx.Graph) -> int:
    """Note [summaries saved for the backward]: one summary call per mask, before the first forward that reads it,
    passed to every backward over that mask whose templates read one.  Returns the number of backward calls given
    one."""
    if not (config.attention_mask_ranges and config.attention_summary_in_graph):
        return 0
    summaries, given = {}, 0
    for fwd in [n for n in graph.nodes if n.op == "call_function" and n.target is _FWD]:  # in graph order
        mask = fwd.args[_FWD_MASK]
        for bwd in backward_nodes(fwd, _BWD):
            if not (_summarised(bwd) and _unaliased(mask) is _unaliased(bwd.args[_BWD_MASK])):
                continue
            if mask not in summaries:
                with graph.inserting_before(fwd):
                    call = graph.call_function(SUMMARY_OP, (mask, True))
                    items = [graph.call_function(operator.getitem, (call, i)) for i in range(2)]
                mask_val = mask.meta["val"]
                with mask_val.fake_mode:
                    call.meta["val"] = SUMMARY_OP(mask_val, True)
                for i, item in enumerate(items):
                    item.meta["val"] = call.meta["val"][i]
                summaries[mask] = items
            rows, cols = summaries[mask]
            fwd.kwargs = {**fwd.kwargs, "mask_rows": rows}
            bwd.kwargs = {**bwd.kwargs, "mask_rows": rows, "mask_cols": cols}
            given += 1
    return given
