"""The matmul template the tuner's tests share (the AutoTVM matmul tutorial's:
``tile_y`` and ``tile_x`` splits, the reduction between the outer and inner loops),
as a body each test module registers under a name of its own, so that records of
one module never match another's workloads."""
from tecc import autotvm, te


def tiled_matmul(N, L, M, dtype, vec_knob=False, refuse_vec_of_one=False):
    """``C = A @ B`` tiled by the config in effect; with ``vec_knob`` a knob ``vec``
    vectorizes the inner column loop, and with ``refuse_vec_of_one`` a config that
    would vectorize a loop of one iteration is refused."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    if vec_knob:
        cfg.define_knob("vec", [0, 1])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, s[C].op.reduce_axis[0], yi, xi)
    if vec_knob and cfg["vec"].val:
        s[C].vectorize(xi)
        if refuse_vec_of_one and cfg["tile_x"].size[-1] == 1:
            cfg.raise_error("vectorizing a loop of one iteration")
    return s, [A, B, C]
