"""Platt scaling and pairwise coupling (``mklopt.estimators._probability``) against references.

The sigmoid fit is checked against an independent minimiser of the same
smoothed likelihood (scipy), and the sigmoid plus coupling against libsvm
itself: scikit-learn's ``SVC(probability=True)`` exposes its pairs'
sigmoids (``probA_``, ``probB_``) and one-vs-one decision values, from which
our functions must give its ``predict_proba``.
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import make_classification
from sklearn.svm import SVC

from mklopt.estimators._probability import (
    cv_decision_values,
    cv_folds,
    pair_probabilities,
    pairwise_coupling,
    sigmoid_predict,
    sigmoid_train,
)

# scikit-learn 1.9 deprecates SVC(probability=True), the reference here
pytestmark = pytest.mark.filterwarnings("ignore:.*probability.*:FutureWarning")


def smoothed_nll(theta, f, y):
    n1 = np.sum(y > 0)
    n0 = y.size - n1
    t = np.where(y > 0, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))
    p = 1.0 / (1.0 + np.exp(theta[0] * f + theta[1]))
    return -np.sum(t * np.log(p) + (1 - t) * np.log1p(-p))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sigmoid_train_minimises_platts_smoothed_likelihood(seed):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(80) < 0.4, 1, -1)
    f = 1.5 * y + rng.normal(scale=1.2, size=80)
    A, B = sigmoid_train(f, y)
    ref = minimize(smoothed_nll, [0.0, 0.0], args=(f, y), method="BFGS",
                   options={"gtol": 1e-10}).x
    np.testing.assert_allclose([A, B], ref, rtol=1e-4, atol=1e-5)


def test_sigmoid_train_stays_finite_on_separable_values():
    # separable values: without the smoothed targets A would run to -inf
    f = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
    A, B = sigmoid_train(f, np.sign(f))
    assert np.isfinite(A) and np.isfinite(B) and A < 0
    p = sigmoid_predict(f, A, B)
    assert np.all((p > 0) & (p < 1)) and np.all(np.diff(p) > 0)


@pytest.mark.parametrize("n_classes", [2, 3, 4])
def test_libsvm_probabilities_from_its_sigmoids_and_decisions(n_classes):
    X, y = make_classification(n_samples=160, n_features=6, n_informative=4,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=3)
    ref = SVC(probability=True, decision_function_shape="ovo", random_state=0).fit(X, y)
    d = ref.decision_function(X).reshape(len(X), -1)
    pairs = np.array([(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)])
    if n_classes == 2:
        d = -d  # scikit-learn negates libsvm's binary decision (to favour classes_[1])
    # libsvm's pair (i, j) decision favours i; ours favours j: negate f, and B
    sig = np.column_stack([ref.probA_, -ref.probB_])
    P = pair_probabilities(-d, sig, pairs, n_classes)
    # libsvm stops its coupling iteration at 0.005 / k (two classes included);
    # ours solves it exactly
    np.testing.assert_allclose(P, ref.predict_proba(X), atol=0.005)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_coupling_is_exact_on_consistent_pairwise_probabilities():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(4), size=30)
    r = p[:, :, None] / (p[:, :, None] + p[:, None, :])  # r_ij = p_i / (p_i + p_j)
    np.testing.assert_allclose(pairwise_coupling(r), p, atol=1e-12)


def test_two_class_coupling_is_the_pairs_sigmoid():
    d = np.linspace(-3, 3, 11)[:, None]
    P = pair_probabilities(d, np.array([[-2.0, 0.3]]), np.array([[0, 1]]), 2)
    np.testing.assert_allclose(P[:, 1], sigmoid_predict(d[:, 0], -2.0, 0.3))
    np.testing.assert_allclose(P.sum(axis=1), 1.0)


def test_folds_partition_and_one_class_folds_get_the_class_decision():
    folds = cv_folds(23, np.random.default_rng(0))
    assert len(folds) == 5
    assert sorted(np.concatenate(folds).tolist()) == list(range(23))
    assert [f.size for f in folds] == [4, 5, 4, 5, 5]  # i * n // 5 cuts
    y = np.array([1.0] * 5 + [-1.0] * 5)
    calls = []

    def fit_predict(train, test):
        calls.append(train)
        return np.full(test.size, 7.0)

    dec = cv_decision_values(y, fit_predict, [np.arange(5), np.arange(5, 10)])
    # each training part holds one class only: libsvm's constant decisions
    assert dec.tolist() == [-1.0] * 5 + [1.0] * 5 and calls == []
    dec = cv_decision_values(y, fit_predict, [np.array([0, 5]), np.arange(1, 5),
                                              np.arange(6, 10)])
    assert dec.tolist() == [7.0] * 10 and len(calls) == 3
