"""Every private torch / Inductor name inductor_conv touches, in one place.

inductor_conv supports torch 2.11 (the GPU box) and torch 2.13 (CPU CI) at once. Inductor's internals move between
releases; anything that is not public API is imported here and nowhere else, so a version difference is fixed in one
file and `tests/test_compat.py` checks each name on whichever torch runs the tests.
"""
from __future__ import annotations

import torch

TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])

# --- Inductor configuration and custom passes -------------------------------------------------------------------
from torch._inductor import config as inductor_config  # noqa: E402
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files  # noqa: E402

# --- pattern matcher -----------------------------------------------------------------------------------------------
from torch._inductor.pattern_matcher import (  # noqa: E402
    CallFunction,
    Ignored,
    KeywordArg,
    Match,
    PatternMatcherPass,
    fwd_only,
    gen_pattern,
    joint_fwd_bwd,
    register_replacement,
    stable_topological_sort,
)

def remove_noop_ops(graph) -> None:
    """Inductor's own alias/clone/no-op removal. A ``joint_custom_pre_pass`` runs before Inductor does this, and
    alias/clone nodes between the ops of a pattern make it miss, so our pass calls it first."""
    from torch._inductor.fx_passes.post_grad import remove_noop_ops as _remove_noop_ops

    _remove_noop_ops(graph)


# --- lowerings and templates ---------------------------------------------------------------------------------------
from torch._inductor import ir  # noqa: E402
from torch._inductor.lowering import (  # noqa: E402
    fallback_handler,
    lowerings as inductor_lowerings,
    register_lowering,
)
from torch._inductor.select_algorithm import (  # noqa: E402
    ExternKernelChoice,
    TritonTemplate,
    autotune_select_algorithm,
)
from torch._inductor.virtualized import V  # noqa: E402

# --- dynamo counters -----------------------------------------------------------------------------------------------
from torch._dynamo.utils import counters as dynamo_counters  # noqa: E402


def get_joint_custom_pre_pass():
    """The pass currently installed as Inductor's ``joint_custom_pre_pass`` (None, a pass, or a list in 2.13)."""
    return inductor_config.joint_custom_pre_pass


def set_joint_custom_pre_pass(value) -> None:
    inductor_config.joint_custom_pre_pass = value


def has_lowering(op) -> bool:
    return op in inductor_lowerings


def remove_lowering(op) -> None:
    inductor_lowerings.pop(op, None)


def fx_graph_cache_disabled():
    """A config patch that turns off every Inductor cache (FX graph, AOTAutograd, autotune): pattern tests need it,
    since a cache hit skips custom passes."""
    return inductor_config.patch(force_disable_caches=True)


__all__ = [
    "TORCH_VERSION",
    "inductor_config",
    "CustomGraphPass",
    "get_hash_for_files",
    "CallFunction",
    "Ignored",
    "KeywordArg",
    "Match",
    "PatternMatcherPass",
    "fwd_only",
    "gen_pattern",
    "joint_fwd_bwd",
    "register_replacement",
    "stable_topological_sort",
    "remove_noop_ops",
    "ir",
    "fallback_handler",
    "register_lowering",
    "ExternKernelChoice",
    "TritonTemplate",
    "autotune_select_algorithm",
    "V",
    "dynamo_counters",
    "get_joint_custom_pre_pass",
    "set_joint_custom_pre_pass",
    "has_lowering",
    "remove_lowering",
    "fx_graph_cache_disabled",
]
