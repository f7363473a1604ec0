"""One expected-failure test for each user error of the GPU path."""
import numpy as np
import pytest

import tecc
from tecc import te
from tecc.errors import LoweringError, ScheduleError, VerifyError


def _vadd(n=256):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    return A, B


def test_stage_without_bound_loops_is_rejected_with_its_name():
    A, B = _vadd()
    C = te.compute(B.shape, lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(VerifyError, match=r"stage writing 'B' runs outside any GPU kernel"):
        tecc.build(s, [A, C], target="cuda -arch=sm_90")


def test_too_many_threads_per_block():
    A, B = _vadd(4096)
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=2048)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(VerifyError, match="2048"):
        tecc.build(s, [A, B], target="cuda -arch=sm_90")


def test_shared_memory_over_the_limit():
    n = 128 * 1024
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    AS = s.cache_read(A, "shared", [B])
    bx, tx = s[B].split(B.op.axis[0], nparts=1)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    to, ti = s[B].split(tx, factor=256)
    s[B].bind(ti, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[B], bx)
    xo, xi = s[AS].split(AS.op.axis[0], factor=256)
    s[AS].bind(xi, te.thread_axis("threadIdx.x"))
    with pytest.raises(VerifyError, match="shared memory"):
        tecc.build(s, [A, B], target="cuda -arch=sm_80")


def test_bound_extent_larger_than_thread_axis():
    A, B = _vadd()
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis((0, 32), "threadIdx.x"))
    with pytest.raises(LoweringError, match="bound to threadIdx.x of extent 32"):
        tecc.build(s, [A, B], target="cuda -arch=sm_90")


def test_local_stage_outside_kernel():
    A, B = _vadd()
    C = te.compute(B.shape, lambda i: B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].set_scope("local")
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(VerifyError, match="'local' memory is allocated outside any kernel"):
        tecc.build(s, [A, C], target="cuda -arch=sm_90")


def test_same_thread_axis_bound_twice_in_a_stage():
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(B.op.axis[0], tx)
    with pytest.raises(ScheduleError, match="threadIdx.x is already bound"):
        s[B].bind(B.op.axis[1], tx)


def test_plain_cuda_target_runs_anywhere():
    # unmodified GPU code: target "cuda" and arrays on tecc.cuda(0), with or without a GPU
    A, B = _vadd()
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tecc.build(s, [A, B], target="cuda")
    dev = tecc.cuda(0)
    a = np.arange(256, dtype="float32")
    b = tecc.nd.array(np.zeros(256, "float32"), dev)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(tecc.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2)


def test_lower_of_gpu_schedule_prints_host_and_kernel():
    A, B = _vadd()
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    text = str(tecc.lower(s, [A, B], name="vadd", target="cuda"))
    assert 'tecc.launch("vadd_kernel0", A, B)' in text
    assert "// attr [threadIdx.x] thread_extent = 64" in text
