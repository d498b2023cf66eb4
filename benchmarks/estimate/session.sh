#!/usr/bin/env bash
# The estimate's one H200 session (run from the repository root on the device machine):
# calibration incl. the estimate-terms probe sweep, the evaluation suite measured, the probe
# items' kernel names. Everything lands in $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 TENSORFORGE_HOME=/tmp/tf-home
mkdir -p "$TENSORFORGE_HOME"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv | tee "$OUT/gpu.txt"
timeout -s INT 190 tensorforge run --target h200 --suite benchmarks/eval/h200-suite.toml --no-telemetry \
    --budget 0.3 --cooldown 2 --rest 0.1 -o "$OUT/h200-estimate-eval.json" 2>&1 | tee "$OUT/run.log"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$OUT/calibration.json" 2>/dev/null
tensorforge evaluate "$OUT/h200-estimate-eval.json" --rows 2>&1 | tee "$OUT/evaluate.txt"
timeout 55 python3 benchmarks/estimate/probe_kernels.py "$OUT/probe_kernels.json" --deadline-s 35 2>&1 | tail -3
