"""Triton kernels (eager launchers) and the @triton.jit math helpers they share with the templates."""
import os


def interpreting() -> bool:
    """Whether Triton runs kernels through its interpreter (TRITON_INTERPRET=1: CPU tensors, no PTX)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"
