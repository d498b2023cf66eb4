#!/usr/bin/env bash
# measure3's one H200 call (issue 12, timeout_s <= 200): the default `tensorforge run --target h200
# --recalibrate` timed, with each workload's step times in its log; then bench_vs_do_bench on the
# rows that missed 2% in the closing session (the decode step first), with NVML clocks sampled per
# section (--clocks) and the graph-size sweep (--diagnose). Everything lands in $OUT at once.
# Invoke from the repository root after installing:  T0=$(date +%s) bash benchmarks/h200_measure3.sh
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
deadline=$((${T0:-$(date +%s)} + ${PHASE_S:-192}))
left() { echo $((deadline - $(date +%s))); }
exec > >(tee "$OUT/h200-measure3-session.log") 2>&1
export TENSORFORGE_HOME=/tmp/tf-measure3
quiet() { grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv,noheader
echo "installed; $(left) s left"
box=$(($(left) - 45)); [ "$box" -gt 130 ] && box=130
start=$(date +%s.%N)
timeout -s INT "$box" tensorforge run --target h200 --recalibrate -o "$OUT/h200-measure3-run.json" \
  2> >(quiet >"$OUT/h200-measure3-run.log")
rc=$?
end=$(date +%s.%N)
echo "run: rc=$rc, whole command $(python3 -c "print(round($end-$start,1))") s (time box $box s)"
grep -E "calibrat|took|waited|cooling|steady" "$OUT/h200-measure3-run.log" | head -40
tail -2 "$OUT/h200-measure3-run.summary.txt" 2>/dev/null
grep -E "bound violations" "$OUT/h200-measure3-run.summary.txt" 2>/dev/null
tensorforge verify "$OUT/h200-measure3-run.json" 2>&1 | tail -1
echo "== against triton ($(left) s left)"
timeout -s INT "$(($(left) - 2))" python3 benchmarks/bench_vs_do_bench.py -w transformer_decode -w gemm_square_tf32 \
  -w gemm_batched_fp16 --rounds 3 --rest 0.5 --clocks --diagnose -o "$OUT/h200-measure3-do-bench.json" 2>&1 | quiet | tail -40
echo "done; $(left) s left"
