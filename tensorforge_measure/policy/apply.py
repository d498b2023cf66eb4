"""Running POLICY plugins for a command: which policies apply, whether their evidence exists,
and each one's verdicts — a policy that raises or returns something else costs its verdicts
and one warning line, never the command.

Why the evidence check lives here and not in each policy: a verdict exists only with its
evidence, so a policy is not even asked when what it declared it needs (a baseline, a labelled
section that holds evidence) is absent; the command shows NO VERDICT with what is missing.
"""

from collections.abc import Callable, Sequence

from tensorforge.api import one_line
from tensorforge_measure.api import NO_VERDICT, Policy, PolicyRequest, Verdict

SECTIONS = {"MEASURED": "measured", "CALIBRATED": "calibrated", "DIAGNOSTIC": "diagnostic"}


def missing_evidence(policy: Policy, request: PolicyRequest) -> str | None:
    """What of the policy's declared evidence this request lacks, or None."""
    for need in policy.requires:
        if need in ("candidate", "baseline") and getattr(request, need) is None:
            return f"needs a {need} capture"
        if need == "captures" and not request.captures:
            return "needs captures with measurements (--capture)"
    for label, section in SECTIONS.items():
        if label not in policy.requires:
            continue
        for role in ("baseline", "candidate"):
            evidence = getattr(request, role)
            if evidence is not None and not getattr(evidence.capture, section).available:
                return f"needs {label} in the {role} ({getattr(evidence.capture, section).reason})"
    return None


def for_command(
    policies: Sequence[Policy], command: str, request: PolicyRequest, skip: Sequence[str] = ()
) -> list[Policy]:
    """The policies this command runs, by name; `report` leaves out those that need a baseline
    when none was given (the user did not ask for a comparison)."""
    chosen = []
    for policy in sorted(policies, key=lambda p: p.name):
        if command not in policy.commands or policy.name in skip:
            continue
        if command == "report" and "baseline" in policy.requires and request.baseline is None:
            continue
        chosen.append(policy)
    return chosen


def decide(policy: Policy, request: PolicyRequest, warn: Callable[[str], None]) -> list[Verdict]:
    """The policy's verdicts, NO VERDICT for missing evidence, or [] and one warning line when
    the policy fails."""
    missing = missing_evidence(policy, request)
    if missing:
        return [Verdict(policy.name, "", NO_VERDICT, f"no verdict: {missing}")]
    try:
        verdicts = list(policy.decide(request))
    except Exception as exc:  # a broken policy must not take the command (or the others) down
        warn(f"warning: policy {policy.name!r} failed, its verdicts are left out: {one_line(exc)}")
        return []
    wrong = next((v for v in verdicts if not isinstance(v, Verdict) or v.policy != policy.name), None)
    if wrong is not None:
        what = f"a verdict of policy {wrong.policy!r}" if isinstance(wrong, Verdict) else type(wrong).__name__
        warn(
            f"warning: policy {policy.name!r} returned {what}, expected its own "
            "tensorforge_measure.api.Verdict objects; its verdicts are left out"
        )
        return []
    return verdicts


def decide_all(policies: Sequence[Policy], request: PolicyRequest, warn: Callable[[str], None]) -> list[Verdict]:
    return [v for policy in policies for v in decide(policy, request, warn)]
