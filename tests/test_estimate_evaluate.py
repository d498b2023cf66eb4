"""`tensorforge evaluate`: per-class scores of bound and estimate from a capture, on the
golden estimate evaluations (H200 and the host CPU) and on bad input."""

import json

from golden import H200_ESTIMATE_EVAL, HOST_CPU_ESTIMATE_EVAL, load_json
import pytest
from click.testing import CliRunner

from tensorforge.cli.main import make_cli
from tensorforge.estimate.evaluation import Row, evaluate


@pytest.fixture(scope="module")
def cli():
    return make_cli()


def test_scores_follow_from_the_rows():
    rows = [
        Row("a", "gemm-large", "eager", 1.0, 0.9, 1.1, {"compute_efficiency": 0.2}),
        Row("b", "gemm-large", "eager", 2.0, 2.1, 2.2, {"compute_efficiency": 0.1}),
    ]
    ev = evaluate(rows)
    (large,) = ev.classes
    assert large.n == 2 and large.violations == 1  # b measured 2.0 under its 2.1 bound
    assert large.estimate_median == pytest.approx(0.1)
    assert large.bound_median == pytest.approx((0.1 + 0.05) / 2)
    # the gap (measured - bound) is 0.1 - 0.1 = 0: no share can be claimed
    assert large.term_shares == {}
    assert ev.overall.n == 2 and ev.families[0].name == "large GEMMs"


def test_the_golden_h200_capture(cli):
    result = CliRunner().invoke(cli, ["evaluate", str(H200_ESTIMATE_EVAL), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    classes = {c["name"]: c for c in data["classes"]}
    measured = load_json(H200_ESTIMATE_EVAL)["measured"]["workloads"].values()
    assert sum(c["n"] for c in classes.values()) == sum(w.get("status") == "ok" for w in measured) > 0
    assert all(c["estimate_below_bound"] == 0 for c in classes.values())
    assert {"gemm-large", "conv-stem", "transformer-decode", "attention-prefill"} <= set(classes)
    assert "calibrated on NVIDIA H200" in data["source"]


def test_the_golden_host_cpu_capture_has_the_same_table(cli):
    result = CliRunner().invoke(cli, ["evaluate", str(HOST_CPU_ESTIMATE_EVAL), "--rows"])
    assert result.exit_code == 0, result.output
    assert "ESTIMATE APE med" in result.stdout and "transformer-decode" in result.stdout
    assert "calibrated on AMD EPYC" in result.stdout


def test_bad_input_is_one_line(cli, tmp_path):
    missing = tmp_path / "nope.json"
    result = CliRunner().invoke(cli, ["evaluate", str(missing)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "nope.json" in result.stderr
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"predicted": {}, "measured": {}, "comparison": {}}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["evaluate", str(empty)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "empty.json" in result.stderr


def test_predict_with_a_capture_s_ceilings_uses_its_calibrated_estimate(cli):
    capture = str(H200_ESTIMATE_EVAL)
    result = CliRunner().invoke(cli, ["predict", "-t", "h200", "-w", "gemm_tiny", "--ceilings", capture, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bound"] == "calibrated" and data["estimate_basis_kind"] == "calibrated"
    assert "NVIDIA H200" in data["estimate_basis"]
    # fitted for h200: another target keeps its own basis
    other = CliRunner().invoke(
        cli, ["predict", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--ceilings", capture, "--force-ceilings", "--json"]
    )
    assert other.exit_code == 0, other.output
    assert json.loads(other.stdout)["estimate_basis_kind"] == "carried-over-other-family"


def test_measured_time_prefers_burst_graph_then_eager():
    """The estimate is calibrated in the burst regime: a capture's burst (or single) device time
    where recorded, else its eager p50; a sustained timing is never picked."""
    from tensorforge_measure.compare.evaluation import measured_time

    def t(regime, mode, p50, iqr=0.01):
        return {"regime": regime, "mode": mode, "stats": {"p50": p50, "rel_iqr": iqr}}

    graph_primary = {
        "status": "ok",
        **t("burst", "graph", 1.0),
        "modes": [t("burst", "eager", 2.0), t("sustained", "graph", 1.1)],
    }
    assert measured_time(graph_primary) == (1.0, "graph", 0.01)
    eager_only = {"status": "ok", **t("burst", "eager", 2.0, 0.05), "modes": [t("sustained", "eager", 2.2)]}
    assert measured_time(eager_only) == (2.0, "eager", 0.05)
    old = {"status": "ok", "stats": {"p50": 3.0, "rel_iqr": 0.02}}  # before regimes: burst eager
    assert measured_time(old) == (3.0, "eager", 0.02)
    assert measured_time({"status": "ok", **t("single", "eager", 4.0)}) == (4.0, "eager", 0.01)
    assert measured_time({"status": "failed", "reason": "x"}) is None
