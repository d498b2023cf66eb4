"""The report as Markdown (text only; the plots are in the HTML page)."""

from typing import Any

from tensorforge.api import percent, seconds, si
from tensorforge_measure.report.cards import PROVISIONAL, evidence


def _s(value):
    return seconds(value) if value is not None else "-"


def _card(title: str, part: dict[str, Any]) -> list[str]:
    """A comparison card as the HTML page shows it: the story, then the bound (analytical and
    calibrated), the estimate and the measurement, the APEs, and the evidence quality beside
    them, so a provisional APE reads as provisional here too."""
    row = part["row"]
    if row is None:
        return [f"- **{title}**: {part['story']}"]
    mode = f" ({row['estimate_mode']})" if row.get("estimate_mode") else ""
    estimate = _s(row["estimate_s"]) if row.get("estimate_s") is not None else "none in this capture"
    apes = f"APE (calibrated) {percent(row['ape_calibrated'])}"
    if row.get("ape_estimate") is not None:
        apes += f"; APE (estimate) {percent(row['ape_estimate'])}"
    kind, headline, reasons = evidence(row)
    quality = {"none": headline, "insufficient": f"**insufficient**: {reasons}. {PROVISIONAL}"}.get(
        kind, f"**{headline}**"
    )
    return [
        f"- **{title}**: {part['story']} (Chosen as {part['chosen_by']}.)",
        f"  - PREDICTED analytical: {_s(row['analytical_s'])}",
        f"  - CALIBRATED lower bound: {_s(row['calibrated_s'])}",
        f"  - PREDICTED estimate{mode}: {estimate}",
        f"  - MEASURED p50: {_s(row['measured_p50_s'])}",
        f"  - {apes}" + (" (provisional)" if row.get("provisional") else ""),
        f"  - evidence: {quality}",
    ]


def render_markdown(facts: dict[str, Any]) -> str:
    out = [
        f"# {facts['title']}",
        "",
        f"Target **{facts['target']}** at {facts['operating_point']}; measured on "
        f"**{facts['device'] or 'no device'}**; {facts['started_at']}; capture digest `{facts['digest']}` (verified).",
        "",
    ]
    for key, section in facts["sections"].items():
        if not section["available"]:
            out.append(f"> **{key.upper()}** unavailable: {section['reason']}")
    out += ["", "## Five labels", "", "| label | meaning |", "|---|---|"]
    out += [f"| {l['label']} | {l['meaning']} |" for l in facts["labels"]]
    out += ["", "## Primary and contrast", ""]
    for title in ("primary", "contrast"):
        out += _card(title, facts[title])
    out += [
        "",
        "## Every workload",
        "",
        "| workload | PREDICTED analytical | calibrated bound | MEASURED p50 | APE cal. | APE analytical "
        "| bottleneck* | bound check | evidence |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    weak = []
    for r in facts["workloads"]:
        measured = _s(r["measured_p50_s"]) if r["measured_p50_s"] else (r["failure"] or r["status"])
        mark = " (provisional)" if r.get("provisional") else ""
        if mark:
            weak.append(f"- PROVISIONAL {r['name']}: {'; '.join(r['evidence_reasons'])}")
        out.append(
            f"| {r['name']} | {_s(r['analytical_s'])} | {_s(r['calibrated_s'])} | {measured} | "
            f"{percent(r['ape_calibrated'])}{mark} | {percent(r['ape_analytical'])}{mark} | {r['bottleneck']} | "
            f"{r['bound_check']}{mark} | {r.get('evidence') or '-'} |"
        )
    if weak:
        out += ["", "Insufficient evidence: these APEs and bound checks are provisional.", ""] + weak
    out += [
        "",
        "\\" + facts["bottleneck_footnote"],
        "",
        "## Measured ceilings, not marketing peaks",
        "",
        "| ceiling | datasheet | CALIBRATED | ratio |",
        "|---|---|---|---|",
    ]
    for c in facts["ceilings"]:
        out.append(
            f"| {c['what']} | {si(c['datasheet'], c['unit'])} | "
            f"{si(c['calibrated'], c['unit']) if c['calibrated'] else 'not measured'} | {percent(c['fraction'])} |"
        )
    m = facts["measurement"]
    phases = bool(m["regimes"]) or m["operators"]["workload"] is not None  # a capture made with them
    if m["regimes"]:
        out += [
            "",
            "## Burst and sustained",
            "",
            "| workload | regime | graph p50 | eager p50 | host overhead | bound (regime) | APE | bound check |",
            "|---|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {r['workload']} | {r['regime']} | {_s(r['graph_p50_s'])} | {_s(r['eager_p50_s'])} | "
            f"{_s(r['host_overhead_s'])} | {_s(r['bound_s'])} | {percent(r['ape'])} | {r['check']} |"
            for r in m["regimes"]
        ]
    o = m["operators"]
    if phases:
        out += ["", "## Where the time goes, per operator", ""]
    if o["available"]:
        out += [
            f"{o['workload']} ({o['regime']} regime, {o['mode']}; chosen as {o['chosen_by']}); operators add up to "
            f"{_s(o['sum_measured_s'])} of {_s(o['whole_p50_s'])} for the whole workload (coverage "
            f"{percent(o['coverage'])}: {o['coverage_rule']}).",
            "",
            "| operator | count | kernels | CALIBRATED bound | MEASURED | measured / bound | bound check |",
            "|---|---|---|---|---|---|---|",
        ]
        out += [
            f"| {r['operator']} | {r['count']} | {r['kernels'] if r['kernels'] is not None else '-'} | {_s(r['predicted_calibrated_s'])} | "
            f"{_s(r['measured_s'])} | {format(r['ratio'], '.2f') if r['ratio'] else '-'} | "
            f"{(r['bound_check'] or {}).get('verdict', '-')} |"
            for r in o["rows"]
        ]
    elif phases:
        out.append(f"No per-operator view: {o['reason']}.")
    p = facts["path"]
    if p:
        tile = "x".join(f"{k}{v}" for k, v in p["tile"]) or p["strategy"]
        out += [
            "",
            "## From workload description to lower bound",
            "",
            f"1. WORKLOAD `{p['spec']}`",
            f"2. FLOPs + TRAFFIC: {si(p['flops'], 'FLOP')}, compulsory {si(p['compulsory_bytes'], 'B')}",
            f"3. MAPPING + TILING ({p['top_operator']}): {p['strategy']} {tile}, {p['tiles']} tiles, {p['waves']} waves",
            f"4. CEILINGS ({p['ceiling_origin']}): {p['math_mode']} {si(p['compute_rate'] or 0, 'FLOP/s')}, DRAM {si(p['dram_rate'], 'B/s')}",
            f"5. MAX(COMPUTE {_s(p['compute_s'])}, MEMORY {_s(p['memory_s'])})",
            f"6. PREDICTED LATENCY {_s(p['latency_s'])}; bottleneck: {p['bottleneck']}. {facts['bottleneck_statement']}",
        ]
    if facts.get("estimate"):
        from tensorforge_measure.report.estimate_section import markdown_lines

        out += markdown_lines(facts["estimate"])
    if facts.get("energy"):
        from tensorforge_measure.report.energy_section import markdown_lines as energy_lines

        out += energy_lines(facts["energy"])
    t = facts["telemetry"]
    out += ["", "## What the device reported in a separate run", ""]
    out += [f"- {n}" for n in t["observations"]] if t["available"] else [f"DIAGNOSTIC unavailable: {t['reason']}"]
    if t.get("caveat"):
        out += ["", t["caveat"]]
    out += ["", "## No evidence, no verdict", ""]
    out += [f"- {n}: {v}" for n, v in facts["policy"]["bound_checks"].items()]
    gate = facts["policy"].get("gate")
    if gate:
        out += ["", f"Regression gate against `{gate['baseline']['path']}`: {gate['summary']}"]
        out += [f"- {v['workload']}: {v['verdict']} ({v['reason']})" for v in gate["verdicts"]]
    for name in sorted({v["policy"] for v in facts["policy"].get("verdicts", [])}):
        out += ["", f"Policy `{name}`:"]
        out += [
            f"- {v['subject'] or '-'}: {v['verdict']} ({v['reason']}; evidence: {'; '.join(v['evidence']) or '-'})"
            for v in facts["policy"]["verdicts"]
            if v["policy"] == name
        ]
    out += ["", "## What this capture does not establish", ""] + [f"- {s}" for s in facts["limits"]]
    return "\n".join(out) + "\n"
