"""Per-sample box constraints ``C_i`` in the dual oracles (class and sample weights).

Checked against libsvm (scikit-learn's ``SVC``, ``SVR`` and ``OneClassSVM``
with ``sample_weight``) and ``KernelRidge`` at fixed kernel weights, against
duplicated and dropped samples, by the conformance kit, and through the MKL
solve: the certified gap of a weighted problem brackets the exact optimum
(cvxpy + Clarabel).
"""

import numpy as np
import pytest
from sklearn import svm
from sklearn.kernel_ridge import KernelRidge

from mklopt import solve
from mklopt.domains import Simplex
from mklopt.methods import ActiveSet, LevelBundle
from mklopt.oracles import OneClassDual, RidgeDual, SVMDual, SVRDual
from mklopt.oracles.logistic_dual import LogisticDual
from mklopt.stopping import DualityGap, MaxIter
from mklopt.testing import check_oracle


def problem(seed=0, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.4 * rng.normal(size=n) > 0, 1.0, -1.0)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.array([np.exp(-0.5 * d2), np.exp(-0.05 * d2), X @ X.T / 3])
    K /= np.trace(K, axis1=1, axis2=2)[:, None, None] / n
    t = np.sin(X[:, 0]) + 0.3 * X[:, 1]
    return K, y, t, rng


W = np.array([0.2, 0.5, 0.3])


def weights(rng, n, zeros=0):
    s = rng.uniform(0.2, 3.0, size=n)
    s[rng.choice(n, size=zeros, replace=False)] = 0.0
    return s


@pytest.mark.parametrize("zeros", [0, 5])
def test_svm_matches_libsvm_with_sample_weight(zeros):
    K, y, _, rng = problem()
    s = weights(rng, len(y), zeros)
    C = 2.0
    Kw = np.tensordot(W, K, 1)
    ans = SVMDual(K, y, C=C * s, tol=1e-9)(W)
    ref = svm.SVC(kernel="precomputed", C=C, tol=1e-9).fit(Kw, y, sample_weight=s)
    a = np.zeros(len(y))
    # libsvm drops the samples of weight 0 first; its support_ indexes the others
    kept = np.flatnonzero(s > 0)
    a[kept[ref.support_]] = np.abs(ref.dual_coef_[0])
    np.testing.assert_allclose(ans.alpha, a, atol=1e-6)
    assert np.all(ans.alpha <= C * s + 1e-12)
    assert np.all(ans.alpha[s == 0] == 0.0)
    # decision functions agree (scikit-learn's +1 class is classes_[1] = +1)
    f = Kw @ (ans.alpha * y) + ans.bias
    np.testing.assert_allclose(f, Kw @ (a * y) + ref.intercept_[0], atol=1e-5)
    value = a.sum() - 0.5 * (a * y) @ Kw @ (a * y)
    assert ans.value == pytest.approx(value, rel=1e-7)


def test_svm_class_weight_is_a_per_class_box():
    K, y, _, _ = problem(1)
    Kw = np.tensordot(W, K, 1)
    cw = {-1.0: 0.4, 1.0: 2.5}
    ans = SVMDual(K, y, C=1.5 * np.where(y > 0, cw[1.0], cw[-1.0]), tol=1e-9)(W)
    ref = svm.SVC(kernel="precomputed", C=1.5, class_weight=cw, tol=1e-9).fit(Kw, y)
    np.testing.assert_allclose(Kw @ (ans.alpha * y) + ans.bias, ref.decision_function(Kw),
                               atol=1e-5)


def test_constant_vector_is_the_scalar_problem():
    K, y, _, _ = problem(2)
    a = SVMDual(K, y, C=3.0, tol=1e-10)(W)
    b = SVMDual(K, y, C=np.full(len(y), 3.0), tol=1e-10)(W)
    assert b.value == pytest.approx(a.value, rel=1e-12)
    np.testing.assert_allclose(b.alpha, a.alpha, atol=1e-10)
    assert b.bias == pytest.approx(a.bias, abs=1e-9)


def test_integer_weights_equal_duplicated_samples():
    K, y, _, rng = problem(3, n=30)
    s = rng.integers(0, 4, size=len(y)).astype(float)  # zeros included
    s[[np.flatnonzero(y > 0)[0], np.flatnonzero(y < 0)[0]]] = 1.0
    idx = np.repeat(np.arange(len(y)), s.astype(int))
    weighted = SVMDual(K, y, C=s, tol=1e-10)(W)
    dup = SVMDual(K[:, idx][:, :, idx], y[idx], C=1.0, tol=1e-10)(W)
    assert weighted.value == pytest.approx(dup.value, rel=1e-8)
    np.testing.assert_allclose(weighted.q, dup.q, rtol=1e-6, atol=1e-9)
    assert weighted.bias == pytest.approx(dup.bias, abs=1e-6)
    # the duplicates' alphas add up to the weighted sample's
    np.testing.assert_allclose(np.bincount(idx, dup.alpha, len(y)), weighted.alpha, atol=1e-7)


def test_zero_weights_drop_samples():
    K, y, t, rng = problem(4)
    s = weights(rng, len(y), zeros=8)
    keep = s > 0
    Kk = K[:, keep][:, :, keep]
    pairs = [(SVMDual(K, y, C=s, tol=1e-10), SVMDual(Kk, y[keep], C=s[keep], tol=1e-10)),
             (SVRDual(K, t, C=s, tol=1e-10), SVRDual(Kk, t[keep], C=s[keep], tol=1e-10)),
             (OneClassDual(K, nu=0.3, sample_weight=s, tol=1e-10),
              OneClassDual(Kk, nu=0.3, sample_weight=s[keep], tol=1e-10)),
             (RidgeDual(K, t, C=s), RidgeDual(Kk, t[keep], C=s[keep]))]
    for full, sub in pairs:
        assert full.kept is not None and full.kept.size == keep.sum()
        a, b = full(W), sub(W)
        assert a.value == pytest.approx(b.value, rel=1e-8, abs=1e-12), type(full).__name__
        assert np.all(a.alpha[~keep] == 0.0)
        np.testing.assert_allclose(a.alpha[keep], b.alpha, atol=1e-7)
        assert a.bias == pytest.approx(b.bias, abs=1e-6)
        assert not np.isin(a.support, np.flatnonzero(~keep)).any()
        # a warm start from the answer is taken back; one with mass on a dropped
        # sample belongs to another problem
        assert full(W, warm_start=a.alpha).value == pytest.approx(a.value, rel=1e-8, abs=1e-12)
        if hasattr(full, "problem"):
            assert full.dual_violation(a.alpha) <= 1e-9
            bad = a.alpha.copy()
            bad[np.flatnonzero(~keep)[0]] = 0.1
            assert full.dual_violation(bad) >= 0.1
            with pytest.raises(ValueError, match="bound C_i is 0"):
                full(W, warm_start=bad)


def test_svr_matches_libsvm_with_sample_weight():
    K, _, t, rng = problem(5)
    s = weights(rng, len(t), zeros=3)
    Kw = np.tensordot(W, K, 1)
    ans = SVRDual(K, t, C=2.0 * s, epsilon=0.1, tol=1e-9)(W)
    ref = svm.SVR(kernel="precomputed", C=2.0, epsilon=0.1, tol=1e-9).fit(Kw, t,
                                                                         sample_weight=s)
    beta = np.zeros(len(t))
    beta[np.flatnonzero(s > 0)[ref.support_]] = ref.dual_coef_[0]  # see the SVC test
    # (the dual is not strictly concave: its solutions agree to the solvers' tolerance)
    np.testing.assert_allclose(ans.alpha, beta, atol=1e-4)
    np.testing.assert_allclose(Kw @ ans.alpha + ans.bias, Kw @ beta + ref.intercept_[0],
                               atol=1e-5)


def test_one_class_matches_libsvm_with_sample_weight():
    K, _, _, rng = problem(6)
    s = weights(rng, K.shape[1], zeros=4)
    Kw = np.tensordot(W, K, 1)
    nu = 0.3
    ans = OneClassDual(K, nu=nu, sample_weight=s, tol=1e-9)(W)
    ref = svm.OneClassSVM(kernel="precomputed", nu=nu, tol=1e-9).fit(Kw, sample_weight=s)
    # libsvm: bounds W_i and sum nu sum(W); ours divided by nu sum(W)
    scale = nu * s.sum()
    a = np.zeros(len(s))
    a[np.flatnonzero(s > 0)[ref.support_]] = ref.dual_coef_[0]  # see the SVC test
    np.testing.assert_allclose(scale * ans.alpha, a, atol=1e-6)
    np.testing.assert_allclose(scale * ans.bias, ref.intercept_[0], atol=1e-6)
    # weights scaled by a constant: the same problem
    again = OneClassDual(K, nu=nu, sample_weight=7.0 * s, tol=1e-9)(W)
    assert again.value == pytest.approx(ans.value, rel=1e-9)


def test_ridge_matches_kernel_ridge_with_sample_weight():
    K, _, t, rng = problem(7)
    s = weights(rng, len(t))
    C = 4.0
    Kw = np.tensordot(W, K, 1)
    ans = RidgeDual(K, t, C=C * s, fit_intercept=False)(W)
    ref = KernelRidge(alpha=1.0 / C, kernel="precomputed").fit(Kw, t, sample_weight=s)
    np.testing.assert_allclose(Kw @ ans.alpha, ref.predict(Kw), atol=1e-8)


@pytest.mark.parametrize("make", [
    lambda K, y, t, s: SVMDual(K, y, C=2.0 * s),
    lambda K, y, t, s: SVRDual(K, t, C=s, epsilon=0.05),
    lambda K, y, t, s: OneClassDual(K, nu=0.4, sample_weight=s),
    lambda K, y, t, s: RidgeDual(K, t, C=s),
], ids=["svm", "svr", "one-class", "ridge"])
def test_weighted_oracles_pass_the_conformance_kit(make):
    K, y, t, rng = problem(8, n=24)
    s = weights(rng, len(y), zeros=3)
    check_oracle(lambda: make(K, y, t, s))


@pytest.mark.parametrize("method", [LevelBundle, ActiveSet])
def test_certified_gap_brackets_the_weighted_optimum(method):
    from tests._cvx_reference import exact_problem_optimum

    K, y, _, rng = problem(9, n=30)
    s = weights(rng, len(y), zeros=4)
    oracle = SVMDual(K, y, C=3.0 * s, tol=1e-8)
    res = solve(oracle, method(), stop=DualityGap(1e-6) | MaxIter(300))
    assert res.converged
    exact = exact_problem_optimum(K, oracle.problem, Simplex(K.shape[0]))
    assert res.lower - 1e-6 * abs(exact) <= exact <= res.value + 1e-6 * abs(exact)
    assert np.all(res.alpha[s == 0] == 0.0)


@pytest.mark.parametrize("C, match", [
    (np.array([1.0, -1.0, 1.0, 1.0]), "must be >= 0 for every sample, got -1 at sample 1"),
    (np.array([1.0, np.nan, 1.0, 1.0]), "NaN or infinity"),
    (np.ones(3), r"one bound per sample, shape \(4,\); got shape \(3,\)"),
    (np.zeros(4), "zero for every sample"),
    (np.array([1.0, 1.0, 0.0, 0.0]), "C is 0 for every sample of class"),
    (0.0, "C must be > 0"),
])
def test_bad_bounds_are_refused_naming_C(C, match):
    K = np.stack([np.eye(4)])
    with pytest.raises(ValueError, match=match):
        SVMDual(K, [-1, -1, 1, 1], C=C)


def test_bad_sample_weight_is_refused_naming_it():
    K = np.stack([np.eye(4)])
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        OneClassDual(K, sample_weight=[1.0, -2.0, 1.0, 1.0])


def test_logistic_loss_refuses_per_sample_bounds():
    K = np.stack([np.eye(4)])
    with pytest.raises(ValueError, match="not the logistic loss"):
        LogisticDual(K, [-1, -1, 1, 1], C=np.ones(4))
