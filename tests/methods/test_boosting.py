"""Boosting (MKBoost D1, D2, S1, S2): AdaBoost invariants, kernel sampling, edge cases."""

import math

import numpy as np
import pytest

from mklopt import KernelBank, solve
from mklopt.kernels import poly, rbf
from mklopt.methods import METHODS, Boosting
from mklopt.oracles import WeakLearners
from mklopt.oracles.weak_learners import BoostQuery, WeakLearner, WeakLearnersAnswer
from mklopt.stopping import MaxIter

VARIANTS = ["D1", "D2", "S1", "S2"]


def make_problem(n=80, seed=0, noise=0.25):
    """Two noisy interleaved classes and six kernels, some of them poor."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] + noise * rng.normal(size=n) > 0, 1.0, -1.0)
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    G = X @ X.T
    K = np.stack(
        [np.exp(-d / (2 * s**2)) for s in (0.05, 0.3, 1.0, 4.0)] + [G + 1.0, (G + 1.0) ** 3]
    )
    return KernelBank.from_matrices(np.ascontiguousarray(K), check=False), y


def run_rounds(oracle, method):
    """Drive the method by hand and record what each round saw."""
    method.start(oracle)
    rounds = []
    while method.report().stop is None:
        q = method.ask()
        S_before = method.kernel_probabilities
        ans = oracle(q)
        method.tell(q, ans)
        rounds.append((q, ans, S_before))
    return rounds


@pytest.mark.parametrize("variant", VARIANTS)
def test_adaboost_invariants(variant):
    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=10.0)
    method = Boosting(variant, n_rounds=25, random_state=1)
    rounds = run_rounds(oracle, method)
    ext = method.extra()
    ens = ext["ensemble"]
    assert len(ens) == len(rounds) or method.report().stop.reason == "weak_learner_error"
    # D_t is a distribution at every round (the one each query carried)
    for q, _, _ in rounds:
        D = q.distribution
        assert np.all(D >= 0) and D.sum() == pytest.approx(1.0, abs=1e-12)
    D_end = ext["distribution"]
    assert np.all(D_end >= 0) and D_end.sum() == pytest.approx(1.0, abs=1e-12)
    # learner weights positive while e_t < 1/2, and Z_t = 2 sqrt(e_t (1 - e_t))
    bound = 1.0
    F = np.zeros(y.size)
    for t, rnd in enumerate(ens.rounds):
        assert rnd.error < 0.5 and rnd.alpha > 0.0
        assert rnd.alpha == pytest.approx(0.5 * math.log((1 - rnd.error) / rnd.error))
        assert rnd.Z == pytest.approx(2 * math.sqrt(rnd.error * (1 - rnd.error)), rel=1e-10)
        bound *= rnd.Z
        # the round's classifier is what the oracle's learners say, combined
        q, ans, _ = rounds[t]
        if variant[1] == "1":
            j = int(np.argmin(ans.errors))
            h = ans.predictions[j]
            assert rnd.learners == (ans.learners[j],)
        else:
            a = 0.5 * np.log((1 - ans.errors) / ans.errors)
            h = np.where(a @ ans.predictions > 0, 1.0, -1.0)
            np.testing.assert_allclose(rnd.weights, a)
        assert rnd.error == pytest.approx(q.distribution @ (h != y))
        F += rnd.alpha * h
        # training error never exceeds prod_t 2 sqrt(e_t (1 - e_t))
        train_err = np.mean(np.where(F > 0, 1.0, -1.0) != y)
        assert train_err <= bound + 1e-12
    # the exponential loss the method reports is that product
    assert method.report().best.value == pytest.approx(bound, rel=1e-9)
    assert np.mean(np.exp(-y * F)) == pytest.approx(bound, rel=1e-9)
    # the stored ensemble reproduces the training margins from the kernels
    margin = ens.decision_on_training(bank.K)
    np.testing.assert_allclose(margin, F / ens.alphas.sum(), atol=1e-12)
    np.testing.assert_allclose(ext["train_margin"], margin, atol=1e-12)


@pytest.mark.parametrize("variant", ["S1", "S2"])
def test_decay_one_trains_every_kernel_every_round(variant):
    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=10.0)
    rounds = run_rounds(oracle, Boosting(variant, n_rounds=12, decay=1.0, random_state=0))
    for q, _ans, S in rounds:
        np.testing.assert_array_equal(q.kernels, np.arange(bank.n_kernels))
        np.testing.assert_array_equal(S, 1.0)
    assert oracle.n_fits == bank.n_kernels * len(rounds)


@pytest.mark.parametrize("variant", ["S1", "S2"])
def test_decay_below_one_trains_fewer_svms(variant):
    bank, y = make_problem()
    n_rounds = 30
    det = WeakLearners(bank, y, C=10.0)
    res_d = solve(det, Boosting("D" + variant[1], n_rounds=n_rounds, random_state=0))
    sto = WeakLearners(bank, y, C=10.0)
    method = Boosting(variant, n_rounds=n_rounds, random_state=0)
    rounds = run_rounds(sto, method)
    assert det.n_fits == bank.n_kernels * res_d.n_iter
    assert sto.n_fits == sum(q.kernels.size for q, _, _ in rounds) == method.extra()["n_fits"]
    assert sto.n_fits < 0.8 * bank.n_kernels * len(rounds)
    for q, _ans, S in rounds:
        assert q.kernels.size >= 1
        assert S.max() == pytest.approx(1.0)  # the best kernel is always drawn
        assert np.all(S[q.kernels] > 0)


def test_kernel_probabilities_follow_eq_2_10():
    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=10.0)
    beta = 0.25
    method = Boosting("S1", n_rounds=6, decay=beta, random_state=3)
    method.start(oracle)
    for _ in range(5):
        S = method.kernel_probabilities
        q = method.ask()
        ans = oracle(q)
        method.tell(q, ans)
        expect = S.copy()
        expect[ans.kernels] *= beta**ans.errors
        expect /= expect.max()
        np.testing.assert_allclose(method.kernel_probabilities, expect, rtol=1e-12)


def test_no_kernel_drawn_still_trains_one():
    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=10.0)
    method = Boosting("S2", n_rounds=3, random_state=0)
    method.start(oracle)
    method._mb_run.state.S[:] = 1e-300  # nothing would be drawn
    q = method.ask()
    assert q.kernels.size == 1


# ---- edge cases with a scripted oracle -----------------------------------------
class ScriptedOracle:
    """Returns preset predictions so that weighted errors are under control."""

    def __init__(self, y, predictions):
        self.y = np.asarray(y, dtype=float)
        self.preds = [np.asarray(p, dtype=float) for p in predictions]
        self.n_kernels = len(self.preds)
        self.n_samples = self.y.size
        self.n_calls = 0

    def __call__(self, query, warm_start=None):
        self.n_calls += 1
        k = np.asarray(query.kernels)
        P = np.stack([self.preds[j] for j in k])
        D = query.distribution
        errors = (P != self.y) @ D
        learners = tuple(
            WeakLearner(int(j), np.zeros(0, np.int64), np.zeros(0), float(P[i, 0]))
            for i, j in enumerate(k)
        )
        return WeakLearnersAnswer(float(errors.min()), k, errors, P, P.copy(), learners)


def test_zero_error_caps_the_weight_and_stops():
    y = np.array([1, 1, -1, -1, 1, -1], dtype=float)
    oracle = ScriptedOracle(y, [y, -y, np.ones(6)])
    res = solve(oracle, Boosting("D1", n_rounds=50, random_state=0))
    assert res.reason == "zero_error" and res.converged
    assert res.n_iter == 1 and res.n_oracle_calls == 1
    ens = res.extra["ensemble"]
    assert len(ens) == 1 and np.isfinite(ens.alphas[0]) and ens.alphas[0] > 10
    np.testing.assert_array_equal(res.weights, [1.0, 0.0, 0.0])
    assert 0 < res.value < 1e-4


def test_zero_error_in_the_vote_weights_is_capped_too():
    y = np.array([1, 1, -1, -1, 1, -1], dtype=float)
    oracle = ScriptedOracle(y, [y, np.ones(6)])
    res = solve(oracle, Boosting("D2", n_rounds=50, random_state=0))
    ens = res.extra["ensemble"]
    assert res.reason == "zero_error"
    assert np.all(np.isfinite(ens.rounds[0].weights))


def test_error_of_one_half_stops_and_keeps_the_ensemble():
    # round 1: kernel 0 errs on one point out of 4; after reweighting both
    # kernels err on exactly half of the weight -> stop, keep round 1
    y = np.array([1, 1, -1, -1], dtype=float)
    p0 = np.array([1, 1, -1, 1], dtype=float)
    oracle = ScriptedOracle(y, [p0, p0])
    res = solve(oracle, Boosting("D1", n_rounds=50, random_state=0))
    assert res.reason == "weak_learner_error" and not res.converged
    assert res.n_iter == 2 and res.n_oracle_calls == 2
    ext = res.extra
    assert len(ext["ensemble"]) == 1
    np.testing.assert_allclose(ext["round_errors"], [0.25, 0.5])
    assert res.value == pytest.approx(2 * math.sqrt(0.25 * 0.75))


def test_first_round_no_better_than_chance_leaves_an_empty_ensemble():
    y = np.array([1, 1, -1, -1], dtype=float)
    oracle = ScriptedOracle(y, [np.ones(4), -np.ones(4)])
    res = solve(oracle, Boosting("D2", n_rounds=5, random_state=0))
    assert res.reason == "weak_learner_error"
    assert len(res.extra["ensemble"]) == 0
    assert res.value == 1.0 and np.all(res.weights == 0)


# ---- the driver, reproducibility, parameters --------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
def test_runs_through_the_driver(variant):
    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=10.0)
    res = solve(oracle, Boosting(variant, n_rounds=15, random_state=2))
    assert res.reason in ("n_rounds", "zero_error", "weak_learner_error")
    if res.reason == "n_rounds":
        assert res.n_iter == 15 and res.converged
    assert len(res.history) == res.n_oracle_calls == oracle.n_calls == res.n_iter
    ups = np.array([p.upper for p in res.history])
    assert np.all(np.diff(ups) <= 1e-15) and ups[-1] == res.value < 1.0
    assert all(math.isnan(p.gap) and p.lower == -np.inf for p in res.history)
    assert res.weights.sum() == pytest.approx(1.0) and np.all(res.weights >= 0)
    np.testing.assert_allclose(res.history[-1].weights, res.weights)
    # each row's value is the best weighted error among the round's learners
    assert all(0.0 <= p.value < 0.5 for p in res.history)


@pytest.mark.parametrize("variant", ["D1", "S2"])
def test_svm_counts_and_seconds_add_up_over_the_rounds(variant):
    bank, y = make_problem()
    oracle = WeakLearners(bank, y, C=10.0)
    method = Boosting(variant, n_rounds=12, random_state=4)
    rounds = run_rounds(oracle, method)
    ext = method.extra()
    answers = [a for _, a, _ in rounds]
    assert ext["n_fits"] == sum(a.kernels.size for a in answers) == oracle.n_fits
    assert ext["n_solver_iter"] == sum(a.n_solver_iter for a in answers) > 0
    assert all(a.seconds > 0.0 for a in answers)
    assert ext["svm_seconds"] == pytest.approx(sum(a.seconds for a in answers), rel=1e-12)
    # through the driver, the SVMs' share of a run is part of its elapsed time
    res = solve(WeakLearners(bank, y, C=10.0), Boosting(variant, n_rounds=12, random_state=4))
    assert 0.0 < res.extra["svm_seconds"] <= res.elapsed
    assert res.extra["n_solver_iter"] == ext["n_solver_iter"]
    # a storage that computes its blocks counts and times its rounds too
    X = np.random.default_rng(1).normal(size=(60, 3))
    yx = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1.0, -1.0)
    specs = [rbf(0.5), rbf(2.0), poly(2)]
    runs = [
        solve(WeakLearners(KernelBank.from_specs(X, specs, storage=st), yx, C=10.0),
              Boosting(variant, n_rounds=6, random_state=4))
        for st in ("dense", "on_the_fly")
    ]
    for r in runs:
        assert r.extra["n_solver_iter"] > 0 and 0 < r.extra["n_fits"] <= 6 * len(specs)
        assert 0.0 < r.extra["svm_seconds"] <= r.elapsed


def test_registered():
    assert METHODS["mkboost"] is Boosting


def test_same_seed_same_run_and_restart_resets():
    bank, y = make_problem()
    method = Boosting("S2", n_rounds=10, random_state=7)
    r1 = solve(WeakLearners(bank, y, C=10.0), method)
    r2 = solve(WeakLearners(bank, y, C=10.0), method)  # the same instance, restarted
    r3 = solve(WeakLearners(bank, y, C=10.0), Boosting("S2", n_rounds=10, random_state=7))
    r4 = solve(WeakLearners(bank, y, C=10.0), Boosting("S2", n_rounds=10, random_state=8))
    for r in (r2, r3):
        np.testing.assert_array_equal(r.extra["alphas"], r1.extra["alphas"])
        np.testing.assert_array_equal(r.extra["distribution"], r1.extra["distribution"])
        np.testing.assert_array_equal(r.weights, r1.weights)
    assert not np.array_equal(r4.extra["distribution"], r1.extra["distribution"])
    assert method.get_params()["random_state"] == 7


def test_queries_are_read_only_records():
    bank, y = make_problem()
    method = Boosting("D1", n_rounds=3, random_state=0)
    method.start(WeakLearners(bank, y))
    q = method.ask()
    assert isinstance(q, BoostQuery) and q is method.ask()
    assert q.sample.size == round(0.2 * y.size)
    for arr in (q.sample, q.kernels, q.distribution):
        with pytest.raises(ValueError):
            arr[0] = 0


def test_stops_itself_even_with_a_looser_driver_criterion():
    bank, y = make_problem()
    res = solve(
        WeakLearners(bank, y, C=10.0),
        Boosting("D1", n_rounds=4, random_state=0),
        stop=MaxIter(1000),
    )
    assert res.n_iter <= 4


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(variant="D3"), ValueError, "variant must be one of"),
        (dict(variant="d1"), ValueError, "variant"),
        (dict(n_rounds=0), ValueError, "n_rounds must be >= 1"),
        (dict(n_rounds=2.5), TypeError, "n_rounds must be an integer"),
        (dict(sample_ratio=0.0), ValueError, "sample_ratio must be > 0"),
        (dict(sample_ratio=1.5), ValueError, "sample_ratio must be <= 1"),
        (dict(sample_ratio=float("nan")), ValueError, "sample_ratio must be finite"),
        (dict(decay=0.0), ValueError, "decay must be > 0"),
        (dict(decay=2.0), ValueError, "decay must be <= 1"),
        (dict(random_state=-1), ValueError, "random_state must be >= 0"),
        (dict(random_state="seed"), TypeError, "random_state must be None"),
    ],
)
def test_bad_parameters_fail_when_the_run_starts(kwargs, exc, match):
    bank, y = make_problem(n=20)
    method = Boosting(**kwargs)
    with pytest.raises(exc, match=match):
        solve(WeakLearners(bank, y), method)


def test_needs_a_weak_learner_oracle():
    from tests._toy_oracles import PiecewiseLinearOracle

    with pytest.raises(TypeError, match="weak-learner oracle"):
        solve(PiecewiseLinearOracle.random(3, 4), Boosting())


@pytest.mark.parametrize("seed", range(3))
def test_draws_are_those_of_generator_choice(seed):
    # The method draws its sample as rng.choice(N, size, p=D) does, without
    # the checks of p: the same indices from the same stream.
    from mklopt.methods.boosting import _draw, _learner_weight, _round_weight

    p = np.random.default_rng(seed).random(50) ** 4
    p[[3, 17]] = 0.0  # points boosting has driven to zero weight are never drawn
    p /= p.sum()
    a = np.random.default_rng(seed).choice(50, size=200, replace=True, p=p)
    b = _draw(np.random.default_rng(seed), p, 200)
    np.testing.assert_array_equal(a, b)
    assert not np.isin(b, [3, 17]).any()
    for e in (0.0, 1e-12, 0.3, 0.5, 1.0):
        assert _round_weight(e) == pytest.approx(float(_learner_weight(e)), rel=1e-14)
