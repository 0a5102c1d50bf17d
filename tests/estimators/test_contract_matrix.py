"""The contract matrix: every estimator x registered loss x input x path x install.

Each cell fits a small problem and checks that the loss named is the one
fitted: a spy loss registered by this module (``tests/_contract_spies.py``)
must be called during the fit, and for the cross-validated estimators
during the search itself (calls on the folds' training parts, which are
smaller than any refit problem), not only in the refit. A cell that an
estimator does not serve must be refused with an error naming the path.
Every fitted cell is certified (its relative gap within ``tol``), saves and
loads to the same decisions, and parallel fits (``n_jobs=2``, joblib's Dask
backend) give the serial model bit for bit.

A new estimator, loss or input kind is a new row or column here: the
first test fails when a loss is registered that the matrix does not run.
"""

import warnings

import numpy as np
import pytest

from mklopt import (
    MKBoostClassifier,
    MKLClassifier,
    MKLClassifierCV,
    MKLOneClass,
    MKLRegressor,
    MKLRegressorCV,
)
from mklopt.kernels import linear, rbf
from mklopt.persist import load_model, save_model
from mklopt.tasks import oracle_names
from tests import _contract_spies as spies

SPECS = [rbf(0.5), rbf(2.0), linear()]
CS = [0.3, 10.0]
TOL = 1e-2

#: Every loss the matrix runs, per task: the built-in ones and the spies.
LOSSES = {
    "classification": ["hinge", "logistic", "spy", "spy_plain"],
    "regression": ["epsilon_insensitive", "squared", "spy"],
    "one-class": ["nu", "spy"],
}


@pytest.fixture(scope="module", autouse=True)
def spy_losses():
    spies.register()
    yield
    spies.unregister()


@pytest.fixture(autouse=True)
def clear_calls():
    spies.CALLS.clear()
    with warnings.catch_warnings():
        # small problems: a CV grid or a pair may stop short of tol; the
        # cells check the gaps they need themselves
        warnings.simplefilter("ignore")
        yield


def _three_classes():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0, 0.0], [2.0, 0.5, 0.0], [0.5, 2.0, 1.0]])
    X = np.concatenate([c + rng.normal(size=(15, 3)) for c in centres])
    y = np.repeat(np.array(["a", "b", "c"]), 15)
    return X, y


def _stack(X, Y=None):
    """The kernels of SPECS between ``X`` and ``Y`` (default ``X``), shape (3, n, m)."""
    Y = X if Y is None else Y
    d2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return np.stack([np.exp(-d2 / (2 * 0.5**2)), np.exp(-d2 / (2 * 2.0**2)), X @ Y.T])


X3, Y3 = _three_classes()
PAIR_SIZE = 30  # every one-vs-one problem of X3 has 30 points


def _classifier(cv, loss, multiclass, precomputed, **kw):
    kernels = "precomputed" if precomputed else SPECS
    common = dict(kernels=kernels, loss=loss, multiclass=multiclass, tol=TOL, **kw)
    if cv:
        # cv="C-only": C alone (formulations=None); True: the default
        # formulations (p = 1, 2, inf, and L1 shared with "ovo")
        extra = {"formulations": None} if cv == "C-only" else {}
        return MKLClassifierCV(Cs=CS, cv=3, **common, **extra)
    return MKLClassifier(C=3.0, **common)


def _results(est):
    est = getattr(est, "best_estimator_", est)
    res = est.result_
    return list(res) if isinstance(res, (list, tuple)) else [res]


def _assert_certified(est):
    for res in _results(est):
        assert res.lower <= res.value + 1e-9 * abs(res.value)
        if res.converged:
            assert res.rel_gap <= TOL


def _decisions(est, X):
    return est.decision_function(X) if hasattr(est, "decision_function") else est.predict(X)


def _assert_round_trip(est, X_test, tmp_path):
    path = tmp_path / "model.npz"
    save_model(est, path)
    back, _ = load_model(path)
    np.testing.assert_allclose(_decisions(back, X_test), _decisions(est, X_test),
                               rtol=0, atol=1e-12)
    if hasattr(est, "loss"):
        assert back.loss == est.loss


def test_the_matrix_runs_every_registered_loss():
    for task, names in LOSSES.items():
        missing = set(oracle_names(task)) - set(names)
        assert not missing, f"losses of the {task} task the matrix does not run: {missing}"


@pytest.mark.parametrize("precomputed", [False, True], ids=["features", "precomputed"])
@pytest.mark.parametrize("multiclass", ["ovo", "shared"])
@pytest.mark.parametrize("loss", LOSSES["classification"])
@pytest.mark.parametrize("cv", [False, True, "C-only"], ids=["plain", "CV", "CV-C-only"])
def test_classifiers_fit_the_loss_they_name(cv, loss, multiclass, precomputed, tmp_path):
    X = _stack(X3) if precomputed else X3
    est = _classifier(cv, loss, multiclass, precomputed).fit(X, Y3)
    if loss.startswith("spy"):
        assert spies.CALLS, f"the {loss!r} oracle was never called"
        if cv:
            # the search's own solves, on the folds' training parts
            assert min(spies.CALLS) < PAIR_SIZE, "the CV search did not run the named loss"
            assert PAIR_SIZE in spies.CALLS, "the refit did not run the named loss"
    else:
        assert not spies.CALLS
    _assert_certified(est)
    assert est.score(X, Y3) >= 0.8
    if cv:
        # the refit is the chosen formulation: MKLClassifier(**best_params_)
        for name, value in est.best_params_.items():
            assert getattr(est.best_estimator_, name) == value
        assert hasattr(est, "formulations_") == (cv is True)
        if cv is True:
            assert {f["multiclass"] for f in est.formulations_} == (
                {"ovo", "shared"} if multiclass == "ovo" else {"shared"})
    # probabilities where the loss's oracle declares its decisions log-odds
    assert hasattr(getattr(est, "best_estimator_", est), "predict_proba") == (loss == "logistic")
    X_test = _stack(X3[::3], X3) if precomputed else X3[::3]
    _assert_round_trip(getattr(est, "best_estimator_", est), X_test, tmp_path)
    if loss == "spy":
        # The spy is the hinge oracle: the same model as loss="hinge".
        ref = _classifier(cv, "hinge", multiclass, precomputed).fit(X, Y3)
        np.testing.assert_allclose(est.decision_function(X_test), ref.decision_function(X_test),
                                   rtol=0, atol=1e-10)
        if cv:  # the search itself: the same fold scores, hence the same C
            np.testing.assert_allclose(est.cv_results_["mean_test_score"],
                                       ref.cv_results_["mean_test_score"], rtol=0, atol=1e-12)


def _regression_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=40)


@pytest.mark.parametrize("loss", LOSSES["regression"])
@pytest.mark.parametrize("cv", [False, True], ids=["plain", "CV"])
def test_regressors_fit_the_loss_they_name(cv, loss, tmp_path):
    X, t = _regression_data()
    # standardize=False: each fold's problem is then the plain estimator's on
    # that fold (no statistics of the whole data), checked below
    if cv:
        # every candidate on every fold: each row's score is checked below
        est = MKLRegressorCV(kernels=SPECS, loss=loss, Cs=CS, cv=3, tol=1e-4,
                             standardize=False, search="exhaustive").fit(X, t)
    else:
        est = MKLRegressor(kernels=SPECS, loss=loss, C=3.0, tol=TOL, standardize=False).fit(X, t)
    if loss == "spy":
        assert spies.CALLS
        if cv:
            assert min(spies.CALLS) < len(t) and len(t) in spies.CALLS
    else:
        assert not spies.CALLS
    _assert_certified(est)
    assert est.score(X, t) >= 0.5
    _assert_round_trip(getattr(est, "best_estimator_", est), X, tmp_path)
    if cv:
        # The search's fold scores against an independent loop: the plain
        # estimator fitted on each fold (consecutive folds, as KFold(3)),
        # scored on its held-out part; certified optima agree to a few tol.
        folds = np.array_split(np.arange(len(t)), 3)
        for c, C in enumerate(CS):
            ref = []
            for te in folds:
                tr = np.setdiff1d(np.arange(len(t)), te)
                one = MKLRegressor(kernels=SPECS, loss=loss, C=C, tol=1e-4, standardize=False)
                ref.append(one.fit(X[tr], t[tr]).score(X[te], t[te]))
            assert est.cv_results_["mean_test_score"][c] == pytest.approx(np.mean(ref), abs=0.02)
    if loss == "spy":  # the spy is the epsilon-insensitive oracle: the same search and model
        ref = (MKLRegressorCV(kernels=SPECS, Cs=CS, cv=3, tol=1e-4, standardize=False,
                              search="exhaustive") if cv
               else MKLRegressor(kernels=SPECS, C=3.0, tol=TOL, standardize=False)).fit(X, t)
        np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=0, atol=1e-10)
        if cv:
            np.testing.assert_allclose(est.cv_results_["mean_test_score"],
                                       ref.cv_results_["mean_test_score"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES["one-class"])
def test_one_class_fits_the_loss_it_names(loss, tmp_path):
    X, _ = _regression_data()
    est = MKLOneClass(kernels=SPECS, loss=loss, nu=0.2, tol=TOL).fit(X)
    assert bool(spies.CALLS) == (loss == "spy")
    _assert_certified(est)
    inliers = np.mean(est.predict(X) == 1)
    assert 0.6 <= inliers <= 0.95  # nu bounds the training outliers' share
    _assert_round_trip(est, X, tmp_path)


@pytest.mark.parametrize("make", [
    lambda: MKLRegressor(kernels="precomputed"),
    lambda: MKLRegressorCV(kernels="precomputed"),
    lambda: MKLOneClass(kernels="precomputed"),
    lambda: MKBoostClassifier(kernels="precomputed"),
], ids=["MKLRegressor", "MKLRegressorCV", "MKLOneClass", "MKBoostClassifier"])
def test_estimators_without_a_precomputed_path_refuse_it_by_name(make):
    X, t = _regression_data()
    with pytest.raises((TypeError, ValueError), match="precomputed|kernels"):
        make().fit(_stack(X), t)


def test_mkboost_fits_on_features(tmp_path):
    est = MKBoostClassifier(kernels=SPECS, n_rounds=5, random_state=0).fit(X3, Y3)
    assert est.score(X3, Y3) >= 0.8
    _assert_round_trip(est, X3[::3], tmp_path)


# ------------------------------------------------------------ parallel = serial
PARALLEL_CELLS = [
    dict(cv=False, loss="hinge", multiclass="ovo", precomputed=False),
    dict(cv=False, loss="spy", multiclass="ovo", precomputed=True),
    dict(cv=False, loss="logistic", multiclass="shared", precomputed=False),
    dict(cv=True, loss="hinge", multiclass="ovo", precomputed=False),
    dict(cv=True, loss="spy_plain", multiclass="ovo", precomputed=True),
]


def _ids(cell):
    return "-".join(str(v) for v in cell.values())


def _assert_same_model(a, b, X_test):
    a, b = getattr(a, "best_estimator_", a), getattr(b, "best_estimator_", b)
    np.testing.assert_array_equal(np.asarray(a.weights_), np.asarray(b.weights_))
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(a.decision_function(X_test), b.decision_function(X_test))


@pytest.mark.parametrize("cell", PARALLEL_CELLS, ids=_ids)
def test_n_jobs_gives_the_serial_model_bit_for_bit(cell):
    pytest.importorskip("joblib")
    X = _stack(X3) if cell["precomputed"] else X3
    X_test = _stack(X3[::3], X3) if cell["precomputed"] else X3[::3]
    serial = _classifier(**cell, n_jobs=1).fit(X, Y3)
    parallel = _classifier(**cell, n_jobs=2).fit(X, Y3)
    _assert_same_model(serial, parallel, X_test)


@pytest.mark.slow  # a two-process cluster (tests/estimators/test_parallel_fits.py has a quick one)
def test_the_dask_backend_gives_the_serial_model_bit_for_bit():
    pytest.importorskip("distributed")
    import joblib

    from tests._cluster import local_client, no_hang

    fits = {}
    with local_client() as client:  # noqa: F841 (the backend's client)
        for k, cell in enumerate(PARALLEL_CELLS):
            X = _stack(X3) if cell["precomputed"] else X3
            with no_hang(300), joblib.parallel_backend("dask"):
                fits[k] = _classifier(**cell).fit(X, Y3)
    for k, cell in enumerate(PARALLEL_CELLS):
        X = _stack(X3) if cell["precomputed"] else X3
        X_test = _stack(X3[::3], X3) if cell["precomputed"] else X3[::3]
        _assert_same_model(_classifier(**cell).fit(X, Y3), fits[k], X_test)


# ------------------------------------------------ weights and probabilities
#: The classification losses whose oracle takes per-sample bounds (C_i).
WEIGHTED = {"hinge", "spy"}


def _weights(n):
    sw = np.linspace(0.5, 2.0, n)
    sw[::7] = 0.0  # some samples left out
    return sw


@pytest.mark.parametrize("precomputed", [False, True], ids=["features", "precomputed"])
@pytest.mark.parametrize("loss", LOSSES["classification"])
@pytest.mark.parametrize("cv", [False, True], ids=["plain", "CV"])
def test_classifiers_take_weights_and_give_probabilities(cv, loss, precomputed, tmp_path):
    X = _stack(X3) if precomputed else X3
    X_test = _stack(X3[::3], X3) if precomputed else X3[::3]
    sw = _weights(len(Y3))
    opts = dict(probability=True, random_state=0)
    if loss in WEIGHTED:
        est = _classifier(cv, loss, "ovo", precomputed, class_weight={"a": 2.0}, **opts)
        est.fit(X, Y3, sample_weight=sw)
        best = getattr(est, "best_estimator_", est)
        for sv in best.support_:  # samples of weight 0 are never support vectors
            assert np.all(sw[sv] > 0)
    else:
        # a loss whose oracle takes no per-sample bounds is refused, naming it
        with pytest.raises(ValueError, match=f"loss={loss!r} takes no per-sample weights"):
            _classifier(cv, loss, "ovo", precomputed, class_weight={"a": 2.0}, **opts).fit(X, Y3)
        with pytest.raises(ValueError, match=f"loss={loss!r} takes no per-sample weights"):
            _classifier(cv, loss, "ovo", precomputed, **opts).fit(X, Y3, sample_weight=sw)
        est = _classifier(cv, loss, "ovo", precomputed, **opts).fit(X, Y3)
        best = getattr(est, "best_estimator_", est)
    assert bool(spies.CALLS) == loss.startswith("spy")
    _assert_certified(est)
    assert est.score(X, Y3) >= 0.8
    # probabilities for every loss: Platt sigmoids coupled over the three classes
    P = est.predict_proba(X_test)
    assert P.shape == (X_test.shape[-2] if precomputed else len(X_test), 3)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(est.classes_[P.argmax(1)] == Y3[::3]) >= 0.8
    _assert_round_trip(best, X_test, tmp_path)
    back, _ = load_model(tmp_path / "model.npz")
    np.testing.assert_allclose(back.predict_proba(X_test), P, rtol=0, atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES["regression"])
@pytest.mark.parametrize("cv", [False, True], ids=["plain", "CV"])
def test_regressors_take_sample_weights(cv, loss, tmp_path):
    X, t = _regression_data()
    sw = _weights(len(t))
    if cv:
        est = MKLRegressorCV(kernels=SPECS, loss=loss, Cs=CS, cv=3, tol=1e-4)
    else:
        est = MKLRegressor(kernels=SPECS, loss=loss, C=3.0, tol=TOL)
    est.fit(X, t, sample_weight=sw)
    assert bool(spies.CALLS) == (loss == "spy")
    _assert_certified(est)
    best = getattr(est, "best_estimator_", est)
    assert np.all(sw[best.support_] > 0)
    assert est.score(X, t) >= 0.5
    _assert_round_trip(best, X, tmp_path)


@pytest.mark.parametrize("loss", LOSSES["one-class"])
def test_one_class_takes_sample_weights(loss, tmp_path):
    X, _ = _regression_data()
    sw = _weights(len(X))
    est = MKLOneClass(kernels=SPECS, loss=loss, nu=0.2, tol=TOL).fit(X, sample_weight=sw)
    assert bool(spies.CALLS) == (loss == "spy")
    _assert_certified(est)
    assert np.all(sw[est.support_] > 0)
    _assert_round_trip(est, X, tmp_path)
# ---- the inputs of issue 44: named columns, samples-first stacks, repaired kernels
def _sigmoid(X, Y=None):
    Y = X if Y is None else Y
    return np.tanh(0.5 * X @ Y.T - 1.0)  # indefinite


def _clip_by_hand(K):
    e, V = np.linalg.eigh(K)
    Vp = V[:, e > 0]
    return (Vp * e[e > 0]) @ Vp.T, Vp @ Vp.T


def _new_input(kind):
    """``(estimator kwargs, X_fit, X_test, reference kwargs, reference X_fit, X_test)``."""
    if kind == "named_features":
        pd = pytest.importorskip("pandas")
        cols = ["u", "v", "w"]
        df = pd.DataFrame(X3, columns=cols)
        named = {"uv": [rbf(0.5, features=["u", "v"]), linear(features=["u", "v"])],
                 "w": [rbf(2.0, features=slice(2, None))]}
        plain = [rbf(0.5, features=[0, 1]), linear(features=[0, 1]), rbf(2.0, features=[2])]
        return ({"kernels": named}, df, df.iloc[::3], {"kernels": plain}, X3, X3[::3])
    K, Kt = _stack(X3), _stack(X3[::3], X3)
    if kind == "samples_first":
        return ({"kernels": "precomputed", "kernel_axis": -1}, np.moveaxis(K, 0, -1),
                np.moveaxis(Kt, 0, -1), {"kernels": "precomputed"}, K, Kt)
    # psd="clip": the stack with an indefinite sigmoid kernel, against the
    # kernel clipped by hand and its test rows projected by hand
    S, St = _sigmoid(X3), _sigmoid(X3[::3], X3)
    clipped, P = _clip_by_hand(S)
    return ({"kernels": "precomputed", "psd": "clip"}, np.concatenate([K, S[None]]),
            np.concatenate([Kt, St[None]]), {"kernels": "precomputed"},
            np.concatenate([K, clipped[None]]), np.concatenate([Kt, (St @ P)[None]]))


@pytest.mark.parametrize("kind", ["named_features", "samples_first", "psd_clip"])
@pytest.mark.parametrize("cv", [False, True], ids=["plain", "CV"])
def test_classifiers_on_the_new_inputs(cv, kind, tmp_path):
    kw, X, X_test, ref_kw, X_ref, X_ref_test = _new_input(kind)

    def make(**k):
        if cv:
            return MKLClassifierCV(Cs=CS, cv=3, tol=1e-4, **k)
        return MKLClassifier(C=3.0, tol=1e-4, **k)

    est = make(**kw).fit(X, Y3)
    _assert_certified(est)
    assert est.score(X, Y3) >= 0.7  # a CV may choose the small C on these views
    _assert_round_trip(getattr(est, "best_estimator_", est), X_test, tmp_path)
    # the same problem given the old way: the same model
    ref = make(**ref_kw).fit(X_ref, Y3)
    # (the clip's eigenvectors differ in the last bits from one BLAS kernel to
    # another, so the two problems agree to the inner solver's accuracy; a wrong
    # map changes decisions by far more)
    np.testing.assert_allclose(est.decision_function(X_test), ref.decision_function(X_ref_test),
                               rtol=0, atol=1e-5)
    if kind == "named_features":
        assert getattr(est, "best_estimator_", est).kernel_names_ == [
            "rbf(0.5)[uv]", "linear[uv]", "rbf(2)[w]"]


@pytest.mark.parametrize("kind", ["named_features", "samples_first", "psd_clip"])
def test_estimators_without_precomputed_refuse_the_new_inputs(kind):
    # MKLRegressor and MKLOneClass take named columns; the precomputed-only
    # inputs are no parameters of theirs (their tables do not list them)
    X, t = _regression_data()
    if kind == "named_features":
        pd = pytest.importorskip("pandas")
        df = pd.DataFrame(X, columns=["u", "v", "w"])
        for est, yy in ((MKLRegressor(kernels={"uv": [rbf(1.0, features=["u", "v"])],
                                               "w": [linear(features=["w"])]}, C=3.0), t),
                        (MKLOneClass(kernels={"uv": [rbf(1.0, features=["u", "v"])],
                                              "w": [linear(features=["w"])]}), None)):
            est.fit(df, yy)
            assert est.kernel_names_ == ["rbf(1)[uv]", "linear[w]"]
            ref = type(est)(**{**est.get_params(), "kernels": [rbf(1.0, features=[0, 1]),
                                                                linear(features=[2])]})
            ref.fit(X, yy)
            np.testing.assert_allclose(_decisions(est, df), _decisions(ref, X), atol=1e-10)
    else:
        name = "kernel_axis" if kind == "samples_first" else "psd"
        for cls in (MKLRegressor, MKLOneClass, MKBoostClassifier):
            with pytest.raises(TypeError, match=name):
                cls(**{name: -1 if name == "kernel_axis" else "clip"})
        with pytest.raises(ValueError, match=f"{name}.*kernels='precomputed'"):
            MKLClassifier(kernels=SPECS, **{name: -1 if name == "kernel_axis" else "clip"}
                          ).fit(X3, Y3)
