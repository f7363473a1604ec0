"""The GPU benchmarks' ``--dry-run``: every kernel config built for sm_90 and checked
on the CPU emulation, the tables and result files written, no GPU needed.  Also a
quick run of the CPU operator benchmark (``topi_cpu.py --quick``): every row correct.

The sizes and configs are cut down to keep this under half a minute with a cold
compile cache; ``python benchmarks/gpu_sgemm.py --dry-run`` runs the full set."""
import importlib.util
import json
import os
import warnings

import pytest

#: tests/integration/ -> the repository root -> benchmarks/
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_DIR = os.path.join(ROOT, "benchmarks")


def load(name):
    spec = importlib.util.spec_from_file_location(f"_tecc_bench_{name}", os.path.join(BENCH_DIR, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_main(name, argv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return load(name).main(argv)


def one_file(out_dir, suffix):
    found = [f for f in os.listdir(out_dir) if f.endswith(suffix)]
    assert len(found) == 1, found
    return os.path.join(out_dir, found[0])


def test_sgemm_dry_run(tmp_path, capsys):
    # 48x4x8 does not divide 128: listed as skipped, not a failure
    rc = run_main("gpu_sgemm", ["--dry-run", "--sizes", "128", "--configs", "64x2x8,64x4x8+t+d,128x4x16,48x4x8",
                                "--out", str(tmp_path)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "DRY RUN" in printed and "| n " in printed and "tecc sgemm" in printed
    data = json.load(open(one_file(tmp_path, "_sgemm.json")))
    assert os.path.basename(one_file(tmp_path, "_sgemm.md")).split("_")[1] == "dryrun-sm"
    assert data["device"]["dry_run"] is True and data["device"]["target"] == "cuda -arch=sm_90"
    ran = [r for r in data["sgemm"] if r["variant"] == "tecc sgemm" and "skipped" not in r]
    assert [r["config"] for r in ran] == ["64x2x8", "64x4x8+d+t", "128x4x16"]
    assert all(r["ok"] and r["rel_err"] < 1e-5 and r["ms"] is None for r in ran)
    skipped = [r for r in data["sgemm"] if "skipped" in r]
    assert [r["config"] for r in skipped] == ["48x4x8"] and "ScheduleError" in skipped[0]["skipped"]
    fused = [r for r in data["fused"] if r["variant"].startswith("tecc matmul") and "skipped" not in r]
    assert len(fused) == 3 and all(r["ok"] for r in fused)


def test_norms_dry_run(tmp_path, capsys):
    rc = run_main("gpu_norms", ["--dry-run", "--shapes", "8x1000,4x4096", "--threads", "128,1024",
                                "--out", str(tmp_path)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "Copy bandwidth" in printed and "layernorm" in printed
    data = json.load(open(one_file(tmp_path, "_norms.json")))
    one_file(tmp_path, "_norms.md")
    tecc_rows = [r for r in data["rows"] if r["variant"] == "tecc"]
    assert len(tecc_rows) == 2 * 2 * 2  # shapes x ops x thread counts
    assert all(r["ok"] and r["rel_err"] < 1e-6 for r in tecc_rows)
    refs = [r for r in data["rows"] if r["variant"].startswith("numpy ops")]
    assert len(refs) == 4 and all(r["ok"] for r in refs)


def test_failed_check_sets_exit_code(capsys):
    # a zero tolerance fails every float32 result: the run reports it and returns 1
    rc = run_main("gpu_norms", ["--dry-run", "--shapes", "4x4096", "--threads", "128", "--tol", "0"])
    assert rc == 1
    assert "FAILED" in capsys.readouterr().out


def test_needs_gpu_without_dry_run():
    bench = load("gpu_norms")
    if bench.G.has_gpu():
        pytest.skip("a GPU is present: the real run would start")
    assert bench.main(["--shapes", "4x4096"]) == 2


def test_topi_gpu_dry_run(tmp_path, capsys):
    rc = run_main("topi_gpu", ["--dry-run", "--out", str(tmp_path)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "DRY RUN" in printed and "t(reference) / t(tecc)" in printed
    data = json.load(open(one_file(tmp_path, "_topi.json")))
    one_file(tmp_path, "_topi.md")
    assert data["device"]["dry_run"] is True and data["device"]["target"] == "cuda -arch=sm_90"
    bench = load("topi_gpu")
    # topi_cpu's workloads plus the first conv2d at batch 8; the dry run has a cut-down twin of each
    cpu = load("topi_cpu").WORKLOADS
    batched = "conv2d 56x56x64->64 3x3 batch 8"
    assert list(bench.WORKLOADS) == [*list(cpu)[:1], batched, *list(cpu)[1:]]
    assert bench.WORKLOADS[batched][1] == dict(cpu["conv2d 56x56x64->64 3x3"][1], n=8)
    assert list(bench.DRY_RUN) == list(bench.WORKLOADS)
    assert all(bench.DRY_RUN[n][0] == bench.WORKLOADS[n][0] for n in bench.WORKLOADS)
    assert not [r for r in data["rows"] if "skipped" in r]
    tecc_rows = [r for r in data["rows"] if r["kind"] == "tecc"]
    assert [r["workload"] for r in tecc_rows] == list(bench.DRY_RUN)
    assert all(r["ok"] and r["rel_err"] < 1e-5 and r["ms"] is None for r in tecc_rows)
    assert all(r["schedule"].startswith("topi.cuda.") for r in tecc_rows), [r["schedule"] for r in tecc_rows]
    refs = [r for r in data["rows"] if r["kind"] == "cupy"]  # the cupy formulations, run with numpy
    assert len(refs) == len(tecc_rows) and all(r["ok"] and "dry run" in r["variant"] for r in refs)
    assert [r["workload"] for r in data["ratios"]] == list(bench.DRY_RUN)


def test_topi_gpu_failed_check_sets_exit_code(capsys):
    rc = run_main("topi_gpu", ["--dry-run", "--ops", "softmax", "--tol", "0"])
    assert rc == 1
    assert "FAILED" in capsys.readouterr().out


def test_topi_cpu_quick(tmp_path):
    out = tmp_path / "topi_cpu.json"
    rc = run_main("topi_cpu", ["--quick", "--repeat", "1", "--min-ms", "1", "--out", str(out)])
    rows = json.load(open(out))["rows"]
    assert [r["workload"] for r in rows] == list(load("topi_cpu").QUICK)
    assert not [r for r in rows if "error" in r], [r["error"] for r in rows if "error" in r]
    assert all(r["rel_err"] <= 1e-4 and r["tecc_ms"] > 0 and r["numpy_ms"] > 0 for r in rows)
    assert rc == 0
