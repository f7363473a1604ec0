"""Utilities that classic TVM code imports from ``tvm.contrib`` (``utils.tempdir``,
``nvcc``, ``cc.create_shared``, ``download.download_testdata``, ``pickle_memoize.memoize``), under the same
names."""
import importlib

#: the submodules, imported on first use (``tecc.contrib.graph_executor`` works after a
#: plain ``import tecc``, as classic code written against TVM expects)
_SUBMODULES = ("cblas", "cc", "clang", "download", "graph_executor", "graph_runtime", "nvcc", "pickle_memoize", "tedd", "util",
               "utils")


def __getattr__(name):
    if name not in _SUBMODULES:
        raise AttributeError(f"module 'tecc.contrib' has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{name}")
    globals()[name] = module
    return module
