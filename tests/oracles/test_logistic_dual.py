"""LogisticDual: scikit-learn's LogisticRegression, cvxpy's inner and MKL optima, certified gaps."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from mklopt import KernelBank, solve
from mklopt.datasets import load
from mklopt.kernels import linear, poly, rbf
from mklopt.methods import get_method
from mklopt.oracles import ConvergenceWarning, LogisticDual
from mklopt.stopping import DualityGap, MaxIter
from tests._cvx_reference import _factors, small_problem
from tests._strategies import labels, log_uniform, points, simplex_points


def kernels(X):
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = [np.exp(-0.5 * d2), np.exp(-0.05 * d2), X @ X.T / X.shape[1]]
    return np.array([k / np.trace(k) * len(X) if np.trace(k) > 0 else k for k in K])


def data(seed, n, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


@st.composite
def classification_data(draw, lo=6, hi=30, d=3):
    X = draw(points(draw(st.integers(lo, hi)), d))
    return X, draw(labels(X.shape[0]))


def decision_bound(oracle, K):
    """How far the decision values may be from the optimum's: the primal is
    1-strongly convex in f, so |f - f*|_K <= sqrt(2 gap) and each value is
    within sqrt(2 gap max K_ii); the gap is known up to the rounding of its
    n terms (1e-16 of the primal each, bounded by C n log 2)."""
    n = K.shape[0]
    gap = oracle.last_gap + 1e-16 * n * oracle.C * n * np.log(2.0)
    return np.sqrt(2.0 * gap * max(np.diag(K).max(), 1e-300))


def cvx_logistic(Ks, y, C, fit_intercept, domain_max=False):
    """max C sum H(a) - C^2/2 (w'q or max_k q_k)(a * y), 0 <= a <= 1, by Clarabel
    (binary entropies through cp.entr, i.e. exponential cones)."""
    n = y.size
    a = cp.Variable(n)
    cons = [a >= 0, a <= 1] + ([y @ a == 0] if fit_intercept else [])
    v = cp.multiply(a, y)
    if domain_max:
        t = cp.Variable()
        cons += [cp.sum_squares(L.T @ v) <= t for L in _factors(Ks)]
        quad = t
    else:
        quad = cp.sum_squares(_factors(Ks[None])[0].T @ v)
    obj = C * cp.sum(cp.entr(a) + cp.entr(1 - a)) - C**2 * quad / 2
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    return float(prob.value)


# ---------------------------------------------------------- scikit-learn
@settings(max_examples=25, deadline=None)
@given(data_=classification_data(), C=log_uniform(0.05, 20.0), fit_intercept=st.booleans())
def test_agrees_with_sklearn_logistic_regression_on_a_linear_kernel(data_, C, fit_intercept):
    X, y = data_
    K = np.stack([X @ X.T, np.ones_like(X @ X.T)])  # the second kernel gets weight 0
    o = LogisticDual(K, y, C=C, fit_intercept=fit_intercept, tol=1e-14)
    ans = o(np.array([1.0, 0.0]))
    assert ans.converged
    dec = K[0] @ (ans.alpha * y) + ans.bias
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs may report its own tolerance
        lr = LogisticRegression(C=C, fit_intercept=fit_intercept, tol=1e-12,
                                max_iter=100_000).fit(X, y)
    # lbfgs's own error (gradient norm 1e-12 over a C-scaled loss) is not
    # certified: its share of the tolerance is 1e-6 per decision value
    bound = decision_bound(o, K[0]) + 1e-6 * (1.0 + np.abs(dec).max())
    np.testing.assert_allclose(dec, lr.decision_function(X), rtol=0, atol=bound)
    proba = 1.0 / (1.0 + np.exp(-dec))
    np.testing.assert_allclose(proba, lr.predict_proba(X)[:, 1], rtol=0, atol=bound)
    # the primal's weight vector: f = X w_lr, so w_lr = X'(alpha * y)
    np.testing.assert_allclose(X.T @ (ans.alpha * y), lr.coef_[0], rtol=0,
                               atol=np.sqrt(2.0 * (o.last_gap + 1e-12)) + 1e-6)


def test_sklearn_agreement_on_real_data():
    # 80 points of sonar (60 features, nearly separable), linear kernel, with
    # and without the offset. At C = 10 with the offset, the maximal violating
    # pair alone stalled (gap 0.04 after 1e6 steps); the second-order pair
    # converges in a few thousand.
    X, y = load("sonar")
    idx = np.random.default_rng(0).choice(len(y), size=80, replace=False)
    X, y = X[idx], y[idx].astype(float)
    X = (X - X.mean(0)) / X.std(0)
    K = (X @ X.T)[None]
    for C in (1.0, 10.0):
        for fit_intercept in (False, True):
            o = LogisticDual(K, y, C=C, fit_intercept=fit_intercept, tol=1e-14)
            ans = o(np.ones(1))
            assert ans.converged and ans.n_solver_iter <= 50_000
            dec = K[0] @ (ans.alpha * y) + ans.bias
            lr = LogisticRegression(C=C, fit_intercept=fit_intercept, tol=1e-12,
                                    max_iter=100_000).fit(X, y)
            # measured: 4e-6 (C = 1) and 3e-5 (C = 10), lbfgs's share
            assert np.abs(dec - lr.decision_function(X)).max() <= 1e-5 * C
            b_ref = float(lr.intercept_[0]) if fit_intercept else 0.0
            assert ans.bias == pytest.approx(b_ref, abs=1e-5 * C)


# ---------------------------------------------------------- cvxpy, fixed w
@settings(max_examples=15, deadline=None)
@given(data_=classification_data(), w=simplex_points(3), C=log_uniform(0.1, 10.0),
       fit_intercept=st.booleans())
def test_value_is_the_inner_optimum(data_, w, C, fit_intercept):
    X, y = data_
    K = kernels(X)
    o = LogisticDual(K, y, C=C, fit_intercept=fit_intercept, tol=1e-10)
    ans = o(w)
    ref = cvx_logistic(np.tensordot(w, K, 1), y, C, fit_intercept)
    assert ans.converged
    # value <= J(w) <= value + gap; Clarabel's own accuracy is about 1e-8
    assert ref == pytest.approx(ans.value, rel=1e-7, abs=1e-8)
    a = ans.alpha
    assert np.all((a > 0) & (a < C))
    if fit_intercept:
        assert abs(y @ a) <= 1e-12 * C * y.size
    v = a * y
    np.testing.assert_allclose(ans.q, [v @ Kk @ v for Kk in K], rtol=1e-9, atol=1e-12)
    p = a / C
    H = -(p * np.log(p) + (1 - p) * np.log1p(-p)).sum()
    assert ans.linear_term == pytest.approx(C * H, rel=1e-12)
    assert ans.value == pytest.approx(ans.linear_term - 0.5 * w @ ans.q, rel=1e-12, abs=1e-14)


# ---------------------------------------------------------- MKL runs
@settings(max_examples=8, deadline=None)
@given(data_=classification_data(8, 20), C=log_uniform(0.1, 10.0), fit_intercept=st.booleans())
def test_mkl_gap_is_certified_against_cvxpy(data_, C, fit_intercept):
    X, y = data_
    K = kernels(X)
    oracle = LogisticDual(K, y, C=C, fit_intercept=fit_intercept, tol=1e-6)
    res = solve(oracle, get_method("level")(), stop=DualityGap(1e-5) | MaxIter(300))
    ref = cvx_logistic(K, y, C, fit_intercept, domain_max=True)
    slack = 1e-7 * max(1.0, abs(ref))  # Clarabel's accuracy
    # value - gap = D(alpha) is a lower bound; value is within the inner
    # relative tolerance (1e-6 at most) below J(w) >= J*
    assert res.value - res.gap - slack <= ref <= res.value * (1 + 1e-6) + slack
    assert res.gap >= 0.0


def test_mkl_run_on_sonar_reaches_the_cvxpy_optimum():
    K, y = small_problem("sonar", n=40, seed=0)
    oracle = LogisticDual(K, y, C=10.0)
    res = solve(oracle, get_method("level")(), stop=DualityGap(1e-4) | MaxIter(500))
    ref = cvx_logistic(K, y, 10.0, True, domain_max=True)
    assert res.converged and res.rel_gap <= 1e-4
    assert res.value - res.gap <= ref * (1 + 1e-7)
    assert ref <= res.value * (1 + 1e-4)


# ---------------------------------------- storages, warm starts, subsets
def test_every_storage_gives_the_dense_answer():
    X, y = data(3, 50)
    specs = [linear(), poly(2), rbf(1.0)]
    w = np.array([1.0, 0.5, 2.0])
    a = LogisticDual(KernelBank.from_specs(X, specs, storage="dense"), y, tol=1e-12)(w)
    b = LogisticDual(KernelBank.from_specs(X, specs, storage="on_the_fly"), y, tol=1e-12)(w)
    assert b.value == pytest.approx(a.value, rel=1e-9)
    np.testing.assert_allclose(b.q, a.q, rtol=1e-6, atol=1e-10)
    assert b.bias == pytest.approx(a.bias, abs=1e-6)


def test_warm_starts_value_only_and_kernel_subsets():
    X, y = data(4, 40)
    o = LogisticDual(kernels(X), y, C=2.0, tol=1e-10)
    w1, w2 = np.array([0.5, 0.5, 0.0]), np.array([0.2, 0.8, 0.0])
    a1 = o(w1)
    cold = o(w2)
    warm = o(w2, warm_start=a1.alpha)
    assert warm.value == pytest.approx(cold.value, rel=1e-9)
    again = o(w2, warm_start=warm.alpha)
    assert again.n_solver_iter <= max(5, cold.n_solver_iter // 4)
    only = o(w2, warm_start=warm.alpha, need_q=False)
    assert only.q is None and only.grad is None
    assert only.value == pytest.approx(warm.value, rel=1e-9)
    sub = o(w2, kernels=np.array([1, 0]))
    np.testing.assert_allclose(sub.q, cold.q[[1, 0]], rtol=1e-6, atol=1e-12)
    # a start on the box's boundary (as an SVM's alpha) is moved inside
    edge = np.zeros(40)
    edge[np.flatnonzero(y > 0)[0]] = edge[np.flatnonzero(y < 0)[0]] = 2.0
    ans = o(w2, warm_start=edge)
    assert ans.value == pytest.approx(cold.value, rel=1e-9)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_warm_start_off_the_equality_by_rounding_is_repaired(sign):
    # A start off y'alpha = 0 by less than the repair threshold is rescaled
    # onto it, whichever class is in excess. (The repair once grew the excess
    # of the negative class instead: from an optimal start the solver takes
    # no step, so each call of an outer run at the same point doubled the
    # error until the start was refused.)
    X, y = data(7, 12)
    C = 8.0
    o = LogisticDual(kernels(X), y, C=C, tol=1e-6)
    w = np.ones(3) / 3
    a = o(w).alpha.copy()
    excess = y == sign
    a[excess] += 5e-9 * C * y.size / excess.sum()  # off by half the threshold 1e-8 C n
    for _ in range(30):  # an outer method querying the same point again
        ans = o(w, warm_start=a)
        assert abs(y @ ans.alpha) <= 1e-12 * C * y.size
        a = ans.alpha


def test_budget_exhaustion_warns_and_is_not_certified():
    X, y = data(5, 30)
    o = LogisticDual(kernels(X), y, C=5.0, tol=1e-12, max_iter=3)
    with pytest.warns(ConvergenceWarning, match="logistic dual solve stopped"):
        ans = o(np.ones(3) / 3)
    assert not ans.converged and o.n_unconverged == 1


def test_bad_input_names_the_argument():
    X, y = data(6, 10)
    K = kernels(X)
    with pytest.raises(ValueError, match="C must be > 0"):
        LogisticDual(K, y, C=0.0)
    with pytest.raises(ValueError, match="y must hold only the labels -1 and"):
        LogisticDual(K, np.r_[y[:-1], 0.0])
    with pytest.raises(ValueError, match="y must hold only the labels"):
        LogisticDual(K, np.r_[y[:-1], np.nan])
    with pytest.raises(ValueError, match="y has 9 labels but there are 10 samples"):
        LogisticDual(K, y[:-1])
    with pytest.raises(ValueError, match="tol must be > 0"):
        LogisticDual(K, y, tol=0.0)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        LogisticDual(K, y, max_iter=0)
    with pytest.raises(TypeError, match="fit_intercept must be True or False"):
        LogisticDual(K, y, fit_intercept=1)
    o = LogisticDual(K, y, C=1.0)
    with pytest.raises(ValueError, match="warm_start must lie in the box"):
        o(np.ones(3), warm_start=np.full(10, 2.0))
    with pytest.raises(ValueError, match="warm_start must satisfy y'alpha = 0"):
        o(np.ones(3), warm_start=np.where(y > 0, 0.5, 0.1) + 0.3 * (y > 0))
    with pytest.raises(ValueError, match="warm_start contains NaN"):
        o(np.ones(3), warm_start=np.full(10, np.nan))
    with pytest.raises(ValueError, match="K must|kernel|square|shape"):
        LogisticDual(np.ones((2, 10, 9)), y)
