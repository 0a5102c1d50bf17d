"""MethodBase: set_params, register(replace=True), no clash with user hooks."""

import numpy as np
import pytest

from mklopt import solve
from mklopt.methods import SPG, CuttingPlane
from mklopt.methods._base import METHODS, MethodBase, register
from mklopt.stopping import DualityGap, MaxIter
from mklopt.testing import PiecewiseLinearOracle


def test_set_params_round_trips_and_returns_the_method():
    m = SPG()
    assert m.set_params(memory=3) is m
    assert m.get_params()["memory"] == 3


def test_set_params_names_an_unknown_parameter():
    with pytest.raises(ValueError, match="'nonsense'"):
        SPG().set_params(nonsense=1)


def test_gridsearch_reaches_a_nested_method_parameter():
    from sklearn.base import clone

    from mklopt.estimators import MKLClassifier

    est = MKLClassifier(method=SPG())
    est.set_params(method__memory=2)
    assert est.method.memory == 2
    assert clone(est).method.memory == 2


def test_register_replace_lets_a_cell_run_twice():
    for _ in range(2):

        @register("kit_test_method", replace=True)
        class Mine(CuttingPlane):
            pass

    assert METHODS["kit_test_method"] is Mine
    with pytest.raises(ValueError, match="already registered"):

        @register("kit_test_method")
        class Other(CuttingPlane):
            pass

    del METHODS["kit_test_method"]


class _Greedy(MethodBase):
    """A user's method with its own helpers named like the base's old internals."""

    def _start(self, oracle):
        from mklopt.domains import Simplex

        self._run = "mine"  # user state under a natural name
        m = oracle.n_kernels
        return Simplex(m), {"w": np.full(m, 1.0 / m)}

    def _ask(self, state):
        return state["w"]

    def _tell(self, state, query, answer):
        return None

    def _offer(self, *args):  # noqa: D401 - a user helper of the same name
        raise AssertionError("the base class must not call the user's _offer")

    def _make_report(self):
        raise AssertionError("the base class must not call the user's _make_report")


def test_user_private_names_do_not_collide_with_the_base():
    res = solve(PiecewiseLinearOracle.random(3, 4), _Greedy(), stop=DualityGap(1e-3) | MaxIter(2))
    assert res.n_oracle_calls == 2
