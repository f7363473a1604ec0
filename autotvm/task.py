"""TVM's ``autotvm.task``: every name of :mod:`tecc.tuner.task` (the same objects),
plus the tasks of a whole model, which need the model layer the tuner does not
import (``extract_from_program``)."""
from ..tuner.task import *  # noqa: F401,F403 -- the tuner's task API under AutoTVM's path
from ..tuner.task import dispatcher, space, task, topi_integration  # noqa: F401


def extract_from_program(mod, params, target, target_host=None, ops=None):
    """The tunable tasks of a model (TVM's ``autotvm.task.extract_from_program``).

    Parameters
    ----------
    mod : tecc.graph.Module or Function
        ``mod`` or ``mod["main"]`` from ``relay.frontend.from_onnx`` or
        ``relay.testing``.
    params : dict or None
        The weights, bound as ``relay.build`` binds them.
    target : str or Target
    target_host : None
        tecc's host is its C backend; anything else is refused.
    ops : list of Op or str, optional
        Only kernels built around these operators (``relay.op.get("nn.conv2d")``).

    Returns
    -------
    list of Task
        One per distinct workload of the model built at opt_level 3 (as TVM
        extracts them: the kernels ``relay.build`` compiles at that level);
        ``task.count`` is how many kernel calls of the model run it.
    """
    _no_host(target_host, "extract_from_program")
    return extract_from_multiple_program([mod], [params], target, ops=ops)


def extract_from_multiple_program(mods, params, target, target_host=None, ops=None):
    """The tasks of several models (TVM's ``autotvm.task.extract_from_multiple_program``):
    ``mods[i]`` with ``params[i]``; a workload found in several is one task whose
    ``count`` adds theirs."""
    from ..graph.build import extract_tasks  # noqa: PLC0415 -- loads the compiler and the model layer
    from ..graph.ir import GraphError  # noqa: PLC0415
    from ..tir.transform.pipeline import PassContext  # noqa: PLC0415

    _no_host(target_host, "extract_from_multiple_program")
    mods, params = list(mods), list(params)
    if len(mods) != len(params):
        raise GraphError(f"extract_from_multiple_program: {len(mods)} models but {len(params)} params dicts; give "
                         "one dict (or None) per model")
    # as TVM's: the kernels of an opt_level-3 build (what relay.build(..., opt_level=3)
    # compiles: on CPUs the blocked convolutions of AlterOpLayout), the rest of the
    # current context kept
    merged = {}
    for mod, par in zip(mods, params):
        with PassContext.current().with_opt_level(3):
            found = extract_tasks(mod, par, target, ops=ops)
        for t in found:
            if t.workload in merged:
                merged[t.workload].count += t.count
            else:
                merged[t.workload] = t
    return list(merged.values())


def _no_host(target_host, what):
    if target_host is not None:
        from ..graph.ir import GraphError  # noqa: PLC0415

        raise GraphError(f"{what}: target_host={target_host!r} is not supported; tecc's host code is its C "
                         "backend, leave target_host out")
