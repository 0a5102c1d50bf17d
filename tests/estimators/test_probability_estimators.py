"""``probability=True``: Platt scaling on internal 5-fold CV and pairwise coupling.

Against libsvm on the fit's own combined kernel: ``SVC(kernel="precomputed",
probability=True)`` (its own random folds, so the sigmoids differ by the
split's noise): the test log-loss and Brier score agree within 5 %.
"""

import warnings

import numpy as np
import pytest
from sklearn.metrics import log_loss
from sklearn.svm import SVC

from mklopt import MKLClassifier, MKLClassifierCV
from mklopt.kernels import linear, rbf

pytestmark = pytest.mark.filterwarnings("ignore:.*probability.*:FutureWarning")

SPECS = [rbf(0.7), rbf(3.0), linear()]


def data(seed, n, n_classes):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=1.6, size=(n_classes, 3))
    y = rng.integers(0, n_classes, size=n)
    X = centres[y] + rng.normal(size=(n, 3))
    return X, y


def multi_brier(y, P, classes):
    onehot = (y[:, None] == classes[None, :]).astype(float)
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))


@pytest.mark.parametrize("n_classes", [2, 3, 4])
def test_log_loss_and_brier_within_five_percent_of_svc(n_classes):
    Xa, ya = data(n_classes, 800, n_classes)  # one distribution, split in two
    X, y, Xt, yt = Xa[:400], ya[:400], Xa[400:], ya[400:]
    est = MKLClassifier(kernels=SPECS, C=1.0, probability=True, random_state=0,
                        multiclass="shared", normalize=None, tol=1e-4).fit(X, y)
    P = est.predict_proba(Xt)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert P.shape == (len(yt), n_classes) and np.all(P >= 0)
    losses, briers = [], []
    for seed in range(3):  # libsvm's folds are random too: the mean of three splits
        ref = SVC(kernel="precomputed", C=1.0, probability=True, random_state=seed)
        ref.fit(est.combined_kernel(X, X), y)
        Pr = ref.predict_proba(est.combined_kernel(Xt, X))
        losses.append(log_loss(yt, Pr))
        briers.append(multi_brier(yt, Pr, ref.classes_))
    assert log_loss(yt, P) == pytest.approx(np.mean(losses), rel=0.05)
    assert multi_brier(yt, P, est.classes_) == pytest.approx(np.mean(briers), rel=0.05)
    np.testing.assert_allclose(est.predict_log_proba(Xt), np.log(P))


def test_random_state_fixes_the_folds():
    X, y = data(7, 120, 3)
    fit = lambda rs: MKLClassifier(kernels=SPECS, probability=True, random_state=rs).fit(X, y)  # noqa: E731
    a, b, c = fit(1), fit(1), fit(2)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert np.abs(a.predict_proba(X) - c.predict_proba(X)).max() > 0


def test_probabilities_exist_only_when_asked_for():
    X, y = data(8, 60, 2)
    plain = MKLClassifier(kernels=SPECS).fit(X, y)
    assert not hasattr(plain, "predict_proba") and not hasattr(plain, "predict_log_proba")
    logistic = MKLClassifier(kernels=SPECS, loss="logistic").fit(X, y)
    native = logistic.predict_proba(X)
    # the logistic loss keeps its own probabilities for two classes
    both = MKLClassifier(kernels=SPECS, loss="logistic", probability=True).fit(X, y)
    np.testing.assert_allclose(both.predict_proba(X), native, atol=1e-12)
    d = logistic.decision_function(X)
    np.testing.assert_allclose(native[:, 1], 1.0 / (1.0 + np.exp(-d)))


def test_logistic_multiclass_probabilities_by_coupling():
    X, y = data(9, 90, 3)
    est = MKLClassifier(kernels=SPECS, loss="logistic", probability=True, random_state=0)
    P = est.fit(X, y).predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(est.classes_[P.argmax(1)] == y) > 0.7


def test_cv_estimator_refits_with_probabilities():
    X, y = data(10, 90, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MKLClassifierCV(kernels=SPECS, Cs=[0.5, 5.0], cv=3, probability=True,
                              random_state=0).fit(X, y)
    P = est.predict_proba(X)
    np.testing.assert_array_equal(P, est.best_estimator_.predict_proba(X))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_saved_model_keeps_its_sigmoids_and_class_weight(tmp_path):
    from mklopt.persist import load_model, save_model

    X, y = data(11, 90, 3)
    est = MKLClassifier(kernels=SPECS, probability=True, random_state=0,
                        class_weight={0: 2.0, 2: 0.5}).fit(X, y)
    save_model(est, tmp_path / "m.npz")
    back, _ = load_model(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))
    assert back.class_weight == {0: 2.0, 2: 0.5} and back.probability
    # a refit of the loaded parameters is the same model
    np.testing.assert_allclose(back.fit(X, y).predict_proba(X), est.predict_proba(X),
                               atol=1e-10)
