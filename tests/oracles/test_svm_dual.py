"""SVMDual: agreement with libsvm, oracle contract, warm starts, bad input."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.svm import SVC

import mklopt
from mklopt import KernelBank
from mklopt.kernels import rbf
from mklopt.oracles import ConvergenceWarning, SVMDual
from tests._strategies import labels, log_uniform, points, simplex_points


def make_bank(K):
    return KernelBank.from_matrices(np.ascontiguousarray(K, dtype=np.float64))


def libsvm(K, y, C, tol):
    clf = SVC(kernel="precomputed", C=C, tol=tol, cache_size=200).fit(K, y)
    alpha = np.zeros(y.shape[0])
    alpha[clf.support_] = clf.dual_coef_[0] * y[clf.support_]
    return alpha, float(clf.intercept_[0])


def objective(K, y, alpha):
    v = alpha * y
    return alpha.sum() - 0.5 * v @ K @ v


def primal_dual_gap(K, y, alpha, bias, C):
    """``P(w, b) - D(alpha)`` with the solution's own offset (>= the true gap)."""
    v = alpha * y
    xi = np.maximum(0.0, 1.0 - y * (K @ v + bias))
    return max(0.0, float(v @ K @ v) + C * float(xi.sum()) - float(alpha.sum()))


def kkt_violation(K, y, alpha, C):
    F = -y * (y * (K @ (alpha * y)) - 1.0)
    up = np.where(y > 0, alpha < C, alpha > 0)
    low = np.where(y > 0, alpha > 0, alpha < C)
    return F[up].max() - F[low].min()


def bias_interval(K, y, alpha, C, slack):
    """The biases b that satisfy the KKT conditions at ``alpha`` up to ``slack``.

    ``y_t f_t >= 1`` where ``alpha_t < C`` and ``y_t f_t <= 1`` where
    ``alpha_t > 0``, with ``f = K (alpha y) + b``. When no variable is free
    the bias is not unique: libsvm takes the midpoint of this interval.
    """
    g = K @ (alpha * y)
    lo, hi = -np.inf, np.inf
    for t in range(y.size):
        # y_t (g_t + b) >= 1 - slack  (alpha_t < C) and <= 1 + slack (alpha_t > 0)
        if alpha[t] < C * (1 - 1e-9):
            bound = y[t] * (1 - slack) - g[t]
            lo, hi = (max(lo, bound), hi) if y[t] > 0 else (lo, min(hi, bound))
        if alpha[t] > C * 1e-9:
            bound = y[t] * (1 + slack) - g[t]
            lo, hi = (lo, min(hi, bound)) if y[t] > 0 else (max(lo, bound), hi)
    return lo, hi


def random_bank(rng, m, n, d=3):
    """m PSD kernels (RBF widths and a linear kernel) on random points."""
    X = rng.normal(size=(n, d))
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Ks = [np.exp(-sq / (2.0 * s**2)) for s in np.geomspace(0.5, 4.0, m - 1)]
    Ks.append(X @ X.T / d)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[0], y[1] = -1.0, 1.0
    return np.ascontiguousarray(np.stack(Ks)), y


@pytest.fixture(scope="module")
def ionosphere():
    path = Path(mklopt.__file__).parent / "datasets" / "data" / "ionosphere.csv"
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = data[:, :-1], data[:, -1].astype(float)
    rng = np.random.default_rng(0)
    idx = rng.permutation(y.size)[:175]
    X, y = X[idx], y[idx]
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Ks = [np.exp(-sq / (2.0 * s**2)) for s in (1.0, 4.0, 16.0)]
    Ks.append(X @ X.T)
    Ks = [K / np.trace(K) for K in Ks]
    return np.ascontiguousarray(np.stack(Ks)), y


def check_answer(oracle, ans, K_all, y, w):
    C = oracle.C
    n = y.size
    alpha = ans.alpha
    assert alpha.shape == (n,) and ans.q.shape == (oracle.n_kernels,)
    assert np.all(alpha >= 0) and np.all(alpha <= C)
    assert abs(y @ alpha) <= 1e-10 * max(1.0, C * n)
    np.testing.assert_array_equal(ans.support, np.flatnonzero(alpha > 0))
    assert ans.support.dtype == np.int64
    v = alpha * y
    q_full = np.einsum("i,kij,j->k", v, K_all, v)
    np.testing.assert_allclose(ans.q, q_full, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ans.grad, -0.5 * ans.q)
    np.testing.assert_array_equal(ans.w, w)
    assert ans.linear_term == pytest.approx(alpha.sum())
    assert ans.value == pytest.approx(alpha.sum() - 0.5 * w @ ans.q)
    K = np.tensordot(w, K_all, axes=1)
    assert kkt_violation(K, y, alpha, C) <= oracle.tol + 1e-9
    assert ans.n_solver_iter >= 0


# ---------------------------------------------------------------- agreement
@st.composite
def random_banks(draw):
    """m PSD kernels (RBF widths and a linear kernel) on drawn points, drawn
    labels and weights with exact zeros."""
    n, m = draw(st.integers(5, 25)), draw(st.integers(2, 4))
    X = draw(points(n, 3))
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Ks = [np.exp(-sq / (2.0 * s**2)) for s in np.geomspace(0.5, 4.0, m - 1)]
    Ks.append(X @ X.T / 3)
    return np.ascontiguousarray(np.stack(Ks)), draw(labels(n)), draw(simplex_points(m))


@given(problem=random_banks(), C=log_uniform(1e-2, 1e2))
def test_matches_libsvm_on_random_banks(problem, C):
    K_all, y, w = problem
    n = y.size
    K_all = K_all + 0.05 * np.eye(n)  # strictly PD (w sums to 1): alpha unique
    tol = 1e-7
    oracle = SVMDual(make_bank(K_all), y, C=C, tol=tol)
    ans = oracle(w)
    check_answer(oracle, ans, K_all, y, w)
    K = np.tensordot(w, K_all, axes=1)
    ref_alpha, ref_bias = libsvm(K, y, C, tol)
    assert ans.value == pytest.approx(objective(K, y, ref_alpha), rel=1e-6, abs=1e-8)
    # The dual is 0.05-strongly concave (K >= 0.05 I), so a point with duality
    # gap g is within sqrt(2 g / 0.05) of the unique optimum; at small C the
    # two solvers' tolerance-level gaps allow more than 1e-4 C.
    near = sum(np.sqrt(2.0 * primal_dual_gap(K, y, a, b, C) / 0.05)
               for a, b in ((ans.alpha, ans.bias), (ref_alpha, ref_bias)))
    np.testing.assert_allclose(ans.alpha, ref_alpha, atol=max(1e-4 * C, near))
    # The bias is unique only with a free variable; both must satisfy KKT.
    lo, hi = bias_interval(K, y, ans.alpha, C, slack=1e-5)
    assert lo <= ans.bias <= hi and lo - 1e-3 <= ref_bias <= hi + 1e-3
    if hi - lo < 1e-4:
        assert ans.bias == pytest.approx(ref_bias, abs=1e-3)


@st.composite
def edge_problems(draw):
    """Drawn points, labels, C and weights that reach the edges of the SVM dual:
    duplicate rows, a class of one point, a constant feature, C so small that
    every alpha sits at C, and weights with exact zeros."""
    n = draw(st.integers(4, 16))
    coord = st.floats(-3.0, 3.0, allow_nan=False, allow_subnormal=False).map(lambda v: round(v, 3))
    X = draw(hnp.arrays(np.float64, (n, 3), elements=coord))
    n_dup = draw(st.integers(0, n // 2))
    X = np.vstack([X, X[:n_dup]])  # duplicate rows
    if draw(st.booleans()):
        X[:, 1] = 0.7  # a constant feature
    n = X.shape[0]
    n_pos = draw(st.integers(1, n - 1))  # one point of a class is reachable
    y = np.where(np.arange(n) < n_pos, 1.0, -1.0)
    C = draw(st.floats(1e-3, 1e3).map(lambda v: float(np.float32(v))))
    w = np.array(draw(st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0]), min_size=3, max_size=3)))
    if not np.any(w > 0):
        w[draw(st.integers(0, 2))] = 1.0
    return X, y, C, w / w.sum()


@settings(max_examples=60, deadline=None)
@given(problem=edge_problems())
def test_matches_libsvm_at_the_edges(problem):
    X, y, C, w = problem
    n = X.shape[0]
    sq = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    # PD kernels (a ridge), so duplicate rows keep the optimum's value unique
    K_all = np.stack([np.exp(-sq / 2.0), np.exp(-sq / 18.0), X @ X.T / 9.0]) + 0.05 * np.eye(n)
    tol = 1e-7
    oracle = SVMDual(make_bank(np.ascontiguousarray(K_all)), y, C=C, tol=tol)
    ans = oracle(w)
    check_answer(oracle, ans, K_all, y, w)
    K = np.tensordot(w, K_all, axes=1)
    ref_alpha, _ = libsvm(K, y, C, tol)
    ref = objective(K, y, ref_alpha)
    assert ans.value == pytest.approx(ref, rel=1e-6, abs=1e-9 * max(1.0, C * n))


@pytest.mark.parametrize("C,tol", [(1.0, 1e-3), (100.0, 1e-3), (100.0, 1e-6)])
def test_matches_libsvm_on_ionosphere(ionosphere, C, tol):
    K_all, y = ionosphere
    m = K_all.shape[0]
    w = np.full(m, 1.0 / m)
    oracle = SVMDual(K_all, y, C=C, tol=tol)  # a raw array is wrapped in a KernelBank
    ans = oracle(w)
    check_answer(oracle, ans, K_all, y, w)
    K = np.tensordot(w, K_all, axes=1)
    ref_alpha, ref_bias = libsvm(K, y, C, tol)
    # Both stop at KKT violation <= tol: values agree to ~2 tol relative.
    assert ans.value == pytest.approx(objective(K, y, ref_alpha), rel=2 * tol)
    if tol <= 1e-6:
        np.testing.assert_allclose(ans.alpha, ref_alpha, atol=1e-4 * C)
        assert ans.bias == pytest.approx(ref_bias, abs=1e-3)
    # The decision values agree with libsvm's on the training points.
    f = K @ (ans.alpha * y) + ans.bias
    f_ref = K @ (ref_alpha * y) + ref_bias
    assert np.mean(np.sign(f) == np.sign(f_ref)) >= 0.97


# ---------------------------------------------------------------- contract
def test_warm_start_reaches_cold_objective(ionosphere):
    K_all, y = ionosphere
    m = K_all.shape[0]
    oracle = SVMDual(make_bank(K_all), y, C=100.0, tol=1e-5)
    w1 = np.full(m, 1.0 / m)
    w2 = np.array([0.1, 0.5, 0.3, 0.1])
    first = oracle(w1)
    warm = oracle(w2, warm_start=first.alpha)
    cold = oracle(w2)
    assert oracle.n_calls == 3
    check_answer(oracle, warm, K_all, y, w2)
    assert warm.value == pytest.approx(cold.value, rel=1e-4)
    # Same point again: the warm start is already optimal, and the repair of
    # its class sums (off by rounding) moves only free variables, so SMO has
    # at most a few steps to take whatever the BLAS kernel's rounding.
    again = oracle(w2, warm_start=warm.alpha)
    assert again.n_solver_iter <= 3
    assert again.value == pytest.approx(warm.value, rel=1e-9)
    # A nearby point: the warm start saves most of the work (not a margin of
    # a few iterations, which rounding can eat).
    w3 = 0.98 * w2 + 0.02 * w1
    warm3 = oracle(w3, warm_start=warm.alpha)
    cold3 = oracle(w3)
    assert warm3.value == pytest.approx(cold3.value, rel=1e-4)
    assert warm3.n_solver_iter <= cold3.n_solver_iter / 2
    # The caller's array is never written.
    a = first.alpha.copy()
    oracle(w2, warm_start=a)
    np.testing.assert_array_equal(a, first.alpha)


def test_attributes_and_counting(rng):
    K_all, y = random_bank(rng, 3, 12)
    oracle = SVMDual(make_bank(K_all), y, C=2.0, tol=1e-4)
    assert (oracle.n_kernels, oracle.n_samples, oracle.C, oracle.tol) == (3, 12, 2.0, 1e-4)
    assert oracle.max_iter == 10_000_000 and oracle.n_calls == 0
    np.testing.assert_array_equal(oracle.y, y)
    for k in range(3):
        oracle(np.eye(3)[k])
    assert oracle.n_calls == 3


def test_warm_start_rounding_is_repaired(rng):
    K_all, y = random_bank(rng, 3, 20)
    oracle = SVMDual(make_bank(K_all), y, C=1.0, tol=1e-6)
    w = np.full(3, 1 / 3)
    ans = oracle(w)
    nudged = ans.alpha.copy()
    nudged[ans.alpha == 0] -= 1e-12
    nudged[0] += 1e-11
    again = oracle(w, warm_start=nudged)
    check_answer(oracle, again, K_all, y, w)
    assert again.value == pytest.approx(ans.value, rel=1e-9)


def test_max_iter_warns(rng):
    K_all, y = random_bank(rng, 2, 30)
    oracle = SVMDual(make_bank(K_all), y, C=10.0, tol=1e-9, max_iter=2)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        ans = oracle(np.array([0.5, 0.5]))
    assert ans.n_solver_iter == 2
    assert np.all(ans.alpha >= 0) and abs(y @ ans.alpha) < 1e-12


# ---------------------------------------------------------------- bad input
@pytest.fixture
def small(rng):
    K_all, y = random_bank(rng, 3, 10)
    return make_bank(K_all), y


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"C": 0.0}, ValueError, "C"),
        ({"C": -1.0}, ValueError, "C"),
        ({"C": np.nan}, ValueError, "C"),
        ({"C": "1"}, TypeError, "C"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"max_iter": 1.5}, TypeError, "max_iter"),
    ],
)
def test_bad_parameters(small, kwargs, exc, match):
    bank, y = small
    with pytest.raises(exc, match=match):
        SVMDual(bank, y, **kwargs)


@pytest.mark.parametrize(
    "labels,match",
    [
        (np.ones(10), "single class"),
        (np.r_[np.zeros(5), np.ones(5)], "-1 and \\+1"),
        (np.r_[-np.ones(5), np.ones(4)], "labels"),
    ],
)
def test_bad_labels(small, labels, match):
    bank, _ = small
    with pytest.raises(ValueError, match=match):
        SVMDual(bank, labels)


def test_bad_bank():
    with pytest.raises(TypeError, match="bank"):
        SVMDual("kernels", [-1, 1])


@pytest.mark.parametrize(
    "w,match",
    [
        (np.array([0.5, 0.5]), "w must have length 3"),
        (np.array([0.5, -0.1, 0.6]), "non-negative"),
        (np.array([0.5, np.nan, 0.5]), "NaN"),
        (np.zeros(3), "all zero"),
    ],
)
def test_bad_weights(small, w, match):
    bank, y = small
    oracle = SVMDual(bank, y)
    with pytest.raises(ValueError, match=match):
        oracle(w)
    assert oracle.n_calls == 0


def test_bad_warm_start(small):
    bank, y = small
    oracle = SVMDual(bank, y, C=1.0)
    w = np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="warm_start must have length 10"):
        oracle(w, warm_start=np.zeros(9))
    with pytest.raises(ValueError, match="warm_start contains NaN"):
        oracle(w, warm_start=np.full(10, np.nan))
    with pytest.raises(ValueError, match="warm_start must lie in the box"):
        oracle(w, warm_start=np.full(10, 2.0))
    unbalanced = np.zeros(10)
    unbalanced[np.flatnonzero(y > 0)[0]] = 0.5
    with pytest.raises(ValueError, match="y'alpha = 0"):
        oracle(w, warm_start=unbalanced)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        oracle(w, warm_start=np.zeros(10))  # the cold start is a valid warm start


def test_dual_problem_describes_the_svm_dual():
    """``oracle.problem`` reproduces the answer's v = alpha*y and linear term 1'alpha."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((30, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(30) > 0, 1.0, -1.0)
    bank = KernelBank.from_specs(X, [rbf(1.0), rbf(3.0)])
    oracle = SVMDual(bank, y, C=5.0, tol=1e-6)
    ans = oracle(np.array([0.3, 0.7]))
    P = oracle.problem
    assert P.n_variables == 30 and P.total == 0.0
    np.testing.assert_allclose(P.v(ans.alpha), ans.alpha * y, rtol=0, atol=1e-15)
    assert P.linear_term(ans.alpha) == pytest.approx(ans.linear_term, rel=1e-12)
    assert np.all(ans.alpha <= P.upper) and abs(P.signs @ ans.alpha - P.total) < 1e-9
    with pytest.raises(ValueError, match="read-only"):
        P.upper[0] = 1.0
