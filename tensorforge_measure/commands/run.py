"""`tensorforge run`: predict the suite and, where a device is present, calibrate, measure,
collect telemetry and energy, and write one signed capture plus a readable summary.

torch is imported only inside the command body, through the backend; the verb itself lives in
tensorforge_measure/run/.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tensorforge.api import (
    FiniteFloat,
    PluginHost,
    operating_point_option,
    output_options,
    pass_host,
    target_option,
    wide_option,
    workload_options,
)

if TYPE_CHECKING:
    from tensorforge_measure.api import CaptureSink
    from tensorforge_measure.capture.model import Capture
    from tensorforge_measure.host import OpsHost
    from tensorforge_measure.progress import BarProgress, LineProgress
    from tensorforge_measure.run.destinations import RunDestinations
    from tensorforge_measure.run.runner import Run


def _default_capture_path(target: str) -> Path:
    """HOME/captures/tensorforge-capture-TARGET-TIME.json: without -o nothing is written into
    the current folder (a first run there left two files nobody asked for), yet a run of
    minutes is never lost. A target given as a file (./my-accelerator.toml) contributes its
    stem, not its path."""
    from tensorforge_measure.home import home

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    name = Path(target).stem if ("/" in target or target.endswith(".toml")) else target
    folder = home() / "captures"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"tensorforge-capture-{name}-{stamp}.json"


def next_step(ops: OpsHost, target: str) -> str | None:
    """Where nothing could be measured: the command that measures this machine instead (its
    CPU, through the backend that measures a target natively), unless that was the target."""
    native = [b for b in ops.values("backends") if getattr(b, "targets", ())]
    if not native or target in native[0].targets:
        return None
    return f"next: `tensorforge run --target {native[0].targets[0]}` measures this machine's CPU"


@click.command()
@target_option
@workload_options(
    default="the measurement backend's own suite if it has one (host-cpu), else every plugin's default suite"
)
@operating_point_option
@click.option(
    "--backend",
    default=None,
    help="Measurement backend [default: the one that measures "
    "the target natively (torch-cpu for host-cpu), else torch-cuda].",
)
@click.option(
    "--device",
    "device_index",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Index of the device the backend opens (the GPU's CUDA index; 0 on a CPU).",
)
@click.option("--recalibrate", is_flag=True, help="Run the calibration probes even if a stored calibration exists.")
@click.option("--no-telemetry", is_flag=True, help="Skip the telemetry windows (NVML on GPUs).")
@click.option(
    "--telemetry-seconds",
    type=FiniteFloat(0.05, 60),
    default=0.3,
    show_default=True,
    help="Length of each workload's sustained-regime telemetry window (the burst one: at most 0.3 s).",
)
@click.option("--no-graph", is_flag=True, help="Skip CUDA-graph replay timing (device time).")
@click.option("--no-sustained", is_flag=True, help="Skip the sustained regime (steady clock, continuous load).")
@click.option("--no-trace", is_flag=True, help="Skip the per-operator kernel trace window.")
@click.option(
    "--no-energy", is_flag=True, help="Skip the energy windows (the device's energy counter; docs/energy.md)."
)
@click.option(
    "--energy-seconds",
    type=FiniteFloat(0.05, 60),
    default=0.4,
    show_default=True,
    help="Least length of each workload's energy window (it ends on the counter's next update).",
)
@click.option(
    "--energy-updates",
    type=click.IntRange(0, 100),
    default=10,
    show_default=True,
    help="Least number of the energy counter's updates each energy window spans: one sample of joules per "
    "execution each, what `gate --energy` compares (its --min-samples); on a 100 ms counter 10 make the window "
    "~1 s. 0: --energy-seconds alone.",
)
@click.option(
    "--budget",
    "budget_s",
    type=FiniteFloat(0.01, 600),
    default=2.0,
    show_default=True,
    help="Time budget per workload's latency measurement (seconds).",
)
@click.option(
    "--cooldown",
    "cooldown_s",
    type=FiniteFloat(0, 60),
    default=2.0,
    show_default=True,
    help="Idle seconds between the calibration probes and the first measurement.",
)
@click.option(
    "--rest",
    "rest_s",
    type=FiniteFloat(0, 10),
    default=0.2,
    show_default=True,
    help="Idle seconds before each workload's timing.",
)
@output_options(
    "capture (and its NAME.summary.txt, NAME.incomplete.json)",
    "tensorforge-capture-TARGET-TIME.json in TensorForge's home (captures/), the summary on the terminal only",
)
@click.option(
    "--export",
    "exports",
    multiple=True,
    help="Send the capture to this sink after writing it (e.g. mlflow; see list-plugins). "
    "Default: $TENSORFORGE_EXPORT (comma list).",
)
@click.option(
    "--export-option",
    "export_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option for the sinks, e.g. experiment=tensorforge.",
)
# The MLflow issue names `run --mlflow`: shorthands for the generic sink options above. The
# sink itself is the separate tf-mlflow plugin; without it, --mlflow fails like --export mlflow.
@click.option(
    "--mlflow",
    "to_mlflow",
    is_flag=True,
    help="Shorthand for --export mlflow (the tf-mlflow plugin). Without a tracking URI (or "
    "MLFLOW_TRACKING_URI) MLflow's defaults apply: the run goes to ./mlflow.db and its "
    "artifacts to ./mlruns/ in the current folder.",
)
@click.option(
    "--mlflow-tracking-uri",
    default=None,
    metavar="URI",
    help="Implies --mlflow; shorthand for --export-option tracking_uri=URI.",
)
@wide_option
@pass_host
def run(
    core: PluginHost,
    target_name: str,
    specs: tuple[str, ...],
    suites: tuple[str, ...],
    operating_point: str | None,
    backend: str | None,
    device_index: int,
    recalibrate: bool,
    no_telemetry: bool,
    telemetry_seconds: float,
    no_graph: bool,
    no_sustained: bool,
    no_trace: bool,
    no_energy: bool,
    energy_seconds: float,
    energy_updates: int,
    budget_s: float,
    cooldown_s: float,
    rest_s: float,
    output: str | None,
    force: bool,
    exports: tuple[str, ...],
    export_options: tuple[str, ...],
    to_mlflow: bool,
    mlflow_tracking_uri: str | None,
    wide: bool,
) -> None:
    """Predict the suite, and where a device is present calibrate, measure, collect telemetry,
    and write one capture (JSON) plus a readable summary.

    Without a CUDA device it still succeeds: PREDICTED is filled and MEASURED, CALIBRATED and
    DIAGNOSTIC say unavailable, with the reason.
    """
    from tensorforge_measure.home import require_writable_home
    from tensorforge_measure.run.destinations import RunDestinations

    # the destinations first: a refused -o answers at once, before the signing key, the plugins
    # and minutes of probes; without -o the capture goes to the home, checked before it is used
    asked = output is not None
    if not asked:
        require_writable_home()
    with RunDestinations(output or _default_capture_path(target_name), force, summary=asked) as where:
        from tensorforge_measure.capture.signing import load_or_create_key
        from tensorforge_measure.progress import for_terminal
        from tensorforge_measure.run.export import export_all
        from tensorforge_measure.run.runner import Run, RunOptions

        # before minutes of probes, not after: the home, and the key the capture will be signed with
        # (made on first use; refused now if others can reach it)
        load_or_create_key(require_writable_home())
        opts = RunOptions(
            target=target_name,
            specs=tuple(specs),
            suites=tuple(suites),
            operating_point=operating_point,
            backend=backend,
            device_index=device_index,
            recalibrate=recalibrate,
            telemetry=not no_telemetry,
            telemetry_s=telemetry_seconds,
            budget_s=budget_s,
            cooldown_s=cooldown_s,
            rest_s=rest_s,
            graph=not no_graph,
            sustained=not no_sustained,
            trace=not no_trace,
            energy=not no_energy,
            energy_s=energy_seconds,
            energy_updates=energy_updates,
            command=tuple(["tensorforge"] + sys.argv[1:]),
        )
        from tensorforge_measure import host as hosts  # the Ops side's plugins: after any refusal

        ops = hosts.ops_host(core)
        hosts.warn_plugins(core, ops, lambda line: click.echo(line, err=True))
        sinks, sink_options = _sinks(ops, exports, export_options, to_mlflow, mlflow_tracking_uri)
        progress = for_terminal()
        runner = Run(core, ops, opts, progress)
        sealed = _execute(runner, where, progress, wide, next_step(ops, target_name), asked)
        export_all(
            sinks,
            sealed,
            where.capture.written_to or str(output),
            sink_options,
            lambda line: click.echo(line, err=True),
        )


def _sinks(
    ops: OpsHost,
    exports: tuple[str, ...],
    export_options: tuple[str, ...],
    to_mlflow: bool,
    mlflow_tracking_uri: str | None,
) -> tuple[list[CaptureSink], dict[str, str]]:
    """The sinks the capture goes to, and their options: a misspelled sink fails before the run."""
    from tensorforge_measure.run.export import parse_options, requested_sinks, resolve_sinks

    if to_mlflow or mlflow_tracking_uri:
        exports = tuple(exports) + ("mlflow",)
        if mlflow_tracking_uri:
            export_options = tuple(export_options) + (f"tracking_uri={mlflow_tracking_uri}",)
    sinks = resolve_sinks(ops, requested_sinks(exports))  # a misspelled sink fails before the run
    return sinks, parse_options(export_options)


def _execute(
    runner: Run,
    where: RunDestinations,
    progress: LineProgress | BarProgress,
    wide: bool,
    step: str | None = None,
    asked: bool = True,
) -> Capture:
    """Run, and write the capture and its summary; on Ctrl-C, SIGTERM or SIGHUP write what was
    gathered as an incomplete capture, then let the interruption end the command."""
    from tensorforge.api import canonical_json, detect, signal_name, signals_as_interrupts, signals_ignored
    from tensorforge_measure.capture.convert import to_document
    from tensorforge_measure.capture.document import seal
    from tensorforge_measure.home import home
    from tensorforge_measure.report.summary import summary_text

    try:
        with signals_as_interrupts():
            capture = runner.execute()
    except KeyboardInterrupt as exc:
        progress.close()
        if runner.started:
            with signals_ignored():  # a second signal must not cut this write short
                partial = seal(runner.capture(), home())
                written = where.write_incomplete(canonical_json(to_document(partial)))
                click.echo(f"interrupted ({signal_name(exc)}): wrote incomplete capture {written}", err=True)
        raise
    finally:
        progress.close()
    sealed = seal(capture, home())  # signed with the user's key (made on first use)
    captured = where.write_capture(canonical_json(to_document(sealed)))
    text = summary_text(sealed)  # the file always gets full columns
    summary = where.write_summary(text)
    # The summary is for people: on standard output (fitted to a terminal), unless the capture
    # itself went there.
    screen = detect(wide, stream=sys.stderr if where.to_stdout else None)
    step = None if sealed.measured.available else step
    screen.echo(summary_text(sealed, screen, step) if screen.width else text, nl=False, err=where.to_stdout)
    if step and not screen.width:
        click.echo(step, err=True)
    if asked:
        click.echo(f"wrote {captured}" + (f" and {summary}" if summary else ""), err=True)
    else:
        click.echo(f"capture kept in TensorForge's home: {captured} (-o PATH writes it elsewhere)", err=True)
    return sealed
