"""Converters of ONNX control flow -- If, Loop and Scan -- into the dataflow graph.

tecc compiles static shapes, so control flow is resolved when the model is
imported, the way the recurrent layers are (:mod:`.convert_recurrent`):

``If``
    a condition known when compiling (a shape test, a constant: the function
    bodies of AffineGrid and others branch on such) converts only its branch;
    one computed at run time converts both and selects each output with
    ``where`` -- which needs the branches' outputs to have the same shapes and
    dtypes (else the condition must be known when compiling).
``Loop``
    unrolled over its trip count, which must be known when compiling.  The
    condition may be computed at run time when the loop has no scan outputs:
    every iteration up to the trip count is computed and the loop-carried values
    stop changing once the condition is false (a ``while`` loop bounded by its
    trip count).  With scan outputs their number would be known only at run time,
    so the condition must then be known when compiling.  The iterations after the
    condition turns false still compute (on the frozen values): an integer
    division by zero there is reported, where ONNX would not run the iteration.
``Scan``
    unrolled over its scan axis (static); Scan-8 (opset 8: a batch axis first,
    the sequence on axis 1) over each batch entry, then stacked.

Each iteration converts the body again (:meth:`.importer._Importer.subgraph`),
with the iteration number, the carried values and the slices as its inputs, so
constant folding sees each iteration's values; nodes of the body are named
``<node>/<body> (iteration i)/<body node>`` in errors.  A loop that would unroll
into more than :data:`UNROLL_LIMIT` operators is refused naming its sizes.
"""
from __future__ import annotations

import numpy as np

from .common import OnnxImportError, _axis_slice, _normalize_axis, _np_dtype
from .convert_sequence import describe, is_container

#: the most body operators a Loop or Scan may unroll into (iterations x body nodes)
UNROLL_LIMIT = 1 << 16


def _graph_attr(node, key):
    g = node.attrs.get(key)
    if g is None:
        node.fail(f"the subgraph attribute {key!r} is required but missing")
    return g


def _check_unroll(node, iterations: int, body) -> None:
    size = iterations * max(len(body.node), 1)
    if size > UNROLL_LIMIT:
        node.fail(f"tecc unrolls a {node.op_type} when importing it, and {iterations} iterations of its "
                  f"{len(body.node)}-node body would be {size} operators (at most {UNROLL_LIMIT}); bind a "
                  "shorter sequence with from_onnx(shape=...)")


def _scalar_bool(ctx, cond, node, what: str):
    """``cond`` (a bool tensor of one element) as a bool scalar of shape ()."""
    shape = ctx.shape(cond)
    if int(np.prod(shape, dtype=np.int64)) != 1:
        node.fail(f"{what} has shape {shape}; it must hold one element")
    return ctx.reshape(ctx.cast(cond, "bool"), ())


def _known(ctx, expr):
    """The compile-time value of ``expr`` as a Python bool, or None when the model
    computes it at run time."""
    if ctx.is_const(expr):
        return ctx.scalar_value(expr, "the condition", bool)
    return None


def _stack(ctx, pieces, axis: int, node, what: str):
    """``pieces`` (same shapes) stacked along a new axis ``axis`` (ONNX's scan
    output axis: negative counts from the end of the stacked rank)."""
    shapes = {ctx.shape(p) for p in pieces}
    if len(shapes) > 1:
        node.fail(f"{what} has different shapes in different iterations ({sorted(shapes)}); tecc stacks "
                  "scan outputs of one shape")
    rank = len(next(iter(shapes)))
    axis = _normalize_axis(axis, rank + 1, node, f"the axis of {what}")
    expanded = [ctx.call("expand_dims", p, axis=axis, num_newaxis=1) for p in pieces]
    return expanded[0] if len(expanded) == 1 else ctx.call("concatenate", ctx.tuple(expanded), axis=axis)


# --- If --------------------------------------------------------------------------------------
def _if(ctx, node, inputs):
    cond = _scalar_bool(ctx, inputs[0], node, "the condition")
    then_branch, else_branch = _graph_attr(node, "then_branch"), _graph_attr(node, "else_branch")
    known = _known(ctx, cond)
    if known is not None:
        return ctx.subgraph(then_branch if known else else_branch, [], "then" if known else "else")
    branches = []
    for label, branch in (("then", then_branch), ("else", else_branch)):
        try:
            branches.append(ctx.subgraph(branch, [], label))
        except OnnxImportError as err:  # a branch this model's shapes never take may not import
            ctx.value(inputs[0], f"the condition (its {label} branch does not import: {err})")
    thens, elses = branches
    if len(thens) != len(elses):
        node.fail(f"its branches give {len(thens)} and {len(elses)} outputs; ONNX requires the same number")
    outs = []
    for k, (a, b) in enumerate(zip(thens, elses)):
        if is_container(a) or is_container(b):  # a sequence or optional is chosen, never computed
            ctx.value(inputs[0], f"the condition (output {k} of its branches is {describe(a)} and {describe(b)}, "
                                 "which tecc chooses between only when compiling)")
        ta, tb = ctx.type_of(a), ctx.type_of(b)
        if ta.dtype != tb.dtype:
            node.fail(f"output {k} is {ta.dtype} in the then branch and {tb.dtype} in the else branch")
        if ta.shape != tb.shape:
            # the output's shape depends on the condition: it must be known when compiling
            ctx.value(inputs[0], f"the condition (output {k} of its branches has shapes {ta.shape} and "
                                 f"{tb.shape}, so its shape depends on it)")
        outs.append(ctx.call("where", cond, a, b))
    return outs


# --- Loop ------------------------------------------------------------------------------------
def _loop(ctx, node, inputs):
    body = _graph_attr(node, "body")
    trip_in, cond_in = inputs[0], ctx.optional_input(inputs, 1)
    carried = list(inputs[2:])
    if any(v is None for v in carried):
        node.fail("a loop-carried initial value is left out")
    n_carried = len(carried)
    n_scan = len(body.output) - 1 - n_carried
    if n_scan < 0 or len(body.input) != 2 + n_carried:
        node.fail(f"its body takes {len(body.input)} inputs and gives {len(body.output)} outputs; with "
                  f"{n_carried} loop-carried value(s) it must take {2 + n_carried} (iteration number, "
                  f"condition, the values) and give at least {1 + n_carried}")
    trip = ctx.scalar_value(trip_in, "the trip count M (input 0)", int)
    active = _scalar_bool(ctx, cond_in, node, "the condition (input 1)") if cond_in is not None else None
    if active is not None and n_scan and _known(ctx, active) is None:
        ctx.value(cond_in, "the initial condition (input 1) of a loop with scan outputs (their length "
                           "depends on it)")
    if active is not None and any(is_container(v) for v in carried) and _known(ctx, active) is None:
        ctx.value(cond_in, "the initial condition (input 1) of a loop that carries a sequence or optional (which "
                           "tecc builds only when compiling)")
    known = True if active is None else _known(ctx, active)
    if trip is None and known is None:
        node.fail("it has no trip count and its condition is computed at run time: tecc unrolls a loop "
                  "over a number of iterations known when compiling")
    if trip is not None:
        _check_unroll(node, max(trip, 0), body)
    limit = trip if trip is not None else UNROLL_LIMIT // max(len(body.node), 1)
    true = ctx.const(np.array(True), "bool")
    scans = [[] for _ in range(n_scan)]
    i = 0
    while i < limit and known is not False:
        outs = ctx.subgraph(body, [ctx.const(np.array(i, np.int64), "int64"), true if known else active] + carried,
                            f"iteration {i}")
        cond_out = _scalar_bool(ctx, outs[0], node, f"the condition its body gives in iteration {i}")
        new = outs[1:1 + n_carried]
        if known:  # every iteration so far ran: the values are the body's
            carried = new
            for k, v in enumerate(outs[1 + n_carried:]):
                scans[k].append(v)
            known = _known(ctx, cond_out)
            if known is None:
                if n_scan:
                    ctx.value(outs[0], f"the condition its body gives in iteration {i} (the loop has scan "
                                       "outputs, whose length depends on it)")
                if any(is_container(v) for v in carried):
                    ctx.value(outs[0], f"the condition its body gives in iteration {i} (the loop carries a "
                                       "sequence or optional, which tecc builds only when compiling)")
                if trip is None:
                    node.fail(f"it has no trip count and the condition its body gives in iteration {i} is computed "
                              "at run time: tecc unrolls a loop over a number of iterations known when compiling")
                active = cond_out
        else:  # the condition is computed at run time: values stop changing once it is false
            carried = [_select(ctx, node, active, v, old, k, i) for k, (v, old) in enumerate(zip(new, carried))]
            active = ctx.call("logical_and", active, cond_out)
        i += 1
    if trip is None and known is True:
        node.fail(f"it has no trip count and its condition is still true after {i} iterations; tecc unrolls "
                  f"a loop when importing it, at most {UNROLL_LIMIT} operators")
    results = list(carried)
    for k, pieces in enumerate(scans):
        if pieces:
            results.append(_stack(ctx, pieces, 0, node, f"scan output {k}"))
        else:
            results.append(_empty_loop_scan(ctx, node, body, inputs, n_carried, k))
    return results


def _select(ctx, node, active, new, old, k, i):
    tn, to = ctx.type_of(new), ctx.type_of(old)
    if tn.shape != to.shape or tn.dtype != to.dtype:
        node.fail(f"loop-carried value {k} changes from {to.dtype}{list(to.shape)} to {tn.dtype}{list(tn.shape)} "
                  f"in iteration {i}, and the condition is computed at run time; tecc needs one type for it")
    return ctx.call("where", active, new, old)


def _empty_loop_scan(ctx, node, body, inputs, n_carried, k):
    """Scan output ``k`` of a loop that runs no iteration: empty, its element's
    shape that of one iteration of the body (converted once, unused)."""
    probe = ctx.subgraph(body, [ctx.const(np.array(0, np.int64), "int64"), ctx.const(np.array(True), "bool")]
                         + list(inputs[2:]), "no iteration")
    element = probe[1 + n_carried + k]
    return ctx.empty((0,) + tuple(ctx.shape(element)), ctx.dtype_of(element))


# --- Scan ------------------------------------------------------------------------------------
def _scan(ctx, node, inputs):
    if ctx.own_opset < 9:
        return _scan8(ctx, node, inputs)
    return _scan9(ctx, node, inputs, node.attr("scan_input_axes"), node.attr("scan_input_directions"))


def _scan8(ctx, node, inputs):
    """Scan-8: every input has a batch axis first (the scan axis of the scan inputs
    is axis 1), and ``sequence_lens`` (input 0) may shorten each batch entry's
    sequence -- tecc takes it only when it is the whole length.  Each batch entry
    is scanned as Scan-9 does, and the outputs stacked on the batch axis again."""
    lens, rest = inputs[0], list(inputs[1:])
    m = int(node.required("num_scan_inputs"))
    directions = node.attr("directions")
    batches = {ctx.shape(x)[0] if ctx.rank(x) else None for x in rest}
    if len(batches) != 1 or None in batches:
        node.fail(f"Scan-8's inputs must share their first (batch) axis; their shapes are "
                  f"{[ctx.shape(x) for x in rest]}")
    batch = batches.pop()
    if lens is not None:
        steps = {ctx.shape(x)[1] for x in rest[len(rest) - m:]}
        given = np.asarray(ctx.value(lens, "sequence_lens (input 0)")).reshape(-1)
        if len(steps) != 1 or not np.all(given == next(iter(steps))):
            node.fail(f"sequence_lens {given.tolist()} shortens sequences of length {sorted(steps)}; tecc scans "
                      "whole sequences (leave sequence_lens out)")
    per_batch = []
    for b in range(batch):
        entry = []
        for x in rest:
            piece = _axis_slice(ctx, x, 0, b, b + 1)
            entry.append(ctx.reshape(piece, ctx.shape(piece)[1:]))
        per_batch.append(_scan9(ctx, node, entry, None, directions, f"batch {b}, "))
    return [_stack(ctx, [outs[j] for outs in per_batch], 0, node, f"output {j}")
            for j in range(len(per_batch[0]))]


def _scan9(ctx, node, inputs, in_axes, in_dirs, label=""):
    body = _graph_attr(node, "body")
    m = int(node.required("num_scan_inputs"))
    n = len(inputs) - m
    if m < 1 or n < 0:
        node.fail(f"num_scan_inputs {m} must be between 1 and its {len(inputs)} inputs")
    k = len(body.output) - n
    if len(body.input) != n + m or k < 0:
        node.fail(f"its body takes {len(body.input)} inputs and gives {len(body.output)} outputs; with {n} state(s) "
                  f"and {m} scan input(s) it must take {n + m} and give at least {n}")
    states, xs = list(inputs[:n]), list(inputs[n:])
    in_axes = list(in_axes if in_axes is not None else [0] * m)
    in_dirs = list(in_dirs if in_dirs is not None else [0] * m)
    out_axes = list(node.attr("scan_output_axes", [0] * k))
    out_dirs = list(node.attr("scan_output_directions", [0] * k))
    for key, got, want in (("scan_input_axes", in_axes, m), ("scan_input_directions", in_dirs, m),
                           ("scan_output_axes", out_axes, k), ("scan_output_directions", out_dirs, k)):
        if len(got) != want:
            node.fail(f"{key} has {len(got)} entries; it needs one per scan {'input' if want == m else 'output'} "
                      f"({want})")
    axes = [_normalize_axis(a, ctx.rank(x), node, f"scan_input_axes[{j}]") for j, (a, x) in enumerate(zip(in_axes, xs))]
    lengths = {ctx.shape(x)[a] for x, a in zip(xs, axes)}
    if len(lengths) != 1:
        node.fail(f"its scan inputs have different lengths along their scan axes ({sorted(lengths)})")
    steps = lengths.pop()
    _check_unroll(node, steps, body)
    scans = [[] for _ in range(k)]
    for t in range(steps):
        slices = []
        for x, a, d in zip(xs, axes, in_dirs):
            at = steps - 1 - t if d else t
            piece = _axis_slice(ctx, x, a, at, at + 1)
            shape = ctx.shape(piece)
            slices.append(ctx.reshape(piece, shape[:a] + shape[a + 1:]))
        outs = ctx.subgraph(body, states + slices, f"{label}iteration {t}")
        states = outs[:n]
        for j, v in enumerate(outs[n:]):
            scans[j].append(v)
    results = list(states)
    for j, pieces in enumerate(scans):
        if not pieces:  # a scan axis of length 0: the body's declared element type gives the shape
            results.append(_empty_scan_output(ctx, node, body, n + j, out_axes[j]))
            continue
        if out_dirs[j]:
            pieces = pieces[::-1]
        results.append(_stack(ctx, pieces, out_axes[j], node, f"scan output {j}"))
    return results


def _empty_scan_output(ctx, node, body, index, axis):
    info = body.output[index]
    tt = info.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
    if not tt.HasField("shape") or None in dims:
        node.fail(f"its scan axis has length 0 and its body does not declare the shape of output {info.name!r}")
    dtype = _np_dtype(tt.elem_type, f"{node.where}: output {info.name!r} of its body")
    axis = _normalize_axis(axis, len(dims) + 1, node, "the scan output axis")
    return ctx.empty(tuple(dims[:axis]) + (0,) + tuple(dims[axis:]), dtype)
