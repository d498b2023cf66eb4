"""The summary's lines for a system of several devices: the calibrated collective curves, what
the ranks ran under (communication library, its settings, the links), and the per-operator view
with its bound checks (where a backend measured operators)."""

from tensorforge.api import percent, seconds, si, table
from tensorforge_measure.capture.sections.calibrated import Calibrated
from tensorforge_measure.capture.sections.comparison import Comparison
from tensorforge_measure.capture.sections.measured import Measured

SETTINGS_SHOWN = ("NCCL_NVLS_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_P2P_DISABLE")


def collective_lines(cal: Calibrated) -> list[str]:
    curves = cal.ceilings.collectives or {}
    if not curves:
        return []
    # captures from before the envelope hold curves without swept points: say what they used
    ways = sorted({c.interpolation for c in curves.values() if c.points})
    how = {"chord": "the chord", "step": "the smaller"}
    rule = (
        f"max(floor, between the two swept sizes around S {' or '.join(how[w] for w in ways)}) inside the "
        "sweep, max(floor, alpha + S x factor / beta) beyond it"
        if ways
        else "max(floor, alpha + S x factor / beta)"
    )
    lines = [f"            collectives (bus bandwidth beta, latency alpha, floor; bound = {rule}):"]
    for key, c in sorted(curves.items()):
        eager = f"; eager small call, host-bound {seconds(c.eager_floor_s)}" if c.eager_floor_s else ""
        lines.append(
            f"              {key}: beta {si(c.bus_bytes_per_s, 'B/s')}, alpha {seconds(c.latency_s)}, "
            f"floor {seconds(c.floor_s)} (device time; swept {c.min_bytes} B to {c.max_bytes} B{eager})"
        )
    return lines


def system_lines(measured: Measured) -> list[str]:
    details = measured.device.details
    if "world_size" not in details:
        return []
    libs = details.get("libraries") or {}
    settings = details.get("settings") or {}
    shown = ", ".join(f"{k}={settings.get(k) if settings.get(k) is not None else 'unset'}" for k in SETTINGS_SHOWN)
    library = " ".join(filter(None, (libs.get("process_group"), libs.get("nccl"))))
    lines = [
        f"            {details['world_size']} ranks via {details.get('launcher')}; "
        f"{library}, torch {libs.get('torch')}; {shown}"
    ]
    topo = details.get("topology") or {}
    if topo.get("available"):
        lines.append(
            "            links (nvidia-smi topo -m): "
            + " | ".join(line.strip() for line in topo["text"].splitlines()[:3] if line.strip())
        )
    return lines


def operator_lines(comp: Comparison | None) -> list[str]:
    lines: list[str] = []
    for name, row in sorted((comp.workloads if comp else {}).items()):
        ops = row.operators
        # a window of several ranks only: one device's per-operator view is in `tensorforge report`
        if ops is None or not ops.available or not any(o.fastest_rank_s is not None for o in ops.operators or ()):
            continue
        rows = [
            [
                o.operator,
                o.count,
                seconds(o.predicted_calibrated_s) if o.predicted_calibrated_s else "-",
                seconds(o.measured_s) if o.measured_s is not None else "-",
                seconds(o.fastest_rank_s) if o.fastest_rank_s is not None else "-",
                percent(o.ape_calibrated),
                o.bottleneck,
                o.bound_check.verdict if not o.bound_check.verdict.startswith("no verdict") else "no verdict",
            ]
            for o in ops.operators or ()
        ]
        lines += [
            "",
            f"per operator: {name}  ({ops.mode} operator window; coverage "
            f"{percent(ops.coverage)} of the slowest rank's iteration)",
            table(
                [
                    "operator",
                    "x",
                    "calibrated bound",
                    "MEASURED slowest rank",
                    "fastest rank",
                    "APE cal",
                    "bottleneck*",
                    "bound check",
                ],
                rows,
            ),
        ]
    if lines and comp is not None:
        violations = comp.operator_bound_violations
        lines.append(
            f"OPERATOR BOUND VIOLATIONS: {', '.join(violations)}" if violations else "operator bound violations: none"
        )
    return lines
