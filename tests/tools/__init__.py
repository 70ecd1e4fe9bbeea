"""Tools the tests use that are not tests themselves (pytest collects nothing here): ``compile_sm90`` compiles the
kernels and templates for sm_90 without a GPU, for tests/test_*_compile_sm90.py and benchmarks/diagnostics/."""
