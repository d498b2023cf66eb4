"""Plots for the report, drawn with matplotlib and returned as inline SVG text (one
self-contained file, no CDN). Text stays text in the SVG, so the numbers remain searchable."""

import io
import re
from typing import Any

from tensorforge_measure.report.plot_labels import place_labels

MODE_COLOURS = {
    "bf16": "#1f77b4",
    "fp16": "#2ca02c",
    "tf32": "#9467bd",
    "fp32": "#d62728",
    "fp16_acc16": "#17becf",
    "fp8": "#8c564b",
    "int8": "#7f7f7f",
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update(
        {"svg.fonttype": "none", "svg.hashsalt": "tensorforge", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3}
    )
    import matplotlib.pyplot as plt

    return plt


def _svg(fig, prefix: str) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog: the SVG is inlined into HTML
    # matplotlib numbers its element ids per figure (line2d_1, ...); two figures inlined in one
    # page would repeat them, so every id and every reference to one gets the figure's prefix.
    text = re.sub(r'\bid="', f'id="{prefix}-', text)
    text = re.sub(r"url\(#", f"url(#{prefix}-", text)
    return re.sub(r'href="#', f'href="#{prefix}-', text)


def numbers(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Each workload's number in the plots: its place in the report's workload table."""
    return {r["name"]: i for i, r in enumerate(rows, 1)}


def _legend_below(ax, columns: int = 2) -> None:
    """The legend under the axes, where it can cover neither points nor their labels."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=columns, fontsize=7, frameon=False)


def predicted_vs_measured(rows: list[dict[str, Any]]) -> str | None:
    """Log-log: measured p50 (x) against the calibrated and analytical bounds (y). A lower bound
    belongs on or below the diagonal; above it is a bound violation."""
    points = [r for r in rows if r["measured_p50_s"]]
    if not points:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 4.6))
    xs = [r["measured_p50_s"] for r in points]
    lo, hi = min(xs + [r["analytical_s"] for r in points]) / 3, max(xs) * 3
    ax.fill_between([lo, hi], [lo, hi], [hi, hi], color="#d62728", alpha=0.06, label="bound > measured (violation)")
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, label="bound = measured")
    ax.scatter(
        xs,
        [r["analytical_s"] for r in points],
        facecolors="none",
        edgecolors="#555555",
        label="PREDICTED analytical bound",
    )
    cal = [r for r in points if r["calibrated_s"]]
    if cal:
        ax.scatter(
            [r["measured_p50_s"] for r in cal],
            [r["calibrated_s"] for r in cal],
            color="#1f77b4",
            label="calibrated lower bound",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("MEASURED p50 (s)")
    ax.set_ylabel("predicted lower bound (s)")
    ax.set_title("Predicted lower bound vs measured p50")
    _legend_below(ax)
    number = numbers(rows)
    place_labels(
        ax,
        [(r["measured_p50_s"], r["calibrated_s"] or r["analytical_s"], str(number[r["name"]])) for r in points],
        avoid=[(r["measured_p50_s"], r["analytical_s"]) for r in points],
    )
    svg = _svg(fig, "pvm")
    plt.close(fig)
    return svg


def roofline(rows: list[dict[str, Any]], ceilings: list[dict[str, Any]]) -> str | None:
    """Roofs from the calibrated ceilings (dashed: datasheet), each workload placed at its
    compulsory arithmetic intensity and achieved FLOP/s (measured) or bound FLOP/s (predicted)."""
    compute = {c["what"].split()[-1]: c for c in ceilings if c["what"].startswith("compute ")}
    memory = next(c for c in ceilings if c["what"].startswith("memory"))
    placed = [r for r in rows if r["intensity"]]
    if not placed:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 4.6))
    intensities = [r["intensity"] for r in placed]
    x_lo, x_hi = min(intensities) / 4, max(intensities) * 4
    grid = [x_lo * (x_hi / x_lo) ** (i / 200) for i in range(201)]
    for source, style in (("calibrated", "-"), ("datasheet", "--")):
        bandwidth = memory[source]
        if not bandwidth:
            continue
        for mode, c in sorted(compute.items()):
            peak = c[source]
            if not peak or mode not in {r["math_mode"] for r in placed} | {"fp32"}:
                continue
            ax.plot(
                grid,
                [min(peak, bandwidth * x) for x in grid],
                style,
                linewidth=1,
                color=MODE_COLOURS.get(mode, "#333333"),
                alpha=0.9 if source == "calibrated" else 0.45,
                label=f"{source} {mode} roof",
            )
    labels = []
    number = numbers(rows)
    for r in placed:
        measured = r["achieved_flops_per_s"]
        y = measured or r["flops"] / (r["calibrated_s"] or r["analytical_s"])
        ax.scatter(
            [r["intensity"]],
            [y],
            color=MODE_COLOURS.get(r["math_mode"], "#333333"),
            marker="o" if measured else "x",
            zorder=3,
        )
        labels.append((r["intensity"], y, str(number[r["name"]])))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per compulsory byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title("Roofline: workloads at measured (o) or predicted (x) throughput")
    _legend_below(ax, columns=3)
    place_labels(ax, labels)
    svg = _svg(fig, "roof")
    plt.close(fig)
    return svg


def operator_bars(rows: list[dict[str, Any]], workload: str) -> str | None:
    """Per Core operator of one workload: its calibrated lower bound and its measured trace time
    side by side (log scale), in execution order. A measured bar shorter than its bound is a
    bound violation."""
    shown = [r for r in rows if r["measured_s"] or r["predicted_calibrated_s"]]
    if not shown:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 0.32 * len(shown) + 1.3))
    ys = list(range(len(shown)))[::-1]
    bound = [r["predicted_calibrated_s"] or 0 for r in shown]
    measured = [r["measured_s"] or 0 for r in shown]
    ax.barh([y + 0.2 for y in ys], bound, height=0.38, color="#8250df", label="CALIBRATED lower bound")
    ax.barh([y - 0.2 for y in ys], measured, height=0.38, color="#1a7f37", label="MEASURED (trace, p50)")
    ax.set_yticks(ys)
    ax.set_yticklabels([f"{r['operator']} x{r['count']}" for r in shown])
    ax.set_xscale("log")
    ax.set_xlabel("seconds per call of the workload (all executions of the operator)")
    ax.set_title(f"Where the time goes: {workload}")
    ax.legend(loc="lower right", fontsize=7)
    svg = _svg(fig, "ops")
    plt.close(fig)
    return svg
