"""benchmarks/graph_level_trace.py's trace analysis (the part that turned the H200's profiler traces
into the per-kernel gap comparison in docs/measurement.md) and its parent's handling of recipes,
on synthetic traces: no GPU needed."""

import subprocess
import sys

import pytest
from script_module import ROOT, load_script

SCRIPT = ROOT / "benchmarks" / "graph_level_trace.py"


@pytest.fixture(scope="module")
def glt():
    return load_script("benchmarks/graph_level_trace.py")


def trace(names, gap, replays=2, dur=3.0):
    events, ts = [], 100.0
    for _ in range(replays):
        for name in names:
            events.append({"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"grid": [1, 1, 1]}})
            ts += dur + gap
    # host-side events and annotations are not device work and must be ignored
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 0.0, "dur": 50.0})
    return {"traceEvents": events}


def test_last_replay_and_its_gaps(glt):
    rows = glt.replay_kernels(glt.device_events(trace(["a", "b", "c"], gap=0.5)), 2)
    assert [r["name"] for r in rows] == ["a", "b", "c"]
    assert [r["gap_after_us"] for r in rows] == [pytest.approx(0.5), pytest.approx(0.5), None]
    assert rows[0]["grid"] == [1, 1, 1]


def test_summary_per_step(glt):
    rows = glt.replay_kernels(glt.device_events(trace(["a", "b"] * 5, gap=0.25)), 2)
    s = glt.summarise(rows, calls=5)
    assert s["events_per_step"] == 2
    assert s["busy_per_step_us"] == pytest.approx(6.0)
    assert s["gaps_per_step_us"] == pytest.approx(9 * 0.25 / 5)
    assert s["gap_median_us"] == pytest.approx(0.25)


def test_diff_finds_gap_growth_and_same_kernels(glt):
    names = ["gemm", "add", "attn"]

    def traced(gap, label):
        rows = glt.replay_kernels(glt.device_events(trace(names, gap)), 2)
        return {"label": label, "kernels": rows, "summary": glt.summarise(rows, 1)}

    d = glt.diff(traced(0.1, "fast"), traced(0.45, "slow"))
    assert d["same_kernel_sequence"] and not d["launch_shape_differences"]
    assert d["gap_median_us"] == [pytest.approx(0.1), pytest.approx(0.45)]
    assert d["largest_gap_growth"][0]["gap_slow_us"] - d["largest_gap_growth"][0]["gap_fast_us"] == pytest.approx(0.35)


def test_diff_reports_a_different_kernel_choice(glt):
    fast_rows = glt.replay_kernels(glt.device_events(trace(["gemm_a", "add"], 0.1)), 2)
    slow_rows = glt.replay_kernels(glt.device_events(trace(["gemm_b", "add"], 0.1)), 2)
    d = glt.diff(
        {"label": "x", "kernels": fast_rows, "summary": glt.summarise(fast_rows, 1)},
        {"label": "y", "kernels": slow_rows, "summary": glt.summarise(slow_rows, 1)},
    )
    assert not d["same_kernel_sequence"]
    assert d["launch_shape_differences"][0]["slow"] == "gemm_b"


def test_dot_summary_counts_node_kinds(glt):
    text = 'digraph { "a"[label="{KERNEL\\n|x}"]; "b"[label="{MEMSET|y}"]; "c"[label="{KERNEL|z}"]; "a" -> "b"; "b" -> "c" }'
    s = glt.dot_summary(text)
    assert s["node_labels"] == {"KERNEL": 2, "MEMSET": 1} and s["edges"] == 2


def test_unknown_recipe_is_refused(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path), "--recipes", "run,nonsense"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "nonsense" in proc.stderr and "Traceback" not in proc.stderr


def test_parent_runs_recipes_in_processes_and_diffs_like_with_like(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--fake", "--out", str(tmp_path), "--recipes", "noflush_first,size_order"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    report = json.loads((tmp_path / "graph-level-trace.json").read_text())
    assert [r["recipe"] for r in report["results"]] == ["noflush_first", "size_order"]
    (d,) = report["diffs"]
    assert d["gap_median_us"] == [pytest.approx(0.1), pytest.approx(0.42)]
