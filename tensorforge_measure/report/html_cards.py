"""The report's two comparison cards (primary and contrast): for one workload the lower bound
(datasheet and calibrated), the estimate, the measurement and both APEs, with the evidence
quality beside them. The quality sits in the card itself because a reader who stops at the cards
must not take a provisional APE for a settled one (the workload table says it too, further down)."""

from html import escape
from typing import Any

from tensorforge.api import percent, seconds
from tensorforge_measure.report.cards import PROVISIONAL, evidence
from tensorforge_measure.report.html_table import breakable, fold


def label(name: str) -> str:
    return f'<span class="label {name}">{name}</span>'


def _s(value: float | None) -> str:
    return escape(seconds(value)) if value is not None else "-"


def _big(text: str) -> str:
    return f'<span class="big">{text}</span>'


def evidence_line(row: dict[str, Any]) -> str:
    """Whether the measurement behind the card's APEs is good enough to judge by, in one line."""
    kind, headline, reasons = evidence(row)
    if kind == "none":
        return f'<span class="empty">{escape(headline)}</span>'
    if kind == "insufficient":
        return f'<span class="violation">insufficient</span>: {escape(reasons)}. {PROVISIONAL}'
    return f"<b>{escape(headline)}</b>"


def _estimate(row: dict[str, Any]) -> str:
    if row.get("estimate_s") is None:
        return f'{label("PREDICTED")} estimate <span class="empty">none in this capture</span>'
    mode = f" ({escape(row['estimate_mode'])})" if row.get("estimate_mode") else ""
    return f"{label('PREDICTED')} estimate{mode} {_big(_s(row['estimate_s']))}"


def _apes(row: dict[str, Any]) -> str:
    mark = " (provisional)" if row.get("provisional") else ""
    text = f"APE (calibrated) {_big(percent(row['ape_calibrated']))}"
    if row.get("ape_estimate") is not None:
        text += f" &middot; APE (estimate) {_big(percent(row['ape_estimate']))}"
    return text + (f'<span class="provisional">{mark}</span>' if mark else "")


def card(title: str, part: dict[str, Any]) -> str:
    row = part["row"]
    if row is None:
        return f'<div class="card"><h3>{escape(title)}</h3><p class="empty">{escape(part["story"])}</p></div>'
    lines = [
        f"{label('PREDICTED')} analytical {_big(_s(row['analytical_s']))}",
        f"{label('CALIBRATED')} lower bound {_big(_s(row['calibrated_s']))}",
        _estimate(row),
        f"{label('MEASURED')} p50 {_big(_s(row['measured_p50_s']))}",
        _apes(row),
        f"evidence {evidence_line(row)}",
    ]
    return (
        f'<div class="card" id="card-{escape(row["name"])}"><h3>{escape(title)}: {breakable(row["name"])}</h3>'
        f'<p class="figs">{"<br>".join(lines)}</p>'
        f"<p>{escape(part['story'])}</p>"
        + fold("Why this workload", f'<p class="meta">Chosen as {escape(part["chosen_by"])}.</p>')
        + "</div>"
    )
