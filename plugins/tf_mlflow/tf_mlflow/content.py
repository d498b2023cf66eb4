"""What of a capture becomes an MLflow run: params, metrics and tags, as plain Python values.

Pure and deterministic (the same capture gives the same content), and free of mlflow, so the
mapping can be read and tested without a tracking store. It reads the typed capture
(tensorforge_measure.capture.model.Capture), never the JSON by keys. Labels stay visible in the
names: `predicted_*` is PREDICTED, `measured_*` MEASURED, `ceiling.*` CALIBRATED,
`bound_check.*` POLICY.
"""

import hashlib
import json
import math
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import attrs

from tensorforge_measure import LABELS, Calibrated, Capture, Measured, Measurement

# MLflow's limits (mlflow.utils.validation): keys of at most 250 characters, param values of at
# most 6000, tag values of at most 8000. We keep keys well inside the limit.
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_NAME = 100

KEYS_TAG = "tensorforge.workload_keys"
KEYS_ARTIFACT = "tensorforge/workload_keys.json"

# MLflow accepts alphanumerics, _ - . space / (and ':' except on Windows). A workload name is
# one segment of a key, so '/' is replaced too (it would make a path), and so is a leading '.'
# (MLflow refuses keys that normalise to another path, such as '..x').
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- ]")


@attrs.frozen
class RunContent:
    run_name: str
    start_time_ms: int | None
    end_time_ms: int | None
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    extra_artifacts: dict[str, str]  # artifact path -> text, e.g. a long name mapping


def _sanitize(name: str) -> str:
    safe = _UNSAFE.sub("_", name).strip()
    if not safe or safe.startswith("."):
        safe = "_" + safe
    return safe


def workload_keys(names: Iterable[str]) -> dict[str, str]:
    """Workload name -> the segment used in MLflow keys. Names MLflow accepts stay as they are;
    others have each unsafe character replaced by '_'. Where that would make two names collide,
    or the name is too long, the changed name gets '-' + 8 hex digits of the SHA-256 of the
    original, so the mapping is deterministic and one-to-one."""
    names = sorted(set(names))
    base = {n: _sanitize(n)[:MAX_NAME] for n in names}
    taken: dict[str, int] = {}
    for b in base.values():
        taken[b] = taken.get(b, 0) + 1
    keys = {}
    for n in names:
        b = base[n]
        changed = b != n
        if changed and (taken[b] > 1 or len(_sanitize(n)) > MAX_NAME or b in names):
            b = f"{b}-{hashlib.sha256(n.encode('utf-8')).hexdigest()[:8]}"
        keys[n] = b
    return keys


def _millis(stamp: str | None) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp).timestamp() * 1000)
    except ValueError:
        return None


def _text(value: Any) -> str:
    """Strings as they are; anything else as JSON (true, 1e-05, null), as in the capture."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _clip(value: str, limit: int) -> str:
    return value if len(value) <= limit else value[: limit - 3] + "..."


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _decided(verdict: str) -> bool:
    return not verdict.startswith("no verdict")


def labels_available(capture: Capture) -> list[str]:
    """The labels whose sections hold evidence. POLICY counts only when some verdict exists
    ("no verdict: ..." is the absence of one)."""
    out = []
    for label in LABELS:
        if label.section == "predicted":
            ok = True
        elif label.section == "policy":
            ok = any(_decided(c.verdict) for c in capture.policy.bound_checks.values())
        else:
            ok = getattr(capture, label.section).available is True
        if ok:
            out.append(label.name)
    return out


def _flags(measured: dict[str, Measurement], keys: dict[str, str]):
    """Framework flags in force: those equal for every measured workload as `flags.<flag>`,
    the rest per workload as `<workload>.flags.<flag>`."""
    flags = {n: w.framework_flags for n, w in measured.items()}
    if not flags:
        return {}
    names = sorted({f for per in flags.values() for f in per})
    params = {}
    for flag in names:
        values = {n: _text(per[flag]) if flag in per else None for n, per in flags.items()}
        if len(set(values.values())) == 1 and None not in values.values():
            params[f"flags.{_sanitize(flag)}"] = next(iter(values.values()))
        else:
            for n, v in sorted(values.items()):
                if v is not None:
                    params[f"{keys[n]}.flags.{_sanitize(flag)}"] = v
    return params


def build(capture: Capture, capture_path: str | None = None, run_name: str | None = None) -> RunContent:
    predicted = capture.predicted
    measured = capture.measured if isinstance(capture.measured, Measured) else None
    calibrated = capture.calibrated if isinstance(capture.calibrated, Calibrated) else None
    comparison = capture.comparison
    provenance = capture.provenance

    workloads = predicted.analytical.workloads
    measured_w = dict(measured.workloads) if measured else {}
    compared = dict(comparison.workloads) if comparison else {}
    checks = capture.policy.bound_checks
    keys = workload_keys([w.name for w in workloads] + list(measured_w) + list(compared) + list(checks))

    params: dict[str, Any] = {
        "target": capture.target,
        "operating_point": capture.operating_point,
        "device.name": (measured.device.name if measured else None) or (calibrated.device if calibrated else None),
        "device.fingerprint": (measured.device.fingerprint if measured else None)
        or (calibrated.fingerprint if calibrated else None),
        "backend": measured.backend if measured else None,
        "calibrated_target": predicted.calibrated_target,
        "tensorforge.version": provenance.tensorforge_version,
    }
    for w in workloads:
        params[f"workload.{keys[w.name]}"] = w.spec
    ok = {n: m for n, m in measured_w.items() if isinstance(m, Measurement)}
    params.update(_flags(ok, keys))

    metrics: dict[str, Any] = {}
    for w in workloads:
        metrics[f"{keys[w.name]}.predicted_analytical_s"] = w.latency_s
    for w in predicted.calibrated.workloads if predicted.calibrated else ():
        if w.name in keys:
            metrics[f"{keys[w.name]}.predicted_calibrated_s"] = w.latency_s
    for name, m in ok.items():
        for q in ("p10", "p50", "p90"):
            metrics[f"{keys[name]}.measured_{q}_s"] = getattr(m.stats, q)
    for name, row in compared.items():
        metrics[f"{keys[name]}.ape_analytical"] = row.ape_analytical
        metrics[f"{keys[name]}.ape_calibrated"] = row.ape_calibrated
    if calibrated:
        ceilings = calibrated.ceilings
        for mode, rate in sorted(ceilings.compute.items()):
            metrics[f"ceiling.compute.{_sanitize(mode)}"] = rate
        metrics["ceiling.dram_bytes_per_s"] = ceilings.dram_bytes_per_s
        metrics["ceiling.launch_floor_s"] = ceilings.launch_floor_s

    tags: dict[str, Any] = {
        "tensorforge.labels": ",".join(labels_available(capture)),
        "tensorforge.digest": capture.digest.value if capture.digest else None,
        "tensorforge.schema": f"{capture.schema}/{capture.schema_version}",
        "tensorforge.capture": capture_path,
        "tensorforge.device_note": comparison.device_note if comparison else None,
        "tensorforge.host": provenance.host.hostname,
        # MLflow's own source tags: the command that produced the capture.
        "mlflow.source.type": "LOCAL",
        "mlflow.source.name": " ".join(provenance.command) or None,
    }
    for label in LABELS:
        section = getattr(capture, label.section)
        if getattr(section, "available", None) is False:
            tags[f"tensorforge.unavailable.{label.name}"] = section.reason or "unavailable"
    decided = [c for c in checks.values() if _decided(c.verdict)]
    violations = comparison.bound_violations if comparison else ()
    tags["tensorforge.bound_violations"] = (
        str(len(violations)) if decided else "no verdict: no bound check had its evidence"
    )
    for name, check in sorted(checks.items()):
        tags[f"bound_check.{keys[name]}"] = check.verdict

    extra: dict[str, str] = {}
    renamed = {k: n for n, k in sorted(keys.items()) if k != n}
    if renamed:
        mapping = json.dumps(renamed, sort_keys=True)
        if len(mapping) <= MAX_TAG_VALUE:
            tags[KEYS_TAG] = mapping
        else:
            extra[KEYS_ARTIFACT] = mapping
            tags[KEYS_TAG] = f"see artifact {KEYS_ARTIFACT}"

    started = provenance.started_at
    return RunContent(
        run_name=run_name or " ".join(str(p) for p in (capture.target, started) if p),
        start_time_ms=_millis(started),
        end_time_ms=_millis(provenance.finished_at),
        params={k: _clip(_text(v), MAX_PARAM_VALUE) for k, v in sorted(params.items()) if v is not None},
        metrics={k: f for k, v in sorted(metrics.items()) if (f := _number(v)) is not None},
        tags={k: _clip(_text(v), MAX_TAG_VALUE) for k, v in sorted(tags.items()) if v is not None},
        extra_artifacts=extra,
    )
