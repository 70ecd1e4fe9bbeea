"""Every private name inductor_conv uses resolves on the installed torch (2.11 on the GPU box, 2.13 in CI)."""
import inspect

import pytest

from inductor_conv import _compat


@pytest.mark.parametrize("name", _compat.__all__)
def test_name_resolves(name):
    assert getattr(_compat, name) is not None


def test_template_api_shape():
    # The parts of the template API our lowerings call (same shape in 2.11 and 2.13).
    params = inspect.signature(_compat.TritonTemplate.__init__).parameters
    assert {"name", "grid", "source"} <= set(params)
    assert hasattr(_compat.TritonTemplate, "maybe_append_choice")
    params = inspect.signature(_compat.register_replacement).parameters
    assert {"search_fn", "replace_fn", "example_inputs", "trace_fn", "pass_dicts", "extra_check"} <= set(params)


def test_cache_switch_patches_config():
    with _compat.fx_graph_cache_disabled():
        assert _compat.inductor_config.force_disable_caches
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
