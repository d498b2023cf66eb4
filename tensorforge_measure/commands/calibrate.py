"""`tensorforge calibrate`: run the calibration probes alone and store the result for this
device (CALIBRATED)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from tensorforge.api import PluginHost, json_option, optional_target_option, pass_host
from tensorforge_measure import host as hosts

if TYPE_CHECKING:
    from tensorforge_measure.capture.sections.calibrated import Calibration
    from tensorforge_measure.host import OpsHost


def _calibration_backend(ops: OpsHost, target_name: str | None, backend: str | None) -> str:
    """As `run` chooses: --backend, else the backend that measures --target natively
    (torch-cpu for host-cpu), else the backend that declares itself the fallback (the GPU's)."""
    if backend:
        return backend
    if target_name:
        from tensorforge.api import core_host

        return ops.default_backend(core_host().target(target_name).name)
    return ops.fallback_backend()


def _cpu_hint(ops: OpsHost) -> str:
    """How to calibrate this machine's CPU instead, where a backend for it is installed."""
    cpu = [b for b in ops.values("backends") if getattr(b, "targets", ())]
    if not cpu:
        return ""
    backend = cpu[0]
    return (
        f"; to calibrate this machine's CPU instead: tensorforge calibrate --target {backend.targets[0]} "
        f"(backend {backend.name})"
    )


def _attach_estimate(core: PluginHost, cal: Calibration) -> Calibration:
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
def calibrate(core: PluginHost, target_name: str | None, backend: str | None, device_index: int, as_json: bool) -> None:
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

    ops = hosts.ops_host(core)
    hosts.warn_plugins(core, ops, lambda line: click.echo(line, err=True))
    require_writable_home()  # before the probes run, not when their result is stored
    backend = _calibration_backend(ops, target_name, backend)
    try:
        session = ops.backend(backend).open(device_index)
    except Unavailable as exc:
        hint = _cpu_hint(ops) if getattr(ops.backend(backend), "fallback", False) else ""
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


def _print_calibration(cal: Calibration) -> None:
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
    if cal.evidence is not None:  # judged probes: spread and contention (calibrate/probe_evidence.py)
        lines.append(f"  evidence: {cal.evidence.verdict}" + ("" if cal.evidence.sufficient else ", stored so"))
        lines += [f"    {reason}" for reason in cal.evidence.reasons]
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
