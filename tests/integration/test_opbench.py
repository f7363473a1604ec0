"""``tecc bench --ops`` (driver/opbench.py): every variant checked against float64 and
timed beside its references, the report as text, HTML, JSON and a roofline, tuned
records, and the user's mistakes as one line."""
import json

import numpy as np
import pytest

from tecc import autotvm, te, topi
from tecc.driver import opbench
from tecc.driver.tvmc import main


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_sizes_parse_per_op_with_flops_and_bytes():
    w = opbench.workloads(("matmul", "conv2d", "softmax", "layernorm"),
                          ("512x256x128", "conv2d:64x56x56-64x3", "softmax:8x1024", "4x768"), "cpu", "float32")
    got = {(x.op, x.size): x for x in w}
    mm = got[("matmul", "512x256x128")]
    assert mm.p == {"m": 512, "n": 256, "k": 128} and mm.flops == 2 * 512 * 256 * 128
    assert mm.bytes == 4 * (512 * 128 + 128 * 256 + 512 * 256)
    conv = got[("conv2d", "64x56x56-64x3")]
    assert (conv.p["ho"], conv.p["wo"], conv.p["pad"]) == (56, 56, 1)
    assert conv.flops == 2 * 64 * 56 * 56 * 64 * 9
    assert ("layernorm", "4x768") in got and ("softmax", "4x768") in got and ("softmax", "8x1024") in got
    assert opbench.parse_size("conv2d", "128x28x28-256x1-s2")["ho"] == 14
    for op, bad, want in (("matmul", "12x", "write N"), ("softmax", "4096", "ROWSxCOLS"),
                          ("conv2d", "64x56", "CxHxW-KxR")):
        with pytest.raises(opbench.BenchError, match=want):
            opbench.parse_size(op, bad)
    with pytest.raises(opbench.BenchError, match="names 'conv2d', which --ops does not include"):
        opbench.workloads(("matmul",), ("conv2d:8x8x8-8x3",), "cpu", "float32")


def test_an_output_seen_through_dlpack_is_checked_like_an_array():
    class DeviceTensor:  # what torch hands back: no .get(), no numpy conversion, but DLPack
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

        def __array__(self, *a, **kw):
            raise TypeError("can't convert cuda:0 device type tensor to numpy")

    (w,) = opbench.workloads(("softmax",), ("softmax:4x64",), "cpu", "float32")
    arrays = opbench._Arrays(w, np)
    good = opbench.softmax_ref(np, arrays.dev[0])
    assert arrays.error(DeviceTensor(good)) < 1e-6
    assert arrays.error(DeviceTensor(good + 1)) > 0.1


def test_cpu_report_checks_times_and_compares_every_variant(tmp_path, capsys):
    js, png = tmp_path / "bench.json", tmp_path / "roofline.png"
    code, out, err = _run(capsys, ["bench", "--ops", "matmul,softmax,layernorm", "--sizes",
                                   "matmul:64,softmax:16x256,layernorm:16x256", "--repeat", "2",
                                   "--json", str(js), "--plot", str(png)])
    assert code == 0, err
    assert "measuring matmul 64 (float32)" in err
    data = json.loads(js.read_text())
    rows = data["rows"]
    assert {r["op"] for r in rows} == {"matmul", "softmax", "layernorm"}
    for r in rows:
        assert r["status"] == "ok" and r["rel_error"] <= 1e-4 and r["ms"] > 0, r
    tecc_rows = [r for r in rows if r["kind"] == "tecc"]
    refs = [r for r in rows if r["kind"] == "reference"]
    assert tecc_rows and any(r["variant"] == "numpy (OpenBLAS)" for r in refs)
    for r in tecc_rows:
        fastest = min(x["ms"] for x in refs if x["op"] == r["op"] and x["size"] == r["size"])
        assert r["x_ref"] == pytest.approx(fastest / r["ms"])
    mm = next(r for r in tecc_rows if r["op"] == "matmul")
    assert mm["gflops"] == pytest.approx(2 * 64 ** 3 / (mm["ms"] * 1e6))
    assert data["facts"]["cpu"]["cores"] >= 1 and data["copy_gbps"] > 0 and data["facts"]["date"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(line.startswith("matmul 64: fastest tecc variant") for line in data["summary"])
    assert "wrote " + str(js) in out


def test_a_dry_run_checks_the_cuda_variants_on_the_emulator(capsys):
    code, out, err = _run(capsys, ["bench", "--ops", "matmul,softmax", "--device", "cuda", "--dry-run",
                                   "--sizes", "matmul:64,softmax:4x128"])
    assert code == 0, err
    assert "tecc sgemm (hand)" in out and "tecc softmax_rows (hand)" in out and "DRY RUN" in out
    assert "FAILED" not in out


def test_a_float16_matmul_has_a_tensor_core_row(capsys):
    code, out, err = _run(capsys, ["bench", "--ops", "matmul", "--device", "cuda", "--dry-run", "--dtype", "float16",
                                   "--sizes", "matmul:64"])
    assert code == 0, err
    assert "tecc tensor cores" in out and "FAILED" not in out


def test_tuned_records_add_a_tuned_row_only_for_their_workload(tmp_path):
    A = te.placeholder((64, 64), name="A")
    B = te.placeholder((64, 64), name="B")
    task = autotvm.task.create("matmul.x86", args=(A, B), target="llvm")
    records = str(tmp_path / "rec.json")
    tuner = autotvm.tuner.RandomTuner(task, seed=0)
    tuner.tune(3, autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=1),
                                         runner=autotvm.LocalRunner(number=1, repeat=1)),
               callbacks=[autotvm.callback.log_to_file(records)])
    opts = opbench.BenchOptions(ops=("matmul",), sizes=("64", "32"), records=records, repeat=2)
    report = opbench.run(opts, log=lambda _: None)
    tuned = {r.size: r for r in report.rows if r.variant == "tecc tuned"}
    assert tuned["64"].status == "ok" and tuned["64"].detail == "matmul.x86, best record"
    assert tuned["32"].status == "skipped" and "holds no record of this workload (matmul.x86)" in tuned["32"].detail
    page = report._repr_html_()
    assert page.count("<tr>") == len(report.rows) + 1 and "tecc tuned" in page


def test_a_variant_that_computes_a_wrong_answer_fails_the_run(monkeypatch, capsys):
    real = opbench._Arrays.error
    monkeypatch.setattr(opbench._Arrays, "error", lambda self, out: 0.5 if out is not None else real(self, out))
    code, out, err = _run(capsys, ["bench", "--ops", "softmax", "--sizes", "4x64", "--repeat", "1"])
    assert code == 1 and "FAILED" in out and "relative error 0.5 > 0.0001" in out


@pytest.mark.parametrize("argv, message", [
    (["bench", "--ops", "gemm"], "unknown op 'gemm' in --ops"),
    (["bench", "--ops", "matmul", "--sizes", "64x"], "is a size of none of matmul"),
    (["bench", "--ops", "matmul", "--dry-run"], "--dry-run checks the CUDA kernels on the CPU emulation"),
    (["bench", "--ops", "matmul", "--compare", "onnxruntime"], "--compare is an option of a model benchmark"),
    (["bench", "--sizes", "64", "m.onnx"], "--sizes goes with --ops"),
    (["bench"], "give a model file (.onnx or a tecc artifact) or --ops"),
])
def test_mistakes_are_one_line(argv, message, capsys):
    code, out, err = _run(capsys, argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.skipif(__import__("tecc").cuda(0).exist, reason="checks the no-GPU message")
def test_cuda_without_a_gpu_says_what_to_do(capsys):
    code, out, err = _run(capsys, ["bench", "--ops", "matmul", "--device", "cuda"])
    assert code == 2 and "there is no CUDA GPU here; use --device cpu, or --dry-run" in err


@pytest.mark.gpu
def test_gpu_bench_times_every_variant_against_cublas(tmp_path, capsys):  # pragma: no cover - GPU machines
    js = tmp_path / "gpu.json"
    code, out, err = _run(capsys, ["bench", "--ops", "all", "--device", "cuda", "--sizes",
                                   "matmul:512,softmax:256x1024,layernorm:256x1024,conv2d:32x28x28-32x3",
                                   "--repeat", "3", "--json", str(js)])
    assert code == 0, err
    data = json.loads(js.read_text())
    assert data["facts"]["gpu"]["name"] and data["peaks"]["fp32_gflops"] > 0 and data["copy_gbps"] > 100
    assert any(r["variant"] == "cuBLAS (cupy.matmul)" and r["ms"] > 0 for r in data["rows"])
    # every row, the references too: torch's outputs were once refused by the check
    # ("can't convert cuda:0 device type tensor to numpy") and only tecc's rows were asserted
    assert all(r["status"] == "ok" for r in data["rows"]), data["rows"]
    np.testing.assert_array_less(0, [r["ms"] for r in data["rows"] if r["status"] == "ok"])
