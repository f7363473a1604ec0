"""Packed functions: Python functions registered under a name (TVM's global function
table), and the bridge through which compiled code calls them.

Registering and looking up::

    @tecc.register_func("my.scale")          # or tecc.register_func("my.scale", f)
    def scale(x, y, factor):
        y.copyfrom(x.numpy() * factor)

    f = tecc.get_global_func("my.scale")      # a PackedFunc, callable from Python

Compiled code calls such a function with ``tir.call_packed("my.scale", A, B, 2.0)``:
the C backend prints, per library, one cached handle per name and a call through
two function pointers that :func:`install` points at this module when the runtime
loads the library (``tecc.build`` and ``runtime.load_module`` both do).  The first
call resolves the name (:func:`_lookup`); every call passes its arguments as an
array of :class:`PackedArg`: a buffer arrives as a :class:`~tecc.runtime.NDArray`
that *views* the buffer's memory (valid during the call: writing it, e.g. with
``out.copyfrom(...)`` or ``tecc.nd.array(x).copyto(out)``, writes the kernel's
buffer), an integer or float as a Python ``int``/``float``, a string as ``str``.

A Python exception raised by the function, or a name nobody registered, makes the
compiled function return -1; the module that called it then raises that error
(:func:`take_error`) instead of a generic failure.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..errors import FunctionNotFoundError, TeccError, TeccTypeError
from . import dtypes
from .device import cpu
from .ndarray import NDArray

#: type codes of :class:`PackedArg` (the C printer writes the same numbers)
ARG_INT = 0
ARG_UINT = 1
ARG_FLOAT = 2
ARG_HANDLE = 3
ARG_ARRAY = 5
ARG_STR = 6

#: names of the library symbols :func:`install` sets
LOOKUP_SYMBOL = "tecc_packed_lookup"
INVOKE_SYMBOL = "tecc_packed_invoke"


class PackedFunc:
    """A function in the global table (TVM's ``PackedFunc``): call it like the
    Python function it wraps.

    Parameters
    ----------
    func : callable
        The Python function.
    name : str
        The name it is registered under.
    """

    __slots__ = ("_func", "name")

    def __init__(self, func, name: str = ""):
        if not callable(func):
            raise TeccTypeError(f"a packed function must be callable, got {type(func).__name__}")
        self._func = func
        self.name = name

    def __call__(self, *args):
        return self._func(*args)

    @property
    def func(self):
        """The wrapped Python function."""
        return self._func

    def __repr__(self) -> str:
        return f"<tecc.runtime.PackedFunc {self.name!r}>"


_registry: dict = {}
_lock = threading.RLock()


def register_func(func_name, f=None, override: bool = False):
    """Register ``f`` as the global function ``func_name`` (TVM's ``register_func``).

    Parameters
    ----------
    func_name : str or callable
        The name; a callable registers itself under its ``__name__``
        (``@tecc.register_func`` without arguments).
    f : callable, optional
        The function.  Without it a decorator is returned
        (``@tecc.register_func("name")``).
    override : bool
        Replace a function already registered under the name.

    Returns
    -------
    PackedFunc or callable
        The registered function, or the decorator that registers one.

    Raises
    ------
    TeccError
        If the name is taken and ``override`` is False.
    """
    if callable(func_name) and f is None:
        f = func_name
        func_name = getattr(f, "__name__", None)
    if not isinstance(func_name, str) or not func_name:
        raise TeccTypeError(f"register_func needs a function name (a non-empty str), got {func_name!r}")

    def register(func):
        packed = func if isinstance(func, PackedFunc) and func.name == func_name else PackedFunc(
            func.func if isinstance(func, PackedFunc) else func, func_name)
        with _lock:
            if func_name in _registry and not override:
                raise TeccError(f"register_func: a function named {func_name!r} is already registered; "
                                "pass override=True to replace it (or remove_global_func first)")
            _registry[func_name] = packed
        return packed

    if f is not None:
        return register(f)
    return register


def get_global_func(name: str, allow_missing: bool = False):
    """The global function ``name`` (a :class:`PackedFunc`).

    Parameters
    ----------
    name : str
    allow_missing : bool
        Return None instead of raising when no function has that name.

    Raises
    ------
    FunctionNotFoundError
        If nothing is registered under ``name`` (and ``allow_missing`` is False).
    """
    with _lock:
        func = _registry.get(name)
    if func is None and not allow_missing:
        raise FunctionNotFoundError(_missing_message(name))
    return func


def list_global_func_names() -> list:
    """The names of every registered function, sorted."""
    with _lock:
        return sorted(_registry)


def remove_global_func(name: str) -> None:
    """Unregister ``name`` (TVM's ``remove_global_func``).

    Raises
    ------
    FunctionNotFoundError
        If nothing is registered under ``name``.
    """
    with _lock:
        if name not in _registry:
            raise FunctionNotFoundError(_missing_message(name))
        del _registry[name]


def _missing_message(name: str) -> str:
    with _lock:
        similar = [n for n in _registry if n.split(".")[-1] == name.split(".")[-1] and n != name]
    hint = f" (did you mean {similar[0]!r}?)" if similar else ""
    return (f"no packed function named {name!r} is registered{hint}; register it first with "
            f"tecc.register_func({name!r}, f) or the decorator @tecc.register_func({name!r})")


# ---------------------------------------------------------------------------------------
# the bridge from compiled code
# ---------------------------------------------------------------------------------------
class PackedArg(ctypes.Structure):
    """One argument (or the result) of a call from compiled code; the C printer
    declares the same struct as ``tecc_packed_arg_t``."""

    _fields_ = [
        ("v_int64", ctypes.c_int64),
        ("v_float64", ctypes.c_double),
        ("v_handle", ctypes.c_void_p),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("ndim", ctypes.c_int32),
        ("type_code", ctypes.c_int32),
        ("dtype", ctypes.c_char_p),
    ]


_LOOKUP_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p))
_INVOKE_TYPE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(PackedArg), ctypes.c_int32,
                                ctypes.POINTER(PackedArg))

#: handle - 1 -> name; a handle names a function, the table says what it is now
_handle_names: list = []
_handles: dict = {}
_pending = None  # the first error of a call from compiled code, until take_error


def _fail(err: BaseException) -> int:
    global _pending
    with _lock:
        if _pending is None:
            _pending = err
    return -1


def take_error():
    """The error that made a packed call from compiled code fail (None if none),
    cleared; a module raises it when its function returns -1."""
    global _pending
    with _lock:
        err, _pending = _pending, None
    return err


def _lookup(name, out) -> int:
    try:
        text = name.decode("utf-8", "replace")
        with _lock:
            if text not in _registry:
                raise FunctionNotFoundError(_missing_message(text))
            handle = _handles.get(text)
            if handle is None:
                _handle_names.append(text)
                handle = _handles[text] = len(_handle_names)
        out[0] = handle
        return 0
    except BaseException as err:  # noqa: BLE001 - nothing may escape a ctypes callback
        return _fail(err)


def _array(arg: PackedArg):
    """An NDArray viewing the memory of a buffer argument."""
    dtype = arg.dtype.decode()
    storage = dtypes.storage(dtype)
    ndim = int(arg.ndim)
    shape = tuple(int(arg.shape[i]) for i in range(ndim))
    count = int(np.prod(shape, dtype=np.int64))
    if arg.strides:
        strides = tuple(int(arg.strides[i]) for i in range(ndim))
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if count else 0
    else:
        strides, span = None, count
    if span == 0:
        flat = np.zeros(0, dtype=storage)
    else:
        raw = (ctypes.c_char * (span * storage.itemsize)).from_address(arg.v_handle)
        flat = np.frombuffer(raw, dtype=storage, count=span)
    if strides is None:
        data = flat.reshape(shape)
    else:
        data = np.lib.stride_tricks.as_strided(flat, shape, tuple(s * storage.itemsize for s in strides))
    return NDArray(data, dtype, cpu(0))


def _value(arg: PackedArg):
    code = arg.type_code
    if code == ARG_ARRAY:
        return _array(arg)
    if code == ARG_INT:
        return int(arg.v_int64)
    if code == ARG_UINT:
        return int(arg.v_int64) & 0xFFFFFFFFFFFFFFFF
    if code == ARG_FLOAT:
        return float(arg.v_float64)
    if code == ARG_STR:
        return ctypes.cast(arg.v_handle, ctypes.c_char_p).value.decode("utf-8", "replace")
    return arg.v_handle  # a handle: its address (None for NULL)


def _store_result(value, ret) -> None:
    out = ret[0]
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        out.type_code, out.v_int64 = ARG_INT, v - (1 << 64) if v >= 1 << 63 else v
    elif isinstance(value, (float, np.floating)):
        out.type_code, out.v_float64 = ARG_FLOAT, float(value)
    else:  # None or an object compiled code cannot hold: the call's value is 0
        out.type_code, out.v_int64 = ARG_INT, 0


def _invoke(handle, args, nargs, ret) -> int:
    try:
        with _lock:
            name = _handle_names[int(handle) - 1]
            func = _registry.get(name)
        if func is None:
            raise FunctionNotFoundError(_missing_message(name) + " (it was removed after compiled code "
                                        "first called it)")
        values = [_value(args[i]) for i in range(nargs)]
        try:
            result = func(*values)
        except BaseException as err:
            if hasattr(err, "add_note"):
                err.add_note(f"raised by the packed function {name!r} called from compiled code")
            raise
        if ret:
            _store_result(result, ret)
        return 0
    except BaseException as err:  # noqa: BLE001 - nothing may escape a ctypes callback
        return _fail(err)


_LOOKUP = _LOOKUP_TYPE(_lookup)
_INVOKE = _INVOKE_TYPE(_invoke)


def install(lib) -> bool:
    """Point the packed-call hooks of a loaded library (``ctypes.CDLL``) at this
    module; False when the library calls no packed function."""
    try:
        lookup = ctypes.c_void_p.in_dll(lib, LOOKUP_SYMBOL)
        invoke = ctypes.c_void_p.in_dll(lib, INVOKE_SYMBOL)
    except ValueError:
        return False
    lookup.value = ctypes.cast(_LOOKUP, ctypes.c_void_p).value
    invoke.value = ctypes.cast(_INVOKE, ctypes.c_void_p).value
    return True
