"""`tensorforge rightsize`: RULED OUT from analytical evidence (bound, memory) or a measurement
that misses; MEETS only with a capture measured on that device; UNKNOWN otherwise, with the
command that would settle it; prices rank only what MEETS. Expected numbers come from the real
captures and from the Core's own prediction."""

import functools
import hashlib
import json
from pathlib import Path

import pytest
from cli_in_process import run_cli as tensorforge
from click.testing import CliRunner
from golden import H200_RUN, RTX_ON_H200

from tensorforge.bound.model import predict
from tensorforge.cli.main import make_cli
from tensorforge.cli.units import seconds
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve
from tensorforge_measure.capture.document import verify

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
BASE = H200_RUN
TARGETS = "h200,rtx3050-laptop"  # explicit: other installed targets must not change these tests
LAPTOP_GPU = "NVIDIA GeForce RTX 3050 Laptop GPU"
BIG_FP32 = "gemm:m=32768,n=32768,k=32768,dtype=fp32"


def load(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def p50(path, name) -> float:
    return load(path)["measured"]["workloads"][name]["stats"]["p50"]


@functools.cache
def _host():
    return PluginHost()


def bound(target: str, spec: str):
    """The Core's PREDICTED (analytical) workload for `spec` on `target`."""
    host = _host()
    (w,) = predict(resolve(host, (spec,), ()), host.target(target), host.mappings()).workloads
    return w


def rightsize(*args):
    """In process, JSON: (exit code, document, {target: result})."""
    result = CliRunner().invoke(make_cli(_host), ["rightsize", "--targets", TARGETS, *map(str, args), "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    doc = json.loads(result.stdout)
    assert doc["label"] == "POLICY"
    return doc, {r["target"]: r for r in doc["results"]}


def run_cli(*args):
    """`tensorforge rightsize ARGS`, in this process (tests/cli_in_process.py: the console
    script's entry point, without a second of imports per command)."""
    return tensorforge("rightsize", *args, env={"TENSORFORGE_PLUGINS": None, "TENSORFORGE_DISABLE": None})


def one_error_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


@pytest.fixture(autouse=True)
def _home_and_originals_untouched(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (BASE, RTX_ON_H200)}
    yield
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (BASE, RTX_ON_H200)} == before


@pytest.fixture(scope="module")
def laptop_capture(tmp_path_factory) -> Path:
    """Evidence for the laptop target, made by the real runner with chosen samples on a device
    named as the laptop GPU (capture_factory): gemm_tiny at 20x the H200 capture's samples, and
    gemm_large_square; it verifies like any capture `run` writes."""
    from capture_factory import make_capture, write

    tiny = tuple(s * 20 for s in load(RTX_ON_H200)["measured"]["workloads"]["gemm_tiny"]["samples_s"])
    folder = tmp_path_factory.mktemp("laptop")
    capture = make_capture(
        {
            "gemm_tiny": tiny,
            "gemm_large_square": tuple(
                s * 20 for s in load(RTX_ON_H200)["measured"]["workloads"]["gemm_large_square"]["samples_s"]
            ),
        },
        home=folder / "home",
        target="rtx3050-laptop",
        device_name=LAPTOP_GPU,
        fingerprint="cuda-fabricated3050",
    )
    path = write(folder / "laptop.json", capture)
    assert verify(path).ok
    return path


# ---------------------------------------------------------------- verdicts


def test_measured_h200_meets_and_laptop_is_ruled_out_by_its_bound():
    doc, results = rightsize("-w", "gemm_large_square", "--latency-ms", "2", "--capture", BASE)
    assert doc["objective"] == {"kind": "latency", "value": 0.002}
    h200, laptop = results["h200"], results["rtx3050-laptop"]
    assert h200["verdict"] == "MEETS"
    (cell,) = h200["cells"]
    measured = p50(BASE, "gemm_large_square")
    assert measured <= 0.002
    assert cell["verdict"] == "MEETS"
    assert cell["measured_p50_s"] == measured
    assert cell["evidence"] == str(BASE)
    assert cell["lower_bound_s"] == pytest.approx(bound("h200", "gemm_large_square").latency_s)
    assert f"MEASURED p50 {seconds(measured)} meets latency <= 2 ms" == cell["reason"]
    assert laptop["verdict"] == "RULED OUT"
    (cell,) = laptop["cells"]
    lower = bound("rtx3050-laptop", "gemm_large_square").latency_s
    assert lower > 0.002 and cell["lower_bound_s"] == pytest.approx(lower)
    assert cell["reason"] == f"PREDICTED lower bound {seconds(lower)} already misses latency <= 2 ms"
    assert cell["measured_p50_s"] is None and cell["evidence"] is None
    assert [r["target"] for r in doc["results"]] == ["h200", "rtx3050-laptop"]  # MEETS first


def test_table_names_the_same_verdicts():
    proc = run_cli("-w", "gemm_large_square", "--latency-ms", "2", "--capture", BASE, "--targets", TARGETS)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("POLICY  right-sizing for latency <= 2 ms over 1 workload(s)")
    assert out.splitlines()[1] == f"        evidence {BASE}: unsigned: nothing shows who produced it"
    lines = {line.split()[0]: line for line in out.splitlines()[4:6]}
    assert "MEETS" in lines["h200"] and "RULED OUT" in lines["rtx3050-laptop"]
    measured = p50(BASE, "gemm_large_square")
    cells = out.split("\n\n")[1].splitlines()
    assert cells[0].split() == ["target", "workload", "verdict", "why"]
    assert (
        f"h200            gemm_large_square  MEETS      MEASURED p50 {seconds(measured)} meets latency <= 2 ms" in cells
    )
    # each fact once: the reason appears in the workload table only, not again in the target table
    assert out.count(f"MEASURED p50 {seconds(measured)}") == 1
    assert out.count("already misses") == 1


def test_workload_that_does_not_fit_the_laptop():
    doc, results = rightsize("-w", BIG_FP32, "--latency-ms", "1e7")  # an objective every bound allows
    laptop = _host().target("rtx3050-laptop")
    w = bound("rtx3050-laptop", BIG_FP32)
    assert w.footprint_bytes == 3 * 32768**2 * 4 == 12 * 2**30
    assert not w.fits_in_memory and w.footprint_bytes > laptop.dram_capacity_bytes
    (cell,) = results["rtx3050-laptop"]["cells"]
    assert cell["verdict"] == "RULED OUT"
    assert cell["reason"] == (
        f"does not fit: needs {w.footprint_bytes / 2**30:.2f} GiB, "
        f"rtx3050-laptop has {laptop.dram_capacity_bytes / 2**30:.2f} GiB"
    )
    assert "needs 12.00 GiB" in cell["reason"]
    # on the H200 it fits and the bound allows it, but nothing measured it
    assert results["h200"]["verdict"] == "UNKNOWN"


def test_unmeasured_workload_is_unknown_with_the_command_that_settles_it():
    spec = "gemm_tiny:dtype=fp16"  # the capture measured gemm_tiny in bf16 only: not the same workload
    doc, results = rightsize("-w", spec, "--latency-ms", "1", "--capture", BASE)
    for target in ("h200", "rtx3050-laptop"):
        w = bound(target, spec)
        (cell,) = results[target]["cells"]
        assert results[target]["verdict"] == "UNKNOWN"
        assert cell["verdict"] == "UNKNOWN" and cell["measured_p50_s"] is None
        assert f"run `tensorforge run --target {target} -w {w.spec}` there" in cell["reason"]
        assert f"lower bound {seconds(w.latency_s)} would allow it" in cell["reason"]
        assert results[target]["reason"] == f"no measurement on {target} for: {w.name}"
    # the suggested spec is one the CLI accepts
    hint = bound("h200", spec).spec
    proc = tensorforge("predict", "-t", "h200", "-w", hint)
    assert proc.returncode == 0, proc.stderr
    table = run_cli("-w", spec, "--latency-ms", "1", "--capture", BASE, "--targets", TARGETS)
    assert "no target is shown to meet the objective: no recommendation without evidence" in table.stdout


def test_without_captures_nothing_meets():
    doc, results = rightsize("-w", "gemm_large_square", "-w", "gemm_tiny", "--latency-ms", "100")
    assert {r["verdict"] for r in results.values()} <= {"UNKNOWN", "RULED OUT"}
    assert all(c["measured_p50_s"] is None for r in results.values() for c in r["cells"])


def test_objective_the_measurement_misses_is_ruled_out_by_the_measurement():
    measured = p50(BASE, "gemm_large_square")
    lower = bound("h200", "gemm_large_square").latency_s
    assert lower < measured
    objective_ms = (lower + measured) / 2 * 1e3  # the bound allows it; the measurement does not
    doc, results = rightsize("-w", "gemm_large_square", "--latency-ms", repr(objective_ms), "--capture", BASE)
    (cell,) = results["h200"]["cells"]
    assert results["h200"]["verdict"] == "RULED OUT"
    assert cell["verdict"] == "RULED OUT" and cell["measured_p50_s"] == measured
    assert cell["reason"].startswith(f"MEASURED p50 {seconds(measured)} misses latency <= ")
    # the same objective without the capture: the bound alone cannot decide
    _, results = rightsize("-w", "gemm_large_square", "--latency-ms", repr(objective_ms))
    assert results["h200"]["verdict"] == "UNKNOWN"


def test_throughput_objective():
    measured = p50(BASE, "gemm_large_square")
    lower = bound("h200", "gemm_large_square").latency_s
    meets = 0.9 / measured  # executions per second the measurement sustains
    misses = (1 / measured + 1 / lower) / 2  # between what was measured and what the bound allows
    impossible = 1.1 / lower  # beyond the lower bound itself
    doc, results = rightsize("-w", "gemm_large_square", "--throughput", repr(meets), "--capture", BASE)
    assert doc["objective"] == {"kind": "throughput", "value": pytest.approx(meets)}
    assert results["h200"]["verdict"] == "MEETS"
    assert (
        results["h200"]["cells"][0]["reason"]
        == f"MEASURED p50 {seconds(measured)} meets throughput >= {meets:g} per second"
    )
    _, results = rightsize("-w", "gemm_large_square", "--throughput", repr(misses), "--capture", BASE)
    assert results["h200"]["verdict"] == "RULED OUT"
    assert results["h200"]["cells"][0]["reason"].startswith(f"MEASURED p50 {seconds(measured)} misses throughput")
    _, results = rightsize("-w", "gemm_large_square", "--throughput", repr(impossible), "--capture", BASE)
    assert results["h200"]["verdict"] == "RULED OUT"
    assert results["h200"]["cells"][0]["reason"].startswith("PREDICTED lower bound")
    assert results["h200"]["cells"][0]["measured_p50_s"] is None


def test_evidence_counts_for_the_device_it_was_measured_on_not_the_target_it_predicted():
    """The rtx3050-laptop capture was measured on an H200: it is evidence for h200 only."""
    assert load(RTX_ON_H200)["target"] == "rtx3050-laptop"
    doc, results = rightsize("-w", "gemm_tiny", "--latency-ms", "1", "--capture", RTX_ON_H200)
    assert results["h200"]["verdict"] == "MEETS"
    assert results["h200"]["cells"][0]["measured_p50_s"] == p50(RTX_ON_H200, "gemm_tiny")
    assert results["h200"]["cells"][0]["evidence"] == str(RTX_ON_H200)
    assert results["rtx3050-laptop"]["verdict"] == "UNKNOWN"


def test_every_workload_must_meet(laptop_capture):
    doc, results = rightsize(
        "-w",
        "gemm_tiny",
        "-w",
        "gemm_skinny_decode",
        "--latency-ms",
        "1",
        "--capture",
        BASE,
        "--capture",
        laptop_capture,
    )
    # the laptop capture measured gemm_tiny but not gemm_skinny_decode
    laptop = results["rtx3050-laptop"]
    assert [c["verdict"] for c in laptop["cells"]] == ["MEETS", "UNKNOWN"]
    assert laptop["verdict"] == "UNKNOWN" and "gemm_skinny_decode" in laptop["reason"]
    assert results["h200"]["verdict"] == "MEETS" and len(results["h200"]["cells"]) == 2


def _prices(tmp_path, text) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("h200_price,laptop_price", [(3.72, 0.10), (3.72, 0.50)])
def test_prices_rank_the_targets_that_meet(tmp_path, laptop_capture, h200_price, laptop_price):
    prices = _prices(tmp_path, f"[prices]\nh200 = {h200_price}\nrtx3050-laptop = {laptop_price}\n")
    doc, results = rightsize(
        "-w", "gemm_tiny", "--latency-ms", "1", "--capture", BASE, "--capture", laptop_capture, "--prices", prices
    )
    expected = {
        "h200": h200_price / 3600 * p50(BASE, "gemm_tiny") * 1e6,
        "rtx3050-laptop": laptop_price / 3600 * p50(laptop_capture, "gemm_tiny") * 1e6,
    }
    for target, cost in expected.items():
        assert results[target]["verdict"] == "MEETS"
        assert results[target]["price_per_hour"] == {"h200": h200_price, "rtx3050-laptop": laptop_price}[target]
        assert results[target]["cost_per_million"] == pytest.approx(cost, rel=1e-12)
    ranked = sorted(expected, key=expected.get)
    assert [r["target"] for r in doc["results"]] == ranked
    table = run_cli(
        "-w",
        "gemm_tiny",
        "--latency-ms",
        "1",
        "--capture",
        BASE,
        "--capture",
        laptop_capture,
        "--prices",
        prices,
        "--targets",
        TARGETS,
    )
    assert table.returncode == 0, table.stderr
    best = ranked[0]
    assert f"cheapest target shown to meet it: {best} ({expected[best]:.4g} per 1M runs)" in table.stdout


def test_prices_never_rank_a_target_without_evidence(tmp_path):
    prices = _prices(tmp_path, "[prices]\nh200 = 3.72\nrtx3050-laptop = 0.01\n")
    doc, results = rightsize("-w", "gemm_large_square", "--latency-ms", "2", "--capture", BASE, "--prices", prices)
    assert results["rtx3050-laptop"]["verdict"] == "RULED OUT"
    assert results["rtx3050-laptop"]["cost_per_million"] is None  # cheap, but not shown to meet
    assert results["h200"]["cost_per_million"] == pytest.approx(3.72 / 3600 * p50(BASE, "gemm_large_square") * 1e6)
    assert doc["results"][0]["target"] == "h200"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--latency-ms", "2", "--throughput", "100"], "give exactly one objective"),
        ([], "give exactly one objective"),
        (["--latency-ms", "2", "--targets", "h200,rtx9090"], "unknown target 'rtx9090'"),
        (["--latency-ms", "-1"], "--latency-ms"),
    ],
)
def test_bad_arguments(args, expected):
    line = one_error_line(run_cli("-w", "gemm_tiny", *args))
    assert expected in line


@pytest.mark.parametrize(
    "text,expected",
    [
        ("[prices\nh200 = 1", ": not valid TOML: "),
        ("[prices]\nh200 = -1.0\n", "price of 'h200' (per hour) must be >= 0, got -1.0"),
        ('[prices]\nh200 = "cheap"\n', "price of 'h200' (per hour) must be a number, got 'cheap'"),
        ("[prices]\nh200 = nan\n", "the number nan is not finite (at prices.h200)"),  # refused by the reader
        ("[prices]\nh200 = inf\n", "the number inf is not finite (at prices.h200)"),  # refused by the reader
        ("prices = 3\n", "expected a [prices] table"),
    ],
)
def test_bad_prices_file(tmp_path, text, expected):
    prices = _prices(tmp_path, text)
    line = one_error_line(
        run_cli("-w", "gemm_tiny", "--latency-ms", "1", "--capture", BASE, "--prices", prices, "--targets", TARGETS)
    )
    assert expected in line and str(prices) in line


def test_missing_prices_file(tmp_path):
    line = one_error_line(run_cli("-w", "gemm_tiny", "--latency-ms", "1", "--prices", tmp_path / "nope.toml"))
    assert "cannot read prices file" in line


def test_tampered_evidence_capture(tmp_path):
    text = BASE.read_text(encoding="utf-8")
    value = repr(p50(BASE, "gemm_large_square"))
    at = text.index(value) + len(value) - 1
    bad = tmp_path / "tampered.json"
    bad.write_text(text[:at] + ("3" if text[at] != "3" else "4") + text[at + 1 :], encoding="utf-8")
    line = one_error_line(run_cli("-w", "gemm_large_square", "--latency-ms", "2", "--capture", bad))
    assert f"evidence capture {bad} does not verify: digest mismatch" in line


def test_truncated_evidence_capture(tmp_path):
    bad = tmp_path / "truncated.json"
    bad.write_bytes(BASE.read_bytes()[:1000])
    line = one_error_line(run_cli("-w", "gemm_large_square", "--latency-ms", "2", "--capture", bad))
    assert "not valid JSON" in line
