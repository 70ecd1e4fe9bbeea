"""The causal conv's decode step with its state as a PyTorch custom op, its fake impl and the public function.

Notation as in reference/conv.py ``causal_conv1d_update_ref``: x [B, C, T] (T new tokens), conv_state
[B_cache, C, S] (S >= K - 1), weight w [C, K], bias β [C]; batch row b reads and writes cache row r =
conv_state_indices[b] (b when None); y[:, t] = act(β + Σ_k w[:, k] line[t + k]) where the line is the K - 1 state
entries before the new tokens, then x.  The op mutates conv_state (``mutates_args=("conv_state",)``): under
torch.compile it is functionalised into ``auto_functionalized`` and Inductor's reinplacing pass lets it write the
cache in place again (Note [decode state write-back] in patterns/causal_conv1d_update.py).

Inference only: the op has no backward (Dao's ``causal_conv1d_update`` has none either, and torch.library takes no
autograd formula for a mutating op); the public function refuses inputs that require a gradient while grad mode is
on, and a backward through the op called directly raises torch.library's "no autograd formula" error.  Called
eagerly, the public function launches the kernel without the custom op's dispatch where it may (Note [eager fast
path] in ops/eager.py).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from inductor_conv.ops.causal_conv1d import ACTIVATIONS, FLOAT_DTYPES
from inductor_conv.ops.eager import fast_path, use_triton


@torch.library.custom_op("inductor_conv::causal_conv1d_update", mutates_args=("conv_state",))
def causal_conv1d_update_op(
    x: Tensor,
    conv_state: Tensor,
    weight: Tensor,
    bias: Optional[Tensor],
    activation: str,
    cache_seqlens: Optional[Tensor],
    conv_state_indices: Optional[Tensor],
) -> Tensor:
    """y [B, C, T] like x; conv_state [B_cache, C, S] updated in place.  x 3-D, weight [C, K], activation "none" or
    "silu" (the public function normalises its arguments)."""
    if use_triton(x):
        from inductor_conv.kernels.causal_conv1d_update import causal_conv1d_update as launch

        return launch(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices)
    return _torch_update(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices)


@causal_conv1d_update_op.register_fake
def _(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices):
    return torch.empty_like(x)


# Torch fallback (CPU without the Triton interpreter, float64): the kernel's math with gathers, accumulated in fp32
# (float64 for float64 inputs).
def _torch_update(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices):
    B, C, T = x.shape
    S, K = conv_state.shape[-1], weight.shape[-1]
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    rows = (conv_state_indices.long() if conv_state_indices is not None
            else torch.arange(B, device=x.device))
    live = (rows >= 0) & (rows < conv_state.shape[0])  # a row past the cache is a padding slot, as in the kernel
    if conv_state.shape[0] > 0:
        state = conv_state[torch.where(live, rows, 0)]  # [B, C, S], a copy
    else:  # every slot is padding: nothing to gather from
        state = conv_state.new_zeros((B, C, S))
    if cache_seqlens is None:
        cols = torch.arange(S - K + 1, S, device=x.device).expand(B, K - 1)
    else:
        cols = (cache_seqlens.long()[:, None] + torch.arange(-K + 1, 0, device=x.device)) % S  # [B, K - 1]
    window = state.gather(2, cols[:, None, :].expand(B, C, K - 1))
    line = torch.cat([window.to(acc), x.to(acc)], dim=-1)  # [B, C, K - 1 + T]
    z = sum(weight[:, k, None].to(acc) * line[..., k : k + T] for k in range(K))
    if bias is not None:
        z = z + bias.to(acc)[:, None]
    if activation == "silu":
        z = z * torch.sigmoid(z)
    y = torch.empty_like(x).copy_(torch.where(live[:, None, None], z, 0))
    if cache_seqlens is None:
        state = torch.cat([state, x.to(state.dtype)], dim=-1)[..., T:]
    else:
        kept = min(T, S)  # with T > S only the last S tokens survive (token after token, as the kernel writes)
        t = torch.arange(T - kept, T, device=x.device)
        state.scatter_(2, ((cache_seqlens.long()[:, None] + t) % S)[:, None, :].expand(B, C, kept),
                       x[..., T - kept:].to(state.dtype))
    conv_state[rows[live]] = state[live]
    return y


# ---------------------------------------------------------------------------------------------------------------
# Public function
# ---------------------------------------------------------------------------------------------------------------
def causal_conv1d_update(
    x: Tensor,
    conv_state: Tensor,
    weight: Tensor,
    bias: Optional[Tensor] = None,
    activation: Optional[str] = None,
    cache_seqlens: Optional[Tensor] = None,
    conv_state_indices: Optional[Tensor] = None,
) -> Tensor:
    """T decode steps of the causal depthwise conv (+ SiLU) with its state — the contract of Dao-AILab's
    ``causal_conv1d_update``.  Inference only (no gradient).

    Args:
        x: ``[B, C]`` (one token) or ``[B, C, T]`` (T new tokens), float32/float16/bfloat16, any strides.
        conv_state: ``[B_cache, C, S]`` with S >= K - 1, x's dtype, any strides; updated in place. Linear
            (``cache_seqlens`` None): it becomes the last S entries of ``cat(conv_state, x)``; the window is its last
            K - 1 columns. Circular: x[:, :, t] is written to column ``(cache_seqlens + t) % S`` and the window is
            the K - 1 columns before ``cache_seqlens % S``.
        weight: ``[C, K]`` or ``[C, 1, K]``, K >= 2; may be float32 while x is bf16/fp16.
        bias: ``[C]`` or None.
        activation: None (no activation), ``"silu"`` or ``"swish"`` (the same).
        cache_seqlens: ``[B]`` int32, the number of tokens already seen by each row (circular state), or None.
        conv_state_indices: ``[B]`` int32, the cache row of each batch row (continuous batching; B_cache may differ
            from B), or None (row b is cache row b). A negative index is a padding slot: y is 0 there and no cache
            row is touched; an index >= B_cache is taken as one too (never checked on the host: that would cost
            a device sync each step). Two batch rows must not share a cache row.

    Returns:
        y like x (``[B, C]`` or ``[B, C, T]``), in x's dtype.
    """
    act = _check_args(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices)
    if weight.dim() == 3:
        weight = weight.squeeze(1)
    one_token = x.dim() == 2
    x3 = x.unsqueeze(-1) if one_token else x
    if fast_path(x, conv_state, weight, bias, cache_seqlens, conv_state_indices):  # Note [eager fast path]
        from inductor_conv.kernels.causal_conv1d_update import causal_conv1d_update as launch

        y = launch(x3, conv_state, weight, bias, act, cache_seqlens, conv_state_indices)
    else:
        y = torch.ops.inductor_conv.causal_conv1d_update(x3, conv_state, weight, bias, act, cache_seqlens,
                                                         conv_state_indices)
    return y.squeeze(-1) if one_token else y


def _check_args(x, conv_state, weight, bias, activation, cache_seqlens, conv_state_indices) -> str:
    for name, t in (("x", x), ("conv_state", conv_state), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be a Tensor, got {type(t).__name__}")
    if x.dim() not in (2, 3):
        raise ValueError(f"x must have shape (B, C) or (B, C, T), got a {x.dim()}-d tensor of shape {tuple(x.shape)}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"x must be float32, float16 or bfloat16, got {x.dtype}")
    B, C = x.shape[:2]
    if conv_state.dim() != 3 or conv_state.shape[1] != C:
        raise ValueError(f"conv_state must have shape (B_cache, {C}, S), got {tuple(conv_state.shape)}")
    if conv_state.dtype != x.dtype:
        raise TypeError(f"conv_state must have x's dtype {x.dtype}, got {conv_state.dtype}")
    if weight.dim() == 3 and weight.shape[1] != 1:
        raise ValueError(f"weight of shape (C, 1, K) expected for a depthwise conv, got {tuple(weight.shape)}")
    if weight.dim() not in (2, 3) or weight.shape[0] != C:
        raise ValueError(f"weight must have shape (C, K) or (C, 1, K) with C={C}, got {tuple(weight.shape)}")
    K, S = weight.shape[-1], conv_state.shape[2]
    if K < 2:
        raise ValueError(f"weight's width K must be >= 2, got K={K}")
    if S < K - 1:
        raise ValueError(f"conv_state must hold at least K - 1 = {K - 1} columns, got S={S}")
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
    for name, t in (("cache_seqlens", cache_seqlens), ("conv_state_indices", conv_state_indices)):
        if t is None:
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{name} must be an int32 Tensor or None, got {type(t).__name__}")
        if t.shape != (B,):
            raise ValueError(f"{name} must have shape ({B},), got {tuple(t.shape)}")
        if t.dtype != torch.int32:
            raise TypeError(f"{name} must be int32, got {t.dtype}")
    if conv_state_indices is None and conv_state.shape[0] != B:
        raise ValueError(f"conv_state must have x's batch size {B} without conv_state_indices, "
                         f"got {conv_state.shape[0]}")
    for name, t in (("conv_state", conv_state), ("weight", weight), ("bias", bias), ("cache_seqlens", cache_seqlens),
                    ("conv_state_indices", conv_state_indices)):
        if t is not None and t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on {x.device}")
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, conv_state, weight, bias)):
        raise RuntimeError("inductor_conv.causal_conv1d_update is inference only (no backward): call it under "
                           "torch.no_grad() / torch.inference_mode(), or detach its inputs")
    return ACTIVATIONS[activation]


# ---------------------------------------------------------------------------------------------------------------
# The decode state of packed sequences
# ---------------------------------------------------------------------------------------------------------------
def causal_conv1d_varlen_states(x: Tensor, cu_seqlens: Tensor, state_len: int) -> Tensor:
    """The conv state each packed sequence leaves behind — Dao-AILab's ``causal_conv1d_varlen_states``.

    Sequence i holds the tokens ``cu_seqlens[i] .. cu_seqlens[i + 1] - 1`` of x; its state is its last state_len
    tokens, zero-filled in front when it is shorter: the ``conv_state`` that ``causal_conv1d_update`` continues it
    from (linear state, S = state_len).

    Args:
        x: ``[total_tokens, C]``, any float dtype and strides.
        cu_seqlens: ``[batch + 1]`` int32 or int64, non-decreasing, starting at 0 (cumulative sequence lengths).
        state_len: int >= 0, the state's columns S.

    Returns:
        ``[batch, C, state_len]`` in x's dtype, laid out ``[batch, state_len, C].transpose(1, 2)`` (channel-last,
        as Dao's). One gather on the device: no host sync, and differentiable in x (Dao's has no backward).
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"x must have shape (total_tokens, C), got {tuple(x.shape)}")
    if not isinstance(cu_seqlens, Tensor):
        raise TypeError(f"cu_seqlens must be an int32 or int64 Tensor, got {type(cu_seqlens).__name__}")
    if cu_seqlens.dim() != 1 or cu_seqlens.shape[0] < 1:
        raise ValueError(f"cu_seqlens must have shape (batch + 1,), got {tuple(cu_seqlens.shape)}")
    if cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"cu_seqlens must be int32 or int64, got {cu_seqlens.dtype}")
    if cu_seqlens.device != x.device:
        raise ValueError(f"cu_seqlens is on {cu_seqlens.device} but x is on {x.device}")
    if isinstance(state_len, bool) or not isinstance(state_len, (int, torch.SymInt)) or state_len < 0:
        raise ValueError(f"state_len must be an int >= 0, got {state_len!r}")
    starts, ends = cu_seqlens[:-1].long(), cu_seqlens[1:].long()
    # column j of sequence i holds token ends[i] - state_len + j, when that token is one of the sequence's
    pos = ends[:, None] - state_len + torch.arange(state_len, device=x.device)  # [batch, state_len]
    kept = pos >= starts[:, None]
    if x.shape[0] == 0:  # no token to gather from: every column is the zero fill
        states = x.new_zeros((pos.shape[0], state_len, x.shape[1]))
    else:
        states = torch.where(kept[..., None], x[torch.where(kept, pos, 0)], 0)  # [batch, state_len, C]
    return states.transpose(1, 2)
