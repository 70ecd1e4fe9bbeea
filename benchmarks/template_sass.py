"""The attention templates as sm_90 machine code, without a GPU: registers, spills, wgmma serialisation, loop bodies.

    python benchmarks/template_sass.py [--shape B,H,S,D] [--hkv HKV] [--causal] [--p P] [--tile BM,BN,WARPS,STAGES]
                                       [--masked-first] [--group N] [--kv-first 0|1] [--pair] [--tma]
                                       [--softcap CAP] [--fwd] [--sass FILE] [--ttgir FILE]

Renders `inductor_conv_attention_bwd` (or `_fwd` with --fwd) the way Inductor does for static shapes — sizes and
strides as literals, kernel options as constexpr lines, 16-byte aligned pointers — with a plain tl.store for
store_output, compiles it with Triton's NVIDIA backend for sm_90 (Triton ships ptxas; no GPU needed), and prints
registers, stack, shared memory, ptxas' wgmma-serialisation advisory (C7515) and, per loop of the SASS, its size and
HGMMA / WARPGROUP / local-memory (LDL, STL) instruction counts.  This is a stand-in for Inductor's renderer (the
same jinja hooks the CPU test harness in tests/test_lowerings_attention.py fakes, but static), checked against the
GPU: it gave the backward's shared memory exactly (98816 / 99328 bytes) and the causal backward's serialised wgmmas
that ncu's barrier stalls and tensor-pipe activity showed (Note [masked tiles first] in kernels/attn_math.py).
Internal Triton API (ASTSource); written for triton 3.6.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile

import jinja2
import triton
from triton.compiler import ASTSource

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from compile_sm90 import SM90, loops, resources, sass  # noqa: E402

_TYPES = dict(Q="*bf16", K="*bf16", V="*bf16", MASK="*i1", SEED="*i64", DO="*bf16", O="*bf16", LSE="*fp32",
              DELTA="*fp32", DQ="*bf16", DV="*bf16", DS="*fp32")


def _contiguous(shape):
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return tuple(reversed(strides))


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


def render(name: str, shape, constexprs: dict, hkv: int | None = None) -> tuple[str, list[str]]:
    """The template's kernel source with Inductor-like static sizes, and its input names (def_kernel order);
    hkv: key/value heads (GQA), default H."""
    from inductor_conv.lowerings.attention import _load

    B, H, S, D = shape
    shapes = {n: (B, H, S, D) for n in ("Q", "DO", "O", "DQ")}
    shapes.update({n: (B, hkv or H, S, D) for n in ("K", "V", "DV")})
    shapes.update(LSE=(B, H, S), DELTA=(B, H, S), MASK=(1, 1, 1, 1), SEED=(1,), DS=(1, 1, 1, 1))

    def stride(n, dim=None):
        st = _contiguous(shapes[n])
        return str(st[dim]) if dim is not None else ", ".join(map(str, st))

    def size(n, dim):
        return str(shapes[n][dim])

    def store_output(indices, val, mask, indent_width=4, val_shape=None):  # O (forward) or dK (backward)
        out = shapes["Q"] if name.endswith("fwd") else shapes["K"]
        offset = " + ".join(f"({i}) * {s}" for i, s in zip(indices, _contiguous(out)))
        return f"tl.store(out_ptr0 + {offset}, {val}, {mask})"

    return render_template(_load(name), constexprs, stride, size, store_output)


def compile_source(source: str, names, types: dict, num_warps: int, num_stages: int):
    """Compile a rendered template (`kernel(arg_<name>..., out_ptr0)`, bf16 output) for sm_90, every pointer
    16-byte aligned as Inductor's launcher specialises them; types: Triton type of each input name."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rendered_template.py")
        with open(path, "w") as f:
            f.write(source)
        spec = importlib.util.spec_from_file_location("rendered_template", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        signature = {f"arg_{n}": types[n] for n in names} | {"out_ptr0": "*bf16"}
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(signature))}
        return triton.compile(ASTSource(module.kernel, signature, constexprs={}, attrs=attrs), target=SM90,
                              options=dict(num_warps=num_warps, num_stages=num_stages))


def compile_template(name, shape, constexprs, num_warps, num_stages, hkv=None):
    source, names = render(name, shape, constexprs, hkv)
    return compile_source(source, names, _TYPES, num_warps, num_stages)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="2,16,8192,128")
    parser.add_argument("--hkv", type=int, default=None, help="key/value heads (GQA; default: H)")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--p", type=float, default=0.0)
    parser.add_argument("--tile", default=None, help="BM,BN,WARPS,STAGES (default: the CUDA tile table's)")
    parser.add_argument("--masked-first", action="store_true")
    parser.add_argument("--group", type=int, default=None,
                        help="CAUSAL_GROUP (default as the lowering: 8 forward; backward 0 masked-first, else 2)")
    parser.add_argument("--kv-first", type=int, default=1,
                        help="the backward's KV_FIRST (default as the lowering: 1, every dK/dV program first)")
    parser.add_argument("--pair", action="store_true", help="CAUSAL_PAIR: two row blocks a causal forward program")
    parser.add_argument("--tma", action="store_true", help="USE_TMA: streamed tiles through TMA descriptors")
    parser.add_argument("--softcap", type=float, default=0.0, help="SOFTCAP: scores capped at this value (0: off)")
    parser.add_argument("--fwd", action="store_true")
    parser.add_argument("--sass", default=None, help="also write the SASS listing to this file")
    parser.add_argument("--ttgir", default=None, help="also write Triton's GPU IR (layouts, convert_layout) here")
    args = parser.parse_args()
    import torch
    from inductor_conv.kernels.attention import score_scales
    from inductor_conv.lowerings.heuristics.attention import attn_bwd_tile, attn_fwd_tile
    from inductor_conv.reference.attention import dropout_threshold

    shape = tuple(map(int, args.shape.split(",")))
    D = shape[3]
    pick = attn_fwd_tile if args.fwd else attn_bwd_tile
    tile = pick(torch.bfloat16, D, "cuda", causal=args.causal, dropout=args.p > 0)
    if args.group is None:
        args.group = 8 if args.fwd else 0 if args.masked_first else 2
    bm, bn, warps, stages = map(int, args.tile.split(",")) if args.tile else (
        tile.block_m, tile.block_n, tile.num_warps, tile.num_stages)
    qk_scale2, softcap_scale = score_scales(D ** -0.5, args.softcap)
    constexprs = dict(
        HEAD_DIM=D, BLOCK_D=max(16, triton.next_power_of_2(D)), MASK_KIND=0, IS_CAUSAL=args.causal,
        HAS_DROPOUT=args.p > 0, DOT_DTYPE="tl.bfloat16", PRECISION="'tf32'", ACC_DTYPE="tl.float32",
        QK_SCALE2=qk_scale2, SCALE=D ** -0.5, DROPOUT_THRESHOLD=dropout_threshold(args.p),
        DROPOUT_SCALE=1.0 / (1.0 - args.p), CAUSAL_GROUP=args.group, MASKED_FIRST=args.masked_first, STORE_DS=False,
        CAUSAL_PAIR=args.pair, USE_TMA=args.tma, SOFTCAP=args.softcap > 0, SOFTCAP_SCALE=softcap_scale,
        BLOCK_M=bm, BLOCK_N=bn, **({} if args.fwd else dict(KV_FIRST=bool(args.kv_first))))
    name = "inductor_conv_attention_fwd" if args.fwd else "inductor_conv_attention_bwd"
    compiled = compile_template(name, shape, constexprs, warps, stages, args.hkv)
    usage = resources(compiled)
    print(f"{name} shape {shape} hkv={args.hkv or shape[1]} causal={args.causal} p={args.p} "
          f"tile ({bm}, {bn}, {warps}, {stages}) masked_first={args.masked_first} softcap={args.softcap}: "
          f"regs {usage['regs']}, "
          f"stack {usage['stack']} B, shared "
          f"{usage['shared']} B, wgmma {'SERIALISED (C7515)' if usage['wgmma_serialized'] else 'pipelined'}")
    listing = sass(compiled)
    if args.ttgir:
        with open(args.ttgir, "w") as f:
            f.write(compiled.asm["ttgir"])
    if args.sass:
        with open(args.sass, "w") as f:
            f.write(listing)
    for first, last, ops in loops(listing):
        counts = ", ".join(f"{op} {ops[op]}" for op in ("HGMMA", "WARPGROUP", "MUFU", "LDGSTS", "LDL", "STL"))
        print(f"  loop at instruction {first}: {last - first + 1} instructions; {counts}")


if __name__ == "__main__":
    main()
