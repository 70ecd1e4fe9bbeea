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
