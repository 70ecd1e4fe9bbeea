"""Where a model's training step spends host time, default Inductor beside the plugin: for each variant, wall and
GPU ms per step, kernel launches, CUDA runtime calls that wait for the device (synchronize, device-to-host copies),
each timed step's wall time beside the time the host took to queue it (close: host-bound; far below: the GPU sets
the pace), the host's top operators by self time, the top kernels by GPU time, the GPU time by kernel family (our
attention templates and mask summaries, matmuls, Inductor's Triton kernels, ...), and the synchronising calls torch's
sync debug mode reports.  Built for steps that are host-bound (around an eager scan, Qwen3-Next's delta rule) or at
the edge of it (Gemma 2), where a lower GPU time can still give a higher wall time.

    python benchmarks/diagnostics/model_host.py --models qwen3_next      (an encoder of models.py too: --models swin)
"""
import re
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inductor_conv  # noqa: E402
import models as M  # noqa: E402
from inductor_conv._compat import fx_graph_cache_disabled  # noqa: E402

STEPS = 9  # timed steps; each one's wall time and the time its host took to queue it are printed
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync")


# A kernel's family, by its name: the GPU time the plugin changes (our templates and kernels, the attention that
# default Inductor computes with matmuls and Triton kernels) apart from what both variants run alike.
_FAMILIES = (("ours: attention", re.compile(r"attention_(fwd|bwd)|_attn_")),
             ("ours: mask summary", re.compile(r"_mask_(flags|rows|cols)")),
             ("ours: conv", re.compile(r"causal_conv1d")),
             ("cuDNN / flash SDPA", re.compile(r"cudnn|flash|fmha|sdpa", re.I)),
             ("matmul", re.compile(r"gemm|nvjet|cutlass|xmma|sm90_|ampere_|cublas", re.I)),
             ("Inductor Triton", re.compile(r"^triton_")),
             ("copies and fills", re.compile(r"copy|fill|Memcpy|Memset|elementwise|vectorized", re.I)))


def kernel_family(name: str) -> str:
    return next((family for family, pattern in _FAMILIES if pattern.search(name)), "other")


def report(name, model, inputs, encoder):
    """Time, profile and print one compiled variant's training step (on a CPU, `--device cpu --tiny`: a smoke run of
    the same code, CPU operators only)."""
    cuda = torch.cuda.is_available()
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)

    def step():
        out = model(**inputs)
        loss = out.last_hidden_state.float().square().mean() if encoder else out.loss
        loss.backward()

    for _ in range(3):
        step()
    synchronize()
    times, issued = [], []
    for _ in range(STEPS):
        start = time.perf_counter()
        step()
        issued.append((time.perf_counter() - start) * 1e3)  # the host has queued the step
        synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
            step()
            torch.cuda.set_sync_debug_mode(0)
    synchronize()
    with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        step()
        synchronize()
    ev = prof.key_averages()
    # kernels only: a CPU op (aten::mm, Inductor's named launches) also carries the device time of the kernels it
    # launched, which would count them twice
    kernels = [e for e in ev if e.device_type == DeviceType.CUDA and e.self_device_time_total > 0]
    gpu = sum(e.self_device_time_total for e in kernels) / 1e3
    launches = sum(e.count for e in ev if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx",
                                                    "cudaLaunchKernelExC"))
    print(f"== {name}: wall {sorted(times)[STEPS // 2]:.1f} ms (min {min(times):.1f}), GPU {gpu:.1f} ms, "
          f"launches {launches}")
    print("   steps wall / host-queued ms: " + ", ".join(f"{t:.1f}/{i:.1f}" for t, i in zip(times, issued)))
    for e in ev:
        if any(e.key.startswith(w) for w in WAITS):
            print(f"   wait {e.key}: {e.count} calls, {e.self_cpu_time_total / 1e3:.2f} ms")
    seen = {}
    for w in caught:
        seen[str(w.message)[:160]] = seen.get(str(w.message)[:160], 0) + 1
    for msg, n in seen.items():
        print(f"   sync debug x{n}: {msg}")
    rows = sorted(ev, key=lambda e: -e.self_cpu_time_total)[:18]
    for e in rows:
        print(f"   {e.key[:70]:70s} n={e.count:5d} self cpu {e.self_cpu_time_total / 1e3:7.2f} ms")
    rows = sorted(kernels, key=lambda e: -e.self_device_time_total)[:16]
    for e in rows:
        print(f"   gpu {e.key[:66]:66s} n={e.count:5d} {e.self_device_time_total / 1e3:7.2f} ms")
    families = {}
    for e in kernels:
        family = kernel_family(e.key)
        n, ms = families.get(family, (0, 0.0))
        families[family] = (n + e.count, ms + e.self_device_time_total / 1e3)
    print("   gpu ms by family: " + ", ".join(f"{f} {ms:.2f} ({n})" for f, (n, ms) in
                                              sorted(families.items(), key=lambda kv: -kv[1][1])))


def main():
    args = M.parse_args()
    for model_name in args.models:
        spec = M.MODELS[model_name]
        n_layers, batch, seq = M.sizes(spec, args)
        print(f"# {model_name}: {n_layers} layers x B{batch} x S{seq}")
        with fx_graph_cache_disabled(), M.scan_outside_graph(spec):
            for plugin in (False, True):
                torch._dynamo.reset()
                inductor_conv.enable((args.device,)) if plugin else inductor_conv.disable()
                model = M.build(spec, n_layers, seq, args)
                M.compile_model(model, spec, None, False)
                if spec.encoder:  # models.py's encoder inputs and loss
                    inputs = M.encoder_inputs(spec, model.config, batch, seq, args.device,
                                              next(model.parameters()).dtype)
                else:
                    ids = torch.randint(0, model.config.vocab_size, (batch, seq), device=args.device)
                    inputs = dict(input_ids=ids, labels=ids, use_cache=False)
                try:
                    report("plugin" if plugin else "default Inductor", model, inputs, spec.encoder)
                    print("   rewrites", dict(inductor_conv.counters()),
                          "graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
                finally:
                    inductor_conv.disable()
                    del model
                    M.release()


if __name__ == "__main__":
    main()
