"""One bank for many binary problems: index views, lazy combine, the multiclass fit.

A multiclass fit evaluates the kernels once on all training points and each
one-vs-one pair reads its block through :meth:`KernelBank.view`, which
keeps the pair's own normalisation. These tests check that a view gives the
kernels (and so the oracle answers and the models) of a bank built on the
pair's points alone, and that SMO combining only the rows it reads gives the
answer of the whole-matrix path.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import KernelBank, MKLClassifier, datasets
from mklopt._jit import combine as jc
from mklopt._jit import readonly
from mklopt._jit.products import NO_RF, NO_RI
from mklopt._jit.smo import smo_gradient, smo_gradient_src, smo_solve, smo_solve_src
from mklopt.estimators.mkl import MKLClassifier as _MKL
from mklopt.kernels import linear, poly, rbf
from mklopt.oracles import SVMDual
from tests import _reference as ref
from tests._spies import spy_from_specs

#: A stop flag that is never set (see mklopt._interrupt).
GO = np.zeros(1, dtype=np.int64)


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


SPECS = [rbf(0.5), rbf(1.0), rbf(2.0), poly(2), poly(3), linear(), linear(features=[1]),
         rbf(1.0, features=[0, 2])]


@st.composite
def views(draw):
    """Points (with a duplicated row and a constant feature), a subset and weights."""
    n = draw(st.integers(6, 40))
    X = draw(arrays(np.float64, (n, 3), elements=st.floats(-2, 2, width=32)))
    if draw(st.booleans()):
        X[:, 2] = 0.75  # a constant feature
    if n > 3 and draw(st.booleans()):
        X[1] = X[0]  # a duplicated point
    keep = draw(arrays(np.bool_, n))
    keep[:2] = True
    rows = np.flatnonzero(keep)
    if draw(st.booleans()):
        # A view takes its points in the order given (class by class in a
        # multiclass fit), not necessarily ascending.
        rows = np.array(draw(st.permutations(rows.tolist())), dtype=np.int64)
    w = draw(arrays(np.float64, len(SPECS), elements=st.floats(0, 1)))
    w[draw(st.integers(0, len(SPECS) - 1))] = 0.5
    return X, rows, w


# ------------------------------------------------------------ jitted twins
@given(views())
@settings(max_examples=40)
def test_view_rows_match_numpy_twin(case):
    X, rows, w = case
    bank = KernelBank.from_specs(X, SPECS, normalize=None, storage="dense")
    K = bank.K
    ks = np.flatnonzero(w).astype(np.int64)
    wv = w[ks]
    block = K[:, rows][:, :, rows]
    want = ref.combine(block[ks], wv)
    got = jc.combine_view(K, wv, ks, rows.astype(np.int64), np.empty((rows.size, rows.size)), GO)
    assert rel(got, want) <= 1e-13
    assert np.array_equal(got, got.T)  # exactly symmetric: one sum order for (i, j) and (j, i)
    sel = np.array([rows.size - 1, 0], dtype=np.int64)
    got_rows = jc.view_rows(K, wv, ks, rows.astype(np.int64), sel, np.empty((2, rows.size)), GO)
    assert np.array_equal(got_rows, got[sel])
    py = jc.view_rows.py_func(K, wv, ks, rows.astype(np.int64), sel, np.empty((2, rows.size)), GO)
    assert rel(py, got_rows) <= 1e-15


def _svm_problem(seed, n=60):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    bank = KernelBank.from_specs(X, SPECS, normalize="trace", storage="dense")
    return bank, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lazy_smo_equals_smo_on_the_filled_matrix(seed):
    bank, y = _svm_problem(seed)
    n = y.size
    w = np.random.default_rng(seed).random(len(SPECS))
    w[3] = 0.0
    ks = np.flatnonzero(w).astype(np.int64)
    gidx = np.arange(n, dtype=np.int64)
    Kfull = jc.combine_view(bank.K, w[ks], ks, gidx, np.empty((n, n)), GO)
    # read-only, as a fit's problem holds them
    rows, signs, upper, linear_ = (readonly(v) for v in (np.arange(n), y, np.full(n, 10.0),
                                                         -np.ones(n)))
    a0 = np.zeros(n)
    # warm start: a feasible point with some support
    a0[np.flatnonzero(y > 0)[:3]] = 0.5
    a0[np.flatnonzero(y < 0)[:3]] = 0.5
    g_full = smo_gradient(Kfull, rows, signs, linear_, a0, np.empty(n))
    K = np.empty((n, n))
    filled = np.zeros(n, dtype=np.uint8)
    g_lazy = smo_gradient_src(K, filled, bank.K, w[ks], ks, gidx, NO_RI, NO_RF, rows, signs,
                              linear_, a0, np.empty(n), GO)
    assert rel(g_lazy, g_full) <= 1e-13
    assert np.count_nonzero(filled) == 6  # only the rows of the support were combined
    a_full, a_lazy = a0.copy(), a0.copy()
    it_full = smo_solve(Kfull, rows, signs, upper, a_full, g_full, 1e-8, 10**6, True, GO)
    dvar = np.ascontiguousarray(np.diag(Kfull))
    it_lazy = smo_solve_src(K, filled, bank.K, w[ks], ks, gidx, NO_RI, NO_RF, dvar, rows, signs,
                            upper, a_lazy, g_lazy, 1e-8, 10**6, True, GO)
    assert np.abs(a_lazy - a_full).max() <= 1e-9 * upper.max()
    assert abs(it_lazy - it_full) <= 2  # rounding of the first gradient may shift a tie
    # every row the solver read is the filled matrix's row
    done = np.flatnonzero(filled)
    assert np.array_equal(K[done], Kfull[done])


# ------------------------------------------------------------ the bank's view
@given(views(), st.sampled_from(["trace", "diagonal", None]), st.sampled_from(["dense",
                                                                               "on_the_fly"]))
@settings(max_examples=40)
def test_view_gives_the_kernels_of_a_bank_on_its_points(case, normalize, storage):
    X, rows, w = case
    big = KernelBank.from_specs(X, SPECS, normalize=None, storage=storage)
    sub = big.view(rows, normalize=normalize)
    own = KernelBank.from_specs(X[rows], SPECS, normalize=normalize, storage="dense")
    assert np.array_equal(sub.scales, own.scales)
    assert rel(sub.combine(w), own.combine(w)) <= 1e-12
    assert rel(sub.diag(w), own.diag(w)) <= 1e-12
    r = np.array([0, rows.size - 1])
    assert rel(sub.rows(w, r), own.rows(w, r)) <= 1e-12
    v = np.linspace(-1.0, 1.0, rows.size)
    q_sub, q_own = sub.quad_forms(v), own.quad_forms(v)
    scale = np.abs(v).sum() ** 2 * np.abs(own.K).reshape(len(SPECS), -1).max(axis=1)
    assert np.all(np.abs(q_sub - q_own) <= 1e-12 * scale)
    ks = np.array([0, 3, 5])
    cols = np.arange(rows.size)
    assert rel(sub.blocks(ks, r, cols), own.blocks(ks, r, cols)) <= 1e-12
    # prediction reads the same kernel functions
    assert rel(sub.functions.X, own.functions.X) == 0.0


@given(views(), st.sampled_from(["trace", "diagonal", None]))
@settings(max_examples=30)
def test_view_quad_forms_from_features_equal_the_bank_reads(case, normalize):
    X, rows, _ = case
    sub = KernelBank.from_specs(X, SPECS, normalize=None).view(rows, normalize=normalize)
    st_ = sub.storage
    rng = np.random.default_rng(rows.size)
    v = rng.standard_normal(rows.size)
    support = np.sort(rng.choice(rows.size, max(2, rows.size // 2), replace=False))
    ks = np.array([5, 0, 3, 0], dtype=np.int64)  # a subset, repeated, not sorted
    got = {}
    for path in (False, True):
        st_.q_from_features = lambda s, m, path=path: path
        got[path] = st_.quad_forms(v, support, ks)
    own = KernelBank.from_specs(X[rows], SPECS, normalize=normalize, storage="dense")
    scale = np.abs(v[support]).sum() ** 2 * np.abs(own.K).reshape(len(SPECS), -1).max(axis=1)
    assert np.all(np.abs(got[True] - got[False]) <= 1e-12 * scale[ks])
    assert np.all(np.abs(got[True] - own.quad_forms(v, support, ks)) <= 1e-12 * scale[ks])


def test_view_quad_forms_path_follows_the_cost_model():
    X = np.random.default_rng(5).standard_normal((3000, 8))
    bank = KernelBank.from_specs(X, SPECS, normalize=None)
    wide = bank.view(np.arange(0, 3000, 2), normalize="diagonal").storage
    small = bank.view(np.arange(0, 200, 2), normalize="diagonal").storage
    m = len(SPECS)
    # many support points spread over a wide view: the features are cheaper
    assert wide.q_from_features(600, m)
    assert not wide.q_from_features(600, 1)  # one kernel: reading it is cheaper
    assert not small.q_from_features(20, m)  # a few points: the bank's reads stay cheap
    assert not wide.q_from_features(1, m)
    # monotone in the support's size for a fixed view
    picks = [wide.q_from_features(s, m) for s in range(2, 1500, 37)]
    assert picks == sorted(picks)
    # a float32 bank's forms are read, as its rows are
    f32 = KernelBank.from_specs(X, SPECS, normalize=None, dtype=np.float32)
    assert not f32.view(np.arange(0, 3000, 2), normalize="diagonal").storage.q_from_features(
        600, m)
    # a view of user matrices has no features to compute from
    K = np.stack([np.eye(3000)] * 2)
    assert not KernelBank.from_matrices(K).view(np.arange(3000)).storage.q_from_features(
        2000, 2)


def test_view_quad_forms_of_a_numpy_family_read_the_bank():
    from mklopt.kernels import KernelFamily, register_kernel_family

    class Cosine(KernelFamily):
        name = "cosine_views_test"
        params = ()

        def check(self):
            return {}

        def block(self, A, B):
            a = A / np.linalg.norm(A, axis=1, keepdims=True)
            b = B / np.linalg.norm(B, axis=1, keepdims=True)
            return a @ b.T

    cosine = register_kernel_family(Cosine(), replace=True)
    X = np.random.default_rng(6).standard_normal((2000, 4)) + 3.0
    bank = KernelBank.from_specs(X, [cosine(), rbf(1.0)], normalize=None)
    view = bank.view(np.arange(2000), normalize="trace").storage
    assert not view.q_from_features(1500, 2)


def test_view_of_a_float32_bank():
    X = np.random.default_rng(3).standard_normal((50, 4))
    rows = np.arange(1, 50, 3)
    big = KernelBank.from_specs(X, SPECS, normalize=None, storage="dense", dtype=np.float32)
    own = KernelBank.from_specs(X[rows], SPECS, normalize="diagonal", storage="dense",
                                dtype=np.float32)
    w = np.full(len(SPECS), 1.0 / len(SPECS))
    # float32 storage: the stored values round to 2^-24 relative
    assert rel(big.view(rows, normalize="diagonal").combine(w), own.combine(w)) <= 1e-6


def test_view_of_user_matrices_normalises_on_its_points():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((30, 5))
    K = np.stack([A @ A.T, np.exp(-0.1 * ((A[:, None] - A[None]) ** 2).sum(-1))])
    rows = np.arange(0, 30, 2)
    sub = KernelBank.from_matrices(K).view(rows, normalize="trace")
    blk = K[:, rows][:, :, rows]
    want = KernelBank.from_matrices(blk, normalize="trace")
    assert rel(sub.combine([0.4, 0.6]), want.combine([0.4, 0.6])) <= 1e-12


def test_view_bad_input():
    X = np.random.default_rng(0).standard_normal((10, 2))
    bank = KernelBank.from_specs(X, [rbf(1.0)], normalize=None)
    with pytest.raises(ValueError, match="rows"):
        bank.view([0, 10])
    with pytest.raises(ValueError, match="normalize"):
        bank.view([0, 1], normalize="max")
    raw = KernelBank.from_matrices(np.ones((1, 10, 10)), normalize="trace")  # keeps factors
    with pytest.raises(ValueError, match="has no views"):
        raw.view([0, 1])


@pytest.mark.parametrize("normalize", ["trace", "diagonal", None])
def test_view_of_exact_feature_maps_is_the_bank_of_its_points(normalize):
    # Linear and polynomial kernels have exact maps: a view equals a bank of its own.
    X = np.random.default_rng(5).standard_normal((40, 3))
    specs = [linear(), poly(2), linear(features=[1])]
    rows = np.arange(0, 40, 3)
    sub = KernelBank.from_specs(X, specs, normalize=None, storage="feature_map").view(
        rows, normalize=normalize)
    own = KernelBank.from_specs(X[rows], specs, normalize=normalize, storage="dense")
    w = np.array([0.2, 0.5, 0.3])
    assert sub.storage.name == "feature_map"
    assert rel(sub.scales, own.scales) <= 1e-12
    assert rel(sub.combine(w), own.combine(w)) <= 1e-12
    v = np.linspace(-1.0, 1.0, rows.size)
    assert rel(sub.quad_forms(v), own.quad_forms(v)) <= 1e-10


def test_view_of_nystroem_maps_shares_the_maps():
    from mklopt.kernels import nystroem

    X = np.random.default_rng(6).standard_normal((60, 3))
    big = KernelBank.from_specs(X, [rbf(1.0), rbf(3.0)], normalize=None,
                                storage=nystroem(n_components=20))
    rows = np.arange(1, 60, 2)
    sub = big.view(rows, normalize="diagonal")
    assert sub.functions.maps[0] is big.functions.maps[0]  # fitted once, shared
    w = np.array([0.6, 0.4])
    # the view's kernel is the bank's block, each kernel rescaled on the rows
    blocks = big.blocks([0, 1], rows)
    want = sum(w[k] * blocks[k] / (np.trace(blocks[k]) / rows.size) for k in range(2))
    assert rel(sub.combine(w), want) <= 1e-12


# ------------------------------------------------------------ the oracle
@pytest.mark.parametrize("seed", [0, 1])
def test_lazy_combine_gives_the_whole_matrix_answer(seed):
    bank, y = _svm_problem(seed, n=80)
    rows = np.arange(0, 80)
    view = KernelBank.from_specs(bank.functions.X, SPECS, normalize=None).view(rows, "trace")
    lazy = SVMDual(view, y, C=10.0, tol=1e-6)
    whole = SVMDual(view, y, C=10.0, tol=1e-6)
    whole._solver._source = None  # combine the whole matrix first (combine_view)
    w = np.random.default_rng(seed).random(len(SPECS))
    warm = None
    for step in range(3):
        a, b = lazy(w, warm_start=warm), whole(w, warm_start=warm)
        if warm is None:
            # A cold start: the same matrix entries in the same order, so the
            # same iterates.
            assert abs(a.value - b.value) <= 1e-12 * abs(b.value)
            assert np.abs(a.alpha - b.alpha).max() <= 1e-10 * 10.0
            assert abs(a.bias - b.bias) <= 1e-10
        else:
            # Warm starts sum the first gradient in another grouping, which
            # may break a tie differently: agreement to the solver's tolerance.
            assert abs(a.value - b.value) <= 1e-6 * abs(b.value)
            assert abs(a.bias - b.bias) <= 1e-4
        assert rel(a.q, b.q) <= 1e-10
        assert lazy.last_stats.rows_computed <= y.size
        warm = a.alpha
        w = 0.7 * w + 0.3 * np.eye(len(SPECS))[step]


# ------------------------------------------------------------ the estimator
def _fit(shared, X, y, **params):
    clf = MKLClassifier(**params)
    if not shared:
        clf._shares_bank = lambda n_problems: False  # every pair builds its own bank
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.fit(X, y)


@pytest.mark.parametrize("storage", ["auto", "on_the_fly"])
def test_pairs_on_one_bank_give_the_models_of_their_own_banks(storage):
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(0)
    keep = rng.choice(y.size, 300, replace=False)
    X, y = X[keep], y[keep]
    a = _fit(True, X, y, storage=storage)
    b = _fit(False, X, y, storage=storage)
    assert a.weights_.shape == b.weights_.shape == (15, a.n_kernels_)
    # each pair's weights agree to the solver's tolerance (the relative gap)
    assert np.abs(a.weights_ - b.weights_).max() <= 0.05
    assert np.all(a.gap_ <= 1e-2) and np.all(b.gap_ <= 1e-2)
    Xt = datasets.load("satellite")[0][:400]
    assert np.mean(a.predict(Xt) == b.predict(Xt)) >= 0.99
    d = np.abs(a.pairwise_decision_function(Xt) - b.pairwise_decision_function(Xt))
    assert np.median(d) <= 1e-2


def test_pairs_read_the_one_bank_class_by_class(monkeypatch):
    X, y = datasets.load("satellite")
    X, y = X[:240] / 50.0, y[:240]
    specs = [rbf(1.0), rbf(4.0), poly(2)]
    seen = spy_from_specs(monkeypatch)
    kw = dict(kernels=specs, standardize=False, tol=1e-3)
    a = MKLClassifier(**kw).fit(X, y)
    order = np.argsort(np.searchsorted(a.classes_, y), kind="stable")
    assert len(seen) == 1 and np.array_equal(seen[0][0], X[order])  # one bank, class by class
    # The same problems (each pair's points class by class, in the order of X)
    # whatever the order of the classes in X: the same models.
    b = MKLClassifier(**kw).fit(X[order], y[order])
    assert np.array_equal(a.weights_, b.weights_)
    Xt = datasets.load("satellite")[0][240:400] / 50.0
    # (the predictors hold their support vectors in ascending training rows,
    # which differ between the two inputs: sums in another order)
    np.testing.assert_allclose(a.decision_function(Xt), b.decision_function(Xt), rtol=1e-12,
                               atol=1e-12)
    for k in range(len(a.models_)):
        # support_ in ascending training rows, dual_coef_ aligned with it
        assert np.all(np.diff(a.support_[k]) > 0)
        mapped = order[b.support_[k]]
        at = np.argsort(mapped)
        assert np.array_equal(mapped[at], a.support_[k])
        assert np.array_equal(b.dual_coef_[k][at], a.dual_coef_[k])


def test_shared_bank_is_built_once(monkeypatch):
    X, y = datasets.load("satellite")
    X, y = X[:200], y[:200]
    calls = spy_from_specs(monkeypatch)
    clf = _fit(True, X, y)
    assert len(clf.models_) > 1
    # one raw bank; the pairs are views of it
    assert [kw.get("normalize") for _, kw in calls] == [None]
    calls.clear()
    _fit(True, X, np.where(y == y[0], 1, 0))  # two classes: one problem on its own bank
    assert [kw.get("normalize") for _, kw in calls] == ["diagonal"]
    assert issubclass(_MKL, MKLClassifier)


# ------------------------------------------------------------ method="auto"
def test_auto_method_is_level_up_to_the_threshold_then_the_working_set(monkeypatch):
    from mklopt.estimators import mkl as mkl_module
    from mklopt.kernels import random_rbf
    from mklopt.methods import KernelWorkingSet, LevelBundle

    assert mkl_module.resolve_method_name("auto", 2000) == "level"
    assert mkl_module.resolve_method_name("auto", 2001) == "working_set"
    assert mkl_module.resolve_method_name("level", 10**6) == "level"
    assert MKLClassifier().method == "auto"
    X, y = datasets.load("sonar")
    X, y = X[::3], y[::3]
    specs = random_rbf(60, X.shape[1], seed=0)
    for threshold, method, want in ((100, "auto", LevelBundle), (50, "auto", KernelWorkingSet),
                                    (50, "level", LevelBundle)):
        monkeypatch.setattr(mkl_module, "AUTO_WORKING_SET_ABOVE", threshold)
        clf = MKLClassifier(kernels=specs, method=method)
        new = clf._method_factory(specs)()
        assert isinstance(new, want)
    fitted = MKLClassifier(kernels=specs, method="auto").fit(X, y)  # threshold 50: working set
    assert fitted.converged_ and fitted.gap_ <= 1e-2


def test_multiclass_on_one_feature_map_bank():
    # Exact maps (linear, polynomial): pairs on one map bank give their own banks' models.
    X, y = datasets.load("satellite")
    X, y = X[:240], y[:240]
    specs = [linear(), poly(2), linear(features=[0, 1, 2])]
    a = _fit(True, X, y, kernels=specs, storage="feature_map", standardize=True)
    b = _fit(False, X, y, kernels=specs, storage="feature_map", standardize=True)
    assert np.abs(a.weights_ - b.weights_).max() <= 0.05
    assert np.mean(a.predict(X) == b.predict(X)) >= 0.98


def test_shared_multiclass_runs_the_logistic_loss_certified():
    # One weight vector for all pairs under the logistic loss: the run's
    # value is the sum of the pairs' logistic duals at its weights, each
    # solved on its own, and its certified lower bound lies below it.
    from itertools import combinations

    from mklopt.oracles import LogisticDual

    X, y = datasets.load("satellite")
    X, y = X[:90], y[:90]
    specs = [rbf(1.0), rbf(4.0), linear()]
    clf = MKLClassifier(multiclass="shared", loss="logistic", kernels=specs, tol=1e-3,
                        inner_tol=1e-10, normalize="trace", standardize=True).fit(X, y)
    res = clf.result_  # one joint run
    assert res.converged and res.rel_gap <= 1e-3 and res.lower <= res.value
    w = np.asarray(res.weights)
    Xs = (X - X.mean(0)) / X.std(0)
    total = 0.0
    for i, j in combinations(clf.classes_, 2):
        rows = np.flatnonzero(np.isin(y, [i, j]))
        bank = KernelBank.from_specs(Xs[rows], specs, normalize="trace")
        total += LogisticDual(bank, np.where(y[rows] == j, 1.0, -1.0), C=clf.C, tol=1e-10)(w).value
    assert res.value == pytest.approx(total, rel=1e-6)


def test_a_bank_is_viewed_through_its_storage_own_view_verb():
    # KernelBank.view asks the storage (the protocol's verb), whatever its
    # class: a storage of one's own that offers a view is read through it.
    from mklopt.kernels.storage import DenseStorage

    calls = []

    class Counted(DenseStorage):
        name = "counted"

        def view(self, idx, factors, functions=None, normalize=None):
            calls.append(idx.copy())
            return super().view(idx, factors, functions, normalize)

    X = np.random.default_rng(1).normal(size=(12, 2))
    K = KernelBank.from_specs(X, [rbf(1.0), linear()], normalize=None, storage="dense")
    bank = KernelBank(Counted(np.ascontiguousarray(K.storage.K)), None)
    rows = np.array([0, 3, 5, 7])
    sub = bank.view(rows, normalize="trace")
    np.testing.assert_array_equal(calls[0], rows)
    ref = KernelBank.from_matrices([k[np.ix_(rows, rows)] for k in K.storage.K], normalize="trace")
    np.testing.assert_allclose(sub.combine([0.4, 0.6]), ref.combine([0.4, 0.6]), rtol=1e-13)
