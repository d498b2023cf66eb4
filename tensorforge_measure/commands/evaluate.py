"""`tensorforge evaluate CAPTURE`: the estimate and the bound scored against the capture's
measurements, per workload class (tensorforge_measure/compare/evaluation.py says which numbers
are compared).
"""

import sys

import click

from tensorforge.api import TERMS, canonical_json, to_data
from tensorforge.api import evaluate_estimates as evaluate
from tensorforge_measure.compare.evaluation import evaluation_text, rows_from_capture


@click.command("evaluate")
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("--rows", "show_rows", is_flag=True, help="Also list every workload.")
@click.option("--json", "as_json", is_flag=True, help="Print the evaluation as JSON.")
@click.pass_context
def evaluate_command(ctx: click.Context, capture: str, show_rows: bool, as_json: bool) -> None:
    """Score the bound and the estimate of CAPTURE against its measurements, per workload class:
    median and p90 APE, bound violations, and the share of the gap each estimate term explains.
    Exit 0, or 2 for an unreadable capture or one with nothing to score."""
    from tensorforge_measure.capture.document import read_document, structure

    doc = read_document(capture)
    structure(doc, f"capture {capture}")  # one line, exit 2, for anything that is not a capture
    rows, source = rows_from_capture(doc, ctx.obj.host)
    ev = evaluate(rows)
    if as_json:
        click.echo(canonical_json({"source": source, "terms": list(TERMS), **to_data(ev)}), nl=False)
    else:
        click.echo(evaluation_text(ev, f"{capture}: {source}", show_rows), nl=False)
    sys.stdout.flush()
