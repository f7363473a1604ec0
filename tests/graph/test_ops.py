"""Every operator of the graph IR built on the C backend ("llvm") through a graph
of one call (type inference, the operator's ``lower``, topi's default CPU schedule)
and compared with numpy or topi.testing's references."""
import numpy as np
import pytest

from tecc import graph as g
from tecc.topi import testing as ref
from ops_run import run_op

RNG = np.random.default_rng(11)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def ints(high, *shape, low=0, dtype="int64"):
    return RNG.integers(low, high, size=shape).astype(dtype)


def check(name, args, attrs, expected, rtol=1e-5, atol=1e-5):
    out = run_op(name, args, attrs)
    if isinstance(expected, list):
        assert len(out) == len(expected)
        for o, e in zip(out, expected):
            np.testing.assert_allclose(o, e, rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------
# convolutions
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["plain", "strided_dilated", "grouped", "depthwise", "depthwise_mult"])
def test_conv2d(case):
    x = rand(1, 4, 7, 7)
    if case == "plain":
        w, attrs = rand(6, 4, 3, 3), dict(padding=(1, 1))
        expected = ref.conv2d_nchw_python(x, w, 1, 1)
    elif case == "strided_dilated":
        w, attrs = rand(5, 4, 3, 2), dict(strides=(2, 1), padding=(1, 0, 2, 1), dilation=(2, 1))
        expected = ref.conv2d_nchw_python(x, w, (2, 1), (1, 0, 2, 1), dilation=(2, 1))
    elif case == "grouped":
        w, attrs = rand(6, 2, 3, 3), dict(groups=2, padding=1)
        expected = ref.conv2d_nchw_python(x, w, 1, 1, groups=2)
    elif case == "depthwise":
        w, attrs = rand(4, 1, 3, 3), dict(groups=4, padding=(1, 1), channels=4, kernel_size=(3, 3))
        expected = ref.conv2d_nchw_python(x, w, 1, 1, groups=4)
    else:
        w, attrs = rand(8, 1, 3, 3), dict(groups=4, strides=2)
        expected = ref.conv2d_nchw_python(x, w, 2, 0, groups=4)
    check("nn.conv2d", [x, w], attrs, expected, rtol=1e-4, atol=1e-4)


def test_conv2d_nhwc():
    x, w = rand(1, 6, 6, 3), rand(3, 3, 3, 5)
    expected = ref.conv2d_nhwc_python(x, w, 1, 1)
    check("nn.conv2d", [x, w], dict(padding=(1, 1), data_layout="NHWC", kernel_layout="HWIO"), expected,
          rtol=1e-4, atol=1e-4)


def test_conv2d_nchwc_and_layout_transform():
    """The blocked convolution AlterOpLayout makes, on operands re-laid out by the
    layout_transform operator (3 input channels one block, 16 outputs in blocks of 8)."""
    x, w = rand(1, 3, 9, 9), rand(16, 3, 3, 3)
    xb = run_op("layout_transform", [x], dict(src_layout="NCHW", dst_layout="NCHW3c"))
    wb = run_op("layout_transform", [w], dict(src_layout="OIHW", dst_layout="OIHW3i8o"))
    np.testing.assert_array_equal(wb, ref.layout_transform_python(w, "OIHW", "OIHW3i8o"))
    expected = ref.layout_transform_python(ref.conv2d_nchw_python(x, w, 2, (1, 0, 2, 1)), "NCHW", "NCHW8c")
    check("nn.contrib_conv2d_NCHWc", [xb, wb], dict(strides=(2, 2), padding=(1, 0, 2, 1), data_layout="NCHW3c",
                                                   kernel_layout="OIHW3i8o", out_layout="NCHW8c"),
          expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size,padding", [(9, (1, 1)), (6, (0, 1, 2, 0))])
def test_conv2d_nchwc_winograd(size, padding):
    """The Winograd convolution AlterOpLayout makes, on a weight transformed by
    topi.nn.winograd_weight_nchwc; odd and even outputs, uneven padding."""
    from tecc import topi

    x, w = rand(2, 16, size, size), rand(24, 16, 3, 3)
    xb = np.ascontiguousarray(ref.layout_transform_python(x, "NCHW", "NCHW8c"))
    u = topi.nn.winograd_weight_nchwc(w, 8, 8)
    expected = ref.layout_transform_python(ref.conv2d_nchw_python(x, w, 1, padding), "NCHW", "NCHW8c")
    check("nn.contrib_conv2d_NCHWc_winograd", [xb, u], dict(padding=padding, data_layout="NCHW8c",
                                                          kernel_layout="WINOGRAD4x4OI8i8o", out_layout="NCHW8c"),
          expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups,dilation", [(1, 1), (2, 1), (1, 2)])
def test_conv2d_transpose(groups, dilation):
    x, w = rand(1, 4, 5, 5), rand(4, 3, 3, 3)
    attrs = dict(strides=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=groups, dilation=dilation)
    if dilation == 1:
        expected = ref.conv2d_transpose_nchw_python(x, w, 2, 1, output_padding=1, groups=groups)
    else:
        # a dilated kernel is a kernel with zeros between its taps
        wd = ref.dilate_python(w, (1, 1, dilation, dilation))
        expected = ref.conv2d_transpose_nchw_python(x, wd, 2, 1, output_padding=1)
    check("nn.conv2d_transpose", [x, w], attrs, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_conv3d(layout):
    x, w = rand(1, 4, 5, 6, 7), rand(6, 2, 3, 3, 3)
    attrs = dict(strides=(1, 2, 1), padding=(1, 0, 1, 0, 1, 2), dilation=(1, 1, 2), groups=2)
    expected = ref.conv3d_ncdhw_python(x, w, (1, 2, 1), (1, 0, 1, 0, 1, 2), 2, (1, 1, 2))
    if layout == "NCDHW":
        check("nn.conv3d", [x, w], attrs, expected, rtol=1e-4, atol=1e-4)
        return
    w = rand(6, 4, 3, 3, 3)  # groups are NCDHW only
    attrs.update(groups=1, data_layout="NDHWC", kernel_layout="DHWIO")
    expected = ref.conv3d_ncdhw_python(x, w, (1, 2, 1), (1, 0, 1, 0, 1, 2), 1, (1, 1, 2))
    check("nn.conv3d", [np.ascontiguousarray(x.transpose(0, 2, 3, 4, 1)), np.ascontiguousarray(w.transpose(2, 3, 4, 1, 0))],
          attrs, expected.transpose(0, 2, 3, 4, 1), rtol=1e-4, atol=1e-4)


def test_conv3d_transpose_and_pool3d():
    x, w = rand(1, 4, 3, 4, 5), rand(4, 3, 3, 3, 3)
    attrs = dict(strides=(2, 2, 1), padding=(1, 0, 1), output_padding=(1, 0, 0))
    check("nn.conv3d_transpose", [x, w], attrs, ref.conv3d_transpose_ncdhw_python(x, w, (2, 2, 1), (1, 0, 1), (1, 0, 0)),
          rtol=1e-4, atol=1e-4)
    v = rand(1, 2, 5, 6, 7)
    attrs = dict(pool_size=(2, 3, 2), strides=(2, 1, 2), padding=(0, 1, 1, 1, 1, 0), ceil_mode=True)
    check("nn.max_pool3d", [v], attrs,
          ref.poolnd_python(v, (2, 3, 2), (2, 1, 2), (1, 1, 1), (0, 1, 1), (1, 1, 0), "max", ceil_mode=True))
    check("nn.avg_pool3d", [v], dict(attrs, count_include_pad=True),
          ref.poolnd_python(v, (2, 3, 2), (2, 1, 2), (1, 1, 1), (0, 1, 1), (1, 1, 0), "avg", count_include_pad=True,
                            ceil_mode=True), rtol=1e-5)
    check("image.resize3d", [v], dict(size=(10, 3, 14), method="linear", coordinate_transformation_mode="half_pixel"),
          ref.resize3d_python(v, None, "NCDHW", "linear", "half_pixel", size=(10, 3, 14)), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows", [(3,), (2, 3)])
def test_dense(rows):
    x, w = rand(*rows, 8), rand(5, 8)
    check("nn.dense", [x, w], dict(units=5), x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nr", [8, 16])
def test_contrib_dense_pack(nr):
    """The dense layer AlterOpLayout makes of nn.dense on CPUs: the weight packed
    ahead in column panels, [N / nr, K, nr] (layout NC{nr}n)."""
    x, w = rand(12, 24), rand(32, 24)
    packed = np.ascontiguousarray(w.reshape(32 // nr, nr, 24).transpose(0, 2, 1))
    check("nn.contrib_dense_pack", [x, packed], dict(weight_layout=f"NC{nr}n"), x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_matmul(ta, tb):
    a = rand(6, 4) if ta else rand(4, 6)
    b = rand(5, 6) if tb else rand(6, 5)
    expected = (a.T if ta else a) @ (b.T if tb else b)
    check("nn.matmul", [a, b], dict(transpose_a=ta, transpose_b=tb), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tb,batch_b", [(True, 2), (False, 1)])
def test_batch_matmul(tb, batch_b):
    a = rand(2, 3, 4)
    b = rand(batch_b, 5, 4) if tb else rand(batch_b, 4, 5)
    expected = a @ (np.swapaxes(b, 1, 2) if tb else b)
    check("nn.batch_matmul", [a, b], dict(transpose_b=tb), expected, rtol=1e-4, atol=1e-4)


def test_einsum_matmul_forms():
    a, b = rand(2, 3, 4, 5), rand(2, 3, 6, 5)
    check("einsum", [[a, b]], dict(equation="bhid,bhjd->bhij"), np.einsum("bhid,bhjd->bhij", a, b), rtol=1e-4,
          atol=1e-4)
    x, y = rand(3, 4), rand(4, 2)
    check("einsum", [[x, y]], dict(equation="ij,jk"), np.einsum("ij,jk", x, y), rtol=1e-4, atol=1e-4)
    # the output's row axis from the second operand; two reduced axes
    p, q = rand(2, 3, 4, 5), rand(2, 6, 4, 5)
    check("einsum", [[p, q]], dict(equation="bikl,bjkl->bji"), np.einsum("bikl,bjkl->bji", p, q), rtol=1e-4,
          atol=1e-4)
    # several kept axes of one operand (rows of a matrix product), one operand without
    # the batch axes, no kept axis (a batched dot product), no reduced axis (an outer product)
    t = p[0]  # 3 x 4 x 5
    for equation, operands in [("bij,jk->bik", (t, rand(5, 2))), ("ij,bjk->ibk", (x, rand(2, 4, 3))),
                               ("bhij,jk->bhik", (p, rand(5, 2))), ("bij,bj->bi", (t, rand(3, 5))),
                               ("bij,bij->b", (t, p[1, :, :4])), ("ij,ij->", (x, x)), ("i,j->ij", (x[0], y[0])),
                               ("bi,bj->bij", (x, x)),
                               # '...': the axes a term does not name, broadcast as numpy does
                               ("...ij,...jk->...ik", (p, rand(3, 5, 2))), ("...ij,jk", (p, rand(5, 2))),
                               ("...ij,...jk->...ik", (rand(1, 3, 4, 5), rand(2, 1, 5, 6))),
                               ("b...d,b...d->b...", (p, np.ascontiguousarray(q[:, :3]))), ("...ij->...ji", (p,)), ("i...j->...", (p,)),
                               # diagonals: a repeated letter within one operand
                               ("ii->i", (rand(4, 4),)), ("ii", (rand(4, 4),)), ("bii->bi", (rand(2, 3, 3),)),
                               ("...ii->...i", (rand(2, 3, 3),)), ("iij,jk->ik", (rand(3, 3, 4), rand(4, 2)))]:
        check("einsum", [list(operands)], dict(equation=equation), np.einsum(equation, *operands), rtol=1e-4,
              atol=1e-4)
    check("einsum", [[x]], dict(equation="ij->ji"), x.T)
    check("einsum", [[p]], dict(equation="bikl->bk"), np.einsum("bikl->bk", p), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------
# per-channel, normalization, activations
# ---------------------------------------------------------------------------------------
def test_bias_add_and_prelu():
    x, b = rand(2, 3, 4, 4), rand(3)
    check("nn.bias_add", [x, b], {}, x + b[:, None, None])
    b4 = rand(4)
    check("nn.bias_add", [x, b4], dict(axis=-1), x + b4)
    alpha = rand(3)
    check("nn.prelu", [x, alpha], {}, ref.prelu_python(x, alpha, 1))


def test_leaky_relu_clip_relu():
    x = rand(3, 5)
    check("nn.leaky_relu", [x], dict(alpha=0.2), np.where(x > 0, x, 0.2 * x))
    check("clip", [x], dict(a_min=-0.5, a_max=0.25), np.clip(x, -0.5, 0.25))
    check("nn.relu", [x], {}, np.maximum(x, 0))


def test_batch_norm_lowered_directly():
    x = rand(2, 3, 4, 4)
    gamma, beta, mean = rand(3), rand(3), rand(3)
    var = np.abs(rand(3)) + 0.5
    expected = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-3) * gamma[:, None, None] \
        + beta[:, None, None]
    check("nn.batch_norm", [x, gamma, beta, mean, var], dict(epsilon=1e-3), [expected, mean, var], rtol=1e-4,
          atol=1e-4)


def test_instance_norm():
    x, gamma, beta = rand(2, 3, 4, 5), rand(3), rand(3)
    mean = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-5) * gamma[:, None, None] + beta[:, None, None]
    check("nn.instance_norm", [x, gamma, beta], {}, expected, rtol=1e-4, atol=1e-4)


def test_layer_norm():
    x, gamma, beta = rand(2, 3, 8), rand(8), rand(8)
    check("nn.layer_norm", [x, gamma, beta], dict(epsilon=1e-5), ref.layer_norm_python(x, gamma, beta, -1),
          rtol=1e-4, atol=1e-4)
    # no scale, no centre: the operands are ignored
    check("nn.layer_norm", [x, gamma, beta], dict(scale=False, center=False),
          ref.layer_norm_python(x, np.ones(8, "float32"), np.zeros(8, "float32"), -1), rtol=1e-4, atol=1e-4)


def test_lrn():
    x = rand(1, 6, 3, 3)
    check("nn.lrn", [x], dict(size=3, alpha=1e-3, beta=0.75, bias=1.0),
          ref.lrn_python(x, 3, 1, 1.0, 1e-3, 0.75), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,fn", [("nn.softmax", ref.softmax_python), ("nn.log_softmax", ref.log_softmax_python)])
def test_softmax(name, fn):
    x = rand(3, 7)
    check(name, [x], {}, fn(x, axis=-1), rtol=1e-5)
    y = rand(2, 5, 3)
    expected = np.moveaxis(fn(np.moveaxis(y, 1, -1).reshape(-1, 5), axis=-1).reshape(2, 3, 5), -1, 1)
    check(name, [y], dict(axis=1), expected, rtol=1e-5)


# ---------------------------------------------------------------------------------------
# pooling, padding, dropout, flatten
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,ceil_mode,count_include_pad", [("nn.max_pool2d", False, False),
                                                              ("nn.max_pool2d", True, False),
                                                              ("nn.avg_pool2d", False, True),
                                                              ("nn.avg_pool2d", True, False)])
def test_pool2d(name, ceil_mode, count_include_pad):
    kind = name[3:6]
    x = rand(1, 2, 7, 7)
    attrs = dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1), ceil_mode=ceil_mode)
    if kind == "avg":
        attrs["count_include_pad"] = count_include_pad
    expected = ref.poolnd_python(x, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1), kind,
                                 count_include_pad=count_include_pad, ceil_mode=ceil_mode)
    check(name, [x], attrs, expected, rtol=1e-5)


def test_global_pools():
    x = rand(2, 3, 4, 5)
    check("nn.global_avg_pool2d", [x], {}, x.mean(axis=(2, 3), keepdims=True), rtol=1e-5)
    check("nn.global_max_pool2d", [x], {}, x.max(axis=(2, 3), keepdims=True))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    x = rand(2, 3, 4)
    widths = ((0, 0), (1, 2), (2, 1))
    attrs = dict(pad_width=widths, pad_mode=mode)
    if mode == "constant":
        attrs["pad_value"] = 1.5
        expected = np.pad(x, widths, constant_values=1.5)
    else:
        expected = np.pad(x, widths, mode=mode)
    check("nn.pad", [x], attrs, expected)


def test_dropout_is_identity_and_a_mask():
    x = rand(2, 5)
    check("nn.dropout", [x], dict(rate=0.3), [x, np.ones_like(x)])


def test_batch_flatten():
    x = rand(2, 3, 2, 2)
    check("nn.batch_flatten", [x], {}, x.reshape(2, -1))


# ---------------------------------------------------------------------------------------
# data movement
# ---------------------------------------------------------------------------------------
def test_reshape_special_values():
    x = rand(2, 3, 4)
    check("reshape", [x], dict(newshape=(0, -1)), x.reshape(2, 12))
    check("reshape", [x], dict(newshape=(4, -1, 2)), x.reshape(4, 3, 2))


def test_transpose_squeeze_expand_dims():
    x = rand(2, 1, 3)
    check("transpose", [x], dict(axes=(2, 0, 1)), x.transpose(2, 0, 1))
    check("transpose", [x], {}, x.transpose())
    check("squeeze", [x], {}, x.squeeze())
    check("squeeze", [x], dict(axis=(-2,)), x.squeeze(1))
    check("expand_dims", [x], dict(axis=-1, num_newaxis=2), x[..., None, None])


def test_concatenate_and_split():
    a, b, c = rand(2, 3), rand(2, 1), rand(2, 4)
    check("concatenate", [[a, b, c]], dict(axis=1), np.concatenate([a, b, c], axis=1))
    x = rand(6, 4)
    check("split", [x], dict(indices_or_sections=3), np.split(x, 3))
    check("split", [x], dict(indices_or_sections=(1, 3), axis=-1), np.split(x, [1, 3], axis=-1))


def test_strided_slice():
    x = rand(5, 6, 4)
    check("strided_slice", [x], dict(begin=(1, -5), end=(4, 100), strides=(2, 1)), x[1:4:2, -5:100])
    check("strided_slice", [x], dict(begin=(3,), end=(0,), strides=(-1,), axes=(2,)), x[:, :, 3:0:-1])
    check("strided_slice", [x], dict(begin=(-1,), end=(-100,), strides=(-2,), axes=(0,)), x[-1:-100:-2])
    check("strided_slice", [x], dict(begin=(1, 2), end=(2, -1), slice_mode="size"), x[1:3, 2:])


def test_take_gather_gather_nd():
    x = rand(4, 5)
    idx = np.array([[0, 3], [-1, 2]], dtype="int64")
    check("take", [x, idx], dict(axis=1, mode="wrap"), np.take(x, idx, axis=1, mode="wrap"))
    i0 = ints(4, 3)
    check("take", [x, i0], dict(axis=0), np.take(x, i0, axis=0))
    gi = ints(4, 2, 5)
    check("gather", [x, gi], dict(axis=0), np.take_along_axis(x, gi, axis=0))
    nd = np.array([[0, 3, 1], [4, 0, 2]], dtype="int64")  # index tuples along axis 0 (Relay's layout)
    check("gather_nd", [x, nd], {}, ref.gather_nd_python(x, nd))


def test_broadcast_to_tile_where_cast():
    x = rand(3, 1)
    check("broadcast_to", [x], dict(shape=(2, 3, 4)), np.broadcast_to(x, (2, 3, 4)))
    check("tile", [x], dict(reps=(2, 1, 3)), np.tile(x, (2, 1, 3)))
    cond = rand(2, 1, 4) > 0
    y = rand(4)
    check("where", [cond, x, y], {}, np.where(cond, x, y))
    check("cast", [x * 10], dict(dtype="int32"), (x * 10).astype("int32"))


def test_full_zeros_ones_arange_shape_of():
    check("full", [np.array(2.5, "float32")], dict(shape=(2, 3), dtype="int32"), np.full((2, 3), 2, "int32"))
    check("zeros", [], dict(shape=(3,)), np.zeros(3, "float32"))
    check("ones", [], dict(shape=(2, 2), dtype="int64"), np.ones((2, 2), "int64"))
    check("arange", [], dict(start=1, stop=10, step=3, dtype="int32"), np.arange(1, 10, 3, dtype="int32"))
    check("arange", [], dict(start=2.0, stop=0.0, step=-0.5), np.arange(2.0, 0.0, -0.5, dtype="float32"))
    check("shape_of", [rand(2, 3, 5)], dict(dtype="int64"), np.array([2, 3, 5], "int64"))


# ---------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,fn", [("sum", np.sum), ("mean", np.mean), ("max", np.max), ("min", np.min),
                                     ("prod", np.prod)])
def test_reductions(name, fn):
    x = rand(2, 3, 4)
    check(name, [x], dict(axis=(0, -1), keepdims=True), fn(x, axis=(0, 2), keepdims=True), rtol=1e-5)
    check(name, [x], dict(axis=(1,), exclude=True), fn(x, axis=(0, 2)), rtol=1e-5)


def test_reduce_all_axes_and_logical():
    x = rand(3, 4)
    check("sum", [x], {}, np.sum(x), rtol=1e-5)
    b = x > 0
    check("any", [b], dict(axis=1), b.any(axis=1))
    check("all", [b], dict(axis=0, keepdims=True), b.all(axis=0, keepdims=True))


@pytest.mark.parametrize("dtype", ["uint8", "float32", "bool"])
def test_logical_operators_read_nonzero_as_true_and_give_bool(dtype):
    """torch exports logical_not / all / any of uint8 tensors as ONNX Not, And...
    on them; topi's logical operators give bool for any operand dtype, and the
    operators' types say so (before: inferred uint8, lowered bool -- refused)."""
    x = np.array([0, 1, 2, 0], dtype)
    y = np.array([3, 0, 1, 0], dtype)
    check("logical_not", [x], {}, np.logical_not(x))
    check("logical_and", [x, y], {}, np.logical_and(x, y))
    check("logical_or", [x, y], {}, np.logical_or(x, y))
    check("logical_xor", [x, y], {}, np.logical_xor(x, y))
    out = run_op("logical_not", [x], {})
    assert out.dtype == np.bool_


def test_argmax_argmin():
    x = rand(3, 5)
    check("argmax", [x], dict(axis=1), np.argmax(x, axis=1).astype("int32"))
    check("argmin", [x], dict(axis=0, keepdims=True), np.argmin(x, axis=0)[None].astype("int32"))
    ties = np.array([[1, 3, 3, 0]], "float32")
    check("argmax", [ties], dict(axis=1, select_last_index=True), np.array([2], "int32"))


# ---------------------------------------------------------------------------------------
# element-wise and image
# ---------------------------------------------------------------------------------------
def test_binary_broadcasting_and_comparisons():
    a, b = rand(2, 1, 4), rand(3, 1)
    check("add", [a, b], {}, a + b)
    check("power", [np.abs(a) + 0.1, b], {}, (np.abs(a) + 0.1) ** b, rtol=1e-4)
    check("less", [a, b], {}, a < b)
    m = ints(20, 6, low=-9, dtype="int32")
    check("floor_mod", [m, np.array([4], "int32")], {}, np.mod(m, 4))


def test_bitwise_and_shifts():
    a, b = ints(100, 4, 5, low=-100, dtype="int32"), ints(100, 5, low=-100, dtype="int32")
    check("bitwise_and", [a, b], {}, a & b)
    check("bitwise_or", [a, b], {}, a | b)
    check("bitwise_xor", [a, b], {}, a ^ b)
    check("bitwise_not", [a], {}, ~a)
    u, s = ints(200, 4, 5, dtype="uint8"), ints(8, 5, dtype="uint8")
    check("left_shift", [u, s], {}, np.left_shift(u, s))
    check("right_shift", [a, np.abs(b) % 31], {}, np.right_shift(a, np.abs(b) % 31))


@pytest.mark.parametrize("name,fn", [("erf", None), ("exp", np.exp), ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
                                     ("trunc", np.trunc), ("isnan", np.isnan)])
def test_unary(name, fn):
    x = rand(3, 4) * 2
    expected = ref.erf_python(x) if name == "erf" else fn(x)
    check(name, [x], {}, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method,mode", [("nearest_neighbor", "asymmetric"), ("linear", "half_pixel")])
def test_resize2d(method, mode):
    x = rand(1, 2, 3, 4)
    expected = ref.resize2d_python(x, (2.0, 1.5), "NCHW", method, mode, size=(6, 6))
    check("image.resize2d", [x], dict(size=(6, 6), method=method, coordinate_transformation_mode=mode), expected,
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method,padding,align", [("bilinear", "zeros", False), ("bicubic", "reflection", True)])
def test_grid_sample(method, padding, align):
    x = rand(2, 3, 4, 5)
    grid = (rand(2, 2, 3, 3) * 1.5).astype("float32")  # points inside and outside the image
    expected = ref.grid_sample_python(x, grid, method, "NCHW", padding, align)
    check("image.grid_sample", [x, grid], dict(method=method, padding_mode=padding, align_corners=align), expected,
          rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("size,align", [((3, 4), True), ((3, 4), False), ((2, 3, 4), False), ((1, 2, 5), True)])
def test_affine_grid(size, align):
    k = len(size)
    theta = rand(2, k, k + 1)
    check("image.affine_grid", [theta], dict(target_shape=size, align_corners=align),
          ref.affine_grid_python(theta, size, align), rtol=1e-5, atol=1e-6)

@pytest.mark.parametrize("mode,sample_ratio,aligned", [("avg", 2, False), ("max", -1, False), ("onnx_max", 2, True)])
def test_roi_align(mode, sample_ratio, aligned):
    x = rand(2, 3, 6, 7)
    rois = np.array([[0, 0.5, 1.0, 4.0, 5.0], [1, 1.5, 0.0, 6.0, 3.5], [0, 2.0, 2.0, 2.5, 3.0]], "float32")
    check("vision.roi_align", [x, rois], dict(pooled_size=(2, 3), spatial_scale=1.0, sample_ratio=sample_ratio,
                                               mode=mode, aligned=aligned),
          ref.roi_align_nchw_python(x, rois, (2, 3), 1.0, sample_ratio, mode=mode, aligned=aligned), rtol=1e-5,
          atol=1e-5)


def test_deformable_conv2d():
    data, weight = rand(1, 4, 5, 5), rand(4, 2, 3, 3)
    offset = rand(1, 2 * 2 * 9, 5, 5) * 1.5
    mask = rand(1, 2 * 9, 5, 5)
    check("nn.deformable_conv2d", [data, offset, weight, mask],
          dict(padding=(1, 1), deformable_groups=2, groups=2, partial_edges=True),
          ref.deformable_conv2d_nchw_python(data, offset, weight, 1, 1, 1, 2, 2, mask=mask, partial_edges=True),
          rtol=1e-5, atol=1e-5)


def test_algorithm_and_movement_operators():
    x = rand(3, 5)
    values, indices = run_op("topk", [x], dict(k=2, axis=1))
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_allclose(values, np.take_along_axis(x, order, 1))
    check("cumsum", [x], dict(axis=0), np.cumsum(x, 0))
    check("cumprod", [x], dict(axis=1, exclusive=True), np.cumprod(np.concatenate([np.ones((3, 1), "float32"),
                                                                                   x[:, :-1]], 1), 1))
    check("reverse", [x], dict(axis=0), x[::-1])
    check("trilu", [x, np.array(0, "int64")], dict(upper=True), np.triu(x))
    check("one_hot", [np.array([2, 0], "int64"), np.array(1.0, "float32"), np.array(0.0, "float32")],
          dict(depth=3), np.eye(3, dtype="float32")[[2, 0]])
    idx = np.array([[1, 0, 4]], "int64")
    want = x.copy()
    want[0, [1, 0, 4]] = x[0, [1, 0, 4]] + 1
    check("scatter_elements", [x, idx, np.ones((1, 3), "float32")], dict(axis=1, reduction="add"), want)
    want = x.copy()
    want[2] = 0
    check("scatter_nd", [x, np.array([[2]], "int64"), np.zeros((1, 5), "float32")], {}, want)
    d = rand(1, 8, 2, 3)
    check("nn.depth_to_space", [d], dict(block_size=2, mode="CRD"),
          d.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6))
    p = rand(1, 2, 4, 6)
    check("nn.space_to_depth", [p], dict(block_size=2),
          p.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3))


def test_det():
    x = rand(2, 3, 4, 4)
    check("det", [x], {}, np.linalg.det(x.astype("float64")), rtol=1e-4, atol=1e-5)


def test_tree_traverse_and_walking_on():
    """A forest of two trees (entries 0-3 leaves, 4-6 branches), walked one step
    and then on from there ("tree_traverse_on"), with one mode and a mode table."""
    x = np.array([[0.5, -1.0], [2.0, 3.0], [np.nan, 0.0]], "float32")
    roots, feature = np.array([4, 6], "int32"), np.array([0, 0, 0, 0, 0, 1, 1], "int32")
    threshold = np.array([0, 0, 0, 0, 1.0, 0.0, 2.0], "float32")
    true_next, false_next = np.array([0, 1, 2, 3, 5, 1, 2], "int32"), np.array([0, 1, 2, 3, 0, 3, 3], "int32")
    tables = [roots, feature, threshold, true_next, false_next]
    want = ref.tree_traverse_python(x, roots, feature, threshold, 0, true_next, false_next, 2)
    check("tree_traverse", [x] + tables, dict(depth=2, mode=0), want, rtol=0, atol=0)
    one = ref.tree_traverse_python(x, roots, feature, threshold, 0, true_next, false_next, 1)
    check("tree_traverse_on", [x, one] + tables[1:], dict(depth=1, mode=0), want, rtol=0, atol=0)
    modes = np.array([0, 0, 0, 0, 1, 8 + 3, 5], "int32")
    want = ref.tree_traverse_python(x, roots, feature, threshold, modes, true_next, false_next, 2)
    check("tree_traverse", [x] + tables + [modes], dict(depth=2), want, rtol=0, atol=0)


def test_tree_traverse_errors():
    x = g.Var("x", g.TensorType((3, 2), "float32"))
    t = {k: g.Var(k, g.TensorType((7,), dt)) for k, dt in (("f", "int32"), ("th", "float32"), ("tn", "int32"),
                                                            ("fn", "int32"))}
    roots = g.Var("r", g.TensorType((2,), "int32"))
    from tecc.graph.transform.infer_type import infer_type

    def typed(*args, op="tree_traverse", **attrs):
        return infer_type(g.Function(list({a: None for a in args if isinstance(a, g.Var)}),
                                     g.call(op, *args, **attrs)))

    typed(x, roots, t["f"], t["th"], t["tn"], t["fn"], depth=3)
    with pytest.raises(g.GraphError, match=r"tree_traverse: depth must be 0..64 \(the steps of one walk; chain "
                                           r"walks for deeper trees\), got 65"):
        typed(x, roots, t["f"], t["th"], t["tn"], t["fn"], depth=65)
    with pytest.raises(g.GraphError, match=r"tree_traverse: threshold has dtype int32; it must be float32"):
        typed(x, roots, t["f"], t["f"], t["tn"], t["fn"], depth=3)
    with pytest.raises(g.GraphError, match=r"tree_traverse_on: roots must be an integer tensor \[trees\] or "
                                           r"\[trees, batch\]"):
        typed(x, g.Var("s", g.TensorType((2, 4), "int32")), t["f"], t["th"], t["tn"], t["fn"], depth=3,
              op="tree_traverse_on")
    with pytest.raises(g.GraphError, match=r"without a mode table, attribute mode must be one of"):
        typed(x, roots, t["f"], t["th"], t["tn"], t["fn"], depth=3, mode=6)
    with pytest.raises(g.GraphError, match=r"takes data, roots, feature, threshold, true_next, false_next and "
                                           r"optionally mode \(5 operands given\)"):
        typed(x, roots, t["f"], t["th"], t["tn"], depth=3)


def test_vision_non_max_suppression():
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 5, size=(1, 12, 2))
    boxes = np.ascontiguousarray(np.concatenate([xy, xy + 2.0], axis=2)[..., [1, 0, 3, 2]], dtype="float32")
    scores = rng.uniform(size=(1, 2, 12)).astype("float32")
    want = ref.non_max_suppression_python(boxes, scores, 3, 0.3, None, 0)
    padded = np.zeros((6, 3), "int64")
    padded[:len(want)] = want
    check("vision.non_max_suppression", [boxes, scores], dict(max_output_boxes_per_class=3, iou_threshold=0.3),
          [padded, np.array([len(want)], "int64")], rtol=0, atol=0)


def test_random_draws():
    key = np.array([99, 4], "uint64")
    check("random.uniform", [key], dict(shape=(3, 50), low=-1.0, high=1.0, salt=2),
          ref.uniform_python(key, -1.0, 1.0, (3, 50), "float32", 2), rtol=0, atol=0)
    check("random.normal", [key], dict(shape=(100,), mean=1.0, scale=3.0, salt=5),
          ref.normal_python(key, 1.0, 3.0, (100,), "float32", 5), rtol=1e-5, atol=1e-5)
    weights = np.abs(rand(2, 5)) + 0.1
    check("random.multinomial", [key, weights], dict(num_samples=40, salt=1),
          ref.multinomial_python(key, weights, 40, 1), rtol=0, atol=0)


def test_every_registered_operator_has_a_build_test():
    """The operators this module builds cover the registry (element-wise math is
    represented by a sample, tested above through the same two lowering paths)."""
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    unary_or_binary = {"sqrt", "rsqrt", "abs", "negative", "log", "tanh", "floor", "ceil", "round", "sign", "sin",
                       "cos", "reciprocal", "logical_not", "copy", "subtract", "multiply", "divide", "maximum",
                       "minimum", "floor_divide", "mod", "trunc_mod", "equal", "not_equal", "less_equal", "greater",
                       "greater_equal", "logical_and", "logical_or", "logical_xor", "tan", "asin", "acos", "atan",
                       "sinh", "cosh", "log2", "log10", "isinf", "isfinite", "asinh", "acosh", "atanh"}
    missing = [name for name in g.list_ops() if name not in unary_or_binary and f'"{name}"' not in source]
    assert missing == []


def test_symbolic_batch_lowers_to_te_variables():
    """A symbolic dimension of a result is the TE variable of that name in the
    operands' shapes: reshape (0, -1) and broadcast_to keep the batch variable."""
    import tecc
    from tecc import te, topi
    from tecc.graph.transform.infer_type import infer_type
    from tecc.target import Target

    x = g.Var("x", g.TensorType(("N", 3, 4), "float32"))
    flat = g.call("reshape", x, newshape=(0, -1))
    wide = g.call("broadcast_to", g.call("expand_dims", flat, axis=1), shape=("N", 2, 12))
    infer_type(g.Function([x], wide))
    n = te.var("N")
    data = te.placeholder((n, 3, 4), name="x")
    with Target("llvm"):
        r = flat.op.lower([data], flat.attrs, flat.checked_type)
        e = wide.args[0].op.lower([r], wide.args[0].attrs, wide.args[0].checked_type)
        out = wide.op.lower([e], wide.attrs, wide.checked_type)
        mod = tecc.build(topi.schedule([out]), [data, out, n], "llvm")
    a = rand(5, 3, 4)
    result = np.zeros((5, 2, 12), "float32")
    mod(a, result, 5)
    np.testing.assert_array_equal(result, np.broadcast_to(a.reshape(5, 1, 12), (5, 2, 12)))


def test_tuple_operand_lowers_from_a_list_or_one_by_one():
    from tecc import te
    from tecc.graph.transform.infer_type import infer_type

    a, b = g.Var("a", g.TensorType((2, 3))), g.Var("b", g.TensorType((2, 1)))
    call = g.call("concatenate", g.Tuple([a, b]), axis=1)
    infer_type(g.Function([a, b], call))
    ta, tb = te.placeholder((2, 3), name="a"), te.placeholder((2, 1), name="b")
    for inputs in ([[ta, tb]], [ta, tb]):
        out = call.op.lower(inputs, call.attrs, call.checked_type)
        assert [int(d) for d in out.shape] == [2, 4]


def test_reinterpret_reads_the_bits_and_refuses_another_width():
    x = np.array([1.0, -0.0, np.inf, -3.5], "float32")
    np.testing.assert_array_equal(run_op("reinterpret", [x], {"dtype": "int32"}), x.view("int32"))
    np.testing.assert_array_equal(run_op("reinterpret", [x.view("int32")], {"dtype": "uint32"}), x.view("uint32"))
    with pytest.raises(g.GraphError, match=r"reinterpret: the bits of a float32 tensor cannot be read as int64: "
                                           r"the two must be numeric types of one width \(cast a bool instead\)"):
        run_op("reinterpret", [x], {"dtype": "int64"})
    h = np.array([1, 2, 3, 4], "uint16")
    np.testing.assert_array_equal(run_op("reinterpret", [h], {"dtype": "int16"}), h.view("int16"))
    with pytest.raises(g.GraphError, match=r"the bits of a float32 tensor cannot be read as bfloat16"):
        run_op("reinterpret", [x], {"dtype": "bfloat16"})
    with pytest.raises(g.GraphError, match=r"cannot be read as bool"):
        run_op("reinterpret", [np.zeros(4, "uint8")], {"dtype": "bool"})
