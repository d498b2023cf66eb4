"""Offline: the energy estimate's error per workload across several device sessions, side by side,
each recomputed with the current model from what the session's captures hold (rescore.py's rows).

    python benchmarks/energy/across_sessions.py [--vector-flop-j J] STEM [STEM...]

STEM names one session's captures: captures/STEM-run.json.gz and, where it exists,
captures/STEM-energy-heldout.json.gz (e.g. h200-2026-12-01-1639). Each cell is the error of the
estimate against the NVML counter, with its time part in brackets ((1 + err) = (1 + time) x
(1 + power), rescore.py); the last column marks the latest session's window (CAP, GRAPH, HOST).

Why: one session's 19 or 21 of 22 says little about a model change while the device's own power
moves between sessions (docs/energy.md, the offline study of 2026-12-01 18:10 UTC): a workload
that misses in every session is the model's; one that misses in one is the session's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rescore  # noqa: E402  (benchmarks/energy/rescore.py, beside this script)

ROOT = Path(__file__).resolve().parents[2]
USAGE = "python benchmarks/energy/across_sessions.py [--vector-flop-j J] STEM [STEM...]"


def session_paths(stem: str) -> list[Path]:
    paths = [ROOT / "captures" / f"{stem}-{kind}.json.gz" for kind in ("run", "energy-heldout")]
    return [p for p in paths if p.exists()]


def errors(stem: str) -> dict[str, tuple[float, float, str]]:
    """workload -> (error, its time part, the window's marks) for one session."""
    out = {}
    for path in session_paths(stem):
        for name, e, r, _stored, pace in rescore.rows(str(path)):
            graph = e.get("execution") == "graph" and r.device_estimate_terms is not None
            t = r.device_estimate_terms if graph else r.estimate_terms
            err = t.total_j / e["joules_per_execution"] - 1
            time = t.time_s / e["seconds_per_execution"] - 1
            hosted = pace is not None and not graph  # the host set the pace (rescore.py: HOST)
            marks = " ".join(m for m, on in (("CAP", r.power_limited), ("GRAPH", graph), ("HOST", hosted)) if on)
            out[name] = (err, time, marks)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--vector-flop-j"]:  # rescore.py's stand-in (a sensitivity check, never a result)
        try:
            rescore.STAND_IN["vector"] = float(argv[1])
        except (IndexError, ValueError):
            print("--vector-flop-j needs a number of joules per FLOP", file=sys.stderr)
            return 2
        print(f"# STAND-IN joules_per_vector_flop {argv[1]} where a calibration has none (sensitivity)")
        argv = argv[2:]
    if not argv:
        print(f"usage: {USAGE}", file=sys.stderr)
        return 2
    missing = [s for s in argv if not session_paths(s)]
    if missing:
        print(f"no captures for session {missing[0]} (captures/{missing[0]}-run.json.gz)", file=sys.stderr)
        return 2
    table = {stem: errors(stem) for stem in argv}
    names = sorted({n for t in table.values() for n in t})
    short = [s.rsplit("-", 1)[-1] for s in argv]
    print(f"{'workload':34s} " + " ".join(f"{s:>15s}" for s in short))
    for name in names:
        cells = []
        for stem in argv:
            got = table[stem].get(name)
            cells.append(f"{got[0] * 100:+6.1f}% ({got[1] * 100:+5.1f}%)" if got else f"{'-':>15s}")
        last = table[argv[-1]].get(name)
        print(f"{name[:34]:34s} " + " ".join(cells) + (f"  {last[2]}" if last else ""))
    counts = [sum(abs(v[0]) <= 0.10 for v in table[s].values()) for s in argv]
    print(f"{'within 10%':34s} " + " ".join(f"{c:>6d} of {len(table[s]):<6d}" for c, s in zip(counts, argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
