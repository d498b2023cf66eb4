#!/usr/bin/env bash
# One device session on a lent H200: install offline, run the GPU tests, the default `run`
# on the h200 target (timed), verify it, a cross-target run, and the do_bench comparison.
# Everything worth keeping is written under $OUT.
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . -e plugins/tf_gemm \
  -e plugins/tf_conv2d -e plugins/tf_transformer -e plugins/tf_rtx3050 -e plugins/tf_h200 -e plugins/tf_cpu 2>&1 | grep -v -i warning | tail -3
export TENSORFORGE_HOME=/tmp/tfhome
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,power.limit,temperature.gpu --format=csv
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
tensorforge list-plugins
echo "== GPU tests"; python3 -m pytest -q -m gpu tests 2>&1 | tail -4
echo "== run --target h200"
start=$(date +%s.%N)
tensorforge run --target h200 -o "$OUT/capture-h200.json" 2> "$OUT/run-h200.log"; rc=$?
end=$(date +%s.%N)
echo "run rc=$rc wall $(python3 -c "print(round($end-$start,1))") s"; tail -5 "$OUT/run-h200.log"
tensorforge verify "$OUT/capture-h200.json"
echo "== run --target rtx3050-laptop (reuses the calibration; APE must be withheld)"
tensorforge run --target rtx3050-laptop -w gemm_large_square -w gemm_tiny --no-telemetry \
  -o "$OUT/capture-rtx3050-on-h200.json" 2>/dev/null | tail -8
if [ "${DO_BENCH:-1}" = 1 ]; then
  echo "== do_bench"
  python3 benchmarks/bench_vs_do_bench.py -o "$OUT/do_bench.json" 2>&1 | tail -12
fi
echo "== second run (reuses the stored calibration)"
tensorforge run --target h200 --no-telemetry -o "$OUT/capture-h200-rerun.json" 2>&1 | grep -E "reusing|bound violations|gemm_large_square|run took"
