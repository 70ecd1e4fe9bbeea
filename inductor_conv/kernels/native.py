"""The eager ops' backward launched from C++ (Note [native backward] in inductor_conv/csrc/backward_node.cpp).

The C++ extension is built with torch.utils.cpp_extension the first time an eager op's forward asks for it on a GPU,
in a background thread (a C++ compiler and ninja, a dependency, are needed; ~30 s once per torch version, then loaded
from torch's extension cache in later processes), and used from the first call after it is ready; until then, and
wherever it cannot be built, the Python backward runs.  ``extension(wait=True)`` blocks until the build has finished (tests, benchmarks).

``program_launch`` turns one launch the Python path would make (FastLaunch's arguments) into a launch of a Program:
the kernel Triton compiled for those arguments (asked of Triton with ``warmup``, which compiles or finds it without
launching), its parameters as Triton's launcher passes them (the non-constexpr ones in order, then two null scratch
pointers), pointers named by slot.  It refuses (None) what this launcher does not do: cluster or cooperative
launches, programmatic dependent launch, scratch memory, parameter types other than pointers, i32, i64 and fp32.
"""
from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger("inductor_conv")

_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc", "backward_node.cpp")
_LOCK = threading.Lock()
_STATE: dict = {"ext": None, "thread": None, "failed": False}

# argument kinds, as backward_node.cpp's ArgKind
SLOT, I32, I64, F32, NULL, CALL = 0, 1, 2, 3, 4, 5
_INT_KINDS = {"i32": I32, "i64": I64, "fp32": F32}


def _extension_name() -> str:
    """The extension's name, which names its build directory in torch's extension cache: one per torch version, so a
    process of another torch (a venv beside this one, an upgrade) neither loads this build nor waits on its lock."""
    import re

    import torch

    return "inductor_conv_native_" + re.sub(r"\W", "_", torch.__version__)


_NAME = _extension_name()
# torch's build lock (a file in the extension's build directory) is left behind by a process that exits while its
# build thread is still running (the thread is a daemon: a short script does not wait for it); a later build waits on
# such a lock forever, so one older than this many seconds is taken for stale and removed.
_STALE_LOCK_S = 300


def _remove_stale_lock() -> None:
    import time

    from inductor_conv._compat import extension_build_directory

    lock = os.path.join(extension_build_directory(_NAME), "lock")
    try:
        if time.time() - os.path.getmtime(lock) > _STALE_LOCK_S:
            os.remove(lock)
    except OSError:  # no lock, or another process removed it first
        pass


def _build() -> None:
    try:
        from torch.utils.cpp_extension import load

        _remove_stale_lock()
        ext = load(name=_NAME, sources=[_SOURCE], extra_cflags=["-O2"], verbose=False)
    except Exception as e:  # no compiler, no ninja, headers missing: the Python backward stays
        log.warning("inductor_conv: the native backward could not be built (%s); the Python backward runs", e)
        _STATE["failed"] = True
        return
    _STATE["ext"] = ext


def extension(wait: bool = False):
    """The built extension, or None: not built yet (the build starts here, in the background), the build failed, or
    config.native_backward is off."""
    from inductor_conv import config

    return build(wait) if config.native_backward else None


def built():
    """The extension if it is built and config.native_backward is on, else None; never starts a build (for checks on
    every call, which must not build it where no GPU call asked for it)."""
    from inductor_conv import config

    return _STATE["ext"] if config.native_backward else None


def build(wait: bool = False):
    """The built extension, starting its build in the background on the first call, or None while it builds (or
    after it failed); wait: block until the build has finished."""
    ext = _STATE["ext"]
    if ext is not None or _STATE["failed"]:
        return ext
    with _LOCK:
        if _STATE["thread"] is None:
            _STATE["thread"] = threading.Thread(target=_build, name="inductor_conv-native-build", daemon=True)
            _STATE["thread"].start()
    if wait:
        _STATE["thread"].join(timeout=_STALE_LOCK_S + 120)
    return _STATE["ext"]


# Programs kept per op (by configuration and shape, as FastLaunch keeps signatures); past it the cache starts afresh.
_MAX_PROGRAMS = 256


def cached_program(cache: dict, key, plan, tensors, *args):
    """The Program under `key` in an op's `cache`, made by ``plan(ext, *args)`` the first time (a Program, or None
    where the node does not take that call); None while the extension is not built or config.native_backward is
    off, and for a call whose `tensors` are not all 16-byte aligned (the Programs are planned for aligned
    pointers, as Triton specialises them)."""
    if not all(t is None or t.data_ptr() % 16 == 0 for t in tensors):
        return None
    ext = extension()
    if ext is None:
        return None
    if key not in cache:
        if len(cache) >= _MAX_PROGRAMS:
            cache.clear()
        cache[key] = plan(ext, *args)
    return cache[key]


def dense(t) -> bool:
    """empty_like(t) gives t's strides (what the node allocates t's gradient with): t contiguous, or the transpose of
    dims 1 and 2 of a contiguous tensor (the conv's channel-last [B, L, C] view, attention's (B, S, H, D) one)."""
    return t.is_contiguous() or t.transpose(1, 2).is_contiguous()


class Phantom:
    """What a launch description needs of a tensor the backward allocates later (its shape, strides and dtype),
    standing in for it when the forward plans the backward; Triton specialises it as an aligned pointer."""

    __slots__ = ("shape", "_stride", "dtype")

    def __init__(self, shape, stride, dtype) -> None:
        self.shape, self._stride, self.dtype = tuple(shape), tuple(stride), dtype

    @classmethod
    def contiguous(cls, shape, dtype) -> "Phantom":
        """A contiguous buffer of this shape (torch.empty's strides)."""
        import torch

        return cls(shape, torch.empty(shape, device="meta").stride(), dtype)

    def stride(self, dim=None):
        return self._stride if dim is None else self._stride[dim]


def program_launch(program, launcher, grid, ptrs, ints, floats, constexprs, options, slots, calls=None) -> bool:
    """Adds to `program` the launch `launcher(grid, _, ptrs, ints, floats, constexprs, **options)` would make, its
    pointers given as slots (`slots`: id of a tensor or Phantom -> slot).  calls: {position in (*ptrs, *ints,
    *floats): index}, int64 arguments each run passes (CALL: the run's call value of that index) instead of the
    value planned with.  False where this launcher cannot make it."""
    kernel = launcher.kernel
    args = [p.dtype if isinstance(p, Phantom) else p for p in ptrs]
    compiled = kernel.warmup(*args, *ints, *floats, grid=grid, **constexprs, **options)
    if hasattr(compiled, "result"):  # Triton's asynchronous compile mode hands back a future
        compiled = compiled.result()
    meta = compiled.metadata
    if (getattr(meta, "num_ctas", 1) != 1 or getattr(meta, "launch_cooperative_grid", False)
            or getattr(meta, "launch_pdl", False) or getattr(meta, "global_scratch_size", 0)
            or getattr(meta, "profile_scratch_size", 0) or getattr(meta, "tmem_size", None)):
        return False
    signature = compiled.src.signature
    kinds, values = [], []
    for position, (name, value) in enumerate(zip(kernel.arg_names, (*ptrs, *ints, *floats))):
        ty = signature[name]
        if ty == "constexpr":
            continue
        if calls and position in calls:
            if ty != "i64":
                return False
            kinds.append(CALL)
            values.append(float(calls[position]))
        elif ty.startswith("*"):
            if id(value) not in slots:
                return False
            kinds.append(SLOT)
            values.append(float(slots[id(value)]))
        elif ty in _INT_KINDS:
            kinds.append(_INT_KINDS[ty])
            values.append(float(value))
        else:
            return False
    kinds += [NULL, NULL]  # Triton's global and profile scratch pointers
    values += [0.0, 0.0]
    compiled._init_handles()
    grid = [*grid, *(1,) * (3 - len(grid))]
    program.add_launch(int(compiled.function), grid, 32 * meta.num_warps, meta.shared, kinds, values)
    return True
