"""The questions of ``tecc.tir.analysis`` (buffers.py, threads.py) asked of small
hand-built IR: layout, accesses, allocations and storage, what a statement uses, and
the GPU thread structure before and after host/device splitting."""
import pytest

from tecc import tir
from tecc.tir import analysis as an
from tecc.tir import expr as E
from tecc.tir.stmt import Allocate, BufferStore, LetStmt, seq
from irhelpers import (
    bind, buf, buf1d, kernel, loop, lowered_func, ramp, store, thread_extent, thread_iv, var,
)

c = tir.const


def ints(exprs):
    return tuple(int(e) for e in exprs)


# ----------------------------------------------------------------------------
# layout
# ----------------------------------------------------------------------------

def test_buffer_strides_and_sizes():
    A = buf("A", (4, 8))
    assert ints(an.buffer_strides(A)) == (8, 1)
    assert int(an.buffer_size(A)) == 32 and an.const_size(A) == 32
    # explicit strides (storage_align): the size is the outer stride times the outer extent
    T = buf("T", (4, 5), strides=(8, 1))
    assert ints(an.buffer_strides(T)) == (8, 1) and an.const_size(T) == 32
    # symbolic shapes: strides and size are expressions, const_size is None
    n, m = var("n"), var("m")
    S2 = buf("S", (n, m))
    stride0, stride1 = an.buffer_strides(S2)
    assert stride0 is m and int(stride1) == 1
    tir.assert_structural_equal(an.buffer_size(S2), n * m)
    assert an.const_size(S2) is None
    assert int(an.buffer_size(buf("s", ()))) == 1


def test_is_flat():
    assert an.is_flat(buf1d("F", 8))
    assert not an.is_flat(buf("A", (4, 8)))
    assert not an.is_flat(buf("T", (8,), strides=(2,)))
    assert an.is_flat(buf("U", (8,), strides=(1,)))


def test_flat_index_scalar_and_vector():
    A = buf("A", (4, 8))
    i, j = var("i"), var("j")
    tir.assert_structural_equal(an.flat_index(A, (i, j)), i * 8 + j)
    # a 1-D unit-stride buffer: the index as it is
    F = buf1d("F", 8)
    assert an.flat_index(F, (i,)) is i
    # a ramp stays a ramp, the other terms move into its base
    tir.assert_structural_equal(an.flat_index(A, (i, ramp(0, 8))), E.Ramp(i * 8, c(1), 8))
    tir.assert_structural_equal(an.flat_index(A, (i, ramp(j, 4))), E.Ramp(i * 8 + j, c(1), 4))
    # a ramp along a strided dimension is scaled by the stride
    tir.assert_structural_equal(an.flat_index(A, (ramp(0, 4), j)), E.Ramp(j, c(8), 4))
    # a vector index that is not a ramp: the scalar terms are broadcast to its lanes
    lanes = E.Broadcast(i, 4)
    tir.assert_structural_equal(an.flat_index(A, (j, lanes)), E.Add(lanes, E.Broadcast(j * 8, 4)))
    with pytest.raises(AssertionError, match="2 dimensions"):
        an.flat_index(A, (i,))


# ----------------------------------------------------------------------------
# accesses, allocations, storage
# ----------------------------------------------------------------------------

def _staged_copy():
    """``for i { L[0] = A[i]; S[i] = L[0] * 2; B[i] = S[i] + A[i] }`` with a local L
    and a shared S."""
    A, B = buf1d("A", 16), buf1d("B", 16)
    L, Sh = buf1d("L", 1, scope="local"), buf1d("S", 16, "float16", scope="shared")
    i = var("i")
    body = Allocate(Sh, Allocate(L, loop(i, 16, seq(
        BufferStore(L, A[i], (c(0),)),
        BufferStore(Sh, E.Cast("float16", L[0] * 2.0), (i,)),
        BufferStore(B, E.Cast("float32", Sh[i]) + A[i], (i,))))))
    return lowered_func("staged", [A, B], body), (A, B, L, Sh)


def test_buffers_read_and_written_in_order_of_first_access():
    f, (A, B, L, Sh) = _staged_copy()
    assert an.buffers_written(f.body) == [L, Sh, B]
    assert an.buffers_read(f.body) == [A, L, Sh]
    assert an.buffers_written(f.body, ("global",)) == [B]
    assert an.buffers_read(f.body, ("local", "shared")) == [L, Sh]
    assert an.written_data(f.body) == {L.data, Sh.data, B.data}
    assert an.written_params(f) == {1}


def test_allocations_and_storage_bytes():
    f, (A, B, L, Sh) = _staged_copy()
    assert an.allocations(f.body) == [Sh, L]                 # outer first
    assert an.allocations(f.body, ("local",)) == [L]
    assert an.storage_bytes(f, "shared") == 16 * 2           # float16
    assert an.storage_bytes(f.body, "local") == 4
    assert an.storage_bytes(f, "global") == 0
    # a vector dtype counts all its lanes
    R = buf1d("R", 2, "float32x4", scope="local")
    assert an.storage_bytes(Allocate(R, store(R, 0.0, 0)), "local") == 2 * 16
    n = var("n")
    sym = buf1d("sym", n, scope="shared")
    with pytest.raises(ValueError, match="shared buffer 'sym' has the symbolic size n"):
        an.storage_bytes(Allocate(sym, store(sym, 0.0, 0)), "shared")


def test_uses_gathers_buffers_and_variables_in_one_walk():
    n, i, t = var("n"), var("i"), var("t")
    A, B = buf1d("A", n), buf1d("B", n)
    L = buf1d("L", 4, scope="local")
    body = Allocate(L, loop(i, n, LetStmt(t, i * 2, seq(store(L, A[t], 0), store(B, L[0], i)))))
    u = an.uses(body)
    assert list(u.read) == [A.data, L.data] and u.read[A.data] is A
    assert list(u.written) == [L.data, B.data]
    assert list(u.allocated) == [L.data]
    # the loop and let variables it reads, and n from the accessed buffers' shapes
    assert {i, t, n} <= u.vars
    assert an.vars_used(body) == u.vars


def test_dtypes_used():
    H = buf1d("H", 4, "float16")
    n = var("n")
    i = var("i")
    f = lowered_func("f", [H, n], loop(i, n, store(H, E.Cast("float16", c(1, "int8")), i)))
    assert an.dtypes_used(f) == {"float16", "int32", "int8"}
    assert an.dtypes_used(f.body) == {"float16", "int32", "int8"}
    V = buf1d("V", 8, "float32x4")
    assert an.dtypes_used(store(V, E.Broadcast(c(1.0), 4), 0)) == {"float32", "int32"}


# ----------------------------------------------------------------------------
# GPU threads: loops bound before splitting, thread_extent attributes after
# ----------------------------------------------------------------------------

def _kernel_2d(ty_extent=4):
    A = buf1d("A", 1024)
    bx, tx, ty = thread_iv("blockIdx.x", 8), thread_iv("threadIdx.x", 32), thread_iv("threadIdx.y", ty_extent)
    body = store(A, 1.0, bx.var * 128 + ty.var * 32 + tx.var)
    return kernel("k", [A], thread_extent(bx, thread_extent(ty, thread_extent(tx, body)))), (bx, tx, ty)


def test_thread_extents_vars_and_launch_dims():
    k, (bx, tx, ty) = _kernel_2d()
    ext = an.thread_extents(k)
    assert {tag: int(e) for tag, e in ext.items()} == {"blockIdx.x": 8, "threadIdx.y": 4, "threadIdx.x": 32}
    assert an.thread_vars(k) == {bx.var: "blockIdx.x", ty.var: "threadIdx.y", tx.var: "threadIdx.x"}
    grid, block = an.launch_dims(ext)
    assert ints(grid) == (8, 1, 1) and ints(block) == (32, 4, 1)
    assert an.threads_per_block(k) == 128
    assert an.binds_gpu_threads(k) and not an.gpu_loops(k)   # attributes, not loops
    # a symbolic extent: the thread count is unknown
    n = var("n")
    sym, _ = _kernel_2d(ty_extent=n)
    assert an.threads_per_block(sym) is None
    assert an.thread_extents(sym)["threadIdx.y"] is n


def test_thread_structure_before_splitting():
    A = buf1d("A", 256)
    bx, tx, vt, i = var("bx"), var("tx"), var("vt"), var("i")
    inner = bind(tx, 32, "threadIdx.x", loop(i, 2, store(A, 1.0, bx * 64 + tx * 2 + i)))
    second = bind(tx, 16, "threadIdx.x", store(A, 2.0, bx * 64 + tx))
    outer = bind(bx, 4, "blockIdx.x", bind(vt, 2, "vthread", seq(inner, second)))
    loops = an.gpu_loops(outer)
    assert [lp.loop_var for lp in loops] == [bx, tx, tx]       # outermost first; vthread is not a GPU index
    lists = an.thread_extent_lists(outer)
    assert {tag: [int(e) for e in exts] for tag, exts in lists.items()} == {"blockIdx.x": [4],
                                                                              "threadIdx.x": [32, 16]}
    assert an.binds_gpu_threads(outer)
    assert not an.binds_gpu_threads(loop(i, 2, store(A, 1.0, i)))
    assert an.thread_extents(outer) == {}                       # only attributes count there


def test_for_takes_tvms_constructor_forms():
    """TVM's For(loop_var, min, extent, kind, body) with Python ints and a kind name,
    and its form before v0.8, For(loop_var, min, extent, for_type, device_api,
    body) with tir.For.Vectorized... (v0.7's low_level_custom_pass tutorial)."""
    import pytest

    from tecc.errors import TeccTypeError
    from tecc.tir.expr import IntImm

    i = tir.Var("i", "int32")
    body = tir.Evaluate(0)
    new = tir.For(i, 0, 8, "vectorized", body, annotations={"pragma_x": 1})
    old = tir.For(i, 0, 8, tir.For.Vectorized, 0, body)
    for f in (new, old):
        assert isinstance(f.min, IntImm) and f.extent.value == 8 and f.kind is tir.ForKind.VECTORIZED
        assert f.body is body and f.thread_binding is None
    assert new.annotations == (("pragma_x", 1),)
    assert tir.For(i, 0, 8, 3, 0, body).kind is tir.ForKind.UNROLLED
    with pytest.raises(TeccTypeError, match=r"For: loop kind 'sideways' is not a ForKind"):
        tir.For(i, 0, 8, "sideways", body)
