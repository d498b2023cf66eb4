"""The tf-mlflow plugin against a real MLflow tracking store (SQLite in a temporary folder),
read back through MLflow's own client; failures that never cost the capture; and the rule that
neither the Core nor Ops imports mlflow."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden import H200_RUN

try:
    import alembic  # noqa: F401
    import mlflow  # noqa: F401
    import sqlalchemy  # noqa: F401
    from mlflow.tracking import MlflowClient
    from tf_mlflow.content import build, workload_keys
    from tf_mlflow.sink import MlflowSink
except ImportError as exc:  # the plugin is optional: Ops works without it
    pytest.skip(
        f"tf-mlflow with its sqlite extra is not installed ({exc}): pip install -e './plugins/tf_mlflow[sqlite]'",
        allow_module_level=True,
    )

from tensorforge.cli.main import make_cli
from tensorforge_measure.capture.document import read_capture, verify

REPO = Path(__file__).resolve().parents[1]
REAL_CAPTURE = H200_RUN
LABELS = "PREDICTED,MEASURED,CALIBRATED,DIAGNOSTIC,POLICY"
# MLflow 3.17's SQLite store uses a loader strategy SQLAlchemy 2.1 deprecates: theirs, not ours.
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy:DeprecationWarning")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One SQLite store for the module: creating it runs MLflow's migrations (seconds)."""
    root = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    client.search_experiments()  # creates the schema now, once
    return {"uri": uri, "root": root, "client": client}


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORFORGE_HOME", str(tmp_path / "home"))
    for name in (
        "TENSORFORGE_EXPORT",
        "MLFLOW_TRACKING_URI",
        "MLFLOW_EXPERIMENT_NAME",
        "TENSORFORGE_PLUGINS",
        "TENSORFORGE_DISABLE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # anything MLflow would put in the CWD lands here


def only_run(store, experiment):
    client = store["client"]
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]


def artifacts(client, run_id):
    return sorted(f.path for top in client.list_artifacts(run_id) for f in client.list_artifacts(run_id, top.path))


def export(cli, capture, store, experiment, *extra):
    return CliRunner().invoke(
        cli,
        [
            "export",
            str(capture),
            "--to",
            "mlflow",
            "--option",
            f"tracking_uri={store['uri']}",
            "--option",
            f"experiment={experiment}",
            "--option",
            f"artifact_location={store['root'] / experiment}",
            *extra,
        ],
    )


def ms(stamp):
    return int(datetime.fromisoformat(stamp).timestamp() * 1000)


def test_export_of_the_h200_capture_reads_back_exactly(cli, store, tmp_path):
    capture = tmp_path / "h200-default-run.json"
    shutil.copy(REAL_CAPTURE, capture)
    doc = json.loads(capture.read_text())
    result = export(cli, capture, store, "h200")
    assert result.exit_code == 0, result.output
    assert "exported to mlflow: run " in result.stderr and "experiment 'h200'" in result.stderr
    run = only_run(store, "h200")
    client, data, run_id = store["client"], run.data, run.info.run_id
    prov = doc["provenance"]
    assert run.info.status == "FINISHED"
    assert run.info.run_name == f"h200 {prov['started_at']}"
    assert (run.info.start_time, run.info.end_time) == (ms(prov["started_at"]), ms(prov["finished_at"]))

    p = data.params
    assert p["target"] == "h200" and p["operating_point"] == "max-boost"
    assert p["device.name"] == "NVIDIA H200" and p["device.fingerprint"] == "cuda-178f800fde59b936"
    assert p["backend"] == "torch-cuda" and p["tensorforge.version"] == "0.1.0"
    for w in doc["predicted"]["analytical"]["workloads"]:
        assert p[f"workload.{w['name']}"] == w["spec"]
    # flags equal for every workload once; the TF32 GEMM's differing flags per workload
    assert p["flags.cudnn_benchmark"] == "false" and p["flags.cudnn_conv_fp32_precision"] == "tf32"
    assert "flags.matmul_allow_tf32" not in p
    assert p["gemm_square_tf32.flags.matmul_allow_tf32"] == "true"
    assert p["gemm_tiny.flags.matmul_allow_tf32"] == "false"

    m = data.metrics
    calibrated = {w["name"]: w["latency_s"] for w in doc["predicted"]["calibrated"]["workloads"]}
    for w in doc["predicted"]["analytical"]["workloads"]:
        name = w["name"]
        stats = doc["measured"]["workloads"][name]["stats"]
        row = doc["comparison"]["workloads"][name]
        assert m[f"{name}.predicted_analytical_s"] == w["latency_s"]
        assert m[f"{name}.predicted_calibrated_s"] == calibrated[name]
        for q in ("p10", "p50", "p90"):
            assert m[f"{name}.measured_{q}_s"] == stats[q]
        assert m[f"{name}.ape_analytical"] == row["ape_analytical"]
        assert m[f"{name}.ape_calibrated"] == row["ape_calibrated"]
    ceilings = doc["calibrated"]["ceilings"]
    for mode, rate in ceilings["compute"].items():
        assert m[f"ceiling.compute.{mode}"] == rate
    assert m["ceiling.dram_bytes_per_s"] == ceilings["dram_bytes_per_s"]
    assert m["ceiling.launch_floor_s"] == ceilings["launch_floor_s"]

    t = data.tags
    assert t["tensorforge.labels"] == LABELS
    assert t["tensorforge.digest"] == doc["digest"]["value"]
    assert t["tensorforge.schema"] == "tensorforge.capture/2"  # the version-1 file, read as version 2
    assert t["tensorforge.bound_violations"] == "0"
    assert {k: v for k, v in t.items() if k.startswith("bound_check.")} == {
        f"bound_check.{n}": "within bound" for n in doc["policy"]["bound_checks"]
    }
    assert t["tensorforge.capture"] == str(capture)
    assert "tensorforge.workload_keys" not in t  # every name was already a valid key
    assert t["mlflow.source.name"] == " ".join(prov["command"])

    assert artifacts(client, run_id) == ["capture/h200-default-run.json", "report/h200-default-run.report.html"]
    local = Path(client.download_artifacts(run_id, "capture/h200-default-run.json", str(tmp_path / "dl")))
    assert local.read_bytes() == REAL_CAPTURE.read_bytes() and verify(local).ok
    html = Path(client.download_artifacts(run_id, "report/h200-default-run.report.html", str(tmp_path / "dl")))
    assert html.read_text().startswith("<!DOCTYPE html>") and doc["digest"]["value"] in html.read_text()
    assert Path(run.info.artifact_uri).is_relative_to(store["root"] / "h200")  # not the CWD
    assert run.info.user_id == data.tags["mlflow.user"]

    # Exporting the same capture again (a retry) does not make a second run.
    again = export(cli, capture, store, "h200")
    assert again.exit_code == 0 and f"run {run_id}" in again.stderr and "(already logged)" in again.stderr
    assert only_run(store, "h200").info.run_id == run_id


def test_run_with_mlflow_logs_a_no_device_capture(cli, store, tmp_path):
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-t",
            "rtx3050-laptop",
            "-w",
            "gemm_tiny",
            "-w",
            "gemm:m=64,n=64,k=64",
            "-o",
            str(out),
            "--mlflow-tracking-uri",
            store["uri"],
            "--export-option",
            "experiment=nodevice",
            "--export-option",
            f"artifact_location={store['root'] / 'nodevice'}",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "exported to mlflow: run " in result.stderr
    doc = json.loads(out.read_text())
    run = only_run(store, "nodevice")
    p, m, t = run.data.params, run.data.metrics, run.data.tags
    # an inline spec is a name MLflow refuses as a key: sanitised, and the mapping kept
    assert json.loads(t["tensorforge.workload_keys"]) == {"gemm_m_64_n_64_k_64": "gemm:m=64,n=64,k=64"}
    assert p["workload.gemm_m_64_n_64_k_64"] == p["workload.gemm_tiny"] == "gemm:m=64,n=64,k=64,dtype=bf16"
    assert p["target"] == "rtx3050-laptop" and "device.fingerprint" not in p
    predicted = {w["name"]: w["latency_s"] for w in doc["predicted"]["analytical"]["workloads"]}
    # PREDICTED only: no measured, calibrated or APE metric is invented
    assert m == {
        "gemm_tiny.predicted_analytical_s": predicted["gemm_tiny"],
        "gemm_m_64_n_64_k_64.predicted_analytical_s": predicted["gemm:m=64,n=64,k=64"],
    }
    assert t["tensorforge.labels"] == "PREDICTED"
    assert t["tensorforge.unavailable.MEASURED"] == doc["measured"]["reason"]
    assert t["tensorforge.bound_violations"].startswith("no verdict")
    assert t["bound_check.gemm_tiny"].startswith("no verdict")
    assert t["tensorforge.digest"] == doc["digest"]["value"]
    assert artifacts(store["client"], run.info.run_id) == ["capture/cap.json", "report/cap.report.html"]


def test_configuration_by_environment(cli, store, tmp_path, monkeypatch):
    """TENSORFORGE_EXPORT selects the sink; MLflow's own variables pick the store and experiment."""
    store["client"].create_experiment("from-env", artifact_location=str(store["root"] / "from-env"))
    monkeypatch.setenv("TENSORFORGE_EXPORT", "mlflow")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store["uri"])
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-env")
    result = CliRunner().invoke(cli, ["run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "-o", str(tmp_path / "c.json")])
    assert result.exit_code == 0, result.output
    assert "experiment 'from-env'" in result.stderr
    assert only_run(store, "from-env").data.tags["tensorforge.labels"] == "PREDICTED"


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if "export to mlflow" in line]


def test_unreachable_tracking_server_costs_nothing_but_one_line(cli, tmp_path, monkeypatch):
    # The refused connection is found before MLflow's client exists, so MLflow's retries with
    # back-off (minutes by default) never start: checked by the client never being made, not by
    # a wall-clock limit that a busy machine could break.
    clients = []
    monkeypatch.setattr("mlflow.tracking.MlflowClient", lambda *a, **k: clients.append(a or k))
    out = tmp_path / "cap.json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "-t",
            "rtx3050-laptop",
            "-w",
            "gemm_tiny",
            "-o",
            str(out),
            "--mlflow",
            "--export-option",
            "tracking_uri=http://127.0.0.1:9",
        ],
    )
    assert clients == []
    assert result.exit_code == 0, result.output
    assert verify(out).ok
    assert warnings_in(result.stderr) == [
        f"warning: export to mlflow failed: tracking server http://127.0.0.1:9 is unreachable: "
        f"Connection refused (the capture {out} is written)"
    ]
    # `tensorforge export` says the same and exits 1
    again = CliRunner().invoke(
        cli, ["export", str(out), "--to", "mlflow", "--option", "tracking_uri=http://127.0.0.1:9"]
    )
    assert again.exit_code == 1 and len(warnings_in(again.stderr)) == 1
    assert clients == []


class _Refusing(BaseHTTPRequestHandler):
    """A tracking server that answers every request with 403, as one without permission would."""

    def _refuse(self):
        body = json.dumps({"error_code": "PERMISSION_DENIED", "message": "no write access to this store"}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _refuse

    def log_message(self, *args):
        pass


def test_a_store_that_rejects_the_run(cli, tmp_path, monkeypatch, store):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    server = HTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        uri = f"http://127.0.0.1:{server.server_port}"
        out = tmp_path / "cap.json"
        result = CliRunner().invoke(
            cli, ["run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "-o", str(out), "--mlflow-tracking-uri", uri]
        )
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 0 and verify(out).ok
    (line,) = warnings_in(result.stderr)
    assert line.startswith(f"warning: export to mlflow failed: {uri}: ")
    assert "PERMISSION_DENIED" in line and line.endswith(f"(the capture {out} is written)")

    # A SQLite store rejects a run in a deleted experiment: exit 1 from `export`, one line.
    client = store["client"]
    client.delete_experiment(client.create_experiment("gone", artifact_location=str(store["root"] / "gone")))
    rejected = export(cli, out, store, "gone")
    assert rejected.exit_code == 1
    (line,) = warnings_in(rejected.stderr)
    assert "must be in the 'active' state" in line


def test_without_mlflow_the_sink_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow -> ImportError
    result = MlflowSink().export(read_capture(REAL_CAPTURE), str(REAL_CAPTURE), None, {})
    assert not result.ok and result.error.startswith("mlflow is not installed")
    assert "pip install 'tf-mlflow[sqlite]'" in result.error


def test_workload_keys_are_valid_deterministic_and_one_to_one():
    from mlflow.utils.validation import _validate_param_name

    names = [
        "gemm_tiny",
        "gemm:m=64,n=64",
        "gemm_m=64,n=64",
        "gemm_m_64_n_64",
        "a/b",
        "a_b",
        "..x",
        "",
        "é",
        "x" * 300,
        "x" * 300 + "y",
    ]
    keys = workload_keys(names)
    assert keys == workload_keys(reversed(names))
    assert len(set(keys.values())) == len(names)
    assert keys["gemm_tiny"] == "gemm_tiny" and keys["gemm_m_64_n_64"] == "gemm_m_64_n_64"
    assert keys["a_b"] == "a_b" and keys["a/b"].startswith("a_b-")
    for key in keys.values():
        for full in (f"workload.{key}", f"{key}.measured_p50_s"):
            _validate_param_name(full)
            assert len(full) <= 250


def test_content_of_a_capture_is_deterministic():
    assert build(read_capture(REAL_CAPTURE), "x.json") == build(read_capture(REAL_CAPTURE), "x.json")


ISOLATION = textwrap.dedent(r"""
    import json, sys
    import tensorforge, tensorforge.cli.main
    import tensorforge_measure.core_plugin, tensorforge_measure.run.export, tensorforge_measure.run.runner
    from tensorforge_measure.host import OpsHost
    from tensorforge_measure.run.export import resolve_sinks
    from click.testing import CliRunner
    sinks = [s.name for s in resolve_sinks(OpsHost(), ["mlflow"])]   # the plugin module is loaded
    listed = CliRunner().invoke(tensorforge.cli.main.make_cli(), ["list-plugins"])
    print(json.dumps({"sinks": sinks, "listed": "sinks: mlflow" in listed.output,
                      "leaked": sorted(m for m in sys.modules if m.split(".")[0] == "mlflow")}))
""")


def test_neither_core_nor_ops_imports_mlflow():
    env = {k: v for k, v in os.environ.items() if k not in ("TENSORFORGE_PLUGINS", "TENSORFORGE_DISABLE")}
    proc = subprocess.run(
        [sys.executable, "-c", ISOLATION], capture_output=True, text=True, cwd=str(REPO), env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"sinks": ["mlflow"], "listed": True, "leaked": []}


def test_ops_works_the_same_without_the_plugin(tmp_path, monkeypatch):
    cli = make_cli()  # plugins chosen when each command line starts, as a user's are
    monkeypatch.setenv("TENSORFORGE_DISABLE", "mlflow")  # as if tf-mlflow were not installed
    ok = CliRunner().invoke(cli, ["run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "-o", str(tmp_path / "a.json")])
    assert ok.exit_code == 0, ok.output
    assert "mlflow" not in ok.stderr
    missing = CliRunner().invoke(
        cli, ["run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--mlflow", "-o", str(tmp_path / "b.json")]
    )
    assert missing.exit_code == 2 and "unknown export sink 'mlflow'" in missing.stderr
    assert not (tmp_path / "b.json").exists()
