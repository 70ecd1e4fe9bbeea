"""Lowerings of the causal conv1d ops (lowerings/causal_conv1d_silu.py).

CPU: registration is idempotent; the template bodies are rendered with stand-ins for Inductor's hooks (def_kernel,
size, stride, store_output) and run in the Triton interpreter against the float64 reference, so their indexing is
tested without a GPU; compiling on CPU keeps the ops as fallback kernels. GPU (marked): Inductor picks the
`inductor_conv_causal_conv1d_*` templates, results match float64, the backward is deterministic.
Tolerances as in test_kernels_causal_conv1d.py: 1e-5 of the largest reference value for fp32 results (fp32
accumulation of <= 100 products, approximate exp / division, 10x margin), 1e-2 for bf16 (one rounding, 2^-8,
2.5x margin), 2e-3 for fp16 (2^-11, 4x margin).
"""
import importlib.util
import itertools
import re

import jinja2
import pytest
import torch
import triton
from helpers import saved_lowerings

import inductor_conv.ops  # noqa: F401  (registers the custom ops)
from inductor_conv._compat import compiled_graph_caches_disabled, has_lowering, inductor_lowerings
from inductor_conv.heuristics.conv import conv_geometry
from inductor_conv.kernels import conv_math
from inductor_conv.lowerings import causal_conv1d_silu as lowering
from inductor_conv.reference.conv import causal_conv1d_ref

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
OPS = torch.ops.inductor_conv
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def _runs_template(code, direction):
    """Whether generated code holds our forward / backward template: Inductor names template kernels
    triton_tem_fused_*, so look for the conv_math helper the template body *calls* (fwd_cols / bwd_cols, called in
    both layouts' branches). Every template appends all of conv_math's definitions, so a bare name (or "def ...")
    cannot tell the two templates apart; the extern fallback calls the launcher and carries no kernel source."""
    return re.search(rf"(?<!def ){direction}_cols\(", code) is not None


@pytest.fixture
def registered():
    """Our lowerings installed for the test, Inductor's lowering table restored afterwards."""
    with saved_lowerings(lowering.OPS):
        lowering.register()
        yield


def make_inputs(B, C, L, K, *, dtype=torch.float32, layout="bcl", seq=False, init=False, seed=0, device=DEVICE):
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, dt=dtype):
        return torch.randn(*shape, generator=g).to(dt).to(device)

    def activation_like():
        return rand(B, C, L) if layout == "bcl" else rand(B, L, C).transpose(1, 2)  # channel-last view

    args = dict(x=activation_like(), weight=rand(C, K), bias=rand(C),
                seq_idx=(_seq_idx(B, L, g, pad=seq == "pad").to(device) if seq else None),
                initial_states=rand(B, C, K - 1) if init else None)
    return args, activation_like()


def _seq_idx(B, L, g, pad):
    """Packed sequence ids, non-decreasing; pad: the last third of each row is padding (-1, Dao's layout) and so is
    a run of -2 in the first quarter (any negative id is)."""
    seq_idx = torch.randint(0, 3, (B, L), generator=g).sort(1).values.to(torch.int32)
    if pad:
        seq_idx[:, L - L // 3:] = -1
        seq_idx[:, L // 4:L // 4 + 3] = -2
    return seq_idx


def reference(args, dy, activation):
    leaves = {k: (v.detach().double().requires_grad_() if v is not None and v.is_floating_point() else v)
              for k, v in args.items()}
    y = causal_conv1d_ref(**leaves, activation=activation)
    wrt = [k for k in ("x", "weight", "bias", "initial_states") if leaves[k] is not None]
    return y, dict(zip(wrt, torch.autograd.grad(y, [leaves[k] for k in wrt], dy.double())))


def assert_close(actual, expected, tol, name):
    scale = max(expected.abs().max().item(), 1e-30)
    torch.testing.assert_close(actual.double(), expected, rtol=tol, atol=tol * scale, msg=name)


def test_register_is_idempotent(registered):
    first = [inductor_lowerings[op] for op in lowering.OPS]
    lowering.register()
    assert [inductor_lowerings[op] for op in lowering.OPS] == first
    assert all(has_lowering(op) for op in lowering.OPS)


def test_templates_carry_conv_math():
    """The helper text appended to the templates is conv_math's functions, without its imports."""
    source = lowering._helper_source()
    for name in ("silu_grad_from_z", "split_cols", "fwd_cols", "bwd_cols", "dinit_tile"):
        assert f"def {name}(" in source
        assert hasattr(conv_math, name)
    assert "import " not in source


# ---------------------------------------------------------------------------------------------------------------
# Template bodies in the interpreter
# ---------------------------------------------------------------------------------------------------------------
def render(name, named, out, constexprs, tmp_path):
    """The template as a plain @triton.jit kernel: sizes and strides inlined, store_output a tl.store into out."""

    def def_kernel(*names):
        body = "".join(f"    {k}: tl.constexpr = {v if k == 'INDEX_DTYPE' else repr(v)}\n"
                       for k, v in constexprs.items())
        return f"@triton.jit\ndef kernel({', '.join(list(names) + ['OUT'])}):\n" + body

    def store_output(indices, val, mask, indent_width=4, val_shape=None):
        offset = " + ".join(f"{i} * {s}" for i, s in zip(indices, out.stride()))
        return f"tl.store(OUT + {offset}, {val}.to(OUT.dtype.element_ty), mask={mask})"

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    text = env.from_string(lowering._load(name)).render(
        def_kernel=def_kernel, size=lambda n, d: str(named[n].shape[d]), stride=lambda n, d: str(named[n].stride(d)),
        store_output=store_output, **constexprs)
    path = tmp_path / f"{name}.py"
    path.write_text("import triton\nimport triton.language as tl\n\n" + text)
    spec = importlib.util.spec_from_file_location(f"rendered_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.kernel


@pytest.mark.skipif(DEVICE != "cpu", reason="interpreter check of the template text")
@pytest.mark.parametrize("layout,activation,seq,init,K,bias", [
    ("bcl", "silu", False, False, 4, True), ("blc", "silu", False, True, 4, True),
    ("bcl", "none", True, False, 3, True), ("blc", "silu", True, False, 5, True),
    ("bcl", "silu", False, True, 5, False), ("blc", "none", False, False, 3, False),
    ("blc_t", "silu", False, True, 4, True), ("blc_t", "none", True, False, 3, False),
    ("bcl", "silu", "pad", False, 4, True), ("blc", "silu", "pad", False, 3, True),
    ("blc_t", "silu", "pad", False, 4, True)])
def test_template_bodies_match_reference(layout, activation, seq, init, K, bias, tmp_path):
    """K = 3 and 5 make the padded widths (KW, KP: powers of two) differ from K; the constexprs come from the
    lowering's own _template_kwargs.  "blc_t": channel-last x, y stored contiguous (Note [conv output layout]) by
    tiles of 16 rows.  seq "pad": negative ids (padding), where y and dx must be 0 and dy reaches nothing (the
    reference's gradients are autograd of the padded y)."""
    B, C, L = 2, 5, 37
    args, dy = make_inputs(B, C, L, K, layout=layout.removesuffix("_t"), seq=seq, init=init, seed=1)
    if not bias:
        args["bias"] = None
    # several tiles per program: 4 lanes of 4 positions (bcl) or 8 rows (blc); chunks of 2 or 3 tiles
    block_t = {"bcl": 16, "blc": 8, "blc_t": 16}[layout]
    g = conv_geometry(layout, torch.float32, K, "fwd", dict(block_c=4, block_t=block_t))
    n_chunks = 2
    constexprs = lowering._template_kwargs(g, K, args["bias"], args["seq_idx"], args["initial_states"], activation)
    assert constexprs.pop("FAST")  # the templates run on CUDA only: PTX approximations the interpreter cannot run
    constexprs["FAST"] = False
    del constexprs["num_stages"], constexprs["num_warps"]
    constexprs["N_CHUNKS"] = n_chunks
    constexprs["INDEX_DTYPE"] = "tl.int64" if init else "tl.int32"  # Inductor's define: the store offsets' dtype
    named = {"X": args["x"], "W": args["weight"]}
    named.update({"BIAS": args["bias"]} if bias else {})
    named.update({"SEQ_IDX": args["seq_idx"]} if seq else {})
    named.update({"INIT": args["initial_states"]} if init else {})
    y = torch.full_like(args["x"], float("nan"))
    if layout == "blc_t":
        y = torch.full(args["x"].shape, float("nan"))
        assert not args["x"].is_contiguous() and y.is_contiguous()
    render("inductor_conv_causal_conv1d_fwd", named, y, constexprs, tmp_path)[
        (triton.cdiv(C, g.block_c), n_chunks, B)](*named.values(), y)

    if layout == "blc_t":  # the tall rows are a forward tile: the backward takes the channel-last tile and, as
        # in training where y left the graph in eager's layout, reads a contiguous dy by blocks (DY_T)
        g = conv_geometry("blc", torch.float32, K, "bwd", dict(block_c=4, block_t=8))
        dy = dy.contiguous()
        assert not args["x"].is_contiguous()
    constexprs.update(lowering._template_kwargs(g, K, args["bias"], args["seq_idx"], args["initial_states"],
                                                activation, dy_t=layout == "blc_t"), FAST=False)
    del constexprs["num_stages"], constexprs["num_warps"]
    part = torch.full((B * n_chunks, C, K + 1), float("nan"))
    named_bwd = dict(named, DY=dy, PART=part)
    dinit = torch.full_like(args["initial_states"], float("nan")) if init else None
    named_bwd.update({"DINIT": dinit} if init else {})
    dx = torch.full_like(args["x"], float("nan"))
    render("inductor_conv_causal_conv1d_bwd", named_bwd, dx, constexprs, tmp_path)[
        (triton.cdiv(C, g.block_c), n_chunks, B)](*named_bwd.values(), dx)

    y_ref, grads = reference(args, dy, activation)
    assert_close(y, y_ref, 1e-5, "y")
    assert_close(dx, grads["x"], 1e-5, "dx")
    assert_close(part.sum(0)[:, :K], grads["weight"], 1e-5, "dw")
    if bias:
        assert_close(part.sum(0)[:, K], grads["bias"], 1e-5, "dbias")
    if init:
        assert_close(dinit, grads["initial_states"], 1e-5, "dinit")
    if seq == "pad":
        pad = (args["seq_idx"] < 0)[:, None, :].expand_as(y)
        assert y[pad].eq(0).all() and dx[pad].eq(0).all()


# ---------------------------------------------------------------------------------------------------------------
# Through Inductor
# ---------------------------------------------------------------------------------------------------------------
def _fwd(x, weight, bias):
    return OPS.causal_conv1d_fwd(x, weight, bias, None, None, "silu")


def _bwd(x, weight, bias, dy):
    return OPS.causal_conv1d_bwd(x, weight, bias, None, None, dy, "silu", True)


def compile_and_run(fn, *args, mode=None):
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    with compiled_graph_caches_disabled():
        out, code = run_and_get_code(torch.compile(fn, mode=mode, fullgraph=True), *args)
    return out, "\n".join(code)


def test_stride_order_of_symbolic_strides():
    """Under dynamic=True strides are expressions such as C * s1 vs s1; they sort only through the shape env (the
    lowering once sorted them without it, which raises)."""
    import types

    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from inductor_conv._compat import V

    env = ShapeEnv()  # dynamic=True makes C symbolic too: C * L vs L cannot be decided from sympy assumptions
    C, L = (env.create_symbol(hint, ConstantSource(name)) for hint, name in ((64, "C"), (2048, "L")))
    node = lambda *stride: types.SimpleNamespace(get_stride=lambda: list(stride))  # noqa: E731
    with V.set_graph_handler(types.SimpleNamespace(sizevars=types.SimpleNamespace(shape_env=env))):
        assert lowering._stride_order(node(C * L, L, 1)) == [2, 1, 0]  # (B, C, L) contiguous
        assert lowering._stride_order(node(C * L, 1, C)) == [2, 0, 1]  # the channel-last view


def test_template_gate_keeps_the_batch_within_the_grid_axis(monkeypatch):
    """The templates put the batch on grid axis 2 (CUDA: <= 65535 rows); a larger batch, static or by a symbolic
    hint, goes to the op, whose launchers run it in slices. Checked on CPU with fake IR nodes (cap lowered to 4)."""
    import types

    from torch._dynamo.source import ConstantSource
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from inductor_conv._compat import V
    from inductor_conv.kernels import causal_conv1d as kernels

    monkeypatch.setattr(kernels, "MAX_GRID_BATCH", 4)
    env = ShapeEnv(duck_shape=False)

    def node(*size, dtype=torch.bfloat16):
        return types.SimpleNamespace(get_size=lambda: list(size), get_dtype=lambda: dtype,
                                     get_device=lambda: torch.device("cuda", 0))

    graph = types.SimpleNamespace(sizevars=SizeVarAllocator(env))
    weight = node(64, 4, dtype=torch.float32)
    with V.set_graph_handler(graph):
        assert lowering._use_template(node(4, 64, 100), weight)
        assert not lowering._use_template(node(5, 64, 100), weight)
        small, big = (env.create_symbol(hint, ConstantSource(name)) for hint, name in ((3, "b_small"), (9, "b_big")))
        assert lowering._use_template(node(small, 64, 100), weight)  # under a guard b <= 4
        assert not lowering._use_template(node(big, 64, 100), weight)


@pytest.mark.skipif(DEVICE != "cpu", reason="the CPU path")
def test_cpu_compile_falls_back(registered):
    args, dy = make_inputs(2, 3, 20, 4, device="cpu")
    y, code = compile_and_run(_fwd, args["x"], args["weight"], args["bias"])
    assert "inductor_conv_causal_conv1d_fwd" not in code  # neither the template nor the extern choice
    assert "inductor_conv.causal_conv1d_fwd" in code  # the op itself, as a fallback kernel
    assert_close(y, reference(args, dy, "silu")[0], 1e-5, "y")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_gpu_templates_chosen_and_match(registered, dtype, layout):
    args, dy = make_inputs(3, 80, 1000, 4, dtype=dtype, layout=layout, seed=2)
    x, w, b = args["x"], args["weight"], args["bias"]
    y, code = compile_and_run(_fwd, x, w, b)
    assert _runs_template(code, "fwd")
    (dx, dw, db, dinit), code_bwd = compile_and_run(_bwd, x, w, b, dy)
    assert _runs_template(code_bwd, "bwd")
    y_ref, grads = reference(args, dy, "silu")
    assert y.stride() == x.stride() and dx.stride() == x.stride()
    assert_close(y, y_ref, TOL[dtype], "y")
    assert_close(dx, grads["x"], TOL[dtype], "dx")
    assert_close(dw, grads["weight"], TOL[dtype], "dw")
    assert_close(db, grads["bias"], TOL[dtype], "db")
    assert dinit.numel() == 0


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_gpu_dynamic_shapes(registered, layout):
    """Symbolic B and L: the lowering compares symbolic strides (through the shape env) and sizes its chunks from
    hints; a second length reuses the graph (one compiled frame), and the graph runs our template."""
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    with compiled_graph_caches_disabled():
        compiled = torch.compile(_bwd, backend=counter, dynamic=True, fullgraph=True)
        for L in (700, 1100):
            args, dy = make_inputs(2, 64, L, 4, dtype=torch.bfloat16, layout=layout, seed=L)
            if L == 700:  # run_and_get_code resets Dynamo first: only around the first call
                (dx, dw, db, _), code = run_and_get_code(compiled, args["x"], args["weight"], args["bias"], dy)
                assert _runs_template("\n".join(code), "bwd")
            else:
                dx, dw, db, _ = compiled(args["x"], args["weight"], args["bias"], dy)
            _, grads = reference(args, dy, "silu")
            assert_close(dx, grads["x"], TOL[torch.bfloat16], "dx")
            assert_close(dw, grads["weight"], TOL[torch.bfloat16], "dw")
    assert counter.frame_count == 1


@pytest.mark.gpu
@pytest.mark.parametrize("K", [4, 9, 12])
def test_gpu_backward_dy_in_the_other_layout(registered, K):
    """x the channel-last view, dy contiguous (as AOTAutograd hands over the gradient of a y that left the graph in
    eager's layout): the row tiles read dy by blocks of 8 positions (DY_T) when the look-ahead of K - 1 rows fits in
    one, else the lowering copies dy into x's layout; results and dx's strides are the same either way."""
    args, dy = make_inputs(2, 96, 700, K, dtype=torch.bfloat16, layout="blc", seed=5)
    dy = dy.contiguous()
    x, w, b = args["x"], args["weight"], args["bias"]
    assert dy.stride() != x.stride()
    (dx, dw, db, _), code = compile_and_run(_bwd, x, w, b, dy)
    assert _runs_template(code, "bwd")
    assert ("DY_T : tl.constexpr = True" in code) == (K - 1 <= 8)
    _, grads = reference(args, dy, "silu")
    assert dx.stride() == x.stride()
    assert_close(dx, grads["x"], TOL[torch.bfloat16], "dx")
    assert_close(dw, grads["weight"], TOL[torch.bfloat16], "dw")
    assert_close(db, grads["bias"], TOL[torch.bfloat16], "db")


@pytest.mark.gpu
@pytest.mark.parametrize("seq,init", [(True, False), (False, True)], ids=["seq_idx", "initial_states"])
def test_gpu_optional_inputs(registered, seq, init):
    args, dy = make_inputs(2, 64, 300, 4, dtype=torch.bfloat16, seq=seq, init=init, seed=3)

    def both(x, weight, bias, seq_idx, initial_states, dy):
        y = OPS.causal_conv1d_fwd(x, weight, bias, seq_idx, initial_states, "silu")
        return (y,) + tuple(OPS.causal_conv1d_bwd(x, weight, bias, seq_idx, initial_states, dy, "silu", True))

    (y, dx, dw, db, dinit), code = compile_and_run(both, *args.values(), dy)
    assert _runs_template(code, "fwd") and _runs_template(code, "bwd")
    y_ref, grads = reference(args, dy, "silu")
    assert_close(y, y_ref, 1e-2, "y")
    assert_close(dx, grads["x"], 1e-2, "dx")
    assert_close(dw, grads["weight"], 1e-2, "dw")
    if init:
        assert_close(dinit, grads["initial_states"], 1e-2, "dinit")


@pytest.mark.gpu
def test_gpu_backward_deterministic_and_max_autotune(registered):
    """The compiled backward is bit-identical across runs; max-autotune picks among the tiles (and the extern
    forward) and still matches."""
    args, dy = make_inputs(4, 256, 2048, 4, dtype=torch.bfloat16, seed=4)
    x, w, b = args["x"], args["weight"], args["bias"]
    torch._dynamo.reset()
    with compiled_graph_caches_disabled():
        compiled = torch.compile(_bwd, fullgraph=True)
        first = compiled(x, w, b, dy)
        for _ in range(3):
            for a, c in zip(first, compiled(x, w, b, dy)):
                assert torch.equal(a, c)
    y, code = compile_and_run(_fwd, x, w, b, mode="max-autotune")
    assert_close(y, reference(args, dy, "silu")[0], 1e-2, "y")
