"""`tensorforge verify`: integrity and origin of one capture."""

import sys

import click

from tensorforge_measure.capture.trust import trust_options


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the verification report as JSON.")
@trust_options
def verify(
    capture: str,
    as_json: bool,
    trusted_keys: tuple[str, ...],
    trusted_key_files: tuple[str, ...],
    require_trusted: bool,
) -> None:
    """Show that CAPTURE is the document that was produced (integrity: its digest matches its
    canonical content, its bytes are canonical, and every derived figure follows from its raw
    data) and who produced it (origin: its Ed25519 signature, against the keys you trust). '-'
    reads standard input. Exit 0 verified, 1 not verified (or, when trust is required, not
    signed by a trusted key), 2 unreadable. docs/security.md says what a signature proves."""
    import attrs

    from tensorforge.api import canonical_json
    from tensorforge_measure.capture.document import verify as verify_capture
    from tensorforge_measure.capture.trust import trust_from

    trust = trust_from(trusted_keys, trusted_key_files, require_trusted)
    report = verify_capture(capture, trust.fingerprints)
    refused = trust.refusal("it", report.origin, report.origin_detail)
    if as_json:
        click.echo(
            canonical_json(
                {**attrs.asdict(report), "trust_required": trust.required, "trusted_keys": list(trust.fingerprints)}
            ),
            nl=False,
        )
    else:
        from tensorforge.api import detect

        lines = [f"ok    {check}" for check in report.checks] + [f"FAIL  {problem}" for problem in report.problems]
        lines.append(f"integrity: {'holds' if report.ok else 'FAILS'}")
        lines.append(
            f"origin: {report.origin_detail}"
            + ("" if trust.required or report.origin == "trusted" else " (not required: pass --require-trusted)")
        )
        verdict = "VERIFIED" if report.ok and refused is None else "NOT VERIFIED"
        if report.ok and refused is not None:
            verdict += ": integrity holds, but it is not signed by a trusted key"
        lines.append(f"{capture}: {verdict}")
        detect().echo("\n".join(lines))
    if not report.ok or refused is not None:
        sys.exit(1)
