"""Energy in the capture, each part under its own label (docs/energy.md):

* MEASURED `EnergyMeasurement`: a workload's energy window (the device's counter, edge to edge,
  around a continuous run of N executions), with the power integration that cross-checks it and
  the host CPU's RAPL reading;
* CALIBRATED `EnergyCalibration`: the energy coefficients the probes fitted, per device
  fingerprint, with the points they came from;
* PREDICTED `EnergyPrediction`: per workload the floor (sound) and the estimate (expected);
* the comparison's `EnergyComparison`: measured against floor and estimate.
"""

from collections.abc import Mapping

import attrs

from tensorforge_measure.capture.fields import field, measured_values, optional


@attrs.frozen(kw_only=True)
class CounterRecord:
    """What is known about the energy counter the window read."""

    source: str = field("the counter, e.g. 'nvmlDeviceGetTotalEnergyConsumption'")
    unit_j: float = field("the counter's unit (its resolution by the API)", "J")
    smallest_step_j: float | None = field("smallest increase seen between two of its updates", "J")
    update_interval_s: float | None = field(
        "median time between its updates, as seen between chunks (to within one chunk)", "s"
    )
    updates: int = field("updates seen inside the window", "count")
    edges_from: str | None = optional(
        'how the edges were timed: "the counter\'s update grid: ..." (period, phase, periods apart), '
        "'counter polled every few ms on the power sampler's thread' or 'counter reads between steps' "
        "(to within one step)"
    )
    edge_resolution_s: float | None = optional(
        "how precisely each edge's time is known: on the counter's update grid, the standard error of the "
        "grid's fitted phase; with polled edges, half the time between the two polls that bracket an update, "
        "the larger of the two edges'",
        "s",
    )
    grid_period_s: float | None = optional(
        "the counter's update period, measured at idle, on whose grid the edges sit (the window a whole "
        "number of periods); absent: the edges are the polled update instants",
        "s",
    )
    grid_fit: str | None = optional(
        "how the grid's phase was placed: how many of the window's updates placed it, their jitter and the "
        "tolerance, and which were left out as outliers (kept on their grid instants); or why the grid was not "
        "used (the edges then are the polled update instants)"
    )
    update_spread: float | None = optional(
        "standard deviation of the joules the counter added per update, over the window's joules: the "
        "window's relative error from its two edges, by the counter alone (what sized the window)"
    )


@attrs.frozen(kw_only=True)
class PowerIntegration:
    """Power sampled over the same edges and integrated: the counter's cross-check."""

    source: str = field("which power reading was integrated")
    samples: int = field("samples inside the window", "count")
    period_s: float | None = field("median time between samples", "s")
    joules: float | None = field(
        "trapezoidal integral over the window's edges (shifted later by field_lag_s where that is given)", "J"
    )
    counter_agreement: float | None = field("integrated joules / counter joules - 1", "1")
    averaged_power_w: float | None = optional(
        "mean of nvmlDeviceGetPowerUsage over the window (a 1 s moving average on recent GPUs: context, not integrated)",
        "W",
    )
    field_lag_s: float | None = optional(
        "how much later than the window's edges the instantaneous field was integrated: its lag behind the "
        "counter's updates (a constant measured offline on earlier sessions' probe windows, never fitted to this "
        "window); absent: integrated over the edges themselves",
        "s",
    )
    unshifted_agreement: float | None = optional(
        "the field integrated over the edges themselves, unshifted, / counter joules - 1 (what counter_agreement "
        "was before the lag was applied; context)",
        "1",
    )


@attrs.frozen(kw_only=True)
class HostEnergy:
    """The host CPU's energy over the same window (RAPL), or why not."""

    available: bool = field("true when RAPL was read at both edges")
    reason: str | None = field("why not; null when available")
    source: str | None = optional("the RAPL domains summed")
    joules: float | None = optional("host CPU packages' energy over the window", "J")
    joules_per_execution: float | None = optional("joules / executions", "J")
    mean_power_w: float | None = optional("joules / window seconds", "W")


@attrs.frozen(kw_only=True)
class EnergyMeasurement:
    """MEASURED: one workload's energy window, of its own, after its latency timings."""

    available: bool = field("true when the counter gave a window")
    reason: str | None = field("why there is no measurement; null when available")
    regime: str = field("'sustained': executions back to back, the device loaded throughout")
    method: str = field("exactly how the window was taken")
    executions: int | None = field("executions completed between the counter's two edges (rounded)", "count")
    executions_exact: float | None = optional(
        "executions between the edges interpolated on the step loop's log at the polled edge times "
        "(what joules_per_execution divides by)",
        "count",
    )
    settle_s: float | None = optional("load run before the start edge could fall", "s")
    window_s: float | None = field("time between the edges", "s")
    joules: float | None = field("counter at the end edge - counter at the start edge", "J")
    joules_per_execution: float | None = field("joules / executions", "J")
    seconds_per_execution: float | None = field("window_s / executions", "s")
    mean_power_w: float | None = field("joules / window_s", "W")
    samples_j: tuple[float, ...] | None = optional(
        "joules per execution between consecutive counter updates, in order (what the energy gate compares)",
        "J",
        validator=measured_values(),
    )
    tokens_per_execution: int | None = optional("tokens one execution processes (transformer workloads)", "count")
    joules_per_token: float | None = optional("joules_per_execution / tokens_per_execution", "J")
    counter: CounterRecord | None = field("the counter and what the window saw of it")
    integration: PowerIntegration | None = field("the power integration over the same edges; null without samples")
    power_limit_w: float | None = optional("the enforced power limit NVML reported for the window", "W")
    host_cpu: HostEnergy | None = optional("the host CPU's energy over the same window")
    execution: str | None = optional(
        "what the window ran: 'eager' (the workload's own calls, queued; host-paced where the host is slower "
        "than the device) or 'graph' (replays of a CUDA graph of graph_calls unrolled calls, queued: the "
        "device's pace; for host-bound workloads); null in older captures (eager)"
    )
    execution_reason: str | None = optional(
        "why that execution: the host-bound rule's figures (burst eager p50 / burst graph p50 against 1.5; the "
        "host's launch time per call against 0.6 x the graph p50), or why a graph window was not possible (no "
        "graph timing, capture failed, memory)"
    )
    graph_calls: int | None = optional(
        "calls unrolled in one replayed graph (executions = graph_calls x replays)", "count"
    )
    graph_pool_bytes: int | None = optional(
        "device memory the graph's capture reserved (its private pool: the unrolled calls' activations)", "B"
    )
    host_launch_s: float | None = optional(
        "MEASURED before the window where the burst rule said eager: the host's time to launch one eager call, "
        "chunks waited on between (graph replays where it is >= 0.6 x the burst graph p50: a queue the host "
        "barely outruns is host-paced whenever the host stalls); null where not measured",
        "s",
    )


@attrs.frozen(kw_only=True)
class EnergyPoint:
    """One calibration probe window: its work and the energy the counter gave."""

    name: str = field("what ran (e.g. 'matmul bf16 8192', 'copy 1 GiB', 'idle')")
    seconds: float = field("time between the counter's edges", "s")
    joules: float = field("counter joules between the edges", "J")
    flops: Mapping[str, float] = field("FLOPs per math mode in the window", "FLOP")
    dram_bytes: float = field("DRAM bytes read + written in the window", "B")
    counter_agreement: float | None = optional("integrated power / counter - 1 over the same edges", "1")
    residual_w: float | None = optional("mean power of the window - the fit's power for it", "W")
    executions: float | None = optional(
        "calls completed between the edges (interpolated at the polled edge times); a launch-bound window's "
        "seconds / executions is the queued loop's host time per call",
        "count",
    )


@attrs.frozen(kw_only=True)
class EnergyCoefficientsRecord:
    """The fitted coefficients and the lower ends the floor uses (tensorforge.energy.model)."""

    static_w: float = field("static power under load, fitted (P_s)", "W")
    static_w_low: float = field("the floor's static power: min(idle power, P_s lower end)", "W")
    idle_w: float | None = field("power with nothing running", "W")
    joules_per_flop: Mapping[str, float] = field("fitted energy per FLOP, per math mode", "J/FLOP")
    joules_per_flop_low: Mapping[str, float] = field("its lower end, per math mode (the floor's)", "J/FLOP")
    joules_per_dram_byte: float = field("fitted energy per DRAM byte", "J/B")
    joules_per_dram_byte_low: float = field("its lower end (the floor's)", "J/B")
    power_limit_w: float | None = field("the enforced power limit (NVML), or the target's declared one", "W")
    power_limit_source: str = field("where the power limit comes from")
    source: str = field("device, fingerprint and time of the calibration")
    capped_rate_flop_s: Mapping[str, float] | None = optional(
        "per math mode, the FLOP/s a square GEMM sustained at the power cap, hot, after seconds of load "
        "(slower than the workloads' sustained timings on the H200, so it bounds nothing; the estimate's capped time "
        "and cap-bound operators use it: docs/energy.md)",
        "FLOP/s",
    )
    capped_power_w: float | None = optional("the counter's mean power over those capped windows", "W")
    busy_w: float | None = optional(
        "power above static_w of the L2-resident bf16 GEMM window (kernels longer than a launch, back to back at "
        "full clock, no DRAM): the estimate's busy power for operators that do real work",
        "W",
    )
    busy_below_cap_w: float | None = optional(
        "power above static_w of a CUDA graph replaying mid-size bf16 GEMMs whose operands stream from DRAM "
        "(short tensor-core kernels at full clock, no host gaps): context; the estimate's busy power only where "
        "busy_w was not measured (on the H200 this window reached the cap); older calibrations only",
        "W",
    )
    host_s_per_kernel: float | None = optional(
        "the queued eager loop's host time per launch, measured in the launch-bound window (seconds / calls, "
        "with the power sampler's thread running as in a workload's window): the estimate's host time is "
        "kernels x this",
        "s",
    )
    joules_per_vector_flop: float | None = optional(
        "energy per FLOP of math on the vector (CUDA-core) units: the 3x3 depthwise bf16 convolution window's joules "
        "less static_w x its seconds and its DRAM bytes x joules_per_dram_byte, per FLOP; the estimate charges it to "
        "operators that run on the vector units (a vector mapping: depthwise convolutions; elementwise work)",
        "J/FLOP",
    )
    peak_power_w: float | None = optional(
        "the highest mean power (counter) of any loaded probe window: the power the power-limited bound lets the "
        "device draw where it exceeds the enforced limit (the cap regulates a ~1 s average; docs/energy.md)",
        "W",
    )


@attrs.frozen(kw_only=True)
class EnergyCalibration:
    """CALIBRATED: the energy probes' windows and the coefficients fitted to them."""

    method: str = field("the probes and the regression, in words")
    coefficients: EnergyCoefficientsRecord | None = field("the fit; null when it failed (error says why)")
    error: str | None = field("why there are no coefficients; null when fitted")
    points: tuple[EnergyPoint, ...] = field("every probe window the fit used, in the order run")
    standard_errors: Mapping[str, float] = field("standard error of each fitted coefficient, by name")
    counter: CounterRecord | None = field("the energy counter as the probes saw it (resolution, update interval)")


@attrs.frozen(kw_only=True)
class WorkloadEnergyRecord:
    """PREDICTED energy of one execution: the floor and the estimate, never confused."""

    floor_j: float = field("energy FLOOR: no measurement may come in below it (sound by construction)", "J")
    floor_terms: Mapping[str, float] = field(
        "its terms: static_j, compute_j, dram_j (J), time_s (s), dram_bytes (B); the estimate's also busy_j (J) "
        "where the busy power over the kernel time exceeds compute_j + dram_j, or at the power cap the capped "
        "power's energy beyond the other terms (negative where they add up to more)",
    )
    estimate_j: float | None = field("energy ESTIMATE (expected); null without the estimate's time", "J")
    estimate_terms: Mapping[str, float] | None = field("its terms, as floor_terms")
    estimate_note: str | None = field("why no estimate, or what it borrowed")
    device_estimate_j: float | None = optional(
        "energy ESTIMATE of one execution in a CUDA-graph window (the device's pace: the queued model with "
        "the estimate's device time, no host term); null where the queued model does not apply",
        "J",
    )
    device_estimate_terms: Mapping[str, float] | None = optional("its terms, as floor_terms")
    power_limited_bound_s: float | None = field(
        "sound lower bound on the time under the power limit: floor dynamic energy / (P_limit - P_s low)", "s"
    )
    power_limited: bool = field("true when the estimate's work would draw more than the limit at its own time")
    uncalibrated_modes: tuple[str, ...] = field("math modes without a calibrated J/FLOP (0 in the floor)")
    sustained_bound_s: float | None = optional(
        "the sustained regime's bound with the power limit: max(burst calibrated bound, cap_bound_s, "
        "power_limited_bound_s) where the calibration's sustained matmul probe gives the energy per FLOP at the "
        "cap; without it (older calibrations) max(calibrated sustained bound, power_limited_bound_s), or for work "
        "whose calls are shorter than the sustained matmul probe's at its best size max(burst calibrated bound, "
        "power_limited_bound_s) (sustained_bound_from)",
        "s",
    )
    sustained_bound_from: str | None = optional(
        "which bound sustained_bound_s is: 'power cap (sustained probes)' (cap_bound_s), 'power-limited' "
        "(power_limited_bound_s), 'burst calibrated', or on older calibrations 'sustained-probe calibrated'"
    )
    cap_bound_s: float | None = optional(
        "the least time one call after its L2 flush can take at the power cap: (e_cap x FLOPs + the "
        "flush's energy) / (P_cap - P_s low) - the flush's time, e_cap the lowest energy per FLOP the sustained "
        "matmul probe's sizes ran at under the cap, less 1% (tensorforge.bound.cap_bound); null without those probes",
        "s",
    )
    operators: Mapping[str, float] | None = optional("energy floor per Core operator (x count)", "J")


@attrs.frozen(kw_only=True)
class CapRecord:
    """CALIBRATED energy per FLOP at the power cap, from the rates the sustained matmul probe ran at
    under it (tensorforge.bound.cap_bound): what cap_bound_s is built on."""

    joules_per_flop: Mapping[str, float] = field(
        "per math mode: the lowest over the probe's sizes, less the margin (what the bound uses)", "J"
    )
    per_size: Mapping[str, Mapping[str, float]] = field("per math mode, per probe size n: its energy per FLOP", "J")
    margin: float = field("taken off the lowest size's figure", "1")
    power_w: float = field("the power the cap holds the device to on average: the enforced limit", "W")
    static_w: float = field("the static power (the energy probes' fit)", "W")
    flush_s: float = field("one L2 flush of the sustained regime: its bytes at the sustained copy bandwidth", "s")
    flush_j: float = field("its dynamic energy: its bytes x the DRAM energy per byte's low end", "J")
    method: str = field("how it was derived")


@attrs.frozen(kw_only=True)
class EnergyPrediction:
    """PREDICTED energy per workload from the calibrated coefficients and the calibrated bound."""

    label: str = field("'PREDICTED energy'")
    coefficients_source: str = field("the calibration the coefficients come from")
    cache_bytes: float | None = field("last-level cache the DRAM floor subtracts (executions run back to back)", "B")
    time_basis: str = field("which times the floor and the estimate use")
    workloads: Mapping[str, WorkloadEnergyRecord] = field("per workload name")
    cap: CapRecord | None = optional("the energy per FLOP at the power cap from the sustained matmul probe")


@attrs.frozen(kw_only=True)
class EnergyComparison:
    """One workload's measured energy against its floor and estimate."""

    measured_j: float | None = field("MEASURED joules per execution (the counter)", "J")
    floor_j: float | None = field("PREDICTED energy floor", "J")
    estimate_j: float | None = field("PREDICTED energy estimate", "J")
    floor_verdict: str = field("'within floor', 'FLOOR VIOLATION' (measured below the floor) or 'no verdict: <why>'")
    measured_over_floor: float | None = field("measured / floor", "1")
    estimate_error: float | None = field("(estimate - measured) / measured", "1")
    estimate_basis: str | None = optional(
        "which estimate estimate_j is, matching the window's execution: 'eager window' (estimate_j: the queued "
        "model's time, device or host launches, whichever is slower) or 'device (graph window)' (device_estimate_j: "
        "the estimate's device time alone); null in older captures (eager window)"
    )
    power_limited_bound_s: float | None = optional("the sustained bound with the power limit", "s")
    sustained_p50_s: float | None = optional("MEASURED sustained p50 (eager) it is checked against", "s")
    sustained_over_bound: float | None = optional("sustained p50 / power-limited sustained bound", "1")
    sustained_verdict: str | None = optional(
        "'within bound' or 'BOUND ABOVE THE MEASUREMENT' (sustained p50 below the sustained bound, no tolerance: "
        "the bound is not sound there)"
    )
