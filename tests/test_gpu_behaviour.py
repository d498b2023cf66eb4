"""What the GPU measurement and probe code does on a real CUDA device, asserted as behaviour, not
structure (skipped without one; the coordinator runs these on the lent GPU whenever the
measurement code changes, and the issue note records what they showed):

* timing: CUDA-event samples of a kernel whose duration is known independently (a spin kernel
  long enough that the host's wall clock around a synchronised launch measures it to well under
  1%) agree with that duration, and doubling the spin doubles the sample;
* the flush: a memory-bound kernel over a buffer that fits in L2 is slower with the flush than
  without it (its operands come from DRAM, as the flush promises), and the flush's own bytes are
  at least the L2;
* probes: every calibrated ceiling is positive and below the target's datasheet peak for that
  math mode (a probe can only achieve less than the peak; above it, the probe or the datasheet
  figure is wrong).
"""

import time

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.fixture(scope="module")
def session():
    from tf_cuda.backend import TorchCudaBackend

    s = TorchCudaBackend().open(0)
    yield s
    s.close()


def _spin(cycles):
    return lambda: torch.cuda._sleep(cycles)


def _wall_seconds(fn, repeats=5):
    """Host wall clock around a synchronised launch: for a kernel of tens of milliseconds the
    launch and synchronisation overhead (microseconds) is well under 1%."""
    best = float("inf")
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def _cycles_for(seconds):
    probe = 10_000_000
    per_cycle = _wall_seconds(_spin(probe)) / probe
    return int(seconds / per_cycle)


def test_event_timing_matches_a_known_kernel_duration(session):
    from tf_cuda.timing import time_cuda

    from tensorforge_measure.measure.timing import TimingPolicy

    cycles = _cycles_for(0.02)  # a ~20 ms spin
    known = _wall_seconds(_spin(cycles))
    policy = TimingPolicy(warmup_iters=2, min_iters=10, max_iters=20, target_rel_iqr=0.02, budget_s=5.0)
    timed = time_cuda(_spin(cycles), policy, session.device)
    assert timed.stats.p50 == pytest.approx(known, rel=0.02), (timed.stats.p50, known)
    double = time_cuda(_spin(2 * cycles), policy, session.device)
    assert double.stats.p50 / timed.stats.p50 == pytest.approx(2.0, rel=0.03)


def _device_p50(read, before, n=60):
    """Median CUDA-event time of `read`, with `before` queued ahead of each start event. A ~40 us
    spin in `before` keeps the device busy while the host queues the events and the read, so the
    pair times the device, not the host's launch (without it a ~10 us read timed at the eager event
    floor, ~20 us on the H200, and the warm side read slower than the cold one)."""
    times = []
    for _ in range(n):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        before()
        start.record()
        read()
        end.record()
        times.append((start, end))
    torch.cuda.synchronize()
    return sorted(a.elapsed_time(b) for a, b in times)[n // 2] * 1e-3


def test_the_flush_sends_an_l2_sized_operand_back_to_dram(session):
    l2 = session.l2_bytes
    assert l2 > 0 and session.flush_bytes >= l2
    data = torch.ones(l2 // 2 // 4, dtype=torch.float32, device=session.device)  # half of L2
    out = torch.empty((), dtype=torch.float32, device=session.device)
    # the harness's write flush (tf_cuda.timing): flush_bytes of int32 zeros
    flush = torch.empty(session.flush_bytes // 4, dtype=torch.int32, device=session.device)

    def read():
        torch.sum(data, dim=0, out=out)  # the out= overload needs a dim

    spin = _spin(_cycles_for(40e-6))
    for _ in range(5):
        read()
    warm = _device_p50(read, spin)
    cold = _device_p50(read, lambda: (flush.zero_(), spin()))
    assert cold > 1.15 * warm, (cold, warm)


def test_probe_ceilings_are_positive_and_below_the_datasheet_peaks(session):
    from tensorforge.hardware.target import datasheet_ceilings
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge_measure.calibrate.store import run_probes
    from tensorforge_measure.host import OpsHost

    core = PluginHost()
    target = next(
        (core.target(n) for n in core.names("targets") if core.target(n).matches_device(session.info.name)), None
    )
    if target is None:
        pytest.skip(f"no installed target describes {session.info.name}")
    ops = OpsHost()
    cal = run_probes(session, ops.for_backend("probes", "torch-cuda"))
    assert cal.failed_probes == {}, cal.failed_probes
    # the highest operating point: a probe may run at boost clocks, never above them
    points = sorted(target.operating_points, key=lambda p: p.clock_mhz)
    sheet = datasheet_ceilings(target, points[-1].name)
    for mode, rate in cal.ceilings.compute.items():
        assert 0 < rate <= sheet.compute[mode], (mode, rate, sheet.compute[mode])
    assert 0 < cal.ceilings.dram_bytes_per_s <= 2 * sheet.dram_bytes_per_s  # copy counts read + write
    assert cal.ceilings.launch_floor_s and 0 < cal.ceilings.launch_floor_s < 1e-3
