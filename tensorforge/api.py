"""The Core's API for the Ops side and for plugins: what they may use, in one place.

Ops wraps the Core; it imports from here rather than reaching into the modules behind it
(model, suite, render, the hosts' private state), so those modules can change shape without
breaking the other side, and what the Core promises is visible in one list. Checked by mypy
in strict mode.

The names load on first use (PEP 562, as in `tensorforge` and `tensorforge_measure`): a command
that needs the bound alone (`predict`) or one helper (an Ops refusal) no longer imports every
module behind this list (the estimate's fit and evaluation, the probe plans, the energy model)
to get it.
"""

from __future__ import annotations

from tensorforge.host.lazy import lazy_names

# Not typing.TYPE_CHECKING: importing typing would cost this module most of its import time;
# type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False

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
    "EAGER_GROUPS",
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

# Where each name lives: 'module' (the same name there) or 'module:attribute'.
_HOMES = {
    "CAP_MARGIN": "tensorforge.bound.cap_bound",
    "CapCalibration": "tensorforge.bound.cap_bound",
    "cap_bound_s": "tensorforge.bound.cap_bound",
    "cap_calibration": "tensorforge.bound.cap_bound",
    "UNSTATED": "tensorforge.bound.mappings.base",
    "predict": "tensorforge.bound.model",
    "search_of": "tensorforge.bound.model",
    "CliState": "tensorforge.cli.options",
    "core_host": "tensorforge.cli.options",
    "json_option": "tensorforge.cli.options",
    "operating_point_option": "tensorforge.cli.options",
    "optional_target_option": "tensorforge.cli.options",
    "output_options": "tensorforge.cli.options",
    "pass_host": "tensorforge.cli.options",
    "target_option": "tensorforge.cli.options",
    "wide_option": "tensorforge.cli.options",
    "workload_options": "tensorforge.cli.options",
    "short_basis": "tensorforge.cli.render",
    "table": "tensorforge.cli.render",
    "PLAIN": "tensorforge.cli.screen",
    "Screen": "tensorforge.cli.screen",
    "detect": "tensorforge.cli.screen",
    "paint": "tensorforge.cli.screen",
    "percent": "tensorforge.cli.units",
    "seconds": "tensorforge.cli.units",
    "si": "tensorforge.cli.units",
    "EnergyCoefficients": "tensorforge.energy.model",
    "PowerFigures": "tensorforge.energy.model",
    "bound_power_w": "tensorforge.energy.model",
    "flops_by_mode": "tensorforge.energy.model",
    "power_limited_ceilings": "tensorforge.energy.model",
    "window_time": "tensorforge.energy.model",
    "workload_energy": "tensorforge.energy.model",
    "PluginError": "tensorforge.errors",
    "TensorForgeError": "tensorforge.errors",
    "closest": "tensorforge.errors",
    "one_line": "tensorforge.errors",
    "unknown": "tensorforge.errors",
    "coefficients_for": "tensorforge.estimate.basis",
    "CLASSES": "tensorforge.estimate.classes",
    "workload_class": "tensorforge.estimate.classes",
    "EstimateCoefficients": "tensorforge.estimate.coefficients",
    "coefficients_from_data": "tensorforge.estimate.coefficients",
    "Evaluation": "tensorforge.estimate.evaluation",
    "Row": "tensorforge.estimate.evaluation",
    "evaluate_estimates": "tensorforge.estimate.evaluation:evaluate",
    "WorkloadPoint": "tensorforge.estimate.fit",
    "fit_coefficients": "tensorforge.estimate.fit",
    "CPU_PLAN": "tensorforge.estimate.probe_plan",
    "CUDA_PLAN": "tensorforge.estimate.probe_plan",
    "STREAM_OPS": "tensorforge.estimate.probe_plan",
    "ProbeItem": "tensorforge.estimate.probe_plan",
    "timing_modes": "tensorforge.estimate.probe_plan",
    "EAGER_GROUPS": "tensorforge.estimate.probe_plan",
    "warm_timed": "tensorforge.estimate.probe_plan",
    "TERM_LABELS": "tensorforge.estimate.render:SHORT",
    "TERMS": "tensorforge.estimate.results",
    "parse_json": "tensorforge.files.documents",
    "parse_toml": "tensorforge.files.documents",
    "read_document": "tensorforge.files.documents",
    "read_json": "tensorforge.files.documents",
    "read_stream_text": "tensorforge.files.documents",
    "read_text": "tensorforge.files.documents",
    "read_toml": "tensorforge.files.documents",
    "write_atomic": "tensorforge.files.documents",
    "STDOUT": "tensorforge.files.output",
    "Claim": "tensorforge.files.output",
    "claim": "tensorforge.files.output",
    "write_output": "tensorforge.files.output",
    "canonical_json": "tensorforge.files.serialize",
    "converter": "tensorforge.files.serialize",
    "to_data": "tensorforge.files.serialize",
    "Ceilings": "tensorforge.hardware.target",
    "Target": "tensorforge.hardware.target",
    "signal_name": "tensorforge.host.interrupts",
    "signals_as_interrupts": "tensorforge.host.interrupts",
    "signals_ignored": "tensorforge.host.interrupts",
    "PluginOptions": "tensorforge.host.options",
    "BaseHost": "tensorforge.host.plugin_host",
    "PluginHost": "tensorforge.host.plugin_host",
    "PluginReport": "tensorforge.host.plugin_host",
    "Prediction": "tensorforge.results.prediction",
    "CollectiveCeiling": "tensorforge.workloads.collectives",
    "collective_ceilings": "tensorforge.workloads.collectives:ceilings_from_data",
    "FiniteFloat": "tensorforge.workloads.finite",
    "finite_in": "tensorforge.workloads.finite",
    "finite_number": "tensorforge.workloads.finite",
    "Workload": "tensorforge.workloads.kinds",
    "WorkloadKind": "tensorforge.workloads.kinds",
    "VECTOR_EXECUTES": "tensorforge.workloads.precision",
    "parse_fields": "tensorforge.workloads.suite",
    "resolve": "tensorforge.workloads.suite",
    "resolve_spec": "tensorforge.workloads.suite",
}

if TYPE_CHECKING:  # what mypy and editors see; at run time __getattr__ loads the same names
    from collections.abc import Sequence
    from typing import Any

    from tensorforge.bound.cap_bound import CAP_MARGIN as CAP_MARGIN
    from tensorforge.bound.cap_bound import CapCalibration as CapCalibration
    from tensorforge.bound.cap_bound import cap_bound_s as cap_bound_s
    from tensorforge.bound.cap_bound import cap_calibration as cap_calibration
    from tensorforge.bound.mappings.base import UNSTATED as UNSTATED
    from tensorforge.bound.model import predict as predict
    from tensorforge.bound.model import search_of as search_of
    from tensorforge.cli.options import CliState as CliState
    from tensorforge.cli.options import core_host as core_host
    from tensorforge.cli.options import json_option as json_option
    from tensorforge.cli.options import operating_point_option as operating_point_option
    from tensorforge.cli.options import optional_target_option as optional_target_option
    from tensorforge.cli.options import output_options as output_options
    from tensorforge.cli.options import pass_host as pass_host
    from tensorforge.cli.options import target_option as target_option
    from tensorforge.cli.options import wide_option as wide_option
    from tensorforge.cli.options import workload_options as workload_options
    from tensorforge.cli.render import short_basis as short_basis
    from tensorforge.cli.render import table as table
    from tensorforge.cli.screen import PLAIN as PLAIN
    from tensorforge.cli.screen import Screen as Screen
    from tensorforge.cli.screen import detect as detect
    from tensorforge.cli.screen import paint as paint
    from tensorforge.cli.units import percent as percent
    from tensorforge.cli.units import seconds as seconds
    from tensorforge.cli.units import si as si
    from tensorforge.energy.model import EnergyCoefficients as EnergyCoefficients
    from tensorforge.energy.model import PowerFigures as PowerFigures
    from tensorforge.energy.model import bound_power_w as bound_power_w
    from tensorforge.energy.model import flops_by_mode as flops_by_mode
    from tensorforge.energy.model import power_limited_ceilings as power_limited_ceilings
    from tensorforge.energy.model import window_time as window_time
    from tensorforge.energy.model import workload_energy as workload_energy
    from tensorforge.errors import PluginError as PluginError
    from tensorforge.errors import TensorForgeError as TensorForgeError
    from tensorforge.errors import closest as closest
    from tensorforge.errors import one_line as one_line
    from tensorforge.errors import unknown as unknown
    from tensorforge.estimate.basis import coefficients_for as coefficients_for
    from tensorforge.estimate.classes import CLASSES as CLASSES
    from tensorforge.estimate.classes import workload_class as workload_class
    from tensorforge.estimate.coefficients import EstimateCoefficients as EstimateCoefficients
    from tensorforge.estimate.coefficients import coefficients_from_data as coefficients_from_data
    from tensorforge.estimate.evaluation import Evaluation as Evaluation
    from tensorforge.estimate.evaluation import Row as Row
    from tensorforge.estimate.evaluation import evaluate as evaluate_estimates
    from tensorforge.estimate.fit import WorkloadPoint as WorkloadPoint
    from tensorforge.estimate.fit import fit_coefficients as fit_coefficients
    from tensorforge.estimate.probe_plan import CPU_PLAN as CPU_PLAN
    from tensorforge.estimate.probe_plan import CUDA_PLAN as CUDA_PLAN
    from tensorforge.estimate.probe_plan import ProbeItem as ProbeItem
    from tensorforge.estimate.probe_plan import STREAM_OPS as STREAM_OPS
    from tensorforge.estimate.probe_plan import EAGER_GROUPS as EAGER_GROUPS
    from tensorforge.estimate.probe_plan import timing_modes as timing_modes
    from tensorforge.estimate.probe_plan import warm_timed as warm_timed
    from tensorforge.estimate.render import SHORT as TERM_LABELS
    from tensorforge.estimate.results import TERMS as TERMS
    from tensorforge.files.documents import parse_json as parse_json
    from tensorforge.files.documents import parse_toml as parse_toml
    from tensorforge.files.documents import read_document as read_document
    from tensorforge.files.documents import read_json as read_json
    from tensorforge.files.documents import read_stream_text as read_stream_text
    from tensorforge.files.documents import read_text as read_text
    from tensorforge.files.documents import read_toml as read_toml
    from tensorforge.files.documents import write_atomic as write_atomic
    from tensorforge.files.output import Claim as Claim
    from tensorforge.files.output import STDOUT as STDOUT
    from tensorforge.files.output import claim as claim
    from tensorforge.files.output import write_output as write_output
    from tensorforge.files.serialize import canonical_json as canonical_json
    from tensorforge.files.serialize import converter as converter
    from tensorforge.files.serialize import to_data as to_data
    from tensorforge.hardware.target import Ceilings as Ceilings
    from tensorforge.hardware.target import Target as Target
    from tensorforge.host.interrupts import signal_name as signal_name
    from tensorforge.host.interrupts import signals_as_interrupts as signals_as_interrupts
    from tensorforge.host.interrupts import signals_ignored as signals_ignored
    from tensorforge.host.options import PluginOptions as PluginOptions
    from tensorforge.host.plugin_host import BaseHost as BaseHost
    from tensorforge.host.plugin_host import PluginHost as PluginHost
    from tensorforge.host.plugin_host import PluginReport as PluginReport
    from tensorforge.results.prediction import Prediction as Prediction
    from tensorforge.workloads.collectives import CollectiveCeiling as CollectiveCeiling
    from tensorforge.workloads.collectives import ceilings_from_data as collective_ceilings
    from tensorforge.workloads.finite import FiniteFloat as FiniteFloat
    from tensorforge.workloads.finite import finite_in as finite_in
    from tensorforge.workloads.finite import finite_number as finite_number
    from tensorforge.workloads.kinds import Workload as Workload
    from tensorforge.workloads.kinds import WorkloadKind as WorkloadKind
    from tensorforge.workloads.precision import VECTOR_EXECUTES as VECTOR_EXECUTES
    from tensorforge.workloads.suite import parse_fields as parse_fields
    from tensorforge.workloads.suite import resolve as resolve
    from tensorforge.workloads.suite import resolve_spec as resolve_spec
else:
    __getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())


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
    from tensorforge.bound.model import predict
    from tensorforge.workloads.suite import resolve

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
