"""The fault catalogue's harness: run one bad input or fault against the command line and check
what every case must show, whatever it is about.

Each case is a `Case`: a name that says what it checks, the command line, the files the folder
holds first, and what must come out (exit status, the one error line). Every case, on top of its
own expectation, must end without a traceback, with nothing half-written, and with every file
that existed before byte-for-byte the same and of the same type, unless the case says it may
write that file. Cases run in-process (`tensorforge.cli.main.main`, fast) unless they need a real
process (standard input, signals, other processes, special files), then as a subprocess of the
installed console script. Every case runs under a timeout (pytest-timeout): a hang fails.

Used by tests/test_faults_*.py; the catalogue's categories follow issue 16.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

TENSORFORGE = str(Path(sys.executable).parent / "tensorforge")
Content = str | bytes | Callable[[Path], None]


@attrs.frozen
class Case:
    """One entry of the catalogue."""

    name: str  # what it checks, in words (the test id)
    argv: tuple[str, ...]  # '{tmp}' is replaced by the case's folder
    files: Mapping[str, Content] = attrs.field(factory=dict)  # created before the run
    code: int = 2  # the exit status it must end with
    error: str | None = None  # regex the 'error: ...' line must match (code 2)
    out: str | None = None  # regex stdout must match
    may_write: tuple[str, ...] = ()  # files (relative) it may create or change
    must_write: tuple[str, ...] = ()  # files it must create
    subprocess: bool = False  # needs a real process
    stdin: bytes | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)
    timeout: float = 120  # seconds a subprocess may take (a hang guard)

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class Outcome:
    code: int
    stdout: str
    stderr: str
    traceback: str | None


def ids(cases: Sequence[Case]):
    return [c.name for c in cases]


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode):
            out[rel] = (stat.S_IFMT(info.st_mode), path.read_bytes())
        else:
            out[rel] = (stat.S_IFMT(info.st_mode), b"")
    return out


def _fill(folder: Path, files: Mapping[str, Content]) -> None:
    for rel, content in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def _expand(argv: Sequence[str], folder: Path) -> list:
    return [a.replace("{tmp}", str(folder)) for a in argv]


def run_in_process(argv: Sequence[str], folder: Path, env: Mapping[str, str]) -> Outcome:
    from tensorforge.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    saved_env = {k: os.environ.get(k) for k in env}
    old_cwd = os.getcwd()
    code, trace = 0, None
    try:
        os.environ.update(env)
        os.chdir(folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception as exc:  # what a user would see as a traceback
                import traceback

                trace = "".join(traceback.format_exception(exc))
                code = 1
    finally:
        os.chdir(old_cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return Outcome(code, out.getvalue(), err.getvalue(), trace)


def run_subprocess(
    argv: Sequence[str], folder: Path, env: Mapping[str, str], stdin: bytes | None, timeout: float = 120
) -> Outcome:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    full_env.update(env)
    proc = subprocess.run(
        [TENSORFORGE, *argv], input=stdin, capture_output=True, cwd=folder, env=full_env, timeout=timeout
    )
    stderr = proc.stderr.decode("utf-8", "replace")
    trace = stderr if "Traceback (most recent call last)" in stderr else None
    return Outcome(proc.returncode, proc.stdout.decode("utf-8", "replace"), stderr, trace)


def check(case: Case, tmp_path: Path) -> Outcome:
    """Run `case` in a fresh folder under tmp_path and assert the catalogue's invariants."""
    folder = tmp_path / "case"
    folder.mkdir()
    home = tmp_path / "home"
    _fill(folder, case.files)
    before = _snapshot(folder)
    env = {"TENSORFORGE_HOME": str(home), **{k: v.replace("{tmp}", str(folder)) for k, v in case.env.items()}}
    argv = _expand(case.argv, folder)
    if case.subprocess or case.stdin is not None:
        outcome = run_subprocess(argv, folder, env, case.stdin, case.timeout)
    else:
        outcome = run_in_process(argv, folder, env)
    where = f"{case.name}: tensorforge {' '.join(argv)[:300]}\nstdout: {outcome.stdout[-800:]}\nstderr: {outcome.stderr[-1500:]}"
    assert outcome.traceback is None, f"traceback in {where}\n{outcome.traceback}"
    assert outcome.code == case.code, f"exit {outcome.code}, expected {case.code} in {where}"
    if case.code == 2:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        assert lines, f"no error line in {where}"
        last = lines[-1]
        assert last.startswith("error: "), f"last stderr line is not 'error: ...' in {where}"
        assert len(last) < 600, f"error line of {len(last)} characters in {where}"
        if case.error is not None:
            assert re.search(case.error, last), f"error line does not match {case.error!r} in {where}"
    if case.out is not None:
        assert re.search(case.out, outcome.stdout, re.S), f"stdout does not match {case.out!r} in {where}"
    after = _snapshot(folder)
    allowed = set(case.may_write) | set(case.must_write)

    def may(rel: str) -> bool:  # a folder named in may_write covers what is inside it
        return any(rel == a or rel.startswith(a.rstrip("/") + "/") for a in allowed)

    for rel, (kind, data) in before.items():
        if may(rel):
            continue
        assert rel in after, f"{rel} was removed in {where}"
        assert after[rel][0] == kind, f"{rel} changed type in {where}"
        assert after[rel][1] == data, f"{rel} was overwritten in {where}"
    created = sorted(rel for rel in set(after) - set(before) if not may(rel))
    assert not created, f"unexpected files {created} in {where}"
    for rel in case.must_write:
        assert rel in after, f"{rel} was not written in {where}"
    return outcome
