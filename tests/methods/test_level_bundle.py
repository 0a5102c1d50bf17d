import numpy as np
import pytest
from hypothesis import given, settings

from mklopt import solve
from mklopt.domains import Simplex
from mklopt.methods import LevelBundle, get_method
from mklopt.stopping import BoundGap, DualityGap, MaxIter
from tests._strategies import piecewise_linear_oracles
from tests._toy_oracles import PiecewiseLinearOracle
from tests.methods import _svm_problems as P


def test_registered():
    assert get_method("level") is LevelBundle


@pytest.mark.parametrize("seed", range(5))
def test_reaches_exact_lp_optimum_within_gap(seed):
    oracle = PiecewiseLinearOracle.random(n_kernels=6, n_pieces=9, seed=seed)
    exact = oracle.exact_l1_optimum()
    res = solve(oracle, LevelBundle(), stop=BoundGap(1e-3) | MaxIter(400))
    assert res.converged, res.reason
    assert res.lower - 1e-9 <= exact <= res.value + 1e-9
    assert res.value - exact <= max(res.gap, res.value - res.lower) + 1e-9


@settings(max_examples=25)
@given(piecewise_linear_oracles())
def test_bounds_monotone_and_bracket_the_optimum(oracle):
    m = oracle.n_kernels
    exact = oracle.exact_l1_optimum()
    method = LevelBundle()
    res = solve(oracle, method, stop=BoundGap(1e-9) | MaxIter(40))
    lo = np.array([p.lower for p in res.history])
    up = np.array([p.upper for p in res.history])
    assert np.all(np.diff(lo) >= 0)  # Theorem 1(c)
    assert np.all(np.diff(up) <= 0)
    assert np.all(lo <= exact + 1e-8) and np.all(up >= exact - 1e-8)
    dom = Simplex(m)
    for p in res.history:
        assert dom.contains(p.weights, tol=1e-9)
        assert p.gap >= 0


def test_lambda_schedule_lives_in_state():
    oracle = PiecewiseLinearOracle.random(n_kernels=5, n_pieces=8, seed=4)
    method = LevelBundle(lam=0.9, lam_final=0.99, switch=0.01)
    solve(oracle, method, stop=BoundGap(1e-4) | MaxIter(300))
    assert method.lam == 0.9  # never written back
    lower, upper = method.bounds()
    assert method.extra()["lam"] == 0.99  # raised once the gap became small
    # with switch tiny the raise never happens
    method2 = LevelBundle(lam=0.9, lam_final=0.99, switch=1e-300)
    solve(oracle, method2, stop=MaxIter(5))
    assert method2.extra()["lam"] == 0.9
    # the default holds lambda = 0.6 throughout, however small the gap gets
    method3 = LevelBundle()
    res = solve(oracle, method3, stop=BoundGap(1e-6) | MaxIter(300))
    assert res.converged and method3.extra()["lam"] == 0.6


def test_exact_optimum_on_small_svm():
    exact = P.exact(Simplex(5), "l1")
    res = solve(P.oracle(), LevelBundle(), stop=DualityGap(1e-3) | MaxIter(150))
    # Converged on the certified gap, so the gap below is the tolerance actually
    # reached (a method that claimed convergence early would fail here).
    assert res.converged and 0 <= res.rel_gap <= 1e-3, (res.reason, res.rel_gap)
    assert res.gap >= 0
    assert abs(res.value - exact) <= res.gap + P.slack(exact)
    assert res.lower <= exact + P.slack(exact)


def test_start_twice_same_run():
    oracle = PiecewiseLinearOracle.random(5, 7, seed=3)
    m = LevelBundle()
    r1 = solve(oracle, m, stop=MaxIter(15))
    r2 = solve(oracle, m, stop=MaxIter(15))
    np.testing.assert_array_equal([p.weights for p in r1.history], [p.weights for p in r2.history])


@pytest.mark.parametrize(
    "kw, err",
    [
        (dict(lam=0.0), ValueError),
        (dict(lam=1.0), ValueError),
        (dict(lam="a"), TypeError),
        (dict(lam_final=1.0), ValueError),
        (dict(lam=0.95, lam_final=0.9), ValueError),
        (dict(lam_final=0.5), ValueError),  # below the default lam = 0.6
        (dict(switch=0.0), ValueError),
    ],
)
def test_bad_parameters_fail_at_start(kw, err):
    method = LevelBundle(**kw)
    with pytest.raises(err, match=next(iter(kw))):
        method.start(PiecewiseLinearOracle.random(3, 3))
