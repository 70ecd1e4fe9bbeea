"""The demo behind ``python -m inductor_conv demo``.

A small Mamba/Llama-style block written in plain eager PyTorch — in_proj Linear, causal depthwise ``nn.Conv1d``
sliced back to length L, SiLU, then hand-written causal attention — compiled by Inductor with inductor_conv
enabled, one training step.  Prints as it goes: where the search patterns came from (Note [pattern cache]), what
each graph was rewritten into, what each compiled graph runs (our ops, Inductor's generated kernels; on a GPU the
kernel times too), the largest difference from eager (forward and gradients), and on a GPU the time and peak memory
of a training step against the same model compiled without the plugin.  On a CPU the ops around ours are left to
ATen (no C++ to compile: the demo answers in seconds), and our ops run their torch fallback unless
TRITON_INTERPRET=1 runs their Triton kernels through Triton's interpreter.  Exits non-zero when either pattern is
not rewritten.
"""
from __future__ import annotations

import contextlib
import logging
import math
import re
import time

import torch
import torch.nn.functional as F
from torch import nn

import inductor_conv
from inductor_conv._compat import aten_fallbacks, fx_graph_cache_disabled, run_and_get_code
from inductor_conv.kernels import interpreting
from inductor_conv.patterns import graph_pass, pattern_cache


class ShortConvAttentionBlock(nn.Module):
    def __init__(self, dim: int, heads: int, width: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.in_proj = nn.Linear(dim, dim)
        self.conv = nn.Conv1d(dim, dim, width, groups=dim, padding=width - 1)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):  # x (B, L, dim)
        B, L, dim = x.shape
        h = self.in_proj(x).transpose(1, 2)  # (B, dim, L): a transposed view of the Linear output
        h = F.silu(self.conv(h)[..., :L]).transpose(1, 2)  # causal depthwise conv + SiLU
        q, k, v = self.qkv(h).view(B, L, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        attn = torch.softmax(scores, dim=-1) @ v
        return self.out(attn.transpose(1, 2).reshape(B, L, dim)) + x


def _timed(fn, device, iters, rounds=7, warmup=5):
    """(median ms per call over `rounds` rounds of `iters` calls, peak MiB): a few warm-up calls first (lazy kernel
    and cuDNN plan builds), and the median, because a ~2 ms step is bound by CPU time that varies between rounds."""
    if device != "cuda":
        return float("nan"), float("nan")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) / iters * 1e3)
    return sorted(times)[rounds // 2], torch.cuda.max_memory_allocated() / 2**20


def kernel_times(fn, iters: int = 10) -> list[tuple[str, float, int]]:
    """(kernel name, GPU µs per call, launches per call) of every kernel fn launches, longest first (torch.profiler,
    device self time), after one warm-up call."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    rows = [(e.key, e.self_device_time_total / iters, e.count // iters) for e in prof.key_averages()
            if e.self_device_time_total > 0]
    return sorted(rows, key=lambda r: -r[1])


def gpu_ms(fn, iters: int = 10) -> float:
    """Milliseconds of GPU kernel time per call of fn, every kernel it launches summed: what a CPU-bound wall time
    hides (benchmarks/common.py uses it too)."""
    return sum(us for _, us, _ in kernel_times(fn, iters)) / 1e3


def kernels_in(code: str) -> tuple[list[str], list[str], list[str]]:
    """(our ops, kernels Inductor generated, other calls) in the Python of one compiled graph, in order."""
    calls = list(dict.fromkeys(re.findall(r"\b(torch\.ops\.\w+\.\w+|extern_kernels\.\w+)", code)))
    ours = [c.split(".")[-1] for c in calls if c.startswith("torch.ops.inductor_conv.")]
    generated = re.findall(r"^(\w+) = async_compile\.\w+\(", code, re.M)
    return ours, generated, [c for c in calls if not c.startswith("torch.ops.inductor_conv.")]


def say(text: str) -> None:
    print(text, flush=True)


# The arguments of our ops worth showing in a rewritten graph: they tell which form was matched.
_SHOWN = {"causal_conv1d_fwd": ("activation",), "attention_fwd": ("attn_mask", "is_causal", "dropout_p")}


def _describe(node) -> str:
    name = node.target._schema.name.split("::")[1]
    values = {**dict(zip((a.name for a in node.target._schema.arguments), node.args)), **node.kwargs}
    shown = [f"{k}={'a tensor' if isinstance(values.get(k), torch.fx.Node) else repr(values.get(k))}"
             for k in _SHOWN.get(name, ()) if k in values]
    return f"{name}({', '.join(shown)})" if shown else name


@contextlib.contextmanager
def narrated():
    """Print, as compilation goes, where each capability's search patterns came from (pattern_cache's log) and
    which of our ops each graph was rewritten into."""
    class Say(logging.Handler):
        def emit(self, record):
            say(f"   patterns: {record.getMessage()}")

    def observe(graph):
        calls = [_describe(n) for n in graph.nodes
                 if n.op == "call_function" and getattr(n.target, "namespace", None) == "inductor_conv"]
        say(f"   graph rewritten into: {', '.join(calls) or 'nothing of ours'}")

    logger, handler = logging.getLogger(pattern_cache.__name__), Say(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    if not logger.isEnabledFor(logging.INFO):
        logger.setLevel(logging.INFO)
    graph_pass.GRAPH_OBSERVERS.append(observe)
    try:
        yield
    finally:
        graph_pass.GRAPH_OBSERVERS.remove(observe)
        logger.removeHandler(handler)
        logger.setLevel(level)


def _compile_step(step, model, device: str, plugin: bool):
    """(compiled model, its first training step's results, the Python of each graph compiled), with Inductor's caches
    off so that the pass runs (a cache hit would skip it), and on a CPU with every other op left to ATen
    (``aten_fallbacks``: g++ on the rest of the block would take most of the demo's time; the rewrite is the same)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(fx_graph_cache_disabled())
        if device != "cuda":
            stack.enter_context(aten_fallbacks())
        if plugin:
            stack.enter_context(inductor_conv.enabled(device_types=(device,)))
            stack.enter_context(narrated())
        compiled = torch.compile(model)
        out, codes = run_and_get_code(step, compiled)  # Dynamo reset first: a fresh compile
    return compiled, out, codes


def _say_kernels(codes: list[str], device: str) -> None:
    """What each compiled graph runs: our ops, the kernels Inductor generated (our templates among them on a GPU),
    and how many other ops it calls."""
    for code in codes:
        ours, generated, other = kernels_in(code)
        shown = ", ".join(generated[:6]) + ("..." if len(generated) > 6 else "")
        say(f"   {'backward' if 'tangents_' in code else 'forward'} graph runs: our ops {', '.join(ours) or 'none'}; "
            f"{len(generated)} kernels Inductor generated{': ' + shown if generated else ''}; {len(other)} other ops")
    if device != "cuda":
        say("   (on a CPU our ops run " + ("their Triton kernels through Triton's interpreter)" if interpreting() else
            "their torch fallback, the same math; TRITON_INTERPRET=1 runs their Triton kernels, through Triton's "
            "interpreter, slower)"))


def run_demo(device: str) -> int:
    torch.manual_seed(0)
    if device == "cuda":
        B, L, dim, heads, dtype, iters = 8, 1024, 1024, 8, torch.bfloat16, 20
    else:
        B, L, dim, heads, dtype, iters = 2, 16, 32, 2, torch.float32, 1
    say(f"inductor_conv demo on {device}: a block of in_proj, causal depthwise conv1d + SiLU, hand-written causal "
        f"attention and out_proj; one training step, {dtype}, B={B} L={L} dim={dim} heads={heads}")
    model = ShortConvAttentionBlock(dim, heads).to(device=device, dtype=dtype)
    x = torch.randn(B, L, dim, device=device, dtype=dtype, requires_grad=True)

    def step(m):
        x.grad = None
        for p in model.parameters():
            p.grad = None
        y = m(x)
        y.float().square().mean().backward()
        return y.detach(), x.grad.detach(), model.conv.weight.grad.detach()

    eager = step(model)
    results = {}
    # On a GPU the block is compiled again without the plugin, for the timings; a CPU has nothing to time.
    for label, plugin in (("inductor_conv", True), ("plain Inductor", False))[: 2 if device == "cuda" else 1]:
        start = time.perf_counter()
        say(f"compiling with {label} (Inductor's caches off, so that the pass runs"
            + ("; on a CPU the ops around ours are left to ATen" if device != "cuda" else "") + ")...")
        inductor_conv.reset_counters()
        compiled, out, codes = _compile_step(step, model, device, plugin)
        counts = dict(inductor_conv.counters())
        say(f"   compiled and ran a training step in {time.perf_counter() - start:.1f} s")
        if plugin:
            _say_kernels(codes, device)
        if plugin and device == "cuda":  # now: the next compile resets Dynamo, and this model with it
            say("   GPU kernels of a training step (µs per step, launches):")
            for name, us, count in kernel_times(lambda: step(compiled), iters)[:10]:
                say(f"   {us:9.1f} x{count} {name[:100]}")
        ms, mib = _timed(lambda: step(compiled), device, iters)
        gpu = gpu_ms(lambda: step(compiled), iters) if device == "cuda" else float("nan")
        results[label] = (out, counts, ms, gpu, mib)

    out, counts, *_ = results["inductor_conv"]
    say(f"patterns rewritten: {counts}")
    for name, a, b in zip(("output", "dx", "dconv_weight"), out, eager):
        err = (a.float() - b.float()).abs().max().item()
        say(f"max |compiled - eager| {name}: {err:.3e}")
    if device == "cuda":
        for label, (_, _, t, g, m) in results.items():
            say(f"{label:>15}: {t:7.3f} ms / training step (wall; GPU kernels {g:6.3f} ms), peak memory {m:8.1f} MiB")
    ok = counts["causal_conv1d"] >= 1 and counts["attention"] >= 1
    say("OK" if ok else "FAILED: a pattern was not rewritten")
    return 0 if ok else 1
