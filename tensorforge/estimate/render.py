"""The estimate in plain text: its own columns and labels, never confusable with the bound, and
with --detail a waterfall from the bound through every named term."""

from tensorforge.cli.units import percent, seconds
from tensorforge.estimate.results import TERMS

SHORT = {
    "tile_wave_quantization": "tile/wave quantization",
    "compute_efficiency": "compute efficiency",
    "achieved_bandwidth": "achieved bandwidth",
    "alignment_padding": "alignment & padding",
    "power_limit": "power limit",
    "kernel_launches": "kernel launches",
    "timing_harness": "timing harness",
    "host_overhead": "host overhead (eager only)",
}


def basis_line(pred) -> str:
    return f"ESTIMATE   expected time, NOT a bound ({pred.estimate_basis_kind}): {pred.estimate_basis}"


def waterfall_lines(w) -> list[str]:
    e = w.estimate
    lines = [f"  waterfall: lower bound {seconds(e.bound_s)}"]
    running = e.bound_s
    gap = max(e.eager_s - e.bound_s, 1e-30)
    for name in TERMS:
        value = e.terms.get(name, 0.0)
        if name == "host_overhead":
            lines.append(f"    = estimate (device) {seconds(e.device_s)}")
        if value <= 0:
            continue
        running += value
        lines.append(f"    + {SHORT[name]:27s} {seconds(value):>10s}  ({percent(value / gap)} of the gap)")
    lines.append(f"    = estimate (eager)  {seconds(e.eager_s)}  ({e.kernels} kernels)")
    return lines


def operator_rows(w) -> list[list[str]]:
    rows = []
    for o in w.estimate.operators:
        top = max(o.terms.items(), key=lambda kv: kv[1]) if o.terms else ("-", 0.0)
        rows.append(
            [
                o.name,
                str(o.count),
                str(o.kernels),
                o.mapping,
                seconds(o.bound_s),
                seconds(o.estimate_s),
                f"{SHORT.get(top[0], top[0])}" if top[1] > 0 else "-",
            ]
        )
    return rows


OPERATOR_HEADERS = ["operator", "x", "kernels", "realistic mapping (estimate)", "bound", "estimate", "largest term"]
