"""Start-up: how long the first commands a user types take, each in a fresh process, from exec to
exit: `tensorforge --help`, a refusal of `-o` (the file exists), one GEMM predicted, a refusal of an
unknown target, and `targets list`. The goal is a median of at most 0.3 s for each: the first
commands of a first hour answer at once.

Each command runs once to warm up, then --repeat times, the commands taking turns round by round
(a burst of load on a shared machine then costs every command alike). Python's bytecode is written
on the warm-up to a private cache (PYTHONPYCACHEPREFIX, a fresh temporary folder) and read from
there afterwards, as a user's installed package is byte-compiled by pip: what is timed is the
start-up a user sees, not compilation (an environment with PYTHONDONTWRITEBYTECODE=1 recompiles
every module on every start). The interpreter alone (`python -c pass`, with the same site
packages) is timed beside them, as the floor no command can go below.

    python benchmarks/startup.py [--repeat 9] [--out benchmarks/results/startup.json]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _result

NAME = "startup"
GOAL_S = 0.3
EXISTING = "existing.json"  # created in the working folder: `-o` must refuse to replace it

# (what, arguments, expected exit status, text the output must hold): a command that does not
# answer as expected is a broken benchmark, not a fast one.
COMMANDS = (
    ("help", ["--help"], 0, "Usage:"),
    ("-o refusal (file exists)", ["run", "--target", "rtx3050-laptop", "-o", EXISTING], 2, "already exists"),
    ("predict one GEMM", ["predict", "--target", "h200", "-w", "gemm:m=4096,n=4096,k=4096"], 0, "PREDICTED"),
    ("unknown target refusal", ["predict", "--target", "no-such-target"], 2, "unknown target"),
    ("targets list", ["targets", "list"], 0, "h200"),
)


def executable() -> str:
    """The installed console script beside this interpreter (as a user runs it), else on PATH."""
    beside = Path(sys.executable).parent / "tensorforge"
    found = str(beside) if beside.exists() else shutil.which("tensorforge")
    if not found:
        print(
            "startup: no `tensorforge` console script beside this Python or on PATH; nothing written", file=sys.stderr
        )
        sys.exit(2)
    return found


def environment(pycache: str) -> dict[str, str]:
    """This environment with bytecode written to (and read from) `pycache`, and no plugin selection
    or tracing: every installed plugin is loaded, as on a user's first run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def run_once(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return time.perf_counter() - start, proc


def check(what: str, proc: subprocess.CompletedProcess, status: int, text: str) -> None:
    if proc.returncode != status or text not in proc.stdout + proc.stderr:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        print(f"startup: {what!r} exited {proc.returncode} (expected {status}): {tail[0]}", file=sys.stderr)
        sys.exit(1)


def p90(times: list[float]) -> float:
    """The 90th percentile, interpolated between the nearest samples (one sample: itself)."""
    if len(times) < 2:
        return times[0]
    return statistics.quantiles(times, n=10, method="inclusive")[-1]


def row(what: str, command: str, times: list[float]) -> dict:
    median = statistics.median(times)
    return {
        "what": what,
        "command": command,
        "runs": len(times),
        "best_s": round(min(times), 4),
        "median_s": round(median, 4),
        "p90_s": round(p90(times), 4),
        "within_goal": median <= GOAL_S,
    }


def document(rows: list[dict], floor: list[float], repeat: int, load: float | None) -> dict:
    slowest = max(rows, key=lambda r: r["median_s"])
    summary = {
        "goal_s": GOAL_S,
        "all_within_goal": all(r["within_goal"] for r in rows),
        "slowest": slowest["what"],
        "slowest_median_s": slowest["median_s"],
        "interpreter_median_s": round(statistics.median(floor), 4),
        "repeat": repeat,
    }
    if load is not None:
        summary["load_average_1min"] = round(load, 2)
    return _result.build(
        NAME,
        _result.cpu_words(),
        rows,
        summary,
        {
            "best_s": "MEASURED wall time from exec to exit of a fresh process, the fastest run",
            "median_s": "MEASURED wall time from exec to exit of a fresh process, the median run",
            "p90_s": "MEASURED wall time from exec to exit of a fresh process, 90th percentile of the runs",
            "within_goal": "DERIVED: median_s <= goal_s (0.3 s)",
            "all_within_goal": "DERIVED: every row within_goal",
            "slowest_median_s": "MEASURED: the largest median_s of the rows",
            "interpreter_median_s": "MEASURED: median wall time of `python -c pass` (the interpreter and its "
            "site packages, as the console script starts them): the floor",
            "load_average_1min": "MEASURED: the machine's 1-minute load average when the runs started",
        },
        columns=[
            ("what", "what"),
            ("command", "command"),
            ("best_s", "best s"),
            ("median_s", "median s"),
            ("p90_s", "p90 s"),
            ("within_goal", f"median <= {GOAL_S} s"),
        ],
        notes=[
            "bytecode cached: one warm-up run per command writes it to a private PYTHONPYCACHEPREFIX, as pip "
            "byte-compiles an installed package; the timed runs read it",
            "each command a fresh process of the installed console script, every installed plugin loaded; "
            "the commands take turns, one run each per round",
        ],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per command after the warm-up (default 9)")
    _result.out_option(parser, NAME)
    args = parser.parse_args()
    exe = executable()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory(prefix="tf-startup-") as scratch:
        work = Path(scratch) / "work"
        work.mkdir()
        (work / EXISTING).write_text("{}\n", encoding="utf-8")
        env = environment(str(Path(scratch) / "pycache"))
        runs = [([exe, *argv], status, text) for _, argv, status, text in COMMANDS]
        floor_argv = [sys.executable, "-c", "pass"]
        for (what, *_), (argv, status, text) in zip(COMMANDS, runs):  # the warm-up writes the bytecode
            check(what, run_once(argv, env, str(work))[1], status, text)
        run_once(floor_argv, env, str(work))
        times: list[list[float]] = [[] for _ in COMMANDS]
        floor: list[float] = []
        for _ in range(args.repeat):
            for i, ((what, *_), (argv, status, text)) in enumerate(zip(COMMANDS, runs)):
                seconds, proc = run_once(argv, env, str(work))
                check(what, proc, status, text)
                times[i].append(seconds)
            floor.append(run_once(floor_argv, env, str(work))[0])
        if (work / EXISTING).read_text(encoding="utf-8") != "{}\n":
            print(f"startup: the refusal replaced {EXISTING}; nothing written", file=sys.stderr)
            return 1
    rows = []
    for (what, argv, _, _), samples in zip(COMMANDS, times):
        shown = " ".join(["tensorforge", *argv]).replace(EXISTING, "EXISTING.json")
        rows.append(row(what, shown, samples))
        r = rows[-1]
        print(
            f"{what:26s} best {r['best_s']:.3f} s  median {r['median_s']:.3f} s  p90 {r['p90_s']:.3f} s  "
            f"{'within' if r['within_goal'] else 'OVER'} {GOAL_S} s",
            flush=True,
        )
    doc = document(rows, floor, args.repeat, load)
    print(f"{'python -c pass':26s} median {doc['summary']['interpreter_median_s']:.3f} s (the floor)")
    print(f"wrote {_result.write(args.out, doc)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
