"""Stored distances and inner products (``storage="products"``): a dense bank's kernels, bit for bit.

A :class:`~mklopt.kernels.products.ProductStorage` keeps two ``n x n``
matrices per feature group and applies the kernels when they are read. Its
values, and the rows, diagonals, quadratic forms and blocks of its views,
must be those of a dense bank and its views exactly (a fit then takes the
same path on either); its jitted primitives must agree with NumPy twins;
the estimators hold their one multiclass bank so, giving the same models.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import KernelBank, MKLClassifier, MKLClassifierCV, datasets
from mklopt._jit import gram, readonly
from mklopt._jit import products as jp
from mklopt._jit.combine import view_diag
from mklopt._jit.smo import smo_gradient_src, smo_solve_src
from mklopt.kernels import KernelFamily, grid, linear, poly, rbf, register_kernel_family
from mklopt.kernels import products as kp
from mklopt.kernels.factory import shared_storage
from mklopt.oracles import SVMDual, _solver
from tests._spies import spy_from_specs

GO = np.zeros(1, dtype=np.int64)

#: Three groups (all features, two subsets); widths 2^s apart share an exp,
#: 2^-6 and 2^7 are 2^26 apart in gamma (three bases); a repeated width;
#: 3 / 32 has exactly 1024 times the gamma of 3 (the farthest a base reaches).
SPECS = [rbf(2.0**e) for e in (-6, -3, 0, 1, 3, 7)] + [rbf(3.0), rbf(3.0 / 32)] + [
    rbf(1.0), poly(2), poly(3), linear(),
    rbf(1.0, features=[0, 2]), rbf(0.25, features=[0, 2]), linear(features=[1]),
]


@st.composite
def cases(draw):
    """Points (maybe a constant feature, a duplicated row), a view in any order, weights."""
    n = draw(st.integers(5, 40))
    X = draw(arrays(np.float64, (n, 3), elements=st.floats(-3, 3, width=32)))
    if draw(st.booleans()):
        X[:, 2] = 0.75
    if draw(st.booleans()):
        X[1] = X[0]
    keep = draw(arrays(np.bool_, n))
    keep[:2] = True
    rows = np.flatnonzero(keep)
    rows = np.array(draw(st.permutations(rows.tolist())), dtype=np.int64)
    w = draw(arrays(np.float64, len(SPECS), elements=st.floats(0, 1)))
    w[draw(st.integers(0, len(SPECS) - 1))] = 0.5
    return X, rows, w


def _banks(X, normalize=None):
    d = KernelBank.from_specs(X, SPECS, normalize=normalize, storage="dense")
    p = KernelBank.from_specs(X, SPECS, normalize=normalize, storage="products")
    return d, p


def _verbs_equal(a, b, w, n, read_q=True):
    """Every verb of storages ``a`` and ``b`` gives the same bits."""
    assert np.array_equal(a.combine(w, np.empty((n, n))), b.combine(w, np.empty((n, n))))
    assert np.array_equal(a.diag(w), b.diag(w))
    r = np.array([n - 1, 0], dtype=np.int64)
    assert np.array_equal(a.rows(w, r, np.empty((2, n))), b.rows(w, r, np.empty((2, n))))
    rng = np.random.default_rng(n)
    v = rng.standard_normal(n)
    S = np.sort(rng.choice(n, max(1, n // 2), replace=False)).astype(np.int64)
    ks = np.array([5, 0, 12, 0, 9], dtype=np.int64)  # a subset, repeated, unsorted
    assert np.array_equal(a.quad_forms(v, S, ks), b.quad_forms(v, S, ks))
    assert np.array_equal(a.quad_forms(v, S), b.quad_forms(v, S))
    assert np.array_equal(a.blocks(ks[:3], r, S), b.blocks(ks[:3], r, S))


@given(cases(), st.sampled_from(["trace", "diagonal", None]), st.booleans())
@settings(max_examples=40, deadline=None)
def test_products_give_a_dense_banks_values_bit_for_bit(case, normalize, wide):
    X, rows, w = case
    with pytest.MonkeyPatch.context() as mp:
        if wide:  # every group through the centred BLAS products
            mp.setattr(gram, "WIDE_MIN", 1)
            mp.setattr(gram, "WIDE_PER_KERNEL", 0)
        d, p = _banks(X, normalize)
    n, m = X.shape[0], len(SPECS)
    ar = np.arange(n, dtype=np.int64)
    # every kernel matrix, and the bank's own verbs (other sums than a view's)
    assert np.array_equal(p.blocks(np.arange(m), ar, ar), d.K)
    assert np.array_equal(p.storage.diag_raw, np.diagonal(d.K, axis1=1, axis2=2))
    assert np.abs(p.combine(w) - d.combine(w)).max() <= 1e-13 * np.abs(d.combine(w)).max()
    # views, in any order and normalisation: the same bits through every verb
    for nv in ("trace", "diagonal", None):
        a, b = d.view(rows, normalize=nv).storage, p.view(rows, normalize=nv).storage
        _verbs_equal(a, b, w, rows.size)
    # four matrices (three groups, one with both kinds) for 15 kernels
    assert p.storage.P.shape[0] == 4


def test_quad_forms_read_and_computed_agree():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 4))
    d, p = _banks(X)
    rows = rng.permutation(300)[:200]
    a, b = d.view(rows, "diagonal").storage, p.view(rows, "diagonal").storage
    v = rng.standard_normal(200)
    for s in (3, 60, 180):  # the cost model reads small supports and computes large ones
        S = np.sort(rng.choice(200, s, replace=False)).astype(np.int64)
        assert a.q_from_features(s, len(SPECS)) == kp.q_by_features(b.functions, s, len(SPECS),
                                                                    200)
        assert np.array_equal(a.quad_forms(v, S), b.quad_forms(v, S))


# ------------------------------------------------------------ NumPy twins
def _numpy_kernel(spec, A, B):
    f = spec.features
    A = A if f is None else A[:, list(f)]
    B = B if f is None else B[:, list(f)]
    if hasattr(spec, "sigma"):
        d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        return np.exp(-d / (2.0 * spec.sigma**2))
    if hasattr(spec, "degree"):
        return (A @ B.T + 1.0) ** spec.degree
    return A @ B.T


def test_primitives_match_numpy_twins():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((70, 3))
    p = KernelBank.from_specs(X, SPECS, normalize=None, storage="products").storage
    Ks = np.stack([_numpy_kernel(s, X, X) for s in SPECS])
    scale = np.abs(Ks).reshape(len(SPECS), -1).max(axis=1)
    # the stored products
    plan = p.functions.plan
    mat_d, mat_g, _ = kp.product_matrices(plan)
    for g in range(plan.n_groups):
        f = plan.group_features(g)
        Xg = X if f is None else X[:, f]
        if mat_d[g] >= 0:
            D = ((Xg[:, None] - Xg[None]) ** 2).sum(-1)
            assert np.abs(p.P[mat_d[g]] - D).max() <= 1e-13 * D.max()
        if mat_g[g] >= 0:
            G = Xg @ Xg.T
            assert np.abs(p.P[mat_g[g]] - G).max() <= 1e-13 * np.abs(G).max()
    ar = np.arange(70, dtype=np.int64)
    ks = np.arange(len(SPECS), dtype=np.int64)
    blocks = jp.product_blocks(p.P, p.ri, p.rf, ks, ar, ar, np.empty((len(SPECS), 70, 70)))
    assert np.all(np.abs(blocks - Ks).reshape(len(SPECS), -1).max(axis=1) <= 1e-12 * scale)
    w = rng.random(len(SPECS))
    w[4] = 0.0
    act = np.flatnonzero(w).astype(np.int64)
    gidx = rng.permutation(70).astype(np.int64)[:50]
    want = np.tensordot(w, Ks, axes=1)[np.ix_(gidx, gidx)]
    got = jp.product_combine(p.P, p.ri, p.rf, w[act], act, gidx, np.empty((50, 50)), GO)
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
    assert np.array_equal(got, got.T)
    r = jp.product_rows(p.P, p.ri, p.rf, w[act], act, gidx, np.array([7, 0]), np.empty((2, 50)),
                        GO)
    assert np.array_equal(r, got[[7, 0]])
    dg = jp.product_diag(p.diag_raw, w[act], act, gidx, np.empty(50))
    assert np.array_equal(dg, np.diag(got))
    v = rng.standard_normal(70)
    S = np.sort(gidx[:30])
    q = jp.product_quad_forms(p.P, p.ri, p.rf, v, S, ks, np.empty(len(SPECS)), GO)
    qw = np.array([v[S] @ K[np.ix_(S, S)] @ v[S] for K in Ks])
    assert np.all(np.abs(q - qw) <= 1e-12 * scale * np.abs(v[S]).sum() ** 2)
    # the interpreted twins of the jitted routines give the same bits
    assert np.array_equal(
        jp.product_row.py_func(p.P, p.ri, p.rf, w[act], act, gidx, 3, np.empty(50)), got[3])


def _products_twin(X, plan, mat_d, mat_g, count):
    """The narrow groups' products by NumPy, each entry summed over features in plan order."""
    n = X.shape[0]
    P = np.zeros((count, n, n))
    for g in range(plan.n_groups):
        for f in plan.feat_idx[plan.feat_ptr[g]:plan.feat_ptr[g + 1]]:
            col = X[:, f]
            if mat_d[g] >= 0:
                t = col[:, None] - col[None, :]
                P[mat_d[g]] += t * t
            if mat_g[g] >= 0:
                P[mat_g[g]] += col[:, None] * col[None, :]
    return P


#: Three groups: distances and products (all features), distances only, products only.
SYM_SPECS = [rbf(1.0), poly(2), rbf(0.5, features=[0, 2]), linear(features=[1])]


@pytest.mark.parametrize("n", [1, 2, jp.SYM_BLOCK - 1, jp.SYM_BLOCK, jp.SYM_BLOCK + 1, 97, 600])
def test_products_sym_writes_both_triangles_as_numpy_sums_them(n):
    """Every entry of every narrow matrix, both triangles: the twin's bits, one thread or two.

    600 points span two column chunks and 19 row blocks (an odd count: the
    middle block has no partner thread).
    """
    import numba

    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 3))
    X[n // 2] = X[0]  # a duplicate: distance exactly 0 off the diagonal
    f = KernelBank.from_specs(X, SYM_SPECS, normalize=None, storage="products").storage.functions
    plan = f.plan
    mat_d, mat_g, count = kp.product_matrices(plan)
    groups = np.arange(plan.n_groups, dtype=np.int64)
    want = _products_twin(f.X, plan, mat_d, mat_g, count)
    runs = {}
    threads = numba.get_num_threads()
    try:
        for t in sorted({1, threads}):
            numba.set_num_threads(t)
            P = np.full((count, n, n), np.nan)
            runs[t] = jp.products_sym(f.X, f.XT, plan.feat_ptr, plan.feat_idx, groups, mat_d,
                                      mat_g, P, GO)
    finally:
        numba.set_num_threads(threads)
    for t, P in runs.items():
        assert np.array_equal(P, want), t
        assert all(np.array_equal(M, M.T) for M in P)
    if n <= jp.SYM_BLOCK + 1:  # the interpreted body too
        P = np.full((count, n, n), np.nan)
        jp.products_sym.py_func(f.X, f.XT, plan.feat_ptr, plan.feat_idx, groups, mat_d, mat_g,
                                P, GO)
        assert np.array_equal(P, want)


def test_products_sym_stopped_writes_nothing():
    X = np.random.default_rng(1).standard_normal((80, 3))
    f = KernelBank.from_specs(X, SYM_SPECS, normalize=None, storage="products").storage.functions
    plan = f.plan
    mat_d, mat_g, count = kp.product_matrices(plan)
    P = np.full((count, 80, 80), 7.0)
    jp.products_sym(f.X, f.XT, plan.feat_ptr, plan.feat_idx, np.arange(plan.n_groups),
                    mat_d, mat_g, P, np.ones(1, dtype=np.int64))
    assert np.all(P == 7.0)


def test_lazy_smo_reads_the_same_rows_from_products():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((120, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(120) > 0, 1.0, -1.0)
    d, p = _banks(X)
    rows = np.argsort(y, kind="stable").astype(np.int64)  # class by class, as in a fit
    a_st, b_st = d.view(rows, "diagonal").storage, p.view(rows, "diagonal").storage
    w = rng.random(len(SPECS))
    w[[2, 6]] = 0.0
    yv = y[rows]
    n = rows.size
    out = {}
    for name, s in (("dense", a_st), ("products", b_st)):
        src = s.row_source(w)
        bank, wv, ks, gidx = src[:4]
        ri, rf, dr = src[4:] if len(src) == 7 else (jp.NO_RI, jp.NO_RF, jp.NO_DIAG)
        dvar = jp.source_diag(bank, wv, ks, gidx, ri, dr, np.empty(n))
        if name == "dense":
            assert np.array_equal(dvar, view_diag(bank, wv, ks, gidx, np.empty(n)))
        K = np.empty((n, n))
        filled = np.zeros(n, dtype=np.uint8)
        a0 = np.zeros(n)
        a0[np.flatnonzero(yv > 0)[:4]] = 0.5
        a0[np.flatnonzero(yv < 0)[:4]] = 0.5
        # the problem's rows, signs, linear term and bounds are read-only in a fit
        ar, ys, lin, up = (readonly(v) for v in (np.arange(n), yv, -np.ones(n), np.full(n, 5.0)))
        grad = smo_gradient_src(K, filled, bank, wv, ks, gidx, ri, rf, ar, ys, lin, a0,
                                np.empty(n), GO)
        it = smo_solve_src(K, filled, bank, wv, ks, gidx, ri, rf, dvar, ar, ys, up,
                           a0, grad, 1e-6, 10**6, True, GO)
        out[name] = (a0, grad, it, filled.copy())
    assert np.array_equal(out["dense"][0], out["products"][0])
    assert np.array_equal(out["dense"][1], out["products"][1])
    assert out["dense"][2] == out["products"][2]
    assert np.array_equal(out["dense"][3], out["products"][3])
    assert out["products"][3].sum() < n  # it combined only the rows it read


# ------------------------------------------------------------ the estimators
def _quiet(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def test_multiclass_fit_holds_products_and_gives_the_dense_model(monkeypatch):
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(0)
    keep = rng.choice(y.size, 400, replace=False)
    X, y = X[keep], y[keep]
    seen = spy_from_specs(monkeypatch)
    a = _quiet(MKLClassifier(), X, y)
    assert [kw.get("storage") for _, kw in seen] == ["products"]  # the default's one bank
    b = _quiet(MKLClassifier(storage="dense"), X, y)
    assert np.array_equal(a.weights_, b.weights_)
    assert np.array_equal(a.n_iter_, b.n_iter_)
    Xt = datasets.load("satellite")[0][:300]
    assert np.array_equal(a.decision_function(Xt), b.decision_function(Xt))


def test_cv_estimator_holds_products_under_halving_or_where_dense_does_not_fit(monkeypatch):
    X, y = datasets.load("satellite")
    X, y = X[:240], y[:240]
    kw = dict(Cs=[0.1, 10.0], cv=3, search="exhaustive")
    seen = spy_from_specs(monkeypatch)
    _quiet(MKLClassifierCV(**kw), X, y)
    assert [kw_.get("storage") for _, kw_ in seen] == ["auto"]  # its paths read a lot: dense
    seen.clear()
    # the default search, successive halving over formulations: most
    # candidates run on one fold, and the products are the cheaper bank
    _quiet(MKLClassifierCV(Cs=[0.1, 10.0], cv=3), X, y)
    assert [kw_.get("storage") for _, kw_ in seen] == ["products"]
    seen.clear()
    # 8.3 MB dense (17 kernels on 240 points), 1.4 MB as products: a limit
    # between them holds the products, where "auto" alone would compute on
    # the fly; the results are those of the dense bank.
    a = _quiet(MKLClassifierCV(max_memory=4e6, **kw), X, y)
    assert [kw_.get("storage") for _, kw_ in seen] == ["products"]
    b = _quiet(MKLClassifierCV(storage="dense", **kw), X, y)
    assert np.array_equal(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"])
    assert np.array_equal(a.weights_, b.weights_)


def test_shared_storage_rule():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    specs = list(grid(3, "mkboost2013"))
    assert shared_storage("auto", X, specs) == "products"  # 2 matrices for 17 kernels
    assert shared_storage("dense", X, specs) == "dense"  # an explicit choice is kept
    assert shared_storage("auto", X, [rbf(1.0), poly(2)]) == "auto"  # 2 for 2: no saving
    assert shared_storage("auto", X, specs, max_memory=1000) == "auto"  # does not fit
    # many reads (cross-validation paths): only where dense does not fit
    assert shared_storage("auto", X, specs, reads="many") == "auto"
    assert shared_storage("auto", X, specs, max_memory=100_000, reads="many") == "products"
    with pytest.raises(ValueError, match="reads must be"):
        shared_storage("auto", X, specs, reads="lots")
    coded = rng.integers(0, 3, size=(200, 3)).astype(float)  # ordinal: read from tables
    assert shared_storage("auto", coded, list(grid(3))) == "auto"


def test_bad_input():
    X = np.random.default_rng(0).standard_normal((30, 3))
    with pytest.raises(ValueError, match="dtype=float32 is for storage='dense'"):
        KernelBank.from_specs(X, SPECS, storage="products", dtype=np.float32)
    with pytest.raises(MemoryError, match="storage='on_the_fly'"):
        KernelBank.from_specs(X, SPECS, storage="products", max_memory=10_000)

    class Cosine(KernelFamily):
        name = "cosine_products_test"
        params = ()

        def check(self):
            return {}

        def block(self, A, B):
            return A @ B.T

    cosine = register_kernel_family(Cosine(), replace=True)
    with pytest.raises(ValueError, match="storage='products'.*Cosine"):
        KernelBank.from_specs(X, [cosine(), rbf(1.0)], storage="products")
    assert shared_storage("auto", X, [cosine(), rbf(1.0), rbf(2.0), rbf(4.0)]) == "auto"


def test_lazy_gradient_stopped_writes_nothing():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 3))
    st_ = KernelBank.from_specs(X, SPECS, normalize=None, storage="products").view(
        np.arange(60), "trace").storage
    P, wv, ks, gidx, ri, rf, _ = st_.row_source(np.ones(len(SPECS)))
    n = 60
    a = np.zeros(n)
    a[:5] = 0.3
    grad = np.full(n, 7.0)
    filled = np.zeros(n, dtype=np.uint8)
    stop = np.ones(1, dtype=np.int64)
    smo_gradient_src(np.empty((n, n)), filled, P, wv, ks, gidx, ri, rf, readonly(np.arange(n)),
                     readonly(np.ones(n)), readonly(-np.ones(n)), a, grad, stop)
    assert np.all(grad == 7.0) and not filled.any()


# ------------------------------------------------- a warm start's rows on threads
def _sources(n=70, seed=3, dtype=np.float64):
    """Row sources of a products view and a dense view (``dtype``) of the same points."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + 10, 3))
    rows = rng.permutation(n + 10)[:n].astype(np.int64)  # a subset, in any order
    w = rng.random(len(SPECS))
    w[[1, 7]] = 0.0
    out = {}
    for storage in ("products", "dense"):
        bank = KernelBank.from_specs(X, SPECS, normalize=None, storage=storage,
                                     dtype=dtype if storage == "dense" else np.float64)
        src = bank.view(rows, "trace").storage.row_source(w)
        bank_, wv, ks, gidx = src[:4]
        ri, rf = src[4:6] if len(src) == 7 else (jp.NO_RI, jp.NO_RF)
        out[storage] = (bank_, wv, ks, gidx, ri, rf)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_tasks", [1, 2, 3, 7])
def test_parallel_fill_gives_the_serial_rows(dtype, n_tasks):
    n = 70
    idx = np.array([5, 69, 0, 33, 34, 12, 60, 1, 2], dtype=np.int64)  # unsorted, a few
    for name, (bank, wv, ks, gidx, ri, rf) in _sources(n, dtype=dtype).items():
        want = np.full((n, n), np.nan)
        assert jp.source_fill(bank, wv, ks, gidx, ri, rf, idx, want, GO) == idx.size
        for fill in (jp.source_fill_par, jp.source_fill_par.py_func):
            got = np.full((n, n), np.nan)
            filled = np.zeros(n, dtype=np.uint8)
            fill(bank, wv, ks, gidx, ri, rf, idx, got, filled, n_tasks, GO)
            assert np.array_equal(got[idx], want[idx]), name  # the same bits
            assert np.array_equal(np.flatnonzero(filled), np.sort(idx))
            others = np.setdiff1d(np.arange(n), idx)
            assert np.isnan(got[others]).all()  # no other row written


def test_parallel_fill_stopped_writes_nothing():
    for name, (bank, wv, ks, gidx, ri, rf) in _sources().items():
        K = np.full((70, 70), 7.0)
        filled = np.zeros(70, dtype=np.uint8)
        jp.source_fill_par(bank, wv, ks, gidx, ri, rf, np.arange(70, dtype=np.int64), K,
                           filled, 4, np.ones(1, dtype=np.int64))
        assert np.all(K == 7.0) and not filled.any(), name


@pytest.mark.parametrize("storage", ["products", "dense"])
def test_warm_start_rows_on_threads_give_the_serial_answers(storage, monkeypatch):
    """An oracle whose warm starts combine their rows on threads answers as one that does not."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((160, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(160) > 0, 1.0, -1.0)
    bank = KernelBank.from_specs(X, SPECS, storage=storage)
    rows = np.argsort(y, kind="stable").astype(np.int64)
    view = bank.view(rows)
    w1 = np.full(len(SPECS), 1.0 / len(SPECS))
    w2 = rng.dirichlet(np.ones(len(SPECS)))
    w2[[0, 4]] = 0.0
    w2 /= w2.sum()
    calls = []
    real = _solver.source_fill_par

    def counted(*args):
        calls.append(args[6].size)
        return real(*args)

    answers = {}
    for tasks in (1, 3):
        monkeypatch.setattr(_solver, "fill_tasks", lambda r, n, m, t=tasks: t)
        monkeypatch.setattr(_solver, "source_fill_par", counted)
        oracle = SVMDual(view, y[rows], C=2.0, tol=1e-6)
        first = oracle(w1)
        second = oracle(w2, warm_start=first.alpha)
        answers[tasks] = (first, second)
    assert calls and all(c > 0 for c in calls)  # the threaded batch ran (warm calls only)
    for a, b in zip(answers[1], answers[3], strict=True):
        assert np.array_equal(a.alpha, b.alpha)
        assert np.array_equal(a.q, b.q)
        assert a.value == b.value and a.bias == b.bias
