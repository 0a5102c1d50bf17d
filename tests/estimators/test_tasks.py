"""Task entries: how y becomes problems, and a user's task fitted through the one core."""

import numpy as np
import pytest

from mklopt import MKLClassifier, MKLOneClass, MKLRegressor
from mklopt.estimators._fit import fit_problems
from mklopt.kernels import rbf
from mklopt.oracles import SVMDual
from mklopt.tasks import TASKS, Problem, TaskEntry, get_task, register_oracle, register_task

SPECS = [rbf(0.5), rbf(2.0), rbf(8.0)]


def _blobs(n=90, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(k), n // k)
    X = rng.normal(size=(n, 2)) + 3.0 * np.eye(k, 2)[y]
    return X, y


def test_classification_makes_one_signed_problem_per_pair():
    task = get_task("classification")
    classes, t = task.targets(np.array(["b", "a", "c", "a", "b", "c"]), 6, "est")
    assert classes.tolist() == ["a", "b", "c"]
    problems = task.problems(t, classes, 6, False)
    assert [p.classes for p in problems] == [(0, 1), (0, 2), (1, 2)]
    for p in problems:
        i, j = p.classes
        assert set(t[p.rows]) == {i, j} and np.all(np.diff(p.rows) > 0)
        np.testing.assert_array_equal(p.y, np.where(t[p.rows] == j, 1.0, -1.0))
    by_class = task.problems(t, classes, 6, True)
    for a, b in zip(problems, by_class):
        assert sorted(a.rows) == sorted(b.rows)
        assert np.all(np.diff(t[b.rows]) >= 0)  # the first class's rows, then the second's
    assert task.parents_of(problems) == [-1, 0, 1]
    np.testing.assert_array_equal(task.coefficients(np.array([1.0, 2.0]), np.array([-1.0, 1.0])),
                                  [-1.0, 2.0])


def test_regression_and_one_class_make_one_problem():
    reg = get_task("regression")
    _, t = reg.targets([1.0, 2.5, -3.0], 3, "est")
    (p,) = reg.problems(t, None, 3, False)
    np.testing.assert_array_equal(p.rows, [0, 1, 2])
    np.testing.assert_array_equal(p.y, t)
    assert reg.parents_of([p]) is None
    np.testing.assert_array_equal(reg.coefficients(np.array([-1.0, 2.0]), None), [-1.0, 2.0])
    one = get_task("one-class")
    labels, t = one.targets(None, 4, "est")
    (p,) = one.problems(t, labels, 4, False)
    assert p.y is None and p.rows.size == 4


def test_bad_regression_targets_are_refused_before_any_work():
    with pytest.raises(ValueError, match="y contains NaN"):
        MKLRegressor(kernels=SPECS).fit(np.zeros((3, 2)), [1.0, np.nan, 2.0])


# ---- a user's task: one-vs-rest classification, in one place ---------------
def _one_vs_rest_problems(t, classes, n_samples, by_class=False):
    rows = np.arange(n_samples, dtype=np.int64)
    return [Problem(rows, np.where(t == k, 1.0, -1.0), None, f"{classes[k]} vs rest")
            for k in range(len(classes))]


def _argmax(decisions, pairs, classes):
    return decisions


@pytest.fixture(scope="module")
def one_vs_rest():
    entry = TaskEntry("one-vs-rest", get_task("classification").targets, _one_vs_rest_problems,
                      signed=True, combine=_argmax, scoring="accuracy")
    register_task(entry, replace=True)
    register_oracle("hinge", "one-vs-rest", SVMDual, ("C", "tol"), exact_step=True, replace=True)

    class OneVsRestMKL(MKLClassifier):
        _task = "one-vs-rest"

    yield OneVsRestMKL
    TASKS.pop("one-vs-rest")
    from mklopt.tasks import ORACLES

    ORACLES.pop(("one-vs-rest", "hinge"))


def test_a_users_task_fits_through_the_one_core(one_vs_rest):
    X, y = _blobs()
    est = one_vs_rest(kernels=SPECS, C=10.0).fit(X, y)
    assert len(est.models_) == 3 and not hasattr(est, "pairs_")
    assert est.weights_.shape == (3, len(SPECS)) and np.all(est.converged_)
    # each problem is its class against the rest: its decision separates them
    d = est.pairwise_decision_function(X)
    for k in range(3):
        assert np.mean((d[:, k] > 0) == (y == k)) > 0.9
    assert est.score(X, y) > 0.9
    assert est.predict(X).tolist() == est.classes_[np.argmax(d, axis=1)].tolist()


def test_a_users_task_fits_in_parallel_as_it_does_serially(one_vs_rest):
    X, y = _blobs(seed=1)
    a = one_vs_rest(kernels=SPECS, C=10.0).fit(X, y)
    b = one_vs_rest(kernels=SPECS, C=10.0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


def test_fit_problems_starts_children_from_their_parents_models():
    problems = [Problem(np.arange(k + 1), None, (0, k + 1)) for k in range(3)]
    seen = []

    class M:
        def __init__(self, w):
            self.weights = w

    def fit_one(k, start):
        seen.append((k, None if start is None else start.tolist()))
        return M(np.array([float(k), 1.0]))

    models = fit_problems(problems, fit_one, lambda k: (k,), parents=[-1, 0, 1])
    assert [m.weights[0] for m in models] == [0.0, 1.0, 2.0]
    # (0, 2) starts from (0, 1); (0, 3) from (0, 2) and its class-mate (0, 1)
    assert seen == [(0, None), (1, [0.0, 1.0]), (2, [0.5, 1.0])]


def test_one_class_and_regressor_fit_through_the_same_core(monkeypatch):
    import mklopt.estimators._fit as core

    calls = []
    real = core.fit_problems

    def spy(problems, *args, **kw):
        calls.append(len(problems))
        return real(problems, *args, **kw)

    monkeypatch.setattr(core, "fit_problems", spy)
    X, y = _blobs()
    MKLRegressor(kernels=SPECS).fit(X, y.astype(float))
    MKLOneClass(kernels=SPECS, nu=0.2).fit(X)
    MKLClassifier(kernels=SPECS).fit(X, y)
    assert calls == [1, 1, 3]


def test_an_unknown_task_says_where_the_built_in_ones_come_from():
    import subprocess
    import sys

    code = ("import mklopt.tasks as t\n"
            "try:\n    t.get_task('classification')\nexcept ValueError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "unknown task 'classification'" in out and "mklopt.estimators" in out
    with pytest.raises(ValueError, match="registered tasks: .*'regression'"):
        get_task("ranking")
