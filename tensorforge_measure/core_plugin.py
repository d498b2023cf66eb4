"""The Ops side's face towards the Core: it adds `run`, `calibrate` and `verify` to the CLI
and reports Ops-side plugins to `list-plugins`. Registered under the Core's entry-point group;
torch is imported only inside command bodies, through the backend.

The Ops side's own plugins load once per Core host (a companion of it, with its plugin
selection), whichever of list-plugins, `run` and its provenance asks first."""

import datetime as dt
import sys
from pathlib import Path

import click

from tensorforge.api import (
    FiniteFloat,
    PluginHost,
    json_option,
    operating_point_option,
    optional_target_option,
    output_options,
    pass_host,
    target_option,
    wide_option,
    workload_options,
)
from tensorforge.hookspecs import hookimpl
from tensorforge_measure.capture.trust import trust_options


def _build_ops_host(core: PluginHost):
    from tensorforge_measure.host import OpsHost

    return OpsHost(options=core.options)


def ops_host(core: PluginHost):
    """The Ops side's plugin host beside `core`: built on first use, then the same one."""
    return core.companion("tensorforge_measure", _build_ops_host)


@hookimpl
def tensorforge_plugin_reports(host):
    return list(ops_host(host).reports.values())


def _default_capture_path(target: str) -> Path:
    """tensorforge-capture-TARGET-TIME.json in the current folder; a target given as a file
    (./my-accelerator.toml) contributes its stem, not its path."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    name = Path(target).stem if ("/" in target or target.endswith(".toml")) else target
    return Path(f"tensorforge-capture-{name}-{stamp}.json")


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
@output_options("capture (and its NAME.summary.txt, NAME.incomplete.json)", "tensorforge-capture-TARGET-TIME.json here")
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
    core,
    target_name,
    specs,
    suites,
    operating_point,
    backend,
    device_index,
    recalibrate,
    no_telemetry,
    telemetry_seconds,
    no_graph,
    no_sustained,
    no_trace,
    no_energy,
    energy_seconds,
    energy_updates,
    budget_s,
    cooldown_s,
    rest_s,
    output,
    force,
    exports,
    export_options,
    to_mlflow,
    mlflow_tracking_uri,
    wide,
):
    """Predict the suite, and where a device is present calibrate, measure, collect telemetry,
    and write one capture (JSON) plus a readable summary.

    Without a CUDA device it still succeeds: PREDICTED is filled and MEASURED, CALIBRATED and
    DIAGNOSTIC say unavailable, with the reason.
    """
    from tensorforge_measure.capture.signing import load_or_create_key
    from tensorforge_measure.home import require_writable_home
    from tensorforge_measure.run.destinations import RunDestinations
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
    from tensorforge_measure.run.export import export_all, parse_options, requested_sinks, resolve_sinks

    ops = ops_host(core)
    if to_mlflow or mlflow_tracking_uri:
        exports = tuple(exports) + ("mlflow",)
        if mlflow_tracking_uri:
            export_options = tuple(export_options) + (f"tracking_uri={mlflow_tracking_uri}",)
    sinks = resolve_sinks(ops, requested_sinks(exports))  # a misspelled sink fails before the run
    sink_options = parse_options(export_options)
    from tensorforge_measure.progress import for_terminal

    progress = for_terminal()
    runner = Run(core, ops, opts, progress)
    with RunDestinations(output or _default_capture_path(target_name), force) as where:
        sealed = _execute(runner, where, progress, wide)
        export_all(
            sinks,
            sealed,
            where.capture.written_to or str(output),
            sink_options,
            lambda line: click.echo(line, err=True),
        )


def _execute(runner, where, progress, wide):
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
    screen.echo(summary_text(sealed, screen) if screen.width else text, nl=False, err=where.to_stdout)
    click.echo(f"wrote {captured}" + (f" and {summary}" if summary else ""), err=True)
    return sealed


@click.command("export")
@click.argument("capture", type=click.Path(dir_okay=False))
@click.option("--to", "sink_names", multiple=True, required=True, help="Sink name (see list-plugins).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="An option for the sinks.")
@pass_host
def export_command(core, capture, sink_names, options):
    """Send an existing, verified capture to sinks such as MLflow. Exit 0 when every sink took
    it, 1 when one failed (named in one line), 2 for bad input."""
    from tensorforge_measure.policy.evidence import load_evidence
    from tensorforge_measure.run.export import export_all, parse_options, resolve_sinks

    sinks = resolve_sinks(ops_host(core), sink_names)
    evidence = load_evidence(capture, "export")
    results = export_all(
        sinks, evidence.capture, capture, parse_options(options), lambda line: click.echo(line, err=True)
    )
    if not all(r.ok for r in results):
        sys.exit(1)


DEFAULT_BACKEND = "torch-cuda"


def _calibration_backend(ops, target_name: str | None, backend: str | None) -> str:
    """As `run` chooses: --backend, else the backend that measures --target natively
    (torch-cpu for host-cpu), else the GPU's."""
    if backend:
        return backend
    if target_name:
        from tensorforge.api import core_host

        return ops.default_backend(core_host().target(target_name).name, DEFAULT_BACKEND)
    return DEFAULT_BACKEND


def _cpu_hint(ops) -> str:
    """How to calibrate this machine's CPU instead, where a backend for it is installed."""
    cpu = [b for b in ops.values("backends") if getattr(b, "targets", ())]
    if not cpu:
        return ""
    backend = cpu[0]
    return (
        f"; to calibrate this machine's CPU instead: tensorforge calibrate --target {backend.targets[0]} "
        f"(backend {backend.name})"
    )


def _attach_estimate(core, cal):
    """The calibration with the estimate's coefficients fitted for the installed target that
    describes the calibrated device (as `run` does), so `predict --ceilings CALIBRATION.json`
    gets a calibrated estimate."""
    import attrs

    from tensorforge_measure.calibrate import store as calibration
    from tensorforge_measure.calibrate.estimate_fit import fit_estimate

    target = next(
        (core.target(n) for n in core.names("targets") if core.target(n).matches_device(cal.device or "")), None
    )
    ceilings = calibration.to_ceilings(cal)
    if target is None or ceilings is None:
        return cal
    fitted = fit_estimate(cal, core, target, ceilings)
    return cal if fitted is None else attrs.evolve(cal, estimate=fitted)


@click.command()
@optional_target_option(
    "Calibrate the device that measures this target, choosing the backend as `run` does "
    "(host-cpu: this machine's CPU with torch-cpu). Default: the GPU (torch-cuda)."
)
@click.option(
    "--backend", default=None, help="Measurement backend (overrides the choice from --target) [default: torch-cuda]."
)
@click.option(
    "--device",
    "device_index",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Index of the device the backend opens (the GPU's CUDA index; 0 on a CPU).",
)
@json_option("the calibration document (what `predict --ceilings` reads)")
@pass_host
def calibrate(core, target_name, backend, device_index, as_json):
    """Run the calibration probes alone and store the result for this device (CALIBRATED).

    `run` reuses the stored calibration for the same device fingerprint unless --recalibrate.
    Without a GPU, `calibrate --target host-cpu` calibrates the CPU. Exit status 3 when the
    device is not available.
    """
    from tensorforge.api import canonical_json
    from tensorforge_measure.api import Unavailable
    from tensorforge_measure.calibrate import store as calibration
    from tensorforge_measure.capture.convert import to_document
    from tensorforge_measure.home import require_writable_home
    from tensorforge_measure.progress import for_terminal

    ops = ops_host(core)
    require_writable_home()  # before the probes run, not when their result is stored
    backend = _calibration_backend(ops, target_name, backend)
    try:
        session = ops.backend(backend).open(device_index)
    except Unavailable as exc:
        hint = _cpu_hint(ops) if backend == DEFAULT_BACKEND else ""
        click.echo(f"error: cannot calibrate with {backend}: {exc}{hint}", err=True)
        sys.exit(3)
    progress = for_terminal()
    try:
        cal = calibration.run_probes(session, ops.for_backend("probes", backend), progress)
    finally:
        progress.close()
        session.close()
    cal = _attach_estimate(core, cal)
    path = calibration.save(cal)
    if as_json:
        click.echo(canonical_json(to_document(cal)), nl=False)
    else:
        _print_calibration(cal)
    click.echo(f"stored {path}", err=True)


def _print_calibration(cal) -> None:
    """The ceilings per regime and the named floors, for people (labels in colour on a terminal)."""
    from tensorforge.api import detect, seconds, si
    from tensorforge_measure.report.summary_regimes import FLOOR_NAMES

    lines = [f"CALIBRATED on {cal.device} ({cal.fingerprint}) at {cal.measured_at}"]
    by_regime = {r: (c.compute, c.dram_bytes_per_s) for r, c in (cal.ceilings_by_regime or {}).items()} or {
        "burst": (cal.ceilings.compute, cal.ceilings.dram_bytes_per_s)
    }
    for regime, (compute, dram) in sorted(by_regime.items()):
        lines += [f"  {regime} compute {mode}: {si(rate, 'FLOP/s')}" for mode, rate in sorted(compute.items())]
        if dram:
            lines.append(f"  {regime} memory bandwidth (bytes read + written): {si(dram, 'B/s')}")
    floors = cal.floors or {}
    lines += [f"  {label}: {seconds(floors[key])}" for key, label in FLOOR_NAMES if floors.get(key) is not None]
    if not floors and cal.ceilings.launch_floor_s:
        lines.append(f"  launch floor: {seconds(cal.ceilings.launch_floor_s)}")
    lines += [f"  probe {name} failed: {why}" for name, why in sorted(cal.failed_probes.items())]
    fit = cal.estimate or {}
    if "report" in fit:
        s = fit["report"]["summary"]
        lines.append(
            f"  estimate coefficients for {fit['target']} ({fit.get('regime') or 'burst'} regime): "
            "the probes reproduced to "
            f"{s.get('median_ape', 0) * 100:.1f}% median APE ({s.get('workload_points', 0)} points)"
        )
    elif "error" in fit:
        lines.append(f"  estimate fit failed: {fit['error']}")
    screen = detect()
    screen.echo("\n".join(screen.wrap(line, "    ") for line in lines))


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the verification report as JSON.")
@trust_options
def verify(capture, as_json, trusted_keys, trusted_key_files, require_trusted):
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


@hookimpl
def tensorforge_add_commands(cli):
    from tensorforge_measure.commands.policy import gate, rightsize
    from tensorforge_measure.commands.report import report

    cli.add_command(run)
    cli.add_command(calibrate)
    cli.add_command(verify)
    cli.add_command(gate)
    cli.add_command(rightsize)
    cli.add_command(report)
    cli.add_command(export_command)
    from tensorforge_measure.commands.evaluate import evaluate_command

    cli.add_command(evaluate_command)
