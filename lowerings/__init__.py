"""Lowerings of inductor_conv's custom ops into Inductor Triton templates (CUDA) or a fallback kernel (elsewhere).

Each capability's module has ``register()`` (idempotent) and ``OPS`` (the ops it lowers); enable() calls
``register_all()`` and disable() ``unregister_all()``, which leaves those ops to Inductor's default fallback (the one
Inductor had installed before enable(), if any).
"""
import importlib

_MODULES = ("inductor_conv.lowerings.causal_conv1d_silu", "inductor_conv.lowerings.attention",
            "inductor_conv.lowerings.causal_conv1d_update")


def _modules():
    return [importlib.import_module(name) for name in _MODULES]


# Lowerings ours replaced (Inductor's default fallback, when it compiled an op before enable()): put back by
# unregister_all(), so that disable() leaves Inductor's table as enable() found it.
_REPLACED: dict = {}


def install(op, fn) -> None:
    """Make ``fn`` the lowering of ``op`` unless ours already is. A lowering Inductor installed itself (its default
    fallback, when it compiled the op before enable()) is replaced and remembered: only ours carries the marker."""
    from inductor_conv._compat import has_lowering, inductor_lowerings, register_lowering

    if not has_lowering(op) or getattr(inductor_lowerings[op], "_inductor_conv", False) is False:
        if has_lowering(op):
            _REPLACED[op] = inductor_lowerings[op]
        register_lowering(op, type_promotion_kind=None)(fn)
        inductor_lowerings[op]._inductor_conv = True


def stride_order(node) -> list[int]:
    """node's stride order (Inductor's ir.get_stride_order) through the shape env: under dynamic shapes strides are
    expressions such as H * S * D vs S * D, which sympy alone cannot always order (it raises)."""
    from inductor_conv._compat import V, ir

    return list(ir.get_stride_order(node.get_stride(), V.graph.sizevars.shape_env))


def register_all() -> None:
    from inductor_conv._compat import stop_channels_last_at

    for module in _modules():
        module.register()
        stop_channels_last_at(module.OPS)  # Note [channels-last stops at our ops] in _compat.py


def unregister_all() -> None:
    from inductor_conv._compat import inductor_lowerings, remove_lowering, restore_channels_last_propagation

    restore_channels_last_propagation()

    for module in _modules():
        for op in module.OPS:
            remove_lowering(op)
            if op in _REPLACED:
                inductor_lowerings[op] = _REPLACED.pop(op)
