"""Lowerings of inductor_conv::attention_fwd / attention_bwd into Inductor Triton templates.

On CUDA (fp16 / bf16 / fp32, head dim <= 256) each op becomes an `inductor_conv_attention_*` TritonTemplate choice
whose tile comes from inductor_conv/heuristics/attention.py (several tiles and an ExternKernelChoice running the eager
op under max-autotune); elsewhere the op stays a fallback kernel.  The templates append kernels/attn_math.py, so the
math is the eager kernels' math.  Extra outputs (LSE; dQ, dV, dS) are mutated inputs, as FlexAttention's lowering
does (NOTE:[TritonTemplates with multiple outputs] in torch/_inductor/ir.py); Note [attention backward recomputes
P] in ops/attention.py says what the backward gets.  A mask tensor's summaries, which let the templates skip tiles
(Note [mask ranges]), are made by the summary's kernels launched from the graph (Note [summary kernels in the graph]).
"""
import weakref
from pathlib import Path

import sympy
import torch

import inductor_conv.ops  # noqa: F401  (registers the custom ops)
from inductor_conv import config
from inductor_conv._compat import (
    extern_kernel_choice,
    SymbolicGridFn,
    V,
    ceil_div,
    empty_strided,
    fallback_handler,
    inductor_config,
    inductor_lowerings,
    infer_dense_strides,
    ir,
    realize_inputs,
    autotune_example_value,
    select_algorithm,
    size_hint,
    tma_compatible,
    triton_template,
    user_triton_kernel,
)
from inductor_conv.heuristics import attention as _heuristics
from inductor_conv.heuristics.attention import (
    attn_bwd_autotune_tiles,
    attn_bwd_tile,
    attn_fwd_autotune_tiles,
    attn_fwd_tile,
    cudnn_attention_form,
    fit_bwd_tile,
    fit_fwd_tile,
    head_dim_tiles,
    row_offsets,
    short_sequences,
    template_mask_row,
)
from inductor_conv.kernels import attn_math
from inductor_conv.kernels.attention_decode import MAX_QUERIES, decode_shape_ok
from inductor_conv.kernels.attn_common import INT32_SPAN, mask_kind, score_scales, slice_span, softcap_mode
from inductor_conv.kernels.attn_mask_summary import launches as summary_launches
from inductor_conv.ops.attention import softcap_kwargs
from inductor_conv.lowerings import install, stride_order
from inductor_conv.reference.attention import dropout_threshold

aten, prims = torch.ops.aten, torch.ops.prims
FWD_OP = torch.ops.inductor_conv.attention_fwd.default
BWD_OP = torch.ops.inductor_conv.attention_bwd.default
SUMMARY_OP = torch.ops.inductor_conv.attention_mask_summary.default
OPS = (FWD_OP, BWD_OP, SUMMARY_OP)
_DOT_DTYPES = {torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16", torch.float32: "tl.float32"}


def _load(name: str) -> str:
    """A template file followed by attn_math's helpers (raw: their text is not jinja)."""
    template = (Path(__file__).parent / "templates" / f"{name}.py.jinja").read_text()
    return template + "\n{% raw %}\n" + Path(attn_math.__file__).read_text() + "\n{% endraw %}\n"


@SymbolicGridFn
def attention_fwd_grid(batch, q_heads, q_len, head_dim, meta, *, cdiv):
    """One program per BLOCK_M query rows (or causal pair of row blocks) of one (batch, query head), on one axis
    (batch * heads may pass the 65535 of axes 1 and 2); the template maps the program id."""
    # pairs: cdiv(cdiv(Sq, BM), 2) == cdiv(Sq, 2 BM), written as one division
    rows = 2 * meta["BLOCK_M"] if meta["IS_CAUSAL"] and meta["CAUSAL_PAIR"] else meta["BLOCK_M"]
    return (cdiv(q_len, rows) * batch * q_heads, 1, 1)


@SymbolicGridFn
def attention_bwd_grid(batch, q_heads, q_len, head_dim, kv_heads, kv_len, meta, *, cdiv):
    """cdiv(Sk, BLOCK_N) dK/dV programs (twice as many with SPLIT_KV: dK ones and dV ones) then
    G * cdiv(Sq, BLOCK_N) dQ programs per (batch, kv head), on one axis."""
    # G = Hq / Hkv exactly; cdiv, not //: on symbols `//` is sympy's floor(Hq / Hkv), which Inductor's printer refuses
    # ("exponent must be non-negative": a dynamic-shape GQA backward fails to compile)
    key_programs = 2 if meta["SPLIT_KV"] else 1
    per_head = key_programs * cdiv(kv_len, meta["BLOCK_N"]) + cdiv(q_heads, kv_heads) * cdiv(q_len, meta["BLOCK_N"])
    return (per_head * batch * kv_heads, 1, 1)


FWD_TEMPLATE = triton_template("inductor_conv_attention_fwd", attention_fwd_grid, _load("inductor_conv_attention_fwd"))
BWD_TEMPLATE = triton_template("inductor_conv_attention_bwd", attention_bwd_grid, _load("inductor_conv_attention_bwd"))


# ---------------------------------------------------------------- fallback choices (max-autotune)
def _unwrap(node):
    while isinstance(node, (ir.TensorBox, ir.StorageBox)):
        node = node.data
    return node


def _fwd_eager(q, k, v, mask, seed, lse, rows, *, dropout_p, is_causal, scale, has_mask, has_dropout, softcap):
    """The eager op (for benchmarking the fallback choice)."""
    return FWD_OP(q, k, v, mask if has_mask else None, dropout_p, is_causal, scale, seed if has_dropout else None,
                  **softcap_kwargs(softcap))[0]


def _fwd_fallback_ir(q, k, v, mask, seed, lse, rows, *, dropout_p, is_causal, scale, has_mask, has_dropout, softcap):
    """The eager op as a fallback kernel; its LSE is copied into the buffer the templates would have written."""
    out, lse_eager = fallback_handler(FWD_OP, add_to_fallback_set=False)(
        q, k, v, mask if has_mask else None, dropout_p, is_causal, scale, seed if has_dropout else None,
        **softcap_kwargs(softcap))
    inductor_lowerings[aten.copy_](lse, lse_eager)
    return _unwrap(out)


def _bwd_eager(q, k, v, mask, seed, do, out, lse, delta, dq, dkv, ds, rows, cols, *, dropout_p, is_causal, scale,
               has_mask, has_dropout, mask_grad, softcap, dv_out=False):
    """The eager op (for benchmarking the fallback choice): dK, or dV when dv_out (the template's output then, with
    dkv its dK: Note [split head dim])."""
    return BWD_OP(do, q, k, v, mask if has_mask else None, out, lse, dropout_p, is_causal, scale,
                  seed if has_dropout else None, mask_grad, True, **softcap_kwargs(softcap))[2 if dv_out else 1]


def _bwd_fallback_ir(q, k, v, mask, seed, do, out, lse, delta, dq, dkv, ds, rows, cols, *, dropout_p, is_causal,
                     scale, has_mask, has_dropout, mask_grad, softcap, dv_out=False):
    """The eager op as a fallback kernel: dQ (and dS) copied into the template's buffers, dV into dkv and dK
    returned, or (dv_out) dK into dkv and dV returned."""
    grads = fallback_handler(BWD_OP, add_to_fallback_set=False)(
        do, q, k, v, mask if has_mask else None, out, lse, dropout_p, is_causal, scale,
        seed if has_dropout else None, mask_grad, True, **softcap_kwargs(softcap))
    copy = inductor_lowerings[aten.copy_]
    copy(dq, grads[0])
    copy(dkv, grads[1 if dv_out else 2])
    if mask_grad:
        copy(ds, grads[3])
    return _unwrap(grads[2 if dv_out else 1])


FWD_FALLBACK = extern_kernel_choice(_fwd_eager, name="inductor_conv_attention_fwd_eager", has_out_variant=False,
                                  kernel_creator=_fwd_fallback_ir)
BWD_FALLBACK = extern_kernel_choice(_bwd_eager, name="inductor_conv_attention_bwd_eager", has_out_variant=False,
                                  kernel_creator=_bwd_fallback_ir)


# ---------------------------------------------------------------- lowerings
def _use_template(q, k, v) -> bool:
    """CUDA, a dtype the templates take, and static head dims <= 256 (they size BLOCK_D and BLOCK_DV)."""
    if q.get_device().type != "cuda" or q.get_dtype() not in _DOT_DTYPES:
        return False
    guard_int = V.graph.sizevars.guard_int  # specialises a dynamic head dim, as Flex does
    return guard_int(q.get_size()[-1]) <= 256 and guard_int(v.get_size()[-1]) <= 256


def _options(q, k, v, attn_mask, dropout_p, is_causal, scale, backward=False, softcap=0.0, mask_grad=False):
    """Constexprs of either template (kernel options become `NAME : tl.constexpr = value` lines), the head dim that
    picks the tile (the larger of q's and v's: Note [value head dim] in kernels/attn_math.py; q's with a split head
    dim) and the tile lookup's split_v (v's head dim with a split head dim, else None: Note [split head dim])."""
    sizevars = V.graph.sizevars
    head_dim = sizevars.guard_int(q.get_size()[-1])
    head_dim_v = sizevars.guard_int(v.get_size()[-1])
    fp32 = q.get_dtype() == torch.float32
    qk_scale2, softcap_scale = score_scales(float(scale), float(softcap))  # Note [soft-capping]
    block_d, block_d2, tile_head_dim, split_v = head_dim_tiles(head_dim, head_dim_v, config.attention_split_head_dim)
    return dict(
        HEAD_DIM=head_dim, BLOCK_D=block_d, BLOCK_D2=block_d2, HEAD_DIM_V=head_dim_v,
        BLOCK_DV=max(16, 1 << (head_dim_v - 1).bit_length()),
        MASK_KIND=mask_kind(None if attn_mask is None else attn_mask.get_dtype()),
        IS_CAUSAL=bool(is_causal), HAS_DROPOUT=dropout_p > 0, DOT_DTYPE=_DOT_DTYPES[q.get_dtype()],
        PRECISION="'ieee'" if fp32 else "'tf32'", ACC_DTYPE="tl.float32",
        QK_SCALE2=qk_scale2, SCALE=float(scale), SOFTCAP=softcap_mode(bool(softcap), q.get_dtype(), False),
        SOFTCAP_SCALE=softcap_scale,
        DROPOUT_THRESHOLD=dropout_threshold(dropout_p), DROPOUT_SCALE=1.0 / (1.0 - dropout_p),
        CAUSAL_GROUP=_launch_group(k, head_dim, backward),
        MASKED_FIRST=bool(config.attention_masked_first),
        # Note [mask ranges]; not with the mask's gradient: the template's dS buffer is not zero-filled; not over
        # short sequences, whose one or two tiles a summary cannot skip (SHORT_MASK_LENGTH)
        MASK_RANGES=bool(config.attention_mask_ranges) and attn_mask is not None and not mask_grad
        and not short_sequences(_static_length(q.get_size()[2]), _static_length(k.get_size()[2])),
        **(dict(KV_FIRST=bool(config.attention_bwd_kv_first)
                and not sizevars.statically_known_equals(q.get_size()[1], k.get_size()[1]))
           if backward else {}),
    ), tile_head_dim, split_v


def _use_tma(*nodes) -> bool:
    """The templates' USE_TMA, when config.attention_tma: fp16 / bf16, the head dim unit-stride and a multiple of 16
    bytes, the other strides and the offset 16-byte aligned (a descriptor starts at a (b, h) slice: _aligned), on a
    device with TMA.  Not with a split head dim (the caller checks: Note [split head dim])."""
    if not config.attention_tma or nodes[0].get_dtype() not in (torch.float16, torch.bfloat16):
        return False
    return all(_aligned(n) and tma_compatible(n) for n in nodes)


def _mask_stages(tile) -> int:
    """The template's MASK_STAGES (Note [mask loop stages]): config.attention_mask_stages when set, else the tile's."""
    return tile.mask_stages if config.attention_mask_stages is None else config.attention_mask_stages


def _launch_group(k, head_dim: int, backward: bool) -> int:
    """The template's CAUSAL_GROUP: config.attention_causal_group / attention_causal_bwd_group when set, 0 for a
    backward with the masked tiles first, else by size."""
    forced = config.attention_causal_bwd_group if backward else config.attention_causal_group
    if forced is not None:
        return forced
    return 0 if backward and config.attention_masked_first else _causal_group(k, head_dim)


def _causal_group(k, head_dim: int) -> int:
    """(b, h) slices per longest-first group of a causal launch: as many as keep a group's K/V (and Q/dO) at about
    2^21 elements a tensor, at most 8.  H200, D128: 8 best at S2048 (backward 567 us vs 585 at 4), 2 at S8192
    (4004 vs 4230 us at 8; 4688 vs 4937 with dropout).  A symbolic length uses its hint: any group is correct.
    GQA is not counted (a forward group of 8 query-head slices reads 8 / G K/V heads; a backward slice reads G
    query heads): only speed depends on it."""
    length = size_hint(k.get_size()[2], fallback=2048)
    group = (1 << 21) // max(length * head_dim, 1)
    return max(1, min(8, 1 << max(group.bit_length() - 1, 0)))


def _even(block: int, *lengths) -> bool:
    """The templates' EVEN (Note [even lengths] in kernels/attn_math.py): every length a provable multiple of the
    tile.  Static lengths fold this by themselves; for symbolic ones it is False unless provable."""
    return all(V.graph.sizevars.statically_known_multiple_of(n, block) for n in lengths)


def _wide(*nodes) -> bool:
    """The templates' WIDE (Note [int64 offsets] in kernels/attn_common.py): some node's (b, h) slice may span 2^31
    elements (_fits_int32)."""
    return not all(_fits_int32(slice_span(n.get_size(), n.get_stride())) for n in nodes)


def _fits_int32(span) -> bool:
    """Whether the offsets up to `span` (an element offset: an int, or sympy under dynamic shapes) fit int32, as
    Inductor decides its own index dtype: proven, or true of the size hints and then guarded (a graph whose sizes
    outgrow it compiles again, with WIDE), so that dynamic shapes keep the int32 kernels."""
    sizevars = V.graph.sizevars
    if sizevars.statically_known_lt(span, INT32_SPAN):
        return True
    if size_hint(span, fallback=INT32_SPAN) >= INT32_SPAN:
        return False
    sizevars.check_lt(span, INT32_SPAN)
    return True


def _static_length(n) -> int | None:
    """A sequence length (or any size or stride) as an int when it is static, else None (the tiles then stay the
    table's; a mask's layout stays as it is)."""
    return int(n) if isinstance(n, (int, sympy.Integer)) else None


# Note [one summary per mask]: in a graph that runs several attentions over one mask (a whole model compiled: HF
# builds the mask once and every layer reads it), each layer's lowering would copy the mask into padded rows and
# summarise it again. An Inductor graph's buffers are single-assignment (an input a graph mutates is written back
# only at its end), so a buffer read through the same view holds the same values at every read: the padded copy and
# the summary of a mask are made once per graph, keyed by the buffer and the view, and every later layer reads them.
_MEMO = weakref.WeakKeyDictionary()  # GraphLowering -> {key: IR nodes}


def _mask_key(mask, *extra):
    """The key of a realized mask's values in the graph being lowered (its buffer's name and the view's size,
    stride, offset and dtype), or None where it has no name."""
    try:
        layout = mask.get_layout()
        return (mask.get_name(), tuple(layout.size), tuple(layout.stride), layout.offset, layout.dtype, *extra)
    except (AttributeError, NotImplementedError):
        return None


def _per_graph(key, make):
    """make() once per graph being lowered and key (Note [one summary per mask]); every call when key is None."""
    if key is None:
        return make()
    memo = _MEMO.setdefault(V.graph, {})
    if key not in memo:
        memo[key] = make()
    return memo[key]


def _mask_summary(mask, cols: bool):
    """The mask's summaries (rows, column sums or None), once per graph (Note [one summary per mask]); a summary made
    with the columns serves a call that needs the rows only."""
    key = _mask_key(mask, "summary")
    if key is not None and not cols and (key, True) in _MEMO.get(V.graph, {}):
        return _MEMO[V.graph][key, True]
    return _per_graph(None if key is None else (key, cols), lambda: _summarise(mask, cols))


# Note [summary kernels in the graph]
# A compiled graph that summarises a mask tensor (Note [mask ranges]) launches the summary's kernels
# (kernels/attn_mask_summary.py: flags, then rows, then, for the backward, cols) from its own wrapper code, as it
# launches a user's Triton kernel (_compat.user_triton_kernel); their buffers are graph buffers.  In training the
# forward graph makes rows and cols at an attention_mask_summary call the joint pass put there, and the backward
# graph reads them saved (Note [summaries saved for the backward] in patterns/attention_summary.py; that call's
# lowering is attention_mask_summary_lowering); an attention without that call summarises here.  The summary op as a
# fallback kernel did the same work behind a custom-op dispatch and the eager launch path, about 50 us of host time
# a call on the device (benchmarks/diagnostics/compiled_host.py), two calls per masked forward+backward: host time a
# host-bound step (BART, a layer of Gemma 2) pays in full; from the graph, a masked forward+backward took 750-810 us
# of host time against 917-1016 (H100, docs/benchmarks.md).  Both launch the same kernels with the same arguments
# (attn_mask_summary.launches), so the summaries are the same bits.  CPU graphs (the interpreter runs the op) and
# masks with a size not known to be nonzero keep the op as a fallback kernel: an empty mask's summary is not a launch.
def _summary_plan(mask):
    """The summary kernels' launches and (row, col, flag) shapes for this mask in the graph, or None where the graph
    runs the summary op as a fallback kernel instead (CPU graphs, the switch off, a size not known to be nonzero)."""
    sizevars = V.graph.sizevars
    size, stride = mask.get_size(), mask.get_stride()
    if (mask.get_device().type != "cuda" or not config.attention_summary_in_graph
            or not all(sizevars.statically_known_gt(n, 0) for n in size)):
        return None
    return summary_launches(tuple(size), tuple(stride), mask_kind(mask.get_dtype()), cdiv=ceil_div,
                            broadcast=lambda st: sizevars.statically_known_equals(st, 0),
                            small=_fits_int32)


def _summarise(mask, cols: bool):
    plan = _summary_plan(mask)
    if plan is None:
        rows, col_sum = fallback_handler(SUMMARY_OP, add_to_fallback_set=False)(mask, cols)
        return rows, col_sum if cols else None
    (flag_k, row_k, col_k), shapes = plan
    row_shape, col_shape, flag_shape = ([*shape] for shape in shapes)
    device = mask.get_device()
    flags, rows = (empty_strided(shape, None, dtype=torch.int32, device=device) for shape in (flag_shape, row_shape))
    _launch(flag_k, MASK=mask, FLAGS=flags)
    _launch(row_k, FLAGS=flags, ROWS=rows)
    if not cols:
        return rows, None
    col_sum = empty_strided(col_shape, None, dtype=torch.int32, device=device)
    _launch(col_k, FLAGS=flags, ROWS=rows, COLS=col_sum)
    return rows, col_sum


def attention_mask_summary_lowering(attn_mask, cols):
    """inductor_conv::attention_mask_summary where the graph calls it (Note [summaries saved for the backward] in
    patterns/attention_summary.py): the summaries of the mask as the templates read it (_padded_mask), made once per
    graph (the forward's attention lowering then reads the same buffers), in the op's own shapes.  Those shapes
    follow the mask's broadcast (stride-0) dims as the op's fake impl saw them; where the lowering's view of the mask
    disagrees (a layout Inductor chose), the op runs as a fallback kernel instead, which follows the tensor at run
    time as the fake impl did.  The shapes are checked before any summary kernel is emitted, so a graph that falls
    back launches the op alone."""
    fallback = fallback_handler(SUMMARY_OP, add_to_fallback_set=False)
    if not cols or attn_mask.get_device().type != "cuda":
        return fallback(attn_mask, cols)
    mask = _padded_mask(realize_inputs(attn_mask))
    plan = _summary_plan(mask)
    if plan is not None:
        node = V.graph.current_node
        mask_val = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
        row_shape, col_shape, _ = plan[1]
        if not isinstance(mask_val, torch.Tensor) or not _summary_shapes_agree(
                mask.get_size(), [row_shape, col_shape], ir.convert_shape_to_inductor(mask_val.shape),
                [ir.convert_shape_to_inductor(t.shape) for t in node.meta["val"]], V.graph.sizevars):
            return fallback(attn_mask, cols)
    return _mask_summary(mask, True)


def _summary_shapes_agree(mask_size, summary_sizes, fake_mask_size, fake_summary_sizes, sizevars) -> bool:
    """Whether the summaries made in the graph (of a mask of mask_size) have the shapes the op's fake impl gave them
    (of its mask of fake_mask_size): the same leading (batch, head) dims, which follow the mask's broadcast dims as
    each side sees them, and entries counted from the same mask lengths.  The entry counts are compared through
    those lengths: the fake impl's cdiv(S, n) is -((-S) // n) and the lowering's CeilDiv(S, n), equal for every S
    but not to sympy under dynamic shapes."""
    same = sizevars.statically_known_equals
    if not all(same(a, b) for a, b in zip(mask_size[2:], fake_mask_size[2:])):
        return False
    for got, want in zip(summary_sizes, fake_summary_sizes):
        if len(got) != len(want) or not all(same(a, b) for i, (a, b) in enumerate(zip(got, want)) if i != 2):
            return False
    return True


def _launch(spec, **tensors):
    user_triton_kernel(spec.kernel, spec.grid, spec.num_warps, tensors, spec.scalars, spec.constexprs)


def _padded_mask(attn_mask):
    """The templates' mask input (realized), its rows padded when they are not aligned: Note [mask row alignment] in
    heuristics/attention.py (a graph input is copied once, its broadcast dims kept at stride 0; a computed mask's
    own kernel writes the padded layout)."""
    align = config.attention_mask_row_bytes
    if not align:
        return attn_mask
    size, stride = ([_static_length(e) for e in values] for values in (attn_mask.get_size(), attn_mask.get_stride()))
    if None in size or None in stride:
        return attn_mask
    itemsize = attn_mask.get_dtype().itemsize
    if stride[-1] != 1 or size[-2] == 1 or (stride[-2] * itemsize) % align == 0:
        return attn_mask
    padded, step = [0] * len(size), 1
    for dim in reversed(range(len(size))):
        if stride[dim] == 0 and size[dim] > 1:  # broadcast: stays a view of the one copy
            continue
        padded[dim] = step
        step *= template_mask_row(size[dim], itemsize) if dim == len(size) - 1 else size[dim]
    boxed = attn_mask if isinstance(attn_mask, ir.TensorBox) else ir.TensorBox(attn_mask)  # what slice_ takes
    return _per_graph(_mask_key(attn_mask, "padded", tuple(padded)),
                      lambda: realize_inputs(ir.ExternKernel.require_exact_strides(boxed, padded)))


def _placeholder(dtype, device):
    return empty_strided([1], None, dtype=dtype, device=device)


def _mask_summaries(mask, options, q, cols: bool, saved=(None, None)):
    """The templates' ROWS and COLS inputs: the mask's summaries (Note [mask ranges]; made once per graph for every
    head the mask broadcasts over, _mask_summary, or the forward's `saved` (rows, cols): Note [summaries saved for
    the backward] in patterns/attention_summary.py) viewed as [B, Hq, n, 4], or placeholders when the template does
    not skip tiles."""
    device = q.get_device()
    if not options["MASK_RANGES"]:
        return _placeholder(torch.int32, device), _placeholder(torch.int32, device)
    if saved[0] is not None and (saved[1] is not None or not cols):
        rows, col_sum = saved[0], (saved[1] if cols else None)
    else:
        rows, col_sum = _mask_summary(mask, cols)
    B, Hq = q.get_size()[:2]
    expand = inductor_lowerings[aten.expand]
    views = [realize_inputs(expand(t, [B, Hq, *t.get_size()[2:]])) for t in (rows, col_sum)[:1 + cols]]
    return views[0], (views[1] if cols else _placeholder(torch.int32, device))


# Note [autotuning masked templates]
# Under max-autotune Inductor times each choice on example inputs it makes itself: random floats, and zeros for bool
# and integer buffers.  A masked template timed on those reads a bool mask as masking everything and summaries of
# zeros as no tile to visit, so every tile size times as doing nothing and the pick among them is arbitrary (still
# correct, possibly slow).  The lowerings therefore give autotuning (input_gen_fns) a causal mask in the mask's own
# dtype and layout, the most common mask a tensor carries, and the summaries the summary op makes of it, so each
# choice is timed on the work a causal mask costs.  The choices are the same for any other content; only their
# timing was meaningless.
def example_mask(base: torch.Tensor, size, stride, offset: int) -> torch.Tensor:
    """The mask view (size, stride, offset) of `base`'s storage, written causal: query i attends keys j <= i + Sk - Sq
    (aligned bottom-right, as queries after a key cache), True / 0.0 there and False / -inf elsewhere.  A mask that
    broadcasts over queries (stride 0 or one row) attends every key.  Only the view's own elements are written (a
    broadcast dim's first index), so a padded or broadcast layout stays one write per element."""
    view = base.as_strided(size, stride, offset)
    sq, sk = size[-2:]
    keep = torch.ones(sq, sk, dtype=torch.bool, device=base.device)
    if stride[-2] != 0 and sq > 1:
        keep = keep.tril(sk - sq)
    value = keep if base.dtype == torch.bool else torch.zeros(
        sq, sk, dtype=base.dtype, device=base.device).masked_fill(~keep, float("-inf"))
    own = [1 if st == 0 else n for n, st in zip(size, stride)]
    base.as_strided(own, stride, offset).copy_(value[:own[-2], :own[-1]].expand(own))
    return view


def _masked_example_inputs(inputs: list, mask, rows, cols=None):
    """input_gen_fns for a masked template's autotuning (Note [autotuning masked templates]): for the nodes `mask`,
    `rows` and `cols` (the backward's; None in the forward) among the choices' `inputs`, the mask and its summaries,
    each as the view the template reads (a summary broadcast over heads is an expand of one summary)."""
    made = {}

    def hints(node):
        layout = node.get_layout()
        return [size_hint(n) for n in layout.size], [size_hint(n) for n in layout.stride], size_hint(layout.offset)

    # A generated tensor is both what the templates are timed on (they take its data pointer and apply the node's
    # strides themselves) and what the fallback choice is timed on (its size, stride and offset); the two agree only
    # at offset 0, so a view at an offset keeps Inductor's own example (and its summaries theirs).
    def mask_example(node):
        size, stride, offset = hints(node)
        base = autotune_example_value(node)
        made.clear()
        if offset != 0:
            return base
        made["mask"] = example_mask(base, size, stride, 0)
        return made["mask"]

    def summary(which):
        def make(node):
            size, stride, offset = hints(node)
            if "mask" in made and offset == 0:
                if "summaries" not in made:  # rows and cols from one summary op call
                    made["summaries"] = SUMMARY_OP(made["mask"], cols is not None)
                value = made["summaries"][which].expand(size)
                if list(value.stride()) == stride:
                    return value
            return autotune_example_value(node)  # not the layout the summary op makes: Inductor's own example
        return make

    def index(node):  # `node`'s position among the choices' arguments (IR views are dataclasses: by identity)
        return next(i for i, n in enumerate(inputs) if n is node)

    fns = {index(mask): mask_example, index(rows): summary(0)}
    if cols is not None:
        fns[index(cols)] = summary(1)
    return fns


def _dense_like(node, dtype=None):
    """An empty buffer shaped and ordered like `node` (torch.empty_like)."""
    size = node.get_size()
    return empty_strided(size, infer_dense_strides(size, node.get_stride()), dtype=dtype or node.get_dtype(),
                         device=node.get_device())


def _aligned(t) -> bool:
    """cuDNN reads rows of 16-byte vectors: a unit-stride last dim, the other strides and the offset multiples of 8
    elements (what Inductor's sdpa_constraint asks of SDPA's inputs)."""
    sizevars = V.graph.sizevars
    layout = t.get_layout()
    *outer, last = layout.stride
    if not sizevars.statically_known_equals(last, 1):
        return False
    return all(sizevars.statically_known_multiple_of(e, 8) for e in (*outer, layout.offset))


def _use_cudnn(q, k, v, attn_mask, dropout_p, is_causal, softcap=0.0) -> bool:
    """Note [cuDNN route] in heuristics/attention.py: cuDNN's fused attention for the forms it computes as we do (no
    mask, no dropout -- cuDNN's own dropout could not be replayed from our seed --, no soft-capping, one head dim),
    here with what the sizes and layouts must prove: not causal or causal with Sq == Sk (both top-left aligned then
    agree), any GQA ratio, aligned layouts (other layouts stay on our template: no copies).  Both lowerings ask it
    with the same saved q, k, v; the switches it reads are read again when AOTAutograd compiles the backward lazily
    (at the first .backward()), so a switch flipped in between mixes cuDNN and our template across the two passes --
    correct either way, as both write and read the same natural-log row LSE."""
    if attn_mask is not None or dropout_p > 0 or softcap or q.get_device().type != "cuda":
        return False
    sizevars = V.graph.sizevars
    head_dim, head_dim_v = (sizevars.guard_int(t.get_size()[-1]) for t in (q, v))
    if not cudnn_attention_form(q.get_dtype(), head_dim, head_dim_v,
                                torch.cuda.get_device_capability(q.get_device())):
        return False
    if head_dim < _heuristics.CUDNN_COMPILED_MIN_HEAD_DIM:  # measured no faster below it, and dearer to call
        return False
    # What SDPA's own cuDNN gate (can_use_cudnn_attention) also refuses: a key length of 1, empty queries, batch or
    # heads above 65535.
    B, H, Sq, _ = q.get_size()
    Sk = k.get_size()[2]
    if not (sizevars.statically_known_gt(Sk, 1) and sizevars.statically_known_gt(Sq, 0)):
        return False
    if is_causal and not sizevars.statically_known_equals(Sq, Sk):
        return False
    # cuDNN fails for batch or heads >= 65536: a symbolic B / H gets a guard (<= 65535) as SDPA's TORCH_GUARD_OR_FALSE
    # does; under backed-size-oblivious shapes, unprovable means refused.
    if not all(sizevars.guard_or_false(sympy.Le(n, 65535)) for n in (B, H)):
        return False
    return all(_aligned(t) for t in (q, k, v))


def _cudnn_forward(q, k, v, is_causal, scale):
    """cuDNN's fused forward as an Inductor fallback kernel: (out, LSE as [B, H, Sq] fp32, natural log: the row
    log-sum-exp of the scaled scores, the quantity our backward recomputes P from)."""
    outs = inductor_lowerings[aten._scaled_dot_product_cudnn_attention.default](
        q, k, v, None, True, 0.0, bool(is_causal), False, scale=float(scale))
    B, H, Sq = q.get_size()[:3]
    lse = inductor_lowerings[aten.view.default](outs[1], [B, H, Sq])
    return outs[0], ir.ExternKernel.require_contiguous(lse)


def _cudnn_backward(dout, q, k, v, out, lse, is_causal, scale):
    """cuDNN's fused backward (dQ, dK, dV) from the forward's O and row LSE.  Usually the same gate chose cuDNN's
    forward, but not necessarily (see _use_cudnn); our template's LSE is the same quantity in the same layout, so
    either forward will do.  dO goes to O's layout (cuDNN asks for matching strides) and is copied if misaligned;
    p = 0, so the Philox seed / offset are never read."""
    out = ir.ExternKernel.require_contiguous(out) if not _aligned(out) else out
    dout = ir.ExternKernel.require_stride_order(dout, stride_order(out))
    if not _aligned(dout):
        dout = ir.ExternKernel.require_contiguous(ir.ExternKernel.copy_input(dout))
    B, H, Sq = q.get_size()[:3]
    lse = inductor_lowerings[aten.view.default](ir.ExternKernel.require_contiguous(lse), [B, H, Sq, 1])
    # The Philox seed / offset are never read at p = 0: a shape-[1] placeholder is a bare buffer, where a 0-d
    # empty_strided([]) would become a one-element fill kernel (a launch per step).
    philox = _placeholder(torch.int64, q.get_device())
    return inductor_lowerings[aten._scaled_dot_product_cudnn_attention_backward.default](
        dout, q, k, v, out, lse, philox, philox, None, None, None, Sq, k.get_size()[2], 0.0, bool(is_causal),
        scale=float(scale))


def _use_decode(q, v, dropout_p) -> bool:
    """Note [flash-decoding] in kernels/attention_decode.py: a forward of a few queries (a static Sq <= 16, no
    dropout) runs the eager op, whose launcher splits the keys over programs (the template runs one program per
    BLOCK_M rows of one query head: at small B * Hkv most of the GPU idles, and each kv head is read G times)."""
    sizevars = V.graph.sizevars
    seq_q, head_dim = q.get_size()[2:]
    if dropout_p > 0 or not sizevars.statically_known_leq(seq_q, MAX_QUERIES):
        return False
    if not sizevars.statically_known_equals(v.get_size()[-1], head_dim):  # the decode kernels take one head dim
        return False
    return decode_shape_ok(sizevars.guard_int(seq_q), sizevars.guard_int(head_dim), q.get_dtype())


def attention_fwd_lowering(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap=0.0, mask_rows=None):
    if not _use_template(q, k, v) or _use_decode(q, v, dropout_p):
        return fallback_handler(FWD_OP, add_to_fallback_set=False)(q, k, v, attn_mask, dropout_p, is_causal, scale,
                                                                    seed, **softcap_kwargs(softcap))
    q, k, v = realize_inputs(q, k, v)
    if _use_cudnn(q, k, v, attn_mask, dropout_p, is_causal, softcap):
        return _cudnn_forward(q, k, v, is_causal, scale)
    options, head_dim, split_v = _options(q, k, v, attn_mask, dropout_p, is_causal, scale, softcap=softcap)
    options["USE_TMA"] = _use_tma(k, v) and not options["BLOCK_D2"]
    device = q.get_device()
    mask = _padded_mask(realize_inputs(attn_mask)) if attn_mask is not None else _placeholder(torch.bool, device)
    seed_node = realize_inputs(seed) if dropout_p > 0 else _placeholder(torch.int64, device)
    B, Hq, Sq, D = q.get_size()
    Dv = v.get_size()[-1]  # O has v's head dim in q's dim order (Note [value head dim])
    layout = ir.FixedLayout(device, q.get_dtype(), [B, Hq, Sq, Dv],
                            stride=infer_dense_strides([B, Hq, Sq, Dv], q.get_stride()))
    lse = empty_strided([B, Hq, Sq], None, dtype=torch.float32, device=device)
    rows, _ = _mask_summaries(mask, options, q, cols=False, saved=(mask_rows, None))
    inputs = [q, k, v, mask, seed_node, lse, rows]

    autotune = inductor_config.max_autotune
    dropout = dropout_p > 0
    masked = options["MASK_RANGES"]  # a summarised mask tensor: its own tiles with dropout (heuristics/attention.py)
    tiles = attn_fwd_autotune_tiles(q.get_dtype(), head_dim, is_causal, dropout, masked, split_v) if autotune else [
        attn_fwd_tile(q.get_dtype(), head_dim, "cuda", is_causal, dropout, masked, split_v)]
    lengths = _static_length(Sq), _static_length(k.get_size()[2])
    tiles = list(dict.fromkeys(fit_fwd_tile(tile, *lengths) for tile in tiles))  # Note [short sequences]
    choices = []
    for tile in tiles:
        FWD_TEMPLATE.maybe_append_choice(
            choices, input_nodes=inputs, layout=layout, mutated_inputs=[lse], call_sizes=[B, Hq, Sq, D],
            BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, num_warps=tile.num_warps, num_stages=tile.num_stages,
            CAUSAL_PAIR=tile.pair if config.attention_causal_pair is None else config.attention_causal_pair,
            MASK_STAGES=_mask_stages(tile),
            EVEN=_even(tile.block_n, k.get_size()[2]), WIDE=_wide(q, k, v, mask), **options)
    if autotune or not choices:
        FWD_FALLBACK.maybe_append_choice(
            choices, input_nodes=inputs, layout=layout, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
            has_mask=attn_mask is not None, has_dropout=dropout_p > 0, softcap=softcap)
    example = _masked_example_inputs(inputs, mask, rows) if autotune and masked else None
    out = select_algorithm("inductor_conv_attention_fwd", choices, inputs, layout, return_multi_template=False,
                           input_gen_fns=example)
    return out, lse


def attention_bwd_lowering(dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed, mask_grad,
                           deterministic, softcap=0.0, mask_rows=None, mask_cols=None):
    # Our template is deterministic whatever `deterministic` says (one owner per gradient row, no atomics).  The forms
    # _use_cudnn admits run cuDNN's backward, as SDPA would (not run-to-run deterministic: the gate refuses it under
    # torch.use_deterministic_algorithms, as SDPA's does, and then both passes are our templates).
    # A causal op whose mask needs a gradient (a direct call: attention() refuses mask + is_causal, and the causal
    # pass drops the mask) runs the eager op: the template never writes dS above the causal band, the eager op
    # zero-fills it, and the template's dS buffer is uninitialised.
    if not _use_template(q, k, v) or (mask_grad and is_causal):
        return fallback_handler(BWD_OP, add_to_fallback_set=False)(
            dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed, mask_grad, deterministic,
            **softcap_kwargs(softcap))
    q, k, v, out = realize_inputs(q, k, v, out)
    if not mask_grad and _use_cudnn(q, k, v, attn_mask, dropout_p, is_causal, softcap):
        dq, dk, dv = _cudnn_backward(dout, q, k, v, out, lse, is_causal, scale)
        return dq, dk, dv, empty_strided([0], None, dtype=q.get_dtype(), device=q.get_device())
    options, head_dim, split_v = _options(q, k, v, attn_mask, dropout_p, is_causal, scale, backward=True,
                                          softcap=softcap, mask_grad=bool(mask_grad))
    f32 = torch.float32
    convert = inductor_lowerings[prims.convert_element_type]
    # Δ = rowsum(dO ∘ O) in fp32: a small reduction Inductor generates and may fuse (docs/attention.md).
    delta = inductor_lowerings[aten.sum](inductor_lowerings[aten.mul](convert(dout, f32), convert(out, f32)), axis=-1)
    delta = ir.ExternKernel.require_contiguous(delta)
    lse = ir.ExternKernel.require_contiguous(lse)
    q, k, v, dout, out, lse, delta = realize_inputs(q, k, v, dout, out, lse, delta)
    options["USE_TMA"] = _use_tma(q, k, v, dout) and not options["BLOCK_D2"]
    options["ROW_OFFSETS"] = row_offsets(options["MASK_RANGES"], bool(is_causal), bool(options["BLOCK_D2"]),
                                          options["USE_TMA"])
    device = q.get_device()
    mask = _padded_mask(realize_inputs(attn_mask)) if attn_mask is not None else _placeholder(torch.bool, device)
    seed_node = realize_inputs(seed) if dropout_p > 0 else _placeholder(torch.int64, device)
    B, Hq, Sq, D = q.get_size()
    Hkv, Sk = k.get_size()[1:3]
    # dS in the mask's dtype: the template's store rounds it as a convert after it would, without an fp32 buffer
    # written, read back and converted (a trained (B, H, S, S) bias: Parakeet, DeBERTa)
    ds = (empty_strided([B, Hq, Sq, Sk], None, dtype=attn_mask.get_dtype(), device=device) if mask_grad
          else _placeholder(f32, device))
    # The template's output is dK, or dV with a split head dim, whose dK tile pair one store_output cannot take
    # (Note [split head dim]); the other is a mutated input, as dQ.
    dv_out = bool(options["BLOCK_D2"])
    out_node, other = (v, k) if dv_out else (k, v)
    dq, dkv = _dense_like(q), _dense_like(other)
    out_size = out_node.get_size()
    layout = ir.FixedLayout(device, out_node.get_dtype(), out_size,
                            stride=infer_dense_strides(out_size, out_node.get_stride()))
    rows, cols = _mask_summaries(mask, options, q, cols=True, saved=(mask_rows, mask_cols))
    inputs = [q, k, v, mask, seed_node, dout, out, lse, delta, dq, dkv, ds, rows, cols]
    mutated = [dq, dkv] + ([ds] if mask_grad else [])

    autotune = inductor_config.max_autotune
    dropout = dropout_p > 0
    masked = options["MASK_RANGES"]  # as the forward's
    tiles = attn_bwd_autotune_tiles(q.get_dtype(), head_dim, is_causal, dropout, masked, split_v) if autotune else [
        attn_bwd_tile(q.get_dtype(), head_dim, "cuda", causal=is_causal, dropout=dropout, masked=masked,
                      split_v=split_v)]
    tiles = list(dict.fromkeys(fit_bwd_tile(tile, _static_length(Sq), _static_length(Sk)) for tile in tiles))
    choices = []
    for tile in tiles:
        BWD_TEMPLATE.maybe_append_choice(
            choices, input_nodes=inputs, layout=layout, mutated_inputs=mutated, call_sizes=[B, Hq, Sq, D, Hkv, Sk],
            BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, num_warps=tile.num_warps, num_stages=tile.num_stages,
            SPLIT_KV=tile.split, STORE_DS=bool(mask_grad),
            MASK_STAGES=_mask_stages(tile),
            EVEN=_even(tile.block_m, Sq, Sk) and _even(tile.block_n, Sk), WIDE=_wide(q, k, v, mask, dout, dq, dkv),
            **options)
    if autotune or not choices:
        BWD_FALLBACK.maybe_append_choice(
            choices, input_nodes=inputs, layout=layout, dropout_p=dropout_p,
            is_causal=is_causal, scale=scale, has_mask=attn_mask is not None, has_dropout=dropout_p > 0,
            mask_grad=bool(mask_grad), softcap=softcap, dv_out=dv_out)
    example = _masked_example_inputs(inputs, mask, rows, cols) if autotune and masked else None
    result = select_algorithm("inductor_conv_attention_bwd", choices, inputs, layout, return_multi_template=False,
                              input_gen_fns=example)
    dk, dv = (dkv, result) if dv_out else (result, dkv)
    if mask_grad:  # the op returns dmask in the mask's dtype, shape [B, Hq, Sq, Sk] (its mask is the 4-D view)
        dmask = ds
    else:
        dmask = empty_strided([0], None, dtype=q.get_dtype(), device=device)
    return dq, dk, dv, dmask


def register() -> None:
    """Install both lowerings (idempotent; enable() calls it, disable() removes them)."""
    install(FWD_OP, attention_fwd_lowering)
    install(BWD_OP, attention_bwd_lowering)
    install(SUMMARY_OP, attention_mask_summary_lowering)
