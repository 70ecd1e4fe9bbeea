"""Float64 reference of the causal depthwise conv1d (+ SiLU): the math the kernels are tested against.

Notation (as in the kernels): x (B, C, L), weight w (C, K), bias beta (C,), output position t, tap k reads
x~[t - K + 1 + k], where x~ is x at 0 <= s < L, initial_states[:, :, K - 1 + s] at -K + 1 <= s < 0 (zeros when no
initial states are given); with seq_idx a tap only counts when seq_idx[b, s] == seq_idx[b, t].

    z[b, c, t] = beta[c] + sum_k w[c, k] * x~[b, c, t - K + 1 + k] * [seq_idx[b, t] == seq_idx[b, t - K + 1 + k]]
    y = silu(z) if activation == "silu" else z
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["causal_conv1d_ref"]


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
        seq_idx: [B, L] integer sequence ids of packed sequences, or None.
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
    return y.to(x.dtype)
