"""Which workloads the report puts side by side: the primary and the contrast comparison.

Why chosen from the numbers and not by name: the report reads any capture, from any workload
plugin, so it cannot know preset names. The primary is where a lower bound is tested most
directly: among single-operator workloads (one kernel, nothing between operators that the model
leaves out), the one with the most arithmetic, so fixed per-call costs weigh least. The contrast
is the opposite end: the workload with the least arithmetic, where fixed costs outside the model
dominate. Measured workloads are preferred (a comparison needs a measurement); with nothing
measured the same rule runs over the predictions. Ties go to the name that sorts first, so the
choice is deterministic. The user can name either with `report --primary/--contrast`.
"""

from typing import Any

import attrs

PRIMARY_RULE = (
    "the single-operator workload with the most FLOPs{measured}: fixed per-call costs "
    "weigh least there, so it tests the lower bound most directly"
)
CONTRAST_RULE = (
    "the workload with the fewest FLOPs{measured}: fixed costs outside the lower-bound model weigh most there"
)


@attrs.frozen
class Choice:
    name: str | None  # None: nothing to choose (no workload, or no second one)
    why: str  # the rule that chose it, or "named with --primary/--contrast"


def _pool(rows: list[dict[str, Any]]) -> tuple:
    measured = [r for r in rows if r["measured_p50_s"] is not None]
    return (measured, " measured") if measured else (rows, "")


def choose(rows: list[dict[str, Any]], primary: str | None = None, contrast: str | None = None) -> dict[str, Choice]:
    """{'primary': Choice, 'contrast': Choice} over the report's workload rows (each with
    'name', 'flops', 'operators' and 'measured_p50_s'). Names given by the user win."""
    pool, measured = _pool(rows)
    if primary is not None:
        first = Choice(primary, "named with --primary")
    else:
        single = [r for r in pool if r["operators"] == 1] or pool
        best = min(single, key=lambda r: (-r["flops"], r["name"]), default=None)
        first = Choice(best["name"] if best else None, PRIMARY_RULE.format(measured=measured))
    if contrast is not None:
        second = Choice(contrast, "named with --contrast")
    else:
        others = [r for r in pool if r["name"] != first.name]
        least = min(others, key=lambda r: (r["flops"], r["name"]), default=None)
        second = Choice(least["name"] if least else None, CONTRAST_RULE.format(measured=measured))
    return {"primary": first, "contrast": second}
