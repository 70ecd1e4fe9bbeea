"""Launching the eager kernels with little host time.

Note [eager launch path]
``kernel[grid](*args, **constexprs)`` is Triton's generic launch: it binds every argument by name, specialises
each one (type, 16-byte alignment, divisibility by 16, == 1), hashes the key, checks the kernel's global values,
builds launch metadata for profiler hooks and only then calls the compiled launcher.  With our kernels' 30-50
arguments that is tens of microseconds of CPU per launch, and an eager call of our ops launches one to three kernels
(docs/benchmarks.md, host time per call).  ``FastLaunch`` keeps, per call signature, the ``CompiledKernel`` that
Triton's generic launch returned the first time, and launches it again directly through its compiled launcher
(``CompiledKernel.run``, the call Triton's own ``JITFunction.run`` ends with).

The cache key must determine everything Triton specialises on, so that a hit launches exactly the kernel the generic
path would have chosen:
* ``meta``: the caller's hashable description of the constexprs, launch options, and of every pointer argument's
  dtype and None-ness (tests/test_kernels_*.py check each caller against the generic path);
* the current CUDA device (Triton loads a kernel per device and launches on the current device's current stream);
* the 16-byte alignment of every pointer (one flag when all are aligned, else one per pointer);
* the int arguments' values (Triton specialises ints on == 1, divisibility by 16 and width: the value decides all
  three), except the ``unkeyed`` ones: ints the kernel declares do_not_specialize and whose values the caller keeps in
  one width's range (a per-call seed), so that every value launches the same kernel.  Floats are fp32 runtime values
  whatever they are.
The generic path runs instead when a launch hook is installed (profilers such as proton read launch metadata) and
whenever a launch returns no ``CompiledKernel``: then nothing is cached, so every launch of a kernel that Triton's
interpreter runs (decorated under TRITON_INTERPRET=1, whatever the variable says later) or that
tests/tools/compile_sm90.py records instead of running takes the generic path.  A bounded number of signatures is
kept per kernel (dynamic shapes add one per shape).
Written against triton 3.6 and 3.7 (``CompiledKernel.run(grid0, grid1, grid2, stream, function, packed_metadata,
launch_metadata, enter_hook, exit_hook, *args)``); another Triton version takes the generic path.
"""
from __future__ import annotations

import triton

from inductor_conv._compat import cuda_current_device, cuda_current_raw_stream

_MAX_SIGNATURES = 256  # per kernel; past it the cache starts afresh
_KNOWN_TRITON = tuple(int(p) for p in triton.__version__.split(".")[:2]) in ((3, 6), (3, 7))


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for ints: triton.cdiv is a constexpr function whose argument unwrapping costs microseconds."""
    return -(-a // b)


def _runtime_knobs():
    try:
        from triton import knobs

        return knobs.runtime
    except ImportError:  # pragma: no cover - older Triton
        return None


_RUNTIME = _runtime_knobs()


def _hooks_idle() -> bool:
    """No launch hook installed (Triton 3.6+ keeps an empty HookChain there; a profiler adds to it)."""
    hook = _RUNTIME.launch_enter_hook
    return hook is None or not getattr(hook, "calls", True)


class FastLaunch:
    """``FastLaunch(kernel)(grid, meta, ptrs, ints, floats, constexprs, unkeyed=(), **options)`` launches ``kernel``
    whose parameters are, in order, the pointer arguments ``ptrs`` (tensors or None), the int arguments ``ints``, the
    ``unkeyed`` int arguments, the float arguments ``floats``, then the constexprs (given by name in ``constexprs``);
    see Note [eager launch path] for what ``meta`` must determine."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel
        params = getattr(kernel, "params", None)  # a JITFunction's (the interpreter's functions have none)
        self.constexpr_names = tuple(p.name for p in params if p.is_constexpr) if params is not None else ()
        if params is not None and any(p.is_constexpr for p in params[: len(params) - len(self.constexpr_names)]):
            raise TypeError(f"{kernel.__name__}: FastLaunch needs the constexpr parameters last")
        self.signatures: dict = {}

    def __call__(self, grid, meta, ptrs: tuple, ints: tuple, floats: tuple, constexprs: dict, unkeyed: tuple = (),
                 **options) -> None:
        fast = _KNOWN_TRITON and ptrs[0].is_cuda and _hooks_idle()
        if fast:
            aligned = True
            for t in ptrs:
                if t is not None and t.data_ptr() % 16:
                    aligned = tuple(t is not None and t.data_ptr() % 16 == 0 for t in ptrs)
                    break
            device = cuda_current_device()
            key = (meta, device, aligned, ints)
            entry = self.signatures.get(key)
            if entry is not None:
                run, function, packed, tail = entry
                run(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
                    cuda_current_raw_stream(device), function, packed, None, None, None, *ptrs, *ints, *unkeyed,
                    *floats, *tail)
                return
        compiled = self.kernel[grid](*ptrs, *ints, *unkeyed, *floats, **constexprs, **options)
        if fast and isinstance(compiled, triton.compiler.CompiledKernel):
            if len(self.signatures) >= _MAX_SIGNATURES:
                self.signatures.clear()
            tail = tuple(constexprs.get(name) for name in self.constexpr_names)  # the launcher skips them
            self.signatures[key] = (compiled.run, compiled.function, compiled.packed_metadata, tail)
