"""Causal depthwise conv1d (+SiLU) as PyTorch custom ops, with autograd, fake impls and the public function.

Notation: x (B, C, L), weight w (C, K), bias β (C,), z = β + Σ_k w[:, k] · x̃[..., t − K + 1 + k] where x̃ is x
left-padded with K − 1 zeros (or ``initial_states``), y = SiLU(z) or z.

Note [conv backward recomputes z]: ``causal_conv1d_bwd`` takes the forward's *inputs* (x, w, β) and recomputes z
inside its one fused pass, because SiLU'(z) needs z (never y) and z is as large as x: saving it would double the
activation memory and the backward's reads. The autograd function therefore saves only the inputs, and under
torch.compile the partitioner saves only them too. Cited from kernels/causal_conv1d.py and
lowerings/causal_conv1d_silu.py.

Note [padding in packed sequences]: with ``seq_idx``, a position whose id is negative is padding and its y is 0
(Dao-AILab causal-conv1d's forward); a tap reads x only inside the sequence of its output (equal ids). The
backward is the exact gradient of that forward: a padding y is a constant, so its dy reaches nothing (delta = 0
there), and since no token reads a padding input (the ids differ), dx is 0 at padding positions. Dao's backward
lets dy at padding positions into dx, dw and dbias, which is not the gradient of his forward (docs/conv.md).
Every implementation shares this reading: kernels/conv_math.py (``is_token``), the torch fallback below and the
float64 reference (reference/conv.py).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from inductor_conv import config
from inductor_conv._compat import raw_function_apply
from inductor_conv.kernels.native import built as native_extension_built
from inductor_conv.ops.eager import fast_path, needs_grad, use_triton

# The public functions' `activation` argument -> the ops' (also read by ops/causal_conv1d_update.py).
ACTIVATIONS = {None: "none", "silu": "silu", "swish": "silu"}
# The dtypes x, weight, bias and initial_states may have (float64: the torch path, for gradcheck).
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


# ---------------------------------------------------------------------------------------------------------------
# Custom ops: forward and backward
# ---------------------------------------------------------------------------------------------------------------
@torch.library.custom_op("inductor_conv::causal_conv1d_fwd", mutates_args=())
def causal_conv1d_fwd(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    seq_idx: Optional[Tensor],
    initial_states: Optional[Tensor],
    activation: str,
    contiguous_out: bool = False,
) -> Tensor:
    """y = act(conv1d(left-pad(x), weight, bias, groups=C)); x (B, C, L) any strides, weight (C, K).

    y is laid out like x (what a channel-last block consumes next), or contiguous with contiguous_out: the layout
    eager's conv1d returns, which the pattern rewrite keeps where y leaves a compiled graph (Note [conv output
    layout] in patterns/causal_conv1d_silu.py)."""
    if use_triton(x):
        from inductor_conv.kernels.causal_conv1d import causal_conv1d_fwd as launch

        y = launch(x, weight, bias, seq_idx, initial_states, activation)
        return y.contiguous() if contiguous_out else y
    z, _, _, tokens = _torch_pre_activation(x, weight, bias, seq_idx, initial_states)
    y = z * torch.sigmoid(z) if activation == "silu" else z
    if tokens is not None:
        y = torch.where(tokens, y, 0.0)  # a padding position's y is 0 (Note [padding in packed sequences])
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device) if contiguous_out else torch.empty_like(x)
    return out.copy_(y)  # in x's dtype (the reference computes in float64)


@causal_conv1d_fwd.register_fake
def _(x, weight, bias, seq_idx, initial_states, activation, contiguous_out=False):
    return torch.empty_like(x, memory_format=torch.contiguous_format) if contiguous_out else torch.empty_like(x)


@torch.library.custom_op("inductor_conv::causal_conv1d_bwd", mutates_args=())
def causal_conv1d_bwd(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    seq_idx: Optional[Tensor],
    initial_states: Optional[Tensor],
    dy: Tensor,
    activation: str,
    deterministic: bool,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(dx, dweight, dbias, dinitial_states) from the forward's inputs and dy; recomputes z (Note above).

    dbias has shape (C,) even when bias is None (then it is unused); dinitial_states has shape (0,) when
    initial_states is None.
    """
    if use_triton(x):
        from inductor_conv.kernels.causal_conv1d import causal_conv1d_bwd as launch

        dx, dw, db, dinit = launch(
            x, weight, bias, seq_idx, initial_states, dy, activation, deterministic=deterministic
        )
    else:
        dx, dw, db, dinit = _torch_bwd(x, weight, bias, seq_idx, initial_states, dy, activation)
    if db is None:
        db = torch.zeros(weight.shape[0], dtype=weight.dtype, device=weight.device)
    if dinit is None:
        dinit = x.new_empty((0,))
    return dx, dw, db, dinit


# Torch fallback (CPU without the Triton interpreter, float64): the same math, written with windows of x̃.
def _torch_pre_activation(x, weight, bias, seq_idx, initial_states):
    """z in float64, the windows X[b, c, t, k] = x̃[b, c, t − K + 1 + k], the tap mask M[b, t, k] and, with seq_idx,
    the tokens T[b, 1, t] = seq_idx[b, t] >= 0 (None without)."""
    B, C, L = x.shape
    K = weight.shape[-1]
    head = initial_states if initial_states is not None else x.new_zeros((B, C, K - 1))
    x_pad = torch.cat([head.double(), x.double()], dim=-1)  # (B, C, L + K - 1)
    # stacked slices rather than unfold: unfold rejects L + K - 1 < K, i.e. an empty sequence (L = 0)
    windows = torch.stack([x_pad[..., k : k + L] for k in range(K)], dim=-1)  # (B, C, L, K)
    taps = torch.ones(B, L, K, dtype=torch.bool, device=x.device)
    tokens = None
    if seq_idx is not None:
        s = torch.arange(L, device=x.device)[:, None] - (K - 1) + torch.arange(K, device=x.device)  # (L, K)
        seq_s = seq_idx[:, s.clamp(min=0)]  # (B, L, K)
        taps = (s >= 0) & (seq_s == seq_idx[:, :, None])
        tokens = (seq_idx >= 0)[:, None, :]
    windows = windows * taps[:, None]
    z = (windows * weight.double()[None, :, None, :]).sum(-1)
    if bias is not None:
        z = z + bias.double()[None, :, None]
    return z, windows, taps, tokens


def _torch_bwd(x, weight, bias, seq_idx, initial_states, dy, activation):
    K = weight.shape[-1]
    z, windows, taps, tokens = _torch_pre_activation(x, weight, bias, seq_idx, initial_states)
    delta = dy.double()
    if activation == "silu":
        sig = torch.sigmoid(z)
        delta = delta * sig * (1 + z * (1 - sig))  # SiLU'(z): needs z, not y
    if tokens is not None:
        delta = delta * tokens  # a padding position's y is a constant 0 (Note [padding in packed sequences])
    dw = torch.einsum("bct,bctk->ck", delta, windows)
    db = delta.sum(dim=(0, 2))
    # dx̃[t − K + 1 + k] += w[k] · δ[t] on allowed taps: scatter each tap's column into the padded input.
    contrib = delta[..., None] * weight.double()[None, :, None, :] * taps[:, None]  # (B, C, L, K)
    B, C, L = x.shape
    dx_pad = x.new_zeros((B, C, L + K - 1), dtype=torch.float64)
    for k in range(K):
        dx_pad[..., k : k + L] += contrib[..., k]
    dx = torch.empty_like(x).copy_(dx_pad[..., K - 1 :])
    dinit = torch.empty_like(initial_states).copy_(dx_pad[..., : K - 1]) if initial_states is not None else None
    dw = torch.empty_like(weight).copy_(dw)  # weight's strides, as the fake (and the Triton launcher) promise
    return dx, dw, db.to(bias.dtype) if bias is not None else None, dinit


@causal_conv1d_bwd.register_fake
def _(x, weight, bias, seq_idx, initial_states, dy, activation, deterministic):
    dbias = torch.empty(weight.shape[0], dtype=(bias if bias is not None else weight).dtype, device=weight.device)
    dinit = torch.empty_like(initial_states) if initial_states is not None else x.new_empty((0,))
    return torch.empty_like(x), torch.empty_like(weight), dbias, dinit


def _setup_context(ctx, inputs, output):
    x, weight, bias, seq_idx, initial_states, activation, _ = inputs
    # Inputs only: see Note [conv backward recomputes z].
    ctx.save_for_backward(x, weight, bias, seq_idx, initial_states)
    ctx.activation = activation


def _backward(ctx, dy):
    x, weight, bias, seq_idx, initial_states = ctx.saved_tensors
    dx, dw, db, dinit = torch.ops.inductor_conv.causal_conv1d_bwd(
        x, weight, bias, seq_idx, initial_states, dy, ctx.activation, config.deterministic
    )
    return (
        dx,
        dw,
        db if bias is not None else None,
        None,
        dinit if initial_states is not None else None,
        None,
        None,
    )


causal_conv1d_fwd.register_autograd(_backward, setup_context=_setup_context)


# ---------------------------------------------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------------------------------------------
def causal_conv1d(
    x: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    seq_idx: Optional[Tensor] = None,
    initial_states: Optional[Tensor] = None,
    return_final_states: bool = False,
    final_states_out: Optional[Tensor] = None,
    activation: Optional[str] = None,
):
    """Causal depthwise conv1d with optional fused SiLU — Dao-AILab's ``causal_conv1d_fn``, with its argument order.

    Args:
        x: ``[B, C, L]`` float32/float16/bfloat16, any strides (the channel-last view
            ``[B, L, C].transpose(1, 2)`` is read in place, without a copy). Any of B, C, L may be 0 (an empty y,
            as conv1d; zero gradients for weight and bias).
        weight: ``[C, K]`` or ``[C, 1, K]``, K >= 1; may be float32 while x is bf16/fp16.
        bias: ``[C]`` or None.
        seq_idx: ``[B, L]`` int32 sequence ids of packed sequences: a tap never crosses a change of id, and a
            position with a negative id is padding: its output is 0 (Note [padding in packed sequences]).
        initial_states: ``[B, C, K - 1]``, the K − 1 inputs that precede x (zeros when None). Not with seq_idx.
        return_final_states: also return the last K − 1 inputs, ``[B, C, K - 1]``, to continue the sequence.
            Not with seq_idx.
        final_states_out: ``[B, C, K - 1]`` in x's dtype, any strides, or None: with return_final_states, the
            final states are written into it and it is returned (as ``causal_conv1d_fn`` does).
        activation: None (no activation), ``"silu"`` or ``"swish"`` (the same).

    Returns:
        y ``[B, C, L]`` in x's dtype (and x's layout), or ``(y, final_states)``.
    """
    if not return_final_states and final_states_out is None and not torch.compiler.is_compiling():
        ext = native_extension_built()  # Note [eager conv from C++]: a registered form runs from one C++ call
        y = None if ext is None else ext.eager_causal_conv1d(x, weight, bias, seq_idx, initial_states, activation,
                                                             config.deterministic)
        if y is not None:
            return y
    act = _check_args(x, weight, bias, activation, seq_idx, initial_states)
    if seq_idx is not None and return_final_states:
        # the last K - 1 inputs may span a sequence boundary: they are no state of the last sequence
        raise ValueError("return_final_states cannot be combined with seq_idx (as in causal_conv1d_fn)")
    if final_states_out is not None:
        _check_final_states_out(final_states_out, x, weight.shape[-1], return_final_states)
    if weight.dim() == 3:
        weight = weight.squeeze(1)
    if fast_path(x, weight, bias, seq_idx, initial_states):  # Note [eager fast path] in ops/eager.py
        grad = needs_grad(x, weight, bias, initial_states)
        y = _native_causal_conv1d(x, weight, bias, seq_idx, initial_states, act, grad)
        if y is None and grad:
            y = _eager_causal_conv1d(x, weight, bias, seq_idx, initial_states, act)
        elif y is None:
            from inductor_conv.kernels.causal_conv1d import launch_fwd

            y = launch_fwd(x, weight, bias, seq_idx, initial_states, act)
    else:
        y = torch.ops.inductor_conv.causal_conv1d_fwd(x, weight, bias, seq_idx, initial_states, act)
    if not return_final_states:
        return y
    final_states = _final_states(x, initial_states, weight.shape[-1])
    if final_states_out is None:
        return y, final_states
    return y, final_states_out.copy_(final_states)


class _EagerCausalConv1d(torch.autograd.Function):
    """The public function's eager path (Note [eager fast path] in ops/eager.py): the op's launchers without the
    custom op's dispatch; saves the inputs only, as the op (Note [conv backward recomputes z])."""

    @staticmethod
    def forward(ctx, x, weight, bias, seq_idx, initial_states, activation):
        from inductor_conv.kernels.causal_conv1d import launch_fwd

        ctx.save_for_backward(x, weight, bias, seq_idx, initial_states)
        ctx.activation = activation
        return launch_fwd(x, weight, bias, seq_idx, initial_states, activation)

    @staticmethod
    def backward(ctx, dy):
        from inductor_conv.kernels.causal_conv1d import launch_bwd

        x, weight, bias, seq_idx, initial_states = ctx.saved_tensors
        dx, dw, db, dinit = launch_bwd(x, weight, bias, seq_idx, initial_states, dy, ctx.activation,
                                       config.deterministic)
        return dx, dw, db, None, dinit, None


_eager_causal_conv1d = raw_function_apply(_EagerCausalConv1d)


def _native_causal_conv1d(x, weight, bias, seq_idx, initial_states, activation, grad: bool):
    """y from one C++ call that launches the forward and, with `grad`, records the C++ backward node (Note [native
    forward], Note [native backward] in inductor_conv/csrc/backward_node.cpp): the launches of launch_fwd and of
    _EagerCausalConv1d's backward, planned once per configuration and shape; None where that path does not apply
    (kernels/causal_conv1d.py's native_programs says so), and then the Python launchers run."""
    from inductor_conv.kernels.causal_conv1d import native_programs, native_saved

    programs = native_programs(x, weight, bias, seq_idx, activation, config.deterministic, initial_states, grad)
    if programs is None:
        return None
    ext = native_extension_built()
    # later calls of this form run from C++ (Note [eager conv from C++] in inductor_conv/csrc/backward_node.cpp)
    ext.register_conv(x, weight, bias, seq_idx, initial_states, activation == "silu", config.deterministic,
                      *programs)
    return ext.run_forward(programs[0], [x, weight, bias, initial_states],
                           native_saved(x, weight, bias, seq_idx, initial_states), programs[1])


def _final_states(x: Tensor, initial_states: Optional[Tensor], K: int) -> Tensor:
    """The last K − 1 entries of the padded input sequence (initial_states or zeros, then x)."""
    B, C, _ = x.shape
    if initial_states is None:
        initial_states = x.new_zeros((B, C, K - 1))
    return torch.cat([initial_states.to(x.dtype), x], dim=-1)[..., x.shape[-1] :]


def _check_final_states_out(final_states_out, x, K, return_final_states) -> None:
    if not isinstance(final_states_out, Tensor):
        raise TypeError(f"final_states_out must be a Tensor or None, got {type(final_states_out).__name__}")
    if not return_final_states:
        # causal_conv1d_fn ignores it then; a tensor the caller expects filled that stays untouched is an error here
        raise ValueError("final_states_out is written only with return_final_states=True")
    B, C, _ = x.shape
    if final_states_out.shape != (B, C, K - 1):
        raise ValueError(f"final_states_out must have shape ({B}, {C}, {K - 1}), got {tuple(final_states_out.shape)}")
    if final_states_out.dtype != x.dtype:
        raise TypeError(f"final_states_out must have x's dtype {x.dtype}, got {final_states_out.dtype}")
    if final_states_out.device != x.device:
        raise ValueError(f"final_states_out is on {final_states_out.device} but x is on {x.device}")


def _check_args(x, weight, bias, activation, seq_idx, initial_states) -> str:
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a Tensor, got {type(x).__name__}")
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, C, L), got a {x.dim()}-d tensor of shape {tuple(x.shape)}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"x must be float32, float16 or bfloat16, got {x.dtype}")
    B, C, L = x.shape
    if not isinstance(weight, Tensor):
        raise TypeError(f"weight must be a Tensor, got {type(weight).__name__}")
    if weight.dim() == 3 and weight.shape[1] != 1:
        raise ValueError(f"weight of shape (C, 1, K) expected for a depthwise conv, got {tuple(weight.shape)}")
    if weight.dim() not in (2, 3) or weight.shape[0] != C:
        raise ValueError(f"weight must have shape (C, K) or (C, 1, K) with C={C}, got {tuple(weight.shape)}")
    K = weight.shape[-1]
    if K < 1:
        raise ValueError(f"weight's width K must be >= 1, got K={K}")
    if weight.dtype not in FLOAT_DTYPES:
        raise TypeError(f"weight must be a floating-point tensor, got {weight.dtype}")
    if bias is not None:
        if not isinstance(bias, Tensor):
            raise TypeError(f"bias must be a Tensor or None, got {type(bias).__name__}")
        if bias.shape != (C,):
            raise ValueError(f"bias must have shape ({C},), got {tuple(bias.shape)}")
        if bias.dtype not in FLOAT_DTYPES:
            raise TypeError(f"bias must be a floating-point tensor, got {bias.dtype}")
    if activation is not None and not isinstance(activation, str):
        raise TypeError(f"activation must be None, 'silu' or 'swish', got a {type(activation).__name__}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be None, 'silu' or 'swish', got {activation!r}")
    if seq_idx is not None:
        if not isinstance(seq_idx, Tensor):
            raise TypeError(f"seq_idx must be an int32 Tensor, got {type(seq_idx).__name__}")
        if seq_idx.shape != (B, L):
            raise ValueError(f"seq_idx must have shape ({B}, {L}), got {tuple(seq_idx.shape)}")
        if seq_idx.dtype != torch.int32:
            raise TypeError(f"seq_idx must be int32, got {seq_idx.dtype}")
    if initial_states is not None:
        if not isinstance(initial_states, Tensor):
            raise TypeError(f"initial_states must be a Tensor, got {type(initial_states).__name__}")
        if initial_states.shape != (B, C, K - 1):
            raise ValueError(
                f"initial_states must have shape ({B}, {C}, {K - 1}), got {tuple(initial_states.shape)}"
            )
        if initial_states.dtype not in FLOAT_DTYPES:
            raise TypeError(f"initial_states must be a floating-point tensor, got {initial_states.dtype}")
        if seq_idx is not None:
            raise ValueError("initial_states cannot be combined with seq_idx (as in causal_conv1d_fn)")
    for name, t in (("weight", weight), ("bias", bias), ("seq_idx", seq_idx), ("initial_states", initial_states)):
        if t is not None and t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on {x.device}")
    return ACTIVATIONS[activation]
