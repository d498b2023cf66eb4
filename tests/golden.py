"""The golden captures: a few real device sessions kept in the tree so tests prove their properties
on real data. The ones the README tour reads are in examples/captures/, the others in
tests/fixtures/captures/; each is in one place only. Plain `.json`, or `.json.gz` to keep the tree
small (every command reads either). Older captures are in git history, at the tag
`lab-archive-2026-12`; tests never read them.

Every golden capture verifies, except the incomplete one, which `verify` refuses for exactly that
reason (test_ops_capture.py). Replacing a golden capture with a newer session's is a deliberate
change: the tests read their expectations from the files, never copy numbers out of them, except
the known bound exceptions in test_capture_soundness.py, which name their capture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tensorforge.api import read_text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "captures"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "captures"

# the README tour's: an H200 run, its rerun that reused the stored calibration, a host-CPU run,
# and an H200 estimate evaluation (calibrated by probes, scored on held-out shapes)
H200_RUN = EXAMPLES / "h200-default-run.json"
H200_RERUN = EXAMPLES / "h200-rerun-reused-calibration.json"
HOST_CPU_RUN = EXAMPLES / "host-cpu-2core.json"
# the README tour's signed pair: a default H200 run timed as CUDA graphs and its rerun, signed by
# the key in examples/keys/showcase.pub
H200_SIGNED_RUN = EXAMPLES / "h200-signed-run.json.gz"
H200_SIGNED_RERUN = EXAMPLES / "h200-signed-rerun.json.gz"
H200_ESTIMATE_EVAL = EXAMPLES / "h200-estimate-eval-graphfit.json.gz"
# the tests' own: a 2xH200 run and its rerun, a host-CPU estimate evaluation, an RTX 3050 target
# measured on an H200 (not the predicted device: no APE), a recent H200 run with sustained
# regimes and energy windows, and a run cut short (complete: false)
H200X2_RUN = FIXTURES / "h200x2-default-run.json.gz"
H200X2_RERUN = FIXTURES / "h200x2-rerun-reused-calibration.json.gz"
HOST_CPU_ESTIMATE_EVAL = FIXTURES / "host-cpu-estimate-eval.json.gz"
RTX_ON_H200 = FIXTURES / "rtx3050-laptop-measured-on-h200.json"
H200_ENERGY_RUN = FIXTURES / "h200-2026-12-01-1639-run.json.gz"
INCOMPLETE = FIXTURES / "energy2-h200-default.incomplete.json.gz"

COMPLETE = (
    H200_RUN,
    H200_RERUN,
    H200_SIGNED_RUN,
    H200_SIGNED_RERUN,
    HOST_CPU_RUN,
    H200_ESTIMATE_EVAL,
    H200X2_RUN,
    H200X2_RERUN,
    HOST_CPU_ESTIMATE_EVAL,
    RTX_ON_H200,
    H200_ENERGY_RUN,
)
GOLDEN = (*COMPLETE, INCOMPLETE)


def on_disk() -> list[Path]:
    """Every capture file in the two golden folders (a test checks it is exactly GOLDEN)."""
    return sorted(
        p for folder in (EXAMPLES, FIXTURES) for p in folder.iterdir() if p.name.endswith((".json", ".json.gz"))
    )


def capture_stem(path: Path) -> str:
    """The capture's name without .json or .json.gz (one capture keeps one key either way)."""
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def ids(paths) -> list[str]:
    """Test ids for a parametrization over captures: their stems."""
    return [capture_stem(p) for p in paths]


def load_json(path: Path) -> Any:
    return json.loads(read_text(path, "capture"))
