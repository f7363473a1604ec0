"""Callbacks of a tuning run (AutoTVM's ``autotvm.callback``): called as
``callback(tuner, inputs, results)`` after each measured batch."""
from __future__ import annotations

import logging
import os

import numpy as np

from ...errors import TeccError
from ..measure.measure import MeasureErrorNo

logger = logging.getLogger("tecc.autotvm")


def log_to_file(file_out, protocol="json"):
    """Append every trial to ``file_out`` (one JSON line each, flushed and synced
    after each batch, so a killed run loses nothing measured).  A tuner given this
    callback resumes from the trials of its task already in the file."""
    from .. import record  # noqa: PLC0415

    if protocol != "json":
        raise TeccError(f"log_to_file: protocol {protocol!r} is not supported; use \"json\"")
    if not isinstance(file_out, (str, os.PathLike)):
        raise TeccError(f"log_to_file: give a file name, not {type(file_out).__name__}")
    file_out = os.fspath(file_out)
    folder = os.path.dirname(os.path.abspath(file_out))
    if not os.path.isdir(folder):
        raise TeccError(f"log_to_file: the folder {folder!r} of {file_out!r} does not exist; create it first")

    def _callback(_tuner, inputs, results):
        with open(file_out, "a", encoding="utf-8") as f:
            for inp, res in zip(inputs, results):
                f.write(record.encode(inp, res) + "\n")
            f.flush()
            os.fsync(f.fileno())

    _callback.filename = file_out
    return _callback


def log_to_database(db):  # TVM's other log sink: tecc keeps records in files
    raise TeccError("log_to_database: tecc keeps tuning records in JSON-lines files; use log_to_file(path)")


class Monitor:
    """Keeps the score (FLOP/s, 0 for an error) and timestamp of every trial."""

    def __init__(self):
        self.scores, self.timestamps = [], []

    def __call__(self, tuner, inputs, results):
        for inp, res in zip(inputs, results):
            ok = res.error_no == MeasureErrorNo.NO_ERROR
            self.scores.append(inp.task.flop / res.mean_cost if ok else 0.0)
            self.timestamps.append(res.timestamp)

    def reset(self):
        self.scores, self.timestamps = [], []

    def trial_scores(self):
        return np.array(self.scores)

    def trial_timestamps(self):
        return np.array(self.timestamps)


def _tqdm_class():
    """tqdm's notebook widget where Jupyter's widgets are installed, else its text bar
    (which a notebook shows too: without ipywidgets, ``tqdm.auto`` falls back to it
    with a warning in every run)."""
    try:
        import ipywidgets  # noqa: F401,PLC0415
    except ImportError:
        from tqdm import tqdm  # noqa: PLC0415
        return tqdm
    from tqdm.auto import tqdm  # noqa: PLC0415
    return tqdm


def progress_bar(total, prefix="", si_prefix="G"):
    """A progress bar (tqdm: the terminal, or a widget in Jupyter) of trials, with
    the errors so far, the best FLOP/s and the time left."""
    from .tuner import _si_scale  # noqa: PLC0415

    scale = _si_scale(si_prefix)

    class _Bar:
        def __init__(self):
            self.bar = None
            self.errors = 0
            self.done = 0

        def _open(self, tuner):
            if self.bar is None:
                tqdm = _tqdm_class()

                self.bar = tqdm(total=min(total, tuner.n_trial or total), desc=prefix or tuner.task.name,
                                unit="trial", leave=True)

        def resumed(self, tuner, n_done):
            self._open(tuner)
            if n_done:
                self.done = n_done
                self.bar.update(n_done)
                self._show(tuner)

        def _show(self, tuner):
            self.bar.set_postfix_str(f"best {tuner.best_flops / scale:.2f} {si_prefix}FLOPS, "
                                     f"errors {self.errors}", refresh=False)

        def __call__(self, tuner, inputs, results):
            self._open(tuner)
            self.errors += sum(1 for r in results if r.error_no != MeasureErrorNo.NO_ERROR)
            self.done += len(inputs)
            self._show(tuner)
            self.bar.update(len(inputs))
            if self.done >= self.bar.total or (tuner.ttl is not None and tuner.ttl <= 0):
                self.bar.close()

    return _Bar()
