"""Tuning records (AutoTVM's ``autotvm.record``): one JSON line per trial, appended.

A line holds what was measured (target, task name, arguments, config), what came of
it (costs or the error, all_cost, timestamp) and where it was measured: the device
name, its compute capability and architecture, and the versions of tecc, NVRTC, the
C compiler and the driver (:func:`environment`).  A "cuda" trial run on tecc's
emulator (no GPU) says so (``"emulated": true``).

Reading is forgiving where a killed process may have left a mark and strict
elsewhere: a truncated *last* line is skipped with a warning; any other line that
is not a record of this format is an error naming the file and the line.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import platform
import warnings

from ..errors import TeccError
from ..runtime.peaks import cpu_name
from .measure.measure import MeasureErrorNo, MeasureInput, MeasureResult
from .task.dispatcher import DispatchContext
from .task.space import ConfigEntity
from .task.task import Task, canonical_args

logger = logging.getLogger("tecc.autotvm")

#: the format of a line; ``"v"`` in every record
LOG_VERSION = "tecc-autotvm-1"


class RecordError(TeccError, ValueError):
    """A records file that cannot be read (another format, a corrupt line)."""


class RecordWarning(UserWarning):
    """Records were skipped or come from elsewhere (another device or compiler)."""


# ---------------------------------------------------------------------------------
# where a trial was measured
# ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _c_compiler() -> str:
    from .. import config  # noqa: PLC0415
    from ..cpu_fallback import compiler  # noqa: PLC0415

    try:
        return compiler.compiler_version(config.c_compiler())
    except TeccError:
        return "none"


@functools.lru_cache(maxsize=None)
def _gpu_environment() -> tuple:
    """``(device, compute capability, driver, emulated)`` of CUDA device 0."""
    from .. import runtime  # noqa: PLC0415

    dev = runtime.cuda(0)
    if not dev.exist:
        return "tecc CUDA emulator (no GPU)", "", "", True
    driver = ""
    try:
        import cupy  # noqa: PLC0415

        v = cupy.cuda.runtime.driverGetVersion()
        driver = f"{v // 1000}.{v % 1000 // 10}"
    except Exception:  # noqa: BLE001 -- the driver version is informative only
        pass
    return dev.name, dev.compute_version, driver, False


@functools.lru_cache(maxsize=None)
def _nvrtc() -> str:
    from ..cuda_codegen import nvrtc  # noqa: PLC0415

    try:
        return ".".join(str(v) for v in nvrtc.nvrtc_version())
    except TeccError:
        return "none"


def environment(target) -> dict:
    """Where a trial for ``target`` is measured on this machine: ``device``,
    ``compute_capability``, ``arch``, ``driver``, ``nvrtc``, ``cc`` (the C
    compiler), ``tecc`` and ``emulated``."""
    from .. import __version__  # noqa: PLC0415

    target = str(target)
    env = {"tecc": __version__, "cc": _c_compiler()}
    if target.split()[0] == "cuda":
        device, cc, driver, emulated = _gpu_environment()
        arch = ""
        for part in target.split():
            if part.startswith("-arch="):
                arch = part.split("=", 1)[1]
        if not arch:  # what the builder compiles a plain "cuda" for: the GPU here, or the emulator's
            if emulated:
                from ..cuda_codegen import EMULATION_ARCH  # noqa: PLC0415
                arch = EMULATION_ARCH
            elif cc:
                arch = "sm_" + str(cc).replace(".", "")
        env.update(device=device, compute_capability=cc, arch=arch, driver=driver, nvrtc=_nvrtc(),
                   emulated=emulated)
    else:
        env.update(device=cpu_name(), compute_capability="", arch=platform.machine(), driver="", nvrtc="",
                   emulated=False)
    return env


#: fields of the environment that make records of one machine not apply to another
_MATTERS = ("device", "compute_capability", "cc", "nvrtc")


# ---------------------------------------------------------------------------------
# one line
# ---------------------------------------------------------------------------------
def _to_tuple(x):
    return tuple(_to_tuple(a) for a in x) if isinstance(x, list) else x


def encode(inp: MeasureInput, result: MeasureResult, protocol="json", env=None) -> str:
    """The record line (no newline) of ``inp`` measured as ``result``."""
    if protocol != "json":
        raise RecordError(f"record protocol {protocol!r} is not supported; tecc writes \"json\"")
    ok = result.error_no == MeasureErrorNo.NO_ERROR
    env = dict(env if env is not None else environment(inp.target))
    env["emulated"] = bool(getattr(result, "emulated", False))
    row = {
        "input": [str(inp.target), inp.task.name, list(inp.task.args), inp.task.kwargs],
        "config": inp.config.to_json_dict(),
        "result": [list(result.costs) if ok else [1e9], int(result.error_no), float(result.all_cost),
                   float(result.timestamp)],
        "error": None if ok else (str(result.costs[0]) if result.costs else MeasureErrorNo(result.error_no).name),
        "env": env,
        "v": LOG_VERSION,
    }
    return json.dumps(row, default=_jsonable)


def _jsonable(x):
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def decode(row: str, protocol="json"):
    """``(MeasureInput, MeasureResult)`` of a record line; raises :class:`RecordError`
    when the line is not a record of this format."""
    if protocol != "json":
        raise RecordError(f"record protocol {protocol!r} is not supported; tecc reads \"json\"")
    try:
        d = json.loads(row)
    except ValueError as e:
        raise RecordError(f"not a JSON record: {e}") from None
    if not isinstance(d, dict) or d.get("v") != LOG_VERSION:
        found = d.get("v", d.get("version")) if isinstance(d, dict) else type(d).__name__
        raise RecordError(f"not a tecc tuning record (format {found!r}, this tecc reads {LOG_VERSION!r})")
    try:
        target, name, args, kwargs = d["input"]
        task = Task(name, _to_tuple(args), target=target)
        task.kwargs = kwargs or {}
        config = ConfigEntity.from_json_dict(d["config"])
        costs, error_no, all_cost, timestamp = d["result"]
        env = d.get("env") or {}
        if error_no != 0 and d.get("error"):
            costs = [d["error"]]
        result = MeasureResult(costs, error_no, all_cost, timestamp, bool(env.get("emulated", False)))
    except (KeyError, TypeError, ValueError) as e:
        raise RecordError(f"a tecc record with a malformed field: {type(e).__name__}: {e}") from None
    return _Record(MeasureInput(task.target, task, config), result, env)


class _Record(tuple):
    """``(inp, result)`` that also carries the environment it was measured in."""

    def __new__(cls, inp, result, env):
        self = super().__new__(cls, (inp, result))
        self.env = env
        return self


def is_baseline(inp) -> bool:
    """True for a baseline record: the template's fallback config measured (``tecc
    tune`` measures one per task), which :class:`ApplyHistoryBest` weighs against the
    tuned configs and tuning curves, resumes and ``explain`` leave out."""
    return bool(getattr(inp.config, "is_fallback", False))


def load_from_file(filename):
    """Yield ``(MeasureInput, MeasureResult)`` for each record of ``filename``.

    A truncated last line (a process killed while writing) is skipped with a
    warning.  Any other line that is not a record raises :class:`RecordError`
    naming the file and the line.
    """
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise RecordError(f"no records file {filename!r}")
    with open(filename, encoding="utf-8") as f:
        lines = f.read().split("\n")
    # the file ends with a newline when its last record is complete
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    complete = lines[-1] == ""  # the writer ends every record with a newline
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield decode(line)
        except RecordError as e:
            if k == last and not complete:
                warnings.warn(f"{filename}: line {k + 1} is a truncated record (the process writing it was "
                              "stopped?); it is skipped", RecordWarning, stacklevel=2)
                continue
            raise RecordError(f"{filename}, line {k + 1}: {e}") from None


def load_records(records):
    """Records from a file name, a list of file names, or an iterable of
    ``(inp, result)`` pairs."""
    if isinstance(records, (str, os.PathLike)):
        return list(load_from_file(records))
    records = list(records)
    if records and all(isinstance(r, (str, os.PathLike)) for r in records):
        out = []
        for path in records:
            out.extend(load_from_file(path))
        return out
    return records


def save_to_file(records, filename) -> None:
    """Append ``(inp, result)`` pairs to ``filename``, one line each, flushed."""
    with open(filename, "a", encoding="utf-8") as f:
        for inp, res in records:
            f.write(encode(inp, res) + "\n")
        f.flush()
        os.fsync(f.fileno())


def measure_str_key(inp, include_config=True) -> str:
    """A string naming what ``inp`` measured (target, workload, config)."""
    key = f"{inp.target}|{inp.task.name}|{inp.task.args!r}"
    return key + (f"|{inp.config.index}" if include_config else "")


def pick_best(in_file, out_file) -> int:
    """Write to ``out_file`` the best valid record of each (target, workload) in
    ``in_file``; return how many were written."""
    best = {}
    for inp, res in load_from_file(in_file):
        if res.error_no != MeasureErrorNo.NO_ERROR:
            continue
        key = measure_str_key(inp, include_config=False) + ("|emulated" if res.emulated else "")
        if key not in best or res.mean_cost < best[key][1].mean_cost:
            best[key] = (inp, res)
    with open(out_file, "w", encoding="utf-8") as f:
        for record in best.values():
            f.write(encode(*record, env=getattr(record, "env", None)) + "\n")
    return len(best)


# ---------------------------------------------------------------------------------
# applying the best records
# ---------------------------------------------------------------------------------
def _target_key(target) -> str:
    """What must agree between a record's target and the target being built: its
    kind ("llvm", "cuda"); the environment check of :meth:`ApplyHistoryBest.load`
    warns about the rest."""
    return str(target).split()[0] if target is not None else ""


class ApplyHistoryBest(DispatchContext):
    """A dispatch context that answers each workload with the best config of
    ``records`` (a file, a list of files, or ``(inp, result)`` pairs).

    On a machine with a GPU, "cuda" records measured on the emulator are never
    applied (their times say nothing about a GPU).  Records measured on another
    device or with another compiler are applied, with one warning per file saying
    what differs.
    """

    #: warn when the records were measured on another device or with another compiler
    check_environment = True

    def __init__(self, records):
        super().__init__()
        self.best_by_targetkey = {}
        self._best_user_defined = {}
        self._canonical_tasks = set()  # task names whose records are keyed canonically
        if records is not None:
            self.load(records)

    def load(self, records):
        records = load_records(records)
        gpu_here = None
        here = {}
        differs = set()
        for record in records:
            inp, res = record[0], record[1]
            if res.error_no != MeasureErrorNo.NO_ERROR:
                continue
            kind = _target_key(inp.target)
            if kind == "cuda" and res.emulated:
                if gpu_here is None:
                    gpu_here = not _gpu_environment()[3]
                if gpu_here:
                    continue
            if self.check_environment:
                env = getattr(record, "env", None) or {}
                mine = here.setdefault(kind, environment(inp.target))
                for field in _MATTERS:
                    if env.get(field, mine.get(field)) != mine.get(field):
                        differs.add((field, env.get(field), mine.get(field)))
            key = (kind, inp.task.workload)
            if key not in self.best_by_targetkey or res.mean_cost < self.best_by_targetkey[key][1].mean_cost:
                self.best_by_targetkey[key] = (inp, res)
                inp.config.cost = res.mean_cost
        for field, theirs, ours in sorted(differs, key=str):
            warnings.warn(f"apply_history_best: records measured with {field} {theirs!r}, this machine has "
                          f"{ours!r}; their configs are applied, but their times may not hold here",
                          RecordWarning, stacklevel=3)
        logger.debug("apply_history_best: %d workloads", len(self.best_by_targetkey))

    def _query_inside(self, target, workload):
        if workload is None:
            return None
        key = (_target_key(target), workload)
        if key in self._best_user_defined:
            return self._best_user_defined[key]
        if key not in self.best_by_targetkey and workload[0] not in self._canonical_tasks:
            self._rekey(workload[0])
        if key in self.best_by_targetkey:
            return self.best_by_targetkey[key][0].config
        return None

    def _rekey(self, task_name) -> None:
        """Key the records of ``task_name`` by the canonical form of their workloads
        (``task.canonical_args``): records read before the task's template was
        registered (``tecc.topi`` imported) kept their arguments as written."""
        self._canonical_tasks.add(task_name)
        for key in [k for k in self.best_by_targetkey if k[1][0] == task_name]:
            canonical = (task_name,) + canonical_args(task_name, key[1][1:])
            if canonical == key[1]:
                continue
            record = self.best_by_targetkey.pop(key)
            new = (key[0], canonical)
            if new not in self.best_by_targetkey or record[1].mean_cost < self.best_by_targetkey[new][1].mean_cost:
                self.best_by_targetkey[new] = record

    def update(self, target, workload, cfg):
        self._best_user_defined[(_target_key(target), workload)] = cfg

    def has_record(self, target, workload) -> bool:
        """Whether a record (or an :meth:`update`) gives ``workload`` on ``target`` a
        config: False means the template builds its fallback."""
        return self._query_inside(target, workload) is not None


def apply_history_best(records) -> ApplyHistoryBest:
    """The context under which templates build the best configs of ``records``."""
    return ApplyHistoryBest(records)


class ApplyGraphBest(ApplyHistoryBest):
    """The records a graph tuner chose (TVM's ``ApplyGraphBest``), one per workload:
    ``DPTuner.write_opt_sch2record_file`` writes them, and templates build them."""


def apply_graph_best(records) -> ApplyGraphBest:
    """The context under which templates build a graph tuner's choice
    (``DPTuner.write_opt_sch2record_file``'s file)."""
    return ApplyGraphBest(records)

