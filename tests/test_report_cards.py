"""The report's primary and contrast cards say the same in Markdown as on the HTML page: the bound
(analytical and calibrated), the estimate, the measurement, the APEs, and the evidence quality
beside them, so a reader of the Markdown who stops at the cards is not handed a provisional APE
as a settled one. In-process, from small golden captures."""

import re
from html import unescape

import pytest
from golden import HOST_CPU_ESTIMATE_EVAL, HOST_CPU_RUN, RTX_ON_H200

from tensorforge.api import percent, seconds
from tensorforge_measure.capture.document import read_capture
from tensorforge_measure.report.cards import PROVISIONAL
from tensorforge_measure.report.facts import build_facts
from tensorforge_measure.report.html_cards import card
from tensorforge_measure.report.markdown import render_markdown

CAPTURES = (HOST_CPU_ESTIMATE_EVAL, HOST_CPU_RUN, RTX_ON_H200)


class _Facts(dict):
    """Each capture's report facts, built when a test first asks (each test stays short)."""

    def __missing__(self, name: str) -> dict:
        self[name] = build_facts(read_capture(next(p for p in CAPTURES if p.name == name)))
        return self[name]


@pytest.fixture(scope="module")
def facts():
    return _Facts()


def card_lines(markdown: str, title: str) -> list[str]:
    """The card's own lines: its story, then the figures indented under it."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"- **{title}**: "))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  - "))
    return lines[start:end]


def html_text(title: str, part: dict) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", card(title, part)))


@pytest.mark.parametrize("name", [p.name for p in CAPTURES])
@pytest.mark.parametrize("title", ["primary", "contrast"])
def test_markdown_cards_show_bound_estimate_measurement_and_evidence(facts, name, title):
    part = facts[name][title]
    row = part["row"]
    lines = card_lines(render_markdown(facts[name]), title)
    if row is None:  # nothing to compare: the story alone says so
        assert lines == [f"- **{title}**: {part['story']}"]
        return
    figures = "\n".join(lines[1:])
    estimate = seconds(row["estimate_s"]) if row["estimate_s"] is not None else "none in this capture"
    mode = f" ({row['estimate_mode']})" if row["estimate_mode"] else ""
    for text in (
        f"PREDICTED analytical: {seconds(row['analytical_s'])}",
        f"CALIBRATED lower bound: {seconds(row['calibrated_s'])}",
        f"PREDICTED estimate{mode}: {estimate}",
        f"MEASURED p50: {seconds(row['measured_p50_s'])}",
        f"APE (calibrated) {percent(row['ape_calibrated'])}",
    ):
        assert text in figures, (text, figures)
    assert lines[-1].startswith("  - evidence: ")
    # the HTML card states the same figures
    shown = html_text(title, part)
    for value in (row["analytical_s"], row["calibrated_s"], row["estimate_s"], row["measured_p50_s"]):
        if value is not None:
            assert seconds(value) in shown and seconds(value) in figures
    if row["ape_estimate"] is not None:
        assert f"APE (estimate) {percent(row['ape_estimate'])}" in figures


def test_a_provisional_card_says_so_in_both_formats(facts):
    got = facts[HOST_CPU_ESTIMATE_EVAL.name]
    row = dict(got["primary"]["row"], evidence="insufficient", provisional=True, evidence_reasons=["5 samples"])
    weak = dict(got, primary=dict(got["primary"], row=row))
    lines = card_lines(render_markdown(weak), "primary")
    assert lines[-2].endswith(" (provisional)")
    assert lines[-1] == f"  - evidence: **insufficient**: 5 samples. {PROVISIONAL}"
    assert f"insufficient : 5 samples. {PROVISIONAL}" in html_text("Primary", weak["primary"])


def test_an_unmeasured_card_says_there_is_nothing_to_judge(facts):
    got = facts[HOST_CPU_RUN.name]
    row = dict(got["contrast"]["row"], measured_p50_s=None, ape_calibrated=None, ape_estimate=None)
    lines = card_lines(render_markdown(dict(got, contrast=dict(got["contrast"], row=row))), "contrast")
    assert "  - MEASURED p50: -" in lines
    assert lines[-1] == "  - evidence: no measurement: nothing to judge the bound or the estimate by"
