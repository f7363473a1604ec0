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
