# Shared by the device session scripts (benchmarks/h200_session.sh, benchmarks/energy/*_session.sh):
# time boxes under one deadline, the quiet filter for the profiler's noise, the bytecode warm-up and
# one timed `tensorforge run`. Source it after setting WORK and TARGET; a session's own post-run
# lines (greps, verify, copies) stay in the session script.
#   . benchmarks/session_lib.sh; session_deadline 330
set -u

session_deadline() { # the deadline every box counts back from: now + $1 seconds
  deadline=$(($(date +%s) + $1))
}
left() { echo $((deadline - $(date +%s))); }
box() { # box SECONDS_RESERVED_AFTER MAX: a time box that leaves the reserve for later steps
  local t=$(($(left) - $1)); [ "$t" -gt "$2" ] && t=$2; [ "$t" -lt 1 ] && t=1; echo "$t"; }
quiet() { grep -v -E "USDT|_warn_once|UserWarning: Warning: Profiler"; }

# Bytecode in the session's own folder, warmed once and timed outside the runs: the lent machine's
# torch keeps no .pyc files, so every process would compile ~2,500 of them (7.3 s of a run, cProfile
# 2026-12-01 06:10 UTC); pip compiles them at install, so a user's run does not pay it.
warm_bytecode() {
  export PYTHONPYCACHEPREFIX=$WORK/pycache
  local t0
  t0=$(date +%s.%N)
  python3 -c 'import torch, torch._dynamo, sympy, torch.distributed.fsdp, triton' 2>/dev/null
  echo "bytecode cache warmed: $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s"
}

timed_run() { # $1: capture name, $2: time box; the rest: options of `tensorforge run`
  local name=$1 t=$2; shift 2
  local start end rc
  start=$(date +%s.%N)
  timeout -s INT "$t" tensorforge run --target "$TARGET" -o "$WORK/$name.json" "$@" 2> >(quiet >"$WORK/$name.log")
  rc=$?
  end=$(date +%s.%N)
  echo "$name: rc=$rc, whole command $(python3 -c "print(round($end-$start,1))") s (time box $t s)"
}

energy_steps() { # $1: a run's log: the energy windows' share of the run (each workload's 'energy' step)
  python3 - "$1" <<'PY'
import re, sys
steps = [float(x) for x in re.findall(r"energy (\d+\.\d+)\s*$", open(sys.argv[1]).read(), re.M)]
print(f"energy steps: {len(steps)} workloads, {sum(steps):.2f} s ({', '.join(f'{s:.2f}' for s in steps)})")
PY
}
