"""The estimate and the bound scored against a capture's measurements, per workload class
(tensorforge.estimate.classes): median and p90 APE of each, bound violations, and how much of
the gap between bound and measurement each term explains. `tensorforge evaluate` prints it;
the report's estimate section shows it.

Which numbers are compared: the calibrated prediction when the capture has one (else the
analytical, and only when the measuring device is the predicted target); the measurement's
device-time p50 against the device-time estimate where the capture has one, the eager p50
against the eager estimate otherwise. Each row says which.
"""

from typing import Any

from tensorforge.api import (
    PLAIN,
    Evaluation,
    Screen,
    Row,
    TensorForgeError,
    parse_fields,
    percent,
    seconds,
    workload_class,
)


def measured_time(m: dict[str, Any]) -> tuple[float, str, float] | None:
    """(p50, mode, rel. IQR) of one measured workload in the regime the estimate is calibrated
    in (burst, or a one-regime device's single regime): device time (CUDA-graph replay) where
    recorded, else the eager p50. Captures from before the measurement phases hold one burst
    eager timing."""
    if not m or m.get("status") != "ok":
        return None
    timings = [
        {**t, "regime": t.get("regime") or "burst", "mode": t.get("mode") or "eager"}
        for t in [m, *(m.get("modes") or [])]
    ]
    for mode in ("graph", "eager"):
        for t in timings:
            stats = t.get("stats") or {}
            if t["regime"] in ("burst", "single") and t["mode"] == mode and stats.get("p50"):
                return float(stats["p50"]), mode, float(stats.get("rel_iqr") or 0.0)
    return None


def _params(core, spec: str):
    kind_name, _, rest = spec.partition(":")
    fields = {k: v for k, v in parse_fields(rest, spec).items() if k != "config"}
    kind = core.workload_kind(kind_name)
    return kind, kind.parse(fields)


def rows_from_capture(doc: dict[str, Any], core) -> tuple[list[Row], str]:
    pred = doc.get("predicted") or {}
    comparison = doc.get("comparison") or {}
    chosen = pred.get("calibrated")
    which = "calibrated"
    if not chosen:
        if not comparison.get("same_device"):
            raise TensorForgeError(
                "capture has no calibrated prediction and was not measured on its target: nothing to score"
            )
        chosen, which = pred.get("analytical") or {}, "analytical"
    measured = (doc.get("measured") or {}).get("workloads") or {}
    rows = []
    for w in chosen.get("workloads", []):
        est = w.get("estimate")
        timed = measured_time(measured.get(w["name"]) or {})
        if not est or not timed:
            continue
        seconds_, regime, rel_iqr = timed
        kind, params = _params(core, w["spec"])
        terms = dict(est.get("terms") or {})
        if regime != "eager":
            terms.pop("host_overhead", None)
        rows.append(
            Row(
                name=w["name"],
                klass=workload_class(kind, params),
                regime=regime,
                measured_s=seconds_,
                bound_s=float(w["latency_s"]),
                estimate_s=float(est["eager_s"] if regime == "eager" else est["device_s"]),
                terms=terms,
                tolerance=max(0.02, rel_iqr),
            )
        )
    if not rows:
        raise TensorForgeError("capture has no workload with both a measurement and an estimate")
    basis = chosen.get("estimate_basis") or "no estimate basis recorded"
    return rows, f"{which} bound; estimate basis: {basis}"


def shares_cell(shares: dict[str, float], top: int = 3) -> str:
    """How the gap between bound and measurement divides among the terms: the largest `top`,
    the rest as one, and what no term explains, each signed, summing to 100%. A negative
    'unexplained' is the estimate overshooting the measurement: its terms add up to more than
    the gap, so one term alone may exceed 100%."""
    if not shares:
        return "-"
    terms = sorted(((v, k) for k, v in shares.items() if k != "unexplained"), reverse=True)
    parts = [f"{k.replace('_', ' ')} {_signed(v)}" for v, k in terms[:top]]
    rest = terms[top:]
    if rest:
        parts.append(f"{len(rest)} other{'s' if len(rest) > 1 else ''} {_signed(sum(v for v, _ in rest))}")
    text = ", ".join(parts)
    if "unexplained" in shares:
        left = shares["unexplained"]
        text += f"; unexplained {_signed(left)}" + (" (the estimate overshoots)" if left < 0 else "")
    return text


def _signed(share: float) -> str:
    return f"{share * 100:+.1f}%"


def score_rows(scores) -> list[list[str]]:
    out = []
    for s in scores:
        out.append(
            [
                s.name,
                str(s.n),
                percent(s.bound_median),
                percent(s.bound_p90),
                percent(s.estimate_median),
                percent(s.estimate_p90),
                str(s.violations),
                str(s.estimate_below_bound),
                shares_cell(s.term_shares),
            ]
        )
    return out


HEADERS = [
    "class",
    "n",
    "bound APE med",
    "bound p90",
    "ESTIMATE APE med",
    "estimate p90",
    "bound violations",
    "estimate < bound",
    "share of the gap (signed, sums to 100%)",
]


def share_lines(scores, screen: Screen) -> list[str]:
    """Under a table of classes: each class's division of the gap, a line (wrapped) each; in
    a column it would make every row of the table several lines tall."""
    lines = [screen.wrap("share of the gap (measured - bound) by estimate term, signed, each line summing to 100%:")]
    return lines + [screen.wrap(f"  {s.name}: {shares_cell(s.term_shares)}", "      ") for s in scores]


def evaluation_text(ev: Evaluation, source: str, show_rows: bool = False, screen: Screen = PLAIN) -> str:
    """The evaluation for people: PLAIN (full columns) for a file or a pipe, fitted on `screen`."""
    lines = [
        screen.wrap(f"EVALUATION  {source}"),
        screen.wrap(
            "APE = |predicted - measured p50| / measured p50; the bound is a lower bound, the estimate the expected time"
        ),
        "",
    ]
    families = ev.families + ([ev.overall] if ev.overall else [])
    for scores in (ev.classes, families):
        rows = [row[:-1] for row in score_rows(scores)]  # the shares follow the table
        lines += [screen.table(HEADERS[:-1], rows), *share_lines(scores, screen), ""]
    regimes = sorted({r.regime for r in ev.rows})
    lines.append(
        screen.wrap(
            f"measured regime: {', '.join(regimes)} (eager p50 vs eager estimate; graph p50 vs device estimate)"
        )
    )
    if show_rows:
        lines.append("")
        lines.append(
            screen.table(
                ["workload", "class", "regime", "MEASURED p50", "bound", "ESTIMATE", "APE bound", "APE estimate"],
                [
                    [
                        r.name,
                        r.klass,
                        r.regime,
                        seconds(r.measured_s),
                        seconds(r.bound_s),
                        seconds(r.estimate_s),
                        percent(r.ape_bound),
                        percent(r.ape_estimate),
                    ]
                    for r in ev.rows
                ],
                optional=("class",),
            )
        )
    return "\n".join(lines) + "\n"
