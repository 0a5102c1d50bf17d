"""Lp-MKL at p = inf: the box [0, 1]^m, whose optimum is the SVM on the sum kernel."""

import numpy as np
import pytest

from mklopt import MKLClassifier, solve
from mklopt.domains import LpBall
from mklopt.methods import AnalyticLp
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter
from tests._cvx_reference import small_problem
from tests.methods import _svm_problems as P


def test_certified_gap_contains_the_conic_optimum():
    dom = LpBall(5, np.inf)
    exact = P.exact(dom, "lpinf")  # max 1'a - ||q||_1 / 2 by Clarabel
    res = solve(P.oracle(), AnalyticLp(np.inf), stop=DualityGap(1e-8) | MaxIter(50))
    # theta_0 = 1 is optimal: its answer certifies (a second call re-checks it at
    # the target's inner tolerance, the first having run at the oracle's own)
    assert res.converged and res.n_oracle_calls <= 2
    np.testing.assert_allclose(res.history[-1].weights, res.history[0].weights)
    np.testing.assert_array_equal(res.weights, np.ones(5))
    assert 0.0 <= res.gap <= 1e-12 * abs(res.value)
    assert res.lower <= exact + P.slack(exact)
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_answer_is_the_svm_on_the_sum_kernel(C):
    from sklearn.svm import SVC

    K, y = small_problem("sonar", n=60, seed=1)
    m = K.shape[0]
    res = solve(SVMDual(K, y, C=C, tol=1e-8), AnalyticLp(np.inf), stop=MaxIter(3))
    alpha = res.alpha
    # libsvm on sum_k K_k with the same C
    svc = SVC(kernel="precomputed", C=C, tol=1e-8).fit(K.sum(0), y)
    a_ref = np.zeros(len(y))
    a_ref[svc.support_] = np.abs(svc.dual_coef_[0])
    np.testing.assert_allclose(alpha, a_ref, atol=1e-5 * C)
    assert res.bias == pytest.approx(float(svc.intercept_[0]), abs=1e-5)
    # the same SVM on the mean kernel needs C * m: alpha scales by m, the
    # decision function sum_i alpha_i y_i K(x_i, .) does not change
    svc_mean = SVC(kernel="precomputed", C=C * m, tol=1e-8).fit(K.mean(0), y)
    np.testing.assert_allclose(svc_mean.decision_function(K.mean(0)),
                               svc.decision_function(K.sum(0)), atol=1e-5)
    J = alpha.sum() - 0.5 * (alpha * y) @ K.sum(0) @ (alpha * y)
    assert res.value == pytest.approx(J, rel=1e-9)


def test_update_limit_of_eq2():
    theta = np.array([0.2, 1.0, 0.7])
    q = np.array([0.0, 4.0, 1.0])
    np.testing.assert_array_equal(AnalyticLp.update(theta, q, np.inf), np.ones(3))
    # eq. 2 at a large finite p is close to the all-ones step on the kernels with q > 0
    np.testing.assert_allclose(AnalyticLp.update(theta, q, 1e6)[1:], 1.0, rtol=1e-5)
    assert AnalyticLp.update(theta, np.zeros(3), np.inf) is None


def test_classifier_accepts_p_inf():
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC

    from mklopt import datasets
    from mklopt.kernels import linear, rbf

    X, y = datasets.load("sonar")
    idx = np.random.default_rng(0).choice(len(y), 80, replace=False)
    X, y = X[idx], y[idx]
    clf = MKLClassifier(kernels=[rbf(2.0), rbf(8.0), linear()], method="lp", p=np.inf,
                        normalize=None, C=1.0, tol=1e-6).fit(X, y)
    np.testing.assert_array_equal(clf.weights_, np.ones(3))
    assert clf.converged_ and clf.gap_ <= 1e-9
    Ksum = rbf_kernel(X, gamma=1 / 8.0) + rbf_kernel(X, gamma=1 / 128.0) + X @ X.T
    svc = SVC(kernel="precomputed", C=1.0, tol=1e-6).fit(Ksum, y)
    agree = np.mean(clf.predict(X) == svc.predict(Ksum))
    assert agree == 1.0
    np.testing.assert_allclose(clf.decision_function(X), svc.decision_function(Ksum),
                               atol=1e-3 * np.abs(svc.decision_function(Ksum)).max())
    with pytest.raises(ValueError, match="p"):
        MKLClassifier(method="lp", p=-np.inf).fit(X, y)
