"""Our passes in Inductor's custom-pass hooks, chained in front of what another user installed there.

Note [chained passes]: a hook (``joint_custom_pre_pass``, ``pre_grad_custom_pass``) holds None, a pass or (torch
2.13) a list of passes. Ours keeps what it found as ``previous``, runs it first and gives it back on disable()
(graph_pass.uninstall); its uuid covers it, so Inductor's caches key on the whole chain. ``active`` off makes ours
a pass-through, where another user chained a pass on top of it and it cannot be taken out.
"""
from __future__ import annotations

from inductor_conv._compat import CustomGraphPass


def as_tuple(passes) -> tuple:
    """A hook's value as a tuple of passes (None: none; a list: its passes)."""
    if passes is None:
        return ()
    return tuple(passes) if isinstance(passes, (list, tuple)) else (passes,)


class ChainedPass(CustomGraphPass):
    """A pass of ours in a hook: ``previous`` is what the hook held before (Note [chained passes])."""

    def __init__(self, previous) -> None:
        self.previous = previous
        self.active = True

    def run_previous(self, graph) -> None:
        for previous in as_tuple(self.previous):
            previous(graph)

    def previous_uuid(self) -> tuple:
        return tuple(p.uuid() if hasattr(p, "uuid") else repr(p) for p in as_tuple(self.previous))
