"""One relative-gap rule and one inner-tolerance rule, wherever a gap or a tolerance is decided."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mklopt import MKLClassifier, MKLRegressor, OracleAnswer, Progress
from mklopt._policy import (
    INNER_TOL_FLOOR,
    INNER_TOL_MAX,
    default_inner_tol,
    inner_tol_for,
    relative_gap,
    relative_target,
)
from mklopt._types import MethodReport
from mklopt.stopping import BoundGap, DualityGap

finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(gap=st.floats(0.0, 1e6), upper=finite)
def test_relative_gap_is_gap_over_the_upper_bound_with_one_rule_at_zero(gap, upper):
    r = relative_gap(gap, upper)
    if upper != 0.0:
        assert r == gap / abs(upper)
    else:
        assert r == (0.0 if gap == 0.0 else math.inf)


def test_relative_gap_of_no_point_is_nan():
    assert math.isnan(relative_gap(1.0, math.inf))
    assert math.isnan(relative_gap(math.nan, 1.0))


def _row(value, lower):
    gap = value - lower
    return Progress(iteration=1, elapsed=0.0, n_oracle_calls=1, value=value, lower=lower,
                    upper=value, gap=gap, rel_gap=relative_gap(gap, value),
                    weights=np.ones(2) / 2)


def _report(value, lower):
    w = np.ones(2) / 2
    answer = OracleAnswer(w=w, value=value, grad=np.zeros(2), q=np.zeros(2), alpha=np.zeros(1),
                          bias=0.0, support=np.zeros(0, dtype=np.int64))
    return MethodReport(best=answer, weights=w, gap=value - lower, lower=lower, n_iter=1)


@pytest.mark.parametrize("value, lower", [(0.0, 0.0), (0.0, -1e-3), (2.0, 1.99), (-4.0, -4.5)])
def test_every_site_agrees_on_the_relative_gap(value, lower):
    # the method report, the row the driver records and both stopping rules
    rel = relative_gap(value - lower, value)
    assert _report(value, lower).rel_gap == rel
    row = _row(value, lower)
    assert (DualityGap(1e-2)(row) is not None) == (rel <= 1e-2)
    assert (BoundGap(1e-2)(row) is not None) == (rel <= 1e-2)


def test_the_inner_tolerance_follows_the_gap_between_its_floor_and_start():
    assert inner_tol_for(1.0, 1e-3) == 1e-3
    assert inner_tol_for(1e-3) == pytest.approx(1e-5)
    assert inner_tol_for(1e-15) == INNER_TOL_FLOOR
    assert inner_tol_for(math.inf, 0.1) == 0.1
    assert default_inner_tol(10.0) == INNER_TOL_MAX
    assert relative_target(1e-2, True, 0.0) == 1e-2
    assert relative_target(1e-2, False, -4.0) == 2.5e-3
    assert relative_target(1e-2, False, 0.0) == math.inf


@pytest.mark.parametrize("make", [MKLClassifier, MKLRegressor])
@pytest.mark.parametrize("tol", [1e-1, 1e-3, 1e-8])
def test_the_estimators_default_inner_tolerance_is_the_policys(make, tol, monkeypatch):
    seen = []
    from mklopt.estimators import mkl

    # one site: MKLBase's plan, which the classifier and the regressor share
    real = mkl.default_inner_tol
    monkeypatch.setattr(mkl, "default_inner_tol", lambda t: seen.append(t) or real(t))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int) if make is MKLClassifier else X[:, 0]
    est = make(tol=tol, method="level", max_iter=3)
    with pytest.warns(Warning):  # max_iter=3 stops short of tol
        est.fit(X, y)
    assert seen == [tol]
