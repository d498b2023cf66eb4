"""Helpers for plugin authors' own tests: `from tensorforge.testing import ...`.

    fresh_host(*plugins)             a plugin host holding only your plugin(s), the built-in
                                     mapping strategies and a 'reference' target, whatever
                                     else is installed
    assert_loaded(host, name)        the plugin loaded cleanly, or an AssertionError with its error
    command_names(cli)               every command a `make_cli(...)` root offers, plugins' included
    check_workload_kind(kind, ...)   FLOPs and traffic are well-formed, specs round-trip, and the
                                     model predicts every operator on a reference target
    check_target(target)             the target validates, its datasheet ceilings are positive,
                                     key figures have sources, and it round-trips a target file
    check_mapping_strategy(s, p, m)  the strategy's bound is sound at every limit: <= every
                                     mapping of its space, never higher when the limit is lowered

Every failure is an AssertionError (PluginCheckError) whose message names the plugin's thing
and what is wrong, so a plain `pytest` run reads well. Fixtures built on these live in
`tensorforge.testing.pytest_plugin` (enable with `pytest_plugins = ["tensorforge.testing.pytest_plugin"]`).
No pytest import here: the helpers work under any test runner.
"""

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

import attrs

from tensorforge.bound.mappings.base import (
    EXHAUSTIVE,
    RELAXATION,
    SEARCH_KINDS,
    Machine,
    MappingChoice,
    MappingStrategy,
    Residency,
)
from tensorforge.errors import TensorForgeError
from tensorforge.hardware.interconnect import Interconnect, LinkTier
from tensorforge.hardware.target import (
    MemoryLevel,
    OperatingPoint,
    PEArray,
    Target,
    datasheet_ceilings,
    validate_target,
)
from tensorforge.hookspecs import hookimpl
from tensorforge.host.plugin_host import PluginHost, PluginReport
from tensorforge.results.prediction import WorkloadPrediction
from tensorforge.workloads.collectives import CollectiveProblem
from tensorforge.workloads.kinds import Workload, WorkloadKind
from tensorforge.workloads.precision import ALLOWED_MODES, DTYPE_BYTES, MATH_MODES
from tensorforge.workloads.problems import AttentionProblem, MatmulProblem, Operator, StreamProblem, Tensor


class PluginCheckError(AssertionError):
    """A plugin's workload kind or target is not well-formed."""


def _fail(message: str) -> NoReturn:
    raise PluginCheckError(message)


def _plugin_name(plugin: Any) -> str:
    return getattr(plugin, "__name__", None) or type(plugin).__name__


#: A reference target that declares every math mode, with a shared cache of known bandwidth,
#: so check_workload_kind can time any operator a kind produces; a system of 8 such devices on
#: one switch, so collectives (and tensor-parallel layers) can be timed too.
REFERENCE_TARGET = Target(
    name="reference",
    description="reference target for plugin tests (every math mode, 8 devices)",
    pe_array=PEArray(16, "unit", {mode: 512 if mode != "fp32" else 128 for mode in MATH_MODES}),
    sram=(MemoryLevel("smem", 128 * 1024, "per_unit", 128), MemoryLevel("cache", 8 << 20, "shared", 1024)),
    dram_capacity_bytes=1 << 40,
    operating_points=(OperatingPoint("base", 1000, 500e9),),
    default_operating_point="base",
    sources={"pe_array.units": "test fixture"},
    devices=8,
    interconnect=Interconnect((LinkTier("switch", 8, 100e9, 1e-6, "switch"),)),
)


def _builtin_strategies() -> list:
    from tensorforge.bound.mappings.plugin import (
        CollectiveMapping,
        FlashAttention,
        Streaming,
        TiledMatmul,
        VectorMatmul,
    )

    return [TiledMatmul(), FlashAttention(), Streaming(), VectorMatmul(), CollectiveMapping()]


class _ReferenceTargetPlugin:
    """Registers REFERENCE_TARGET, so a workload plugin's test has a target to predict on."""

    @staticmethod
    @hookimpl
    def tensorforge_register_targets(register):
        register(REFERENCE_TARGET)


def fresh_host(*plugins: Any, entry_points: bool = False) -> PluginHost:
    """A new host with `plugins` registered (modules, classes or instances with `@hookimpl`
    functions, or `(name, plugin)` pairs), exactly as if they were installed.

    By default no entry point is loaded, so the result does not depend on what else is
    installed; the Core's own mapping strategies ('builtin-mappings') and REFERENCE_TARGET
    (target 'reference', plugin 'reference-target') are added so predictions work. With
    `entry_points=True` your plugins join everything installed instead (do not pass a plugin
    that is also installed: it would register its names twice).
    """
    pairs = [p if isinstance(p, tuple) else (_plugin_name(p), p) for p in plugins]
    if not entry_points:
        from tensorforge.bound.mappings import plugin as builtin

        pairs[:0] = [("builtin-mappings", builtin), ("reference-target", _ReferenceTargetPlugin)]
    return PluginHost(load_entry_points=entry_points, extra_plugins=tuple(pairs))


def assert_loaded(host: PluginHost, name: str) -> PluginReport:
    """The report of plugin `name`, which must have loaded without error."""
    report = host.reports.get(name)
    if report is None:
        _fail(f"plugin {name!r} is not loaded; loaded: {', '.join(sorted(host.reports)) or 'none'}")
    if report.error:
        _fail(f"plugin {name!r} is broken: {report.error}")
    return report


# -- workloads ----------------------------------------------------------------------------------


def command_names(cli: Any) -> set[str]:
    """The commands of a root from `tensorforge.cli.main.make_cli`, those plugins add included
    (they are collected when a command line starts, so `cli.commands` holds the Core's only)."""
    import click

    return set(cli.list_commands(click.Context(cli)))


def _modes_with_bytes():
    """Each math mode and the operand bytes of a dtype that executes in it."""
    return {mode: DTYPE_BYTES[dtype] for dtype, modes in ALLOWED_MODES.items() for mode in modes}


def _check_operator(where: str, op: Any) -> float:
    if not isinstance(op, Operator):
        _fail(f"{where}: operators() returned a {type(op).__name__}; expected tensorforge.workloads.problems.Operator")
    where = f"{where}, operator {op.name!r}"
    if not isinstance(op.name, str) or not op.name:
        _fail(f"{where}: the operator needs a non-empty name")
    if not isinstance(op.count, int) or isinstance(op.count, bool) or op.count < 1:
        _fail(f"{where}: count must be an integer >= 1, got {op.count!r}")
    problem = op.problem
    flops = getattr(problem, "flops", None)
    if not isinstance(flops, (int, float)) or isinstance(flops, bool) or not math.isfinite(flops) or flops < 0:
        _fail(f"{where}: flops must be a finite number >= 0, got {flops!r}")
    if getattr(problem, "math_mode", None) not in MATH_MODES:
        _fail(f"{where}: math_mode must be one of {', '.join(MATH_MODES)}, got {getattr(problem, 'math_mode', None)!r}")
    tensors = tuple(problem.reads()) + tuple(problem.writes())
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            _fail(
                f"{where}: reads()/writes() must hold tensorforge.workloads.problems.Tensor, got {type(tensor).__name__}"
            )
        if not isinstance(tensor.nbytes, int) or isinstance(tensor.nbytes, bool) or tensor.nbytes < 0:
            _fail(f"{where}: tensor {tensor.name!r} must have an integer nbytes >= 0, got {tensor.nbytes!r}")
    return flops * op.count


def _spec_round_trips(kind: WorkloadKind, params: Any, where: str) -> None:
    from tensorforge.workloads.suite import parse_fields

    spec = kind.spec(params)
    head, _, rest = spec.partition(":")
    if head != kind.name:
        _fail(f"{where}: spec {spec!r} does not start with the kind's name {kind.name!r}")
    try:
        again = kind.parse(parse_fields(rest, spec))
    except TensorForgeError as exc:
        _fail(f"{where}: its spec {spec!r} does not parse back: {exc}")
    if again != params:
        _fail(f"{where}: spec {spec!r} parses back to different parameters: {again!r} != {params!r}")


def check_workload_kind(
    kind: WorkloadKind,
    params: Iterable[Any] | None = None,
    *,
    target: Target | None = None,
    mappings: Sequence[MappingStrategy] = (),
) -> list[WorkloadPrediction]:
    """Check a workload kind the way the host and the model will use it.

    `params`: parameter sets to check, each a params instance or a dict of fields (as a user
    would type them); default: every preset. For each: operators are non-empty and
    well-formed (FLOPs finite and >= 0, at least one > 0 overall unless the workload is
    communication: a collective; tensors with integer bytes >= 0), the spec round-trips, and
    the model predicts it on `target` (default REFERENCE_TARGET) with the built-in mapping
    strategies plus `mappings`. Returns the predictions, for your own assertions.
    """
    from tensorforge.bound.model import predict

    name = getattr(kind, "name", None)
    if not isinstance(kind, WorkloadKind):
        _fail(f"{kind!r} is not an instance of a tensorforge.workloads.kinds.WorkloadKind subclass")
    if not isinstance(name, str) or not name or name != name.strip().lower():
        _fail(f"workload kind name {name!r} must be a non-empty lowercase string")
    if not attrs.has(kind.params_type):
        _fail(f"workload {name!r}: params_type must be an attrs class, got {kind.params_type!r}")
    if not kind.description:
        _fail(f"workload {name!r}: needs a description (shown by `tensorforge workloads`)")
    missing = [p for p in kind.default_suite if p not in kind.presets]
    if missing:
        _fail(f"workload {name!r}: default_suite names unknown preset {missing[0]!r}")
    chosen = list(params) if params is not None else [dict(fields) for fields in kind.presets.values()]
    if not chosen:
        _fail(f"workload {name!r}: no presets and no params given: nothing to check")
    workloads = []
    for i, item in enumerate(chosen):
        where = f"workload {name!r}, params #{i + 1}"
        try:
            p = kind.parse(item) if isinstance(item, Mapping) else item
        except TensorForgeError as exc:
            _fail(f"{where}: {exc}")
        operators = kind.operators(p)
        if not operators:
            _fail(f"{where}: operators() returned nothing")
        total = sum(_check_operator(where, op) for op in operators)
        moves = any(isinstance(op.problem, CollectiveProblem) for op in operators)
        if not (total > 0 or moves):
            _fail(f"{where}: the workload does no arithmetic and moves nothing between devices (total FLOPs {total})")
        footprint = kind.footprint_bytes(p)
        if not isinstance(footprint, int) or footprint < 0:
            _fail(f"{where}: footprint_bytes must be an integer >= 0, got {footprint!r}")
        _spec_round_trips(kind, p, where)
        workloads.append((Workload(name=f"{name}#{i + 1}", kind=name, params=p, spec=kind.spec(p)), kind))
    strategies = [*_builtin_strategies(), *mappings]
    try:
        prediction = predict(workloads, target or REFERENCE_TARGET, strategies)
    except TensorForgeError as exc:
        _fail(f"workload {name!r}: the model cannot predict it: {exc}")
    for w in prediction.workloads:
        if not (math.isfinite(w.latency_s) and w.latency_s > 0):
            _fail(f"workload {name!r}: {w.spec} predicts a latency of {w.latency_s!r}")
    return list(prediction.workloads)


# -- targets ------------------------------------------------------------------------------------

#: Figures whose source a target must give (plus 'sram.<name>' or 'sram.<scope>' per SRAM level).
KEY_SOURCES = ("pe_array.units", "pe_array.flops_per_clock", "dram_capacity_bytes", "operating_points")


def _probe_operators(target: Target):
    """A matmul in every math mode the target declares, an attention and a streaming pass."""
    ops = []
    for mode, elem in _modes_with_bytes().items():
        if mode in target.pe_array.flops_per_clock:
            m = n = k = 512
            ops.append(
                Operator(
                    f"matmul_{mode}",
                    MatmulProblem(
                        batch=1,
                        m=m,
                        n=n,
                        k=k,
                        math_mode=mode,
                        a_elem_bytes=elem,
                        b_elem_bytes=elem,
                        c_elem_bytes=elem,
                        a=Tensor(f"A_{mode}", m * k * elem),
                        b=Tensor(f"B_{mode}", k * n * elem),
                        c=Tensor(f"C_{mode}", m * n * elem),
                    ),
                )
            )
    q = 4 * 256 * 64 * 4
    ops.append(
        Operator(
            "attention",
            AttentionProblem(
                batch=1,
                heads=4,
                kv_heads=4,
                q_len=256,
                kv_len=256,
                head_dim=64,
                causal=True,
                math_mode="fp32",
                elem_bytes=4,
                q=Tensor("Q", q),
                k=Tensor("K", q),
                v=Tensor("V", q),
                o=Tensor("O", q),
            ),
        )
    )
    ops.append(
        Operator(
            "stream",
            StreamProblem(flops=1e6, read_tensors=(Tensor("x", 4_000_000),), write_tensors=(Tensor("y", 4_000_000),)),
        )
    )
    if target.devices > 1:  # a system: an all-reduce over every device crosses every tier
        ops.append(
            Operator(
                "all_reduce",
                CollectiveProblem(
                    op="all_reduce",
                    bytes=1 << 24,
                    ranks=0,
                    elem_bytes=2,
                    input=Tensor("g", 1 << 24),
                    output=Tensor("g", 1 << 24),
                ),
            )
        )
    return tuple(ops)


class _Probe(WorkloadKind):
    name = "target-probe"
    description = "operators that exercise every declared math mode"

    def __init__(self, target: Target):
        self._ops = _probe_operators(target)

    def operators(self, params):
        return self._ops


def check_target(target: Target, *, require_sources: bool = True) -> None:
    """Check a target the way the host, the model and `targets show` will use it: it passes
    the host's validation; every operating point gives positive, finite datasheet ceilings;
    the key figures (KEY_SOURCES and each SRAM level) have sources; it survives a round trip
    through the target file format; and the model times a matmul in every declared math mode
    (and, for a system of several devices, an all-reduce over all of them).
    """
    from tensorforge.bound.model import predict
    from tensorforge.files.serialize import to_data
    from tensorforge.hardware.target_dump import dump_target
    from tensorforge.hardware.target_file import target_from_toml

    try:
        validate_target(target)
    except ValueError as exc:
        _fail(str(exc))
    name = target.name
    if not isinstance(name, str) or not name or name != name.strip().lower():
        _fail(f"target name {name!r} must be a non-empty lowercase string")
    if not target.description:
        _fail(f"target {name!r}: needs a description")
    for point in target.operating_points:
        ceilings = datasheet_ceilings(target, point.name)
        rates = dict(ceilings.compute, dram=ceilings.dram_bytes_per_s, **ceilings.sram_bytes_per_s)
        for what, rate in rates.items():
            if not (math.isfinite(rate) and rate > 0):
                _fail(f"target {name!r}, operating point {point.name!r}: {what} ceiling is {rate!r}")
    if require_sources:
        given = [key for key, text in target.sources.items() if str(text).strip()]
        # A figure is sourced by its own key or by finer ones ('operating_points.clock'); an
        # SRAM level by its name or its scope ('sram.l2' or 'sram.per_unit').
        sourced = lambda *keys: any(g == k or g.startswith(k + ".") for g in given for k in keys)
        missing = [key for key in KEY_SOURCES if not sourced(key)]
        missing += [
            f"sram.{level.name}" for level in target.sram if not sourced(f"sram.{level.name}", f"sram.{level.scope}")
        ]
        if missing:
            _fail(
                f"target {name!r}: no source for {', '.join(missing)} (sources[...] says where "
                "each datasheet figure comes from)"
            )
    try:
        again = target_from_toml(dump_target(target), f"target {name!r} written as a target file")
    except TensorForgeError as exc:
        _fail(str(exc))
    if to_data(again) != to_data(target):
        _fail(f"target {name!r} does not survive a round trip through the target file format")
    probe = _Probe(target)
    for point in target.operating_points:
        prediction = predict(
            [(Workload("probe", probe.name, None, probe.name), probe)], target, _builtin_strategies(), point.name
        )
        for op in prediction.workloads[0].operators:
            if not (math.isfinite(op.latency_s) and op.latency_s > 0):
                _fail(f"target {name!r} at {point.name!r}: operator {op.name} predicts {op.latency_s!r}")


# -- mapping strategies -------------------------------------------------------------------------


def check_mapping_strategy(
    strategy: MappingStrategy,
    problem: Any,
    machine: Machine,
    residency: Residency | None = None,
    limits: Sequence[int] = (1, 7, 64, 1000, 20000),
    brute_force_up_to: int = 64,
) -> list[MappingChoice]:
    """Check that `strategy` gives a sound bound for `problem` on `machine` at every limit.

    At each limit (`machine.max_candidates`): a deterministic choice with a known `search`
    label, at most `limit` candidates evaluated, latency = max(compute, memory), finite and
    > 0; and lowering the limit never raises the latency. For a `GridStrategy` also: the
    latency is <= every mapping of its full space (`space` evaluated whole, and one mapping at
    a time for spaces of up to `brute_force_up_to`), exactly the minimum and "exhaustive" when
    the limit covers the space, "relaxation" when it does not. Returns the choices, highest
    limit first.
    """
    import numpy as np

    from tensorforge.bound.mappings.search import GridStrategy

    name = getattr(strategy, "name", type(strategy).__name__)
    residency = Residency() if residency is None else residency
    choices: list[MappingChoice] = []
    ordered = sorted(set(limits), reverse=True)
    for i, limit in enumerate(ordered):
        m = attrs.evolve(machine, max_candidates=limit)
        choice = strategy.explore(problem, m, residency)
        if strategy.explore(problem, m, residency) != choice:
            _fail(f"mapping strategy {name!r}: two explorations at limit {limit} differ")
        if choice.search not in SEARCH_KINDS:
            _fail(f"mapping strategy {name!r}: search {choice.search!r} is not one of {SEARCH_KINDS}")
        if choice.candidates > limit:
            _fail(f"mapping strategy {name!r}: evaluated {choice.candidates} candidates at limit {limit}")
        if not (
            math.isfinite(choice.latency_s)
            and choice.latency_s > 0
            and choice.latency_s == max(choice.compute_s, choice.memory_s)
        ):
            _fail(
                f"mapping strategy {name!r}: latency {choice.latency_s!r} is not max(compute "
                f"{choice.compute_s!r}, memory {choice.memory_s!r}) > 0"
            )
        if choices and choice.latency_s > choices[-1].latency_s:
            _fail(
                f"mapping strategy {name!r}: lowering the limit from {ordered[i - 1]} to {limit} "
                f"raised the bound from {choices[-1].latency_s!r} to {choice.latency_s!r}"
            )
        choices.append(choice)
    if not isinstance(strategy, GridStrategy):
        return choices
    space = strategy.space(problem, machine)
    size = len(space[0])
    every = strategy.evaluate(problem, machine, residency, space).latency
    if size <= brute_force_up_to:
        one_by_one = np.array(
            [
                strategy.evaluate(problem, machine, residency, [a[i : i + 1] for a in space]).latency[0]
                for i in range(size)
            ]
        )
        if not np.array_equal(one_by_one, every):
            _fail(
                f"mapping strategy {name!r}: evaluating its {size} mappings one by one disagrees "
                "with evaluating them together"
            )
    minimum = float(every.min())
    for limit, choice in zip(ordered, choices):
        if choice.latency_s > minimum:
            _fail(
                f"mapping strategy {name!r}: bound {choice.latency_s!r} at limit {limit} exceeds the "
                f"latency {minimum!r} of a mapping of its full space ({size} mappings)"
            )
        if limit >= size and (choice.search != EXHAUSTIVE or choice.latency_s != minimum):
            _fail(
                f"mapping strategy {name!r}: the limit {limit} covers its {size} mappings but the "
                f"choice is {choice.search} at {choice.latency_s!r}, not the minimum {minimum!r}"
            )
        if limit < size and choice.search != RELAXATION:
            _fail(
                f"mapping strategy {name!r}: the limit {limit} cuts its {size} mappings but the "
                f"choice says {choice.search!r}"
            )
    return choices
