"""The epsilon-SVR and one-class oracles: libsvm agreement, storages, warm starts, errors."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn import svm

from mklopt import KernelBank, MKLOneClass
from mklopt.kernels import linear, poly, rbf
from mklopt.oracles import OneClassDual, SVRDual
from tests._strategies import log_uniform, points, reals, simplex_points


def data(seed, n, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, t


def kernels(X):
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = [np.exp(-0.5 * d2), np.exp(-0.05 * d2), X @ X.T / X.shape[1]]
    # unit mean diagonal; a zero kernel (all points at the origin) stays zero
    return np.array([k / np.trace(k) * len(X) if np.trace(k) > 0 else k for k in K])


def oracles(K, t, tol=1e-3):
    return [SVRDual(K, t, C=2.0, epsilon=0.1, tol=tol), OneClassDual(K, nu=0.3, tol=tol)]


def libsvm_answer(oracle, Kw):
    """(alpha, bias, objective) of scikit-learn at the combined kernel, in our scaling."""
    n = Kw.shape[0]
    a = np.zeros(n)
    if isinstance(oracle, SVRDual):
        ref = svm.SVR(kernel="precomputed", C=oracle.C, epsilon=oracle.epsilon, tol=1e-9)
        ref.fit(Kw, oracle.y)
        a[ref.support_] = ref.dual_coef_[0]
        value = oracle.y @ a - oracle.epsilon * np.abs(a).sum() - 0.5 * a @ Kw @ a
        return a, float(ref.intercept_[0]), value
    ref = svm.OneClassSVM(kernel="precomputed", nu=oracle.nu, tol=1e-9).fit(Kw)
    scale = oracle.nu * n  # libsvm: bounds 1, sum nu n
    a[ref.support_] = ref.dual_coef_[0] / scale
    return a, float(ref.intercept_[0]) / scale, -0.5 * a @ Kw @ a


def _rho_interval(oracle, Kw, a):
    """``(lb, ub, n_free)``: the offsets ``rho`` that satisfy KKT at ``a`` (libsvm's rule).

    ``G = Q a + p`` with ``Q_tu = s_t s_u Kw[rows_t, rows_u]``; a variable at
    its upper bound bounds ``s_t G_t`` on one side, one at zero on the other.
    """
    P = oracle.problem
    s, U = P.signs, P.upper
    G = s * (Kw[np.ix_(P.rows, P.rows)] @ (s * a)) + P.linear
    yg = s * G
    up, lo = a >= U * (1 - 1e-9), a <= 1e-12 * U
    upper_side = (up & (s < 0)) | (lo & (s > 0))
    lower_side = (up & (s > 0)) | (lo & (s < 0))
    ub = yg[upper_side].min() if upper_side.any() else np.inf
    lb = yg[lower_side].max() if lower_side.any() else -np.inf
    return lb, ub, int(np.sum(~up & ~lo))


# ------------------------------------------------------------------ libsvm
@st.composite
def regression_data(draw):
    """Points with duplicate rows and a constant feature reachable, and targets
    (a duplicated point may carry another target)."""
    X = draw(points(draw(st.integers(6, 40)), 3))
    t = draw(arrays(np.float64, X.shape[0], elements=reals(-2.0, 2.0).map(lambda v: round(v, 2))))
    return X, t


_NO_FREE = np.array([[0, 0, 0], [0, 0, 3], [0, 0, -1], [0, 0, 0.5], [0, 0, 1], [0, 1, 0],
                     [0, 0, 3], [0, 0, 0], [0, 0, 3], [0, 0, -1.0]])


@settings(max_examples=25, deadline=None)
@given(data_=regression_data(), w=simplex_points(3), C=log_uniform(0.1, 10.0),
       eps=st.one_of(st.just(0.0), st.floats(0.0, 0.5)), nu=st.floats(0.05, 0.95))
# one-class, every variable at a bound: rho is an interval, libsvm takes its end
@example(data_=(_NO_FREE, np.zeros(10)), w=np.array([1.0, 0.0, 0.0]), C=1.0, eps=0.0, nu=0.8)
def test_agree_with_libsvm_at_fixed_weights(data_, w, C, eps, nu):
    X, t = data_
    n = t.size
    K = kernels(X) + 0.05 * np.eye(n)  # strictly PD (w sums to 1): unique dual solutions
    Kw = np.tensordot(w, K, 1)
    for oracle in (SVRDual(K, t, C=C, epsilon=eps, tol=1e-8), OneClassDual(K, nu=nu, tol=1e-8)):
        ans = oracle(w)
        a, bias, value = libsvm_answer(oracle, Kw)
        scale = oracle.C if isinstance(oracle, SVRDual) else oracle.problem.upper[0]
        np.testing.assert_allclose(ans.alpha, a, atol=1e-4 * scale)
        # libsvm keeps Q in float32: values agree to ~1e-6 relative
        assert ans.value == pytest.approx(value, rel=1e-5, abs=1e-7 * scale * n)
        lb, ub, n_free = _rho_interval(oracle, Kw, oracle.to_variables(ans.alpha))
        slack = 1e-3 * max(1.0, abs(bias))
        if n_free:  # rho is the free variables' s_t G_t: one value
            assert ans.bias == pytest.approx(bias, abs=slack)
        else:  # no free variable: any rho in [lb, ub] satisfies KKT (ours the midpoint)
            for b in (ans.bias, bias):
                assert lb - slack <= -b <= ub + slack
        # the value is the linear term minus half of w'q, and q_k = v'K_k v
        v = ans.alpha
        np.testing.assert_allclose(ans.q, [v @ Kk @ v for Kk in K], rtol=1e-9, atol=1e-12)
        assert ans.value == pytest.approx(ans.linear_term - 0.5 * w @ ans.q, rel=1e-12)


def test_svr_linear_term_and_feasibility():
    X, t = data(1, 30)
    o = SVRDual(kernels(X), t, C=1.5, epsilon=0.2, tol=1e-6)
    ans = o(np.ones(3) / 3)
    beta = ans.alpha
    assert abs(beta.sum()) < 1e-9 and np.all(np.abs(beta) <= 1.5 + 1e-12)
    assert ans.linear_term == pytest.approx(t @ beta - 0.2 * np.abs(beta).sum(), abs=1e-9)
    np.testing.assert_array_equal(ans.support, np.flatnonzero(beta))


def test_one_class_uniform_point_when_nu_is_one():
    X, _ = data(2, 12)
    ans = OneClassDual(kernels(X), nu=1.0)(np.ones(3) / 3)
    np.testing.assert_allclose(ans.alpha, np.full(12, 1 / 12), atol=1e-15)
    assert np.isfinite(ans.bias)


# ------------------------------------------------------- every storage, paths
@pytest.mark.parametrize("storage", ["on_the_fly", "feature_map"])
def test_every_storage_gives_the_dense_answer(storage):
    X, t = data(3, 50)
    specs = [linear(), poly(2), linear([0])] if storage == "feature_map" else [rbf(1.0), poly(2)]
    dense = KernelBank.from_specs(X, specs, storage="dense")
    other = KernelBank.from_specs(X, specs, storage=storage, cache_size=0.01)
    w = np.linspace(1.0, 2.0, len(specs))
    for make in (lambda b: SVRDual(b, t, C=3.0, epsilon=0.05, tol=1e-9),
                 lambda b: OneClassDual(b, nu=0.2, tol=1e-9)):
        a, b = make(dense)(w), make(other)(w)
        assert b.value == pytest.approx(a.value, rel=1e-7, abs=1e-10)
        np.testing.assert_allclose(b.q, a.q, rtol=1e-6, atol=1e-10)
        assert b.bias == pytest.approx(a.bias, abs=1e-5)


def test_row_cached_blocks_match_whole_matrix():
    # a bank too large for the whole-matrix path runs SMO by row blocks
    X, t = data(4, 300)
    specs = [rbf(0.5), rbf(2.0)]
    w = np.array([0.3, 0.7])
    whole = KernelBank.from_specs(X, specs, storage="dense")
    rows = KernelBank.from_specs(X, specs, storage="on_the_fly", cache_size=0.2)
    for make in (lambda b: SVRDual(b, t, C=1.0, epsilon=0.1, tol=1e-8),
                 lambda b: OneClassDual(b, nu=0.1, tol=1e-8)):
        o = make(rows)
        a, b = make(whole)(w), o(w)
        assert o.last_stats is not None
        assert b.value == pytest.approx(a.value, rel=1e-6)


@pytest.mark.parametrize("which", [0, 1])
def test_warm_start_value_only_and_kernel_subsets(which):
    X, t = data(5, 40)
    K = kernels(X)
    o = oracles(K, t, tol=1e-7)[which]
    w1, w2 = np.array([0.5, 0.5, 0.0]), np.array([0.2, 0.8, 0.0])
    a1 = o(w1)
    cold = o(w2)
    warm = o(w2, warm_start=a1.alpha)
    assert warm.value == pytest.approx(cold.value, rel=1e-5)
    # re-solving from the optimum takes few iterations
    again = o(w2, warm_start=warm.alpha)
    assert again.n_solver_iter <= max(5, cold.n_solver_iter // 4)
    only = o(w2, warm_start=a1.alpha, need_q=False)
    assert only.q is None and only.grad is None
    assert only.value == pytest.approx(warm.value, rel=1e-9, abs=1e-12)
    sub = o(w2, kernels=np.array([1, 0]))
    np.testing.assert_allclose(sub.q, cold.q[[1, 0]], rtol=1e-6, atol=1e-12)
    with pytest.raises(ValueError, match="kernels must include"):
        o(np.array([0.5, 0.0, 0.5]), kernels=np.array([0, 1]))


# -------------------------------------------------------------- bad input
def test_bad_input_names_the_argument():
    X, t = data(6, 10)
    K = kernels(X)
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        SVRDual(K, t, epsilon=-0.1)
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        SVRDual(K, np.r_[t[:-1], np.nan])
    with pytest.raises(ValueError, match="y must have length 10"):
        SVRDual(K, t[:-1])
    with pytest.raises(ValueError, match="C must be > 0"):
        SVRDual(K, t, C=0.0)
    for nu in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match=r"nu must lie in \(0, 1\]"):
            OneClassDual(K, nu=nu)
    with pytest.raises(TypeError, match="one-class learning takes no labels"):
        OneClassDual(K, t)
    with pytest.raises(TypeError, match="one-class learning takes no labels"):
        MKLOneClass(kernels=[rbf(1.0)], nu=t).fit(X)
    with pytest.raises(ValueError, match="warm_start must lie in the box"):
        SVRDual(K, t, C=1.0)(np.ones(3), warm_start=np.r_[5.0, -5.0, np.zeros(8)])
    with pytest.raises(ValueError, match="equality constraint"):
        OneClassDual(K, nu=0.5)(np.ones(3), warm_start=np.full(10, 0.05))


def test_the_new_oracle_page_runs_and_agrees_with_libsvm(capsys):
    # docs/new_oracle.md: a three-line cost-sensitive SVM oracle under Level,
    # checked against SVC with sample weights; its code blocks run as shown.
    import re
    from pathlib import Path

    src = (Path(__file__).parents[2] / "docs" / "new_oracle.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", src, re.S)
    assert len(blocks) == 2
    exec(compile("\n".join(blocks), "new_oracle.md", "exec"), {})
    out = capsys.readouterr().out.split()
    assert out[0] == "True" and out[-1] == "True"
