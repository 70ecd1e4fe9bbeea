"""Compile the eager Triton kernels for sm_90 (H100 / H200) on a machine without a GPU.

    python tests/compile_sm90.py           # one line per kernel variant: registers, stack (spills), shared memory
    python tests/compile_sm90.py --json    # the same as a JSON list (tests/test_kernels_compile_sm90.py)

The interpreter that runs our kernels in CPU CI never runs Triton's NVIDIA backend, so a kernel the GPU compiler
rejects (or whose tile needs more shared memory than an SM has) would first fail on the device.  This script calls
the real eager launchers with CPU tensors and the CUDA tile tables; each launch is recorded instead of run (Triton's
`JITFunction.run` is replaced), turned into an `ASTSource` with the launch's types, constexprs and 16-divisibility,
and compiled by `triton.compile` for `GPUTarget("cuda", 90, 32)` — Triton ships ptxas, so this needs no GPU.
`cuobjdump -res-usage` on the cubin gives registers and stack bytes (spills).  The templates share the kernels'
`@triton.jit` math (kernels/attn_math.py, kernels/conv_math.py) and tile tables, so this also covers their math.

Run without TRITON_INTERPRET (tests/test_kernels_compile_sm90.py starts it in a subprocess for that reason).
Internal Triton API (ASTSource, GPUTarget, JITFunction.run, KernelParam): written for triton 3.6.
"""
from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

SM90 = GPUTarget("cuda", 90, 32)
NVIDIA_BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")  # ptxas, cuobjdump
SM90_SHARED_BYTES = 232448  # the most dynamic shared memory one block may use on sm_90 (227 KiB)

_PTR = {torch.bfloat16: "*bf16", torch.float16: "*fp16", torch.float32: "*fp32", torch.float64: "*fp64",
        torch.int64: "*i64", torch.int32: "*i32", torch.int8: "*i8", torch.uint8: "*u8", torch.bool: "*i1"}
_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


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
    """ASTSource and compile options of one recorded launch (constexpr params become constants; pointers and ints
    divisible by 16 get `tt.divisibility`, as Triton's launcher specialises them)."""
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in _OPTIONS}
    bound = kernel.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    signature, constexprs, attrs = {}, {}, {}
    for i, param in enumerate(kernel.params):
        value = bound.arguments[param.name]
        if param.is_constexpr or value is None:
            signature[param.name] = "constexpr"
            constexprs[(i,)] = value
            continue
        signature[param.name], divisible = _arg_type(value)
        if divisible:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return ASTSource(kernel, signature, constexprs=constexprs, attrs=attrs), options, bound.arguments


def resources(compiled) -> dict:
    """Registers and stack bytes per thread (cuobjdump on the cubin), shared memory per block (Triton's metadata),
    and whether ptxas serialised the kernel's wgmma instructions (its performance advisory C7515: every warpgroup
    MMA then waits for the previous one; Note [masked tiles first] in kernels/attn_math.py)."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin, ptx = os.path.join(tmp, "k.cubin"), os.path.join(tmp, "k.ptx")
        with open(cubin, "wb") as f:
            f.write(compiled.asm["cubin"])
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        usage = subprocess.run([os.path.join(NVIDIA_BIN, "cuobjdump"), "-res-usage", cubin], capture_output=True,
                               text=True, check=True).stdout
        advice = subprocess.run([os.path.join(NVIDIA_BIN, "ptxas"), f"-arch=sm_{SM90.arch}a", "-v", ptx,
                                 "-o", os.devnull], capture_output=True, text=True, check=True).stderr
    match = re.search(r"REG:(\d+) STACK:(\d+)", usage)
    return dict(regs=int(match.group(1)), stack=int(match.group(2)), shared=compiled.metadata.shared,
                wgmma_serialized="C7515" in advice)


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


# What tells the variants of one kernel apart in the report: constexpr parameters (a tensor argument of the same
# name is not).
_SHOWN = ("BLOCK_M", "BLOCK_N", "MASK_KIND", "IS_CAUSAL", "HAS_DROPOUT", "STORE_DS", "DOT_DTYPE", "BC", "N", "V",
          "ROWS", "HAS_SEQ", "HAS_INIT", "ATOMIC", "FAST", "UNROLL")


# ---------------------------------------------------------------- the variants compiled
def _attention_launches():
    from inductor_conv.kernels.attention import attention_bwd, attention_fwd
    from inductor_conv.lowerings.heuristics.attention import attn_bwd_tile, attn_fwd_tile

    launches = []
    B, S, D = 1, 128, 128
    cases = [  # (dtype, Hq, Hkv, mask kind, dropout_p, causal, mask_grad, softcap)
        (torch.bfloat16, 2, 2, None, 0.0, False, False, 0.0),
        (torch.bfloat16, 2, 2, None, 0.1, True, False, 0.0),
        (torch.bfloat16, 4, 2, "bool", 0.0, False, False, 0.0),
        (torch.float16, 2, 2, "float", 0.1, False, True, 0.0),
        (torch.float32, 2, 1, None, 0.0, True, False, 0.0),
        (torch.bfloat16, 4, 2, "float", 0.1, False, True, 50.0),  # Gemma 2's soft-capping
    ]
    for dtype, hq, hkv, mask_kind, p, causal, mask_grad, softcap in cases:
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
    return launches


def _conv_launches():
    from inductor_conv.kernels.causal_conv1d import causal_conv1d_bwd, causal_conv1d_fwd

    launches = []
    B, C, L, K = 2, 64, 256, 4
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
    """Compile every distinct recorded launch for sm_90; one result dict per variant."""
    results, seen = [], set()
    for kernel, args, kwargs in _attention_launches() + _conv_launches():
        src, options, arguments = source(kernel, args, dict(kwargs))
        key = (kernel.fn.__name__, src.hash(), tuple(sorted(options.items())))
        if key in seen:
            continue
        seen.add(key)
        shown = {k: arguments[k] for k in _SHOWN if not isinstance(arguments.get(k), (torch.Tensor, type(None)))}
        name = kernel.fn.__name__ + "(" + ", ".join(f"{k}={v}" for k, v in {**shown, **options}.items()) + ")"
        compiled = triton.compile(src, target=SM90, options=options)
        ptx = compiled.asm["ptx"]
        loop_ops = [ops for _, _, ops in loops(sass(compiled))]
        local_in_loops = sum(ops["LDL"] + ops["STL"] for ops in loop_ops)
        result = dict(kernel=name, **resources(compiled), ex2=sorted(set(re.findall(r"\bex2\.approx[.\w]*", ptx))),
                      loops=len(loop_ops), local_in_loops=local_in_loops)
        results.append(result)
        report(f"regs {result['regs']:3d}  stack {result['stack']:4d} B ({local_in_loops} LDL/STL in loops)"
               f"  shared {result['shared']:6d} B"
               f"{'  wgmma SERIALISED' if result['wgmma_serialized'] else ''}  {name}")
    return results


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") == "1":
        sys.exit("run without TRITON_INTERPRET=1: the interpreter replaces the kernels this compiles")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if "--json" in sys.argv:
        print(json.dumps(compile_all(report=lambda line: None)))
    else:
        compile_all()
