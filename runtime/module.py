"""Built modules: call a compiled function, time it, export it and load it back.

A :class:`Module` is what ``tecc.build`` returns for a CPU target.  It holds the loaded
library, the C source and one :class:`ArgSpec` per parameter of the function, which it
uses to check every call before the raw C function runs::

    f = tecc.build(s, [A, B], target="llvm")
    f(a, b)                                   # NDArray or numpy arguments
    t = f.time_evaluator(f.entry_name, tecc.cpu(0), number=10)(a, b).mean
    f.export_library("add.so"); g = tecc.runtime.load_module("add.so")
"""
from __future__ import annotations

import ctypes
import hashlib
import io
import json
import os
import statistics
import tempfile
import zipfile
from dataclasses import dataclass

import numpy as np

from .. import config
from ..errors import RuntimeArgError, TeccError
from ..tir import dtype as _dt
from . import timing
from .device import CPU, Device
from .files import atomic_write
from .ndarray import NDArray

_FORMAT = "tecc-module"
_FORMAT_VERSION = 1


class FunctionNotFoundError(TeccError, AttributeError):
    """A module has no function of the requested name."""


class KernelError(TeccError):
    """A compiled function reported a failure (an assertion inside the kernel)."""


@dataclass
class ArgSpec:
    """What one parameter of a built function expects.

    ``kind == "buffer"``: an array of ``dtype`` whose ``shape`` entries are ints,
    names of scalar parameters (symbolic dims, bound at call time) or ``None`` (a
    composite extent that is not checked; ``shape_text`` shows it).
    ``kind == "scalar"``: an integer parameter named ``name`` that the runtime binds
    from ``binding = (parameter index, dim)`` when given.
    """

    kind: str
    name: str
    dtype: str
    shape: tuple = ()
    shape_text: tuple = ()
    written: bool = False
    binding: tuple | None = None

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "shape_text": list(self.shape_text), "written": self.written,
                "binding": list(self.binding) if self.binding is not None else None}

    @staticmethod
    def from_json(d: dict) -> "ArgSpec":
        return ArgSpec(d["kind"], d["name"], d["dtype"], tuple(d["shape"]), tuple(d["shape_text"]),
                       bool(d["written"]), tuple(d["binding"]) if d["binding"] is not None else None)

    def describe_shape(self) -> str:
        dims = [str(t) for t in self.shape_text] if self.shape_text else [str(s) for s in self.shape]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _ctype_of(dtype: str):
    return {"int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint32": ctypes.c_uint32,
            "uint64": ctypes.c_uint64, "int16": ctypes.c_int16, "int8": ctypes.c_int8,
            "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "bool": ctypes.c_bool,
            "float32": ctypes.c_float, "float64": ctypes.c_double}[dtype]


def _storage_numpy_dtype(dtype: str) -> np.dtype:
    if _dt.parse(dtype).code == "bfloat":
        return np.dtype("uint16")
    return _dt.to_numpy(dtype)


class ProfileResult:
    """Timing of a function: ``results`` holds seconds per run, one per repeat."""

    def __init__(self, results):
        self.results = tuple(results)

    @property
    def mean(self) -> float:
        return float(statistics.fmean(self.results))

    @property
    def median(self) -> float:
        return float(statistics.median(self.results))

    @property
    def std(self) -> float:
        return float(statistics.pstdev(self.results)) if len(self.results) > 1 else 0.0

    @property
    def min(self) -> float:
        return float(min(self.results))

    @property
    def max(self) -> float:
        return float(max(self.results))

    def __repr__(self) -> str:
        return (f"ProfileResult(mean={self.mean * 1e3:.4f} ms, median={self.median * 1e3:.4f} ms, "
                f"std={self.std * 1e3:.4f} ms, repeats={len(self.results)})")


class Function:
    """A callable function of a :class:`Module` (``mod[name]``)."""

    def __init__(self, module: "Module", name: str):
        self.module = module
        self.name = name

    def __call__(self, *args):
        raw, keep = self.module._prepare(args)
        self.module._invoke(raw)
        del keep

    def __repr__(self) -> str:
        return f"<tecc.runtime.Function {self.name} of {self.module}>"


class Module:
    """A compiled CPU module: one exported C function with argument checking.

    Parameters
    ----------
    lib_path : str
        The shared library.
    entry_name : str
        The exported function's name.
    arg_specs : list of ArgSpec
        One per parameter of the function, in order.
    source : str
        The C source (``get_source()``).
    target : str
        The target string it was built for.
    """

    type_key = "c"

    def __init__(self, lib_path: str, entry_name: str, arg_specs, source: str, target: str):
        from ..cpu_fallback.compiler import load_library

        self.lib_path = str(lib_path)
        self.entry_name = entry_name
        self.arg_specs = list(arg_specs)
        self.source = source
        self.target = str(target)
        self.imported_modules = []
        self._lib = load_library(self.lib_path)
        self._cfunc = getattr(self._lib, entry_name)
        self._cfunc.restype = ctypes.c_int32
        self._cfunc.argtypes = [ctypes.c_void_p if a.kind == "buffer" else _ctype_of(a.dtype)
                                for a in self.arg_specs]
        self._get_error = self._lib.tecc_get_last_error
        self._get_error.restype = ctypes.c_char_p
        self._get_error.argtypes = []

    # functions ----------------------------------------------------------------------
    @property
    def entry_func(self) -> Function:
        return Function(self, self.entry_name)

    def get_function(self, name: str) -> Function:
        """The function ``name`` of this module."""
        if name != self.entry_name:
            raise FunctionNotFoundError(
                f"module has no function {name!r}; its function is {self.entry_name!r}")
        return Function(self, name)

    def __getitem__(self, name: str) -> Function:
        return self.get_function(name)

    def __call__(self, *args):
        return self.entry_func(*args)

    def get_source(self, fmt: str = "") -> str:
        """The generated C source (``fmt`` may be ``""``, ``"c"`` or ``"cc"``)."""
        if fmt not in ("", "c", "cc", "source"):
            raise TeccError(f"a CPU module has only C source; get_source({fmt!r}) is not available")
        return self.source

    def __repr__(self) -> str:
        return f"<tecc.runtime.Module {self.entry_name} target={self.target!r}>"

    # argument checking -------------------------------------------------------------
    def _user_params(self) -> list:
        """Indices of the parameters a caller passes (bound scalars may be left out)."""
        return [i for i, a in enumerate(self.arg_specs) if not (a.kind == "scalar" and a.binding is not None)]

    def _signature(self) -> str:
        return ", ".join(self.arg_specs[i].name for i in self._user_params())

    def _prepare(self, args):
        """Check ``args`` and return the raw C arguments (and objects to keep alive)."""
        arrays, values = self._bind_args(args)
        raw = []
        for i, spec in enumerate(self.arg_specs):
            raw.append(arrays[i].ctypes.data if spec.kind == "buffer" else values[i])
        return raw, arrays

    def _bind_args(self, args):
        """Check ``args`` against the specs and bind the symbolic sizes.

        Returns ``({param index: array from _as_array}, {param index: int value})``;
        a subclass changes what an array is by overriding :meth:`_as_array` (it needs
        ``.ndim`` and ``.shape``).
        """
        specs = self.arg_specs
        user = self._user_params()
        if len(args) == len(specs):
            given = dict(enumerate(args))
        elif len(args) == len(user):
            given = dict(zip(user, args))
        else:
            raise RuntimeArgError(
                f"{self.entry_name}() takes {len(user)} arguments ({self._signature()}), "
                f"got {len(args)}")
        arrays = {}
        bound = {}  # symbolic dim name -> (value, where)
        for i, spec in enumerate(specs):
            if spec.kind != "buffer":
                continue
            arr = self._as_array(given[i], i, spec)
            arrays[i] = arr
            what = f"argument {i} ({spec.name!r})"
            if arr.ndim != len(spec.shape):
                raise RuntimeArgError(
                    f"{self.entry_name}: {what} must have {len(spec.shape)} dimensions "
                    f"{spec.describe_shape()}, got shape {arr.shape}")
            for d, (want, got) in enumerate(zip(spec.shape, arr.shape)):
                if isinstance(want, int):
                    if want != got:
                        raise RuntimeArgError(
                            f"{self.entry_name}: {what} must have shape {spec.describe_shape()}, "
                            f"got {arr.shape} (dimension {d} is {got}, expected {want})")
                elif isinstance(want, str):
                    if want in bound and bound[want][0] != got:
                        raise RuntimeArgError(
                            f"{self.entry_name}: {what} has dimension {d} = {got}, but the symbolic "
                            f"size {want!r} is {bound[want][0]} from {bound[want][1]}; every use of "
                            f"{want!r} must have the same size")
                    bound.setdefault(want, (int(got), f"{what} dimension {d}"))
        values = {}
        for i, spec in enumerate(specs):
            if spec.kind == "buffer":
                continue
            value = given.get(i)
            if value is not None:
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                    raise RuntimeArgError(
                        f"{self.entry_name}: argument {i} ({spec.name!r}) must be an int, "
                        f"got {type(value).__name__}")
                value = int(value)
                if spec.name in bound and bound[spec.name][0] != value:
                    raise RuntimeArgError(
                        f"{self.entry_name}: argument {i} ({spec.name!r}) is {value}, but "
                        f"{bound[spec.name][1]} says {bound[spec.name][0]}")
            elif spec.name in bound:
                value = bound[spec.name][0]
            else:  # pragma: no cover - every unbound scalar is a user parameter
                raise RuntimeArgError(f"{self.entry_name}: no value for {spec.name!r}")
            info = np.iinfo(_dt.to_numpy(spec.dtype))
            if not info.min <= value <= info.max:
                raise RuntimeArgError(
                    f"{self.entry_name}: {spec.name!r} = {value} does not fit {spec.dtype}")
            values[i] = value
        return arrays, values

    #: the device kind this module's functions run on (NDArray arguments must live there)
    DEVICE_TYPE = CPU
    DEVICE_NAME = "cpu"

    def _ndarray_data(self, value: NDArray, what: str, spec: ArgSpec):
        """The storage of an NDArray argument, after checking its device and dtype."""
        if value.device.device_type != self.DEVICE_TYPE:
            raise RuntimeArgError(
                f"{self.entry_name}: {what} is on {value.device}, but this function runs on "
                f"{self.DEVICE_NAME}(0); copy it with arr.copyto(tecc.{self.DEVICE_NAME}(0))")
        if value.dtype != spec.dtype:
            raise RuntimeArgError(
                f"{self.entry_name}: {what} must have dtype {spec.dtype}, got {value.dtype}")
        return value._data

    def _check_layout(self, arr, what: str, spec: ArgSpec) -> None:
        """Arguments must be C-contiguous, and writable where the function writes them."""
        if not arr.flags.c_contiguous:
            raise RuntimeArgError(
                f"{self.entry_name}: {what} is not C-contiguous (a transposed or sliced view?); "
                "pass a contiguous copy (np.ascontiguousarray) and, for an output, copy the result back")
        if isinstance(arr, np.ndarray) and spec.written and not arr.flags.writeable:
            raise RuntimeArgError(f"{self.entry_name}: {what} is written by the function but is read-only")

    def _as_array(self, value, i: int, spec: ArgSpec) -> np.ndarray:
        what = f"argument {i} ({spec.name!r})"
        if isinstance(value, NDArray):
            arr = self._ndarray_data(value, what, spec)
        elif isinstance(value, np.ndarray):
            arr = value
            if arr.dtype != _storage_numpy_dtype(spec.dtype) and arr.dtype.name != spec.dtype:
                raise RuntimeArgError(
                    f"{self.entry_name}: {what} must have dtype {spec.dtype}, got {arr.dtype.name}; "
                    f"convert it with .astype('{spec.dtype}')")
        else:
            raise RuntimeArgError(
                f"{self.entry_name}: {what} must be a tecc.nd.NDArray or a numpy array, "
                f"got {type(value).__name__}")
        self._check_layout(arr, what, spec)
        return arr

    def _invoke(self, raw) -> None:
        status = self._cfunc(*raw)
        if status != 0:
            msg = self._get_error()
            text = msg.decode("utf-8", "replace") if msg else "unknown error"
            raise KernelError(f"{self.entry_name} failed: {text}")

    # timing -------------------------------------------------------------------------
    def time_evaluator(self, func_name: str, dev: Device = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, **_unused):
        """A function that times ``func_name`` on its arguments (TVM semantics).

        Each of ``repeat`` measurements runs the function ``number`` times and
        records the mean seconds per run; when ``min_repeat_ms`` is set, ``number``
        grows until one measurement lasts at least that long.  Arguments are checked
        once, then the raw C function is timed.

        Returns
        -------
        callable
            ``evaluator(*args) -> ProfileResult`` (``.mean``, ``.median``, ``.std``,
            ``.min``, ``.max``, ``.results``).
        """
        self.get_function(func_name)
        if dev is not None and dev.device_type != CPU:
            raise TeccError(f"this module runs on cpu(0), not on {dev}")
        if number < 1 or repeat < 1:
            raise TeccError(f"time_evaluator needs number >= 1 and repeat >= 1, got {number}, {repeat}")

        def evaluator(*args) -> ProfileResult:
            raw, keep = self._prepare(args)
            cfunc = self._cfunc
            self._invoke(raw)  # warm-up, and surfaces kernel errors once
            results = timing.sample(timing.wall_clock(lambda: cfunc(*raw)), number, repeat, min_repeat_ms)
            del keep
            return ProfileResult(results)

        return evaluator

    # export --------------------------------------------------------------------------
    def metadata(self) -> dict:
        return {"format": _FORMAT, "version": _FORMAT_VERSION, "entry_name": self.entry_name,
                "target": self.target, "type_key": self.type_key,
                "arg_specs": [a.to_json() for a in self.arg_specs]}

    def export_library(self, path, *_unused_args, **_unused_kwargs) -> None:
        """Write the module to ONE file at ``path``.

        The file is the compiled shared library with a zip archive appended
        (``metadata.json`` and ``source.c``): loaders of shared libraries ignore the
        trailing archive and zip readers find it from the end.  Load it with
        :func:`tecc.runtime.load_module`; no compiler is needed then.
        """
        with open(self.lib_path, "rb") as f:
            lib_bytes = f.read()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("metadata.json", json.dumps(self.metadata(), indent=1))
            z.writestr("source.c", self.source)
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".tecc_export_", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(lib_bytes)
                f.write(buf.getvalue())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def load_module(path) -> Module:
    """Load a module written by :meth:`Module.export_library` (no compiling).

    Raises
    ------
    TeccError
        If ``path`` is missing or was not written by ``export_library``.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise TeccError(f"load_module: no file {path!r}")
    with open(path, "rb") as f:
        data = f.read()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            meta = json.loads(z.read("metadata.json"))
            if meta.get("type_key") == "cuda":
                # a CUDA module: cubin, CUDA source and host plan (runtime/cuda_module.py)
                entries = {name: z.read(name) for name in z.namelist()}
            else:
                entries = None
                source = z.read("source.c").decode("utf-8")
    except (zipfile.BadZipFile, KeyError, ValueError):
        raise TeccError(f"load_module: {path!r} was not written by Module.export_library") from None
    if entries is not None:
        from .cuda_module import load_cuda_module

        return load_cuda_module(entries, meta, path)
    if meta.get("format") != _FORMAT or meta.get("version") != _FORMAT_VERSION:
        raise TeccError(f"load_module: {path!r} has an unknown format {meta.get('format')!r} "
                        f"version {meta.get('version')!r}")
    # the library is the whole file (the appended zip is ignored by the loader); keep a
    # copy in the cache keyed by content so a later rewrite of ``path`` is harmless
    digest = hashlib.sha256(data).hexdigest()
    cache = config.cache_dir() / "modules"
    cache.mkdir(parents=True, exist_ok=True)
    lib_path = cache / f"{digest[:40]}.so"
    if not lib_path.exists():
        atomic_write(lib_path, data)
    specs = [ArgSpec.from_json(a) for a in meta["arg_specs"]]
    return Module(str(lib_path), meta["entry_name"], specs, source, meta["target"])
