"""kernels="precomputed" with the other formulations: logistic loss, shared weights, elastic net.

Each fit equals the same problem built by hand from the matrices
(``KernelBank.from_matrices`` and the oracle of the formulation), and the
fit through the kernel specs on the features.
"""

import numpy as np
import pytest

from mklopt import KernelBank, MKLClassifier, MKLClassifierCV, solve
from mklopt.methods import LevelBundle
from mklopt.oracles import CompositeOracle, LogisticDual, SVMDual
from mklopt.stopping import DualityGap, MaxIter

from .test_precomputed import SPECS, _data, _raw_kernels

TOL = 1e-3
INNER = 1e-5  # MKLClassifier's default SMO / logistic tolerance at tol=1e-3


@pytest.fixture(scope="module")
def binary():
    X, y = _data("ionosphere", 120)
    return X, y, _raw_kernels(X)


@pytest.fixture(scope="module")
def three():
    X, y = _data("satellite", 120, seed=2, n_classes=3)
    return X, y, _raw_kernels(X)


def _stop():
    return DualityGap(TOL) | MaxIter(500)


def test_logistic_equals_from_matrices(binary):
    X, y, K = binary
    clf = MKLClassifier(kernels="precomputed", loss="logistic", C=5.0, tol=TOL).fit(K, y)
    bank = KernelBank.from_matrices(K, normalize="diagonal")
    y_pm = np.where(y == clf.classes_[1], 1.0, -1.0)
    res = solve(LogisticDual(bank, y_pm, C=5.0, tol=INNER), LevelBundle(), stop=_stop())
    np.testing.assert_allclose(clf.weights_, res.weights, atol=1e-8)
    assert clf.result_.value == pytest.approx(res.value, rel=1e-9)
    # Every point is a support vector of the logistic model; predictions use them all.
    assert clf.support_.size == y.size
    f = sum(w * K[k] @ (res.alpha * y_pm) / (np.trace(K[k]) / y.size)
            for k, w in enumerate(res.weights)) + res.bias
    np.testing.assert_allclose(clf.decision_function(K), f, rtol=1e-7, atol=1e-9)
    proba = clf.predict_proba(K)
    np.testing.assert_allclose(proba[:, 1], 1.0 / (1.0 + np.exp(-f)), rtol=1e-7)


@pytest.mark.parametrize("kw", [dict(loss="logistic"), dict(multiclass="shared"),
                                dict(elastic_net=0.4)])
def test_same_model_as_the_specs(three, kw):
    X, y, K = three
    tr, te = np.arange(0, 90), np.arange(90, X.shape[0])
    pre = MKLClassifier(kernels="precomputed", C=3.0, tol=TOL, **kw).fit(
        K[:, tr][:, :, tr], y[tr])
    ref = MKLClassifier(kernels=SPECS, C=3.0, tol=TOL, **kw).fit(X[tr], y[tr])
    # The kernels agree to rounding, and a pair starts from its parent
    # pair's weights, so rounding can move a path (not its certificate):
    # the same models to well within the certified tolerance TOL. (The
    # logistic dual's coordinate Newton solver stops at its own tolerance,
    # INNER, on the gradient: two paths that differ by rounding end up to
    # about 1e-4 apart in alpha, and so in the decision values.)
    np.testing.assert_allclose(pre.weights_, ref.weights_, atol=1e-5)
    np.testing.assert_allclose(pre.decision_function(K[:, te][:, :, tr]),
                               ref.decision_function(X[te]), rtol=1e-5, atol=1e-4)
    for s_pre, s_ref in zip(pre.support_, ref.support_, strict=True):
        np.testing.assert_array_equal(s_pre, s_ref)


def test_shared_equals_composite_of_from_matrices(three):
    X, y, K = three
    clf = MKLClassifier(kernels="precomputed", multiclass="shared", C=3.0, tol=TOL).fit(K, y)
    assert clf.weights_.shape == (len(SPECS),)
    parts = []
    for i, j in clf.pairs_:
        rows = np.flatnonzero((y == clf.classes_[i]) | (y == clf.classes_[j]))
        bank = KernelBank.from_matrices(K[:, rows][:, :, rows], normalize="diagonal")
        parts.append(SVMDual(bank, np.where(y[rows] == clf.classes_[j], 1.0, -1.0), C=3.0,
                             tol=INNER))
    res = solve(CompositeOracle(parts), LevelBundle(), stop=_stop())
    # The same steps; the kernels (scaled views against matrices normalised
    # on their own) and so the warm starts' repairs differ by rounding, and
    # each SMO solve stops anywhere within its KKT tolerance INNER: measured
    # 3e-8 apart in the weights and 1.5e-9 (relative) in the value.
    np.testing.assert_allclose(clf.weights_, res.weights, atol=1e-6)
    assert clf.result_.value == pytest.approx(res.value, rel=1e-7)


def test_cv_estimator_with_formulations_on_precomputed(three):
    X, y, K = three
    for kw in (dict(loss="logistic"), dict(multiclass="shared")):
        common = dict(Cs=[0.1, 1.0, 10.0], cv=3, tol=TOL, **kw)
        pre = MKLClassifierCV(kernels="precomputed", **common).fit(K, y)
        ref = MKLClassifierCV(kernels=SPECS, **common).fit(X, y)
        # Same problems, each point certified to TOL from starts the kernels'
        # rounding may move: two certified values of one optimum.
        np.testing.assert_allclose(pre.path_value_, ref.path_value_, rtol=TOL)
        assert pre.best_C_ == ref.best_C_
        np.testing.assert_array_equal(pre.predict(K), ref.predict(X))
