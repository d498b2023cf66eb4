#!/usr/bin/env bash
# One device call for the energy ESTIMATE (issue 15, helpers e6est, e7est): a fresh calibration with the
# default suite, the held-out energy suite on that calibration, a second default run on the cached
# calibration (a second sample of the host-bound windows: their time varies from run to run), then
# the score (score.py) and the estimate's time/power split (rescore.py), offline on those captures.
# Each step has a time box so the call ends inside PHASE_S seconds; what is done lands in $OUT:
#   default.json.gz, heldout.json.gz, rerun.json.gz, score.txt, session.log, extras.tar.gz
#   (logs, summaries, the calibration).
#   OUT=... PHASE_S=185 bash benchmarks/energy/estimate_session.sh      (host check: TARGET=host-cpu)
#   NO_RERUN=1 skips the rerun (a call too short for it: default ~90 s + held-out ~41 s on the H200)
#   CHECK_SUITE=benchmarks/energy/h200-vector-check.toml runs that suite on the same calibration after
#   the held-out one (check.json.gz), scored apart (e7est: depthwise shapes no probe or scored run had)
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=/tmp/tf-estimate
rm -rf "$WORK" && mkdir -p "$WORK"
export TENSORFORGE_HOME=$WORK/home
. benchmarks/session_lib.sh
session_deadline "${PHASE_S:-185}"
exec > >(tee "$OUT/session.log") 2>&1
warm_bytecode
echo "$(left) s left"
run_one() { # $1 name, $2 time box; the rest: options
  local name=$1
  timed_run "$@"
  echo "$(left) s left"
  grep -E "^\[.*(calibrated:|run took)" "$WORK/$name.log" | tail -3
  grep -E "run took" "$WORK/$name.log" | tail -1
  [ -f "$WORK/$name.json" ] && tensorforge verify "$WORK/$name.json" | tail -2
  [ -f "$WORK/$name.json" ] && gzip -c "$WORK/$name.json" >"$OUT/$name.json.gz"
}
echo "== default suite, fresh calibration (energy windows; no trace, budget 1 as the energy sessions)"
run_one default "$(box 50 110)" --recalibrate --no-trace --budget 1
echo "== held-out energy suite, that calibration"
run_one heldout "$(box 8 60)" --suite benchmarks/energy/h200-heldout.toml --no-trace --budget 1
if [ -n "${CHECK_SUITE:-}" ] && [ "$(left)" -ge 25 ]; then
  echo "== check suite $CHECK_SUITE, that calibration (scored apart)"
  run_one check "$(box 5 40)" --suite "$CHECK_SUITE" --no-trace --budget 1
fi
if [ -z "${NO_RERUN:-}" ] && [ "$(left)" -ge 40 ]; then
  echo "== the default suite again on the cached calibration (a second sample of every window)"
  run_one rerun "$(box 5 60)" --no-trace --budget 1
fi
echo "== score"
caps=$(ls "$WORK"/default.json "$WORK"/heldout.json 2>/dev/null)
{
  echo "# score.py (run + held-out)"; python3 benchmarks/energy/score.py $caps
  echo; echo "# rescore.py: time and power parts of each estimate's error (run + held-out)"; python3 benchmarks/energy/rescore.py $caps
  if [ -f "$WORK/check.json" ]; then
    echo; echo "# check suite (scored apart): score.py"; python3 benchmarks/energy/score.py "$WORK/check.json"
    echo; echo "# check suite: rescore.py"; python3 benchmarks/energy/rescore.py "$WORK/check.json"
  fi
  if [ -f "$WORK/rerun.json" ]; then
    echo; echo "# rerun (cached calibration): score.py"; python3 benchmarks/energy/score.py "$WORK/rerun.json"
    echo; echo "# rerun: rescore.py"; python3 benchmarks/energy/rescore.py "$WORK/rerun.json"
  fi
} >"$OUT/score.txt" 2>&1
cat "$OUT/score.txt"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$WORK/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/extras.tar.gz" --exclude=./home --exclude=./default.json --exclude=./heldout.json \
  --exclude=./rerun.json --exclude=./check.json --exclude=./pycache .
echo "done; $(left) s left"
ls -la "$OUT"
