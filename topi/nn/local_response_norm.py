"""Local response normalization across channels (TVM's ``topi.nn.lrn``, as in
AlexNet and GoogLeNet).

Two stages: ``T_sqr_sum`` (tagged ``sqr_sum``), the sum of squares over the window of
``size`` channels centred on each channel (zero outside the tensor; the padding
stage before it is inlined by every schedule), and the output ``T_lrn`` (tagged
``elemwise,lrn``), ``x / (bias + alpha / size * sqr_sum) ** beta``.  float16 data is
summed and normalized in float32.
"""
from __future__ import annotations

from ... import te
from ...tir import op as _op
from .. import tag
from ..utils import TopiError, normalize_axis
from .dense import check_tensor, describe
from .layer_norm import accumulation_dtype
from .pad import pad

#: the output's tag
LRN_TAG = tag.compose(tag.ELEMWISE, "lrn")
#: the tag of the window sum
SQR_SUM_TAG = "sqr_sum"


def _cast(x, dtype):
    return x if x.dtype == dtype else _op.cast(dtype, x)


def lrn(data, size, axis=1, alpha=0.0001, beta=0.75, bias=2):
    """``out = data / (bias + alpha / size * sum(data^2 over the window)) ** beta``,
    the window the ``size`` channels along ``axis`` centred on the output's.

    Parameters
    ----------
    data : Tensor
        4-D, NCHW (``axis=1``) or NHWC (``axis=3``); tecc takes any rank and axis.
    size : int
        The window, an odd number of channels.
    axis : int
        The channel axis.
    alpha, beta, bias : float

    Returns
    -------
    Tensor
        Shaped like ``data``.

    Raises
    ------
    TopiError
        When ``size`` is not a positive odd int, ``axis`` is out of range or the
        data is not floating point.
    """
    what = "lrn"
    check_tensor(data, "data", what)
    if len(data.shape) == 0:
        raise TopiError(f"{what}: data {data.name!r} is a scalar (rank 0); it needs a channel axis")
    where = f"{what}({describe(data, 'data')})"
    if not isinstance(size, int) or isinstance(size, bool) or size < 1 or size % 2 == 0:
        raise TopiError(f"{where}: size must be a positive odd int (a window centred on each channel), got {size!r}")
    axis = normalize_axis(axis, len(data.shape), where)
    if not data.dtype.startswith(("float", "bfloat")):
        raise TopiError(f"{where}: the data must be floating point, not {data.dtype}")
    acc = accumulation_dtype(data.dtype)
    half = size // 2
    before = [0] * len(data.shape)
    before[axis] = half
    padded = pad(data, before, before, 0.0, name="T_lrn_pad")
    r = te.reduce_axis((0, size), name="rxs")

    def window(*idx):
        at = list(idx)
        at[axis] = at[axis] + r
        v = _cast(padded(*at), acc)
        return te.sum(v * v, axis=r)

    sqr_sum = te.compute(data.shape, window, name="T_sqr_sum", tag=SQR_SUM_TAG)
    c_bias = _op.const(bias, acc)
    c_scale = _op.const(alpha / size, acc)
    c_beta = _op.const(beta, acc)

    def norm(*idx):
        denom = _op.power(c_bias + c_scale * sqr_sum(*idx), c_beta)
        return _cast(_cast(data(*idx), acc) / denom, data.dtype)

    return te.compute(data.shape, norm, name="T_lrn", tag=LRN_TAG, attrs={"axis": axis, "size": size})
