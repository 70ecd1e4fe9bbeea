"""Every private name inductor_conv uses resolves on the installed torch (2.11 on the GPU box, 2.13 in CI)."""
import ast
import inspect
import pathlib

import pytest

from inductor_conv import _compat

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", _compat.__all__)
def test_name_resolves(name):
    # _compat's top-level imports succeeded (or this module would not load); what remains is a stale __all__ entry.
    assert hasattr(_compat, name)


def test_every_name_imported_from_compat_exists():
    """Each `from inductor_conv._compat import name` in the plugin and its tests names something _compat defines,
    lazy imports inside functions included (they run only when a lowering or pass is first used)."""
    imported = {}
    for folder in ("inductor_conv", "patterns", "lowerings", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ImportFrom) and node.module == "inductor_conv._compat":
                    imported.update({alias.name: path.relative_to(ROOT) for alias in node.names})
    assert "register_lowering" in imported  # the scan sees the lowerings' imports
    missing = {name: str(path) for name, path in imported.items() if not hasattr(_compat, name)}
    assert not missing, f"names not defined in inductor_conv/_compat.py: {missing}"


def test_template_api_shape():
    # The parts of the template API our lowerings call (same shape in 2.11 and 2.13).
    params = inspect.signature(_compat.TritonTemplate.__init__).parameters
    assert {"name", "grid", "source"} <= set(params)
    assert hasattr(_compat.TritonTemplate, "maybe_append_choice")
    params = inspect.signature(_compat.register_replacement).parameters
    assert {"search_fn", "replace_fn", "example_inputs", "trace_fn", "pass_dicts", "extra_check"} <= set(params)


def test_cache_switch_patches_config():
    from torch._functorch import config as functorch_config

    with _compat.fx_graph_cache_disabled():
        assert _compat.inductor_config.force_disable_caches
    before = (_compat.inductor_config.fx_graph_cache, functorch_config.enable_autograd_cache)
    with _compat.compiled_graph_caches_disabled():  # what the tests compile under (tests/helpers.py)
        assert not _compat.inductor_config.fx_graph_cache and not functorch_config.enable_autograd_cache
        assert not _compat.inductor_config.force_disable_caches
    assert (_compat.inductor_config.fx_graph_cache, functorch_config.enable_autograd_cache) == before
    assert _compat.TORCH_VERSION >= (2, 11)


def test_size_hint_of_a_symbolic_size():
    """size_hint (the allocator's optimization_hint): a backed symbol's hint without a guard, a fallback for an
    unbacked one."""
    import sympy
    from torch._inductor.sizevars import SizeVarAllocator
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from torch._dynamo.source import ConstantSource

    shape_env = ShapeEnv()
    s = shape_env.create_symbol(48, ConstantSource("s"))
    u = shape_env.create_unbacked_symint().node.expr
    with _compat.V.set_graph_handler(type("G", (), {"sizevars": SizeVarAllocator(shape_env)})()):
        assert _compat.size_hint(2 * s) == 96
        assert _compat.size_hint(sympy.Integer(7)) == 7
        assert _compat.size_hint(u, fallback=5) == 5
    assert not shape_env.guards


def test_channels_last_stops_installed_by_enable_and_removed_by_disable():
    """Note [channels-last stops at our ops]: enable() wraps GraphLowering.find_nodes_prefer_channels_last (an
    Inductor method that must exist on both versions) and disable() puts Inductor's own back."""
    import inductor_conv
    from torch._inductor.graph import GraphLowering

    original = GraphLowering.find_nodes_prefer_channels_last
    was_enabled = inductor_conv.is_enabled()
    inductor_conv.disable()
    try:
        assert not hasattr(GraphLowering.find_nodes_prefer_channels_last, "_inductor_conv_original")
        inductor_conv.enable(("cpu",))
        assert GraphLowering.find_nodes_prefer_channels_last._inductor_conv_original is not None
        stops = {op._schema.name.split("::")[1] for op in _compat._LAYOUT_STOPS}
        assert stops >= {"attention_fwd", "attention_bwd", "causal_conv1d_fwd"}
        inductor_conv.disable()
        assert not hasattr(GraphLowering.find_nodes_prefer_channels_last, "_inductor_conv_original")
        assert not _compat._LAYOUT_STOPS
        assert GraphLowering.find_nodes_prefer_channels_last is original or was_enabled
    finally:
        if was_enabled:
            inductor_conv.enable()
