"""``extra_check`` predicates for the pattern passes: one small function per condition, each with a negative test.

A search pattern is traced once with example shapes and matched with every int, float and int list ignored
(``gen_pattern``); these predicates then prove, on the real graph, that the match means what the replacement computes.
They read fake values (``node.meta["val"]``) and the matched nodes' literal arguments, and compare sizes with
``statically_known_true``: a symbolic size that cannot be proven equal without a new guard means "no rewrite".
Each is a ``@predicate``: the one that refuses a match is named, with its docstring's first sentence, in the log of
near misses (``TORCH_LOGS=inductor_conv``, Note [rewrite log] in rewrite_log.py).

Sections: shared helpers and predicates, then one section per capability (causal conv1d; attention).
"""
from __future__ import annotations

import logging
import operator

from typing import Any, Iterable, Optional, Sequence

import torch

from inductor_conv import config
from inductor_conv._compat import Match, statically_known_true
from inductor_conv.patterns.rewrite_log import predicate

aten = torch.ops.aten

# ---------------------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------------------
# Nodes that only read a tensor's size: they may keep using a replaced node (dynamic shapes add them, e.g. the
# backward of a slice asks for the sliced tensor's length); they are dead once the rewrite is done.
SIZE_QUERIES = (aten.sym_size.int, aten.sym_stride.int, aten.sym_numel.default, aten.sym_storage_offset.default)
# Ops whose result is a view of their first argument: two calls with equal arguments alias the same elements, and a
# view of a node has that node's values.
VIEW_OPS = frozenset((aten.view.default, aten._unsafe_view.default, aten.expand.default, aten.permute.default,
                      aten.transpose.int, aten.t.default, aten.unsqueeze.default, aten.squeeze.dim, aten.slice.Tensor,
                      aten.select.int, aten.alias.default))
_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def value(arg: Any) -> Any:
    """A node's fake value (tensor or SymInt), or the literal itself; lists element by element."""
    if isinstance(arg, torch.fx.Node):
        return arg.meta.get("val")
    if isinstance(arg, (list, tuple)):
        return [value(a) for a in arg]
    return arg


def known_equal(a: Any, b: Any) -> bool:
    """a == b for ints, SymInts and lists of them, proven without adding a guard."""
    a, b = value(a), value(b)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(known_equal(x, y) for x, y in zip(a, b))
    if a is None or b is None or isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return a is b
    return bool(statically_known_true(a == b))


def nodes_of(match: Match, target) -> list[torch.fx.Node]:
    """The matched nodes calling ``target``, in graph order."""
    return [n for n in match.nodes if n.op == "call_function" and n.target == target]


def tensors(match: Match, names: Iterable[str]) -> list[Optional[torch.Tensor]]:
    """The fake values of the pattern's named inputs (None where the name is absent, e.g. no bias)."""
    return [value(match.kwargs[name]) if name in match.kwargs else None for name in names]


@predicate(level=logging.DEBUG)
def on_enabled_device(*ts: Optional[torch.Tensor]) -> bool:
    """Every tensor lives on a device type listed in ``inductor_conv.config.device_types``."""
    return all(t.device.type in config.device_types for t in ts if t is not None)


@predicate
def same_device_dtype(*ts: Optional[torch.Tensor]) -> bool:
    """All tensors share one device and one floating dtype (the fused ops take no mixed inputs from a pattern)."""
    present = [t for t in ts if t is not None]
    if not present or not all(isinstance(t, torch.Tensor) for t in present):
        return False
    first = present[0]
    return first.dtype in _FLOAT_DTYPES and all(t.dtype == first.dtype and t.device == first.device for t in present)


@predicate
def no_outside_users(match: Match) -> bool:
    """Intermediate results stay inside the match: a node other than the pattern's outputs is used only by matched
    nodes (or by size queries). Otherwise the replacement would drop a value another consumer still needs."""
    inside = set(match.nodes)
    outputs = {n for n in match.output_nodes() if n is not None}
    for node in match.nodes:
        if node in outputs:
            continue
        for user in node.users:
            if user not in inside and user.target not in SIZE_QUERIES:
                return False
    return True


@predicate
def scalars_are_one(match: Match, targets: Sequence = (aten.add.Tensor, aten.sub.Tensor)) -> bool:
    """The Python numbers fed to matched add/sub nodes are all 1 (SiLU's ``1 + exp(-z)`` and its derivative's
    ``1 - σ``, ``1 + z(1 - σ)``); the pattern matched them as "any number"."""
    for target in targets:
        for node in nodes_of(match, target):
            for arg in node.args:
                if isinstance(arg, (int, float)) and not isinstance(arg, bool) and arg != 1:
                    return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# Causal depthwise conv1d (patterns/causal_conv1d_silu.py)
# Notation: x (B, C, L), conv weight w (C, 1, K), z the conv output before slicing (length L + K - 1 when the
# conv pads both sides), "time dim" the dim of length L (2, or 1 after a transpose to (B, L, C)).
# ---------------------------------------------------------------------------------------------------------------
@predicate(level=logging.DEBUG)
def conv_rewrite_enabled() -> bool:
    """``inductor_conv.config.causal_conv1d`` is on."""
    return bool(config.causal_conv1d)


@predicate
def is_depthwise(x: torch.Tensor, w: torch.Tensor, conv: torch.fx.Node) -> bool:
    """x is (B, C, L), w is (C, 1, K) and groups == C: one filter per channel, channel multiplier 1."""
    if x.dim() != 3 or w.dim() != 3:
        return False
    C = x.shape[1]
    groups = conv.args[8]
    return known_equal(w.shape[0], C) and known_equal(w.shape[1], 1) and known_equal(groups, C)


@predicate
def is_unit_stride_dilation(conv: torch.fx.Node) -> bool:
    """A plain (not transposed) convolution with stride 1, dilation 1 and no output padding."""
    _, _, _, stride, _, dilation, transposed, output_padding, _ = conv.args
    return known_equal(stride, [1]) and known_equal(dilation, [1]) and transposed is False and (
        known_equal(output_padding, [0])
    )


@predicate
def has_conv_padding(conv: torch.fx.Node, amount) -> bool:
    """The convolution pads ``amount`` zeros on both sides of time (``padding=[amount]``)."""
    return known_equal(conv.args[4], [amount])


@predicate
def is_left_causal_pad(pad: torch.fx.Node, K) -> bool:
    """``constant_pad_nd(x, [K - 1, 0], 0)``: K - 1 zeros before the sequence, none after (``F.pad(x, (K-1, 0))``)."""
    if pad.target != aten.constant_pad_nd.default:
        return False
    amounts = pad.args[1]
    fill = pad.args[2] if len(pad.args) > 2 else pad.kwargs.get("value", 0)
    return known_equal(amounts, [K - 1, 0]) and fill == 0


@predicate
def keeps_first(slice_node: torch.fx.Node, length, dim: int) -> bool:
    """``t[..., :length]`` along ``dim``: start 0, step 1, and an end that is ``length`` (or negative and leaves
    ``length`` elements, as in ``[..., :-(K - 1)]``)."""
    if slice_node.target != aten.slice.Tensor:
        return False
    src = value(slice_node.args[0])
    args = list(slice_node.args) + [None] * (5 - len(slice_node.args))
    s_dim, start, end, step = args[1:5]
    s_dim = 0 if s_dim is None else s_dim
    if s_dim < 0:
        s_dim += src.dim()
    if s_dim != dim or (start not in (None, 0)) or (step not in (None, 1)):
        return False
    end = value(end)
    if isinstance(end, int) and end < 0:
        end = src.shape[dim] + end
    return end is not None and known_equal(end, length)


@predicate
def is_causal_padding(match: Match, conv: torch.fx.Node, x: torch.Tensor, K) -> bool:
    """Output t depends on inputs t - K + 1 .. t only: either the input is left-padded by K - 1 and the convolution
    adds none, or the convolution pads K - 1 on both sides and exactly one slice keeps the first L outputs."""
    source = conv.args[0]
    if isinstance(source, torch.fx.Node) and source.target == aten.constant_pad_nd.default:
        return is_left_causal_pad(source, K) and has_conv_padding(conv, 0) and not nodes_of(match, aten.slice.Tensor)
    slices = nodes_of(match, aten.slice.Tensor)
    time_dim = 1 if nodes_of(match, aten.permute.default) else 2
    return has_conv_padding(conv, K - 1) and len(slices) == 1 and keeps_first(slices[0], x.shape[-1], time_dim)


@predicate
def permutes_swap_channels_and_time(match: Match) -> bool:
    """Every matched permute is ``(0, 2, 1)``: (B, C, L) <-> (B, L, C)."""
    return all(known_equal(p.args[1], [0, 2, 1]) for p in nodes_of(match, aten.permute.default))


@predicate
def backward_is_matched(match: Match, conv: torch.fx.Node) -> bool:
    """Every convolution_backward of this conv (same input and weight) is part of the match: an inference pattern
    must not rewrite only the forward of a conv that a training graph also differentiates."""
    x, w = conv.args[0], conv.args[1]
    inside = set(match.nodes)
    return all(
        bwd in inside
        for bwd in w.users
        if bwd.target == aten.convolution_backward.default and bwd.args[1] is x and bwd.args[2] is w
    )


@predicate
def backward_mirrors_forward(match: Match, conv: torch.fx.Node) -> bool:
    """In a training graph, the backward nodes undo exactly what the forward did: convolution_backward has the
    convolution's hyper-parameters and the bias's size, the pad's backward crops the same amount, and a slice's
    backward scatters into zeros shaped like the sliced tensor at the same place."""
    for bwd in nodes_of(match, aten.convolution_backward.default):
        bias_sizes, mask = bwd.args[3], bwd.args[10]
        if not known_equal(bwd.args[4:10], conv.args[3:9]):
            return False
        if mask[2] and not known_equal(bias_sizes, [value(conv.args[1]).shape[0]]):
            return False
    forward_pad = conv.args[0] if getattr(conv.args[0], "target", None) == aten.constant_pad_nd.default else None
    for pad in nodes_of(match, aten.constant_pad_nd.default):
        if pad is forward_pad:
            continue
        if forward_pad is None or not known_equal(pad.args[1], [-a for a in value(forward_pad.args[1])]):
            return False
    slices = nodes_of(match, aten.slice.Tensor)
    for scatter in nodes_of(match, aten.slice_scatter.default):
        if len(slices) != 1 or not _scatter_undoes_slice(scatter, slices[0]):
            return False
    return True


@predicate
def output_mask_matches_outputs(match: Match) -> bool:
    """convolution_backward computes (dx, dw, dβ) exactly for the gradients the matched graph reads:
    ``output_mask[i]`` is True iff a matched ``getitem(convolution_backward, i)`` exists."""
    for bwd in nodes_of(match, aten.convolution_backward.default):
        mask = bwd.args[10]
        read = {g.args[1] for g in nodes_of(match, operator.getitem) if g.args[0] is bwd}
        if not isinstance(mask, (list, tuple)) or len(mask) != 3:
            return False
        if any(bool(m) != (i in read) for i, m in enumerate(mask)):
            return False
    return True


@predicate
def bias_grad_sums_batch_and_time(match: Match) -> bool:
    """A matched ``sum`` (dβ in CUDA training graphs, where Inductor takes it out of convolution_backward) reduces
    the conv-output gradient over batch and time, dims (0, 2), without keepdim or a dtype."""
    for node in nodes_of(match, aten.sum.dim_IntList):
        dims = sorted(d % 3 for d in node.args[1])
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        if dims != [0, 2] or keepdim or node.kwargs.get("dtype") is not None:
            return False
    return True


def slice_range(node: torch.fx.Node) -> tuple:
    """(dim, start, end, step) of an aten.slice or aten.slice_scatter node (the arguments after its tensors,
    positional or keyword), defaults filled."""
    names = ("dim", "start", "end", "step")
    values = dict(dim=0, start=None, end=None, step=1)
    values.update(zip(names, node.args[2 if node.target == aten.slice_scatter.default else 1:]))
    values.update({k: v for k, v in node.kwargs.items() if k in names})
    return tuple(values[n] for n in names)


def _scatter_undoes_slice(scatter: torch.fx.Node, slice_node: torch.fx.Node) -> bool:
    """``slice_scatter(zeros_like(src), g, dim, start, end)`` for the forward ``slice(src, dim, start, end)``, or such
    a scatter scattered over again at the same place (an in-place activation on the slice: its backward writes the
    activation's gradient over all that the slice's backward wrote)."""
    if not all(a == b or known_equal(a, b) for a, b in zip(slice_range(slice_node), slice_range(scatter))):
        return False
    base = scatter.args[0]
    if isinstance(base, torch.fx.Node) and base.target == aten.slice_scatter.default:
        return _scatter_undoes_slice(base, slice_node)
    if not isinstance(base, torch.fx.Node) or base.target != aten.full.default or base.args[1] != 0:
        return False
    src, zeros = value(slice_node.args[0]), value(base)
    return zeros.dtype == src.dtype and known_equal(list(zeros.shape), list(src.shape))


@predicate
def copies_are_exact(match: Match) -> bool:
    """A matched ``copy(dst, src)`` (an in-place activation's backward writes its gradient into the incoming one's
    buffer) has src's shape and dtype: it is src itself, no broadcast or cast."""
    for node in nodes_of(match, aten.copy.default):
        dst, src = value(node.args[0]), value(node.args[1])
        if dst.dtype != src.dtype or not known_equal(list(dst.shape), list(src.shape)):
            return False
    return True


def causal_conv1d_holds(match: Match) -> bool:
    """The extra_check of causal_conv1d_silu.py's patterns: the matched subgraph is a causal depthwise conv1d (+ the
    candidate's activation) our op computes exactly.

    Where the activation runs on the padded output (act(z)[..., :L], act(zᵀ)[:, :L]), the op never computes the
    K - 1 rows past L: is_causal_padding admits exactly one slice, keeping the first L, and no_outside_users admits
    no other reader of the padded tensor (size queries aside)."""
    if not conv_rewrite_enabled():
        return False
    x, w, b = tensors(match, ("x", "w", "b"))
    convs = nodes_of(match, aten.convolution.default)
    if len(convs) != 1 or not same_device_dtype(x, w, b) or not on_enabled_device(x, w, b):
        return False
    conv, K = convs[0], w.shape[-1]
    return (
        is_depthwise(x, w, conv)
        and is_unit_stride_dilation(conv)
        and is_causal_padding(match, conv, x, K)
        and permutes_swap_channels_and_time(match)
        and backward_is_matched(match, conv)
        and backward_mirrors_forward(match, conv)
        and output_mask_matches_outputs(match)
        and bias_grad_sums_batch_and_time(match)
        and scalars_are_one(match)
        and copies_are_exact(match)
        and no_outside_users(match)
    )


# ---------------------------------------------------------------------------------------------------------------
# Attention (patterns/attention.py) — added by the attention helper.
# ---------------------------------------------------------------------------------------------------------------
