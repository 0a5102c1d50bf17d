"""MKBoostClassifier: scikit-learn contract, labels, one-vs-one, reproducibility, bad input."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import mklopt
from mklopt import MKBoostClassifier, datasets, solve
from mklopt.kernels import KernelBank, grid, poly, rbf
from mklopt.methods import Boosting
from mklopt.oracles import WeakLearners

TINY = dict(kernels=[rbf(1.0), rbf(4.0), poly(1)], n_rounds=4, C=10.0, random_state=0)


@pytest.fixture(scope="module")
def sonar():
    X, y = datasets.load("sonar")
    return datasets.split(X, y, seed=0)


@parametrize_with_checks(
    [MKBoostClassifier(**TINY), MKBoostClassifier(variant="S2", n_rounds=3, random_state=0)]
)
def test_sklearn_contract(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mklopt.estimators.ConvergenceWarning)
        check(estimator)


def test_grid_is_the_papers_17_kernels(sonar):
    X_train, X_test, y_train, y_test = sonar
    clf = MKBoostClassifier(n_rounds=5, random_state=0).fit(X_train, y_train)
    assert clf.n_kernels_ == 17 and clf.kernel_specs_ == list(grid(60, "mkboost2013"))
    assert clf.weights_.shape == (17,)
    assert clf.weights_.sum() == pytest.approx(1.0)
    assert clf.n_iter_ <= 5 and clf.n_fits_ == 17 * len(clf.history_)


@pytest.mark.parametrize("variant", ["D1", "D2", "S1", "S2"])
def test_matches_the_driver_run_and_predicts_from_used_kernels_only(variant, sonar):
    X_train, X_test, y_train, y_test = sonar
    specs = [rbf(2.0**e) for e in (-2, 1, 3, 5)] + [poly(1), poly(2)]
    clf = MKBoostClassifier(kernels=specs, variant=variant, n_rounds=10, random_state=3)
    clf.fit(X_train, y_train)
    ens = clf.ensemble_
    # the decision on the training points equals the ensemble's training margin
    np.testing.assert_allclose(
        clf.decision_function(X_train), clf.result_.extra["train_margin"], atol=1e-9
    )
    # prediction banks hold only the used kernels at the support vectors
    model = clf.models_[0]
    assert sorted(model.rows) == ens.kernels.tolist()
    for k, bank in model.rows.items():
        assert bank.n_kernels == 1 and bank.n_samples == ens.support[k].size
    # the estimator's ensemble is the one the driver finds with the same seed
    ybin = np.where(y_train == clf.classes_[1], 1.0, -1.0)
    bank = KernelBank.from_specs(X_train, specs, normalize=None)
    seed = int(np.random.default_rng(3).integers(2**63 - 1))
    res = solve(
        WeakLearners(bank, ybin, C=clf.C), Boosting(variant, n_rounds=10, random_state=seed)
    )
    np.testing.assert_allclose(res.extra["alphas"], ens.alphas)
    assert clf.score(X_test, y_test) > 0.65


def test_same_random_state_same_model(sonar):
    X_train, X_test, y_train, _ = sonar
    a = MKBoostClassifier(variant="S1", n_rounds=8, random_state=11).fit(X_train, y_train)
    b = clone(a).fit(X_train, y_train)
    c = MKBoostClassifier(variant="S1", n_rounds=8, random_state=12).fit(X_train, y_train)
    np.testing.assert_array_equal(a.decision_function(X_test), b.decision_function(X_test))
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert not np.array_equal(a.ensemble_.alphas, c.ensemble_.alphas)


def test_any_two_labels_and_multiclass_one_vs_one():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0], [3, 0], [0, 3]])
    X = np.vstack([c + 0.6 * rng.normal(size=(30, 2)) for c in centres])
    y = np.repeat(["ant", "bee", "cat"], 30)
    clf = MKBoostClassifier(**TINY).fit(X, y)
    assert clf.weights_.shape == (3, 3)
    assert len(clf.ensemble_) == 3 and clf.pairs_.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert set(clf.predict(X)) <= {"ant", "bee", "cat"}
    assert clf.score(X, y) > 0.9
    assert clf.decision_function(X).shape == (90, 3)
    two = MKBoostClassifier(**TINY).fit(X[:60], y[:60])
    assert list(two.classes_) == ["ant", "bee"] and two.decision_function(X[:60]).ndim == 1
    assert two.score(X[:60], y[:60]) > 0.9


def test_pipeline_gridsearch_and_pickle(sonar):
    X_train, X_test, y_train, y_test = sonar
    pipe = make_pipeline(StandardScaler(), MKBoostClassifier(**TINY))
    gs = GridSearchCV(pipe, {"mkboostclassifier__variant": ["D1", "S2"]}, cv=2).fit(
        X_train, y_train
    )
    assert gs.best_params_["mkboostclassifier__variant"] in ("D1", "S2")
    clf = MKBoostClassifier(**TINY).fit(X_train, y_train)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.predict(X_test), clf.predict(X_test))


def test_first_round_at_chance_gives_an_empty_ensemble_and_a_constant_model():
    # a kernel that carries no information: every weak learner is constant,
    # and on balanced classes a constant errs on exactly half the weight
    X = np.zeros((12, 1))
    y = np.array([0, 1] * 6)
    with pytest.warns(mklopt.estimators.ConvergenceWarning, match="majority class") as caught:
        clf = MKBoostClassifier(kernels=[poly(1)], n_rounds=5, random_state=0).fit(X, y)
    assert "for 0 vs 1;" in str(caught[0].message)  # the labels as given, no NumPy reprs
    assert len(clf.ensemble_) == 0 and clf.stop_reason_ == "weak_learner_error"
    assert clf.n_iter_ == 0 and clf.n_fits_ == 1
    assert np.unique(clf.predict(np.ones((4, 1)))).size == 1


@pytest.mark.parametrize(
    "params, exc, match",
    [
        (dict(C=0), ValueError, "C must be > 0"),
        (dict(C="a"), TypeError, "C must be a real"),
        (dict(variant="D5"), ValueError, "variant"),
        (dict(n_rounds=0), ValueError, "n_rounds"),
        (dict(sample_ratio=0), ValueError, "sample_ratio"),
        (dict(decay=1.5), ValueError, "decay"),
        (dict(random_state=-3), ValueError, "random_state"),
        (dict(random_state="x"), TypeError, "random_state"),
        (dict(kernels=[]), ValueError, "empty"),
        (dict(kernels="level"), ValueError, "kernels must be 'all_features', 'grid'"),
        (dict(kernels=3), TypeError, "kernels must be"),
        (dict(normalize="max"), ValueError, "normalize"),
        (dict(tol=0), ValueError, "tol"),
        (dict(max_memory="1GB"), TypeError, "max_memory"),
    ],
)
def test_bad_parameters(params, exc, match):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.r_[np.zeros(10), np.ones(10)]
    with pytest.raises(exc, match=match):
        MKBoostClassifier(**params).fit(X, y)


def test_bad_data():
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.r_[np.zeros(10), np.ones(10)]
    clf = MKBoostClassifier(**TINY)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.fit(Xn, y)
    with pytest.raises(ValueError, match="infinity"):
        clf.fit(np.where(Xn != Xn, np.inf, Xn), y)
    with pytest.raises(ValueError, match="one class"):
        clf.fit(X, np.zeros(20))
    with pytest.raises(ValueError, match="labels but X has"):
        clf.fit(X, y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        clf.fit(X[:, 0], y)
    clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :1])


def test_memory_limit_refused_before_allocating():
    X = np.random.default_rng(0).normal(size=(50, 2))
    y = np.r_[np.zeros(25), np.ones(25)]
    with pytest.raises(MemoryError, match="max_memory"):
        MKBoostClassifier(max_memory=1000).fit(X, y)


def test_constant_feature_gives_no_nan():
    rng = np.random.default_rng(1)
    X = np.c_[rng.normal(size=40), np.zeros(40)]
    y = (X[:, 0] > 0).astype(int)
    clf = MKBoostClassifier(n_rounds=5, random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.decision_function(X)))
    assert clf.score(X, y) > 0.9
