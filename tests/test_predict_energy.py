"""Energy in `predict` (tensorforge/energy/coefficients.py, predicted.py): where the coefficients
come from (a calibration given with --ceilings, the device's shipped calibration, the target's
declared [power] figures, else none and why), the floor and the estimate per workload and per
token, and `predict --json`'s "energy" beside the prediction's unchanged keys."""

import gzip
import json
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from tensorforge.api import predict
from tensorforge.energy.coefficients import DECLARED_LOW, energy_basis, shipped
from tensorforge.energy.predicted import predicted_energy, workload_figures
from tensorforge.errors import TensorForgeError
from tensorforge.hardware.target_file import load_target_file
from tensorforge.workloads.suite import resolve

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
H100 = ROOT / "examples" / "targets" / "h100-sxm5-80gb.toml"
SIGNED_RUN = ROOT / "examples" / "captures" / "h200-signed-run.json.gz"
NO_ENERGY_CALIBRATION = ROOT / "examples" / "calibration" / "h200-2026-11-30.json"


@pytest.fixture(scope="module")
def decode(host):
    """transformer_decode on the H200 (8 sequences, one token each), with its kind and params."""
    chosen = resolve(host, ("transformer_decode",))
    target = host.target("h200")
    return predict(chosen, target, host.mappings(), estimate=True), target, chosen


def test_declared_figures_become_coefficients_with_lower_ends():
    target = load_target_file(H100)
    basis = energy_basis(target)
    c = basis.coefficients
    assert basis.kind == "declared" and "target h100-sxm5-80gb" in basis.source
    assert (c.static_w, c.static_w_low) == (129.5, pytest.approx(129.5 * DECLARED_LOW))
    assert c.joules_per_flop["bf16"] == target.power.joules_per_flop["bf16"]
    assert c.joules_per_flop_low["bf16"] == pytest.approx(target.power.joules_per_flop["bf16"] * DECLARED_LOW)
    assert (c.joules_per_dram_byte, c.power_limit_w) == (1.14e-10, 700.0)


def test_the_h200_and_its_systems_get_the_shipped_calibration(host):
    name = "NVIDIA H200"
    for target in ("h200", "h200x2"):
        basis = energy_basis(host.target(target))
        assert basis.kind == "shipped" and basis.coefficients == shipped()[name][1]
    c = shipped()[name][1]
    assert c.joules_per_dram_byte == pytest.approx(1.1443364296479251e-10)
    assert c.joules_per_dram_byte_low < c.joules_per_dram_byte and c.power_limit_w == 700.0


def test_a_capture_given_with_ceilings_replaces_them_and_a_calibration_without_energy_says_so(host):
    target = host.target("h200")
    calibrated = energy_basis(target, str(SIGNED_RUN))
    assert calibrated.kind == "calibrated" and calibrated.source.startswith("calibrated on NVIDIA H200")
    # the capture's sustained ceilings come along (the estimate's capped time)
    assert calibrated.coefficients.sustained_rate_flop_s["bf16"] == pytest.approx(7.495968418737016e14)
    fallback = energy_basis(target, str(NO_ENERGY_CALIBRATION))
    assert fallback.kind == "shipped" and fallback.source.startswith(f"{NO_ENERGY_CALIBRATION} holds no energy")


def test_a_target_without_figures_gets_no_energy_and_the_reason(host, decode):
    pred, _, chosen = decode
    bare = attrs.evolve(host.target("h200"), name="bare", device_names=(), power=None)
    basis = energy_basis(bare)
    assert basis.kind is None and "declares no energy figures" in basis.source
    section = predicted_energy(pred, bare, basis, {})
    assert section.workloads == {} and section.coefficients_source == basis.source


def test_per_token_is_per_execution_over_tokens_and_devices_multiply(decode):
    pred, target, _ = decode
    w = pred.workload("transformer_decode")
    c = shipped()["NVIDIA H200"][1]
    one = workload_figures(w, c, 60 * 2**20, devices=1, tokens=8)
    two = workload_figures(w, c, 60 * 2**20, devices=2, tokens=8)
    assert one.floor_j_per_token == pytest.approx(one.floor_j / 8)
    assert one.graph_estimate_j_per_token == pytest.approx(one.graph_estimate_j / 8)
    assert two.floor_j == pytest.approx(2 * one.floor_j) and two.eager_estimate_j == pytest.approx(
        2 * one.eager_estimate_j
    )
    # the floor's time is the warm bound; the estimates sit above the floor
    assert one.floor_terms["time_s"] == pytest.approx(min(w.latency_s, w.warm_latency_s))
    assert one.floor_j < one.graph_estimate_j < one.eager_estimate_j


def test_the_floor_stays_below_the_measured_joules_of_the_shipped_calibrations_run(host):
    """The capture the shipped coefficients come from measured joules per execution: no floor of
    `predict` comes in above them (its ten workloads, datasheet bound: looser than the capture's)."""
    capture = json.loads(gzip.open(SIGNED_RUN).read())
    measured = {n: w["energy"]["joules_per_execution"] for n, w in capture["measured"]["workloads"].items()}
    chosen = resolve(host, tuple(measured))
    target = host.target("h200")
    pred = predict(chosen, target, host.mappings(), estimate=True)
    section = predicted_energy(pred, target, energy_basis(target), {w.name: (k, w.params) for w, k in chosen})
    assert set(section.workloads) == set(measured)
    assert all(section.workloads[n].floor_j <= measured[n] for n in measured)


def test_predict_json_carries_energy_per_workload_and_per_token(cli):
    result = CliRunner().invoke(cli, ["predict", "-t", "h200", "-w", "transformer_decode", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    e = data["energy"]
    assert e["label"] == "PREDICTED energy" and e["basis_kind"] == "shipped"
    row = e["workloads"]["transformer_decode"]
    assert row["tokens"] == 8 and row["floor_j_per_token"] == pytest.approx(row["floor_j"] / 8)
    assert 0 < row["floor_j"] < row["graph_estimate_j"]
    assert {w["name"] for w in data["workloads"]} == {"transformer_decode"}


def test_a_bad_joules_per_dram_byte_is_refused_in_one_line(tmp_path):
    text = H100.read_text(encoding="utf-8").replace("joules_per_dram_byte = 1.14e-10", "joules_per_dram_byte = -1")
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TensorForgeError, match="joules_per_dram_byte") as info:
        load_target_file(path)
    assert "\n" not in str(info.value)
