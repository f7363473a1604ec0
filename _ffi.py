"""TVM's ``tvm._ffi`` names that TVM code uses, over tecc's runtime.

TVM reaches its C++ core through ``tvm._ffi``; tecc has no such core, but code
written for TVM registers and looks up global functions through it::

    @tvm._ffi.register_func("my.callback")
    def callback(x):
        ...

``registry`` is the module holding them (TVM's ``tvm._ffi.registry``).
"""
from . import errors as base  # noqa: F401  (tvm._ffi.base.TVMError)
from .runtime import packed_func as registry
from .runtime.packed_func import (  # noqa: F401
    PackedFunc, get_global_func, list_global_func_names, register_func, remove_global_func,
)

__all__ = ["PackedFunc", "base", "get_global_func", "list_global_func_names", "register_func", "register_object",
           "registry", "remove_global_func"]


def register_object(type_key=None):
    """TVM's class decorator that ties a Python class to a C++ object type.  tecc's
    objects are plain Python classes, so the class is returned unchanged (with or
    without a type key: ``@register_object`` and ``@register_object("my.Node")``)."""
    if isinstance(type_key, type):
        return type_key
    return lambda cls: cls
