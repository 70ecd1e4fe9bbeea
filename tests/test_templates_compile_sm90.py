"""The Inductor templates, rendered as Inductor renders them for static shapes, compile for sm_90 (H100 / H200) with
Triton's NVIDIA backend, on a CPU machine.

The lowerings never reach their templates in CPU CI (tests/test_lowerings_dry_run.py stops at the choice), and the
interpreter never compiles anything, so a template the GPU compiler rejects under one Triton would first fail on the
device.  tests/tools/compile_sm90.py renders a representative set (ATTENTION_TEMPLATES: forward and backward, head dims
64 and 128, causal with and without pairs, dropout, bool and additive masks, the mask's gradient, GQA,
soft-capping, fp16 / bf16 / fp32, Swin's 49-token windows (the short tiles, no mask summary: Note [short
sequences]), a mask over 197 keys (its rows padded: Note [mask row alignment]), Gemma 2's head dim 256 over a
summarised mask and with is_causal (dK and dV in programs of their own: Note [split dK/dV]); WIDE_TEMPLATES: a forward and a
backward with int64 offsets (Note [int64 offsets]); ROW_OFFSETS_TEMPLATES: the summarised-mask backward with and
without Note [row offsets]; CONV_TEMPLATES: forward and
backward, contiguous and channel-last) with each lowering's default tile and compiles it in a subprocess (the
interpreter, switched on in conftest.py, would replace the kernels).  .ci/run runs this with the main venv's triton
(3.6.0, torch 2.11's CUDA pin) and again with triton 3.7.1 (torch 2.13's CUDA pin) in a second venv.
"""
import collections
import json
import os

import pytest
from tools.compile_sm90 import (ATTENTION_TEMPLATES, CONV_TEMPLATES, NVIDIA_BIN, ROW_OFFSETS_TEMPLATES,
                                SM90_BLOCK_RESERVED_BYTES, SM90_SHARED_BYTES, SM90_SM_SHARED_BYTES, WIDE_TEMPLATES,
                                run_script)

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(NVIDIA_BIN, "ptxas")),
                                reason="this triton has no NVIDIA backend with ptxas")


@pytest.fixture(scope="module")
def compiled():
    return json.loads(run_script("tests/tools/compile_sm90.py", "--templates", "--json").strip().splitlines()[-1])


def test_every_template_variant_compiles_for_sm90(compiled):
    names = collections.Counter(r["kernel"].split("(")[0] for r in compiled)
    expected = collections.Counter(f"inductor_conv_attention_{v[0]}" for v in ATTENTION_TEMPLATES + WIDE_TEMPLATES
                                   + ROW_OFFSETS_TEMPLATES * 2)
    expected.update(f"inductor_conv_causal_conv1d_{v[0]}" for v in CONV_TEMPLATES)
    assert names == expected and len(compiled) == 24 and sum("WIDE" in r["kernel"] for r in compiled) == 2, names


def test_shared_memory_fits_an_sm90_block(compiled):
    too_big = [(r["kernel"], r["shared"]) for r in compiled if r["shared"] > SM90_SHARED_BYTES]
    assert not too_big, too_big


def test_no_local_memory_in_the_loops(compiled):
    """Every forward, every conv template and the bf16 backwards keep all their loop state in registers (triton
    3.6.0 and 3.7.1 alike).  Not checked: the fp32 backward (twice the registers a tile; ~500 LDL/STL in its loops),
    the soft-capped fp16 head-dim-128 backward with a bool mask at the (64, 128, 8, 3) tile (11 LDL/STL in its
    loops with 3.6.0, 57 with 3.7.1) and MLA's backward (q/k 192 split, v 128) at its (32, 64, 4, 3) tile, the fastest
    measured (heuristics/attention.py's CUDA_BWD[(192, 128)]: the 8-warp tiles are 12-80% slower), and the WIDE
    backward (int64 products, for slices of 2^31 elements only: Note [int64 offsets]; its forward is checked), the
    backwards of test_row_offsets_keep_the_masked_backward_in_registers.  Gemma 2's head-dim-256 backward, over a
    mask and with is_causal, is checked: split dK/dV on 4 warps stepping over 16 queries (at 32 queries, 121 / 63
    local loads and stores in its loops with triton 3.6.0, 228 / 32 with 3.7.1)."""
    checked = [r for r in compiled if "_fwd(" in r["kernel"] or "causal_conv1d" in r["kernel"]
               or (r["kernel"].startswith("inductor_conv_attention_bwd(bfloat16") and "192)" not in r["kernel"]
                   and "WIDE" not in r["kernel"] and "ROW_OFFSETS" not in r["kernel"])]
    # loops were found (a conv forward program runs one tile at these sizes, and so does every program of Swin's
    # 49-token window: their loops are unrolled away; test_short_windows_do_not_spill checks those)
    looping = [r for r in checked if not r["kernel"].startswith("inductor_conv_causal_conv1d_fwd")
               and _SHORT not in r["kernel"]]
    assert len(checked) == 18 and all(r["loops"] for r in looping), [(r["kernel"], r["loops"]) for r in checked]
    spills = [(r["kernel"], r["local_in_loops"]) for r in checked if r["local_in_loops"]]
    assert not spills, spills


_SHORT = "shape=(64, 3, 49, 32)"  # ATTENTION_TEMPLATES' Swin window


def test_short_windows_do_not_spill(compiled):
    """Note [short sequences]: at Swin's window (49 tokens, head dim 32, an additive mask) the forward and the
    backward with the bias's gradient keep every value in registers.  The table's 128-row forward tile with the
    mask's summary spilled 1256 bytes a thread there (633 local loads and stores in its loop), which made the
    forward 3.5x slower on an H100."""
    short = [r for r in compiled if _SHORT in r["kernel"]]
    assert len(short) == 2 and all("tile=(64, 64, 4, 3)" in r["kernel"] for r in short), short
    assert all(r["stack"] == 0 for r in short), [(r["kernel"], r["stack"]) for r in short]


def test_row_offsets_keep_the_masked_backward_in_registers(compiled):
    """Note [row offsets]: the backward over a summarised mask with dropout (HF's mask as a layer input, Llama's
    form) at its table tile holds its Q / dO tiles as int32 offsets, not 64-bit pointer tiles.  Its hottest loop, the
    dK/dV programs' full tiles (the innermost loops with the most HGMMA are the dK/dV ones: four products a tile
    against the dQ programs' three; the full tiles' loop is the one without the mask's code, the smaller), then
    keeps every value in registers; with pointer tiles it reloads spilled values each tile (19 local accesses with
    triton 3.6.0, 17 with 3.7.1)."""
    by_flag = {r["kernel"].split("ROW_OFFSETS=")[1][0]: r for r in compiled if "ROW_OFFSETS=" in r["kernel"]}
    assert set(by_flag) == {"0", "1"}, list(by_flag)

    def dkdv_inner(r):
        most = max(hgmma for hgmma, _ in r["inner_loops"])
        return [local for hgmma, local in r["inner_loops"] if hgmma == most]

    on, off = dkdv_inner(by_flag["1"]), dkdv_inner(by_flag["0"])
    assert len(on) == len(off) == 2, (on, off)  # the partial tiles' loop and the full tiles'
    assert min(on) == 0 and min(off) > 0, (on, off)


def test_head_dim_256_backward_keeps_its_wgmma_pipelined(compiled):
    """Gemma 2's attention over HF's mask (head dim 256, soft-capped, a summarised additive mask) and with is_causal
    takes CUDA_BWD_MASKED's / CUDA_BWD_CAUSAL's tile, dK and dV in programs of their own (Note [split dK/dV])
    stepping over 16 queries, and ptxas keeps its warpgroup MMAs pipelined (no advisory C7510-C7515: Note [masked
    tiles first]) under triton 3.6.0 and 3.7.1.  Both fit two programs an SM; over the mask only with its loops on
    two stages (Note [mask loop stages]: 119040 bytes on three)."""
    rows = [r for r in compiled if "shape=(1, 4, 512, 256)" in r["kernel"]]
    assert len(rows) == 2, rows
    for r in rows:
        assert "SPLIT_KV" in r["kernel"] and "tile=(16, 64, 4, 3)" in r["kernel"], r["kernel"]
        assert ("MASK_STAGES=2" in r["kernel"]) == ("MASK_KIND=2" in r["kernel"]), r["kernel"]
        assert not r["wgmma_serialized"], r
        assert 2 * (r["shared"] + SM90_BLOCK_RESERVED_BYTES) <= SM90_SM_SHARED_BYTES, r


def test_masked_forward_fits_two_programs_an_sm(compiled):
    """The forward over a summarised mask at head dim 128 runs its mask loop on two stages (Note [mask loop
    stages]), so its (64, 64, 4, 3) tile keeps the causal template's shared memory: two programs an SM, each with
    the shared memory the driver reserves per block."""
    (r,) = [r for r in compiled if r["kernel"].startswith("inductor_conv_attention_fwd(float16, shape=(1, 2, 256, 128)")
            and "MASK_KIND=2" in r["kernel"]]
    assert "tile=(64, 64, 4, 3), MASK_STAGES=2" in r["kernel"], r["kernel"]
    assert 2 * (r["shared"] + SM90_BLOCK_RESERVED_BYTES) <= SM90_SM_SHARED_BYTES, r["shared"]
