"""Reading and writing the documents users hand in and the files TensorForge produces.

One reader for every JSON or TOML document (suite files, ceilings, target files, captures,
price tables, model configs), so each refuses bad input the same way: one line naming the
file, never a traceback. Six hand-copied readers had drifted (most missed UnicodeDecodeError,
and any of them would block forever on a FIFO); this is the only place that opens them.

Two shapes of message, by whose problem it is:
  cannot read suite file x.toml: No such file or directory    (the file could not be read)
  suite file x.toml: not valid TOML: Expected '=' ... (line 2)  (it was read; its content is bad)
Callers that check the document's structure use the second shape too ("{what} {path}: ...").

A gzip-compressed file is read as the text it holds (the first two bytes say so, whatever the
name): a capture is 1-4 MB of JSON and a tenth of that compressed, so archived captures are kept
that way and every command reads them as they are.

Every read is bounded (files/bounded.py): bytes counted while they stream in and unpack, JSON's
nesting and container count checked before it is parsed, numbers finite, one gzip member. A
number refused while parsing is named by its key ('(at prices.h200)'): the parser's hook that
refuses it is not told where it is, so the refused document is parsed once more to find it.

Writes are atomic: a reader sees the old file or the new one, never half of either.
"""

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from tensorforge.errors import TensorForgeError
from tensorforge.files.bounded import (
    MAX_DEPTH,
    MAX_JSON_BYTES,
    MAX_TOML_BYTES,
    bounded_int,
    check_json_shape,
    finite_float,
    read_limited,
    refuse_constant,
)

# What a path names when it is not a regular file, for the one-line refusal.
_NOT_REGULAR = {
    stat.S_IFDIR: "Is a directory",
    stat.S_IFIFO: "not a regular file (a FIFO)",
    stat.S_IFCHR: "not a regular file (a character device)",
    stat.S_IFBLK: "not a regular file (a block device)",
    stat.S_IFSOCK: "not a regular file (a socket)",
}


def _checked_path(path: str | os.PathLike[str], what: str) -> Path:
    """A path the operating system can be asked about: a NUL byte made `open` raise ValueError
    (a traceback) and an undecodable name an encoding error."""
    text = os.fspath(path)
    if "\0" in str(text):
        raise TensorForgeError(f"cannot read {what} {str(text)!r}: the path contains a NUL byte")
    return Path(path)


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TensorForgeError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_text(path: str | os.PathLike[str], what: str, limit: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of the regular file at `path`; `what` names it in errors ('suite file').
    More than `limit` bytes (of text, after unpacking gzip) is refused as it is read.

    The file is opened without blocking and checked to be a regular file before it is read:
    opening a FIFO for reading would otherwise wait for a writer that never comes.
    """
    path = _checked_path(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise TensorForgeError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            why = _NOT_REGULAR.get(stat.S_IFMT(mode), "not a regular file")
            raise TensorForgeError(f"cannot read {what} {path}: {why}")
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # the handle owns it now
            data = read_limited(handle, f"{what} {path}", limit)
    except OSError as exc:
        raise TensorForgeError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    return _decode(data, f"{what} {path}")


def read_stream_text(stream: BinaryIO, where: str, limit: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of an open stream (standard input), under the same budget as a file."""
    try:
        data = read_limited(stream, where, limit)
    except OSError as exc:
        raise TensorForgeError(f"cannot read {where}: {exc.strerror or exc}") from None
    return _decode(data, where)


def _check_depth(value: Any, where: str) -> None:
    """Nesting of a parsed value (TOML: its parser has no hook, and the text is small).
    Only containers are stacked: a long array of numbers costs nothing here."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise TensorForgeError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))


class _Refused(str):
    """A number a bounded parse refused, left in place by a second parse so its key is found."""


def _marking(check: Callable[[str], Any]) -> Callable[[str], Any]:
    """`check` as a parse hook that leaves what it refuses in place, marked."""

    def hook(text: str) -> Any:
        try:
            return check(text)
        except ValueError:
            return _Refused(text)

    return hook


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]{1,60}")


def _key_text(key: str) -> str:
    """A key as the path shows it: bare where it can be, else quoted, and never long (the
    document chose it)."""
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key if len(key) <= 60 else key[:40] + "...")


def _refused_at(parse: Callable[[], Any]) -> str:
    """' (at KEY.PATH)' of the first number `parse` (a parse with _marking hooks) leaves
    refused, or '' where none is found: the number's hook raises without its place, and a
    "nan is not finite" in a table of forty prices does not say which one."""
    try:
        stack: list[tuple[Any, str]] = [(parse(), "")]
    except (ValueError, RecursionError):
        return ""
    while stack:  # depth first, in document order
        item, path = stack.pop()
        if isinstance(item, _Refused):
            return f" (at {path or 'the top level'})"
        if isinstance(item, dict):
            keys = [_key_text(k) for k in item]
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in reversed(list(zip(keys, item.values()))))
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(item))))
    return ""


def parse_json(text: str, where: str) -> Any:
    """JSON `text`; `where` ('capture x.json') opens the one-line error. Nesting and size are
    checked before parsing; NaN, Infinity and numbers past float range are refused."""
    check_json_shape(text, where)
    try:
        return json.loads(text, parse_float=finite_float, parse_int=bounded_int, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise TensorForgeError(f"{where}: not valid JSON: {exc}") from None
    except ValueError as exc:  # a number refused by the hooks above
        at = _refused_at(
            lambda: json.loads(
                text,
                parse_float=_marking(finite_float),
                parse_int=_marking(bounded_int),
                parse_constant=_Refused,
            )
        )
        raise TensorForgeError(f"{where}: {exc}{at}") from None
    except RecursionError:
        raise TensorForgeError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """TOML `text`; `where` ('target file x.toml') opens the one-line error."""
    import tomllib  # on first use: every command line imports this module, few read TOML

    try:
        value = tomllib.loads(text, parse_float=finite_float)
    except tomllib.TOMLDecodeError as exc:
        raise TensorForgeError(f"{where}: not valid TOML: {exc}") from None
    except ValueError as exc:  # a number refused by finite_float, or too many digits
        at = _refused_at(lambda: tomllib.loads(text, parse_float=_marking(finite_float)))
        raise TensorForgeError(f"{where}: {str(exc).split(';')[0]}{at}") from None
    except RecursionError:
        raise TensorForgeError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(value, where)
    return value


def read_json(path: str | os.PathLike[str], what: str) -> Any:
    """The JSON document at `path` (any JSON value: callers check its shape)."""
    return parse_json(read_text(path, what, MAX_JSON_BYTES), f"{what} {Path(path)}")


def read_toml(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """The TOML document at `path`."""
    return parse_toml(read_text(path, what, MAX_TOML_BYTES), f"{what} {Path(path)}")


def read_document(path: str | os.PathLike[str], what: str) -> Any:
    """A file that may be either: JSON when its name ends in .json (or .json.gz), else TOML."""
    if Path(path).name.lower().endswith((".json", ".json.gz")):
        return read_json(path, what)
    return read_toml(path, what)


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    if "\0" in os.fspath(path):
        raise TensorForgeError(f"cannot write {os.fspath(path)!r}: the path contains a NUL byte")
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise TensorForgeError(f"cannot write {path}: folder {directory} does not exist")
    import tempfile  # on first use: most command lines write nothing

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
