"""Lowerings of the attention ops (lowerings/attention.py).

CPU: the template bodies are rendered with stand-ins for Inductor's hooks (def_kernel, stride, size, store_output)
and run in the Triton interpreter against the float64 reference, so their indexing is tested without a GPU; and
compiling on CPU keeps the op as a fallback kernel.  GPU (marked): Inductor picks the `inductor_conv_attention_*`
templates, results match float64, and the backward is deterministic.
"""
import importlib.util
import re
import sys

import jinja2
import pytest
import torch
import triton
import triton.language as tl
from helpers import assert_cudnn_switches_refuse, saved_lowerings

import inductor_conv.ops  # noqa: F401  (registers the custom ops)
from inductor_conv._compat import compiled_graph_caches_disabled, has_lowering, inductor_lowerings
from inductor_conv.heuristics.attention import SPLIT_HEAD_DIMS, head_dim_blocks
from inductor_conv.heuristics.attention import row_offsets as lowering_row_offsets
from inductor_conv.kernels.attn_common import score_scales
from inductor_conv.kernels.attention_decode import MAX_QUERIES
from inductor_conv.kernels.attn_mask_summary import mask_summary
from inductor_conv.lowerings import attention as lowering
from inductor_conv.reference.attention import attention_ref
from inductor_conv.reference.attention_dropout import dropout_keep_mask

# the cuDNN route's mechanics at head dims 64 and 80 (conftest.py); test_cudnn_head_dim_floor checks the floor itself
pytestmark = pytest.mark.usefixtures("cudnn_route_at_every_head_dim")

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
OPS = torch.ops.inductor_conv


def _randn(*shape, seed, dtype=torch.float32, device=DEVICE):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device=device, dtype=dtype)


def _ref_and_grads(q, k, v, do, mask=None, causal=False, keep=None, p=0.0, scale=None, mask_grad=False, softcap=0.0):
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    m = mask.detach().double().requires_grad_() if mask_grad else mask
    out = attention_ref(*leaves, attn_mask=m, dropout_mask=keep, dropout_p=p, is_causal=causal, scale=scale,
                        softcap=softcap)
    grads = torch.autograd.grad(out, leaves + ([m] if mask_grad else []), do.double())
    return out.detach(), grads


def test_register_is_idempotent():
    lowering.register()
    lowering.register()
    assert all(has_lowering(op) for op in lowering.OPS)


# ---------------------------------------------------------------- template bodies in the interpreter
class _Render:
    """Stand-ins for the TritonTemplate hooks: def_kernel becomes a plain @triton.jit signature, stride / size
    become kernel arguments, store_output a tl.store into OUT (contiguous)."""

    def __init__(self, constexprs):
        self.names, self.args, self.constexprs = [], [], constexprs

    def def_kernel(self, *names):
        self.names = list(names)
        return "<DEF_KERNEL>"

    def stride(self, name):
        args = [f"s_{name}_{d}" for d in range(4)]
        self.args += [a for a in args if a not in self.args]
        return ", ".join(args)

    def size(self, name, dim):
        self.args += [f"z_{name}_{dim}"] if f"z_{name}_{dim}" not in self.args else []
        return f"z_{name}_{dim}"

    def store_output(self, indices, val, mask, indent_width=4, val_shape=None):
        offset = " + ".join(f"({i}) * s_OUT_{d}" for d, i in enumerate(indices))
        return f"tl.store(OUT + {offset}, {val}.to(OUT.dtype.element_ty), mask={mask})"

    def module(self, name):
        env = jinja2.Environment(undefined=jinja2.StrictUndefined)
        source = env.from_string(lowering._load(name)).render(
            def_kernel=self.def_kernel, stride=self.stride, size=self.size, store_output=self.store_output,
            **self.constexprs)
        params = self.names + ["OUT"] + self.args + [f"s_OUT_{d}" for d in range(4)]
        params += [f"{c}: tl.constexpr" for c in self.constexprs]
        source = source.replace("<DEF_KERNEL>", "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                                f"def template_kernel({', '.join(params)}):")
        return source


def _load_rendered(source, tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.template_kernel


def _constexprs(D, mask_kind, causal, p, scale, block_m, block_n, masked_first=False, group=3, kv_first=False,
                pair=False, tma=False, softcap=0.0, split=False, D_V=None, mask_ranges=False, split_head=False,
                wide=False, row_offsets=None):
    qk_scale2, softcap_scale = score_scales(scale, softcap)  # Note [soft-capping]
    block_d, block_d2 = head_dim_blocks(D, split_head, any_dim=True)  # Note [split head dim]
    return dict(HEAD_DIM=D, BLOCK_D=block_d, BLOCK_D2=block_d2, HEAD_DIM_V=D_V or D,
                BLOCK_DV=max(16, triton.next_power_of_2(D_V or D)), BLOCK_M=block_m, BLOCK_N=block_n,
                MASK_KIND=mask_kind, IS_CAUSAL=causal, HAS_DROPOUT=p > 0, DOT_DTYPE=tl.float32, PRECISION="ieee",
                ACC_DTYPE=tl.float32, QK_SCALE2=qk_scale2, SCALE=scale, SOFTCAP=softcap > 0,
                SOFTCAP_SCALE=softcap_scale,
                DROPOUT_THRESHOLD=min(round(p * 65536), 65536), DROPOUT_SCALE=1.0 / (1.0 - p),
                CAUSAL_GROUP=group,  # 3 does not divide B * Hkv = 4: a partial last group
                MASKED_FIRST=masked_first,  # Note [masked tiles first]
                KV_FIRST=kv_first,  # the backward's order of program kinds
                CAUSAL_PAIR=pair,  # the forward's two row blocks a program (lowerings/attention.py)
                MASK_STAGES=2 if mask_kind else 0,  # the mask loops' stages (Note [mask loop stages]; no-op here)
                USE_TMA=tma,  # streamed tiles through tensor descriptors (Note [TMA loads])
                SPLIT_KV=split,  # dK and dV in programs of their own (Note [split dK/dV])
                EVEN=False,  # ragged lengths here (Note [even lengths])
                WIDE=wide,  # int64 products inside a slice (Note [int64 offsets] in kernels/attn_common.py)
                MASK_RANGES=mask_ranges,  # Note [mask ranges]
                # Q / dO tiles from integer offsets (Note [row offsets]): as the lowering picks it unless forced
                ROW_OFFSETS=lowering_row_offsets(mask_ranges, causal, bool(block_d2), tma, forced=row_offsets),
                INDEX_DTYPE=tl.int64 if p > 0 else tl.int32)  # Inductor's define: store_output's offsets


@pytest.mark.skipif(DEVICE != "cpu", reason="interpreter harness for the template bodies")
@pytest.mark.parametrize("causal,p,Sq,Sk,masked_first,group,kv_first,pair,tma,softcap,split,wide,rows", [
    (True, 0.0, 41, 45, False, 3, False, False, False, 0.0, False, False, False),
    (False, 0.3, 41, 45, False, 3, True, False, False, 0.0, False, False, False),
    (True, 0.0, 41, 110, False, 3, True, False, False, 0.0, False, False, False),
    (True, 0.3, 75, 75, True, 3, False, False, False, 0.0, False, False, True),
    (True, 0.3, 75, 75, True, 0, True, False, False, 0.0, False, False, False),
    (True, 0.0, 75, 110, True, 0, False, False, False, 0.0, False, False, False),
    (True, 0.3, 75, 75, True, 0, True, True, False, 0.0, False, False, False),
    (True, 0.0, 41, 110, False, 3, False, True, False, 0.0, False, False, False),
    (True, 0.3, 75, 75, True, 0, True, True, True, 0.0, False, True, False),
    (False, 0.0, 41, 110, False, 0, True, False, True, 0.0, False, False, False),
    (False, 0.3, 41, 45, False, 0, True, False, False, 2.0, False, False, True),
    (True, 0.0, 75, 75, True, 0, True, True, False, 2.0, False, False, False),
    (True, 0.3, 75, 75, True, 0, True, False, False, 2.0, True, True, True),
    (False, 0.0, 41, 110, False, 0, False, False, False, 0.0, True, True, False)])
def test_template_bodies_match_reference_in_interpreter(tmp_path, causal, p, Sq, Sk, masked_first, group, kv_first,
                                                        pair, tma, softcap, split, wide, rows):
    """Outputs start as NaN, so an entry a template never writes fails; Sq spans several dQ programs (32 rows each).
    Causal with Sk = 45 has as many key blocks as query blocks (the backward's longest-first launch order), with
    Sk = 110 two more (the plain order; the reordering is a bijection only for equal counts, or one more).
    masked_first: the backward's other visiting order (Note [masked tiles first]); Sq = 75 gives the dK/dV programs
    all three query ranges (band, whole tiles, ragged tail); group: the backward's launch group (0, the plain order,
    is the lowering's default with the masked tiles first); kv_first: every dK/dV program before any dQ program
    (the lowering's default; the mapping applies where the causal group does not); pair: forward programs of two
    causal row blocks (Sq = 75: an odd count of row blocks, the middle one alone); tma: the streamed tiles through
    tensor descriptors (head dim 24 of a 32-wide tile and the ragged ends: TMA's zero fill); softcap: scores capped
    (Note [soft-capping]; 2.0 against scaled scores of std ~1.5, so the cap bends most of them), the learned
    additive mask's gradient taken after the cap; split: dK and dV in programs of their own (Note [split dK/dV]),
    with and without KV_FIRST.  wide: the strides cast to int64 first (Note [int64 offsets] in
    kernels/attn_common.py; the same values).  rows: the backward's Q / dO tiles from integer offsets, forced (the
    lowering picks them for summarised masks only: Note [row offsets]), once with WIDE's int64 offsets."""
    B, Hq, Hkv, D, scale = 2, 4, 2, 24, 0.3
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8))  # descriptors' scratch
    q, k, v = (_randn(B, h, s, D, seed=i) for i, (h, s) in enumerate(((Hq, Sq), (Hkv, Sk), (Hkv, Sk))))
    bias = _randn(1, Hq, 1, Sk, seed=3)
    mask4 = bias.expand(B, Hq, Sq, Sk)
    seed = torch.tensor([77], dtype=torch.int64)
    do = _randn(B, Hq, Sq, D, seed=4)

    cfg = _constexprs(D, 2, causal, p, scale, 32, 16, pair=pair, tma=tma, softcap=softcap, wide=wide)
    fwd = _load_rendered(_Render(cfg).module("inductor_conv_attention_fwd"), tmp_path,
                         f"fwd_{causal}_{p}_{Sq}_{Sk}_{masked_first}_{group}_{pair}_{tma}_{softcap}_{wide}")
    nan = float("nan")
    out, lse = torch.full((B, Hq, Sq, D), nan), torch.full((B, Hq, Sq), nan)
    # argument order: def_kernel names, OUT, stride / size args in first-use order, OUT strides, constexprs
    no_summary = torch.zeros(1, dtype=torch.int32)  # ROWS / COLS without MASK_RANGES
    fwd[lowering.attention_fwd_grid(B, Hq, Sq, D, cfg)](  # the lowering's own grid (causal pairs: half the programs)
        q, k, v, mask4, seed, lse, no_summary, out, *q.stride(), *k.stride(), *v.stride(), *mask4.stride(),
        Hq, Hkv, Sq, Sk, *out.stride(), **cfg)
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p > 0 else None
    ref, (dq_r, dk_r, dv_r, dm_r) = _ref_and_grads(q, k, v, do, mask4, causal, keep, p, scale, mask_grad=True,
                                                   softcap=softcap)
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=2e-5)  # fp32 math, as test_kernels_attention

    cfg = _constexprs(D, 2, causal, p, scale, 16, 32, masked_first, group, kv_first, tma=tma,
                      softcap=softcap, split=split, wide=wide, row_offsets=rows) | dict(STORE_DS=True)
    bwd = _load_rendered(_Render(cfg).module("inductor_conv_attention_bwd"), tmp_path,
                         f"bwd_{causal}_{p}_{Sq}_{Sk}_{masked_first}_{group}_{kv_first}_{tma}_{softcap}_{split}_{wide}"
                         f"_{rows}")
    delta = (do * out).sum(-1)
    dq, dk, dv, ds = (torch.full_like(t, nan) for t in (q, k, v, torch.empty(B, Hq, Sq, Sk)))
    bwd[lowering.attention_bwd_grid(B, Hq, Sq, D, Hkv, Sk, cfg)](
        q, k, v, mask4, seed, do, out, lse, delta, dq, dv, ds, no_summary, no_summary, dk,
        *q.stride(), *k.stride(), *v.stride(), *mask4.stride(), *do.stride(), *dq.stride(), *dv.stride(),
        Hq, Hkv, Sq, Sk, *dk.stride(), **cfg)
    if causal:  # dS is written on and below the band only: the lowering sends causal + mask grad to the eager op
        allowed = torch.ones(Sq, Sk, dtype=torch.bool).tril()
        ds, dm_r = ds[..., allowed], dm_r[..., allowed]
    for name, got, want in (("dq", dq, dq_r), ("dk", dk, dk_r), ("dv", dv, dv_r), ("dmask", ds, dm_r)):
        torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=2e-5, msg=lambda m: f"{name}: {m}")


@pytest.mark.skipif(DEVICE != "cpu", reason="interpreter harness for the template bodies")
@pytest.mark.parametrize("D,Dv,blocks,causal,p,split,ranges", [
    (24, 16, (32, 0), True, 0.3, False, False), (24, 16, (32, 0), False, 0.0, True, False),
    (24, 16, (32, 0), False, 0.3, False, True), (24, 24, (32, 0), False, 0.3, True, True),
    (48, 48, (32, 16), True, 0.3, False, False), (40, 16, (32, 16), False, 0.0, True, False),
    (40, 40, (32, 16), True, 0.0, False, False), (48, 16, (32, 16), False, 0.3, False, True)])
def test_template_bodies_with_other_head_dims(tmp_path, D, Dv, blocks, causal, p, split, ranges):
    """Both templates against float64 (O, every gradient, and the mask's where the lowering asks it), GQA, ragged
    lengths, an additive mask, with head dims the plain cases do not have.  Note [value head dim]: v's head dim 16
    against q's and k's 24 or 40 / 48 (MLA's shape of the problem).  Note [split head dim]: q/k head dims 48
    (32 + 16 tiles, no padding) and 40 (32 + 16, the second part padded); the backward then writes dK as a mutated
    input and dV through store_output (the lowering's dv_out).  split: dK and dV in programs of their own (Note
    [split dK/dV]).  ranges: Note [mask ranges], with a mask that hides the first 16 keys from every row and a band
    below the diagonal (the summaries, kernels/attn_mask_summary.py, read as the lowering passes them), without the
    mask's gradient, as the lowering does."""
    B, Hq, Hkv, Sq, Sk, scale = 2, 4, 2, 41, 45, 0.3
    q, k, v = _randn(B, Hq, Sq, D, seed=0), _randn(B, Hkv, Sk, D, seed=1), _randn(B, Hkv, Sk, Dv, seed=2)
    mask4 = _randn(1, Hq, 1, Sk, seed=3).expand(B, Hq, Sq, Sk)
    if ranges:  # the first key tile hidden from every row (-inf), a band below the diagonal otherwise
        i, j = torch.arange(Sq)[:, None], torch.arange(Sk)[None, :]
        mask4 = torch.where((j >= 16) & (j <= i + 4), mask4, float("-inf"))
    seed = torch.tensor([77], dtype=torch.int64)
    do = _randn(B, Hq, Sq, Dv, seed=4)
    nan = float("nan")
    cfg = _constexprs(D, 2, causal, p, scale, 32, 16, D_V=Dv, split_head=True, mask_ranges=ranges)
    assert (cfg["BLOCK_D"], cfg["BLOCK_D2"]) == blocks, cfg
    assert cfg["ROW_OFFSETS"] == (ranges and not causal and not blocks[1])  # Note [row offsets]: the ranges cases
    name = f"{D}_{Dv}_{causal}_{p}_{split}_{ranges}"
    fwd = _load_rendered(_Render(cfg).module("inductor_conv_attention_fwd"), tmp_path, f"hd_fwd_{name}")
    out, lse = torch.full((B, Hq, Sq, Dv), nan), torch.full((B, Hq, Sq), nan)
    rows, cols = (t.expand(B, Hq, *t.shape[2:]) for t in mask_summary(mask4, True))  # Note [mask ranges]
    summary_strides = (*rows.stride(), *cols.stride()) if ranges else ()
    fwd[lowering.attention_fwd_grid(B, Hq, Sq, D, cfg)](
        q, k, v, mask4, seed, lse, rows, out, *q.stride(), *k.stride(), *v.stride(), *mask4.stride(),
        *summary_strides[:4], Hq, Hkv, Sq, Sk, *out.stride(), **cfg)
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p > 0 else None
    ref, (dq_r, dk_r, dv_r, dm_r) = _ref_and_grads(q, k, v, do, mask4, causal, keep, p, scale, mask_grad=True)
    torch.testing.assert_close(out.double(), ref, atol=2e-5, rtol=2e-5)
    cfg = _constexprs(D, 2, causal, p, scale, 16, 32, True, 0, True, split=split, D_V=Dv,
                      split_head=True, mask_ranges=ranges) | dict(STORE_DS=not ranges)
    bwd = _load_rendered(_Render(cfg).module("inductor_conv_attention_bwd"), tmp_path, f"hd_bwd_{name}")
    delta = (do * out).sum(-1)
    dq, dk, dv, ds = (torch.full_like(t, nan) for t in (q, k, v, torch.empty(B, Hq, Sq, Sk)))
    # def_kernel's DV (mutated), OUT = dK; with a split head dim DK in DV's place, OUT = dV
    mutated, output = (dk, dv) if cfg["BLOCK_D2"] else (dv, dk)
    bwd[lowering.attention_bwd_grid(B, Hq, Sq, D, Hkv, Sk, cfg)](
        q, k, v, mask4, seed, do, out, lse, delta, dq, mutated, ds, rows, cols, output,
        *q.stride(), *k.stride(), *v.stride(), *mask4.stride(), *summary_strides, *do.stride(), *dq.stride(),
        *mutated.stride(), Hq, Hkv, Sq, Sk, *output.stride(), **cfg)
    if causal:  # dS is written on and below the band only: the lowering sends causal + mask grad to the eager op
        allowed = torch.ones(Sq, Sk, dtype=torch.bool).tril()
        ds, dm_r = ds[..., allowed], dm_r[..., allowed]
    checks = (("dq", dq, dq_r), ("dk", dk, dk_r), ("dv", dv, dv_r)) + ((("dmask", ds, dm_r),) if not ranges else ())
    for name, got, want in checks:
        torch.testing.assert_close(got.double(), want, atol=2e-5, rtol=2e-5, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("causal,pair,split", [(False, False, False), (True, False, True), (True, True, False)])
def test_grids_print_for_dynamic_shapes(causal, pair, split):
    """With symbolic sizes Inductor prints each grid into the wrapper code; its printer refuses sympy's floor(a / b)
    (the backward grid's Hq // Hkv did that: every dynamic-shape GQA backward failed to compile on the GPU).  The
    printed grid must also equal the integer grid at concrete sizes."""
    import sympy

    from inductor_conv._compat import wrapper_expr

    meta = dict(BLOCK_M=128, BLOCK_N=64, IS_CAUSAL=causal, CAUSAL_PAIR=pair, SPLIT_KV=split)
    B, Hq, Hkv, Sq, Sk, D = sizes = sympy.symbols("B Hq Hkv Sq Sk D", integer=True, positive=True)
    values = dict(zip(sizes, (3, 12, 4, 385, 129, 64)))
    for grid, args in ((lowering.attention_fwd_grid, (B, Hq, Sq, D)),
                       (lowering.attention_bwd_grid, (B, Hq, Sq, D, Hkv, Sk))):
        printed = [wrapper_expr(x) for x in grid.sympy_call(*args, meta)]
        evaluated = tuple(eval(x, {**{str(k): v for k, v in values.items()}}) for x in printed)
        assert evaluated == grid(*(values[a] for a in args), meta), (grid, printed)


@pytest.mark.parametrize("module", ["attention", "causal_conv1d_silu"])
def test_register_replaces_a_lowering_inductor_installed(module):
    """Compiling an op before enable() leaves Inductor's own fallback lowering registered; register() must replace
    it (it checked only that *a* lowering existed, so the templates were silently never used)."""
    mod = importlib.import_module(f"inductor_conv.lowerings.{module}")
    with saved_lowerings(mod.OPS):
        for op in mod.OPS:
            inductor_lowerings[op] = lambda *args, **kwargs: None  # stands for Inductor's fallback lowering
        mod.register()
        for op in mod.OPS:
            assert getattr(inductor_lowerings[op], "_inductor_conv", False) is True, op


@pytest.mark.skipif(DEVICE != "cpu", reason="the CPU path of the lowering")
def test_cpu_compile_keeps_the_fallback_kernel():
    from torch._inductor.utils import run_and_get_code

    lowering.register()
    q, k, v = (_randn(1, 2, 9, 16, seed=i) for i in range(3))
    fn = lambda q, k, v: OPS.attention_fwd(q, k, v, None, 0.0, True, 0.25, None)[0]  # noqa: E731
    torch._dynamo.reset()
    with compiled_graph_caches_disabled():
        out, code = run_and_get_code(torch.compile(fn, fullgraph=True), q, k, v)
    assert "inductor_conv.attention_fwd" in "\n".join(code)
    assert "attn_fwd_rows" not in "\n".join(code)
    torch.testing.assert_close(out, fn(q, k, v))



class _ConformerLike(torch.nn.Module):
    """Attention with a bias, its output projection and a residual, then a pointwise conv1d over the channels: the
    order of a Conformer layer, in which Inductor's layout optimisation reaches the attention from the conv."""

    def __init__(self, C=32, H=2):
        super().__init__()
        self.H = H
        self.q, self.k, self.v, self.out = (torch.nn.Linear(C, C) for _ in range(4))
        self.conv = torch.nn.Conv1d(C, 2 * C, 1)

    def forward(self, x, bias):
        B, S, C = x.shape
        q, k, v = (p(x).view(B, S, self.H, C // self.H).transpose(1, 2) for p in (self.q, self.k, self.v))
        w = torch.matmul(q, k.transpose(2, 3)) * q.shape[-1] ** -0.5 + bias
        o = torch.matmul(torch.softmax(w, dim=-1), v).transpose(1, 2).reshape(B, S, C)
        return self.conv((x + self.out(o)).transpose(1, 2))


@pytest.mark.skipif(DEVICE != "cpu", reason="the CPU decides layout optimisation for every graph with a conv")
@pytest.mark.parametrize("stops", [True, False])
def test_channels_last_stops_at_the_attention(monkeypatch, stops):
    """Note [channels-last stops at our ops] (_compat.py): in a graph with a convolution, q, k, v, the bias and the
    output that our backward op reads keep their own layouts (last dim unit-stride), where Inductor's layout
    optimisation alone gives them channels-last strides (the head dim fastest: what the off switch shows)."""
    from inductor_conv import config
    from inductor_conv._compat import inductor_config

    monkeypatch.setattr(config, "channels_last_stops", stops)
    model = _ConformerLike()
    x = _randn(2, 12, 32, seed=0).requires_grad_()
    bias = _randn(2, 2, 12, 12, seed=1).requires_grad_()
    seen = []
    torch._dynamo.reset()
    with (inductor_config.patch(post_grad_custom_pre_pass=seen.append), compiled_graph_caches_disabled(),
          inductor_conv.enabled(("cpu",))):
        out = torch.compile(model, fullgraph=True)(x, bias)
        grads = torch.autograd.grad(out.square().sum(), (x, bias))
    eager = model(x, bias)
    torch.testing.assert_close(out, eager)
    for got, want in zip(grads, torch.autograd.grad(eager.square().sum(), (x, bias))):
        torch.testing.assert_close(got, want)
    (bwd,) = [n for g in seen for n in g.nodes if n.target is OPS.attention_bwd.default]
    read = [a.meta["val"] for a in bwd.args[1:7] if isinstance(a, torch.fx.Node) and a.op == "placeholder"]
    assert len(read) == 6  # q, k, v, the bias, O and LSE, saved by the forward graph
    four_d = [t for t in read if t.dim() == 4]
    assert all((t.stride(-1) == 1) == stops for t in four_d), [t.stride() for t in four_d]


# ---------------------------------------------------------------- GPU: the templates under torch.compile
class _Node:
    """What _use_cudnn reads of an IR node: dtype, size, layout (stride, offset), device."""

    def __init__(self, size, dtype=torch.bfloat16, stride=None, offset=0):
        import types

        self.size = list(size)
        self.dtype = dtype
        if stride is None:
            stride = [1]
            for n in reversed(size[1:]):
                stride.insert(0, stride[0] * n)
        self.layout = types.SimpleNamespace(stride=list(stride), offset=offset)

    def get_size(self):
        return self.size

    def get_dtype(self):
        return self.dtype

    def get_layout(self):
        return self.layout

    def get_device(self):
        return torch.device("cuda", 0)


def test_cudnn_head_dim_floor(cudnn_gate, monkeypatch):
    """Compiled graphs take cuDNN's route from head dim 128 (measured no faster below: heuristics/attention.py)."""
    from inductor_conv.heuristics import attention as heuristics

    monkeypatch.setattr(heuristics, "CUDNN_COMPILED_MIN_HEAD_DIM", 128)
    gate, _ = cudnn_gate
    for head_dim, admitted in [(64, False), (120, False), (128, True), (256, True)]:
        assert gate(*[_Node((2, 4, 128, head_dim)) for _ in range(3)]) == admitted, head_dim


@pytest.fixture
def cudnn_gate(monkeypatch):
    """_use_cudnn on CPU: a real Inductor size-variable allocator over a fresh shape env, and a pretend sm90 GPU with
    cuDNN's SDPA backend on.  Returns (gate, symbol): gate(q, k, v, mask=None, p=0.0, causal=False)."""
    from torch._dynamo.source import ConstantSource
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from inductor_conv._compat import V

    env = ShapeEnv(duck_shape=False)  # two symbols with equal hints stay two symbols (not provably equal)
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", True)
    graph = type("Graph", (), {"sizevars": SizeVarAllocator(env)})()

    def gate(q, k, v, mask=None, p=0.0, causal=False):
        with V.set_graph_handler(graph):
            return lowering._use_cudnn(q, k, v, mask, p, causal)

    return gate, lambda name, hint: env.create_symbol(hint, ConstantSource(name))


def test_summary_shapes_agree_across_ceiling_divisions():
    """The saved summary's lowering keeps its kernels in the graph under dynamic shapes (Note [summaries saved for
    the backward]): its entry counts, CeilDiv(S, n), and the fake impl's, -((-S) // n), are the same integer but not
    provably equal to sympy, so the check compares the mask lengths they count from; a broadcast dim that one side
    kept and the other did not, or another length, still sends the op to its fallback kernel."""
    from torch._dynamo.source import ConstantSource
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.utils._sympy.functions import FloorDiv

    from inductor_conv._compat import ceil_div

    env = ShapeEnv(duck_shape=False)
    sizevars = SizeVarAllocator(env)
    s, t = (env.create_symbol(300, ConstantSource(name)) for name in ("s", "t"))
    ours = [[1, 1, ceil_div(s, 16), 4], [1, 1, ceil_div(s, 64), 4]]
    fake = [[1, 1, -FloorDiv(-s, 16), 4], [1, 1, -FloorDiv(-s, 64), 4]]
    assert not sizevars.statically_known_equals(ours[0][2], fake[0][2])  # what the check works around
    agree = lowering._summary_shapes_agree
    assert agree([2, 1, s, s], ours, [2, 1, s, s], fake, sizevars)
    assert not agree([2, 1, s, s], ours, [2, 1, t, s], fake, sizevars)  # another query length
    assert not agree([2, 1, s, s], ours, [2, 1, s, s], [[2, 1, -FloorDiv(-s, 16), 4], fake[1]], sizevars)
    assert not env.guards  # decided without a guard


def test_causal_group_follows_the_length(monkeypatch):
    """The causal launch order's group of (b, h) slices: 8 while a group's K/V stay small (S2048 D128, S1024 D64),
    fewer for long keys (S8192 D128: 2, as measured best), never below 1; a symbolic length uses its hint."""
    from torch._dynamo.source import ConstantSource
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from inductor_conv._compat import V

    env = ShapeEnv()
    with V.set_graph_handler(type("Graph", (), {"sizevars": SizeVarAllocator(env)})()):
        for S, D, want in [(2048, 128, 8), (1024, 64, 8), (4096, 128, 4), (8192, 128, 2), (32768, 128, 1),
                           (16, 16, 8)]:
            assert lowering._causal_group(_Node((1, 1, S, D)), D) == want, (S, D)
        s_k = env.create_symbol(8192, ConstantSource("s_k"))
        assert lowering._causal_group(_Node((1, 1, s_k, 128)), 128) == 2
        assert not env.guards  # a heuristic: no guard, so no recompile for another length
        # as the lowerings pass it to the templates (by key length, whatever the query length)
        q, k = _Node((2, 4, 2048, 128)), _Node((2, 4, 8192, 128))
        assert lowering._options(q, k, k, None, 0.1, True, 0.125)[0]["CAUSAL_GROUP"] == 2
        # the backward groups only with the masked tiles last (config.attention_causal_bwd_group's default)
        assert lowering._options(q, k, k, None, 0.1, True, 0.125, backward=True)[0]["CAUSAL_GROUP"] == 0
        # every dK/dV program first only under GQA (config.attention_bwd_kv_first); the forward has no such order
        assert lowering._options(q, k, k, None, 0.1, True, 0.125, backward=True)[0]["KV_FIRST"] is False
        assert lowering._options(q, _Node((2, 2, 8192, 128)), _Node((2, 2, 8192, 128)), None, 0.1, True, 0.125,
                                 backward=True)[0]["KV_FIRST"] is True
        assert "KV_FIRST" not in lowering._options(q, _Node((2, 2, 8192, 128)), _Node((2, 2, 8192, 128)), None, 0.1, True, 0.125)[0]
        monkeypatch.setattr(inductor_conv.config, "attention_masked_first", False)
        assert lowering._options(q, k, k, None, 0.1, True, 0.125, backward=True)[0]["CAUSAL_GROUP"] == 2


def test_cudnn_gate_admits_exactly_the_forms_cudnn_computes_as_we_do(cudnn_gate, monkeypatch):
    """The lowerings' cuDNN choice (GPU-only in use, so checked here on CPU condition by condition): every refusal
    is one changed property of an admitted form."""
    gate, symbol = cudnn_gate
    B, H, S, D = 2, 4, 128, 64
    qkv = lambda **kw: [_Node((B, H, S, D), **kw) for _ in range(3)]  # noqa: E731
    assert gate(*qkv())
    assert gate(*qkv(), causal=True)  # Sq == Sk
    assert gate(_Node((B, 8, S, D)), _Node((B, 2, S, D)), _Node((B, 2, S, D)), causal=True)  # GQA 4
    assert gate(*qkv(dtype=torch.float16))
    assert not gate(*qkv(dtype=torch.float32))
    assert not gate(*qkv(), mask=_Node((B, 1, S, S)))
    assert not gate(*qkv(), p=0.1)
    short_q = _Node((B, H, 64, D))
    assert gate(short_q, *qkv()[1:])  # Sq != Sk, not causal
    assert not gate(short_q, *qkv()[1:], causal=True)  # top-left vs bottom-right band: our template
    assert not gate(*qkv()[:1], _Node((B, H, 1, D)), _Node((B, H, 1, D)))  # a single key: SDPA refuses cuDNN
    for head_dim in (68, 264):  # not a multiple of 8, above 256
        assert not gate(*[_Node((B, H, S, head_dim)) for _ in range(3)])
    for head_dim in (72, 136, 256):
        assert gate(*[_Node((B, H, S, head_dim)) for _ in range(3)])
    # MLA's value head dim of its own: our templates (cuDNN's call measured slower by wall time: _use_cudnn)
    assert not gate(_Node((B, H, S, 192)), _Node((B, H, S, 192)), _Node((B, H, S, 128)))
    q, k, v = qkv()
    assert not gate(_Node((B, H, S, D), offset=4), k, v)  # 16-byte rows: offset a multiple of 8 elements
    assert not gate(q, k, _Node((B, H, S, D), stride=(H * S * D, S * D, 1, S)))  # head dim not unit-stride
    assert gate(q, _Node((B, H, S, D), stride=(H * S * D, D, H * D, 1)), v)  # (B, S, H, D) memory: fine
    assert_cudnn_switches_refuse(monkeypatch, lambda: gate(q, k, v))
    # dynamic shapes: causal needs Sq == Sk provably, not by the current hints
    s0, s1 = symbol("s0", 128), symbol("s1", 128)
    sym = lambda n: _Node((B, H, n, D), stride=(H * n * D, n * D, D, 1))  # noqa: E731
    assert gate(sym(s0), sym(s0), sym(s0), causal=True)
    assert not gate(sym(s0), sym(s1), sym(s1), causal=True)
    # cuDNN fails from 65536 batch rows or heads on: a symbolic batch is admitted by its hint, under a guard
    big, small = symbol("b_big", 70000), symbol("b_small", 3)
    batch = lambda b: _Node((b, H, S, D), stride=(H * S * D, S * D, D, 1))  # noqa: E731
    assert gate(batch(small), batch(small), batch(small))
    assert not gate(batch(big), batch(big), batch(big))
    assert not gate(*[_Node((B, 70000, S, D)) for _ in range(3)])


def _compiled_fwd_bwd(causal, p, q, k, v, mask, seed, do, mask_grad=False, dynamic=False, softcap=0.0):
    """Compile the forward op, differentiate outside (AOTAutograd compiles the backward op); return the outputs
    and all code Inductor generated on the way."""
    from torch._inductor.utils import run_and_get_code

    from inductor_conv.ops.attention import softcap_kwargs

    lowering.register()
    torch._dynamo.reset()
    fwd = torch.compile(lambda q, k, v, mask, seed: OPS.attention_fwd(q, k, v, mask, p, causal, 0.125, seed,
                                                                      **softcap_kwargs(softcap))[0],
                        fullgraph=True, dynamic=dynamic)

    def run():
        out = fwd(q, k, v, mask, seed)
        return (out, *torch.autograd.grad(out, [q, k, v] + ([mask] if mask_grad else []), do))

    with compiled_graph_caches_disabled():
        result, code = run_and_get_code(run)
    return result, "\n".join(code)


def _assert_16bit_close(got, want):
    """16-bit storage: O and every gradient are rounded once (2^-8 relative) and P / dS are rounded to 16 bits
    before the second products, so compare at 2e-2 of each tensor's largest entry."""
    for name, g, w in zip(("out", "dq", "dk", "dv", "dmask"), got, want):
        err = (g.double() - w).abs().max().item()
        assert err <= 2e-2 * w.abs().max().item() + 1e-3, f"{name}: {err}"


def _modules(code):
    """(forward, backward) generated modules of _compiled_fwd_bwd's code."""
    return tuple(code.split("# AOT ID")[1:3])


def _calls(module, helper):
    """Whether a generated module *calls* an attn_math helper: every template appends all of attn_math's
    definitions, so a bare name test cannot tell which template ran."""
    return re.search(rf"(?<!def ){helper}\(", module) is not None


@pytest.mark.gpu
@pytest.mark.parametrize("dynamic", [False, True])
def test_causal_pairs_are_bit_identical_to_single_blocks(monkeypatch, dynamic):
    """Head dim 64 causal runs the forward template in pairs of row blocks (an odd count here, 850 rows in blocks of
    128: the middle block alone); forcing pairs off changes which program computes a block, not one bit.  Dynamic:
    the paired grid and the GQA backward grid with symbolic lengths and heads; checked against fp64 too."""
    B, Hq, Hkv, S, D = 2, 4, 2, 850, 64
    q, k, v = (_randn(B, h, S, D, seed=i, dtype=torch.bfloat16).requires_grad_()
               for i, h in enumerate((Hq, Hkv, Hkv)))
    do = _randn(B, Hq, S, D, seed=6, dtype=torch.bfloat16)
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)  # this form would run cuDNN's kernels
    results = []
    for pair in (None, False):  # the tile's default (pairs), then one block a program
        monkeypatch.setattr(inductor_conv.config, "attention_causal_pair", pair)
        result, code = _compiled_fwd_bwd(True, 0.0, q, k, v, None, None, do, dynamic=dynamic)
        forward = _modules(code)[0]
        assert _calls(forward, "attn_fwd_rows") and ("n_units = " in forward) == (pair is None)
        results.append(result)
    for name, a, b in zip(("out", "dq", "dk", "dv"), *results):
        assert torch.equal(a, b), name
    ref, ref_grads = _ref_and_grads(q, k, v, do, None, True, None, 0.0, 0.125)
    _assert_16bit_close(results[0], (ref, *ref_grads))


def _uses_tma(module) -> bool:
    return re.search(r"USE_TMA\s*:\s*tl.constexpr\s*=\s*True", module) is not None


@pytest.mark.gpu
@pytest.mark.parametrize("causal,p,mask_kind,Hq,Hkv,Sq,Sk,D,dynamic", [
    (True, 0.1, "bool", 8, 2, 333, 333, 80, False), (False, 0.0, "bias", 4, 4, 300, 517, 128, False),
    (True, 0.0, None, 4, 2, 850, 850, 64, True)])
def test_tma_loads_are_bit_identical_to_pointer_loads(monkeypatch, causal, p, mask_kind, Hq, Hkv, Sq, Sk, D, dynamic):
    """Note [TMA loads]: switched on, both templates stream their tiles through tensor descriptors (padded head dims
    and ragged ends read TMA's zero fill), which changes no bit against the default pointer loads.  A layout TMA
    cannot read (a head dim of 20 bf16, 40 bytes a row) keeps the pointers, and so does a head dim that runs as two
    tiles (80 = 64 + 16, Note [split head dim]: a descriptor takes one); the others run padded here."""
    B = 2
    split = (D, D) in SPLIT_HEAD_DIMS
    monkeypatch.setattr(inductor_conv.config, "attention_split_head_dim", False)
    q, k, v = (_randn(B, h, s, D, seed=i, dtype=torch.bfloat16).requires_grad_()
               for i, (h, s) in enumerate(((Hq, Sq), (Hkv, Sk), (Hkv, Sk))))
    do = _randn(B, Hq, Sq, D, seed=6, dtype=torch.bfloat16)
    mask = None
    if mask_kind == "bias":
        mask = _randn(1, Hq, 1, Sk, seed=5, dtype=torch.bfloat16).expand(B, Hq, Sq, Sk)
    elif mask_kind == "bool":
        mask = (_randn(B, 1, Sq, Sk, seed=5) > -1.0).expand(B, Hq, Sq, Sk)
    seed = torch.tensor([123], dtype=torch.int64, device=DEVICE) if p > 0 else None
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)
    results = []
    for tma in (True, False):
        monkeypatch.setattr(inductor_conv.config, "attention_tma", tma)
        result, code = _compiled_fwd_bwd(causal, p, q, k, v, mask, seed, do, dynamic=dynamic)
        forward, backward = _modules(code)
        assert _uses_tma(forward) == _uses_tma(backward) == tma, tma
        results.append(result)
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p > 0 else None
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, causal, keep, p, 0.125)
    for result in results:  # each against float64 first: a failure below is then about bits, not a wrong answer
        _assert_16bit_close(result, (ref, *ref_grads))
    for name, a, b in zip(("out", "dq", "dk", "dv"), *results):
        assert torch.equal(a, b), f"{name}: max |TMA - pointers| {(a.double() - b.double()).abs().max().item()}"
    q20, k20, v20 = (t[..., :20].detach().contiguous().requires_grad_() for t in (q, k, v))
    monkeypatch.setattr(inductor_conv.config, "attention_tma", True)
    _, code = _compiled_fwd_bwd(causal, p, q20, k20, v20, mask, seed, do[..., :20].contiguous(), dynamic=dynamic)
    assert not any(_uses_tma(m) for m in _modules(code))
    if split:
        monkeypatch.setattr(inductor_conv.config, "attention_split_head_dim", True)
        result, code = _compiled_fwd_bwd(causal, p, q, k, v, mask, seed, do, dynamic=dynamic)
        assert not any(_uses_tma(m) for m in _modules(code))
        _assert_16bit_close(result, (ref, *ref_grads))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal,p,mask_kind", [(True, 0.0, None), (False, 0.0, "bias"), (False, 0.2, "bool"),
                                                (True, 0.0, "bias")])
def test_compiled_templates_match_fp64(dtype, causal, p, mask_kind):
    """Causal with a mask that needs its gradient (a direct op call) takes the eager op's backward (the template
    leaves dS above the band unwritten); every other case runs both templates."""
    B, Hq, Hkv, Sq, Sk, D = 2, 8, 2, 333, 517, 80
    q, k, v = (_randn(B, h, s, D, seed=i, dtype=dtype).requires_grad_()
               for i, (h, s) in enumerate(((Hq, Sq), (Hkv, Sk), (Hkv, Sk))))
    mask = None
    if mask_kind == "bias":  # a learned bias broadcast over batch and query rows
        mask = _randn(1, Hq, 1, Sk, seed=5, dtype=dtype).expand(B, Hq, Sq, Sk).detach().requires_grad_()
    elif mask_kind == "bool":
        mask = (_randn(B, 1, Sq, Sk, seed=5) > -1.0).expand(B, Hq, Sq, Sk)
    seed = torch.tensor([123], dtype=torch.int64, device=DEVICE) if p > 0 else None
    do = _randn(B, Hq, Sq, D, seed=6, dtype=dtype)
    got, code = _compiled_fwd_bwd(causal, p, q, k, v, mask, seed, do, mask_grad=mask_kind == "bias")
    # Inductor renames template kernels triton_tem_fused_*: a template shows through the attn_math helper it calls
    forward, backward = _modules(code)
    assert _calls(forward, "attn_fwd_rows")
    assert _calls(backward, "attn_bwd_dkdv_cols") == (not (causal and mask_kind == "bias"))
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p > 0 else None
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, causal, keep, p, 0.125, mask_grad=mask_kind == "bias")
    _assert_16bit_close(got, (ref, *ref_grads))


def _bf16_inputs(B, H, S, D, mask_kind, p):
    """bf16 q, k, v (requiring grad), a mask (None; "bias": a learned (1, H, S, S) bias broadcast over the batch,
    requiring grad; "bool": a (B, 1, S, S) mask broadcast over the heads), a dropout seed when p > 0, and dO."""
    q, k, v = (_randn(B, H, S, D, seed=i, dtype=torch.bfloat16).requires_grad_() for i in range(3))
    mask = None
    if mask_kind == "bias":
        mask = _randn(1, H, S, S, seed=5, dtype=torch.bfloat16).expand(B, H, S, S).detach().requires_grad_()
    elif mask_kind == "bool":
        mask = (_randn(B, 1, S, S, seed=5) > -1.0).expand(B, H, S, S)
    seed = torch.tensor([123], dtype=torch.int64, device=DEVICE) if p > 0 else None
    return q, k, v, mask, seed, _randn(B, H, S, D, seed=6, dtype=torch.bfloat16)


@pytest.mark.gpu
@pytest.mark.parametrize("causal,p,mask_kind,D", [(False, 0.0, "bias", 32), (False, 0.1, "bool", 128),
                                                  (True, 0.1, None, 64)])
def test_short_sequences_take_fitted_tiles_and_match_fp64(causal, p, mask_kind, D):
    """Note [short sequences]: Swin's 49-token windows (bf16, a learned bias, a bool mask with dropout, causal) run
    forward row blocks of 64 where every head dim's table has 128, and no mask summary (SHORT_MASK_LENGTH); both
    templates still run and match float64."""
    B, H, S = 64, 3, 49
    q, k, v, mask, seed, do = _bf16_inputs(B, H, S, D, mask_kind, p)  # a bias: Swin's, broadcast over the windows
    got, code = _compiled_fwd_bwd(causal, p, q, k, v, mask, seed, do, mask_grad=mask_kind == "bias")
    forward, backward = _modules(code)
    assert _calls(forward, "attn_fwd_rows") and _calls(backward, "attn_bwd_dkdv_cols")
    assert re.search(r"BLOCK_M : tl.constexpr = 64\b", forward), "the forward's row block"
    assert "attention_mask_summary" not in code
    keep = dropout_keep_mask(seed, B, H, S, S, p) if p > 0 else None
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, causal, keep, p, 0.125, mask_grad=mask_kind == "bias")
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("p,mask_kind", [(0.0, "bool"), (0.1, "additive")])
def test_summary_kernels_run_in_the_graph(monkeypatch, request, dynamic, p, mask_kind):
    """Note [summary kernels in the graph]: a compiled forward+backward over a packed, causal mask tensor (documents
    of 90, 140 and 70 tokens; bool, or additive bf16 with -1e4 outside) launches the summary's kernels from the graph
    (flags, rows and cols in the forward, which the backward reads saved: Note [summaries saved for the backward] in
    patterns/attention_summary.py) and calls no summary op; the results are the bits of the summary op as a fallback
    kernel in each pass, and float64's.  Where the lowering's shapes disagree with the fake impl's, the op runs alone:
    no summary kernel is emitted beside it."""
    summary_shapes_agree = lowering._summary_shapes_agree
    B, H, S, D = 2, 4, 300, 64
    q, k, v, _, seed, do = _bf16_inputs(B, H, S, D, None, p)
    doc = torch.repeat_interleave(torch.arange(3, device=DEVICE), torch.tensor([90, 140, 70], device=DEVICE))
    pos = torch.arange(S, device=DEVICE)
    keep = (doc[:, None] == doc[None, :]) & (pos[None, :] <= pos[:, None])
    mask = keep if mask_kind == "bool" else torch.zeros(S, S, device=DEVICE).masked_fill(~keep, -1e4).bfloat16()
    mask = mask.expand(B, H, S, S)  # one (S, S) mask broadcast over batch and heads, as HF's packed batches
    if not inductor_conv.is_enabled():  # the joint pass that saves the summary for the backward
        inductor_conv.enable()
        request.addfinalizer(inductor_conv.disable)
    results = []
    for source in ("graph", "op", "disagreeing shapes"):
        monkeypatch.setattr(inductor_conv.config, "attention_summary_in_graph", source != "op")
        # the lowering's fallback where its shapes and the fake impl's disagree: the op alone, no kernel emitted
        monkeypatch.setattr(lowering, "_summary_shapes_agree",
                            (lambda *args: False) if source == "disagreeing shapes" else summary_shapes_agree)
        got, code = _compiled_fwd_bwd(False, p, q, k, v, mask, seed, do, dynamic=dynamic)
        forward, backward = _modules(code)
        # a call of the op (a fallback kernel), not the comments that name the graph's source nodes
        in_graph = source == "graph"
        assert bool(re.search(r"inductor_conv\.attention_mask_summary\.default\(", code)) != in_graph, source
        launches = [[len(re.findall(rf"\b_mask_{name}_kernel\w*\.run\(", module)) for name in ("flags", "rows", "cols")]
                    for module in (forward, backward)]
        assert launches == ([[1, 1, 1], [0, 0, 0]] if in_graph else [[0, 0, 0], [0, 0, 0]]), (source, launches)
        results.append(got)
    keep_drop = dropout_keep_mask(seed, B, H, S, S, p) if p > 0 else None
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, False, keep_drop, p, 0.125)
    _assert_16bit_close(results[0], (ref, *ref_grads))
    for other in results[1:]:
        for name, a, b in zip(("out", "dq", "dk", "dv"), results[0], other):
            assert torch.equal(a, b), f"{name}: max |in graph - op| {(a.double() - b.double()).abs().max().item()}"


@pytest.mark.gpu
@pytest.mark.parametrize("p,mask_kind,D", [(0.0, "bias", 64), (0.1, "bool", 32)])
def test_unaligned_masks_are_read_padded_and_match_fp64(p, mask_kind, D):
    """Note [mask row alignment]: masks over 197 keys (an additive bf16 one with its gradient, rows 394 bytes apart;
    a bool one with dropout, 197 bytes) reach both templates with rows padded to 16 bytes (200 and 208 elements);
    the results match float64."""
    B, H, S = 4, 3, 197
    q, k, v, mask, seed, do = _bf16_inputs(B, H, S, D, mask_kind, p)
    got, code = _compiled_fwd_bwd(False, p, q, k, v, mask, seed, do, mask_grad=mask_kind == "bias")
    forward, backward = _modules(code)
    assert _calls(forward, "attn_fwd_rows") and _calls(backward, "attn_bwd_dkdv_cols")
    row = "200" if mask_kind == "bias" else "208"
    assert re.search(rf"\b{row}\b", forward) and re.search(rf"\b{row}\b", backward), "the mask's padded row stride"
    keep = dropout_keep_mask(seed, B, H, S, S, p) if p > 0 else None
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, False, keep, p, 0.125, mask_grad=mask_kind == "bias")
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
@pytest.mark.parametrize("causal,p,mask_kind,Hq,Hkv,D", [(True, 0.0, None, 8, 2, 128), (False, 0.0, "bias", 4, 4, 80),
                                                         (False, 0.1, "bool", 8, 2, 64), (True, 0.1, None, 4, 1, 256),
                                                         (False, 0.1, "bool", 8, 4, 256)])
def test_softcap_templates_match_fp64(causal, p, mask_kind, Hq, Hkv, D):
    """Soft-capped scores (Note [soft-capping]; cap 2 against scaled scores of std ~1.4, so it bends them) through
    both templates, never cuDNN (which has no soft-capping), in bf16 against float64; a learned bias gets its gradient
    before the cap's derivative.  Head dim 256, causal or over a summarised mask (Gemma 2's forms): dK and dV in
    programs of their own (heuristics/attention.py's CUDA_BWD_CAUSAL / CUDA_BWD_MASKED, Note [split dK/dV])."""
    B, Sq, Sk, cap = 2, 333, 517 if not causal else 333, 2.0
    q, k, v = (_randn(B, h, s, D, seed=i, dtype=torch.bfloat16).requires_grad_()
               for i, (h, s) in enumerate(((Hq, Sq), (Hkv, Sk), (Hkv, Sk))))
    with torch.no_grad():
        q.mul_(4.0 / D ** 0.25), k.mul_(4.0 / D ** 0.25)  # scale 0.125 * q.k: std ~1.4 whatever D
    mask = None
    if mask_kind == "bias":
        mask = _randn(1, Hq, 1, Sk, seed=5, dtype=torch.bfloat16).expand(B, Hq, Sq, Sk).detach().requires_grad_()
    elif mask_kind == "bool":
        mask = (_randn(B, 1, Sq, Sk, seed=5) > -1.0).expand(B, Hq, Sq, Sk)
    seed = torch.tensor([321], dtype=torch.int64, device=DEVICE) if p > 0 else None
    do = _randn(B, Hq, Sq, D, seed=6, dtype=torch.bfloat16)
    got, code = _compiled_fwd_bwd(causal, p, q, k, v, mask, seed, do, mask_grad=mask_kind == "bias", softcap=cap)
    forward, backward = _modules(code)
    assert _calls(forward, "attn_fwd_rows") and _calls(backward, "attn_bwd_dkdv_cols")
    assert re.search(r"SOFTCAP\s*:\s*tl.constexpr\s*=\s*(True|1|2)\b", forward + backward)
    split = re.search(r"SPLIT_KV\s*:\s*tl.constexpr\s*=\s*(\w+)", backward).group(1)
    assert split == str(D == 256 and (causal or mask_kind == "bool")), split
    keep = dropout_keep_mask(seed, B, Hq, Sq, Sk, p) if p > 0 else None
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, causal, keep, p, 0.125, mask_grad=mask_kind == "bias",
                                    softcap=cap)
    _assert_16bit_close(got, (ref, *ref_grads))
    plain = attention_ref(q.detach(), k.detach(), v.detach(), attn_mask=mask, dropout_mask=keep, dropout_p=p,
                          is_causal=causal, scale=0.125)
    assert (plain - ref).abs().max() > 0.05  # the cap matters at these scores


@pytest.mark.gpu
@pytest.mark.parametrize("causal,p,mask_kind,Hq,Hkv,D,kind", [
    (True, 0.0, None, 4, 2, 64, "templates"), (False, 0.0, "bias", 4, 4, 128, "templates"),
    (False, 0.1, "bool", 8, 2, 80, "templates"), (True, 0.0, None, 4, 2, 64, "cudnn"),
    (False, 0.0, None, 4, 2, 64, "max_autotune")])
def test_dynamic_shapes_compile_once_and_match_fp64(monkeypatch, causal, p, mask_kind, Hq, Hkv, D, kind):
    """dynamic=True: one compiled graph (symbolic batch, heads and lengths in both templates' grids) serves two
    sequence lengths and matches float64 at both; causal head dim 64 runs its paired forward grid, a learned bias
    gets its gradient (the dS output).  cudnn: the same causal form through cuDNN's kernels (its gate guards the
    symbolic batch and heads); max_autotune: the choices benchmarked at the size hints."""
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    cudnn = kind == "cudnn"
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", cudnn)
    lowering.register()
    torch._dynamo.reset()
    fwd = torch.compile(lambda q, k, v, mask, seed: OPS.attention_fwd(q, k, v, mask, p, causal, 0.125, seed)[0],
                        fullgraph=True, dynamic=True)
    for step, (B, S) in enumerate(((2, 300), (3, 517))):
        q, k, v = (_randn(B, h, S, D, seed=10 * step + i, dtype=torch.bfloat16).requires_grad_()
                   for i, h in enumerate((Hq, Hkv, Hkv)))
        mask = None
        if mask_kind == "bias":  # learned, broadcast over batch and query rows
            mask = _randn(1, Hq, 1, S, seed=5, dtype=torch.bfloat16).expand(B, Hq, S, S).detach().requires_grad_()
        elif mask_kind == "bool":
            mask = (_randn(B, 1, S, S, seed=5) > -1.0).expand(B, Hq, S, S)
        seed = torch.tensor([123 + step], dtype=torch.int64, device=DEVICE) if p > 0 else None
        do = _randn(B, Hq, S, D, seed=6, dtype=torch.bfloat16)
        leaves = [q, k, v] + ([mask] if mask_kind == "bias" else [])

        def run():
            out = fwd(q, k, v, mask, seed)
            return (out, *torch.autograd.grad(out, leaves, do))

        with compiled_graph_caches_disabled(), torch._dynamo.config.patch(error_on_recompile=step > 0), \
                inductor_config.patch(max_autotune=kind == "max_autotune"):
            got, code = run_and_get_code(run)
        if step == 0:
            forward, backward = _modules("\n".join(code))
            assert ("_scaled_dot_product_cudnn" in forward) == cudnn
            if kind != "max_autotune":  # there the fallback choice may win
                assert _calls(forward, "attn_fwd_rows") != cudnn and _calls(backward, "attn_bwd_dkdv_cols") != cudnn
            assert ("n_units = " in forward) == (causal and D == 64 and not cudnn)
        keep = dropout_keep_mask(seed, B, Hq, S, S, p) if p > 0 else None
        ref, ref_grads = _ref_and_grads(q, k, v, do, mask, causal, keep, p, 0.125, mask_grad=mask_kind == "bias")
        _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["transposed", "expanded", "strided"])
def test_cudnn_backward_takes_any_dout_layout(monkeypatch, layout):
    """cuDNN's backward reads dO with O's strides (SDPA's own autograd node returned wrong gradients for a dO in
    another layout, torch 2.11 on the H200: ops/attention.py's _cudnn_attention); the backward lowering puts dO into
    O's layout first: a dO of (B, S, H, D) memory, a broadcast one (stride 0: the gradient of out.sum()) and a
    strided view all give float64's gradients."""
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", True)
    B, H, S, D = 2, 4, 256, 64
    q, k, v = (_randn(B, H, S, D, seed=i, dtype=torch.bfloat16).requires_grad_() for i in range(3))
    do = {"transposed": lambda: _randn(B, S, H, D, seed=7, dtype=torch.bfloat16).transpose(1, 2),
          "expanded": lambda: _randn(1, 1, 1, D, seed=7, dtype=torch.bfloat16).expand(B, H, S, D),
          "strided": lambda: _randn(B, H, 2 * S, D, seed=7, dtype=torch.bfloat16)[:, :, ::2]}[layout]()
    got, code = _compiled_fwd_bwd(True, 0.0, q, k, v, None, None, do)
    assert "_scaled_dot_product_cudnn_attention_backward" in code
    ref, ref_grads = _ref_and_grads(q, k, v, do, causal=True, scale=0.125)
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
def test_deterministic_algorithms_take_our_templates_bit_identically(deterministic_algorithms):
    """torch.use_deterministic_algorithms(True) refuses cuDNN (as SDPA does) for this causal GQA form it would take;
    our templates then run, and two runs are bit-identical."""
    q = _randn(1, 8, 256, 64, seed=0, dtype=torch.bfloat16).requires_grad_()
    k, v = (_randn(1, 2, 256, 64, seed=i, dtype=torch.bfloat16).requires_grad_() for i in (1, 2))  # GQA 4
    do = _randn(1, 8, 256, 64, seed=7, dtype=torch.bfloat16)
    first, code = _compiled_fwd_bwd(True, 0.0, q, k, v, None, None, do)
    forward, backward = _modules(code)
    assert _calls(forward, "attn_fwd_rows") and _calls(backward, "attn_bwd_dkdv_cols")
    assert "_scaled_dot_product_cudnn" not in code
    second, _ = _compiled_fwd_bwd(True, 0.0, q, k, v, None, None, do)
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    ref, ref_grads = _ref_and_grads(q, k, v, do, causal=True, scale=0.125)  # the causal launch order, Sq == Sk
    _assert_16bit_close(first, (ref, *ref_grads))


@pytest.mark.gpu
def test_more_than_65535_batch_heads(monkeypatch):
    """B * H = 65600 programs' worth of (b, h) slices: grid axes 1 and 2 stop at 65535, so the eager kernels and
    the templates put everything on axis 0 (a two-axis grid fails to launch here). S is one more than the
    queries that the flash-decoding forward takes (its grid is one axis too), so the forward is the template."""
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)  # our templates
    B, H, S, D = 2, 32800, MAX_QUERIES + 1, 16
    q, k, v = (_randn(B, H, S, D, seed=i, dtype=torch.float16).requires_grad_() for i in range(3))
    do = _randn(B, H, S, D, seed=7, dtype=torch.float16)
    ref, ref_grads = _ref_and_grads(q, k, v, do, causal=True, scale=0.125)
    got, code = _compiled_fwd_bwd(True, 0.0, q, k, v, None, None, do)
    assert _calls(code, "attn_fwd_rows") and _calls(code, "attn_bwd_dkdv_cols")
    _assert_16bit_close(got, (ref, *ref_grads))
    out = inductor_conv.attention(q, k, v, is_causal=True, scale=0.125)
    _assert_16bit_close((out, *torch.autograd.grad(out, (q, k, v), do)), (ref, *ref_grads))


@pytest.mark.gpu
def test_fallback_choice_when_no_template(monkeypatch):
    """With no template choice the lowering still works, through the ExternKernelChoice running the eager op."""
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)  # else cuDNN takes this causal Sq == Sk form
    monkeypatch.setattr(lowering.FWD_TEMPLATE, "maybe_append_choice", lambda *a, **kw: None)
    monkeypatch.setattr(lowering.BWD_TEMPLATE, "maybe_append_choice", lambda *a, **kw: None)
    q, k, v = (_randn(1, 4, 100, 64, seed=i, dtype=torch.bfloat16).requires_grad_() for i in range(3))
    do = _randn(1, 4, 100, 64, seed=7, dtype=torch.bfloat16)
    got, code = _compiled_fwd_bwd(True, 0.0, q, k, v, None, None, do)
    assert not _calls(code, "attn_fwd_rows") and "inductor_conv.attention_fwd" in code
    ref, ref_grads = _ref_and_grads(q, k, v, do, causal=True, scale=0.125)
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal,Hq,Hkv,Sq,Sk,D", [(False, 4, 4, 333, 517, 80), (True, 4, 1, 300, 300, 80),
                                                   (True, 8, 2, 256, 256, 80), (False, 8, 2, 200, 333, 80),
                                                   (True, 8, 4, 384, 384, 256)])
def test_cudnn_forms(dtype, causal, Hq, Hkv, Sq, Sk, D):
    """config.attention_cudnn: no mask, no dropout, causal only with Sq == Sk, any GQA ratio -> cuDNN's forward and
    backward (odd lengths, Sq != Sk, head dims 80 and 256, the backward fed by the saved O and row LSE).  MHA, MQA
    and GQA 4 with 1 < Hkv < Hq, where a wrong head mapping (h % Hkv instead of h // G) would show."""
    B = 2
    q, k, v = (_randn(B, h, s, D, seed=i, dtype=dtype).requires_grad_()
               for i, (h, s) in enumerate(((Hq, Sq), (Hkv, Sk), (Hkv, Sk))))
    do = _randn(B, Hq, Sq, D, seed=6, dtype=dtype)
    got, code = _compiled_fwd_bwd(causal, 0.0, q, k, v, None, None, do)
    forward, backward = _modules(code)
    assert "_scaled_dot_product_cudnn_attention" in forward and not _calls(forward, "attn_fwd_rows")
    assert "_scaled_dot_product_cudnn_attention_backward" in backward and not _calls(backward, "attn_bwd_dkdv_cols")
    # Nothing else launches in the backward (no copies of dO, no fill kernel for the unused Philox placeholder).
    assert not re.search(r"triton_\w+\.run\(", backward), backward
    ref, ref_grads = _ref_and_grads(q, k, v, do, causal=causal, scale=0.125)
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.fixture
def deterministic_algorithms():
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(was)


@pytest.mark.gpu
@pytest.mark.parametrize("forward_cudnn", [True, False])
def test_cudnn_and_template_mix_across_passes(monkeypatch, forward_cudnn):
    """AOTAutograd compiles the backward at the first .backward(), reading the switches again: a switch flipped
    between the passes gives cuDNN's forward with our backward or ours with cuDNN's; both share the LSE convention."""
    from torch._inductor.utils import run_and_get_code

    q = _randn(2, 8, 256, 64, seed=0, dtype=torch.bfloat16).requires_grad_()
    k, v = (_randn(2, 2, 256, 64, seed=i, dtype=torch.bfloat16).requires_grad_() for i in (1, 2))
    do = _randn(2, 8, 256, 64, seed=7, dtype=torch.bfloat16)
    lowering.register()
    fwd = torch.compile(lambda q, k, v: OPS.attention_fwd(q, k, v, None, 0.0, True, 0.125, None)[0], fullgraph=True)

    def run():
        monkeypatch.setattr(inductor_conv.config, "attention_cudnn", forward_cudnn)
        out = fwd(q, k, v)
        monkeypatch.setattr(inductor_conv.config, "attention_cudnn", not forward_cudnn)
        return (out, *torch.autograd.grad(out, (q, k, v), do))

    with compiled_graph_caches_disabled():
        got, code = run_and_get_code(run)
    forward, backward = _modules("\n".join(code))
    assert ("_scaled_dot_product_cudnn_attention" in forward) == forward_cudnn
    assert _calls(backward, "attn_bwd_dkdv_cols") == forward_cudnn
    ref, ref_grads = _ref_and_grads(q, k, v, do, causal=True, scale=0.125)
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
def test_cudnn_off_and_causal_with_unequal_lengths_take_our_templates(monkeypatch):
    """The gate's two refusals a user meets most: config.attention_cudnn = False, and a causal band with Sq != Sk."""
    q, k, v = (_randn(1, 4, s, 64, seed=i, dtype=torch.bfloat16).requires_grad_() for i, s in enumerate((96, 160, 160)))
    do = _randn(1, 4, 96, 64, seed=7, dtype=torch.bfloat16)
    for causal, enabled in ((True, True), (False, False)):
        monkeypatch.setattr(inductor_conv.config, "attention_cudnn", enabled)
        got, code = _compiled_fwd_bwd(causal, 0.0, q, k, v, None, None, do)
        forward, backward = _modules(code)
        assert _calls(forward, "attn_fwd_rows") and "cudnn" not in forward
        assert _calls(backward, "attn_bwd_dkdv_cols")
        ref, ref_grads = _ref_and_grads(q, k, v, do, causal=causal, scale=0.125)
        _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
def test_max_autotune_picks_a_working_choice(monkeypatch):
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", False)  # the plain form: our templates

    q, k, v = (_randn(2, 4, 256, 64, seed=i, dtype=torch.bfloat16).requires_grad_() for i in range(3))
    do = _randn(2, 4, 256, 64, seed=7, dtype=torch.bfloat16)
    with inductor_config.patch(max_autotune=True):
        got, code = _compiled_fwd_bwd(False, 0.0, q, k, v, None, None, do)
    assert re.search(r"inductor_conv[._]attention_fwd", code)  # the template or the eager op's fallback kernel
    ref, ref_grads = _ref_and_grads(q, k, v, do, scale=0.125)
    _assert_16bit_close(got, (ref, *ref_grads))


@pytest.mark.gpu
@pytest.mark.parametrize("mask_kind", ["bool", "additive"])
def test_max_autotune_times_masked_templates_on_a_causal_mask(monkeypatch, mask_kind):
    """Note [autotuning masked templates]: under max-autotune the masked templates are timed on a causal mask in the
    mask's layout (a bool one broadcast over heads; an additive one over 300 keys, its rows padded) and on that
    mask's summaries, which skip tiles, in both passes; the compiled results match float64."""
    import torch._inductor.config as inductor_config

    made = []
    real = lowering._masked_example_inputs

    def spy(*args):
        fns = real(*args)
        return {i: (lambda node, fn=fn: made.append(fn(node)) or made[-1]) for i, fn in fns.items()}

    monkeypatch.setattr(lowering, "_masked_example_inputs", spy)
    B, H, S, D = 2, 4, 300, 64
    q, k, v, _, seed, do = _bf16_inputs(B, H, S, D, None, 0.0)
    keep = _randn(B, 1, S, S, seed=5) > -1.0
    mask = keep.expand(B, H, S, S) if mask_kind == "bool" else torch.zeros(
        B, H, S, S, device=DEVICE).masked_fill(~keep, float("-inf")).bfloat16()
    with inductor_config.patch(max_autotune=True):
        got, _ = _compiled_fwd_bwd(False, 0.0, q, k, v, mask, seed, do)
    assert len(made) >= 5, "the forward's mask and rows, the backward's mask, rows and cols"
    example, rows, cols = made[0], made[1], made[-1]
    assert example.dtype == mask.dtype and example.shape == mask.shape and example.stride()[-2] >= S
    first_row = example[0, 0, 0] if mask_kind == "bool" else example[0, 0, 0] == 0
    assert first_row.nonzero().flatten().tolist() == [0], "causal: the first query attends the first key only"
    assert (rows[..., 3] < S).any(), "a causal summary skips the key tiles past the diagonal"
    assert (cols[..., 0] > 0).any(), "and the query tiles before it"
    ref, ref_grads = _ref_and_grads(q, k, v, do, mask, scale=0.125)
    _assert_16bit_close(got, (ref, *ref_grads))
