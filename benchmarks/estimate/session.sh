#!/usr/bin/env bash
# The estimate's one H200 session (run from the repository root on the device machine):
# calibration incl. the estimate-terms probe sweep (eager and CUDA-graph samples), the evaluation
# suite measured in the burst regime (eager and graph modes), then, with the time left before
# KERNELS_BY seconds, the kernel names of the probe items an earlier trace does not hold.
# Everything lands in $OUT. TARGET / SUITE / RUN_S / KERNELS_BY override the defaults (a local
# dry run: TARGET=host-cpu SUITE=<a small suite> RUN_S=120 KERNELS_BY=0).
set -uo pipefail
export PYTHONUNBUFFERED=1 TENSORFORGE_HOME=${TENSORFORGE_HOME:-/tmp/tf-home}
TARGET=${TARGET:-h200}
SUITE=${SUITE:-benchmarks/eval/h200-suite.toml}
RUN_S=${RUN_S:-200}
KERNELS_BY=${KERNELS_BY:-250}
mkdir -p "$TENSORFORGE_HOME"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv 2>&1 | tee "$OUT/gpu.txt"
timeout -s INT "$RUN_S" tensorforge run --target "$TARGET" --suite "$SUITE" --no-telemetry --no-sustained \
    --no-trace --budget 0.3 --cooldown 2 --rest 0.1 -o "$OUT/$TARGET-estimate-eval.json" 2>&1 | tee "$OUT/run.log"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$OUT/calibration.json" 2>/dev/null
tensorforge evaluate "$OUT/$TARGET-estimate-eval.json" --rows 2>&1 | tee "$OUT/evaluate.txt"
left=$((KERNELS_BY - SECONDS))
echo "session at ${SECONDS} s; ${left} s left for the probe kernel trace"
if [ "$left" -gt 20 ]; then
    timeout "$left" python3 benchmarks/estimate/probe_kernels.py "$OUT/probe_kernels.json" \
        --skip benchmarks/results/h200-probe-kernels.json --deadline-s $((left - 12)) 2>&1 | tail -3
fi
