#!/usr/bin/env bash
# One H200 call (issue 13, helper estimate3): a fresh calibration with the reduced estimate-terms
# plan (graph-only timing of the device items, tensorforge/estimate/probe_plan.py), the
# evaluation suite measured on it (burst eager + graph, as the closing session's suite run), and
# `tensorforge evaluate` on the capture. Everything lands in $OUT: the capture, the calibration
# (per-probe wall times under probes.estimate-terms.details.points[].wall_s), the run log and
# the evaluation table. RUN_S bounds the run (the call's timeout leaves room for the install).
# A local dry run of the plumbing: TARGET=host-cpu SUITE=benchmarks/eval/host-cpu-suite.toml OUT=/tmp/x bash ...
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
SUITE=${SUITE:-benchmarks/eval/h200-suite.toml}
WORK=/tmp/tf-estimate3
rm -rf "$WORK" && mkdir -p "$WORK"
export TENSORFORGE_HOME=$WORK/home
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv 2>&1 |
  tee "$OUT/gpu.txt"
date -u +"%Y-%m-%dT%H:%M:%SZ" | tee -a "$OUT/gpu.txt"
timeout -s INT "${RUN_S:-140}" tensorforge run --target "$TARGET" --suite "$SUITE" --recalibrate --no-telemetry \
  --no-sustained --no-trace --no-energy --budget 0.3 --cooldown 2 --rest 0.1 -o "$OUT/estimate3-$TARGET-eval.json" 2>&1 |
  grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler" >"$OUT/run.log"
echo "run rc=${PIPESTATUS[0]} after $(($(date +%s) - start)) s"
grep -E "calibrat|run took|fitting" "$OUT/run.log" | head -20
cp "$TENSORFORGE_HOME"/calibrations/*.json "$OUT/estimate3-$TARGET-calibration.json" 2>/dev/null
tensorforge evaluate "$OUT/estimate3-$TARGET-eval.json" --rows >"$OUT/evaluate.txt" 2>&1
sed -n 1,30p "$OUT/evaluate.txt"
echo "session took $(($(date +%s) - start)) s"
