#!/usr/bin/env bash
# One short H200 call (issue 12, the decode graph's launch level; timeout_s <= 200):
#   1. the default `tensorforge run --target h200 --recalibrate` (every mode, trace and energy windows),
#      with the harness's paired warm-up and capture (cuda_graph.LAUNCH_STATE) and the burst pairs'
#      device-side head start; verified and summarised;
#   2. benchmarks/bench_vs_do_bench.py on the decode step: the graph row at both launch levels
#      (do_bench_cudagraph paired vs ours; triton unmodified vs ours after a side-stream warm-up),
#      its own time plan inside its box;
#   3. where >= 40 s are left, a second unchanged run on the cached calibration and the regression
#      gate between the two.
# Each step has a time box so the call ends inside PHASE_S. Invoke from the repository root:
#   OUT=... PHASE_S=190 bash benchmarks/h200_launch_level_session.sh   (host check: TARGET=host-cpu)
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=${WORK:-/tmp/tf-launch-level}
deadline=$(($(date +%s) + ${PHASE_S:-190}))
left() { echo $((deadline - $(date +%s))); }
box() { # box SECONDS_RESERVED_AFTER MAX: a time box that leaves the reserve for later steps
  local t=$(($(left) - $1)); [ "$t" -gt "$2" ] && t=$2; [ "$t" -lt 1 ] && t=1; echo "$t"; }
rm -rf "$WORK" && mkdir -p "$WORK"
export TENSORFORGE_HOME=$WORK/home
exec > >(tee "$OUT/session.log") 2>&1
quiet() { grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv 2>/dev/null
python3 -c 'import torch; print("torch", torch.__version__)'
echo "ready; $(left) s left"

run_once() { # $1: capture name, $2: time box; the rest: extra options
  local name=$1 t=$2; shift 2
  local start end
  start=$(date +%s.%N)
  timeout -s INT "$t" tensorforge run --target "$TARGET" -o "$WORK/$name.json" "$@" \
    >"$WORK/$name.out" 2> >(quiet >"$WORK/$name.log")
  local rc=$?
  end=$(date +%s.%N)
  echo "$name: rc=$rc, whole command $(python3 -c "print(round($end-$start,1))") s (time box $t s)"
  grep -E "calibrated:|bound violations|run took" "$WORK/$name.log" "$WORK/$name.out" | cut -c1-400
  grep -A2 -E "measuring (transformer_decode|gemm_tiny)" "$WORK/$name.log"
  tail -1 "$WORK/$name.log"
  tensorforge verify "$WORK/$name.json" | tail -2
  gzip -c "$WORK/$name.json" >"$OUT/$name.json.gz" 2>/dev/null
}

echo "== 1. run --recalibrate"
run_once run "$(box 70 100)" --recalibrate
cp "$WORK/run.log" "$WORK/run.summary.txt" "$OUT/" 2>/dev/null
if [ "$TARGET" != host-cpu ]; then
  echo "== 2. decode graph row at both launch levels"; echo "$(left) s left"
  t=$(box 44 40)
  rounds=3; [ "$t" -lt 36 ] && rounds=2
  timeout -s INT "$t" python3 benchmarks/bench_vs_do_bench.py -w transformer_decode --rounds $rounds --rest 0.5 \
    --deadline $((t > 20 ? t - 10 : 10)) -o "$OUT/do-bench-decode.json" 2>&1 | quiet | tail -12
fi
echo "== 3. a second unchanged run (cached calibration) and the gate"; echo "$(left) s left"
if [ "$(left)" -ge 40 ]; then
  run_once rerun "$(box 3 55)"
  cp "$WORK/rerun.summary.txt" "$OUT/" 2>/dev/null
  tensorforge gate "$WORK/run.json" "$WORK/rerun.json" | tail -13
  echo "gate run -> rerun: exit ${PIPESTATUS[0]}"
else
  echo "skipped: $(left) s left (< 40)"
fi
echo "done; $(left) s left"
ls -la "$OUT"
