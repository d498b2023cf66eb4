"""The capture's JSON Schema and its field reference, generated from the classes.

Why generated: a schema written by hand drifts from the code that writes captures. Both
published files — docs/capture.schema.json and the field reference inside docs/capture.md —
are made here from the attrs classes and their field metadata (capture/fields.py); the Core's
result classes, which carry no metadata, are described in CORE_FIELDS below. A test regenerates
both and fails when they differ from what is committed, or when a field has no description.

    python -m tensorforge_measure.capture.schema --write   # regenerate after changing a class
    python -m tensorforge_measure.capture.schema --check   # exit 1 when the published files drift
"""

import argparse
import collections.abc
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

import attrs

from tensorforge_measure.capture.fields import CONST, DOC, OMIT, UNIT
from tensorforge_measure.capture.model import SCHEMA, SCHEMA_VERSION, Capture

# The Core's classes inside PREDICTED (and the target description) and the timing statistics:
# "Class.field": (meaning, unit).
CORE_FIELDS: dict[str, tuple[str, str | None]] = {
    "Prediction.label": ("'PREDICTED'", None),
    "Prediction.bound": ("'analytical' (datasheet ceilings) or 'calibrated' (measured ceilings)", None),
    "Prediction.target": ("the target predicted", None),
    "Prediction.operating_point": ("the operating point predicted", None),
    "Prediction.clock_mhz": ("the PE-array clock of that operating point", "MHz"),
    "Prediction.ceilings": ("the rates the model divided by", None),
    "Prediction.max_candidates_per_operator": ("the exploration bound: most mappings tried per operator", "count"),
    "Prediction.candidates": ("mappings evaluated in total", "count"),
    "Prediction.search": (
        "'exhaustive', 'relaxation' (--max-candidates cut a search) or 'unstated' "
        "(a strategy, or a version-1 capture, did not say)",
        None,
    ),
    "Prediction.workloads": ("per workload: its lower bound and how it was reached", None),
    "Prediction.notes": ("caveats of the prediction as a whole", None),
    "WorkloadPrediction.name": ("the workload's name in the suite", None),
    "WorkloadPrediction.kind": ("its workload kind (gemm, conv2d, transformer...)", None),
    "WorkloadPrediction.spec": ("its full spec, parameters spelled out", None),
    "WorkloadPrediction.flops": ("arithmetic of the whole workload", "FLOP"),
    "WorkloadPrediction.compulsory_bytes": ("inputs read once + final outputs written once", "B"),
    "WorkloadPrediction.footprint_bytes": ("device memory the workload needs", "B"),
    "WorkloadPrediction.fits_in_memory": ("whether the footprint fits the target's DRAM", None),
    "WorkloadPrediction.compute_s": ("sum of the operators' compute times", "s"),
    "WorkloadPrediction.memory_s": ("sum of the operators' memory times", "s"),
    "WorkloadPrediction.latency_s": ("the lower bound: sum over operators of max(compute, memory)", "s"),
    "WorkloadPrediction.bottleneck": (
        "the larger of compute_s and memory_s (compute on a tie): 'compute', else 'memory' or, where "
        "link time holds most of memory_s, 'interconnect' (a classification)",
        None,
    ),
    "WorkloadPrediction.candidates": ("mappings evaluated for this workload", "count"),
    "WorkloadPrediction.search": (
        "how its operators' bounds were searched for: 'exhaustive', 'relaxation' or 'unstated'",
        None,
    ),
    "WorkloadPrediction.operators": ("the operators it decomposes into", None),
    "OperatorPrediction.name": ("operator name (matmul, attention, norm...)", None),
    "OperatorPrediction.count": ("how many times the workload executes it", "count"),
    "OperatorPrediction.problem_type": ("the Core problem class (MatmulProblem, StreamProblem...)", None),
    "OperatorPrediction.problem": ("the problem's dimensions and dtypes", None),
    "OperatorPrediction.math_mode": ("math mode it executes in", None),
    "OperatorPrediction.ceiling_origin": ("'datasheet' or 'calibrated': which rate timed it", None),
    "OperatorPrediction.flops": ("its arithmetic, all executions", "FLOP"),
    "OperatorPrediction.compulsory_bytes": ("each of its tensors read or written once, all executions", "B"),
    "OperatorPrediction.mapping": ("the chosen mapping of one execution", None),
    "OperatorPrediction.compute_s": ("compute time, all executions", "s"),
    "OperatorPrediction.memory_s": ("memory time, all executions", "s"),
    "OperatorPrediction.latency_s": ("max(compute, memory), all executions", "s"),
    "OperatorPrediction.bottleneck": ("'compute' or 'memory'", None),
    "MappingChoice.strategy": ("the mapping strategy that won (tiled-matmul, streaming...)", None),
    "MappingChoice.tile": ("tile extent per loop dimension", "elements"),
    "MappingChoice.split": ("split-K factor (1: none)", "count"),
    "MappingChoice.tiles": ("work items", "count"),
    "MappingChoice.concurrent": ("work items in flight across the PE array", "count"),
    "MappingChoice.waves": ("ceil(tiles / concurrent): wave quantization", "count"),
    "MappingChoice.traffic": ("bytes moved per memory level ('dram', 'cache_to_unit', 'unit_sram')", "B"),
    "MappingChoice.compute_s": ("compute time of one execution", "s"),
    "MappingChoice.memory_s": ("memory time of one execution (the slowest level)", "s"),
    "MappingChoice.memory_level": ("the level that set memory_s", None),
    "MappingChoice.latency_s": ("max(compute, memory) of one execution", "s"),
    "MappingChoice.bottleneck": ("'compute' or 'memory'", None),
    "MappingChoice.candidates": ("mappings this strategy evaluated", "count"),
    "MappingChoice.notes": ("caveats of this mapping", None),
    "MappingChoice.search": (
        "'exhaustive' (the minimum of the strategy's space), 'relaxation' (a cut "
        "search: below every mapping of the space) or 'unstated'",
        None,
    ),
    "MappingChoice.space": ("mappings in the strategy's full space (0: the strategy does not say)", "count"),
    "MappingChoice.origin": (
        "which ceilings timed it when not its math mode's (a collective: 'datasheet' "
        "links or the 'calibrated' curve); null: the math mode's",
        None,
    ),
    "Ceilings.origin": ("'datasheet' or 'calibrated'", None),
    "Ceilings.compute": ("whole-array rate per math mode", "FLOP/s"),
    "Ceilings.dram_bytes_per_s": ("DRAM bandwidth", "B/s"),
    "Ceilings.sram_bytes_per_s": ("bandwidth per SRAM level where known", "B/s"),
    "Ceilings.source": ("where the figures come from", None),
    "Ceilings.compute_origin": ("per math mode, its origin where a merge filled it from another", None),
    "Ceilings.vector": ("vector-unit rate per precision (elementwise work)", "FLOP/s"),
    "Ceilings.special": ("special-function results per precision (exp, tanh...)", "1/s"),
    "Ceilings.vector_origin": ("origin of the vector and special rates when not `origin`", None),
    "Ceilings.device": ("the device calibrated ceilings were measured on, where known", None),
    "Ceilings.collectives": ("calibrated collective curves by 'op/ranks' (CollectiveCeiling as data)", None),
    "CollectiveCeiling.op": ("the collective (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast)", None),
    "CollectiveCeiling.ranks": ("ranks it was swept over", "count"),
    "CollectiveCeiling.bus_bytes_per_s": ("beta: asymptotic bus bandwidth (nccl-tests' convention)", "B/s"),
    "CollectiveCeiling.latency_s": ("alpha: the largest intercept under every swept point", "s"),
    "CollectiveCeiling.floor_s": ("the fastest swept message (after the allowance)", "s"),
    "CollectiveCeiling.min_bytes": ("smallest swept size", "B"),
    "CollectiveCeiling.max_bytes": ("largest swept size", "B"),
    "CollectiveCeiling.source": ("where the curve was measured", None),
    "CollectiveCeiling.points": (
        "the knots (bytes, seconds): per swept size its fastest time after the allowance, lowered to the "
        "fastest larger size",
        None,
    ),
    "CollectiveCeiling.typical": (
        "the sweep's median (bytes, seconds) per swept size, unlowered: what the estimate expects (never "
        "part of the bound)",
        None,
    ),
    "CollectiveCeiling.interpolation": (
        "between two knots: 'chord' (time concave in size, NCCL) or 'step' (the smaller knot)",
        None,
    ),
    "CollectiveCeiling.eager_floor_s": (
        "one eager call of the smallest swept message in a host-bound program: the longer of the host's "
        "cost per call and the device's median (context, not part of the bound)",
        "s",
    ),
    "CollectiveCeiling.drift": ("relative allowance taken off every swept time", "1"),
    "CollectiveCeiling.resolution_s": ("absolute allowance taken off every swept time (timer resolution)", "s"),
    "Target.name": ("target name", None),
    "Target.description": ("what it is", None),
    "Target.pe_array": ("the processing units and their rates", None),
    "Target.sram": ("on-chip SRAM levels, innermost first", None),
    "Target.dram_capacity_bytes": ("DRAM capacity", "B"),
    "Target.operating_points": ("clock and bandwidth configurations", None),
    "Target.default_operating_point": ("the operating point used when none is named", None),
    "Target.sources": ("where each datasheet figure comes from", None),
    "Target.notes": ("caveats of the description", None),
    "Target.device_names": ("names a measuring device reports for this part", None),
    "Target.architecture": (
        "architecture family whose tile menus and calibrated efficiencies the estimate "
        "uses (e.g. 'nvidia-sm90'); empty when not declared",
        None,
    ),
    "Target.power": (
        "power figures the target declares (TDP, power limits), each sourced under 'power.<figure>'; "
        "null when it declares none",
        None,
    ),
    "PowerFigures.tdp_w": ("thermal design power from the datasheet", "W"),
    "PowerFigures.power_limit_w": ("the default power limit where it differs from the TDP; null: the TDP", "W"),
    "PowerFigures.power_limit_min_w": ("lowest power limit the part may be configured to", "W"),
    "PowerFigures.power_limit_max_w": ("highest power limit the part may be configured to", "W"),
    "PowerFigures.idle_w": ("what the board draws doing nothing, as the target declares it", "W"),
    "PowerFigures.joules_per_flop": (
        "energy per FLOP above idle, per math mode, as the target declares it: the estimate's power cap",
        "J",
    ),
    "PowerFigures.joules_per_dram_byte": (
        "energy per byte moved to or from DRAM, as the target declares it: predict's energy figures only",
        "J",
    ),
    "PowerFigures.limit_acts_s": (
        "the call time from which the board's power limit slows a call (the estimate's power cap); null: "
        "the estimate's default",
        "s",
    ),
    "Target.estimate": (
        "estimate coefficients the target declares (a target file's 'estimate' table); null when it declares none",
        None,
    ),
    "Prediction.estimate_basis": (
        "where the estimate's coefficients come from, in words; null without an estimate",
        None,
    ),
    "Prediction.estimate_basis_kind": (
        "'calibrated', 'declared', 'carried-over' or 'carried-over-other-family'; null without an estimate",
        None,
    ),
    "Prediction.estimate_protocol": (
        "the measurement protocol the estimate is shown for ('graph-flushed', 'eager-flushed', 'graph-warm' "
        "or 'eager-warm': predict --protocol); null: both the device and the eager estimates",
        None,
    ),
    "Prediction.estimate_regime": (
        "'burst' or 'sustained' (predict --regime: every call at the rate the board's power limit allows); "
        "null without an estimate; absent in older captures",
        None,
    ),
    "Prediction.cache_states": (
        "which cache state each bound assumes, by the field that holds it: 'latency_s' cold (a flush before "
        "each call), 'warm_latency_s' warm (a call repeated without one); absent in older captures",
        None,
    ),
    "WorkloadPrediction.warm_latency_s": (
        "the warm bound: a call repeated on the same tensors without a cache flush (<= latency_s); absent "
        "in older captures",
        "s",
    ),
    "OperatorPrediction.warm_mapping": (
        "the mapping of the warm bound, one execution (its notes say what the warm cache was allowed to hold); "
        "absent in older captures",
        None,
    ),
    "OperatorPrediction.warm_memory_s": ("memory time of the warm bound, all executions", "s"),
    "OperatorPrediction.warm_latency_s": ("the warm bound, all executions (<= latency_s)", "s"),
    "WorkloadPrediction.estimate": (
        "the expected latency beside the bound (never a bound); null without an estimate, and absent in older captures",
        None,
    ),
    "WorkloadEstimate.label": ("'PREDICTED estimate'", None),
    "WorkloadEstimate.bound_s": ("the lower bound the waterfall starts from (the workload's latency_s)", "s"),
    "WorkloadEstimate.device_s": (
        "expected device time: kernels back to back (a CUDA-graph replay, a timed single kernel)",
        "s",
    ),
    "WorkloadEstimate.eager_s": ("expected time launched eagerly from Python (device + host overhead)", "s"),
    "WorkloadEstimate.eager_warm_s": (
        "expected time of one eager call timed without an L2 flush before it, the device idle when it is "
        "issued (protocol 'eager-warm': an event pair or a wall clock + synchronize around one call); "
        "0: not computed (an older capture), eager_s serves",
        "s",
    ),
    "WorkloadEstimate.kernels": ("kernels the implementation launches", "count"),
    "WorkloadEstimate.calls": (
        "framework calls one execution makes from Python (a library call may launch several kernels: a "
        "split-K reduction, a split-KV combine); the energy window's host pace counts these; 0: not counted",
        "count",
    ),
    "WorkloadEstimate.warm_saving_s": (
        "what one execution saves in a window of executions back to back without the L2 flush (an energy "
        "window): the largest of its operators' classes' calibrated savings, each at most its share of the "
        "execution's flushed time (tensorforge/estimate/warm.py); 0 where the calibration timed no probe warm",
        "s",
    ),
    "WorkloadEstimate.terms": ("the waterfall: seconds each named term adds to the bound (docs/estimate.md)", "s"),
    "WorkloadEstimate.operators": ("per operator: its realistic mapping, estimate and terms", None),
    "OperatorEstimate.name": ("operator name", None),
    "OperatorEstimate.count": ("how many times the workload executes it", "count"),
    "OperatorEstimate.kernels": ("kernels per execution", "count"),
    "OperatorEstimate.mapping": ("the realistic configuration (library tile, split, waves)", None),
    "OperatorEstimate.bound_s": ("its share of the lower bound, all executions", "s"),
    "OperatorEstimate.estimate_s": ("its expected time, all executions (eager launch costs)", "s"),
    "OperatorEstimate.terms": ("seconds each named term adds to its bound, all executions", "s"),
    "OperatorEstimate.implementation": ("'declared by the workload plugin' or the defaults used", None),
    "OperatorEstimate.notes": ("what the estimate assumed for it", None),
    "Target.devices": ("identical devices in the system (1: a single device)", "count"),
    "Target.interconnect": ("how a system's devices are linked; null for a single device", None),
    "Interconnect.tiers": ("tiers of links, innermost first", None),
    "LinkTier.name": ("tier name (nvlink, infiniband...)", None),
    "LinkTier.span": ("devices one domain of this tier joins", "count"),
    "LinkTier.bytes_per_s": ("bandwidth per device per direction", "B/s"),
    "LinkTier.latency_s": ("one hop across the tier", "s"),
    "LinkTier.topology": ("switch, direct, ring, pcie or host-memory", None),
    "LinkTier.in_switch_reduction": ("whether the tier's switches can add the data passing through", None),
    "PEArray.units": ("identical processing units (SMs, cores)", "count"),
    "PEArray.unit_name": ("what a unit is called", None),
    "PEArray.flops_per_clock": ("dense matrix FLOPs per clock per unit, per math mode", "FLOP/clock"),
    "PEArray.vector_flops_per_clock": ("vector FLOPs per clock per unit, per precision", "FLOP/clock"),
    "PEArray.special_per_clock": ("transcendental results per clock per unit, per precision", "1/clock"),
    "MemoryLevel.name": ("level name (shared_memory, l2...)", None),
    "MemoryLevel.capacity_bytes": ("capacity (per unit for per_unit levels)", "B"),
    "MemoryLevel.scope": ("'per_unit' or 'shared'", None),
    "MemoryLevel.bytes_per_clock": ("bandwidth per clock where published", "B/clock"),
    "OperatingPoint.name": ("operating point name", None),
    "OperatingPoint.clock_mhz": ("PE-array clock", "MHz"),
    "OperatingPoint.dram_bandwidth_bytes_per_s": ("DRAM bandwidth at this point", "B/s"),
    "OperatingPoint.description": ("what it is", None),
    "SampleStats.n": ("number of samples", "count"),
    "SampleStats.p10": ("10th percentile (numpy 'linear')", "s"),
    "SampleStats.p50": ("median", "s"),
    "SampleStats.p90": ("90th percentile", "s"),
    "SampleStats.mean": ("mean", "s"),
    "SampleStats.stdev": ("sample standard deviation (ddof=1)", "s"),
    "SampleStats.cv": ("stdev / mean", "1"),
    "SampleStats.rel_iqr": ("(p75 - p25) / p50: the spread the timing loop stops on", "1"),
    "SampleStats.min": ("fastest sample", "s"),
    "SampleStats.max": ("slowest sample", "s"),
}

# What the Core's classes (which keep their docstrings for their own readers) are, in the capture.
CORE_CLASSES: dict[str, str] = {
    "Prediction": "The Core's prediction of every workload on one target, as `predict --json` prints it.",
    "WorkloadPrediction": "One workload's lower bound and the operators it is the sum of.",
    "OperatorPrediction": "One operator: its work, the mapping chosen for it, and its times.",
    "MappingChoice": "How one operator is tiled onto the PE array and SRAM, and the times that implies.",
    "Ceilings": "The rates a prediction divided by (datasheet or calibrated).",
    "Target": "The hardware target as described to the Core (docs/targets.md).",
    "PEArray": "The processing units and their rates per clock.",
    "MemoryLevel": "One on-chip SRAM level.",
    "OperatingPoint": "A clock and memory configuration the part runs at.",
    "SampleStats": "Summary statistics of a workload's timing samples.",
    "WorkloadEstimate": "The expected latency of one workload as a waterfall of named terms on its bound.",
    "OperatorEstimate": "One operator's expected time on a realistic mapping.",
    "Interconnect": "How the devices of a system target reach each other (docs/several-devices.md).",
    "LinkTier": "One tier of links of a system target.",
    "PowerFigures": "Power figures a target declares (datasheet TDP and limits; docs/energy.md).",
    "CollectiveCeiling": (
        "A calibrated collective curve: inside the sweep max(floor, envelope of the knots), beyond it "
        "max(floor, alpha + S x factor / beta)."
    ),
}

# Which label a class's fields carry, by the top-level field that first reaches it.
TOP_LEVEL = {
    "predicted": "PREDICTED",
    "target_description": "PREDICTED (input)",
    "measured": "MEASURED",
    "calibrated": "CALIBRATED",
    "diagnostic": "DIAGNOSTIC",
    "policy": "POLICY",
    "comparison": "PREDICTED vs MEASURED",
    "provenance": "provenance",
    "digest": "provenance",
}

NUMBER = {
    "anyOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}],
    "description": "a number; canonical JSON writes infinities and NaN as these strings",
}


def _describe(cls: type, f: "attrs.Attribute[Any]") -> tuple[str, str | None]:
    if DOC in f.metadata:
        return f.metadata[DOC], f.metadata.get(UNIT)
    try:
        return CORE_FIELDS[f"{cls.__name__}.{f.name}"]
    except KeyError:
        raise KeyError(
            f"{cls.__name__}.{f.name} has no description: give it one with capture.fields "
            "or in capture.schema.CORE_FIELDS"
        ) from None


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return None


class _Walker:
    """Visits the classes reachable from Capture, in field order, once each."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self.order: list[type] = []
        self.labels: dict[str, str] = {}

    def schema(self, tp: Any, label: str) -> dict[str, Any]:
        if tp is Any:
            return {}
        if tp is type(None):
            return {"type": "null"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"$ref": "#/$defs/Number"}
        if tp is str:
            return {"type": "string"}
        args = _union_args(tp)
        if args is not None:
            options = [self.schema(a, label) for a in args]
            if type(None) in args and len(args) == 2:
                return {"anyOf": options}
            return {"oneOf": options}
        origin, params = typing.get_origin(tp), typing.get_args(tp)
        if origin is tuple:
            if len(params) == 2 and params[1] is Ellipsis:
                return {"type": "array", "items": self.schema(params[0], label)}
            return {
                "type": "array",
                "prefixItems": [self.schema(p, label) for p in params],
                "items": False,
                "minItems": len(params),
            }
        if origin in (dict, collections.abc.Mapping):
            return {"type": "object", "additionalProperties": self.schema(params[1], label)}
        if attrs.has(tp):
            self._class(tp, label)
            return {"$ref": f"#/$defs/{tp.__name__}"}
        raise TypeError(f"no JSON Schema for {tp!r}")

    def _class(self, cls: type, label: str) -> None:
        name = cls.__name__
        if name in self.defs:
            return
        self.defs[name] = {}  # reserve: classes may refer to each other
        self.order.append(cls)
        self.labels[name] = label
        hints = typing.get_type_hints(cls)
        properties, required = {}, []
        for f in attrs.fields(cls):
            meaning, unit = _describe(cls, f)
            field_label = TOP_LEVEL.get(f.name, label) if cls is Capture else label
            prop = self.schema(hints[f.name], field_label)
            if CONST in f.metadata:
                prop = {**prop, "const": f.metadata[CONST]}
            prop["description"] = meaning + (f" [{unit}]" if unit else "")
            properties[f.name] = prop
            # Ours: every field but an optional() one is always written. The Core's: a field with
            # a default may be absent (a capture written before the Core added it) and reads as
            # the default.
            if (DOC in f.metadata and not f.metadata.get(OMIT)) or (
                DOC not in f.metadata and f.default is attrs.NOTHING
            ):
                required.append(f.name)
        doc = CORE_CLASSES.get(name) or " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        self.defs[name] = {
            "type": "object",
            "description": doc,
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }


def walk() -> _Walker:
    walker = _Walker()
    walker.schema(Capture, "the document")
    return walker


def json_schema() -> dict[str, Any]:
    walker = walk()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://tensorforge.dev/schemas/{SCHEMA}/{SCHEMA_VERSION}.json",
        "title": f"TensorForge capture, schema version {SCHEMA_VERSION}",
        "description": "Generated from tensorforge_measure.capture (python -m tensorforge_measure.capture.schema "
        "--write); docs/capture.md explains it.",
        "$ref": "#/$defs/Capture",
        "$defs": {"Number": NUMBER, **{name: walker.defs[name] for name in sorted(walker.defs)}},
    }


def _type_text(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        target = prop["$ref"].rsplit("/", 1)[1]
        return "number" if target == "Number" else f"[{target}](#{target.lower()})"
    if "anyOf" in prop:
        return " or ".join(_type_text(p) for p in prop["anyOf"])
    if "oneOf" in prop:
        return " or ".join(_type_text(p) for p in prop["oneOf"])
    kind = prop.get("type")
    if kind == "array":
        if "prefixItems" in prop:
            return "[" + ", ".join(_type_text(p) for p in prop["prefixItems"]) + "]"
        return f"list of {_type_text(prop['items'])}"
    if kind == "object":
        return f"map of name to {_type_text(prop['additionalProperties'])}"
    return kind or "any JSON value"


def field_reference() -> str:
    """Markdown: one table per class, in the order a reader meets them."""
    walker = walk()
    out: list[str] = []
    for cls in walker.order:
        definition = walker.defs[cls.__name__]
        out += [
            f"### {cls.__name__}",
            "",
            f"Label: **{walker.labels[cls.__name__]}**. {definition['description']}".rstrip(),
            "",
            "| field | type | unit | written | meaning |",
            "|---|---|---|---|---|",
        ]
        for name, prop in definition["properties"].items():
            meaning, _, unit = prop["description"].partition(" [")
            const = f" (always `{json.dumps(prop['const'])}`)" if "const" in prop else ""
            written = "always" if name in definition["required"] else "optional"
            cell = (meaning + const).replace("|", "\\|")
            out.append(f"| `{name}` | {_type_text(prop)} | {unit.rstrip(']') or '-'} | {written} | {cell} |")
        out.append("")
    return "\n".join(out)


ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "capture.schema.json"
DOC_FILE = ROOT / "docs" / "capture.md"
BEGIN, END = (
    "<!-- field reference: generated by python -m tensorforge_measure.capture.schema --write -->",
    "<!-- end of generated field reference -->",
)


def published() -> dict[Path, str]:
    """Each published file as it should read now."""
    doc = DOC_FILE.read_text(encoding="utf-8")
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    if not rest:
        raise ValueError(f"{DOC_FILE} lacks the generated-section marker {BEGIN!r}")
    return {
        SCHEMA_FILE: json.dumps(json_schema(), indent=2, sort_keys=False, ensure_ascii=False) + "\n",
        DOC_FILE: f"{head}{BEGIN}\n\n{field_reference()}\n{END}{tail}",
    }


def drifted() -> list[Path]:
    return [path for path, text in published().items() if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the published files")
    parser.add_argument("--check", action="store_true", help="exit 1 when they differ from the classes")
    args = parser.parse_args(argv)
    if args.write:
        for path, text in published().items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        return 0
    stale = drifted()
    for path in stale:
        print(f"{path} does not match the capture classes: run python -m tensorforge_measure.capture.schema --write")
    if not args.check:
        print(json.dumps(json_schema(), indent=2))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
