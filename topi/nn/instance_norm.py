"""Instance normalization (TVM's ``topi.nn.instance_norm``)."""
from __future__ import annotations

from .layer_norm import _normalize_axes


def instance_norm(data, gamma, beta, axis, epsilon=1e-5, name="T_instance_norm"):
    """Instance normalization: each instance (and channel) normalized over ``axis``,
    typically the spatial axes (``(2, 3)`` for NCHW).

    As in TVM, this is :func:`~.layer_norm.layer_norm` over ``axis``: ``gamma`` and
    ``beta`` are shaped like the normalized axes.  (For ONNX's
    ``InstanceNormalization``, whose scale is per channel, use
    :func:`~.group_norm.group_norm` with one group per channel.)

    Parameters
    ----------
    data : Tensor
        N-D ``(d_0, ..., d_{N-1})``.
    gamma : Tensor or None
        ``(d_{axis_0}, d_{axis_1}, ...)``
    beta : Tensor or None
        Shaped like ``gamma``.
    axis : int or list of int
        The axes the mean and variance are taken over.
    epsilon : float
    name : str

    Returns
    -------
    Tensor
        Shaped like ``data`` (tagged ``instance_norm``).

    Raises
    ------
    TopiError
        When an axis is out of range or repeated, or gamma/beta do not have the shape
        of the normalized axes.
    """
    return _normalize_axes(data, gamma, beta, axis, epsilon, name, "instance_norm", "instance_norm")
