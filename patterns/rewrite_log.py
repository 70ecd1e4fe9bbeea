"""Why a graph was or was not rewritten: each rewrite and each near miss, logged for ``TORCH_LOGS=inductor_conv``.

Note [rewrite log]
A near miss is a match of a search pattern that its ``extra_check`` refused: the graph holds the form, but a value
the pattern ignored (a dtype, a head dim, a dilation, a consumer of the probabilities, ...) rules the rewrite out.
As ``torch._dynamo.explain`` names the reason of each graph break, the log names the check that refused each near
miss, with the first sentence of its docstring::

    [0/0] attention near miss (bert_no_mask_inference) at view_5: head_dim_supported refused it: q and k share a
          head dim D_qk, v has its own D_v, and 16 <= D <= 256 for each (the kernels' tile limits).
    [0/0] rewrote causal_conv1d (_pattern_conv_pad_slice_silu_training) at div

Every line of TORCH_LOGS output also names the graph being compiled (its ``[frame/compile]`` id).  Rewrites are logged
at INFO; near misses at INFO, or DEBUG (``TORCH_LOGS=+inductor_conv``) where the refusal is not news: the capability
or its device switched off, an attention training variant meeting a graph with no gradient (the inference variant
follows).  A condition written in the check itself rather than as a predicate is reported as ``extra_check``.

How.  The pass applies its patterns inside ``explaining``, which wraps the ``extra_check`` of every entry registered
(``watch``; each variant's name comes from the pattern cache, ``name_pattern``).  The predicates of ``checks.py`` and
``attention_checks.py`` are ``@predicate``s: while a watched check runs, the first one that returns False at its top
level (a predicate calling another counts as one) is the refusal.  Accepting a match is rewriting it
(``PatternMatcherPass.apply`` applies every match its check accepts, and ``register_replacement`` traces the
replacement, where the counters count, right after the check): the rewrite is logged there.  A near miss is logged
when the pass is done, and only if no other variant rewrote that match (several variants match one attention or
conv: with and without the fp32 softmax, SiLU or no activation, ...), once per refusing check and matched inputs.

Cost.  With the logger off for INFO (the default), ``explaining`` wraps nothing, a check wrapped earlier costs one
thread-local read, a predicate another; nothing is formatted or collected.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
import weakref

import torch

log = logging.getLogger(__name__)


class _State(threading.local):
    watching = False  # a watched extra_check is running (on this thread)
    depth = 0  # predicates running now, nested
    refusal: tuple | None = None  # (name, reason, level) of the first predicate that said no
    near_misses: list | None = None  # inside ``explaining`` with the log on: the refused matches, to log after


_state = _State()


def _first_sentence(doc: str | None) -> str:
    """A docstring's first sentence, on one line (a period then a blank or the end; ``..`` is not one)."""
    text = " ".join((doc or "").split())
    found = re.match(r"(.+?(?<!\.)\.)(?=\s|$)", text)
    return found.group(1) if found else text


def predicate(fn=None, *, level: int = logging.INFO):
    """Decorate an extra_check predicate: while a watched check runs, its first refusal is recorded (Note [rewrite
    log]).  ``level``: where the near miss it causes is logged (DEBUG for refusals that are not news)."""
    if fn is None:
        return functools.partial(predicate, level=level)
    reason = _first_sentence(fn.__doc__)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        state = _state
        if not state.watching:
            return fn(*args, **kwargs)
        state.depth += 1
        try:
            holds = fn(*args, **kwargs)
        finally:
            state.depth -= 1
        if not holds and state.depth == 0 and state.refusal is None:
            state.refusal = (fn.__name__, reason, level)
        return holds

    return checked


# id(registered pattern) -> (weak reference to it, capability, variant name), filled as the patterns are built
_NAMES: dict[int, tuple[weakref.ref, str, str]] = {}


def name_pattern(pattern, capability: str, variant: str) -> None:
    """Record which capability and variant ``pattern`` (the object given to ``register_replacement``) is."""
    _NAMES[id(pattern)] = (weakref.ref(pattern), capability, variant)


def _names(pattern) -> tuple[str, str]:
    """(capability, variant) of a registered pattern."""
    ref, capability, variant = _NAMES.get(id(pattern), (None, None, None))
    if ref is None or ref() is not pattern:  # registered past the pattern cache: not ours to name
        return "inductor_conv", "an unnamed pattern"
    return capability, variant


# a refusal by the check itself (an inline condition) or by register_replacement's own argument check
_UNNAMED = ("extra_check", "a condition that is not one of the named predicates.", logging.INFO)


class _Watched:
    """An entry's extra_check that logs the rewrite it accepts and keeps the near miss it refuses for ``explaining``
    to log."""

    def __init__(self, check, pattern) -> None:
        self.check = check
        self.capability, self.variant = _names(pattern)

    def __call__(self, match):
        state = _state
        if state.near_misses is None:  # outside ``explaining``, or the log is off
            return self.check(match)
        outer = state.watching, state.depth, state.refusal
        state.watching, state.depth, state.refusal = True, 0, None
        try:
            accepted = self.check(match)
            refusal = state.refusal
        finally:
            state.watching, state.depth, state.refusal = outer
        anchor = match.output_nodes()[0]
        if accepted:
            log.info("rewrote %s (%s) at %s", self.capability, self.variant, anchor.name)
        else:
            inputs = tuple(node for name, node in sorted(match.kwargs.items())
                           if isinstance(node, torch.fx.Node) and not name.startswith("tangents"))
            state.near_misses.append((anchor, inputs, self.capability, self.variant, *(refusal or _UNNAMED)))
        return accepted


def watch(pass_dict) -> None:
    """Wrap the extra_check of each entry of ``pass_dict`` (a PatternMatcherPass) not wrapped yet (idempotent)."""
    for entries in pass_dict.patterns.values():
        for entry in entries:
            if not isinstance(entry.extra_check, _Watched):
                entry.extra_check = _Watched(entry.extra_check, entry.pattern)


@contextlib.contextmanager
def explaining(pass_dict, graph: torch.fx.Graph):
    """Around ``pass_dict.apply(graph)``: log each rewrite, then each near miss whose match was not rewritten by
    another variant after all, once per refusing check and matched inputs (several variants match one attention or
    conv: with and without the fp32 softmax, SiLU or no activation, ...)."""
    if not log.isEnabledFor(logging.INFO):
        yield
        return
    watch(pass_dict)
    outer, _state.near_misses = _state.near_misses, []
    try:
        yield
        near_misses = _state.near_misses
    finally:
        _state.near_misses = outer
    alive = set(graph.nodes) if near_misses else set()  # a near miss another variant rewrote: its anchor is gone
    reported = set()
    for anchor, inputs, capability, variant, check, reason, level in near_misses:
        if anchor in alive and (check, inputs) not in reported and log.isEnabledFor(level):
            reported.add((check, inputs))
            log.log(level, "%s near miss (%s) at %s: %s refused it: %s", capability, variant, anchor.name, check,
                    reason)
