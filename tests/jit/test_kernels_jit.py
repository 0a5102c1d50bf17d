"""Jitted kernel and combination primitives against their NumPy twins.

``mklopt._jit.groups`` evaluates kernels from specs over a columnar plan of
feature groups (the dense build, on-the-fly rows and quadratic forms, and
prediction all go through it), summing over features directly;
``mklopt._jit.gram`` does the same for wide groups from one BLAS product
per block; ``mklopt._jit.combine`` works on stored matrices. Each routine is checked against ``tests/_reference.py`` on specs
and points that hypothesis draws, through the compiled and the pure-Python
bodies, and the parallel routines on one thread against two.
"""

import ast
import pathlib

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose, assert_array_equal

from mklopt._jit import combine as jc
from mklopt._jit import gram as jgr
from mklopt._jit import groups as jg
from mklopt._jit import readonly
from mklopt.kernels import linear, poly, rbf
from mklopt.kernels.functions import _Plan
from tests import _reference as ref

#: A stop flag that is never set (see mklopt._interrupt).
GO = np.zeros(1, dtype=np.int64)

#: ``combined_sym``'s coded-group arguments when there are none.
_NONE = (np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1, 1)))

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def specs_and_points(draw, max_d=4, max_n=9):
    """Specs on random feature subsets (shared and distinct), and two point sets."""
    d = draw(st.integers(1, max_d))
    feats = st.one_of(
        st.none(),
        st.lists(st.integers(0, d - 1), min_size=1, max_size=d, unique=True),
    )
    one = st.one_of(
        st.builds(rbf, st.floats(0.2, 4.0), feats),
        st.builds(poly, st.integers(1, 3), feats),
        st.builds(linear, feats),
    )
    specs = draw(st.lists(one, min_size=1, max_size=6))
    A = draw(arrays(np.float64, (draw(st.integers(1, max_n)), d), elements=finite))
    B = draw(arrays(np.float64, (draw(st.integers(1, max_n)), d), elements=finite))
    if draw(st.booleans()):
        B[: min(len(A), len(B))] = A[: min(len(A), len(B))]  # shared points: zero distances
    scales = draw(arrays(np.float64, len(specs), elements=st.floats(0.5, 4.0)))
    # read-only, as mklopt passes the points to every group routine
    return specs, readonly(A), readonly(B), scales


def _slots(m, kernels):
    slot = np.full(m, -1, dtype=np.int64)
    slot[kernels] = np.arange(len(kernels))
    return slot


# ------------------------------------------------------------------ exp
@settings(max_examples=200)
@given(arrays(np.float64, st.integers(1, 40), elements=st.floats(-707.9, 5.0)),
       st.integers(0, 3))
def test_exp_into_is_within_two_ulp_of_libm(x, lo):
    lo = min(lo, x.size)
    out = np.full(x.size, -1.0)
    jg.exp_into(x, out, np.empty(x.size), lo, x.size)
    want = np.exp(x[lo:])
    assert np.all(np.abs(out[lo:] - want) <= 2 * np.spacing(want))
    assert np.all(out[:lo] == -1.0)  # outside [lo, hi) nothing is touched


def test_exp_into_edges():
    x = np.array([0.0, -0.0, -1e-300, -708.0, -708.5, -745.0, -1e6, 709.0, 800.0])
    out = jg.exp_into(x, x.copy(), np.empty(x.size), 0, x.size)
    assert out[0] == 1.0 and out[1] == 1.0 and out[2] == 1.0  # unit diagonals stay exact
    assert out[3] == pytest.approx(np.exp(-708.0), rel=1e-15)
    assert np.all(out[4:7] == 0.0)  # flushed below e^-708
    assert out[7] == pytest.approx(np.exp(709.0), rel=1e-15) and out[8] == out[7]
    py = _py(jg.exp_into)(x[:4].copy(), np.empty(4), np.empty(4), 0, 4)
    assert_allclose(py, out[:4], rtol=1e-15)
    # In place (out is x), as the kernel routines call it: the same answers.
    inplace = x.copy()
    jg.exp_into(inplace, inplace, np.empty(x.size), 0, x.size)
    assert_array_equal(inplace, out)


def test_gaussians_derived_by_squaring_match_exp():
    """A width grid 2^e: values derived from wider kernels stay within the documented bound."""
    d2 = np.concatenate([np.linspace(0.0, 3.0, 200), np.geomspace(1e-3, 3e5, 300)])
    L = d2.size
    e, scr, chain = np.empty(L), np.empty(2 * L), np.zeros(2)  # scr: two work vectors
    sigmas = 2.0 ** np.arange(6, -4, -1)  # increasing gamma, the plan's order
    for s in sigmas:
        jg._kernel_chunk(jg.GAUSSIAN, s, 0.0, d2, d2, L, e, scr, chain)
        gamma = 0.5 / s**2
        want = np.exp(-gamma * d2)
        want[-gamma * d2 < -708.0] = 0.0
        big = want > 1e-300
        assert_allclose(e[big], want[big], rtol=1e-12, atol=0)
        assert np.all(np.abs(e[~big]) <= 1e-300) and np.all(e >= 0.0)
    # exp was computed once per factor 1024 of gamma: at sigma = 64 and again
    # at sigma = 1 (gamma 4096 times larger), the last base
    assert chain[1] == 0.5


# ------------------------------------------------------------ group routines
@given(specs_and_points())
def test_kernel_cross_and_sym_match_reference(data):
    specs, A, B, scales = data
    plan = _Plan(specs, A.shape[1])
    m = len(specs)
    ks = np.arange(m, dtype=np.int64)
    groups = plan.groups_of(ks)
    out = jg.kernel_cross(A, np.array(B.T, order="C"), *plan.arrays(), 1.0 / scales,
                          _slots(m, ks), groups, np.empty((m, len(A), len(B))), GO)
    assert_allclose(out, ref.kernel_matrices(specs, A, B, scales), rtol=1e-12, atol=1e-12)
    sym = jg.kernel_sym(A, np.array(A.T, order="C"), *plan.arrays(), 1.0 / scales,
                        _slots(m, ks), groups, np.empty((m, len(A), len(A))), GO)
    assert_array_equal(sym, np.transpose(sym, (0, 2, 1)))  # exactly symmetric
    # The one-thread twin (small banks) gives the same bits.
    serial = jg.kernel_sym_serial(A, np.array(A.T, order="C"), *plan.arrays(), 1.0 / scales,
                                  _slots(m, ks), groups, np.empty_like(sym), GO)
    assert_array_equal(serial, sym)
    # The general routine gives the same bits on the same points.
    again = jg.kernel_cross(A, np.array(A.T, order="C"), *plan.arrays(), 1.0 / scales,
                            _slots(m, ks), groups, np.empty_like(sym), GO)
    assert_array_equal(sym, again)


@given(specs_and_points(), st.data())
def test_combined_cross_and_diag_match_reference(data, draw):
    specs, A, B, scales = data
    m = len(specs)
    w = draw.draw(arrays(np.float64, m, elements=st.sampled_from([0.0, 0.3, 1.0, 2.5])))
    plan = _Plan(specs, A.shape[1])
    wk = w / scales
    groups = plan.groups_of(np.flatnonzero(wk))
    out = jg.combined_cross(A, np.array(B.T, order="C"), *plan.arrays(), wk, groups,
                            np.empty((len(A), len(B))), GO)
    assert_allclose(out, ref.combined(specs, A, B, w, scales), rtol=1e-12, atol=1e-12)
    diag = jg.combined_diag(A, *plan.arrays(), wk, groups, np.empty(len(A)))
    assert_allclose(diag, np.diag(ref.combined(specs, A, A, w, scales)), rtol=1e-12, atol=1e-12)


@given(specs_and_points())
def test_raw_traces_match_reference(data):
    specs, A, _, _ = data
    plan = _Plan(specs, A.shape[1])
    got = jg.raw_traces(A, *plan.arrays(), np.empty(len(specs)))
    assert_allclose(got, ref.raw_traces(specs, A), rtol=1e-12, atol=1e-12)


@settings(max_examples=60)
@given(specs_and_points(max_n=12), st.data())
def test_quad_forms_from_features_match_reference(data, draw):
    specs, A, _, scales = data
    n, m = len(A), len(specs)
    v = draw.draw(arrays(np.float64, n, elements=st.floats(-2, 2, width=64)))
    S = np.array(sorted(draw.draw(st.sets(st.integers(0, n - 1), min_size=1))), dtype=np.int64)
    kernels = np.array(
        sorted(draw.draw(st.sets(st.integers(0, m - 1), min_size=1))), dtype=np.int64
    )
    plan = _Plan(specs, A.shape[1])
    XS = readonly(np.ascontiguousarray(A[S]))
    args = (XS, np.array(XS.T, order="C"), np.ascontiguousarray(v[S]), *plan.arrays(),
            1.0 / scales, _slots(m, kernels), plan.groups_of(kernels))
    want = ref.quad_forms_from_specs(specs, A, scales, v, S)[kernels]
    tol = dict(rtol=1e-10, atol=1e-10 * max(1.0, float(np.sum(v**2)) * 1e4))
    assert_allclose(jg.quad_forms_by_group(*args, np.zeros(kernels.size), GO), want, **tol)
    for n_chunks in (1, 3):
        assert_allclose(jg.quad_forms_by_rows(*args, n_chunks, np.zeros(kernels.size), GO), want, **tol)


def test_fused_table_passes_match_reference(rng):
    n, u = 11, 4
    codes = rng.integers(0, u, size=(3, n)).astype(np.int64)
    tables = rng.normal(size=(3, u, u))
    tables = tables + np.transpose(tables, (0, 2, 1))  # symmetric, as kernel tables are
    want = sum(ref.table_rows(codes[g], tables[g], np.arange(n)) for g in range(3))
    idx = np.array([3, 3, 0, 10], dtype=np.int64)
    base = rng.normal(size=(4, n))
    assert_allclose(jg.tables_rows(codes, tables, idx, base.copy()), base + want[idx], rtol=1e-14)
    # The symmetric pass, coded groups only (no direct group in use).
    X = readonly(rng.normal(size=(n, 2)))
    plan = _Plan([rbf(1.0)], 2)
    got = jg.combined_sym(X, np.array(X.T, order="C"), *plan.arrays(), np.zeros(1),
                          np.zeros(0, dtype=np.int64), codes, tables, np.full((n, n), np.nan), True, GO)
    assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    assert_array_equal(got, got.T)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 130, 200])
def test_mirror_upper_matches_numpy(n, rng):
    a = rng.normal(size=(n, n))
    want = np.triu(a) + np.triu(a, 1).T
    got = jg.mirror_upper(a.copy())
    assert_array_equal(got, want)


def test_upper_only_pass_leaves_the_lower_triangle(rng):
    """``mirror=False`` writes the upper triangle only; one mirror at the end symmetrises."""
    n, u = 90, 5
    codes = rng.integers(0, u, size=(2, n)).astype(np.int64)
    tables = rng.normal(size=(2, u, u))
    tables = tables + np.transpose(tables, (0, 2, 1))
    X = readonly(rng.normal(size=(n, 3)))
    specs = [rbf(0.7), poly(2, [0, 2])]
    plan = _Plan(specs, 3)
    wk = np.array([0.5, 2.0])
    groups = plan.groups_of(np.arange(2))
    start = rng.normal(size=(n, n))
    got = jg.combined_sym(X, np.array(X.T, order="C"), *plan.arrays(), wk, groups, codes,
                          tables, start.copy(), False, GO)
    il = np.tril_indices(n, -1)
    assert_array_equal(got[il], start[il])
    want = ref.combined(specs, X, X, wk, np.ones(2)) + sum(
        ref.table_rows(codes[g], tables[g], np.arange(n)) for g in range(2))
    assert_allclose(np.triu(got), np.triu(want), rtol=1e-12, atol=1e-12)
    full = jg.mirror_upper(got)
    assert_array_equal(full, full.T)


@given(specs_and_points(), st.data())
def test_combined_sym_matches_reference_and_is_symmetric(data, draw):
    specs, A, _, scales = data
    m = len(specs)
    w = draw.draw(arrays(np.float64, m, elements=st.sampled_from([0.0, 0.4, 2.0])))
    plan = _Plan(specs, A.shape[1])
    wk = w / scales
    groups = plan.groups_of(np.flatnonzero(wk))
    out = jg.combined_sym(A, np.array(A.T, order="C"), *plan.arrays(), wk, groups, *_NONE,
                          np.empty((len(A), len(A))), True, GO)
    assert_array_equal(out, out.T)
    assert_allclose(out, ref.combined(specs, A, A, w, scales), rtol=1e-12, atol=1e-12)
    # The upper triangle is what the row routine computes, bit for bit.
    rows = jg.combined_cross(A, np.array(A.T, order="C"), *plan.arrays(), wk, groups,
                             np.empty_like(out), GO)
    iu = np.triu_indices(len(A))
    assert_array_equal(out[iu], rows[iu])


def test_parallel_routines_give_the_same_answers_on_one_thread(rng):
    """prange loops have fixed reduction orders: one thread gives the same bits."""
    specs = [rbf(0.5), rbf(2.0, [1]), poly(2, [0, 2]), linear([2])]
    X = readonly(rng.normal(size=(70, 3)))
    plan = _Plan(specs, 3)
    m = len(specs)
    ks = np.arange(m, dtype=np.int64)
    scales = np.array([70.0, 70.0, 3.0, 2.0])
    w = np.array([0.5, 0.0, 1.0, 2.0])
    v = rng.normal(size=70)
    S = np.arange(0, 70, 2, dtype=np.int64)
    XS = readonly(np.ascontiguousarray(X[S]))
    XT = np.array(X.T, order="C")

    def run():
        g = plan.groups_of(ks)
        return [
            jg.combined_cross(X, XT, *plan.arrays(), w / scales, g, np.empty((70, 70)), GO),
            jg.combined_sym(X, XT, *plan.arrays(), w / scales, g, *_NONE, np.empty((70, 70)), True, GO),
            jg.kernel_sym(X, XT, *plan.arrays(), 1 / scales, _slots(m, ks), g,
                          np.empty((m, 70, 70)), GO),
            jg.quad_forms_by_rows(XS, np.array(XS.T, order="C"), v[S], *plan.arrays(),
                                  1 / scales, _slots(m, ks), g, 7, np.zeros(m), GO),
            jg.quad_forms_by_group(XS, np.array(XS.T, order="C"), v[S], *plan.arrays(),
                                   1 / scales, _slots(m, ks), g, np.zeros(m), GO),
            jg.raw_traces(X, *plan.arrays(), np.empty(m)),
        ]

    many = run()
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run()
    finally:
        numba.set_num_threads(threads)
    for a, b in zip(many, one):
        assert_array_equal(a, b)


# ------------------------------------------------- product path (_jit.gram)
def _kernel_atol(K):
    """1e-12 of each kernel's largest magnitude, broadcastable against K (s, na, nb)."""
    return 1e-12 * np.abs(K).max(axis=(1, 2), keepdims=True)


def _gram_all(specs, A, B, scales, sym):
    """Every kernel through the product path, group by group; the sym case mirrored."""
    plan = _Plan(specs, A.shape[1])
    m = len(specs)
    slot = _slots(m, np.arange(m, dtype=np.int64))
    out = np.full((m, len(A), len(B)), np.nan)
    for g in range(plan.n_groups):
        Bc = jgr.Centred(B, plan.group_features(g))
        Ac = Bc if sym else Bc.like(A, plan.group_features(g))
        jgr.slices(Ac, Bc, sym, plan.arrays(), g, 1.0 / scales, slot, out, GO)
    if sym:
        jgr.mirror_slices(out, np.arange(m, dtype=np.int64))
    return out


@given(specs_and_points())
def test_gram_slices_match_the_scalar_formulas(data):
    """The product path against the direct sums (the old formula, tests/_reference.py)."""
    specs, A, B, scales = data
    want = ref.kernel_matrices(specs, A, B, scales)
    got = _gram_all(specs, A, B, scales, sym=False)
    assert np.all(np.abs(got - want) <= _kernel_atol(want))
    sym = _gram_all(specs, A, A, scales, sym=True)
    want = ref.kernel_matrices(specs, A, A, scales)
    assert np.all(np.abs(sym - want) <= _kernel_atol(want))
    assert_array_equal(sym, np.transpose(sym, (0, 2, 1)))  # exactly symmetric
    for k, s in enumerate(specs):
        if type(s).__name__ == "RBF":  # exact unit diagonal, values in (0, 1]
            assert np.all(np.diag(sym[k]) == 1.0 / scales[k])
            assert np.all(sym[k] <= 1.0 / scales[k]) and np.all(sym[k] >= 0.0)


@given(specs_and_points(), st.data())
def test_gram_combined_matches_reference(data, draw):
    specs, A, B, scales = data
    m = len(specs)
    w = draw.draw(arrays(np.float64, m, elements=st.sampled_from([0.0, 0.3, 1.0, 2.5])))
    plan = _Plan(specs, A.shape[1])
    wk = w / scales
    out = np.zeros((len(A), len(B)))
    sym = np.zeros((len(A), len(A)))
    for g in plan.groups_of(np.flatnonzero(wk)).tolist():
        Bc = jgr.Centred(B, plan.group_features(g))
        jgr.combined(Bc.like(A, plan.group_features(g)), Bc, False, plan.arrays(), g, wk, out, GO)
        C = jgr.Centred(A, plan.group_features(g))
        jgr.combined(C, C, True, plan.arrays(), g, wk, sym, GO)
    want = ref.combined(specs, A, B, w, scales)
    scale = 1e-12 * max(np.abs(want).max(), 1e-300)
    assert np.all(np.abs(out - want) <= scale)
    want = ref.combined(specs, A, A, w, scales)
    iu = np.triu_indices(len(A))
    assert np.all(np.abs(sym[iu] - want[iu]) <= 1e-12 * max(np.abs(want).max(), 1e-300))
    assert_array_equal(np.tril(sym, -1), 0.0)  # the upper triangle only was touched


def test_gram_terms_match_their_twin(rng):
    """Distances and products from the products, close pairs and duplicates included."""
    A = rng.normal(size=(40, 12)) * 3.0 + 100.0  # far from the origin
    A[5] = A[2]  # a duplicated point: distance exactly 0
    A[7] = A[3] + 1e-9  # a close pair: summed directly
    m = A.mean(axis=0)
    C = jgr.Centred(A, None)
    assert_allclose(C.m, m, rtol=1e-15)
    assert_allclose(C.sq, np.sum((A - m) ** 2, axis=1), rtol=1e-13)
    D, G = ref.centred_terms(A, A, m)
    plan = _Plan([rbf(1e3), linear()], 12)  # exp(-d / 2e6) ~ 1 - d / 2e6: d to 1e-6 relative
    out = np.empty((2, 40, 40))
    jgr.slices(C, C, False, plan.arrays(), 0, np.ones(2), np.arange(2), out, GO)
    d_got = -2e6 * np.log(out[0])
    assert_allclose(d_got, D, rtol=1e-6, atol=1e-9)
    assert out[0, 5, 2] == 1.0 and out[0, 2, 5] == 1.0 and np.all(np.diag(out[0]) == 1.0)
    assert_allclose(out[1], G, rtol=1e-13)
    d2 = np.empty(40)
    P = C.Xc @ C.Xc.T
    for fn in (jgr._chunk_dists, _py(jgr._chunk_dists)):
        fn(P[3], C.Xc[3], C.Xc, C.sq[3], C.sq, 0, 40, 3, d2)
        assert d2[3] == 0.0 and d2[7] == np.sum((C.Xc[7] - C.Xc[3]) ** 2)  # summed directly
        assert_allclose(d2, D[3], rtol=1e-12, atol=1e-12 * D[3].max())


@settings(max_examples=60)
@given(specs_and_points(max_n=12), st.data())
def test_gram_quad_forms_match_reference(data, draw):
    specs, A, _, scales = data
    n, m = len(A), len(specs)
    v = draw.draw(arrays(np.float64, n, elements=st.floats(-2, 2, width=64)))
    S = np.array(sorted(draw.draw(st.sets(st.integers(0, n - 1), min_size=1))), dtype=np.int64)
    kernels = np.array(
        sorted(draw.draw(st.sets(st.integers(0, m - 1), min_size=1))), dtype=np.int64
    )
    plan = _Plan(specs, A.shape[1])
    slot = _slots(m, kernels)
    got = np.zeros(kernels.size)
    for g in plan.groups_of(kernels).tolist():
        C = jgr.Centred(A, plan.group_features(g)).take(S)
        qg = jgr.quad(C, np.ascontiguousarray(v[S]), plan.arrays(), g, 1.0 / scales, slot, GO)
        ks = plan.kern_idx[plan.kern_ptr[g]:plan.kern_ptr[g + 1]]
        got[slot[ks[slot[ks] >= 0]]] = qg[slot[ks] >= 0]
    want = ref.quad_forms_from_specs(specs, A, scales, v, S)[kernels]
    K = np.abs(ref.kernel_matrices(specs, A, A, scales))
    scale = ref.quad_forms(K, np.abs(v), S, kernels)
    assert np.all(np.abs(got - want) <= 1e-12 * scale + 1e-300)


def test_gram_quad_parallel_is_serial(rng, monkeypatch):
    specs = [rbf(0.5), rbf(1.0), poly(2), linear()]
    X = rng.normal(size=(200, 6))
    v = rng.normal(size=200)
    plan = _Plan(specs, 6)
    slot = _slots(4, np.arange(4))
    C = jgr.Centred(X, None)
    serial = jgr.quad(C, v, plan.arrays(), 0, np.ones(4), slot, GO)
    monkeypatch.setattr(jgr, "PARALLEL_MIN", 0)
    assert_array_equal(jgr.quad(C, v, plan.arrays(), 0, np.ones(4), slot, GO), serial)
    py = _py(jgr.gram_quad)
    P, Q = C.Xc @ C.Xc.T, X @ X.T
    parts = py(P[:20, :20], Q[:20, :20], C.Xc[:20], C.sq[:20], 0, 0, plan.kern_idx, 0, 4,
               plan.kind, plan.param, plan.offset, np.ones(4), slot, v[:20], np.zeros((2, 4)))
    want = ref.quad_forms_from_specs(specs, X[:20], np.ones(4), v[:20], np.arange(20))
    assert_allclose(parts.sum(axis=0)[np.argsort(plan.kern_idx[:4])], want, rtol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 130])
def test_mirror_slices_matches_numpy(n, rng):
    a = rng.normal(size=(3, n, n))
    which = np.array([2, 0], dtype=np.int64)
    assert_array_equal(jgr.mirror_slices(a.copy(), which), ref.mirror(a, which))
    assert_array_equal(_py(jgr.mirror_slices)(a.copy(), which), ref.mirror(a, which))


def test_gram_parallel_blocks_and_one_thread_agree(rng, monkeypatch):
    """The parallel twins, one thread, and blocks of any size give the serial answers."""
    specs = [rbf(0.5), rbf(1.0), rbf(4.0), poly(2), linear([0, 2, 3])]
    X = rng.normal(size=(150, 5))
    scales = np.arange(1.0, 6.0)

    def run():
        got = _gram_all(specs, X, X, scales, sym=True)
        cross = _gram_all(specs, X[:20], X, scales, sym=False)
        plan = _Plan(specs, 5)
        out = np.zeros((150, 150))
        for g in range(plan.n_groups):
            C = jgr.Centred(X, plan.group_features(g))
            jgr.combined(C, C, True, plan.arrays(), g, 1.0 / scales, out, GO)
        return got, cross, out

    serial = run()
    monkeypatch.setattr(jgr, "PARALLEL_MIN", 0)  # every block through the parallel twins
    many = run()
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = run()
    finally:
        numba.set_num_threads(threads)
    monkeypatch.setattr(jgr, "BLOCK_BYTES", 8)  # 64-row blocks
    blocks = run()
    for a, b, c, d in zip(serial, many, one, blocks):
        assert_array_equal(a, b)
        assert_array_equal(a, c)
        # Other blocks are other BLAS calls: the same to rounding.
        assert_allclose(a, d, rtol=0, atol=1e-12 * np.abs(a).max())


def test_gram_py_func_paths(rng):
    specs = [rbf(0.7), poly(2), linear()]
    A, B = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    plan = _Plan(specs, 2)
    scales = np.array([3.0, 2.0, 1.5])
    Bc = jgr.Centred(B, None)
    Ac = Bc.like(A, None)
    P, Q = Ac.Xc @ Bc.Xc.T, A @ B.T
    args = (P, Q, Ac.Xc, Ac.sq, Bc.Xc, Bc.sq, 0, 0, False, plan.kern_idx, 0, 3, plan.kind,
            plan.param, plan.offset)
    out = _py(jgr.gram_slices)(*args, 1 / scales, np.arange(3), np.empty((3, 3, 4)), False)
    assert_allclose(out, ref.kernel_matrices(specs, A, B, scales), rtol=1e-12)
    par = _py(jgr.gram_slices_par)(*args, 1 / scales, np.arange(3), np.empty((3, 3, 4)), False,
                                   2)
    assert_array_equal(par, out)
    w = np.array([1.0, 0.0, 2.0])
    comb = _py(jgr.gram_combined)(*args, w / scales, np.zeros((3, 4)))
    assert_allclose(comb, ref.combined(specs, A, B, w, scales), rtol=1e-12)
    assert_array_equal(_py(jgr.gram_combined_par)(*args, w / scales, np.zeros((3, 4)), 2), comb)
    sq = _py(jgr.group_norms)(Bc.Xc, np.empty(4))
    assert_allclose(sq, np.sum(Bc.Xc**2, axis=1), rtol=1e-15)


# --------------------------------------------------------------- combination
@st.composite
def psd_bank(draw, max_m=5, max_n=8):
    """A small bank of PSD matrices F F' (rank-deficient ones included)."""
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(1, max_n))
    r = draw(st.integers(1, 3))
    F = draw(arrays(np.float64, (m, n, r), elements=st.floats(-3, 3, width=64)))
    return readonly(np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F)))  # as a storage's


@given(psd_bank(), st.data())
def test_combine_and_rows_match_reference(K, data):
    m, n = K.shape[:2]
    w = data.draw(arrays(np.float64, m, elements=st.sampled_from([0.0, 0.25, 1.0, 3.0])))
    assert_allclose(jc.combine_kernels(K, w, np.empty((n, n)), GO), ref.combine(K, w),
                    rtol=1e-12, atol=1e-12)
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5)),
                   dtype=np.int64)
    for KK in (K, readonly(K.astype(np.float32))):
        got = jc.combine_rows(KK, w, idx, np.empty((idx.size, n)), GO)
        assert got.dtype == np.float64
        assert_allclose(got, ref.combine_rows(KK, w, idx), rtol=1e-12, atol=1e-12)


@given(psd_bank(), st.data())
def test_quad_forms_match_reference_and_nonnegative(K, data):
    m, n = K.shape[:2]
    v = data.draw(arrays(np.float64, n, elements=st.floats(-5, 5, width=64)))
    S = np.array(
        sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=0, max_size=n))), dtype=np.int64
    )
    ks = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=m)),
                  dtype=np.int64)
    q = jc.quad_forms(K, v, S, ks, np.empty(ks.size), GO)
    scale = np.sum(v**2) * np.max(np.abs(K)) * max(n, 1)
    assert_allclose(q, ref.quad_forms(K, v, S, ks), rtol=1e-10, atol=1e-12 * max(scale, 1.0))
    assert np.all(q >= -1e-12 * max(scale, 1.0))


def test_quad_forms_unsorted_support_and_float32(rng):
    F = rng.standard_normal((3, 9, 9))
    K = readonly(np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F)))
    v = rng.standard_normal(9)
    S = np.array([7, 2, 5, 0, 8, 3], dtype=np.int64)
    ks = np.arange(3, dtype=np.int64)
    scale = np.sum(v**2) * np.abs(K).max()
    q = jc.quad_forms(K, v, S, ks, np.empty(3), GO)
    assert_allclose(q, ref.quad_forms(K, v, S), rtol=1e-12, atol=1e-13 * scale)
    q32 = jc.quad_forms(readonly(K.astype(np.float32)), v, S, ks, np.empty(3), GO)
    assert_allclose(q32, ref.quad_forms(K.astype(np.float32), v, S), rtol=1e-10,
                    atol=1e-13 * scale)


# --------------------------------------------------------- pure-Python paths
def _py(fn):
    """The pure-Python body of a jitted function (itself when JIT is disabled)."""
    return getattr(fn, "py_func", fn)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 150), st.sampled_from([np.float64, np.float32]), st.data())
def test_symmetry_scan_matches_numpy(n, dtype, data):
    """One pass gives NumPy's max|A|, max|A - A'| and isfinite, across tile edges."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    r = np.random.default_rng(seed)
    A = r.standard_normal((n, n))
    A = (A + A.T) / 2 if data.draw(st.booleans()) else A
    if data.draw(st.booleans()):  # one entry perturbed, anywhere
        A[r.integers(n), r.integers(n)] += r.uniform(-1e-3, 1e-3)
    bad = data.draw(st.sampled_from([None, np.nan, np.inf, -np.inf]))
    if bad is not None:
        A[r.integers(n), r.integers(n)] = bad
    A = np.ascontiguousarray(A, dtype=dtype)
    finite, amax, asym = jc.symmetry_scan(readonly(A), GO)
    assert finite == bool(np.isfinite(A).all())
    if finite:
        A64 = A.astype(np.float64)
        assert amax == np.max(np.abs(A64))
        assert asym == np.max(np.abs(A64 - A64.T))
    with np.errstate(invalid="ignore"):  # inf * 0 in the uncompiled body
        f2, a2, s2 = _py(jc.symmetry_scan)(A, GO)
    assert f2 == finite and (not finite or (a2, s2) == (amax, asym))


def _dominance_twin(A, shift, slack):
    """NumPy twin of :func:`mklopt._jit.combine.diagonally_dominant`."""
    A = A.astype(np.float64)
    d = np.diag(A)
    radius = np.abs(A).sum(axis=1) - np.abs(d)
    return bool(np.all(radius * (1.0 + A.shape[0] * np.finfo(float).eps) <= d + shift - slack))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 150), st.sampled_from([np.float64, np.float32]), st.data())
def test_diagonally_dominant_matches_numpy_and_certifies_psd(n, dtype, data):
    """The Gershgorin test agrees with its twin, and what it passes is PSD within the shift."""
    r = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    A = r.standard_normal((n, n))
    A = (A + A.T) / 2
    np.fill_diagonal(A, 0.0)
    # Each row's diagonal a factor away from its radius, clear of the boundary.
    factor = data.draw(st.sampled_from([0.5, 0.9, 1.1, 2.0]))
    np.fill_diagonal(A, factor * np.abs(A).sum(axis=1) + (n == 1))
    if n > 1 and data.draw(st.booleans()):  # a symmetric pair that breaks two rows' dominance
        i, j = r.choice(n, 2, replace=False)
        A[i, j] = A[j, i] = A[i, j] + 3.0 * (A[i, i] + A[j, j] + 1.0)
    if data.draw(st.booleans()):  # a negative diagonal entry, past the first block when n > 64
        i = data.draw(st.integers(0, n - 1))
        A[i, i] = -A[i, i] - 1.0
    asym = 0.0
    if n > 1 and data.draw(st.booleans()):  # an asymmetric pair, widening the radii
        i, j = r.choice(n, 2, replace=False)
        A[i, j] += 1e-3
        asym = 1e-3
    A = np.ascontiguousarray(A, dtype=dtype)
    shift = 1e-8 * float(np.trace(A.astype(np.float64)))
    slack = (n - 1) * asym
    got = jc.diagonally_dominant(readonly(A), shift, slack)
    assert got == _dominance_twin(A, shift, slack)
    assert _py(jc.diagonally_dominant)(A, shift, slack) == got
    if got:  # Gershgorin: either triangle's symmetric matrix has lambda_min >= -shift
        A64 = A.astype(np.float64)
        for T in (np.tril(A64) + np.tril(A64, -1).T, np.triu(A64) + np.triu(A64, 1).T):
            assert np.linalg.eigvalsh(T)[0] >= -shift - 1e-12 * np.abs(A64).max()


def test_py_func_paths_agree_on_tiny_inputs(rng):
    """Run the uncompiled bodies too (coverage and a second opinion)."""
    specs = [rbf(0.7), poly(2, [1]), linear([0])]
    A, B = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    plan = _Plan(specs, 2)
    scales = np.array([3.0, 2.0, 1.5])
    ks = np.arange(3, dtype=np.int64)
    slot = _slots(3, ks)
    groups = plan.groups_of(ks)
    BT = np.array(B.T, order="C")
    want = ref.kernel_matrices(specs, A, B, scales)
    assert_allclose(_py(jg.kernel_cross)(A, BT, *plan.arrays(), 1 / scales, slot, groups,
                                         np.empty((3, 3, 2)), GO), want, rtol=1e-12)
    assert_allclose(_py(jg.kernel_sym)(A, np.array(A.T, order="C"), *plan.arrays(), 1 / scales,
                                       slot, groups, np.empty((3, 3, 3)), GO),
                    ref.kernel_matrices(specs, A, A, scales), rtol=1e-12)
    w = np.array([1.0, 0.0, 2.0])
    assert_allclose(_py(jg.combined_cross)(A, BT, *plan.arrays(), w / scales, groups,
                                           np.empty((3, 2)), GO),
                    ref.combined(specs, A, B, w, scales), rtol=1e-12)
    assert_allclose(_py(jg.raw_traces)(A, *plan.arrays(), np.empty(3)),
                    ref.raw_traces(specs, A), rtol=1e-12)
    assert _py(jg._ipow)(1.5, 3) == 1.5**3
    F = rng.standard_normal((5, 3, 2))
    K = np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F))
    w5 = np.array([1.0, 0.0, 0.5, 2.0, 0.25])
    assert_array_equal(_py(jc._active)(w5), [0, 2, 3, 4])
    assert_allclose(_py(jc.combine_kernels)(K, w5, np.empty((3, 3)), GO), ref.combine(K, w5))
    idx = np.array([2, 0], dtype=np.int64)
    assert_allclose(_py(jc.combine_rows)(K, w5, idx, np.empty((2, 3)), GO),
                    ref.combine_rows(K, w5, idx))
    v, S = rng.standard_normal(3), np.array([0, 2], dtype=np.int64)
    k5 = np.arange(5, dtype=np.int64)
    assert_allclose(_py(jc.quad_forms)(K, v, S, k5, np.empty(5), GO), ref.quad_forms(K, v, S))


# ------------------------------------------------------------ STYLE 2.6 lint
_JIT_DIR = pathlib.Path(__file__).resolve().parents[2] / "mklopt" / "_jit"
_ALLOWED_OPTIONS = {"JIT", "JIT_PARALLEL", "JIT_CONTRACT"}
_JIT_NAMES = {"njit", "jit", "generated_jit", "vectorize", "guvectorize", "stencil", "cfunc"}


def _decorator_name(dec):
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Name):
        return target.id
    return None


def _jit_decorator_problems(path):
    problems = []
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if _decorator_name(dec) not in _JIT_NAMES:
                continue
            where = f"{path.name}:{node.lineno} {node.name}"
            if _decorator_name(dec) != "njit":
                problems.append(f"{where}: use @njit(**JIT), not @{_decorator_name(dec)}")
                continue
            ok = (
                isinstance(dec, ast.Call)
                and not dec.args
                and len(dec.keywords) == 1
                and dec.keywords[0].arg is None
                and isinstance(dec.keywords[0].value, ast.Name)
                and dec.keywords[0].value.id in _ALLOWED_OPTIONS
            )
            if not ok:
                problems.append(f"{where}: decorator must be exactly @njit(**JIT), "
                                "@njit(**JIT_PARALLEL) or @njit(**JIT_CONTRACT)")
    return problems


def test_every_njit_uses_shared_options():
    files = sorted(_JIT_DIR.glob("*.py"))
    assert any(p.name == "groups.py" for p in files)
    problems = [msg for p in files for msg in _jit_decorator_problems(p)]
    assert not problems, "\n".join(problems)


def test_lint_catches_bad_decorators(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from numba import njit\n"
        "@njit\ndef a(x): return x\n"
        "@njit(cache=True)\ndef b(x): return x\n"
        "@njit(**JIT, parallel=True)\ndef c(x): return x\n"
        "@njit(**JIT)\ndef d(x): return x\n"
        "@njit(**JIT_PARALLEL)\ndef e(x): return x\n"
        "@njit(**OTHER)\ndef f(x): return x\n"
    )
    names = [msg.split()[1].rstrip(":") for msg in _jit_decorator_problems(bad)]
    assert names == ["a", "b", "c", "f"]


def test_options_keep_fastmath_off():
    from mklopt._jit._options import JIT, JIT_PARALLEL

    assert JIT["fastmath"] is False and JIT_PARALLEL["fastmath"] is False
    assert JIT_PARALLEL == dict(JIT, parallel=True)
