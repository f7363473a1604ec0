"""numpy reference of :func:`tecc.topi.tree.tree_traverse`: each row walked
through each tree, one node at a time."""
import numpy as np

from ..tree import EQ, GT, GTE, LEQ, LT, MISSING_TRACKS_TRUE, NEQ

_COMPARE = {LEQ: np.less_equal, LT: np.less, GTE: np.greater_equal, GT: np.greater, EQ: np.equal,
            NEQ: np.not_equal}


def tree_traverse_python(data, roots, feature, threshold, mode, true_next, false_next, depth):
    """``int32`` ``[batch, trees]``: the entry each walk of ``depth`` steps ends at."""
    data = np.asarray(data)
    threshold = np.asarray(threshold, dtype=data.dtype)  # compared in the data's dtype, as the kernel does
    modes = np.broadcast_to(np.asarray(mode), np.shape(feature))
    out = np.empty((data.shape[0], len(roots)), dtype=np.int32)
    for b, row in enumerate(data):
        for t, root in enumerate(roots):
            node = int(root)
            for _ in range(depth):
                code = int(modes[node])
                x = row[feature[node]]
                go = bool(_COMPARE[code % MISSING_TRACKS_TRUE](x, threshold[node]))
                go = go or bool(code & MISSING_TRACKS_TRUE and np.isnan(x))
                node = int(true_next[node] if go else false_next[node])
            out[b, t] = node
    return out
