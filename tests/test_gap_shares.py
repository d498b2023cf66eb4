"""The gap between bound and measurement, divided among the estimate's terms, adds up to 100%:
each term's share, and 'unexplained' (what no term explains: negative where the terms add up to
more than the gap, the estimate overshooting) as the rest. A reader once saw "compute
efficiency 240.0%" beside "unexplained -58.2%" with no sign or word to say why. Checked on
random rows and on every class of the golden estimate evaluations, in the numbers
(ClassScore.term_shares) and in the text `evaluate` and the report print (shares_cell)."""

import math
import re

import pytest
from golden import H200_ESTIMATE_EVAL, HOST_CPU_ESTIMATE_EVAL, load_json
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorforge.estimate.classes import CLASSES
from tensorforge.estimate.evaluation import Row, evaluate
from tensorforge.estimate.results import TERMS
from tensorforge_measure.compare.evaluation import rows_from_capture, shares_cell

SHOWN = re.compile(r"([+-]?)(\d+\.\d)%")


def holds(shares: dict[str, float]) -> None:
    if not shares:  # no gap (measured at or under the bound overall): no share is claimed
        assert shares_cell(shares) == "-"
        return
    assert set(shares) <= {*TERMS, "unexplained"} and "unexplained" in shares
    assert all(v > 0 for k, v in shares.items() if k != "unexplained")  # only the rest is signed either way
    scale = max(1.0, *(abs(v) for v in shares.values()))
    assert math.isclose(sum(shares.values()), 1.0, rel_tol=0, abs_tol=1e-9 * scale), shares
    # as printed: every share carries its sign, and they add up to 100% within their rounding
    cell = shares_cell(shares)
    shown = SHOWN.findall(cell)
    assert shown and all(sign for sign, _ in shown), cell
    total = sum(float(sign + digits) for sign, digits in shown)
    assert abs(total - 100.0) <= 0.05 * len(shown) + 1e-7 * scale * 100, cell
    assert ("(the estimate overshoots)" in cell) == (shares["unexplained"] < 0), cell


def check(rows: list[Row]) -> None:
    ev = evaluate(rows)
    for s in [*ev.classes, *ev.families, *([ev.overall] if ev.overall else [])]:
        holds(s.term_shares)


@st.composite
def rows(draw) -> list[Row]:
    out = []
    for i in range(draw(st.integers(1, 6))):
        bound = draw(st.floats(1e-7, 1.0))
        measured = bound * draw(st.floats(0.5, 6.0))
        terms = draw(
            st.dictionaries(
                st.sampled_from(sorted(TERMS)), st.floats(0.0, 3.0, allow_subnormal=False), max_size=len(TERMS)
            )
        )
        terms = {k: v * bound for k, v in terms.items()}
        klass = draw(st.sampled_from(CLASSES[:6]))
        out.append(Row(f"w{i}", klass, "eager", measured, bound, bound + sum(terms.values()), terms))
    return out


@settings(max_examples=40, deadline=None)
@given(rows())
def test_shares_sum_to_one_hundred_percent_on_random_rows(drawn):
    check(drawn)


def test_an_estimate_that_overshoots_leaves_a_negative_rest():
    # the terms explain 2.4 times the gap: the rest is -140%, said to be the estimate overshooting
    (row,) = [Row("a", "gemm-large", "eager", 1.1, 1.0, 1.24, {"compute_efficiency": 0.24})]
    (large,) = evaluate([row]).classes
    assert large.term_shares == pytest.approx({"compute_efficiency": 2.4, "unexplained": -1.4})
    assert shares_cell(large.term_shares) == "compute efficiency +240.0%; unexplained -140.0% (the estimate overshoots)"
    holds(large.term_shares)


@pytest.mark.parametrize("path", [H200_ESTIMATE_EVAL, HOST_CPU_ESTIMATE_EVAL], ids=lambda p: p.name)
def test_shares_sum_to_one_hundred_percent_on_the_golden_evaluations(host, path):
    found, _ = rows_from_capture(load_json(path), host)
    assert found
    check(found)
