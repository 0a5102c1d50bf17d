"""The CV estimators choose the formulation (the norm p, shared or per-pair weights) with C.

Issue 44, item 2. Every property is checked against an independent
computation: the choice is the argmax of the table, the refit is
``MKLClassifier(**best_params_)``, p = inf is libsvm on the uniform sum of
the same normalised kernels, a warm start over p reaches the certified
value of a cold one, a single-formulation search is the C-only search bit
for bit, and bad ``formulations`` are refused by name.
"""

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.svm import SVC

import mklopt.estimators.mkl_cv as mkl_cv
from mklopt import MKLClassifier, MKLClassifierCV, MKLRegressor, MKLRegressorCV, datasets
from mklopt.estimators import GridEdgeWarning
from mklopt.kernels import KernelBank, linear, poly, rbf
from mklopt.persist import load_model, save_model

SPECS = [rbf(1.0), rbf(8.0), rbf(64.0), poly(2), linear()]
CS = [0.1, 1.0, 10.0]
TOL = 1e-3


def _standardised(X):
    sd = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)


@pytest.fixture(scope="module")
def binary():
    X, y = datasets.load("ionosphere")
    keep = np.sort(np.random.default_rng(0).choice(X.shape[0], 100, replace=False))
    return _standardised(X[keep]), y[keep]


def three_class_data():
    """90 points of satellite's first three classes, standardised."""
    X, y = datasets.load("satellite")
    rng = np.random.default_rng(1)
    keep = np.flatnonzero(np.isin(y, np.unique(y)[:3]))
    keep = np.sort(rng.choice(keep, 90, replace=False))
    return _standardised(X[keep]), y[keep]


@pytest.fixture(scope="module")
def three_classes():
    return three_class_data()


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _cv(X, y, **kw):
    folds = list(StratifiedKFold(3).split(X, y))
    kw = {"Cs": CS, "cv": folds, "kernels": SPECS, "tol": TOL, **kw}
    return _fit(MKLClassifierCV(**kw), X, y), folds


# ------------------------------------------------------------ the table and the choice
def test_default_grid_and_the_choice_is_the_argmax(three_classes):
    X, y = three_classes
    # every candidate on every fold (the default halving drops some: tested below)
    cv, folds = _cv(X, y, search="exhaustive")
    res = cv.cv_results_
    n_c = len(CS)
    # the default grid: L1, p = 2, p = inf per pair, and L1 shared (three classes)
    assert cv.formulations_ == [{"p": 1.0, "multiclass": "ovo"}, {"p": 2.0, "multiclass": "ovo"},
                                {"p": np.inf, "multiclass": "ovo"},
                                {"p": 1.0, "multiclass": "shared"}]
    assert len(res["params"]) == 4 * n_c
    for key in ("param_C", "param_p", "param_multiclass", "mean_test_score", "rank_test_score",
                "std_test_score", "mean_fit_time", "split0_test_score", "split2_test_score"):
        assert len(res[key]) == 4 * n_c, key
    for i, params in enumerate(res["params"]):
        assert res["param_C"][i] == params["C"] and res["param_p"][i] == params["p"]
        assert res["param_multiclass"][i] == params["multiclass"]
    splits = np.stack([res[f"split{k}_test_score"] for k in range(3)], axis=1)
    np.testing.assert_allclose(res["mean_test_score"], splits.mean(axis=1))
    # the best: the first row of the largest mean, rank 1
    best = int(np.flatnonzero(res["mean_test_score"] == res["mean_test_score"].max())[0])
    assert cv.best_index_ == best and res["rank_test_score"][best] == 1
    assert cv.best_params_ == res["params"][best]
    assert cv.best_C_ == cv.best_params_["C"]
    assert cv.best_score_ == res["mean_test_score"][best]
    assert cv.best_formulation_ == {k: v for k, v in cv.best_params_.items() if k != "C"}
    # every formulation's paths, the chosen one's as path_*
    f_best = best // n_c
    assert len(cv.paths_) == 4
    np.testing.assert_array_equal(cv.path_value_, cv.paths_[f_best]["value"])
    assert cv.paths_[0]["value"].shape == (3, n_c, 3)  # three pairs
    assert cv.paths_[3]["value"].shape == (3, n_c, 1)  # one shared path
    # each row's oracle calls: its fold paths' calls, summed over pairs
    for f, paths in enumerate(cv.paths_):
        np.testing.assert_allclose(res["mean_n_oracle_calls"][f * n_c:(f + 1) * n_c],
                                   paths["n_oracle_calls"].sum(axis=2).mean(axis=0))


@pytest.mark.parametrize("formulations", [
    None, [{"p": 2.0}], [{"p": np.inf}], [{"p": 1.0, "multiclass": "shared"}],
    [{"p": 1.5}, {"p": 4.0, "multiclass": "shared"}],
], ids=["default", "p2", "pinf", "shared", "mixed"])
def test_best_estimator_is_the_direct_fit_of_best_params(three_classes, formulations):
    X, y = three_classes
    kw = {} if formulations is None else {"formulations": formulations}
    cv, _ = _cv(X, y, **kw)
    direct = _fit(MKLClassifier(kernels=SPECS, tol=TOL, **cv.best_params_), X, y)
    for name, value in cv.best_params_.items():
        assert getattr(cv.best_estimator_, name) == value
    np.testing.assert_allclose(cv.decision_function(X), direct.decision_function(X),
                               rtol=0, atol=1e-8)
    np.testing.assert_allclose(cv.weights_, direct.weights_, rtol=0, atol=1e-10)


def test_the_chosen_formulation_survives_save_and_load(three_classes, tmp_path):
    X, y = three_classes
    cv, _ = _cv(X, y, formulations=[{"p": 2.0}, {"p": 1.0, "multiclass": "shared"}])
    save_model(cv.best_estimator_, tmp_path / "m.npz")
    back, _ = load_model(tmp_path / "m.npz")
    assert back.p == cv.best_params_["p"] and back.multiclass == cv.best_params_["multiclass"]
    np.testing.assert_allclose(back.decision_function(X), cv.decision_function(X),
                               rtol=0, atol=1e-12)


# -------------------------------------------------------- p = inf is libsvm on the sum
def _raw_kernels(X):
    """The kernels of SPECS between all points of ``X``, shape (n_kernels, n, n), not normalised."""
    bank = KernelBank.from_specs(X, SPECS, storage="dense", normalize=None)
    idx = np.arange(X.shape[0])
    return np.asarray(bank.blocks(np.arange(len(SPECS)), idx, idx), dtype=np.float64)


def _sum(K, rows, cols, train):
    """The sum of the kernels ``K[:, rows][:, :, cols]``, each with unit mean diagonal on ``train``."""
    scale = np.array([np.mean(np.diag(Kk)[train]) for Kk in K])
    return np.einsum("k,kij->ij", 1.0 / scale, K[:, rows][:, :, cols])


def test_p_inf_is_svc_on_the_uniform_sum_of_the_normalised_kernels(binary):
    X, y = binary
    tol = 1e-6
    cv, folds = _cv(X, y, formulations=[{"p": np.inf}], tol=tol)
    assert np.all(cv.paths_[0]["converged"])
    K = _raw_kernels(X)
    # the fold problems: libsvm on the sum of the fold's normalised kernels
    for k, (tr, te) in enumerate(folds):
        for c, C in enumerate(CS):
            svc = SVC(kernel="precomputed", C=C, tol=1e-8).fit(_sum(K, tr, tr, tr), y[tr])
            ya = svc.dual_coef_[0]  # y_i alpha_i over the support vectors
            sv = tr[svc.support_]
            value = np.abs(ya).sum() - 0.5 * ya @ _sum(K, sv, sv, tr) @ ya
            assert cv.paths_[0]["value"][k, c, 0] == pytest.approx(value, rel=1e-4)
            # its accuracy on the validation part (decisions near 0 may flip)
            d = svc.decision_function(_sum(K, te, tr, tr))
            score = np.mean(svc.predict(_sum(K, te, tr, tr)) == y[te])
            slack = np.sum(np.abs(d) < 1e-3) / len(te)
            assert abs(cv.cv_results_[f"split{k}_test_score"][c] - score) <= slack + 1e-12
    # the refit: the same SVM on all the data
    every = np.arange(len(y))
    svc = SVC(kernel="precomputed", C=cv.best_C_, tol=1e-8).fit(_sum(K, every, every, every), y)
    d = svc.decision_function(_sum(K, every, every, every))
    np.testing.assert_allclose(cv.decision_function(X), d, rtol=0, atol=1e-3 * np.abs(d).max())
    # one oracle call per solved point: the uniform start is the optimum
    calls = cv.paths_[0]["n_oracle_calls"]
    assert set(np.unique(calls)) <= {0, 1}


# ------------------------------------------------------------------ warm over p
def _same_certified_values(warm, cold, n_formulations):
    """Every path point of both searches converged, to the same value within the gaps."""
    for f in range(n_formulations):
        for fit in (warm, cold):
            assert np.all(fit.paths_[f]["converged"])
        np.testing.assert_allclose(warm.paths_[f]["value"], cold.paths_[f]["value"],
                                   rtol=2 * TOL)


def test_warm_start_over_p_reaches_the_cold_certified_value(three_classes, monkeypatch):
    X, y = three_classes
    forms = [{"p": 1.5}, {"p": 2.0}, {"p": 3.0}]
    warm, _ = _cv(X, y, formulations=forms, search="exhaustive")
    monkeypatch.setattr(mkl_cv, "_WARM_OVER_P", False)
    cold, _ = _cv(X, y, formulations=forms, search="exhaustive")
    _same_certified_values(warm, cold, 3)
    # p = 1.5 has no solved neighbour: the same run; p = 2 and 3 start elsewhere
    np.testing.assert_array_equal(warm.paths_[0]["n_oracle_calls"],
                                  cold.paths_[0]["n_oracle_calls"])
    assert not np.array_equal(warm.paths_[1]["n_oracle_calls"][0],
                              cold.paths_[1]["n_oracle_calls"][0])


def test_shared_weights_start_from_the_per_pair_mean_and_reach_the_cold_value(
        three_classes, monkeypatch):
    X, y = three_classes
    forms = [{"p": 1.0}, {"p": 1.0, "multiclass": "shared"}]
    guides = []
    real = mkl_cv._first_guide

    def spy(formulations, f, solved):
        out = real(formulations, f, solved)
        guides.append((f, {g: solved[g] for g in solved}, out))
        return out

    monkeypatch.setattr(mkl_cv, "_first_guide", spy)
    warm, _ = _cv(X, y, formulations=forms, search="exhaustive")
    (f0, _, g0), (f1, solved, g1) = guides
    assert (f0, g0) == (0, None)  # L1 per pair: nothing solved before it
    assert f1 == 1 and len(g1) == 1 and len(g1[0]) == len(CS)  # one path, every C
    per_pair = solved[0]  # the per-pair first-fold weights: 3 pairs x 3 Cs
    for c in range(len(CS)):
        np.testing.assert_allclose(g1[0][c], np.mean([path[c] for path in per_pair], axis=0))
        assert abs(g1[0][c].sum() - 1.0) < 1e-12 and np.all(g1[0][c] >= 0)  # on the simplex
    monkeypatch.setattr(mkl_cv, "_first_guide", real)
    monkeypatch.setattr(mkl_cv, "_WARM_SHARED", False)
    cold, _ = _cv(X, y, formulations=forms, search="exhaustive")
    _same_certified_values(warm, cold, 2)  # only the start differs
    np.testing.assert_array_equal(warm.paths_[0]["n_oracle_calls"],
                                  cold.paths_[0]["n_oracle_calls"])


def test_the_neighbour_of_a_norm():
    forms = [{"p": 1.0}, {"p": 1.5}, {"p": 2.0}, {"p": np.inf}, {"p": 4.0, "multiclass": "x"}]
    assert mkl_cv._neighbour(forms, 1, [0]) is None  # not from L1
    assert mkl_cv._neighbour(forms, 2, [0, 1]) == 1
    assert mkl_cv._neighbour(forms, 3, [0, 1, 2]) is None  # p = inf starts at its optimum
    assert mkl_cv._neighbour(forms, 4, [0, 1, 2]) is None  # other paths


# ------------------------------------------------------ C alone, as before
@pytest.mark.parametrize("own, single", [
    ({}, [{"p": 1.0}]),
    ({"method": "lp", "p": 2.0}, [{"p": 2.0}]),
    ({"multiclass": "shared"}, [{"p": 1.0, "multiclass": "shared"}]),
], ids=["L1", "lp", "shared"])
def test_a_single_formulation_is_the_c_only_search(three_classes, own, single):
    X, y = three_classes
    alone, _ = _cv(X, y, formulations=None, **own)
    one, _ = _cv(X, y, formulations=single, **{k: v for k, v in own.items() if k == "method"})
    for key in [k for k in alone.cv_results_ if k.startswith("split")] + ["mean_test_score"]:
        np.testing.assert_array_equal(alone.cv_results_[key], one.cv_results_[key])
    for key in ("value", "rel_gap", "n_oracle_calls"):
        np.testing.assert_array_equal(getattr(alone, f"path_{key}_"), getattr(one, f"path_{key}_"))
    assert alone.best_C_ == one.best_C_
    assert alone.best_params_ == {"C": alone.best_C_}
    assert not hasattr(alone, "formulations_")
    np.testing.assert_allclose(alone.decision_function(X), one.decision_function(X), atol=1e-12)


def test_auto_is_the_own_formulation_when_one_is_set(binary):
    X, y = binary
    cv, _ = _cv(X, y, method="lp", p=2.0)  # formulations="auto"
    assert cv.best_params_ == {"C": cv.best_C_}
    assert len(cv.cv_results_["params"]) == len(CS)


def test_binary_default_grid_has_no_shared_formulation(binary):
    X, y = binary
    cv, _ = _cv(X, y)
    assert cv.formulations_ == [{"p": p, "multiclass": "ovo"} for p in (1.0, 2.0, np.inf)]


# ------------------------------------------------------------ the edge warning
def _edge_warnings(est, X, y):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        est.fit(X, y)
    edge = [w for w in seen if issubclass(w.category, GridEdgeWarning)]
    # the warning points at the line that called fit, not inside mklopt
    assert all(w.filename == __file__ for w in edge), [w.filename for w in edge]
    return [str(w.message) for w in edge]


def test_edge_warning_on_c_when_and_only_when_the_best_c_is_an_end(binary):
    X, y = binary
    # two values: the best is always an end
    msgs = _edge_warnings(MKLClassifierCV(Cs=[0.1, 1.0], cv=3, kernels=SPECS, tol=TOL,
                                          formulations=[{"p": 1.0}, {"p": np.inf}]), X, y)
    assert len(msgs) == 1 and "of Cs" in msgs[0] and "widen Cs" in msgs[0]
    # one value is no grid
    est = MKLClassifierCV(Cs=[1.0], cv=3, kernels=SPECS, tol=TOL,
                          formulations=[{"p": 1.0}, {"p": np.inf}])
    assert _edge_warnings(est, X, y) == []
    # a wider grid: a warning exactly when the choice is an end of it
    est = MKLClassifierCV(Cs=np.logspace(-3, 3, 7), cv=3, kernels=SPECS, tol=TOL,
                          formulations=[{"p": 1.0}])
    msgs = _edge_warnings(est, X, y)
    assert bool(msgs) == (est.best_C_ in (est.Cs_[0], est.Cs_[-1]))


def test_edge_warning_on_a_finite_p_not_on_1_or_inf(binary):
    X, y = binary
    est = MKLClassifierCV(Cs=[1.0], cv=3, kernels=SPECS, tol=TOL,
                          formulations=[{"p": 1.5}, {"p": 3.0}])
    msgs = _edge_warnings(est, X, y)
    assert len(msgs) == 1 and "formulations" in msgs[0] and f"p={est.best_params_['p']:g}" in msgs[0]
    est = MKLClassifierCV(Cs=[1.0], cv=3, kernels=SPECS, tol=TOL,
                          formulations=[{"p": 1.0}, {"p": 2.0}, {"p": np.inf}])
    msgs = _edge_warnings(est, X, y)
    assert bool(msgs) == (est.best_params_["p"] == 2.0)  # 2 is the only finite p > 1: both ends
    est = MKLClassifierCV(Cs=[1.0], cv=3, kernels=SPECS, tol=TOL,
                          formulations=[{"p": 1.0}, {"p": np.inf}])
    assert _edge_warnings(est, X, y) == []


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("formulations, exc, match", [
    ([], ValueError, "formulations is empty"),
    ([{"q": 2}], ValueError, r"formulations\[0\] has unknown key\(s\) 'q'"),
    ([{"p": 0.5}], ValueError, r"formulations\[0\]: p=0.5 must be a real 1 <= p <= inf"),
    ([{"p": "2"}], ValueError, r"formulations\[0\]: p='2'"),
    ([{"multiclass": "ova"}], ValueError, "multiclass='ova' must be 'ovo' or 'shared'"),
    ([{"p": 2}, {"p": 2.0}], ValueError, r"formulations\[1\] repeats formulations\[0\]"),
    ("all", TypeError, "formulations must be 'auto', None"),
    ([2.0], TypeError, r"formulations\[0\] must be a dict"),
])
def test_bad_formulations_are_refused_by_name(binary, formulations, exc, match):
    X, y = binary
    with pytest.raises(exc, match=match):
        MKLClassifierCV(Cs=CS, cv=3, kernels=SPECS, formulations=formulations).fit(X, y)


@pytest.mark.parametrize("kw, match", [
    ({"method": "mirror", "formulations": [{"p": 2.0}]},
     r"formulations: \{'p': 2.0.*only used by Lp-MKL.*method='mirror'"),
    ({"elastic_net": 0.5, "formulations": [{"p": 1.0}]},
     r"formulations: \{'p': 1.0.*cannot be combined with elastic_net"),
    ({"method": "lp", "formulations": [{"p": 1.0}]},
     r"formulations: \{'p': 1.0.*p=1 is L1-MKL: use method='auto'"),
    ({"method": "active_set", "formulations": [{"p": 1.0, "multiclass": "shared"}]},
     r"formulations: .*multiclass='shared' cannot run"),
])
def test_formulations_incompatible_with_the_estimator_are_refused(three_classes, kw, match):
    X, y = three_classes
    with pytest.raises(ValueError, match=match):
        MKLClassifierCV(Cs=CS, cv=3, kernels=SPECS, **kw).fit(X, y)


def test_the_regressor_has_no_multiclass():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError, match=r"unknown key\(s\) 'multiclass' \(a regressor has no"):
        MKLRegressorCV(Cs=CS, kernels=SPECS,
                       formulations=[{"multiclass": "shared"}]).fit(X, X[:, 0])


# ------------------------------------------------------------------ the regressor
def test_regressor_searches_the_norm(monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3))
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=60)
    folds = list(KFold(3).split(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLRegressorCV(Cs=CS, cv=folds, kernels=SPECS, tol=TOL, standardize=False,
                            search="exhaustive").fit(X, t)
        alone = MKLRegressorCV(Cs=CS, cv=folds, kernels=SPECS, tol=TOL, standardize=False,
                               formulations=None).fit(X, t)
    assert cv.formulations_ == [{"p": 1.0}, {"p": 2.0}, {"p": np.inf}]
    res = cv.cv_results_
    assert cv.best_index_ == int(np.argmax(res["mean_test_score"]))
    # the L1 rows are the C-only search's
    for key in ("split0_test_score", "split1_test_score", "mean_test_score"):
        np.testing.assert_array_equal(res[key][:len(CS)], alone.cv_results_[key])
    direct = MKLRegressor(kernels=SPECS, tol=TOL, standardize=False, **cv.best_params_).fit(X, t)
    np.testing.assert_allclose(cv.predict(X), direct.predict(X), rtol=0, atol=1e-8)
