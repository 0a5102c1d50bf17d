"""The CV estimators run the estimators' formulations: loss, multiclass, elastic_net, time_limit.

Each is checked against ``GridSearchCV`` over the same estimator options on
the same folds (same C wherever the scores differ by more than the margin
of two certified solutions), its path points against cold fits at the same
C (a wrong warm start or an invalid cut would certify a point that is not
within ``tol`` of the optimum), and its refit against a direct fit.
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from mklopt import MKLClassifier, MKLClassifierCV, MKLRegressor, MKLRegressorCV, datasets
from mklopt.kernels import linear, poly, rbf
from mklopt.oracles import ConvergenceWarning
from mklopt.stopping import NoPointError

from .test_mkl_cv import _assert_same_choice

SPECS = [rbf(1.0), rbf(8.0), rbf(64.0), poly(2), linear()]
CS = [0.1, 1.0, 10.0, 100.0]
TOL = 1e-3


def _standardised(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


@pytest.fixture(scope="module")
def binary():
    X, y = datasets.load("ionosphere")
    keep = np.sort(np.random.default_rng(0).choice(X.shape[0], 120, replace=False))
    return _standardised(X[keep]), y[keep]


@pytest.fixture(scope="module")
def three_classes():
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(1)
    keep = np.flatnonzero(np.isin(y, np.unique(y)[:3]))
    keep = np.sort(rng.choice(keep, 120, replace=False))
    return _standardised(X[keep]), y[keep]


def _cv_and_grid(X, y, **kw):
    folds = list(StratifiedKFold(3).split(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLClassifierCV(formulations=None, Cs=CS, cv=folds, kernels=SPECS, tol=TOL, **kw).fit(X, y)
        gs = GridSearchCV(MKLClassifier(kernels=SPECS, tol=TOL, **kw), {"C": CS},
                          cv=folds).fit(X, y)
    return cv, gs, folds


def _assert_refit_is_direct_fit(cv, X, y, **kw):
    direct = MKLClassifier(kernels=SPECS, tol=TOL, C=cv.best_C_, **kw).fit(X, y)
    for name, value in kw.items():
        assert getattr(cv.best_estimator_, name) == value
    np.testing.assert_allclose(cv.best_estimator_.weights_, direct.weights_, atol=1e-12)
    np.testing.assert_allclose(cv.decision_function(X), direct.decision_function(X),
                               atol=1e-10)


def _assert_path_matches_cold_fits(cv, X, y, folds, fold=0, **kw):
    """Every point certified to tol and within tol of a cold fit's optimum at its C."""
    assert cv.path_converged_.all() and np.all(cv.path_rel_gap_ <= TOL)
    train = folds[fold][0]
    for c, C in enumerate(CS):
        cold = MKLClassifier(kernels=SPECS, C=C, tol=TOL * 1e-2, **kw).fit(X[train], y[train])
        values = np.atleast_1d(cold.result_.value if not isinstance(cold.result_, list)
                               else [r.value for r in cold.result_])
        J_path = cv.path_value_[fold, c]
        assert np.all(J_path >= values * (1.0 - 1.1e-5))  # the cold optimum to 1e-5
        assert np.all(J_path - values <= 1.05 * TOL * np.abs(J_path))


def test_logistic_loss(binary):
    X, y = binary
    cv, gs, folds = _cv_and_grid(X, y, loss="logistic")
    _assert_same_choice(cv, gs, folds)
    _assert_refit_is_direct_fit(cv, X, y, loss="logistic")
    # The model's own probabilities come from the logistic refit.
    assert cv.best_estimator_.predict_proba(X[:3]).shape == (3, 2)
    _assert_path_matches_cold_fits(cv, X, y, folds, loss="logistic")


def test_refit_reads_the_one_bank_and_equals_a_direct_fit(three_classes):
    X, y = three_classes
    cv = MKLClassifierCV(formulations=None, Cs=CS[:2], cv=3, kernels=SPECS, tol=TOL).fit(X, y)
    _assert_refit_is_direct_fit(cv, X, y)
    assert not hasattr(cv.best_estimator_, "_given_bank")


def test_shared_multiclass(three_classes):
    X, y = three_classes
    cv, gs, folds = _cv_and_grid(X, y, multiclass="shared")
    assert cv.path_rel_gap_.shape == (3, len(CS), 1)  # one joint problem per fold
    _assert_same_choice(cv, gs, folds)
    _assert_refit_is_direct_fit(cv, X, y, multiclass="shared")
    _assert_path_matches_cold_fits(cv, X, y, folds, multiclass="shared")


def test_elastic_net(binary):
    X, y = binary
    cv, gs, folds = _cv_and_grid(X, y, elastic_net=0.3)
    _assert_same_choice(cv, gs, folds)
    _assert_refit_is_direct_fit(cv, X, y, elastic_net=0.3)
    _assert_path_matches_cold_fits(cv, X, y, folds, elastic_net=0.3)


def test_time_limit_bounds_each_point(binary):
    X, y = binary
    # A limit far below one oracle call: the first point's first call is
    # stopped inside, so there is no certified point to score the fold by.
    with pytest.raises(NoPointError, match="time_limit"):
        MKLClassifierCV(Cs=CS[:2], cv=3, kernels=SPECS, tol=1e-8, max_iter=10_000,
                        time_limit=1e-6).fit(X, y)
    # A limit each point's first call fits in, but not a gap of 1e-15 (rounding level).
    with pytest.warns(UserWarning, match="did not reach"):
        cv = MKLClassifierCV(Cs=CS[:2], cv=3, kernels=SPECS, tol=1e-15, max_iter=10**9,
                             inner_tol=1e-14, time_limit=0.3).fit(X, y)
    assert not cv.path_converged_.all()
    assert cv.best_estimator_.time_limit == 0.3


@pytest.mark.parametrize("params, error, match", [
    (dict(loss="squared"), ValueError, "loss"),
    (dict(multiclass="pairs"), ValueError, "multiclass"),
    (dict(loss="epsilon_insensitive"), ValueError, "loss"),
    (dict(elastic_net=2.0), ValueError, "elastic_net"),
    (dict(elastic_net=0.5, method="silp"), ValueError, "elastic_net"),
    (dict(time_limit=-1.0), ValueError, "time_limit"),
])
def test_bad_formulation_options(three_classes, params, error, match):
    X, y = three_classes
    with pytest.raises(error, match=match):
        MKLClassifierCV(Cs=CS, cv=3, kernels=SPECS, **params).fit(X, y)


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (120, 3))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(120)
    return X, y


RSPECS = [rbf(0.5), rbf(2.0), poly(2), linear()]


@pytest.mark.parametrize("kw", [dict(loss="squared"), dict(elastic_net=0.5),
                                dict(loss="squared", elastic_net=0.2)])
def test_regressor_formulations(regression, kw):
    X, y = regression
    folds = list(KFold(3).split(X))
    base = dict(kernels=RSPECS, standardize=False, tol=TOL, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLRegressorCV(formulations=None, Cs=CS, cv=folds, **base).fit(X, y)
        gs = GridSearchCV(MKLRegressor(**base), {"C": CS}, cv=folds).fit(X, y)
    for k in range(3):
        np.testing.assert_allclose(cv.cv_results_[f"split{k}_test_score"],
                                   gs.cv_results_[f"split{k}_test_score"], atol=0.01)
    assert cv.best_C_ == gs.best_params_["C"]
    assert cv.path_converged_.all() and np.all(cv.path_rel_gap_ <= TOL)
    direct = MKLRegressor(C=cv.best_C_, **base).fit(X, y)
    np.testing.assert_allclose(cv.predict(X), direct.predict(X), atol=1e-10)
    train = folds[0][0]
    for c, C in enumerate(CS):
        cold = MKLRegressor(C=C, **{**base, "tol": TOL * 1e-2}).fit(X[train], y[train])
        J_path, J_cold = cv.path_value_[0, c, 0], cold.result_.value
        assert J_path >= J_cold - 1.1e-5 * abs(J_cold)
        assert J_path - J_cold <= 1.05 * TOL * abs(J_path)


def test_regressor_bad_loss(regression):
    X, y = regression
    with pytest.raises(ValueError, match="loss"):
        MKLRegressorCV(Cs=CS, kernels=RSPECS, loss="hinge").fit(X, y)


def test_guided_folds_are_certified_and_start_warm(three_classes):
    """Folds after the first follow its path: fewer solves, the same certified optima."""
    X, y = three_classes
    folds = list(StratifiedKFold(3).split(X, y))
    cv = MKLClassifierCV(formulations=None, Cs=CS, cv=folds, kernels=SPECS, tol=TOL).fit(X, y)
    calls = cv.path_n_oracle_calls_.sum(axis=2)  # (fold, C)
    # The first fold's first point is the search's one cold start.
    assert np.all(calls[1:, 0] < calls[0, 0])
    _assert_path_matches_cold_fits(cv, X, y, folds, fold=2)


def test_grouped_mirror_paths_query_only_points_of_their_set(monkeypatch):
    # The first fold's pairs start from the mean weights of earlier pairs;
    # the mixed-norm set of effective weights is not convex, so that mean
    # must be mapped onto it before it is queried (its answer certifies).
    import mklopt.oracles._base as base
    from mklopt.domains import GroupSimplex

    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 2))
    y = np.array([0, 1, 2])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.4).astype(int)]
    specs = [rbf(s, features=[f]) for f in (0, 1) for s in (0.3, 1.0, 3.0)]
    groups = [[0, 1, 2], [3, 4, 5]]
    domain = GroupSimplex(groups, 6)
    outside = []
    real = base.DualOracle.__call__

    def call(self, w, *args, **kw):
        if not domain.contains(np.asarray(w), tol=1e-7):
            outside.append(np.array(w))
        return real(self, w, *args, **kw)

    monkeypatch.setattr(base.DualOracle, "__call__", call)
    # Every run starts from such a mean, so a few steps per run test it. (Run
    # to tol, mirror descent drives one group's gamma to ~1e-6 here: weights
    # ~1e6 make some SVMs near hard-margin, and SMO then takes millions of
    # iterations, two minutes of this test.)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv = MKLClassifierCV(kernels=specs, method="mirror", groups=groups, Cs=[0.1, 1.0],
                             cv=3, tol=1e-3, max_iter=40).fit(X, y)
    assert outside == []
    assert cv.path_rel_gap_.shape == (3, 2, 3)
