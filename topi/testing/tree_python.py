"""numpy reference of :func:`tecc.topi.tree.tree_traverse`: each row walked
through each tree, one node at a time."""
import numpy as np

from ..tree import EQ, GT, GTE, LEQ, LT, MISSING_TRACKS_TRUE, NEQ

_COMPARE = {LEQ: np.less_equal, LT: np.less, GTE: np.greater_equal, GT: np.greater, EQ: np.equal,
            NEQ: np.not_equal}


def tree_traverse_python(data, roots, feature, threshold, mode, true_next, false_next, depth):
    """``int32`` ``[trees, batch]``: the entry each walk of ``depth`` steps ends at
    (``roots`` ``[trees]``, or ``[trees, batch]``: where each walk starts)."""
    data = np.asarray(data)
    threshold = np.asarray(threshold, dtype=data.dtype)  # compared in the data's dtype, as the kernel does
    modes = np.broadcast_to(np.asarray(mode), np.shape(feature))
    roots = np.asarray(roots)
    out = np.empty((len(roots), data.shape[0]), dtype=np.int32)
    for b, row in enumerate(data):
        for t in range(len(roots)):
            node = int(roots[t] if roots.ndim == 1 else roots[t, b])
            for _ in range(depth):
                code = int(modes[node])
                x = row[feature[node]]
                go = bool(_COMPARE[code % MISSING_TRACKS_TRUE](x, threshold[node]))
                go = go or bool(code & MISSING_TRACKS_TRUE and np.isnan(x))
                node = int(true_next[node] if go else false_next[node])
            out[t, b] = node
    return out
