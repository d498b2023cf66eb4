#!/usr/bin/env bash
# One device session on a lent H200 (about 7 minutes; call it with timeout_s=600): install offline, run the GPU tests, the
# default `tensorforge run --target h200` with every mode (burst and sustained regimes, eager and
# CUDA-graph, the per-operator trace window; timed), verify it and write its report, two more
# unchanged runs and the regression gate between them, a cross-target run, and the comparison
# against triton's do_bench (sustained) and do_bench_cudagraph with an L2 flush (graph mode).
# At most 8 files come back from $OUT: the three captures, the report, the do_bench results, the
# session log (everything printed) and extras.tar.gz (summaries, run logs, the cross-target capture).
# Invoke from the repository root on the device machine:  bash benchmarks/h200_session.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
PHASE=${PHASE:-A}
WORK=/tmp/tf-session
# Phase A starts clean; phase B (the next call, on the same warm machine) reuses A's calibration.
[ "$PHASE" = A ] && rm -rf "$WORK"
mkdir -p "$WORK"
exec > >(tee "$OUT/session-$PHASE.log") 2>&1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . -e plugins/tf_gemm \
  -e plugins/tf_conv2d -e plugins/tf_transformer -e plugins/tf_rtx3050 -e plugins/tf_h200 -e plugins/tf_cpu \
  $(ls -d plugins/tf_collective plugins/tf_distributed 2>/dev/null | sed "s/^/-e /") 2>&1 | grep -v -i warning | tail -3
export TENSORFORGE_HOME=$WORK/home
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))'
tensorforge list-plugins

quiet() { grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler"; }
run_h200() {   # $1: capture name; the rest: extra options. The capture goes to $OUT at once.
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  tensorforge run --target h200 -o "$WORK/$name.json" "$@" 2> >(quiet > "$WORK/$name.log"); local rc=$?
  end=$(date +%s.%N)
  echo "$name: rc=$rc, whole command $(python3 -c "print(round($end-$start,1))") s"
  tensorforge verify "$WORK/$name.json" | tail -3
  cp "$WORK/$name.json" "$OUT/" 2>/dev/null
}

if [ "$PHASE" = A ]; then
  echo "== run --target h200 (all modes, trace window, fresh calibration)"
  run_h200 capture-h200 --recalibrate
  cat "$WORK/capture-h200.summary.txt"
  tensorforge report "$WORK/capture-h200.json" -o "$OUT/capture-h200.report.html" --force
  if [ -f benchmarks/eval/h200-suite.toml ]; then
    echo "== evaluation suite (burst eager + graph, reusing the calibration; no sustained regime, no trace)"
    timeout -s INT 240 tensorforge run --target h200 --suite benchmarks/eval/h200-suite.toml --no-telemetry \
      --no-sustained --no-trace --budget 0.3 --cooldown 2 --rest 0.1 -o "$WORK/h200-estimate-eval.json" \
      2> >(quiet > "$WORK/h200-estimate-eval.log") | tail -3
    cp "$WORK/h200-estimate-eval.json" "$OUT/" 2>/dev/null
    tensorforge evaluate "$WORK/h200-estimate-eval.json" --rows > "$WORK/evaluate.txt" 2>&1; tail -30 "$WORK/evaluate.txt"
  fi
  echo "== run --target rtx3050-laptop (measured on the H200: APE withheld, bounds of the h200 target)"
  tensorforge run --target rtx3050-laptop -w gemm_large_square -w gemm_tiny --no-telemetry --no-sustained \
    -o "$WORK/capture-rtx3050-on-h200.json" 2>/dev/null | tail -8
  tar -C "$WORK" -czf "$OUT/extras-A.tar.gz" --exclude=home --exclude='capture-h200.json' --exclude='h200-estimate-eval.json' .
else
  echo "== two unchanged runs (reusing phase A's calibration where the machine kept it) and the gate"
  ls "$TENSORFORGE_HOME"/calibrations 2>/dev/null | head -3
  run_h200 capture-h200-rerun1
  run_h200 capture-h200-rerun2
  tensorforge gate "$WORK/capture-h200-rerun1.json" "$WORK/capture-h200-rerun2.json"; echo "gate rerun1 -> rerun2: exit $?"
  if [ "${DO_BENCH:-1}" = 1 ]; then
    echo "== against triton: do_bench (sustained) and do_bench_cudagraph with an L2 flush (graph mode)"
    python3 benchmarks/bench_vs_do_bench.py --rounds "${ROUNDS:-3}" -o "$OUT/do_bench.json" 2>&1 | quiet | tail -14
  fi
  echo "== GPU tests"; timeout 120 python3 -m pytest -q -m gpu tests 2>&1 | tail -6
  tar -C "$WORK" -czf "$OUT/extras-B.tar.gz" --exclude=home --exclude='capture-h200*.json' .
fi
ls -la "$OUT"
