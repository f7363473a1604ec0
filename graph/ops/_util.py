"""Shape and dtype rules shared by the operator definitions."""
from __future__ import annotations

from ..ir import GraphError, TensorType


def tensor_arg(op: str, types, i: int = 0) -> TensorType:
    """Operand ``i``'s type, which must be a tensor."""
    ty = types[i]
    if not isinstance(ty, TensorType):
        raise GraphError(f"{op}: operand {i} must be a tensor, got {ty}")
    return ty


def broadcast_shapes(op: str, *shapes) -> tuple:
    """numpy's broadcasting of ``shapes``; a symbolic dimension broadcasts with 1
    and with itself."""
    ndim = max(len(s) for s in shapes)
    out = []
    for axis in range(ndim):
        dims = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise GraphError(f"{op}: shapes {', '.join(str(tuple(s)) for s in shapes)} do not broadcast "
                             f"(axis {axis - ndim} has sizes {sorted(map(str, dims))})")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def same_dtype(op: str, types) -> str:
    """The operands' common dtype (they must agree: the importer casts first)."""
    dtypes = [t.dtype for t in types]
    if len(set(dtypes)) > 1:
        raise GraphError(f"{op}: operands have different dtypes {dtypes}; cast them to one dtype first")
    return dtypes[0]
