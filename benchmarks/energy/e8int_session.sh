#!/usr/bin/env bash
# e8int's one H200 call (issue 15: counter and power integration within 2% in every window; the
# instantaneous field integrated shifted by its lag behind the counter, docs/energy.md "The e8int
# work"), inside one time box (PHASE_S seconds from the start of this script, default 140):
#   0. the wheels and the editable installs (the copy of the branch this runs in);
#   1. the default `tensorforge run --target h200 --recalibrate` (timed: the whole command, the run's
#      own time and the energy windows' share; every energy window appends its raw polls, now past
#      its end edge for the field's lag, to the trace);
#   2. benchmarks/energy/score.py over the capture, and integral_error.py over the run's trace
#      (with the lag as built, 70 ms);
#   3. the GPU energy tests (tests marked gpu in tests/test_energy_gpu.py: the counter/integral
#      agreement of the large GEMM at the cap and of the tiny GEMM, traced; then the probe's floor
#      where the box still holds > 12 s).
# At most 8 files come back from $OUT: the capture (gzipped), the score, the integral study, the
# trace (gzipped), the session log and a tarball of logs and the calibration.
#   Invoke from the repository root:  OUT=... bash benchmarks/energy/e8int_session.sh
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=/tmp/tf-e8int
. benchmarks/session_lib.sh
session_deadline "${PHASE_S:-140}"
rm -rf "$WORK" && mkdir -p "$WORK"
exec > >(tee "$OUT/session.log") 2>&1
if [ -d ../../.whl ] && ls ../../.whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site ../../.whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . $(ls -d plugins/tf_* | sed "s/^/-e /") 2>&1 |
  grep -v -i warning | tail -3
echo "installed; $(left) s left"
export TENSORFORGE_HOME=$WORK/home
export TENSORFORGE_ENERGY_TRACE=$WORK/energy-trace.jsonl
nvidia-smi --query-gpu=name,driver_version,power.limit,temperature.gpu --format=csv 2>/dev/null
warm_bytecode
name=e8int-run
echo "== default run --recalibrate ($(left) s left)"
timed_run "$name" "$(box 22 110)" --recalibrate
grep -E "calibrated:|run took" "$WORK/$name.log" | tail -2
energy_steps "$WORK/$name.log"
tensorforge verify "$WORK/$name.json" 2>&1 | tail -1
gzip -c "$WORK/$name.json" >"$OUT/$name.json.gz"
echo "== score and the integral study ($(left) s left)"
python3 benchmarks/energy/score.py "$WORK/$name.json" 2>&1 | tee "$OUT/score.txt"
[ -s "$WORK/energy-trace.jsonl" ] && python3 benchmarks/energy/integral_error.py --lag=70 "$WORK/energy-trace.jsonl" >"$OUT/integral-error.txt" 2>&1
grep -E "RMS|within 2%" "$OUT/integral-error.txt"
echo "== GPU energy tests: counter and integral ($(left) s left)"
TENSORFORGE_ENERGY_TRACE=$WORK/energy-trace-tests.jsonl timeout "$(box 3 45)" python3 -m pytest -q -p no:cacheprovider \
  -m gpu tests/test_energy_gpu.py -k counter_and_power >"$WORK/gpu-tests.log" 2>&1
echo "GPU energy tests (counter and integral): exit $?"; grep -E "passed|failed|Error|assert" "$WORK/gpu-tests.log" | tail -8
if [ "$(left)" -gt 12 ]; then
  echo "== GPU energy test: the probe's floor ($(left) s left)"
  timeout "$(box 2 40)" python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_energy_gpu.py -k floor \
    >"$WORK/gpu-tests-floor.log" 2>&1
  echo "GPU energy test (floor): exit $?"; grep -E "passed|failed|Error|assert" "$WORK/gpu-tests-floor.log" | tail -4
else
  echo "GPU energy test (floor): not run, $(left) s left"
fi
cat "$WORK/energy-trace.jsonl" "$WORK/energy-trace-tests.jsonl" 2>/dev/null | gzip >"$OUT/energy-trace.jsonl.gz"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$WORK/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/extras.tar.gz" --exclude=home --exclude=pycache --exclude="$name.json" --exclude='energy-trace*' .
echo "done; $(left) s left"
ls -la "$OUT"
