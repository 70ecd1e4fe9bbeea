"""Widen traced attention search patterns so that one trace serves many graphs.

Note [relaxed attention search patterns]: each variant is traced once (``gen_pattern``, float16, transposed q/k/v)
and ``register_replacement`` matches that pre-traced pattern with every int, float, shape, dtype and device
ignored. It does not re-trace the search function with the real inputs: that re-trace breaks on dynamic shapes,
whose sizes are graph placeholders but ``sym_size`` calls in a re-trace. What the ignored values decided is proved
by ``attention_checks.py`` instead (softmax over the last dim, kᵀ, the scores/output shapes, dropout's 1/(1-p),
repeat_kv's head order, the mask fill, no user outside the match). ``relax`` then widens the pattern in place:

* Any node may have extra users (``checks.no_outside_users`` admits only users inside the match).
* Copies are optional (``_Optional``): a layout ``clone`` (``q @ kᵀ`` reshapes q (B, H, S, D) to (B·H, S, D) and
  copies only when q is a transposed view; q, kᵀ, v and the incoming gradient each decide alone, and so does the
  incoming gradient's product with Granite-SWA's per-row factor before its view) and a dtype
  ``convert_element_type`` (half graphs convert around softmax, fp32 graphs do not). Each use of a convert decides
  alone: under autocast a learned bias's gradient sums the fp32 dS before the cast that feeds the matmuls' backward,
  where the half-precision trace sums the cast dS.
* Dropout is optional (``_Optional``, binding ``dropout_p = 0`` when absent): ``keep * P * 1/(1-p)`` in the
  forward, ``dO * (keep * 1/(1-p))`` in the backward.
* A head sum after a backward matmul is optional: where matmul broadcasts K/V over the query heads (multi-query,
  k (B, 1, S, D)), the backward reduces each K/V gradient over the heads.
* The score scale and the query pre-scale are choices (``_MaybeScale``): ``x * c``, ``x / c`` (c a number or a 0-d
  tensor) or ``x``, binding ``scale``/``scale_kind`` (``q_scale``/``q_scale_kind``) for the replacement.
* The gradients of q, k and v in a training pattern may each be absent (``_MaybeGradient``), not all three
  unless a learned mask's is there: a joint graph computes the gradients of the inputs that require one only
  (Note [partial gradients] in attention.py).

An optional part appears in the forward and again in the backward; the forward one (the *leader*, the one whose
inputs include no tangent) decides, the backward ones (followers) must agree, so one graph gets one answer.
The wrappers use only the ``PatternExpr`` matching protocol (``_match``, ``find_anchor_nodes``,
``MatchContext.match``/``pattern_to_node``) and ``CallFunction.flat_args_kwargs``/``users``, shared by torch 2.11
and 2.13.
"""
from __future__ import annotations

import torch

from inductor_conv._compat import (
    MULTIPLE,
    CallFunction,
    FailedMatch,
    Ignored,
    KeywordArg,
    Match,
    MultiOutputPattern,
    PatternExpr,
    guard_or_false,
    is_match,
)
from inductor_conv.patterns.attention_checks import is_head_sum
from inductor_conv.patterns.attention_forms import SCALE_DIV, SCALE_MUL, SCALE_NONE

aten = torch.ops.aten
prims = torch.ops.prims
_SCALE_OPS = {aten.mul.Tensor: SCALE_MUL, aten.div.Tensor: SCALE_DIV}


# ---------------------------------------------------------------------------------------------------------------
# Relaxed search patterns
# ---------------------------------------------------------------------------------------------------------------
def _is_call(node, targets) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


class _Optional(PatternExpr):
    """``full`` or, failing that, ``skip`` (a sub-pattern of ``full``): a node chain some graphs do not have.

    ``absent`` is bound when ``skip`` matched. A follower (a backward occurrence) takes its leader's (the forward
    occurrence's) choice, so the forward and the backward of one graph agree.
    """

    def __init__(self, full: PatternExpr, skip: PatternExpr, absent: dict | None = None) -> None:
        super().__init__()
        self.full, self.skip, self.absent = full, skip, absent or {}
        self.leader: _Optional | None = None

    def _leader_choice(self, ctx):
        """True/False when the leader has matched (present/absent), None when free to choose."""
        if self.leader is None or self.leader not in ctx.pattern_to_node:
            return None
        return ctx.pattern_to_node.get(self.leader.full) is not None

    def _match(self, node, ctx):
        choice = self._leader_choice(ctx)
        if choice is not False:
            prior = dict(ctx.pattern_to_node)
            m = ctx.match(self.full, node)
            if is_match(m) or choice:
                return self._wrap(ctx, m, {})
            ctx.pattern_to_node = prior  # undo the partial match of ``full``
        return self._wrap(ctx, ctx.match(self.skip, node), self.absent)

    def _wrap(self, ctx, child, kwargs):
        if not is_match(child):
            return child
        m = Match(ctx, self, kwargs=dict(kwargs))
        m.extend(child)
        return m

    def find_anchor_nodes(self, ctx, searched):
        if self in ctx.pattern_to_node:
            yield ctx.pattern_to_node[self]
            return
        yield from self.full.find_anchor_nodes(ctx, searched)
        # ``full`` contains ``skip``: searched with ``full``'s set, ``skip``'s candidates would all have been taken
        # as ``full``'s inner nodes already and never be offered bare (a learned bias's gradient sum of a dS that no
        # other gradient reached first, Note [partial gradients] in attention.py)
        yield from self.skip.find_anchor_nodes(ctx, type(searched)())

    def pattern_eq(self, other) -> bool:
        return super().pattern_eq(other) and self.full.pattern_eq(other.full) and self.skip.pattern_eq(other.skip)

    def pretty_print(self, pp) -> str:
        return f"_Optional({pp.pretty_print(self.full)}, {pp.pretty_print(self.skip)})"


class _OutputOptional(_Optional):
    """An ``_Optional`` that is one of the pattern's outputs (a gradient the joint graph returns): of the candidate
    nodes, the ones the graph returns come first. Under autocast a learned full-shape bias's gradient is the fp32 dS
    (returned) while its bf16 cast feeds the matmuls' backward; the half trace returns the cast."""

    def find_anchor_nodes(self, ctx, searched):
        nodes = list(super().find_anchor_nodes(ctx, searched))
        returned = [n for n in nodes if isinstance(n, torch.fx.Node) and any(u.op == "output" for u in n.users)]
        yield from returned + [n for n in nodes if n not in returned]


class _MaybeHeadSum(_Optional):
    """``sum(inner, dims, keepdim)`` or ``inner``: relax's optional head sum after a backward matmul's reshape.

    Anchors are the ``inner`` candidates and their sum users. (``_Optional``'s own search shares its ``searched``
    set between ``full`` and ``skip``: here ``full`` contains ``skip``, so the inner nodes would be searched
    through ``full`` and never offered bare.)"""

    def find_anchor_nodes(self, ctx, searched):
        if self in ctx.pattern_to_node:
            yield ctx.pattern_to_node[self]
            return
        for node in list(self.skip.find_anchor_nodes(ctx, searched)):
            if isinstance(node, torch.fx.Node):
                # only a sum that can be a head sum: another sum of a backward matmul's gradient belongs to the graph
                # around the match, e.g. the gradient of a per-head bias added to q, (1, H, 1, D), sums dQ over the
                # batch and the rows (HF Wav2Vec2-Conformer's ``pos_bias_u``); offered as the head sum, it would take
                # the place of dQ itself and the match would be refused
                yield from (u for u in node.users if is_head_sum(u))
            yield node


class _MaybeGradient(PatternExpr):
    """The gradient of q, k or v in a training pattern, or nothing: AOTAutograd leaves out the backward of an input
    that does not require grad (a frozen K/V, a frozen projection), so the joint graph has only some gradients.

    Candidates are ``inner``'s anchors, then ``None``, which matches as the absent gradient (``output_nodes()``
    gives None for it). An absent gradient binds nothing and removes nothing. Every gradient of attention reads the
    probabilities or dS, which the match holds, so one the graph computes in a spelling ``inner`` misses is a user
    outside the match, which ``no_outside_users`` refuses (Note [partial gradients] in attention.py).
    ``siblings`` (set by ``relax``): the pattern's q, k and v gradients when they are all its gradients; the last of
    them is not absent when the others are, as attention without a backward is the inference patterns'."""

    def __init__(self, inner: PatternExpr) -> None:
        super().__init__()
        self.inner = inner
        self.siblings: list[_MaybeGradient] = []

    def _match(self, node, ctx):
        m = Match(ctx, self)
        if node is None:
            if self.siblings and self is self.siblings[-1] and all(
                    ctx.pattern_to_node.get(s) is None for s in self.siblings[:-1]):
                return FailedMatch("no gradient: attention without a backward")
            return m
        child = ctx.match(self.inner, node)
        if not is_match(child):
            return child
        m.extend(child)
        return m

    def find_anchor_nodes(self, ctx, searched):
        if self in ctx.pattern_to_node:
            yield ctx.pattern_to_node[self]
            return
        yield from self.inner.find_anchor_nodes(ctx, searched)
        yield None

    def pattern_eq(self, other) -> bool:
        return super().pattern_eq(other) and self.inner.pattern_eq(other.inner)

    def pretty_print(self, pp) -> str:
        return f"_MaybeGradient({pp.pretty_print(self.inner)})"


def _constant_of(node):
    """The value of ``torch.full([], c)`` (HF GPT-2's divisor) with a Python number c, rounded to its dtype as eager
    rounds it; else None."""
    if not (_is_call(node, (aten.full.default,)) and list(node.args[0]) == [] and len(node.args) == 2):
        return None
    c, dtype = node.args[1], node.kwargs.get("dtype")
    if not isinstance(c, (int, float)) or isinstance(c, bool) or dtype is None or not dtype.is_floating_point:
        return None
    return torch.tensor(c, dtype=dtype).item()


def _scale_of(node, rows: bool = False):
    """(kind, c) when node is ``x * c`` or ``x / c`` with c a number or a 0-d floating tensor, else None. A
    constant 0-d tensor (``torch.full([], c)``) gives c itself, so the op gets it as its scale. With ``rows`` (the
    scores' scale), c may also be a floating tensor whose last dim is 1, one factor per head or per query row
    (SwinV2's learned per-head logit scale): the replacement scales q's rows by it instead
    (``attention_checks.scale_fits_query`` proves the shapes)."""
    if not _is_call(node, _SCALE_OPS) or len(node.args) != 2 or node.kwargs:
        return None
    c = node.args[1]
    if isinstance(c, torch.fx.Node):
        val = c.meta.get("val")
        if not (isinstance(val, torch.Tensor) and val.is_floating_point()
                and (val.dim() == 0 or (rows and guard_or_false(val.shape[-1] == 1)))):
            return None
        constant = _constant_of(c)
        c = c if constant is None else constant
    elif not isinstance(c, (int, float)) or isinstance(c, bool):
        return None
    return _SCALE_OPS[node.target], c


def _same_scalar(a, b) -> bool:
    """(kind, c) pairs that scale alike: equal numbers, one node, or the same op on the same inputs."""
    (ka, ca), (kb, cb) = a, b
    if ka != kb:
        return False
    if isinstance(ca, torch.fx.Node) and isinstance(cb, torch.fx.Node):
        return ca is cb or (ca.op == cb.op == "call_function" and ca.target == cb.target
                            and ca.args == cb.args and ca.kwargs == cb.kwargs)
    return not isinstance(ca, torch.fx.Node) and not isinstance(cb, torch.fx.Node) and ca == cb


class _MaybeScale(PatternExpr):
    """``inner * c``, ``inner / c`` or ``inner``; binds ``{name: c, name_kind: SCALE_*}`` (``{name: 1.0,
    name_kind: SCALE_NONE}`` when absent). A follower (backward) copies its leader's (forward) decision."""

    def __init__(self, inner: PatternExpr, name: str) -> None:
        super().__init__()
        self.inner, self.name = inner, name
        self.leader: _MaybeScale | None = None
        # the scores' scale may be a tensor of row factors; q's scale stays a number or a 0-d tensor: a factor with
        # q's head dim there is a norm's weight (QK-norm), whose gradient reads q
        self.rows = name == "scale"

    def _leader_scale(self, ctx):
        """The leader's (kind, c) once it matched present, None if it matched absent, False if not matched yet."""
        if self.leader is None or ctx.pattern_to_node.get(self.leader) is None:
            return False
        return _scale_of(ctx.pattern_to_node[self.leader], self.rows)

    def _match(self, node, ctx):
        leader = self._leader_scale(ctx)
        found = _scale_of(node, self.rows) if leader is not None else None
        if leader and found and _same_scalar(found, leader):
            found = leader  # the backward may recompute a tensor scale (two equal converts): bind the forward's
        if found is None:
            if leader:
                return FailedMatch("scale in the forward but not here")
            child = ctx.match(self.inner, node)
            if not is_match(child):
                return child
            m = Match(ctx, self, kwargs={self.name: 1.0, f"{self.name}_kind": SCALE_NONE})
            m.extend(child)
            return m
        kind, c = found
        m = Match(ctx, self, kwargs={self.name: c, f"{self.name}_kind": kind})
        child = ctx.match(self.inner, node.args[0])
        if not is_match(child):
            return child
        m.extend(child)
        m.nodes.append(node)
        return m

    def find_anchor_nodes(self, ctx, searched):
        if self in ctx.pattern_to_node:
            yield ctx.pattern_to_node[self]
            return
        leader_node = ctx.pattern_to_node.get(self.leader) if self.leader is not None else None
        present = leader_node is not None and _scale_of(leader_node, self.rows) is not None
        for node in self.inner.find_anchor_nodes(ctx, searched):
            if not present:
                yield node
            elif isinstance(node, torch.fx.Node):
                yield from (u for u in node.users if _scale_of(u, self.rows) is not None and u.args[0] is node)

    def pattern_eq(self, other) -> bool:
        return super().pattern_eq(other) and self.name == other.name and self.inner.pattern_eq(other.inner)

    def pretty_print(self, pp) -> str:
        return f"_MaybeScale({pp.pretty_print(self.inner)}, {self.name!r})"


_SCALE_NAMES = ("scale", "q_scale")


def _call(p, target, nargs=None) -> bool:
    return isinstance(p, CallFunction) and target in p.fns and (nargs is None or len(p.args) == nargs)


def _scale_name(p) -> str | None:
    """The scale a traced ``mul(x, KeywordArg(name))`` stands for, if any."""
    if _call(p, aten.mul.Tensor, 2) and isinstance(p.args[1], KeywordArg) and p.args[1].name in _SCALE_NAMES:
        return p.args[1].name
    return None


def _is_dropout_keep(p) -> bool:
    """``rand(...) > KeywordArg("dropout_p")``, possibly through a dtype convert."""
    if _call(p, prims.convert_element_type.default):
        p = p.args[0]
    return (_call(p, aten.gt.Scalar, 2) and _call(p.args[0], aten.rand.default)
            and isinstance(p.args[1], KeywordArg) and p.args[1].name == "dropout_p")


def _dropout_role(p):
    """("forward", P) for ``keep * P * c``, ("backward", dO) for ``dO * (keep * c)``, else None (traced shapes)."""
    if not _call(p, aten.mul.Tensor, 2):
        return None
    a, b = p.args
    if _call(a, aten.mul.Tensor, 2) and _is_dropout_keep(a.args[0]):
        return "forward", a.args[1]
    if _call(b, aten.mul.Tensor, 2) and _is_dropout_keep(b.args[0]):
        return "backward", a
    return None


def _uses_tangents(p, seen=None) -> bool:
    seen = set() if seen is None else seen
    if id(p) in seen or not isinstance(p, PatternExpr):
        return False
    seen.add(id(p))
    if isinstance(p, KeywordArg):
        return p.name.startswith("tangents")
    if isinstance(p, CallFunction):
        children = p.flat_args_kwargs[0]
    else:
        children = [getattr(p, a, None) for a in ("inner", "full", "skip")]
    return any(_uses_tangents(c, seen) for c in children)


def _is_bmm_grad_view(p, items) -> bool:
    """``view(bmm(...))`` in the backward (a gradient through the matmul decomposition's reshape)."""
    return (_call(p, aten.view.default) and bool(items) and _call(items[0], aten.bmm.default)
            and _uses_tangents(items[0]))


def _is_tangent(a) -> bool:
    """The incoming gradient, before or after ``relax`` made its copy optional."""
    a = a.skip if isinstance(a, _Optional) else a
    return isinstance(a, KeywordArg) and a.name.startswith("tangents")


def _is_scaled_gradient_view(p, items) -> bool:
    """``view(mul(tangent, x))``: the incoming gradient multiplied, then viewed for a bmm."""
    return (_call(p, aten.view.default) and bool(items) and _call(items[0], aten.mul.Tensor)
            and any(_is_tangent(a) for a in items[0].flat_args_kwargs[0]))


def relax(pattern: PatternExpr) -> PatternExpr:
    """Widen a traced search pattern in place (Note [relaxed attention search patterns]); returns it."""
    memo: dict[int, PatternExpr] = {}
    per_use: dict[int, tuple] = {}
    groups: dict[str, list] = {}
    roles = {}

    def mark(p, seen):  # the dropout roles, read on the traced (not yet relaxed) pattern
        if id(p) in seen or not isinstance(p, CallFunction):
            return
        seen.add(id(p))
        role = _dropout_role(p)
        if role:
            roles[id(p)] = role
        for c in p.flat_args_kwargs[0]:
            mark(c, seen)

    def rewritten(p):
        return memo.get(id(p), p)

    def visit(p):
        if isinstance(p, KeywordArg) and p.name.startswith("tangents"):
            # The incoming gradient is often a transposed view made contiguous for the bmm; the op takes strides.
            if id(p) not in memo:
                copy = CallFunction(aten.clone.default, p, memory_format=Ignored(), _users=MULTIPLE)
                memo[id(p)] = _Optional(copy, p)
            return memo[id(p)]
        if id(p) in per_use:  # a dtype convert: each use decides alone whether it is present
            return _Optional(*per_use[id(p)])
        if id(p) in memo or not isinstance(p, CallFunction):
            return memo.get(id(p), p)
        p.users = MULTIPLE
        items, spec = p.flat_args_kwargs
        new_items = tuple(visit(c) for c in items)
        p.flat_args_kwargs = (new_items, spec)
        new = p
        if _scale_name(p):
            new = _MaybeScale(new_items[0], _scale_name(p))
            groups.setdefault(new.name, []).append(new)
        elif id(p) in roles:
            kind, skip = roles[id(p)]
            new = _Optional(p, rewritten(skip), {"dropout_p": 0.0} if kind == "forward" else None)
            groups.setdefault("dropout", []).append(new)
        elif prims.convert_element_type.default in p.fns:
            per_use[id(p)] = (p, new_items[0])
            new = _Optional(p, new_items[0])
        elif aten.clone.default in p.fns:
            new = _Optional(p, new_items[0])
        elif _is_scaled_gradient_view(p, items):
            # Granite-SWA scales the output by a per-row factor, so the backward multiplies the incoming gradient
            # by it before the bmm's view; a transposed incoming gradient (the model's ``.transpose(1, 2)`` after
            # attention) makes that product non-contiguous, and the graph copies it before the view.
            copy = CallFunction(aten.clone.default, new_items[0], memory_format=Ignored(), _users=MULTIPLE)
            p.flat_args_kwargs = ((_Optional(copy, new_items[0]), *new_items[1:]), spec)
        elif _is_bmm_grad_view(p, items):
            # K/V broadcast over the query heads by matmul itself (Falcon's multi-query k (B, 1, S, D) against q
            # (B, H, S, D)): the backward sums each bmm gradient over the heads (the expand's backward); the trace,
            # with K/V as many heads as q, has no sum.  attention_checks.head_sums_reduce_broadcast_kv proves it.
            head_sum = CallFunction(aten.sum.dim_IntList, p, Ignored(), Ignored(), _users=MULTIPLE)
            new = _MaybeHeadSum(head_sum, p)
        memo[id(p)] = new
        return new

    outputs = pattern.outputs if isinstance(pattern, MultiOutputPattern) else [pattern]
    for out in outputs:
        mark(out, set())
    gradients = []
    for i, out in enumerate(outputs):
        new = visit(out)
        if i > 0 and isinstance(pattern, MultiOutputPattern):
            if type(new) is _Optional and not any(new in group for group in groups.values()):
                new = _OutputOptional(new.full, new.skip, new.absent)
            if i <= 3 and new is not None:  # the gradients of query, key and value, the first inputs (argnames)
                new = _MaybeGradient(new)
                gradients.append(new)
            pattern.outputs[i] = new  # outputs[0] is the anchor (the forward's output): never wrapped
    if isinstance(pattern, MultiOutputPattern) and sum(o is not None for o in pattern.outputs[1:]) == len(gradients):
        for g in gradients:  # no learned mask's gradient: one of q, k, v must have one
            g.siblings = gradients
    for group in groups.values():
        inner = [getattr(g, "inner", None) or g.skip for g in group]
        leaders = [g for g, i in zip(group, inner) if not _uses_tangents(i)]
        if len(leaders) == 1:
            for g in group:
                g.leader = None if g is leaders[0] else leaders[0]
    return pattern
