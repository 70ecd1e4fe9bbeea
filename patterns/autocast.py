"""Exact respellings of ``torch.autocast`` graphs into the spellings our patterns were traced in.

Note [autocast respellings]: the patterns are traced with their inputs already in the compute dtype (fp16 for
attention, the example dtype for the conv). Under ``torch.autocast`` with fp32 parameters and inputs, a matmul or a
convolution casts its operands itself, *after* whatever the model did to them: ``q @ k.transpose(2, 3)`` reads
``convert(permute(k))``, ``conv1d(F.pad(x, (K-1, 0)), ...)`` reads ``convert(pad(x))``, and the joint graph gives
their gradients as ``permute(convert(dkᵀ))`` and ``pad(convert(dx_padded), (-(K-1), 0))``. The pass (graph_pass,
before matching) moves those casts across the layout op, to the operand (``permute(convert(k))``) and to the
gradient's end (``convert(crop(dx_padded))``), and drops a widening cast that is narrowed straight back. Each rewrite
is exact: a cast is elementwise and keeps its input's strides, a pad writes a constant (rounded to the narrow dtype
either way), a crop and a transpose move values without changing them.

HF BLOOM's ``baddbmm`` reads its operands as ``convert(view(clone(q)))`` (the model folded the heads into the batch
with ``reshape``) and gives their gradients as ``view(convert(bmm(...) * alpha))``: a cast also crosses those reshapes
(``view``, a contiguous ``clone``: each moves values without changing them, and a cast keeps its input's strides, so
the view stays valid) when what it feeds, through reshapes only, is a matmul's operand. Not when the reshape is
undone right after the cast: the older BART spelling adds its mask on a 4-D view of 3-D scores, so dS reaches the
bmms' backward as ``view(convert(view(dS, 4-D)), 3-D)``, which is how the patterns were traced.

Only casts next to an operand of a matmul / convolution or to the result of one are moved, so the rest of a graph
keeps its spelling.
"""
from __future__ import annotations

import operator

import torch

from inductor_conv._compat import values_recomputed

aten, prims = torch.ops.aten, torch.ops.prims
_getitem = operator.getitem
_CONVERT = prims.convert_element_type.default
_TRANSPOSES = (aten.permute.default, aten.transpose.int)
# Ops that move values without computing new ones (a pad adds a constant): a cast commutes with each.
_LAYOUT_OPS = (*_TRANSPOSES, aten.constant_pad_nd.default)
# Reshapes a cast also crosses, between a matmul and its operand or result only (BLOOM's heads folded into the batch).
_RESHAPES = (aten.view.default, aten.clone.default)
# The users of a compute op's operand: 4-D matmul operands are expanded first, bmm's are not (bmm's backward
# transposes them), a convolution's feed it and its backward.
_OPERAND_USERS = (aten.expand.default, aten.bmm.default, aten.baddbmm.default, *_TRANSPOSES,
                  aten.convolution.default, aten.convolution_backward.default)


def _is_call(node, targets) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


def _feeds_operands(node) -> bool:
    """Every use of node is a compute op's operand, directly or through reshapes (``view``, ``clone``) only."""
    return bool(node.users) and all(
        _is_call(u, _OPERAND_USERS) or (_is_call(u, _RESHAPES) and _feeds_operands(u)) for u in node.users)


def _is_compute_result(node) -> bool:
    """A matmul's result (``bmm``: a 3-D matmul's own, ``view(bmm)``: a 4-D one's; ``bmm`` or ``bmm * c``
    transposed: a gradient of kᵀ, scaled by alpha in baddbmm's backward) or a convolution's input gradient
    (``convolution_backward(...)[0]``)."""
    if _is_call(node, (aten.bmm.default,)):
        return True
    if _is_call(node, (aten.view.default,)):
        return _is_call(node.args[0], (aten.bmm.default,))
    inner = node.args[0] if _is_call(node, _TRANSPOSES) else node
    if _is_call(inner, (aten.mul.Scalar,)):
        inner = inner.args[0]
    if inner is not node and _is_call(inner, (aten.bmm.default,)):
        return True
    return (_is_call(node, (_getitem,)) and node.args[1] == 0
            and _is_call(node.args[0], (aten.convolution_backward.default,)))


def _computed_by_matmul(node) -> bool:
    """node is a compute op's result or input gradient, seen through layout ops: a gradient on its way back to its
    input's layout, whose cast is the gradient of an upcast (GPT-Neo's ``key.to(torch.float32).transpose(-1, -2)``
    gives ``convert(permute(dkᵀ))`` read by the heads' permute), not an operand's."""
    while _is_call(node, _LAYOUT_OPS):
        node = node.args[0]
    return _is_compute_result(node)


def _between_view_and_back(src, cast) -> bool:
    """``view(convert(view(x, s)), x's shape)``: the cast of a gradient that a model's view and view back put in
    another shape (the older BART spelling adds its mask on a 4-D view of 3-D bmm scores, so dS reaches the bmms'
    backward as ``view(convert(view(dS, 4-D)), 3-D)``). The patterns were traced with the cast there, between the
    two views; it is not an operand's cast to move."""
    if not (_is_call(src, (aten.view.default,)) and len(cast.users) == 1):
        return False
    back, x = next(iter(cast.users)), src.args[0]
    vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in (back, x)]
    return (_is_call(back, (aten.view.default,)) and all(isinstance(v, torch.Tensor) for v in vals)
            and vals[0].shape == vals[1].shape)


def normalize(graph: torch.fx.Graph) -> None:
    """Note [autocast respellings]."""
    round_trip_casts(graph)
    casts_outside_layout_ops(graph)


def round_trip_casts(graph: torch.fx.Graph) -> int:
    """Replace ``convert(convert(x, wide), x.dtype)`` by ``x`` when ``wide`` holds every value of x's dtype (a wider
    float: bf16/fp16 -> fp32 -> back). Under CPU autocast softmax keeps bf16 scores in bf16, and GPT-2's
    ``.type(v.dtype)`` with fp32 v widens the probabilities only for the matmul to narrow them again. Returns the
    number of pairs removed."""
    removed = 0
    for cast in list(graph.find_nodes(op="call_function", target=_CONVERT)):
        inner = cast.args[0]
        if not _is_call(inner, (_CONVERT,)):
            continue
        x = inner.args[0]
        vals = [n.meta.get("val") if isinstance(n, torch.fx.Node) else None for n in (x, inner, cast)]
        if any(not isinstance(v, torch.Tensor) or not v.is_floating_point() for v in vals):
            continue
        narrow, wide, out = (v.dtype for v in vals)
        if out == narrow and wide.itemsize > narrow.itemsize:
            cast.replace_all_uses_with(x)
            removed += 1
    if removed:
        graph.eliminate_dead_code()
    return removed


def casts_outside_layout_ops(graph: torch.fx.Graph) -> int:
    """``convert(layout(x))`` -> ``layout(convert(x))`` when the cast feeds a matmul or convolution (its users are
    operand users, or reshapes of them), and ``layout(convert(y))`` -> ``convert(layout(y))`` when y is such an op's
    result or input gradient and the cast has no other user (Note [autocast respellings]); repeated while a cast
    moves (a reshape after a transpose: each step moves it across one). Returns the number of moves."""
    total, moved_up, moved_down = 0, set(), set()
    while moved := _move_casts_once(graph, moved_up, moved_down):
        total += moved
    return total


def _move_casts_once(graph: torch.fx.Graph, moved_up: set, moved_down: set) -> int:
    """One pass over the casts. ``moved_up`` / ``moved_down``: the casts a move has made, towards the operand or
    towards the gradient's end; a cast moves on only the way it came (the two moves undo each other)."""
    moved = 0
    for cast in list(graph.find_nodes(op="call_function", target=_CONVERT)):
        src = cast.args[0]
        operand_cast = (_is_call(src, _LAYOUT_OPS) and not _computed_by_matmul(src)
                        and all(_is_call(u, _OPERAND_USERS) for u in cast.users)) or (
            _is_call(src, _RESHAPES) and not _is_compute_result(src) and _feeds_operands(cast)
            and not _between_view_and_back(src, cast))
        if operand_cast and cast not in moved_down:
            # convert(layout(x)) -> layout(convert(x))
            last = cast  # the pair's second node, whose uses the new pair takes over
            x, outer_target, outer_args = src.args[0], src.target, src.args[1:]
            inner_target, inner_args = _CONVERT, cast.args[1:]
            inner_kwargs, outer_kwargs = cast.kwargs, src.kwargs
        elif (_is_compute_result(src) and len(cast.users) == 1
              and _is_call(next(iter(cast.users)), (*_LAYOUT_OPS, *_RESHAPES)) and cast not in moved_up):
            # layout(convert(y)) -> convert(layout(y))
            last = next(iter(cast.users))
            x, outer_target, outer_args = src, _CONVERT, cast.args[1:]
            inner_target, inner_args = last.target, last.args[1:]
            inner_kwargs, outer_kwargs = last.kwargs, cast.kwargs
        else:
            continue
        with graph.inserting_before(last):
            inner = graph.call_function(inner_target, (x, *inner_args), inner_kwargs)
            outer = graph.call_function(outer_target, (inner, *outer_args), outer_kwargs)
        val = x.meta.get("val")
        if val is not None:
            values_recomputed((inner, outer), val)
        outer.meta.update({k: v for k, v in last.meta.items() if k != "val"})
        last.replace_all_uses_with(outer)
        if inner.target is _CONVERT:
            moved_up.add(inner)
        else:
            moved_down.add(outer)
        moved += 1
    if moved:
        graph.eliminate_dead_code()
    return moved
