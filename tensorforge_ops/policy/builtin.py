"""The built-in policies — the regression gate and right-sizing — registered through
`tensorforge_ops_register_policies` (entry point 'policies' of the 'tensorforge_ops' group),
exactly as a stranger's policy would be. `gate` and `rightsize` find them by name in the
registry; disabling this plugin leaves those commands saying so in one line."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from ..api import NO_VERDICT, Policy, PolicyRequest, Verdict
from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from tensorforge.api import Target

    from .rightsize import Cell, Objective

GATE, RIGHTSIZING = "regression-gate", "right-sizing"


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
        from .gate import REGRESSION, GateSettings, workload_verdicts

        settings = request.settings.get(GATE) or GateSettings()
        roles = (f"baseline {request.baseline.path}", f"candidate {request.candidate.path}")
        return [
            Verdict(
                GATE,
                v.workload,
                v.verdict,
                v.reason,
                evidence=()
                if v.verdict == NO_VERDICT
                else tuple(f"MEASURED raw samples of {v.workload} in the {role}" for role in roles),
                fails=v.verdict == REGRESSION,
                record=v,
            )
            for v in workload_verdicts(request.baseline, request.candidate, settings)
        ]


@attrs.frozen
class Question:
    """What `rightsize` asks: these workloads, these targets, this objective, these prices."""

    workloads: tuple[Any, ...]  # (Workload, WorkloadKind) as tensorforge.api.resolve gives them
    targets: "tuple[Target, ...]"
    objective: "Objective"
    prices: tuple[tuple[str, float], ...] = ()


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
        from .rightsize import MEETS, RULED_OUT, rightsize

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
        else:
            out.append(f"PREDICTED lower bound of {c.workload} on {c.target}")
    return tuple(out)


@hookimpl
def tensorforge_ops_register_policies(register):
    register(RegressionGate())
    register(RightSizing())
