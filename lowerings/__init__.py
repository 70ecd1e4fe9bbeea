"""Lowerings of inductor_conv's custom ops into Inductor Triton templates (CUDA) or a fallback kernel (elsewhere).

Each capability's module has ``register()`` (idempotent) and ``OPS`` (the ops it lowers); enable() calls
``register_all()`` and disable() ``unregister_all()``, which leaves those ops to Inductor's default fallback.
"""
import importlib

_MODULES = ("inductor_conv.lowerings.causal_conv1d_silu", "inductor_conv.lowerings.attention")


def _modules():
    return [importlib.import_module(name) for name in _MODULES]


def register_all() -> None:
    for module in _modules():
        module.register()


def unregister_all() -> None:
    from inductor_conv._compat import remove_lowering

    for module in _modules():
        for op in module.OPS:
            remove_lowering(op)
