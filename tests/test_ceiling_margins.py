"""Calibrated ceilings: the fastest rate any probe of a mode or access pattern reached, plus a
margin from the probes' own spread (tensorforge_measure/calibrate/margin.py).

* the arithmetic of the spread of the fastest samples and of a ceiling with its margin;
* the DRAM ceiling is the highest rate of the copy, read and write streams, whatever order the
  probes ran in (it once kept the last probe's), with each pattern's rate on record;
* each ceiling's margin is recorded per regime, and a probe whose rate is lower but whose
  spread is wider still lifts the ceiling past what it could reach next time;
* probes that say nothing about their spread keep the old ceilings exactly (the floor alone).
"""

from types import SimpleNamespace

import pytest

from tensorforge_measure.api import ProbeResult
from tensorforge_measure.calibrate import store as calibration
from tensorforge_measure.calibrate.margin import FASTEST, ceiling, fastest_spread


def session():
    return SimpleNamespace(info=SimpleNamespace(fingerprint="fp", name="dev", details={}))


def assemble(*results):
    return calibration.assemble(session(), list(results), {}, "then")


def test_fastest_spread_reads_the_fastest_samples_only():
    samples = [1.10, 1.00, 1.04, 9.0, 1.02, 1.01, 1.03, 5.0]
    assert FASTEST == 5
    assert fastest_spread(samples) == pytest.approx(0.04)  # 1.00 .. 1.04; the slow tail is ignored
    assert fastest_spread([2.0, 2.5]) == pytest.approx(0.25)  # fewer than FASTEST: all of them
    assert fastest_spread([3.0]) == 0.0 and fastest_spread([]) == 0.0
    assert fastest_spread([0.0, 1.0]) == 0.0  # nothing to divide by: no spread read


def test_ceiling_is_the_highest_rate_with_its_own_margin():
    assert ceiling([(100.0, 0.0)]) == (100.0, 0.0)
    top, margin = ceiling([(100.0, 0.02), (101.0, 0.0)], floor=0.01)
    assert top == pytest.approx(102.01) and margin == pytest.approx(0.01)  # 101 x 1.01 > 100 x 1.02
    top, margin = ceiling([(100.0, 0.05), (101.0, 0.0)], floor=0.01)
    assert top == pytest.approx(105.0) and margin == pytest.approx(105.0 / 101.0 - 1)  # the wider spread wins
    assert ceiling([(100.0, 0.003)], floor=0.01)[1] == pytest.approx(0.01)  # the floor holds
    with pytest.raises(ValueError):
        ceiling([])


def stream(name, pattern, rate, spread=None, regime="burst"):
    return ProbeResult(
        name=name,
        method="test",
        regime=regime,
        dram_bytes_per_s=rate,
        dram_patterns={pattern: rate},
        fastest_spread={} if spread is None else {"dram": spread},
    )


def test_dram_ceiling_is_the_fastest_pattern_in_any_order():
    copy, read, write = stream("copy", "copy", 4.0e12), stream("read", "read", 4.3e12), stream("w", "write", 4.1e12)
    for order in ((copy, read, write), (read, write, copy), (write, copy, read)):
        cal = assemble(*order)
        assert cal.ceilings.dram_bytes_per_s == 4.3e12
        assert cal.ceilings_by_regime["burst"].dram_patterns == {"copy": 4.0e12, "read": 4.3e12, "write": 4.1e12}
        assert cal.margins == {"burst": {"dram": 0.0}}  # no spread said: no DRAM margin
    matmul = ProbeResult(name="matmul", method="test", compute={"fp32": 1e12})
    assert calibration.to_ceilings(assemble(matmul, copy, read)).dram_bytes_per_s == 4.3e12


def test_margins_from_the_probes_spread_are_applied_and_recorded():
    matmul = ProbeResult(
        name="matmul",
        method="test",
        compute={"bf16": 800e12, "fp32": 50e12},
        fastest_spread={"bf16": 0.004, "fp32": 0.03},
    )
    sweep = ProbeResult(name="sweep", method="test", compute={"bf16": 805e12})
    copy = stream("copy", "copy", 4.0e12, spread=0.002)
    read = stream("read", "read", 4.3e12, spread=0.001)
    sustained = stream("read-s", "read", 4.2e12, spread=0.0, regime="sustained")
    cal = assemble(matmul, sweep, copy, read, sustained)
    c = cal.ceilings
    floor = calibration.COMPUTE_ALLOWANCE
    assert floor < 0.03  # the fp32 probe's spread below lies above the floor
    assert c.compute["bf16"] == pytest.approx(805e12 * (1 + floor))  # the floor, on the highest rate
    assert c.compute["fp32"] == pytest.approx(50e12 * 1.03)  # its spread, above the floor
    assert c.dram_bytes_per_s == pytest.approx(4.3e12 * 1.001)
    assert cal.margins["burst"] == pytest.approx({"bf16": floor, "fp32": 0.03, "dram": 0.001})
    assert cal.ceilings_by_regime["sustained"].dram_bytes_per_s == 4.2e12
    assert cal.margins["sustained"] == {"dram": 0.0}
    assert cal.probes["matmul"].fastest_spread == {"bf16": 0.004, "fp32": 0.03}
    assert cal.probes["read"].dram_patterns == {"read": 4.3e12} and cal.probes["sweep"].fastest_spread is None
    # a later run's fastest sample, as fast as the probe's spread allows, stays below the ceiling
    assert 4.3e12 * (1 + 0.001) <= c.dram_bytes_per_s and 50e12 * (1 + 0.03) <= c.compute["fp32"]


def test_probes_without_spreads_keep_the_old_ceilings():
    old = ProbeResult(name="m", method="test", compute={"fp32": 1e12}, dram_bytes_per_s=1e11)
    cal = assemble(old)
    assert cal.ceilings.compute == {"fp32": 1e12 * (1.0 + calibration.COMPUTE_ALLOWANCE)}
    assert cal.ceilings.dram_bytes_per_s == 1e11
    assert cal.ceilings_by_regime["burst"].dram_patterns is None
