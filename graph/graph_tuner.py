"""Graph-level tuning (TVM's ``autotvm.graph_tuner``: ``DPTuner``, ``PBQPTuner``):
which of each kernel's tuned records a model should build with, and what its
layout transforms cost.

TVM's graph tuner trades kernels against layouts: there, a convolution's config
picks its channel blocks, and two neighbours with different blocks need a layout
transform between them, so the best record of each kernel alone is not the best
model.  It solves that choice jointly (dynamic programming over the graph, or
PBQP).

In tecc the blocks of a blocked convolution follow from its channel counts
(:func:`tecc.topi.x86.nchwc_block`), never from its config, so the layout
transforms of a model are the same under every choice of records.  The joint
objective -- the sum over kernel calls of their times, plus the transforms --
then separates, and its exact minimum is each workload's fastest record.  The
tuners compute that minimum (both names, one answer), measure the transforms the
model does contain (:meth:`BaseGraphTuner.benchmark_layout_transform`) and report
the model's estimated time under the choice::

    tuner = DPTuner(mod["main"], {"data": (1, 3, 224, 224)}, "kernels.log",
                    [relay.op.get("nn.conv2d")], "llvm")
    tuner.benchmark_layout_transform(min_exec_num=100)
    tuner.run()
    tuner.write_opt_sch2record_file("graph_opt.log")
    with autotvm.apply_graph_best("graph_opt.log"):
        lib = relay.build(mod, "llvm", params=params)
"""
from __future__ import annotations

import logging
import os

import numpy as np

from ..errors import TeccError
from ..tir.transform.pipeline import PassContext
from .build import _as_module, build, extract_tasks
from .ir import Call, Constant, Function, GraphError, TensorType, Var, post_order_visit

logger = logging.getLogger("tecc.autotvm")


class BaseGraphTuner:
    """The shared part of :class:`DPTuner` and :class:`PBQPTuner`.

    Parameters
    ----------
    graph : tecc.graph.Function or Module
        The model (``mod["main"]``); parameters not in ``input_shapes`` are its
        weights (their values do not matter: only shapes choose kernels).
    input_shapes : dict of str to tuple
        The shape of each input, which must agree with the graph's types.
    records : str or iterable of (MeasureInput, MeasureResult)
        The kernels' tuning records (a log file or the pairs).
    target_ops : list of Op or str
        The operators whose kernels are chosen (``relay.op.get("nn.conv2d")``).
    target : str or Target
    max_sch_num : int
        How many of each workload's fastest records are candidates.
    dtype, verbose, log_file, log_level, name
        TVM's; ``log_file`` (when not None) receives the tuner's log lines.
    """

    def __init__(self, graph, input_shapes, records, target_ops, target, max_sch_num=20, dtype="float32",
                 verbose=True, log_file="graph_tuner.log", log_level=logging.DEBUG, name="graph_tuner"):
        from ..tuner.record import load_records  # noqa: PLC0415
        from ..tuner.measure import MeasureErrorNo  # noqa: PLC0415

        if not isinstance(max_sch_num, int) or isinstance(max_sch_num, bool) or max_sch_num < 1:
            raise GraphError(f"{name}: max_sch_num must be a positive int, got {max_sch_num!r}")
        self.name = name
        self.target = target
        self.dtype = dtype
        self.verbose = verbose
        self._log_file = log_file
        self._log_level = log_level
        self._mod = _as_module(graph)
        self._params = _placeholder_params(self._mod, dict(input_shapes), name)
        with PassContext.current().with_opt_level(3):  # the kernels relay.build compiles at opt_level 3
            self._tasks = extract_tasks(self._mod, self._params, target, ops=target_ops) if target_ops else []
        if target_ops and not self._tasks:
            raise GraphError(f"{name}: the graph has no kernel built around {_names(target_ops)} on {target}; "
                             "check target_ops")
        valid = [r for r in load_records(records) if r[1].error_no == MeasureErrorNo.NO_ERROR]
        self._candidates = {}
        for task in self._tasks:
            mine = [r for r in valid if r[0].task.workload == task.workload
                    and str(r[0].target).split()[0] == str(task.target).split()[0]]
            mine.sort(key=lambda r: r[1].mean_cost)
            self._candidates[task.workload] = mine[:max_sch_num]
        missing = [t for t in self._tasks if not self._candidates[t.workload]]
        for t in missing:
            self._log(logging.WARNING, f"no valid record of {t.name} {t.workload[1:]}: it keeps its fallback config")
        self._layout_transform_perf_records = {}
        self._optimal = None

    # ------------------------------------------------------------------------------------
    def _log(self, level, message):
        logger.log(level if self.verbose else logging.DEBUG, "%s: %s", self.name, message)
        if self._log_file:
            with open(self._log_file, "a", encoding="utf-8") as f:
                f.write(f"{logging.getLevelName(level)} {self.name}: {message}\n")

    @property
    def tasks(self) -> list:
        """The tasks of ``target_ops``'s kernels, with ``count`` (their calls)."""
        return list(self._tasks)

    def candidates(self, workload) -> list:
        """The candidate records of ``workload``, fastest first."""
        return list(self._candidates[workload])

    def benchmark_layout_transform(self, min_exec_num=100, timeout=10, use_rpc=False, device_key=None,
                                   host="127.0.0.1", port=9190, n_parallel=1, build_func="default",
                                   layout_records=None, target_host=None, infer_layout=False, runner=None):
        """Time each layout transform the built model runs (on its values, not
        its constant weights, which are transformed at build time): one kernel per
        distinct (shape, source layout, destination layout), ``min_exec_num`` runs.

        The transforms do not depend on the records chosen (see the module's
        docs), so this is their cost under any choice.  RPC is not supported.

        Returns
        -------
        dict
            ``(shape, src_layout, dst_layout) -> (seconds, calls)``, also kept as
            :meth:`layout_transform_perf_records`.
        """
        del timeout, device_key, host, port, n_parallel, build_func, target_host, infer_layout, runner
        if use_rpc:
            raise TeccError(f"{self.name}.benchmark_layout_transform: use_rpc=True is not supported; tecc measures "
                            "on this machine")
        if layout_records is not None:
            raise TeccError(f"{self.name}.benchmark_layout_transform: layout_records is not supported; the "
                            "transforms are measured here")
        if not isinstance(min_exec_num, int) or min_exec_num < 1:
            raise GraphError(f"{self.name}.benchmark_layout_transform: min_exec_num must be a positive int, got "
                             f"{min_exec_num!r}")
        found = _layout_transforms(self._mod, self._params, self.target)
        out = {}
        for (shape, dtype, src, dst), calls in found.items():
            seconds = _time_transform(shape, dtype, src, dst, self.target, min_exec_num)
            out[(shape, src, dst)] = (seconds, calls)
            self._log(logging.INFO, f"layout_transform {src}->{dst} of {list(shape)}: {seconds * 1e3:.4f} ms x "
                                    f"{calls}")
        self._layout_transform_perf_records = out
        return out

    def layout_transform_perf_records(self) -> dict:
        """What :meth:`benchmark_layout_transform` measured."""
        return dict(self._layout_transform_perf_records)

    def run(self, **kwargs):
        """Choose each workload's record: the minimum of the model's estimated time
        (kernel calls times their measured cost, plus the transforms, which no
        choice changes).  Returns the estimated seconds of the model's tuned
        kernels and transforms (fallback kernels unknown, not counted)."""
        del kwargs
        self._optimal = {}
        kernels = 0.0
        for task in self._tasks:
            cands = self._candidates[task.workload]
            if not cands:
                continue
            best = min(cands, key=lambda r: r[1].mean_cost)
            self._optimal[task.workload] = best
            kernels += task.count * best[1].mean_cost
        transforms = sum(t * n for t, n in self._layout_transform_perf_records.values())
        self._log(logging.INFO, f"{len(self._optimal)} of {len(self._tasks)} kernels chosen: "
                                f"{kernels * 1e3:.4f} ms of kernels + {transforms * 1e3:.4f} ms of layout transforms")
        return kernels + transforms

    def get_optimal_records(self) -> list:
        """The chosen ``(MeasureInput, MeasureResult)`` pairs, one per workload in
        the order the model first calls them."""
        if self._optimal is None:
            raise TeccError(f"{self.name}: call run() before get_optimal_records()")
        return [self._optimal[t.workload] for t in self._tasks if t.workload in self._optimal]

    def write_opt_sch2record_file(self, record_file="graph_opt_schedule.log"):
        """Append the chosen records to ``record_file`` (for :func:`apply_graph_best`)."""
        from ..tuner.record import save_to_file  # noqa: PLC0415

        save_to_file(self.get_optimal_records(), os.fspath(record_file))
        self._log(logging.INFO, f"wrote {len(self._optimal)} records to {record_file}")


class DPTuner(BaseGraphTuner):
    """TVM's dynamic-programming graph tuner; in tecc the layouts do not depend on
    the records, and the exact optimum is each workload's fastest record (module docs)."""


class PBQPTuner(BaseGraphTuner):
    """TVM's PBQP graph tuner; the same optimum as :class:`DPTuner` in tecc."""


# ---------------------------------------------------------------------------------------
def _names(ops) -> str:
    ops = [ops] if isinstance(ops, str) or not hasattr(ops, "__iter__") else ops
    return ", ".join(getattr(o, "name", str(o)) for o in ops)


def _placeholder_params(mod, input_shapes, who) -> dict:
    """Zeros for every parameter of main that is not an input (the weights: their
    shapes choose the kernels), after checking ``input_shapes`` against main."""
    params = {}
    main = mod["main"]
    names = {p.name_hint for p in main.params}
    for name in input_shapes:
        if name not in names:
            raise GraphError(f"{who}: input_shapes names {name!r}, which is not a parameter of the graph; its "
                             f"parameters are {sorted(names)}")
    for p in main.params:
        ty = p.type_annotation
        if not isinstance(ty, TensorType):
            raise GraphError(f"{who}: parameter {p.name_hint!r} has no tensor type; give the graph typed parameters")
        if p.name_hint in input_shapes:
            if tuple(int(d) for d in input_shapes[p.name_hint]) != tuple(int(d) for d in ty.shape):
                raise GraphError(f"{who}: input {p.name_hint!r} is {list(ty.shape)} in the graph, but input_shapes "
                                 f"gives {list(input_shapes[p.name_hint])}")
            continue
        params[p.name_hint] = np.zeros(tuple(int(d) for d in ty.shape), dtype=ty.dtype)
    return params


def _layout_transforms(mod, params, target) -> dict:
    """``(shape, dtype, src, dst) -> calls`` of the layout transforms an
    opt_level-3 build of ``mod`` runs on values (not on constants)."""
    from ..target import Target  # noqa: PLC0415
    from .build import bind_params  # noqa: PLC0415
    from .transform.infer_type import infer_type  # noqa: PLC0415
    from .transform.passes import optimize  # noqa: PLC0415

    bound = infer_type(bind_params(mod, params))
    with PassContext(opt_level=3, disabled_pass=["FuseOps"]), Target(Target.canon(target)):
        optimized = optimize(bound)
    found = {}

    def note(node):
        if (isinstance(node, Call) and getattr(node.op, "name", None) == "layout_transform"
                and not isinstance(node.args[0], Constant)):
            ty = node.args[0].checked_type
            key = (tuple(int(d) for d in ty.shape), ty.dtype, node.attrs["src_layout"], node.attrs["dst_layout"])
            found[key] = found.get(key, 0) + 1

    post_order_visit(optimized["main"].body, note)
    return found


def _time_transform(shape, dtype, src, dst, target, number) -> float:
    """Seconds of one layout transform of a ``shape`` value, built alone."""
    from ..graph.op import call  # noqa: PLC0415
    from ..runtime import device  # noqa: PLC0415
    from ..target import Target  # noqa: PLC0415

    x = Var("x", TensorType(shape, dtype))
    fn = Function([x], call("layout_transform", x, src_layout=src, dst_layout=dst))
    kind = Target.canon(target).kind
    with PassContext(opt_level=3):
        factory = build(_as_module(fn), target=target)
    dev = device("cuda" if kind == "cuda" else "cpu", 0)
    ex = factory["default"](dev)
    ex.set_input("x", np.zeros(shape, dtype))
    return float(ex.benchmark(dev, number=number, repeat=3).median)


__all__ = ["BaseGraphTuner", "DPTuner", "PBQPTuner"]
