#!/usr/bin/env bash
# One short device call (timeout_s=200) checking issue 12's remaining goals on a lent H200:
# the whole default `tensorforge run --target h200 --recalibrate` with every mode and the trace
# window, timed (goal: <= 70 s without the energy window), its summary (bound violations in
# both regimes, per operator), then benchmarks/bench_vs_do_bench.py on the workloads that missed
# the 2% agreement before (sustained eager vs do_bench, graph vs do_bench_cudagraph + flush).
# At most 8 files come back from $OUT: the capture, its summary and run log, the do_bench json and
# the session log. Run from the repository root, after the offline install (docs: device2.md):
#   OUT=... bash benchmarks/h200_measure_check.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
TARGET=${TARGET:-h200}
WORK=/tmp/tf-check
rm -rf "$WORK" && mkdir -p "$WORK"
exec > >(tee "$OUT/session.log") 2>&1
export TENSORFORGE_HOME=$WORK/home
nvidia-smi --query-gpu=name,clocks.sm,power.limit,temperature.gpu --format=csv 2>/dev/null
python3 -c 'import torch; print("torch", torch.__version__)'
quiet() { grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler"; }

echo "== run --target $TARGET (all modes, trace window, fresh calibration), timed"
start=$(date +%s.%N)
timeout -s INT "${RUN_LIMIT:-115}" tensorforge run --target "$TARGET" --recalibrate -o "$OUT/capture-$TARGET.json" \
  2> >(quiet > "$OUT/capture-$TARGET.log")
rc=$?
end=$(date +%s.%N)
echo "run: rc=$rc, whole command $(python3 -c "print(round($end-$start,1))") s"
tail -4 "$OUT/capture-$TARGET.log"
grep -E "calibrated:|cooling|run took|VIOLATION|BELOW|violations" "$OUT/capture-$TARGET.log" "$OUT/capture-$TARGET.summary.txt" 2>/dev/null

echo "== against triton on the workloads that missed 2% (and a control)"
timeout -s INT "${BENCH_LIMIT:-70}" python3 benchmarks/bench_vs_do_bench.py --rounds 3 --diagnose \
  -w transformer_decode -w gemm_square_tf32 -w gemm_batched_fp16 -w gemm_tiny -w gemm_large_square \
  -o "$OUT/do_bench.json" 2>&1 | quiet | tail -16
ls -la "$OUT"
