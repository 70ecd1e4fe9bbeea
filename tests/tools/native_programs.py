"""The native backward's Programs (Note [native backward] in inductor_conv/csrc/backward_node.cpp), and the forward
Programs of the conv (Note [native forward]) and of the attention without a mask (Note [eager attention from C++]),
checked against the Python path's own launches, on a machine without a GPU.

    python tests/tools/native_programs.py        # prints one JSON line per case: its mismatches (none: [])

For each case the eager launcher's backward (launch_bwd) is called with CPU tensors and its launches recorded, not
run (compile_sm90.record); the Program for the same call is built with Triton's `warmup` answered by a compile for
sm_90 (compile_sm90.source / compile_sm90: the binder and specialisation Triton's launcher uses on the GPU) and no
kernel loaded.  Then, launch by launch, every parameter the compiled kernel keeps (Triton drops constexprs and ints
equal to 1) must agree: an int or float the same value, a pointer the same tensor where the Python path passes one of
the call's inputs, else a buffer of the same shape, strides and dtype as the Program's slot -- and a slot the node
allocates must be what its allocation gives (empty_like of the slot it copies, or a contiguous buffer).  The count
of kept parameters plus Triton's two scratch pointers must be the Program's argument count.  Run without
TRITON_INTERPRET (tests/test_native_backward.py starts it through compile_sm90.run_script).
"""
from __future__ import annotations

import json
import os
import sys

import torch
from triton.runtime.jit import JITFunction, MockTensor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools.compile_sm90 import compile_sm90, record, source  # noqa: E402

from inductor_conv.kernels import native  # noqa: E402

_DTYPES = {"Float": torch.float32, "BFloat16": torch.bfloat16, "Half": torch.float16, "Int": torch.int32,
           "Long": torch.int64}


def _warmup(self, *args, grid, **kwargs):
    """JITFunction.warmup answered by a compile for sm_90 (no GPU, no kernel loaded)."""
    src, options, _ = source(self, [MockTensor.wrap_dtype(a) for a in args], dict(kwargs))
    compiled = compile_sm90(src, options)
    compiled._init_handles = lambda: setattr(compiled, "function", 1)
    return compiled


def _layout(t):
    return (tuple(t.shape), tuple(t.stride()), t.dtype)


def check(program, order, recorded, inputs) -> list[str]:
    """Mismatches between the Program (slots standing for `order`) and the recorded launches of the Python path."""
    problems = []
    launches = program.launches()
    if len(launches) != len(recorded):
        return [f"{len(launches)} launches, the Python path makes {len(recorded)}"]
    allocs = program.allocs()  # the buffers the node allocates: the last slots, in order
    for n, (like, shape, dtype, zero) in enumerate(allocs):
        slot = len(order) - len(allocs) + n
        if like >= 0:
            src = order[like]
            made = _layout(torch.empty_like(torch.empty_strided(src.shape, src.stride(), dtype=src.dtype)))
        else:
            made = (tuple(shape), tuple(torch.empty(shape).stride()), _DTYPES[dtype])
        if made != _layout(order[slot]):
            problems.append(f"slot {slot}: allocated as {made}, planned as {_layout(order[slot])}")
    for i, ((kernel, args, kwargs), (_, grid, threads, shared, kinds, values)) in enumerate(zip(recorded, launches)):
        src, options, bound = source(kernel, list(args), dict(kwargs))
        compiled = compile_sm90(src, options)
        kept = [name for name in kernel.arg_names if src.signature[name] != "constexpr"]
        if len(kinds) != len(kept) + 2 or kinds[-2:] != [native.NULL, native.NULL]:
            problems.append(f"launch {i}: {len(kinds)} arguments, the kernel keeps {len(kept)} + 2 scratch")
            continue
        if threads != 32 * compiled.metadata.num_warps or shared != compiled.metadata.shared:
            problems.append(f"launch {i}: {threads} threads / {shared} B shared, compiled for "
                            f"{32 * compiled.metadata.num_warps} / {compiled.metadata.shared}")
        for name, kind, value in zip(kept, kinds, values):
            arg = bound[name]
            if kind == native.SLOT:
                planned = order[int(value)]
                if any(arg is t for t in inputs):
                    if arg is not planned:
                        problems.append(f"launch {i} {name}: slot {int(value)} is not the input the path passes")
                elif _layout(arg) != _layout(planned):
                    problems.append(f"launch {i} {name}: the path passes {_layout(arg)}, slot {int(value)} holds "
                                    f"{_layout(planned)}")
            elif kind == native.CALL:  # a value of each run (the dropout seed): an int the path passes
                if not isinstance(arg, int):
                    problems.append(f"launch {i} {name}: the path passes {arg!r} for the run's value {int(value)}")
            elif not isinstance(arg, (int, float)) or float(arg) != value:
                problems.append(f"launch {i} {name}: the path passes {arg!r}, the Program {value}")
    return problems


def conv_cases():
    from inductor_conv.kernels import causal_conv1d as kc

    for layout, bias, deterministic, dtype, w_dtype, K, extra in (
            ("bcl", True, True, torch.bfloat16, torch.bfloat16, 4, None),
            ("blc", False, True, torch.float32, torch.float32, 3, None),
            ("blc", True, False, torch.bfloat16, torch.bfloat16, 4, None),
            ("bcl", True, True, torch.bfloat16, torch.float32, 2, None),  # fp32 parameters with bf16 x (Dao's op)
            ("blc", True, True, torch.bfloat16, torch.bfloat16, 4, "packed"),  # packed sequences (seq_idx)
            ("blc", True, True, torch.bfloat16, torch.bfloat16, 4, "initial"),  # initial states, channel-last
            ("bcl", False, False, torch.float32, torch.float32, 3, "initial")):
        B, C, L = 2, 96, 300
        x = torch.randn(B, L, C, dtype=dtype).transpose(1, 2) if layout == "blc" else torch.randn(B, C, L, dtype=dtype)
        w, b = torch.randn(C, K, dtype=w_dtype), torch.randn(C, dtype=w_dtype) if bias else None
        seq_idx = init = None
        if extra == "packed":  # documents of 70 tokens, then padding (-1)
            seq_idx = torch.arange(L, dtype=torch.int32).div(70, rounding_mode="floor").expand(B, L).contiguous()
            seq_idx[:, -20:] = -1
        if extra == "initial":  # Dao's layout for a channel-last x: (B, K - 1, C) transposed
            init = torch.randn(B, K - 1, C, dtype=dtype).transpose(1, 2) if layout == "blc" else \
                torch.randn(B, C, K - 1, dtype=dtype)
        dy = torch.empty_like(x).normal_()
        order = []
        program = kc._native_program(native.build(wait=True), x, w, b, seq_idx, init, "silu", deterministic,
                                     order_out=order)
        recorded = record(lambda: kc.launch_bwd(x, w, b, seq_idx, init, dy, "silu", deterministic))
        order[len(kc.native_saved(x, w, b, seq_idx, init))] = dy  # the dy the Python path is given stands for the node's
        name = f"conv {layout} K={K} bias={bias} deterministic={deterministic} {dtype} weight {w_dtype} {extra or ''}"
        yield name, program, order, recorded, [x, w, b, seq_idx, init, dy]
        order = []  # the forward's Program (Note [native forward]) against launch_fwd's launch
        program = kc._native_forward_program(native.build(wait=True), x, w, b, seq_idx, init, "silu", order_out=order)
        recorded = record(lambda: kc.launch_fwd(x, w, b, seq_idx, init, "silu"))
        yield "forward " + name, program, order, recorded, [x, w, b, seq_idx, init]


def attention_cases():
    from inductor_conv.kernels import attention as ka
    from inductor_conv.kernels.attn_mask_summary import summary_layout

    for Hq, Hkv, D, p, causal, softcap, layout, mask in (
            (4, 2, 64, 0.1, True, 0.0, "bhsd", None),
            (4, 4, 128, 0.0, False, 0.0, "bshd", None),
            (2, 2, 256, 0.1, False, 0.0, "bshd", None),
            (4, 4, 128, 0.0, False, 30.0, "bshd", None),
            (4, 2, 256, 0.1, True, 50.0, "bhsd", None),  # Gemma 2's heads
            (4, 2, 64, 0.1, False, 0.0, "bhsd", "bool"),  # a (B, 1, S, S) causal mask tensor, summarised
            (4, 4, 128, 0.0, False, 0.0, "bshd", "additive"),  # an HF padding mask (B, 1, 1, S), bf16
            (4, 2, 256, 0.0, False, 50.0, "bhsd", "additive")):  # Gemma 2 with its mask as a tensor
        B, S = 2, 300

        def make(H):
            t = torch.randn(B, S, H, D, dtype=torch.bfloat16) if layout == "bshd" else \
                torch.randn(B, H, S, D, dtype=torch.bfloat16)
            return t.transpose(1, 2) if layout == "bshd" else t

        q, k, v = make(Hq), make(Hkv), make(Hkv)
        seed = torch.zeros(1, dtype=torch.int64) if p else None
        mask4d = rows = flags = None
        if mask == "bool":
            mask4d = torch.ones(S, S, dtype=torch.bool).tril().expand(B, 1, S, S).expand(B, Hq, S, S)
        elif mask == "additive":
            mask4d = torch.zeros(B, 1, 1, S, dtype=torch.bfloat16)
            mask4d[0, ..., :17] = torch.finfo(torch.bfloat16).min
            mask4d = mask4d.expand(B, Hq, S, S)
        out, lse = torch.empty_like(q), torch.zeros(B, Hq, S)
        dout = torch.empty_like(q).normal_()
        order = []
        program = ka._native_program(native.build(wait=True), q, k, v, mask4d, p, causal, D ** -0.5, softcap,
                                     order_out=order)
        if mask4d is not None and program is not None and program.n_saved == 8 + (seed is not None):
            row_shape, _, flag_shape = summary_layout(mask4d)  # the forward's summaries, which the backward reads
            rows, flags = (torch.zeros(shape, dtype=torch.int32) for shape in (row_shape, flag_shape))
        recorded = record(lambda: ka.launch_bwd(dout, q, k, v, mask4d, out, lse, p, causal, D ** -0.5, seed, False,
                                                softcap, rows=rows, flags=flags))
        # the Python path's out, lse, seed, mask, rows, flags and dout stand where the node's saved tensors and dO
        # stand
        given = [*ka.native_saved(q, k, v, mask4d, out, lse, seed, rows, flags)[3:], dout]
        order[3:3 + len(given)] = given
        yield (f"attention {Hq}/{Hkv} D{D} p={p} causal={causal} softcap={softcap} {layout} mask={mask}", program,
               order, recorded, [q, k, v, *given])
        if mask is None and not softcap:  # the forward's Program (Note [eager attention from C++])
            order = []
            program = ka.native_forward_program(native.build(wait=True), q, k, v, p, causal, D ** -0.5,
                                                order_out=order)
            recorded = record(lambda: ka.launch_fwd_rows(q, k, v, None, p, causal, D ** -0.5, seed, 0.0,
                                                         seed_value=(1 << 61) + 12345 if p else None))
            yield (f"forward attention {Hq}/{Hkv} D{D} p={p} causal={causal} {layout}", program, order, recorded,
                   [q, k, v])


def main():
    saved = JITFunction.warmup
    JITFunction.warmup = _warmup
    try:
        for name, program, order, recorded, inputs in [*conv_cases(), *attention_cases()]:
            problems = ["no Program"] if program is None else check(program, order, recorded, inputs)
            launches = 0 if program is None else len(program.launches())
            print(json.dumps({"case": name, "problems": problems, "launches": launches}), flush=True)
    finally:
        JITFunction.warmup = saved


if __name__ == "__main__":
    main()
