#!/usr/bin/env bash
# e7gate's one H200 call (issue 15: an energy gate that gives a verdict; counter and integral
# within 2%), inside one time box (PHASE_S seconds from the start of this script, default 183):
#   1. the default `tensorforge run --target h200 --recalibrate` (timed: the whole command and the
#      energy windows' share; every energy window appends its raw polls to the trace);
#   2. the GPU energy tests of the counter/integral agreement (the large GEMM at the cap over 1.5 s,
#      the tiny GEMM over 10 updates);
#   3. a second unchanged default `run` on that calibration (timed);
#   4. `tensorforge gate --energy` run -> rerun (the energy gate on two unchanged runs);
#   5. benchmarks/energy/score.py over both captures;
#   6. the probe floor GPU test, if the box still holds ~25 s.
# At most 8 files come back from $OUT: the two captures (gzipped), the score, the gate's output,
# the trace (gzipped), the session log and a tarball of logs, summaries and the calibration.
#   Invoke from the repository root:  OUT=... bash benchmarks/energy/e7gate_session.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=/tmp/tf-e7gate
. benchmarks/session_lib.sh
session_deadline "${PHASE_S:-183}"
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
  energy_steps "$WORK/$name.log"
  tensorforge verify "$WORK/$name.json" 2>&1 | tail -1
  gzip -c "$WORK/$name.json" >"$OUT/$name.json.gz"
}
echo "== default run --recalibrate ($(left) s left)"
run_tf e7gate-run "$(box 65 115)" --recalibrate
echo "== GPU energy tests: counter and integral ($(left) s left)"
TENSORFORGE_ENERGY_TRACE=$WORK/energy-trace-tests.jsonl timeout "$(box 55 30)" python3 -m pytest -q -p no:cacheprovider \
  -m gpu tests/test_energy_gpu.py -k counter_and_power >"$WORK/gpu-tests.log" 2>&1
echo "GPU energy tests: exit $?"; grep -E "passed|failed|Error|assert" "$WORK/gpu-tests.log" | tail -8
echo "== second unchanged default run ($(left) s left)"
run_tf e7gate-rerun "$(box 8 60)"
echo "== gate --energy run -> rerun ($(left) s left)"
tensorforge gate --energy "$WORK/e7gate-run.json" "$WORK/e7gate-rerun.json" >"$WORK/gate.txt" 2>&1
echo "gate --energy: exit $?" >>"$WORK/gate.txt"
cat "$WORK/gate.txt" | tail -32 | tee "$OUT/gate.txt"
echo "== score ($(left) s left)"
python3 benchmarks/energy/score.py "$WORK/e7gate-run.json" "$WORK/e7gate-rerun.json" 2>&1 | tee "$OUT/score.txt"
if [ "$(left)" -gt 25 ]; then
  echo "== GPU energy test: the probe's floor ($(left) s left)"
  timeout "$(box 2 40)" python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_energy_gpu.py -k floor \
    >"$WORK/gpu-tests-floor.log" 2>&1
  echo "floor GPU test: exit $?"; tail -3 "$WORK/gpu-tests-floor.log"
fi
cat "$WORK/energy-trace.jsonl" "$WORK/energy-trace-tests.jsonl" 2>/dev/null | gzip >"$OUT/energy-trace.jsonl.gz"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$WORK/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/extras.tar.gz" --exclude=home --exclude='e7gate-*.json' --exclude='energy-trace*' .
echo "done; $(left) s left"
ls -la "$OUT"
