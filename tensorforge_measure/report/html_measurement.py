"""HTML sections for the measurement phases: both regimes for every workload, the per-operator
view of one workload (table and bar chart), and the named floors."""

from html import escape
from typing import Any

from tensorforge.api import percent, seconds
from tensorforge_measure.report.html_table import breakable, fold, table

FLOOR_LABELS = {
    "kernel_interval_s": "kernel interval, graph replay (duration + gap)",
    "kernel_duration_s": "kernel duration (trivial kernel, profiler)",
    "kernel_gap_s": "gap between back-to-back kernels (profiler)",
    "eager_event_floor_s": "eager event floor (event pair around one eager op)",
    "host_call_interval_s": "host call interval (host time per eager call)",
}


def _s(value: float | None) -> str:
    return escape(seconds(value)) if value is not None else "-"


def _check(verdict: str) -> str:
    return f'<span class="violation">{escape(verdict)}</span>' if verdict == "BOUND VIOLATION" else escape(verdict)


def _table(headers, rows, numeric=()) -> str:
    return table(headers, rows, numeric)


def regimes_section(m: dict[str, Any]) -> str:
    if not m["regimes"]:
        return '<p class="empty">No timings by regime in this capture.</p>'
    rows = [
        [
            breakable(r["workload"]),
            escape(r["regime"]),
            _s(r["graph_p50_s"]),
            _s(r["eager_p50_s"]),
            _s(r["host_overhead_s"]),
            _s(r["bound_s"]),
            percent(r["ape"]),
            _check(r["check"]),
        ]
        for r in m["regimes"]
    ]
    violations = m["regime_bound_violations"]
    return fold(
        f"{len(rows)} timings against their regime's bound",
        "<p>Every timing is compared with the calibrated bound of its own regime: <b>burst</b> (short "
        "stretches on a cool device, as the burst probes ran), <b>sustained</b> (continuous load after the "
        "device reached its steady clock, timed as do_bench times; the sustained probes give its ceilings), "
        "or <b>single</b> where a device has one regime. <b>graph</b> is CUDA-graph replay (device time), "
        "<b>eager</b> includes the host; their difference is the host overhead.</p>"
        + _table(
            [
                "workload",
                "regime",
                "MEASURED graph p50",
                "MEASURED eager p50",
                "host overhead",
                "CALIBRATED bound (regime)",
                "APE",
                "bound check",
            ],
            rows,
            numeric=(2, 3, 4, 5, 6),
        ),
    ) + (
        f'<p class="violation">Bound violations by regime: {escape(", ".join(violations))}</p>'
        if violations
        else "<p>Bound violations in either regime: none.</p>"
    )


def operators_section(m: dict[str, Any], svg: str | None) -> str:
    o = m["operators"]
    if not o["available"]:
        return f'<p class="empty">No per-operator view: {escape(str(o["reason"]))}.</p>'
    rows = [
        [
            escape(r["operator"]),
            str(r["count"]),
            str(r["kernels"]) if r["kernels"] is not None else "-",
            _s(r["predicted_calibrated_s"]),
            _s(r["measured_s"]),
            f"{r['ratio']:.2f}" if r["ratio"] else "-",
            _check((r["bound_check"] or {}).get("verdict", "-")),
            # <code> breaks anywhere: a kernel's name has no spaces and would widen the table
            "<code>"
            + escape("; ".join(n[:80] for n in r["kernel_names"][:3]) + (" ..." if len(r["kernel_names"]) > 3 else ""))
            + "</code>",
        ]
        for r in o["rows"]
    ]
    notes = "".join(f"<li>{escape(n)}</li>" for n in o["notes"])
    return fold(
        f"{escape(o['workload'])}: {len(rows)} operators (coverage {percent(o['coverage'])})",
        f"<p>{escape(o['workload'])} (chosen as {escape(o['chosen_by'])}): each Core operator's calibrated "
        f"lower bound against its measured time in the trace window ({escape(o['regime'])} regime, "
        f"{escape(o['mode'])} {'replays' if o['mode'] == 'graph' else 'calls'}; "
        + (
            escape(o["method"])
            if o.get("method")
            else "an operator's time is its kernels and the idle gaps before them, p50 over the traced calls"
        )
        + "). The operators add up to "
        f"{_s(o['sum_measured_s'])} against {_s(o['whole_p50_s'])} for the whole workload "
        f"(coverage {percent(o['coverage'])}: {escape(str(o['coverage_rule']))}); unattributed "
        f"{_s(o['unattributed_s'])}.</p>"
        + (f'<figure id="plot-operators">{svg}</figure>' if svg else "")
        + _table(
            [
                "operator",
                "count",
                "kernels",
                "CALIBRATED bound",
                "MEASURED (trace)",
                "measured / bound",
                "bound check",
                "kernels that ran",
            ],
            rows,
            numeric=(1, 2, 3, 4, 5),
        )
        + (f"<ul>{notes}</ul>" if notes else ""),
    )


def measurement_sections(m: dict[str, Any], operators_svg: str | None) -> str:
    """Both regimes and the per-operator view; nothing for a capture made before them (so its
    report renders as it did)."""
    if not m["regimes"] and not m["operators"]["available"] and m["operators"]["workload"] is None:
        return ""
    return (
        "<h2>Burst and sustained</h2>\n"
        + regimes_section(m)
        + "\n<h2>Where the time goes, per operator</h2>\n"
        + operators_section(m, operators_svg)
        + "\n"
    )


def floors_section(m: dict[str, Any]) -> str:
    floors = m["floors"]
    if not floors:
        return ""
    rows = [[escape(FLOOR_LABELS.get(k, k)), _s(v)] for k, v in floors.items()]
    return fold(
        f"Kernel floors ({len(rows)}), each named for what it measures",
        _table(["floor", "CALIBRATED"], rows, numeric=(1,)),
    )
