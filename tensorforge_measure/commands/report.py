"""`tensorforge report`: the impact report of one verified capture (HTML, Markdown or JSON facts)."""

import attrs
import click

from tensorforge.api import Claim, PluginHost, canonical_json, output_options, pass_host
from tensorforge_measure import host as hosts


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "md", "json"]),
    default="html",
    show_default=True,
    help="html: a self-contained page (works offline); md: Markdown; json: the report's facts.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="The same as --format json: the report's facts as JSON (sorted keys, byte-stable).",
)
@output_options("report", "next to the capture, CAPTURE.report.html/.md/.json")
@click.option(
    "--workload",
    "path_workload",
    default=None,
    help="Workload whose path from description to lower bound is shown (default: the primary).",
)
@click.option(
    "--primary",
    default=None,
    help="Workload of the primary comparison (default: the single-operator workload with the most FLOPs).",
)
@click.option(
    "--contrast", default=None, help="Workload of the contrast comparison (default: the one with the fewest FLOPs)."
)
@click.option(
    "--operators",
    "operators_workload",
    default=None,
    help="Workload whose per-operator view is shown (default: the one with the most operators traced).",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also show the regression gate's verdicts against this baseline capture.",
)
@pass_host
def report(
    core: PluginHost,
    capture: str,
    fmt: str,
    as_json: bool,
    output: str | None,
    path_workload: str | None,
    primary: str | None,
    contrast: str | None,
    operators_workload: str | None,
    baseline: str | None,
    force: bool,
) -> None:
    """Write the impact report of a verified capture: a self-contained HTML page (works offline),
    Markdown, or JSON facts. The five labels, primary and contrast comparisons, measured ceilings
    against datasheet peaks, the path to the lower bound, telemetry as context, the policy
    verdicts, plots, and what the capture does not establish."""
    from pathlib import Path

    from tensorforge.api import claim

    fmt = "json" if as_json else fmt
    # Where it goes is checked before any work: a report that exists is refused at once.
    destination = claim(output or Path(capture).with_suffix(f".report.{fmt}"), "report", force)
    with destination:
        _report(destination, core, capture, fmt, path_workload, primary, contrast, baseline, operators_workload)
    if destination.written_to and destination.written_to != "standard output":
        click.echo(f"wrote {destination.written_to}", err=True)


def _report(
    destination: Claim,
    core: PluginHost,
    capture: str,
    fmt: str,
    path_workload: str | None,
    primary: str | None,
    contrast: str | None,
    baseline: str | None,
    operators_workload: str | None,
) -> None:
    from tensorforge_measure.api import PolicyRequest
    from tensorforge_measure.policy.builtin import GATE
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.policy.gate import GateSettings
    from tensorforge_measure.policy.gate import result as gate_result_of
    from tensorforge_measure.policy.shown import as_data, other_verdicts, own_verdicts
    from tensorforge_measure.report.facts import build_facts

    ops = hosts.ops_host(core)
    evidence = load_evidence(capture, "report")
    base = load_evidence(baseline, "baseline") if baseline else None
    request = PolicyRequest("report", candidate=evidence, baseline=base)
    gate_result = None
    if base is not None:
        records = [v.record for v in own_verdicts(ops, GATE, request)]
        gate_result = attrs.asdict(gate_result_of(base, evidence, GateSettings(), records))
    verdicts = as_data(other_verdicts(ops, request, GATE, lambda line: click.echo(line, err=True)))
    names = {w.name for w in evidence.capture.predicted.analytical.workloads}
    for given in (path_workload, primary, contrast, operators_workload):
        if given and given not in names:
            from tensorforge.api import unknown

            raise unknown("workload in this capture", given, names)
    facts = build_facts(evidence.capture, path_workload, gate_result, primary, contrast, verdicts, operators_workload)
    if fmt == "json":
        text = canonical_json(facts)
    elif fmt == "md":
        from tensorforge_measure.report.markdown import render_markdown

        text = render_markdown(facts)
    else:
        from tensorforge_measure.report.html import NO_MATPLOTLIB, matplotlib_missing, report_page

        if matplotlib_missing():
            click.echo(f"warning: the report has no plots: {NO_MATPLOTLIB}", err=True)
        text = report_page(facts)
    if destination.is_stdout:
        click.echo(text, nl=False)
        destination.written_to = "standard output"
    else:
        destination.write(text)
