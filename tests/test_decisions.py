"""The decision code at its edges, in-process and fast, so a small deliberate bug in it fails a
test (the mutation run in the README's development section checks that it does): the gate's
significance rule and thresholds, its refusals, verify's digest and recomputation, the bound
check, APE and right-sizing verdicts. Captures come from capture_factory (the real runner with
chosen samples), never from a committed GPU capture's figures."""

import json

import attrs
import pytest
from capture_factory import make_capture, samples, write

from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.document import check, seal_document
from tensorforge_measure.compare.workload import MIN_TOLERANCE, ape, bound_tolerance, fastest_check
from tensorforge_measure.policy.evidence import Evidence
from tensorforge_measure.policy.gate import (
    EXIT_NO_VERDICT,
    EXIT_OK,
    EXIT_REGRESSION,
    IMPROVEMENT,
    NO_VERDICT,
    PASS,
    REGRESSION,
    GateSettings,
    classify,
    gate,
)
from tensorforge_measure.policy.rightsize import MEETS, RULED_OUT, UNKNOWN, Objective

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]

T = GateSettings()  # threshold 5%, alpha 1%


# -- the gate's rule, on the statistics alone ----------------------------------------------------


@pytest.mark.parametrize(
    "ratio, p, low, high, expected",
    [
        (1.10, 0.001, 1.05, 1.15, REGRESSION),  # both significant, beyond the effect
        (1.05, 0.001, 1.01, 1.09, REGRESSION),  # exactly the threshold counts (>=, not >)
        (1.0499, 0.001, 1.01, 1.09, PASS),  # just under it: significant but small
        (1.10, 0.5, 1.05, 1.15, PASS),  # the bootstrap alone is not enough (and, not or)
        (1.10, 0.001, 0.99, 1.15, PASS),  # the Mann-Whitney test alone is not enough
        (1.10, 0.01, 1.05, 1.15, PASS),  # p equal to alpha is not significant (<, not <=)
        (1.10, 0.001, 1.0, 1.15, PASS),  # an interval touching 1 does not exclude it
        (0.90, 0.001, 0.85, 0.95, IMPROVEMENT),
        (1 / 1.05, 0.001, 0.90, 0.99, IMPROVEMENT),  # the same 5% effect undone: 1/(1+t), exactly
        (0.951, 0.001, 0.90, 0.99, IMPROVEMENT),  # 1/(1.05) = 0.9524 > 0.951; 1 - t = 0.95 would miss it
        (0.9525, 0.001, 0.90, 0.99, PASS),  # just above 1/(1+t)
        (0.90, 0.001, 0.85, 1.0, PASS),  # an interval touching 1 from below
        (0.90, 0.02, 0.85, 0.95, PASS),
    ],
    ids=[
        "regression",
        "at threshold",
        "under threshold",
        "only bootstrap",
        "only Mann-Whitney",
        "p at alpha",
        "CI low at 1",
        "improvement",
        "improvement at 1/(1+t)",
        "improvement between 1-t and 1/(1+t)",
        "just above 1/(1+t)",
        "CI high at 1",
        "improvement not significant",
    ],
)
def test_classify(ratio, p, low, high, expected):
    assert classify(ratio, p, low, high, T) == expected


def test_classify_follows_the_settings():
    loose = GateSettings(threshold=0.2, alpha=0.05)
    assert classify(1.15, 0.001, 1.1, 1.2, loose) == PASS
    assert classify(1.2, 0.001, 1.1, 1.3, loose) == REGRESSION
    assert classify(1.2, 0.03, 1.1, 1.3, loose) == REGRESSION  # p 0.03 < alpha 0.05
    assert classify(1 / 1.2, 0.001, 0.7, 0.9, loose) == IMPROVEMENT
    assert classify(0.81, 0.001, 0.7, 0.9, loose) == IMPROVEMENT  # 1/1.2 = 0.833; 1 - 0.2 = 0.8 would miss it
    assert classify(0.84, 0.001, 0.7, 0.9, loose) == PASS


@pytest.mark.parametrize(
    "field, value",
    [
        ("threshold", float("nan")),
        ("alpha", float("nan")),
        ("alpha", 1.0),
        ("max_spread", float("inf")),
        ("min_samples", 2),
        ("resamples", 10),
    ],
)
def test_gate_settings_refuse_what_would_decide_quietly(field, value):
    with pytest.raises(ValueError, match=field):
        GateSettings(**{field: value})


# -- the gate on captures ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


def ev(capture, path="x.json"):
    return Evidence(path, capture)


def pair(home, base, cand, **kw):
    a = make_capture(base, home=home, started_at="2026-01-01T00:00:00+00:00", **kw)
    b = make_capture(cand, home=home, started_at="2026-01-02T00:00:00+00:00", **kw)
    return ev(a, "a.json"), ev(b, "b.json")


def verdicts(result):
    return {v.workload: v for v in result.verdicts}


def test_ten_percent_slower_is_a_regression_with_its_numbers(home):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1.1e-3)})
    result = gate(base, cand)
    v = verdicts(result)["gemm_tiny"]
    assert v.verdict == REGRESSION and result.exit_status == EXIT_REGRESSION
    assert v.reason.startswith("slower by +10.0% (CI ") and v.ratio == pytest.approx(1.1)
    assert v.n_baseline == v.n_candidate == 25 and v.p_value < 0.01 and v.ci_low > 1.0
    assert result.summary == "1 REGRESSION"
    assert result.baseline["path"] == "a.json" and result.candidate["digest"] == cand.capture.digest.value


def test_faster_is_an_improvement_and_exit_zero(home):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(0.9e-3)})
    result = gate(base, cand)
    v = verdicts(result)["gemm_tiny"]
    assert v.verdict == IMPROVEMENT and v.reason.startswith("faster by -10.0%")
    assert result.exit_status == EXIT_OK and result.summary == "1 IMPROVEMENT"


def test_unchanged_samples_pass_not_significant(home):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)})
    result = gate(base, cand)
    v = verdicts(result)["gemm_tiny"]
    assert v.verdict == PASS and v.reason.endswith(": not significant") and result.exit_status == EXIT_OK
    assert result.summary == "1 PASS"


def test_small_but_significant_change_passes_and_says_why(home):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1.02e-3)})
    v = verdicts(gate(base, cand))["gemm_tiny"]
    assert v.verdict == PASS and v.reason.endswith(": significant but below the 5% effect threshold")


def test_a_capture_compared_with_itself_is_no_verdict(home):
    one = ev(make_capture({"gemm_tiny": samples(1e-3), "gemm_large_square": samples(3e-3)}, home=home))
    result = gate(one, one)
    why = (
        f"baseline and candidate are the same capture (digest {one.capture.digest.value[:16]}...): a capture "
        "compared with itself is no evidence that nothing changed"
    )
    # suite order: the capture's own order, as `run` listed them
    assert [(v.workload, v.verdict, v.reason) for v in result.verdicts] == [
        ("gemm_tiny", NO_VERDICT, why),
        ("gemm_large_square", NO_VERDICT, why),
    ]
    assert result.exit_status == EXIT_NO_VERDICT


def test_two_captures_without_workloads_are_no_verdict(home):
    cap = make_capture({"gemm_tiny": samples(1e-3)}, home=home)
    empty = attrs.evolve(
        cap,
        predicted=attrs.evolve(cap.predicted, analytical=attrs.evolve(cap.predicted.analytical, workloads=())),
        digest=None,
    )
    other = attrs.evolve(empty, provenance=attrs.evolve(empty.provenance, started_at="other"))
    result = gate(ev(empty), ev(other))
    assert result.verdicts == () and result.exit_status == EXIT_NO_VERDICT
    assert result.summary == "NO VERDICT: neither capture has a workload to compare"


@pytest.mark.parametrize("n, decided", [(10, True), (9, False)])
def test_min_samples_boundary(home, n, decided):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3, n=n)}, {"gemm_tiny": samples(1e-3, n=n)})
    v = verdicts(gate(base, cand))["gemm_tiny"]
    assert (v.verdict != NO_VERDICT) is decided
    if not decided:
        assert v.reason == f"too few samples in the baseline ({n} < 10)"


def test_spread_boundary_uses_the_samples_not_the_recorded_summary(home):
    wide = samples(1e-3, n=41, spread=0.03)  # relative IQR about 15%
    base, cand = pair(home, {"gemm_tiny": wide}, {"gemm_tiny": samples(1e-3)})
    v = verdicts(gate(base, cand))["gemm_tiny"]
    assert v.verdict == NO_VERDICT and v.reason.startswith("spread too wide in the baseline (relative IQR ")
    # a recorded summary claiming a tight spread changes nothing: the gate recomputes it
    m = base.capture.measured.workloads["gemm_tiny"]
    lying = attrs.evolve(m, stats=attrs.evolve(m.stats, rel_iqr=0.001))
    forged = attrs.evolve(base.capture, measured=attrs.evolve(base.capture.measured, workloads={"gemm_tiny": lying}))
    assert verdicts(gate(ev(forged), cand))["gemm_tiny"].verdict == NO_VERDICT
    loose = GateSettings(max_spread=0.5)
    assert verdicts(gate(base, cand, loose))["gemm_tiny"].verdict != NO_VERDICT


def test_different_devices_flags_and_definitions_are_named(home):
    a = ev(make_capture({"gemm_tiny": samples(1e-3)}, home=home))
    other_device = ev(make_capture({"gemm_tiny": samples(1e-3)}, home=home, fingerprint="synthetic-2"))
    v = verdicts(gate(a, other_device))["gemm_tiny"]
    assert v.verdict == NO_VERDICT and v.reason == (
        "different device fingerprints: synthetic-1 (NVIDIA H200) vs synthetic-2 (NVIDIA H200)"
    )
    flags = ev(make_capture({"gemm_tiny": samples(1e-3)}, home=home, flags={"tf32": True}))
    assert verdicts(gate(a, flags))["gemm_tiny"].reason == "framework flags differ: tf32 False -> True"
    b = ev(make_capture({"gemm_tiny:dtype=fp16": samples(1e-3)}, home=home))
    assert set(verdicts(gate(a, b))) == {"gemm_tiny", "gemm_tiny:dtype=fp16"}
    assert verdicts(gate(a, b))["gemm_tiny"].reason == "not measured in the candidate"


def test_a_bound_violation_and_contention_withhold_the_verdict(home):
    cap = make_capture({"gemm_large_square": samples(1e-3)}, home=home)
    bound = cap.comparison.workloads["gemm_large_square"].predicted_calibrated_s
    base, violating = pair(
        home, {"gemm_large_square": samples(bound * 1.2)}, {"gemm_large_square": samples(bound * 0.9)}
    )
    v = verdicts(gate(base, violating))["gemm_large_square"]
    assert v.verdict == NO_VERDICT and v.reason == (
        "bound violation in the candidate: the model or the calibration "
        "is wrong there, so the comparison is meaningless"
    )
    busy = {"gemm_large_square": {"summary": {"other_processes_pct": 39.0, "steal_pct": 0.0}}}
    calm, contended = pair(
        home, {"gemm_large_square": samples(bound * 1.2)}, {"gemm_large_square": samples(bound * 1.2)}, windows=busy
    )
    v = verdicts(gate(calm, contended))["gemm_large_square"]
    assert v.verdict == NO_VERDICT and v.reason.startswith("contended: other processes 39%")


# -- verify: the whole digest, and every derived figure --------------------------------------------


@pytest.fixture(scope="module")
def sealed_file(home, tmp_path_factory):
    folder = tmp_path_factory.mktemp("verify")
    cap = make_capture({"gemm_tiny": samples(1e-3), "gemm_large_square": samples(2e-3)}, home=home)
    return write(folder / "cap.json", cap), home


def reseal(path, edit, tmp_path):
    doc = json.loads(path.read_text())
    edit(doc)
    doc.pop("digest")
    out = tmp_path / "edited.json"
    out.write_text(canonical_json(seal_document(doc)))
    return out


def test_every_digit_of_the_digest_counts(sealed_file, tmp_path):
    path, home = sealed_file
    report, _ = check(path, ())
    assert report.ok
    doc = json.loads(path.read_text())
    for index in (0, 15, 16, 63):  # not only the first 16 hex digits
        edited = dict(doc, digest=dict(doc["digest"]))
        value = edited["digest"]["value"]
        edited["digest"]["value"] = value[:index] + ("0" if value[index] != "0" else "1") + value[index + 1 :]
        out = tmp_path / f"d{index}.json"
        out.write_text(canonical_json(edited))
        bad, _ = check(out, ())
        assert not bad.ok and bad.problems[0].startswith("digest mismatch"), index


@pytest.mark.parametrize(
    "edit, problem",
    [
        (
            lambda d: d["measured"]["workloads"]["gemm_tiny"]["stats"].update(rel_iqr=0.0001),
            "gemm_tiny: recorded rel_iqr 0.0001 does not match its raw samples",
        ),
        (
            lambda d: d["measured"]["workloads"]["gemm_tiny"]["stats"].update(mean=1.0),
            "gemm_tiny: recorded mean 1.0 does not match",
        ),
        (
            lambda d: d["measured"]["workloads"]["gemm_tiny"].update(throughput_flops_per_s=1.0),
            "gemm_tiny: recorded throughput (FLOP/s) 1.0 is not the predicted work over the measured p50",
        ),
        (
            lambda d: d["comparison"]["workloads"]["gemm_tiny"].update(measured_p50_s=5e-4),
            "gemm_tiny: recorded comparison measured_p50_s does not follow",
        ),
        (
            lambda d: d["comparison"]["workloads"]["gemm_tiny"]["bound_check"].update(verdict="BOUND VIOLATION"),
            "gemm_tiny: recorded comparison bound_check.verdict does not follow",
        ),
        (
            lambda d: d["comparison"]["workloads"]["gemm_tiny"]["evidence_quality"].update(verdict="insufficient"),
            "gemm_tiny: recorded comparison evidence_quality.verdict does not follow",
        ),
        (
            lambda d: d["comparison"].update(bound_violations=["gemm_tiny"]),
            "recorded bound violations ['gemm_tiny'] are not the rows' ([])",
        ),
        (
            lambda d: d["policy"]["bound_checks"]["gemm_tiny"].update(verdict="BOUND VIOLATION"),
            "gemm_tiny: POLICY's bound check 'BOUND VIOLATION' is not the comparison's",
        ),
        (
            lambda d: d["comparison"].update(same_device=False),
            "comparison says the measured device is not the predicted target",
        ),
    ],
    ids=[
        "rel_iqr",
        "mean",
        "throughput",
        "comparison p50",
        "bound verdict",
        "evidence quality",
        "violations list",
        "policy record",
        "same device",
    ],
)
def test_a_resealed_edit_of_a_derived_figure_fails(sealed_file, tmp_path, edit, problem):
    path, _ = sealed_file
    report, _ = check(reseal(path, edit, tmp_path), ())
    assert not report.ok
    assert any(p.startswith(problem) for p in report.problems), report.problems


def test_an_untouched_capture_verifies_and_says_what_it_recomputed(sealed_file):
    path, home = sealed_file
    report, capture = check(path, ())
    assert report.ok and report.problems == [] and capture is not None
    assert "every statistic and throughput recomputed from the raw samples for 2 workloads" in report.checks
    assert report.origin == "untrusted" and report.signer == capture.digest.signature.fingerprint
    trusted, _ = check(path, (capture.digest.signature.fingerprint,))
    assert trusted.origin == "trusted" and trusted.origin_detail.startswith("signed by trusted key SHA256:")


# -- bound check, APE ----------------------------------------------------------------------------


def test_ape_is_relative_to_the_measurement():
    assert ape(1.5, 1.0) == 0.5 and ape(0.5, 1.0) == 0.5 and ape(1.0, 2.0) == 0.5
    with pytest.raises(ZeroDivisionError, match="division"):
        ape(1.0, 0.0)


def test_tolerance_and_fastest_sample_edges():
    stats = samples(1.0)
    from tensorforge_measure.measure.stats import summarize

    assert bound_tolerance(summarize(stats)) == MIN_TOLERANCE
    assert fastest_check(0.999, 1.0).verdict == "FASTEST SAMPLE BELOW BOUND"
    assert fastest_check(1.0, 1.0).verdict == "fastest sample within bound"
    assert fastest_check(1.0, 1.0).margin == 0.0 and fastest_check(2.0, 1.0).over_bound == 2.0
    assert fastest_check(None, 1.0).verdict == fastest_check(1.0, 0.0).verdict == "no verdict: no samples"


# -- right-sizing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "objective, seconds, met",
    [
        (Objective("latency", 1e-3), 1e-3, True),
        (Objective("latency", 1e-3), 1.0001e-3, False),
        (Objective("throughput", 1000.0), 1e-3, True),
        (Objective("throughput", 1000.0), 1.0001e-3, False),
        (Objective("throughput", 1000.0), 0.0, False),
    ],
)
def test_objective_edges(objective, seconds, met):
    assert objective.met_by(seconds) is met


def test_objectives_refuse_nan_and_describe_themselves():
    with pytest.raises(ValueError, match="value"):
        Objective("latency", float("nan"))
    with pytest.raises(ValueError, match="'kind' must be in"):
        Objective("speed", 1.0)
    assert Objective("latency", 2e-3).describe() == "latency <= 2 ms"
    assert Objective("throughput", 50.0).describe() == "throughput >= 50 per second"


def test_rightsizing_verdicts_from_a_capture(home):
    from capture_factory import core

    from tensorforge.workloads.suite import resolve
    from tensorforge_measure.policy.rightsize import rightsize

    host = core()
    cap = make_capture({"gemm_tiny": samples(5e-6)}, home=home)
    workloads = resolve(host, ("gemm_tiny",))
    targets = [host.target("h200"), host.target("rtx3050-laptop")]
    meets = {
        r.target: r
        for r in rightsize(workloads, targets, host.mappings(), Objective("latency", 1e-5), [ev(cap)], {"h200": 3.6})
    }
    assert meets["h200"].verdict == MEETS and meets["rtx3050-laptop"].verdict == UNKNOWN
    assert meets["h200"].cost_per_million == pytest.approx(3.6 / 3600 * 5e-6 * 1e6)
    missed = {
        r.target: r for r in rightsize(workloads, targets, host.mappings(), Objective("latency", 4e-6), [ev(cap)], {})
    }
    assert missed["h200"].verdict == RULED_OUT and missed["h200"].reason.startswith("gemm_tiny: MEASURED p50 ")
    order = [
        r.target for r in rightsize(workloads, targets, host.mappings(), Objective("latency", 1e-5), [ev(cap)], {})
    ]
    assert order == ["h200", "rtx3050-laptop"]  # MEETS before UNKNOWN
    assert to_document  # the capture classes round-trip in the factory itself


# -- the gate's whole answer, field by field -------------------------------------------------------


def _expected_interval(base, cand, name, a, b, settings=T):
    """The bootstrap interval the gate must report: seeded from the two digests and the name,
    as docs/policy.md promises (so a verdict is reproducible)."""
    import hashlib

    from tensorforge_measure.policy.statistics import bootstrap_ratio_ci

    text = f"{base.capture.digest.value}:{cand.capture.digest.value}:{name}"
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return bootstrap_ratio_ci(a, b, resamples=settings.resamples, confidence=settings.confidence, seed=seed)


def test_the_whole_gate_result(home):
    import numpy as np

    from tensorforge_measure.policy.gate import WorkloadVerdict
    from tensorforge_measure.policy.statistics import mann_whitney

    a_tiny, b_tiny = samples(1e-3), samples(1.1e-3)
    a_big, b_big = samples(3e-3), samples(3e-3)
    base, cand = pair(
        home, {"gemm_tiny": a_tiny, "gemm_large_square": a_big}, {"gemm_tiny": b_tiny, "gemm_large_square": b_big}
    )
    result = gate(base, cand)
    expected = []
    # in suite order (the baseline capture's order), not sorted by name
    needed = T.threshold  # workloads of milliseconds: the run effect leaves the threshold in force
    for name, a, b in (("gemm_tiny", a_tiny, b_tiny), ("gemm_large_square", a_big, b_big)):
        low, high = _expected_interval(base, cand, name, a, b)
        p = mann_whitney(a, b)[1]
        ratio = float(np.median(b)) / float(np.median(a))
        change = f"{(ratio - 1) * 100:+.1f}% (CI {(low - 1) * 100:+.1f}%..{(high - 1) * 100:+.1f}%, p={p:.2g})"
        verdict = REGRESSION if name == "gemm_tiny" else PASS
        reason = f"slower by {change}" if verdict == REGRESSION else f"{change}: not significant"
        expected.append(
            WorkloadVerdict(
                name, verdict, reason, float(np.median(a)), float(np.median(b)), ratio, low, high, p, 25, 25, needed
            )
        )
    assert result.verdicts == tuple(expected)
    assert result.label == "POLICY" and result.settings == T and result.exit_status == EXIT_REGRESSION
    assert result.summary == "1 REGRESSION, 1 PASS"
    for side, evidence, path in ((result.baseline, base, "a.json"), (result.candidate, cand, "b.json")):
        assert side == {
            "path": path,
            "digest": evidence.capture.digest.value,
            "origin": "unsigned",
            "origin_detail": "unsigned: nothing shows who produced it",
            "device": "NVIDIA H200",
            "fingerprint": "synthetic-1",
            "target": "h200",
            "started_at": evidence.capture.provenance.started_at,
        }


def test_the_interval_depends_on_both_digests_and_the_name(home):
    from tensorforge_measure.policy.gate import _seed

    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)})
    seeds = {_seed(base, cand, "w"), _seed(cand, base, "w"), _seed(base, cand, "v"), _seed(base, base, "w")}
    assert len(seeds) == 4
    assert all(0 <= s < 2**64 for s in seeds)


def test_flag_differences_are_counted_over_both_sides(home):
    from tensorforge_measure.policy.gate import _flag_difference

    assert _flag_difference({"a": 1}, {"a": 1}) is None
    assert _flag_difference({"a": 1}, {}) == "framework flags differ: a 1 -> None"
    assert _flag_difference({}, {"b": True}) == "framework flags differ: b None -> True"
    assert _flag_difference({"a": 1, "b": 2}, {"a": 2, "b": 3}) == "framework flags differ: a 1 -> 2 (+1 more)"
    assert _flag_difference({"a": 1, "b": 2, "c": 3}, {}) == "framework flags differ: a 1 -> None (+2 more)"


def test_a_workload_defined_differently_under_one_name(home):
    base, cand = pair(
        home,
        {"gemm_tiny": samples(1e-3), "gemm_large_square": samples(3e-3)},
        {"gemm_tiny": samples(1e-3), "gemm_large_square": samples(3e-3)},
    )
    workloads = tuple(
        attrs.evolve(w, spec="gemm:m=1,n=1,k=1,dtype=bf16") if w.name == "gemm_tiny" else w
        for w in cand.capture.predicted.analytical.workloads
    )
    first = tuple(
        attrs.evolve(w, spec="gemm:m=2,n=2,k=2,dtype=bf16") if w.name == "gemm_large_square" else w
        for w in cand.capture.predicted.analytical.workloads
    )
    pred = attrs.evolve(
        cand.capture.predicted, analytical=attrs.evolve(cand.capture.predicted.analytical, workloads=first)
    )
    both = verdicts(gate(base, ev(attrs.evolve(cand.capture, predicted=pred))))
    assert both["gemm_large_square"].verdict == NO_VERDICT and both["gemm_tiny"].verdict == PASS  # judged after it
    pred = attrs.evolve(
        cand.capture.predicted, analytical=attrs.evolve(cand.capture.predicted.analytical, workloads=workloads)
    )
    v = verdicts(gate(base, ev(attrs.evolve(cand.capture, predicted=pred))))
    assert v["gemm_tiny"] == attrs.evolve(
        v["gemm_tiny"],
        verdict=NO_VERDICT,
        reason="workload definition differs: gemm:m=64,n=64,k=64,dtype=bf16 vs gemm:m=1,n=1,k=1,dtype=bf16",
    )
    assert v["gemm_large_square"].verdict == PASS  # the next workload is still judged


def exact_spread(rel, n=41, p50=10.0):
    half = rel * p50 / 2
    quarter = (n - 1) // 4
    return (p50 - half,) * (quarter + 1) + (p50,) * (n - 2 * quarter - 2) + (p50 + half,) * (quarter + 1)


def test_spread_exactly_at_the_limit_is_judged(home):
    base, cand = pair(home, {"gemm_tiny": exact_spread(0.10)}, {"gemm_tiny": exact_spread(0.10)})
    assert verdicts(gate(base, cand))["gemm_tiny"].verdict == PASS
    wide, cand = pair(home, {"gemm_tiny": exact_spread(0.12)}, {"gemm_tiny": exact_spread(0.10)})
    assert (
        verdicts(gate(wide, cand))["gemm_tiny"].reason == "spread too wide in the baseline (relative IQR 12.0% > 10%)"
    )
    base, wide = pair(home, {"gemm_tiny": exact_spread(0.10)}, {"gemm_tiny": exact_spread(0.15)})
    assert (
        verdicts(gate(base, wide))["gemm_tiny"].reason == "spread too wide in the candidate (relative IQR 15.0% > 10%)"
    )
    assert verdicts(gate(base, wide, GateSettings(max_spread=0.2)))["gemm_tiny"].verdict == PASS
    base, wider = pair(home, {"gemm_tiny": exact_spread(0.10)}, {"gemm_tiny": exact_spread(0.95)})
    assert verdicts(gate(base, wider, GateSettings(max_spread=0.9)))["gemm_tiny"].reason == (
        "spread too wide in the candidate (relative IQR 95.0% > 90%)"
    )


def test_zero_second_samples_and_missing_rows(home):
    zeros = (0.0,) * 20
    base, cand = pair(home, {"gemm_tiny": zeros}, {"gemm_tiny": zeros})
    v = verdicts(gate(base, cand))["gemm_tiny"]
    assert v.reason == "p50 is 0 s in the baseline (below timer resolution): no ratio of medians to judge"
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": zeros})
    assert verdicts(gate(base, cand))["gemm_tiny"].reason.startswith("p50 is 0 s in the candidate")
    m = base.capture.measured
    failed = attrs.evolve(
        m,
        workloads={
            "gemm_tiny": __import__(
                "tensorforge_measure.capture.sections.measured", fromlist=["FailedMeasurement"]
            ).FailedMeasurement(math_mode="bf16", reason="CUDA out of memory: boom")
        },
    )
    v = verdicts(gate(ev(attrs.evolve(base.capture, measured=failed)), cand))["gemm_tiny"]
    assert v.reason == "baseline measurement failed: CUDA out of memory: boom"
    good, other = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)})
    om = other.capture.measured
    emptied = attrs.evolve(om, workloads={"gemm_tiny": attrs.evolve(om.workloads["gemm_tiny"], samples_s=())})
    v = verdicts(gate(good, ev(attrs.evolve(other.capture, measured=emptied))))["gemm_tiny"]
    assert v.reason == "no raw samples in the candidate"


def test_hardware_slowdown_in_either_window_withholds_the_verdict(home):
    nvml = {
        "gemm_tiny": {
            "summary": {"reason_fractions": [["SwPowerCap", 0.9], ["HwSlowdown", 0.9], ["SwThermalSlowdown", 0.5]]}
        }
    }
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)}, windows=nvml)
    assert verdicts(gate(base, cand))["gemm_tiny"].reason == (
        "telemetry shows HwSlowdown in the baseline's window (90% of samples)"
    )
    capped = {"gemm_tiny": {"summary": {"reason_fractions": [["SwPowerCap", 0.9]]}}}
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)}, windows=capped)
    assert verdicts(gate(base, cand))["gemm_tiny"].verdict == PASS  # the power cap alone does not block


def test_without_calibration_or_measurement_the_gate_says_what_is_missing(home, tmp_path):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1.1e-3)}, calibrate=False)
    assert base.capture.predicted.calibrated is None
    assert verdicts(gate(base, cand))["gemm_tiny"].verdict == REGRESSION  # no bound to violate: still judged
    from tensorforge_measure.capture.model import Unavailable

    none = attrs.evolve(cand.capture, measured=Unavailable(label="MEASURED", reason="no CUDA device"))
    result = gate(base, ev(none))
    assert [(v.verdict, v.reason) for v in result.verdicts] == [
        (NO_VERDICT, "candidate has no measurements: no CUDA device")
    ]
    result = gate(ev(none), base)
    assert result.verdicts[0].reason == "baseline has no measurements: no CUDA device"
    assert result.baseline["device"] is None and result.baseline["fingerprint"] is None


def test_the_seed_is_the_first_eight_bytes_little_endian(home):
    import hashlib

    from tensorforge_measure.policy.gate import _seed

    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)})
    text = f"{base.capture.digest.value}:{cand.capture.digest.value}:gemm_tiny"
    assert _seed(base, cand, "gemm_tiny") == int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def varied(center, n=30, seed=1):
    import numpy as np

    return tuple(float(x) for x in center * (1 + 0.01 * np.random.default_rng(seed).standard_normal(n)))


def test_the_reported_interval_is_the_seeded_one(home):
    a, b = varied(1e-3, seed=1), varied(1.2e-3, seed=2)
    base, cand = pair(home, {"gemm_tiny": a}, {"gemm_tiny": b})
    v = verdicts(gate(base, cand))["gemm_tiny"]
    assert (v.ci_low, v.ci_high) == _expected_interval(base, cand, "gemm_tiny", a, b)
    assert v.verdict == REGRESSION


def test_a_significant_improvement_below_the_threshold_passes_and_says_so(home):
    base, cand = pair(home, {"gemm_tiny": varied(1e-3, seed=3)}, {"gemm_tiny": varied(0.98e-3, seed=4)})
    v = verdicts(gate(base, cand))["gemm_tiny"]
    assert v.verdict == PASS and v.ci_high < 1.0
    assert v.reason.endswith(": significant but below the 5% effect threshold")


def test_timings_of_different_regimes_or_modes_are_not_compared(home):
    base, cand = pair(home, {"gemm_tiny": samples(1e-3)}, {"gemm_tiny": samples(1e-3)})
    m = cand.capture.measured
    graph = attrs.evolve(
        m, workloads={"gemm_tiny": attrs.evolve(m.workloads["gemm_tiny"], regime="burst", mode="graph")}
    )
    v = verdicts(gate(base, ev(attrs.evolve(cand.capture, measured=graph))))["gemm_tiny"]
    assert v.reason == "measured differently: burst eager in the baseline, burst graph in the candidate"
    sustained = attrs.evolve(m, workloads={"gemm_tiny": attrs.evolve(m.workloads["gemm_tiny"], regime="sustained")})
    v = verdicts(gate(ev(attrs.evolve(cand.capture, measured=sustained)), base))["gemm_tiny"]
    assert v.reason == "measured differently: sustained eager in the baseline, burst eager in the candidate"
    same = attrs.evolve(
        m, workloads={"gemm_tiny": attrs.evolve(m.workloads["gemm_tiny"], regime="burst", mode="eager")}
    )
    assert verdicts(gate(base, ev(attrs.evolve(cand.capture, measured=same))))["gemm_tiny"].verdict == PASS
