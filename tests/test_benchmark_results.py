"""The maintained benchmarks' result files: what benchmarks/_result.py writes is what
benchmarks/results_md.py reads, RESULTS.md and the README's results block are regenerated from
result files alone, and the CPU-side scoring of the accuracy benchmarks holds (no GPU)."""

from __future__ import annotations

import json
import sys
import types

import pytest
from script_module import ROOT, load_script

result = load_script("benchmarks/_result.py")
results_md = load_script("benchmarks/results_md.py")


def _tiny(**extra):
    return result.build(
        "estimate_eval",
        "NVIDIA H200",
        [
            {"group": "family", "name": "large GEMMs", "n": 6, "bound_ape_median": 0.03, "estimate_ape_median": 0.019},
            {"group": "all", "name": "all", "n": 66, "bound_ape_median": 0.449, "estimate_ape_median": 0.103},
        ],
        {"workloads": 66, "estimate_ape_median": 0.103},
        {"estimate_ape_median": "DERIVED: median |PREDICTED - MEASURED| / MEASURED"},
        columns=[("name", "class"), ("n", "n"), ("estimate_ape_median", "ESTIMATE APE median", "%")],
        command="python benchmarks/estimate_eval.py",
        fit="the calibration probes",
        evaluated="benchmarks/eval/h200-suite.toml: 66 workloads",
        **extra,
    )


def test_the_writer_writes_what_the_reader_reads(tmp_path):
    doc = _tiny()
    path = result.write(tmp_path / "results" / "estimate_eval.json", doc)
    assert [p.name for p in path.parent.iterdir()] == ["estimate_eval.json"]  # no temporary left
    back = json.loads(path.read_text(encoding="utf-8"))
    assert back == doc and result.check(back) == []
    assert set(result.REQUIRED) <= set(back) and back["schema"] == result.SCHEMA
    docs, problems = results_md.load(path.parent)
    assert problems == [] and docs["estimate_eval"]["rows"] == doc["rows"]


def test_the_schema_refuses_what_the_reader_could_not_show(tmp_path):
    with pytest.raises(ValueError, match="MEASURED"):
        result.build("x", "cpu", [], {}, {"t": "a time"})
    broken = {**_tiny(), "date": "yesterday"}
    del broken["rows"]
    problems = result.check(broken)
    assert any("rows" in p for p in problems) and any("date" in p for p in problems)
    with pytest.raises(ValueError):
        result.write(tmp_path / "x.json", broken)
    assert not (tmp_path / "x.json").exists()


def test_results_md_regenerates_results_and_the_readme_block(tmp_path):
    folder = tmp_path / "results"
    result.write(folder / "estimate_eval.json", _tiny(measured_on="2026-11-30"))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- results:begin -->\nold table\n<!-- results:end -->\nafter\n", encoding="utf-8")
    md = tmp_path / "RESULTS.md"
    assert results_md.main(["--results", str(folder), "--md", str(md), "--readme", str(readme)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "## Estimate evaluation" in text and "Device: NVIDIA H200" in text and "| all | 66 | 10.3% |" in text
    assert "Fit on: the calibration probes" in text and "Evaluated on: benchmarks/eval/h200-suite.toml" in text
    block = readme.read_text(encoding="utf-8")
    assert "old table" not in block and block.endswith("<!-- results:end -->\nafter\n")
    assert "| large GEMMs | 6 | 3.0% | 1.9% |" in block and "measured 2026-11-30" in block
    again = block
    assert results_md.main(["--results", str(folder), "--md", str(md), "--readme", str(readme)]) == 0
    assert readme.read_text(encoding="utf-8") == again  # the same files give the same text


def test_results_md_without_markers_writes_results_and_says_so(tmp_path, capsys):
    folder = tmp_path / "results"
    result.write(folder / "estimate_eval.json", _tiny())
    readme = tmp_path / "README.md"
    readme.write_text("# no markers\n", encoding="utf-8")
    md = tmp_path / "RESULTS.md"
    assert results_md.main(["--results", str(folder), "--md", str(md), "--readme", str(readme)]) == 2
    assert md.exists() and readme.read_text(encoding="utf-8") == "# no markers\n"
    assert "no '<!-- results:begin -->'" in capsys.readouterr().err


def test_a_gpu_program_without_a_gpu_says_so_in_one_line(monkeypatch, capsys):
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0))
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pytest.raises(SystemExit) as stop:
        result.need_gpus(2, "collectives")
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs 2 CUDA GPU(s)" in err and "nothing written" in err


def test_the_estimate_evaluation_scores_the_golden_capture_as_evaluate_does(tmp_path):
    """Offline from the golden H200 capture: the fit set and the evaluated set are named, and the
    overall figures are `tensorforge evaluate`'s."""
    estimate_eval = load_script("benchmarks/estimate_eval.py")
    out = tmp_path / "estimate_eval.json"
    monkey_argv = ["estimate_eval.py", "--out", str(out)]
    saved, sys.argv = sys.argv, monkey_argv
    try:
        assert estimate_eval.main() == 0
    finally:
        sys.argv = saved
    doc = result.read(out)
    assert doc["device"] == "NVIDIA H200" and doc["summary"]["workloads"] >= 60
    assert "calibration probes" in doc["fit"] and "benchmarks/eval/h200-suite.toml" in doc["evaluated"]
    overall = next(r for r in doc["rows"] if r["group"] == "all")
    assert overall["bound_violations"] == 0 and 0 < overall["estimate_ape_median"] < overall["bound_ape_median"]
    assert (ROOT / "examples" / "captures" / "h200-estimate-eval-graphfit.json.gz").exists()


def test_the_energy_evaluation_scores_a_capture_comparison():
    energy_eval = load_script("benchmarks/energy_eval.py")

    def row(measured, estimate, floor, verdict="within floor"):
        return {
            "energy": {
                "measured_j": measured,
                "estimate_j": estimate,
                "floor_j": floor,
                "estimate_error": (estimate - measured) / measured,
                "floor_verdict": verdict,
            }
        }

    doc = {
        "comparison": {
            "workloads": {
                "a": row(1.0, 1.05, 0.6),
                "b": row(2.0, 2.6, 1.0),
                "c": row(0.5, 0.5, 0.7, "FLOOR VIOLATION"),
                "d": {"energy": {"measured_j": None}},
            }
        }
    }
    rows, summary = energy_eval.score(doc)
    assert [r["workload"] for r in rows] == ["a", "b", "c"]
    assert summary == {
        "workloads": 3,
        "estimate_abs_error_median": 0.05,
        "estimate_abs_error_p90": 0.3,
        "within_10pct": 2,
        "floor_violations": 1,
    }


def test_the_startup_benchmark_judges_each_command_by_its_median(tmp_path):
    """benchmarks/startup.py without its subprocesses: best, median and p90 of the runs, the goal
    judged on the median, and a document results_md.py renders."""
    startup = load_script("benchmarks/startup.py")
    fast = startup.row("help", "tensorforge --help", [0.21, 0.19, 0.2, 0.5, 0.22])
    assert (fast["best_s"], fast["median_s"], fast["runs"], fast["within_goal"]) == (0.19, 0.21, 5, True)
    assert 0.22 < fast["p90_s"] < 0.5  # one slow run moves the p90, not the median
    slow = startup.row("predict", "tensorforge predict ...", [0.31, 0.35, 0.29])
    assert slow["within_goal"] is False and slow["p90_s"] > slow["median_s"]
    doc = startup.document([fast, slow], [0.03, 0.04, 0.035], repeat=5, load=1.5)
    assert doc["summary"]["all_within_goal"] is False and doc["summary"]["slowest"] == "predict"
    assert doc["summary"]["interpreter_median_s"] == 0.035 and result.check(doc) == []
    result.write(tmp_path / "startup.json", doc)
    docs, problems = results_md.load(tmp_path)
    assert problems == [] and "| help | tensorforge --help | 0.19 | 0.21 |" in results_md.results_md(docs)
