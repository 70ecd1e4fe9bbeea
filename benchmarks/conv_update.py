"""The causal conv's decode step on the GPU: ours vs transformers' eager spelling, default Inductor and Dao.

    python benchmarks/conv_update.py [--quick] [--cases 0,3] [--impls ours-op,inductor] [--out results.md]

For each (B, C, T) -- bf16 x [B, C, T], cache [B, C, S = K = 4] (transformers' layout), weight [C, K], bias [C],
SiLU -- it times (wall: median of triton.testing.do_bench, L2 flushed between calls; GPU: the kernels of one call,
from the profiler) one step of:
  ours-op            inductor_conv.causal_conv1d_update called eagerly, linear state
  ours-op-circular   the same with cache_seqlens (circular state: only the T new columns are written)
  ours-compiled      transformers 5.24's torch spelling (cat -> conv1d -> last T outputs, copy_ into the cache)
                     compiled with inductor_conv enabled (rewritten to the op, the cache written in place)
  inductor           the same spelling compiled by default Inductor
  eager-hf           the same spelling run eagerly
  dao                Dao-AILab's causal_conv1d_update (when importable; K <= 4)
Floors: the bytes a step must move at the device-copy bandwidth measured in the same run: read x, the state and
the weight and bias, write y and the state -- all S columns for a linear state (each shifts), the T new ones for a
circular one ("floor" column: the linear floor for the linear rows, the circular floor for ours-op-circular).
A decode step moves a few MB at most, so wall time at small B is launch and host time, not bandwidth: the GPU
column is what the kernels themselves take.
"""
from __future__ import annotations

import contextlib
import datetime

import torch

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from common import bench, compile_with_plugin, gpu_ms, parse_args, pick, pick_impls, write_table
from conv import copy_bandwidth

K = 4
CASES = [(B, C, T) for B in (1, 16, 64, 256) for C in (2048, 8192) for T in (1, 4)]


def hf_step(x, conv_state, weight, bias):
    """transformers 5.24's causal_conv1d_update torch fallback (models/mamba/modeling_mamba.py), activation SiLU
    (``__wrapped__``: the decorated name calls Dao's kernel where causal_conv1d is installed)."""
    from transformers.models.mamba.modeling_mamba import causal_conv1d_update

    return causal_conv1d_update.__wrapped__(x, conv_state, weight, bias, activation="silu")


def make_inputs(B, C, T):
    dtype = torch.bfloat16
    x = torch.randn(B, C, T, device="cuda", dtype=dtype)
    state = torch.randn(B, C, K, device="cuda", dtype=dtype)
    weight = torch.randn(C, K, device="cuda", dtype=dtype) / K
    bias = torch.randn(C, device="cuda", dtype=dtype)
    seqlens = torch.randint(0, 1000, (B,), device="cuda", dtype=torch.int32)
    return x, state, weight, bias, seqlens


def floor_bytes(B, C, T, circular: bool) -> int:
    """Bytes one step must move (bf16): x and y (T columns), the state read (S) and written (S, or T circular),
    the weight and the bias."""
    written = min(T, K) if circular else K
    return 2 * (2 * B * C * T + B * C * (K + written) + C * (K + 1))


def implementations():
    impls = {
        "ours-op": lambda x, s, w, b, n: inductor_conv.causal_conv1d_update(x, s, w, b, "silu"),
        "ours-op-circular": lambda x, s, w, b, n: inductor_conv.causal_conv1d_update(x, s, w, b, "silu", n),
        "ours-compiled": "compiled-on",
        "inductor": "compiled-off",
        "eager-hf": lambda x, s, w, b, n: hf_step(x, s, w, b),
    }
    with contextlib.suppress(Exception):
        from causal_conv1d import causal_conv1d_update as dao_update

        impls["dao"] = lambda x, s, w, b, n: dao_update(x, s, w, b, "silu")
    return impls


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    copy_gbs = copy_bandwidth()
    lines = [
        f"# conv update benchmark {datetime.date.today()} on {torch.cuda.get_device_name()}, torch {torch.__version__}",
        f"device copy: {copy_gbs:.0f} GB/s (read + write); bf16, K = S = {K}, SiLU",
        "",
        "| B C T | impl | wall ms | GPU ms | floor ms | wall × floor | GPU × floor |",
        "|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    wanted = pick_impls(implementations(), args)
    rewrites = {}
    with fx_graph_cache_disabled(), torch.no_grad():
        for B, C, T in pick(CASES, args):
            inputs = make_inputs(B, C, T)
            for name, fn in implementations().items():
                if name not in wanted:
                    continue
                if isinstance(fn, str):
                    compiled = compile_with_plugin(hf_step, plugin=fn == "compiled-on")
                    fn = lambda x, s, w, b, n, compiled=compiled: compiled(x, s, w, b)  # noqa: E731
                try:
                    fn(*inputs)  # compile / warm up
                    wall = bench(lambda: fn(*inputs))
                    gpu = gpu_ms(lambda: fn(*inputs))
                except Exception as e:  # one implementation failing must not hide the others
                    inductor_conv.disable()
                    print(f"| {B} {C} {T} | {name} | failed: {type(e).__name__}: {e} |", flush=True)
                    continue
                if name == "ours-compiled":
                    rewrites[(B, C, T)] = torch._dynamo.utils.counters["inductor_conv"]["causal_conv1d_update"]
                inductor_conv.disable()
                floor = floor_bytes(B, C, T, circular=name == "ours-op-circular") / copy_gbs / 1e6
                line = (f"| {B} {C} {T} | {name} | {wall:.4f} | {gpu:.4f} | {floor:.4f} | {wall / floor:.1f} "
                        f"| {gpu / floor:.2f} |")
                lines.append(line)
                print(line, flush=True)
    lines += ["", f"rewrites by ours-compiled (1 per case): {rewrites}"]
    print(lines[-1])
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
