"""`tensorforge report`: the impact report of one verified capture (HTML, Markdown or JSON facts)."""

import attrs
import click

from tensorforge.api import canonical_json


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["html", "md", "json"]), default="html", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
              help="Where to write (default: next to the capture, CAPTURE.report.html/.md/.json; '-' for stdout).")
@click.option("--workload", "path_workload", default=None,
              help="Workload whose path from description to lower bound is shown (default: the primary).")
@click.option("--primary", default=None,
              help="Workload of the primary comparison (default: the single-operator workload with the most FLOPs).")
@click.option("--contrast", default=None,
              help="Workload of the contrast comparison (default: the one with the fewest FLOPs).")
@click.option("--baseline", type=click.Path(dir_okay=False), default=None,
              help="Also show the regression gate's verdicts against this baseline capture.")
@click.option("--force", is_flag=True, help="Overwrite an existing report file.")
def report(capture, fmt, output, path_workload, primary, contrast, baseline, force):
    """Write the impact report of a verified capture: a self-contained HTML page (works offline),
    Markdown, or JSON facts. The five labels, primary and contrast comparisons, measured ceilings
    against datasheet peaks, the path to the lower bound, telemetry as context, the policy
    verdicts, plots, and what the capture does not establish."""
    from pathlib import Path
    from tensorforge.api import TensorForgeError, write_atomic
    from ..policy.evidence import load_evidence
    from ..policy.gate import gate as run_gate
    from .facts import build_facts

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
    if output == "-":
        click.echo(text, nl=False)
        return
    path = Path(output) if output else Path(capture).with_suffix(f".report.{fmt}")
    if path.exists() and not force:
        raise TensorForgeError(f"report {path} already exists; choose another --output or pass --force")
    write_atomic(path, text)
    click.echo(f"wrote {path}", err=True)
