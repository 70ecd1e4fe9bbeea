"""Note [mask ranges] (kernels/attn_math.py): with config.attention_mask_ranges the kernels skip the tiles a mask
tensor gives no real entry and run the tiles it fully allows without reading it.  Skipped tiles add exact zeros and a
full tile's mask is the True / 0.0 it holds, so only the order of the sums changes (the full tiles run in a loop of
their own): results equal those with the switch off to fp32 rounding.

On the Triton interpreter (CPU) or the GPU, fp32: each mask against the same call with the switch off (to a few ulps;
a tile visited or skipped wrongly is off by a whole probability) and against the float64 reference.
"""
import math

import pytest
import torch

import inductor_conv
from inductor_conv.kernels.attention import attention_bwd, attention_fwd
from inductor_conv.kernels.attn_math import MASK_ROWS as _MASK_ROWS
from inductor_conv.kernels.attn_math import MASK_TILE as _MASK_TILE
from inductor_conv.reference.attention import attention_ref
from inductor_conv.reference.attention_dropout import dropout_keep_mask

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FP32_TOL = dict(atol=2e-5, rtol=2e-5)  # tests/test_kernels_attention.py's: fp32 sums of <= 128 terms
REORDER_TOL = dict(atol=1e-6, rtol=1e-6)  # the same fp32 sums in another order (outputs and gradients are O(1))
B, HQ, HKV, S, D = 2, 4, 2, 96, 16
FLOOR = torch.finfo(torch.float32).min
MASK_TILE = int(_MASK_TILE)  # keys per tile of the rows summary, queries per tile of the cols summary
MASK_ROWS = int(_MASK_ROWS)  # query rows per entry of the rows summary (Note [mask ranges])


def _additive(allowed: torch.Tensor, fill: float) -> torch.Tensor:
    return torch.where(allowed, 0.0, fill).to(DEVICE)


def _masks():
    i, j = torch.arange(S)[:, None], torch.arange(S)[None, :]
    causal = j <= i
    doc = torch.arange(S) // 40  # documents of 40 tokens packed in a row
    pad = torch.arange(S) >= 32  # left padding: the first 32 keys of every row
    return {
        "causal_bool": causal.expand(B, 1, S, S).to(DEVICE),
        "causal_floor": _additive(causal, FLOOR).expand(B, 1, S, S),  # HF's spelling: finfo.min, not -inf
        "window": _additive(causal & (i - j < 24), -math.inf).expand(1, 1, S, S),
        "packed_documents": _additive(causal & (doc[:, None] == doc[None, :]), -math.inf).expand(B, HQ, S, S),
        "left_padding_floor_rows": _additive(causal & pad[None, :] & pad[:, None], FLOOR).expand(B, 1, S, S),
        "random": (torch.rand(B, 1, S, S, generator=torch.Generator().manual_seed(1)) > 0.3).to(DEVICE),
    }


def _inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, h, S, D, generator=g).to(DEVICE) for h in (HQ, HKV, HKV))
    return q, k, v, torch.randn(B, HQ, S, D, generator=g).to(DEVICE)


def _run(q, k, v, do, mask, p, seed, ranges, monkeypatch):
    monkeypatch.setattr(inductor_conv.config, "attention_mask_ranges", ranges)
    out, lse = attention_fwd(q, k, v, mask, p, False, None, seed)
    return (out, lse, *attention_bwd(do, q, k, v, mask, out, lse, p, False, None, seed, mask_grad=False)[:3])


def _check_ranged(q, k, v, do, mask, p, seed, monkeypatch):
    """out, lse, dq, dk, dv with ranges on against ranges off (REORDER_TOL) and out, dq, dk, dv against float64."""
    plain = _run(q, k, v, do, mask, p, seed, False, monkeypatch)
    ranged = _run(q, k, v, do, mask, p, seed, True, monkeypatch)
    for name, got, want in zip(("out", "lse", "dq", "dk", "dv"), ranged, plain):
        torch.testing.assert_close(got, want, **REORDER_TOL, msg=lambda m: f"{name}: {m}")
    b, hq, sq = q.shape[:3]
    keep = dropout_keep_mask(seed, b, hq, sq, k.shape[2], p) if p else None
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    ref = attention_ref(*leaves, attn_mask=mask.double() if mask.is_floating_point() else mask, dropout_mask=keep,
                        dropout_p=p)
    grads = torch.autograd.grad(ref, leaves, do.double())
    for got, want in zip((ranged[0], *ranged[2:]), (ref, *grads)):
        torch.testing.assert_close(got.double(), want, **FP32_TOL)


# Dropout's keep decisions follow the logical (b, h, i, j), whichever tiles a program visits, so two masks with
# skipped, partial and full tiles check its replay under ranges (the interpreter's dropout doubles a case's time);
# test_full_tiles_between_partial_ones runs the full-tile loop with dropout.
_CASES = [(name, 0.0) for name in _masks()] + [("left_padding_floor_rows", 0.25), ("random", 0.25)]


@pytest.mark.parametrize("name, p", _CASES)
def test_same_values_as_without_ranges_and_fp64(monkeypatch, name, p):
    """Causal, sliding-window, packed-document, left-padded (rows made only of floor entries: their keys get uniform
    probability, so no tile of theirs may be skipped) and random masks, GQA; two of them with dropout."""
    q, k, v, do = _inputs()
    _check_ranged(q, k, v, do, _masks()[name], p, torch.tensor([3], dtype=torch.int64, device=DEVICE), monkeypatch)


@pytest.mark.parametrize("p", [0.0, 0.25])
def test_full_tiles_between_partial_ones(monkeypatch, p):
    """Rows and key blocks whose tiles go partial, full, partial (a causal mask of 4 tiles with keys hidden from
    later rows: 0-23 from rows 24 on, 64-71 from rows 224 on): the full tiles run in their own loop (ALL_FULL), the
    partial ones on both sides of it in another (GAP), in every program kind.  The summary is checked to have such
    entries, in rows and columns."""
    from inductor_conv.kernels.attn_mask_summary import mask_summary

    s = 4 * MASK_TILE
    i, j = torch.arange(s)[:, None], torch.arange(s)[None, :]
    hidden = ((i >= 24) & (j < 24)) | ((i >= 224) & (j >= 64) & (j < 72))
    b, hq, hkv = 1, 2, 1  # one GQA pair: the interpreter's time grows with the tiles
    mask = _additive((j <= i) & ~hidden, -math.inf).expand(b, 1, s, s)
    rows, cols = (t.cpu() for t in mask_summary(mask, True))
    for summary in (rows, cols):  # lo < full_lo < full_hi < hi somewhere
        lo, f_lo, f_hi, hi = summary.unbind(-1)
        assert ((lo < f_lo) & (f_lo < f_hi) & (f_hi < hi)).any(), summary
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(b, h, s, D, generator=g).to(DEVICE) for h in (hq, hkv, hkv))
    do = torch.randn(b, hq, s, D, generator=g).to(DEVICE)
    _check_ranged(q, k, v, do, mask, p, torch.tensor([11], dtype=torch.int64, device=DEVICE), monkeypatch)


def test_skipped_tiles_are_never_read(monkeypatch):
    """The keys a left-padding mask hides from every row (a whole summary tile of MASK_TILE keys) hold NaN: without
    ranges the forward and the dQ programs multiply them by zero probabilities (NaN); with ranges they never load
    them."""
    pad = torch.arange(S) >= MASK_TILE
    mask = _additive(pad[None, :].expand(S, S), -math.inf).expand(B, 1, S, S)
    q, k, v, do = _inputs()
    k, v = k.clone(), v.clone()
    k[:, :, :MASK_TILE], v[:, :, :MASK_TILE] = float("nan"), float("nan")
    plain = _run(q, k, v, do, mask, 0.0, None, False, monkeypatch)
    assert torch.isnan(plain[0]).any()  # the poison reaches the output when the tiles are read
    out, lse, dq, _, _ = _run(q, k, v, do, mask, 0.0, None, True, monkeypatch)
    assert torch.isfinite(out).all() and torch.isfinite(lse).all() and torch.isfinite(dq).all()
    ref = attention_ref(q.double(), k[:, :, MASK_TILE:].double(), v[:, :, MASK_TILE:].double())
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)


def _first_run(flags: list[bool]) -> tuple[int, int] | None:
    """The first maximal run of True in flags, as (start, end), or None."""
    if True not in flags:
        return None
    start = flags.index(True)
    end = start
    while end < len(flags) and flags[end]:
        end += 1
    return start, end


def _summary_ref(mask4d: torch.Tensor, cols: bool):
    """kernels/attn_mask_summary.py's module docstring, entry by entry in Python."""
    from inductor_conv.kernels.attn_mask_summary import summary_slices

    T, R = MASK_TILE, MASK_ROWS
    b_s, h_s = summary_slices(mask4d)
    sq, sk = mask4d.shape[2:]
    m = mask4d[:b_s, :h_s].cpu()
    real = m if m.dtype == torch.bool else m > -2.0**24
    neutral = m if m.dtype == torch.bool else m == 0
    n_rr, n_r, n_c = -(-sq // R), -(-sq // T), -(-sk // T)  # row blocks of R, query tiles of T, key tiles of T
    rows = torch.zeros(b_s, h_s, n_rr, 4, dtype=torch.int32)
    col_sum = torch.zeros(b_s, h_s, n_c, 4, dtype=torch.int32)

    def tiles(r_, n_, size):  # (real, full) flags of each (block of `size` rows, key tile)
        n = -(-sq // size)
        real_ = [[bool(r_[i * size:(i + 1) * size, j * T:(j + 1) * T].any()) for j in range(n_c)] for i in range(n)]
        return real_, [[real_[i][j] and bool(n_[i * size:(i + 1) * size, j * T:(j + 1) * T].all())
                        for j in range(n_c)] for i in range(n)]

    for b in range(b_s):
        for h in range(h_s):
            r_, n_ = real[b, h], neutral[b, h]
            row_has_real = r_.any(1)
            tile_real, tile_full = tiles(r_, n_, R)
            for i in range(n_rr):
                if not bool(row_has_real[i * R:(i + 1) * R].all()):
                    rows[b, h, i] = torch.tensor([0, 0, -1, n_c * T])
                    continue
                used = [j for j in range(n_c) if tile_real[i][j]]
                run = _first_run(tile_full[i]) or (used[0], used[0])
                rows[b, h, i] = torch.tensor([used[0] * T, run[0] * T, run[1] * T, (used[-1] + 1) * T])
            tile_real, tile_full = tiles(r_, n_, T)
            unreal = [not bool(row_has_real[i * T:(i + 1) * T].all()) for i in range(n_r)]
            for j in range(n_c):
                needed = [i for i in range(n_r) if tile_real[i][j] or unreal[i]]
                if not needed:
                    continue
                run = _first_run([tile_full[i][j] and not unreal[i] for i in range(n_r)]) or (needed[0], needed[0])
                col_sum[b, h, j] = torch.tensor([needed[0] * T, run[0] * T, run[1] * T, (needed[-1] + 1) * T])
    return rows, (col_sum if cols else None)


_SUMMARY_MASKS = list(_masks()) + ["ragged_packed", "bias_floor", "no_keys", "no_queries"]


@pytest.mark.parametrize("name, shapes", [(n, "shipped") for n in _SUMMARY_MASKS + ["long_causal"]]
                         + [(n, "small") for n in _SUMMARY_MASKS])
def test_summary_matches_its_definition(name, shapes, monkeypatch):
    """The rows / cols summaries (kernels/attn_mask_summary.py) of each mask against a Python walk of their
    definition: ragged lengths (a partial last tile on both axes), documents whose boundaries fall inside tiles, an
    additive mask with nonzero real entries (never full), rows with no real entry, runs of full tiles longer than
    the kernels' steps, no keys or no queries.  "small" runs the summary kernels (Note [mask summary passes]) with programs of one flag
    and steps of two tiles, so each entry is made over many steps and every mask over many flag programs."""
    from inductor_conv.kernels import attn_mask_summary

    if shapes == "small":
        for attr, value in (("_FLAG_SHAPES", {1: (16, 64, 4), 2: (16, 64, 4)}), ("_ROWS_ENTRIES", 2), ("_ROWS_TILES", 2),
                            ("_COLS_ENTRIES", 2), ("_COLS_TILES", 2)):
            monkeypatch.setattr(attn_mask_summary, attr, value)
    if name == "long_causal":  # full runs across the finalising kernels' steps of 32 and 16 tiles, a ragged tail
        i, j = torch.arange(2200)[:, None], torch.arange(2200)[None, :]
        mask = ((j <= i) & (j >= 100)).expand(1, 2, 2200, 2200).to(DEVICE)
    elif name in ("no_keys", "no_queries"):  # summaries of defined values, no kernel launched
        mask = torch.ones((1, 2, 70, 0) if name == "no_keys" else (1, 2, 0, 70), dtype=torch.bool, device=DEVICE)
    elif name == "ragged_packed":
        sq, sk = 200, 333
        doc = torch.arange(sk) // 70
        allowed = (doc[:sq, None] == doc[None, :]) & (torch.arange(sk)[None, :] <= torch.arange(sq)[:, None] + 50)
        mask = allowed.expand(2, 3, sq, sk).to(DEVICE)
    elif name == "bias_floor":
        g = torch.Generator().manual_seed(2)
        bias = torch.randn(1, 2, 150, 300, generator=g)
        bias[..., :, :64] = 0.0
        bias[..., 70:140, :] = FLOOR  # rows made only of floor entries
        mask = bias.to(DEVICE).expand(3, 2, 150, 300)
    else:
        mask = _masks()[name].expand(B, HQ, S, S)
    mask_summary = attn_mask_summary.mask_summary
    rows, cols = mask_summary(mask, True)
    want_rows, want_cols = _summary_ref(mask, True)
    assert torch.equal(rows.cpu(), want_rows), (rows.cpu(), want_rows)
    assert torch.equal(cols.cpu(), want_cols), (cols.cpu(), want_cols)


@pytest.mark.parametrize("cols", [False, True])
def test_summary_op_passes_opcheck(cols):
    """The summary op (registered with torch.library.Library, ops/attention.py) against its schema and fake impl:
    torch.library.opcheck's schema, fake-tensor and AOT-dispatch checks, and its results against mask_summary's."""
    from inductor_conv.kernels.attn_mask_summary import mask_summary

    mask = _masks()["window"].expand(B, 1, S, S)
    op = torch.ops.inductor_conv.attention_mask_summary.default
    torch.library.opcheck(op, (mask, cols))
    rows, col_sum = op(mask, cols)
    want_rows, want_cols = mask_summary(mask, cols)
    assert torch.equal(rows, want_rows)
    assert torch.equal(col_sum, want_cols) if cols else col_sum.numel() == 0


@pytest.mark.parametrize("shape, stride", [((2, 3, 200, 333), (0, 0, 333, 1)),
                                           ((2, 3, 2200, 70), (3 * 2200 * 80, 2200 * 80, 80, 1)),
                                           ((1, 4, 17, 1000), (0, 17 * 1000, 1000, 1))])
@pytest.mark.parametrize("dtype", [torch.bool, torch.bfloat16])
def test_summary_launches_with_symbolic_sizes(shape, stride, dtype):
    """The lowering launches the summary's kernels from a compiled graph with the launches attn_mask_summary.launches
    gives for its sizes, sympy expressions under dynamic shapes (Note [summary kernels in the graph]): with Inductor's
    ceiling division and the sizes as symbols, every grid, argument and buffer shape, evaluated at the sizes, is the
    eager op's (ints, the launch plan it runs)."""
    import sympy

    from inductor_conv._compat import ceil_div
    from inductor_conv.kernels import attn_mask_summary as summary
    from inductor_conv.kernels.attn_common import mask_kind
    from inductor_conv.kernels.launch import cdiv

    symbols = sympy.symbols("b h sq sk", integer=True, positive=True)
    at = dict(zip(symbols, shape))
    kind = mask_kind(dtype)
    want, want_shapes = summary.launches(shape, stride, kind, cdiv)

    def value(e):
        return int(sympy.sympify(e).subs(at))

    # WIDE (Note [int64 offsets]): the lowering proves the span small with its size hints; here, at the sizes
    got, got_shapes = summary.launches(symbols, stride, kind, ceil_div, small=lambda span: value(span) < 2**31)

    for w, g in zip(want, got):
        assert (g.kernel, g.constexprs, g.num_warps) == (w.kernel, w.constexprs, w.num_warps)
        assert tuple(map(value, g.grid)) == w.grid
        assert {name: value(e) for name, e in g.scalars.items()} == w.scalars
    assert [tuple(map(value, s)) for s in got_shapes] == list(want_shapes)
    # and the ints are what the eager op launches (its plan: grids, arguments, shapes)
    programs = (summary._FLAG_SHAPES[kind], (summary._ROWS_ENTRIES, summary._ROWS_TILES),
                (summary._COLS_ENTRIES, summary._COLS_TILES))
    plan = summary._plan(shape, stride, dtype, programs)
    assert (plan.row_shape, plan.col_shape, plan.flag_shape) == want_shapes
    for spec, w in zip((plan.flags, plan.rows, plan.cols), want):
        assert spec[0] == w.grid and spec[2] == tuple(w.scalars.values()) and spec[3] == w.constexprs


@pytest.mark.parametrize("shape, stride, dtype", [
    ((2, 3, 200, 333), (0, 0, 333, 1), torch.bool),  # one mask broadcast over batch and heads
    ((2, 3, 150, 150), (3 * 150 * 152, 150 * 152, 152, 1), torch.float16),  # rows padded to 152 keys
    ((2, 3, 130, 97), (97, 0, 0, 1), torch.bool)])  # a padding mask: one row per batch, broadcast over queries
def test_autotune_example_mask_is_causal_in_its_layout(shape, stride, dtype):
    """Note [autotuning masked templates]: the mask max-autotune times the masked templates on is causal, aligned
    bottom-right, in the mask's own dtype and layout (only its own elements written: a padded row's tail keeps the
    buffer's values), and attends every key where it broadcasts over queries; its summary then skips tiles, where
    Inductor's own example (zeros for bool) or random floats give summaries with nothing to visit or nothing to skip."""
    from inductor_conv.lowerings.attention import example_mask

    size = torch._prims_common.compute_required_storage_length(shape, stride, 0)
    base = torch.full((size,), 7.0 if dtype.is_floating_point else False, dtype=dtype, device=DEVICE)
    mask = example_mask(base, shape, stride, 0)
    assert (mask.shape, mask.stride(), mask.data_ptr()) == (shape, stride, base.data_ptr())
    sq, sk = shape[-2:]
    keep = torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq) if stride[-2] else torch.ones(sq, sk, dtype=torch.bool)
    want = keep if dtype == torch.bool else torch.zeros(sq, sk, dtype=dtype).masked_fill(~keep, float("-inf"))
    assert torch.equal(mask.cpu(), want.expand(shape))
    if stride[-2] > sk:  # the padding between rows is not the mask's: untouched
        assert (base.cpu().view(-1)[sk:stride[-2]] == 7.0).all()
    rows, _ = torch.ops.inductor_conv.attention_mask_summary(mask, False)
    if stride[-2]:  # causal: the first block of rows needs the first key tiles only, the last every one
        assert rows[0, 0, 0, 3] < sk and rows[0, 0, -1, 3] >= sk
    else:  # every key of every row: all tiles visited, all full (the last, partial key tile aside)
        assert (rows[..., 0] == 0).all() and (rows[..., 3] >= sk).all() and (rows[..., 2] > 0).all()
