"""RidgeDual: scikit-learn's KernelRidge, cvxpy's inner and MKL optima, certified gaps."""

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.kernel_ridge import KernelRidge

from mklopt import KernelBank, solve
from mklopt.domains import Simplex
from mklopt.kernels import linear, poly, rbf
from mklopt.methods import get_method
from mklopt.oracles import RidgeDual
from mklopt.stopping import DualityGap, MaxIter
from tests._cvx_reference import _factors
from tests._strategies import log_uniform, points, reals, simplex_points


def kernels(X):
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = [np.exp(-0.5 * d2), np.exp(-0.05 * d2), X @ X.T / X.shape[1]]
    return np.array([k / np.trace(k) * len(X) if np.trace(k) > 0 else k for k in K])


def data(seed, n, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


@st.composite
def regression_data(draw, lo=6, hi=30):
    X = draw(points(draw(st.integers(lo, hi)), 3))
    t = draw(arrays(np.float64, X.shape[0], elements=reals(-2.0, 2.0).map(lambda v: round(v, 2))))
    return X, t


def cvx_ridge(Ks, t, C, fit_intercept, domain_max=False):
    """max t'a - |a|^2/(2C) - 1/2 (sum_k w_k or max_k) a'K_k a by Clarabel (a SOCP)."""
    a = cp.Variable(t.size)
    cons = [cp.sum(a) == 0] if fit_intercept else []
    if domain_max:  # L1-MKL: max over the simplex of the quadratic forms
        s = cp.Variable()
        cons += [cp.sum_squares(L.T @ a) <= s for L in _factors(Ks)]
        quad = s
    else:
        quad = cp.sum_squares(_factors(Ks[None])[0].T @ a)
    prob = cp.Problem(cp.Maximize(t @ a - cp.sum_squares(a) / (2 * C) - quad / 2), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    return float(prob.value), a.value


# ------------------------------------------------------------- fixed weights
@settings(max_examples=30, deadline=None)
@given(data_=regression_data(), w=simplex_points(3), C=log_uniform(0.01, 100.0))
def test_alpha_is_kernel_ridge_dual_coef(data_, w, C):
    X, t = data_
    K = kernels(X)
    ans = RidgeDual(K, t, C=C, fit_intercept=False)(w)
    Kw = np.tensordot(w, K, 1)
    ref = KernelRidge(alpha=1.0 / C, kernel="precomputed").fit(Kw, t)
    # both solve (K + I/C) a = t: they differ by rounding, amplified by the
    # condition number of K + I/C (at most 1 + C max eig K)
    cond = 1.0 + C * np.linalg.eigvalsh(Kw).max()
    scale = max(1.0, np.abs(ref.dual_coef_).max())
    np.testing.assert_allclose(ans.alpha, ref.dual_coef_, rtol=0, atol=1e-13 * cond * scale)
    np.testing.assert_allclose(Kw @ ans.alpha, ref.predict(Kw), rtol=0, atol=1e-12 * cond * scale)
    assert ans.bias == 0.0 and ans.converged


@settings(max_examples=20, deadline=None)
@given(data_=regression_data(), w=simplex_points(3), C=log_uniform(0.1, 10.0),
       fit_intercept=st.booleans())
def test_value_is_the_inner_optimum(data_, w, C, fit_intercept):
    X, t = data_
    K = kernels(X)
    ans = RidgeDual(K, t, C=C, fit_intercept=fit_intercept)(w)
    ref, _ = cvx_ridge(np.tensordot(w, K, 1), t, C, fit_intercept)
    assert ans.value == pytest.approx(ref, rel=1e-7, abs=1e-8)
    # the answer's own pieces: J = l - w'q/2, q_k = a'K_k a, l = t'a - |a|^2/(2C)
    a = ans.alpha
    np.testing.assert_allclose(ans.q, [a @ Kk @ a for Kk in K], rtol=1e-9, atol=1e-12)
    assert ans.linear_term == pytest.approx(t @ a - a @ a / (2 * C), rel=1e-12, abs=1e-14)
    assert ans.value == pytest.approx(ans.linear_term - 0.5 * w @ ans.q, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(ans.grad, -0.5 * ans.q)


def test_offset_solves_the_bordered_system():
    X, t = data(1, 40)
    t = t + 3.0  # an offset worth fitting
    K = kernels(X)
    w = np.array([0.2, 0.5, 0.3])
    ans = RidgeDual(K, t, C=5.0)(w)
    Kw = np.tensordot(w, K, 1)
    assert abs(ans.alpha.sum()) < 1e-10
    resid = Kw @ ans.alpha + ans.alpha / 5.0 + ans.bias - t
    assert np.abs(resid).max() < 1e-10
    # the residuals of the fit are alpha / C (the stationarity of the primal)
    np.testing.assert_allclose(t - (Kw @ ans.alpha + ans.bias), ans.alpha / 5.0, atol=1e-10)


# ------------------------------------------------------------------ MKL runs
@settings(max_examples=10, deadline=None)
@given(data_=regression_data(8, 20), C=log_uniform(0.1, 10.0), fit_intercept=st.booleans())
def test_mkl_gap_is_certified_against_cvxpy(data_, C, fit_intercept):
    X, t = data_
    K = kernels(X)
    oracle = RidgeDual(K, t, C=C, fit_intercept=fit_intercept)
    res = solve(oracle, get_method("level")(), stop=DualityGap(1e-6) | MaxIter(300))
    ref, _ = cvx_ridge(K, t, C, fit_intercept, domain_max=True)
    slack = 1e-7 * max(1.0, abs(ref))
    # J(w) at the best point is an upper bound, value - gap a lower bound
    assert res.value - res.gap - slack <= ref <= res.value + slack
    assert Simplex(3).contains(res.weights)
    assert res.gap >= 0.0


def test_mkl_run_reaches_the_cvxpy_optimum():
    X, t = data(2, 30)
    K = kernels(X)
    oracle = RidgeDual(K, t, C=2.0)
    res = solve(oracle, get_method("level")(), stop=DualityGap(1e-6) | MaxIter(500))
    ref, _ = cvx_ridge(K, t, 2.0, True, domain_max=True)
    assert res.converged and res.rel_gap <= 1e-6
    assert res.value == pytest.approx(ref, rel=2e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_a_zero_optimum_is_certified_as_reached(fit_intercept):
    # Constant targets with an offset (zero targets without) give J* = 0,
    # alpha = 0 and a zero gap; a relative gap 0 / 0 once read as "unknown"
    # made every method stop unconverged ("gap target unmet").
    X, _ = data(3, 12)
    t = np.full(12, 0.7 if fit_intercept else 0.0)
    for name in ("level", "spg", "elastic_net"):
        res = solve(RidgeDual(kernels(X), t, C=1.0, fit_intercept=fit_intercept),
                    get_method(name)(), stop=DualityGap(1e-6) | MaxIter(50))
        assert res.converged and 0.0 <= res.rel_gap <= 1e-6, (name, res.reason)
        assert res.value == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------- storages, subsets, warm starts
def test_every_storage_gives_the_dense_answer():
    X, t = data(3, 50)
    specs = [linear(), poly(2), rbf(1.0)]
    w = np.array([1.0, 0.5, 2.0])
    ref = RidgeDual(KernelBank.from_specs(X, specs, storage="dense"), t, C=3.0)(w)
    for storage in ("on_the_fly", "feature_map"):
        if storage == "feature_map":
            specs_f = [linear(), poly(2), linear([0])]
            a = RidgeDual(KernelBank.from_specs(X, specs_f, storage="dense"), t, C=3.0)(w)
            b = RidgeDual(KernelBank.from_specs(X, specs_f, storage=storage), t, C=3.0)(w)
        else:
            a = ref
            b = RidgeDual(KernelBank.from_specs(X, specs, storage=storage), t, C=3.0)(w)
        assert b.value == pytest.approx(a.value, rel=1e-9)
        np.testing.assert_allclose(b.q, a.q, rtol=1e-8, atol=1e-12)
        assert b.bias == pytest.approx(a.bias, abs=1e-9)


def test_value_only_and_kernel_subsets():
    X, t = data(4, 25)
    o = RidgeDual(kernels(X), t, C=1.5)
    w = np.array([0.4, 0.6, 0.0])
    full = o(w)
    only = o(w, warm_start=full.alpha, need_q=False)
    assert only.q is None and only.grad is None
    assert only.value == pytest.approx(full.value, rel=1e-12)
    sub = o(w, kernels=np.array([1, 0]))
    np.testing.assert_allclose(sub.q, full.q[[1, 0]], rtol=1e-12)
    with pytest.raises(ValueError, match="kernels must include"):
        o(np.array([0.5, 0.0, 0.5]), kernels=np.array([0, 1]))
    assert o.n_calls == 3 and o.n_unconverged == 0
    assert not hasattr(o, "tol")  # exact: nothing for the driver to adapt


def test_bad_input_names_the_argument():
    X, t = data(5, 10)
    K = kernels(X)
    with pytest.raises(ValueError, match="C must be > 0"):
        RidgeDual(K, t, C=0.0)
    with pytest.raises(ValueError, match="C must be > 0"):
        RidgeDual(K, t, C=-1.0)
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        RidgeDual(K, np.r_[t[:-1], np.nan])
    with pytest.raises(ValueError, match="y must have length 10"):
        RidgeDual(K, t[:-1])
    with pytest.raises(TypeError, match="fit_intercept must be True or False"):
        RidgeDual(K, t, fit_intercept="yes")
    with pytest.raises(ValueError, match="w must be non-negative"):
        RidgeDual(K, t)(np.array([-1.0, 1.0, 1.0]))
