#!/usr/bin/env bash
# e6grid's one H200 call (issue 15: the energy window's grid edges and the sustained bound's
# soundness), inside one time box (PHASE_S seconds from the start of this script):
#   the default `tensorforge run --target h200 --recalibrate` (timed; every energy window, probes
#   included, appends its raw polls to the trace), the held-out energy suite on that calibration,
#   verify, benchmarks/energy/score.py over both, the GPU energy tests of the counter/integral
#   agreement. At most 8 files come back from $OUT: the two captures, the score, the trace
#   (gzipped), the session log and a tarball of logs, summaries and the calibration.
#   Invoke from the repository root:  TARGET=h200 OUT=... bash benchmarks/energy/e6grid_session.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=/tmp/tf-e6grid
. benchmarks/session_lib.sh
session_deadline "${PHASE_S:-160}"
rm -rf "$WORK" && mkdir -p "$WORK"
exec > >(tee "$OUT/session.log") 2>&1
export TENSORFORGE_HOME=$WORK/home
export TENSORFORGE_ENERGY_TRACE=$WORK/energy-trace.jsonl
nvidia-smi --query-gpu=name,driver_version,power.limit,temperature.gpu --format=csv 2>/dev/null
run_tf() { # $1: capture name, $2: time box; the rest: options
  local name=$1
  timed_run "$@"
  grep -E "^\[.*(calibrated:|energy)" "$WORK/$name.log" | tail -3
  tensorforge verify "$WORK/$name.json" 2>&1 | tail -2
  cp "$WORK/$name.json" "$OUT/" 2>/dev/null
}
echo "== default run --recalibrate ($(left) s left)"
run_tf e6grid-run "$(box 50 110)" --recalibrate
echo "== held-out energy suite, that calibration ($(left) s left)"
run_tf e6grid-energy-heldout "$(box 22 60)" --suite benchmarks/energy/h200-heldout.toml --no-trace --budget 1
echo "== score ($(left) s left)"
python3 benchmarks/energy/score.py "$WORK/e6grid-run.json" "$WORK/e6grid-energy-heldout.json" 2>&1 | tee "$OUT/score.txt"
echo "== GPU energy tests ($(left) s left)"
TENSORFORGE_ENERGY_TRACE=$WORK/energy-trace-tests.jsonl timeout "$(box 4 30)" python3 -m pytest -q -p no:cacheprovider \
  -m gpu tests/test_energy_gpu.py -k counter_and_power >"$WORK/gpu-tests.log" 2>&1
echo "GPU energy tests: exit $?"; tail -8 "$WORK/gpu-tests.log"
cat "$WORK/energy-trace.jsonl" "$WORK/energy-trace-tests.jsonl" 2>/dev/null | gzip >"$OUT/energy-trace.jsonl.gz"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$WORK/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/extras.tar.gz" --exclude=home --exclude='e6grid-*.json' --exclude='energy-trace*' .
echo "done; $(left) s left"
ls -la "$OUT"
