"""Group normalization (TVM's ``topi.nn.group_norm``)."""
from __future__ import annotations

from ..utils import TopiError, get_const_tuple, normalize_axis
from .dense import check_tensor, describe
from .layer_norm import check_affine, normalize, normalized_axes


def group_norm(data, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5, name="T_group_norm"):
    """Group normalization: the channels split into ``num_groups`` groups, each group
    normalized over its channels and ``axes``, then scaled and shifted per channel.

    Parameters
    ----------
    data : Tensor
        N-D ``(d_0, ..., d_{N-1})``.
    gamma : Tensor or None
        ``(d_{channel_axis},)``: the scale per channel.
    beta : Tensor or None
        ``(d_{channel_axis},)``: the offset per channel.
    num_groups : int
        Divides the number of channels.
    channel_axis : int
    axes : list of int
        The other normalized axes (not the channel axis), e.g. ``[2, 3]`` for NCHW.
    epsilon : float
    name : str

    Returns
    -------
    Tensor
        Shaped like ``data`` (tagged ``group_norm``).

    Raises
    ------
    TopiError
        When the channels do not split into ``num_groups``, an axis is out of range,
        repeated or the channel axis, or gamma/beta are not per channel.
    """
    what = "group_norm"
    check_tensor(data, "data", what)
    ndim = len(data.shape)
    where = f"{what}({describe(data, 'data')})"
    channel = normalize_axis(channel_axis, ndim, where)
    axes = normalized_axes(list(axes), ndim, where) if list(axes) else []
    if channel in axes:
        raise TopiError(f"{where}: axes {tuple(axes)} include the channel axis {channel}; give the other axes only")
    channels = get_const_tuple([data.shape[channel]])[0]
    if not isinstance(num_groups, int) or isinstance(num_groups, bool) or num_groups < 1:
        raise TopiError(f"{where}: num_groups must be a positive int, got {num_groups!r}")
    if not isinstance(channels, int) or channels % num_groups:
        raise TopiError(f"{where}: the {channels} channels (axis {channel}) do not split into {num_groups} groups")
    check_affine(gamma, "gamma", data, [data.shape[channel]], what)
    check_affine(beta, "beta", data, [data.shape[channel]], what)

    def affine(t):
        return None if t is None else (lambda idx: t(idx[channel]))

    return normalize(data, affine(gamma), affine(beta), axes, epsilon, name, "group_norm", what,
                     group=(channel, channels // num_groups))
