"""`tensorforge evaluate CAPTURE`: the estimate and the bound scored against the capture's
measurements, per workload class (tensorforge_measure/compare/evaluation.py says which numbers
are compared).
"""

import sys

import click

from tensorforge.api import TERMS, canonical_json, detect, to_data
from tensorforge.api import evaluate_estimates as evaluate
from tensorforge_measure.compare.evaluation import evaluation_text, rows_from_capture


@click.command("evaluate")
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("--rows", "show_rows", is_flag=True, help="Also list every workload.")
@click.option("--json", "as_json", is_flag=True, help="Print the evaluation as JSON.")
@click.option("--wide", is_flag=True, help="Print every column in full, however wide (default: fit the terminal).")
@click.option(
    "--allow-unverified",
    is_flag=True,
    help="Score a capture that does not verify (edited, re-sealed, inconsistent); the output says so.",
)
@click.pass_context
def evaluate_command(
    ctx: click.Context, capture: str, show_rows: bool, as_json: bool, wide: bool, allow_unverified: bool
) -> None:
    """Score the bound and the estimate of CAPTURE against its measurements, per workload class:
    median and p90 APE, bound violations, and the share of the gap each estimate term explains.
    The capture is verified first (as `verify` does); one that does not verify is refused
    unless --allow-unverified. Exit 0, or 2 for an unreadable, unverified capture or one with
    nothing to score."""
    from tensorforge.api import TensorForgeError
    from tensorforge_measure.capture.document import check_document, structure

    # integrity first: a hand-edited capture was once scored with exit 0 and no word of it
    report, _, doc = check_document(capture)
    unverified = None if report.ok else report.problems[0]
    if unverified is not None and not allow_unverified:
        raise TensorForgeError(
            f"capture {capture} does not verify: {unverified}; pass --allow-unverified to score it anyway"
        )
    structure(doc, f"capture {capture}")  # one line, exit 2, for anything that is not a capture
    rows, source = rows_from_capture(doc, ctx.obj.host)
    ev = evaluate(rows)
    if unverified is not None:
        source = f"NOT VERIFIED ({unverified}), scored anyway (--allow-unverified); {source}"
    if as_json:
        verified = {"verified": unverified is None, "integrity_problems": list(report.problems)}
        click.echo(canonical_json({"source": source, "terms": list(TERMS), **verified, **to_data(ev)}), nl=False)
    else:
        screen = detect(wide)
        screen.echo(evaluation_text(ev, f"{capture}: {source}", show_rows, screen), nl=False)
    sys.stdout.flush()
