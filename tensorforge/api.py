"""The Core's API for the Ops side and for plugins: what they may use, in one place.

Ops wraps the Core; it imports from here rather than reaching into the modules behind it
(model, suite, render, the hosts' private state), so those modules can change shape without
breaking the other side, and what the Core promises is visible in one list. Checked by mypy
in strict mode.
"""

from collections.abc import Sequence

from .cli_options import (
    CliState,
    core_host,
    operating_point_option,
    output_options,
    pass_host,
    target_option,
    workload_options,
)
from .errors import PluginError, TensorForgeError, closest, one_line, unknown
from .finite import FiniteFloat, finite_in, finite_number
from .fileio import parse_json, parse_toml, read_document, read_json, read_text, read_toml, write_atomic
from .mappings.base import UNSTATED
from .model import predict, search_of
from .interrupts import signal_name, signals_as_interrupts, signals_ignored
from .output import STDOUT, Claim, claim, write_output
from .plugin_options import PluginOptions
from .plugins import BaseHost, PluginHost, PluginReport
from .precision import VECTOR_EXECUTES
from .render import table
from .results import Prediction
from .serialize import canonical_json, converter, to_data
from .suite import parse_fields, resolve
from .target import Ceilings, Target
from .units import percent, seconds, si
from .workload import Workload, WorkloadKind

__all__ = [
    "STDOUT", "Claim", "claim", "output_options", "write_output",
    "signal_name", "signals_as_interrupts", "signals_ignored",
    "BaseHost", "Ceilings", "FiniteFloat", "finite_in", "finite_number", "CliState", "PluginError", "PluginHost", "PluginOptions", "PluginReport",
    "Prediction", "Target", "TensorForgeError", "Workload", "WorkloadKind",
    "canonical_json", "closest", "core_host", "one_line", "operating_point_option", "parse_fields",
    "parse_json", "parse_toml", "pass_host", "percent", "predict", "read_document", "read_json",
    "read_text", "read_toml", "resolve", "run_prediction", "seconds", "si", "table", "target_option",
    "to_data", "unknown", "workload_options", "write_atomic",
    "VECTOR_EXECUTES",
    # the capture (tensorforge_ops.capture) structures the Core's results with the Core's own
    # cattrs converter, and derives how a version-1 capture's bounds were searched for
    "UNSTATED", "converter", "search_of",
]


def run_prediction(host: PluginHost, target_name: str, specs: Sequence[str] = (),
                   suites: Sequence[str] = (), operating_point: str | None = None,
                   ceilings: Ceilings | None = None, max_candidates: int | None = None,
                   workloads: Sequence[tuple[Workload, WorkloadKind]] | None = None) -> Prediction:
    """Predict `workloads` (default: those `specs` and `suites` name, else the default suite)
    on the target `target_name` (an installed target or a target file)."""
    target = host.target(target_name)
    chosen = list(workloads) if workloads is not None else resolve(host, tuple(specs), tuple(suites))
    if max_candidates is None:
        return predict(chosen, target, host.mappings(), operating_point, ceilings)
    return predict(chosen, target, host.mappings(), operating_point, ceilings, max_candidates=max_candidates)
