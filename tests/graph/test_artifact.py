"""The deployable model artifact (runtime/artifact.py): export and load round trips on
the C backend and the CUDA emulator, loading where the compiler cannot be imported,
and a clear error for every way the file can be damaged."""
import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
import warnings
import zipfile

import numpy as np
import pytest

import tecc
from tecc import te, tir
from tecc.contrib import graph_executor
from tecc.graph.memory_plan import plan_storage
from tecc.runtime import artifact
from tecc.runtime.artifact import ArtifactError, read_artifact
from tecc.runtime.graph_executor import GraphExecutorFactoryModule
from irhelpers import private_cache_dir  # noqa: F401  (an autouse fixture)

N = 64
CUDA = "cuda"  # the local GPU, or the emulator where there is none
#: what a process loading an artifact must not import
BLOCKED = ("tecc.te", "tecc.tir", "tecc.topi", "tecc.graph", "tecc.driver", "tecc.cpu_fallback",
           "tecc.cuda_codegen", "tecc.target", "tecc.tuner", "onnx")


@pytest.fixture(autouse=True)
def _quiet_emulation():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "no CUDA GPU found: emulating"
        yield


def _factory(target: str) -> GraphExecutorFactoryModule:
    """y = relu(x) * s + s (two kernels, a param ``s``), built for ``target``."""
    cuda = target.startswith("cuda")
    prims = {}
    X = te.placeholder((N,), name="X")
    S = te.placeholder((N,), name="S")
    R = te.compute((N,), lambda i: te.max(X[i], 0.0), name="R")
    F = te.compute((N,), lambda i: X[i] * S[i] + S[i], name="F")
    for name, out, args in (("relu", R, [X, R]), ("scale_shift", F, [X, S, F])):
        s = te.create_schedule(out.op)
        if cuda:
            bx, tx = s[out].split(out.op.axis[0], factor=32)
            s[out].bind(bx, te.thread_axis("blockIdx.x"))
            s[out].bind(tx, te.thread_axis("threadIdx.x"))
        (prims[name],) = tecc.lower(s, args, name=name).functions.values()
    lib = tecc.build(tir.IRModule(prims), target=target)
    graph = {"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "null", "name": "s", "inputs": []},
                       {"op": "tvm_op", "name": "fused_relu", "inputs": [[0, 0, 0]],
                        "attrs": {"func_name": "relu", "num_inputs": "1", "num_outputs": "1", "flatten_data": "0",
                                  "inplace_input": "0"}},
                       {"op": "tvm_op", "name": "fused_scale_shift", "inputs": [[2, 0, 0], [1, 0, 0]],
                        "attrs": {"func_name": "scale_shift", "num_inputs": "2", "num_outputs": "1",
                                  "flatten_data": "0", "inplace_input": "0"}}],
             "arg_nodes": [0, 1], "heads": [[3, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4],
             "attrs": {"shape": ["list_shape", [[N]] * 4], "dltype": ["list_str", ["float32"] * 4]}}
    graph["attrs"]["storage_id"] = ["list_int", plan_storage(graph)]
    scale = np.linspace(-1, 1, N).astype("float32")
    return GraphExecutorFactoryModule(json.dumps(graph), lib, {"s": scale}, target=target)


def _expected(x):
    s = np.linspace(-1, 1, N).astype("float32")
    return np.maximum(x, 0) * s + s


@pytest.fixture(scope="module")
def cpu_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("artifact") / "model.tar"
    _factory("llvm").export_library(str(path))
    return path


@pytest.fixture(scope="module")
def cuda_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("artifact") / "model_cuda.tar"
    _factory(CUDA).export_library(str(path))
    return path


def _members(path) -> dict:
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _rewrite(path, members: dict) -> None:
    """Write ``members`` as a zip at ``path``, the manifest first (as export does)."""
    with zipfile.ZipFile(path, "w") as z:
        for name in sorted(members, key=lambda n: n != artifact.MANIFEST):
            z.writestr(name, members[name])


# ---------------------------------------------------------------------------------------
# round trips
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("model, dev", [("cpu_model", tecc.cpu(0)), ("cuda_model", tecc.cuda(0))])
def test_export_and_load_round_trip(request, model, dev):
    path = request.getfixturevalue(model)
    loaded = tecc.runtime.load_module(str(path))
    assert isinstance(loaded, GraphExecutorFactoryModule)
    m = graph_executor.GraphModule(loaded["default"](dev))
    x = np.random.default_rng(0).standard_normal(N).astype("float32")
    m.set_input("x", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), _expected(x), rtol=1e-6)
    np.testing.assert_array_equal(loaded.get_params()["s"].numpy(), np.linspace(-1, 1, N).astype("float32"))
    assert loaded.target == ("llvm" if dev == tecc.cpu(0) else CUDA)
    # the manifest: format, versions, target, inputs and outputs, a checksum per member
    with zipfile.ZipFile(path) as z:
        assert z.namelist()[0] == "manifest.json"
        assert sorted(z.namelist()) == ["graph.json", "kernels.lib", "manifest.json", "params.npz"]
    contents = read_artifact(str(path))
    manifest = contents.manifest
    assert manifest["format"] == "tecc-model" and manifest["format_version"] == artifact.FORMAT_VERSION
    assert manifest["tecc_version"] == tecc.__version__ and manifest["target"] == loaded.target
    assert manifest["created"].endswith("+00:00")
    assert manifest["inputs"] == [{"name": "x", "shape": [N], "dtype": "float32"}]
    assert manifest["outputs"] == [{"index": 0, "shape": [N], "dtype": "float32"}]
    assert manifest["kernels"]["functions"] == ["relu", "scale_shift"]
    members = _members(path)
    for name in ("graph.json", "kernels.lib", "params.npz"):
        assert manifest["members"][name]["sha256"] == hashlib.sha256(members[name]).hexdigest()
    assert json.loads(contents.graph_json) == json.loads(loaded.get_graph_json())


def test_a_loaded_model_exports_again_and_loads_without_the_cache(cpu_model, tmp_path):
    loaded = tecc.runtime.load_module(str(cpu_model))
    again = tmp_path / "again.tar"
    loaded.export_library(str(again))
    reloaded = tecc.runtime.load_module(str(again), cache=False)
    assert os.path.exists(f"{again}.kernels")  # the kernel library is written beside the file
    x = np.arange(N, dtype="float32") - N / 2
    m = graph_executor.GraphModule(reloaded["default"](tecc.cpu(0)))
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0).numpy(), _expected(x), rtol=1e-6)


def test_loading_needs_neither_the_compiler_nor_onnx(cpu_model, cuda_model, tmp_path):
    script = textwrap.dedent(f"""
        import sys, warnings
        import numpy as np

        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name.startswith({BLOCKED!r}):
                    raise ImportError("must not be imported when loading a model: " + name)

        sys.meta_path.insert(0, Refuse())
        import tecc
        from tecc.contrib import graph_executor
        warnings.simplefilter("ignore")
        x = np.linspace(-2, 2, {N}).astype("float32")
        s = np.linspace(-1, 1, {N}).astype("float32")
        for path, dev in (({str(cpu_model)!r}, tecc.cpu(0)), ({str(cuda_model)!r}, tecc.cuda(0))):
            factory = tecc.runtime.load_module(path)
            m = graph_executor.GraphModule(factory["default"](dev))
            m.run(x=x)
            assert np.allclose(m.get_output(0).numpy(), np.maximum(x, 0) * s + s)
        print("ok", sorted(m for m in sys.modules if m.startswith(("tecc.", "onnx"))))
    """)
    env = dict(os.environ, TECC_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")
    loaded = eval(out.stdout[3:])
    assert "tecc.runtime.artifact" in loaded
    assert not any(m.startswith(BLOCKED) for m in loaded)


# ---------------------------------------------------------------------------------------
# damaged artifacts
# ---------------------------------------------------------------------------------------
def _copy(src, tmp_path, name="damaged.tar"):
    dst = tmp_path / name
    dst.write_bytes(src.read_bytes())
    return dst


def test_a_flipped_byte_is_caught(cpu_model, tmp_path):
    path = _copy(cpu_model, tmp_path)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("params.npz")
    # the member's data follows its local header (30 bytes, the name, the extra field)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + info.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=r"damaged.tar'?: the member 'params.npz' is corrupt \(Bad CRC-32"):
        tecc.runtime.load_module(str(path))


def test_a_member_changed_after_export_fails_its_checksum(cpu_model, tmp_path):
    path = _copy(cpu_model, tmp_path)
    members = _members(path)
    buf = io.BytesIO()
    np.savez(buf, s=np.zeros(N, "float32"))  # a well-formed member with other values
    members["params.npz"] = buf.getvalue()
    _rewrite(path, members)
    with pytest.raises(ArtifactError, match=r"the member 'params.npz' does not match its checksum .* changed after "
                                            r"export \(tampered with or damaged\)"):
        tecc.runtime.load_module(str(path))


def test_a_truncated_file_is_caught(cuda_model, tmp_path):
    path = _copy(cuda_model, tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ArtifactError, match=r"not a complete zip archive .* truncated or corrupt"):
        tecc.runtime.load_module(str(path))
    path.write_bytes(data[:20])  # not even the first member's name
    with pytest.raises(ArtifactError, match=r"not a complete zip archive .* \(20 bytes\)"):
        tecc.runtime.load_module(str(path))


def test_a_missing_member_is_named(cpu_model, tmp_path):
    path = _copy(cpu_model, tmp_path)
    members = _members(path)
    del members["kernels.lib"]
    _rewrite(path, members)
    with pytest.raises(ArtifactError, match=r"the member 'kernels.lib' is missing \(an incomplete artifact\)"):
        tecc.runtime.load_module(str(path))


@pytest.mark.parametrize("edit, message", [
    (lambda m: m.update(format_version=99),
     r"written by a newer tecc .* in format version 99; this tecc .* reads format versions up to 1: upgrade tecc"),
    (lambda m: m.update(format_version="1"), r"format_version '1'; expected an integer from 1 to 1"),
    (lambda m: m.update(format="onnx"), r"names the format 'onnx', not 'tecc-model'"),
    (lambda m: m["members"].pop("graph.json"), r"no sha256 of the member 'graph.json'"),
])
def test_an_edited_manifest_is_refused(cpu_model, tmp_path, edit, message):
    path = _copy(cpu_model, tmp_path)
    members = _members(path)
    manifest = json.loads(members["manifest.json"])
    edit(manifest)
    members["manifest.json"] = json.dumps(manifest)
    _rewrite(path, members)
    with pytest.raises(ArtifactError, match=message):
        tecc.runtime.load_module(str(path))


def test_files_that_are_not_artifacts(tmp_path, cpu_model):
    with pytest.raises(ArtifactError, match="no model artifact at"):
        read_artifact(str(tmp_path / "missing.tar"))
    other = tmp_path / "other.zip"
    _rewrite(other, {"readme.txt": "hello"})
    with pytest.raises(ArtifactError, match="no manifest.json: this is not a tecc model artifact"):
        read_artifact(str(other))
    factory = tecc.runtime.load_module(str(cpu_model))
    with pytest.raises(ArtifactError, match="the folder .* does not exist; create it first"):
        factory.export_library(str(tmp_path / "no" / "such" / "model.tar"))


def test_params_of_any_name_round_trip_without_pickle():
    from tecc.runtime.graph_executor import load_param_dict, save_param_dict

    params = {"file": np.arange(3, dtype="int64"), "onnx::Conv_1": np.ones((2, 2), "float16"),
              "layer/0.weight": tecc.nd.array(np.full(4, 0.5, "float32"))}
    data = save_param_dict(params)
    back = load_param_dict(data)
    assert sorted(back) == sorted(params)
    np.testing.assert_array_equal(back["file"], params["file"])
    assert back["onnx::Conv_1"].dtype == np.float16
    np.testing.assert_array_equal(back["layer/0.weight"], np.full(4, 0.5, "float32"))
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:  # plain numpy reads it
        assert sorted(npz.files) == sorted(params)
    with pytest.raises(tecc.TeccError, match="param 'o' holds Python objects"):
        save_param_dict({"o": np.array([object()], dtype=object)})
    with pytest.raises(tecc.TeccError, match="load_params: the bytes are not a .npz of params"):
        load_param_dict(b"not an npz")
