"""Integer arithmetic analysis: simplification, bounds, interval sets.

>>> from tecc.tir.arith import Analyzer, IntervalSet, eval_set, ConstIntBound
"""
from .analyzer import Analyzer
from .bound import ConstIntBound
from .evaluate import EvalError, evaluate
from .int_set import NEG_INF, POS_INF, IntervalSet, eval_set
from .rewrite import Rule, all_rule_tables


def simplify(expr, analyzer=None):
    """Simplify one expression (with a fresh :class:`Analyzer` unless one is given)."""
    return (analyzer or Analyzer()).simplify(expr)


__all__ = [
    "Analyzer", "ConstIntBound", "EvalError", "IntervalSet", "NEG_INF", "POS_INF", "Rule",
    "all_rule_tables", "eval_set", "evaluate", "simplify",
]
