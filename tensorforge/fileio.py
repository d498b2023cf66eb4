"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

import os
import tempfile
from pathlib import Path

from .errors import TensorForgeError


def write_atomic(path, text: str) -> None:
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise TensorForgeError(f"cannot write {path}: folder {directory} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:  # an unwritable folder is the user's error: one line, no traceback
        raise TensorForgeError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        # mkstemp creates the file 0600; give it the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise TensorForgeError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise
