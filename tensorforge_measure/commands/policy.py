"""`tensorforge gate` and `rightsize`: POLICY commands reading captures."""

import sys

import attrs
import click

from tensorforge.api import (
    FiniteFloat,
    canonical_json,
    detect,
    json_option,
    pass_host,
    seconds,
    wide_option,
    workload_options,
)
from tensorforge_measure.capture.trust import trust_options


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
    core,
    baseline,
    candidate,
    threshold,
    alpha,
    max_spread,
    min_samples,
    no_verdict_ok,
    gate_energy,
    as_json,
    wide,
    trusted_keys,
    trusted_key_files,
    require_trusted,
):
    """Compare two captures workload by workload: PASS, REGRESSION, IMPROVEMENT, or NO VERDICT
    with the missing evidence named.

    A change is called only when the Mann-Whitney U test and a bootstrap interval on the ratio
    of medians are both significant AND the median moved by at least --threshold.

    Exit status: 0 no regression (all decided), 1 at least one REGRESSION, 2 usage or input
    error (unreadable, tampered or other-schema capture), 3 no regression but at least one
    NO VERDICT (0 with --no-verdict-ok). With --require-trusted (or --trusted-key), a capture
    not signed by a trusted key is refused (exit 2); otherwise each capture's origin is shown.
    """
    from tensorforge_measure.api import PolicyRequest
    from tensorforge_measure.capture.trust import trust_from
    from tensorforge_measure.core_plugin import ops_host
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
    from tensorforge_measure.policy.shown import as_data, as_text, counts, exit_status, other_verdicts, own_verdicts

    ops = ops_host(core)
    trust = trust_from(trusted_keys, trusted_key_files, require_trusted)
    base = load_evidence(baseline, "baseline", trust)
    cand = load_evidence(candidate, "candidate", trust)
    settings = GateSettings(threshold=threshold, alpha=alpha, max_spread=max_spread, min_samples=min_samples)
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
        screen = detect(wide)
        screen.echo(
            screen.wrap(
                f"POLICY  regression gate: baseline {baseline} ({result.baseline['device']}) "
                f"-> candidate {candidate} ({result.candidate['device']})",
                " " * 8,
            )
        )
        screen.echo(
            f"        effect threshold {threshold * 100:g}%, alpha {alpha:g}, max spread "
            f"{max_spread * 100:g}%, min samples {min_samples}"
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
    sys.exit(status)


def _load_prices(path):
    from tensorforge.api import TensorForgeError, finite_number, read_toml

    data = read_toml(path, "prices file")
    prices = data.get("prices", data)
    if not isinstance(prices, dict):
        raise TensorForgeError(f"prices file {path}: expected a [prices] table of target = price per hour")
    if not prices:
        raise TensorForgeError(f"prices file {path} names no prices: expected [prices] target = price per hour")
    return {
        name: finite_number(value, f"prices file {path}: price of {name!r} (per hour)", 0)
        for name, value in prices.items()
    }


@click.command()
@workload_options(default="every plugin's default suite")
@click.option(
    "--latency-ms",
    type=FiniteFloat(0, min_open=True),
    default=None,
    help="Objective: each workload's latency at most this.",
)
@click.option(
    "--throughput",
    type=FiniteFloat(0, min_open=True),
    default=None,
    help="Objective: each workload at least this many executions per second.",
)
@click.option("--targets", "target_names", default=None, help="Comma-separated targets (default: all installed).")
@click.option(
    "--capture",
    "captures",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Capture(s) with measurements: the only evidence that a target MEETS the objective.",
)
@click.option(
    "--prices",
    type=click.Path(dir_okay=False),
    default=None,
    help="TOML file: [prices] target = price per hour; ranks the targets that MEET.",
)
@click.option(
    "--energy-price",
    type=FiniteFloat(0),
    default=None,
    metavar="PER_KWH",
    help="Price of energy per kWh (the prices' currency): the cost per 1M runs adds the MEASURED energy.",
)
@click.option(
    "--max-joules",
    type=FiniteFloat(0, min_open=True),
    default=None,
    help="Objective beside latency: each workload's MEASURED joules per execution at most this.",
)
@json_option("every verdict with its evidence")
@wide_option
@trust_options
@pass_host
def rightsize(
    core,
    specs,
    suites,
    latency_ms,
    throughput,
    target_names,
    captures,
    prices,
    energy_price,
    max_joules,
    as_json,
    wide,
    trusted_keys,
    trusted_key_files,
    require_trusted,
):
    """Which targets meet a latency or throughput objective for these workloads?

    RULED OUT: the PREDICTED lower bound misses the objective, the workload does not fit the
    target's memory, or a capture measured on that device misses it. MEETS: only where a
    capture measured on that device shows it. Otherwise UNKNOWN, with what would settle it.
    Never a recommendation without evidence. With --require-trusted (or --trusted-key), a
    capture not signed by a trusted key is refused (exit 2); otherwise each one's origin is shown.
    """
    from tensorforge.api import TensorForgeError, resolve
    from tensorforge_measure.api import PolicyRequest
    from tensorforge_measure.capture.trust import trust_from
    from tensorforge_measure.core_plugin import ops_host
    from tensorforge_measure.policy.builtin import RIGHTSIZING, Question
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.policy.rightsize import EnergyTerms, Objective
    from tensorforge_measure.policy.shown import as_data, as_text, other_verdicts, own_verdicts

    if (latency_ms is None) == (throughput is None):
        raise TensorForgeError("give exactly one objective: --latency-ms or --throughput")
    objective = (
        Objective("latency", latency_ms / 1e3) if latency_ms is not None else Objective("throughput", throughput)
    )
    names = [n.strip() for n in target_names.split(",") if n.strip()] if target_names else core.names("targets")
    targets = [core.target(n) for n in names]
    workloads = resolve(core, tuple(specs), tuple(suites))
    trust = trust_from(trusted_keys, trusted_key_files, require_trusted)
    evidence = [load_evidence(path, "evidence", trust) for path in captures]
    price_table = _load_prices(prices) if prices else {}
    ops = ops_host(core)
    energy = EnergyTerms(price_per_kwh=energy_price, max_joules=max_joules)
    question = Question(tuple(workloads), tuple(targets), objective, tuple(sorted(price_table.items())), energy)
    request = PolicyRequest("rightsize", captures=tuple(evidence), core=core, settings={RIGHTSIZING: question})
    results = [v.record for v in own_verdicts(ops, RIGHTSIZING, request)]
    others = other_verdicts(ops, request, RIGHTSIZING, lambda line: click.echo(line, err=True))
    if as_json:
        data = {
            "label": "POLICY",
            "objective": attrs.asdict(objective),
            "energy": attrs.asdict(energy),
            "results": [attrs.asdict(r) for r in results],
        }
        if others:
            data["policies"] = as_data(others)
        click.echo(canonical_json(data), nl=False)
        return
    _print_rightsize(detect(wide), objective, len(workloads), evidence, results, as_text(ops, others), energy)


def _print_rightsize(screen, objective, n_workloads, evidence, results, others_text, energy=None) -> None:
    """Each fact once: a target's verdict and cost, then each workload's verdict with its reason."""
    from tensorforge_measure.policy.rightsize import MEETS, RULED_OUT, UNKNOWN

    wanted = objective.describe() + (f" and {energy.describe()}" if energy is not None and energy.describe() else "")
    screen.echo(f"POLICY  right-sizing for {wanted} over {n_workloads} workload(s)")
    for item in evidence:
        screen.echo(screen.wrap(f"        evidence {item.path}: {item.origin_detail}", " " * 10))
    rows = []
    for r in results:
        deciding = {RULED_OUT: RULED_OUT, UNKNOWN: UNKNOWN}.get(r.verdict)
        by = ", ".join(c.workload for c in r.cells if c.verdict == deciding) if deciding else "every workload"
        cost = f"{r.cost_per_million:.4g}" if r.cost_per_million is not None else "-"
        joules = f"{r.energy_j_per_request:.4g}" if r.energy_j_per_request is not None else "-"
        rows.append([r.target, r.verdict, cost, joules, by])
    screen.echo(screen.table(["target", "verdict", "cost per 1M runs", "J per request", "decided by"], rows))
    for r in results:
        if r.cost_note:
            screen.echo(screen.wrap(f"{r.target}: cost = {r.cost_note}"))
    meeting = [r for r in results if r.verdict == MEETS]
    if not meeting:
        screen.echo("no target is shown to meet the objective: no recommendation without evidence")
    elif any(r.cost_per_million is not None for r in meeting):
        best = min((r for r in meeting if r.cost_per_million is not None), key=lambda r: r.cost_per_million)
        screen.echo(f"cheapest target shown to meet it: {best.target} ({best.cost_per_million:.4g} per 1M runs)")
    screen.echo("")
    screen.echo(
        screen.table(
            ["target", "workload", "verdict", "why"],
            [[c.target, c.workload, c.verdict, c.reason] for r in results for c in r.cells],
        )
    )
    screen.echo(
        screen.wrap(
            "a target MEETS only where a capture measured every workload on it; one workload "
            "RULED OUT rules the target out; otherwise UNKNOWN"
        )
    )
    for line in others_text:
        screen.echo(screen.wrap(line))
