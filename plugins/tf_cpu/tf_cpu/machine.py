"""What this machine's CPU is, read from Linux's /proc and /sys, with the source of every figure
and every fallback recorded.

This is the Core side of tf_cpu (pure Python: no torch, nothing from tensorforge_measure). Every
reader takes a `root` folder so tests can point it at recorded snapshots of /proc and /sys;
nothing here raises for a missing or odd file: it falls back and says so in `fallbacks`.
"""

import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path

import attrs

# Fallbacks when the machine does not say. Each is recorded in `fallbacks` when used.
FALLBACK_MHZ = 3000.0


@attrs.frozen
class Cache:
    """One cache instance: its level, type, size and the logical CPUs that share it."""

    level: int
    kind: str  # 'Data', 'Unified' or 'Instruction', as /sys names it
    size_bytes: int
    cpus: tuple[int, ...]
    per_core: bool  # private to one physical core (its SMT siblings may share it)


@attrs.frozen
class Machine:
    model_name: str
    vendor: str
    family: int | None
    model: int | None
    arch: str
    flags: tuple[str, ...]  # ISA flags (x86 'flags', Arm 'Features'), sorted
    cpus: tuple[int, ...]  # logical CPUs this process may run on
    cores: int  # physical cores among them (SMT siblings counted once)
    threads_per_core: int
    max_mhz: float | None  # cpufreq cpuinfo_max_freq: the highest (boost) clock
    base_mhz: float | None  # cpufreq base_frequency, or the '@ x.xxGHz' of the model name
    reported_mhz: float | None  # /proc/cpuinfo 'cpu MHz' (current; nominal on most VMs)
    caches: tuple[Cache, ...]  # data and unified caches serving `cpus`, each instance once
    memory_bytes: int | None
    sources: Mapping[str, str] = attrs.field(factory=dict)
    fallbacks: tuple[str, ...] = ()

    def has(self, *flags: str) -> bool:
        return all(f in self.flags for f in flags)

    def levels(self, per_core: bool) -> list[tuple[int, int, int]]:
        """(level, capacity of one instance, instances) of the private (per_core) or shared
        cache levels, innermost first."""
        out: dict[int, list[Cache]] = {}
        for cache in self.caches:
            if cache.per_core == per_core:
                out.setdefault(cache.level, []).append(cache)
        return [(level, max(c.size_bytes for c in group), len(group)) for level, group in sorted(out.items())]


# -- reading files --------------------------------------------------------------------------------


def _read(root: Path, rel: str) -> str | None:
    try:
        return (root / rel.lstrip("/")).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """'0-3,8,10-11' -> (0, 1, 2, 3, 8, 10, 11); '' or anything malformed -> ()."""
    cpus = set()
    try:
        for part in filter(None, (p.strip() for p in text.strip().split(","))):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return ()
    return tuple(sorted(cpus))


def parse_size(text: str) -> int | None:
    """'32K' / '1024K' / '2M' / '32768 KB' -> bytes; None when unreadable."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        return None
    return int(match.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[match.group(2).upper()]


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """One dict per block of /proc/cpuinfo ('processor' blocks; Arm adds a trailing global one)."""
    blocks, current = [], {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
            current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def _int(text: str | None, base: int = 10) -> int | None:
    try:
        return int(text.strip(), base) if text is not None else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text.strip()) if text is not None else None
    except ValueError:
        return None


# -- the machine ----------------------------------------------------------------------------------


class _Reader:
    """Collects figures together with where each came from and what fell back."""

    def __init__(self, root: Path):
        self.root = root
        self.sources: dict[str, str] = {}
        self.fallbacks: list[str] = []

    def read(self, rel: str) -> str | None:
        return _read(self.root, rel)

    def source(self, key: str, text: str) -> None:
        self.sources[key] = text

    def fallback(self, key: str, text: str) -> None:
        self.sources[key] = f"ASSUMED: {text}"
        self.fallbacks.append(f"{key}: {text}")


def _affinity(r: _Reader, blocks, affinity) -> tuple[int, ...]:
    if affinity:
        r.source("cpus", "given by the caller")
        return tuple(sorted(affinity))
    if r.root == Path("/") and hasattr(os, "sched_getaffinity"):
        r.source("cpus", "os.sched_getaffinity(0): the CPUs this process may run on")
        return tuple(sorted(os.sched_getaffinity(0)))
    online = parse_cpu_list(r.read("sys/devices/system/cpu/online") or "")
    if online:
        r.source("cpus", "/sys/devices/system/cpu/online")
        return online
    numbered = sorted(_int(b.get("processor")) for b in blocks if _int(b.get("processor")) is not None)
    if numbered:
        r.source("cpus", "/proc/cpuinfo processor entries")
        return tuple(numbered)
    count = os.cpu_count() or 1
    r.fallback("cpus", f"os.cpu_count() = {count}: no affinity, /sys or /proc/cpuinfo to read")
    return tuple(range(count))


def _topology(r: _Reader, cpus, by_cpu) -> tuple[int, int, dict[int, tuple[int, int]] | None]:
    """(physical cores among `cpus`, threads per core, CPU -> (package, core) or None)."""
    cores = {}
    for cpu in cpus:
        base = f"sys/devices/system/cpu/cpu{cpu}/topology/"
        package, core = _int(r.read(base + "physical_package_id")), _int(r.read(base + "core_id"))
        if package is None or core is None:
            block = by_cpu.get(cpu, {})
            package, core = _int(block.get("physical id")), _int(block.get("core id"))
        if package is None or core is None:
            cores = None
            break
        cores.setdefault((package, core), []).append(cpu)
    if cores:
        r.source(
            "cores",
            "distinct (physical_package_id, core_id) of the usable CPUs "
            "(/sys/devices/system/cpu/cpuN/topology, else /proc/cpuinfo)",
        )
        core_of = {cpu: key for key, members in cores.items() for cpu in members}
        return len(cores), max(len(v) for v in cores.values()), core_of
    r.fallback("cores", f"{len(cpus)}: one core per usable CPU (no topology to read; SMT would make this an overcount)")
    return len(cpus), 1, None


def _clocks(r: _Reader, cpus, blocks, model_name) -> tuple[float | None, float | None, float | None]:
    maxima = [_int(r.read(f"sys/devices/system/cpu/cpu{c}/cpufreq/cpuinfo_max_freq")) for c in cpus]
    maxima = [m for m in maxima if m]
    max_mhz = max(maxima) / 1000.0 if maxima else None
    if max_mhz:
        r.source("clock.max", "/sys/devices/system/cpu/cpuN/cpufreq/cpuinfo_max_freq (highest over usable CPUs)")
    bases = [_int(r.read(f"sys/devices/system/cpu/cpu{c}/cpufreq/base_frequency")) for c in cpus]
    bases = [b for b in bases if b]
    base_mhz = max(bases) / 1000.0 if bases else None
    if base_mhz:
        r.source("clock.base", "/sys/devices/system/cpu/cpuN/cpufreq/base_frequency")
    else:
        match = re.search(r"@\s*([\d.]+)\s*GHz", model_name)
        if match:
            base_mhz = float(match.group(1)) * 1000.0
            r.source("clock.base", f"the model name's '@ {match.group(1)}GHz'")
    reported = [_float(b.get("cpu MHz")) for b in blocks]
    reported = [m for m in reported if m]
    reported_mhz = max(reported) if reported else None
    if reported_mhz:
        r.source(
            "clock.reported",
            "/proc/cpuinfo 'cpu MHz' (highest over CPUs; the current clock, "
            "or the nominal one on most virtual machines)",
        )
    if not (max_mhz or base_mhz or reported_mhz):
        r.fallback("clock", f"{FALLBACK_MHZ:g} MHz: no cpufreq, model-name or 'cpu MHz' clock to read")
    return max_mhz, base_mhz, reported_mhz


def _caches(r: _Reader, cpus, core_of) -> tuple[Cache, ...]:
    found: dict[tuple[int, str, tuple[int, ...]], Cache] = {}
    for cpu in cpus:
        base = f"sys/devices/system/cpu/cpu{cpu}/cache/"
        try:
            indexes = sorted(p.name for p in (r.root / base).iterdir() if p.name.startswith("index"))
        except OSError:
            continue
        for index in indexes:
            level = _int(r.read(f"{base}{index}/level"))
            kind = (r.read(f"{base}{index}/type") or "").strip()
            size = parse_size(r.read(f"{base}{index}/size") or "")
            shared = r.read(f"{base}{index}/shared_cpu_list")
            if level is None or size is None or kind == "Instruction" or not kind:
                continue
            members = parse_cpu_list(shared) if shared else (cpu,)
            # CPUs outside this machine's topology map (offline, not ours) count as other cores.
            owners = {core_of.get(c, ("other", c)) for c in members} if core_of else set(members)
            found.setdefault((level, kind, members), Cache(level, kind, size, members, len(owners) == 1))
    if found:
        r.source("caches", "/sys/devices/system/cpu/cpuN/cache/index*/{level,type,size,shared_cpu_list}")
    return tuple(sorted(found.values(), key=lambda c: (c.level, c.cpus)))


def _memory(r: _Reader) -> int | None:
    for line in (r.read("proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            kib = _int(line.split()[1])
            if kib:
                r.source("dram_capacity", "/proc/meminfo MemTotal")
                return kib * 1024
    if r.root == Path("/"):
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            r.source("dram_capacity", "os.sysconf(SC_PAGE_SIZE * SC_PHYS_PAGES)")
            return int(total)
        except (ValueError, OSError, AttributeError):
            pass
    return None


def _model_name(r: _Reader, first: dict[str, str], blocks, arch: str) -> str:
    for key in ("model name", "Model Name", "cpu model", "Hardware"):
        for block in blocks:
            if block.get(key):
                r.source("model_name", f"/proc/cpuinfo '{key}'")
                return block[key]
    if first.get("CPU implementer"):
        r.source("model_name", "/proc/cpuinfo 'CPU implementer' and 'CPU part' (no model name)")
        return f"{arch} CPU (implementer {first['CPU implementer']}, part {first.get('CPU part', '?')})"
    name = (platform.processor() if r.root == Path("/") else "") or f"{arch or 'unknown'} CPU"
    r.fallback("model_name", f"{name!r}: /proc/cpuinfo names no model")
    return name


def read_machine(root: str = "/", affinity: frozenset[int] | None = None, arch: str | None = None) -> Machine:
    """This machine's CPU as Linux describes it (or a snapshot under `root`). Never raises."""
    r = _Reader(Path(root))
    arch = arch or platform.machine()
    blocks = parse_cpuinfo(r.read("proc/cpuinfo") or "")
    by_cpu = {_int(b.get("processor")): b for b in blocks if _int(b.get("processor")) is not None}
    cpus = _affinity(r, blocks, affinity)
    first = by_cpu.get(cpus[0]) or (blocks[0] if blocks else {})
    flags_text = first.get("flags") or first.get("Features") or ""
    if flags_text:
        r.source("flags", "/proc/cpuinfo 'flags' / 'Features'")
    else:
        r.fallback("flags", "none readable: SIMD width and math modes fall back (see target notes)")
    model_name = _model_name(r, first, blocks, arch)
    cores, threads_per_core, core_of = _topology(r, cpus, by_cpu)
    max_mhz, base_mhz, reported_mhz = _clocks(r, cpus, blocks, model_name)
    caches = _caches(r, cpus, core_of)
    if not caches:
        r.fallbacks.append("caches: none readable under /sys/devices/system/cpu/cpuN/cache")
    return Machine(
        model_name=model_name,
        vendor=first.get("vendor_id") or first.get("CPU implementer") or "",
        family=_int(first.get("cpu family")),
        model=_int(first.get("model")),
        arch=arch,
        flags=tuple(sorted(set(flags_text.split()))),
        cpus=cpus,
        cores=cores,
        threads_per_core=threads_per_core,
        max_mhz=max_mhz,
        base_mhz=base_mhz,
        reported_mhz=reported_mhz,
        caches=caches,
        memory_bytes=_memory(r),
        sources=dict(r.sources),
        fallbacks=tuple(r.fallbacks),
    )
