"""CUDA modules: what ``tecc.build(..., target="cuda")`` returns.

A :class:`CUDAModule` holds, per function, a :class:`~tecc.runtime.launch.LaunchPlan`
(the host side: workspaces and kernel launches with their grid and block
formulas), and for all of them one cubin with the kernels, the CUDA source, a
:class:`~tecc.runtime.launch.KernelSpec` per kernel and ptxas's resource report.
Calling it checks the arguments exactly like a CPU module, then runs the plan
through a launcher:

- with a GPU, the CuPy launcher: the cubin is loaded once and each kernel launched
  through cupy (arguments: tecc arrays on ``cuda(0)``, cupy arrays, any DLPack GPU
  tensor such as torch's, zero copy; numpy arrays are copied in and, if written,
  back);
- without one, the GPU-semantics emulator: the same kernels compiled to C that runs
  every block and thread on the CPU with CUDA semantics, after a one-time warning
  (``TECC_REQUIRE_GPU=1`` makes that an error).  The emulator's library comes with
  the module (built on first use, or read from an exported file).

``get_source()`` is the plans as text, ``imported_modules[0].get_source()`` the CUDA
source (TVM's convention).  ``export_library`` writes one file (a zip: metadata and
plans as JSON, the cubin, the CUDA source and the emulator's library) that
:func:`tecc.runtime.load_module` loads back with numpy and, on a GPU, CuPy alone.

TVM's two-file flow works too: ``mod.save("host.o")`` writes the host side (the
plans and kernel specs as metadata, with the emulator's C code of the kernels),
``mod.imported_modules[0].save("dev.ptx")`` (or ``.cubin``, ``.cu``) the device
code; a library linked from the object loads as a host module that runs on the
emulator as it is, and on a GPU once ``host.import_module(load_module("dev.ptx"))``
gave it the device code.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import struct
import warnings

import numpy as np

from .. import config
from ..errors import KernelError, RuntimeArgError, TeccError
from . import dtypes, timing
from .device import CUDA, _cupy, cuda
from .launch import KernelSpec, Launch, LaunchPlan, _all_steps, evaluate, run_plan
from .cache import atomic_write
from .module import Module, _cached_file, format_list, last_error, load_library, save_format, zip_bytes
from .ndarray import NDArray

_warned_emulation = False


@dataclasses.dataclass(frozen=True)
class KernelResources:
    """What ptxas settled on for one kernel (``--ptxas-options=-v``).

    ``registers`` per thread; ``spill_store_bytes``/``spill_load_bytes``: register
    spills to local memory (non-zero means the kernel holds more live values than fit
    the registers it may use -- usually a thread tile too large for its block size);
    ``stack_bytes``: the stack frame (local arrays that could not become registers,
    and spills); ``static_shared_bytes``: ``__shared__`` arrays (dynamic shared memory
    is not included); ``barriers``: named barriers used.
    """

    registers: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_bytes: int = 0
    static_shared_bytes: int = 0
    barriers: int = 0

    @property
    def spills(self) -> bool:
        return bool(self.spill_store_bytes or self.spill_load_bytes)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "KernelResources":
        return cls(**{f.name: int(d.get(f.name, 0)) for f in dataclasses.fields(cls)})


#: get_source formats of CUDA code: the CUDA C++ source, and NVRTC's PTX of it
CUDA_FORMATS = ("cu", "cuda")
PTX_FORMATS = ("asm", "ptx", "s")


def _ptx_text(ptx, fmt: str) -> str:
    """The PTX from the compiler's provider, or a clear error where there is none."""
    if ptx is None:
        raise TeccError(
            f"get_source({fmt!r}): this CUDA module was loaded from a file, which holds its device code as a "
            "cubin (imported_modules[0].cubin) or CUDA source but no PTX; use get_source('cuda') where it has the "
            "source, or build it again with tecc.build to get the PTX")
    return ptx()


#: the device-code files ``load_module`` reads into a :class:`CUDASourceModule`
DEVICE_FILE_FORMATS = ("cubin", "ptx", "cu")


class CUDASourceModule:
    """The device part of a :class:`CUDAModule` (``mod.imported_modules[0]``).

    Parameters
    ----------
    source : str or None
        The CUDA source (None in a module loaded from a ``.ptx`` or ``.cubin``).
    cubin : bytes or None
        The binary for ``arch`` (None in a module loaded from a ``.ptx`` or ``.cu``).
    arch : str
        ``"sm_90"``..., or ``"unknown"``.
    ptx : callable, optional
        Returns the PTX of the source for ``arch``: given by the compiler (NVRTC),
        or the text of a loaded ``.ptx`` file.
    """

    type_key = "cuda"
    SAVE_FORMATS = {"cu": "the CUDA source", "ptx": "NVRTC's PTX", "cubin": "the binary for the module's arch"}
    SAVE_ALIASES = {"cuda": "cu", "s": "ptx", "asm": "ptx"}

    def __init__(self, source, cubin, arch: str, ptx=None):
        self.source = source
        self.cubin = None if cubin is None else bytes(cubin)
        self.arch = arch
        self._ptx = ptx
        self.imported_modules = []

    def get_source(self, fmt: str = "") -> str:
        """The device code as text: ``""``, ``"cu"`` or ``"cuda"``: the CUDA source
        (the PTX of a module loaded from a ``.ptx``); ``"asm"`` or ``"ptx"``: NVRTC's
        PTX of it for :attr:`arch`; ``"sass"``: the cubin's machine instructions
        (:mod:`tecc.runtime.sass`: NVIDIA's nvdisasm, no GPU needed)."""
        fmt = str(fmt).lower()
        if fmt in ("", "source") + CUDA_FORMATS:
            if self.source is None:
                if fmt in ("", "source") and self._ptx is not None:
                    return self._ptx()
                raise TeccError(f"get_source({fmt!r}): this device module was loaded from a .ptx or .cubin file "
                                "and has no CUDA source; save the device module as '.cu' too to keep its source")
            return self.source
        if fmt in PTX_FORMATS:
            return _ptx_text(self._ptx, fmt)
        if fmt == "sass":
            if self.cubin is None:
                raise TeccError("get_source('sass'): this device module was loaded from a .ptx or .cu file and has "
                                "no cubin to disassemble; get the SASS of the module tecc.build returned")
            from .sass import disassemble  # noqa: PLC0415

            return disassemble(self.cubin, "get_source('sass')")
        raise TeccError(f"get_source({fmt!r}): the device module has the formats '' / 'cuda' (the CUDA source), "
                        "'asm' / 'ptx' (NVRTC's PTX) and 'sass' (the cubin's instructions); the binary is the "
                        "attribute .cubin")

    def save(self, file_name, fmt: str = "") -> None:
        """Write the device code to ``file_name``: ``.cu`` the CUDA source, ``.ptx``
        NVRTC's PTX, ``.cubin`` the binary (``fmt`` overrides the extension).
        :func:`~tecc.runtime.load_module` reads each back, for the host module's
        ``import_module``."""
        path = os.fspath(file_name)
        kind = save_format(path, fmt, self.SAVE_ALIASES)
        if kind not in self.SAVE_FORMATS:
            hint = "; the host side saves with the host module's save('x.o')" if kind in ("o", "so", "c") else ""
            raise TeccError(f"save({path!r}): a CUDA device module cannot write format {kind or '(none)'!r}; "
                            f"{format_list(self.SAVE_FORMATS)}{hint}")
        if kind == "cubin":
            if self.cubin is None:
                raise TeccError(f"save({path!r}): this device module was loaded from a .ptx or .cu file and has "
                                "no cubin (tecc's runtime compiles nothing); save it as '.ptx'/'.cu', or save the "
                                "module tecc.build returned")
            data = self.cubin
        elif kind == "ptx":
            if self._ptx is None:
                raise TeccError(f"save({path!r}): this device module was loaded from a file without PTX; save it "
                                "as '.cubin' or '.cu', or save the module tecc.build returned (it makes the PTX)")
            data = self._ptx().encode("utf-8")
        else:
            data = self.get_source("cuda").encode("utf-8")
        Module._write_export(path, data, "save")

    def image(self):
        """What the GPU driver loads: the cubin, else the PTX text (JIT-compiled by
        the driver); None for a module holding CUDA source only."""
        if self.cubin is not None:
            return self.cubin
        if self._ptx is not None:
            return self._ptx().encode("utf-8")
        return None

    def __repr__(self) -> str:
        return f"<tecc.runtime.CUDASourceModule arch={self.arch}>"

    def _repr_html_(self) -> str:
        from .. import display  # noqa: PLC0415

        text = self.source if self.source is not None else (self._ptx() if self._ptx else "(binary only)")
        return display.heading_html(repr(self)) + display.code_html(text, "cuda")


def _ptx_arch(text: str) -> str:
    """The ``sm_XX`` of a PTX file's ``.target`` line, or ``"unknown"``."""
    m = re.search(r"^\s*\.target\s+(sm_\d+[af]?)", text, re.M)
    return m.group(1) if m else "unknown"


def _cubin_arch(data: bytes) -> str:
    """The ``sm_XX`` a cubin was built for, read from its ELF header's ``e_flags``
    (recent cubins keep the SM number in bits 8-15, older ones in bits 0-7), or
    ``"unknown"``."""
    if data[:4] != b"\x7fELF" or len(data) < 0x40:
        return "unknown"
    flags = struct.unpack_from("<I", data, 0x30 if data[4] == 2 else 0x24)[0]
    for sm in ((flags >> 8) & 0xFF, flags & 0xFF):
        if 20 <= sm <= 250:
            return f"sm_{sm}"
    return "unknown"


def load_device_module(path: str) -> CUDASourceModule:
    """The device module of a ``.cubin``, ``.ptx`` or ``.cu`` file (``load_module``
    calls this)."""
    kind = os.path.splitext(path)[1].lower().lstrip(".")
    with open(path, "rb") as f:
        data = f.read()
    if kind == "cubin":
        if data[:4] != b"\x7fELF":
            raise TeccError(f"load_module: {path!r} is not a cubin (an ELF file); write it with "
                            "mod.imported_modules[0].save('x.cubin')")
        return CUDASourceModule(None, data, _cubin_arch(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TeccError(f"load_module: {path!r} is not a text file, so not {kind.upper()} code") from None
    if kind == "ptx":
        if ".entry" not in text and ".version" not in text:
            raise TeccError(f"load_module: {path!r} holds no PTX (no .version or .entry); write it with "
                            "mod.imported_modules[0].save('x.ptx')")
        return CUDASourceModule(None, None, _ptx_arch(text), ptx=lambda: text)
    return CUDASourceModule(text, None, "unknown")


# ---------------------------------------------------------------------------------------------
# launchers (see runtime/launch.py)
# ---------------------------------------------------------------------------------------------
class _GPULauncher:
    """Launches on the GPU through cupy."""

    def __init__(self, module: "CUDAModule"):
        self.module = module
        self.cupy = _cupy()

    def alloc(self, dtype, count):
        return self.cupy.empty((count,), dtype=dtypes.storage(dtype))

    def address(self, arr) -> int:
        return arr.data.ptr

    def launch(self, spec: KernelSpec, grid, block, args) -> None:
        self.prepare(spec, grid, block, args)()

    def prepare(self, spec: KernelSpec, grid, block, args):
        """The launch as a function of no arguments: the kernel loaded, the scalars
        converted and the argument tuple made once."""
        kernel_args = tuple(arg if kind == "buffer" else dtypes.storage(dtype).type(arg)
                            for (kind, dtype), arg in zip(spec.params, args))
        return functools.partial(self.module._gpu_function(spec), grid, block, kernel_args,
                                 shared_mem=spec.dynamic_shared_bytes)


class EmulatedLauncher:
    """Launches on the CPU: each kernel is a function of the emulator's library that
    runs the whole grid with CUDA semantics (``int32 kernel(params...)``, 0 on
    success)."""

    def __init__(self, library_path: str):
        self.lib = load_library(library_path)
        self._fns = {}

    def alloc(self, dtype, count):
        return np.zeros((count,), dtype=dtypes.storage(dtype))

    def address(self, arr) -> int:
        return arr.ctypes.data

    def function(self, spec: KernelSpec):
        fn = self._fns.get(spec.name)
        if fn is None:
            import ctypes

            fn = getattr(self.lib, spec.name)
            fn.restype = ctypes.c_int32
            fn.argtypes = [ctypes.c_void_p if kind == "buffer" else dtypes.ctype(dtype)
                           for kind, dtype in spec.params]
            self._fns[spec.name] = fn
        return fn

    def launch(self, spec: KernelSpec, grid, block, args) -> None:
        self.prepare(spec, grid, block, args)()

    def prepare(self, spec: KernelSpec, grid, block, args):
        """The launch as a function of no arguments (the addresses read once)."""
        cargs = [a.ctypes.data if kind == "buffer" else a for (kind, _), a in zip(spec.params, args)]
        fn, lib = self.function(spec), self.lib

        def run(_keep=args):  # the arrays stay alive while the launch may be made
            if fn(*cargs) != 0:
                raise KernelError(f"kernel {spec.name} failed: {last_error(lib)}")

        return run


class CUDAModule(Module):
    """A compiled CUDA module: launch plans plus kernels in one cubin.

    Parameters
    ----------
    signatures : dict
        Function name -> :class:`~tecc.runtime.signature.Signature`.
    plans : dict
        Function name -> :class:`~tecc.runtime.launch.LaunchPlan`.
    kernels : dict
        Kernel name -> :class:`~tecc.runtime.launch.KernelSpec`.
    source : str or None
        The kernels' CUDA source (None, with ``cubin``, in a host module loaded from
        a library linked from ``save("x.o")``: :meth:`import_module` brings the
        device code).
    cubin : bytes or None
        The NVRTC output for ``arch``.
    arch : str
        ``"sm_90"``...
    target : str
        The target string it was built for.
    emulation_library : callable
        Returns the path of the emulator's shared library (building it the first
        time it is asked), for running without a GPU and for export.
    checker : object, optional
        Given by the compiler: ``check`` and ``shared_memory_report`` use it.
    resources : dict, optional
        Kernel name -> :class:`KernelResources`, ptxas's report for ``arch``.
    ptx : callable, optional
        Given by the compiler: returns NVRTC's PTX of ``source`` (``get_source("asm")``).
    object_compiler : callable, optional
        Given by the compiler: ``object_compiler(extra_c) -> path`` compiles the
        emulator's C code of the kernels followed by ``extra_c`` into an object file
        (``save("x.o")``).
    """

    DEVICE_TYPE = CUDA
    DEVICE_NAME = "cuda"
    type_key = "cuda"
    SAVE_FORMATS = {
        "o": "the host side as an object file: the launch plans and kernel specs as metadata, with the CPU "
             "emulation of the kernels (link it with tecc.contrib.cc.create_shared, load the library with "
             "load_module, then import_module the device code on a GPU)",
        "so": "the whole module in one file (what export_library writes)",
    }
    SAVE_ALIASES = {"obj": "o"}

    def __init__(self, signatures: dict, plans: dict, kernels: dict, source, cubin, arch: str,
                 target: str, emulation_library, checker=None, resources: dict | None = None, ptx=None,
                 object_compiler=None):
        super().__init__(signatures, target, checker)
        self.plans = dict(plans)
        self.kernels = dict(kernels)
        self.cuda_source = source
        self.cubin = None if cubin is None else bytes(cubin)
        self.arch = arch
        #: kernel name -> KernelResources (ptxas, for ``arch``); empty if not known
        self.kernel_resources = dict(resources or {})
        self.object_compiler = object_compiler
        self.imported_modules = []
        if source is not None or cubin is not None:
            self.imported_modules.append(CUDASourceModule(source, self.cubin, arch, ptx))
        self._emulation_library = emulation_library
        self._emulator = None
        self._gpu_module = None
        self._gpu_functions = {}

    @property
    def kernel_names(self) -> list:
        """The names of the module's kernels."""
        return list(self.kernels)

    def launch_dims(self) -> list:
        """``(function, kernel, grid, block)`` of every launch in the functions' plans,
        in order; ``grid`` and ``block`` are 3-tuples, None where an extent depends on
        the arguments (a symbolic size)."""
        out = []
        for fname, plan in self.plans.items():
            for step in _all_steps(plan.steps):
                if not isinstance(step, Launch):
                    continue
                try:
                    grid = tuple(evaluate(x, {}) for x in step.grid)
                    block = tuple(evaluate(x, {}) for x in step.block)
                except KeyError:  # an extent that depends on a scalar argument
                    grid = block = None
                out.append((fname, step.kernel, grid, block))
        return out

    def _kernel_table(self):
        def dims(d):
            return "?" if d is None else "x".join(str(v) for v in d if v > 1) or "1"

        rows = []
        for fname, kernel, grid, block in self.launch_dims():
            res = self.kernel_resources.get(kernel)
            spec = self.kernels.get(kernel)
            rows.append([fname, kernel, dims(grid), dims(block),
                         res.registers if res else None, res.spill_store_bytes if res else None,
                         res.static_shared_bytes if res else None,
                         spec.dynamic_shared_bytes if spec else None])
        return (["function", "kernel", "grid", "block", "registers", "spill bytes", "static shared B",
                 "dynamic shared B"], rows)

    def _source_language(self) -> str:
        return "cuda"

    def _display_source(self) -> str:
        return self.cuda_source

    def get_source(self, fmt: str = "") -> str:
        """The module's code as text (TVM's ``get_source``).

        Parameters
        ----------
        fmt : str
            ``""`` (or ``"plan"``, ``"host"``): the host side, the launch plans as
            text; ``"cu"``/``"cuda"``: the kernels' CUDA source (also
            ``imported_modules[0].get_source()``); ``"asm"``/``"ptx"``: NVRTC's PTX
            of the kernels (made on request; a module loaded from a file has none);
            ``"sass"``: the cubin's instructions (nvdisasm).
        """
        fmt = str(fmt).lower()
        if fmt in CUDA_FORMATS + PTX_FORMATS + ("sass",):
            if not self.imported_modules:
                raise TeccError(f"get_source({fmt!r}): {self._no_device_code()}")
            return self.imported_modules[0].get_source(fmt)
        if fmt not in ("", "plan", "host"):
            raise TeccError(f"get_source({fmt!r}): a CUDA module has the formats '' (the launch plans), 'cuda' "
                            "(the CUDA source), 'asm' / 'ptx' (NVRTC's PTX) and 'sass' (the cubin's "
                            "instructions); the binary is imported_modules[0].cubin")
        return "\n\n".join(p.text() for p in self.plans.values())

    # arguments -----------------------------------------------------------------------
    def _on_gpu(self) -> bool:
        return cuda(0).exist

    def _as_array(self, value, i: int, spec, sig):
        what = f"argument {i} ({spec.name!r})"
        gpu = self._on_gpu()
        if isinstance(value, NDArray):
            return self._ndarray_data(value, what, spec, sig.name)
        if isinstance(value, np.ndarray):
            return value
        cupy = _cupy() if gpu else None
        if cupy is not None and isinstance(value, cupy.ndarray):
            return value
        if hasattr(value, "__dlpack__"):
            try:
                return cupy.from_dlpack(value) if gpu else np.from_dlpack(value)
            except Exception as err:  # noqa: BLE001 - the producer refused
                where = "GPU" if gpu else "CPU (there is no GPU here)"
                raise RuntimeArgError(
                    f"{sig.name}: {what} ({type(value).__name__}) cannot be shared with the {where} "
                    f"through DLPack: {err}") from None
        raise RuntimeArgError(
            f"{sig.name}: {what} must be a tecc.nd.NDArray on cuda(0), a cupy array, a DLPack tensor or a "
            f"numpy array, got {type(value).__name__}")

    # running ---------------------------------------------------------------------------
    def _call(self, name: str, args) -> None:
        sig, arrays, values = self._bind(name, args)
        if self._on_gpu():
            dev_arrays, copy_back = self._device_arrays(sig, arrays)
            run_plan(self.plans[name], self.kernels, dev_arrays, values, _GPULauncher(self))
            for arr, dev in copy_back:
                arr[...] = dev.get()
        else:
            run_plan(self.plans[name], self.kernels, arrays, values, self.emulator())

    def emulator(self) -> EmulatedLauncher:
        """The launcher of the CPU emulation (after the one-time warning)."""
        global _warned_emulation
        if config.require_gpu():
            raise TeccError(
                f"{self.entry_name}: there is no CUDA GPU here and TECC_REQUIRE_GPU=1 forbids the CPU "
                "emulation; run on a machine with a GPU or unset TECC_REQUIRE_GPU")
        if not _warned_emulation:
            _warned_emulation = True
            warnings.warn("no CUDA GPU found: CUDA modules run on tecc's CPU emulation of CUDA semantics "
                          "(correct results, not GPU speed); set TECC_REQUIRE_GPU=1 to make this an error",
                          RuntimeWarning, stacklevel=4)
        if self._emulator is None:
            library = self._emulation_library()
            if library is None:
                raise TeccError(
                    f"{self.entry_name}: there is no CUDA GPU here, and this module was exported for GPUs only "
                    "(export_library(path, cpu_emulation=False)), without the CPU emulation that would run it; "
                    "run it on a machine with a GPU, or export it with cpu_emulation=True")
            self._emulator = EmulatedLauncher(library)
        return self._emulator

    def _device_arrays(self, sig, arrays):
        """cupy views of the arguments (numpy ones are copied to the GPU and, when the
        function writes them, listed for copying back)."""
        cupy = _cupy()
        out, copy_back = {}, []
        for i, arr in arrays.items():
            if isinstance(arr, np.ndarray):
                dev = cupy.asarray(arr)
                if sig.args[i].written:
                    copy_back.append((arr, dev))
                out[i] = dev
            else:
                out[i] = arr
        return out, copy_back

    def _runner(self, name: str, args, options: dict):
        sig, arrays, values = self._bind(name, args)
        plan = self.plans[name]
        if not self._on_gpu():
            launcher = self.emulator()
            run_plan(plan, self.kernels, arrays, values, launcher)  # warm-up: loads the emulation
            return timing.wall_clock(lambda: run_plan(plan, self.kernels, arrays, values, launcher)), lambda: None
        dev_arrays, copy_back = self._device_arrays(sig, arrays)
        launcher = _GPULauncher(self)
        run_plan(plan, self.kernels, dev_arrays, values, launcher)  # warm-up: loads the cubin
        run_n = timing.cuda_events(lambda: run_plan(plan, self.kernels, dev_arrays, values, launcher),
                                   options.get("flush_l2", False))

        def finish():  # leave numpy outputs holding the result, as a plain call would
            for arr, dev in copy_back:
                arr[...] = dev.get()

        return run_n, finish

    def time_evaluator(self, func_name: str, dev=None, number: int = 10, repeat: int = 1,
                       min_repeat_ms: float = 0, flush_l2: bool = False, **options):
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
        return super().time_evaluator(func_name, dev, number, repeat, min_repeat_ms, flush_l2=flush_l2,
                                      **options)

    # checking ---------------------------------------------------------------------------
    def check(self, *args, max_blocks: int = 3, max_threads: int = None, max_findings: int = 5) -> list:
        """Run the module in checking mode on copies of ``args``; return the findings.

        Every launch runs a few of its blocks (``max_blocks``: the first two, then
        spread out to the last; None for all; after a block with a problem only the
        last remains, as the middle ones would repeat it) on the CPU with CUDA semantics
        and every memory access checked, and reports out-of-bounds accesses, races on
        shared and on global memory (between threads with no barrier in between, and
        between blocks), and reads of shared memory no thread wrote -- each
        :class:`~tecc.cpu_fallback.check.Finding` names the kernel, block, thread,
        buffer, index and the TIR statement; at most ``max_findings`` of each kind, one
        per statement.  It runs with or without a GPU and leaves ``args`` untouched.
        The blocks run compiled (the emulator's C with every access instrumented): the
        first check of a module compiles its checking library, about a second, then a
        block takes milliseconds.  A kernel the compiled checker cannot follow is
        interpreted instead (slow), with an ``InterpretedCheckWarning`` saying why.

        >>> for finding in mod.check(a, b, c):
        ...     print(finding)
        """
        return self._check(self.entry_name, args, {"max_blocks": max_blocks, "max_threads": max_threads,
                                                    "max_findings": max_findings})

    def shared_memory_report(self, *args, max_blocks: int = 1) -> list:
        """Bank conflicts of every shared-memory load and store, counted on the CPU.

        Interprets ``max_blocks`` blocks of every launch on copies of ``args`` (the
        bank counter follows each access in the TIR interpreter, which is slow: use
        small shapes) and rebuilds each warp-wide shared access: a list of
        :class:`~tecc.cpu_fallback.gpu_emu.bank_conflicts.SharedAccessStat`
        (``conflict`` 1.0 is conflict-free; 32.0 serializes the warp), the worst
        first.  Use it to see whether ``storage_align`` or a k-major tile removed a
        conflict, with no GPU.
        """
        return self._check(self.entry_name, args, {"max_blocks": max_blocks, "bank_report": True})

    # device code ---------------------------------------------------------------------------
    def _no_device_code(self) -> str:
        return (f"the host module {self.entry_name!r} was loaded from a library linked from save('x.o'), which "
                "holds no device code; load the device module the build saved and import it: "
                "mod.import_module(tecc.runtime.load_module('x.ptx'))  (or '.cubin', '.cu')")

    def import_module(self, module) -> None:
        """Use the device code of ``module`` (a :class:`CUDASourceModule`, e.g.
        ``load_module("x.ptx")``) for this module's kernels: TVM's ``import_module``.

        A GPU then loads its cubin, or its PTX (compiled by the driver); without a
        GPU the kernels run on the CPU emulation the host module carries, whatever
        the device code.

        Raises
        ------
        TeccError
            If ``module`` is no CUDA device module, or lacks one of the kernels the
            launch plans call (device code saved from another build).
        """
        if not isinstance(module, CUDASourceModule):
            raise TeccError(f"import_module: a CUDA host module imports a CUDA device module (load_module of a "
                            f".ptx, .cubin or .cu file), got {type(module).__name__}")
        code = module.cubin if module.cubin is not None else module.get_source("")
        code = code if isinstance(code, bytes) else code.encode("utf-8")
        missing = [name for name in self.kernels if name.encode() not in code]
        if missing:
            raise TeccError(f"import_module: the device module has no kernel {missing[0]!r}, which "
                            f"{self.entry_name!r} launches; import the device code saved from the same build")
        self.imported_modules = [module]
        self.cuda_source = module.source
        self.cubin = module.cubin
        if module.arch != "unknown":
            self.arch = module.arch
        self._gpu_module = None
        self._gpu_functions = {}

    # execution on a GPU ---------------------------------------------------------------------
    def _load(self):
        """Load the device code once (needs the driver) and return cupy's module."""
        if self._gpu_module is None:
            if not self.imported_modules:
                raise TeccError(f"{self.entry_name}: {self._no_device_code()}")
            image = self.imported_modules[0].image()
            if image is None:
                raise TeccError(
                    f"{self.entry_name}: the imported device module holds CUDA source only, and tecc's runtime "
                    "compiles nothing; import the '.cubin' or '.ptx' the build saved instead")
            cupy = _cupy()
            mod = cupy.cuda.function.Module()
            is_cubin = self.imported_modules[0].cubin is not None
            try:
                mod.load(image)
            except Exception as err:  # noqa: BLE001 - driver refused the binary
                if not is_cubin:
                    raise TeccError(
                        f"{self.entry_name}: the GPU driver could not compile the imported PTX ({err}); a driver "
                        "older than the NVRTC that made it refuses its PTX version: save and import the "
                        "'.cubin' instead (mod.imported_modules[0].save('x.cubin'))") from None
                raise TeccError(
                    f"{self.entry_name}: the GPU driver could not load the cubin built for {self.arch} "
                    f"({err}); rebuild for this GPU's architecture (target 'cuda' detects it, or "
                    f"'cuda -arch={cuda(0).arch}')") from None
            self._gpu_module = mod
        return self._gpu_module

    def _gpu_function(self, spec: KernelSpec):
        fn = self._gpu_functions.get(spec.name)
        if fn is None:
            cupy = _cupy()
            fn = self._load().get_function(spec.name)
            if spec.dynamic_shared_bytes > 0:
                drv = cupy.cuda.driver
                drv.funcSetAttribute(fn.ptr, drv.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     spec.dynamic_shared_bytes)
            self._gpu_functions[spec.name] = fn
        return fn

    # export ------------------------------------------------------------------------------------
    def metadata(self) -> dict:
        meta = super().metadata()
        meta.update({"arch": self.arch, "plans": [p.to_json() for p in self.plans.values()],
                     "kernels": [k.to_json() for k in self.kernels.values()],
                     "resources": {name: r.to_json() for name, r in self.kernel_resources.items()}})
        return meta

    def save(self, file_name, fmt: str = "") -> None:
        """Write the host side of the module to ``file_name`` (TVM's ``save``).

        ``.o``: an object file holding the launch plans and kernel specs as
        metadata and the CPU emulation of the kernels; a library linked from it
        (``tecc.contrib.cc.create_shared``) loads with :func:`load_module` as a
        host module that runs on the emulator, and on a GPU after
        ``import_module`` of the device code, which
        ``mod.imported_modules[0].save("x.ptx")`` (or ``.cubin``, ``.cu``) writes.
        ``.so``: the whole module in one file, as :meth:`export_library`.

        Raises
        ------
        TeccError
            For another format, or ``.o`` of a module loaded from a file (making
            the object needs the C compiler).
        """
        super().save(file_name, fmt)

    def _save_hint(self, kind: str) -> str:
        ext = CUDASourceModule.SAVE_ALIASES.get(kind, kind)
        if ext in CUDASourceModule.SAVE_FORMATS:
            return f"; the device code saves with mod.imported_modules[0].save('x.{ext}')"
        return ""

    def _save_bytes(self, kind: str, path: str) -> bytes:
        if kind == "o":
            return self._metadata_object(self.object_compiler, {"emulation": True}, path)
        return self._artifact()

    def export_library(self, path, *_unused_args, cpu_emulation: bool = True, **_unused_kwargs) -> None:
        """Write the module to ONE file at ``path`` (see :meth:`Module.export_library`).
        ``cpu_emulation=False`` leaves out the CPU emulation: the file runs on GPUs
        only, and exporting skips the C compiler (the tuner's builder does so when
        its runner has a GPU: compiling the emulation took half of a candidate's
        build)."""
        self._write_export(path, self._artifact(cpu_emulation))

    def _artifact(self, cpu_emulation: bool = True) -> bytes:
        """A zip: ``metadata.json`` (signatures, plans, kernel specs, ptxas report),
        ``kernels.cubin``, ``source.cu``, ``plans.txt`` (readable) and
        ``emulation.so`` (the CPU emulation, for machines without a GPU; absent
        from a GPU-only export)."""
        if self.cubin is None or self.cuda_source is None:
            raise TeccError(
                f"export_library: {self.entry_name!r} lacks its {'cubin' if self.cubin is None else 'CUDA source'}"
                ": a host module loaded from a library linked from save('x.o') has only the device code it "
                "imported (a .ptx, .cubin or .cu file holds part of it), and an export needs both; export the "
                "module tecc.build returned")
        entries = {"metadata.json": json.dumps(dict(self.metadata(), emulation=bool(cpu_emulation)), indent=1),
                   "kernels.cubin": self.cubin, "source.cu": self.cuda_source, "plans.txt": self.get_source()}
        if cpu_emulation:
            library = self._emulation_library()
            if library is None:
                raise TeccError(f"export_library: {self.entry_name} was loaded from a GPU-only export and has no "
                                "CPU emulation to write; export with cpu_emulation=False, or rebuild it")
            with open(library, "rb") as f:
                entries["emulation.so"] = f.read()
        return zip_bytes(entries)


def load_cuda_module(entries: dict, meta: dict, signatures: dict, path: str = "", cache: bool = True) -> CUDAModule:
    """A :class:`CUDAModule` from the files of an exported one (``load_module`` calls
    this); with ``cache`` False its CPU emulation is written beside ``path`` when
    first needed, not into tecc's cache."""
    try:
        cubin = entries["kernels.cubin"]
        source = entries["source.cu"].decode("utf-8")
        emulation = entries["emulation.so"] if meta.get("emulation", True) else None
    except KeyError as err:
        raise TeccError(f"load_module: {path!r} lacks {err} (an incomplete CUDA module)") from None
    plans = {d["name"]: LaunchPlan.from_json(d) for d in meta["plans"]}
    kernels = {d["name"]: KernelSpec.from_json(d) for d in meta["kernels"]}
    resources = {name: KernelResources.from_json(r) for name, r in meta.get("resources", {}).items()}
    if emulation is None:  # exported for GPUs only
        def emulation_library():
            return None
    elif cache:
        library = _cached_file(emulation, "so")

        def emulation_library():
            return library
    else:
        def emulation_library():
            beside = f"{path}.emulation.so"
            if not os.path.exists(beside):
                atomic_write(beside, emulation)
            return beside
    return CUDAModule(signatures, plans, kernels, source, cubin, meta["arch"], meta["target"],
                      emulation_library, None, resources)


def load_cuda_host_module(meta: dict, signatures: dict, lib_path: str, path: str = "") -> CUDAModule:
    """The host module of a library linked from a CUDA module's ``save("x.o")``:
    launch plans from the metadata, the library itself as the CPU emulation, no
    device code until :meth:`CUDAModule.import_module` (``load_module`` calls this)."""
    plans = {d["name"]: LaunchPlan.from_json(d) for d in meta["plans"]}
    kernels = {d["name"]: KernelSpec.from_json(d) for d in meta["kernels"]}
    resources = {name: KernelResources.from_json(r) for name, r in meta.get("resources", {}).items()}
    lib = load_library(lib_path)
    missing = [name for name in kernels if not hasattr(lib, name)]
    if missing:
        raise TeccError(f"load_module: {path or lib_path!r} lacks the emulated kernel {missing[0]!r} its metadata "
                        "names; link the object a CUDA module's save('x.o') wrote, unchanged")

    def emulation_library():
        return lib_path

    return CUDAModule(signatures, plans, kernels, None, None, meta["arch"], meta["target"], emulation_library,
                      None, resources)
