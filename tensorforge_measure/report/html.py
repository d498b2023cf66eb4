"""The report as one self-contained HTML page: inline CSS, inline SVG plots, no scripts from
anywhere, so it opens offline and can be archived next to the capture."""

from html import escape
from typing import Any

from tensorforge.api import percent, seconds, si
from tensorforge_measure.report.html_cards import card
from tensorforge_measure.report.html_measurement import floors_section, measurement_sections
from tensorforge_measure.report.html_table import breakable, drop_empty_columns, fold, table

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;color:#1b1f24;line-height:1.45;overflow-wrap:break-word}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
.meta{color:#57606a;font-size:.9rem} code{overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:.86rem;margin:.6rem 0}
th,td{border:1px solid #d0d7de;padding:.3rem .45rem;text-align:left;vertical-align:top} th{background:#f6f8fa}
td:first-child{overflow-wrap:break-word;min-width:7rem}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.label{display:inline-block;font-size:.72rem;font-weight:700;letter-spacing:.04em;padding:.1rem .4rem;border-radius:3px;color:#fff}
.PREDICTED{background:#0969da}.MEASURED{background:#1a7f37}.CALIBRATED{background:#8250df}.DIAGNOSTIC{background:#9a6700}.POLICY{background:#cf222e}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,22rem),1fr));gap:1rem}.card{border:1px solid #d0d7de;border-radius:6px;padding:.8rem;min-width:0}
.card h3{overflow-wrap:anywhere}.card .big{font-size:1.25rem;font-weight:600}.note{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem .8rem}
.violation{color:#cf222e;font-weight:700}.empty{color:#57606a;font-style:italic}.provisional{color:#9a6700;font-style:italic}
.flow{display:flex;flex-direction:column;gap:.25rem;font-family:ui-monospace,monospace;font-size:.85rem;overflow-wrap:anywhere}
.flow div{border-left:3px solid #0969da;padding-left:.6rem} figure{margin:1rem 0;max-width:100%} svg{max-width:100%;height:auto;display:block;margin:0 auto}
figcaption{font-size:.82rem;color:#57606a} .key .k{display:inline-block;margin-right:.6rem;overflow-wrap:anywhere}
ul.limits li{margin:.2rem 0}
.n{display:inline-block;min-width:1.3em;padding:0 .25em;border-radius:1em;background:#eaeef2;color:#57606a;font-size:.75rem;text-align:center;font-variant-numeric:tabular-nums}
details{margin:.5rem 0}summary{cursor:pointer;color:#0969da}
.card h3{margin:.1rem 0 .5rem}.card .figs{line-height:1.7;margin:.3rem 0}
@media (max-width:760px){
body{margin:1rem auto;padding:0 .7rem;line-height:1.35}
h2{margin-top:1.2rem;font-size:1.1rem} .card{padding:.5rem .6rem}.card .figs{line-height:1.45}.card .big{font-size:1.05rem}
table.rows{font-size:.8rem}
}
"""


def _as_cards(selector: str) -> str:
    """CSS that lays each row of the tables `selector` picks out as a card of `column value` pairs
    flowing side by side (html_table.py): no column can leave the screen, and a row costs a
    phone a few lines instead of one line per column."""
    t = selector
    return (
        f"{t},{t} tbody{{display:block;width:auto}}{t} thead{{display:none}}"
        f"{t} tr{{display:flex;flex-wrap:wrap;gap:0 .9rem;border:1px solid #d0d7de;border-radius:6px;"
        "margin:.4rem 0;padding:.2rem .5rem}"
        f"{t} td{{display:block;border:none;padding:.05rem 0;min-width:0;max-width:100%;white-space:normal;"
        "overflow-wrap:anywhere;text-align:left}"
        f'{t} td::before{{content:attr(data-label) " ";color:#57606a;font-size:.78rem}}'
        f"{t} td:first-child{{flex:1 0 100%;font-weight:600}}{t} td:first-child::before{{content:none}}"
    )


# every table turns into cards on a phone; a wide one (html_table.WIDE columns or more) already
# where a laptop's window cannot hold its columns side by side
CSS += (
    f"@media (max-width:760px){{{_as_cards('table.rows')}}}\n"
    f"@media (max-width:1180px){{{_as_cards('table.rows.wide')}}}\n"
)


PROVISIONAL = (
    '<br><span class="provisional">&dagger;</span> provisional: the evidence behind it is insufficient '
    "(the evidence cell says why); it may not hold on a rerun"
)

PLOT_ABSENT = {
    "predicted-vs-measured": "nothing was measured in this capture",
    "roofline": "no workload with a compulsory arithmetic intensity",
}


def _label(name: str) -> str:
    return f'<span class="label {name}">{name}</span>'


def _s(value: float | None) -> str:
    return escape(seconds(value)) if value is not None else "-"


def _table(headers: list[str], rows: list[list[str]], numeric=()) -> str:
    return table(headers, rows, numeric)


def _sections_notice(facts) -> str:
    # one line per reason: without a device the three sections share it, said once
    by_reason: dict[str, list[str]] = {}
    for key, label in (("measured", "MEASURED"), ("calibrated", "CALIBRATED"), ("diagnostic", "DIAGNOSTIC")):
        section = facts["sections"][key]
        if not section["available"]:
            by_reason.setdefault(str(section["reason"]), []).append(label)
    notes = [
        f"<p>{' '.join(_label(label) for label in labels)} unavailable: {escape(reason)}</p>"
        for reason, labels in by_reason.items()
    ]
    return f'<div class="note">{"".join(notes)}</div>' if notes else ""


def _workloads(facts) -> str:
    rows: list[list[str]] = []
    for r in facts["workloads"]:
        check = r["bound_check"]
        check_html = f'<span class="violation">{escape(check)}</span>' if check == "BOUND VIOLATION" else escape(check)
        measured = (
            _s(r["measured_p50_s"])
            if r["measured_p50_s"]
            else f'<span class="empty">{escape(r["failure"] or r["status"])}</span>'
        )
        ape_cal, ape_an = percent(r["ape_calibrated"]), percent(r["ape_analytical"])
        evidence = escape(r.get("evidence") or "-")
        if r.get("provisional"):
            # weak evidence: the figures stay, marked (a dagger, short enough to keep the table
            # inside a laptop's window), with the reasons one hover away and in the evidence cell
            why = escape("; ".join(r["evidence_reasons"]))
            mark = f'<span class="provisional" title="provisional: {why}">&dagger;</span>'
            ape_cal, ape_an, check_html = ape_cal + mark, ape_an + mark, check_html + mark
            evidence = f'<span class="violation" title="{why}">insufficient</span>'
        rows.append(
            [
                _number(len(rows) + 1) + "&nbsp;" + breakable(r["name"]),
                escape(si(r["flops"], "FLOP")),
                escape(si(r["compulsory_bytes"], "B")),
                _s(r["analytical_s"]),
                _s(r["calibrated_s"]),
                measured,
                ape_cal,
                ape_an,
                escape(r["bottleneck"]),
                check_html,
                evidence,
            ]
        )
    headers = [
        "workload",
        "FLOPs",
        "compulsory bytes",
        "PREDICTED analytical",
        "calibrated bound",
        "MEASURED p50",
        "APE cal.",
        "APE analytical",
        "bottleneck*",
        "bound check",
        "evidence",
    ]
    said = ""
    if not any(r["measured_p50_s"] for r in facts["workloads"]):
        # nothing measured: no measurement, APE, bound check or evidence in any row; said once
        rows = [row[:5] + row[8:9] for row in rows]
        headers = headers[:5] + headers[8:9]
        said = '<p class="empty">Nothing measured: no MEASURED p50, APE or bound check for any workload.</p>'
    headers, rows, _ = drop_empty_columns(headers, rows)
    numeric = [i for i, h in enumerate(headers) if h in NUMERIC_COLUMNS]
    return said + _table(headers, rows, numeric=numeric)


# the workload table's columns that hold a figure (aligned right)
NUMERIC_COLUMNS = {
    "FLOPs",
    "compulsory bytes",
    "PREDICTED analytical",
    "calibrated bound",
    "MEASURED p50",
    "APE cal.",
    "APE analytical",
}


def _ceilings(facts) -> str:
    rows = [
        [
            escape(c["what"]),
            escape(si(c["datasheet"], c["unit"])),
            escape(si(c["calibrated"], c["unit"])),
            percent(c["fraction"]),
        ]
        for c in facts["ceilings"]
        if c["calibrated"]
    ]
    # ceilings no probe measured: one line, not a row of dashes each
    sheet_only = ", ".join(
        f"{escape(c['what'])} {escape(si(c['datasheet'], c['unit']))}" for c in facts["ceilings"] if not c["calibrated"]
    )
    sheet_line = (
        f'<p><span class="empty">not measured</span> (datasheet peak only): {sheet_only}.</p>' if sheet_only else ""
    )
    floor = facts["launch_floor_s"]
    extra = (
        f"<p>{'Eager event floor' if 'eager_event_floor_s' in facts['measurement']['floors'] else 'Launch floor'} (calibrated, "
        f"not part of the bound): {_s(floor)}.</p>"
        if floor
        else ""
    )
    table = (
        _table(["ceiling", "datasheet peak", "CALIBRATED", "calibrated / datasheet"], rows, numeric=(1, 2, 3))
        if rows
        else ""
    )
    return table + sheet_line + extra


def _path(facts) -> str:
    p = facts["path"]
    if not p:
        return '<p class="empty">No workload to show.</p>'
    tile = "x".join(f"{k}{v}" for k, v in p["tile"]) or p["strategy"]
    steps = [
        f"WORKLOAD {escape(p['workload'])}: {escape(p['spec'])}",
        f"FLOPs + TRAFFIC {escape(si(p['flops'], 'FLOP'))}, compulsory {escape(si(p['compulsory_bytes'], 'B'))}"
        f" over {p['operators']} operator(s)",
        f"MAPPING + TILING {escape(p['top_operator'])}: {escape(p['strategy'])} tile {escape(tile)}"
        f"{' split ' + str(p['split']) if p['split'] > 1 else ''}, {p['tiles']} tiles in {p['waves']} waves, "
        f"DRAM {escape(si(p['dram_traffic'] or 0, 'B'))}",
        f"CEILINGS ({escape(p['ceiling_origin'])}) {escape(p['math_mode'])} {escape(si(p['compute_rate'] or 0, 'FLOP/s'))}, "
        f"DRAM {escape(si(p['dram_rate'], 'B/s'))}",
        f"MAX(COMPUTE {_s(p['compute_s'])}, MEMORY {_s(p['memory_s'])})",
        f"PREDICTED LATENCY {_s(p['latency_s'])} ({escape(p['bound'])} lower bound on {escape(p['target'])})",
    ]
    return (
        '<div class="flow">'
        + "".join(f"<div>{s}</div>" for s in steps)
        + "</div>"
        + (
            f"<p>{_label('PREDICTED')} Predicted bottleneck: <b>{escape(p['bottleneck'])}</b>. "
            f"{escape(facts['bottleneck_statement'])}</p>"
        )
    )


def _telemetry(facts) -> str:
    t = facts["telemetry"]
    if not t["available"]:
        return f'<p class="empty">{_label("DIAGNOSTIC")} unavailable: {escape(str(t["reason"]))}</p>'
    items = (
        "".join(f"<li>{escape(n)}</li>" for n in t["observations"])
        or "<li>No clock-event reasons other than idle were reported.</li>"
    )
    count = len(t["observations"])
    return f"<p>{_label('DIAGNOSTIC')} {escape(str(t.get('window') or ''))}: context, never a verdict.</p>" + fold(
        f"{count} observation{'s' if count != 1 else ''}",
        f"<ul>{items}</ul><p>{escape(str(t['caveat']))}</p>",
    )


def _policy(facts) -> str:
    checks = facts["policy"]["bound_checks"]
    rows = [
        [breakable(name), f'<span class="violation">{escape(v)}</span>' if v == "BOUND VIOLATION" else escape(v)]
        for name, v in checks.items()
    ]
    judged = [v for v in checks.values() if not v.startswith("no verdict")]
    if judged:
        within = sum(v == "within bound" for v in judged)
        html = fold(
            f"Bound checks: {within} of {len(checks)} within bound"
            + (f", {len(checks) - len(judged)} without a verdict" if len(judged) < len(checks) else ""),
            _table(["workload", "bound check (needs MEASURED p50 and a CALIBRATED bound)"], rows),
        )
    else:  # nothing measured: one line, not a column of "no verdict"
        html = f'<p class="empty">Bound checks: no verdict for any of the {len(checks)} workloads.</p>'
    gate = facts["policy"].get("gate")
    if gate:
        grows = [[escape(v["workload"]), escape(v["verdict"]), escape(v["reason"])] for v in gate["verdicts"]]
        html += (
            f"<h3>Regression gate against {escape(str(gate['baseline']['path']))}</h3>"
            + _table(["workload", "verdict", "why"], grows)
            + f"<p>{escape(gate['summary'])}</p>"
        )
    for name in sorted({v["policy"] for v in facts["policy"].get("verdicts", [])}):
        vrows = [
            [
                escape(v["subject"] or "-"),
                escape(v["verdict"]),
                escape(v["reason"]),
                escape("; ".join(v["evidence"]) or "-"),
            ]
            for v in facts["policy"]["verdicts"]
            if v["policy"] == name
        ]
        html += f"<h3>Policy {escape(name)}</h3>" + _table(["subject", "verdict", "why", "evidence"], vrows)
    violations = facts["policy"]["bound_violations"]
    html += (
        f'<p class="violation">Bound violations: {escape(", ".join(violations))}</p>'
        if violations
        else "<p>Bound violations: none.</p>"
    )
    return html


# Which workloads each plot places (its key lists them by their number in the workload table).
PLOTTED = {"predicted-vs-measured": lambda r: bool(r["measured_p50_s"]), "roofline": lambda r: bool(r["intensity"])}


def _number(i: int) -> str:
    return f'<span class="n" title="number in the plots">{i}</span>'


def _key(rows: list[dict[str, Any]], plot: str) -> str:
    """The names behind a plot's numbered points, in one flowing paragraph (a list of one name a
    line cost a phone a screen per plot)."""
    shown = PLOTTED.get(plot, lambda r: True)
    items = " ".join(
        f'<span class="k">{_number(i)}&nbsp;{breakable(r["name"])}</span>' for i, r in enumerate(rows, 1) if shown(r)
    )
    return f'<figcaption>Points are numbered as in the workload table: <span class="key">{items}</span></figcaption>'


def _estimate(facts: dict[str, Any]) -> str:
    e = facts.get("estimate")
    if not e:
        return ""
    from tensorforge_measure.compare.evaluation import HEADERS

    rows = [
        [
            breakable(r["name"]),
            _s(r["bound_s"]),
            _s(r["device_s"]),
            _s(r["eager_s"]),
            str(r["kernels"]),
            _s(r["measured_p50_s"]),
            escape(percent(r["ape_estimate"])),
            escape(", ".join(r["top_terms"]) or "-"),
        ]
        for r in e["rows"]
    ]
    html = (
        f'<h2 id="estimate">The estimate beside the bound</h2><p>Expected time, <b>not a bound</b> '
        f"({escape(str(e['basis_kind']))}): {escape(str(e['basis']))}.</p>"
        + fold(
            f"Per workload ({len(rows)}): the estimate beside the bound",
            _table(
                [
                    "workload",
                    "lower bound",
                    "ESTIMATE device",
                    "ESTIMATE eager",
                    "kernels",
                    "MEASURED p50",
                    "APE estimate",
                    "largest terms",
                ],
                rows,
                numeric=(1, 2, 3, 4, 5, 6),
            ),
        )
    )
    if e["evaluation"]:
        scored = e["evaluation"]["classes"] + e["evaluation"]["families"]
        html += fold(
            "Scored per class (<code>tensorforge evaluate</code>)",
            _table(HEADERS, [[escape(c) for c in row] for row in scored]),
        )
    elif e["evaluation_absent"]:
        html += f"<p>No per-class evaluation: {escape(e['evaluation_absent'])}</p>"
    return html + "\n"


def _energy(facts: dict[str, Any]) -> str:
    e = facts.get("energy")
    if not e:
        return ""
    from tensorforge_measure.report.energy_section import HEADERS, empty, empty_line, intro, table_rows

    if empty(e):  # a host without an energy counter: one line, each reason once
        return f'<p class="empty" id="energy">{escape(empty_line(e))}</p>\n'
    headers, rows, kept = drop_empty_columns(HEADERS, table_rows(e))
    numeric = [kept.index(i) for i in (2, 3, 4, 5, 7, 8, 10) if i in kept]
    measured = sum(r["measured_j"] is not None for r in e["rows"])
    violations = (
        f'<span class="violation">FLOOR VIOLATIONS: {escape(", ".join(e["violations"]))}</span>'
        if e["violations"]
        else "no energy floor violations"
    )
    return (
        f'<h2 id="energy">Energy per execution</h2><p>{measured} of {len(e["rows"])} workloads measured; '
        f"{violations}.</p>"
        + fold(
            "Per workload, and how it was measured",
            f"<p>{escape(intro(e))}</p>" + _table(headers, [[escape(c) for c in row] for row in rows], numeric=numeric),
        )
        + "\n"
    )


# matplotlib is the `report` extra: `pip install -e .` without it still writes the report, with
# this in place of each plot (and the command says so in one warning line).
NO_MATPLOTLIB = "matplotlib is not installed (pip install 'tensorforge[report]' adds the plots)"


def matplotlib_missing() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return True
    return False


def report_page(facts: dict[str, Any]) -> str:
    """The whole page: the facts with both plots drawn (matplotlib, imported when drawing), or
    without plots, saying why, when matplotlib is not installed."""
    if matplotlib_missing():
        return render_html(
            facts,
            {"predicted-vs-measured": None, "roofline": None},
            absent={"predicted-vs-measured": NO_MATPLOTLIB, "roofline": NO_MATPLOTLIB},
        )
    from tensorforge_measure.report.plots import operator_bars, predicted_vs_measured, roofline

    ops = facts["measurement"]["operators"]
    return render_html(
        facts,
        {
            "predicted-vs-measured": predicted_vs_measured(facts["workloads"]),
            "roofline": roofline(facts["workloads"], facts["ceilings"]),
        },
        operator_bars(ops["rows"], ops["workload"]) if ops["available"] else None,
    )


def render_html(
    facts: dict[str, Any],
    plots: dict[str, str | None],
    operators_svg: str | None = None,
    absent: dict[str, str] | None = None,
) -> str:
    reasons = {**PLOT_ABSENT, **(absent or {})}
    labels = [[_label(l["label"]), escape(l["meaning"]), escape(l["source"])] for l in facts["labels"]]
    # A plot left out says why (the roofline still places predicted points when nothing was measured,
    # so an all-or-nothing note would never show for the empty predicted-vs-measured plot).
    figures = (
        "".join(
            f'<figure id="plot-{key}">{svg}{_key(facts["workloads"], key)}</figure>'
            if svg
            else f'<p class="empty" id="plot-{key}">No {escape(key.replace("-", " "))} plot: '
            f"{escape(reasons.get(key, 'nothing to plot'))}.</p>"
            for key, svg in plots.items()
        )
        or '<p class="empty">No plots: nothing was measured in this capture.</p>'
    )
    limits = "".join(f"<li>{escape(s)}</li>" for s in facts["limits"])
    device = escape(facts["device"] or "no device")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{escape(facts["title"])}</title><style>{CSS}</style></head>
<body>
<h1>{escape(facts["title"])}</h1>
<p class="meta">Target <b>{escape(facts["target"])}</b> at {escape(facts["operating_point"])}; measured on <b>{device}</b>
{("(" + escape(facts["fingerprint"]) + ")") if facts["fingerprint"] else ""}; {escape(str(facts["started_at"]))};
TensorForge {escape(str(facts["tensorforge_version"]))}; capture digest <code id="digest">{escape(facts["digest"])}</code> (verified).</p>
{_sections_notice(facts)}
<h2>Five labels. Five different claims.</h2>
{fold(" ".join(_label(l["label"]) for l in facts["labels"]) + " what each one is", _table(["label", "what it is", "where it comes from"], labels))}
<h2>The model is useful because its boundary is measurable</h2>
<div class="cards">{card("Primary", facts["primary"])}{card("Contrast", facts["contrast"])}</div>
<h2>Every workload</h2>
{_workloads(facts)}
<p>{escape(facts["bottleneck_footnote"])}{PROVISIONAL if any(r.get("provisional") for r in facts["workloads"]) else ""}</p>
{figures}
{_estimate(facts)}{_energy(facts)}{measurement_sections(facts["measurement"], operators_svg)}<h2>Measured ceilings, not marketing peaks</h2>
{_ceilings(facts)}{floors_section(facts["measurement"])}
<h2>From workload description to lower bound</h2>
{_path(facts)}
<h2>What the device reported in a separate run</h2>
{_telemetry(facts)}
<h2>No evidence, no verdict</h2>
{_policy(facts)}
<h2>What this capture does not establish</h2>
<ul class="limits">{limits}</ul>
<p class="meta">Command: <code>{escape(facts["command"])}</code>; run took {escape(str(facts["duration_s"]))} s.</p>
</body></html>
"""
