#!/usr/bin/env bash
# e8graph's one H200 call (issue 15: host-bound workloads' energy windows as CUDA-graph replays),
# inside one time box (PHASE_S seconds from the start of this script, default 235):
#   1. the default `tensorforge run --target h200 --recalibrate` (timed: the whole command and the
#      energy windows' share; every energy window appends its raw polls to the trace);
#   2. the held-out energy suite on that calibration (benchmarks/energy/h200-heldout.toml, as
#      benchmarks/h200_session.sh phase A runs it);
#   3. a second unchanged default `run` on that calibration (timed);
#   4. `tensorforge gate --energy` run -> rerun (the energy gate on two unchanged runs);
#   5. benchmarks/energy/score.py over run + held-out and over the rerun; rescore.py over all three;
#   6. the GPU test of a tiny GEMM's graph window, if the box still holds ~20 s.
# At most 8 files come back from $OUT: the three captures (gzipped), the score, the gate's output,
# the session log and a tarball of logs, the trace and the calibration.
#   Invoke from the repository root:  OUT=... bash benchmarks/energy/e8graph_session.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=/tmp/tf-e8graph
. benchmarks/session_lib.sh
session_deadline "${PHASE_S:-235}"
rm -rf "$WORK" && mkdir -p "$WORK"
exec > >(tee "$OUT/session.log") 2>&1
export TENSORFORGE_HOME=$WORK/home
export TENSORFORGE_ENERGY_TRACE=$WORK/energy-trace.jsonl
nvidia-smi --query-gpu=name,driver_version,power.limit,temperature.gpu --format=csv 2>/dev/null
warm_bytecode
run_tf() { # $1: capture name, $2: time box; the rest: options
  local name=$1
  timed_run "$@"
  grep -E "calibrated:|run took" "$WORK/$name.log" | tail -2
  grep -E "energy window:" "$WORK/$name.log"
  energy_steps "$WORK/$name.log"
  tensorforge verify "$WORK/$name.json" 2>&1 | tail -1
  gzip -c "$WORK/$name.json" >"$OUT/$name.json.gz"
}
echo "== default run --recalibrate ($(left) s left)"
run_tf e8graph-run "$(box 105 115)" --recalibrate
echo "== held-out energy suite on that calibration ($(left) s left)"
run_tf e8graph-heldout "$(box 50 60)" --suite benchmarks/energy/h200-heldout.toml --no-trace --budget 1
echo "== second unchanged default run ($(left) s left)"
run_tf e8graph-rerun "$(box 6 60)"
echo "== gate --energy run -> rerun ($(left) s left)"
tensorforge gate --energy "$WORK/e8graph-run.json" "$WORK/e8graph-rerun.json" >"$WORK/gate.txt" 2>&1
echo "gate --energy: exit $?" >>"$WORK/gate.txt"
tail -32 "$WORK/gate.txt" | tee "$OUT/gate.txt"
echo "== score ($(left) s left)"
{
  echo "# run + held-out (one calibration)"
  python3 benchmarks/energy/score.py "$WORK/e8graph-run.json" "$WORK/e8graph-heldout.json" 2>&1
  echo; echo "# rerun"
  python3 benchmarks/energy/score.py "$WORK/e8graph-rerun.json" 2>&1
  echo; echo "# rescore (time and power parts)"
  python3 benchmarks/energy/rescore.py "$WORK/e8graph-run.json" "$WORK/e8graph-heldout.json" "$WORK/e8graph-rerun.json" 2>&1
} | tee "$OUT/score.txt"
if [ "$(left)" -gt 20 ]; then
  echo "== GPU energy test: a tiny GEMM's graph window at the device's pace ($(left) s left)"
  timeout "$(box 4 30)" python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_energy_gpu.py -k graph_window \
    >"$WORK/gpu-test-graph.log" 2>&1
  echo "graph-window GPU test: exit $?"; grep -E "passed|failed|Error|assert" "$WORK/gpu-test-graph.log" | tail -6
fi
gzip -c "$WORK/energy-trace.jsonl" >"$WORK/energy-trace.jsonl.gz" 2>/dev/null
cp "$TENSORFORGE_HOME"/calibrations/*.json "$WORK/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/extras.tar.gz" --exclude=home --exclude=pycache --exclude='e8graph-*.json' --exclude=energy-trace.jsonl .
echo "done; $(left) s left"
ls -la "$OUT"
