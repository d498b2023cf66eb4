"""The Core's API for the Ops side and for plugins: what they may use, in one place.

Ops wraps the Core; it imports from here rather than reaching into the modules behind it
(model, suite, render, the hosts' private state), so those modules can change shape without
breaking the other side, and what the Core promises is visible in one list. Checked by mypy
in strict mode.
"""

from collections.abc import Sequence
from typing import Any

from tensorforge.bound.cap_bound import CAP_MARGIN, CapCalibration, cap_bound_s, cap_calibration
from tensorforge.bound.mappings.base import UNSTATED
from tensorforge.bound.model import predict, search_of
from tensorforge.cli.options import (
    CliState,
    core_host,
    json_option,
    operating_point_option,
    optional_target_option,
    output_options,
    pass_host,
    target_option,
    wide_option,
    workload_options,
)
from tensorforge.cli.render import short_basis, table
from tensorforge.cli.screen import PLAIN, Screen, detect, paint
from tensorforge.cli.units import percent, seconds, si
from tensorforge.energy.model import (
    EnergyCoefficients,
    PowerFigures,
    bound_power_w,
    flops_by_mode,
    power_limited_ceilings,
    window_time,
    workload_energy,
)
from tensorforge.errors import PluginError, TensorForgeError, closest, one_line, unknown
from tensorforge.estimate.basis import coefficients_for
from tensorforge.estimate.classes import CLASSES, workload_class
from tensorforge.estimate.coefficients import EstimateCoefficients, coefficients_from_data
from tensorforge.estimate.evaluation import Evaluation, Row
from tensorforge.estimate.evaluation import evaluate as evaluate_estimates
from tensorforge.estimate.fit import WorkloadPoint, fit_coefficients
from tensorforge.estimate.probe_plan import CPU_PLAN, CUDA_PLAN, STREAM_OPS, ProbeItem, timing_modes, warm_timed
from tensorforge.estimate.render import SHORT as TERM_LABELS
from tensorforge.estimate.results import TERMS
from tensorforge.files.documents import (
    parse_json,
    parse_toml,
    read_document,
    read_json,
    read_stream_text,
    read_text,
    read_toml,
    write_atomic,
)
from tensorforge.files.output import STDOUT, Claim, claim, write_output
from tensorforge.files.serialize import canonical_json, converter, to_data
from tensorforge.hardware.target import Ceilings, Target
from tensorforge.host.interrupts import signal_name, signals_as_interrupts, signals_ignored
from tensorforge.host.options import PluginOptions
from tensorforge.host.plugin_host import BaseHost, PluginHost, PluginReport
from tensorforge.results.prediction import Prediction
from tensorforge.workloads.collectives import CollectiveCeiling
from tensorforge.workloads.collectives import ceilings_from_data as collective_ceilings
from tensorforge.workloads.finite import FiniteFloat, finite_in, finite_number
from tensorforge.workloads.kinds import Workload, WorkloadKind
from tensorforge.workloads.precision import VECTOR_EXECUTES
from tensorforge.workloads.suite import parse_fields, resolve, resolve_spec

__all__ = [
    "STDOUT",
    "Claim",
    "claim",
    "output_options",
    "write_output",
    "signal_name",
    "signals_as_interrupts",
    "signals_ignored",
    "FiniteFloat",
    "finite_in",
    "finite_number",
    "BaseHost",
    "Ceilings",
    "CliState",
    "CollectiveCeiling",
    "PLAIN",
    "PluginError",
    "PluginHost",
    "PluginOptions",
    "PluginReport",
    "collective_ceilings",
    "Prediction",
    "Screen",
    "Target",
    "TensorForgeError",
    "Workload",
    "WorkloadKind",
    "canonical_json",
    "closest",
    "core_host",
    "detect",
    "json_option",
    "one_line",
    "operating_point_option",
    "optional_target_option",
    "paint",
    "parse_fields",
    "parse_json",
    "parse_toml",
    "pass_host",
    "percent",
    "predict",
    "read_document",
    "read_json",
    "read_stream_text",
    "read_text",
    "read_toml",
    "resolve",
    "run_prediction",
    "seconds",
    "short_basis",
    "si",
    "table",
    "target_option",
    "to_data",
    "unknown",
    "wide_option",
    "workload_options",
    "write_atomic",
    "VECTOR_EXECUTES",
    # energy (tensorforge.energy.model): the energy probe's fit feeds it, `run` predicts with it
    "EnergyCoefficients",
    "PowerFigures",
    "power_limited_ceilings",
    "window_time",
    "workload_energy",
    "bound_power_w",
    # the sustained bound at the power cap (tensorforge.bound.cap_bound), from the sustained matmul probe
    "CAP_MARGIN",
    "CapCalibration",
    "cap_bound_s",
    "cap_calibration",
    "flops_by_mode",
    # the estimate (tensorforge.estimate): calibration fits it, evaluation and the report score it
    "EstimateCoefficients",
    "Evaluation",
    "Row",
    "STREAM_OPS",
    "TERMS",
    "TERM_LABELS",
    "WorkloadPoint",
    "coefficients_for",
    "coefficients_from_data",
    "evaluate_estimates",
    "fit_coefficients",
    # the probe plans a backend declares as its `probe_plan` (the Core never picks one by name)
    "CPU_PLAN",
    "CUDA_PLAN",
    "ProbeItem",
    "timing_modes",
    "warm_timed",
    "resolve_spec",
    "workload_class",
    "CLASSES",
    # the capture (tensorforge_measure.capture) structures the Core's results with the Core's own
    # cattrs converter, and derives how a version-1 capture's bounds were searched for
    "UNSTATED",
    "converter",
    "search_of",
]


def run_prediction(
    host: PluginHost,
    target_name: str,
    specs: Sequence[str] = (),
    suites: Sequence[str] = (),
    operating_point: str | None = None,
    ceilings: Ceilings | None = None,
    max_candidates: int | None = None,
    workloads: Sequence[tuple[Workload, WorkloadKind]] | None = None,
    estimate: Any = True,
    regime: str = "burst",
) -> Prediction:
    """Predict `workloads` (default: those `specs` and `suites` name, else the default suite)
    on the target `target_name` (an installed target or a target file). `estimate`: True (the
    target's basis), coefficients to use (an EstimateCoefficients), or False (bound only)."""
    target = host.target(target_name)
    chosen = list(workloads) if workloads is not None else resolve(host, tuple(specs), tuple(suites))
    if max_candidates is None:
        return predict(chosen, target, host.mappings(), operating_point, ceilings, estimate=estimate, regime=regime)
    return predict(
        chosen,
        target,
        host.mappings(),
        operating_point,
        ceilings,
        max_candidates=max_candidates,
        estimate=estimate,
        regime=regime,
    )
