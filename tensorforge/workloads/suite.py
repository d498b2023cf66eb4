"""Resolving what the user asked to predict: preset names, inline specs
('gemm:m=8192,n=8192,k=8192,dtype=bf16'), presets with overrides ('gemm_tiny:dtype=fp16'),
and suite files (TOML or JSON)."""

from pathlib import Path
from typing import Any

from tensorforge.errors import TensorForgeError
from tensorforge.files.documents import read_document
from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.kinds import Workload, WorkloadKind


def parse_fields(text: str, where: str) -> dict[str, str]:
    """KEY=VALUE pairs of an inline spec (public: tensorforge.testing and rightsize reuse it)."""
    fields: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise TensorForgeError(f"{where}: expected key=value, got {part!r}")
        key, value = (s.strip() for s in part.split("=", 1))
        if not key:
            raise TensorForgeError(f"{where}: empty parameter name in {part!r}")
        if key in fields:
            raise TensorForgeError(f"{where}: parameter {key!r} given twice")
        fields[key] = value
    return fields


def _make(
    host: PluginHost, name: str, kind: WorkloadKind, fields: dict[str, Any], base_dir: Path | None
) -> tuple[Workload, WorkloadKind]:
    params = kind.parse(fields, base_dir=base_dir)
    return Workload(name=name, kind=kind.name, params=params, spec=kind.spec(params)), kind


def resolve_spec(host: PluginHost, text: str, base_dir: Path | None = None):
    """One workload from a preset name or an inline spec."""
    text = text.strip()
    head, _, rest = text.partition(":")
    overrides = parse_fields(rest, text)
    if head in host.preset_names():
        kind, fields = host.preset(head)
        fields.update(overrides)
        name = head if not overrides else text
        return _make(host, name, kind, fields, base_dir)
    if head in host.names("workloads"):
        return _make(host, text, host.workload_kind(head), overrides, base_dir)
    choices = host.preset_names() + host.names("workloads")
    from tensorforge.errors import unknown

    error = unknown("workload or preset", head, choices, listed_by="tensorforge workloads")
    raise TensorForgeError(str(error) + host.broken_hint())


def load_suite_file(host: PluginHost, path: Path):
    """Workloads from a suite file:  [[workload]] tables with `name`, and either `preset`
    (plus overrides) or `kind` plus parameters. JSON: {"workload": [...]}."""
    data = read_document(path, "suite file")
    entries = data.get("workload") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise TensorForgeError(f"suite file {path}: expected a non-empty list 'workload' of tables")
    result = []
    seen = set()
    for i, entry in enumerate(entries):
        where = f"suite file {path}, workload #{i + 1}"
        if not isinstance(entry, dict):
            raise TensorForgeError(f"{where}: expected a table, got {type(entry).__name__}")
        entry = dict(entry)
        name = entry.pop("name", None)
        preset = entry.pop("preset", None)
        kind_name = entry.pop("kind", None)
        for key, value in (("name", name), ("preset", preset), ("kind", kind_name)):
            # a list or table here reached a set() and ended in "unhashable type"
            if value is not None and not isinstance(value, str):
                raise TensorForgeError(f"{where}: {key!r} must be a string, got a {type(value).__name__}")
        try:
            if preset is not None:
                kind, fields = host.preset(str(preset))
                fields.update(entry)
                name = name or str(preset)
            elif kind_name is not None:
                kind, fields = host.workload_kind(str(kind_name)), entry
            else:
                raise TensorForgeError("needs 'preset' or 'kind'")
            if not name:
                raise TensorForgeError("needs a 'name'")
            if name in seen:
                raise TensorForgeError(f"duplicate workload name {name!r}")
            seen.add(name)
            result.append(_make(host, str(name), kind, fields, path.parent))
        except TensorForgeError as exc:
            raise TensorForgeError(f"{where}: {exc}") from None
    return result


def resolve(host: PluginHost, specs: tuple[str, ...], suite_files: tuple[str, ...] = ()):
    """The workloads to run: those asked for, or every plugin's default suite."""
    chosen: list = []
    for path in suite_files:
        chosen.extend(load_suite_file(host, Path(path)))
    for spec in specs:
        chosen.append(resolve_spec(host, spec))
    if not chosen:
        names = host.default_suite()
        if not names:
            raise TensorForgeError("no workload plugins installed: nothing to predict" + host.broken_hint())
        chosen = [resolve_spec(host, n) for n in names]
    names = [w.name for w, _ in chosen]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TensorForgeError(f"workload {dupes[0]!r} given twice")
    return chosen
