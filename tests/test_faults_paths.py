"""Fault catalogue: paths that cannot name a readable document or a writable place — through a
file as if it were a folder, a name longer than the file system allows, a dangling symbolic
link, a loop of links, a NUL byte — for every reader and every command that writes; and the
weak evidence a calibration store or an evaluation may carry. Each is one line naming the path,
exit 2, no traceback, nothing written."""

from pathlib import Path

import pytest
from fault_catalogue import Case, check, ids
from golden import H200_RUN

pytestmark = pytest.mark.timeout(120)

GOLDEN = str(H200_RUN)
NUL = "\x00"
LONG = "x" * 300  # one path component over the 255 bytes of common Linux file systems

# Each reader: the command that reads it and the file name it reads.
READERS = {
    "suite (TOML)": (("predict", "-t", "h200", "--suite", "{f}"), "s.toml"),
    "suite (JSON)": (("predict", "-t", "h200", "--suite", "{f}"), "s.json"),
    "model config": (("predict", "-t", "h200", "-w", "transformer:config={f},seq=16"), "c.json"),
    "ceilings": (("predict", "-t", "h200", "-w", "gemm_tiny", "--ceilings", "{f}", "--force-ceilings"), "c.json"),
    "prices": (("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--prices", "{f}"), "p.toml"),
    "target file": (("predict", "-t", "./{f}", "-w", "gemm_tiny"), "t.toml"),
    "capture to verify": (("verify", "{f}"), "cap.json"),
    "baseline capture": (("gate", "{f}", GOLDEN), "cap.json"),
    "candidate capture": (("gate", GOLDEN, "{f}"), "cap.json"),
    "capture to report": (("report", "{f}", "-o", "-"), "cap.json"),
    "report's baseline": (("report", GOLDEN, "--baseline", "{f}", "-o", "-"), "cap.json"),
    "capture to export": (("export", "{f}", "--to", "mlflow"), "cap.json"),
    "capture to evaluate": (("evaluate", "{f}"), "cap.json"),
    "rightsize's capture": (("rightsize", "-w", "gemm_tiny", "--latency-ms", "1", "--capture", "{f}"), "cap.json"),
}


def _link_to_nothing(path: Path) -> None:
    path.symlink_to(path.parent / "nothing-here")


def _link_loop(path: Path) -> None:
    path.symlink_to(path.name)  # a link to itself: ELOOP


# fault: (how the name is spelt, the files made first, what the error line must show)
PATH_FAULTS = {
    "through a file as if it were a folder": (
        lambda name: f"plain/{name}",
        lambda name: {"plain": "not a folder\n"},
        r"plain/",
    ),
    "a name too long for the file system": (lambda name: LONG + name, lambda name: {}, r"x{20}"),
    "a dangling symbolic link": (lambda name: name, lambda name: {name: _link_to_nothing}, None),
    "a loop of symbolic links": (lambda name: name, lambda name: {name: _link_loop}, None),
}
# NUL is refused before any file is touched (test_faults_samples.py has the suite, capture and
# target-file paths; these are the other readers)
NUL_READERS = [r for r in READERS if r not in ("suite (TOML)", "capture to verify", "target file")]


def _reader_case(reader: str, fault: str) -> Case:
    argv, name = READERS[reader]
    spell, files, error = PATH_FAULTS[fault]
    path = spell(name)
    return Case(
        f"{reader} at {fault}",
        tuple(a.replace("{f}", path) for a in argv),
        files=files(name),
        error=error or rf"{name.replace('.', chr(92) + '.')}",
    )


READER_CASES = [_reader_case(reader, fault) for reader in READERS for fault in PATH_FAULTS] + [
    Case(
        f"{reader} at a path holding a NUL byte",
        tuple(a.replace("{f}", f"a{NUL}{READERS[reader][1]}") for a in READERS[reader][0]),
        error=r"NUL byte",
    )
    for reader in NUL_READERS
]


@pytest.mark.parametrize("case", READER_CASES, ids=ids(READER_CASES))
def test_reader_paths(case, tmp_path):
    check(case, tmp_path)


# Each writer: the command line without its output path.
WRITERS = {
    "predict": ("predict", "-t", "h200", "-w", "gemm_tiny", "--json", "-o"),
    "report": ("report", GOLDEN, "-o"),
    "run": ("run", "-t", "h200", "-w", "gemm_tiny", "--no-telemetry", "--cooldown", "0", "--rest", "0", "-o"),
}
OUTPUT_FAULTS = {
    "through a file as if it were a folder": ("plain/out.json", {"plain": "not a folder\n"}, r"plain"),
    "a name too long for the file system": (LONG + ".json", {}, r"x{20}"),
    "a dangling symbolic link": ("out.json", {"out.json": _link_to_nothing}, r"out\.json"),
    "a path holding a NUL byte": (f"o{NUL}.json", {}, r"NUL byte"),
}
OUTPUT_CASES = [
    Case(f"{writer} -o {fault}", argv + (path,), files=files, error=error)
    for writer, argv in WRITERS.items()
    for fault, (path, files, error) in OUTPUT_FAULTS.items()
]


@pytest.mark.parametrize("case", OUTPUT_CASES, ids=ids(OUTPUT_CASES))
def test_output_paths(case, tmp_path):
    check(case, tmp_path)
