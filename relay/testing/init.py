"""Initial values of a test network's parameters (TVM's ``relay.testing.init``).

A parameter's role is read from the end of its name, as the networks of
:mod:`tecc.relay.testing` name them:

=================  ===========================================
name ends with     initial value
=================  ===========================================
``weight``         drawn by the initializer (:class:`Xavier`)
``bias``, ``beta``  zeros
``mean``           zeros (``moving_mean``)
``gamma``          ones
``var``            ones (``moving_var``)
=================  ===========================================

Every random draw comes from the numpy ``Generator`` handed to the call, so a
network's parameters depend on the seed only.
"""
from __future__ import annotations

import numpy as np

from ...graph.ir import GraphError, Module, TensorType
from ...runtime import ndarray as nd

#: name suffix -> the Initializer method that fills the array
_ROLES = (("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
          ("mean", "_init_mean"), ("var", "_init_var"))


class Initializer:
    """Fills a parameter's array according to the end of its name (see the
    module's docstring); subclasses choose how weights are drawn.

    Parameters
    ----------
    **kwargs
        The subclass's settings, kept in ``self._kwargs``.
    """

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __call__(self, desc, arr, rng=None):
        """Fill ``arr`` in place.

        Parameters
        ----------
        desc : str
            The parameter's name (``"stage1_unit1_conv1_weight"``).
        arr : numpy.ndarray
            The array to fill, of the parameter's shape and dtype.
        rng : numpy.random.Generator, optional
            Where random values come from; a fresh, unseeded one by default.
        """
        rng = np.random.default_rng() if rng is None else rng
        for suffix, method in _ROLES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr, rng)
                return
        self._init_default(desc, arr, rng)

    def _init_bias(self, _name, arr, _rng):
        arr[...] = 0.0

    def _init_gamma(self, _name, arr, _rng):
        arr[...] = 1.0

    def _init_beta(self, _name, arr, _rng):
        arr[...] = 0.0

    def _init_mean(self, _name, arr, _rng):
        arr[...] = 0.0

    def _init_var(self, _name, arr, _rng):
        arr[...] = 1.0

    def _init_weight(self, name, arr, rng):
        raise NotImplementedError(f"{type(self).__name__} does not say how to draw weights ({name})")

    def _init_default(self, name, _arr, _rng):
        suffixes = ", ".join(repr(s) for s, _ in _ROLES)
        raise GraphError(f"initializer: parameter {name!r} has no known role; its name must end with one of "
                         f"{suffixes}, or give its value yourself")


class Xavier(Initializer):
    """Glorot and Bengio's initialization of weights: uniform in ``[-scale, scale]``
    with ``scale = sqrt(magnitude / factor)``.

    The fans of a weight of shape ``(out, in, kh, kw...)`` (OIHW) are
    ``fan_in = in * kh * kw`` and ``fan_out = out * kh * kw``; ``factor`` is their
    mean (``"avg"``), ``fan_in`` (``"in"``) or ``fan_out`` (``"out"``).  A weight whose
    name contains ``"depthwise"`` (one input and one output channel per group) has
    ``factor = kh * kw``.  Fans are read from the shape as if it were OIHW, as TVM's
    Xavier reads them; the weights of an NHWC network (HWIO) get other scales.

    Parameters
    ----------
    rnd_type : str
        ``"uniform"`` (the one distribution TVM's Xavier draws from) or ``"gaussian"``
        (normal with standard deviation ``scale``).
    factor_type : str
        ``"avg"``, ``"in"`` or ``"out"``.
    magnitude : float
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        if rnd_type not in ("uniform", "gaussian"):
            raise GraphError(f"Xavier: rnd_type={rnd_type!r} is not one of 'uniform', 'gaussian'")
        if factor_type not in ("avg", "in", "out"):
            raise GraphError(f"Xavier: factor_type={factor_type!r} is not one of 'avg', 'in', 'out'")
        if isinstance(magnitude, bool) or not isinstance(magnitude, (int, float)) or magnitude <= 0:
            raise GraphError(f"Xavier: magnitude must be a positive number, got {magnitude!r}")
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def scale(self, name, shape) -> float:
        """The bound of the uniform draw (the standard deviation of the normal one)
        for a weight ``name`` of ``shape``."""
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise GraphError(f"Xavier: weight {name!r} has shape {shape}; it needs at least 2 axes (out, in, ...)")
        receptive = int(np.prod(shape[2:], dtype=np.int64)) if len(shape) > 2 else 1
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        if "depthwise" in name:
            factor = receptive
        else:
            factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        return float(np.sqrt(self.magnitude / factor))

    def _init_weight(self, name, arr, rng):
        scale = self.scale(name, arr.shape)
        if self.rnd_type == "uniform":
            arr[...] = rng.uniform(-scale, scale, size=arr.shape)
        else:
            arr[...] = rng.normal(0.0, scale, size=arr.shape)


class Constant(Initializer):
    """Every element of a weight is ``1 / size``, so that each weight sums to 1."""

    def _init_weight(self, name, arr, rng):
        arr[...] = 1.0 / max(arr.size, 1)


def create_workload(net, initializer=None, seed=0):
    """A test network as a type-inferred module and its initial parameters.

    Parameters
    ----------
    net : tecc.graph.Function or tecc.graph.Expr
        The network; an expression's free variables become its parameters.
    initializer : Initializer, optional
        How parameters are filled (see the module's docstring); :class:`Xavier`
        by default.
    seed : int
        Seeds the numpy ``Generator`` every random value comes from, and numpy's
        global generator too, as TVM's does (TVM code relies on it: the data a
        script draws with ``np.random`` after each call is the same).

    Returns
    -------
    mod : tecc.graph.Module
        ``mod["main"]`` is the network, typed.
    params : dict of str to tecc.nd.NDArray
        A value for every parameter of ``main`` but the input ``data``, by name.

    Raises
    ------
    GraphError
        When a parameter has no static tensor type, or a name with no known role.
    """
    from ...graph.transform.infer_type import infer_type  # noqa: PLC0415 -- loads the passes (and tir)

    mod = Module.from_expr(net)
    infer_type(mod)
    initializer = Xavier() if initializer is None else initializer
    rng = np.random.default_rng(seed)
    np.random.seed(seed)
    params = {}
    for var in mod["main"].params:
        name = var.name_hint
        if name == "data":
            continue
        ty = var.checked_type
        if not isinstance(ty, TensorType) or not ty.is_static:
            raise GraphError(f"create_workload: parameter %{name} has type {ty}; give it a static tensor shape")
        value = np.zeros(ty.shape, dtype=ty.dtype)
        initializer(name, value, rng)
        params[name] = nd.array(value)
    return mod, params
