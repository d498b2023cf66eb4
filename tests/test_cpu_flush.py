"""The host-CPU flush size: what the cores can hold (sysfs for the private caches, a measured
sweep for the shared level), not several times whatever a VM reports; its basis and own cost on
record. The sizing rule is tested on recorded and constructed rates; the sweep once for real."""

import pytest
from host_snapshots import snapshot_root
from tf_cpu.flush import (
    FLUSH_MULTIPLE,
    MIB,
    MIN_FLUSH_BYTES,
    SWEEP_CAP,
    choose_reach,
    flush_cost,
    measure_pass_rates,
    nominal_cache_bytes,
    nominal_reach_bytes,
    plan_flush,
    sweep_sizes,
)
from tf_cpu.machine import Cache, Machine, read_machine


def _machine(l3_bytes, cores=2, memory=8 << 30):
    caches = []
    for cpu in range(cores):
        caches += [Cache(1, "Data", 48 << 10, (cpu,), True), Cache(2, "Unified", 1 << 20, (cpu,), True)]
    caches.append(Cache(3, "Unified", l3_bytes, tuple(range(cores)), False))
    return Machine(
        model_name="AMD EPYC",
        vendor="AuthenticAMD",
        family=26,
        model=2,
        arch="x86_64",
        flags=("avx2",),
        cpus=tuple(range(cores)),
        cores=cores,
        threads_per_core=1,
        max_mhz=None,
        base_mhz=None,
        reported_mhz=2596.0,
        caches=tuple(caches),
        memory_bytes=memory,
    )


def _rates(fall_at, cache=60e9, memory=15e9, top=1 << 30):
    """Recorded-shape sweep: cache speed below `fall_at`, memory speed from it on."""
    out, size = [], MIB
    while size <= top:
        out.append((size, cache if size < fall_at else memory))
        size *= 2
    return out


def test_a_vm_reporting_the_sockets_l3_gets_a_flush_sized_by_what_a_core_reaches():
    vm = _machine(480 * MIB)  # the VM: 480 MiB "L3" for 2 vCPUs
    plan = plan_flush(vm, _rates(fall_at=64 * MIB))
    assert plan.measured_reach_bytes == 64 * MIB
    private = 2 * ((48 << 10) + (1 << 20))
    assert plan.bytes == FLUSH_MULTIPLE * (private + 64 * MIB)
    assert plan.bytes < 4 * nominal_cache_bytes(vm) / 10  # was 4 x 482 MiB = 1.9 GB
    assert "measured reach (64 MiB" in plan.basis and "480 MiB" not in plan.basis
    assert plan.pass_rates[0] == (MIB, 60e9)


def test_the_flush_never_exceeds_twice_what_sysfs_reports():
    small = _machine(32 * MIB)
    plan = plan_flush(small, _rates(fall_at=256 * MIB))  # a sweep claiming more
    assert plan.bytes == FLUSH_MULTIPLE * nominal_cache_bytes(small)
    assert "at most the" in plan.basis


@pytest.mark.parametrize(
    "rates, why",
    [
        ([], "too few usable sweep points"),
        ([(MIB, 1e9), (2 * MIB, float("nan")), (4 * MIB, 1e9)], "too few usable sweep points"),
        ([(MIB, 20e9), (2 * MIB, 19e9), (4 * MIB, 18e9), (8 * MIB, 17e9)], "no clear cache plateau"),
        ([(MIB, 20e9), (2 * MIB, 19e9), (4 * MIB, 25e9)], "no clear cache plateau"),
    ],
    ids=["no sweep", "a NaN rate", "flat (busy machine)", "fastest at the largest size"],
)
def test_an_inconclusive_sweep_falls_back_to_the_sysfs_total_and_says_why(rates, why):
    reach, reason = choose_reach(rates)
    assert reach is None and why in reason
    vm = _machine(32 * MIB)
    plan = plan_flush(vm, rates)
    assert plan.measured_reach_bytes is None
    assert plan.bytes == FLUSH_MULTIPLE * nominal_cache_bytes(vm) and why in plan.basis


def test_the_reach_is_the_first_size_past_the_midpoint_after_the_fastest():
    rates = [(MIB, 50e9), (2 * MIB, 60e9), (4 * MIB, 58e9), (8 * MIB, 40e9), (16 * MIB, 20e9), (32 * MIB, 15e9)]
    reach, reason = choose_reach(rates)
    assert reach == 16 * MIB  # midpoint sqrt(60*15) = 30 GB/s; 8 MiB at 40 is still cached
    assert "at 16 MiB" in reason


def test_tiny_caches_get_the_minimum_flush():
    tiny = Machine(
        model_name="x",
        vendor="",
        family=None,
        model=None,
        arch="x86_64",
        flags=(),
        cpus=(0,),
        cores=1,
        threads_per_core=1,
        max_mhz=None,
        base_mhz=None,
        reported_mhz=None,
        caches=(Cache(1, "Data", 32 << 10, (0,), True),),
        memory_bytes=None,
    )
    plan = plan_flush(tiny, ())
    assert plan.bytes == MIN_FLUSH_BYTES and "minimum" in plan.basis


def test_sweep_sizes_pass_the_caches_but_stay_bounded():
    sizes = sweep_sizes(_machine(32 * MIB))
    assert sizes[0] == MIB and sizes[-1] >= 2 * nominal_reach_bytes(_machine(32 * MIB))
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))
    assert sweep_sizes(_machine(480 * MIB))[-1] <= SWEEP_CAP
    assert sweep_sizes(_machine(480 * MIB, memory=1 << 30))[-1] <= (1 << 30) // 8  # small RAM


def test_the_recorded_vm_snapshot_reaches_one_l3_instance():
    vm = read_machine(root=str(snapshot_root("epyc-2core-vm")), affinity=frozenset({0, 1}))
    l3 = max(c.size_bytes for c in vm.caches if c.level == 3)
    assert nominal_reach_bytes(vm) >= l3
    assert nominal_reach_bytes(vm) <= nominal_cache_bytes(vm)


def test_flush_cost_is_the_median_of_timed_calls():
    ticks = iter([0.0, 1.0, 1.0, 3.0, 3.0, 3.5, 3.5, 7.5, 7.5, 8.0])
    calls = []
    cost = flush_cost(lambda: calls.append(1), calls=5, clock=lambda: next(ticks))
    assert cost == 1.0 and len(calls) == 6  # one untimed call first


def test_the_sweep_runs_on_one_thread_and_restores_the_count():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    seen = []
    ticks = iter(range(10_000))

    def clock():
        seen.append(torch.get_num_threads())
        return next(ticks) * 1e-3

    rates = measure_pass_rates(torch, (MIB, 2 * MIB), repeats=2, clock=clock)
    assert set(seen) == {1} and torch.get_num_threads() == before
    assert [size for size, _ in rates] == [MIB, 2 * MIB] and all(rate > 0 for _, rate in rates)
