"""The ``tecc`` command line (driver/tvmc.py): compile -> info -> run round trips on a
tiny ONNX model made here, tuning and compiling with the records, bench against
onnxruntime, and every user mistake as one line with the right exit code."""
import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tecc.driver.tvmc import UsageError, main, parse_input_shapes, split_trials
from tecc.topi.testing import conv2d_nchw_python

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RNG = np.random.default_rng(11)
SHAPE = (1, 3, 8, 8)


def _weights():
    return {"W": (0.3 * RNG.standard_normal((4, 3, 3, 3))).astype("float32"),
            "B": (0.1 * RNG.standard_normal(4)).astype("float32"),
            "G": (0.3 * RNG.standard_normal((5, 64))).astype("float32")}


def _save(nodes, inits, out_shape, path):
    graph = helper.make_graph(
        nodes, "cli_test", [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, str(path))
    return str(path)


def _cnn(path, w):
    """Conv -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax, a symbolic batch."""
    nodes = [helper.make_node("Conv", ["data", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "G"], ["g"], transB=1),
             helper.make_node("Softmax", ["g"], ["out"], axis=1)]
    return _save(nodes, w, ["N", 5], path)


def _reference(x, w):
    c = np.maximum(conv2d_nchw_python(x, w["W"], 1, 1) + w["B"].reshape(1, 4, 1, 1), 0)
    p = c.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5)).reshape(1, 64)
    g = p @ w["G"].T
    e = np.exp(g - g.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    w = _weights()
    return _cnn(tmp_path_factory.mktemp("cli") / "tiny.onnx", w), w


@pytest.fixture(scope="module")
def artifact(model, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("cli_art") / "tiny.tar")
    assert main(["compile", "--input-shapes", "data:[1,3,8,8]", "--output", out, model[0]]) == 0
    return out


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------
# the round trips
# ---------------------------------------------------------------------------------------
def test_compile_info_run_round_trip(model, tmp_path, capsys):
    path, w = model
    art = str(tmp_path / "m.tar")
    code, out, err = _run(capsys, ["compile", "--target", "llvm", "--opt-level", "3", "--input-shapes",
                                   "data:[1,3,8,8]", "--output", art, path])
    assert code == 0, err
    assert "inputs:        data float32[1, 3, 8, 8]" in out and "outputs:       0 (out) float32[1, 5]" in out
    # conv+bias+relu fused into one kernel, in channel blocks (AlterOpLayout): 6 kernels for 6 ONNX nodes, one
    # of them the image's layout transform (the transform back is in the flatten's kernel)
    assert "kernels:       6 function(s), 6 call(s)" in out
    assert f"params:        3 array(s), {sum(v.nbytes for v in w.values())} bytes" in out
    assert "intermediates: peak " in out and "2 tunable workload(s) on default configs" in out
    assert f"wrote {art} ({os.path.getsize(art)} bytes" in out

    code, out, err = _run(capsys, ["info", art])
    assert code == 0, err
    assert "tecc-model format version 1" in out and "target:        llvm" in out
    assert "input  data: float32[1, 3, 8, 8]" in out and "output 0: (out) float32[1, 5]" in out
    assert "kernels:       6 function(s)" in out and "checksums of 3 member(s) verified" in out
    code, out, _ = _run(capsys, ["info", "--json", art])
    manifest = json.loads(out)
    assert code == 0 and manifest["inputs"] == [{"name": "data", "shape": [1, 3, 8, 8], "dtype": "float32"}]
    assert manifest["checksums"] == "ok" and manifest["kernel_calls"] == 6

    x = RNG.uniform(-1, 1, SHAPE).astype("float32")
    np.savez(tmp_path / "in.npz", data=x)
    code, out, err = _run(capsys, ["run", "--device", "cpu", "--inputs", str(tmp_path / "in.npz"), "--output",
                                   str(tmp_path / "out.npz"), art])
    assert code == 0, err
    assert "output_0: (out) float32[1, 5]" in out and "random" not in err
    with np.load(tmp_path / "out.npz") as got:
        assert got.files == ["output_0"]
        np.testing.assert_allclose(got["output_0"], _reference(x, w), rtol=1e-5, atol=1e-6)


def test_a_bfloat16_model_compiles_runs_and_takes_its_inputs_in_either_form(tmp_path, capsys):
    """A bfloat16 MLP through compile and run: its params travel in the artifact as
    their bits (an .npz has no bfloat16 type), inputs are taken as ml_dtypes' arrays
    (which an .npz reads back as 2-byte voids) or as uint16 bits, and a missing one is
    filled with bfloat16 values; outputs are written as the bits, and say so."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import onnx

    from tecc.graph.testing import bfloat16_model, mlp_model

    onnx.save(bfloat16_model(mlp_model(sizes=(16, 32, 8), batch=2)), str(tmp_path / "m.onnx"))
    art = str(tmp_path / "m.tar")
    code, out, err = _run(capsys, ["compile", "--target", "llvm", "--output", art, str(tmp_path / "m.onnx")])
    assert code == 0, err
    x = RNG.standard_normal((2, 16)).astype(ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", x=x)
    np.savez(tmp_path / "bits.npz", x=x.view(np.uint16))
    got = []
    for name in ("in", "bits"):
        code, out, err = _run(capsys, ["run", "--device", "cpu", "--inputs", str(tmp_path / f"{name}.npz"),
                                       "--output", str(tmp_path / f"out_{name}.npz"), art])
        assert code == 0, err
        assert "output_0: (y) uint16[2, 8] (bfloat16 as its bits: arr.view(ml_dtypes.bfloat16))" in out
        with np.load(tmp_path / f"out_{name}.npz") as npz:
            got.append(npz["output_0"])
    np.testing.assert_array_equal(got[0], got[1])
    assert np.isfinite(got[0].view(ml_dtypes.bfloat16).astype(np.float32)).all() and got[0].any()
    code, out, err = _run(capsys, ["run", "--device", "cpu", art])
    assert code == 0, err


def test_compile_in_mixed_precision_for_tensor_cores(tmp_path, capsys):
    """--mixed-precision float16: the float32 MLP's dense layers on tensor cores, fed
    float32 as before, its output float16 and within float16's precision."""
    import onnx

    from tecc.graph.testing import mlp_model

    m = mlp_model(sizes=(64, 128, 32), batch=16)
    onnx.save(m, str(tmp_path / "m.onnx"))
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    outs = {}
    for flags in ([], ["--mixed-precision", "float16"]):
        art = str(tmp_path / f"m{len(flags)}.tar")
        code, out, err = _run(capsys, ["compile", "--target", "cuda", "--output", art, *flags,
                                       str(tmp_path / "m.onnx")])
        assert code == 0, err
        assert "inputs:        x float32[16, 64]" in out
        code, out, err = _run(capsys, ["run", "--device", "cuda", "--inputs", str(tmp_path / "in.npz"), "--output",
                                       str(tmp_path / f"out{len(flags)}.npz"), art])
        assert code == 0, err
        with np.load(tmp_path / f"out{len(flags)}.npz") as npz:
            outs[len(flags)] = npz["output_0"]
    assert outs[0].dtype == np.float32 and outs[2].dtype == np.float16
    np.testing.assert_allclose(outs[2].astype(np.float32), outs[0], rtol=1e-2, atol=1e-2)
    code, _, err = _run(capsys, ["compile", "--mixed-precision", "float8", str(tmp_path / "m.onnx")])
    assert code == 2 and "invalid choice: 'float8'" in err
    # tuning the mixed model: its tasks are the tensor-core products, and the hint compiles it mixed too
    records = str(tmp_path / "records.json")
    code, out, err = _run(capsys, ["tune", "--target", "cuda", "--mixed-precision", "float16", "--trials", "1",
                                   "--output", records, str(tmp_path / "m.onnx")])
    assert code == 0, err
    assert out.count("dense_tensorcore.cuda x1") >= 2
    assert "compile with: tecc compile --target cuda --mixed-precision float16 --tuning-records" in out
    code, out, err = _run(capsys, ["compile", "--target", "cuda", "--mixed-precision", "float16", "--tuning-records",
                                   records, "--output", str(tmp_path / "tuned.tar"), str(tmp_path / "m.onnx")])
    assert code == 0, err
    assert "2 of 2 tunable workload(s) configured from" in out


def test_run_fills_missing_inputs_prints_time_and_top(artifact, model, capsys):
    code, out, err = _run(capsys, ["run", "--print-time", "--repeat", "3", "--print-top", "2", artifact])
    assert code == 0, err
    assert "input(s) ['data'] no --inputs given: using random values (seed 0)" in err
    lines = out.splitlines()
    top = lines[lines.index("top 2 of output_0 (index: value):") + 1:][:2]
    x = np.random.default_rng(0).uniform(0.0, 1.0, SHAPE).astype("float32")  # the documented fill
    want = _reference(x, model[1]).reshape(-1)
    order = np.argsort(-want)[:2]
    assert [int(t.split(":")[0]) for t in top] == list(order)
    np.testing.assert_allclose([float(t.split(":")[1]) for t in top], want[order], rtol=1e-5)
    stats = lines[lines.index("Execution time summary:") + 2].split()
    assert len(stats) == 5 and all(float(v) >= 0 for v in stats)
    assert float(stats[3]) <= float(stats[0]) <= float(stats[2])  # min <= mean <= max


def test_cuda_artifact_runs_on_the_gpu_semantics_path(model, tmp_path, capsys):
    path, w = model
    art = str(tmp_path / "c.tar")
    code, out, err = _run(capsys, ["compile", "--target", "cuda", "--input-shapes", "data:[1,3,8,8]", "-o", art,
                                   path])
    assert code == 0, err
    code, out, _ = _run(capsys, ["info", art])
    assert "target:        cuda" in out
    x = RNG.uniform(-1, 1, SHAPE).astype("float32")
    np.savez(tmp_path / "in.npz", data=x)
    code, out, err = _run(capsys, ["run", "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"), art])
    assert code == 0, err
    assert all(line.startswith("tecc run: warning:") for line in err.splitlines())  # at most "no GPU here"
    with np.load(tmp_path / "o.npz") as got:
        np.testing.assert_allclose(got["output_0"], _reference(x, w), rtol=1e-5, atol=1e-6)


def test_outputs_and_bench_against_onnxruntime(model, artifact, tmp_path, capsys):
    ort = pytest.importorskip("onnxruntime")
    path, _ = model
    x = RNG.uniform(-1, 1, SHAPE).astype("float32")
    np.savez(tmp_path / "in.npz", data=x)
    assert main(["run", "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz"), artifact]) == 0
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"data": x})[0]
    with np.load(tmp_path / "out.npz") as got:
        np.testing.assert_allclose(got["output_0"], want, rtol=1e-5, atol=1e-6)
    capsys.readouterr()

    report = tmp_path / "bench.json"
    code, out, err = _run(capsys, ["bench", "--device", "cpu", "--input-shapes", "data:[1,3,8,8]", "--inputs",
                                   str(tmp_path / "in.npz"), "--repeat", "2", "--number", "1", "--compare",
                                   "onnxruntime", "--json", str(report), path])
    assert code == 0, err
    assert "x onnxruntime's speed" in out and "onnxruntime:" in out
    data = json.loads(report.read_text())
    assert data["tecc"]["samples"] == 2 and data["onnxruntime"]["samples"] == 2 and data["end_to_end"]
    assert data["max_abs_diff_vs_onnxruntime"] < 1e-5
    ratio = data["onnxruntime"]["median_ms"] / data["tecc"]["median_ms"]
    assert data["speedup_vs_onnxruntime"] == pytest.approx(ratio)


def test_bench_of_an_artifact_writes_json(artifact, tmp_path, capsys):
    report = tmp_path / "b.json"
    code, out, err = _run(capsys, ["bench", "--repeat", "3", "--number", "2", "--json", str(report), artifact])
    assert code == 0, err
    assert "tecc (llvm on cpu:0):" in out and "using random values (seed 0)" in err
    data = json.loads(report.read_text())
    assert data["tecc"]["samples"] == 3 and data["number"] == 2 and "onnxruntime" not in data
    assert data["tecc"]["min_ms"] <= data["tecc"]["median_ms"] <= data["tecc"]["max_ms"]


def test_tune_resumes_and_compile_applies_the_records(tmp_path, capsys):
    w = _weights()
    nodes = [helper.make_node("Conv", ["data", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["out"])]
    path = _save(nodes, {"W": w["W"], "B": w["B"]}, ["N", 4, 8, 8], tmp_path / "conv.onnx")
    records = str(tmp_path / "records.json")
    argv = ["tune", "--target", "llvm", "--input-shapes", "data:[1,3,8,8]", "--trials", "2", "--tuner", "random",
            "--number", "1", "--repeat", "1", "--output", records, path]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    # the convolution runs in channel blocks (AlterOpLayout): one task, the blocked template
    assert "1 tunable task(s)" in out and "[1/1] conv2d_NCHWc.x86 x1" in out
    assert out.count("2 trial(s) measured") == 1 and "best per task:" in out and "GFLOP/s" in out
    assert out.count("default schedule ") == 1
    with open(records) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    # the task: its default schedule measured once (a baseline record), then the two trials
    assert len(rows) == 3 and sum(1 for r in rows if r["config"].get("fallback")) == 1
    # cold-cache timing (TVM's enable_cpu_cache_flush) is an option of the runner
    flushed = str(tmp_path / "flushed.json")
    code, out, err = _run(capsys, ["tune", "--target", "llvm", "--input-shapes", "data:[1,3,8,8]", "--trials", "2",
                                   "--tuner", "random", "--number", "1", "--repeat", "2", "--cpu-cache-flush",
                                   "--output", flushed, path])
    assert code == 0, err
    assert out.count("2 trial(s) measured") == 1
    # a second run resumes from the file: nothing left to measure, the baselines kept
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    assert out.count("0 trial(s) measured, 2 resumed from the file") == 1
    with open(records) as f:
        assert sum(1 for line in f if line.strip()) == 3

    art = str(tmp_path / "tuned.tar")
    code, out, err = _run(capsys, ["compile", "--input-shapes", "data:[1,3,8,8]", "--tuning-records", records,
                                   "-o", art, path])
    assert code == 0, err
    assert f"1 of 1 tunable workload(s) configured from {records}" in out
    x = RNG.uniform(-1, 1, SHAPE).astype("float32")
    np.savez(tmp_path / "in.npz", data=x)
    assert main(["run", "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"), art]) == 0
    with np.load(tmp_path / "o.npz") as got:
        want = np.maximum(conv2d_nchw_python(x, w["W"], 1, 1) + w["B"].reshape(1, 4, 1, 1), 0)
        np.testing.assert_allclose(got["output_0"], want, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# helpers with a Python API
# ---------------------------------------------------------------------------------------
def test_parse_input_shapes():
    assert parse_input_shapes("data:[1,3,224,224]") == {"data": (1, 3, 224, 224)}
    assert parse_input_shapes(" a:[1, 8]  b : [2] , input:0:[4,4] s:[]") == {
        "a": (1, 8), "b": (2,), "input:0": (4, 4), "s": ()}
    with pytest.raises(UsageError, match=r"cannot read --input-shapes at 'data:1,3': write name:\[d0,d1,...\]"):
        parse_input_shapes("data:1,3")
    with pytest.raises(UsageError, match=r"input 'data' has the dimension '-1'; dimensions are positive"):
        parse_input_shapes("data:[-1,3]")
    with pytest.raises(UsageError, match=r"gives input 'a' twice"):
        parse_input_shapes("a:[1] a:[2]")
    with pytest.raises(UsageError, match=r"--input-shapes is empty"):
        parse_input_shapes("  ")


class _Task:
    def __init__(self, flop, count, space):
        self.flop, self.count, self.config_space = flop, count, range(space)


def test_split_trials_by_share_at_least_one():
    tasks = [_Task(1e9, 3, 1000), _Task(1e9, 1, 1000), _Task(1e3, 1, 1000)]
    assert split_trials(100, tasks) == [74, 25, 1]  # the minimum of 1 is taken from the largest share
    assert split_trials(2, tasks) == [1, 1, 1]  # every task gets one
    assert split_trials(100, [_Task(1e9, 1, 6), _Task(1e9, 1, 1000)]) == [6, 50]  # capped by the space


# ---------------------------------------------------------------------------------------
# help and the installed command
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["compile", "tune", "run", "info", "bench"])
def test_every_subcommand_has_help(command, capsys):
    code, out, _ = _run(capsys, [command, "--help"])
    assert code == 0 and out.startswith(f"usage: tecc {command}")
    assert "exit code 0 on success, 1 when the command fails, 2 for a wrong command line" in " ".join(out.split())


def test_installed_console_script():
    script = Path(sys.executable).parent / "tecc"
    assert script.exists(), "pip install -e . installs the tecc command next to python"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "{compile,tune,run,info,bench}" in proc.stdout


# ---------------------------------------------------------------------------------------
# user mistakes: one line, the right exit code, no traceback
# ---------------------------------------------------------------------------------------
def _tampered(artifact, tmp_path):
    """The artifact rewritten with one params value changed (a valid zip whose
    member no longer matches the manifest's checksum)."""
    out = tmp_path / "tampered.tar"
    with zipfile.ZipFile(artifact) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "params.npz":
                with np.load(io.BytesIO(data)) as npz:
                    arrays = {k: npz[k].copy() for k in npz.files}
                arrays["p0"].flat[0] += 1.0
                buf = io.BytesIO()
                np.savez(buf, **arrays)
                data = buf.getvalue()
            dst.writestr(item, data)
    return str(out)


def _truncated(artifact, tmp_path):
    out = tmp_path / "truncated.tar"
    data = Path(artifact).read_bytes()
    out.write_bytes(data[:len(data) // 2])
    return str(out)


def _not_onnx(_artifact, tmp_path):
    out = tmp_path / "notes.onnx"
    out.write_text("this is not a model\n")
    return str(out)


def _npz(tmp_path, **arrays):
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    return str(path)


CASES = {
    "missing model file": (lambda a, m, t: ["compile", str(t / "nope.onnx")], 1,
                           r"tecc compile: error: there is no model file '.*nope\.onnx'; check the path"),
    "not an onnx file": (lambda a, m, t: ["compile", _not_onnx(a, t)], 1,
                         r"tecc compile: error: from_onnx: '.*notes\.onnx' is not a readable ONNX model"),
    "symbolic batch left": (lambda a, m, t: ["compile", "-o", str(t / "x.tar"), m], 1,
                            r"tecc compile: error: .*symbolic dimension 'N'.*--input-shapes \"name:\[d0,d1,...\]\""),
    "truncated artifact": (lambda a, m, t: ["info", _truncated(a, t)], 1,
                           r"tecc info: error: '.*truncated\.tar': not a complete zip archive.*truncated or corrupt"),
    "truncated artifact run": (lambda a, m, t: ["run", _truncated(a, t)], 1,
                               r"tecc run: error: '.*truncated\.tar': not a complete zip archive"),
    "tampered artifact": (lambda a, m, t: ["info", _tampered(a, t)], 1,
                          r"tecc info: error: .*'params\.npz' does not match its checksum.*tampered"),
    "tampered artifact run": (lambda a, m, t: ["run", _tampered(a, t)], 1,
                              r"tecc run: error: .*'params\.npz' does not match its checksum"),
    "onnx given to run": (lambda a, m, t: ["run", m], 1,
                          r"tecc run: error: '.*tiny\.onnx' is not a tecc model artifact; compile it first"),
    "missing artifact": (lambda a, m, t: ["run", str(t / "gone.tar")], 1,
                         r"tecc run: error: there is no model artifact '.*gone\.tar'"),
    "unknown target": (lambda a, m, t: ["compile", "--target", "tpu", m], 2,
                       r"tecc compile: error: argument --target: unknown target kind 'tpu'.*see 'tecc compile --help'"),
    "bad input shapes": (lambda a, m, t: ["compile", "--input-shapes", "data=1x3x8x8", m], 2,
                         r"tecc compile: error: argument --input-shapes: cannot read --input-shapes at 'data=1x3x8x8'"),
    "input shape of no input": (lambda a, m, t: ["compile", "--input-shapes", "x:[1,3,8,8]", m], 1,
                                r"tecc compile: error: from_onnx: shape names \['x'\], which are not inputs.*\['data'\]"),
    "wrong input name in npz": (lambda a, m, t: ["run", "--inputs", _npz(t, image=np.zeros(SHAPE, "float32")), a], 1,
                                r"tecc run: error: --inputs '.*in\.npz' has the array 'image', which is not an input "
                                r"of the model; its inputs are: data float32\[1, 3, 8, 8\]"),
    "wrong input dtype in npz": (lambda a, m, t: ["run", "--inputs", _npz(t, data=np.zeros(SHAPE)), a], 1,
                                 r"input 'data' is float64\[1, 3, 8, 8\] but the model takes float32\[1, 3, 8, 8\].*"
                                 r"astype\('float32'\)"),
    "wrong input shape in npz": (lambda a, m, t: ["run", "--inputs", _npz(t, data=np.zeros((3, 8, 8), "float32")), a],
                                 1, r"input 'data' is float32\[3, 8, 8\] but the model takes float32\[1, 3, 8, 8\]"),
    "inputs not an npz": (lambda a, m, t: ["run", "--inputs", _not_onnx(a, t), a], 1,
                          r"tecc run: error: --inputs '.*notes\.onnx' is not a \.npz file; .*numpy\.savez"),
    "device of another target": (lambda a, m, t: ["run", "--device", "cuda", a], 1,
                                 r"tecc run: error: '.*tiny\.tar' was compiled for llvm, which runs on cpu: run it "
                                 r"with --device cpu, or compile the model with --target cuda"),
    "unknown device": (lambda a, m, t: ["run", "--device", "tpu", a], 2,
                       r"tecc run: error: argument --device: unknown device 'tpu'; use cpu, cuda or cuda:N"),
    "missing records": (lambda a, m, t: ["compile", "--tuning-records", str(t / "r.json"), m], 1,
                        r"tecc compile: error: there is no tuning records file '.*r\.json'"),
    "output folder missing": (lambda a, m, t: ["compile", "-o", str(t / "no" / "m.tar"), m], 1,
                              r"tecc compile: error: --output '.*m\.tar': the folder '.*no' does not exist"),
    "compare needs onnx": (lambda a, m, t: ["bench", "--compare", "onnxruntime", a], 2,
                           r"tecc bench: error: --compare onnxruntime needs the ONNX model: .* give model\.onnx"),
    "no subcommand": (lambda a, m, t: [], 2, r"tecc: error: the following arguments are required"),
    "unknown subcommand": (lambda a, m, t: ["frobnicate"], 2, r"tecc: error: argument .*invalid choice: 'frobnicate'"),
    "unknown option": (lambda a, m, t: ["compile", "--bogus", m], 2,
                       r"tecc compile: error: unrecognized arguments: --bogus; see 'tecc compile --help'"),
    "tune without output": (lambda a, m, t: ["tune", m], 2,
                            r"tecc tune: error: the following arguments are required: -o/--output"),
    "bad trials": (lambda a, m, t: ["tune", "--trials", "0", "-o", str(t / "r.json"), m], 2,
                   r"tecc tune: error: argument --trials: expected a positive integer, got '0'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_user_errors_are_one_line(case, artifact, model, tmp_path, capsys):
    make_argv, want_code, pattern = CASES[case]
    code, out, err = _run(capsys, make_argv(artifact, model[0], tmp_path))
    assert code == want_code, err
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tecc"), lines[0]
    assert re.search(pattern, lines[0]), lines[0]


# ---------------------------------------------------------------------------------------
# TVMC's Python API: from tecc.driver import tvmc
# ---------------------------------------------------------------------------------------
def test_tvmc_python_api_load_tune_compile_run(tmp_path):
    from tecc.driver import tvmc

    w = _weights()
    path = _cnn(tmp_path / "my_model.onnx", w)
    model = tvmc.load(path, shape_dict={"data": [1, 3, 8, 8]})
    assert isinstance(model, tvmc.TVMCModel) and model.default_package_path() == str(tmp_path / "my_model.tar")
    records = tvmc.tune(model, target="llvm", trials=4, tuner="random", number=1, repeat=1, parallel=1)
    assert records == model.default_tuning_records_path() and os.path.getsize(records) > 0
    package = tvmc.compile(model, target="llvm", tuning_records=records, package_path=str(tmp_path / "pkg.tar"))
    assert isinstance(package, tvmc.TVMCPackage) and package.target.startswith("llvm")
    x = RNG.standard_normal(SHAPE).astype("float32")
    result = tvmc.run(package, device="cpu", inputs={"data": x}, benchmark=True, repeat=2, number=1)
    np.testing.assert_allclose(result.get_output("output_0"), _reference(x, w), rtol=1e-4, atol=1e-5)
    text = str(result)
    assert text.startswith("output_0: float32 [1, 5]") and "Execution time summary" in text
    result.save(str(tmp_path / "out.npz"))
    assert np.load(tmp_path / "out.npz")["output_0"].shape == (1, 5)
    # TVM's mixed-precision arguments: the model computed in float16, fed float32 as before
    half = tvmc.compile(model, target="llvm", package_path=str(tmp_path / "half.tar"), mixed_precision=True,
                        mixed_precision_calculation_type="float16", mixed_precision_acc_type="float16")
    got = tvmc.run(half, device="cpu", inputs={"data": x}).get_output("output_0")
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), _reference(x, w), rtol=1e-2, atol=1e-2)
    with pytest.raises(tvmc.TVMCException, match="mixed_precision_ops is not supported"):
        tvmc.compile(model, target="llvm", mixed_precision=True, mixed_precision_ops=["nn.conv2d"])


def test_tvmc_python_api_errors(tmp_path):
    from tecc.driver import tvmc

    path = _cnn(tmp_path / "m.onnx", _weights())
    with pytest.raises(tvmc.TVMCException, match="tecc loads ONNX"):
        tvmc.load(str(tmp_path / "m.tflite"))
    model = tvmc.load(path, shape_dict={"data": [1, 3, 8, 8]})
    with pytest.raises(tvmc.TVMCException, match="unknown target kind 'opencl'"):
        tvmc.tune(model, target="opencl", trials=1)
    with pytest.raises(tvmc.TVMCException, match="tuner 'xgb_knob' is not one tecc has"):
        tvmc.tune(model, target="llvm", tuner="xgb_knob")
    with pytest.raises(tvmc.TVMCException, match="enable_autoscheduler=True is not supported"):
        tvmc.tune(model, target="llvm", enable_autoscheduler=True)
    package = tvmc.compile(model, target="llvm", package_path=str(tmp_path / "p.tar"))
    with pytest.raises(tvmc.TVMCException, match="'image' is not an input of the model"):
        tvmc.run(package, device="cpu", inputs={"image": np.zeros(SHAPE, "float32")})
    with pytest.raises(tvmc.TVMCException, match="compiled for llvm.*run it with device='cpu', or compile the model "
                                                 "for target='cuda'"):
        tvmc.run(package, device="cuda")
    with pytest.raises(tvmc.TVMCException, match="rpc_key='k' is not supported"):
        tvmc.run(package, device="cpu", rpc_key="k")


def test_a_model_drawing_random_numbers_runs_with_its_counter_left_to_the_executor(tmp_path, capsys):
    # the run counter is no input to fill: the executor counts its runs (the first run draws counter 0)
    from tecc.topi.testing import uniform_python  # noqa: PLC0415

    nodes = [helper.make_node("RandomUniformLike", ["x"], ["noise"], seed=6.0),
             helper.make_node("Add", ["x", "noise"], ["y"])]
    graph = helper.make_graph(nodes, "noisy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])])
    path = str(tmp_path / "noisy.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]), path)
    art = str(tmp_path / "noisy.tar")
    code, _, err = _run(capsys, ["compile", "--target", "llvm", "--output", art, path])
    assert code == 0, err
    x = np.ones((2, 5), "float32")
    np.savez(tmp_path / "in.npz", x=x)
    code, _, err = _run(capsys, ["run", "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "o.npz"),
                                 art])
    assert code == 0, err
    assert "tecc_random_counter" not in err
    key = np.array([int(np.array(6.0, "float32").view("uint32")), 0], "uint64")
    with np.load(tmp_path / "o.npz") as got:
        np.testing.assert_allclose(got["output_0"], x + uniform_python(key, 0.0, 1.0, (2, 5), "float32", 1),
                                   rtol=1e-6)
