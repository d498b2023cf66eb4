"""What of a capture becomes an MLflow run: params, metrics and tags, as plain Python values.

Pure and deterministic (the same capture gives the same content), and free of mlflow, so the
mapping can be read and tested without a tracking store. Labels stay visible in the names:
`predicted_*` is PREDICTED, `measured_*` MEASURED, `ceiling.*` CALIBRATED, `bound_check.*` POLICY.
"""

import hashlib
import json
import math
import re
from datetime import datetime
from typing import Any
from collections.abc import Iterable, Mapping

import attrs

# MLflow's limits (mlflow.utils.validation): keys of at most 250 characters, param values of at
# most 6000, tag values of at most 8000. We keep keys well inside the limit.
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_NAME = 100

LABELS = (("predicted", "PREDICTED"), ("measured", "MEASURED"), ("calibrated", "CALIBRATED"),
          ("diagnostic", "DIAGNOSTIC"), ("policy", "POLICY"))

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
    extra_artifacts: dict[str, str]     # artifact path -> text, e.g. a long name mapping


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
    return value if len(value) <= limit else value[:limit - 3] + "..."


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _section(doc: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def labels_available(doc: Mapping[str, Any]) -> list[str]:
    """The labels whose sections hold evidence. POLICY counts only when some verdict exists
    ("no verdict: ..." is the absence of one)."""
    out = []
    for key, label in LABELS:
        section = _section(doc, key)
        if key == "predicted":
            ok = isinstance(section.get("analytical"), dict)
        elif key == "policy":
            checks = section.get("bound_checks") or {}
            ok = bool(section.get("verdicts")) or any(
                not str(c.get("verdict", "no verdict")).startswith("no verdict") for c in checks.values())
        else:
            ok = section.get("available") is True
        if ok:
            out.append(label)
    return out


def _flags(measured: Mapping[str, Any], keys: Mapping[str, str]):
    """Framework flags in force: those equal for every measured workload as `flags.<flag>`,
    the rest per workload as `<workload>.flags.<flag>`."""
    flags = {n: w.get("framework_flags") or {} for n, w in measured.items()
             if isinstance(w, dict) and w.get("status") == "ok"}
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


def build(doc: Mapping[str, Any], capture_path: str | None = None,
          run_name: str | None = None) -> RunContent:
    predicted = _section(doc, "predicted")
    analytical = _section(predicted, "analytical")
    calibrated_pred = _section(predicted, "calibrated")
    measured = _section(doc, "measured")
    calibrated = _section(doc, "calibrated")
    comparison = _section(doc, "comparison")
    policy = _section(doc, "policy")
    provenance = _section(doc, "provenance")
    device = _section(measured, "device")

    workloads = [w for w in analytical.get("workloads") or [] if isinstance(w, dict) and "name" in w]
    measured_w = _section(measured, "workloads")
    compared = _section(comparison, "workloads")
    checks = _section(policy, "bound_checks")
    keys = workload_keys([w["name"] for w in workloads] + list(measured_w) + list(compared) + list(checks))

    params: dict[str, Any] = {
        "target": doc.get("target"),
        "operating_point": doc.get("operating_point"),
        "device.name": device.get("name") or calibrated.get("device"),
        "device.fingerprint": device.get("fingerprint") or calibrated.get("fingerprint"),
        "backend": measured.get("backend"),
        "calibrated_target": predicted.get("calibrated_target"),
        "tensorforge.version": provenance.get("tensorforge_version"),
    }
    for w in workloads:
        params[f"workload.{keys[w['name']]}"] = w.get("spec")
    params.update(_flags(measured_w, keys))

    metrics: dict[str, Any] = {}
    for w in workloads:
        metrics[f"{keys[w['name']]}.predicted_analytical_s"] = w.get("latency_s")
    for w in calibrated_pred.get("workloads") or []:
        if isinstance(w, dict) and w.get("name") in keys:
            metrics[f"{keys[w['name']]}.predicted_calibrated_s"] = w.get("latency_s")
    for name, m in measured_w.items():
        if isinstance(m, dict) and m.get("status") == "ok":
            stats = m.get("stats") or {}
            for q in ("p10", "p50", "p90"):
                metrics[f"{keys[name]}.measured_{q}_s"] = stats.get(q)
    for name, row in compared.items():
        if isinstance(row, dict):
            for kind in ("analytical", "calibrated"):
                metrics[f"{keys[name]}.ape_{kind}"] = row.get(f"ape_{kind}")
    if calibrated.get("available") is True:
        ceilings = _section(calibrated, "ceilings")
        for mode, rate in sorted(_section(ceilings, "compute").items()):
            metrics[f"ceiling.compute.{_sanitize(mode)}"] = rate
        metrics["ceiling.dram_bytes_per_s"] = ceilings.get("dram_bytes_per_s")
        metrics["ceiling.launch_floor_s"] = ceilings.get("launch_floor_s")

    digest = _section(doc, "digest").get("value")
    tags: dict[str, Any] = {
        "tensorforge.labels": ",".join(labels_available(doc)),
        "tensorforge.digest": digest,
        "tensorforge.schema": doc.get("schema"),
        "tensorforge.capture": capture_path,
        "tensorforge.device_note": comparison.get("device_note"),
        "tensorforge.host": _section(provenance, "host").get("hostname"),
        # MLflow's own source tags: the command that produced the capture.
        "mlflow.source.type": "LOCAL",
        "mlflow.source.name": " ".join(str(a) for a in provenance.get("command") or []) or None,
    }
    for key, label in LABELS:
        section = _section(doc, key)
        if section.get("available") is False:
            tags[f"tensorforge.unavailable.{label}"] = section.get("reason") or "unavailable"
    decided = [c for c in checks.values()
               if isinstance(c, dict) and not str(c.get("verdict", "no verdict")).startswith("no verdict")]
    violations = comparison.get("bound_violations") or []
    tags["tensorforge.bound_violations"] = (
        str(len(violations)) if decided else "no verdict: no bound check had its evidence")
    for name, check in sorted(checks.items()):
        if isinstance(check, dict):
            tags[f"bound_check.{keys[name]}"] = check.get("verdict")

    extra: dict[str, str] = {}
    renamed = {k: n for n, k in sorted(keys.items()) if k != n}
    if renamed:
        mapping = json.dumps(renamed, sort_keys=True)
        if len(mapping) <= MAX_TAG_VALUE:
            tags[KEYS_TAG] = mapping
        else:
            extra[KEYS_ARTIFACT] = mapping
            tags[KEYS_TAG] = f"see artifact {KEYS_ARTIFACT}"

    started = provenance.get("started_at")
    return RunContent(
        run_name=run_name or " ".join(str(p) for p in (doc.get("target"), started) if p),
        start_time_ms=_millis(started),
        end_time_ms=_millis(provenance.get("finished_at")),
        params={k: _clip(_text(v), MAX_PARAM_VALUE) for k, v in sorted(params.items()) if v is not None},
        metrics={k: f for k, v in sorted(metrics.items()) if (f := _number(v)) is not None},
        tags={k: _clip(_text(v), MAX_TAG_VALUE) for k, v in sorted(tags.items()) if v is not None},
        extra_artifacts=extra,
    )
