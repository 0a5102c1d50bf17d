"""SMO primitives: NumPy twins, libsvm agreement, KKT, warm starts."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mklopt._jit.smo import (
    _in_sets,
    _select_i,
    _select_j,
    _shrink,
    _smo_core,
    _sync,
    smo_gradient,
    smo_solve,
    smo_violation,
    svm_bias,
)

SVC = pytest.importorskip("sklearn.svm").SVC


# ---------------------------------------------------------------- references
def gradient_ref(K, y, alpha):
    return y * (K @ (alpha * y)) - 1.0


def objective(K, y, alpha):
    v = alpha * y
    return alpha.sum() - 0.5 * v @ K @ v


def violation_ref(K, y, alpha, C):
    F = -y * gradient_ref(K, y, alpha)
    up = np.where(y > 0, alpha < C, alpha > 0)
    low = np.where(y > 0, alpha > 0, alpha < C)
    return F[up].max() - F[low].min()


def bias_ref(y, alpha, grad, C):
    yg = y * grad
    free = (alpha > 0) & (alpha < C)
    if free.any():
        return -yg[free].mean()
    at_c = alpha >= C
    ub_mask = (at_c & (y < 0)) | (~at_c & (y > 0))
    lb_mask = (at_c & (y > 0)) | (~at_c & (y < 0))
    return -0.5 * (yg[ub_mask].min() + yg[lb_mask].max())


def cold_solve(K, y, C, tol, max_iter=10**7, fn=smo_solve):
    n = y.shape[0]
    alpha = np.zeros(n)
    grad = np.full(n, -1.0)
    n_iter = fn(K, y, C, alpha, grad, tol, max_iter)
    return alpha, grad, n_iter


def libsvm(K, y, C, tol):
    clf = SVC(kernel="precomputed", C=C, tol=tol, cache_size=200).fit(K, y)
    alpha = np.zeros(y.shape[0])
    alpha[clf.support_] = clf.dual_coef_[0] * y[clf.support_]
    return alpha, float(clf.intercept_[0]), clf


def rbf_problem(rng, n, d=3, gamma=0.5, ridge=0.0):
    X = rng.normal(size=(n, d))
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.exp(-gamma * sq) + ridge * np.eye(n)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[0], y[1] = -1.0, 1.0
    return np.ascontiguousarray(K), y


def check_feasible(y, alpha, C):
    assert np.all(alpha >= 0.0) and np.all(alpha <= C)
    assert abs(y @ alpha) <= 1e-10 * max(1.0, C * y.size)


# ---------------------------------------------------------------- primitives
def test_gradient_matches_numpy(rng):
    K, y = rbf_problem(rng, 30)
    alpha = np.where(rng.random(30) < 0.4, rng.uniform(0, 2, 30), 0.0)
    got = smo_gradient(K, y, alpha, np.empty(30))
    np.testing.assert_allclose(got, gradient_ref(K, y, alpha), rtol=1e-12, atol=1e-12)


def test_violation_and_bias_match_numpy(rng):
    K, y = rbf_problem(rng, 40)
    C = 2.0
    alpha, grad, _ = cold_solve(K, y, C, 1e-3)
    g = gradient_ref(K, y, alpha)
    assert smo_violation(y, alpha, g, C) == pytest.approx(violation_ref(K, y, alpha, C))
    assert svm_bias(y, alpha, grad, C) == pytest.approx(bias_ref(y, alpha, grad, C), abs=1e-12)
    # No free variable: the bias is the midpoint of the allowed interval.
    a0 = np.zeros(40)
    g0 = np.full(40, -1.0)
    assert svm_bias(y, a0, g0, C) == pytest.approx(bias_ref(y, a0, g0, C))


def test_py_func_on_tiny_input():
    K = np.array([[1.0, 0.2, 0.1], [0.2, 1.0, 0.3], [0.1, 0.3, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    C = 1.0
    a1, g1, it1 = cold_solve(K, y, C, 1e-8, fn=smo_solve.py_func)
    a2, g2, it2 = cold_solve(K, y, C, 1e-8)
    np.testing.assert_allclose(a1, a2, atol=1e-12)
    assert it1 == it2
    np.testing.assert_allclose(smo_gradient.py_func(K, y, a1, np.empty(3)), g1, atol=1e-12)
    assert smo_violation.py_func(y, a1, g1, C) <= 1e-8
    assert svm_bias.py_func(y, a1, g1, C) == svm_bias(y, a1, g1, C)
    alpha = np.zeros(3)
    F = y.copy()  # F = -y G at alpha = 0
    assert _smo_core.py_func(K, np.diag(K).copy(), y, C, alpha, F, 1e-8, 100, True) == it1
    np.testing.assert_allclose(alpha, a1, atol=1e-12)
    # The helpers, through the pure-Python path as well.
    act = np.arange(3)
    assert _select_i.py_func(y, C, alpha, F, act, 3) == _select_i(y, C, alpha, F, act, 3)
    assert _select_j.py_func(K, np.diag(K).copy(), y, C, alpha, F, act, 3, 0, 1.0) == _select_j(
        K, np.diag(K).copy(), y, C, alpha, F, act, 3, 0, 1.0
    )
    act2 = np.arange(3)
    assert _shrink.py_func(y, C, a1, -y * g1, act2) == _shrink(y, C, a1, -y * g1, act)
    np.testing.assert_array_equal(np.sort(act2), np.arange(3))


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(5, 60), C=st.sampled_from([0.5, 50.0]))
def test_shrinking_reaches_the_same_point(seed, n, C):
    # Shrinking sets variables aside and must still meet tol on all of them,
    # keep the gradient exact, and agree with the unshrunk solve.
    rng = np.random.default_rng(seed)
    K, y = rbf_problem(rng, n, gamma=2.0)
    tol = 1e-6
    a_s, g_s, _ = cold_solve(K, y, C, tol)
    a_f = np.zeros(n)
    g_f = np.full(n, -1.0)
    smo_solve(K, y, C, a_f, g_f, tol, 10**7, False)
    for alpha, grad in ((a_s, g_s), (a_f, g_f)):
        check_feasible(y, alpha, C)
        np.testing.assert_allclose(grad, gradient_ref(K, y, alpha), atol=1e-9 * max(1.0, C))
        assert violation_ref(K, y, alpha, C) <= tol + 1e-9
    assert objective(K, y, a_s) == pytest.approx(objective(K, y, a_f), rel=1e-6, abs=1e-9)
    # Warm start on a perturbed kernel: most bound variables are shrunk at once.
    K2 = np.ascontiguousarray(0.9 * K + 0.1 * K**2)  # Schur product: still PSD
    a_w = a_s.copy()
    g_w = smo_gradient(K2, y, a_w, np.empty(n))
    smo_solve(K2, y, C, a_w, g_w, tol, 10**7, True)
    np.testing.assert_allclose(g_w, gradient_ref(K2, y, a_w), atol=1e-9 * max(1.0, C))
    assert violation_ref(K2, y, a_w, C) <= tol + 1e-9


# ---------------------------------------------------------------- agreement
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(4, 24),
    C=st.sampled_from([0.1, 1.0, 10.0]),
)
def test_matches_libsvm_on_random_psd(seed, n, C):
    rng = np.random.default_rng(seed)
    K, y = rbf_problem(rng, n, ridge=0.1)  # strictly PD: alpha is unique
    tol = 1e-7
    alpha, grad, _ = cold_solve(K, y, C, tol)
    check_feasible(y, alpha, C)
    assert violation_ref(K, y, alpha, C) <= tol + 1e-9
    ref_alpha, ref_bias, _ = libsvm(K, y, C, tol)
    # libsvm caches Q in float32, which limits agreement to ~1e-6 relative.
    assert objective(K, y, alpha) == pytest.approx(objective(K, y, ref_alpha), rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(alpha, ref_alpha, atol=1e-4 * C)
    assert svm_bias(y, alpha, grad, C) == pytest.approx(ref_bias, abs=1e-3)


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(3, 20), C=st.sampled_from([0.5, 5.0]))
def test_kkt_box_and_warm_start(seed, n, C):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = np.ascontiguousarray(X @ X.T)  # singular PSD: alpha need not be unique
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[0], y[1] = -1.0, 1.0
    tol = 1e-6
    alpha, _, _ = cold_solve(K, y, C, tol)
    check_feasible(y, alpha, C)
    assert violation_ref(K, y, alpha, C) <= tol + 1e-9
    # Warm start on a different kernel, from this solution.
    K2 = np.ascontiguousarray(K + np.outer(X[:, 0], X[:, 0]) + 0.5)
    a_warm = alpha.copy()
    g_warm = smo_gradient(K2, y, a_warm, np.empty(n))
    smo_solve(K2, y, C, a_warm, g_warm, tol, 10**7)
    check_feasible(y, a_warm, C)
    a_cold, _, _ = cold_solve(K2, y, C, tol)
    f_cold = objective(K2, y, a_cold)
    bound = tol * C * n  # first-order bound on the suboptimality of either
    assert objective(K2, y, a_warm) == pytest.approx(f_cold, abs=bound)


def test_matches_libsvm_on_ionosphere():
    from pathlib import Path

    import mklopt

    path = Path(mklopt.__file__).parent / "datasets" / "data" / "ionosphere.csv"
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = data[:, :-1], data[:, -1].astype(float)
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.ascontiguousarray(np.exp(-sq / (2 * 4.0**2)))
    for C, tol in [(1.0, 1e-3), (10.0, 1e-6)]:
        alpha, grad, _ = cold_solve(K, y, C, tol)
        check_feasible(y, alpha, C)
        assert violation_ref(K, y, alpha, C) <= tol + 1e-9
        ref_alpha, ref_bias, _ = libsvm(K, y, C, tol)
        f, f_ref = objective(K, y, alpha), objective(K, y, ref_alpha)
        assert f == pytest.approx(f_ref, rel=2 * tol)
        np.testing.assert_allclose(alpha, ref_alpha, atol=max(10 * tol, 1e-4) * C)
        assert svm_bias(y, alpha, grad, C) == pytest.approx(ref_bias, abs=max(10 * tol, 1e-4))


def test_sub_kernel_with_repeated_points(rng):
    K, y = rbf_problem(rng, 30)
    idx = rng.integers(0, 30, size=25)
    idx[:2] = [0, 1]  # both classes
    idx[2:4] = [5, 5]  # an exact duplicate: zero curvature along the pair
    Ks = np.ascontiguousarray(K[np.ix_(idx, idx)])
    ys = np.ascontiguousarray(y[idx])
    alpha, _, _ = cold_solve(Ks, ys, 1.0, 1e-6)
    check_feasible(ys, alpha, 1.0)
    assert violation_ref(Ks, ys, alpha, 1.0) <= 1e-6 + 1e-9
    ref_alpha, _, _ = libsvm(Ks, ys, 1.0, 1e-6)
    assert objective(Ks, ys, alpha) == pytest.approx(objective(Ks, ys, ref_alpha), rel=1e-5)


def test_max_iter_is_respected(rng):
    K, y = rbf_problem(rng, 40)
    alpha, grad, n_iter = cold_solve(K, y, 10.0, 1e-9, max_iter=3)
    assert n_iter == 3
    check_feasible(y, alpha, 10.0)
    np.testing.assert_allclose(grad, gradient_ref(K, y, alpha), atol=1e-10)
    assert smo_violation(y, alpha, grad, 10.0) > 1e-9


def test_sync_matches_numpy(rng):
    # F of the inactive variables follows F_t -= (K dv)_t over touched indices.
    n = 12
    K, _ = rbf_problem(rng, n)
    F = rng.normal(size=n)
    dv = np.zeros(n)
    touched = np.array([3, 7, 0] + [0] * (n - 3), dtype=np.int64)
    dv[[3, 7]] = [0.5, -0.25]
    is_touched = np.zeros(n, dtype=np.uint8)
    is_touched[[3, 7]] = 1
    act = np.arange(n)[::-1].copy()  # inactive: act[8:] = 3, 2, 1, 0
    expected = F.copy()
    expected[[3, 2, 1, 0]] -= (K @ dv)[[3, 2, 1, 0]]
    for fn in (_sync, _sync.py_func):
        F2, dv2, it2 = F.copy(), dv.copy(), is_touched.copy()
        assert fn(K, F2, dv2, touched, it2, 2, act, 8) == 0
        np.testing.assert_allclose(F2, expected, atol=1e-14)
        assert not dv2.any() and not it2.any()
    assert _in_sets.py_func(1.0, 0.0, 1.0) == (True, False)
    assert _in_sets.py_func(-1.0, 1.0, 1.0) == (True, False)
