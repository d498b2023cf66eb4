"""PREDICTED energy: a floor and an estimate of the joules one execution of a workload costs, and
the time the device's power limit allows it, from energy coefficients calibrated on the device.

The model (docs/energy.md): a device draws a static power P_s while it runs anything, plus a
dynamic energy per unit of work: e_m joules per FLOP in math mode m and e_b joules per byte moved
to or from DRAM. One execution that takes t seconds costs

    E = P_s * t + sum_m e_m * FLOP_m + e_b * B_dram

Two claims come out of it, never confused:

* the FLOOR (sound: no measurement may come in below it) uses the lower end of every coefficient's
  uncertainty, the lower bound's time (nothing runs faster), and the DRAM bytes no cache can hold
  (compulsory bytes beyond the last-level cache: executions run back to back, so a working set that
  fits the cache may never touch DRAM). A math mode without a calibrated coefficient adds nothing
  to the floor.
* the ESTIMATE (expected): where the calibration measured the queued loop's host time per kernel,
  `queued_estimate` (the window's physics: the slower of device and host launches, streamed bytes
  past the cache, a busy floor for operators that do real work, the capped power over the capped
  time where the window runs at the cap); otherwise, as below: the fitted coefficients and the estimate's time (eager: kernels
  launched one by one from Python), stretched to the time the power limit allows where the work
  would draw more than the limit. Its dynamic energy is at least the device's BUSY power (above
  P_s, measured by an L2-resident elementwise probe) over the estimate's kernel time: a device
  running short kernels at full clock draws far more than their FLOPs and DRAM bytes account
  for (on the H200 small convolutions drew 410-620 W where those terms gave ~200 W).

The power limit: a device that would draw P_s + dynamic energy / t > P_limit is slowed until it
does not, so t >= dynamic energy / (P_limit - P_s); for a large GEMM it is the compute ceiling the
limit allows, (P_limit - P_s) / e_m FLOP/s. It is an upper bound on the rate only with the
LOWEST P_s and e_m and the HIGHEST power drawn at the cap: the floor's lower ends (fit - 2
standard errors, less 3%) and the highest of the enforced limit and the mean power the probe
windows were seen to draw (`peak_power_w`, from the counter; `bound_power_w`). Why not the
limit alone: the cap regulates a ~1 s average, and in the first second of load the board draws
above it (the H200 read 703-709 W in 0.3 s probe windows and up to 747 W in workload windows at
an enforced 700 W, the 1 s averaged reading 687-698 W over the same windows), so a bound on the
limit came out above gemm_batched_fp16's sustained measurement (docs/energy.md). Why not the rate square GEMMs sustained at the
cap, hot (capped_rate_flop_s, recorded by the calibration): on the H200 those windows, after
seconds of load, ran 4-9% slower than the workloads' own sustained timings (about a second of
load each), so a bound built on them came out above four of five large GEMMs' measurements
(docs/energy.md). They stay in the record as context.

Pure arithmetic on the Core's prediction: no device, no torch.
"""

from collections.abc import Mapping

import attrs

LABEL = "PREDICTED energy"


@attrs.frozen(kw_only=True)
class PowerFigures:
    """Power figures a target declares (its datasheet), each with a source in the target's
    `sources` ('power.tdp_w', 'power.power_limit_w'). Context and a fallback for the power limit
    where no device reported its own; never a measurement."""

    tdp_w: float
    power_limit_w: float | None = None  # the default enforced limit, where it differs from the TDP
    power_limit_min_w: float | None = None
    power_limit_max_w: float | None = None
    # what the board draws doing nothing, and the energy per FLOP above it per math mode: a
    # board whose limit is below (idle + rate x J/FLOP) cannot sustain the rate (power_capped)
    idle_w: float | None = None
    joules_per_flop: Mapping[str, float] = attrs.field(factory=dict)
    # the energy of one byte moved to or from DRAM (the energy model's e_b; energy.coefficients):
    # `predict`'s energy figures only, never the power cap
    joules_per_dram_byte: float | None = None
    # the call time from which the board's power limit slows a call (its controller acts on a
    # running average: shorter calls run at the boost clock); None: the default of
    # tensorforge.estimate.power (read off a 70 W T4). A large board averages over longer (an H200
    # drew above its 700 W limit for the first ~second of load)
    limit_acts_s: float | None = None

    @property
    def limit_w(self) -> float:
        return self.power_limit_w if self.power_limit_w is not None else self.tdp_w


def power_capped(rate: float, mode: str, figures: PowerFigures | None) -> float:
    """The compute rate of `mode` the board's power limit allows: (limit - idle) / J per FLOP,
    where the target declares the mode's energy per FLOP; else the rate as it is. An estimate
    figure, never the bound's: the declared energy is an estimate too."""
    if figures is None or not figures.joules_per_flop.get(mode):
        return rate
    budget = figures.limit_w - (figures.idle_w or 0.0)
    return min(rate, max(budget, 0.0) / figures.joules_per_flop[mode]) if budget > 0 else rate


def validate_power(figures: PowerFigures, where: str) -> None:
    """Raise ValueError naming the first power figure that is not a positive number in order."""
    for mode, value in figures.joules_per_flop.items():
        if not (isinstance(value, int | float) and 0 < value < 1e-9):
            raise ValueError(f"{where}: power.joules_per_flop.{mode} must be in (0, 1e-9) J, got {value!r}")
    acts = figures.limit_acts_s
    if acts is not None and not (isinstance(acts, int | float) and 0 < acts <= 60):
        raise ValueError(f"{where}: power.limit_acts_s must be in (0, 60] seconds, got {acts!r}")
    byte_j = figures.joules_per_dram_byte
    if byte_j is not None and not (isinstance(byte_j, int | float) and 0 < byte_j < 1e-8):
        raise ValueError(f"{where}: power.joules_per_dram_byte must be in (0, 1e-8) J, got {byte_j!r}")
    if figures.idle_w is not None and not (0 < figures.idle_w < figures.tdp_w):
        raise ValueError(f"{where}: power.idle_w must be > 0 and below tdp_w, got {figures.idle_w!r}")
    for name in ("tdp_w", "power_limit_w", "power_limit_min_w", "power_limit_max_w"):
        value = getattr(figures, name)
        if value is not None and not (isinstance(value, int | float) and value > 0 and value != float("inf")):
            raise ValueError(f"{where}: power.{name} must be a positive number of watts, got {value!r}")
    low, high = figures.power_limit_min_w, figures.power_limit_max_w
    if low is not None and high is not None and low > high:
        raise ValueError(f"{where}: power.power_limit_min_w ({low:g}) is above power_limit_max_w ({high:g})")


@attrs.frozen(kw_only=True)
class EnergyCoefficients:
    """Calibrated energy coefficients of one device: fitted values and the lower ends the floor
    uses (fit minus its uncertainty, never below zero)."""

    static_w: float  # P_s fitted under load (clocks up)
    static_w_low: float  # for the floor: min(idle power, fitted P_s's lower end)
    idle_w: float | None  # measured with nothing running
    joules_per_flop: Mapping[str, float]  # per math mode
    joules_per_flop_low: Mapping[str, float]
    joules_per_dram_byte: float
    joules_per_dram_byte_low: float
    power_limit_w: float | None  # the enforced limit the device reported (or a target's figure)
    power_limit_source: str = ""
    source: str = ""  # where the coefficients come from (device, fingerprint, when)
    # per math mode, the math rate (FLOP/s) a square GEMM sustained at the power cap, hot, after
    # seconds of load: context only (module docstring: why it bounds nothing); empty: not measured
    capped_rate_flop_s: Mapping[str, float] = attrs.field(factory=dict)
    capped_power_w: float | None = None  # the counter's mean power in those windows
    # power above P_s of kernels back to back at full clock on L2-resident data (the L2-resident
    # bf16 GEMM window): the queued estimate's busy floor (queued_estimate); None: not measured
    busy_w: float | None = None
    # the highest mean power (counter) of any loaded probe window: what the capped device is seen
    # to draw over a fraction of a second, above the limit while the cap's ~1 s average catches
    # up; None: not measured (the enforced limit alone stands)
    peak_power_w: float | None = None
    # power above P_s of a CUDA graph of mid-size GEMMs streaming from DRAM, meant to sit below the
    # cap (on the H200 it reached it): context; the queued estimate's busy power only where busy_w
    # was not measured; None: not measured (newer calibrations: the depthwise window took
    # its place)
    busy_below_cap_w: float | None = None
    # the queued eager loop's host time per launch (the launch-bound probe window: seconds / calls);
    # None: not measured (the estimate's eager time stands in for the queued time)
    host_s_per_kernel: float | None = None
    # energy per FLOP of work on the VECTOR (CUDA-core) units, not the tensor cores: the depthwise
    # stencil probe window's power less P_s and its DRAM bytes x e_b, per FLOP. The
    # estimate charges it to operators that run there (`on_vector_units`); None: not measured
    # (their FLOPs keep their math mode's tensor-core coefficient)
    joules_per_vector_flop: float | None = None
    # per math mode, the compute ceiling the calibration's SUSTAINED probe measured (FLOP/s): with
    # capped_rate_flop_s, how much slower a compute-bound operator runs in a capped energy window
    # than on the sustained ceilings (capped_time); not a record field: the caller fills it from the
    # calibration's sustained ceilings; empty: the sustained estimate's time stands
    sustained_rate_flop_s: Mapping[str, float] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class EnergyTerms:
    """One energy figure split into its terms (J): static power x time, math, DRAM traffic."""

    static_j: float
    compute_j: float
    dram_j: float
    time_s: float  # the time the static term used
    dram_bytes: float
    # the estimate only: what the device's busy power over the kernels' time adds beyond the
    # FLOP and DRAM terms (0 where those already exceed it, and always in the floor)
    busy_j: float = 0.0

    @property
    def total_j(self) -> float:
        return self.static_j + self.compute_j + self.dram_j + self.busy_j


@attrs.frozen(kw_only=True)
class OperatorEnergy:
    name: str
    floor_j: float  # x count, at the operator's share of the bound


@attrs.frozen(kw_only=True)
class WorkloadEnergy:
    """One workload's predicted energy per execution: the floor and, where the estimate's time
    exists, the estimate; and the power-limited bound on its sustained time."""

    name: str
    floor_j: float
    floor_terms: EnergyTerms
    estimate_j: float | None
    estimate_terms: EnergyTerms | None
    estimate_note: str | None  # why there is no estimate, or what it borrowed
    power_limited_bound_s: float | None  # sound: dynamic floor energy / (P_limit - P_s low)
    power_limited: bool  # the estimate's work would draw more than the limit at its own time
    uncalibrated_modes: tuple[str, ...]  # math modes with no coefficient (0 J/FLOP in the floor)
    operators: tuple[OperatorEnergy, ...]
    # the estimate of one execution in a CUDA-graph window (queued_estimate with host=False: the
    # device's pace, no host term); None where the queued model does not apply
    device_estimate_terms: EnergyTerms | None = None

    @property
    def device_estimate_j(self) -> float | None:
        return self.device_estimate_terms.total_j if self.device_estimate_terms else None


def window_time(estimate) -> float | None:
    """The estimate's device time of one execution in an energy window, which runs executions back
    to back without the L2 flush every timed call has: WorkloadEstimate.window_s (the flushed
    device time less the calibrated warm saving, tensorforge/estimate/warm.py). Read from the
    fields, so an estimate read back from a capture's JSON works too, and one from before the
    warm saving gets the flushed device time; None without an estimate."""
    device = getattr(estimate, "device_s", None) if estimate is not None else None
    if device is None:
        return None
    from tensorforge.estimate.results import window_seconds

    saving = getattr(estimate, "warm_saving_s", 0.0) or 0.0
    return window_seconds(device, getattr(estimate, "bound_s", 0.0) or 0.0, saving)


def dram_bytes_floor(compulsory_bytes: float, cache_bytes: float | None) -> float:
    """DRAM bytes one execution must move when executions run back to back: whatever of the
    compulsory traffic does not fit in the last-level cache."""
    return max(0.0, float(compulsory_bytes) - float(cache_bytes or 0.0))


def _dynamic(flops_by_mode: Mapping[str, float], per_flop: Mapping[str, float], byte_j: float, dram: float):
    compute = sum(per_flop.get(mode, 0.0) * flops for mode, flops in flops_by_mode.items())
    return compute, byte_j * dram


def flops_by_mode(workload) -> dict[str, float]:
    """A workload prediction's FLOPs summed per math mode of its operators."""
    out: dict[str, float] = {}
    for op in workload.operators:
        out[op.math_mode] = out.get(op.math_mode, 0.0) + float(op.flops)
    return out


def bound_power_w(coefficients: EnergyCoefficients) -> float | None:
    """The power the power-limited BOUND lets the device draw: the highest of the enforced limit
    and the probes' peak window power (module docstring: the limit alone was unsound)."""
    c = coefficients
    seen = [w for w in (c.power_limit_w, c.peak_power_w) if w is not None]
    return max(seen) if seen else None


def power_limited_time(dynamic_j: float, static_w: float, limit_w: float | None) -> float | None:
    """The least time the work can take without drawing more than the limit on average."""
    if limit_w is None or not limit_w > static_w:
        return None
    return dynamic_j / (limit_w - static_w)


def workload_energy(
    workload,
    coefficients: EnergyCoefficients,
    cache_bytes: float | None,
    estimate_s: float | None = None,
    device_s: float | None = None,
    sustained_device_s: float | None = None,
    sustained_workload=None,
) -> WorkloadEnergy:
    """The floor and the estimate of one execution of a predicted workload (a WorkloadPrediction
    of the calibrated bound). `estimate_s`: the estimate's time (None: no estimate); `device_s`:
    the estimate's time the device spends in kernels (the busy term, module docstring);
    `sustained_device_s`: the same on the sustained (power-capped) ceilings (queued_estimate);
    `sustained_workload`: the workload's prediction on those ceilings (its operators' sustained
    times: capped_time)."""
    c = coefficients
    modes = flops_by_mode(workload)
    dram = dram_bytes_floor(workload.compulsory_bytes, cache_bytes)
    missing = tuple(sorted(m for m, f in modes.items() if f > 0 and m not in c.joules_per_flop_low))
    compute_low, dram_low = _dynamic(modes, c.joules_per_flop_low, c.joules_per_dram_byte_low, dram)
    limited = power_limited_time(compute_low + dram_low, c.static_w_low, bound_power_w(c))
    floor_time = max(float(workload.latency_s), limited or 0.0)
    floor_terms = EnergyTerms(
        static_j=c.static_w_low * floor_time, compute_j=compute_low, dram_j=dram_low, time_s=floor_time, dram_bytes=dram
    )
    estimate_terms, note, power_limited = None, None, False
    device_terms: EnergyTerms | None = None
    if estimate_s is None:
        note = "no estimate of the time"
    else:
        per_flop = dict(c.joules_per_flop)
        if missing and c.joules_per_flop:
            # the most expensive calibrated mode stands in, and the note says so
            borrowed = max(c.joules_per_flop.values())
            per_flop.update({m: borrowed for m in missing})
            note = f"{', '.join(missing)}: J/FLOP borrowed from the costliest calibrated mode"
        if c.host_s_per_kernel is not None and device_s:
            estimate_terms, power_limited = queued_estimate(
                workload, c, per_flop, cache_bytes, float(device_s), sustained_device_s, sustained_workload
            )
            # the same execution replayed as a CUDA graph: the device's pace alone
            device_terms, _ = queued_estimate(
                workload, c, per_flop, cache_bytes, float(device_s), sustained_device_s, sustained_workload, host=False
            )
        else:  # a calibration without the queued loop's host time: the eager-time model
            compute, dram_j = _dynamic(modes, per_flop, c.joules_per_dram_byte, dram)
            time_s = float(estimate_s)
            # kernels that run at full clock without much math or DRAM traffic (short convolutions,
            # elementwise and normalisation kernels) still draw the busy power while they run
            busy = busy_energy(workload, c, per_flop, cache_bytes, min(float(device_s), time_s)) if device_s else 0.0
            at_limit = power_limited_time(compute + dram_j + busy, c.static_w, c.power_limit_w)
            if at_limit is not None and at_limit > time_s:
                time_s, power_limited = at_limit, True
            estimate_terms = EnergyTerms(
                static_j=c.static_w * time_s,
                compute_j=compute,
                dram_j=dram_j,
                time_s=time_s,
                dram_bytes=dram,
                busy_j=busy,
            )
    operators = tuple(
        OperatorEnergy(
            name=op.name,
            floor_j=c.static_w_low * float(op.latency_s)
            + c.joules_per_flop_low.get(op.math_mode, 0.0) * float(op.flops)
            + c.joules_per_dram_byte_low * dram_bytes_floor(op.compulsory_bytes, cache_bytes),
        )
        for op in workload.operators
    )
    return WorkloadEnergy(
        name=workload.name,
        floor_j=floor_terms.total_j,
        floor_terms=floor_terms,
        estimate_j=estimate_terms.total_j if estimate_terms else None,
        estimate_terms=estimate_terms,
        estimate_note=note,
        power_limited_bound_s=limited,
        power_limited=power_limited,
        uncalibrated_modes=missing,
        operators=operators,
        device_estimate_terms=device_terms,
    )


def queued_time(device_s: float, calls: int, host_s_per_kernel: float) -> float:
    """One execution's time in a queued eager loop (the energy window's): host and device overlap,
    so the slower of the two sets the pace: the device's kernel time, or the host's launches
    (framework calls x the host time per call the launch-bound probe window measured, in the same
    conditions: the queue, the events, the power sampler's thread; its calls launch one kernel
    each, so `host_s_per_kernel` is per call). A PREDICTED time: never the workload's measured
    window."""
    return max(float(device_s), max(1, int(calls)) * float(host_s_per_kernel))


def host_calls(estimate) -> int | None:
    """The framework calls one execution makes (WorkloadEstimate.calls), its kernels where an
    estimate read back from an older capture has no count of calls. Why calls and not kernels: a
    split-K GEMM launches its reduction from inside the same library call, at no host dispatch of
    its own; on an H200 (2026-12-01) the skinny decode GEMM (split-K 2) was estimated host-paced at 2 x
    22.5 us where its eager window ran 34.7 us a call, device-paced."""
    if estimate is None:
        return None
    calls = getattr(estimate, "calls", 0) or getattr(estimate, "kernels", None)
    return int(calls) if calls else None


def streamed_fraction(compulsory_bytes: float, cache_bytes: float | None) -> float:
    """The fraction of its compulsory bytes an execution moves to or from DRAM when executions
    run back to back (the estimate; the floor keeps compulsory - cache): a working set that fits
    the cache stays there (0); one larger than the cache, swept in the same order every
    execution, evicts each line before its reuse under LRU-like replacement, so all of it
    streams (1). Charging only "compulsory - cache" made DRAM-bound decode GEMMs (weights 2.2x
    L2) look half cached on the H200."""
    return 1.0 if float(compulsory_bytes) > float(cache_bytes or 0.0) else 0.0


# an operator draws the busy power only where it does real work: its bound's time is at least this
# share of its estimated kernel time. Below it the estimate is launch latency and fixed overhead of
# kernels too small to fill the device (a decode's norms, rope and residual adds on one token per
# sequence: on the H200 their windows' dynamic energy matched FLOPs and DRAM bytes alone, within
# 1-3%, where a busy floor over their ~2 us kernels over-charged the decodes by 10-20%)
BUSY_WORK_SHARE = 0.1
# problem types whose math runs on the vector units whatever the mapping (on_vector_units)
VECTOR_PROBLEMS = frozenset({"StreamProblem"})
# the workload runs at the power cap where operators whose math rate exceeds the capped probes'
# rate take at least this share of its kernel time (cap_bound_share)
CAP_BOUND_SHARE = 0.5


def on_vector_units(op) -> bool:
    """Whether an operator's math runs on the vector (CUDA-core) units, not the tensor cores: the
    bound mapped it there (a `vector-*` strategy: a depthwise convolution's one channel per group,
    which no tensor-core tile fills), or it is elementwise or reduction work (a StreamProblem:
    norms, activations, residual adds). Their FLOPs cost the vector units' energy per FLOP
    (`joules_per_vector_flop`), not the tensor cores': on the H200 conv_depthwise_3x3 drew 577-648 W
    in six sessions where its DRAM bytes and bf16 tensor-core FLOPs accounted for ~360 W."""
    strategy = str(getattr(getattr(op, "mapping", None), "strategy", "") or "")
    return strategy.startswith("vector") or getattr(op, "problem_type", "") in VECTOR_PROBLEMS


def op_math_j(op, per_flop: Mapping[str, float], vector_flop_j: float | None) -> float:
    """An operator's math energy: its FLOPs x the vector units' energy per FLOP where it runs there
    and that was measured (`on_vector_units`), else x its math mode's (tensor-core) coefficient."""
    if vector_flop_j is not None and on_vector_units(op):
        return float(vector_flop_j) * float(op.flops)
    return per_flop.get(op.math_mode, 0.0) * float(op.flops)


def does_work(op, estimate_s: float) -> bool:
    """Whether an operator's kernels keep the device busy (BUSY_WORK_SHARE): compute-bound by the
    bound, and its bound's time at least that share of its estimated time."""
    if getattr(op, "bottleneck", "compute") != "compute":
        return False
    return estimate_s <= 0 or float(op.latency_s) >= BUSY_WORK_SHARE * estimate_s


def cap_bound_share(workload, coefficients: EnergyCoefficients, device_s: float) -> float:
    """The share of the kernel time spent in operators whose math rate at the estimate's (burst)
    time exceeds the rate the capped probe windows sustained at the power cap for their mode
    (`capped_rate_flop_s`): those the cap slows. Why per operator: a prefill's GEMMs run above that
    rate while its norms, rope and activations between them pull the workload's mean power below
    the limit in the whole-workload test, yet its windows sat at the cap (H200: 692-735 W in five
    sessions, predicted uncapped in four). 0 where the capped rates were not measured."""
    c = coefficients
    shares = _estimate_shares(workload)
    total = sum(shares.values())
    if not c.capped_rate_flop_s or total <= 0 or device_s <= 0:
        return 0.0
    bound = 0.0
    for op in workload.operators:
        t = device_s * shares.get(op.name, 0.0) / total
        rate = c.capped_rate_flop_s.get(op.math_mode)
        if t > 0 and rate and float(op.flops) / t > rate:
            bound += t
    return bound / device_s


def capped_time(
    workload, coefficients: EnergyCoefficients, sustained_device_s: float, sustained_workload=None
) -> float:
    """The kernel time of one execution in a capped energy window: the sustained estimate's, with
    each compute-bound operator's share slowed by (sustained ceiling / capped probes' rate) of its
    mode. Why: the energy window is a fraction of a second of queued load after the latency
    timings, the operating point of the capped probe windows (after 0.8 s of load), which ran
    8-9% (bf16, fp16) below the sustained probe's ceilings on the H200; the sustained estimate
    put the capped large GEMMs' windows 4-8% short in five sessions. Without the rates or the
    sustained operators: the sustained estimate's time."""
    c = coefficients
    shares = _estimate_shares(sustained_workload)
    total = sum(shares.values())
    if not (c.capped_rate_flop_s and c.sustained_rate_flop_s) or total <= 0:
        return float(sustained_device_s)
    out = 0.0
    for op in workload.operators:
        t = float(sustained_device_s) * shares.get(op.name, 0.0) / total
        ceiling, capped = c.sustained_rate_flop_s.get(op.math_mode), c.capped_rate_flop_s.get(op.math_mode)
        if getattr(op, "bottleneck", "compute") == "compute" and ceiling and capped:
            t *= max(1.0, ceiling / capped)
        out += t
    return out


def _estimate_shares(workload) -> dict[str, float]:
    estimate = getattr(workload, "estimate", None)
    return {o.name: float(o.estimate_s) for o in (getattr(estimate, "operators", None) or ())}


def queued_estimate(
    workload,
    coefficients: EnergyCoefficients,
    per_flop: Mapping[str, float],
    cache_bytes: float | None,
    device_s: float,
    sustained_device_s: float | None,
    sustained_workload=None,
    host: bool = True,
) -> tuple[EnergyTerms, bool]:
    """The ESTIMATE of one execution in the energy window's queued eager loop (every coefficient
    from the probe windows, none fitted to a scored workload; docs/energy.md):

    * time: `queued_time` (the device's kernel time or the host's launches, whichever is slower);
      `host=False`: the device's kernel time alone, for a window of CUDA-graph replays (one host
      call launches many executions' kernels, so the host never sets the pace);
    * static + activity (Wattchmen/AccelWattch-like): P_s x time, plus per operator its FLOPs x
      e_m (x `joules_per_vector_flop` where its math runs on the vector units: `op_math_j`) and its
      DRAM bytes (`streamed_fraction`) x e_b; an operator that keeps the device busy
      (`does_work`: compute-bound, not overhead-dominated) draws at least the BUSY power over its
      share of the kernel time: `busy_w`, the L2-resident GEMM window (H200: 525-540 W above P_s
      in the last two sessions, where small full-device convolutions drew 437-531 W above P_s
      over their traced kernel time); `busy_below_cap_w` (the graph window) only where busy_w
      was not measured: it reached the cap (743-747 W) and over-charged them;
    * the power cap: where static + activity power over the time would exceed the enforced limit
      (not the busy floor: on the H200 the L2-resident window itself read 706 W in one session, so
      P_s + busy_w alone crossed the limit and every working convolution came out capped, +27 to
      +45%), or cap-bound operators take at least CAP_BOUND_SHARE of the kernel time
      (`cap_bound_share`), the window runs at the cap: energy = the capped probe windows' mean
      power x `capped_time` (the sustained estimate with compute-bound operators at the capped
      rate); else the stretch to the limit. At the cap the board draws the cap's power, whatever
      the activity terms add up to (they are a capped-point fit), so no maximum with them.
      Uncapped, the busy floor may not lift the mean power above what the board draws at the cap
      (`_at_most_w`): the time stays, the busy term gives way.

    Returns the terms and whether the cap applied."""
    c = coefficients
    calls = host_calls(getattr(workload, "estimate", None)) or len(workload.operators) or 1
    time_s = queued_time(device_s, calls, c.host_s_per_kernel or 0.0) if host else float(device_s)
    busy_w = c.busy_w if c.busy_w is not None else (c.busy_below_cap_w or 0.0)
    shares = _estimate_shares(workload)
    total = sum(shares.values())
    stream = streamed_fraction(workload.compulsory_bytes, cache_bytes)
    compute = dram_j = busy = dram_bytes = 0.0
    for op in workload.operators:
        math = op_math_j(op, per_flop, c.joules_per_vector_flop)
        op_bytes = float(op.compulsory_bytes) * stream
        moved = c.joules_per_dram_byte * op_bytes
        share = shares.get(op.name, 0.0) / total if total > 0 else 1.0 / len(workload.operators)
        floor_w = busy_w if does_work(op, shares.get(op.name, 0.0)) else 0.0
        compute, dram_j, dram_bytes = compute + math, dram_j + moved, dram_bytes + op_bytes
        busy += max(0.0, floor_w * device_s * share - math - moved)
    dynamic = compute + dram_j + busy
    static_j = c.static_w * time_s
    limit = c.power_limit_w
    capped = limit is not None and time_s > 0 and c.static_w + (compute + dram_j) / time_s > limit
    capped = capped or (limit is not None and cap_bound_share(workload, c, device_s) >= CAP_BOUND_SHARE)
    if capped:
        if c.capped_power_w and sustained_device_s:
            at_cap = max(time_s, capped_time(workload, c, float(sustained_device_s), sustained_workload))
            # the cap's energy, split into the same terms: what the device draws beyond its FLOP
            # and DRAM terms at the cap is carried by the busy term (negative where the capped-point
            # activity terms add up to more than the cap's power: the cap wins)
            time_s, static_j = at_cap, c.static_w * at_cap
            busy = c.capped_power_w * at_cap - static_j - compute - dram_j
        else:
            capped_s = power_limited_time(dynamic, c.static_w, limit) or time_s
            time_s, static_j = max(time_s, capped_s), c.static_w * max(time_s, capped_s)
            busy = max(busy, float(limit) * time_s - static_j - compute - dram_j)  # type: ignore[arg-type]
    elif (at_most := _at_most_w(c)) is not None:
        busy = min(busy, max(0.0, at_most * time_s - static_j - compute - dram_j))
    terms = EnergyTerms(
        static_j=static_j, compute_j=compute, dram_j=dram_j, time_s=time_s, dram_bytes=dram_bytes, busy_j=busy
    )
    return terms, capped


def _at_most_w(c: EnergyCoefficients) -> float | None:
    """The mean power an uncapped estimate may not exceed: what the board draws at the cap (the
    capped probe windows' mean power, else the enforced limit). Why: the busy floor is not in the
    cap test (queued_estimate), so a window of short full-device kernels could come out drawing
    more than the cap lets any window draw; on an H200 (2026-12-01) conv_resnet50_3x3's graph
    window was estimated at 723 W against 692 W measured, the capped windows' 689 W."""
    return c.capped_power_w or c.power_limit_w


def busy_energy(
    workload, coefficients: EnergyCoefficients, per_flop: Mapping[str, float], cache_bytes, device_s: float
) -> float:
    """What the device's busy power adds to the estimate's FLOP and DRAM terms, operator by
    operator: each operator's kernels draw at least P_s + busy_w while they run, so its dynamic
    energy is at least busy_w x its kernel time. Per operator, not per workload: in a transformer
    the GEMMs' math is far above busy_w x their time, and that surplus must not hide the rope,
    softmax, norm and elementwise kernels between them, which draw the busy power with few FLOPs
    (on the H200 prefill cost ~1.2-1.6e-12 J per FLOP where the GEMM probes give ~7.6e-13).
    `device_s` (the estimate's kernel time) is split over the operators in proportion to their
    estimated device times; a workload without per-operator estimates is one operator."""
    c = coefficients
    if not c.busy_w or device_s <= 0:
        return 0.0
    estimate = getattr(workload, "estimate", None)
    shares = {o.name: float(o.estimate_s) for o in (getattr(estimate, "operators", None) or ())}
    total = sum(shares.values())
    ops = [op for op in workload.operators if op.name in shares] if total > 0 else []
    if not ops or len(ops) != len(workload.operators):
        compute, dram_j = _dynamic(
            flops_by_mode(workload),
            per_flop,
            c.joules_per_dram_byte,
            dram_bytes_floor(workload.compulsory_bytes, cache_bytes),
        )
        return max(0.0, c.busy_w * device_s - compute - dram_j)
    # each operator streams the workload's fraction of its bytes that the cache cannot hold: back
    # to back, a model whose weights exceed L2 evicts every layer's before it comes round again,
    # even where one layer's would fit (on the H200 charging per layer "bytes - L2" made the
    # decode GEMVs look L2-resident, 0 DRAM bytes, where they stream their weights)
    # (scaled so the operators' DRAM bytes add up to the workload's DRAM term)
    total_bytes = sum(float(op.compulsory_bytes) for op in ops)
    streamed = dram_bytes_floor(workload.compulsory_bytes, cache_bytes)
    stream = streamed / total_bytes if total_bytes > 0 else 0.0
    out = 0.0
    for op in ops:
        dram = float(op.compulsory_bytes) * stream
        dynamic = per_flop.get(op.math_mode, 0.0) * float(op.flops) + c.joules_per_dram_byte * dram
        out += max(0.0, c.busy_w * device_s * shares[op.name] / total - dynamic)
    return out


def power_limited_ceilings(coefficients: EnergyCoefficients) -> dict[str, float]:
    """Per math mode, the compute rate the power limit allows for pure math (FLOP/s), from the
    floor's coefficients (so an upper bound on the rate, as a ceiling must be)."""
    c = coefficients
    limit = bound_power_w(c)
    if limit is None or not limit > c.static_w_low:
        return {}
    return {m: (limit - c.static_w_low) / e for m, e in c.joules_per_flop_low.items() if e > 0}
