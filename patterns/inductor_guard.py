"""Keep Inductor's own attention rewrite off the graphs it would rewrite wrongly.

Note [Inductor's attention rewrite]: after our pass, Inductor's joint-graph patterns (``fuse_attention.py``) turn
hand-written attention into ``scaled_dot_product_attention``. They are matched from pre-traced copies
(``serialized_patterns/``) in which every int, float, int list and dtype argument is ``Ignored()``, and unlike a
freshly traced pattern they are not checked again with the graph's own values (``register_replacement`` skips that
for a given ``search_fn_pattern``). Each replacement assumes the values its pattern was written with, so a graph
that differs in one of them is silently rewritten into other math (pytorch/pytorch#196468). From both torches'
fuse_attention.py, each confirmed by compiling it on 2.13 (CPU, fp32) against eager:

    ignored value                the replacement assumes                  patterns             compiled vs eager
    softmax dims (amax, sum)     the last dim                             all                  dim -2: 0.23, 1: 6.7
    q, k, v permutes             q, v (0, 2, 1, 3); kᵀ swaps the last two all                  q (2, 0, 1, 3): 2.4
    masked_fill's ``m == c``     c == 0 (it rebuilds ``m == 1``)          15, 17, 20           ``m == 1``: 3.7
    where / masked_fill fill     -inf (15, 17, 20), finfo.min (18, 19)    15, 17-20            fill 0: 0.52
    dtypes of the casts          the output in q's dtype                  7-10, 16, 19, 21-27  fp16 P: fp32 out
    divisor of the scores or q   2.13: a number (bound); 2.11: sqrt(D)    5-10, 20             a tensor: no compile
                                                                                               (2.13); ignored (2.11)

Every one of those patterns contains the decomposed softmax ``exp(s - amax(s)) / sum(...)`` (2.11 and 2.13, training
patterns included: they match the forward too). So ``protect`` looks at each decomposed softmax whose scores come
from a bmm and whose probabilities go into one, and where a value above is not the one assumed, respells its
``s - amax(s)`` as ``s + (-amax(s))``: the same numbers (IEEE subtraction is addition of the negation), a spelling
no attention pattern of Inductor's matches, so that attention keeps the graph's own, eager, math. The dropout
probability is bound by the patterns (``rand > dropout_p``); their ignored 1 / (1 - p) rescale never matched a
hand-written dropout in our trials, so it is not checked. Inductor keeps rewriting every attention it rewrites
correctly, and our own rewrites happen before this runs.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import math
from dataclasses import dataclass

import torch
from torch.fx import Node

from inductor_conv._compat import detect_fake_mode, inductor_attention_binds_divisor

log = logging.getLogger(__name__)
aten, prims = torch.ops.aten, torch.ops.prims
_CONVERT = prims.convert_element_type.default
# What the matmul decomposition puts around a bmm's operands and result: reshapes, broadcasts, layout copies.
_RESHAPES = (aten.view.default, aten._unsafe_view.default, aten.expand.default)
_COPIES = (aten.clone.default, aten.alias.default, _CONVERT)
# Between the scores' bmm and the softmax in Inductor's patterns: the scale, masks, casts.
_SCORE_OPS = (*_RESHAPES, *_COPIES, aten.div.Tensor, aten.mul.Tensor, aten.add.Tensor, aten.where.self)
# Between the probabilities and the value bmm: dropout's keep-mask product and rescale, casts, reshapes.
_PROBABILITY_OPS = (*_RESHAPES, *_COPIES, aten.mul.Tensor)
# A query pre-scale, ``(q / s) @ kᵀ`` (patterns 9, 10, 20, 29, 30), sits between q's permute and its reshape.
_PRE_SCALES = (aten.div.Tensor, aten.mul.Tensor, aten.mul.Scalar)
_SEARCH_DEPTH = 8  # ops between a bmm and the softmax (the longest pattern has 5)
# The operand permutes of Inductor's patterns (from the input to the bmm): q and v from (B, S, H, D), k as well
# and then transposed, or k only transposed (also the 3-D bmm's).
_Q_V_PERMUTES = {(), ((0, 2, 1, 3),)}
_K_PERMUTES = {(), ((0, 1, 3, 2),), ((0, 2, 1, 3), (0, 1, 3, 2)), ((0, 2, 1),)}


@dataclass
class _Attention:
    """A decomposed softmax between two bmm's: ``scores`` runs from the q kᵀ bmm to the softmax input,
    ``probabilities`` is the softmax output and ``out`` the bmm that multiplies it by V."""

    amax: Node
    sub: Node
    total: Node
    probabilities: Node
    scores: list[Node]
    out: Node

    @property
    def qk(self) -> Node:
        return self.scores[0]


def protect(graph: torch.fx.Graph) -> int:
    """Respell the softmax of every attention that Inductor's fused-attention patterns would rewrite into other
    math (Note [Inductor's attention rewrite]). Returns how many."""
    respelled = 0
    for amax in list(graph.find_nodes(op="call_function", target=aten.amax.default)):
        attention = _attention_at(amax)
        if attention is None:
            continue
        broken = [rule.__name__ for rule in RULES if not rule(attention)]
        if broken:
            log.debug("kept Inductor's attention rewrite off %s: %s", attention.sub, ", ".join(broken))
            _respell(graph, attention)
            respelled += 1
    return respelled


# ---------------------------------------------------------------------------------------------------------------
# The values Inductor's patterns ignore, one predicate each (True: the value is the one the replacement assumes)
# ---------------------------------------------------------------------------------------------------------------
def softmax_over_last_dim(attention: _Attention) -> bool:
    """The softmax's max and normaliser reduce the last dim (SDPA's softmax is over keys)."""
    ndim = len(_val(attention.amax.args[0]).shape)
    return all(_reduces_last_dim(node, ndim) for node in (attention.amax, attention.total))


def operand_layouts_assumed(attention: _Attention) -> bool:
    """q and v are permuted (0, 2, 1, 3) or not at all, k as well and then its last two dims swapped, or only
    those: the permutes the replacements undo with ``transpose(1, 2)``. (Layout permutes the user applied before
    those count too: then Inductor's rewrite is given up, never wrongly made.)"""
    return (_permutes(attention.qk.args[0]) in _Q_V_PERMUTES and _permutes(attention.qk.args[1]) in _K_PERMUTES
            and _permutes(attention.out.args[1]) in _Q_V_PERMUTES)


def mask_comparisons_assumed(attention: _Attention) -> bool:
    """A masked_fill of the scores (``where(hide, fill, s)``) whose mask is ``m == c`` compares with 0: the
    DistilBERT replacements rebuild the mask as ``m == 1`` (the keys to keep)."""
    for where in _on_path(attention, aten.where.self):
        if where.args[2] in attention.scores:
            comparison = _through(where.args[0], (*_RESHAPES, *_COPIES))
            if _is_call(comparison, aten.eq.Scalar) and comparison.args[1] != 0:
                return False
    return True


def fills_assumed(attention: _Attention) -> bool:
    """A ``full([], v)`` that ``where`` puts in place of scores holds -inf or the scores dtype's finfo.min: the
    replacements pass a bool mask instead. (The patterns take the fill only as such a ``full``; masked_fill with a
    Python number is a ``scalar_tensor``, and a tensor operand is a mask.)"""
    for where in _on_path(attention, aten.where.self):
        fill = where.args[1] if where.args[2] in attention.scores else where.args[2]
        if _is_call(fill, aten.full.default) and list(fill.args[0]) == []:
            value = fill.args[1]
            if value != -math.inf and value != torch.finfo(_val(where).dtype).min:
                return False
    return True


def output_dtype_kept(attention: _Attention) -> bool:
    """The attention output has q's dtype: the replacements return SDPA's, whatever the probabilities were cast to
    before the value bmm."""
    return _val(attention.out).dtype == _val(attention.qk.args[0]).dtype


def divisors_assumed(attention: _Attention) -> bool:
    """The scores (``q kᵀ / s``) or q (``(q / s) @ kᵀ``) are divided by a number (2.13's patterns bind it, and
    fail to compile on a tensor), and on a torch whose patterns ignore it (2.11) by exactly sqrt(D). GPT-2's
    ``s / full([], v)`` before its ``where`` is bound on both."""
    head_dim = _val(attention.qk.args[0]).shape[-1]
    scores_divisors = [n for n in _on_path(attention, aten.div.Tensor)
                       if n.args[0] is attention.qk or _through(n.args[0], _RESHAPES) is attention.qk]
    return all(_divisor_assumed(div, head_dim) for div in scores_divisors + _pre_scales(attention.qk.args[0]))


RULES = (softmax_over_last_dim, operand_layouts_assumed, mask_comparisons_assumed, fills_assumed, output_dtype_kept,
         divisors_assumed)


# ---------------------------------------------------------------------------------------------------------------
# Finding the attention around a softmax, and the respelling
# ---------------------------------------------------------------------------------------------------------------
def _attention_at(amax: Node) -> _Attention | None:
    """The attention whose decomposed softmax reduces with ``amax``: ``amax(s, dims, True)``, ``exp(s - amax)``,
    its ``sum(.., dims, True)`` and the quotient, with a bmm (through ``_SCORE_OPS``) before and one after."""
    s = amax.args[0]
    sub = next((u for u in amax.users if _is_call(u, aten.sub.Tensor) and u.args == (s, amax)), None)
    exp = next(iter(sub.users)) if sub is not None and len(sub.users) == 1 else None
    if not _is_call(exp, aten.exp.default):
        return None
    total = next((u for u in exp.users if _is_call(u, aten.sum.dim_IntList) and u.args[0] is exp), None)
    probabilities = next((u for u in exp.users if _is_call(u, aten.div.Tensor) and u.args == (exp, total)), None)
    if total is None or probabilities is None:
        return None
    scores = _path_from_bmm(s)
    out = _value_bmm(probabilities)
    if scores is None or out is None:
        return None
    # the rules read these fake values (Inductor's patterns could not match without them either)
    if not all(isinstance(_val(n), torch.Tensor) for n in (s, scores[0].args[0], out, *scores)):
        return None
    return _Attention(amax, sub, total, probabilities, scores, out)


def _path_from_bmm(start: Node) -> list[Node] | None:
    """The shortest chain of ``_SCORE_OPS`` from a bmm to ``start``, both included (breadth first, backwards)."""
    later: dict[Node, Node | None] = {start: None}
    frontier = [start]
    for _ in range(_SEARCH_DEPTH):
        found = next((n for n in frontier if _is_call(n, aten.bmm.default)), None)
        if found is not None:
            path = [found]
            while later[path[-1]] is not None:
                path.append(later[path[-1]])
            return path
        step = []
        for node in frontier:
            if _is_call(node, _SCORE_OPS):
                for arg in node.args:
                    if isinstance(arg, Node) and arg not in later:
                        later[arg] = node
                        step.append(arg)
        frontier = step
    return None


def _value_bmm(probabilities: Node) -> Node | None:
    """The bmm that takes ``probabilities`` (through ``_PROBABILITY_OPS``) as its first operand."""
    seen, frontier = {probabilities}, [probabilities]
    for _ in range(_SEARCH_DEPTH):
        step = []
        for node in frontier:
            for user in node.users:
                if _is_call(user, aten.bmm.default) and user.args[0] is node:
                    return user
                if _is_call(user, _PROBABILITY_OPS) and user not in seen:
                    seen.add(user)
                    step.append(user)
        frontier = step
    return None


def _respell(graph: torch.fx.Graph, attention: _Attention) -> None:
    """``s - amax`` -> ``s + (-amax)`` (exact), on fake values like the rest of the joint graph."""
    sub, amax = attention.sub, attention.amax
    with graph.inserting_before(sub):
        neg = graph.call_function(aten.neg.default, (amax,))
        add = graph.call_function(aten.add.Tensor, (sub.args[0], neg))
    vals = [_val(amax), _val(sub.args[0])]
    if all(isinstance(v, torch.Tensor) for v in vals):
        with detect_fake_mode(vals) or contextlib.nullcontext():
            neg.meta["val"] = torch.neg(vals[0])
            add.meta["val"] = torch.add(vals[1], neg.meta["val"])
    add.meta.update({k: v for k, v in sub.meta.items() if k != "val"})
    sub.replace_all_uses_with(add)
    graph.erase_node(sub)


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------
def _is_call(node, targets) -> bool:
    targets = targets if isinstance(targets, tuple) else (targets,)
    return isinstance(node, Node) and node.op == "call_function" and node.target in targets


def _val(node):
    return node.meta.get("val") if isinstance(node, Node) else None


def _on_path(attention: _Attention, target) -> list[Node]:
    return [n for n in attention.scores if _is_call(n, target)]


def _through(node, targets):
    """The first node before ``node``'s chain of ``targets`` (node itself if it is none of them)."""
    while _is_call(node, targets):
        node = node.args[0]
    return node


def _reduces_last_dim(node: Node, ndim: int) -> bool:
    """``amax`` / ``sum.dim_IntList`` of an ``ndim``-D tensor over exactly the last dim, keeping it."""
    dims = node.args[1] if len(node.args) > 1 else None
    keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
    return isinstance(dims, (list, tuple)) and [d % ndim for d in dims] == [ndim - 1] and keepdim is True


def _operand_chain(operand) -> list[Node]:
    """The nodes on the way to a bmm operand that a pattern may hold, bmm side first: the matmul's reshapes and
    copies, a pre-scale, permutes (a reshape once the permutes started ends the walk: it precedes any pattern)."""
    chain, node, permuted = [], operand, False
    while _is_call(node, (*_COPIES, *_PRE_SCALES, aten.permute.default)) or (_is_call(node, _RESHAPES)
                                                                           and not permuted):
        permuted |= _is_call(node, aten.permute.default)
        chain.append(node)
        node = node.args[0]
    return chain


def _permutes(operand) -> tuple:
    """The permutations on the way to a bmm operand, input side first (dims made non-negative)."""
    return tuple(tuple(d % len(n.args[1]) for d in n.args[1])
                 for n in reversed(_operand_chain(operand)) if _is_call(n, aten.permute.default))


def _pre_scales(operand) -> list[Node]:
    """The divisions on the way to the q operand: ``(q / s) @ kᵀ``."""
    return [n for n in _operand_chain(operand) if _is_call(n, aten.div.Tensor)]


def _constant(arg):
    """A Python number, or the value of a 0-d ``full``; else None."""
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return arg
    if _is_call(arg, aten.full.default) and list(arg.args[0]) == []:
        return arg.args[1]
    return None


def _divisor_assumed(div: Node, head_dim) -> bool:
    """Whether Inductor's replacement scales like ``div`` does (``divisors_assumed``)."""
    divisor = div.args[1]
    if _is_call(divisor, aten.full.default) and all(_is_call(u, aten.where.self) for u in div.users):
        return True  # GPT-2's inv_scale, bound by patterns 18 and 19
    if _binds_divisor():
        return (isinstance(divisor, (int, float, torch.SymInt, torch.SymFloat)) and not isinstance(divisor, bool)
                or isinstance(_val(divisor), (torch.SymInt, torch.SymFloat)))
    value = _constant(divisor)
    return value is not None and isinstance(head_dim, int) and value == math.sqrt(head_dim)


@functools.cache
def _binds_divisor() -> bool:
    return inductor_attention_binds_divisor()
