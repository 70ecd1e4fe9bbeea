"""Float64 reference of the causal depthwise conv1d (+ SiLU): the math the kernels are tested against.

Notation (as in the kernels): x (B, C, L), weight w (C, K), bias beta (C,), output position t, tap k reads
x~[t - K + 1 + k], where x~ is x at 0 <= s < L, initial_states[:, :, K - 1 + s] at -K + 1 <= s < 0 (zeros when no
initial states are given); with seq_idx a tap only counts when seq_idx[b, s] == seq_idx[b, t], and a position
whose id is negative is padding, whose output is 0 (Note [padding in packed sequences] in
inductor_conv/ops/causal_conv1d.py).

    z[b, c, t] = beta[c] + sum_k w[c, k] * x~[b, c, t - K + 1 + k] * [seq_idx[b, t] == seq_idx[b, t - K + 1 + k]]
    y = (silu(z) if activation == "silu" else z) * [seq_idx[b, t] >= 0]

Differentiated by autograd, the reference gives the gradient of exactly that y (zero from padding outputs).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["causal_conv1d_ref", "causal_conv1d_update_ref"]


def causal_conv1d_ref(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    seq_idx: torch.Tensor | None = None,
    initial_states: torch.Tensor | None = None,
    activation: str | None = None,
) -> torch.Tensor:
    """Causal depthwise conv1d in float64, returned in x's dtype; differentiable (a plain loop over the K taps).

    Args:
        x: [B, C, L], any strides and float dtype.
        weight: [C, K].
        bias: [C] or None.
        seq_idx: [B, L] integer sequence ids of packed sequences (negative: padding, output 0), or None.
        initial_states: [B, C, K - 1], the values of x at positions -K + 1 .. -1, or None (zeros).
        activation: None, "none" or "silu".
    """
    if activation not in (None, "none", "silu"):
        raise ValueError(f"activation must be None, 'none' or 'silu', got {activation!r}")
    B, C, L = x.shape
    K = weight.shape[-1]
    x64 = x.to(torch.float64)
    w64 = weight.to(torch.float64).reshape(C, K)
    if initial_states is not None:
        x_tilde = torch.cat([initial_states.to(torch.float64), x64], dim=-1)  # positions -K+1 .. L-1
    else:
        x_tilde = F.pad(x64, (K - 1, 0))
    t = torch.arange(L, device=x.device)
    z = torch.zeros_like(x64)
    for k in range(K):
        tap = x_tilde[:, :, k : k + L]  # x~[t - K + 1 + k]
        if seq_idx is not None:
            s = t - (K - 1) + k
            same = seq_idx.gather(1, s.clamp(min=0).expand(B, L)) == seq_idx
            tap = tap * (same & (s >= 0)).to(torch.float64)[:, None, :]
        z = z + w64[:, k, None] * tap
    if bias is not None:
        z = z + bias.to(torch.float64)[:, None]
    y = F.silu(z) if activation == "silu" else z
    if seq_idx is not None:
        y = torch.where((seq_idx >= 0)[:, None, :], y, 0.0)
    return y.to(x.dtype)


def causal_conv1d_update_ref(
    x: torch.Tensor,
    conv_state: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    activation: str | None = None,
    cache_seqlens: torch.Tensor | None = None,
    conv_state_indices: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """T decode steps of the causal depthwise conv with its state (``causal_conv1d_update``), in float64.

    Notation: batch row b reads and writes cache row r = conv_state_indices[b] (b when None); the line of row b is
    its K - 1 state entries before the new tokens (the window), then x[b, :, 0 .. T - 1]; output t reads
    line[t .. t + K - 1].

    * linear (cache_seqlens None): the window is the last K - 1 state columns, and the state becomes the last S
      entries of cat(state, x) (shifted by T);
    * circular: the window is the columns (n - K + 1 .. n - 1) mod S, n = cache_seqlens[b], and x[:, t] is written
      to column (n + t) mod S, token after token (with T > S a later token overwrites an earlier one);
    * r < 0 or r >= B_cache: a padding slot, y[b] = 0 and no cache row changes (an index past the cache is
      treated as the pad slot -1, as the kernel does).

    Args:
        x: [B, C] or [B, C, T].
        conv_state: [B_cache, C, S], S >= K - 1 (B_cache = B without conv_state_indices); not modified.
        weight: [C, K]; bias: [C] or None; activation: None, "silu" or "swish".
        cache_seqlens, conv_state_indices: [B] integer tensors or None.

    Returns:
        (y like x in x's dtype, the updated cache: a new [B_cache, C, S] tensor in conv_state's dtype).
    """
    if activation not in (None, "silu", "swish"):
        raise ValueError(f"activation must be None, 'silu' or 'swish', got {activation!r}")
    squeeze = x.dim() == 2
    x3 = x.unsqueeze(-1) if squeeze else x
    B, C, T = x3.shape
    K = weight.shape[-1]
    S = conv_state.shape[-1]
    w64 = weight.to(torch.float64).reshape(C, K)
    new_state = conv_state.clone()
    y = torch.zeros(B, C, T, dtype=torch.float64, device=x.device)
    for b in range(B):
        r = int(conv_state_indices[b]) if conv_state_indices is not None else b
        if not 0 <= r < conv_state.shape[0]:
            continue
        row = conv_state[r].to(torch.float64)  # [C, S]
        if cache_seqlens is None:
            window = row[:, S - (K - 1):]
        else:
            n = int(cache_seqlens[b])
            window = row[:, [(n - (K - 1) + i) % S for i in range(K - 1)]]
        line = torch.cat([window, x3[b].to(torch.float64)], dim=-1)  # [C, K - 1 + T]
        for t in range(T):
            y[b, :, t] = (w64 * line[:, t : t + K]).sum(-1)
        if bias is not None:
            y[b] += bias.to(torch.float64)[:, None]
        if cache_seqlens is None:
            new_state[r] = torch.cat([conv_state[r], x3[b].to(conv_state.dtype)], dim=-1)[:, T:]
        else:
            for t in range(T):
                new_state[r, :, (n + t) % S] = x3[b, :, t].to(conv_state.dtype)
    y = (F.silu(y) if activation is not None else y).to(x.dtype)  # a padding slot's y stays 0: silu(0) = 0
    return (y.squeeze(-1) if squeeze else y), new_state
