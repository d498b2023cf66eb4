"""The report works for any capture on any screen, checked from the page's layout in headless
Chromium (not by eye): every golden capture `report` accepts (tests/golden.py; provisional rows
included), and a host-CPU capture without an energy counter, each at a phone's 390 px, a
laptop's 1,280 px and a desktop's 1,920 px. With every folded section opened, no element reaches
past the viewport (no horizontal overflow: the bound-check column is on screen) and no plot label
overlaps another label or any other text of its plot; with the sections folded as the page
opens, a 10-workload capture is at most 8 phone screens tall; both comparison cards show the
bound, the estimate where the capture has one, the measurement and the evidence quality.

One browser and one page for everything: each report is loaded once and the viewport resized
between widths (a browser start is seconds on a busy machine). The golden capture cut short is
not here: `report` refuses it, as `verify` does, so it has no page.

The screenshots in docs/report-screenshots/ come from this test:
    TENSORFORGE_REPORT_SCREENSHOTS=docs/report-screenshots python -m pytest tests/test_report_layout.py
"""

import copy
import functools
import itertools
import os
import shutil
from html import escape
from pathlib import Path

import pytest
from golden import COMPLETE, H200_ENERGY_RUN, H200_RERUN, H200_RUN, HOST_CPU_RUN, capture_stem, load_json

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = {capture_stem(p): p for p in COMPLETE}
# what a host without /sys/class/powercap writes into every workload's energy (a capture made on
# the development VM): the report's energy section then has nothing but this reason to show
NO_COUNTER = "host CPU: /sys/class/powercap does not exist (no powercap interface: a VM or a non-Linux host)"
NO_ENERGY = "host-cpu-2core-without-energy-counter"
PAGES = [*CAPTURES, NO_ENERGY]
WIDTHS = (390, 1280, 1920)
PHONE = (390, 844)  # a phone's viewport
SCREENS = 8  # a 10-workload report is at most this many phone screens tall
TEN_WORKLOADS = [capture_stem(p) for p in (H200_RUN, H200_RERUN, H200_ENERGY_RUN)]
SHOTS = ROOT / "docs" / "report-screenshots"
SHOWN = {"h200": capture_stem(H200_RUN), "host-cpu": capture_stem(HOST_CPU_RUN)}  # screenshot name: page
CHROMIUM = "/usr/bin/chromium"

OPEN_ALL = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"
CLOSE_ALL = "() => document.querySelectorAll('details').forEach(d => { d.open = false; })"

# Everything the test reads from the page, measured by the browser itself.
MEASURE = """() => {
  const width = window.innerWidth;
  const rect = e => { const r = e.getBoundingClientRect(); return {x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; };
  const sticking = [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().width > 0 && e.getBoundingClientRect().right > width + 0.5)
    .map(e => e.tagName + (e.id ? '#' + e.id : '') + ' ' + (e.textContent || '').slice(0, 40));
  const figures = [...document.querySelectorAll('figure svg')].map(svg => ({
    id: svg.closest('figure').id,
    labels: [...svg.querySelectorAll('g[id*="-label-"] text')].map(t => ({text: t.textContent, ...rect(t)})),
    others: [...svg.querySelectorAll('text')].filter(t => !t.closest('g[id*="-label-"]'))
      .map(t => ({text: t.textContent, ...rect(t)})),
  }));
  const checks = [...document.querySelectorAll('td[data-label="bound check"]')].map(rect);
  const cards = [...document.querySelectorAll('.cards .card')].map(c => c.innerText);
  return {width, scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,
          height: document.documentElement.scrollHeight, sticking, figures, checks, cards};
}"""


def _shrink(png: Path) -> None:
    """64 colours are plenty for a page of text and flat plots: a third of the bytes to commit."""
    from PIL import Image

    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    small.save(png, optimize=True)


@functools.cache
def _browser_missing() -> str:
    if not (shutil.which("chromium") or os.path.exists(CHROMIUM)):
        return "Debian's chromium is not installed (/usr/bin/chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return ""


def _reports(folder: Path) -> dict[str, tuple[Path, bool]]:
    """{page: (HTML file, whether the capture has an estimate)}: each golden capture's report as
    `tensorforge report` writes it (in-process), and the host-CPU capture's with the energy
    section a host without an energy counter gets."""
    from click.testing import CliRunner

    from tensorforge.cli.main import make_cli
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.report.energy_section import energy_facts
    from tensorforge_measure.report.facts import build_facts
    from tensorforge_measure.report.html import report_page

    cli, out = make_cli(), {}
    for name, capture in CAPTURES.items():
        html = folder / f"{name}.report.html"
        result = CliRunner().invoke(cli, ["report", str(capture), "-o", str(html)])
        assert result.exit_code == 0, result.output
        predicted = load_json(capture)["predicted"]
        chosen = predicted.get("calibrated") or predicted["analytical"]
        out[name] = html, any(w.get("estimate") for w in chosen["workloads"])
    doc = copy.deepcopy(load_json(HOST_CPU_RUN))
    for measurement in doc["measured"]["workloads"].values():
        measurement["energy"] = {"available": False, "reason": NO_COUNTER}
    doc["predicted"]["energy_note"] = "the calibration has no energy probe windows"
    facts = build_facts(load_evidence(HOST_CPU_RUN, "report").capture)
    facts["energy"] = energy_facts(doc)
    html = folder / f"{NO_ENERGY}.report.html"
    html.write_text(report_page(facts), encoding="utf-8")
    out[NO_ENERGY] = html, False
    return out


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{(page, width): (layout with every section open, errors)}, and {page: height at 390 px as
    the page opens} under the key "height", and {page: has an estimate} under "estimate"."""
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    folder = tmp_path_factory.mktemp("report_layout")
    reports = _reports(folder)
    shots = os.environ.get("TENSORFORGE_REPORT_SCREENSHOTS")
    results: dict = {
        "height": {},
        "estimate": {name: has for name, (_, has) in reports.items()},
        "html": {name: html.read_text(encoding="utf-8") for name, (html, _) in reports.items()},
    }
    with sync_playwright() as pw:
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
            page = browser.new_page(viewport={"width": PHONE[0], "height": PHONE[1]})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            for name, (html, _) in reports.items():
                errors.clear()
                page.goto(html.as_uri(), wait_until="load", timeout=120000)
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": PHONE[1]})
                    if width == PHONE[0]:
                        page.evaluate(CLOSE_ALL)
                        results["height"][name] = page.evaluate("document.documentElement.scrollHeight")
                    page.evaluate(OPEN_ALL)
                    results[name, width] = (page.evaluate(MEASURE), list(errors))
                    shot = next((s for s, shown in SHOWN.items() if shown == name), None)
                    if shots and shot and width in (390, 1280):
                        page.evaluate(CLOSE_ALL)  # as a reader first sees it
                        path = Path(shots) / f"{shot}-{width}.png"
                        page.screenshot(path=str(path), full_page=True)
                        _shrink(path)
        finally:
            browser.close()
    return results


CASES = list(itertools.product(PAGES, WIDTHS))
IDS = [f"{n}-{w}" for n, w in CASES]


@pytest.mark.parametrize(("name", "width"), CASES, ids=IDS)
def test_nothing_reaches_past_the_screen(pages, name, width):
    layout, errors = pages[name, width]
    assert errors == []
    assert layout["width"] == width
    assert layout["scroll"] <= width and layout["body"] <= width, layout["sticking"][:5]
    assert layout["sticking"] == []


@pytest.mark.parametrize(("name", "width"), CASES, ids=IDS)
def test_the_bound_check_column_is_on_screen(pages, name, width):
    layout, _ = pages[name, width]
    assert layout["checks"], "no bound-check cells found"
    for cell in layout["checks"]:
        assert 0 <= cell["x0"] < cell["x1"] <= width


def _overlap(a, b) -> bool:
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


@pytest.mark.parametrize(("name", "width"), CASES, ids=IDS)
def test_plot_labels_overlap_nothing(pages, name, width):
    layout, _ = pages[name, width]
    figures = {f["id"]: f for f in layout["figures"]}
    assert {"plot-predicted-vs-measured", "plot-roofline"} <= set(figures)
    for figure in figures.values():
        labels = figure["labels"]
        if figure["id"] in ("plot-predicted-vs-measured", "plot-roofline"):
            assert labels, figure["id"]  # the workloads are labelled at all
        for a, b in itertools.combinations(labels, 2):
            assert not _overlap(a, b), (figure["id"], a, b)
        for label in labels:
            clashes = [o["text"] for o in figure["others"] if _overlap(label, o)]
            assert clashes == [], (figure["id"], label, clashes)


@pytest.mark.parametrize("name", TEN_WORKLOADS)
def test_a_ten_workload_report_fits_in_eight_phone_screens(pages, name):
    assert pages["height"][name] <= SCREENS * PHONE[1], pages["height"][name]


@pytest.mark.parametrize("name", PAGES)
def test_both_cards_show_bound_estimate_measurement_and_evidence(pages, name):
    layout, _ = pages[name, WIDTHS[1]]
    assert len(layout["cards"]) == 2
    for text in layout["cards"]:
        assert "lower bound" in text and "MEASURED" in text and "p50" in text
        assert "evidence" in text
        # the estimate's own figure where the capture has one, and the card says so where not
        assert ("estimate" in text) and (("none in this capture" not in text) == pages["estimate"][name])


def test_no_energy_counter_is_one_line(pages):
    """A host without an energy counter: the section is one line, its reason said once (it was
    an 11-column table of dashes with the reason twice a row)."""
    html = pages["html"][NO_ENERGY]
    assert html.count(escape(NO_COUNTER)) == 1
    assert '<p class="empty" id="energy">Energy per execution: nothing measured' in html


def test_the_screenshots_are_committed():
    for shot, width in itertools.product(SHOWN, (1280, 390)):
        path = SHOTS / f"{shot}-{width}.png"
        assert path.is_file() and path.stat().st_size > 10_000, path
