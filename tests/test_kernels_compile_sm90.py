"""The eager Triton kernels compile for sm_90 (H100 / H200) with Triton's NVIDIA backend, on a CPU machine.

CPU CI runs the kernels through the interpreter, which never compiles them; the GPU compiler can reject what the
interpreter accepts, and a tile can ask for more shared memory than an SM has.  tests/tools/compile_sm90.py records
the launches of the eager launchers (CUDA tile tables, CPU tensors), specialises them as Triton's launcher would, and
compiles each distinct variant for sm_90 with the ptxas Triton ships; it runs in a subprocess because the
interpreter (switched on in conftest.py) replaces the kernels it compiles.  The template tests here pin what
benchmarks/diagnostics/template_sass.py shows; tests/test_templates_compile_sm90.py compiles a wider set of
templates.  .ci/run runs both files with triton 3.6.0 (its main venv) and 3.7.1 (a second venv): all hold with both.
"""
import json
import os
import re

import pytest
from tools.compile_sm90 import (NVIDIA_BIN, SM90_BLOCK_RESERVED_BYTES, SM90_SHARED_BYTES, SM90_SM_SHARED_BYTES,
                                run_script)

EXPECTED = {"_attn_fwd_kernel", "_attn_bwd_delta_kernel", "_attn_bwd_kernel", "causal_conv1d_fwd_kernel",
            "causal_conv1d_bwd_kernel", "causal_conv1d_param_grad_kernel",
            "_mask_flags_kernel", "_mask_rows_kernel", "_mask_cols_kernel"}  # mask summaries (Note [mask ranges])
TEMPLATE_SASS = "benchmarks/diagnostics/template_sass.py"


@pytest.fixture(scope="module")
def compiled():
    return json.loads(run_script("tests/tools/compile_sm90.py", "--json").strip().splitlines()[-1])


pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(NVIDIA_BIN, "ptxas")),
                                reason="this triton has no NVIDIA backend with ptxas")


def test_every_kernel_compiles_for_sm90(compiled):
    names = {r["kernel"].split("(")[0] for r in compiled}
    assert names == EXPECTED, names
    # the variants the script asks for: 8 attention cases (fwd + bwd each; Δ per dtype and value head dim; the
    # last MLA's split head dim) and 4 conv cases
    assert sum(r["kernel"].startswith("_attn_fwd_kernel(") for r in compiled) == 8
    assert any("BLOCK_D2=64" in r["kernel"] for r in compiled if r["kernel"].startswith("_attn_bwd_kernel(")), compiled
    assert sum(r["kernel"].startswith("causal_conv1d_bwd_kernel(") for r in compiled) == 4


def test_shared_memory_fits_an_sm90_block(compiled):
    too_big = [(r["kernel"], r["shared"]) for r in compiled if r["shared"] > SM90_SHARED_BYTES]
    assert not too_big, too_big


def test_conv_kernels_do_not_spill(compiled):
    """The conv kernels are bandwidth-bound streams: local-memory traffic inside the tile loop (per tile) would cost
    more than their whole budget.  Holds with triton 3.6.0 and 3.7.1.  The channel-last backward's loop is unrolled
    twice by default (ConvTile.unroll) and keeps two tiles of rows in flight (Note [row prefetch]), so it is among
    them (95 registers; 255 with initial_states, whose halo rows stay live too).  A few bytes of stack outside the
    loops are allowed: with initial_states 3.7.1 keeps 24 bytes there (3.6.0 none), never touched inside a loop."""
    conv = [r for r in compiled if r["kernel"].startswith(("causal_conv1d_fwd_kernel", "causal_conv1d_bwd_kernel"))]
    assert conv and all(r["loops"] >= 1 for r in conv), [(r["kernel"], r["loops"]) for r in conv]  # loops were found
    spills = [(r["kernel"], r["stack"], r["local_in_loops"]) for r in conv if r["local_in_loops"] or r["stack"] > 32]
    assert not spills, spills
    assert any(r["kernel"].startswith("causal_conv1d_bwd_kernel(") and "ROWS=True" in r["kernel"]
               and "UNROLL=2" in r["kernel"] for r in compiled), [r["kernel"] for r in compiled]
    param = [r for r in compiled if r["kernel"].startswith("causal_conv1d_param_grad_kernel")]
    assert param and not any(r["stack"] for r in param), [(r["kernel"], r["stack"]) for r in param]


def test_attention_forward_kernels_do_not_spill(compiled):
    """The 16-bit eager forward kernels keep their loop state in registers.  Compiled as Triton's launcher
    specialises them (tests/tools/compile_sm90.py's source(): the unit head-dim strides are constants, as on the GPU);
    with those strides as runtime values every one of them took 255 registers and 27-377 LDL/STL in its loop."""
    fwd = [r for r in compiled if r["kernel"].startswith("_attn_fwd_kernel(") and "DOT_DTYPE=fp32" not in r["kernel"]
           and not ("MASK_KIND=0" not in r["kernel"] and "MASK_RANGES=False" in r["kernel"])]  # ranges' default
    assert len(fwd) == 6, [r["kernel"] for r in fwd]
    spills = [(r["kernel"], r["local_in_loops"]) for r in fwd if r["local_in_loops"]]
    assert not spills, spills


def test_masked_attention_kernels_keep_wgmma_pipelined(compiled):
    """The 16-bit eager forward kernels with a mask tensor (bool and additive) load a whole key tile's mask without a
    per-key check (kernels/attn_math.py's load_mask_tile, CHECK_KEYS): with one, SEQ_K being a runtime value, every
    mask element was its own predicated load and ptxas serialised the loop's wgmmas (H200: the masked forward took
    0.92 ms where it takes 0.44).  Also with mask ranges, whose loops start at a tile read from the mask (Note [mask
    ranges]: the start rounded to a multiple of the tile, or its mask loads are one-byte loads again) and whose full
    tiles run in a loop of their own: a third loop in the forward (partial, full, partial) serialised it (C7512), so
    the partial tiles share one loop.  The backward kernels with mask ranges run two head loops in the dK/dV programs
    (one head loop around both kinds of tile loop serialised them); without ranges they are serialised still."""
    fwd = [r for r in compiled if r["kernel"].startswith("_attn_fwd_kernel(") and "MASK_KIND=0" not in r["kernel"]
           and "DOT_DTYPE=fp32" not in r["kernel"]]
    assert len(fwd) == 4 and any("MASK_RANGES=True" in r["kernel"] for r in fwd), [r["kernel"] for r in fwd]
    bwd = [r for r in compiled if r["kernel"].startswith("_attn_bwd_kernel(") and "MASK_RANGES=True" in r["kernel"]
           and "STORE_DS=False" in r["kernel"] and "DOT_DTYPE=fp32" not in r["kernel"]]
    assert bwd, [r["kernel"] for r in compiled]
    serialised = [r["kernel"] for r in fwd + bwd if r["wgmma_serialized"]]
    assert not serialised, serialised


def test_conv_sigmoid_is_the_flush_to_zero_approximation(compiled):
    """conv_math.sigmoid's FAST path (the launchers set it wherever the kernels are compiled for a GPU): exp by
    ex2.approx.ftz, not Triton's tl.exp, whose ex2.approx.f32 comes with a subnormal-range guard (FSETP and two
    predicated FMULs a call; with div.full's guard a fifth of the backward's loop)."""
    conv = [r for r in compiled if r["kernel"].startswith(("causal_conv1d_fwd_kernel", "causal_conv1d_bwd_kernel"))]
    assert conv and all("FAST=True" in r["kernel"] for r in conv), [r["kernel"] for r in conv]
    assert all(r["ex2"] == ["ex2.approx.ftz.f32"] for r in conv), [(r["kernel"], r["ex2"]) for r in conv]


def test_causal_backward_template_masked_first_keeps_wgmma_pipelined():
    """Note [masked tiles first]: the causal backward template, rendered as Inductor does for static shapes
    (benchmarks/diagnostics/template_sass.py), gets ptxas' wgmma-serialisation advisory with the masked band after
    the main loop and not with the masked tiles first, and then with no spills in its loops.  Pins what
    config.attention_masked_first (on by default) is for, with triton 3.6.0 and 3.7.1."""
    reports = {flag: run_script(TEMPLATE_SASS, "--causal", "--p", "0.1", "--shape", "1,2,256,128",
                                *([flag] if flag else [])).splitlines() for flag in ("", "--masked-first")}
    lines = {flag: report[0] for flag, report in reports.items()}
    assert "SERIALISED" in lines[""], lines
    assert "pipelined" in lines["--masked-first"], lines
    # as the lowering launches it (ungrouped backward, config.attention_causal_bwd_group): no loop spills
    loops = [line for line in reports["--masked-first"] if "loop at" in line]
    assert loops and all("LDL 0, STL 0" in line for line in loops), loops


def test_head_dim_256_backward_template_fits_and_pipelines():
    """The causal head-dim-256 backward template's tile (CUDA_BWD_CAUSAL in inductor_conv/heuristics/attention.py),
    with the masked tiles first (the lowering's default): dK and dV in programs of their own (Note [split dK/dV]),
    each holding one fp32 [64, 256] accumulator on 4 warps and stepping over 16 queries, fits two programs an SM,
    keeps ptxas' wgmma pipeline and, without soft-capping or dropout, no local memory in any loop.  The one-program
    (64, 64, 8, 2), holding both accumulators, reloads 11 spilled values an iteration in its dK/dV loop here."""
    report = run_script(TEMPLATE_SASS, "--causal", "--masked-first", "--shape", "1,2,256,256").splitlines()
    assert "tile (16, 64, 4, 3)" in report[0] and "pipelined" in report[0], report[0]
    shared = int(re.search(r"shared (\d+) B", report[0]).group(1))
    assert 2 * (shared + SM90_BLOCK_RESERVED_BYTES) <= SM90_SM_SHARED_BYTES, report[0]
    loops = [line for line in report if "loop at" in line]
    assert len(loops) == 6 and all("LDL 0, STL 0" in line for line in loops), loops


def test_masked_backward_full_tiles_spill_little():
    """Note [full tiles in reverse]: the backward template with a summarised additive mask, dropout and GQA (two
    query heads a program, so two head loops), at its table tile (64, 64, 4, 2): the dK/dV programs' full-tile loop,
    the third loop of the listing (inside the second head loop), keeps its local-memory traffic at a few words an
    iteration.  As a range with the summary's bounds it spilled 47 loads and 29 stores an iteration at this shape."""
    report = run_script(TEMPLATE_SASS, "--mask", "2", "--p", "0.1", "--hkv", "1", "--shape", "1,2,256,128").splitlines()
    assert "tile (64, 64, 4, 2)" in report[0], report[0]
    loops = [line for line in report if "loop at" in line]
    assert len(loops) == 6, loops
    local = sum(int(n) for n in re.findall(r"(?:LDL|STL) (\d+)", loops[2]))
    assert local <= 32, loops


@pytest.mark.parametrize("pass_", ["--fwd", "--bwd"])
def test_dropout_mask_adds_no_layout_conversion(pass_, tmp_path):
    """Note [dropout replay]: the paired draw (keys j and j + 8 share a word, assembled by join / permute / reshape)
    stays in the registers of the wgmma accumulator in both tile orientations, so the p = 0.1 template has exactly the
    layout conversions and shared buffers of the p = 0 one at the same tile.  Pairing keys j and j + 1 in the
    backward's transposed tile, or using the mask in a way Triton rematerialises in another layout (as
    `dp * (keep * s)` once did), adds a convert_layout through shared memory and fails this."""
    counts = {}
    for p in ("0", "0.1"):
        ttgir = tmp_path / f"p{p}.ttgir"
        run_script(TEMPLATE_SASS, *([pass_] if pass_ == "--fwd" else []), "--p", p, "--shape", "1,2,256,128",
                   "--tile", "64,64,4,2", "--ttgir", str(ttgir))
        text = ttgir.read_text()
        counts[p] = (text.count("ttg.convert_layout"), text.count("ttg.local_alloc"))
    assert counts["0.1"] == counts["0"], counts
