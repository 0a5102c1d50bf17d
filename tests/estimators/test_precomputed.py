"""kernels="precomputed": the fits of the same kernels given as matrices, splits, errors."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score

from mklopt import KernelBank, KernelStack, MKLClassifier, MKLClassifierCV, datasets, solve
from mklopt.estimators._precomputed import precomputed_bank
from mklopt.kernels import linear, poly, rbf
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter

SPECS = [rbf(1.0), rbf(8.0), poly(2), linear()]


def _data(name, n, seed=0, n_classes=None):
    X, y = datasets.load(name)
    rng = np.random.default_rng(seed)
    keep = np.arange(X.shape[0])
    if n_classes is not None:
        keep = np.flatnonzero(np.isin(y, np.unique(y)[:n_classes]))
    keep = np.sort(rng.choice(keep, n, replace=False))
    X = X[keep]
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), y[keep]


def _raw_kernels(X, rows=None, cols=None):
    """The raw kernels of SPECS between rows and cols of X, shape (m, len(rows), len(cols))."""
    bank = KernelBank.from_specs(X, SPECS, normalize=None)
    rows = np.arange(X.shape[0]) if rows is None else rows
    cols = rows if cols is None else cols
    return bank.blocks(np.arange(len(SPECS)), rows, cols)


@pytest.fixture(scope="module")
def binary():
    X, y = _data("ionosphere", 160)
    return X, y, _raw_kernels(X)


@pytest.fixture(scope="module")
def three():
    X, y = _data("satellite", 150, seed=2, n_classes=3)
    return X, y, _raw_kernels(X)


@pytest.mark.parametrize("case", ["binary", "three"])
def test_same_model_as_the_specs(case, request):
    X, y, K = request.getfixturevalue(case)
    tr, te = np.arange(0, 120), np.arange(120, X.shape[0])
    # Solved to a relative gap of 1e-8 (the exact step certifies it): the two
    # routes compute the kernels with other roundings, which at the default
    # gap may send Level along other steps to other certified points (5e-6
    # apart under OpenBLAS's Sandybridge kernel); at the optimum they agree.
    pre = MKLClassifier(kernels="precomputed", C=10.0, tol=1e-8).fit(K[:, tr][:, :, tr], y[tr])
    ref = MKLClassifier(kernels=SPECS, C=10.0, tol=1e-8).fit(X[tr], y[tr])
    np.testing.assert_allclose(pre.weights_, ref.weights_, atol=1e-8)
    np.testing.assert_allclose(pre.decision_function(K[:, te][:, :, tr]),
                               ref.decision_function(X[te]), rtol=1e-7, atol=1e-9)
    many = len(pre.models_) > 1
    sup_pre = pre.support_ if many else [pre.support_]
    sup_ref = ref.support_ if many else [ref.support_]
    for s_pre, s_ref in zip(sup_pre, sup_ref, strict=True):
        np.testing.assert_array_equal(s_pre, s_ref)
    assert pre.n_kernels_ == len(SPECS) and pre.n_features_in_ == tr.size


def test_same_as_from_matrices_and_solve(binary):
    X, y, K = binary
    clf = MKLClassifier(kernels="precomputed", C=5.0, method="level", tol=1e-3).fit(K, y)
    bank = KernelBank.from_matrices(K, normalize="diagonal")
    y_pm = np.where(y == clf.classes_[1], 1.0, -1.0)
    res = solve(SVMDual(bank, y_pm, C=5.0, tol=1e-5), LevelBundle(),
                stop=DualityGap(1e-3) | MaxIter(500))
    np.testing.assert_allclose(clf.weights_, res.weights, atol=1e-8)
    assert clf.result_.value == pytest.approx(res.value, rel=1e-9)


def test_memory_map_list_and_stack_inputs(binary, tmp_path):
    X, y, K = binary
    path = tmp_path / "K.npy"
    np.save(path, K)
    mm = np.load(path, mmap_mode="r")
    assert np.may_share_memory(precomputed_bank(mm).K, mm)  # used as it is, not copied
    ref = MKLClassifier(kernels="precomputed").fit(K, y)
    for given in (mm, list(K), KernelStack(mm)):
        got = MKLClassifier(kernels="precomputed").fit(given, y)
        np.testing.assert_allclose(got.weights_, ref.weights_, atol=1e-12)
        np.testing.assert_array_equal(got.predict(given), ref.predict(K))


def test_cross_val_score_splits_a_stack_like_manual_folds(three):
    X, y, K = three
    folds = list(StratifiedKFold(3).split(X, y))
    est = MKLClassifier(kernels="precomputed", C=3.0)
    scores = cross_val_score(est, KernelStack(K), y, cv=folds)
    for (tr, te), score in zip(folds, scores, strict=True):
        fold = MKLClassifier(kernels="precomputed", C=3.0).fit(K[:, tr][:, :, tr], y[tr])
        assert score == fold.score(K[:, te][:, :, tr], y[te])
    gs = GridSearchCV(est, {"C": [0.1, 3.0]}, cv=folds).fit(KernelStack(K), y)
    assert gs.best_params_["C"] in (0.1, 3.0)


def test_cv_estimator_on_precomputed_matches_specs(binary):
    X, y, K = binary
    kw = dict(Cs=[0.1, 1.0, 10.0], cv=3)
    pre = MKLClassifierCV(kernels="precomputed", **kw).fit(K, y)
    ref = MKLClassifierCV(kernels=SPECS, **kw).fit(X, y)
    # The same problems, each point certified to tol = 1e-2 from starts that
    # the kernels' rounding may move (other folds' steps guide each path),
    # so two certified values of one optimum: within tol of each other.
    np.testing.assert_allclose(pre.path_value_, ref.path_value_, rtol=1e-2)
    np.testing.assert_allclose(pre.cv_results_["mean_test_score"],
                               ref.cv_results_["mean_test_score"])
    assert pre.best_C_ == ref.best_C_
    np.testing.assert_array_equal(pre.predict(K), ref.predict(X))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda K: K[0], r"K\[None\]"),
        (lambda K: K[:, :, :-1], "square"),
        (lambda K: K[:, :-1, :-1], "labels"),
        (lambda K: K + np.triu(np.ones_like(K[0]), 1)[None], "X .*not symmetric"),
        (lambda K: K - 3.0 * np.eye(K.shape[1])[None], "X .*positive semi-definite"),
        (lambda K: np.where(np.eye(K.shape[1], dtype=bool)[None], np.nan, K), "NaN"),
        (lambda K: "kernels", "X must be"),
    ],
)
def test_bad_training_kernels(binary, make, match):
    X, y, K = binary
    with pytest.raises((ValueError, TypeError), match=match):
        MKLClassifier(kernels="precomputed").fit(make(K.copy()), y)


def test_bad_test_kernels(binary):
    X, y, K = binary
    clf = MKLClassifier(kernels="precomputed").fit(K, y)
    with pytest.raises(ValueError, match=r"\(4, n_test, 160\)"):
        clf.predict(K[:, :5, :-1])
    with pytest.raises(ValueError, match=r"\(4, n_test, 160\)"):
        clf.predict(K[:2, :5])
    bad = K[:, :5].copy()
    bad[0, 0, :] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        clf.predict(bad)


def test_standardize_is_refused(binary):
    X, y, K = binary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="standardize"):
            MKLClassifier(kernels="precomputed", standardize=True).fit(K, y)
