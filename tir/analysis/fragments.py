"""Facts about tensor-core fragments (buffers of scope ``wmma.matrix_a``,
``wmma.matrix_b``, ``wmma.accumulator``): how big one fragment is, which element
types it holds, and the shape and layout ``infer_fragment`` wrote on its allocation.

A fragment of shape ``(m, n, k)`` is a matrix of ``rows x cols`` elements: ``m x k``
for matrix_a, ``k x n`` for matrix_b, ``m x n`` for an accumulator.
"""
from __future__ import annotations

from ...errors import LoweringError
from .. import keys
from .buffers import allocations

#: the element types of each fragment role (what tecc's wmma printing supports)
FRAGMENT_DTYPES = {
    keys.WMMA_MATRIX_A: ("float16", "bfloat16"),
    keys.WMMA_MATRIX_B: ("float16", "bfloat16"),
    keys.WMMA_ACCUMULATOR: ("float16", "float32"),
}

#: operand element type -> (the accumulator types wmma pairs with it, the first
#: architecture whose tensor cores take it)
OPERAND_RULES = {
    "float16": (("float16", "float32"), 70),
    "bfloat16": (("float32",), 80),
}


def operand_error(a_dtype: str, b_dtype: str, acc_dtype: str) -> str | None:
    """Why a ``tvm_mma_sync`` of ``a_dtype`` x ``b_dtype`` into ``acc_dtype`` is not a
    product wmma has (operands of one type; bfloat16 accumulates in float32 only),
    or None."""
    if a_dtype != b_dtype:
        return (f"its operands are {a_dtype} and {b_dtype}; wmma multiplies operands of one type: cast one of "
                "them (topi.cast)")
    accumulators, _ = OPERAND_RULES[a_dtype]
    if acc_dtype not in accumulators:
        return (f"{a_dtype} operands accumulate in {' or '.join(accumulators)}, not {acc_dtype}: "
                f"compute the product in {accumulators[-1]} and cast its result")
    return None


def operand_arch(dtype: str) -> int:
    """The first compute capability (as 70, 80...) whose tensor cores take ``dtype``
    operands."""
    return OPERAND_RULES[dtype][1]


def fragment_allocations(node) -> list:
    """The tensor-core fragment buffers allocated below ``node``, in program order:
    whether a kernel uses tensor cores at all (a wmma call names fragments allocated
    in its kernel; ``infer_fragment`` refuses one that does not)."""
    return allocations(node, keys.WMMA_SCOPES)


def fragment_dims(scope: str, shape) -> tuple:
    """``(rows, cols)`` of one fragment of ``scope`` with wmma shape ``(m, n, k)``."""
    m, n, k = shape
    return {keys.WMMA_MATRIX_A: (m, k), keys.WMMA_MATRIX_B: (k, n)}.get(scope, (m, n))


def fragment_elements(scope: str, shape) -> int:
    """Elements of one fragment: m*k of matrix_a, k*n of matrix_b, m*n of an accumulator."""
    rows, cols = fragment_dims(scope, shape)
    return rows * cols


def parse_fragment_shape(text: str) -> tuple:
    """``"16, 16, 16"`` (a ``fragment_shape`` attribute's value) -> ``(16, 16, 16)``."""
    return tuple(int(x) for x in text.split(","))


def fragment_info(attrs: dict, buf) -> tuple:
    """``(shape, layout)`` of fragment buffer ``buf`` from the attributes
    ``infer_fragment`` wrote (``attrs``: data Var -> {attribute key: text}, as a
    printer collects them); the layout is None for an accumulator."""
    own = attrs.get(buf.data, {})
    shape = own.get(keys.FRAGMENT_SHAPE)
    if shape is None:
        raise LoweringError(f"fragment {buf.name!r} ({buf.scope}) has no fragment_shape attribute: run the "
                            "infer_fragment pass (the CUDA pipeline does) before printing")
    return parse_fragment_shape(shape), own.get(keys.FRAGMENT_LAYOUT)


__all__ = ["FRAGMENT_DTYPES", "OPERAND_RULES", "fragment_allocations", "fragment_dims", "fragment_elements",
           "fragment_info", "operand_arch", "operand_error", "parse_fragment_shape"]
