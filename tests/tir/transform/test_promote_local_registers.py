"""The promote_local_registers pass (tir/transform/promote_local_registers.py): a
local buffer accessed only at constant places becomes one ``register`` buffer per
place (a vector dtype for a ramp), accessed at index 0; the buffers it must leave in
memory are left as they were."""
import numpy as np
import pytest

from tecc import tir
from tecc.tir import expr as E
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, BufferStore, seq
from tecc.tir.transform import promote_local_registers
from tecc.tir.transform.promote_local_registers import MAX_BYTES, MAX_SLOTS
from irhelpers import (
    assert_same_results, bcast, buf1d, find_loop, loop, lowered_func, ramp, run_interp, store, var,
)

c = tir.const
RNG = np.random.default_rng(5)


def reg(name, dtype="float32"):
    """A register slot as the pass makes it: one value (``dtype`` may have lanes)."""
    return buf1d(name, 1, dtype, scope="register")


def allocated(stmt):
    """``{name: buffer}`` of the allocations below ``stmt``."""
    found = {}
    tir.post_order_visit(stmt, lambda n: found.__setitem__(n.buffer.name, n.buffer) if isinstance(n, Allocate)
                         else None)
    return found


# ----------------------------------------------------------------------------
# promoted
# ----------------------------------------------------------------------------

def _scalar_accumulators():
    """``acc[0..3]`` (local) filled from A, summed pairwise into B: constant indices only."""
    A, B = buf1d("A", 4), buf1d("B", 2)
    acc = buf1d("acc", 4, scope="local")
    body = Allocate(acc, seq(
        *[BufferStore(acc, A[k] * 2.0, (c(k),)) for k in range(4)],
        BufferStore(B, acc[0] + acc[1], (c(0),)),
        BufferStore(B, acc[2] + acc[3], (c(1),))))
    return lowered_func("f", [A, B], body), (A, B, acc)


def test_constant_indices_become_one_register_each():
    f, (A, B, acc) = _scalar_accumulators()
    g = promote_local_registers(f)
    r = [reg(f"acc_{k}") for k in range(4)]
    want = Allocate(r[0], Allocate(r[1], Allocate(r[2], Allocate(r[3], seq(
        *[BufferStore(r[k], A[k] * 2.0, (c(0),)) for k in range(4)],
        BufferStore(B, r[0][0] + r[1][0], (c(0),)),
        BufferStore(B, r[2][0] + r[3][0], (c(1),)))))))
    tir.assert_structural_equal(g.body, want)
    # one slot per place, named after the place, in the register scope
    regs = allocated(g.body)
    assert sorted(regs) == ["acc_0", "acc_1", "acc_2", "acc_3"]
    assert all(b.scope == "register" and b.dtype == "float32" and int(b.shape[0]) == 1 for b in regs.values())
    assert_same_results(f, g, RNG.random(4, dtype=np.float32), np.zeros(2, np.float32))
    # a register buffer is not local: running again changes nothing
    assert promote_local_registers(g) is g


def test_ramps_become_vector_registers():
    A, B = buf1d("A", 16), buf1d("B", 16)
    acc = buf1d("acc", 16, scope="local")
    lo, hi = ramp(0, 8), ramp(8, 8)
    body = Allocate(acc, seq(
        BufferStore(acc, bcast(0.0, 8), (lo,)),
        BufferStore(acc, c(1.0), (hi,)),                          # a scalar stored to 8 lanes
        BufferStore(acc, acc[lo] + A[lo], (lo,)),
        BufferStore(acc, acc[hi] + A[hi], (hi,)),
        BufferStore(B, acc[lo], (lo,)),
        BufferStore(B, acc[hi], (hi,))))
    f = lowered_func("f", [A, B], body)
    g = promote_local_registers(f)
    r0, r8 = reg("acc_0", "float32x8"), reg("acc_8", "float32x8")
    zero = (c(0),)
    want = Allocate(r0, Allocate(r8, seq(
        BufferStore(r0, bcast(0.0, 8), zero),
        BufferStore(r8, E.Broadcast(c(1.0), 8), zero),
        BufferStore(r0, E.BufferLoad(r0, zero) + A[lo], zero),
        BufferStore(r8, E.BufferLoad(r8, zero) + A[hi], zero),
        BufferStore(B, E.BufferLoad(r0, zero), (lo,)),
        BufferStore(B, E.BufferLoad(r8, zero), (hi,)))))
    tir.assert_structural_equal(g.body, want)
    assert {n: b.dtype for n, b in allocated(g.body).items()} == {"acc_0": "float32x8", "acc_8": "float32x8"}
    a = RNG.random(16, dtype=np.float32)
    _, out = run_interp(g, a, np.zeros(16, np.float32))
    np.testing.assert_allclose(out, np.concatenate([a[:8], a[8:] + 1]), rtol=1e-6)


def test_promotion_inside_a_loop_and_only_of_the_buffers_that_qualify():
    # the accumulator tile of a row: constant places inside a loop over rows; a second
    # local buffer indexed by the loop variable stays in memory
    A, B = buf1d("A", 32), buf1d("B", 8)
    acc, tmp = buf1d("acc", 2, scope="local"), buf1d("tmp", 4, scope="local")
    i, k = var("i"), var("k")
    body = loop(i, 4, Allocate(acc, Allocate(tmp, seq(
        loop(k, 4, BufferStore(tmp, A[i * 8 + k * 2], (k,))),
        store(acc, tmp[0] + tmp[1], 0),
        store(acc, tmp[2] + tmp[3], 1),
        store(B, acc[0], i * 2),
        store(B, acc[1], i * 2 + 1)))))
    f = lowered_func("f", [A, B], body)
    g = promote_local_registers(f)
    assert {n: b.scope for n, b in allocated(g.body).items()} == {"acc_0": "register", "acc_1": "register",
                                                                   "tmp": "local"}
    assert isinstance(find_loop(g.body, "i").body.body, Allocate)  # the slots stay inside the row loop
    assert_same_results(f, g, RNG.random(32, dtype=np.float32), np.zeros(8, np.float32))


# ----------------------------------------------------------------------------
# left in memory
# ----------------------------------------------------------------------------

def _one_local(case):
    """A function over one local buffer that must stay in memory, for ``case``."""
    A, B = buf1d("A", 16), buf1d("B", 16)
    i = var("i")
    size, dtype, scope = 8, "float32", "local"
    if case == "bfloat16":
        dtype = "bfloat16"
    elif case == "shared":
        scope = "shared"
    elif case == "vector_dtype":
        dtype = "float32x4"
    elif case == "too_large":
        size = MAX_BYTES // 4 + 1
    elif case == "too_many_places":
        size = MAX_SLOTS + 1
    L = buf1d("L", size, dtype, scope)
    if case == "computed_index":
        body = loop(i, 8, seq(store(L, A[i], i), store(B, L[i], i)))
    elif case == "address_used":
        body = seq(store(L, A[0], 0), S.Evaluate(E.Call("int32", "tecc.opaque", (L.data,))), store(B, L[0], 0))
    elif case == "overlapping_places":
        body = seq(BufferStore(L, A[ramp(0, 8)], (ramp(0, 8),)), store(B, L[4], 0))
    elif case == "too_many_places":
        body = seq(*[store(L, A[k % 16], k) for k in range(size)], store(B, L[size - 1], 0))
    elif case in ("bfloat16", "vector_dtype"):
        body = store(L, E.Cast(dtype, c(0.0)) if case == "bfloat16" else bcast(0.0, 4), 0)
    else:
        body = seq(store(L, A[0], 0), store(B, L[size - 1], 0))
    return lowered_func("f", [A, B], Allocate(L, body))


@pytest.mark.parametrize("case", ["computed_index", "address_used", "overlapping_places", "bfloat16", "shared",
                                  "vector_dtype", "too_large", "too_many_places"])
def test_left_in_memory(case):
    f = _one_local(case)
    assert promote_local_registers(f) is f


def test_the_same_buffer_without_the_obstacle_is_promoted():
    # the control of test_left_in_memory: a plain local buffer, two constant places
    g = promote_local_registers(_one_local("plain"))
    assert sorted(allocated(g.body)) == ["L_0", "L_7"]


def test_the_limits_themselves_are_promoted():
    # MAX_SLOTS places, and a buffer of MAX_BYTES: still registers
    A, B = buf1d("A", 16), buf1d("B", 16)
    M = buf1d("M", MAX_SLOTS, scope="local")
    body = Allocate(M, seq(*[store(M, A[k % 16], k) for k in range(MAX_SLOTS)], store(B, M[MAX_SLOTS - 1], 0)))
    g = promote_local_registers(lowered_func("f", [A, B], body))
    assert len(allocated(g.body)) == MAX_SLOTS
    big = buf1d("big", MAX_BYTES // 4, scope="local")
    h = promote_local_registers(lowered_func("f", [A, B], Allocate(big, seq(store(big, A[0], 0),
                                                                          store(B, big[7], 0)))))
    assert sorted(allocated(h.body)) == ["big_0", "big_7"]


# ----------------------------------------------------------------------------
# within a loop (in_loops=True, the CPU pipeline)
# ----------------------------------------------------------------------------

def _plane_rows(base_of=None, second_base_of=None, inner=None):
    """The accumulator plane of a chunked convolution: ``acc[y*8 .. y*8+7]`` (two
    4-lane places of a row) accumulated over ``k`` for each row ``y``; the row's base
    ``y*8`` is computed, so the whole-buffer promotion leaves ``acc`` in memory.
    ``base_of(y, k)`` replaces the base of both places in the update,
    ``second_base_of(y, k)`` that of the second (to break the pattern); ``inner``
    wraps the update (to put a loop kind inside ``k``)."""
    A, B = buf1d("A", 32), buf1d("B", 32)
    acc = buf1d("acc", 32, scope="local")
    y, k = var("y"), var("k")
    base = y * 8 if base_of is None else base_of(y, k)
    base2 = base if second_base_of is None else second_base_of(y, k)
    update = seq(BufferStore(acc, acc[ramp(base, 4)] + E.Broadcast(A[k], 4) * A[ramp(k * 4, 4)], (ramp(base, 4),)),
                 BufferStore(acc, acc[ramp(base2 + 4, 4)] + E.Broadcast(A[k + 16], 4), (ramp(base2 + 4, 4),)))
    if inner is not None:
        update = inner(update)
    body = Allocate(acc, seq(
        loop(y, 4, seq(BufferStore(acc, bcast(0.0, 4), (ramp(y * 8, 4),)),
                       BufferStore(acc, bcast(1.0, 4), (ramp(y * 8 + 4, 4),)))),
        loop(y, 4, loop(k, 4, update)),
        loop(y, 4, BufferStore(B, acc[ramp(y * 8, 8)], (ramp(y * 8, 8),)))))
    return lowered_func("f", [A, B], body), (A, B, acc, y, k)


def test_a_loop_invariant_row_of_places_becomes_registers_for_that_loop():
    f, (A, B, acc, y, k) = _plane_rows()
    assert promote_local_registers(f) is f  # the whole-buffer promotion leaves it (computed bases)
    g = promote_local_registers(f, in_loops=True)
    r0, r4 = reg("acc_r0", "float32x4"), reg("acc_r4", "float32x4")
    zero = (c(0),)
    lo, hi = ramp(y * 8, 4), ramp(y * 8 + 4, 4)
    want_row = Allocate(r0, Allocate(r4, seq(
        BufferStore(r0, acc[lo], zero),
        BufferStore(r4, acc[hi], zero),
        loop(k, 4, seq(BufferStore(r0, E.BufferLoad(r0, zero) + E.Broadcast(A[k], 4) * A[ramp(k * 4, 4)], zero),
                       BufferStore(r4, E.BufferLoad(r4, zero) + E.Broadcast(A[k + 16], 4), zero))),
        BufferStore(acc, E.BufferLoad(r0, zero), (lo,)),
        BufferStore(acc, E.BufferLoad(r4, zero), (hi,)))))
    tir.assert_structural_equal(g.body.body.seq[1].body, want_row)  # inside the second y loop
    assert g.body.body.seq[0] is f.body.body.seq[0]  # the loops with computed places are left alone
    a = RNG.random(32, dtype=np.float32)
    assert_same_results(f, g, a, np.zeros(32, np.float32))
    assert promote_local_registers(g, in_loops=True) is g


def test_only_the_slots_a_loop_reads_are_loaded_and_only_those_it_writes_stored():
    A, B = buf1d("A", 16), buf1d("B", 16)
    acc = buf1d("acc", 16, scope="local")
    y, k = var("y"), var("k")
    body = Allocate(acc, seq(
        loop(y, 2, store(acc, A[y], y * 8 + 1)),
        loop(y, 2, loop(k, 3, seq(store(acc, A[k], y * 8),              # written only
                                  store(B, acc[y * 8 + 1] * 2.0, y * 8 + k)))),  # read only
        loop(y, 2, store(B, acc[y * 8], y * 8 + 7))))
    f = lowered_func("f", [A, B], body)
    g = promote_local_registers(f, in_loops=True)
    row = g.body.body.seq[1].body  # the promoted k loop's statements, inside the y loop
    stmts = row.body.body.seq
    assert [type(x).__name__ for x in stmts] == ["BufferStore", "For", "BufferStore"]
    assert stmts[0].buffer.name == "acc_r1" and stmts[2].buffer.name == "acc" \
        and stmts[2].value.buffer.name == "acc_r0"
    assert_same_results(f, g, RNG.random(16, dtype=np.float32), np.zeros(16, np.float32))


@pytest.mark.parametrize("case", ["base_uses_the_loop_variable", "two_bases", "parallel_inside"])
def test_loops_that_do_not_allow_slots_are_left(case):
    if case == "base_uses_the_loop_variable":
        f, _ = _plane_rows(base_of=lambda y, k: y * 4 + k)
    elif case == "two_bases":
        f, _ = _plane_rows(second_base_of=lambda y, k: y * 4)
    else:
        j = var("j")
        f, _ = _plane_rows(inner=lambda u: loop(j, 1, u, kind=S.ForKind.PARALLEL))
    g = promote_local_registers(f, in_loops=True)
    assert not any(b.scope == "register" for b in allocated(g.body).values())
    # the outer y loop does not qualify either (its variable is in the base)
    assert_same_results(f, g, RNG.random(32, dtype=np.float32), np.zeros(32, np.float32))


def test_a_cpu_build_keeps_the_chunked_convolution_plane_in_registers_per_row():
    # the real case: topi's channel-blocked convolution accumulating a 7x7 plane in
    # chunks of the input channels; the row's accumulators are C variables in the
    # reduction's inner loop, and the result is right
    import tecc
    from tecc import te, topi
    data = te.placeholder((1, 4, 7, 7, 16), name="data")
    kernel = te.placeholder((2, 4, 1, 1, 16, 16), name="kernel")
    with tecc.target.Target("llvm"):
        out = topi.x86.conv2d_NCHWc(data, kernel, 1, 0, 1, "NCHW16c", "NCHW16c", "float32")
        s = tecc.te.create_schedule(out.op)
        topi.x86.conv2d_nchwc.schedule_nchwc_from_existing(s, out, out, 7, ic_chunk=1, acc_plane=True)
    f = tecc.build(s, [data, kernel, out], "llvm")
    src = f.get_source()
    assert "_r0;" in src and "_r96;" in src  # 7 pixels x 16 channels: places 0, 16, ..., 96
    x = RNG.random((1, 4, 7, 7, 16), dtype=np.float32)
    w = RNG.random((2, 4, 1, 1, 16, 16), dtype=np.float32)
    y = tecc.nd.empty((1, 2, 7, 7, 16), "float32")
    f(tecc.nd.array(x), tecc.nd.array(w), y)
    ref = np.einsum("ncyxi,ocie->noyxe", x, w[:, :, 0, 0])
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5)


def test_a_buffer_accessed_through_an_alias_of_another_type_stays_in_memory():
    # the same storage read as int32 (a bit cast): its places count in other units
    A, B = buf1d("A", 4), buf1d("B", 4, "int32")
    L = buf1d("L", 4, scope="local")
    alias = S.Buffer("L_bits", "int32", (c(4),), L.data, "local")
    body = Allocate(L, seq(store(L, A[0], 0), store(L, A[1], 1), BufferStore(B, E.BufferLoad(alias, (c(1),)), (c(0),))))
    f = lowered_func("f", [A, B], body)
    assert promote_local_registers(f) is f
    y, k = var("y"), var("k")
    body = Allocate(L, loop(y, 2, loop(k, 2, seq(store(L, A[k], y * 2), BufferStore(B, E.BufferLoad(alias, (y * 2,)),
                                                                                    (y * 2,))))))
    g = lowered_func("g", [A, B], body)
    assert promote_local_registers(g, in_loops=True) is g
