"""TVM's ``relay.op``: the operator registry and one builder per registered
operator (``relay.op.add``, ``relay.op.nn.conv2d``...).

A builder takes the operands, then the attributes -- positionally in the order the
operator declares them, or by name -- and returns ``tecc.graph.call(name, ...)``.
Python numbers and numpy arrays among the operands become constants; a list of
expressions becomes a :class:`~tecc.graph.Tuple` (``relay.concatenate([a, b], 1)``).
"""
from __future__ import annotations

import numpy as np

from ..graph.ir import Expr, GraphError, Tuple, const
from ..graph.op import OPS, Op, OpPattern, call, list_ops, register_op  # noqa: F401
from ..graph.op import get_op as get  # noqa: F401


#: operators whose Relay builder returns the first field of their tuple: TVM's
#: ``relay.nn.dropout`` is the data (the mask is ``dropout_raw``'s)
_FIRST_FIELD = frozenset({"nn.dropout"})


def _builder_names(prefix: str) -> list:
    """Short names of the builders under ``prefix`` ("" for the top level, "nn."...)."""
    names = []
    for full in list_ops():
        if prefix:
            if full.startswith(prefix) and "." not in full[len(prefix):]:
                names.append(full[len(prefix):])
        elif "." not in full:
            names.append(full)
    return names


def _operand(value, op_name: str, i: int):
    if isinstance(value, Expr):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, Expr) for v in value):
        return Tuple(value)
    if isinstance(value, (bool, int, float, np.ndarray, np.generic)):
        return const(value)
    raise GraphError(f"relay builder of {op_name}: operand {i} is a {type(value).__name__}; give a graph "
                     "expression, a number, an array or a list of expressions")


#: Relay's keyword names of the operands, where they are not ``data`` (one operand)
#: or ``lhs, rhs`` (two): TVM code passes them by name (``relay.nn.conv2d(data=x,
#: weight=w)``)
_OPERAND_NAMES = {
    "nn.conv2d": ("data", "weight"), "nn.conv2d_transpose": ("data", "weight"),
    "nn.conv3d": ("data", "weight"), "nn.conv3d_transpose": ("data", "weight"),
    "nn.contrib_conv2d_NCHWc": ("data", "kernel"), "nn.contrib_conv2d_NCHWc_winograd": ("data", "kernel"),
    "nn.dense": ("data", "weight"), "nn.contrib_dense_pack": ("data", "weight"),
    "nn.matmul": ("tensor_a", "tensor_b"), "nn.batch_matmul": ("tensor_a", "tensor_b"),
    "nn.bias_add": ("data", "bias"), "nn.prelu": ("data", "alpha"),
    "nn.batch_norm": ("data", "gamma", "beta", "moving_mean", "moving_var"),
    "nn.layer_norm": ("data", "gamma", "beta"), "nn.instance_norm": ("data", "gamma", "beta"),
    "take": ("data", "indices"), "gather": ("data", "indices"), "gather_nd": ("data", "indices"),
    "where": ("condition", "x", "y"), "one_hot": ("indices", "on_value", "off_value"),
    "scatter_elements": ("data", "indices", "updates"), "scatter_nd": ("data", "indices", "updates"),
    "image.grid_sample": ("data", "grid"), "trilu": ("data", "k"),
}


def _operand_names(op) -> tuple:
    names = _OPERAND_NAMES.get(op.name)
    if names is None:
        names = {1: ("data",), 2: ("lhs", "rhs")}.get(op.num_inputs, ())
    return names


def _builder(full_name: str):
    """The builder function of operator ``full_name``."""
    op = get(full_name)
    attr_names = list(op.defaults)
    n_in = op.num_inputs
    operand_names = _operand_names(op)

    def builder(*args, **attrs):
        named = [k for k in operand_names if k in attrs]
        if named:  # operands given by Relay's keyword names: in their places after the positional ones
            args = list(args)
            for i, key in enumerate(operand_names):
                if key in attrs:
                    if i < len(args):
                        raise GraphError(f"relay builder of {full_name}: operand {key!r} given by position and by "
                                         "name")
                    if i > len(args):
                        raise GraphError(f"relay builder of {full_name}: operand {key!r} given without the ones "
                                         f"before it ({', '.join(operand_names[:i])})")
                    args.append(attrs.pop(key))
        count = len(args) if n_in is None else min(n_in, len(args))
        operands = [_operand(a, full_name, i) for i, a in enumerate(args[:count])]
        extra = args[count:]
        if len(extra) > len(attr_names):
            raise GraphError(f"relay builder of {full_name}: {len(extra)} positional attribute(s) given, it takes "
                             f"{len(attr_names)} ({', '.join(attr_names) or 'none'})")
        for name, value in zip(attr_names, extra):
            if name in attrs:
                raise GraphError(f"relay builder of {full_name}: attribute {name!r} given twice")
            attrs[name] = value
        out = call(op, *operands, **attrs)
        return out[0] if full_name in _FIRST_FIELD else out

    short = full_name.rsplit(".", 1)[-1]
    builder.__name__ = builder.__qualname__ = short
    builder.__doc__ = (f"``{full_name}``: a call of the registered graph operator (``tecc.graph.call``); the "
                       f"operands, then the attributes {attr_names} by position or name.\n\n{op.doc}")
    return builder


def _namespace(prefix: str, module_globals: dict):
    """``(__getattr__, __dir__)`` of a module of builders (``relay.nn``, ``relay.image``):
    the builder of each registered operator under ``prefix``, made on first use and
    kept in ``module_globals``."""
    module_name = module_globals["__name__"]

    def getattr_(name):
        if name in _builder_names(prefix=prefix):
            fn = _builder(prefix + name)
            module_globals[name] = fn
            return fn
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    def dir_():
        return sorted(set(module_globals) | set(_builder_names(prefix=prefix)))

    return getattr_, dir_


def register_alter_op_layout(op_name, alter=None, level=10):
    """TVM's ``relay.op.register_alter_op_layout``: the layout alteration of an
    operator, which ``relay.transform.AlterOpLayout`` calls
    (:func:`tecc.graph.transform.alter_op_layout.register_alter_op_layout`)."""
    from ..graph.transform.alter_op_layout import register_alter_op_layout as register  # noqa: PLC0415

    return register(op_name, alter, level)


def __getattr__(name):
    if name in ("nn", "image"):
        import importlib  # noqa: PLC0415

        return importlib.import_module(f"{__package__}.{name}")
    if name in _builder_names(prefix=""):
        fn = _builder(name)
        globals()[name] = fn
        return fn
    raise AttributeError(f"module 'tecc.relay.op' has no attribute {name!r}")
