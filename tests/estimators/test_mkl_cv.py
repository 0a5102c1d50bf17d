"""MKLClassifierCV: the choice of GridSearchCV, one bank, a certified warm-started path."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedKFold

from mklopt import KernelBank, MKLClassifier, MKLClassifierCV, datasets
from mklopt.estimators._path import ray_scale
from mklopt.estimators.mkl_cv import check_Cs
from mklopt.kernels import linear, poly, rbf
from tests._spies import spy_from_specs

SPECS = [rbf(1.0), rbf(8.0), rbf(64.0), poly(2), linear()]
CS = [0.1, 1.0, 10.0, 100.0]


def _standardised(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


@pytest.fixture(scope="module")
def binary():
    X, y = datasets.load("ionosphere")
    rng = np.random.default_rng(0)
    keep = np.sort(rng.choice(X.shape[0], 150, replace=False))
    return _standardised(X[keep]), y[keep]


@pytest.fixture(scope="module")
def three_classes():
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(1)
    classes = np.unique(y)[:3]
    keep = np.flatnonzero(np.isin(y, classes))
    keep = np.sort(rng.choice(keep, 150, replace=False))
    return _standardised(X[keep]), y[keep]


def _both(X, y, tol, **kw):
    folds = list(StratifiedKFold(3).split(X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLClassifierCV(formulations=None, Cs=CS, cv=folds, kernels=SPECS, tol=tol, **kw).fit(X, y)
        gs = GridSearchCV(MKLClassifier(kernels=SPECS, tol=tol), {"C": CS}, cv=folds,
                          **({"scoring": kw["scoring"]} if "scoring" in kw else {})).fit(X, y)
    return cv, gs, folds


def _assert_same_choice(cv, gs, folds):
    """Same C, unless the grid search's own scores of the two are within the margin.

    Two fold models certified to the same relative gap may still put a
    validation point near the boundary on different sides; two such points
    per fold is the margin the scores may differ by.
    """
    n_val = min(te.size for _, te in folds)
    margin = 2.0 / n_val
    for k in range(len(folds)):
        key = f"split{k}_test_score"
        assert np.all(np.abs(cv.cv_results_[key] - gs.cv_results_[key]) <= margin + 1e-12)
    mean_gs = gs.cv_results_["mean_test_score"]
    if cv.best_C_ != gs.best_params_["C"]:
        assert abs(mean_gs[cv.best_index_] - gs.best_score_) <= margin
    else:
        assert cv.best_index_ == gs.best_index_


def test_binary_same_choice_as_grid_search(binary):
    X, y = binary
    cv, gs, folds = _both(X, y, tol=1e-3)
    _assert_same_choice(cv, gs, folds)
    res = cv.cv_results_
    assert [p["C"] for p in res["params"]] == CS
    assert list(res["param_C"]) == CS
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "mean_fit_time"):
        assert res[key].shape == (len(CS),)
    assert res["rank_test_score"][cv.best_index_] == 1
    assert cv.best_score_ == res["mean_test_score"].max()
    # Refit at the chosen C on all the data; predictions delegate to it.
    assert cv.best_estimator_.C == cv.best_C_
    np.testing.assert_array_equal(cv.predict(X), cv.best_estimator_.predict(X))
    assert cv.score(X, y) == cv.best_estimator_.score(X, y)


def test_multiclass_same_choice_as_grid_search(three_classes):
    X, y = three_classes
    cv, gs, folds = _both(X, y, tol=1e-3, scoring="balanced_accuracy")
    assert cv.path_rel_gap_.shape == (3, len(CS), 3)  # folds, Cs, pairs
    _assert_same_choice(cv, gs, folds)


def test_one_bank_for_all_folds_and_pairs(three_classes, monkeypatch):
    X, y = three_classes
    built = []
    original = KernelBank.from_specs.__func__

    def counting(cls, X, specs, *args, **kwargs):
        built.append(X.shape[0])
        return original(cls, X, specs, *args, **kwargs)

    monkeypatch.setattr(KernelBank, "from_specs", classmethod(counting))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifierCV(Cs=CS, cv=3, kernels=SPECS).fit(X, y)
    # One bank for the 3 folds x 4 Cs x 3 pairs and the refit's pairs.
    assert built == [X.shape[0]]


def test_the_halving_search_reads_stored_products_with_a_dense_banks_values(
        three_classes, monkeypatch):
    """storage="auto": products under halving, a dense bank when every candidate runs every fold."""
    from mklopt.kernels import grid

    X, y = three_classes
    specs = list(grid(X.shape[1], protocol="mkboost2013"))  # 17 kernels on one group
    storages = []
    original = KernelBank.from_specs.__func__

    def recording(cls, X, specs, *args, **kwargs):
        bank = original(cls, X, specs, *args, **kwargs)
        storages.append(bank.storage.name)
        return bank

    monkeypatch.setattr(KernelBank, "from_specs", classmethod(recording))
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for search, storage in [("halving", "auto"), ("halving", "dense"),
                                ("exhaustive", "auto")]:
            fits[search, storage] = MKLClassifierCV(
                Cs=CS, cv=3, kernels=specs, search=search, storage=storage).fit(X, y)
    assert storages == ["products", "dense", "dense"]
    a, b = fits["halving", "auto"], fits["halving", "dense"]
    for key in [k for k in a.cv_results_ if k.startswith("split")] + ["mean_test_score"]:
        np.testing.assert_array_equal(a.cv_results_[key], b.cv_results_[key])
    np.testing.assert_array_equal(a.path_value_, b.path_value_)
    assert a.best_params_ == b.best_params_


def test_path_points_are_certified_and_match_cold_fits(binary):
    X, y = binary
    tol = 1e-3
    folds = list(StratifiedKFold(3).split(X, y))
    cv = MKLClassifierCV(formulations=None, Cs=CS, cv=folds, kernels=SPECS, tol=tol).fit(X, y)
    assert cv.path_converged_.all()
    assert np.all(cv.path_rel_gap_ <= tol)
    warm_calls = cv.path_n_oracle_calls_[0].sum()
    cold_calls = 0
    train = folds[0][0]
    for c, C in enumerate(CS):
        cold = MKLClassifier(kernels=SPECS, C=C, tol=tol).fit(X[train], y[train])
        cold_calls += cold.n_oracle_calls_
        # Both values are within tol (relative) above the same optimum.
        J_path, J_cold = cv.path_value_[0, c, 0], cold.result_.value
        assert abs(J_path - J_cold) <= 1.05 * tol * max(J_path, J_cold)
    # The point of the path: the warm starts save solves.
    assert warm_calls < cold_calls


@settings(max_examples=50, deadline=None)
@given(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3), st.floats(1.0, 1e3))
def test_ray_scale_is_the_best_feasible_scale(L, Q, ratio):
    t = ray_scale(L, Q, ratio)
    assert 0.0 <= t <= ratio
    f = lambda s: s * L - 0.5 * s * s * Q  # noqa: E731
    grid = np.linspace(0.0, ratio, 101)
    assert f(t) >= max(f(s) for s in grid) - 1e-9 * max(1.0, abs(f(t)))


@pytest.mark.slow  # worker processes compile numba's functions again
def test_serial_and_parallel_folds_agree(binary):
    X, y = binary
    kw = dict(Cs=CS[:3], cv=3, kernels=SPECS)
    serial = MKLClassifierCV(formulations=None, **kw).fit(X, y)
    para = MKLClassifierCV(formulations=None, n_jobs=2, **kw).fit(X, y)
    np.testing.assert_allclose(para.path_value_, serial.path_value_, rtol=1e-9)
    assert para.best_C_ == serial.best_C_


def test_clone_and_params():
    est = MKLClassifierCV(formulations=None, Cs=[1.0, 10.0], cv=4, tol=1e-3)
    twin = clone(est)
    assert twin.get_params() == est.get_params()
    assert "C" not in est.get_params()


def test_cs_int_and_list():
    np.testing.assert_allclose(check_Cs(8), np.logspace(-2, 3, 8))
    assert check_Cs([3, 1, 3]).tolist() == [1.0, 3.0]


@pytest.mark.parametrize(
    "params, error, match",
    [
        (dict(Cs=0), ValueError, "Cs"),
        (dict(Cs=[1.0, -1.0]), ValueError, "> 0"),
        (dict(Cs=[]), ValueError, "empty"),
        (dict(Cs="many"), TypeError, "Cs"),
        (dict(storage="feature_map"), ValueError, "storage"),
        (dict(tol=-1.0), ValueError, "tol"),
    ],
)
def test_bad_parameters(binary, params, error, match):
    X, y = binary
    with pytest.raises(error, match=match):
        MKLClassifierCV(kernels=SPECS, cv=3, **params).fit(X, y)


def test_fold_with_one_class_is_refused(binary):
    X, y = binary
    order = np.argsort(y, kind="stable")
    half = X.shape[0] // 2
    folds = [(order[:half], order[half:]), (order[half:], order[:half])]
    with pytest.raises(ValueError, match="single class"):
        MKLClassifierCV(kernels=SPECS, cv=folds).fit(X, y)


def test_the_bank_holds_the_samples_class_by_class(three_classes, monkeypatch):
    # Given X in any order, the folds' problems read a bank of the samples
    # class by class: the same problems, point for point, as on X sorted by
    # class with the same folds, so the same path, scores, choice and refit.
    X, y = three_classes
    seen = spy_from_specs(monkeypatch)
    order = np.argsort(np.unique(y, return_inverse=True)[1], kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    folds = list(StratifiedKFold(3).split(X, y))
    sorted_folds = [(np.sort(position[tr]), position[te]) for tr, te in folds]
    kw = dict(Cs=CS[:3], kernels=SPECS, standardize=False, tol=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = MKLClassifierCV(formulations=None, cv=folds, **kw).fit(X, y)
        assert np.array_equal(seen[0][0], X[order])  # the CV's one bank
        b = MKLClassifierCV(formulations=None, cv=sorted_folds, **kw).fit(X[order], y[order])
    for k in range(3):
        key = f"split{k}_test_score"
        assert np.array_equal(a.cv_results_[key], b.cv_results_[key])
    assert a.best_C_ == b.best_C_
    assert np.array_equal(a.best_estimator_.weights_, b.best_estimator_.weights_)
    for k in range(len(a.best_estimator_.models_)):
        mapped = order[b.best_estimator_.support_[k]]
        assert np.array_equal(np.sort(mapped), a.best_estimator_.support_[k])


def test_first_fold_pairs_start_from_a_pair_sharing_a_class(three_classes, monkeypatch):
    # The first fold has no other fold's path to follow: its pair (0, 2)
    # starts from the first point of (0, 1), and (1, 2) from the mean of the
    # first points of (0, 2) (its parent) and (0, 1) (which shares class 1),
    # as MKLClassifier's pairs start; later folds follow the first fold's
    # path of the same pair instead.
    import mklopt.estimators.mkl_cv as mkl_cv

    X, y = three_classes
    real = mkl_cv.c_path
    runs = []

    def spy(*args, **kw):
        points = real(*args, **kw)
        runs.append((kw.get("start"), kw.get("guide"), points))
        return points

    monkeypatch.setattr(mkl_cv, "c_path", spy)
    folds = list(StratifiedKFold(3).split(X, y))
    MKLClassifierCV(formulations=None, Cs=CS, cv=folds, kernels=SPECS, tol=1e-3).fit(X, y)
    assert len(runs) == 3 * 3  # folds x pairs
    first = runs[:3]
    assert first[0][0] is None and all(g is None for _, g, _ in first)
    np.testing.assert_array_equal(first[1][0], first[0][2][0].weights)
    np.testing.assert_allclose(first[2][0], 0.5 * (first[0][2][0].weights
                                                   + first[1][2][0].weights), rtol=0, atol=1e-15)
    for start, guide, _ in runs[3:]:
        assert start is None and guide is not None
    for _, _, points in runs:
        assert all(pt.converged and pt.rel_gap <= 1e-3 for pt in points)


def test_c_path_evaluates_its_start_first(binary):
    from mklopt.estimators._path import _make_svm, c_path
    from mklopt.methods import LevelBundle
    from mklopt.stopping import DualityGap

    X, y = binary
    y = np.where(y == np.unique(y)[0], -1.0, 1.0)
    bank = KernelBank.from_specs(X, SPECS)
    queries = []

    def make(bank, C, tol):
        oracle = _make_svm(y, bank, C, tol)
        real = oracle.__call__

        class Spy(type(oracle)):
            def __call__(self, w, *args, **kw):
                queries.append(np.array(w))
                return real(w, *args, **kw)

        oracle.__class__ = Spy
        return oracle

    w0 = np.zeros(len(SPECS))
    w0[-1] = 1.0
    points = c_path(bank, y, [0.1, 1.0], LevelBundle, lambda: DualityGap(1e-3), 1e-6,
                    make_oracle=make, start=w0)
    np.testing.assert_array_equal(queries[0], w0)
    assert all(pt.converged and pt.rel_gap <= 1e-3 for pt in points)


def test_a_first_point_certified_by_its_start_starts_no_master_problem(binary):
    # Started at the optimal weights of the same problem (another path's
    # first point), the first point's own answer certifies the gap: one
    # oracle call, and the method is started only to learn its feasible set
    # (the master problem, LevelBundle's LP with a handover, is not built).
    from mklopt.estimators._path import c_path
    from mklopt.methods import LevelBundle
    from mklopt.stopping import DualityGap

    X, y = binary
    y = np.where(y == np.unique(y)[0], -1.0, 1.0)
    bank = KernelBank.from_specs(X, SPECS)
    stop = lambda: DualityGap(1e-3)  # noqa: E731
    (ref,) = c_path(bank, y, [1.0], LevelBundle, stop, 1e-6)
    assert ref.converged and ref.n_oracle_calls > 1
    handovers = []

    class Spy(LevelBundle):
        def start(self, oracle, handover=None):
            handovers.append(handover)
            return super().start(oracle, handover=handover)

    (pt,) = c_path(bank, y, [1.0], Spy, stop, 1e-6, start=ref.weights)
    assert pt.converged and pt.rel_gap <= 1e-3
    assert pt.n_oracle_calls == 1
    assert handovers == [None]
    # the same optimum, certified: the two values bracket each other's bounds
    assert pt.lower <= ref.value * (1 + 1e-9) and ref.lower <= pt.value * (1 + 1e-9)


@pytest.mark.parametrize("block_bytes", [None, 8 * 5 * 7 * 3])
def test_path_decisions_equal_each_models_own(binary, monkeypatch, block_bytes):
    # One gather for all the points of a path (union of kernels and support
    # vectors, in passes over the test points) gives each model's decision
    # as its own kernels and support vectors alone give it; a carried point
    # repeats its predecessor's.
    import mklopt.estimators.mkl_cv as mkl_cv

    if block_bytes is not None:
        monkeypatch.setattr(mkl_cv, "_DECISION_BLOCK_BYTES", block_bytes)
    X, y = binary
    bank = KernelBank.from_specs(X, SPECS)
    rng = np.random.default_rng(3)
    rows, test = np.sort(rng.choice(len(y), 60, replace=False)), np.arange(40)
    view = bank.view(rows, normalize="trace")
    yy = np.where(y[rows] == y[0], 1.0, -1.0)
    models = []
    for _ in range(4):
        w = rng.dirichlet(np.ones(len(SPECS)) * 0.3)
        alpha = np.where(rng.random(60) < 0.4, rng.random(60), 0.0)
        models.append((w, alpha * yy, float(rng.normal())))
    models.append((np.eye(len(SPECS))[1], np.zeros(60), 0.5))  # no support vector
    # a path whose points 2 and 5 are carried over (their predecessors' models)
    path = [models[0], models[1], models[1], models[2], models[3], models[3], models[4]]
    carried = [False, False, True, False, False, True, False]
    got = mkl_cv.path_decisions(bank, view, rows, test, path, carried, 1e-3)
    factors = bank.scales / view.scales
    for c, (w, coef, bias) in enumerate(path):
        ks = np.flatnonzero(w > 1e-3 * w.max())
        sv = np.flatnonzero(coef != 0)
        ref = np.full(test.size, bias)
        for k in ks:
            ref += w[k] * factors[k] * (bank.blocks([k], test, rows[sv])[0] @ coef[sv])
        if carried[c]:
            np.testing.assert_array_equal(got[c], got[c - 1])
        np.testing.assert_allclose(got[c], ref, rtol=1e-12, atol=1e-12)
