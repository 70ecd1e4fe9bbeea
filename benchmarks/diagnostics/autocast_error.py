"""Error against float64 of a tiny Hugging Face model trained one step under torch.autocast (bf16): eager, plain
Inductor and inductor_conv, per output / parameter gradient.

    python benchmarks/diagnostics/autocast_error.py [--device cuda] [--models t5,llama] [--seeds 1,2,3]

The models and inputs are tests/test_hf_models.py's (tests/hf_models.py).  Prints, per model and seed, the tensors
where ours is furthest from float64 relative to eager autocast (largest-entry error ratio), with each side's
largest-entry and relative (Frobenius) errors.  It shows that under CUDA autocast a flash backward (Δ from the bf16
output) is 1.2-1.7x eager's relative error on T5's gradients (docs/attention.md, docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository
sys.path.insert(0, os.path.join(ROOT, "tests"))  # hf_models

import hf_models as hf  # noqa: E402
from helpers import interpreter_rounds_bf16_to_nearest  # noqa: E402

import inductor_conv  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--models", default="t5,llama")
    parser.add_argument("--seeds", default="1,2,3")
    args = parser.parse_args()
    dev = args.device
    interpreter_rounds_bf16_to_nearest()  # interpreted bf16 rounded as on the GPU: Note [interpreter bf16 rounding]
    for name in args.models.split(","):
        for seed in map(int, args.seeds.split(",")):
            model = hf.build_model(name, train=True, device=dev)
            inputs = hf.model_inputs(hf.MODELS[name][2], torch.Generator().manual_seed(seed), dev)
            eager = hf.run_model(model, inputs, train=True, compiled=False, autocast=True)
            ref = hf.run_model(copy.deepcopy(model).double(), inputs, train=True, compiled=False)
            compiled = {}
            for plugin in (False, True):
                torch._dynamo.reset()
                ours = inductor_conv.enabled(device_types=(dev,)) if plugin else contextlib.nullcontext()
                with fx_graph_cache_disabled(), ours:
                    compiled[plugin] = hf.run_model(model, inputs, train=True, compiled=True, autocast=True)
            rows = []
            flat = [[out, *grads] for out, grads in (eager, ref, compiled[False], compiled[True])]
            for i, (e, r, ind, got) in enumerate(zip(*flat)):
                err = [(x.double() - r).abs().max().item() for x in (e, ind, got)]
                rel = [(x.double() - r).norm().item() / (r.norm().item() or 1.0) for x in (e, ind, got)]
                rows.append((err[2] / max(err[0], 1e-30), i, *err, *rel))
            print(f"== {name} seed {seed}: tensor i (0 = output), largest-entry error eager / Inductor / ours, "
                  "relative error eager / Inductor / ours")
            for row in sorted(rows, reverse=True)[:4]:
                print("  ratio %.2f  i=%-3d max %.2e %.2e %.2e  rel %.2e %.2e %.2e" % row)


if __name__ == "__main__":
    main()
