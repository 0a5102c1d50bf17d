"""Value-only oracle calls (``need_q=False``) used by line searches."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import solve
from mklopt.methods import Subgradient
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter
from tests._strategies import labels, log_uniform, points, simplex_points
from tests._toy_oracles import SmoothQuadraticOracle


def bank_of(X, widths):
    """Unit-trace RBF kernels of the given widths on the points ``X``."""
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = [np.exp(-d2 / (2.0 * s**2)) for s in widths]
    return np.array([Kk / np.trace(Kk) for Kk in K])


def random_bank(rng, m, n):
    X = rng.normal(size=(n, 3))
    K = []
    for k in range(m):
        Z = X * rng.uniform(0.2, 2.0, size=3)
        d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
        Kk = np.exp(-d2 / (2.0 * (k + 1)))
        K.append(Kk / np.trace(Kk))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    return np.array(K), y


@st.composite
def problems(draw):
    n, m = draw(st.integers(4, 40)), draw(st.integers(2, 5))
    X = draw(points(n, 3))
    widths = draw(arrays(np.float64, m, elements=log_uniform(0.1, 10.0)))
    return bank_of(X, widths), draw(labels(n)), draw(simplex_points(m))


@settings(max_examples=20)
@given(problems(), log_uniform(1e-2, 1e2), log_uniform(1e-8, 1e-3))
def test_value_only_matches_the_full_answer(problem, C, tol):
    K, y, w = problem
    oracle = SVMDual(K, y, C=C, tol=tol)
    full = oracle(w)
    fast = oracle(w, need_q=False)
    assert fast.q is None and fast.grad is None
    # the same SMO run from the same start: the same alpha, bias and value
    np.testing.assert_allclose(fast.alpha, full.alpha, atol=1e-12 * C)
    assert fast.value == pytest.approx(full.value, rel=1e-9, abs=1e-12 * max(1.0, C * y.size))
    assert fast.bias == pytest.approx(full.bias, abs=1e-9)
    assert oracle.n_calls == 2  # value-only calls are counted like any other
    # and the full answer's value is J(w) = 1'alpha - w'q / 2
    assert full.value == pytest.approx(full.alpha.sum() - 0.5 * w @ full.q, rel=1e-9,
                                       abs=1e-12 * max(1.0, C * y.size))


def test_driver_asks_value_only_only_where_supported():
    rng = np.random.default_rng(0)
    K, y = random_bank(rng, 4, 40)
    seen = []

    class Recording(SVMDual):
        def __call__(self, w, warm_start=None, need_q=True):
            seen.append(need_q)
            return super().__call__(w, warm_start=warm_start, need_q=need_q)

    res = solve(Recording(K, y, C=10.0, tol=1e-6), Subgradient(), stop=MaxIter(5))
    assert False in seen and True in seen
    # every history row's gap is the best point's, which always has q
    assert all(np.isfinite(p.gap) and p.gap >= 0 for p in res.history)
    assert res.n_oracle_calls == len(seen)
    # an oracle without the flag always answers in full, and the method copes
    toy = SmoothQuadraticOracle.random(5, 4, seed=1)
    r2 = solve(toy, Subgradient(), stop=DualityGap(1e-6) | MaxIter(200))
    assert r2.converged


def test_simplemkl_with_value_only_calls_reaches_the_reference_optimum():
    rng = np.random.default_rng(3)
    K, y = random_bank(rng, 4, 50)
    ref = solve(SVMDual(K, y, C=10.0, tol=1e-7), Subgradient(direction="projected"),
                stop=DualityGap(1e-6) | MaxIter(3000))
    res = solve(SVMDual(K, y, C=10.0, tol=1e-7), Subgradient(), stop=DualityGap(1e-6) | MaxIter(500))
    assert res.converged
    assert abs(res.value - ref.value) <= res.gap + ref.gap + 1e-6 * abs(ref.value)
