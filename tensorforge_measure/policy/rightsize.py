"""Right-sizing: which installed targets meet a service objective for these workloads?

RULED OUT needs only analytical evidence (the lower bound already misses the objective, or the
workload does not fit in the target's memory) or a capture measured on that device that misses
it. MEETS needs a capture measured on that device showing it. Everything else is UNKNOWN, with
what would settle it. Prices (optional) rank only the targets that MEET.
"""

from collections.abc import Sequence

import attrs

from tensorforge.api import TensorForgeError, finite_in, predict, seconds
from tensorforge_measure.capture.sections.measured import Measured, Measurement
from tensorforge_measure.policy.evidence import Evidence

MEETS, RULED_OUT, UNKNOWN = "MEETS", "RULED OUT", "UNKNOWN"


@attrs.frozen
class Objective:
    # 'latency' (seconds per execution, at most) or 'throughput' (executions/s, at least)
    kind: str = attrs.field(validator=attrs.validators.in_(("latency", "throughput")))
    # a NaN objective ruled every target out (nothing is <= NaN): finite and > 0, or refused
    value: float = attrs.field(validator=finite_in(0, low_open=True))

    def met_by(self, seconds: float) -> bool:
        if self.kind == "latency":
            return seconds <= self.value
        return seconds > 0 and 1.0 / seconds >= self.value

    def describe(self) -> str:
        if self.kind == "latency":
            return f"latency <= {self.value * 1e3:g} ms"
        return f"throughput >= {self.value:g} per second"


@attrs.frozen
class EnergyTerms:
    """What `rightsize` asks of energy: a price per kWh (for the cost per million requests) and
    an objective in joules per request (each workload's execution), either or both."""

    price_per_kwh: float | None = attrs.field(default=None, validator=attrs.validators.optional(finite_in(0)))
    max_joules: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(finite_in(0, low_open=True))
    )

    def describe(self) -> str:
        return f"energy <= {self.max_joules:g} J per request" if self.max_joules is not None else ""


@attrs.frozen
class Cell:
    target: str
    workload: str
    verdict: str
    reason: str
    lower_bound_s: float | None  # None: the target cannot run the workload at all
    measured_p50_s: float | None = None
    evidence: str | None = None
    measured_j: float | None = None  # MEASURED joules per execution (the energy window), where measured


@attrs.frozen
class TargetVerdict:
    target: str
    verdict: str
    reason: str
    cells: tuple[Cell, ...]
    price_per_hour: float | None = None
    cost_per_million: float | None = None  # executions of the whole workload set, at measured p50
    # joules of one request (every workload once) and what a million of them cost in energy,
    # where a capture measured the energy of every workload
    energy_j_per_request: float | None = None
    energy_cost_per_million: float | None = None
    cost_note: str | None = None  # what the cost includes, in words


def _same_workload(kind, params, spec: str) -> bool:
    """Whether a capture's recorded spec describes these params. Compared as parsed params, not
    as text, so a capture written before a change in how specs are spelled still counts."""
    head, _, rest = spec.partition(":")
    if head != kind.name:
        return False
    from tensorforge.api import TensorForgeError, parse_fields

    try:
        return kind.parse(parse_fields(rest, spec)) == params
    except TensorForgeError:  # a spec this version refuses is simply not this workload;
        return False  # anything else is a bug, and must not read as "unknown"


def _measured(captures: Sequence[Evidence], target, kind, params):
    """(p50 seconds, capture path, joules per execution or None) of this workload measured on
    this target's device."""
    for evidence in captures:
        measured = evidence.capture.measured
        if not isinstance(measured, Measured) or not target.matches_device(measured.device.name):
            continue
        specs = {w.name: w.spec for w in evidence.capture.predicted.analytical.workloads}
        for name, row in measured.workloads.items():
            if isinstance(row, Measurement) and _same_workload(kind, params, specs.get(name, "")):
                energy = row.energy.joules_per_execution if row.energy is not None and row.energy.available else None
                return row.stats.p50, evidence.path, energy
    return None, None, None


def _cell(target, workload_pred, kind, params, objective: Objective, captures, energy: EnergyTerms) -> Cell:
    bound = workload_pred.latency_s
    name = workload_pred.name
    if not workload_pred.fits_in_memory:
        return Cell(
            target.name,
            name,
            RULED_OUT,
            f"does not fit: needs {workload_pred.footprint_bytes / 2**30:.2f} GiB, "
            f"{target.name} has {target.dram_capacity_bytes / 2**30:.2f} GiB",
            bound,
        )
    if not objective.met_by(bound):
        return Cell(
            target.name,
            name,
            RULED_OUT,
            f"PREDICTED lower bound {seconds(bound)} already misses {objective.describe()}",
            bound,
        )
    p50, path, joules = _measured(captures, target, kind, params)
    if p50 is None:
        return Cell(
            target.name,
            name,
            UNKNOWN,
            f"PREDICTED lower bound {seconds(bound)} would allow it; no capture measures it on "
            f"{target.name}: run `tensorforge run --target {target.name} -w {workload_pred.spec}` there",
            bound,
        )
    if not objective.met_by(p50):
        return Cell(
            target.name,
            name,
            RULED_OUT,
            f"MEASURED p50 {seconds(p50)} misses {objective.describe()}",
            bound,
            p50,
            path,
            joules,
        )
    met = f"MEASURED p50 {seconds(p50)} meets {objective.describe()}"
    if energy.max_joules is not None:
        if joules is None:
            return Cell(
                target.name,
                name,
                UNKNOWN,
                f"{met}; no energy window in {path}: run it again with the energy counter to judge {energy.describe()}",
                bound,
                p50,
                path,
            )
        verdict = MEETS if joules <= energy.max_joules else RULED_OUT
        word = "meets" if verdict == MEETS else "misses"
        return Cell(
            target.name,
            name,
            verdict,
            f"{met}; MEASURED {joules:.4g} J per execution {word} {energy.describe()}",
            bound,
            p50,
            path,
            joules,
        )
    return Cell(target.name, name, MEETS, met, bound, p50, path, joules)


def _runnable_cell(target, workload, kind, mappings, objective: Objective, captures, energy: EnergyTerms) -> Cell:
    """The cell of one workload on one target; a workload the target cannot run at all (a math
    mode it declares no rate for, such as tf32 on a CPU) is RULED OUT there, saying why, instead
    of failing the whole command (the default suite holds a tf32 GEMM)."""
    try:
        predicted = predict([(workload, kind)], target, mappings).workloads[0]
    except TensorForgeError as exc:
        return Cell(target.name, workload.name, RULED_OUT, f"cannot run on {target.name}: {exc}", None)
    return _cell(target, predicted, kind, workload.params, objective, captures, energy)


def _costs(cells, price: float | None, energy: EnergyTerms):
    """(cost per million requests, energy J per request, energy cost per million, what the cost
    includes) of a target whose every cell was measured."""
    joules = [c.measured_j for c in cells]
    per_request = sum(j for j in joules if j is not None) if all(j is not None for j in joules) else None
    energy_cost = (
        energy.price_per_kwh * per_request / 3.6e6 * 1e6
        if per_request is not None and energy.price_per_kwh is not None
        else None
    )
    if price is None:
        return None, per_request, energy_cost, None
    cost = price / 3600.0 * sum(c.measured_p50_s or 0.0 for c in cells) * 1e6
    note = None  # no energy price: the cost is hardware time, as it always was
    if energy.price_per_kwh is None:
        pass
    elif energy_cost is None:
        missing = ", ".join(c.workload for c in cells if c.measured_j is None)
        note = f"hardware time only: no energy window measured {missing}"
    else:
        cost += energy_cost
        note = "hardware time at measured p50 + MEASURED energy at the given price"
    return cost, per_request, energy_cost, note


def rightsize(
    workloads,
    targets,
    mappings,
    objective: Objective,
    captures: Sequence[Evidence],
    prices: dict[str, float],
    energy: EnergyTerms | None = None,
) -> list[TargetVerdict]:
    energy = energy or EnergyTerms()
    results = []
    for target in targets:
        cells = tuple(
            _runnable_cell(target, workload, kind, mappings, objective, captures, energy)
            for workload, kind in workloads
        )
        if any(c.verdict == RULED_OUT for c in cells):
            first = next(c for c in cells if c.verdict == RULED_OUT)
            verdict, reason = RULED_OUT, f"{first.workload}: {first.reason}"
        elif all(c.verdict == MEETS for c in cells):
            verdict, reason = MEETS, "every workload measured on this device meets the objective"
        else:
            missing = [c.workload for c in cells if c.verdict == UNKNOWN]
            verdict, reason = UNKNOWN, f"no measurement on {target.name} for: {', '.join(missing)}"
        price = prices.get(target.name)
        cost = per_request = energy_cost = note = None
        if verdict == MEETS:  # MEETS: every cell was measured
            cost, per_request, energy_cost, note = _costs(cells, price, energy)
        results.append(TargetVerdict(target.name, verdict, reason, cells, price, cost, per_request, energy_cost, note))
    order = {MEETS: 0, UNKNOWN: 1, RULED_OUT: 2}
    return sorted(
        results,
        key=lambda r: (
            order[r.verdict],
            r.cost_per_million if r.cost_per_million is not None else float("inf"),
            r.target,
        ),
    )
