import math

import numpy as np
import pytest

from mklopt import Progress
from mklopt.stopping import (
    AllOf,
    AnyOf,
    BoundGap,
    DualityGap,
    MaxIter,
    MaxOracleCalls,
    Stop,
    TimeLimit,
    WeightChange,
    as_criterion,
)


def row(**kw):
    base = dict(iteration=1, elapsed=0.1, n_oracle_calls=1, value=100.0, lower=-math.inf,
                upper=100.0, gap=5.0, rel_gap=0.05, weights=np.array([0.5, 0.5]))
    base.update(kw)
    return Progress(**base)


def test_duality_gap_relative_and_absolute():
    assert DualityGap(0.1)(row()) == Stop("duality_gap", True)
    assert DualityGap(0.01)(row()) is None
    assert DualityGap(6.0, relative=False)(row()) == Stop("duality_gap", True)
    assert DualityGap(4.0, relative=False)(row()) is None
    assert DualityGap(1.0)(row(gap=math.nan, rel_gap=math.nan)) is None


def test_bound_gap_needs_finite_bounds():
    assert BoundGap(0.1)(row()) is None
    assert BoundGap(0.1)(row(lower=95.0)) == Stop("bound_gap", True)
    assert BoundGap(0.01)(row(lower=95.0)) is None
    assert BoundGap(6.0, relative=False)(row(lower=95.0)).converged


def test_counters_and_time():
    assert MaxIter(3)(row(iteration=2)) is None
    assert MaxIter(3)(row(iteration=3)) == Stop("max_iter", False)
    assert MaxOracleCalls(5)(row(n_oracle_calls=5)) == Stop("max_oracle_calls", False)
    assert TimeLimit(1.0)(row(elapsed=0.5)) is None
    assert TimeLimit(1.0)(row(elapsed=1.5)) == Stop("time_limit", False)


def test_weight_change_is_stateful_and_resets():
    c = WeightChange(1e-3)
    assert c(row(weights=np.array([0.5, 0.5]))) is None
    assert c(row(weights=np.array([0.6, 0.4]))) is None
    assert c(row(weights=np.array([0.6, 0.4]))) == Stop("weight_change", True)
    c.reset()
    assert c(row(weights=np.array([0.6, 0.4]))) is None


def test_composition_with_or_and_and_user_callables():
    def big_value(p):
        return p.value > 50

    any_ = DualityGap(0.01) | MaxIter(10) | big_value
    assert isinstance(any_, AnyOf) and len(any_.parts) == 3
    assert any_(row()) == Stop("big_value", False)
    all_ = MaxIter(1) & DualityGap(0.1)
    assert isinstance(all_, AllOf)
    s = all_(row())
    assert s.converged and "max_iter" in s.reason and "duality_gap" in s.reason
    assert (MaxIter(5) & DualityGap(0.1))(row()) is None
    assert (big_value | MaxIter(5))(row()) == Stop("big_value", False)


@pytest.mark.parametrize(
    "make, err, match",
    [
        (lambda: DualityGap(0), ValueError, "tol must be > 0"),
        (lambda: DualityGap(-1), ValueError, "tol must be > 0"),
        (lambda: DualityGap(float("nan")), ValueError, "tol must be finite"),
        (lambda: DualityGap("0.1"), TypeError, "tol must be a real number"),
        (lambda: DualityGap(0.1, relative="yes"), TypeError, "relative must be a bool"),
        (lambda: MaxIter(0), ValueError, "n must be >= 1"),
        (lambda: MaxIter(2.5), TypeError, "n must be an integer"),
        (lambda: TimeLimit(-1), ValueError, "seconds must be > 0"),
        (lambda: as_criterion(3), TypeError, "stop must be a StopCriterion or a callable"),
    ],
)
def test_bad_parameters_are_named(make, err, match):
    with pytest.raises(err, match=match):
        make()
