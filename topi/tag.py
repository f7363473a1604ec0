"""The tags of topi's operations: what kind of computation an operation is.

A schedule reads them from the output back (``op.tag``) to decide what to inline and
how to schedule the rest.  The generic kinds, from the most to the least restrictive:

``ELEMWISE`` (``"elemwise"``)
    ``out[i, j] = f(in[i, j])``: every input read at the output's own index.
``BROADCAST`` (``"broadcast"``)
    the output's axes map, in order, onto the inputs' axes (``out[i, j] = in[j]``).
``INJECTIVE`` (``"injective"``)
    each output element reads inputs at an index computed from its own (reshape,
    transpose, pad...): safe to inline into a consumer.
``COMM_REDUCE`` / ``COMM_REDUCE_IDX``
    a commutative reduction (sum, max...); one that also returns the index (argmax).

A tag may compose a generic kind with a specific one, generic first:
``"injective,pad"`` (:func:`compose`).
"""
from __future__ import annotations

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"

# specific operations (the tags their schedules look for)
PAD = "pad"
CONV2D_NCHW = "conv2d_nchw"
CONV2D_NCHWC = "conv2d_NCHWc"  # channel-blocked: data NCHW{i}c, kernel OIHW{i}i{o}o
DENSE = "dense"
MATMUL = "matmul"
BATCH_MATMUL = "batch_matmul"
SOFTMAX_OUTPUT = "softmax_output"
LOG_SOFTMAX_OUTPUT = "log_softmax_output"
POOL_MAX = "pool_max"
POOL_AVG = "pool_avg"


def compose(generic: str, specific: str) -> str:
    """``"generic,specific"``, e.g. ``compose(INJECTIVE, PAD) == "injective,pad"``."""
    return f"{generic},{specific}"


def parts(tag: str) -> list:
    """The comma-separated parts of a tag (``[]`` for the empty tag)."""
    return [p for p in tag.split(",") if p]


def has(tag: str, name: str) -> bool:
    """True if ``name`` is one of the parts of ``tag`` (``has("injective,pad", "pad")``)."""
    return name in parts(tag)


def is_elemwise(tag: str) -> bool:
    """True if ``tag`` is element-wise."""
    return tag.startswith(ELEMWISE)


def is_broadcast(tag: str) -> bool:
    """True if ``tag`` is element-wise or broadcast."""
    return tag.startswith(ELEMWISE) or tag.startswith(BROADCAST)


def is_injective(tag: str) -> bool:
    """True if ``tag`` is element-wise, broadcast or injective (inlinable into a
    consumer)."""
    return is_broadcast(tag) or tag.startswith(INJECTIVE)


def is_reduce(tag: str) -> bool:
    """True if ``tag`` is a commutative reduction (with or without the index)."""
    return tag.startswith(COMM_REDUCE)
