"""The energy window through NVML's functions and RAPL's files, on fakes (unit logic only: every
figure in the docs comes from a real device): a fake NVML whose energy counter and instantaneous
power follow a simulated clock that the workload advances, so the window's joules per execution,
its power integration and the counter's update interval are known exactly; a fake powercap tree
for RAPL (readable, wrapped, absent)."""

import types

import pytest
from tf_cpu.rapl import Rapl, RaplCounter
from tf_cuda.nvml_power import FIELD_POWER_INSTANT, NvmlPower

from tensorforge_measure.energy.measure import measure_energy, take_window


class SimClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class FakeNvml:
    """The NVML functions the energy window calls, over a simulated device drawing `watts`;
    the counter (mJ) is refreshed every `interval_s` of simulated time."""

    def __init__(self, clock, watts=400.0, interval_s=0.01, instant=True):
        self.clock, self.watts, self.interval, self.instant = clock, watts, interval_s, instant
        self.inits = 0

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.inits -= 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return ("gpu", index)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        t = self.clock()
        updated = round(t - (t % self.interval), 9)
        return int(round(updated * self.watts * 1000))

    def nvmlDeviceGetFieldValues(self, handle, ids):
        assert ids == [FIELD_POWER_INSTANT]
        value = types.SimpleNamespace(uiVal=int(self.watts * 1000))
        return [types.SimpleNamespace(nvmlReturn=0 if self.instant else 3, valueType=1, value=value)]

    def nvmlDeviceGetPowerUsage(self, handle):
        return int(self.watts * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000


def test_open_and_read():
    nvml = FakeNvml(SimClock())
    power, reason = NvmlPower.open(0, nvml)
    assert reason is None and nvml.inits == 1
    assert power.instant_w() == 400.0 and power.averaged_w() == 400.0
    assert power.enforced_limit_w() == 700.0
    assert "POWER_INSTANT" in power.instant_source
    power.close()
    assert nvml.inits == 0


def test_open_says_why_not():
    class Broken(FakeNvml):
        def nvmlDeviceGetTotalEnergyConsumption(self, handle):
            raise RuntimeError("Not Supported")

    nvml = Broken(SimClock())
    power, reason = NvmlPower.open(0, nvml)
    assert power is None and "no energy counter" in reason and "Not Supported" in reason
    assert nvml.inits == 0  # shut down again

    class NoInit(FakeNvml):
        def nvmlInit(self):
            raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    power, reason = NvmlPower.open(0, NoInit(SimClock()))
    assert power is None and reason.startswith("nvmlInit failed")


def _workload(clock, seconds=0.001):
    def fn():
        clock.t += seconds

    return fn


def test_window_measures_joules_per_execution_and_integrates_power():
    clock = SimClock()
    power, _ = NvmlPower.open(0, FakeNvml(clock))
    m = measure_energy(_workload(clock), lambda: None, power, 0.001, min_s=0.3, tokens=8, clock=clock)
    assert m.available and m.reason is None and m.regime == "sustained"
    assert m.joules_per_execution == pytest.approx(0.4)  # 400 W x 1 ms
    assert m.mean_power_w == pytest.approx(400.0)
    assert m.seconds_per_execution == pytest.approx(0.001)
    assert m.joules_per_token == pytest.approx(0.05)
    assert m.window_s >= 0.3
    assert m.counter.update_interval_s == pytest.approx(0.01)
    assert m.counter.smallest_step_j == pytest.approx(4.0)
    assert m.counter.unit_j == 0.001
    assert m.integration.joules == pytest.approx(m.joules)
    assert abs(m.integration.counter_agreement) < 1e-9
    assert m.power_limit_w == 700.0
    assert all(s == pytest.approx(0.4) for s in m.samples_j)


def test_without_the_instantaneous_field_the_averaged_reading_is_named():
    clock = SimClock()
    power, _ = NvmlPower.open(0, FakeNvml(clock, instant=False))
    m = measure_energy(_workload(clock), lambda: None, power, 0.001, min_s=0.1, clock=clock)
    assert "not supported" in m.integration.source


def test_a_stuck_counter_leaves_the_measurement_unavailable_with_the_reason():
    clock = SimClock()
    nvml = FakeNvml(clock)
    nvml.nvmlDeviceGetTotalEnergyConsumption = lambda handle: 5
    power, _ = NvmlPower.open(0, nvml)
    m = measure_energy(_workload(clock), lambda: None, power, 0.001, min_s=0.1, clock=clock)
    assert not m.available and "did not change" in m.reason and m.joules_per_execution is None


def _powercap(root, value=1_000_000, top=2**32):
    pkg = root / "intel-rapl:0"
    pkg.mkdir(parents=True)
    (pkg / "energy_uj").write_text(f"{value}\n")
    (pkg / "max_energy_range_uj").write_text(f"{top}\n")
    (pkg / "name").write_text("package-0\n")
    sub = root / "intel-rapl:0:0"  # a subdomain: never summed
    sub.mkdir()
    (sub / "energy_uj").write_text("5\n")
    return pkg


def test_rapl_sums_packages_and_undoes_a_wrap(tmp_path):
    pkg = _powercap(tmp_path, value=2**32 - 1_000_000)
    rapl, reason = Rapl.open(tmp_path)
    assert reason is None and "package-0" in rapl.source and len(rapl.domains) == 1
    start = rapl.read_uj()
    (pkg / "energy_uj").write_text("2000000\n")  # wrapped once
    assert rapl.joules_between(start, rapl.read_uj()) == pytest.approx(3.0)


def test_rapl_unavailable_says_why(tmp_path):
    rapl, reason = Rapl.open(tmp_path / "missing")
    assert rapl is None and "does not exist" in reason
    rapl, reason = Rapl.open(tmp_path)
    assert rapl is None and "no RAPL package domain" in reason


def test_rapl_beside_the_gpu_window(tmp_path):
    pkg = _powercap(tmp_path)
    rapl, _ = Rapl.open(tmp_path)
    clock = SimClock()
    power, _ = NvmlPower.open(0, FakeNvml(clock))
    state = {"uj": 1_000_000}

    def fn():  # the host draws 50 W while the GPU works
        clock.t += 0.001
        state["uj"] += 50_000
        (pkg / "energy_uj").write_text(f"{state['uj']}\n")

    from tensorforge_measure.energy.window import cumulative

    window = take_window(cumulative(lambda: (fn(), 1)[1]), power, min_s=0.05, rapl=rapl, clock=clock)
    assert window.host.available and window.host.mean_power_w == pytest.approx(50.0)


def test_rapl_as_the_counter_of_a_cpu_device(tmp_path):
    pkg = _powercap(tmp_path)
    rapl, _ = Rapl.open(tmp_path)
    counter = RaplCounter(rapl)
    state = {"uj": 1_000_000}

    def fn():
        state["uj"] += 20_000  # 20 mJ per execution
        (pkg / "energy_uj").write_text(f"{state['uj']}\n")

    m = measure_energy(fn, lambda: None, counter, 1e-3, min_s=0.01)
    assert m.available and m.joules_per_execution == pytest.approx(0.02)
    assert m.integration is None and m.power_limit_w is None
    assert "RAPL" in m.counter.source


class FakeEvent:
    """A device event on a simulated queue: completes once the device's clock passes the time
    its chunk finishes (the device runs the queued chunks one after another)."""

    def __init__(self, device):
        self.device, self.at = device, None

    def record(self):
        self.at = self.device.enqueue_marker()

    def query(self):
        return self.device.clock.t >= self.at

    def synchronize(self):
        self.device.clock.t = max(self.device.clock.t, self.at)
        self.device.waits += 1


class QueueDevice:
    """Executions take `per_exec_s` of device time, queued behind each other; the host's own
    time passes only when it waits, or by `host_s` per call (the launch)."""

    def __init__(self, clock, per_exec_s=0.001, host_s=1e-5):
        self.clock, self.per, self.host = clock, per_exec_s, host_s
        self.busy_until = 0.0
        self.waits = 0

    def call(self):
        self.clock.t += self.host
        self.busy_until = max(self.busy_until, self.clock.t) + self.per

    def enqueue_marker(self):
        return self.busy_until


def test_queued_steps_keep_the_device_busy_and_count_completions():
    from tensorforge_measure.energy.measure import QueuedSteps

    clock = SimClock()
    dev = QueueDevice(clock)
    steps = QueuedSteps(dev.call, lambda: FakeEvent(dev), 0.001)
    assert steps.calls == 2 and steps.depth == 15  # 2 ms chunks, 30 ms ahead
    done = [steps() for _ in range(200)]
    assert done == sorted(done) and done[-1] > 0
    # the device never waited for the host: its busy time equals the clock (within the queue)
    assert dev.busy_until - clock.t <= steps.depth * steps.calls * 0.001 + 1e-9
    assert done[-1] == pytest.approx(clock.t / 0.001, abs=2 * steps.calls)
    steps.drain()
    assert not steps.pending


def test_window_with_queued_steps_on_a_slow_counter():
    """A counter read that costs the host 4 ms (as NVML's did on an H200) must not idle the
    device: joules per execution stay those of back-to-back executions."""
    clock = SimClock()
    dev = QueueDevice(clock)
    nvml = FakeNvml(clock, watts=700.0, interval_s=0.1)
    read = nvml.nvmlDeviceGetTotalEnergyConsumption

    def slow_read(handle):
        clock.t += 0.004
        return read(handle)

    nvml.nvmlDeviceGetTotalEnergyConsumption = slow_read
    power, _ = NvmlPower.open(0, nvml)
    m = measure_energy(dev.call, lambda: None, power, 0.001, min_s=0.3, clock=clock, event=lambda: FakeEvent(dev))
    assert m.available and "queued" in m.method
    assert m.seconds_per_execution == pytest.approx(0.001, rel=0.03)
    assert m.joules_per_execution == pytest.approx(0.7, rel=0.03)
    # synchronous chunks on the same slow counter: the device idles during every read
    clock2 = SimClock()
    dev2 = QueueDevice(clock2)
    nvml2 = FakeNvml(clock2, watts=700.0, interval_s=0.1)
    read2 = nvml2.nvmlDeviceGetTotalEnergyConsumption
    nvml2.nvmlDeviceGetTotalEnergyConsumption = lambda h: (setattr(clock2, "t", clock2.t + 0.004), read2(h))[1]
    power2, _ = NvmlPower.open(0, nvml2)

    def sync2():
        clock2.t = max(clock2.t, dev2.busy_until)

    slow = measure_energy(dev2.call, sync2, power2, 0.001, min_s=0.3, clock=clock2)
    assert slow.seconds_per_execution > 2.5e-3  # 2 ms of work per 6 ms step


class FieldNvml(FakeNvml):
    """NVML answering NVML_FI_DEV_ENERGY and NVML_FI_DEV_POWER_INSTANT in one call, each value
    stamped by the driver (us since 1970) `lag_s` before the host's clock reads it."""

    def __init__(self, clock, wall_offset_s=1.7e9, lag_s=0.003, stamp=True, **kw):
        super().__init__(clock, **kw)
        self.offset, self.lag, self.stamp = wall_offset_s, lag_s, stamp

    def nvmlDeviceGetFieldValues(self, handle, ids):
        from tf_cuda.nvml_power import FIELD_ENERGY

        when = int((self.clock() - self.lag + self.offset) * 1e6) if self.stamp else 0
        out = []
        for i in ids:
            if i == FIELD_ENERGY:
                value = types.SimpleNamespace(ullVal=self.nvmlDeviceGetTotalEnergyConsumption(handle))
                out.append(types.SimpleNamespace(nvmlReturn=0, valueType=3, value=value, timestamp=when))
            else:
                value = types.SimpleNamespace(uiVal=int(self.watts * 1000))
                out.append(types.SimpleNamespace(nvmlReturn=0, valueType=1, value=value, timestamp=when))
        return out


def test_counter_and_power_in_one_call_on_the_drivers_clock():
    """Both values come from one nvmlDeviceGetFieldValues call and are timed by the driver's
    timestamp mapped onto the window's clock; without a believable timestamp, the call's midpoint."""
    from tf_cuda import nvml_power

    clock = SimClock()
    clock.t = 5.0
    nvml = FieldNvml(clock, lag_s=0.003)
    power = NvmlPower(nvml, ("gpu", 0))
    power.clock = clock
    power.offset_s = nvml_power.epoch_offset(clock, lambda: clock.t + 1.7e9)
    assert power.offset_s == pytest.approx(1.7e9)
    clock.t = 5.0123
    counter, watts = power.read_both()
    assert counter == (pytest.approx(5.0093), pytest.approx(nvml.nvmlDeviceGetTotalEnergyConsumption(None) / 1000))
    assert watts == (pytest.approx(5.0093), 400.0)
    nvml.stamp = False  # a zero timestamp: the host's midpoint of the call
    counter, watts = power.read_both()
    assert counter[0] == pytest.approx(5.0123) and watts[0] == pytest.approx(5.0123)


def test_the_energy_field_is_used_only_where_it_reads_the_same_counter():
    clock = SimClock()
    power = NvmlPower(FieldNvml(clock), ("gpu", 0))
    assert power.fields_ok
    plain = NvmlPower(FakeNvml(clock), ("gpu", 0))  # answers the instantaneous field only
    assert not plain.fields_ok

    class OtherCounter(FieldNvml):
        def nvmlDeviceGetFieldValues(self, handle, ids):
            out = super().nvmlDeviceGetFieldValues(handle, ids)
            out[0].value.ullVal += 10_000  # 10 J off: not the function's counter
            return out

    assert not NvmlPower(OtherCounter(clock), ("gpu", 0)).fields_ok


def test_the_sampler_feeds_the_step_loop_from_one_call():
    """With `both`, one call a pass gives the counter poll and the power sample, and the step
    loop's counter reads come from the sampler (latest_joules), never from NVML."""
    import threading

    from tf_cuda.nvml_power import PowerSampler

    calls = []
    lock = threading.Lock()

    def both():
        with lock:
            calls.append(1)
            n = len(calls)
        return (float(n), float(n) * 10.0), (float(n), 400.0)

    with PowerSampler(lambda: 0.0, both=both, period_s=0.001) as sampler:
        first = sampler.latest_joules()
        assert first is not None and first >= 10.0
    s = sampler.samples()
    assert len(s.counter) >= 2 and len(s.instant) == len(s.counter)
    assert all(w == 400.0 for _, w in s.instant)
    assert [j for _, j in s.counter] == sorted(j for _, j in s.counter)


def test_the_diagnostic_trace_holds_each_windows_raw_polls(tmp_path, monkeypatch):
    """TENSORFORGE_ENERGY_TRACE: one JSON line per window with the counter's polls and the power
    samples it was cross-checked on; nothing written without it."""
    import json

    from tensorforge_measure.energy.measure import TRACE_ENV
    from tensorforge_measure.energy.window import cumulative

    clock = SimClock()
    power, _ = NvmlPower.open(0, FakeNvml(clock))

    def fn():
        clock.t += 0.001

    take_window(cumulative(lambda: (fn(), 1)[1]), power, min_s=0.05, clock=clock)
    trace = tmp_path / "trace.jsonl"
    assert not trace.exists()
    monkeypatch.setenv(TRACE_ENV, str(trace))
    window = take_window(cumulative(lambda: (fn(), 1)[1]), power, min_s=0.05, clock=clock)
    take_window(cumulative(lambda: (fn(), 1)[1]), power, min_s=0.05, clock=clock)
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert len(lines) == 2
    first = lines[0]
    assert first["joules"] == pytest.approx(window.counter.joules)
    assert first["start_s"] == pytest.approx(window.counter.start_s) and first["end_s"] > first["start_s"]
    assert len(first["ticks"]) == len(window.counter.ticks) >= 2
    assert all(len(p) == 2 for p in first["counter"] + first["instant"])


def test_the_counters_period_is_measured_once_at_idle_and_handed_to_the_grid(monkeypatch):
    """NvmlPower measures the counter's update period once, polling while nothing runs (here on
    simulated time), and take_window hands it to window.grid_edges (whose arithmetic
    test_energy_window.py checks; on a device, test_energy_gpu.py); a window timed on another
    clock than the counter's gets no period (a period timed on another clock is no grid)."""
    import tensorforge_measure.energy.measure as measure

    clock = SimClock()
    power, _ = NvmlPower.open(0, FakeNvml(clock, interval_s=0.1))
    power.clock = clock

    def sleep(s):
        clock.t += s

    power.sleep = sleep
    period = power.grid_period()
    assert period.period_s == pytest.approx(0.1, abs=1e-3) and 0.5 <= clock.t <= 0.72
    assert power.grid_period() is period  # once per process
    handed = []
    real = measure.grid_edges
    monkeypatch.setattr(measure, "grid_edges", lambda w, polls, p, sd=None: handed.append(p) or real(w, polls, p, sd))
    m = measure_energy(_workload(clock), lambda: None, power, 0.001, min_s=0.3, clock=clock)
    assert m.available and handed == [period.period_s]
    assert "update grid" in m.method and "whole number of periods" in m.method
    other = SimClock()
    other.t = clock.t
    measure_energy(_workload(other), lambda: None, power, 0.001, min_s=0.3, clock=other)
    assert handed == [period.period_s, None]
    # a counter that never updates at idle: no period, said why, tried once more, then left
    stuck = SimClock()
    quiet, _ = NvmlPower.open(0, FakeNvml(stuck, interval_s=10.0))
    quiet.clock, quiet.sleep = stuck, lambda s: setattr(stuck, "t", stuck.t + s)
    first = quiet.grid_period()
    assert first.period_s is None and "< 3" in first.reason
    second = quiet.grid_period()
    assert second is not first and quiet.grid_period() is second


def test_the_period_is_measured_once_per_gpu_and_process():
    """`run --recalibrate` opens NVML twice (the energy probe, then the run): the second opening
    reuses the period the first measured for the same GPU (its UUID) instead of ~0.5 s of idle
    polls again; another GPU, or a driver without UUIDs, measures its own."""
    from tf_cuda import nvml_power

    class UuidNvml(FakeNvml):
        uuid = "GPU-e7gate-test"

        def nvmlDeviceGetUUID(self, handle):
            return self.uuid

    clock = SimClock()

    def opened(nvml):
        power, _ = NvmlPower.open(0, nvml)
        power.clock, power.sleep = clock, lambda s: setattr(clock, "t", clock.t + s)
        return power

    nvml_power._PERIODS.pop(UuidNvml.uuid, None)
    first = opened(UuidNvml(clock, interval_s=0.1)).grid_period()
    assert first.period_s == pytest.approx(0.1, abs=1e-3)
    began = clock.t
    again = opened(UuidNvml(clock, interval_s=0.1)).grid_period()
    assert again is first and clock.t == began  # no polls
    other = UuidNvml(clock, interval_s=0.1)
    other.uuid = "GPU-another"
    assert opened(other).grid_period() is not first and clock.t > began
    began = clock.t
    assert opened(FakeNvml(clock, interval_s=0.1)).grid_period().period_s is not None and clock.t > began
    nvml_power._PERIODS.pop(UuidNvml.uuid, None)
    nvml_power._PERIODS.pop("GPU-another", None)


def test_a_period_not_found_right_after_a_load_is_measured_again_at_once():
    """An H200 session's GPU test (2026-12-01) measured the period right after 50 warm-up GEMMs, found
    the updates irregular, and its 1.5 s window kept the polled edges (the grid was retried only
    at the next window, and there was none). Now a failed measurement is repeated at once: the
    device is still idle and the load further behind."""

    class SettlingNvml(FakeNvml):
        # for the first 0.7 s the updates are published 0-25 ms late (a board still leaving a
        # load), then on a regular 100 ms grid
        def nvmlDeviceGetTotalEnergyConsumption(self, handle):
            t = self.clock()
            k = int(t // self.interval)
            late = (0.0, 0.012, 0.003, 0.025, 0.007, 0.018, 0.001)[k % 7] if t < 0.7 else 0.0
            if t < k * self.interval + late:
                k -= 1
            return int(round(k * self.interval * self.watts * 1000))

    clock = SimClock()
    power, _ = NvmlPower.open(0, SettlingNvml(clock, interval_s=0.1))
    power.clock, power.sleep = clock, lambda s: setattr(clock, "t", clock.t + s)
    period = power.grid_period()
    assert period.period_s == pytest.approx(0.1, abs=1e-3) and power._grid_tries == 2  # two measurements


class LaggingFieldNvml(FieldNvml):
    """A device whose power steps down (an overshoot after the load starts, then the cap), with
    the energy counter refreshed every 100 ms on whole updates of the true energy and the
    instantaneous field showing power `field_lag_s` late: the H200's field shows the energy a
    counter update publishes ~70 ms after it (docs/energy.md, "MEASURED: the energy window")."""

    def __init__(self, clock, field_lag_s=0.07, high_w=900.0, low_w=700.0, until_s=0.25, **kw):
        import threading

        super().__init__(clock, interval_s=0.1, lag_s=0.0, **kw)
        self.field_lag, self.high, self.low, self.until = field_lag_s, high_w, low_w, until_s
        self.polled = threading.Event()  # set by every field read: the workload waits for one a step

    def workload(self, seconds=0.005):
        """One execution: `seconds` of simulated time, then a field read by the sampler's thread
        at the new time (so the field is sampled every `seconds`, as on a device, whatever the
        host's speed; the wait's timeout only keeps a broken sampler from hanging the test)."""

        def fn():
            self.clock.t += seconds
            self.polled.clear()
            self.polled.wait(10.0)

        return fn

    def power_at(self, t):
        return self.high if t < self.until else self.low

    def energy_to(self, t):
        return self.high * min(t, self.until) + self.low * max(0.0, t - self.until)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        t = self.clock()
        return int(round(self.energy_to(round(t - (t % self.interval), 9)) * 1000))

    def nvmlDeviceGetFieldValues(self, handle, ids):
        out = super().nvmlDeviceGetFieldValues(handle, ids)
        for i, f in zip(ids, out):
            if i == FIELD_POWER_INSTANT:
                f.value.uiVal = int(self.power_at(self.clock() - self.field_lag) * 1000)
                self.polled.set()
        return out


def test_the_field_is_integrated_shifted_by_its_lag_behind_the_counter():
    """Over the counter's own edges a field that lags the counter counts part of the interval
    before the window (here the overshoot) and misses part of the last: the shifted integral
    agrees, the unshifted one (kept in the record) does not; the polls go on past the end edge
    for the lag, while the load runs on, and the executions counted are the window's alone."""
    from tf_cuda.nvml_power import FIELD_LAG_S

    clock = SimClock()
    nvml = LaggingFieldNvml(clock, field_lag_s=FIELD_LAG_S)
    power = NvmlPower(nvml, ("gpu", 0))  # (timed on the simulated clock by the window's own polls)
    assert power.field_lag_s == FIELD_LAG_S
    m = measure_energy(nvml.workload(), lambda: None, power, 0.005, min_s=0.3, clock=clock)
    assert m.available
    assert m.integration.field_lag_s == FIELD_LAG_S and "shifted 70 ms later" in m.integration.source
    assert abs(m.integration.counter_agreement) < 0.005
    assert abs(m.integration.unshifted_agreement) > 0.02  # what the edges alone gave
    assert m.seconds_per_execution == pytest.approx(0.005, rel=0.01)  # the tail's executions not counted
    assert clock.t >= m.window_s + FIELD_LAG_S  # the load ran on past the end edge for the lag
    # without the lag (a power reading that is not the field) the edges alone are integrated
    clock2 = SimClock()
    nvml2 = LaggingFieldNvml(clock2, field_lag_s=FIELD_LAG_S)
    plain = NvmlPower(nvml2, ("gpu", 0))
    plain.field_lag_s = None
    m2 = measure_energy(nvml2.workload(), lambda: None, plain, 0.005, min_s=0.3, clock=clock2)
    assert m2.integration.field_lag_s is None and m2.integration.unshifted_agreement is None
    assert m2.integration.counter_agreement == pytest.approx(m.integration.unshifted_agreement, abs=0.005)


def test_a_window_whose_polls_stop_at_its_end_keeps_the_unshifted_integral():
    """Where the field's samples do not reach past the end edge by the lag (a window cut short),
    the field is integrated over the edges themselves and the record gives no lag."""
    from tf_cuda.nvml_power import PowerSamples

    from tensorforge_measure.energy.measure import _integration
    from tensorforge_measure.energy.window import CounterWindow

    window = CounterWindow(ok=True, reason=None, joules=70.0, executions=10, start_s=1.0, end_s=1.1, ticks=(), chunks=1)
    short = PowerSamples(instant=tuple((1.0 + i * 0.005, 700.0) for i in range(21)), averaged=())
    kept = _integration(short, window, "field", lag_s=0.07)
    assert kept.field_lag_s is None and kept.unshifted_agreement is None
    assert kept.joules == pytest.approx(70.0) and kept.counter_agreement == pytest.approx(0.0)
    longer = PowerSamples(instant=tuple((1.0 + i * 0.005, 700.0 if i < 30 else 0.0) for i in range(40)), averaged=())
    shifted = _integration(longer, window, "field", lag_s=0.07)
    assert shifted.field_lag_s == 0.07 and shifted.unshifted_agreement == pytest.approx(0.0)
    # over [1.07, 1.17]: 700 W to 1.145, a ramp to 0 W by 1.15, then 0 W
    assert shifted.joules == pytest.approx(700.0 * 0.075 + 350.0 * 0.005)
