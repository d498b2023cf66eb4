"""The captures a device session committed, as tests find and read them: plain `.json`, or
`.json.gz` where an archived one was compressed to keep the working tree small (every command reads
either; tensorforge/fileio.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tensorforge.api import read_text


def committed(folder: Path, pattern: str = "*") -> list[Path]:
    """The documents in `folder` whose name without its .json/.json.gz matches `pattern`."""
    return sorted([*folder.glob(f"{pattern}.json"), *folder.glob(f"{pattern}.json.gz")])


def capture_stem(path: Path) -> str:
    """The capture's name without .json or .json.gz (one capture keeps one key either way)."""
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def load_json(path: Path) -> Any:
    return json.loads(read_text(path, "capture"))
