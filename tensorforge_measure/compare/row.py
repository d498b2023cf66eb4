"""One workload's whole comparison row — the primary comparison, every regime's, every
operator's — from what the capture holds. The run builds its rows with this function and
`verify` rebuilds them with it (capture/recompute.py), so a row either follows from PREDICTED,
MEASURED and DIAGNOSTIC or the capture does not verify.
"""

from __future__ import annotations

from typing import Any

import attrs

from tensorforge_measure.capture.sections.comparison import ComparisonRow
from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow
from tensorforge_measure.capture.sections.measured import WorkloadMeasurement
from tensorforge_measure.compare.energy import energy_row
from tensorforge_measure.compare.operators import operator_rows as rank_operator_rows
from tensorforge_measure.compare.regimes import operator_rows, regime_rows
from tensorforge_measure.compare.workload import compare_workload


def comparison_row(
    w: Any,
    cal: Any,
    sustained: Any,
    m: WorkloadMeasurement | None,
    same_device: bool,
    device_note: str | None,
    cal_note: str,
    sustained_note: str | None,
    window: TelemetryWindow | None,
    energy: Any = None,
) -> ComparisonRow:
    """`w`, `cal`, `sustained`: the workload's analytical, calibrated and sustained-regime
    predictions (the last two None when absent); `m` its measurement; `window` its telemetry."""
    row = compare_workload(w.name, w, cal, m, same_device, device_note, cal_note, window)
    bounds = {
        "burst": cal.latency_s if cal else None,
        "single": cal.latency_s if cal else None,
        "sustained": sustained.latency_s if sustained else None,
    }
    notes = {"burst": cal_note, "single": cal_note, "sustained": sustained_note}
    regimes = regime_rows(m, bounds, same_device, notes)
    burst = (regimes or {}).get("burst")
    # a window of several ranks (torch-distributed) where there is one, else the trace window
    per_operator = rank_operator_rows(w, cal, m, same_device) or operator_rows(
        w, cal, m, same_device, burst.graph_p50_s if burst else None
    )
    # `energy`: the workload's PREDICTED energy record (None without an energy calibration)
    return attrs.evolve(row, regimes=regimes, operators=per_operator, energy=energy_row(energy, m))


def violations(rows: dict[str, ComparisonRow]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(workloads, 'NAME (REGIME MODE)'s, 'NAME: OPERATOR's) whose measurement beat its
    calibrated bound: the primary p50, every regime and mode against its own regime's bound, and
    every operator against its own."""
    return (
        tuple(sorted(n for n, r in rows.items() if r.bound_check.verdict == "BOUND VIOLATION")),
        tuple(
            sorted(
                f"{n} ({regime} {x.mode})"
                for n, r in rows.items()
                for regime, x in (r.regimes or {}).items()
                if x.bound_check.verdict == "BOUND VIOLATION"
            )
        ),
        tuple(
            sorted(
                f"{n}: {op}" for n, r in rows.items() for op in ((r.operators.violations or ()) if r.operators else ())
            )
        ),
    )


def energy_floor_violations(rows: dict[str, ComparisonRow]) -> tuple[str, ...] | None:
    """Workloads whose measured joules per execution came in below their energy floor; None
    where no row has an energy comparison (captures without energy)."""
    if not any(r.energy for r in rows.values()):
        return None
    return tuple(sorted(n for n, r in rows.items() if r.energy and r.energy.floor_verdict == "FLOOR VIOLATION"))
