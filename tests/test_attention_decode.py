"""Flash-decoding (kernels/attention_decode.py, Note [flash-decoding]) against the float64 reference.

On CPU the kernels run in Triton's interpreter with its small tiles (16 packed rows, 16 keys a step), so tiny shapes
already take several key tiles, several splits and several row blocks; fp32 dots there are exact IEEE products summed
in fp32, so fp32 inputs compare at fp32 accuracy (the tolerance of tests/test_kernels_attention.py).  num_splits is
forced where a test needs the combine: the plan gives the interpreter's tiny lengths one split.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import warnings

import pytest
import torch
from helpers import no_cpu_codegen, ops_in, recording_graphs

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled
from inductor_conv.kernels import attention_decode
from inductor_conv.kernels.attention import attention_fwd
from inductor_conv.kernels.attention_decode import attention_decode_fwd, use_decode
from inductor_conv.reference.attention import attention_ref, lse_ref

FP32_TOL = dict(atol=2e-5, rtol=2e-5)  # fp32 sums of <= 64 O(1) terms against float64 (test_kernels_attention.py)
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {  # name: (B, Hq, Hkv, Sq, Sk, D)
    "sq1_gqa2": (2, 4, 2, 1, 37, 16),
    "sq3_gqa3_d24": (1, 6, 2, 3, 53, 24),  # 9 packed rows, a padded head dim
    "sq16_gqa4": (1, 4, 1, 16, 45, 32),  # 64 packed rows: four row blocks of the interpreter's tile
}


def _randn(*shape, seed, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device=DEVICE, dtype=dtype)


def _inputs(B, Hq, Hkv, Sq, Sk, D, dtype=torch.float32, seed=0):
    return (_randn(B, Hq, Sq, D, seed=seed, dtype=dtype), _randn(B, Hkv, Sk, D, seed=seed + 1, dtype=dtype),
            _randn(B, Hkv, Sk, D, seed=seed + 2, dtype=dtype))


def _mask(kind, B, Hq, Sq, Sk, seed=3):
    """None; bool [B, 1, Sq, Sk] with query 0 of every batch allowed no key; an additive [1, Hq, 1, Sk] bias
    broadcast over B and the queries (a stride-0 view, as the op passes it)."""
    if kind == "bool":
        mask = torch.rand(B, 1, Sq, Sk, generator=torch.Generator().manual_seed(seed)) > 0.3
        mask[:, :, 0] = False
        return mask.to(DEVICE)
    if kind == "additive":
        return _randn(1, Hq, 1, Sk, seed=seed).expand(B, Hq, Sq, Sk)
    return None


def _kv_cache_mask(B, Sq, Sk, lengths, dtype=torch.float32):
    """Hugging Face's eager mask over a static cache: additive [B, 1, Sq, Sk], 0 where key j is visible to query i
    (j <= length - Sq + i: causal, aligned to the last filled slot) and finfo.min elsewhere (the unfilled slots)."""
    j = torch.arange(Sk).view(1, 1, 1, Sk)
    last = torch.tensor(lengths).view(B, 1, 1, 1) - Sq + torch.arange(Sq).view(1, 1, Sq, 1)
    return torch.zeros(B, 1, Sq, Sk, dtype=dtype).masked_fill(j > last, torch.finfo(dtype).min).to(DEVICE)


def _check(q, k, v, mask=None, causal=False, tol=FP32_TOL, softcap=0.0, **kw):
    out, lse = attention_decode_fwd(q, k, v, mask, causal, None, softcap, **kw)
    ref = attention_ref(q, k, v, attn_mask=mask, is_causal=causal, softcap=softcap)
    ref_lse = lse_ref(q, k, attn_mask=mask, is_causal=causal, softcap=softcap)
    assert out.shape == q.shape and out.dtype == q.dtype and out.stride() == torch.empty_like(q).stride()
    assert lse.shape == q.shape[:3] and lse.dtype == torch.float32
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), ref, **tol)
    torch.testing.assert_close(lse.double(), ref_lse, **tol)
    return out, lse


@pytest.mark.parametrize("num_splits", [None, 3])
@pytest.mark.parametrize("mask_kind", [None, "bool", "additive"])
@pytest.mark.parametrize("case", CASES)
def test_matches_fp64(case, mask_kind, num_splits):
    """Every packing of G * Sq rows, each mask kind, one split (the split kernel writes O and LSE) and three (the
    combine merges them; the last split is shorter).  The bool mask's empty rows give O = 0 and LSE = -inf."""
    B, Hq, Hkv, Sq, Sk, D = CASES[case]
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    out, lse = _check(q, k, v, _mask(mask_kind, B, Hq, Sq, Sk), num_splits=num_splits)
    if mask_kind == "bool":
        assert torch.equal(out[:, :, 0], torch.zeros_like(out[:, :, 0])) and torch.isneginf(lse[:, :, 0]).all()


@pytest.mark.parametrize("num_splits", [1, 4])
def test_kv_cache_mask_and_floor_rows(num_splits):
    """A static cache's finfo.min mask (the form HF's eager attention gives our op), batch rows filled to different
    lengths, plus rows made of finfo.min only (uniform over every key, as eager; attn_math's Note [finite-floor
    rows]) and one -inf and finfo.min row: their LSE is the forward kernel's sentinel, whatever the split count."""
    B, Hq, Hkv, Sq, Sk, D = 2, 4, 2, 3, 70, 16
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    mask = _kv_cache_mask(B, Sq, Sk, lengths=[70, 23]).expand(B, Hq, Sq, Sk).clone()
    fmin = torch.finfo(torch.float32).min
    mask[0, 1, 0] = fmin  # floor only: every split holds floor keys
    mask[1, 2, 1, :40] = float("-inf")  # later splits hold its floor keys, earlier ones nothing
    mask[1, 2, 1, 40:] = fmin
    out, lse = attention_decode_fwd(q, k, v, mask, False, None, num_splits=num_splits)
    # the forward kernel (a tile given: its launcher would hand these few queries to the decode kernels)
    want_out, want_lse = attention_fwd(q, k, v, mask, 0.0, False, None, None,
                                       config=dict(BLOCK_M=16, BLOCK_N=16, num_warps=4, num_stages=1))
    ref = attention_ref(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out.double(), ref, **FP32_TOL)
    torch.testing.assert_close(out[0, 1, 0], v[0, 0].mean(0), **FP32_TOL)  # uniform over the 70 keys
    torch.testing.assert_close(out[1, 2, 1], v[1, 1, 40:].mean(0), **FP32_TOL)
    floor = lse < -2.0**119
    assert floor.sum() == 2 and floor[0, 1, 0] and floor[1, 2, 1]
    torch.testing.assert_close(lse[~floor].double(), lse_ref(q, k, attn_mask=mask)[~floor], **FP32_TOL)
    torch.testing.assert_close(lse, want_lse, rtol=1e-6, atol=0.0)  # sentinels included
    torch.testing.assert_close(out, want_out, **FP32_TOL)


@pytest.mark.parametrize("num_splits", [None, 2])
def test_causal_is_top_left(num_splits):
    """is_causal with Sq < Sk is the op's top-left alignment: query i sees keys 0..i only (a KV cache's bottom-right
    alignment comes as a mask)."""
    q, k, v = _inputs(1, 4, 2, 5, 40, 16)
    _check(q, k, v, causal=True, num_splits=num_splits)


@pytest.mark.parametrize("mask_kind", [None, "additive"])
def test_softcap(mask_kind):
    """Logit soft-capping at 1.5 with scaled scores of std ~3 (most on tanh's bend or tails), before the mask;
    three splits."""
    B, Hq, Hkv, Sq, Sk, D = 1, 4, 2, 3, 41, 24
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D)
    q, k = q * 2.0, k * 2.0
    mask = _mask(mask_kind, B, Hq, Sq, Sk)
    out, _ = _check(q, k, v, mask, softcap=1.5, num_splits=3)
    assert (out.double() - attention_ref(q, k, v, attn_mask=mask)).abs().max() > 0.1  # the cap matters here


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16bit_storage(dtype):
    """16-bit inputs and output: one rounding of O (2^-8 relative for bf16) on top of fp32 math; the LSE stays fp32."""
    q, k, v = _inputs(2, 4, 2, 2, 50, 32, dtype=dtype)
    _check(q, k, v, _kv_cache_mask(2, 2, 50, [50, 31], dtype), tol=dict(atol=2e-2, rtol=2e-2), num_splits=2)


def test_strided_views():
    """q transposed from [B, Sq, Hq, D] (the projection's layout) and K/V the filled part of a longer static cache
    (a slice, row stride of the whole cache): read as given, no copies; out follows q's stride order."""
    B, Hq, Hkv, Sq, Sk, D = 2, 4, 2, 2, 29, 16
    q = _randn(B, Sq, Hq, D, seed=0).transpose(1, 2)
    k, v = (_randn(B, Hkv, 64, D, seed=s)[:, :, :Sk] for s in (1, 2))
    out, _ = _check(q, k, v, num_splits=2)
    assert out.stride() == torch.empty_like(q).stride() != torch.empty(q.shape).stride()


def test_empty_inputs():
    """No keys: every row has no allowed key (O = 0, LSE = -inf).  No queries or batch: empty results."""
    q, k, v = _inputs(2, 4, 2, 3, 0, 16)
    out, lse = attention_decode_fwd(q, k, v, None, False, None)
    assert torch.equal(out, torch.zeros_like(q)) and torch.isneginf(lse).all()
    for B, Sq in ((0, 3), (2, 0)):
        q, k, v = _inputs(B, 4, 2, Sq, 5, 16)
        out, lse = attention_decode_fwd(q, k, v, None, False, None)
        assert out.shape == q.shape and lse.shape == q.shape[:3]


def test_bad_inputs_name_the_argument():
    q, k, v = _inputs(1, 4, 2, 1, 8, 16)
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        attention_decode_fwd(q, k[:, :1].expand(1, 3, 8, 16), v[:, :1].expand(1, 3, 8, 16), None, False, None)
    with pytest.raises(TypeError, match="attn_mask"):
        attention_decode_fwd(q, k, v, torch.ones(1, 1, 1, 8, dtype=torch.int32, device=DEVICE), False, None)
    with pytest.raises(ValueError, match="attn_mask .* not broadcastable"):
        attention_decode_fwd(q, k, v, torch.ones(1, 1, 2, 8, dtype=torch.bool, device=DEVICE), False, None)
    with pytest.raises(ValueError, match="scale"):
        attention_decode_fwd(q, k, v, None, False, -1.0)
    with pytest.raises(ValueError, match="softcap"):
        attention_decode_fwd(q, k, v, None, False, None, float("inf"))
    with pytest.raises(TypeError, match="k must be"):
        attention_decode_fwd(q, k.double(), v, None, False, None)
    with pytest.raises(ValueError, match="num_splits"):
        attention_decode_fwd(q, k, v, None, False, None, num_splits=0)


def test_use_decode():
    """Few queries, no dropout, no gradient, a dtype the kernels take (CUDA, or CPU under the interpreter)."""
    q, k, _ = _inputs(1, 4, 2, 16, 8, 16)
    assert use_decode(q, k) and use_decode(q[:, :, :1], k)
    assert not use_decode(_inputs(1, 4, 2, 17, 8, 16)[0], k)
    assert not use_decode(q, k, dropout_p=0.1) and not use_decode(q, k, needs_grad=True)
    assert not use_decode(q.double(), k.double()) and not use_decode(q[:, :, :0], k)


def test_split_plan(monkeypatch):
    """The split count on a 132-SM GPU: many splits when B * Hkv is small and the cache long (each >= MIN_SPLIT_TILES
    tiles), one when the slices alone fill the GPU; and the plan is cached (a second call derives nothing)."""
    monkeypatch.setattr(attention_decode, "_sm_count", lambda device: 132)
    cuda = torch.device("cuda")
    assert attention_decode._num_splits(1 * 8, 4096 // 64, cuda) == 4096 // 64 // attention_decode.MIN_SPLIT_TILES
    assert attention_decode._num_splits(1 * 8, 131072 // 64, cuda) == math.ceil(2 * 132 / 8)
    assert attention_decode._num_splits(8 * 8, 131072 // 64, cuda) == math.ceil(2 * 132 / 64)
    assert attention_decode._num_splits(32 * 8, 131072 // 64, cuda) == 2
    assert attention_decode._num_splits(64 * 8, 131072 // 64, cuda) == 1
    q, k, v = _inputs(1, 4, 2, 1, 20, 16)
    attention_decode_fwd(q, k, v, None, False, None)
    hits = attention_decode._plan.cache_info().hits
    attention_decode_fwd(q, k, v, None, False, None)
    assert attention_decode._plan.cache_info().hits == hits + 1


# ---------------------------------------------------------------- compiled for sm_90 (no GPU needed)
_SM90_SCRIPT = r"""
import json, torch, triton
from tools import compile_sm90
from tools.compile_sm90 import SM90, loops, record, resources, sass
from triton.compiler import ASTSource
from inductor_conv.kernels.attention_decode import attention_decode_fwd


def source(kernel, args, kwargs):
    # compile_sm90.source plus Triton's launch-time specialisation of int arguments equal to 1: a unit stride_kd
    # becomes a constant (without it the K/V tiles load one element a thread and the key loop spills)
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in compile_sm90._OPTIONS}
    bound = kernel.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    signature, constexprs, attrs = {}, {}, {}
    for i, param in enumerate(kernel.params):
        value = bound.arguments[param.name]
        if param.is_constexpr or value is None or (type(value) is int and value == 1):
            signature[param.name], constexprs[(i,)] = "constexpr", value
            continue
        signature[param.name], divisible = compile_sm90._arg_type(value)
        if divisible:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs), options


results = []
for dtype, (Hq, Hkv, Sq, D), mask, causal, softcap, splits in [
        (torch.bfloat16, (32, 8, 1, 128), None, False, 0.0, 8),
        (torch.float16, (32, 8, 16, 128), "bool", False, 50.0, 8),
        (torch.float32, (8, 8, 2, 64), None, True, 0.0, 2),
        (torch.bfloat16, (8, 4, 4, 256), "float", False, 0.0, 1)]:
    q, k = torch.randn(1, Hq, Sq, D, dtype=dtype), torch.randn(1, Hkv, 4096, D, dtype=dtype)
    m = {None: None, "bool": torch.ones(1, 1, Sq, 4096, dtype=torch.bool),
         "float": torch.zeros(1, 1, Sq, 4096)}[mask]
    for kernel, args, kwargs in record(lambda: attention_decode_fwd(q, k, k, m, causal, None, softcap,
                                                                    num_splits=splits)):
        src, options = source(kernel, args, dict(kwargs))
        compiled = triton.compile(src, target=SM90, options=options)
        local = sum(ops["LDL"] + ops["STL"] for _, _, ops in loops(sass(compiled)))
        results.append(dict(kernel=kernel.fn.__name__, D=D, dtype=str(dtype), local_in_loops=local,
                            **resources(compiled)))
print(json.dumps(results))
"""


def test_kernels_compile_for_sm90():
    """Every kernel variant (16-bit and fp32, head dims 64 to 256, each mask kind, causal, soft-capping, one split
    and several) compiles with Triton's NVIDIA backend for sm_90 on this CPU machine (tests/tools/compile_sm90.py),
    fits an sm_90 block's shared memory, and keeps no local memory traffic in its key loop."""
    from tools.compile_sm90 import NVIDIA_BIN, SM90_SHARED_BYTES

    if not os.path.exists(os.path.join(NVIDIA_BIN, "ptxas")):
        pytest.skip("this triton has no NVIDIA backend with ptxas")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "tests"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", _SM90_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert {r["kernel"] for r in results} == {"_decode_split_kernel", "_decode_combine_kernel"}
    for r in results:
        assert r["shared"] <= SM90_SHARED_BYTES and r["local_in_loops"] == 0, r


# ---------------------------------------------------------------- Hugging Face generate() over a static cache
def test_hf_llama_static_cache_generate(monkeypatch):
    """A tiny HF Llama (GQA 4/2, eager attention) generating with a static cache and a compiled forward: the prefill
    and the decode graph (one query against every cache slot, compiled once for every step) are both rewritten, the
    decode one with HF's additive finfo.min mask over the cache slots as a graph input (expanded to [B, Hq, 1,
    slots]), its op runs the decode kernels (on CPU the lowering keeps the eager op), and the greedy tokens are
    eager's."""
    transformers = pytest.importorskip("transformers")
    queries = []  # Sq of each attention_decode_fwd call

    def counted(q, *args, **kwargs):
        queries.append(q.shape[2])
        return launcher(q, *args, **kwargs)

    launcher = attention_decode.attention_decode_fwd
    monkeypatch.setattr(attention_decode, "attention_decode_fwd", counted)
    config = transformers.AutoConfig.for_model(
        "llama", vocab_size=64, hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, max_position_embeddings=64)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    generate = dict(max_new_tokens=3, do_sample=False, cache_implementation="static", pad_token_id=0)
    want = model.generate(ids, **generate)
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with (fx_graph_cache_disabled(), no_cpu_codegen("cpu"), inductor_conv.enabled(device_types=("cpu",)),
          recording_graphs() as graphs):
        model.forward = torch.compile(model.forward)
        got = model.generate(ids, **generate)
    assert torch.equal(got, want)
    assert inductor_conv.counters()["attention"] == 2 and [ops_in(g) for g in graphs] == [["attention_fwd"]] * 2
    # HF's mask, a graph input [B, 1, 1, slots], expanded over the heads for the op
    mask = re.search(r'"f32\[2, 4, 1, (\d+)\]" = torch\.ops\.aten\.expand\.default\((\w+),', graphs[1])
    assert mask and re.search(rf'{mask.group(2)}: "f32\[2, 1, 1, {mask.group(1)}\]"', graphs[1]), graphs[1]
    assert int(mask.group(1)) == ids.shape[1] + generate["max_new_tokens"] - 1  # every slot but the last token's
    assert queries.count(1) == generate["max_new_tokens"] - 1  # each decode step (the prefill gives the first token)


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
@pytest.mark.parametrize("Sq", [1, 4])
@pytest.mark.parametrize("B", [1, 8])
def test_gpu_kv_cache_shapes(B, Sq):
    """Hq/Hkv 32/8, D 128, bf16, a static cache of 8192 slots filled to different lengths (HF's finfo.min mask):
    the planned split count against float64, and against SDPA's math on the same inputs."""
    Hq, Hkv, Sk, D = 32, 8, 8192, 128
    q, k, v = _inputs(B, Hq, Hkv, Sq, Sk, D, dtype=torch.bfloat16)
    mask = _kv_cache_mask(B, Sq, Sk, [Sk - 7 * b for b in range(B)], torch.bfloat16)
    out, lse = attention_decode_fwd(q, k, v, mask, False, None)
    ref = attention_ref(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=2e-2)  # bf16 P in the PV product, bf16 O
    torch.testing.assert_close(lse.double(), lse_ref(q, k, attn_mask=mask), atol=1e-3, rtol=1e-4)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(out, sdpa, atol=1e-2, rtol=2e-2)


@pytest.mark.gpu
def test_gpu_cached_launches_equal_generic_launches(monkeypatch):
    """Note [eager launch path]: a FastLaunch cache hit launches what Triton's generic path would, for one split and
    for several (the plan is the meta), aligned and misaligned q (a 2-byte offset), with a bool mask."""
    from inductor_conv.kernels import launch

    q, k, v = _inputs(2, 8, 2, 3, 1000, 64, dtype=torch.bfloat16)
    q_odd = torch.empty(q.numel() + 1, device=DEVICE, dtype=q.dtype)[1:].view(q.shape).copy_(q)
    mask = _mask("bool", 2, 8, 3, 1000)

    def run():
        return [t for query in (q, q_odd) for splits in (1, 5)
                for t in attention_decode_fwd(query, k, v, mask, False, None, num_splits=splits)]

    first, second = run(), run()
    monkeypatch.setattr(launch, "_KNOWN_TRITON", False)
    for a, b, c in zip(first, second, run()):
        assert torch.equal(a, b) and torch.equal(a, c)
