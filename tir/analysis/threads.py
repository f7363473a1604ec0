"""Questions about GPU thread structure: which thread indices a function binds, and
to what extents.

Before host/device splitting a GPU index is a ``For`` loop of kind
``THREAD_BINDING``; in a kernel it is an ``AttrStmt(IterVar, "thread_extent",
extent)``.  :func:`thread_extent_lists` reads both forms; :func:`thread_extents` gives
the launch extent of each tag of a kernel, and :func:`launch_dims` the ``(grid,
block)`` triples CUDA launches with.
"""
from __future__ import annotations

from .. import expr as E
from .. import keys
from .. import stmt as S
from ..functor import post_order_visit


def _body(node):
    return node.body if isinstance(node, S.PrimFunc) else node


def thread_extent_lists(node) -> dict:
    """``{tag: [extent, ...]}`` for every ``blockIdx``/``threadIdx`` binding below
    ``node`` (a PrimFunc or statement), in visiting order: ``thread_extent``
    attributes and ``THREAD_BINDING`` loops alike."""
    found = {}

    def visit(n):
        if isinstance(n, S.AttrStmt) and n.attr_key == keys.THREAD_EXTENT and isinstance(n.node, E.IterVar):
            found.setdefault(n.node.thread_tag, []).append(n.value)
        elif isinstance(n, S.For) and n.kind is S.ForKind.THREAD_BINDING and n.thread_binding is not None:
            tag = n.thread_binding.thread_tag
            if keys.is_gpu_tag(tag):
                found.setdefault(tag, []).append(n.extent)

    post_order_visit(_body(node), visit)
    return found


def thread_extents(kernel) -> dict:
    """``{tag: extent}`` of a kernel (a PrimFunc or body with ``thread_extent``
    attributes, one per tag).  Tags the kernel does not bind are absent."""
    out = {}

    def visit(n):
        if isinstance(n, S.AttrStmt) and n.attr_key == keys.THREAD_EXTENT and isinstance(n.node, E.IterVar):
            out.setdefault(n.node.thread_tag, n.value)

    post_order_visit(_body(kernel), visit)
    return out


def thread_vars(kernel) -> dict:
    """``{index Var: tag}`` of the ``thread_extent`` attributes of a kernel (and of the
    loops bound to GPU indices of a function not split yet)."""
    out = {}

    def visit(n):
        if isinstance(n, S.AttrStmt) and n.attr_key == keys.THREAD_EXTENT and isinstance(n.node, E.IterVar):
            out[n.node.var] = n.node.thread_tag
        elif (isinstance(n, S.For) and n.kind is S.ForKind.THREAD_BINDING and n.thread_binding is not None
              and keys.is_gpu_tag(n.thread_binding.thread_tag)):
            out[n.loop_var] = n.thread_binding.thread_tag

    post_order_visit(_body(kernel), visit)
    return out


def launch_dims(extents: dict):
    """``(grid, block)``: the ``(x, y, z)`` extents of ``blockIdx`` and ``threadIdx``
    from ``{tag: extent}``, 1 where a tag is not bound."""
    one = E.IntImm("int32", 1)
    grid = tuple(extents.get(t, one) for t in keys.BLOCK_TAGS)
    block = tuple(extents.get(t, one) for t in keys.THREAD_TAGS)
    return grid, block


def threads_per_block(kernel):
    """The number of threads per block as an int, or None when an extent is symbolic."""
    extents = thread_extents(kernel)
    total = 1
    for tag in keys.THREAD_TAGS:
        ext = extents.get(tag)
        if ext is None:
            continue
        value = E.const_int_value(ext)
        if value is None:
            return None
        total *= value
    return total


def gpu_loops(node) -> list:
    """The ``THREAD_BINDING`` loops below ``node`` bound to ``blockIdx``/``threadIdx``
    (before host/device splitting), outermost first."""
    found = []

    def visit(n):
        if (isinstance(n, S.For) and n.kind is S.ForKind.THREAD_BINDING and n.thread_binding is not None
                and keys.is_gpu_tag(n.thread_binding.thread_tag)):
            found.append(n)

    post_order_visit(_body(node), visit)
    return list(reversed(found))


def binds_gpu_threads(node) -> bool:
    """True if some ``blockIdx``/``threadIdx`` index is bound below ``node``."""
    return bool(thread_extent_lists(node))
