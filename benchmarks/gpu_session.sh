#!/usr/bin/env bash
# One device call of a GPU session: install, the gpu-marked tests and the GPU
# benchmarks, each step under its own time limit so that one hang cannot eat the
# call, everything packed into one archive under $OUT (the device tool returns at
# most 8 files).  Run from the repository root on the GPU box, with `.whl` carried
# (see benchmarks/README.md, "Running on the GPU box"):
#
#   bash benchmarks/gpu_session.sh STEP[:SECONDS] ...
#
# Steps: tests, sgemm, hgemm (float16 GEMM on tensor cores vs cuBLAS), norms, narrow (int4/float8 weights:
# gpu_narrow.py), topi, models (models_gpu.py: whole models vs PyTorch eager and onnxruntime),
# models-notophub (the same without tecc's reference configs, TECC_TOPHUB=off: ResNet-50 at batch 1
# unless NOTOPHUB_ARGS says otherwise), opbench (tecc bench --ops all), notebooks (every notebook executed on
# the GPU; the box has no ipykernel/nbclient wheels unless fetch-wheels.sh was given them), tune-sgemm,
# tune-dense, tune-conv, tune-hgemm (dense_tensorcore.cuda, float16 on tensor cores), tune-report.
# Example (a 6-minute call): bash benchmarks/gpu_session.sh tests:100 sgemm:60 norms:40 topi:80
# Extra arguments for a step's script: SGEMM_ARGS, HGEMM_ARGS, NORMS_ARGS, NARROW_ARGS, TOPI_ARGS, MODELS_ARGS,
# TUNE_ARGS.
# The tuning log lives in .tunelogs/ (carry it between calls; it is copied back).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpu_session_out}
W=$OUT/session
mkdir -p "$W" .tunelogs
summary=$OUT/summary.log
say() { echo "$*" | tee -a "$summary"; }

t0=$(date +%s)
# a fresh box has no tuning log: start from the newest committed one (benchmarks/results/
# *_tune_records.jsonl.gz), less the trials a since-fixed builder bug failed, so that tuning
# measures only what is new (SEED_LOG= names another, SEED_LOG=none starts empty)
seed=${SEED_LOG:-$(ls benchmarks/results/*_tune_records.jsonl.gz 2>/dev/null | sort | tail -n 1)}
if [ ! -s .tunelogs/tune_gpu.jsonl ] && [ -n "$seed" ] && [ -f "$seed" ]; then
    zcat "$seed" | grep -v 'load_module: no file' > .tunelogs/tune_gpu.jsonl
    say "== tuning log seeded from $seed: $(wc -l < .tunelogs/tune_gpu.jsonl) records"
fi
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$W/install.log" 2>&1 || say "install FAILED (see install.log)"
say "== $(date -u +%FT%TZ) installed in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv 2>&1 | tee -a "$summary"
python3 -c "import cupy, tecc; print('cupy', cupy.__version__, 'nvrtc', cupy.cuda.nvrtc.getVersion(), 'runtime', cupy.cuda.runtime.runtimeGetVersion(), 'tecc gpu', tecc.cuda(0).exist)" 2>&1 | tee -a "$summary"
# tensor-core kernels include mma.h, whose crt/mma.h comes in the nvidia-cuda-crt wheel (fetch-wheels.sh nvidia-cuda-crt)
python3 -c "import os; from tecc.cuda_codegen import cuda_include_dirs as d; ok = [x for x in d() if os.path.isfile(os.path.join(x, 'crt', 'mma.h'))]; print('tensor-core headers (crt/mma.h):', ok[0] if ok else 'MISSING: wmma kernels will not compile; fetch nvidia-cuda-crt')" 2>&1 | tee -a "$summary"

run_step() {  # name seconds command...
    local name=$1 secs=$2; shift 2
    local s=$(date +%s)
    timeout -k 10 "$secs" "$@" >"$W/$name.log" 2>&1
    local rc=$?
    say "== step $name: rc=$rc in $(( $(date +%s) - s )) s (limit $secs)"
    tail -n 25 "$W/$name.log" | tee -a "$summary" >/dev/null
    # packed after every step: a call cut short by its limit still returns what ran
    cp .tunelogs/* "$W/" 2>/dev/null
    tar czf "$OUT/session.tgz" -C "$OUT" session
}

for spec in "$@"; do
    step=${spec%%:*}; secs=${spec#*:}; [ "$secs" = "$spec" ] && secs=120
    case $step in
        tests) run_step tests "$secs" python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 --timeout 90 tests ;;
        sgemm) run_step sgemm "$secs" python3 benchmarks/gpu_sgemm.py --out "$W" ${SGEMM_ARGS:-} ;;
        hgemm) run_step hgemm "$secs" python3 benchmarks/gpu_hgemm.py --out "$W" ${HGEMM_ARGS:-} ;;
        bgemm) run_step bgemm "$secs" python3 benchmarks/gpu_hgemm.py --dtype bfloat16 --out "$W" ${BGEMM_ARGS:-} ;;
        norms) run_step norms "$secs" python3 benchmarks/gpu_norms.py --out "$W" ${NORMS_ARGS:-} ;;
        narrow) run_step narrow "$secs" python3 benchmarks/gpu_narrow.py --out "$W" ${NARROW_ARGS:-} ;;
        topi) run_step topi "$secs" python3 benchmarks/topi_gpu.py --out "$W" ${TOPI_ARGS:-} ;;
        opbench) run_step opbench "$secs" python3 -m tecc.driver.tvmc bench --ops all --device cuda \
                --json "$W/$(date -u +%F)_opbench.json" --plot "$W/$(date -u +%F)_opbench.png" ${OPBENCH_ARGS:-} ;;
        models) run_step models "$secs" python3 benchmarks/models_gpu.py --out "$W" ${MODELS_ARGS:-} ;;
        models-notophub) mkdir -p "$W/notophub"
            run_step models-notophub "$secs" env TECC_TOPHUB=off python3 benchmarks/models_gpu.py --out "$W/notophub" \
                ${NOTOPHUB_ARGS:---models resnet50 --batch 1 --rounds 6} ;;
        notebooks) run_step notebooks "$secs" python3 -m pytest -q -p no:cacheprovider -n 3 \
                tests/integration/test_notebooks.py ;;
        tune-sgemm|tune-dense|tune-conv|tune-hgemm)
            run_step "$step" "$secs" python3 benchmarks/tune_gpu.py --tasks "${step#tune-}" \
                --deadline-min "$(python3 -c "print(round($secs * 0.6 / 60, 2))")" --log-dir .tunelogs --out "$W" ${TUNE_ARGS:-} ;;
        tune-report) run_step tune-report "$secs" python3 benchmarks/tune_gpu.py --no-tuning --log-dir .tunelogs --out "$W" ${TUNE_ARGS:-} ;;
        *) say "unknown step $step" ;;
    esac
done
cp .tunelogs/* "$W/" 2>/dev/null
tar czf "$OUT/session.tgz" -C "$OUT" session && rm -rf "$W"
say "== done in $(( $(date +%s) - t0 )) s"
