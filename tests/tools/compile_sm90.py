"""Compile the eager Triton kernels and the Inductor templates for sm_90 (H100 / H200) on a machine without a GPU.

    python tests/tools/compile_sm90.py                       # one line per eager kernel variant: registers, stack
                                                             # (spills), shared memory, local memory in loops
    python tests/tools/compile_sm90.py --templates           # the same for a representative set of rendered templates
    python tests/tools/compile_sm90.py [--templates] --json  # as a JSON list (tests/test_*_compile_sm90.py)

The interpreter that runs our kernels in CPU CI never runs Triton's NVIDIA backend, so a kernel the GPU compiler
rejects (or whose tile needs more shared memory than an SM has) would first fail on the device.

Eager kernels: the real eager launchers are called with CPU tensors and the CUDA tile tables; each launch is recorded
instead of run (Triton's `JITFunction.run` is replaced), specialised as Triton's launcher specialises it for the
sm_90 backend (its own binder: pointer and int alignment to 16, ints equal to 1 as constants -- a unit stride is
then a literal, as on the GPU) and compiled by `triton.compile` for `GPUTarget("cuda", 90, 32)` -- Triton ships
ptxas, so this needs no GPU.

Templates: `render_template` renders a template file the way Inductor does for static shapes (sizes and strides as
literals, kernel options as `NAME : tl.constexpr = value` lines, 16-byte aligned pointers), with a plain tl.store
for store_output; the attention constexprs mirror lowerings/attention.py's `_options`, the conv ones are the
lowering's own `_template_kwargs`.  benchmarks/diagnostics/template_sass.py and
benchmarks/diagnostics/conv_template_sass.py print one variant's machine code with the same functions.

`cuobjdump -res-usage` on the cubin gives registers and stack bytes (spills).  Run without TRITON_INTERPRET
(`run_script` starts it in a subprocess for the tests, whose conftest.py switches the interpreter on).  Internal
Triton API (ASTSource, GPUTarget, JITFunction.run / _pack_args, create_function_from_signature): written for triton
3.6 and 3.7 (.ci/run compiles with both: 3.6.0 in its main venv, 3.7.1, torch 2.13's CUDA pin, in a second one).
"""
from __future__ import annotations

import collections
import contextlib
import functools
import importlib.util
import io
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile

import jinja2
import torch
import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/tools/ -> the repository
SM90 = GPUTarget("cuda", 90, 32)
NVIDIA_BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")  # ptxas, cuobjdump
SM90_SHARED_BYTES = 232448  # the most dynamic shared memory one block may use on sm_90 (227 KiB)
SM90_SM_SHARED_BYTES = 233472  # an sm_90 SM's shared memory for its resident blocks (228 KiB) ...
SM90_BLOCK_RESERVED_BYTES = 1024  # ... of which the driver reserves this much per block

_PTR = {torch.bfloat16: "*bf16", torch.float16: "*fp16", torch.float32: "*fp32", torch.float64: "*fp64",
        torch.int64: "*i64", torch.int32: "*i32", torch.int8: "*i8", torch.uint8: "*u8", torch.bool: "*i1"}
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def run_script(script: str, *args: str) -> str:
    """stdout of `python script args` from the repository root, without the interpreter (it would replace the
    kernels the script compiles); a failure shows the script's stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


def _recording(launches):
    def run(self, *args, grid, warmup, **kwargs):
        launches.append((self, args, kwargs))
    return run


def record(fn):
    """The kernel launches fn() makes, as (JITFunction, args, kwargs), none of them run."""
    launches = []
    saved = JITFunction.run
    JITFunction.run = _recording(launches)
    try:
        fn()
    finally:
        JITFunction.run = saved
    return launches


def _arg_type(value):
    """Triton type of a launch argument and whether it is divisible by 16 (tests/test_attention_decode.py)."""
    if isinstance(value, torch.Tensor):
        return _PTR[value.dtype], value.data_ptr() % 16 == 0
    if isinstance(value, bool):
        return "i1", False
    if isinstance(value, int):
        return ("i32" if -2**31 <= value < 2**31 else "i64"), value % 16 == 0
    if isinstance(value, float):
        return "fp32", False
    raise TypeError(f"no Triton type for {type(value).__name__}")


def source(kernel, args, kwargs):
    """ASTSource, compile options and bound arguments (by name) of one recorded launch, specialised by Triton's
    own binder for the sm_90 backend as its launcher would do it on the GPU: constexprs and ints equal to 1 become
    constants, pointers 16-byte aligned and ints divisible by 16 get `tt.divisibility`.  (Without the unit
    constants every eager attention kernel compiled with runtime head-dim strides, 255 registers and hundreds of
    bytes of stack; on the GPU those strides are the literal 1.)"""
    backend = make_backend(SM90)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    _, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, specialization, options)
    options = {k: v for k, v in kwargs.items() if k in _OPTIONS}
    return ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs), options, dict(bound)


def compile_sm90(src, options: dict):
    """triton.compile for sm_90, keeping the log of the ptxas run it made (`ptxas_log`: resources() reads ptxas'
    advisories there instead of running ptxas again; None when Triton's cache had the kernel)."""
    log = io.StringIO()
    with knobs.nvidia.scope(), contextlib.redirect_stdout(log):
        knobs.nvidia.dump_ptxas_log = True  # Triton prints the log
        compiled = triton.compile(src, target=SM90, options=options)
    compiled.ptxas_log = log.getvalue() or None
    return compiled


def resources(compiled) -> dict:
    """Registers and stack bytes per thread (cuobjdump on the cubin), shared memory per block (Triton's metadata),
    and whether ptxas serialised the kernel's wgmma instructions (its performance advisories C7510-C7515, e.g. C7515
    for an ill-formed pipeline stage, C7512 for too few registers: every warpgroup MMA then waits for the previous
    one; Note [masked tiles first] in kernels/attn_math.py), from the log of
    compile_sm90's ptxas run or, without one, from a run of ptxas on the PTX (only if it has wgmma instructions)."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin, ptx = os.path.join(tmp, "k.cubin"), os.path.join(tmp, "k.ptx")
        with open(cubin, "wb") as f:
            f.write(compiled.asm["cubin"])
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        usage = subprocess.run([os.path.join(NVIDIA_BIN, "cuobjdump"), "-res-usage", cubin], capture_output=True,
                               text=True, check=True).stdout
        advice = getattr(compiled, "ptxas_log", None)
        if advice is None and "wgmma" in compiled.asm["ptx"]:
            advice = subprocess.run([os.path.join(NVIDIA_BIN, "ptxas"), f"-arch=sm_{SM90.arch}a", "-v", ptx,
                                     "-o", os.devnull], capture_output=True, text=True, check=True).stderr
    match = re.search(r"REG:(\d+) STACK:(\d+)", usage)
    return dict(regs=int(match.group(1)), stack=int(match.group(2)), shared=compiled.metadata.shared,
                wgmma_serialized="wgmma.mma_async instructions are serialized" in (advice or ""))


def sass(compiled) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        return subprocess.run([os.path.join(NVIDIA_BIN, "cuobjdump"), "-sass", f.name], capture_output=True,
                              text=True, check=True).stdout


def loops(text: str):
    """(first, last, instruction counts) of each backward branch's loop body in a SASS listing."""
    insts = [(int(m.group(1), 16), m.group(2)) for m in
             (re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line) for line in text.splitlines()) if m]
    index = {addr: i for i, (addr, _) in enumerate(insts)}
    for i, (addr, inst) in enumerate(insts):
        target = re.search(r"BRA\s+(0x[0-9a-f]+)", inst)
        if target and int(target.group(1), 16) < addr and int(target.group(1), 16) in index:
            first = index[int(target.group(1), 16)]
            ops = collections.Counter(re.match(r"(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", b).group(1)
                                      for _, b in insts[first:i + 1])
            yield first, i, ops


def summary(name: str, compiled) -> dict:
    """What the tests check of one compiled variant: resources(), the ex2 flavours of its PTX, its loops and the
    local-memory instructions (spills) inside them, and per innermost loop (one holding no other) its HGMMA and
    local-memory instruction counts."""
    found = list(loops(sass(compiled)))
    loop_ops = [ops for _, _, ops in found]
    inner = [(ops["HGMMA"], ops["LDL"] + ops["STL"]) for first, last, ops in found
             if not any(first <= f and l <= last and (f, l) != (first, last) for f, l, _ in found)]
    return dict(kernel=name, **resources(compiled),
                ex2=sorted(set(re.findall(r"\bex2\.approx[.\w]*", compiled.asm["ptx"]))), loops=len(loop_ops),
                local_in_loops=sum(ops["LDL"] + ops["STL"] for ops in loop_ops), inner_loops=inner)


# (name, function compiling one variant) of the variants compile_variants is compiling: the pool's forked workers
# read it.
_VARIANTS: list = []


def _summarise(i: int) -> dict:
    name, compile_ = _VARIANTS[i]
    return summary(name, compile_())


def compile_variants(variants, report=print) -> list[dict]:
    """summary() of each (name, function compiling it) of `variants`, in order, compiled by a pool of forked
    processes, one a core up to two (ptxas is single-threaded); report() gets each line in order."""
    global _VARIANTS
    _VARIANTS = list(variants)
    results = []
    with multiprocessing.get_context("fork").Pool(min(2, os.cpu_count() or 1)) as pool:
        for result in pool.imap(_summarise, range(len(_VARIANTS))):
            results.append(result)
            report(_line(result))
    return results


def _line(result: dict) -> str:
    return (f"regs {result['regs']:3d}  stack {result['stack']:4d} B ({result['local_in_loops']} LDL/STL in loops)"
            f"  shared {result['shared']:6d} B{'  wgmma SERIALISED' if result['wgmma_serialized'] else ''}"
            f"  {result['kernel']}")


# ---------------------------------------------------------------- the eager kernels
# What tells the variants of one kernel apart in the report: constexpr parameters (a tensor argument of the same
# name is not).
_SHOWN = ("BLOCK_M", "BLOCK_N", "BLOCK_D2", "MASK_KIND", "MASK_RANGES", "IS_CAUSAL", "HAS_DROPOUT", "STORE_DS", "DOT_DTYPE", "BC",
          "N", "V", "ROWS", "HAS_SEQ", "HAS_INIT", "ATOMIC", "FAST", "UNROLL")


def _attention_launches():
    from inductor_conv.heuristics.attention import attn_bwd_tile, attn_fwd_tile
    from inductor_conv.kernels.attention import attention_bwd, attention_fwd

    launches = []
    B, S, D = 1, 128, 128
    cases = [  # (dtype, Hq, Hkv, mask kind, dropout_p, causal, mask_grad, softcap, config.attention_mask_ranges)
        (torch.float32, 2, 1, None, 0.0, True, False, 0.0, False),  # first: its backward compiles longest
        (torch.bfloat16, 2, 2, None, 0.0, False, False, 0.0, False),
        (torch.bfloat16, 2, 2, None, 0.1, True, False, 0.0, False),
        (torch.bfloat16, 4, 2, "bool", 0.0, False, False, 0.0, True),
        (torch.float16, 2, 2, "float", 0.1, False, True, 0.0, True),
        (torch.bfloat16, 4, 2, "float", 0.1, False, True, 50.0, True),  # Gemma 2's soft-capping
        (torch.bfloat16, 4, 2, "bool", 0.0, False, False, 0.0, False),  # Note [mask ranges] off
    ]
    from inductor_conv import config

    default_ranges = config.attention_mask_ranges
    for dtype, hq, hkv, mask_kind, p, causal, mask_grad, softcap, ranges in cases:
        config.attention_mask_ranges = ranges  # read by the launchers' plans, which record() runs
        q = torch.randn(B, hq, S, D, dtype=dtype)
        k, v = torch.randn(B, hkv, S, D, dtype=dtype), torch.randn(B, hkv, S, D, dtype=dtype)
        mask = {None: None, "bool": torch.ones(B, 1, S, S, dtype=torch.bool),
                "float": torch.zeros(1, hq, S, S, dtype=dtype)}[mask_kind]
        seed = torch.zeros(1, dtype=torch.int64) if p else None
        fwd = attn_fwd_tile(dtype, D, "cuda", causal=causal, dropout=p > 0)
        bwd = attn_bwd_tile(dtype, D, "cuda", eager=True, causal=causal, dropout=p > 0)
        out, lse = torch.empty_like(q), torch.zeros(B, hq, S)
        launches += record(lambda: attention_fwd(q, k, v, mask, p, causal, D ** -0.5, seed, config=fwd,
                                                 softcap=softcap))
        launches += record(lambda: attention_bwd(torch.randn_like(q), q, k, v, mask, out, lse, p, causal, D ** -0.5,
                                                 seed, mask_grad=mask_grad, config=bwd, softcap=softcap))
    config.attention_mask_ranges = default_ranges
    # MLA's q/k head dim 192, value head dim 128: the split head dim of Note [split head dim] (128 + 64 tiles)
    dtype, D, Dv = torch.bfloat16, 192, 128
    q, k = torch.randn(B, 4, S, D, dtype=dtype), torch.randn(B, 2, S, D, dtype=dtype)
    v, seed = torch.randn(B, 2, S, Dv, dtype=dtype), torch.zeros(1, dtype=torch.int64)
    fwd = attn_fwd_tile(dtype, D, "cuda", causal=True, dropout=True, split_v=Dv)
    bwd = attn_bwd_tile(dtype, D, "cuda", eager=True, causal=True, dropout=True, split_v=Dv)
    out, lse = torch.empty(B, 4, S, Dv, dtype=dtype), torch.zeros(B, 4, S)
    launches += record(lambda: attention_fwd(q, k, v, None, 0.1, True, D ** -0.5, seed, config=fwd))
    launches += record(lambda: attention_bwd(torch.randn_like(out), q, k, v, None, out, lse, 0.1, True, D ** -0.5,
                                             seed, mask_grad=False, config=bwd))
    return launches


def _conv_launches():
    from inductor_conv.kernels.causal_conv1d import causal_conv1d_bwd, causal_conv1d_fwd

    launches = []
    B, C, L, K = 2, 64, 4096, 4  # several tiles a program: tiles_per_prog == 1 would be a constant, no loop
    for channel_last, with_seq, with_init in ((False, False, False), (True, False, False), (False, True, False),
                                              (True, False, True)):
        x = torch.randn(B, L, C, dtype=torch.bfloat16).transpose(1, 2) if channel_last else \
            torch.randn(B, C, L, dtype=torch.bfloat16)
        w, b = torch.randn(C, K), torch.randn(C)  # fp32 parameters with bf16 x, as Dao's op allows
        seq_idx = torch.zeros(B, L, dtype=torch.int32) if with_seq else None
        init = torch.randn(B, C, K - 1, dtype=torch.bfloat16) if with_init else None
        launches += record(lambda: causal_conv1d_fwd(x, w, b, seq_idx, init, "silu"))
        launches += record(lambda: causal_conv1d_bwd(x, w, b, seq_idx, init, torch.randn_like(x), "silu"))
    return launches


def compile_all(report=print) -> list[dict]:
    """Compile every distinct recorded eager launch for sm_90; one summary() per variant."""
    variants, seen = [], set()
    for kernel, args, kwargs in _attention_launches() + _conv_launches():
        src, options, arguments = source(kernel, args, dict(kwargs))
        key = (kernel.fn.__name__, src.hash(), tuple(sorted(options.items())))
        if key in seen:
            continue
        seen.add(key)
        shown = {k: arguments[k] for k in _SHOWN if not isinstance(arguments.get(k), (torch.Tensor, type(None)))}
        name = kernel.fn.__name__ + "(" + ", ".join(f"{k}={v}" for k, v in {**shown, **options}.items()) + ")"
        variants.append((name, functools.partial(compile_sm90, src, options)))
    return compile_variants(variants, report)


# ---------------------------------------------------------------- the templates, rendered as Inductor renders them
def _strides(shape, order=None) -> tuple:
    """Strides of a dense tensor of `shape` whose dims are laid out innermost first in `order` (default:
    contiguous)."""
    strides, acc = [0] * len(shape), 1
    for d in order if order is not None else reversed(range(len(shape))):
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def render_template(text: str, constexprs: dict, stride, size, store_output, literal=str) -> tuple[str, list[str]]:
    """A template's text rendered with stand-ins for Inductor's hooks: ``def_kernel`` writes
    ``kernel(arg_<input>..., out_ptr0)`` with the constexprs as its first lines (each value as ``literal`` writes
    it) and INDEX_DTYPE int32; ``stride``, ``size`` and ``store_output`` are the caller's.  Returns the module
    source and the input names in def_kernel order."""
    names = []

    def def_kernel(*inputs):
        names.extend(inputs)
        lines = [f"def kernel({', '.join(f'arg_{n}' for n in inputs)}, out_ptr0):"]
        lines += [f"    {k} : tl.constexpr = {literal(v)}" for k, v in constexprs.items()]
        lines += ["    INDEX_DTYPE : tl.constexpr = tl.int32"] + [f"    {n} = arg_{n}" for n in inputs]
        return "\n".join(lines) + "\n"

    body = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text).render(
        def_kernel=def_kernel, stride=stride, size=size, store_output=store_output, **constexprs)
    return "import triton\nimport triton.language as tl\n\n\n@triton.jit\n" + body, names


def compile_source(source: str, names, types: dict, num_warps: int, num_stages: int, out_type: str = "*bf16"):
    """Compile a rendered template (`kernel(arg_<name>..., out_ptr0)`) for sm_90, every pointer 16-byte aligned
    as Inductor's launcher specialises them; types: Triton type of each input name, out_type the output's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rendered_template.py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location("rendered_template", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        signature = {f"arg_{n}": types[n] for n in names} | {"out_ptr0": out_type}
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(signature))}
        return compile_sm90(ASTSource(module.kernel, signature, constexprs={}, attrs=attrs),
                            dict(num_warps=num_warps, num_stages=num_stages))


def attention_constexprs(dtype, head_dim: int, *, fwd: bool, causal=False, p=0.0, mask_kind=0, softcap=0.0,
                         store_ds=False, gqa=False, tile=None, masked_first=True, group=None, kv_first=None,
                         pair=None, tma=False, split=None, head_dim_v=None, wide=False,
                         lengths=None, row_offsets=None, mask_stages=None) -> tuple[dict, int, int]:
    """(constexprs, num_warps, num_stages) of an attention template, as lowerings/attention.py's `_options` and
    its launch pass them, with the lowering's defaults: the CUDA tile table's tile (`tile`: (BM, BN, warps,
    stages) instead), the masked tiles first, the backward ungrouped (grouped by 2 when not masked first), the
    forward's CAUSAL_GROUP 8 (the lowering's choice while Sk * D <= 2^18), KV_FIRST under GQA, the table tile's
    causal pair and mask stages (`mask_stages` forces them), no TMA, the backward's ROW_OFFSETS as the lowering picks
    it (`row_offsets` forces it).  lengths:
    the static (Sq, Sk), which fit the table's tile and decide the mask's summary as the lowering does (Note [short
    sequences])."""
    from inductor_conv import config
    from inductor_conv.heuristics.attention import (attn_bwd_tile, attn_fwd_tile, fit_bwd_tile, fit_fwd_tile,
                                                    head_dim_tiles, short_sequences)
    from inductor_conv.heuristics.attention import row_offsets as pick_row_offsets
    from inductor_conv.kernels.attn_common import score_scales, softcap_mode
    from inductor_conv.lowerings.attention import _DOT_DTYPES
    from inductor_conv.reference.attention import dropout_threshold

    block_d, block_d2, tile_head_dim, split_v = head_dim_tiles(head_dim, head_dim_v or head_dim,
                                                               config.attention_split_head_dim)
    # the lowering's, with config.attention_mask_ranges's default
    mask_ranges = bool(mask_kind) and not store_ds and not (lengths is not None and short_sequences(*lengths))
    if tile is None:
        pick = attn_fwd_tile if fwd else attn_bwd_tile
        table = pick(dtype, tile_head_dim, "cuda", causal=causal, dropout=p > 0, masked=mask_ranges,
                     split_v=split_v)
        if lengths is not None:
            table = (fit_fwd_tile if fwd else fit_bwd_tile)(table, *lengths)
        tile = (table.block_m, table.block_n, table.num_warps, table.num_stages)
        pair = getattr(table, "pair", False) if pair is None else pair
        mask_stages = table.mask_stages if mask_stages is None else mask_stages
        split = getattr(table, "split", False) if split is None else split
    if group is None:
        group = 8 if fwd else 0 if masked_first else 2
    scale = head_dim ** -0.5
    qk_scale2, softcap_scale = score_scales(scale, softcap)
    constexprs = dict(
        HEAD_DIM=head_dim, BLOCK_D=block_d, BLOCK_D2=block_d2, HEAD_DIM_V=head_dim_v or head_dim,
        BLOCK_DV=max(16, triton.next_power_of_2(head_dim_v or head_dim)), MASK_KIND=mask_kind,
        IS_CAUSAL=causal, HAS_DROPOUT=p > 0, DOT_DTYPE=_DOT_DTYPES[dtype],
        PRECISION="'ieee'" if dtype == torch.float32 else "'tf32'", ACC_DTYPE="tl.float32", QK_SCALE2=qk_scale2,
        SCALE=scale, SOFTCAP=softcap_mode(softcap > 0, dtype, interpret=False), SOFTCAP_SCALE=softcap_scale,
        DROPOUT_THRESHOLD=dropout_threshold(p),
        DROPOUT_SCALE=1.0 / (1.0 - p), CAUSAL_GROUP=group, MASKED_FIRST=masked_first, USE_TMA=tma,
        BLOCK_M=tile[0], BLOCK_N=tile[1],
        MASK_STAGES=mask_stages or 0,
        **(dict(CAUSAL_PAIR=bool(pair)) if fwd else
           dict(STORE_DS=store_ds, KV_FIRST=gqa if kv_first is None else kv_first, SPLIT_KV=bool(split))),
        EVEN=False,  # static lengths fold it anyway (Note [even lengths])
        WIDE=wide,  # Note [int64 offsets] in kernels/attn_common.py
        MASK_RANGES=mask_ranges)
    if not fwd:  # Note [row offsets] in heuristics/attention.py
        constexprs["ROW_OFFSETS"] = pick_row_offsets(mask_ranges, causal, bool(block_d2), tma, forced=row_offsets)
    return constexprs, tile[2], tile[3]


def render_attention(fwd: bool, shape, constexprs: dict, hkv: int | None = None,
                     dtype=torch.bfloat16) -> tuple[str, list[str]]:
    """An attention template's kernel source with static sizes (B, Hq, S, D = shape; hkv key/value heads, default
    Hq) and its input names (def_kernel order).  A bool mask is [B, 1, S, S] broadcast over heads, an additive one
    (in `dtype`) [1, Hq, S, S] broadcast over the batch (stride 0, as the lowering passes a broadcast mask), its
    rows padded as the lowering pads them (Note [mask row alignment])."""
    from inductor_conv.heuristics.attention import template_mask_row
    from inductor_conv.lowerings.attention import _load

    B, H, S, D = shape
    Dv, G = constexprs["HEAD_DIM_V"], hkv or H
    row = template_mask_row(S, 1 if constexprs["MASK_KIND"] == 1 else dtype.itemsize)
    mask = {1: (S * row, 0, row, 1), 2: (0, S * row, row, 1)}.get(constexprs["MASK_KIND"], (0, 0, 0, 0))
    tensors = {n: ((B, H, S, d), _strides((B, H, S, d))) for n, d in (("Q", D), ("DQ", D), ("DO", Dv), ("O", Dv))}
    tensors.update({n: ((B, G, S, d), _strides((B, G, S, d))) for n, d in (("K", D), ("DK", D), ("V", Dv),
                                                                            ("DV", Dv))})
    tensors.update(LSE=((B, H, S), _strides((B, H, S))), DELTA=((B, H, S), _strides((B, H, S))),
                   MASK=((B, H, S, S), mask), SEED=((1,), (1,)), DS=((B, H, S, S), _strides((B, H, S, S))))
    n = -(-S // 64)  # mask summaries (Note [mask ranges]), read as [B, H, n, 4], broadcast like the mask
    summary = {1: (n * 4, 0, 4, 1), 2: (0, n * 4, 4, 1)}.get(constexprs["MASK_KIND"], (0, 0, 4, 1))
    tensors.update(ROWS=((B, H, n, 4), summary), COLS=((B, H, n, 4), summary))

    def stride(n, dim=None):
        st = tensors[n][1]
        return str(st[dim]) if dim is not None else ", ".join(map(str, st))

    out = "O" if fwd else "DV" if constexprs["BLOCK_D2"] else "DK"  # Note [split head dim]: dV is the output then

    def store_output(indices, val, mask, indent_width=4, val_shape=None):  # O (forward), dK or dV (backward)
        offset = " + ".join(f"({i}) * {s}" for i, s in zip(indices, tensors[out][1]))
        return f"tl.store(out_ptr0 + {offset}, {val}, {mask})"

    name = "inductor_conv_attention_fwd" if fwd else "inductor_conv_attention_bwd"
    return render_template(_load(name), constexprs, stride, lambda n, dim: str(tensors[n][0][dim]), store_output)


def compile_attention_template(fwd: bool, shape, constexprs: dict, num_warps: int, num_stages: int,
                               hkv: int | None = None, dtype=torch.bfloat16):
    """An attention template rendered (render_attention) and compiled for sm_90, its tensors in `dtype`."""
    source, names = render_attention(fwd, shape, constexprs, hkv, dtype)
    types = {n: _PTR[dtype] for n in ("Q", "K", "V", "DO", "O", "DQ", "DK", "DV")}
    additive = constexprs["MASK_KIND"] == 2
    # the lowering's dS buffer has the mask's dtype (a placeholder fp32 one without STORE_DS)
    types.update(MASK=_PTR[dtype] if additive else "*i1", SEED="*i64", LSE="*fp32", DELTA="*fp32",
                 DS=_PTR[dtype] if additive and constexprs.get("STORE_DS") else "*fp32", ROWS="*i32", COLS="*i32")
    return compile_source(source, names, types, num_warps, num_stages, out_type=_PTR[dtype])


def compile_conv_template(direction: str, layout: str, shape, tile=None):
    """A conv template (`direction` fwd / bwd) for bf16 x (B, C, L), fp32 weight and bias, K taps (shape =
    (B, C, L, K)), rendered with the lowering's own constexprs (`_template_kwargs`, N_CHUNKS for 132 SMs) and
    compiled for sm_90.  Layouts: "bcl" (x contiguous), "blc" (the channel-last view, y / dy in x's layout),
    "blc_t" (x channel-last, y / dy contiguous).  Returns (compiled, ConvGeometry, N_CHUNKS)."""
    from inductor_conv.heuristics.conv import conv_chunks, conv_geometry
    from inductor_conv.lowerings import causal_conv1d_silu as lowering

    B, C, L, K = shape
    g = conv_geometry(layout, torch.bfloat16, K, direction, tile)
    kwargs = lowering._template_kwargs(g, K, True, None, None, "silu", None if direction == "fwd" else
                                       layout == "blc_t")
    num_warps = kwargs.pop("num_warps")
    kwargs.pop("num_stages")
    _, n_chunks = conv_chunks(B, C, L, g, 132)
    x_strides = _strides((B, C, L), (2, 1, 0) if layout == "bcl" else (1, 2, 0))
    y_strides = _strides((B, C, L)) if layout in ("bcl", "blc_t") else x_strides
    tensors = dict(X=((B, C, L), x_strides), W=((C, K), (K, 1)), BIAS=((C,), (1,)), DY=((B, C, L), y_strides),
                   PART=((B * n_chunks, C, K + 1), _strides((B * n_chunks, C, K + 1))))
    out = y_strides if direction == "fwd" else x_strides

    def store_output(indices, val, mask, indent_width=4, val_shape=None):
        offset = " + ".join(f"({i}) * {s}" for i, s in zip(indices, out))
        return f"tl.store(out_ptr0 + {offset}, {val}.to(tl.bfloat16), {mask})"

    source, names = render_template(lowering._load(f"inductor_conv_causal_conv1d_{direction}"),
                                    dict(kwargs, N_CHUNKS=n_chunks), lambda n, d: str(tensors[n][1][d]),
                                    lambda n, d: str(tensors[n][0][d]), store_output, literal=repr)
    types = dict(X="*bf16", W="*fp32", BIAS="*fp32", DY="*bf16", PART="*fp32")
    return compile_source(source, names, types, num_warps, 1), g, n_chunks


# A representative set of template variants, each as the lowering launches it by default (few: each compile takes
# seconds).  Attention: (pass, dtype, (B, Hq, S, D), Hkv, MASK_KIND, causal, dropout p, softcap, STORE_DS).
ATTENTION_TEMPLATES = (
    ("fwd", torch.bfloat16, (1, 2, 256, 128), 2, 0, False, 0.0, 0.0, False),
    ("fwd", torch.bfloat16, (1, 4, 256, 64), 2, 0, True, 0.1, 0.0, False),   # GQA, causal pairs (the D64 tile)
    ("fwd", torch.float16, (1, 2, 256, 128), 2, 2, False, 0.1, 0.0, False),
    ("fwd", torch.bfloat16, (1, 2, 256, 64), 2, 1, False, 0.0, 50.0, False),  # Gemma 2's soft-capping
    ("bwd", torch.bfloat16, (1, 2, 256, 128), 2, 0, True, 0.1, 0.0, False),
    ("bwd", torch.bfloat16, (1, 4, 256, 64), 2, 2, False, 0.1, 0.0, True),    # GQA (KV_FIRST), the mask's gradient
    ("bwd", torch.float16, (1, 2, 256, 128), 2, 1, False, 0.0, 50.0, False),
    ("bwd", torch.float32, (1, 2, 256, 64), 2, 0, True, 0.0, 0.0, False),
    ("fwd", torch.bfloat16, (1, 4, 256, 192), 2, 0, True, 0.1, 0.0, False),  # MLA (value head dim 128): a split
    ("bwd", torch.bfloat16, (1, 4, 256, 192), 2, 0, True, 0.1, 0.0, False),  # head dim, 128 + 64
    ("fwd", torch.bfloat16, (64, 3, 49, 32), 3, 2, False, 0.0, 0.0, False),  # Swin's window: the short tile, no
    ("bwd", torch.bfloat16, (64, 3, 49, 32), 3, 2, False, 0.0, 0.0, True),   # summary, its bias's gradient
    ("fwd", torch.bfloat16, (8, 4, 197, 32), 4, 2, False, 0.0, 0.0, False),  # an odd row (Note [mask row alignment])
    # Gemma 2's attention over HF's mask (head dim 256, soft-capped, summarised) and with is_causal: dK and dV in
    # programs of their own (heuristics/attention.py's CUDA_BWD_MASKED and CUDA_BWD_CAUSAL)
    ("bwd", torch.bfloat16, (1, 4, 512, 256), 2, 2, False, 0.0, 50.0, False),
    ("bwd", torch.bfloat16, (1, 4, 512, 256), 2, 0, True, 0.0, 50.0, False),
)
MLA_HEAD_DIM_V = 128  # the value head dim of ATTENTION_TEMPLATES' head-dim-192 rows
# Their WIDE variants (strides cast to int64 first: Note [int64 offsets] in kernels/attn_common.py), as
# ATTENTION_TEMPLATES' rows: a forward and a backward with an additive mask and dropout.
WIDE_TEMPLATES = (
    ("fwd", torch.bfloat16, (1, 4, 256, 128), 2, 2, False, 0.1, 0.0, False),
    ("bwd", torch.bfloat16, (1, 4, 256, 128), 2, 2, False, 0.1, 0.0, False),
)
# Compiled with ROW_OFFSETS on and off (Note [row offsets] in inductor_conv/heuristics/attention.py), as
# ATTENTION_TEMPLATES' rows: the backward over a summarised additive mask with dropout and GQA (Llama's attention
# with HF's mask as a layer input), at its table tile.
ROW_OFFSETS_TEMPLATES = (
    ("bwd", torch.bfloat16, (1, 4, 512, 128), 2, 2, False, 0.1, 0.0, False),
)
# Conv: (pass, layout) for x (B, C, L) = CONV_SHAPE[:3] bf16, K = CONV_SHAPE[3] taps.
CONV_TEMPLATES = (("fwd", "bcl"), ("fwd", "blc"), ("bwd", "bcl"), ("bwd", "blc"), ("bwd", "blc_t"))
CONV_SHAPE = (2, 512, 8192, 4)  # 11-16 tiles a backward program (a forward one runs one tile: no loop)


def _conv_template(direction: str, layout: str):
    return compile_conv_template(direction, layout, CONV_SHAPE)[0]


def compile_templates(report=print) -> list[dict]:
    """Compile each of ATTENTION_TEMPLATES, WIDE_TEMPLATES, ROW_OFFSETS_TEMPLATES (twice) and CONV_TEMPLATES for
    sm_90; one summary() per variant."""
    from inductor_conv.heuristics.conv import conv_geometry

    variants = []
    rows = ([(row, {}) for row in ATTENTION_TEMPLATES] + [(row, dict(wide=True)) for row in WIDE_TEMPLATES]
            + [(row, dict(row_offsets=on)) for row in ROW_OFFSETS_TEMPLATES for on in (True, False)])
    for (pass_, dtype, shape, hkv, mask_kind, causal, p, softcap, store_ds), extra in rows:
        constexprs, warps, stages = attention_constexprs(dtype, shape[3], fwd=pass_ == "fwd", causal=causal, p=p,
                                                         mask_kind=mask_kind, softcap=softcap, store_ds=store_ds,
                                                         gqa=hkv != shape[1],
                                                         head_dim_v=MLA_HEAD_DIM_V if shape[3] == 192 else None,
                                                         lengths=(shape[2], shape[2]), **extra)
        tile = (constexprs["BLOCK_M"], constexprs["BLOCK_N"], warps, stages)
        tags = (", WIDE" if extra.get("wide") else "") + (
            f", ROW_OFFSETS={int(extra['row_offsets'])}" if "row_offsets" in extra else "") + (
            ", SPLIT_KV" if constexprs.get("SPLIT_KV") else "") + (
            f", MASK_STAGES={constexprs['MASK_STAGES']}" if constexprs.get("MASK_STAGES") else "")
        name = (f"inductor_conv_attention_{pass_}({str(dtype)[6:]}, shape={shape}, hkv={hkv}, "
                f"MASK_KIND={mask_kind}, causal={causal}, p={p}, softcap={softcap}, STORE_DS={store_ds}, "
                f"tile={tile}{tags})")
        variants.append((name, functools.partial(compile_attention_template, pass_ == "fwd", shape, constexprs,
                                                 warps, stages, hkv, dtype)))
    for direction, layout in CONV_TEMPLATES:
        g = conv_geometry(layout, torch.bfloat16, CONV_SHAPE[3], direction)
        name = (f"inductor_conv_causal_conv1d_{direction}({layout}, BC={g.block_c}, BT={g.block_t}, "
                f"warps={g.num_warps}, unroll={g.unroll})")
        variants.append((name, functools.partial(_conv_template, direction, layout)))
    return compile_variants(variants, report)


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("run without TRITON_INTERPRET=1: the interpreter replaces the kernels this compiles")
    sys.path.insert(0, ROOT)
    run = compile_templates if "--templates" in sys.argv else compile_all
    if "--json" in sys.argv:
        print(json.dumps(run(report=lambda line: None)))
    else:
        run()
