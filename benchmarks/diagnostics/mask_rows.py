"""Attention with a mask over an odd number of keys (rows 2 bytes apart in bf16), forward+backward, compiled by
default Inductor and with the plugin, its masks read padded (Note [mask row alignment] in lowerings/attention.py,
the default) or as they are (`ours:attention_mask_row_bytes=0`): wall and GPU ms per call and the top kernels.

    python benchmarks/diagnostics/mask_rows.py [--impl NAME ...] [--cases 0,2]

Cases: an HF encoder's additive padding mask passed into the graph ([B, 1, S, S]: the padded read costs one copy of
it a pass), and a learned position bias plus that mask computed in the graph ([B, H, S, S]: its kernel writes the
padded rows itself).  NAME: inductor, ours, eager (inductor_conv.attention called directly, no compile), or ours /
eager with config switches (`eager:attention_mask_row_bytes=0`).
"""
from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/

import inductor_conv  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402

from common import compile_with_plugin, config_patch, impl_settings, report_variant  # noqa: E402

# (B, H, S, D, the mask computed in the graph from a learned bias)
CASES = [
    (32, 12, 197, 64, False),  # ViT-B/16 at 224 with a padding mask
    (64, 3, 197, 32, True),    # a head dim 32 encoder with a learned position bias
    (16, 12, 249, 64, True),   # wav2vec2 / WavLM base's 5 s of audio, WavLM's position bias
    (16, 12, 249, 64, False),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", nargs="+", default=["inductor", "ours", "ours:attention_mask_row_bytes=0", "eager",
                                                      "eager:attention_mask_row_bytes=0"])
    parser.add_argument("--cases", default=None)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    dev, dtype = args.device, torch.bfloat16
    cases = [CASES[int(i)] for i in args.cases.split(",")] if args.cases else CASES
    for B, H, S, D, computed in cases:
        print(f"# B{B} H{H} S{S} D{D}, {'bias + padding mask computed in the graph' if computed else 'mask input'}")
        torch.manual_seed(0)
        q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=dtype, requires_grad=True) for _ in range(3))
        lengths = torch.randint(S // 2, S + 1, (B,), device=dev)
        pad = torch.where(torch.arange(S, device=dev)[None, :] < lengths[:, None], 0.0, -1e4).to(dtype)
        mask = pad[:, None, None, :].expand(B, 1, S, S).contiguous()  # HF's extended mask, [B, 1, S, S]
        bias = (0.1 * torch.randn(H, S, S, device=dev, dtype=dtype)).requires_grad_()
        grad = torch.randn_like(q)

        def attend(q, k, v, mask, bias):
            s = q @ k.transpose(-1, -2) * D ** -0.5
            s = s + (bias + pad[:, None, None, :] if computed else mask)
            return torch.softmax(s.float(), dim=-1).to(dtype) @ v

        def attend_op(q, k, v, mask, bias):
            return inductor_conv.attention(q, k, v, attn_mask=bias + pad[:, None, None, :] if computed else mask)

        for name in args.impl:
            base, switches, _ = impl_settings(name)
            with fx_graph_cache_disabled(), config_patch(switches):
                fn = attend_op if base == "eager" else compile_with_plugin(attend, plugin=base == "ours")
                report_variant(name, lambda: fn(q, k, v, mask, bias).backward(grad))
            inductor_conv.disable()
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
