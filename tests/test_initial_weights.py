"""Starting a run from given kernel weights (``solve(initial=...)``) and
one-vs-one pairs that start from the weights of a pair sharing a class."""

import warnings
from itertools import combinations

import numpy as np
import pytest

from mklopt import MKLClassifier, solve
from mklopt.estimators._ovo import star_parents
from mklopt.estimators._ovo import waves as make_waves
from mklopt.methods import METHODS, get_method
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter

# Methods that query weight vectors on a feasible set of the SVM dual.
# The kernel working set targets banks of thousands of kernels (tested in
# its own module); boosting queries are not weight vectors.
ARRAY_METHODS = sorted(set(METHODS) - {"boosting", "mkboost", "working_set"})


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = np.where(X[:, 0] + X[:, 1] > 0.2, 1.0, -1.0)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-d2 / s) for s in (0.5, 2.0, 8.0)] + [X @ X.T])
    return K / np.trace(K, axis1=1, axis2=2)[:, None, None], y


def run(K, y, name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(SVMDual(K, y, C=10.0), get_method(name)(),
                     stop=DualityGap(1e-5) | MaxIter(400), **kw)


@pytest.mark.parametrize("name", ARRAY_METHODS)
def test_a_run_from_given_weights_certifies_the_same_optimum(problem, name):
    K, y = problem
    cold = run(K, y, name)
    vertex = np.array([0.0, 0.0, 3.0, 0.0])  # off the simplex: projected first
    for start in (cold.weights, vertex):
        res = run(K, y, name, initial=start)
        # the first call is at the (projected) start; the certificate is unchanged
        first = res.history[0].weights
        domain = get_method(name)().domain  # None before a run
        assert domain is None
        assert np.all(first >= 0) and np.all(np.isfinite(first))
        assert res.converged == cold.converged
        # both certify the optimum to the target, with inner (SMO) solves
        # accurate to a share of it: their intervals agree to the target
        slack = 1e-5 * abs(cold.value)
        assert res.lower <= cold.value + slack and cold.lower <= res.value + slack
    res = run(K, y, name, initial=cold.weights)
    np.testing.assert_allclose(res.history[0].weights, cold.weights, rtol=0, atol=1e-12)
    # started at the optimum, the run needs no more calls than from scratch
    assert res.n_oracle_calls <= cold.n_oracle_calls


def test_the_start_is_projected_onto_the_feasible_set(problem):
    K, y = problem
    res = run(K, y, "level", initial=[0.0, 0.0, 3.0, 0.0])
    np.testing.assert_allclose(res.history[0].weights, [0, 0, 1, 0], atol=1e-12)
    assert res.n_oracle_calls == res.history[-1].n_oracle_calls


def test_bad_initial_weights_are_refused(problem):
    K, y = problem
    with pytest.raises(ValueError, match=r"initial must have shape \(4,\)"):
        run(K, y, "level", initial=[0.5, 0.5])
    with pytest.raises(ValueError, match="initial weights must be finite"):
        run(K, y, "level", initial=[np.nan, 0.5, 0.5, 0.0])
    with pytest.raises(TypeError, match="initial must be a Result of solve or an array"):
        run(K, y, "level", initial=["a", "b", "c", "d"])


def test_star_parents_share_a_class_and_come_in_earlier_waves():
    for k in range(2, 12):
        pairs = np.array(list(combinations(range(k), 2)))
        parents = star_parents(pairs)
        assert sum(p < 0 for p in parents) == 1  # one root
        for child, parent in enumerate(parents):
            if parent >= 0:
                assert set(pairs[child].tolist()) & set(pairs[parent].tolist())
        waves = make_waves(parents, len(pairs))
        assert sorted(p for w in waves for p in w) == list(range(len(pairs)))
        wave_of = {p: i for i, w in enumerate(waves) for p in w}
        assert all(wave_of[c] > wave_of[p] for c, p in enumerate(parents) if p >= 0)
        assert len(waves) <= k  # shallow: (i, j) is j waves deep at most
    assert make_waves(None, 5) == [[0, 1, 2, 3, 4]]
    with pytest.raises(ValueError, match="cycle"):
        make_waves([1, 0], 2)


def test_warm_started_pairs_certify_the_optima_of_cold_pairs(monkeypatch):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [0, 3, 5, 8])
    X, y = X[keep][::3], y[keep][::3]
    warm = MKLClassifier(C=1.0).fit(X, y)
    monkeypatch.setattr(MKLClassifier, "_parents", lambda self, plan, task, problems: None)
    cold = MKLClassifier(C=1.0).fit(X, y)
    for a, b in zip(warm.result_, cold.result_):
        assert a.converged and b.converged
        slack = 1e-3 * abs(a.value)  # inner solves are accurate to a share of tol=1e-2
        assert a.lower <= b.value + slack and b.lower <= a.value + slack
    # every pair but the root started from the mean weights of its parent and
    # of the pairs of earlier waves sharing a class with it
    parents = star_parents(warm.pairs_)
    depth = {p: d for d, wave in enumerate(make_waves(parents, len(parents))) for p in wave}
    for p, parent in enumerate(parents):
        if parent >= 0:
            mates = [q for q in range(len(parents)) if depth[q] < depth[p]
                     and set(warm.pairs_[q]) & set(warm.pairs_[p])]
            assert parent in mates
            np.testing.assert_allclose(warm.result_[p].history[0].weights,
                                       np.mean(warm.weights_[mates], axis=0), atol=1e-12)
    assert np.mean(warm.predict(X) == cold.predict(X)) >= 0.99


def test_a_start_outside_the_group_set_is_retracted_and_certified_honestly():
    # The mixed-norm set of effective weights is not convex: the mean of two
    # of its points lies outside it. The first query must be a point of the
    # set (it was once the per-group projection of lam, outside it, and its
    # answer certified a gap of 0 far from the optimum).
    from mklopt.domains import GroupSimplex
    from mklopt.kernels import KernelBank, rbf
    from mklopt.methods import MirrorDescent
    from mklopt.stopping import DualityGap, MaxIter

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 2))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    specs = [rbf(s, features=[f]) for f in (0, 1) for s in (0.3, 1.0, 3.0)]
    groups = [[0, 1, 2], [3, 4, 5]]
    bank = KernelBank.from_specs(X, specs)
    d = GroupSimplex(groups, 6)
    a = d.effective(np.array([0.8, 0.1, 0.1, 0.1, 0.1, 0.8]), np.array([0.2, 0.8]))
    b = d.effective(np.array([0.1, 0.1, 0.8, 0.8, 0.1, 0.1]), np.array([0.7, 0.3]))
    start = 0.5 * (a + b)
    assert d.contains(a) and d.contains(b) and not d.contains(start)

    def run(initial):
        return solve(SVMDual(bank, y, C=3.0, tol=1e-8), MirrorDescent(groups=groups),
                     stop=DualityGap(1e-3) | MaxIter(3000), initial=initial)

    warm, cold = run(start), run(None)
    assert d.contains(warm.history[0].weights) and d.contains(warm.weights)
    assert warm.converged and cold.converged
    # two certified intervals of one optimum overlap
    assert warm.lower <= cold.value * (1 + 1e-6) and cold.lower <= warm.value * (1 + 1e-6)
