"""Eager Triton launchers of the causal conv1d (+ SiLU) against the float64 reference.

On CPU the kernels run in the Triton interpreter (tests/conftest.py): shapes are tiny and tiles big. Tolerances:
fp32 results 1e-5 of the largest reference value (fp32 accumulation of <= 100 products plus the approximate
exp / division of the sigmoid, ~1e-6, with a 10x margin); bf16 results 1e-2 (one bf16 rounding of the output,
2^-8 = 3.9e-3, with a 2.5x margin); fp16 results 2e-3 (2^-11 = 4.9e-4, 4x margin).
"""
import math

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from inductor_conv.kernels.causal_conv1d import causal_conv1d_bwd, causal_conv1d_fwd
from inductor_conv.kernels.conv_math import join_rows, load_rows_t
from inductor_conv.reference.conv import causal_conv1d_ref

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}
# A tile far wider than the test shapes keeps the interpreter's program count low; "narrow" forces several tiles
# and chunks (partial rows) per batch row.
# fp32 x has V = 4 positions a lane (16 bytes), so WIDE has 16 lanes, NARROW 4 (several tiles and chunks a row).
WIDE = dict(block_c=4, block_t=64)
NARROW = dict(block_c=2, block_t=16, waves=64)


def make_inputs(B, C, L, K, *, dtype=torch.float32, w_dtype=None, layout="bcl", bias=True, seq=False, init=False,
                seed=0):
    g = torch.Generator().manual_seed(seed)

    def rand(*shape, dt=dtype):
        return torch.randn(*shape, generator=g).to(dt).to(DEVICE)

    x = rand(B, C, L) if layout == "bcl" else rand(B, L, C).transpose(1, 2)  # channel-last view, no copy
    w_dtype = w_dtype or dtype
    args = dict(
        x=x,
        weight=rand(C, K, dt=w_dtype),
        bias=rand(C, dt=w_dtype) if bias else None,
        # packed sequences: ids non-decreasing along L, several boundaries inside a tile
        seq_idx=(packed_seq_idx(B, L, g, pad=seq == "pad").to(DEVICE) if seq else None),
        initial_states=rand(B, C, K - 1) if init else None,
    )
    dy = rand(B, C, L) if layout == "bcl" else rand(B, L, C).transpose(1, 2)
    return args, dy


def packed_seq_idx(B, L, g, pad=False):
    """[B, L] int32 ids of packed sequences, non-decreasing along L.  pad: padding as Dao's
    test_causal_conv1d_varlen_padding lays it out (-1 from a random point to the end of the row, a third to a half
    of it) plus a run of -2 between two sequences in the middle (any negative id is padding)."""
    seq_idx = torch.randint(0, 4, (B, L), generator=g).sort(dim=1).values.to(torch.int32)
    if pad:
        for b in range(B):
            tail = int(torch.randint(L // 3, L // 2 + 1, (1,), generator=g))
            seq_idx[b, L - tail:] = -1
            seq_idx[b, L // 4:L // 4 + 3] = -2
    return seq_idx


def reference(args, dy, activation):
    """y and the gradients of sum(y * dy) in float64."""
    leaves = {k: (v.detach().double().requires_grad_() if v is not None and v.is_floating_point() else v)
              for k, v in args.items()}
    y = causal_conv1d_ref(**leaves, activation=activation)
    wrt = [k for k in ("x", "weight", "bias", "initial_states") if leaves[k] is not None]
    grads = torch.autograd.grad(y, [leaves[k] for k in wrt], dy.double())
    return y, dict(zip(wrt, grads))


def assert_close(actual, expected, tol, name):
    assert actual.dtype != torch.float64
    scale = expected.abs().max().item() if expected.numel() else 1.0
    torch.testing.assert_close(actual.double(), expected, rtol=tol, atol=tol * max(scale, 1e-30), msg=name)


def check(args, dy, activation, config, tol=None):
    y = causal_conv1d_fwd(**args, activation=activation, config=config)
    dx, dw, db, di = causal_conv1d_bwd(**args, dy=dy, activation=activation, config=config)
    y_ref, grads = reference(args, dy, activation)
    assert y.dtype == args["x"].dtype and y.stride() == args["x"].stride()
    assert_close(y, y_ref, tol or TOL[y.dtype], "y")
    for name, got in (("x", dx), ("weight", dw), ("bias", db), ("initial_states", di)):
        if args[name] is None:
            assert got is None, name
            continue
        assert got.dtype == args[name].dtype, name
        assert_close(got, grads[name], tol or TOL[got.dtype], f"d{name}")
    return y, dx, dw, db, di


def test_reference_matches_conv1d():
    args, _ = make_inputs(2, 3, 11, 4, seed=1)
    x, w, b = args["x"].double(), args["weight"].double(), args["bias"].double()
    expected = F.conv1d(F.pad(x, (3, 0)), w[:, None, :], b, groups=3)
    torch.testing.assert_close(causal_conv1d_ref(x, w, b), expected)


def test_worked_example():
    """Seed chapter 3: x = [1,2,3,4], w = [2,3,5], beta = 1, g = [1,2,3,4], no activation (exact in fp32)."""
    x = torch.tensor([[[1.0, 2, 3, 4]]], device=DEVICE)
    w = torch.tensor([[2.0, 3, 5]], device=DEVICE)
    b = torch.tensor([1.0], device=DEVICE)
    g = torch.tensor([[[1.0, 2, 3, 4]]], device=DEVICE)
    y = causal_conv1d_fwd(x, w, b, None, None, "none", config=WIDE)
    assert (y * g).sum().item() == 242
    dx, dw, db, di = causal_conv1d_bwd(x, w, b, None, None, g, "none", config=WIDE)
    assert dx.flatten().tolist() == [17, 27, 27, 20]
    assert dw.flatten().tolist() == [11, 20, 30]
    assert db.tolist() == [10] and di is None


@pytest.mark.parametrize("tile", [WIDE, NARROW], ids=["wide", "narrow"])
def test_silu_grad_uses_preactivation(tile):
    """z = [-3, 0, 0, 0] (w = [1, -1], x = 3, beta = 0): delta = silu'(z) * 1 must give silu'(0) = 1/2 where z = 0
    and silu'(-3) = -0.0881 at t = 0; using y = silu(z) instead of z would give silu'(silu(-3)) = silu'(-0.142) = 0.43
    there (and 1/2 where z = 0 too: silu(0) = 0), far outside the tolerances below."""
    x = torch.full((1, 1, 4), 3.0, device=DEVICE)
    w = torch.tensor([[1.0, -1.0]], device=DEVICE)
    b = torch.zeros(1, device=DEVICE)
    g = torch.ones_like(x)
    dx, dw, db, _ = causal_conv1d_bwd(x, w, b, None, None, g, "silu", config=tile)

    def silu_grad(z):
        s = 1 / (1 + math.exp(-z))
        return s * (1 + z * (1 - s))

    delta = [silu_grad(-3.0), 0.5, 0.5, 0.5]
    assert abs(db.item() - sum(delta)) < 1e-6, (db.item(), sum(delta))
    # dx[t] = w[1] delta[t] + w[0] delta[t + 1] (delta = 0 past the end); dw[k] = sum_t delta[t] x[t - 1 + k]
    expected_dx = [delta[t + 1] - delta[t] if t < 3 else -delta[t] for t in range(4)]
    torch.testing.assert_close(dx.flatten().tolist(), expected_dx, rtol=0, atol=1e-6)
    torch.testing.assert_close(dw.flatten().tolist(), [3 * sum(delta[1:]), 3 * sum(delta)], rtol=0, atol=1e-5)


@pytest.mark.parametrize("layout", ["bcl", "blc"])
@pytest.mark.parametrize("activation", ["none", "silu"])
@pytest.mark.parametrize("tile", [WIDE, NARROW], ids=["wide", "narrow"])
def test_matches_reference(layout, activation, tile):
    args, dy = make_inputs(2, 5, 37, 4, layout=layout, seed=2)
    check(args, dy, activation, tile)


@pytest.mark.parametrize("B,C,L,K", [(2, 3, 9, 1), (2, 3, 2, 4), (2, 3, 1, 3), (1, 2, 30, 9)],
                         ids=["K1", "L<K", "L1", "K9"])
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_edge_shapes(B, C, L, K, layout):
    args, dy = make_inputs(B, C, L, K, layout=layout, seed=3)
    check(args, dy, "silu", WIDE)


@pytest.mark.parametrize("waves", [1, 64])
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_backward_lookahead_of_one_position(layout, waves):
    """L = 2 * 16 + 1 with 16-position tiles: the last tile holds one position, whose delta the previous tile's dx
    and dw need (a look-ahead skipped where only one position of it lies before L fails this)."""
    args, dy = make_inputs(2, 3, 33, 4, layout=layout, seed=6)
    check(args, dy, "silu", dict(NARROW, waves=waves))


@pytest.mark.parametrize("layout", ["bcl", "blc"])
@pytest.mark.parametrize("tile", [WIDE, NARROW], ids=["wide", "narrow"])
def test_seq_idx(layout, tile):
    args, dy = make_inputs(2, 3, 40, 4, layout=layout, seq=True, seed=4)
    assert args["seq_idx"].unique().numel() > 2
    check(args, dy, "silu", tile)
    # the mask matters: the same inputs without seq_idx give a different y
    y_plain = causal_conv1d_fwd(**dict(args, seq_idx=None), activation="silu", config=NARROW)
    assert not torch.allclose(y_plain, causal_conv1d_fwd(**args, activation="silu", config=NARROW))


@pytest.mark.parametrize("layout, activation, tile", [("bcl", "silu", WIDE), ("bcl", "none", NARROW),
                                                       ("blc", "silu", NARROW), ("blc", "none", WIDE)],
                         ids=["bcl-silu-wide", "bcl-none-narrow", "blc-silu-narrow", "blc-none-wide"])
def test_seq_idx_padding(layout, activation, tile):
    """Negative ids are padding (Note [padding in packed sequences] in ops/causal_conv1d.py): y = 0 there (not
    act(bias) nor a conv over padding), dy there reaches nothing (the gradients are the reference's, which is
    autograd of that y), and dx = 0 there; across tiles and chunks (NARROW) in both tilings."""
    args, dy = make_inputs(2, 3, 40, 4, layout=layout, seq="pad", seed=14)
    pad = (args["seq_idx"] < 0)[:, None, :].expand_as(args["x"])
    assert pad.any() and (~pad).any()
    y, dx, dw, db, _ = check(args, dy, activation, tile)
    assert y[pad].eq(0).all() and y[~pad].ne(0).all()
    assert dx[pad].eq(0).all()
    dx_m, dw_m, db_m, _ = causal_conv1d_bwd(**args, dy=dy.masked_fill(pad, 0), activation=activation, config=tile)
    assert torch.equal(dx, dx_m) and torch.equal(dw, dw_m) and torch.equal(db, db_m)


@pytest.mark.parametrize("layout", ["bcl", "blc"])
@pytest.mark.parametrize("K", [2, 4])
def test_initial_states(layout, K):
    args, dy = make_inputs(2, 3, 21, K, layout=layout, init=True, bias=False, seed=5)
    check(args, dy, "silu", NARROW)


def test_mixed_dtypes():
    """fp32 weight and bias with bf16 x: y and dx in bf16 (tolerance 1e-2), dweight / dbias in fp32 accumulated in
    fp32 from the same bf16 inputs as the reference, so 1e-5 holds for them."""
    args, dy = make_inputs(2, 5, 37, 4, dtype=torch.bfloat16, w_dtype=torch.float32, seed=6)
    y = causal_conv1d_fwd(**args, activation="silu", config=WIDE)
    dx, dw, db, _ = causal_conv1d_bwd(**args, dy=dy, activation="silu", config=WIDE)
    y_ref, grads = reference(args, dy, "silu")
    assert (y.dtype, dx.dtype, dw.dtype, db.dtype) == (torch.bfloat16, torch.bfloat16, torch.float32, torch.float32)
    assert_close(y, y_ref, 1e-2, "y")
    assert_close(dx, grads["x"], 1e-2, "dx")
    assert_close(dw, grads["weight"], 1e-5, "dw")
    assert_close(db, grads["bias"], 1e-5, "db")


def test_tile_config_independence():
    """Different tiles and chunkings (partial rows) agree with each other to fp32 rounding."""
    args, dy = make_inputs(2, 5, 37, 3, seq=True, seed=7)
    results = [check(args, dy, "silu", cfg) for cfg in
               (WIDE, NARROW, dict(block_c=8, block_t=32, waves=2))]
    for other in results[1:]:
        for a, b in zip(results[0], other):
            if a is not None:
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_backward_deterministic():
    """Two backward runs with many partial rows are bit-identical (GPU only: the interpreter runs programs one
    after another, so there bit-identity holds for any reduction order, atomics included)."""
    args, dy = make_inputs(2, 3, 40, 4, seed=8)
    first = causal_conv1d_bwd(**args, dy=dy, activation="silu", config=NARROW)
    second = causal_conv1d_bwd(**args, dy=dy, activation="silu", config=NARROW)
    for a, b in zip(first, second):
        if a is not None:
            assert torch.equal(a, b)


def test_backward_atomic_path_agrees():
    """deterministic=False (atomics) gives the fixed-order result to rounding."""
    args, dy = make_inputs(2, 3, 40, 4, seed=8)
    first = causal_conv1d_bwd(**args, dy=dy, activation="silu", config=NARROW)
    atomic = causal_conv1d_bwd(**args, dy=dy, activation="silu", deterministic=False, config=NARROW)
    for a, b in zip(first, atomic):
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout,seq,init", [("bcl", False, True), ("blc", True, False)])
@pytest.mark.parametrize("deterministic", [True, False])
def test_batch_above_the_grid_limit_runs_in_slices(monkeypatch, layout, seq, init, deterministic):
    """CUDA caps the grid's batch axis at 65535: the launchers run a larger batch as slices. With the cap lowered to
    2, B = 5 runs three launches, each writing its own rows of y, dx, d initial_states and the partial dw rows
    (NaN-filled out: a row no slice writes fails)."""
    from inductor_conv.kernels import causal_conv1d as kernels

    monkeypatch.setattr(kernels, "MAX_GRID_BATCH", 2)
    args, dy = make_inputs(5, 3, 20, 4, layout=layout, seq=seq, init=init, seed=12)
    out = torch.full_like(args["x"], float("nan"))
    y = causal_conv1d_fwd(**args, activation="silu", out=out, config=NARROW)
    dx, dw, db, di = causal_conv1d_bwd(**args, dy=dy, activation="silu", deterministic=deterministic, config=NARROW)
    y_ref, grads = reference(args, dy, "silu")
    assert_close(y, y_ref, TOL[torch.float32], "y")
    for name, got in (("x", dx), ("weight", dw), ("bias", db), ("initial_states", di)):
        if args[name] is not None:
            assert_close(got, grads[name], TOL[torch.float32], f"d{name}")


@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_int64_offsets_when_a_row_passes_int32(monkeypatch, overflow_checks, layout):
    """A tensor of 2^31 elements or more makes the launchers pass IDX_DTYPE = int64 (channel x stride and position x
    stride offsets would wrap in int32); with the limit lowered, both kernels take that path and stay exact (with the
    interpreter's int32 overflow checks on: Note [interpreter overflow checks] in conftest.py)."""
    from inductor_conv.kernels import causal_conv1d as kernels

    seen = []
    pick = kernels._index_dtype
    monkeypatch.setattr(kernels, "_index_dtype", lambda *t: seen.append(pick(*t)) or seen[-1])
    monkeypatch.setattr(kernels, "INT32_OFFSETS", 64)  # x below has 3 * 5 * 20 = 300 elements: int64
    args, dy = make_inputs(3, 5, 20, 4, layout=layout, init=True, seed=13)
    y = causal_conv1d_fwd(**args, activation="silu", config=NARROW)
    dx, dw, db, di = causal_conv1d_bwd(**args, dy=dy, activation="silu", config=NARROW)
    assert seen == [tl.int64, tl.int64]
    y_ref, grads = reference(args, dy, "silu")
    assert_close(y, y_ref, TOL[torch.float32], "y")
    for name, got in (("x", dx), ("weight", dw), ("bias", db), ("initial_states", di)):
        assert_close(got, grads[name], TOL[torch.float32], f"d{name}")
    monkeypatch.setattr(kernels, "INT32_OFFSETS", 2**31)
    causal_conv1d_fwd(**args, activation="silu", config=NARROW)
    assert seen[-1] == tl.int32


def test_forward_writes_every_element():
    args, _ = make_inputs(2, 3, 37, 4, layout="blc", seed=9)
    out = torch.full_like(args["x"], float("nan"))
    causal_conv1d_fwd(**args, activation="none", out=out, config=NARROW)
    assert not out.isnan().any()


@triton.jit
def _rows_kernel(X, OUT_ROWS, OUT_JOINED, T0, L, BC: tl.constexpr, R: tl.constexpr):
    """load_rows_t of X [BC, L] (positions contiguous) at T0: row r stored to OUT_ROWS[r], the rows joined back to
    OUT_JOINED [BC, R]."""
    o_c = tl.arange(0, BC)
    m_c = (o_c < BC)[:, None]
    rows = load_rows_t(X + o_c[:, None] * L, m_c, T0, L, 1, BC, R)
    for r in tl.static_range(R):
        tl.store(OUT_ROWS + r * BC + o_c[:, None], rows[r])
    tl.store(OUT_JOINED + o_c[:, None] * R + tl.arange(0, R)[None, :], join_rows(rows, BC, R))


@pytest.mark.skipif(DEVICE != "cpu", reason="interpreter check of the row helpers")
@pytest.mark.parametrize("R", [1, 2, 4, 8, 16])
def test_split_rows_inverts_join_rows(R):
    """The DY_T backward's load_rows_t: R positions of each channel in one [BC, R] load, split into rows in order
    (split_rows), zero past L; join_rows puts them back (the forward's and backward's stores)."""
    BC, L, t0 = 4, 37, 32
    x = torch.randn(BC, L, generator=torch.Generator().manual_seed(R))
    rows, joined = torch.full((R, BC), float("nan")), torch.full((BC, R), float("nan"))
    _rows_kernel[(1,)](x, rows, joined, t0, L, BC=BC, R=R)
    want = torch.zeros(BC, R)
    n = min(R, L - t0)
    want[:, :n] = x[:, t0:t0 + n]
    assert torch.equal(rows, want.T) and torch.equal(joined, want)


def test_argument_errors():
    args, _ = make_inputs(1, 2, 5, 3, seq=True, init=True)
    with pytest.raises(ValueError, match="initial_states"):
        causal_conv1d_fwd(**args, activation="silu")
    args.update(initial_states=None)
    with pytest.raises(ValueError, match="activation"):
        causal_conv1d_fwd(**args, activation="gelu")
    with pytest.raises(TypeError, match="seq_idx"):
        causal_conv1d_fwd(**dict(args, seq_idx=args["seq_idx"].long()), activation="silu")
    with pytest.raises(ValueError, match="weight"):
        causal_conv1d_fwd(**dict(args, weight=args["weight"][:1]), activation="silu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_gpu_dtypes_default_tiles(dtype, layout):
    args, dy = make_inputs(3, 192, 1000, 4, dtype=dtype, layout=layout, seed=10)
    check(args, dy, "silu", None)
    if dtype == torch.bfloat16:  # packed sequences and initial states, with fp32 weights
        args, dy = make_inputs(2, 64, 300, 4, dtype=dtype, w_dtype=torch.float32, layout=layout, seq=True, seed=11)
        check(args, dy, "silu", None, tol=1e-2)
        args, dy = make_inputs(2, 64, 300, 3, dtype=dtype, w_dtype=torch.float32, layout=layout, init=True, seed=12)
        check(args, dy, "none", None, tol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["bcl", "blc"])
def test_gpu_deterministic_default_tiles(layout):
    args, dy = make_inputs(4, 256, 4096, 4, dtype=torch.bfloat16, layout=layout, seed=13)
    first = causal_conv1d_bwd(**args, dy=dy, activation="silu")
    for _ in range(3):
        again = causal_conv1d_bwd(**args, dy=dy, activation="silu")
        for a, b in zip(first, again):
            if a is not None:
                assert torch.equal(a, b)


# Random tiles: the loop carries each tile's neighbours (column tiles: previous x, next delta; row tiles: windows of
# V + K - 1 rows), so every combination of K against the tile (K - 1 > V, chunks of one tile, one row a tile) must
# agree with the float64 reference. Few, small, derandomised examples: each runs through the interpreter.
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=5, deadline=None, derandomize=True)
@given(
    layout=st.sampled_from(["bcl", "blc"]),
    K=st.integers(1, 9),
    L=st.integers(1, 48),
    block_t=st.sampled_from([1, 2, 4, 8, 16, 32]),
    waves=st.sampled_from([1, 64]),
    extra=st.sampled_from(["none", "seq", "init"]),
)
def test_random_tiles_match_reference(layout, K, L, block_t, waves, extra):
    if layout == "bcl":
        block_t = max(block_t, 16)  # column tiles: at least 4 lanes of 4 fp32 positions
    args, dy = make_inputs(2, 3, L, K, layout=layout, seq=extra == "seq", init=extra == "init" and K > 1,
                           seed=K * 100 + L)
    check(args, dy, "silu", dict(block_c=2, block_t=block_t, waves=waves))


def test_backward_dy_across_the_grain():
    """A contiguous dy with the channel-last view as x (and the reverse): the launcher copies dy into x's layout
    first; the gradients and dx's strides are those of dy in x's layout."""
    for layout in ("blc", "bcl"):
        args, dy = make_inputs(2, 5, 37, 4, layout=layout, seed=21)
        other = dy.contiguous() if layout == "blc" else dy.transpose(1, 2).contiguous().transpose(1, 2)
        assert other.stride() != args["x"].stride()
        got = causal_conv1d_bwd(**args, dy=other, activation="silu", config=NARROW)
        _, grads = reference(args, dy, "silu")
        assert got[0].stride() == args["x"].stride()
        assert_close(got[0], grads["x"], TOL[torch.float32], "dx")
        assert_close(got[1], grads["weight"], TOL[torch.float32], "dw")
