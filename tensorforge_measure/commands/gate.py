"""`tensorforge gate`: the regression gate, a POLICY command comparing two captures."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import attrs
import click

from tensorforge.api import (
    FiniteFloat,
    PluginHost,
    Screen,
    canonical_json,
    detect,
    json_option,
    pass_host,
    seconds,
    wide_option,
)
from tensorforge_measure import host as hosts
from tensorforge_measure.capture.trust import trust_options

if TYPE_CHECKING:
    from tensorforge_measure.api import Verdict
    from tensorforge_measure.host import OpsHost
    from tensorforge_measure.policy.evidence import Evidence
    from tensorforge_measure.policy.gate import GateResult, GateSettings


@click.command()
@click.argument("baseline", type=click.Path(dir_okay=False))
@click.argument("candidate", type=click.Path(dir_okay=False))
@click.option(
    "--threshold",
    type=FiniteFloat(0, 10, min_open=True),
    default=0.05,
    show_default=True,
    help="Minimum effect: relative change of the median that counts.",
)
@click.option(
    "--alpha",
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    default=0.01,
    show_default=True,
    help="Significance level of the Mann-Whitney U test.",
)
@click.option(
    "--max-spread",
    type=FiniteFloat(0, 10, min_open=True),
    default=0.10,
    show_default=True,
    help="Relative IQR above which a measurement is too noisy to judge.",
)
@click.option(
    "--min-samples",
    type=click.IntRange(3),
    default=10,
    show_default=True,
    help="Fewest raw samples each capture needs for a workload to be judged (fewer: NO VERDICT).",
)
@click.option("--no-verdict-ok", is_flag=True, help="Exit 0 instead of 3 when some workloads have no verdict.")
@click.option(
    "--aa",
    "aa_pair",
    nargs=2,
    type=click.Path(dir_okay=False),
    default=None,
    metavar="A B",
    help="Two captures of unchanged code on this device (an A/A pair): the run-to-run movement their "
    "medians show replaces the built-in model's (policy/between_runs.py) in the effect a verdict needs.",
)
@click.option(
    "--energy",
    "gate_energy",
    is_flag=True,
    help="Also gate joules per execution (the energy windows; same evidence rules): the energy-gate policy.",
)
@json_option("the result")
@wide_option
@trust_options
@pass_host
def gate(
    core: PluginHost,
    baseline: str,
    candidate: str,
    threshold: float,
    alpha: float,
    max_spread: float,
    min_samples: int,
    no_verdict_ok: bool,
    aa_pair: tuple[str, str] | None,
    gate_energy: bool,
    as_json: bool,
    wide: bool,
    trusted_keys: tuple[str, ...],
    trusted_key_files: tuple[str, ...],
    require_trusted: bool,
) -> None:
    """Compare two captures workload by workload: PASS, REGRESSION, IMPROVEMENT, or NO VERDICT
    with the missing evidence named.

    A change is called only when the Mann-Whitney U test and a bootstrap interval on the ratio
    of medians are both significant AND the median moved by at least --threshold, or, for a
    workload so short that it moves more than that between runs of unchanged code (a few us),
    by at least that movement at the same significance (the verdict says so).

    Exit status: 0 no regression (all decided), 1 at least one REGRESSION, 2 usage or input
    error (unreadable, tampered or other-schema capture), 3 no regression but at least one
    NO VERDICT (0 with --no-verdict-ok). With --require-trusted (or --trusted-key), a capture
    not signed by a trusted key is refused (exit 2); otherwise each capture's origin is shown.
    """
    from tensorforge_measure.api import PolicyRequest
    from tensorforge_measure.capture.trust import trust_from
    from tensorforge_measure.policy.builtin import ENERGY_GATE, GATE
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.policy.gate import (
        EXIT_NO_VERDICT,
        EXIT_OK,
        EXIT_REGRESSION,
        GateSettings,
    )
    from tensorforge_measure.policy.gate import (
        result as gate_result,
    )
    from tensorforge_measure.policy.shown import as_data, exit_status, other_verdicts, own_verdicts

    ops = hosts.ops_host(core)
    trust = trust_from(trusted_keys, trusted_key_files, require_trusted)
    base = load_evidence(baseline, "baseline", trust)
    cand = load_evidence(candidate, "candidate", trust)
    settings = GateSettings(threshold=threshold, alpha=alpha, max_spread=max_spread, min_samples=min_samples)
    if aa_pair:
        settings = _with_aa(settings, [load_evidence(path, "A/A capture", trust) for path in aa_pair])
    request = PolicyRequest("gate", candidate=cand, baseline=base, settings={GATE: settings, ENERGY_GATE: gate_energy})
    result = gate_result(base, cand, settings, [v.record for v in own_verdicts(ops, GATE, request)])
    others = other_verdicts(ops, request, GATE, lambda line: click.echo(line, err=True))
    status, why = exit_status(result.exit_status, others, EXIT_REGRESSION, EXIT_NO_VERDICT, EXIT_OK)
    status = EXIT_OK if (no_verdict_ok and status == EXIT_NO_VERDICT) else status
    if as_json:
        data = attrs.asdict(result)
        if others:  # other installed policies' verdicts, beside the gate's own
            data["policies"] = as_data(others)
        click.echo(canonical_json(data), nl=False)
    else:
        _print_gate(detect(wide), ops, (baseline, candidate), (base, cand), settings, result, others, status, why)
    sys.exit(status)


def _with_aa(settings: GateSettings, pair: list[Evidence]) -> GateSettings:
    """The settings with the run effect an A/A pair of unchanged code shows (between_runs.fit_run_effect)."""
    import numpy as np

    from tensorforge.api import TensorForgeError
    from tensorforge_measure.policy.between_runs import fit_run_effect
    from tensorforge_measure.policy.gate import measured_rows

    a, b = (measured_rows(e) for e in pair)
    medians = [
        (float(np.median(a[n].samples_s)), float(np.median(b[n].samples_s)))
        for n in a
        if n in b and a[n].samples_s and b[n].samples_s
    ]
    if not medians:
        raise TensorForgeError("--aa: the two captures share no measured workload: no run-to-run movement to measure")
    jitter, relative = fit_run_effect(medians)
    return attrs.evolve(
        settings,
        run_jitter_s=min(jitter, 0.999),
        run_relative_sd=min(relative, 0.999),
        run_effect_source=f"the A/A pair {pair[0].path} and {pair[1].path} ({len(medians)} workloads)",
    )


def _print_gate(
    screen: Screen,
    ops: OpsHost,
    paths: tuple[str, str],
    sides: tuple[Evidence, Evidence],
    settings: GateSettings,
    result: GateResult,
    others: list[Verdict],
    status: int,
    why: str,
) -> None:
    """The gate's verdicts for people: the settings, each capture's origin, a row per workload,
    the other policies' verdicts, then the counts and the exit status."""
    from tensorforge_measure.policy.shown import as_text, counts

    (baseline, candidate), (base, cand) = paths, sides
    screen.echo(
        screen.wrap(
            f"POLICY  regression gate: baseline {baseline} ({result.baseline['device']}) "
            f"-> candidate {candidate} ({result.candidate['device']})",
            " " * 8,
        )
    )
    screen.echo(
        f"        effect threshold {settings.threshold * 100:g}%, alpha {settings.alpha:g}, max spread "
        f"{settings.max_spread * 100:g}%, min samples {settings.min_samples}"
    )
    screen.echo(
        screen.wrap(
            f"        effect widened for short workloads by their run-to-run movement "
            f"({seconds(settings.run_jitter_s)} + {settings.run_relative_sd * 100:.3g}% per run, "
            f"from {settings.run_effect_source})",
            " " * 10,
        )
    )
    for role, evidence in (("baseline", base), ("candidate", cand)):
        screen.echo(screen.wrap(f"        {role} origin: {evidence.origin_detail}", " " * 10))
    rows = [
        [
            v.workload,
            v.verdict,
            seconds(v.baseline_p50_s) if v.baseline_p50_s else "-",
            seconds(v.candidate_p50_s) if v.candidate_p50_s else "-",
            f"{(v.ratio - 1) * 100:+.1f}%" if v.ratio else "-",
            v.reason,
        ]
        for v in result.verdicts
    ]
    screen.echo(screen.table(["workload", "verdict", "baseline p50", "candidate p50", "change", "why"], rows))
    for line in as_text(ops, others):
        screen.echo(screen.wrap(line))
    # the gate's own count first (it stands alone where no other policy applies), then each
    # other policy's counts by name (a reader saw "10 PASS; no verdict from energy-gate" as the
    # energy gate's count)
    others_count = counts(others)
    screen.echo(
        f"{result.summary}; {others_count + '; ' if others_count else ''}{why + '; ' if why else ''}exit {status}"
    )
