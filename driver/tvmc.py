"""The ``tecc`` command line (TVM's ``tvmc``): compile, tune, run, inspect and
benchmark ONNX models.

::

    tecc compile --target llvm --output model.tar model.onnx
    tecc tune --target llvm --output records.json --trials 200 model.onnx
    tecc compile --target llvm --tuning-records records.json --output model.tar model.onnx
    tecc run --device cpu --inputs in.npz --output out.npz --print-time model.tar
    tecc info model.tar
    tecc bench --device cpu --repeat 20 --compare onnxruntime model.onnx
    tecc bench --ops matmul,softmax --device cuda --json out.json --plot roofline.png

The same is ``python -m tecc.driver.tvmc ...`` and, in Python, ``main([...])``.

Every subcommand has ``--help``.  A mistake is reported as ONE line on stderr,
``tecc <subcommand>: error: <what is wrong and how to fix it>``, never a traceback;
the exit code is 2 for a usage error (an unknown option, target or device, a
malformed ``--input-shapes``, options that do not go together) and 1 for a command
that could not be carried out (a missing or unreadable file, a model tecc cannot
import or compile, a tampered artifact, inputs that do not fit the model).

The model artifact (``--output model.tar``) is the single file of
:mod:`tecc.runtime.artifact`: ``run`` and ``info`` read it with numpy alone (plus
CuPy on a GPU), no compiler and no onnx.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import statistics
import sys
import time
import warnings
import zipfile

import numpy as np

from ..errors import TargetError, TeccError
from ..graph.ops._util import HALF_FLOATS as MIXED_TYPES
from ..runtime import dtypes
from ..runtime.graph_executor import RANDOM_COUNTER

PROG = "tecc"
COMMANDS = ("compile", "tune", "run", "info", "bench")

#: the seed of the random values given to inputs that ``--inputs`` does not set
FILL_SEED = 0

_ZIP_MAGIC = b"PK\x03\x04"


class CLIError(TeccError):
    """A command that could not be carried out (exit code 1)."""


class UsageError(CLIError):
    """A command line that is wrong in itself (exit code 2).

    Parameters
    ----------
    message : str
    prog : str, optional
        The (sub)command it concerns (``"tecc compile"``).
    """

    def __init__(self, message: str, prog: str = None):
        super().__init__(message)
        self.prog = prog


# ---------------------------------------------------------------------------------------
# argument values
# ---------------------------------------------------------------------------------------
_SHAPE_ENTRY = re.compile(r"\s*([^\s\[\]]+?)\s*:\s*\[([^\[\]]*)\]\s*,?")


def parse_input_shapes(text: str) -> dict:
    """Read ``--input-shapes``: ``"name:[d0,d1,...] other:[...]"`` (entries
    separated by spaces or commas; a name may itself hold ``:``).

    Parameters
    ----------
    text : str

    Returns
    -------
    dict of str to tuple of int

    Raises
    ------
    UsageError
        If the text is not of that form, a dimension is not a positive integer,
        or a name occurs twice.

    Examples
    --------
    >>> parse_input_shapes("data:[1,3,224,224] mask:[1,128]")
    {'data': (1, 3, 224, 224), 'mask': (1, 128)}
    """
    example = 'e.g. --input-shapes "data:[1,3,224,224]" (several: "a:[1,8] b:[1,4]")'
    shapes = {}
    pos = 0
    text = str(text)
    if not text.strip():
        raise UsageError(f"--input-shapes is empty; write name:[d0,d1,...], {example}")
    while pos < len(text):
        if not text[pos:].strip():
            break
        m = _SHAPE_ENTRY.match(text, pos)
        if m is None:
            rest = text[pos:].strip()
            raise UsageError(f"cannot read --input-shapes at {rest!r}: write name:[d0,d1,...], {example}")
        name, dims_text = m.group(1), m.group(2)
        dims = []
        for item in (d.strip() for d in dims_text.split(",")) if dims_text.strip() else ():
            if not re.fullmatch(r"\d+", item) or int(item) < 1:
                raise UsageError(f"--input-shapes: input {name!r} has the dimension {item!r}; dimensions are "
                                 f"positive integers (a batch size, not -1 or a name), {example}")
            dims.append(int(item))
        if name in shapes:
            raise UsageError(f"--input-shapes gives input {name!r} twice; give each input once")
        shapes[name] = tuple(dims)
        pos = m.end()
    return shapes


def _shapes_arg(text: str) -> dict:
    try:
        return parse_input_shapes(text)
    except UsageError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _target_arg(text: str) -> str:
    from ..target import Target  # noqa: PLC0415

    try:
        Target(text)
    except TargetError as err:
        raise argparse.ArgumentTypeError(f"{err}; e.g. --target llvm or --target cuda") from None
    return text


def _device_arg(text: str) -> str:
    m = re.fullmatch(r"(cpu|cuda|gpu)(?::(\d+))?", text.strip().lower())
    if m is None:
        raise argparse.ArgumentTypeError(f"unknown device {text!r}; use cpu, cuda or cuda:N")
    kind = "cuda" if m.group(1) in ("cuda", "gpu") else "cpu"
    return f"{kind}:{m.group(2) or 0}"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


# ---------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------
def _fmt_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _fmt_tensor(dtype, shape, counted_rows=False) -> str:
    """``float32[1, 3]``; ``counted_rows``: the first dimension is the most rows the
    model can give (``int64[<=24, 3]``)."""
    dims = [str(int(d)) for d in shape]
    if counted_rows and dims:
        dims[0] = f"<={dims[0]}"
    return f"{dtype}[{', '.join(dims)}]"


def _fmt_output(info: dict) -> str:
    """An output's dtype and shape (see :func:`_fmt_tensor`)."""
    return _fmt_tensor(info["dtype"], info["shape"], "max_rows" in info)


def _named(info: dict) -> str:
    """``"(name) "`` of an output the model names (its ONNX output), else ``""``."""
    return f"({info['name']}) " if info.get("name") else ""


def _describe_inputs(info: list) -> str:
    return ", ".join(f"{d['name']} {_fmt_tensor(d['dtype'], d['shape'])}" for d in info)


def _require_file(path: str, what: str) -> str:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CLIError(f"there is no {what} {path!r}; check the path")
    if not os.path.isfile(path):
        raise CLIError(f"{path!r} is a folder, not a {what}; give the path of the file")
    return path


def _require_folder_of(path: str, option: str) -> str:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CLIError(f"{option} {path!r}: the folder {folder!r} does not exist; create it first")
    return path


def _is_zip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == _ZIP_MAGIC


def _note(prog: str, message: str) -> None:
    print(f"{prog}: note: {message}", file=sys.stderr)


@contextlib.contextmanager
def _quiet_tuner_log(verbose: int):
    """Keep the dispatcher's per-workload "no tuned config" warnings off the
    terminal (the summary counts them) unless ``-v`` is given."""
    logger = logging.getLogger("tecc.autotvm")
    old = logger.level
    if not verbose:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def _history(records):
    """An ``ApplyHistoryBest`` over ``records`` (None: no records) that remembers
    which tunable workloads it answered and which fell back."""
    from ..tuner.record import ApplyHistoryBest  # noqa: PLC0415

    class _CountingHistory(ApplyHistoryBest):
        def __init__(self, recs):
            super().__init__(recs)
            self.applied = set()
            self.missed = set()

        def _query_inside(self, target, workload):
            cfg = super()._query_inside(target, workload)
            if workload is not None:
                (self.applied if cfg is not None else self.missed).add(workload)
            return cfg

    return _CountingHistory(records)


# ---------------------------------------------------------------------------------------
# importing and compiling
# ---------------------------------------------------------------------------------------
def _import_onnx(path: str, shapes: dict):
    """``(graph module, params)`` of an ONNX file."""
    from ..graph.frontend import OnnxImportError, from_onnx  # noqa: PLC0415

    path = _require_file(path, "model file")
    try:
        from google.protobuf.message import DecodeError  # noqa: PLC0415 -- comes with onnx
    except ImportError:  # pragma: no cover - protobuf is a dependency of onnx
        DecodeError = ValueError  # noqa: N806
    try:
        return from_onnx(path, shapes or None)
    except OnnxImportError as err:
        message = str(err)
        if "shape=" in message:
            message += '; on the command line: --input-shapes "name:[d0,d1,...]"'
        raise CLIError(message) from None
    except DecodeError as err:
        raise CLIError(f"{path!r} is not a readable ONNX model ({err}); export it again") from None


def _mixed(args, mod):
    """``mod`` in ``args.mixed_precision`` (``--mixed-precision``: TVM's
    ToMixedPrecision), or as it is."""
    dtype = getattr(args, "mixed_precision", None)
    if not dtype:
        return mod
    from ..graph.transform import to_mixed_precision  # noqa: PLC0415

    return to_mixed_precision(mod, dtype)


def _import_model(args):
    """``(graph module, params)`` of ``args.FILE``, in mixed precision when asked."""
    mod, params = _import_onnx(args.FILE, args.input_shapes)
    return _mixed(args, mod), params


def _compile(args, prog: str):
    """Import and build ``args.FILE``: ``(factory, facts)``."""
    from ..graph.build import build, storage_report  # noqa: PLC0415
    from ..tir.transform.pipeline import PassContext  # noqa: PLC0415

    records = getattr(args, "tuning_records", None)
    if records:
        _require_file(records, "tuning records file")
    start = time.perf_counter()
    mod, params = _import_model(args)
    with _quiet_tuner_log(args.verbose):
        history = _history(records)
        with history, PassContext(opt_level=args.opt_level):
            factory = build(mod, target=args.target, params=params, mod_name=args.module_name)
    seconds = time.perf_counter() - start
    facts = {"seconds": seconds, "storage": storage_report(factory), "applied": len(history.applied),
             "tunable": len(history.applied | history.missed), "records": records}
    return factory, facts


def _kernel_facts(graph: dict, functions) -> tuple:
    from ..runtime.graph_executor import calls_kernel  # noqa: PLC0415

    called = [n["attrs"]["func_name"] for n in graph["nodes"] if calls_kernel(n)]
    return len(set(functions) or set(called)), len(called)


# ---------------------------------------------------------------------------------------
# tecc compile
# ---------------------------------------------------------------------------------------
def _cmd_compile(args, prog: str) -> int:
    output = args.output or os.path.splitext(args.FILE)[0] + ".tar"
    _require_folder_of(output, "--output")
    factory, facts = _compile(args, prog)
    factory.export_library(output)

    graph = json.loads(factory.get_graph_json())
    n_funcs, n_calls = _kernel_facts(graph, getattr(factory.get_lib(), "function_names", ()))
    params_bytes = sum(int(v.nbytes) for v in factory.params.values())
    st = facts["storage"]
    print(f"compiled {args.FILE} for {args.target} (opt_level {args.opt_level}) in {facts['seconds']:.2f} s")
    print(f"  inputs:        {_describe_inputs(factory.spec.input_info())}")
    print("  outputs:       " + ", ".join(f"{d['index']} {_named(d)}{_fmt_output(d)}"
                                          for d in factory.spec.output_info()))
    print(f"  kernels:       {n_funcs} function(s), {n_calls} call(s)")
    print(f"  params:        {len(factory.params)} array(s), {params_bytes} bytes ({_fmt_bytes(params_bytes)})")
    print(f"  intermediates: peak {st['peak_bytes']} bytes ({_fmt_bytes(st['peak_bytes'])}) of "
          f"{st['total_intermediate_bytes']} bytes unshared ({100 * st['ratio']:.0f}%), "
          f"{st['num_storages']} buffer(s) in all")
    if facts["records"]:
        print(f"  schedules:     {facts['applied']} of {facts['tunable']} tunable workload(s) configured from "
              f"{facts['records']}")
    elif facts["tunable"]:
        print(f"  schedules:     {facts['tunable']} tunable workload(s) on default configs (tune them: "
              f"tecc tune --target {args.target} --output records.json {args.FILE})")
    size = os.path.getsize(output)
    print(f"wrote {output} ({size} bytes, {_fmt_bytes(size)})")
    return 0


# ---------------------------------------------------------------------------------------
# tecc tune
# ---------------------------------------------------------------------------------------
def _make_tuner(name: str, task, seed: int):
    from ..tuner import tuner as tuners  # noqa: PLC0415

    if name == "xgb":
        return tuners.XGBTuner(task, seed=seed)
    if name == "random":
        return tuners.RandomTuner(task, seed=seed)
    if name == "ga":
        size = max(2, min(100, len(task.config_space)))
        return tuners.GATuner(task, pop_size=size, elite_num=min(3, size), seed=seed)
    return tuners.GridSearchTuner(task)


def split_trials(total: int, tasks) -> list:
    """Trials per task out of ``total``: shares by each task's FLOPs times how often
    it occurs in the model, at least 1, at most its config space.

    Parameters
    ----------
    total : int
    tasks : list of Task
        With ``flop``, ``count`` and ``config_space``.

    Returns
    -------
    list of int
    """
    weights = [max(float(t.flop or 0.0), 1.0) * int(getattr(t, "count", 1) or 1) for t in tasks]
    whole = sum(weights) or 1.0
    out = []
    for task, w in zip(tasks, weights):
        n = max(1, int(round(total * w / whole)))
        out.append(min(n, len(task.config_space)))
    # "at least 1" may overshoot the total: take the excess from the largest shares
    while sum(out) > max(total, len(out)):
        k = max(range(len(out)), key=lambda i: out[i])
        out[k] -= 1
    return out


def _cmd_tune(args, prog: str, model=None) -> int:
    """``tecc tune``; ``model`` = ``(mod, params)`` already imported (the Python API's
    ``tvmc.tune``), else ``args.FILE`` is read."""
    from .. import autotvm  # noqa: PLC0415
    from ..graph.build import extract_tasks  # noqa: PLC0415
    from ..tir.transform.pipeline import PassContext  # noqa: PLC0415
    from ..tuner import record  # noqa: PLC0415

    _require_folder_of(args.output, "--output")
    mod, params = (_mixed(args, model[0]), model[1]) if model is not None else _import_model(args)
    prior = list(record.load_from_file(args.prior_records)) if getattr(args, "prior_records", None) else None
    with _quiet_tuner_log(args.verbose), PassContext(opt_level=args.opt_level):
        tasks = extract_tasks(mod, params, args.target)
    if not tasks:
        print(f"{args.FILE} has no tunable workloads for {args.target} (its kernels use fixed schedules); "
              "nothing to tune")
        return 0
    trials = split_trials(args.trials, tasks)
    print(f"{len(tasks)} tunable task(s) in {args.FILE} for {args.target}; {sum(trials)} trial(s) with the "
          f"{args.tuner} tuner, records appended to {args.output}")
    measure = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=args.timeout, n_parallel=args.parallel),
        runner=autotvm.LocalRunner(timeout=args.timeout, number=args.number, repeat=args.repeat,
                                   min_repeat_ms=args.min_repeat_ms, cooldown_interval=0,
                                   enable_cpu_cache_flush=args.cpu_cache_flush))
    results = []
    log = autotvm.callback.log_to_file(args.output)
    for k, (task, n) in enumerate(zip(tasks, trials), start=1):
        with _quiet_tuner_log(args.verbose):
            baseline = _baseline(task, measure, log)
        before = _count_lines(args.output)
        print(f"[{k}/{len(tasks)}] {task.name} x{task.count} {list(_task_shapes(task))}: default schedule "
              f"{baseline}; tuning {n} trial(s) of {len(task.config_space)} configs...", flush=True)
        tuner = _make_tuner(args.tuner, task, seed=k)
        if prior:
            tuner.load_history(prior)  # warm-starts a model-based tuner (transfer learning)
        start = time.perf_counter()
        with _quiet_tuner_log(args.verbose):
            tuner.tune(n_trial=n, measure_option=measure, early_stopping=args.early_stopping, callbacks=[log])
        measured = _count_lines(args.output) - before
        resumed = max(0, len(tuner.visited) - measured)
        results.append((task, tuner))
        best = _best_text(task, tuner)
        extra = f", {resumed} resumed from the file" if resumed else ""
        print(f"[{k}/{len(tasks)}] {task.name} x{task.count}: {measured} trial(s) measured{extra} in "
              f"{time.perf_counter() - start:.1f} s; best {best}", flush=True)
    print("best per task:")
    for task, tuner in results:
        print(f"  {task.name} x{task.count} {list(_task_shapes(task))}: {_best_text(task, tuner)}")
    n_records = sum(1 for _ in record.load_from_file(args.output)) if os.path.exists(args.output) else 0
    mixed = f"--mixed-precision {args.mixed_precision} " if getattr(args, "mixed_precision", None) else ""
    print(f"{args.output}: {n_records} record(s); compile with: tecc compile --target {args.target} {mixed}"
          f"--tuning-records {args.output} --output model.tar {args.FILE}")
    return 0


def _baseline(task, measure, log) -> str:
    """Measure ``task``'s untuned schedule (the template's fallback config) once and
    append it to the log as a baseline record, unless the log has one: the build
    then weighs the tuned configs against it (``apply_history_best`` keeps whichever
    ran faster, so a task given few trials never runs slower than untuned).  Returns
    what it measured, in words."""
    from ..tuner import record  # noqa: PLC0415
    from ..tuner.measure.measure import MeasureInput, create_measure_batch  # noqa: PLC0415
    from ..tuner.task.space import FallbackConfigEntity  # noqa: PLC0415

    found = None
    if os.path.exists(log.filename):
        for inp, res in record.load_from_file(log.filename):
            if (record.is_baseline(inp) and inp.task.workload == task.workload
                    and str(inp.target) == str(task.target)):
                found = res
    if found is None:
        inp = MeasureInput(task.target, task, FallbackConfigEntity())
        measure_batch = create_measure_batch(task, measure)
        try:
            (found,) = measure_batch([inp])
        finally:
            measure_batch.close()
        log(None, [inp], [found])
    if found.error_no != 0:
        return f"failed ({str(found.costs[0])[:120]})"
    return f"{task.flop / found.mean_cost / 1e9:.3f} GFLOP/s ({found.mean_cost * 1e3:.4f} ms)"


def _count_lines(path: str) -> int:
    if not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def _task_shapes(task):
    for arg in task.args:
        if isinstance(arg, tuple) and arg and arg[0] == "TENSOR":
            yield tuple(arg[1])


def _best_text(task, tuner) -> str:
    pair = tuner.best_measure_pair
    if pair is None:
        return "no config ran successfully (see the records' error numbers; -v shows why)"
    inp, res = pair
    ms = res.mean_cost * 1e3
    return f"{tuner.best_flops / 1e9:.3f} GFLOP/s ({ms:.4f} ms), config #{inp.config.index}"


# ---------------------------------------------------------------------------------------
# loading artifacts, inputs
# ---------------------------------------------------------------------------------------
def _load_factory(path: str):
    from ..runtime.artifact import load_artifact  # noqa: PLC0415

    path = _require_file(path, "model artifact")
    _check_artifact_kind(path)
    return load_artifact(path)


def _check_artifact_kind(path: str) -> None:
    """Refuse a file that is no artifact at all (an ONNX model, say) with a message
    saying so; a damaged artifact is left to the artifact reader to describe."""
    if os.path.getsize(path) == 0:
        raise CLIError(f"{path!r} is empty: not a model artifact; compile the model again (tecc compile)")
    if not _is_zip(path):
        hint = (f"; compile it first: tecc compile --output model.tar {path}" if path.endswith(".onnx") else
                "; artifacts are written by 'tecc compile'")
        raise CLIError(f"{path!r} is not a tecc model artifact{hint}")


def _device(name: str):
    from ..runtime.device import cpu, cuda  # noqa: PLC0415

    kind, index = name.split(":")
    return cuda(int(index)) if kind == "cuda" else cpu(int(index))


def _default_device(target: str) -> str:
    return "cuda:0" if str(target).split()[0] == "cuda" else "cpu:0"


def _executor(factory, device_name: str, path: str, hints=("--device {}", "with --target {}")):
    """A graph module of ``factory`` on ``device_name``; ``hints`` word the fix of a
    device that does not fit (the options of the command line, or the arguments of
    the Python API)."""
    from ..contrib.graph_executor import GraphModule  # noqa: PLC0415

    built_for = _default_device(factory.target).split(":")[0]
    if device_name.split(":")[0] != built_for:
        other = "cuda" if built_for == "cpu" else "llvm"
        raise CLIError(f"{path!r} was compiled for {factory.target}, which runs on {built_for}: run it with "
                       f"{hints[0].format(built_for)}, or compile the model {hints[1].format(other)}")
    dev = _device(device_name)
    return GraphModule(factory[factory.module_name](dev)), dev


def _load_inputs(path: str) -> dict:
    path = _require_file(path, "inputs file")
    if not _is_zip(path):
        raise CLIError(f"--inputs {path!r} is not a .npz file; write the inputs with numpy.savez(path, "
                       "name=array, ...)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if not hasattr(npz, "files"):
                raise ValueError("it holds one array, not named arrays")
            return {name: npz[name] for name in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise CLIError(f"--inputs {path!r} is not a .npz of named arrays ({err}); write it with "
                       "numpy.savez(path, name=array, ...)") from None


def _fill(info: dict, mode: str, rng) -> np.ndarray:
    shape = tuple(info["shape"])
    if dtypes.storage_float(info["dtype"]) is not None:  # its bits, of float values
        values = {"zeros": np.zeros(shape), "ones": np.ones(shape)}.get(mode)
        if values is None:
            values = rng.uniform(0.0, 1.0, shape) if info["dtype"] != "float8_e8m0fnu" else np.ones(shape)
        return dtypes.encode(values, info["dtype"])
    if dtypes.is_narrow(info["dtype"]):  # int4 ...: its values, in its range
        lo, hi = dtypes.int_range(info["dtype"])
        values = {"zeros": np.zeros(shape, np.int64), "ones": np.ones(shape, np.int64)}.get(mode)
        return dtypes.to_storage(rng.integers(max(lo, 0), min(hi, 9) + 1, shape) if values is None else values,
                                 info["dtype"])
    dtype = np.dtype(info["dtype"])
    if mode == "zeros":
        return np.zeros(shape, dtype)
    if mode == "ones":
        return np.ones(shape, dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":
        return rng.integers(0, 10, shape).astype(dtype)
    return rng.uniform(0.0, 1.0, shape).astype(dtype)


def _model_inputs(factory, inputs_path, fill_mode: str, prog: str) -> dict:
    """The user inputs of the model: from ``inputs_path`` by name, checked; the
    others filled (random with the fixed seed, zeros or ones), with a note."""
    info = factory.spec.input_info()
    expected = {d["name"]: d for d in info}
    given = _load_inputs(inputs_path) if inputs_path else {}
    where = f"--inputs {inputs_path!r}"
    for name, arr in given.items():
        if name not in expected:
            raise CLIError(f"{where} has the array {name!r}, which is not an input of the model; its inputs are: "
                           f"{_describe_inputs(info)}; rename the array in the .npz")
        want = expected[name]
        stored = dtypes.as_storage(arr, want["dtype"])
        if stored is not None:  # ml_dtypes' bfloat16 (read back as a 2-byte void), or its uint16 bits ...
            given[name] = arr = stored
        if tuple(arr.shape) != tuple(want["shape"]) or (stored is None and str(arr.dtype) != want["dtype"]):
            raise CLIError(f"{where}: input {name!r} is {_fmt_tensor(arr.dtype, arr.shape)} but the model takes "
                           f"{_fmt_tensor(want['dtype'], want['shape'])} (its inputs are: {_describe_inputs(info)}); "
                           f"save it with that shape and dtype (e.g. x.astype({want['dtype']!r}))")
    rng = np.random.default_rng(FILL_SEED)
    out = {}
    filled = []
    for d in info:
        if d["name"] in given:
            out[d["name"]] = given[d["name"]]
        elif d["name"] == RANDOM_COUNTER:
            continue  # a model's random draws: the executor counts its runs into it
        else:
            out[d["name"]] = _fill(d, fill_mode, rng)
            filled.append(d["name"])
    if filled:
        how = f"random values (seed {FILL_SEED})" if fill_mode == "random" else fill_mode
        source = f"not in {inputs_path!r}" if inputs_path else "no --inputs given"
        _note(prog, f"input(s) {filled} {source}: using {how}")
    return out


def _profile_ms(samples) -> dict:
    ms = [s * 1e3 for s in samples]
    return {"mean_ms": statistics.fmean(ms), "median_ms": statistics.median(ms),
            "std_ms": statistics.pstdev(ms) if len(ms) > 1 else 0.0, "min_ms": min(ms), "max_ms": max(ms),
            "samples": len(ms)}


def _print_times(stats: dict, title: str = "Execution time summary") -> None:
    print(f"{title}:")
    print(f" {'mean (ms)':>12} {'median (ms)':>12} {'max (ms)':>12} {'min (ms)':>12} {'std (ms)':>12}")
    print(f" {stats['mean_ms']:12.4f} {stats['median_ms']:12.4f} {stats['max_ms']:12.4f} {stats['min_ms']:12.4f} "
          f"{stats['std_ms']:12.4f}")


# ---------------------------------------------------------------------------------------
# tecc run
# ---------------------------------------------------------------------------------------
def _cmd_run(args, prog: str) -> int:
    if args.output:
        _require_folder_of(args.output, "--output")
    factory = _load_factory(args.FILE)
    device_name = args.device or _default_device(factory.target)
    gmod, dev = _executor(factory, device_name, args.FILE)
    inputs = _model_inputs(factory, args.inputs, args.fill_mode, prog)
    gmod.set_input(**inputs)
    gmod.run()
    # as stored, so that the .npz reads back without ml_dtypes (the types numpy lacks as their bits)
    outputs = {f"output_{k}": gmod.get_output(k).bits() for k in range(gmod.get_num_outputs())}
    infos = factory.spec.output_info()
    for (name, arr), info in zip(outputs.items(), infos):
        bits = (f" ({info['dtype']} as its bits: arr.view(ml_dtypes.{info['dtype']}))"
                if dtypes.storage_float(info["dtype"]) is not None else "")
        print(f"{name}: {_named(info)}{_fmt_tensor(arr.dtype, arr.shape)}{bits}")
    if args.print_top:
        _print_top(dtypes.numbers(outputs["output_0"], infos[0]["dtype"]), args.print_top)  # bits decoded
    if args.print_time:
        result = gmod.benchmark(dev, repeat=args.repeat, number=args.number, end_to_end=args.end_to_end)
        _print_times(_profile_ms(result.results))
    if args.output:
        np.savez(args.output, **outputs)
        print(f"wrote {len(outputs)} output(s) to {args.output}")
    return 0


def _print_top(arr: np.ndarray, k: int) -> None:
    flat = arr.reshape(-1)
    k = min(k, flat.size)
    order = np.argsort(-flat.astype("float64"), kind="stable")[:k]
    print(f"top {k} of output_0 (index: value):")
    for i in order:
        print(f"  {int(i)}: {flat[i]}")


# ---------------------------------------------------------------------------------------
# tecc info
# ---------------------------------------------------------------------------------------
def _cmd_info(args, prog: str) -> int:
    from ..graph.memory_plan import storage_report  # noqa: PLC0415
    from ..runtime.artifact import read_artifact  # noqa: PLC0415

    path = _require_file(args.FILE, "model artifact")
    _check_artifact_kind(path)
    contents = read_artifact(path)
    m = contents.manifest
    graph = json.loads(contents.graph_json)
    functions = (m.get("kernels") or {}).get("functions") or []
    n_funcs, n_calls = _kernel_facts(graph, functions)
    members = m["members"]
    params_bytes = sum(int(v.nbytes) for v in contents.params.values())
    st = storage_report(graph)
    if args.json:
        print(json.dumps({**m, "file_bytes": os.path.getsize(path), "checksums": "ok",
                          "kernel_functions": n_funcs, "kernel_calls": n_calls, "storage": st}, indent=1))
        return 0
    print(f"{path}: {m['format']} format version {m['format_version']}, written by tecc {m.get('tecc_version')} "
          f"on {m.get('created', '?')}")
    print(f"  target:        {m.get('target')} (kernels: {(m.get('kernels') or {}).get('type_key', '?')} module)")
    print(f"  module name:   {m.get('module_name')}")
    for d in m.get("inputs", []):
        print(f"  input  {d['name']}: {_fmt_tensor(d['dtype'], d['shape'])}")
    for d in m.get("outputs", []):
        print(f"  output {d.get('index')}: {_named(d)}{_fmt_output(d)}")
    print(f"  kernels:       {n_funcs} function(s), {n_calls} call(s)")
    print(f"  params:        {len(contents.params)} array(s), {params_bytes} bytes ({_fmt_bytes(params_bytes)})")
    print(f"  intermediates: peak {st['peak_bytes']} bytes ({_fmt_bytes(st['peak_bytes'])}) of "
          f"{st['total_intermediate_bytes']} bytes unshared")
    for name, entry in members.items():
        print(f"  member {name}: {entry['bytes']} bytes, sha256 {entry['sha256'][:16]}...")
    print(f"  file:          {os.path.getsize(path)} bytes; checksums of {len(members)} member(s) verified")
    return 0


# ---------------------------------------------------------------------------------------
# tecc bench
# ---------------------------------------------------------------------------------------
def _ort_session(path: str, device_name: str):
    try:
        import onnxruntime as ort  # noqa: PLC0415 -- optional: only --compare onnxruntime needs it
    except ImportError:
        raise CLIError("--compare onnxruntime needs the onnxruntime package: pip install onnxruntime") from None
    if device_name.startswith("cuda"):
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise CLIError("--compare onnxruntime on cuda needs onnxruntime's CUDAExecutionProvider "
                           "(pip install onnxruntime-gpu), or --device cpu")
        providers = ["CUDAExecutionProvider"]
    else:
        providers = ["CPUExecutionProvider"]
    from .opbench import ort_quiet_options  # noqa: PLC0415

    try:
        return ort.InferenceSession(path, sess_options=ort_quiet_options(ort), providers=providers)
    except Exception as err:  # onnxruntime's own exception classes are not importable by a stable name
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CLIError(f"onnxruntime cannot load {path!r}: {first}") from None


def _cmd_bench_ops(args, prog: str) -> int:
    from . import opbench  # noqa: PLC0415

    if args.FILE is not None:
        raise UsageError(f"give either a model file ({args.FILE!r}) or --ops, not both", prog)
    for option, value in (("--compare", args.compare), ("-i/--inputs", args.inputs)):
        if value:
            raise UsageError(f"{option} is an option of a model benchmark, not of --ops (the references of each "
                             "kernel are always timed)", prog)
    for path, what in ((args.json, "--json"), (args.plot, "--plot")):
        if path:
            _require_folder_of(path, what)
    if args.plot:
        try:
            import matplotlib  # noqa: F401,PLC0415
        except ImportError:
            raise CLIError("--plot needs matplotlib: pip install matplotlib (or tecc[plot])") from None
    ops = tuple(opbench.OPS) if args.ops.strip() == "all" else tuple(o.strip() for o in args.ops.split(",") if o.strip())
    sizes = tuple(t.strip() for t in args.sizes.split(",") if t.strip()) if args.sizes else ()
    device = (args.device or "cpu").split(":")[0]
    if args.dry_run and device != "cuda":
        raise UsageError("--dry-run checks the CUDA kernels on the CPU emulation: add --device cuda", prog)
    records = args.tuning_records
    if records:
        _require_file(records, "tuning records")
    target = str(args.target) if args.target is not None else None
    opts = opbench.BenchOptions(ops=ops, sizes=sizes, dtype=args.dtype, device=device, dry_run=args.dry_run,
                                records=records, repeat=args.repeat, target=target)
    try:
        report = opbench.run(opts, log=lambda line: print(f"measuring {line}", file=sys.stderr))
    except opbench.BenchError as err:
        raise UsageError(str(err), prog) from None
    print(report)
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    if args.plot:
        report.plot(args.plot)
        print(f"wrote {args.plot}")
    return 1 if any(r.status == "FAILED" for r in report.rows) else 0


def _cmd_bench(args, prog: str) -> int:
    if args.ops is not None:
        return _cmd_bench_ops(args, prog)
    for option, value in (("--sizes", args.sizes), ("--plot", args.plot), ("--dry-run", args.dry_run)):
        if value:
            raise UsageError(f"{option} goes with --ops (a kernel benchmark), not with a model", prog)
    if args.FILE is None:
        raise UsageError("give a model file (.onnx or a tecc artifact) or --ops matmul,conv2d,...", prog)
    if args.json:
        _require_folder_of(args.json, "--json")
    path = _require_file(args.FILE, "model file")
    is_artifact = _is_zip(path)
    if args.compare and is_artifact:
        raise UsageError(f"--compare onnxruntime needs the ONNX model: {path!r} is a tecc artifact, which holds no "
                         "ONNX graph; give model.onnx instead", prog)
    if is_artifact:
        factory = _load_factory(path)
        compile_seconds = None
    else:
        if args.target is None:
            args.target = "cuda" if (args.device or "cpu").startswith("cuda") else "llvm"
        factory, facts = _compile(args, prog)
        compile_seconds = facts["seconds"]
        print(f"compiled {path} for {args.target} in {compile_seconds:.2f} s")
    device_name = args.device or _default_device(factory.target)
    gmod, dev = _executor(factory, device_name, path)
    inputs = _model_inputs(factory, args.inputs, "random", prog)
    gmod.set_input(**inputs)
    session = _ort_session(path, device_name) if args.compare else None

    report = {"model": path, "device": device_name, "target": factory.target, "repeat": args.repeat,
              "number": args.number, "end_to_end": bool(session is not None or args.end_to_end)}
    if compile_seconds is not None:
        report["compile_seconds"] = compile_seconds
    tecc_samples, ort_samples = [], []
    feed = None
    if session is not None:
        feed = _ort_feed(session, inputs)
        session.run(None, feed)  # warm-up
    gmod.run()  # warm-up
    # interleaved rounds: both see the same machine state
    for _ in range(args.repeat):
        res = gmod.benchmark(dev, repeat=1, number=args.number, end_to_end=report["end_to_end"])
        tecc_samples.append(res.results[0])
        if session is not None:
            start = time.perf_counter()
            for _ in range(args.number):
                session.run(None, feed)
            ort_samples.append((time.perf_counter() - start) / args.number)
    report["tecc"] = _profile_ms(tecc_samples)
    _print_times(report["tecc"], f"tecc ({factory.target} on {device_name})")
    if session is not None:
        report["onnxruntime"] = _profile_ms(ort_samples)
        _print_times(report["onnxruntime"], "onnxruntime")
        ratio = report["onnxruntime"]["median_ms"] / max(report["tecc"]["median_ms"], 1e-12)
        report["speedup_vs_onnxruntime"] = ratio
        gmod.run()
        ours = [dtypes.numbers(out.bits(), out.dtype) for out in (gmod.get_output(k) for k in
                                                                  range(gmod.get_num_outputs()))]
        theirs = session.run(None, feed)
        diff = max((float(np.max(np.abs(a.astype("float64") - np.asarray(b, "float64")))) if a.size else 0.0)
                   for a, b in zip(ours, theirs))
        report["max_abs_diff_vs_onnxruntime"] = diff
        print(f"tecc runs at {ratio:.2f}x onnxruntime's speed (median {report['tecc']['median_ms']:.4f} ms vs "
              f"{report['onnxruntime']['median_ms']:.4f} ms); outputs differ by at most {diff:.3g}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.json}")
    return 0


def _ort_feed(session, inputs: dict) -> dict:
    feed = {}
    ours = list(inputs)
    for spec in session.get_inputs():
        if spec.name not in inputs:
            raise CLIError(f"onnxruntime expects the input {spec.name!r}, which the compiled model does not have "
                           f"(its inputs are {ours})")
        feed[spec.name] = inputs[spec.name]
    return feed


# ---------------------------------------------------------------------------------------
# the parser
# ---------------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors are :class:`UsageError` (one line, exit 2)
    instead of a usage dump."""

    def error(self, message):
        raise UsageError(message, self.prog)


_EPILOG = ("errors are one line on stderr; exit code 0 on success, 1 when the command fails, 2 for a "
           "wrong command line")


def _add_model_options(p, opt_default=3) -> None:
    p.add_argument("--input-shapes", type=_shapes_arg, default=None, metavar="SHAPES",
                   help='static shapes of the model\'s inputs, e.g. "data:[1,3,224,224]" (binds symbolic '
                        "dimensions such as the batch)")
    p.add_argument("--opt-level", type=int, choices=range(0, 4), default=opt_default, metavar="{0,1,2,3}",
                   help="graph optimization level: 0 none, 1 fusion, 2 constant folding, 3 everything "
                        f"(default {opt_default})")
    p.add_argument("--mixed-precision", choices=MIXED_TYPES, default=None,
                   help="compute the float32 model in float16 or bfloat16 (TVM's ToMixedPrecision): its products "
                        "on tensor cores, every sum in float32; the model is fed float32 as before, its outputs "
                        "are in that type")


def _add_verbose(p) -> None:
    p.add_argument("-v", "--verbose", action="count", default=0, help="show the tuner's and compiler's log")


def build_parser() -> argparse.ArgumentParser:
    """The ``tecc`` argument parser (subcommands compile, tune, run, info, bench)."""
    from .. import __version__  # noqa: PLC0415

    parser = _Parser(prog=PROG, description="tecc: compile, tune, run and inspect ONNX models (TVM's tvmc).",
                     epilog=_EPILOG)
    parser.add_argument("--version", action="version", version=f"tecc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{compile,tune,run,info,bench}")
    sub.required = True

    p = sub.add_parser("compile", help="compile an ONNX model into a deployable artifact",
                       description="Import an ONNX model, optimize and compile it for a target, and write the "
                                   "single-file artifact that 'tecc run' loads.", epilog=_EPILOG)
    p.add_argument("FILE", help="the ONNX model (.onnx)")
    p.add_argument("--target", type=_target_arg, default="llvm",
                   help='"llvm" (the C backend; "llvm -mcpu=native"), or "cuda" (default llvm)')
    p.add_argument("-o", "--output", default=None, help="the artifact to write (default: FILE with .tar)")
    p.add_argument("--tuning-records", default=None, metavar="PATH",
                   help="tuning records ('tecc tune --output') whose best configs the kernels use")
    p.add_argument("--module-name", default="default", help="the name that makes executors: factory[NAME](dev)")
    _add_model_options(p)
    _add_verbose(p)
    p.set_defaults(func=_cmd_compile)

    p = sub.add_parser("tune", help="tune the model's kernels and write tuning records",
                       description="Extract the tunable kernels (tasks) of an ONNX model and tune each, trials "
                                   "split by its share of the model's FLOPs; records are appended to --output "
                                   "(a run resumes from the records already there). Each task's default "
                                   "schedule is measured first and recorded as a baseline: a compile with "
                                   "the records keeps it where no tuned config beat it.", epilog=_EPILOG)
    p.add_argument("FILE", help="the ONNX model (.onnx)")
    p.add_argument("--target", type=_target_arg, default="llvm", help='"llvm" or "cuda" (default llvm)')
    p.add_argument("-o", "--output", required=True, help="the tuning records file (JSON lines), appended to")
    p.add_argument("--trials", type=_positive_int, default=1000,
                   help="trials in all, split between the tasks (at least 1 each; default 1000)")
    p.add_argument("--tuner", choices=("xgb", "random", "ga", "grid", "gridsearch"), default="xgb",
                   help="the search (default xgb: the cost-model guided one)")
    p.add_argument("--early-stopping", type=_positive_int, default=None, metavar="N",
                   help="stop a task when its best has not improved for N trials")
    p.add_argument("--number", type=_positive_int, default=4, help="runs per measurement (default 4)")
    p.add_argument("--repeat", type=_positive_int, default=3, help="measurements per config (default 3)")
    p.add_argument("--min-repeat-ms", type=_non_negative_float, default=0.0,
                   help="grow --number until a measurement lasts this long (default 0)")
    p.add_argument("--timeout", type=_positive_int, default=10, help="seconds one candidate may take (default 10)")
    p.add_argument("--cpu-cache-flush", action="store_true",
                   help="overwrite the CPU caches before every timed run (llvm targets): a kernel inside a model "
                        "does not find its inputs and weights in cache as a kernel timed alone does (TVM's "
                        "enable_cpu_cache_flush; use with --number 1)")
    p.add_argument("--parallel", type=_positive_int, default=None, help="candidates built at once (default: cores)")
    _add_model_options(p)
    _add_verbose(p)
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser("run", help="run a compiled artifact on inputs from a .npz",
                       description="Load an artifact ('tecc compile --output'), set its inputs from a .npz by name "
                                   "(inputs it does not give are filled, see --fill-mode), run it, and save the "
                                   "outputs as output_0, output_1... in a .npz.", epilog=_EPILOG)
    p.add_argument("FILE", help="the model artifact (.tar)")
    p.add_argument("--device", type=_device_arg, default=None,
                   help="cpu, cuda or cuda:N (default: what the artifact was built for)")
    p.add_argument("-i", "--inputs", default=None, help="a .npz of the inputs by name (numpy.savez)")
    p.add_argument("-o", "--output", "--outputs", dest="output", default=None,
                   help="the .npz to write the outputs to (output_0, output_1...)")
    p.add_argument("--fill-mode", choices=("random", "zeros", "ones"), default="random",
                   help=f"values of inputs --inputs does not give (default random, seed {FILL_SEED})")
    p.add_argument("--print-time", action="store_true", help="time the model and print mean/median/std")
    p.add_argument("--print-top", type=_positive_int, default=None, metavar="K",
                   help="print the K largest values of output 0 with their indices")
    p.add_argument("--repeat", type=_positive_int, default=10, help="timing samples with --print-time (default 10)")
    p.add_argument("--number", type=_positive_int, default=1, help="runs per sample (default 1)")
    p.add_argument("--end-to-end", action="store_true",
                   help="time copying inputs in and outputs out as well as the kernels")
    _add_verbose(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("info", help="show an artifact's manifest, verifying its checksums",
                       description="Print what an artifact holds (format, tecc version, target, inputs and "
                                   "outputs, kernels, sizes) after verifying the checksum of every member.",
                       epilog=_EPILOG)
    p.add_argument("FILE", help="the model artifact (.tar)")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    _add_verbose(p)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("bench", help="measure a model's latency, or tecc's kernels against cuBLAS/CuPy/numpy (--ops)",
                       description="Time a compiled artifact, or an ONNX model compiled first; with --compare "
                                   "onnxruntime (an .onnx model) the same inputs also run through onnxruntime, in "
                                   "interleaved rounds, timed end to end, and the speed ratio is printed.  With "
                                   "--ops instead of a model: tecc's kernels (hand schedules, topi's defaults, "
                                   "tuned records) at several sizes against cuBLAS, CuPy and torch on a GPU or "
                                   "numpy and onnxruntime on the CPU, each checked against float64, as a table "
                                   "with the share of the device's peak, JSON and a roofline PNG.",
                       epilog=_EPILOG)
    p.add_argument("FILE", nargs="?", default=None, help="a model artifact (.tar) or an ONNX model (.onnx)")
    p.add_argument("--ops", default=None, metavar="OPS",
                   help="benchmark kernels instead of a model: a comma list of matmul, conv2d, softmax, layernorm "
                        "(or 'all')")
    p.add_argument("--sizes", default=None, metavar="SIZES",
                   help="with --ops: comma list of sizes, each OP:SIZE or a SIZE for every op it fits (matmul N or "
                        "MxNxK, softmax/layernorm ROWSxCOLS, conv2d CxHxW-KxR[-sS]); default: a set per device")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"), help="with --ops: element type")
    p.add_argument("--plot", default=None, metavar="PATH", help="with --ops: write the roofline as a PNG")
    p.add_argument("--dry-run", action="store_true",
                   help="with --ops --device cuda: build the CUDA kernels and check them on the CPU emulation at "
                        "small sizes, time nothing (no GPU needed)")
    p.add_argument("--device", type=_device_arg, default=None, help="cpu, cuda or cuda:N (default cpu)")
    p.add_argument("--target", type=_target_arg, default=None,
                   help="target to compile an .onnx for (default: llvm for cpu, cuda for cuda)")
    p.add_argument("--tuning-records", default=None, metavar="PATH",
                   help="records to compile an .onnx with; with --ops, the tuned variants' configs")
    p.add_argument("--module-name", default="default", help=argparse.SUPPRESS)
    p.add_argument("-i", "--inputs", default=None, help="a .npz of the inputs (default: random, fixed seed)")
    p.add_argument("--repeat", type=_positive_int, default=10, help="timing rounds (default 10)")
    p.add_argument("--number", type=_positive_int, default=10, help="runs per round (default 10)")
    p.add_argument("--end-to-end", action="store_true",
                   help="time copying inputs in and outputs out too (always so with --compare)")
    p.add_argument("--compare", choices=("onnxruntime",), default=None, help="also time onnxruntime")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the results as JSON")
    _add_model_options(p)
    _add_verbose(p)
    p.set_defaults(func=_cmd_bench)
    return parser


# ---------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _prog_of(argv: list) -> str:
    for arg in argv:
        if arg in COMMANDS:
            return f"{PROG} {arg}"
        if not arg.startswith("-"):
            break
    return PROG


def main(argv=None) -> int:
    """Run the ``tecc`` command line.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        0 on success, 1 when the command failed, 2 for a wrong command line.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = _prog_of(argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as err:
        # the top parser reports the subcommand's unknown options: name the subcommand
        who = prog if err.prog in (None, PROG) else err.prog
        print(f"{who}: error: {_one_line(err)}; see '{who} --help'", file=sys.stderr)
        return 2
    except SystemExit as exit_:  # --help and --version
        return exit_.code if isinstance(exit_.code, int) else 0
    if args.verbose:
        logging.basicConfig(level=logging.INFO if args.verbose == 1 else logging.DEBUG,
                            format="%(name)s: %(message)s")
    try:
        with warnings.catch_warnings():
            # a warning is one line too (e.g. "no CUDA GPU found: ... the CPU emulation")
            warnings.showwarning = lambda message, *_a, **_k: print(f"{prog}: warning: {_one_line(message)}",
                                                                    file=sys.stderr)
            return args.func(args, prog)
    except UsageError as err:
        print(f"{err.prog or prog}: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except (TeccError, OSError) as err:
        print(f"{prog}: error: {_one_line(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: error: interrupted", file=sys.stderr)
        return 130


# TVMC's Python API (``from tecc.driver import tvmc; tvmc.load(...)``), over the steps above
from .tvmc_python import (  # noqa: E402,F401,A004 -- after the CLI, which it calls
    TVMCException, TVMCModel, TVMCPackage, TVMCResult, compile, load, run, tune,
)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["CLIError", "TVMCException", "TVMCModel", "TVMCPackage", "TVMCResult", "UsageError", "build_parser",
           "compile", "load", "main", "parse_input_shapes", "run", "split_trials", "tune"]
