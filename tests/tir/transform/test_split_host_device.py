"""The split_host_device pass (tir/transform/split_host_device.py): a GPU function
becomes a host function (workspaces and ``tecc.launch`` calls) and one kernel per
bound loop nest (``thread_extent`` attributes, shared buffers at the top, guards
where a loop is shorter than the launch extent), before/expected IR by hand; and an
error for each thing that cannot run on a GPU."""
import numpy as np
import pytest

from tecc import tir
from tecc.errors import VerifyError
from tecc.tir import keys
from tecc.tir import stmt as S
from tecc.tir.stmt import Allocate, IfThenElse, IRModule, seq
from tecc.tir.transform.split_host_device import split_host_device, split_host_device_module
from irhelpers import (
    bind, buf1d, cuda_module, launch, loop, lowered_func, run_kernels, store, sync, thread_attr, var,
)

HOST = {keys.HOST: True}
KERNEL = {keys.KERNEL: True}
RNG = np.random.default_rng(7)


def assert_module(mod, want):
    """``mod`` holds the functions of ``want`` (a list), in order, each structurally equal."""
    assert list(mod.functions) == [f.name for f in want]
    for f in want:
        tir.assert_structural_equal(mod[f.name], f)


# ----------------------------------------------------------------------------
# before / expected
# ----------------------------------------------------------------------------

def _reverse_tiles():
    """Each block of 4 reverses a 64-element tile through shared memory: the fetch
    loop is bound to 32 threads (2 elements each), the store to 64."""
    A, B = buf1d("A", 256), buf1d("B", 256)
    AS = buf1d("AS", 64, scope="shared")
    bx, tx, t2, i = var("bx"), var("tx"), var("t2"), var("i")
    body = bind(bx, 4, "blockIdx.x", Allocate(AS, seq(
        bind(tx, 32, "threadIdx.x", loop(i, 2, store(AS, A[bx * 64 + tx * 2 + i], tx * 2 + i))),
        sync(),
        bind(t2, 64, "threadIdx.x", store(B, AS[63 - t2], bx * 64 + t2)))))
    return lowered_func("rev", [A, B], body), (A, B, AS, i)


def test_one_kernel_with_shared_memory_and_a_guard():
    f, (A, B, AS, i) = _reverse_tiles()
    mod = split_host_device(f)
    host = lowered_func("rev", [A, B], launch("rev_kernel0", A.data, B.data), HOST)
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    body = Allocate(AS, seq(                                         # the shared buffer moves to the top
        IfThenElse(tx < 32, loop(i, 2, store(AS, A[bx * 64 + tx * 2 + i], tx * 2 + i))),  # 32 of 64 threads
        sync(),
        store(B, AS[63 - tx], bx * 64 + tx)))
    kern = lowered_func("rev_kernel0", [A, B], thread_attr(bx, 4, thread_attr(tx, 64, body)), KERNEL)
    assert_module(mod, [host, kern])
    # the host function keeps the parameters and buffers of the function it replaces
    assert mod["rev"].params == f.params and mod["rev"].buffer_map == f.buffer_map
    assert mod["rev"].attrs == {"global_symbol": "rev", keys.HOST: True}
    assert mod["rev_kernel0"].attrs == {"global_symbol": "rev_kernel0", keys.KERNEL: True}


def test_the_split_module_runs():
    f, _ = _reverse_tiles()
    mod = split_host_device(f)
    a, b = RNG.standard_normal(256).astype("float32"), np.zeros(256, "float32")
    run_kernels(mod["rev"], {"rev_kernel0": mod["rev_kernel0"]}, [a, b])
    np.testing.assert_array_equal(b, a.reshape(4, 64)[:, ::-1].reshape(-1))
    assert cuda_module(mod["rev"], {"rev_kernel0": mod["rev_kernel0"]}).check(a, np.zeros(256, "float32")) == []


def _two_stages():
    """``T = A * 2`` (a global workspace), then ``C = T[n - 1 - i] + 1``: two bound
    nests, n symbolic."""
    n = var("n")
    A, C, T = buf1d("A", n), buf1d("C", n), buf1d("T", n)
    bx, tx, by, ty = var("bx"), var("tx"), var("by"), var("ty")
    first = bind(bx, (n + 63) // 64, "blockIdx.x", bind(tx, 64, "threadIdx.x", IfThenElse(
        tir.likely(bx * 64 + tx < n), store(T, A[bx * 64 + tx] * 2.0, bx * 64 + tx))))
    second = bind(by, (n + 127) // 128, "blockIdx.x", bind(ty, 128, "threadIdx.x", IfThenElse(
        tir.likely(by * 128 + ty < n), store(C, T[n - 1 - (by * 128 + ty)] + 1.0, by * 128 + ty))))
    return lowered_func("f", [A, C, n], Allocate(T, seq(first, second))), (A, C, T, n)


def test_workspace_two_kernels_and_symbolic_launch():
    f, (A, C, T, n) = _two_stages()
    mod = split_host_device(f)
    # the host allocates the workspace and launches in order; each kernel takes the
    # buffers it touches (host parameters in order, then workspaces), then the scalars
    host = lowered_func("f", [A, C, n], Allocate(T, seq(launch("f_kernel0", A.data, T.data, n),
                                                        launch("f_kernel1", C.data, T.data, n))), HOST)
    bx, tx = var("blockIdx.x"), var("threadIdx.x")
    k0 = lowered_func("f_kernel0", [A, T, n], thread_attr(bx, (n + 63) // 64, thread_attr(tx, 64, IfThenElse(
        tir.likely(bx * 64 + tx < n), store(T, A[bx * 64 + tx] * 2.0, bx * 64 + tx)))), KERNEL)
    by, ty = var("blockIdx.x"), var("threadIdx.x")
    k1 = lowered_func("f_kernel1", [C, T, n], thread_attr(by, (n + 127) // 128, thread_attr(ty, 128, IfThenElse(
        tir.likely(by * 128 + ty < n), store(C, T[n - 1 - (by * 128 + ty)] + 1.0, by * 128 + ty)))), KERNEL)
    assert_module(mod, [host, k0, k1])
    for size in (1, 100, 300):
        a, c = RNG.standard_normal(size).astype("float32"), np.zeros(size, "float32")
        run_kernels(mod["f"], {"f_kernel0": mod["f_kernel0"], "f_kernel1": mod["f_kernel1"]}, [a, c, size])
        np.testing.assert_allclose(c, a[::-1] * 2 + 1, rtol=1e-6)


def test_module_pass_splits_what_is_not_split_and_returns_a_split_module_as_is():
    f, _ = _reverse_tiles()
    other, _ = _two_stages()
    mod = split_host_device_module(IRModule({"rev": f, "f": other}))
    assert list(mod.functions) == ["rev", "rev_kernel0", "f", "f_kernel0", "f_kernel1"]
    assert split_host_device_module(mod) is mod
    # a module that names a function like a kernel to be made
    clash = IRModule({"rev": f, "rev_kernel0": lowered_func("rev_kernel0", [], store(buf1d("X", 1), 0.0, 0))})
    with pytest.raises(VerifyError, match="makes a kernel 'rev_kernel0', but the module already has a function"):
        split_host_device_module(clash)


# ----------------------------------------------------------------------------
# what cannot run on a GPU
# ----------------------------------------------------------------------------

def test_error_stage_outside_any_kernel():
    A, B = buf1d("A", 64), buf1d("B", 64)
    i = var("i")
    f = lowered_func("f", [A, B], loop(i, 64, store(B, A[i] + 1.0, i)))
    with pytest.raises(VerifyError, match="the stage writing 'B' runs outside any GPU kernel"):
        split_host_device(f)


def test_error_local_buffer_outside_any_kernel():
    A = buf1d("A", 64)
    L = buf1d("L", 64, scope="local")
    tx = var("tx")
    f = lowered_func("f", [A], Allocate(L, bind(tx, 64, "threadIdx.x", store(A, L[tx], tx))))
    with pytest.raises(VerifyError, match="buffer 'L' in 'local' memory is allocated outside any kernel"):
        split_host_device(f)


def test_error_symbolic_shared_buffer():
    n = var("n")
    A = buf1d("A", n)
    AS = buf1d("AS", n, scope="shared")
    bx, tx = var("bx"), var("tx")
    f = lowered_func("f", [A, n], bind(bx, 1, "blockIdx.x", Allocate(AS, bind(
        tx, 32, "threadIdx.x", store(A, AS[tx], tx)))))
    with pytest.raises(VerifyError, match="shared buffer 'AS' has a symbolic size"):
        split_host_device(f)


def test_error_launch_extent_set_inside_the_kernel():
    A = buf1d("A", 64)
    bx, i, tx = var("bx"), var("i"), var("tx")
    f = lowered_func("f", [A], bind(bx, 4, "blockIdx.x", loop(i, 4, bind(tx, i + 1, "threadIdx.x",
                                                                            store(A, 1.0, bx * 16 + tx)))))
    with pytest.raises(VerifyError, match="the extent of threadIdx.x .* depends on loop variable 'i'"):
        split_host_device(f)


def test_error_block_index_bound_twice():
    A = buf1d("A", 64)
    b1, b2 = var("b1"), var("b2")
    f = lowered_func("f", [A], bind(b1, 4, "blockIdx.x", bind(b2, 4, "blockIdx.x", store(A, 1.0, b1 * 4 + b2))))
    with pytest.raises(VerifyError, match="'b2' is bound to blockIdx.x inside another loop bound to blockIdx.x"):
        split_host_device(f)


def test_a_buffer_reached_only_through_access_ptr_is_a_kernel_parameter():
    """A tensor-core store writes the output through ``access_ptr("w")`` and nothing
    else touches it: the kernel still takes it (flattened) as a parameter."""
    A = tir.decl_buffer((16, 16), "float16", "A")
    C = tir.decl_buffer((16, 16), "float32", "C")
    FC = buf1d("FC", 256, scope="wmma.accumulator")
    tx = var("tx")
    body = bind(tx, 32, "threadIdx.x", Allocate(FC, seq(
        S.Evaluate(tir.call_intrin("handle", "tir.tvm_fill_fragment", FC.data, 16, 16, 16, 0, 1.0)),
        S.Evaluate(tir.call_intrin("handle", "tir.tvm_store_matrix_sync", FC.data, 16, 16, 16, 0,
                                   C.access_ptr("w"), 16, "row_major")))))
    mod = split_host_device(lowered_func("fill", [A, C], body))
    k = mod["fill_kernel0"]
    assert k.params == (C.data,)
    assert [int(x) for x in k.buffer_map[C.data].shape] == [256]
