"""TensorForge Core: analytical lower bounds for ML workloads on hardware targets.

This module is the plugin author's surface, as `import pytest` or `from datasette import hookimpl`:
a workload, target, mapping or command plugin imports what it needs from `tensorforge` (and its
tests from `tensorforge.testing`, the plugin author's kit), nothing from the modules behind it:

    from tensorforge import Operator, Tensor, WorkloadKind, hookimpl

The names load on first use, so `import tensorforge` stays cheap. The Core is pure Python +
numpy + attrs/cattrs + pluggy + click. It never imports torch, pynvml, mlflow or
tensorforge_measure (a test enforces this in a fresh interpreter).
"""

from tensorforge.host.lazy import lazy_names

# Not typing.TYPE_CHECKING: importing typing would cost this module most of its import time;
# type checkers treat any name TYPE_CHECKING as true.
TYPE_CHECKING = False

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # hooks: the marker and the type of each register callback
    "hookimpl",
    "RegisterWorkload",
    "RegisterTarget",
    "RegisterMapping",
    # workload kinds, their operators and the problems those describe
    "WorkloadKind",
    "Workload",
    "Operator",
    "Tensor",
    "MatmulProblem",
    "AttentionProblem",
    "AttentionBackwardProblem",
    "StreamProblem",
    "CollectiveProblem",
    "Implementation",
    "ESTIMATE_CLASSES",
    # training steps (phase=train): the options and the parameter-side operators they add
    "Training",
    "TRAIN_OPTIMIZERS",
    # precisions and parameters
    "DTYPE_BYTES",
    "MATH_MODES",
    "parse_dtype",
    "parse_math_mode",
    "default_math_mode",
    "build_params",
    "params_spec",
    # collectives: the operations, their bus factor and calibrated curves
    "COLLECTIVE_OPS",
    "bus_factor",
    "ceiling_key",
    "fit_ceiling",
    "CollectiveCeiling",
    # targets and what they are made of
    "Target",
    "PEArray",
    "MemoryLevel",
    "OperatingPoint",
    "Interconnect",
    "LinkTier",
    "PowerFigures",
    "Ceilings",
    "validate_target",
    # mapping strategies
    "MappingStrategy",
    "GridStrategy",
    "MappingChoice",
    "Machine",
    "Residency",
    "finish",
    "EXHAUSTIVE",
    "RELAXATION",
    "UNSTATED",
    # commands: the shared options, the host and a prediction
    "PluginHost",
    "PluginReport",
    "pass_host",
    "target_option",
    "workload_options",
    "operating_point_option",
    "json_option",
    "run_prediction",
    "Prediction",
    # errors, documents a plugin reads, values it writes
    "TensorForgeError",
    "PluginError",
    "one_line",
    "read_json",
    "read_toml",
    "read_text",
    "to_data",
    # estimate probe plans a measuring backend sweeps (its `probe_plan`)
    "CUDA_PLAN",
    "CPU_PLAN",
    "ProbeItem",
]

# name -> "module" (same name there) or "module:name there"; loaded by __getattr__ on first use.
_HOMES = {
    "hookimpl": "tensorforge.hookspecs",
    "RegisterWorkload": "tensorforge.hookspecs",
    "RegisterTarget": "tensorforge.hookspecs",
    "RegisterMapping": "tensorforge.hookspecs",
    "WorkloadKind": "tensorforge.workloads.kinds",
    "Workload": "tensorforge.workloads.kinds",
    "Operator": "tensorforge.workloads.problems",
    "Tensor": "tensorforge.workloads.problems",
    "MatmulProblem": "tensorforge.workloads.problems",
    "AttentionProblem": "tensorforge.workloads.problems",
    "AttentionBackwardProblem": "tensorforge.workloads.problems",
    "StreamProblem": "tensorforge.workloads.problems",
    "CollectiveProblem": "tensorforge.workloads.collectives",
    "Implementation": "tensorforge.estimate.implementation",
    "Training": "tensorforge.workloads.training",
    "TRAIN_OPTIMIZERS": "tensorforge.workloads.training:OPTIMIZERS",
    "DTYPE_BYTES": "tensorforge.workloads.precision",
    "MATH_MODES": "tensorforge.workloads.precision",
    "parse_dtype": "tensorforge.workloads.precision",
    "parse_math_mode": "tensorforge.workloads.precision",
    "default_math_mode": "tensorforge.workloads.precision",
    "build_params": "tensorforge.workloads.params",
    "params_spec": "tensorforge.workloads.params",
    "COLLECTIVE_OPS": "tensorforge.workloads.collectives:OPS",
    "bus_factor": "tensorforge.workloads.collectives",
    "ceiling_key": "tensorforge.workloads.collectives",
    "fit_ceiling": "tensorforge.workloads.collectives",
    "CollectiveCeiling": "tensorforge.workloads.collectives",
    "Target": "tensorforge.hardware.target",
    "PEArray": "tensorforge.hardware.target",
    "MemoryLevel": "tensorforge.hardware.target",
    "OperatingPoint": "tensorforge.hardware.target",
    "Ceilings": "tensorforge.hardware.target",
    "validate_target": "tensorforge.hardware.target",
    "Interconnect": "tensorforge.hardware.interconnect",
    "LinkTier": "tensorforge.hardware.interconnect",
    "PowerFigures": "tensorforge.energy.model",
    "MappingStrategy": "tensorforge.bound.mappings.base",
    "MappingChoice": "tensorforge.bound.mappings.base",
    "Machine": "tensorforge.bound.mappings.base",
    "Residency": "tensorforge.bound.mappings.base",
    "finish": "tensorforge.bound.mappings.base",
    "EXHAUSTIVE": "tensorforge.bound.mappings.base",
    "RELAXATION": "tensorforge.bound.mappings.base",
    "UNSTATED": "tensorforge.bound.mappings.base",
    "GridStrategy": "tensorforge.bound.mappings.search",
    "PluginHost": "tensorforge.host.plugin_host",
    "PluginReport": "tensorforge.host.plugin_host",
    "pass_host": "tensorforge.cli.options",
    "target_option": "tensorforge.cli.options",
    "workload_options": "tensorforge.cli.options",
    "operating_point_option": "tensorforge.cli.options",
    "json_option": "tensorforge.cli.options",
    "run_prediction": "tensorforge.api",
    "Prediction": "tensorforge.results.prediction",
    "TensorForgeError": "tensorforge.errors",
    "PluginError": "tensorforge.errors",
    "one_line": "tensorforge.errors",
    "read_json": "tensorforge.files.documents",
    "read_toml": "tensorforge.files.documents",
    "read_text": "tensorforge.files.documents",
    "to_data": "tensorforge.files.serialize",
    "CUDA_PLAN": "tensorforge.estimate.probe_plan",
    "CPU_PLAN": "tensorforge.estimate.probe_plan",
    "ProbeItem": "tensorforge.estimate.probe_plan",
    "ESTIMATE_CLASSES": "tensorforge.estimate.classes:CLASSES",
}

if TYPE_CHECKING:  # what mypy and editors see; at run time __getattr__ loads the same names
    from tensorforge.api import run_prediction as run_prediction
    from tensorforge.bound.mappings.base import EXHAUSTIVE as EXHAUSTIVE
    from tensorforge.bound.mappings.base import RELAXATION as RELAXATION
    from tensorforge.bound.mappings.base import UNSTATED as UNSTATED
    from tensorforge.bound.mappings.base import Machine as Machine
    from tensorforge.bound.mappings.base import MappingChoice as MappingChoice
    from tensorforge.bound.mappings.base import MappingStrategy as MappingStrategy
    from tensorforge.bound.mappings.base import Residency as Residency
    from tensorforge.bound.mappings.base import finish as finish
    from tensorforge.bound.mappings.search import GridStrategy as GridStrategy
    from tensorforge.cli.options import json_option as json_option
    from tensorforge.cli.options import operating_point_option as operating_point_option
    from tensorforge.cli.options import pass_host as pass_host
    from tensorforge.cli.options import target_option as target_option
    from tensorforge.cli.options import workload_options as workload_options
    from tensorforge.energy.model import PowerFigures as PowerFigures
    from tensorforge.errors import PluginError as PluginError
    from tensorforge.errors import TensorForgeError as TensorForgeError
    from tensorforge.errors import one_line as one_line
    from tensorforge.estimate.classes import CLASSES as ESTIMATE_CLASSES
    from tensorforge.estimate.implementation import Implementation as Implementation
    from tensorforge.estimate.probe_plan import CPU_PLAN as CPU_PLAN
    from tensorforge.estimate.probe_plan import CUDA_PLAN as CUDA_PLAN
    from tensorforge.estimate.probe_plan import ProbeItem as ProbeItem
    from tensorforge.files.documents import read_json as read_json
    from tensorforge.files.documents import read_text as read_text
    from tensorforge.files.documents import read_toml as read_toml
    from tensorforge.files.serialize import to_data as to_data
    from tensorforge.hardware.interconnect import Interconnect as Interconnect
    from tensorforge.hardware.interconnect import LinkTier as LinkTier
    from tensorforge.hardware.target import Ceilings as Ceilings
    from tensorforge.hardware.target import MemoryLevel as MemoryLevel
    from tensorforge.hardware.target import OperatingPoint as OperatingPoint
    from tensorforge.hardware.target import PEArray as PEArray
    from tensorforge.hardware.target import Target as Target
    from tensorforge.hardware.target import validate_target as validate_target
    from tensorforge.hookspecs import RegisterMapping as RegisterMapping
    from tensorforge.hookspecs import RegisterTarget as RegisterTarget
    from tensorforge.hookspecs import RegisterWorkload as RegisterWorkload
    from tensorforge.hookspecs import hookimpl as hookimpl
    from tensorforge.host.plugin_host import PluginHost as PluginHost
    from tensorforge.host.plugin_host import PluginReport as PluginReport
    from tensorforge.results.prediction import Prediction as Prediction
    from tensorforge.workloads.collectives import OPS as COLLECTIVE_OPS
    from tensorforge.workloads.collectives import CollectiveCeiling as CollectiveCeiling
    from tensorforge.workloads.collectives import CollectiveProblem as CollectiveProblem
    from tensorforge.workloads.collectives import bus_factor as bus_factor
    from tensorforge.workloads.collectives import ceiling_key as ceiling_key
    from tensorforge.workloads.collectives import fit_ceiling as fit_ceiling
    from tensorforge.workloads.kinds import Workload as Workload
    from tensorforge.workloads.kinds import WorkloadKind as WorkloadKind
    from tensorforge.workloads.params import build_params as build_params
    from tensorforge.workloads.params import params_spec as params_spec
    from tensorforge.workloads.precision import DTYPE_BYTES as DTYPE_BYTES
    from tensorforge.workloads.precision import MATH_MODES as MATH_MODES
    from tensorforge.workloads.precision import default_math_mode as default_math_mode
    from tensorforge.workloads.precision import parse_dtype as parse_dtype
    from tensorforge.workloads.precision import parse_math_mode as parse_math_mode
    from tensorforge.workloads.problems import AttentionBackwardProblem as AttentionBackwardProblem
    from tensorforge.workloads.problems import AttentionProblem as AttentionProblem
    from tensorforge.workloads.problems import MatmulProblem as MatmulProblem
    from tensorforge.workloads.problems import Operator as Operator
    from tensorforge.workloads.problems import StreamProblem as StreamProblem
    from tensorforge.workloads.problems import Tensor as Tensor
    from tensorforge.workloads.training import OPTIMIZERS as TRAIN_OPTIMIZERS
    from tensorforge.workloads.training import Training as Training
else:
    __getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
