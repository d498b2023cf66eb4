"""The imported public measurements and the families fitted from them: every row carries its
source, commit, path and protocol; no evaluation GPU's row is ever a fit row (the rule that keeps
the portable evaluation honest); the importer's mapping of the sources' dimensions is the GEMM
they ran; and every shipped NVIDIA family names where its coefficients came from."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import public_import  # noqa: E402

EVAL_GPUS = {"NVIDIA H100 80GB HBM3", "NVIDIA L4"}


@pytest.fixture(scope="module")
def neusight():
    return public_import.read(ROOT / "benchmarks" / "public" / "neusight.csv.gz")


def test_every_row_says_where_it_came_from(neusight):
    llm = public_import.read(ROOT / "benchmarks" / "public" / "llmcompass.csv.gz")
    for row in neusight + llm:
        assert row["source"] in ("sitar-lab/NeuSight", "PrincetonUniversity/LLMCompass")
        assert len(row["commit"]) == 40 and row["path"]
        assert row["protocol"] in ("eager-warm", "wall-warm")
        assert row["role"] in ("fit", "eval", "eval-fitted-gpu")
        assert 0 < float(row["latency_s"]) < 10


def test_no_evaluation_gpu_is_ever_fitted(neusight):
    fitted = {r["gpu"] for r in neusight if r["role"] == "fit"}
    assert fitted == set(public_import.FIT_GPUS)
    assert not fitted & EVAL_GPUS
    assert {r["gpu"] for r in neusight if r["role"] == "eval"} == EVAL_GPUS
    # the fit rows come from the training folders, the evaluation rows from the test folder
    assert all("/train/" in r["path"] for r in neusight if r["role"] == "fit")
    assert all("/test/" in r["path"] for r in neusight if r["role"] != "fit")


def test_the_sources_dimensions_become_the_gemm_they_ran():
    # torch.bmm(b x m x n, b x n x k): b GEMMs of m x k outputs over n
    assert public_import.gemm_spec("bmm", 4, 10, 20, 30) == "gemm:m=10,n=30,k=20,batch=4,dtype=fp32,math_mode=fp32"
    # nn.Linear(n, k) on a b x m x n input: one (b*m) x k GEMM over n
    assert public_import.gemm_spec("linear", 2, 10, 20, 30) == "gemm:m=20,n=30,k=20,dtype=fp32,math_mode=fp32"
    assert public_import.vector_spec("addu", 8, 1024).endswith("op=add,operand=scalar,dtype=fp32")
    assert public_import.vector_spec("ln", 8, 1024) == "norm:rows=8,cols=1024,norm=layer,dtype=fp32"


def test_the_subsample_is_deterministic_and_spans_the_sizes():
    rows = [{"Latency": str(i), "Kernels": ""} for i in range(100, 0, -1)]
    picked = public_import.subsample(rows, 10)
    assert picked == public_import.subsample(list(reversed(rows)), 10)
    latencies = [float(r["Latency"]) for r in picked]
    assert min(latencies) == 1 and max(latencies) >= 90


def test_every_shipped_gpu_family_names_its_source():
    table = json.loads((ROOT / "tensorforge" / "estimate" / "shipped.json").read_text())
    for family in ("nvidia-sm70", "nvidia-sm75", "nvidia-sm80", "nvidia-sm90"):
        basis = table[family]["basis"]
        assert "\n" not in basis and len(basis) < 260, family
        assert ("NeuSight" in basis) or ("H200" in basis), family


def test_a_family_with_no_coefficients_takes_the_nearest_older_one():
    from tensorforge.estimate.basis import nearest_family

    table = {"nvidia-sm70": 1, "nvidia-sm75": 1, "nvidia-sm80": 1, "nvidia-sm90": 1}
    assert nearest_family("nvidia-sm89", table) == "nvidia-sm80"
    assert nearest_family("nvidia-sm86", table) == "nvidia-sm80"
    assert nearest_family("nvidia-sm100", table) == "nvidia-sm90"
    assert nearest_family("nvidia-sm60", table) == "nvidia-sm70"
    assert nearest_family("amd-gfx942", table) is None
