"""Early returns of the jitted loops on a set stop flag (mklopt._interrupt).

Each loop looks at ``stop[0]`` between blocks of work. Stopped, what it
wrote must be whole: a prefix of the work, equal to the NumPy twin on that
part, with the rest left as it was (here NaN). The serial loops are run as
``py_func`` with a flag that turns on after ``k`` looks, so the stop lands
at every block boundary in turn; the parallel (``prange``) loops are
stopped by a thread while they run, and every row must then be either the
twin's or untouched. SMO stopped part-way must leave a feasible point with
its exact gradient.
"""

import threading
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose

from mklopt._jit import boost as jb
from mklopt._jit import combine as jc
from mklopt._jit import groups as jg
from mklopt._jit import logistic as jl
from mklopt._jit import readonly
from mklopt._jit import smo as js
from mklopt.kernels import rbf
from mklopt.kernels.functions import _Plan
from tests import _reference as ref


class StopAfter:
    """A stop flag for ``py_func`` runs: reads 0 the first ``k`` times, then 1."""

    def __init__(self, k):
        self.k = k
        self.reads = 0

    def __getitem__(self, i):
        self.reads += 1
        return 0 if self.reads <= self.k else 1


def _flag(value=0):
    return np.full(1, value, dtype=np.int64)


def _bank(rng, m=7, n=9):
    F = rng.standard_normal((m, n, 3))
    # read-only, as a storage passes its bank
    return readonly(np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F)))


def test_combine_kernels_stopped_holds_the_first_passes(rng):
    K = _bank(rng, m=7)
    w = np.array([1.0, 0.0, 0.5, 2.0, 0.25, 1.5, 0.75])
    act = np.flatnonzero(w)  # 6 active: one pass of four, then two singles
    sizes = [0, 4, 5, 6]  # kernels folded after 0, 1, 2, 3 passes
    for k, size in enumerate(sizes):
        out = jc.combine_kernels.py_func(K, w, np.full((9, 9), np.nan), StopAfter(k))
        w_done = np.zeros_like(w)
        w_done[act[:size]] = w[act[:size]]
        assert_allclose(out, ref.combine(K, w_done), rtol=1e-13, atol=1e-13)
    # the jitted loop: a set flag folds nothing, a clear one everything
    assert not np.any(jc.combine_kernels(K, w, np.full((9, 9), np.nan), _flag(1)))
    assert_allclose(jc.combine_kernels(K, w, np.empty((9, 9)), _flag()), ref.combine(K, w),
                    rtol=1e-13)


def test_row_loops_stopped_write_whole_rows_only(rng):
    K = _bank(rng, m=5)
    w = np.array([1.0, 0.0, 0.5, 2.0, 0.25])
    idx = np.array([4, 0, 8, 2], dtype=np.int64)
    want = ref.combine_rows(K, w, idx)
    gidx = np.array([0, 2, 3, 5, 6, 8], dtype=np.int64)
    ks = np.flatnonzero(w).astype(np.int64)
    view = ref.combine(K[ks][:, gidx][:, :, gidx], w[ks])
    local = np.array([5, 1, 3], dtype=np.int64)
    for k in range(5):
        got = jc.combine_rows.py_func(K, w, idx, np.full((4, 9), np.nan), StopAfter(k))
        done = min(k, 4)
        assert_allclose(got[:done], want[:done], rtol=1e-13)
        assert np.isnan(got[done:]).all()
        got = jc.view_rows.py_func(K, w[ks], ks, gidx, local, np.full((3, 6), np.nan),
                                   StopAfter(k))
        assert_allclose(got[: min(k, 3)], view[local][: min(k, 3)], rtol=1e-13)
        assert np.isnan(got[min(k, 3):]).all()
        got = jc.combine_view.py_func(K, w[ks], ks, gidx, np.full((6, 6), np.nan), StopAfter(k))
        assert_allclose(got[:k], view[:k], rtol=1e-13)
        assert np.isnan(got[k:]).all()
    assert np.isnan(jc.combine_rows(K, w, idx, np.full((4, 9), np.nan), _flag(1))).all()


def test_quad_forms_stopped_write_whole_entries_only(rng):
    K = _bank(rng, m=5)
    v = rng.standard_normal(9)
    S = np.array([0, 2, 3, 7], dtype=np.int64)
    ks = np.array([4, 1, 3], dtype=np.int64)
    want = ref.quad_forms(K, v, S, ks)
    for k in range(4):
        got = jc.quad_forms.py_func(K, v, S, ks, np.full(3, np.nan), StopAfter(k))
        assert_allclose(got[:k], want[:k], rtol=1e-12)
        assert np.isnan(got[k:]).all()
    assert np.isnan(jc.quad_forms(K, v, S, ks, np.full(3, np.nan), _flag(1))).all()


def _stop_soon(flag, after):
    t = threading.Timer(after, lambda: flag.__setitem__(0, 1))
    t.start()
    return t


def _plan(n_kernels, d):
    specs = [rbf(g) for g in np.logspace(-1, 1, n_kernels)]
    return specs, _Plan(specs, d)


def test_parallel_kernel_rows_stopped_are_whole_or_untouched(rng):
    # Long enough (about a second on two cores) for a stop at 30 ms to land inside.
    specs, plan = _plan(40, 3)
    A = readonly(rng.normal(size=(3000, 3)))  # the points, as mklopt passes them
    XT = np.array(A.T, order="C")
    m = len(specs)
    scales = np.ones(m)
    w = rng.random(m)
    groups = plan.groups_of(np.arange(m, dtype=np.int64))
    codes, tables = np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1, 1))
    # compiled (or loaded) first, on a set flag, so that the timer runs against the loop
    jg.combined_cross(A, XT, *plan.arrays(), w, groups, np.empty((3000, 3000)), _flag(1))
    jg.combined_sym(A, XT, *plan.arrays(), w, groups, codes, tables, np.empty((3000, 3000)),
                    True, _flag(1))
    out = np.full((3000, 3000), np.nan)
    flag = _flag()
    timer = _stop_soon(flag, 0.03)
    jg.combined_cross(A, XT, *plan.arrays(), w, groups, out, flag)
    timer.join()
    done = ~np.isnan(out).any(axis=1)
    assert np.all(np.isnan(out[~done]))  # a row is written whole or not at all
    assert 0 < done.sum() < 3000, "the stop landed outside the call; make the call longer"
    rows = np.flatnonzero(done)[:: max(1, done.sum() // 8)]
    assert_allclose(out[rows], ref.combined(specs, A[rows], A, w, scales), rtol=1e-12, atol=1e-12)
    # the symmetric pass: stopped, nothing is mirrored and upper-triangle rows are whole
    sym = np.full((3000, 3000), np.nan)
    flag = _flag()
    timer = _stop_soon(flag, 0.03)
    jg.combined_sym(A, XT, *plan.arrays(), w, groups, codes, tables, sym, True, flag)
    timer.join()
    upper_done = np.array([not np.isnan(sym[a, a:]).any() for a in range(3000)])
    assert 0 < upper_done.sum() < 3000
    assert all(np.isnan(sym[a, a:]).all() for a in np.flatnonzero(~upper_done))
    assert np.isnan(np.tril(sym, -1)[np.tril_indices(3000, -1)]).all()  # not mirrored
    a = np.flatnonzero(upper_done)[0]
    assert_allclose(sym[a, a:], ref.combined(specs, A[a:a + 1], A[a:], w, scales)[0],
                    rtol=1e-12, atol=1e-12)


def test_parallel_kernel_routines_on_a_set_flag_write_nothing(rng):
    specs, plan = _plan(3, 2)
    X = readonly(rng.normal(size=(20, 2)))
    XT = np.array(X.T, order="C")
    m = len(specs)
    ks = np.arange(m, dtype=np.int64)
    g = plan.groups_of(ks)
    slot = ks.copy()
    one = _flag(1)
    out = jg.kernel_sym(X, XT, *plan.arrays(), np.ones(m), slot, g, np.full((m, 20, 20), np.nan),
                        one)
    assert np.isnan(out).all()
    out = jg.kernel_sym_serial(X, XT, *plan.arrays(), np.ones(m), slot, g,
                               np.full((m, 20, 20), np.nan), one)
    assert np.isnan(out).all()
    out = jg.kernel_cross(X, XT, *plan.arrays(), np.ones(m), slot, g,
                          np.full((m, 20, 20), np.nan), one)
    assert np.isnan(out).all()
    v = rng.normal(size=20)
    args = (X, XT, v, *plan.arrays(), np.ones(m), slot, g)
    assert np.isnan(jg.quad_forms_by_group(*args, np.full(m, np.nan), one)).all()
    assert np.isnan(jg.quad_forms_by_rows(*args, 3, np.full(m, np.nan), one)).all()
    # and with the flag clear they give the twin's forms
    want = ref.quad_forms_from_specs(specs, X, np.ones(m), v, np.arange(20))
    assert_allclose(jg.quad_forms_by_rows(*args, 3, np.zeros(m), _flag()), want, rtol=1e-10)


def _svm(rng, n):
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 0.02)
    return np.ascontiguousarray(K), y


def test_smo_stopped_mid_pass_is_feasible_with_its_exact_gradient(rng):
    n, C = 1500, 100.0
    K, y = _svm(rng, n)
    # read-only, as a fit's problem holds them
    rows, y, upper = readonly(np.arange(n, dtype=np.int64)), readonly(y), readonly(np.full(n, C))
    full_a, full_g = np.zeros(n), np.full(n, -1.0)
    t0 = time.perf_counter()
    full = js.smo_solve(K, rows, y, upper, full_a, full_g, 1e-10, 10**8, True, _flag())
    seconds = time.perf_counter() - t0
    a, g = np.zeros(n), np.full(n, -1.0)
    flag = _flag()
    timer = _stop_soon(flag, seconds / 20)
    it = js.smo_solve(K, rows, y, upper, a, g, 1e-10, 10**8, True, flag)
    timer.join()
    assert it < full, "the stop landed after the solve; make the problem harder"
    # feasible: the box and y'a = 0
    assert a.min() >= 0.0 and a.max() <= C
    assert abs(y @ a) <= 1e-9 * C * n
    # the gradient is the NumPy twin's Q a - 1 at the returned point
    Q = y[:, None] * y[None, :] * K
    assert_allclose(g, Q @ a - 1.0, rtol=1e-9, atol=1e-9 * C)
    # a set flag: no step at all
    a0, g0 = np.zeros(n), np.full(n, -1.0)
    assert js.smo_solve(K, rows, y, upper, a0, g0, 1e-10, 10**8, True, _flag(1)) == 0
    assert not a0.any() and np.all(g0 == -1.0)


def test_logistic_solve_stopped_is_feasible_with_exact_f(rng):
    n, C = 40, 2.0
    X = rng.normal(size=(n, 3))
    K = np.ascontiguousarray(X @ X.T + 0.1)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    for k in range(3):
        a = np.full(n, 1e-3 * C)
        f = jl.logistic_init_f(K, y, a, np.empty(n))
        it, gap, primal, b = jl.logistic_solve.py_func(K, y, C, a, f, False, 1e-14, 10**6, 5,
                                                      StopAfter(k))
        assert it <= 5 * k
        assert np.all((a > 0) & (a < C))
        assert_allclose(f, K @ (a * y), rtol=1e-12, atol=1e-12)
        assert gap == pytest.approx(ref.logistic_gap(y, f, a, C, b)[0], rel=1e-8, abs=1e-12)


def test_boost_round_on_a_set_flag_starts_no_svm(rng):
    n = 30
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    d = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-d / w) for w in (0.5, 2.0, 8.0)])
    uniq = np.arange(n, dtype=np.int64)
    r = 3
    out = (np.full((r, n), np.nan), np.full(r, np.nan), np.full((r, n), np.nan),
           np.zeros(r, dtype=np.int64), np.full(r, np.nan))
    args = (K, np.arange(r, dtype=np.int64), np.ones(r), uniq, uniq, y, np.full(n, 1.0), 1e-6,
            10**5)
    assert jb.weak_svm_round(*args, *out, _flag(1)) == 0
    assert np.all(out[3] == -1) and np.isnan(out[0]).all() and np.isnan(out[2]).all()
    out[3][:] = 0
    jb.weak_svm_round_parallel(*args, *out, np.arange(r, dtype=np.int64), _flag(1))
    assert np.all(out[3] == -1) and np.isnan(out[0]).all()
    assert jb.weak_svm_round(*args, *out, _flag()) == r
    assert np.all(out[3] > 0) and not np.isnan(out[2]).any()
