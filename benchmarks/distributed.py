"""FSDP2 training on N GPUs (NCCL) with every decoder block compiled, default Inductor against the plugin: the recipe
of tests/test_distributed.py at full size.

    torchrun --nproc-per-node N benchmarks/distributed.py [--models llama,mamba2] [--variants inductor,plugin]
        [--layers 8] [--seq 2048] [--batch 4] [--micro-batches 1] [--steps 20] [--quick] [--out results.md]
    torchrun --nproc-per-node 2 benchmarks/distributed.py --device cpu --tiny     (smoke test: gloo, tiny configs)

Recipe (torchtitan's order): build the model from a config (seed 0, fp32 parameters), ``block.compile()`` each decoder
block, ``fully_shard`` each block and then the root with ``MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32)``, AdamW. Models: Llama with GQA (hidden 2048, 16 query / 4 KV heads of 128, TinyLlama's MLP,
attention dropout 0.1) and Mamba2 (hidden 1024, 32 heads of 64, state 128; HF's torch path, no mamba_ssm kernels),
``attn_implementation="eager"`` (the attention the plugin rewrites).

Data and seeds: the global batch (``--batch`` sequences, the same on every world size) is split into world size x
``--micro-batches`` shards; shard v is the v-th "virtual rank" (rank r runs shards r*M .. r*M+M-1 as gradient
accumulation) and its step runs from ``torch.manual_seed(1000 * step + v)``. The attention dropout mask is a function
of that seed and the row's index in its shard (Note [dropout replay] in kernels/attn_math.py), so a run on N GPUs and
one on one GPU with ``--micro-batches N`` compute the same steps: their loss curves agree to bf16 rounding (the
reduction order differs). Default Inductor's dropout draws other masks: its curve is close, not equal.

Printed: the settings; per model and variant the first step's seconds (compile), the median step time after 3 warm-up
steps, peak memory and rewrites (inductor_conv.counters(), per compiled graph; one graph serves every block) for each
rank, and the loss curve (global mean loss per step). Inductor's FX graph and AOTAutograd caches are off, so each
rank compiles and counts its rewrites (the plugin's pattern cache stays on).
Each row and curve is printed as soon as it is measured. The default run is four cold compiles (two models, two
variants) and 80 steps; where a device slot is short, run one model per call (``--models llama``).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import statistics
import time
import warnings

import torch
import torch.distributed as dist
import transformers
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import inductor_conv
from inductor_conv._compat import compiled_graph_caches_disabled

from common import scan_outside_graph

_MAMBA2_SCAN = "transformers.models.mamba2.modeling_mamba2.mamba2_chunk_scan"

VOCAB = 32000
WARMUP = 3  # steps before timing (the first compiles)


@dataclasses.dataclass(frozen=True)
class Spec:
    model_type: str
    config: dict
    layers: int
    seq: int
    batch: int  # global batch, sequences
    tiny: dict  # config overrides of the CPU smoke test


MODELS = {
    # TinyLlama's widths: hidden 2048, 16 query heads on 4 KV heads (repeat_kv), head dim 128, MLP 5632
    "llama": Spec("llama", dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=16,
                                num_key_value_heads=4, attention_dropout=0.1), 8, 2048, 4,
                 dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2)),
    # Mamba-2: inner 2048 = 32 heads of 64, state 128, one group, chunks of 256 (HF's chunked torch path)
    "mamba2": Spec("mamba2", dict(hidden_size=1024, num_heads=32, head_dim=64, state_size=128, n_groups=1, expand=2,
                                  conv_kernel=4, chunk_size=256), 8, 2048, 4,
                   dict(hidden_size=32, num_heads=4, head_dim=16, state_size=8, chunk_size=16)),
}
VARIANTS = {"inductor": False, "plugin": True}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="llama,mamba2", help=f"comma-separated, of {list(MODELS)}")
    parser.add_argument("--variants", default="inductor,plugin", help=f"comma-separated, of {list(VARIANTS)}")
    parser.add_argument("--layers", type=int, default=None, help="decoder layers (default 8)")
    parser.add_argument("--seq", type=int, default=None, help="sequence length (default 2048)")
    parser.add_argument("--batch", type=int, default=None, help="global batch in sequences (default 4)")
    parser.add_argument("--micro-batches", type=int, default=1,
                        help="gradient-accumulation steps per rank (one GPU with N reproduces N GPUs with 1)")
    parser.add_argument("--steps", type=int, default=20, help="steps per variant, warm-up included")
    parser.add_argument("--quick", action="store_true", help="2 layers, sequence 1024, 8 steps")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: gloo (with --tiny)")
    parser.add_argument("--tiny", action="store_true", help="tiny configs, 2 layers, sequence 32, 5 steps")
    parser.add_argument("--out", default=None, help="rank 0 also writes the table and loss curves to this file")
    args = parser.parse_args()
    for name, known in (("models", MODELS), ("variants", VARIANTS)):
        wanted = getattr(args, name).split(",")
        if set(wanted) - set(known):
            parser.error(f"--{name}: unknown {sorted(set(wanted) - set(known))}; known: {list(known)}")
        setattr(args, name, wanted)
    if args.quick or args.tiny:
        args.layers, args.seq = args.layers or 2, args.seq or (32 if args.tiny else 1024)
        args.steps = min(args.steps, 5 if args.tiny else 8)
    if args.steps <= WARMUP:
        parser.error(f"--steps must exceed the {WARMUP} warm-up steps")
    return args


def build(spec: Spec, layers: int, seq: int, args) -> torch.nn.Module:
    """fp32 parameters on this rank's device, identical on every rank (seed 0), training mode (dropout on)."""
    kwargs = dict(spec.config, vocab_size=VOCAB, num_hidden_layers=layers, max_position_embeddings=max(seq, 64))
    if args.tiny:
        kwargs.update(spec.tiny, vocab_size=128)
    config = transformers.AutoConfig.for_model(spec.model_type, **kwargs)
    torch.manual_seed(0)
    with warnings.catch_warnings(), torch.device(args.device):
        warnings.simplefilter("ignore")
        return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").train()


def blocks(model) -> torch.nn.ModuleList:
    return (model.model if hasattr(model, "model") else model.backbone).layers


def shard_model(model: torch.nn.Module) -> torch.nn.Module:
    """Per-block compile, then fully_shard each block and the root with bf16 parameters and fp32 reduction."""
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in blocks(model):
        block.compile(dynamic=False)
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def run_variant(spec: Spec, plugin: bool, args, layers: int, seq: int, batch: int) -> dict:
    """Train ``args.steps`` steps; this rank's times, peak memory, rewrites, and the global loss per step."""
    rank, world, M, device = dist.get_rank(), dist.get_world_size(), args.micro_batches, args.device
    cuda = device == "cuda"
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    inductor_conv.reset_counters()
    if plugin:
        inductor_conv.enable((device,))
    else:
        inductor_conv.disable()
    model = shard_model(build(spec, layers, seq, args))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    vocab = model.config.vocab_size
    shards = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1)).to(device).chunk(
        world * M)

    def step(i: int) -> torch.Tensor:
        total = torch.zeros((), device=device)
        for m in range(M):
            v = rank * M + m  # the virtual rank (module docstring)
            torch.manual_seed(1000 * i + v)
            loss = model(input_ids=shards[v], labels=shards[v], use_cache=False).loss / M
            loss.backward()
            total += loss.detach()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        dist.all_reduce(total)
        return total / world

    times, losses = [], []
    try:
        for i in range(args.steps):
            if i == WARMUP and cuda:
                torch.cuda.reset_peak_memory_stats()
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            losses.append(step(i).item())  # .item() waits for the step
            times.append(time.perf_counter() - start)
    finally:
        inductor_conv.disable()
    return dict(compile_s=times[0], step_ms=statistics.median(times[WARMUP:]) * 1e3,
                peak=torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan"),
                rewrites=inductor_conv.counters(), graphs=torch._dynamo.utils.counters["stats"]["unique_graphs"],
                losses=losses)


def main() -> None:
    args = parse_args()
    cuda = args.device == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    lines = []

    def say(line: str = "", keep: bool = True) -> None:
        if rank == 0:
            print(line, flush=True)
            if keep:
                lines.append(line)

    device_name = torch.cuda.get_device_name() if cuda else "CPU"
    say(f"# distributed benchmark {datetime.date.today()}: FSDP2 on {world} x {device_name}, torch "
        f"{torch.__version__}, transformers {transformers.__version__}; per-block compile, bf16 parameters, fp32 "
        f"reduction; micro-batches per rank {args.micro_batches}, {args.steps} steps (median of the last "
        f"{args.steps - WARMUP}){', tiny configs' if args.tiny else ''}")
    say()
    say("| model | layers x global B x S | variant | compile s | step ms per rank | peak GiB per rank | "
        "rewrites per rank | graphs |")
    say("|---|---|---|---|---|---|---|---|")
    curves = []
    with compiled_graph_caches_disabled():
        for name in args.models:
            spec = MODELS[name]
            layers, seq, batch = args.layers or spec.layers, args.seq or spec.seq, args.batch or spec.batch
            if batch % (world * args.micro_batches):
                raise SystemExit(f"--batch {batch} must split into {world} ranks x {args.micro_batches} micro-batches")
            for variant in args.variants:
                # torch 2.11 cannot generate Mamba-2's split cumsum, with or without the plugin: its scan runs
                # eagerly, as in benchmarks/models.py
                with scan_outside_graph(_MAMBA2_SCAN if name == "mamba2" else None):
                    r = run_variant(spec, VARIANTS[variant], args, layers, seq, batch)
                per_rank = [None] * world
                dist.all_gather_object(per_rank, (r["step_ms"], r["peak"], r["rewrites"]))
                say(f"| {name} | {layers} x {batch} x {seq} | {variant} | {r['compile_s']:.1f} | "
                    f"{', '.join(f'{ms:.1f}' for ms, _, _ in per_rank)} | "
                    f"{', '.join(f'{peak:.2f}' for _, peak, _ in per_rank)} | "
                    f"{'; '.join(', '.join(f'{k} {v}' for k, v in c.items()) for _, _, c in per_rank)} | "
                    f"{r['graphs']} |")
                curves.append(f"loss {name} {variant}: " + " ".join(f"{x:.5f}" for x in r["losses"]))
                say(curves[-1], keep=False)  # printed now, kept below the table in --out
                torch._dynamo.reset()
                if cuda:
                    torch.cuda.empty_cache()
    say()
    lines += curves
    if args.out and rank == 0:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
