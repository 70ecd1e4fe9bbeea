"""Shared test helpers: compile with our passes on CPU, count rewrites, record and normalise rewritten graphs.

Like ``TestPatternMatcher.common`` in PyTorch's test_pattern_matcher.py: Inductor's FX graph and AOTAutograd caches
off (a hit skips custom passes), counters cleared, eager vs compiled compared, exact rewrite counts asserted by the
caller.  Inductor's C++ kernel cache and our pattern cache stay on (``compiled_graph_caches_disabled``): neither can
skip our pass, and ``force_disable_caches`` would compile every C++ kernel of every test afresh (a new cache folder
per compile, ~3-8 s a kernel on the 2-core CI machine).
"""
from __future__ import annotations

import contextlib
import os
import re

import torch

import inductor_conv
from inductor_conv._compat import aten_fallbacks, compiled_graph_caches_disabled, inductor_lowerings, remove_lowering
from inductor_conv.patterns import graph_pass


def interpreter_rounds_bf16_to_nearest() -> None:
    """Note [interpreter bf16 rounding]
    Make the Triton interpreter round float32 -> bfloat16 to nearest even, as the GPU does (``cvt.rn.bf16.f32``, and
    torch's ``.to(torch.bfloat16)``). Triton 3.6's interpreter (``InterpreterBuilder.cast_impl``) converts it by
    dropping the low 16 bits, i.e. toward zero: every bf16 value a kernel stores or feeds to a ``tl.dot`` comes out up
    to one bf16 ulp small in magnitude, on average half an ulp (a bias of -2.7e-3 relative on uniform [0, 1) inputs,
    against ~0 for round-to-nearest). On the CPU our kernels' bf16 results were therefore less accurate than on the
    GPU: at the attention op, against a float64 reference, 2.97e-3 relative where eager's spelling gets 2.43e-3
    (B2 H4 S16 D16, scores ~N(0, 1)); a bf16 comparison against eager measured the interpreter. The conversion here
    is the standard bit trick (add 0x7FFF plus the lowest kept bit, then drop 16 bits), NaN kept a quiet NaN; every
    other cast is the interpreter's. Installed by conftest.py for the tests and by the diagnostics that compare bf16
    accuracy on the CPU; a no-op unless TRITON_INTERPRET=1, and where the interpreter has no such method."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = getattr(interpreter, "InterpreterBuilder", None)
    cast_impl = getattr(builder, "cast_impl", None)
    if cast_impl is None or getattr(cast_impl, "rounds_bf16_to_nearest", False):
        return

    def rounded_cast(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            values = np.asarray(src.data, dtype=np.float32)
            bits = values.view(np.uint32).astype(np.uint64)
            out = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            out = np.where(np.isnan(values), ((bits >> 16) | 0x40).astype(np.uint16), out)
            return interpreter.TensorHandle(out, dst_type.scalar)
        return cast_impl(self, src, dst_type)

    rounded_cast.rounds_bf16_to_nearest = True
    builder.cast_impl = rounded_cast


@contextlib.contextmanager
def saved_lowerings(ops):
    """Inductor's lowering table for ``ops`` restored on exit (an op without a lowering before has none after), and
    the lowerings ours replaced (what disable() would put back)."""
    from inductor_conv import lowerings

    before = {op: inductor_lowerings.get(op) for op in ops}
    replaced = dict(lowerings._REPLACED)
    try:
        yield
    finally:
        for op, fn in before.items():
            if fn is None:
                remove_lowering(op)
            else:
                inductor_lowerings[op] = fn
        lowerings._REPLACED.clear()
        lowerings._REPLACED.update(replaced)


@contextlib.contextmanager
def recording_graphs():
    """Yield a list that receives, for every graph our pass sees, its normalised text after the rewrite."""
    seen: list[str] = []

    def observe(graph):
        seen.append(normalize_graph(graph))

    graph_pass.GRAPH_OBSERVERS.append(observe)
    try:
        yield seen
    finally:
        graph_pass.GRAPH_OBSERVERS.remove(observe)


def normalize_graph(graph: torch.fx.Graph) -> str:
    """Readable graph text without file paths, device strings or memory addresses, stable across runs."""
    # the graph's own module as root: it holds get_attr targets (tensor constants) that a bare Module lacks
    gm = torch.fx.GraphModule(graph.owning_module or torch.nn.Module(), graph)
    text = gm.print_readable(print_output=False)
    text = re.sub(r"\s*#.*", "", text)  # drop per-node comments (source file paths)
    text = re.sub(r"device\(type='(cpu|cuda)'(, index=\d+)?\)", "device", text)
    text = re.sub(r"0x[0-9a-f]+", "0x?", text)
    text = re.sub(r"class GraphModule\(torch.nn.Module\)", "class Graph", text)
    text = re.sub(r"\n\s*\n", "\n", text)
    return text.strip() + "\n"


def no_cpu_codegen(*devices: str):
    """When every device is a CPU, Inductor lowers the ops around ours to calls of the ATen ops themselves
    (``_compat.aten_fallbacks``): what a model-level test checks (the rewrites, the partition, our ops' values) is
    unchanged, and generating and compiling C++ for the rest is most of a CPU compile's time. Otherwise, nothing."""
    cpu = all(torch.device(d).type == "cpu" for d in devices)
    return aten_fallbacks() if cpu else contextlib.nullcontext()


def compile_and_run(fn, *args, dynamic=False, device_types=("cpu",), fullgraph=True):
    """Run fn compiled with our passes (caches off; on a CPU, no C++ for the ops around ours: no_cpu_codegen);
    return (output, counters, recorded graph texts)."""
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with (compiled_graph_caches_disabled(), no_cpu_codegen(*device_types), inductor_conv.enabled(device_types),
          recording_graphs() as graphs):
        out = torch.compile(fn, backend="inductor", dynamic=dynamic, fullgraph=fullgraph)(*args)
    return out, inductor_conv.counters(), graphs


def ops_in(graph_text: str) -> list[str]:
    """The inductor_conv ops a recorded graph calls, in order."""
    return re.findall(r"torch\.ops\.inductor_conv\.(\w+)", graph_text)


def op_arg_shapes(text: str) -> list[str]:
    """The shapes of attention_fwd's q, k, v arguments in a recorded graph text."""
    (args,) = re.findall(r"attention_fwd\.default\((\w+), (\w+), (\w+),", text)
    return [re.search(rf"\b{a}: \"\w+\[([\d, ]+)\]\"", text).group(1) for a in args]


def repeat_kv(x, n_rep):
    """HF Llama's repeat_kv: (B, Hkv, S, D) -> (B, Hkv·n_rep, S, D) through expand and reshape, the GQA spelling the
    attention pattern turns back into native GQA."""
    if n_rep == 1:
        return x
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


def eager_dropout_seed(manual_seed: int, device) -> torch.Tensor:
    """The dropout seed the eager op's fast path uses right after ``torch.manual_seed(manual_seed)``: drawn on the
    host from the CUDA generator (Note [host dropout seed] in kernels/attention.py), torch.randint's first number
    elsewhere (ops/attention.py's dropout_seed, also the custom op's and the compiled graphs' draw)."""
    from inductor_conv.ops.attention import _SEED_HIGH, host_dropout_seed

    torch.manual_seed(manual_seed)
    value = host_dropout_seed(torch.device(device))
    if value is None:
        return torch.randint(0, _SEED_HIGH, (1,), dtype=torch.int64, device=device)
    return torch.tensor([value], dtype=torch.int64, device=device)


def compiled_fullgraph(fn):
    """fn under torch.compile(fullgraph=True) with Inductor, Dynamo's caches reset first (a public op called inside
    a compiled graph, without our passes)."""
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend="inductor")


def fused_activations(graphs) -> list[str]:
    """The activation of each causal_conv1d_fwd call in recorded graph texts, in order: its last positional
    argument ('silu' / 'none'; a y leaving the graph also carries contiguous_out)."""
    text = "".join(graphs).replace('"', "'")
    return re.findall(r"causal_conv1d_fwd\.default\([^)]*'(\w+)'(?:, contiguous_out = True)?\)", text)


def assert_as_close_as_eager(got, eager, reference, what=None) -> None:
    """Mixed precision: each tensor of ``got`` (compiled under autocast) is as close to its float64 ``reference`` as
    eager autocast's ``eager`` is: a relative error (Frobenius norm) within 3x eager's plus 1e-2 (bf16 keeps 8 bits,
    4e-3 a rounding).  Both round to bf16, at different places, so the comparison is of the whole tensor: the
    largest single error of a tiny model's gradient is one entry's luck.  E.g. eager T5 runs its softmax and its
    backward in fp32 (``softmax(scores.float())``) on its own dP, while a flash backward takes Δ = rowsum(dO ∘ O)
    from the bf16 output (as FlashAttention does): T5's gradients then have 1.2-1.7x eager's relative error and up
    to 3.75x its largest entry error, on CPU and GPU alike (benchmarks/diagnostics/autocast_error.py)."""
    for i, (g, e, r) in enumerate(zip(got, eager, reference, strict=True)):
        norm = r.norm().item() or 1.0
        err, err_eager = (g.double() - r).norm().item() / norm, (e.double() - r).norm().item() / norm
        assert err <= 3 * err_eager + 1e-2, (what, i, err, err_eager)



class PretendCuda(torch.Tensor):
    """A CPU tensor that says it is on a GPU: what ops/attention.py's _cudnn_eager reads of one (is_cuda, dtype,
    shape, strides, data pointer), so its conditions can be checked on the CPU."""

    @property
    def is_cuda(self):
        return True


def assert_cudnn_switches_refuse(monkeypatch, admitted, forget_capability=lambda: None) -> None:
    """Both cuDNN gates (the lowerings' _use_cudnn and the eager op's _cudnn_eager) share the conditions of
    heuristics.attention.cudnn_attention_form (Note [cuDNN route]): `admitted()` (a call of the gate on a form it
    admits) turns False on a pre-sm_90 GPU, under torch.use_deterministic_algorithms (cuDNN's backward is not
    deterministic; SDPA refuses it in this mode too) and with config.attention_cudnn off, and True again after each.
    forget_capability: clears a gate's cached compute capability before the capability changes."""
    for capability in ((8, 0), (9, 0)):
        forget_capability()
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        assert admitted() == (capability >= (9, 0))
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert not admitted()
    finally:
        torch.use_deterministic_algorithms(was)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)
    assert not admitted()
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", True)
    assert admitted()


def node_below_views(out) -> str:
    """The name of the first autograd node below out's view nodes: the node that made a tensor the eager attention
    op returns, maybe through views (ops/attention.py's _dout_in_layout: SDPA's cuDNN node on the cuDNN route
    without the native extension; its CudnnAttentionBackward with it)."""
    fn = out.grad_fn
    while type(fn).__name__ in ("ViewBackward0", "PermuteBackward0"):
        fn = fn.next_functions[0][0]
    try:
        return fn.name()  # a C++ node's (the native extension's nodes share one type)
    except RuntimeError:  # a Python Function's node has no name()
        return type(fn).__name__


def rows_apart(S, D, n_tensors, dtype, device):
    """n_tensors (1, 1, S, D) views of one storage whose rows lie `stride` elements apart, (S - 1) * stride >= 2^31:
    each (b, h) slice spans 2^31 elements (Note [int64 offsets] in kernels/attn_common.py).  Only the rows are
    written; the rest of the ~4 GiB (bf16) allocation is never touched, so it costs little real memory.  None when
    the allocation is refused."""
    stride = -(-(2**31) // (S - 1) // 8) * 8 + 8
    try:
        store = torch.empty((S - 1) * stride + n_tensors * D, dtype=dtype, device=device)
    except RuntimeError:
        return None
    views = [store.as_strided((1, 1, S, D), (0, 0, stride, 1), t * D) for t in range(n_tensors)]
    g = torch.Generator().manual_seed(5)
    for view in views:
        view.copy_(torch.randn(1, 1, S, D, generator=g).to(dtype))
    return views
