#!/usr/bin/env bash
# The energy session on a lent H200, one device call (docs/energy.md): install offline;
# calibration with the energy probe + the default suite with energy windows (sustained regime
# included); the held-out suite (benchmarks/energy/h200-heldout.toml) reusing that calibration;
# the GPU energy tests; each under a deadline so the whole ends inside the call (SESSION_S).
# Back in $OUT (8 files): two captures, the calibration, the score (benchmarks/energy/score.py),
# three logs, the default run's summary. DEFAULT_ARGS adds flags to the default run (a short
# call: "--no-trace --budget 1"); RESERVE_S / TESTS_S: seconds kept after the default run / the
# held-out run. Run from the repository root:
#   OUT=... bash benchmarks/energy/h200_session.sh
set -o pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder that comes back}
export PYTHONUNBUFFERED=1 TENSORFORGE_HOME=${TENSORFORGE_HOME:-/tmp/tfhome}
deadline=$(( $(date +%s) + ${SESSION_S:-255} ))
left() { echo $(( deadline - $(date +%s) )); }
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
if [ -z "${NO_INSTALL:-}" ]; then
  python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . -e plugins/tf_gemm -e plugins/tf_conv2d \
    -e plugins/tf_transformer -e plugins/tf_rtx3050 -e plugins/tf_h200 -e plugins/tf_cpu 2>&1 | grep -v -i warning | tail -3
fi
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,clocks.max.sm,temperature.gpu --format=csv
echo "installed; $(left) s left"
t=$(( $(left) - ${RESERVE_S:-70} )); [ "$t" -gt 150 ] && t=150
timeout -s INT "$t" tensorforge run --target h200 --recalibrate ${DEFAULT_ARGS:-} -o "$OUT/h200-energy-default.json" --force 2>&1 | tee "$OUT/default.log" | grep -v -E "USDT|_warn_once|Profiler"
echo "default run done; $(left) s left"
t=$(( $(left) - ${TESTS_S:-25} )); [ "$t" -gt 20 ] && timeout -s INT "$t" tensorforge run --target h200 \
  --suite benchmarks/energy/h200-heldout.toml --no-trace --budget 1 \
  -o "$OUT/h200-energy-heldout.json" --force 2>&1 | tee "$OUT/heldout.log" | grep -v -E "USDT|_warn_once|Profiler"
echo "held-out run done; $(left) s left"
cp "$TENSORFORGE_HOME"/calibrations/*.json "$OUT/calibration.json" 2>/dev/null || ls -R "$TENSORFORGE_HOME" | head
rm -f "$OUT"/h200-energy-heldout.summary.txt
ls "$OUT"/*.incomplete.json >/dev/null 2>&1 && rm -f "$OUT"/h200-energy-default.summary.txt
python3 benchmarks/energy/score.py "$OUT"/h200-energy-default.json "$OUT"/h200-energy-heldout.json > "$OUT/score.txt" 2>&1
for f in "$OUT"/h200-energy-default.json "$OUT"/h200-energy-heldout.json; do
  [ -f "$f" ] && python3 benchmarks/energy/rebound.py "$f" >> "$OUT/score.txt" 2>&1
done
tail -25 "$OUT/score.txt"
t=$(( $(left) - 2 )); [ "$t" -gt 12 ] && timeout -s INT "$t" python3 -m pytest -q -p no:cacheprovider \
  tests/test_energy_gpu.py 2>&1 | tee "$OUT/gpu-tests.log" | tail -15
ls -la "$OUT"
