"""Hardware targets described in a TOML file, so an architect can explore a PE array, SRAM
sizes and bandwidth without writing a plugin: `tensorforge predict --target ./my-npu.toml`.

The schema mirrors `tensorforge.hardware.target.Target` field for field (docs/targets.md), and
`tensorforge targets show NAME` writes any installed target in it (target_dump.py), so a
shipped target is the starting point. Every mistake is one line naming the field, the value
and what was expected.
"""

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tensorforge.errors import TensorForgeError, closest
from tensorforge.files.bounded import MAX_TOML_BYTES
from tensorforge.files.documents import parse_toml, read_text
from tensorforge.files.tomlwrite import value as toml_value
from tensorforge.hardware.interconnect import TOPOLOGIES, Interconnect, LinkTier
from tensorforge.hardware.target import SCOPES, MemoryLevel, OperatingPoint, PEArray, Target, validate_target
from tensorforge.workloads.precision import MATH_MODES, VECTOR_PRECISIONS

INTEGER = "an integer >= 1"
NUMBER = "a number > 0"
TEXT = "a string"
NAME = "a non-empty lowercase name without surrounding spaces"
TEXTS = "a list of strings"


def looks_like_path(text: str) -> bool:
    """`--target` takes a name or a file: names never hold a path separator or end in .toml."""
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return any(sep in text for sep in separators) or text.lower().endswith(".toml")


def _show(item: Any) -> str:
    try:
        text = toml_value(item)
    except TypeError:
        text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."


# -- checks: each returns the value to keep, or None when it does not qualify --------------


def _integer(v):
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def _number(v):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    return v if ok else None


def _text(v):
    return v if isinstance(v, str) else None


def _name(v):
    return v if isinstance(v, str) and v and v == v.strip() and v == v.lower() else None


def _non_negative(v):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return v if ok else None


def _boolean(v):
    return v if isinstance(v, bool) else None


def _texts(v):
    return tuple(v) if isinstance(v, list) and all(isinstance(s, str) for s in v) else None


class _Table:
    """One table of the file being read: knows its path (for messages) and its allowed keys."""

    def __init__(self, where: str, path: str, data: Any, keys: list[str]):
        self.where, self.path, self.data = where, path, data
        for name in data:
            if name not in keys:
                raise TensorForgeError(
                    f"{where}: unknown field '{self._at(name)}'{closest(name, keys)}; known here: {', '.join(keys)}"
                )

    def _at(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def fail(self, name: str, item: Any, expected: str) -> TensorForgeError:
        return TensorForgeError(f"{self.where}: field '{self._at(name)}' = {_show(item)}: expected {expected}")

    def get(self, name: str, check: Callable[[Any], Any], expected: str, default: Any = ...) -> Any:
        if name not in self.data:
            if default is ...:
                raise TensorForgeError(f"{self.where}: field '{self._at(name)}' is missing: expected {expected}")
            return default
        kept = check(self.data[name])
        if kept is None:
            raise self.fail(name, self.data[name], expected)
        return kept

    def table(self, name: str, keys: list[str]) -> "_Table":
        item = self.get(name, lambda v: v if isinstance(v, dict) else None, "a table")
        return _Table(self.where, self._at(name), item, keys)

    def tables(self, name: str, keys: list[str], what: str) -> list["_Table"]:
        expected = f"one or more [[{self._at(name)}]] tables ({what})"
        items = self.get(
            name, lambda v: v if isinstance(v, list) and v and all(isinstance(t, dict) for t in v) else None, expected
        )
        return [_Table(self.where, f"{self._at(name)}[{i}]", t, keys) for i, t in enumerate(items)]


def _unique(tables: list[_Table], names: list[str], what: str) -> None:
    for i, name in enumerate(names):
        if name in names[:i]:
            raise tables[i].fail("name", name, f"a name no other {what} uses")


def _optional_rates(pe: _Table, name: str, what: str) -> dict[str, float]:
    """An optional table of precision = rate per clock per unit (vector or special-function)."""
    if name not in pe.data:
        return {}
    table = pe.table(name, list(VECTOR_PRECISIONS))
    return {precision: table.get(precision, _number, f"{NUMBER} ({what})") for precision in table.data}


def _pe_array(top: _Table) -> PEArray:
    pe = top.table("pe_array", ["units", "unit_name", "flops_per_clock", "vector_flops_per_clock", "special_per_clock"])
    units = pe.get("units", _integer, INTEGER)
    unit_name = pe.get("unit_name", _text, TEXT)
    rates = pe.table("flops_per_clock", list(MATH_MODES))
    if not rates.data or "fp32" not in rates.data:
        raise pe.fail(
            "flops_per_clock",
            rates.data,
            "a table of math mode = FLOPs per clock per unit that includes fp32 (vector work runs there)",
        )
    flops = {mode: rates.get(mode, _number, NUMBER) for mode in rates.data}
    return PEArray(
        units=units,
        unit_name=unit_name,
        flops_per_clock=flops,
        vector_flops_per_clock=_optional_rates(pe, "vector_flops_per_clock", "vector FLOPs per clock per unit"),
        special_per_clock=_optional_rates(pe, "special_per_clock", "transcendental results per clock per unit"),
    )


def _sram(top: _Table) -> tuple:
    tables = top.tables(
        "sram",
        ["name", "capacity_bytes", "scope", "bytes_per_clock"],
        "name, capacity_bytes, scope, optional bytes_per_clock",
    )
    levels = tuple(
        MemoryLevel(
            name=t.get("name", _name, NAME),
            capacity_bytes=t.get("capacity_bytes", _integer, INTEGER),
            scope=t.get("scope", lambda v: v if v in SCOPES else None, f"one of {', '.join(SCOPES)}"),
            bytes_per_clock=t.get("bytes_per_clock", _number, NUMBER + " (omit it when unknown)", None),
        )
        for t in tables
    )
    _unique(tables, [level.name for level in levels], "sram level")
    if not any(level.scope == "per_unit" for level in levels):
        raise top.fail(
            "sram",
            [level.name for level in levels],
            'at least one level with scope = "per_unit" (where tiles are staged)',
        )
    return levels


def _operating_points(top: _Table) -> tuple:
    tables = top.tables(
        "operating_points",
        ["name", "clock_mhz", "dram_bandwidth_bytes_per_s", "description"],
        "name, clock_mhz, dram_bandwidth_bytes_per_s, optional description",
    )
    points = tuple(
        OperatingPoint(
            name=t.get("name", _name, NAME),
            clock_mhz=t.get("clock_mhz", _number, NUMBER),
            dram_bandwidth_bytes_per_s=t.get("dram_bandwidth_bytes_per_s", _number, NUMBER),
            description=t.get("description", _text, TEXT, ""),
        )
        for t in tables
    )
    _unique(tables, [p.name for p in points], "operating point")
    return points


def _estimate(top: _Table, where: str) -> Any:
    """A declared [estimate] table: the estimate's coefficients in the layout `targets show`
    writes (docs/estimate.md); basis_kind 'declared' unless the table says otherwise."""
    table = top.get("estimate", lambda v: v if isinstance(v, dict) else None, "a table", None)
    if table is None:
        return None
    from tensorforge.estimate.coefficients import coefficients_from_data

    data = dict(table)
    data.setdefault("basis_kind", "declared")
    data.setdefault("basis", f"declared in {where}")
    data.setdefault("family", top.data.get("architecture", "") or "declared")
    return coefficients_from_data(data, f"{where}: [estimate]")


POWER_KEYS = [
    "tdp_w",
    "power_limit_w",
    "power_limit_min_w",
    "power_limit_max_w",
    "idle_w",
    "joules_per_flop",
    "joules_per_dram_byte",
    "limit_acts_s",
]
WATT_KEYS = POWER_KEYS[:5]


def _power(top: _Table) -> Any:
    """A declared [power] table (watts; docs/targets.md): the TDP and the power limits, each
    sourced under 'power.<figure>' in [sources]."""
    if "power" not in top.data:
        return None
    from tensorforge.energy.model import PowerFigures, validate_power

    table = top.table("power", POWER_KEYS)
    watts = "a number of watts > 0"
    energy: dict[str, float] = {}
    if "joules_per_flop" in table.data:
        raw = table.data["joules_per_flop"]
        per = table.table("joules_per_flop", sorted(raw) if isinstance(raw, dict) else [])
        for mode in per.data:
            energy[mode] = float(per.get(mode, _number, "joules per FLOP, a number > 0"))
    byte_j = table.get("joules_per_dram_byte", _number, "joules per DRAM byte, a number > 0", None)
    acts = table.get("limit_acts_s", _number, "seconds, a number > 0", None)
    figures = PowerFigures(
        tdp_w=float(table.get("tdp_w", _number, watts)),
        **{k: (None if v is None else float(v)) for k in WATT_KEYS[1:] for v in [table.get(k, _number, watts, None)]},
        joules_per_flop=energy,
        joules_per_dram_byte=None if byte_j is None else float(byte_j),
        limit_acts_s=None if acts is None else float(acts),
    )
    low, high = figures.power_limit_min_w, figures.power_limit_max_w
    if low is not None and high is not None and low > high:
        raise table.fail("power_limit_min_w", low, f"at most power_limit_max_w ({high:g})")
    try:
        validate_power(figures, top.where)
    except ValueError as exc:
        raise TensorForgeError(str(exc)) from None
    return figures


def _interconnect(top: _Table, devices: int) -> Interconnect | None:
    """[[interconnect]] tables, innermost tier first (interconnect.py says what each field means)."""
    if "interconnect" not in top.data:
        if devices > 1:
            raise top.fail("devices", devices, "1, or [[interconnect]] tables that say how the devices are linked")
        return None
    tables = top.tables(
        "interconnect",
        ["name", "span", "bytes_per_s", "latency_s", "topology", "in_switch_reduction"],
        "name, span, bytes_per_s, optional latency_s, topology, in_switch_reduction",
    )
    tiers = tuple(
        LinkTier(
            name=t.get("name", _name, NAME),
            span=t.get(
                "span", lambda v: v if _integer(v) and v >= 2 else None, "an integer >= 2 (devices one domain joins)"
            ),
            bytes_per_s=t.get("bytes_per_s", _number, NUMBER + " (per device per direction)"),
            latency_s=t.get("latency_s", _non_negative, "a number >= 0 (one hop)", 0.0),
            topology=t.get(
                "topology", lambda v: v if v in TOPOLOGIES else None, f"one of {', '.join(TOPOLOGIES)}", "switch"
            ),
            in_switch_reduction=t.get("in_switch_reduction", _boolean, "true or false", False),
        )
        for t in tables
    )
    _unique(tables, [t.name for t in tiers], "interconnect tier")
    previous = 1
    for table, tier in zip(tables, tiers):
        if tier.span <= previous or tier.span % previous:
            raise table.fail("span", tier.span, f"a multiple of the previous tier's span ({previous}), larger than it")
        previous = tier.span
    if previous != devices:
        raise tables[-1].fail(
            "span", previous, f"the target's device count ({devices}): the outermost tier joins them all"
        )
    return Interconnect(tiers)


def target_from_data(data: dict[str, Any], where: str) -> Target:
    top = _Table(
        where,
        "",
        data,
        [
            "name",
            "description",
            "pe_array",
            "sram",
            "dram_capacity_bytes",
            "operating_points",
            "default_operating_point",
            "sources",
            "notes",
            "device_names",
            "architecture",
            "estimate",
            "devices",
            "interconnect",
            "power",
        ],
    )
    name = top.get("name", _name, NAME)
    description = top.get("description", _text, TEXT, "")
    pe_array = _pe_array(top)
    sram = _sram(top)
    dram = top.get("dram_capacity_bytes", _integer, INTEGER)
    points = _operating_points(top)
    names = [p.name for p in points]
    default = top.get(
        "default_operating_point",
        lambda v: v if v in names else None,
        f"one of the operating_points: {', '.join(names)}",
        names[0],
    )
    sources_table = top.get(
        "sources", lambda v: v if isinstance(v, dict) else None, "a table of figure = where it comes from", {}
    )
    sources = _Table(where, "sources", sources_table, list(sources_table))
    devices = top.get("devices", _integer, INTEGER, 1)
    interconnect = _interconnect(top, devices)
    target = Target(
        name=name,
        description=description,
        pe_array=pe_array,
        sram=sram,
        dram_capacity_bytes=dram,
        operating_points=points,
        default_operating_point=default,
        sources={k: sources.get(k, _text, TEXT) for k in sources_table},
        notes=top.get("notes", _texts, TEXTS, ()),
        device_names=top.get("device_names", _texts, TEXTS, ()),
        architecture=top.get("architecture", _name, NAME, ""),
        estimate=_estimate(top, where),
        devices=devices,
        interconnect=interconnect,
        power=_power(top),
    )
    try:  # the checks above cover today's rules; this keeps file and plugin targets in step
        validate_target(target)
    except ValueError as exc:
        raise TensorForgeError(f"{where}: {exc}") from None
    return target


def target_from_toml(text: str, where: str) -> Target:
    return target_from_data(parse_toml(text, where), where)


def load_target_file(path) -> Target:
    path = Path(path)
    return target_from_toml(read_text(path, "target file", MAX_TOML_BYTES), f"target file {path}")
