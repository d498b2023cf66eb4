"""Calibration judges its own evidence: each probe by the spread of the samples behind its figures
and the CPU share other work took while it ran (calibrate/probe_evidence.py). A contended or noisy
probe runs again, a bounded number of times; a calibration whose probes never had sufficient
evidence is stored marked insufficient, and `run` says so when it reuses it.

The busy machine is simulated, never needed: a fake session's contention meter reports the
shares each attempt saw, and a fake probe reports its spread, so every case is deterministic and
in-process (the real reading, /proc/stat around the probe, is tf_cpu.telemetry.start_meter)."""

import json
from types import SimpleNamespace

import pytest

from tensorforge_measure.api import CalibrationProbe, DeviceInfo, ProbeResult, Session
from tensorforge_measure.calibrate import probe_evidence
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.run.calibrate import Calibrating

QUIET = {"other_processes_pct": 2.0, "steal_pct": 0.0}
BUSY = {"other_processes_pct": 68.0, "steal_pct": 0.0}  # the machine: 2 cores saturated
BUSIER = {"other_processes_pct": 90.0, "steal_pct": 1.0}


class BusySession(Session):
    """A session whose contention meter reports, attempt after attempt, the given shares."""

    def __init__(self, shares, fingerprint="cpu-busy"):
        self.info = DeviceInfo(backend="fake-cpu", name="Fake CPU", fingerprint=fingerprint, details={})
        self.shares = list(shares)
        self.meters = 0

    def contention_meter(self):
        shares = self.shares[min(self.meters, len(self.shares) - 1)]
        self.meters += 1
        return lambda: shares


class RateProbe(CalibrationProbe):
    """Reports the fp32 rate and spread of each attempt in turn (the busy attempts slow and noisy)."""

    backend = "fake-cpu"
    regime = "single"

    def __init__(self, rates, spreads, name="fake-matmul", repeatable=True):
        self.name, self.rates, self.spreads, self.repeatable = name, list(rates), list(spreads), repeatable
        self.runs = 0

    def run(self, session):
        i = min(self.runs, len(self.rates) - 1)
        self.runs += 1
        return ProbeResult(
            name=self.name,
            method="fake",
            regime="single",
            compute={"fp32": self.rates[i], "bf16": 2 * self.rates[i]},
            dram_bytes_per_s=20e9,
            spread=self.spreads[i],
        )


@pytest.fixture(autouse=True)
def _home(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))


def test_a_contended_probe_runs_again_until_its_evidence_is_sufficient():
    session = BusySession([BUSY, BUSY, QUIET])
    probe = RateProbe([16.8e9, 20e9, 205e9], [0.40, 0.35, 0.02])
    progress: list[str] = []
    cal = calibration.run_probes(session, [probe], progress.append)
    assert probe.runs == 3
    record = cal.probes["fake-matmul"]
    assert record.evidence is not None and record.evidence.verdict == "sufficient"
    assert record.evidence.attempts == 3
    # the quiet attempt's rate is the one kept, not the contended ones'
    assert record.compute["fp32"] == 205e9
    assert cal.evidence is not None and cal.evidence.verdict == "sufficient" and cal.evidence.reasons == ()
    again = [line for line in progress if "again" in line]
    assert len(again) == 2 and "contended: other processes 68%" in again[0]


def test_a_probe_busy_every_time_is_stored_marked_insufficient():
    session = BusySession([BUSY, BUSIER, BUSY])
    probe = RateProbe([16.8e9, 12e9, 14e9], [0.40, 0.50, 0.30])
    cal = calibration.run_probes(session, [probe])
    assert probe.runs == probe_evidence.MAX_ATTEMPTS  # bounded
    record = cal.probes["fake-matmul"]
    assert record.evidence.verdict == "insufficient" and record.evidence.attempts == probe_evidence.MAX_ATTEMPTS
    assert record.compute["fp32"] == 16.8e9  # the least contended attempt (the first: 68% < 91%)
    assert any(r.startswith("spread too wide: relative IQR 40.0% > 10%") for r in record.evidence.reasons)
    assert cal.evidence.verdict == "insufficient"
    (reason,) = cal.evidence.reasons
    assert reason.startswith("probe fake-matmul: ") and "contended: other processes 68%" in reason
    assert reason.endswith(f"({probe_evidence.MAX_ATTEMPTS} attempts)")
    # stored with its evidence, and read back so
    path = calibration.save(cal)
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["evidence"]["verdict"] == "insufficient"
    assert stored["probes"]["fake-matmul"]["evidence"]["attempts"] == probe_evidence.MAX_ATTEMPTS
    assert calibration.load(cal.fingerprint).evidence == cal.evidence


def test_a_lucky_sample_among_noisy_ones_is_not_trusted_on_a_quiet_machine_either():
    """The issue's bf16 rate 35x the fp32 one came from one lucky sample: the spread of the
    samples behind it says so, whatever the contention reading."""
    probe = RateProbe([205e9], [11.7])
    cal = calibration.run_probes(BusySession([QUIET]), [probe])
    assert probe.runs == probe_evidence.MAX_ATTEMPTS
    assert cal.evidence.verdict == "insufficient"
    assert "spread too wide: relative IQR 1170.0% > 10%" in cal.evidence.reasons[0]


def test_a_long_sweep_is_judged_but_never_repeated():
    probe = RateProbe([16.8e9], [0.4], name="fake-sweep", repeatable=False)
    cal = calibration.run_probes(BusySession([BUSY]), [probe])
    assert probe.runs == 1
    assert cal.probes["fake-sweep"].evidence.attempts == 1
    assert cal.evidence.verdict == "insufficient"


def test_nothing_to_judge_leaves_the_calibration_as_before():
    """A session without a contention meter and a probe that reports no spread (the GPU's
    probes): no evidence fields, so such calibrations read and write as they always did."""

    class Quiet(BusySession):
        contention_meter = None

    probe = RateProbe([50e12], [None])
    cal = calibration.run_probes(Quiet([QUIET]), [probe])
    assert probe.runs == 1
    assert cal.evidence is None and cal.probes["fake-matmul"].evidence is None
    stored = json.loads(calibration.save(cal).read_text(encoding="utf-8"))
    assert "evidence" not in stored and "evidence" not in stored["probes"]["fake-matmul"]


def test_a_failing_meter_or_repeat_loses_nothing():
    class Broken(BusySession):
        def contention_meter(self):
            raise OSError("no /proc here")

    cal = calibration.run_probes(Broken([QUIET]), [RateProbe([205e9], [0.01])])
    checks = {c.name: c for c in cal.probes["fake-matmul"].evidence.checks}
    assert checks["contention"].ok is None and checks["spread"].ok is True

    class FailsOnRepeat(RateProbe):
        def run(self, session):
            if self.runs:
                raise RuntimeError("out of memory")
            return super().run(session)

    probe = FailsOnRepeat([16.8e9], [0.4])
    cal = calibration.run_probes(BusySession([BUSY]), [probe])
    assert cal.probes["fake-matmul"].compute["fp32"] == 16.8e9 and cal.failed_probes == {}
    assert cal.evidence.verdict == "insufficient"


def _runner(recalibrate=False, probes=()):
    said: list[str] = []
    runner = SimpleNamespace(
        opts=SimpleNamespace(recalibrate=recalibrate, backend="fake-cpu", cooldown_s=0),
        say=said.append,
        progress=None,
        ops=SimpleNamespace(for_backend=lambda kind, backend: list(probes)),
        _start_fit=lambda session: None,
        cool_until=None,
    )
    return runner, said


def test_run_says_in_one_line_that_it_reuses_a_weak_calibration():
    session = BusySession([BUSY])
    weak = calibration.run_probes(session, [RateProbe([16.8e9], [0.4])])
    calibration.save(weak)
    runner, said = _runner()
    cal = Calibrating._calibrate(runner, session)
    assert cal == weak and runner.calibrated.reused is True
    (line,) = [line for line in said if line.startswith("reusing calibration")]
    assert "its evidence is insufficient (probe fake-matmul: " in line
    assert line.endswith("--recalibrate measures it again")
    assert runner.calibrated.evidence.verdict == "insufficient"  # and the capture carries it


def test_run_says_so_when_its_own_calibration_is_weak_and_not_when_it_is_sound():
    runner, said = _runner(probes=[RateProbe([16.8e9], [0.4])])
    Calibrating._calibrate(runner, BusySession([BUSY], fingerprint="cpu-fresh"))
    (line,) = [line for line in said if line.startswith("calibrated: ")]
    assert "; evidence insufficient, stored so (probe fake-matmul: " in line
    runner, said = _runner(probes=[RateProbe([205e9], [0.01])])
    Calibrating._calibrate(runner, BusySession([QUIET], fingerprint="cpu-quiet"))
    assert not [line for line in said if "insufficient" in line]
    runner, said = _runner()
    Calibrating._calibrate(runner, BusySession([QUIET], fingerprint="cpu-quiet"))
    assert [line for line in said if line.startswith("reusing calibration")] and not [
        line for line in said if "insufficient" in line
    ]


def test_the_host_cpu_meter_reads_other_processes_from_proc_stat(tmp_path, monkeypatch):
    """tf_cpu's meter: two readings of /proc/stat (a snapshot folder here) around the work,
    this process's own CPU time taken out."""
    from tf_cpu import telemetry

    stat = tmp_path / "proc" / "stat"
    stat.parent.mkdir()
    stat.write_text("cpu0 100 0 0 900 0 0 0 0\ncpu1 100 0 0 900 0 0 0 0\n", encoding="ascii")
    monkeypatch.setattr(telemetry, "_own_cpu_s", lambda: 0.0)  # nothing of ours ran
    stop = telemetry.start_meter([0, 1], root=str(tmp_path))
    stat.write_text("cpu0 190 0 0 910 0 0 0 0\ncpu1 190 0 0 910 0 0 0 0\n", encoding="ascii")
    shares = stop()
    assert shares["other_processes_pct"] == pytest.approx(90.0) and shares["steal_pct"] == 0.0
    assert telemetry.start_meter([0, 1], root=str(tmp_path / "nowhere")) is None


def test_calibrate_prints_the_verdict_and_why(capsys):
    from tensorforge_measure.commands.calibrate import _print_calibration

    _print_calibration(calibration.run_probes(BusySession([BUSY]), [RateProbe([16.8e9], [0.4])]))
    out = " ".join(capsys.readouterr().out.split())
    assert "evidence: insufficient, stored so probe fake-matmul: spread too wide: relative IQR 40.0% > 10%" in out
    _print_calibration(calibration.run_probes(BusySession([QUIET]), [RateProbe([205e9], [0.01])]))
    out = capsys.readouterr().out
    assert "evidence: sufficient" in out and "stored so" not in out
