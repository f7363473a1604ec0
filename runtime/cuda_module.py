"""CUDA modules: what ``tecc.build(..., target="cuda")`` returns.

A :class:`CUDAModule` holds the host function (the launch plan: workspaces, lets,
asserts and ``tecc.launch`` calls), the device functions, their CUDA source and the
cubin.  Calling it checks the arguments exactly like a CPU :class:`Module`, then:

- with a GPU, loads the cubin once and runs the plan, launching each kernel through
  cupy (arguments: tecc arrays on ``cuda(0)``, cupy arrays, any DLPack GPU tensor
  such as torch's, zero copy; numpy arrays are copied in and, if written, back);
- without one, runs the plan on the CPU with CUDA semantics
  (:func:`tecc.cpu_fallback.gpu_sim.run_kernels`) after a one-time warning, or
  raises when ``TECC_REQUIRE_GPU=1``.

``get_source()`` is the host plan as TIR text, ``imported_modules[0].get_source()``
the CUDA source (TVM's convention).  ``export_library`` writes one file (a zip with
the cubin, the CUDA source, the host plan and kernels as JSON, and metadata) that
:func:`tecc.runtime.load_module` loads back without NVRTC.
"""
from __future__ import annotations

import dataclasses
import enum
import io
import json
import math
import os
import tempfile
import warnings
import zipfile

import numpy as np

from .. import config
from ..cuda_codegen.nvrtc import KernelResources
from ..errors import RuntimeArgError, TeccError
from ..tir import dtype as _dt
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.arith import evaluate
from ..tir.functor import post_order_visit
from ..tir.printer import to_text
from . import timing
from .device import CUDA, Device, _cupy, cuda
from .module import _FORMAT, _FORMAT_VERSION, ArgSpec, KernelError, Module, ProfileResult
from .ndarray import NDArray, _storage_dtype

#: bumped when the layout of an exported CUDA module changes
CUDA_FORMAT_VERSION = 1

_THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
_warned_emulation = False


@dataclasses.dataclass
class KernelInfo:
    """What the launcher needs to know about one kernel.

    ``thread_extents`` maps a thread tag to its extent (a PrimExpr over the kernel's
    scalar parameters); ``dynamic_shared_bytes`` is non-zero when the kernel uses
    ``extern __shared__`` memory; ``param_align`` maps a parameter index to the
    alignment in bytes its pointer needs (vector loads).
    """

    name: str
    params: tuple
    thread_extents: dict
    shared_bytes: int = 0
    dynamic_shared_bytes: int = 0
    param_align: dict = dataclasses.field(default_factory=dict)

    @staticmethod
    def of(func: S.PrimFunc, printed: dict | None = None) -> "KernelInfo":
        extents = {}

        def visit(node):
            if isinstance(node, S.AttrStmt) and node.attr_key == "thread_extent":
                extents[node.node.thread_tag] = node.value

        post_order_visit(func.body, visit)
        printed = printed or {}
        return KernelInfo(func.name, tuple(func.params), extents, 0,
                          int(printed.get("dynamic_shared_bytes", 0)),
                          {int(k): int(v) for k, v in printed.get("param_align", {}).items()})

    def launch_dims(self, env: dict):
        """``(grid, block)`` 3-tuples for the kernel parameter values in ``env``."""
        dims = {}
        for tag in _THREAD_TAGS:
            ext = self.thread_extents.get(tag)
            value = 1 if ext is None else int(evaluate(ext, env))
            if value < 1:
                raise KernelError(f"kernel {self.name}: launch extent {tag} = {value} (from "
                                  f"{to_text(ext)}); it must be at least 1 (an empty input?)")
            dims[tag] = value
        grid = tuple(dims[f"blockIdx.{a}"] for a in "xyz")
        block = tuple(dims[f"threadIdx.{a}"] for a in "xyz")
        return grid, block


class CUDASourceModule:
    """The device part of a :class:`CUDAModule` (``mod.imported_modules[0]``)."""

    type_key = "cuda"

    def __init__(self, source: str, cubin: bytes, arch: str):
        self.source = source
        self.cubin = cubin
        self.arch = arch
        self.imported_modules = []

    def get_source(self, fmt: str = "") -> str:
        """The CUDA source (``fmt`` may be ``""``, ``"cu"`` or ``"cuda"``)."""
        if fmt not in ("", "cu", "cuda", "source"):
            raise TeccError(f"the device module has CUDA source only; get_source({fmt!r}) is not available")
        return self.source

    def __repr__(self) -> str:
        return f"<tecc.runtime.CUDASourceModule arch={self.arch}>"


class CUDAModule(Module):
    """A compiled CUDA module: a host launch plan plus kernels in one cubin.

    Parameters
    ----------
    host_func : PrimFunc
        The host function (``attrs["tecc.host"]``); its parameters are the module's.
    kernels : list of PrimFunc
        The device functions the plan launches.
    source : str
        Their CUDA source.
    cubin : bytes
        The NVRTC output for ``arch``.
    arch : str
        ``"sm_90"``...
    target : str
        The target string it was built for.
    printed : dict, optional
        Kernel name -> ``CodeGenCUDA.kernel_info`` entry (dynamic shared memory and
        parameter alignment).
    resources : dict, optional
        Kernel name -> :class:`~tecc.cuda_codegen.nvrtc.KernelResources`, ptxas's
        report for ``arch`` (registers, spills, stack, static shared memory); kept as
        ``kernel_resources`` and in exported files.
    """

    DEVICE_TYPE = CUDA
    DEVICE_NAME = "cuda"

    type_key = "cuda"

    def __init__(self, host_func: S.PrimFunc, kernels, source: str, cubin: bytes, arch: str,
                 target: str, printed: dict | None = None, resources: dict | None = None):
        from ..cpu_fallback import arg_specs_of

        # no C library: Module.__init__ is not called; the checking code is shared
        self.host_func = host_func
        self.kernels = list(kernels)
        self.entry_name = host_func.name
        self.cuda_source = source
        self.cubin = bytes(cubin)
        self.arch = arch
        self.target = str(target)
        printed = printed or {}
        self.kernel_infos = {k.name: KernelInfo.of(k, printed.get(k.name)) for k in self.kernels}
        #: kernel name -> KernelResources (ptxas, for ``arch``); empty if not known
        self.kernel_resources = dict(resources or {})
        self.arg_specs = _mark_written(arg_specs_of(host_func), host_func, self.kernels)
        self.source = to_text(host_func)
        self.imported_modules = [CUDASourceModule(source, self.cubin, arch)]
        self._gpu_module = None
        self._gpu_functions = {}

    @property
    def kernel_names(self) -> list:
        """The names of the module's kernels, in launch-plan order of definition."""
        return [k.name for k in self.kernels]

    def __repr__(self) -> str:
        return f"<tecc.runtime.CUDAModule {self.entry_name} target={self.target!r} kernels={len(self.kernels)}>"

    def get_source(self, fmt: str = "") -> str:
        """The host plan as TIR text (``fmt`` ``"cu"``/``"cuda"``: the CUDA source)."""
        if fmt in ("cu", "cuda"):
            return self.cuda_source
        if fmt not in ("", "tir", "host"):
            raise TeccError(f"get_source({fmt!r}): a CUDA module has '' (host plan) and 'cuda' sources")
        return self.source

    # arguments -----------------------------------------------------------------------
    def _on_gpu(self) -> bool:
        return cuda(0).exist

    def _as_array(self, value, i: int, spec: ArgSpec):
        what = f"argument {i} ({spec.name!r})"
        gpu = self._on_gpu()
        if isinstance(value, NDArray):
            arr = self._ndarray_data(value, what, spec)
        elif isinstance(value, np.ndarray):
            arr = value
        elif gpu and _is_cupy_array(value):
            arr = value
        elif hasattr(value, "__dlpack__"):
            try:
                arr = _cupy().from_dlpack(value) if gpu else np.from_dlpack(value)
            except Exception as err:  # noqa: BLE001 - the producer refused
                where = "GPU" if gpu else "CPU (there is no GPU here)"
                raise RuntimeArgError(
                    f"{self.entry_name}: {what} ({type(value).__name__}) cannot be shared with the "
                    f"{where} through DLPack: {err}") from None
        else:
            raise RuntimeArgError(
                f"{self.entry_name}: {what} must be a tecc.nd.NDArray on cuda(0), a cupy array, a "
                f"DLPack tensor or a numpy array, got {type(value).__name__}")
        if arr.dtype != _storage_dtype(spec.dtype) and arr.dtype.name != spec.dtype:
            raise RuntimeArgError(
                f"{self.entry_name}: {what} must have dtype {spec.dtype}, got {arr.dtype.name}; "
                f"convert it with .astype('{spec.dtype}')")
        self._check_layout(arr, what, spec)
        return arr

    def _prepare(self, args):
        """Check ``args``: ``((arrays, values), keep-alive)``."""
        arrays, values = self._bind_args(args)
        return (arrays, values), arrays

    def _invoke(self, bound) -> None:
        arrays, values = bound
        if self._on_gpu():
            self._run_gpu(arrays, values)
        else:
            self._run_emulated(arrays, values)

    def _host_args(self, arrays, values) -> list:
        return [arrays[i] if spec.kind == "buffer" else values[i] for i, spec in enumerate(self.arg_specs)]

    # execution without a GPU ---------------------------------------------------------------
    def _run_emulated(self, arrays, values) -> None:
        global _warned_emulation
        if config.require_gpu():
            raise TeccError(
                f"{self.entry_name}: there is no CUDA GPU here and TECC_REQUIRE_GPU=1 forbids the CPU "
                "emulation; run on a machine with a GPU or unset TECC_REQUIRE_GPU")
        try:
            from ..cpu_fallback import gpu_sim
        except ImportError as err:
            raise TeccError(f"{self.entry_name}: no GPU here and the CPU emulation of CUDA kernels is "
                            f"unavailable ({err})") from None
        if not _warned_emulation:
            _warned_emulation = True
            warnings.warn("no CUDA GPU found: CUDA modules run on tecc's CPU emulation of CUDA semantics "
                          "(correct results, not GPU speed); set TECC_REQUIRE_GPU=1 to make this an error",
                          RuntimeWarning, stacklevel=4)
        args = []
        for a in self._host_args(arrays, values):
            if isinstance(a, np.ndarray) or not hasattr(a, "shape"):
                args.append(a)
            else:  # pragma: no cover - a GPU array without a GPU cannot exist
                raise RuntimeArgError(f"{self.entry_name}: a GPU array was passed but there is no GPU")
        gpu_sim.run_kernels(self.host_func, {k.name: k for k in self.kernels}, args)

    # checking mode -------------------------------------------------------------------------
    def check(self, *args, max_blocks: int = 3, max_threads: int = None, max_findings: int = 5):
        """Run the module in checking mode on copies of ``args``; return the findings.

        Every launch interprets a few of its blocks (``max_blocks``: the first two, then
        spread out to the last; None for all) with CUDA semantics and reports
        out-of-bounds accesses, races on shared and on global memory (between threads
        with no barrier in between, and between blocks), and reads of shared memory no
        thread wrote -- each :class:`~tecc.cpu_fallback.gpu_check.Finding` names the
        kernel, block, thread, buffer, index and the TIR statement.  It runs on the CPU
        (with or without a GPU) and leaves ``args`` untouched; interpreting is slow, so
        check on small shapes.

        >>> for finding in mod.check(a, b, c):
        ...     print(finding)
        """
        from ..cpu_fallback.gpu_sim import check_kernels

        return check_kernels(self.host_func, {k.name: k for k in self.kernels}, self._host_copies(args),
                             max_threads_checked=max_threads, max_blocks=max_blocks,
                             max_findings=max_findings)

    def _host_copies(self, args) -> list:
        """The checked arguments as host arrays the caller does not see (copies)."""
        (arrays, values), _keep = self._prepare(args)
        host_args = []
        for a in self._host_args(arrays, values):
            if isinstance(a, np.ndarray):
                a = a.copy()
            elif hasattr(a, "shape"):   # a cupy array: its data, on the host
                a = a.get()
            host_args.append(a)
        return host_args

    def shared_memory_report(self, *args, max_blocks: int = 1) -> list:
        """Bank conflicts of every shared-memory load and store, counted on the CPU.

        Interprets ``max_blocks`` blocks of every launch on copies of ``args`` and
        rebuilds each warp-wide shared access: a list of
        :class:`~tecc.cpu_fallback.bank_conflicts.SharedAccessStat` (``conflict`` 1.0
        is conflict-free; 32.0 serializes the warp), the worst first.  Use it to see
        whether ``storage_align`` or a k-major tile removed a conflict, with no GPU.
        """
        from ..cpu_fallback.gpu_sim import shared_bank_report

        return shared_bank_report(self.host_func, {k.name: k for k in self.kernels},
                                  self._host_copies(args), max_blocks=max_blocks)

    # execution on a GPU ---------------------------------------------------------------------
    def _load(self):
        """Load the cubin once (needs the driver) and return cupy's module."""
        if self._gpu_module is None:
            cupy = _cupy()
            mod = cupy.cuda.function.Module()
            try:
                mod.load(self.cubin)
            except Exception as err:  # noqa: BLE001 - driver refused the binary
                raise TeccError(
                    f"{self.entry_name}: the GPU driver could not load the cubin built for {self.arch} "
                    f"({err}); rebuild for this GPU's architecture (target 'cuda' detects it, or "
                    f"'cuda -arch={cuda(0).arch}')") from None
            self._gpu_module = mod
        return self._gpu_module

    def _function(self, name: str):
        fn = self._gpu_functions.get(name)
        if fn is None:
            cupy = _cupy()
            fn = self._load().get_function(name)
            dyn = self.kernel_infos[name].dynamic_shared_bytes
            if dyn > 0:
                drv = cupy.cuda.driver
                drv.funcSetAttribute(fn.ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dyn)
            self._gpu_functions[name] = fn
        return fn

    def _device_arrays(self, arrays):
        """cupy views of the arguments (numpy ones are copied to the GPU)."""
        cupy = _cupy()
        out, copy_back = {}, []
        for i, arr in arrays.items():
            if isinstance(arr, np.ndarray):
                dev = cupy.asarray(arr)
                if self.arg_specs[i].written:
                    copy_back.append((arr, dev))
                out[i] = dev
            else:
                out[i] = arr
        return out, copy_back

    def _run_gpu(self, arrays, values, device_arrays=None) -> None:
        dev_arrays, copy_back = device_arrays or self._device_arrays(arrays)
        host = self.host_func
        env = {}
        for i, p in enumerate(host.params):
            buf = host.buffer_map.get(p)
            if buf is not None:
                env[p] = dev_arrays[i]
                env[buf.data] = dev_arrays[i]
            else:
                env[p] = values[i]
        self._exec(host.body, env)
        for arr, dev in copy_back:
            arr[...] = dev.get()

    def _exec(self, s, env) -> None:
        """Run one statement of the host plan."""
        if isinstance(s, S.SeqStmt):
            for x in s.seq:
                self._exec(x, env)
        elif isinstance(s, S.LetStmt):
            env[s.var] = evaluate(s.value, _scalars(env))
            self._exec(s.body, env)
        elif isinstance(s, S.AssertStmt):
            if not evaluate(s.condition, _scalars(env)):
                raise KernelError(f"{self.entry_name} failed: {s.message}")
            self._exec(s.body, env)
        elif isinstance(s, S.AttrStmt):
            self._exec(s.body, env)
        elif isinstance(s, S.IfThenElse):
            if evaluate(s.condition, _scalars(env)):
                self._exec(s.then_case, env)
            elif s.else_case is not None:
                self._exec(s.else_case, env)
        elif isinstance(s, S.For):
            lo = int(evaluate(s.min, _scalars(env)))
            for k in range(lo, lo + int(evaluate(s.extent, _scalars(env)))):
                env[s.loop_var] = k
                self._exec(s.body, env)
        elif isinstance(s, S.Allocate):
            buf = s.buffer
            size = 1
            for extent in buf.shape:
                size *= int(evaluate(extent, _scalars(env)))
            env[buf.data] = _cupy().empty((max(size, 1),), dtype=_storage_dtype(buf.dtype))
            self._exec(s.body, env)
            del env[buf.data]
        elif isinstance(s, S.Evaluate):
            v = s.value
            if isinstance(v, E.Call) and v.op == "tecc.launch":
                self._launch(v, env)
            elif not isinstance(v, (E.IntImm, E.FloatImm)):
                raise AssertionError(f"host plan statement not understood: {to_text(s)}")
        else:
            raise AssertionError(f"host plan statement not understood: {type(s).__name__}")

    def _launch(self, call, env) -> None:
        name = call.args[0].value
        info = self.kernel_infos[name]
        kernel_args = []
        kernel_env = {}
        for k, (param, arg) in enumerate(zip(info.params, call.args[1:])):
            if _dt.parse(param.dtype).is_handle:
                arr = env[arg]
                align = info.param_align.get(k, 1)
                if align > 1 and arr.data.ptr % align:
                    raise RuntimeArgError(
                        f"{self.entry_name}: kernel {name} loads parameter {param.name!r} with "
                        f"{align}-byte vector accesses, but its pointer is not {align}-byte aligned "
                        "(an offset view?); pass a freshly allocated array")
                kernel_args.append(arr)
            else:
                value = evaluate(arg, _scalars(env))
                kernel_env[param] = value
                kernel_args.append(_dt.to_numpy(param.dtype).type(value))
        grid, block = info.launch_dims(kernel_env)
        self._function(name)(grid, block, tuple(kernel_args), shared_mem=info.dynamic_shared_bytes)

    # timing -----------------------------------------------------------------------------------
    def time_evaluator(self, func_name: str, dev: Device = None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, flush_l2: bool = False, **_unused):
        """A function that times ``func_name`` on its arguments (TVM semantics).

        On a GPU the time comes from CUDA events around the launches (after one
        warm-up run); ``flush_l2=True`` overwrites a buffer twice the L2 size before
        every run (not timed), so each run starts with a cold cache.  Without a GPU
        the CPU emulation is timed with the wall clock.

        Returns
        -------
        callable
            ``evaluator(*args) -> ProfileResult`` (seconds per run).
        """
        self.get_function(func_name)
        if dev is not None and dev.device_type != CUDA:
            raise TeccError(f"this module runs on cuda(0), not on {dev}")
        if number < 1 or repeat < 1:
            raise TeccError(f"time_evaluator needs number >= 1 and repeat >= 1, got {number}, {repeat}")

        def evaluator(*args) -> ProfileResult:
            (arrays, values), _keep = self._prepare(args)
            if self._on_gpu():
                return self._time_gpu(arrays, values, number, repeat, min_repeat_ms, flush_l2)
            return self._time_wall(arrays, values, number, repeat, min_repeat_ms)

        return evaluator

    def _time_wall(self, arrays, values, number, repeat, min_repeat_ms) -> ProfileResult:
        self._run_emulated(arrays, values)  # warm-up: compiles the emulation once
        run_n = timing.wall_clock(lambda: self._run_emulated(arrays, values))
        return ProfileResult(timing.sample(run_n, number, repeat, min_repeat_ms))

    def _time_gpu(self, arrays, values, number, repeat, min_repeat_ms, flush_l2) -> ProfileResult:
        staged = self._device_arrays(arrays)
        staged = (staged[0], [])  # numpy outputs are copied back once, after timing
        self._run_gpu(arrays, values, staged)  # warm-up (loads the cubin)
        run_n = timing.cuda_events(lambda: self._run_gpu(arrays, values, staged), flush_l2)
        results = timing.sample(run_n, number, repeat, min_repeat_ms)
        # leave numpy outputs holding the result, as a plain call would
        self._run_gpu(arrays, values)
        return ProfileResult(results)

    # export ------------------------------------------------------------------------------------
    def metadata(self) -> dict:
        return {"format": _FORMAT, "version": _FORMAT_VERSION, "cuda_version": CUDA_FORMAT_VERSION,
                "type_key": "cuda", "entry_name": self.entry_name, "target": self.target, "arch": self.arch,
                "arg_specs": [a.to_json() for a in self.arg_specs],
                "kernels": {name: {"dynamic_shared_bytes": info.dynamic_shared_bytes,
                                   "param_align": {str(k): v for k, v in info.param_align.items()}}
                            for name, info in self.kernel_infos.items()},
                "resources": {name: r.to_json() for name, r in self.kernel_resources.items()}}

    def export_library(self, path, *_unused_args, **_unused_kwargs) -> None:
        """Write the module to ONE file at ``path`` (a zip: ``metadata.json``,
        ``kernels.cubin``, ``source.cu``, ``host.tir`` (readable) and ``ir.json``, the
        host plan and kernels).  Load it with :func:`tecc.runtime.load_module`; no
        NVRTC is needed then."""
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("metadata.json", json.dumps(self.metadata(), indent=1))
            z.writestr("kernels.cubin", self.cubin)
            z.writestr("source.cu", self.cuda_source)
            z.writestr("host.tir", self.source)
            z.writestr("ir.json", json.dumps(ir_to_json([self.host_func] + self.kernels)))
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".tecc_export_", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(buf.getvalue())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def load_cuda_module(entries: dict, meta: dict, path: str = "") -> CUDAModule:
    """A :class:`CUDAModule` from the files of an exported one (``load_module`` calls this)."""
    if meta.get("cuda_version") != CUDA_FORMAT_VERSION:
        raise TeccError(f"load_module: {path!r} is a CUDA module of format version "
                        f"{meta.get('cuda_version')!r}; this tecc reads version {CUDA_FORMAT_VERSION}")
    try:
        funcs = ir_from_json(json.loads(entries["ir.json"]))
        cubin = entries["kernels.cubin"]
        source = entries["source.cu"].decode("utf-8")
    except KeyError as err:
        raise TeccError(f"load_module: {path!r} lacks {err} (an incomplete CUDA module)") from None
    host, kernels = funcs[0], funcs[1:]
    printed = {name: {"dynamic_shared_bytes": k["dynamic_shared_bytes"], "param_align": k["param_align"]}
               for name, k in meta.get("kernels", {}).items()}
    resources = {name: KernelResources.from_json(r) for name, r in meta.get("resources", {}).items()}
    return CUDAModule(host, kernels, source, cubin, meta["arch"], meta["target"], printed, resources)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _is_cupy_array(value) -> bool:
    cupy = _cupy()
    return cupy is not None and isinstance(value, cupy.ndarray)


def _scalars(env) -> dict:
    """The scalar part of an execution environment (arrays left out)."""
    return {k: v for k, v in env.items() if isinstance(v, (int, float, bool, np.integer, np.floating))}


def _mark_written(specs, host: S.PrimFunc, kernels) -> list:
    """Host buffer specs with ``written`` set where some kernel stores to them."""
    by_name = {k.name: k for k in kernels}
    stored_params = {}
    for k in kernels:
        stored = set()

        def note(node, stored=stored):
            if isinstance(node, S.BufferStore):
                stored.add(node.buffer.data)

        post_order_visit(k.body, note)
        stored_params[k.name] = {i for i, p in enumerate(k.params)
                                 if p in k.buffer_map and (k.buffer_map[p].data in stored or p in stored)}
    written = set()

    def visit(node):
        if isinstance(node, E.Call) and node.op == "tecc.launch":
            name = node.args[0].value
            if name not in by_name:
                raise TeccError(f"the host plan launches {name!r}, which is not among the kernels "
                                f"{sorted(by_name)}")
            for i in stored_params[name]:
                arg = node.args[1 + i]
                if isinstance(arg, E.Var):
                    written.add(arg)

    post_order_visit(host.body, visit)
    out = []
    for p, spec in zip(host.params, specs):
        buf = host.buffer_map.get(p)
        if buf is not None and (p in written or buf.data in written) and not spec.written:
            spec = dataclasses.replace(spec, written=True)
        out.append(spec)
    return out


# ---------------------------------------------------------------------------------------------
# IR <-> JSON: every IR node is a dataclass; nodes are numbered in a table (children
# first) so shared objects (variables, buffers) stay shared after loading.
# ---------------------------------------------------------------------------------------------
def _node_classes() -> dict:
    classes = {}
    for mod in (E, S):
        for name in dir(mod):
            obj = getattr(mod, name)
            if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__:
                assert name not in classes, name
                classes[name] = obj
    return classes


def _enum_classes() -> dict:
    return {"ForKind": S.ForKind, "IterVarType": E.IterVarType}


def ir_to_json(roots: list) -> dict:
    """A JSON-able description of IR objects ``roots`` (PrimFuncs, statements, exprs)."""
    table, ids = [], {}

    def enc(v):
        if isinstance(v, enum.Enum):
            return {"enum": type(v).__name__, "name": v.name}
        if v is None or isinstance(v, (bool, int, float, str)):
            if isinstance(v, float) and not math.isfinite(v):
                return {"float": repr(v)}
            return v
        if isinstance(v, (np.integer, np.floating, np.bool_)):
            return enc(v.item())
        if isinstance(v, (tuple, list)):
            return {"tuple": [enc(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[enc(k), enc(x)] for k, x in v.items()]}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            key = id(v)
            if key not in ids:
                fields = {f.name: enc(getattr(v, f.name)) for f in dataclasses.fields(v)}
                ids[key] = len(table)
                table.append({"cls": type(v).__name__, "fields": fields})
            return {"ref": ids[key]}
        return {"text": str(v)}  # an attribute tecc does not need back (a Target, say)

    refs = [enc(r) for r in roots]
    return {"nodes": table, "roots": refs}


def ir_from_json(data: dict) -> list:
    """The IR objects described by :func:`ir_to_json`."""
    classes = _node_classes()
    enums = _enum_classes()
    objs = []

    def dec(v):
        if isinstance(v, dict):
            if "ref" in v:
                return objs[v["ref"]]
            if "tuple" in v:
                return tuple(dec(x) for x in v["tuple"])
            if "dict" in v:
                return {dec(k): dec(x) for k, x in v["dict"]}
            if "enum" in v:
                return enums[v["enum"]][v["name"]]
            if "float" in v:
                return float(v["float"])
            if "text" in v:
                return v["text"]
            raise TeccError(f"ir.json: unknown entry {sorted(v)}")
        return v

    for entry in data["nodes"]:
        cls = classes.get(entry["cls"])
        if cls is None:
            raise TeccError(f"ir.json: unknown IR node {entry['cls']!r} (written by another tecc version?)")
        objs.append(cls(**{k: dec(x) for k, x in entry["fields"].items()}))
    return [dec(r) for r in data["roots"]]
