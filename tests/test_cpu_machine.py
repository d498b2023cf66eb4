"""tf_cpu's Core side: reading the CPU from /proc and /sys snapshots (one recorded on the 2-core
development VM, three constructed for the other paths), the ISA rules, and the host-cpu target
built from them, fallbacks included. No torch needed."""

import pytest
from host_snapshots import snapshot_root
from tf_cpu.isa import host_isa
from tf_cpu.machine import Machine, parse_cpu_list, parse_size, read_machine
from tf_cpu.target import ASSUMED_DRAM_BYTES_PER_S, host_target

from tensorforge.hardware.target import datasheet_ceilings, validate_target
from tensorforge.testing import check_target

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def snapshot(name, **kw) -> Machine:
    return read_machine(root=str(snapshot_root(name)), **kw)


@pytest.mark.parametrize(
    "text, cpus",
    [("0", (0,)), ("0-3", (0, 1, 2, 3)), ("0,2", (0, 2)), ("0-1,4-5\n", (0, 1, 4, 5)), ("", ()), ("0-x", ())],
)
def test_parse_cpu_list(text, cpus):
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize(
    "text, size",
    [
        ("32K", 32 * KiB),
        ("1024K\n", MiB),
        ("2M", 2 * MiB),
        ("32768 KB", 32 * MiB),
        ("1G", GiB),
        ("lots", None),
        ("", None),
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


# -- the recorded snapshot: the development VM ---------------------------------------------------


def test_recorded_epyc_vm():
    m = snapshot("epyc-2core-vm")
    assert m.model_name == "AMD EPYC" and m.vendor == "AuthenticAMD" and (m.family, m.model) == (25, 17)
    assert m.cpus == (0, 1) and m.cores == 2 and m.threads_per_core == 1
    assert m.max_mhz is None and m.base_mhz is None and m.reported_mhz == 2596.146
    assert m.has("avx512f", "avx512_bf16") and not m.has("avx512_fp16")
    assert [(c.level, c.kind, c.size_bytes, c.cpus, c.per_core) for c in m.caches] == [
        (1, "Data", 32 * KiB, (0,), True),
        (1, "Data", 32 * KiB, (1,), True),
        (2, "Unified", MiB, (0,), True),
        (2, "Unified", MiB, (1,), True),
        (3, "Unified", 32 * MiB, (0, 1), False),
    ]
    assert m.levels(per_core=True) == [(1, 32 * KiB, 2), (2, MiB, 2)]
    assert m.levels(per_core=False) == [(3, 32 * MiB, 1)]
    assert m.memory_bytes > 16 * GiB
    assert m.fallbacks == ()
    assert m.sources["cpus"] == "/sys/devices/system/cpu/online"


def test_recorded_epyc_vm_target():
    t = host_target(snapshot("epyc-2core-vm"))
    validate_target(t)
    assert t.name == "host-cpu" and t.device_names == ("AMD EPYC",)
    assert t.pe_array.units == 2 and t.pe_array.unit_name == "core"
    # Zen 4 runs AVX-512 as two 256-bit halves: 32 fp32 FLOP/clock; avx512_bf16 doubles it;
    # no avx512_fp16, so fp16 is not declared (predict says so rather than invent a peak)
    assert dict(t.pe_array.flops_per_clock) == {"fp32": 32.0, "bf16": 64.0}
    assert [(s.name, s.capacity_bytes, s.scope) for s in t.sram] == [
        ("l2", MiB, "per_unit"),
        ("l3", 32 * MiB, "shared"),
    ]
    assert [(p.name, p.clock_mhz) for p in t.operating_points] == [("reported", 2596.146)]
    assert t.default_operating_point == "reported"
    assert t.operating_points[0].dram_bandwidth_bytes_per_s == ASSUMED_DRAM_BYTES_PER_S == 76.8e9
    assert t.sources["operating_points.dram_bandwidth"].startswith("ASSUMED: 76.8 GB/s")
    assert "Zen 4" in t.sources["pe_array.flops_per_clock"]
    assert any("boost" in n and "not a bound" in n for n in t.notes)
    assert any("l1 32 KiB" in n for n in t.notes)
    ceilings = datasheet_ceilings(t)
    assert ceilings.compute["fp32"] == pytest.approx(2 * 32 * 2596.146e6)
    check_target(t)  # the checks every shipped target passes (sources, round trip, model)


# -- constructed snapshots -----------------------------------------------------------------------


def test_xeon_with_smt_cpufreq_and_amx():
    m = snapshot("xeon-smt")
    assert m.cpus == (0, 1, 2, 3) and m.cores == 2 and m.threads_per_core == 2
    assert (m.max_mhz, m.base_mhz, m.reported_mhz) == (3800.0, 2000.0, 3800.0)
    # caches shared by SMT siblings (0,2 and 1,3) are still private to one core
    assert m.levels(per_core=True) == [(1, 48 * KiB, 2), (2, 2 * MiB, 2)]
    assert m.levels(per_core=False) == [(3, 107520 * KiB, 1)]
    isa = host_isa(m)
    assert isa.vector == "avx512"
    assert isa.flops_per_clock == {"fp32": 64.0, "bf16": 1024.0, "fp16": 128.0}
    t = host_target(m)
    assert t.pe_array.units == 2  # SMT threads share the FMA units: cores, not CPUs
    assert [(p.name, p.clock_mhz) for p in t.operating_points] == [("max", 3800.0), ("base", 2000.0)]
    assert t.default_operating_point == "max"  # the fastest clock keeps the bound a bound
    assert t.device_names == ("Intel(R) Xeon(R) Platinum 8480+",)
    check_target(t)


def test_affinity_limits_the_cores():
    m = snapshot("xeon-smt", affinity={0, 2})  # one core's two SMT threads
    assert m.cpus == (0, 2) and m.cores == 1 and m.threads_per_core == 2
    assert host_target(m).pe_array.units == 1
    assert m.sources["cpus"] == "given by the caller"


def test_arm_without_caches_or_clock_falls_back_and_says_so():
    m = snapshot("arm-no-caches", arch="aarch64")
    assert m.model_name == "aarch64 CPU (implementer 0x41, part 0xd40)"
    assert m.cpus == (0, 1, 2, 3) and m.cores == 4 and m.caches == ()
    assert m.reported_mhz is None and m.max_mhz is None
    assert any(f.startswith("cores: 4: one core per usable CPU") for f in m.fallbacks)
    assert any(f.startswith("clock: 3000 MHz") for f in m.fallbacks)
    assert any(f.startswith("caches: none readable") for f in m.fallbacks)
    assert host_isa(m).flops_per_clock == {"fp32": 16.0, "bf16": 64.0, "fp16": 32.0}
    t = host_target(m)
    assert [(p.name, p.clock_mhz) for p in t.operating_points] == [("assumed", 3000.0)]
    assert [(s.name, s.capacity_bytes, s.scope) for s in t.sram] == [
        ("l2", 2 * MiB, "per_unit"),
        ("l3", 16 * MiB, "shared"),
    ]
    assert t.sources["sram.per_unit"].startswith("ASSUMED")
    assert t.sources["sram.l3"].startswith("ASSUMED")
    assert sum(n.startswith("fell back: ") for n in t.notes) == 3
    assert t.dram_capacity_bytes == 16384000 * 1024
    check_target(t)


def test_bare_cpuinfo_only():
    m = snapshot("bare-x86", arch="x86_64")
    assert m.model_name == "Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz"
    assert m.base_mhz == 3400.0 and m.sources["clock.base"] == "the model name's '@ 3.40GHz'"
    assert m.memory_bytes is None
    assert host_isa(m).flops_per_clock == {"fp32": 32.0}  # avx2 + fma; no bf16/fp16
    t = host_target(m)
    assert [(p.name, p.clock_mhz) for p in t.operating_points] == [("base", 3400.0)]
    assert t.dram_capacity_bytes == 16 * GiB and t.sources["dram_capacity_bytes"].startswith("ASSUMED")
    assert "fp16" not in t.pe_array.flops_per_clock and "bf16" not in t.pe_array.flops_per_clock


def test_malformed_files_fall_back_instead_of_raising(tmp_path):
    cpu = tmp_path / "sys" / "devices" / "system" / "cpu"
    (cpu / "cpu0" / "cache" / "index0").mkdir(parents=True)
    (cpu / "online").write_text("garbage\n")
    for name, text in (("level", "two"), ("type", "Data"), ("size", "lots"), ("shared_cpu_list", "?")):
        (cpu / "cpu0" / "cache" / "index0" / name).write_text(text)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text("processor : 0\ncpu MHz : fast\nflags : avx2 fma\n")
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: many kB\n")
    m = read_machine(root=str(tmp_path), arch="x86_64")
    assert m.cpus == (0,) and m.sources["cpus"] == "/proc/cpuinfo processor entries"
    assert m.caches == () and m.reported_mhz is None and m.memory_bytes is None
    validate_target(host_target(m))


def test_empty_root_never_raises(tmp_path):
    m = read_machine(root=str(tmp_path), arch="riscv64")
    assert m.cores >= 1 and m.flags == () and m.caches == ()
    assert any(f.startswith("flags: none readable") for f in m.fallbacks)
    t = host_target(m)
    validate_target(t)
    assert dict(t.pe_array.flops_per_clock) == {"fp32": 16.0}


@pytest.mark.parametrize(
    "flags, vendor, family, fp32",
    [
        ("sse sse2", "GenuineIntel", 6, 8.0),
        ("sse2 avx", "GenuineIntel", 6, 16.0),
        ("sse2 avx avx2 fma", "AuthenticAMD", 23, 32.0),
        ("avx2 fma avx512f", "GenuineIntel", 6, 64.0),
        ("avx2 fma avx512f", "AuthenticAMD", 25, 32.0),  # Zen 4: 2 x 256-bit
        ("avx2 fma avx512f", "AuthenticAMD", 26, 64.0),  # Zen 5: full 512-bit datapath
        ("mmx", "GenuineIntel", 6, 16.0),  # nothing recognised: assumed 128-bit x 2
    ],
)
def test_isa_rules(flags, vendor, family, fp32):
    m = Machine(
        model_name="x",
        vendor=vendor,
        family=family,
        model=1,
        arch="x86_64",
        flags=tuple(flags.split()),
        cpus=(0,),
        cores=1,
        threads_per_core=1,
        max_mhz=None,
        base_mhz=None,
        reported_mhz=None,
        caches=(),
        memory_bytes=None,
    )
    assert host_isa(m).flops_per_clock["fp32"] == fp32


def test_this_machine_is_readable():
    """Whatever machine runs the tests: a valid target with positive peaks."""
    t = host_target(read_machine())
    validate_target(t)
    assert t.pe_array.units >= 1 and t.device_names and t.device_names[0]
