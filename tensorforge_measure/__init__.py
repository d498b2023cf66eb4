"""TensorForge's measuring side: `run`, `calibrate`, `verify`, `gate` and the rest, device-neutral.

This module is the surface for authors of measuring plugins (backends, workload builders,
calibration probes, telemetry sources, capture sinks, policies), as `tensorforge` is for the
Core's plugins. Import from here, nothing from the modules behind it:

    from tensorforge_measure import WorkloadBuilder, hookimpl, operator_range, torch_dtype

The names load on first use, so `import tensorforge_measure` imports neither torch nor the
measuring machinery; the helpers that work on tensors (math_mode, torch_dtype, operator_range)
import torch when first used.
"""

from tensorforge.host.lazy import lazy_names

# Not typing.TYPE_CHECKING: importing typing would cost this module most of its import time;
# type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False

__all__ = [
    # hooks: the marker and the type of each register callback
    "hookimpl",
    "RegisterBackend",
    "RegisterBuilder",
    "RegisterProbe",
    "RegisterTelemetry",
    "RegisterSink",
    "RegisterPolicy",
    "RegisterHostEnergy",
    # what plugins implement, and the values crossing the boundary
    "MeasurementBackend",
    "Session",
    "DeviceInfo",
    "Prepared",
    "WorkloadBuilder",
    "CalibrationProbe",
    "ProbeResult",
    "TelemetrySource",
    "TelemetryWindow",
    "HostEnergySource",
    "HostEnergyCounter",
    "Unavailable",
    "CaptureSink",
    "ExportResult",
    "Policy",
    "PolicyRequest",
    "Verdict",
    "NO_VERDICT",
    "POLICY_EVIDENCE",
    "POLICY_COMMANDS",
    # builders: tensors and operator ranges
    "torch_dtype",
    "operator_range",
    "ITERATION",
    "recording",
    # training steps (phase=train): forward + backward through autograd, then the optimizer
    "TrainStep",
    "no_inference",
    # timing and statistics, for backends
    "TimingPolicy",
    "TimedSamples",
    "should_stop",
    "summarize",
    "SampleStats",
    "PhasePlan",
    "PhaseResult",
    "ModeTiming",
    "math_mode",
    "framework_flags",
    "MODE_DTYPES",
    "read_or_none",
    "gc_paused",
    "TEARDOWN_CUPTI",
    # calibration and traces, for backends
    "EstimateTermsProbe",
    "trace_cpu",
    "trace_cuda",
    "export_trace",
    "device_iterations",
    "calibration_time",
    "fastest_spread",
    # energy windows, for backends with an energy counter
    "take_window",
    "chunk_runner",
    "counter_record",
    "QueuedSteps",
    "AHEAD_S",
    "CHUNK_S",
    "SWITCH_S",
    "calls_per_chunk",
    "poll_period",
    "fit_energy",
    "FitError",
    "peak_power_w",
    "EnergyCalibration",
    "EnergyPoint",
    # the capture, for sinks and policies
    "Capture",
    "Measured",
    "Measurement",
    "Calibrated",
    "LABELS",
    "capture_document",
    # the measuring side's plugin host (a backend's worker processes load the plugins with it)
    "OpsHost",
    # which execution an energy window runs (eager calls or graph replays)
    "EAGER",
    "GRAPH",
    "GRAPH_HOW",
    "GRAPH_TARGET_S",
    "MAX_GRAPH_CALLS",
    "MAX_POOL_BYTES",
    "PACE_BOUND",
    "PACE_CHUNKS",
    "PACE_MAX_CALL_S",
    "PACE_S",
    "GraphCaptureError",
    "Replays",
    "WindowChoice",
    "window_burst_p50",
    "choose_window",
    "energy_window",
    "graph_calls",
    "host_launch_s",
    "PowerSampler",
    "PowerSamples",
    # the sustained regime's steady state, and clock-event reasons
    "HOST_BOUND",
    "SteadyPolicy",
    "SteadyState",
    "steady_burst_p50",
    "host_bound",
    "is_steady",
    "CLOCK_EVENT_REASONS",
    "SLOWDOWN_REASONS",
    "decode_reasons",
    "clock_event_headline",
    "clock_event_bits",
]

# name -> "module" (same name there) or "module:name there"; loaded by __getattr__ on first use.
_HOMES = {
    "hookimpl": "tensorforge_measure.hookspecs",
    "RegisterBackend": "tensorforge_measure.hookspecs",
    "RegisterBuilder": "tensorforge_measure.hookspecs",
    "RegisterProbe": "tensorforge_measure.hookspecs",
    "RegisterTelemetry": "tensorforge_measure.hookspecs",
    "RegisterSink": "tensorforge_measure.hookspecs",
    "RegisterPolicy": "tensorforge_measure.hookspecs",
    "RegisterHostEnergy": "tensorforge_measure.hookspecs",
    "HostEnergySource": "tensorforge_measure.api",
    "HostEnergyCounter": "tensorforge_measure.api",
    "MeasurementBackend": "tensorforge_measure.api",
    "Session": "tensorforge_measure.api",
    "DeviceInfo": "tensorforge_measure.api",
    "Prepared": "tensorforge_measure.api",
    "WorkloadBuilder": "tensorforge_measure.api",
    "CalibrationProbe": "tensorforge_measure.api",
    "ProbeResult": "tensorforge_measure.api",
    "TelemetrySource": "tensorforge_measure.api",
    "TelemetryWindow": "tensorforge_measure.capture.sections.diagnostic",
    "Unavailable": "tensorforge_measure.api",
    "CaptureSink": "tensorforge_measure.api",
    "ExportResult": "tensorforge_measure.api",
    "Policy": "tensorforge_measure.api",
    "PolicyRequest": "tensorforge_measure.api",
    "Verdict": "tensorforge_measure.api",
    "NO_VERDICT": "tensorforge_measure.api",
    "POLICY_EVIDENCE": "tensorforge_measure.api",
    "POLICY_COMMANDS": "tensorforge_measure.api",
    "torch_dtype": "tensorforge_measure.measure.torch_dtypes",
    "operator_range": "tensorforge_measure.measure.op_ranges",
    "ITERATION": "tensorforge_measure.measure.op_ranges",
    "recording": "tensorforge_measure.measure.op_ranges",
    "TrainStep": "tensorforge_measure.measure.training",
    "no_inference": "tensorforge_measure.measure.training",
    "TimingPolicy": "tensorforge_measure.measure.timing",
    "TimedSamples": "tensorforge_measure.measure.timing",
    "should_stop": "tensorforge_measure.measure.timing",
    "summarize": "tensorforge_measure.measure.stats",
    "SampleStats": "tensorforge_measure.measure.stats",
    "PhasePlan": "tensorforge_measure.measure.phases",
    "PhaseResult": "tensorforge_measure.measure.phases",
    "ModeTiming": "tensorforge_measure.measure.phases",
    "math_mode": "tensorforge_measure.measure.precision",
    "framework_flags": "tensorforge_measure.measure.precision",
    "MODE_DTYPES": "tensorforge_measure.measure.precision",
    "read_or_none": "tensorforge_measure.measure.precision",
    "gc_paused": "tensorforge_measure.measure.host_state",
    "TEARDOWN_CUPTI": "tensorforge_measure.measure.host_state",
    "EstimateTermsProbe": "tensorforge_measure.calibrate.estimate_probes",
    "trace_cpu": "tensorforge_measure.measure.trace_window",
    "trace_cuda": "tensorforge_measure.measure.trace_window",
    "export_trace": "tensorforge_measure.measure.trace_window:export",
    "device_iterations": "tensorforge_measure.measure.trace_attribution",
    "calibration_time": "tensorforge_measure.calibrate.store:now",
    "fastest_spread": "tensorforge_measure.calibrate.margin",
    "take_window": "tensorforge_measure.energy.measure",
    "chunk_runner": "tensorforge_measure.energy.measure",
    "counter_record": "tensorforge_measure.energy.measure",
    "QueuedSteps": "tensorforge_measure.energy.measure",
    "AHEAD_S": "tensorforge_measure.energy.measure",
    "CHUNK_S": "tensorforge_measure.energy.measure",
    "SWITCH_S": "tensorforge_measure.energy.measure",
    "calls_per_chunk": "tensorforge_measure.energy.window",
    "poll_period": "tensorforge_measure.energy.window",
    "fit_energy": "tensorforge_measure.energy.fit:fit",
    "FitError": "tensorforge_measure.energy.fit",
    "peak_power_w": "tensorforge_measure.energy.fit",
    "EnergyCalibration": "tensorforge_measure.capture.sections.energy",
    "EnergyPoint": "tensorforge_measure.capture.sections.energy",
    "Capture": "tensorforge_measure.capture.model",
    "Measured": "tensorforge_measure.capture.sections.measured",
    "Measurement": "tensorforge_measure.capture.sections.measured",
    "Calibrated": "tensorforge_measure.capture.sections.calibrated",
    "LABELS": "tensorforge_measure.capture.labels",
    "capture_document": "tensorforge_measure.capture.convert:to_document",
    "OpsHost": "tensorforge_measure.host",
    "EAGER": "tensorforge_measure.energy.execution",
    "GRAPH": "tensorforge_measure.energy.execution",
    "GRAPH_HOW": "tensorforge_measure.energy.execution",
    "GRAPH_TARGET_S": "tensorforge_measure.energy.execution",
    "MAX_GRAPH_CALLS": "tensorforge_measure.energy.execution",
    "MAX_POOL_BYTES": "tensorforge_measure.energy.execution",
    "PACE_BOUND": "tensorforge_measure.energy.execution",
    "PACE_CHUNKS": "tensorforge_measure.energy.execution",
    "PACE_MAX_CALL_S": "tensorforge_measure.energy.execution",
    "PACE_S": "tensorforge_measure.energy.execution",
    "GraphCaptureError": "tensorforge_measure.energy.execution",
    "Replays": "tensorforge_measure.energy.execution",
    "WindowChoice": "tensorforge_measure.energy.execution",
    "window_burst_p50": "tensorforge_measure.energy.execution:burst_p50",
    "choose_window": "tensorforge_measure.energy.execution:choose",
    "energy_window": "tensorforge_measure.energy.execution",
    "graph_calls": "tensorforge_measure.energy.execution",
    "host_launch_s": "tensorforge_measure.energy.execution",
    "PowerSampler": "tensorforge_measure.energy.sampler",
    "PowerSamples": "tensorforge_measure.energy.sampler",
    "HOST_BOUND": "tensorforge_measure.measure.steady",
    "SteadyPolicy": "tensorforge_measure.measure.steady",
    "SteadyState": "tensorforge_measure.measure.steady",
    "steady_burst_p50": "tensorforge_measure.measure.steady:burst_p50",
    "host_bound": "tensorforge_measure.measure.steady",
    "is_steady": "tensorforge_measure.measure.steady",
    "CLOCK_EVENT_REASONS": "tensorforge_measure.telemetry.clock_events",
    "SLOWDOWN_REASONS": "tensorforge_measure.telemetry.clock_events",
    "decode_reasons": "tensorforge_measure.telemetry.clock_events",
    "clock_event_headline": "tensorforge_measure.telemetry.clock_events:headline",
    "clock_event_bits": "tensorforge_measure.telemetry.clock_events:set_bits",
}

if TYPE_CHECKING:  # what mypy and editors see; at run time __getattr__ loads the same names
    from tensorforge_measure.api import NO_VERDICT as NO_VERDICT
    from tensorforge_measure.api import POLICY_COMMANDS as POLICY_COMMANDS
    from tensorforge_measure.api import POLICY_EVIDENCE as POLICY_EVIDENCE
    from tensorforge_measure.api import CalibrationProbe as CalibrationProbe
    from tensorforge_measure.api import CaptureSink as CaptureSink
    from tensorforge_measure.api import DeviceInfo as DeviceInfo
    from tensorforge_measure.api import ExportResult as ExportResult
    from tensorforge_measure.api import HostEnergyCounter as HostEnergyCounter
    from tensorforge_measure.api import HostEnergySource as HostEnergySource
    from tensorforge_measure.api import MeasurementBackend as MeasurementBackend
    from tensorforge_measure.api import Policy as Policy
    from tensorforge_measure.api import PolicyRequest as PolicyRequest
    from tensorforge_measure.api import Prepared as Prepared
    from tensorforge_measure.api import ProbeResult as ProbeResult
    from tensorforge_measure.api import Session as Session
    from tensorforge_measure.api import TelemetrySource as TelemetrySource
    from tensorforge_measure.api import Unavailable as Unavailable
    from tensorforge_measure.api import Verdict as Verdict
    from tensorforge_measure.api import WorkloadBuilder as WorkloadBuilder
    from tensorforge_measure.calibrate.estimate_probes import EstimateTermsProbe as EstimateTermsProbe
    from tensorforge_measure.calibrate.margin import fastest_spread as fastest_spread
    from tensorforge_measure.calibrate.store import now as calibration_time
    from tensorforge_measure.capture.convert import to_document as capture_document
    from tensorforge_measure.capture.labels import LABELS as LABELS
    from tensorforge_measure.capture.model import Capture as Capture
    from tensorforge_measure.capture.sections.calibrated import Calibrated as Calibrated
    from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow as TelemetryWindow
    from tensorforge_measure.capture.sections.energy import EnergyCalibration as EnergyCalibration
    from tensorforge_measure.capture.sections.energy import EnergyPoint as EnergyPoint
    from tensorforge_measure.capture.sections.measured import Measured as Measured
    from tensorforge_measure.capture.sections.measured import Measurement as Measurement
    from tensorforge_measure.energy.execution import EAGER as EAGER
    from tensorforge_measure.energy.execution import GRAPH as GRAPH
    from tensorforge_measure.energy.execution import GRAPH_HOW as GRAPH_HOW
    from tensorforge_measure.energy.execution import GRAPH_TARGET_S as GRAPH_TARGET_S
    from tensorforge_measure.energy.execution import MAX_GRAPH_CALLS as MAX_GRAPH_CALLS
    from tensorforge_measure.energy.execution import MAX_POOL_BYTES as MAX_POOL_BYTES
    from tensorforge_measure.energy.execution import PACE_BOUND as PACE_BOUND
    from tensorforge_measure.energy.execution import PACE_CHUNKS as PACE_CHUNKS
    from tensorforge_measure.energy.execution import PACE_MAX_CALL_S as PACE_MAX_CALL_S
    from tensorforge_measure.energy.execution import PACE_S as PACE_S
    from tensorforge_measure.energy.execution import GraphCaptureError as GraphCaptureError
    from tensorforge_measure.energy.execution import Replays as Replays
    from tensorforge_measure.energy.execution import WindowChoice as WindowChoice
    from tensorforge_measure.energy.execution import burst_p50 as window_burst_p50
    from tensorforge_measure.energy.execution import choose as choose_window
    from tensorforge_measure.energy.execution import energy_window as energy_window
    from tensorforge_measure.energy.execution import graph_calls as graph_calls
    from tensorforge_measure.energy.execution import host_launch_s as host_launch_s
    from tensorforge_measure.energy.fit import FitError as FitError
    from tensorforge_measure.energy.fit import fit as fit_energy
    from tensorforge_measure.energy.fit import peak_power_w as peak_power_w
    from tensorforge_measure.energy.measure import AHEAD_S as AHEAD_S
    from tensorforge_measure.energy.measure import CHUNK_S as CHUNK_S
    from tensorforge_measure.energy.measure import SWITCH_S as SWITCH_S
    from tensorforge_measure.energy.measure import QueuedSteps as QueuedSteps
    from tensorforge_measure.energy.measure import chunk_runner as chunk_runner
    from tensorforge_measure.energy.measure import counter_record as counter_record
    from tensorforge_measure.energy.measure import take_window as take_window
    from tensorforge_measure.energy.sampler import PowerSampler as PowerSampler
    from tensorforge_measure.energy.sampler import PowerSamples as PowerSamples
    from tensorforge_measure.energy.window import calls_per_chunk as calls_per_chunk
    from tensorforge_measure.energy.window import poll_period as poll_period
    from tensorforge_measure.hookspecs import RegisterBackend as RegisterBackend
    from tensorforge_measure.hookspecs import RegisterBuilder as RegisterBuilder
    from tensorforge_measure.hookspecs import RegisterHostEnergy as RegisterHostEnergy
    from tensorforge_measure.hookspecs import RegisterPolicy as RegisterPolicy
    from tensorforge_measure.hookspecs import RegisterProbe as RegisterProbe
    from tensorforge_measure.hookspecs import RegisterSink as RegisterSink
    from tensorforge_measure.hookspecs import RegisterTelemetry as RegisterTelemetry
    from tensorforge_measure.hookspecs import hookimpl as hookimpl
    from tensorforge_measure.host import OpsHost as OpsHost
    from tensorforge_measure.measure.host_state import TEARDOWN_CUPTI as TEARDOWN_CUPTI
    from tensorforge_measure.measure.host_state import gc_paused as gc_paused
    from tensorforge_measure.measure.op_ranges import ITERATION as ITERATION
    from tensorforge_measure.measure.op_ranges import operator_range as operator_range
    from tensorforge_measure.measure.op_ranges import recording as recording
    from tensorforge_measure.measure.phases import ModeTiming as ModeTiming
    from tensorforge_measure.measure.phases import PhasePlan as PhasePlan
    from tensorforge_measure.measure.phases import PhaseResult as PhaseResult
    from tensorforge_measure.measure.precision import MODE_DTYPES as MODE_DTYPES
    from tensorforge_measure.measure.precision import framework_flags as framework_flags
    from tensorforge_measure.measure.precision import math_mode as math_mode
    from tensorforge_measure.measure.precision import read_or_none as read_or_none
    from tensorforge_measure.measure.stats import SampleStats as SampleStats
    from tensorforge_measure.measure.stats import summarize as summarize
    from tensorforge_measure.measure.steady import HOST_BOUND as HOST_BOUND
    from tensorforge_measure.measure.steady import SteadyPolicy as SteadyPolicy
    from tensorforge_measure.measure.steady import SteadyState as SteadyState
    from tensorforge_measure.measure.steady import burst_p50 as steady_burst_p50
    from tensorforge_measure.measure.steady import host_bound as host_bound
    from tensorforge_measure.measure.steady import is_steady as is_steady
    from tensorforge_measure.measure.timing import TimedSamples as TimedSamples
    from tensorforge_measure.measure.timing import TimingPolicy as TimingPolicy
    from tensorforge_measure.measure.timing import should_stop as should_stop
    from tensorforge_measure.measure.torch_dtypes import torch_dtype as torch_dtype
    from tensorforge_measure.measure.trace_attribution import device_iterations as device_iterations
    from tensorforge_measure.measure.trace_window import export as export_trace
    from tensorforge_measure.measure.trace_window import trace_cpu as trace_cpu
    from tensorforge_measure.measure.trace_window import trace_cuda as trace_cuda
    from tensorforge_measure.measure.training import TrainStep as TrainStep
    from tensorforge_measure.measure.training import no_inference as no_inference
    from tensorforge_measure.telemetry.clock_events import CLOCK_EVENT_REASONS as CLOCK_EVENT_REASONS
    from tensorforge_measure.telemetry.clock_events import SLOWDOWN_REASONS as SLOWDOWN_REASONS
    from tensorforge_measure.telemetry.clock_events import decode_reasons as decode_reasons
    from tensorforge_measure.telemetry.clock_events import headline as clock_event_headline
    from tensorforge_measure.telemetry.clock_events import set_bits as clock_event_bits
else:
    __getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
