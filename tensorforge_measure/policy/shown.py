"""How commands run and show POLICY plugins' verdicts beside their own: the command's own
policy from the registry (its failure is the command's error, in one line), every other policy
that applies (each failure one warning line), and the verdicts as a table or JSON."""

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tensorforge.api import TensorForgeError, table
from tensorforge_measure.api import NO_VERDICT, PolicyRequest, Verdict
from tensorforge_measure.policy.apply import decide, decide_all, for_command


def own_verdicts(ops, name: str, request: PolicyRequest) -> list[Verdict]:
    """The verdicts of the command's own policy (looked up like any plugin's)."""
    if name not in ops.names("policies"):
        raise TensorForgeError(
            f"policy {name!r} is not installed: the tensorforge distribution registers it "
            "through its 'policies' entry point (disabled with --disable-plugins, or an "
            "install older than this checkout: pip install -e .)" + ops.broken_hint()
        )
    problems: list[str] = []
    verdicts = decide(ops.policy(name), request, problems.append)
    if problems:
        raise TensorForgeError(problems[0].removeprefix("warning: "))
    return verdicts


def other_verdicts(ops, request: PolicyRequest, own: str, warn: Callable[[str], None]) -> list[Verdict]:
    return decide_all(for_command(ops.values("policies"), request.command, request, skip=(own,)), request, warn)


def as_data(verdicts: Sequence[Verdict]) -> list[dict[str, Any]]:
    """JSON-ready verdicts (a policy's own typed record stays with the policy)."""
    return [attrs.asdict(v, filter=lambda attribute, _: attribute.name != "record") for v in verdicts]


def as_text(ops, verdicts: Sequence[Verdict]) -> list[str]:
    """One table per policy, headed by its name and description."""
    lines: list[str] = []
    for name in sorted({v.policy for v in verdicts}):
        mine = [v for v in verdicts if v.policy == name]
        description = getattr(ops.policy(name), "description", "") if name in ops.names("policies") else ""
        lines.append(f"POLICY  {name}" + (f": {description}" if description else ""))
        lines.append(
            table(
                ["subject", "verdict", "why", "evidence"],
                [[v.subject or "-", v.verdict, v.reason, "; ".join(v.evidence) or "-"] for v in mine],
            )
        )
    return lines


def counts(verdicts: Sequence[Verdict]) -> str:
    """Per policy, how many of each verdict it gave ('energy-gate 9 PASS, 1 NO VERDICT; ...'): the
    summary line counts every policy's verdicts by name, so a count is never read as another's."""
    out = []
    for name in sorted({v.policy for v in verdicts}):
        mine = [v.verdict for v in verdicts if v.policy == name]
        out.append(f"{name} " + ", ".join(f"{mine.count(k)} {k}" for k in sorted(set(mine), key=mine.index)))
    return "; ".join(out)


def exit_status(status: int, verdicts: Sequence[Verdict], failing: int, no_verdict: int, ok: int) -> tuple[int, str]:
    """The command's exit status once other policies' verdicts count too: any failing verdict
    fails; any NO VERDICT turns a pass into no verdict."""
    failed = sorted({v.policy for v in verdicts if v.fails})
    if failed:
        return failing, f"failing verdicts of {', '.join(failed)}"
    undecided = sorted({v.policy for v in verdicts if v.verdict == NO_VERDICT})
    if status == ok and undecided:
        return no_verdict, f"no verdict from {', '.join(undecided)}"
    return status, ""
