"""``verify_gpu`` and ``gpu_limits`` (tir/analysis/verify_gpu.py): does a kernel fit the
GPU -- threads per block, extents per dimension, grid, shared and local memory --
one test per error, with the kernel's and the buffers' names in the message."""
import pytest

from tecc import tir
from tecc.errors import TargetError, VerifyError
from tecc.tir.analysis.verify_gpu import GPULimits, gpu_limits, verify_gpu
from tecc.tir.stmt import Allocate, BufferStore
from irhelpers import bind, buf1d, kernel, thread_extent, thread_iv, var

c = tir.const


def _kernel_with(tags, shared=(), local=(), name="mm_kernel0"):
    """A kernel launching ``tags`` ({tag: extent}) with the given allocations."""
    A = buf1d("A", 16)
    allocs = [buf1d(n, size, dt, "shared") for n, size, dt in shared]
    allocs += [buf1d(n, size, dt, "local") for n, size, dt in local]
    body = BufferStore(A, c(1.0), (c(0),))
    for b in reversed(allocs):
        body = Allocate(b, body)
    order = sorted(tags, key=lambda t: (not t.startswith("blockIdx"), t))
    for tag in reversed(order):
        body = thread_extent(thread_iv(tag, tags[tag]), body)
    return kernel(name, [A], body)


def test_verify_gpu_accepts_a_reasonable_kernel():
    f = _kernel_with({"blockIdx.x": 100, "threadIdx.x": 16, "threadIdx.y": 16},
                     shared=[("A.shared", 64 * 16, "float32"), ("B.shared", 16 * 64, "float32")],
                     local=[("C.local", 16, "float32")])
    verify_gpu(f)
    verify_gpu(f, **gpu_limits("sm_80").verify_kwargs())
    # 64 KiB of shared memory needs the opt-in, which every listed GPU has
    big = _kernel_with({"threadIdx.x": 128}, shared=[("A.shared", 16 * 1024, "float32")])
    verify_gpu(big, **gpu_limits("sm_86").verify_kwargs())


def test_verify_gpu_threads_per_block():
    f = _kernel_with({"blockIdx.x": 4, "threadIdx.x": 64, "threadIdx.y": 32})
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\) uses 2048 threads per block.*threadIdx.x=64"):
        verify_gpu(f)


def test_verify_gpu_single_thread_extent():
    f = _kernel_with({"threadIdx.x": 2, "threadIdx.z": 128})
    with pytest.raises(VerifyError,
                       match=r"'mm_kernel0' \(computing A\): threadIdx.z has extent 128, over the limit of 64"):
        verify_gpu(f)


def test_verify_gpu_grid_extent():
    f = _kernel_with({"blockIdx.y": 70000, "threadIdx.x": 32})
    with pytest.raises(VerifyError, match=r"blockIdx.y has extent 70000, over the limit of 65535"):
        verify_gpu(f)


def test_verify_gpu_shared_memory():
    f = _kernel_with({"threadIdx.x": 256}, shared=[("A.shared", 16 * 1024, "float32"),
                                                    ("B.shared", 10 * 1024, "float32")])
    verify_gpu(f, **gpu_limits("sm_90").verify_kwargs())  # 104 KiB fits sm_90
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\) uses 104 KiB of shared memory per block "
                                          r"\(A.shared 64 KiB, B.shared 40 KiB\), over the limit of 99 KiB of sm_86"):
        verify_gpu(f, **gpu_limits("sm_86").verify_kwargs())


def test_verify_gpu_no_thread_binding():
    f = _kernel_with({})
    with pytest.raises(VerifyError, match=r"'mm_kernel0' \(computing A\) binds no axis to a GPU thread index"):
        verify_gpu(f)


def test_verify_gpu_local_memory():
    f = _kernel_with({"threadIdx.x": 32}, local=[("C.local", 32 * 1024, "float32")])
    with pytest.raises(VerifyError, match=r"128 KiB of local memory per thread \(C.local 128 KiB\)"):
        verify_gpu(f)


@pytest.mark.parametrize("scope", ["shared", "local"])
def test_verify_gpu_symbolic_allocation_size(scope):
    n = var("n")
    A, T = buf1d("A", 16), buf1d(f"A.{scope}", n, scope=scope)
    tx = thread_iv("threadIdx.x", 32)
    f = kernel("kern", [A], thread_extent(tx, Allocate(T, BufferStore(A, c(1.0), (c(0),)))))
    with pytest.raises(VerifyError,
                       match=rf"'kern' \(computing A\): the {scope} buffer 'A.{scope}' has the non-constant size n"):
        verify_gpu(f)


def test_verify_gpu_before_splitting_uses_thread_loops():
    A = buf1d("A", 16)
    tx, ty = var("tx"), var("ty")
    body = bind(ty, 64, "threadIdx.y", bind(tx, 32, "threadIdx.x", BufferStore(A, c(1.0), (c(0),))))
    with pytest.raises(VerifyError, match="2048 threads per block"):
        verify_gpu(kernel("k", [A], body))


def test_verify_gpu_symbolic_thread_extent_is_not_checked():
    n = var("n")
    A = buf1d("A", 16)
    tx = thread_iv("threadIdx.x", n)
    f = kernel("k", [A], thread_extent(tx, BufferStore(A, c(1.0), (c(0),))))
    verify_gpu(f)


def test_gpu_limits():
    assert gpu_limits("sm_80").max_shared_bytes_optin == 163 * 1024
    assert gpu_limits("sm_86").max_shared_bytes_optin == 99 * 1024
    assert gpu_limits("sm_89").max_shared_bytes_optin == 99 * 1024
    assert gpu_limits("sm_90a").max_shared_bytes_optin == 227 * 1024
    assert gpu_limits(80) == gpu_limits("8.0") == gpu_limits("sm_80")
    lim = gpu_limits("sm_90")
    assert isinstance(lim, GPULimits) and lim.max_threads_per_block == 1024 and lim.max_thread_z == 64
    with pytest.raises(TargetError, match="unknown GPU architecture 'sm_42'"):
        gpu_limits("sm_42")
