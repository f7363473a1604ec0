"""Utilities that classic TVM code imports from ``tvm.contrib`` (``utils.tempdir``,
``nvcc``), under the same names."""
