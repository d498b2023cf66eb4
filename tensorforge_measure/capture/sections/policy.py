"""POLICY as recorded by `run`: the bound checks, each with the evidence it needed.

Other verdicts (regression gate, right-sizing, plugins' policies) are made when captures are
read, by `gate` and `report`: a verdict depends on the policy and its settings, not only on the
evidence, so the capture keeps the evidence and the policies decide later.
"""

from collections.abc import Mapping

import attrs

from tensorforge_measure.capture.fields import const, field, optional


@attrs.frozen(kw_only=True)
class RecordedBoundCheck:
    """One bound check and the evidence it needed."""

    verdict: str = field("'within bound', 'BOUND VIOLATION' or 'no verdict: <what is missing>'")
    evidence: tuple[str, ...] = field("the evidence this verdict needs")


@attrs.frozen(kw_only=True)
class PolicyRecord:
    """POLICY as the run recorded it: the bound checks."""

    label: str = const("POLICY", "the section's label")
    bound_checks: Mapping[str, RecordedBoundCheck] = field("per workload name: its bound check")
    note: str | None = optional("what kind of verdicts this section holds (absent if interrupted)")
