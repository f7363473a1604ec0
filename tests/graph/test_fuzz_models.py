"""Fuzzing the model compiler: random ONNX models (:mod:`fuzz_models`) are imported,
built at a random ``opt_level`` (fusion, constant folding, batch-norm folding,
CSE) and run, on the C backend and on the GPU-semantics path, and must match
onnxruntime: every model the fuzzer makes is valid ONNX that onnxruntime runs, so a
refusal (a :class:`~tecc.errors.TeccError`) fails as surely as any other exception,
a crash or a wrong result.

The suite runs a fixed, derandomized set of examples (the same every run, so CI is
reproducible); ``TECC_FUZZ_EXAMPLES=N`` runs N random ones instead.
"""
import os

import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tecc.errors import TeccError  # noqa: E402

from fuzz_models import models  # noqa: E402
from ops_run import assert_outputs_match, reference_session, tecc_outputs  # noqa: E402

EXAMPLES = int(os.environ.get("TECC_FUZZ_EXAMPLES", "0"))
RTOL, ATOL = 1e-3, 1e-4


def fuzz_settings(examples):
    return settings(
        max_examples=EXAMPLES or examples,
        derandomize=not EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@fuzz_settings(60)
@given(case=models(), opt_level=st.integers(0, 3))
def test_random_models_on_the_c_backend(case, opt_level):
    _compare(case, opt_level, "llvm")


@fuzz_settings(20)
@given(case=models(), opt_level=st.integers(0, 3))
def test_random_models_on_the_gpu_semantics_path(case, opt_level):
    """Built for CUDA (NVRTC where it is installed) and run on the GPU where there is
    one, else on the CPU emulation of CUDA semantics."""
    _compare(case, opt_level, "cuda")


@fuzz_settings(15)
@given(case=models(), opt_level=st.integers(0, 3))
def test_random_models_in_mixed_precision_compile_and_run(case, opt_level):
    """ToMixedPrecision("bfloat16") on every random model: it compiles and runs (a
    refusal would have to be a TeccError naming the operator; none is expected, every
    operator takes bfloat16), its float outputs are bfloat16, and finite where
    onnxruntime's float32 ones are (bfloat16 has float32's range)."""
    import numpy as np  # noqa: PLC0415

    sess = reference_session(case.model)
    want = sess.run(None, case.inputs)
    got = tecc_outputs(case.model, case.inputs, target="llvm", opt_level=opt_level, mixed_precision="bfloat16")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        if w.dtype != np.float32:
            assert g.dtype == w.dtype, f"{g.dtype} for {w.dtype}\n{case}"
            continue
        assert g.dtype == np.uint16 and g.shape == w.shape, f"{g.dtype}{g.shape} for float32{w.shape}\n{case}"
        values = g.view(ml_dtypes.bfloat16).astype(np.float32)
        big = np.abs(w) > 1e30
        assert np.isfinite(values[np.isfinite(w) & ~big]).all(), f"non-finite bfloat16 outputs\n{case}"


def _compare(case, opt_level, target):
    """Run ``case`` with onnxruntime and with tecc built for ``target``; the outputs
    must match."""
    sess = reference_session(case.model)
    want = sess.run(None, case.inputs)
    try:
        got = tecc_outputs(case.model, case.inputs, target=target, opt_level=opt_level)
    except TeccError as err:
        raise AssertionError(f"tecc refused a model onnxruntime runs: {err}\n{case}") from err
    got = _ties_settled(case.model, list(got), want)
    assert_outputs_match(got, want, RTOL, ATOL, who="onnxruntime's")


def _ties_settled(model, got, want):
    """``got`` with each ArgMax output's index replaced by onnxruntime's where the
    two pick values within the tolerance of each other in onnxruntime's own input to
    the ArgMax (a model output too): of near-equal values either index is right, and
    which one a runtime picks depends on its rounding (an instance normalization over
    one pixel is exactly 0 in tecc and a few ulps in onnxruntime)."""
    import numpy as np  # noqa: PLC0415
    from onnx import helper  # noqa: PLC0415

    names = [o.name for o in model.graph.output]
    for node in model.graph.node:
        if node.op_type != "ArgMax" or node.output[0] not in names or node.input[0] not in names:
            continue
        k, values = names.index(node.output[0]), np.asarray(want[names.index(node.input[0])])
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        axis = attrs.get("axis", 0) % values.ndim
        mine, theirs = np.asarray(got[k]), np.asarray(want[k])
        if mine.shape != theirs.shape or mine.dtype != theirs.dtype:
            continue
        shaped = (lambda i: i) if attrs.get("keepdims", 1) else (lambda i: np.expand_dims(i, axis))
        at_mine = np.take_along_axis(values, np.clip(shaped(mine), 0, values.shape[axis] - 1), axis)
        at_theirs = np.take_along_axis(values, shaped(theirs), axis)
        tie = np.isclose(at_mine, at_theirs, rtol=RTOL, atol=ATOL)
        if not attrs.get("keepdims", 1):
            tie = np.squeeze(tie, axis)
        got[k] = np.where(tie, theirs, mine)
    return got


def test_argmax_ties_are_settled_and_real_differences_are_not():
    import numpy as np  # noqa: PLC0415
    from onnx import TensorProto, helper  # noqa: PLC0415

    nodes = [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("ArgMax", ["y"], ["i"], axis=1, keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("i", TensorProto.INT64, [2])])
    model = helper.make_model(graph)
    y = np.array([[0.5, 0.5 + 1e-7, 0.1], [0.2, 0.9, 0.3]], np.float32)
    want = [y, np.array([1, 1])]
    # row 0: a tie (tecc's index 0 is settled to onnxruntime's 1); row 1: index 2 is wrong
    settled = _ties_settled(model, [y, np.array([0, 2])], want)
    np.testing.assert_array_equal(settled[1], [1, 2])
