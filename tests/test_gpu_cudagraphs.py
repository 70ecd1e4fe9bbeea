"""GPU: torch.compile(mode="reduce-overhead") (CUDA graph trees) with both rewrites, training and inference.

One residual block (causal depthwise conv + SiLU, then causal attention), B2 L256 dim 512, 8 heads of 64, bf16. Each
test compiles it once with the plugin under mode="reduce-overhead" and runs several steps: the first runs the
compiled code eagerly (graph trees warm up), the second records the CUDA graphs, later ones replay them. Checked:
- outputs and gradients against float64 eager, within 2x the error of eager bf16 (plus a bf16 ulp) at every step;
- the attention ran where config.attention_cudnn says (cuDNN's fused kernels without mask or dropout, else our
  template) and the conv ran our template (their helpers called in the generated code);
- CUDA graphs are used: no cudagraph skip, no graph partition, each replay step replays exactly the graphs the
  recording step captured (forward and backward, or the forward alone) and captures nothing new;
- no recompilation per step (error_on_recompile after the first step; one Dynamo graph);
- dropout (our template; Note [dropout replay] in kernels/attn_math.py): its seed is drawn inside the graph from
  torch's CUDA generator (patterns/attention_forms.py's torch.randint, Inductor's seeds kernel), which CUDA graphs
  advance on every replay, so masks differ between replays, torch.manual_seed reproduces them, and a replay
  computes what the same compiled code computes without CUDA graphs from the same seed.
"""
from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import inductor_conv
from inductor_conv._compat import fx_graph_cache_disabled

# the block's head dim is 64: the compiled cuDNN route's floor lowered, so config.attention_cudnn alone decides
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("cudnn_route_at_every_head_dim")]

B, L, DIM, HEADS = 2, 256, 512, 8
STEPS = 4  # warm-up, record, two replays
TEMPLATE_HELPERS = ("attn_fwd_rows", "attn_bwd_dkdv_cols")  # called only by our attention templates
CONV_HELPERS = ("fwd_cols", "bwd_cols")  # called only by our conv templates
CUDNN = "_scaled_dot_product_cudnn_attention"


class Block(nn.Module):
    """x + attention(conv(x)): a causal depthwise conv + SiLU, then hand-written causal attention whose mask is
    built in the graph (so the pass makes it is_causal, which cuDNN takes when there is no dropout)."""

    def __init__(self, p: float, packed: bool = False) -> None:
        super().__init__()
        self.p = p
        self.conv = nn.Conv1d(DIM, DIM, 4, groups=DIM, padding=3)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        # packed: the causal mask of three packed documents, a buffer (a graph input: the pass cannot prove it causal,
        # so the templates read it with its summary, Note [summary kernels in the graph])
        doc = torch.arange(L) * 3 // L
        self.register_buffer("keep", (doc[:, None] == doc[None, :]) & torch.ones(L, L, dtype=torch.bool).tril()
                             if packed else None)

    def forward(self, x):  # x (B, L, DIM)
        Lx = x.shape[1]
        h = F.silu(self.conv(x.transpose(1, 2))[..., :Lx]).transpose(1, 2)
        q, k, v = self.qkv(h).view(B, Lx, 3, HEADS, DIM // HEADS).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        keep = self.keep if self.keep is not None else torch.ones(Lx, Lx, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
        o = F.dropout(torch.softmax(s, dim=-1), p=self.p, training=self.p > 0) @ v
        return x + o.transpose(1, 2).reshape(B, Lx, DIM)


class GraphCalls:
    """Counts CUDA graph captures and replays (CUDA graph trees record and replay through torch.cuda.CUDAGraph)."""

    def __init__(self, monkeypatch) -> None:
        self.captures = self.replays = 0
        capture_begin, replay = torch.cuda.CUDAGraph.capture_begin, torch.cuda.CUDAGraph.replay

        def counted_capture_begin(graph, *args, **kwargs):
            self.captures += 1
            return capture_begin(graph, *args, **kwargs)

        def counted_replay(graph):
            self.replays += 1
            return replay(graph)

        monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_begin", counted_capture_begin)
        monkeypatch.setattr(torch.cuda.CUDAGraph, "replay", counted_replay)

    def take(self) -> tuple[int, int]:
        counts, self.captures, self.replays = (self.captures, self.replays), 0, 0
        return counts


def _block(p: float, dtype=torch.bfloat16, packed: bool = False):
    torch.manual_seed(0)
    return Block(p, packed).cuda().to(dtype), torch.randn(B, L, DIM, device="cuda", dtype=dtype)


def _step(fn, params, x, train: bool) -> list[torch.Tensor]:
    """(output, then dx and each parameter's gradient in training), cloned: the next replay overwrites the graph's
    outputs."""
    torch.compiler.cudagraph_mark_step_begin()
    if not train:
        with torch.no_grad():
            return [fn(x).clone()]
    x = x.detach().requires_grad_(True)
    out = fn(x)
    grads = torch.autograd.grad(out.float().square().mean(), [x, *params])
    return [t.clone() for t in (out.detach(), *grads)]


def _max_err(a, b):
    return (a.double() - b.double()).abs().max().item()


def _compiled_steps(model, x, train: bool, graph_calls: GraphCalls, seeds=(None,) * STEPS):
    """Compile ``model`` with the plugin and mode="reduce-overhead" and run one step per entry of ``seeds``
    (torch.manual_seed(seed) first where it is not None); returns (per-step results, generated code of the first
    step, (captures, replays) per step). No step after the first may recompile."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    inductor_conv.reset_counters()
    graph_calls.take()
    compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)
    params = list(model.parameters())
    results, calls = [], []
    with fx_graph_cache_disabled(), inductor_conv.enabled(("cuda",)):
        for i, seed in enumerate(seeds):
            if seed is not None:
                torch.manual_seed(seed)
            if i == 0:
                result, code = run_and_get_code(lambda: _step(compiled, params, x, train))
            else:
                with torch._dynamo.config.patch(error_on_recompile=True):
                    result = _step(compiled, params, x, train)
            results.append(result)
            calls.append(graph_calls.take())
    counters = torch._dynamo.utils.counters
    assert counters["stats"]["unique_graphs"] == 1, dict(counters["stats"])
    assert counters["inductor"]["cudagraph_skips"] == 0, "Inductor skipped CUDA graphs (see its warning above)"
    assert counters["inductor"]["cudagraph_partitions"] == 0, "the graph was partitioned around a CUDA-graph-unsafe op"
    return results, "\n".join(code), calls


def _assert_graphs_replayed(calls, train: bool):
    """Step 0 warms up (no graph of ours), step 1 records each graph once and replays it, later steps only replay
    them. Step 0 creates the graph-tree manager, which captures one empty graph to keep its memory pool alive
    (CUDAGraphTreeManager.__init__, torch 2.11 and 2.13; seen on the H200 box): one capture, never replayed."""
    graphs = 2 if train else 1  # forward and backward, or the forward alone
    assert calls[0] in ((0, 0), (1, 0)), calls
    assert calls[1] == (graphs, graphs), calls
    assert all(c == (0, graphs) for c in calls[2:]), calls


def _assert_called(code: str, helpers) -> None:
    for helper in helpers:  # called, not only defined: every template appends all the helpers' definitions
        assert re.search(rf"(?<!def ){helper}\(", code), helper


@pytest.mark.parametrize("cudnn", [True, False, "packed"], ids=["cudnn", "template", "packed"])
@pytest.mark.parametrize("train", [True, False], ids=["training", "inference"])
def test_reduce_overhead_matches_eager(cudnn, train, monkeypatch):
    """No dropout: every step (warm-up, recording, replays) is within 2x eager bf16's error against float64, the
    attention runs on cuDNN or our template as config.attention_cudnn says, and CUDA graphs are replayed.  packed:
    a mask buffer of packed documents, read by our template with the summary's kernels launched in the graph (Note
    [summary kernels in the graph]), captured and replayed with the rest."""
    packed = cudnn == "packed"
    cudnn = cudnn is True
    monkeypatch.setattr(inductor_conv.config, "attention_cudnn", cudnn)
    graph_calls = GraphCalls(monkeypatch)
    model, x = _block(p=0.0, packed=packed)
    params = list(model.parameters())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    ref = _step(model.double(), list(model.parameters()), x.double(), train)
    model.load_state_dict(state)
    model.to(torch.bfloat16)
    eager = _step(model, params, x, train)

    results, code, calls = _compiled_steps(model, x, train, graph_calls)

    assert inductor_conv.counters() == {"causal_conv1d": 1, "attention": 1}
    _assert_called(code, CONV_HELPERS[: 2 if train else 1])
    if cudnn:
        assert CUDNN in code and not re.search(r"(?<!def )attn_fwd_rows\(", code)
    else:
        assert CUDNN not in code
        _assert_called(code, TEMPLATE_HELPERS[: 2 if train else 1])
    summaries = len(re.findall(r"\b_mask_flags_kernel\w*\.run\(", code))
    # one pass over the mask, in the forward: the backward reads the saved summary (Note [summaries saved for the
    # backward] in patterns/attention_summary.py)
    assert summaries == (1 if packed else 0) and "attention_mask_summary" not in code, summaries
    _assert_graphs_replayed(calls, train)
    names = ["output"] + (["dx"] + [f"d{n}" for n, _ in model.named_parameters()] if train else [])
    for step, result in enumerate(results):
        assert len(result) == len(names) == len(eager) == len(ref)
        for name, o, e, r in zip(names, result, eager, ref):
            bound = 2 * _max_err(e, r) + 2**-8 * r.abs().max().item()
            assert _max_err(o, r) <= bound, (step, name, _max_err(o, r), _max_err(e, r))


def test_dropout_masks_under_cuda_graphs(monkeypatch):
    """p = 0.1 (our template, training): the dropout mask changes from one replay to the next, torch.manual_seed
    replays the same masks (bit for bit), and a replay computes what the same graph compiled without CUDA graphs
    computes after the same torch.manual_seed: far closer to it than two different masks are."""
    graph_calls = GraphCalls(monkeypatch)
    model, x = _block(p=0.1)
    params = list(model.parameters())
    names = ["output", "dx"] + [f"d{n}" for n, _ in model.named_parameters()]

    # warm-up, recording, then two replays after manual_seed(7), then two more after manual_seed(7) again
    results, code, calls = _compiled_steps(model, x, True, graph_calls, seeds=(None, None, 7, None, 7, None))
    assert inductor_conv.counters() == {"causal_conv1d": 1, "attention": 1}
    _assert_called(code, TEMPLATE_HELPERS + CONV_HELPERS)
    assert CUDNN not in code
    _assert_graphs_replayed(calls, train=True)
    a1, a2, b1, b2 = results[2:]
    for name, t1, t2, u1, u2 in zip(names, a1, a2, b1, b2):
        assert torch.equal(t1, u1) and torch.equal(t2, u2), f"{name}: manual_seed did not reproduce the replay"
    assert not torch.equal(a1[0], a2[0]), "two replays used the same dropout mask"

    # The same graph compiled without CUDA graphs, from the same seed.
    torch._dynamo.reset()
    with fx_graph_cache_disabled(), inductor_conv.enabled(("cuda",)):
        plain = torch.compile(model, dynamic=False)
        _step(plain, params, x, True)  # compile
        torch.manual_seed(7)
        c1, c2 = [_step(plain, params, x, True) for _ in range(2)]
    for replayed, plain_result, other_mask in ((a1, c1, a2), (a2, c2, a1)):
        for name, t, u, other in zip(names, replayed, plain_result, other_mask):
            mask_change = _max_err(t, other)
            assert mask_change > 0 and _max_err(t, u) <= 0.1 * mask_change, (name, _max_err(t, u), mask_change)
