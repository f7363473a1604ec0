"""The converter of ONNX's TfIdfVectorizer: the n-gram counts of rows of token ids
(int32 or int64; a pool of strings is refused -- tecc's tensors hold numbers).

The pool's n-grams are constants, so each count is a comparison and a sum: for an
n-gram size ``n`` and a skip distance ``s`` (1 to ``max_skip_count + 1``; one for
unigrams, which no skip changes), token ``i`` of a row starts a match of pool
n-gram ``p`` when ``x[i + j*s] == pool[p, j]`` for every ``j < n`` -- an
element-wise product of ``n`` broadcast comparisons ``[batch, starts, n-grams]``
summed over the starts, one fused reduction per (size, skip).  The counts are then
weighted by ``mode`` (TF: the counts; IDF: the n-gram's weight, or 1, where its
count is not zero; TFIDF: weight times count) and laid out by ``ngram_indexes``
(n-grams sharing an output column add up; for IDF, the largest weight counts).  ``weights`` holds one weight per pool
n-gram, as the operator's specification and onnxruntime read it (ONNX's reference
implementation reads one per output column).  The work is
``batch x tokens x pool n-grams x n`` comparisons: a vocabulary of tens of
thousands of n-grams over rows of hundreds of tokens is fine, not millions.

Where the pool repeats an n-gram, its last entry counts, as ONNX's reference (an
n-gram trie whose entry is overwritten) has it.
"""
from __future__ import annotations

import numpy as np

#: the modes and what each output is
_MODES = ("TF", "IDF", "TFIDF")


def _pool(node):
    """``{n: (pool n-grams [P, n] as int64, their output columns [P], their ids
    [P])}`` for the n-gram sizes the node counts, the output width and the number
    of pool n-grams."""
    if node.attr("pool_strings") is not None:
        node.fail("its pool is strings (pool_strings): tecc's tensors hold numbers; map the tokens to ids and give "
                  "pool_int64s")
    pool = [int(v) for v in (node.attr("pool_int64s") or [])]
    counts = [int(v) for v in node.required("ngram_counts")]
    indexes = [int(v) for v in node.required("ngram_indexes")]
    lo, hi = int(node.required("min_gram_length")), int(node.required("max_gram_length"))
    if not 1 <= lo <= hi:
        node.fail(f"min_gram_length {lo} and max_gram_length {hi} must satisfy 1 <= min <= max")
    if not indexes or min(indexes) < 0:
        node.fail(f"ngram_indexes {indexes[:8]} must be non-negative output columns, one per pool n-gram")
    if any(b < a for a, b in zip(counts, counts[1:])) or (counts and not 0 <= counts[0] <= len(pool)) or \
            (counts and counts[-1] > len(pool)):
        node.fail(f"ngram_counts {counts} must be non-decreasing starts into pool_int64s ({len(pool)} items)")
    grams, next_id, last = {}, 0, {}
    for k, start in enumerate(counts):
        size = k + 1
        end = counts[k + 1] if k + 1 < len(counts) else len(pool)
        if (end - start) % size:
            node.fail(f"pool_int64s[{start}:{end}] holds {end - start} items for the {size}-grams: not a whole number "
                      f"of {size}-grams")
        for g in range((end - start) // size):
            if lo <= size <= hi:
                last[tuple(pool[start + g * size:start + (g + 1) * size])] = next_id
            next_id += 1
    if next_id > len(indexes):
        node.fail(f"the pool has {next_id} n-grams but ngram_indexes has {len(indexes)} entries: one per n-gram")
    for gram, gid in last.items():  # the last entry of a repeated n-gram counts
        grams.setdefault(len(gram), ([], [], []))
        grams[len(gram)][0].append(gram)
        grams[len(gram)][1].append(indexes[gid])
        grams[len(gram)][2].append(gid)
    width = max(indexes) + 1
    return {n: (np.array(g, np.int64).reshape(-1, n), np.array(c, np.int64), np.array(i, np.int64))
            for n, (g, c, i) in sorted(grams.items())}, width, len(indexes)


def _tfidf_vectorizer(ctx, node, inputs):
    x = inputs[0]
    dtype = ctx.dtype_of(x)
    if dtype not in ("int32", "int64"):
        node.fail(f"the input has dtype {dtype}; TfIdfVectorizer counts int32 or int64 token ids")
    shape = ctx.shape(x)
    if len(shape) not in (1, 2):
        node.fail(f"the input has shape {list(shape)}; it takes [C] or [N, C] token ids")
    mode = node.attr("mode", "TF")
    if mode not in _MODES:
        node.fail(f"mode is {mode!r}; it takes one of {', '.join(_MODES)}")
    max_skip = int(node.attr("max_skip_count", 0))
    if max_skip < 0:
        node.fail(f"max_skip_count is {max_skip}; it must be 0 or more")
    grams, width, n_grams = _pool(node)
    weights = node.attr("weights")
    if weights is not None and len(weights) and len(weights) != n_grams:
        node.fail(f"weights has {len(weights)} entries; it needs one per pool n-gram ({n_grams}, as ngram_indexes)")
    weights = np.asarray(weights if weights is not None and len(weights) else np.ones(n_grams), np.float32)
    rows = ctx.reshape(x, (1, shape[0])) if len(shape) == 1 else x
    batch, tokens = ctx.shape(rows)
    counts, columns, ids = [], [], []
    for n, (pool, cols, gids) in grams.items():
        total = None
        for s in range(1, (max_skip + 2) if n > 1 else 2):  # unigrams once: a skip does not change them
            starts = tokens - (n - 1) * s
            if starts < 1:
                break
            match = None
            for j in range(n):  # x[:, i + j*s] == pool[:, j] for the starts i, against every pool n-gram
                tok = ctx.call("strided_slice", rows, begin=(0, j * s), end=(batch, j * s + starts), strides=(1, 1))
                eq = ctx.call("equal", ctx.call("expand_dims", tok, axis=2), ctx.const(pool[:, j], dtype))
                match = eq if match is None else ctx.call("logical_and", match, eq)
            found = ctx.call("sum", ctx.cast(match, "float32"), axis=(1,))
            total = found if total is None else ctx.call("add", total, found)
        if total is not None:
            counts.append(total)
            columns.append(cols)
            ids.append(gids)
    if not counts:
        out = ctx.const(np.zeros((batch, width), np.float32), "float32")
    else:
        tf = counts[0] if len(counts) == 1 else ctx.call("concatenate", ctx.tuple(counts), axis=1)
        w = ctx.const(weights[np.concatenate(ids)], "float32")  # each counted n-gram's weight
        if mode == "IDF":
            tf = ctx.call("where", ctx.call("greater", tf, ctx.const(0.0, "float32")), w, ctx.const(0.0, "float32"))
        elif mode == "TFIDF":
            tf = ctx.call("multiply", tf, w)
        out = _lay_out(ctx, tf, np.concatenate(columns), width, batch, "max" if mode == "IDF" else "add")
    return [ctx.reshape(out, (width,)) if len(shape) == 1 else out]


def _lay_out(ctx, counts, columns, width, batch, combine):
    """``[batch, width]``: column ``columns[p]`` of the output gets value ``p``; the
    values of n-grams sharing a column add up (``combine`` "add": counts), or give
    their largest (``"max"``: IDF's weights of the n-grams present, 1 without
    weights, as ONNX's reference has it)."""
    if len(set(columns.tolist())) == len(columns):  # one n-gram per column: a gather, zero elsewhere
        source = np.full(width, len(columns), np.int64)
        source[columns] = np.arange(len(columns))
        padded = ctx.call("concatenate", ctx.tuple([counts, ctx.const(np.zeros((batch, 1), np.float32), "float32")]),
                          axis=1)
        return ctx.call("take", padded, ctx.const(source, "int64"), axis=1)
    index = ctx.const(np.broadcast_to(columns, (batch, len(columns))).copy(), "int64")
    zeros = ctx.const(np.zeros((batch, width), np.float32), "float32")
    return ctx.call("scatter_elements", zeros, index, counts, axis=1, reduction=combine)


TEXT_CONVERTERS = {"TfIdfVectorizer": _tfidf_vectorizer}
