"""C path points carried over without an oracle call once no dual variable is at its bound."""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

from mklopt import KernelBank, MKLClassifierCV, MKLRegressorCV, datasets
from mklopt.domains import Simplex
from mklopt.estimators._path import _make_svm, _same_but_larger_box, c_path
from mklopt.kernels import linear, poly, rbf
from mklopt.methods import LevelBundle
from mklopt.oracles import LogisticDual, RidgeDual, SVMDual, SVRDual
from mklopt.stopping import DualityGap
from tests._cvx_reference import exact_optimum, small_problem

#: Unit-trace kernels: sonar's 60 points are separated by the RBF kernels
#: with every dual variable below 160, so from C = 1e3 on the solution no
#: longer changes; below, variables sit at C.
CS = [1.0, 10.0, 100.0, 1e3, 3e3, 1e4]


@pytest.fixture(scope="module")
def path():
    K, y = small_problem("sonar", n=60, seed=0)
    points = c_path(KernelBank.from_matrices(K), y, CS, LevelBundle, lambda: DualityGap(1e-4),
                    1e-7)
    return K, y, points


def test_carried_points_are_certified_against_the_exact_optimum(path):
    K, y, points = path
    carried = [pt.carried for pt in points]
    # both kinds occur on this grid (the test covers the decision, not one branch)
    assert any(carried) and not all(carried)
    for pt in points:
        exact = exact_optimum(K, y, pt.C, Simplex(K.shape[0]))
        # value - gap <= J* <= value, up to the inner error (tol 1e-7) and the
        # conic solver's accuracy
        slack = 1e-6 * abs(exact)
        assert pt.lower - slack <= exact <= pt.value + slack, (pt.C, pt.carried)
        assert pt.converged and pt.rel_gap <= 1e-4
        assert (pt.n_oracle_calls == 0) == pt.carried


def test_a_point_is_carried_only_from_a_free_solution(path):
    _, _, points = path
    for prev, pt in zip(points, points[1:]):
        if pt.carried:
            assert np.all(prev.alpha < prev.C)
            for name in ("weights", "alpha"):
                np.testing.assert_array_equal(getattr(pt, name), getattr(prev, name))
            assert (pt.bias, pt.value, pt.lower) == (prev.bias, prev.value, prev.lower)
        if np.any(prev.alpha >= prev.C):
            assert not pt.carried


def test_a_carried_point_is_what_a_call_would_answer(path):
    # SVMDual at the new C, warm-started at the carried alpha, stops before
    # its first step with the same answer.
    K, y, points = path
    bank = KernelBank.from_matrices(K)
    for pt in points:
        if not pt.carried:
            continue
        answer = SVMDual(bank, y, C=pt.C, tol=1e-7)(pt.weights, warm_start=pt.alpha)
        np.testing.assert_allclose(answer.alpha, pt.alpha, rtol=1e-12, atol=0)
        np.testing.assert_allclose(answer.value, pt.value, rtol=1e-12)
        np.testing.assert_allclose(answer.bias, pt.bias, rtol=1e-9, atol=1e-12)


def test_the_box_check_compares_the_problems():
    K, y = small_problem("sonar", n=30, seed=1)
    bank = KernelBank.from_matrices(K)
    free = np.zeros(30)
    free[[np.flatnonzero(y > 0)[0], np.flatnonzero(y < 0)[0]]] = 0.5
    small, large = _make_svm(y, bank, 1.0, 1e-6), _make_svm(y, bank, 2.0, 1e-6)
    assert _same_but_larger_box(small, large, free)
    assert _same_but_larger_box(small, small, free)
    assert not _same_but_larger_box(large, small, free)  # the box shrank
    assert not _same_but_larger_box(small, large, 2.0 * free)  # a variable at its bound
    assert not _same_but_larger_box(small, _make_svm(-y, bank, 2.0, 1e-6), free)  # labels
    t = np.linspace(-1.0, 1.0, 30)
    svr = [SVRDual(bank, t, C=C, epsilon=0.1, tol=1e-6) for C in (1.0, 2.0)]
    assert _same_but_larger_box(svr[0], svr[1], 0.1 * np.sign(t + 1e-3))
    assert not _same_but_larger_box(svr[0], SVRDual(bank, t, C=2.0, epsilon=0.2), 0.1 * t)
    # smooth losses depend on C beyond a box: never carried
    for make in (lambda C: LogisticDual(bank, y, C=C), lambda C: RidgeDual(bank, t, C=C)):
        assert not _same_but_larger_box(make(1.0), make(2.0), np.zeros(30))


def _separable():
    X, y = datasets.load("ionosphere")
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(X.shape[0], 120, replace=False))
    X = X[keep]
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), y[keep]


def test_cv_scores_of_carried_points_are_their_predecessors():
    X, y = _separable()
    folds = list(StratifiedKFold(3).split(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # every (fold, C) point solved (halving would skip some)
        cv = MKLClassifierCV(Cs=[1.0, 1e2, 1e4, 1e6], cv=folds, tol=1e-3, search="exhaustive",
                             kernels=[rbf(1.0), rbf(8.0), poly(2), linear()]).fit(X, y)
    calls = cv.path_n_oracle_calls_  # (folds, Cs, problems)
    assert np.any(calls == 0)
    for k in range(len(folds)):
        scores = cv.cv_results_[f"split{k}_test_score"]
        for c in range(1, calls.shape[1]):
            if np.all(calls[k, c] == 0):
                assert scores[c] == scores[c - 1]
    assert np.all(cv.path_rel_gap_ <= 1e-3)


def test_regressor_cv_carries_only_the_box_constrained_loss():
    X, t = datasets.load("diabetes")
    X, t = X[:120], t[:120]
    specs = [rbf(1.0), rbf(8.0), linear()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(Cs=[1.0, 1e2, 1e4, 1e6], cv=3, kernels=specs, search="exhaustive")
        sq = MKLRegressorCV(loss="squared", **kw).fit(X, t)
        eps = MKLRegressorCV(**kw).fit(X, t)
    assert np.all(sq.path_n_oracle_calls_ > 0)
    # the epsilon-insensitive dual is box-constrained: at C = 1e6 no
    # variable of C = 1e4's solution is at its bound
    assert np.all(eps.path_n_oracle_calls_[:, -1] == 0)
    assert np.all(eps.path_rel_gap_ <= 1e-2) and np.all(eps.path_converged_)


def test_shared_multiclass_points_carried_are_the_fold_optimum():
    # One weight vector for all pairs (a composite of SVM duals): a point is
    # carried only when every pair's dual is free, and its value is then the
    # fold problem's optimum at the new C within the certified gap, as a
    # direct fit at that C finds it.
    from sklearn.datasets import load_iris

    from mklopt import MKLClassifier

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    specs = [rbf(1.0), rbf(8.0), poly(2), linear()]
    folds = list(StratifiedKFold(3).split(X, y))
    Cs = [1.0, 1e2, 1e4, 1e6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLClassifierCV(Cs=Cs, cv=folds, multiclass="shared", kernels=specs,
                             tol=1e-3, search="exhaustive").fit(X, y)
        calls = cv.path_n_oracle_calls_[:, :, 0]
        assert np.any(calls == 0) and np.all(calls[:, 0] > 0)
        for k, (train, _) in enumerate(folds):
            for c in np.flatnonzero(calls[k] == 0):
                value = cv.path_value_[k, c, 0]
                gap = cv.path_rel_gap_[k, c, 0] * abs(value)
                direct = MKLClassifier(C=Cs[c], multiclass="shared", kernels=specs,
                                       tol=1e-7).fit(X[train], y[train]).result_
                assert value - gap - 1e-6 * abs(value) <= direct.value
                assert direct.lower <= value + 1e-6 * abs(value)
                scores = cv.cv_results_[f"split{k}_test_score"]
                assert scores[c] == scores[c - 1]


@pytest.mark.parametrize("formulation", [
    dict(p=1.5, method="lp"),
    dict(elastic_net=0.5),
    dict(groups=[[0, 1], [2, 3]], method="mirror"),
])
def test_carried_points_of_other_formulations_bracket_a_direct_fit(formulation):
    # Every formulation's objective is the inner maximum over the box plus a
    # term of the weights alone, so the argument holds for all; checked here
    # as in the shared test: the direct fit's optimum lies in the carried
    # point's [value - gap, value].
    from mklopt import MKLClassifier

    X, y = _separable()
    specs = [rbf(1.0), rbf(8.0), poly(2), linear()]
    folds = list(StratifiedKFold(3).split(X, y))
    Cs = [1.0, 1e2, 1e4, 1e6]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLClassifierCV(Cs=Cs, cv=folds, kernels=specs, tol=1e-3, **formulation).fit(X, y)
        calls = cv.path_n_oracle_calls_[:, :, 0]
        assert np.any(calls == 0)
        for k, (train, _) in enumerate(folds):
            for c in np.flatnonzero(calls[k] == 0):
                value = cv.path_value_[k, c, 0]
                gap = cv.path_rel_gap_[k, c, 0] * abs(value)
                direct = MKLClassifier(C=Cs[c], kernels=specs, tol=1e-6,
                                       **formulation).fit(X[train], y[train]).result_
                assert value - gap - 1e-6 * abs(value) <= direct.value
                assert direct.lower <= value + 1e-6 * abs(value)
