"""One Swin window-attention layer (HF's SwinAttention: projections, learned relative position bias, the shifted
windows' mask), compiled by default Inductor and with the plugin under tile overrides, forward+backward: wall and
GPU ms per call and the top kernels.  Windows of 7 x 7 = 49 tokens are the short-sequence end of the templates:
each (window, head) is one tile, so a tile's latency, not its throughput, sets the time.

    python benchmarks/diagnostics/window_attention.py [--impl NAME ...] [--stages 1,3] [--batch 64]

NAME: inductor, ours, or ours with attention_profile.py's overrides (`ours:fwd_tile=64.64.4.2`,
`ours:bwd_tile=32.64.4.2`, `ours:attention_mask_ranges=0` sets a config switch, `ours:fit=0` keeps the tables' tiles
where Note [short sequences] would shrink them).
"""
from __future__ import annotations

import argparse
import os
import sys
from unittest import mock

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import inductor_conv  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402
from inductor_conv.lowerings import attention as attn_lowering  # noqa: E402

from attention_profile import lowering_overrides  # noqa: E402
from common import compile_with_plugin, config_patch, impl_settings, report_variant  # noqa: E402

# Swin-T: (stage, tokens per side at 224 x 224, channels, heads)
STAGES = {1: (56, 96, 3), 2: (28, 192, 6), 3: (14, 384, 12), 4: (7, 768, 24)}
WINDOW, SHIFT = 7, 3


def shift_mask(side: int, device) -> torch.Tensor:
    """Swin's (nW, 49, 49) mask of the shifted windows: 0 within a region, -100 across regions."""
    regions = torch.zeros(side, side, device=device)
    cuts = (slice(0, -WINDOW), slice(-WINDOW, -SHIFT), slice(-SHIFT, None))
    for n, (h, w) in enumerate((h, w) for h in cuts for w in cuts):
        regions[h, w] = n
    windows = regions.view(side // WINDOW, WINDOW, side // WINDOW, WINDOW).permute(0, 2, 1, 3).reshape(-1, WINDOW**2)
    diff = windows.unsqueeze(1) - windows.unsqueeze(2)
    return torch.where(diff != 0, -100.0, 0.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", nargs="+", default=["inductor", "ours"])
    parser.add_argument("--stages", default="1,3")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    import transformers
    from transformers.models.swin import modeling_swin

    dev, dtype = args.device, torch.bfloat16
    for stage in map(int, args.stages.split(",")):
        side, dim, heads = STAGES[stage]
        windows = args.batch * (side // WINDOW) ** 2
        config = transformers.SwinConfig(embed_dim=96, window_size=WINDOW, attn_implementation="eager")
        for shifted in (False, True):
            print(f"# stage {stage}: {windows} windows x {heads} heads x {WINDOW**2} tokens, head dim {dim // heads}, "
                  f"{'shifted (bias + window mask)' if shifted else 'bias only'}")
            torch.manual_seed(0)
            layer = modeling_swin.SwinAttention(config, dim, heads, WINDOW).to(dev, dtype).train()
            x = torch.randn(windows, WINDOW**2, dim, device=dev, dtype=dtype, requires_grad=True)
            mask = shift_mask(side, dev).to(dtype) if shifted else None
            grad = torch.randn_like(x)

            def attend(x, mask):  # the output alone, as SwinLayer uses it (returned weights would stay eager)
                return layer(x, mask)[0]

            def step(fn):
                return lambda: fn(x, mask).backward(grad)

            for name in args.impl:
                base, switches, overrides = impl_settings(name)
                keep = {"fit_fwd_tile": lambda tile, *lengths: tile, "fit_bwd_tile": lambda tile, *lengths: tile}
                fit = overrides.pop("fit", "1") == "1"
                with fx_graph_cache_disabled(), config_patch(switches), \
                        mock.patch.dict(vars(attn_lowering), {} if fit else keep), \
                        lowering_overrides(overrides, torch.empty(1, 1, 1, dim // heads), False, 0.0):
                    inductor_conv.reset_counters()
                    report_variant(name, step(compile_with_plugin(attend, plugin=base == "ours")), top=5)
                inductor_conv.disable()
                torch._dynamo.reset()


if __name__ == "__main__":
    main()
