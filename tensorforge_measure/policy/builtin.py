"""The built-in policies — the regression gate and right-sizing — registered through
`tensorforge_measure_register_policies` (entry point 'policies' of the 'tensorforge_measure' group),
exactly as a stranger's policy would be. `gate` and `rightsize` find them by name in the
registry; disabling this plugin leaves those commands saying so in one line."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from tensorforge_measure.api import NO_VERDICT, Policy, PolicyRequest, Verdict
from tensorforge_measure.hookspecs import hookimpl

if TYPE_CHECKING:
    from tensorforge.api import Target
    from tensorforge_measure.policy.rightsize import Cell, Objective

GATE, RIGHTSIZING, ENERGY_GATE = "regression-gate", "right-sizing", "energy-gate"


def _gate_verdicts(policy: str, records, request: PolicyRequest, samples: str) -> list[Verdict]:
    """One Verdict per workload record of a gate (latency or energy): the evidence is the
    MEASURED `samples` of that workload in both captures, and none behind a NO VERDICT."""
    from tensorforge_measure.policy.gate import REGRESSION

    roles = (f"baseline {request.baseline.path}", f"candidate {request.candidate.path}")
    return [
        Verdict(
            policy,
            v.workload,
            v.verdict,
            v.reason,
            evidence=()
            if v.verdict == NO_VERDICT
            else tuple(f"MEASURED {samples} of {v.workload} in the {role}" for role in roles),
            fails=v.verdict == REGRESSION,
            record=v,
        )
        for v in records
    ]


class RegressionGate(Policy):
    """PASS / REGRESSION / IMPROVEMENT / NO VERDICT per workload, from the raw samples of two
    captures of the same device and flags (policy/gate.py, docs/policy.md)."""

    name = GATE
    description = (
        "per workload PASS, REGRESSION, IMPROVEMENT or NO VERDICT: Mann-Whitney U and a "
        "bootstrap interval on the ratio of medians, beyond a minimum effect"
    )
    requires = ("baseline", "candidate")
    commands = ("gate", "report")

    def decide(self, request: PolicyRequest) -> list[Verdict]:
        from tensorforge_measure.policy.gate import GateSettings, workload_verdicts

        settings = request.settings.get(GATE) or GateSettings()
        records = workload_verdicts(request.baseline, request.candidate, settings)
        return _gate_verdicts(GATE, records, request, "raw samples")


class EnergyGate(Policy):
    """PASS / REGRESSION / IMPROVEMENT / NO VERDICT per workload on joules per execution, with the
    latency gate's evidence rules (policy/energy_gate.py, docs/energy.md)."""

    name = ENERGY_GATE
    description = (
        "per workload PASS, REGRESSION, IMPROVEMENT or NO VERDICT on MEASURED joules per execution "
        "(the energy windows' per-update samples), with the latency gate's evidence rules"
    )
    requires = ("baseline", "candidate")
    commands = ("gate",)

    def decide(self, request: PolicyRequest) -> list[Verdict]:
        from tensorforge_measure.policy.energy_gate import energy_verdicts
        from tensorforge_measure.policy.gate import GateSettings

        # opt-in (`gate --energy`): captures before energy windows would otherwise turn every
        # PASS into NO VERDICT
        if not request.settings.get(ENERGY_GATE):
            return []
        settings = request.settings.get(GATE) or GateSettings()
        records = energy_verdicts(request.baseline, request.candidate, settings)
        return _gate_verdicts(ENERGY_GATE, records, request, "energy samples")


@attrs.frozen
class Question:
    """What `rightsize` asks: these workloads, these targets, this objective, these prices."""

    workloads: tuple[Any, ...]  # (Workload, WorkloadKind) as tensorforge.api.resolve gives them
    targets: "tuple[Target, ...]"
    objective: "Objective"
    prices: tuple[tuple[str, float], ...] = ()
    energy: Any = None  # rightsize.EnergyTerms: a price per kWh and a joules-per-request objective


class RightSizing(Policy):
    """MEETS / RULED OUT / UNKNOWN per target for a latency or throughput objective
    (policy/rightsize.py): ruled out on analytical evidence or a measurement, MEETS only where a
    capture measured it."""

    name = RIGHTSIZING
    description = (
        "which targets meet a latency or throughput objective: RULED OUT on a PREDICTED "
        "lower bound or a measurement, MEETS only where a capture measured it"
    )
    requires = ()
    commands = ("rightsize",)

    def decide(self, request: PolicyRequest) -> list[Verdict]:
        from tensorforge_measure.policy.rightsize import MEETS, RULED_OUT, rightsize

        question: Question | None = request.settings.get(RIGHTSIZING)
        if question is None:
            return [Verdict(RIGHTSIZING, "", NO_VERDICT, "no verdict: no objective given")]
        results = rightsize(
            question.workloads,
            question.targets,
            request.core.mappings(),
            question.objective,
            request.captures,
            dict(question.prices),
            question.energy,
        )
        return [
            Verdict(RIGHTSIZING, r.target, r.verdict, r.reason, evidence=_evidence(r.cells), record=r)
            if r.verdict in (MEETS, RULED_OUT)
            else Verdict(RIGHTSIZING, r.target, NO_VERDICT, r.reason, record=r)
            for r in results
        ]


def _evidence(cells: "Sequence[Cell]") -> tuple[str, ...]:
    out = []
    for c in cells:
        if c.measured_p50_s is not None:
            out.append(f"MEASURED p50 of {c.workload} in {c.evidence}")
            if c.measured_j is not None:
                out.append(f"MEASURED joules per execution of {c.workload} in {c.evidence}")
        else:
            out.append(f"PREDICTED lower bound of {c.workload} on {c.target}")
    return tuple(out)


@hookimpl
def tensorforge_measure_register_policies(register):
    register(RegressionGate())
    register(RightSizing())
    register(EnergyGate())
