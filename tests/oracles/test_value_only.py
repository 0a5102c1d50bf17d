"""Value-only oracle calls (``need_q=False``) used by line searches."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt import solve
from mklopt.methods import Subgradient
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter
from tests._toy_oracles import SmoothQuadraticOracle


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


@settings(max_examples=20)
@given(st.integers(0, 10**6), st.integers(2, 5), st.integers(8, 40))
def test_value_only_matches_the_full_answer(seed, m, n):
    rng = np.random.default_rng(seed)
    K, y = random_bank(rng, m, n)
    oracle = SVMDual(K, y, C=10.0, tol=1e-6)
    w = rng.dirichlet(np.ones(m))
    full = oracle(w)
    fast = oracle(w, need_q=False)
    assert fast.q is None and fast.grad is None
    np.testing.assert_allclose(fast.alpha, full.alpha, atol=1e-12)
    assert fast.value == pytest.approx(full.value, rel=1e-9, abs=1e-12)
    assert fast.bias == pytest.approx(full.bias)
    assert oracle.n_calls == 2  # value-only calls are counted like any other


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
