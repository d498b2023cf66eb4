"""The gate knows between-run variability (policy/between_runs.py): a workload so short that it
moves more between runs of unchanged code than the effect threshold needs a larger effect for a
verdict, and the verdict says which; true regressions stay detected.

Built in-process from the committed H200 captures (fast: no console script, no re-sealing): the
candidate is the baseline's capture with some samples scaled, under another digest, so every
expectation follows from the capture's own numbers."""

import math

import attrs
import pytest
from golden import H200_ENERGY_RUN, H200X2_RERUN, H200X2_RUN

from tensorforge_measure.policy.between_runs import JITTER_S, RELATIVE_SD, needed_effect, run_sd
from tensorforge_measure.policy.evidence import load_evidence
from tensorforge_measure.policy.gate import (
    IMPROVEMENT,
    PASS,
    REGRESSION,
    GateSettings,
    classify,
    workload_verdicts,
)

pytestmark = pytest.mark.timeout(300)
DEFAULTS = GateSettings()
DECIDING = (REGRESSION, IMPROVEMENT)


@pytest.fixture(scope="module")
def evidence():
    cache = {}

    def get(path):
        if path not in cache:
            cache[path] = load_evidence(path, "capture")
        return cache[path]

    return get


def scaled(ev, factors: dict[str, float], tag: str):
    """`ev` with the named workloads' samples times their factor, as another capture (digest)."""
    measured = ev.capture.measured
    rows = dict(measured.workloads)
    for name, factor in factors.items():
        rows[name] = attrs.evolve(rows[name], samples_s=tuple(s * factor for s in rows[name].samples_s))
    digest = attrs.evolve(ev.capture.digest, value=tag.ljust(64, "0"))
    capture = attrs.evolve(ev.capture, measured=attrs.evolve(measured, workloads=rows), digest=digest)
    return attrs.evolve(ev, capture=capture, path=f"{ev.path}-{tag}")


def by_name(verdicts):
    return {v.workload: v for v in verdicts}


# -- the rule ----------------------------------------------------------------------------------


def test_the_allowance_grows_as_the_kernel_shrinks_and_leaves_long_ones_at_the_threshold():
    durations = [1e-6, 2.7e-6, 4.7e-6, 10e-6, 20e-6, 1e-3, 1.0]
    needed = [needed_effect(t, DEFAULTS.alpha, DEFAULTS.threshold) for t in durations]
    assert needed == sorted(needed, reverse=True)
    assert needed[1] > 0.06  # the issue's 2.7 us kernel: its 6% cross-day move is no verdict
    assert needed[4:] == [DEFAULTS.threshold] * 3  # from ~10.5 us up: the threshold, as before
    # the model: sqrt(2) run effects at the two-sided alpha quantile, on the log scale
    z = 2.5758293035489
    assert needed[1] == pytest.approx(math.expm1(z * math.sqrt(2) * math.hypot(RELATIVE_SD, JITTER_S / 2.7e-6)))
    assert run_sd(0.0) == math.inf  # a median of 0 s has no ratio (the gate says NO VERDICT before)
    # a stricter alpha needs more; the allowance switched off leaves the threshold alone
    assert needed_effect(2.7e-6, 0.001, 0.05) > needed[1]
    assert needed_effect(2.7e-6, 0.01, 0.05, jitter_s=0.0, relative_sd=0.0) == 0.05


def test_classify_uses_the_effect_it_is_given():
    assert classify(1.10, 1e-9, 1.08, 1.12, DEFAULTS) == REGRESSION
    assert classify(1.10, 1e-9, 1.08, 1.12, DEFAULTS, needed=0.15) == PASS
    assert classify(1.15, 1e-9, 1.13, 1.17, DEFAULTS, needed=0.15) == REGRESSION
    assert classify(1 / 1.15, 1e-9, 0.85, 0.88, DEFAULTS, needed=0.15) == IMPROVEMENT
    assert classify(0.9, 1e-9, 0.88, 0.92, DEFAULTS, needed=0.15) == PASS


@pytest.mark.parametrize("field", ["run_jitter_s", "run_relative_sd"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -1e-9, 2.0])
def test_the_run_effect_settings_refuse_what_would_decide_quietly(field, value):
    with pytest.raises(ValueError, match=field):
        GateSettings(**{field: value})


# -- the issue's cross-day A/A and a true regression -------------------------------------------


def test_the_cross_day_aa_of_the_issue_gives_no_verdict_of_change(evidence):
    """An H200 capture of one day as baseline; the next day's run of unchanged code moved
    gemm_tiny (a ~2.7 us kernel) by -6.0% and the others by under 1%: PASS everywhere."""
    base = evidence(H200_ENERGY_RUN)
    tiny = base.capture.measured.workloads["gemm_tiny"]
    assert tiny.stats.p50 < 3e-6  # the issue's kernel
    others = [n for n in base.capture.measured.workloads if n != "gemm_tiny"]
    moves = {n: 1.0 + 0.008 * ((i % 5) - 2) / 2 for i, n in enumerate(others)}  # -0.8%..+0.8%
    cand = scaled(base, {"gemm_tiny": 0.94, **moves}, "crossday")
    verdicts = by_name(workload_verdicts(base, cand))
    assert {v.verdict for v in verdicts.values()} == {PASS}, [v.reason for v in verdicts.values()]
    v = verdicts["gemm_tiny"]
    assert v.ratio == pytest.approx(0.94) and v.p_value < 1e-10  # as significant as in the issue...
    assert v.needed_effect > 0.06  # ...but within how far it moves between runs, and it says so
    assert "significant but below the " in v.reason and "moves that much between runs" in v.reason
    # without the allowance this is the false IMPROVEMENT the issue saw
    off = GateSettings(run_jitter_s=0.0, run_relative_sd=0.0)
    assert by_name(workload_verdicts(base, cand, off))["gemm_tiny"].verdict == IMPROVEMENT
    # and symmetrically in the other direction
    back = by_name(workload_verdicts(cand, base))
    assert {v.verdict for v in back.values()} == {PASS}
    assert back["gemm_tiny"].needed_effect == pytest.approx(v.needed_effect)


@pytest.mark.parametrize("factor,verdict", [(1.20, REGRESSION), (1 / 1.25, IMPROVEMENT)])
def test_a_true_change_of_a_short_kernel_is_still_called(evidence, factor, verdict):
    base = evidence(H200_ENERGY_RUN)
    cand = scaled(base, {"gemm_tiny": factor}, f"x{factor:.3f}")
    v = by_name(workload_verdicts(base, cand))["gemm_tiny"]
    assert v.verdict == verdict, v.reason
    assert v.needed_effect > DEFAULTS.threshold and ", beyond the " in v.reason


def test_long_workloads_are_judged_at_the_threshold_exactly_as_before(evidence):
    base = evidence(H200_ENERGY_RUN)
    long_ones = [n for n, r in base.capture.measured.workloads.items() if r.stats.p50 > 20e-6]
    assert len(long_ones) >= 5
    cand = scaled(base, {n: 1.06 for n in long_ones}, "long")
    verdicts = by_name(workload_verdicts(base, cand))
    for name in long_ones:
        assert verdicts[name].needed_effect == DEFAULTS.threshold
        assert verdicts[name].verdict == REGRESSION, verdicts[name].reason
        assert "moves that much" not in verdicts[name].reason


# -- the committed reruns of unchanged code ----------------------------------------------------


def test_the_committed_rerun_pair_calls_no_change(evidence):
    """The 2xH200 run and its rerun of unchanged code, with the spread limit opened so the
    noisy decode step is judged too: no REGRESSION, no IMPROVEMENT. (The single-H200 pair, with
    gemm_tiny at 4.7 us, goes through the console script in test_policy_gate.py.)"""
    base, cand = evidence(H200X2_RUN), evidence(H200X2_RERUN)
    verdicts = workload_verdicts(base, cand, GateSettings(max_spread=0.9))
    assert not [v for v in verdicts if v.verdict in DECIDING], [
        (v.workload, v.reason) for v in verdicts if v.verdict in DECIDING
    ]
    assert sum(v.verdict == PASS for v in verdicts) >= 10


def test_an_aa_pair_gives_the_run_effect_it_shows():
    from tensorforge_measure.policy.between_runs import fit_run_effect

    # long workloads moved 1% and 0.5%: the relative part is the larger over sqrt(2)
    long_pairs = [(1e-3, 1.01e-3), (2e-3, 1.99e-3)]
    jitter, relative = fit_run_effect(long_pairs)
    assert relative == pytest.approx(math.log(1.01) / math.sqrt(2))
    assert jitter == JITTER_S  # no short workload: the model's fixed part stays
    # a 3 us kernel that moved 300 ns: its fixed part, less the relative part
    jitter, _ = fit_run_effect([*long_pairs, (3e-6, 3.3e-6)])
    d = math.log(1.1)
    assert jitter == pytest.approx(math.sqrt(3e-6 * 3.3e-6) * math.sqrt(d * d / 2 - relative**2))
    assert fit_run_effect([(5e-6, 5e-6)]) == (0.0, RELATIVE_SD)  # no move measured: no jitter


def test_gate_takes_the_run_effect_from_an_aa_pair():
    import json

    from click.testing import CliRunner

    from tensorforge.cli.main import make_cli

    pair = [str(H200X2_RUN), str(H200X2_RERUN)]
    result = CliRunner().invoke(make_cli(), ["gate", *pair, "--aa", *pair, "--json"])
    settings = json.loads(result.output)["settings"]
    assert "A/A pair" in settings["run_effect_source"]
    assert settings["run_relative_sd"] != RELATIVE_SD or settings["run_jitter_s"] != JITTER_S
    missing = CliRunner().invoke(make_cli(), ["gate", *pair, "--aa", pair[0], "no-such.json"])
    assert missing.exit_code == 2 and "no-such.json" in missing.output and "Traceback" not in missing.output
