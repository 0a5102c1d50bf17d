"""``class_weight`` and ``fit(sample_weight=)`` on the estimators.

The weighted fit is the MKL problem with the box ``C_i = C s_i c_{y_i}``:
checked against libsvm on the fit's own combined kernel
(``SVC(kernel="precomputed", class_weight=...)`` and
``SVC().fit(sample_weight=...)``), against the same fit with ``C`` doubled,
with duplicated samples and with the zero-weight samples removed, and on
bad weights. ``normalize=None`` and ``standardize=False`` where samples
are duplicated or dropped: the normalisation and the standardisation are
statistics of the training points, which duplication changes.
"""

import numpy as np
import pytest
from sklearn.svm import SVC, SVR

from mklopt import MKLClassifier, MKLClassifierCV, MKLOneClass, MKLRegressor
from mklopt.kernels import linear, poly, rbf

SPECS = [rbf(0.7), rbf(3.0), poly(2), linear()]
TIGHT = dict(tol=1e-7, inner_tol=1e-9, weight_threshold=0.0)


def data(seed=0, n=70, n_classes=2, imbalance=0.25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    score = X[:, 0] + 0.6 * X[:, 1] ** 2 + 0.5 * rng.normal(size=n)
    if n_classes == 2:
        y = (score > np.quantile(score, 1 - imbalance)).astype(int)
    else:
        y = np.digitize(score, np.quantile(score, [0.5, 0.8]))
    return X, np.array(["neg", "pos", "mid"])[y] if n_classes == 3 else y


def test_balanced_matches_svc_on_the_combined_kernel():
    X, y = data(1)
    est = MKLClassifier(kernels=SPECS, C=2.0, class_weight="balanced", **TIGHT).fit(X, y)
    K = est.combined_kernel(X, X)
    ref = SVC(kernel="precomputed", C=2.0, class_weight="balanced", tol=1e-9).fit(K, y)
    Xt = data(2, n=30)[0]
    d = est.decision_function(Xt)
    np.testing.assert_allclose(ref.decision_function(est.combined_kernel(Xt, X)), d,
                               atol=1e-4 * np.abs(d).max())
    # the weighting matters here: unweighted is another model
    plain = MKLClassifier(kernels=SPECS, C=2.0, **TIGHT).fit(X, y)
    assert np.abs(plain.decision_function(Xt) - d).max() > 1e-2


def test_class_weight_dict_and_sample_weight_match_svc_multiclass():
    X, y = data(3, n=90, n_classes=3)
    s = np.random.default_rng(0).uniform(0.3, 2.0, size=len(y))
    cw = {"neg": 0.5, "pos": 3.0}
    # shared weights and no normalisation: every pair reads the same kernel,
    # the one SVC(kernel="precomputed") uses for all of its pairs
    est = MKLClassifier(kernels=SPECS, C=1.5, class_weight=cw, multiclass="shared",
                        normalize=None, **TIGHT).fit(X, y, sample_weight=s)
    K = est.combined_kernel(X, X)
    ref = SVC(kernel="precomputed", C=1.5, class_weight=cw, tol=1e-9,
              decision_function_shape="ovo").fit(K, y, sample_weight=s)
    Xt = data(4, n=30, n_classes=3)[0]
    # scikit-learn's pair (i, j) favours class i, ours class j
    np.testing.assert_allclose(-ref.decision_function(est.combined_kernel(Xt, X)),
                               est.pairwise_decision_function(Xt), atol=1e-4)


def test_sample_weight_two_is_C_doubled():
    X, y = data(5)
    a = MKLClassifier(kernels=SPECS, C=1.0, tol=1e-4).fit(X, y, sample_weight=np.full(len(y), 2.0))
    b = MKLClassifier(kernels=SPECS, C=2.0, tol=1e-4).fit(X, y)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-10)
    c = MKLClassifier(kernels=SPECS, C=1.0, tol=1e-4).fit(X, y, sample_weight=2)  # a scalar
    np.testing.assert_allclose(c.decision_function(X), b.decision_function(X), atol=1e-10)


def test_integer_weights_equal_duplicated_samples():
    X, y = data(6, n=50)
    k = np.random.default_rng(1).integers(1, 4, size=len(y))
    rep = np.repeat(np.arange(len(y)), k)
    opts = dict(kernels=SPECS, C=1.0, normalize=None, standardize=False, **TIGHT)
    a = MKLClassifier(**opts).fit(X, y, sample_weight=k)
    b = MKLClassifier(**opts).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.weights_, b.weights_, atol=2e-4)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-4)


@pytest.mark.parametrize("multiclass", ["ovo", "shared"])
def test_zero_weights_drop_samples(multiclass):
    X, y = data(7, n=75, n_classes=3)
    s = np.ones(len(y))
    s[::4] = 0.0
    keep = s > 0
    opts = dict(kernels=SPECS, C=1.0, normalize=None, standardize=False,
                multiclass=multiclass, **TIGHT)
    a = MKLClassifier(**opts).fit(X, y, sample_weight=s)
    b = MKLClassifier(**opts).fit(X[keep], y[keep])
    np.testing.assert_allclose(a.weights_, b.weights_, atol=2e-4)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=2e-4)
    for sv in (a.support_ if isinstance(a.support_, list) else [a.support_]):
        assert keep[sv].all()


def test_regressor_sample_weight_matches_svr_on_the_combined_kernel():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 3))
    t = np.sin(X[:, 0]) + 0.3 * X[:, 1]
    s = rng.uniform(0.0, 3.0, size=60)
    est = MKLRegressor(kernels=SPECS, C=2.0, epsilon=0.05, standardize=False, tol=1e-7,
                       inner_tol=1e-9, weight_threshold=0.0).fit(X, t, sample_weight=s)
    K = est.combined_kernel(X, X)
    ref = SVR(kernel="precomputed", C=2.0, epsilon=0.05, tol=1e-9).fit(K, t, sample_weight=s)
    beta = np.zeros(60)
    beta[np.flatnonzero(s > 0)[ref.support_]] = ref.dual_coef_[0]  # libsvm drops weight 0
    Xt = rng.normal(size=(20, 3))
    np.testing.assert_allclose(est.predict(Xt),
                               est.combined_kernel(Xt, X) @ beta + ref.intercept_[0], atol=1e-4)


def test_one_class_sample_weight_scales_away_and_zero_drops():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(60, 2))
    s = rng.uniform(0.5, 2.0, size=60)
    s[:6] = 0.0
    opts = dict(kernels=SPECS[:2], nu=0.3, normalize=None, standardize=False, **TIGHT)
    a = MKLOneClass(**opts).fit(X, sample_weight=s)
    b = MKLOneClass(**opts).fit(X, sample_weight=5.0 * s)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)
    c = MKLOneClass(**opts).fit(X[6:], sample_weight=s[6:])
    np.testing.assert_allclose(a.decision_function(X), c.decision_function(X), atol=1e-5)


@pytest.mark.parametrize("make, sw, err, match", [
    (lambda: MKLClassifier(kernels=SPECS), [-1.0] + [1.0] * 69, ValueError,
     "sample_weight must be >= 0"),
    (lambda: MKLClassifier(kernels=SPECS), np.ones(69), ValueError,
     r"sample_weight must have one weight per sample, shape \(70,\)"),
    (lambda: MKLClassifier(kernels=SPECS), [np.nan] + [1.0] * 69, ValueError,
     "sample_weight contains NaN"),
    (lambda: MKLClassifier(kernels=SPECS, class_weight="balance"), None, ValueError,
     "class_weight"),
    (lambda: MKLClassifier(kernels=SPECS, class_weight={0: -1.0}), None, ValueError,
     r"class_weight\[0\] must be a finite number >= 0"),
    (lambda: MKLClassifier(kernels=SPECS, loss="logistic"), np.ones(70), ValueError,
     "loss='logistic' takes no per-sample weights"),
    (lambda: MKLClassifierCV(kernels=SPECS, Cs=[1.0]), np.ones(69), ValueError,
     "sample_weight must have one weight per sample"),
])
def test_bad_weights_are_refused_naming_the_argument(make, sw, err, match):
    X, y = data(10)
    with pytest.raises(err, match=match):
        make().fit(X, y, sample_weight=sw)


def test_cv_search_and_refit_take_the_weights():
    X, y = data(11, n=60)
    a = MKLClassifierCV(kernels=SPECS, Cs=[0.5, 4.0], cv=3, tol=1e-4).fit(
        X, y, sample_weight=np.full(len(y), 2.0))
    b = MKLClassifierCV(kernels=SPECS, Cs=[1.0, 8.0], cv=3, tol=1e-4).fit(X, y)
    np.testing.assert_allclose(a.cv_results_["mean_test_score"],
                               b.cv_results_["mean_test_score"], atol=1e-12)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-8)
    c = MKLClassifierCV(kernels=SPECS, Cs=[0.5, 4.0], cv=3, tol=1e-4,
                        class_weight="balanced").fit(X, y)
    assert c.best_estimator_.class_weight == "balanced"
