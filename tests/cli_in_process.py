"""`tensorforge ARGS` run in this process, answered as `subprocess.run([tensorforge, *ARGS],
capture_output=True, text=True)` answers: a CompletedProcess with the exit status, standard
output and standard error.

Why: a console-script process costs about a second of imports (torch, numpy, the plugins) before
the command starts, several on a busy 2-core CI machine, and most tests that ran one check what
the command prints, writes and exits with, not the process around it. In process the command
meets what a process started from the test would meet: the console script's own entry point
(`tensorforge.cli.main.main`, which turns errors into one line and an exit status), sys.argv
as the script sees it, standard streams that are not terminals (as pipes are not), the
environment and working folder given for the call only, Python's default warning filters
(a warning prints on standard error, as in a fresh interpreter), and an uncaught exception
printed as a traceback on standard error with exit status 1.

Keep a real process where the process is what a test is about: signals, two processes at once,
what reaches a file descriptor (/dev/stdout), a pipe on standard input, imports at startup, the
installed console script itself (tests/test_readme_tour.py runs every tour line through bash).
"""

from __future__ import annotations

import importlib
import io
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

TENSORFORGE = str(Path(sys.executable).parent / "tensorforge")
# What a test's subprocess would not have inherited: a terminal's screen and colour settings.
SCREEN = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")


def _default_warning_filters() -> None:
    """The filters of a fresh interpreter started without -W or PYTHONWARNINGS (pytest installs
    its own in this process)."""
    warnings.resetwarnings()
    warnings.filterwarnings("ignore", category=ResourceWarning)
    warnings.filterwarnings("ignore", category=ImportWarning)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
    return raw.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")  # text=True's newlines


def run_cli(
    *args: object,
    env: Mapping[str, str | None] | None = None,
    cwd: str | os.PathLike | None = None,
    input: str | None = None,
    path: Sequence[str | os.PathLike] = (),
) -> subprocess.CompletedProcess:
    """`tensorforge ARGS` in this process. `env`: variables set (a value) or unset (None) for the
    call only, on top of this process's environment less SCREEN; `cwd`: the working folder for
    the call; `input`: standard input's text (empty without it); `path`: folders first on
    sys.path for the call only, as PYTHONPATH puts them (the modules imported from them are
    forgotten afterwards)."""
    from tensorforge.cli.main import main

    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    changes: dict[str, str | None] = {name: None for name in SCREEN}
    changes.update(env or {})
    saved_env = {name: os.environ.get(name) for name in changes}
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv, saved_cwd, saved_path = sys.argv, os.getcwd(), list(sys.path)
    folders = [os.fspath(p) for p in path]
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode("utf-8")), encoding="utf-8")
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    code = 0
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [TENSORFORGE, *argv]
        if folders:
            sys.path[:0] = folders
            importlib.invalidate_caches()
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        with warnings.catch_warnings():
            _default_warning_filters()
            try:
                main(argv)
            except SystemExit as exc:  # as the interpreter turns it into a status
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except Exception:  # uncaught: a traceback on standard error, status 1
                traceback.print_exc(file=sys.stderr)
                code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        if folders:
            sys.path[:] = saved_path
            importlib.invalidate_caches()
            for name, module in list(sys.modules.items()):
                file = getattr(module, "__file__", None) or ""
                if any(file.startswith(os.path.join(folder, "")) for folder in folders):
                    del sys.modules[name]
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess([TENSORFORGE, *argv], code, _text(stdout), _text(stderr))
