"""GPU end to end (run on the device): realistic model code compiled with the plugin, bf16, vs float64 eager.

Each model is plain eager PyTorch as people write it; we check the rewrite happened (counters), the generated
code calls our Triton templates, and outputs and gradients (input and every parameter) are close to a float64 eager
run.
"""
import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import inductor_conv
from inductor_conv._compat import compiled_graph_caches_disabled

from helpers import fused_activations, recording_graphs

pytestmark = pytest.mark.gpu


class MambaShortConv(nn.Module):
    def __init__(self, dim, width=4):
        super().__init__()
        self.in_proj = nn.Linear(dim, dim)
        self.conv = nn.Conv1d(dim, dim, width, groups=dim, padding=width - 1)

    def forward(self, x):
        L = x.shape[1]
        h = self.in_proj(x).transpose(1, 2)
        return F.silu(self.conv(h)[..., :L]).transpose(1, 2)


class LlamaAttention(nn.Module):
    """HF Llama eager attention: repeat_kv GQA, additive causal mask, fp32 softmax, dropout."""

    def __init__(self, dim, heads, kv_heads, p):
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.p = heads, kv_heads, dim // heads, p
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)

    def forward(self, x, mask):
        B, L, _ = x.shape
        q = self.q(x).view(B, L, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, L, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        n_rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(B, self.kv_heads, n_rep, L, self.hd).reshape(B, self.heads, L, self.hd)
        v = v[:, :, None].expand(B, self.kv_heads, n_rep, L, self.hd).reshape(B, self.heads, L, self.hd)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=self.p, training=self.training)
        return torch.matmul(w, v).transpose(1, 2).reshape(B, L, -1)


def _run(model, inputs, dtype, autocast=None):
    """(output, dx, then each parameter's gradient in named_parameters order), as float64. ``autocast``: run under
    torch.autocast with that dtype (parameters and inputs in ``dtype``, fp32 for mixed precision)."""
    m = model.cuda().to(dtype)
    m.zero_grad(set_to_none=True)  # the same module serves the float64, eager and compiled runs
    xs = [t.cuda() for t in inputs]
    xs[0] = xs[0].to(dtype).requires_grad_(True)
    with torch.autocast("cuda", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
        out = m(*xs)
    out.float().square().mean().backward()
    return [out.detach().double(), xs[0].grad.detach().double()] + [p.grad.detach().double() for p in m.parameters()]


def _max_err(a, b):
    return (a - b).abs().max().item()


def _models_and_inputs():
    """(conv block, attention block, x, additive causal mask), seeded."""
    torch.manual_seed(0)
    B, L, dim = 2, 256, 512
    conv = MambaShortConv(dim)
    attn = LlamaAttention(dim, heads=8, kv_heads=2, p=0.0).eval()
    x = torch.randn(B, L, dim)
    mask = torch.full((L, L), float("-inf")).triu(1)[None, None]
    return conv, attn, x, mask


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_mamba_conv_and_llama_attention(dtype):
    """Compiled-with-plugin error vs float64 must stay within 2x (+ a bf16/fp16 ulp) of eager's own error in the same
    dtype, as PyTorch's _check_equal does: the comparison is against what the dtype allows, not a fixed number."""
    conv, attn, x, mask = _models_and_inputs()
    # Inductor names template kernels triton_tem_fused_*; the helpers only our templates carry identify them.
    cases = (
        (conv, (x,), "causal_conv1d", ("fwd_cols", "bwd_cols")),
        (attn, (x, mask), "attention", ("attn_fwd_rows", "attn_bwd_dkdv_cols")),
    )
    ulp = {torch.bfloat16: 2**-8, torch.float16: 2**-11}[dtype]
    for model, inputs, key, helpers in cases:
        state = {k: v.clone() for k, v in model.state_dict().items()}
        ref = _run(model.double(), [t.double() for t in inputs], torch.float64)
        model.load_state_dict(state)
        eager = _run(model, inputs, dtype)
        torch._dynamo.reset()
        inductor_conv.reset_counters()
        with compiled_graph_caches_disabled(), inductor_conv.enabled(("cuda",)), recording_graphs() as graphs:
            from torch._inductor.utils import run_and_get_code

            ours, code = run_and_get_code(lambda: _run(torch.compile(model), inputs, dtype))
        assert inductor_conv.counters()[key] == 1
        if key == "causal_conv1d":  # the SiLU is fused too: in half precision it decomposes with fp32 upcasts
            text = "".join(graphs)
            assert "sigmoid" not in text and "silu" in fused_activations(graphs), text
        generated = "\n".join(code)
        for helper in helpers:  # called, not only defined: every template appends all the helpers' definitions
            assert re.search(rf"(?<!def ){helper}\(", generated), helper
        names = ["output", "dx"] + [f"d{n}" for n, _ in model.named_parameters()]
        assert len(names) == len(ours) == len(eager) == len(ref)
        for name, o, e, r in zip(names, ours, eager, ref):
            scale = r.abs().max().item()
            assert _max_err(o, r) <= 2 * _max_err(e, r) + ulp * scale, (key, name, _max_err(o, r), _max_err(e, r))


def test_mamba_conv_and_llama_attention_under_autocast():
    """fp32 parameters trained under CUDA autocast(bf16): both rewrites happen (patterns/autocast.py moves
    autocast's casts; CPU autocast is tested on CI, CUDA autocast runs softmax in fp32, CPU's in bf16),
    within 2x eager autocast's error against float64 plus a bf16 ulp."""
    conv, attn, x, mask = _models_and_inputs()
    for model, inputs, key in ((conv, (x,), "causal_conv1d"), (attn, (x, mask), "attention")):
        state = {k: v.clone() for k, v in model.state_dict().items()}
        ref = _run(model.double(), [t.double() for t in inputs], torch.float64)
        model.load_state_dict(state)
        eager = _run(model, inputs, torch.float32, autocast=torch.bfloat16)
        torch._dynamo.reset()
        inductor_conv.reset_counters()
        with compiled_graph_caches_disabled(), inductor_conv.enabled(("cuda",)):
            ours = _run(torch.compile(model), inputs, torch.float32, autocast=torch.bfloat16)
        assert inductor_conv.counters()[key] == 1, inductor_conv.counters()
        for i, (o, e, r) in enumerate(zip(ours, eager, ref)):
            assert _max_err(o, r) <= 2 * _max_err(e, r) + 2**-8 * r.abs().max().item(), (key, i)


def test_dynamic_shapes_serve_two_lengths():
    """torch.compile(dynamic=True): one compiled graph per model serves two batch sizes and sequence lengths in
    training (symbolic B and L reach the patterns, the lowerings and both templates' grids), within 2x eager's bf16
    error against float64 plus a bf16 ulp at each."""
    conv, attn, _, _ = _models_and_inputs()
    for model, key in ((conv, "causal_conv1d"), (attn, "attention")):
        torch._dynamo.reset()
        inductor_conv.reset_counters()
        compiled = torch.compile(model, dynamic=True)
        for step, (B, L) in enumerate(((2, 256), (3, 200))):
            x = torch.randn(B, L, 512, generator=torch.Generator().manual_seed(step))
            inputs = (x,) if key == "causal_conv1d" else (x, torch.full((L, L), float("-inf")).triu(1)[None, None])
            state = {k: v.clone() for k, v in model.state_dict().items()}
            ref = _run(model.double(), [t.double() for t in inputs], torch.float64)
            model.load_state_dict(state)
            eager = _run(model, inputs, torch.bfloat16)
            with compiled_graph_caches_disabled(), inductor_conv.enabled(("cuda",)), \
                    torch._dynamo.config.patch(error_on_recompile=step > 0):
                ours = _run(compiled, inputs, torch.bfloat16)
            assert inductor_conv.counters()[key] == 1, (key, step, inductor_conv.counters())
            for i, (o, e, r) in enumerate(zip(ours, eager, ref)):
                assert _max_err(o, r) <= 2 * _max_err(e, r) + 2**-8 * r.abs().max().item(), (key, step, i)
