"""Predicates of the attention rewrite: one small function per condition, True when the match may be rewritten.

``all_hold(match, form)`` is every pattern's ``extra_check``. The patterns ignore ints, floats, shapes and dtypes
and allow extra users (Note [relaxed attention search patterns] in ``attention_relax.py``), so these predicates prove
what the ignored values decided. ``match.kwargs`` holds the pattern inputs (query/key/value/mask/padding nodes,
whose ``meta["val"]`` are fake tensors, and the bound scalars fill, dropout_p, scale, ...); ``match.nodes`` the
matched nodes. Sizes may be symbolic: ``_known`` guards on a size with a hint and says False when it cannot decide.
Each is a ``@predicate``: the one that refuses a match is named, with its docstring's first sentence, in the log of
near misses (``TORCH_LOGS=inductor_conv``, Note [rewrite log] in rewrite_log.py).
"""
from __future__ import annotations

import functools
import logging
import math

import torch

from inductor_conv import config
from inductor_conv._compat import guard_or_false
from inductor_conv.patterns.checks import SIZE_QUERIES, VIEW_OPS
from inductor_conv.patterns.rewrite_log import predicate

aten = torch.ops.aten
prims = torch.ops.prims
_QKV_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MIN_HEAD_DIM, MAX_HEAD_DIM = 16, 256


def _known(cond) -> bool:
    return bool(guard_or_false(cond))


def _val(match, name):
    node = match.kwargs.get(name)
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _nodes(match, *targets):
    return sorted(n for n in match.nodes if n.op == "call_function" and n.target in targets)


def _shape(node):
    return tuple(node.meta["val"].shape)


def _same_shape(a, b) -> bool:
    return len(a) == len(b) and all(_known(x == y) for x, y in zip(a, b))


def _is_last_dim(dims, ndim) -> bool:
    return list(dims) in ([-1], [ndim - 1])


def _keepdim(reduction) -> bool:
    """The keepdim argument of a ``sum.dim_IntList`` or ``max.dim`` node (False when left out)."""
    return reduction.args[2] if len(reduction.args) > 2 else reduction.kwargs.get("keepdim", False)


# ---------------------------------------------------------------------------------------------------------------
# Configuration, devices, dtypes
# ---------------------------------------------------------------------------------------------------------------
@predicate(level=logging.DEBUG)
def attention_enabled(match) -> bool:
    """``inductor_conv.config.attention`` is on."""
    return bool(config.attention)


@predicate(level=logging.DEBUG)
def device_enabled(match) -> bool:
    """q's device type is one of ``config.device_types`` (enable(device_types=...))."""
    q = _val(match, "query")
    return isinstance(q, torch.Tensor) and q.device.type in config.device_types


# Ops that move or repeat elements without changing a value.
_LAYOUT_OPS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
               aten.transpose.int, aten.expand.default, aten.clone.default, aten.unsqueeze.default,
               aten.squeeze.dim, aten.alias.default)


def upcast_from(node, dtype) -> bool:
    """``node`` is ``x.to(torch.float32)`` of an ``x`` in ``dtype``, seen through layout ops: each of its values is
    exactly a value of ``dtype`` (float16 and bfloat16 embed exactly in float32)."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function":
        if node.target is prims.convert_element_type.default:
            source = node.args[0]
            return isinstance(source, torch.fx.Node) and getattr(source.meta.get("val"), "dtype", None) == dtype
        if node.target not in _LAYOUT_OPS:
            return False
        node = node.args[0]
    return False


@predicate
def qkv_consistent(match) -> bool:
    """q, k, v share a supported dtype and one device (the op and kernels assume it), or q and k are float32 upcasts
    of values in v's half dtype, which the replacement casts back exactly (Note [float32 scores])."""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        return False
    if not (q.dtype in _QKV_DTYPES and q.dtype == k.dtype and q.device == k.device == v.device):
        return False
    return q.dtype == v.dtype or (q.dtype == torch.float32 and v.dtype in (torch.float16, torch.bfloat16) and all(
        upcast_from(match.kwargs[n], v.dtype) for n in ("query", "key")))


# ---------------------------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------------------------
@predicate
def head_dim_supported(match) -> bool:
    """q and k share a head dim D_qk, v has its own D_v, and 16 <= D <= 256 for each (the kernels' tile limits).
    D_v may differ from D_qk (FlashAttention 3's hdim (192, 128), DeepSeek's MLA): the output has D_v."""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    return _known(k.shape[-1] == q.shape[-1]) and all(
        _known(d >= MIN_HEAD_DIM) and _known(d <= MAX_HEAD_DIM) for d in (q.shape[-1], v.shape[-1]))


@predicate
def qkv_shapes_consistent(match) -> bool:
    """q (B, Hq, Sq, D_qk), k (B, Hkv, Sk, D_qk) and v (B, Hkv, Sk, D_v) with Hq a multiple of Hkv; 3-D: q (N, Sq,
    D_qk), k (N, Sk, D_qk), v (N, Sk, D_v).  A batch broadcast by matmul (k with B = 1) is not attention our op
    computes.  (head_dim_supported compares the head dims.)"""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    if not q.dim() == k.dim() == v.dim() or q.dim() not in (3, 4):
        return False
    if not (_same_shape(k.shape[:-1], v.shape[:-1]) and _known(q.shape[0] == k.shape[0])):
        return False
    return q.dim() == 3 or _known(q.shape[1] % k.shape[1] == 0)


@predicate
def scores_and_output_shaped(match) -> bool:
    """The softmax input is (B, Hq, Sq, Sk) and the matched output (B, Hq, Sq, D_v): the reshapes around the two
    bmm's are the matmul decomposition of q kᵀ and P v, whatever sizes the pattern ignored."""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    # with gpt-oss's sinks the softmax runs over the keys and one sink column (sinks_supported); Granite-SWA's
    # apply theirs after the softmax (lse_sinks_supported)
    sink_column = "sinks" in match.kwargs and bool(_nodes(match, aten.cat.default))
    scores = (*q.shape[:-1], k.shape[-2] + 1 if sink_column else k.shape[-2])
    amaxes = _nodes(match, aten.amax.default)
    out = match.output_nodes()[0]
    return (bool(amaxes) and all(_same_shape(_shape(a.args[0]), scores) for a in amaxes)
            and _same_shape(_shape(out), (*q.shape[:-1], v.shape[-1])))


@predicate
def softmax_over_last_dim(match) -> bool:
    """The max and the normaliser sum of the (decomposed) softmax reduce the last dim, keeping it (a logsumexp's
    sum reduces it for its log)."""
    for amax in _nodes(match, aten.amax.default):
        if not (_is_last_dim(amax.args[1], len(_shape(amax.args[0]))) and amax.args[2] is True):
            return False
    for total in _nodes(match, aten.sum.dim_IntList):
        if _is_call(total.args[0], aten.exp.default):
            if not _is_last_dim(total.args[1], len(_shape(total.args[0]))):
                return False
            # a logsumexp's sum (Granite-SWA's sinks) drops the dim for its log; the softmax's keeps it
            if not (_keepdim(total) is True or all(_is_call(u, aten.log.default) for u in total.users)):
                return False
    return True


@predicate
def key_transposed_last_two(match) -> bool:
    """Every permute in the match swaps the last two dims (kᵀ, and the backward's transposes of it)."""
    for node in _nodes(match, aten.permute.default):
        dims = list(node.args[1])
        if dims != [*range(len(dims) - 2), len(dims) - 1, len(dims) - 2]:
            return False
    return True


def is_head_sum(node) -> bool:
    """A sum over dim 1 (or -3) that keeps it: the only sum relax's optional head sum can be (the check below proves
    the rest; attention_relax offers no other sum as one)."""
    return _is_call(node, aten.sum.dim_IntList) and list(node.args[1]) in ([1], [-3]) and _keepdim(node) is True


@predicate
def head_sums_reduce_broadcast_kv(match) -> bool:
    """A sum of a backward matmul's gradient (relax's optional head sum) reduces the heads of a K/V that matmul
    broadcast over them: dim 1 kept, K (and V) with one head, so the op reads it as multi-query GQA (Hkv = 1)."""
    q, k, v = (_val(match, n) for n in ("query", "key", "value"))
    for node in _nodes(match, aten.sum.dim_IntList):
        src = node.args[0]
        if not (_is_call(src, aten.view.default) and _is_call(src.args[0], aten.bmm.default)):
            continue  # the softmax's row sums, a bias gradient's batch sum
        if not (is_head_sum(node) and len(_shape(node)) == 4 and q.dim() == 4 and _known(k.shape[1] == 1)
                and _known(v.shape[1] == 1)):
            return False
    return True


def _shaped_like(gradient, shape) -> bool:
    """``gradient`` (a shape) is ``shape``, or ``shape`` with leading 1s (Note [lower-rank gradients])."""
    extra = len(gradient) - len(shape)
    return extra >= 0 and all(_known(d == 1) for d in gradient[:extra]) and _same_shape(gradient[extra:], shape)


@predicate
def gradients_shaped_like_inputs(match, names=("query", "key", "value")) -> bool:
    """A training match returns the output, then the gradient of each input (``names``: the pattern's inputs in
    signature order) that needs one: each must have its input's shape, up to leading 1s, as the replacement's
    gradients do (Note [lower-rank gradients] in attention.py). A K/V gradient not yet reduced over broadcast heads
    would not, nor a bias gradient that the graph sums over the batch after the match: MPNet expands its
    (1, H, S, S) position bias over the batch and adds the (B, H, S, S) copy, so the sum in its backward belongs to
    the expand, not to a broadcast bias of the pattern."""
    outputs = match.output_nodes()
    for name, node in zip(names, outputs[1:]):
        value = _val(match, name)
        if node is not None and isinstance(value, torch.Tensor) and not _shaped_like(_shape(node), value.shape):
            return False
    return True


def gradients_present(match) -> tuple[bool, ...] | None:
    """For a training match, whether the joint graph computes the gradient of each pattern input (argnames order),
    else None. A training pattern's outputs are the forward's output, then one gradient per input (None where the
    trace had none); relax lets each be absent (Note [partial gradients] in attention.py)."""
    outputs = match.output_nodes()
    if len(outputs) == 1:
        return None
    return tuple(node is not None for node in outputs[1:])


@predicate(level=logging.DEBUG)
def computes_a_gradient(match) -> bool:
    """A training match computes at least one gradient: attention whose inputs all lack one has no backward, and is
    the inference patterns' (registered after the training ones)."""
    present = gradients_present(match)
    return present is None or any(present)


@predicate
def repeat_kv_interleaves(match) -> bool:
    """HF repeat_kv: k[:, :, None].expand(B, Hkv, G, S, D).reshape(B, Hkv·G, S, D), so query head h reads kv head
    h // G as the op does. (Unsqueezing another dim would pair heads as h % Hkv.)"""
    q = _val(match, "query")
    for node in _nodes(match, aten.unsqueeze.default):
        if len(_shape(node)) != 5 or node.args[1] not in (2, -3):
            return False
    for node in _nodes(match, aten.view.default, aten._unsafe_view.default):
        src = node.args[0]
        if isinstance(src, torch.fx.Node) and len(_shape(src)) == 5:
            b, hkv, g, s, d = _shape(src)
            if not (_same_shape(_shape(node), (b, hkv * g, s, d)) and _known(hkv * g == q.shape[1])):
                return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# Masks, dropout, users
# ---------------------------------------------------------------------------------------------------------------
@predicate
def masks_supported(match) -> bool:
    """Each mask input is a bool or floating tensor on q's device that broadcasts to the scores without growing
    them; not a 0-d tensor (a scalar that tensorify turned into a tensor)."""
    q, k = _val(match, "query"), _val(match, "key")
    scores = (*q.shape[:-1], k.shape[-2])
    return all(_mask_fits(_val(match, name), q, scores) for name in ("mask", "padding") if name in match.kwargs)


def _mask_fits(m, q, shape) -> bool:
    """m is a bool or floating tensor on q's device that broadcasts to ``shape`` without growing it."""
    return (isinstance(m, torch.Tensor) and m.device == q.device and broadcasts_to(m, shape)
            and (m.dtype == torch.bool or m.is_floating_point()))


@predicate
def window_mask_splits_batch(match) -> bool:
    """Swin's window mask: ``mask`` (the position bias) as masks_supported takes it; ``padding`` a floating or bool
    (1, nW, 1 or H, 1 or Sq, Sk) tensor on q's device, and every reshape in the match between 4-D and 5-D splits the
    scores' (B·nW) batch into (B, nW) with nW the mask's, or merges it back: window w's mask reaches the batch rows
    b·nW + w, as the op's mask does (attention_forms._op_mask_window_pair)."""
    q, k, m = _val(match, "query"), _val(match, "key"), _val(match, "padding")
    scores = (*q.shape[:-1], k.shape[-2])
    if not (isinstance(m, torch.Tensor) and m.dim() == 5 and q.dim() == 4 and _known(m.shape[0] == 1)):
        return False
    windows = m.shape[1]
    split = (scores[0] // windows, windows, *scores[1:])
    if not (_known(scores[0] % windows == 0) and _mask_fits(m, q, split)
            and _mask_fits(_val(match, "mask"), q, scores)):
        return False
    for node in _nodes(match, aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        src, dst = _shape(node.args[0]), _shape(node)
        if sorted((len(src), len(dst))) == [4, 5]:
            four, five = (src, dst) if len(src) == 4 else (dst, src)
            if not (_same_shape(four, scores) and _same_shape(five, split)):
                return False
    return True


@predicate
def mask_splits_heads(match) -> bool:
    """FSMT: the mask is a bool tensor on q's device, (B, 1 or H, 1 or Sq, Sk) for (B·H, Sq, Sk) scores, and every
    reshape in the match between 3-D and 4-D splits (B·H) into (B, H) with B the mask's batch, or merges it back:
    the views put each score of the 3-D bmm where the mask reads it, as the op's (B, H, Sq, Sk) does."""
    q, k, m = _val(match, "query"), _val(match, "key"), _val(match, "mask")
    if not (isinstance(m, torch.Tensor) and m.dtype == torch.bool and m.device == q.device and m.dim() == 4
            and q.dim() == 3):
        return False
    views = views_between_3d_and_4d(match)
    return views is not None and all(
        _same_shape(four[:1], m.shape[:1]) and _same_shape((four[0] * four[1], *four[2:]), three)
        and _same_shape(three, (q.shape[0], q.shape[1], k.shape[-2])) and broadcasts_to(m, four)
        for three, four in views)


def views_between_3d_and_4d(match) -> list | None:
    """(3-D shape, 4-D shape) of each reshape in the match between 3 and 4 dims, either way (the (B·H)-batched bmm
    forms' views of their scores and probabilities); None if a reshape of other ranks changes its shape (a backward
    view that keeps it is no reshape)."""
    views = []
    for node in _nodes(match, aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        src, dst = _shape(node.args[0]), _shape(node)
        if len(src) == 3 and len(dst) == 4:
            views.append((src, dst))
        elif len(src) == 4 and len(dst) == 3:
            views.append((dst, src))
        elif not _same_shape(src, dst):
            return None
    return views


def broadcasts_to(m: torch.Tensor, shape) -> bool:
    """m has 1 to len(shape) dims, each equal to shape's or 1: it broadcasts to shape without growing it."""
    return 1 <= m.dim() <= len(shape) and all(_known(a == s) or _known(a == 1)
                                              for a, s in zip(reversed(m.shape), reversed(shape)))


@predicate
def fill_supported(match) -> bool:
    """masked_fill/where fill with -inf or finfo(q dtype).min, or float32's finfo.min where the filled scores are
    float32 (a model's float32 mask under autocast; Note [finite fill] in attention_forms.py). Another finite fill
    is a score that may still get probability (exp(fill - max) > 0), which a mask cannot express."""
    fill = match.kwargs.get("fill")
    if not isinstance(fill, (int, float)):
        return False
    if fill == -math.inf or fill == torch.finfo(_val(match, "query").dtype).min:
        return True
    filled = _nodes(match, aten.where.self, aten.masked_fill.Scalar, aten.masked_fill.Tensor)
    return fill == torch.finfo(torch.float32).min and bool(filled) and all(
        node.meta["val"].dtype == torch.float32 for node in filled)


@predicate
def softcap_supported(match) -> bool:
    """tanh(s / c) * c with one positive, finite number c (the pattern binds all three uses to one ``softcap``): the
    op's soft-capping (Note [soft-capping] in kernels/attn_math.py). A tensor or non-positive c is left to eager."""
    cap = match.kwargs.get("softcap")
    return isinstance(cap, (int, float)) and not isinstance(cap, bool) and 0.0 < cap < math.inf


def _sinks_shaped(match, shape) -> bool:
    """The sinks are a float tensor of ``shape`` on q's device: (Hq,), one per head, or (B, Hq, Sq), one per row."""
    q, sinks = _val(match, "query"), _val(match, "sinks")
    return (isinstance(sinks, torch.Tensor) and _same_shape(sinks.shape, shape) and sinks.is_floating_point()
            and sinks.device == q.device)


def _one_sink_per_head(match) -> bool:
    return _sinks_shaped(match, _val(match, "query").shape[1:2])


@predicate
def sinks_supported(match) -> bool:
    """gpt-oss's sinks (Note [attention sinks] in ops/attention.py): a (Hq,) float tensor on q's device, viewed as
    (1, Hq, 1, 1) and expanded to (B, Hq, Sq, 1), or Inkling 2's, one per query row, a (B, Hq, Sq) float tensor on
    q's device unsqueezed along the last dim, appended to the (B, Hq, Sq, Sk) scores along the last dim; the
    subtracted row max and every slice run along the last dim (step 1), and the slice that keeps Sk columns starts
    at 0: the probabilities dropped are the sink's column, one sink per head (or row), whatever the pattern ignored.
    (row_max_over_last_dim checks the subtracted max.)"""
    q, k = _val(match, "query"), _val(match, "key")
    B, Hq, Sq = q.shape[:3]
    Sk = k.shape[-2]
    cats = _nodes(match, aten.cat.default)
    if len(cats) != 1 or len(cats[0].args[0]) != 2 or cats[0].args[1] not in (-1, 3):
        return False
    sink = cats[0].args[0][1]
    if _is_call(sink, aten.unsqueeze.default) and sink.args[0] is match.kwargs["sinks"]:
        # Inkling 2's: one logit per query row, (B, Hq, Sq) unsqueezed along the last dim
        if not (_sinks_shaped(match, (B, Hq, Sq)) and sink.args[1] in (-1, 3)):
            return False
    elif not (_one_sink_per_head(match) and _is_call(sink, aten.expand.default)
              and _same_shape(_shape(sink), (B, Hq, Sq, 1)) and _same_shape(_shape(sink.args[0]), (1, Hq, 1, 1))
              and sink.args[0].args[0] is match.kwargs["sinks"]):
        return False
    for node in _nodes(match, aten.slice.Tensor):
        dim, start, end, step = (list(node.args[1:]) + [0, None, 1][len(node.args) - 2:])[:4]
        if dim not in (-1, 3) or step != 1:
            return False
        if _same_shape(_shape(node)[-1:], (Sk,)) and start != 0:
            return False
    return True


@predicate
def dropout_consistent(match) -> bool:
    """Dropout keeps rand > p, applied elementwise to the probabilities (no broadcast) and scaled by 1 / (1 - p),
    0 <= p < 1, in the forward and the backward alike."""
    p = match.kwargs.get("dropout_p")
    if not isinstance(p, (int, float)) or not 0.0 <= p < 1.0:
        return False
    gts = _nodes(match, aten.gt.Scalar)
    if p == 0.0:
        return not gts
    keep = set(gts) | {u for g in gts for u in g.users if _is_call(u, prims.convert_element_type.default)}
    for gt in gts:
        if not _is_call(gt.args[0], aten.rand.default) or gt.args[1] != p:
            return False
    for node in _nodes(match, aten.mul.Tensor):
        a, b = node.args
        uses_keep = a in keep or b in keep
        if uses_keep and not _same_shape(_shape(node), _shape(gts[0])):
            return False
        scales_keep = uses_keep or (_is_call(a, aten.mul.Tensor) and any(x in keep for x in a.args))
        if scales_keep and isinstance(b, (int, float)) and b != 1.0 / (1.0 - p):
            return False
    return True


@predicate
def no_outside_users(match) -> bool:
    """No matched intermediate (scores, probabilities, ...) is used outside the match: the weights are not
    returned, stored or logged, and no mask is computed from the scores.  Size queries are not uses: under dynamic
    shapes a later reshape may read a length from the scores (sym_size); it needs no values, and the scores'
    computation is dead once nothing else reads it.  Nor are views or layout copies of the match's inputs
    intermediates: the replacement leaves such a node, and its value, to the users it keeps (DeBERTa's kᵀ, which its
    position bias's backward reads too; an incoming gradient another backward reads too)."""
    inside = set(match.nodes)
    outputs = {n for n in match.output_nodes() if n is not None}
    for node in inside - outputs - _views_of_inputs(match, inside):
        if any(user not in inside and user.target not in SIZE_QUERIES for user in node.users):
            return False
    return True


def _views_of_inputs(match, inside) -> set:
    """The match's view ops and layout copies (``clone``) whose input is a pattern input, a node outside the match
    (the incoming gradient) or such a view (in graph order). Their values do not depend on what the rewrite removes:
    Nystromformer's incoming gradient, copied to a layout once, feeds both the attention's backward and its
    convolution's on v."""
    views = {n for n in match.kwargs.values() if isinstance(n, torch.fx.Node)}
    for node in _nodes(match, *VIEW_OPS, aten.clone.default):
        src = node.args[0]
        if src in views or (isinstance(src, torch.fx.Node) and src not in inside):
            views.add(node)
    return views


@predicate
def template_pays(match) -> bool:
    """The measured routing table (inductor_conv/heuristics/attention.py's template_pays): a form where the template is
    slower than Inductor's unfused code is left to Inductor.  A mask is dense unless the pass can prove it top-left
    causal (patterns/attention_causal.py), which it then replaces by is_causal."""
    from inductor_conv.heuristics.attention import template_pays as pays
    from inductor_conv.patterns.attention_causal import abstract_values, is_top_left_causal

    d = _val(match, "query").shape[-1]
    softcap = "softcap" in match.kwargs
    if not isinstance(d, int) or pays(d, softcap, dense_mask=True):
        return True  # the mask cannot change the decision
    mask = match.kwargs.get("mask")
    if "padding" in match.kwargs:  # a second mask added to the first: not the causal mask
        return pays(d, softcap, dense_mask=True)
    if not isinstance(mask, torch.fx.Node):
        return pays(d, softcap, dense_mask=False)
    causal = is_top_left_causal(mask, match.kwargs["query"], match.kwargs["key"], abstract_values(mask.graph))
    return pays(d, softcap, dense_mask=not causal)


@predicate
def row_max_over_last_dim(match) -> bool:
    """The row max subtracted from the scores before the softmax (gpt-oss, MiMo-V2-Flash) reduces the last dim,
    keeping it: a shift of each row, which the softmax ignores."""
    for node in _nodes(match, aten.max.dim):
        if not (_is_last_dim([node.args[1]], len(_shape(node.args[0]))) and _keepdim(node) is True):
            return False
    return True


@predicate
def lse_sinks_supported(match) -> bool:
    """Granite-SWA's sinks scale each output row by sigmoid(LSE - sink): the sinks a (Hq,) float tensor on q's device
    viewed as (1, Hq, 1), LSE the logsumexp of the masked scores over the last dim (its decomposition: the row max,
    an infinity test against it, zero where it holds, the max squeezed from the last dim), the factor unsqueezed
    along the last dim of the output, whatever the pattern ignored."""
    Hq = _val(match, "query").shape[1]
    if not _one_sink_per_head(match):
        return False
    views = [n for n in _nodes(match, aten.view.default) if n.args[0] is match.kwargs["sinks"]]
    if len(views) != 1 or not _same_shape(_shape(views[0]), (1, Hq, 1)):
        return False
    if any(n.args[1] != math.inf for n in _nodes(match, aten.eq.Scalar)):
        return False
    if any(n.args[0] != 0 for n in _nodes(match, aten.scalar_tensor.default)):
        return False
    for node in _nodes(match, aten.squeeze.dims):
        if not _is_last_dim(node.args[1], len(_shape(node.args[0]))):
            return False
    for node in _nodes(match, aten.unsqueeze.default):  # the forward's: the factor along the output's last dim
        if _is_call(node.args[0], aten.sigmoid.default) and node.args[1] not in (-1, len(_shape(node)) - 1):
            return False
    return True


def _is_call(node, target) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target == target


@predicate
def scale_fits_query(match, split_heads: bool = False) -> bool:
    """A scores' scale given as a tensor of row factors (``attention_relax._scale_of``) scales q's rows instead:
    (q·c) kᵀ == (q kᵀ)·c where c broadcasts into q without enlarging it (each of its dims 1 or q's; its last, 1,
    against q's head dim). Not where the replacement splits q's heads first (``split_heads``: FSMT's (B·H, ...)
    layout, whose factors would no longer line up with q's dims)."""
    scale = match.kwargs.get("scale")
    value = scale.meta.get("val") if isinstance(scale, torch.fx.Node) else None
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return True
    q = _val(match, "query")
    if split_heads or value.dim() > q.dim():
        return False
    return all(_known(c == 1) or _known(c == n) for c, n in zip(reversed(value.shape), reversed(q.shape)))


def all_hold(match, form) -> bool:
    from inductor_conv.patterns.attention_forms import MASKS, argnames

    checks = [attention_enabled, device_enabled, qkv_consistent, qkv_shapes_consistent, head_dim_supported,
              scores_and_output_shaped, softmax_over_last_dim, key_transposed_last_two,
              mask_splits_heads if form.mask == "masked_fill_heads" else
              window_mask_splits_batch if MASKS[form.mask].window else masks_supported,
              head_sums_reduce_broadcast_kv, computes_a_gradient,
              functools.partial(scale_fits_query, split_heads=form.mask == "masked_fill_heads"),
              functools.partial(gradients_shaped_like_inputs, names=argnames(form)), no_outside_users]
    if form.gqa:
        checks.append(repeat_kv_interleaves)
    if "fill" in MASKS[form.mask].inputs:
        checks.append(fill_supported)
    if form.softcap:
        checks.append(softcap_supported)
    if form.sinks:
        checks.append(sinks_supported)
    if form.lse_sinks:
        checks.append(lse_sinks_supported)
    if form.sinks or form.max_subtracted:
        checks.append(row_max_over_last_dim)
    checks += [dropout_consistent, template_pays]
    return all(check(match) for check in checks)
