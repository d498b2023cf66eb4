"""`tensorforge rightsize`: which targets meet a latency or throughput objective, a POLICY
command that recommends nothing without evidence."""

from __future__ import annotations

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
    wide_option,
    workload_options,
)
from tensorforge_measure import host as hosts
from tensorforge_measure.capture.trust import trust_options

if TYPE_CHECKING:
    from tensorforge_measure.policy.evidence import Evidence
    from tensorforge_measure.policy.rightsize import EnergyTerms, Objective, TargetVerdict


def _load_prices(path: str) -> tuple[dict[str, float], str | None]:
    """The prices per hour by target, and their currency where the file names one
    (`currency = "USD"`, at the top or in [prices])."""
    from tensorforge.api import TensorForgeError, finite_number, read_toml

    data = read_toml(path, "prices file")
    prices = dict(data.get("prices", data)) if isinstance(data.get("prices", data), dict) else None
    if prices is None:
        raise TensorForgeError(f"prices file {path}: expected a [prices] table of target = price per hour")
    currency = prices.pop("currency", None) or data.get("currency")
    if currency is not None and (not isinstance(currency, str) or not currency.strip()):
        raise TensorForgeError(f'prices file {path}: currency must be a name such as "USD", not {currency!r}')
    if not prices:
        raise TensorForgeError(f"prices file {path} names no prices: expected [prices] target = price per hour")
    return {
        name: finite_number(value, f"prices file {path}: price of {name!r} (per hour)", 0)
        for name, value in prices.items()
    }, currency.strip() if currency else None


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
    core: PluginHost,
    specs: tuple[str, ...],
    suites: tuple[str, ...],
    latency_ms: float | None,
    throughput: float | None,
    target_names: str | None,
    captures: tuple[str, ...],
    prices: str | None,
    energy_price: float | None,
    max_joules: float | None,
    as_json: bool,
    wide: bool,
    trusted_keys: tuple[str, ...],
    trusted_key_files: tuple[str, ...],
    require_trusted: bool,
) -> None:
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
    from tensorforge_measure.policy.builtin import RIGHTSIZING, Question
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.policy.rightsize import EnergyTerms, Objective
    from tensorforge_measure.policy.shown import as_data, as_text, other_verdicts, own_verdicts

    if latency_ms is not None and throughput is None:
        objective = Objective("latency", latency_ms / 1e3)
    elif throughput is not None and latency_ms is None:
        objective = Objective("throughput", throughput)
    else:
        raise TensorForgeError("give exactly one objective: --latency-ms or --throughput")
    names = [n.strip() for n in target_names.split(",") if n.strip()] if target_names else core.names("targets")
    targets = [core.target(n) for n in names]
    workloads = resolve(core, tuple(specs), tuple(suites))
    trust = trust_from(trusted_keys, trusted_key_files, require_trusted)
    evidence = [load_evidence(path, "evidence", trust) for path in captures]
    price_table, currency = _load_prices(prices) if prices else ({}, None)
    ops = hosts.ops_host(core)
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
    _print_rightsize(
        detect(wide), objective, len(workloads), evidence, results, as_text(ops, others), energy, currency, bool(prices)
    )


def _print_rightsize(
    screen: Screen,
    objective: Objective,
    n_workloads: int,
    evidence: list[Evidence],
    results: list[TargetVerdict],
    others_text: list[str],
    energy: EnergyTerms | None = None,
    currency: str | None = None,
    priced_file: bool = False,
) -> None:
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
    money = f"{currency} " if currency else ""
    cost_head = f"cost per 1M runs ({currency})" if currency else "cost per 1M runs"
    screen.echo(screen.table(["target", "verdict", cost_head, "J per request", "decided by"], rows))
    if priced_file and not currency:
        screen.echo(
            screen.wrap('costs are in the prices file\'s currency, which it does not name (add currency = "USD")')
        )
    for r in results:
        if r.cost_note:
            screen.echo(screen.wrap(f"{r.target}: cost = {r.cost_note}"))
    meeting = [r for r in results if r.verdict == MEETS]
    priced = [(r.cost_per_million, r) for r in meeting if r.cost_per_million is not None]
    if not meeting:
        screen.echo("no target is shown to meet the objective: no recommendation without evidence")
    elif priced:
        per_million, best = min(priced, key=lambda pair: pair[0])
        screen.echo(f"cheapest target shown to meet it: {best.target} ({money}{per_million:.4g} per 1M runs)")
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
