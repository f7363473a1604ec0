"""Built modules: call compiled functions, time them, check them, export and load them.

:class:`Module` is what every module shares: named functions, each with a
:class:`~tecc.runtime.signature.Signature` that checks every call, TVM's
``time_evaluator``, ``check`` (when the compiler attached a checker) and
``export_library``.  :class:`CModule` is what ``tecc.build`` returns for a CPU
target: functions of a shared library called through ctypes::

    f = tecc.build(s, [A, B], target="llvm")
    f(a, b)                                   # NDArray or numpy arguments
    t = f.time_evaluator(f.entry_name, tecc.cpu(0), number=10)(a, b).mean
    f.export_library("add.so"); g = tecc.runtime.load_module("add.so")
    f.save("add.o"); tecc.contrib.cc.create_shared("add2.so", ["add.o"])
    h = tecc.runtime.load_module("add2.so")   # a library linked from a saved object

This package imports no part of the compiler: a module loaded from a file runs with
numpy (plus CuPy on a GPU) alone.  What needs the IR -- ``check`` -- is done by a
*checker* object the compiler hands to the module when it builds it; a module loaded
from a file has none.
"""
from __future__ import annotations

import ctypes
import io
import json
import os
import statistics
import threading
import zipfile

import numpy as np

from .. import config
from .symbols import c_symbol
from ..errors import FunctionNotFoundError, KernelError, RuntimeArgError, TeccError
from . import dtypes, packed_func, timing
from .cache import DiskCache, atomic_write, cache_key
from .device import CPU, Device
from .ndarray import NDArray
from .signature import Signature

_FORMAT = "tecc-module"
#: version 2: several functions per module, launch plans instead of IR
_FORMAT_VERSION = 2
#: the C global (a NUL-terminated JSON string) through which an object file written by
#: ``Module.save`` -- and any library linked from it -- carries the module's metadata
METADATA_SYMBOL = "tecc_module_metadata"

_loaded: dict = {}
_load_lock = threading.Lock()


def load_library(path: str) -> ctypes.CDLL:
    """Load a shared library once per process (by path)."""
    path = str(path)
    with _load_lock:
        lib = _loaded.get(path)
        if lib is None:
            config.openmp_environment()  # before libgomp loads with the first library
            try:
                lib = ctypes.CDLL(path)
            except OSError as err:
                raise TeccError(f"cannot load the compiled library {path}: {err}") from None
            _loaded[path] = lib
    return lib


def c_function(lib, name: str, signature: Signature):
    """The ctypes function ``name`` of ``lib`` with the argument types of ``signature``
    (buffers as pointers) and an ``int32`` status result."""
    fn = getattr(lib, c_symbol(name))
    fn.restype = ctypes.c_int32
    fn.argtypes = [ctypes.c_void_p if a.kind == "buffer" or a.dtype == "handle" else dtypes.ctype(a.dtype)
                   for a in signature.args]
    return fn


def last_error(lib) -> str:
    """The message a library's function left with ``tecc_get_last_error``."""
    get = lib.tecc_get_last_error
    get.restype = ctypes.c_char_p
    get.argtypes = []
    msg = get()
    return msg.decode("utf-8", "replace") if msg else "unknown error"


def raise_failure(lib, name: str, what: str = ""):
    """Raise the error of a compiled function ``name`` that returned non-zero: the
    exception of a packed function it called (the user's own, with a note), a
    missing packed function, or the message the library left."""
    err = packed_func.take_error()
    if isinstance(err, FunctionNotFoundError):
        raise FunctionNotFoundError(f"{name}: {err}") from None
    if err is not None:
        if hasattr(err, "add_note"):
            err.add_note(f"(the packed function was called by the compiled function {name!r})")
        raise err
    raise KernelError(f"{what or name} failed: {last_error(lib)}")


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

    def _repr_html_(self) -> str:
        from .. import display  # noqa: PLC0415

        return display.table_html(["mean ms", "median ms", "min ms", "max ms", "std ms", "repeats"],
                                  [[self.mean * 1e3, self.median * 1e3, self.min * 1e3, self.max * 1e3,
                                    self.std * 1e3, len(self.results)]])


class Function:
    """A callable function of a :class:`Module` (``mod[name]``)."""

    def __init__(self, module: "Module", name: str):
        self.module = module
        self.name = name

    def __call__(self, *args):
        self.module._call(self.name, args)

    def check(self, *args, **options) -> list:
        """:meth:`Module.check` of this function."""
        return self.module._check(self.name, args, options)

    def __repr__(self) -> str:
        return f"<tecc.runtime.Function {self.name} of {self.module}>"


class Module:
    """A compiled module: named functions, each checked against its signature.

    Parameters
    ----------
    signatures : dict
        Function name -> :class:`Signature`, the entry function first.
    target : str
        The target string the module was built for.
    checker : object, optional
        Given by the compiler: ``checker.check(name, arrays, values, **options)``
        returns the findings of a checking run (see :meth:`check`).
    """

    type_key = ""
    #: the device kind this module's functions run on (NDArray arguments must live there)
    DEVICE_TYPE = CPU
    DEVICE_NAME = "cpu"

    def __init__(self, signatures: dict, target: str, checker=None):
        if not signatures:
            raise TeccError("a module needs at least one function")
        self.signatures = dict(signatures)
        self.target = str(target)
        self.checker = checker
        self.imported_modules = []

    # functions ----------------------------------------------------------------------
    @property
    def entry_name(self) -> str:
        """The name of the first function (what ``mod(*args)`` calls)."""
        return next(iter(self.signatures))

    @property
    def function_names(self) -> list:
        return list(self.signatures)

    @property
    def entry_func(self) -> Function:
        return Function(self, self.entry_name)

    def get_function(self, name: str) -> Function:
        """The function ``name`` of this module."""
        self.signature(name)
        return Function(self, name)

    def __getitem__(self, name: str) -> Function:
        return self.get_function(name)

    def __call__(self, *args):
        self._call(self.entry_name, args)

    def signature(self, name: str) -> Signature:
        sig = self.signatures.get(name)
        if sig is None:
            raise FunctionNotFoundError(
                f"module has no function {name!r}; its functions are {', '.join(map(repr, self.signatures))}")
        return sig

    def __repr__(self) -> str:
        return f"<tecc.runtime.{type(self).__name__} {', '.join(self.signatures)} target={self.target!r}>"

    # display -------------------------------------------------------------------------
    def describe(self) -> str:
        """What the module holds, as text: its functions with their parameters (and,
        for a CUDA module, its kernels with launch shapes and ptxas's resources)."""
        from .. import display  # noqa: PLC0415

        lines = [repr(self), display.table_text(*self._function_table())]
        kernels = self._kernel_table()
        if kernels is not None:
            lines.append(display.table_text(*kernels))
        return "\n\n".join(lines)

    def _function_table(self):
        rows = []
        for name, sig in self.signatures.items():
            params = ", ".join(f"{a.name}: {a.dtype}{a.describe_shape() if a.kind == 'buffer' else ''}"
                               + (" (written)" if a.written else "") for a in sig.args)
            rows.append([name, params])
        return ["function", "parameters"], rows

    def _kernel_table(self):
        """``(columns, rows)`` of the device kernels, or None for a host module."""
        return None

    def _source_language(self) -> str:
        return "c"

    def _repr_html_(self) -> str:
        from .. import display  # noqa: PLC0415

        parts = [display.heading_html(repr(self)), display.table_html(*self._function_table())]
        kernels = self._kernel_table()
        if kernels is not None:
            parts.append(display.table_html(*kernels))
        try:
            source = self._display_source()
        except Exception:  # noqa: BLE001 -- a module without readable source shows the rest
            source = None
        if source:
            parts.append(display.details_html(f"source ({len(source.splitlines())} lines)",
                                              display.code_html(source, self._source_language())))
        return "".join(parts)

    def _display_source(self) -> str:
        return self.get_source()

    # arguments ----------------------------------------------------------------------
    def _ndarray_data(self, value: NDArray, what: str, spec, name: str):
        """The storage of an NDArray argument, after checking its device and dtype."""
        if value.device.device_type != self.DEVICE_TYPE:
            raise RuntimeArgError(
                f"{name}: {what} is on {value.device}, but this function runs on "
                f"{self.DEVICE_NAME}(0); copy it with arr.copyto(tecc.{self.DEVICE_NAME}(0))")
        if value.dtype != spec.dtype:
            raise RuntimeArgError(f"{name}: {what} must have dtype {spec.dtype}, got {value.dtype}")
        return value._data

    def _bind(self, name: str, args):
        """``(signature, arrays, values)`` of a checked call."""
        sig = self.signature(name)

        def as_array(value, i, spec):
            arr = self._as_array(value, i, spec, sig)
            sig.check_array(arr, i, spec)
            return arr

        arrays, values = sig.bind(args, as_array)
        return sig, arrays, values

    def _as_array(self, value, i: int, spec, sig: Signature):
        what = f"argument {i} ({spec.name!r})"
        if isinstance(value, NDArray):
            return self._ndarray_data(value, what, spec, sig.name)
        if isinstance(value, np.ndarray):
            return value
        raise RuntimeArgError(
            f"{sig.name}: {what} must be a tecc.nd.NDArray or a numpy array, got {type(value).__name__}")

    # calling, timing, checking ---------------------------------------------------------
    def _call(self, name: str, args) -> None:  # pragma: no cover - every module overrides it
        raise NotImplementedError

    def _runner(self, name: str, args, options: dict):  # pragma: no cover - overridden
        """``(run_n, finish)``: a runner for :mod:`.timing` (after one warm-up run) and
        what to do once the timing is over."""
        raise NotImplementedError

    def time_evaluator(self, func_name: str, dev: Device = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, **options):
        """A function that times ``func_name`` on its arguments (TVM semantics).

        Each of ``repeat`` measurements runs the function ``number`` times and
        records the mean seconds per run; when ``min_repeat_ms`` is set, ``number``
        grows until one measurement lasts at least that long.  Arguments are checked
        once, then the compiled function is timed after one warm-up run.

        Returns
        -------
        callable
            ``evaluator(*args) -> ProfileResult`` (``.mean``, ``.median``, ``.std``,
            ``.min``, ``.max``, ``.results``).
        """
        self.signature(func_name)
        if dev is not None and dev.device_type != self.DEVICE_TYPE:
            raise TeccError(f"this module runs on {self.DEVICE_NAME}(0), not on {dev}")
        if number < 1 or repeat < 1:
            raise TeccError(f"time_evaluator needs number >= 1 and repeat >= 1, got {number}, {repeat}")

        def evaluator(*args) -> ProfileResult:
            run_n, finish = self._runner(func_name, args, options)
            results = timing.sample(run_n, number, repeat, min_repeat_ms)
            finish()
            return ProfileResult(results)

        return evaluator

    def check(self, *args, **options) -> list:
        """Run the entry function in checking mode on copies of ``args``; return the
        findings (an empty list when nothing is wrong).

        A CPU module reports out-of-bounds accesses and outputs passed that share
        memory with another argument; a CUDA module also races and uninitialized
        shared-memory reads (see ``CUDAModule.check``).  Only modules returned by
        ``tecc.build`` can check: a module loaded from a file has no IR to
        interpret.
        """
        return self._check(self.entry_name, args, options)

    def _check(self, name: str, args, options: dict) -> list:
        if self.checker is None:
            raise TeccError(f"{name}: this module has no checker (check needs the function's IR, which "
                            "exported files do not carry); call check on the module tecc.build returned")
        _sig, arrays, values = self._bind(name, args)
        copies = {i: _host_copy(a) for i, a in arrays.items()}
        return self.checker.check(name, copies, values, arrays=arrays, **options)

    def import_module(self, module) -> None:
        """Add ``module`` to :attr:`imported_modules` (TVM's ``import_module``)."""
        self.imported_modules.append(module)

    # export --------------------------------------------------------------------------
    def metadata(self) -> dict:
        return {"format": _FORMAT, "version": _FORMAT_VERSION, "type_key": self.type_key,
                "target": self.target, "functions": [s.to_json() for s in self.signatures.values()]}

    def export_library(self, path, *_unused_args, **_unused_kwargs) -> None:
        """Write the module to ONE file at ``path``; :func:`load_module` reads it back
        with no compiler."""
        self._write_export(path, self._artifact())

    @staticmethod
    def _write_export(path, data: bytes, what: str = "export_library") -> None:
        """Write an exported module's bytes to ``path`` (whose folder must exist)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise TeccError(f"{what}: cannot write {path!r}: the folder {directory!r} does not exist; "
                            "create it first (os.makedirs)")
        atomic_write(path, data)

    #: the formats :meth:`save` writes: format -> what the file holds (aliases map to one)
    SAVE_FORMATS: dict = {}
    SAVE_ALIASES: dict = {}

    def save(self, file_name, fmt: str = "") -> None:
        """Write the module to ``file_name`` in the format its extension names (or
        ``fmt``); :attr:`SAVE_FORMATS` lists them for each kind of module.

        Raises
        ------
        TeccError
            For a format this module cannot write, or a folder that does not exist.
        """
        path = os.fspath(file_name)
        kind = save_format(path, fmt, self.SAVE_ALIASES)
        if kind not in self.SAVE_FORMATS:
            raise TeccError(f"save({path!r}): {type(self).__name__} cannot write format {kind or '(none)'!r}; "
                            f"{format_list(self.SAVE_FORMATS)}{self._save_hint(kind)}")
        self._write_export(path, self._save_bytes(kind, path), "save")

    def _save_hint(self, kind: str) -> str:
        """A sentence added to the error of an unknown save format."""
        return ""

    def _save_bytes(self, kind: str, path: str) -> bytes:  # pragma: no cover - overridden
        raise NotImplementedError

    def _metadata_object(self, object_compiler, extra_meta: dict, path: str) -> bytes:
        """An object file: the module's C code with :data:`METADATA_SYMBOL` holding
        its metadata (plus ``extra_meta``), compiled by the compiler's
        ``object_compiler``."""
        if object_compiler is None:
            raise TeccError(
                f"save({path!r}): this {type(self).__name__} was loaded from a file, and the runtime compiles "
                "nothing: an object file needs the C compiler that tecc.build uses; build the module again "
                "with tecc.build and save that, or save it as a ready library with save('x.so') / "
                "export_library")
        obj = object_compiler(metadata_c(dict(self.metadata(), **extra_meta)))
        with open(obj, "rb") as f:
            return f.read()

    def _artifact(self) -> bytes:  # pragma: no cover - every module overrides it
        raise NotImplementedError


def save_format(path: str, fmt: str, aliases: dict) -> str:
    """The format of a :meth:`Module.save`: ``fmt`` when given, else the file's
    extension, lower case, through ``aliases``."""
    kind = str(fmt or os.path.splitext(path)[1]).lower().lstrip(".")
    return aliases.get(kind, kind)


def format_list(formats: dict) -> str:
    """``formats`` (extension -> description) as one sentence for an error."""
    return "the formats are " + "; ".join(f"'.{k}': {v}" for k, v in formats.items())


def metadata_c(meta: dict) -> str:
    """C that defines :data:`METADATA_SYMBOL` as the JSON of ``meta`` (a string
    constant exported from the library, kept by the linker)."""
    text = json.dumps(meta, sort_keys=False, ensure_ascii=True)
    lines = []
    for start in range(0, len(text), 100):
        chunk = text[start:start + 100]
        esc = chunk.replace("\\", "\\\\").replace('"', '\\"').replace("?", "\\?")
        lines.append(f'    "{esc}"')
    return ("\n\n// the module's metadata: tecc.runtime.load_module reads it from a library linked from "
            "this code\n"
            f'__attribute__((visibility("default"), used)) const char {METADATA_SYMBOL}[] =\n'
            + "\n".join(lines) + ";\n")


def _host_copy(arr):
    """A host (numpy) copy of an array argument."""
    if isinstance(arr, np.ndarray):
        return arr.copy()
    return arr.get()  # cupy: device to host


def zip_bytes(entries: dict) -> bytes:
    """A zip archive holding ``entries`` (name -> str or bytes)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


class CModule(Module):
    """A compiled CPU module: functions of one shared library.

    Parameters
    ----------
    lib_path : str
        The shared library; each function returns 0, or -1 with a message for
        ``tecc_get_last_error``.
    signatures : dict
        Function name -> :class:`Signature`.
    source : str
        The C source (``get_source()``).
    target : str
        The target string it was built for.
    checker : object, optional
        See :class:`Module`.
    asm : callable, optional
        Given by the compiler: returns the assembly of ``source`` (``get_source("asm")``).
    object_compiler : callable, optional
        Given by the compiler: ``object_compiler(extra_c) -> path`` compiles ``source``
        followed by ``extra_c`` into a position-independent object file with the
        module's flags (``save("x.o")``).  Modules loaded from files have none; the
        attribute of the same name may also be set after construction.
    """

    type_key = "c"
    #: get_source formats: the C source, and the assembly the C compiler makes of it
    SOURCE_FORMATS = ("", "c", "cc", "source")
    ASM_FORMATS = ("asm", "s")
    SAVE_FORMATS = {
        "o": "an object file of the C source and the module's metadata, compiled with the module's flags "
             "(link it with tecc.contrib.cc.create_shared, load the library with load_module)",
        "c": "the C source, with the metadata as a C global",
        "cc": "the same C source",
        "s": "the C compiler's assembly",
        "so": "the shared library (what export_library writes)",
    }
    SAVE_ALIASES = {"obj": "o", "asm": "s"}

    def __init__(self, lib_path: str, signatures: dict, source: str, target: str, checker=None, asm=None,
                 object_compiler=None):
        super().__init__(signatures, target, checker)
        self.lib_path = str(lib_path)
        self.source = source
        self._asm = asm
        self.object_compiler = object_compiler
        self._lib = load_library(self.lib_path)
        packed_func.install(self._lib)
        self._cfuncs = {name: c_function(self._lib, name, sig) for name, sig in self.signatures.items()}

    def get_source(self, fmt: str = "") -> str:
        """The module's code as text (TVM's ``get_source``).

        Parameters
        ----------
        fmt : str
            ``""``, ``"c"`` or ``"cc"``: the generated C source; ``"asm"`` (or
            ``"s"``): the assembly the system C compiler makes of it, with the
            module's flags (compiled on first request; a module loaded from a file
            has only its C source).
        """
        fmt = str(fmt).lower()
        if fmt in self.SOURCE_FORMATS:
            return self.source
        if fmt in self.ASM_FORMATS:
            if self._asm is None:
                raise TeccError(
                    f"get_source({fmt!r}): this CPU module was loaded from a file, which holds its C source and "
                    "library but no assembly; use get_source('c'), or build it again with tecc.build to get "
                    "the assembly")
            return self._asm()
        raise TeccError(
            f"get_source({fmt!r}): a CPU module has the formats '' / 'c' (the C source) and 'asm' (the C "
            "compiler's assembly); tecc compiles C with the system C compiler, so there is no LLVM IR ('ll') "
            "or bitcode")

    def _raw(self, name: str, args):
        sig, arrays, values = self._bind(name, args)
        raw = [arrays[i].ctypes.data if spec.kind == "buffer" else values[i] for i, spec in enumerate(sig.args)]
        return raw, arrays

    def _invoke(self, name: str, raw) -> None:
        if self._cfuncs[name](*raw) != 0:
            raise_failure(self._lib, name)

    def _call(self, name: str, args) -> None:
        raw, keep = self._raw(name, args)
        self._invoke(name, raw)
        del keep

    def _runner(self, name: str, args, options: dict):
        raw, keep = self._raw(name, args)
        cfunc = self._cfuncs[name]
        self._invoke(name, raw)  # warm-up; surfaces errors with their message once

        def finish():
            keep.clear()  # the arrays behind the raw addresses stay alive until now
            packed_func.take_error()  # timed runs do not check for errors: forget any

        return timing.wall_clock(lambda: cfunc(*raw)), finish

    def save(self, file_name, fmt: str = "") -> None:
        """Write the module to ``file_name`` (TVM's ``save``).

        Parameters
        ----------
        file_name : str
            The file; its extension names the format unless ``fmt`` does: ``.o``
            an object file (position-independent, compiled from the C source with
            the module's flags, carrying the module's metadata, so that a library
            linked from it by ``tecc.contrib.cc.create_shared`` loads with
            :func:`load_module`); ``.c``/``.cc`` the C source with that metadata;
            ``.s`` the assembly; ``.so`` the shared library (as
            :meth:`export_library`).
        fmt : str, optional
            The format, overriding the extension (``"o"``, ``"c"``, ``"s"``, ``"so"``).

        Raises
        ------
        TeccError
            For another format, or ``.o``/``.s`` of a module loaded from a file
            (the runtime has no compiler).
        """
        super().save(file_name, fmt)

    def _save_hint(self, kind: str) -> str:
        if kind in ("ll", "bc"):
            return "; tecc compiles C with the system C compiler, so there is no LLVM IR or bitcode"
        return ""

    def _save_bytes(self, kind: str, path: str) -> bytes:
        if kind == "o":
            return self._metadata_object(self.object_compiler, {"source": self.source}, path)
        if kind in ("c", "cc"):
            return (self.source + metadata_c(dict(self.metadata(), source=self.source))).encode("utf-8")
        if kind == "s":
            if self._asm is None:
                raise TeccError(f"save({path!r}): this CPU module was loaded from a file and has no assembly; "
                                "save('x.c') holds its C source, or build it again with tecc.build")
            return self._asm().encode("utf-8")
        return self._artifact()

    def _artifact(self) -> bytes:
        """The shared library with a zip archive appended (``metadata.json`` and
        ``source.c``): loaders of shared libraries ignore the trailing archive, zip
        readers find it from the end."""
        with open(self.lib_path, "rb") as f:
            lib_bytes = f.read()
        return lib_bytes + zip_bytes({"metadata.json": json.dumps(self.metadata(), indent=1),
                                      "source.c": self.source})


_modules_cache = DiskCache("modules")


def _cached_file(data: bytes, suffix: str) -> str:
    """A content-addressed copy of ``data`` in the cache (a library must be a file to
    load, and the user's file may be rewritten later)."""
    key = cache_key(data)
    path = _modules_cache.path(key[:40], suffix)
    if not path.exists():
        _modules_cache.store(key[:40], data, suffix)
    return str(path)


def load_module(path, cache: bool = True) -> Module:
    """Load a module from a file, with no compiling.

    The file may be:

    - one written by :meth:`Module.export_library` (or ``save("x.so")``);
    - a model artifact written by ``GraphExecutorFactoryModule.export_library``,
      which loads as a :class:`~tecc.runtime.graph_executor.GraphExecutorFactoryModule`;
    - a shared library linked from objects written by ``Module.save("x.o")``
      (``tecc.contrib.cc.create_shared``), or compiled from ``save("x.c")``: its
      functions are found through the metadata the object carries;
    - a CUDA device module, ``.cubin``, ``.ptx`` or ``.cu``, written by
      ``mod.imported_modules[0].save``: a
      :class:`~tecc.runtime.cuda_module.CUDASourceModule` to hand to the host
      module's ``import_module``.

    Parameters
    ----------
    path : str
    cache : bool
        Load the library from a content-addressed copy in tecc's cache (the default:
        the file at ``path`` may be rewritten or removed later).  With False it is
        loaded from ``path`` itself (a CUDA module's CPU emulation from a file beside
        it, written on first use): for short-lived files that nothing rewrites, the
        tuner's candidates, which would otherwise fill the cache.  A process keeps
        the library it loaded from a path: a file rewritten under the same name
        needs the default.

    Raises
    ------
    TeccError
        If ``path`` is missing or is none of the above.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise TeccError(f"load_module: no file {path!r}")
    from .cuda_module import DEVICE_FILE_FORMATS, load_device_module

    if os.path.splitext(path)[1].lower().lstrip(".") in DEVICE_FILE_FORMATS:
        return load_device_module(path)
    with open(path, "rb") as f:
        data = f.read()
    from . import artifact

    if artifact.is_artifact(data):  # a whole model: graph, kernels, params
        return artifact.load_artifact(path, cache, data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            meta = json.loads(z.read("metadata.json"))
            entries = {name: z.read(name) for name in z.namelist()}
    except (zipfile.BadZipFile, KeyError, ValueError):
        if data[:4] == _ELF_MAGIC:  # a plain shared library (or an object file)
            return _load_plain_library(path, data, cache)
        raise TeccError(f"load_module: {path!r} was not written by Module.export_library, and is not a shared "
                        "library linked from a module's save('x.o')") from None
    _check_version(meta, path)
    signatures = {d["name"]: Signature.from_json(d) for d in meta["functions"]}
    if meta.get("type_key") == "cuda":
        from .cuda_module import load_cuda_module

        return load_cuda_module(entries, meta, signatures, path, cache)
    # the library is the whole file (the appended zip is ignored by the loader)
    lib_path = _cached_file(data, "so") if cache else path
    return CModule(lib_path, signatures, entries["source.c"].decode("utf-8"), meta["target"])


_ELF_MAGIC = b"\x7fELF"
#: ELF file types (``e_type``): a relocatable object, a shared library
_ET_REL, _ET_DYN = 1, 3


def _check_version(meta: dict, path: str) -> None:
    if meta.get("format") != _FORMAT or meta.get("version") != _FORMAT_VERSION:
        raise TeccError(f"load_module: {path!r} has an unknown format {meta.get('format')!r} "
                        f"version {meta.get('version')!r}; this tecc reads version {_FORMAT_VERSION} "
                        "(export it again with this tecc)")


def _load_plain_library(path: str, data: bytes, cache: bool) -> Module:
    """The module of a shared library that holds :data:`METADATA_SYMBOL` (linked from
    an object ``Module.save`` wrote)."""
    e_type = int.from_bytes(data[16:18], "little" if data[5:6] == b"\x01" else "big") if len(data) > 18 else 0
    if e_type == _ET_REL:
        raise TeccError(f"load_module: {path!r} is an object file, which cannot be loaded; link it into a shared "
                        f"library first: tecc.contrib.cc.create_shared('lib.so', [{path!r}])")
    if e_type != _ET_DYN or METADATA_SYMBOL.encode() not in data:
        raise TeccError(
            f"load_module: {path!r} is a shared library without tecc's module metadata (the symbol "
            f"{METADATA_SYMBOL!r}), so it was not made from a tecc module's save('x.o') or save('x.c'); load "
            "a file written by export_library, or link the object a tecc module saved "
            "(tecc.contrib.cc.create_shared)")
    lib_path = _cached_file(data, "so") if cache else path
    lib = load_library(lib_path)
    try:
        text = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, METADATA_SYMBOL)))
        meta = json.loads(text)
    except ValueError:
        raise TeccError(f"load_module: {path!r} names {METADATA_SYMBOL!r} but it holds no readable metadata; "
                        "link the object again from a module's save('x.o')") from None
    _check_version(meta, path)
    signatures = {d["name"]: Signature.from_json(d) for d in meta["functions"]}
    if meta.get("type_key") == "cuda":
        from .cuda_module import load_cuda_host_module

        return load_cuda_host_module(meta, signatures, lib_path, path)
    missing = [name for name in signatures if not hasattr(lib, name)]
    if missing:
        raise TeccError(f"load_module: {path!r} lacks the function {missing[0]!r} its metadata names; link the "
                        "object a module's save wrote, unchanged")
    return CModule(lib_path, signatures, meta.get("source", ""), meta["target"])
