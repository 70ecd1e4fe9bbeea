"""Causal depthwise conv1d (+SiLU) written in eager PyTorch -> ``torch.ops.inductor_conv.causal_conv1d_fwd``.

Notation: x (B, C, L), conv weight w (C, 1, K), bias β (C,) or None, z the conv output (pre-activation), act ∈
{SiLU, identity}. Every form below computes y = act(z[..., :L]) with z[t] = β + Σ_k w[k] · x[t - K + 1 + k]
(zeros before t = 0), which is exactly ``causal_conv1d_fwd(x, w.squeeze(1), β, None, None, act)``.

Each search function is plain eager code as models write it, beside its replacement. ``CANDIDATES`` lists them
with the activations each is written with; ``_variants`` expands every row into inference (``fwd_only``) and
training (``joint_fwd_bwd``) patterns, with and without bias, with x needing a gradient or not (the conv is the
first layer), and as CPU and CUDA graphs (Inductor computes dβ differently on GPUs: ``joint_fwd_bwd_gpu``). A
training rewrite replaces the eager backward too, so the partitioner saves only x, w, β (Note [conv backward
recomputes z] in inductor_conv/ops/causal_conv1d.py).

Patterns are matched with every int and int list ignored (so one pattern serves all B, L, K, C, static or
symbolic) and with every node allowed extra users; ``checks.causal_conv1d_holds`` then proves the rewrite, one predicate
from patterns/checks.py per condition: depthwise, stride/dilation 1, causal padding and slice, backward consistent with
forward, SiLU's constants, no other consumer of z, device and dtype.
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
    Ignored,
    MultiOutputPattern,
    dynamo_counters,
    fwd_only,
    gen_pattern,
    joint_fwd_bwd,
    joint_fwd_bwd_with_decompositions,
    register_replacement,
    select_decomp_table,
    tracing,
    unset_fake_temporarily,
)
from inductor_conv._counters import bump
from inductor_conv.patterns import checks
from inductor_conv.patterns.pattern_cache import PatternCache

aten = torch.ops.aten


# ---------------------------------------------------------------------------------------------------------------
# Activations: how models spell them, and the name the fused op takes
# ---------------------------------------------------------------------------------------------------------------
def _silu(z):
    return F.silu(z)  # also nn.SiLU() and torch.nn.functional.silu: the same graph


def _silu_mul_sigmoid(z):
    return z * torch.sigmoid(z)  # SiLU written out (its backward graph differs from F.silu's)


def _silu_inplace(z):
    # nn.SiLU(inplace=True) on a view of the conv output (Mamba's act(conv(x)[..., :L]) with an in-place act):
    # traced for training graphs only, whose backward differs (a clone of z for SiLU', a copy of the gradient, a
    # second scatter); in inference graphs slices_of_slice_scatter turns it into the F.silu form.
    return F.silu(z, inplace=True)


def _identity(z):
    return z


def normalize(graph: torch.fx.Graph) -> None:
    """Bring spellings the patterns were not traced in to ones they were (each rewrite exact)."""
    sigmoid_second(graph)
    slices_of_slice_scatter(graph)


def slices_of_slice_scatter(graph: torch.fx.Graph) -> int:
    """Replace ``slice(slice_scatter(base, src, d, s, e), d, s, e)`` (step 1) by ``src``: the slice reads back exactly
    what the scatter wrote.  An in-place activation on a view, ``nn.SiLU(inplace=True)(z[..., :L])``, is that after
    functionalisation (the result is the view of the updated z); without the scatter the conv's only use is the
    slice again, and the inference patterns match (the training graph differs more: its "silu_inplace" patterns are
    traced through this normalisation too, _normalized).  Returns the number of slices replaced."""
    replaced = 0
    for node in list(graph.find_nodes(op="call_function", target=aten.slice.Tensor)):
        scatter = node.args[0]
        if not (isinstance(scatter, torch.fx.Node) and scatter.target == aten.slice_scatter.default):
            continue
        dim_start_end_step = checks.slice_range(node)
        if dim_start_end_step[3] == 1 and dim_start_end_step == checks.slice_range(scatter):
            node.replace_all_uses_with(scatter.args[1])
            replaced += 1
    if replaced:
        graph.eliminate_dead_code()
    return replaced


def sigmoid_second(graph: torch.fx.Graph) -> int:
    """Rewrite sigmoid(z) * z as z * sigmoid(z), the order the SiLU patterns are traced in (the matcher does not
    commute arguments): the same product, multiplication commutes in floating point and type promotion is symmetric.
    Autograd's backward of either order is the same graph (each factor's gradient is the tangent times the other
    factor), so training graphs match too.  Returns the number of products turned."""
    turned = 0
    for node in graph.find_nodes(op="call_function", target=aten.mul.Tensor):
        if len(node.args) != 2 or node.kwargs:
            continue
        first, second = node.args
        if (isinstance(first, torch.fx.Node) and first.op == "call_function" and first.target == aten.sigmoid.default
                and first.args[0] is second):
            node.args = (second, first)
            turned += 1
    return turned


ACTIVATIONS: dict[str, tuple[Callable, str]] = {
    "silu": (_silu, "silu"),
    "silu_mul_sigmoid": (_silu_mul_sigmoid, "silu"),
    "silu_inplace": (_silu_inplace, "silu"),
    "none": (_identity, "none"),
}


# ---------------------------------------------------------------------------------------------------------------
# Search functions and replacements
# ---------------------------------------------------------------------------------------------------------------
def _pattern_left_pad(x, w, b, act):
    # fla ShortConvolution's torch path, Hyena: pad K - 1 zeros on the left, convolve without padding.
    return act(F.conv1d(F.pad(x, (w.shape[-1] - 1, 0)), w, b, groups=w.shape[0]))


def _pattern_conv_pad_slice(x, w, b, act):
    # Mamba (mamba_simple.py): nn.Conv1d(padding=K - 1) pads both sides; keep the first L outputs, then act.
    return act(F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=w.shape[0])[..., : x.shape[-1]])


def _pattern_conv_pad_act_slice(x, w, b, act):
    # The same with the activation applied before the slice (act(z)[..., :L], e.g. an nn.Sequential(conv, SiLU)).
    return act(F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=w.shape[0]))[..., : x.shape[-1]]


def _replacement_causal_conv1d(x, w, b, activation):
    return torch.ops.inductor_conv.causal_conv1d_fwd(x, w.squeeze(1), b, None, None, activation)


def _pattern_conv_pad_transpose_slice(x, w, b, act):
    # Mamba-2 (mamba2.py): act(conv1d(xBC.transpose(1, 2)).transpose(1, 2)[:, :L]) — sliced in (B, L, C) layout.
    z = F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=w.shape[0])
    return act(z.transpose(1, 2)[:, : x.shape[-1]])


def _pattern_conv_pad_act_transpose_slice(x, w, b, act):
    # The same with the activation applied before the transpose and slice (act(z).transpose(1, 2)[:, :L]).
    z = F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=w.shape[0])
    return act(z).transpose(1, 2)[:, : x.shape[-1]]


def _pattern_conv_pad_transpose_act_slice(x, w, b, act):
    # Mamba2Simple (mamba2_simple.py, and Mamba-2's torch path without causal-conv1d in some releases):
    # act(conv1d(xBC.transpose(1, 2)).transpose(1, 2))[:, :L] — the activation on the transposed, padded output.
    z = F.conv1d(x, w, b, padding=w.shape[-1] - 1, groups=w.shape[0])
    return act(z.transpose(1, 2))[:, : x.shape[-1]]


def _replacement_causal_conv1d_transposed(x, w, b, activation):
    return _replacement_causal_conv1d(x, w, b, activation).transpose(1, 2)


@dataclass(frozen=True)
class Candidate:
    search: Callable  # search(x, w, b, act), eager PyTorch
    replace: Callable  # replace(x, w, b, activation: str)
    activations: tuple[str, ...]  # keys of ACTIVATIONS the form is matched with


CANDIDATES = (
    Candidate(_pattern_left_pad, _replacement_causal_conv1d, ("silu", "silu_mul_sigmoid", "none")),
    Candidate(
        _pattern_conv_pad_slice, _replacement_causal_conv1d, ("silu", "silu_mul_sigmoid", "silu_inplace", "none")
    ),
    # With no activation this is the form above.
    Candidate(_pattern_conv_pad_act_slice, _replacement_causal_conv1d, ("silu", "silu_mul_sigmoid")),
    Candidate(
        _pattern_conv_pad_transpose_slice, _replacement_causal_conv1d_transposed, ("silu", "silu_mul_sigmoid", "none")
    ),
    # With no activation this is the form above.
    Candidate(
        _pattern_conv_pad_act_transpose_slice, _replacement_causal_conv1d_transposed, ("silu", "silu_mul_sigmoid")
    ),
    # The activation between the transpose and the slice; as models write it, F.silu / nn.SiLU only (27 variants).
    Candidate(_pattern_conv_pad_transpose_act_slice, _replacement_causal_conv1d_transposed, ("silu",)),
)


# ---------------------------------------------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------------------------------------------
def _specialise(candidate: Candidate, act_name: str, has_bias: bool) -> tuple[Callable, Callable]:
    """(search, replace) with the activation bound and signature (x, w, b) or (x, w)."""
    act, activation = ACTIVATIONS[act_name]
    search, replace = candidate.search, candidate.replace
    if has_bias:
        return (lambda x, w, b: search(x, w, b, act)), (lambda x, w, b: replace(x, w, b, activation))
    return (lambda x, w: search(x, w, None, act)), (lambda x, w: replace(x, w, None, activation))


def _conv_backward_bias_by_sum(
    grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask
):
    """Inductor's GPU decomposition of convolution_backward (``convolution_backward`` in
    torch/_inductor/decomposition.py, applied only to CUDA tensors): dβ is a sum over batch and time, and the aten op
    computes only dx and dw. Applied to the CPU example inputs, it gives patterns the shape of CUDA training graphs
    (fake CUDA tensors cannot go through autograd on a CPU-only build)."""
    if not output_mask[2]:
        return NotImplemented
    grad_bias = aten.sum(grad_output, [0] + list(range(2, grad_output.dim())))
    grad_input, grad_weight, _ = aten.convolution_backward(
        grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
        [output_mask[0], output_mask[1], False],
    )
    return grad_input, grad_weight, grad_bias


def _gpu_decompositions():
    return {**select_decomp_table(), aten.convolution_backward.default: _conv_backward_bias_by_sum}


def joint_fwd_bwd_gpu(fn, args, **kwargs):
    """``joint_fwd_bwd`` as it traces on a GPU: the training graph Inductor builds for CUDA tensors."""
    return joint_fwd_bwd_with_decompositions(fn, args, _gpu_decompositions, **kwargs)


def _example_inputs(has_bias: bool, training: bool, x_grad: bool, dtype=torch.float32,
                    w_grad: bool = True) -> list[torch.Tensor]:
    # Sizes only need to be distinct (B=2, C=4, L=8, K=3); the match ignores them and checks real ones.
    x = torch.randn(2, 4, 8, dtype=dtype, requires_grad=training and x_grad)
    w = torch.randn(4, 1, 3, dtype=dtype, requires_grad=training and w_grad)
    b = torch.randn(4, dtype=dtype, requires_grad=training and w_grad)
    return [x, w, b] if has_bias else [x, w]


def _variants():
    """(search, replace, example inputs, trace_fn) for every candidate × activation × bias × graph kind."""
    # Training first: for one anchor node the larger (forward + backward) pattern must be tried before the forward
    # alone (checks.backward_is_matched also refuses a forward-only rewrite of a differentiated conv).
    # The *_gpu kinds differ from the CPU ones only with a bias (dβ by sum); without one they would be duplicates.
    # Half-precision graphs differ again, inference ones too: the activation's decomposition computes in fp32
    # between convert_element_type nodes (opmath), which fp32 traces lack; training is traced as on the GPU (with a
    # bias, dβ by sum), where half precision trains, and bf16 (x differentiable) also as on the CPU.
    # Frozen conv parameters (x differentiable, weight and bias not: fine-tuning around a frozen layer) give a
    # convolution_backward for dx alone, the same on CPU and GPU (no dβ to take out).
    kinds = (
        ("training", joint_fwd_bwd, True, torch.float32),
        ("training_x_nograd", joint_fwd_bwd, False, torch.float32),
        ("training_gpu", joint_fwd_bwd_gpu, True, torch.float32),
        ("training_x_nograd_gpu", joint_fwd_bwd_gpu, False, torch.float32),
        ("training_bf16", joint_fwd_bwd, True, torch.bfloat16),
        ("training_gpu_bf16", joint_fwd_bwd_gpu, True, torch.bfloat16),
        ("training_x_nograd_gpu_bf16", joint_fwd_bwd_gpu, False, torch.bfloat16),
        ("training_gpu_fp16", joint_fwd_bwd_gpu, True, torch.float16),
        ("training_x_nograd_gpu_fp16", joint_fwd_bwd_gpu, False, torch.float16),
        ("training_frozen", joint_fwd_bwd, True, torch.float32),
        ("training_frozen_bf16", joint_fwd_bwd, True, torch.bfloat16),
        ("training_frozen_fp16", joint_fwd_bwd, True, torch.float16),
        ("inference", fwd_only, False, torch.float32),
        ("inference_bf16", fwd_only, False, torch.bfloat16),
        ("inference_fp16", fwd_only, False, torch.float16),
    )
    for candidate in CANDIDATES:
        for act_name in candidate.activations:
            for has_bias in (True, False):
                for kind, trace_fn, x_grad, dtype in kinds:
                    if not has_bias and (kind.endswith("_gpu") or kind == "training_bf16"):
                        continue  # without a bias the CPU and GPU traces are the same graph
                    if dtype != torch.float32 and act_name == "none":
                        continue  # no activation: nothing is upcast
                    if act_name == "silu_inplace":
                        if trace_fn is fwd_only:
                            continue  # normalize() gives inference graphs the F.silu form
                        trace_fn = _normalized(trace_fn)  # the forms the pass brings the user's graph to
                    search, replace = _specialise(candidate, act_name, has_bias)
                    training = trace_fn is not fwd_only
                    # e.g. _pattern_conv_pad_slice_silu_nobias_training (shown by pattern-matcher debug logs)
                    search.__name__ = f"{candidate.search.__name__}_{act_name}{'' if has_bias else '_nobias'}_{kind}"
                    inputs = _example_inputs(has_bias, training, x_grad, dtype, w_grad="frozen" not in kind)
                    yield search, replace, inputs, trace_fn


def _normalized(trace_fn):
    """trace_fn whose graph is brought to normalize()'s form, as the pass brings the user's graph before matching
    (the in-place activation's forward reads its result back through a slice of a slice_scatter)."""

    def trace(fn, args, **kwargs):
        gm = trace_fn(fn, args, **kwargs)
        normalize(gm.graph)
        gm.recompile()
        return gm

    return trace


def _generalise(pattern):
    """Loosen a traced pattern where the real graph may legitimately differ; ``checks.causal_conv1d_holds``
    re-checks each point.

    * Every node may have users outside the pattern (dynamic-shape graphs ask the conv output for its length);
      ``checks.no_outside_users`` admits only such size queries.
    * A literal list left in the pattern (convolution_backward's output mask, a list of bools that ``gen_pattern``
      keeps) becomes ``Ignored()``; ``checks.output_mask_matches_outputs`` checks it instead. Node objects are
      re-initialised in place because the pattern is a DAG whose nodes are shared.
    """
    seen = set()

    def visit(p):
        if id(p) in seen or not isinstance(p, (CallFunction, MultiOutputPattern)):
            return
        seen.add(id(p))
        if isinstance(p, MultiOutputPattern):
            for out in p.outputs:
                visit(out)
            return
        args = [Ignored() if isinstance(a, (list, tuple)) else a for a in p.args]
        kwargs = {k: Ignored() if isinstance(a, (list, tuple)) else a for k, a in p.kwargs.items()}
        p.__init__(p.fns, *args, _users=MULTIPLE, **kwargs)
        for a in (*args, *kwargs.values()):
            visit(a)

    visit(pattern)
    return pattern


def _counting(trace_fn):
    """trace_fn that bumps ``counters()["causal_conv1d"]`` once per rewrite.

    With a pre-traced ``search_fn_pattern``, ``register_replacement`` calls trace_fn only to build the replacement
    graph of a match that passed every check, right before substituting it: once per rewrite. The replacement
    function itself can't count (AOTAutograd runs it twice per joint trace).
    """

    def trace(fn, args, **kwargs):
        graph = trace_fn(fn, args, **kwargs)
        bump("causal_conv1d")
        return graph

    return trace


@functools.cache
def register(pass_dict) -> None:
    """Trace every variant once and register it into ``pass_dict`` (a PatternMatcherPass).

    Traced under a fresh fake mode and with Inductor's counters restored afterwards (like Inductor's own
    ``init_once_fakemode``), and outside inference mode (this runs once: training patterns must not be skipped
    because the first compile happened under ``torch.inference_mode()``).
    """
    inductor_counts = dynamo_counters["inductor"].copy()  # tracing runs Inductor's early patterns: not the user's
    cache = PatternCache("causal_conv1d")  # Note [pattern cache]: traced once per machine, not per process
    with tracing(None), unset_fake_temporarily(), FakeTensorMode(), torch.inference_mode(False):
        for i, (search, replace, example_inputs, trace_fn) in enumerate(_variants()):
            traced = cache.pattern(f"{i}:{search.__name__}", lambda: gen_pattern(search, example_inputs, trace_fn))
            pattern = _generalise(traced)
            register_replacement(
                search,
                replace,
                example_inputs,
                _counting(trace_fn),
                pass_dict,
                extra_check=checks.causal_conv1d_holds,
                search_fn_pattern=pattern,
                skip_duplicates=True,
            )
    cache.save()
    dynamo_counters["inductor"] = inductor_counts
