"""The 'mlflow' capture sink: one MLflow run per capture.

mlflow is imported inside `export` only, so `tensorforge list-plugins` stays fast and the rest
of TensorForge never loads it. Every failure (mlflow missing, store unreachable, run rejected)
comes back as ExportResult(ok=False, error=<one line>): the capture on disk is the record.
"""

import getpass
import logging
import os
import socket
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from tensorforge_measure import Capture, CaptureSink, ExportResult
from tf_mlflow.content import build

NAME = "mlflow"
DEFAULT_EXPERIMENT = "tensorforge"
INSTALL_HINT = "pip install 'tf-mlflow[sqlite]' (or mlflow-skinny)"
OPTIONS = ("tracking_uri", "experiment", "run_name", "artifact_location")
# MLflow's limits per log_batch call.
BATCH_PARAMS_TAGS = 100
BATCH_METRICS = 1000
MAX_ERROR = 400


class _Failed(Exception):
    """A failure we can already say in one line."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())  # MLflow messages may span lines
    if not isinstance(exc, _Failed):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= MAX_ERROR else text[: MAX_ERROR - 3] + "..."


def _option(options: Mapping[str, str], key: str) -> str | None:
    """`key`, also spelled with dashes or prefixed 'mlflow.' (options go to every sink)."""
    for spelling in (key, key.replace("_", "-"), f"mlflow.{key}", f"mlflow.{key.replace('_', '-')}"):
        value = options.get(spelling)
        if value:
            return value
    return None


def _check_reachable(uri: str) -> None:
    """An HTTP tracking server that refuses connections fails in about a second, instead of
    after MLflow's retries with back-off (minutes by default). Skipped behind a proxy."""
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return
    if urllib.request.getproxies().get(parsed.scheme) and not urllib.request.proxy_bypass(parsed.hostname):
        return
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        timeout = min(10.0, float(os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")))
    except ValueError:
        timeout = 10.0
    try:
        socket.create_connection((parsed.hostname, port), timeout=timeout).close()
    except OSError as exc:
        raise _Failed(f"tracking server {uri} is unreachable: {exc.strerror or exc}") from None


@contextmanager
def _quiet_logs():
    """MLflow and Alembic log INFO lines (e.g. database migrations) to stderr; during an export
    only their warnings are shown, unless the user set MLFLOW_LOGGING_LEVEL."""
    if os.environ.get("MLFLOW_LOGGING_LEVEL"):
        yield
        return
    loggers = [logging.getLogger(n) for n in ("mlflow", "alembic")]
    before = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(max(lg.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        for lg, level in zip(loggers, before):
            lg.setLevel(level)


def _experiment_id(client, name: str, artifact_location: str | None) -> str:
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(name, artifact_location=artifact_location)
    except MlflowException:
        found = client.get_experiment_by_name(name)  # created concurrently by another run
        if found is None:
            raise
        return found.experiment_id


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "unknown"


def _chunks(items, size):
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _location(uri: str, experiment: str, exp_id: str, run_id: str) -> str:
    if urllib.parse.urlsplit(uri).scheme in ("http", "https"):
        return f"{uri.rstrip('/')}/#/experiments/{exp_id}/runs/{run_id}"
    return f"run {run_id} in experiment '{experiment}' at {uri}"


class MlflowSink(CaptureSink):
    name = NAME
    description = (
        "log each capture as an MLflow run (params, metrics, label/verdict tags, the "
        "capture and its HTML report as artifacts); options: " + ", ".join(OPTIONS)
    )

    def export(
        self, capture: Capture, capture_path: str, report_html: str | None, options: Mapping[str, str]
    ) -> ExportResult:
        try:
            with _quiet_logs():
                import mlflow
                from mlflow.tracking import MlflowClient  # noqa: F401  (ImportError here too)
        except ImportError as exc:
            return ExportResult(NAME, False, error=f"mlflow is not installed ({exc}): {INSTALL_HINT}")
        uri = _option(options, "tracking_uri") or mlflow.get_tracking_uri()
        try:
            with _quiet_logs():
                return self._export(uri, capture, capture_path, report_html, options)
        except Exception as exc:  # never raise: the capture on disk stays the record
            message = _one_line(exc)
            if isinstance(exc, ImportError) or "sqlalchemy" in message.lower() or "alembic" in message.lower():
                message += f" ({INSTALL_HINT})"
            return ExportResult(NAME, False, error=message if uri in message else f"{uri}: {message}")

    def _export(self, uri, capture, capture_path, report_html, options) -> ExportResult:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient

        experiment = _option(options, "experiment") or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        content = build(capture, str(Path(capture_path).resolve()), _option(options, "run_name"))
        digest = content.tags.get("tensorforge.digest")

        _check_reachable(uri)
        client = MlflowClient(tracking_uri=uri)
        exp_id = _experiment_id(client, experiment, _option(options, "artifact_location"))

        # The same capture exported twice (e.g. a retry of `tensorforge export`) is one run.
        if digest:
            for existing in client.search_runs([exp_id], f"tags.`tensorforge.digest` = '{digest}'", max_results=10):
                if existing.info.status == "FINISHED":
                    return ExportResult(
                        NAME,
                        True,
                        location=_location(uri, experiment, exp_id, existing.info.run_id) + " (already logged)",
                    )

        run = client.create_run(
            exp_id, start_time=content.start_time_ms, run_name=content.run_name, tags={"mlflow.user": _user()}
        )
        run_id = run.info.run_id
        try:
            stamp = content.end_time_ms or int(time.time() * 1000)
            metrics = [Metric(k, v, stamp, 0) for k, v in content.metrics.items()]
            params = [Param(k, v) for k, v in content.params.items()]
            tags = [RunTag(k, v) for k, v in content.tags.items()]
            for chunk in _chunks(params, BATCH_PARAMS_TAGS):
                client.log_batch(run_id, params=chunk, synchronous=True)
            for chunk in _chunks(tags, BATCH_PARAMS_TAGS):
                client.log_batch(run_id, tags=chunk, synchronous=True)
            for chunk in _chunks(metrics, BATCH_METRICS):
                client.log_batch(run_id, metrics=chunk, synchronous=True)
            client.log_artifact(run_id, capture_path, "capture")
            with tempfile.TemporaryDirectory(prefix="tf-mlflow-") as tmp:
                if report_html is not None:
                    report = Path(tmp) / (Path(capture_path).stem + ".report.html")
                    report.write_text(report_html, encoding="utf-8")
                    client.log_artifact(run_id, str(report), "report")
                for rel, text in content.extra_artifacts.items():
                    path = Path(tmp, "extra", rel)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
                    client.log_artifact(run_id, str(path), str(Path(rel).parent))
            client.set_terminated(run_id, "FINISHED", end_time=content.end_time_ms)
        except Exception:
            try:  # leave no run looking complete; a later export retries (only FINISHED counts)
                client.set_terminated(run_id, "FAILED")
            except Exception:
                pass
            raise
        return ExportResult(NAME, True, location=_location(uri, experiment, exp_id, run_id))
