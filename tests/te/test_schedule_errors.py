"""One expected-failure test for each user error of the schedule and TE API."""
import numpy as np
import pytest

import tecc
from tecc import te, topi
from tecc.errors import LoweringError, ScheduleError, TeccTypeError


def matmul(n=16):
    """``C = A @ B`` (topi's compute) and its reduction axis ``k``."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = topi.nn.matmul(A, B)
    return A, B, C, C.op.reduce_axis[0]


def test_reorder_axis_twice():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"stage 'C'.*'i' is given twice"):
        s[C].reorder(i, j, i)


def test_use_axis_replaced_by_split():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match=r"'i' was already replaced.*'i.outer' and 'i.inner'"):
        s[C].vectorize(i)


def test_use_axis_replaced_by_fuse():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].fuse(i, j)
    with pytest.raises(ScheduleError, match=r"'j' was already replaced.*i.j.fused"):
        s[C].split(j, factor=2)


def test_seed_tile_then_vectorize_old_axis():
    # the seed tutorial's "won't work directly after tile" case
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    s[C].tile(*C.op.axis, 16, 16)
    with pytest.raises(ScheduleError, match="already replaced"):
        s[C].vectorize(s[C].op.axis[-1])


def test_axis_of_other_stage():
    A, B, C, k = matmul()
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"stage 'D'.*'i' does not belong"):
        s[D].split(C.op.axis[0], factor=2)


def test_compute_at_non_consumer():
    A, B, C, k = matmul()
    D = te.compute(A.shape, lambda i, j: A[i, j] * 2, name="D")
    E = te.compute(A.shape, lambda i, j: A[i, j] + 1, name="E")
    F = te.compute(A.shape, lambda i, j: D[i, j] + E[i, j], name="F")
    s = te.create_schedule(F.op)
    with pytest.raises(ScheduleError, match=r"stage 'E' does not consume 'D'"):
        s[D].compute_at(s[E], E.op.axis[0])


def test_compute_at_axis_not_in_parent():
    A, B, C, k = matmul()
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match=r"stage 'D'.*does not belong"):
        s[C].compute_at(s[D], C.op.axis[0])


def test_vectorize_reduction_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"cannot vectorize reduction axis 'k'"):
        s[C].vectorize(k)


def test_parallel_reduction_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"cannot parallel reduction axis 'k'"):
        s[C].parallel(k)


@pytest.mark.parametrize("kw", [dict(factor=0), dict(factor=-2), dict(nparts=0), dict(factor=2.5),
                                dict(), dict(factor=2, nparts=2)])
def test_bad_split_arguments(kw):
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage 'C'"):
        s[C].split(C.op.axis[0], **kw)


def test_fuse_not_adjacent():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match="not adjacent"):
        s[C].fuse(i, k)


def test_fuse_reduce_with_data_parallel_is_a_reduction_loop():
    # as in TVM, fusing a data-parallel axis with a reduction axis gives a reduction
    # loop: its iterations depend on each other, so it cannot run in parallel
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    f = s[C].fuse(j, k)
    with pytest.raises(ScheduleError, match="cannot parallel reduction axis 'j.k.fused'"):
        s[C].parallel(f)


def test_inline_reduction():
    A, B, C, k = matmul()
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="a reduction cannot be inlined"):
        s[C].compute_inline()


def test_inline_output():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="an output stage cannot be inlined"):
        s[C].compute_inline()


def test_schedule_placeholder():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="placeholder"):
        s[A].compute_inline()


def test_double_annotation():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].parallel(i)
    with pytest.raises(ScheduleError, match="already marked parallel"):
        s[C].vectorize(i)


def test_bind_conflict():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    tx = te.thread_axis("threadIdx.x")
    s[C].bind(i, tx)
    with pytest.raises(ScheduleError, match="already bound to axis 'i'"):
        s[C].bind(j, tx)


def test_bind_not_thread_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="te.thread_axis"):
        s[C].bind(C.op.axis[0], C.op.axis[1])


def test_cache_write_after_fusing_data_and_reduction_axes():
    # after a split, cache_write lays the cache out in loop order (as TVM); a loop
    # that mixes data-parallel and reduction axes has no such layout
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    s[C].fuse(C.op.axis[1], k)
    with pytest.raises(ScheduleError, match="cache_write of 'C': loop 'j.k.fused' fuses data-parallel and "
                                            "reduction axes"):
        s.cache_write(C, "local")


def test_cache_read_non_reader():
    A, B, C, k = matmul()
    D = te.compute(C.shape, lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="stage 'D' does not read it directly"):
        s.cache_read(A, "shared", [D])


def test_unknown_scope():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="unknown scope 'sharde'"):
        s.cache_read(A, "sharde", [C])


def test_storage_align_bad_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="not a dimension of 'C'"):
        s[C].storage_align(k, 8, 1)


def test_storage_align_bad_offset():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"offset must be a non-negative integer, got -1"):
        s[C].storage_align(C.op.axis[0], 8, -1)
    # an offset of the factor or more counts modulo the factor, as in TVM (its
    # tensor-core schedules write storage_align(axis, n - 1, n) for a stride of n)
    s[C].storage_align(C.op.axis[0], 8, 9)
    assert s[C].storage_align_[0] == (8, 1)


def test_align_extent_bad_axis():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="align_extent: 'k' is not a dimension of 'C'"):
        s[C].align_extent(k, 8)


def test_align_extent_bad_factor():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="align_extent factor must be positive, got 0"):
        s[C].align_extent(C.op.axis[0], 0)


def test_tensor_wrong_index_count():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(TeccTypeError, match="tensor 'A' has 2 dimension"):
        te.compute((4,), lambda i: A[i, 0, 1], name="B")


def test_float_index():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TeccTypeError, match="indices must be integers"):
        te.compute((4,), lambda i: A[A[i]], name="B")


def test_compute_arity_mismatch():
    with pytest.raises(TeccTypeError, match="takes 1 argument"):
        te.compute((4, 4), lambda i: i, name="B")


def test_bool_condition_needed():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TeccTypeError, match="boolean condition"):
        te.compute((4,), lambda i: tecc.tir.if_then_else(A[i], 1.0, 0.0), name="B")


def test_symbolic_expr_as_python_bool():
    i = te.var("i")
    with pytest.raises(TeccTypeError, match="as a Python bool"):
        if i < 3:
            pass


def test_create_schedule_with_placeholder():
    A = te.placeholder((4,), name="A")
    with pytest.raises(ScheduleError, match="placeholder"):
        te.create_schedule(A.op)


def test_lower_missing_input_argument():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="tensor 'B' is read by stage 'C' but is not in the argument list"):
        tecc.lower(s, [A, C])


def test_build_missing_output_argument():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(LoweringError, match="output 'C' is not in the argument list of 'default_function'"):
        tecc.build(s, [A, B])
    # lowering alone (to read the IR) is allowed, as in TVM, with a warning
    with pytest.warns(UserWarning, match="output 'C' is not in the argument list of 'main'"):
        tecc.lower(s, [A, B])


def test_inlined_argument_is_an_unused_parameter_with_a_warning():
    # TVM's schedule-primitives tutorial passes an inlined tensor: TVM takes its buffer
    # and leaves it alone; tecc does the same and says so, pointing at the user's line
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.warns(UserWarning, match="argument 'B' is inlined .* neither reads nor writes it") as rec:
        f = tecc.build(s, [A, B, C])
    assert rec[0].filename == __file__
    a = np.arange(8, dtype="float32")
    b = tecc.nd.array(np.full(8, -7.0, "float32"))
    c = tecc.nd.array(np.zeros(8, "float32"))
    f(tecc.nd.array(a), b, c)
    np.testing.assert_allclose(c.numpy(), (a + 1) * 2)
    np.testing.assert_array_equal(b.numpy(), np.full(8, -7.0))


def test_whole_float_sizes_are_ints_and_fractions_are_refused():
    # Python 3's N / bn in TVM's tutorials: a whole float is the int, as in TVM
    A = te.placeholder((64, 32), name="A")
    P = te.compute((64 / 16, 32, 16), lambda x, k, y: A[x * 16 + y, k], name="P")
    assert [int(d) for d in P.shape] == [4, 32, 16] and P.shape[0].dtype == "int32"
    with pytest.raises(TeccTypeError, match=r"compute 'Q': dimension 2.5 is not a whole number.*use // for the division"):
        te.compute((5 / 2,), lambda i: A[i, 0], name="Q")


def test_compute_at_axis_replaced_later_moves_to_the_inner_loop():
    # as TVM's normalize: an attach loop split later becomes the split's inner loop
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2, name="B")
    C = te.compute((16,), lambda i: B[i] + 1, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    xoo, xoi = s[C].split(xo, factor=2)
    f = tecc.build(s, [A, C])
    assert s[B].attach_ivar is xoi
    a = np.arange(16, dtype="float32")
    c = np.zeros(16, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a * 2 + 1)


def test_compute_at_consumer_outside_loop():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2, name="B")
    C = te.compute((16,), lambda i: B[i] + 1, name="C")
    D = te.compute((16,), lambda i: B[i] * C[i], name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(LoweringError, match="stage 'D' also reads it outside that loop"):
        tecc.lower(s, [A, D])


def test_build_thread_bound_for_cpu():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(LoweringError, match="build this schedule for target 'cuda'"):
        tecc.build(s, [A, B], target="llvm")


def test_unknown_dtype():
    with pytest.raises(TeccTypeError, match="dtype 'float33' has an unsupported bit width"):
        te.placeholder((4,), dtype="float33", name="A")


# ---------------------------------------------------------------------------
# holes a new user fell into
# ---------------------------------------------------------------------------

def test_sum_over_a_spatial_axis_is_refused():
    A = te.placeholder((8,), name="A")
    with pytest.raises(TeccTypeError, match=r"te.sum: axis='i' is not a reduce axis.*te.reduce_axis"):
        te.compute((8,), lambda i: te.sum(A[i], axis=i), name="B")
    # the two-expression form of a reducer still combines element-wise
    B = te.compute((8,), lambda i: te.max(A[i], 0.0), name="B")
    assert "max(" in str(tecc.lower(te.create_schedule(B.op), [A, B], target="llvm"))


def test_reduce_axis_used_outside_a_reduction():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    B = te.compute((8,), lambda i: A[i, k], name="B")
    with pytest.raises(LoweringError, match=r"stage 'B' uses 'k', which none of its loops binds.*te.sum"):
        tecc.build(te.create_schedule(B.op), [A, B], target="llvm")


def test_unknown_thread_tag_is_refused_at_declaration():
    with pytest.raises(TeccTypeError, match=r"thread_axis tag 'threadIdx.w' is unknown"):
        te.thread_axis("threadIdx.w")
    with pytest.raises(TeccTypeError, match=r"thread_axis tag 'blockIdx' is unknown"):
        te.thread_axis("blockIdx")


def test_scheduling_a_placeholder_says_it_is_an_input():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"stage 'A': parallel: 'A' is an input \(te.placeholder\) and has no "
                                            r"loops"):
        s[A].parallel(B.op.axis[0])


@pytest.mark.parametrize("divide", [lambda a: a // 0, lambda a: a % 0, lambda a: tecc.tir.truncdiv(a, 0)])
def test_integer_division_by_constant_zero_is_refused_when_lowering(divide):
    A = te.placeholder((8,), name="A", dtype="int32")
    B = te.compute((8,), lambda i: divide(A[i]), name="B")
    with pytest.raises(LoweringError, match=r"stage 'B' divides by the constant 0"):
        tecc.build(te.create_schedule(B.op), [A, B], target="llvm")


def test_error_double_buffer_at_root():
    A = te.placeholder((16,), name="A")
    AA = te.compute((16,), lambda i: A[i] * 2, name="AA")
    B = te.compute((16,), lambda i: AA[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[AA].double_buffer()
    with pytest.raises(LoweringError, match=r"'AA' is double-buffered.*computed at root.*compute_at"):
        tecc.lower(s, [A, B])


def test_prefetch_of_a_tensor_the_stage_does_not_read():
    A, B, C, k = matmul()
    D = te.placeholder((16, 16), name="D")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*does not read tensor 'D'; it reads \['A', 'B'\]"):
        s[C].prefetch(D, k, 1)


def test_prefetch_with_an_offset_that_is_not_an_integer():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"prefetch on axis 'k'.*must be an integer, got 1.5"):
        s[C].prefetch(A, k, 1.5)


def test_prefetch_on_an_axis_replaced_by_split():
    A, B, C, k = matmul()
    s = te.create_schedule(C.op)
    s[C].split(k, factor=4)
    with pytest.raises(ScheduleError, match=r"prefetch: axis 'k' was already replaced"):
        s[C].prefetch(A, k, 1)


def test_prefetch_of_an_inlined_tensor():
    A = te.placeholder((16, 16), name="A")
    T = te.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="T")
    k = te.reduce_axis((0, 16), name="k")
    R = te.compute((16,), lambda i: te.sum(T[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    s[T].compute_inline()
    s[R].prefetch(T, k, 4)
    with pytest.raises(LoweringError, match=r"stage 'R': prefetch of 'T', which is computed inline"):
        tecc.lower(s, [A, R])
