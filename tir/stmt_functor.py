"""TVM's ``tir.stmt_functor``: visit and rewrite statements with Python callbacks.

Thin names over the one visitor and mutator of :mod:`tecc.tir.functor`.
"""
from __future__ import annotations

from ..errors import TeccTypeError
from . import expr as E
from . import stmt as S
from .functor import ir_transform as _ir_transform
from .functor import post_order_visit, pre_order_visit
from .functor import substitute as _substitute
from .node import NODE_CLASSES, Node
from .op import convert

__all__ = ["ir_transform", "post_order_visit", "pre_order_visit", "renew_defs", "substitute"]


def _node_class(key):
    if isinstance(key, type) and issubclass(key, Node):
        return key
    if isinstance(key, str):
        name = key[4:] if key.startswith("tir.") else key
        for cls in NODE_CLASSES:
            if cls.__name__ == name:
                return cls
    known = sorted("tir." + c.__name__ for c in NODE_CLASSES)
    raise TeccTypeError(f"ir_transform only_enable names the unknown node type {key!r}; "
                        f"node types: {', '.join(known)}")


def ir_transform(stmt, preorder, postorder, only_enable=None):
    """Rewrite ``stmt`` with callbacks.

    Parameters
    ----------
    stmt : Stmt or PrimExpr
    preorder : callable or None
        Called on a node before its children; a non-None result replaces the node
        (and its children are not visited).
    postorder : callable or None
        Called on a node after its children were rewritten; a non-None result
        replaces it.
    only_enable : list of str or classes, optional
        Call the callbacks only on these node types (``"tir.For"``, ``"tir.Call"``...).

    Returns
    -------
    The rewritten node (the same object when nothing changed).
    """
    only = None
    if only_enable is not None:
        only = tuple(_node_class(k) for k in only_enable)
    return _ir_transform(stmt, preorder, postorder, only)


def substitute(node, vmap):
    """Replace variables in ``node``.

    Parameters
    ----------
    node : Stmt or PrimExpr
    vmap : dict or callable
        ``Var -> PrimExpr`` (numbers are converted), or a function of a Var
        returning its replacement or None.

    Returns
    -------
    The rewritten node; variables that loops and lets bind are never replaced.
    """
    if callable(vmap) and not isinstance(vmap, dict):
        fn = vmap
        mapping = {}

        def visit(n):
            if isinstance(n, E.Var) and n not in mapping:
                r = fn(n)
                if r is not None:
                    mapping[n] = convert(r)

        post_order_visit(node, visit)
        return _substitute(node, mapping)
    mapping = {}
    for k, v in (vmap or {}).items():
        if isinstance(k, E.IterVar):
            k = k.var
        if not isinstance(k, E.Var):
            raise TeccTypeError(f"substitute maps variables to expressions; the key {k!r} is not a tir.Var")
        mapping[k] = convert(v, k.dtype)
    return _substitute(node, mapping)


def renew_defs(func: S.PrimFunc) -> S.PrimFunc:
    """A copy of ``func`` in which every variable and buffer it defines (parameters,
    loop, let and allocation variables, buffers) is a new object, so the copy can
    sit next to the original without sharing a definition."""
    from .transform.unroll import _FreshBindings  # the copier unrolling uses

    if not isinstance(func, S.PrimFunc):
        raise TeccTypeError(f"renew_defs takes a tir.PrimFunc, got {type(func).__name__}")
    m = _FreshBindings()
    params = tuple(m.fresh_var(p) for p in func.params)
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is not None:
            if buf.data not in m.vmap:  # tecc's params are their buffers' data already
                m.fresh_var(buf.data)
            for e in buf.shape:  # a symbolic extent that no parameter defines (n in A[n])
                if isinstance(e, E.Var) and e not in m.vmap:
                    m.fresh_var(e)
    buffer_map = {m.vmap[p]: m.buffer(func.buffer_map[p]) for p in func.params if p in func.buffer_map}
    return S.PrimFunc(params, m.visit(func.body), None, buffer_map, func.attrs)
