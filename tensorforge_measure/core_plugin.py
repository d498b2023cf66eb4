"""The Ops side's face towards the Core: the hook implementations registered under the Core's
entry-point group. It adds the Ops side's commands (tensorforge_measure/commands/, one module
each) to the CLI and reports the Ops side's plugins to `list-plugins`; torch is imported only
inside command bodies, through the backend.

The Ops side's own plugins load once per Core host (tensorforge_measure/host.py: a companion of
it, with its plugin selection), whichever of list-plugins, `run` and its provenance asks first.
Nothing imports this module but the Core's plugin host: the commands reach the Ops host through
tensorforge_measure.host, never through here."""

from typing import TYPE_CHECKING

import click

from tensorforge.cli.lazy_command import LazyCommand
from tensorforge.hookspecs import hookimpl

if TYPE_CHECKING:
    from tensorforge.api import PluginHost, PluginReport

# Each command by name, where it lives, and the first sentence of its help: `tensorforge --help`
# and every command line load this module, and importing the commands themselves (the whole
# predicting side through tensorforge.api) for one line each cost most of the start-up. A test
# holds each sentence equal to the command's own.
COMMANDS: tuple[click.Command, ...] = tuple(
    LazyCommand(name, f"tensorforge_measure.commands.{where}", summary)
    for name, where, summary in (
        (
            "run",
            "run:run",
            "Predict the suite, and where a device is present calibrate, measure, collect telemetry, "
            "and write one capture (JSON) plus a readable summary.",
        ),
        (
            "calibrate",
            "calibrate:calibrate",
            "Run the calibration probes alone and store the result for this device (CALIBRATED).",
        ),
        (
            "verify",
            "verify:verify",
            "Show that CAPTURE is the document that was produced (integrity: its digest "
            "matches its canonical content, its bytes are canonical, and every derived figure follows from its raw "
            "data) and who produced it (origin: its Ed25519 signature, against the keys you trust).",
        ),
        (
            "gate",
            "gate:gate",
            "Compare two captures workload by workload: PASS, REGRESSION, IMPROVEMENT, or NO VERDICT "
            "with the missing evidence named.",
        ),
        (
            "rightsize",
            "rightsize:rightsize",
            "Which targets meet a latency or throughput objective for these workloads?",
        ),
        (
            "report",
            "report:report",
            "Write the impact report of a verified capture: a self-contained HTML page (works offline), "
            "Markdown, or JSON facts.",
        ),
        ("export", "export:export_command", "Send an existing, verified capture to sinks such as MLflow."),
        (
            "evaluate",
            "evaluate:evaluate_command",
            "Score the bound and the estimate of CAPTURE against its measurements, per workload class: "
            "median and p90 APE, bound violations, and the share of the gap each estimate term explains.",
        ),
    )
)


@hookimpl
def tensorforge_plugin_reports(host: "PluginHost") -> "list[PluginReport]":
    from tensorforge_measure import host as hosts

    return list(hosts.ops_host(host).reports.values())


@hookimpl
def tensorforge_add_commands(cli: click.Group) -> None:
    for command in COMMANDS:
        cli.add_command(command)
