#!/usr/bin/env bash
# One device session on two lent H200s of one host (issue 14): install offline, record the
# machine and its links, then `tensorforge run --target h200x2` with the torch-distributed
# backend's default suite (the collective calibration sweep, eleven collectives from 4 KiB to
# 1 GiB, and the tp=2 Llama-3-8B-shaped layer in prefill, batch 1 x 4096 tokens, and decode,
# batch 32 at context 4096), verify the capture, a second run that reuses the stored
# calibration, and the small-message floor in its regimes (benchmarks/collective_floor.py). NVLink multicast stays off (NCCL_NVLS_ENABLE=0, recorded in the captures).
# TARGET=host-cpu-x2 runs the same steps on the host CPU with gloo (a rehearsal without GPUs).
set -u
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TENSORFORGE_DIST_TIMEOUT_S=120
TARGET=${TARGET:-h200x2}
OUT=${OUT:-/tmp/tf-out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
if [ "${INSTALL:-1}" = 1 ]; then
  python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . -e plugins/tf_gemm -e plugins/tf_conv2d \
    -e plugins/tf_transformer -e plugins/tf_rtx3050 -e plugins/tf_h200 -e plugins/tf_cpu \
    -e plugins/tf_collective -e plugins/tf_distributed 2>&1 | grep -v -i warning | tail -3
fi
export TENSORFORGE_HOME=${TENSORFORGE_HOME:-/tmp/tfhome}
{
  nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm,power.limit --format=csv 2>&1
  nvidia-smi topo -m 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count(), "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else None)'
  env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM)' | sort
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
echo "== run --target $TARGET (calibrates: per-rank probes + collective sweep)"
start=$(date +%s.%N)
TENSORFORGE_DIST_LOG="$OUT/workers.log" tensorforge run --target "$TARGET" --budget 1 --telemetry-seconds 0.5 \
  -o "$OUT/$TARGET-run.json" > /dev/null 2> "$OUT/$TARGET-run.log"; rc=$?
end=$(date +%s.%N)
echo "run rc=$rc wall $(python3 -c "print(round($end-$start,1))") s"; tail -4 "$OUT/$TARGET-run.log"
[ -f "$OUT/$TARGET-run.summary.txt" ] && cat "$OUT/$TARGET-run.summary.txt"
tensorforge verify "$OUT/$TARGET-run.json"
echo "== rerun (reuses the stored calibration)"
tensorforge run --target "$TARGET" --budget 1 --no-telemetry -o "$OUT/$TARGET-rerun.json" > /dev/null 2> "/tmp/$TARGET-rerun.log"
echo "rerun rc=$?"; grep -E "reusing|run took" "/tmp/$TARGET-rerun.log"
[ -f "$OUT/$TARGET-rerun.summary.txt" ] && grep -E "^(collective|transformer|all_|bound|OPERATOR|operator bound)" "$OUT/$TARGET-rerun.summary.txt"
tensorforge verify "$OUT/$TARGET-rerun.json" | tail -1
echo "== the small-message floor in its regimes (benchmarks/collective_floor.py; a benchmark, not a capture)"
timeout "${FLOOR_TIMEOUT_S:-60}" torchrun --standalone --nnodes 1 --nproc-per-node "${NPROC:-2}" benchmarks/collective_floor.py \
  --out "$OUT/collective-floor.json" 2>&1 | grep -v -E "^(W|I)[0-9]{4} |^\*+$|OMP_NUM_THREADS"
echo "floor rc=${PIPESTATUS[0]}"
