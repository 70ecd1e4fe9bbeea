"""The public ``inductor_conv.causal_conv1d``: contract, errors, autograd wiring, torch.compile without breaks.

Kernel numerics in depth live in test_kernels_causal_conv1d.py; here the op is checked end to end against the
float64 reference (``inductor_conv.reference.conv``), on the Triton path (the interpreter on CPU) and, where a test
says so, on the torch fallback (the interpreter switched off at call time). The float64 gradchecks exercise the op's
autograd wiring through its torch fallback (float64 never runs the Triton kernels); the kernels' gradients are
compared with float64 autograd of the reference in test_kernels_causal_conv1d.py.
"""
import pytest
import torch
import torch.nn.functional as F
from helpers import compiled_fullgraph

import inductor_conv
from inductor_conv.reference.conv import causal_conv1d_ref

# fp32 kernels vs a float64 reference: a handful of fp32 roundings per output of O(1) size.
FP32_TOL = dict(rtol=1e-4, atol=1e-5)


def _inputs(B=2, C=5, L=9, K=4, dtype=torch.float32, channel_last=False, requires_grad=False):
    if channel_last:
        x = torch.randn(B, L, C, dtype=dtype).transpose(1, 2)
    else:
        x = torch.randn(B, C, L, dtype=dtype)
    w = torch.randn(C, K, dtype=dtype)
    b = torch.randn(C, dtype=dtype)
    return [t.requires_grad_(requires_grad) for t in (x, w, b)]


def test_worked_example_from_the_derivation():
    """x=[1,2,3,4], w=[2,3,5], β=1, g=[1,2,3,4], no activation (seeds/000, chapter 3)."""
    for dtype in (torch.float32, torch.float64):
        x = torch.tensor([[[1.0, 2, 3, 4]]], dtype=dtype, requires_grad=True)
        w = torch.tensor([[2.0, 3, 5]], dtype=dtype, requires_grad=True)
        b = torch.tensor([1.0], dtype=dtype, requires_grad=True)
        g = torch.tensor([[[1.0, 2, 3, 4]]], dtype=dtype)
        y = inductor_conv.causal_conv1d(x, w, b)
        loss = (y * g).sum()
        loss.backward()
        assert loss.item() == 242
        assert x.grad.flatten().tolist() == [17, 27, 27, 20]
        assert w.grad.flatten().tolist() == [11, 20, 30]
        assert b.grad.tolist() == [10]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_silu_derivative_uses_z(dtype):
    """z = 0 gives SiLU'(0) = 1/2 (not 1: dout is not δ); z = 2 gives SiLU'(2) = 1.0908 (not SiLU'(y) = 1.0736)."""
    x = torch.tensor([[[1.0, -1.0, 3.0]]], dtype=dtype, requires_grad=True)
    w = torch.tensor([[1.0, 1.0]], dtype=dtype)
    b = torch.tensor([-2.0], dtype=dtype, requires_grad=True)
    # z = [x0 + b, x0 + x1 + b, x1 + x2 + b] = [-1, -2, 0]; shift to get 0 and 2:
    b.data.fill_(0.0)  # z = [1, 0, 2]
    y = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    y.sum().backward()
    sig2 = torch.sigmoid(torch.tensor(2.0, dtype=torch.float64))
    silu_grad_2 = (sig2 * (1 + 2 * (1 - sig2))).item()
    sig1 = torch.sigmoid(torch.tensor(1.0, dtype=torch.float64))
    silu_grad_1 = (sig1 * (1 + (1 - sig1))).item()
    # dβ = Σ_t SiLU'(z_t) with g = 1.
    assert b.grad.item() == pytest.approx(silu_grad_1 + 0.5 + silu_grad_2, rel=1e-5)
    # dx[t] = w[1]·δ[t] + w[0]·δ[t + 1] = δ[t] + δ[t + 1] (δ = 0 past the end): the last one is SiLU'(2) alone.
    assert x.grad.flatten().tolist() == pytest.approx([silu_grad_1 + 0.5, 0.5 + silu_grad_2, silu_grad_2], rel=1e-5)
    assert x.grad[0, 0, -1].item() == pytest.approx(1.0908, abs=1e-4)


@pytest.mark.parametrize("activation", [None, "silu", "swish"])
@pytest.mark.parametrize("channel_last", [False, True])
@pytest.mark.parametrize("K", [1, 3, 4])
def test_matches_reference_with_grads(activation, channel_last, K):
    x, w, b = _inputs(K=K, channel_last=channel_last, requires_grad=True)
    y = inductor_conv.causal_conv1d(x, w, b, activation=activation)
    assert y.stride() == x.stride()  # output keeps x's layout (channel-last stays channel-last)
    g = torch.randn_like(y)
    y.backward(g)
    x64, w64, b64 = (t.detach().double().requires_grad_(True) for t in (x, w, b))
    y64 = causal_conv1d_ref(x64, w64, b64, activation={"swish": "silu"}.get(activation, activation))
    y64.backward(g.double())
    torch.testing.assert_close(y.double(), y64, **FP32_TOL)
    for ours, ref in ((x.grad, x64.grad), (w.grad, w64.grad), (b.grad, b64.grad)):
        torch.testing.assert_close(ours.double(), ref, **FP32_TOL)


@pytest.mark.parametrize("path", ["triton", "torch"])
def test_contiguous_out_is_eager_layout_in_x_dtype(path, monkeypatch):
    """The op's contiguous_out (what the pattern rewrite asks for where y leaves a graph, Note [conv output layout]):
    the same values in x's dtype, laid out contiguous, from the Triton kernel and from the torch path (whose float64
    arithmetic once leaked into the output's dtype), and the fake impl agrees."""
    if path == "torch":
        monkeypatch.setenv("TRITON_INTERPRET", "0")
    x, w, b = _inputs(channel_last=True, requires_grad=True)
    op = torch.ops.inductor_conv.causal_conv1d_fwd
    y = op(x, w, b, None, None, "silu", contiguous_out=True)
    y_x = op(x, w, b, None, None, "silu")
    assert y.dtype == x.dtype and y.is_contiguous() and y_x.stride() == x.stride()
    torch.testing.assert_close(y, y_x, rtol=0, atol=0)
    g = torch.randn_like(y)
    torch.testing.assert_close(torch.autograd.grad(y, (x, w, b), g), torch.autograd.grad(y_x, (x, w, b), g),
                               rtol=0, atol=0)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = op(*(mode.from_tensor(t) for t in (x, w, b)), None, None, "silu", contiguous_out=True)
    assert fake.stride() == y.stride() and fake.dtype == y.dtype


# x (B, C, L) with strides that are neither contiguous nor the channel-last view, views passed to the op as they are
# (the Triton kernels take any strides): positions 2 apart and batch innermost take the kernels' row tiles (x.stride(2)
# != 1), padded channels the column tiles with a channel stride other than L.
_ODD_STRIDES = {
    "l_stride_2": lambda B, C, L: torch.randn(B, C, 2 * L)[..., ::2],
    "batch_innermost": lambda B, C, L: torch.randn(C, L, B).permute(2, 0, 1),
    "padded_channels": lambda B, C, L: torch.randn(B, C + 3, L)[:, :C],
}


@pytest.mark.parametrize("kind", list(_ODD_STRIDES))
def test_any_strides_match_reference_with_grads(kind):
    """fp32 (the Triton kernels, through the interpreter on CPU) against the float64 reference, SiLU and bias."""
    torch.manual_seed(7)
    B, C, L, K = 2, 5, 9, 4
    x = _ODD_STRIDES[kind](B, C, L).requires_grad_(True)
    assert x.shape == (B, C, L) and not x.is_contiguous()
    assert x.stride() != torch.empty(B, L, C).transpose(1, 2).stride()  # not the channel-last view either
    w = torch.randn(C, K, requires_grad=True)
    b = torch.randn(C, requires_grad=True)
    y = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    g = torch.randn_like(y)
    grads = torch.autograd.grad(y, (x, w, b), g)
    leaves = [t.detach().double().requires_grad_(True) for t in (x, w, b)]
    y64 = causal_conv1d_ref(*leaves, activation="silu")
    # The same small shapes and sums as test_matches_reference_with_grads, so its fp32 tolerance.
    torch.testing.assert_close(y.double(), y64, **FP32_TOL)
    for ours, ref in zip(grads, torch.autograd.grad(y64, leaves, g.double())):
        torch.testing.assert_close(ours.double(), ref, **FP32_TOL)


def test_weight_3d_and_no_bias_and_short_sequences():
    for L in (1, 2):  # L < K
        x, w, _ = _inputs(L=L, K=4)
        y = inductor_conv.causal_conv1d(x, w.unsqueeze(1), None, activation="silu")
        torch.testing.assert_close(y.double(), causal_conv1d_ref(x.double(), w.double(), activation="silu"), **FP32_TOL)


def test_final_states_and_initial_states_continue_a_sequence():
    """Running two halves with carried state equals running the whole sequence."""
    x, w, b = _inputs(L=10, K=4)
    whole = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    y1, state = inductor_conv.causal_conv1d(x[..., :6], w, b, activation="silu", return_final_states=True)
    y2, state2 = inductor_conv.causal_conv1d(
        x[..., 6:], w, b, activation="silu", initial_states=state, return_final_states=True
    )
    torch.testing.assert_close(torch.cat([y1, y2], -1), whole, **FP32_TOL)
    torch.testing.assert_close(state2, x[..., -3:])
    # L < K - 1: the final state still holds K - 1 entries, the older ones from initial_states.
    _, short_state = inductor_conv.causal_conv1d(x[..., :1], w, b, initial_states=state, return_final_states=True)
    torch.testing.assert_close(short_state, torch.cat([state[..., 1:], x[..., :1]], -1))


@pytest.mark.parametrize("activation", [None, "silu", "swish"])
@pytest.mark.parametrize("channel_last", [False, True])
def test_gradcheck_float64_all_inputs(activation, channel_last):
    torch.manual_seed(0)
    B, C, L, K = 2, 3, 7, 3
    x, w, b = _inputs(B, C, L, K, dtype=torch.float64, channel_last=channel_last, requires_grad=True)
    assert x.stride(1 if channel_last else 2) == 1  # the layout under test, passed to the op as it is
    init = torch.randn(B, C, K - 1, dtype=torch.float64, requires_grad=True)
    seq_idx = torch.tensor([[0, 0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 1, 1, 1]], dtype=torch.int32)
    assert torch.autograd.gradcheck(
        lambda x, w, b, i: inductor_conv.causal_conv1d(x, w, b, activation=activation, initial_states=i),
        (x, w, b, init),
    )
    assert torch.autograd.gradcheck(
        lambda x, w, b: inductor_conv.causal_conv1d(x, w, b, activation=activation, seq_idx=seq_idx), (x, w, b)
    )


def test_seq_idx_taps_never_cross_a_boundary():
    """Each packed sequence equals the op run on that sequence alone."""
    x, w, b = _inputs(B=1, L=11, K=4)
    lengths = [4, 2, 5]
    seq_idx = torch.repeat_interleave(torch.arange(3, dtype=torch.int32), torch.tensor(lengths))[None]
    packed = inductor_conv.causal_conv1d(x, w, b, activation="silu", seq_idx=seq_idx)
    pieces = [inductor_conv.causal_conv1d(p, w, b, activation="silu") for p in x.split(lengths, dim=-1)]
    torch.testing.assert_close(packed, torch.cat(pieces, -1), **FP32_TOL)


# Packed sequences with padding: ids counting up then -1 to the end of each row (Dao's
# test_causal_conv1d_varlen_padding), and a run of another negative id between two sequences of the first row (any
# negative id is padding).  Sequences [0, 3), [5, 9) of row 0 and [0, 5), [5, 7) of row 1.
PADDED_SEQ_IDX = torch.tensor([[0, 0, 0, -3, -3, 1, 1, 1, 1, -1, -1, -1],
                               [2, 2, 2, 2, 2, 3, 3, -1, -1, -1, -1, -1]], dtype=torch.int32)
PADDED_SEQUENCES = [(0, 0, 3), (0, 5, 9), (1, 0, 5), (1, 5, 7)]  # (row, start, end)


def _use_path(path, monkeypatch):
    """"triton": the kernels (through the interpreter on CPU); "torch": the op's torch fallback, which the op takes
    at call time when the interpreter is off."""
    if path == "torch":
        monkeypatch.setenv("TRITON_INTERPRET", "0")


@pytest.mark.parametrize("path", ["triton", "torch"])
@pytest.mark.parametrize("activation", [None, "silu"])
@pytest.mark.parametrize("channel_last", [False, True])
def test_padding_in_packed_sequences(path, activation, channel_last, monkeypatch):
    """A negative id is padding (Note [padding in packed sequences]): y is 0 there, each sequence equals the float64
    reference run on it alone, and the gradients are the float64 reference's (autograd of that y), whatever dy holds
    at padding: dy there reaches nothing, and dx is 0 at padding positions."""
    _use_path(path, monkeypatch)
    torch.manual_seed(11)
    seq_idx = PADDED_SEQ_IDX
    B, L = seq_idx.shape
    x, w, b = _inputs(B=B, C=5, L=L, K=4, channel_last=channel_last, requires_grad=True)
    y = inductor_conv.causal_conv1d(x, w, b, seq_idx=seq_idx, activation=activation)
    pad = (seq_idx < 0)[:, None, :].expand_as(y)
    assert y[pad].eq(0).all() and y[~pad].ne(0).all()
    for row, start, end in PADDED_SEQUENCES:
        alone = causal_conv1d_ref(x[row:row + 1, :, start:end].double(), w.double(), b.double(), activation=activation)
        torch.testing.assert_close(y[row:row + 1, :, start:end].double(), alone, **FP32_TOL)
    g = torch.randn_like(y)  # non-zero at padding too
    grads = torch.autograd.grad(y, (x, w, b), g, retain_graph=True)
    assert grads[0][pad].eq(0).all()
    for ours, masked in zip(grads, torch.autograd.grad(y, (x, w, b), g.masked_fill(pad, 0))):
        torch.testing.assert_close(ours, masked, rtol=0, atol=0)  # the same arithmetic: dy at padding adds nothing
    leaves = [t.detach().double().requires_grad_(True) for t in (x, w, b)]
    y64 = causal_conv1d_ref(*leaves, seq_idx=seq_idx, activation=activation)
    torch.testing.assert_close(y.double(), y64, **FP32_TOL)
    for ours, ref in zip(grads, torch.autograd.grad(y64, leaves, g.double())):
        torch.testing.assert_close(ours.double(), ref, **FP32_TOL)


@pytest.mark.parametrize("activation", [None, "silu"])
@pytest.mark.parametrize("channel_last", [False, True])
def test_gradcheck_float64_with_padding(activation, channel_last):
    """Finite differences of the forward we compute, padding included: the op's gradient (float64 takes the torch
    fallback) and the float64 reference's, against which the kernels' gradients are compared, are its derivative."""
    torch.manual_seed(12)
    seq_idx = PADDED_SEQ_IDX
    x, w, b = _inputs(2, 3, seq_idx.shape[1], 3, dtype=torch.float64, channel_last=channel_last, requires_grad=True)
    y = inductor_conv.causal_conv1d(x, w, b, seq_idx=seq_idx, activation=activation)
    assert y[(seq_idx < 0)[:, None, :].expand_as(y)].eq(0).all()
    assert torch.autograd.gradcheck(
        lambda x, w, b: inductor_conv.causal_conv1d(x, w, b, seq_idx=seq_idx, activation=activation), (x, w, b))
    assert torch.autograd.gradcheck(
        lambda x, w, b: causal_conv1d_ref(x, w, b, seq_idx=seq_idx, activation=activation), (x, w, b))


@pytest.mark.parametrize("path", ["triton", "torch"])
@pytest.mark.parametrize("channel_last", [False, True])
def test_fp32_gradient_is_the_derivative_with_padding(path, channel_last, monkeypatch):
    """fp32 (the Triton kernels never run float64): the derivative of sum(g * y) along a random direction of (x, w,
    β), by central differences with eps = 1e-2 and the sum taken in float64, equals the gradients' inner product
    with it.  SiLU's curvature gives a relative error of O(eps^2) (1.3e-4 seen) and fp32 rounding of y, ~1e-7 an
    output over 2 eps, less: 1e-3 relative bounds both; a padding dy let into dw or dβ moves the gradient by O(1)."""
    _use_path(path, monkeypatch)
    torch.manual_seed(13)
    seq_idx = PADDED_SEQ_IDX
    x, w, b = _inputs(2, 5, seq_idx.shape[1], 4, channel_last=channel_last)
    g = torch.randn(2, 5, seq_idx.shape[1], dtype=torch.float64)
    direction = [torch.randn_like(t) for t in (x, w, b)]

    def loss(x, w, b):
        return (g * inductor_conv.causal_conv1d(x, w, b, seq_idx=seq_idx, activation="silu").double()).sum()

    eps = 1e-2
    plus = loss(*(t + eps * v for t, v in zip((x, w, b), direction)))
    minus = loss(*(t - eps * v for t, v in zip((x, w, b), direction)))
    leaves = [t.clone().requires_grad_(True) for t in (x, w, b)]
    grads = torch.autograd.grad(loss(*leaves), leaves)
    along = sum((gr.double() * v.double()).sum() for gr, v in zip(grads, direction))
    assert abs((plus - minus).item() / (2 * eps) - along.item()) < 1e-3 * abs(along.item())


def test_dao_positional_order_and_final_states_out():
    """causal_conv1d_fn's order (x, weight, bias, seq_idx, initial_states, return_final_states, final_states_out,
    activation): positional calls equal keyword ones; final_states_out (laid out channel-last, as Dao allocates it)
    receives the final states and is returned, and the gradients reach x and initial_states through it.  L = 2 <
    K - 1: the final states hold the last initial state, then x."""
    torch.manual_seed(14)
    x, w, b = _inputs(L=2, K=4, requires_grad=True)
    init = torch.randn(2, 5, 3, requires_grad=True)
    out = torch.empty(2, 3, 5).transpose(1, 2)
    y, final = inductor_conv.causal_conv1d(x, w, b, None, init, True, out, "silu")
    assert final is out
    y_kw, final_kw = inductor_conv.causal_conv1d(x, w, b, initial_states=init, return_final_states=True,
                                                  activation="silu")
    assert torch.equal(y, y_kw) and torch.equal(final, final_kw)
    g, h = torch.randn_like(y), torch.randn_like(final)
    grads = torch.autograd.grad((y * g).sum() + (final * h).sum(), (x, w, b, init))
    leaves = [t.detach().double().requires_grad_(True) for t in (x, w, b, init)]
    y64 = causal_conv1d_ref(*leaves[:3], initial_states=leaves[3], activation="silu")
    final64 = torch.cat([leaves[3], leaves[0]], -1)[..., -3:]
    torch.testing.assert_close(final.double(), final64, rtol=0, atol=0)
    loss64 = (y64 * g.double()).sum() + (final64 * h.double()).sum()
    for ours, ref in zip(grads, torch.autograd.grad(loss64, leaves)):
        torch.testing.assert_close(ours.double(), ref, **FP32_TOL)
    seq_idx = torch.tensor([[0, 1], [-1, -1]], dtype=torch.int32)  # seq_idx is the fourth positional argument
    torch.testing.assert_close(inductor_conv.causal_conv1d(x, w, b, seq_idx, None, False, None, "silu").double(),
                               causal_conv1d_ref(*leaves[:3], seq_idx=seq_idx, activation="silu"), **FP32_TOL)


@pytest.mark.parametrize("path", ["triton", "torch"])
@pytest.mark.parametrize("B, C, L", [(2, 3, 0), (0, 3, 5), (2, 0, 5)], ids=["L0", "B0", "C0"])
def test_empty_dimensions_behave_as_conv1d(path, B, C, L, monkeypatch):
    """conv1d's answer on both paths: an empty y (B, C, L) in x's layout, an empty dx, zero dw and dβ (no output
    depends on them).  The final states carry the initial ones' gradient (with L = 0 they are the initial states).
    The torch fallback failed on L = 0 (its windows of K positions over K - 1 padded ones)."""
    _use_path(path, monkeypatch)
    torch.manual_seed(15)
    K = 4
    x = torch.randn(B, L, C).transpose(1, 2).requires_grad_(True)  # channel-last
    w = torch.randn(C, K, requires_grad=True)
    b = torch.randn(C, requires_grad=True)
    init = torch.randn(B, C, K - 1, requires_grad=True)
    y, final = inductor_conv.causal_conv1d(x, w, b, initial_states=init, return_final_states=True, activation="silu")
    assert y.shape == (B, C, L) and y.dtype == x.dtype and y.stride() == x.stride()
    h = torch.randn_like(final)
    dx, dw, db, dinit = torch.autograd.grad(y.sum() + (final * h).sum(), (x, w, b, init))
    assert dx.shape == x.shape and dw.shape == w.shape and db.shape == b.shape
    assert dw.eq(0).all() and db.eq(0).all()
    if L == 0:
        assert torch.equal(final, init) and torch.equal(dinit, h)
    elif C > 0:  # B = 0: conv1d of an empty batch
        assert F.conv1d(F.pad(x, (K - 1, 0)), w[:, None], b, groups=C).shape == y.shape


def test_mixed_dtypes_fp32_weights_bf16_input():
    x, w, b = _inputs(L=16)
    xb = x.bfloat16()
    y = inductor_conv.causal_conv1d(xb, w, b, activation="silu")
    assert y.dtype == torch.bfloat16
    ref = causal_conv1d_ref(xb.double(), w.double(), b.double(), activation="silu")
    # One bf16 rounding of the output (rel 2^-8) dominates.
    torch.testing.assert_close(y.double(), ref, rtol=8e-3, atol=8e-3)


def test_mixed_dtypes_fp32_weights_fp16_input():
    """Dao's mixed dtypes with fp16: output in x's dtype. One fp16 rounding of O(1) outputs (2^-11 = 4.9e-4) with a
    4x margin."""
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 5, 16).half(), torch.randn(5, 4), torch.randn(5)
    y = inductor_conv.causal_conv1d(x, w, b, activation="silu")
    assert y.dtype == torch.float16
    ref = F.silu(F.conv1d(F.pad(x.double(), (3, 0)), w.double()[:, None], b.double(), groups=5))
    torch.testing.assert_close(y.double(), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    "kwargs, exc, needle",
    [
        (dict(x=torch.randn(2, 3)), ValueError, "x must have shape"),
        (dict(x=torch.randint(0, 3, (2, 3, 4))), TypeError, "x must be"),
        (dict(weight=torch.randn(4, 3)), ValueError, "weight must have shape"),
        (dict(weight=torch.randn(3, 2, 3)), ValueError, "weight of shape"),
        (dict(weight=torch.randn(3, 0)), ValueError, "K must be >= 1"),
        (dict(bias=torch.randn(4)), ValueError, "bias must have shape"),
        (dict(activation="relu"), ValueError, "activation"),
        (dict(seq_idx=torch.zeros(2, 5, dtype=torch.int32)), ValueError, "seq_idx must have shape"),
        (dict(seq_idx=torch.zeros(2, 4, dtype=torch.int64)), TypeError, "seq_idx must be int32"),
        (dict(initial_states=torch.randn(2, 3, 3)), ValueError, "initial_states must have shape"),
        (
            dict(initial_states=torch.randn(2, 3, 2), seq_idx=torch.zeros(2, 4, dtype=torch.int32)),
            ValueError,
            "cannot be combined",
        ),
        # the last K - 1 inputs may span packed sequences: no state of the last one (Dao asserts the same)
        (
            dict(seq_idx=torch.zeros(2, 4, dtype=torch.int32), return_final_states=True),
            ValueError,
            "return_final_states cannot be combined with seq_idx",
        ),
        (dict(seq_idx=[[0, 0, 1, 1], [0, 0, 0, 0]]), TypeError, "seq_idx must be an int32 Tensor"),
        (dict(initial_states=[[0.0, 0.0]]), TypeError, "initial_states must be a Tensor"),
        # causal_conv1d_fn ignores final_states_out without return_final_states; a buffer left unwritten is an error
        (dict(final_states_out=torch.randn(2, 3, 2)), ValueError, "final_states_out is written only with"),
        (dict(final_states_out=torch.randn(2, 3, 3), return_final_states=True), ValueError,
         r"final_states_out must have shape \(2, 3, 2\)"),
        (dict(final_states_out=torch.randn(2, 3, 2, dtype=torch.float64), return_final_states=True), TypeError,
         "final_states_out must have x's dtype"),
        (dict(final_states_out=[[0.0, 0.0]], return_final_states=True), TypeError, "final_states_out must be a Tensor"),
        (dict(weight=torch.ones(3, 3, dtype=torch.int64), bias=None), TypeError, "weight must be a floating-point"),
        (dict(bias=torch.ones(3, dtype=torch.int64)), TypeError, "bias must be a floating-point"),
        (dict(initial_states=torch.ones(2, 3, 2, dtype=torch.int64), bias=None), TypeError,
         "initial_states must be a floating"),
        # meta tensors stand in for another device
        (dict(weight=torch.randn(3, 3, device="meta"), bias=None), ValueError, "weight is on meta but x is on cpu"),
        (dict(bias=torch.randn(3, device="meta")), ValueError, "bias is on meta"),
        (dict(initial_states=torch.randn(2, 3, 2, device="meta"), bias=None), ValueError, "initial_states is on meta"),
        (dict(seq_idx=torch.zeros(2, 4, dtype=torch.int32, device="meta"), bias=None), ValueError,
         "seq_idx is on meta"),
        (dict(x=torch.randn(2, 3, 4).tolist(), bias=None), TypeError, "x must be a Tensor"),
        (dict(weight=torch.randn(3, 3).tolist(), bias=None), TypeError, "weight must be a Tensor"),
        (dict(bias=torch.randn(3).tolist()), TypeError, "bias must be a Tensor or None, got list"),
        (dict(activation=["silu"], bias=None), TypeError, "activation must be None, 'silu' or 'swish', got a list"),
    ],
)
def test_errors_name_the_argument(kwargs, exc, needle):
    args = dict(x=torch.randn(2, 3, 4), weight=torch.randn(3, 3), bias=torch.randn(3), activation=None)
    args.update(kwargs)
    x, weight, bias = args.pop("x"), args.pop("weight"), args.pop("bias")
    with pytest.raises(exc, match=needle):
        inductor_conv.causal_conv1d(x, weight, bias, **args)


def test_compiled_backward_with_a_transposed_weight_view():
    """A (K, C) parameter passed as its (C, K) view: every gradient keeps its input's strides on every path (float64
    takes the torch fallback, whose dw was contiguous while the fake promised weight's strides: the compiled
    backward's stride assert failed)."""
    torch._dynamo.reset()
    x = torch.randn(2, 3, 9, dtype=torch.float64, requires_grad=True)
    w_kc = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)

    def f(x, w_kc, b):
        return inductor_conv.causal_conv1d(x, w_kc.t(), b, activation="silu").square().sum()

    grads = torch.autograd.grad(torch.compile(f, fullgraph=True, backend="inductor")(x, w_kc, b), (x, w_kc, b))
    leaves = [t.detach().requires_grad_() for t in (x, w_kc, b)]
    ref = causal_conv1d_ref(leaves[0], leaves[1].t(), leaves[2], activation="silu").square().sum()
    for ours, want in zip(grads, torch.autograd.grad(ref, leaves)):
        torch.testing.assert_close(ours, want)


def test_compiled_with_seq_idx_and_with_initial_states():
    """Packed sequences and carried-in states through a compiled graph: output, final states and every gradient
    against the float64 reference (fp32 kernels through the interpreter)."""
    # a few fp32 roundings (~1e-6) per O(1) value; a tap read across a sequence boundary or a wrong carried-in state
    # moves values by far more than this 2e-4 relative, 2e-5 absolute
    tol = dict(rtol=2e-4, atol=2e-5)
    torch.manual_seed(21)
    B, C, L, K = 2, 5, 13, 4
    x = torch.randn(B, L, C).transpose(1, 2).requires_grad_()  # the channel-last view
    w, b = torch.randn(C, K, requires_grad=True), torch.randn(C, requires_grad=True)
    seq_idx = torch.tensor([[0] * 5 + [1] * 8, [0] * 9 + [2] * 4], dtype=torch.int32)
    init = torch.randn(B, C, K - 1, requires_grad=True)
    g = torch.randn(B, C, L)

    y = compiled_fullgraph(lambda x, w, b, s: inductor_conv.causal_conv1d(x, w, b, activation="silu", seq_idx=s))(
        x, w, b, seq_idx)
    leaves = [t.detach().double().requires_grad_() for t in (x, w, b)]
    ref = causal_conv1d_ref(*leaves, seq_idx=seq_idx, activation="silu")
    torch.testing.assert_close(y.double(), ref, **tol)
    for got, want in zip(torch.autograd.grad(y, (x, w, b), g), torch.autograd.grad(ref, leaves, g.double())):
        torch.testing.assert_close(got.double(), want, **tol)

    def with_states(x, w, b, init):
        return inductor_conv.causal_conv1d(x, w, b, initial_states=init, return_final_states=True)

    y, final = compiled_fullgraph(with_states)(x, w, b, init)
    leaves = [t.detach().double().requires_grad_() for t in (x, w, b, init)]
    ref = causal_conv1d_ref(*leaves[:3], initial_states=leaves[3])
    torch.testing.assert_close(y.double(), ref, **tol)
    torch.testing.assert_close(final.double(), leaves[0][..., -(K - 1):].detach(), **tol)
    got = torch.autograd.grad(y, (x, w, b, init), g)
    for got_t, want in zip(got, torch.autograd.grad(ref, leaves, g.double())):
        torch.testing.assert_close(got_t.double(), want, **tol)


def test_compiles_fullgraph_without_break():
    torch._dynamo.reset()
    x, w, b = _inputs(requires_grad=True)

    def f(x, w, b):
        y, state = inductor_conv.causal_conv1d(x, w, b, activation="silu", return_final_states=True)
        return y.sum() + state.sum()

    compiled = torch.compile(f, fullgraph=True, backend="inductor")
    out = compiled(x, w, b)
    out.backward()
    # against the float64 reference, not the eager op (which runs the same kernels as the compiled fallback):
    # y.sum() + state.sum(), the state being x's last K - 1 positions
    leaves = [t.detach().double().requires_grad_() for t in (x, w, b)]
    K = w.shape[-1]
    ref = causal_conv1d_ref(*leaves, activation="silu").sum() + leaves[0][..., -(K - 1):].sum()
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    ref.backward()
    for ours, leaf in zip((x.grad, w.grad, b.grad), leaves):
        torch.testing.assert_close(ours.double(), leaf.grad, **FP32_TOL)


# Random shapes, both layouts, every optional input: the Triton path against the float64 reference. Examples are few
# and small because each runs the kernels through the interpreter (and derandomised so CI is reproducible).
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    B=st.integers(1, 3),
    C=st.integers(1, 9),
    L=st.integers(1, 40),
    K=st.integers(1, 6),
    channel_last=st.booleans(),
    activation=st.sampled_from([None, "silu"]),
    extra=st.sampled_from(["none", "bias", "seq_idx", "initial_states"]),
)
def test_random_shapes_match_reference(B, C, L, K, channel_last, activation, extra):
    torch.manual_seed(B * 1000 + C * 100 + L * 10 + K)
    x, w, b = _inputs(B=B, C=C, L=L, K=K, channel_last=channel_last, requires_grad=True)
    kwargs = {}
    if extra == "seq_idx":
        kwargs["seq_idx"] = torch.sort(torch.randint(0, 3, (B, L), dtype=torch.int32), dim=-1).values
    if extra == "initial_states":
        kwargs["initial_states"] = torch.randn(B, C, K - 1, requires_grad=True)
    bias = b if extra == "bias" else None
    y = inductor_conv.causal_conv1d(x, w, bias, activation=activation, **kwargs)
    g = torch.randn_like(y)
    leaves = [x, w] + ([bias] if bias is not None else []) + ([kwargs["initial_states"]] if "initial_states" in kwargs else [])
    grads = torch.autograd.grad(y, leaves, g)
    leaves64 = [t.detach().double().requires_grad_(True) for t in leaves]
    kw64 = dict(kwargs)
    if "initial_states" in kw64:
        kw64["initial_states"] = leaves64[-1]
    y64 = causal_conv1d_ref(
        leaves64[0], leaves64[1], leaves64[2] if bias is not None else None, activation=activation, **kw64
    )
    grads64 = torch.autograd.grad(y64, leaves64, g.double())
    torch.testing.assert_close(y.double(), y64, **FP32_TOL)
    for ours, ref in zip(grads, grads64):
        # dw/dβ sum B·L terms: allow the fp32 accumulation error to grow with the length of the sum.
        torch.testing.assert_close(ours.double(), ref, rtol=1e-4, atol=1e-5 * max(1, B * L) ** 0.5)


@pytest.mark.parametrize("activation", [None, "silu", "swish"])
@pytest.mark.parametrize("channel_last", [False, True])
@pytest.mark.parametrize("L, K", [(2, 4), (1, 3), (5, 1)])  # L < K (leftmost taps see only padding), K = 1
def test_gradcheck_float64_short_sequences_and_width_one(L, K, channel_last, activation):
    torch.manual_seed(L * 10 + K)
    x, w, b = _inputs(2, 3, L, K, dtype=torch.float64, channel_last=channel_last, requires_grad=True)
    init = torch.randn(2, 3, K - 1, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, w, b, i: inductor_conv.causal_conv1d(x, w, b, activation=activation, initial_states=i),
        (x, w, b, init),
    )
