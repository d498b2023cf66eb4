"""Fault catalogue: TensorForge's own state and optional pieces — its home, the calibration
store, the signing key, matplotlib — and the commands whose success paths had no test
(`calibrate` on a real device, `rightsize` over every installed target). Each fault is one line
naming what is wrong, before any probe runs; each success says what it did."""

import json
import os
import re
import sys

import pytest
from click.testing import CliRunner
from fault_catalogue import Case, check, ids
from golden import HOST_CPU_RUN

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("clean_plugin_env")]

CPU_RUN = (
    "run",
    "-t",
    "host-cpu",
    "-w",
    "gemm:m=64,n=64,k=64,dtype=fp32",
    "--budget",
    "0.2",
    "--cooldown",
    "0",
    "--rest",
    "0",
    "--no-telemetry",
)

CASES = [
    Case(
        "calibrate with TENSORFORGE_HOME a file is refused before the probes",
        ("calibrate", "--backend", "torch-cpu"),
        files={"homefile": "x"},
        env={"TENSORFORGE_HOME": "{tmp}/homefile"},
        error=r"TensorForge's home .*homefile \(\$TENSORFORGE_HOME\) is not a folder",
    ),
    Case(
        "a host-cpu run with TENSORFORGE_HOME a file is refused before the probes",
        CPU_RUN + ("-o", "c.json"),
        files={"homefile": "x"},
        env={"TENSORFORGE_HOME": "{tmp}/homefile"},
        error=r"is not a folder",
    ),
    Case(
        "a signing key others can read is refused before the run",
        CPU_RUN + ("-o", "c.json"),
        files={"h/keys/capture-signing.key": lambda p: (p.write_text("x"), p.chmod(0o644))},
        env={"TENSORFORGE_HOME": "{tmp}/h"},
        error=r"signing key .* is accessible to others \(mode 0644\)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_state(case, tmp_path):
    check(case, tmp_path)


@pytest.fixture(scope="module")
def cpu_fingerprint():
    from tf_cpu.backend import TorchCpuBackend

    session = TorchCpuBackend().open(0)
    try:
        return session.info.fingerprint
    finally:
        session.close()


@pytest.mark.parametrize(
    "content, why",
    [
        ("{ truncated", r"not valid JSON"),
        (b"\xff\xfe", r"not UTF-8"),
        ("[1, 2]", r"is not a calibration for"),
        ('{"fingerprint": "cpu-0000"}', r"is not a calibration for"),
    ],
    ids=["truncated JSON", "not UTF-8", "a list", "another fingerprint"],
)
def test_a_damaged_calibration_store_is_one_line_and_kept(tmp_path, cpu_fingerprint, content, why):
    store = f"home/calibrations/{cpu_fingerprint}.json"
    case = Case(
        f"damaged store: {why}",
        CPU_RUN + ("-o", "c.json"),
        files={store: content},
        env={"TENSORFORGE_HOME": "{tmp}/home"},
        error=why + r".*remove it or pass --recalibrate",
        may_write=("home/keys",),
    )  # the signing key, made on first use
    check(case, tmp_path)


def test_calibrate_on_the_host_cpu_stores_and_prints_its_ceilings(host_cpu_calibration, tmp_path, monkeypatch):
    """The success path of `calibrate`, for real on this machine's CPU: the session's one
    calibration (conftest.py) is `calibrate --target host-cpu --json` run through the catalogue's
    checks. The text form is the same command without --json; its probes are not run a second
    time (they are what the JSON run just proved): they give back the stored calibration."""
    from tensorforge_measure.calibrate import store

    out = host_cpu_calibration.outcome
    doc = json.loads(out.stdout)
    assert doc["label"] == "CALIBRATED" and doc["fingerprint"].startswith("cpu-")
    assert doc["ceilings"]["compute"]["fp32"] > 0 and doc["ceilings"]["dram_bytes_per_s"] > 0
    stored = host_cpu_calibration.home / "calibrations" / f"{doc['fingerprint']}.json"
    assert f"stored {stored}" in out.stderr and json.loads(stored.read_text())["fingerprint"] == doc["fingerprint"]
    monkeypatch.setenv("TENSORFORGE_HOME", str(host_cpu_calibration.home))
    measured = store.load(doc["fingerprint"])
    assert measured is not None
    monkeypatch.setattr(store, "run_probes", lambda session, probes, progress=None, **kw: measured)
    text = check(
        Case(
            "calibrate --backend torch-cpu, text",
            ("calibrate", "--backend", "torch-cpu"),
            code=0,
            env={"TENSORFORGE_HOME": "{tmp}/home"},
            may_write=("home",),
        ),
        tmp_path,
    )
    assert text.stdout.startswith("CALIBRATED on ") and f"({doc['fingerprint']}) at " in " ".join(text.stdout.split())
    assert re.search(r"^  \w+ compute fp32: ", text.stdout, re.M)
    assert "stored " in text.stderr and (tmp_path / "case" / "home" / "calibrations" / stored.name).is_file()


def test_rightsize_over_the_default_suite_and_every_target_answers(tmp_path):
    """The default suite holds a tf32 GEMM no CPU runs: that workload is RULED OUT on host-cpu,
    saying why, instead of failing the command on every installation."""
    out = check(Case("rightsize default suite", ("rightsize", "--latency-ms", "1"), code=0), tmp_path)
    # rightsize prints one row per target and workload (columns fitted to the screen)
    assert re.search(r"^host-cpu\s+gemm_square_tf32\s+RULED OUT\s+cannot run on host-cpu", out.stdout, re.M)
    assert "target 'host-cpu' declares no tf32 rate" in " ".join(out.stdout.split())
    assert re.search(r"^h200\s+gemm_square_tf32\s+UNKNOWN", out.stdout, re.M)


def test_report_without_matplotlib_says_how_to_get_the_plots(tmp_path, monkeypatch):
    from tensorforge.cli.main import make_cli
    from tensorforge.host.plugin_host import PluginHost

    capture = HOST_CPU_RUN
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the report extra were not installed
    out = tmp_path / "r.html"
    result = CliRunner().invoke(make_cli(PluginHost), ["report", str(capture), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (
        "warning: the report has no plots: matplotlib is not installed "
        "(pip install 'tensorforge[report]' adds the plots)"
    )
    page = out.read_text()
    assert page.count("matplotlib is not installed (pip install &#x27;tensorforge[report]&#x27; adds the plots)") == 2
    assert "<svg" not in page and os.path.getsize(out) > 1000
