"""enable() / disable() / enabled(): install and remove the pattern pass and the lowerings.

enable() chains our pass in front of whatever ``joint_custom_pre_pass`` the user already had (it keeps running),
and disable() puts that pass back exactly, so Inductor is left as it was found.
"""
from __future__ import annotations

import contextlib
from typing import Iterable

from inductor_conv import config

_SUPPORTED_DEVICES = ("cuda", "cpu")


def enable(device_types: Iterable[str] = ("cuda",)) -> None:
    """Rewrite causal conv1d (+SiLU) and attention in graphs compiled by Inductor from now on. Idempotent.

    Args:
        device_types: devices whose graphs are rewritten; ``("cpu",)`` rewrites CPU graphs too (the kernels then run
            through the Triton interpreter when ``TRITON_INTERPRET=1``, else a torch reference).
    """
    if isinstance(device_types, str):
        device_types = (device_types,)
    device_types = tuple(device_types)
    for dev in device_types:
        if dev not in _SUPPORTED_DEVICES:
            raise ValueError(f"device_types entries must be among {_SUPPORTED_DEVICES}, got {dev!r}")
    config.device_types = device_types

    from inductor_conv.lowerings import register_all
    from inductor_conv.patterns.graph_pass import install

    register_all()
    install()


def disable() -> None:
    """Undo enable(): our pass and lowerings are removed; other users' custom passes stay installed."""
    from inductor_conv.lowerings import unregister_all
    from inductor_conv.patterns.graph_pass import uninstall

    uninstall()
    unregister_all()


def is_enabled() -> bool:
    from inductor_conv.patterns.graph_pass import installed

    return installed()


@contextlib.contextmanager
def enabled(device_types: Iterable[str] = ("cuda",)):
    """``with inductor_conv.enabled(): ...`` — enable() on entry; on exit, back to the state found on entry."""
    was_enabled, old_devices = is_enabled(), config.device_types
    enable(device_types)
    try:
        yield
    finally:
        if was_enabled:
            config.device_types = old_devices
        else:
            disable()
            config.device_types = old_devices
