"""Lowerings of inductor_conv::causal_conv1d_fwd / causal_conv1d_bwd into Inductor Triton templates.

On CUDA (x fp32 / fp16 / bf16, K <= 33) each op becomes `inductor_conv_causal_conv1d_*` TritonTemplate choices: the
default tile of inductor_conv/heuristics/conv.py, or several tiles under mode="max-autotune". The forward adds an
ExternKernelChoice running the eager Triton launcher (under max-autotune, or when no tile applies). The templates
append the @triton.jit helpers of kernels/conv_math.py, so the math is the eager kernels' math.

The backward template writes dx through store_output and two mutated inputs (NOTE:[TritonTemplates with multiple
outputs] in torch/_inductor/ir.py): the dw / dbeta partial rows [B * n_chunks, C, K + 1] and d(initial_states); the
rows are summed with Inductor's sum lowering in a fixed order, so the result is deterministic. It has no extern
choice: an extern kernel cannot declare the partial rows it writes. z is recomputed, never saved (Note [conv
backward recomputes z] in ops/causal_conv1d.py). Elsewhere both ops stay Inductor's fallback kernels.
"""
from __future__ import annotations

import ast
from pathlib import Path

import sympy
import torch

import inductor_conv.ops  # noqa: F401  (registers the custom ops)
from inductor_conv import config
from inductor_conv._compat import (
    extern_kernel_choice,
    SymbolicGridFn,
    V,
    empty_strided,
    fallback_handler,
    full,
    inductor_config,
    inductor_lowerings,
    ir,
    select_algorithm,
    size_hint,
    sum_lowering,
    to_dtype,
    triton_template,
)
from inductor_conv.heuristics.conv import conv_autotune_tiles, conv_chunks, conv_geometry, conv_tile, num_sms
from inductor_conv.kernels import causal_conv1d as conv_kernels, conv_math
from inductor_conv.kernels.causal_conv1d import causal_conv1d_fwd
from inductor_conv.lowerings import install, stride_order as _stride_order

aten = torch.ops.aten
FWD_OP = torch.ops.inductor_conv.causal_conv1d_fwd.default
BWD_OP = torch.ops.inductor_conv.causal_conv1d_bwd.default
OPS = (FWD_OP, BWD_OP)
MAX_K = 33  # column tiles keep N >= K - 1 lanes and N <= 32: the lane shifts stay inside one warp
_OPTIONAL = ("bias", "seq_idx", "initial_states")


def _helper_source() -> str:
    """The @triton.jit functions of kernels/conv_math.py, as text (the math lives there only)."""
    text = Path(conv_math.__file__).read_text()
    lines = text.splitlines()
    funcs = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    return "\n\n\n".join("\n".join(lines[min([d.lineno for d in f.decorator_list] + [f.lineno]) - 1 : f.end_lineno])
                         for f in funcs)


def _load(name: str) -> str:
    """A template file followed by conv_math's helpers (raw: their text is not jinja)."""
    template = (Path(__file__).parent / "templates" / f"{name}.py.jinja").read_text()
    return template + "\n{% raw %}\n\n" + _helper_source() + "\n{% endraw %}\n"


@SymbolicGridFn
def causal_conv1d_grid(B, C, L, meta, *, cdiv):
    """One program per (BC channels, chunk of L, batch row); it loops over its chunk's tiles (backward: and writes
    one partial row of dw / dbeta, so there are B * N_CHUNKS rows). N_CHUNKS fills the GPU with about waves x #SMs
    programs (inductor_conv/heuristics/conv.py conv_chunks)."""
    return (cdiv(C, meta["BC"]), meta["N_CHUNKS"], B)


FWD_TEMPLATE = triton_template("inductor_conv_causal_conv1d_fwd", causal_conv1d_grid,
                               _load("inductor_conv_causal_conv1d_fwd"))
BWD_TEMPLATE = triton_template("inductor_conv_causal_conv1d_bwd", causal_conv1d_grid,
                               _load("inductor_conv_causal_conv1d_bwd"))


def _fwd_eager(*tensors, present, activation, out):
    """The eager launcher as an extern choice: `tensors` are x, weight and the optional inputs named in `present`."""
    given = dict(zip(("x", "weight") + tuple(present), tensors))
    causal_conv1d_fwd(given["x"], given["weight"], *(given.get(n) for n in _OPTIONAL), activation, out=out)
    return out


FWD_EXTERN = extern_kernel_choice(_fwd_eager, name="inductor_conv_causal_conv1d_fwd_eager", has_out_variant=True)


# ---------------------------------------------------------------------------------------------------------------
# Shared steps
# ---------------------------------------------------------------------------------------------------------------
def _use_template(x, weight) -> bool:
    """CUDA, a float x the kernels take, a width K the warp-sized edge tiles cover, a non-empty x (the chunk count
    divides by B, C and L; the eager op returns early on an empty x), and a batch the grid's third axis holds (CUDA
    caps it at 65535; the eager op launches larger batches in slices).  K is a constexpr of the kernels: under
    dynamic=True it is specialised (a guard K == k), as a model's conv width is a constant; a symbolic batch gets a
    guard B <= 65535."""
    floats = (torch.float32, torch.float16, torch.bfloat16)
    sizevars = V.graph.sizevars
    return (
        x.get_device().type == "cuda"
        and x.get_dtype() in floats
        and weight.get_dtype() in floats
        and sizevars.guard_int(weight.get_size()[1]) <= MAX_K
        and all(sizevars.statically_known_gt(n, 0) for n in x.get_size())
        and sizevars.guard_or_false(sympy.Le(x.get_size()[0], conv_kernels.MAX_GRID_BATCH))
    )


def _fixed(node):
    """Realize an input and freeze its layout: the kernels take any strides, but must know them."""
    if node is None:
        return None
    node = ir.ExternKernel.realize_input(node)
    if isinstance(node.get_layout(), ir.FlexibleLayout):
        node.freeze_layout()
    return node


def _like_x(x) -> ir.FixedLayout:
    """The layout of empty_like(x) (the ops' fake impls): dense, in x's stride order."""
    stride = ir.FlexibleLayout.stride_ordered(x.get_size(), _stride_order(x))
    return ir.FixedLayout(x.get_device(), x.get_dtype(), x.get_size(), stride)


def _channel_last(x) -> bool:
    return not V.graph.sizevars.statically_known_equals(x.get_stride()[2], 1)


def _tiles(direction: str, x, K: int, other_bcl: bool = False):
    """Geometries to try: the default tile, or all autotune tiles under max-autotune.  other_bcl: y (forward) or
    dy (backward) is laid out (B, C, L) while x is channel-last ("blc_t" tiles of inductor_conv/heuristics/conv.py)."""
    layout = "blc" if _channel_last(x) else "bcl"
    if layout == "blc" and other_bcl:
        layout = "blc_t"
    tiles = conv_autotune_tiles(direction, layout, x.get_dtype(), K) if inductor_config.max_autotune else [
        conv_tile(direction, layout, x.get_dtype(), K)]
    return [conv_geometry(layout, x.get_dtype(), K, direction, t) for t in tiles]


def _template_kwargs(g, K: int, bias, seq_idx, initial_states, activation: str, dy_t: bool | None = None) -> dict:
    """The templates' constexprs; dy_t: None for the forward, else the backward's DY_T (it reads a dy whose
    positions are contiguous while x's channels are; row tiles only) and its loop's UNROLL (ConvTile.unroll)."""
    kwargs = dict(
        num_stages=1, num_warps=g.num_warps, K=K, KW=_pow2(K), KP=_pow2(max(K - 1, 1)), BC=g.block_c,
        BT=g.block_t, N=g.lanes, V=g.vec, HAS_BIAS=bias is not None, HAS_SEQ=seq_idx is not None,
        HAS_INIT=initial_states is not None, SILU=activation == "silu", ROWS=g.rows,
        FAST=True,  # CUDA only (conv_math.sigmoid); the interpreter tests of the template text turn it off
    )
    return kwargs if dy_t is None else dict(kwargs, DY_T=dy_t, UNROLL=g.unroll)


def _pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


# ---------------------------------------------------------------------------------------------------------------
# Lowerings
# ---------------------------------------------------------------------------------------------------------------
def lower_fwd(x, weight, bias, seq_idx, initial_states, activation, contiguous_out=False):
    """y [B, C, L] = act(causal_conv1d(x) + bias), laid out like x or (contiguous_out) contiguous: template
    choices (+ the eager launcher under max-autotune)."""
    if not _use_template(x, weight):
        return fallback_handler(FWD_OP, add_to_fallback_set=False)(x, weight, bias, seq_idx, initial_states,
                                                                   activation, contiguous_out=contiguous_out)
    x, weight, bias, seq_idx, initial_states = map(_fixed, (x, weight, bias, seq_idx, initial_states))
    B, C, L = x.get_size()
    K = V.graph.sizevars.guard_int(weight.get_size()[1])
    hint = size_hint
    sms = num_sms(x.get_device().index or 0)
    if contiguous_out:  # Note [conv output layout] in patterns/conv_output_layout.py
        layout = ir.FixedLayout(x.get_device(), x.get_dtype(), x.get_size(),
                                ir.FlexibleLayout.contiguous_strides(x.get_size()))
    else:
        layout = _like_x(x)
    inputs = [t for t in (x, weight, bias, seq_idx, initial_states) if t is not None]
    choices: list = []
    for g in _tiles("fwd", x, K, other_bcl=contiguous_out):
        _, n_chunks = conv_chunks(hint(B), hint(C), hint(L), g, sms)
        FWD_TEMPLATE.maybe_append_choice(choices, input_nodes=inputs, layout=layout, N_CHUNKS=n_chunks,
                                         **_template_kwargs(g, K, bias, seq_idx, initial_states, activation))
    if inductor_config.max_autotune or not choices:
        present = tuple(n for n, t in zip(_OPTIONAL, (bias, seq_idx, initial_states)) if t is not None)
        choices.append(FWD_EXTERN.bind(inputs, layout, present=present, activation=activation))
    return select_algorithm("inductor_conv_causal_conv1d_fwd", choices, inputs, layout)


def lower_bwd(x, weight, bias, seq_idx, initial_states, dy, activation, deterministic):
    """(dx, dweight, dbias, dinitial_states) as the op returns them: one fused template pass (dx, partial rows of
    dw / dbeta, d initial_states), then a fixed-order sum of the rows. Always deterministic."""
    if not _use_template(x, weight):
        return fallback_handler(BWD_OP, add_to_fallback_set=False)(x, weight, bias, seq_idx, initial_states, dy,
                                                                   activation, deterministic)
    x, weight, bias, seq_idx, initial_states, dy = map(_fixed, (x, weight, bias, seq_idx, initial_states, dy))
    K = V.graph.sizevars.guard_int(weight.get_size()[1])
    # A channel-last x with a dy whose positions are contiguous (the gradient of a y that left the graph in eager's
    # layout): row tiles of one channel a thread read dy by blocks of V positions (DY_T, "blc_t" tiles), when the
    # look-ahead of K - 1 rows fits in a block; otherwise dy is copied into x's layout.
    dy_t = config.conv_bwd_dy_t and _channel_last(x) and V.graph.sizevars.statically_known_equals(dy.get_stride()[2], 1)
    geometries = [g for g in _tiles("bwd", x, K, other_bcl=dy_t) if not dy_t or K - 1 <= g.vec]
    if not geometries:
        dy_t, geometries = False, _tiles("bwd", x, K)
    if _stride_order(dy) != _stride_order(x) and not dy_t:
        # Otherwise one tile reads x and dy alike: a dy in the other layout is copied into x's layout once rather
        # than read across the grain (H200, B8 C5120 L2048: row tiles reading a contiguous dy by 2-byte loads took
        # 130 us more than the copy and row tiles; DY_T 57 us less).
        dy = ir.ExternKernel.require_stride_order(dy, _stride_order(x))
    B, C, L = x.get_size()
    device = x.get_device()
    hint = size_hint
    # Every choice writes the same partial rows: their count comes from the default tile.
    _, n_chunks = conv_chunks(hint(B), hint(C), hint(L), geometries[0], num_sms(device.index or 0))
    part = empty_strided([B * n_chunks, C, K + 1], None, dtype=torch.float32, device=device)
    dinit = None
    if initial_states is not None:
        dinit = empty_strided(initial_states.get_size(), _like_x(initial_states).stride,
                              dtype=initial_states.get_dtype(), device=device)
    inputs = [t for t in (x, weight, bias, seq_idx, initial_states, dy, part, dinit) if t is not None]
    mutated = [t for t in (part, dinit) if t is not None]
    layout = _like_x(x)
    choices: list = []
    for g in geometries:
        BWD_TEMPLATE.maybe_append_choice(choices, input_nodes=inputs, layout=layout, mutated_inputs=mutated,
                                         N_CHUNKS=n_chunks,
                                         **_template_kwargs(g, K, bias, seq_idx, initial_states, activation, dy_t))
    if not choices:
        return fallback_handler(BWD_OP, add_to_fallback_set=False)(x, weight, bias, seq_idx, initial_states, dy,
                                                                   activation, deterministic)
    dx = select_algorithm("inductor_conv_causal_conv1d_bwd", choices, inputs, layout)

    # dw and dbeta each one fixed-order sum over the rows, reading its columns of the partial rows: two small
    # reduction kernels (a sum of the whole rows, then the slice and the dtype cast, took three launches)
    dw = to_dtype(sum_lowering(inductor_lowerings[aten.slice.Tensor](part, 2, 0, K), [0]), weight.get_dtype())
    db_dtype = (bias if bias is not None else weight).get_dtype()
    if bias is not None:
        db = to_dtype(sum_lowering(inductor_lowerings[aten.select.int](part, 2, K), [0]), db_dtype)
    else:  # the op still returns a [C] dbias (unused)
        db = full([C], 0, dtype=db_dtype, device=device)
    if dinit is None:  # the op returns an empty dinitial_states
        dinit = full([0], 0, dtype=x.get_dtype(), device=device)
    return dx, dw, db, dinit


def register() -> None:
    """Install both lowerings (idempotent; enable() calls it, disable() removes them)."""
    install(FWD_OP, lower_fwd)
    install(BWD_OP, lower_bwd)
