"""The causal conv's decode step written in eager PyTorch -> ``torch.ops.inductor_conv.causal_conv1d_update``.

Notation: x the new tokens, [B, C, T] (or [B, C], one token), conv_state s [B, C, S], weight w [C, K] (or the
conv's [C, 1, K]), bias β [C] or None, act ∈ {SiLU, identity}.  Each form computes what
``causal_conv1d_update(x, s, w, β, act)`` computes with a linear state (reference/conv.py): y from the line
(last K - 1 state columns, then x) and the new state, the last S entries of cat(s, x).

Note [decode state write-back]
Eager code updates the cache in place (``conv_state.copy_(...)``, ``conv_state[:, :, -1] = x``).  AOTAutograd
functionalises that: the graph computes the new state as a value and ends with ``copy_(conv_state, new_state)``
(the cache is a graph input; inference graphs keep input mutations in the graph as that one copy_).  A form is
matched as two outputs, y and the new state, and replaced by the two results of
``auto_functionalized(causal_conv1d_update, ...)`` -- the functional form of our mutating op, the node AOTAutograd
itself makes of a mutating custom op.  The trailing copy_ is left exactly as eager's trace made it.  Inductor's
reinplacing pass (torch/_inductor/fx_passes/reinplace.py) then finds ``copy_(input, getitem(auto_functionalized))``,
lets the op write the input in place and drops the copy_; where something still reads the old state after the step
it clones the state first instead -- correct either way, and the cache holds eager's values after the graph.

Forms (``CANDIDATES``):
* ``_pattern_cat``: ``line = torch.cat([s, x], -1)``; ``s.copy_(line[..., -S:])``;
  ``act(F.conv1d(line, w.unsqueeze(1), β, groups=C)[..., -T:])`` -- transformers 5.x's torch fallback of
  ``causal_conv1d_update`` (Mamba, Mamba-2 and every hybrid model that copies it: Jamba, Bamba, Zamba2, FalconH1,
  NemotronH, GraniteMoeHybrid, LFM2, Qwen3-Next, ...) and Dao's ``causal_conv1d_update_ref``; any S >= K - 1, any T.
* ``_pattern_roll``: ``s.copy_(torch.roll(s, -1, -1)); s[:, :, -1] = x; act(torch.sum(s * w, -1) + β)`` -- mamba_ssm's
  ``Mamba.step`` / ``Mamba2.step`` without the CUDA kernels (and transformers 4.x's Mamba): one token, S = K.
The weight may reach the conv as the module's [C, 1, K] parameter or as a [C, K] view unsqueezed again.

Every form is traced for inference only (``fwd_only``; decode runs without gradients) at fp32, bf16 and fp16 (a
half-precision SiLU computes in fp32 between casts) with and without bias.  Ints are ignored when matching, so the
``_check_*`` functions prove each literal: the slices keep the last S / T entries, the roll shifts by one, the
sum reduces the width, the conv is depthwise with stride 1, dilation 1 and no padding, S >= K - 1.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F

from inductor_conv._compat import (
    MULTIPLE,
    CallFunction,
    FakeTensorMode,
    Match,
    MultiOutputPattern,
    auto_functionalized,
    dynamo_counters,
    fwd_only,
    gen_pattern,
    register_replacement,
    statically_known_true,
    tracing,
    unset_fake_temporarily,
)
from inductor_conv.patterns import checks
from inductor_conv.patterns.causal_conv1d_silu import ACTIVATIONS
from inductor_conv.patterns.pattern_cache import PatternCache

aten = torch.ops.aten
OP = torch.ops.inductor_conv.causal_conv1d_update.default
# Rewrites are counted in Inductor's counters, ``torch._dynamo.utils.counters["inductor_conv"][COUNTER]`` (cleared
# by ``inductor_conv.reset_counters()``), as the other capabilities' are.
COUNTER = "causal_conv1d_update"


# ---------------------------------------------------------------------------------------------------------------
# Search functions and replacements (functional: what AOTAutograd leaves of the in-place updates)
# ---------------------------------------------------------------------------------------------------------------
def _weight_2d(w):
    return w.unsqueeze(1)  # transformers / Dao: F.conv1d(line, weight.unsqueeze(1), ...) with weight [C, K]


def _weight_3d(w):
    return w  # the conv module's own [C, 1, K] weight


def _pattern_cat(x, s, w, b, act, conv_weight):
    line = torch.cat([s, x], dim=-1)  # [B, C, S + T]
    y = act(F.conv1d(line, conv_weight(w), b, groups=line.shape[1])[..., -x.shape[-1]:])
    return y, line[..., -s.shape[-1]:]


def _replacement_cat(x, s, w, b, activation, conv_weight):
    out = auto_functionalized(OP, x=x, conv_state=s, weight=w if conv_weight is _weight_2d else w.squeeze(1), bias=b,
                              activation=activation, cache_seqlens=None, conv_state_indices=None)
    return out[0], out[1]


def _pattern_roll(x, s, w, b, act, conv_weight):
    rolled = torch.roll(s, -1, -1)  # s.copy_(torch.roll(s, shifts=-1, dims=-1)), its copy_ a no-op once functional
    new_s = aten.select_scatter.default(rolled, aten.copy.default(rolled.select(-1, -1), x), -1, -1)  # s[..., -1] = x
    z = torch.sum(new_s * w, dim=-1)
    return act(z + b if b is not None else z), new_s


def _replacement_roll(x, s, w, b, activation, conv_weight):
    out = auto_functionalized(OP, x=x.unsqueeze(-1), conv_state=s, weight=w, bias=b, activation=activation,
                              cache_seqlens=None, conv_state_indices=None)
    return out[0].squeeze(-1), out[1]


# ---------------------------------------------------------------------------------------------------------------
# extra_check: one predicate per literal the match ignored
# ---------------------------------------------------------------------------------------------------------------
def _last_dim(node: torch.fx.Node, dim) -> bool:
    return dim in (-1, node.meta["val"].dim() - 1)


def keeps_last(slice_node: torch.fx.Node, n) -> bool:
    """``t[..., -n:]`` along t's last dim: step 1, an end at or past the length, a start that leaves n entries."""
    dim, start, end, step = checks.slice_range(slice_node)
    length = checks.value(slice_node.args[0]).shape[-1]
    if not _last_dim(slice_node.args[0], dim) or step != 1 or start is None:
        return False
    start = checks.value(start)
    end = checks.value(end)
    if statically_known_true(start < 0):  # -n, also a symbolic -s under dynamic shapes
        start = length + start
    ends_at_length = end is None or (isinstance(end, int) and end >= 2**62) or checks.known_equal(end, length)
    return ends_at_length and checks.known_equal(start, length - n)


def _common(match: Match, x_dims: int):
    """(x, s, w, b) fake values when the match is on an enabled device with one dtype and x / s have the expected
    ranks and sizes, else None."""
    if not checks.conv_rewrite_enabled():
        return None
    x, s, w, b = checks.tensors(match, ("x", "s", "w", "b"))
    if not checks.same_device_dtype(x, s, w, b) or not checks.on_enabled_device(x, s, w, b):
        return None
    if x.dim() != x_dims or s.dim() != 3 or not checks.known_equal(list(x.shape[:2]), list(s.shape[:2])):
        return None
    if b is not None and not checks.known_equal(list(b.shape), [s.shape[1]]):
        return None
    return x, s, w, b


def _check_cat(match: Match) -> bool:
    """cat([s, x], -1) convolved depthwise without padding, the last T outputs kept, the last S entries the state."""
    found = _common(match, 3)
    if found is None:
        return False
    x, s, w, _ = found
    (cat,), (conv,) = checks.nodes_of(match, aten.cat.default), checks.nodes_of(match, aten.convolution.default)
    w3 = checks.value(conv.args[1])
    K, S = w3.shape[-1], s.shape[-1]
    state_slice = [n for n in checks.nodes_of(match, aten.slice.Tensor) if n.args[0] is cat]
    y_slice = [n for n in checks.nodes_of(match, aten.slice.Tensor) if n.args[0] is conv]
    return (
        _last_dim(cat, cat.args[1] if len(cat.args) > 1 else 0)
        and checks.is_depthwise(checks.value(cat), w3, conv)
        and checks.is_unit_stride_dilation(conv)
        and checks.has_conv_padding(conv, 0)
        and all(checks.known_equal(u.args[1], 1) for u in checks.nodes_of(match, aten.unsqueeze.default))
        and bool(statically_known_true(S >= K - 1))
        and len(state_slice) == 1 and keeps_last(state_slice[0], S)
        and len(y_slice) == 1 and keeps_last(y_slice[0], x.shape[-1])
        and checks.scalars_are_one(match)
        and checks.no_outside_users(match)
    )


def is_roll_left_by_one(index: torch.fx.Node, S) -> bool:
    """``index(s, [None, None, fmod(iota(S) + 1, S)])``: torch.roll(s, -1, -1) as Inductor decomposes it."""
    _, indices = index.args
    if not (isinstance(indices, (list, tuple)) and len(indices) == 3 and indices[0] is None and indices[1] is None):
        return False
    fmod = indices[2]
    if getattr(fmod, "target", None) != aten.fmod.Scalar or not checks.known_equal(fmod.args[1], S):
        return False
    add = fmod.args[0]
    if getattr(add, "target", None) != aten.add.Tensor or add.args[1] != 1:
        return False
    iota = add.args[0]
    return (getattr(iota, "target", None) == torch.ops.prims.iota.default and checks.known_equal(iota.args[0], S)
            and iota.kwargs.get("start") == 0 and iota.kwargs.get("step") == 1)


def _check_roll(match: Match) -> bool:
    """s rolled left by one, x written to its last column, the sum of (new s) * w over the width (S = K)."""
    found = _common(match, 2)
    if found is None:
        return False
    x, s, w, _ = found
    S = s.shape[-1]
    (index,), (select,) = checks.nodes_of(match, aten.index.Tensor), checks.nodes_of(match, aten.select.int)
    (scatter,) = checks.nodes_of(match, aten.select_scatter.default)
    (total,) = checks.nodes_of(match, aten.sum.dim_IntList)
    keepdim = total.args[2] if len(total.args) > 2 else total.kwargs.get("keepdim", False)
    return (
        w.dim() == 2 and checks.known_equal(list(w.shape), [s.shape[1], S])
        and bool(statically_known_true(S >= 2))
        and is_roll_left_by_one(index, S)
        and _last_dim(select.args[0], select.args[1]) and _is_last_index(select.args[2], S)
        and _last_dim(scatter.args[0], scatter.args[2]) and _is_last_index(scatter.args[3], S)
        and _last_dim(total.args[0], list(total.args[1])[0]) and len(total.args[1]) == 1 and not keepdim
        and total.kwargs.get("dtype") is None
        and checks.copies_are_exact(match)
        and checks.scalars_are_one(match)  # the roll's iota + 1 and SiLU's 1 + exp(-z)
        and checks.no_outside_users(match)
    )


def _is_last_index(index, S) -> bool:
    return index == -1 or checks.known_equal(index, S - 1)


@dataclass(frozen=True)
class Candidate:
    search: Callable  # search(x, s, w, b, act, conv_weight) -> (y, new state)
    replace: Callable  # replace(x, s, w, b, activation: str, conv_weight) -> (y, new state)
    check: Callable  # extra_check(match)
    x_dims: int  # x's rank: 3 ([B, C, T]) or 2 (one token, [B, C])
    weight_forms: tuple  # conv_weight functions: how a [C, K] / [C, 1, K] w reaches the conv (roll: w is [C, K])


CANDIDATES = (
    Candidate(_pattern_cat, _replacement_cat, _check_cat, 3, (_weight_2d, _weight_3d)),
    Candidate(_pattern_roll, _replacement_roll, _check_roll, 2, (_weight_2d,)),
)


# ---------------------------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------------------------
def _example_inputs(candidate: Candidate, conv_weight, has_bias: bool, dtype) -> list[torch.Tensor]:
    # Distinct sizes (B=2, C=6, S=4, K=4, T=1): the match ignores them and the checks read the real ones.
    x = torch.randn(2, 6, 1, dtype=dtype) if candidate.x_dims == 3 else torch.randn(2, 6, dtype=dtype)
    s = torch.randn(2, 6, 4, dtype=dtype)
    w = torch.randn(6, 1, 4, dtype=dtype) if conv_weight is _weight_3d else torch.randn(6, 4, dtype=dtype)
    return [x, s, w, torch.randn(6, dtype=dtype)] if has_bias else [x, s, w]


def _variants():
    """(search, replace, example inputs, extra_check) for every candidate x weight form x activation x bias x dtype."""
    for candidate in CANDIDATES:
        for conv_weight in candidate.weight_forms:
            for act_name in ("silu", "silu_mul_sigmoid", "none"):
                act, activation = ACTIVATIONS[act_name]
                for has_bias in (True, False):
                    for dtype in (torch.float32, torch.bfloat16, torch.float16):
                        if dtype != torch.float32 and act_name == "none":
                            continue  # no activation: nothing is upcast, the fp32 trace serves every dtype
                        search, replace = _specialise(candidate, conv_weight, act, activation, has_bias)
                        search.__name__ = (f"{candidate.search.__name__}_{conv_weight.__name__[1:]}_{act_name}"
                                           f"{'' if has_bias else '_nobias'}_{str(dtype)[6:]}")
                        yield search, replace, _example_inputs(candidate, conv_weight, has_bias, dtype), candidate.check


def _specialise(candidate: Candidate, conv_weight, act, activation: str, has_bias: bool):
    search, replace = candidate.search, candidate.replace
    if has_bias:
        return (lambda x, s, w, b: search(x, s, w, b, act, conv_weight),
                lambda x, s, w, b: replace(x, s, w, b, activation, conv_weight))
    return (lambda x, s, w: search(x, s, w, None, act, conv_weight),
            lambda x, s, w: replace(x, s, w, None, activation, conv_weight))


def _generalise(pattern):
    """Every node may have users outside the pattern (dynamic shapes ask for sizes): ``checks.no_outside_users``
    admits only size queries.  Lists of nodes (cat's inputs) stay as traced."""
    seen = set()

    def visit(p):
        if id(p) in seen or not isinstance(p, (CallFunction, MultiOutputPattern)):
            return
        seen.add(id(p))
        if isinstance(p, MultiOutputPattern):
            for out in p.outputs:
                visit(out)
            return
        p.__init__(p.fns, *p.args, _users=MULTIPLE, **p.kwargs)
        for a in (*p.args, *p.kwargs.values()):
            for item in (a if isinstance(a, (list, tuple)) else (a,)):
                visit(item)

    visit(pattern)
    return pattern


def _counting(trace_fn):
    """trace_fn that counts one rewrite: register_replacement calls it once per match that passed every check, to
    build the replacement graph (as in patterns/causal_conv1d_silu.py)."""

    def trace(fn, args, **kwargs):
        graph = trace_fn(fn, args, **kwargs)
        dynamo_counters["inductor_conv"][COUNTER] += 1
        return graph

    return trace


@functools.cache
def register(pass_dict) -> None:
    """Trace every variant once (or rebuild it from the pattern cache) and register it into ``pass_dict``."""
    inductor_counts = dynamo_counters["inductor"].copy()
    cache = PatternCache("causal_conv1d_update")  # Note [pattern cache]
    with tracing(None), unset_fake_temporarily(), FakeTensorMode(), torch.inference_mode(False):
        for i, (search, replace, example_inputs, check) in enumerate(_variants()):
            traced = cache.pattern(f"{i}:{search.__name__}", lambda: gen_pattern(search, example_inputs, fwd_only))
            register_replacement(search, replace, example_inputs, _counting(fwd_only), pass_dict, extra_check=check,
                                 search_fn_pattern=_generalise(traced), skip_duplicates=True)
    cache.save()
    dynamo_counters["inductor"] = inductor_counts
