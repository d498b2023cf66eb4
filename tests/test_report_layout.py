"""The report works for any capture on any screen, checked from the page's layout in headless
Chromium (not by eye): the H200 capture and the host-CPU capture, each at a laptop's 1366 px and
a phone's 390 px. No element reaches past the viewport (no horizontal overflow: the bound-check
column is on screen), no plot label overlaps another label or any other text of its plot, and
both comparison cards hold a comparison chosen from the capture at hand.

The screenshots in docs/report-screenshots/ come from this test:
    TENSORFORGE_REPORT_SCREENSHOTS=docs/report-screenshots python -m pytest tests/test_report_layout.py
"""

import functools
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from golden import H200_RUN, HOST_CPU_RUN

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = {"h200": H200_RUN, "host-cpu": HOST_CPU_RUN}
WIDTHS = (1366, 390)
SHOTS = ROOT / "docs" / "report-screenshots"
CHROMIUM = "/usr/bin/chromium"
TENSORFORGE = Path(sys.executable).parent / "tensorforge"

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
  const cards = [...document.querySelectorAll('.cards .card')].map(c => c.querySelectorAll('.big').length);
  return {width, scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,
          sticking, figures, checks, cards};
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


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{(capture, width): (layout, screenshot path)} for every capture at every width."""
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    folder = tmp_path_factory.mktemp("report_layout")
    out = Path(os.environ.get("TENSORFORGE_REPORT_SCREENSHOTS") or folder)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
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
            for name, capture in CAPTURES.items():
                html = folder / f"{name}.report.html"
                proc = subprocess.run(
                    [str(TENSORFORGE), "report", str(capture), "-o", str(html)],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert proc.returncode == 0, proc.stderr
                for width in WIDTHS:
                    page = browser.new_page(viewport={"width": width, "height": 900})
                    errors: list[str] = []
                    page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                    page.goto(html.as_uri(), wait_until="load", timeout=120000)
                    shot = out / f"{name}-{width}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    _shrink(shot)
                    results[name, width] = (page.evaluate(MEASURE), errors, shot)
                    page.close()
        finally:
            browser.close()
    return results


CASES = list(itertools.product(CAPTURES, WIDTHS))
IDS = [f"{n}-{w}" for n, w in CASES]


@pytest.mark.parametrize(("capture", "width"), CASES, ids=IDS)
def test_nothing_reaches_past_the_screen(pages, capture, width):
    layout, errors, _ = pages[capture, width]
    assert errors == []
    assert layout["width"] == width
    assert layout["scroll"] <= width and layout["body"] <= width, layout["sticking"][:5]
    assert layout["sticking"] == []


@pytest.mark.parametrize(("capture", "width"), CASES, ids=IDS)
def test_the_bound_check_column_is_on_screen(pages, capture, width):
    layout, _, _ = pages[capture, width]
    assert layout["checks"], "no bound-check cells found"
    for cell in layout["checks"]:
        assert 0 <= cell["x0"] < cell["x1"] <= width


def _overlap(a, b) -> bool:
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


@pytest.mark.parametrize(("capture", "width"), CASES, ids=IDS)
def test_plot_labels_overlap_nothing(pages, capture, width):
    layout, _, _ = pages[capture, width]
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


@pytest.mark.parametrize("capture", CAPTURES)
def test_both_comparisons_are_chosen_from_the_capture(pages, capture):
    layout, _, _ = pages[capture, WIDTHS[0]]
    assert layout["cards"] == [4, 4]  # analytical, calibrated, measured, APE in each


def test_the_screenshots_are_committed():
    for capture, width in CASES:
        path = SHOTS / f"{capture}-{width}.png"
        assert path.is_file() and path.stat().st_size > 10_000, path
