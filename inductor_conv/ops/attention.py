"""Attention as PyTorch custom ops (flash-style: forward saves O and the row log-sum-exp), with autograd, fake
impls and the public function.

Notation: q (B, Hq, Sq, D), k/v (B, Hkv, Sk, D), G = Hq // Hkv query heads share one kv head.
S = cap(scale · q kᵀ) + mask, P = softmax(S) row-wise, O = dropout(P) v; LSE[b, h, i] = log Σ_j exp(S_ij) (fp32).
cap(x) = softcap · tanh(x / softcap) (logit soft-capping, Gemma 2; FlashAttention's ``softcap``), or x when
softcap = 0; its gradient is scale · (1 − tanh²) times dS (Note [soft-capping] in kernels/attn_math.py).

Note [attention backward recomputes P]: ``attention_bwd`` gets q, k, v, O and LSE, recomputes S tile by tile and
P = exp(S − LSE) with the whole row's LSE, and replays dropout from ``seed`` and the logical index (b, h, i, j).
Nothing of size Sq × Sk is saved, so the autograd function saves q, k, v, mask, O, LSE and seed only, and under
torch.compile the partitioner saves the same. Cited from kernels/attention.py and lowerings/attention.py.

Declared extension: a query row with no allowed key (all False / −inf, or empty under ``is_causal`` when Sq > Sk
is impossible here since causal is top-left aligned, but a bool mask can empty a row) returns zeros and zero
gradients, where eager SDPA returns NaN. Finite "minus infinity" masks (``finfo.min``) behave exactly as eager.

Note [empty attention]: with B, Hq, Sq or Sk zero the ops launch no kernel and run no fallback math: O is zeros of
q's shape (empty unless only Sk is zero), LSE is −inf (the log of an empty sum), and every gradient is zeros of its
input's shape. That is SDPA's result (torch 2.13, checked on CPU; its math backend takes softmax over zero keys and
then an empty P @ V, a sum of nothing: O = 0, dQ = 0, no NaN), and our empty-row convention for Sk = 0: every row
has no key. The public functions take the custom op for such calls (not the eager fast path), so eager, compiled
and the torch fallback share this one implementation.
"""
from __future__ import annotations

import functools
import math
import sys
import threading
from typing import Optional

import torch
from torch import Tensor

from inductor_conv import config
from inductor_conv._compat import any_autocast_enabled, raw_function_apply
from inductor_conv.heuristics.attention import (EAGER_MASK_PAD_HEAD_DIM, cudnn_attention_form, eager_cudnn_work,
                                               eager_mask_row)
from inductor_conv.kernels import empty_like_q
from inductor_conv.kernels.attention import planning_switches
from inductor_conv.kernels.attention_decode import MAX_QUERIES
from inductor_conv.kernels.native import built as native_extension_built
from inductor_conv.ops.eager import fast_path, needs_grad, use_triton
from inductor_conv.reference.attention import dropout_threshold, probs_ref

_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_FLOAT_MAX = sys.float_info.max
# Seeds are drawn in [0, 2**31); the dropout hash reads all 64 bits (attn_math's Note [dropout replay]).
_SEED_HIGH = 2**31 - 1


def _empty_mask_grad(q: Tensor) -> Tensor:
    return q.new_empty((0,))


def _is_empty(q: Tensor, k: Tensor) -> bool:
    """No score to compute: B, H or Sq zero (q has no element), or Sk zero (Note [empty attention])."""
    return q.numel() == 0 or k.shape[-2] == 0


# ---------------------------------------------------------------------------------------------------------------
# Custom ops
# ---------------------------------------------------------------------------------------------------------------
@torch.library.custom_op("inductor_conv::attention_fwd", mutates_args=())
def attention_fwd(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Optional[Tensor],
    dropout_p: float,
    is_causal: bool,
    scale: float,
    seed: Optional[Tensor],
    softcap: float = 0.0,
    mask_rows: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor]:
    """(O, LSE): O (B, Hq, Sq, Dv) in q's dtype (Dv: v's head dim), LSE (B, Hq, Sq) float32. attn_mask is 4-D
    (broadcast views ok).
    softcap (keyword, 0 = none) is left out of the call when 0, so graphs without it print as before.
    mask_rows: attention_mask_summary(attn_mask, True)[0], made before the call in a compiled graph (Note
    [summaries saved for the backward] in patterns/attention_summary.py); the eager op makes its own."""
    if _is_empty(q, k):  # Note [empty attention]
        return _like_q(q, v).zero_(), q.new_full(q.shape[:3], -math.inf, dtype=torch.float32)
    if _cudnn_eager(q, k, v, attn_mask, dropout_p, is_causal, softcap):  # Note [cuDNN route]
        out, lse = torch._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, is_causal, False,
                                                             scale=scale)[:2]
        like = _like_q(q, v)  # the fake impl's layout
        return (out if out.stride() == like.stride() else like.copy_(out)), lse.reshape(q.shape[:3]).contiguous()
    if use_triton(q):
        from inductor_conv.kernels.attention import attention_fwd as launch

        return launch(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap=softcap)
    return _torch_fwd(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap)


@attention_fwd.register_fake
def _(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap=0.0, mask_rows=None):
    B, Hq, Sq, _ = q.shape
    # O takes q's layout with v's head dim (the kernels and templates write it so: empty_like_q).
    return _like_q(q, v), q.new_empty((B, Hq, Sq), dtype=torch.float32)


# inductor_conv::attention_mask_summary: the rows and (when cols, else an empty tensor) cols summaries of a 4-D
# attention mask (broadcast views ok): kernels/attn_mask_summary.py, Note [mask ranges].  The templates' input when
# config.attention_mask_ranges.  In a compiled training graph the joint pass calls it once per mask, before the
# forward (Note [summaries saved for the backward] in patterns/attention_summary.py), and its lowering launches the
# kernels in the graph; elsewhere the attention lowerings launch the same kernels themselves, or call it as a
# fallback kernel on a CPU or with config.attention_summary_in_graph off (Note [summary kernels in the graph]);
# never under autograd.  Defined with torch.library.Library rather than
# custom_op: custom_op's Python layers (autograd, redispatch, the Dynamo-disabled wrapper) cost ~10 us a call, the
# dispatcher's direct call ~1.5 (this repository's 2-core CPU box); its int32 outputs have no gradient.
_LIB = torch.library.Library("inductor_conv", "FRAGMENT")
_LIB.define("attention_mask_summary(Tensor attn_mask, bool cols) -> (Tensor, Tensor)")


def attention_mask_summary(attn_mask: Tensor, cols: bool) -> tuple[Tensor, Tensor]:
    from inductor_conv.kernels.attn_mask_summary import mask_summary

    rows, col_sum = mask_summary(attn_mask, cols)
    return rows, (col_sum if cols else rows.new_empty(0))


_LIB.impl("attention_mask_summary", attention_mask_summary, "CompositeExplicitAutograd")


@torch.library.register_fake("inductor_conv::attention_mask_summary")
def _(attn_mask, cols):
    from inductor_conv.kernels.attn_mask_summary import summary_shapes

    rows, col_shape = summary_shapes(attn_mask)
    return (attn_mask.new_empty(rows, dtype=torch.int32),
            attn_mask.new_empty(col_shape if cols else (0,), dtype=torch.int32))


@torch.library.custom_op("inductor_conv::attention_bwd", mutates_args=())
def attention_bwd(
    dout: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    attn_mask: Optional[Tensor],
    out: Tensor,
    lse: Tensor,
    dropout_p: float,
    is_causal: bool,
    scale: float,
    seed: Optional[Tensor],
    mask_grad: bool,
    deterministic: bool,
    softcap: float = 0.0,
    mask_rows: Optional[Tensor] = None,
    mask_cols: Optional[Tensor] = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dq, dk, dv, dmask); dmask is (B, Hq, Sq, Sk) when mask_grad, else shape (0,). See Note above.
    mask_rows / mask_cols: attention_mask_summary(attn_mask, True) made by a compiled graph's forward and saved for
    its backward template (Note [summaries saved for the backward] in patterns/attention_summary.py); a function of
    attn_mask alone, so the eager op, which makes its own, does not read them."""
    if _is_empty(q, k):  # Note [empty attention]: nothing reads an element of v or sees a score
        dmask = (q.new_zeros((*q.shape[:3], k.shape[-2]), dtype=attn_mask.dtype) if mask_grad
                 else _empty_mask_grad(q))
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v), dmask
    if not mask_grad and _cudnn_eager(q, k, v, attn_mask, dropout_p, is_causal, softcap):  # Note [cuDNN route]
        return (*_cudnn_bwd(dout, q, k, v, out, lse, is_causal, scale), _empty_mask_grad(q))
    if use_triton(q):
        from inductor_conv.kernels.attention import attention_bwd as launch

        dq, dk, dv, dmask = launch(
            dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed,
            mask_grad=mask_grad, deterministic=deterministic, softcap=softcap,
        )
    else:
        dq, dk, dv, dmask = _torch_bwd(dout, q, k, v, attn_mask, lse, dropout_p, is_causal, scale, seed, mask_grad,
                                       softcap)
    if dmask is None:
        dmask = _empty_mask_grad(q)
    return dq, dk, dv, dmask


@attention_bwd.register_fake
def _(dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed, mask_grad, deterministic, softcap=0.0,
      mask_rows=None, mask_cols=None):
    if mask_grad:
        B, Hq, Sq, _ = q.shape
        dmask = q.new_empty((B, Hq, Sq, k.shape[-2]), dtype=attn_mask.dtype)
    else:
        dmask = _empty_mask_grad(q)
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v), dmask


def _like_q(q: Tensor, v: Tensor) -> Tensor:
    """An empty O: q's shape and dim order with v's head dim (Note [value head dim] in kernels/attn_math.py)."""
    return empty_like_q(q, v.shape[-1])


@functools.lru_cache(maxsize=None)
def _capability(device_index: int) -> tuple[int, int]:
    """The CUDA device's compute capability, asked once (torch.cuda.get_device_capability costs microseconds)."""
    return torch.cuda.get_device_capability(device_index)


def _aligned(t: Tensor) -> bool:
    """cuDNN's layout condition, as lowerings/attention.py's _aligned: a unit-stride head dim, the other strides
    multiples of 8 elements (16 bytes in fp16 / bf16) and a 16-byte aligned start."""
    *outer, last = t.stride()
    return last == 1 and all(s % 8 == 0 for s in outer) and t.data_ptr() % 16 == 0


def _cudnn_eager(q, k, v, attn_mask, dropout_p, is_causal, softcap) -> bool:
    """Note [cuDNN route] in heuristics/attention.py for concrete CUDA tensors (what lowerings/attention.py's
    _use_cudnn proves of sizes, checked on the values): no mask, dropout or soft-capping, Sk > 1, causal only with
    Sq == Sk (cuDNN aligns a causal band bottom-right, we top-left), B and H <= 65535, aligned layouts; and more than
    MAX_QUERIES queries: fewer run our flash-decoding kernels (Note [flash-decoding]), as the lowerings decide
    before they ask _use_cudnn; and config.attention_cudnn_eager_min_work of work (heuristics/attention.py's
    eager_cudnn_work): smaller calls cost less host time on our kernels, at a GPU time like cuDNN's."""
    if attn_mask is not None or dropout_p > 0.0 or softcap or not q.is_cuda:
        return False
    if not cudnn_attention_form(q.dtype, q.shape[-1], v.shape[-1], _capability(q.device.index)):
        return False
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    if Sk <= 1 or Sq <= MAX_QUERIES or (is_causal and Sq != Sk) or B > 65535 or H > 65535:
        return False
    if eager_cudnn_work(B, H, Sq, Sk, D, is_causal) < config.attention_cudnn_eager_min_work:
        return False
    return _aligned(q) and _aligned(k) and _aligned(v)


def _cudnn_attention(q, k, v, is_causal: bool, scale: float, grad: bool) -> Tensor:
    """The eager fast path's cuDNN call (Note [cuDNN route]): SDPA's own, LSE only when a backward will need it.
    SDPA's C++ autograd node reads dO as if it had O's strides: torch 2.11 on the H200 returned dq / dk / dv off by
    1-13 (against errors of 0.01) for a dO in another layout, SDPA itself too (it runs the same node).  So the
    native extension (Note [native backward]) makes the call and records its CudnnAttentionBackward, which copies dO
    into O's layout and calls cuDNN's backward, as _cudnn_bwd and the lowerings do; until the extension is built (or
    with config.native_backward off), the call from Python with SDPA's node under views whose backward puts dO into
    O's layout (_dout_in_layout: two more autograd nodes a backward)."""
    from inductor_conv.kernels.native import extension

    ext = extension()
    if ext is not None:  # the forward call and the node in one C++ call
        return ext.cudnn_attention(q, k, v, is_causal, scale, grad)
    out = torch._scaled_dot_product_cudnn_attention(q, k, v, None, grad, 0.0, is_causal, False, scale=scale)[0]
    return _dout_in_layout(out) if grad else out


def _dout_in_layout(out: Tensor) -> Tensor:
    """out (dense) as out viewed in its memory order, flattened and viewed back: the same values and strides, and
    autograd's backward of those views reshapes a gradient to one dimension, which copies it exactly when it is not
    dense in out's dim order (transposed, broadcast, strided), so the node below receives dO with out's strides.
    Views rather than a tensor hook: a hook would run Python on autograd's device thread, which costs more host
    time than the whole cuDNN backward at small shapes (H200: ~0.1 ms a call)."""
    if out.is_contiguous():
        return out.view(-1).view(out.shape)
    order = sorted(range(out.dim()), key=lambda d: -out.stride(d))  # the dims from outermost to innermost in memory
    base = out.permute(order)
    return base.view(-1).view(base.shape).permute([order.index(d) for d in range(out.dim())])


def _in_layout(stride, grad: Tensor) -> Tensor:
    """grad with these strides (a copy when it has others): what cuDNN's backward reads dO as."""
    return grad if grad.stride() == stride else grad.new_empty_strided(grad.shape, stride).copy_(grad)


def _cudnn_bwd(dout, q, k, v, out, lse, is_causal, scale):
    """cuDNN's fused backward (dq, dk, dv) from O and the row LSE (ours or cuDNN's: the same quantity and layout),
    dO in O's layout as cuDNN asks; p = 0, so its Philox seed and offset are never read (a placeholder)."""
    dout = _in_layout(out.stride(), dout)
    B, H, Sq = q.shape[:3]
    philox = q.new_empty((1,), dtype=torch.int64)
    return torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
        dout, q, k, v, out, lse.reshape(B, H, Sq, 1), philox, philox, None, None, None, Sq, k.shape[2], 0.0,
        is_causal, scale=scale)


def softcap_kwargs(softcap) -> dict:
    """The ops' softcap keyword: absent when 0, so graphs without soft-capping keep their calls."""
    return {"softcap": float(softcap)} if softcap else {}


def _setup_context(ctx, inputs, output):
    q, k, v, attn_mask, dropout_p, is_causal, scale, seed, *rest = inputs  # rest: softcap, mask_rows when passed
    out, lse = output
    # Note [attention backward recomputes P]: O and LSE, never P.
    ctx.save_for_backward(q, k, v, attn_mask, out, lse, seed)
    ctx.args = (dropout_p, is_causal, scale)
    ctx.softcap = rest[0] if rest else 0.0
    ctx.inputs = len(inputs)
    ctx.mask_grad = attn_mask is not None and attn_mask.requires_grad and attn_mask.is_floating_point()


def _backward(ctx, dout, dlse):
    q, k, v, attn_mask, out, lse, seed = ctx.saved_tensors
    dropout_p, is_causal, scale = ctx.args
    dq, dk, dv, dmask = torch.ops.inductor_conv.attention_bwd(
        dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed, ctx.mask_grad, config.deterministic,
        **softcap_kwargs(ctx.softcap),
    )
    return dq, dk, dv, dmask if ctx.mask_grad else None, *[None] * (ctx.inputs - 4)


attention_fwd.register_autograd(_backward, setup_context=_setup_context)


# ---------------------------------------------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------------------------------------------
def attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> Tensor:
    """Fused attention with the semantics and the signature of ``F.scaled_dot_product_attention``: its argument
    names, order and defaults, scale and enable_gqa keyword-only as in its schema, so every call SDPA accepts works.

    Args:
        query, key: ``[B, Hq, Sq, D]``, ``[B, Hkv, Sk, D]``; value ``[B, Hkv, Sk, Dv]`` (Dv may differ from D, as in
            MLA); any strides; float32/float16/bfloat16;
            16 <= D, Dv <= 256. Zero B, H, Sq or Sk give SDPA's result: an empty output, or zeros when only Sk is zero,
            and zero gradients (Note [empty attention]).
        attn_mask: bool (True = attend) or additive float, broadcastable to ``[B, Hq, Sq, Sk]``. A float mask that
            requires grad (a learned bias) gets its gradient, summed over its broadcast dims.
        dropout_p: dropout on the probabilities; the keep mask is a pure function of a seed drawn from torch's
            generator and the logical index (b, h, i, j), so ``torch.manual_seed`` reproduces a step.
        is_causal: key j attends to query i iff j <= i (top-left aligned, like SDPA). Not with attn_mask.
        scale: score scale, default ``1 / sqrt(D)``; zero or negative scales multiply query instead (as SDPA allows).
        enable_gqa: allow Hq = G · Hkv (grouped-query attention); key/value are never repeated per query head.

    Returns:
        ``[B, Hq, Sq, Dv]`` in query's dtype. A row with no allowed key is zero (eager would give NaN).

    Without a mask, dropout or soft-capping (fp16 / bf16, one head dim, a multiple of 8; causal only with Sq == Sk)
    on an sm_90+ GPU a call of at least ``config.attention_cudnn_eager_min_work`` (B · Hq · Sq · Sk · (D / 8)²,
    halved when causal) runs cuDNN's fused kernels, as SDPA does there, with the output gradient put into the
    output's layout first (``config.attention_cudnn``; Note [cuDNN route] in heuristics/attention.py); smaller calls
    run ours, whose calls cost less host time.

    Under ``torch.autocast`` query, key, value and a float mask are first cast to autocast's dtype, as SDPA's are
    (Note [eager attention under autocast]).
    """
    if any_autocast_enabled():
        cast = _autocast_inputs(query, key, value, attn_mask)
        if cast is not None:
            with torch.autocast(query.device.type, enabled=False):
                return attention(*cast, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    if attn_mask is None and type(dropout_p) in _NUMBERS:
        out = _native_route(query, key, value, dropout_p, is_causal, scale, enable_gqa)
        if out is not None:
            return out
    return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, None)


_NUMBERS = (float, int)


# Note [eager attention under autocast]: SDPA is on autocast's lower-precision list: inside ``torch.autocast`` its
# floating-point arguments other than float64 (query, key, value and a float mask) are cast to autocast's dtype and it
# runs in that dtype. The eager functions do the same, so that code written for SDPA under autocast runs our
# kernels in bf16 / fp16 rather than float32, and returns what SDPA returns: the cast, then the call with autocast
# off (so that the torch fallback's ops, on CPU, are not cast again). The casts are autograd ops, so the gradients
# reach the float32 leaves in their dtype. Float64 arguments are left as they are, as by autocast (a float64 call
# runs in float64); sinks keep their dtype (a logit per head or row, which the op takes in any float dtype).
# Calls outside autocast pay one check, any_autocast_enabled (0.1 us). Under torch.compile Dynamo traces the cast into
# the graph like any other op; a model's own attention under autocast is matched by the patterns, casts included
# (Note [autocast respellings] in patterns/autocast.py).
def _autocast_inputs(q, k, v, attn_mask) -> Optional[tuple]:
    """(q, k, v, attn_mask) cast as autocast casts SDPA's arguments, or None when autocast is off for query's device
    (or query is not a Tensor: the argument checks then name it)."""
    if not isinstance(q, Tensor):
        return None
    device_type = q.device.type
    if device_type not in _AUTOCAST_DEVICES or not torch.is_autocast_enabled(device_type):
        return None
    dtype = torch.get_autocast_dtype(device_type)
    return _cast(q, dtype), _cast(k, dtype), _cast(v, dtype), _cast(attn_mask, dtype)


def _cast(t, dtype):
    """autocast's cast of one argument: floating-point tensors other than float64 to dtype (a no-op in it)."""
    if isinstance(t, Tensor) and t.dtype != dtype and t.is_floating_point() and t.dtype != torch.float64:
        return t.to(dtype)
    return t


_AUTOCAST_DEVICES = ("cuda", "cpu")  # torch.is_autocast_enabled raises for device types autocast does not know (meta)


def _native_route(q, k, v, dropout_p, is_causal, scale, enable_gqa) -> Optional[Tensor]:
    """A call without a mask run by one C++ call of the native extension: the cuDNN route without dropout (Note
    [cuDNN route from C++] in inductor_conv/csrc/backward_node.cpp), else a form the Python path has registered
    (Note [eager attention from C++]); None otherwise, and the Python path then checks the arguments and decides as
    before.  Not under torch.compile (Dynamo traces the Python path into the custom op), and not before the
    extension is built (the Python path's first GPU call starts its build)."""
    if torch.compiler.is_compiling():
        return None
    ext = native_extension_built()
    if ext is None:
        return None
    if dropout_p == 0 and config.attention_cudnn:
        out = ext.eager_cudnn_attention(q, k, v, is_causal, scale, enable_gqa, config.attention_cudnn_eager_min_work)
        if out is not None:
            return out
    return ext.eager_attention(q, k, v, dropout_p, is_causal, scale, enable_gqa, _switches())


def _switches() -> int:
    """The config switches the attention's planning reads (kernels/attention.py's planning_switches), as one int: a
    key of the registered forms."""
    fast_tanh, mask_ranges, split_head_dim, masked_first = planning_switches()
    return fast_tanh | mask_ranges << 1 | split_head_dim << 2 | masked_first << 3


def _register_native(q, k, v, dropout_p, is_causal, scale, seed_value, backward) -> None:
    """Registers a call without a mask or soft-capping that the Python path checked and runs natively (backward: its
    backward's Program, None without grad) with the extension, so that later calls of its form run from C++ (Note
    [eager attention from C++]): the forward's Program is planned once per form (kernels/attention.py's
    native_forward)."""
    from inductor_conv.kernels.attention import native_forward

    forward = native_forward(q, k, v, dropout_p, is_causal, scale, seed_value)
    if forward is not None:
        native_extension_built().register_attention(q, k, v, dropout_p, is_causal, scale, _switches(), forward,
                                                     backward)


def softcapped_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    softcap: float,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``attention`` with logit soft-capping (Gemma 2's ``attn_logit_softcapping``, FlashAttention's ``softcap``):
    the scaled scores become ``softcap * tanh(scale * query keyᵀ / softcap)`` before ``attn_mask`` is added.

    Args:
        softcap: the cap, a finite float >= 0 (0: no soft-capping, then exactly ``attention``); the other
            arguments as in ``attention`` (SDPA's names).

    Returns:
        ``[B, Hq, Sq, Dv]`` in query's dtype (autocast's under ``torch.autocast``, as ``attention``).
    """
    if any_autocast_enabled():
        cast = _autocast_inputs(query, key, value, attn_mask)
        if cast is not None:
            with torch.autocast(query.device.type, enabled=False):
                return softcapped_attention(*cast[:3], softcap, cast[3], dropout_p, is_causal, scale=scale,
                                            enable_gqa=enable_gqa)
    return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, softcap)


def attention_with_sinks(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    sinks: Tensor,
    attn_mask: Optional[Tensor] = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: Optional[float] = None,
    enable_gqa: bool = False,
    softcap: float = 0.0,
) -> Tensor:
    """``attention`` with attention sinks (gpt-oss; vLLM's and FlashAttention's ``sinks``): a learned logit per
    query head joins every row's softmax as one more column that carries no value (Note [attention sinks]).

    Args:
        sinks: ``[Hq]`` float (any float dtype, query's device), one logit per query head; or ``[B, Hq, Sq]``, one
            per query row (HF Inkling 2 computes them from the hidden states); gets its gradient.
        softcap: logit soft-capping as in ``softcapped_attention`` (0: none); the other arguments as in
            ``attention`` (SDPA's names).

    Returns:
        ``[B, Hq, Sq, Dv]`` in query's dtype (autocast's under ``torch.autocast``, as ``attention``); a row with no
        allowed key puts all its weight on the sink: 0, as eager gives.
    """
    if sinks is None:
        raise TypeError("sinks must be a Tensor, got None (use attention without sinks)")
    if any_autocast_enabled():
        cast = _autocast_inputs(query, key, value, attn_mask)
        if cast is not None:
            with torch.autocast(query.device.type, enabled=False):
                return attention_with_sinks(*cast[:3], sinks, cast[3], dropout_p, is_causal, scale=scale,
                                            enable_gqa=enable_gqa, softcap=softcap)
    return _attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, softcap, sinks)


def dropout_seed(dropout_p: float, device) -> Optional[Tensor]:
    """The seed the op's dropout replays its keep mask from (int64 (1,) on ``device``), drawn only when there is
    dropout; None otherwise."""
    return torch.randint(0, _SEED_HIGH, (1,), dtype=torch.int64, device=device) if dropout_p > 0.0 else None


_HOST_SEED = {"lock": threading.Lock(), "ok": True}
_M64 = (1 << 64) - 1


def host_dropout_seed(device) -> Optional[int]:
    """The eager kernels' dropout seed drawn on the host (Note [host dropout seed] in kernels/attention.py): a hash of
    the device's CUDA generator's seed and Philox offset, which it advances by 4 as a draw on the device would, so
    ``torch.manual_seed`` and a restored RNG state (activation checkpointing) give the same seed again.  In
    [2^61, 2^62).  None where it cannot be: not CUDA, while a CUDA graph is being captured (a value fixed at capture
    would repeat at every replay), or a torch whose CUDA generator has no Philox offset to read."""
    if device.type != "cuda" or not _HOST_SEED["ok"]:
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    ext = native_extension_built()
    if ext is not None:  # the same draw in C++, under the generator's own lock (Note [eager attention from C++])
        seed = ext.host_dropout_seed(index)
        return None if seed < 0 else seed
    if torch.cuda.is_current_stream_capturing():
        return None
    gen = torch.cuda.default_generators[index]
    try:
        with _HOST_SEED["lock"]:
            offset = gen.get_offset()
            gen.set_offset(offset + 4)
    except (AttributeError, RuntimeError):
        _HOST_SEED["ok"] = False
        return None
    return seed_hash(gen.initial_seed(), offset)


def seed_hash(seed: int, offset: int) -> int:
    """The host dropout seed of a generator's seed and Philox offset: splitmix64's finaliser of seed · φ + offset
    (mod 2^64), its top 3 bits replaced by 001, so [2^61, 2^62) (backward_node.cpp's dropout_seed_hash, the same)."""
    x = (seed * 0x9E3779B97F4A7C15 + offset + 0x632BE59BD9B4E019) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return (1 << 61) | ((x ^ (x >> 31)) >> 3)


def _eager_seed(dropout_p: float, device) -> tuple[Optional[Tensor], Optional[int]]:
    """(seed, seed_value) for the eager kernels: the seed drawn on the host and the one-element tensor the forward
    kernel writes it into (Note [host dropout seed]), else dropout_seed's tensor and None; (None, None) without
    dropout."""
    if dropout_p <= 0.0:
        return None, None
    value = host_dropout_seed(device)
    if value is None:
        return dropout_seed(dropout_p, device), None
    return torch.empty((1,), dtype=torch.int64, device=device), value


def _attention(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, softcap, sinks=None):
    _check_args(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, softcap, sinks)
    B, Hq, Sq, D = q.shape
    Sk = k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(D)
    if not scale > 0:  # the op takes positive scales (folded into exp2 after the row max): scale q instead
        q, scale = q * scale, 1.0
    if attn_mask is not None:
        attn_mask = attn_mask.expand(B, Hq, Sq, Sk)  # a view: broadcast dims get stride 0, nothing is copied
    if sinks is not None:  # through the custom ops, on every path (Note [attention sinks])
        seed = dropout_seed(dropout_p, q.device)
        return sink_attention(q, k, v, attn_mask, sinks, dropout_p, is_causal, scale, seed, softcap)
    if fast_path(q, k, v, attn_mask) and not _is_empty(q, k):  # Note [eager fast path] in ops/eager.py
        if _cudnn_eager(q, k, v, attn_mask, dropout_p, is_causal, softcap):  # Note [cuDNN route]
            return _cudnn_attention(q, k, v, bool(is_causal), float(scale), needs_grad(q, k, v))
        attn_mask = _aligned_rows(attn_mask, D)
        seed, seed_value = _eager_seed(dropout_p, q.device)
        args = (q, k, v, attn_mask, float(dropout_p), bool(is_causal), float(scale), seed, float(softcap or 0.0),
                seed_value)
        if needs_grad(q, k, v, attn_mask):
            native = attn_mask is None or not attn_mask.requires_grad
            out = _native_attention(*args) if native else None
            return out if out is not None else _eager_attention(*args)
        from inductor_conv.kernels.attention import launch_fwd

        if attn_mask is None and not softcap:
            _register_native(q, k, v, float(dropout_p), bool(is_causal), float(scale), seed_value, None)
        return launch_fwd(*args[:9], seed_value=seed_value)[0]
    seed = dropout_seed(dropout_p, q.device)
    out, _ = torch.ops.inductor_conv.attention_fwd(q, k, v, attn_mask, float(dropout_p), is_causal, float(scale), seed,
                                                   **softcap_kwargs(softcap))
    return out


def _aligned_rows(mask: Optional[Tensor], head_dim: int) -> Optional[Tensor]:
    """The eager kernels' mask: at head dims up to EAGER_MASK_PAD_HEAD_DIM, a mask whose rows are not a multiple of
    16 elements apart copied into rows that are (Note [mask row alignment] in heuristics/attention.py), its broadcast
    dims still views of the one copy.  The copy is differentiable, so a learned bias still gets its gradient."""
    if mask is None or not config.attention_mask_row_bytes or head_dim > EAGER_MASK_PAD_HEAD_DIM:
        return mask
    *_, rows, keys = mask.shape
    if mask.stride(-1) != 1 or rows == 1 or mask.stride(-2) % 16 == 0:
        return mask
    broadcast = [n > 1 and st == 0 for n, st in zip(mask.shape, mask.stride())]
    base = mask[tuple(slice(0, 1) if b else slice(None) for b in broadcast)]
    padded = base.new_empty(*base.shape[:-1], eager_mask_row(keys))[..., :keys]
    padded.copy_(base)
    return padded.expand(mask.shape)


class _EagerAttention(torch.autograd.Function):
    """The public function's eager path (Note [eager fast path] in ops/eager.py): the op's forward and backward
    launchers, without the custom op's dispatch.  Saves what the op's autograd saves (Note [attention backward
    recomputes P]) and the mask's rows summary and flags (Note [mask ranges], Note [mask summary passes]; 1/256 of the
    mask's elements), which the backward would make again (two launches; H200, a (4, 1, 2048, 2048) mask: 0.012 ms
    bool, 0.022 bf16 for the flags); the mask is saved with them, so autograd refuses a backward after the mask was
    changed in place."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap, seed_value):
        from inductor_conv.kernels.attention import launch_fwd_rows

        out, lse, rows, flags = launch_fwd_rows(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap,
                                                seed_value=seed_value)
        ctx.save_for_backward(q, k, v, attn_mask, out, lse, seed, rows, flags)
        ctx.args = (dropout_p, is_causal, scale, softcap)
        ctx.mask_grad = attn_mask is not None and attn_mask.requires_grad and attn_mask.is_floating_point()
        return out

    @staticmethod
    def backward(ctx, dout):
        from inductor_conv.kernels.attention import launch_bwd, reduce_dmask

        q, k, v, attn_mask, out, lse, seed, rows, flags = ctx.saved_tensors
        dropout_p, is_causal, scale, softcap = ctx.args
        if dout.dtype != q.dtype:
            dout = dout.to(q.dtype)
        dq, dk, dv, ds = launch_bwd(dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed,
                                    ctx.mask_grad, softcap, rows=rows, flags=flags)
        dmask = reduce_dmask(ds, attn_mask) if ctx.mask_grad else None
        return dq, dk, dv, dmask, None, None, None, None, None, None


_eager_attention = raw_function_apply(_EagerAttention)


def _native_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap, seed_value):
    """O with a C++ backward node (Note [native backward] in inductor_conv/csrc/backward_node.cpp): the launches of
    _EagerAttention's backward, planned here on the calling thread; None where that path does not apply
    (kernels/attention.py's native_backward), and then the Function runs.  attn_mask: None or one that needs no
    gradient; it is saved with its summaries, as the Function saves them."""
    from inductor_conv.kernels.attention import launch_fwd_rows, native_backward, native_saved

    program = native_backward(q, k, v, attn_mask, dropout_p, is_causal, scale, softcap)
    if program is None:
        return None
    from inductor_conv.kernels.native import extension

    out, lse, rows, flags = launch_fwd_rows(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap,
                                            seed_value=seed_value)
    # out detached: no reference cycle through the node
    saved = native_saved(q, k, v, attn_mask, out.detach(), lse, seed, rows, flags)  # seed: None without dropout
    extension().attach(out, [q, k, v], saved, program)
    if attn_mask is None and not softcap:
        _register_native(q, k, v, dropout_p, is_causal, scale, seed_value, program)
    return out


# Note [attention sinks]: gpt-oss gives each query head h a learned logit s_h that joins every row's softmax as
# one more column and carries no value: P_ij = exp(S_ij) / (Σ_j' exp(S_ij') + exp(s_h)), O = dropout(P) v (the
# sink's probability is dropped with its column).  Over the keys that is the plain softmax rescaled per row, so
# the op's kernels serve unchanged:
#   LSE' = logaddexp(LSE, s_h),   O' = O · exp(LSE − LSE'),
# and the backward is the op's own with (O', LSE') in place of (O, LSE): it recomputes P' = exp(S − LSE') and takes
# δ = rowsum(dO ∘ O'), which is the softmax's Σ_k P'_ik dP_ik over keys and sink alike since the sink's dP is 0
# (Note [attention backward recomputes P]; dropout as there).  The sink's gradient is its column's dS summed over
# the batch and the rows it broadcasts to: ds_h = −Σ_{b,i} exp(s_h − LSE'_bhi) · δ_bhi.  A row with no allowed key
# (LSE = −inf, or the floor sentinel of Note [finite-floor rows]) puts all its weight on the sink: O' = 0 and no
# gradient, as eager gives.  The scale exp(LSE − LSE') is taken as 0 where LSE' is −inf (a sink of −inf on such a
# row), where eager has 0/0.  Sinks given per query row (B, Hq, Sq) (HF Inkling 2 projects them from the hidden
# states) are the same with s_bhi for s_h, and their gradient is each row's term, not summed.
def _sink_logits(sinks: Tensor) -> Tensor:
    """The sinks as fp32 logits broadcastable to the rows' (B, Hq, Sq): (Hq, 1) for one per head, else as given."""
    return sinks.float()[:, None] if sinks.dim() == 1 else sinks.float()


def _sink_ratio(num: Tensor, lse: Tensor) -> Tensor:
    """exp(num − lse) in fp32, 0 where lse is −inf (Note [attention sinks])."""
    return torch.where(lse > -math.inf, torch.exp(num - lse), 0.0)


class _SinkAttention(torch.autograd.Function):
    """Attention with a sink logit per query head or row (Note [attention sinks]) on the custom ops, so it runs
    wherever they do (every device and dtype, under torch.compile, in the rewritten graphs of patterns/attention.py).
    Saves what the op saves, with O' and LSE' for O and LSE, and the sinks."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, sinks, dropout_p, is_causal, scale, seed, softcap):
        out, lse = torch.ops.inductor_conv.attention_fwd(q, k, v, attn_mask, dropout_p, is_causal, scale, seed,
                                                         **softcap_kwargs(softcap))
        lse_sink = torch.logaddexp(lse, _sink_logits(sinks))  # (B, Hq, Sq) with (Hq, 1) or (B, Hq, Sq)
        scaled = out.float() * _sink_ratio(lse, lse_sink)[..., None]
        # Cast only where the dtypes differ: torch 2.11's Dynamo gives an autograd.Function whose forward returns a
        # no-op ``.to`` zero gradients (its backward is traced with a zero dout); 2.13 does not.
        out = scaled if scaled.dtype == out.dtype else scaled.to(out.dtype)
        ctx.save_for_backward(q, k, v, attn_mask, out, lse_sink, seed, sinks)
        ctx.args = (dropout_p, is_causal, scale, softcap)
        ctx.mask_grad = attn_mask is not None and attn_mask.requires_grad and attn_mask.is_floating_point()
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, attn_mask, out, lse, seed, sinks = ctx.saved_tensors
        dropout_p, is_causal, scale, softcap = ctx.args
        dout = dout.to(out.dtype)
        dq, dk, dv, dmask = torch.ops.inductor_conv.attention_bwd(
            dout, q, k, v, attn_mask, out, lse, dropout_p, is_causal, scale, seed, ctx.mask_grad,
            config.deterministic, **softcap_kwargs(softcap))
        dsinks = None
        if ctx.needs_input_grad[4]:
            delta = (dout.float() * out.float()).sum(-1)
            dsinks = -(_sink_ratio(_sink_logits(sinks), lse) * delta)
            dsinks = (dsinks.sum((0, 2)) if sinks.dim() == 1 else dsinks).to(sinks.dtype)
        return dq, dk, dv, dmask if ctx.mask_grad else None, dsinks, None, None, None, None, None


def sink_attention(q, k, v, attn_mask, sinks, dropout_p, is_causal, scale, seed, softcap=0.0) -> Tensor:
    """The op with sinks (Note [attention sinks]): arguments as ``attention_fwd``'s, ``sinks`` (Hq,) or (B, Hq, Sq)
    float."""
    return _SinkAttention.apply(q, k, v, attn_mask, sinks, float(dropout_p), bool(is_causal), float(scale), seed,
                                float(softcap or 0.0))


def _check_args(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, softcap=None, sinks=None) -> None:
    """The public functions' checks; messages name SDPA's arguments (query, key, value, ...)."""
    for name, t in (("query", q), ("key", k), ("value", v)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} must have shape (B, H, S, D), got a {t.dim()}-d tensor {tuple(t.shape)}")
        if t.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"{name} must be float32, float16 or bfloat16, got {t.dtype}")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"query, key and value must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if k.device != q.device or v.device != q.device:
        raise ValueError(f"query, key and value must share a device, got {q.device}, {k.device}, {v.device}")
    B, Hq, Sq, D = q.shape
    if k.shape[0] != B or v.shape[0] != B:
        raise ValueError(f"key and value must have batch size {B}, got {k.shape[0]} and {v.shape[0]}")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"key and value must agree on (B, Hkv, Sk), got {tuple(k.shape)} and {tuple(v.shape)}")
    if k.shape[-1] != D:
        raise ValueError(f"query and key must share the head dim D={D}, got key {k.shape[-1]}")
    if not 16 <= D <= 256:
        raise ValueError(f"head dim D must be in [16, 256], got {D}")
    if not 16 <= v.shape[-1] <= 256:  # value may have another head dim (MLA: Note [value head dim])
        raise ValueError(f"value's head dim must be in [16, 256], got {v.shape[-1]}")
    Hkv = k.shape[1]
    if Hkv == 0 and Hq != 0:  # SDPA broadcasts zero heads to Hq and returns zeros; there is no head to read
        raise ValueError(f"key and value have no heads but query has {Hq}")
    if Hkv != Hq:
        if not enable_gqa:
            raise ValueError(f"query has {Hq} heads but key/value have {Hkv}: pass enable_gqa=True for grouped-query "
                             "attention")
        if Hq % Hkv != 0:
            raise ValueError(f"query's heads ({Hq}) must be a multiple of key/value's heads ({Hkv})")
    if not isinstance(dropout_p, (int, float, torch.SymFloat)):
        raise TypeError(f"dropout_p must be a float, got {type(dropout_p).__name__}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p}")
    # a comparison, not math.isfinite: under torch.compile(dynamic=True) a scale computed from the shape is symbolic;
    # against the largest float, so that an int too large for one is refused here rather than by float(scale)
    if scale is not None and not (isinstance(scale, (int, float)) and -_FLOAT_MAX <= scale <= _FLOAT_MAX):
        raise TypeError(f"scale must be a finite float or None, got {scale!r}")
    if softcap is not None and not (isinstance(softcap, (int, float)) and not isinstance(softcap, bool)
                                    and 0.0 <= softcap < math.inf):
        raise ValueError(f"softcap must be a finite float >= 0 or None (0 and None: no soft-capping), got {softcap!r}")
    if sinks is not None:
        if not isinstance(sinks, Tensor):
            raise TypeError(f"sinks must be a Tensor or None, got {type(sinks).__name__}")
        if sinks.shape != (Hq,) and sinks.shape != (B, Hq, Sq):
            raise ValueError(f"sinks must have shape ({Hq},), one logit per query head, or {(B, Hq, Sq)}, one per "
                             f"query row, got {tuple(sinks.shape)}")
        if not sinks.is_floating_point():
            raise TypeError(f"sinks must be a floating-point tensor, got {sinks.dtype}")
        if sinks.device != q.device:
            raise ValueError(f"sinks is on {sinks.device} but query is on {q.device}")
    if attn_mask is not None:
        if not isinstance(attn_mask, Tensor):
            raise TypeError(f"attn_mask must be a Tensor, got {type(attn_mask).__name__}")
        if is_causal:
            raise ValueError("attn_mask and is_causal cannot both be set (as in scaled_dot_product_attention)")
        if attn_mask.dtype != torch.bool and attn_mask.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"attn_mask must be bool or floating point, got {attn_mask.dtype}")
        if attn_mask.device != q.device:
            raise ValueError(f"attn_mask is on {attn_mask.device} but q is on {q.device}")
        if attn_mask.dim() > 4:
            raise ValueError(f"attn_mask must have at most 4 dims, got shape {tuple(attn_mask.shape)}")
        try:
            torch.broadcast_shapes(attn_mask.shape, (B, Hq, Sq, k.shape[-2]))
        except RuntimeError:
            raise ValueError(
                f"attn_mask of shape {tuple(attn_mask.shape)} does not broadcast to {(B, Hq, Sq, k.shape[-2])}"
            ) from None


# ---------------------------------------------------------------------------------------------------------------
# Torch fallback (CPU without the Triton interpreter, float64): same math, materialised
# ---------------------------------------------------------------------------------------------------------------
def _mix32(x: Tensor) -> Tensor:
    """M(x) of attn_math's Note [dropout replay] on int64 tensors holding uint32 values (products wrap mod 2^64,
    whose low 32 bits are the uint32 product)."""
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x = x ^ (x >> 15)
    return (x * 0x846CA68B) & 0xFFFFFFFF


def _lowbias32(x: Tensor) -> Tensor:
    x = _mix32(x ^ (x >> 16))
    return x ^ (x >> 16)


def _torch_dropout_keep(seed: Tensor, shape, p: float, device) -> Tensor:
    """Keep mask [B, H, Sq, Sk] (bool): bit for bit the kernels' ``dropout_keep`` (attn_math's Note [dropout
    replay]), here with int64 tensor ops masked to 32 bits, so the fallback and the Triton kernels drop the same
    elements."""
    B, H, Sq, Sk = shape
    m32 = 0xFFFFFFFF
    s = seed.to(device=device, dtype=torch.int64).reshape(())
    idx = lambda n: torch.arange(n, dtype=torch.int64, device=device)  # noqa: E731
    k = _lowbias32(((s >> 32) & m32) ^ 0x6A09E667)
    k = _lowbias32(k ^ (s & m32))
    k = _lowbias32(k ^ idx(B).view(B, 1, 1, 1))
    k_r = _lowbias32(k ^ idx(H).view(1, H, 1, 1))
    k_c = _lowbias32(k_r ^ 0xBB67AE85)
    b_r = _mix32(k_r ^ idx(Sq).view(1, 1, Sq, 1))
    j = idx(Sk)
    b_c = (((j >> 4) * 8 + (j & 7)) * 0x9E3779B9 & m32).view(1, 1, 1, Sk)  # key pairs (j, j + 8) share a word
    x = _mix32(b_r ^ b_c ^ k_c)
    return torch.where((j & 8).view(1, 1, 1, Sk) != 0, x >> 16, x & 0xFFFF) >= dropout_threshold(p)


def _torch_fwd(q, k, v, attn_mask, dropout_p, is_causal, scale, seed, softcap=0.0):
    p, lse = probs_ref(q, k, attn_mask, is_causal, scale, softcap)
    if dropout_p > 0.0:
        p = p * _torch_dropout_keep(seed, p.shape, dropout_p, q.device) / (1.0 - dropout_p)
    G = q.shape[1] // k.shape[1]
    vv = v.repeat_interleave(G, dim=1) if G > 1 else v
    out = _like_q(q, v).copy_(p @ vv.double())
    return out, lse.float()


def _torch_bwd(dout, q, k, v, attn_mask, lse, dropout_p, is_causal, scale, seed, mask_grad, softcap=0.0):
    """The flash backward's math, materialised: dS = P∘(dP − rowsum(dO∘O)), GQA heads summed per kv head; with
    soft-capping the scores' gradient is dS∘(1 − tanh²) (the mask's stays dS).  P = exp(S − LSE) with the given
    LSE, as the kernels recompute it (Note [attention backward recomputes P]; a caller's LSE may normalise over more
    than the keys: Note [attention sinks]), O = dropout(P) v from that P."""
    p, lse_keys = probs_ref(q, k, attn_mask, is_causal, scale, softcap)
    # exp(S − LSE) = softmax(S) · exp(LSE_keys − LSE), 0 on rows without a key
    p = torch.where(p > 0, p * torch.exp(lse_keys - lse.double())[..., None], 0.0)
    B, Hq, Sq, Sk = p.shape
    G = Hq // k.shape[1]
    keep = _torch_dropout_keep(seed, p.shape, dropout_p, q.device) / (1.0 - dropout_p) if dropout_p > 0 else 1.0
    vv = v.double().repeat_interleave(G, dim=1) if G > 1 else v.double()
    kk = k.double().repeat_interleave(G, dim=1) if G > 1 else k.double()
    do = dout.double()
    out = (p * keep) @ vv
    dv = ((p * keep).transpose(-2, -1) @ do).unflatten(1, (-1, G)).sum(2)
    dp = (do @ vv.transpose(-2, -1)) * keep
    ds = p * (dp - (do * out).sum(-1, keepdim=True))
    dmask = ds.to(attn_mask.dtype) if mask_grad else None
    if softcap:
        ds = ds * (1.0 - torch.tanh(scale * (q.double() @ kk.transpose(-2, -1)) / softcap) ** 2)
    dq = scale * ds @ kk
    dk = (scale * ds.transpose(-2, -1) @ q.double()).unflatten(1, (-1, G)).sum(2)
    dq, dk, dv = (torch.empty_like(t).copy_(g) for t, g in ((q, dq), (k, dk), (v, dv)))
    return dq, dk, dv, dmask
