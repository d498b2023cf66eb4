"""The example target files under examples/targets/ are documentation people copy and pass to
`--target`: each must load through the same loader, name the architecture family the estimate
picks its coefficients by, source its figures, and predict. The shipped GPU plugins name theirs
too, since a target without one gets a stand-in family's coefficients."""

import re
from pathlib import Path

import pytest

from tensorforge.bound.model import predict
from tensorforge.hardware.target_file import load_target_file
from tensorforge.workloads.suite import resolve_spec

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples" / "targets").glob("*.toml"))
# fp16 because every example part has fp16 tensor cores; the V100 and T4 have no bf16 ones
GEMM = "gemm_large_square:dtype=fp16"
SOURCED = ("pe_array.units", "pe_array.flops_per_clock", "sram.l2", "dram_capacity_bytes", "operating_points")


def test_the_examples_are_there():
    assert len(EXAMPLES) >= 9


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_target_names_its_family_sources_its_figures_and_predicts(host, path):
    target = load_target_file(path)
    assert target.name == path.stem
    assert re.fullmatch(r"nvidia-sm\d\d", target.architecture), target.architecture
    assert target.operating_points and target.device_names
    assert all(target.sources.get(key) for key in SOURCED)
    if target.power is not None:
        assert target.sources.get("power.tdp_w")
    pred = predict([resolve_spec(host, GEMM)], target, host.mappings())
    assert pred.workloads[0].latency_s > 0


def test_the_manual_lists_every_example():
    manual = (ROOT / "docs" / "targets.md").read_text(encoding="utf-8")
    assert [p.name for p in EXAMPLES if f"examples/targets/{p.name}" not in manual] == []


@pytest.mark.parametrize(("name", "family"), [("h200", "nvidia-sm90"), ("rtx3050-laptop", "nvidia-sm86")])
def test_the_shipped_gpu_targets_name_their_family(host, name, family):
    assert host.target(name).architecture == family
