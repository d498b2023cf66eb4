"""The report as one self-contained HTML page: inline CSS, inline SVG plots, no scripts from
anywhere, so it opens offline and can be archived next to the capture."""

from html import escape
from typing import Any

from tensorforge.api import percent, seconds, si
from tensorforge_measure.report.html_measurement import floors_section, measurement_sections
from tensorforge_measure.report.html_table import breakable, table

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
figcaption{font-size:.82rem;color:#57606a} ol.key{columns:2 16rem;margin:.3rem 0;padding-left:2rem;overflow-wrap:anywhere}
ul.limits li{margin:.2rem 0}
.n{display:inline-block;min-width:1.3em;padding:0 .25em;border-radius:1em;background:#eaeef2;color:#57606a;font-size:.75rem;text-align:center;font-variant-numeric:tabular-nums}
@media (max-width:760px){
body{margin:1rem auto;padding:0 .7rem}
table.rows,table.rows tbody,table.rows tr,table.rows td{display:block;width:auto}
table.rows thead{display:none}
table.rows tr{border:1px solid #d0d7de;border-radius:6px;margin:.6rem 0;padding:.15rem .5rem}
table.rows td{border:none;border-bottom:1px solid #eaeef2;display:flex;justify-content:space-between;gap:1rem;text-align:right;min-width:0;white-space:normal;overflow-wrap:anywhere}
table.rows td:last-child{border-bottom:none}
table.rows td::before{content:attr(data-label);font-weight:600;color:#57606a;text-align:left;flex:0 0 42%;overflow-wrap:anywhere}
table.rows td:first-child{font-weight:600}
}
"""


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


def _card(title: str, part: dict[str, Any]) -> str:
    row = part["row"]
    if row is None:
        return f'<div class="card"><h3>{escape(title)}</h3><p class="empty">{escape(part["story"])}</p></div>'
    return (
        f'<div class="card" id="card-{escape(row["name"])}"><h3>{escape(title)}: {breakable(row["name"])}</h3>'
        f'<p>{_label("PREDICTED")} analytical <span class="big">{_s(row["analytical_s"])}</span><br>'
        f'{_label("CALIBRATED")} lower bound <span class="big">{_s(row["calibrated_s"])}</span><br>'
        f'{_label("MEASURED")} p50 <span class="big">{_s(row["measured_p50_s"])}</span><br>'
        f'APE (calibrated) <span class="big">{percent(row["ape_calibrated"])}</span></p>'
        f'<p>{escape(part["story"])}</p><p class="meta">Chosen as {escape(part["chosen_by"])}.</p></div>'
    )


def _sections_notice(facts) -> str:
    notes = []
    for key, label in (("measured", "MEASURED"), ("calibrated", "CALIBRATED"), ("diagnostic", "DIAGNOSTIC")):
        section = facts["sections"][key]
        if not section["available"]:
            notes.append(f"<p>{_label(label)} unavailable: {escape(str(section['reason']))}</p>")
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
            # weak evidence: the figures stay, marked, with the reasons one hover away
            why = escape("; ".join(r["evidence_reasons"]))
            mark = f' <span class="provisional" title="{why}">(provisional)</span>'
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
    return _table(
        [
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
        ],
        rows,
        numeric=(1, 2, 3, 4, 5, 6, 7),
    )


def _ceilings(facts) -> str:
    rows = [
        [
            escape(c["what"]),
            escape(si(c["datasheet"], c["unit"])),
            escape(si(c["calibrated"], c["unit"])) if c["calibrated"] else '<span class="empty">not measured</span>',
            percent(c["fraction"]),
        ]
        for c in facts["ceilings"]
    ]
    floor = facts["launch_floor_s"]
    extra = (
        f"<p>{'Eager event floor' if 'eager_event_floor_s' in facts['measurement']['floors'] else 'Launch floor'} (calibrated, "
        f"not part of the bound): {_s(floor)}.</p>"
        if floor
        else ""
    )
    return (
        _table(["ceiling", "datasheet peak", "CALIBRATED", "calibrated / datasheet"], rows, numeric=(1, 2, 3)) + extra
    )


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
    return (
        f"<p>{_label('DIAGNOSTIC')} {escape(str(t.get('window') or ''))}. It supplies context and never "
        f"determines a verdict.</p><ul>{items}</ul><p>{escape(str(t['caveat']))}</p>"
    )


def _policy(facts) -> str:
    checks = facts["policy"]["bound_checks"]
    rows = [
        [breakable(name), f'<span class="violation">{escape(v)}</span>' if v == "BOUND VIOLATION" else escape(v)]
        for name, v in checks.items()
    ]
    html = _table(["workload", "bound check (needs MEASURED p50 and a CALIBRATED bound)"], rows)
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
    """The names behind a plot's numbered points."""
    shown = PLOTTED.get(plot, lambda r: True)
    items = "".join(f'<li value="{i}">{breakable(r["name"])}</li>' for i, r in enumerate(rows, 1) if shown(r))
    return f'<figcaption>Points are numbered as in the workload table:<ol class="key">{items}</ol></figcaption>'


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
        + _table(
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
        )
    )
    if e["evaluation"]:
        html += "<p>Per class (<code>tensorforge evaluate</code>):</p>" + _table(
            HEADERS, [[escape(c) for c in row] for row in e["evaluation"]["classes"] + e["evaluation"]["families"]]
        )
    elif e["evaluation_absent"]:
        html += f"<p>No per-class evaluation: {escape(e['evaluation_absent'])}</p>"
    return html + "\n"


def _energy(facts: dict[str, Any]) -> str:
    e = facts.get("energy")
    if not e:
        return ""
    from tensorforge_measure.report.energy_section import HEADERS, intro, table_rows

    return (
        f'<h2 id="energy">Energy per execution</h2><p>{escape(intro(e))}</p>'
        + _table(HEADERS, [[escape(c) for c in row] for row in table_rows(e)], numeric=(1, 2, 3, 4, 5, 7, 8, 9, 10))
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
{_table(["label", "what it is", "where it comes from"], labels)}
<h2>The model is useful because its boundary is measurable</h2>
<div class="cards">{_card("Primary", facts["primary"])}{_card("Contrast", facts["contrast"])}</div>
<h2>Every workload</h2>
{_workloads(facts)}
<p>{escape(facts["bottleneck_footnote"])}</p>
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
