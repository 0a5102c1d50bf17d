"""The driver guards the oracle: bad queries end the run with the best point; names and classes."""

import numpy as np
import pytest

from mklopt import solve
from mklopt.domains import ElasticNet, GroupSimplex, LpBall, Simplex
from mklopt.methods import LevelBundle, Subgradient
from mklopt.oracles import ConvergenceWarning
from mklopt.stopping import DualityGap, InvalidQueryError, MaxOracleCalls
from mklopt.testing import SmoothQuadraticOracle


class _Spy(SmoothQuadraticOracle):
    """Records every query it is given (it would answer NaN for a NaN query)."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.queries = []

    def __call__(self, w, warm_start=None):
        self.queries.append(np.array(w, dtype=float))
        return super().__call__(w, warm_start)


def _spy(seed=0):
    base = SmoothQuadraticOracle.random(6, 4, seed=seed)
    return _Spy(base.s, base.M)


class _BreaksAt(Subgradient):
    """Asks ``bad`` instead of its own query from call ``at`` on."""

    def __init__(self, at=1, bad="nan"):
        super().__init__()
        self.at = at
        self.bad = bad

    def get_params(self, deep=False):  # the extra parameters are not Subgradient's
        return {}

    def _start(self, oracle):
        self.n_asked = 0
        return super()._start(oracle)

    def _ask(self, state):
        w = np.array(super()._ask(state), dtype=float)
        self.n_asked += 1
        if self.n_asked >= self.at:
            if self.bad == "nan":
                w[1] = np.nan
            else:  # off the simplex: the sum drifts by 1e-3
                w = w * 1.001
        return w


@pytest.mark.parametrize("bad, why", [("nan", "not finite"), ("off", "not in its feasible set")])
def test_a_bad_query_ends_the_run_with_the_best_point(bad, why):
    o = _spy()
    method = _BreaksAt(at=6, bad=bad)
    with pytest.warns(ConvergenceWarning, match=rf"_BreaksAt asked for the query w=.*{why}"):
        res = solve(o, method, stop=MaxOracleCalls(50))
    assert res.reason == "invalid_query" and not res.converged
    # the bad query never reached the oracle
    assert all(np.all(np.isfinite(w)) and Simplex(6).contains(w) for w in o.queries)
    assert res.n_oracle_calls == len(o.queries) == len(res.history) >= 5
    # the best certified point so far is kept: the lowest value of the calls made
    assert res.value == min(r.value for r in res.history)
    assert res.value == pytest.approx(_spy()(res.weights).value, rel=1e-12)
    assert res.gap >= 0 and np.isfinite(res.gap)


def test_a_bad_first_query_raises_naming_the_method_and_the_query():
    o = _spy()
    with pytest.raises(InvalidQueryError, match=r"_BreaksAt asked for the query w=\[.*nan") as info:
        solve(o, _BreaksAt(at=1), stop=MaxOracleCalls(5))
    assert isinstance(info.value, ValueError) and info.value.method == "_BreaksAt"
    assert np.isnan(info.value.query[1]) and info.value.n_oracle_calls == 0
    assert o.queries == []


def test_solve_takes_a_registered_name():
    res = solve(SmoothQuadraticOracle.random(4, 3, seed=1), "level",
                stop=DualityGap(1e-4) | MaxOracleCalls(200))
    assert res.converged and res.rel_gap <= 1e-4


def test_solve_refuses_a_class_and_unknown_names_clearly():
    o = SmoothQuadraticOracle.random(4, 3, seed=1)
    with pytest.raises(TypeError, match=r"got the class LevelBundle; pass LevelBundle\(\)"):
        solve(o, LevelBundle)
    with pytest.raises(ValueError, match="unknown method 'levle'.*level"):
        solve(o, "levle")
    with pytest.raises(TypeError, match="has no start, ask, tell, report"):
        solve(o, object())


def test_oracle_base_setup_accepts_its_default_max_iter():
    from mklopt.oracles._loss_base import OracleBase

    class Iterative(OracleBase):
        def __init__(self, K):
            self._setup(K, tol=1e-4)

    o = Iterative(np.stack([np.eye(3), np.ones((3, 3))]))
    assert o.tol == 1e-4 and isinstance(o.max_iter, int) and o.max_iter >= 1


@pytest.mark.parametrize("domain, text", [
    (Simplex(3), "Simplex(n_kernels=3)"),
    (LpBall(3, 2.0), "LpBall(n_kernels=3, p=2)"),
    (ElasticNet(3, 0.5), "ElasticNet(n_kernels=3, lam=0.5)"),
    (GroupSimplex([[0, 1], [2]], 3), "GroupSimplex(n_kernels=3, n_groups=2)"),
])
def test_domains_have_a_readable_repr(domain, text):
    assert repr(domain) == text
