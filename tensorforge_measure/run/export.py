"""Sending a written capture to the sinks the user asked for (experiment trackers and such).
The capture on disk is the record: a sink that fails is reported in one line, never fatal."""

import os
from collections.abc import Callable, Sequence

from tensorforge.api import TensorForgeError, one_line, unknown
from tensorforge_measure.api import ExportResult
from tensorforge_measure.capture.model import Capture


def requested_sinks(cli_names: Sequence[str]) -> list[str]:
    """--export NAME options, else the TENSORFORGE_EXPORT environment variable (comma list)."""
    names = list(cli_names) or [n.strip() for n in os.environ.get("TENSORFORGE_EXPORT", "").split(",")]
    return [n for n in dict.fromkeys(names) if n]


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise TensorForgeError(f"--export-option expects KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


def resolve_sinks(ops, names: Sequence[str]):
    """The sink objects, checked before any work starts so a typo fails fast (exit 2)."""
    known = {s.name: s for s in ops.values("sinks")}
    for name in names:
        if name not in known:
            error = unknown("export sink", name, known)
            raise TensorForgeError(str(error) + ops.broken_hint())
    return [known[n] for n in names]


def report_html(capture: Capture) -> str | None:
    """The HTML impact report of the capture, for sinks that store it; None if it cannot be
    rendered here (e.g. matplotlib missing), in which case sinks store the capture alone."""
    try:
        from tensorforge_measure.report.facts import build_facts
        from tensorforge_measure.report.html import report_page

        return report_page(build_facts(capture))
    except ImportError:
        return None


def export_all(
    sinks, capture: Capture, capture_path: str, options: dict[str, str], say: Callable[[str], None]
) -> list[ExportResult]:
    html = report_html(capture) if sinks else None
    results = []
    for sink in sinks:
        try:
            result = sink.export(capture, capture_path, html, options)
        except Exception as exc:  # a sink must not raise; if it does, it is still one line
            result = ExportResult(sink.name, False, error=one_line(exc))
        if result.ok:
            say(f"exported to {sink.name}: {result.location}")
        else:
            say(f"warning: export to {sink.name} failed: {result.error} (the capture {capture_path} is written)")
        results.append(result)
    return results
