"""A sample of the graph IR's operators built for "cuda" (topi's CUDA schedules),
checked by the GPU-semantics emulator for races and out-of-bounds accesses and run
on it against numpy."""
import numpy as np
import pytest

from tecc.topi import testing as ref
from ops_run import run_op

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def check(name, args, attrs, expected, rtol=1e-4, atol=1e-4):
    out = run_op(name, args, attrs, target="cuda")
    if isinstance(expected, list):
        for o, e in zip(out, expected):
            np.testing.assert_allclose(o, e, rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("groups", [1, 4])
def test_conv2d_cuda(groups):
    x = rand(1, 4, 6, 6)
    w = rand(4 if groups == 4 else 8, 4 // groups, 3, 3)
    check("nn.conv2d", [x, w], dict(padding=(1, 1), groups=groups),
          ref.conv2d_nchw_python(x, w, 1, 1, groups=groups))


def test_dense_and_batch_matmul_cuda():
    x, w = rand(3, 16), rand(5, 16)
    check("nn.dense", [x, w], {}, x @ w.T)
    a, b = rand(2, 4, 8), rand(2, 6, 8)
    check("nn.batch_matmul", [a, b], {}, a @ np.swapaxes(b, 1, 2))


@pytest.mark.parametrize("equation,shapes", [("bij,jk->bik", [(3, 4, 5), (5, 2)]), ("bij,bj->bi", [(3, 4, 5), (3, 5)]),
                                             ("i,j->ij", [(4,), (3,)]), ("bii,ij->bj", [(2, 3, 3), (3, 4)])])
def test_einsum_products_reshaped_after_cuda(equation, shapes):
    """Einsum forms whose product is reshaped after it: the product and the reshape
    are two kernels of one function (the reshape's launch after the product's)."""
    operands = [rand(*s) for s in shapes]
    check("einsum", [operands], dict(equation=equation), np.einsum(equation, *operands))


def test_softmax_and_layer_norm_cuda():
    x = rand(4, 10)
    check("nn.softmax", [x], {}, ref.softmax_python(x, axis=-1), rtol=1e-5, atol=1e-6)
    gamma, beta = rand(10), rand(10)
    check("nn.layer_norm", [x, gamma, beta], {}, ref.layer_norm_python(x, gamma, beta, -1))


def test_pool_cuda():
    x = rand(1, 3, 6, 6)
    check("nn.max_pool2d", [x], dict(pool_size=(2, 2), strides=(2, 2)),
          ref.poolnd_python(x, (2, 2), (2, 2), (1, 1), (0, 0), (0, 0), "max"))
    check("nn.global_avg_pool2d", [x], {}, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


def test_reduce_and_argmax_cuda():
    x = rand(3, 5, 4)
    check("mean", [x], dict(axis=(1,), keepdims=True), x.mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    check("argmax", [x], dict(axis=2), np.argmax(x, axis=2).astype("int32"))


def test_injective_cuda():
    x, y = rand(2, 3, 4), rand(2, 3, 1)
    check("transpose", [x], dict(axes=(1, 2, 0)), x.transpose(1, 2, 0))
    check("concatenate", [[x, y]], dict(axis=-1), np.concatenate([x, y], axis=-1))
    check("strided_slice", [x], dict(begin=(0, 1), end=(2, 3), axes=(0, 2)), x[0:2, :, 1:3])
