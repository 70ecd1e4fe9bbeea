"""Rewrite hand-written attention (scores, mask, softmax, dropout, @ v) into ``torch.ops.inductor_conv.attention_fwd``.

The forms live in ``attention_forms.py`` (search and replacement side by side), the predicates in
``attention_checks.py``, the widening of traced patterns in ``attention_relax.py`` (Note [relaxed attention search
patterns]). This module expands the forms into training/inference variants, traces each once and registers it with
Inductor's ``register_replacement`` as a pre-traced, relaxed ``search_fn_pattern`` whose ``extra_check`` is
``attention_checks.all_hold``.
"""
from __future__ import annotations

import contextlib
import functools
import inspect

import torch
from torch.fx.node import map_arg

from inductor_conv._compat import (
    FakeTensorMode,
    detect_fake_mode,
    fwd_only,
    gen_pattern,
    joint_fwd_bwd,
    register_replacement,
    tracing,
    unset_fake_temporarily,
)
from inductor_conv._counters import bump
from inductor_conv.patterns import attention_checks as checks
from inductor_conv.patterns.attention_forms import (
    FORMS,
    MASKS,
    SCALE_MUL,
    Form,
    argnames,
    attention_replacement,
    attention_search,
)
from inductor_conv.patterns.attention_relax import relax
from inductor_conv.patterns.pattern_cache import PatternCache


# ---------------------------------------------------------------------------------------------------------------
# Variants and registration
# ---------------------------------------------------------------------------------------------------------------
# Sentinel scalars: the traced pattern turns a float equal to one of these into a KeywordArg of that name (Inductor's
# ``scalar_workaround``), so the matched graph's own value (dropout p, mask fill) is bound instead of ignored.
SENTINELS = {"dropout_p": 0.113377, "fill": -0.987654}
# Example shapes; sizes only need to be distinct enough that the trace keeps every op.
_B, _HQ, _HKV, _S, _D = 2, 4, 2, 8, 16


def _signature_fn(fn, form: Form):
    """``fn(..., form=form)`` with the form's argument names as its signature (register_replacement reads it)."""
    names = argnames(form)

    def bound(*args):
        values = dict(zip(names, args))
        return fn(**{n: values.get(n) for n in _ALL_ARGS}, form=form)

    bound.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                             for n in names])
    bound.__name__ = f"{fn.__name__}_{form.name}"
    return bound


_ALL_ARGS = tuple(p for p in inspect.signature(attention_search).parameters if p != "form")


def _example_inputs(form: Form, training: bool, bias_shape) -> list:
    """Inputs for the initial trace, in ``argnames(form)`` order minus the sentinel scalars.

    float16, so the trace has the dtype converts of half graphs, and q/k/v are transposed views (B, S, H, D) ->
    (B, H, S, D), so it has the layout copies; ``relax`` makes both optional. The 3-D bmm form has no reshape and
    takes contiguous inputs. Sizes only need to keep every op in the trace.
    """
    half, grad = torch.float16, dict(requires_grad=training)

    def heads(h):
        if form.scores == "bmm":
            return torch.empty(_B * h, _S, _D, dtype=half, **grad)
        return torch.empty(_B, _S, h, _D, dtype=half).transpose(1, 2).requires_grad_(training)

    hkv = _HKV if form.gqa else _HQ
    values = {"query": heads(_HQ), "key": heads(hkv), "value": heads(hkv)}
    if MASKS[form.mask].learned:
        values["mask"] = torch.empty(bias_shape, dtype=half, **grad)
    elif "fill" in MASKS[form.mask].inputs:  # masked_fill / where: a bool mask broadcast over batch and heads
        values["mask"] = torch.empty((1, _S, _S) if form.scores == "bmm" else (1, 1, _S, _S), dtype=torch.bool)
    elif form.scores == "bmm":
        values["mask"] = torch.empty(_B * _HQ, _S, _S, dtype=half)
    else:
        values["mask"] = torch.empty(_B, 1, 1, _S, dtype=half)
    values["padding"] = torch.empty(_B, 1, 1, _S, dtype=half)
    # 0-d tensors, so the trace keeps them as KeywordArgs for relax's _MaybeScale to find; distinct on purpose.
    values["scale"], values["q_scale"] = torch.tensor(2.0, dtype=half), torch.tensor(3.0, dtype=half)
    values["scale_kind"] = values["q_scale_kind"] = SCALE_MUL
    return [values[n] for n in argnames(form) if n not in SENTINELS]


def variants():
    """(name, form, training, bias_shape) for every pattern we register, most specific first.

    GQA forms come first: the plain form also matches a repeat_kv graph (its ``key`` is then the repeated K).
    In inference, plain and fp32 softmax trace alike and a learned bias is an additive mask.
    """
    for training in (True, False):
        for gqa in (True, False):
            for form in FORMS:
                learned = MASKS[form.mask].learned
                if (gqa and form.scores == "bmm") or (learned and not training):
                    continue
                # A learned bias broadcast over the batch (its gradient is a sum) or not: the backward differs.
                bias_shapes = ((1, _S, _S), (_B * _HQ, _S, _S)) if form.scores == "bmm" else (
                    (1, _HQ, _S, _S), (_B, _HQ, _S, _S))
                for upcast in (False, True) if training else (False,):
                    for bias_shape in bias_shapes if learned else (None,):
                        f = Form(form.name, form.mask, form.scores, gqa, upcast)
                        name = "_".join(filter(None, (
                            form.name, gqa and "repeat_kv", upcast and "fp32_softmax",
                            bias_shape and bias_shape[0] == 1 and "broadcast",
                            "training" if training else "inference")))
                        yield name, f, training, bias_shape


def _extra_check(form: Form):
    def check(match) -> bool:
        return checks.all_hold(match, form)

    return check


def _counting(trace_fn, replace_fn):
    """trace_fn that bumps ``counters()["attention"]`` when it traces ``replace_fn``: ``register_replacement`` does
    that once per accepted match, right before substituting it. (The replacement cannot count itself: AOTAutograd
    runs it twice per joint trace.)"""

    def trace(fn, args, **kwargs):
        graph = trace_fn(fn, args, **kwargs)
        if fn is replace_fn:
            bump("attention")
        return graph

    return trace


@functools.cache
def register(pass_dict) -> None:
    """Trace every variant once and register it into ``pass_dict`` (a few seconds, once per process).

    Traced under a fresh fake mode (like Inductor's ``init_once_fakemode``) and outside inference mode
    (``register_replacement`` skips training patterns inside it).
    """
    cache = PatternCache("attention")  # Note [pattern cache]: traced once per machine, not per process
    with tracing(None), unset_fake_temporarily(), FakeTensorMode(), torch.inference_mode(False):
        for i, (name, form, training, bias_shape) in enumerate(variants()):
            search, replace = _signature_fn(attention_search, form), _signature_fn(attention_replacement, form)
            trace_fn = joint_fwd_bwd if training else fwd_only
            example_inputs = _example_inputs(form, training, bias_shape)
            sentinels = {k: v for k, v in SENTINELS.items() if k in argnames(form)}
            traced = cache.pattern(f"{i}:{name}", lambda: gen_pattern(search, example_inputs, trace_fn, sentinels))
            pattern = relax(traced)
            registered = register_replacement(
                search,
                replace,
                example_inputs,
                _counting(trace_fn, replace),
                pass_dict,
                extra_check=_extra_check(form),
                scalar_workaround=sentinels,
                search_fn_pattern=pattern,
                skip_duplicates=True,
            )
            if registered:
                REGISTERED[id(pattern)] = name
    cache.save()


# ---------------------------------------------------------------------------------------------------------------
# Normal form
# ---------------------------------------------------------------------------------------------------------------
aten, prims = torch.ops.aten, torch.ops.prims
_TRANSPOSES = (aten.permute.default, aten.transpose.int)
_CONVERT = prims.convert_element_type.default
# A matmul operand's users: 4-D matmul operands are expanded first, bmm's are not (and bmm's backward transposes them)
_MATMUL_OPERAND = (aten.expand.default, aten.bmm.default, *_TRANSPOSES)


def _is_call(node, targets) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in targets


def normalize(graph: torch.fx.Graph) -> None:
    """Bring autocast's spellings of attention to the ones the patterns were traced in (each rewrite exact)."""
    round_trip_casts(graph)
    converts_outside_transposes(graph)


def round_trip_casts(graph: torch.fx.Graph) -> int:
    """Replace ``convert(convert(x, wide), x.dtype)`` by ``x`` when ``wide`` holds every value of x's dtype (a wider
    float: bf16/fp16 -> fp32 -> back). Under CPU autocast softmax keeps bf16 scores in bf16, and GPT-2's
    ``.type(v.dtype)`` with fp32 v widens the probabilities only for the matmul to narrow them again. Exact, and a
    cast keeps its input's strides. Returns the number of pairs removed."""
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


def converts_outside_transposes(graph: torch.fx.Graph) -> int:
    """Move dtype casts across the transposes next to a matmul's operands, to where the patterns have them.

    Under ``torch.autocast`` the matmul casts its operands after the model transposed them: ``q @ k.transpose(2, 3)``
    reads ``convert(permute(k))``, and the joint graph gives k's gradient as ``permute(convert(dkᵀ))``. The patterns
    are traced with k already in the matmul's dtype, so ``key`` is the cast tensor: ``permute(convert(k))``, and its
    gradient is cast after the transpose back, ``convert(permute(dkᵀ))``. A cast is elementwise and keeps its
    input's strides, so both orders give the same values in the same layout. Only casts that feed a matmul (their
    users are the ``expand`` of a 4-D matmul's operand, or a ``bmm`` and its backward's transpose) or read a
    matmul's result (``view(bmm)``) are moved. Returns the number of casts moved."""
    moved = 0
    for cast in list(graph.find_nodes(op="call_function", target=_CONVERT)):
        src = cast.args[0]
        if _is_call(src, _TRANSPOSES) and cast.users and all(_is_call(u, _MATMUL_OPERAND) for u in cast.users):
            # convert(permute(x)) -> permute(convert(x))
            last = cast  # the pair's second node, whose uses the new pair takes over
            x, outer_target, outer_args = src.args[0], src.target, src.args[1:]
            inner_target, inner_args = _CONVERT, cast.args[1:]
            inner_kwargs, outer_kwargs = cast.kwargs, src.kwargs
        elif (_is_call(src, (aten.view.default,)) and _is_call(src.args[0], (aten.bmm.default,))
              and len(cast.users) == 1 and _is_call(next(iter(cast.users)), _TRANSPOSES)):
            # permute(convert(view(bmm))) -> convert(permute(view(bmm)))
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
            with detect_fake_mode([val]) or contextlib.nullcontext():
                for node in (inner, outer):
                    node.meta["val"] = node.target(*map_arg(node.args, lambda a: a.meta["val"]), **node.kwargs)
        outer.meta.update({k: v for k, v in last.meta.items() if k != "val"})
        last.replace_all_uses_with(outer)
        moved += 1
    if moved:
        graph.eliminate_dead_code()
    return moved


# id(registered search pattern) -> variant name, for debugging and tests.
REGISTERED: dict[int, str] = {}
