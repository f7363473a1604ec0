"""tecc.contrib.cblas: BLAS products as extern stages (TVM's extern-op tutorial)."""
import numpy as np
import pytest

import tecc
from tecc import te
from tecc.contrib import cblas
from tecc.errors import TeccTypeError


@pytest.mark.parametrize("transa", [False, True])
@pytest.mark.parametrize("transb", [False, True])
def test_matmul_with_a_fused_epilogue(transa, transb):
    n, k, m = 37, 19, 23
    A = te.placeholder((k, n) if transa else (n, k), name="A")
    B = te.placeholder((m, k) if transb else (k, m), name="B")
    bias = te.var("bias", dtype="float32")
    C = cblas.matmul(A, B, transa, transb)
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    f = tecc.build(s, [A, B, D, bias], "llvm")
    rng = np.random.default_rng(0)
    a = rng.standard_normal([int(d) for d in A.shape]).astype("float32")
    b = rng.standard_normal([int(d) for d in B.shape]).astype("float32")
    d = tecc.nd.array(np.zeros((n, m), "float32"))
    f(tecc.nd.array(a), tecc.nd.array(b), d, 2.5)
    want = (a.T if transa else a) @ (b.T if transb else b) + 2.5
    np.testing.assert_allclose(d.numpy(), want, rtol=1e-5, atol=1e-5)


def test_batch_matmul_broadcasts_a_batch_of_one():
    A = te.placeholder((3, 5, 4), name="A")
    B = te.placeholder((1, 6, 4), name="B")
    C = cblas.batch_matmul(A, B, transb=True)
    assert [int(d) for d in C.shape] == [3, 5, 6]
    f = tecc.build(te.create_schedule(C.op), [A, B, C], "llvm")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 5, 4)).astype("float32"), rng.standard_normal((1, 6, 4)).astype("float32")
    c = tecc.nd.array(np.zeros((3, 5, 6), "float32"))
    f(tecc.nd.array(a), tecc.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b.transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


def test_registered_under_tvms_names():
    assert tecc.get_global_func("tvm.contrib.cblas.matmul", allow_missing=True) is not None
    assert tecc.get_global_func("tvm.contrib.cblas.batch_matmul", allow_missing=True) is not None


def test_shape_errors_name_the_tensors():
    A, B = te.placeholder((4, 5), name="A"), te.placeholder((6, 7), name="B")
    with pytest.raises(TeccTypeError, match=r"cblas.matmul: the reduction lengths differ: 'A' gives 5, 'B' gives 6"):
        cblas.matmul(A, B)
    with pytest.raises(TeccTypeError, match=r"cblas.matmul: lhs 'X' has shape \[2, 3, 4\]; it takes 2-D"):
        cblas.matmul(te.placeholder((2, 3, 4), name="X"), B)
    with pytest.raises(TeccTypeError, match=r"batches 2 \('P'\) and 3 \('Q'\) differ and neither is 1"):
        cblas.batch_matmul(te.placeholder((2, 4, 5), name="P"), te.placeholder((3, 5, 4), name="Q"))
