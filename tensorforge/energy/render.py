"""PREDICTED energy for people: a cell of `predict`'s table (the estimate of one execution) and
one line per workload under --detail (floor and estimates, per execution and per token)."""

from tensorforge.energy.predicted import PredictedEnergy, WorkloadEnergyFigures, window_of

ENERGY_HEADER = "ESTIMATE energy"


def joules(value: float | None) -> str:
    """Joules with an SI prefix, milli and micro included ('412 mJ'); '-' for none."""
    if value is None:
        return "-"
    for scale, unit in ((1e6, "MJ"), (1e3, "kJ"), (1, "J"), (1e-3, "mJ"), (1e-6, "uJ")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} nJ"


def energy_cell(energy: PredictedEnergy, name: str, protocol: str | None) -> str:
    """The estimate of one execution in the window of the shown protocol (graph by default)."""
    figures = energy.workloads.get(name)
    return joules(figures.estimate_j(window_of(protocol))) if figures is not None else "-"


def energy_line(f: WorkloadEnergyFigures) -> str:
    devices = f" ({f.devices} devices)" if f.devices > 1 else ""
    text = (
        f"energy{devices}: floor {joules(f.floor_j)}, ESTIMATE {joules(f.graph_estimate_j)} graph, "
        f"{joules(f.eager_estimate_j)} eager per execution"
    )
    if f.tokens:
        text += (
            f"; per token (of {f.tokens}): floor {joules(f.floor_j_per_token)}, "
            f"ESTIMATE {joules(f.graph_estimate_j_per_token)} graph"
        )
    if f.uncalibrated_modes:
        text += f"; no J/FLOP for {', '.join(f.uncalibrated_modes)}"
    return text
