"""The graph executor (runtime/graph_executor.py) and TVM's GraphModule wrapper
(contrib/graph_executor.py): a hand-written graph over real kernels, on the C backend
and on the CUDA emulator, checked against numpy; its errors; a run that allocates
nothing."""
import copy
import json
import tracemalloc
import warnings

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.contrib import graph_executor
from tecc.errors import FunctionNotFoundError, RuntimeArgError, TeccError
from tecc.graph.memory_plan import plan_storage
from tecc.runtime import cuda_module, ndarray
from tecc.runtime import graph_executor as ge
from tecc.runtime.graph_executor import GraphExecutor, GraphExecutorFactoryModule, GraphJSONError
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)

ROWS, IN, OUT = 128, 32, 48
CUDA = "cuda"  # the local GPU, or the emulator where there is none


@pytest.fixture(autouse=True)
def _quiet_emulation():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "no CUDA GPU found: emulating"
        yield


def _schedule(out, cuda):
    s = te.create_schedule(out.op)
    if cuda:
        fused = s[out].fuse(*out.op.axis)
        bx, tx = s[out].split(fused, factor=64)
        s[out].bind(bx, te.thread_axis("blockIdx.x"))
        s[out].bind(tx, te.thread_axis("threadIdx.x"))
    return s


def build_kernels(target):
    """One module of four kernels: dense_bias, relu, scale (x2) and add."""
    cuda = target.startswith("cuda")
    funcs = {}
    X = te.placeholder((ROWS, IN), name="X")
    W = te.placeholder((OUT, IN), name="W")
    B = te.placeholder((OUT,), name="B")
    k = te.reduce_axis((0, IN), name="k")
    D = te.compute((ROWS, OUT), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="D")
    Y = te.compute((ROWS, OUT), lambda i, j: D[i, j] + B[j], name="Y")
    s = _schedule(Y, cuda)
    if cuda:
        s[D].compute_at(s[Y], s[Y].leaf_iter_vars[-1])
    funcs["dense_bias"] = (s, [X, W, B, Y])
    A = te.placeholder((ROWS, IN), name="A")
    R = te.compute((ROWS, IN), lambda i, j: te.max(A[i, j], 0.0), name="R")
    funcs["relu"] = (_schedule(R, cuda), [A, R])
    A2 = te.placeholder((ROWS, OUT), name="A")
    S2 = te.compute((ROWS, OUT), lambda i, j: A2[i, j] * 2.0, name="S")
    funcs["scale"] = (_schedule(S2, cuda), [A2, S2])
    P = te.placeholder((ROWS, OUT), name="P")
    Q = te.placeholder((ROWS, OUT), name="Q")
    C = te.compute((ROWS, OUT), lambda i, j: P[i, j] + Q[i, j], name="C")
    funcs["add"] = (_schedule(C, cuda), [P, Q, C])
    prims = {}
    for name, (sch, args) in funcs.items():
        (prims[name],) = tecc.lower(sch, args, name=name).functions.values()
    return tecc.build(tir.IRModule(prims), target=target)


def _kernel(name, func, inputs, inplace=-1):
    return {"op": "tvm_op", "name": name, "inputs": [[i, 0, 0] for i in inputs],
            "attrs": {"func_name": func, "num_inputs": str(len(inputs)), "num_outputs": "1",
                      "flatten_data": "0", "inplace_input": str(inplace)}}


def model_graph() -> dict:
    """out0 = dense(relu(x)) + 2 * dense(relu(x)), out1 = relu(x): a diamond, in place."""
    graph = {
        "nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "null", "name": "w", "inputs": []},
                  {"op": "null", "name": "b", "inputs": []},
                  _kernel("fused_relu", "relu", [0]), _kernel("fused_dense_bias", "dense_bias", [3, 1, 2]),
                  _kernel("fused_scale", "scale", [4], 0), _kernel("fused_add", "add", [4, 5], 1)],
        "arg_nodes": [0, 1, 2],
        "heads": [[6, 0, 0], [3, 0, 0]],
        "node_row_ptr": list(range(8)),
        "attrs": {"shape": ["list_shape", [[ROWS, IN], [OUT, IN], [OUT], [ROWS, IN], [ROWS, OUT], [ROWS, OUT],
                                            [ROWS, OUT]]],
                  "dltype": ["list_str", ["float32"] * 7]},
    }
    graph["attrs"]["storage_id"] = ["list_int", plan_storage(graph)]
    return graph


def reference(x, w, b):
    r = np.maximum(x, 0)
    y = r @ w.T + b
    return y + 2 * y, r


def random_data(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((ROWS, IN)).astype("float32"), rng.standard_normal((OUT, IN)).astype("float32"),
            rng.standard_normal(OUT).astype("float32"))


@pytest.fixture(scope="module")
def cpu_lib():
    return build_kernels("llvm")


@pytest.fixture(scope="module")
def cuda_lib():
    return build_kernels(CUDA)


@pytest.fixture(params=["llvm", CUDA])
def built(request):
    """(factory, device) for each target."""
    lib = request.getfixturevalue("cpu_lib" if request.param == "llvm" else "cuda_lib")
    _x, w, b = random_data(0)
    dev = tecc.cpu(0) if request.param == "llvm" else tecc.cuda(0)
    factory = GraphExecutorFactoryModule(json.dumps(model_graph()), lib, {"w": w, "b": b}, target=request.param)
    return factory, dev


# ---------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------
def test_the_graph_matches_numpy_and_executors_are_independent(built):
    factory, dev = built
    _x, w, b = random_data(0)
    m1 = graph_executor.GraphModule(factory["default"](dev))
    m2 = graph_executor.GraphModule(factory["default"](dev))
    for seed in (1, 2):  # a second run over the same buffers
        x1, x2 = random_data(seed)[0], random_data(seed + 10)[0]
        m1.set_input("x", x1)
        m2.run(x=tecc.nd.array(x2, dev))
        m1.run()
        for m, x in ((m1, x1), (m2, x2)):
            want, relu = reference(x, w, b)
            np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(m.get_output(1).numpy(), relu)
    executor = m1.module
    assert executor.num_storages < len(executor.entries)  # the plan shares buffers
    assert m1.get_output(0).device == dev


def test_a_run_allocates_no_buffer(built, monkeypatch):
    factory, dev = built
    executor = factory["default"](dev)
    executor.set_input("x", random_data(3)[0])
    executor.run()  # warm-up: loads the kernels
    calls = []

    def counting(name, fn):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(ndarray, "host_empty", counting("host_empty", ndarray.host_empty))
    monkeypatch.setattr(ndarray, "empty", counting("nd.empty", ndarray.empty))
    monkeypatch.setattr(ge, "empty", counting("executor empty", ge.empty))
    for launcher in (cuda_module.EmulatedLauncher, cuda_module._GPULauncher):
        monkeypatch.setattr(launcher, "alloc", counting("launcher alloc", launcher.alloc))
    smallest = min(e.size * 4 for e in executor.entries[3:])  # what the kernels write
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for _ in range(3):
            executor.run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert calls == []
    assert peak - before < smallest // 2, f"run() allocated {peak - before} bytes at its peak"


@pytest.mark.gpu
def test_on_a_gpu_the_buffers_are_cupy_and_a_run_takes_no_device_memory(cuda_lib):
    import cupy

    x, w, b = random_data(11)
    executor = GraphExecutorFactoryModule(model_graph(), cuda_lib, {"w": w, "b": b})["default"](tecc.cuda(0))
    executor.set_input("x", cupy.asarray(x))
    executor.run()
    assert all(isinstance(e._data, cupy.ndarray) for e in executor.entries)
    pool = cupy.get_default_memory_pool()
    cupy.cuda.Device().synchronize()
    used = pool.used_bytes()
    for _ in range(3):
        executor.run()
    cupy.cuda.Device().synchronize()
    assert pool.used_bytes() == used
    np.testing.assert_allclose(executor.get_output(0).numpy(), reference(x, w, b)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_a_cuda_graph_replays_the_model_and_sees_new_inputs(cuda_lib):  # pragma: no cover - GPU machines
    from tecc.contrib.cuda_graph import cuda_graph_executor

    x, w, b = random_data(12)
    m = cuda_graph_executor.create(model_graph(), cuda_lib, tecc.cuda(0))
    m.set_input(w=w, b=b)
    m.run(x=x)  # the first run captures
    assert m._cuda_graph_captured
    np.testing.assert_allclose(m.get_output(0).numpy(), reference(x, w, b)[0], rtol=1e-4, atol=1e-4)
    for seed in (13, 14):  # replays read the inputs set since
        x2 = random_data(seed)[0]
        m.run(x=x2)
        for k, want in enumerate(reference(x2, w, b)):
            np.testing.assert_allclose(m.get_output(k).numpy(), want, rtol=1e-4, atol=1e-4)


def test_a_cuda_graph_needs_a_gpu_and_a_capture(cpu_lib, cuda_lib):
    from tecc.contrib.cuda_graph import cuda_graph_executor

    _x, w, b = random_data(15)
    cpu_executor = GraphExecutor(model_graph(), cpu_lib, tecc.cpu(0), {"w": w, "b": b})
    assert cpu_executor["capture_cuda_graph"] == cpu_executor.capture_cuda_graph
    with pytest.raises(TeccError, match=r"capture_cuda_graph: CUDA graphs need a CUDA GPU \(this executor runs on "
                                        r".*cpu.*\); use run\(\)"):
        cpu_executor.capture_cuda_graph()
    with pytest.raises(TeccError, match=r"run_cuda_graph: no CUDA graph was captured; call capture_cuda_graph\(\) "
                                        "first"):
        cpu_executor.run_cuda_graph()
    if tecc.cuda(0).exist:  # pragma: no cover - GPU machines capture (the test above)
        return
    m = cuda_graph_executor.create(model_graph(), cuda_lib, tecc.cuda(0))
    m.set_input(w=w, b=b)
    with pytest.raises(TeccError, match=r"there is no GPU here, and the CPU emulation runs each kernel from the host"):
        m.run(x=random_data(15)[0])


def test_a_kernel_workspace_is_allocated_once_and_flatten_data_passes_1d_views(monkeypatch):
    # a two-kernel CUDA function whose intermediate T lives in a global workspace
    A = te.placeholder((256,), name="A")
    T = te.compute((256,), lambda i: A[i] * 2.0, name="T")
    U = te.compute((256,), lambda i: T[i] + 1.0, name="U")
    s = te.create_schedule(U.op)
    for stage in (T, U):
        bx, tx = s[stage].split(stage.op.axis[0], factor=64)
        s[stage].bind(bx, te.thread_axis("blockIdx.x"))
        s[stage].bind(tx, te.thread_axis("threadIdx.x"))
    lib = tecc.build(s, [A, U], target=CUDA, name="twice_plus_one")
    assert "workspace" in lib.get_source()
    graph = {"nodes": [{"op": "null", "name": "a", "inputs": []},
                       _kernel("k", "twice_plus_one", [0]), _kernel("k2", "twice_plus_one", [1])],
             "arg_nodes": [0], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3],
             "attrs": {"shape": ["list_shape", [[16, 16]] * 3], "dltype": ["list_str", ["float32"] * 3]}}
    for node in graph["nodes"][1:]:
        node["attrs"]["flatten_data"] = "1"
    graph["attrs"]["storage_id"] = ["list_int", plan_storage(graph)]
    executor = GraphExecutor(graph, lib, tecc.cuda(0))
    a = np.arange(256, dtype="float32").reshape(16, 16)
    allocs = []
    original = cuda_module.EmulatedLauncher.alloc

    def counting(self, dtype, count):
        allocs.append(count)
        return original(self, dtype, count)

    monkeypatch.setattr(cuda_module.EmulatedLauncher, "alloc", counting)
    for _ in range(3):
        executor.run(a=a)
        np.testing.assert_allclose(executor.get_output(0).numpy(), (a * 2 + 1) * 2 + 1)
    assert allocs == [256, 256]  # one workspace per kernel call, on the first run only


# ---------------------------------------------------------------------------------------
# inputs and outputs
# ---------------------------------------------------------------------------------------
def test_inputs_outputs_and_module_functions(cpu_lib):
    x, w, b = random_data(4)
    factory = GraphExecutorFactoryModule(model_graph(), cpu_lib, {"w": w, "b": b})
    m = graph_executor.GraphModule(factory["default"](tecc.cpu(0)))
    assert m.get_num_inputs() == 1 and m.get_num_outputs() == 2
    assert [m.get_input_index(n) for n in ("x", "w", "b", "y")] == [0, 1, 2, -1]
    assert m.get_input_info() == ({"x": (ROWS, IN)}, {"x": "float32"})
    m.set_input(0, x.tolist())  # by index, from a list
    np.testing.assert_array_equal(m.get_input("x").numpy(), x)
    np.testing.assert_array_equal(m.get_input(1).numpy(), w)  # params follow the user inputs
    m["run"]()
    want, relu = reference(x, w, b)
    out = tecc.nd.empty((ROWS, OUT), "float32")
    assert m.get_output(0, out) is out
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    host = np.zeros((ROWS, IN), "float32")
    m.get_output(1, host)
    np.testing.assert_array_equal(host, relu)
    copy_in = np.zeros((ROWS, IN), "float32")
    m.get_input("x", copy_in)
    np.testing.assert_array_equal(copy_in, x)
    # a param replaced through set_input(**params)
    m.set_input(b=np.zeros(OUT, "float32"))
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), reference(x, w, 0 * b)[0], rtol=1e-5, atol=1e-5)
    # load_params reads .npz bytes
    m.load_params(ge.save_param_dict({"b": b}))
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)
    assert "1 input(s), 4 kernel call(s), 2 output(s)" in repr(m)


def test_set_input_and_run_errors_name_the_input(cpu_lib):
    x, w, b = random_data(5)
    executor = GraphExecutorFactoryModule(model_graph(), cpu_lib, {"w": w, "b": b})["default"](tecc.cpu(0))
    with pytest.raises(RuntimeArgError, match=r"run: input\(s\) \['x'\] were never set; call set_input\('x'"):
        executor.run()
    with pytest.raises(RuntimeArgError, match=r"input 'x' expects shape \(128, 32\) and dtype float32, got "
                                              r"shape \(32, 128\) and dtype float32"):
        executor.set_input("x", x.T.copy())
    with pytest.raises(RuntimeArgError, match=r"input 'x' expects shape \(128, 32\) and dtype float32, got "
                                              r"shape \(128, 32\) and dtype float64"):
        executor.set_input("x", x.astype("float64"))
    with pytest.raises(RuntimeArgError, match=r"no input 'data'; its inputs are \['x'\] \(and 2 params\)"):
        executor.set_input("data", x)
    with pytest.raises(RuntimeArgError, match=r"input index 3 is out of range: the model has 3 inputs"):
        executor.set_input(3, x)
    with pytest.raises(RuntimeArgError, match=r"set_input\('x'\): no value given"):
        executor.set_input("x")
    with pytest.raises(RuntimeArgError, match="cannot convert str to a float32 array"):
        executor.set_input("x", "zeros")
    with pytest.raises(RuntimeArgError, match=r"get_output\(2\): the model has 2 output\(s\)"):
        executor.get_output(2)
    with pytest.raises(RuntimeArgError, match=r"get_output\(0\): out must have shape \(128, 48\)"):
        executor.get_output(0, np.zeros((2, 2), "float32"))
    with pytest.raises(FunctionNotFoundError, match="no function 'debug_get_output'"):
        executor["debug_get_output"]
    with pytest.raises(TeccError, match="GraphModule wraps the executor"):
        graph_executor.GraphModule(cpu_lib)


def test_benchmark_returns_seconds(built):
    factory, dev = built
    m = graph_executor.GraphModule(factory["default"](dev))
    result = m.benchmark(dev, repeat=3, number=2, x=random_data(6)[0])
    assert len(result.results) == 3 and all(t > 0 for t in result.results)
    assert result.min <= result.median <= result.max and result.std >= 0 and result.mean > 0
    e2e = m.benchmark(dev, repeat=2, number=1, end_to_end=True)
    assert len(e2e.results) == 2 and e2e.mean > 0
    with pytest.raises(TeccError, match="number >= 1 and repeat >= 1"):
        m.benchmark(dev, number=0)
    other = tecc.cuda(0) if dev.device_type == tecc.cpu(0).device_type else tecc.cpu(0)
    with pytest.raises(TeccError, match=rf"this executor runs on {dev.kind}\(0\), not on {other.kind}"):
        m.benchmark(other)
    with pytest.raises(FunctionNotFoundError, match="the graph executor times 'run'"):
        m.benchmark(dev, func_name="get_output")


# ---------------------------------------------------------------------------------------
# the factory and create()
# ---------------------------------------------------------------------------------------
def test_the_factory_surface_and_create(cpu_lib):
    x, w, b = random_data(7)
    factory = GraphExecutorFactoryModule(model_graph(), cpu_lib, {"w": w, "b": tecc.nd.array(b)},
                                         module_name="mlp", target="llvm")
    assert json.loads(factory.get_graph_json()) == model_graph()
    assert factory.get_lib() is cpu_lib
    params = factory.get_params()
    assert sorted(params) == ["b", "w"] and isinstance(params["w"], tecc.nd.NDArray)
    np.testing.assert_array_equal(params["b"].numpy(), b)
    graph_json, lib, raw_params = factory  # the old three-way unpacking
    assert lib is cpu_lib and sorted(raw_params) == ["b", "w"]
    with pytest.raises(FunctionNotFoundError, match=r"factory\['mlp'\]\(dev\), not factory\['default'\]"):
        factory["default"]
    m = graph_executor.create(graph_json, lib, [tecc.cpu(0)])
    m.set_input(x=x, w=w, b=b)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), reference(x, w, b)[0], rtol=1e-5, atol=1e-5)
    executor = factory["mlp"]()  # the module's device by default
    assert executor.device == tecc.cpu(0)


# ---------------------------------------------------------------------------------------
# a graph JSON that does not fit is refused when the executor is made
# ---------------------------------------------------------------------------------------
def _drop_key(g):
    del g["heads"]


def _unknown_function(g):
    g["nodes"][5]["attrs"]["func_name"] = "fused_scale_v2"


def _row_ptr(g):
    g["node_row_ptr"][4] = 5


def _short_shapes(g):
    g["attrs"]["shape"][1].pop()


def _short_storage(g):
    g["attrs"]["storage_id"][1].pop()


def _bad_dtype(g):
    g["attrs"]["dltype"][1][4] = "float128"


def _later_input(g):
    g["nodes"][4]["inputs"][0] = [5, 0, 0]


def _unknown_op(g):
    g["nodes"][3]["op"] = "relu"


def _wrong_entry_shape(g):
    g["attrs"]["shape"][1][5] = [OUT, ROWS]


def _shared_input(g):
    g["attrs"]["storage_id"][1][4] = g["attrs"]["storage_id"][1][0]


def _unlisted_input(g):
    g["arg_nodes"] = [0, 1]


def _num_inputs(g):
    g["nodes"][6]["attrs"]["num_inputs"] = "3"


def _output_names(g):
    g["attrs"]["output_names"] = ["list_str", ["y"]]


def _output_rows(g):
    g["attrs"]["output_rows"] = ["list_int", [0, 1]]  # a count must be an int64 [1] head


def _output_rows_range(g):
    g["attrs"]["output_rows"] = ["list_int", [0, 7]]


def _nop_not_in_place(g):
    g["nodes"][5]["attrs"]["func_name"] = "__nop"  # scale computes its output: it cannot be skipped


def _odd_offset(g):
    g["attrs"]["storage_offset"] = ["list_int", [0, 0, 0, 0, 0, 6, 0]]


BAD_GRAPHS = [
    (_drop_key, r"lacks the key\(s\) 'heads'"),
    (_unknown_function, r"node 5 \('fused_scale'\) calls 'fused_scale_v2', which the kernel module does not "
                        r"have \(its functions: 'dense_bias', 'relu', 'scale', 'add'\)"),
    (_row_ptr, r"node 3 \('fused_relu'\) has 1 output\(s\), but node_row_ptr gives it 2 entries"),
    (_short_shapes, "attrs.shape has 6 items, but node_row_ptr says there are 7 entries"),
    (_short_storage, "attrs.storage_id has 6 items, but node_row_ptr says there are 7 entries"),
    (_bad_dtype, r"entry 4 \(node 4 \('fused_dense_bias'\) output 0\): unknown dtype 'float128'"),
    (_later_input, r"node 4 \('fused_dense_bias'\) input 0 refers to \[5, 0, 0\].*nodes come after their inputs"),
    (_unknown_op, r"node 3 \('fused_relu'\) has op 'relu'; nodes are 'null'"),
    (_wrong_entry_shape, r"node 5 \('fused_scale'\): the kernel 'scale' does not accept the graph's entries: "
                         r"scale: argument 1 \('S'\) must have shape \(128, 48\)"),
    (_shared_input, r"input node 0 \('x'\) has storage_id \d+, shared with entry 4"),
    (_unlisted_input, r"node 2 \('b'\) is an input \('null'\) node missing from arg_nodes"),
    (_num_inputs, r"node 6 \('fused_add'\) says num_inputs '3' but lists 2 inputs"),
    (_output_names, r"attrs.output_names must list one name per head \(2\), got \['y'\]"),
    (_output_rows, r"attrs.output_rows pairs head 0 \(shape .*\) with head 1 \(float32 .*\); a count is an int64 "
                   r"\[1\] head of its own"),
    (_output_rows_range, r"attrs.output_rows names head 7; the graph has 2"),
    (_nop_not_in_place, r"node 5 \('fused_scale'\) is a no-op \('__nop'\) but its input 0 \(entry 4\) is not stored "
                        r"inside its output \(entry 5\)"),
    (_odd_offset, r"entry 5 \(node 5 \('fused_scale'\) output 0\) has storage_offset 6; an offset is a "
                  r"non-negative number of bytes, a multiple of the entry's element size \(4\)"),
]


@pytest.mark.parametrize("mutate, message", BAD_GRAPHS, ids=[m.__name__.strip("_") for m, _ in BAD_GRAPHS])
def test_a_bad_graph_json_names_the_node(cpu_lib, mutate, message):
    _x, w, b = random_data(8)
    graph = copy.deepcopy(model_graph())
    mutate(graph)
    with pytest.raises(GraphJSONError, match=message):
        GraphExecutor(json.dumps(graph), cpu_lib, tecc.cpu(0), {"w": w, "b": b})


def test_bad_params_json_and_devices_are_refused(cpu_lib):
    _x, w, b = random_data(9)
    graph = model_graph()
    with pytest.raises(RuntimeArgError, match=r"params: input 'w' expects shape \(48, 32\) and dtype float32, got "
                                              r"shape \(32, 48\)"):
        GraphExecutor(graph, cpu_lib, tecc.cpu(0), {"w": w.T.copy(), "b": b})
    with pytest.raises(GraphJSONError, match=r"params \['bias'\] are not inputs of the graph"):
        GraphExecutorFactoryModule(graph, cpu_lib, {"w": w, "bias": b})
    with pytest.raises(GraphJSONError, match="not valid JSON"):
        GraphExecutor("{nodes: []", cpu_lib)
    with pytest.raises(TeccError, match=r"the kernels were built for cpu .* but the device is cuda\(0\)"):
        GraphExecutor(graph, cpu_lib, tecc.cuda(0), {"w": w, "b": b})
    with pytest.raises(TeccError, match="got 2 devices; tecc runs a model on one device"):
        GraphExecutor(graph, cpu_lib, [tecc.cpu(0), tecc.cpu(0)])
