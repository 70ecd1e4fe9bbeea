"""What a user's clock shows: wall time, GPU kernel time and host (CPU) time per call, for both public ops called
eagerly and for the same code compiled with and without the plugin.

    python benchmarks/overhead.py [--quick] [--cases 0,2] [--impls ours-op,sdpa] [--dropout 0.1,0] [--rounds 1]
                                  [--profile] [--out results.md]

Columns (milliseconds):
  wall  triton.testing.do_bench median (CUDA events around each call, L2 flushed between calls)
  GPU   the kernels one call launches, summed (torch.profiler device time)
  host  CPU time to issue one call: the median of 7 rounds, each the mean of 25 back-to-back calls without
        synchronising (a call whose GPU work is longer than its host work can block on a full launch queue)
A call is host-bound when wall ≈ host > GPU.  Rows:
  attention (causal, at each --dropout p): inductor_conv.attention eagerly (ours-op; at p = 0 it hands calls of
    at least config.attention_cudnn_eager_min_work to cuDNN, Note [cuDNN route], and ours-op-kernels is the same call
    on our kernels), F.scaled_dot_product_attention
    eagerly (sdpa), the op with its Python backward rather than the C++ node (ours-op-python,
    config.native_backward off), the hand-written form of benchmarks/attention.py compiled with the plugin
    (ours-compiled) and by default Inductor;
  conv: inductor_conv.causal_conv1d eagerly (ours-op), benchmarks/conv.py's F.pad + conv1d + SiLU compiled with
    the plugin (ours-compiled) and by default Inductor (also what the eager op is held to).
Then a stack of 1 and of 8 identical residual blocks (conv + attention) compiled into one graph: the host time of
a step grows with the rewritten ops it launches, (host8 - host1) / 7 is the host cost of one block's ops, and host1
less that is the per-graph cost (Dynamo guards, AOTAutograd's runtime wrappers, the autograd engine).
--profile adds cProfile's top functions (by own time) for one eager forward+backward of each op and for one
compiled step of the 8-block stack: where the host time goes.
"""
from __future__ import annotations

import cProfile
import datetime
import io
import math
import pstats
import time

import torch
import torch.nn.functional as F
from torch import nn

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

from common import bench, compile_with_plugin, config_patch, gpu_ms, parse_args, pick, pick_impls, write_table

# (B, H, S, D) causal, p=0.1: tiny, benchmarks/attention.py's D64 case, its first case
ATTENTION_CASES = [(1, 8, 256, 64), (8, 16, 1024, 64), (4, 16, 2048, 128)]
# (B, C, L, K): tiny, then benchmarks/conv.py's shapes
CONV_CASES = [(1, 2048, 256, 4), (16, 1536, 1024, 4), (8, 5120, 2048, 4)]


def host_ms(fn, calls: int = 25, rounds: int = 7) -> float:
    """CPU milliseconds to issue one call: the median over `rounds` rounds of the mean of `calls` back-to-back calls
    (no synchronisation within a round; the host clock of the lent machine moves by ~20% between rounds)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e3)
    torch.cuda.synchronize()
    return sorted(times)[rounds // 2]


def timings(fn) -> tuple[float, float, float]:
    """(wall, GPU, host) milliseconds per call of fn."""
    return bench(fn), gpu_ms(fn), host_ms(fn)


class _Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


def autograd_floor(lines):
    """Host time of the smallest forward+backward a user can write (an identity autograd.Function and
    torch.autograd.grad): what every eager forward+backward row above pays before any kernel."""
    x = torch.randn(8, device="cuda", requires_grad=True)
    g = torch.ones_like(x)
    floor = host_ms(lambda: torch.autograd.grad(_Identity.apply(x), (x,), g))
    lines.append(f"| autograd floor (identity Function, torch.autograd.grad) | - | - | - | - | - | - | {floor:.3f} |")
    print(lines[-1], flush=True)


def eager_attention(q, k, v, causal: bool, p: float):
    """benchmarks/attention.py's hand-written form (no GQA here)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        S = q.shape[-2]
        mask = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return F.dropout(torch.softmax(scores, dim=-1), p=p, training=p > 0) @ v


def eager_conv(x, w, b):
    K = w.shape[-1]
    return F.silu(F.conv1d(F.pad(x, (K - 1, 0)), w.unsqueeze(1), b, groups=x.shape[1]))


def attention_impls():
    return {
        "ours-op": lambda q, k, v, causal, p: inductor_conv.attention(q, k, v, dropout_p=p, is_causal=causal),
        # the eager op with config.attention_cudnn off: our kernels where a p = 0 call would go to cuDNN
        "ours-op-kernels": lambda q, k, v, causal, p: inductor_conv.attention(q, k, v, dropout_p=p, is_causal=causal),
        # the eager op with config.native_backward off: its Python backward instead of the C++ node
        "ours-op-python": lambda q, k, v, causal, p: inductor_conv.attention(q, k, v, dropout_p=p, is_causal=causal),
        "sdpa": lambda q, k, v, causal, p: F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal),
        "ours-compiled": "on",
        "inductor": "off",
    }


def conv_impls():
    return {
        "ours-op": lambda x, w, b: inductor_conv.causal_conv1d(x, w, b, activation="silu"),
        "ours-op-python": lambda x, w, b: inductor_conv.causal_conv1d(x, w, b, activation="silu"),
        "ours-compiled": "on",
        "inductor": "off",
    }


def fwd_and_fwd_bwd(fn, make_inputs):
    """(wall, GPU, host) of a no-grad forward, then of forward + backward (torch.autograd.grad)."""
    inputs = make_inputs(False)
    with torch.no_grad():
        fwd = timings(lambda: fn(*inputs))
    grads = make_inputs(True)
    leaves = [t for t in grads if isinstance(t, torch.Tensor) and t.requires_grad]
    dy = torch.randn_like(fn(*grads))

    def step():
        torch.autograd.grad(fn(*grads), leaves, dy)

    return fwd, timings(step)


def row(lines, label, name, fwd, fb):
    line = (f"| {label} | {name} | {fwd[0]:.3f} | {fwd[1]:.3f} | {fwd[2]:.3f} | {fb[0]:.3f} | {fb[1]:.3f} | "
            f"{fb[2]:.3f} |")
    lines.append(line)
    print(line, flush=True)


def run_cases(lines, cases, impls, eager_form, make, label_of, rounds: int = 1, skip=lambda name, case: False):
    """One row per (case, implementation) that `skip` keeps; "on" / "off" compile eager_form with / without the
    plugin.  rounds > 1 measures the eager implementations of a case that many times, interleaved (A B C A B C ...),
    and reports each column's median: host-bound rows move by tens of percent between measurements on the lent
    machine."""
    for case in cases:
        runs = {}
        for r in range(rounds):
            for name, fn in impls.items():
                if skip(name, case):
                    continue
                settings = {"attention_cudnn": False} if name == "ours-op-kernels" else {}
                if name == "ours-op-python":
                    settings = {"native_backward": False}
                elif name.startswith("ours-op"):
                    native_extension()  # built before it is measured, not in the background during it
                if isinstance(fn, str):
                    if r:
                        continue  # compiled rows: one round
                    fn = compile_with_plugin(eager_form, plugin=fn == "on")
                try:
                    with config_patch(settings):
                        runs.setdefault(name, []).append(fwd_and_fwd_bwd(fn, lambda grad: make(case, grad)))
                except Exception as e:  # one failing implementation must not hide the others
                    print(f"| {label_of(case)} | {name} | failed: {type(e).__name__}: {e} |", flush=True)
                    continue
                finally:
                    inductor_conv.disable()
        for name, measured in runs.items():
            fwd, fb = ([sorted(col)[len(col) // 2] for col in zip(*(m[i] for m in measured))] for i in (0, 1))
            row(lines, label_of(case), name, fwd, fb)


def native_extension() -> None:
    """Builds the C++ backward node's extension (once; a minute on first use), which the eager ops' backward runs
    on (config.native_backward), so that the rows measure it rather than the Python backward it stands in for."""
    from inductor_conv.kernels.native import build

    build(wait=True)


class Block(nn.Module):
    """A residual block with one rewritten conv and one rewritten attention (the demo's block, smaller)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.conv = nn.Conv1d(dim, dim, 4, groups=dim, padding=3)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):  # x (B, L, dim)
        B, L, dim = x.shape
        h = F.silu(self.conv(x.transpose(1, 2))[..., :L]).transpose(1, 2)
        q, k, v = self.qkv(h).view(B, L, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        o = eager_attention(q, k, v, True, 0.1)
        return x + o.transpose(1, 2).reshape(B, L, dim)


def stack_host(lines, n_blocks_list=(1, 8), profile=False):
    B, L, dim, heads = 1, 256, 512, 8
    lines += ["", f"Compiled stacks of identical blocks (B{B} L{L} dim{dim}, conv + causal attention p=0.1), training "
              "step (forward + backward), ms:", "",
              "| blocks | impl | wall | GPU | host | rewrites |", "|---|---|---|---|---|---|"]
    print("\n".join(lines[-5:]), flush=True)
    for n in n_blocks_list:
        model = nn.Sequential(*[Block(dim, heads) for _ in range(n)]).cuda().to(torch.bfloat16)
        x = torch.randn(B, L, dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for plugin in (True, False):
            compiled = compile_with_plugin(model, plugin)
            try:
                def step():
                    torch.autograd.grad(compiled(x).sum(), [x, *model.parameters()])

                step()
                counts = dict(inductor_conv.counters())
                wall, gpu, host = timings(step)
                if profile and plugin and n == max(n_blocks_list):
                    print_profile(f"compiled {n}-block step with the plugin", step)
            finally:
                inductor_conv.disable()
            line = f"| {n} | {'ours-compiled' if plugin else 'inductor'} | {wall:.3f} | {gpu:.3f} | {host:.3f} | {counts} |"
            lines.append(line)
            print(line, flush=True)


def print_profile(title, fn, calls=200, top=30):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    print(f"\n--- cProfile, {title}, {calls} calls (tottime = own time) ---\n{out.getvalue()}", flush=True)


def main():
    args = parse_args(__doc__)
    torch.manual_seed(0)
    lines = [f"# overhead benchmark {datetime.date.today()} on {torch.cuda.get_device_name()}, torch "
             f"{torch.__version__}", "",
             "| case | impl | fwd wall | fwd GPU | fwd host | fwd+bwd wall | fwd+bwd GPU | fwd+bwd host |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)

    def make_attention(case, grad):
        B, H, S, D, p = case
        return [torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=grad) for _ in range(3)] + [
            True, p]

    def make_conv(case, grad):
        B, C, L, K = case
        x = torch.randn(B, C, L, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
        w = (torch.randn(C, K, device="cuda", dtype=torch.bfloat16) / K).requires_grad_(grad)
        b = torch.randn(C, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
        return [x, w, b]

    # --impls picks rows by name (ours-op, sdpa, ours-compiled, inductor); the compiled stacks need ours-compiled
    wanted = pick_impls({**attention_impls(), **conv_impls()}, args)
    attention = {k: v for k, v in attention_impls().items() if k in wanted}
    conv = {k: v for k, v in conv_impls().items() if k in wanted}
    with fx_graph_cache_disabled():
        cases = [(*case, p) for p in map(float, args.dropout.split(",")) for case in pick(ATTENTION_CASES, args)]
        # with dropout the op runs our kernels anyway: the ours-op row is the ours-op-kernels one
        run_cases(lines, cases, attention, eager_attention, make_attention,
                  lambda c: "attention causal p={4:g} B{0} H{1} S{2} D{3}".format(*c), args.rounds,
                  skip=lambda name, case: name == "ours-op-kernels" and case[4] > 0)
        run_cases(lines, pick(CONV_CASES, args), conv, eager_conv, make_conv,
                  lambda c: "conv+SiLU B{} C{} L{} K{}".format(*c), args.rounds)
        autograd_floor(lines)
        if args.profile:
            q, k, v, *_ = make_attention((*ATTENTION_CASES[0], 0.1), True)
            print_profile("eager attention fwd+bwd B1 H8 S256 D64",
                          lambda: inductor_conv.attention(q, k, v, dropout_p=0.1, is_causal=True).sum().backward())
            x, w, b = make_conv(CONV_CASES[0], True)
            print_profile("eager conv fwd+bwd B1 C2048 L256",
                          lambda: inductor_conv.causal_conv1d(x, w, b, activation="silu").sum().backward())
        if "ours-compiled" in wanted:
            stack_host(lines, profile=args.profile)
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
