"""lower_intrin: the lowering rules users register for intrinsics
(``tecc.ir.register_intrin_lowering``, TVM's name) applied to every call of them.

For a CPU build the rules of ``"llvm"``, ``"c"`` and ``"default"`` apply, for a CUDA
build those of ``"cuda"`` and ``"default"``; of the rules for one intrinsic, the
most specific target is tried first, then the highest level.  A rule returning the
call (or None) keeps it.  Without any rule registered, the pass is the identity.
"""
from __future__ import annotations

from .. import expr as E
from ..functor import ir_transform
from ..op import INTRIN_LOWERING

#: the target keys whose rules apply, per pipeline target kind, most specific first
TARGET_KEYS = {"c": ("llvm", "c", "default"), "cuda": ("cuda", "default")}


def lower_intrin(func, target_kind: str):
    """``func`` with registered lowering rules applied (the same object when none
    applies)."""
    if not INTRIN_LOWERING:
        return func
    keys = TARGET_KEYS.get(target_kind, ("default",))

    def rewrite(node):
        if not isinstance(node, E.Call):
            return None
        for key in keys:
            rule = INTRIN_LOWERING.get((str(node.op), key))
            if rule is not None:
                new = rule[1](node)
                if new is not None and new is not node:
                    return new
        return None

    body = ir_transform(func.body, None, rewrite, (E.Call,))
    return func if body is func.body else func.with_body(body)


__all__ = ["TARGET_KEYS", "lower_intrin"]
