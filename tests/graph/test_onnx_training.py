"""ONNX's training optimizers (domain ``ai.onnx.preview.training``): Adagrad, Adam
and Momentum (standard and Nesterov) update steps against ONNX's reference
implementation, with the learning rate and the step count given at run time (the
first step, T = 0, and a later one: Adam's bias correction and Momentum's
gradient coefficient switch on T > 0), two tensors per node, regularization
terms, on the C backend and the CUDA emulator; a model of training operators
only needs no default opset; one expected failure per user error."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from tecc.graph.frontend import OnnxImportError, from_onnx, supported_ops  # noqa: E402
from ops_run import tecc_outputs  # noqa: E402

DOMAIN = "ai.onnx.preview.training"
F = TensorProto.FLOAT


def optimizer_model(op, groups, **attrs):
    """One ``op`` node updating two tensors of shapes (3, 4) and (5,): inputs R, T,
    then ``groups`` lists (X..., G..., V..., H...) of two tensors each; outputs the
    updated lists in the same order."""
    shapes = [(3, 4), (5,)]
    names = [[f"{g}{i}" for i in range(2)] for g in groups]
    ins = ["R", "T"] + [n for group in names for n in group]
    outs = [f"{n}_new" for group in names[:1] + names[2:] for n in group]
    node = helper.make_node(op, ins, outs, domain=DOMAIN, name=f"{op.lower()}_step", **attrs)
    infos = [helper.make_tensor_value_info("R", F, []), helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    infos += [helper.make_tensor_value_info(n, F, shapes[i]) for group in names for i, n in enumerate(group)]
    out_infos = [helper.make_tensor_value_info(n, F, shapes[i % 2]) for i, n in enumerate(outs)]
    graph = helper.make_graph([node], "step", infos, out_infos)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(DOMAIN, 1)]), ins


def feed(names, step, seed=0):
    rng = np.random.default_rng(seed + step)
    out = {"R": np.array(0.1, "float32"), "T": np.array(step, "int64")}
    for n in names[2:]:
        shape = (3, 4) if n.endswith("0") else (5,)
        # the accumulated squares (H) are not negative
        out[n] = (np.abs if n.startswith("H") else np.asarray)(rng.standard_normal(shape)).astype("float32")
    return out


CASES = [
    ("Adagrad", ["X", "G", "H"], dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.01)),
    ("Adam", ["X", "G", "V", "H"], dict(alpha=0.9, beta=0.99, epsilon=1e-5, norm_coefficient=0.01,
                                       norm_coefficient_post=0.02)),
    ("Momentum", ["X", "G", "V"], dict(alpha=0.9, beta=0.8, mode="standard", norm_coefficient=0.01)),
    ("Momentum", ["X", "G", "V"], dict(alpha=0.9, beta=0.8, mode="nesterov", norm_coefficient=0.0)),
]


@pytest.mark.parametrize("target", ["llvm", "cuda"])
@pytest.mark.parametrize("op, groups, attrs", CASES, ids=["adagrad", "adam", "momentum", "nesterov"])
def test_optimizer_step_matches_onnx_reference(target, op, groups, attrs):
    model, names = optimizer_model(op, groups, **attrs)
    assert f"{DOMAIN}.{op}" in supported_ops()
    for step in (0, 3):  # R and T are inputs: one compilation serves every step
        inputs = feed(names, step)
        want = ReferenceEvaluator(model).run(None, inputs)
        got = tecc_outputs(model, inputs, target=target)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_momentum_mode_must_be_standard_or_nesterov():
    model, _ = optimizer_model("Momentum", ["X", "G", "V"], alpha=0.9, beta=0.8, mode="heavy", norm_coefficient=0.0)
    with pytest.raises(OnnxImportError, match=r"Momentum node 'momentum_step'.*mode 'heavy' must be 'standard' or "
                                              r"'nesterov'"):
        from_onnx(model)


def test_inputs_not_in_whole_groups_are_refused():
    model, _ = optimizer_model("Adagrad", ["X", "G", "H"])
    del model.graph.node[0].input[-1]
    with pytest.raises(OnnxImportError, match=r"Adagrad node 'adagrad_step'.*it has 7 inputs; it takes R, T and then 3 "
                                              r"inputs per optimized tensor"):
        from_onnx(model)
