"""Turn attention masks that are provably top-left causal into ``is_causal=True`` (so the kernel skips the tiles
above the diagonal instead of loading a mask per tile).

Runs after our pattern replacements (graph_pass). A mask is proven by a small abstract interpretation of the graph
that produced it: every node gets a symbolic value or none, where (i, j) are the indices of the last two dims
(query row, key column) and leading dims never matter:

- ``Const(v)``: every element is the 0-d tensor v (``full``, ``ones``, ``scalar_tensor``, ``*_like``);
- ``Lin(ci, cj, c)``: the integer ``ci·i + cj·j + c`` (``iota``/``arange``, ``unsqueeze``, ``+``/``-``);
- ``Tri(d, lower, upper)``: ``lower`` where ``j - i <= d``, else ``upper`` (a comparison of ``j - i`` with an int,
  ``tril``/``triu``, and any deterministic pointwise op of Tri/Const values, evaluated on the two 0-d values with
  the op itself, so dtype promotion and casts are exact); a Tri whose diagonal misses the node's (i, j) range is the
  Const it is over that range (``_within_shape``: a sliding window no shorter than the sequence).

Shape ops keep a value only where they keep its indices: view/expand/clone must keep each last-two size the value
depends on, slices of the last two dims must start at 0 with step 1 (``[:Sq, :Sk]``), and a pointwise operand must
not be broadcast along a dim its value depends on. Placeholders (inputs, parameters, buffers) and get_attr
constants get no value, so a mask that can change between calls is never proven.

The op's causal mask is ``Tri(0, True, False)`` (bool) or ``Tri(0, 0, -inf)`` (additive; a finite fill <= -1e30 or
finfo.min is equivalent here: top-left causal keeps key 0 in every row, so no row is fully masked, for Sq != Sk too).
"""
from __future__ import annotations

import math
import operator
from typing import NamedTuple

import torch
from torch.fx.node import map_arg

from inductor_conv._compat import statically_known_true

aten, prims = torch.ops.aten, torch.ops.prims
_getitem = operator.getitem


class Const(NamedTuple):
    value: torch.Tensor  # 0-d, in the node's dtype


class Lin(NamedTuple):  # ci·i + cj·j + c
    ci: int
    cj: int
    c: int


class Tri(NamedTuple):  # lower where j - i <= d, upper elsewhere (0-d tensors)
    d: int
    lower: torch.Tensor
    upper: torch.Tensor


_FILLS = {aten.ones.default: 1, aten.zeros.default: 0, aten.ones_like.default: 1, aten.zeros_like.default: 0,
          aten.new_ones.default: 1, aten.new_zeros.default: 0}
_FILL_ARG = {aten.full.default: 1, aten.full_like.default: 1, aten.new_full.default: 2, aten.scalar_tensor.default: 0}
# Row-major reinterpretations: they keep (i, j) only when both last sizes stay (a size-1 dim moving breaks it).
_VIEWS = (aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.clone.default,
          aten.alias.default, aten.squeeze.dim, aten.squeeze.default)
_COMPARE = {aten.le: "le", aten.lt: "lt", aten.ge: "ge", aten.gt: "gt"}


def _meta(node):
    """The node's fake tensor (None for non-tensor nodes)."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return val if isinstance(val, torch.Tensor) else None


def _same(a, b) -> bool:
    return statically_known_true(a == b)  # ints or SymInts, proven without adding guards


def _depends(value) -> tuple[bool, bool]:
    """Whether the value depends on (i, j)."""
    if isinstance(value, Lin):
        return value.ci != 0, value.cj != 0
    return (True, True) if isinstance(value, Tri) else (False, False)


def _keeps_indices(src, dst, value) -> bool:
    """dst's last two dims index like src's for every dim the value depends on (same size, both present)."""
    for axis, dep in zip((-2, -1), _depends(value)):
        if dep and not (src.dim() >= -axis and dst.dim() >= -axis and _same(src.shape[axis], dst.shape[axis])):
            return False
    return True


def _leaf(node):
    """Const for constant factories: their value never depends on an input's values (``*_like`` read only shapes)."""
    out = _meta(node)
    if node.target in _FILLS:
        fill = _FILLS[node.target]
    elif node.target in _FILL_ARG and len(node.args) > _FILL_ARG[node.target]:
        fill = node.args[_FILL_ARG[node.target]]
    else:
        return None
    return Const(torch.tensor(fill, dtype=out.dtype)) if isinstance(fill, (bool, int, float)) else None


def _index(node):
    """Lin for an integer ``iota``/``arange`` with integer start and step 1: the index along its (only) dim."""
    if node.target is prims.iota.default:
        start, step = node.kwargs.get("start"), node.kwargs.get("step")
    elif node.target is aten.arange.default:
        start, step = 0, 1
    elif node.target in (aten.arange.start, aten.arange.start_step):
        start, step = node.args[0], node.args[2] if len(node.args) > 2 else 1
    else:
        return None
    integer = not (_meta(node).is_floating_point() or _meta(node).dtype == torch.bool)
    return Lin(0, 1, start) if integer and isinstance(start, int) and step == 1 else None


def _shape_op(node, vals):
    """Values through views, expands, unsqueezes and slices that keep the (i, j) indexing."""
    src = node.args[0] if node.args else None
    value = vals.get(src) if isinstance(src, torch.fx.Node) else None
    i_src, i_dst = _meta(src), _meta(node)
    if value is None or i_src is None or i_dst is None:
        return None
    if node.target in _VIEWS:
        same = i_src.dim() >= 2 and i_dst.dim() >= 2 and all(map(_same, i_src.shape[-2:], i_dst.shape[-2:]))
        return value if isinstance(value, Const) or same else None
    if node.target is aten.expand.default:  # broadcasts size-1 or new leading dims only
        return value if _keeps_indices(i_src, i_dst, value) else None
    if node.target is aten.unsqueeze.default:
        pos = node.args[1] % i_dst.dim()
        dep_i, dep_j = _depends(value)
        if pos < i_dst.dim() - 2 or (pos == i_dst.dim() - 2 and not dep_i):
            return value  # the last dim (and, if leading, the row dim) keep their place
        if pos == i_dst.dim() - 1 and not dep_i and isinstance(value, (Lin, Const)):
            return Lin(value.cj, 0, value.c) if isinstance(value, Lin) else value  # the last dim becomes rows
        return None
    if node.target is aten.slice.Tensor:
        dim = (node.args[1] if len(node.args) > 1 else 0) % i_src.dim()
        start = node.args[2] if len(node.args) > 2 else 0
        step = node.args[4] if len(node.args) > 4 else 1
        if dim < i_src.dim() - 2 or ((start is None or _same(start, 0)) and step == 1):
            return value
    return None


def _operands(node, vals):
    """Values of node's positional operands (numbers become Const); None if one is unknown or is broadcast along a
    dim its value depends on."""
    values = []
    for x in node.args:
        if isinstance(x, (bool, int, float)):
            values.append(Const(torch.tensor(x)))
        elif isinstance(x, torch.fx.Node) and x in vals and _keeps_indices(_meta(x), _meta(node), vals[x]):
            values.append(vals[x])
        else:
            return None
    return values


def _compare_lin(node, vals):
    """``a OP b`` with a - b = ±(j - i) + c: a bool Tri with the diagonal offset that implies."""
    op = _COMPARE.get(getattr(node.target, "overloadpacket", None))
    values = _operands(node, vals) if op and len(node.args) == 2 else None
    diff = _lin_add(*values, -1) if values else None
    if diff is not None and (diff.ci, diff.cj) == (1, -1):  # i - j + c OP 0  <=>  j - i (flipped OP) -c
        diff, op = Lin(-1, 1, -diff.c), {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt"}[op]
    if diff is None or (diff.ci, diff.cj) != (-1, 1):
        return None
    x, true, false = -diff.c, torch.tensor(True), torch.tensor(False)  # j - i OP x
    return {"le": Tri(x, true, false), "lt": Tri(x - 1, true, false),
            "ge": Tri(x - 1, false, true), "gt": Tri(x, false, true)}[op]


def _lin_add(a, b, sign: int) -> Lin | None:
    """a + sign·b for Lin or integer Const values."""
    def as_lin(v):
        if isinstance(v, Const) and not v.value.is_floating_point() and v.value.dtype != torch.bool:
            return Lin(0, 0, int(v.value))
        return v if isinstance(v, Lin) else None

    a, b = as_lin(a), as_lin(b)
    if a is None or b is None:
        return None
    return Lin(a.ci + sign * b.ci, a.cj + sign * b.cj, a.c + sign * b.c)


def _arith(node, vals):
    """Lin through ``add``/``sub`` (alpha 1)."""
    if node.target not in (aten.add.Tensor, aten.sub.Tensor) or node.kwargs.get("alpha", 1) != 1:
        return None
    values = _operands(node, vals)
    if not values or len(values) != 2 or not any(isinstance(v, Lin) for v in values):
        return None
    return _lin_add(*values, 1 if node.target is aten.add.Tensor else -1)


def _triangle(node, vals):
    """``tril(c, d)`` / ``triu(c, d)`` of a constant (when Inductor did not decompose them)."""
    if node.target not in (aten.tril.default, aten.triu.default):
        return None
    value, d = vals.get(node.args[0]), node.args[1] if len(node.args) > 1 else 0
    if not isinstance(value, Const) or not isinstance(d, int):
        return None
    zero = torch.zeros((), dtype=value.value.dtype)
    return Tri(d, value.value, zero) if node.target is aten.tril.default else Tri(d - 1, zero, value.value)


def _pointwise(node, vals):
    """A deterministic pointwise op of Tri/Const operands (not broadcast along a dim they depend on): the op itself
    on the 0-d values below and above the diagonal."""
    tags, schema = getattr(node.target, "tags", ()), getattr(node.target, "_schema", None)
    if (torch.Tag.pointwise not in tags or torch.Tag.nondeterministic_seeded in tags or schema is None
            or schema.is_mutable):
        return None
    operands = node.all_input_nodes
    values = [vals.get(x) for x in operands]
    if any(not isinstance(v, (Const, Tri)) or not _keeps_indices(_meta(x), _meta(node), v)
           for x, v in zip(operands, values)):
        return None
    diagonals = {v.d for v in values if isinstance(v, Tri)}
    if len(diagonals) > 1:
        return None

    def run(side):
        scalar = {x: v.value if isinstance(v, Const) else v[side] for x, v in zip(operands, values)}
        args = map_arg(node.args, lambda x: scalar[x])
        return node.target(*args, **map_arg(node.kwargs, lambda x: scalar[x]))

    try:
        lower, upper = run(1), run(2)
    except Exception:  # an op that does not take 0-d CPU tensors: no value, the mask stays
        return None
    return Tri(diagonals.pop(), lower, upper) if diagonals else Const(lower)


def _within_shape(node, value):
    """A Tri whose diagonal lies outside the node's own (i, j) range as the Const it is there: j - i takes the values
    1 - rows .. cols - 1, so d >= cols - 1 leaves every element below the diagonal and d <= -rows every element above
    it.  HF's sliding-window mask ``(j <= i) & (j > i - W)`` with a window W no shorter than the rows is the causal
    mask: its second factor is all True, and the & of the two is then a Tri again."""
    out = _meta(node)
    if not isinstance(value, Tri) or out.dim() < 2:
        return value
    rows, cols = out.shape[-2:]
    if statically_known_true(value.d >= cols - 1):
        return Const(value.lower)
    if statically_known_true(value.d <= -rows):
        return Const(value.upper)
    return value


def abstract_values(graph: torch.fx.Graph) -> dict:
    """node -> Const/Lin/Tri for every node whose value is known from constants alone (see module docstring)."""
    vals: dict = {}
    for node in graph.nodes:
        if node.op != "call_function" or _meta(node) is None:
            continue
        for rule in (_leaf, _index, _shape_op, _compare_lin, _arith, _triangle, _pointwise):
            value = rule(node) if rule in (_leaf, _index) else rule(node, vals)
            if value is not None:
                vals[node] = _within_shape(node, value)
                break
    return vals


# ---------------------------------------------------------------------------------------------------------------
# The rewrite
# ---------------------------------------------------------------------------------------------------------------
# Positions of (attn_mask, is_causal, mask_grad, ...) in attention_fwd / attention_bwd's arguments.
_FWD_MASK, _FWD_CAUSAL = 3, 5
_BWD_Q, _BWD_V, _BWD_MASK, _BWD_CAUSAL, _BWD_LSE, _BWD_MASK_GRAD = 1, 3, 4, 8, 6, 11


def _is_minus_inf(x: float, dtype) -> bool:
    """-inf, or a finite fill that acts like it here (no row is fully masked): <= -1e30 or finfo(dtype).min."""
    return x == -math.inf or x <= -1e30 or x == torch.finfo(dtype).min


def is_top_left_causal(mask, q, k, vals) -> bool:
    """The mask node is the op's causal mask for (Sq, Sk): True/0 where j <= i, False/-inf elsewhere."""
    value, i_mask, i_q, i_k = vals.get(mask), _meta(mask), _meta(q), _meta(k)
    if not isinstance(value, Tri) or value.d != 0 or None in (i_mask, i_q, i_k) or i_mask.dim() < 2:
        return False
    if not (_same(i_mask.shape[-2], i_q.shape[-2]) and _same(i_mask.shape[-1], i_k.shape[-2])):
        return False
    if i_mask.dtype == torch.bool:
        return bool(value.lower) and not bool(value.upper)
    return (i_mask.is_floating_point() and float(value.lower) == 0.0
            and _is_minus_inf(float(value.upper), i_mask.dtype))


def backward_nodes(fwd, op_bwd) -> list:
    """The attention_bwd calls that read this forward's LSE (getitem 1 of it, maybe through AOTAutograd's aliases of
    saved values: aten.alias, which a graph keeps until remove_noop_ops)."""
    found, reads = [], [item for item in fwd.users if item.target is _getitem and item.args[1] == 1]
    while reads:
        lse = reads.pop()
        for user in lse.users:
            if user.target is aten.alias.default:
                reads.append(user)
            elif user.target is op_bwd and user.args[_BWD_LSE] is lse:
                found.append(user)
    return found


def _backward_rewritable(bwd, mask) -> bool:
    """The backward reads the same mask, is not causal yet and computes no mask gradient."""
    args = bwd.args
    return (len(args) > _BWD_MASK_GRAD and args[_BWD_MASK] is mask and args[_BWD_CAUSAL] is False
            and args[_BWD_MASK_GRAD] is False)


def _make_causal(node, mask_at: int, causal_at: int) -> None:
    """attn_mask -> None, is_causal -> True."""
    args = list(node.args)
    args[mask_at], args[causal_at] = None, True
    node.args = tuple(args)


def infer_causal(graph: torch.fx.Graph) -> int:
    """Rewrite every attention_fwd (and the attention_bwd calls of the same attention) whose mask is provably the
    top-left causal mask to ``attn_mask=None, is_causal=True``. Returns the number of op calls changed; the mask's
    nodes become dead (graph_pass eliminates dead code next)."""
    op_fwd, op_bwd = torch.ops.inductor_conv.attention_fwd.default, torch.ops.inductor_conv.attention_bwd.default
    fwds = [n for n in graph.nodes if n.op == "call_function" and n.target is op_fwd]
    if not fwds:
        return 0
    vals, changed = abstract_values(graph), 0
    for fwd in fwds:
        if len(fwd.args) <= _FWD_CAUSAL or fwd.args[_FWD_CAUSAL] is not False:
            continue
        q, k, mask = fwd.args[0], fwd.args[1], fwd.args[_FWD_MASK]
        bwds = backward_nodes(fwd, op_bwd)
        if not (isinstance(mask, torch.fx.Node) and is_top_left_causal(mask, q, k, vals)
                and all(_backward_rewritable(b, mask) for b in bwds)):
            continue
        _make_causal(fwd, _FWD_MASK, _FWD_CAUSAL)
        for bwd in bwds:
            _make_causal(bwd, _BWD_MASK, _BWD_CAUSAL)
        changed += 1 + len(bwds)
    return changed
