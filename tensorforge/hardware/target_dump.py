"""Any target written as the TOML file that `--target FILE` reads back (target_file.py).

`tensorforge targets show NAME > mine.toml` is how an architect starts from a shipped target.
Reading the output back gives an equal Target, so predictions from the copy are
byte-identical to predictions from the original until someone edits it. Comments give the
figures in human units; they are comments, so editing a number never leaves them lying in data.
"""

from tensorforge.cli.units import binary_bytes, si
from tensorforge.files.tomlwrite import assignment, key, string
from tensorforge.hardware.target import Target, datasheet_ceilings


def dump_target(target: Target, origin: str | None = None) -> str:
    point = target.operating_point()
    lines: list[str] = [
        f"# TensorForge hardware target {target.name!r}" + (f", {origin}" if origin else ""),
        "# Use a copy with: tensorforge predict --target ./FILE.toml   (format: docs/targets.md)",
        "",
        assignment("name", target.name),
        assignment("description", target.description),
        assignment("dram_capacity_bytes", target.dram_capacity_bytes, binary_bytes(target.dram_capacity_bytes)),
        assignment("default_operating_point", target.default_operating_point),
    ]
    if target.notes:
        lines.append(assignment("notes", list(target.notes)))
    if target.device_names:
        lines.append(assignment("device_names", list(target.device_names)))
    if target.architecture:
        lines.append(assignment("architecture", target.architecture))
    if target.devices > 1:
        lines.append(assignment("devices", target.devices, "identical devices, each described below"))

    pe = target.pe_array
    ceilings = datasheet_ceilings(target)
    lines += [
        "",
        "[pe_array]",
        assignment("units", pe.units),
        assignment("unit_name", pe.unit_name),
        "",
        "# dense FLOPs per clock per unit, per math mode; the comment is the whole array "
        f"at {point.name!r} ({point.clock_mhz:g} MHz)",
        "[pe_array.flops_per_clock]",
    ]
    lines += [assignment(mode, rate, si(ceilings.compute[mode], "FLOP/s")) for mode, rate in pe.flops_per_clock.items()]
    if pe.vector_flops_per_clock:
        lines += [
            "",
            "# vector (non-tensor) FLOPs per clock per unit, per precision: elementwise work",
            "[pe_array.vector_flops_per_clock]",
        ]
        lines += [
            assignment(p, rate, si(ceilings.vector[p], "FLOP/s")) for p, rate in pe.vector_flops_per_clock.items()
        ]
    if pe.special_per_clock:
        lines += [
            "",
            "# special-function (exp, tanh, rsqrt...) results per clock per unit, per precision",
            "[pe_array.special_per_clock]",
        ]
        lines += [assignment(p, rate, si(ceilings.special[p], "op/s")) for p, rate in pe.special_per_clock.items()]

    for level in target.sram:
        lines += [
            "",
            "[[sram]]",
            assignment("name", level.name),
            assignment("capacity_bytes", level.capacity_bytes, binary_bytes(level.capacity_bytes)),
            assignment("scope", level.scope),
        ]
        if level.bytes_per_clock is None:
            lines.append("# bytes_per_clock: not published, so this level's traffic is reported, not timed")
        else:
            per = "per unit" if level.scope == "per_unit" else "in total"
            lines.append(
                assignment(
                    "bytes_per_clock",
                    level.bytes_per_clock,
                    f"{si(level.bytes_per_clock * point.clock_mhz * 1e6, 'B/s')} {per} at {point.name!r}",
                )
            )

    for p in target.operating_points:
        lines += [
            "",
            "[[operating_points]]",
            assignment("name", p.name),
            assignment("clock_mhz", p.clock_mhz),
            assignment(
                "dram_bandwidth_bytes_per_s", p.dram_bandwidth_bytes_per_s, si(p.dram_bandwidth_bytes_per_s, "B/s")
            ),
        ]
        if p.description:
            lines.append(assignment("description", p.description))

    if target.interconnect is not None:
        lines += ["", "# how the devices are linked, innermost tier first; bandwidth per device per direction"]
        for tier in target.interconnect.tiers:
            lines += [
                "[[interconnect]]",
                assignment("name", tier.name),
                assignment("span", tier.span, "devices one domain of this tier joins"),
                assignment("bytes_per_s", tier.bytes_per_s, si(tier.bytes_per_s, "B/s")),
                assignment("latency_s", tier.latency_s, "one hop"),
                assignment("topology", tier.topology),
                assignment("in_switch_reduction", tier.in_switch_reduction),
                "",
            ]
        lines.pop()

    if target.power is not None:
        watts = ("tdp_w", "power_limit_w", "power_limit_min_w", "power_limit_max_w", "idle_w")
        lines += ["", "# declared power figures in watts (sources: power.<figure>); docs/energy.md", "[power]"]
        lines += [
            assignment(name, getattr(target.power, name))
            for name in (*watts, "joules_per_dram_byte", "limit_acts_s")
            if getattr(target.power, name) is not None
        ]
        if target.power.joules_per_flop:
            lines += ["", "[power.joules_per_flop]"]
            lines += [assignment(mode, value) for mode, value in sorted(target.power.joules_per_flop.items())]
    if target.sources:
        lines += ["", "# where each figure comes from", "[sources]"]
        lines += [f"{key(name)} = {string(text)}" for name, text in target.sources.items()]
    if target.estimate is not None:
        from tensorforge.estimate.coefficients import coefficients_to_data

        lines += ["", "# the estimate's coefficients, declared by this target (docs/estimate.md)"]
        lines += _tables("estimate", coefficients_to_data(target.estimate))
    return "\n".join(lines) + "\n"


def _tables(path: str, data: dict) -> list[str]:
    """A nested mapping as [path] with its scalars, then [path.sub] for each nested mapping."""
    lines = [f"[{path}]"]
    lines += [assignment(name, item) for name, item in data.items() if not isinstance(item, dict)]
    for name, item in data.items():
        if isinstance(item, dict):
            lines += [""] + _tables(f"{path}.{key(name)}", item)
    return lines
