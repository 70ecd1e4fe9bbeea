"""Test setup shared by every test module.

On a machine without CUDA the Triton kernels run through the interpreter, which must be switched on before
triton is first imported; GPU-marked tests are skipped there.
"""
import glob
import os

import pytest

# TORCH_LOGS=inductor_conv makes `import torch` import our package (to find the logger it names), and with it triton
# and the kernels, which read TRITON_INTERPRET then: with that setting, on a machine without NVIDIA devices, switch
# the interpreter on before torch is imported (undone below if torch then finds CUDA after all).
_EARLY_INTERPRET = ("inductor_conv" in os.environ.get("TORCH_LOGS", "") and "TRITON_INTERPRET" not in os.environ
                    and not glob.glob("/dev/nvidia[0-9]*"))
if _EARLY_INTERPRET:
    os.environ["TRITON_INTERPRET"] = "1"

# The shared check helpers assert like test modules: pytest rewrites their asserts for detailed failure messages.
pytest.register_assert_rewrite("helpers", "attention_forms_checks", "conv_forms_checks")

try:
    import torch

    _HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - torch is a hard dependency
    _HAS_CUDA = False

if not _HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")
elif _EARLY_INTERPRET:
    del os.environ["TRITON_INTERPRET"]
if os.environ.get("TRITON_INTERPRET") == "1":
    # @triton.jit reads TRITON_INTERPRET when a module is imported. Some tests set it to 0 around compiled calls (the
    # op reads it at call time and takes its torch fallback); had such a call been the first to import a kernel
    # module, every later interpreted launch would fail ("Cannot call @triton.jit'd outside of the scope of a
    # kernel", seen with `-k dynamic`). So decorate our kernels here, in interpreter mode.
    import inductor_conv.kernels.attention  # noqa: F401
    import inductor_conv.kernels.attention_decode  # noqa: F401
    import inductor_conv.kernels.causal_conv1d  # noqa: F401
    import inductor_conv.reference.attention_dropout  # noqa: F401


def _patch_language_once_per_launch():
    """Note [interpreter language patch]
    Triton 3.6's interpreter patches ``triton.language`` for a launch (GridExecutor.__call__: ``_patch_lang``, undone
    when the grid is done), and again at every call of a @triton.jit helper inside a program
    (InterpretedFunction.__call__), never undone.  The second patch finds the language already patched (its builtins
    are the launch's wrappers, which it skips) and sets the same tensor and core attributes again: no effect, but
    ``inspect.getmembers`` over the language for every helper call of every program was ~30% of the interpreter's
    time in our kernels (they call a dozen helpers per program).  So while a launch holds the patch, a helper call
    patches nothing.  The launch patches the language modules its helpers may name (``tl`` and ``tl.core``) whichever
    its own module imports.  Only where the interpreter has exactly this structure (triton 3.6); elsewhere nothing
    changes.  ``INDUCTOR_CONV_TEST_PATCH_ONCE=0`` turns it off: the attention op's outputs and gradients (mask,
    dropout, causal) and the conv's were bit-identical either way."""
    import types

    import triton.language as tl
    from triton.runtime import interpreter

    if not (hasattr(interpreter, "_patch_lang") and hasattr(interpreter, "_LangPatchScope")
            and hasattr(interpreter, "GridExecutor") and hasattr(interpreter, "InterpretedFunction")):
        return
    patch_lang, active = interpreter._patch_lang, []
    both_langs = types.SimpleNamespace(__globals__={"tl": tl, "core": tl.core})

    def once_per_launch(fn):
        if active:  # a helper called inside a program: the launch's patch is in place
            return interpreter._LangPatchScope()
        scope = patch_lang(both_langs)
        active.append(True)
        restore = scope.restore

        def restore_and_end():
            active.clear()
            restore()

        scope.restore = restore_and_end
        return scope

    interpreter._patch_lang = once_per_launch


if os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("INDUCTOR_CONV_TEST_PATCH_ONCE", "1") == "1":
    _patch_language_once_per_launch()


def _interpreter_overflow_checks(on: bool):
    """Note [interpreter overflow checks]
    The interpreter checks every integer add, sub and mul for int32 overflow (its builder's
    ``options.sanitize_overflow``: each op redone in int64 and compared with int32's range, then a device_assert),
    which compiled kernels do only in debug mode.  Our kernels compute an offset per element from program ids,
    strides and positions, so those checks were ~40% of an interpreted launch (94 -> 56 s for the conv slice, causal
    pair and mask-range tests).  At the test sizes, offsets are at most a few thousand: no check can fire, and
    values are the same with or without them.  The tests of the int64 offsets (where overflow is the subject) turn
    them back on (``overflow_checks``); ``INDUCTOR_CONV_TEST_OVERFLOW_CHECKS=1`` keeps them on everywhere.  Returns
    the previous setting (None where the interpreter has no such option)."""
    import dataclasses

    from triton.runtime import interpreter

    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if not hasattr(options, "sanitize_overflow"):
        return None
    builder.options = dataclasses.replace(options, sanitize_overflow=on)
    return options.sanitize_overflow


if os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("INDUCTOR_CONV_TEST_OVERFLOW_CHECKS", "0") != "1":
    _interpreter_overflow_checks(False)
from helpers import interpreter_rounds_bf16_to_nearest  # noqa: E402  Note [interpreter bf16 rounding]

interpreter_rounds_bf16_to_nearest()


def _module_fixture_group(item):
    """The module's name when the test uses a module-scoped fixture defined there (test_distributed.py's 2-rank
    spawn, the sm_90 compile subprocesses): under pytest-xdist (README's ``-n 2 --dist loadgroup``) the module's tests
    then run in one worker, which sets the fixture up once instead of once per worker."""
    infos = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    module = getattr(getattr(item, "module", None), "__name__", None)
    for defs in infos.values():
        if any(d.scope == "module" and getattr(d.func, "__module__", None) == module for d in defs):
            return module
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        group = _module_fixture_group(item)
        if group and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
    if _HAS_CUDA:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def overflow_checks():
    """The interpreter's int32 overflow checks on for one test (Note [interpreter overflow checks])."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        yield
        return
    before = _interpreter_overflow_checks(True)
    try:
        yield
    finally:
        if before is not None:
            _interpreter_overflow_checks(before)


@pytest.fixture
def eager_cudnn_at_every_size(monkeypatch):
    """The eager op takes cuDNN's route from config.attention_cudnn_eager_min_work of work on; the tests of the
    route's mechanics run at smaller shapes, so they lower that floor to 0."""
    import inductor_conv

    monkeypatch.setattr(inductor_conv.config, "attention_cudnn_eager_min_work", 0)


@pytest.fixture
def cudnn_route_at_every_head_dim(monkeypatch):
    """Compiled graphs take cuDNN's route from head dim 128 (CUDNN_COMPILED_MIN_HEAD_DIM, heuristics/attention.py);
    the tests of the route's mechanics run at head dims 64 and 80, so they lower that floor."""
    from inductor_conv.heuristics import attention as heuristics

    monkeypatch.setattr(heuristics, "CUDNN_COMPILED_MIN_HEAD_DIM", 8)
