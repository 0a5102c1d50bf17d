"""The generalised SMO core: NumPy twins, libsvm agreement on all three problems, KKT.

One jitted loop solves ``min 1/2 a'Qa + p'a, s'a = total, 0 <= a <= U`` with
``Q_tu = s_t s_u K[rows_t, rows_u]``. It is checked on the three problems the
oracles build from it: classification (``SVC``), epsilon-SVR (two variables
per kernel row, ``SVR``) and one-class (``OneClassSVM``), each against
libsvm through scikit-learn with ``kernel="precomputed"``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.svm import SVC, SVR, OneClassSVM

from mklopt import datasets
from mklopt._jit import readonly
from mklopt._jit.smo import (
    _in_sets,
    _no_source,
    _select_i,
    _select_j,
    _shrink,
    _smo_core,
    _sync,
    accumulate_rows,
    gather_block,
    smo_gradient,
    smo_rho,
    smo_solve,
    smo_violation,
)
from tests._strategies import log_uniform, points, reals

#: A stop flag that is never set (see mklopt._interrupt).
GO = np.zeros(1, dtype=np.int64)


# ------------------------------------------------------------------ problems
def svc(y, C):
    n = y.size
    return dict(rows=np.arange(n), signs=y.astype(float), upper=np.full(n, float(C)),
                linear=np.full(n, -1.0), total=0.0)


def svr(t, C, eps):
    n = t.size
    return dict(rows=np.r_[np.arange(n), np.arange(n)], signs=np.r_[np.ones(n), -np.ones(n)],
                upper=np.full(2 * n, float(C)), linear=np.r_[eps - t, eps + t], total=0.0)


def one_class(n, nu):
    # libsvm's own start: the first floor(nu n) variables at the bound, one
    # fractional, the rest zero (sum = 1 after scaling by 1 / (nu n)).
    a = np.zeros(n)
    k = int(nu * n)
    a[:k] = 1.0
    if k < n:
        a[k] = nu * n - k
    a /= nu * n
    return dict(rows=np.arange(n), signs=np.ones(n), upper=np.full(n, 1.0 / (nu * n)),
                linear=np.zeros(n), total=1.0), a


def solve(K, P, a=None, tol=1e-8, max_iter=10**7, shrinking=True, fn=smo_solve):
    N = P["signs"].size
    a = np.zeros(N) if a is None else a.copy()
    g = smo_gradient(K, P["rows"], P["signs"], P["linear"], a, np.empty(N))
    it = fn(K, P["rows"], P["signs"], P["upper"], a, g, tol, max_iter, shrinking, GO)
    return a, g, it


# ---------------------------------------------------------------- references
def Q_of(K, P):
    r, s = P["rows"], P["signs"]
    return s[:, None] * s[None, :] * K[np.ix_(r, r)]


def gradient_ref(K, P, a):
    return Q_of(K, P) @ a + P["linear"]


def objective(K, P, a):
    return 0.5 * a @ Q_of(K, P) @ a + P["linear"] @ a


def violation_ref(K, P, a):
    F = -P["signs"] * gradient_ref(K, P, a)
    s, U = P["signs"], P["upper"]
    up = np.where(s > 0, a < U, a > 0)
    low = np.where(s > 0, a > 0, a < U)
    return F[up].max() - F[low].min()


def rho_ref(P, a, g):
    yg = P["signs"] * g
    U = P["upper"]
    free = (a > 0) & (a < U)
    if free.any():
        return yg[free].mean()
    s = P["signs"]
    at_u = a >= U
    ub_mask = (at_u & (s < 0)) | (~at_u & (s > 0))
    lb_mask = (at_u & (s > 0)) | (~at_u & (s < 0))
    return 0.5 * (yg[ub_mask].min() + yg[lb_mask].max())


def check_feasible(P, a, atol=1e-10):
    U = P["upper"]
    assert np.all(a >= 0.0) and np.all(a <= U)
    assert abs(P["signs"] @ a - P["total"]) <= atol * max(1.0, U.max() * a.size)


def rbf(X, gamma):
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.ascontiguousarray(np.exp(-gamma * sq))


# ---------------------------------------------------------------- strategies
@st.composite
def labelled_points(draw, min_n=3, max_n=40):
    """Points with edge cases hypothesis can reach: duplicate rows, a constant
    feature, a single point of a class."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 4))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-3, 3, width=32)))
    if draw(st.booleans()):  # duplicate a few rows exactly
        k = draw(st.integers(1, max(1, n // 3)))
        X[-k:] = X[:k]
    if d > 1 and draw(st.booleans()):
        X[:, 0] = 0.0  # a constant feature
    y = draw(arrays(np.float64, n, elements=st.sampled_from([-1.0, 1.0])))
    y[0], y[1] = -1.0, 1.0  # both classes, possibly one point of one of them
    return X, y


# ---------------------------------------------------------------- primitives
def test_gradient_matches_numpy(rng):
    X = rng.normal(size=(30, 3))
    K = rbf(X, 0.5)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    for P in (svc(y, 2.0), svr(rng.normal(size=30), 2.0, 0.1), one_class(30, 0.3)[0]):
        N = P["signs"].size
        a = np.where(rng.random(N) < 0.4, rng.uniform(0, P["upper"]), 0.0)
        got = smo_gradient(K, P["rows"], P["signs"], P["linear"], a, np.empty(N))
        np.testing.assert_allclose(got, gradient_ref(K, P, a), rtol=1e-12, atol=1e-12)


def test_violation_and_rho_match_numpy(rng):
    X = rng.normal(size=(40, 3))
    K = rbf(X, 0.5)
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    for P in (svc(y, 2.0), svr(rng.normal(size=40), 2.0, 0.1)):
        a, g, _ = solve(K, P, tol=1e-3)
        gr = gradient_ref(K, P, a)
        assert smo_violation(P["signs"], P["upper"], a, gr) == pytest.approx(
            violation_ref(K, P, a), abs=1e-12)
        assert smo_rho(P["signs"], P["upper"], a, g) == pytest.approx(rho_ref(P, a, g), abs=1e-12)
    # No free variable: rho is the midpoint of the allowed interval.
    P = svc(y, 2.0)
    a0, g0 = np.zeros(40), np.full(40, -1.0)
    assert smo_rho(P["signs"], P["upper"], a0, g0) == pytest.approx(rho_ref(P, a0, g0))


def test_py_func_on_tiny_input():
    K = np.array([[1.0, 0.2, 0.1], [0.2, 1.0, 0.3], [0.1, 0.3, 1.0]])
    P = svc(np.array([1.0, -1.0, 1.0]), 1.0)
    a1, g1, it1 = solve(K, P, fn=smo_solve.py_func)
    a2, g2, it2 = solve(K, P)
    np.testing.assert_allclose(a1, a2, atol=1e-12)
    assert it1 == it2
    s, U, r = P["signs"], P["upper"], P["rows"]
    np.testing.assert_allclose(
        smo_gradient.py_func(K, r, s, P["linear"], a1, np.empty(3)), g1, atol=1e-12)
    assert smo_violation.py_func(s, U, a1, g1) <= 1e-8
    assert smo_rho.py_func(s, U, a1, g1) == smo_rho(s, U, a1, g1)
    alpha = np.zeros(3)
    F = s.copy()  # F = -s G at a = 0 with p = -1
    dvar = np.diag(K).copy()
    assert _smo_core.py_func(K, dvar, r, s, U, alpha, F, 1e-8, 100, True, GO) == it1
    np.testing.assert_allclose(alpha, a1, atol=1e-12)
    act = np.arange(3)
    up = np.where(s > 0, alpha < U, alpha > 0)
    low = np.where(s > 0, alpha > 0, alpha < U)
    pu, pl = np.where(up, 0.0, -np.inf), np.where(low, 0.0, np.inf)
    assert _select_i.py_func(F, pu, act, 3) == _select_i(F, pu, act, 3)
    assert _select_j.py_func(K, dvar, r, False, F, pl, act, 3, 0, 1.0, np.empty(3)) == _select_j(
        K, dvar, r, False, F, pl, act, 3, 0, 1.0, np.empty(3))
    act2 = np.arange(3)
    assert _shrink.py_func(s, U, a1, -s * g1, act2) == _shrink(s, U, a1, -s * g1, act)
    np.testing.assert_array_equal(np.sort(act2), np.arange(3))
    # A mapped problem (SVR: two variables per row), through Python too.
    Pr = svr(np.array([0.5, -0.2, 1.0]), 1.0, 0.1)
    b1, h1, j1 = solve(K, Pr, fn=smo_solve.py_func)
    b2, h2, j2 = solve(K, Pr)
    np.testing.assert_allclose(b1, b2, atol=1e-12)
    assert j1 == j2


def test_block_helpers_match_numpy(rng):
    data = rng.normal(size=(6, 5))
    slots = np.array([4, 0, 2], dtype=np.int64)
    coef = np.array([0.5, 0.0, -2.0])
    out = rng.normal(size=5)
    want = out + coef @ data[slots]
    for fn in (accumulate_rows, accumulate_rows.py_func):
        np.testing.assert_allclose(fn(data, slots, coef, out.copy()), want, atol=1e-14)
    cols = np.array([1, 1, 3], dtype=np.int64)
    for fn in (gather_block, gather_block.py_func):
        np.testing.assert_array_equal(fn(data, slots, cols, np.empty((3, 3))),
                                      data[np.ix_(slots, cols)])


# ------------------------------------------------------------- properties
@settings(max_examples=40)
@given(data=labelled_points(5, 50), C=st.floats(0.01, 100.0), gamma=st.floats(0.05, 5.0))
def test_shrinking_reaches_the_same_point(data, C, gamma):
    # Shrinking sets variables aside and must still meet tol on all of them,
    # keep the gradient exact, and agree with the unshrunk solve.
    X, y = data
    K = rbf(X, gamma)
    P = svc(y, C)
    tol = 1e-6
    a_s, g_s, _ = solve(K, P, tol=tol)
    a_f, g_f, _ = solve(K, P, tol=tol, shrinking=False)
    for a, g in ((a_s, g_s), (a_f, g_f)):
        check_feasible(P, a)
        np.testing.assert_allclose(g, gradient_ref(K, P, a), atol=1e-9 * max(1.0, C))
        assert violation_ref(K, P, a) <= tol + 1e-9 * max(1.0, C)
    # Both are within tol * (mass) of the optimum, so within that of each other.
    bound = tol * C * y.size + 1e-9
    assert objective(K, P, a_s) == pytest.approx(objective(K, P, a_f), abs=bound)
    # Warm start on a perturbed kernel: most bound variables are shrunk at once.
    K2 = np.ascontiguousarray(0.9 * K + 0.1 * K**2)  # Schur product: still PSD
    a_w, g_w, _ = solve(K2, P, a=a_s, tol=tol)
    np.testing.assert_allclose(g_w, gradient_ref(K2, P, a_w), atol=1e-9 * max(1.0, C))
    assert violation_ref(K2, P, a_w) <= tol + 1e-9 * max(1.0, C)


@settings(max_examples=40)
@given(data=labelled_points(3, 30), C=st.floats(0.05, 20.0))
def test_kkt_box_and_warm_start(data, C):
    X, y = data
    K = np.ascontiguousarray(X @ X.T)  # singular PSD: a need not be unique
    P = svc(y, C)
    tol = 1e-6
    a, _, _ = solve(K, P, tol=tol)
    check_feasible(P, a)
    assert violation_ref(K, P, a) <= tol + 1e-9 * max(1.0, C * np.abs(K).max())
    # Warm start on a different kernel, from this solution.
    K2 = np.ascontiguousarray(K + np.outer(X[:, -1], X[:, -1]) + 0.5)
    a_warm, _, _ = solve(K2, P, a=a, tol=tol)
    check_feasible(P, a_warm)
    a_cold, _, _ = solve(K2, P, tol=tol)
    bound = tol * C * y.size + 1e-9  # first-order bound on the suboptimality of either
    assert objective(K2, P, a_warm) == pytest.approx(objective(K2, P, a_cold), abs=bound)


def core_in_python(K, P, a, tol, max_iter, shrinking):
    """The SMO loop run by the Python interpreter (its helpers stay jitted)."""
    s, r = P["signs"], P["rows"]
    a = a.copy()
    g = smo_gradient(K, r, s, P["linear"], a, np.empty(s.size))
    F = -s * g
    dvar = K[r, r].copy()
    it = _smo_core.py_func(K, dvar, r, s, P["upper"], a, F, tol, max_iter, shrinking, GO)
    return a, -s * F, it


@settings(max_examples=40, deadline=None)
@given(data=labelled_points(3, 60), C=log_uniform(0.01, 100.0), gamma=st.floats(0.05, 5.0),
       warm=st.booleans(), shrinking=st.booleans())
def test_compiled_loop_matches_its_python_twin(data, C, gamma, warm, shrinking):
    # The loop reads t directly while nothing is set aside and through the
    # index list otherwise; compiled and interpreted, the same choices,
    # steps and iteration count.
    X, y = data
    K = rbf(X, gamma)
    P = svc(y, C)
    start = np.zeros(y.size)
    if warm:  # a feasible start with free and bound variables
        start, _, _ = solve(K, P, tol=1e-1)
    tol = 1e-6
    a_ref, g_ref, it_ref = solve(K, P, a=start, tol=tol, shrinking=shrinking)
    a, g, it = core_in_python(K, P, start, tol, 10**7, shrinking)
    assert it == it_ref
    np.testing.assert_allclose(a, a_ref, rtol=0, atol=1e-12 * C)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * max(1.0, C))
    check_feasible(P, a)
    assert violation_ref(K, P, a) <= tol + 1e-9 * max(1.0, C)


def test_unshrunk_solver_edge_cases_and_twin(rng):
    # One-class (an equality with total 1, started at libsvm's point).
    P, a0 = one_class(25, 0.3)
    K = rbf(rng.normal(size=(25, 2)), 0.7)
    want, _, it_ref = solve(K, P, a=a0, shrinking=False)
    a, _, it = core_in_python(K, P, a0, 1e-8, 10**7, False)
    assert it == it_ref
    np.testing.assert_allclose(a, want, atol=1e-12)
    assert abs(want.sum() - 1.0) <= 1e-12
    # An empty I_low (one class, every variable at 0): no pair, no step.
    P1 = svc(np.ones(4), 1.0)
    a, _, it = solve(np.eye(4), P1, shrinking=False, max_iter=100)
    assert it == 0 and not a.any()
    # The budget is respected and the gradient stays exact.
    X = rng.normal(size=(40, 3))
    K = rbf(X, 0.5)
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    P = svc(y, 10.0)
    a, g, it = solve(K, P, tol=1e-9, max_iter=3, shrinking=False)
    assert it == 3
    check_feasible(P, a)
    np.testing.assert_allclose(g, gradient_ref(K, P, a), atol=1e-10)


def select_ref(K, P, a, F, act):
    """WSS 2 over ``act`` in NumPy: (i, gmax, j, gmin), last of ties, -1 if none."""
    s, U, r = P["signs"], P["upper"], P["rows"]
    up = np.where(s > 0, a < U, a > 0)[act]
    low = np.where(s > 0, a > 0, a < U)[act]
    f = F[act]
    if not up.any():
        return None, -np.inf, -1, np.inf
    gmax = f[up].max()
    i = act[np.flatnonzero(up & (f == gmax))[-1]]
    gmin = f[low].min() if low.any() else np.inf
    b = gmax - f
    c = K[r[i], r[i]] + K[r[act], r[act]] - 2.0 * K[r[i], r[act]]
    c = np.where(c > 0.0, c, 1e-12)
    ok = low & (b > 0.0)
    if not ok.any():
        return i, gmax, -1, gmin
    obj = np.where(ok, -(b * b) / c, np.inf)
    j = act[np.flatnonzero(obj == obj.min())[-1]]
    return i, gmax, j, gmin


@settings(max_examples=60)
@given(n=st.integers(1, 30), seed=st.integers(0, 2**32 - 1), mapped=st.booleans(),
       ties=st.booleans())
def test_branch_free_selection_matches_numpy(n, seed, mapped, ties):
    # The masked passes choose i and j as the index-set definitions say.
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    if ties:
        # Few distinct points: equal kernel entries, so that with equal F the
        # second-order objective ties too and the last of ties must win for j.
        X = np.round(X / 2.0)
    K = rbf(X, 0.5)
    P = svr(rng.normal(size=n), 1.0, 0.1) if mapped else svc(
        np.where(rng.random(n) < 0.5, -1.0, 1.0), 1.0)
    N = P["signs"].size
    U = P["upper"]
    a = np.select([rng.random(N) < 0.3, rng.random(N) < 0.5], [np.zeros(N), U],
                  rng.uniform(0, U))
    F = rng.normal(size=N)
    if ties:
        F = np.round(F)  # many equal values: the last of ties must win
    act = rng.permutation(N)[: rng.integers(0, N + 1)].astype(np.int64)
    if act.size == N:  # nothing set aside: the solver's list is the identity
        act = np.arange(N, dtype=np.int64)
    s = P["signs"]
    up = np.where(s > 0, a < U, a > 0)
    low = np.where(s > 0, a > 0, a < U)
    pu, pl = np.where(up, 0.0, -np.inf), np.where(low, 0.0, np.inf)
    dvar = K[P["rows"], P["rows"]].copy()
    i_ref, gmax_ref, j_ref, gmin_ref = select_ref(K, P, a, F, act)
    for sel_i, sel_j in ((_select_i, _select_j), (_select_i.py_func, _select_j.py_func)):
        i, gmax = sel_i(F, pu, act, act.size)
        assert gmax == gmax_ref
        if i_ref is not None:
            assert i == i_ref
        j, gmin = sel_j(K, dvar, P["rows"], mapped, F, pl, act, act.size, i, gmax,
                        np.full(N, np.nan))
        assert (j, gmin) == (j_ref, gmin_ref)


# ---------------------------------------------------------------- agreement
def libsvm_svc(K, y, C, tol):
    clf = SVC(kernel="precomputed", C=C, tol=tol, cache_size=200).fit(K, y)
    alpha = np.zeros(y.shape[0])
    alpha[clf.support_] = clf.dual_coef_[0] * y[clf.support_]
    return alpha, float(clf.intercept_[0])


@settings(max_examples=40)
@given(data=labelled_points(4, 24), C=st.floats(0.1, 10.0))
def test_classification_matches_libsvm(data, C):
    X, y = data
    K = rbf(X, 0.5) + 0.1 * np.eye(y.size)  # strictly PD: the solution is unique
    P = svc(y, C)
    tol = 1e-7
    a, g, _ = solve(K, P, tol=tol)
    check_feasible(P, a)
    ref_a, ref_b = libsvm_svc(K, y, C, tol)
    # libsvm caches Q in float32, which limits agreement to ~1e-6 relative.
    assert objective(K, P, a) == pytest.approx(objective(K, P, ref_a), rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(a, ref_a, atol=1e-4 * C)
    assert -smo_rho(P["signs"], P["upper"], a, g) == pytest.approx(ref_b, abs=1e-3)


@st.composite
def regression_points(draw, min_n=4, max_n=30):
    """Points (duplicates and a constant feature reachable) and drawn targets:
    a duplicated point may carry a different target, and targets may tie."""
    X = draw(points(draw(st.integers(min_n, max_n)), 2))
    t = draw(arrays(np.float64, X.shape[0], elements=reals(-2.0, 2.0).map(lambda v: round(v, 2))))
    return X, t


@settings(max_examples=30)
@given(data=regression_points(), C=log_uniform(0.1, 10.0),
       eps=st.one_of(st.just(0.0), st.floats(0.0, 0.5)))
def test_svr_matches_libsvm(data, C, eps):
    X, t = data
    n = t.size
    K = rbf(X, 0.5) + 0.1 * np.eye(n)  # strictly PD: beta is unique
    P = svr(t, C, eps)
    tol = 1e-7
    a, g, _ = solve(K, P, tol=tol)
    check_feasible(P, a)
    beta = a[:n] - a[n:]
    ref = SVR(kernel="precomputed", C=C, epsilon=eps, tol=tol).fit(K, t)
    ref_beta = np.zeros(n)
    ref_beta[ref.support_] = ref.dual_coef_[0]
    ref_a = np.r_[np.maximum(ref_beta, 0), np.maximum(-ref_beta, 0)]
    assert objective(K, P, a) == pytest.approx(objective(K, P, ref_a), rel=1e-6, abs=1e-8)
    np.testing.assert_allclose(beta, ref_beta, atol=1e-4 * C)
    assert -smo_rho(P["signs"], P["upper"], a, g) == pytest.approx(ref.intercept_[0], abs=1e-3)


@settings(max_examples=30)
# nu = 1 (every variable at its bound) makes libsvm's offset NaN; it is the
# uniform point, checked on its own below.
@given(X=st.integers(5, 40).flatmap(lambda n: points(n, 2)), nu=st.floats(0.05, 0.95))
def test_one_class_matches_libsvm(X, nu):
    n = X.shape[0]
    K = rbf(X, 0.5) + 0.1 * np.eye(n)
    P, a0 = one_class(n, nu)
    tol = 1e-7
    a, g, _ = solve(K, P, a=a0, tol=tol)
    check_feasible(P, a)
    ref = OneClassSVM(kernel="precomputed", nu=nu, tol=tol).fit(K)
    # libsvm's variables are ours times nu n (bounds 1, sum nu n).
    ref_a = np.zeros(n)
    ref_a[ref.support_] = ref.dual_coef_[0] / (nu * n)
    assert objective(K, P, a) == pytest.approx(objective(K, P, ref_a), rel=1e-5, abs=1e-9)
    np.testing.assert_allclose(a, ref_a, atol=1e-4 / (nu * n))
    rho = smo_rho(P["signs"], P["upper"], a, g)
    assert rho * nu * n == pytest.approx(-ref.intercept_[0], abs=1e-3)


def test_classification_matches_libsvm_on_ionosphere():
    X, y = datasets.load("ionosphere")
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    K = rbf(X, 1 / (2 * 4.0**2))
    for C, tol in [(1.0, 1e-3), (10.0, 1e-6)]:
        P = svc(y, C)
        a, g, _ = solve(K, P, tol=tol)
        check_feasible(P, a)
        assert violation_ref(K, P, a) <= tol + 1e-9
        ref_a, ref_b = libsvm_svc(K, y, C, tol)
        assert objective(K, P, a) == pytest.approx(objective(K, P, ref_a), rel=2 * tol)
        np.testing.assert_allclose(a, ref_a, atol=max(10 * tol, 1e-4) * C)
        assert -smo_rho(P["signs"], P["upper"], a, g) == pytest.approx(
            ref_b, abs=max(10 * tol, 1e-4))


def test_sub_kernel_with_repeated_points(rng):
    X = rng.normal(size=(30, 3))
    K = rbf(X, 0.5)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    idx = rng.integers(0, 30, size=25)
    idx[:2] = [0, 1]
    y[[0, 1]] = [-1.0, 1.0]
    idx[2:4] = [5, 5]  # an exact duplicate: zero curvature along the pair
    Ks = np.ascontiguousarray(K[np.ix_(idx, idx)])
    ys = np.ascontiguousarray(y[idx])
    P = svc(ys, 1.0)
    a, _, _ = solve(Ks, P, tol=1e-6)
    check_feasible(P, a)
    assert violation_ref(Ks, P, a) <= 1e-6 + 1e-9
    ref_a, _ = libsvm_svc(Ks, ys, 1.0, 1e-6)
    assert objective(Ks, P, a) == pytest.approx(objective(Ks, P, ref_a), rel=1e-5)


def test_max_iter_is_respected(rng):
    X = rng.normal(size=(40, 3))
    K = rbf(X, 0.5)
    y = np.where(rng.random(40) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    P = svc(y, 10.0)
    a, g, n_iter = solve(K, P, tol=1e-9, max_iter=3)
    assert n_iter == 3
    check_feasible(P, a)
    np.testing.assert_allclose(g, gradient_ref(K, P, a), atol=1e-10)
    assert smo_violation(P["signs"], P["upper"], a, g) > 1e-9


def test_optimal_start_needs_few_iterations(rng):
    # A solution perturbed by one unit in the last place of y'a (what a
    # different BLAS gives) must re-solve at once, not rebuild the box.
    X = rng.normal(size=(80, 4))
    K = rbf(X, 0.3)
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, 1.0, -1.0)
    P = svc(y, 10.0)
    a, g, it = solve(K, P, tol=1e-6)
    again, _, it2 = solve(K, P, a=a, tol=1e-6)
    assert it2 <= 2 < it
    np.testing.assert_allclose(again, a, atol=1e-12)


def test_sync_matches_numpy(rng):
    # F of the inactive variables follows F_t -= (K dv)[rows_t] over touched rows.
    n = 12
    K = rbf(rng.normal(size=(n, 2)), 0.5)
    rows = readonly(np.r_[np.arange(n), np.arange(n)])  # mapped: two variables per row
    F = rng.normal(size=2 * n)
    dv = np.zeros(n)
    touched = np.array([3, 7, 0] + [0] * (n - 3), dtype=np.int64)
    dv[[3, 7]] = [0.5, -0.25]
    is_touched = np.zeros(n, dtype=np.uint8)
    is_touched[[3, 7]] = 1
    act = np.arange(2 * n)[::-1].copy()  # inactive: act[20:] = 3, 2, 1, 0
    expected = F.copy()
    expected[[3, 2, 1, 0]] -= (K @ dv)[[3, 2, 1, 0]]
    for fn in (_sync, _sync.py_func):
        F2, dv2, it2 = F.copy(), dv.copy(), is_touched.copy()
        assert fn(K, rows, F2, dv2, touched, it2, 2, act, 20, _no_source()) == 0
        np.testing.assert_allclose(F2, expected, atol=1e-14)
        assert not dv2.any() and not it2.any()
    assert _in_sets.py_func(1.0, 0.0, 1.0) == (True, False)
    assert _in_sets.py_func(-1.0, 1.0, 1.0) == (True, False)


def test_one_class_keeps_the_equality_and_spreads_on_the_identity():
    # min 1/2 |a|^2 over the simplex (with a cap above 1/n) is the uniform point.
    P, a0 = one_class(10, 0.35)
    a, _, _ = solve(np.eye(10), P, a=a0)
    assert abs(a.sum() - 1.0) <= 1e-12
    np.testing.assert_allclose(a, 0.1, atol=1e-8)
    P1, a1 = one_class(7, 1.0)  # nu = 1: every variable at its bound 1/n
    a, g, _ = solve(np.eye(7) + 0.5, P1, a=a1)
    np.testing.assert_allclose(a, 1 / 7, rtol=1e-12)
    assert np.isfinite(smo_rho(P1["signs"], P1["upper"], a, g))
