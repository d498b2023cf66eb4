"""Fault catalogue: where commands write. Devices stay devices, existing files are replaced only
with --force (run's summary and incomplete capture too), '-' is standard output, a second writer
of the same file is refused at once, and SIGTERM/SIGHUP leave an incomplete capture as Ctrl-C does."""

import json
import os
import signal
import stat
import subprocess
import time

import pytest
from fault_catalogue import TENSORFORGE, Case, check, ids

pytestmark = pytest.mark.timeout(180)

PREDICT = ("predict", "-t", "h200", "-w", "gemm_tiny", "--json")
# No CUDA device here: torch-cuda is unavailable, so the run predicts and writes in a few seconds.
RUN = ("run", "-t", "h200", "-w", "gemm_tiny", "--no-telemetry", "--cooldown", "0", "--rest", "0")
OLD = "old contents\n"


def fifo(path):
    os.mkfifo(path)


def folder(path):
    path.mkdir()


CASES = [
    Case(
        "predict -o an existing file is refused without --force",
        PREDICT + ("-o", "p.json"),
        files={"p.json": OLD},
        error=r"prediction p\.json already exists; choose another path or pass --force",
    ),
    Case(
        "predict -o an existing file --force replaces it",
        PREDICT + ("-o", "p.json", "--force"),
        files={"p.json": OLD},
        code=0,
        may_write=("p.json",),
    ),
    Case("predict -o a new file writes it", PREDICT + ("-o", "p.json"), code=0, must_write=("p.json",)),
    Case("predict -o - is standard output", PREDICT + ("-o", "-"), code=0, out=r'^\{\s*"bound": '),
    Case("predict -o a folder is refused", PREDICT + ("-o", "d"), files={"d": folder}, error=r"d: it is a folder"),
    Case(
        "predict -o in a missing folder is refused",
        PREDICT + ("-o", "no/such/p.json"),
        error=r"folder .*no/such does not exist",
    ),
    Case(
        "predict -o a FIFO without a reader is refused, not hung",
        PREDICT + ("-o", "f"),
        files={"f": fifo},
        error=r"f: it is a FIFO with no reader",
    ),
    Case(
        "predict -o /dev/full is one line", PREDICT + ("-o", "/dev/full"), error=r"/dev/full: No space left on device"
    ),
    Case("predict -o /dev/null leaves nothing", PREDICT + ("-o", "/dev/null"), code=0),
    Case(
        "predict -o /dev/stdout writes through the descriptor",
        PREDICT + ("-o", "/dev/stdout"),
        code=0,
        out=r'^\{\s*"bound": ',
        subprocess=True,
    ),
    Case(
        "run -o an existing capture is refused before any work",
        RUN + ("-o", "cap.json"),
        files={"cap.json": OLD},
        error=r"capture cap\.json already exists",
    ),
    Case(
        "run refuses to overwrite an existing summary",
        RUN + ("-o", "cap.json"),
        files={"cap.summary.txt": OLD},
        error=r"summary cap\.summary\.txt already exists",
    ),
    Case(
        "run refuses to overwrite an earlier incomplete capture",
        RUN + ("-o", "cap.json"),
        files={"cap.incomplete.json": OLD},
        error=r"incomplete capture .*cap\.incomplete\.json already exists",
    ),
    Case(
        "run --force replaces the capture and its summary",
        RUN + ("-o", "cap.json", "--force"),
        files={"cap.json": OLD, "cap.summary.txt": OLD},
        code=0,
        may_write=("cap.json", "cap.summary.txt"),
    ),
    Case("run -o /dev/null writes no summary beside it", RUN + ("-o", "/dev/null"), code=0),
    Case(  # in process (sys.stdout); through a real process's pipe: test_run_to_standard_output_...
        "run -o - puts the capture on standard output",
        RUN + ("-o", "-"),
        code=0,
        out=r'^\{\s*"calibrated": ',
    ),
    Case("run -o /dev/full is one line after the run", RUN + ("-o", "/dev/full"), error=r"No space left on device"),
    Case(
        "run with TENSORFORGE_HOME a file is refused before any probe",
        RUN + ("-o", "cap.json"),
        files={"homefile": "x"},
        env={"TENSORFORGE_HOME": "{tmp}/homefile"},
        error=r"TensorForge's home .*homefile \(\$TENSORFORGE_HOME\) is not a folder",
    ),
    Case(
        "run with TENSORFORGE_HOME under a file is refused",
        RUN + ("-o", "cap.json"),
        files={"homefile": "x"},
        env={"TENSORFORGE_HOME": "{tmp}/homefile/sub"},
        error=r"cannot be created: .*homefile is not a folder",
    ),
    Case(
        "report of a missing capture to an existing file keeps the file",
        ("report", "nope.json", "-o", "r.html"),
        files={"r.html": OLD},
        error=r"report r\.html already exists",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_destinations(case, tmp_path):
    before = {d: os.stat(d) for d in ("/dev/null", "/dev/full") if os.path.exists(d)}
    check(case, tmp_path)
    for device, info in before.items():  # a device node is never replaced
        after = os.stat(device)
        assert stat.S_ISCHR(after.st_mode) and after.st_ino == info.st_ino, device


def test_run_to_standard_output_is_one_sealed_capture_and_the_summary_goes_to_stderr(tmp_path):
    outcome = check(Case("run -o - json", RUN + ("-o", "-"), code=0, subprocess=True), tmp_path)
    doc = json.loads(outcome.stdout)
    assert doc["target"] == "h200" and doc["digest"]["value"]
    assert "PREDICTED" in outcome.stderr and "wrote standard output" in outcome.stderr


def _as_in_a_terminal():
    """In the child before exec: SIGINT at its default, as for a command a terminal runs in the
    foreground (where Ctrl-C reaches it). Why: a shell without job control starts a background job
    with SIGINT ignored, and the test runner, and so the run, inherit that (a CI job started that
    way failed the Ctrl-C case: the run rightly kept an inherited SIG_IGN and measured on)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_run(folder, *extra, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    full_env["TENSORFORGE_HOME"] = str(folder / "home")
    full_env.update(env or {})
    return subprocess.Popen(
        [TENSORFORGE, *extra],
        cwd=folder,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_in_a_terminal,
    )


def test_a_second_run_on_the_same_capture_is_refused_while_the_first_holds_it(tmp_path):
    from tensorforge.files.output import claim

    with claim(tmp_path / "cap.json", "capture"):  # another command is writing it
        proc = _start_run(tmp_path, *RUN, "-o", "cap.json")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert err.strip().splitlines()[-1] == (
        f"error: capture cap.json is being written by another tensorforge "
        f"command (process {os.getpid()}); wait for it or choose another path"
    )
    assert not (tmp_path / "cap.json").exists()


def test_two_runs_at_once_one_wins_and_the_other_says_so(tmp_path):
    procs = [_start_run(tmp_path, *RUN, "-o", "cap.json") for _ in range(2)]
    results = [p.communicate(timeout=150) + (p.returncode,) for p in procs]
    codes = sorted(r[2] for r in results)
    assert codes == [0, 2], results
    loser = next(r for r in results if r[2] == 2)
    assert "being written by another tensorforge command" in loser[1] or "already exists" in loser[1], loser[1]
    winner = next(r for r in results if r[2] == 0)
    assert f"wrote {tmp_path / 'cap.json'}" in winner[1] or "wrote cap.json" in winner[1]
    assert json.loads((tmp_path / "cap.json").read_text())["complete"] is True


@pytest.mark.parametrize(
    "signum, code",
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
    ids=["SIGTERM (CI cancel, timeout)", "SIGHUP (terminal closed)", "SIGINT (Ctrl-C)"],
)
def test_a_signal_during_a_run_leaves_the_incomplete_capture(tmp_path, host_cpu_calibration, signum, code):
    # host-cpu measures for real. The signal follows the first "measuring" line; what is left to
    # do then (at least 25 timed samples of each of two 2048^3 GEMMs, ~17 GFLOP each: seconds of
    # CPU work however fast the CPU) keeps the run going until the signal comes, even when this
    # test process is scheduled late on a busy machine. The home holds a calibration already (one
    # made for the session, conftest.py): a fresh home would calibrate first (~26 s on the 2-core
    # VM) before its first "measuring" line, and these cases are about a run stopped while measuring.
    host_cpu_calibration.copy_home(tmp_path / "home")
    proc = _start_run(
        tmp_path,
        "run",
        "-t",
        "host-cpu",
        "-w",
        "gemm:m=2048,n=2048,k=2048,dtype=fp32",
        "-w",
        "gemm:m=2048,n=2048,k=2040,dtype=fp32",
        "--budget",
        "60",
        "--cooldown",
        "0",
        "--rest",
        "0",
        "--no-telemetry",
        "-o",
        "cap.json",
    )
    lines = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        if "measuring" in line or not line:
            break
    proc.send_signal(signum)
    out, rest = proc.communicate(timeout=60)
    err = "".join(lines) + rest
    assert proc.returncode == code, err
    assert "Traceback" not in err
    partial = tmp_path / "cap.incomplete.json"
    assert f"wrote incomplete capture {partial}" in err or "wrote incomplete capture cap.incomplete.json" in err, err
    doc = json.loads(partial.read_text())
    assert doc["complete"] is False and doc["predicted"]["analytical"]["workloads"]
    assert not (tmp_path / "cap.json").exists() and not (tmp_path / "cap.summary.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap.incomplete.json", "home"]  # no lock left
