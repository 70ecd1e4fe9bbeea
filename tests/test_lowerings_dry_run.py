"""The lowerings' GPU branches, run on CPU up to the template choice.

The template path of each lowering (sizes, guards, tiles, constexprs, extra buffers, the fallback choice) only runs
for CUDA inputs, and CI has no GPU: a NameError there (a constexpr computed from a variable the function does not
have) or a call to an Inductor method one torch version lacks (2.13 renamed SizeVarAllocator.size_hint) would reach
users first. Here the CUDA gate is lifted, each template's maybe_append_choice records its keyword arguments instead
of rendering (Triton templates cannot run on CPU), and the lowering goes on to its fallback choice, so the compiled
graph still runs and is compared with the eager op.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers import rows_apart, saved_lowerings

import inductor_conv
from inductor_conv._compat import compiled_graph_caches_disabled, inductor_config, ir
from inductor_conv.lowerings import attention as attn_lowering
from inductor_conv.lowerings import causal_conv1d_silu as conv_lowering

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU stand-in for the GPU branch")


@pytest.fixture
def dry_run(monkeypatch):
    """Both lowerings installed with the CUDA gates lifted; returns {template name: [kwargs of each choice]}."""
    calls: dict[str, list[dict]] = {}
    for module in (attn_lowering, conv_lowering):
        monkeypatch.setattr(module, "_use_template", lambda *nodes: True)
        for template in (module.FWD_TEMPLATE, module.BWD_TEMPLATE):
            def record(choices, *, _name=template.name, **kwargs):
                calls.setdefault(_name, []).append(kwargs)
            monkeypatch.setattr(template, "maybe_append_choice", record)
    monkeypatch.setattr(conv_lowering, "num_sms", lambda index: 132)
    with saved_lowerings(attn_lowering.OPS + conv_lowering.OPS), compiled_graph_caches_disabled():
        attn_lowering.register()
        conv_lowering.register()
        torch._dynamo.reset()
        yield calls
        torch._dynamo.reset()


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _fwd_bwd(fn, inputs, dynamic):
    """fn compiled and eager, forward + backward: (compiled outputs, eager outputs), each [out, *grads]."""
    results = []
    for run in (torch.compile(fn, fullgraph=True, dynamic=dynamic), fn):
        leaves = [t.detach().clone().requires_grad_() for t in inputs]
        out = run(*leaves)
        g = _randn(*out.shape, seed=99)
        results.append([out, *torch.autograd.grad(out, leaves, g.to(out.dtype))])
    return results


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("causal,mask", [(True, None), (False, "bias")])
def test_attention_lowerings_reach_their_templates(dry_run, dynamic, causal, mask):
    """GQA 4/2, Sk = 40 != Sq = 24 (not causal) or 24 (causal), a learned bias whose gradient the backward template
    would write (STORE_DS): both lowerings pass the constexprs the templates need and run the fallback choice."""
    B, Hq, Hkv, D = 2, 4, 2, 16
    Sq, Sk = (24, 24) if causal else (24, 40)
    q, k, v = _randn(B, Hq, Sq, D, seed=1), _randn(B, Hkv, Sk, D, seed=2), _randn(B, Hkv, Sk, D, seed=3)
    inputs = [q, k, v] + ([_randn(1, Hq, Sq, Sk, seed=4)] if mask else [])

    def fn(q, k, v, *bias):
        return inductor_conv.attention(q, k, v, attn_mask=bias[0] if bias else None, is_causal=causal,
                                       enable_gqa=True)

    got, want = _fwd_bwd(fn, inputs, dynamic)
    for name, g, w in zip(["out", "dq", "dk", "dv", "dbias"], got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=name)  # the same eager op, fp32 reorderings
    (fwd,), (bwd,) = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    for kwargs in (fwd, bwd):
        assert kwargs["IS_CAUSAL"] == causal and kwargs["HEAD_DIM"] == D and kwargs["MASK_KIND"] == (2 if mask else 0)
        assert kwargs["BLOCK_M"] >= 16 and kwargs["BLOCK_N"] >= 16
    # the forward's launch groups by size; the backward, masked tiles first, not (lowerings/attention.py)
    assert (fwd["CAUSAL_GROUP"], bwd["CAUSAL_GROUP"], bwd["MASKED_FIRST"]) == (8, 0, True)
    assert fwd["CAUSAL_PAIR"] is False  # fp32 keeps its one tile, one row block a program
    assert bwd["KV_FIRST"] is True and "KV_FIRST" not in fwd  # every dK/dV program launches before any dQ one
    assert bwd["STORE_DS"] == bool(mask) and bwd["mutated_inputs"]
    # int32 products inside the slices, also under dynamic shapes: the hints fit, and a guard keeps them so (Note
    # [int64 offsets] in kernels/attn_common.py)
    assert fwd["WIDE"] is False and bwd["WIDE"] is False
    # pointer tiles: Note [row offsets] is for summarised masks only (the bias's gradient turns the summary off)
    assert bwd["ROW_OFFSETS"] is False and bwd["MASK_RANGES"] is False


@pytest.mark.parametrize("forced", [None, False])
def test_summarised_masks_take_row_offsets(dry_run, monkeypatch, forced):
    """Note [row offsets]: a mask input without a gradient over more than SHORT_MASK_LENGTH tokens is summarised,
    and the backward template then streams its Q / dO tiles from integer offsets, unless
    config.attention_row_offsets turns them off."""
    monkeypatch.setattr(inductor_conv.config, "attention_row_offsets", forced)
    B, H, S, D = 1, 2, 80, 16
    q, k, v = (_randn(B, H, S, D, seed=i) for i in range(3))
    allowed = torch.ones(S, S, dtype=torch.bool).tril()
    mask = torch.zeros(S, S).masked_fill(~allowed, float("-inf")).expand(B, 1, S, S)

    def fn(q, k, v):
        return inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=0.0)

    got, want = _fwd_bwd(fn, [q, k, v], dynamic=False)
    for name, g, w in zip(["out", "dq", "dk", "dv"], got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=name)
    (bwd,) = dry_run["inductor_conv_attention_bwd"]
    assert bwd["MASK_RANGES"] is True and bwd["IS_CAUSAL"] is False
    assert bwd["ROW_OFFSETS"] is (forced is None)


def test_slices_of_2_to_the_31_elements_take_wide_templates(dry_run):
    """Note [int64 offsets]: a q whose 20 rows lie 2^31 / 19 elements apart (a view of one 4 GiB storage, only its
    rows written) spans 2^31 elements in its slice: both templates get WIDE (smaller slices do not:
    test_attention_lowerings_reach_their_templates)."""
    S, D = 20, 16
    views = rows_apart(S, D, 1, torch.bfloat16, "cpu")
    if views is None:
        pytest.skip("no room for a 4 GiB (untouched) allocation")
    q = views[0]
    k, v = (_randn(1, 1, 40, D, seed=i).bfloat16() for i in (2, 3))
    q.requires_grad_()

    def fn(q, k, v):
        return inductor_conv.attention(q, k, v)

    out = torch.compile(fn, fullgraph=True)(q, k, v)
    torch.autograd.grad(out, q, torch.ones_like(out))
    (fwd,), (bwd,) = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    assert fwd["WIDE"] is True and bwd["WIDE"] is True


def _buffer(node):
    """The buffer under an IR view."""
    while not isinstance(node, ir.Buffer):
        node = node.data
    return node


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("ranges,saved", [(True, True), (True, False), (False, False)])
def test_mask_summaries_reach_both_templates(dry_run, monkeypatch, request, dynamic, ranges, saved):
    """Note [mask ranges]: with a mask that needs no gradient (HF's (B, 1, S, S) bool mask), both lowerings pass
    MASK_RANGES and the mask's summaries as the templates' ROWS (and COLS) inputs, [B, Hq, cdiv(S, 16), 4] and
    [B, Hq, cdiv(S, 64), 4] int32 views (made by the summary op as a fallback kernel, also under dynamic shapes);
    with the switch off, one-element placeholders.  saved: the joint pass's device gate lifted (Note [summaries
    saved for the backward] in patterns/attention_summary.py), so the forward makes rows and cols in one summary
    call and the backward makes none; else each pass makes its own.  The fallback choice runs and matches the
    eager op."""
    from inductor_conv.patterns import attention_summary

    monkeypatch.setattr(inductor_conv.config, "attention_mask_ranges", ranges)
    if saved:  # the joint pass on, its device gate lifted
        monkeypatch.setattr(attention_summary, "_DEVICES", ("cuda", "cpu"))
        was_enabled = inductor_conv.is_enabled()
        inductor_conv.enable()
        if not was_enabled:
            request.addfinalizer(inductor_conv.disable)
    B, Hq, Hkv, S, D = 2, 4, 2, 70, 16
    q, k, v = _randn(B, Hq, S, D, seed=1), _randn(B, Hkv, S, D, seed=2), _randn(B, Hkv, S, D, seed=3)
    mask = (torch.arange(S)[None, :] <= torch.arange(S)[:, None]).expand(B, 1, S, S)

    def fn(q, k, v, mask):
        return inductor_conv.attention(q, k, v, attn_mask=mask, enable_gqa=True)

    results = []
    for run in (torch.compile(fn, fullgraph=True, dynamic=dynamic), fn):
        leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
        out = run(*leaves, mask)
        results.append([out, *torch.autograd.grad(out, leaves, _randn(*out.shape, seed=99))])
    for name, g, w in zip(["out", "dq", "dk", "dv"], *results):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, msg=name)
    (fwd,), (bwd,) = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    summaries = [fwd["input_nodes"][-1], *bwd["input_nodes"][-2:]]  # ROWS; ROWS, COLS
    if ranges:  # where the backward's summaries come from: a graph input (saved by the forward) or its own call
        sources = [_buffer(node) for node in summaries[1:]]
        assert all(isinstance(b, ir.InputBuffer) == saved for b in sources), sources
    entries = [-(-S // 16), -(-S // 16), -(-S // 64)]  # MASK_ROWS query rows / MASK_TILE keys an entry
    for kwargs in (fwd, bwd):
        assert kwargs["MASK_RANGES"] == ranges and kwargs["MASK_KIND"] == 1
    for node, n_entries in zip(summaries, entries):
        assert node.get_dtype() == torch.int32
        size = [str(n) for n in node.get_size()]
        if not ranges:
            assert size == ["1"], size
        elif dynamic:  # B, Hq and the entries follow the symbolic sizes
            assert len(size) == 4 and size[3] == "4", size
        else:
            assert size == [str(n) for n in (B, Hq, n_entries, 4)], size


def test_softcap_reaches_both_templates(dry_run, monkeypatch):
    """Soft-capping (Note [soft-capping]): both lowerings pass SOFTCAP (2: the fast tanh of 16-bit inputs) with
    QK_SCALE2 = cap * log2(e) and SOFTCAP_SCALE = scale / cap, bf16 without a mask or dropout, a form the cuDNN gate
    would otherwise take (it is made to admit every form here; it must still refuse this one), and the fallback
    choice runs the eager op."""
    import math

    monkeypatch.setattr(attn_lowering, "_aligned", lambda t: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    q, k, v = (_randn(1, 4, 32, 64, seed=i).bfloat16() for i in range(3))
    got, want = _fwd_bwd(lambda q, k, v: inductor_conv.softcapped_attention(q, k, v, 3.0, is_causal=True),
                         [q, k, v], False)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)  # the same eager op; bf16 outputs
    (fwd,), (bwd,) = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    for kwargs in (fwd, bwd):
        assert kwargs["SOFTCAP"] == 2  # tanh.approx for bf16 (config.attention_fast_tanh)
        assert kwargs["QK_SCALE2"] == 3.0 * math.log2(math.e) and kwargs["SOFTCAP_SCALE"] == 0.125 / 3.0
        assert kwargs["SCALE"] == 0.125


def test_attention_max_autotune_offers_every_tile(dry_run):
    """Under max-autotune each tile is offered (and the fallback choice added and chosen here); bf16, as fp32 keeps
    its one small tile."""
    q, k, v = (_randn(1, 2, 32, 16, seed=i).bfloat16() for i in range(3))
    with inductor_config.patch(max_autotune=True):
        got, want = _fwd_bwd(lambda q, k, v: inductor_conv.attention(q, k, v, dropout_p=0.0), [q, k, v], False)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)  # the same eager op; bf16 outputs
    assert len(dry_run["inductor_conv_attention_fwd"]) > 1 and len(dry_run["inductor_conv_attention_bwd"]) > 1


@pytest.mark.parametrize("forced,dynamic", [(None, False), (False, False), (None, True), (True, True)])
def test_causal_forward_pairs_come_with_the_tile(dry_run, monkeypatch, forced, dynamic):
    """bf16 head dim <= 64, causal: the forward tile is (128, 64) rows x keys, two row blocks a program, with a
    static or dynamic query length (of more than 128 rows: Note [short sequences]); config.attention_causal_pair
    overrides it (benchmarks)."""
    monkeypatch.setattr(inductor_conv.config, "attention_causal_pair", forced)
    q, k, v = (_randn(1, 2, 160, 16, seed=i).bfloat16() for i in range(3))
    _fwd_bwd(lambda q, k, v: inductor_conv.attention(q, k, v, is_causal=True), [q, k, v], dynamic)
    (fwd,) = dry_run["inductor_conv_attention_fwd"]
    want = (128, 64, forced is not False)
    assert (fwd["BLOCK_M"], fwd["BLOCK_N"], fwd["CAUSAL_PAIR"]) == want


@pytest.mark.parametrize("p", [0.0, 0.1])
@pytest.mark.parametrize("ranges", [True, False])
def test_summarised_mask_takes_its_tiles(dry_run, monkeypatch, ranges, p):
    """bf16 head dim 128, a mask tensor: with mask ranges the forward template takes the masked tables' tile
    ((64, 64) on 4 warps, its mask loop on two stages: Note [mask loop stages]) with or without dropout, and with
    dropout the backward the masked-dropout table's ((64, 64) on 4 warps, the dropout table's too); without ranges
    the plain and dropout tables' tiles, the mask loop on the kernel's stages (160 rows: no shorter than the tiles,
    Note [short sequences])."""
    monkeypatch.setattr(inductor_conv.config, "attention_mask_ranges", ranges)
    S = 160
    q, k, v = (_randn(1, 2, S, 128, seed=i).bfloat16().requires_grad_() for i in range(3))
    mask = (torch.arange(S)[None, :] <= torch.arange(S)[:, None]).expand(1, 1, S, S)
    fn = torch.compile(lambda q, k, v, m: inductor_conv.attention(q, k, v, attn_mask=m, dropout_p=p), fullgraph=True)
    torch.autograd.grad(fn(q, k, v, mask).float().sum(), (q, k, v))
    (fwd,), (bwd,) = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    got = ((fwd["BLOCK_M"], fwd["BLOCK_N"], fwd["num_warps"], fwd["MASK_STAGES"]),
           (bwd["BLOCK_M"], bwd["BLOCK_N"], bwd["num_warps"]))
    plain_fwd = (64, 64, 4, 0) if p else (128, 64, 8, 0)
    plain_bwd = (64, 64, 4) if p else (64, 128, 8)
    assert got == (((64, 64, 4, 2), plain_bwd) if ranges else (plain_fwd, plain_bwd)), got


@pytest.mark.parametrize("p", [0.0, 0.1])
def test_head_dim_256_over_a_summarised_mask_splits_dk_dv(dry_run, p):
    """Gemma 2's form (bf16 head dim 256, soft-capped, a causal mask tensor) and the same call with is_causal: the
    backward template takes CUDA_BWD_MASKED's or CUDA_BWD_CAUSAL's tile, dK and dV in programs of their own on 4
    warps stepping over 16 queries (Note [split dK/dV]), with or without dropout; over the mask, its loops that read
    mask tiles run on two stages (Note [mask loop stages])."""
    S = 160
    q, k, v = (_randn(1, 2, S, 256, seed=i).bfloat16().requires_grad_() for i in range(3))
    mask = (torch.arange(S)[None, :] <= torch.arange(S)[:, None]).expand(1, 1, S, S)
    for causal in (False, True):
        dry_run.clear()
        torch._dynamo.reset()
        fn = torch.compile(lambda q, k, v, m: inductor_conv.softcapped_attention(
            q, k, v, 50.0, attn_mask=None if causal else m, dropout_p=p, is_causal=causal), fullgraph=True)
        torch.autograd.grad(fn(q, k, v, mask).float().sum(), (q, k, v))
        (bwd,) = dry_run["inductor_conv_attention_bwd"]
        got = (bwd["MASK_RANGES"], (bwd["BLOCK_M"], bwd["BLOCK_N"], bwd["num_warps"], bwd["num_stages"]),
               bwd["SPLIT_KV"], bwd["MASK_STAGES"])
        want = (not causal, (16, 64, 4, 3), True, 0 if causal else 2)
        assert got == want, (causal, got)
    # the eager launcher (runtime lengths) keeps the one-program tile its own sweep chose, causal or not
    from inductor_conv.heuristics.attention import AttnBwdTile, attn_bwd_tile
    assert {attn_bwd_tile(torch.bfloat16, 256, "cuda", eager=True, causal=c, dropout=p > 0) for c in (False, True)} == {
        AttnBwdTile(64, 64, 8, 2)}


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("channel_last", [False, True])
def test_conv_lowerings_reach_their_templates(dry_run, dynamic, channel_last):
    """Both layouts (column tiles, row tiles), bias, SiLU: the constexprs of both templates and the fallback."""
    B, C, L, K = 2, 8, 21, 4
    x = _randn(B, L, C, seed=1).transpose(1, 2) if channel_last else _randn(B, C, L, seed=1)
    w, b = _randn(C, K, seed=2), _randn(C, seed=3)

    def fn(x, w, b):
        return inductor_conv.causal_conv1d(x, w, b, activation="silu")

    got, want = _fwd_bwd(fn, [x, w, b], dynamic)
    for name, g, ref in zip(["y", "dx", "dw", "db"], got, want):
        torch.testing.assert_close(g, ref, rtol=1e-5, atol=1e-5, msg=name)
    (fwd,), (bwd,) = dry_run["inductor_conv_causal_conv1d_fwd"], dry_run["inductor_conv_causal_conv1d_bwd"]
    for kwargs in (fwd, bwd):
        assert kwargs["ROWS"] == channel_last and kwargs["K"] == K and kwargs["SILU"] and kwargs["HAS_BIAS"]
        assert kwargs["N_CHUNKS"] >= 1 and kwargs["BT"] == kwargs["N"] * kwargs["V"]
    assert bwd["mutated_inputs"]
    # DY_T iff x is channel-last and dy's positions are contiguous (AOTAutograd's tangent is laid out like y, x's
    # layout, for static shapes, and contiguous under dynamic=True)
    dy_stride = bwd["input_nodes"][3].get_stride()
    assert bwd["DY_T"] == (channel_last and dy_stride[2] == 1), (channel_last, dy_stride)


@pytest.mark.parametrize("dynamic", [False, True])
def test_conv_eager_layout_output_takes_the_tall_row_tiles(dry_run, dynamic):
    """contiguous_out with a channel-last x (Note [conv output layout]): the forward template gets the tall row
    tile of inductor_conv/heuristics/conv.py ("blc_t") and a contiguous output; the backward reads the contiguous dy as
    it is (DY_T, its "blc_t" tile of one channel a thread), without a copy into x's layout."""
    from inductor_conv.heuristics.conv import conv_tile

    B, C, L, K = 2, 8, 21, 4
    x, w, b = _randn(B, L, C, seed=1).transpose(1, 2), _randn(C, K, seed=2), _randn(C, seed=3)

    def fn(x, w, b):
        return torch.ops.inductor_conv.causal_conv1d_fwd(x, w, b, None, None, "silu", contiguous_out=True)

    got, want = _fwd_bwd(fn, [x, w, b], dynamic)
    assert got[0].is_contiguous() and want[0].is_contiguous()
    for name, g, ref in zip(["y", "dx", "dw", "db"], got, want):
        torch.testing.assert_close(g, ref, rtol=1e-5, atol=1e-5, msg=name)
    (fwd,), (bwd,) = dry_run["inductor_conv_causal_conv1d_fwd"], dry_run["inductor_conv_causal_conv1d_bwd"]
    tall, rows = conv_tile("fwd", "blc_t", x.dtype, K), conv_tile("bwd", "blc_t", x.dtype, K)
    assert fwd["ROWS"] and (fwd["BC"], fwd["V"]) == (tall.block_c, tall.block_t)
    assert bwd["ROWS"] and (bwd["BC"], bwd["V"]) == (rows.block_c, rows.block_t)
    assert bwd["DY_T"]
    dy = bwd["input_nodes"][3]
    assert dy.get_name().startswith("tangents"), dy.get_name()  # the graph's input, not a copy


def test_conv_pattern_reaches_the_templates(dry_run):
    """The pattern pass and the lowerings together: a hand-written short conv compiled with the plugin on CPU."""
    x, w, b = _randn(2, 8, 19, seed=1), _randn(8, 1, 3, seed=2), _randn(8, seed=3)

    def block(x, w, b):
        return F.silu(F.conv1d(F.pad(x, (2, 0)), w, b, groups=8))

    with inductor_conv.enabled(("cpu",)):
        got, want = _fwd_bwd(block, [x, w, b], False)
    for g, ref in zip(got, want):
        torch.testing.assert_close(g, ref, rtol=1e-5, atol=1e-5)
    assert dry_run["inductor_conv_causal_conv1d_fwd"] and dry_run["inductor_conv_causal_conv1d_bwd"]


@pytest.mark.parametrize("seq_q,dropout_p", [(16, 0.0), (17, 0.0), (1, 0.1)])
def test_decode_shapes_skip_the_template(dry_run, seq_q, dropout_p):
    """Note [flash-decoding] in kernels/attention_decode.py: an inference forward of at most 16 queries without dropout
    (GQA 4/2 against 40 cached keys, a float mask) runs the eager op, whose launcher splits the keys, not the
    template; 17 queries or dropout keep the template."""
    B, Hq, Hkv, Sk, D = 1, 4, 2, 40, 16
    q, k, v = _randn(B, Hq, seq_q, D, seed=1), _randn(B, Hkv, Sk, D, seed=2), _randn(B, Hkv, Sk, D, seed=3)
    mask = _randn(B, 1, seq_q, Sk, seed=4)

    def fn(q, k, v, mask):
        return inductor_conv.attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, enable_gqa=True)

    with torch.no_grad():
        got = torch.compile(fn, fullgraph=True)(q, k, v, mask)
        if not dropout_p:  # the same eager op, fp32 reorderings
            torch.testing.assert_close(got, fn(q, k, v, mask), rtol=1e-5, atol=1e-5)
    decode = seq_q <= 16 and not dropout_p
    assert ("inductor_conv_attention_fwd" in dry_run) == (not decode)


@pytest.mark.parametrize("dynamic", [False, True])
def test_short_sequences_shrink_the_tiles(dry_run, dynamic):
    """Note [short sequences]: Swin's windows (49 tokens, head dim 32, bf16, an additive bias) get a 64-row forward
    block where the table has 128 (the same one-block grid, half the rows), and blocks of at most 64 in the backward,
    and the mask is not summarised (SHORT_MASK_LENGTH: one tile, nothing to skip); symbolic lengths keep the table's
    tiles and the summaries.  The fallback choice still runs and matches the eager op."""
    from inductor_conv.heuristics.attention import attn_bwd_tile, attn_fwd_tile

    B, H, S, D = 8, 3, 49, 32
    q, k, v = (_randn(B, H, S, D, seed=i).bfloat16() for i in range(3))
    bias = _randn(B, H, S, S, seed=4).bfloat16()
    got, want = _fwd_bwd(lambda q, k, v: inductor_conv.attention(q, k, v, attn_mask=bias), [q, k, v], dynamic)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)  # the same eager op; bf16 outputs
    (fwd,), (bwd,) = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    table_fwd = attn_fwd_tile(torch.bfloat16, D, "cuda", masked=True)
    table_bwd = attn_bwd_tile(torch.bfloat16, D, "cuda", masked=True)
    assert table_fwd.block_m == 128  # what the shrinking is for
    if dynamic:
        assert (fwd["BLOCK_M"], fwd["BLOCK_N"]) == (table_fwd.block_m, table_fwd.block_n)
        assert (bwd["BLOCK_M"], bwd["BLOCK_N"]) == (table_bwd.block_m, table_bwd.block_n)
    else:
        assert (fwd["BLOCK_M"], fwd["BLOCK_N"]) == (64, min(64, table_fwd.block_n))
        assert bwd["BLOCK_M"] <= 64 and bwd["BLOCK_N"] <= 64 and bwd["BLOCK_N"] % bwd["BLOCK_M"] == 0
    assert fwd["num_warps"] == table_fwd.num_warps and fwd["EVEN"] is False
    assert fwd["MASK_RANGES"] is bwd["MASK_RANGES"] is dynamic


def test_fit_tiles_keep_the_blocks_valid():
    """fit_fwd_tile / fit_bwd_tile: powers of two >= MIN_SHORT_BLOCK, never larger than the table's, the forward's
    BLOCK_M % BLOCK_N and the backward's BLOCK_N % BLOCK_M kept, unknown (symbolic) lengths untouched."""
    from inductor_conv.heuristics.attention import MIN_SHORT_BLOCK, AttnBwdTile, AttnFwdTile, fit_bwd_tile, fit_fwd_tile

    fwd, bwd = AttnFwdTile(128, 64, 4, 3), AttnBwdTile(64, 128, 8, 3)
    assert fit_fwd_tile(fwd, None, None) == fwd and fit_bwd_tile(bwd, 49, None) == bwd
    assert fit_fwd_tile(fwd, 4096, 4096) == fwd and fit_bwd_tile(bwd, 4096, 4096) == bwd
    assert fit_fwd_tile(fwd, 49, 49) == AttnFwdTile(64, 64, 4, 3)
    assert fit_fwd_tile(fwd, 49, 4096) == AttnFwdTile(64, 64, 4, 3)
    assert fit_fwd_tile(fwd, 4096, 20) == AttnFwdTile(128, 32, 4, 3)
    assert fit_fwd_tile(fwd, 1, 1) == AttnFwdTile(MIN_SHORT_BLOCK, MIN_SHORT_BLOCK, 4, 3)
    assert fit_bwd_tile(bwd, 49, 49) == AttnBwdTile(64, 64, 8, 3)
    assert fit_bwd_tile(bwd, 16, 100) == AttnBwdTile(64, 128, 8, 3)
    assert fit_bwd_tile(AttnBwdTile(32, 64, 4, 2), 20, 20) == AttnBwdTile(32, 32, 4, 2)


def _strides(node) -> list[str]:
    return [str(s) for s in node.get_stride()]


@pytest.mark.parametrize("dynamic", [False, True])
def test_unaligned_mask_rows_are_padded(dry_run, dynamic):
    """Note [mask row alignment]: masks over 37 keys, rows 2 bytes (bf16) or 1 byte (bool) apart, reach both
    templates with rows padded to 16 bytes (40 bf16 elements, 48 bools): a bias the graph computes from two inputs
    (laid out padded by its own kernel) and a bool mask passed in broadcast over heads (copied once: the head dim
    keeps its zero stride).  Symbolic sizes keep the mask as it is.  The fallback choice still runs and matches."""
    B, H, S, D = 2, 3, 37, 16
    q, k, v = (_randn(B, H, S, D, seed=i).bfloat16() for i in range(3))
    pos, win = _randn(H, S, S, seed=4).bfloat16(), _randn(B, 1, S, S, seed=5).bfloat16()
    keep = _randn(B, 1, S, S, seed=6) > -1.0

    def fn(q, k, v, pos, win, keep):
        a = inductor_conv.attention(q, k, v, attn_mask=pos + win)
        return a + inductor_conv.attention(q, k, v, attn_mask=keep.expand(B, H, S, S))

    got, want = _fwd_bwd(lambda q, k, v: fn(q, k, v, pos, win, keep), [q, k, v], dynamic)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)  # the same eager op; bf16 outputs
    fwd, bwd = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    masks = [kwargs["input_nodes"][3] for kwargs in fwd + bwd]
    assert len(masks) == 4
    for node in masks:
        bias = node.get_dtype() == torch.bfloat16
        if dynamic:
            assert _strides(node)[-1] == "1" and _strides(node)[-2] not in ("40", "48"), _strides(node)
        elif bias:  # the add's own buffer, not a copy of it
            assert _strides(node) == [str(H * S * 40), str(S * 40), "40", "1"], _strides(node)
            assert isinstance(node.data, ir.ComputedBuffer), node
        else:
            assert _strides(node) == [str(S * 48), "0", "48", "1"], _strides(node)


@pytest.mark.parametrize("dynamic", [False, True])
def test_one_summary_per_mask_in_a_graph(dry_run, monkeypatch, dynamic):
    """Note [one summary per mask]: two attentions over one bool mask in one graph (a whole model compiled over HF's
    mask) read one padded copy of it (70 keys: rows padded to 80 bytes; static sizes) and one summary, in the forward
    graph and in the backward's; a third attention over another mask gets its own. Results match the eager op."""
    monkeypatch.setattr(inductor_conv.config, "attention_mask_ranges", True)
    B, H, S, D = 1, 2, 70, 16
    q, k, v = (_randn(B, H, S, D, seed=i) for i in range(3))
    keep = (torch.arange(S)[None, :] <= torch.arange(S)[:, None]).expand(B, 1, S, S).contiguous()
    other = _randn(B, 1, S, S, seed=7) > -1.0

    def fn(q, k, v):
        a = inductor_conv.attention(q, k, v, attn_mask=keep)
        b = inductor_conv.attention(a, k, v, attn_mask=keep)
        return inductor_conv.attention(b, k, v, attn_mask=other)

    got, want = _fwd_bwd(fn, [q, k, v], dynamic)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    fwd, bwd = dry_run["inductor_conv_attention_fwd"], dry_run["inductor_conv_attention_bwd"]
    assert len(fwd) == len(bwd) == 3
    for calls, summaries in ((fwd, lambda kw: kw["input_nodes"][-1:]), (bwd, lambda kw: kw["input_nodes"][-2:])):
        masks = [kw["input_nodes"][3].get_name() for kw in calls]
        rows = [[node.get_name() for node in summaries(kw)] for kw in calls]
        # the backward runs the layers in reverse: the third call of the forward is the first of the backward
        same, apart = (calls[0], calls[1]) if calls is fwd else (calls[1], calls[2])
        assert masks.count(masks[calls.index(same)]) == 2 and len(set(masks)) == 2, masks
        assert rows[calls.index(same)] == rows[calls.index(apart)] and len({r[0] for r in rows}) == 2, rows
        if not dynamic:
            assert _strides(calls[0]["input_nodes"][3]) == [str(S * 80), "0", "80", "1"]


def test_trained_bias_gradient_in_its_dtype(dry_run):
    """A trained bf16 bias (Parakeet's, DeBERTa's): the backward template writes dS into a buffer of the bias's dtype
    (its store rounds the fp32 dS, as a convert after it would), with no fp32 buffer between. The fallback choice
    runs and the bias's gradient matches the eager op's."""
    B, H, S, D = 2, 3, 40, 16
    q, k, v = (_randn(B, H, S, D, seed=i).bfloat16() for i in range(3))
    bias = _randn(B, H, S, S, seed=4).bfloat16()

    def fn(q, k, v, bias):
        return inductor_conv.attention(q, k, v, attn_mask=bias)

    got, want = _fwd_bwd(fn, [q, k, v, bias], dynamic=False)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-2, atol=2e-2)
    (bwd,) = dry_run["inductor_conv_attention_bwd"]
    assert bwd["STORE_DS"] and bwd["input_nodes"][11].get_dtype() == torch.bfloat16
