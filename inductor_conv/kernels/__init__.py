"""Triton kernels (eager launchers) and the @triton.jit math helpers they share with the templates."""
