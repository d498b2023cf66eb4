"""The evidence-quality verdict of one measured workload (policy/evidence_quality.py): each check
at its limit and just past it, telemetry that withholds confidence, telemetry that is missing."""

import pytest

from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow
from tensorforge_measure.compare.evidence_quality import (
    INSUFFICIENT,
    MAX_CONTENTION_PCT,
    MAX_SPREAD,
    MIN_SAMPLES,
    SUFFICIENT,
    assess,
)

pytestmark = pytest.mark.timeout(120)


def steady(n=25, value=1e-3):
    return [value] * n


def spread(rel_iqr, n=41):
    """n = 4k+1 samples whose relative IQR is rel_iqr: p50 = 10, quartiles (at exact ranks) at
    10 -+ 5 rel_iqr, so the limit itself is representable (1.0 / 10 == 0.1)."""
    half = rel_iqr * 10 / 2
    quarter = (n - 1) // 4
    return [10 - half] * (quarter + 1) + [10.0] * (n - 2 * quarter - 2) + [10 + half] * (quarter + 1)


def window(other=None, steal=None, fractions=None, available=True):
    summary = {"other_processes_pct": other, "steal_pct": steal}
    return TelemetryWindow(
        available=available,
        reason=None if available else "no device",
        data={"summary": summary},
        clock_event_fractions=fractions,
    )


def reasons(quality):
    return list(quality.reasons)


def test_steady_samples_without_telemetry_are_sufficient_and_say_what_was_not_checked():
    q = assess(steady())
    assert q.verdict == SUFFICIENT and q.sufficient and q.reasons == ()
    by_name = {c.name: c for c in q.checks}
    assert by_name["contention"].ok is None and "not checked" in by_name["contention"].detail
    assert by_name["throttling"].ok is None


@pytest.mark.parametrize("n, ok", [(MIN_SAMPLES - 1, False), (MIN_SAMPLES, True), (2, False)])
def test_sample_count_at_the_limit(n, ok):
    q = assess(steady(n))
    assert (q.verdict == SUFFICIENT) is ok
    if not ok:
        assert reasons(q) == [f"too few samples: {n} < {MIN_SAMPLES}"]


@pytest.mark.parametrize("rel_iqr, ok", [(MAX_SPREAD, True), (MAX_SPREAD * 1.01, False), (0.5, False)])
def test_spread_at_the_limit(rel_iqr, ok):
    q = assess(spread(rel_iqr))
    assert (q.verdict == SUFFICIENT) is ok, q
    if not ok:
        assert reasons(q)[0].startswith("spread too wide: relative IQR")


def test_all_zero_samples_with_spread_are_infinitely_wide():
    q = assess([0.0] * 30 + [1e-6] * 10)
    assert q.verdict == INSUFFICIENT and "inf%" in reasons(q)[0]


@pytest.mark.parametrize(
    "other, steal, ok",
    [
        (MAX_CONTENTION_PCT, None, True),
        (MAX_CONTENTION_PCT + 0.5, None, False),
        (6.0, 5.0, False),
        (None, 11.0, False),
        (39.0, 0.0, False),
        (0.0, 0.0, True),
    ],
)
def test_contention_counts_other_processes_and_stolen_time(other, steal, ok):
    q = assess(steady(), window(other=other, steal=steal))
    assert (q.verdict == SUFFICIENT) is ok
    if not ok:
        assert reasons(q)[0].startswith("contended: ")


def test_the_busy_host_cpu_run_of_the_issue_is_insufficient():
    # 6 samples, 39% other processes: the run that printed "within bound"
    q = assess([0.09, 0.093, 0.11, 0.1, 0.12, 0.095], window(other=39.07, steal=0.0))
    assert q.verdict == INSUFFICIENT
    assert reasons(q)[0] == f"too few samples: 6 < {MIN_SAMPLES}"
    assert reasons(q)[-1].startswith("contended: other processes 39%")


@pytest.mark.parametrize(
    "fractions, ok",
    [
        ((), True),
        ((("SwPowerCap", 0.9),), True),
        ((("HwSlowdown", 0.0),), True),
        ((("HwSlowdown", 0.05),), False),
        ((("SwThermalSlowdown", 0.5), ("HwSlowdown", 0.1)), False),
    ],
)
def test_throttling_is_a_hardware_or_thermal_slowdown_not_the_power_cap(fractions, ok):
    q = assess(steady(), window(fractions=fractions))
    assert (q.verdict == SUFFICIENT) is ok
    if not ok:
        assert reasons(q)[0].startswith("throttled: ")
        assert "SwThermalSlowdown in 50%" in reasons(q)[0] or "HwSlowdown in 5%" in reasons(q)[0]


def test_an_unavailable_window_checks_nothing_and_blames_nothing():
    q = assess(steady(), window(other=90.0, fractions=(("HwSlowdown", 1.0),), available=False))
    assert q.verdict == SUFFICIENT
    assert all(c.ok is None for c in q.checks if c.name in ("contention", "throttling"))


def test_every_failed_check_is_a_reason_in_order():
    q = assess(spread(0.5, n=9), window(other=50.0, fractions=(("HwSlowdown", 0.2),)))
    assert [r.split(":")[0] for r in q.reasons] == ["too few samples", "spread too wide", "contended", "throttled"]


def test_every_check_is_reported_word_for_word():
    from tensorforge_measure.capture.sections.comparison import QualityCheck as Q

    q = assess(
        spread(0.5, n=9),
        window(
            other=50.0, steal=2.0, fractions=(("HwSlowdown", 0.9), ("SwThermalSlowdown", 0.4), ("SwPowerCap", 0.95))
        ),
    )
    assert q.checks == (
        Q(name="samples", ok=False, detail="too few samples: 9 < 10"),
        Q(name="spread", ok=False, detail="spread too wide: relative IQR 50.0% > 10%"),
        Q(
            name="contention",
            ok=False,
            detail="contended: other processes 50%, stolen 2% of the CPUs during its telemetry window (> 10%)",
        ),
        Q(name="throttling", ok=False, detail="throttled: HwSlowdown in 90% of its telemetry samples"),
    )
    assert q.reasons == tuple(c.detail for c in q.checks) and q.verdict == INSUFFICIENT
    good = assess(spread(0.1, n=41), window(other=4.0, steal=6.0, fractions=()))
    assert good.checks == (
        Q(name="samples", ok=True, detail="41 samples (>= 10)"),
        Q(name="spread", ok=True, detail="relative IQR 10.0% (<= 10%)"),
        Q(name="contention", ok=True, detail="other processes 4%, stolen 6% (<= 10%)"),
        Q(name="throttling", ok=True, detail="no hardware or thermal slowdown reported"),
    )
    assert good.reasons == () and good.verdict == SUFFICIENT and good.sufficient
    only_other = assess(steady(), window(other=12.0))
    assert only_other.checks[2] == Q(
        name="contention",
        ok=False,
        detail="contended: other processes 12% of the CPUs during its telemetry window (> 10%)",
    )
    only_steal = assess(steady(), window(steal=3.0))
    assert only_steal.checks[2] == Q(name="contention", ok=True, detail="stolen 3% (<= 10%)")
    nothing = assess(steady(), window())
    assert nothing.checks[2:] == (
        Q(name="contention", ok=None, detail="not checked: the telemetry window has no CPU-share figures"),
        Q(name="throttling", ok=None, detail="not checked: the telemetry window reports no clock-event reasons"),
    )


@pytest.mark.parametrize("value", [float("nan"), float("inf"), True, "12", None])
def test_telemetry_figures_that_are_not_numbers_are_not_counted(value):
    q = assess(steady(), window(other=value, steal=None))
    assert q.checks[2].ok is None


def test_a_window_without_a_summary_checks_nothing():
    from tensorforge_measure.capture.sections.diagnostic import TelemetryWindow as W

    q = assess(steady(), W(available=True, reason=None, data={"summary": "not a table"}))
    assert q.checks[2].ok is None and q.checks[3].ok is None
