"""WeakLearners: agreement with libsvm on bootstrap samples, errors, counting, bad input."""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.svm import SVC

from mklopt import KernelBank
from mklopt.oracles import WeakLearners
from mklopt.oracles.weak_learners import BoostQuery, WeakLearnersAnswer
from tests._strategies import log_uniform


def make_problem(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.3 > 0.3 * rng.normal(size=n), 1.0, -1.0)
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    G = X @ X.T
    K = np.stack([np.exp(-d / (2 * s**2)) for s in (0.5, 1.0, 2.0)] + [G + 1.0, (G + 1.0) ** 2])
    return KernelBank.from_matrices(np.ascontiguousarray(K)), y


def libsvm_decision(K, y, sample, C, tol):
    """SVC trained on the sample's rows (copies included), evaluated on all points."""
    clf = SVC(kernel="precomputed", C=C, tol=tol, cache_size=200)
    clf.fit(K[np.ix_(sample, sample)], y[sample])
    return clf.decision_function(K[:, sample])


@pytest.mark.parametrize("k", range(5))
def test_learners_agree_with_libsvm_on_a_sample_with_copies(k):
    bank, y = make_problem()
    rng = np.random.default_rng(k)
    sample = rng.choice(y.size, size=30, replace=True)
    assert np.unique(sample).size < sample.size  # copies are present
    oracle = WeakLearners(bank, y, C=5.0, tol=1e-7)
    ans = oracle(BoostQuery.make(sample, [k]))
    ref = libsvm_decision(bank.K[k], y, sample, C=5.0, tol=1e-7)
    scale = max(1.0, np.abs(ref).max())
    np.testing.assert_allclose(ans.decision[0], ref, atol=1e-4 * scale)
    clear = np.abs(ref) > 1e-3 * scale
    np.testing.assert_array_equal(ans.predictions[0][clear], np.where(ref > 0, 1.0, -1.0)[clear])


@settings(max_examples=15)
@given(rows=st.lists(st.integers(0, 39), min_size=8, max_size=40), k=st.integers(0, 10**6),
       C=log_uniform(0.05, 50.0))
# every multiplier at its box: the offset is any point of an interval
@example(rows=[0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 5], k=0, C=0.1)
def test_agreement_with_libsvm_property(rows, k, C):
    bank, y = make_problem(n=40, seed=1)
    sample = np.array(rows)  # copies and a class of one point are reachable
    if np.unique(y[sample]).size < 2:
        sample[:2] = [np.flatnonzero(y > 0)[0], np.flatnonzero(y < 0)[0]]
    k %= bank.n_kernels
    ans = WeakLearners(bank, y, C=C, tol=1e-8)(BoostQuery.make(sample, [k]))
    ref = libsvm_decision(bank.K[k], y, sample, C=C, tol=1e-8)
    scale = max(1.0, np.abs(ref).max())
    # The kernel part of the decision is unique (so is w): compare it without
    # the offsets; they may differ when no multiplier is strictly inside its
    # box (drawn here: all copies of a point at C), where any offset of an
    # interval is optimal.
    bias = ans.learners[0].bias
    kernel_part = ans.decision[0] - bias
    ref_part = ref - np.median(ref - kernel_part)
    np.testing.assert_allclose(kernel_part, ref_part, atol=1e-4 * scale)
    # Our offset is optimal: the sample's KKT conditions hold for it.
    lrn = ans.learners[0]
    uniq, copies = np.unique(sample, return_counts=True)
    a = np.zeros(y.size)
    a[lrn.support] = np.abs(lrn.coef)
    margin = y[uniq] * ans.decision[0][uniq]
    at0, atC = a[uniq] <= 1e-12 * C, a[uniq] >= C * copies * (1 - 1e-9)
    slack = 1e-5 * scale
    assert np.all(margin[at0] >= 1 - slack)
    assert np.all(margin[atC] <= 1 + slack)
    assert np.all(np.abs(margin[~at0 & ~atC] - 1) <= slack)
    # ... and where libsvm's offset is pinned by a free multiplier, they agree.
    if np.any(~at0 & ~atC):
        np.testing.assert_allclose(ans.decision[0], ref, atol=1e-4 * scale)


def test_learner_keeps_merged_support_vectors_only():
    bank, y = make_problem()
    sample = np.array([0, 0, 0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 10, 11])
    oracle = WeakLearners(bank, y, C=50.0, tol=1e-8)
    ans = oracle(BoostQuery.make(sample, [0, 3]))
    for pos, lrn in enumerate(ans.learners):
        assert lrn.kernel == ans.kernels[pos]
        # distinct, sorted training indices drawn from the sample
        assert np.all(np.diff(lrn.support) > 0)
        assert set(lrn.support.tolist()) <= set(sample.tolist())
        assert np.all(lrn.coef != 0.0)
        # coefficients carry the label sign (alpha >= 0)
        assert np.all(np.sign(lrn.coef) == y[lrn.support])
        # the stored learner reproduces the decision values on every point
        K = bank.K[lrn.kernel]
        np.testing.assert_allclose(lrn.decision(K[lrn.support]), ans.decision[pos], atol=1e-12)
        # and agrees with libsvm trained on the copies
        ref = libsvm_decision(K, y, sample, C=50.0, tol=1e-8)
        np.testing.assert_allclose(ans.decision[pos], ref, atol=1e-4 * max(1, abs(ref).max()))


def test_weighted_errors_and_value():
    bank, y = make_problem()
    rng = np.random.default_rng(3)
    D = rng.random(y.size)
    D /= D.sum()
    sample = rng.choice(y.size, size=25, p=D)
    oracle = WeakLearners(bank, y, C=50.0)
    ans = oracle(BoostQuery.make(sample, [4, 1, 2], D))
    assert isinstance(ans, WeakLearnersAnswer)
    np.testing.assert_array_equal(ans.kernels, [4, 1, 2])
    assert set(np.unique(ans.predictions).tolist()) <= {-1.0, 1.0}
    np.testing.assert_array_equal(ans.predictions, np.where(ans.decision > 0, 1.0, -1.0))
    expect = np.array([D[p != y].sum() for p in ans.predictions])
    np.testing.assert_allclose(ans.errors, expect, rtol=1e-12)
    assert ans.value == pytest.approx(expect.min())
    # without a distribution the error is the plain training error
    plain = oracle(BoostQuery.make(sample, [4]))
    assert plain.errors[0] == pytest.approx(np.mean(plain.predictions[0] != y))
    assert not hasattr(ans, "alpha")  # nothing for the driver to warm-start with


def test_counts_rounds_and_svms():
    bank, y = make_problem()
    oracle = WeakLearners(bank, y)
    assert (oracle.n_calls, oracle.n_fits) == (0, 0)
    oracle(BoostQuery.make(np.arange(20), [0, 1, 2]))
    oracle(BoostQuery.make(np.arange(20), [3]))
    assert (oracle.n_calls, oracle.n_fits) == (2, 4)


def test_one_class_sample_gives_the_constant_classifier_of_that_class():
    bank, y = make_problem()
    pos = np.flatnonzero(y > 0)[:6]
    ans = WeakLearners(bank, y)(BoostQuery.make(np.repeat(pos, 2), [0, 2]))
    assert np.all(ans.predictions == 1.0)
    assert all(lrn.support.size == 0 for lrn in ans.learners)
    assert ans.errors[0] == pytest.approx(np.mean(y < 0))


def test_query_arrays_are_read_only_copies():
    s = np.array([1, 2, 3])
    q = BoostQuery.make(s, [0], np.full(3, 1 / 3))
    s[0] = 99
    assert q.sample[0] == 1
    with pytest.raises(ValueError):
        q.sample[0] = 5
    with pytest.raises(ValueError):
        q.distribution[0] = 1.0


def test_raw_matrices_are_accepted():
    bank, y = make_problem()
    a = WeakLearners(bank.K, y, C=3.0)(BoostQuery.make(np.arange(30), [1, 2]))
    b = WeakLearners(bank, y, C=3.0)(BoostQuery.make(np.arange(30), [1, 2]))
    np.testing.assert_allclose(a.decision, b.decision)


@pytest.mark.parametrize(
    "sample, kernels, dist, exc, match",
    [
        ([], [0], None, ValueError, "query.sample is empty"),
        ([0, 60], [0], None, ValueError, "query.sample must hold indices"),
        ([-1, 2], [0], None, ValueError, "query.sample must hold indices"),
        ([0.5, 2.0], [0], None, TypeError, "query.sample must hold integer"),
        ([[0, 1]], [0], None, ValueError, "query.sample must be 1-D"),
        ([0, 1], [], None, ValueError, "query.kernels is empty"),
        ([0, 1], [5], None, ValueError, "query.kernels must hold indices"),
        ([0, 1], [1, 1], None, ValueError, "must not repeat"),
        ([0, 1], [0], np.full(60, 0.5), ValueError, "sum to 1"),
        ([0, 1], [0], np.full(59, 1 / 59), ValueError, "shape"),
        ([0, 1], [0], np.r_[np.nan, np.full(59, 1 / 59)], ValueError, "finite"),
        ([0, 1], [0], np.r_[np.inf, np.full(59, 1 / 59)], ValueError, "finite"),
        ([0, 1], [0], np.r_[-0.5, 1.5, np.zeros(58)], ValueError, "non-negative"),
    ],
)
def test_bad_queries_name_the_field(sample, kernels, dist, exc, match):
    bank, y = make_problem()
    oracle = WeakLearners(bank, y)
    q = BoostQuery(np.asarray(sample), np.asarray(kernels), dist)
    with pytest.raises(exc, match=match):
        oracle(q)
    assert oracle.n_calls == 0


def test_bad_query_type():
    bank, y = make_problem()
    with pytest.raises(TypeError, match="BoostQuery"):
        WeakLearners(bank, y)(np.array([0.2, 0.8]))


def test_bad_construction():
    bank, y = make_problem()
    with pytest.raises(ValueError, match="C must be > 0"):
        WeakLearners(bank, y, C=0.0)
    with pytest.raises(TypeError, match="C must be a real"):
        WeakLearners(bank, y, C="50")
    with pytest.raises(ValueError, match="tol"):
        WeakLearners(bank, y, tol=-1.0)
    with pytest.raises(ValueError, match="single class"):
        WeakLearners(bank, np.ones_like(y))
    with pytest.raises(ValueError, match="y has 59 labels"):
        WeakLearners(bank, y[:-1])
    with pytest.raises(ValueError, match="y must hold only"):
        WeakLearners(bank, np.where(y > 0, 1.0, 0.0))
    with pytest.raises(TypeError, match="bank must be"):
        WeakLearners("kernels", y)


def test_iteration_budget_warns_once_and_counts():
    from mklopt.oracles import ConvergenceWarning

    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=50.0, max_iter=2)
    with pytest.warns(ConvergenceWarning, match="iteration budget") as rec:
        ans = oracle(BoostQuery.make(np.arange(40), [0, 1, 2]))
    assert oracle.n_unconverged == 3 and len(rec) >= 1
    assert ans.predictions.shape == (3, y.size)  # the cut-off learners are still used


@pytest.mark.parametrize("storage", ["dense", "on_the_fly"])
def test_long_rounds_run_in_parallel_with_the_same_learners(storage, monkeypatch):
    # Rounds switch to the parallel loop after a round that took at least
    # PARALLEL_ROUND_SECONDS; forced here from the second round on, the
    # learners equal those of serial rounds bit for bit.
    import numba

    import mklopt.oracles.weak_learners as wl
    from mklopt import KernelBank
    from mklopt.kernels import poly, rbf

    rng = np.random.default_rng(2)
    X = rng.normal(size=(70, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=70) > 0, 1.0, -1.0)
    bank = KernelBank.from_specs(X, [rbf(0.5), rbf(1.0), rbf(3.0), poly(1), poly(2)],
                                 storage=storage)
    queries = [BoostQuery.make(rng.choice(70, 25), np.arange(5)) for _ in range(4)]
    used = []
    real = wl._run_round

    def spy(costs, *args):
        used.append(costs is not None)
        if costs is not None:  # the kernels' iterations of the last round
            assert len(costs) == len(args[1]) and np.all(np.asarray(costs) > 0)
        return real(costs, *args)

    monkeypatch.setattr(wl, "_run_round", spy)
    answers = {}
    for limit in (np.inf, 1e-12):
        monkeypatch.setattr(wl, "PARALLEL_ROUND_SECONDS", limit)
        oracle = WeakLearners(bank, y, C=5.0)
        answers[limit] = [oracle(q) for q in queries]
    if numba.get_num_threads() > 1:
        # serial throughout, then serial for the first round and parallel after
        assert used == [False] * 4 + [False] + [True] * 3
    for a, b in zip(answers[np.inf], answers[1e-12]):
        np.testing.assert_array_equal(a.decision, b.decision)
        np.testing.assert_array_equal(a.errors, b.errors)
        assert a.n_solver_iter == b.n_solver_iter
        for la, lb in zip(a.learners, b.learners):
            np.testing.assert_array_equal(la.coef, lb.coef)
            assert la.bias == lb.bias
