"""@triton.jit math helpers of the causal depthwise conv1d (+ SiLU), shared by the eager kernels and the templates.

The Inductor templates append this file's functions (lowerings/causal_conv1d_silu.py), so the helpers below may only
use `tl`/`triton` names: no Python globals, no other imports.

Notation (fla style): a program owns BC channels (axis 0 of every tile); `p_*c` are [BC, 1] pointer columns offset
to the batch row and the program's channels, `m_c` their [BC, 1] mask, `s_*` strides, `o_*` positions.
x~[s] is x at 0 <= s < L, initial_states[K - 1 + s] at -K + 1 <= s < 0 (HAS_INIT) and zero elsewhere. A tap of lag
d reads x~[t - d]; weight tap k has lag d = K - 1 - k; with packed sequences (HAS_SEQ) a tap only counts inside
the sequence of t, and a position whose id is negative is padding (Dao-AILab causal-conv1d's contract): its y is 0.

    z[t] = beta + sum_d w[K - 1 - d] * x~[t - d] * [seq[t] == seq[t - d]]
    y[t] = act(z[t]) * [seq[t] >= 0]                                       ([seq[t] >= 0] = 1 without HAS_SEQ)
    delta[t] = dL/dz[t] = g[t] * silu'(z[t]) * [seq[t] >= 0]     (g = dL/dy; delta = g (masked) without activation)
    dx[s] = sum_j w[K - 1 - j] * delta[s + j] * [seq[s + j] == seq[s]]     (a gather: each dx written once)
    dw[K - 1 - j] += x~[s] * delta[s + j] * (same mask)                    (the same products, one pair each)

That is the exact gradient of y: a padding position's y is a constant, so its delta is 0, and dx at a padding
position is 0 too (a valid t never reads it: the ids differ, and a padding t has delta 0). docs/conv.md, "Packed
sequences", says why Dao's backward differs.

The backward never reads a saved z: it recomputes z from x, w and beta (2K flops an element) instead of writing,
holding and re-reading an activation-sized tensor (Note [conv backward recomputes z] in
inductor_conv/ops/causal_conv1d.py). silu' needs the pre-activation z, not y: silu'(0) = 1/2.

Column tiles. A tile covers BT = N * V positions t0 + n * V + v, held as a tuple of V "columns" [BC, N]: column v
holds positions t0 + n * V + v, so lane n owns the chunk of V consecutive positions t0 + n * V .. + V - 1 (V = 16
bytes of x: one vector load). A shift by d positions is a renaming of columns plus, for the columns that cross into
a neighbouring chunk, a tl.gather along n (a warp shuffle: the default tiles keep N = 32 lanes in one warp). The
lanes at a tile's ends read the neighbouring tile's columns, which the kernels carry through their loop along L: the
previous tile's x (left) and, backward, the next tile's delta (right; computed one tile ahead); so K - 1 <= N * V.
x and dy are read from memory once, as 16-byte vectors. The tile is loaded as [BC, BT] and split into columns in
registers: free when positions are contiguous in memory. (When channels are contiguous the row tiles below are used.)
"""
import triton
import triton.language as tl


@triton.jit
def sigmoid(z, FAST: tl.constexpr):
    """1 / (1 + exp(-z)), four instructions on sm_90 when FAST: FMUL, MUFU.EX2, FADD, MUFU.RCP.  exp(-z) is
    exp2(-z log2 e), which Triton lowers to ex2.approx.ftz.f32 (tl.exp lowers to ex2.approx.f32, which ptxas wraps in
    a subnormal-range guard: FSETP and two predicated FMULs).  FAST (CUDA only: the interpreter cannot run PTX)
    takes the reciprocal by rcp.approx.ftz.f32 (1 ulp) instead of div.full.f32 (2 ulp, and a guard of its own for
    large denominators: another FSETP and two FMULs).  Together the guards were a fifth of the conv backward's loop.
    Flushing changes nothing here: exp(-z) below 2^-126 adds nothing to 1, and past 2^128 it is inf, 1 / inf = 0."""
    b_e = tl.math.exp2(z * -1.4426950408889634)
    if FAST:
        return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=f,f", [1.0 + b_e], dtype=tl.float32,
                                         is_pure=True, pack=1)
    return tl.fdiv(1.0, 1.0 + b_e, ieee_rounding=False)


@triton.jit
def silu(z, FAST: tl.constexpr):
    return z * sigmoid(z, FAST)


@triton.jit
def silu_grad_from_z(g, z, FAST: tl.constexpr):
    """delta = g * silu'(z) = g * sigma(z) * (1 + z * (1 - sigma(z))), spelled g s + g s (z - z s): FMUL and two
    FFMA after the sigmoid (the factored form takes an FADD more)."""
    b_s = sigmoid(z, FAST)
    b_gs = g * b_s
    return b_gs + b_gs * (z - z * b_s)


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
    """[BT] bool: seq_idx[t] == seq_idx[s]; False when s is outside [0, L) and t is a token (no x there with packed
    sequences).  Two padding positions (negative ids) may match: the callers zero a padding position's y and delta
    (is_token), so such a tap never reaches a result."""
    b_qt = tl.load(p_seq + o_t * s_sl, mask=(o_t >= 0) & (o_t < L), other=-1)
    b_qs = tl.load(p_seq + o_s * s_sl, mask=(o_s >= 0) & (o_s < L), other=-2)
    return b_qt == b_qs


@triton.jit
def is_token(p_seq, o_t, L, s_sl):
    """[BT] bool (or a scalar for a scalar o_t): seq_idx[t] >= 0, i.e. t is no padding position; False outside
    [0, L).  y and delta are zeroed where it is False (the module docstring)."""
    return tl.load(p_seq + o_t * s_sl, mask=(o_t >= 0) & (o_t < L), other=-1) >= 0


@triton.jit
def conv_z_at(p_xc, p_ic, p_wc, p_seq, m_c, o_t, L, s_xl, s_ik, s_wk, s_sl,
              K: tl.constexpr, HAS_INIT: tl.constexpr, HAS_SEQ: tl.constexpr):
    """z - beta at arbitrary positions o_t ([T]) by shifted loads, fp32 [BC, T] (edges and d(initial_states))."""
    b_z = tl.zeros([p_xc.shape[0], o_t.shape[0]], tl.float32)
    for d in tl.static_range(K):
        b_tap = load_x_tilde(p_xc, p_ic, m_c, o_s=(o_t - d)[None, :], L=L, s_xl=s_xl, s_ik=s_ik, K=K, HAS_INIT=HAS_INIT)
        if HAS_SEQ:
            b_tap = tl.where(same_sequence(p_seq, o_t, o_t - d, L, s_sl)[None, :], b_tap, 0.0)
        b_z += tl.load(p_wc + (K - 1 - d) * s_wk, mask=m_c, other=0.0).to(tl.float32) * b_tap
    return b_z


@triton.jit
def conv_delta_at(p_xc, p_ic, p_wc, p_seq, p_gc, m_c, o_t, b_bias, L, s_xl, s_ik, s_wk, s_sl, s_gl,
                  K: tl.constexpr, HAS_INIT: tl.constexpr, HAS_SEQ: tl.constexpr, SILU: tl.constexpr,
                  FAST: tl.constexpr):
    """delta at arbitrary positions o_t ([T]) by loads, zero outside [0, L) (g is zero past the end) and, with
    HAS_SEQ, at padding positions."""
    m_t = (o_t >= 0) & (o_t < L)
    if HAS_SEQ:
        m_t = m_t & is_token(p_seq, o_t, L, s_sl)
    b_d = tl.load(p_gc + o_t[None, :] * s_gl, mask=m_c & m_t[None, :], other=0.0).to(tl.float32)
    if SILU:
        b_z = conv_z_at(p_xc, p_ic, p_wc, p_seq, m_c, o_t=o_t, L=L, s_xl=s_xl, s_ik=s_ik, s_wk=s_wk, s_sl=s_sl, K=K,
                        HAS_INIT=HAS_INIT, HAS_SEQ=HAS_SEQ)
        b_d = silu_grad_from_z(b_d, b_z + b_bias, FAST)
    return b_d


# ---------------------------------------------------------------------------------------------------------------
# Column tiles (see the module docstring)
# ---------------------------------------------------------------------------------------------------------------
@triton.jit
def split_cols(X, BC: tl.constexpr, N: tl.constexpr, V: tl.constexpr):
    """[BC, N * V] -> V columns [BC, N]; V in (1, 2, 4, 8); a relabelling of registers when V is in-thread."""
    if V == 1:
        cols = (X,)
    elif V == 2:
        c0, c1 = tl.split(tl.reshape(X, (BC, N, 2)))
        cols = (c0, c1)
    elif V == 4:
        e, o = tl.split(tl.reshape(X, (BC, N, 2, 2)))  # e: v = 0, 2; o: v = 1, 3
        c0, c2 = tl.split(e)
        c1, c3 = tl.split(o)
        cols = (c0, c1, c2, c3)
    else:
        tl.static_assert(V == 8, "split column tiles take V in (1, 2, 4, 8)")
        e, o = tl.split(tl.reshape(X, (BC, N, 4, 2)))
        ee, eo = tl.split(tl.reshape(e, (BC, N, 2, 2)))  # v = 0, 4 / 2, 6
        oe, oo = tl.split(tl.reshape(o, (BC, N, 2, 2)))  # v = 1, 5 / 3, 7
        c0, c4 = tl.split(ee)
        c2, c6 = tl.split(eo)
        c1, c5 = tl.split(oe)
        c3, c7 = tl.split(oo)
        cols = (c0, c1, c2, c3, c4, c5, c6, c7)
    return cols


@triton.jit
def join_cols(cols, BC: tl.constexpr, N: tl.constexpr, V: tl.constexpr):
    """Inverse of split_cols: V columns [BC, N] -> [BC, N * V]."""
    if V == 1:
        X = cols[0]
    elif V == 2:
        X = tl.join(cols[0], cols[1])
    elif V == 4:
        X = tl.join(tl.join(cols[0], cols[2]), tl.join(cols[1], cols[3]))
    else:
        tl.static_assert(V == 8, "joined column tiles take V in (1, 2, 4, 8)")
        e = tl.reshape(tl.join(tl.join(cols[0], cols[4]), tl.join(cols[2], cols[6])), (BC, N, 4))
        o = tl.reshape(tl.join(tl.join(cols[1], cols[5]), tl.join(cols[3], cols[7])), (BC, N, 4))
        X = tl.join(e, o)
    return tl.reshape(X, (BC, N * V))


@triton.jit
def col_pos(t0, v: tl.constexpr, N: tl.constexpr, V: tl.constexpr):
    """[N] positions of column v."""
    return t0 + tl.arange(0, N) * V + v


@triton.jit
def load_cols(p_c, m_c, t0, L, s_l, BC: tl.constexpr, N: tl.constexpr, V: tl.constexpr):
    """The tile at t0 >= 0 as V fp32 columns [BC, N], zero past L."""
    o_t = t0 + tl.arange(0, N * V)
    X = tl.load(p_c + o_t[None, :] * s_l, mask=m_c & (o_t < L)[None, :], other=0.0)
    return split_cols(X.to(tl.float32), BC, N, V)


@triton.jit
def store_cols(p_c, cols, m_c, t0, L, s_l, BC: tl.constexpr, N: tl.constexpr, V: tl.constexpr):
    """Store V columns [BC, N] (cast to p_c's element type) at the tile t0, positions below L."""
    o_t = t0 + tl.arange(0, N * V)
    X = join_cols(cols, BC, N, V)
    tl.store(p_c + o_t[None, :] * s_l, X.to(p_c.dtype.element_ty), mask=m_c & (o_t < L)[None, :])


@triton.jit
def lane_gather(col, o_src, N: tl.constexpr):
    """col at lane o_src[n] for every lane n ([N] indices, clamped into the tile)."""
    o_src = tl.minimum(tl.maximum(o_src, 0), N - 1)
    return tl.gather(col, tl.broadcast_to(o_src[None, :], col.shape), axis=1)


@triton.jit
def x_lagged(xs, xp, p_seq, t0, v: tl.constexpr, d: tl.constexpr, L, s_sl, N: tl.constexpr, V: tl.constexpr,
             HAS_SEQ: tl.constexpr):
    """x~[t - d] (same sequence as t) for the positions t of column v: column (v - d) mod V of the chunk m lanes
    back; the first m lanes read the previous tile's columns xp (d <= N * V)."""
    q: tl.constexpr = v - d
    if q >= 0:
        b_x = xs[q]
    else:
        m: tl.constexpr = (V - 1 - q) // V
        c: tl.constexpr = q + m * V
        o_n = tl.arange(0, N)
        b_x = tl.where((o_n >= m)[None, :], lane_gather(xs[c], o_n - m, N), lane_gather(xp[c], o_n + N - m, N))
    if HAS_SEQ:
        if d > 0:
            o_t = col_pos(t0, v, N, V)
            b_x = tl.where(same_sequence(p_seq, o_t, o_t - d, L, s_sl)[None, :], b_x, 0.0)
    return b_x


@triton.jit
def delta_ahead(ds, dn, p_seq, t0, v: tl.constexpr, j: tl.constexpr, L, s_sl, N: tl.constexpr,
                V: tl.constexpr, HAS_SEQ: tl.constexpr):
    """delta[s + j] (same sequence as s) for the positions s of column v: column (v + j) mod V of the chunk m lanes
    ahead; the last m lanes read the next tile's columns dn."""
    q: tl.constexpr = v + j
    if q < V:
        b_d = ds[q]
    else:
        m: tl.constexpr = q // V
        c: tl.constexpr = q - m * V
        o_n = tl.arange(0, N)
        b_d = tl.where((o_n + m < N)[None, :], lane_gather(ds[c], o_n + m, N), lane_gather(dn[c], o_n + m - N, N))
    if HAS_SEQ:
        if j > 0:
            o_t = col_pos(t0, v, N, V)
            b_d = tl.where(same_sequence(p_seq, o_t + j, o_t, L, s_sl)[None, :], b_d, 0.0)
    return b_d


@triton.jit
def x_tilde_cols(p_xc, p_ic, m_c, t0, L, s_xl, s_ik, K: tl.constexpr, BC: tl.constexpr, N: tl.constexpr,
                 V: tl.constexpr, HAS_INIT: tl.constexpr):
    """x~ of the tile at t0 (any sign: initial states / zeros before 0) as V fp32 columns [BC, N]."""
    o_t = t0 + tl.arange(0, N * V)
    return split_cols(load_x_tilde(p_xc, p_ic, m_c, o_s=o_t[None, :], L=L, s_xl=s_xl, s_ik=s_ik, K=K,
                                   HAS_INIT=HAS_INIT), BC, N, V)


@triton.jit
def conv_z_cols(xs, xp, b_ws, p_seq, b_bias, t0, L, s_sl,
                K: tl.constexpr, N: tl.constexpr, V: tl.constexpr, HAS_SEQ: tl.constexpr):
    """z of every column of the tile at t0 (tuple of V [BC, N]) from its x~ columns xs and the previous tile's xp;
    b_ws: the K taps as [BC, 1] (weight_rows, loaded once a program)."""
    b_zs = ()
    for v in tl.static_range(V):
        b_z = b_bias + tl.zeros_like(xs[0])
        for d in tl.static_range(K):
            b_tap = x_lagged(xs, xp, p_seq=p_seq, t0=t0, v=v, d=d, L=L, s_sl=s_sl, N=N, V=V, HAS_SEQ=HAS_SEQ)
            b_z += b_ws[K - 1 - d] * b_tap
        b_zs = b_zs + (b_z,)
    return b_zs


@triton.jit
def fwd_cols(xs, xp, b_ws, p_seq, b_bias, t0, L, s_sl,
             K: tl.constexpr, N: tl.constexpr, V: tl.constexpr, HAS_SEQ: tl.constexpr, SILU: tl.constexpr,
             FAST: tl.constexpr):
    """y = act(z) of the column tile at t0 (x~ columns xs, previous tile xp), as V fp32 columns [BC, N]; 0 at
    padding positions (HAS_SEQ)."""
    b_zs = conv_z_cols(xs, xp, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0, L=L, s_sl=s_sl, K=K, N=N, V=V, HAS_SEQ=HAS_SEQ)
    b_ys = ()
    for v in tl.static_range(V):
        b_y = b_zs[v]
        if SILU:
            b_y = silu(b_y, FAST)
        if HAS_SEQ:
            b_y = tl.where(is_token(p_seq, col_pos(t0, v, N, V), L, s_sl)[None, :], b_y, 0.0)
        b_ys = b_ys + (b_y,)
    return b_ys


@triton.jit
def delta_cols(xs, xp, gs, b_ws, p_seq, b_bias, t0, L, s_sl,
               K: tl.constexpr, N: tl.constexpr, V: tl.constexpr, HAS_SEQ: tl.constexpr, SILU: tl.constexpr,
               FAST: tl.constexpr):
    """delta of the column tile at t0 from its g columns gs (and x~ columns xs, xp when SILU: z is recomputed); 0 at
    padding positions (HAS_SEQ)."""
    if SILU:
        b_zs = conv_z_cols(xs, xp, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0, L=L, s_sl=s_sl, K=K, N=N, V=V,
                           HAS_SEQ=HAS_SEQ)
    b_ds = ()
    for v in tl.static_range(V):
        b_d = gs[v]
        if HAS_SEQ:  # g masked before SiLU' (the same zero), as delta_rows does
            b_d = tl.where(is_token(p_seq, col_pos(t0, v, N, V), L, s_sl)[None, :], b_d, 0.0)
        if SILU:
            b_d = silu_grad_from_z(b_d, b_zs[v], FAST)
        b_ds = b_ds + (b_d,)
    return b_ds


@triton.jit
def zero_cols(BC: tl.constexpr, N: tl.constexpr, n: tl.constexpr):
    """n fp32 zero columns [BC, N]."""
    b_cols = ()
    for i in tl.static_range(n):
        b_cols = b_cols + (tl.zeros([BC, N], tl.float32),)
    return b_cols


@triton.jit
def bwd_cols(xs, ds, dn, b_ws, p_seq, b_acc, t0, L, s_sl,
             K: tl.constexpr, N: tl.constexpr, V: tl.constexpr, HAS_SEQ: tl.constexpr):
    """(dx of the column tile at t0 as V fp32 columns [BC, N], b_acc plus this tile's share) from its x~ and delta
    columns xs, ds and the next tile's delta dn. b_acc: K + 1 columns [BC, N], x~[s] * delta[s + j] summed over
    each lane's positions s for j = 0 .. K - 1, then delta."""
    b_dxs = ()
    for v in tl.static_range(V):
        b_dx = tl.zeros_like(xs[0])
        for j in tl.static_range(K):
            b_dj = delta_ahead(ds, dn, p_seq=p_seq, t0=t0, v=v, j=j, L=L, s_sl=s_sl, N=N, V=V, HAS_SEQ=HAS_SEQ)
            b_dx += b_ws[K - 1 - j] * b_dj
        b_dxs = b_dxs + (b_dx,)
    b_new = ()
    for j in tl.static_range(K):  # the same products again (CSE'd): dw[K - 1 - j] += x~[s] delta[s + j]
        b_xd = b_acc[j]
        for v in tl.static_range(V):
            b_xd += xs[v] * delta_ahead(ds, dn, p_seq=p_seq, t0=t0, v=v, j=j, L=L, s_sl=s_sl, N=N, V=V, HAS_SEQ=HAS_SEQ)
        b_new = b_new + (b_xd,)
    b_db = b_acc[K]
    for v in tl.static_range(V):
        b_db += ds[v]
    return b_dxs, b_new + (b_db,)


# ---------------------------------------------------------------------------------------------------------------
# Row tiles (channels contiguous: the channel-last view)
# ---------------------------------------------------------------------------------------------------------------
# When channels are contiguous a thread holds a vector of channels at one position, so a tile is a tuple of R rows
# [BC, 1] (positions t0 .. t0 + R - 1) and a shift by d positions is a renaming of rows: no shuffles, no transposes.
# A program walks its chunk of L tile by tile with a sliding window of rows carried through the loop (each row of x
# and dy is loaded once), and loads the next tile's rows before it computes the current one (they are in flight
# while it computes and stores). Prefetched rows stay in x's dtype until they enter the (fp32) window.
#
# Note [row prefetch]
# The forward loads one tile ahead; the backward loop (template and eager kernel) two: iteration i loads the rows of
# tile i + 2 and slides the window by those of tile i + 1, loaded one iteration earlier.  The backward's programs
# are few (about 8 an SM, all resident) and run ~60 instructions an element, so one tile ahead left ~2 KB of loads in
# flight a program, too few to cover DRAM latency (ncu: 60-73% of DRAM bandwidth, warps waiting on loads).  The
# second tile costs ~16 registers a thread (bf16 rows stay 16-bit) and the row loads past a chunk's end, 2 tiles of
# the ~20-130 a program walks.  H200: the channel-last backward 10-14% faster (benchmarks/diagnostics/conv_waves.py).
@triton.jit
def load_rows(p_c, m_c, t0, L, s_l, R: tl.constexpr):
    """Rows t0 .. t0 + R - 1 (t0 >= 0) as R [BC, 1] tensors in p_c's dtype, zero past L."""
    rows = ()
    for r in tl.static_range(R):
        rows = rows + (tl.load(p_c + (t0 + r) * s_l, mask=m_c & (t0 + r < L), other=0.0),)
    return rows


@triton.jit
def join_rows(rows, BC: tl.constexpr, R: tl.constexpr):
    """R rows [BC, 1] (R a power of two) -> [BC, R] in row order, each thread keeping its channels' rows (a
    relabelling of registers, as join_cols).  Joins level by level: a level of m tuples holds, in tuple i, the rows
    = i mod m in order; joining tuples i and i + m / 2 interleaves them into the rows = i mod m / 2."""
    tl.static_assert(R <= 64 and (R & (R - 1)) == 0, "join_rows takes R in (1, 2, 4, ..., 64)")
    cur = rows
    for lvl in tl.static_range(6):
        if (R >> lvl) > 1:  # R >> (lvl + 1) tuples of 2 << lvl rows after this level
            nxt = ()
            for i in tl.static_range(R >> (lvl + 1)):
                nxt = nxt + (tl.reshape(tl.join(cur[i], cur[i + (R >> (lvl + 1))]), (BC, 2 << lvl)),)
            cur = nxt
    return cur[0]


@triton.jit
def x_rows(p_xc, p_ic, m_c, t0, L, s_xl, s_ik, K: tl.constexpr, R: tl.constexpr, HAS_INIT: tl.constexpr):
    """x~ at t0 - K + 1 .. t0 + R - 1 (t0 >= 0) as fp32 rows: K - 1 halo rows then R rows."""
    rows = ()
    for r in tl.static_range(K - 1):
        rows = rows + (load_x_tilde(p_xc, p_ic, m_c, o_s=t0 - K + 1 + r, L=L, s_xl=s_xl, s_ik=s_ik, K=K,
                                    HAS_INIT=HAS_INIT),)
    b_new = load_rows(p_xc, m_c, t0, L, s_xl, R)
    for r in tl.static_range(R):
        rows = rows + (b_new[r].to(tl.float32),)
    return rows


@triton.jit
def split_rows(X, BC: tl.constexpr, R: tl.constexpr):
    """Inverse of join_rows: [BC, R] (R a power of two) -> R rows [BC, 1] in order.  Level by level: a level of m
    tensors holds, in tensor i, the rows = i mod m in order; splitting each into its even and odd elements gives the
    rows = i and = i + m mod 2m."""
    tl.static_assert(R <= 64 and (R & (R - 1)) == 0, "split_rows takes R in (1, 2, 4, ..., 64)")
    cur = (X,)
    for lvl in tl.static_range(6):
        if (R >> lvl) > 1:
            evens = ()
            odds = ()
            for i in tl.static_range(1 << lvl):
                b_e, b_o = tl.split(tl.reshape(cur[i], (BC, R >> (lvl + 1), 2)))
                evens = evens + (b_e,)
                odds = odds + (b_o,)
            cur = evens + odds
    return cur


@triton.jit
def load_rows_t(p_c, m_c, t0, L, s_l, BC: tl.constexpr, R: tl.constexpr):
    """load_rows for a tensor whose positions are contiguous while x's channels are (a dy laid out (B, C, L) with a
    channel-last x): one [BC, R] load, R positions of each channel at once, split into rows in registers."""
    o_t = t0 + tl.arange(0, R)
    X = tl.load(p_c + o_t[None, :] * s_l, mask=m_c & (o_t < L)[None, :], other=0.0)
    return split_rows(X, BC, R)


@triton.jit
def drop_rows(win, R: tl.constexpr, DROP: tl.constexpr):
    """win[DROP:R]: a window of R rows without its first DROP (DROP = 0: the first R rows)."""
    rows = ()
    for r in tl.static_range(DROP, R):
        rows = rows + (win[r],)
    return rows


@triton.jit
def slide_rows(win, new, R: tl.constexpr, NEW: tl.constexpr):
    """The fp32 window of R rows moved on by the NEW rows of `new`: win[NEW:] + new (converted to fp32)."""
    rows = drop_rows(win, R, NEW)
    for r in tl.static_range(NEW):
        rows = rows + (new[r].to(tl.float32),)
    return rows


@triton.jit
def weight_rows(p_wc, m_c, s_wk, K: tl.constexpr):
    """The K taps of the program's channels, fp32 [BC, 1] each (tap k has lag K - 1 - k)."""
    b_ws = ()
    for k in tl.static_range(K):
        b_ws = b_ws + (tl.load(p_wc + k * s_wk, mask=m_c, other=0.0).to(tl.float32),)
    return b_ws


@triton.jit
def conv_z_rows(xs, b_ws, p_seq, b_bias, t0, L, s_sl, K: tl.constexpr, R: tl.constexpr, HAS_SEQ: tl.constexpr):
    """z at t0 .. t0 + R - 1 from xs = x~ at t0 - K + 1 .. t0 + R - 1 (R + K - 1 rows)."""
    b_zs = ()
    for v in tl.static_range(R):
        b_z = b_bias + b_ws[K - 1] * xs[K - 1 + v]
        for d in tl.static_range(1, K):
            b_tap = xs[K - 1 + v - d]
            if HAS_SEQ:
                b_tap = tl.where(same_sequence(p_seq, t0 + v, t0 + v - d, L, s_sl), b_tap, 0.0)
            b_z += b_ws[K - 1 - d] * b_tap
        b_zs = b_zs + (b_z,)
    return b_zs


@triton.jit
def store_rows(p_c, rows, m_c, t0, L, s_l, R: tl.constexpr):
    """Store R rows [BC, 1] (cast to p_c's element type) at positions t0 .. t0 + R - 1 below L."""
    for r in tl.static_range(R):
        tl.store(p_c + (t0 + r) * s_l, rows[r].to(p_c.dtype.element_ty), mask=m_c & (t0 + r < L))


@triton.jit
def fwd_rows(xs, b_ws, p_seq, b_bias, t0, L, s_sl, K: tl.constexpr, R: tl.constexpr, HAS_SEQ: tl.constexpr,
             SILU: tl.constexpr, FAST: tl.constexpr):
    """y = act(z) at t0 .. t0 + R - 1 from xs = x~ at t0 - K + 1 .. t0 + R - 1, as R fp32 rows [BC, 1]; 0 at
    padding positions (HAS_SEQ)."""
    b_zs = conv_z_rows(xs, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0, L=L, s_sl=s_sl, K=K, R=R, HAS_SEQ=HAS_SEQ)
    b_ys = ()
    for v in tl.static_range(R):
        b_y = b_zs[v]
        if SILU:
            b_y = silu(b_y, FAST)
        if HAS_SEQ:
            b_y = tl.where(is_token(p_seq, t0 + v, L, s_sl), b_y, 0.0)
        b_ys = b_ys + (b_y,)
    return b_ys


@triton.jit
def delta_rows(xs, gs, b_ws, p_seq, b_bias, t0, L, s_sl, K: tl.constexpr, R: tl.constexpr, HAS_SEQ: tl.constexpr,
               SILU: tl.constexpr, FAST: tl.constexpr):
    """delta at t0 .. t0 + R - 1 (fp32 rows) from g there and xs = x~ at t0 - K + 1 .. t0 + R - 1 (used if SILU);
    0 at padding positions (HAS_SEQ)."""
    if SILU:
        b_zs = conv_z_rows(xs, b_ws, p_seq=p_seq, b_bias=b_bias, t0=t0, L=L, s_sl=s_sl, K=K, R=R, HAS_SEQ=HAS_SEQ)
    b_ds = ()
    for u in tl.static_range(R):
        b_d = gs[u].to(tl.float32)
        if HAS_SEQ:  # g masked before SiLU' (the same zero): masking delta after it kept the mask live longer, 137
            # registers instead of 124 in the bf16 channel-last backward (sm_90 offline; 120 without padding)
            b_d = tl.where(is_token(p_seq, t0 + u, L, s_sl), b_d, 0.0)
        if SILU:
            b_d = silu_grad_from_z(b_d, b_zs[u], FAST)
        b_ds = b_ds + (b_d,)
    return b_ds


@triton.jit
def bwd_rows(xs, ds, b_ws, p_seq, b_acc, t0, L, s_sl, K: tl.constexpr, R: tl.constexpr, HAS_SEQ: tl.constexpr):
    """(dx at t0 .. t0 + R - 1 as R fp32 rows [BC, 1], b_acc plus this tile's share) from xs = x~ and ds = delta
    at t0 .. (at least R, resp. R + K - 1 rows). b_acc: K + 1 rows [BC, 1], x~[s] * delta[s + j] summed over the
    positions s for j = 0 .. K - 1, then delta (as bwd_cols)."""
    b_new = ()
    for j in tl.static_range(K):
        b_new = b_new + (b_acc[j],)
    b_dxs = ()
    for v in tl.static_range(R):
        b_dx = tl.zeros_like(ds[0])
        b_x = xs[v]
        b_upd = ()
        for j in tl.static_range(K):
            b_dj = ds[v + j]
            if HAS_SEQ:
                if j > 0:
                    b_dj = tl.where(same_sequence(p_seq, t0 + v + j, t0 + v, L, s_sl), b_dj, 0.0)
            b_dx += b_ws[K - 1 - j] * b_dj
            b_upd = b_upd + (b_new[j] + b_x * b_dj,)
        b_new = b_upd
        b_dxs = b_dxs + (b_dx,)
    b_db = b_acc[K]
    for v in tl.static_range(R):
        b_db += ds[v]
    return b_dxs, b_new + (b_db,)


# ---------------------------------------------------------------------------------------------------------------
# Parameter gradients
# ---------------------------------------------------------------------------------------------------------------
@triton.jit
def param_grad_rows(b_acc, K: tl.constexpr, KW: tl.constexpr):
    """Reduce bwd_cols' / bwd_rows' accumulators over the lanes (one for rows): (dw [BC, KW], dbeta [BC])."""
    o_k = tl.arange(0, KW)
    b_dw = tl.zeros([b_acc[0].shape[0], KW], tl.float32)
    for j in tl.static_range(K):
        b_dw += tl.where(o_k[None, :] == K - 1 - j, tl.sum(b_acc[j], axis=1)[:, None], 0.0)
    return b_dw, tl.sum(b_acc[K], axis=1)


@triton.jit
def dinit_tile(p_xc, p_ic, p_wc, p_seq, p_gc, p_dic, m_c, b_bias, b_dw, L, s_xl, s_ik, s_wk, s_sl, s_gl, s_dik,
               K: tl.constexpr, KW: tl.constexpr, KP: tl.constexpr, HAS_SEQ: tl.constexpr, SILU: tl.constexpr,
               FAST: tl.constexpr):
    """Store d(initial_states) = dx of the virtual positions -K + 1 .. -1; return b_dw plus their share of dw."""
    o_s = tl.arange(0, KP) - KP                                                           # [KP]
    m_s = o_s > -K
    o_k = tl.arange(0, KW)
    b_i = load_x_tilde(p_xc, p_ic, m_c, o_s=o_s[None, :], L=L, s_xl=s_xl, s_ik=s_ik, K=K, HAS_INIT=True)  # [BC, KP]
    b_di = tl.zeros_like(b_i)
    for j in tl.static_range(K):
        b_dj = conv_delta_at(p_xc, p_ic, p_wc, p_seq, p_gc, m_c, o_t=o_s + j, b_bias=b_bias, L=L, s_xl=s_xl, s_ik=s_ik,
                             s_wk=s_wk, s_sl=s_sl, s_gl=s_gl, K=K, HAS_INIT=True, HAS_SEQ=HAS_SEQ, SILU=SILU, FAST=FAST)
        b_di += tl.load(p_wc + (K - 1 - j) * s_wk, mask=m_c, other=0.0).to(tl.float32) * b_dj
        b_xd = tl.sum(tl.where(m_s[None, :], b_i * b_dj, 0.0), axis=1)
        b_dw += tl.where(o_k[None, :] == K - 1 - j, b_xd[:, None], 0.0)
    tl.store(p_dic + (o_s + K - 1)[None, :] * s_dik, b_di.to(p_dic.dtype.element_ty), mask=m_c & m_s[None, :])
    return b_dw
