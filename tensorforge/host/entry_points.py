"""The installed entry points, read from the distributions' own files in one pass.

Why not importlib.metadata: every command line (`--help` too) discovers the plugins, and in a
fresh process importlib.metadata cost about 30 ms to import (it brings email, zipfile and csv)
plus about 5 ms per group asked for (each query reads every distribution's entry_points.txt
again), a sixth of `tensorforge --help`. One pass here reads each entry_points.txt once (about
2 ms for a hundred distributions) and serves every group from it.

It finds what importlib.metadata finds, by the same rules: the `*.dist-info` and `*.egg-info`
folders in the folders on sys.path ('' is the current folder), in sys.path order; of two
distributions whose names normalise alike, the first found wins; entry_points.txt is read as
importlib.metadata reads it. It asks importlib.metadata instead where it could not see the same
things (an archive or an egg on sys.path, a finder on sys.meta_path that finds distributions of
its own), and where importlib.metadata is imported already: then it costs nothing more, and the
process may have changed what it finds (tests/test_declared_dependencies.py hides distributions
that way). A distribution's name and version come from its METADATA headers, read only when
asked for.
"""

import os
import re
import sys
from typing import Any

_INFO = (".dist-info", ".egg-info")
# importlib.metadata.EntryPoint.pattern: module, optional :attribute, optional [extras]
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class Distribution:
    """An installed distribution's metadata folder; `name` and `version` from its headers."""

    __slots__ = ("path", "_headers")

    def __init__(self, path: str) -> None:
        self.path = path
        self._headers: dict[str, str] | None = None

    def _header(self, key: str) -> str | None:
        if self._headers is None:
            self._headers = _headers(self.path)
        return self._headers.get(key)

    @property
    def name(self) -> str | None:
        return self._header("name")

    @property
    def version(self) -> str | None:
        return self._header("version")


class _MetadataDistribution:
    """A distribution importlib.metadata found (the fallback), with the same two fields."""

    __slots__ = ("_dist", "_metadata")

    def __init__(self, dist) -> None:
        self._dist = dist
        self._metadata: Any = None

    def _header(self, key: str) -> str | None:
        if self._metadata is None:
            self._metadata = self._dist.metadata  # one parse of the file for both fields
        return self._metadata.get(key)

    @property
    def name(self) -> str | None:
        return self._header("Name")

    @property
    def version(self) -> str | None:
        return self._header("Version")


class EntryPoint:
    """One entry point: `name = value` in `group`, declared by `dist`."""

    __slots__ = ("name", "value", "group", "dist")

    def __init__(self, name: str, value: str, group: str, dist) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def load(self):
        """The object the value names ('module' or 'module:attribute'), imported now."""
        from importlib import import_module

        match = _VALUE.match(self.value)
        if match is None:
            raise ValueError(f"entry point {self.name!r} names {self.value!r}, not 'module' or 'module:attribute'")
        found = import_module(match.group("module"))
        for attribute in filter(None, (match.group("attr") or "").split(".")):
            found = getattr(found, attribute)
        return found

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of `group`, in the order their distributions were found."""
    return [ep for ep in all_entry_points() if ep.group == group]


def all_entry_points() -> list[EntryPoint]:
    """Every entry point of every installed distribution, whatever its group."""
    if "importlib.metadata" in sys.modules or _needs_importlib():
        return _from_importlib()
    return scan()


def scan() -> list[EntryPoint]:
    """all_entry_points, read from the metadata folders on sys.path (the module's docstring)."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        folder = entry or "."
        try:
            children = os.listdir(folder)
        except OSError:  # not there, or not a folder (_needs_importlib took the archives)
            continue
        for child in children:
            low = child.lower()
            if not low.endswith(_INFO):
                continue
            # importlib.metadata's name of a metadata folder: its stem up to the first '-'
            key = re.sub(r"[-_.]+", "_", low.rpartition(".")[0].partition("-")[0])
            if key in seen:
                continue
            seen.add(key)
            path = os.path.join(folder, child)
            text = _read(os.path.join(path, "entry_points.txt"))
            if text:
                found += _parse(text, Distribution(path))
    return found


def _needs_importlib() -> bool:
    """Whether sys.path or sys.meta_path holds what only importlib.metadata reads."""
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if finder is not PathFinder and hasattr(finder, "find_distributions"):
            return True
    return any(entry.endswith(".egg") or os.path.isfile(entry) for entry in sys.path if entry)


def _from_importlib() -> list[EntryPoint]:
    from importlib import metadata

    found = []
    seen: set[str] = set()
    for dist in metadata.distributions():  # the first of a name wins, as in metadata.entry_points()
        key = re.sub(r"[-_.]+", "_", dist.metadata["Name"] or "").lower()
        if key in seen:
            continue
        seen.add(key)
        wrapped = _MetadataDistribution(dist)
        found += [EntryPoint(ep.name, ep.value, ep.group, wrapped) for ep in dist.entry_points]
    return found


def _parse(text: str, dist: Distribution) -> list[EntryPoint]:
    """entry_points.txt as importlib.metadata reads it: `[group]` lines, `name = value` lines,
    '#' comments; a line of neither kind is skipped (importlib.metadata would fail every
    distribution's entry points for it)."""
    found = []
    group = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        name, equals, value = line.partition("=")
        if group is not None and equals:
            found.append(EntryPoint(name.strip(), value.strip(), group, dist))
    return found


def _headers(path: str) -> dict[str, str]:
    """The first value of each header of the distribution's METADATA (or PKG-INFO), by lower-case
    key: the lines up to the first blank one, as an email parser reads them."""
    text = _read(os.path.join(path, "METADATA")) or _read(os.path.join(path, "PKG-INFO")) or ""
    headers: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        if line[0] in " \t":  # a continuation of the previous header
            continue
        key, colon, value = line.partition(":")
        if colon:
            headers.setdefault(key.strip().lower(), value.strip())
    return headers


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None
