"""Random legal schedules for differential tests (driven by hypothesis ``data``)."""
from __future__ import annotations

from hypothesis import strategies as st

from tecc.tir import expr as E


def _const(e):
    return e.value if isinstance(e, E.IntImm) else None


def random_loop_shape(data, stage, label, allow_fuse=True):
    """Random splits (including non-dividing factors), a fuse and a reorder."""
    for iv in list(stage.leaf_iter_vars):
        if data.draw(st.booleans(), label=f"{label}: split {iv.var.name}?"):
            ext = _const(iv.dom.extent) if iv.dom is not None else None
            hi = (ext + 2) if ext else 9
            factor = data.draw(st.integers(1, max(2, hi)), label=f"{label}: factor of {iv.var.name}")
            if data.draw(st.booleans(), label=f"{label}: nparts?"):
                stage.split(iv, nparts=factor)
            else:
                stage.split(iv, factor=factor)
    leaves = list(stage.leaf_iter_vars)
    if allow_fuse and len(leaves) >= 2 and data.draw(st.booleans(), label=f"{label}: fuse?"):
        k = data.draw(st.integers(0, len(leaves) - 2), label=f"{label}: fuse at")
        a, b = leaves[k], leaves[k + 1]
        same = (a.iter_type == E.IterVarType.COMM_REDUCE) == (b.iter_type == E.IterVarType.COMM_REDUCE)
        if same:
            stage.fuse(a, b)
    leaves = list(stage.leaf_iter_vars)
    perm = data.draw(st.permutations(leaves), label=f"{label}: order")
    stage.reorder(*perm)


def random_annotations(data, stage, label):
    leaves = list(stage.leaf_iter_vars)
    data_par = [iv for iv in leaves if iv.iter_type != E.IterVarType.COMM_REDUCE]
    if data_par and data.draw(st.booleans(), label=f"{label}: parallel?"):
        stage.parallel(data_par[0])
    if len(data_par) >= 2 and data.draw(st.booleans(), label=f"{label}: vectorize?"):
        stage.vectorize(data_par[-1])
    rest = [iv for iv in leaves if stage.iter_var_attrs.get(iv) is None]
    if rest and data.draw(st.booleans(), label=f"{label}: unroll?"):
        stage.unroll(data.draw(st.sampled_from(rest), label=f"{label}: unroll which"))


def random_attach(data, s, producer, consumer, label):
    """compute_inline / compute_at a random consumer loop / root for ``producer``."""
    choices = ["root", "at"]
    if not producer.op.reduce_axis:
        choices.append("inline")
    how = data.draw(st.sampled_from(choices), label=f"{label}: attach")
    if how == "inline":
        s[producer].compute_inline()
    elif how == "at":
        leaves = list(s[consumer].leaf_iter_vars)
        iv = data.draw(st.sampled_from(leaves), label=f"{label}: at which loop")
        s[producer].compute_at(s[consumer], iv)
    return how


def random_prefetch(data, stage, label):
    """Maybe a ``prefetch`` of one of the inputs (placeholders) ``stage`` reads, on a
    random loop, a random number of iterations ahead (negative and past the loop's
    end included): a cache hint must never change a result."""
    from tecc.te.tensor import PlaceholderOp  # noqa: PLC0415

    inputs = [t for t in stage.op.input_tensors if isinstance(t.op, PlaceholderOp)]
    if not inputs or not data.draw(st.booleans(), label=f"{label}: prefetch?"):
        return
    tensor = data.draw(st.sampled_from(inputs), label=f"{label}: prefetch which")
    iv = data.draw(st.sampled_from(list(stage.leaf_iter_vars)), label=f"{label}: prefetch on")
    stage.prefetch(tensor, iv, data.draw(st.integers(-4, 64), label=f"{label}: prefetch offset"))


def bind_2d(stage, by, bx, ty_axis, tx_axis, ty, tx):
    """Bind ``by``/``bx`` to blockIdx.y/x and ``ty_axis``/``tx_axis`` to threadIdx.y/x
    of extents ``ty``/``tx``; returns the two thread axes (for cooperative fetches)."""
    from tecc import te  # noqa: PLC0415

    thread_y, thread_x = te.thread_axis((0, ty), "threadIdx.y"), te.thread_axis((0, tx), "threadIdx.x")
    stage.bind(by, te.thread_axis("blockIdx.y"))
    stage.bind(bx, te.thread_axis("blockIdx.x"))
    stage.bind(ty_axis, thread_y)
    stage.bind(tx_axis, thread_x)
    return thread_y, thread_x


def cooperative_fetch(s, cache, at_stage, at_axis, thread_y, thread_x, ty, tx):
    """A shared cache computed at ``at_stage``'s ``at_axis``, its elements spread over the
    block's ``ty`` x ``tx`` threads (``thread_y``/``thread_x``, from :func:`bind_2d`)."""
    s[cache].compute_at(s[at_stage], at_axis)
    fused = s[cache].fuse(*s[cache].op.axis)
    rest, t1 = s[cache].split(fused, factor=tx)
    _, t0 = s[cache].split(rest, factor=ty)
    s[cache].bind(t0, thread_y)
    s[cache].bind(t1, thread_x)
