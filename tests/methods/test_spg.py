"""SPG (spectral projected gradient): certified optima on every domain it takes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt import MKLClassifier, solve
from mklopt.domains import ElasticNet, LpBall, Simplex
from mklopt.methods import SPG, LevelBundle, get_method
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter, MaxOracleCalls
from mklopt.testing import PiecewiseLinearOracle
from tests._cvx_reference import exact_optimum, small_problem
from tests._strategies import smooth_quadratic_oracles
from tests.methods import _svm_problems as P

NORMS = [1.0, 4.0 / 3.0, 2.0, 4.0, np.inf]


def _domain(norm, m):
    return Simplex(m) if norm == 1.0 else LpBall(m, norm)


def test_registered():
    assert get_method("spg") is SPG
    assert SPG().get_params() == {"norm": 1.0, "elastic_net": None, "memory": 10,
                                  "sufficient_decrease": 1e-4, "max_backtracks": 30}


@pytest.mark.parametrize("norm", NORMS)
def test_certified_gap_1e3_on_the_small_svm(norm):
    dom = _domain(norm, 5)
    exact = P.exact(dom, f"spg{norm}")
    res = solve(P.oracle(), SPG(norm=norm), stop=DualityGap(1e-3) | MaxOracleCalls(500))
    assert res.converged and 0 <= res.rel_gap <= 1e-3, (res.reason, res.rel_gap)
    assert res.lower <= exact + P.slack(exact)
    assert exact - P.slack(exact) <= res.value <= exact + res.gap + P.slack(exact)
    assert all(dom.contains(p.weights, tol=1e-9) for p in res.history)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("C", [1.0, 10.0])
def test_agrees_with_the_level_method_and_clarabel(seed, C):
    K, y = small_problem("ionosphere", n=80, seed=seed)
    exact = exact_optimum(K, y, C, Simplex(5))
    spg = solve(SVMDual(K, y, C=C, tol=1e-7), SPG(), stop=DualityGap(1e-6) | MaxOracleCalls(500))
    level = solve(SVMDual(K, y, C=C, tol=1e-7), LevelBundle(),
                  stop=DualityGap(1e-6) | MaxOracleCalls(500))
    assert spg.converged and level.converged
    slack = 1e-6 * max(1.0, abs(exact))
    assert abs(spg.value - exact) <= spg.gap + slack
    assert abs(spg.value - level.value) <= spg.gap + level.gap + slack
    # the same value from (nearly) the same kernel weights where the optimum is unique
    np.testing.assert_allclose(spg.weights, level.weights, atol=0.05)


@settings(max_examples=20)
@given(smooth_quadratic_oracles(min_m=1, max_m=6), st.sampled_from(NORMS + [1.5, 3.0]))
def test_reaches_the_exact_optimum_on_toy_oracles(oracle, norm):
    # (norms whose p* cvxpy represents exactly: it approximates other powers)
    dom = _domain(norm, oracle.n_kernels)
    exact = oracle.exact_optimum(dom)
    res = solve(oracle, SPG(norm=norm), stop=DualityGap(1e-7) | MaxOracleCalls(2000))
    tol = 1e-6 * max(1.0, abs(exact))
    assert res.converged, (res.reason, res.rel_gap)
    assert res.lower <= exact + tol
    assert exact - tol <= res.value <= exact + res.gap + tol


@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_elastic_net_domain(lam):
    from tests.methods._enet_reference import exact_svm

    exact = exact_svm(*P.problem(), P.C, lam)
    method = SPG(elastic_net=lam)
    res = solve(P.oracle(), method, stop=DualityGap(1e-6) | MaxOracleCalls(500))
    assert isinstance(method.domain, ElasticNet) and method.domain.lam == lam
    assert res.converged and res.rel_gap <= 1e-6
    assert exact - P.slack(exact) <= res.value <= exact + res.gap + P.slack(exact)


def test_nonsmooth_objective_keeps_a_valid_certificate():
    """On a piecewise-linear J the spectral step may stall at a kink; the gap stays valid."""
    for seed in range(4):
        oracle = PiecewiseLinearOracle.random(6, 8, seed=seed)
        exact = oracle.exact_l1_optimum()
        res = solve(oracle, SPG(), stop=DualityGap(1e-6) | MaxOracleCalls(300))
        assert res.reason in ("duality_gap", "stationary", "line_search_stalled",
                              "max_oracle_calls"), res.reason
        assert res.lower <= exact + 1e-9
        assert exact - 1e-9 <= res.value <= exact + res.gap + 1e-9


def test_monotone_line_search_with_memory_one():
    """memory=1 is the monotone Armijo rule: accepted points never raise J."""
    oracle = SVMDual(*P.problem(), C=10.0, tol=1e-8)
    method = SPG(memory=1)
    seen = []
    method.start(oracle)
    for _ in range(40):
        w = method.ask()
        ans = oracle(w)
        method.tell(w, ans)
        rep = method.report()
        seen.append((rep.n_iter, ans.value))
        if rep.stop is not None or rep.rel_gap <= 1e-9:
            break
    # the value at the last call of each iteration is its accepted point
    accepted = {}
    for it, v in seen:
        accepted[it] = v
    vals = [accepted[k] for k in sorted(accepted) if k > 0]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(vals, vals[1:]))


def test_classifier_runs_spg():
    from mklopt import datasets
    from mklopt.kernels import linear, rbf

    X, y = datasets.load("sonar")
    idx = np.random.default_rng(0).choice(len(y), 80, replace=False)
    X, y = X[idx], y[idx]
    kernels = [rbf(2.0), rbf(8.0), linear()]
    spg = MKLClassifier(kernels=kernels, method="spg", tol=1e-4).fit(X, y)
    level = MKLClassifier(kernels=kernels, method="level", tol=1e-4).fit(X, y)
    assert spg.converged_ and spg.gap_ <= 1e-4
    assert np.mean(spg.predict(X) == level.predict(X)) >= 0.95


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(norm=0.5), ValueError, "norm"),
    (dict(norm=-np.inf), ValueError, "norm"),
    (dict(norm="1"), TypeError, "norm"),
    (dict(elastic_net=1.5), ValueError, "elastic_net"),
    (dict(norm=2.0, elastic_net=0.5), ValueError, "norm"),
    (dict(memory=0), ValueError, "memory"),
    (dict(sufficient_decrease=1.0), ValueError, "sufficient_decrease"),
    (dict(max_backtracks=0), ValueError, "max_backtracks"),
])
def test_bad_parameters(kwargs, err, match):
    from mklopt.kernels import linear

    with pytest.raises(err, match=match):
        SPG(**kwargs).start(P.oracle())
    with pytest.raises(err, match=match):
        MKLClassifier(method=SPG(**kwargs), kernels=[linear()]).fit(
            np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]]), [0, 1, 0, 1])


def test_max_iter_counts_whole_line_searches():
    res = solve(P.oracle(), SPG(), stop=MaxIter(3))
    assert res.n_iter <= 3 <= res.n_oracle_calls + 1


@pytest.mark.parametrize("norm", [1.0, 2.0])
@pytest.mark.parametrize("seed", range(6))
def test_no_stationary_claim_where_only_the_spectral_step_collapsed(norm, seed):
    # At a kink of a piecewise-linear J the spectral step s's / s'y can fall
    # to ~1e-16, so that P(w - step g) = w in floating point at a point far
    # from the optimum. The method said "stationary" (converged) there, at
    # relative gaps up to 2.8 (e.g. 0.35 on seed 1 of the 6-kernel toy on
    # the simplex); only the unit step's P(w - g) = w may say so.
    oracle = PiecewiseLinearOracle.random(6, 6, seed=seed)
    method = SPG(norm=norm)
    res = solve(oracle, method, stop=DualityGap(1e-6) | MaxIter(400))
    claim = method.report().stop
    if claim is not None and claim.converged:
        assert claim.reason == "stationary"
        assert res.rel_gap <= 1e-6, (claim.reason, res.rel_gap)
    if res.converged:
        assert res.rel_gap <= 1e-6
