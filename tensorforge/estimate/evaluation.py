"""Scoring bound and estimate against measurements, per class: median and p90 APE of each,
bound violations, estimates under their bound (must be none), and the share of the gap
(measured - bound) each term of the estimate explains. Pure: the Ops command feeds it rows read
from a capture, the report shows the same table."""

from collections.abc import Sequence

import attrs
import numpy as np

from tensorforge.estimate.classes import CLASSES, FAMILIES
from tensorforge.estimate.results import TERMS

VIOLATION_TOLERANCE = 0.02


@attrs.frozen
class Row:
    name: str
    klass: str
    regime: str  # which measurement (eager, graph, ...) and so which estimate
    measured_s: float
    bound_s: float
    estimate_s: float
    terms: dict[str, float]  # the estimate's terms in this regime (host_overhead only if eager)
    tolerance: float = VIOLATION_TOLERANCE

    @property
    def ape_bound(self) -> float:
        return abs(self.bound_s - self.measured_s) / self.measured_s

    @property
    def ape_estimate(self) -> float:
        return abs(self.estimate_s - self.measured_s) / self.measured_s

    @property
    def violation(self) -> bool:
        return self.measured_s < self.bound_s * (1.0 - self.tolerance)


@attrs.frozen
class ClassScore:
    name: str
    n: int
    bound_median: float
    bound_p90: float
    estimate_median: float
    estimate_p90: float
    violations: int
    estimate_below_bound: int
    term_shares: dict[str, float]  # of sum(measured - bound); 'unexplained' is the rest
    workloads: list[str]


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def score(name: str, rows: Sequence[Row]) -> ClassScore | None:
    if not rows:
        return None
    gap = sum(r.measured_s - r.bound_s for r in rows)
    shares: dict[str, float] = {}
    if gap > 0:
        for term in TERMS:
            value = sum(r.terms.get(term, 0.0) for r in rows)
            if value > 0:
                shares[term] = value / gap
        shares["unexplained"] = 1.0 - sum(shares.values())
    return ClassScore(
        name=name,
        n=len(rows),
        bound_median=_pct([r.ape_bound for r in rows], 50),
        bound_p90=_pct([r.ape_bound for r in rows], 90),
        estimate_median=_pct([r.ape_estimate for r in rows], 50),
        estimate_p90=_pct([r.ape_estimate for r in rows], 90),
        violations=sum(r.violation for r in rows),
        estimate_below_bound=sum(r.estimate_s < r.bound_s * (1 - 1e-12) for r in rows),
        term_shares=shares,
        workloads=[r.name for r in rows],
    )


@attrs.frozen
class Evaluation:
    classes: list[ClassScore]
    families: list[ClassScore]
    overall: ClassScore | None
    rows: list[Row]


def evaluate(rows: Sequence[Row]) -> Evaluation:
    order = {c: i for i, c in enumerate(CLASSES)}
    names = sorted({r.klass for r in rows}, key=lambda c: order.get(c, len(order)))
    classes = [s for s in (score(c, [r for r in rows if r.klass == c]) for c in names) if s]
    families = [s for s in (score(f, [r for r in rows if r.klass in members]) for f, members in FAMILIES.items()) if s]
    return Evaluation(classes=classes, families=families, overall=score("all", list(rows)), rows=list(rows))
