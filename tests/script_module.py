"""Load a script of the repository (benchmarks/*.py, .ci/*.py) as a module, so tests can check its
logic without it being a package: the scripts stay runnable as `python benchmarks/x.py`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    path = ROOT / relative
    if str(path.parent) not in sys.path:  # a benchmark imports its neighbours (benchmarks/_result.py)
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
