"""Softmax and log-softmax along one axis (TVM's ``topi.nn.softmax``).

Both are built from named stages that the schedules find by tag:

=======  ===================  ===============================================
stage    tag                  holds
=======  ===================  ===============================================
``Mx``   ``softmax_max``      the maximum along the axis (the other axes kept)
``Ex``   ``softmax_exp``      ``exp(x - Mx)`` (softmax only)
``Sm``   ``softmax_sum``      the sum of the exponentials along the axis
output   ``softmax_output``   ``Ex * (1 / Sm)`` (one division per row, as onnxruntime and torch)
         ``log_softmax_output``  ``x - Mx - log(Sm)``
=======  ===================  ===============================================

The output carries ``attrs["axis"]`` (the axis, non-negative).

In float32 a term ``exp(x - Mx)`` below ``FLT_MIN`` (``x - Mx < -87.3``) is taken as
0, as onnxruntime's MLAS does: a probability under 1.2e-38 of a row whose largest
term is 1.  Kept, those denormal terms make the sum and the scaling denormal
arithmetic, a microcode assist per lane on x86 (a softmax whose scores spread by 90
ran at a third of its speed).
"""
from __future__ import annotations

import inspect

from ... import te
from ...errors import TeccTypeError
from ...tir import op as _op
from .. import tag
from ..reduction import normalize_tensor_axis


def _named(fn, names):
    """``fn(*indices)`` presenting the parameters ``names`` (te.compute names the
    compute's axes after them)."""
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
    return fn


def _axis_names(ndim):
    return ["i", "j"] if ndim == 2 else [f"i{k}" for k in range(ndim)]


#: ``x - max`` below which a float32 softmax term is taken as 0 (its ``exp`` is under
#: ``FLT_MIN``), and the argument ``exp`` gets there instead: far enough below -104
#: that ``exp`` of it is 0 with no denormal arithmetic
FLUSH_BELOW, FLUSHED_ARGUMENT = -87.3, -200.0


def _exp_shifted(d):
    """``exp(d)`` of a softmax term ``d = x - max``, 0 for a float32 ``d`` below
    :data:`FLUSH_BELOW` (see the module docs); NaN stays NaN."""
    if d.dtype != "float32":
        return te.exp(d)
    # a select (both sides computed: it vectorizes), not if_then_else (which guards)
    return te.exp(_op.select(d < te.const(FLUSH_BELOW, d.dtype), te.const(FLUSHED_ARGUMENT, d.dtype), d))


def _stages(x, axis, what):
    """What softmax and log_softmax share: ``(axis, Mx, names, row, with_axis,
    reduced_shape, row_names)`` -- the axis (non-negative), the maximum stage, the
    names of the output's axes, ``row(indices)`` (the indices without the axis),
    ``with_axis(row, k)`` (a row's indices with ``k`` put back at the axis), the
    shape without the axis and the names of its axes."""
    if not isinstance(x, te.Tensor):
        raise TeccTypeError(f"{what}: expected a tensor, got {x!r}")
    ndim = len(x.shape)
    axis = normalize_tensor_axis(x, axis, what)
    names = _axis_names(ndim)
    row_names = [n for k, n in enumerate(names) if k != axis]
    reduced_shape = tuple(d for k, d in enumerate(x.shape) if k != axis)
    size = x.shape[axis]

    def with_axis(row, v):
        return tuple(row[:axis]) + (v,) + tuple(row[axis:])

    def row(i):
        return tuple(i[:axis]) + tuple(i[axis + 1:])

    k1 = te.reduce_axis((0, size), name="k1")
    mx = te.compute(reduced_shape, _named(lambda *r: te.max(x(*with_axis(r, k1)), axis=k1), row_names),
                    name="Mx", tag="softmax_max")
    return axis, mx, names, row, with_axis, reduced_shape, row_names


def softmax(x, axis=-1, name="Out"):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``.

    Parameters
    ----------
    x : Tensor
    axis : int
        The axis to normalize (negative counts from the end).
    name : str
        The output's name.

    Returns
    -------
    Tensor
        of ``x``'s shape, tagged ``softmax_output`` (stages in the module docs).
    """
    axis, mx, names, row, with_axis, reduced_shape, row_names = _stages(x, axis, "softmax")
    ex = te.compute(x.shape, _named(lambda *i: _exp_shifted(x(*i) - mx(*row(i))), names), name="Ex",
                    tag="softmax_exp")
    k2 = te.reduce_axis((0, x.shape[axis]), name="k2")
    sm = te.compute(reduced_shape, _named(lambda *r: te.sum(ex(*with_axis(r, k2)), axis=k2), row_names),
                    name="Sm", tag="softmax_sum")
    # the reciprocal once per row: a vector multiply per element instead of a divide
    return te.compute(x.shape, _named(lambda *i: ex(*i) * (te.const(1.0, x.dtype) / sm(*row(i))), names), name=name,
                      tag=tag.SOFTMAX_OUTPUT, attrs={"axis": axis})


def log_softmax(x, axis=-1, name="Out"):
    """``x - max - log(sum(exp(x - max)))`` along ``axis``.

    Returns
    -------
    Tensor
        of ``x``'s shape, tagged ``log_softmax_output`` (stages in the module docs).
    """
    axis, mx, names, row, with_axis, reduced_shape, row_names = _stages(x, axis, "log_softmax")
    k2 = te.reduce_axis((0, x.shape[axis]), name="k2")
    sm = te.compute(reduced_shape, _named(
        lambda *r: te.sum(_exp_shifted(x(*with_axis(r, k2)) - mx(*r)), axis=k2), row_names), name="Sm",
        tag="softmax_sum")
    return te.compute(x.shape, _named(lambda *i: x(*i) - mx(*row(i)) - te.log(sm(*row(i))), names), name=name,
                      tag=tag.LOG_SOFTMAX_OUTPUT, attrs={"axis": axis})
