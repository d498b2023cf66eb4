"""`tensorforge report CAPTURE`: the self-contained HTML page, Markdown and JSON facts, made from
the real H200 capture and from a capture without measurements (made here, on a machine without
CUDA), checked for the capture's own numbers; bad input; and the page in a real headless
Chromium (no script errors, the numbers visible, both figures laid out)."""

import functools
import hashlib
import json
import os
import re
import shutil
from html import escape, unescape
from pathlib import Path

import pytest
from cli_in_process import run_cli
from golden import H200_RERUN, H200_RUN, HOST_CPU_RUN, RTX_ON_H200

from tensorforge.cli.units import seconds, si
from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture.document import read_capture, seal_document
from tensorforge_measure.policy.evidence import load_evidence
from tensorforge_measure.policy.gate import gate

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
BASE = H200_RUN
RERUN = H200_RERUN
ORIGINALS = (BASE, RERUN, RTX_ON_H200)
LABELS = ("PREDICTED", "MEASURED", "CALIBRATED", "DIAGNOSTIC", "POLICY")
CHROMIUM = "/usr/bin/chromium"


def load(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def tf(*args, home=None):
    """`tensorforge ARGS`, in this process (tests/cli_in_process.py: the console script's entry
    point, without a second of imports per command)."""
    env = {"TENSORFORGE_PLUGINS": None, "TENSORFORGE_DISABLE": None}
    if home is not None:
        env["TENSORFORGE_HOME"] = str(home)
    return run_cli(*args, env=env)


def report(capture, out, *args):
    proc = tf("report", capture, "-o", out, *args)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return Path(out).read_text(encoding="utf-8")


def one_error_line(proc) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def text_of(html: str) -> str:
    """The page's prose without tags or the inline SVG, whitespace collapsed."""
    body = re.sub(r"<svg.*?</svg>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))


@pytest.fixture(autouse=True)
def _originals_untouched(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in ORIGINALS}
    yield
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in ORIGINALS} == before


@pytest.fixture(scope="module")
def doc():
    return load(BASE)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The three formats of the real capture's report, made once."""
    out = tmp_path_factory.mktemp("report")
    return {fmt: report(BASE, out / f"report.{fmt}", "--format", fmt) for fmt in ("html", "md", "json")} | {"dir": out}


@pytest.fixture(scope="module")
def unmeasured(tmp_path_factory):
    """A capture made by `tensorforge run` on this machine, which has no CUDA device."""
    out = tmp_path_factory.mktemp("unmeasured")
    proc = tf("run", "--target", "rtx3050-laptop", "-o", out / "cap.json", home=out / "home")
    assert proc.returncode == 0, proc.stderr
    cap = load(out / "cap.json")
    if cap["measured"]["available"]:
        pytest.skip("this machine has a CUDA device: a capture without measurements cannot be made here")
    return out / "cap.json"


# ---------------------------------------------------------------- the real capture, HTML


def test_html_shows_the_capture(outputs, doc):
    html = outputs["html"]
    assert html.startswith("<!DOCTYPE html>")
    assert f'<code id="digest">{doc["digest"]["value"]}</code>' in html
    p50 = doc["measured"]["workloads"]["gemm_large_square"]["stats"]["p50"]
    assert f'MEASURED</span> p50 <span class="big">{escape(seconds(p50))}</span>' in html
    for label in LABELS:
        assert f'<span class="label {label}">{label}</span>' in html
    assert "<h2>What this capture does not establish</h2>" in html
    text = text_of(html)
    assert "Five labels. Five different claims." in text
    assert doc["measured"]["device"]["fingerprint"] in text and doc["provenance"]["started_at"] in text


def test_html_is_self_contained(outputs):
    html = outputs["html"]
    assert html.count("<svg") == 2 and html.count("</svg>") == 2
    assert '<figure id="plot-predicted-vs-measured"><svg' in html and '<figure id="plot-roofline"><svg' in html
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, flags=re.I)
    assert not re.search(r"<script\b[^>]*\bsrc\s*=", html, flags=re.I)
    assert not re.search(r"<link\b[^>]*stylesheet", html, flags=re.I)
    assert "<link" not in html and "@import" not in html and "url(http" not in html
    # every in-page reference of the SVGs points at an element of the page
    ids = set(re.findall(r'\bid="([^"]+)"', html))
    refs = set(re.findall(r'href="#([^"]+)"', html)) | set(re.findall(r"url\(#([^)]+)\)", html))
    assert refs and refs <= ids


def test_html_comparisons_ceilings_path_telemetry_policy(outputs, doc):
    text = text_of(outputs["html"])
    comp = doc["comparison"]["workloads"]
    for name in ("gemm_large_square", "gemm_tiny"):
        row = comp[name]
        assert f"APE (calibrated) {row['ape_calibrated'] * 100:.1f}%" in text
        assert f"CALIBRATED lower bound {seconds(row['predicted_calibrated_s'])}" in text
    big = comp["gemm_large_square"]
    assert (
        f"the calibrated analytical lower bound of gemm_large_square was within "
        f"{big['ape_calibrated'] * 100:.1f}% of the measured p50"
    ) in text
    assert "does not establish that explanation as causal" in text  # the contrast's claim stays weak
    # measured ceilings against datasheet peaks
    cal = doc["calibrated"]["ceilings"]
    sheet = doc["predicted"]["analytical"]["ceilings"]
    for mode, rate in cal["compute"].items():
        peak = sheet["compute"][mode]
        assert (f"compute {mode} {si(peak, 'FLOP/s')} {si(rate, 'FLOP/s')} {rate / peak * 100:.1f}%") in text
    assert f"Launch floor (calibrated, not part of the bound): {seconds(cal['launch_floor_s'])}" in text
    # the path from description to the (calibrated) lower bound
    w = next(w for w in doc["predicted"]["calibrated"]["workloads"] if w["name"] == "gemm_large_square")
    assert f"WORKLOAD gemm_large_square: {w['spec']}" in text
    assert f"MAX(COMPUTE {seconds(w['compute_s'])}, MEMORY {seconds(w['memory_s'])})" in text
    assert f"PREDICTED LATENCY {seconds(w['latency_s'])} (calibrated lower bound on h200)" in text
    assert (
        f"Predicted bottleneck: {w['bottleneck']} . The predicted bottleneck is an analytical "
        "classification. NVML does not prove this classification." in text
    )
    # telemetry as context: every non-idle clock-event reason of the capture, with its fraction
    observed = 0
    for name, window in doc["diagnostic"]["windows"].items():
        for reason, fraction in window["summary"]["reason_fractions"]:
            if reason != "GpuIdle" and fraction:
                observed += 1
                assert (
                    f"NVML reported {reason} (clock-event reason) during {fraction * 100:.0f}% of the "
                    f"telemetry window of {name}. This is observed context, not proof"
                ) in text
    assert observed >= 1  # the large GEMMs hit SwPowerCap
    # policy: bound checks, and no violation in this capture
    assert doc["comparison"]["bound_violations"] == []
    assert "Bound violations: none." in text
    for name, check in doc["policy"]["bound_checks"].items():
        assert f"{name} {check['verdict']}" in text


def test_html_limits_are_generated_from_the_capture(outputs, doc, tmp_path):
    text = text_of(outputs["html"])
    device = doc["measured"]["device"]["name"]
    assert f"One physical device ({device}) and one capture session ({doc['provenance']['started_at']})." in text
    assert f"No generalization to every device sold as {doc['target']}." in text
    assert "Laptop thermal" not in text and "Calibration reused" not in text and "APE withheld" not in text
    # a rerun that reused the stored calibration says so
    rerun = text_of(report(RERUN, tmp_path / "rerun.html"))
    assert f"Calibration reused from {load(RERUN)['calibrated']['measured_at']}" in rerun
    # the rtx3050-laptop capture measured on an H200 withholds APE, and says why
    rtx = load(RTX_ON_H200)
    page = text_of(report(RTX_ON_H200, tmp_path / "rtx.html"))
    assert f"APE withheld: {rtx['comparison']['device_note']}." in page
    assert "measured on a device other than the predicted target, so no APE is computed" in page


def test_every_workload_row(outputs, doc):
    text = text_of(outputs["html"])
    for w in doc["predicted"]["analytical"]["workloads"]:
        row = doc["comparison"]["workloads"][w["name"]]
        stats = doc["measured"]["workloads"][w["name"]]["stats"]
        cells = [
            w["name"],
            si(w["flops"], "FLOP"),
            si(w["compulsory_bytes"], "B"),
            seconds(w["latency_s"]),
            seconds(row["predicted_calibrated_s"]),
            seconds(stats["p50"]),
            f"{row['ape_calibrated'] * 100:.1f}%",
            f"{row['ape_analytical'] * 100:.1f}%",
        ]
        assert " ".join(cells) in text, w["name"]


def test_output_is_reproducible(outputs, tmp_path):
    assert report(BASE, tmp_path / "again.html") == outputs["html"]
    assert report(BASE, tmp_path / "again.json", "--format", "json") == outputs["json"]


# ---------------------------------------------------------------- JSON facts and Markdown


def test_json_facts_match_the_capture(outputs, doc):
    facts = json.loads(outputs["json"])
    assert facts["schema"] == "tensorforge.report/1"
    assert facts["digest"] == doc["digest"]["value"]
    assert facts["device"] == doc["measured"]["device"]["name"]
    assert facts["fingerprint"] == doc["measured"]["device"]["fingerprint"]
    assert [l["label"] for l in facts["labels"]] == list(LABELS)
    rows = {r["name"]: r for r in facts["workloads"]}
    assert list(rows) == [w["name"] for w in doc["predicted"]["analytical"]["workloads"]]
    for w in doc["predicted"]["analytical"]["workloads"]:
        r, m, c = rows[w["name"]], doc["measured"]["workloads"][w["name"]], doc["comparison"]["workloads"][w["name"]]
        assert r["measured_p50_s"] == m["stats"]["p50"]
        assert (r["p10_s"], r["p90_s"], r["n"]) == (m["stats"]["p10"], m["stats"]["p90"], m["stats"]["n"])
        assert r["analytical_s"] == w["latency_s"] == c["predicted_analytical_s"]
        assert r["calibrated_s"] == c["predicted_calibrated_s"]
        assert r["ape_calibrated"] == c["ape_calibrated"] and r["ape_analytical"] == c["ape_analytical"]
        assert r["bound_check"] == c["bound_check"]["verdict"]
        assert r["achieved_flops_per_s"] == pytest.approx(w["flops"] / m["stats"]["p50"])
        assert r["status"] == "ok"
    assert facts["primary"]["row"]["name"] == "gemm_large_square"
    assert facts["contrast"]["row"]["name"] == "gemm_tiny"
    cal = doc["calibrated"]["ceilings"]
    ceilings = {c["what"]: c for c in facts["ceilings"]}
    for mode, rate in cal["compute"].items():
        assert ceilings[f"compute {mode}"]["calibrated"] == rate
        assert ceilings[f"compute {mode}"]["fraction"] == pytest.approx(
            rate / doc["predicted"]["analytical"]["ceilings"]["compute"][mode]
        )
    assert ceilings["memory (copy, read + write)"]["calibrated"] == cal["dram_bytes_per_s"]
    assert facts["launch_floor_s"] == cal["launch_floor_s"]
    assert facts["policy"]["bound_violations"] == doc["comparison"]["bound_violations"]
    assert facts["policy"]["gate"] is None
    assert facts["path"]["workload"] == "gemm_large_square" and facts["path"]["bound"] == "calibrated"
    assert facts["telemetry"]["available"] is True


def test_markdown_has_the_tables(outputs, doc):
    md = outputs["md"]
    assert md.startswith("# TensorForge capture: h200")
    assert f"capture digest `{doc['digest']['value']}` (verified)" in md
    assert "| workload | PREDICTED analytical | calibrated bound | MEASURED p50 | APE cal. | APE analytical |" in md
    for w in doc["predicted"]["analytical"]["workloads"]:
        c = doc["comparison"]["workloads"][w["name"]]
        p50 = doc["measured"]["workloads"][w["name"]]["stats"]["p50"]
        assert (
            f"| {w['name']} | {seconds(w['latency_s'])} | {seconds(c['predicted_calibrated_s'])} | "
            f"{seconds(p50)} | {c['ape_calibrated'] * 100:.1f}% |"
        ) in md
    assert "| ceiling | datasheet | CALIBRATED | ratio |" in md
    bf16 = doc["calibrated"]["ceilings"]["compute"]["bf16"]
    assert (
        f"| compute bf16 | {si(doc['predicted']['analytical']['ceilings']['compute']['bf16'], 'FLOP/s')} | "
        f"{si(bf16, 'FLOP/s')} |" in md
    )
    assert "| label | meaning |" in md and all(f"| {label} |" in md for label in LABELS)
    assert "## What this capture does not establish" in md


def test_workload_option_picks_the_path(tmp_path, doc):
    facts = json.loads(report(BASE, tmp_path / "tf32.json", "--format", "json", "--workload", "gemm_square_tf32"))
    w = next(w for w in doc["predicted"]["calibrated"]["workloads"] if w["name"] == "gemm_square_tf32")
    assert facts["path"]["workload"] == "gemm_square_tf32" and facts["path"]["spec"] == w["spec"]
    assert facts["path"]["latency_s"] == w["latency_s"] and facts["path"]["math_mode"] == "tf32"
    md = report(BASE, tmp_path / "tf32.md", "--format", "md", "--workload", "gemm_square_tf32")
    assert f"1. WORKLOAD `{w['spec']}`" in md


# ---------------------------------------------------------------- a capture without measurements


def test_unmeasured_capture_renders_honestly(unmeasured, tmp_path):
    cap = load(unmeasured)
    html = report(unmeasured, tmp_path / "u.html")
    text = text_of(html)
    # the three sections share one reason without a device: one line names them and says it once
    reasons = {cap[key]["reason"] for key in ("measured", "calibrated", "diagnostic")}
    assert all(reasons)
    for reason in reasons:
        keys = [k.upper() for k in ("measured", "calibrated", "diagnostic") if cap[k]["reason"] == reason]
        assert f"{' '.join(keys)} unavailable: {reason}" in text
    # no predicted-vs-measured figure: a note saying why instead of an empty plot
    assert 'id="plot-predicted-vs-measured"><svg' not in html
    assert "No predicted vs measured plot: nothing was measured in this capture." in text
    assert html.count("<svg") <= 1  # at most the roofline of predicted points and datasheet roofs
    # every row keeps its prediction; the columns nothing filled are said once, not in each row
    assert "Nothing measured: no MEASURED p50, APE or bound check for any workload." in text
    for w in cap["predicted"]["analytical"]["workloads"]:
        assert (
            f"{w['name']} {si(w['flops'], 'FLOP')} {si(w['compulsory_bytes'], 'B')} "
            f"{seconds(w['latency_s'])} {w['bottleneck']}" in text
        )
    assert "gemm_large_square was not measured" in text
    assert f"Nothing was measured ({cap['measured']['reason']}): every number here is PREDICTED." in text
    # nothing was measured, so the laptop caveat speaks of this target, not of a measurement
    assert "On a laptop, thermal and power state would affect measurements of this target." in text
    assert "One physical device" not in text and "burst regime" not in text
    assert "Bound violations: none." in text
    assert f'<code id="digest">{cap["digest"]["value"]}</code>' in html
    # the page is still self-contained
    assert "<script" not in html and not re.search(r"""(?:src|href)\s*=\s*["']?https?:""", html)


def test_unmeasured_capture_facts_and_markdown(unmeasured, tmp_path):
    cap = load(unmeasured)
    facts = json.loads(report(unmeasured, tmp_path / "u.json", "--format", "json"))
    assert {k: v["available"] for k, v in facts["sections"].items()} == {
        "measured": False,
        "calibrated": False,
        "diagnostic": False,
    }
    assert facts["sections"]["measured"]["reason"] == cap["measured"]["reason"]
    assert all(r["measured_p50_s"] is None and r["status"] == "not measured" for r in facts["workloads"])
    assert facts["device"] is None and facts["launch_floor_s"] is None
    assert all(c["calibrated"] is None for c in facts["ceilings"])
    assert facts["path"]["bound"] == "analytical"
    assert facts["telemetry"] == {
        "available": False,
        "reason": cap["diagnostic"]["reason"],
        "observations": [],
        "caveat": cap["diagnostic"]["caveat"],
    }
    md = report(unmeasured, tmp_path / "u.md", "--format", "md")
    assert f"> **MEASURED** unavailable: {cap['measured']['reason']}" in md
    for w in cap["predicted"]["analytical"]["workloads"]:
        assert f"| {w['name']} | {seconds(w['latency_s'])} | - | not measured |" in md
    assert f"DIAGNOSTIC unavailable: {cap['diagnostic']['reason']}" in md


# ---------------------------------------------------------------- --baseline


def test_baseline_adds_the_gate(tmp_path):
    expected = gate(load_evidence(BASE, "baseline"), load_evidence(RERUN, "report"))
    html = report(RERUN, tmp_path / "g.html", "--baseline", BASE)
    text = text_of(html)
    assert f"Regression gate against {BASE}" in text
    for v in expected.verdicts:
        assert f"{v.workload} {v.verdict} {v.reason}" in text
    assert expected.summary in text
    facts = json.loads(report(RERUN, tmp_path / "g.json", "--format", "json", "--baseline", BASE))
    cli = json.loads(tf("gate", BASE, RERUN, "--json").stdout)
    assert facts["policy"]["gate"]["verdicts"] == cli["verdicts"]
    assert facts["policy"]["gate"]["summary"] == cli["summary"]
    md = report(RERUN, tmp_path / "g.md", "--format", "md", "--baseline", BASE)
    assert f"Regression gate against `{BASE}`: {expected.summary}" in md
    assert all(f"- {v.workload}: {v.verdict} ({v.reason})" in md for v in expected.verdicts)
    # without --baseline there is no gate section
    assert "Regression gate" not in report(RERUN, tmp_path / "nogate.html")


# ---------------------------------------------------------------- output location and bad input


def test_default_output_goes_next_to_the_capture_and_stdout_with_dash(tmp_path):
    copy = tmp_path / "copy.json"
    shutil.copyfile(BASE, copy)
    proc = tf("report", copy, "--format", "md")
    assert proc.returncode == 0, proc.stderr
    written = tmp_path / "copy.report.md"
    assert written.exists() and proc.stderr.strip() == f"wrote {written}"
    dash = tf("report", copy, "--format", "md", "-o", "-")
    assert dash.returncode == 0 and dash.stdout == written.read_text(encoding="utf-8")


def _bad_capture(tmp_path, how) -> Path:
    path = tmp_path / f"{how}.json"
    text = BASE.read_text(encoding="utf-8")
    if how == "truncated":
        path.write_text(text[:-200], encoding="utf-8")
    elif how == "tampered":
        value = repr(load(BASE)["measured"]["workloads"]["gemm_large_square"]["stats"]["p50"])
        at = text.index(value) + 4
        path.write_text(text[:at] + ("7" if text[at] != "7" else "8") + text[at + 1 :], encoding="utf-8")
    elif how == "schema":
        doc = load(BASE)
        doc["schema"] = "tensorforge.capture/0"
        path.write_text(canonical_json(seal_document(doc)), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "how,expected",
    [
        ("truncated", ": not valid JSON: "),
        ("tampered", "digest mismatch"),
        ("schema", "is not a TensorForge capture (schema 'tensorforge.capture/0', schema_version None)"),
    ],
)
@pytest.mark.parametrize("fmt", ["html", "json"])
def test_bad_capture_exit_two_and_no_report(tmp_path, how, expected, fmt):
    bad = _bad_capture(tmp_path, how)
    out = tmp_path / f"out.{fmt}"
    line = one_error_line(tf("report", bad, "--format", fmt, "-o", out))
    assert expected in line and str(bad) in line
    assert not out.exists()
    # nor at the default location next to the capture
    line = one_error_line(tf("report", bad, "--format", fmt))
    assert sorted(p.name for p in tmp_path.iterdir()) == [bad.name]


def test_bad_baseline_exit_two(tmp_path):
    bad = _bad_capture(tmp_path, "tampered")
    out = tmp_path / "out.html"
    line = one_error_line(tf("report", BASE, "-o", out, "--baseline", bad))
    assert line.startswith(f"error: baseline capture {bad} does not verify")
    assert not out.exists()


def test_existing_output_needs_force(tmp_path):
    out = tmp_path / "existing.html"
    out.write_text("keep me\n", encoding="utf-8")
    line = one_error_line(tf("report", BASE, "-o", out))
    assert "already exists" in line and "--force" in line
    assert out.read_text(encoding="utf-8") == "keep me\n"
    proc = tf("report", BASE, "-o", out, "--force")
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["existing.html"]  # no temporary file left behind


def test_unknown_workload_suggests_the_closest(tmp_path):
    out = tmp_path / "out.html"
    line = one_error_line(tf("report", BASE, "-o", out, "--workload", "gemm_large_sqare"))
    assert "unknown workload in this capture 'gemm_large_sqare'" in line
    assert "did you mean 'gemm_large_square'?" in line
    assert not out.exists()


def test_missing_capture_and_bad_format(tmp_path):
    line = one_error_line(tf("report", tmp_path / "none.json", "-o", tmp_path / "o.html"))
    assert "cannot read capture" in line
    one_error_line(tf("report", BASE, "--format", "pdf", "-o", tmp_path / "o.pdf"))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- in a real browser


@functools.cache
def _browser_missing() -> str:
    if not (shutil.which("chromium") or os.path.exists(CHROMIUM)):
        return "Debian's chromium is not installed (/usr/bin/chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return ""


def _open_in_chromium(path: Path):
    """(inner text, figure boxes, errors, requested URLs) of the page at file://path."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(
            executable_path=shutil.which("chromium") or CHROMIUM,
            timeout=120000,  # a hang guard: a busy machine starts Chromium slowly
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page()
            errors, requests = [], []
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
            page.on("request", lambda req: requests.append(req.url))
            page.goto(path.as_uri(), wait_until="load", timeout=120000)
            text = page.inner_text("body")
            boxes = {fig.get_attribute("id"): fig.locator("svg").bounding_box() for fig in page.locator("figure").all()}
            return text, boxes, errors, requests
        finally:
            browser.close()
    finally:
        pw.stop()


def test_page_in_headless_chromium(outputs, doc):
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    path = outputs["dir"] / "report.html"
    text, boxes, errors, requests = _open_in_chromium(path)
    assert errors == []
    assert requests == [path.as_uri()]  # offline: the page asks for nothing but itself
    assert doc["digest"]["value"] in text
    p50 = doc["measured"]["workloads"]["gemm_large_square"]["stats"]["p50"]
    assert re.search(rf"MEASURED\s+p50\s+{re.escape(seconds(p50))}", text)
    assert "Bound violations: none." in text
    assert "What this capture does not establish" in text
    for label in LABELS:
        assert label in text
    assert set(boxes) == {"plot-predicted-vs-measured", "plot-roofline"}
    for name, box in boxes.items():
        assert box and box["width"] > 100 and box["height"] > 100, (name, box)


# ---------------------------------------------------------------- primary and contrast from the numbers

HOST_CPU = HOST_CPU_RUN


def test_primary_and_contrast_come_from_the_numbers_not_preset_names():
    """A capture with no preset names at all (the host-cpu suite is inline specs) still gets a
    primary (the single-operator workload with most FLOPs) and a contrast (fewest FLOPs)."""
    from tensorforge_measure.report.facts import build_facts

    doc = load(HOST_CPU)
    facts = build_facts(read_capture(HOST_CPU))
    ok = [
        w
        for w in doc["predicted"]["analytical"]["workloads"]
        if doc["measured"]["workloads"][w["name"]]["status"] == "ok"
    ]
    single = [w for w in ok if len(w["operators"]) == 1]
    assert facts["primary"]["row"]["name"] == max(single, key=lambda w: w["flops"])["name"]
    assert facts["contrast"]["row"]["name"] == min(ok, key=lambda w: w["flops"])["name"]
    assert facts["primary"]["row"]["name"] != facts["contrast"]["row"]["name"]
    assert "most FLOPs measured" in facts["primary"]["chosen_by"]
    assert facts["path"]["workload"] == facts["primary"]["row"]["name"]  # the path follows the primary


def test_multi_operator_workloads_are_primary_only_when_nothing_else_is_measured():
    from tensorforge_measure.report.choice import choose

    rows = [
        {"name": "big_model", "flops": 1e15, "operators": 12, "measured_p50_s": 1.0},
        {"name": "b_gemm", "flops": 1e9, "operators": 1, "measured_p50_s": 1e-3},
        {"name": "a_gemm", "flops": 1e9, "operators": 1, "measured_p50_s": 1e-3},
        {"name": "tiny", "flops": 1e3, "operators": 1, "measured_p50_s": None},
    ]
    chosen = choose(rows)
    assert chosen["primary"].name == "a_gemm"  # ties go to the name that sorts first
    assert chosen["contrast"].name == "b_gemm"  # 'tiny' was not measured: not a comparison
    assert choose(rows[:1])["primary"].name == "big_model" and choose(rows[:1])["contrast"].name is None
    unmeasured = [dict(r, measured_p50_s=None) for r in rows]
    assert choose(unmeasured)["contrast"].name == "tiny"
    assert "measured" not in choose(unmeasured)["primary"].why


def test_primary_and_contrast_can_be_named(tmp_path):
    md = report(
        BASE, tmp_path / "r.md", "--format", "md", "--primary", "gemm_square_tf32", "--contrast", "transformer_decode"
    )
    assert "- **primary**: On this capture, the calibrated analytical lower bound of gemm_square_tf32" in md
    assert "- **contrast**: transformer_decode" in md and "named with --contrast" in md
    line = one_error_line(tf("report", BASE, "-o", tmp_path / "x.html", "--contrast", "gemm_tinny"))
    assert "unknown workload in this capture 'gemm_tinny'" in line and "did you mean 'gemm_tiny'?" in line
    assert not (tmp_path / "x.html").exists()
