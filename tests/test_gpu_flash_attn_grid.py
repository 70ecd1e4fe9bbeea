"""FlashAttention's ``test_flash_attn_output`` grid (Dao-AILab/flash-attention ``tests/test_flash_attn.py``) against
``inductor_conv.attention`` and, for its soft-capping cases, ``inductor_conv.softcapped_attention``: GPU only.

Its shapes and its rule. Batch 4, 6 query heads (4 with soft-capping), inputs laid out (B, S, H, D) as FlashAttention
takes them and passed to our op as (B, H, S, D) views; MHA (6 KV heads), MQA (1) and GQA (2). Outputs and the
gradients of q, k and v must have, against a float64 reference, at most ``RTOL`` times the error of the same math
computed in the input dtype (FlashAttention's ``attention_ref(upcast=False, reorder_ops=True)``), plus its absolute
slack: twice the rounding of fp32 arithmetic on the reference's values (``ref + 0.3 - 0.3 - ref``; FlashAttention's
reference is fp32, ours float64, so the slack is computed in fp32), and 3e-4 more for soft-capped gradients. The
factors and slack are FlashAttention 3's (hopper/test_flash_attn.py): 2, and 3 with soft-capping, for outputs and
gradients alike. The float64 reference is ``inductor_conv.reference.attention.attention_ref``.

What differs from FlashAttention's test, and why:
* Causal masks are top-left aligned (key j for query i iff j <= i), as SDPA and our op define them; FlashAttention
  aligns them bottom-right when Sq != Sk. Both references use ours.
* Dropout: FlashAttention reads back its own keep mask from the kernel (``return_attn_probs``); ours is a pure
  function of a seed (docs/attention.md, Dropout replay), so the test draws the seed the op draws (the first random
  number after ``torch.manual_seed``) and evaluates the same mask with ``reference.attention_dropout``. The
  fraction dropped is checked as FlashAttention checks it (within 0.01 of p).
* No alibi, local windows, kv-packed inputs or deterministic flag: our op has none of these arguments.
* Head dims: every one of FlashAttention's (32, 40, 59, 64, 96, 111, 128, 160, 192, 224, 256) is within the op's
  16..256, and the kernels pad each to the next power of two (at most 256, which they support) or, for 96, run it as
  two tiles (64 + 32, Note [split head dim] in kernels/attn_math.py), so none is skipped.

The subset. FlashAttention's product is 11 head dims x 10 length pairs x 3 head layouts x 2 dtypes x 2 causal x 2
dropout x 2 soft-capping (a few thousand cases); each configuration (head dim, dtype, causal, dropout, cap, GQA
group) compiles its kernels once (Note [one kernel per configuration] in kernels/attention.py), seconds each, so the
whole product would not fit one device call. ``CASES`` takes every (head dim, length pair) once, 110 cases (each a new
shape), and walks the other factors in mixed radix along them: case n has head layout n mod 3, dtype (n div 3) mod
2, causal (n div 6) mod 2 and variant (n div 12) mod 3 (no dropout and no cap; dropout 0.17; cap 50, without dropout
as in FlashAttention). Every combination of head layout, dtype, causal and variant (36) occurs at least three times,
with different head dims and lengths, and every head dim and every length pair (Sq < Sk ragged and aligned, Sq > Sk,
equal, ragged by one either way, 2048) meets every head layout, both dtypes, causal and not, dropout and
soft-capping. Runs in one device call: ``pytest tests/test_gpu_flash_attn_grid.py -n 12``.

The grid holds our kernels to the rule (config.attention_cudnn off); the cases whose form the op hands to cuDNN by
default (Note [cuDNN route] in heuristics/attention.py) run again as the op runs them, through cuDNN.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from helpers import eager_dropout_seed, node_below_views
from torch.nn.attention import SDPBackend, sdpa_kernel

import inductor_conv
from inductor_conv.reference.attention import attention_ref
from inductor_conv.reference.attention_dropout import dropout_keep_mask

pytestmark = pytest.mark.gpu

HEAD_DIMS = (32, 40, 59, 64, 96, 111, 128, 160, 192, 224, 256)
SEQLENS = ((113, 203), (128, 217), (113, 211), (108, 256), (256, 512), (512, 256), (1024, 1024), (1023, 1024),
           (1024, 1023), (2048, 2048))
HEAD_LAYOUTS = ("mha", "mqa", "gqa")
DTYPES = (torch.float16, torch.bfloat16)
VARIANTS = ((0.0, 0.0), (0.17, 0.0), (0.0, 50.0))  # (dropout_p, softcap)
BATCH = 4
DEVICE = "cuda"


def _case(n: int):
    """(head dim, (Sq, Sk), head layout, dtype, causal, dropout_p, softcap) of case n (module docstring)."""
    dropout_p, softcap = VARIANTS[(n // 12) % 3]
    return (HEAD_DIMS[n % len(HEAD_DIMS)], SEQLENS[n % len(SEQLENS)], HEAD_LAYOUTS[n % 3], DTYPES[(n // 3) % 2],
            bool((n // 6) % 2), dropout_p, softcap)


CASES = [_case(n) for n in range(len(HEAD_DIMS) * len(SEQLENS))]


def _id(case) -> str:
    d, (sq, sk), layout, dtype, causal, p, cap = case
    return (f"d{d}-{sq}x{sk}-{layout}-{str(dtype).removeprefix('torch.')}-{'causal' if causal else 'full'}"
            f"{f'-p{p}' if p else ''}{f'-cap{cap:g}' if cap else ''}")


def _same_math_in_input_dtype(q, k, v, *, causal, softcap, keep, dropout_p):
    """FlashAttention's ``attention_ref(upcast=False, reorder_ops=True)`` with our top-left causal mask: every step
    in the inputs' dtype, k scaled instead of q. (B, H, S, D) views; GQA by repeating K/V per query head."""
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(G, dim=1), v.repeat_interleave(G, dim=1)
    scores = q @ (k / math.sqrt(q.shape[-1])).transpose(-2, -1)
    if softcap:
        scores = (scores / softcap).tanh() * softcap
    if causal:
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
    p = torch.softmax(scores, dim=-1).to(v.dtype)
    if keep is not None:
        p = p.masked_fill(~keep, 0.0) / (1 - dropout_p)
    return p @ v


def _slack(ref: torch.Tensor) -> float:
    """FlashAttention's absolute slack: twice the rounding of fp32 arithmetic on the reference's values."""
    ref = ref.float()
    return 2 * (ref + 0.3 - 0.3 - ref).abs().max().item()


def _op_seed(manual_seed: int, device) -> torch.Tensor:
    """The dropout seed the op draws right after ``torch.manual_seed(manual_seed)`` (Note [host dropout seed])."""
    return eager_dropout_seed(manual_seed, device)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_flash_attn_output(case, monkeypatch):
    """Our kernels (config.attention_cudnn off: the forms cuDNN would take otherwise run them too)."""
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)
    _check_case(case, cudnn=False)


# The grid's cases whose form the op hands to cuDNN by default (Note [cuDNN route] in heuristics/attention.py): no
# dropout or cap, a head dim that is a multiple of 8, causal only with Sq == Sk.
CUDNN_CASES = [c for c in CASES if c[5] == 0.0 and c[6] == 0.0 and c[0] % 8 == 0 and (not c[4] or c[1][0] == c[1][1])]


@pytest.mark.parametrize("case", CUDNN_CASES, ids=[_id(c) for c in CUDNN_CASES])
def test_flash_attn_output_cudnn_route(case, monkeypatch):
    """The op where the grid's form goes to cuDNN's fused attention (at any size: config.attention_cudnn_eager_min_work
    0; by default the grid's small calls run our kernels): the same rule."""
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", True)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", 0)
    _check_case(case, cudnn=True)


def _check_case(case, cudnn: bool):
    d, (seqlen_q, seqlen_k), layout, dtype, causal, dropout_p, softcap = case
    device = DEVICE
    torch.manual_seed(0)
    nheads = 6 if softcap == 0.0 else 4
    nheads_k = nheads if layout == "mha" else (1 if layout == "mqa" else 2)
    q = torch.randn(BATCH, seqlen_q, nheads, d, device=device, dtype=dtype)
    if softcap > 0:
        q = q * softcap  # scores reach the cap's range (FlashAttention's choice)
    q.requires_grad_(True)
    k = torch.randn(BATCH, seqlen_k, nheads_k, d, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(BATCH, seqlen_k, nheads_k, d, device=device, dtype=dtype, requires_grad=True)
    qh, kh, vh = (x.transpose(1, 2) for x in (q, k, v))  # (B, H, S, D) views of FlashAttention's layout

    torch.manual_seed(1)
    if softcap:
        out = inductor_conv.softcapped_attention(qh, kh, vh, softcap, is_causal=causal, enable_gqa=True)
    else:
        out = inductor_conv.attention(qh, kh, vh, dropout_p=dropout_p, is_causal=causal, enable_gqa=True)
    # which path ran: SDPA's cuDNN autograd node, or our eager op's
    node = node_below_views(out)
    assert ("Cudnn" in node) == cudnn, node
    keep = None
    if dropout_p > 0:
        keep = dropout_keep_mask(_op_seed(1, device), BATCH, nheads, seqlen_q, seqlen_k, dropout_p)
        dropped = 1 - keep.double().mean().item()
        assert abs(dropped - dropout_p) <= 0.01, dropped  # ~5e5+ draws: 0.01 is > 10 sigma

    leaves64 = [x.detach().double().requires_grad_(True) for x in (qh, kh, vh)]
    out_ref = attention_ref(*leaves64, dropout_mask=keep, dropout_p=dropout_p, is_causal=causal, softcap=softcap)
    leaves_pt = [x.detach().requires_grad_(True) for x in (qh, kh, vh)]
    out_pt = _same_math_in_input_dtype(*leaves_pt, causal=causal, softcap=softcap, keep=keep, dropout_p=dropout_p)

    rtol = 2 if softcap == 0.0 else 3
    err, err_pt = (out - out_ref).abs().max().item(), (out_pt - out_ref).abs().max().item()
    assert err <= rtol * err_pt + _slack(out_ref), (err, err_pt)

    g = torch.randn_like(out)
    grads = torch.autograd.grad(out, (qh, kh, vh), g)
    grads_ref = torch.autograd.grad(out_ref, leaves64, g.double())
    grads_pt = torch.autograd.grad(out_pt, leaves_pt, g)
    for name, got, ref, pt in zip("qkv", grads, grads_ref, grads_pt):
        err, err_pt = (got - ref).abs().max().item(), (pt - ref).abs().max().item()
        slack = _slack(ref) + (0 if softcap == 0 else 3e-4)
        assert err <= rtol * err_pt + slack, (f"d{name}", err, err_pt, slack)


# (B, Hq, Hkv, Sq, Sk): each dimension zero alone (Note [empty attention] in ops/attention.py), on the device.
EMPTY = {"batch": (0, 4, 2, 64, 96), "heads": (2, 0, 0, 64, 96), "queries": (2, 4, 2, 0, 96),
         "keys": (2, 4, 2, 64, 0)}


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("dims", list(EMPTY))
def test_empty_dims_give_sdpas_result(dims, compiled):
    """SDPA's output and gradients for zero-size dimensions, eagerly and through torch.compile with the rewrite on
    (the lowering of the op), bf16, causal with dropout."""
    B, Hq, Hkv, Sq, Sk = EMPTY[dims]
    q = torch.randn(B, Hq, Sq, 64, device=DEVICE, dtype=torch.bfloat16, requires_grad=True)
    k, v = (torch.randn(B, Hkv, Sk, 64, device=DEVICE, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))

    def fn(q, k, v):
        return inductor_conv.attention(q, k, v, dropout_p=0.1, is_causal=True, enable_gqa=True)

    torch._dynamo.reset()
    with inductor_conv.enabled((DEVICE,)):
        out = torch.compile(fn, fullgraph=True)(q, k, v) if compiled else fn(q, k, v)
        dout = torch.randn_like(out)
        grads = torch.autograd.grad(out, (q, k, v), dout)
    # SDPA's own math defines the result for every backend, on the CPU; torch 2.11's math path (CUDA and CPU) dies
    # of a floating point exception (Hq // Hkv) with zero heads under enable_gqa, which 0 = 0 heads do not need
    cq, ck, cv = (t.detach().cpu().requires_grad_() for t in (q, k, v))
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(cq, ck, cv, dropout_p=0.1, is_causal=True, enable_gqa=Hq != Hkv)
        want_grads = torch.autograd.grad(want, (cq, ck, cv), dout.cpu())
    want, want_grads = want.to(DEVICE), [g.to(DEVICE) for g in want_grads]
    assert out.shape == want.shape and torch.equal(out, want)
    for got, w in zip(grads, want_grads):
        assert got.shape == w.shape and torch.equal(got, w)
