"""The learned kernel of a fitted estimator: ``combined_kernel`` and ``kernel_``.

Checked against the kernels computed from their definition (the specs, the
fit's normalisation and standardisation, the fitted weights:
``tests/_reference.py``), and by use: ``SVC(kernel=est.kernel_)`` on the
training data reproduces the estimator's decision function, on features
and, through the combined matrix, on precomputed kernels.
"""

import pickle

import numpy as np
import pytest
from sklearn.svm import SVC

from mklopt import MKLClassifier
from mklopt.kernels import linear, poly, rbf
from tests._reference import combined, kernel_matrices


def data(seed=0, n=60, n_classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 3.0, 0.5, 2.0] + [0.0, 5.0, -1.0, 0.0]
    score = X[:, 0] + 0.3 * X[:, 1] - X[:, 2] ** 2 + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


SPECS = [rbf(1.0), rbf(4.0), poly(2), linear(features=[0, 2])]


def fit(X, y, **kw):
    kw = {"kernels": SPECS, "C": 3.0, "tol": 1e-6, "weight_threshold": 0.0, **kw}
    return MKLClassifier(**kw).fit(X, y)


def reference_kernel(est, A, B, X_train, pair=0):
    """sum_k w_k raw_k(A, B) / s_k on the fit's standardised features, by definition."""
    mean, scale = est.scaler_mean_, est.scaler_scale_
    std = (lambda Z: Z) if mean is None else (lambda Z: (Z - mean) / scale)
    rows = np.flatnonzero(np.isin(np.searchsorted(est.classes_, np.asarray(est._y_fit)),
                                  est.pairs_[pair]))
    Xp = std(X_train)[rows]
    # normalize="diagonal": each base kernel scaled to a unit mean diagonal on the pair's points
    raw = kernel_matrices(SPECS, Xp, Xp, np.ones(len(SPECS)))
    scales = np.trace(raw, axis1=1, axis2=2) / len(rows)
    w = np.atleast_2d(est.weights_)[min(pair, np.atleast_2d(est.weights_).shape[0] - 1)]
    return combined(SPECS, std(A), std(B), w, scales)


@pytest.mark.parametrize("standardize", [True, False])
def test_combined_kernel_is_the_weighted_sum_of_the_normalised_base_kernels(standardize):
    X, y = data(1)
    est = fit(X, y, standardize=standardize)
    est._y_fit = y
    A, B = X[:7] + 0.1, X[10:15]
    np.testing.assert_allclose(est.combined_kernel(A, B), reference_kernel(est, A, B, X),
                               rtol=1e-10, atol=1e-12)
    K = est.combined_kernel(A)
    np.testing.assert_allclose(K, K.T, atol=1e-13)
    np.testing.assert_allclose(K, reference_kernel(est, A, A, X), rtol=1e-10, atol=1e-12)


def test_svc_on_kernel_reproduces_the_binary_decision():
    X, y = data(2)
    est = fit(X, y, inner_tol=1e-8)
    svc = SVC(kernel=est.kernel_, C=est.C, tol=1e-8).fit(X, y)
    Xt = data(3, n=25)[0]
    np.testing.assert_allclose(svc.decision_function(Xt), est.decision_function(Xt),
                               atol=1e-4 * np.abs(est.decision_function(Xt)).max())
    assert np.array_equal(svc.predict(Xt), est.predict(Xt))
    # the callable travels with a pickled SVC
    again = pickle.loads(pickle.dumps(svc))
    np.testing.assert_allclose(again.decision_function(Xt), svc.decision_function(Xt))


def test_one_vs_one_pairs_and_their_mean():
    X, y = data(4, n=75, n_classes=3)
    est = fit(X, y, inner_tol=1e-8)
    est._y_fit = y
    A = X[:9]
    per_pair = [est.combined_kernel(A, X, pair=p) for p in range(len(est.pairs_))]
    for p, K in enumerate(per_pair):
        np.testing.assert_allclose(K, reference_kernel(est, A, X, X, pair=p), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(est.combined_kernel(A, X), np.mean(per_pair, axis=0),
                               rtol=1e-12)
    # a pair's kernel reproduces that pair's decision on its own classes
    i, j = est.pairs_[1]
    rows = np.isin(y, est.classes_[[i, j]])
    svc = SVC(kernel=lambda a, b: est.combined_kernel(a, b, pair=1), C=est.C, tol=1e-8)
    svc.fit(X[rows], y[rows])
    np.testing.assert_allclose(svc.decision_function(A), est.pairwise_decision_function(A)[:, 1],
                               atol=1e-4)
    with pytest.raises(ValueError, match=r"pair must lie in \[0, 3\)"):
        est.combined_kernel(A, pair=3)
    with pytest.raises(TypeError, match="pair must be None or an int"):
        est.combined_kernel(A, pair=1.0)


def test_precomputed_combined_kernel_reproduces_the_decision():
    X, y = data(5)
    Xs = (X - X.mean(0)) / X.std(0)
    K = kernel_matrices(SPECS, Xs, Xs, np.ones(len(SPECS)))
    est = MKLClassifier(kernels="precomputed", C=3.0, tol=1e-6, inner_tol=1e-8,
                        weight_threshold=0.0).fit(K, y)
    Kw = est.combined_kernel(K)
    svc = SVC(kernel="precomputed", C=3.0, tol=1e-8).fit(Kw, y)
    Kt = kernel_matrices(SPECS, Xs[:12] * 0.9, Xs, np.ones(len(SPECS)))
    np.testing.assert_allclose(svc.decision_function(est.combined_kernel(Kt)),
                               est.decision_function(Kt), atol=1e-4)
    with pytest.raises(ValueError, match="no Y"):
        est.combined_kernel(K, K)
    with pytest.raises(AttributeError, match="precomputed"):
        est.kernel_  # noqa: B018


def test_unfitted_estimator_has_no_kernel():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MKLClassifier().combined_kernel(np.ones((2, 2)))
    assert not hasattr(MKLClassifier(), "kernel_")
