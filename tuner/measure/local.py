"""Measuring candidates on this machine: :class:`LocalBuilder` and :class:`LocalRunner`
(AutoTVM's ``autotvm.LocalBuilder`` / ``autotvm.LocalRunner``).

The builder compiles a batch of candidates in parallel worker processes forked from
this one (so a template defined in ``__main__`` or in a test module is registered
there too).  For each :class:`~.measure.MeasureInput` a worker instantiates the
template under the config, checks a "cuda" kernel against the GPU's limits (threads,
shared memory, per-thread arrays that could not stay in registers; then registers
once NVRTC has reported them), compiles it, and
exports the module to a temporary folder.  A worker that overruns ``timeout`` is
killed and replaced; one that dies is replaced; the batch goes on either way.

The runner executes the built candidates one by one in a long-lived worker process
(a fresh Python interpreter, restarted whenever it dies or hangs), so a candidate
that crashes, hangs or corrupts the device costs one trial and nothing else:

============================  =================================================
what the candidate does       what it gets
============================  =================================================
runs and matches the oracle   ``error_no`` 0, seconds per run (one per repeat)
computes something else       ``WRONG_ANSWER``, with the largest differences
kills the process             ``RUNTIME_DEVICE``, naming the signal
raises (or a CUDA error)      ``RUNTIME_DEVICE``, with the message
runs past ``timeout``         ``RUN_TIMEOUT`` (the process is killed)
============================  =================================================

The correctness oracle is always on.  When the runner is given a task
(``set_task``), the task's compute is built once with a naive schedule
(``te.create_schedule`` of its outputs, target "llvm") and run on deterministic
inputs (see :func:`reference_inputs`); every candidate then runs on the same inputs
and its outputs are compared with :data:`TOLERANCES`.  ``runner.ref_input`` (one array
per argument) and ``runner.ref_output`` (one per output) replace the generated inputs
and the computed outputs.

A "cuda" task on a machine without a GPU runs on tecc's CPU emulator of CUDA: its
results are checked like any other, and its costs, emulator time, are marked
``emulated=True``.
"""
from __future__ import annotations

import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import weakref
from collections import deque, namedtuple

import numpy as np

from .measure import Builder, MeasureError, MeasureErrorNo, MeasureResult, Runner

#: relative tolerance of the comparison with the reference, per output dtype; the
#: absolute tolerance is the same number times ``max(1, max |expected|)``, so a
#: reduction summed in another order passes while a wrong element does not
TOLERANCES = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-4, "float64": 1e-9,
              # the 8- and 4-bit floats: a step of theirs (2^-mantissa bits: a candidate that sums
              # in another order may round its float32 result to the neighbouring value)
              "float8_e4m3fn": 0.125, "float8_e4m3fnuz": 0.125, "float8_e5m2": 0.25, "float8_e5m2fnuz": 0.25,
              "float8_e8m0fnu": 1.0, "float4_e2m1fn": 0.5}

#: registers of one block on every GPU tecc compiles for (sm_75 ... sm_120)
MAX_REGISTERS_PER_BLOCK = 65536

#: the seed of the reference inputs (each argument draws from ``[SEED, position]``)
SEED = 0

#: the runner's worker process is replaced after this many candidates (every loaded
#: module stays mapped in the process that loaded it)
_RUNS_PER_WORKER = 256

#: the build options a builder understands (``build_kwargs``)
_BUILD_KWARGS = ("cuda_arch", "checks", "cpu_emulation")
#: TVM's names of GPU limits (``build_kwargs={"checks": {"gpu": {...}}}``) -> verify_gpu's
_GPU_CHECKS = {"max_threads_per_block": "max_threads_per_block", "max_shared_memory_per_block": "max_shared_bytes",
               "max_thread_x": "max_thread_x", "max_thread_y": "max_thread_y", "max_thread_z": "max_thread_z",
               "max_local_memory_per_thread": "max_local_bytes"}


class BuildResult(namedtuple("BuildResult", ("filename", "arg_info", "error", "time_cost"))):
    """A compiled candidate.

    filename : str
        The exported module (``tecc.runtime.load_module`` loads it).
    arg_info : tuple
        ``(shape, dtype)`` of each argument of the function, in order.
    error : None
        Kept for AutoTVM's field list; a candidate that failed is a
        :class:`~.measure.MeasureResult` instead.
    time_cost : float
        Seconds spent instantiating and compiling it.
    """


def _message(err: BaseException) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _signal_text(returncode) -> str:
    """``"signal SIGSEGV (Segmentation fault)"`` for a process that died of a signal."""
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            return f"signal {sig.name} ({signal.strsignal(sig) or sig.name})"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def _is_cuda(target) -> bool:
    from ...target import Target  # noqa: PLC0415

    return target is not None and Target.canon(target).kind == "cuda"


# ---------------------------------------------------------------------------------
# building one candidate (runs in a builder worker, or in-process)
# ---------------------------------------------------------------------------------
def _check_build_kwargs(build_kwargs: dict) -> dict:
    build_kwargs = dict(build_kwargs or {})
    for key in build_kwargs:
        if key not in _BUILD_KWARGS:
            raise MeasureError(f"LocalBuilder: unknown build option {key!r}; the options are "
                               f"{', '.join(_BUILD_KWARGS)}")
    checks = build_kwargs.get("checks") or {}
    if not isinstance(checks, dict) or any(k != "gpu" for k in checks):
        raise MeasureError(f"LocalBuilder: build_kwargs['checks'] must be {{'gpu': {{limit: value}}}}, got {checks!r}")
    for key, value in (checks.get("gpu") or {}).items():
        if key not in _GPU_CHECKS:
            raise MeasureError(f"LocalBuilder: unknown GPU limit {key!r} in build_kwargs['checks']['gpu']; "
                               f"known: {', '.join(_GPU_CHECKS)}")
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise MeasureError(f"LocalBuilder: GPU limit {key!r} must be a positive int, got {value!r}")
    return build_kwargs


def _gpu_limits(arch, checks: dict) -> dict:
    """verify_gpu's keyword arguments: the limits of ``arch`` with TVM-style
    ``checks['gpu']`` on top."""
    from ...tir.analysis import gpu_limits  # noqa: PLC0415

    limits = gpu_limits(arch).verify_kwargs()
    for key, value in (checks.get("gpu") or {}).items():
        limits[_GPU_CHECKS[key]] = value
        if key == "max_shared_memory_per_block":
            limits["max_shared_bytes_optin"] = value
    return limits


def _kernels(mod) -> list:
    from ...tir import keys  # noqa: PLC0415

    return [f for f in mod.functions.values() if f.attrs.get(keys.KERNEL)]


def _check_registers(built, kernels, arch) -> str | None:
    """Why the kernels would not launch for lack of registers (ptxas's count times the
    threads per block), or None."""
    from ...tir.analysis import threads_per_block  # noqa: PLC0415

    for kernel in kernels:
        res = built.kernel_resources.get(kernel.name)
        threads = threads_per_block(kernel)
        if res is None or threads is None:
            continue
        need = res.registers * threads
        if need > MAX_REGISTERS_PER_BLOCK:
            return (f"kernel {kernel.name!r} needs {res.registers} registers per thread x {threads} threads = "
                    f"{need} registers per block, over the limit of {MAX_REGISTERS_PER_BLOCK} registers per "
                    f"block of {arch}; use fewer threads per block or a smaller tile per thread")
    return None


class _Failed(Exception):
    """A step of building a candidate failed with ``error_no``."""

    def __init__(self, error_no, message):
        super().__init__(message)
        self.error_no = int(error_no)
        self.message = message


def _step(error_no, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; whatever it raises becomes a :class:`_Failed` of ``error_no``."""
    try:
        return fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 -- the candidate's own failure, reported as its result
        raise _Failed(error_no, _message(err)) from None


def build_candidate(measure_input, tmp_dir, build_kwargs=None, filename=None, pass_context=None):
    """Instantiate, check, compile and export one candidate.

    This is what a :class:`LocalBuilder` worker runs; it never raises for the
    candidate's own errors.

    Parameters
    ----------
    measure_input : MeasureInput
    tmp_dir : str
        Where the exported module goes.
    build_kwargs : dict, optional
        ``cuda_arch`` (the ``sm_XX`` to compile a "cuda" target for when it names
        none) and ``checks`` (TVM's ``{"gpu": {"max_threads_per_block": ...}}``).
    filename : str, optional
        The file's name in ``tmp_dir``.
    pass_context : PassContext, optional
        Entered around lowering and compiling.

    Returns
    -------
    BuildResult, or MeasureResult with the error
    """
    from ...target import Target  # noqa: PLC0415
    from ...tir.transform.pipeline import PassContext  # noqa: PLC0415

    start = time.time()
    build_kwargs = build_kwargs or {}
    task, config = measure_input.task, measure_input.config
    target = Target.canon(measure_input.target if measure_input.target is not None else task.target)
    cuda = target.kind == "cuda"
    if cuda and target.cuda_arch is None and build_kwargs.get("cuda_arch"):
        target = Target(f"{target} -arch={build_kwargs['cuda_arch']}", host=target.host)
    suffix = "tecc" if cuda else "so"
    path = os.path.join(tmp_dir, filename or f"candidate_{os.getpid()}_{time.time_ns()}.{suffix}")
    try:
        sch, args, arg_info = _step(MeasureErrorNo.INSTANTIATION_ERROR, _instantiate, task, config, target)
        with pass_context if pass_context is not None else PassContext.current():
            if cuda:
                _compile_cuda(sch, args, target, build_kwargs, path)
            else:
                _compile_cpu(sch, args, target, path)
    except _Failed as failed:
        return MeasureResult([failed.message], failed.error_no, time.time() - start, time.time())
    return BuildResult(path, arg_info, None, time.time() - start)


def _instantiate(task, config, target):
    with target:
        sch, args = task.instantiate(config)
    return sch, args, tuple((_const_shape(a), str(a.dtype)) for a in args)


def _compile_cpu(sch, args, target, path):
    import tecc  # noqa: PLC0415

    built = _step(MeasureErrorNo.COMPILE_HOST, tecc.build, sch, args, target=target)  # lowering, C compiler
    _step(MeasureErrorNo.COMPILE_HOST, built.export_library, path)


def _compile_cuda(sch, args, target, build_kwargs, path):
    """Lower (the pipeline ends with ``verify_gpu`` for the architecture), check the
    limits, compile with NVRTC, check the registers, export."""
    import tecc  # noqa: PLC0415
    from ...cuda_codegen import cuda_arch  # noqa: PLC0415
    from ...errors import VerifyError  # noqa: PLC0415
    from ...tir.analysis import register_pressure, verify_gpu  # noqa: PLC0415

    arch = _step(MeasureErrorNo.COMPILE_HOST, cuda_arch, target)
    try:
        lowered = tecc.lower(sch, args, target=target)
        checks = build_kwargs.get("checks") or {}
        if checks.get("gpu"):
            limits = _gpu_limits(arch, checks)
            for kernel in _kernels(lowered):
                verify_gpu(kernel, **limits)
    except VerifyError as err:  # over a limit of the GPU: refused before anything is compiled
        raise _Failed(MeasureErrorNo.INSTANTIATION_ERROR, _message(err)) from None
    except Exception as err:  # noqa: BLE001 -- lowering failed
        raise _Failed(MeasureErrorNo.COMPILE_HOST, _message(err)) from None
    for kernel in _kernels(lowered):  # arrays that cannot stay in registers: refused before NVRTC too
        spills = register_pressure(kernel, arch)
        if spills:
            raise _Failed(MeasureErrorNo.INSTANTIATION_ERROR, spills)
    built = _step(MeasureErrorNo.COMPILE_DEVICE, tecc.build, lowered, target=target)  # CUDA C -> NVRTC
    too_many = _check_registers(built, _kernels(lowered), arch)
    if too_many:
        raise _Failed(MeasureErrorNo.INSTANTIATION_ERROR, too_many)
    # the CPU emulation (a C compile) only where the runner has no GPU
    _step(MeasureErrorNo.COMPILE_HOST, built.export_library, path,
          cpu_emulation=build_kwargs.get("cpu_emulation", True))


def _const_shape(tensor) -> tuple:
    from ...tir import expr as E  # noqa: PLC0415

    out = []
    for d in tensor.shape:
        value = E.const_int_value(d)
        if value is None:
            raise MeasureError(f"argument {tensor.name!r} has the symbolic shape {tensor.shape}; a measured "
                               "task needs constant shapes")
        out.append(value)
    return tuple(out)


# ---------------------------------------------------------------------------------
# the builder's pool of forked workers
# ---------------------------------------------------------------------------------
def _kill(process) -> None:
    """Kill a worker and everything it started (its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        process.kill()
    except (ProcessLookupError, OSError, AttributeError, ValueError):
        pass


#: seconds between an idle worker's checks that the process it serves still lives
PARENT_CHECK_S = 1.0


def _recv_while_parent_lives(conn, parent: int):
    """``conn.recv()``, or EOFError once the process ``parent`` is gone.  A worker
    lives in a process group (a session) of its own, so killing its tuner's group
    (``kill -9`` of a tuning run) does not reach it, and a copy of its pipe's other
    end in a sibling keeps EOF from coming: without this it would wait forever."""
    while not conn.poll(PARENT_CHECK_S):
        if os.getppid() != parent:
            raise EOFError("the process this worker serves is gone")
    return conn.recv()


def _build_worker_main(conn) -> None:
    """The loop of a builder worker: jobs in, results out, until told to stop (or
    until the process that forked it is gone)."""
    parent = os.getppid()
    try:
        os.setpgid(0, 0)  # a group of its own: killing it kills the C compiler it runs
    except OSError:
        pass
    tasks = {}
    while True:
        try:
            job = _recv_while_parent_lives(conn, parent)
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            key, blob, job = job
            if blob is not None:
                tasks.clear()
                tasks[key] = pickle.loads(blob)
            job = pickle.loads(job)
            inp = job["input"]._replace(task=tasks[key])
            result = build_candidate(inp, job["tmp_dir"], job["build_kwargs"], job["filename"],
                                     job["pass_context"])
        except BaseException as err:  # noqa: BLE001 -- never leave the parent without an answer
            result = MeasureResult([f"{_message(err)}\n{traceback.format_exc()}"],
                                   int(MeasureErrorNo.COMPILE_HOST), 0.0, time.time())
        try:
            conn.send(result)
        except (EOFError, OSError):
            return


class _ForkWorker:
    def __init__(self):
        import multiprocessing as mp  # noqa: PLC0415

        from ..task.task import TASK_TABLE  # noqa: PLC0415

        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=_build_worker_main, args=(child,), daemon=True)
        self.process.start()
        child.close()
        self.known_tasks = set(TASK_TABLE)  # the templates it was forked with
        self.task_key = None  # the task it holds

    def kill(self):
        _kill(self.process)
        self.process.join(5)
        self.conn.close()

    def stop(self):
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(2)
        if self.process.is_alive():
            _kill(self.process)
            self.process.join(2)
        self.conn.close()


def _stop_all(workers: list) -> None:
    for i, w in enumerate(workers):
        if w is not None:
            w.stop()
            workers[i] = None


class _ForkPool:
    """``n`` forked workers running :func:`build_candidate`, each job under a
    timeout; a worker that overruns it is killed, one that dies is replaced."""

    def __init__(self, n: int):
        self.workers = [None] * n
        self._finalizer = weakref.finalize(self, _stop_all, self.workers)

    def close(self):
        _stop_all(self.workers)

    def run(self, jobs: list, task_name: str, task_key, task_blob: bytes, timeout: float) -> list:
        """Each job's outcome: ``("ok", result, seconds)``, ``("timeout", None,
        seconds)`` or ``("died", reason, seconds)``.  ``jobs`` are pickled
        already; the task (``task_blob``) goes to each worker once."""
        busy = {}  # slot -> (job index, started)
        try:
            return self._run(jobs, task_name, task_key, task_blob, timeout, busy)
        except BaseException:
            for slot in busy:  # interrupted: a worker still busy would answer the next batch's job
                self.workers[slot].kill()
                self.workers[slot] = None
            raise

    def _run(self, jobs, task_name, task_key, task_blob, timeout, busy):
        from multiprocessing.connection import wait  # noqa: PLC0415

        out = [None] * len(jobs)
        pending = deque(range(len(jobs)))
        tries = [0] * len(jobs)
        while pending or busy:
            for slot in range(len(self.workers)):
                if not pending:
                    break
                if slot in busy:
                    continue
                w = self.workers[slot]
                if w is not None and (not w.process.is_alive() or task_name not in w.known_tasks):
                    w.kill()  # dead while idle, or forked before this template was registered
                    w = self.workers[slot] = None
                if w is None:
                    w = self.workers[slot] = _ForkWorker()
                index = pending.popleft()
                try:
                    w.conn.send((task_key, None if w.task_key == task_key else task_blob, jobs[index]))
                except (OSError, ValueError) as err:  # the worker died before taking it
                    w.kill()
                    self.workers[slot] = None
                    tries[index] += 1
                    if tries[index] < 3:
                        pending.appendleft(index)
                    else:
                        out[index] = ("died", f"no worker would take the job: {err}", 0.0)
                    continue
                w.task_key = task_key
                busy[slot] = (index, time.time())
            if not busy:
                continue
            deadline = min(started for _, started in busy.values()) + timeout
            waitables = []
            for slot in busy:
                waitables += [self.workers[slot].conn, self.workers[slot].process.sentinel]
            ready = set(wait(waitables, timeout=max(0.0, deadline - time.time())))
            now = time.time()
            for slot, (index, started) in list(busy.items()):
                w = self.workers[slot]
                if w.conn in ready or w.process.sentinel in ready:
                    try:
                        if w.conn.poll():
                            out[index] = ("ok", w.conn.recv(), now - started)
                            del busy[slot]
                            continue
                    except (EOFError, OSError):
                        pass
                    if not w.process.is_alive() or w.conn.closed:
                        w.process.join(1)
                        out[index] = ("died", _signal_text(w.process.exitcode), now - started)
                        w.kill()
                        self.workers[slot] = None
                        del busy[slot]
                        continue
                if now - started >= timeout:
                    w.kill()
                    self.workers[slot] = None
                    out[index] = ("timeout", None, now - started)
                    del busy[slot]
        return out


class LocalBuilder(Builder):
    """Compile candidates in parallel worker processes on this machine.

    Parameters
    ----------
    timeout : float
        Seconds one candidate may take to instantiate and compile; a worker that
        takes longer is killed (``BUILD_TIMEOUT``) and replaced.
    n_parallel : int, optional
        Worker processes (default: the CPUs this process may run on, its affinity).
    build_kwargs : dict, optional
        ``{"cuda_arch": "sm_90"}`` compiles "cuda" targets that name no ``-arch``
        for that GPU; ``{"checks": {"gpu": {"max_threads_per_block": 512, ...}}}``
        (TVM's form; also ``max_shared_memory_per_block``, ``max_thread_x/y/z``,
        ``max_local_memory_per_thread``) tightens the GPU limits candidates are
        checked against.  They override what the runner asks for.
    build_func : str
        ``"default"``: export each module with ``export_library`` (the only format
        tecc has; TVM's ``"ndk"`` and ``"stackvm"`` do not exist here).

    Notes
    -----
    Workers are forked from this process, so templates registered here (in
    ``__main__`` too) are known there; a template registered after a worker
    started makes that worker restart.  Every worker compiles through the shared
    on-disk caches of the C compiler and NVRTC.
    """

    def __init__(self, timeout=10, n_parallel=None, build_kwargs=None, build_func="default"):
        _check_positive("LocalBuilder", "timeout", timeout)
        if n_parallel is not None and (not isinstance(n_parallel, int) or isinstance(n_parallel, bool)
                                       or n_parallel < 1):
            raise MeasureError(f"LocalBuilder: n_parallel must be a positive int or None, got {n_parallel!r}")
        if build_func != "default":
            raise MeasureError(f"LocalBuilder: unknown build_func {build_func!r}; tecc exports modules one way "
                               "(export_library), so use build_func=\"default\"")
        if sys.platform == "win32":  # pragma: no cover - tecc's workers fork
            raise MeasureError("LocalBuilder needs fork() to start its workers; run on Linux or macOS")
        if n_parallel is None:  # the CPUs this process may use (its affinity: a container's, a taskset's)
            from ...runtime.peaks import usable_cpus  # noqa: PLC0415

            n_parallel = len(usable_cpus())
        super().__init__(timeout, max(1, n_parallel), _check_build_kwargs(build_kwargs))
        self.build_func = build_func
        self.user_build_kwargs = dict(self.build_kwargs)
        self._pool = None
        self.tmp_dir = None
        self._batch = 0
        # the newest batches' directories, oldest first (see _new_tmp_dir)
        self._batch_dirs = []
        self._finalizer = weakref.finalize(self, _remove_dirs, self._batch_dirs)

    def set_task(self, task, build_kwargs=None):
        """Build ``task``'s candidates from now on; ``build_kwargs`` (from the
        runner) come under the ones given to the constructor."""
        self.task = task
        self.build_kwargs = {**_check_build_kwargs(build_kwargs), **self.user_build_kwargs}

    def build(self, measure_inputs):
        """Compile ``measure_inputs`` (a list of MeasureInput).

        Returns
        -------
        list
            One per input, in order: a :class:`BuildResult`, or a
            :class:`~.measure.MeasureResult` holding the error
            (``INSTANTIATION_ERROR``, ``COMPILE_HOST``, ``COMPILE_DEVICE``,
            ``BUILD_TIMEOUT``).
        """
        from ...tir.transform.pipeline import PassContext  # noqa: PLC0415

        measure_inputs = list(measure_inputs)
        if not measure_inputs:
            return []
        self._new_tmp_dir()
        _import_compiler()  # once here, not in every worker
        ctx = PassContext.current()  # the workers lower and compile under the same options
        out = [None] * len(measure_inputs)
        by_task = {}
        for i, inp in enumerate(measure_inputs):
            by_task.setdefault(id(inp.task), []).append(i)
        if self._pool is None:
            self._pool = _ForkPool(self.n_parallel)
        self._batch += 1
        for indices in by_task.values():
            task = measure_inputs[indices[0]].task
            try:
                blob = pickle.dumps(task)
                jobs = []
                for i in indices:
                    inp = measure_inputs[i]
                    suffix = "tecc" if _is_cuda(inp.target if inp.target is not None else task.target) else "so"
                    jobs.append(pickle.dumps({"input": inp._replace(task=None), "tmp_dir": self.tmp_dir,
                                              "build_kwargs": self.build_kwargs, "pass_context": ctx,
                                              "filename": f"b{self._batch}_{i}.{suffix}"}))
            except Exception as err:  # noqa: BLE001 -- cannot reach the workers; each input says why
                for i in indices:
                    out[i] = MeasureResult([f"the candidate cannot be sent to the build workers: {_message(err)}"],
                                           int(MeasureErrorNo.UNKNOWN_ERROR), 0.0, time.time())
                continue
            outcomes = self._pool.run(jobs, task.name, (id(task), hash(blob)), blob, self.timeout)
            for i, (kind, value, seconds) in zip(indices, outcomes):
                if kind == "ok":
                    out[i] = value
                elif kind == "timeout":
                    out[i] = MeasureResult([f"building took more than the timeout of {self.timeout} s; the build "
                                            "worker was killed"], int(MeasureErrorNo.BUILD_TIMEOUT), seconds,
                                           time.time())
                else:
                    out[i] = MeasureResult([f"the build worker died ({value}) while building this candidate"],
                                           int(MeasureErrorNo.COMPILE_HOST), seconds, time.time())
        return out

    def _new_tmp_dir(self):
        """A fresh directory for this batch's files.  The directories of the last
        ``KEPT_BATCH_DIRS - 1`` batches stay: on a GPU runner the tuning loop builds
        the next batch while this one is measured (``Runner.overlaps_builds``), and
        the runner loads each candidate's file from its batch's directory then."""
        self.tmp_dir = tempfile.mkdtemp(prefix="tecc-build-")
        self._batch_dirs.append(self.tmp_dir)
        while len(self._batch_dirs) > KEPT_BATCH_DIRS:
            shutil.rmtree(self._batch_dirs.pop(0), ignore_errors=True)

    def close(self):
        """Stop the workers and remove the built files."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        _remove_dirs(self._batch_dirs)
        self.tmp_dir = None


#: batch directories a LocalBuilder keeps: the batch being measured and the one
#: built ahead of it (the tuning loop builds at most one batch ahead)
KEPT_BATCH_DIRS = 2


def _remove_dirs(dirs: list) -> None:
    while dirs:
        shutil.rmtree(dirs.pop(), ignore_errors=True)


def _import_compiler():
    import importlib  # noqa: PLC0415

    for name in ("driver", "cpu_fallback", "cuda_codegen"):
        importlib.import_module(f"...{name}", __package__)


def _check_positive(who, name, value, allow_zero=False):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise MeasureError(f"{who}: {name} must be a {'non-negative' if allow_zero else 'positive'} number, "
                           f"got {value!r}")


# ---------------------------------------------------------------------------------
# the reference: inputs, expected outputs, comparison
# ---------------------------------------------------------------------------------
def _index_bounds(sch) -> dict:
    """Placeholder -> the smallest extent of a dimension it indexes, for every input
    read inside another tensor's index (``A[Idx[i]]``)."""
    from ...te.tensor import ComputeOp, PlaceholderOp  # noqa: PLC0415
    from ...tir import expr as E  # noqa: PLC0415
    from ...tir.functor import post_order_visit  # noqa: PLC0415

    bounds = {}

    def load(node):
        if not isinstance(node, E.ProducerLoad):
            return
        for dim, index in zip(node.producer.shape, node.indices):
            extent = E.const_int_value(dim) or 1

            def inner(n, extent=extent):
                if isinstance(n, E.ProducerLoad) and isinstance(n.producer.op, PlaceholderOp):
                    bounds[n.producer] = min(bounds.get(n.producer, extent), extent)

            post_order_visit(index, inner)

    for stage in sch.stages:
        if isinstance(stage.op, ComputeOp):
            for body in stage.op.body:
                post_order_visit(body, load)
    return bounds


def _clearly_matches(got, expected, dtype: str, rtol: float, xp=np) -> bool:
    """The common case of :func:`compare_output`, in a few passes of the arrays' own
    precision: every expected value finite and every difference within half the
    tolerance (a NaN in ``got`` fails ``<=``).  False sends the comparison to the
    exact float64 path, which also words the message.  (A 4096x4096 float32 output,
    every SGEMM candidate of a GPU tuning run: about 6x faster than the float64
    path.)  ``xp`` is the arrays' module: numpy, or cupy for outputs checked where
    they were computed."""
    if rtol == 0.0:
        return got.dtype == expected.dtype and bool(xp.array_equal(got, expected))
    if dtype not in ("float16", "float32", "float64") or got.dtype != expected.dtype:
        return False
    work = xp.float64 if dtype == "float64" else xp.float32
    e = expected.astype(work, copy=False)
    bound = xp.abs(e)
    largest = float(bound.max()) if bound.size else 1.0
    if not np.isfinite(largest):  # an infinity or a NaN expected (max propagates NaN)
        return False
    atol = rtol * max(1.0, largest)
    bound *= rtol
    bound += atol
    bound *= 0.5
    diff = xp.subtract(got, e, dtype=work)
    xp.abs(diff, out=diff)
    return bool(xp.less_equal(diff, bound).all())


def _as_float(arr: np.ndarray, dtype: str) -> np.ndarray:
    from ...runtime import dtypes  # noqa: PLC0415

    return dtypes.numbers(arr, dtype).astype(np.float64)  # a storage float's bits decoded


def reference_inputs(arg_info, index_bounds=None, seed=SEED) -> list:
    """Deterministic inputs of a task's arguments.

    ``arg_info`` is ``(shape, dtype)`` per argument.  Argument ``i`` draws from a
    generator seeded with ``[seed, i]``: floats uniformly in [-1, 1); signed
    integers in [-8, 8), unsigned ones in [0, 16); booleans 0 or 1.  An integer
    input that the compute reads inside another tensor's index (``A[Idx[i]]``) takes
    values in [0, n), n the smallest extent it indexes (``index_bounds``, position ->
    n), so that the reference stays in bounds.

    Returns
    -------
    list of numpy.ndarray
        In storage dtypes (``bfloat16`` as its ``uint16`` bits; a narrow
        integer's values, clipped to its range, as its bits; float8_e8m0fnu, which
        holds only powers of two, powers of two from 1/16 to 8).
    """
    from ...runtime import dtypes  # noqa: PLC0415

    index_bounds = index_bounds or {}
    out = []
    for i, (shape, dtype) in enumerate(arg_info):
        rng = np.random.default_rng([seed, i])
        if dtype == "bool":
            arr = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.startswith(("int", "uint")):
            if i in index_bounds:
                lo, hi = 0, max(1, index_bounds[i])
            else:
                lo, hi = (0, 16) if dtype.startswith("uint") else (-8, 8)
                tlo, thi = dtypes.int_range(dtype)
                lo, hi = max(lo, tlo), min(hi, thi + 1)
            arr = rng.integers(lo, hi, size=shape)
            arr = dtypes.to_storage(arr, dtype) if dtypes.is_narrow(dtype) else arr.astype(dtypes.storage(dtype))
        elif dtype == "float8_e8m0fnu":
            arr = dtypes.encode(2.0 ** rng.integers(-4, 4, size=shape), dtype)
        elif dtypes.storage_float(dtype) is not None:
            arr = dtypes.encode(rng.uniform(-1.0, 1.0, size=shape), dtype)
        else:
            arr = rng.uniform(-1.0, 1.0, size=shape).astype(dtypes.storage(dtype))
        out.append(np.ascontiguousarray(arr))
    return out


def _unwritten(expected, dtype: str, xp=np):
    """What an output holds before a candidate runs: different from the expected
    value everywhere (NaN for floats), so an element it never writes is caught.
    ``xp``: the module of ``expected`` (numpy, or cupy on the GPU)."""
    from ...runtime import dtypes  # noqa: PLC0415

    if dtype in TOLERANCES:
        fmt = dtypes.storage_float(dtype)
        if fmt is not None and fmt.nan_code is not None:  # its NaN's bits
            return xp.full(expected.shape, fmt.nan_code, dtype=expected.dtype)
        if fmt is not None:  # float4_e2m1fn has no NaN: the largest value of the other sign (6 and -6 apart)
            positive = (expected & xp.asarray(fmt.sign_bit, expected.dtype)) == 0
            return xp.where(positive, fmt.sign_bit | fmt.max_code, fmt.max_code).astype(expected.dtype)
        return xp.full(expected.shape, xp.nan, dtype=expected.dtype)
    if expected.dtype == xp.bool_:
        return ~expected
    return (expected + xp.ones((), expected.dtype)).astype(expected.dtype)


def compare_output(got: np.ndarray, expected: np.ndarray, dtype: str, what: str):
    """None if ``got`` matches ``expected`` within :data:`TOLERANCES` (exactly, for
    integers and booleans), else a message with the number of mismatches and the
    largest absolute and relative differences."""
    if got.shape != expected.shape:
        return f"{what} has shape {got.shape}, the reference {expected.shape}"
    rtol = TOLERANCES.get(dtype, 0.0)
    if _clearly_matches(got, expected, dtype, rtol):
        return None
    g, e = _as_float(got, dtype), _as_float(expected, dtype)
    both_nan = np.isnan(g) & np.isnan(e)
    finite = e[np.isfinite(e)]
    atol = rtol * max(1.0, float(np.abs(finite).max()) if finite.size else 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(g - e)
        diff = np.where(both_nan | (g == e), 0.0, diff)  # equal infinities differ by nan otherwise
        diff = np.where(np.isnan(diff), np.inf, diff)
        bad = diff > atol + rtol * np.abs(e)
    count = int(bad.sum())
    if not count:
        return None
    where = np.unravel_index(int(np.argmax(diff)), diff.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(e))
    rel = np.where(np.isnan(rel), np.inf, rel)
    rwhere = np.unravel_index(int(np.argmax(rel)), rel.shape)
    tol = f"rtol={rtol:g}, atol={atol:g}" if rtol else "exact"
    return (f"{what} differs from the reference in {count} of {bad.size} elements: largest absolute difference "
            f"{float(diff[where]):.6g} at {tuple(int(x) for x in where)} (got {float(g[where]):.6g}, expected "
            f"{float(e[where]):.6g}), largest relative difference {float(rel[rwhere]):.6g} at "
            f"{tuple(int(x) for x in rwhere)} ({tol})")


class _Reference:
    """The oracle of one task: the inputs every candidate gets, the expected
    outputs, and the shapes the arguments must have."""

    def __init__(self, key, arg_info, outputs, inputs, expected=None, names=()):
        self.key = key
        self.arg_info = tuple(arg_info)
        self.names = tuple(names)  # the arguments' tensor names, for messages
        self.outputs = tuple(outputs)  # positions of the output arguments
        self.inputs = inputs
        self.expected = expected  # position -> array


def _naive_reference(task, ref_input, tmp_dir):
    """``(arg_info, outputs, inputs, module path)``: the task's compute under a naive
    schedule, built for "llvm" and exported to ``tmp_dir``."""
    import tecc  # noqa: PLC0415
    from ... import te  # noqa: PLC0415
    from ...te.tensor import PlaceholderOp  # noqa: PLC0415
    from ..task.space import FallbackConfigEntity  # noqa: PLC0415

    errors = []
    args = None
    candidates = [FallbackConfigEntity()]
    space = task.config_space
    if space is not None and len(space):
        candidates.append(space.get(0))
    for config in candidates:
        try:
            _, args = task.instantiate(config)  # under the task's target
            break
        except Exception as err:  # noqa: BLE001 -- try the next way of getting the compute
            errors.append(_message(err))
    if args is None:
        raise MeasureError(f"the correctness reference of task {task.name!r} cannot be made: its template failed "
                           f"under the fallback config and under config 0 ({'; '.join(errors)})")
    outputs = [i for i, a in enumerate(args) if not isinstance(a.op, PlaceholderOp)]
    if not outputs:
        raise MeasureError(f"task {task.name!r}: the template's arguments are all placeholders; return the "
                           "computed outputs too, e.g. [A, B, C]")
    ops = []
    for i in outputs:
        if all(args[i].op is not op for op in ops):
            ops.append(args[i].op)
    sch = te.create_schedule(ops)
    arg_info = tuple((_const_shape(a), str(a.dtype)) for a in args)
    if ref_input is None:
        bounds = _index_bounds(sch)
        index_bounds = {i: bounds[a] for i, a in enumerate(args) if a in bounds}
        inputs = reference_inputs(arg_info, index_bounds)
    else:
        inputs = _check_ref_input(ref_input, arg_info, task)
    try:
        built = tecc.build(sch, list(args), target="llvm")
        # a new name per reference: the runner's worker loads files in place, and a
        # process keeps a library it loaded by its path
        path = os.path.join(tmp_dir, f"reference_{os.getpid()}_{time.time_ns()}.so")
        built.export_library(path)
    except Exception as err:  # noqa: BLE001
        raise MeasureError(f"the correctness reference of task {task.name!r} (its compute with a naive "
                           f"schedule, on llvm) does not build: {_message(err)}; give the runner ref_input and "
                           "ref_output instead") from None
    return arg_info, outputs, inputs, path, tuple(a.name for a in args)


def _check_ref_input(ref_input, arg_info, task) -> list:
    from ...runtime import dtypes  # noqa: PLC0415

    if len(ref_input) != len(arg_info):
        raise MeasureError(f"runner.ref_input has {len(ref_input)} arrays, but task {task.name!r} has "
                           f"{len(arg_info)} arguments; give one array per argument (outputs included)")
    out = []
    for i, (arr, (shape, dtype)) in enumerate(zip(ref_input, arg_info)):
        arr = np.asarray(arr)
        stored = dtypes.as_storage(arr, dtype)
        arr = arr if stored is None else stored  # ml_dtypes' bfloat16, or its bits: the bits
        if arr.shape != tuple(shape) or arr.dtype != dtypes.storage(dtype):
            raise MeasureError(f"runner.ref_input[{i}] is {arr.dtype}{list(arr.shape)}, but argument {i} of task "
                               f"{task.name!r} is {dtype}{list(shape)}")
        out.append(np.ascontiguousarray(arr))
    return out


# ---------------------------------------------------------------------------------
# the runner's worker: a fresh interpreter, restarted when it dies or hangs
# ---------------------------------------------------------------------------------
_WORKER_CODE = ("import sys; from tecc.tuner.measure.local import _run_worker_main; "
                "_run_worker_main(int(sys.argv[1]), int(sys.argv[2]))")


class _RunWorker:
    """One worker process; :meth:`request` sends a message and waits for the answer
    under a timeout: ``("ok", reply)``, ``("timeout", None)`` or ``("died", why)``."""

    START_TIMEOUT = 120.0

    def __init__(self, cwd):
        from multiprocessing.connection import Connection  # noqa: PLC0415

        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.stderr = tempfile.TemporaryFile(prefix="tecc-run-stderr-")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_CODE, str(to_child_r), str(from_child_w)],
                pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=self.stderr, cwd=cwd, start_new_session=True)
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.send_conn = Connection(to_child_w, readable=False)
        self.recv_conn = Connection(from_child_r, writable=False)
        self.runs = 0
        self.reference_key = None
        kind, info = self.request(None, self.START_TIMEOUT)
        if kind != "ok":
            tail = self.stderr_tail(0)
            self.kill()
            raise MeasureError(f"the runner's worker process did not start ({info or 'timed out'}): {tail}")
        self.info = info

    def request(self, message, timeout):
        self._stderr_mark = self.stderr.tell() if not self.stderr.closed else 0
        try:
            if message is not None:
                self.send_conn.send(message)
            if not self.recv_conn.poll(timeout):
                return "timeout", None
            return "ok", self.recv_conn.recv()
        except (EOFError, OSError):
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                pass
            return "died", _signal_text(self.process.returncode)
        except BaseException:  # interrupted mid-run: the answer would go to the next request
            self.kill()
            raise

    def stderr_tail(self, start=None, limit=600) -> str:
        try:
            self.stderr.flush()
            self.stderr.seek(0, os.SEEK_END)
            end = self.stderr.tell()
            begin = max(self._stderr_mark if start is None else start, end - limit)
            self.stderr.seek(begin)
            text = self.stderr.read(end - begin).decode("utf-8", "replace").strip()
            self.stderr.seek(0, os.SEEK_END)
            return text
        except (OSError, ValueError, AttributeError):
            return ""

    def kill(self):
        _kill(self.process)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self.close_files()

    def stop(self):
        try:
            self.send_conn.send(("exit",))
            self.process.wait(2)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            _kill(self.process)
        self.close_files()

    def close_files(self):
        for f in (self.send_conn, self.recv_conn, self.stderr):
            try:
                f.close()
            except OSError:
                pass


def _run_worker_main(read_fd: int, write_fd: int) -> None:
    """The runner's worker: loads built modules and runs them on the reference."""
    import warnings  # noqa: PLC0415
    from multiprocessing.connection import Connection  # noqa: PLC0415

    warnings.simplefilter("ignore", RuntimeWarning)  # the emulator's one-time notice
    parent = os.getppid()
    conn_in, conn_out = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    import tecc  # noqa: PLC0415

    gpu = bool(tecc.cuda(0).exist)
    conn_out.send({"gpu": gpu, "arch": tecc.cuda(0).arch if gpu else None, "pid": os.getpid()})
    state = {"reference": None, "gpu": gpu}
    while True:
        try:
            message = _recv_while_parent_lives(conn_in, parent)
        except (EOFError, OSError):
            return
        if message[0] == "exit":
            return
        try:
            reply = _WORKER_HANDLERS[message[0]](state, *message[1:])
        except Exception as err:  # noqa: BLE001 -- the candidate raised: report it, stay alive
            reply = {"error_no": int(MeasureErrorNo.RUNTIME_DEVICE), "message": _message(err),
                     "restart": gpu}  # a CUDA error may leave the context unusable
        conn_out.send(reply)
        if reply.get("restart"):
            return


def _load(path, loader):
    import tecc  # noqa: PLC0415

    if loader is not None:
        return loader(path)
    # a candidate's file lives as long as its batch: loaded in place, not copied into
    # the module cache (a tuning run would leave one copy per trial there)
    return tecc.runtime.load_module(path, cache=False)


def _worker_reference(state, reference, path):
    """Run the reference module on the reference inputs (unless the outputs were
    given) and keep both."""
    if reference.expected is None:
        arrays = [a.copy() for a in reference.inputs]
        _load(path, None)(*arrays)
        reference.expected = {i: arrays[i] for i in reference.outputs}
    state["reference"] = reference
    return {"expected": reference.expected}


def _worker_measure(state, job):
    import tecc  # noqa: PLC0415

    ref = state["reference"]
    if ref is None or ref.key != job["reference_key"]:
        return {"error_no": int(MeasureErrorNo.UNKNOWN_ERROR), "message": "the worker holds no reference"}
    started = time.perf_counter()
    mod = _load(job["path"], job["loader"])
    loaded = time.perf_counter()
    on_gpu = job["cuda"] and state.get("gpu")
    # on a GPU the inputs and the expected outputs stay there for the whole task: a
    # candidate gets device copies and is checked where it ran (a 4096^2 SGEMM
    # candidate moved 256 MB each way and compared 16M floats on the host before)
    xp, inputs, expected = _device_reference(state, ref) if on_gpu else (np, ref.inputs, ref.expected)
    arrays = [a.copy() for a in inputs]
    for i in ref.outputs:
        arrays[i] = _unwritten(expected[i], ref.arg_info[i][1], xp)
    mod(*arrays)
    for i in ref.outputs:
        dtype = ref.arg_info[i][1]
        if xp is not np and arrays[i].shape == expected[i].shape \
                and _clearly_matches(arrays[i], expected[i], dtype, TOLERANCES.get(dtype, 0.0), xp):
            continue
        got = arrays[i] if xp is np else arrays[i].get()  # the host words the message
        problem = compare_output(got, ref.expected[i], dtype,
                                 f"output {ref.names[i]!r} (argument {i})" if ref.names else f"argument {i}")
        if problem:
            return {"error_no": int(MeasureErrorNo.WRONG_ANSWER), "message": problem}
    checked = time.perf_counter()
    dev = tecc.cuda(0) if job["cuda"] else tecc.cpu(0)
    number, repeat, min_repeat_ms = job["number"], job["repeat"], job["min_repeat_ms"]
    if job["flush"] and not job["cuda"]:
        costs = _time_with_flush(mod, arrays, number, repeat, min_repeat_ms)
    elif job["cuda"]:  # CUDA events on a GPU (the emulator's wall clock without one)
        costs = list(mod.time_evaluator(mod.entry_name, dev, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                                        flush_l2=job.get("flush_l2", False))(*arrays).results)
    else:
        costs = list(mod.time_evaluator(mod.entry_name, dev, number=number, repeat=repeat,
                                        min_repeat_ms=min_repeat_ms)(*arrays).results)
    return {"error_no": 0, "costs": costs,
            "phases": {"load": loaded - started, "check": checked - loaded, "timing": time.perf_counter() - checked}}


def _device_reference(state, ref):
    """``(cupy, inputs, expected outputs)`` of ``ref`` on the GPU, copied there once
    per reference."""
    import cupy  # noqa: PLC0415

    cached = state.get("device")
    if cached is None or cached[0] is not ref:
        cached = state["device"] = (ref, [cupy.asarray(a) for a in ref.inputs],
                                    {i: cupy.asarray(ref.expected[i]) for i in ref.outputs})
    return cupy, cached[1], cached[2]


_FLUSH_BYTES = 64 << 20


def _time_with_flush(mod, arrays, number, repeat, min_repeat_ms) -> list:
    """Seconds per run with the CPU caches overwritten before every run (untimed)."""
    from ...runtime import timing  # noqa: PLC0415

    flush = np.zeros(_FLUSH_BYTES // 8, dtype=np.int64)
    run_n, finish = mod._runner(mod.entry_name, arrays, {})

    def flushed(n):
        total = 0.0
        for _ in range(n):
            np.add(flush, 1, out=flush)
            total += run_n(1)
        return total

    try:
        return timing.sample(flushed, number, repeat, min_repeat_ms)
    finally:
        finish()


_WORKER_HANDLERS = {"reference": _worker_reference, "measure": _worker_measure}

#: the parts of :attr:`LocalRunner.time_spent`: ``worker_start`` -- (re)starting the
#: worker process and handing it the reference; ``load`` -- loading each candidate's
#: module; ``check`` -- its checked run against the reference; ``timing`` -- its timed
#: runs; ``other`` -- the rest of each request (the pipe, a failed candidate's run
#: up to its error, a timeout's wait); ``cooldown`` -- ``cooldown_interval`` sleeps
RUN_PARTS = ("worker_start", "load", "check", "timing", "other", "cooldown")


class LocalRunner(Runner):
    """Run and time built candidates on this machine, one at a time, each in an
    isolated worker process, and check every output against the task's reference.

    Parameters
    ----------
    timeout : float
        Seconds one candidate may run (loading, the checked run and the timing);
        past it the worker is killed (``RUN_TIMEOUT``).
    number, repeat : int
        Each of ``repeat`` measurements runs the function ``number`` times; costs
        holds one mean per repeat (seconds).
    min_repeat_ms : float
        Grow ``number`` until one measurement lasts this long.
    cooldown_interval : float
        Seconds to sleep after each measured candidate.
    enable_cpu_cache_flush : bool
        Overwrite the CPU caches before every timed run (CPU targets; best with
        ``number=1``).
    enable_l2_flush : bool
        Overwrite the GPU's L2 cache (a buffer twice its size) before every timed
        run of a "cuda" candidate on a GPU, untimed: each run starts cold, as a
        kernel in a model whose neighbours evicted its inputs does.
    module_loader : callable, optional
        ``loader(path) -> Module`` run in the worker instead of
        ``tecc.runtime.load_module``; it must be importable there (a module-level
        function of an installed module).

    Attributes
    ----------
    ref_input : list of numpy.ndarray or None
        One array per argument of the task: the inputs every candidate gets
        (outputs' entries give only their shape) instead of generated ones.
    ref_output : list of numpy.ndarray or None
        One array per output argument: the expected outputs, instead of those of
        the naive schedule (needs ``ref_input``).
    time_spent : dict
        Seconds spent running candidates since the runner was made, by part
        (:data:`RUN_PARTS`): what a trial's run costs beyond its timed runs.
    """

    def __init__(self, timeout=10, number=4, repeat=3, min_repeat_ms=0, cooldown_interval=0.1,
                 enable_cpu_cache_flush=False, module_loader=None, enable_l2_flush=False):
        _check_positive("LocalRunner", "timeout", timeout)
        for name, value in (("number", number), ("repeat", repeat)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise MeasureError(f"LocalRunner: {name} must be an int >= 1, got {value!r}")
        _check_positive("LocalRunner", "min_repeat_ms", min_repeat_ms, allow_zero=True)
        _check_positive("LocalRunner", "cooldown_interval", cooldown_interval, allow_zero=True)
        if module_loader is not None:
            try:
                pickle.dumps(module_loader)
            except Exception:  # noqa: BLE001
                raise MeasureError("LocalRunner: module_loader must be a module-level function the worker process "
                                   f"can import (it is pickled by name); {module_loader!r} is not") from None
        super().__init__(timeout, 1)
        self.number, self.repeat, self.min_repeat_ms = number, repeat, min_repeat_ms
        self.cooldown_interval = cooldown_interval
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)
        self.enable_l2_flush = bool(enable_l2_flush)
        self.module_loader = module_loader
        self._ref_input = None
        self._ref_output = None
        self._reference = None
        self._worker = None
        self._holder = [None]  # the worker, for the finalizer
        self._tmp_dir = tempfile.mkdtemp(prefix="tecc-run-")
        self._finalizer = weakref.finalize(self, _close_runner, self._holder, self._tmp_dir)
        self._generation = 0
        self._has_gpu = False  # what the worker found
        #: seconds spent since the runner was made, by part (:data:`RUN_PARTS`)
        self.time_spent = dict.fromkeys(RUN_PARTS, 0.0)

    # the reference ---------------------------------------------------------------
    @property
    def ref_input(self):
        """Fixed inputs (one array per argument), or None for generated ones."""
        return self._ref_input

    @ref_input.setter
    def ref_input(self, value):
        self._ref_input = None if value is None else [np.asarray(v) for v in value]
        self._reference = None

    @property
    def ref_output(self):
        """Fixed expected outputs (one array per output argument), or None."""
        return self._ref_output

    @ref_output.setter
    def ref_output(self, value):
        self._ref_output = None if value is None else [np.asarray(v) for v in value]
        self._reference = None

    def set_task(self, task):
        """Measure ``task``'s candidates from now on: starts the worker and computes
        the task's reference outputs.

        Raises
        ------
        MeasureError
            If the reference cannot be made (the template fails under its fallback
            config, the naive schedule does not build or crashes, ``ref_input``
            does not fit the arguments).
        """
        self.task = task
        self._reference = None
        self._make_reference()

    def get_build_kwargs(self) -> dict:
        """``{"cuda_arch": ..., "cpu_emulation": ...}`` for a "cuda" task: the
        worker's GPU, or the emulator's architecture where there is none, and
        whether candidates need their CPU emulation (only without a GPU)."""
        if self.task is None or self.task.target is None or not _is_cuda(self.task.target):
            return {}
        from ...cuda_codegen import EMULATION_ARCH  # noqa: PLC0415

        info = self._ensure_worker().info
        # on a GPU the candidates never run on the emulation: the builder skips its C compile
        return {"cuda_arch": info["arch"] or EMULATION_ARCH, "cpu_emulation": not info["gpu"]}

    @property
    def overlaps_builds(self) -> bool:
        """True for a "cuda" task timed on a real GPU: CUDA events (with the stream
        held, runtime.timing) do not see the builder's load on the CPU, so the next
        batch compiles while this one runs.  CPU timings and the emulator keep the
        machine to themselves."""
        return (self.task is not None and self.task.target is not None and _is_cuda(self.task.target)
                and self._ensure_worker().info["gpu"])

    def _ensure_worker(self) -> _RunWorker:
        w = self._worker
        if w is not None and (w.process.poll() is not None or w.runs >= _RUNS_PER_WORKER):
            w.stop()
            w = None
        if w is None:
            os.makedirs(self._tmp_dir, exist_ok=True)
            w = _RunWorker(self._tmp_dir)
            self._worker = self._holder[0] = w
            self._has_gpu = bool(w.info["gpu"])
        return w

    def _drop_worker(self, kill=True):
        if self._worker is not None:
            if kill:
                self._worker.kill()
            else:
                self._worker.stop()
        self._worker = self._holder[0] = None

    def _make_reference(self):
        task = self.task
        if task is None:
            raise MeasureError("LocalRunner.run: no task; call runner.set_task(task) first (create_measure_batch "
                               "does)")
        if self._ref_output is not None and self._ref_input is None:
            raise MeasureError("LocalRunner: ref_output needs ref_input (the inputs those outputs belong to)")
        os.makedirs(self._tmp_dir, exist_ok=True)  # again, after close()
        arg_info, outputs, inputs, path, names = _naive_reference(task, self._ref_input, self._tmp_dir)
        expected = None
        if self._ref_output is not None:
            if len(self._ref_output) != len(outputs):
                raise MeasureError(f"runner.ref_output has {len(self._ref_output)} arrays, but task {task.name!r} "
                                   f"has {len(outputs)} outputs (arguments {outputs})")
            expected = {}
            for i, arr in zip(outputs, self._ref_output):
                ref_in = inputs[i]
                if arr.shape != ref_in.shape or arr.dtype != ref_in.dtype:
                    raise MeasureError(f"runner.ref_output for argument {i} is {arr.dtype}{list(arr.shape)}, "
                                       f"the argument is {ref_in.dtype}{list(ref_in.shape)}")
                expected[i] = np.ascontiguousarray(arr)
        self._generation += 1
        reference = _Reference((os.getpid(), self._generation), arg_info, outputs, inputs, expected, names)
        worker = self._ensure_worker()
        kind, reply = worker.request(("reference", reference, path), max(60.0, 10 * self.timeout))
        if kind != "ok" or reply.get("error_no"):
            why = {"timeout": "it ran past the timeout", "died": f"the process died ({reply})"}.get(
                kind, reply.get("message", "") if isinstance(reply, dict) else str(reply))
            tail = worker.stderr_tail() if kind == "died" else ""
            self._drop_worker()
            raise MeasureError(f"the correctness reference of task {task.name!r} (its compute with a naive "
                               f"schedule) failed to run: {why} {tail}; if an integer input is used as an "
                               "index, give runner.ref_input with valid values")
        reference.expected = reply["expected"]
        worker.reference_key = reference.key
        self._reference = reference

    def _worker_with_reference(self) -> _RunWorker:
        worker = self._ensure_worker()
        if worker.reference_key != self._reference.key:
            kind, reply = worker.request(("reference", self._reference, None), max(60.0, 10 * self.timeout))
            if kind != "ok" or reply.get("error_no"):
                self._drop_worker()
                raise MeasureError(f"the runner's worker could not take the reference: {kind} {reply}")
            worker.reference_key = self._reference.key
        return worker

    # running -------------------------------------------------------------------
    def run(self, measure_inputs, build_results):
        """Run each built candidate; one :class:`~.measure.MeasureResult` per input,
        in order (a build error is passed through)."""
        if len(measure_inputs) != len(build_results):
            raise MeasureError(f"LocalRunner.run: {len(measure_inputs)} inputs but {len(build_results)} build "
                               "results")
        if self._reference is None:
            self._make_reference()
        results = []
        for inp, built in zip(measure_inputs, build_results):
            if isinstance(built, MeasureResult):
                results.append(built)
                continue
            results.append(self._run_one(inp, built))
        return results

    def _run_one(self, inp, built) -> MeasureResult:
        start = time.time()  # reset once the worker is ready: restarting it is not the candidate's time
        cuda = _is_cuda(inp.target if inp.target is not None else self.task.target)
        ref = self._reference

        def result(costs, error_no):
            emulated = cuda and not self._has_gpu
            return MeasureResult(costs, int(error_no), built.time_cost + time.time() - start, time.time(), emulated)

        if tuple(built.arg_info) != ref.arg_info:
            return result([f"the candidate's arguments {_describe(built.arg_info)} differ from the reference's "
                           f"{_describe(ref.arg_info)}; its outputs cannot be checked"], MeasureErrorNo.WRONG_ANSWER)
        try:
            worker = self._worker_with_reference()
        except MeasureError as err:
            return result([str(err)], MeasureErrorNo.UNKNOWN_ERROR)
        self.time_spent["worker_start"] += time.time() - start
        start = time.time()
        job = {"path": built.filename, "reference_key": ref.key, "cuda": cuda, "loader": self.module_loader,
               "number": self.number, "repeat": self.repeat, "min_repeat_ms": self.min_repeat_ms,
               "flush": self.enable_cpu_cache_flush, "flush_l2": self.enable_l2_flush}
        kind, reply = worker.request(("measure", job), self.timeout)
        worker.runs += 1
        phases = reply.get("phases", {}) if kind == "ok" and isinstance(reply, dict) else {}
        for part, seconds in phases.items():
            self.time_spent[part] += seconds
        self.time_spent["other"] += time.time() - start - sum(phases.values())
        if kind == "timeout":
            self._drop_worker()
            return result([f"the run took more than the timeout of {self.timeout} s; its process was killed"],
                          MeasureErrorNo.RUN_TIMEOUT)
        if kind == "died":
            tail = worker.stderr_tail()
            self._drop_worker()
            return result([f"the run's process died ({reply})" + (f"; its stderr ends with: {tail}" if tail else "")],
                          MeasureErrorNo.RUNTIME_DEVICE)
        if reply.get("restart"):
            self._drop_worker(kill=False)
        if reply["error_no"]:
            return result([reply["message"]], reply["error_no"])
        if self.cooldown_interval:
            time.sleep(self.cooldown_interval)
            self.time_spent["cooldown"] += self.cooldown_interval
        return result([float(c) for c in reply["costs"]], MeasureErrorNo.NO_ERROR)

    def close(self):
        """Stop the worker and remove the reference files."""
        self._drop_worker(kill=False)
        shutil.rmtree(self._tmp_dir, ignore_errors=True)


def _describe(arg_info) -> str:
    return "(" + ", ".join(f"{dtype}{list(shape)}" for shape, dtype in arg_info) + ")"


def _close_runner(holder, tmp_dir):
    if holder[0] is not None:
        holder[0].stop()
        holder[0] = None
    shutil.rmtree(tmp_dir, ignore_errors=True)


__all__ = ["BuildResult", "LocalBuilder", "LocalRunner", "TOLERANCES", "build_candidate", "compare_output",
           "reference_inputs"]
