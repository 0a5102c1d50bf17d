"""The driver's check of a claimed convergence, and callable criteria."""

import warnings

import pytest

from mklopt import solve
from mklopt.methods import CuttingPlane
from mklopt.oracles import ConvergenceWarning
from mklopt.stopping import DualityGap, MaxIter, Stop
from mklopt.testing import PiecewiseLinearOracle


def _oracle():
    return PiecewiseLinearOracle.random(4, 6, seed=3)


def test_a_false_claim_of_convergence_is_not_reported_converged():
    """A criterion saying "converged" after one call, gap target 1e-12 unmet."""

    def claims(progress):
        return Stop("claimed", True)

    with pytest.warns(ConvergenceWarning, match="gap target|does not meet"):
        res = solve(_oracle(), CuttingPlane(), stop=DualityGap(1e-12) | claims)
    assert res.rel_gap > 1e-12
    assert not res.converged
    assert res.reason == "claimed; gap target unmet"


def test_a_met_gap_target_keeps_the_convergence():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = solve(_oracle(), CuttingPlane(), stop=DualityGap(1e-6) | MaxIter(200))
    assert res.converged and res.rel_gap <= 1e-6


def test_no_gap_target_means_the_claim_stands():
    res = solve(_oracle(), CuttingPlane(), stop=lambda p: Stop("mine", True))
    assert res.converged and res.reason == "mine"


class _Counter:
    """Stops after ``n`` calls; its count is per solve thanks to ``reset``."""

    def __init__(self, n):
        self.n = n
        self.seen = 0

    def __call__(self, progress):
        self.seen += 1
        return self.seen >= self.n

    def reset(self):
        self.seen = 0


def test_a_callable_criterion_is_reset_between_solves():
    stop = _Counter(3)
    first = solve(_oracle(), CuttingPlane(), stop=stop)
    second = solve(_oracle(), CuttingPlane(), stop=stop)
    assert first.n_oracle_calls == second.n_oracle_calls == 3
    assert second.reason == "user criterion"
    assert not second.converged
