"""Distributed training with the plugin on CPU: FSDP2 and DDP over gloo, activation checkpointing, bf16 mixed
precision, whole-model compile, and what does not compose (docs/distributed.md).

One 2-process run serves every test here: ``torch.multiprocessing.spawn`` starts two gloo ranks (file rendezvous),
each builds tiny Hugging Face models from configs -- Llama with GQA and attention dropout, Mamba, Mamba2 -- compiles
every decoder block with the plugin (``block.compile()``, the torchtitan recipe), wraps the model, trains a step and
writes what it saw (rewrite counters, loss, full gradients, its single-process references) to a file; the tests
read those files. The ranks run with ``TRITON_INTERPRET=0``: on CPU our ops then run their torch fallback (the same
math as the kernels, materialised; tests/test_ops_*.py check the kernels themselves), which keeps the run short.

Equal to a single-process run: the reference is the same model unwrapped, on one process, over the same global batch.
Without dropout that is one eager step over the whole batch. With attention dropout the keep mask is a function of a
seed drawn from each rank's generator and of the row's index in the rank's own batch (Note [dropout replay] in
kernels/attn_math.py), so each rank's masks come from its own generator state: the reference accumulates one
compiled step per rank's shard, seeded as that rank was.
"""
from __future__ import annotations

import functools
import os
import warnings
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor, Shard, distribute_tensor
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

import inductor_conv
from helpers import assert_as_close_as_eager
from inductor_conv import _compat
from inductor_conv._compat import compiled_graph_caches_disabled, inductor_config

transformers = pytest.importorskip("transformers")
# One pytest-xdist worker runs the whole module (.ci/run: -n 2 --dist loadgroup), so the two ranks start once.
pytestmark = pytest.mark.xdist_group("distributed")

WORLD = 2
VOCAB, BATCH, LENGTH = 64, 4, 8  # BATCH is the global batch: BATCH // WORLD sequences per rank
SEED = 1000  # rank r seeds its generator with SEED + r before each step
# fp32 compiled (Inductor's fused code, our ops' torch fallback) against fp32 eager: as tests/test_hf_models.py;
# sharded gradient reduction adds only a reordered sum of two terms.
TOL = dict(atol=1e-4, rtol=1e-4)

# name -> (config kwargs, rewrites of one compiled block graph). Llama: 4 query heads on 2 KV heads (repeat_kv),
# attention dropout 0.1, two layers (one compiled graph serves both blocks); llama_nodrop: the same without dropout.
_LLAMA = dict(model_type="llama", vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, intermediate_size=128, max_position_embeddings=64)
MODELS = {
    "llama": (_LLAMA | dict(attention_dropout=0.1), dict(attention=1, causal_conv1d=0)),
    "llama_nodrop": (_LLAMA, dict(attention=1, causal_conv1d=0)),
    # Mamba's scan as HF's Python loop (Dynamo unrolls its 8 steps): compiles faster here than associative_scan
    "mamba": (dict(model_type="mamba", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, state_size=4, expand=2,
                   conv_kernel=4, use_associative_scan=False), dict(attention=0, causal_conv1d=1)),
    "mamba2": (dict(model_type="mamba2", vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_heads=4,
                    head_dim=16, expand=2, n_groups=1, state_size=8, chunk_size=4, conv_kernel=4),
               dict(attention=0, causal_conv1d=1)),
}


# ---------------------------------------------------------------------------------------------------------------
# What each rank runs
# ---------------------------------------------------------------------------------------------------------------
def _build(name: str):
    """The model, initialised identically on every rank, in training mode (dropout on)."""
    kwargs = dict(MODELS[name][0])
    config = transformers.AutoConfig.for_model(kwargs.pop("model_type"), **kwargs)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").train()


def _blocks(model) -> torch.nn.ModuleList:
    inner = model.model if hasattr(model, "model") else model.backbone
    return inner.layers


def _batch() -> torch.Tensor:
    return torch.randint(0, VOCAB, (BATCH, LENGTH), generator=torch.Generator().manual_seed(1))


def _step(model, ids, seed):
    """One forward/backward from generator state ``seed``; the (unreduced) loss of ``ids``."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(seed)
    loss = model(input_ids=ids, labels=ids, use_cache=False).loss
    loss.backward()
    return loss.detach()


def _grads(model) -> list[torch.Tensor]:
    """Every parameter's gradient, whole (FSDP2's are sharded DTensors: gathered, a collective)."""
    return [(p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad).detach().clone()
            for p in model.parameters()]


class _Rank:
    """One rank's run: its shard of the global batch, its seed, and the results it records."""

    def __init__(self, rank: int, world: int):
        self.rank, self.world = rank, world
        self.mesh = init_device_mesh("cpu", (world,))
        self.ids = _batch()
        self.shard = self.ids.chunk(world)[rank]

    def train_step(self, model) -> dict:
        """A data-parallel step of ``model`` (wrapped) on this rank's shard: global loss, full gradients, and the
        rewrites and compiled graphs since ``_reset()``."""
        loss = _step(model, self.shard, SEED + self.rank)
        dist.all_reduce(loss)  # the mean over ranks of equal shards: the global batch's mean loss
        return dict(loss=loss / self.world, grads=_grads(model), counters=inductor_conv.counters(),
                    graphs=_compiled_graphs())

    def reference(self, model, seed_offsets=None) -> dict:
        """The single-process run of ``model`` (unwrapped) over the global batch: one step over the whole batch,
        or with ``seed_offsets`` (dropout) one step per rank's shard r from seed ``SEED + seed_offsets[r]``,
        gradients accumulated."""
        if seed_offsets is None:
            return dict(loss=_step(model, self.ids, SEED), grads=_grads(model))
        total, grads = 0.0, None
        for r, shard in enumerate(self.ids.chunk(self.world)):
            loss = _step(model, shard, SEED + seed_offsets[r])
            step_grads = _grads(model)
            total = total + loss / self.world
            grads = step_grads if grads is None else [g + s for g, s in zip(grads, step_grads)]
        return dict(loss=total, grads=[g / self.world for g in grads])


def _reset():
    inductor_conv.reset_counters()
    torch._dynamo.utils.counters["stats"].clear()


def _compiled_graphs() -> int:
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def _compile_blocks(model):
    for block in _blocks(model):
        block.compile()
    return model


def _fsdp2(model, mesh, mp_policy=None):
    """fully_shard every decoder block, then the root (the torchtitan order)."""
    kwargs = dict(mesh=mesh, mp_policy=mp_policy or MixedPrecisionPolicy())
    for block in _blocks(model):
        fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    return model


def _checkpointed(model, compile_inside: bool, **checkpoint_kwargs):
    """Each block wrapped by ``checkpoint_wrapper`` (``torch.utils.checkpoint.checkpoint``, use_reentrant=False):
    around the already compiled block (eager checkpoint, ``compile_inside=False``), or compiled with it (the
    checkpoint traced into the block's graph, torchtitan's order)."""
    blocks = _blocks(model)
    fn = functools.partial(checkpoint, use_reentrant=False, **checkpoint_kwargs)
    for i, block in enumerate(blocks):
        if not compile_inside:
            block.compile()
        blocks[i] = checkpoint_wrapper(block, checkpoint_fn=fn)
        if compile_inside:
            blocks[i].compile()
    return model


def _data_parallel(run: _Rank) -> dict:
    """Per-block compile under DDP and FSDP2 against the single-process run; dropout's seeds; Dynamo keys a compiled
    block graph by the block's class (FSDP2 swaps in a subclass) and dtype, so the references reuse DDP's graphs."""
    out = {}
    for name in ("llama", "mamba2"):
        _reset()
        out[f"ddp/{name}"] = run.train_step(DDP(_compile_blocks(_build(name))))
    for name in ("llama", "mamba", "mamba2"):
        _reset()
        out[f"fsdp2/{name}"] = run.train_step(_fsdp2(_compile_blocks(_build(name)), run.mesh))
    for name in ("mamba", "mamba2"):
        out[f"reference/{name}"] = run.reference(_build(name))
    # dropout: the reference steps each rank's shard through compiled blocks, seeded as that rank was
    out["reference/llama"] = run.reference(_compile_blocks(_build("llama")), list(range(run.world)))
    # ... and with every shard seeded alike (as if the ranks shared one generator state): must differ
    out["reference/llama/shared_seed"] = run.reference(_compile_blocks(_build("llama")), [0] * run.world)
    # the FSDP2 step again from the same seeds: bit for bit
    out["fsdp2/llama/repeat"] = run.train_step(_fsdp2(_compile_blocks(_build("llama")), run.mesh))
    return out


def _activation_checkpointing(run: _Rank) -> dict:
    """Llama with dropout under FSDP2, each block checkpointed: around its compiled graph (the LlamaDecoderLayer
    graph compiled above, as the wrapper, not the block, is sharded) and compiled with the checkpoint inside."""
    _reset()
    out = {"checkpoint/eager": run.train_step(_fsdp2(_checkpointed(_build("llama"), False), run.mesh))}
    # the recompute without the generator state restored: another seed, another mask
    out["checkpoint/eager/no_rng_state"] = run.train_step(
        _fsdp2(_checkpointed(_build("llama"), False, preserve_rng_state=False), run.mesh))
    _reset()
    out["checkpoint/compiled"] = run.train_step(_fsdp2(_checkpointed(_build("llama"), True), run.mesh))
    return out


def _mixed_precision_and_whole_model(run: _Rank) -> dict:
    """FSDP2 with bf16 parameters and fp32 reduction, compiled and eager, against float64; and torch.compile of the
    whole FSDP2-wrapped model (fp32) against eager. Llama without dropout, so that eager draws no other mask."""
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    _reset()
    out = {"mixed/llama_nodrop": run.train_step(_fsdp2(_compile_blocks(_build("llama_nodrop")), run.mesh, policy))}
    out["mixed/llama_nodrop/eager"] = run.train_step(_fsdp2(_build("llama_nodrop"), run.mesh, policy))
    out["reference/llama_nodrop/float64"] = run.reference(_build("llama_nodrop").double())
    _reset()
    out["whole/llama_nodrop"] = run.train_step(torch.compile(_fsdp2(_build("llama_nodrop"), run.mesh)))
    out["reference/llama_nodrop"] = run.reference(_build("llama_nodrop"))
    return out


def _hand_written_attention(q, k, v):
    """softmax(q kᵀ / 4) v: a form patterns/attention.py rewrites (head dim 16)."""
    return torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1) @ v


def _all_reduced_attention(q, k, v):
    """The same with the scores all-reduced over the ranks (a collective inside the region): not our pattern."""
    scores = funcol.all_reduce(q @ k.transpose(-2, -1), "sum", dist.group.WORLD)
    return torch.softmax(scores * 0.25, dim=-1) @ v


def _dtensors_and_collectives(run: _Rank) -> dict:
    """What tensor parallelism would pass: q, k, v as DTensors sharded over heads, eagerly to the public ops and
    compiled through hand-written attention; and a collective inside the attention region."""
    gen = torch.Generator().manual_seed(2)
    qkv = [torch.randn(2, 4, 16, 16, generator=gen) for _ in range(3)]  # (B, H, S, D): heads sharded
    x, w = torch.randn(2, 8, 16, generator=gen), torch.randn(8, 4, generator=gen)  # (B, C, L), (C, K): channels
    out = {}

    def as_dtensors(tensors):  # heads or channels (dim 1), or the weight's channels (dim 0), split over the ranks
        return [distribute_tensor(t, run.mesh, [Shard(1 if t.dim() > 2 else 0)]).requires_grad_() for t in tensors]

    def forward_backward(fn, tensors):
        o = fn(*tensors)
        (o.to_local() if hasattr(o, "to_local") else o).square().sum().backward()
        gather = (lambda t: t.full_tensor()) if hasattr(o, "full_tensor") else (lambda t: t)
        return [gather(o).detach()] + [gather(t.grad) for t in tensors]

    for what, call in (("attention", lambda: inductor_conv.attention(*as_dtensors(qkv), dropout_p=0.1)),
                       ("causal_conv1d", lambda: inductor_conv.causal_conv1d(*as_dtensors([x, w]), activation="silu"))):
        try:
            call()
            out[f"dtensor/eager/{what}"] = "no error"
        except Exception as e:  # noqa: BLE001 - the test reads the type and message
            out[f"dtensor/eager/{what}"] = f"{type(e).__name__}: {e}"
    out["attention/eager"] = forward_backward(_hand_written_attention, [t.clone().requires_grad_() for t in qkv])
    _reset()
    try:
        out["dtensor/compiled"] = forward_backward(torch.compile(_hand_written_attention), as_dtensors(qkv))
    except Exception as e:  # noqa: BLE001 - torch 2.11's DTensor cannot trace it (test_dtensor_inputs)
        out["dtensor/compiled"] = f"{type(e).__name__}: {e}"
    out["dtensor/compiled/counters"] = inductor_conv.counters()
    # the collective sums the two ranks' identical scores: eager's result with the scores doubled
    out["collective/eager"] = forward_backward(_all_reduced_attention, [t.clone().requires_grad_() for t in qkv])
    _reset()
    out["collective/compiled"] = forward_backward(torch.compile(_all_reduced_attention),
                                                  [t.clone().requires_grad_() for t in qkv])
    out["collective/compiled/counters"] = inductor_conv.counters()
    return out


SCENARIOS = (_data_parallel, _activation_checkpointing, _mixed_precision_and_whole_model, _dtensors_and_collectives)


def _worker(rank: int, world: int, outdir: str) -> None:
    os.environ["TRITON_INTERPRET"] = "0"  # our ops' torch fallback on CPU (module docstring)
    torch.set_num_threads(1)
    # Inductor's CPU code for the model around our ops: no compile worker pool (two ranks share the CI machine's two
    # cores) and scalar C++ (vectorising costs ~40% of each compile here and is beside the point of these tests)
    inductor_config.compile_threads = 1
    inductor_config.cpp.vec_isa_ok = False
    # block.compile() compiles Module._call_impl: one cache entry per block class (FSDP2 swaps in a subclass) and
    # dtype, more here than Dynamo's default limit of 8 (past it, a block would silently run eagerly)
    torch._dynamo.config.recompile_limit = 64
    dist.init_process_group("gloo", init_method=f"file://{outdir}/rendezvous", rank=rank, world_size=world,
                            timeout=timedelta(minutes=5))
    try:
        # each rank compiles and rewrites its own blocks (a cache hit would replay another rank's code uncounted)
        with compiled_graph_caches_disabled(), inductor_conv.enabled(device_types=("cpu",)):
            run = _Rank(rank, world)
            results = {k: v for scenario in SCENARIOS for k, v in scenario(run).items()}
    finally:
        dist.destroy_process_group()
    torch.save(results, os.path.join(outdir, f"rank{rank}.pt"))


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    """Each rank's results (one spawn for the whole module)."""
    outdir = tmp_path_factory.mktemp("distributed")
    torch.multiprocessing.spawn(_worker, args=(WORLD, str(outdir)), nprocs=WORLD, join=True)
    return [torch.load(outdir / f"rank{r}.pt") for r in range(WORLD)]


# ---------------------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------------------
def _assert_close(got: dict, want: dict) -> None:
    torch.testing.assert_close(got["loss"], want["loss"], **TOL)
    assert len(got["grads"]) == len(want["grads"])
    for i, (g, w) in enumerate(zip(got["grads"], want["grads"])):
        torch.testing.assert_close(g, w, **TOL, msg=lambda m: f"gradient {i}: {m}")


def _assert_equal(got: dict, want: dict) -> None:
    assert torch.equal(got["loss"], want["loss"])
    assert all(torch.equal(g, w) for g, w in zip(got["grads"], want["grads"], strict=True))


def _max_grad_diff(got: dict, want: dict) -> float:
    return max((g - w).abs().max().item() for g, w in zip(got["grads"], want["grads"], strict=True))


@pytest.mark.parametrize("wrap, name", [("fsdp2", "llama"), ("fsdp2", "mamba"), ("fsdp2", "mamba2"),
                                        ("ddp", "llama"), ("ddp", "mamba2")])
def test_per_block_compile_matches_single_process(ranks, wrap, name):
    """Each rank compiled its blocks and rewrote them (one compiled graph serves all blocks of a model); loss and
    gradients equal the single-process run over the same global batch."""
    for rank, res in enumerate(ranks):
        got = res[f"{wrap}/{name}"]
        assert got["counters"] == MODELS[name][1], (rank, got["counters"])
        assert got["graphs"] == 1, (rank, got["graphs"])
        _assert_close(got, res[f"reference/{name}"])


def test_dropout_masks_are_each_rank_own_and_reproducible(ranks):
    """With attention dropout, torch.manual_seed on every rank replays a step bit for bit, and the masks come from
    each rank's generator: the reference seeded per rank matches (test above), one seeded alike for all shards does
    not."""
    for res in ranks:
        _assert_equal(res["fsdp2/llama/repeat"], res["fsdp2/llama"])
        assert _max_grad_diff(res["reference/llama/shared_seed"], res["fsdp2/llama"]) > 100 * TOL["atol"]


def test_activation_checkpointing_replays_dropout(ranks):
    """checkpoint_wrapper (torch.utils.checkpoint, use_reentrant=False) under FSDP2, around compiled blocks and
    compiled with them: rewritten, and the recomputed forward draws the same dropout seed (checkpoint restores the
    generator state; a compiled graph saves the seed), so gradients equal the un-checkpointed run. With
    preserve_rng_state=False the recompute draws another mask and they do not."""
    for res in ranks:
        plain = res["fsdp2/llama"]
        # the eager checkpoint runs the LlamaDecoderLayer graph rewritten in the DDP scenario (no new graph); equal
        # bits show the rewritten op ran, forward and recompute: eager's dropout would have drawn other masks
        assert res["checkpoint/eager"]["counters"] == dict(attention=0, causal_conv1d=0)
        assert res["checkpoint/eager"]["graphs"] == 0
        _assert_equal(res["checkpoint/eager"], plain)
        assert _max_grad_diff(res["checkpoint/eager/no_rng_state"], plain) > 100 * TOL["atol"]
        assert res["checkpoint/compiled"]["counters"] == MODELS["llama"][1]
        _assert_close(res["checkpoint/compiled"], plain)


def test_fsdp2_bf16_mixed_precision(ranks):
    """MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): rewritten, and as close to float64 as eager under
    the same policy (tests/helpers.assert_as_close_as_eager)."""
    for res in ranks:
        got, eager = res["mixed/llama_nodrop"], res["mixed/llama_nodrop/eager"]
        ref = res["reference/llama_nodrop/float64"]
        assert got["counters"] == MODELS["llama_nodrop"][1]
        assert_as_close_as_eager([got["loss"]] + got["grads"], [eager["loss"]] + eager["grads"],
                                 [ref["loss"]] + ref["grads"], what="llama bf16")


def test_whole_model_compile_under_fsdp2(ranks):
    """torch.compile of the whole FSDP2-wrapped model: the attention rewritten, single-process values."""
    for res in ranks:
        got = res["whole/llama_nodrop"]
        assert got["counters"]["attention"] >= 1, got["counters"]
        _assert_close(got, res["reference/llama_nodrop"])


def test_dtensor_inputs(ranks):
    """DTensors: the public ops called eagerly refuse them with DTensor's error naming the op (no sharding strategy
    is registered: call them on ``.to_local()`` shards); compiled hand-written attention on head-sharded DTensors is
    rewritten on each rank's local heads and equals eager."""
    for res in ranks:
        for op in ("attention", "causal_conv1d"):
            message = res[f"dtensor/eager/{op}"]
            assert message.startswith("NotImplementedError") and f"inductor_conv.{op}" in message, message
            assert "sharding strategy" in message, message
        if isinstance(res["dtensor/compiled"], str) and "Sharding propagation failed" in res["dtensor/compiled"]:
            # torch 2.11's DTensor: the 4-D matmul's view to 3-D flattens the sharded head dim, which its sharding
            # propagation refuses while Dynamo traces (2.13 keeps the shard)
            assert _compat.TORCH_VERSION < (2, 13), res["dtensor/compiled"]
            pytest.skip("torch 2.11's DTensor refuses the 4-D matmul of head-sharded tensors while Dynamo traces it")
        assert res["dtensor/compiled/counters"] == dict(attention=1, causal_conv1d=0)
        for got, want in zip(res["dtensor/compiled"], res["attention/eager"], strict=True):
            torch.testing.assert_close(got, want, **TOL)


def test_collective_inside_attention_is_left_to_inductor(ranks):
    """An all-reduce between the scores and the softmax is no pattern of ours: the region compiles without a rewrite
    and keeps eager's values (never a fused op across a collective)."""
    for res in ranks:
        assert res["collective/compiled/counters"] == dict(attention=0, causal_conv1d=0)
        for got, want in zip(res["collective/compiled"], res["collective/eager"], strict=True):
            torch.testing.assert_close(got, want, **TOL)
