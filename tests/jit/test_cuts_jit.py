"""The cutting-plane model's jitted step arithmetic against NumPy twins."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt._jit.cuts import (
    check_cut_lp,
    kkt_grow,
    level_socp,
    model_value,
    price_kernels,
    renormalise,
    scatter_normalised,
)
from tests import _reference as ref


@st.composite
def cut_sets(draw, max_m=12, max_cuts=15):
    """Cuts ``(Q, s)``, a working set ``W``, a point ``w0`` and a level, from one seed.

    Some kernels have no weight in any cut (a zero column) and some cuts are
    zero on the working set, which the scales have to treat.
    """
    m = draw(st.integers(1, max_m))
    J = draw(st.integers(1, max_cuts))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Q = rng.gamma(1.0, 2.0, size=(J, m))
    Q[:, rng.random(m) < 0.2] = 0.0
    s = rng.normal(5.0, 2.0, size=J)
    W = np.sort(rng.choice(m, size=draw(st.integers(1, m)), replace=False)).astype(np.int64)
    w0 = rng.dirichlet(np.ones(m))
    level = float(rng.normal(3.0, 2.0))
    return Q, s, W, w0, level


def _mask(W, m):
    """The kernels ``W`` as a boolean mask over ``m`` kernels."""
    mask = np.zeros(m, dtype=bool)
    mask[W] = True
    return mask


def _sparse_multipliers(seed, size):
    """Cut multipliers ``>= 0``, about 30 % of them zero (from ``seed``)."""
    rng = np.random.default_rng(seed)
    return rng.exponential(1.0, size=size) * (rng.random(size) < 0.7)


def _level_socp_numpy(Q, s, W, w0, level):
    """The NumPy construction ``CutModel._level_socp`` used before the jitted one."""
    m, J = W.size, s.size
    QW = Q[:, W].T
    scale = 0.5 * np.abs(QW).max(axis=0)
    scale[scale <= 0.0] = 1.0
    nnz_col = J + 2
    nnz = m * nnz_col + 1
    indptr = np.arange(0, (m + 1) * nnz_col + 1, nnz_col, dtype=np.int64)
    indptr[m + 1] = nnz
    indices = np.empty(nnz, dtype=np.int64)
    data = np.full(nnz, -1.0)
    blk_i = indices[:-1].reshape(m, nnz_col)
    k = np.arange(m)
    blk_i[:, 0] = k
    blk_i[:, 1 : J + 1] = np.arange(m, m + J)
    blk_i[:, J + 1] = k + (m + J + 1)
    indices[-1] = m + J
    np.multiply(QW, -0.5 / scale, out=data[:-1].reshape(m, nnz_col)[:, 1 : J + 1])
    h = np.zeros(m + J + 1 + m)
    h[m : m + J] = (level - s) / scale
    h[m + J + 1 :] = -w0[W]
    return data, indices, indptr, h, scale


@settings(max_examples=60, deadline=None)
@given(cut_sets())
def test_level_socp_equals_its_numpy_twin_bit_for_bit(problem):
    Q, s, W, w0, level = problem
    want = _level_socp_numpy(Q, s, W, w0, level)
    for fn in (level_socp, level_socp.py_func):
        got = fn(Q, s, W, w0, level)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    # and G is the matrix it describes: -I, the scaled cuts, the cone head and -I
    data, indices, indptr, h, scale = got
    import scipy.sparse as sp

    m, J = W.size, s.size
    G = sp.csc_matrix((data, indices, indptr), shape=(2 * m + J + 1, m + 1)).toarray()
    np.testing.assert_array_equal(G[:m, :m], -np.eye(m))
    np.testing.assert_allclose(G[m : m + J, :m], -0.5 * Q[:, W] / scale[:, None], rtol=1e-15)
    assert G[m + J, m] == -1.0
    np.testing.assert_array_equal(G[m + J + 1 :, :m], -np.eye(m))


@settings(max_examples=60, deadline=None)
@given(cut_sets())
def test_model_value_matches_numpy(problem):
    Q, s, _, w0, _ = problem
    want = float(np.max(s - 0.5 * (Q @ w0)))
    for fn in (model_value, model_value.py_func):
        assert fn(Q, s, w0) == pytest.approx(want, rel=1e-13, abs=1e-13)
    assert model_value(Q[:0], s[:0], w0) == -np.inf


@settings(max_examples=60, deadline=None)
@given(cut_sets(), st.integers(0, 2**32 - 1))
def test_kkt_grow_marks_the_kkt_points_new_kernels(problem, seed):
    Q, s, W, w0, _ = problem
    mu = _sparse_multipliers(seed, s.size)
    in_w = _mask(W, w0.size)
    kkt = ref.project_simplex(w0 + 0.5 * (Q.T @ mu))
    want = (kkt > 1e-12) & ~in_w
    for fn in (kkt_grow, kkt_grow.py_func):
        mask = in_w.copy()
        added = fn(Q, mu, w0, mask)
        assert added == want.sum()
        np.testing.assert_array_equal(mask, in_w | want)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.integers(0, 2**32 - 1))
def test_scatter_normalised_clears_near_zeros_and_sums_to_one(m, seed):
    rng = np.random.default_rng(seed)
    W = np.sort(rng.choice(m, size=rng.integers(1, m + 1), replace=False)).astype(np.int64)
    x = rng.random(W.size)
    x[rng.random(W.size) < 0.4] *= 1e-12  # an interior-point solver's zeros
    cleared = np.where(x > 1e-9 * max(float(x.max()), 1e-300), x, 0.0)
    want = np.zeros(m)
    want[W] = cleared
    want /= want.sum()
    for fn in (scatter_normalised, scatter_normalised.py_func):
        got = fn(x, W, m)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
        np.testing.assert_array_equal(got == 0, want == 0)
    np.testing.assert_array_equal(scatter_normalised(np.zeros(W.size), W, m), np.zeros(m))


def _check_numpy(x, row_dual, open_, Q, s, q_max, s_max, value, tol):
    """The NumPy check ``CutLP.solve`` used before the jitted one."""
    m = open_.size
    w = x[:m] * open_
    t = float(x[m])
    lam = -row_dual
    w_sum = float(w.sum())
    if not np.isfinite(w_sum + float(lam.sum()) + t + value):
        return False
    w_min = float(w.min())
    w_abs = w_sum if w_min >= 0.0 else float(np.abs(w).sum())
    tol_ = tol * (1.0 + max(0.5 * q_max, 1.0) * (w_abs + abs(t)) + s_max)
    cut = s - 0.5 * (Q @ w)
    return bool(w_min >= -tol_ and abs(w_sum - 1.0) <= tol_ and float(cut.max()) <= t + tol_
                and float(lam.min()) >= -tol_ and abs(t - value) <= tol * (1.0 + abs(value)))


def _an_lp_answer(rng, m, J):
    """A feasible answer ``(x, row_dual, open, Q, s, value)`` of the cutting-plane LP."""
    Q = rng.gamma(1.0, 2.0, size=(J, m))
    open_ = rng.random(m) < 0.7
    open_[rng.integers(m)] = True
    w = np.where(open_, rng.random(m), 0.0)
    w /= w.sum()
    s = rng.normal(5.0, 1.0, size=J)
    t = float(np.max(s - 0.5 * (Q @ w)))
    x = np.append(np.where(open_, w, rng.random(m) * 0), t)
    row_dual = -rng.exponential(1.0, size=J)
    return x, row_dual, open_, Q, s, t


@pytest.mark.parametrize("defect", ["none", "nan", "negative", "sum", "cut", "dual", "value",
                                    "closed"])
@pytest.mark.parametrize("seed", range(5))
def test_check_cut_lp_accepts_and_rejects_as_its_numpy_twin(defect, seed):
    rng = np.random.default_rng(seed)
    m, J = int(rng.integers(1, 15)), int(rng.integers(1, 20))
    x, row_dual, open_, Q, s, value = _an_lp_answer(rng, m, J)
    k = int(np.flatnonzero(open_)[0])
    if defect == "nan":
        x[k] = np.nan
    elif defect == "negative":  # its weight moved to another open kernel, if any
        others = np.flatnonzero(open_)[1:]
        if others.size:
            x[others[0]] += x[k] + 1e-3
        x[k] = -1e-3
    elif defect == "sum":
        x[k] += 1e-3
    elif defect == "cut":
        x[m] -= 1e-3
        value -= 1e-3
    elif defect == "dual":
        row_dual[0] = 1e-3
    elif defect == "value":
        value += 1e-3
    elif defect == "closed":  # a closed kernel's value is ignored: it sits at its bound 0
        if open_.all():
            open_[k] = False
            x[:m][open_] /= x[:m][open_].sum() if x[:m][open_].sum() > 0 else 1.0
        x[np.flatnonzero(~open_)[0]] = 123.0
    q_max = float(np.abs(Q[:, open_]).max()) if open_.any() else 0.0
    s_max = float(np.abs(s).max())
    want = _check_numpy(x.copy(), row_dual, open_, Q, s, q_max, s_max, value, 1e-9)
    for fn in (check_cut_lp, check_cut_lp.py_func):
        ok, w, t, lam = fn(x.copy(), row_dual, open_, Q, s, q_max, s_max, value, 1e-9)
        assert ok == want
        assert t == x[m]
        np.testing.assert_array_equal(w, np.where(open_, x[:m], 0.0))
        np.testing.assert_array_equal(lam, np.maximum(-row_dual, 0.0))
    if defect == "none":
        assert want
    elif defect not in ("closed",):
        assert not want


@pytest.mark.parametrize("fn", [kkt_grow, kkt_grow.py_func])
def test_kkt_grow_threshold_is_1e_12(fn):
    # With no cut active the KKT point is w0 itself (already on the simplex).
    Q, mu = np.ones((1, 3)), np.zeros(1)
    for small, joins in [(5e-11, True), (5e-13, False)]:
        w0 = np.array([1.0 - small, small, 0.0])
        in_w = np.array([True, False, False])
        assert fn(Q, mu, w0, in_w) == int(joins)
        np.testing.assert_array_equal(in_w, [True, joins, False])


@pytest.mark.parametrize("fn", [scatter_normalised, scatter_normalised.py_func])
def test_scatter_normalised_threshold_is_1e_9_of_the_largest(fn):
    x = np.array([2.0, 2e-8, 2e-10])
    got = fn(x, np.array([3, 0, 1], dtype=np.int64), 4)
    np.testing.assert_array_equal(got == 0, [False, True, True, False])
    np.testing.assert_allclose(got[[3, 0]], np.array([2.0, 2e-8]) / (2.0 + 2e-8), rtol=1e-15)


@settings(max_examples=60, deadline=None)
@given(cut_sets(), st.integers(0, 2**32 - 1))
def test_price_kernels_matches_numpy(problem, seed):
    Q, s, W, _, _ = problem
    lam = _sparse_multipliers(seed, s.size)
    in_w = _mask(W, Q.shape[1])
    for fn in (price_kernels, price_kernels.py_func):
        total, d, u, viol = fn(Q, s, lam, in_w)
        assert total == pytest.approx(lam.sum(), rel=1e-14)
        if not lam.sum() > 0:
            assert np.isnan(d) and viol.size == 0
            continue
        lam_n = lam / lam.sum()
        u_ref = Q.T @ lam_n
        np.testing.assert_allclose(u, u_ref, rtol=1e-13, atol=1e-300)
        assert d == pytest.approx(lam_n @ s - 0.5 * u_ref.max(), rel=1e-12, abs=1e-12)
        thr = u_ref[W].max()
        want = np.flatnonzero((u_ref > thr + 1e-10 * max(1.0, abs(thr))) & ~in_w)
        np.testing.assert_array_equal(viol, want)


@pytest.mark.parametrize("fn", [price_kernels, price_kernels.py_func])
def test_price_kernels_margin_is_1e_10_relative(fn):
    # u = Q'lam = (1, 1 + 5e-11, 1 + 5e-10) with kernel 0 in W: only kernel 2 prices in
    Q = np.array([[1.0, 1.0 + 5e-11, 1.0 + 5e-10]])
    total, d, u, viol = fn(Q, np.array([2.0]), np.array([3.0]), np.array([True, False, False]))
    assert total == 3.0
    np.testing.assert_array_equal(viol, [2])
    assert d == pytest.approx(2.0 - 0.5 * (1.0 + 5e-10), rel=1e-15)


@pytest.mark.parametrize("fn", [renormalise, renormalise.py_func])
def test_renormalise_only_near_simplex_points(fn):
    near = 1e-9 * 3
    x = np.array([0.5, 0.0, 0.5 + 1e-10])
    on, y = fn(x, near)
    assert on and y[1] == 0.0
    np.testing.assert_allclose(y, x / x.sum(), rtol=1e-15)
    assert abs(y.sum() - 1.0) <= 1e-15
    for bad in ([0.5, -1e-12, 0.5], [0.5, 0.0, 0.5 + 1e-8], [np.nan, 0.5, 0.5],
                [np.inf, 0.0, 0.0], [0.0, 0.0, 0.0]):
        on, y = fn(np.array(bad), near)
        assert not on
        np.testing.assert_array_equal(y, np.array(bad))
