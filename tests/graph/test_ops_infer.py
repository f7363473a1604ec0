"""Shape and dtype inference of the graph IR's operators: results against numpy
(hypothesis for broadcasting, reshape, transpose and slicing), symbolic batch
dimensions carried through, and one refused case per error the operators raise."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tecc import graph as g
from tecc.graph import GraphError, TensorType, TupleType
from tecc.graph.transform.infer_type import infer_type
from tecc.errors import TeccError


def _operand(spec, params):
    if isinstance(spec, list):
        return g.Tuple([_operand(s, params) for s in spec])
    paired = isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str)
    shape, dtype = spec if paired else (spec, "float32")
    v = g.Var(f"x{len(params)}", TensorType(shape, dtype))
    params.append(v)
    return v


def infer(name, *operands, **attrs):
    """The inferred type of ``name`` over operands given as shapes, ``(shape,
    dtype)`` pairs, or lists of those (a Tuple operand)."""
    params = []
    args = [_operand(s, params) for s in operands]
    call = g.call(name, *args, **attrs)
    infer_type(g.Function(params, call))
    return call.checked_type


def T(shape, dtype="float32"):
    return TensorType(shape, dtype)


# ---------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------
def test_inferred_types_of_the_model_operators():
    assert infer("nn.conv2d", (1, 3, 8, 8), (4, 3, 3, 3), padding=(1, 1), strides=2) == T((1, 4, 4, 4))
    assert infer("nn.conv2d", (1, 8, 8, 3), (3, 3, 3, 4), data_layout="NHWC", kernel_layout="HWIO") == T((1, 6, 6, 4))
    assert infer("nn.conv2d_transpose", (1, 4, 5, 5), (4, 2, 3, 3), strides=2, padding=1, output_padding=1,
                 groups=2) == T((1, 4, 10, 10))
    assert infer("nn.dense", (2, 3, 8), (5, 8)) == T((2, 3, 5))
    # int32 data times 8-bit weights into int32 (a quantized model's product)
    assert infer("nn.dense", ((2, 8), "int32"), ((5, 8), "uint8"), out_dtype="int32") == T((2, 5), "int32")
    assert infer("nn.conv2d", ((1, 3, 8, 8), "int32"), ((4, 3, 3, 3), "int8"), padding=(1, 1),
                 out_dtype="int32") == T((1, 4, 8, 8), "int32")
    assert infer("nn.matmul", (8, 4), (5, 8), transpose_a=True, transpose_b=True) == T((4, 5))
    assert infer("nn.batch_matmul", (1, 3, 4), (6, 5, 4)) == T((6, 3, 5))
    assert infer("nn.batch_norm", (2, 3, 4), (3,), (3,), (3,), (3,)) == TupleType([T((2, 3, 4)), T((3,)), T((3,))])
    assert infer("nn.dropout", (2, 3)) == TupleType([T((2, 3)), T((2, 3))])
    assert infer("nn.max_pool2d", (1, 2, 8, 8), pool_size=3, strides=2, ceil_mode=True) == T((1, 2, 4, 4))
    assert infer("nn.max_pool2d", (1, 2, 8, 8), pool_size=3, strides=2) == T((1, 2, 3, 3))
    assert infer("nn.avg_pool2d", (1, 7, 7, 2), pool_size=(3, 3), strides=2, layout="NHWC") == T((1, 3, 3, 2))
    assert infer("nn.global_max_pool2d", (2, 3, 5, 6)) == T((2, 3, 1, 1))
    assert infer("nn.pad", (2, 3), pad_width=((1, 0), (2, 2))) == T((3, 7))
    assert infer("split", (6, 4), indices_or_sections=(1, -1, 10)) == TupleType(
        [T(a.shape) for a in np.split(np.zeros((6, 4)), [1, -1, 10])])
    assert infer("take", (4, 5), ((2, 3), "int64"), axis=1) == T((4, 2, 3))
    assert infer("take", (4, 5), ((2,), "int32")) == T((2,))
    assert infer("gather_nd", (4, 5, 6), ((2, 3), "int64")) == T((3, 6))
    assert infer("argmax", (2, 3, 4), axis=(1,), keepdims=True) == T((2, 1, 4), "int32")
    assert infer("mean", (2, 3, 4), axis=(0, 2), exclude=True) == T((2, 4))
    assert infer("any", ((2, 3), "bool"), axis=0) == T((3,), "bool")
    assert infer("tile", (2, 3), reps=(2, 1, 2)) == T((2, 2, 6))
    assert infer("tile", (2, 3, 4), reps=3) == T((2, 3, 12))
    assert infer("where", ((2, 1), "bool"), (3,), (1, 1)) == T((2, 3))
    assert infer("cast", (2,), dtype="int8") == T((2,), "int8")
    assert infer("full", ((), "int64"), shape=(2, 2)) == T((2, 2), "int64")
    assert infer("arange", start=5) == T((5,))
    assert infer("arange", start=0.0, stop=1.0, step=0.3) == T((4,))
    assert infer("shape_of", (2, 3)) == T((2,), "int32")
    assert infer("einsum", [(2, 3, 4), (2, 5, 4)], equation="bik,bjk->bij") == T((2, 3, 5))
    assert infer("image.resize2d", (1, 3, 4, 4), size=(8, 6)) == T((1, 3, 8, 6))
    assert infer("image.grid_sample", (2, 3, 4, 4), (2, 2, 5, 7)) == T((2, 3, 5, 7))
    assert infer("image.grid_sample", (1, 3, 2, 4, 4), (1, 3, 6, 5, 7), layout="NCDHW") == T((1, 3, 6, 5, 7))
    assert infer("isnan", (3,)) == T((3,), "bool")
    assert infer("expand_dims", (2, 3), axis=-1, num_newaxis=2) == T((2, 3, 1, 1))
    assert infer("squeeze", (1, 2, 1)) == T((2,))
    assert infer("concatenate", [(2, 3), (2, 5)], axis=-1) == T((2, 8))


def test_symbolic_batch_flows_through():
    assert infer("nn.conv2d", ("N", 3, 8, 8), (4, 3, 3, 3), padding=1) == T(("N", 4, 8, 8))
    assert infer("nn.dense", ("N", 8), (5, 8)) == T(("N", 5))
    assert infer("reshape", ("N", 3, 4), newshape=(0, -1)) == T(("N", 12))
    assert infer("nn.batch_flatten", ("N", 2, 3)) == T(("N", 6))
    assert infer("transpose", ("N", 3)) == T((3, "N"))
    assert infer("nn.global_avg_pool2d", ("N", 3, 5, 5)) == T(("N", 3, 1, 1))
    assert infer("add", ("N", 3), (1, 3)) == T(("N", 3))


# ---------------------------------------------------------------------------------------
# against numpy, with hypothesis
# ---------------------------------------------------------------------------------------
shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=60, deadline=None)
@given(a=shapes, b=shapes)
def test_broadcasting_matches_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(GraphError, match="do not broadcast"):
            infer("add", a, b)
        return
    assert infer("add", a, b).shape == expected


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_reshape_and_transpose_match_numpy(shape, data):
    size = int(np.prod(shape))
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    first = data.draw(st.sampled_from(divisors))
    newshape = (first, -1)
    assert infer("reshape", shape, newshape=newshape).shape == np.empty(shape).reshape(newshape).shape
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    assert infer("transpose", shape, axes=perm).shape == np.empty(shape).transpose(perm).shape


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), begin=st.integers(-10, 10), end=st.integers(-10, 10),
       step=st.integers(-3, 3).filter(lambda s: s != 0))
def test_strided_slice_matches_numpy(n, begin, end, step):
    ty = infer("strided_slice", (n, 2), begin=(begin,), end=(end,), strides=(step,))
    assert ty.shape == np.empty((n, 2))[begin:end:step].shape


# ---------------------------------------------------------------------------------------
# refused, one case per error
# ---------------------------------------------------------------------------------------
BAD = [
    # the kinds the brief names
    ("add", [(2, 3), (4, 3)], {}, "do not broadcast"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 2, 3, 3)], {}, "3 input channels but the weight"),
    ("reshape", [(2, 3)], {"newshape": (4, 2)}, r"cannot reshape \(2, 3\)"),
    ("nn.softmax", [(2, 3)], {"axis": 2}, "axis 2 is out of range"),
    # shared attribute checks
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"strides": (1, 2, 3)}, "strides.*must have 2 entries"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"padding": (1, -1)}, "has an entry below 0"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"strides": "2"}, "must be an int or a list of ints"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"groups": 1.5}, "'groups' must be an int"),
    ("nn.conv2d", [(1, 3, 8, 8), ((4, 3, 3, 3), "float16")], {}, "different dtypes"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"out_dtype": "floaty"}, "is not a dtype"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"data_layout": "NCWH"}, "not one of"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"kernel_layout": "HWIO"}, "takes kernel_layout 'OIHW'"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"out_layout": "NHWC"}, "only the same layout"),
    ("nn.conv2d", [(1, 3, 8), (4, 3, 3, 3)], {}, "data must be 4-D"),
    ("nn.conv2d", [(1, 4, 8, 8), (4, 2, 3, 3)], {"groups": 0}, "groups must be >= 1"),
    ("nn.conv2d", [(1, 8, 8, 4), (3, 3, 2, 4)], {"groups": 2, "data_layout": "NHWC", "kernel_layout": "HWIO"},
     "NCHW only"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, "k", 3, 3)], {}, "must be known"),
    ("nn.conv2d", [(1, 4, 8, 8), (3, 2, 3, 3)], {"groups": 2}, "not divisible by groups"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"channels": 5}, "channels=5"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"kernel_size": (5, 5)}, r"kernel_size=\[5, 5\]"),
    ("nn.conv2d", [(1, 3, "H", 8), (4, 3, 3, 3)], {}, "symbolic 'H'"),
    ("nn.conv2d", [(1, 3, 2, 2), (4, 3, 3, 3)], {}, "does not fit"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (3, 2, 3, 3)], {}, "input-channel"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, 2, 3, 3)], {"data_layout": "NHWC"}, "not one of"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, 2, 3, 3)], {"out_layout": "NHWC"}, "use NCHW"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, 2, 3, 3)], {"groups": -1}, "groups must be >= 1"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, "o", 3, 3)], {}, "must be known"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, 2, 3, 3)], {"groups": 3}, "not divisible by groups"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, 2, 3, 3)], {"output_padding": (1, 1)}, "output_padding"),
    ("nn.conv2d_transpose", [(1, 4, 5, 5), (4, 2, 3, 3)], {"channels": 3}, "channels=3"),
    ("nn.conv2d_transpose", [(1, 4, 1, 1), (4, 2, 1, 1)], {"padding": (1, 1)}, "empty output"),
    ("nn.dense", [(), (5, 8)], {}, "at least 1 dimension"),
    ("nn.dense", [(2, 8), (5, 8, 1)], {}, "weight .* must be 2-D"),
    ("nn.dense", [(2, 7), (5, 8)], {}, "disagree on the reduced"),
    ("nn.dense", [((2, 8), "int32"), ((5, 8), "uint8")], {}, "operands have different dtypes"),
    ("nn.dense", [((2, 8), "float32"), ((5, 8), "uint8")], {"out_dtype": "int32"}, "operands have different dtypes"),
    ("nn.dense", [(2, 8), (5, 8)], {"units": 4}, "units=4"),
    ("nn.matmul", [(2, 8), (5, 8)], {}, "disagree on the reduced"),
    ("nn.matmul", [(2, 8), (8, 5)], {"units": 4}, "units=4"),
    ("nn.batch_matmul", [(2, 3, 4), (3, 5, 4)], {}, "neither is 1"),
    ("nn.batch_matmul", [(2, 3, 4), (2, 5, 3)], {}, "disagree on the reduced"),
    ("nn.bias_add", [(2, 3, 4), (4,)], {}, "has 4 entries but data"),
    ("nn.bias_add", [(2, 3, 4), (3, 1)], {}, "must be 1-D"),
    ("nn.prelu", [(2, 3), (2,)], {}, "alpha has 2 entries"),
    ("nn.leaky_relu", [(2, 3)], {"alpha": "x"}, "alpha must be a number"),
    ("nn.batch_norm", [(2, 3), (3,), (3,), (3,), (3,)], {"epsilon": -1.0}, "epsilon must be a non-negative"),
    ("nn.batch_norm", [(), (3,), (3,), (3,), (3,)], {}, "it needs a channel axis"),
    ("nn.batch_norm", [(2, 3), (3,), (3,), (2,), (3,)], {}, "moving_mean has 2 entries"),
    ("nn.instance_norm", [(2, 3), (3,), (3,)], {}, "at least one more axis"),
    ("nn.instance_norm", [(2, 3, 4), (2,), (2,)], {"axis": 0}, "batch axis"),
    ("nn.layer_norm", [(), (1,), (1,)], {}, "no axis to normalize"),
    ("nn.layer_norm", [(2, 3), (2,), (3,)], {}, "gamma has 2 entries"),
    ("nn.lrn", [(1, 4, 2, 2)], {"size": 0}, "size must be >= 1"),
    ("nn.lrn", [(1, 4, 2, 2)], {"beta": None}, "beta must be a number"),
    ("nn.softmax", [()], {}, "it needs an axis"),
    ("nn.max_pool2d", [(1, 2, 3, 3)], {"pool_size": (5, 5)}, "does not fit"),
    ("nn.max_pool2d", [(1, 2, 3, 3)], {"out_layout": "NHWC"}, "only the same layout"),
    ("nn.avg_pool2d", [(1, 2, "H", 3)], {}, "symbolic 'H'"),
    ("nn.global_avg_pool2d", [(1, 2, 3, 3)], {"out_layout": "NHWC"}, "only the same layout"),
    ("nn.global_avg_pool2d", [(1, 2, 3)], {}, "must be 4-D"),
    ("nn.pad", [(2, 3)], {"pad_width": ((1, 1),)}, "one \\(before, after\\) pair per axis"),
    ("nn.pad", [(2, 3)], {"pad_width": ((1, 1), (1, 2, 3))}, r"pad_width\[1\]"),
    ("nn.pad", [(2, 3)], {"pad_width": ((1, 1), (0, 0)), "pad_mode": "wrap"}, "not one of"),
    ("nn.pad", [(2, 3)], {"pad_width": ((1, 1), (0, 0)), "pad_value": "a"}, "pad_value must be a number"),
    ("nn.pad", [(2, 3)], {"pad_width": ((2, 0), (0, 0)), "pad_mode": "reflect"}, "reflect padding"),
    ("nn.pad", [(0, 3)], {"pad_width": ((1, 0), (0, 0)), "pad_mode": "edge"}, "edge padding of the empty"),
    ("nn.pad", [("N", 3)], {"pad_width": ((1, 0), (0, 0))}, "symbolic 'N'"),
    ("nn.pad", [(2, 3)], {}, "'pad_width' is required"),
    ("nn.dropout", [(2, 3)], {"rate": 1.0}, r"rate must be a number in \[0, 1\)"),
    ("nn.batch_flatten", [()], {}, "needs a batch axis"),
    ("nn.conv2d", [(1, 3, 8, 8), (4, 3, 3, 3)], {"stride": 2}, r"unknown attribute\(s\) \['stride'\]"),
    # transform
    ("reshape", [(2, 3)], {"newshape": (0, 0, 0)}, "input has rank 2"),
    ("reshape", [(2, 3)], {"newshape": (-2,)}, "tecc takes sizes"),
    ("reshape", [(2, 3)], {"newshape": (-1, -1)}, "more than one -1"),
    ("reshape", [(2, 3)], {"newshape": (4, -1)}, "not a multiple of 4"),
    ("reshape", [(2, 3)], {"newshape": "6"}, "newshape must be a list of ints"),
    ("reshape", [("N", 3)], {"newshape": (-1,)}, "does not copy"),
    ("reshape", [(0, 3)], {"newshape": (0, -1), "allowzero": True}, "both -1 and a 0"),
    ("transpose", [(2, 3)], {"axes": (0,)}, "must list all 2 axes"),
    ("transpose", [(2, 3)], {"axes": (0, -2)}, "not a permutation"),
    ("squeeze", [(2, 3)], {"axis": (0,)}, "has size 2, not 1"),
    ("squeeze", [(1, 3)], {"axis": (0, 0)}, "names an axis twice"),
    ("squeeze", [(1, 3)], {"axis": "0"}, "must be None, an int or a list"),
    ("expand_dims", [(2, 3)], {"axis": 4}, "axis 4 is out of range"),
    ("expand_dims", [(2, 3)], {"axis": 0, "num_newaxis": -1}, "num_newaxis must be >= 0"),
    ("concatenate", [(2, 3)], {}, "must be a Tuple of tensors"),
    ("concatenate", [[]], {}, "tuple operand is empty"),
    ("concatenate", [[(), ()]], {}, "cannot concatenate scalars"),
    ("concatenate", [[(2, 3), (2, 3, 1)]], {}, "field 1 has rank 3"),
    ("concatenate", [[(2, 3), (3, 3)]], {"axis": 1}, "differ on axis 0"),
    ("concatenate", [[((2, "N"), "float32"), (2, 3)]], {"axis": 1}, "symbolic 'N'"),
    ("split", [(6, 4)], {"indices_or_sections": 4}, "does not split into 4 equal"),
    ("split", [(6, 4)], {"indices_or_sections": 0}, "must be >= 1 sections"),
    ("split", [(6, 4)], {"indices_or_sections": ()}, "non-empty list"),
    ("strided_slice", [(4, 5)], {"begin": (0,), "end": (2,), "slice_mode": "step"}, "not one of"),
    ("strided_slice", [(4, 5)], {"begin": (0.5,), "end": (2,)}, "begin must be a list of ints"),
    ("strided_slice", [(4, 5)], {"begin": (0, 0, 0), "end": (2, 2, 2)}, "more entries than the input's rank"),
    ("strided_slice", [(4, 5)], {"begin": (0, 0), "end": (2,)}, "one entry per sliced axis"),
    ("strided_slice", [(4, 5)], {"begin": (0,), "end": (2,), "strides": (0,)}, "stride 0"),
    ("strided_slice", [(4, 5)], {"begin": (0,), "end": (2,), "axes": (2,)}, "axes entry 2 is out of range"),
    ("take", [(4, 5), ((2,), "float32")], {"axis": 0}, "indices must be integers"),
    ("take", [(4, 5), ((2,), "int64")], {"axis": 0, "mode": "nearest"}, "not one of"),
    ("take", [(4, 5), ((4, 2), "int64")], {"batch_dims": 1}, "batch_dims needs an axis"),
    ("take", [(4, 5), ((4, 2), "int64")], {"axis": 0, "batch_dims": 1}, "batch_dims 1 must be in"),
    ("take", [(4, 5), ((3, 2), "int64")], {"axis": 1, "batch_dims": 1}, "batch dimension 0"),
    ("gather", [(4, 5), ((4,), "int64")], {"axis": 0}, "must have data's rank"),
    ("gather_nd", [(4, 5), ((), "int64")], {}, "at least 1 dimension"),
    ("gather_nd", [(4, 5), ((3, 2), "int64")], {}, "exceed data's rank"),
    ("gather_nd", [(4, 5), ((2, 2), "int64")], {"index_rank": 1}, "index_rank=1"),
    ("broadcast_to", [(2, 3)], {"shape": (4, 3)}, "do not broadcast"),
    ("broadcast_to", [(2, 3)], {"shape": (1, 3)}, "does not broadcast to"),
    ("broadcast_to", [(1, 3)], {"shape": (-2, 3)}, "negative dimension"),
    ("broadcast_to", [(1, 3)], {"shape": 3}, "shape must be a list of ints"),
    ("tile", [("N", 3)], {"reps": (2, 1)}, "symbolic dimension 'N'"),
    ("tile", [(2, 3)], {"reps": (1, -1)}, "entry below 0"),
    ("cast", [(2, 3)], {"dtype": ""}, "must be a dtype name"),
    ("where", [((2,), "bool"), (2,), ((2,), "int32")], {}, "different dtypes"),
    ("full", [(2,)], {"shape": (2,)}, "fill_value must be a scalar"),
    ("zeros", [], {"shape": ("N",)}, "must be made of ints"),
    ("arange", [], {"start": 0, "stop": 3, "step": 0}, "step must not be 0"),
    ("arange", [], {"start": None}, "start must be a number"),
    ("shape_of", [(2,)], {"dtype": "float32"}, "must be an integer type"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": 3}, "equation must be a string"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "....j,jk"}, "one '...' per term"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "...ijk,jk"}, "names 3 axes besides '...'"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "ij,jk->...ik"}, "has '...' but no operand term does"),
    ("einsum", [[(1, 3, 4), (2, 4, 5)]], {"equation": "...ij,...jk->ik"}, "leaves out the '...' axes"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "ij->ij"}, "1 operand term"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "i1,jk"}, "may hold only letters"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "ij,jk->iz"}, "appears in no operand"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "ij,jk->ii"}, "appears twice"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "ijk,jk->ik"}, "has rank 2 but its term"),
    ("einsum", [[(2, 3), (4, 4)]], {"equation": "ij,jk->ik"}, "axis 'j' has different sizes, 3 in one operand and 4 in operand 1"),
    ("einsum", [[(3, 4)]], {"equation": "ii->i"}, "axis 'i' has different sizes"),
    ("einsum", [[(3, 4)]], {"equation": "ij->"}, None),
    ("nn.conv3d", [(1, 5, 5, 5, 4), (3, 3, 3, 2, 6)], {"groups": 2, "data_layout": "NDHWC", "kernel_layout": "DHWIO"},
     "grouped convolution \\(groups=2\\) is supported in NCDHW only"),
    ("nn.conv3d", [(1, 4, 5, 5, 5), (6, 4, 3, 3, 3)], {"kernel_layout": "DHWIO"},
     "data_layout 'NCDHW' takes kernel_layout 'OIDHW', got 'DHWIO'"),
    ("nn.conv3d", [(1, 4, 2, 5, 5), (6, 4, 3, 3, 3)], {}, "the kernel \\(3, 3, 3\\) .* does not fit in the padded input "
                                                           "\\(2, 5, 5\\)"),
    ("nn.max_pool3d", [(1, 4, 2, 5, 5)], {"pool_size": (3, 1, 1)}, "the window \\(3, 1, 1\\) .* does not fit"),
    ("nn.conv3d", [(1, 4, 5, 5, 5), (6, 4, 3, 3, 3)], {"padding": (1, 1)}, "'padding' = \\[1, 1\\] must have 6 or 1 or 3"),
    ("nn.max_pool3d", [(1, 4, 5, 5)], {"pool_size": (2, 2, 2)}, "data must be 5-D"),
    ("nn.conv3d_transpose", [(1, 4, 3, 3, 3), (4, 2, 3, 3, 3)], {"groups": 2}, "grouped 3-D transposed convolutions are "
                                                                              "not supported"),
    ("image.resize3d", [(1, 2, 3, 4, 5)], {"size": (6, 8, 10), "roi": (0.0, 1.0)}, "roi must be None or 6 numbers "
                                                                                  "\\(start_d, start_h, start_w"),
    ("einsum", [[(2, 3, 4)]], {"equation": "ijk->ki"}, "sums some axes and reorders"),
    ("einsum", [[(2,), (2,), (2,)]], {"equation": "i,i,i->i"}, "the einsum operator computes one product of two "
                                                              r"\(from_onnx chains longer forms"),
    ("einsum", [[(2, 3), (3, 4)]], {"equation": "ij,kl->ik"}, "sums axis 'j' of one operand alone"),
    ("einsum", [[(2, 3, 4), (2, 4, 5)]], {"equation": "bij,bjk->ikb"}, "not a \\(batched\\) matrix product: the"),
    ("einsum", [[(2, 3, 4), (5, 4, 6)]], {"equation": "aij,bjk->abik"}, "then the kept axes of one operand"),
    # reductions, image, element-wise
    ("sum", [((2,), "bool")], {}, "cast it to a number type"),
    ("mean", [(2, 3)], {"axis": (0, 5)}, "axis 5 is out of range"),
    ("image.resize2d", [(1, 3, 4)], {"size": (2, 2)}, "must be 4-D"),
    ("image.resize2d", [(1, 3, 4, 4)], {"size": (2, 2), "method": "area"}, "not one of"),
    ("image.resize2d", [(1, 3, 4, 4)], {"size": (2, 2), "roi": (0.0, 1.0)}, "roi must be None or 4 numbers"),
    ("image.grid_sample", [(1, 3, 4, 4), (1, 5, 6, 2)], {}, r"grid must be \[N, 2, Ho, Wo\].*goes through a "
                                                           "transpose"),
    ("image.grid_sample", [(1, 3, 4, 4), (2, 2, 5, 6)], {}, "the batch of the data and of the grid"),
    ("image.grid_sample", [(1, 3, 4, 4), (1, 2, 5, 6)], {"method": "linear"}, "not one of"),
    ("image.grid_sample", [(1, 3, 4, 4), (1, 2, 5, 6)], {"padding_mode": "edge"}, "not one of"),
    ("image.grid_sample", [(1, 3, 2, 4, 4), (1, 3, 1, 5, 6)], {"layout": "NCDHW", "method": "bicubic"},
     "bicubic sampling is 2-D only"),
    ("image.grid_sample", [(1, 3, 4, 4), ((1, 2, 5, 6), "int32")], {}, "the grid must hold floats"),
    ("clip", [(2,)], {"a_min": 1.0, "a_max": 0.0}, "is above a_max"),
    ("clip", [(2,)], {"a_min": None, "a_max": 0.0}, "a_min must be a number"),
    ("nn.relu", [[(2,)]], {}, "operand 0 must be a tensor"),
    ("concatenate", [[(2,), [(2,)]]], {}, "field 1 of the tuple operand"),
]


@pytest.mark.parametrize("name,operands,attrs,match", BAD, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD)])
def test_refused(name, operands, attrs, match):
    if match is None:
        # a form that is accepted (the control of the neighbouring refusals)
        assert infer(name, *operands, **attrs) == T(())
        return
    with pytest.raises(GraphError, match=match) as info:
        infer(name, *operands, **attrs)
    assert isinstance(info.value, TeccError)
    assert name.split(".")[-1] in str(info.value) or "Tuple" in str(info.value) or "field" in str(info.value)


def test_lowering_needs_symbolic_dims_from_the_operands():
    from tecc.graph.ops._util import te_shape

    with pytest.raises(GraphError, match="symbolic dimension 'M' of the result"):
        te_shape(("M", 3), [])
