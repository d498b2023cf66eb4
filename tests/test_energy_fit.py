"""The energy coefficients' fit (tensorforge_measure/energy/fit.py): points made from known
coefficients give them back; the lower ends lie below the truth; too few windows, or windows
that do not separate the coefficients, are an error that names the problem."""

import attrs
import numpy as np
import pytest

from tensorforge_measure.capture.sections.energy import EnergyPoint
from tensorforge_measure.energy.fit import FitError, fit, to_core

TRUE = {"static_w": 180.0, "bf16": 5.5e-13, "fp16": 5.8e-13, "tf32": 1.1e-12, "byte": 6e-11}


def _point(name, seconds, flops=None, dram=0.0, noise=0.0):
    flops = flops or {}
    joules = seconds * TRUE["static_w"] + sum(TRUE[m] * f for m, f in flops.items()) + TRUE["byte"] * dram
    return EnergyPoint(name=name, seconds=seconds, joules=joules * (1 + noise), flops=flops, dram_bytes=dram)


def _points(noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    n = lambda: float(rng.normal(0, noise)) if noise else 0.0  # noqa: E731
    return [
        _point("launch-bound", 0.3, noise=n()),
        _point("copy", 0.3, dram=0.3 * 4.2e12, noise=n()),
        _point("skinny", 0.3, {"bf16": 0.3 * 3e13}, dram=0.3 * 3.9e12, noise=n()),
        _point("bf16 8192", 0.3, {"bf16": 0.3 * 7e14}, dram=0.3 * 3e11, noise=n()),
        _point("bf16 4096", 0.3, {"bf16": 0.3 * 6.5e14}, dram=0.3 * 5e11, noise=n()),
        _point("fp16 8192", 0.3, {"fp16": 0.3 * 6.6e14}, dram=0.3 * 3e11, noise=n()),
        _point("tf32 8192", 0.3, {"tf32": 0.3 * 3.5e14}, dram=0.3 * 4e11, noise=n()),
    ]


def test_exact_points_give_the_coefficients_back():
    record, errors, residuals = fit(_points(), idle_w=90.0, power_limit_w=700.0, power_limit_source="nvml", source="t")
    assert record.static_w == pytest.approx(TRUE["static_w"], rel=1e-6)
    assert record.joules_per_flop["bf16"] == pytest.approx(TRUE["bf16"], rel=1e-6)
    assert record.joules_per_flop["tf32"] == pytest.approx(TRUE["tf32"], rel=1e-6)
    assert record.joules_per_dram_byte == pytest.approx(TRUE["byte"], rel=1e-6)
    assert max(abs(r) for r in residuals) < 1e-6
    assert record.static_w_low == 90.0  # the idle power caps the floor's static power
    assert record.power_limit_w == 700.0


def test_lower_ends_lie_below_the_truth_with_noise():
    for seed in range(5):
        record, errors, _ = fit(_points(noise=0.01, seed=seed), None, 700.0, "nvml", "t")
        assert all(v >= 0 for v in errors.values())
        assert record.static_w_low < TRUE["static_w"]
        for mode in ("bf16", "fp16", "tf32"):
            assert 0 <= record.joules_per_flop_low[mode] < TRUE[mode]
        assert record.joules_per_dram_byte_low < TRUE["byte"]


def test_too_few_windows_is_an_error():
    with pytest.raises(FitError, match="probe windows for"):
        fit(_points()[:1] + _points()[3:4], None, None, "", "t")


def test_windows_that_do_not_separate_the_coefficients_are_an_error():
    same = [_point("a", 0.3, {"bf16": 1e14}, dram=1e11), _point("b", 0.6, {"bf16": 2e14}, dram=2e11)] * 3
    with pytest.raises(FitError):
        fit(same, None, None, "", "t")


def test_to_core_takes_the_targets_limit_only_where_the_device_gave_none():
    record, _, _ = fit(_points(), None, None, "not reported", "t")
    assert to_core(record, (700.0, "declared by target h200")).power_limit_w == 700.0
    assert to_core(record, (700.0, "declared")).power_limit_source == "declared"
    record2, _, _ = fit(_points(), None, 650.0, "nvml", "t")
    assert to_core(record2, (700.0, "declared")).power_limit_w == 650.0


def test_to_core_carries_the_vector_energy_per_flop():
    record, _, _ = fit(_points(), None, None, "not reported", "t")
    assert to_core(record).joules_per_vector_flop is None  # older calibrations: no depthwise window
    assert to_core(attrs.evolve(record, joules_per_vector_flop=2.4e-11)).joules_per_vector_flop == 2.4e-11
