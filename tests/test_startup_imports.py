"""`tensorforge --help` and a refusal answer at once: neither imports numpy, torch, the estimate or
the measuring side beyond its plugin face (tensorforge_measure.core_plugin, whose commands load
on first use). numpy alone was a third of the start-up: the mapping strategies, registered by
every command line, imported it at module level; they now import it when they search.

Checked in a fresh interpreter (this one has imported everything by now), by the modules it
holds after each command line, not by timing (a shared machine's timings vary)."""

import json
import subprocess
import sys

HEAVY = ("numpy", "torch", "mlflow", "pynvml", "matplotlib", "scipy", "tensorforge.estimate")
# the measuring side's face towards the Core: the package and the hooks that list its commands
MEASURE_FACE = {"tensorforge_measure", "tensorforge_measure.core_plugin"}

PROBE = """
import json, sys
from tensorforge.cli.main import main

def loaded():
    return sorted(sys.modules)

seen = {}
for name, argv in (("help", ["--help"]), ("refusal", ["predict", "-t", "h200", "-o", sys.argv[1]])):
    try:
        main(argv)
    except SystemExit as exc:
        seen[name + " exit"] = exc.code
    seen[name] = loaded()
print(json.dumps(seen))
"""


def _heavy(modules: list[str]) -> list[str]:
    return [
        m
        for m in modules
        if any(m == h or m.startswith(h + ".") for h in HEAVY)
        or (m.startswith("tensorforge_measure") and m not in MEASURE_FACE)
    ]


def test_help_and_a_refusal_import_nothing_heavy(tmp_path):
    existing = tmp_path / "prediction.json"
    existing.write_text("{}", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(existing)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen.get("help exit") in (None, 0) and "Usage:" in proc.stdout
    assert seen["refusal exit"] == 2 and "already exists" in proc.stderr
    assert _heavy(seen["help"]) == []
    assert _heavy(seen["refusal"]) == []
    assert existing.read_text(encoding="utf-8") == "{}"
