"""MKLRegressor(loss="squared") and MKLClassifier(loss="logistic"): scikit-learn, gaps, saving."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

from mklopt import MKLClassifier, MKLRegressor
from mklopt.kernels import linear, poly, rbf
from mklopt.persist import load_model, save_model


def data(seed, n=60, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    t = X @ np.array([1.0, -0.5, 0.0, 0.3]) + 0.2 * rng.normal(size=n) + 2.0
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.7 * rng.normal(size=n) > 0, 1, 0)
    return X, t, y


RAW = dict(kernels=[linear()], normalize=None, standardize=False)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_squared_loss_regressor_is_ridge_on_a_linear_kernel(C):
    X, t, _ = data(0)
    reg = MKLRegressor(loss="squared", C=C, **RAW).fit(X, t)
    ref = Ridge(alpha=1.0 / C, fit_intercept=True).fit(X, t)
    # exact on both sides: rounding only
    np.testing.assert_allclose(reg.predict(X), ref.predict(X), rtol=0, atol=1e-9)
    assert reg.intercept_[0] == pytest.approx(ref.intercept_, abs=1e-9)
    assert reg.converged_


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_logistic_classifier_is_logistic_regression_on_a_linear_kernel(C):
    X, _, y = data(1)
    clf = MKLClassifier(loss="logistic", C=C, inner_tol=1e-12, **RAW).fit(X, y)
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X),
                               rtol=0, atol=1e-5)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(clf.predict(X), ref.predict(X))
    assert clf.predict_proba(X).sum(1) == pytest.approx(1.0)


def test_mkl_runs_with_the_new_losses_are_certified():
    X, t, y = data(2, n=80)
    specs = [rbf(1.0), rbf(3.0), poly(2), linear()]
    reg = MKLRegressor(kernels=specs, loss="squared", tol=1e-3).fit(X, t)
    assert reg.converged_ and 0.0 <= reg.gap_ <= 1e-3
    clf = MKLClassifier(kernels=specs, loss="logistic", tol=1e-3).fit(X, y)
    assert clf.converged_ and 0.0 <= clf.gap_ <= 1e-3
    assert clf.score(X, y) > 0.7
    # the hinge model of the same data has fewer support vectors than points
    hinge = MKLClassifier(kernels=specs, tol=1e-3).fit(X, y)
    assert len(hinge.support_) < len(clf.support_) == len(y)


def test_tight_tol_runs_level_alone_for_the_logistic_loss():
    # below tol = 1e-4 the hinge classifier chains Level with the SVM's exact
    # active-set step; the logistic dual is no QP, so Level certifies alone
    X, t, y = data(7, n=50)
    specs = [rbf(1.0), poly(2)]
    clf = MKLClassifier(kernels=specs, loss="logistic", tol=1e-5).fit(X, y)
    assert clf.converged_ and clf.gap_ <= 1e-5
    reg = MKLRegressor(kernels=specs, loss="squared", tol=1e-6).fit(X, t)
    assert reg.converged_ and reg.gap_ <= 1e-6


def test_default_losses_are_unchanged():
    assert MKLRegressor().loss == "epsilon_insensitive"
    assert MKLClassifier().loss == "hinge"
    X, t, y = data(3, n=40)
    a = MKLRegressor(kernels=[rbf(1.0), poly(2)]).fit(X, t)
    b = MKLRegressor(kernels=[rbf(1.0), poly(2)], loss="epsilon_insensitive").fit(X, t)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_predict_proba_only_where_it_means_something():
    X, _, y = data(4, n=45)
    assert not hasattr(MKLClassifier(), "predict_proba")
    assert hasattr(MKLClassifier(loss="logistic"), "predict_proba")
    y3 = np.arange(45) % 3
    clf = MKLClassifier(kernels=[rbf(1.0)], loss="logistic").fit(X, y3)
    assert clf.predict(X).shape == (45,)  # one-vs-one votes work
    with pytest.raises(ValueError, match="supports two classes.*Fit with probability=True"):
        clf.predict_proba(X)
    # labels other than -1/+1 keep their order: column 1 is classes_[1]
    clf = MKLClassifier(kernels=[rbf(1.0)], loss="logistic").fit(X, np.where(y > 0, "b", "a"))
    p = clf.predict_proba(X)
    np.testing.assert_array_equal(clf.classes_[np.argmax(p, 1)], clf.predict(X))


def test_bad_loss_names_the_argument():
    X, t, y = data(5, n=20)
    with pytest.raises(ValueError, match="loss must name an oracle registered for the regression task "
                       r"\('epsilon_insensitive', 'squared'.*got 'huber'"):
        MKLRegressor(loss="huber").fit(X, t)
    with pytest.raises(ValueError, match="loss must name an oracle registered for the classification "
                       r"task \('hinge', 'logistic'.*got 'squared'"):
        MKLClassifier(kernels=[rbf(1.0)], loss="squared").fit(X, y)


def test_saved_models_keep_the_loss(tmp_path):
    X, t, y = data(6, n=40)
    clf = MKLClassifier(kernels=[rbf(1.0), poly(2)], loss="logistic").fit(X, y)
    save_model(clf, tmp_path / "clf.npz")
    back, _ = load_model(tmp_path / "clf.npz")
    assert back.loss == "logistic"
    np.testing.assert_allclose(back.predict_proba(X), clf.predict_proba(X), rtol=1e-12)
    reg = MKLRegressor(kernels=[rbf(1.0), poly(2)], loss="squared").fit(X, t)
    save_model(reg, tmp_path / "reg.npz")
    back, _ = load_model(tmp_path / "reg.npz")
    assert back.loss == "squared"
    np.testing.assert_allclose(back.predict(X), reg.predict(X), rtol=1e-12)
