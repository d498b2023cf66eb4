"""`verify`'s decisions at their edges, in-process: integrity (the whole digest, the digest record,
the canonical bytes), the recomputation of every derived figure, and the exact words of each
finding. Captures come from capture_factory; edits are made on the typed capture (so each test
changes exactly one thing) and the recomputation is asked directly."""

import math

import attrs
import pytest
from capture_factory import make_capture, samples
from golden import GOLDEN, H200_ENERGY_RUN, ids

from tensorforge.files.serialize import canonical_json
from tensorforge_measure.capture.convert import to_document
from tensorforge_measure.capture.integrity import DIGEST_OVER, content_digest, digest_record, integrity
from tensorforge_measure.capture.model import Unavailable
from tensorforge_measure.capture.recompute import _differences, close, comparison_problems, measured_problems
from tensorforge_measure.capture.sections.measured import FailedMeasurement

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("clean_plugin_env")]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


# -- integrity ---------------------------------------------------------------------------------------


def sealed_doc(**extra):
    body = {"a": 1, "b": [1.5, "x"], **extra}
    return {**body, "digest": digest_record(body)}


def test_a_sealed_canonical_document_passes_with_both_checks():
    doc = sealed_doc()
    actual = content_digest(doc)
    assert digest_record(doc) == {"algorithm": "sha256", "over": DIGEST_OVER, "value": actual}
    assert DIGEST_OVER == "canonical JSON without 'digest'"
    assert integrity(doc, canonical_json(doc)) == (
        [],
        [f"digest sha256 {actual[:16]}... matches the content", "file is byte-for-byte canonical"],
        actual,
    )
    # the hash is of the UTF-8 canonical JSON without the record, as documented
    import hashlib

    assert actual == hashlib.sha256(canonical_json({"a": 1, "b": [1.5, "x"]}).encode("utf-8")).hexdigest()
    with_signature = {**doc, "digest": {**doc["digest"], "signature": {"any": "record"}}}
    assert integrity(with_signature, canonical_json(with_signature))[0] == []  # the signature is outside


@pytest.mark.parametrize(
    "digest, shown",
    [
        (None, "none"),
        ("not a table", "none"),
        ({"value": 7}, "none"),
        ({"value": ""}, "none"),
        ({"value": "0123456789abcdef0123"}, "0123456789abcdef"),
    ],
    ids=["absent", "a string", "a number", "empty", "another value"],
)
def test_a_wrong_or_malformed_digest_is_a_mismatch(digest, shown):
    doc = {"a": 1, "digest": digest}
    actual = content_digest(doc)
    problems, checks, got = integrity(doc, canonical_json(doc))
    assert problems == [f"digest mismatch: recorded {shown}..., content hashes to {actual[:16]}..."]
    assert checks == ["file is byte-for-byte canonical"] and got == actual


def test_the_last_hex_digit_counts():
    doc = sealed_doc()
    value = doc["digest"]["value"]
    doc["digest"]["value"] = value[:-1] + ("0" if value[-1] != "0" else "1")
    assert integrity(doc, canonical_json(doc))[0][0].startswith("digest mismatch")


@pytest.mark.parametrize(
    "field, value", [("algorithm", "SHA256"), ("algorithm", "md5"), ("over", "everything"), ("extra", 1)]
)
def test_an_edited_digest_record_is_named(field, value):
    doc = sealed_doc()
    doc["digest"][field] = value
    assert integrity(doc, canonical_json(doc))[0] == [
        "digest record is not the one TensorForge writes (algorithm or 'over' edited?)"
    ]


def test_text_that_is_not_the_canonical_serialisation_is_named():
    doc = sealed_doc()
    problems, checks, _ = integrity(doc, canonical_json(doc) + " ")
    assert problems == ["file bytes are not the canonical serialisation of its content (edited by hand?)"]
    assert checks == [f"digest sha256 {content_digest(doc)[:16]}... matches the content"]


# -- what counts as the same figure -----------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, same",
    [
        (1.0, 1.0 + 1e-12, True),
        (1.0, 1.0 + 1e-8, False),
        (0.0, 1e-16, True),
        (0.0, 1e-14, False),
        (1e-20, 2e-20, True),
        (math.inf, math.inf, True),
        (math.nan, math.nan, True),
        (math.nan, 1.0, False),
        (1.0, math.nan, False),
        (True, 1, False),
        (1, True, False),
        (True, True, True),
        (False, False, True),
        ({"a": 1.0}, {"a": 1.0 + 1e-12}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, [1], False),
        ([1.0, 2.0], [1.0, 2.0 + 1e-12], True),
        ([1, 2], [1, 2, 3], False),
        ([1, 2], [1, 3], False),
        ([1], {"a": 1}, False),
        ("x", "x", True),
        ("x", "y", False),
        (None, None, True),
        (None, 0.0, False),
        ("1", 1, False),
    ],
)
def test_close(a, b, same):
    assert close(a, b) is same


@pytest.mark.parametrize(
    "recorded, expected, found",
    [
        ({"a": 1, "b": {"c": 2}}, {"a": 1, "b": {"c": 2}}, []),
        ({"a": 1}, {"a": 2}, ["a"]),
        ({"b": {"c": 2, "d": 3}}, {"b": {"c": 2, "d": 4}}, ["b.d"]),
        ({"a": None}, {}, []),  # an older capture's empty field is not demanded
        ({"a": 1}, {}, ["a"]),  # a value the recomputation does not have is a difference
        ({}, {"a": 1}, []),  # a field the older capture lacks is not demanded
        ({"b": {"c": 1}}, {"b": 5}, ["b"]),
        ({"b": 5}, {"b": {"c": 1}}, ["b"]),
    ],
)
def test_differences(recorded, expected, found):
    assert _differences(recorded, expected) == found


# -- the recomputation --------------------------------------------------------------------------------


def test_an_untouched_capture_has_nothing_to_report_and_counts_its_workloads(home):
    cap = make_capture({"gemm_tiny": samples(1e-3), "gemm_large_square": samples(3e-3)}, home=home)
    assert measured_problems(cap) == ([], 2)
    assert comparison_problems(cap) == ([], 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"calibrate": False},  # no calibrated bound
        {
            "windows": {
                "gemm_tiny": {"summary": {"other_processes_pct": 50.0, "reason_fractions": [["HwSlowdown", 0.5]]}}
            }
        },
        {"device_name": "NVIDIA GeForce RTX 3050 Laptop GPU"},  # measured on another target
    ],
    ids=["without calibration", "with telemetry", "on another device"],
)
def test_captures_of_every_shape_recompute_cleanly(home, kwargs):
    cap = make_capture({"gemm_tiny": samples(1e-3), "gemm_large_square": samples(3e-3)}, home=home, **kwargs)
    assert measured_problems(cap) == ([], 2)
    assert comparison_problems(cap) == ([], 2)


def test_zero_second_samples_have_no_throughput_and_recompute_cleanly(home):
    cap = make_capture({"gemm_tiny": (0.0,) * 12}, home=home)
    assert cap.measured.workloads["gemm_tiny"].throughput_flops_per_s is None
    assert measured_problems(cap) == ([], 1) and comparison_problems(cap) == ([], 1)


def test_without_measurements_nothing_is_recomputed_but_the_rows(home):
    cap = make_capture({"gemm_tiny": samples(1e-3)}, home=home)
    none = attrs.evolve(cap, measured=Unavailable(label="MEASURED", reason="no CUDA device"))
    assert measured_problems(none) == ([], 0)
    assert comparison_problems(attrs.evolve(none, comparison=None)) == ([], 0)


def edit_measurement(cap, name, **changes):
    m = cap.measured
    return attrs.evolve(
        cap, measured=attrs.evolve(m, workloads={**m.workloads, name: attrs.evolve(m.workloads[name], **changes)})
    )


def test_each_statistic_and_throughput_is_checked_by_name(home):
    cap = make_capture({"gemm_large_square": samples(3e-3), "gemm_tiny": samples(1e-3)}, home=home)
    m = cap.measured.workloads["gemm_tiny"]
    for field in attrs.fields(type(m.stats)):
        wrong = getattr(m.stats, field.name) + 1
        problems, count = measured_problems(
            edit_measurement(cap, "gemm_tiny", stats=attrs.evolve(m.stats, **{field.name: wrong}))
        )
        assert count == 2
        assert problems == [
            f"gemm_tiny: recorded {field.name} {wrong} does not match its raw samples ({getattr(m.stats, field.name)})"
        ], field.name
    p50 = m.stats.p50
    flops = cap.predicted.analytical.workload("gemm_tiny").flops
    byts = cap.predicted.analytical.workload("gemm_tiny").compulsory_bytes
    assert measured_problems(edit_measurement(cap, "gemm_tiny", throughput_flops_per_s=1.0))[0] == [
        f"gemm_tiny: recorded throughput (FLOP/s) 1.0 is not the predicted work over the measured p50 ({flops / p50})"
    ]
    assert measured_problems(edit_measurement(cap, "gemm_tiny", throughput_bytes_per_s=2.0))[0] == [
        f"gemm_tiny: recorded throughput (bytes/s) 2.0 is not the predicted work over the measured p50 ({byts / p50})"
    ]


def test_a_failed_workload_is_skipped_and_the_next_still_checked(home):
    cap = make_capture({"gemm_large_square": samples(3e-3), "gemm_tiny": samples(1e-3)}, home=home)
    failed = attrs.evolve(
        cap,
        measured=attrs.evolve(
            cap.measured,
            workloads={
                **cap.measured.workloads,
                "gemm_large_square": FailedMeasurement(math_mode="bf16", reason="boom"),
            },
        ),
    )
    m = cap.measured.workloads["gemm_tiny"]
    problems, count = measured_problems(edit_measurement(failed, "gemm_tiny", stats=attrs.evolve(m.stats, p10=0.0)))
    assert count == 1 and problems == [f"gemm_tiny: recorded p10 0.0 does not match its raw samples ({m.stats.p10})"]
    no_samples = edit_measurement(cap, "gemm_large_square", samples_s=())
    assert measured_problems(no_samples) == ([], 1)


def edit_row(cap, name, **changes):
    c = cap.comparison
    return attrs.evolve(
        cap, comparison=attrs.evolve(c, workloads={**c.workloads, name: attrs.evolve(c.workloads[name], **changes)})
    )


def test_each_comparison_finding_word_for_word(home):
    cap = make_capture({"gemm_large_square": samples(3e-3), "gemm_tiny": samples(1e-3)}, home=home)
    row = cap.comparison.workloads["gemm_tiny"]
    tail = "does not follow from PREDICTED, MEASURED and DIAGNOSTIC"
    assert comparison_problems(edit_row(cap, "gemm_tiny", measured_p50_s=1.0)) == (
        [f"gemm_tiny: recorded comparison measured_p50_s {tail}"],
        2,
    )
    assert comparison_problems(
        edit_row(cap, "gemm_tiny", bound_check=attrs.evolve(row.bound_check, verdict="BOUND VIOLATION", tolerance=0.5))
    )[0] == [
        f"gemm_tiny: recorded comparison bound_check.tolerance {tail}",
        f"gemm_tiny: recorded comparison bound_check.verdict {tail}",
        "recorded bound violations [] are not the rows' (['gemm_tiny'])",
        f"gemm_tiny: POLICY's bound check {row.bound_check.verdict!r} is not the comparison's",
    ]
    c = cap.comparison
    assert comparison_problems(attrs.evolve(cap, comparison=attrs.evolve(c, bound_violations=("gemm_tiny",))))[0] == [
        "recorded bound violations ['gemm_tiny'] are not the rows' ([])"
    ]
    fewer = attrs.evolve(cap, comparison=attrs.evolve(c, workloads={"gemm_tiny": row}))
    assert comparison_problems(fewer) == (
        [
            "comparison rows do not match the predicted workloads",
            "gemm_large_square: POLICY's bound check 'within bound' is not the comparison's",
        ],
        1,
    )
    policy = attrs.evolve(
        cap.policy,
        bound_checks={
            **cap.policy.bound_checks,
            "gemm_tiny": attrs.evolve(cap.policy.bound_checks["gemm_tiny"], verdict="BOUND VIOLATION"),
        },
    )
    assert comparison_problems(attrs.evolve(cap, policy=policy))[0] == [
        "gemm_tiny: POLICY's bound check 'BOUND VIOLATION' is not the comparison's"
    ]
    stray = attrs.evolve(
        cap.policy, bound_checks={**cap.policy.bound_checks, "other": cap.policy.bound_checks["gemm_tiny"]}
    )
    assert comparison_problems(attrs.evolve(cap, policy=stray))[0] == [
        f"other: POLICY's bound check {cap.policy.bound_checks['gemm_tiny'].verdict!r} is not the comparison's"
    ]


def test_same_device_is_checked_both_ways(home):
    cap = make_capture({"gemm_tiny": samples(1e-3)}, home=home)
    claims_other = attrs.evolve(cap, comparison=attrs.evolve(cap.comparison, same_device=False))
    assert comparison_problems(claims_other)[0][0] == (
        "comparison says the measured device is not the predicted target; the target description says otherwise"
    )
    other = make_capture({"gemm_tiny": samples(1e-3)}, home=home, device_name="NVIDIA GeForce RTX 3050 Laptop GPU")
    claims_same = attrs.evolve(other, comparison=attrs.evolve(other.comparison, same_device=True))
    assert comparison_problems(claims_same)[0][0] == (
        "comparison says the measured device is the predicted target; the target description says otherwise"
    )
    no_description = attrs.evolve(claims_same, target_description=None)  # an older capture: not checked
    assert not any(p.startswith("comparison says") for p in comparison_problems(no_description)[0])


def test_a_recorded_violation_follows_from_samples_under_the_bound(home):
    cap = make_capture({"gemm_large_square": samples(1e-3)}, home=home)
    bound = cap.comparison.workloads["gemm_large_square"].predicted_calibrated_s
    under = make_capture({"gemm_large_square": samples(bound * 0.8)}, home=home)
    assert under.comparison.bound_violations == ("gemm_large_square",)
    assert comparison_problems(under) == ([], 1)
    assert to_document(under.comparison.workloads["gemm_large_square"].bound_check)["verdict"] == "BOUND VIOLATION"


# -- origin: keys and signatures, by the checking module itself -----------------------------------------


def test_key_lines_in_every_spelling(tmp_path):
    from tensorforge.errors import TensorForgeError
    from tensorforge_measure.capture.origin import _raw_key, parse_key
    from tensorforge_measure.capture.signing import sign_digest

    sig = sign_digest("ab" * 32, tmp_path)
    for line in (
        sig.public_key,
        f"{sig.public_key} my laptop",
        f"ed25519 {sig.public_key}",
        f"ed25519 {sig.public_key} my laptop",
        f"  {sig.public_key}  ",
    ):
        assert parse_key(line, "x") == sig.fingerprint, line
    assert _raw_key("") is None and _raw_key("   ") is None and _raw_key("ed25519") is None
    assert _raw_key("AAAA") is None  # 3 bytes: not an Ed25519 key
    assert _raw_key("A" * 44) is None  # 33 bytes
    long = "x" * 100
    with pytest.raises(TensorForgeError) as info:
        parse_key(long, "--trusted-key")
    assert str(info.value) == (
        f"--trusted-key: expected a SHA256:... fingerprint or an ed25519 public key, got {long[:60]!r}"
    )
    with pytest.raises(TensorForgeError) as info:
        parse_key("SHA256:" + long, "file f, line 3")
    assert str(info.value) == f"file f, line 3: {('SHA256:' + long)[:60]!r} is not a SHA256 fingerprint"


def test_the_fastest_sample_is_the_samples_minimum_and_the_ratio_is_over_the_bound():
    from tensorforge_measure.capture.sections.measured import Measurement
    from tensorforge_measure.compare.workload import fastest_check, fastest_sample
    from tensorforge_measure.measure.stats import summarize

    stats = attrs.evolve(summarize([2.0, 3.0]), min=9.0)  # a summary that disagrees with the samples
    m = Measurement(
        math_mode="fp32",
        samples_s=(2.0, 3.0),
        stats=stats,
        stop_reason="stable",
        warmup_iters=0,
        flush_bytes=0,
        peak_memory_bytes=None,
        framework_flags={},
        throughput_flops_per_s=None,
        throughput_bytes_per_s=None,
    )
    assert fastest_sample(m) == 2.0
    check = fastest_check(4.0, 2.0)
    assert (check.over_bound, check.margin, check.verdict) == (2.0, 1.0, "fastest sample within bound")


def test_more_edges_of_the_recomputation(home):
    assert close([1], 1) is False and close(1, [1]) is False and close({"a": 1}, 1) is False
    cap = make_capture({"gemm_tiny": samples(1e-3)}, home=home)
    # a measured row without a prediction: named by verify's stray check, never a crash here
    stray = attrs.evolve(
        cap,
        measured=attrs.evolve(
            cap.measured, workloads={**cap.measured.workloads, "stray": cap.measured.workloads["gemm_tiny"]}
        ),
    )
    assert measured_problems(stray) == ([], 2)
    zero = make_capture({"gemm_tiny": (0.0,) * 12}, home=home)
    forged = edit_measurement(zero, "gemm_tiny", throughput_flops_per_s=1.0)
    assert measured_problems(forged)[0] == ["gemm_tiny: records a throughput although its measured p50 is 0 s"]
    # without measurements the recorded rows no longer follow: named, never a crash
    none = attrs.evolve(cap, measured=Unavailable(label="MEASURED", reason="no CUDA device"))
    problems, count = comparison_problems(none)
    assert count == 1 and problems[0].startswith("gemm_tiny: recorded comparison ")


def test_the_fallback_note_of_a_capture_without_calibration(home):
    from tensorforge_measure.compare.row import comparison_row

    cap = make_capture({"gemm_tiny": samples(1e-3)}, home=home, calibrate=False)
    pred = attrs.evolve(cap.predicted, calibrated_note=None)
    w = pred.analytical.workload("gemm_tiny")
    row = comparison_row(
        w, None, None, cap.measured.workloads["gemm_tiny"], True, None, "no calibrated bound", None, None
    )
    assert row.bound_check.verdict == "no verdict: no calibrated bound"
    older = attrs.evolve(
        cap,
        predicted=pred,
        comparison=attrs.evolve(cap.comparison, workloads={"gemm_tiny": row}),
        policy=attrs.evolve(
            cap.policy,
            bound_checks={
                "gemm_tiny": attrs.evolve(cap.policy.bound_checks["gemm_tiny"], verdict=row.bound_check.verdict)
            },
        ),
    )
    assert comparison_problems(older) == ([], 1)


def test_a_row_follows_from_the_samples_not_the_recorded_summary():
    from types import SimpleNamespace as NS

    from tensorforge_measure.capture.sections.measured import Measurement
    from tensorforge_measure.compare.workload import compare_workload
    from tensorforge_measure.measure.stats import summarize

    stats = attrs.evolve(summarize([0.2, 0.4, 0.6]), p50=9.0)  # a summary that lies about the p50
    m = Measurement(
        math_mode="fp32",
        samples_s=(0.2, 0.4, 0.6),
        stats=stats,
        stop_reason="stable",
        warmup_iters=0,
        flush_bytes=0,
        peak_memory_bytes=None,
        framework_flags={},
        throughput_flops_per_s=None,
        throughput_bytes_per_s=None,
    )
    row = compare_workload(
        "w", NS(latency_s=0.2, bottleneck="compute"), NS(latency_s=0.3, bottleneck="compute"), m, True, None, ""
    )
    assert row.measured_p50_s == 0.4 and row.ape_analytical == pytest.approx(0.5)
    assert row.ape_calibrated == pytest.approx(0.25)
    bare = compare_workload("w", None, NS(latency_s=0.3, bottleneck="compute"), m, True, None, "")
    assert bare.ape_analytical is None and bare.ape_calibrated == pytest.approx(0.25)


@pytest.mark.parametrize("path", GOLDEN, ids=ids(GOLDEN))
def test_every_golden_capture_recomputes_cleanly(path):
    """Real captures of every shape (regimes, sustained bounds, estimates, several GPUs, energy):
    every derived figure follows from their data by the run's own functions."""
    from tensorforge_measure.capture.document import read_capture

    capture = read_capture(path)
    assert measured_problems(capture)[0] == []
    assert comparison_problems(capture)[0] == []


def test_the_estimate_beside_the_bound_in_each_case():
    from types import SimpleNamespace as NS

    from tensorforge_measure.compare.workload import compare_workload

    est = NS(eager_s=1.5, device_s=1.2)
    with_estimate = NS(latency_s=1.0, bottleneck="compute", estimate=est)
    without = NS(latency_s=1.0, bottleneck="compute")
    # the calibrated prediction carries none: the analytical one's estimate is shown
    row = compare_workload("w", with_estimate, without, None, True, None, "")
    assert (row.predicted_estimate_s, row.estimate_regime) == (1.5, "eager")  # not measured: eager
    assert compare_workload("w", without, without, None, True, None, "").predicted_estimate_s is None


def test_a_sustained_regime_without_its_bound_says_why(home):
    """A capture whose sustained timings have no sustained-regime bound (the calibration lacked
    those ceilings): its rows say why, with the capture's own note, and that recomputes."""
    from tensorforge_measure.capture.document import read_capture
    from tensorforge_measure.capture.sections.diagnostic import Diagnostic
    from tensorforge_measure.compare.row import comparison_row

    cap = read_capture(H200_ENERGY_RUN)
    note = "the calibration has no sustained-regime ceilings (recalibrate)"
    pred = attrs.evolve(cap.predicted, calibrated_sustained=None, calibrated_sustained_note=note)
    windows = cap.diagnostic.windows if isinstance(cap.diagnostic, Diagnostic) else {}
    rows = {}
    for w in pred.analytical.workloads:
        cal = pred.calibrated.workload(w.name) if pred.calibrated else None
        rows[w.name] = comparison_row(
            w,
            cal,
            None,
            cap.measured.workloads.get(w.name),
            cap.comparison.same_device,
            cap.comparison.device_note,
            pred.calibrated_note or "no calibrated bound",
            note,
            windows.get(w.name),
            pred.energy.workloads.get(w.name) if pred.energy else None,
        )
    sustained = [r.regimes["sustained"] for r in rows.values() if r.regimes and "sustained" in r.regimes]
    assert sustained and all(s.bound_check.verdict == f"no verdict: {note}" for s in sustained)
    edited = attrs.evolve(cap, predicted=pred, comparison=attrs.evolve(cap.comparison, workloads=rows))
    assert comparison_problems(edited)[0] == []


def test_the_regime_and_operator_violation_lists_are_named_when_edited():
    from tensorforge_measure.capture.document import read_capture

    cap = read_capture(H200_ENERGY_RUN)
    c = cap.comparison
    regimes = attrs.evolve(cap, comparison=attrs.evolve(c, regime_bound_violations=("x (burst graph)",)))
    assert comparison_problems(regimes)[0] == [
        f"recorded regime bound violations ['x (burst graph)'] are not the rows' ({list(c.regime_bound_violations)})"
    ]
    operators = attrs.evolve(cap, comparison=attrs.evolve(c, operator_bound_violations=("x: y",)))
    assert comparison_problems(operators)[0] == [
        f"recorded operator bound violations ['x: y'] are not the rows' ({list(c.operator_bound_violations)})"
    ]


def test_the_energy_floor_violation_list_is_recomputed_word_for_word(home):
    specs = {"gemm_large_square": samples(3e-3), "gemm_tiny": samples(1e-3)}
    # 0.01 J is below the large GEMM's energy floor, 1 J is above the tiny one's
    low = make_capture(specs, home=home, energy={"gemm_large_square": 0.01, "gemm_tiny": 1.0})
    c = low.comparison
    assert c.energy_floor_violations == ("gemm_large_square",)
    assert comparison_problems(low) == ([], 2)
    hidden = attrs.evolve(low, comparison=attrs.evolve(c, energy_floor_violations=()))
    assert comparison_problems(hidden)[0] == [
        "recorded energy floor violations [] are not the rows' (['gemm_large_square'])"
    ]
    invented = attrs.evolve(low, comparison=attrs.evolve(c, energy_floor_violations=("gemm_large_square", "gemm_tiny")))
    assert comparison_problems(invented)[0] == [
        "recorded energy floor violations ['gemm_large_square', 'gemm_tiny'] are not the rows' (['gemm_large_square'])"
    ]
    # a capture without energy rows has nothing to violate: a recorded list must then be empty
    plain = make_capture(specs, home=home)
    assert plain.comparison.energy_floor_violations in (None, ())
    claimed = attrs.evolve(plain, comparison=attrs.evolve(plain.comparison, energy_floor_violations=("gemm_tiny",)))
    assert comparison_problems(claimed)[0] == ["recorded energy floor violations ['gemm_tiny'] are not the rows' ([])"]
    assert (
        comparison_problems(attrs.evolve(plain, comparison=attrs.evolve(plain.comparison, energy_floor_violations=())))[
            0
        ]
        == []
    )
