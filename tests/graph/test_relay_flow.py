"""Seed 003's Relay flow (day 29 of the TVM course) with only the imports changed --
``import tecc as tvm``, ``from tecc import relay`` -- on a small CNN exported as
ONNX by the test (conv, relu, pool, gemm, softmax, a dynamic batch axis), checked
against onnxruntime; and the ``tecc.relay`` facade's own names."""
import timeit
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import tecc as tvm  # noqa: E402
from tecc import relay  # noqa: E402
from tecc.contrib import graph_executor  # noqa: E402
from tecc.graph.ir import GraphError  # noqa: E402


def small_cnn(path):
    """What ``torch.onnx.export(..., dynamic_axes={"input": {0: "batch"}})`` writes
    for conv-relu-pool-flatten-linear-softmax."""
    rng = np.random.default_rng(3)

    def weight(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype("float32"), name)

    nodes = [helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["c"], name="/conv/Conv",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="/relu/Relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"], name="/Flatten", axis=1),
             helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="/fc/Gemm", transB=1),
             helper.make_node("Softmax", ["logits"], ["output"], name="/Softmax", axis=1)]
    graph = helper.make_graph(
        nodes, "main_graph", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 10])],
        initializer=[weight("conv.weight", 4, 3, 3, 3), weight("conv.bias", 4), weight("fc.weight", 10, 64),
                     weight("fc.bias", 10)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def reference(path, data):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": data})[0]


@pytest.fixture(autouse=True)
def _quiet_untuned():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no tuned config": default schedules are what this flow uses
        yield


def test_seed_003_flow(tmp_path, capsys):
    path = small_cnn(tmp_path / "resnet18.onnx")

    # --- the seed's code, imports changed ---
    onnx_model = onnx.load(path)
    shape_dict = {"input": (1, 3, 8, 8)}
    mod, params = relay.frontend.from_onnx(onnx_model, shape_dict)
    print(type(mod))
    print(mod["main"])

    target = tvm.target.Target("llvm -mcpu=native")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target, params=params)

    dev = tvm.cpu(0)
    executor = graph_executor.GraphModule(lib["default"](dev))
    input_data = np.random.randn(1, 3, 8, 8).astype("float32")
    executor.set_input("input", tvm.nd.array(input_data))
    executor.run()
    output = executor.get_output(0).numpy()
    print(f"Output shape: {output.shape}")
    print(f"Top-5 classes: {output[0].argsort()[-5:][::-1]}")

    def tvm_inference():
        executor.set_input("input", tvm.nd.array(input_data))
        executor.run()

    tvm_time = timeit.timeit(tvm_inference, number=3) / 3
    print(f"TVM CPU: {tvm_time * 1000:.2f} ms")

    with tvm.transform.PassContext(opt_level=3):
        mod_optimized = relay.transform.InferType()(mod)
        mod_optimized = relay.transform.FuseOps(fuse_opt_level=2)(mod_optimized)
    print("After FuseOps:")
    print(mod_optimized["main"])

    def count_ops(expr):
        ops = {}

        def visit(node):
            if isinstance(node, tvm.relay.Call):
                op_name = node.op.name
                ops[op_name] = ops.get(op_name, 0) + 1

        tvm.relay.analysis.post_order_visit(mod["main"], visit)
        return ops

    op_counts = count_ops(mod["main"])
    for op, count in sorted(op_counts.items(), key=lambda x: -x[1]):
        print(f"  {op}: {count}")

    lib.export_library(str(tmp_path / "resnet18_tvm.so"))
    loaded_lib = tvm.runtime.load_module(str(tmp_path / "resnet18_tvm.so"))
    executor2 = graph_executor.GraphModule(loaded_lib["default"](tvm.cpu(0)))
    executor2.set_input("input", tvm.nd.array(input_data))
    executor2.run()
    output2 = executor2.get_output(0).numpy()
    # --- end of the seed's code ---

    want = reference(path, input_data)
    np.testing.assert_allclose(output, want, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(output2, want, rtol=1e-3, atol=1e-4)
    assert op_counts == {"nn.conv2d": 1, "nn.bias_add": 2, "nn.relu": 1, "nn.max_pool2d": 1, "reshape": 1,
                         "nn.dense": 1, "nn.softmax": 1}
    out = capsys.readouterr().out
    assert "fn (%input: Tensor[(1, 3, 8, 8), float32]" in out and "nn.conv2d(%input" in out
    assert "Output shape: (1, 10)" in out
    # fusion put conv2d, its bias and the relu in one primitive function
    fused = out.split("After FuseOps:")[1]
    conv_fn = [block for block in fused.split("Primitive=1")[1:] if "nn.conv2d" in block][0]
    assert "nn.bias_add" in conv_fn.split("};")[0] and "nn.relu" in conv_fn.split("};")[0]


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_seed_003_opt_levels(tmp_path, opt_level):
    """The seed's loop over opt_level: every level builds and computes the same."""
    path = small_cnn(tmp_path / "m.onnx")
    mod, params = relay.frontend.from_onnx(onnx.load(path), {"input": (2, 3, 8, 8)}, freeze_params=False)
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target=tvm.target.Target("llvm"), params=params)
    executor = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    data = np.random.default_rng(opt_level).standard_normal((2, 3, 8, 8)).astype("float32")
    executor.set_input("input", tvm.nd.array(data))
    executor.run()
    np.testing.assert_allclose(executor.get_output(0).numpy(), reference(path, data), rtol=1e-3, atol=1e-4)


def test_seed_003_model_for_cuda(tmp_path):
    """The same flow for target "cuda": on a machine with no GPU the kernels run on
    tecc's emulator of CUDA semantics behind ``tvm.cuda(0)``."""
    path = small_cnn(tmp_path / "m.onnx")
    mod, params = relay.frontend.from_onnx(onnx.load(path), {"input": (1, 3, 8, 8)})
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="cuda", params=params)
    executor = graph_executor.GraphModule(lib["default"](tvm.cuda(0)))
    data = np.random.default_rng(7).standard_normal((1, 3, 8, 8)).astype("float32")
    executor.set_input("input", data)
    executor.run()
    np.testing.assert_allclose(executor.get_output(0).numpy(), reference(path, data), rtol=1e-3, atol=1e-4)


# ---------------------------------------------------------------------------------------
# the facade's names
# ---------------------------------------------------------------------------------------
def test_relay_builders_make_a_model_that_builds():
    x = relay.var("x", shape=(1, 2, 5, 5))
    w = relay.var("w", relay.TensorType((3, 2, 3, 3), "float32"))
    y = relay.nn.conv2d(x, w, padding=(1, 1), channels=3, kernel_size=(3, 3))
    y = relay.nn.relu(relay.add(y, relay.const(0.5)))
    y = relay.reshape(y, (1, 75))                     # an attribute by position, as Relay's
    y = relay.concatenate([y, relay.multiply(y, 2.0)], 1)  # a list is a tuple; a number a constant
    func = relay.Function([x, w], y)
    mod = relay.Module.from_expr(func)
    mod = relay.transform.InferType()(mod)
    assert mod["main"].checked_type == relay.TensorType((1, 150), "float32")
    free = relay.analysis.free_vars(y)
    assert [v.name_hint for v in free] == ["x", "w"]
    assert relay.op.get("nn.conv2d") is tvm.graph.get_op("nn.conv2d")

    data = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype("float32")
    weight = np.random.default_rng(1).standard_normal((3, 2, 3, 3)).astype("float32")
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(func, target="llvm", params={"w": tvm.nd.array(weight)})
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(x=data)
    conv = np.zeros((1, 3, 5, 5), "float32")
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(5):
        for j in range(5):
            conv[0, :, i, j] = np.tensordot(weight, padded[0, :, i:i + 3, j:j + 3], axes=3)
    ref = np.maximum(conv + 0.5, 0).reshape(1, 75)
    np.testing.assert_allclose(m.get_output(0).numpy(), np.concatenate([ref, ref * 2], 1), rtol=1e-4, atol=1e-4)


def test_relay_image_grid_sample_as_tvm_writes_it():
    """``relay.image.grid_sample(data, grid, method, layout, padding_mode, align_corners)``
    with attributes by position, against topi's numpy reference."""
    from tecc.topi.testing import grid_sample_python  # noqa: PLC0415

    data = relay.var("data", shape=(1, 2, 4, 5))
    grid = relay.var("grid", shape=(1, 2, 3, 3))
    out = relay.image.grid_sample(data, grid, "bilinear", "NCHW", "border", False)
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(relay.Function([data, grid], out), target="llvm")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 4, 5)).astype("float32")
    g = rng.uniform(-1.3, 1.3, (1, 2, 3, 3)).astype("float32")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run(data=x, grid=g)
    want = grid_sample_python(x, g, "bilinear", "NCHW", "border", False)
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)


def test_relay_names_resolve():
    for name in ("InferType", "FuseOps", "FoldConstant", "SimplifyInference", "FoldScaleAxis", "DeadCodeElimination",
                 "EliminateCommonSubexpr", "Sequential", "PassContext"):
        assert callable(getattr(relay.transform, name))
    assert relay.Call is tvm.graph.Call and relay.Var is tvm.graph.Var and relay.TupleGetItem is tvm.graph.TupleGetItem
    assert relay.IRModule is relay.Module is tvm.graph.Module
    assert "conv2d" in dir(relay.nn) and "add" in dir(relay) and relay.op.nn is relay.nn
    assert {"resize2d", "grid_sample"} <= set(dir(relay.image)) and relay.op.image is relay.image
    assert relay.op.add(relay.const(1.0), relay.const(2.0)).op.name == "add"
    assert relay.var("t", "int32", shape=(2,)).type_annotation == relay.TensorType((2,), "int32")


def test_relay_errors():
    x = relay.var("x", shape=(2, 3))
    with pytest.raises(AttributeError, match="no attribute 'conv9d'"):
        relay.nn.conv9d  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Frobnicate'"):
        relay.transform.Frobnicate  # noqa: B018
    with pytest.raises(GraphError, match=r"relay builder of reshape: 3 positional attribute\(s\) given, it takes 2"):
        relay.reshape(x, (3, 2), False, "extra")
    with pytest.raises(GraphError, match="relay builder of transpose: attribute 'axes' given twice"):
        relay.transpose(x, (1, 0), axes=(1, 0))
    with pytest.raises(GraphError, match="relay builder of nn.relu: operand 0 is a str"):
        relay.nn.relu("x")
    with pytest.raises(GraphError, match="relay.build: executor= is not supported"):
        relay.build(relay.Function([x], relay.nn.relu(x)), target="llvm", executor="aot")
    with pytest.raises(GraphError, match=r"heterogeneous targets \(a dict\) are not supported"):
        relay.build(relay.Function([x], relay.nn.relu(x)), target={"cpu": "llvm"})


def test_from_pytorch_as_tvms_tutorial_calls_it():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8, 5)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            return torch.softmax(self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)), -1)

    torch.manual_seed(0)
    model = Net().eval()
    with torch.no_grad():  # statistics that are not the identity
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 16, 16)
    scripted = torch.jit.trace(model, x).eval()
    mod, params = relay.frontend.from_pytorch(scripted, [("input0", (1, 3, 16, 16))])
    assert "fc.weight" in params and [p.name_hint for p in mod["main"].params][0] == "input0"
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.set_input("input0", x.numpy())
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(GraphError, match=r"input_infos\[0\] must be \(name, shape\)"):
        relay.frontend.from_pytorch(scripted, [(1, 3, 16, 16)])


def test_from_pytorch_reads_the_input_dtypes_of_the_trace_and_keeps_every_input():
    """input_infos with shapes alone (TVM's tests give them so): the dtypes come from
    the traced graph (an int64 index input stays int64, a uint8 one uint8), and an
    input the exporter dropped (torch folds ones_like(x) into a constant) stays a
    parameter of main, which the executor lets go unset since nothing reads it."""
    torch = pytest.importorskip("torch")

    class Take(torch.nn.Module):
        def forward(self, x, idx, mask):
            return x[idx] * torch.logical_not(mask).float()[: idx.shape[0], None]

    x, idx, mask = torch.randn(5, 3), torch.tensor([4, 0, 2]), torch.tensor([0, 1, 2, 0, 0], dtype=torch.uint8)
    traced = torch.jit.trace(Take(), (x, idx, mask))
    mod, params = relay.frontend.from_pytorch(traced, [("x", (5, 3)), ("idx", (3,)), ("mask", (5,))])
    assert [(p.name_hint, p.type_annotation.dtype) for p in mod["main"].params] == [
        ("x", "float32"), ("idx", "int64"), ("mask", "uint8")]
    run = relay.create_executor("graph", mod=mod, params=params, target="llvm").evaluate()
    got = run(x=x.numpy(), idx=idx.numpy(), mask=mask.numpy())
    np.testing.assert_allclose(got.numpy(), Take()(x, idx, mask).numpy(), rtol=1e-6)

    def fill(x):
        return torch.ones_like(x) * 3

    traced = torch.jit.trace(fill, (torch.randn(2, 4),))
    mod, params = relay.frontend.from_pytorch(traced, [("input0", (2, 4))])
    assert [p.name_hint for p in mod["main"].params] == ["input0"]
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m.run()  # input0 is read by nothing: it may stay unset
    np.testing.assert_allclose(m.get_output(0).numpy(), np.full((2, 4), 3, "float32"))
    m.set_input("input0", torch.randn(2, 4))  # a torch tensor (through DLPack)
    with pytest.raises(tvm.TeccError, match=r"set_input: input 'input0' expects shape \(2, 4\) and dtype float32, "
                                            r"got shape \(2, 4\) and dtype int64"):
        m.set_input("input0", torch.zeros(2, 4, dtype=torch.int64))


class _DLPackOnly:
    """An array of another library, seen only through DLPack (as a torch tensor is)."""

    def __init__(self, array):
        self._array = array
        self.shape = array.shape

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_an_input_nothing_reads_may_stay_unset_and_inputs_come_through_dlpack():
    x, unused = relay.var("x", shape=(2, 3)), relay.var("unused", shape=(4,))
    mod = relay.Module.from_expr(relay.Function([x, unused], relay.negative(x)))
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm")
    m = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    assert m.get_num_inputs() == 2
    with pytest.raises(tvm.TeccError, match=r"run: input\(s\) \['x'\] were never set"):
        m.run()
    a = np.arange(6, dtype="float32").reshape(2, 3)
    m.set_input("x", _DLPackOnly(a))
    m.run()  # 'unused' feeds no kernel
    np.testing.assert_allclose(m.get_output(0).numpy(), -a)
    with pytest.raises(tvm.TeccError, match=r"expects shape \(2, 3\) and dtype float32, got shape \(2, 3\) and "
                                            r"dtype int32"):
        m.set_input("x", _DLPackOnly(a.astype("int32")))


def test_span_filling_and_structural_equality_of_imported_modules():
    """tvm.testing.enable/disable_span_filling set Relay's relay.frontend.fill_span:
    the importer records (or not) each call's ONNX node; tvm.ir.structural_equal
    compares graph modules and ignores spans."""
    from tecc.graph.testing import mlp_model

    model = mlp_model()
    with tvm.testing.disable_span_filling():
        plain, _ = relay.frontend.from_onnx(model, {"x": (4, 784)})
    with tvm.testing.enable_span_filling():
        spanned, _ = relay.frontend.from_onnx(model, {"x": (4, 784)})
    def calls(mod):
        found = []
        relay.analysis.post_order_visit(mod["main"].body, lambda n: found.append(n) if isinstance(n, relay.Call)
                                        else None)
        return found

    def spans(mod):
        return {n.span for n in calls(mod)}

    assert spans(plain) == {None} and None not in spans(spanned)
    assert tvm.ir.structural_equal(plain, spanned, map_free_vars=True)
    tvm.ir.assert_structural_equal(plain, spanned, map_free_vars=True)
    other, _ = relay.frontend.from_onnx(model, {"x": (2, 784)})
    assert not tvm.ir.structural_equal(plain, other, map_free_vars=True)
    with pytest.raises(AssertionError, match="graphs differ"):
        tvm.ir.assert_structural_equal(plain, other, map_free_vars=True)
    assert calls(plain) and all(isinstance(n.op, tvm.ir.op.Op) for n in calls(plain))


def test_from_pytorch_without_torch_says_what_to_do(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(GraphError, match=r"from_pytorch needs PyTorch \(pip install torch\); or export the model "
                                         "to ONNX yourself"):
        relay.frontend.from_pytorch(object(), [("x", (1, 3))])
    with pytest.raises(GraphError, match="custom_convert_map is not supported"):
        relay.frontend.from_pytorch(object(), [("x", (1, 3))], custom_convert_map={"aten::foo": None})


@pytest.mark.parametrize("kind", ["debug", "graph", "vm"])
def test_create_executor_as_tvm_code_uses_it(kind):
    x = relay.var("x", shape=(2, 3))
    w = relay.var("w", shape=(4, 3))
    y = relay.nn.relu(relay.nn.dense(x, w))
    mod = relay.Module.from_expr(relay.Function([x, w], y))
    a = np.random.default_rng(0).standard_normal((2, 3)).astype("float32")
    b = np.random.default_rng(1).standard_normal((4, 3)).astype("float32")
    want = np.maximum(a @ b.T, 0)
    # the inputs by position, or the weights by name (TVM's evaluate()(x, **params))
    run = relay.create_executor(kind, mod=mod, device=tvm.cpu(0), target="llvm").evaluate()
    np.testing.assert_allclose(run(a, b).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(run(a, w=b).numpy(), want, rtol=1e-5)
    bound = relay.create_executor(kind, mod=mod, target="llvm", params={"w": b}).evaluate()
    np.testing.assert_allclose(bound(a).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(bound(a, w=b).numpy(), want, rtol=1e-5)  # a bound one passed again is ignored
    two = relay.create_executor(kind, target="llvm").evaluate(relay.Tuple([x, relay.add(x, x)]))
    outs = two(a)
    assert isinstance(outs, list)  # Relay's tuple fields: TVM's tests index and append to them
    np.testing.assert_allclose(outs[1].numpy(), 2 * a)


def test_create_executor_errors():
    x = relay.var("x", shape=(2,))
    with pytest.raises(GraphError, match="unknown kind 'jit'; the kinds are debug, graph, vm, aot"):
        relay.create_executor("jit")
    with pytest.raises(GraphError, match="give the expression, or the module"):
        relay.create_executor().evaluate()
    run = relay.create_executor(target="llvm").evaluate(relay.negative(x))
    with pytest.raises(GraphError, match=r"the function needs the input\(s\) \['x'\]"):
        run()
    with pytest.raises(GraphError, match=r"\['z'\] bind no parameter of the function"):
        relay.create_executor(target="llvm", params={"z": np.zeros(2)}).evaluate(relay.negative(x))
