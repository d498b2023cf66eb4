"""The /proc and /sys snapshots of tests/fixtures/host_cpu/, one JSON file per machine
({relative path: file text}), laid out as a real root folder for the host-CPU readers.

One file per machine rather than a tree of ~40 tiny files each: the repository stays small and
a snapshot reads in one piece; the readers still see the real layout."""

import functools
import json
import tempfile
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parent / "fixtures" / "host_cpu"


@functools.cache
def snapshot_root(name: str) -> Path:
    """A folder holding machine `name`'s files, made once per test process (read-only use)."""
    files = json.loads((SNAPSHOTS / f"{name}.json").read_text(encoding="utf-8"))
    root = Path(tempfile.mkdtemp(prefix=f"tf-host-{name}-"))
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
