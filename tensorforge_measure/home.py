"""TensorForge's home: where calibrations and the signing key live, checked before any work.

Why a check up front: with TENSORFORGE_HOME pointing at a file, or a home folder that cannot be
written, `run` found out only when it stored the calibration, after ~20 s of probes, and ended
in a traceback. `require_writable_home()` runs first and says in one line what is wrong.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tensorforge.api import TensorForgeError

VARIABLE = "TENSORFORGE_HOME"


def home() -> Path:
    """$TENSORFORGE_HOME, else ~/.cache/tensorforge."""
    root = os.environ.get(VARIABLE)
    return Path(root) if root else Path.home() / ".cache" / "tensorforge"


def require_writable_home() -> Path:
    """The home folder; a TensorForgeError naming it when it is not a folder TensorForge can
    write (or create). Nothing is created here: a run that stores nothing leaves no trace."""
    root = home()
    where = f"TensorForge's home {root}" + (f" (${VARIABLE})" if os.environ.get(VARIABLE) else "")
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "is not a folder" if existing == root else f"cannot be created: {existing} is not a folder"
        raise TensorForgeError(f"{where} {what}; point {VARIABLE} at a folder")
    # os.access is not enough (root passes it on a read-only mount): try a file.
    try:
        fd, probe = tempfile.mkstemp(prefix=".tensorforge-write-check.", dir=existing)
    except OSError as exc:
        verb = "is not writable" if existing == root else f"cannot be created in {existing}"
        raise TensorForgeError(f"{where} {verb}: {exc.strerror or exc}; set {VARIABLE} to a writable folder") from None
    os.close(fd)
    os.unlink(probe)
    return root
