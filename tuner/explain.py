"""Why the best config of a tuning run won (``autotvm.explain``).

:func:`explain` reads tuning records (a log file, a list of ``(inp, result)`` pairs, or
a task and its log) and, for the best valid record of each workload, says:

* **what it is**: the knobs, the measured time and GFLOPS, whether the time comes from
  tecc's CPU emulator of CUDA;
* **what it does**: the config is instantiated again, lowered, and read through
  :func:`tecc.tir.analysis.extract_features` -- on a GPU the main kernel's grid,
  threads per block, shared memory per block, local arrays per thread, estimated
  registers and occupancy (and the resource that limits it); on a CPU the parallel,
  vectorized and unrolled loops and the vector width; the loop nest of the main
  statement;
* **where it sits on the roofline**: arithmetic intensity, the device's roofs
  (:func:`tecc.runtime.device_peaks`), the attainable FLOP/s
  ``min(peak, intensity x bandwidth)``, the achieved share of it, memory- or
  compute-bound;
* **why the cost model prefers it**: an :class:`~.tuner.XGBoostCostModel`
  (``"itervar"`` features, ``"rank"`` loss) is trained on the workload's measured
  configs, and the SHAP contributions (XGBoost's ``pred_contribs``) of the best config
  are compared with the average over the measured configs: the features that differ
  most, with their values, as a table and in words.

The arithmetic intensity of the roofline counts each global buffer the function
touches once (the compulsory traffic, what a perfect cache would leave): the
intensity a kernel can reach.  The intensity per access (every load and store of
global memory counted) is reported beside it: how much the schedule leans on caches
and registers.

The result is an :class:`Explanation`: numbers as attributes (``.to_dict()`` is
JSON), a plain-text report (``str``) and HTML tables in Jupyter.
"""
from __future__ import annotations

import html
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import TeccError

#: the fewest measured configs the cost model is trained on to explain a choice
MIN_MODEL_RECORDS = 8


# ---------------------------------------------------------------------------------
# the result
# ---------------------------------------------------------------------------------
@dataclass
class KernelFacts:
    """The main GPU kernel of the explained config.

    ``grid``/``block``/``threads_per_block``/``blocks``/``shared_bytes`` describe the
    kernel as launched (the function lowered for the target, cross-thread reduction
    buffers included); ``local_bytes`` are the local arrays per thread the schedule
    declares (register promotion may turn them into registers, which the estimate
    counts).  ``registers_est``, ``blocks_per_sm``, ``occupancy`` and ``limited_by``
    come from :func:`tecc.tir.analysis.estimate_occupancy` for ``arch``.
    """

    arch: str
    num_kernels: int
    grid: tuple
    block: tuple
    threads_per_block: int
    blocks: int
    shared_bytes: int
    local_bytes: int
    registers_est: int
    blocks_per_sm: int
    occupancy: float
    limited_by: str


@dataclass
class CPUFacts:
    """The loops of a CPU schedule: each list holds ``"name x extent"`` per distinct
    loop of that kind."""

    parallel_loops: list
    vectorized_loops: list
    unrolled_loops: list
    vector_width: int
    parallel_extent: int


@dataclass
class Roofline:
    """Where the explained config sits under the device's roofs.

    ``intensity`` is flop per byte of compulsory global traffic; ``attainable`` is
    ``min(peak_flops, intensity * bandwidth)``; ``achieved`` the measured FLOP/s;
    ``fraction`` their ratio; ``bound`` "memory-bound" or "compute-bound".  Fields are
    None when they do not apply, and ``note`` says why (an emulated time, unknown
    peaks, records from another machine, no measured time).
    """

    intensity: float | None
    access_intensity: float | None
    global_bytes: float
    access_bytes: float
    peak_flops: float | None = None
    bandwidth: float | None = None
    compute_roof: str = "FP32"
    peaks_source: str = ""
    device: str = ""
    ridge: float | None = None
    attainable: float | None = None
    achieved: float | None = None
    fraction: float | None = None
    bound: str | None = None
    note: str = ""


@dataclass
class FeatureEffect:
    """One feature whose SHAP contribution differs most between the best config and
    the average measured config.

    ``name`` is the feature's generic name (:func:`tecc.tuner.feature.feature_names`),
    ``label`` the same position named after the best config's statements, loops and
    buffers; ``best`` and ``mean`` are raw values (not the log2 the model reads);
    ``effect`` is the best config's contribution minus the mean contribution (in the
    model's score, higher = predicted faster).
    """

    name: str
    label: str
    best: float
    mean: float
    effect: float
    best_contribution: float
    mean_contribution: float
    sentence: str


@dataclass
class ModelExplanation:
    """What the cost model says about the best config.

    ``trained`` is False when there were too few measured configs (``reason`` says
    so).  ``margin_best`` is the model's raw score of the best config, equal to
    ``bias`` plus the sum of its contributions; ``margin_mean`` the average score of
    the measured configs; ``rank_correlation`` the Spearman correlation of the model's
    scores with the measured FLOP/s on the configs it was trained on.
    ``cost_model`` (the trained :class:`~.tuner.XGBoostCostModel`), ``indexes`` (the
    configs it was trained on), ``best_contributions`` and ``mean_contributions``
    (every feature's, bias last) are kept for inspection and left out of
    :meth:`Explanation.to_dict`.
    """

    trained: bool
    reason: str = ""
    n_configs: int = 0
    feature_type: str = "itervar"
    loss_type: str = "rank"
    bias: float | None = None
    margin_best: float | None = None
    margin_mean: float | None = None
    rank_correlation: float | None = None
    effects: list = field(default_factory=list)
    cost_model: object = field(default=None, repr=False)
    indexes: list = field(default_factory=list, repr=False)
    best_contributions: object = field(default=None, repr=False)
    mean_contributions: object = field(default=None, repr=False)

    _PRIVATE = ("cost_model", "indexes", "best_contributions", "mean_contributions")

    @property
    def sentences(self) -> list:
        return [e.sentence for e in self.effects]


@dataclass
class WorkloadExplanation:
    """The explanation of one workload's best config (one section of the report).

    ``measured`` is False for a task explained without records (its fallback config,
    by its features only); then the times and GFLOPS are None.  ``n_trials`` counts
    the workload's records on this target, failed ones included; ``n_valid`` those
    with a time.  ``cost`` is seconds per run (the mean of ``costs``).
    """

    task_name: str
    args: tuple
    target: str
    config_index: int | None
    knobs: dict
    measured: bool
    n_trials: int
    n_valid: int
    flop: float
    cost: float | None
    costs: list
    gflops: float | None
    emulated: bool
    measured_on: str
    loop_nest: str
    kernel: KernelFacts | None
    cpu: CPUFacts | None
    roofline: Roofline
    model: ModelExplanation
    notes: list = field(default_factory=list)

    @property
    def workload(self) -> tuple:
        return (self.task_name,) + tuple(self.args)

    def to_dict(self) -> dict:
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name == "model":
                value = {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__
                         if k not in ModelExplanation._PRIVATE and not k.startswith("_")}
                value["effects"] = [_plain(vars(e)) for e in self.model.effects]
            elif hasattr(value, "__dataclass_fields__"):
                value = {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}
            out[name] = _plain(value)
        return out

    # the report ---------------------------------------------------------------------
    def _blocks(self) -> list:
        """The report as blocks, which the text and the HTML renderers share:
        ``("title", text)``, ``("subtitle", text)``, ``("kv", [(key, value)])``,
        ``("table", headers, rows)``, ``("lines", [text])``."""
        title = f"{self.task_name} {tuple(self.args)!r} on {self.target}"
        blocks = [("title", title)]
        if self.measured:
            head = (f"best of {self.n_trials} trial(s) ({self.n_valid} valid): config #{self.config_index}")
        else:
            head = "no tuning records: the fallback config the template builds untuned, by its features only"
        blocks.append(("lines", [head]))
        knob_rows = [(name, _fmt_value(v)) for name, v in self.knobs.items()] or [("(no knobs)", "")]
        blocks.append(("table", ["knob", "value"], knob_rows))

        kv = []
        if self.measured:
            rep = f" (mean of {len(self.costs)})" if len(self.costs) > 1 else ""
            kv.append(("time", _fmt_time(self.cost) + rep + ("  [emulated: tecc's CPU emulator of CUDA]"
                                                              if self.emulated else "")))
            kv.append(("GFLOPS", f"{self.gflops:.4g}" if self.gflops is not None else "n/a (no flop count)"))
            kv.append(("measured on", self.measured_on or "(not recorded)"))
        kv.append(("flop", f"{self.flop:.6g}"))
        kv.append(("loop nest", self.loop_nest or "(no loops)"))
        k = self.kernel
        if k is not None:
            kv += [
                ("kernels", str(k.num_kernels)),
                ("grid x block", f"{_dims(k.grid)} x {_dims(k.block)}"),
                ("threads per block", str(k.threads_per_block)),
                ("blocks", str(k.blocks)),
                ("shared memory per block", _fmt_bytes(k.shared_bytes)),
                ("local arrays per thread", _fmt_bytes(k.local_bytes)),
                ("registers per thread (est.)", str(k.registers_est)),
                ("occupancy (est.)", f"{k.occupancy:.0%} on {k.arch}, {k.blocks_per_sm} block(s) per SM, "
                                     f"limited by {_LIMIT_WORDS.get(k.limited_by, k.limited_by)}"),
            ]
        c = self.cpu
        if c is not None:
            kv += [
                ("parallel loops", ", ".join(c.parallel_loops) or "none"),
                ("vectorized loops", ", ".join(c.vectorized_loops) or "none"),
                ("unrolled loops", ", ".join(c.unrolled_loops) or "none"),
                ("vector width", str(c.vector_width)),
            ]
        blocks.append(("kv", kv))

        r = self.roofline
        roof = [("arithmetic intensity", (f"{r.intensity:.3g} flop/byte over {_fmt_bytes(r.global_bytes)} of "
                                          "compulsory global traffic") if r.intensity is not None else "n/a"),
                ("intensity per access", (f"{r.access_intensity:.3g} flop/byte over {_fmt_bytes(r.access_bytes)} "
                                          "of global loads and stores") if r.access_intensity is not None else "n/a")]
        if r.peak_flops is not None or r.bandwidth is not None:
            roof.append(("peaks", f"{_fmt_rate(r.peak_flops)} {r.compute_roof}, {_fmt_bandwidth(r.bandwidth)} on "
                                  f"{r.device}"))
        if r.ridge is not None:
            roof.append(("ridge point", f"{r.ridge:.3g} flop/byte"))
        if r.attainable is not None:
            roof.append(("attainable", f"{_fmt_rate(r.attainable)} ({r.bound})"))
        if r.achieved is not None and r.fraction is not None:
            roof.append(("achieved", f"{_fmt_rate(r.achieved)} = {r.fraction * 100:.3g}% of attainable"))
        if r.note:
            roof.append(("note", r.note))
        if r.peaks_source:
            roof.append(("peaks from", r.peaks_source))
        blocks.append(("subtitle", "roofline"))
        blocks.append(("kv", roof))

        m = self.model
        blocks.append(("subtitle", "why the cost model prefers it"))
        if not m.trained:
            blocks.append(("lines", [m.reason]))
        else:
            rho = (f", Spearman {m.rank_correlation:.2f} with the measured speed on them"
                   if m.rank_correlation is not None else "")
            blocks.append(("lines", [
                f"XGBoost ({m.feature_type} features, {m.loss_type} loss) trained on {m.n_configs} measured configs"
                f"{rho}; score of the best config {m.margin_best:.3g} vs {m.margin_mean:.3g} on average "
                "(higher = predicted faster; SHAP contributions, bias "
                f"{m.bias:.3g})"]))
            if m.effects:
                rows = [(e.label, _fmt_num(e.best), _fmt_num(e.mean), f"{e.effect:+.3g}") for e in m.effects]
                blocks.append(("table", ["feature", "best", "mean", "effect"], rows))
                blocks.append(("lines", [e.sentence for e in m.effects]))
            else:
                blocks.append(("lines", ["no feature's contribution differs between the best config and the "
                                         "average: the model scores the measured configs alike"]))
        if self.notes:
            blocks.append(("lines", [f"note: {n}" for n in self.notes]))
        return blocks


class Explanation:
    """The explanations of the workloads of a tuning log, one :class:`WorkloadExplanation`
    per section (``len(e)``, ``e[0]``, iteration).

    ``str(e)`` is a plain-text report, ``e._repr_html_()`` the same as HTML tables,
    ``e.to_dict()`` every number as JSON-serialisable data.
    """

    def __init__(self, sections, source=""):
        self.sections = list(sections)
        self.source = source

    def __len__(self):
        return len(self.sections)

    def __iter__(self):
        return iter(self.sections)

    def __getitem__(self, i):
        return self.sections[i]

    def to_dict(self) -> dict:
        return {"source": self.source, "sections": [s.to_dict() for s in self.sections]}

    def __str__(self):
        parts = []
        if self.source:
            parts.append(f"explanation of {self.source}")
        for s in self.sections:
            parts.append(_render_text(s._blocks()))
        return "\n\n".join(parts)

    def __repr__(self):
        names = ", ".join(f"{s.task_name}{tuple(s.args)!r}" for s in self.sections)
        return f"Explanation({len(self)} workload(s): {names})"

    def _repr_html_(self):
        out = ['<div class="tecc-explanation">']
        if self.source:
            out.append(f"<p>explanation of {html.escape(self.source)}</p>")
        for s in self.sections:
            out.append(_render_html(s._blocks()))
        out.append("</div>")
        return "\n".join(out)


# ---------------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------------
def explain(source, task=None, top=8, model_trials=None, log=None) -> Explanation:
    """Explain the best config of each workload in tuning records.

    Parameters
    ----------
    source : str, os.PathLike, list of (MeasureInput, MeasureResult), or Task
        A records file (``log_to_file``'s), records in memory, or a task: then its
        records come from ``log`` if given, and without records its fallback config
        (what the template builds untuned) is explained by its features only.
    task : Task, optional
        Explain only this workload (on the task's target kind); its config space and
        flop count are used (otherwise the task is made again from the records with
        ``autotvm.task.create``, which needs the template registered in this process).
    top : int
        How many features the cost-model part reports.
    model_trials : int, optional
        Train the cost model on at most this many of the workload's measured configs
        (the first in the log; the best is always among them).  None: all.
    log : str or list, optional
        The records of a ``Task`` given as ``source``.

    Returns
    -------
    Explanation
        One section per workload (and per emulated/real time of it), in the order the
        workloads first appear.

    Raises
    ------
    RecordError
        If the file does not exist or holds no valid record (of ``task``).
    TunerError
        If ``task`` has no records in ``source``, a template is not registered in this
        process, a record's config no longer matches its template, or an argument is
        wrong.
    """
    from .record import RecordError  # noqa: PLC0415
    from .task.task import Task  # noqa: PLC0415

    TunerError = _tuner_error()
    if not isinstance(top, int) or isinstance(top, bool) or top < 1:
        raise TunerError(f"explain: top must be a positive int (the features to report), got {top!r}")
    if model_trials is not None and (not isinstance(model_trials, int) or isinstance(model_trials, bool)
                                     or model_trials < 1):
        raise TunerError(f"explain: model_trials must be a positive int or None (all), got {model_trials!r}")
    if isinstance(source, Task):
        if task is not None and task is not source:
            raise TunerError("explain: a Task is given both as the source and as task=; give it once "
                             "(explain(task, log=...) or explain(log, task=task))")
        task = source
        if log is None:
            return Explanation([_explain_fallback(task)], source=f"task {task.name}")
        source = log
    elif log is not None:
        raise TunerError("explain: log= goes with a Task as the source (explain(task, log=path)); with a file or "
                         "records, pass them as the first argument")
    records, where = _load(source, RecordError, TunerError)
    groups = _group(records)
    if task is not None:
        kind = _kind(task.target)
        wanted = {key: g for key, g in groups.items() if key[1] == kind and key[2] == task.workload}
        if not wanted:
            found = sorted({f"{key[2]!r} on {key[1]}" for key in groups}) or ["nothing"]
            raise TunerError(f"explain: {where} has no records of workload {task.workload!r} on "
                             f"{kind or 'any target'}; it holds: {'; '.join(found[:8])}. Pass the task the log was "
                             "tuned for, or leave task= out to explain every workload")
        groups = wanted
    considered = [r for group in groups.values() for r in group]
    sections = []
    for key, group in groups.items():
        for emulated in (False, True):
            valid = [r for r in group if r[1].error_no == 0 and bool(getattr(r[1], "emulated", False)) == emulated]
            if valid:
                sections.append(_explain_records(group, valid, task, top, model_trials, TunerError))
    if not sections:
        errors = _error_summary(considered)
        of = f" of workload {task.workload!r}" if task is not None else ""
        raise RecordError(f"explain: {where} holds no valid record{of} ({len(considered)} trial(s), every one "
                          f"failed: "
                          f"{errors}); fix what the errors say and tune again, or pass the log of a run that "
                          "measured something")
    return Explanation(sections, source=where)


def _tuner_error():
    from .tuner.tuner import TunerError  # noqa: PLC0415

    return TunerError


def _kind(target) -> str:
    return str(target).split()[0] if target is not None else ""


def _load(source, RecordError, TunerError):
    """``(records, where)`` of a file name or a list of records."""
    from .measure.measure import MeasureInput, MeasureResult  # noqa: PLC0415
    from .record import is_baseline, load_from_file  # noqa: PLC0415

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise RecordError(f"explain: no records file {path!r}; pass the file the log_to_file callback of the "
                              "tuning run wrote (or the records themselves)")
        return [r for r in load_from_file(path) if not is_baseline(r[0])], path
    if isinstance(source, (list, tuple)):
        for k, r in enumerate(source):
            if not (isinstance(r, tuple) and len(r) == 2 and isinstance(r[0], MeasureInput)
                    and isinstance(r[1], MeasureResult)):
                raise TunerError(f"explain: item {k} of the records is a {type(r).__name__}, not a (MeasureInput, "
                                 "MeasureResult) pair; pass records as autotvm.record.load_from_file gives them")
        return [r for r in source if not is_baseline(r[0])], f"{len(source)} records"
    raise TunerError(f"explain: cannot explain a {type(source).__name__}; pass a records file, a list of "
                     "(MeasureInput, MeasureResult) records, or a Task (with log=... for its records)")


def _group(records) -> dict:
    """Records by ``(target, target kind, workload)``, in order of first appearance."""
    groups = {}
    for r in records:
        inp = r[0]
        groups.setdefault((str(inp.target), _kind(inp.target), inp.task.workload), []).append(r)
    return groups


def _error_summary(records) -> str:
    from .measure.measure import MeasureErrorNo  # noqa: PLC0415

    counts = {}
    for _, res in records:
        try:
            name = MeasureErrorNo(res.error_no).name
        except ValueError:
            name = str(res.error_no)
        counts[name] = counts.get(name, 0) + 1
    first = next((str(res.costs[0])[:200] for _, res in records if res.costs), "")
    text = ", ".join(f"{n} x{c}" for n, c in sorted(counts.items(), key=lambda kv: -kv[1])) or "no records"
    return text + (f"; the first says: {first}" if first else "")


# ---------------------------------------------------------------------------------
# one workload
# ---------------------------------------------------------------------------------
def _task_for(inp, task, TunerError):
    """The task (with config space and flop count) of a record's workload."""
    if task is not None:
        if task.config_space is None:
            raise TunerError(f"explain: task {task.name!r} has no config space; make it with "
                             "autotvm.task.create(name, args, target)")
        return task
    from .task.task import TASK_TABLE, TemplateError, create  # noqa: PLC0415

    name = inp.task.name
    if name not in TASK_TABLE:
        raise TunerError(f"explain: template {name!r} is not registered in this process; import the module that "
                         f"defines it (its @autotvm.template({name!r}) or register_topi_compute) before explaining "
                         "its records")
    try:
        return create(name, inp.task.args, str(inp.target))
    except TemplateError as e:
        raise TunerError(f"explain: the task of template {name!r} for {inp.task.args!r} could not be made "
                         f"again: {e}") from None


def _config_of(task, record_config, TunerError):
    """The point of ``task``'s space a record names, checked against the record."""
    space = task.config_space
    index = record_config.index
    if not isinstance(index, int) or not 0 <= index < len(space):
        raise TunerError(f"explain: a record of {task.name!r} names config #{index}, but the template's space has "
                         f"{len(space)} points now: the template changed since the log was written; tune again")
    cfg = space.get(index)
    mine = cfg.to_json_dict()["entity"]
    theirs = record_config.to_json_dict()["entity"]
    if _plain(mine) != _plain(theirs):
        raise TunerError(f"explain: config #{index} of {task.name!r} is {_plain(mine)} in the template now but "
                         f"{_plain(theirs)} in the record: the template changed since the log was written; "
                         "tune again")
    return cfg


def _knobs(cfg) -> dict:
    return {name: _plain(value) for name, _, value in cfg.to_json_dict()["entity"]}


def _explain_records(group, valid, task, top, model_trials, TunerError) -> WorkloadExplanation:
    best = None
    for r in valid:  # the first of the lowest mean cost, as pick_best chooses
        if best is None or r[1].mean_cost < best[1].mean_cost:
            best = r
    inp, res = best[0], best[1]
    task = _task_for(inp, task, TunerError)
    cfg = _config_of(task, inp.config, TunerError)
    flop = float(task.flop or 0.0)
    cost = res.mean_cost
    emulated = bool(getattr(res, "emulated", False))
    env = getattr(best, "env", None) or {}
    ff, facts_kernel, facts_cpu, nest = _facts(task, cfg, env, TunerError)
    flop = flop or float(ff.flops)
    gflops = flop / cost / 1e9 if flop and cost > 0 else None
    roof = _roofline(task, ff, flop, cost, emulated, env)
    model = _model_part(task, valid, cfg.index, top, model_trials)
    notes = []
    if facts_cpu is not None and not facts_cpu.parallel_loops and roof.peak_flops is not None:
        notes.append("the schedule has no parallel loop: it runs on one core, and the FP32 peak counts them all")
    if not task.flop:
        notes.append("the task counts no flop (cfg.add_flop in the template, or a float compute): GFLOPS and the "
                     "intensity use the flops read from the lowered TIR")
    return WorkloadExplanation(
        task_name=task.name, args=tuple(task.args), target=str(inp.target), config_index=cfg.index,
        knobs=_knobs(cfg), measured=True, n_trials=len(group), n_valid=len(valid), flop=flop, cost=cost,
        costs=[float(c) for c in res.costs], gflops=gflops, emulated=emulated,
        measured_on=str(env.get("device", "")), loop_nest=nest, kernel=facts_kernel, cpu=facts_cpu,
        roofline=roof, model=model, notes=notes)


def _explain_fallback(task) -> WorkloadExplanation:
    TunerError = _tuner_error()
    from .task.space import FallbackConfigEntity  # noqa: PLC0415

    cfg = FallbackConfigEntity()
    ff, facts_kernel, facts_cpu, nest = _facts(task, cfg, {}, TunerError)
    flop = float(task.flop or 0.0) or float(ff.flops)
    knobs = {name: _plain(_entity_value(cfg[name])) for name in cfg.space_map}
    roof = _roofline(task, ff, flop, None, False, {})
    model = ModelExplanation(trained=False, reason="no measured configs to train the cost model on: tune the "
                                                   "task and explain its log")
    return WorkloadExplanation(
        task_name=task.name, args=tuple(task.args), target=str(task.target), config_index=None, knobs=knobs,
        measured=False, n_trials=0, n_valid=0, flop=flop, cost=None, costs=[], gflops=None, emulated=False,
        measured_on="", loop_nest=nest, kernel=facts_kernel, cpu=facts_cpu, roofline=roof, model=model,
        notes=[])


def _entity_value(entity):
    for attr in ("size", "perm", "anns", "val"):
        if hasattr(entity, attr):
            return getattr(entity, attr)
    return repr(entity)


def _arch(task, env) -> str:
    """The GPU architecture the occupancy is estimated for: the target's ``-arch``,
    else the measuring GPU's compute capability, else what tecc compiles for here."""
    from ..cuda_codegen import cuda_arch  # noqa: PLC0415
    from ..target import Target  # noqa: PLC0415

    from ..tir.analysis import estimate_occupancy  # noqa: PLC0415

    tgt = Target.canon(task.target)
    if tgt.cuda_arch is None and env.get("compute_capability") and not env.get("emulated"):
        measured = "sm_" + str(env["compute_capability"]).replace(".", "")
        try:
            estimate_occupancy(32, 0, 0, measured)  # a compute capability tecc has the SM limits of
            return measured
        except TeccError:
            pass
    return cuda_arch(tgt)


def _facts(task, cfg, env, TunerError):
    """``(FunctionFeatures, KernelFacts or None, CPUFacts or None, loop nest)``."""
    from ..target import Target  # noqa: PLC0415
    from ..tir.analysis import estimate_occupancy, extract_features  # noqa: PLC0415
    from .feature import lower_for_features  # noqa: PLC0415
    from .task.task import TemplateError  # noqa: PLC0415

    is_cuda = _kind(task.target) == "cuda"
    arch = _arch(task, env) if is_cuda else None
    try:
        sch, args = task.instantiate(cfg)
        with Target(task.target):
            ff = extract_features(lower_for_features(sch, args), arch=arch)
            launched = extract_features(lower_for_features(sch, args, level="target", target=task.target),
                                        arch=arch) if is_cuda else None
    except TemplateError as e:
        raise TunerError(f"explain: {e}") from None
    except TeccError as e:
        raise TunerError(f"explain: config {cfg!r} of {task.name!r} no longer instantiates or lowers: "
                         f"{type(e).__name__}: {e}") from None
    kernel = cpu = None
    if is_cuda and launched is not None and launched.kernels:
        k = launched.kernels[launched.main_kernel]
        local = k.local_bytes
        if ff.main_kernel >= 0:
            local = max(local, ff.kernels[ff.main_kernel].local_bytes)
        occ = estimate_occupancy(k.threads_per_block, k.shared_bytes, local, arch)
        limited_by = occ.limited_by
        kernel = KernelFacts(arch=occ.arch, num_kernels=len(launched.kernels), grid=tuple(k.grid),
                             block=tuple(k.block), threads_per_block=int(k.threads_per_block), blocks=int(k.blocks),
                             shared_bytes=int(k.shared_bytes), local_bytes=int(local),
                             registers_est=int(occ.registers_per_thread), blocks_per_sm=int(occ.blocks_per_sm),
                             occupancy=float(occ.occupancy), limited_by=limited_by)
    elif not is_cuda:
        seen = {"parallel": [], "vectorized": [], "unrolled": []}
        for st in ff.stmts:
            for lp in st.loops:
                text = f"{lp.var} x {lp.extent}"
                if lp.kind in seen and text not in seen[lp.kind]:
                    seen[lp.kind].append(text)
        cpu = CPUFacts(parallel_loops=seen["parallel"], vectorized_loops=seen["vectorized"],
                       unrolled_loops=seen["unrolled"], vector_width=int(ff.vector_width),
                       parallel_extent=int(ff.parallel_extent))
    return ff, kernel, cpu, _loop_nest(ff)


_KIND_MARK = {"parallel": "parallel", "vectorized": "vectorized", "unrolled": "unrolled", "vthread": "vthread"}


def _loop_nest(ff) -> str:
    """The loops of the statement doing the most flops: ``C: i.outer(8) k(64) j.inner(16, vectorized)``."""
    if not ff.stmts:
        return ""
    main = max(range(len(ff.stmts)), key=lambda i: (ff.stmts[i].flops, ff.stmts[i].bytes, -i))
    st = ff.stmts[main]
    parts = []
    for lp in st.loops:
        mark = _KIND_MARK.get(lp.kind) or (lp.tag if lp.tag else "")
        parts.append(f"{lp.var}({lp.extent}{', ' + mark if mark else ''})")
    return f"{st.label}: " + (" ".join(parts) if parts else "(no loops)")


def _global_bytes(ff) -> float:
    """Bytes of compulsory global traffic: each global buffer's distinct bytes, once."""
    per_buffer = {}
    for st in ff.stmts:
        for a in st.accesses:
            if a.scope == "global":
                per_buffer[a.buffer] = max(per_buffer.get(a.buffer, 0.0), float(a.unique_bytes))
    return float(sum(per_buffer.values()))


def _roofline(task, ff, flop, cost, emulated, env) -> Roofline:
    from ..runtime import device_peaks  # noqa: PLC0415
    from ..target import Target  # noqa: PLC0415

    global_bytes = _global_bytes(ff)
    access_bytes = float(ff.bytes_moved["global"])
    roof = Roofline(intensity=flop / global_bytes if global_bytes else None,
                    access_intensity=flop / access_bytes if access_bytes else None,
                    global_bytes=global_bytes, access_bytes=access_bytes)
    if emulated:
        roof.note = ("the time is from tecc's CPU emulator of CUDA (no GPU here when it was measured): it says "
                     "nothing about a GPU's roofs, so no roofline applies")
        return roof
    here = ""
    if env.get("device"):
        from .record import environment  # noqa: PLC0415

        here = environment(task.target).get("device", "")
        if here and env["device"] != here:
            roof.note = (f"measured on {env['device']!r}, and this machine is {here!r}: its roofs say nothing "
                         "about that device; explain the log where it was measured")
            return roof
    peaks = device_peaks(Target.canon(task.target))
    if peaks.tensor_flops is not None and any(st.label.startswith("mma_sync(") for st in ff.stmts):
        peaks = peaks.tensor_cores()  # its arithmetic runs on the tensor cores: theirs is the compute roof
        roof.compute_roof = "FP16 tensor"
    roof.peak_flops, roof.bandwidth = peaks.flops, peaks.bandwidth
    roof.peaks_source, roof.device = peaks.source, peaks.device
    if not peaks.known:
        roof.note = "the device's peaks are unknown, so no roofline (the peaks' source says why)"
        return roof
    roof.ridge = peaks.ridge
    if roof.intensity is None:
        roof.note = "the function moves no global memory: no arithmetic intensity"
        return roof
    roof.attainable = peaks.attainable(roof.intensity)
    roof.bound = "memory-bound" if roof.intensity < peaks.ridge else "compute-bound"
    if cost is None:
        roof.note = "no measured time: where the config would sit under the roof is unknown"
        return roof
    roof.achieved = flop / cost if cost > 0 else None
    if roof.achieved is not None and roof.attainable:
        roof.fraction = roof.achieved / roof.attainable
        if roof.fraction > 1:
            roof.note = ("above the roof: a peak is underestimated (the CPU bandwidth is a numpy copy; the "
                         "compulsory traffic may fit in the caches)")
    return roof


# ---------------------------------------------------------------------------------
# the cost model's view
# ---------------------------------------------------------------------------------
def _model_part(task, valid, best_index, top, model_trials) -> ModelExplanation:
    from ..target import Target  # noqa: PLC0415
    from ..tir.analysis import extract_features  # noqa: PLC0415
    from . import feature  # noqa: PLC0415
    from .tuner.xgboost_cost_model import XGBoostCostModel  # noqa: PLC0415

    # one row per distinct config, its best time, in log order
    by_index = {}
    for inp, res in valid:
        i = inp.config.index
        if i not in by_index or res.mean_cost < by_index[i]:
            by_index[i] = res.mean_cost
    indexes = list(by_index)
    if model_trials is not None and len(indexes) > model_trials:
        indexes = indexes[:model_trials]
        if best_index not in indexes:
            indexes[-1] = best_index
    if len(indexes) < MIN_MODEL_RECORDS:
        return ModelExplanation(trained=False, n_configs=len(indexes), reason=(
            f"{len(indexes)} measured config(s): the cost model needs at least {MIN_MODEL_RECORDS} to say why one "
            "wins; tune more trials"))
    flop = float(task.flop or 0.0) or 1.0
    speed = np.array([flop / max(by_index[i], 1e-12) for i in indexes])
    # one thread: on a few dozen rows, xgboost's thread pool costs more than it saves
    model = XGBoostCostModel(task, feature_type="itervar", loss_type="rank", num_threads=1)
    model.fit(indexes, speed, len(indexes))
    if model.bst is None:
        return ModelExplanation(trained=False, n_configs=len(indexes), reason=(
            "the cost model could not be trained: no measured config lowered to features"))
    x, _ = model.features(indexes)
    contrib, names = model.contributions(indexes)
    contrib = np.asarray(contrib, dtype=np.float64)
    b = indexes.index(best_index)
    best_c = contrib[b]
    mean_c = contrib.mean(axis=0)
    margin = np.asarray(model.predict_features(x, output_margin=True), dtype=np.float64)

    # raw (not log2) values of every config, and names after the best config's loops
    arch = _arch(task, {}) if _kind(task.target) == "cuda" else None
    raw = []
    labels = None
    with Target(task.target):
        for i in indexes:
            sch, args = task.instantiate(task.config_space.get(i))
            ff = extract_features(feature.lower_for_features(sch, args), arch=arch)
            raw.append(feature.flat_itervar(ff, take_log=False))
            if i == best_index:
                labels = feature.get_flatten_name(feature.itervar_rows(ff))
    raw = np.asarray(raw, dtype=np.float64)
    width = contrib.shape[1] - 1
    diff = best_c[:width] - mean_c[:width]
    order = [j for j in np.argsort(-np.abs(diff), kind="stable") if diff[j] != 0][:top]
    effects = []
    for j in order:
        j = int(j)
        label = labels[j] if labels is not None and j < len(labels) else names[j]
        best_v, mean_v = float(raw[b, j]), float(raw[:, j].mean())
        effects.append(FeatureEffect(
            name=names[j], label=label, best=best_v, mean=mean_v, effect=float(diff[j]),
            best_contribution=float(best_c[j]), mean_contribution=float(mean_c[j]),
            sentence=_sentence(label, best_v, mean_v, float(diff[j]))))
    return ModelExplanation(
        trained=True, n_configs=len(indexes), bias=float(best_c[-1]), margin_best=float(margin[b]),
        margin_mean=float(margin.mean()), rank_correlation=_spearman(margin, speed), effects=effects,
        cost_model=model, indexes=list(indexes), best_contributions=best_c, mean_contributions=mean_c)


def _ranks(a) -> np.ndarray:
    """Ranks of ``a`` (ties share their average rank)."""
    a = np.asarray(a, dtype=np.float64)
    order = np.argsort(a, kind="stable")
    ranks = np.empty(len(a))
    ranks[order] = np.arange(len(a), dtype=np.float64)
    for v in np.unique(a):
        tie = a == v
        if tie.sum() > 1:
            ranks[tie] = ranks[tie].mean()
    return ranks


def _spearman(a, b) -> float | None:
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


# ---------------------------------------------------------------------------------
# features in words
# ---------------------------------------------------------------------------------
_FN_WORDS = {
    "flops": "flop count", "bytes_global": "global memory traffic", "bytes_shared": "shared memory traffic",
    "bytes_local": "local memory traffic", "arith_intensity": "flop count per byte accessed",
    "vector_width": "vector width", "parallel_extent": "parallel extent", "num_stmts": "statement count",
    "num_kernels": "kernel count", "alloc_global": "size of global scratch buffers",
    "alloc_local": "size of local buffers", "symbolic_loops": "count of loops of symbolic extent",
    "threads_per_block": "thread count per block", "blocks": "block count",
    "shared_bytes": "shared memory per block", "local_bytes": "local memory per thread",
    "registers_est": "register estimate per thread", "blocks_per_sm": "count of resident blocks per SM",
    "occupancy": "estimated occupancy",
}
_STMT_WORDS = {
    "executions": "execution count", "float_ops": "float-op count per execution",
    "int_ops": "integer-op count per execution", "flops": "flop count", "bytes": "memory traffic",
    "vector_width": "vector width", "unroll_extent": "unrolled extent", "auto_unroll_max_step": "auto-unroll limit",
    "parallel_extent": "parallel extent", "depth": "loop depth",
}
_LOOP_WORDS = {
    "extent": "extent of {loop}", "nest_level": "nesting level of {loop}",
    "topdown": "iteration count down to {loop}", "bottomup": "iteration count inside {loop}",
    "working_set": "working set (bytes) of {loop}",
}
_BUF_WORDS = {
    "count": "access count of {buf} per execution", "lanes": "vector lanes of the accesses to {buf}",
    "accesses": "access count of {buf}", "bytes": "traffic to and from {buf}",
    "unique_bytes": "distinct bytes of {buf} touched", "reuse": "reuse of {buf}",
    "stride_inner": "stride of {buf} along the innermost loop",
    "stride_vector": "stride of {buf} along the vector lanes",
    "stride_threadx": "stride of {buf} along threadIdx.x",
}
_LOOP_KIND_WORDS = {"serial": "serial", "parallel": "parallel", "vectorized": "vectorized", "unrolled": "unrolled",
                    "blockIdx": "bound to blockIdx", "threadIdx": "bound to threadIdx", "vthread": "a virtual thread"}
_BUF_FLAG_WORDS = {"is_write": "written", "contiguous": "accessed contiguously by the innermost loop",
                   "affine": "indexed affinely"}
_LIMIT_WORDS = {"threads": "threads per SM", "shared": "shared memory per SM", "registers": "registers per SM",
                "blocks": "resident blocks per SM", "launch": "a per-block limit (the block cannot launch)"}

_NAME = re.compile(r"^s(\d+)(?:\((?P<stmt>[^)]*)\))?\."
                   r"(?:loop\[(?P<slot>-?\d+)\](?:\((?P<loop>[^)]*)\))?\.|buf(?P<bslot>\d+)(?:\((?P<buf>[^)]*)\))?\.)?"
                   r"(?P<field>\w+)$")


def _subject(label):
    """``(words, is_flag)`` naming the feature ``label`` (a flat itervar name): a noun
    phrase for a number ("extent of loop j.inner of statement C"), a clause with "is"
    for a 0/1 flag ("loop j.inner of statement C is vectorized")."""
    if label.startswith("fn."):
        fld = label[3:]
        return _FN_WORDS.get(fld, fld.replace("_", " ")), False
    m = _NAME.match(label)
    if m is None:
        return f"feature {label}", False
    stmt = m.group("stmt") or m.group(1)
    where = f" of statement {stmt}"
    fld = m.group("field")
    if m.group("slot") is not None:
        loop = f"loop {m.group('loop')}" if m.group("loop") else f"loop slot {m.group('slot')}"
        if fld.startswith("kind_"):
            return f"{loop}{where} is {_LOOP_KIND_WORDS.get(fld[5:], fld[5:])}", True
        return _LOOP_WORDS.get(fld, fld + " of {loop}").format(loop=loop) + where, False
    if m.group("bslot") is not None:
        buf = f"buffer {m.group('buf')}" if m.group("buf") else f"buffer slot {m.group('bslot')}"
        if fld.startswith("scope_"):
            return f"{buf}{where} is in {fld[6:]} memory", True
        if fld in _BUF_FLAG_WORDS:
            return f"{buf}{where} is {_BUF_FLAG_WORDS[fld]}", True
        return _BUF_WORDS.get(fld, fld + " of {buf}").format(buf=buf) + where, False
    if fld == "guarded":
        return f"statement {stmt} is guarded by a condition", True
    return _STMT_WORDS.get(fld, fld.replace("_", " ")) + where, False


def _capital(text) -> str:
    return text[:1].upper() + text[1:]


def _sentence(label, best, mean, effect) -> str:
    """The effect of one feature in words."""
    subject, is_flag = _subject(label)
    push = f"pushed the predicted score {'up' if effect > 0 else 'down'} by {abs(effect):.3g}"
    if is_flag:
        share = f"{mean:.0%} of the measured configs"
        if best >= 0.5:
            return f"{_capital(subject)} in the best config (and in {share}), which {push}"
        negated = subject.replace(" is ", " is not ", 1)
        return f"{_capital(negated)} in the best config (it is in {share}), which {push}"
    if math.isclose(best, mean, rel_tol=1e-6, abs_tol=1e-12):
        return f"The {subject} ({_fmt_num(best)}, the same on average) {push}"
    more = "higher" if best > mean else "lower"
    return f"A {more} {subject} ({_fmt_num(best)} vs {_fmt_num(mean)} on average) {push}"


# ---------------------------------------------------------------------------------
# formatting
# ---------------------------------------------------------------------------------
def _plain(x):
    """``x`` as JSON-serialisable data (tuples become lists, numpy scalars numbers)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return str(x)


def _fmt_num(v) -> str:
    if v is None:
        return "n/a"
    v = float(v)
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.3g}"


def _fmt_value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_fmt_value(x) for x in v) + "]"
    return str(v)


def _fmt_time(s) -> str:
    if s is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


def _fmt_bytes(n) -> str:
    n = float(n)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{int(n)} B"


def _fmt_rate(flops) -> str:
    if flops is None:
        return "unknown"
    for unit, scale in (("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if flops >= scale:
            return f"{flops / scale:.4g} {unit}"
    return f"{flops:.4g} FLOP/s"


def _fmt_bandwidth(b) -> str:
    if b is None:
        return "unknown bandwidth"
    return f"{b / 1e9:.4g} GB/s"


def _dims(d) -> str:
    return "(" + ", ".join(str(int(x)) for x in d) + ")"


def _render_text(blocks) -> str:
    lines = []
    previous = None
    for block in blocks:
        kind = block[0]
        if kind in ("kv", "table") and previous in ("kv", "table"):
            lines.append("")
        previous = kind
        if kind == "title":
            lines += [f"== {block[1]} ==", ""]
        elif kind == "subtitle":
            lines += ["", f"-- {block[1]} --"]
        elif kind == "lines":
            lines += list(block[1])
        elif kind == "kv":
            width = max((len(k) for k, _ in block[1]), default=0)
            lines += [f"  {k.ljust(width)}  {v}" for k, v in block[1]]
        elif kind == "table":
            lines += _text_table(block[1], block[2])
    return "\n".join(lines)


def _text_table(headers, rows) -> list:
    cols = list(zip(*([headers] + [list(r) for r in rows])))
    widths = [max(len(str(c)) for c in col) for col in cols]
    numeric = [all(_is_number(r[i]) for r in rows) and bool(rows) for i in range(len(headers))]

    def line(cells):
        return "  " + "  ".join(str(c).rjust(w) if num else str(c).ljust(w)
                                for c, w, num in zip(cells, widths, numeric)).rstrip()

    return [line(headers), "  " + "  ".join("-" * w for w in widths)] + [line(r) for r in rows]


def _is_number(s) -> bool:
    try:
        float(str(s))
        return True
    except ValueError:
        return False


def _render_html(blocks) -> str:
    e = html.escape
    out = []
    for block in blocks:
        kind = block[0]
        if kind == "title":
            out.append(f"<h3>{e(block[1])}</h3>")
        elif kind == "subtitle":
            out.append(f"<h4>{e(block[1])}</h4>")
        elif kind == "lines":
            out.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in block[1]) + "</ul>")
        elif kind == "kv":
            out.append("<table>" + "".join(f"<tr><th style=\"text-align:left\">{e(k)}</th><td>{e(v)}</td></tr>"
                                           for k, v in block[1]) + "</table>")
        elif kind == "table":
            head = "".join(f"<th>{e(str(h))}</th>" for h in block[1])
            body = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in block[2])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
    return "\n".join(out)


__all__ = ["CPUFacts", "Explanation", "FeatureEffect", "KernelFacts", "MIN_MODEL_RECORDS", "ModelExplanation",
           "Roofline", "WorkloadExplanation", "explain"]
