"""enable() / disable() / enabled(): install and remove the pattern pass and the lowerings.

enable() chains our pass in front of whatever ``joint_custom_pre_pass`` the user already had (it keeps running),
and disable() puts that pass back exactly, so Inductor is left as it was found.

Note [plugin state guard]: the plugin's state when a compiled function is *called* decides whether it runs
rewritten code. Dynamo caches the code it compiled for a frame and reuses it, also for a new ``torch.compile(fn)``
(an ``inductor`` backend equals any other with the same options), for as long as the frame's guards hold; none of
them reads the plugin's state. So each change of state (enabled or not, and the device types rewritten) first pins
every compiled frame that is not pinned yet to the state it was compiled under (every frame compiled since the last
change was compiled under the state ending now): a guard on the frame's cache entry, checked on each call like
Dynamo's own global-state guards (``_compat.pin_compiled_frames``). A frame called under another state fails it and
is compiled again, once: the entry of the earlier state stays cached beside it, so going back and forth (``with
enabled(): ...`` in a loop) reuses both and compiles nothing more. The recompile log names the reason
("inductor_conv state == ...").

Why pinned at the change and not at compile time: no Dynamo hook adds a guard to a frame while it compiles. Its
global-state guard checks a fixed list in C++ (grad mode, autocast, deterministic algorithms, ...); the backend
match compares ``torch.compile``'s backend objects; our passes in Inductor run only while enabled and not on an FX
graph cache hit; and a frame compiled before ``inductor_conv`` was imported had nothing of ours around it at all.
The cost: one Python call per call of a compiled frame once the state has changed (not measurable against a
compiled call's own ~70 µs on the CI machine), and a walk over Dynamo's cache entries at each change. Inductor's own
caches need nothing: the pass's ``uuid()`` is in their key while enabled and absent (or, chained under another pass,
``active=False``) after disable(), so neither the FX graph cache nor the AOTAutograd cache replays a graph compiled
under the other state.

Only enable(), disable() and enabled() change the state: set ``config.device_types`` through enable(), or call
``torch._dynamo.reset()`` after setting it by hand.
"""
from __future__ import annotations

import contextlib
import weakref
from typing import Iterable

from inductor_conv import config
from inductor_conv._compat import pin_compiled_frames

_SUPPORTED_DEVICES = ("cuda", "cpu")

# The state graphs are compiled under now: None (disabled) or the device types rewritten. Note [plugin state guard].
_state: tuple[str, ...] | None = None
_pinned: weakref.WeakSet = weakref.WeakSet()  # guard managers of the cache entries pinned so far


def enable(device_types: Iterable[str] = ("cuda",)) -> None:
    """Rewrite causal conv1d (+SiLU) and attention in graphs compiled by Inductor from now on. Idempotent.

    Functions compiled before run rewritten from their next call on (Note [plugin state guard]).

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
    _state_changed()


def disable() -> None:
    """Undo enable(): our pass and lowerings are removed; other users' custom passes stay installed. Functions
    compiled while enabled run Inductor's own code from their next call on (Note [plugin state guard])."""
    from inductor_conv.lowerings import unregister_all
    from inductor_conv.patterns.graph_pass import uninstall

    uninstall()
    unregister_all()
    _state_changed()


def is_enabled() -> bool:
    from inductor_conv.patterns.graph_pass import installed

    return installed()


class enabled(contextlib.ContextDecorator):
    """``with inductor_conv.enabled(): ...`` (or ``@inductor_conv.enabled()``) — enable() on entry; on exit, back to
    the state found on entry.

    It is a context manager, not a query: ``if inductor_conv.enabled():`` raises TypeError (the object would always
    be true, whatever the state); ask is_enabled()."""

    def __init__(self, device_types: Iterable[str] = ("cuda",)) -> None:
        self.device_types = device_types
        self._entered: list = []  # the state found at each entry (a decorated function may recurse)

    def __enter__(self) -> None:
        self._entered.append((is_enabled(), config.device_types))
        enable(self.device_types)

    def __exit__(self, *exc) -> bool:
        was_enabled, old_devices = self._entered.pop()
        if was_enabled:
            config.device_types = old_devices
            _state_changed()
        else:
            disable()
            config.device_types = old_devices
        return False

    def __bool__(self) -> bool:
        raise TypeError("inductor_conv.enabled() is a context manager (`with inductor_conv.enabled(): ...`), not a "
                        "query of the plugin's state: use inductor_conv.is_enabled()")


def _state_changed() -> None:
    """Pin the frames compiled since the last change to the state they were compiled under, then take the current
    state as the new one (a no-op when it did not change). Note [plugin state guard]."""
    global _state
    new = tuple(config.device_types) if is_enabled() else None
    if new == _state:
        return
    old = _state

    def still(frame_locals) -> bool:
        return _state == old

    described = "disabled" if old is None else f"enabled for {old}"
    pin_compiled_frames(still, f"inductor_conv state == {described} (the state the frame was compiled under)", _pinned)
    _state = new
