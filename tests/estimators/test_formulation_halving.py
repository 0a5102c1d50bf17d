"""Successive halving over the (formulation, C) candidates of the CV estimators.

The default ``search="halving"`` scores every candidate on the first fold,
keeps the best ``ceil(n / factor)`` and scores those on the next folds.
Each property is checked against an independent computation: the first
round is the exhaustive search's first fold exactly, the survivors are the
top of its scores (ties to the earlier row), the table marks what was
dropped, the choice is the exhaustive one where the margin is clear, and
bad ``search``/``factor`` values are refused by name.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold, StratifiedKFold

from mklopt import MKLClassifier, MKLClassifierCV, MKLRegressor, MKLRegressorCV
from mklopt.estimators.mkl_cv import halving_schedule
from mklopt.kernels import rbf

# the data and constants of the exhaustive search's tests, which these compare against
from .test_formulation_search import CS, SPECS, TOL, _fit, three_class_data  # noqa: E402


@pytest.fixture(scope="module")
def three_classes():
    return three_class_data()


def _cv(X, y, **kw):
    folds = list(StratifiedKFold(3).split(X, y))
    kw = {"Cs": CS, "cv": folds, "kernels": SPECS, "tol": TOL, **kw}
    return _fit(MKLClassifierCV(**kw), X, y)


@pytest.fixture(scope="module")
def both(three_classes):
    X, y = three_classes
    return _cv(X, y), _cv(X, y, search="exhaustive")


def _splits(res, n_splits):
    return np.stack([res[f"split{k}_test_score"] for k in range(n_splits)], axis=1)


def test_the_schedule():
    assert halving_schedule(5, 3) == [1, 3, 5]
    assert halving_schedule(3, 3) == [1, 3]
    assert halving_schedule(3, 2) == [1, 2, 3]
    assert halving_schedule(10, 3) == [1, 3, 9, 10]
    assert halving_schedule(2, 5) == [1, 2]


def test_the_table_marks_what_was_dropped(both):
    cv, _ = both
    res = cv.cv_results_
    n_rows = 4 * len(CS)  # L1, p = 2, p = inf per pair, L1 shared
    # 12 candidates on the first fold, the best 4 on the other two
    assert cv.n_candidates_ == [n_rows, 4] and cv.n_resources_ == [1, 3]
    assert cv.n_iterations_ == 2
    S = _splits(res, 3)
    assert np.all(np.isfinite(S[:, 0]))
    kept = res["iter"] == 1
    assert kept.sum() == 4
    assert np.all(np.isfinite(S[kept])) and np.all(np.isnan(S[~kept, 1:]))
    np.testing.assert_array_equal(res["n_resources"], np.where(kept, 3, 1))
    np.testing.assert_allclose(res["mean_test_score"], np.nanmean(S, axis=1))
    for key in ("mean_fit_time", "mean_n_oracle_calls", "std_test_score"):
        assert np.all(np.isfinite(res[key])), key
    # the survivors: the top 4 of the first fold, ties to the earlier row
    top = sorted(range(n_rows), key=lambda i: (-S[i, 0], i))[:4]
    np.testing.assert_array_equal(np.flatnonzero(kept), sorted(top))
    # the best: the first of the largest mean among the survivors, rank 1
    mean = np.where(kept, res["mean_test_score"], -np.inf)
    assert cv.best_index_ == int(np.flatnonzero(mean == mean.max())[0])
    assert res["rank_test_score"][cv.best_index_] == 1
    assert cv.best_params_ == res["params"][cv.best_index_]
    assert cv.best_score_ == res["mean_test_score"][cv.best_index_]
    # every survivor ranks above every dropped candidate
    assert res["rank_test_score"][kept].max() < res["rank_test_score"][~kept].min()
    # the path statistics mark the points solved, and only those
    n_c = len(CS)
    for f, paths in enumerate(cv.paths_):
        scored = np.isfinite(S[f * n_c:(f + 1) * n_c]).T  # (n_splits, n_Cs)
        np.testing.assert_array_equal(paths["evaluated"].all(axis=2), scored)
        np.testing.assert_array_equal(paths["evaluated"].any(axis=2), scored)
        assert np.all(paths["n_oracle_calls"][~paths["evaluated"]] == 0)
        assert np.all(np.isnan(paths["value"][~paths["evaluated"]]))
        assert np.all(np.isfinite(paths["value"][paths["evaluated"]]))


def test_the_first_round_is_the_exhaustive_first_fold(both):
    cv, full = both
    np.testing.assert_array_equal(cv.cv_results_["split0_test_score"],
                                  full.cv_results_["split0_test_score"])
    for mine, theirs in zip(cv.paths_, full.paths_, strict=True):
        for key in ("value", "rel_gap", "n_oracle_calls"):
            np.testing.assert_array_equal(mine[key][0], theirs[key][0])


def test_the_refit_is_the_direct_fit_of_best_params(three_classes, both):
    X, y = three_classes
    cv, _ = both
    direct = _fit(MKLClassifier(kernels=SPECS, tol=TOL, **cv.best_params_), X, y)
    np.testing.assert_allclose(cv.decision_function(X), direct.decision_function(X),
                               rtol=0, atol=1e-8)


@pytest.fixture(scope="module")
def one_informative_view():
    """Thirty one-feature views, one carrying the labels: L1 picks it, the average drowns it."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 30))
    y = np.where(np.abs(X[:, 0]) > 0.7, 1, -1)
    specs = [rbf(1.0, features=(j,)) for j in range(30)]
    return X, y, specs


def test_halving_keeps_the_exhaustive_choice_when_the_margin_is_clear(one_informative_view):
    X, y, specs = one_informative_view
    forms = [{"p": 1.0}, {"p": 2.0}, {"p": np.inf}]
    kw = {"Cs": [0.1, 1.0, 10.0, 100.0], "cv": 5, "kernels": specs, "tol": TOL,
          "formulations": forms}
    full = _fit(MKLClassifierCV(search="exhaustive", **kw), X, y)
    half = _fit(MKLClassifierCV(**kw), X, y)
    res = full.cv_results_
    # the margin is clear: the best L1 row beats every p = inf row by 10 points
    p = np.asarray(res["param_p"], dtype=float)
    assert res["mean_test_score"][p == 1].max() > res["mean_test_score"][p == np.inf].max() + 0.1
    assert half.best_formulation_ == full.best_formulation_ == {"p": 1.0, "multiclass": "ovo"}
    assert half.best_params_ == full.best_params_
    # and it scored far fewer (candidate, fold) pairs: 12 + 4 * 2 + 2 * 2 of 60
    assert half.n_candidates_ == [12, 4, 2]
    assert int(np.isfinite(_splits(half.cv_results_, 5)).sum()) == 12 + 4 * 2 + 2 * 2


def test_factor_sets_how_many_go_on(three_classes):
    X, y = three_classes
    cv = _cv(X, y, factor=2)
    assert cv.n_candidates_ == [12, 6, 3] and cv.n_resources_ == [1, 2, 3]
    assert sorted(set(cv.cv_results_["iter"].tolist())) == [0, 1, 2]


def test_one_formulation_is_not_halved(three_classes):
    X, y = three_classes
    for forms in (None, [{"p": 2.0}]):
        cv = _cv(X, y, formulations=forms)
        assert "iter" not in cv.cv_results_ and not hasattr(cv, "n_candidates_")
        assert np.all(np.isfinite(_splits(cv.cv_results_, 3)))
        assert "evaluated" not in cv.paths_[0]


def test_the_convergence_warning_counts_the_points_solved(three_classes):
    X, y = three_classes
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cv = MKLClassifierCV(Cs=CS, cv=3, kernels=SPECS, tol=1e-9, max_iter=2).fit(X, y)
    msgs = [str(w.message) for w in seen if issubclass(w.category, ConvergenceWarning)
            and "path points" in str(w.message)]
    assert len(msgs) == 1
    solved = sum(int(p["evaluated"].sum()) for p in cv.paths_)
    unconverged = sum(int((p["evaluated"] & ~p["converged"]).sum()) for p in cv.paths_)
    assert f"{unconverged} of {solved} path points" in msgs[0]


@pytest.mark.parametrize("kw, exc, match", [
    ({"search": "grid"}, ValueError, "search"),
    ({"search": None}, TypeError, "search"),
    ({"factor": 1}, ValueError, "factor"),
    ({"factor": 2.5}, TypeError, "factor"),
])
def test_bad_search_parameters_are_refused_by_name(three_classes, kw, exc, match):
    X, y = three_classes
    with pytest.raises(exc, match=match):
        MKLClassifierCV(Cs=CS, cv=3, kernels=SPECS, **kw).fit(X, y)
    with pytest.raises(exc, match=match):
        MKLRegressorCV(Cs=CS, cv=3, kernels=SPECS, **kw).fit(X, X[:, 0])


def test_the_regressor_halves_too():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3))
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    folds = list(KFold(3).split(X))
    kw = {"Cs": CS, "cv": folds, "kernels": SPECS, "tol": TOL, "standardize": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLRegressorCV(**kw).fit(X, t)
        full = MKLRegressorCV(search="exhaustive", **kw).fit(X, t)
    assert cv.n_candidates_ == [9, 3]
    np.testing.assert_array_equal(cv.cv_results_["split0_test_score"],
                                  full.cv_results_["split0_test_score"])
    assert cv.cv_results_["iter"][cv.best_index_] == 1
    direct = MKLRegressor(kernels=SPECS, tol=TOL, standardize=False, **cv.best_params_).fit(X, t)
    np.testing.assert_allclose(cv.predict(X), direct.predict(X), rtol=0, atol=1e-8)
