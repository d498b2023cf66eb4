"""The imported public rows (public_import.py) as points the estimate can be fitted on or scored
against: each row's workload resolved through the installed plugins, its bound predicted on the
target file of its GPU, and the measured time beside it. Shared by public_fit.py and
public_eval.py, so a row means the same in both.

Which target file stands for which GPU is fixed here (the GPU names are torch's
get_device_name() strings the sources recorded).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import public_import

from tensorforge.api import WorkloadPoint, predict, resolve_spec
from tensorforge.host.plugin_host import PluginHost

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "public"
TARGETS = {
    "NVIDIA A100-PCIE-40GB": "examples/targets/a100-pcie-40gb.toml",
    "NVIDIA A100-SXM4-80GB": "examples/targets/a100-sxm4-80gb.toml",
    "Tesla V100-PCIE-32GB": "examples/targets/v100-pcie-32gb.toml",
    "Tesla T4": "examples/targets/t4.toml",
    "NVIDIA H100 80GB HBM3": "examples/targets/h100-sxm5-80gb.toml",
    "NVIDIA L4": "examples/targets/l4.toml",
}
SHORT = {
    "NVIDIA A100-PCIE-40GB": "A100-PCIe-40GB",
    "NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB",
    "Tesla V100-PCIE-32GB": "V100-PCIe-32GB",
    "Tesla T4": "T4",
    "NVIDIA H100 80GB HBM3": "H100-SXM5",
    "NVIDIA L4": "L4",
}


def rows(source: str = "neusight") -> list[dict[str, str]]:
    return public_import.read(DATA / f"{source}.csv.gz")


def op_class(row: dict[str, str]) -> str:
    """The class a row is reported in: gemm (bmm, linear, matmul) or its vector kind."""
    return row["spec"].split(":", 1)[0]


def host() -> PluginHost:
    return PluginHost()


def target_path(gpu: str) -> str:
    """The target file of a GPU the public rows measured; an installed target's name (the H200's
    own rows: 'h200') is itself."""
    return str(ROOT / TARGETS[gpu]) if gpu in TARGETS else gpu


def points(core: PluginHost, chosen: Sequence[dict[str, str]], gpu: str, operating_point: str | None = None):
    """(the bound prediction, one WorkloadPoint per row) for rows of one GPU; a row whose spec the
    installed plugins cannot resolve is left out (the caller counts them)."""
    resolved, kept = [], []
    for r in chosen:
        try:
            resolved.append(resolve_spec(core, r["spec"]))
        except Exception:  # noqa: BLE001 - a kind not installed: the row is reported as unresolved
            continue
        kept.append(r)
    target = core.target(target_path(gpu))
    bound = predict(resolved, target, core.mappings(), operating_point, None, estimate=False)
    out = []
    for r, (w, k), wp in zip(kept, resolved, bound.workloads):
        out.append(
            WorkloadPoint(
                r["spec"],
                op_class(r),
                wp,
                tuple(k.operators(w.params)),
                k,
                w.params,
                float(r["latency_s"]),
                r["protocol"],
            )
        )
    return target, bound, kept, out


def every_nth(items: Sequence[Any], n: int, key=None) -> list[Any]:
    """n items spread evenly over `items` in order of `key` (deterministic)."""
    ordered = sorted(items, key=key) if key else list(items)
    if len(ordered) <= n:
        return ordered
    step = len(ordered) / n
    return [ordered[int(i * step)] for i in range(n)]
