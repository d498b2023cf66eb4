"""`tensorforge report`: the impact report of one verified capture (HTML, Markdown or JSON facts)."""

import attrs
import click

from tensorforge.api import canonical_json, output_options


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["html", "md", "json"]), default="html", show_default=True)
@output_options("report", "next to the capture, CAPTURE.report.html/.md/.json")
@click.option("--workload", "path_workload", default=None,
              help="Workload whose path from description to lower bound is shown (default: the primary).")
@click.option("--primary", default=None,
              help="Workload of the primary comparison (default: the single-operator workload with the most FLOPs).")
@click.option("--contrast", default=None,
              help="Workload of the contrast comparison (default: the one with the fewest FLOPs).")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None,
              help="Also show the regression gate's verdicts against this baseline capture.")
def report(capture, fmt, output, path_workload, primary, contrast, baseline, force):
    """Write the impact report of a verified capture: a self-contained HTML page (works offline),
    Markdown, or JSON facts. The five labels, primary and contrast comparisons, measured ceilings
    against datasheet peaks, the path to the lower bound, telemetry as context, the policy
    verdicts, plots, and what the capture does not establish."""
    from pathlib import Path
    from tensorforge.api import claim
    from ..policy.evidence import load_evidence
    from ..policy.gate import gate as run_gate
    from .facts import build_facts

    # Where it goes is checked before any work: a report that exists is refused at once.
    destination = claim(output or Path(capture).with_suffix(f".report.{fmt}"), "report", force)
    with destination:
        _report(destination, capture, fmt, path_workload, primary, contrast, baseline,
                load_evidence, run_gate, build_facts)
    if destination.written_to and destination.written_to != "standard output":
        click.echo(f"wrote {destination.written_to}", err=True)


def _report(destination, capture, fmt, path_workload, primary, contrast, baseline, load_evidence, run_gate,
            build_facts):
    doc = load_evidence(capture, "report")
    gate_result = None
    if baseline:
        gate_result = attrs.asdict(run_gate(load_evidence(baseline, "baseline"), doc))
    names = {w["name"] for w in doc["predicted"]["analytical"]["workloads"]}
    for given in (path_workload, primary, contrast):
        if given and given not in names:
            from tensorforge.api import unknown
            raise unknown("workload in this capture", given, names)
    facts = build_facts(doc, path_workload, gate_result, primary, contrast)
    if fmt == "json":
        text = canonical_json(facts)
    elif fmt == "md":
        from .markdown import render_markdown
        text = render_markdown(facts)
    else:
        from .html import report_page
        text = report_page(facts)
    if destination.is_stdout:
        click.echo(text, nl=False)
        destination.written_to = "standard output"
    else:
        destination.write(text)
