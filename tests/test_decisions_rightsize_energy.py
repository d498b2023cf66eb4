"""Right-sizing with energy, every branch asserted whole: an energy objective met, missed (at
the limit exactly) and unjudgeable for want of an energy window; a measurement that misses the
latency objective still carries its joules; what a million requests cost in energy, and the
note that says what a cost includes when some workload has no energy window. Captures come from
the synthetic backend, whose counter gives exactly the chosen joules per execution."""

import pytest
from capture_factory import core, make_capture, samples

from tensorforge.api import seconds
from tensorforge.workloads.suite import resolve
from tensorforge_measure.policy.evidence import Evidence
from tensorforge_measure.policy.rightsize import MEETS, RULED_OUT, UNKNOWN, Cell, EnergyTerms, Objective, rightsize

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]

TINY, LARGE = 0.25, 2.0  # joules per execution the synthetic counter counts


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    host = core()
    workloads = resolve(host, ("gemm_tiny", "gemm_large_square"))
    measured = {"gemm_tiny": samples(4e-6), "gemm_large_square": samples(3e-3)}
    both = make_capture(measured, home=home, energy={"gemm_tiny": TINY, "gemm_large_square": LARGE})
    # the tiny GEMM's energy window only: the large one has no joules
    partial = make_capture(measured, home=home, energy={"gemm_tiny": TINY})
    return host, workloads, host.target("h200"), Evidence("both.json", both), Evidence("partial.json", partial)


@pytest.fixture(scope="module")
def no_joules(tmp_path_factory):
    """Energy windows on, but the counter counted nothing for either workload."""
    measured = {"gemm_tiny": samples(4e-6), "gemm_large_square": samples(3e-3)}
    return Evidence("none.json", make_capture(measured, home=tmp_path_factory.mktemp("home"), energy={}))


def p50(center):
    return float(sorted(samples(center))[12])


def bound(host, workloads, target, name):
    from tensorforge.bound.model import predict

    return next(w.latency_s for w in predict(workloads, target, host.mappings()).workloads if w.name == name)


def joules(evidence, name):
    return evidence.capture.measured.workloads[name].energy.joules_per_execution


def test_the_counter_gives_the_chosen_joules(world):
    host, workloads, h200, both, partial = world
    assert joules(both, "gemm_tiny") == pytest.approx(TINY, rel=1e-9)
    assert joules(both, "gemm_large_square") == pytest.approx(LARGE, rel=1e-9)
    assert partial.capture.measured.workloads["gemm_large_square"].energy is None or not (
        partial.capture.measured.workloads["gemm_large_square"].energy.available
    )


def test_an_energy_objective_is_met_at_the_limit_and_missed_above_it(world):
    host, workloads, h200, both, _ = world
    large = joules(both, "gemm_large_square")
    terms = EnergyTerms(None, large)  # exactly the measured joules: <= meets
    (result,) = rightsize(workloads[1:], [h200], host.mappings(), Objective("latency", 1.0), [both], {}, terms)
    met = f"MEASURED p50 {seconds(p50(3e-3))} meets latency <= 1000 ms"
    assert result.verdict == MEETS
    assert result.cells == (
        Cell(
            "h200",
            "gemm_large_square",
            MEETS,
            f"{met}; MEASURED {large:.4g} J per execution meets energy <= {large:g} J per request",
            bound(host, workloads, h200, "gemm_large_square"),
            p50(3e-3),
            "both.json",
            large,
        ),
    )
    tight = EnergyTerms(None, large * 0.99)
    (result,) = rightsize(workloads[1:], [h200], host.mappings(), Objective("latency", 1.0), [both], {}, tight)
    assert result.verdict == RULED_OUT
    assert result.cells == (
        Cell(
            "h200",
            "gemm_large_square",
            RULED_OUT,
            f"{met}; MEASURED {large:.4g} J per execution misses {tight.describe()}",
            bound(host, workloads, h200, "gemm_large_square"),
            p50(3e-3),
            "both.json",
            large,
        ),
    )


def test_no_energy_window_leaves_an_energy_objective_unknown(world):
    host, workloads, h200, _, partial = world
    terms = EnergyTerms(None, 5.0)
    (result,) = rightsize(workloads, [h200], host.mappings(), Objective("latency", 1.0), [partial], {}, terms)
    assert result.verdict == UNKNOWN
    assert result.cells[1] == Cell(
        "h200",
        "gemm_large_square",
        UNKNOWN,
        f"MEASURED p50 {seconds(p50(3e-3))} meets latency <= 1000 ms; no energy window in partial.json: "
        "run it again with the energy counter to judge energy <= 5 J per request",
        bound(host, workloads, h200, "gemm_large_square"),
        p50(3e-3),
        "partial.json",
    )


def test_a_latency_miss_keeps_its_measured_joules(world):
    host, workloads, h200, both, _ = world
    objective = Objective("latency", 2.9e-3)  # below the large GEMM's measured 3 ms
    (result,) = rightsize(workloads[1:], [h200], host.mappings(), objective, [both], {}, EnergyTerms(None, 5.0))
    assert result.cells == (
        Cell(
            "h200",
            "gemm_large_square",
            RULED_OUT,
            f"MEASURED p50 {seconds(p50(3e-3))} misses latency <= 2.9 ms",
            bound(host, workloads, h200, "gemm_large_square"),
            p50(3e-3),
            "both.json",
            joules(both, "gemm_large_square"),
        ),
    )


def test_energy_cost_per_million_requests_and_what_the_cost_includes(world, no_joules):
    host, workloads, h200, both, partial = world
    objective, price, kwh = Objective("latency", 1.0), {"h200": 3.6}, 0.3
    (result,) = rightsize(workloads, [h200], host.mappings(), objective, [both], price, EnergyTerms(kwh, None))
    per_request = joules(both, "gemm_tiny") + joules(both, "gemm_large_square")
    energy_cost = kwh * per_request / 3.6e6 * 1e6  # J -> kWh, a million requests
    time_cost = 3.6 / 3600 * (p50(4e-6) + p50(3e-3)) * 1e6
    assert result.energy_j_per_request == pytest.approx(per_request, rel=1e-12)
    assert result.energy_cost_per_million == pytest.approx(energy_cost, rel=1e-12)
    assert result.cost_per_million == pytest.approx(time_cost + energy_cost, rel=1e-12)
    assert result.cost_note == "hardware time at measured p50 + MEASURED energy at the given price"
    # one workload without joules: no energy figure, the cost is hardware time, and the note says which
    (result,) = rightsize(workloads, [h200], host.mappings(), objective, [partial], price, EnergyTerms(kwh, None))
    assert result.verdict == MEETS
    assert (result.energy_j_per_request, result.energy_cost_per_million) == (None, None)
    assert result.cost_per_million == pytest.approx(time_cost, rel=1e-12)
    assert result.cost_note == "hardware time only: no energy window measured gemm_large_square"
    (result,) = rightsize(workloads, [h200], host.mappings(), objective, [no_joules], price, EnergyTerms(kwh, None))
    assert result.cost_note == "hardware time only: no energy window measured gemm_tiny, gemm_large_square"
    # no energy price: hardware time only, and nothing to say about it
    (result,) = rightsize(workloads, [h200], host.mappings(), objective, [both], price, EnergyTerms())
    assert result.cost_note is None and result.energy_cost_per_million is None
    assert result.energy_j_per_request == pytest.approx(per_request, rel=1e-12)


def test_an_energy_objective_describes_itself_only_when_set():
    assert EnergyTerms().describe() == ""
    assert EnergyTerms(0.2, None).describe() == ""
    assert EnergyTerms(None, 2.5).describe() == "energy <= 2.5 J per request"
