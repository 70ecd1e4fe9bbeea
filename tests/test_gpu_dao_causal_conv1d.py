"""Dao-AILab causal-conv1d's own tests (``tests/test_causal_conv1d.py`` at commit 0d2252d) run against our ops.

His test bodies are kept, with his shapes, seeds and tolerances, behind a thin adapter: ``causal_conv1d_fn`` is
``inductor_conv.causal_conv1d`` (it takes his argument order), ``causal_conv1d_varlen_states`` ours, and
``causal_conv1d_update`` ours called under ``torch.no_grad()``: his tests hand it a weight that requires grad, which
his C++ op ignores (it has no backward) and ours refuses under grad mode.  His references (``causal_conv1d_ref``,
``causal_conv1d_update_ref``, ``causal_conv1d_varlen_states_ref``) are copied below as he wrote them (einops'
``rearrange(t, "b s d -> b d s")`` spelled ``t.transpose(1, 2)``).  GPU only; one device call runs the whole file
with pytest-xdist (``-n 12``) in well under four minutes.  What runs of each test, and why:

* ``test_causal_conv1d``: his grid is 6,480 cases (2 dims x 18 seqlens x 3 widths x bias x activation x 3 dtypes x
  layout x initial / final states, those two only channel-last).  Here 54 cases, three rounds over his 18 seqlens
  (``_rounds``), in which every pair of parameter values meets at least once (checked at import:
  ``_assert_pairwise``): each seqlen (1 and 2 below K - 1; 128, 129, 130 and 256 around the column tiles of fp32 and
  16-bit x; 2048 and 4096 over many chunks of a row) with each width, dtype, layout, dim (64, and 4096 + 32: a
  partial channel block) and with and without bias, SiLU, initial and final states; each width with each dtype and
  layout, and so on.  All 18 (width, dtype, layout) tile geometries run.  Why not more: nearly all of this file's
  time is Triton compiling our kernels, one compile per constexpr set (width x dtype x layout x bias x activation x
  initial states: 144 in his grid) and per specialisation of the sizes; a backward variant takes 3-20 s to compile
  (sm_90, offline on a 2-core CPU), so his whole grid would compile for longer than the device call may take, to
  run kernels that the cases here already run.  Initial and final states run in both layouts: his kernel takes them
  channel-last only and skips the rest; ours takes any strides.
* ``test_causal_conv1d_varlen``: his 1,008 cases (2 dims x 14 seqlens x 3 widths x bias x activation x 3 dtypes)
  become 42 the same way: every seqlen with each width, dtype, dim and flag, every pair of values.
* ``test_causal_conv1d_varlen_padding`` (packed sequences with padding, issue 31's failure), the three update tests,
  ``test_causal_conv1d_get_states``: his whole grids (288, 648, 648, 324, 9 cases; forward only or decode steps).
* ``test_causal_conv1d_race_condition``: his one case, 1,000 repetitions instead of 10,000 (ours reduces dw and
  dbias in a fixed order, so a repetition tests the same arithmetic again; it compares bits, not his 1e-4).
* The deterministic-backward tests.  His op is deterministic under ``torch.use_deterministic_algorithms(True)`` and
  atomic otherwise; ours is deterministic by default (``config.deterministic``) whatever torch's flag, and atomic
  with ``config.deterministic = False``.  His reproducibility check runs with torch's flag on (his case) and off
  (ours must not depend on it); his "close to default" compares our two modes with his tolerances; his "default
  mode is not reproducible" runs our atomic mode and, as his, xfails when no difference shows in 20 runs.
"""
from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

import inductor_conv

pytestmark = pytest.mark.gpu

DEVICE = "cuda"


# ---------------------------------------------------------------------------------------------------------------
# The adapter: his names, our ops
# ---------------------------------------------------------------------------------------------------------------
causal_conv1d_fn = inductor_conv.causal_conv1d  # his argument order: x, weight, bias, seq_idx, initial_states, ...
causal_conv1d_varlen_states = inductor_conv.causal_conv1d_varlen_states


def causal_conv1d_update(x, conv_state, weight, bias=None, activation=None, cache_seqlens=None,
                         conv_state_indices=None):
    with torch.no_grad():  # his tests pass a weight that requires grad; neither op has a backward
        return inductor_conv.causal_conv1d_update(x, conv_state, weight, bias, activation, cache_seqlens,
                                                  conv_state_indices)


# ---------------------------------------------------------------------------------------------------------------
# His references (causal_conv1d/causal_conv1d_interface.py, causal_conv1d/causal_conv1d_varlen.py)
# ---------------------------------------------------------------------------------------------------------------
def causal_conv1d_ref(x, weight, bias=None, initial_states=None, return_final_states=False, final_states_out=None,
                      activation=None):
    """x (batch, dim, seqlen), weight (dim, width), bias (dim,), initial_states (batch, dim, width - 1); computed in
    the weight's dtype by F.conv1d."""
    if activation not in [None, "silu", "swish"]:
        raise NotImplementedError("activation must be None, silu, or swish")
    dtype_in = x.dtype
    x = x.to(weight.dtype)
    seqlen = x.shape[-1]
    dim, width = weight.shape
    if initial_states is None:
        out = F.conv1d(x, weight.unsqueeze(1), bias, padding=width - 1, groups=dim)
    else:
        x = torch.cat([initial_states, x], dim=-1)
        out = F.conv1d(x, weight.unsqueeze(1), bias, padding=0, groups=dim)
    out = out[..., :seqlen]
    if return_final_states:
        final_states = F.pad(x, (width - 1 - x.shape[-1], 0)).to(dtype_in)  # (batch, dim, width - 1)
        if final_states_out is not None:
            final_states_out.copy_(final_states)
        else:
            final_states_out = final_states
    out = (out if activation is None else F.silu(out)).to(dtype=dtype_in)
    return out if not return_final_states else (out, final_states_out)


def causal_conv1d_update_ref(x, conv_state, weight, bias=None, activation=None, cache_seqlens=None):
    """x (batch, dim) or (batch, dim, seqlen), conv_state (batch, dim, state_len) updated in place; cache_seqlens:
    the state is a circular buffer written from cache_seqlens % state_len."""
    if activation not in [None, "silu", "swish"]:
        raise NotImplementedError("activation must be None, silu, or swish")
    dtype_in = x.dtype
    unsqueeze = x.dim() == 2
    if unsqueeze:
        x = x.unsqueeze(-1)
    batch, dim, seqlen = x.shape
    width = weight.shape[1]
    state_len = conv_state.shape[-1]
    assert conv_state.shape == (batch, dim, state_len)
    assert weight.shape == (dim, width)
    if cache_seqlens is None:
        x_new = torch.cat([conv_state, x], dim=-1).to(weight.dtype)  # (batch, dim, state_len + seqlen)
        conv_state.copy_(x_new[:, :, -state_len:])
    else:
        width_idx = (torch.arange(-(width - 1), 0, dtype=torch.long, device=x.device).unsqueeze(0)
                     + cache_seqlens.unsqueeze(1))
        width_idx = torch.remainder(width_idx, state_len).unsqueeze(1).expand(-1, dim, -1)
        x_new = torch.cat([conv_state.gather(2, width_idx), x], dim=-1).to(weight.dtype)
        copy_idx = torch.arange(seqlen, dtype=torch.long, device=x.device).unsqueeze(0) + cache_seqlens.unsqueeze(1)
        copy_idx = torch.remainder(copy_idx, state_len).unsqueeze(1).expand(-1, dim, -1)
        conv_state.scatter_(2, copy_idx, x)
    out = F.conv1d(x_new, weight.unsqueeze(1), bias, padding=0, groups=dim)[:, :, -seqlen:]
    if unsqueeze:
        out = out.squeeze(-1)
    return (out if activation is None else F.silu(out)).to(dtype=dtype_in)


def causal_conv1d_varlen_states_ref(x, cu_seqlens, state_len):
    """x (total_tokens, dim), cu_seqlens (batch + 1); the last state_len tokens of each sequence, zero-filled."""
    _, dim = x.shape
    batch = cu_seqlens.shape[0] - 1
    cu_seqlens = cu_seqlens.contiguous()
    states = torch.zeros(batch, state_len, dim, dtype=x.dtype, device=x.device).transpose(1, 2)
    for i in range(batch):
        end_idx = cu_seqlens[i + 1]
        start_idx = torch.maximum(cu_seqlens[i], end_idx - state_len)
        states[i, :, -(end_idx - start_idx):] = x[start_idx:end_idx].T
    return states


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.float() - b.float()).abs().max().item()


def _conv1d_bwd_once(*, seed: int, channel_last: bool):
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    device = DEVICE
    itype = torch.bfloat16
    dim = 1024
    seqlen = 2048
    width = 4

    batch = 4
    if not channel_last:
        x = torch.randn(batch, dim, seqlen, device=device, dtype=itype).requires_grad_()
    else:
        x = torch.randn(batch, seqlen, dim, device=device, dtype=itype).transpose(1, 2).requires_grad_()
    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True)
    g = torch.randn_like(x)
    out = causal_conv1d_fn(x, weight, bias, activation="silu")
    out.backward(g)
    torch.cuda.synchronize()
    return x.grad.detach().clone(), weight.grad.detach().clone(), bias.grad.detach().clone()


def _set_torch_deterministic(enabled: bool) -> bool:
    old = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(enabled)
    return old


def _tolerances(itype):
    """His: (rtol, atol) of activations and gradients in x's dtype, then of the fp32 weight and bias gradients."""
    rtol, atol = (3e-4, 1e-3) if itype == torch.float32 else (3e-3, 5e-3)
    if itype == torch.bfloat16:
        rtol, atol = 1e-2, 5e-2
    return rtol, atol, 1e-3, 1e-3


# ---------------------------------------------------------------------------------------------------------------
# The parametrisation (module docstring)
# ---------------------------------------------------------------------------------------------------------------
ITYPES = [torch.float32, torch.float16, torch.bfloat16]
WIDTHS = [2, 3, 4]
DIMS = [64, 4096 + 32]
SEQLENS = [1, 2, 8, 16, 32, 64, 128, 129, 130, 151, 256, 372, 512, 784, 1024, 1134, 2048, 4096]
VARLEN_SEQLENS = [8, 16, 32, 64, 128, 151, 256, 372, 512, 784, 1024, 1134, 2048, 4096]
CONV_NAMES = "dim, seqlen, width, has_bias, silu_activation, itype, channel_last, has_initial_states, " \
             "return_final_states"
VARLEN_NAMES = "dim, seqlen, width, has_bias, silu_activation, itype"


def _rounds(seqlens, periods):
    """Three rounds over the seqlens: round r gives the j-th seqlen the width WIDTHS[(r + j) % 3], the dtype
    ITYPES[(2r + j) % 3] and, for each yes / no parameter, (r + j // m) % 2 with the parameter's own period m along
    the seqlens (m = len(seqlens): the round alone decides).  Rows (seqlen, width, itype, *flags)."""
    return [(seqlen, WIDTHS[(r + j) % 3], ITYPES[(2 * r + j) % 3]) + tuple(bool((r + j // m) % 2) for m in periods)
            for r in range(3) for j, seqlen in enumerate(seqlens)]


def _conv_cases():
    periods = dict(channel_last=2, dim=9, has_bias=3, silu_activation=4, has_initial_states=6,
                   return_final_states=len(SEQLENS))
    cases = []
    for seqlen, width, itype, *flags in _rounds(SEQLENS, periods.values()):
        f = dict(zip(periods, flags))
        cases.append((DIMS[f["dim"]], seqlen, width, f["has_bias"], f["silu_activation"], itype, f["channel_last"],
                      f["has_initial_states"], f["return_final_states"]))
    return cases


def _varlen_cases():
    periods = dict(dim=len(VARLEN_SEQLENS), has_bias=9, silu_activation=6)
    return [(DIMS[dim], seqlen, width, bias, silu, itype)
            for seqlen, width, itype, dim, bias, silu in _rounds(VARLEN_SEQLENS, periods.values())]


def _assert_pairwise(cases, names):
    """Every pair of parameter values meets in some case (what the module docstring promises of the subsets)."""
    values = [{c[i] for c in cases} for i in range(len(names))]
    for i, j in itertools.combinations(range(len(names)), 2):
        met = {(c[i], c[j]) for c in cases}
        assert len(met) == len(values[i]) * len(values[j]), f"{names[i]} x {names[j]} not covered"


CONV_CASES = _conv_cases()
VARLEN_CASES = _varlen_cases()
_assert_pairwise(CONV_CASES, CONV_NAMES.split(", "))
_assert_pairwise(VARLEN_CASES, VARLEN_NAMES.split(", "))


def _case_id(case):
    return "-".join(str(v).removeprefix("torch.") for v in case)


# ---------------------------------------------------------------------------------------------------------------
# His tests
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(CONV_NAMES, CONV_CASES, ids=[_case_id(c) for c in CONV_CASES])
def test_causal_conv1d(dim, seqlen, width, has_bias, silu_activation, itype, channel_last, has_initial_states,
                       return_final_states):
    device = DEVICE
    rtol, atol, rtolw, atolw = _tolerances(itype)
    # set seed
    torch.random.manual_seed(0)
    batch = 2
    if not channel_last:
        x = torch.randn(batch, 4096 + dim + 64, seqlen, device=device, dtype=itype)[:, 4096:4096 + dim, :]
    else:
        x = torch.randn(batch, seqlen, 4096 + dim + 64, device=device, dtype=itype)[:, :, 4096:4096 + dim]
        x = x.transpose(1, 2)
    x.requires_grad_()
    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    if has_bias:
        bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True)
    else:
        bias = None
    if has_initial_states:
        initial_states = torch.randn(batch, width - 1, dim, device=device, dtype=itype).transpose(1, 2)
        initial_states.requires_grad_()
    else:
        initial_states = None
    x_ref = x.detach().clone().requires_grad_()
    weight_ref = weight.detach().clone().requires_grad_()
    bias_ref = bias.detach().clone().requires_grad_() if bias is not None else None
    initial_states_ref = initial_states.detach().clone().requires_grad_() if initial_states is not None else None
    activation = None if not silu_activation else "silu"
    out = causal_conv1d_fn(x, weight, bias, initial_states=initial_states, return_final_states=return_final_states,
                           activation=activation)
    out_ref = causal_conv1d_ref(x_ref, weight_ref, bias_ref, initial_states=initial_states_ref,
                                return_final_states=return_final_states, activation=activation)
    if return_final_states:
        out, final_states = out
        out_ref, final_states_ref = out_ref
        assert torch.allclose(final_states, final_states_ref, rtol=rtol, atol=atol)

    assert torch.allclose(out, out_ref, rtol=rtol, atol=atol)

    if return_final_states:
        out += F.sigmoid(final_states).sum(dim=-1, keepdim=True)
        out_ref += F.sigmoid(final_states_ref).sum(dim=-1, keepdim=True)

    g = torch.randn_like(out)
    out.backward(g)
    out_ref.backward(g)

    assert torch.allclose(x.grad, x_ref.grad.to(dtype=itype), rtol=rtol, atol=atol)
    assert torch.allclose(weight.grad, weight_ref.grad, rtol=rtolw, atol=atolw)
    if has_bias:
        assert torch.allclose(bias.grad, bias_ref.grad, rtol=rtolw, atol=atolw)
    if has_initial_states:
        assert torch.allclose(initial_states.grad, initial_states_ref.grad.to(dtype=itype), rtol=rtol, atol=atol)


@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("silu_activation", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("has_cache_seqlens", [False, True])
@pytest.mark.parametrize("seqlen", [1, 4, 5])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dim", [2048, 2048 + 16, 4096])
def test_causal_conv1d_update(dim, width, seqlen, has_cache_seqlens, has_bias, silu_activation, itype):
    device = DEVICE
    rtol, atol, _, _ = _tolerances(itype)
    # set seed
    torch.random.manual_seed(0)
    batch = 64
    x = torch.randn(batch, seqlen, dim, device=device, dtype=itype).transpose(-1, -2)
    state_len = torch.randint(width - 1, width + 10, (1,)).item()
    conv_state = torch.randn(batch, state_len, dim, device=device, dtype=itype).transpose(-1, -2)
    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    if has_bias:
        bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True)
    else:
        bias = None
    conv_state_ref = conv_state.detach().clone()
    activation = None if not silu_activation else "silu"
    cache_seqlens = (torch.randint(0, 1024, (batch,), dtype=torch.int32, device=device)
                     if has_cache_seqlens else None)
    out = causal_conv1d_update(x, conv_state, weight, bias, activation=activation, cache_seqlens=cache_seqlens)
    out_ref = causal_conv1d_update_ref(x, conv_state_ref, weight, bias, activation=activation,
                                       cache_seqlens=cache_seqlens)

    assert torch.equal(conv_state, conv_state_ref)
    assert torch.allclose(out, out_ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("silu_activation", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("has_cache_seqlens", [False, True])
@pytest.mark.parametrize("seqlen", [1, 4, 5])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dim", [2048, 2048 + 16, 4096])
def test_causal_conv1d_update_with_batch_gather(dim, width, seqlen, has_cache_seqlens, has_bias, silu_activation,
                                                itype):
    device = DEVICE
    rtol, atol, _, _ = _tolerances(itype)
    # set seed
    torch.random.manual_seed(0)
    batch = 64
    x = torch.randn(batch, seqlen, dim, device=device, dtype=itype).transpose(-1, -2)
    state_len = torch.randint(width - 1, width + 10, (1,)).item()

    total_entries = 10 * batch
    conv_state = torch.randn(total_entries, state_len, dim, device=device, dtype=itype).transpose(-1, -2)
    conv_state_indices = torch.randperm(total_entries)[:batch].to(dtype=torch.int32, device=device)

    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    if has_bias:
        bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True)
    else:
        bias = None
    conv_state_ref = conv_state[conv_state_indices, :].detach().clone()
    activation = None if not silu_activation else "silu"
    cache_seqlens = (torch.randint(0, 1024, (batch,), dtype=torch.int32, device=device)
                     if has_cache_seqlens else None)
    out = causal_conv1d_update(x, conv_state, weight, bias, activation=activation,
                               cache_seqlens=cache_seqlens, conv_state_indices=conv_state_indices)
    out_ref = causal_conv1d_update_ref(x, conv_state_ref, weight, bias, activation=activation,
                                       cache_seqlens=cache_seqlens)

    assert torch.equal(conv_state[conv_state_indices, :], conv_state_ref)
    assert torch.allclose(out, out_ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("silu_activation", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("has_cache_seqlens", [False])  # his grid: the circular state is not run with padding
@pytest.mark.parametrize("seqlen", [1, 4, 5])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dim", [2048, 2048 + 16, 4096])
def test_causal_conv1d_update_with_padding(dim, width, seqlen, has_cache_seqlens, has_bias, silu_activation, itype):
    device = DEVICE
    rtol, atol, _, _ = _tolerances(itype)
    # set seed
    torch.random.manual_seed(0)
    batch = 64
    x = torch.randn(batch, seqlen, dim, device=device, dtype=itype).transpose(-1, -2)
    state_len = torch.randint(width - 1, width + 10, (1,)).item()

    total_entries = 10 * batch
    conv_state = torch.randn(total_entries, state_len, dim, device=device, dtype=itype).transpose(-1, -2)

    # Introduce padding by setting some indices to -1
    num_valid_requests = batch // 2
    num_padded_requests = batch - num_valid_requests

    valid_indices = torch.randperm(total_entries)[:num_valid_requests].to(device=device)
    padded_indices = torch.full((num_padded_requests,), -1, device=device)

    # Shuffle the valid and padded indices together
    combined_indices = torch.cat([valid_indices, padded_indices])
    perm = torch.randperm(batch, device=device)
    conv_state_indices = combined_indices[perm].to(dtype=torch.int32)

    weight = torch.randn(dim, width, device=device, dtype=torch.float32)
    bias = torch.randn(dim, device=device, dtype=torch.float32) if has_bias else None

    activation = "silu" if silu_activation else None
    cache_seqlens = None

    # Clone original state for later comparison
    conv_state_original = conv_state.clone()

    # Run the main function with padded indices
    out = causal_conv1d_update(x, conv_state, weight, bias, activation=activation,
                               cache_seqlens=cache_seqlens, conv_state_indices=conv_state_indices)

    # Manually compute the reference output and expected final state
    out_ref = torch.zeros_like(out)
    conv_state_expected = conv_state_original.clone()
    valid_mask = conv_state_indices != -1

    # Only compute the reference for the valid (non-padded) requests
    if num_valid_requests > 0:
        x_valid = x[valid_mask]
        conv_state_indices_valid = conv_state_indices[valid_mask]
        # This will be modified in-place by the ref function to get the expected updated state
        conv_state_valid_updated = conv_state_original[conv_state_indices_valid, :].detach().clone()
        out_ref_valid = causal_conv1d_update_ref(x_valid, conv_state_valid_updated, weight, bias,
                                                 activation=activation, cache_seqlens=None)
        out_ref[valid_mask] = out_ref_valid
        # Place the updated states into our expected full state tensor
        conv_state_expected[conv_state_indices_valid] = conv_state_valid_updated

    # The output for padded tokens should be exactly zero
    assert torch.all(out[~valid_mask] == 0)
    assert torch.allclose(out[valid_mask], out_ref[valid_mask], rtol=rtol, atol=atol)

    # Check that conv_state was updated correctly for valid tokens and untouched otherwise
    assert torch.equal(conv_state, conv_state_expected)


@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("dim", [2048, 2048 + 16, 4096])
def test_causal_conv1d_get_states(dim, itype):
    device = DEVICE
    # set seed
    torch.random.manual_seed(0)
    seqlens = torch.randint(1, 32, (100,), device=device)
    total_seqlen = seqlens.sum().item()
    x = torch.randn(total_seqlen, dim, device=device, dtype=itype)
    cu_seqlens = F.pad(seqlens.cumsum(0), (1, 0))
    state_len = 20
    out = causal_conv1d_varlen_states(x, cu_seqlens, state_len)
    out_ref = causal_conv1d_varlen_states_ref(x, cu_seqlens, state_len)
    assert torch.equal(out, out_ref)


def test_causal_conv1d_race_condition():
    """His case (channel-last bf16, SiLU, bias, width 4, seqlen 2048, dim 4096 + 32), 1,000 repetitions; every one
    must give the first one's bits (his checks dw within 1e-4 and, by a slip, dw again in place of db)."""
    seqlen, width, has_bias, silu_activation, itype, channel_last = 2048, 4, True, True, torch.bfloat16, True
    device = DEVICE
    # set seed
    torch.random.manual_seed(0)
    batch = 2
    dim = 4096 + 32  # Try dim not divisible by 64
    if not channel_last:
        x = torch.randn(batch, 4096 + dim + 64, seqlen, device=device, dtype=itype)[:, 4096:4096 + dim, :]
    else:
        x = torch.randn(batch, seqlen, 4096 + dim + 64, device=device, dtype=itype)[:, :, 4096:4096 + dim]
        x = x.transpose(1, 2)
    x.requires_grad_()
    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    if has_bias:
        bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True)
    else:
        bias = None
    activation = None if not silu_activation else "silu"
    out0 = causal_conv1d_fn(x, weight, bias, activation=activation)
    g = torch.randn_like(out0)
    dx0, dw0, db0 = torch.autograd.grad(out0, (x, weight, bias), g)

    for _ in range(1000):
        out = causal_conv1d_fn(x, weight, bias, activation=activation)
        dx, dw, db = torch.autograd.grad(out, (x, weight, bias), g)
        assert torch.equal(out, out0)
        assert torch.equal(dx, dx0)
        assert torch.equal(dw, dw0)
        assert torch.equal(db, db0)


@pytest.mark.parametrize(VARLEN_NAMES, VARLEN_CASES, ids=[_case_id(c) for c in VARLEN_CASES])
def test_causal_conv1d_varlen(dim, seqlen, width, has_bias, silu_activation, itype):
    device = DEVICE
    rtol, atol, rtolw, atolw = _tolerances(itype)
    # set seed
    torch.random.manual_seed(seqlen + dim + width)
    batch = 3
    seqlens = []
    for b in range(batch):
        nsplits = torch.randint(1, 5, (1,)).item()
        eos_pos = torch.randperm(seqlen - 1)[:nsplits].sort().values
        seqlens.append(torch.diff(torch.cat([torch.tensor([-1]), eos_pos, torch.tensor([seqlen - 1])])).tolist())
        assert sum(seqlens[-1]) == seqlen
        assert all(s > 0 for s in seqlens[-1])
    # Only support channel_last
    x = torch.randn(batch, seqlen, 4096 + dim + 64, device=device, dtype=itype)[:, :, 4096:4096 + dim]
    x = x.transpose(1, 2).requires_grad_()
    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    if has_bias:
        bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True)
    else:
        bias = None
    seq_idx = torch.stack([torch.cat([torch.full((s,), i, dtype=torch.int32, device=device)
                                      for i, s in enumerate(sl)], dim=0)
                           for sl in seqlens], dim=0)
    x_ref = x.detach().clone().requires_grad_()
    weight_ref = weight.detach().clone().requires_grad_()
    bias_ref = bias.detach().clone().requires_grad_() if bias is not None else None
    activation = None if not silu_activation else "silu"
    out = causal_conv1d_fn(x, weight, bias, seq_idx=seq_idx, activation=activation)
    out_ref = []
    for b in range(batch):
        out_ref_b = []
        for x_s in torch.split(x_ref[[b]], seqlens[b], dim=2):
            out_ref_b.append(causal_conv1d_ref(x_s, weight_ref, bias_ref, activation=activation))
        out_ref.append(torch.cat(out_ref_b, dim=2))
    out_ref = torch.cat(out_ref, dim=0)

    assert torch.allclose(out, out_ref, rtol=rtol, atol=atol)

    g = torch.randn_like(out)
    out_ref.backward(g)
    out.backward(g)

    assert torch.allclose(x.grad, x_ref.grad.to(dtype=itype), rtol=rtol, atol=atol)
    assert torch.allclose(weight.grad, weight_ref.grad, rtol=rtolw, atol=atolw)
    if has_bias:
        assert torch.allclose(bias.grad, bias_ref.grad, rtol=rtolw, atol=atolw)


@pytest.mark.parametrize("itype", ITYPES)
@pytest.mark.parametrize("silu_activation", [False, True])
@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("seqlen", [128, 256, 512, 1024])
@pytest.mark.parametrize("dim", DIMS)
def test_causal_conv1d_varlen_padding(dim, seqlen, width, has_bias, silu_activation, itype):
    device = DEVICE
    rtol, atol, _, _ = _tolerances(itype)
    # set seed
    torch.random.manual_seed(seqlen + dim + width)
    batch = 3
    max_seqlen = seqlen

    # Generate sequences of varying lengths for each batch item, some shorter than max_seqlen
    true_seqlens = [torch.randint(max_seqlen // 2, max_seqlen + 1, (1,)).item() for _ in range(batch)]

    seqlens = []
    for b in range(batch):
        # Within each true sequence, we can have multiple sub-sequences
        nsplits = torch.randint(1, 4, (1,)).item()
        eos_pos = torch.randperm(true_seqlens[b] - 1)[:nsplits].sort().values
        sl = torch.diff(torch.cat([torch.tensor([-1]), eos_pos, torch.tensor([true_seqlens[b] - 1])])).tolist()
        seqlens.append(sl)
        assert sum(sl) == true_seqlens[b]
        assert all(s > 0 for s in sl)

    # Only support channel_last
    x = torch.randn(batch, max_seqlen, 4096 + dim + 64, device=device, dtype=itype)[:, :, 4096:4096 + dim]
    x = x.transpose(1, 2).requires_grad_()

    weight = torch.randn(dim, width, device=device, dtype=torch.float32, requires_grad=True)
    bias = torch.randn(dim, device=device, dtype=torch.float32, requires_grad=True) if has_bias else None

    # Construct seq_idx with -1 for padding
    seq_idx_list = []
    conv_batch_idx_counter = 0
    for b in range(batch):
        seq_idx_b = []
        for s in seqlens[b]:
            seq_idx_b.append(torch.full((s,), conv_batch_idx_counter, dtype=torch.int32, device=device))
            conv_batch_idx_counter += 1
        seq_idx_b = torch.cat(seq_idx_b, dim=0)
        # Add padding indices
        padding_len = max_seqlen - true_seqlens[b]
        assert padding_len > 0
        seq_idx_b = torch.cat([seq_idx_b, torch.full((padding_len,), -1, dtype=torch.int32, device=device)], dim=0)
        seq_idx_list.append(seq_idx_b)
    seq_idx = torch.stack(seq_idx_list, dim=0)

    x_ref = x.detach().clone()
    weight_ref = weight.detach().clone()
    bias_ref = bias.detach().clone() if bias is not None else None
    activation = "silu" if silu_activation else None

    # Run forward pass with padding
    out = causal_conv1d_fn(x, weight, bias, seq_idx=seq_idx, activation=activation)

    # Manual reference calculation
    out_ref = torch.zeros_like(x_ref)
    for b in range(batch):
        out_ref_b = []
        # We only process the true sequence part
        x_b_unpadded = x_ref[[b], :, :true_seqlens[b]]
        # Split into sub-sequences
        for x_s in torch.split(x_b_unpadded, seqlens[b], dim=2):
            out_ref_b.append(causal_conv1d_ref(x_s, weight_ref, bias_ref, activation=activation))
        out_ref[b, :, :true_seqlens[b]] = torch.cat(out_ref_b, dim=2)

    assert torch.allclose(out, out_ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("torch_deterministic", [True, False])
@pytest.mark.parametrize("channel_last", [False, True])
def test_causal_conv1d_bwd_deterministic_reproducible(channel_last: bool, torch_deterministic: bool):
    """His check with torch.use_deterministic_algorithms(True) (what selects his deterministic mode), and off:
    ours is deterministic by default (config.deterministic), so both must give the same bits five times."""
    assert inductor_conv.config.deterministic
    old = _set_torch_deterministic(torch_deterministic)
    try:
        runs = 5
        outs = [_conv1d_bwd_once(seed=123, channel_last=channel_last) for _ in range(runs)]
        dx0, dw0, db0 = outs[0]
        for i in range(1, runs):
            dx, dw, db = outs[i]
            assert _max_abs_diff(dx0, dx) == 0.0
            assert _max_abs_diff(dw0, dw) == 0.0
            assert _max_abs_diff(db0, db) == 0.0
    finally:
        torch.use_deterministic_algorithms(old)


@pytest.mark.parametrize("channel_last", [False, True])
def test_causal_conv1d_bwd_deterministic_close_to_default(channel_last: bool, monkeypatch):
    """His comparison of the deterministic mode with the atomic one, with his tolerances: ours are
    config.deterministic True (the default) and False."""
    default_runs = 3
    dx_det, dw_det, db_det = _conv1d_bwd_once(seed=123, channel_last=channel_last)
    monkeypatch.setattr(inductor_conv.config, "deterministic", False)
    for _ in range(default_runs):
        dx_def, dw_def, db_def = _conv1d_bwd_once(seed=123, channel_last=channel_last)
        assert torch.allclose(dx_det, dx_def, rtol=1e-2, atol=5e-2)
        assert torch.allclose(dw_det, dw_def, rtol=1e-3, atol=1e-3)
        assert torch.allclose(db_det, db_def, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("channel_last", [False, True])
def test_causal_conv1d_bwd_atomic_mode_is_not_reproducible(channel_last: bool, monkeypatch):
    """His test_causal_conv1d_bwd_default_mode_is_not_reproducible on our atomic mode (config.deterministic =
    False; his default is atomic, ours is not): 20 runs, xfail when no difference shows, as his."""
    monkeypatch.setattr(inductor_conv.config, "deterministic", False)
    runs = 20
    dw0 = None
    db0 = None
    dx0 = None
    observed = False
    for _ in range(runs):
        dx, dw, db = _conv1d_bwd_once(seed=123, channel_last=channel_last)
        if dw0 is None:
            dx0, dw0, db0 = dx, dw, db
            continue
        if _max_abs_diff(dx0, dx) != 0.0 or _max_abs_diff(dw0, dw) != 0.0 or _max_abs_diff(db0, db) != 0.0:
            observed = True
            break
    if not observed:
        pytest.xfail("Did not observe nondeterminism in atomic mode (may be GPU/runtime dependent).")
