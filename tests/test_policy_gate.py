"""`tensorforge gate BASELINE CANDIDATE`, end to end through the installed console script.

Candidates are built from the real H200 capture (copied, edited in its version-1 layout,
statistics and comparison rows recomputed so the capture stays internally consistent, then
re-sealed), so
every expectation is derived from the capture's own numbers. The two real captures of unchanged
code must give no REGRESSION in either direction."""

import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import attrs
import numpy as np
import pytest
from cli_in_process import run_cli
from click.testing import CliRunner
from golden import H200_RERUN, H200_RUN
from tf_cuda.telemetry import SLOWDOWN_REASONS

from tensorforge.cli.main import make_cli
from tensorforge.files.serialize import canonical_json
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure.capture.convert import converter, to_document
from tensorforge_measure.capture.document import seal_document, verify
from tensorforge_measure.capture.sections.measured import WorkloadMeasurement
from tensorforge_measure.capture.telemetry_window import window_from_source
from tensorforge_measure.compare.workload import compare_workload
from tensorforge_measure.measure.stats import summarize
from tensorforge_measure.policy.gate import GateSettings

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
BASE = H200_RUN
RERUN = H200_RERUN
EXE = Path(sys.executable).parent / "tensorforge"
DEFAULTS = GateSettings()


# ---------------------------------------------------------------- building candidate captures


def load(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def refresh_comparison(doc: dict, name: str) -> None:
    """Recompute one workload's comparison row and bound check the way `run` does."""
    analytical = {w["name"]: w for w in doc["predicted"]["analytical"]["workloads"]}
    calibrated = {w["name"]: w for w in (doc["predicted"].get("calibrated") or {}).get("workloads", [])}
    ns = lambda w: SimpleNamespace(latency_s=w["latency_s"], bottleneck=w["bottleneck"]) if w else None
    comp = doc["comparison"]
    row = doc["measured"]["workloads"].get(name)
    measurement = converter.structure(row, WorkloadMeasurement) if row is not None else None
    window = (doc["diagnostic"].get("windows") or {}).get(name)
    window = window_from_source(window) if window is not None else None  # any layout
    comp["workloads"][name] = to_document(
        compare_workload(
            name,
            ns(analytical[name]),
            ns(calibrated.get(name)),
            measurement,
            comp["same_device"],
            comp["device_note"],
            doc["predicted"].get("calibrated_note") or "no calibrated bound",
            window,
        )
    )
    comp["bound_violations"] = sorted(
        n for n, r in comp["workloads"].items() if r["bound_check"]["verdict"] == "BOUND VIOLATION"
    )
    doc["policy"]["bound_checks"][name]["verdict"] = comp["workloads"][name]["bound_check"]["verdict"]


def set_samples(doc: dict, name: str, samples) -> None:
    row = doc["measured"]["workloads"][name]
    row["samples_s"] = [float(s) for s in samples]
    row["stats"] = attrs.asdict(summarize(row["samples_s"]))
    predicted = next(w for w in doc["predicted"]["analytical"]["workloads"] if w["name"] == name)
    p50 = row["stats"]["p50"]
    row["throughput_flops_per_s"] = predicted["flops"] / p50 if p50 > 0 else None  # as the run derives them
    row["throughput_bytes_per_s"] = predicted["compulsory_bytes"] / p50 if p50 > 0 else None
    refresh_comparison(doc, name)


def scale_all(doc: dict, factor: float) -> None:
    for name, row in doc["measured"]["workloads"].items():
        set_samples(doc, name, [s * factor for s in row["samples_s"]])


def remove_workload(doc: dict, name: str) -> None:
    for key in ("analytical", "calibrated"):
        section = doc["predicted"][key]
        section["workloads"] = [w for w in section["workloads"] if w["name"] != name]
    for section in (
        doc["measured"]["workloads"],
        doc["comparison"]["workloads"],
        doc["policy"]["bound_checks"],
        doc["diagnostic"]["windows"],
    ):
        section.pop(name)


def write_candidate(directory: Path, stem: str, edit, source=BASE) -> Path:
    """A re-sealed copy of `source` after `edit(doc)`; verified before it is used."""
    doc = load(source)
    doc.pop("digest")
    doc["provenance"]["started_at"] = f"{doc['provenance']['started_at']}-{stem}"  # a distinct capture
    edit(doc)
    path = directory / f"{stem}.json"
    path.write_text(canonical_json(seal_document(doc)), encoding="utf-8")
    report = verify(path)
    assert report.ok, report.problems
    return path


# ---------------------------------------------------------------- running the command


def console_gate(*args):
    """The installed console script, as CI would call it."""
    env = {k: v for k, v in os.environ.items() if k not in ("TENSORFORGE_PLUGINS", "TENSORFORGE_DISABLE")}
    return subprocess.run([str(EXE), "gate", *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


def run_gate(*args):
    """The console script's entry point in this process (tests/cli_in_process.py): its exit
    status, table and error lines, without a second of imports per command (test_exit_statuses
    runs the installed script itself)."""
    return run_cli("gate", *args, env={"TENSORFORGE_PLUGINS": None, "TENSORFORGE_DISABLE": None})


@functools.cache
def _cli():
    """The CLI over the installed plugins, loaded once (first used inside a test, so with the
    plugin environment cleaned by `clean_plugin_env`)."""
    host = PluginHost()
    return make_cli(lambda: host)


def gate_json(*args):
    """The verdicts as JSON, in process (fast); the console script is exercised further down."""
    result = CliRunner().invoke(_cli(), ["gate", *map(str, args), "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    doc = json.loads(result.stdout)
    return result.exit_code, doc, {v["workload"]: v for v in doc["verdicts"]}


def parse_table(text: str) -> dict:
    """workload -> verdict from the people's table (columns located by the dashed rule)."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans, start = [], None
    for i, ch in enumerate(lines[rule] + " "):
        if ch == "-" and start is None:
            start = i
        elif ch != "-" and start is not None:
            spans.append((start, i))
            start = None
    rows = {}
    for line in lines[rule + 1 :]:
        if not line.strip() or line[0] == " " or "; exit " in line:
            break
        cells = [line[a:b].strip() for a, b in spans[:2]]
        rows[cells[0]] = cells[1]
    return rows


@pytest.fixture(autouse=True)
def _home_and_originals_untouched(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (BASE, RERUN)}
    yield
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (BASE, RERUN)} == before


@pytest.fixture(scope="module")
def base_doc():
    return load(BASE)


@pytest.fixture(scope="module")
def decidable(base_doc):
    """Workloads of the real capture that carry enough evidence against themselves: enough
    samples, spread within the default limit, no slowdown reason. The rest are too noisy."""
    names = sorted(
        n
        for n, r in base_doc["measured"]["workloads"].items()
        if r["status"] == "ok"
        and r["stats"]["n"] >= DEFAULTS.min_samples
        and r["stats"]["rel_iqr"] <= DEFAULTS.max_spread
    )
    assert "gemm_large_square" in names and len(names) >= 5
    return names


@pytest.fixture(scope="module")
def noisy(base_doc, decidable):
    names = sorted(set(base_doc["measured"]["workloads"]) - set(decidable))
    assert names, "the real capture has workloads too noisy to judge (gemm_tiny, transformer_decode)"
    return names


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    """Candidates whose every sample is the baseline's times a factor, built once per factor."""
    directory = tmp_path_factory.mktemp("scaled")
    made = {}

    def get(factor: float) -> Path:
        if factor not in made:
            made[factor] = write_candidate(directory, f"x{factor}", lambda d: scale_all(d, factor))
        return made[factor]

    return get


# ---------------------------------------------------------------- verdicts


def test_ten_percent_slower_is_a_regression(scaled, decidable, noisy, base_doc):
    status, result, verdicts = gate_json(BASE, scaled(1.10))
    assert status == 1 and result["exit_status"] == 1
    assert result["label"] == "POLICY"
    for name in decidable:
        v = verdicts[name]
        assert v["verdict"] == "REGRESSION", v
        assert v["ratio"] == pytest.approx(1.10, rel=1e-9)
        assert v["baseline_p50_s"] == pytest.approx(base_doc["measured"]["workloads"][name]["stats"]["p50"])
        assert v["candidate_p50_s"] == pytest.approx(1.10 * v["baseline_p50_s"])
        assert v["p_value"] < DEFAULTS.alpha and v["ci_low"] > 1.0
        assert v["reason"].startswith("slower by +10.0%")
        assert v["n_baseline"] == v["n_candidate"] == base_doc["measured"]["workloads"][name]["stats"]["n"]
    for name in noisy:
        assert verdicts[name]["verdict"] == "NO VERDICT"
        assert "spread too wide in the baseline" in verdicts[name]["reason"]
    assert result["summary"].startswith(f"{len(decidable)} REGRESSION")


def test_ten_percent_faster_is_an_improvement_unless_it_beats_the_bound(scaled, decidable, noisy):
    path = scaled(0.90)
    cand = load(path)
    status, result, verdicts = gate_json(BASE, path)
    assert status == 3, "no regression, but some workloads have no verdict"
    violating = {
        n for n in decidable if cand["comparison"]["workloads"][n]["bound_check"]["verdict"] == "BOUND VIOLATION"
    }
    # the large GEMM runs at its calibrated bound: 10% faster than that is a bound violation
    assert "gemm_large_square" in violating and violating != set(decidable)
    for name in decidable:
        v = verdicts[name]
        if name in violating:
            assert v["verdict"] == "NO VERDICT"
            assert v["reason"].startswith("bound violation in the candidate")
        else:
            assert v["verdict"] == "IMPROVEMENT", v
            assert v["ratio"] == pytest.approx(0.90, rel=1e-9)
            assert v["ci_high"] < 1.0 and v["p_value"] < DEFAULTS.alpha
            assert v["reason"].startswith("faster by -10.0%")
    assert all(verdicts[n]["verdict"] == "NO VERDICT" for n in noisy)


def test_two_percent_slower_is_significant_but_below_threshold(scaled, decidable):
    path = scaled(1.02)
    status, result, verdicts = gate_json(BASE, path)
    assert status == 3
    for name in decidable:
        v = verdicts[name]
        assert v["verdict"] == "PASS", v
        assert v["p_value"] < DEFAULTS.alpha and v["ci_low"] > 1.0  # significant...
        assert v["ratio"] == pytest.approx(1.02, rel=1e-9)  # ...but small
        assert "significant but below the 5% effect threshold" in v["reason"]
    # with a 1% effect threshold the 2% change is still no regression: every one of these
    # workloads moves more than that between runs of unchanged code (policy/between_runs.py)
    status, result, verdicts = gate_json(BASE, path, "--threshold", "0.01")
    assert status == 3
    assert result["settings"]["threshold"] == 0.01
    for name in decidable:
        v = verdicts[name]
        assert v["verdict"] == "PASS" and v["needed_effect"] > 0.02, v
        assert "moves that much between runs of unchanged code; threshold 1%" in v["reason"]
    # a 4% change is beyond both, so the 1% threshold makes it a regression everywhere
    status, result, verdicts = gate_json(BASE, scaled(1.04), "--threshold", "0.01")
    assert status == 1
    for name in decidable:
        assert verdicts[name]["verdict"] == "REGRESSION", verdicts[name]
        assert verdicts[name]["reason"].startswith("slower by +4.0%")


def test_effect_threshold_boundaries(scaled, decidable):
    _, _, below = gate_json(BASE, scaled(1.049))
    _, _, above = gate_json(BASE, scaled(1.051))
    for name in decidable:
        assert below[name]["verdict"] == "PASS" and "significant but below" in below[name]["reason"]
        assert above[name]["verdict"] == "REGRESSION"
    # faster: 4% is below the threshold; 6% is an improvement wherever the bound still holds
    _, _, small = gate_json(BASE, scaled(0.96))
    path = scaled(0.94)
    cand = load(path)
    _, _, big = gate_json(BASE, path)
    for name in decidable:
        assert small[name]["verdict"] in ("PASS", "NO VERDICT")
        assert small[name]["verdict"] != "NO VERDICT" or "bound violation" in small[name]["reason"]
        if cand["comparison"]["workloads"][name]["bound_check"]["verdict"] != "BOUND VIOLATION":
            assert big[name]["verdict"] == "IMPROVEMENT"


def test_same_samples_pass(scaled, decidable, noisy, tmp_path):
    path = scaled(1.0)
    status, result, verdicts = gate_json(BASE, path)
    assert status == 3  # the noisy workloads have no verdict
    for name in decidable:
        v = verdicts[name]
        assert v["verdict"] == "PASS" and v["reason"].endswith("not significant")
        assert v["ratio"] == 1.0 and v["p_value"] == pytest.approx(1.0)
        assert v["ci_low"] <= 1.0 <= v["ci_high"]
    # with a spread limit that admits every workload, everything is decided: exit 0
    status, result, verdicts = gate_json(BASE, path, "--max-spread", "0.5")
    assert status == 0
    assert {v["verdict"] for v in verdicts.values()} == {"PASS"}
    assert result["summary"] == f"{len(verdicts)} PASS"


def test_verdicts_are_reproducible(scaled):
    first = run_gate(BASE, scaled(1.02), "--json")
    second = run_gate(BASE, scaled(1.02), "--json")
    assert first.stdout == second.stdout and first.returncode == second.returncode


def test_different_fingerprint_gives_no_verdict_anywhere(tmp_path, base_doc):
    other = "cuda-0123456789abcdef"
    # another H200 (another driver, another fingerprint): the name stays, so APE stays computed
    path = write_candidate(tmp_path, "other-device", lambda d: d["measured"]["device"].update(fingerprint=other))
    status, result, verdicts = gate_json(BASE, path)
    assert status == 3
    mine = base_doc["measured"]["device"]["fingerprint"]
    assert set(verdicts) == set(base_doc["measured"]["workloads"])
    for v in verdicts.values():
        assert v["verdict"] == "NO VERDICT"
        assert mine in v["reason"] and other in v["reason"], v["reason"]
        assert "different device fingerprints" in v["reason"]
        assert v["reason"].count("NVIDIA H200") == 2
    assert result["candidate"]["fingerprint"] == other


def test_changed_framework_flag_is_named(tmp_path, base_doc, decidable):
    flags = base_doc["measured"]["workloads"]["gemm_large_square"]["framework_flags"]
    before = flags["matmul_allow_tf32"]

    def edit(d):
        d["measured"]["workloads"]["gemm_large_square"]["framework_flags"]["matmul_allow_tf32"] = not before

    status, _, verdicts = gate_json(BASE, write_candidate(tmp_path, "flag", edit))
    assert status == 3
    v = verdicts["gemm_large_square"]
    assert v["verdict"] == "NO VERDICT"
    assert v["reason"] == f"framework flags differ: matmul_allow_tf32 {before!r} -> {(not before)!r}"
    assert all(verdicts[n]["verdict"] == "PASS" for n in decidable if n != "gemm_large_square")


def test_too_few_samples(tmp_path, base_doc):
    kept = base_doc["measured"]["workloads"]["gemm_large_square"]["samples_s"][:5]
    path = write_candidate(tmp_path, "few", lambda d: set_samples(d, "gemm_large_square", kept))
    _, _, verdicts = gate_json(BASE, path)
    assert verdicts["gemm_large_square"]["verdict"] == "NO VERDICT"
    assert verdicts["gemm_large_square"]["reason"] == "too few samples in the candidate (5 < 10)"
    # and the limit is a setting
    _, _, verdicts = gate_json(BASE, path, "--min-samples", "5")
    assert verdicts["gemm_large_square"]["verdict"] != "NO VERDICT"
    assert verdicts["gemm_large_square"]["n_candidate"] == 5
    # too few on the baseline side is named as such
    _, _, verdicts = gate_json(path, BASE)
    assert verdicts["gemm_large_square"]["reason"] == "too few samples in the baseline (5 < 10)"


def test_spread_too_wide(tmp_path, base_doc):
    p50 = base_doc["measured"]["workloads"]["gemm_large_square"]["stats"]["p50"]
    noisy_samples = p50 * np.random.default_rng(0).lognormal(0.0, 0.25, 40)
    spread = summarize(noisy_samples).rel_iqr
    assert spread > 0.10
    path = write_candidate(tmp_path, "noisy", lambda d: set_samples(d, "gemm_large_square", noisy_samples))
    _, _, verdicts = gate_json(BASE, path)
    v = verdicts["gemm_large_square"]
    assert v["verdict"] == "NO VERDICT"
    assert v["reason"] == f"spread too wide in the candidate (relative IQR {spread * 100:.1f}% > 10%)"
    _, _, verdicts = gate_json(BASE, path, "--max-spread", "0.9")
    assert verdicts["gemm_large_square"]["verdict"] != "NO VERDICT"


@pytest.mark.parametrize("side", ["candidate", "baseline"])
def test_bound_violation_on_either_side_gives_no_verdict(tmp_path, side):
    def edit(d):
        # measured 10% under its calibrated bound, tightly: a real violation, recomputed by the
        # run's own rule (a verdict merely written into the comparison no longer verifies)
        bound = next(
            w["latency_s"] for w in d["predicted"]["calibrated"]["workloads"] if w["name"] == "gemm_square_tf32"
        )
        set_samples(d, "gemm_square_tf32", [bound * 0.9 * (1 + 0.001 * (i % 5)) for i in range(40)])

    edited = write_candidate(tmp_path, "violation", edit)
    assert load(edited)["comparison"]["workloads"]["gemm_square_tf32"]["bound_check"]["verdict"] == "BOUND VIOLATION"
    args = (BASE, edited) if side == "candidate" else (edited, BASE)
    _, _, verdicts = gate_json(*args)
    v = verdicts["gemm_square_tf32"]
    assert v["verdict"] == "NO VERDICT"
    assert v["reason"].startswith(f"bound violation in the {side}")
    assert verdicts["gemm_large_square"]["verdict"] == "PASS"


@pytest.mark.parametrize("reason", SLOWDOWN_REASONS)
def test_hardware_or_thermal_slowdown_in_telemetry_blocks(tmp_path, reason):
    assert reason != "SwPowerCap"

    def edit(d):
        summary = d["diagnostic"]["windows"]["gemm_large_square"]["summary"]
        summary["reason_fractions"] = summary["reason_fractions"] + [[reason, 0.25]]

    _, _, verdicts = gate_json(BASE, write_candidate(tmp_path, reason, edit))
    v = verdicts["gemm_large_square"]
    assert v["verdict"] == "NO VERDICT"
    assert v["reason"] == f"telemetry shows {reason} in the candidate's window (25% of samples)"


def test_power_cap_alone_or_a_zero_fraction_does_not_block(tmp_path, base_doc, decidable):
    # the real capture already shows SwPowerCap in the large GEMMs' windows, on both sides
    fractions = dict(base_doc["diagnostic"]["windows"]["gemm_large_square"]["summary"]["reason_fractions"])
    assert fractions.get("SwPowerCap", 0) > 0.5

    def edit(d):
        d["diagnostic"]["windows"]["conv_resnet50_1x1"]["summary"]["reason_fractions"] = [["SwPowerCap", 1.0]]
        d["diagnostic"]["windows"]["gemm_square_tf32"]["summary"]["reason_fractions"] = [["HwSlowdown", 0.0]]

    _, _, verdicts = gate_json(BASE, write_candidate(tmp_path, "powercap", edit))
    for name in decidable:
        assert verdicts[name]["verdict"] == "PASS", verdicts[name]


def test_failed_measurement_gives_its_reason(tmp_path):
    why = "CUDA out of memory: Tried to allocate 1.00 GiB"

    def edit(d):
        d["measured"]["workloads"]["gemm_large_square"] = {"status": "failed", "math_mode": "bf16", "reason": why}
        refresh_comparison(d, "gemm_large_square")

    path = write_candidate(tmp_path, "failed", edit)
    _, _, verdicts = gate_json(BASE, path)
    assert verdicts["gemm_large_square"]["verdict"] == "NO VERDICT"
    assert verdicts["gemm_large_square"]["reason"] == f"candidate measurement failed: {why}"
    _, _, verdicts = gate_json(path, BASE)
    assert verdicts["gemm_large_square"]["reason"] == f"baseline measurement failed: {why}"


def test_workload_in_one_capture_only(tmp_path, base_doc):
    path = write_candidate(tmp_path, "fewer", lambda d: remove_workload(d, "transformer_prefill"))
    _, _, verdicts = gate_json(BASE, path)
    assert set(verdicts) == set(base_doc["measured"]["workloads"])
    assert verdicts["transformer_prefill"]["verdict"] == "NO VERDICT"
    assert verdicts["transformer_prefill"]["reason"] == "not measured in the candidate"
    _, _, verdicts = gate_json(path, BASE)
    assert verdicts["transformer_prefill"]["reason"] == "not measured in the baseline"


def test_workload_defined_differently_under_the_same_name(tmp_path, base_doc):
    def edit(d):
        for key in ("analytical", "calibrated"):
            for w in d["predicted"][key]["workloads"]:
                if w["name"] == "gemm_tiny":
                    w["spec"] = w["spec"].replace("dtype=bf16", "dtype=fp16")

    _, _, verdicts = gate_json(BASE, write_candidate(tmp_path, "respec", edit))
    assert verdicts["gemm_tiny"]["verdict"] == "NO VERDICT"
    assert verdicts["gemm_tiny"]["reason"].startswith("workload definition differs")


def test_zero_second_samples_give_no_verdict_not_a_crash(tmp_path):
    """Samples below timer resolution (p50 of 0 s): a relative IQR of infinity is stored as the
    string 'inf' by canonical JSON, and a median of 0 has no ratio. Both are NO VERDICT."""

    def mostly_zero(d):
        set_samples(d, "gemm_tiny", [0.0] * 12 + [1e-6] * 8)

    def all_zero(d):
        set_samples(d, "gemm_tiny", [0.0] * 20)
        # the run's own rule: a p50 of 0 s is no evidence of beating the bound
        assert d["comparison"]["workloads"]["gemm_tiny"]["bound_check"]["verdict"].startswith(
            "no verdict: measured p50 is 0 s"
        )

    wide = write_candidate(tmp_path, "mostly-zero", mostly_zero)
    wide_again = write_candidate(tmp_path, "mostly-zero-again", mostly_zero)  # a distinct capture
    assert load(wide)["measured"]["workloads"]["gemm_tiny"]["stats"]["rel_iqr"] == "inf"
    status, _, verdicts = gate_json(wide, wide_again)
    assert status == 3
    assert verdicts["gemm_tiny"]["reason"] == "spread too wide in the baseline (relative IQR inf% > 10%)"
    zero = write_candidate(tmp_path, "all-zero", all_zero)
    zero_again = write_candidate(tmp_path, "all-zero-again", all_zero)
    status, _, verdicts = gate_json(zero, zero_again, "--max-spread", "0.5")
    assert status == 3
    assert verdicts["gemm_tiny"]["verdict"] == "NO VERDICT"
    assert verdicts["gemm_tiny"]["reason"].startswith("p50 is 0 s in the baseline")


def test_capture_without_measurements(tmp_path, base_doc):
    """A real `tensorforge run` on this machine (no CUDA): nothing to compare, for every workload."""
    out = tmp_path / "no-device.json"
    proc = run_cli("run", "--target", "h200", "-o", out, env={"TENSORFORGE_HOME": str(tmp_path / "home")})
    assert proc.returncode == 0, proc.stderr
    doc = load(out)
    if doc["measured"]["available"]:
        pytest.skip("this machine has a CUDA device; the no-measurement case needs one without")
    why = doc["measured"]["reason"]
    status, _, verdicts = gate_json(BASE, out)
    assert status == 3
    assert set(verdicts) == set(base_doc["measured"]["workloads"])
    assert {v["reason"] for v in verdicts.values()} == {f"candidate has no measurements: {why}"}
    _, _, verdicts = gate_json(out, BASE)
    assert {v["reason"] for v in verdicts.values()} == {f"baseline has no measurements: {why}"}


# ---------------------------------------------------------------- the real captures


@pytest.mark.parametrize("pair", [(BASE, RERUN), (RERUN, BASE)], ids=["default->rerun", "rerun->default"])
def test_unchanged_code_on_the_same_device_gives_no_regression(pair):
    baseline, candidate = pair
    status, result, verdicts = gate_json(baseline, candidate)
    assert status != 1
    assert all(v["verdict"] != "REGRESSION" for v in verdicts.values())
    a, b = load(baseline), load(candidate)
    assert a["measured"]["device"]["fingerprint"] == b["measured"]["device"]["fingerprint"]
    # every NO VERDICT is explained by evidence visible in the two captures themselves
    for name, v in verdicts.items():
        ra, rb = a["measured"]["workloads"][name], b["measured"]["workloads"][name]
        flags_differ = ra["framework_flags"] != rb["framework_flags"]
        too_noisy = max(ra["stats"]["rel_iqr"], rb["stats"]["rel_iqr"]) > DEFAULTS.max_spread
        if flags_differ:
            assert v["verdict"] == "NO VERDICT" and v["reason"].startswith("framework flags differ")
        elif too_noisy:
            assert v["verdict"] == "NO VERDICT" and v["reason"].startswith("spread too wide")
        else:
            assert v["verdict"] == "PASS", v  # unchanged code: neither slower nor faster
            assert v["baseline_p50_s"] == pytest.approx(float(np.median(ra["samples_s"])))
            assert v["candidate_p50_s"] == pytest.approx(float(np.median(rb["samples_s"])))
    assert sum(v["verdict"] == "PASS" for v in verdicts.values()) >= 5


def test_real_pair_is_decided_symmetrically():
    _, _, forward = gate_json(BASE, RERUN)
    _, _, backward = gate_json(RERUN, BASE)
    assert {n: v["verdict"] == "NO VERDICT" for n, v in forward.items()} == {
        n: v["verdict"] == "NO VERDICT" for n, v in backward.items()
    }
    for name, v in forward.items():
        if v["ratio"] is not None:
            assert v["ratio"] * backward[name]["ratio"] == pytest.approx(1.0)
            assert v["p_value"] == pytest.approx(backward[name]["p_value"])


# ---------------------------------------------------------------- exit statuses and output


def test_exit_statuses(scaled):
    """What CI sees: the exit status of the installed console script."""
    assert console_gate(BASE, scaled(1.0), "--max-spread", "0.5").returncode == 0
    assert console_gate(BASE, scaled(1.10)).returncode == 1
    assert console_gate(BASE, RERUN).returncode == 3
    assert console_gate(BASE, RERUN, "--no-verdict-ok").returncode == 0
    # --no-verdict-ok never hides a regression
    assert console_gate(BASE, scaled(1.10), "--no-verdict-ok").returncode == 1


def test_table_and_json_agree(scaled):
    for args in ((BASE, RERUN), (BASE, scaled(1.10)), (BASE, scaled(0.90))):
        table = run_gate(*args)
        status, result, verdicts = gate_json(*args)
        assert table.returncode == status
        assert parse_table(table.stdout) == {n: v["verdict"] for n, v in verdicts.items()}
        assert f"{result['summary']}; exit {status}" in table.stdout
        assert table.stdout.startswith("POLICY  regression gate:")
        for v in verdicts.values():
            assert v["reason"] in table.stdout


def _one_error_line(proc):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


def _corrupted(tmp_path, how: str) -> Path:
    path = tmp_path / f"{how}.json"
    text = BASE.read_text(encoding="utf-8")
    if how == "truncated":
        path.write_text(text[: len(text) // 2], encoding="utf-8")
    elif how == "tampered":
        # one byte of one raw sample changed: still valid JSON, no longer the sealed content
        doc = load(BASE)
        first = repr(doc["measured"]["workloads"]["gemm_large_square"]["samples_s"][0])
        at = text.index(first) + len(first) - 1
        digit = text[at]
        path.write_text(text[:at] + ("1" if digit != "1" else "2") + text[at + 1 :], encoding="utf-8")
        assert len(path.read_bytes()) == len(BASE.read_bytes())
    elif how == "schema":
        doc = load(BASE)
        doc["schema"], doc["schema_version"] = "tensorforge.capture", 3  # a newer layout
        path.write_text(canonical_json(seal_document(doc)), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "how,expected",
    [
        ("missing", "cannot read capture"),
        ("truncated", ": not valid JSON: "),
        ("tampered", "digest mismatch"),
        ("schema", "has schema version 3; this TensorForge reads versions up to 2"),
    ],
)
@pytest.mark.parametrize("role", ["baseline", "candidate"])
def test_bad_input_is_one_line_and_exit_two(tmp_path, how, expected, role):
    bad = tmp_path / "missing.json" if how == "missing" else _corrupted(tmp_path, how)
    before = bad.read_bytes() if bad.exists() else None
    args = (bad, BASE) if role == "baseline" else (BASE, bad)
    line = _one_error_line(run_gate(*args))
    assert expected in line and str(bad) in line
    if how in ("tampered", "schema"):
        assert line.startswith(f"error: {role} capture")
    assert (bad.read_bytes() if bad.exists() else None) == before  # nothing overwritten
    # --json changes nothing about the error contract
    _one_error_line(run_gate(*args, "--json"))


def test_usage_errors_exit_two(tmp_path):
    _one_error_line(run_gate(BASE))
    _one_error_line(run_gate(BASE, RERUN, "--threshold", "0"))
    _one_error_line(run_gate(BASE, tmp_path))  # a folder, not a capture
