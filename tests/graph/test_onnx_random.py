"""ONNX's random operators through tecc: RandomUniform, RandomNormal, their *Like
forms, Bernoulli, Multinomial and training-mode Dropout.  The numbers are not
onnxruntime's (another generator), so the tests check what is promised: the
exact Threefry values for a node's seed and the run counter (the executor
advancing it per run, set_input fixing it), the same bits on the C backend and
the CUDA emulator, the distributions, draws of different nodes and runs
differing; one expected failure per user error."""
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper  # noqa: E402

import tecc  # noqa: E402
from tecc import topi  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.build import build  # noqa: E402
from tecc.graph.frontend import OnnxImportError, from_onnx  # noqa: E402
from tecc.runtime.graph_executor import RANDOM_COUNTER  # noqa: E402

T = topi.testing
F = TensorProto.FLOAT


def model(nodes, inputs, outputs, opset=15):
    graph = helper.make_graph(nodes, "random", [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
                              [helper.make_tensor_value_info(n, t, s) for n, (t, s) in outputs.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def executor(m, target="llvm"):
    mod, params = from_onnx(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no CUDA GPU found: the emulator runs"
        lib = build(mod, target=target, params=params)
        dev = tecc.cpu(0) if target == "llvm" else tecc.cuda(0)
        return graph_executor.GraphModule(lib["default"](dev))


def outputs(gmod, **inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gmod.run(**inputs)
    return [gmod.get_output(i).numpy() for i in range(gmod.get_num_outputs())]


def seed_bits(seed):
    return int(np.array(seed, "float32").view("uint32"))


def test_random_uniform_is_threefry_of_its_seed_and_the_run_counter():
    node = helper.make_node("RandomUniform", [], ["y"], shape=[3, 500], low=-1.0, high=2.0, seed=7.0)
    gmod = executor(model([node], {}, {"y": (F, [3, 500])}))
    assert gmod.get_input_index(RANDOM_COUNTER) == 0
    first, second = outputs(gmod)[0], outputs(gmod)[0]
    key = np.array([seed_bits(7.0), 0], "uint64")
    np.testing.assert_array_equal(first, T.uniform_python(key, -1.0, 2.0, (3, 500), "float32", salt=1))
    np.testing.assert_array_equal(second, T.uniform_python(key + np.array([0, 1], "uint64"), -1.0, 2.0, (3, 500),
                                                           "float32", salt=1))
    assert first.min() >= -1.0 and first.max() < 2.0 and not np.array_equal(first, second)
    # a counter the user sets stays: the same numbers on every run
    gmod.set_input(RANDOM_COUNTER, np.array(0, "uint64"))
    np.testing.assert_array_equal(outputs(gmod)[0], first)
    np.testing.assert_array_equal(outputs(gmod)[0], first)


def test_the_cuda_path_draws_the_same_bits():
    nodes = [helper.make_node("RandomNormal", [], ["n"], shape=[1000], mean=2.0, scale=0.5, seed=1.0),
             helper.make_node("RandomUniformLike", ["x"], ["u"], seed=2.0)]
    m = model(nodes, {"x": (F, [4, 8])}, {"n": (F, [1000]), "u": (F, [4, 8])})
    x = np.zeros((4, 8), "float32")
    cpu, gpu = outputs(executor(m), x=x), outputs(executor(m, "cuda"), x=x)
    np.testing.assert_array_equal(cpu[1], gpu[1])
    np.testing.assert_allclose(cpu[0], gpu[0], rtol=1e-6, atol=1e-6)  # log and cos of two libraries
    assert abs(cpu[0].mean() - 2.0) < 0.06 and abs(cpu[0].std() - 0.5) < 0.04


def test_nodes_without_a_seed_and_nodes_sharing_one_draw_differently():
    nodes = [helper.make_node("RandomUniform", [], [n], shape=[256], **kw)
             for n, kw in (("a", {"seed": 5.0}), ("b", {"seed": 5.0}), ("c", {}), ("d", {}))]
    got = outputs(executor(model(nodes, {}, {n: (F, [256]) for n in "abcd"})))
    for i in range(4):
        for j in range(i):
            assert not np.array_equal(got[i], got[j])


def test_random_like_takes_the_input_shape_and_dtype_or_its_own():
    nodes = [helper.make_node("RandomNormalLike", ["x"], ["same"]),
             helper.make_node("RandomUniformLike", ["x"], ["wide"], dtype=TensorProto.DOUBLE)]
    got = outputs(executor(model(nodes, {"x": (TensorProto.FLOAT16, [2, 3])},
                                 {"same": (TensorProto.FLOAT16, [2, 3]), "wide": (TensorProto.DOUBLE, [2, 3])})),
                  x=np.zeros((2, 3), "float16"))
    assert got[0].dtype == np.float16 and got[1].dtype == np.float64 and got[1].shape == (2, 3)


def test_bernoulli_frequencies_follow_the_probabilities():
    p = np.repeat(np.array([[0.0, 0.1, 0.5, 0.9, 1.0]], "float32"), 4000, axis=0)
    nodes = [helper.make_node("Bernoulli", ["p"], ["hit"], seed=3.0),
             helper.make_node("Bernoulli", ["p"], ["flag"], dtype=TensorProto.BOOL)]
    hit, flag = outputs(executor(model(nodes, {"p": (F, list(p.shape))},
                                       {"hit": (F, list(p.shape)), "flag": (TensorProto.BOOL, list(p.shape))})), p=p)
    assert hit.dtype == np.float32 and flag.dtype == np.bool_
    np.testing.assert_allclose(hit.mean(0), [0.0, 0.1, 0.5, 0.9, 1.0], atol=0.025)
    np.testing.assert_allclose(flag.mean(0), [0.0, 0.1, 0.5, 0.9, 1.0], atol=0.025)


@pytest.mark.parametrize("target", ["llvm", "cuda"])
def test_multinomial_samples_classes_by_their_softmax(target):
    logits = np.log(np.array([[1, 2, 3, 4], [5, 0.001, 0.001, 5]], "float32"))
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=4000, dtype=TensorProto.INT64, seed=9.0)
    (got,) = outputs(executor(model([node], {"x": (F, [2, 4])}, {"y": (TensorProto.INT64, [2, 4000])}), target),
                     x=logits)
    assert got.dtype == np.int64 and got.min() >= 0 and got.max() <= 3
    for row, w in zip(got, np.exp(logits)):
        np.testing.assert_allclose(np.bincount(row, minlength=4) / row.size, w / w.sum(), atol=0.025)


def test_training_dropout_keeps_and_scales_by_the_ratio():
    x = np.random.default_rng(0).uniform(1, 2, (50, 200)).astype("float32")
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=11)
    m = model([node], {"x": (F, [50, 200])}, {"y": (F, [50, 200]), "mask": (TensorProto.BOOL, [50, 200])}, opset=13)
    m.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(0.25, "float32"), "r"),
                                onnx.numpy_helper.from_array(np.array(True), "t")])
    y, mask = outputs(executor(m), x=x)
    assert abs(mask.mean() - 0.75) < 0.01
    np.testing.assert_allclose(y[mask], x[mask] / 0.75, rtol=1e-6)
    assert (y[~mask] == 0).all()


@pytest.mark.parametrize("node, inputs, match", [
    (helper.make_node("RandomUniform", [], ["y"], name="ints", shape=[2], dtype=TensorProto.INT32), {},
     r"RandomUniform node 'ints'.*dtype int32 must be a floating-point type"),
    (helper.make_node("RandomUniform", [], ["y"], name="flipped", shape=[2], low=2.0, high=1.0), {},
     r"RandomUniform node 'flipped'.*low 2.0 is above high 1.0"),
    (helper.make_node("Multinomial", ["x"], ["y"], name="floats", dtype=TensorProto.FLOAT), {"x": (F, [2, 3])},
     r"Multinomial node 'floats'.*dtype float32 must be int32 or int64"),
    (helper.make_node("Multinomial", ["x"], ["y"], name="cube"), {"x": (F, [2, 3, 4])},
     r"Multinomial node 'cube'.*Multinomial takes \[batch_size, class_size\] \(or \[class_size\]\)"),
    (helper.make_node("RandomNormalLike", ["tecc_random_counter"], ["y"], name="clash"),
     {"tecc_random_counter": (F, [2])}, r"the model has an input named 'tecc_random_counter'.*rename the input"),
])
def test_user_errors(node, inputs, match):
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(model([node], inputs, {"y": (F, None)}))


def test_training_dropout_with_a_ratio_of_one_is_refused():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="all")
    m = model([node], {"x": (F, [4])}, {"y": (F, [4])}, opset=13)
    m.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(1.0, "float32"), "r"),
                                onnx.numpy_helper.from_array(np.array(True), "t")])
    with pytest.raises(OnnxImportError, match=r"Dropout node 'all'.*ratio 1.0 must be in \[0, 1\)"):
        from_onnx(m)


def test_relay_create_executor_counts_its_calls_for_the_random_counter():
    # TVM's flow (relay.create_executor(...).evaluate()) runs one executor for every call: the counter follows
    # the calls, and a counter given by name is used as given
    from tecc import relay  # noqa: PLC0415

    node = helper.make_node("RandomNormalLike", ["x"], ["y"], seed=4.0)
    mod, params = from_onnx(model([node], {"x": (F, [64])}, {"y": (F, [64])}))
    run = relay.create_executor("graph", mod=mod, params=params, target="llvm").evaluate()
    x = np.zeros(64, "float32")
    first, second = run(x).numpy(), run(x).numpy()
    key = np.array([seed_bits(4.0), 0], "uint64")
    np.testing.assert_allclose(first, T.normal_python(key, 0.0, 1.0, (64,), "float32", salt=1), rtol=1e-5, atol=1e-6)
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(run(x, tecc_random_counter=np.array(0, "uint64")).numpy(), first)


def test_multinomial_of_one_row_of_classes_gives_the_samples_alone():
    # [class_size] (as torch's multinomial takes them, and TVM's test gives them): [sample_size]
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=500, seed=2.0)
    (got,) = outputs(executor(model([node], {"x": (F, [3])}, {"y": (TensorProto.INT32, [500])})),
                     x=np.log(np.array([1, 0.001, 3], "float32")))
    assert got.shape == (500,) and set(np.unique(got)) <= {0, 1, 2} and abs((got == 2).mean() - 0.75) < 0.06
