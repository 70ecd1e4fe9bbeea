"""The one graph pass inductor_conv installs: a ``joint_custom_pre_pass`` that runs our pattern replacements.

Why the joint pre-pass: it sees the AOTAutograd joint forward+backward graph before the partitioner, so a rewrite
to our custom op also replaces the eager backward with our fused backward op, and the partitioner then saves only
the op's inputs. The joint passes also run for inference (no-grad) graphs, so inference patterns live here too.

It runs before Inductor's own ``remove_noop_ops``, so it first removes alias/clone no-ops itself (they sit between
the ops of a pattern and make it miss), lets the backward reuse the forward's views (``merge_repeated_views``), and
calls ``stable_topological_sort`` after replacing.

Each capability's patterns are registered (rebuilt from the shipped files in about a second, or from the disk cache,
or traced: Note [pattern cache] in pattern_cache.py) the first time a graph holds one of its anchor ops (a
convolution, a bmm, a copy_), so graphs without any cost nothing more than a scan.

Inductor's FX graph cache skips custom passes on a hit, so the pass is a ``CustomGraphPass`` whose ``uuid()`` hashes
every source file that can change a rewrite, plus the config values the rewrites read.
"""
from __future__ import annotations

import importlib
import math
import operator
import pathlib

import torch

from inductor_conv import config
from inductor_conv._compat import (
    apply_early_joint_patterns,
    PatternMatcherPass,
    get_hash_for_files,
    get_joint_custom_pre_pass,
    get_pre_grad_custom_pass,
    remove_noop_ops,
    set_joint_custom_pre_pass,
    set_pre_grad_custom_pass,
    stable_topological_sort,
    statically_known_true,
    unset_fake_temporarily,
)
from inductor_conv.patterns import rewrite_log
from inductor_conv.patterns.chained_pass import ChainedPass, as_tuple
from inductor_conv.patterns.checks import SIZE_QUERIES, VIEW_OPS
from inductor_conv.patterns.einsum import EinsumAsMatmulPass
from inductor_conv.patterns.inductor_guard import protect as keep_inductor_attention_exact
from inductor_conv.patterns.table_grad import small_table_grads_summed

PATTERNS = PatternMatcherPass(pass_name="inductor_conv")
# Callables run on each graph right after our rewrites (tests record golden graphs with them).
GRAPH_OBSERVERS: list = []
# Capability: (pattern module, config flag, anchor ops: every form it rewrites contains one of them in an ATen graph;
# a 4-D matmul is an expand / view / bmm there).
CAPABILITIES = (
    ("inductor_conv.patterns.causal_conv1d_silu", "causal_conv1d", (torch.ops.aten.convolution.default,)),
    ("inductor_conv.patterns.attention", "attention", (torch.ops.aten.bmm.default,)),
    # HF BLOOM (baddbmm), MPT (a 4-D matmul) and XGLM (3-D bmm scores): bmm
    ("inductor_conv.patterns.attention_model_forms", "attention",
     (torch.ops.aten.baddbmm.default, torch.ops.aten.bmm.default)),
    # a decode step writes its cache back: the graph ends with copy_(conv_state, new state)
    ("inductor_conv.patterns.causal_conv1d_update", "causal_conv1d", (torch.ops.aten.copy_.default,)),
)


def _hashable(arg):
    """``arg`` with its lists as tuples (nodes stay themselves: equal means the same node)."""
    if isinstance(arg, (list, tuple)):
        return tuple(_hashable(a) for a in arg)
    if isinstance(arg, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in arg.items()))
    return arg


def merge_repeated_views(graph) -> int:
    """In a joint graph, make the backward use the forward's node for each view op it repeats (the same op with the
    same arguments: same input node, same sizes or dims). Exact: both alias the same elements of the same tensor.

    Functionalisation replays the views of a tensor the model wrote into where autograd reads it again (Kimi-Linear
    builds its key with ``k = kv.new_empty(...); k[..., :a].copy_(k_nope); k[..., a:].copy_(k_rot)``): the backward
    takes kᵀ from k through a second permute / expand / view chain for dQ's matmul, where the training patterns read
    the forward's kᵀ. Views repeated within the forward are left apart: two attentions reading the same K through
    views of their own match one each (merged, each would see the other reading its nodes). The backward starts at
    the first node that reads a tangent; a graph without tangents is left as it is. Returns the number of nodes
    merged."""
    tangents = {n for n in graph.find_nodes(op="placeholder") if str(n.target).startswith("tangents")}
    forward: dict = {}
    in_backward, merged = False, 0
    for node in list(graph.nodes):
        in_backward = in_backward or any(a in tangents for a in node.all_input_nodes)
        if node.op != "call_function" or node.target not in VIEW_OPS:
            continue
        try:
            key = (node.target, _hashable(node.args), _hashable(node.kwargs))
            seen = forward.get(key) if in_backward else forward.setdefault(key, node)
        except TypeError:  # an argument that cannot be hashed (a symbolic size object): left as it is
            continue
        if in_backward and seen is not None:
            node.replace_all_uses_with(seen)
            graph.erase_node(node)
            merged += 1
    return merged


def _same_view(a, b) -> bool:
    """a and b are the same node, or the same chain of view ops on the same node (equal arguments)."""
    if a is b:
        return True
    if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node) and a.op == b.op == "call_function"
            and a.target == b.target and a.target in VIEW_OPS and not a.kwargs and not b.kwargs
            and len(a.args) == len(b.args)):
        return False
    try:
        same_args = _hashable(a.args[1:]) == _hashable(b.args[1:])
    except TypeError:
        return False
    return same_args and _same_view(a.args[0], b.args[0])


_VIEWS_AND_CASTS = VIEW_OPS | {torch.ops.prims.convert_element_type.default}


def _reaches_softmax_max(node) -> bool:
    """node, or a view or cast of it, is reduced by a max over its last dim (a softmax's, decomposed)."""
    for user in node.users:
        if user.target in _VIEWS_AND_CASTS and _reaches_softmax_max(user):
            return True
        if user.target == torch.ops.aten.amax.default and user.args[0] is node:
            return True
    return False


def repeated_mask_adds_merged(graph) -> int:
    """``(x + m) + m'`` where m' is m again (the same view chain of the same tensor), a floating mask, and the sum
    feeds a softmax: ``x + (m + m')``, so that one mask term is added as the attention forms expect. SwinV2's and
    Swin2SR's shifted blocks add their window mask twice, each through its own unsqueezes. Exact where it matters:
    m + m' is 2m, exact in floating point, and the sum differs from eager's two roundings only by the last bit of
    the masked scores' sum. Returns the number of adds merged."""
    add = torch.ops.aten.add.Tensor
    merged = 0
    for node in list(graph.find_nodes(op="call_function", target=add)):
        inner, again = node.args[:2] if len(node.args) == 2 and not node.kwargs else (None, None)
        if not (isinstance(inner, torch.fx.Node) and isinstance(again, torch.fx.Node) and inner.target == add
                and len(inner.users) == 1
                and len(inner.args) == 2 and not inner.kwargs and _same_view(inner.args[1], again)):
            continue
        value = again.meta.get("val")
        if not (isinstance(value, torch.Tensor) and value.is_floating_point() and _reaches_softmax_max(node)):
            continue
        with graph.inserting_before(node):
            twice = graph.call_function(add, (inner.args[1], again))
        twice.meta["val"] = value + value
        node.args = (inner.args[0], twice)
        graph.erase_node(inner)
        merged += 1
    return merged


# Ops that may sit between a scores term and its softmax: the scale, the masks' adds, a cast, views.
_SCORE_STEPS = _VIEWS_AND_CASTS | {torch.ops.aten.mul.Tensor, torch.ops.aten.div.Tensor, torch.ops.aten.add.Tensor,
                                   torch.ops.aten.sub.Tensor}


# The same and masked fills (``where``): the ops between a scores product and its softmax.
_SCORE_STEPS_AND_FILLS = _SCORE_STEPS | {torch.ops.aten.where.self}


def _reaches_softmax_scores(node, steps: int, ops=_SCORE_STEPS) -> bool:
    """node, or what at most ``steps`` of ``ops`` (elementwise: the scale, masks, a cast; views) make of it, is reduced
    by a softmax's max over its last dim."""
    if _reaches_softmax_max(node):
        return True
    return steps > 0 and any(user.target in ops and _reaches_softmax_scores(user, steps - 1, ops)
                             for user in node.users)


def _is_zero(arg) -> bool:
    return type(arg) in (int, float) and arg == 0


def zero_adds_dropped(graph) -> int:
    """Replace ``x + 0`` (a Python zero, of x's dtype and shape) on the way to a softmax by x: XLNet adds its absent
    segment term as ``ac + bd + 0``. Exact but for the sign of a zero score, which the softmax does not see. Returns
    the number dropped."""
    dropped = 0
    for node in list(graph.find_nodes(op="call_function", target=torch.ops.aten.add.Tensor)):
        if node.kwargs or len(node.args) != 2:
            continue
        x, zero = node.args if _is_zero(node.args[1]) else reversed(node.args)
        value, result = getattr(x, "meta", {}).get("val"), node.meta.get("val")
        if not (_is_zero(zero) and isinstance(value, torch.Tensor) and isinstance(result, torch.Tensor)
                and value.is_floating_point() and value.dtype == result.dtype and value.shape == result.shape
                and _reaches_softmax_scores(node, 3)):
            continue
        node.replace_all_uses_with(x)
        graph.erase_node(node)
        dropped += 1
    return dropped


def _computed_from(node, source) -> bool:
    """``source`` is among the nodes ``node`` is computed from."""
    seen, stack = {node}, [node]
    while stack:
        for arg in stack.pop().all_input_nodes:
            if arg is source:
                return True
            if arg not in seen:
                seen.add(arg)
                stack.append(arg)
    return False


def subtracted_masks_as_adds(graph) -> int:
    """Spell ``s - m`` (m a floating tensor) that a softmax's max reduces, directly or through views and casts, as
    ``s + (-m)``: XLNet's ``score - 1e30 * mask`` and Funnel's ``score - INF * (1 - mask)`` are additive masks as the
    attention forms write them. Exact: IEEE subtraction is the addition of the negation. A term computed from the
    scores is no mask: the row max that softmax, gpt-oss's sinks and MiMo subtract stays as it is. Returns the number
    respelled."""
    aten = torch.ops.aten
    respelled = 0
    for node in list(graph.find_nodes(op="call_function", target=aten.sub.Tensor)):
        if node.kwargs or len(node.args) != 2 or not all(isinstance(a, torch.fx.Node) for a in node.args):
            continue
        s, m = node.args
        values = [a.meta.get("val") for a in (s, m, node)]
        if not (all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values)
                and _reaches_softmax_max(node) and not _computed_from(m, s)):
            continue
        with graph.inserting_before(node):
            negated = graph.call_function(aten.neg.default, (m,))
            added = graph.call_function(aten.add.Tensor, (s, negated))
        negated.meta["val"], added.meta["val"] = -values[1], values[2]
        for key in ("stack_trace", "nn_module_stack"):
            if key in node.meta:
                negated.meta[key] = added.meta[key] = node.meta[key]
        node.replace_all_uses_with(added)
        graph.erase_node(node)
        respelled += 1
    return respelled


def _score_terms(amax) -> list:
    """The adds of tensor terms on the way from the scores to a softmax's max ``amax``, innermost first: the chain from
    amax's input back through casts, views, a scale (a number or a 0-d tensor) and adds, following each add's first
    operand (the scores; the second is the term). Every node of the chain but the last has no other user."""
    from inductor_conv.patterns.attention_relax import _scale_of  # the patterns' own reading of a scale

    aten = torch.ops.aten
    adds, node = [], amax.args[0]
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and not node.kwargs:
        if node.target in _VIEWS_AND_CASTS or _scale_of(node) is not None:
            nxt = node.args[0]
        elif node.target == aten.add.Tensor and len(node.args) == 2 and isinstance(node.args[1], torch.fx.Node):
            adds.append(node)
            nxt = node.args[0]
        else:
            break
        if not (isinstance(nxt, torch.fx.Node) and len(nxt.users) == 1):
            break
        node = nxt
    return adds[::-1]


def extra_score_terms_summed(graph) -> list:
    """Where three or more tensor terms are added to the scores before their softmax, ``((s + a) + b) + ...`` (Funnel:
    two position terms computed from q, then the mask; XLNet with segments: two terms, the scale, the mask), add the
    first two together first, ``(s + (a + b)) + ...``, until two terms are left, the most the attention forms take. The
    sum rounds once where eager rounds the scores twice, as the op's own ``mask + padding`` does (attention_forms'
    pair forms); a term's gradient is the scores' gradient either way, and the backward already computes it so.
    Returns the sums made, for ``score_terms_unsummed`` to undo where no rewrite took them."""
    add = torch.ops.aten.add.Tensor
    sums = []
    for amax in list(graph.find_nodes(op="call_function", target=torch.ops.aten.amax.default)):
        terms = _score_terms(amax)
        while len(terms) >= 3:
            inner, outer = terms[0], terms[1]
            a, b = inner.args[1], outer.args[1]
            values = [x.meta.get("val") for x in (inner.args[0], a, b)]
            if not (all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values)
                    and outer.args[0] is inner):
                break
            with graph.inserting_before(outer):
                both = graph.call_function(add, (a, b))
            both.meta["val"] = values[1] + values[2]
            outer.args = (inner.args[0], both)
            graph.erase_node(inner)
            terms = terms[1:]
            sums.append(both)
    return sums


def score_terms_unsummed(graph, sums) -> int:
    """Undo ``extra_score_terms_summed`` where no rewrite consumed its sum (``s + (a + b)`` back to ``(s + a) + b``, the
    latest sum first), so a graph the patterns left alone computes eager's order of adds. Returns the number undone."""
    add = torch.ops.aten.add.Tensor
    undone, present = 0, set(graph.find_nodes(op="call_function", target=add))
    for both in reversed(sums):
        if both not in present or len(both.users) != 1:
            continue
        outer = next(iter(both.users))
        if outer.target != add or len(outer.args) != 2 or outer.args[1] is not both:
            continue
        scores, (a, b) = outer.args[0], both.args
        with graph.inserting_before(outer):
            inner = graph.call_function(add, (scores, a))
        inner.meta["val"] = scores.meta["val"] + a.meta["val"]
        outer.args = (inner, b)
        graph.erase_node(both)
        present.add(inner)
        undone += 1
    return undone


# Note [remasked probabilities]
# CPM-Ant and FastSpeech2-Conformer mask the probabilities again after the softmax, with the mask that hid the
# scores: ``softmax(s.masked_fill(m, fill)).masked_fill(m, 0)``. On a row with a visible key the second fill changes
# nothing (a hidden key's probability is exp(fill - max) == 0 already, for the fills the forms accept); on a row whose
# keys are all hidden it gives zeros, where the softmax alone gives a uniform row (finfo.min) or NaN (-inf). That is
# the op's own convention for such rows with a -inf fill, so ``softmax_remasks_dropped`` spells the pair as the
# single -inf fill: the fill becomes -inf, the second fill goes, and so does its backward (the same zero fill of the
# probabilities' gradient, which the softmax's backward multiplies by the probabilities, zero there anyway but for
# those rows). ``softmax_remasks_restored`` puts all three back wherever the probabilities were not rewritten.

_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout, torch.memory_format)


def _same_tensor(a, b, depth: int = 8) -> bool:
    """a and b compute the same tensor: the same node, the same deterministic op of arguments that are the same
    (recursively, ``depth`` ops deep), or constants of equal value. CPM-Ant computes its mask anew for each of its
    two fills, each with a constant of its own."""
    if a is b:
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_tensor(x, y, depth) for x, y in zip(a, b))
    if not (isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node)):
        return isinstance(a, _PLAIN) and type(a) is type(b) and a == b  # a symbolic size only as itself
    if depth == 0 or a.op != b.op:
        return False
    if a.op == "get_attr":
        module = a.graph.owning_module
        try:
            x, y = (operator.attrgetter(n.target)(module) for n in (a, b))
        except AttributeError:
            return False
        with unset_fake_temporarily():
            return (type(x) is type(y) is torch.Tensor and x.dtype == y.dtype and x.shape == y.shape
                    and x.device == y.device and bool(torch.equal(x, y)))
    if a.op != "call_function" or a.target != b.target or set(a.kwargs) != set(b.kwargs):
        return False
    if torch.Tag.nondeterministic_seeded in getattr(a.target, "tags", ()):  # a random op: two draws differ
        return False
    return _same_tensor(a.args, b.args, depth - 1) and all(
        _same_tensor(a.kwargs[k], b.kwargs[k], depth - 1) for k in a.kwargs)


def _zero_fill(node) -> bool:
    """node is ``where(m, 0, x)`` with a 0-d zero (masked_fill(m, 0) decomposed)."""
    if not (node.op == "call_function" and node.target == torch.ops.aten.where.self and len(node.args) == 3
            and not node.kwargs):
        return False
    zero = node.args[1]
    return (isinstance(zero, torch.fx.Node) and zero.target == torch.ops.aten.scalar_tensor.default
            and _is_zero(zero.args[0]))


def _softmax_input_fill(probs):
    """For ``probs`` a softmax's output (``exp(x - amax(x)) / sum``, decomposed), the ``where(m, fill, s)`` that x is,
    directly or through casts and views, else None."""
    aten = torch.ops.aten
    if not (probs.target == aten.div.Tensor and isinstance(probs.args[0], torch.fx.Node)
            and probs.args[0].target == aten.exp.default):
        return None
    sub = probs.args[0].args[0]
    if not (isinstance(sub, torch.fx.Node) and sub.target == aten.sub.Tensor):
        return None
    node = sub.args[0]
    while isinstance(node, torch.fx.Node) and node.target in _VIEWS_AND_CASTS:
        node = node.args[0]
    if isinstance(node, torch.fx.Node) and node.target == aten.where.self and len(node.args) == 3:
        return node
    return None


def _scalar_constant(node):
    """The number a 0-d ``scalar_tensor(c)`` or ``full([], c)`` node holds, else None."""
    aten = torch.ops.aten
    if node.target == aten.scalar_tensor.default and node.args:
        return node.args[0]
    if node.target == aten.full.default and len(node.args) == 2 and list(node.args[0]) == []:
        return node.args[1]
    return None


def softmax_remasks_dropped(graph) -> list:
    """Spell ``softmax(s.masked_fill(m, fill)).masked_fill(m, 0)`` as the softmax of ``s.masked_fill(m, -inf)``
    (Note [remasked probabilities]). Returns what ``softmax_remasks_restored`` needs to undo each."""
    aten = torch.ops.aten
    dropped = []
    erased = set()
    for remask in list(graph.find_nodes(op="call_function", target=aten.where.self)):
        if remask in erased or not _zero_fill(remask):
            continue
        mask, probs = remask.args[0], remask.args[2]
        source = probs
        while isinstance(source, torch.fx.Node) and source.target in _VIEWS_AND_CASTS:
            source = source.args[0]
        fill = _softmax_input_fill(source) if isinstance(source, torch.fx.Node) else None
        if fill is None or not _same_tensor(fill.args[0], mask) or not isinstance(fill.args[1], torch.fx.Node):
            continue
        value, scores = fill.args[1], fill.meta.get("val")
        number = _scalar_constant(value)
        if not (isinstance(scores, torch.Tensor) and type(number) in (int, float) and number in (
                -math.inf, torch.finfo(scores.dtype).min, torch.finfo(torch.float32).min)):
            continue
        # the probabilities' gradient filled the same way, then multiplied by them (the softmax's backward)
        grads = [g for g in graph.find_nodes(op="call_function", target=aten.where.self)
                 if g is not remask and g not in erased and _zero_fill(g) and _same_tensor(g.args[0], mask)
                 and any(u.target == aten.mul.Tensor and source in u.args for u in _through_casts(g))]
        # -inf as masked_fill with a number spells it (a 0-d tensor's ``full`` becomes that too)
        constant = value.meta["val"]
        with graph.inserting_before(fill):
            minus_inf = graph.call_function(aten.scalar_tensor.default, (-math.inf,), {
                "dtype": constant.dtype, "layout": torch.strided, "device": constant.device})
        minus_inf.meta.update(value.meta)
        fill.replace_input_with(value, minus_inf)
        # each zero fill dropped: what it filled and the users it had, to put it back between them
        refills = [(node.args[2], list(node.users)) for node in (remask, *grads)]
        dropped.append((fill, value, minus_inf, probs, refills, _recipe(remask.args[1])))
        for node in (remask, *grads):
            node.replace_all_uses_with(node.args[2])
            graph.erase_node(node)
            erased.add(node)
    return dropped


def _through_casts(node) -> list:
    """node's users, and the users of any cast or view of it."""
    out = []
    for user in node.users:
        out.append(user)
        if user.target in _VIEWS_AND_CASTS:
            out.extend(_through_casts(user))
    return out


def _recipe(node) -> tuple:
    """What recreates ``node`` (a constant) after it is erased: its target, arguments and meta."""
    return node.target, node.args, dict(node.kwargs), dict(node.meta)


def _zero_fill_restored(graph, alive, mask, zero, x, users) -> None:
    """``where(mask, 0, x)`` made again after x (the zero from its recipe) and given back to ``users`` in place of x,
    where x is still in the graph."""
    if x not in alive:
        return
    target, args, kwargs, meta = zero
    with graph.inserting_after(x):
        z = graph.call_function(target, args, kwargs)
    z.meta.update(meta)
    with graph.inserting_after(z):
        refill = graph.call_function(torch.ops.aten.where.self, (mask, z, x))
    refill.meta["val"] = x.meta.get("val")
    for user in users:
        if user in alive:
            user.replace_input_with(x, refill)


def softmax_remasks_restored(graph, dropped) -> int:
    """Undo ``softmax_remasks_dropped`` wherever the probabilities are still in the graph (no rewrite took them):
    the fill as it was, the probabilities and their gradient filled with zeros again. Returns the number restored."""
    restored, alive = 0, set(graph.nodes)  # an erased node keeps its .graph
    for fill, value, minus_inf, probs, refills, zero in dropped:
        if probs not in alive or fill not in alive:
            continue
        fill.replace_input_with(minus_inf, value)
        mask = fill.args[0]  # the same tensor as the remask's (_same_tensor), and still in the graph
        for x, users in refills:
            _zero_fill_restored(graph, alive, mask, zero, x, users)
        if not minus_inf.users:
            graph.erase_node(minus_inf)
        restored += 1
    return restored


# Note [masked fill over a bias]
# CPM-Ant hides keys with ``masked_fill(s·c + bias, m, -inf)`` and FastSpeech2-Conformer (its fill -inf once
# Note [remasked probabilities] has applied) with ``masked_fill((s + bias)·c, m, -inf)``: a fill over scores that
# already carry a term. The forms take a fill on bare scaled scores, or additive terms; for a -inf fill the two are
# the same: ``where(m, -inf, y) == y + where(m, -inf, 0)`` for every finite y, and a hidden score's gradient is zero
# either way (its probability is). So ``masked_fills_over_terms_as_adds`` makes such a fill that add, in place
# (the node keeps its identity), and the pair forms take the bias and the hidden keys as their two terms;
# ``masked_fills_over_terms_restored`` turns every one no rewrite consumed back into the fill.

def _minus_inf(node) -> bool:
    return (isinstance(node, torch.fx.Node) and node.target in (torch.ops.aten.scalar_tensor.default,
                                                                 torch.ops.aten.full.default)
            and node.args and node.args[-1] == -math.inf)


def _carries_a_term(y) -> bool:
    """y is ``a + b`` of two floating tensors, or such a sum times or divided by a number (the scale)."""
    aten = torch.ops.aten
    if (isinstance(y, torch.fx.Node) and y.target in (aten.mul.Tensor, aten.div.Tensor) and len(y.args) == 2
            and type(y.args[1]) in (int, float)):
        y = y.args[0]
    if not (isinstance(y, torch.fx.Node) and y.target == aten.add.Tensor and len(y.args) == 2 and not y.kwargs):
        return False
    values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in y.args]
    return all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values)


def masked_fills_over_terms_as_adds(graph) -> list:
    """``where(m, -inf, y)`` that a softmax's max reduces, with y the scores plus a term (scaled or not), spelled
    ``y + where(m, -inf, 0)`` in place (Note [masked fill over a bias]). Returns the nodes changed."""
    aten = torch.ops.aten
    changed = []
    for node in list(graph.find_nodes(op="call_function", target=aten.where.self)):
        if len(node.args) != 3 or node.kwargs or not _reaches_softmax_max(node):
            continue
        mask, fill, y = node.args
        value = y.meta.get("val") if isinstance(y, torch.fx.Node) else None
        if not (_minus_inf(fill) and _carries_a_term(y) and isinstance(value, torch.Tensor)):
            continue
        with graph.inserting_before(node):
            zero = graph.call_function(aten.scalar_tensor.default, (0.0,), dict(fill.kwargs))
            hidden = graph.call_function(aten.where.self, (mask, fill, zero))
        zero.meta["val"] = fill.meta["val"].new_zeros(())
        hidden.meta["val"] = torch.where(mask.meta["val"], fill.meta["val"], zero.meta["val"])
        node.target, node.args = aten.add.Tensor, (y, hidden)
        # the fill's backward, the scores' gradient filled with zeros (an add passes it on as it is); zero there
        # anyway, as the probabilities are, so it goes too
        candidates = [g for g in graph.find_nodes(op="call_function", target=aten.where.self)
                      if g is not hidden and _zero_fill(g) and _same_tensor(g.args[0], mask)]
        downstream = _computed_after(node) if candidates else set()
        grads = [g for g in candidates if g.args[2] in downstream]
        refills = [(g.args[2], list(g.users), _recipe(g.args[1])) for g in grads]
        for g in grads:
            g.replace_all_uses_with(g.args[2])
            graph.erase_node(g)
        changed.append((node, refills))
    return changed


def _computed_after(node) -> set:
    """The nodes computed from ``node`` (its users, theirs, ...): one walk, where ``_computed_from`` per candidate
    would walk the graph above each (every layer's fill in a whole model shares one mask)."""
    seen, stack = set(), [node]
    while stack:
        for user in stack.pop().users:
            if user not in seen:
                seen.add(user)
                stack.append(user)
    return seen


def masked_fills_over_terms_restored(graph, changed) -> int:
    """Undo ``masked_fills_over_terms_as_adds`` wherever its add is still in the graph. Returns the number undone."""
    aten = torch.ops.aten
    alive, undone = set(graph.nodes), 0
    for node, grads in changed:
        if node not in alive or node.target != aten.add.Tensor:
            continue
        y, hidden = node.args
        mask, fill, zero = hidden.args
        node.target, node.args = aten.where.self, (mask, fill, y)
        if not hidden.users:
            graph.erase_node(hidden)
            graph.erase_node(zero)
        for x, users, recipe in grads:
            _zero_fill_restored(graph, alive, mask, recipe, x, users)
        undone += 1
    return undone


def _scores_operand(node) -> bool:
    """node reaches, through views and contiguous copies, a bmm whose product a softmax's max reduces (through the
    scale, masks, casts and views): it is an operand of attention scores."""
    aten = torch.ops.aten
    for user in node.users:
        if user.target in VIEW_OPS or user.target == aten.clone.default:
            if _scores_operand(user):
                return True
        elif user.target == aten.bmm.default and _reaches_softmax_scores(user, 8, _SCORE_STEPS_AND_FILLS):
            return True
    return False


def _split_permute(graph, node, first, second) -> None:
    """node, ``permute(x, dims)``, made ``permute(permute(x, first), second)`` in place (the same view)."""
    x = node.args[0]
    with graph.inserting_before(node):
        inner = graph.call_function(torch.ops.aten.permute.default, (x, first))
    inner.meta["val"] = x.meta["val"].permute(*first)
    node.args = (inner, second)


def key_permutes_split(graph) -> int:
    """``k.permute(0, 2, 3, 1)`` of a (B, S, H, D) key as the scores' right operand (FastSpeech2-Conformer writes
    kᵀ so, in one permute) spelled as the heads' transpose, then the last two dims swapped, as the forms take kᵀ,
    and in a joint graph the backward's inverse, ``permute(0, 3, 1, 2)`` of kᵀ's gradient (a bmm's product), as the
    swap back, then the heads' transpose. Each is the same view. Returns the number split."""
    aten = torch.ops.aten
    split, shapes = 0, set()
    for node in list(graph.find_nodes(op="call_function", target=aten.permute.default)):
        if len(node.args) != 2 or list(node.args[1]) != [0, 2, 3, 1] or not _scores_operand(node):
            continue
        value = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        if not (isinstance(value, torch.Tensor) and value.dim() == 4):
            continue
        _split_permute(graph, node, [0, 2, 1, 3], [0, 1, 3, 2])
        shapes.add(tuple(node.meta["val"].shape))
        split += 1
    for node in list(graph.find_nodes(op="call_function", target=aten.permute.default)) if shapes else ():
        grad = node.args[0]
        if not (len(node.args) == 2 and list(node.args[1]) == [0, 3, 1, 2] and isinstance(grad, torch.fx.Node)
                and grad.target in VIEW_OPS and isinstance(grad.args[0], torch.fx.Node)
                and grad.args[0].target == aten.bmm.default and tuple(grad.meta["val"].shape) in shapes):
            continue
        _split_permute(graph, node, [0, 1, 3, 2], [0, 2, 1, 3])
        split += 1
    return split


def _feeds_bmm_only(node) -> bool:
    """Every user of ``node`` is a bmm, or a transpose (permute) whose every user is a bmm: the backward's."""
    bmm, permute = torch.ops.aten.bmm.default, torch.ops.aten.permute.default
    return all(u.target == bmm or (u.target == permute and all(w.target == bmm for w in u.users))
               for u in node.users)


def bmm_operand_expands_dropped(graph) -> int:
    """Replace each ``expand`` of a 3-D tensor to its own shape that feeds only bmms by its input: the spelling
    ``torch.bmm`` gives, which the 3-D (bmm) attention forms were traced in. ``a @ b`` on 3-D tensors (SAM's and
    ViTDet's ``(q * scale) @ k.transpose(-2, -1)`` on (B·H, N, D) heads) decomposes to ``bmm(expand(a), expand(b))``
    with both expands to the operands' own shapes. Exact: such an expand is a view with the same sizes and strides.
    Expands that broadcast, or that feed anything else (the 4-D matmul's expand before its view to 3-D, which the
    4-D forms were traced with), stay. Returns the number of expands dropped."""
    dropped = 0
    for node in list(graph.find_nodes(op="call_function", target=torch.ops.aten.expand.default)):
        src = node.args[0]
        if not isinstance(src, torch.fx.Node) or not _feeds_bmm_only(node):
            continue
        before, after = src.meta.get("val"), node.meta.get("val")
        if not (isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor) and before.dim() == 3
                and after.dim() == 3 and all(statically_known_true(a == b)
                                             for a, b in zip(before.shape, after.shape, strict=True))):
            continue
        node.replace_all_uses_with(src)
        graph.erase_node(node)
        dropped += 1
    return dropped


def size_queries_off_replaced_nodes(graph) -> int:
    """Make each size query (``sym_size``) whose tensor nothing but size queries reads read an equal size of a
    tensor that stays instead, so the replaced computation behind it can go. Under dynamic shapes a backward
    reshape can take a length from the forward's scores or probabilities (DeBERTa's ``p.view(-1, S, S)``: B·H from
    its 3-D view); after a rewrite those size queries are the last readers of the replaced scores, softmax and bmms.
    The size is read from the first placeholder, or the first node before the query, with an equal size in some
    dim (the same symbolic value: exact); where none has one, the query stays. Returns the number of queries
    moved."""
    size_queries = set(SIZE_QUERIES)
    sized_only: set = set()  # nodes whose every reader is a size query or such a node
    for node in reversed(graph.nodes):
        if (node.op == "call_function" and node.users and not node.is_impure()
                and all(u.target in size_queries or u in sized_only for u in node.users)):
            sized_only.add(node)
    moved = 0
    # candidates in the order searched: placeholders first, then every node (a query stops at itself)
    candidates = [*graph.find_nodes(op="placeholder"), *(n for n in graph.nodes if n.op != "placeholder")]
    for query in list(graph.find_nodes(op="call_function", target=torch.ops.aten.sym_size.int)):
        if query.args[0] not in sized_only:
            continue
        size = query.meta.get("val")
        for node in candidates:
            if node is query:
                break
            value = node.meta.get("val")
            if node in sized_only or not isinstance(value, torch.Tensor):
                continue
            dim = next((d for d, n in enumerate(value.shape) if statically_known_true(n == size)), None)
            if dim is not None:
                with graph.inserting_before(query):
                    live = graph.call_function(torch.ops.aten.sym_size.int, (node, dim))
                live.meta.update(query.meta)
                query.replace_all_uses_with(live)
                graph.erase_node(query)
                moved += 1
                break
    return moved


def scalar_constants_as_full(graph) -> int:
    """Replace ``lift_fresh_copy`` of a 0-d floating constant (``torch.tensor(c, dtype=..., device=...)`` in model code:
    HF GPT-Neo's ``mask_value``) by ``full([], c)`` of its dtype and device, the spelling GPT-2's
    ``torch.full([], min)`` gives and the patterns were traced in. Exact: the constant's value read back as a Python
    float is the same number, and ``full`` makes the same 0-d tensor. Returns the number of constants replaced."""
    module, replaced = graph.owning_module, 0
    for node in list(graph.find_nodes(op="call_function", target=torch.ops.aten.lift_fresh_copy.default)):
        src = node.args[0]
        if src.op != "get_attr" or module is None:
            continue
        try:
            value = operator.attrgetter(src.target)(module)
        except AttributeError:
            continue
        if not (type(value) is torch.Tensor and value.dim() == 0 and value.is_floating_point()):
            continue  # a fake, symbolic or non-scalar constant: left as it is
        with unset_fake_temporarily():  # the pass runs under the compile's fake mode; the constant is real
            number = value.item()
        with graph.inserting_before(node):
            full = graph.call_function(torch.ops.aten.full.default, ([], number),
                                       {"dtype": value.dtype, "device": value.device, "pin_memory": False})
        full.meta.update(node.meta)
        node.replace_all_uses_with(full)
        graph.erase_node(node)
        replaced += 1
    return replaced


def _register_for(graph) -> bool:
    """Register the search/replace pairs of each enabled capability whose anchor op is in the graph, and say whether
    there was one. Tracing a capability's patterns takes seconds, so a process pays for it only once it compiles a
    graph that could contain the form (each module's ``register`` is functools.cache'd)."""
    targets = {n.target for n in graph.nodes if n.op == "call_function"}
    found = False
    for module, flag, anchors in CAPABILITIES:
        if getattr(config, flag) and not targets.isdisjoint(anchors):
            importlib.import_module(module).register(PATTERNS)
            found = True
    return found


def _source_files() -> tuple[str, ...]:
    """Every file whose text can change the compiled graph: patterns, ops, config, and (a cache hit replays the
    generated code) the kernels, tile tables, lowerings and templates."""
    package = pathlib.Path(importlib.import_module("inductor_conv").__file__).parent
    lowerings = pathlib.Path(importlib.import_module("inductor_conv.lowerings").__file__).parent
    here = pathlib.Path(__file__).parent
    files = (sorted(here.glob("*.py")) + sorted((package / "ops").glob("*.py")) + [package / "config.py"]
             + sorted((package / "kernels").glob("*.py")) + sorted((package / "heuristics").glob("*.py"))
             + sorted(lowerings.rglob("*.py")) + sorted(lowerings.rglob("*.jinja")))
    return tuple(str(f) for f in files)


# config's settings that do not change what a compiled graph runs: where the search patterns are read from.
_NOT_IN_GENERATED_CODE = frozenset({"pattern_cache", "pattern_cache_dir"})


def config_switches() -> tuple[str, ...]:
    """The names of config's settings that the pass's uuid() covers: every public setting (the rewrites', the
    lowerings' and their experiment switches) but _NOT_IN_GENERATED_CODE, so that a new one is covered unasked."""
    return tuple(name for name, value in vars(config).items() if not name.startswith("_")
                 and not callable(value) and type(value).__name__ != "module" and name not in _NOT_IN_GENERATED_CODE)


class InductorConvPass(ChainedPass):
    """Runs the pass that was installed before us (Note [chained passes]), then our patterns."""

    def __call__(self, graph) -> None:
        self.run_previous(graph)
        if not self.active:
            return
        small_table_grads_summed(graph)  # any graph: an embedding's backward needs no anchor op of ours
        from inductor_conv.patterns.attention_summary import saved_mask_summaries

        if not _register_for(graph):
            saved_mask_summaries(graph)  # attention called directly: Note [summaries saved for the backward]
            keep_inductor_attention_exact(graph)  # on every graph: Note [Inductor's attention rewrite]
            return
        # Bring the graph to the normal form our patterns were traced in (pattern_matcher.joint_fwd_bwd runs the
        # same cleanups): no-op aliases/clones, dead nodes, Inductor's early patterns (pointless view pairs); then
        # spellings the patterns were not traced in (3-D matmuls' no-op expands, views the backward repeats, 0-d
        # constants, causal_conv1d_silu's and autocast's normalize).
        from inductor_conv.patterns.autocast import normalize as normalize_autocast
        from inductor_conv.patterns.causal_conv1d_silu import normalize

        remove_noop_ops(graph)
        graph.eliminate_dead_code()
        apply_early_joint_patterns(graph)
        bmm_operand_expands_dropped(graph)
        merge_repeated_views(graph)
        repeated_mask_adds_merged(graph)
        zero_adds_dropped(graph)
        subtracted_masks_as_adds(graph)
        sums = extra_score_terms_summed(graph)
        scalar_constants_as_full(graph)
        normalize(graph)
        normalize_autocast(graph)
        key_permutes_split(graph)
        remasks = softmax_remasks_dropped(graph)
        fills = masked_fills_over_terms_as_adds(graph)
        conv_fwd = torch.ops.inductor_conv.causal_conv1d_fwd.default
        existing = set(graph.find_nodes(op="call_function", target=conv_fwd))  # the public op, called directly
        with rewrite_log.explaining(PATTERNS, graph):  # TORCH_LOGS=inductor_conv: Note [rewrite log]
            rewritten = PATTERNS.apply(graph)
        score_terms_unsummed(graph, sums)
        masked_fills_over_terms_restored(graph, fills)
        softmax_remasks_restored(graph, remasks)
        if rewritten:
            from inductor_conv.patterns.attention_causal import infer_causal
            from inductor_conv.patterns.conv_output_layout import keep_eager_output_layout

            infer_causal(graph)
            keep_eager_output_layout(graph, existing)
            size_queries_off_replaced_nodes(graph)
            stable_topological_sort(graph)
            # Replaced forward nodes can stay behind as dead code (e.g. a convolution whose only user was a
            # sym_size under dynamic shapes); drop them here rather than leave it to the partitioner.
            graph.eliminate_dead_code()
            graph.lint()
        saved_mask_summaries(graph)  # after infer_causal, which drops causal masks
        keep_inductor_attention_exact(graph)  # after our rewrites: Note [Inductor's attention rewrite]
        for observe in GRAPH_OBSERVERS:
            observe(graph)

    def uuid(self):
        # the config the rewrites and the lowerings read (its experiment switches included), plus the torch switches
        # the attention lowering reads (its cuDNN choice)
        settings = (tuple((name, getattr(config, name)) for name in config_switches()),
                    torch.backends.cuda.cudnn_sdp_enabled(), torch.are_deterministic_algorithms_enabled())
        return (get_hash_for_files(_source_files()).hex(), repr(settings), self.active, self.previous_uuid())


def _ours(current, cls=InductorConvPass):
    """Our pass of class ``cls``, installed directly or as an entry of a pass list another user built around it."""
    return next((p for p in as_tuple(current) if isinstance(p, cls)), None)


# Our pass of each of Inductor's hooks: (its class, the hook's getter and setter). The pre-grad one respells
# einsum attention as matmuls for the joint one's patterns (Note [einsum attention] in patterns/einsum.py).
_HOOKS = ((InductorConvPass, get_joint_custom_pre_pass, set_joint_custom_pre_pass),
          (EinsumAsMatmulPass, get_pre_grad_custom_pass, set_pre_grad_custom_pass))


def install() -> None:
    """Chain our passes in front of the currently installed ``joint_custom_pre_pass`` and ``pre_grad_custom_pass``.
    Idempotent."""
    for cls, get, set_ in _HOOKS:
        ours = _ours(get(), cls)
        if ours is not None:
            ours.active = True
        else:
            set_(cls(get()))


def uninstall() -> None:
    """Put back the passes we found. If another pass was later chained on top of ours, ours becomes a
    pass-through."""
    for cls, get, set_ in _HOOKS:
        current = get()
        if isinstance(current, cls):
            set_(current.previous)
            continue
        ours = _ours(current, cls)
        if ours is not None:
            ours.active = False


def installed() -> bool:
    ours = _ours(get_joint_custom_pre_pass())
    return ours is not None and ours.active
