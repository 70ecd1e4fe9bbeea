"""Attention sinks (gpt-oss; Note [attention sinks] in ops/attention.py): ``inductor_conv.attention_with_sinks``
against HF gpt-oss's eager formula in float64, the rewrite of that formula in compiled graphs, and what it refuses.

float32 runs the Triton kernels (the interpreter on a CPU, the GPU under ``--gpu``), float64 the torch fallback.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from helpers import compile_and_run, compiled_fullgraph, ops_in, repeat_kv

import inductor_conv
from inductor_conv.ops.attention import _SEED_HIGH, _torch_dropout_keep

# as test_ops_attention.FP32_TOL: fp32 kernels against float64 observed <= 2e-6; a wrong term is >= 1e-3 here
FP32_TOL = dict(rtol=2e-4, atol=2e-5)
FP64_TOL = dict(rtol=1e-6, atol=1e-6)  # the fallback in float64, but the op's LSE is fp32 (Note [attention sinks])
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def gpt_oss_eager(q, k, v, mask, sinks, scale, keep=None, p=0.0):
    """HF gpt-oss's eager_attention_forward (repeat_kv GQA, scores * scale + mask, the sink column appended, the
    row max subtracted, softmax, the sink's column dropped, dropout as ``keep / (1 - p)``, @ v); sinks (B, Hq, Sq)
    give each query row its own (Inkling 2)."""
    G = q.shape[1] // k.shape[1]
    s = q @ k.repeat_interleave(G, 1).transpose(-2, -1) * scale
    if mask is not None:
        s = s + mask
    B, H, Sq, _ = s.shape
    sink = sinks[..., None] if sinks.dim() == 3 else sinks.reshape(1, -1, 1, 1).expand(B, -1, Sq, -1)
    c = torch.cat([s, sink], dim=-1)
    c = c - c.max(dim=-1, keepdim=True).values
    probs = F.softmax(c, dim=-1)[..., :-1]
    if keep is not None:
        probs = probs * keep / (1.0 - p)
    return probs @ v.repeat_interleave(G, 1)


def _inputs(dtype, device, B=2, Hq=4, Hkv=2, Sq=9, Sk=13, D=16, per_row=False):
    q = torch.randn(B, Hq, Sq, D, dtype=dtype, device=device, requires_grad=True)
    k = torch.randn(B, Hkv, Sk, D, dtype=dtype, device=device, requires_grad=True)
    v = torch.randn(B, Hkv, Sk, D, dtype=dtype, device=device, requires_grad=True)
    sinks = (2.0 * torch.randn((B, Hq, Sq) if per_row else Hq, dtype=dtype, device=device)).requires_grad_()
    return q, k, v, sinks


def _check(out, ref, ours, leaves, tol):
    torch.testing.assert_close(out.double(), ref, **tol)
    dy = torch.randn_like(out)
    got = torch.autograd.grad(out, ours, dy)
    want = torch.autograd.grad(ref, leaves, dy.double())
    for name, a, b in zip(("q", "k", "v", "sinks", "mask"), got, want):
        torch.testing.assert_close(a.double(), b, **tol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", ["plain", "causal", "hf_mask_empty_rows", "learned_bias", "softcap", "mqa",
                                  "per_row", "per_row_learned_bias"])
def test_sinks_match_gpt_oss_eager(case, dtype, device):
    """Output and the gradients of q, k, v, the sinks (one per head, or per query row) and a learned bias against
    gpt-oss's formula in float64, with rows that lose every key to HF's finfo.min mask or to -inf (all their weight
    goes to the sink: 0 out)."""
    torch.manual_seed(0)
    Hkv = 1 if case == "mqa" else 2
    q, k, v, sinks = _inputs(dtype, device, Hkv=Hkv, per_row=case.startswith("per_row"))
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    mask, kw = None, {}
    if case == "causal":
        kw["is_causal"] = True
        mask = torch.zeros(Sq, Sk, dtype=torch.float64, device=device).masked_fill(
            torch.ones(Sq, Sk, dtype=torch.bool, device=device).triu(1), -math.inf)
    elif case == "hf_mask_empty_rows":
        allowed = torch.rand(B, 1, Sq, Sk, device=device) > 0.3
        allowed[0, :, 2] = False  # a row with no key
        allowed[1, :, 5] = False
        mask = torch.zeros(B, 1, Sq, Sk, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
        mask[1, :, 5] = -math.inf
        kw["attn_mask"] = mask
    elif case.endswith("learned_bias"):
        mask = torch.randn(1, Hq, Sq, Sk, dtype=dtype, device=device, requires_grad=True)
        kw["attn_mask"] = mask
    scale = 0.3
    if case == "softcap":
        out = inductor_conv.attention_with_sinks(q, k, v, sinks, scale=scale, enable_gqa=True, softcap=1.5)
        leaves = [t.detach().double().requires_grad_() for t in (q, k, v, sinks)]
        capped_q = leaves[0]  # cap(scale q kᵀ) is spelled through the scores below
        G = Hq // Hkv
        s = torch.tanh(capped_q @ leaves[1].repeat_interleave(G, 1).transpose(-2, -1) * scale / 1.5) * 1.5
        c = torch.cat([s, leaves[3].reshape(1, -1, 1, 1).expand(B, -1, Sq, -1)], dim=-1)
        ref = F.softmax(c, dim=-1)[..., :-1] @ leaves[2].repeat_interleave(G, 1)
    else:
        out = inductor_conv.attention_with_sinks(q, k, v, sinks, scale=scale, enable_gqa=True, **kw)
        leaves = [t.detach().double().requires_grad_() for t in (q, k, v, sinks)]
        ref_mask = None
        if mask is not None:
            ref_mask = mask.detach().double().requires_grad_(mask.requires_grad)
            if mask.requires_grad:
                leaves.append(ref_mask)
        ref = gpt_oss_eager(*leaves[:3], ref_mask, leaves[3], scale)
    ours = [q, k, v, sinks] + ([mask] if case.endswith("learned_bias") else [])
    if case == "hf_mask_empty_rows":
        assert out[0, :, 2].abs().max() == 0 and out[1, :, 5].abs().max() == 0
    _check(out, ref, ours, leaves, FP32_TOL if dtype == torch.float32 else FP64_TOL)


@pytest.mark.parametrize("device", DEVICES)
def test_sinks_with_dropout_replay_the_seeded_mask(device):
    """Dropout with sinks keeps the op's contract: the keep mask is a function of a seed drawn from torch's generator
    and the logical index, so the same draw reproduces it in the reference (and the sink's probability, dropped
    with its column, is never kept or scaled)."""
    p = 0.3
    torch.manual_seed(0)
    q, k, v, sinks = _inputs(torch.float32, device)
    torch.manual_seed(7)
    out = inductor_conv.attention_with_sinks(q, k, v, sinks, dropout_p=p, is_causal=True, enable_gqa=True)
    torch.manual_seed(7)
    seed = torch.randint(0, _SEED_HIGH, (1,), dtype=torch.int64, device=device)
    B, Hq, Sq, _ = q.shape
    keep = _torch_dropout_keep(seed, (B, Hq, Sq, k.shape[2]), p, device).double()
    causal = torch.zeros(Sq, k.shape[2], dtype=torch.float64, device=device).masked_fill(
        torch.ones(Sq, k.shape[2], dtype=torch.bool, device=device).triu(1), -math.inf)
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v, sinks)]
    ref = gpt_oss_eager(*leaves[:3], causal, leaves[3], q.shape[-1] ** -0.5, keep, p)
    _check(out, ref, [q, k, v, sinks], leaves, FP32_TOL)


def test_sinks_arguments_are_checked():
    q, k, v, sinks = _inputs(torch.float32, "cpu")
    with pytest.raises(ValueError, match=r"sinks must have shape \(4,\)"):
        inductor_conv.attention_with_sinks(q, k, v, sinks[:2], enable_gqa=True)
    with pytest.raises(TypeError, match="sinks must be a floating-point tensor"):
        inductor_conv.attention_with_sinks(q, k, v, torch.ones(4, dtype=torch.int64), enable_gqa=True)
    for bad in ([0.0] * 4, None):
        with pytest.raises(TypeError, match="sinks must be a Tensor"):
            inductor_conv.attention_with_sinks(q, k, v, bad, enable_gqa=True)


# ---------------------------------------------------------------------------------------------------------------
# The rewrite of gpt-oss's spelling in compiled graphs
# ---------------------------------------------------------------------------------------------------------------
def _gpt_oss_layer(last_column=True, cat_dim=-1):
    """gpt-oss's eager attention (repeat_kv GQA, HF's additive mask), or a variant that is not attention with
    sinks: the first column dropped instead of the sink's, or the sinks appended along another dim."""
    def fn(q, k, v, mask, sinks):
        key, value = repeat_kv(k, 2), repeat_kv(v, 2)
        s = torch.matmul(q, key.transpose(2, 3)) * 0.25 + mask
        sink = sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[-2], -1)
        if cat_dim != -1:
            sink = sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, 1, s.shape[-1])
        c = torch.cat([s, sink], dim=cat_dim)
        c = c - c.max(dim=-1, keepdim=True).values
        probs = F.softmax(c, dim=-1, dtype=c.dtype)
        if cat_dim != -1:
            probs = probs[:, :, :-1]
        else:
            probs = probs[..., :-1] if last_column else probs[..., 1:]
        return torch.matmul(F.dropout(probs, p=0.0, training=False).to(value.dtype), value)

    return fn


def _flint_layer():
    """HF Flint's eager attention: float32 scores (q and k upcast; real casts in half), gpt-oss's sinks appended
    without subtracting the row max (the softmax shifts the row itself), the probabilities cast to v's dtype."""
    def fn(q, k, v, mask, sinks):
        key, value = repeat_kv(k, 2), repeat_kv(v, 2)
        s = torch.matmul(q.float(), key.float().transpose(2, 3)) * 0.25 + mask
        sink = sinks.reshape(1, -1, 1, 1).expand(*s.shape[:-1], 1)
        probs = F.softmax(torch.cat([s, sink], dim=-1), dim=-1)[..., :-1].to(value.dtype)
        return torch.matmul(F.dropout(probs, p=0.0, training=False), value)

    return fn


def _inkling2_layer():
    """HF Inkling 2's eager attention: a position bias and a sink logit per query row, each computed from the
    activations (here from q), the sinks appended as they are, the softmax of the joined scores in float32."""
    def fn(q, k, v, mask, sinks):
        key, value = repeat_kv(k, 2), repeat_kv(v, 2)
        bias = q[..., :1] - q[..., 1:2].transpose(-1, -2)  # (B, H, S, S), trained through
        row_sinks = (q[..., 2] + sinks.view(1, -1, 1)).unsqueeze(-1)  # (B, H, S) as a column
        s = torch.matmul(q, key.transpose(2, 3)) * 0.25 + bias + mask
        probs = F.softmax(torch.cat([s, row_sinks], dim=-1).float(), dim=-1)[..., :-1].to(q.dtype)
        return torch.matmul(F.dropout(probs, p=0.0, training=False), value)

    return fn


def _layer_inputs(grad):
    q = torch.randn(2, 4, 8, 16, requires_grad=grad)
    k, v = (torch.randn(2, 2, 8, 16, requires_grad=grad) for _ in range(2))
    mask = torch.zeros(2, 1, 8, 8).masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), torch.finfo(torch.float32).min)
    sinks = torch.randn(4, requires_grad=grad)
    return q, k, v, mask, sinks


def _granite_swa_layer(lse_dim=-1):
    """HF Granite-SWA's eager attention: the sinks applied after the softmax, each output row scaled by
    sigmoid(logsumexp(scores) - sink) in float32; or a variant that is not attention with sinks (the logsumexp over
    the queries)."""
    def fn(q, k, v, mask, sinks):
        key, value = repeat_kv(k, 2), repeat_kv(v, 2)
        s = torch.matmul(q, key.transpose(2, 3)) * 0.25 + mask
        lse = torch.logsumexp(s, dim=lse_dim)
        sink_scale = (lse - sinks.view(1, -1, 1)).to(torch.float32).sigmoid()
        p = F.dropout(F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype), p=0.0, training=False)
        out = torch.matmul(p, value)
        return out * sink_scale.unsqueeze(-1).to(out.dtype)

    return fn


def _mimo_full_layer(max_dim=-1):
    """HF MiMo-V2-Flash's full-attention layers: gpt-oss's spelling without sinks (the row max subtracted, softmax
    in the scores' dtype); or the max over the queries, which is not a shift of each row."""
    def fn(q, k, v, mask, sinks):
        key, value = repeat_kv(k, 2), repeat_kv(v, 2)
        s = torch.matmul(q, key.transpose(2, 3)) * 0.25 + mask
        s = s - s.max(dim=max_dim, keepdim=True).values
        probs = F.softmax(s, dim=-1, dtype=s.dtype)
        return torch.matmul(F.dropout(probs, p=0.0, training=False).to(value.dtype), value)

    return fn


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("layer", ["gpt_oss", "flint", "inkling2", "granite_swa", "mimo_full"])
def test_sinks_spellings_are_rewritten(layer, training):
    """gpt-oss's sinks, Flint's (no row max subtracted, float32 scores), Inkling 2's (per query row, with a trained
    position bias), Granite-SWA's (the output scaled by sigmoid(LSE - sink): attention with sinks, exactly) and
    MiMo's max-subtracted scores without sinks (plain attention), in inference and training: one attention_fwd (and
    attention_bwd), the values and every gradient (the sinks' included; MiMo's full layers leave them unused) as
    eager's."""
    torch.manual_seed(0)
    args = _layer_inputs(training)
    fn = {"gpt_oss": _gpt_oss_layer, "flint": _flint_layer, "inkling2": _inkling2_layer,
          "granite_swa": _granite_swa_layer, "mimo_full": _mimo_full_layer}[layer]()
    with torch.set_grad_enabled(training):
        out, counters, graphs = compile_and_run(fn, *args)
        want = fn(*args)
    assert counters["attention"] == 1
    assert "attention_fwd" in ops_in("\n".join(graphs)) and ("attention_bwd" in ops_in("\n".join(graphs))) == training
    torch.testing.assert_close(out, want, **FP32_TOL)
    if training:
        dy = torch.randn_like(out)
        leaves = [args[i] for i in (0, 1, 2, 4)]
        got_grads = torch.autograd.grad(out, leaves, dy, allow_unused=True)
        for got, exp in zip(got_grads, torch.autograd.grad(want, leaves, dy, allow_unused=True), strict=True):
            assert (got is None) == (exp is None)
            if exp is not None:
                torch.testing.assert_close(got, exp, **FP32_TOL)


@pytest.mark.parametrize("variant", [dict(last_column=False), dict(cat_dim=2)])
def test_other_concatenations_are_left_alone(variant):
    """Dropping another column than the sink's, or appending the sinks as a row, is not attention with sinks: the
    graph keeps eager's math (sinks_supported refuses what the traced pattern's ignored ints decided)."""
    torch.manual_seed(0)
    args = _layer_inputs(False)
    fn = _gpt_oss_layer(**variant)
    with torch.no_grad():
        out, counters, _ = compile_and_run(fn, *args)
        torch.testing.assert_close(out, fn(*args), **FP32_TOL)
    assert counters["attention"] == 0


@pytest.mark.parametrize("layer", [_granite_swa_layer(lse_dim=-2), _mimo_full_layer(max_dim=-2)],
                         ids=["lse_over_queries", "max_over_queries"])
def test_other_reductions_are_left_alone(layer):
    """A logsumexp or a max over the queries is not attention (with sinks): eager's math stays (softmax_over_last_dim
    and row_max_over_last_dim refuse what the traced pattern's ignored ints decided)."""
    torch.manual_seed(0)
    q, k, v, mask, sinks = _layer_inputs(False)
    with torch.no_grad():
        out, counters, _ = compile_and_run(layer, q, k, v, mask, sinks)
        torch.testing.assert_close(out, layer(q, k, v, mask, sinks), **FP32_TOL)
    assert counters["attention"] == 0


def test_sinks_op_under_torch_compile():
    """The public op with sinks traced by Dynamo (its autograd.Function around the custom ops) gives the eager
    call's output and gradients."""
    torch.manual_seed(0)
    q, k, v, sinks = _inputs(torch.float32, "cpu")
    fn = lambda q, k, v, s: inductor_conv.attention_with_sinks(q, k, v, s, is_causal=True, enable_gqa=True)  # noqa: E731
    out = compiled_fullgraph(fn)(q, k, v, sinks)
    want = fn(q, k, v, sinks)
    torch.testing.assert_close(out, want, **FP32_TOL)
    dy = torch.randn_like(out)
    for got, exp in zip(torch.autograd.grad(out, (q, k, v, sinks), dy), torch.autograd.grad(want, (q, k, v, sinks), dy)):
        torch.testing.assert_close(got, exp, **FP32_TOL)
