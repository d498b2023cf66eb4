"""The report's estimate section: per workload the expected time beside the bound and the
measurement, with the terms that explain most of the gap, and the per-class evaluation
(tensorforge_measure/compare/evaluation.py) where the capture can be scored."""

from typing import Any

from tensorforge.api import TERM_LABELS as SHORT
from tensorforge.api import TensorForgeError, one_line, percent, seconds


def estimate_facts(doc: dict[str, Any], core=None) -> dict[str, Any] | None:
    pred = doc["predicted"].get("calibrated") or doc["predicted"]["analytical"]
    if not any(w.get("estimate") for w in pred.get("workloads", [])):
        return None
    comparison = (doc.get("comparison") or {}).get("workloads", {})
    rows: list[dict[str, Any]] = []
    for w in pred["workloads"]:
        est = w.get("estimate")
        if not est:
            continue
        c = comparison.get(w["name"], {})
        terms = sorted(((v, k) for k, v in (est.get("terms") or {}).items() if v > 0), reverse=True)[:2]
        rows.append(
            {
                "name": w["name"],
                "bound_s": w["latency_s"],
                "device_s": est["device_s"],
                "eager_s": est["eager_s"],
                "kernels": est["kernels"],
                "measured_p50_s": c.get("measured_p50_s"),
                "ape_estimate": c.get("ape_estimate"),
                "top_terms": [SHORT.get(k, k) for v, k in terms],
            }
        )
    evaluation, reason = None, None
    try:
        from tensorforge.api import PluginHost
        from tensorforge.api import evaluate_estimates as evaluate
        from tensorforge_measure.compare.evaluation import rows_from_capture, score_rows

        scored, _ = rows_from_capture(doc, core or PluginHost())
        ev = evaluate(scored)
        evaluation = {
            "classes": score_rows(ev.classes),
            "families": score_rows(ev.families + ([ev.overall] if ev.overall else [])),
        }
    except TensorForgeError as exc:
        reason = str(exc)
    except Exception as exc:  # the section is context; a broken plugin must not cost the report
        reason = one_line(exc)
    return {
        "basis": pred.get("estimate_basis"),
        "basis_kind": pred.get("estimate_basis_kind"),
        "rows": rows,
        "evaluation": evaluation,
        "evaluation_absent": reason,
    }


def markdown_lines(e: dict[str, Any]) -> list[str]:
    from tensorforge_measure.compare.evaluation import HEADERS

    out = [
        "",
        "## The estimate beside the bound",
        "",
        f"Expected time, not a bound ({e['basis_kind']}): {e['basis']}.",
        "",
        "| workload | lower bound | ESTIMATE device | ESTIMATE eager | kernels | MEASURED p50 | APE estimate "
        "| largest terms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in e["rows"]:
        out.append(
            f"| {r['name']} | {seconds(r['bound_s'])} | {seconds(r['device_s'])} | {seconds(r['eager_s'])} | "
            f"{r['kernels']} | {seconds(r['measured_p50_s']) if r['measured_p50_s'] else '-'} | "
            f"{percent(r['ape_estimate'])} | {', '.join(r['top_terms']) or '-'} |"
        )
    if e["evaluation"]:
        out += [
            "",
            "Per class (`tensorforge evaluate`):",
            "",
            "| " + " | ".join(HEADERS) + " |",
            "|" + "---|" * len(HEADERS),
        ]
        out += ["| " + " | ".join(row) + " |" for row in e["evaluation"]["classes"] + e["evaluation"]["families"]]
    elif e["evaluation_absent"]:
        out += ["", f"No per-class evaluation: {e['evaluation_absent']}"]
    return out
