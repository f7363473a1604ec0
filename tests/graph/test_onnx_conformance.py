"""ONNX's node conformance cases through tecc's ``onnx.backend`` Backend
(:mod:`tecc.graph.frontend.onnx_backend`), and the Backend's own interface.

The cases are generated offline by the onnx package (see
``onnx_conformance_report.py`` next to this file, which collects and classifies
them and writes ``onnx_conformance.md`` from a run of ALL of them).  CI runs a
deterministic subset that fits its time budget:

* on the C backend, up to 3 cases per operator among the cases tecc supports (its
  importer has a converter for every op type and accepts the model), plain cases
  before ``*_expanded`` ones, by name;
* on the CUDA-semantics path (tecc's emulator here, a GPU where there is one), one
  case for each of 15 operators.

A case that fails for a known importer or operator bug is marked
``xfail(strict=True)`` with the reason (:data:`KNOWN_FAILURES`), so the suite stays
green and the list stays honest: a fix makes the case pass and the strict xfail
fail, asking for the entry to be removed.  Unsupported cases are not run here;
the report lists every one of them with the importer's reason.
"""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import onnx_conformance_report as conformance  # noqa: E402 -- next to this file
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tecc.errors import TeccError  # noqa: E402
from tecc.graph.frontend import OnnxImportError  # noqa: E402
from tecc.graph.frontend import onnx_backend  # noqa: E402
from tecc.graph.frontend.onnx_backend import OnnxBackendError, TeccBackend, import_model, opset_for  # noqa: E402

#: every case that fails on the C backend (the report's full run), with what is wrong
KNOWN_FAILURES = conformance.KNOWN_FAILURES
_FAILING = conformance.KNOWN_FAILING

#: the operators sampled on the CUDA-semantics path
CUDA_SAMPLE_OPS = ("Add", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "Gemm", "MatMul", "Softmax",
                   "ReduceMean", "BatchNormalization", "LayerNormalization", "Transpose", "Concat", "Gather", "Pad")


def _importable(case) -> bool:
    """The importer converts every op type of ``case`` and accepts its model (with
    the inputs it needs as compile-time operands bound, as the backend does)."""
    if conformance.missing_ops(case):
        return False
    inputs, _ = case.data_sets[0]
    names = onnx_backend._model_inputs(case.model)
    values = {n: conformance._as_array(v) for n, v in zip(names, inputs)}
    try:
        import_model(case.model, values)
    except OnnxImportError:
        return False
    return True


def _supported_cases() -> list:
    return [c for c in conformance.load_cases() if _importable(c)]


SUPPORTED = _supported_cases()
_BY_NAME = {c.name: c for c in SUPPORTED}
#: up to 3 passing cases per operator, and the first known failure of each kind (its strict xfail tracks the bug)
CI_CASES = conformance.per_operator([c for c in SUPPORTED if c.name not in KNOWN_FAILURES], 3) + [
    _BY_NAME[names[0]] for names in _FAILING.values() if names[0] in _BY_NAME]
CUDA_CASES = conformance.per_operator(
    [c for c in SUPPORTED if c.operator in CUDA_SAMPLE_OPS and c.name not in KNOWN_FAILURES], 1)


def _param(case):
    marks = []
    if case.name in KNOWN_FAILURES:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[case.name]))
    return pytest.param(case, id=case.name, marks=marks)


def _check(case, device):
    rep = conformance.prepare(case, device)
    assert rep.target == ("llvm" if device == "CPU" else "cuda")
    for inputs, expected in case.data_sets:
        got = rep.run([conformance._as_array(x) for x in inputs])
        conformance.compare(case, got, expected)


# ---------------------------------------------------------------------------------------
# the conformance cases
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [_param(c) for c in CI_CASES])
def test_node_case_c_backend(case):
    _check(case, "CPU")


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CUDA_CASES])
def test_node_case_cuda_emulator(case):
    _check(case, "CUDA")


def _narrow_case(case) -> bool:
    """A case whose tensors include a type numpy lacks other than bfloat16 (the 8- and
    4-bit floats, int4, uint4, int2, uint2): its inputs or outputs are ml_dtypes'."""
    from tecc.runtime import dtypes  # noqa: PLC0415

    arrays = [conformance._as_array(v) for inputs, outputs in case.data_sets for v in (*inputs, *outputs)]
    return any(isinstance(a, np.ndarray) and dtypes.is_narrow(a.dtype.name) and a.dtype.name != "bfloat16"
               for a in arrays)


#: every supported case with an 8- or 4-bit float or a narrow integer: Cast, CastLike,
#: QuantizeLinear and DequantizeLinear over each type (the sampled selection above takes 3)
NARROW_CASES = [c for c in SUPPORTED if c.name not in KNOWN_FAILURES and _narrow_case(c)]


@pytest.mark.parametrize("device", ["CPU", "CUDA"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in NARROW_CASES])
def test_narrow_type_case(case, device):
    _check(case, device)


def test_narrow_type_cases_cover_every_type():
    from tecc.runtime import dtypes  # noqa: PLC0415

    seen = set()
    for c in NARROW_CASES:
        for inputs, outputs in c.data_sets:
            seen.update(conformance._as_array(v).dtype.name for v in (*inputs, *outputs))
    every = {t for t in dtypes.SUPPORTED if dtypes.is_narrow(t)} - {"bfloat16"}
    assert every <= seen, every - seen
    assert len(NARROW_CASES) >= 160


def test_selection_covers_every_supported_operator():
    ops = {c.operator for c in SUPPORTED}
    assert {c.operator for c in CI_CASES} == ops
    assert {c.operator for c in CUDA_CASES} == set(CUDA_SAMPLE_OPS)
    # every kind of known failure is tracked by one case
    assert len([c for c in CI_CASES if c.name in KNOWN_FAILURES]) == len(_FAILING)
    # bounded and deterministic: up to 3 passing cases per operator, plain cases first
    passing = [c for c in CI_CASES if c.name not in KNOWN_FAILURES]
    for op in ops:
        picked = [c for c in passing if c.operator == op]
        assert len(picked) <= 3
        rest = [c for c in SUPPORTED if c.operator == op and c not in picked and c.name not in KNOWN_FAILURES]
        assert len(picked) == 3 or not rest
        assert all(not c.expanded for c in picked) or all(c.expanded for c in rest)
        assert [c.name for c in picked] == sorted((c.name for c in picked), key=lambda n: ("_expanded" in n, n))


def test_known_failures_are_supported_cases():
    names = {c.name for c in SUPPORTED}
    assert set(KNOWN_FAILURES) <= names, sorted(set(KNOWN_FAILURES) - names)


def test_every_case_is_classified():
    """Every generated case is runnable, or unsupported for a stated reason."""
    cases = conformance.load_cases()
    assert len(cases) > 1000
    runnable = {c.name for c in SUPPORTED}
    for c in cases:
        if c.name in runnable:
            continue
        missing = conformance.missing_ops(c)
        if missing:
            assert all(t not in conformance.converter_ops() for t in missing)
            continue
        assert not _importable(c)
        with pytest.raises(OnnxImportError, match=r"node|input|opset|dtype"):
            import_model(c.model, dict(zip(onnx_backend._model_inputs(c.model),
                                           (conformance._as_array(v) for v in c.data_sets[0][0]))))


def test_run_case_classifies():
    by_name = {c.name: c for c in conformance.load_cases()}
    unknown_op = next(c for c in conformance.load_cases() if "StringSplit" in c.op_types)
    r = conformance.run_case(unknown_op)
    assert r.status == "unsupported" and "no converter for" in r.reason and "StringSplit" in r.reason
    refused = conformance.run_case(by_name["test_equal_string"])
    assert refused.status == "unsupported" and "tensors of dtype object" in refused.reason
    assert conformance.run_case(by_name["test_relu"]).status == "pass"


def test_run_case_detects_wrong_outputs():
    """The comparison tells a right answer from a wrong one."""
    case = {c.name: c for c in conformance.load_cases()}["test_relu"]
    inputs, expected = case.data_sets[0]
    expected = [conformance._as_array(e) for e in expected]
    off = [expected[0] + np.float32(0.01)]
    wrong = conformance.Case(case.name, case.operator, case.op_types, case.model, ((inputs, off),),
                             case.rtol, case.atol)
    r = conformance.run_case(wrong)
    assert r.status == "fail" and "Mismatched elements" in r.reason
    wrong_dtype = conformance.Case(case.name, case.operator, case.op_types, case.model,
                                   ((inputs, [expected[0].astype("float64")]),), case.rtol, case.atol)
    r = conformance.run_case(wrong_dtype)
    assert r.status == "fail" and "dtype float32, expected float64" in r.reason


def test_render_report(monkeypatch):
    cases = [c for c in conformance.load_cases() if c.name in ("test_relu", "test_abs", "test_strnormalizer_export_monday_casesensintive_lower")]
    results = [conformance.Result("test_relu", "Relu", "pass"), conformance.Result("test_abs", "Abs", "fail", "x"),
               conformance.Result("test_strnormalizer_export_monday_casesensintive_lower", "StringNormalizer", "unsupported",
                                  "no converter for StringNormalizer")]
    text = conformance.render(results, [conformance.Result("test_relu", "Relu", "pass")], cases, 1.0)
    assert "| Relu | 1 / 0 / 0 | 1 / 0 / 0 |" in text
    assert "| Abs | 0 / 1 / 0 | -- |" in text
    assert "| StringNormalizer | 0 / 0 / 1 |" in text
    assert "StringNormalizer (1)" in text
    assert "- `test_abs` (Abs, C backend): **not diagnosed yet**. Error: x" in text
    # a known failure shows its diagnosis
    known = "test_reduce_max_empty_set"
    monkeypatch.setitem(conformance.KNOWN_FAILURES, known, "a diagnosed cause")
    text = conformance.render([conformance.Result(known, "ReduceMax", "fail", "y")], [], cases, 1.0)
    assert f"- `{known}` (ReduceMax, C backend): **{conformance.KNOWN_FAILURES[known]}**. Error: y" in text


# ---------------------------------------------------------------------------------------
# the Backend's interface
# ---------------------------------------------------------------------------------------
def _model(nodes, inputs, outputs, opset=13, inits=()):
    graph = helper.make_graph(nodes, "m", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _relu_model(opset=13, shape=(2, 3)):
    return _model([helper.make_node("Relu", ["x"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], opset)


def test_supports_device():
    assert TeccBackend.supports_device("CPU")
    assert TeccBackend.supports_device("CUDA")
    assert TeccBackend.supports_device("CUDA:0")
    assert not TeccBackend.supports_device("TPU")
    assert onnx_backend.supports_device("CPU")


def test_prepare_run_by_position_name_and_output_name():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    rep = TeccBackend.prepare(_relu_model())
    assert rep.input_names == ["x"] and rep.output_names == ["y"] and rep.target == "llvm"
    out = rep.run([x])
    np.testing.assert_array_equal(out[0], np.maximum(x, 0))
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    np.testing.assert_array_equal(rep.run({"x": x})[0], np.maximum(x, 0))
    np.testing.assert_array_equal(rep.run(x)[0], np.maximum(x, 0))
    np.testing.assert_array_equal(onnx_backend.run_model(_relu_model(), [x])[0], np.maximum(x, 0))


def test_prepare_with_weights_and_two_outputs_at_every_opt_level():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3)).astype("float32")
    x = rng.standard_normal((2, 4)).astype("float32")
    init = onnx.numpy_helper.from_array(w, "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Sigmoid", ["mm"], ["s"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 4))],
                   [helper.make_tensor_value_info("s", TensorProto.FLOAT, (2, 3)),
                    helper.make_tensor_value_info("mm", TensorProto.FLOAT, (2, 3))], inits=[init])
    for level in (0, 3):
        s, mm = TeccBackend.prepare(model, opt_level=level).run([x])
        np.testing.assert_allclose(mm, x @ w, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s, 1 / (1 + np.exp(-(x @ w))), rtol=1e-5, atol=1e-6)


def test_run_node():
    x = np.random.default_rng(2).standard_normal((3, 4)).astype("float32")
    (y,) = TeccBackend.run_node(helper.make_node("Softmax", ["x"], ["y"], axis=1), [x])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    (z,) = onnx_backend.run_node(helper.make_node("Add", ["a", "b"], ["z"]), {"a": x, "b": x[0]})
    np.testing.assert_allclose(z, x + x[0], rtol=1e-6)
    (t,) = TeccBackend.run_node(helper.make_node("Transpose", ["x"], ["t"]), [x],
                                outputs_info=[(np.float32, (4, 3))], opset_version=11)
    np.testing.assert_array_equal(t, x.T)


def test_run_node_on_the_cuda_path():
    x = np.random.default_rng(3).standard_normal((2, 5)).astype("float32")
    (y,) = TeccBackend.run_node(helper.make_node("Tanh", ["x"], ["y"]), [x], device="CUDA")
    np.testing.assert_allclose(y, np.tanh(x), rtol=1e-5, atol=1e-6)


def test_model_that_computes_nothing():
    model = _model([helper.make_node("Identity", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2,))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2,))])
    rep = TeccBackend.prepare(model)
    x = np.array([1.5, -2.0], "float32")
    assert rep.factory is None
    np.testing.assert_array_equal(rep.run([x])[0], x)


def test_newer_opset_reads_as_21_when_nodes_read_the_same():
    assert opset_for(_relu_model(opset=13)) == 13
    assert opset_for(_relu_model(opset=28)) == 21
    x = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(TeccBackend.prepare(_relu_model(opset=28)).run([x])[0], np.maximum(x, 0))
    cast = _model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT16)],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2,))],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT16, (2,))], opset=25)
    assert opset_for(cast) == 21  # round_mode left unset: Cast-25 reads as Cast-21


def test_an_operand_computed_from_an_input_binds_that_input_at_the_first_run():
    # Pad's pads = (Max(Shape(x), target) - Shape(x)) split in two: computed from the input `target`
    # (ONNX's CenterCropPad body); the backend compiles at the first run with `target`'s value
    i64 = TensorProto.INT64
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Max", ["s", "target"], ["m"]),
             helper.make_node("Sub", ["m", "s"], ["amount"]),
             helper.make_node("Div", ["amount", "two"], ["left"]),
             helper.make_node("Sub", ["amount", "left"], ["right"]),
             helper.make_node("Concat", ["left", "right"], ["pads"], axis=0),
             helper.make_node("Pad", ["x", "pads"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, 3)),
                           helper.make_tensor_value_info("target", i64, (2,))],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                   inits=[numpy_helper.from_array(np.array(2, "int64"), "two")])
    x = np.arange(6, dtype="float32").reshape(2, 3)
    rep = TeccBackend.prepare(model)
    for target in ([4, 4], [2, 6]):
        (y,) = rep.run({"x": x, "target": np.array(target, "int64")})
        amount = np.maximum([2, 3], target) - [2, 3]
        np.testing.assert_array_equal(y, np.pad(x, [(a // 2, a - a // 2) for a in amount]))


def test_errors_are_tecc_errors():
    assert issubclass(OnnxBackendError, OnnxImportError) and issubclass(OnnxBackendError, TeccError)


def test_opset_whose_node_reads_differently_is_refused():
    dq = _model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"], output_dtype=TensorProto.FLOAT16)],
                [helper.make_tensor_value_info("q", TensorProto.INT8, (2,)),
                 helper.make_tensor_value_info("s", TensorProto.FLOAT, ())],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT16, (2,))], opset=25)
    with pytest.raises(OnnxBackendError, match=r"opset 25.*DequantizeLinear node 'DequantizeLinear_0'.*"
                                               r"DequantizeLinear-25 read as DequantizeLinear-21: attribute "
                                               r"'output_dtype' does not exist.*convert_version\(model, 21\)"):
        TeccBackend.prepare(dq)
    bn = _model([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=0)],
                [helper.make_tensor_value_info(n, TensorProto.FLOAT, (2, 3, 4, 4) if n == "x" else (3,))
                 for n in "xsbmv"],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, 3, 4, 4))], opset=7)
    with pytest.raises(OnnxBackendError, match=r"opset 7.*reading it as opset 9.*attribute 'spatial' does not exist"):
        opset_for(bn)
    bn.graph.node[0].attribute[0].i = 1  # spatial=1 is BatchNormalization-9: converted up, then read at 9
    assert opset_for(bn) == 9


def test_model_without_default_opset_is_refused():
    model = _relu_model()
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("com.example", 1))
    with pytest.raises(OnnxBackendError, match="imports no version of the default ONNX opset"):
        opset_for(model)


def test_bad_device_model_and_opt_level():
    with pytest.raises(OnnxBackendError, match=r"device 'TPU' is not supported; use 'CPU' or 'CUDA'"):
        TeccBackend.prepare(_relu_model(), device="TPU")
    with pytest.raises(OnnxBackendError, match="takes an onnx.ModelProto, got str; load a file with onnx.load"):
        TeccBackend.prepare("model.onnx")
    with pytest.raises(OnnxBackendError, match="opt_level must be an int from 0 to 3, got 7"):
        TeccBackend.prepare(_relu_model(), opt_level=7)


def test_unsupported_operator_is_refused_by_the_importer():
    model = _model([helper.make_node("ImageDecoder", ["x"], ["y"], pixel_format="RGB")],
                   [helper.make_tensor_value_info("x", TensorProto.UINT8, (64,))],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], opset=20)
    with pytest.raises(OnnxImportError, match=r"operators tecc does not support \(ImageDecoder\)"):
        TeccBackend.prepare(model)


def test_run_with_bad_inputs():
    rep = TeccBackend.prepare(_relu_model())
    x = np.zeros((2, 3), "float32")
    with pytest.raises(OnnxBackendError, match=r"takes 1 input\(s\) \['x'\], got 2"):
        rep.run([x, x])
    with pytest.raises(OnnxBackendError, match=r"inputs \['z'\] are not inputs of the model"):
        rep.run({"z": x})
    with pytest.raises(OnnxBackendError, match=r"no value for input\(s\) \['x'\]"):
        rep.run({})
    with pytest.raises(OnnxBackendError, match=r"input 'x' has shape \(3, 2\) and dtype float32, but the model "
                                               r"takes shape \(2, 3\)"):
        rep.run([np.zeros((3, 2), "float32")])
    with pytest.raises(OnnxBackendError, match=r"input 'x' has shape \(2, 3\) and dtype float64"):
        rep.run([np.zeros((2, 3))])
    with pytest.raises(OnnxBackendError, match="input 'x' is a list; tecc runs tensor inputs only"):
        rep.run([[1.0, 2.0]])


def test_run_node_errors():
    with pytest.raises(OnnxBackendError, match="takes an onnx.NodeProto, got str"):
        TeccBackend.run_node("Relu", [np.zeros(2, "float32")])
    with pytest.raises(OnnxBackendError, match=r"node 'Add' takes inputs \['a', 'b'\], got 1 value"):
        TeccBackend.run_node(helper.make_node("Add", ["a", "b"], ["c"]), [np.zeros(2, "float32")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(OnnxBackendError, match=r"ONNX cannot infer the outputs of node 'MatMul'"):
            TeccBackend.run_node(helper.make_node("MatMul", ["a", "b"], ["c"]),
                                 [np.zeros((2, 3), "float32"), np.zeros((4, 5), "float32")])
