"""The causal conv's decode step: the op ``inductor_conv.causal_conv1d_update`` and its pattern pass.

* The op against the float64 reference (reference/conv.py ``causal_conv1d_update_ref``), with the cases of Dao's
  ``test_causal_conv1d_update*`` (tests/test_causal_conv1d.py of Dao-AILab/causal-conv1d): channel-last x and
  state, S from K - 1 to past K + T, T 1..5 (beyond S too), linear and circular state, continuous batching through
  conv_state_indices with padding slots (y 0, cache row untouched), weight fp32 beside bf16 / fp16 x.  The new
  state must equal the reference's exactly (it only moves values); y is compared within the rounding of x's dtype.
* The decode spellings (patterns/causal_conv1d_update.py) compiled on CPU with our pass: rewritten an exact number
  of times, golden graphs, eager's y and eager's cache afterwards, and the cache written in place by the generated
  code (Note [decode state write-back]); spellings the op does not compute are left alone.
* transformers' Mamba: compiled ``generate()`` produces eager's tokens with each layer's conv step rewritten.
"""
from __future__ import annotations

import importlib.util
import warnings

import expecttest
import pytest
import torch
import torch.nn.functional as F
from helpers import compile_and_run, no_cpu_codegen, ops_in

import inductor_conv
import inductor_conv.kernels.causal_conv1d_update  # noqa: F401  (decorated in interpreter mode: tests/conftest.py)
from inductor_conv._compat import dynamo_counters, fx_graph_cache_disabled
from inductor_conv.ops.causal_conv1d_update import _torch_update
from inductor_conv.patterns.causal_conv1d_update import COUNTER
from inductor_conv.reference.conv import causal_conv1d_ref, causal_conv1d_update_ref

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
# y against float64: fp32 sums K + 1 terms of O(1) (~1e-6); bf16 / fp16 round the result once (2^-8 / 2^-11
# relative) and may round the other way than the float64 value: one unit of the last place, plus a little.
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.bfloat16: dict(atol=1e-2, rtol=8e-3),
       torch.float16: dict(atol=2e-3, rtol=1e-3), torch.float64: dict(atol=1e-12, rtol=1e-12)}
# (K, S, T, circular, conv_state_indices): S = K - 1 (Dao, vLLM) and S = K (transformers, mamba_ssm), S past K + T,
# T beyond S (linear: the state is all new tokens; circular: a later token overwrites an earlier one).
CASES = [(4, 3, 1, False, False), (4, 4, 1, False, True), (2, 1, 5, False, True), (3, 9, 4, True, False),
         (4, 3, 5, True, True), (7, 8, 2, False, False)]


def _case(K, S, T, circular, indexed, dtype=torch.float32, device="cpu", B=3, C=40, seed=0):
    """Inputs as Dao's tests make them: channel-last x and state, fp32 weight and bias, a cache of 7 rows with
    conv_state_indices (one of them -1, a padding slot), random cache_seqlens."""
    g = torch.Generator().manual_seed(seed)
    B_cache = 7 if indexed else B
    args = dict(
        x=torch.randn(B, T, C, generator=g).to(dtype).transpose(1, 2),
        conv_state=torch.randn(B_cache, S, C, generator=g).to(dtype).transpose(1, 2),
        weight=torch.randn(C, K, generator=g), bias=torch.randn(C, generator=g), activation="silu",
        cache_seqlens=torch.randint(0, 50, (B,), generator=g, dtype=torch.int32) if circular else None,
        conv_state_indices=torch.tensor([5, -1, 2], dtype=torch.int32) if indexed else None,
    )
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in args.items()}


def _check_against_reference(run, args):
    """run(args with a cloned state) -> y; y and the new state against the reference."""
    want_y, want_state = causal_conv1d_update_ref(**args)
    state = args["conv_state"].clone()
    got_y = run({**args, "conv_state": state})
    torch.testing.assert_close(got_y, want_y, **TOL[args["x"].dtype])
    assert torch.equal(state, want_state)
    if args["conv_state_indices"] is not None:
        padded = args["conv_state_indices"] < 0
        assert padded.any() and (got_y[padded] == 0).all()


# ---------------------------------------------------------------------------------------------------------------
# The op
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("K, S, T, circular, indexed", CASES)
def test_matches_reference(K, S, T, circular, indexed, dtype, device):
    _check_against_reference(lambda a: inductor_conv.causal_conv1d_update(**a),
                             _case(K, S, T, circular, indexed, dtype, device))


@pytest.mark.parametrize("K, S, T, circular, indexed", CASES)
def test_torch_fallback_matches_reference(K, S, T, circular, indexed):
    """The torch path (float64 here; CPU without the interpreter runs the same function) computes the same."""
    args = _case(K, S, T, circular, indexed)
    _check_against_reference(lambda a: _torch_update(**a), args)
    args64 = {k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in args.items()}
    _check_against_reference(lambda a: inductor_conv.causal_conv1d_update(**a), args64)


def test_one_token_and_contiguous_layouts():
    """x [B, C] (one token) returns [B, C]; contiguous x and state, weight [C, 1, K], no bias, no activation."""
    args = _case(4, 4, 1, False, False)
    args.update(x=args["x"][..., 0].contiguous(), conv_state=args["conv_state"].contiguous(), bias=None,
                activation=None)
    want_y, want_state = causal_conv1d_update_ref(**args)
    state = args["conv_state"].clone()
    y = inductor_conv.causal_conv1d_update(args["x"], state, args["weight"][:, None, :])
    assert y.shape == args["x"].shape
    torch.testing.assert_close(y, want_y, **TOL[torch.float32])
    assert torch.equal(state, want_state)


def test_custom_op_contract_and_paths_agree():
    """opcheck (schema with the mutation declared, fake impl, AOT dispatch) on a circular, indexed call; the custom
    op and the public function's eager path (Note [eager fast path]) give the same bits."""
    args = _case(4, 3, 5, True, True)
    op_args = [args[k] for k in ("x", "conv_state", "weight", "bias", "activation", "cache_seqlens",
                                 "conv_state_indices")]
    torch.library.opcheck(torch.ops.inductor_conv.causal_conv1d_update.default, op_args)
    state_op, state_fn = args["conv_state"].clone(), args["conv_state"].clone()
    y_op = torch.ops.inductor_conv.causal_conv1d_update(op_args[0], state_op, *op_args[2:])
    y_fn = inductor_conv.causal_conv1d_update(**{**args, "conv_state": state_fn})
    assert torch.equal(y_op, y_fn) and torch.equal(state_op, state_fn)


@pytest.mark.gpu
def test_gpu_repeated_call_takes_fast_launch():
    """A configuration's second call launches the kernel Triton compiled for its first one (FastLaunch, Note [eager
    launch path] in kernels/launch.py) and computes the same bits."""
    from inductor_conv.kernels import causal_conv1d_update as kernels

    args = _case(4, 3, 2, True, True, torch.bfloat16, "cuda")
    kernels._UPDATE.signatures.clear()
    runs = []
    for _ in range(2):
        state = args["conv_state"].clone()
        runs.append((inductor_conv.causal_conv1d_update(**{**args, "conv_state": state}), state))
    assert len(kernels._UPDATE.signatures) == 1
    assert torch.equal(runs[0][0], runs[1][0]) and torch.equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("change, error, words", [
    (dict(x=torch.randn(3, 40, 1, 1)), ValueError, "x must have shape"),
    (dict(conv_state=torch.randn(3, 40, 2)), ValueError, "at least K - 1 = 3 columns"),
    (dict(conv_state=torch.randn(3, 40, 3, dtype=torch.float64)), TypeError, "conv_state must have x's dtype"),
    (dict(conv_state=torch.randn(4, 40, 3)), ValueError, "conv_state must have x's batch size"),
    (dict(weight=torch.randn(40, 1)), ValueError, "K must be >= 2"),
    (dict(bias=torch.randn(39)), ValueError, "bias must have shape (40,)"),
    (dict(activation="gelu"), ValueError, "activation must be"),
    (dict(cache_seqlens=torch.zeros(3, dtype=torch.int64)), TypeError, "cache_seqlens must be int32"),
    (dict(conv_state_indices=torch.zeros(2, dtype=torch.int32)), ValueError, "conv_state_indices must have shape"),
])
def test_bad_arguments_name_the_argument(change, error, words):
    args = {**_case(4, 3, 1, False, False), **change}
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        inductor_conv.causal_conv1d_update(**args)


def test_inference_only():
    args = _case(4, 3, 1, False, False)
    args["weight"].requires_grad_(True)
    with pytest.raises(RuntimeError, match="inference only"):
        inductor_conv.causal_conv1d_update(**args)
    with torch.no_grad():
        inductor_conv.causal_conv1d_update(**args)


@pytest.mark.parametrize("path", ["triton", "torch"])
@pytest.mark.parametrize("circular", [False, True])
def test_index_past_the_cache_is_a_padding_slot(path, circular, monkeypatch):
    """An index >= B_cache is skipped like the pad slot -1 on both paths (y 0, no cache row read or written): the
    cache is a slice of a NaN-poisoned buffer with rows on both sides, so a read past it gives NaN in y and a write
    past it changes the buffer.  Without the bound the kernel wrote the buffer's row after the cache and the torch
    fallback raised IndexError."""
    if path == "torch":
        monkeypatch.setenv("TRITON_INTERPRET", "0")  # the op reads it at call time: its torch fallback
    args = _case(4, 5, 2, circular, True, seed=3)
    B_cache, S, C = args["conv_state"].shape[0], 5, 40
    buffer = torch.full((B_cache + 4, S, C), float("nan"))
    state = buffer.transpose(1, 2)[1:1 + B_cache]  # channel-last, as Dao's tests lay the cache out
    state.copy_(args["conv_state"])
    indices = torch.tensor([B_cache, 2, B_cache + 1], dtype=torch.int32)  # 7, a row, 8
    # the contract: as the pad slot -1 (the reference reads such an index so too)
    want_y, want_state = causal_conv1d_update_ref(**{**args, "conv_state": state.clone(),
                                                     "conv_state_indices": torch.where(indices < B_cache, indices, -1)})
    ref_y, ref_state = causal_conv1d_update_ref(**{**args, "conv_state": state.clone(), "conv_state_indices": indices})
    assert torch.equal(ref_y, want_y) and torch.equal(ref_state, want_state)
    args["conv_state_indices"] = indices
    y = inductor_conv.causal_conv1d_update(**{**args, "conv_state": state})
    assert torch.equal(y[[0, 2]], torch.zeros_like(y[[0, 2]]))
    torch.testing.assert_close(y, want_y, **TOL[torch.float32])
    assert torch.equal(state, want_state)
    outside = torch.ones(B_cache + 4, dtype=torch.bool)
    outside[1:1 + B_cache] = False
    assert buffer[outside].isnan().all()  # still the poison: nothing written there


# ---------------------------------------------------------------------------------------------------------------
# causal_conv1d_varlen_states
# ---------------------------------------------------------------------------------------------------------------
def _varlen_states_loop(x, cu_seqlens, state_len):
    """Dao's ``causal_conv1d_varlen_states_ref`` written token by token (his slice assignment fails for an empty
    sequence): column state_len - n + j of sequence i holds its token n - j from the end, zeros before."""
    states = torch.zeros(len(cu_seqlens) - 1, x.shape[1], state_len, dtype=x.dtype)
    for i in range(len(cu_seqlens) - 1):
        start, end = int(cu_seqlens[i]), int(cu_seqlens[i + 1])
        n = min(end - start, state_len)
        for j in range(n):
            states[i, :, state_len - n + j] = x[end - n + j]
    return states


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("state_len", [0, 3, 20])
def test_varlen_states_match_dao_reference(dtype, state_len):
    """Sequences longer and shorter than state_len, one of length 1 and one empty, int64 cu_seqlens as Dao's test
    makes them (cumsum): the values are moved, never computed, so they must be equal; the layout is Dao's
    [batch, state_len, C].transpose(1, 2)."""
    g = torch.Generator().manual_seed(state_len)
    seqlens = torch.tensor([25, 1, 0, 7, 3, 40])
    x = torch.randn(int(seqlens.sum()), 48, generator=g).to(dtype)
    cu_seqlens = F.pad(seqlens.cumsum(0), (1, 0))
    states = inductor_conv.causal_conv1d_varlen_states(x, cu_seqlens, state_len)
    assert states.shape == (6, 48, state_len) and states.dtype == dtype
    assert states.stride() == torch.empty(6, state_len, 48).transpose(1, 2).stride()
    assert torch.equal(states, _varlen_states_loop(x, cu_seqlens, state_len))
    if state_len == 20:  # a short sequence's zero fill, and int32 cu_seqlens give the same
        assert states[1, :, :19].eq(0).all() and torch.equal(states[1, :, 19], x[25])
        assert torch.equal(inductor_conv.causal_conv1d_varlen_states(x, cu_seqlens.int(), state_len), states)


def test_varlen_states_continue_the_sequences():
    """The state a packed prefill leaves is what the decode step continues from: each sequence's next output from
    causal_conv1d_update on that state equals the packed causal_conv1d over the sequence with the token appended."""
    g = torch.Generator().manual_seed(5)
    K, C, lengths = 4, 8, [5, 2, 9]
    w, b = torch.randn(C, K, generator=g), torch.randn(C, generator=g)
    x = torch.randn(sum(lengths), C, generator=g)
    nxt = torch.randn(len(lengths), C, generator=g)
    cu_seqlens = F.pad(torch.tensor(lengths).cumsum(0), (1, 0))
    state = inductor_conv.causal_conv1d_varlen_states(x, cu_seqlens, K - 1)
    y = inductor_conv.causal_conv1d_update(nxt, state, w, b, activation="silu")
    for i, seq in enumerate(x.split(lengths)):
        whole = torch.cat([seq, nxt[i:i + 1]]).T[None].double()
        want = causal_conv1d_ref(whole, w.double(), b.double(), activation="silu")[0, :, -1]
        torch.testing.assert_close(y[i].double(), want, **TOL[torch.float32])


@pytest.mark.parametrize("args, error, words", [
    ((torch.randn(4, 2, 3), torch.tensor([0, 4]), 2), ValueError, "x must have shape"),
    ((torch.randn(4, 3), torch.tensor([[0, 4]]), 2), ValueError, "cu_seqlens must have shape"),
    ((torch.randn(4, 3), torch.tensor([0.0, 4.0]), 2), TypeError, "cu_seqlens must be int32 or int64"),
    ((torch.randn(4, 3), torch.tensor([0, 4]), -1), ValueError, "state_len must be an int >= 0"),
    ((torch.randn(4, 3), torch.tensor([0, 4]), 2.0), ValueError, "state_len must be an int >= 0"),
])
def test_varlen_states_bad_arguments_name_the_argument(args, error, words):
    with pytest.raises(error, match=words):
        inductor_conv.causal_conv1d_varlen_states(*args)


# ---------------------------------------------------------------------------------------------------------------
# The decode spellings under torch.compile
# ---------------------------------------------------------------------------------------------------------------
def hf_step(x, conv_state, weight, bias):
    """transformers 5.24 Mamba / Mamba-2's decode step: their torch fallback of causal_conv1d_update (``__wrapped__``:
    the decorated name calls Dao's kernel where the causal_conv1d package is installed)."""
    from transformers.models.mamba.modeling_mamba import causal_conv1d_update

    return causal_conv1d_update.__wrapped__(x, conv_state, weight, bias, activation="silu")


def mamba_ssm_step(x, conv_state, weight, bias):
    """mamba_ssm's Mamba.step without the causal_conv1d package (mamba_ssm/modules/mamba_simple.py): state [B, C, K]."""
    conv_state.copy_(torch.roll(conv_state, shifts=-1, dims=-1))
    conv_state[:, :, -1] = x
    x = torch.sum(conv_state * weight, dim=-1)
    x = x + bias
    return F.silu(x)


def dao_ref_step(x, conv_state, weight, bias):
    """Dao's causal_conv1d_update_ref, linear state, the conv module's [C, 1, K] weight, no bias, no activation."""
    line = torch.cat([conv_state, x], dim=-1)
    conv_state.copy_(line[:, :, -conv_state.shape[-1]:])
    return F.conv1d(line, weight, None, padding=0, groups=x.shape[1])[:, :, -x.shape[-1]:]


def roll_by_two(x, conv_state, weight, bias):  # not one step: the state moves two columns
    conv_state.copy_(torch.roll(conv_state, shifts=-2, dims=-1))
    conv_state[:, :, -1] = x
    return F.silu(torch.sum(conv_state * weight, dim=-1) + bias)


def first_outputs(x, conv_state, weight, bias):  # keeps the conv's first T outputs: not the step's
    line = torch.cat([conv_state, x], dim=-1)
    conv_state.copy_(line[:, :, -conv_state.shape[-1]:])
    return F.silu(F.conv1d(line, weight.unsqueeze(1), bias, groups=x.shape[1])[:, :, : x.shape[-1]])


# spelling -> (x shape [B, C(, T)], state length S, weight shape, has bias); K = 4, C = 6
SPELLINGS = {
    "hf": (hf_step, (2, 6, 1), 4, (6, 4), True),
    "mamba_ssm": (mamba_ssm_step, (2, 6), 4, (6, 4), True),
    "dao_ref_3_tokens": (dao_ref_step, (2, 6, 3), 5, (6, 1, 4), False),
    "roll_by_two": (roll_by_two, (2, 6), 4, (6, 4), True),
    "first_outputs": (first_outputs, (2, 6, 2), 4, (6, 4), True),
}


def run_step(name, dtype=torch.float32, dynamic=False):
    """Compile spelling ``name`` with our pass (no grad) and compare y with float64 eager and the cache with eager's
    (exactly); return (rewrite count, recorded graphs)."""
    fn, x_shape, S, w_shape, has_bias = SPELLINGS[name]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(*x_shape, generator=g).to(dtype)
    state = torch.randn(x_shape[0], x_shape[1], S, generator=g).to(dtype)
    w, b = torch.randn(*w_shape, generator=g).to(dtype), torch.randn(w_shape[0], generator=g).to(dtype)
    want_state = state.double()
    want_y = fn(x.double(), want_state, w.double(), b.double())
    got_state = state.clone()
    with torch.no_grad():
        y, _, graphs = compile_and_run(fn, x, got_state, w, b, dynamic=dynamic)
    torch.testing.assert_close(y, want_y.to(dtype), **TOL[dtype])
    assert torch.equal(got_state, want_state.to(dtype))
    return dynamo_counters["inductor_conv"][COUNTER], graphs


def rewritten_graph(name, dtype=torch.float32, dynamic=False) -> str:
    """The graph our pass hands on for spelling ``name``, which must have been rewritten once (run_step checks the
    values)."""
    count, graphs = run_step(name, dtype, dynamic)
    assert count == 1
    assert ops_in(graphs[-1]) == ["causal_conv1d_update"]
    return graphs[-1]


@pytest.mark.parametrize("name, dtype, dynamic", [  # fp32 static shapes: TestGoldenGraphs
    ("hf", torch.bfloat16, False), ("hf", torch.float32, True), ("mamba_ssm", torch.float16, False),
])
def test_spelling_is_rewritten(name, dtype, dynamic):
    """Half precision (SiLU computes in fp32 between casts), and dynamic=True: B, C and S symbolic, the state's
    slice start a symbolic -S."""
    rewritten_graph(name, dtype, dynamic)


@pytest.mark.parametrize("name", ["roll_by_two", "first_outputs"])
def test_other_spellings_are_left_alone(name):
    count, graphs = run_step(name)
    assert count == 0 and "inductor_conv" not in graphs[-1]


def test_cache_is_written_in_place():
    """Note [decode state write-back]: the generated code calls the op on the cache itself -- no clone of the
    state, no copy back -- and returns y."""
    from torch._inductor.utils import run_and_get_code

    x, state, w, b = torch.randn(2, 6, 1), torch.randn(2, 6, 4), torch.randn(6, 4), torch.randn(6)
    torch._dynamo.reset()
    with torch.no_grad(), fx_graph_cache_disabled(), inductor_conv.enabled(("cpu",)):
        _, (code,) = run_and_get_code(torch.compile(hf_step, fullgraph=True), x, state, w, b)
    body = code[code.index("def call"):]
    assert "causal_conv1d_update.default(arg0_1, arg1_1, arg2_1, arg3_1, 'silu', None, None)" in body
    assert "clone" not in body and "copy_" not in body


class TestGoldenGraphs(expecttest.TestCase):
    """Each spelling at fp32, static shapes: the graph after our pass (regenerate with EXPECTTEST_ACCEPT=1 and review
    the diff)."""

    def test_hf(self):
        self.assertExpectedInline(rewritten_graph("hf"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 6, 1]", arg1_1: "f32[2, 6, 4]", arg2_1: "f32[6, 4]", arg3_1: "f32[6]"):
        auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops.inductor_conv.causal_conv1d_update.default, x = arg0_1, conv_state = arg1_1, weight = arg2_1, bias = arg3_1, activation = 'silu', cache_seqlens = None, conv_state_indices = None);  arg0_1 = arg2_1 = arg3_1 = None
        getitem: "f32[2, 6, 1]" = auto_functionalized[0]
        getitem_1: "f32[2, 6, 4]" = auto_functionalized[1];  auto_functionalized = None
        copy: "f32[2, 6, 4]" = torch.ops.aten.copy.default(arg1_1, getitem_1);  getitem_1 = None
        copy_: "f32[2, 6, 4]" = torch.ops.aten.copy_.default(arg1_1, copy);  arg1_1 = copy = copy_ = None
        return (getitem,)
""")

    def test_mamba_ssm(self):
        self.assertExpectedInline(rewritten_graph("mamba_ssm"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 6, 4]", arg1_1: "f32[2, 6]", arg2_1: "f32[6, 4]", arg3_1: "f32[6]"):
        unsqueeze_default: "f32[2, 6, 1]" = torch.ops.aten.unsqueeze.default(arg1_1, -1);  arg1_1 = None
        auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops.inductor_conv.causal_conv1d_update.default, x = unsqueeze_default, conv_state = arg0_1, weight = arg2_1, bias = arg3_1, activation = 'silu', cache_seqlens = None, conv_state_indices = None);  unsqueeze_default = arg2_1 = arg3_1 = None
        getitem: "f32[2, 6, 1]" = auto_functionalized[0]
        getitem_1: "f32[2, 6, 4]" = auto_functionalized[1];  auto_functionalized = None
        squeeze_dim: "f32[2, 6]" = torch.ops.aten.squeeze.dim(getitem, -1);  getitem = None
        copy_: "f32[2, 6, 4]" = torch.ops.aten.copy_.default(arg0_1, getitem_1);  arg0_1 = getitem_1 = copy_ = None
        return (squeeze_dim,)
""")

    def test_dao_ref_3_tokens(self):
        self.assertExpectedInline(rewritten_graph("dao_ref_3_tokens"), """\
class Graph:
    def forward(self, arg0_1: "f32[2, 6, 5]", arg1_1: "f32[2, 6, 3]", arg2_1: "f32[6, 1, 4]"):
        squeeze_dim: "f32[6, 4]" = torch.ops.aten.squeeze.dim(arg2_1, 1);  arg2_1 = None
        auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops.inductor_conv.causal_conv1d_update.default, x = arg1_1, conv_state = arg0_1, weight = squeeze_dim, bias = None, activation = 'none', cache_seqlens = None, conv_state_indices = None);  arg1_1 = squeeze_dim = None
        getitem: "f32[2, 6, 3]" = auto_functionalized[0]
        getitem_1: "f32[2, 6, 5]" = auto_functionalized[1];  auto_functionalized = None
        copy: "f32[2, 6, 5]" = torch.ops.aten.copy.default(arg0_1, getitem_1);  getitem_1 = None
        copy_: "f32[2, 6, 5]" = torch.ops.aten.copy_.default(arg0_1, copy);  arg0_1 = copy = copy_ = None
        return (getitem,)
""")


# ---------------------------------------------------------------------------------------------------------------
# transformers' Mamba: compiled generate()
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model_type", ["mamba", pytest.param("mamba2", marks=pytest.mark.gpu)])
def test_hf_generate(model_type, device):
    """Greedy generate() with the model's forward compiled gives eager's tokens; every layer's decode step is
    rewritten (the prefill's conv is the causal_conv1d capability's).  Mamba-2 runs on the GPU only (CPU time)."""
    transformers = pytest.importorskip("transformers")
    if importlib.util.find_spec("causal_conv1d") or importlib.util.find_spec("mamba_ssm"):
        pytest.skip("transformers runs the causal_conv1d / mamba_ssm kernels, not its torch spelling")
    extra = dict(num_heads=4, head_dim=16, n_groups=1, chunk_size=8, state_size=8) if model_type == "mamba2" else {}
    config = transformers.AutoConfig.for_model(model_type, vocab_size=64, hidden_size=32, expand=2, conv_kernel=4,
                                               num_hidden_layers=2, **({"state_size": 4} | extra))
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config).eval().to(device)
    ids = torch.randint(0, 64, (2, 5), generator=torch.Generator().manual_seed(1)).to(device)
    eager_forward = model.forward
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=4, do_sample=False)
        torch._dynamo.reset()
        inductor_conv.reset_counters()
        with fx_graph_cache_disabled(), no_cpu_codegen(device), inductor_conv.enabled((device,)):
            model.forward = torch.compile(eager_forward)
            got = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert torch.equal(got, want)
    assert dynamo_counters["inductor_conv"][COUNTER] == 2
