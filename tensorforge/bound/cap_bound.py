"""PREDICTED: the sustained regime's bound at the power cap, from the rates the sustained matmul
probe ran at under the cap (a CALIBRATED energy per FLOP at the cap), for every call's duty cycle.

Why: in the sustained regime every call follows an L2 flush (the workloads' timings and the
sustained probe alike), and the cap limits the power averaged over call and flush. Per period,

    P_s * (t + t_f) + e * FLOP + E_f  <=  P_cap * (t + t_f)
    =>  t  >=  (e * FLOP + E_f) / (P_cap - P_s) - t_f

with t the call, t_f and E_f the flush's time and dynamic energy, e the energy per FLOP at the cap.
Each size n of the sustained probe ran at the cap at its fastest sample t_n, which gives its e
(`cap_joules_per_flop`); on the H200 the three sizes' e agree to 0.3-7% in a session (18
calibrations), where their rates differ by ~5% (a 4096^3 call is short against its flush, so its
duty cycle is lower and its clock higher: the old rule held every shape to that faster rate, or,
for shorter calls, to the burst ceiling). With e at its lowest over the sizes, a probe-sized call
gets exactly the probe's time, whatever P_cap and P_s are (they cancel); a shorter call gets the
flush's credit and a longer one none.

Which figures: P_cap the enforced limit (the probe ran ~1 s at the cap, the average the cap
regulates to) and P_s the energy probes' fitted static power; for a probe-sized call they cancel,
and over 18 H200 calibrations the sizes' e agreed best with these (the sound-side ends, the
peak probe window's power and P_s's low end, spread them wider and moved no bound across the
measurement). What makes it a bound (an upper bound on the rate) is the LOWEST e the sizes gave,
less `CAP_MARGIN` = 1%: one size's e repeats to 0.9-1.4% (one standard deviation) at n = 8192 and
16384 over those calibrations (probe data alone, docs/energy.md "The power cap from the sustained
probes"); a shape the square probes do not resemble can sit below the lowest of them by about that.
A rule from the mechanism and the probes, not a proof: nothing here bounds the energy per FLOP of
an arbitrary shape at the cap. Every operator's FLOPs in a calibrated mode count, memory-bound ones
too: their math costs energy whatever limits their time, and at least the probe's per FLOP (a
GEMV or an elementwise kernel moves more bytes per FLOP than a large GEMM, and CUDA-core math costs
~30x the tensor cores' on the H200); a tf32 4096^3 GEMM the bound calls memory-bound (its tile's
traffic) would otherwise have gone unbounded at the cap (H200, 2026-12-01).

Pure arithmetic: no device, no torch.
"""

from collections.abc import Iterable, Mapping

import attrs

CAP_MARGIN = 0.01


@attrs.frozen(kw_only=True)
class CapCalibration:
    """What the bound needs from one calibration: per math mode the lowest energy per FLOP at the
    cap over the sustained probe's sizes (less CAP_MARGIN), and the power and flush figures it was
    derived with (the same ones the bound uses, so they cancel for a probe-sized call)."""

    joules_per_flop: Mapping[str, float]  # per math mode, lowest over the probe sizes, less the margin
    per_size: Mapping[str, tuple[tuple[int, float], ...]]  # per mode: (n, e at the cap) for every size
    power_w: float  # the power the cap holds the device to on average (the enforced limit)
    static_w: float  # the static power (fitted)
    flush_s: float  # one L2 flush's time in the sustained regime
    flush_j: float  # its dynamic energy (low end)

    @property
    def headroom_w(self) -> float:
        return self.power_w - self.static_w


def cap_joules_per_flop(
    points: Iterable[tuple[float, float]], power_w: float, static_w: float, flush_s: float, flush_j: float
) -> list[tuple[int, float]]:
    """(n, e) for each (n, FLOP/s) of a square n^3 probe timed at the cap after a flush each call."""
    out = []
    for n, rate in points:
        flops = 2.0 * float(n) ** 3
        if rate <= 0:
            continue
        call_s = flops / float(rate)
        out.append((int(n), ((power_w - static_w) * (call_s + flush_s) - flush_j) / flops))
    return out


def cap_calibration(
    probe_points: Mapping[str, Iterable[tuple[float, float]]],
    power_w: float | None,
    static_w: float,
    flush_s: float,
    flush_j: float,
    margin: float = CAP_MARGIN,
) -> CapCalibration | None:
    """None where there is no power figure or no headroom above the static power."""
    if power_w is None or not power_w > static_w:
        return None
    per_size = {
        mode: tuple(cap_joules_per_flop(points, power_w, static_w, flush_s, flush_j))
        for mode, points in probe_points.items()
    }
    lowest = {mode: min(e for _, e in sizes) * (1.0 - margin) for mode, sizes in per_size.items() if sizes}
    lowest = {mode: e for mode, e in lowest.items() if e > 0}
    if not lowest:
        return None
    return CapCalibration(
        joules_per_flop=lowest,
        per_size={m: s for m, s in per_size.items() if s},
        power_w=float(power_w),
        static_w=float(static_w),
        flush_s=float(flush_s),
        flush_j=float(flush_j),
    )


def cap_bound_s(compute_flops: Mapping[str, float], cap: CapCalibration) -> float | None:
    """The least time one call (after its flush) can take under the cap; None where none of the
    work's compute-bound FLOPs is in a mode the probe calibrated (nothing to bound it with)."""
    energy = sum(cap.joules_per_flop[m] * f for m, f in compute_flops.items() if m in cap.joules_per_flop and f > 0)
    if energy <= 0:
        return None
    return max(0.0, (energy + cap.flush_j) / cap.headroom_w - cap.flush_s)
