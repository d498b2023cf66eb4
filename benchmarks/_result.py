"""The result file every maintained benchmark writes, in one place: its schema, where it goes and
how it is written (atomically: a reader never sees half a file). `results_md.py` reads what this
writes; tests/test_benchmark_results.py holds the two together.

    {"benchmark", "schema": 1, "device", "date", "commit", "command",
     "columns": [[key, header] or [key, header, "%"], ...], "rows": [{...}, ...], "summary": {...},
     "labels": {key: "MEASURED ..." | "PREDICTED ..." | ...}, "notes": [...],
     "fit": "...", "evaluated": "..."}   (fit/evaluated: accuracy benchmarks only)
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SCHEMA = 1
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
REQUIRED = ("benchmark", "schema", "device", "date", "commit", "command", "rows", "summary", "labels")
LABELS = ("MEASURED", "PREDICTED", "DERIVED")  # every label starts with one of these


def default_out(name: str) -> Path:
    return RESULTS / f"{name}.json"


def commit() -> str:
    """The commit the measured code is, as `git rev-parse --short HEAD` says; TF_COMMIT overrides it
    where the checkout's git is not the tree that ran (a lent device gets a copy of the working tree
    whose .git may be older than it: run_gpu.sh is given the commit by the caller)."""
    if os.environ.get("TF_COMMIT"):
        return os.environ["TF_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def cpu_words() -> str:
    """This machine's processor in words, with the cores this process may use."""
    name = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{name or platform.processor() or platform.machine()} ({cores} cores available)"


def gpu_words(torch: Any) -> str:
    count = torch.cuda.device_count()
    name = torch.cuda.get_device_name(0)
    return f"{count} x {name}" if count > 1 else name


def need_gpus(count: int = 1, what: str = "this benchmark") -> Any:
    """torch with at least `count` CUDA devices, or one line on stderr and exit status 2 (nothing
    written, no traceback)."""
    try:
        import torch
    except ImportError:
        torch = None
    have = torch.cuda.device_count() if torch is not None and torch.cuda.is_available() else 0
    if have < count:
        why = "PyTorch is not installed" if torch is None else f"{have} CUDA device(s) found"
        print(f"{what} needs {count} CUDA GPU(s): {why}; nothing written", file=sys.stderr)
        sys.exit(2)
    return torch


def build(
    benchmark: str,
    device: str,
    rows: list[dict[str, Any]],
    summary: dict[str, Any],
    labels: dict[str, str],
    columns: list[tuple[str, ...]] | None = None,
    notes: list[str] | None = None,
    command: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The result document. `labels` says, per figure (a row or summary key), what it is: each value
    starts with MEASURED, PREDICTED or DERIVED. `extra`: fit/evaluated (accuracy), source, ..."""
    for key, text in labels.items():
        if not text.startswith(LABELS):
            raise ValueError(f"label of {key!r} must start with one of {LABELS}: {text!r}")
    return {
        "benchmark": benchmark,
        "schema": SCHEMA,
        "device": device,
        "date": datetime.date.today().isoformat(),
        "commit": commit(),
        "command": command or " ".join(shlex.quote(a) for a in ["python", *sys.argv]),
        "columns": [list(c) for c in (columns or [(k, k) for k in (rows[0] if rows else {})])],
        "rows": rows,
        "summary": summary,
        "labels": labels,
        "notes": list(notes or []),
        **extra,
    }


def write(path: str | os.PathLike, doc: dict[str, Any]) -> Path:
    """Write `doc` (checked against the schema) to `path` atomically; returns the path."""
    problems = check(doc)
    if problems:
        raise ValueError("; ".join(problems))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(doc, handle, indent=1, sort_keys=True, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def check(doc: Any) -> list[str]:
    """What is wrong with a result document (empty: it follows the schema)."""
    if not isinstance(doc, dict):
        return ["not a JSON object"]
    problems = [f"missing {k!r}" for k in REQUIRED if k not in doc]
    if doc.get("schema") != SCHEMA:
        problems.append(f"schema {doc.get('schema')!r}, expected {SCHEMA}")
    if not isinstance(doc.get("rows"), list) or not all(isinstance(r, dict) for r in doc.get("rows") or []):
        problems.append("rows must be a list of objects")
    if not isinstance(doc.get("summary"), dict):
        problems.append("summary must be an object")
    date = str(doc.get("date", ""))
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        problems.append(f"date {date!r} is not YYYY-MM-DD")
    return problems


def read(path: str | os.PathLike) -> dict[str, Any]:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    problems = check(doc)
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return doc


def out_option(parser: Any, name: str) -> None:
    parser.add_argument(
        "--out", default=str(default_out(name)), help=f"result file (default: benchmarks/results/{name}.json)"
    )


def rescore_option(parser: Any) -> None:
    parser.add_argument(
        "--rescore",
        metavar="RESULT",
        help="re-predict the measurements of an existing result file (or of a run's <out>.measured.json)",
    )


def measured_and_scored(args: Any, what: str, measure: Any, score: Any, document: Any) -> dict[str, Any]:
    """The result document of a GPU benchmark that measures rows, then scores them against the
    prediction: `measure(torch) -> rows` on the device (saved to <out>.measured.json first, so an
    estimate that cannot be made there loses no measurement), `score(rows) -> rows` and
    `document(rows, device, command) -> doc`. With --rescore the saved or published rows are
    scored again here (no device): the date stays the measurement's, and a note names its commit."""
    if args.rescore:
        old = json.loads(Path(args.rescore).read_text(encoding="utf-8"))
        doc = document(score(old["rows"]), old["device"], old.get("command"))
        doc["date"] = old.get("date", doc["date"])
        if old.get("commit"):
            doc["notes"].append(
                f"measured at commit {old['commit']} ({old['date']}); the estimate re-predicted at this one"
            )
        return doc
    torch = need_gpus(1, what)
    measured = measure(torch)
    raw = Path(args.out).with_suffix(".measured.json")
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps({"device": gpu_words(torch), "rows": measured}), encoding="utf-8")
    doc = document(score(measured), gpu_words(torch))
    raw.unlink()
    return doc
