"""NVML telemetry without a GPU: recorded masks and samples, and a fake pynvml module."""

import json
import sys
import threading
import types

import pytest
from tf_cuda import telemetry as tn
from tf_cuda.telemetry import (
    CAVEAT,
    CLOCK_EVENT_REASONS,
    TelemetrySample,
    collect_window,
    decode_reasons,
    summarize,
    telemetry_to_dict,
)

# ---------------------------------------------------------------- decoding


def test_reason_table_matches_pynvml_bits():
    table = dict(CLOCK_EVENT_REASONS)
    assert table == {
        0x1: "GpuIdle",
        0x2: "ApplicationsClocksSetting",
        0x4: "SwPowerCap",
        0x8: "HwSlowdown",
        0x10: "SyncBoost",
        0x20: "SwThermalSlowdown",
        0x40: "HwThermalSlowdown",
        0x80: "HwPowerBrakeSlowdown",
        0x100: "DisplayClockSetting",
        0x200: "BoardLimit",
        0x400: "Reliability",
    }
    bits = [b for b, _ in CLOCK_EVENT_REASONS]
    assert bits == sorted(bits)


def test_reason_table_matches_installed_pynvml_if_present():
    pynvml = pytest.importorskip("pynvml")
    for bit, name in CLOCK_EVENT_REASONS:
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            value = getattr(pynvml, prefix + name, None)
            if value is not None:
                assert value == bit, (prefix + name, value, bit)


@pytest.mark.parametrize(
    "mask, names",
    [
        (0x0, ()),
        (0x4, ("SwPowerCap",)),
        (0x1, ("GpuIdle",)),
        (0x4 | 0x20, ("SwPowerCap", "SwThermalSlowdown")),
        (0x100 | 0x8 | 0x1, ("GpuIdle", "HwSlowdown", "DisplayClockSetting")),
        (0x800, ("Unknown(0x800)",)),
        (0x10004, ("SwPowerCap", "Unknown(0x10000)")),
        (0x80000004 | 0x800, ("SwPowerCap", "Unknown(0x800)", "Unknown(0x80000000)")),
    ],
)
def test_decode_reasons(mask, names):
    assert decode_reasons(mask) == names


# ---------------------------------------------------------------- summarize


def _s(t, sm, mem, pw, temp, gu, mu, mask):
    return TelemetrySample(
        t_s=t,
        sm_clock_mhz=sm,
        mem_clock_mhz=mem,
        power_w=pw,
        temperature_c=temp,
        gpu_util_pct=gu,
        mem_util_pct=mu,
        reasons_mask=mask,
        reasons=None if mask is None else decode_reasons(mask),
    )


RECORDED = (
    _s(0.00, 1980, 2619, 450.0, 60, 100, 40, 0x0),
    _s(0.05, 1755, 2619, 699.5, 64, 100, 42, 0x4),
    _s(0.10, 1410, 2619, 700.0, 70, 98, None, 0x4 | 0x20),
    _s(0.15, None, 2619, None, 71, None, 46, None),  # every optional query failed except two
    _s(0.20, 1600, None, 690.0, None, 96, 44, 0x4 | 0x800),
)


def test_summarize_recorded_samples():
    s = summarize(RECORDED)
    assert s.n_samples == 5
    # sm clocks present: 1980, 1755, 1410, 1600 -> median of the middle two
    assert (s.sm_clock_mhz_min, s.sm_clock_mhz_median, s.sm_clock_mhz_max) == (1410.0, 1677.5, 1980.0)
    assert (s.mem_clock_mhz_min, s.mem_clock_mhz_median, s.mem_clock_mhz_max) == (2619.0, 2619.0, 2619.0)
    assert (s.power_w_min, s.power_w_median, s.power_w_max) == (450.0, 694.75, 700.0)
    assert (s.temperature_c_min, s.temperature_c_median, s.temperature_c_max) == (60.0, 67.0, 71.0)
    assert s.gpu_util_pct_mean == pytest.approx((100 + 100 + 98 + 96) / 4)
    assert s.mem_util_pct_mean == pytest.approx((40 + 42 + 46 + 44) / 4)
    # Denominator is the 4 samples whose mask was read, not 5; order is by bit.
    assert s.reason_fractions == (
        ("SwPowerCap", 0.75),
        ("SwThermalSlowdown", 0.25),
        ("Unknown(0x800)", 0.25),
    )


def test_summarize_all_none_and_empty():
    s = summarize([_s(0.0, None, None, None, None, None, None, None)])
    assert s.n_samples == 1
    assert s.sm_clock_mhz_median is None and s.power_w_max is None and s.temperature_c_min is None
    assert s.gpu_util_pct_mean is None and s.mem_util_pct_mean is None
    assert s.reason_fractions == ()
    e = summarize([])
    assert e.n_samples == 0 and e.reason_fractions == () and e.mem_clock_mhz_min is None


# ---------------------------------------------------------------- fake NVML


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class FakeNVML:
    """Implements the pynvml functions collect_window uses; memory clock is 'not supported'."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    def __init__(self, *, fail_init=False, fail_handle=False, event_fn=True):
        self.fail_init = fail_init
        self.fail_handle = fail_handle
        self.calls = []
        self.shutdowns = 0
        self._energy_reads = 0
        self._lock = threading.Lock()
        if not event_fn:
            # Old pynvml: only the deprecated Throttle name exists.
            self.nvmlDeviceGetCurrentClocksEventReasons = None

    def nvmlInit(self):
        if self.fail_init:
            raise NVMLError("Driver Not Loaded")

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, index):
        if self.fail_handle:
            raise NVMLError("Invalid Argument")
        return ("handle", index)

    def nvmlDeviceGetName(self, handle):
        return b"Fake H200"  # bytes, as some pynvml versions return

    def nvmlSystemGetDriverVersion(self):
        return "570.86.15"

    def nvmlSystemGetNVMLVersion(self):
        return b"12.570.86.15"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        with self._lock:
            self._energy_reads += 1
            # first read 1_000_000 mJ, second 1_012_500 mJ -> 12.5 J
            return 1_000_000 if self._energy_reads == 1 else 1_012_500

    def nvmlDeviceGetClockInfo(self, handle, clock_type):
        if clock_type == self.NVML_CLOCK_MEM:
            raise NVMLError_NotSupported("Not Supported")
        assert clock_type == self.NVML_CLOCK_SM
        return 1755

    def nvmlDeviceGetPowerUsage(self, handle):
        return 650_250  # mW

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == 0  # NVML_TEMPERATURE_GPU
        return 66

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=97, memory=41)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        self.calls.append("event")
        return 0x4 | 0x20

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        self.calls.append("throttle")
        return 0x4


def test_collect_window_with_fake_nvml():
    fake = FakeNVML()
    runs, syncs = [], []
    w = collect_window(
        lambda: runs.append(1),
        synchronize=lambda: syncs.append(1),
        device_index=3,
        duration_s=0.2,
        sample_period_s=0.01,
        nvml=fake,
    )
    assert w.available is True and w.unavailable_reason is None
    assert (w.device_name, w.device_index) == ("Fake H200", 3)
    assert (w.driver_version, w.nvml_version) == ("570.86.15", "12.570.86.15")
    assert w.energy_j == pytest.approx(12.5)
    assert w.sample_period_s == 0.01
    assert 0.2 <= w.duration_s < 2.0
    assert len(runs) >= 1 and len(syncs) == len(runs)  # synchronize after every run
    assert fake.shutdowns == 1
    assert w.caveat == CAVEAT

    # ~20 ticks in 0.2 s; generous bounds for a loaded CI machine.
    assert 3 <= len(w.samples) <= 40
    times = [s.t_s for s in w.samples]
    assert times == sorted(times) and times[0] < 0.05
    for s in w.samples:
        assert s.sm_clock_mhz == 1755
        assert s.mem_clock_mhz is None  # NotSupported became None, not a crash
        assert s.power_w == pytest.approx(650.25)
        assert s.temperature_c == 66
        assert (s.gpu_util_pct, s.mem_util_pct) == (97, 41)
        assert s.reasons_mask == 0x24
        assert s.reasons == ("SwPowerCap", "SwThermalSlowdown")
    assert "throttle" not in fake.calls  # the current Events name is preferred

    sm = w.summary
    assert sm.n_samples == len(w.samples)
    assert (sm.sm_clock_mhz_min, sm.sm_clock_mhz_median, sm.sm_clock_mhz_max) == (1755.0,) * 3
    assert sm.mem_clock_mhz_median is None
    assert sm.power_w_median == pytest.approx(650.25)
    assert sm.reason_fractions == (("SwPowerCap", 1.0), ("SwThermalSlowdown", 1.0))

    d = telemetry_to_dict(w)
    round_trip = json.loads(json.dumps(d))
    assert round_trip["energy_j"] == pytest.approx(12.5)
    assert round_trip["samples"][0]["reasons"] == ["SwPowerCap", "SwThermalSlowdown"]
    assert round_trip["summary"]["reason_fractions"] == [["SwPowerCap", 1.0], ["SwThermalSlowdown", 1.0]]


def test_collect_window_falls_back_to_throttle_reasons():
    fake = FakeNVML(event_fn=False)
    w = collect_window(lambda: None, duration_s=0.03, sample_period_s=0.01, nvml=fake)
    assert w.available
    assert w.samples and all(s.reasons == ("SwPowerCap",) for s in w.samples)
    assert set(fake.calls) == {"throttle"}


def test_collect_window_runs_at_least_once_and_propagates_workload_errors():
    fake = FakeNVML()
    runs = []
    w = collect_window(lambda: runs.append(1), duration_s=0.0, nvml=fake)
    assert len(runs) == 1 and len(w.samples) >= 1

    def boom():
        raise RuntimeError("kernel failed")

    fake2 = FakeNVML()
    with pytest.raises(RuntimeError, match="kernel failed"):
        collect_window(boom, duration_s=0.1, nvml=fake2)
    assert fake2.shutdowns == 1  # NVML is still shut down when the workload fails


def test_collect_window_rejects_nonpositive_period():
    with pytest.raises(ValueError, match="sample_period_s"):
        collect_window(lambda: None, sample_period_s=0.0, nvml=FakeNVML())


# ---------------------------------------------------------------- unavailable paths


def _assert_unavailable(w, reason_start):
    assert w.available is False
    assert w.unavailable_reason.startswith(reason_start)
    assert w.samples == () and w.summary is None and w.energy_j is None
    assert json.loads(json.dumps(telemetry_to_dict(w)))["available"] is False


def test_unavailable_when_nvml_init_fails():
    ran = []
    w = collect_window(lambda: ran.append(1), nvml=FakeNVML(fail_init=True))
    _assert_unavailable(w, "nvmlInit failed: NVMLError: Driver Not Loaded")
    assert ran == []  # no workload run without telemetry to take


def test_unavailable_when_device_cannot_be_opened():
    fake = FakeNVML(fail_handle=True)
    w = collect_window(lambda: None, device_index=7, nvml=fake)
    _assert_unavailable(w, "NVML could not open device 7")
    assert w.device_index == 7
    assert fake.shutdowns == 1


def test_unavailable_when_pynvml_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    w = collect_window(lambda: None, duration_s=0.01)
    _assert_unavailable(w, "pynvml not installed")


def test_caveat_text():
    assert tn.CAVEAT == (
        "NVML telemetry is diagnostic context from a separate execution window; "
        "it does not prove a bottleneck and never decides a verdict."
    )
