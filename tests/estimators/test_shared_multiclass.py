"""Shared-weight multiclass MKL: the composite oracle and MKLClassifier(multiclass="shared").

The composite oracle must be the sum of its parts at any fixed ``w``, its
certified gap must bracket the exact optimum of ``min_w sum_p J_p(w)``
(solved here as one conic program with cvxpy + Clarabel), and the
estimator must learn one weight vector whose vote predicts as well as the
per-pair weights do.
"""

from itertools import combinations

import numpy as np
import pytest

from mklopt import KernelBank, MKLClassifier, solve
from mklopt.domains import LpBall, Simplex
from mklopt.kernels import linear, poly, rbf
from mklopt.methods import ActiveSet, AnalyticLp, LevelBundle, Subgradient
from mklopt.oracles import CompositeOracle, SVMDual
from mklopt.persist import load_model, save_model
from mklopt.stopping import DualityGap, MaxIter
from tests._cvx_reference import _factors

C = 5.0


def _three_classes(n_per=14, seed=0):
    """Three overlapping Gaussian classes in 4-D (two informative features)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [1.6, 0.0], [0.8, 1.4]])
    X = rng.standard_normal((3 * n_per, 4))
    y = np.repeat(np.arange(3), n_per)
    X[:, :2] += centres[y]
    return X, y


SPECS = [rbf(0.5), rbf(2.0), linear(), poly(2), linear(features=[3])]


def _pair_oracles(X, y, tol=1e-6):
    """One SVMDual per pair, each on its view of one raw bank (normalised on its points)."""
    bank = KernelBank.from_specs(X, SPECS, normalize=None)
    parts, mats = [], []
    for i, j in combinations(range(3), 2):
        rows = np.flatnonzero((y == i) | (y == j))
        yp = np.where(y[rows] == j, 1.0, -1.0)
        view = bank.view(rows, normalize="trace")
        parts.append(SVMDual(view, yp, C=C, tol=tol))
        idx = np.arange(len(rows))
        mats.append((view.blocks(np.arange(len(SPECS)), idx, idx), yp))
    return parts, mats


def _joint_optimum(mats, domain):
    """``min_w sum_p J_p(w)`` as its conic dual: one alpha per pair, q summed."""
    import cvxpy as cp

    alphas, cons, quads = [], [], []
    for K, yp in mats:
        L = _factors(np.asarray(K))
        a = cp.Variable(len(yp))
        alphas.append(a)
        cons += [a >= 0, a <= 1, yp @ a == 0]  # a = alpha / C: well-scaled data
        quads.append([cp.sum_squares(Lk.T @ cp.multiply(a, yp)) for Lk in L])
    m = len(quads[0])
    u = cp.Variable(m)
    cons += [sum(q[k] for q in quads) <= u[k] for k in range(m)]
    if isinstance(domain, Simplex):
        h = cp.max(u)
    else:
        h = cp.norm(u, domain.p_star)
    obj = sum(cp.sum(a) for a in alphas) - C * h / 2
    prob = cp.Problem(cp.Maximize(obj), cons)
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9)
    return C * float(prob.value)


@pytest.fixture(scope="module")
def problem():
    X, y = _three_classes()
    return X, y, *_pair_oracles(X, y)


def test_views_match_the_blocks_the_reference_reads(problem):
    # The oracles read views of one bank; the reference reads dense blocks.
    X, y, parts, mats = problem
    w = np.array([0.1, 0.3, 0.2, 0.3, 0.1])
    for part, (K, yp) in zip(parts, mats):
        own = SVMDual(np.asarray(K), yp, C=C, tol=1e-6)
        assert part(w).value == pytest.approx(own(w).value, rel=1e-6)


def test_composite_is_the_sum_of_its_parts(problem):
    X, y, parts, _ = problem
    oracle = CompositeOracle(parts)
    rng = np.random.default_rng(1)
    for _ in range(3):
        w = rng.dirichlet(np.ones(len(SPECS)))
        ans = oracle(w)
        singles = [p(w) for p in parts]
        assert ans.value == pytest.approx(sum(s.value for s in singles), rel=1e-9)
        np.testing.assert_allclose(ans.q, np.sum([s.q for s in singles], axis=0), rtol=1e-9)
        np.testing.assert_allclose(ans.grad, -0.5 * ans.q)
        assert ans.linear_term == pytest.approx(sum(s.linear_term for s in singles))
        # The contract J(w) = l - w'q/2 holds for the sum as for every part.
        assert ans.value == pytest.approx(ans.linear_term - 0.5 * w @ ans.q, rel=1e-9)
        # Layout: alpha concatenated part after part, support indexes into it.
        for p, s in enumerate(singles):
            np.testing.assert_allclose(oracle.split(ans.alpha)[p], s.alpha)
            assert ans.biases[p] == pytest.approx(s.bias)
        np.testing.assert_array_equal(ans.support, np.flatnonzero(ans.alpha > 0))
        assert np.isnan(ans.bias)


def test_each_part_is_warm_started_from_its_own_slice(problem):
    X, y, parts, _ = problem
    oracle = CompositeOracle(parts)
    w = np.full(len(SPECS), 1.0 / len(SPECS))
    cold = oracle(w)
    assert cold.n_solver_iter > 0
    # At the same w every slice is optimal already: no part needs an SMO step.
    again = oracle(w, warm_start=cold.alpha)
    assert again.n_solver_iter == 0
    assert again.value == pytest.approx(cold.value, rel=1e-12)
    # A start of another length (another problem) is refused, not cut to fit.
    with pytest.raises(ValueError, match="alpha"):
        oracle(w, warm_start=cold.alpha[:-1])


@pytest.mark.parametrize(
    "method, domain",
    [
        (LevelBundle(), Simplex(len(SPECS))),
        (Subgradient(), Simplex(len(SPECS))),
        (AnalyticLp(p=2.0), LpBall(len(SPECS), 2.0)),
    ],
    ids=["level", "simplemkl", "lp2"],
)
def test_certified_gap_contains_the_joint_optimum(problem, method, domain):
    X, y, parts, mats = problem
    exact = _joint_optimum(mats, domain)
    res = solve(CompositeOracle(parts), method, stop=DualityGap(1e-4) | MaxIter(300))
    assert res.converged
    # lower <= J* <= value, up to the SMO accuracy of the summed values
    # (relative ~2 inner tol, see SVMDual's Notes).
    slack = 1e-5 * abs(exact)
    assert res.lower - slack <= exact <= res.value + slack
    assert res.value - exact <= 2e-4 * abs(exact)
    # The joint optimum is not the sum of the per-pair optima (each pair
    # could pick other weights), which are only lower bounds of it.
    per_pair = sum(
        solve(p, type(method)(**method.get_params()), stop=DualityGap(1e-5) | MaxIter(300)).lower
        for p in parts
    )
    assert per_pair <= exact + slack


def test_active_set_refuses_the_sum_clearly(problem):
    X, y, parts, _ = problem
    with pytest.raises(TypeError, match="ActiveSet needs an oracle that describes its dual"):
        solve(CompositeOracle(parts), ActiveSet(), stop=MaxIter(2))


def test_parts_must_agree_on_the_kernels(problem):
    X, y, parts, _ = problem
    other = SVMDual(np.eye(4)[None], [1, -1, 1, -1])
    with pytest.raises(ValueError, match="same number of kernels"):
        CompositeOracle([parts[0], other])
    with pytest.raises(ValueError, match="at least one"):
        CompositeOracle([])


# ---- the estimator --------------------------------------------------------------------


@pytest.fixture(scope="module")
def satellite():
    from mklopt import datasets

    X, y = datasets.load("satellite")
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))[:900]
    return X[idx[:450]], y[idx[:450]], X[idx[450:]], y[idx[450:]]


@pytest.fixture(scope="module")
def fitted(satellite):
    Xtr, ytr, Xte, yte = satellite
    kw = dict(kernels=[rbf(0.25), rbf(1.0), rbf(4.0), linear(), poly(2)], C=10.0,
              standardize=True)
    shared = MKLClassifier(multiclass="shared", **kw).fit(Xtr, ytr)
    ovo = MKLClassifier(**kw).fit(Xtr, ytr)
    return shared, ovo


def test_shared_estimator_has_one_weight_vector_and_predicts_well(satellite, fitted):
    Xtr, ytr, Xte, yte = satellite
    shared, ovo = fitted
    n_pairs = len(shared.pairs_)
    assert n_pairs == 15  # six classes
    assert shared.weights_.shape == (5,)
    assert shared.weights_.sum() == pytest.approx(1.0)
    assert all(np.array_equal(m.weights, shared.weights_) for m in shared.models_)
    assert len(shared.support_) == len(shared.dual_coef_) == n_pairs
    assert shared.intercept_.shape == (n_pairs,)
    assert shared.converged_ and shared.gap_ <= shared.tol
    assert isinstance(shared.n_iter_, int)
    # One vote of the pairs' SVMs on one combination: about as good as
    # per-pair combinations (a few points either way on 450 test points).
    acc_shared, acc_ovo = shared.score(Xte, yte), ovo.score(Xte, yte)
    assert acc_shared > 0.8
    assert acc_shared >= acc_ovo - 0.03


def test_shared_model_saves_and_loads(tmp_path, satellite, fitted):
    Xtr, ytr, Xte, yte = satellite
    shared, _ = fitted
    path = tmp_path / "shared.npz"
    save_model(shared, path)
    clf, meta = load_model(path)
    assert meta["params"]["multiclass"] == "shared"
    assert clf.multiclass == "shared"
    np.testing.assert_array_equal(clf.weights_, shared.weights_)
    assert clf.gap_ == shared.gap_ and clf.n_iter_ == shared.n_iter_
    np.testing.assert_allclose(clf.decision_function(Xte), shared.decision_function(Xte),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(Xte), shared.predict(Xte))


def test_one_vs_one_files_do_not_mention_multiclass(tmp_path, fitted):
    _, ovo = fitted
    save_model(ovo, tmp_path / "ovo.npz")
    clf, meta = load_model(tmp_path / "ovo.npz")
    assert "multiclass" not in meta["params"]
    assert clf.multiclass == "ovo" and clf.weights_.shape == (15, 5)


def test_two_classes_shared_is_the_binary_problem():
    X, y = _three_classes()
    keep = y < 2
    kw = dict(kernels=SPECS, C=C, tol=1e-3)
    a = MKLClassifier(multiclass="shared", **kw).fit(X[keep], y[keep])
    b = MKLClassifier(**kw).fit(X[keep], y[keep])
    np.testing.assert_allclose(a.weights_, b.weights_)
    assert a.weights_.shape == (len(SPECS),)


@pytest.mark.parametrize("bad, exc", [("joint", ValueError), (None, TypeError), (1, TypeError)])
def test_multiclass_is_validated(bad, exc):
    X, y = _three_classes(n_per=6)
    with pytest.raises(exc, match="multiclass must be 'ovo'"):
        MKLClassifier(kernels=SPECS, multiclass=bad).fit(X, y)


def test_shared_refuses_the_exact_step_and_skips_the_chain():
    X, y = _three_classes(n_per=6)
    with pytest.raises(ValueError, match="active-set"):
        MKLClassifier(kernels=SPECS, method="active_set", multiclass="shared").fit(X, y)
    # A tight tol would chain Level into ActiveSet; shared runs Level alone.
    clf = MKLClassifier(kernels=SPECS, tol=1e-5, multiclass="shared").fit(X, y)
    assert clf.gap_ <= 1e-5


def test_shared_fit_reads_views_of_one_bank(monkeypatch):
    # The pairs of a shared fit read their blocks of one bank on all points.
    X, y = _three_classes(n_per=8)
    built, viewed = [], []
    from_specs, view = KernelBank.from_specs, KernelBank.view

    def count_build(*args, **kw):
        built.append(kw.get("normalize"))
        return from_specs(*args, **kw)

    def count_view(self, rows, normalize=None):
        viewed.append(len(rows))
        return view(self, rows, normalize=normalize)

    monkeypatch.setattr(KernelBank, "from_specs", staticmethod(count_build))
    monkeypatch.setattr(KernelBank, "view", count_view)
    MKLClassifier(kernels=SPECS, multiclass="shared").fit(X, y)
    assert built == [None]  # one raw bank
    assert viewed == [16, 16, 16]  # one normalised view per pair
