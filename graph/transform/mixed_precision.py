"""Mixed precision: a float32 model computed in float16 or bfloat16 (TVM's
``relay.transform.ToMixedPrecision``), so that its products run on tensor cores.

Every float32 value of the graph becomes the narrow type: constants (weights) are
converted, a float32 input is cast where the graph reads it (the model is fed as
before), the operators that make float32 from nothing or from integers (``cast``,
``zeros``, ``ones``, ``full``, ``arange``, ``one_hot``) make the narrow type (a
``reinterpret`` of bits as float32 is converted after it), and a product's
``out_dtype = "float32"`` follows its operands.  Precision is kept where it
is lost otherwise: every operator that sums -- products, reductions, normalizations,
softmax, averages -- computes in float32 and rounds its result once
(:func:`tecc.graph.ops._util.accumulate_in_float32`), as TVM's lists put
accumulations in float32.  The outputs are in the narrow type (TVM's default); with
``keep_orig_output_dtype`` (TVM's ``relay.ToMixedPrecision.keep_orig_output_dtype``
config) they are cast back to float32.

float16's range ends at 65504: a model whose values grow past it (an unnormalized
sum, an exp of a large logit) overflows there, as it does exported with ``.half()``;
bfloat16 has float32's range.
"""
from __future__ import annotations

import numpy as np

from ..ir import Constant, Function, GraphError, GraphRewriter, Module, TupleType
from ..op import Op, call
from ..ops._util import HALF_FLOATS
from .infer_type import infer_type

#: the types a model may be converted to: those whose sums the operators keep in float32
MIXED_TYPES = HALF_FLOATS
#: attributes that name the type an operator makes (``""``: its operands')
_DTYPE_ATTRS = ("dtype", "out_dtype")


def _narrow_array(arr, dtype):
    if dtype == "bfloat16":
        import ml_dtypes  # noqa: PLC0415 -- onnx's dependency; bfloat16 constants are its arrays

        return arr.astype(ml_dtypes.bfloat16)
    return arr.astype(dtype)


class _ToMixed(GraphRewriter):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def visit_Var(self, var):
        ty = var.checked_type if var.has_type else None
        if ty is None or isinstance(ty, TupleType) or ty.dtype != "float32":
            return var
        return call("cast", var, dtype=self.dtype)

    def visit_Constant(self, node):
        if node.data.dtype != np.float32:
            return node
        return Constant(_narrow_array(node.data, self.dtype))

    def visit_Call(self, node):
        new = self.generic_visit(node)
        if not isinstance(new.op, Op):
            return new
        if new.op.name == "reinterpret":  # bits read as float32: the value, then converted
            return call("cast", new, dtype=self.dtype) if new.attrs["dtype"] == "float32" else new
        attrs = dict(new.attrs)
        changed = False
        for key in _DTYPE_ATTRS:
            if attrs.get(key) == "float32":
                attrs[key] = self.dtype if key == "dtype" else ""
                changed = True
        if not changed:
            return new
        return call(new.op, *new.args, **attrs)

    def visit_Function(self, fn):
        if fn.is_primitive:
            return fn
        body = self.visit(fn.body)
        return Function(fn.params, body, None, fn.attrs, fn.span)


def to_mixed_precision(mod: Module, mixed_precision_type: str = "float16",
                       keep_orig_output_dtype: bool = False) -> Module:
    """``mod`` computed in ``mixed_precision_type`` (see the module docs).

    Parameters
    ----------
    mod : tecc.graph.Module
    mixed_precision_type : str
        ``"float16"`` or ``"bfloat16"`` (on tensor cores from sm_70 and sm_80).
    keep_orig_output_dtype : bool
        Cast the outputs back to float32.

    Raises
    ------
    GraphError
        For another type, or an operator that does not take the narrow type (named).
    """
    if mixed_precision_type not in MIXED_TYPES:
        raise GraphError(f"ToMixedPrecision: mixed_precision_type must be one of {', '.join(MIXED_TYPES)}, got "
                         f"{mixed_precision_type!r}")
    mod = infer_type(mod)

    def convert(fn):
        try:
            new = _ToMixed(mixed_precision_type).visit(fn)
        except GraphError as err:
            raise GraphError(f"ToMixedPrecision({mixed_precision_type!r}): {err}") from None
        if keep_orig_output_dtype:
            new = _cast_outputs_back(new, fn)
        return new

    return infer_type(mod.map_functions(convert))


def _cast_outputs_back(new, old):
    """``new`` with each output that was float32 in ``old`` cast back to float32."""
    from ..ir import Tuple  # noqa: PLC0415

    body, old_ty = new.body, old.body.checked_type

    def back(value, want):
        ty = infer_type(value).checked_type
        if not isinstance(ty, TupleType) and want.dtype == "float32" and ty.dtype != "float32":
            return call("cast", value, dtype="float32")
        return value

    if isinstance(old_ty, TupleType):
        if not isinstance(body, Tuple):
            raise GraphError("ToMixedPrecision: keep_orig_output_dtype needs the outputs as a tuple of values")
        body = Tuple([back(f, t) for f, t in zip(body.fields, old_ty.fields)])
    else:
        body = back(body, old_ty)
    return Function(new.params, body, None, new.attrs, new.span)


__all__ = ["MIXED_TYPES", "to_mixed_precision"]
