#!/usr/bin/env bash
# Every GPU benchmark in one command, on a machine with no package registry (a lent H200):
# installs the repository offline (wheels in .whl/ first, if any), then runs
#   energy_eval (calibrates, energy windows on the held-out energy suite),
#   estimate_eval --run (reuses that calibration; the estimate's evaluation suite),
#   vs_do_bench (the harness against triton's do_bench, time-boxed),
#   collectives (only with two or more GPUs; one line otherwise)
# each writing its result file under "${OUT:-benchmarks/results}", then RESULTS.md there.
# One program's failure does not stop the others; the exit status is the last failure's.
#   TF_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/run_gpu.sh [PROGRAM ...]   (default: all four)
# (TF_COMMIT: the commit the copied tree is; a device's copy of .git can be older than the tree)
# Here, before a device run, fetch the wheels the device lacks (cattrs, cryptography and its needs):
#   bash benchmarks/run_gpu.sh --fetch-wheels
set -u
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fetch-wheels" ]; then
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d .whl cattrs cryptography cffi pycparser
  exit
fi
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TENSORFORGE_HOME=${TENSORFORGE_HOME:-/tmp/tf-bench-home}
if [ -z "${NO_WHEELS:-}" ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! python3 -c 'import tensorforge_measure, tf_cuda' 2>/dev/null; then
  python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . $(ls -d plugins/tf_* | sed "s/^/-e /") 2>&1 |
    grep -v -i warning | tail -3
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,power.limit --format=csv,noheader
programs=${*:-energy_eval estimate_eval vs_do_bench collectives}
status=0
for p in $programs; do
  case $p in
    estimate_eval) args=(--run) ;;
    vs_do_bench) args=(--deadline "${DO_BENCH_S:-150}") ;;
    *) args=() ;;
  esac
  echo "== $p"
  if [ "$p" = collectives ] && [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -lt 2 ]; then
    echo "== collectives: skipped, it needs two GPUs (run it on nvidia-h200-x2)"
    continue
  fi
  start=$(date +%s)
  timeout -s INT "${PROGRAM_S:-300}" python3 "benchmarks/$p.py" "${args[@]}" --out "$OUT/$p.json"
  rc=$?
  echo "== $p: status $rc, $(($(date +%s) - start)) s"
  [ "$rc" -ne 0 ] && status=$rc
done
python3 benchmarks/results_md.py --results "$OUT" --md "$OUT/RESULTS.md" --readme /dev/null >/dev/null 2>&1
exit $status
