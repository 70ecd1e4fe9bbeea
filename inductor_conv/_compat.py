"""Every private torch / Inductor name inductor_conv touches, in one place, by subsystem.

inductor_conv supports torch 2.11 (the GPU box) and torch 2.13 (CPU CI) at once. Inductor's internals move between
releases; anything that is not public API is imported here and nowhere else, so a version difference is fixed in one
file and `tests/test_compat.py` checks each name on whichever torch runs the tests.  Sections: pattern matcher and
tracing; Dynamo, AOTAutograd and Inductor's configuration and caches; lowerings and templates; the eager launch path.
"""
from __future__ import annotations

import functools
import inspect as _inspect

import torch

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


# ================================================================ pattern matcher and tracing
# patterns/: search patterns traced once under a fresh fake mode (as Inductor's own ``init_once_fakemode``), the
# relaxed patterns of Note [relaxed attention search patterns] (PatternExpr subclasses), sizes proven equal without
# guards, and the traced patterns written to and read from disk (Note [pattern cache]).
from torch._guards import detect_fake_mode, tracing  # noqa: E402
from torch._inductor.decomposition import select_decomp_table  # noqa: E402
from torch._inductor.pattern_matcher import (  # noqa: E402
    MULTIPLE,
    CallFunction,
    FailedMatch,
    Ignored,
    KeywordArg,
    Match,
    MultiOutputPattern,
    PatternExpr,
    PatternMatcherPass,
    fwd_only,
    gen_pattern,
    is_match,
    joint_fwd_bwd,
    register_replacement,
    stable_topological_sort,
)
from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily  # noqa: E402
from torch.fx.experimental.symbolic_shapes import guard_or_false, statically_known_true  # noqa: E402

# The functional form of a mutating custom op, as AOTAutograd writes it (patterns/causal_conv1d_update.py, Note
# [decode state write-back]); Inductor's reinplacing pass and its decomposition handle it in 2.11 and 2.13.
auto_functionalized = torch.ops.higher_order.auto_functionalized


def set_node_value(node, value) -> None:
    """A new FX node's fake ``value`` in its meta, with the tensor metadata beside it (torch 2.11's pattern replacer
    asserts that a node with a tensor ``val`` also has ``tensor_meta``)."""
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    node.meta["val"] = value
    node.meta["tensor_meta"] = _extract_tensor_metadata(value)


def values_recomputed(nodes, sample) -> None:
    """Each node's fake ``val`` from its target run on its inputs' values, in order (a node may read one before it),
    under the fake mode of ``sample`` (a fake value of the same graph; none found: the current mode)."""
    import contextlib

    from torch.fx.node import map_arg

    with detect_fake_mode([sample]) or contextlib.nullcontext():
        for node in nodes:
            node.meta["val"] = node.target(*map_arg(node.args, lambda a: a.meta["val"]),
                                           **map_arg(node.kwargs, lambda a: a.meta["val"]))


def remove_noop_ops(graph) -> None:
    """Inductor's own alias/clone/no-op removal. A ``joint_custom_pre_pass`` runs before Inductor does this, and
    alias/clone nodes between the ops of a pattern make it miss, so our pass calls it first."""
    from torch._inductor.fx_passes.post_grad import remove_noop_ops as _remove_noop_ops

    _remove_noop_ops(graph)


# --- lowerings and templates ---------------------------------------------------------------------------------------


def joint_fwd_bwd_with_decompositions(fn, args, decompositions, **kwargs):
    """``joint_fwd_bwd`` tracing with the decomposition table ``decompositions()`` (replacing any ``get_decomp_fn``
    that register_replacement passes in 2.13).

    2.13's ``joint_fwd_bwd`` takes ``get_decomp_fn``; 2.11's reads ``select_decomp_table`` from the pattern_matcher
    module, so there we patch that name for the duration of the trace."""
    import unittest.mock

    import torch._inductor.pattern_matcher as _pm

    if "get_decomp_fn" in _inspect.signature(joint_fwd_bwd).parameters:
        return joint_fwd_bwd(fn, args, **{**kwargs, "get_decomp_fn": decompositions})
    with unittest.mock.patch.object(_pm, "select_decomp_table", decompositions):
        return joint_fwd_bwd(fn, args, **kwargs)


def apply_early_joint_patterns(graph) -> int:
    """Inductor's ``early_patterns`` (pointless view pairs and the like), which run after the joint pre-pass.

    Our patterns were traced with them applied (``joint_fwd_bwd`` runs them), so graphs like HF T5's in-place
    ``scores += bias`` match only once they have run on the user's graph too."""
    from torch._inductor.fx_passes.joint_graph import early_patterns

    return early_patterns.apply(graph)


def pattern_source(pattern) -> str:
    """Python that rebuilds ``pattern`` (a traced search pattern) into the name ``output``: Inductor's own serialiser
    of its attention patterns (``PatternPrettyPrinter``, torch/_inductor/fx_passes/serialized_patterns/), run as its
    ``run`` does but without its ``functools.cache`` (which would keep a reference to the pattern), and writing the
    items of a list argument (``aten.cat``'s tensors, a list of sizes) as patterns: Inductor's printer writes a list
    as its repr, which is not Python where an item is a pattern (``Ignored()`` prints as ``*``)."""
    from torch._inductor.pattern_matcher import PatternPrettyPrinter

    class _Printer(PatternPrettyPrinter):
        def pretty_print(self, obj) -> str:
            if isinstance(obj, (list, tuple)):
                items = ", ".join(self.pretty_print(x) for x in obj)
                return f"[{items}]" if isinstance(obj, list) else f"({items}{',' if len(obj) == 1 else ''})"
            return super().pretty_print(obj)

    pp = _Printer()
    out = pattern.pretty_print(pp=pp)
    lines = [f"{pp.memoized_objs_names[key]} = {pp.memoized_objs_pp[key]}" for key in pp.memoized_objs_names]
    return "\n".join([*lines, f"output = {out}"])


def pattern_namespace() -> dict:
    """The names ``pattern_source``'s Python refers to (the pattern classes, ``aten``, ``prims``, ``operator``)."""
    import operator

    import torch._inductor.pattern_matcher as _pm

    return {**vars(_pm), "torch": torch, "operator": operator, "aten": torch.ops.aten, "prims": torch.ops.prims}


def inductor_attention_binds_divisor() -> bool:
    """Whether Inductor's fused-attention patterns bind the number the scores (or q) are divided by, as 2.13's do
    (``_sfdp_pattern_5(query, key, value, attn_mask, inv_scale)``), or ignore it and assume sqrt(D), as 2.11's
    patterns 5-10 and 20 do (``/ math.sqrt(query.size(-1))``, an ``Ignored()`` argument once serialised)."""
    import inspect

    from torch._inductor.fx_passes import fuse_attention

    return "inv_scale" in inspect.signature(fuse_attention._sfdp_pattern_5).parameters



# ================================================================ Dynamo, AOTAutograd, Inductor config and caches
# patterns/graph_pass.py installs our pass as Inductor's joint_custom_pre_pass (a CustomGraphPass whose uuid keys
# Inductor's caches); inductor_conv/_enable.py pins compiled frames to the plugin's state (Note [plugin state
# guard]); tests, benchmarks and the demo turn caches off and read Dynamo's counters.
from torch._dynamo.utils import counters as dynamo_counters  # noqa: E402
from torch._inductor import config as inductor_config  # noqa: E402
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files  # noqa: E402


def get_joint_custom_pre_pass():
    """The pass currently installed as Inductor's ``joint_custom_pre_pass`` (None, a pass, or a list in 2.13)."""
    return inductor_config.joint_custom_pre_pass


def set_joint_custom_pre_pass(value) -> None:
    inductor_config.joint_custom_pre_pass = value


def get_pre_grad_custom_pass():
    """The pass installed as Inductor's ``pre_grad_custom_pass`` (run on the Dynamo graph, before AOTAutograd)."""
    return inductor_config.pre_grad_custom_pass


def set_pre_grad_custom_pass(value) -> None:
    inductor_config.pre_grad_custom_pass = value


def fx_graph_cache_disabled():
    """A config patch that turns off every Inductor cache (FX graph, AOTAutograd, autotune): pattern tests need it,
    since a cache hit skips custom passes."""
    return inductor_config.patch(force_disable_caches=True)


def compiled_graph_caches_disabled():
    """Inductor's FX graph cache and AOTAutograd's cache off, every other cache on: each compile runs our pass and
    counts its rewrites (a hit would replay code rewritten elsewhere), while the pattern cache spares each process
    the tracing (``fx_graph_cache_disabled`` turns that off too). Used where several processes compile at once."""
    import contextlib

    from torch._functorch import config as functorch_config

    stack = contextlib.ExitStack()
    stack.enter_context(inductor_config.patch(fx_graph_cache=False))
    stack.enter_context(functorch_config.patch(enable_autograd_cache=False))
    return stack


def inductor_cache_dir() -> str:
    """Inductor's cache directory (``TORCHINDUCTOR_CACHE_DIR``, else a per-user folder under the temp dir)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return cache_dir()


def inductor_caches_disabled() -> bool:
    """Inductor's ``force_disable_caches`` (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1``)."""
    return bool(inductor_config.force_disable_caches)


def pin_compiled_frames(guard, description: str, pinned) -> int:
    """Add ``guard`` to every cache entry of every frame Dynamo holds compiled code for, except the entries whose
    guard manager is in ``pinned`` (a WeakSet; the managers guarded here are added to it). Returns how many.

    ``guard(frame_locals) -> bool`` runs on each call of the cached code, before it is reused, like Dynamo's own
    global guards: an entry's ``guard_manager.root`` is the RootGuardManager that the C++ cache lookup checks, and
    ``add_lambda_guard(fn, verbose_code_parts, user_stack)`` is how Dynamo adds its Python-level ones (the
    saved-tensors-hooks guard); a failing guard makes Dynamo compile the frame again and log ``description`` as the
    reason. The compiled frames are the code objects in ``convert_frame.input_codes`` / ``output_codes`` (what
    ``torch._dynamo.reset_code_caches`` walks), their entries ``_debug_get_cache_entry_list(code)``; all four names
    are the same in 2.11 and 2.13. Runs under Dynamo's compile lock, so no entry is created meanwhile."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list
    from torch._dynamo import convert_frame

    added = 0
    with convert_frame.compile_lock:
        for ref in (*convert_frame.input_codes.seen, *convert_frame.output_codes.seen):
            code = ref()
            if code is None:
                continue
            for entry in _debug_get_cache_entry_list(code):
                manager = entry.guard_manager
                if manager in pinned:
                    continue
                manager.root.add_lambda_guard(guard, [description], None)
                pinned.add(manager)
                added += 1
    return added


def aten_fallbacks():
    """A config patch under which Inductor lowers every ATen op to a call of the op itself (``fallback_by_default``,
    its "lite mode" switch, in 2.11 and 2.13): no C++ is generated and compiled for them, while the joint-graph passes,
    ours included, run as usual.  The CPU demo uses it: g++ on the rest of the graph would take most of its time."""
    return inductor_config.patch(fallback_by_default=True)


def run_and_get_code(fn, *args, **kwargs):
    """(fn's result, the Python of every graph Inductor compiled while fn ran) (``torch._inductor.utils``)."""
    from torch._inductor.utils import run_and_get_code as run

    return run(fn, *args, **kwargs)



# ================================================================ lowerings and templates
# lowerings/ registers lowerings of our ops and builds Triton templates with several outputs the way FlexAttention
# does (extra outputs are mutated inputs), with the 2.11 / 2.13 differences papered over; the conv's backward reduces
# its dw / dbeta partial rows with Inductor's own sum lowering.
from torch._inductor import ir  # noqa: E402
from torch._inductor.kernel.flex.common import infer_dense_strides  # noqa: E402
from torch._inductor.lowering import (  # noqa: E402
    empty_strided,
    fallback_handler,
    full,
    lowerings as inductor_lowerings,
    register_lowering,
    sum_ as sum_lowering,
    to_dtype,
)
from torch._inductor.select_algorithm import (  # noqa: E402
    AlgorithmSelectorCache,
    ExternKernelChoice,
    SymbolicGridFn,
    TritonTemplate,
    autotune_select_algorithm,
    realize_inputs,
)
from torch._inductor.virtualized import V  # noqa: E402
from torch.utils._sympy.functions import CeilDiv as ceil_div  # noqa: E402  (Inductor's ceiling division of sizes)


def has_lowering(op) -> bool:
    return op in inductor_lowerings


def remove_lowering(op) -> None:
    inductor_lowerings.pop(op, None)


def triton_template(name: str, grid, source: str):
    """A TritonTemplate whose input layouts are frozen at codegen (2.13's always_freeze_layout, as FlexAttention;
    2.11 has no such flag and freezes them anyway).

    Template names are global in both versions and asserted unique: a module that is imported again (after a
    failed first import, or importlib.reload) replaces its own earlier template instead of failing."""
    params = _inspect.signature(TritonTemplate.__init__).parameters
    extra = {"always_freeze_layout": True} if "always_freeze_layout" in params else {}
    TritonTemplate.all_templates.pop(name, None)
    return TritonTemplate(name=name, grid=grid, source=source, **extra)


def extern_kernel_choice(kernel, *, name: str, **kwargs):
    """An ExternKernelChoice registered under ``name``, replacing our own earlier registration of that name.

    Both versions assert that ``extern_kernels`` has no attribute ``name`` yet; 2.13 also keeps a ``_registry``
    (with ``lookup``) that 2.11 lacks."""
    from torch._inductor.select_algorithm import extern_kernels

    if hasattr(extern_kernels, name):
        delattr(extern_kernels, name)
    getattr(ExternKernelChoice, "_registry", {}).pop(name, None)
    return ExternKernelChoice(kernel, name=name, **kwargs)


def select_algorithm(*args, **kwargs):
    """autotune_select_algorithm returning the chosen node only (2.13 returns (node, choice), 2.11 the node)."""
    result = autotune_select_algorithm(*args, **kwargs)
    return result[0] if isinstance(result, tuple) else result


def autotune_example_value(node) -> torch.Tensor:
    """The tensor autotuning benchmarks a choice on for ``node`` when no ``input_gen_fns`` entry replaces it: random
    values (zeros for bool and integer dtypes) in the storage of the node's base buffer, sized as Inductor allocates
    it (``AlgorithmSelectorCache.benchmark_example_value``, the same staticmethod in both versions)."""
    return AlgorithmSelectorCache.benchmark_example_value(node)


def size_hint(expr, fallback: int | None = None) -> int:
    """A concrete value of a size expression for heuristics, adding no guard: the size-variable allocator's
    ``optimization_hint`` (both versions; 2.13 removed the older ``size_hint`` that 2.11 still has)."""
    return V.graph.sizevars.optimization_hint(expr, fallback=fallback)


def value_hint(n) -> int | None:
    """An int as it is, a SymInt as the value it was traced with (None where it has none), adding no guard: the
    symbolic node's ``hint`` (both versions)."""
    if isinstance(n, int):
        return n
    hint = getattr(n.node, "hint", None)
    return None if hint is None else int(hint)


def wrapper_expr(expr) -> str:
    """A size expression as Inductor's Python wrapper code prints it into a launch (a dynamic-shape grid): both
    versions' printer refuses some sympy forms that evaluate fine, e.g. floor(a / b)."""
    from torch._inductor.codegen.wrapper import pexpr

    return pexpr(expr)


def tma_compatible(node) -> bool:
    """Inductor's own TMA gate for one input (``can_use_tma``: a supported dtype, one unit-stride dim, 16-byte
    aligned outer strides and inner width, and a base pointer Inductor has not marked unaligned), plus a check that
    the device and Triton can build TMA descriptors in a kernel (``has_triton_tma_device``)."""
    from torch._inductor.utils import can_use_tma
    from torch.utils._triton import has_triton_tma_device

    return has_triton_tma_device() and can_use_tma(node)



def user_triton_kernel(kernel, grid: tuple, num_warps: int, tensors: dict, scalars: dict, constexprs: dict) -> None:
    """Launch a ``@triton.jit`` kernel from a lowering as Inductor launches a user's kernel in a compiled graph: the
    lowering of ``triton_kernel_wrapper_mutation`` (what ``torch.library.wrap_triton`` traces to) makes a
    UserDefinedTritonKernel node, whose launch the wrapper code makes directly, and marks the tensors the kernel
    stores to as mutated.  tensors: IR nodes by parameter name (boxed here: the lowering takes a TensorBox for a
    tensor, anything else for a constant); scalars: ints or sympy expressions; grid: the launch's (x,), (x, y) or
    (x, y, z) sizes, ints or sympy expressions."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table, triton_kernel_wrapper_mutation

    boxed = {name: t if isinstance(t, ir.TensorBox) else ir.TensorBox(t) for name, t in tensors.items()}
    inductor_lowerings[triton_kernel_wrapper_mutation](
        kernel_idx=kernel_side_table.add_kernel(_one_config(kernel, num_warps)),
        constant_args_idx=kernel_side_table.add_constant_args(dict(constexprs)),
        grid=[(*grid, *(1,) * (3 - len(grid)))], tma_descriptor_metadata={}, kwargs={**boxed, **scalars})


@functools.cache
def _one_config(kernel, num_warps: int):
    """``kernel`` with its warps as an autotuner of one config (what Dynamo makes of ``kernel[grid](...,
    num_warps=w)``); one object per (kernel, warps), so the kernel side table holds each once."""
    import triton

    return triton.autotune(configs=[triton.Config({}, num_warps=num_warps)], key=[])(kernel)


# Note [channels-last stops at our ops]
# Where a graph holds a convolution, Inductor's layout optimisation (GraphLowering.decide_layout_opt: on the CPU
# always, on CUDA by its heuristics, which FastConformer's 1-D convs pass) gives channels-last strides to every dense
# 4-D tensor of the chain that reaches a convolution: a node is in the chain when one of its users is, except through
# a bmm (``find_nodes_prefer_channels_last``'s ``nodes_cannot_propagate``). Our ops are not in that exception, so in a
# Conformer layer (attention, then the conv module) the chain runs from the conv back through the output projection,
# our op's outputs and the op itself to q, k, v and the bias: (B, H, S, D) tensors realised with the head as their
# fastest dim (strides (H·S·D, 1, H·D, H)), which the templates then read one element per 2·H bytes, and the op's
# output copied into that order and out of it again for the projection. Default Inductor's attention is a bmm and
# keeps its own layouts. Our ops read and write any strides and gain nothing from channels-last, so they stop the
# chain as a bmm does: while Inductor builds the set, each node of ours (and each getitem of one) is given the bmm's
# target, and given its own back after. Inductor's second pass also adds every descendant of a chain node that comes
# before the last convolution (the layer's input is one, so q, k, v and the bias are reached through the
# projections); the inputs of our nodes are taken out of the set afterwards. The convolutions and everything else
# keep the layout Inductor chose for them.
_LAYOUT_STOPS: set = set()


def stop_channels_last_at(ops) -> None:
    """Make ``ops`` (and the getitems of their results) stop Inductor's channels-last propagation as a bmm does
    (Note [channels-last stops at our ops]); installs the wrapper on GraphLowering once (the wrapper keeps
    Inductor's own method as ``_inductor_conv_original``)."""
    from torch._inductor.graph import GraphLowering

    _LAYOUT_STOPS.update(ops)
    original = GraphLowering.find_nodes_prefer_channels_last
    if hasattr(original, "_inductor_conv_original"):
        return

    def find_nodes_prefer_channels_last(self):
        import operator

        from inductor_conv import config

        if not config.channels_last_stops:
            return original(self)
        stops = [n for n in self.module.graph.nodes
                 if n.op == "call_function" and (n.target in _LAYOUT_STOPS or (
                     n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node)
                     and n.args[0].target in _LAYOUT_STOPS))]
        targets = [n.target for n in stops]
        try:
            for n in stops:
                n.target = torch.ops.aten.bmm.default
            chain = original(self)
        finally:
            for n, target in zip(stops, targets):
                n.target = target
        for n in stops:  # the downstream pass can still reach an input through its other users
            chain.difference_update(a for a in n.all_input_nodes if a.target != torch.ops.aten.convolution.default)
        return chain

    find_nodes_prefer_channels_last._inductor_conv_original = original
    GraphLowering.find_nodes_prefer_channels_last = find_nodes_prefer_channels_last


def restore_channels_last_propagation() -> None:
    """Undo stop_channels_last_at: Inductor's own find_nodes_prefer_channels_last back on GraphLowering."""
    from torch._inductor.graph import GraphLowering

    _LAYOUT_STOPS.clear()
    original = getattr(GraphLowering.find_nodes_prefer_channels_last, "_inductor_conv_original", None)
    if original is not None:
        GraphLowering.find_nodes_prefer_channels_last = original


# ================================================================ the eager launch path
# Note [eager launch path] in kernels/launch.py, Note [eager fast path] in ops/eager.py.
def _missing_cuda(*args):  # a CPU-only torch build: the fast launch path is never taken there (tensors not on CUDA)
    raise RuntimeError("this torch build has no CUDA")


# The current CUDA device and its current raw stream (what Triton's launcher and Inductor's wrapper code use).
cuda_current_device = getattr(torch._C, "_cuda_getDevice", _missing_cuda)
cuda_current_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", _missing_cuda)
# Whether a functorch transform (vmap, grad, ...) or a TorchDispatchMode (FakeTensorMode, FlopCounterMode,
# functionalization, ...) is active: the eager ops then go through their custom ops, which those handle.
functorch_transforms_active = torch._C._are_functorch_transforms_active
dispatch_mode_depth = torch._C._len_torch_dispatch_stack
# Whether torch.autocast is on for any device: 0.1 us where torch.is_autocast_enabled(device_type) takes 0.4, so the
# eager attention's calls outside autocast pay only this (Note [eager attention under autocast]).  Dynamo traces it.
any_autocast_enabled = torch._C._is_any_autocast_enabled


def raw_function_apply(cls):
    """``cls.apply`` of a torch.autograd.Function without ``Function.apply``'s Python wrapper, which binds the
    arguments to the signature (for setup_context) and unwraps dead functorch wrappers: neither applies on the eager
    fast path (never under functorch; old-style forward(ctx, ...)).  Saves ~7 us a call."""
    return torch._C._FunctionBase.__dict__["apply"].__get__(None, cls)


def extension_build_directory(name: str) -> str:
    """Where torch.utils.cpp_extension.load builds (and locks) the extension `name` (kernels/native.py)."""
    from torch.utils.cpp_extension import _get_build_directory

    return _get_build_directory(name, verbose=False)


# --- the functional form of a mutating custom op, as AOTAutograd writes it (patterns/causal_conv1d_update.py,
# Note [decode state write-back]); Inductor's reinplacing pass and its decomposition handle it in 2.11 and 2.13.



__all__ = [
    "TORCH_VERSION",
    # pattern matcher and tracing
    "detect_fake_mode", "tracing", "select_decomp_table", "MULTIPLE", "CallFunction", "FailedMatch", "Ignored",
    "KeywordArg", "Match", "MultiOutputPattern", "PatternExpr", "PatternMatcherPass", "fwd_only", "gen_pattern",
    "is_match", "joint_fwd_bwd", "register_replacement", "stable_topological_sort", "FakeTensorMode",
    "unset_fake_temporarily", "guard_or_false", "statically_known_true", "auto_functionalized", "remove_noop_ops",
    "joint_fwd_bwd_with_decompositions", "apply_early_joint_patterns", "pattern_source", "pattern_namespace",
    "inductor_attention_binds_divisor", "values_recomputed",
    # Dynamo, AOTAutograd, Inductor config and caches
    "dynamo_counters", "inductor_config", "CustomGraphPass", "get_hash_for_files", "get_joint_custom_pre_pass",
    "set_joint_custom_pre_pass", "fx_graph_cache_disabled", "compiled_graph_caches_disabled", "inductor_cache_dir",
    "inductor_caches_disabled", "pin_compiled_frames", "aten_fallbacks", "run_and_get_code",
    # lowerings and templates
    "ir", "infer_dense_strides", "empty_strided", "fallback_handler", "full", "inductor_lowerings",
    "register_lowering", "sum_lowering", "to_dtype", "ExternKernelChoice", "SymbolicGridFn", "TritonTemplate",
    "autotune_select_algorithm", "realize_inputs", "V", "has_lowering", "remove_lowering", "triton_template",
    "extern_kernel_choice", "select_algorithm", "autotune_example_value", "size_hint", "wrapper_expr", "tma_compatible",
    "user_triton_kernel", "ceil_div", "value_hint",
    # the eager launch path
    "cuda_current_device", "cuda_current_raw_stream", "functorch_transforms_active", "dispatch_mode_depth",
    "any_autocast_enabled",
    "raw_function_apply", "extension_build_directory",
]
