"""Tuning curves: the best result so far against the trial number.

:func:`tuning_curve` computes one (plain numpy, no plotting library);
:func:`plot_tuning_curve` draws one line per log with matplotlib, which it imports
only when called.  A failed trial counts as a trial: the curve stays flat there.
"""
from __future__ import annotations

import os

import numpy as np

#: what a curve can show
METRICS = ("gflops", "time")


def _tuner_error():
    from .tuner.tuner import TunerError  # noqa: PLC0415

    return TunerError


def _records_of(log, TunerError) -> tuple:
    """``(records, label)`` of one log: a file name or a list of records."""
    from .measure.measure import MeasureInput, MeasureResult  # noqa: PLC0415
    from .record import RecordError, is_baseline, load_from_file  # noqa: PLC0415

    if isinstance(log, (str, os.PathLike)):
        path = os.fspath(log)
        if not os.path.exists(path):
            raise RecordError(f"tuning curve: no records file {path!r}; pass the file the log_to_file callback of "
                              "the tuning run wrote (or the records themselves)")
        return [r for r in load_from_file(path) if not is_baseline(r[0])], os.path.basename(path)
    if isinstance(log, (list, tuple)):
        for k, r in enumerate(log):
            if not (isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], MeasureInput)
                    and isinstance(r[1], MeasureResult)):
                raise TunerError(f"tuning curve: item {k} of the records is a {type(r).__name__}, not a "
                                 "(MeasureInput, MeasureResult) pair; pass a log file or records as "
                                 "autotvm.record.load_from_file gives them")
        return [r for r in log if not is_baseline(r[0])], None
    raise TunerError(f"tuning curve: a log is a records file or a list of (MeasureInput, MeasureResult) records, "
                     f"not a {type(log).__name__}")


def _flop_of(inp, TunerError) -> float:
    """The flop count of a record's workload (its template must be registered)."""
    from .task.task import TASK_TABLE, create  # noqa: PLC0415

    task = inp.task
    if getattr(task, "flop", None):
        return float(task.flop)
    if task.name not in TASK_TABLE:
        raise TunerError(f"tuning curve: GFLOPS need the flop count of task {task.name!r}, whose template is not "
                         "registered in this process; import the module that defines it, or plot metric='time'")
    flop = create(task.name, task.args, str(inp.target)).flop
    if not flop:
        raise TunerError(f"tuning curve: task {task.name!r} counts no flop (add cfg.add_flop(...) to its "
                         "template), so it has no GFLOPS; plot metric='time'")
    return float(flop)


def tuning_curve(log, metric="gflops") -> tuple:
    """The best result after each trial of a tuning log.

    Parameters
    ----------
    log : str, os.PathLike or list of (MeasureInput, MeasureResult)
        A records file or records, in the order the trials ran, all of one workload
        on one target.
    metric : str
        ``"gflops"``: the best GFLOPS so far (0 before the first valid trial; the flop
        count comes from the template, which must be registered in this process);
        ``"time"``: the lowest mean time in seconds so far (NaN before the first
        valid trial).

    Returns
    -------
    (trials, best) : (numpy.ndarray, numpy.ndarray)
        ``trials`` is ``1..n``; ``best[k]`` the best over trials ``1..k+1``, failed
        trials included (they change nothing).

    Raises
    ------
    TunerError
        For an unknown metric, records of several workloads, a log that is neither a
        file nor records, or GFLOPS of a task whose flop count is unknown.
    RecordError
        If the file does not exist or is not a records file.
    """
    TunerError = _tuner_error()
    if metric not in METRICS:
        raise TunerError(f"tuning curve: metric must be one of {METRICS}, got {metric!r}")
    records, label = _records_of(log, TunerError)
    if not records:
        raise TunerError(f"tuning curve: {'the log ' + repr(label) if label else 'the list'} holds no records; "
                         "tune first (with a log_to_file callback)")
    workloads = {(str(inp.target), inp.task.workload) for inp, _ in records}
    if len(workloads) > 1:
        names = "; ".join(sorted(f"{w!r} on {t}" for t, w in workloads)[:6])
        raise TunerError(f"tuning curve: the log holds {len(workloads)} workloads ({names}); a curve follows one "
                         "tuning run: split the records by workload (inp.task.workload) first")
    flop = _flop_of(records[0][0], TunerError) if metric == "gflops" else 0.0
    trials = np.arange(1, len(records) + 1)
    best = np.empty(len(records), dtype=np.float64)
    so_far = 0.0 if metric == "gflops" else np.nan
    for k, (_, res) in enumerate(records):
        if res.error_no == 0 and res.costs:
            cost = res.mean_cost
            if metric == "gflops":
                so_far = max(so_far, flop / cost / 1e9 if cost > 0 else 0.0)
            elif np.isnan(so_far) or cost < so_far:
                so_far = cost
        best[k] = so_far
    return trials, best


def _logs_and_labels(logs, labels, TunerError) -> list:
    """``[(log, label)]`` of what :func:`plot_tuning_curve` was given."""
    if isinstance(logs, dict):
        if labels is not None:
            raise TunerError("plot_tuning_curve: a dict of logs already names them; leave labels out")
        return [(log, str(label)) for label, log in logs.items()]
    if isinstance(logs, (str, os.PathLike)):
        logs = [logs]
    elif isinstance(logs, (list, tuple)) and logs and isinstance(logs[0], tuple):
        logs = [logs]  # one list of records
    elif not isinstance(logs, (list, tuple)):
        raise TunerError(f"plot_tuning_curve: logs are a file, a list of records, a list of those, or a dict "
                         f"label -> log, not a {type(logs).__name__}")
    if not logs:
        raise TunerError("plot_tuning_curve: no logs given")
    if labels is None:
        labels = [os.path.basename(os.fspath(log)) if isinstance(log, (str, os.PathLike)) else f"log {k + 1}"
                  for k, log in enumerate(logs)]
    elif isinstance(labels, str):
        labels = [labels]
    if len(labels) != len(logs):
        raise TunerError(f"plot_tuning_curve: {len(labels)} label(s) for {len(logs)} log(s); give one label per log")
    return list(zip(logs, [str(x) for x in labels]))


def plot_tuning_curve(logs, labels=None, ax=None, metric="gflops", path=None):
    """Plot the best result so far against the trial number, one line per log.

    Parameters
    ----------
    logs : str, list or dict
        A records file, a list of records, a list of files (or of record lists), or a
        dict ``label -> log``.
    labels : list of str, optional
        A legend entry per log (default: the file names, or "log 1", "log 2"...).
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure otherwise.
    metric : str
        ``"gflops"`` (best GFLOPS so far) or ``"time"`` (best time so far, plotted in
        milliseconds).
    path : str, optional
        Also save the figure there as a PNG.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    TunerError
        If matplotlib is not installed, or for the reasons of :func:`tuning_curve`.
    """
    TunerError = _tuner_error()
    if metric not in METRICS:
        raise TunerError(f"plot_tuning_curve: metric must be one of {METRICS}, got {metric!r}")
    pairs = _logs_and_labels(logs, labels, TunerError)
    curves = [(label, *tuning_curve(log, metric)) for log, label in pairs]
    try:
        import matplotlib  # noqa: PLC0415

        if ax is None:
            import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        raise TunerError("plot_tuning_curve needs matplotlib: pip install matplotlib") from None
    del matplotlib
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, trials, best in curves:
        y = best * 1e3 if metric == "time" else best
        ax.step(trials, y, where="post", label=label)
    ax.set_xlabel("trial")
    ax.set_ylabel("best GFLOPS so far" if metric == "gflops" else "best time so far (ms)")
    ax.set_title("tuning curve")
    ax.grid(True, alpha=0.3)
    if len(curves) > 1 or labels is not None or isinstance(logs, dict):
        ax.legend()
    if path is not None:
        ax.figure.savefig(os.fspath(path), format="png", dpi=100, bbox_inches="tight")
    return ax


__all__ = ["METRICS", "plot_tuning_curve", "tuning_curve"]
