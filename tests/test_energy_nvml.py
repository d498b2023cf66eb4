"""The energy window through NVML's functions and RAPL's files, on fakes (unit logic only: every
figure in the docs comes from a real device): a fake NVML whose energy counter and instantaneous
power follow a simulated clock that the workload advances, so the window's joules per execution,
its power integration and the counter's update interval are known exactly; a fake powercap tree
for RAPL (readable, wrapped, absent)."""

import types

import pytest

from tensorforge_ops.energy.measure import measure_energy, take_window
from tensorforge_ops.energy.nvml_power import FIELD_POWER_INSTANT, NvmlPower
from tensorforge_ops.energy.rapl import Rapl, RaplCounter


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

    window = take_window(lambda: (fn(), 1)[1], power, min_s=0.05, rapl=rapl, clock=clock)
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
