"""tf_cpu's Ops-side pieces in isolation: the host telemetry readers on /proc and /sys snapshots
(available and unavailable sources), the utilisation arithmetic, the per-iteration timing loop
and its flush order, and the resident high-water mark."""

import pytest
from host_snapshots import snapshot_root
from tf_cpu import peak_rss
from tf_cpu.cpu_timing import time_cpu
from tf_cpu.telemetry import CAVEAT, Readers, collect_window, headline, summarize

from tensorforge_measure.measure.timing import TimingPolicy

# -- telemetry -----------------------------------------------------------------------------------


def test_readers_on_xeon_snapshot():
    r = Readers((0, 1, 2, 3), root=str(snapshot_root("xeon-smt")))
    assert r.unavailable == {}
    assert r.sources["clock_mhz"] == "/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq"
    assert r.clock_mhz() == pytest.approx(3650.0)  # mean of 3500..3800
    assert r.load() == (0.52, 3)
    assert r.cpu_ticks() == (4 * (1000 + 250 + 22500 + 25 + 2) + 0 + 1 + 2 + 3, 4 * (22500 + 25), 6)
    assert r.energy_uj() == 123456789 and r.energy_range_uj() == 262143328850
    assert r.sources["energy_j"].startswith("/sys/class/powercap/intel-rapl:0/energy_uj")


def test_readers_on_recorded_vm_snapshot_say_what_is_missing():
    r = Readers((0, 1), root=str(snapshot_root("epyc-2core-vm")))
    assert "constant nominal clock" in r.sources["clock_mhz"]
    assert r.clock_mhz() == pytest.approx(2596.146)
    assert r.unavailable == {"energy_j": "/sys/class/powercap/intel-rapl:0/energy_uj: absent"}
    assert r.energy_uj() is None
    assert r.cpu_ticks()[0] > 0


def test_nothing_readable_is_unavailable_with_reasons(tmp_path):
    window = collect_window(lambda: None, (0,), 0.01, root=str(tmp_path))
    assert window["available"] is False and window["samples"] == [] and window["summary"] is None
    reason = window["unavailable_reason"]
    for key in ("clock_mhz", "energy_j", "load", "utilisation"):
        assert f"{key}: " in reason
    assert window["caveat"] == CAVEAT and "never decides a verdict" in CAVEAT


def test_window_on_snapshot_runs_the_workload_and_samples():
    calls = []
    window = collect_window(
        lambda: calls.append(1), (0, 1, 2, 3), 0.05, sample_period_s=0.01, root=str(snapshot_root("xeon-smt"))
    )
    assert window["available"] is True and window["unavailable_reason"] is None
    assert calls and len(window["samples"]) >= 2
    assert window["summary"]["clock_mhz_median"] == pytest.approx(3650.0)
    # a static snapshot: counters do not move, so utilisation has no span to report
    assert window["summary"]["busy_pct"] is None
    assert window["energy_j"] == 0.0
    assert window["headline"].startswith("clock 3650 MHz median, busy -, other processes -")
    assert window["source"] == "host-cpu" and window["cpus"] == [0, 1, 2, 3]


def _sample(t, total, idle, steal, own_s):
    return {
        "t_s": t,
        "clock_mhz": 2600.0,
        "load1": 1.5,
        "runnable": 2,
        "ticks": (total, idle, steal),
        "own_cpu_s": own_s,
    }


def test_utilisation_arithmetic():
    # 2 CPUs x 1 s at 100 ticks/s = 200 ticks: 150 busy (of which 10 steal... counted as not
    # idle), this process used 1.0 s = 100 ticks, so others had 50 - i.e. 25% of the span
    samples = [_sample(0.0, 1000, 500, 0, 3.0), _sample(1.0, 1200, 550, 10, 4.0)]
    s = summarize(samples, tick_hz=100.0)
    assert s["busy_pct"] == pytest.approx(75.0)
    assert s["steal_pct"] == pytest.approx(5.0)
    assert s["other_processes_pct"] == pytest.approx(25.0)
    assert (s["clock_mhz_min"], s["clock_mhz_median"], s["clock_mhz_max"]) == (2600.0, 2600.0, 2600.0)
    assert s["load1_max"] == 1.5 and s["n_samples"] == 2
    text = headline(s, energy_j=20.0, duration_s=2.0, clock_source="/sys/...scaling_cur_freq")
    assert text == "clock 2600 MHz median, busy 75%, other processes 25%, steal 5%, load 1.5, 10.0 W package"


def test_utilisation_never_negative_and_missing_values_skipped():
    samples = [_sample(0.0, 1000, 500, 0, 0.0), _sample(1.0, 1200, 600, 0, 5.0)]
    assert summarize(samples, tick_hz=100.0)["other_processes_pct"] == 0.0
    samples = [dict(_sample(0.0, 0, 0, 0, 0.0), ticks=None, clock_mhz=None, load1=None)]
    s = summarize(samples, tick_hz=100.0)
    assert s["clock_mhz_median"] is None and s["busy_pct"] is None and s["load1_max"] is None


# -- timing --------------------------------------------------------------------------------------


def test_time_cpu_flushes_before_every_timed_call_not_during_warmup():
    events = []
    policy = TimingPolicy(warmup_iters=2, min_iters=5, max_iters=50, target_rel_iqr=10.0, budget_s=5.0)
    timed = time_cpu(lambda: events.append("fn"), policy, flush=lambda: events.append("flush"))
    assert timed.stop_reason == "stable" and timed.stats.n == 5 and len(timed.samples_s) == 5
    assert events == ["fn", "fn"] + ["flush", "fn"] * 5
    assert all(s >= 0 for s in timed.samples_s) and timed.warmup_iters == 2


def test_time_cpu_stops_on_budget_and_max_iters():
    import time

    policy = TimingPolicy(warmup_iters=0, min_iters=1000, max_iters=2000, target_rel_iqr=0.0, budget_s=0.05)
    timed = time_cpu(lambda: time.sleep(0.005), policy)
    # Each sample takes at least 5 ms and the clock runs on between samples, so the 50 ms budget
    # is passed by the 11th sample at the latest however busy the machine is (min_iters is 1000).
    assert timed.stop_reason == "budget" and 1 <= timed.stats.n <= 11
    assert min(timed.samples_s) >= 0.005  # wall clock around the call, sleep included
    policy = TimingPolicy(warmup_iters=0, min_iters=3, max_iters=3, target_rel_iqr=0.0, budget_s=60)
    assert time_cpu(lambda: sum(range(1000)), policy).stop_reason in ("max_iters", "stable")


# -- peak resident memory ------------------------------------------------------------------------


def test_peak_rss_from_files(tmp_path):
    clear, status = tmp_path / "clear_refs", tmp_path / "status"
    status.write_text("Name:\tpython\nVmHWM:\t  300000 kB\nVmRSS:\t  100000 kB\n")
    base, why = peak_rss.start(clear, status)
    assert why is None and base.rss_bytes == 100000 * 1024 and clear.read_text() == "5"
    peak, method = peak_rss.peak_since(base, status)
    assert peak == 200000 * 1024
    assert method == peak_rss.METHOD + ("" if base.trimmed else peak_rss.NO_TRIM)
    untrimmed = peak_rss.Baseline(100000 * 1024, trimmed=False)
    assert peak_rss.peak_since(untrimmed, status)[1].endswith("can hide part of the peak")


def test_peak_rss_unavailable_says_why(tmp_path):
    base, why = peak_rss.start(tmp_path / "missing" / "clear_refs", tmp_path / "status")
    assert base is None and why.startswith("unavailable: cannot reset the resident high-water mark")
    assert peak_rss.peak_since(None) == (None, "unavailable")
    (tmp_path / "status").write_text("Name:\tx\n")
    assert peak_rss.peak_since(peak_rss.Baseline(1, True), tmp_path / "status")[1].startswith("unavailable: no VmHWM")


@pytest.mark.skipif(not peak_rss.CLEAR_REFS.exists(), reason="needs Linux /proc/self/clear_refs")
def test_peak_rss_sees_a_real_allocation():
    base, why = peak_rss.start()
    if why is not None:
        pytest.skip(why)
    block = bytearray(64 << 20)  # zero-filled by calloc: touch every page explicitly
    block[::4096] = b"\x01" * len(block[::4096])
    peak, _ = peak_rss.peak_since(base)
    del block
    assert peak >= 60 << 20


def test_malformed_sources_are_unavailable_not_errors(tmp_path):
    freq = tmp_path / "sys" / "devices" / "system" / "cpu" / "cpu0" / "cpufreq"
    freq.mkdir(parents=True)
    (freq / "scaling_cur_freq").write_text("<unknown>\n")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text("processor : zero\ncpu MHz : fast\n")
    (tmp_path / "proc" / "stat").write_text("cpu0 1 2 x\n")
    r = Readers((0,), root=str(tmp_path))
    assert "clock_mhz" in r.unavailable and r.clock_mhz() is None
    assert r.cpu_ticks() is None
    window = collect_window(lambda: None, (0,), 0.01, root=str(tmp_path))
    assert window["available"] is True and window["summary"]["busy_pct"] is None
