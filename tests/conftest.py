"""Test setup shared by every test module.

On a machine without CUDA the Triton kernels run through the interpreter, which must be switched on before
triton is first imported; GPU-marked tests are skipped there.
"""
import os

import pytest

try:
    import torch

    _HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover - torch is a hard dependency
    _HAS_CUDA = False

if not _HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ.get("TRITON_INTERPRET") == "1":
    # @triton.jit reads TRITON_INTERPRET when a module is imported. Some tests set it to 0 around compiled calls (the
    # op reads it at call time and takes its torch fallback); had such a call been the first to import a kernel
    # module, every later interpreted launch would fail ("Cannot call @triton.jit'd outside of the scope of a
    # kernel", seen with `-k dynamic`). So decorate our kernels here, in interpreter mode.
    import inductor_conv.kernels.attention  # noqa: F401
    import inductor_conv.kernels.attention_decode  # noqa: F401
    import inductor_conv.kernels.causal_conv1d  # noqa: F401
    import inductor_conv.reference.attention_dropout  # noqa: F401


def pytest_collection_modifyitems(config, items):
    if _HAS_CUDA:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
