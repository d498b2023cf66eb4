"""The distributed path for real on the machine running the tests, no GPU and no mocks: `tensorforge
run --target host-cpu-x2` launches two worker processes through torchrun (gloo), calibrates
(per-rank ceilings, the collective sweep), measures a real all-reduce and a tp=2 tiny
transformer in lockstep, and the capture verifies. Also: the tp=2 builder computes what the
tp=1 builder computes, and a GPU system on a machine without GPUs still predicts.

Assertions are about behaviour (what ran, what was recorded, what agrees with what), never about
how fast anything was: this runs on two busy cores."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_in_process import run_cli

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("this PyTorch build has no torch.distributed", allow_module_level=True)

from tf_cpu.machine import read_machine  # noqa: E402

from tensorforge_measure.capture.document import verify  # noqa: E402

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "fixtures" / "suites" / "host_cpu_x2_ci.toml"
TENSORFORGE = str(Path(sys.executable).parent / "tensorforge")


def clean_env(home: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("TENSORFORGE_PLUGINS", "TENSORFORGE_DISABLE")}
    env["TENSORFORGE_HOME"] = str(home)
    return env


def tf(*args, home: Path, timeout=600):
    return subprocess.run(
        [TENSORFORGE, *args], capture_output=True, text=True, timeout=timeout, env=clean_env(home), cwd=str(ROOT)
    )


def in_process(*args, home: Path):
    """`tensorforge ARGS` in this process, for what needs no second process (tests/cli_in_process.py)."""
    env = {"TENSORFORGE_PLUGINS": None, "TENSORFORGE_DISABLE": None, "TENSORFORGE_HOME": str(home)}
    return run_cli(*args, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gloo")
    proc = tf(
        "run",
        "--target",
        "host-cpu-x2",
        "--suite",
        str(SUITE),
        "--budget",
        "1",
        "--telemetry-seconds",
        "0.1",
        "--cooldown",
        "0",
        "--rest",
        "0",
        "-o",
        str(folder / "capture.json"),
        home=folder / "home",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((folder / "capture.json").read_text(encoding="utf-8"))
    return folder, proc, doc


def test_the_capture_verifies_and_names_the_system(run):
    folder, proc, doc = run
    assert "Traceback" not in proc.stderr
    assert verify(folder / "capture.json").ok
    measured = doc["measured"]
    assert doc["target"] == "host-cpu-x2" and measured["backend"] == "torch-distributed"
    assert measured["device"]["name"] == f"2 x {read_machine().model_name}"
    details = measured["device"]["details"]
    assert details["world_size"] == 2 and details["libraries"]["process_group"] == "gloo"
    assert [r["rank"] for r in details["ranks"]] == [0, 1]
    assert details["launcher"].startswith("torchrun --standalone --nnodes 1 --nproc-per-node 2")
    assert "NCCL_NVLS_ENABLE" in details["settings"]  # recorded, set or not
    assert doc["comparison"]["same_device"] is True  # the measured system is the target


def test_a_real_all_reduce_is_checked_and_timed_on_every_rank(run):
    _, _, doc = run
    row = doc["measured"]["workloads"]["all_reduce_64k"]
    assert row["status"] == "ok", row.get("reason")
    ranks = row["ranks"]
    assert ranks["result_check"]["ok"] is True
    assert all("correct" in d for d in ranks["result_check"]["per_rank"])
    per_rank = ranks["per_rank_samples_s"]
    assert len(per_rank) == 2 and all(len(s) == len(row["samples_s"]) for s in per_rank)
    # an iteration lasts as long as its slowest rank
    assert row["samples_s"] == [max(a, b) for a, b in zip(*per_rank)]
    assert all(s > 0 for s in row["samples_s"]) and ranks["ranks"] == 2
    assert len(ranks["peak_memory_per_rank_bytes"]) == 2


def test_tp2_transformer_runs_with_its_all_reduces_per_operator(run):
    _, _, doc = run
    row = doc["measured"]["workloads"]["transformer_tp2_tiny"]
    assert row["status"] == "ok", row.get("reason")
    check = row["ranks"]["result_check"]
    assert check["ok"] is True and "identical across ranks" in check["per_rank"][0]
    window = row["ranks"]["operators"]["eager"]["operators"]
    measured = {o["operator"]: o for o in window}
    assert {"all_reduce_attn", "all_reduce_mlp", "qkv_proj", "mlp_down"} <= set(measured)
    assert measured["all_reduce_attn"]["activities"] == 2  # once per layer
    for o in window:
        assert 0 <= o["fastest_rank_p50_s"] <= o["time_p50_s"] and len(o["per_rank_p50_s"]) == 2
    comparison = doc["comparison"]["workloads"]["transformer_tp2_tiny"]["operators"]
    assert comparison["available"] is True
    compared = {r["operator"]: r for r in comparison["operators"]}
    predicted = [o["name"] for o in doc["predicted"]["analytical"]["workloads"][1]["operators"]]
    assert list(compared) == predicted  # every Core operator, in order
    assert compared["all_reduce_attn"]["bound_check"]["verdict"] in ("within bound", "BOUND VIOLATION")


def test_pipeline_parallelism_is_predicted_but_not_measured(run):
    _, _, doc = run
    row = doc["measured"]["workloads"]["transformer_pp2_tiny"]
    assert row["status"] == "failed" and "pipeline parallelism is predicted only" in row["reason"]
    pred = doc["predicted"]["analytical"]["workloads"][2]
    assert any(o["name"] == "pp_send_recv" for o in pred["operators"])


def test_calibration_has_per_rank_ceilings_and_collective_curves(run):
    folder, _, doc = run
    cal = doc["calibrated"]
    assert cal["available"] is True and set(cal["probes"]) == {"per-rank-ceilings", "collective-sweep"}
    ceilings = cal["ceilings"]
    assert ceilings["compute"]["fp32"] > 0 and ceilings["dram_bytes_per_s"] > 0
    curve = ceilings["collectives"]["all_reduce/2"]
    assert curve["bus_bytes_per_s"] > 0 and curve["floor_s"] > 0 and curve["latency_s"] >= 0
    sweep = cal["probes"]["collective-sweep"]["details"]["ops"]["all_reduce"]["points"]
    assert len(sweep) >= 2 and all("correct" in p["check"] for p in sweep)
    per_rank = cal["probes"]["per-rank-ceilings"]["details"]["per_rank"]
    assert len(per_rank) == 2 and all(r["results"] for r in per_rank)
    # the calibrated bound of the collective comes from that curve
    (op,) = doc["predicted"]["calibrated"]["workloads"][0]["operators"]
    assert op["ceiling_origin"] == "calibrated" and op["mapping"]["origin"] == "calibrated"
    assert (folder / "home" / "calibrations" / f"{cal['fingerprint']}.json").is_file()


def test_summary_shows_the_system_the_curves_and_the_operators(run):
    folder, proc, _ = run
    text = (folder / "capture.summary.txt").read_text(encoding="utf-8")
    assert "2 ranks via torchrun" in text and "all_reduce/2: beta" in text
    assert "per operator: transformer_tp2_tiny" in text and "all_reduce_attn" in text


def test_tp2_builder_computes_what_tp1_computes(tmp_path):
    out = tmp_path / "tp.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(ROOT / "tests" / "distributed" / "tp_equivalence.py"),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(tmp_path / "home"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert len(results) == 3
    for spec, r in results.items():
        assert r["shape_equal"] and r["check"][0] is True, spec
        assert r["rel_error"] < 1e-5, (spec, r["rel_error"])  # fp32: summation order only


def test_a_gpu_system_without_gpus_still_predicts(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = tmp_path / "x2.json"
    proc = in_process("run", "--target", "h200x2", "-w", "all_reduce_64m", "-o", str(out), home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["measured"]["available"] is False
    assert "target h200x2 has 2 GPUs; this machine shows 0 CUDA device(s)" in doc["measured"]["reason"]
    assert doc["predicted"]["analytical"]["workloads"][0]["bottleneck"] == "interconnect"


def test_a_collective_on_a_single_device_is_refused_in_one_line(tmp_path):
    proc = in_process("predict", "-t", "h200", "-w", "all_reduce_64m:ranks=2", home=tmp_path / "home")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "needs 2 devices; the target has 1" in proc.stderr
