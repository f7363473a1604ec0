"""The GPU benchmarks' ``--dry-run``: every kernel config built for sm_90 and checked
on the CPU emulation, the tables and result files written, no GPU needed.  Also a
quick run of the CPU operator benchmark (``topi_cpu.py --quick``): every row correct.

The sizes and configs are cut down to keep this under half a minute with a cold
compile cache; ``python benchmarks/gpu_sgemm.py --dry-run`` runs the full set."""
import importlib.util
import json
import os
import re
import warnings

import pytest

import tecc
import tecc.runtime.cuda_module

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
    rc = run_main("gpu_sgemm", ["--dry-run", "--sizes", "128", "--configs", "64x2x8,64x4x8+t+d,128x4x16,48x4x8,64x4x8+t+d+r",
                                "--out", str(tmp_path)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "DRY RUN" in printed and "| n " in printed and "tecc sgemm" in printed
    data = json.load(open(one_file(tmp_path, "_sgemm.json")))
    assert os.path.basename(one_file(tmp_path, "_sgemm.md")).split("_")[1] == "dryrun-sm"
    assert data["device"]["dry_run"] is True and data["device"]["target"] == "cuda -arch=sm_90"
    ran = [r for r in data["sgemm"] if r["variant"] == "tecc sgemm" and "skipped" not in r]
    assert [r["config"] for r in ran] == ["64x2x8", "64x4x8+d+t", "128x4x16", "64x4x8+d+r+t"]
    assert all(r["ok"] and r["rel_err"] < 1e-5 and r["ms"] is None for r in ran)
    skipped = [r for r in data["sgemm"] if "skipped" in r]
    assert [r["config"] for r in skipped] == ["48x4x8"] and "ScheduleError" in skipped[0]["skipped"]
    fused = [r for r in data["fused"] if r["variant"].startswith("tecc matmul") and "skipped" not in r]
    assert len(fused) == 4 and all(r["ok"] for r in fused)


def test_narrow_weights_dry_run(tmp_path, capsys):
    """gpu_narrow: int4 (blocked) and float8 weights through the model path, one kernel
    each, their params a byte an element (and the scales), right against float64."""
    rc = run_main("gpu_narrow", ["--dry-run", "--sizes", "128x96", "--batch", "1,3", "--out", str(tmp_path)])
    assert rc == 0
    assert "narrow weights against cuBLAS" in capsys.readouterr().out
    data = json.load(open(one_file(tmp_path, "_narrow.json")))
    one_file(tmp_path, "_narrow.md")
    rows = data["rows"]
    tecc_rows = [r for r in rows if r["variant"] == "tecc"]
    assert len(tecc_rows) == 2 * 2 and all(r["ok"] and r["kernels"] == 1 for r in tecc_rows)
    assert all(r["weight_bytes"] < 128 * 96 * 4 / 3 for r in tecc_rows)  # not folded into float32
    assert all(r["ok"] for r in rows) and {r["variant"] for r in rows} == {"tecc", "cuBLAS fp32", "cuBLAS fp16"}


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


def test_tune_gpu_dry_run(tmp_path, capsys):
    # the smallest run that still tunes every part: SGEMM 64, one conv2d layer, 2 trials
    # a task (one batch of the 2 build workers; plan_size 64: no model fit)
    small = ["--dry-run", "--sgemm-size", "64", "--convs", "56x56x64->64 3x3", "--sgemm-trials", "2",
             "--conv-trials", "2", "--hgemm-trials", "2", "--plan-size", "64", "--n-parallel", "2"]
    rc = run_main("tune_gpu", small + ["--tasks", "sgemm,dense,conv,hgemm", "--trials", "2", "--out", str(tmp_path)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "DRY RUN" in printed and "## Tuning runs" in printed and "dry run: not judged" in printed
    data = json.load(open(one_file(tmp_path, "_tune.json")))
    one_file(tmp_path, "_tune.md")
    assert data["device"]["dry_run"] is True and data["device"]["target"] == "cuda -arch=sm_90"
    assert [(t["task"], t["trials_logged"], t["trials_measured_now"]) for t in data["tunings"]] == [
        ("sgemm.cuda", 2, 2), ("dense_large_batch.cuda", 2, 2), ("dense_tensorcore.cuda", 2, 2),
        ("conv2d_nchw.cuda", 2, 2)]
    assert all(t["emulated"] and t["valid"] >= 1 and len(t["curve_gflops"]) == 2 for t in data["tunings"])
    # every tuned kernel (the best of its log, under apply_history_best) and every default is correct
    tecc_rows = [r for r in data["sgemm"] + data["conv2d"] if r.get("kind") == "tecc"]
    assert not [r for r in data["sgemm"] + data["conv2d"] if "skipped" in r and r.get("kind") != "torch"]
    assert sorted((r.get("task"), r["tuned"]) for r in tecc_rows) == sorted(
        (t, tuned) for t in ("sgemm.cuda", "dense_large_batch.cuda", "conv2d_nchw.cuda") for tuned in (True, False))
    assert all(r["ok"] and r["rel_err"] < 1e-5 and r["ms"] is None for r in tecc_rows)
    tuned = {r["task"]: r for r in tecc_rows if r["tuned"]}
    best = {t["task"]: t["best_config_tuning"] for t in data["tunings"]}
    assert {k: r["config"] for k, r in tuned.items()} == {k: v for k, v in best.items() if k in tuned}
    # the tensor-core part: its own table, tuned and fallback correct, no FP32 peak share
    half = [r for r in data["hgemm"] if r.get("kind") == "tecc"]
    assert sorted(r["tuned"] for r in half) == [False, True] and all(r["ok"] and r["rel_err"] < 1e-5 for r in half)
    assert [r["config"] for r in half if r["tuned"]] == [best["dense_tensorcore.cuda"]]
    assert all(r["peak_share"] is None for r in data["hgemm"]) and "## HGEMM 64x64x64" in printed
    torch_rows = [r for r in data["conv2d"] if r.get("kind") == "torch"]
    assert [r["skipped"] for r in torch_rows] == ["dry run"]
    png = data["png"]
    assert png is None or os.path.exists(tmp_path / png)
    log_dir = tmp_path / "tune_gpu_logs"
    assert sorted(os.listdir(log_dir)) == ["tune_gpu.jsonl", "tune_gpu_wall.json"]

    # again on the same log, as after a killed run (its last record half written): the
    # logged trials count, the deadline (already past) stops any new one, the best are
    # applied from the log
    with open(log_dir / "tune_gpu.jsonl", "a") as fh:
        fh.write('{"input": ["cuda -arch=sm_90", "sgemm.cu')
    again = tmp_path / "again"
    rc = run_main("tune_gpu", small + ["--tasks", "sgemm,dense", "--trials", "3", "--deadline-min", "1e-6",
                                       "--out", str(again), "--log-dir", str(log_dir)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "cut a half-written last record" in printed and "tuning stopped at --deadline-min" in printed
    data = json.load(open(one_file(again, "_tune.json")))
    notes = [(t["task"], t["trials_logged"], t["trials_measured_now"], t.get("note", "")) for t in data["tunings"]]
    assert notes == [("sgemm.cuda", 2, 0, "all 2 trials already in the log"),
                     ("dense_large_batch.cuda", 2, 0, "not tuned: --deadline-min reached")]
    assert [t["invocations"] for t in data["tunings"]] == [1, 1] and data["conv2d"] == []
    again_tuned = {r["task"]: r["config"] for r in data["sgemm"] if r.get("tuned") and "ok" in r}
    assert again_tuned == {k: best[k] for k in ("sgemm.cuda", "dense_large_batch.cuda")}
    assert all(r["ok"] for r in data["sgemm"])


def test_models_gpu_dry_run_builds_every_model_for_sm90(capsys):
    # the decoder (opset 24: RMSNormalization, RotaryEmbedding, Attention) and the
    # encoder; where torch is installed its node-by-node reference is checked too
    rc = run_main("models_gpu", ["--dry-run", "--models", "encoder,decoder", "--batch", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    # 22 before reshape views and sinking, 15 before q, k and v were one dense and the
    # head split and merge ran inside the products (GPU targets: CombineParallelDense,
    # fuse_ops' fuse_inputs)
    assert "encoder batch 1: 9 kernels built for cuda -arch=sm_90" in out
    assert "decoder batch 1: 12 kernels built for cuda -arch=sm_90" in out  # 22 before the same
    assert "FAILED" not in out
    # the audit: the encoder's products fill the grid now (8 blocks each before), and
    # its three small transposes (8192 elements, which the audit listed) run inside them
    audit = [ln for ln in out.splitlines() if ln.startswith("  audit: ")]
    assert not [ln for ln in audit if "dense" in ln or "batch_matmul" in ln], audit
    assert all(re.search(r"audit: \S+_kernel\d+: ", ln) for ln in audit)


def test_models_gpu_dry_run_builds_the_float16_bert_layer_on_tensor_cores(capsys):
    """bert16 (asked for by name): a BERT-base encoder layer in float16, its six
    products on tensor cores, every grid filled by the fallback tiles."""
    rc = run_main("models_gpu", ["--dry-run", "--models", "bert16", "--batch", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "bert16 batch 1: 9 kernels built for cuda -arch=sm_90" in out and "FAILED" not in out
    # (resnet50_fp16 builds too -- its convolutions after the first as implicit GEMMs -- in
    # about 15 s: left to `models_gpu.py --dry-run --models resnet50_fp16`)
    audit = [ln for ln in out.splitlines() if ln.startswith("  audit: ")]
    assert not [ln for ln in audit if "dense" in ln or "batch_matmul" in ln], audit


def test_models_gpu_kernel_audit_names_what_a_gpu_pays_for():
    bench = load("models_gpu")

    class Lib:
        kernel_resources = {
            "small_kernel0": tecc.runtime.cuda_module.KernelResources(registers=32),
            "heavy_kernel0": tecc.runtime.cuda_module.KernelResources(registers=168, spill_store_bytes=8),
            "fine_kernel0": tecc.runtime.cuda_module.KernelResources(registers=64)}

        @staticmethod
        def launch_dims():
            return [("f", "small_kernel0", (8, 1, 1), (32, 1, 1)), ("g", "heavy_kernel0", (512, 1, 1), (256, 1, 1)),
                    ("h", "fine_kernel0", (132, 1, 1), (128, 1, 1))]

    assert bench.kernel_audit(Lib()) == [("heavy_kernel0", ["spills 8 B", "168 registers"]),
                                         ("small_kernel0", ["8 blocks", "32 threads a block"])]


def test_models_gpu_refuses_unknown_models_and_needs_a_gpu(capsys):
    bench = load("models_gpu")
    assert bench.main(["--models", "resnet51"]) == 2
    assert "unknown model(s) ['resnet51']" in capsys.readouterr().err
    import tecc
    if tecc.cuda(0).exist:  # pragma: no cover - GPU machines time the model instead
        return
    assert bench.main(["--models", "encoder", "--batch", "1"]) == 2
    assert "use --dry-run" in capsys.readouterr().err


def test_models_gpu_profile_table_lists_the_costliest_functions():
    from tecc.runtime.graph_executor import GraphProfile, NodeTime

    bench = load("models_gpu")
    prof = GraphProfile([NodeTime(0, "a", "fused_dense", (4, 4), "float32", (3e-6, 3e-6)),
                         NodeTime(1, "b", "fused_add", (4, 4), "float32", (1e-6, 1e-6)),
                         NodeTime(2, "c", "fused_dense", (4, 4), "float32", (4e-6, 4e-6))])
    text = bench.profile_markdown("encoder", 1, prof)
    assert text.splitlines()[0] == "### encoder batch 1: 3 kernel calls, 0.008 ms of GPU time (each call timed alone)"
    assert "| fused_dense | 2 | 0.0070 | 87.5% |" in text and text.index("fused_dense") < text.index("fused_add")


def test_hgemm_dry_run(tmp_path, capsys):
    """Tensor-core GEMM: the fallback and a hand-picked config run on the emulator; a
    config whose tile does not divide the size is listed with the template's reason."""
    rc = run_main("gpu_hgemm", ["--dry-run", "--sizes", "64", "--configs", "fallback,2x2x2x2c2v8,2x2x4x4c2v8",
                                "--out", str(tmp_path)])
    assert rc == 0
    assert "HGEMM" in capsys.readouterr().out
    data = json.load(open(one_file(tmp_path, "_hgemm.json")))
    ran = [r for r in data["hgemm"] if r["variant"] == "tecc dense_tensorcore" and "skipped" not in r]
    assert [r["config"] for r in ran] == ["fallback", "2x2x2x2c2v8m16"]
    assert all(r["ok"] and r["rel_err"] < 1e-5 for r in ran)
    skipped = [r for r in data["hgemm"] if "skipped" in r]
    assert [r["config"] for r in skipped] == ["2x2x4x4c2v8m16"]
    assert "its block tile does not divide (batch, out_dim) = (64, 64)" in skipped[0]["skipped"]


def test_bfloat16_gemm_dry_run(tmp_path, capsys):
    """--dtype bfloat16: bfloat16 operands (ml_dtypes on the host) through the same
    template, checked against the float32 product of their values; its own files."""
    rc = run_main("gpu_hgemm", ["--dry-run", "--dtype", "bfloat16", "--sizes", "64", "--configs",
                                "fallback,2x2x2x2c2v8", "--out", str(tmp_path)])
    assert rc == 0
    assert "HGEMM (bfloat16 operands" in capsys.readouterr().out
    data = json.load(open(one_file(tmp_path, "_hgemm_bf16.json")))
    assert data["dtype"] == "bfloat16"
    ran = [r for r in data["hgemm"] if r["variant"] == "tecc dense_tensorcore"]
    assert [r["config"] for r in ran] == ["fallback", "2x2x2x2c2v8m16"]
    assert all(r["ok"] and r["rel_err"] < 1e-5 for r in ran)
