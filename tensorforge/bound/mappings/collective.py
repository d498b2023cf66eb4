"""Collectives on a system's links: nothing to tile, one bound per operation (collectives.py).

The link term is the calibrated curve where the probes measured this operation over this many
ranks, else the datasheet links; the choice is recorded as the operator's ceiling origin. The
compute term is the reduction's additions on the vector units (never the bottleneck on today's
hardware, but part of the bound).
"""

from tensorforge.bound.mappings.base import EXHAUSTIVE, Machine, MappingChoice, MappingStrategy, Residency
from tensorforge.workloads.collectives import (
    CollectiveProblem,
    analytical_seconds,
    bus_factor,
    calibrated_for,
    resolve_ranks,
)
from tensorforge.workloads.precision import VECTOR_MODE


class CollectiveMapping(MappingStrategy):
    name = "collective"
    problem_types = (CollectiveProblem,)
    # the links move every byte whatever the cache holds: warm and cold are the same bound
    models_warm = True

    def explore(self, p: CollectiveProblem, machine: Machine, residency: Residency) -> MappingChoice:
        n = resolve_ranks(p, machine.devices)  # >= 2, or a one-line refusal
        mode = p.math_mode if p.math_mode in machine.compute else VECTOR_MODE
        # p.flops assumes 2 ranks when ranks=0 (resolved only here): scale to the real count
        flops = p.flops if p.ranks else p.flops * 2 * (n - 1) / n
        compute_s = flops / machine.compute[mode]
        latency, transfer, tier, traffic = analytical_seconds(p, machine.interconnect, machine.devices)
        notes = [
            f"{t.tier}: {t.formula} with k={t.groups}, g={t.ranks_per_group} -> {t.bytes_per_device:.6g} B per device"
            for t in traffic
        ]
        origin, link_s = "datasheet", latency + transfer
        calibrated = calibrated_for(p, n, machine.collectives)
        if calibrated is not None:
            origin, tier = "calibrated", f"{tier} (calibrated {p.op}/{n})"
            link_s = calibrated.seconds(p.bytes)
            swept = calibrated.points and calibrated.points[0][0] <= p.bytes <= calibrated.points[-1][0]
            notes.append(
                f"calibrated: max(floor {calibrated.floor_s:.4g} s, {calibrated.interpolation} between the "
                f"swept sizes around S {calibrated.envelope(p.bytes):.4g} s)"
                if swept
                else f"calibrated: max(floor {calibrated.floor_s:.4g} s, {calibrated.latency_s:.4g} s + "
                f"{bus_factor(p.op, n):.4g} x S / {calibrated.bus_bytes_per_s:.6g} B/s)"
            )
        elif machine.collectives:
            stride = f" (stride {p.stride})" if p.stride > 1 else ""
            notes.append(f"no calibrated curve for {p.op} over {n} ranks{stride}: datasheet links")
        return MappingChoice(
            strategy=self.name,
            tile={},
            split=1,
            tiles=n,
            concurrent=n,
            waves=1,
            traffic={t.tier: t.bytes_per_device for t in traffic},
            compute_s=compute_s,
            memory_s=link_s,
            memory_level=tier,
            latency_s=max(compute_s, link_s),
            bottleneck="compute" if compute_s > link_s else "interconnect",
            candidates=1,
            notes=tuple(notes),
            search=EXHAUSTIVE,
            space=1,
            origin=origin,
        )
