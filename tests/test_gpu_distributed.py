"""FSDP2 on GPUs with NCCL: every decoder block compiled with the plugin, bf16 mixed precision, against the same
model on one process (tests/test_distributed.py checks the same recipe on CPU, docs/distributed.md).

    python -m pytest -q -m gpu tests/test_gpu_distributed.py                          (world size 1, in process)
    torchrun --nproc-per-node N -m pytest -q -m gpu tests/test_gpu_distributed.py     (N ranks)

Each rank trains one step of a small Llama (GQA, attention dropout) and Mamba2 on its shard of the global batch;
the reference is the same model unwrapped in bf16, stepped on every shard in turn with that shard's seed (the
dropout masks are each rank's own: Note [dropout replay] in kernels/attn_math.py), gradients averaged.
"""
from __future__ import annotations

import os
import tempfile
import warnings

import pytest
import torch

import inductor_conv
from inductor_conv._compat import compiled_graph_caches_disabled

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.gpu

VOCAB, BATCH, LENGTH, SEED = 512, 4, 256, 1000
MODELS = {
    # 8 query heads on 2 KV heads of 64, attention dropout 0.1, two layers (one compiled graph)
    "llama": (dict(model_type="llama", hidden_size=512, intermediate_size=1024, num_hidden_layers=2,
                   num_attention_heads=8, num_key_value_heads=2, attention_dropout=0.1,
                   max_position_embeddings=LENGTH), dict(attention=1, causal_conv1d=0)),
    "mamba2": (dict(model_type="mamba2", hidden_size=256, num_heads=8, head_dim=64, state_size=64, n_groups=1,
                    expand=2, conv_kernel=4, chunk_size=64, num_hidden_layers=2), dict(attention=0, causal_conv1d=1)),
}
# Both runs compute in bf16 from the same bf16 parameters and seeds, but in two compiled graphs (FSDP2's blocks are a
# subclass with parameters in all-gather buffers) and with fp32 sums of the bf16 gradients in another order: a few
# bf16 roundings (2^-8 = 0.4%) apart. On CPU (gloo, the same test) the gradients were 0.5% apart over all parameters
# and up to 1.8% for one small parameter (a Mamba2 dt_bias, A_log or norm: few terms, little averaging); the loss
# 1e-4. Another dropout mask (a shard seeded as another rank) moved the gradients by 28% there.
LOSS_TOL, GRAD_TOL, PARAM_TOL = 1e-3, 1e-2, 5e-2


@pytest.fixture(scope="module")
def group():
    """The process group: torchrun's (env://) when launched by it, else one rank in this process."""
    import torch.distributed as dist

    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("nccl")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    else:
        store = dist.FileStore(tempfile.mktemp(prefix="inductor_conv_store_"), 1)
        dist.init_process_group("nccl", store=store, rank=0, world_size=1)
    yield dist.group.WORLD
    dist.destroy_process_group()


def _build(name):
    kwargs = dict(MODELS[name][0])
    config = transformers.AutoConfig.for_model(kwargs.pop("model_type"), vocab_size=VOCAB, **kwargs)
    torch.manual_seed(0)
    with warnings.catch_warnings(), torch.device("cuda"):
        warnings.simplefilter("ignore")
        return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").train()


def _compile_blocks(model):
    for block in (model.model if hasattr(model, "model") else model.backbone).layers:
        block.compile()
    return model


def _step(model, ids, seed):
    torch.manual_seed(seed)
    loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    loss.backward()
    return loss.detach().float()


def _rel_err(got, want) -> float:
    return ((got.double() - want.double()).norm() / want.double().norm()).item()


@pytest.mark.parametrize("name", list(MODELS))
def test_fsdp2_bf16_per_block_compile(group, name):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    rank, world = dist.get_rank(), dist.get_world_size()
    ids = torch.randint(0, VOCAB, (BATCH * world, LENGTH), generator=torch.Generator().manual_seed(1)).cuda()
    shards = ids.chunk(world)
    torch._dynamo.reset()
    inductor_conv.reset_counters()
    with compiled_graph_caches_disabled(), inductor_conv.enabled(("cuda",)):
        model = _compile_blocks(_build(name))
        mesh = init_device_mesh("cuda", (world,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for block in (model.model if hasattr(model, "model") else model.backbone).layers:
            fully_shard(block, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        loss = _step(model, shards[rank], SEED + rank)
        dist.all_reduce(loss)
        loss /= world
        grads = [p.grad.full_tensor() for p in model.parameters()]
        assert inductor_conv.counters() == MODELS[name][1], rank

        reference = _compile_blocks(_build(name).bfloat16())
        want_loss, want_grads = 0.0, [torch.zeros_like(g) for g in grads]
        for r, shard in enumerate(shards):
            reference.zero_grad(set_to_none=True)
            want_loss += _step(reference, shard, SEED + r) / world
            for w, p in zip(want_grads, reference.parameters()):
                w += p.grad.float() / world
    assert abs(loss.item() - want_loss.item()) <= LOSS_TOL * abs(want_loss.item()), (loss, want_loss)
    flat = [torch.cat([t.flatten() for t in ts]) for ts in (grads, want_grads)]
    assert _rel_err(*flat) <= GRAD_TOL, _rel_err(*flat)
    for i, (g, w) in enumerate(zip(grads, want_grads)):
        assert _rel_err(g, w) <= PARAM_TOL, (i, _rel_err(g, w))
