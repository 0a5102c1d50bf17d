"""MKLRegressorCV: the choice of GridSearchCV(MKLRegressor), a certified warm-started path."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold

from mklopt import MKLRegressor, MKLRegressorCV
from mklopt.kernels import linear, poly, rbf

SPECS = [rbf(0.5), rbf(2.0), poly(2), linear()]
CS = [0.1, 1.0, 10.0, 100.0]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (150, 3))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(150)
    return X, y


def test_same_choice_and_scores_as_grid_search(data):
    X, y = data
    folds = list(KFold(3).split(X))
    kw = dict(kernels=SPECS, standardize=False, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLRegressorCV(formulations=None, Cs=CS, cv=folds, **kw).fit(X, y)
        gs = GridSearchCV(MKLRegressor(**kw), {"C": CS}, cv=folds).fit(X, y)
    # Two certified solutions of the same fold problem predict almost alike.
    for k in range(3):
        np.testing.assert_allclose(cv.cv_results_[f"split{k}_test_score"],
                                   gs.cv_results_[f"split{k}_test_score"], atol=0.01)
    assert cv.best_C_ == gs.best_params_["C"]
    assert cv.best_estimator_.C == cv.best_C_
    np.testing.assert_allclose(cv.predict(X), cv.best_estimator_.predict(X))


def test_path_certified_and_equal_to_cold_fits(data):
    X, y = data
    tol = 1e-3
    folds = list(KFold(3).split(X))
    cv = MKLRegressorCV(formulations=None, Cs=CS, cv=folds, kernels=SPECS, standardize=False, tol=tol).fit(X, y)
    assert cv.path_converged_.all() and np.all(cv.path_rel_gap_ <= tol)
    train = folds[1][0]
    for c, C in enumerate(CS):
        cold = MKLRegressor(kernels=SPECS, standardize=False, tol=tol, C=C).fit(X[train],
                                                                             y[train])
        J_path, J_cold = cv.path_value_[1, c, 0], cold.result_.value
        assert abs(J_path - J_cold) <= 1.05 * tol * max(abs(J_path), abs(J_cold))


def test_bad_cs(data):
    X, y = data
    with pytest.raises(ValueError, match="Cs"):
        MKLRegressorCV(Cs=0, kernels=SPECS).fit(X, y)
