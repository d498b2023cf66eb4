"""One rule for every file a TensorForge command writes.

Why one rule: each command had its own (`predict -o` overwrote anything, `run` overwrote its
summary and incomplete capture without `--force`, two `run -o cap.json` at once both said
"wrote cap.json" and one capture was lost, and as root `-o /dev/null` replaced the device node
with a regular file through the atomic rename). The rule:

* `-` is standard output, for every command that writes.
* A path that is not a regular file (a device such as /dev/null or /dev/full, a FIFO) is
  written in place, never renamed over; a FIFO without a reader is refused at once instead of
  blocking; a folder is refused. /dev/stdout, /dev/stderr and /dev/fd/N name descriptors this
  process already has open: they are written through that descriptor (an appending log stays
  appended to), whatever file it leads to.
* A regular file that exists is replaced only with `--force`; without it the command stops
  before doing any work, with one line naming the file. A symbolic link to nothing counts as an
  existing name: writing through it would create a file wherever the link points.
* A new or replaced regular file is written atomically (temporary file, fsync, rename), so a
  reader sees the old content or the new, never half. A new file is published with a hard link,
  which fails if the name appeared meanwhile: then the result goes to a free name beside it and
  the line says where, so nothing is overwritten and nothing is lost.
* A regular file whose name ends in `.gz` is written gzip-compressed (level 9, no name or time in
  the header, as `gzip -9 -n` writes it): every reader unpacks it, and a `-o cap.json.gz` that
  held plain JSON was a surprise to every other tool.
* While a command prepares a file, it holds an exclusive lock on it (`flock` on a hidden
  `.NAME.lock` beside it): a second command writing the same file fails at once, naming the
  process that holds it. The lock dies with its process, so a killed run leaves no stale lock
  that blocks the next one.

`claim()` checks a destination up front (before minutes of measurement), `Claim.write()`
writes it. Both raise TensorForgeError (exit 2, one line) for what the user can fix.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import sys
from pathlib import Path
from typing import IO

from tensorforge.errors import TensorForgeError

STDOUT = "-"
# Names of descriptors this process already has open (the shell opened them, with its own
# truncate or append); written through the descriptor, never reopened or renamed over.
_DESCRIPTOR_NAMES = {"/dev/stdout": 1, "/dev/stderr": 2, "/dev/stdin": 0}
_DESCRIPTOR_RE = re.compile(r"/(?:dev/fd|proc/self/fd)/(\d+)")
_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class Claim:
    """A destination checked and (for regular files) locked; `write` once, then `release`.
    Also a context manager that releases on exit."""

    def __init__(
        self,
        given: str,
        what: str,
        mode: str,
        path: Path | None,
        lock: IO | None = None,
        fd: int | None = None,
        owns_fd: bool = False,
    ):
        self.given = given  # as the user wrote it, for messages
        self.what = what  # 'capture', 'summary', 'report', ...
        self.mode = mode  # 'stdout' | 'descriptor' | 'in-place' | 'new' | 'replace'
        self.path = path  # the file written (symlinks resolved for regular files)
        self.fd = fd  # for 'descriptor'
        self._owns_fd = owns_fd  # a FIFO opened by claim(): closed on release
        self._lock = lock
        self.written_to: str | None = None

    @property
    def is_stdout(self) -> bool:
        return self.mode == "stdout"

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        if self._owns_fd and self.fd is not None:
            os.close(self.fd)
            self.fd, self._owns_fd = None, False
        lock, self._lock = self._lock, None
        if lock is None or self.path is None:
            return
        try:
            # Unlink while still holding the lock; a waiter that opened the old inode re-checks
            # it against the path after locking (see _lock) and starts over.
            os.unlink(_lock_path(self.path))
        except OSError:
            pass
        lock.close()

    def write(self, text: str, stream: IO[str] | None = None) -> str:
        """Write `text`; returns where it went ('standard output', the path, or the free name
        used when the path appeared meanwhile)."""
        if self.mode == "stdout":
            out = stream or sys.stdout
            try:
                out.write(text)
                out.flush()
            except OSError as exc:
                raise TensorForgeError(f"cannot write {self.what} to standard output: {_reason(exc)}") from None
            self.written_to = "standard output"
        elif self.mode == "descriptor":
            assert self.fd is not None  # set for this mode by claim()
            _write_fd(self.fd, text, self.what, self.given)
            self.written_to = str(self.given)
        elif self.mode == "in-place":
            assert self.path is not None
            _write_in_place(self.path, text, self.what)
            self.written_to = str(self.given)
        else:
            assert self.path is not None
            self.written_to = _write_regular(
                self.path, _encoded(self.path, text), self.what, replace=self.mode == "replace"
            )
        return self.written_to


def claim(given: str | os.PathLike[str], what: str, force: bool = False) -> Claim:
    """Check that `given` may be written as `what` and lock it; see the module docstring."""
    text = os.fspath(given)
    if text == STDOUT:
        return Claim(text, what, "stdout", None)
    if not text:
        raise TensorForgeError(f"no path given for the {what}")
    if "\0" in text:  # os.stat would raise ValueError (a traceback), not OSError
        raise TensorForgeError(f"cannot write {what} {text!r}: the path contains a NUL byte")
    fd = _descriptor(text)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError:
            raise TensorForgeError(f"cannot write {what} {text}: descriptor {fd} is not open") from None
        return Claim(text, what, "descriptor", None, fd=fd)
    path = Path(text)
    try:
        info = os.stat(path)  # follows symlinks to what they name
    except FileNotFoundError:
        info = None
        if os.path.islink(path) and not force:
            # a link to nothing: writing would create a file wherever the link points (a link
            # planted in a shared folder chooses where), so it counts as an existing name
            raise TensorForgeError(
                f"{what} {text} already exists as a symbolic link to {os.readlink(path)!r}, which does not exist; "
                "choose another path or pass --force"
            ) from None
    except OSError as exc:
        raise TensorForgeError(f"cannot write {what} {text}: {_reason(exc)}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise TensorForgeError(f"cannot write {what} {text}: it is a folder")
    if info is not None and not stat.S_ISREG(info.st_mode):
        if stat.S_ISFIFO(info.st_mode):
            # held open from here to the write: closing it would hand the reader an early EOF
            return Claim(text, what, "descriptor", path, fd=_open_fifo(path, what), owns_fd=True)
        return Claim(text, what, "in-place", path)
    real = Path(os.path.realpath(path))  # a symlink to a file: replace the file, keep the link
    folder = real.parent
    if not folder.is_dir():
        raise TensorForgeError(f"cannot write {what} {text}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise TensorForgeError(f"cannot write {what} {text}: folder {folder} is not writable")
    if info is not None and not force:
        raise TensorForgeError(f"{what} {text} already exists; choose another path or pass --force")
    lock = _lock(real, what, text)
    # Checked again under the lock: the file may have been published while we waited for it.
    if real.exists() and not force:
        lock.close()
        raise TensorForgeError(f"{what} {text} already exists; choose another path or pass --force")
    return Claim(text, what, "replace" if force else "new", real, lock)


def write_output(
    given: str | os.PathLike[str], text: str, what: str, force: bool = False, stream: IO[str] | None = None
) -> str:
    """claim + write + release, for commands that produce their text at once."""
    with claim(given, what, force) as destination:
        return destination.write(text, stream)


# -- the pieces ------------------------------------------------------------------------------------


def _descriptor(text: str) -> int | None:
    if text in _DESCRIPTOR_NAMES:
        return _DESCRIPTOR_NAMES[text]
    match = _DESCRIPTOR_RE.fullmatch(text)
    return int(match.group(1)) if match else None


def _write_fd(fd: int, text: str, what: str, given: str) -> None:
    try:
        _write_all(fd, text.encode("utf-8"))
    except OSError as exc:
        raise TensorForgeError(f"cannot write {what} {given}: {_reason(exc)}") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def _lock(path: Path, what: str, given: str) -> IO:
    lock_path = _lock_path(path)
    while True:
        try:
            handle = open(lock_path, "a+", encoding="utf-8")
        except OSError as exc:
            raise TensorForgeError(f"cannot write {what} {given}: {_reason(exc)}") from None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _holder(handle)
            handle.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise TensorForgeError(
                    f"{what} {given} is being written by another tensorforge command"
                    f"{holder}; wait for it or choose another path"
                ) from None
            raise TensorForgeError(f"cannot lock {what} {given}: {_reason(exc)}") from None
        try:
            same = os.fstat(handle.fileno()).st_ino == os.stat(lock_path).st_ino
        except FileNotFoundError:
            same = False
        if same:  # not a lock file its holder unlinked while we were opening it
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            return handle
        handle.close()


def _holder(handle: IO) -> str:
    try:
        handle.seek(0)
        pid = handle.read().strip()
    except OSError:
        return ""
    return f" (process {pid})" if pid.isdigit() else ""


def _open_fifo(path: Path, what: str) -> int:
    """A blocking write descriptor of the FIFO at `path`, refused at once when nobody reads it:
    opening a FIFO for writing would otherwise wait for a reader, and `-o fifo` with nobody
    reading would hang the command forever."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise TensorForgeError(f"cannot write {what} {path}: it is a FIFO with no reader") from None
        raise TensorForgeError(f"cannot write {what} {path}: {_reason(exc)}") from None
    os.set_blocking(fd, True)
    return fd


def _write_in_place(path: Path, text: str, what: str) -> None:
    try:
        info = os.stat(path)
        flags = os.O_WRONLY | (os.O_NONBLOCK if stat.S_ISFIFO(info.st_mode) else 0)
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise TensorForgeError(f"cannot write {what} {path}: it is a FIFO with no reader") from None
        raise TensorForgeError(f"cannot write {what} {path}: {_reason(exc)}") from None
    try:
        if stat.S_ISFIFO(info.st_mode):
            os.set_blocking(fd, True)  # the reader is there; now wait for it like a pipe
        _write_all(fd, text.encode("utf-8"))
    except OSError as exc:
        raise TensorForgeError(f"cannot write {what} {path}: {_reason(exc)}") from None
    finally:
        os.close(fd)


def _encoded(path: Path, text: str) -> bytes:
    data = text.encode("utf-8")
    if path.name.lower().endswith(".gz"):
        import gzip

        return gzip.compress(data, compresslevel=9, mtime=0)
    return data


def _write_regular(path: Path, data: bytes, what: str, replace: bool) -> str:
    import tempfile  # on first use: a refusal (or output to a terminal) needs none

    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise TensorForgeError(f"cannot write {what} {path}: {_reason(exc)}") from None
    try:
        # mkstemp creates the file 0600; give it the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return str(path)
        return _publish_new(tmp, path)
    except OSError as exc:
        raise TensorForgeError(f"cannot write {what} {path}: {_reason(exc)}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _publish_new(tmp: str, path: Path) -> str:
    """Give the finished temporary file the name `path` only if nothing has it; else the first
    free `STEM.N.SUFFIX` beside it. Returns the name used."""
    candidates = [path] + [path.with_name(f"{path.stem}.{n}{path.suffix}") for n in range(1, 1000)]
    for candidate in candidates:
        try:
            os.link(tmp, candidate)
            return str(candidate)
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            # A file system without hard links: exclusive create, then copy the bytes over.
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            with open(tmp, "rb") as source, os.fdopen(fd, "wb") as target:
                target.write(source.read())
                target.flush()
                os.fsync(target.fileno())
            return str(candidate)
    raise FileExistsError(errno.EEXIST, "no free name beside it")
