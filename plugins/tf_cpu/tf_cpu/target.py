"""The `host-cpu` target: this machine's CPU as a PE array (one unit per physical core), its
private caches as the per-unit SRAM where tiles are staged, its shared last-level cache, and
its memory, every figure with where it came from (or that it is an assumption).

Core side: pure Python, no torch. Built from a `Machine` (machine.py), so tests build it from
recorded /proc and /sys snapshots.
"""

from tensorforge import MemoryLevel, OperatingPoint, PEArray, Target
from tf_cpu.isa import host_isa
from tf_cpu.machine import FALLBACK_MHZ, Machine

NAME = "host-cpu"
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# No file on a Linux machine states memory bandwidth (channels x transfer rate needs root and
# dmidecode), so the datasheet figure is an assumption, labelled as one everywhere it appears:
# dual-channel DDR5-4800, 2 x 4800 MT/s x 8 B, typical of a current desktop or laptop. A server
# socket has more channels, but a few cores cannot use them; calibration's copy probe measures
# what this machine really sustains and replaces this figure in the calibrated bound.
ASSUMED_DRAM_BYTES_PER_S = 2 * 4800e6 * 8
ASSUMED_DRAM_SOURCE = (
    "ASSUMED: 76.8 GB/s, dual-channel DDR5-4800 (2 x 4800 MT/s x 8 B); no "
    "machine source for memory bandwidth without root; calibration measures it"
)
# Without /sys cache information: generous sizes, because a larger cache only widens the
# mappings the model may choose (the bound stays a bound, only looser).
ASSUMED_PRIVATE = (
    "l2",
    2 * MiB,
    "ASSUMED: 2 MiB private L2 per core (no /sys cache information; generous, so the bound stays a bound)",
)
ASSUMED_SHARED_PER_CORE = 4 * MiB
ASSUMED_MEMORY = 16 * GiB


def _sram(m: Machine, sources: dict[str, str], notes: list[str]) -> tuple[MemoryLevel, ...]:
    private, shared = m.levels(per_core=True), m.levels(per_core=False)
    levels = []
    if private:
        # The largest private level stages tiles (BLAS packs panels into L2; L1 holds the
        # register-blocked micro-tile, which the model does not describe).
        level, size, _ = max(private, key=lambda p: (p[1], p[0]))
        levels.append(MemoryLevel(f"l{level}", size, "per_unit"))
        sources["sram.per_unit"] = (
            f"l{level}: {size // KiB} KiB private to each core (/sys/devices/system/cpu/cpuN/cache)"
        )
        others = [f"l{lv} {sz // KiB} KiB" for lv, sz, _ in private if lv != level]
        if others:
            notes.append(f"smaller private caches read but not modelled: {', '.join(others)}")
    else:
        name, size, why = ASSUMED_PRIVATE
        levels.append(MemoryLevel(name, size, "per_unit"))
        sources["sram.per_unit"] = why
    if shared:
        for level, size, instances in shared:
            levels.append(MemoryLevel(f"l{level}", size * instances, "shared"))
            sources[f"sram.l{level}"] = (
                f"{instances} x {size // KiB} KiB shared by the usable cores "
                "(/sys/devices/system/cpu/cpuN/cache, shared_cpu_list)"
            )
    elif not private:
        total = ASSUMED_SHARED_PER_CORE * m.cores
        levels.append(MemoryLevel("l3", total, "shared"))
        sources["sram.l3"] = f"ASSUMED: {ASSUMED_SHARED_PER_CORE // MiB} MiB per core (no /sys cache information)"
    sources["sram.bandwidth"] = "no machine source for cache bandwidths: cache traffic is reported, not timed"
    return tuple(levels)


def _operating_points(m: Machine, sources: dict[str, str]) -> tuple[tuple[OperatingPoint, ...], str]:
    points = []
    if m.max_mhz:
        points.append(
            OperatingPoint("max", m.max_mhz, ASSUMED_DRAM_BYTES_PER_S, "highest clock cpufreq reports (boost)")
        )
    if m.base_mhz:
        points.append(OperatingPoint("base", m.base_mhz, ASSUMED_DRAM_BYTES_PER_S, "base (nominal) clock"))
    if not points and m.reported_mhz:
        points.append(
            OperatingPoint(
                "reported",
                m.reported_mhz,
                ASSUMED_DRAM_BYTES_PER_S,
                "the clock /proc/cpuinfo reports; boost may exceed it",
            )
        )
    if not points:
        points.append(OperatingPoint("assumed", FALLBACK_MHZ, ASSUMED_DRAM_BYTES_PER_S, "ASSUMED: no clock readable"))
    sources["operating_points.clock"] = "; ".join(
        f"{p.name}: {p.clock_mhz:g} MHz from {m.sources.get('clock.' + p.name, 'ASSUMED')}" for p in points
    )
    sources["operating_points.dram_bandwidth"] = ASSUMED_DRAM_SOURCE
    # The first is the fastest clock known: the prediction stays a lower bound.
    return tuple(points), points[0].name


def architecture(m: Machine) -> str:
    """The estimate's architecture family: 'cpu-' + the normalised machine architecture
    (x86_64 and amd64 -> x86-64, arm64 -> aarch64)."""
    arch = (m.arch or "unknown").lower().replace("_", "-")
    return "cpu-" + {"amd64": "x86-64", "arm64": "aarch64"}.get(arch, arch)


def host_target(m: Machine) -> Target:
    isa = host_isa(m)
    sources: dict[str, str] = {
        "pe_array.units": f"{m.cores} physical cores among the {len(m.cpus)} CPUs this process may "
        f"use ({m.sources.get('cores', 'ASSUMED')})",
        "pe_array.flops_per_clock": "; ".join(isa.rules) + " (rules: tf_cpu/isa.py, docs/host-cpu.md)",
        "pe_array.vector_flops_per_clock": "; ".join(isa.vector_rules) + " (rules: tf_cpu/isa.py)",
        "model_name": m.sources.get("model_name", ""),
    }
    notes: list[str] = [
        "read from the machine this command runs on: the same command elsewhere describes that machine",
        "dense peaks from ISA flags; the FMA unit count is a rule, not read from the machine",
    ]
    sram = _sram(m, sources, notes)
    points, default = _operating_points(m, sources)
    if points[0].name in ("reported", "assumed"):
        notes.append(
            f"clock {points[0].clock_mhz:g} MHz is {points[0].description.lower()}: if the cores "
            "boost above it, the analytical bound is not a bound (the calibrated one still is)"
        )
    memory = m.memory_bytes
    if memory:
        sources["dram_capacity_bytes"] = m.sources.get("dram_capacity", "")
    else:
        memory = ASSUMED_MEMORY
        sources["dram_capacity_bytes"] = "ASSUMED: 16 GiB (no /proc/meminfo)"
    notes.extend(f"fell back: {f}" for f in m.fallbacks)
    return Target(
        name=NAME,
        description=f"this machine's CPU: {m.model_name}, {m.cores} cores, {isa.vector}",
        pe_array=PEArray(
            units=m.cores,
            unit_name="core",
            flops_per_clock=dict(isa.flops_per_clock),
            vector_flops_per_clock=dict(isa.vector_flops_per_clock),
        ),
        sram=sram,
        dram_capacity_bytes=int(memory),
        operating_points=points,
        default_operating_point=default,
        sources=sources,
        notes=tuple(notes),
        device_names=(m.model_name,),
        architecture=architecture(m),
    )
