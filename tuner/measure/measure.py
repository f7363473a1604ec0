"""What a measurement is (AutoTVM's ``autotvm.measure.measure``): the input (target,
task, config), the result (costs or an error), the error kinds, the two halves of a
measurement (a :class:`Builder` compiles candidates, a :class:`Runner` runs and times
them) and :func:`create_measure_batch`, which the tuners call.

The local builder and runner (parallel worker processes, one isolated subprocess
per run with a timeout, the correctness oracle) are in :mod:`.local`.
"""
from __future__ import annotations

import enum
from collections import namedtuple

from ...errors import TeccError


class MeasureError(TeccError, ValueError):
    """Measurement set up wrongly (an unknown builder or runner, a bad option)."""


class MeasureInput(namedtuple("MeasureInput", ["target", "task", "config"])):
    """One candidate: ``config`` (a point of ``task.config_space``) of ``task`` on
    ``target``."""


class MeasureResult(namedtuple("MeasureResult", ["costs", "error_no", "all_cost", "timestamp", "emulated"],
                               defaults=(False,))):
    """What measuring a candidate gave.

    costs : list of float
        Seconds per run, one per repeat, when ``error_no`` is 0; otherwise
        ``[message]`` (a string saying what went wrong, and where).
    error_no : int
        A :class:`MeasureErrorNo`.
    all_cost : float
        Seconds the whole measurement took (compiling included).
    timestamp : float
        When it finished (``time.time()``).
    emulated : bool
        The "cuda" candidate ran on tecc's CPU emulator of CUDA (no GPU): it was
        verified and checked for correctness, but its costs are emulator time, which
        says nothing about a GPU (``apply_history_best`` never picks such a time for
        a real GPU).
    """

    @property
    def mean_cost(self) -> float:
        """Seconds per run: the mean of ``costs`` (the one measure of a config that
        tuners, records and plots compare, as in AutoTVM); infinity for a failed or
        empty measurement."""
        if self.error_no != 0 or not self.costs:
            return float("inf")
        return float(sum(self.costs) / len(self.costs))

    def __repr__(self):
        err = MeasureErrorNo(self.error_no).name if self.error_no in _ERRORS else self.error_no
        return (f"MeasureResult(costs={self.costs!r}, error_no={err}, all_cost={self.all_cost:.3f}, "
                f"timestamp={self.timestamp:.0f}" + (", emulated=True)" if self.emulated else ")"))


class MeasureErrorNo(enum.IntEnum):
    """Why a candidate has no time (AutoTVM's numbering, kept in records)."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template refused the config, or it breaks a target limit
    COMPILE_HOST = 2         # lowering or the C compiler / host code failed
    COMPILE_DEVICE = 3       # NVRTC failed
    RUNTIME_DEVICE = 4       # the run crashed or raised (the process died, a CUDA error)
    WRONG_ANSWER = 5         # the output differs from the reference
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


_ERRORS = {e.value for e in MeasureErrorNo}


class Builder:
    """Compiles candidates.  ``set_task`` is called once per tuning run; ``build``
    takes a list of :class:`MeasureInput` and returns one build result per input
    (each either a built artifact or a :class:`MeasureResult` holding the error)."""

    def __init__(self, timeout=10, n_parallel=None, build_kwargs=None):
        self.timeout = timeout
        self.n_parallel = n_parallel
        self.build_kwargs = dict(build_kwargs or {})
        self.task = None

    def set_task(self, task, build_kwargs=None):
        self.task = task
        self.build_kwargs.update(build_kwargs or {})

    def build(self, measure_inputs):
        raise NotImplementedError


class Runner:
    """Runs and times built candidates.  ``run(measure_inputs, build_results)``
    returns one :class:`MeasureResult` per input."""

    def __init__(self, timeout=5, n_parallel=None):
        self.timeout = timeout
        self.n_parallel = n_parallel
        self.task = None

    def set_task(self, task):
        self.task = task

    def get_build_kwargs(self) -> dict:
        """What the builder must know about the device the runner uses."""
        return {}

    @property
    def overlaps_builds(self) -> bool:
        """Whether the next batch may build while this runner measures one: true only
        where the compile load cannot disturb the timings (a runner timing a GPU with
        its events), so a CPU runner keeps the machine to itself."""
        return False

    def run(self, measure_inputs, build_results):
        raise NotImplementedError


def measure_option(builder, runner):
    """The builder and runner of a tuning run (``builder="local"`` and
    ``runner="local"`` are the defaults of :mod:`.local`)."""
    if isinstance(builder, str):
        if builder != "local":
            raise MeasureError(f"measure_option: unknown builder {builder!r}; use \"local\" or "
                               "autotvm.LocalBuilder(...)")
        from .local import LocalBuilder  # noqa: PLC0415

        builder = LocalBuilder()
    if isinstance(runner, str):
        if runner != "local":
            raise MeasureError(f"measure_option: unknown runner {runner!r}; use \"local\" or "
                               "autotvm.LocalRunner(...)")
        from .local import LocalRunner  # noqa: PLC0415

        runner = LocalRunner()
    if not isinstance(builder, Builder):
        raise MeasureError(f"measure_option: builder must be a Builder or \"local\", not {type(builder).__name__}")
    if not isinstance(runner, Runner):
        raise MeasureError(f"measure_option: runner must be a Runner or \"local\", not {type(runner).__name__}")
    return {"builder": builder, "runner": runner}


def create_measure_batch(task, option):
    """``measure_batch(inputs) -> results``: build then run a batch of candidates of
    ``task`` with ``option`` (from :func:`measure_option`).  The callable has
    ``n_parallel`` (how many candidates a batch should hold), ``close()``, and the
    two halves the tuning loop uses to overlap them: ``build_async(inputs)`` (a
    future of the build results; built in a background thread when the runner
    ``overlaps_builds``, else when the future is asked) and ``run(inputs,
    build_results)``."""
    builder, runner = option["builder"], option["runner"]
    runner.set_task(task)
    builder.set_task(task, runner.get_build_kwargs())
    overlap = bool(runner.overlaps_builds)
    pool = []  # the background thread, made on first use

    def run(measure_inputs, build_results):
        results = runner.run(measure_inputs, build_results)
        if len(results) != len(measure_inputs):
            raise MeasureError(f"the runner returned {len(results)} results for {len(measure_inputs)} inputs")
        return results

    def build_async(measure_inputs):
        if not overlap:
            return _Deferred(builder.build, measure_inputs)
        if not pool:
            from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

            pool.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="tecc-build"))
        return pool[0].submit(builder.build, measure_inputs)

    def measure_batch(measure_inputs):
        return run(measure_inputs, builder.build(measure_inputs))

    def close():
        for p in pool:
            p.shutdown(wait=True)
        getattr(builder, "close", lambda: None)()
        getattr(runner, "close", lambda: None)()

    measure_batch.n_parallel = builder.n_parallel or 1
    measure_batch.overlaps_builds = overlap
    measure_batch.build_async = build_async
    measure_batch.run = run
    measure_batch.close = close
    return measure_batch


class _Deferred:
    """A future that computes its value when first asked (a build not overlapped)."""

    def __init__(self, fn, *args):
        self._fn, self._args, self._done, self._value = fn, args, False, None

    def result(self):
        if not self._done:
            self._value, self._done = self._fn(*self._args), True
        return self._value


class RPCRunner(Runner):
    """TVM's runner on a remote device through an RPC tracker.  tecc has no RPC: the
    runner is made as TVM makes it (a tutorial that sets it up in a tuning option
    runs), and refuses when a tuning run starts with it, saying what to use instead.

    Raises
    ------
    MeasureError
        From :meth:`set_task` (the start of a tuning run), :meth:`get_build_kwargs`
        and :meth:`run`.
    """

    def __init__(self, key, host=None, port=None, priority=1, timeout=10, n_parallel=None, number=4, repeat=3,
                 min_repeat_ms=0, **kwargs):  # (priority and TVM's other options: accepted, never used)
        super().__init__(timeout, n_parallel)
        self.key, self.host, self.port = key, host, port
        self.number, self.repeat, self.min_repeat_ms = number, repeat, min_repeat_ms

    def _refuse(self):
        raise MeasureError(f"autotvm.RPCRunner({self.key!r}, {self.host!r}, {self.port!r}): tecc measures on this "
                           "machine only (it has no RPC tracker); run the tuning on the machine with the device and "
                           f"use autotvm.LocalRunner(number={self.number}, repeat={self.repeat}, "
                           f"timeout={self.timeout}, min_repeat_ms={self.min_repeat_ms}), which takes the same "
                           "measuring options")

    def set_task(self, task):
        self._refuse()

    def get_build_kwargs(self) -> dict:
        self._refuse()

    def run(self, measure_inputs, build_results):
        self._refuse()
