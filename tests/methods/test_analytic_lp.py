import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt import solve
from mklopt.domains import LpBall
from mklopt.methods import AnalyticLp, get_method
from mklopt.stopping import DualityGap, MaxIter
from tests._strategies import smooth_quadratic_oracles
from tests._toy_oracles import SmoothQuadraticOracle
from tests.methods import _svm_problems as P


def test_registered():
    assert get_method("lp") is AnalyticLp


@pytest.mark.parametrize("p", [1.25, 2.0, 4.0])
@pytest.mark.parametrize("seed", range(3))
def test_reaches_exact_optimum_within_gap(p, seed):
    oracle = SmoothQuadraticOracle.random(6, 5, seed=seed)
    dom = LpBall(6, p)
    exact = oracle.exact_optimum(dom)
    res = solve(oracle, AnalyticLp(p), stop=DualityGap(1e-7) | MaxIter(3000))
    assert res.converged, res.reason
    assert res.gap >= 0
    assert -1e-6 * abs(exact) <= res.value - exact <= res.gap + 1e-6 * abs(exact)


@settings(max_examples=25)
@given(smooth_quadratic_oracles(min_m=1, max_m=8), st.floats(1.05, 6.0))
def test_weights_on_the_unit_sphere_and_gaps_nonnegative(oracle, p):
    m = oracle.n_kernels
    res = solve(oracle, AnalyticLp(p), stop=MaxIter(20))
    dom = LpBall(m, p)
    for row in res.history:
        assert dom.contains(row.weights, tol=1e-9)
        assert np.linalg.norm(row.weights, p) == pytest.approx(1.0, abs=1e-9)
        assert row.gap >= -1e-12 * abs(row.upper)


def test_update_handles_zero_q():
    theta = np.full(3, 3 ** -0.5)
    new = AnalyticLp.update(theta, np.array([0.0, 4.0, 1.0]), 2.0)
    assert new[0] == 0.0 and np.all(np.isfinite(new))
    assert np.linalg.norm(new) == pytest.approx(1.0)
    # closed form of eq. 2
    t = (theta**2 * np.array([0.0, 4.0, 1.0])) ** (1 / 3)
    np.testing.assert_allclose(new, t / np.linalg.norm(t))
    assert AnalyticLp.update(theta, np.zeros(3), 2.0) is None


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0])
def test_exact_optimum_on_small_svm(p):
    dom = LpBall(5, p)
    exact = P.exact(dom, f"lp{p}")
    res = solve(P.oracle(), AnalyticLp(p), stop=DualityGap(1e-6) | MaxIter(300))
    # the analytic update reaches a certified 1e-6 by itself (no exact step needed for Lp)
    assert res.converged and 0 <= res.rel_gap <= 1e-6, (res.reason, res.rel_gap)
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)


def test_start_twice_same_run():
    oracle = SmoothQuadraticOracle.random(5, 4, seed=3)
    m = AnalyticLp(3.0)
    r1 = solve(oracle, m, stop=MaxIter(10))
    r2 = solve(oracle, m, stop=MaxIter(10))
    np.testing.assert_array_equal([p.weights for p in r1.history], [p.weights for p in r2.history])


@pytest.mark.parametrize("p, err", [(1.0, ValueError), (0.5, ValueError), ("2", TypeError), (np.nan, ValueError),
                                    (-np.inf, ValueError)])
def test_bad_p(p, err):
    with pytest.raises(err, match="p"):
        AnalyticLp(p).start(SmoothQuadraticOracle.random(3, 3))
