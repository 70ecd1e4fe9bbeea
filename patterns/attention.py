"""Rewrite hand-written attention (scores, mask, softmax, dropout, @ v) into ``torch.ops.inductor_conv.attention_fwd``.

The forms live in ``attention_forms.py`` (search and replacement side by side), the predicates in
``attention_checks.py``, the widening of traced patterns in ``attention_relax.py`` (Note [relaxed attention search
patterns]). This module expands the forms into training/inference variants, traces each once and registers it with
Inductor's ``register_replacement`` as a pre-traced, relaxed ``search_fn_pattern`` whose ``extra_check`` is
``attention_checks.all_hold``.

Note [partial gradients]: training patterns are traced with q, k and v (and a learned mask) all requiring grad, but
AOTAutograd's joint graph computes only the gradients of inputs that require one: a cross-attention with frozen K/V
has the forward and dQ's backward, nothing of dK and dV. ``relax`` makes the gradients of q, k and v optional
(``attention_relax._MaybeGradient``), so such a graph matches with the missing gradients absent
(``match.output_nodes()`` gives None for them); a learned mask's stays required (a frozen bias is an additive mask,
which the additive forms match). That is a rewrite of the same computation: the forward and every gradient present
are replaced by the op's, an absent gradient replaces nothing, and ``no_outside_users`` proves that nothing else in
the graph reads the scores, probabilities or dS the rewrite removes (every gradient of attention reads P or dS, so
one computed in a spelling the pattern misses is such a reader). The replacement must return None where the match
has no gradient (``register_replacement`` pairs its outputs with the match's), so its trace gives those inputs no
grad: the extra_check, which ``register_replacement`` calls right before it traces the replacement for that match,
records which gradients are present, and the trace function (``_tracing``) reads it. The op's backward still
computes dQ, dK and dV (its kernels have no switch to skip one); the unused ones are dropped. A training match must
compute at least one gradient (``checks.computes_a_gradient``): attention without any is the inference patterns'.

Note [lower-rank gradients]: a learned bias with fewer dims than the scores (LeViT's (H, Sq, Sk) attention biases
added to (B, H, Sq, Sk) scores) is broadcast by the add like a (1, H, Sq, Sk) one, and autograd reduces its gradient
the same way, a sum over the batch with the dim kept (``at::sum_to``), then views that sum to the bias's shape. So
the pattern traced with a (1, H, Sq, Sk) bias matches such a graph up to the kept-dim sum, whose (1, H, Sq, Sk)
value the graph's own view, outside the match, reads. The op returns the gradient in the bias's shape, the same
values without the leading 1s: ``checks.gradients_shaped_like_inputs`` accepts a match gradient that differs from its
input only by leading 1s, the extra_check records the rank of each of the match's outputs, and ``_tracing``
unsqueezes the replacement's outputs to those ranks, so every user of a replaced node reads the shape it read
before. One pattern serves every rank of bias.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import threading
from collections.abc import Callable, Iterable
from typing import NamedTuple

import torch

from inductor_conv._compat import (
    FakeTensorMode,
    fwd_only,
    gen_pattern,
    joint_fwd_bwd,
    register_replacement,
    set_node_value,
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
SENTINELS = {"dropout_p": 0.113377, "fill": -0.987654, "softcap": 0.771177}
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
    elif form.mask == "masked_fill_heads":  # FSMT's key padding mask, one row per batch
        values["mask"] = torch.empty(_B, 1, 1, _S, dtype=torch.bool)
    elif "fill" in MASKS[form.mask].inputs:  # masked_fill / where: a bool mask broadcast over batch and heads
        values["mask"] = torch.empty((1, _S, _S) if form.scores == "bmm" else (1, 1, _S, _S), dtype=torch.bool)
    elif form.scores == "bmm":
        values["mask"] = torch.empty(_B * _HQ, _S, _S, dtype=half)
    else:
        values["mask"] = torch.empty(_B, 1, 1, _S, dtype=half)
    values["padding"] = torch.empty(_B, 1, 1, _S, dtype=half)
    if MASKS[form.mask].window:  # Swin's window mask, (1, nW, 1, S, S) for (B·nW, H, S, S) scores
        values["padding"] = torch.empty(1, _B, 1, _S, _S, dtype=half)
    if form.float32_mask:
        mask = values["mask"]
        values["mask"] = torch.empty(mask.shape, dtype=torch.float32, requires_grad=mask.requires_grad)
        values["padding"] = values["padding"].float()
    # a learned parameter (gpt-oss), or one logit per query row projected from the hidden states (Inkling 2)
    values["sinks"] = torch.empty((_B, _HQ, _S) if form.sinks == "inkling2" else _HQ, dtype=half, **grad)
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
                # (CodeGen, Bros and XLNet, the models adding a mask before the scale, MPNet and Swin have no GQA)
                if (gqa and (form.scores == "bmm" or form.mask_then_scale or form.bias_then_scale
                             or form.float32_mask or MASKS[form.mask].window)) or (learned and not training):
                    continue
                # A learned bias broadcast over the batch (its gradient is a sum) or not: the backward differs. (A
                # bias of fewer dims is the broadcast one's: Note [lower-rank gradients].)
                bias_shapes = ((1, _S, _S), (_B * _HQ, _S, _S)) if form.scores == "bmm" else (
                    (1, _HQ, _S, _S),) if MASKS[form.mask].window else ((1, _HQ, _S, _S), (_B, _HQ, _S, _S))
                # gpt-oss and MiMo take the softmax in the scores' dtype
                plain_only = form.sinks or form.max_subtracted
                # float32 masks make float32 scores: the softmax must be cast back before P @ v
                upcasts = (True,) if form.float32_mask else (False, True) if training and not plain_only else (False,)
                for upcast in upcasts:
                    wide = training and upcast and form.mask_then_scale
                    for bias_shape, float32_mask in itertools.product(bias_shapes if learned else (None,),
                                                                      (False, True) if wide else (False,)):
                        float32_mask = float32_mask or form.float32_mask
                        f = dataclasses.replace(form, gqa=gqa, upcast=upcast, float32_mask=float32_mask)
                        name = "_".join(filter(None, (
                            form.name, gqa and "repeat_kv", upcast and "fp32_softmax",
                            float32_mask and "fp32_mask", bias_shape and bias_shape[0] == 1 and "broadcast",
                            "training" if training else "inference")))
                        yield name, f, training, bias_shape


# The gradients present in the match the extra_check accepted last, for the replacement's trace that follows it
# (Note [partial gradients]). Per thread, as a compile runs its passes on one thread.
_ACCEPTED = threading.local()


def _extra_check(holds: Callable):
    """``register_replacement``'s extra_check: ``holds(match)``, recording the gradients present in an accepted match
    for the replacement's trace (``_tracing``) that follows it."""

    def check(match) -> bool:
        if not holds(match):
            return False
        _ACCEPTED.gradients = checks.gradients_present(match)
        _ACCEPTED.ranks = [None if n is None else n.meta["val"].dim() for n in match.output_nodes()]
        return True

    return check


def _without_grad(arg):
    """A tensor like ``arg`` (same size, strides, dtype, device; fake under the caller's fake mode) that requires no
    grad."""
    return torch.empty_strided(arg.size(), arg.stride(), dtype=arg.dtype, device=arg.device)


def _unsqueeze_outputs(gm: torch.fx.GraphModule, ranks) -> None:
    """Unsqueeze dim 0 of each of ``gm``'s outputs until it has its rank in ``ranks`` (Note [lower-rank gradients])."""
    graph = gm.graph
    output = graph.find_nodes(op="output")[0]
    outputs = output.args[0]
    values = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    for i, (node, rank) in enumerate(zip(values, ranks, strict=True)):
        if not isinstance(node, torch.fx.Node) or rank is None:
            continue
        for _ in range(rank - node.meta["val"].dim()):
            with graph.inserting_before(output):
                unsqueezed = graph.call_function(torch.ops.aten.unsqueeze.default, (node, 0))
            set_node_value(unsqueezed, node.meta["val"].unsqueeze(0))
            node = values[i] = unsqueezed
    output.args = (type(outputs)(values) if isinstance(outputs, (list, tuple)) else values[0],)
    gm.recompile()


def _tracing(trace_fn, replace_fn):
    """trace_fn that, when it traces ``replace_fn`` (``register_replacement`` does that once per accepted match,
    right before substituting it): gives no grad to the inputs whose gradient the match lacks (Note [partial
    gradients]), gives each output the rank of the match's (Note [lower-rank gradients]), and bumps
    ``counters()["attention"]`` (the replacement cannot count itself: AOTAutograd runs it twice per joint trace)."""

    def trace(fn, args, **kwargs):
        if fn is replace_fn:
            present, _ACCEPTED.gradients = getattr(_ACCEPTED, "gradients", None), None
            ranks, _ACCEPTED.ranks = getattr(_ACCEPTED, "ranks", None), None
            if present is not None:
                args = [_without_grad(a) if isinstance(a, torch.Tensor) and a.requires_grad and not needed else a
                        for a, needed in zip(args, present, strict=True)]
        graph = trace_fn(fn, args, **kwargs)
        if fn is replace_fn:
            if ranks is not None:
                _unsqueeze_outputs(graph, ranks)
            bump("attention")
        return graph

    return trace


class Registration(NamedTuple):
    """One traced pattern: its search and replacement functions (same signature), whether it is a training
    (joint forward + backward) pattern, the example inputs of its trace, the sentinel scalars it binds, and the
    predicate a match must satisfy (``holds(match)``) to be replaced."""
    name: str
    search: Callable
    replace: Callable
    training: bool
    example_inputs: list
    sentinels: dict
    holds: Callable


def register_all(pass_dict, capability: str, registrations: Callable[[], Iterable[Registration]]) -> None:
    """Trace every registration once (or rebuild it from the shipped file: Note [pattern cache]), widen it with
    ``relax`` and register it into ``pass_dict`` as a pre-traced ``search_fn_pattern`` whose extra_check is the
    registration's ``holds``.

    Traced under a fresh fake mode (like Inductor's ``init_once_fakemode``; ``registrations()`` runs under it, so its
    example inputs are fake) and outside inference mode (``register_replacement`` skips training patterns inside it).
    """
    cache = PatternCache(capability)  # Note [pattern cache]: traced once per machine, not per process
    with tracing(None), unset_fake_temporarily(), FakeTensorMode(), torch.inference_mode(False):
        for i, r in enumerate(registrations()):
            trace_fn = joint_fwd_bwd if r.training else fwd_only
            traced = cache.pattern(f"{i}:{r.name}",
                                   lambda: gen_pattern(r.search, r.example_inputs, trace_fn, r.sentinels))
            pattern = relax(traced)
            registered = register_replacement(
                r.search,
                r.replace,
                r.example_inputs,
                _tracing(trace_fn, r.replace),
                pass_dict,
                extra_check=_extra_check(r.holds),
                scalar_workaround=r.sentinels,
                search_fn_pattern=pattern,
                skip_duplicates=True,
            )
            if registered:
                REGISTERED[id(pattern)] = r.name
    cache.save()


def _registrations():
    for name, form, training, bias_shape in variants():
        yield Registration(name, _signature_fn(attention_search, form), _signature_fn(attention_replacement, form),
                           training, _example_inputs(form, training, bias_shape),
                           {k: v for k, v in SENTINELS.items() if k in argnames(form)},
                           functools.partial(checks.all_hold, form=form))


@functools.cache
def register(pass_dict) -> None:
    """Trace every variant once and register it into ``pass_dict`` (a few seconds, once per process)."""
    register_all(pass_dict, "attention", _registrations)


# id(registered search pattern) -> variant name, for debugging and tests.
REGISTERED: dict[int, str] = {}
