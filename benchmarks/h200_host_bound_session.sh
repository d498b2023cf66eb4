#!/usr/bin/env bash
# Issue 12, the host-bound eager rows (helper h12f): one H200 call (timeout_s 200) that
#   1. host-bound eager timings before and after a profiler session that leaves CUPTI attached
#      (TEARDOWN_CUPTI=0, Kineto's default; benchmarks/host_bound_eager.py --part no-teardown);
#   2. why a host-bound eager call's time spreads (host_bound_eager.py: both harnesses in pairs,
#      condition by condition, in one process, CUPTI torn down after its profiler sessions);
#   3. bench_vs_do_bench.py on the host-bound rows (gemm_tiny, transformer_decode): 8 rounds back to
#      back, same flush buffer, collector paused in both harnesses;
#   4. the default `tensorforge run --target h200 --recalibrate` (measure/ changed), verified, its
#      summary, and the gate against the closing session's rerun (captures/h200-2026-12-01-0234-rerun.json).
# Every step has a time box inside the call's deadline (T0: the command's start, epoch seconds;
# BOX_S: seconds from T0; TARGET: h200, or host-cpu to try the flow locally). Invoke from the repository root: T0=$(date +%s) OUT=... bash THIS
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
WORK=/tmp/tf-host-bound
rm -rf "$WORK" && mkdir -p "$WORK"
export TENSORFORGE_HOME=$WORK/home
deadline=$((${T0:-$(date +%s)} + ${BOX_S:-192}))
left() { echo $((deadline - $(date +%s))); }
quiet() { grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler|warnings.warn"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv,noheader
python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
nproc; cat /proc/loadavg

echo "== 1. CUPTI left attached after the profiler (TEARDOWN_CUPTI=0, Kineto's default); $(left) s left"
TEARDOWN_CUPTI=0 timeout 30 python3 benchmarks/host_bound_eager.py --part no-teardown \
  --out "$OUT/diag-noteardown.json" 2>&1 | quiet

echo "== 2. host-bound eager, condition by condition (TEARDOWN_CUPTI as the harness sets it); $(left) s left"
tm=$(($(left) - 128)); [ "$tm" -gt 45 ] && tm=45; [ "$tm" -lt 15 ] && tm=15
timeout "$tm" python3 benchmarks/host_bound_eager.py --out "$OUT/diag-main.json" 2>&1 | quiet
rc=${PIPESTATUS[0]}
second=$(python3 -c "import json; p=json.load(open('$OUT/diag-main.json')).get('profiler_s', []); print(round(p[1], 2) if len(p) > 1 else 99)" 2>/dev/null || echo 99)
echo "diagnosis: exit $rc; second profiler session took $second s"
if { [ "$rc" != 0 ] && [ "$rc" != 124 ]; } || python3 -c "import sys; sys.exit(0 if float('$second') > 1.0 else 1)"; then
  # the teardown crashed, or re-attaching CUPTI costs each later profiler session (a run has ~11:
  # kernel-floors and a trace window per workload) enough to break the run's 90 s: Kineto's default
  export TEARDOWN_CUPTI=0
  echo "TEARDOWN_CUPTI=0 for the steps below (exit $rc, second session $second s)"
fi

echo "== 3. bench_vs_do_bench: host-bound rows; $(left) s left"
t=$(($(left) - 93)); [ "$t" -gt 42 ] && t=42; [ "$t" -lt 20 ] && t=20
timeout "$t" python3 benchmarks/bench_vs_do_bench.py -w gemm_tiny -w transformer_decode --rounds 2 \
  --host-bound-rounds 8 --skip-graph-reference --levels none --rest 1 --deadline $((t - 9)) \
  -o "$OUT/do_bench.json" 2>&1 | quiet | tail -8

echo "== 4. default run --recalibrate; $(left) s left"
start=$(date +%s.%N)
timeout -s INT $(($(left) - 7)) tensorforge run --target "${TARGET:-h200}" --recalibrate -o "$WORK/run.json" 2> >(quiet >"$WORK/run.log")
rc=$?
echo "run: rc=$rc, whole command $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
grep -E "^(phase|run time|calibrat)" "$WORK/run.log" | tail -8
cp "$WORK/run.json" "$OUT/" 2>/dev/null
tensorforge verify "$WORK/run.json" | tail -2
grep -E "^(gemm_tiny|transformer_decode|workload|bound violations|regime)" "$WORK/run.summary.txt" | head -12
if [ -f captures/h200-2026-12-01-0234-rerun.json ]; then
  tensorforge gate captures/h200-2026-12-01-0234-rerun.json "$WORK/run.json" | tail -13
  echo "gate 0234-rerun -> this run: exit ${PIPESTATUS[0]}"
fi
python3 - "$WORK/run.json" <<'EOF' 2>&1 | tail -6
import json, statistics, sys
d = json.load(open(sys.argv[1]))
print("device details: profiler_teardown_cupti =", d["measured"].get("device", {}).get("details", {}).get("profiler_teardown_cupti", "?"))
for name in ("gemm_tiny", "transformer_decode"):
    w = d["measured"]["workloads"].get(name)
    if not w or "stats" not in w:
        continue
    print(name, f"primary {w.get('regime')}-{w.get('mode')} {w['stats']['p50'] * 1e6:.1f} us;", " ".join(f"{m['regime']}-{m['mode']} {statistics.median(m['samples_s']) * 1e6:.1f} us (rel IQR {m['stats'].get('rel_iqr', 0) * 100:.1f}%)" for m in w["modes"]))
EOF
tar -C "$WORK" -czf "$OUT/run-extras.tgz" run.log run.summary.txt 2>/dev/null
echo "done; $(left) s left"
ls -la "$OUT"
