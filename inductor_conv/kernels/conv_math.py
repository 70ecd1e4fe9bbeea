"""@triton.jit math helpers of the causal depthwise conv1d (+ SiLU), shared by the eager kernels and the templates.

The Inductor templates append this file's helper source to their own (see lowerings/causal_conv1d_silu.py), so the
helpers below may only use `tl`/`triton` names: no Python globals, no other imports.

Notation (fla style): a program owns BC channels (`o_c`, axis 0 of every tile) and BT positions (`o_t`, axis 1);
`p_*c` are [BC, 1] pointer columns already offset to the batch and the program's channels, `m_c` their [BC, 1] mask.
x~[s] is x at 0 <= s < L, initial_states[K - 1 + s] at -K + 1 <= s < 0 (HAS_INIT) and zero elsewhere. A tap of lag d
reads x~[t - d]; weight tap k has lag d = K - 1 - k.

    z[t] = beta + sum_d w[K - 1 - d] * x~[t - d] * [seq[t] == seq[t - d]]
    delta[t] = dL/dz[t] = g[t] * silu'(z[t])     (g = dL/dy; delta = g without activation)
    dx[s] = sum_j w[K - 1 - j] * delta[s + j] * [seq[s + j] == seq[s]]     (gather: each dx written once)

Note [causal conv1d backward recomputes z]: the backward never reads a saved z; it recomputes z from x, w and beta
(2K flops an element) instead of writing, holding and re-reading an activation-sized tensor. silu' needs the
pre-activation z, not y: silu'(0) = 1/2.
"""
import triton
import triton.language as tl


@triton.jit
def sigmoid(z):
    # div.full (approximate, 2 ulp) instead of IEEE division: a few instructions instead of a dozen.
    return tl.fdiv(1.0, 1.0 + tl.exp(-z), ieee_rounding=False)


@triton.jit
def silu(z):
    return z * sigmoid(z)


@triton.jit
def silu_grad_from_z(g, z):
    """delta = g * silu'(z) = g * sigma(z) * (1 + z * (1 - sigma(z)))."""
    b_s = sigmoid(z)
    return g * b_s * (1.0 + z * (1.0 - b_s))


@triton.jit
def load_x_tilde(p_xc, p_ic, m_c, o_s, L, s_xl, s_ik, K: tl.constexpr, HAS_INIT: tl.constexpr):
    """x~ at positions o_s ([1, BT] or [BT]) for the program's channels, as fp32 [BC, BT]."""
    b_x = tl.load(p_xc + o_s * s_xl, mask=m_c & (o_s >= 0) & (o_s < L), other=0.0).to(tl.float32)
    if HAS_INIT:
        m_i = m_c & (o_s < 0) & (o_s > -K)
        b_x += tl.load(p_ic + (o_s + K - 1) * s_ik, mask=m_i, other=0.0).to(tl.float32)
    return b_x


@triton.jit
def same_sequence(p_seq, o_t, o_s, L, s_sl):
    """[BT] bool: seq_idx[t] == seq_idx[s]; False when s is outside [0, L) (no x there with packed sequences)."""
    b_qt = tl.load(p_seq + o_t * s_sl, mask=(o_t >= 0) & (o_t < L), other=-1)
    b_qs = tl.load(p_seq + o_s * s_sl, mask=(o_s >= 0) & (o_s < L), other=-2)
    return b_qt == b_qs


@triton.jit
def conv_tap(b_x, p_xc, p_ic, m_c, o_t, l_t, d: tl.constexpr, L, s_xl, s_ik,
             K: tl.constexpr, HAS_INIT: tl.constexpr, X_GATHER: tl.constexpr):
    """x~[t - d] for the tile's positions o_t; b_x is x~ at o_t itself ([BC, BT]).

    X_GATHER: taken from b_x by tl.gather along the positions (valid where the local index l_t >= d, so the tile
    needs a left halo of d positions); else a shifted load (served from cache: x is read from memory once).
    """
    if d == 0:
        b_tap = b_x
    elif X_GATHER:
        b_tap = tl.gather(b_x, tl.broadcast_to(tl.maximum(l_t - d, 0)[None, :], b_x.shape), axis=1)
    else:
        b_tap = load_x_tilde(p_xc, p_ic, m_c, (o_t - d)[None, :], L, s_xl, s_ik, K, HAS_INIT)
    return b_tap


@triton.jit
def conv_z(b_x, p_xc, p_ic, p_wc, p_seq, m_c, o_t, l_t, L, s_xl, s_ik, s_wk, s_sl,
           K: tl.constexpr, HAS_INIT: tl.constexpr, HAS_SEQ: tl.constexpr, X_GATHER: tl.constexpr):
    """z - beta = sum_d w[K - 1 - d] * x~[t - d] * [same sequence] for the tile's positions o_t, fp32 [BC, BT]."""
    b_z = tl.load(p_wc + (K - 1) * s_wk, mask=m_c, other=0.0).to(tl.float32) * b_x
    for d in tl.static_range(1, K):
        b_tap = conv_tap(b_x, p_xc, p_ic, m_c, o_t, l_t, d, L, s_xl, s_ik, K, HAS_INIT, X_GATHER)
        if HAS_SEQ:
            b_tap = tl.where(same_sequence(p_seq, o_t, o_t - d, L, s_sl)[None, :], b_tap, 0.0)
        b_z += tl.load(p_wc + (K - 1 - d) * s_wk, mask=m_c, other=0.0).to(tl.float32) * b_tap
    return b_z


@triton.jit
def conv_delta(b_x, b_g, b_bias, p_xc, p_ic, p_wc, p_seq, m_c, o_t, l_t, L, s_xl, s_ik, s_wk, s_sl,
               K: tl.constexpr, HAS_INIT: tl.constexpr, HAS_SEQ: tl.constexpr, X_GATHER: tl.constexpr,
               SILU: tl.constexpr):
    """delta = dL/dz at positions o_t from g = dL/dy there, recomputing z (Note [causal conv1d backward recomputes z])."""
    if SILU:
        b_z = conv_z(b_x, p_xc, p_ic, p_wc, p_seq, m_c, o_t, l_t, L, s_xl, s_ik, s_wk, s_sl,
                     K, HAS_INIT, HAS_SEQ, X_GATHER) + b_bias
        b_d = silu_grad_from_z(b_g, b_z)
    else:
        b_d = b_g
    return b_d


@triton.jit
def conv_delta_at(p_xc, p_ic, p_wc, p_seq, p_gc, m_c, o_t, b_bias, L, s_xl, s_ik, s_wk, s_sl, s_gl,
                  K: tl.constexpr, HAS_INIT: tl.constexpr, HAS_SEQ: tl.constexpr, SILU: tl.constexpr):
    """delta at arbitrary positions o_t ([BT]) by loads alone: zero outside [0, L) (g is zero past the end)."""
    m_t = (o_t >= 0) & (o_t < L)
    b_g = tl.load(p_gc + o_t[None, :] * s_gl, mask=m_c & m_t[None, :], other=0.0).to(tl.float32)
    b_x = b_g
    if SILU:
        b_x = load_x_tilde(p_xc, p_ic, m_c, o_t[None, :], L, s_xl, s_ik, K, HAS_INIT)
    return conv_delta(b_x, b_g, b_bias, p_xc, p_ic, p_wc, p_seq, m_c, o_t, o_t, L, s_xl, s_ik, s_wk, s_sl,
                      K, HAS_INIT, HAS_SEQ, False, SILU)
