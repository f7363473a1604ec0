"""topi.tag (the kinds of operations) and topi.utils (constants, shapes,
traverse_inline), and the package layout TVM code imports."""
import importlib

import pytest

from tecc import te, tir, topi
from tecc.errors import TeccTypeError
from tecc.topi import tag, utils


def test_tags_and_their_predicates():
    assert (tag.ELEMWISE, tag.BROADCAST, tag.INJECTIVE) == ("elemwise", "broadcast", "injective")
    assert (tag.COMM_REDUCE, tag.COMM_REDUCE_IDX, tag.CONV2D_NCHW) == ("comm_reduce", "comm_reduce_idx", "conv2d_nchw")
    assert tag.is_broadcast("elemwise") and tag.is_broadcast("broadcast") and not tag.is_broadcast("injective")
    assert tag.is_injective("injective,pad") and tag.is_injective("elemwise") and not tag.is_injective("conv2d_nchw")
    assert tag.is_reduce("comm_reduce_idx") and not tag.is_reduce("")
    assert tag.compose(tag.INJECTIVE, tag.PAD) == "injective,pad"
    assert tag.has("injective,pad", "pad") and not tag.has("injective", "pad") and tag.parts("") == []


def test_constant_helpers():
    n = te.var("n")
    assert utils.get_const_tuple((2, tir.const(3), n)) == (2, 3, n)
    assert utils.get_const_int(tir.const(2) * 4) == 8
    assert utils.equal_const_int(tir.const(1) + 0, 1) and not utils.equal_const_int(n, 1)
    assert utils.get_const_float(tir.const(1.5, "float32")) == 1.5
    assert isinstance(utils.simplify(n + 0), tir.Var)
    assert utils.prod([2, 3, 4]) == 24 and utils.get_max_power2_factor(48) == 16
    assert utils.is_empty_shape((3, 0)) and not utils.is_empty_shape((3, n))
    with pytest.raises(TeccTypeError, match="expected a constant integer, got `n`"):
        utils.get_const_int(n)


def test_ravel_and_unravel_are_inverse():
    shape = (3, 4, 5)
    for flat in (0, 7, 59):
        idx = utils.unravel_index(tir.const(flat), shape)
        assert utils.get_const_int(utils.ravel_index(idx, shape)) == flat


def test_traverse_inline_inlines_injective_stages_and_visits_the_anchor():
    A = te.placeholder((4, 4), name="A")
    B = topi.exp(A)
    C = topi.sum(B, axis=1)
    D = C + 1.0
    s = te.create_schedule(D.op)
    seen = []
    utils.traverse_inline(s, D.op, lambda op: seen.append(op.name))
    assert seen == ["T_sum", "T_add"]  # stops at the reduction; D is an output
    assert s[D].attach_type != te.AttachType.INLINE


def test_tvm_layout_imports():
    for name in ("tecc.topi.nn.pooling", "tecc.topi.utils", "tecc.topi.tag", "tecc.topi.testing",
                 "tecc.topi.generic", "tecc.topi.cuda", "tecc.topi.x86", "tecc.topi.nn.softmax"):
        importlib.import_module(name)
    from tecc.topi.nn.pooling import pool2d  # noqa: F401  (as TVM's test_te_tensor.py does)
    assert callable(topi.nn.softmax) and callable(topi.cuda.schedule_softmax)
    # tecc's earlier names are all still there
    for name in ("sgemm", "softmax_rows", "layernorm_rows", "classic_gemm_tvm", "matmul_bias_relu", "batch_matmul",
                 "fused_elementwise", "schedule_gemm", "schedule_classic_gemm", "schedule_layer_norm"):
        assert callable(getattr(topi.cuda, name))
    for name in ("matmul", "batch_matmul", "conv2d_nchw", "pad_nchw", "softmax", "layer_norm", "bias_relu",
                 "scale_bias_relu_add"):
        assert callable(getattr(topi.nn, name))
    assert callable(topi.x86.matmul_packed) and callable(topi.testing.layer_norm_python)
