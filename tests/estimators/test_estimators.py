"""MKLClassifier: the scikit-learn contract, labels, one-vs-one, accuracy, bad input."""

import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import mklopt
from mklopt import MKLClassifier, datasets
from mklopt.estimators import ConvergenceWarning
from mklopt.kernels import linear, poly, rbf
from mklopt.stopping import NoPointError

SMALL = [rbf(1.0), rbf(4.0), linear()]


def small(**kw):
    """A fast estimator for the many tiny fits of the tests."""
    kw.setdefault("kernels", SMALL)
    kw.setdefault("method", "subgradient")
    kw.setdefault("max_iter", 50)
    kw.setdefault("C", 100.0)
    return MKLClassifier(**kw)


def blobs(n=60, seed=0, shift=2.5, n_features=2, n_classes=2):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    centers = rng.normal(0, shift, size=(n_classes, n_features))
    X = centers[y] + rng.normal(size=(n, n_features))
    return X, y


# ---------------------------------------------------------------------------
# scikit-learn's own estimator checks
# ---------------------------------------------------------------------------
def _expected_failures(estimator):
    # As for scikit-learn's own SVC: integer weights equal repeated samples
    # only when the kernels' normalisation and the standardisation, which
    # are statistics of the training points, do not change with repetition,
    # and when the fits are solved to the same tolerance (the checks' 50-step
    # budget stops short). tests/estimators/test_weights_estimators.py checks
    # the equivalence where it holds (normalize=None, standardize=False).
    reason = "sample_weight is not equivalent to repeating samples under the normalisation"
    return {"check_sample_weight_equivalence_on_dense_data": reason}


@parametrize_with_checks([small()], expected_failed_checks=_expected_failures)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        # Several checks fit on a handful of random points where a 50-step
        # budget may end before tol; that warning is expected there.
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_is_real_sklearn_classifier():
    from sklearn.base import BaseEstimator, ClassifierMixin, is_classifier

    clf = MKLClassifier()
    assert isinstance(clf, BaseEstimator) and isinstance(clf, ClassifierMixin)
    assert is_classifier(clf)
    c2 = clone(small(C=3.0))
    assert c2.get_params()["C"] == 3.0 and c2.get_params()["kernels"] == SMALL


def _run_python(code):
    """Run ``code`` in a fresh interpreter that imports this copy of mklopt."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(mklopt.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)


def test_core_import_does_not_load_sklearn():
    _run_python("import sys, mklopt; assert 'sklearn' not in sys.modules, 'sklearn imported'")


def test_works_without_sklearn():
    # Block the import of sklearn, as on a system without it.
    code = textwrap.dedent(
        """
        import sys, warnings
        sys.modules["sklearn"] = None
        import numpy as np
        import mklopt
        from mklopt.kernels import rbf, linear
        from mklopt.estimators import _sklearn
        assert not _sklearn.HAS_SKLEARN
        clf = mklopt.MKLClassifier(kernels=[rbf(1.0), linear()], method="subgradient", C=2.0)
        assert repr(clf).startswith("MKLClassifier(")
        assert "C=2.0" in repr(clf) and "tol" not in repr(clf)
        assert clf.get_params()["C"] == 2.0
        clf.set_params(C=5.0)
        assert clf.C == 5.0
        try:
            clf.set_params(Cee=1)
        except ValueError as e:
            assert "Cee" in str(e)
        else:
            raise AssertionError("set_params accepted a bad name")
        try:
            clf.predict(np.zeros((2, 2)))
        except _sklearn.NotFittedError:
            pass
        else:
            raise AssertionError("predict before fit")
        rng = np.random.default_rng(0)
        X = np.vstack([rng.normal(-2, 1, (20, 2)), rng.normal(2, 1, (20, 2))])
        y = np.array(["a"] * 20 + ["b"] * 20)
        clf2 = type(clf)(**clf.get_params())
        assert clf2.fit(X, y).score(X, y) > 0.9
        assert list(clf2.classes_) == ["a", "b"]
        """
    )
    _run_python(code)


# ---------------------------------------------------------------------------
# composition with scikit-learn tools
# ---------------------------------------------------------------------------
def test_pipeline_and_grid_search():
    X, y = blobs(80, seed=1, n_features=3)
    X = X * np.array([1.0, 100.0, 0.01])  # scales StandardScaler must undo
    pipe = Pipeline([("scale", StandardScaler()), ("mkl", small())])
    search = GridSearchCV(pipe, {"mkl__C": [0.1, 10.0]}, cv=3)
    search.fit(X, y)
    assert search.best_params_["mkl__C"] in (0.1, 10.0)
    assert search.score(X, y) > 0.9
    best = search.best_estimator_.named_steps["mkl"]
    assert best.weights_.shape == (3,)


# ---------------------------------------------------------------------------
# labels and one-vs-one
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels", [("no", "yes"), (0, 1), (3, 7), (-1, 1), (True, False), (2.0, 5.0)]
)
def test_any_two_labels(labels):
    X, y01 = blobs(50, seed=2)
    y = np.array(labels, dtype=object if isinstance(labels[0], str) else None)[y01]
    clf = small().fit(X, y)
    assert list(clf.classes_) == sorted(set(y.tolist()))
    pred = clf.predict(X)
    assert set(pred.tolist()) <= set(y.tolist())
    assert np.mean(pred == y) > 0.9
    # the positive side of the decision function is classes_[1]
    d = clf.decision_function(X)
    np.testing.assert_array_equal(pred, clf.classes_[(d > 0).astype(int)])


def test_label_mapping_is_symmetric():
    X, y = blobs(50, seed=3)
    a = small().fit(X, y)
    b = small().fit(X, 1 - y)
    # equal up to the solver tolerances (SMO and the outer gap)
    np.testing.assert_allclose(a.decision_function(X), -b.decision_function(X), atol=1e-2)
    np.testing.assert_allclose(a.weights_, b.weights_, atol=2e-2)


def test_multiclass_one_vs_one():
    X, y = blobs(90, seed=4, n_classes=3, shift=3.0)
    labels = np.array(["red", "green", "blue"])[y]
    clf = small().fit(X, labels)
    assert list(clf.classes_) == ["blue", "green", "red"]
    assert clf.weights_.shape == (3, len(SMALL))
    assert clf.pairs_.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert len(clf.support_) == 3 and clf.intercept_.shape == (3,)
    assert clf.n_iter_.shape == (3,) and clf.converged_.shape == (3,)
    assert np.mean(clf.predict(X) == labels) > 0.9
    # every pair was trained only on its own two classes
    for (i, j), sv in zip(clf.pairs_, clf.support_):
        assert set(labels[sv]) <= {clf.classes_[i], clf.classes_[j]}
    # predict is the majority vote over the pairwise decisions
    pw = clf.pairwise_decision_function(X)
    votes = np.zeros((X.shape[0], 3))
    for k, (i, j) in enumerate(clf.pairs_):
        votes[np.arange(len(X)), np.where(pw[:, k] > 0, j, i)] += 1
    df = clf.decision_function(X)
    np.testing.assert_array_equal(np.floor(df + 1 / 3), votes)
    clear = votes.max(axis=1) == 2
    np.testing.assert_array_equal(clf.predict(X)[clear], clf.classes_[votes.argmax(axis=1)][clear])


def test_vote_ties_broken_by_decision_values():
    from mklopt.estimators._ovo import ovo_vote

    # three-way tie: each class wins once; class 2 has the largest margins
    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    d = np.array([[-0.1, 0.9, -0.2]])
    scores = ovo_vote(d, pairs, 3)
    # votes: pair(0,1) -> 0, pair(0,2) -> 2, pair(1,2) -> 1: a tie of one vote each
    np.testing.assert_array_equal(np.round(scores), [[1, 1, 1]])
    # confidences: class 0: +0.1 - 0.9 = -0.8; class 1: -0.1 + 0.2 = 0.1; class 2: 0.9 - 0.2 = 0.7
    assert np.argmax(scores) == 2


# ---------------------------------------------------------------------------
# the fitted model
# ---------------------------------------------------------------------------
def _reference_kernel(specs, weights, A, B, Xtrain):
    """NumPy twin of the combined kernel between A and B, each base kernel with
    a unit mean diagonal on Xtrain (the default normalize="diagonal")."""

    def base(spec, U, V):
        if spec.features is not None:
            U, V = U[:, spec.features], V[:, spec.features]
        if type(spec).__name__ == "RBF":
            d2 = ((U[:, None, :] - V[None, :, :]) ** 2).sum(-1)
            return np.exp(-d2 / (2 * spec.sigma**2))
        if type(spec).__name__ == "Poly":
            return (U @ V.T + 1.0) ** spec.degree
        return U @ V.T

    out = np.zeros((A.shape[0], B.shape[0]))
    for spec, w in zip(specs, weights):
        mean_diag = np.trace(base(spec, Xtrain, Xtrain)) / Xtrain.shape[0]
        out += w * base(spec, A, B) / mean_diag
    return out


def test_fitted_attributes_reproduce_decision_function():
    X, y = blobs(60, seed=5, n_features=3, shift=1.5)
    Xtr, Xte, ytr, _ = X[:40], X[40:], y[:40], y[40:]
    specs = [rbf(0.5), rbf(2.0), poly(2), linear(features=[1])]
    clf = MKLClassifier(kernels=specs, method="subgradient", C=5.0).fit(Xtr, ytr)
    assert clf.converged_ and clf.gap_ <= clf.tol
    assert clf.weights_.shape == (4,) and abs(clf.weights_.sum() - 1) < 1e-8
    assert np.all(clf.weights_ >= 0)
    assert clf.n_iter_ >= 1 and clf.n_oracle_calls_ >= clf.n_iter_
    assert len(clf.history_) == clf.n_oracle_calls_
    assert clf.result_.n_oracle_calls == clf.n_oracle_calls_
    K = _reference_kernel(specs, clf.weights_, Xte, Xtr[clf.support_], Xtr)
    ref = K @ clf.dual_coef_ + clf.intercept_[0]
    np.testing.assert_allclose(clf.decision_function(Xte), ref, rtol=1e-6, atol=1e-6)
    # alpha * y sums to zero and respects the box
    assert abs(clf.dual_coef_.sum()) < 1e-8
    assert np.all(np.abs(clf.dual_coef_) <= 5.0 + 1e-9)


def test_prediction_uses_only_support_and_selected_kernels(monkeypatch):
    X, y = blobs(60, seed=6, n_features=2)
    clf = small(weight_threshold=0.5).fit(X, y)
    predictor = clf.models_[0].predictor
    keep = np.flatnonzero(clf.weights_ > 0.5 * clf.weights_.max())
    # the predictor keeps kernel functions of the selected kernels on the
    # support vectors only, and no kernel matrix at all
    fn = predictor.functions
    assert fn.specs == tuple(SMALL[k] for k in keep)
    np.testing.assert_array_equal(fn.X, X[clf.support_])
    assert not any(isinstance(v, np.ndarray) and v.ndim == 3 for v in vars(fn).values())
    calls = []
    real = fn.combine_cross

    def spy(Xn, w, columns=None):
        calls.append((np.array(w), columns))
        return real(Xn, w, columns=columns)

    monkeypatch.setattr(fn, "combine_cross", spy)
    clf.predict(X[:7])
    ((w, cols),) = calls
    assert cols is None and fn.n_samples == clf.support_.size
    np.testing.assert_allclose(w, clf.weights_[keep])


def test_method_instance_is_copied_not_mutated():
    from mklopt.methods import Subgradient

    m = Subgradient(direction="projected")
    before = dict(m.__dict__)
    clf = small(method=m).fit(*blobs(40, seed=7))
    assert m.__dict__ == before
    assert clf.result_.n_oracle_calls > 0


def test_fit_is_deterministic_and_pickles():
    X, y = blobs(50, seed=8)
    a = small().fit(X, y)
    b = small().fit(X, y)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(a.decision_function(X), c.decision_function(X))


def test_callback_and_time_limit():
    X, y = blobs(60, seed=9)
    rows = []
    small(callback=rows.append).fit(X, y)
    assert len(rows) >= 1 and isinstance(rows[0], mklopt.Progress)

    def halt(progress):
        raise StopIteration

    with pytest.warns(ConvergenceWarning, match="callback"):
        clf = small(callback=halt, tol=1e-9).fit(X, y)
    assert clf.n_oracle_calls_ == 1 and not clf.converged_
    # A time limit that ends inside the first oracle call leaves no point to keep.
    with pytest.raises(NoPointError, match="time_limit"):
        small(time_limit=1e-6, tol=1e-12).fit(X, y)


def test_not_converged_warns():
    X, y = blobs(60, seed=10, shift=0.5)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        clf = small(max_iter=1, tol=1e-12).fit(X, y)
    assert not clf.converged_


@pytest.mark.parametrize("labels", [np.array([-1, 1]), np.array(["no", "yes"], dtype=object)])
def test_warnings_name_the_classes_as_given(labels):
    X, y = blobs(60, seed=10, shift=0.5)
    with pytest.warns(ConvergenceWarning) as caught:
        small(max_iter=1, tol=1e-12).fit(X, labels[(y > 0).astype(int)])
    msg = str(caught[0].message)
    a, b = labels.tolist()
    assert f"({a!r} vs {b!r}:" in msg and "np." not in msg


@pytest.mark.parametrize("method", ["level", "cutting_plane", "silp", "simplemkl", "mirror"])
def test_registered_methods_reach_the_gap(method):
    if method not in mklopt.methods.METHODS:
        pytest.skip(f"method {method!r} not available")
    X, y = blobs(60, seed=11, n_features=3, shift=1.5)
    clf = MKLClassifier(kernels=SMALL, method=method, C=2.0, max_iter=200).fit(X, y)
    assert clf.converged_ and clf.gap_ <= 1e-2


def test_lp_and_groups():
    if "lp" not in mklopt.methods.METHODS or "mirror" not in mklopt.methods.METHODS:
        pytest.skip("lp / mirror methods not available")
    X, y = blobs(60, seed=12, n_features=2, shift=1.5)
    clf = small(method="lp", p=2.0, max_iter=200).fit(X, y)
    assert clf.converged_ and abs(np.linalg.norm(clf.weights_, 2) - 1) < 1e-6
    specs = [rbf(1.0), rbf(1.0, features=[0]), linear(features=[0]), rbf(1.0, features=[1])]
    by_features = MKLClassifier(kernels=specs, method="mirror", groups="features", max_iter=300)
    by_features.fit(X, y)
    # "features" groups the kernels by their feature sets: [0], [1, 2], [3]
    explicit = MKLClassifier(
        kernels=specs, method="mirror", groups=[[0], [1, 2], [3]], max_iter=300
    ).fit(X, y)
    np.testing.assert_allclose(by_features.weights_, explicit.weights_)
    assert by_features.converged_ and by_features.gap_ <= by_features.tol
    assert np.all(by_features.weights_ >= 0)


# ---------------------------------------------------------------------------
# accuracy on real data
# ---------------------------------------------------------------------------
def test_accuracy_comparable_to_svc_on_bundled_data():
    X, y = datasets.load("ionosphere")
    Xtr, Xte, ytr, yte = datasets.split(X, y, seed=0)
    specs = [rbf(s) for s in (1.0, 2.0, 4.0, 8.0, 16.0)] + [poly(2), linear()]
    # unit-trace kernels are ~n times smaller than raw ones, hence the large C
    mkl = MKLClassifier(kernels=specs, method="subgradient", C=1000.0).fit(Xtr, ytr)
    acc_mkl = mkl.score(Xte, yte)
    # one good kernel, tuned by cross-validation on the training half
    svc = GridSearchCV(
        SVC(kernel="rbf"), {"gamma": [1 / (2 * s**2) for s in (1.0, 2.0, 4.0, 8.0)]}, cv=3
    ).fit(Xtr, ytr)
    acc_svc = svc.score(Xte, yte)
    assert acc_mkl >= acc_svc - 0.04, (acc_mkl, acc_svc)
    assert acc_mkl > 0.88


# Level-method accuracy (mean, std over 20 splits) in Xu et al. 2008, Table 1.
PAPER_LEVEL_ACCURACY = {"sonar": (79.0, 4.7), "breast": (96.6, 0.8), "vote": (95.7, 1.0)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PAPER_LEVEL_ACCURACY))
def test_full_grid_level_method(name):
    """The paper's protocol end to end: certified convergence, and test
    accuracy within two standard deviations of the paper's Table 1 (sparse
    L1-MKL is not expected to match a tuned single RBF kernel on sonar)."""
    X, y = datasets.load(name)
    Xtr, Xte, ytr, yte = datasets.split(X, y, seed=0)
    clf = MKLClassifier(kernels="grid", method="level", C=100.0).fit(Xtr, ytr)
    assert clf.converged_ and 0 <= clf.result_.rel_gap <= 1e-2
    assert clf.n_kernels_ == 13 * (X.shape[1] + 1)
    mean, std = PAPER_LEVEL_ACCURACY[name]
    assert 100 * clf.score(Xte, yte) >= mean - 2 * std


# ---------------------------------------------------------------------------
# bad input (DESIGN section 7)
# ---------------------------------------------------------------------------
def test_bad_data():
    X, y = blobs(30, seed=13)
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        small().fit(Xn, y)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        small().fit(Xi, y)
    with pytest.raises(ValueError, match="2-D"):
        small().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="29 labels"):
        small().fit(X, y[:-1])
    with pytest.raises(ValueError, match="one class"):
        small().fit(X, np.zeros(30))
    with pytest.raises(ValueError, match="continuous"):
        small().fit(X, np.linspace(0, 1, 30))
    with pytest.raises(ValueError, match="y must be 1-D"):
        small().fit(X, np.c_[y, y])
    clf = small().fit(X, y)
    with pytest.raises(ValueError, match="expecting 2 features"):
        clf.predict(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(Xn)


@pytest.mark.parametrize(
    "params, exc, match",
    [
        ({"C": 0.0}, ValueError, "C must be > 0"),
        ({"C": -1.0}, ValueError, "C must be > 0"),
        ({"C": "big"}, TypeError, "C must be a real"),
        ({"tol": 0}, ValueError, "tol"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"max_iter": 2.5}, TypeError, "max_iter"),
        ({"inner_tol": -1e-3}, ValueError, "inner_tol"),
        ({"normalize": "unit"}, ValueError, "normalize"),
        ({"weight_threshold": 1.0}, ValueError, "weight_threshold"),
        ({"time_limit": 0}, ValueError, "time_limit"),
        ({"callback": 3}, TypeError, "callback"),
        ({"kernels": []}, ValueError, "kernels is an empty list"),
        ({"kernels": "grids"}, ValueError, "kernels must be 'all_features', 'grid'"),
        ({"kernels": rbf(1.0)}, TypeError, "kernels must be 'all_features', 'grid' or a list"),
        ({"method": "newton"}, ValueError, "unknown method 'newton'"),
        ({"method": 3}, TypeError, "method must be"),
        ({"method": "level", "p": 2.0}, ValueError, "p=2.0 is only used by Lp-MKL"),
        ({"method": "subgradient", "groups": [[0, 1, 2]]}, ValueError, "groups is only used"),
        ({"method": "level", "groups": "features"}, ValueError, "groups is only used"),
        ({"method": "lp"}, ValueError, "p is required"),
        ({"method": "lp", "p": 1.0}, ValueError, "p must be > 1"),
        ({"method": "lp", "p": 0.5}, ValueError, "p must be >= 1"),
        ({"method": "mirror", "groups": [[0, 1]]}, ValueError, "groups must cover"),
        ({"method": "mirror", "groups": [[0, 1], [1, 2]]}, ValueError, "groups"),
        ({"method": "mirror", "groups": [[0, 1, 5]]}, ValueError, "groups"),
        ({"method": "mirror", "groups": "kernels"}, ValueError, "groups must be 'features'"),
        ({"max_memory": 100}, MemoryError, "max_memory"),
        ({"max_memory": "1GB"}, TypeError, "max_memory"),
    ],
)
def test_bad_parameters(params, exc, match):
    method = params.get("method")
    if isinstance(method, str) and method not in ("newton",) and method not in mklopt.methods.METHODS:
        pytest.skip(f"method {method!r} not available")
    X, y = blobs(30, seed=14)
    clf = small(**params)  # the constructor never validates (scikit-learn rule)
    with pytest.raises(exc, match=match):
        clf.fit(X, y)


def test_memory_refusal_names_the_size():
    X, y = blobs(200, seed=15)
    with pytest.raises(MemoryError, match=r"needs .* bytes.*max_memory"):
        MKLClassifier(kernels="grid", method="subgradient", max_memory=10_000).fit(X, y)


def test_method_instance_with_p_or_groups_is_an_error():
    from mklopt.methods import Subgradient

    with pytest.raises(ValueError, match="p cannot be combined"):
        small(method=Subgradient(), p=2.0).fit(*blobs(30))
    with pytest.raises(TypeError, match="pass Subgradient"):
        small(method=Subgradient).fit(*blobs(30))


@pytest.mark.parametrize("method", ["mkboost", "boosting"])
def test_boosting_is_refused_with_a_pointer_to_its_estimator(method):
    X, y = blobs(30, seed=3)
    with pytest.raises(ValueError, match="MKBoostClassifier"):
        MKLClassifier(method=method).fit(X, y)
    from mklopt.methods import Boosting

    with pytest.raises(ValueError, match="MKBoostClassifier"):
        MKLClassifier(method=Boosting()).fit(X, y)


def test_estimator_convergence_warning_is_both_classes():
    # One class for users of either library: a filter on scikit-learn's or on
    # mklopt's oracle warning catches what the estimators issue.
    import sklearn.exceptions

    import mklopt.oracles

    X, y = blobs(60, seed=10, shift=0.5)
    for cls in (sklearn.exceptions.ConvergenceWarning, mklopt.oracles.ConvergenceWarning):
        with pytest.warns(cls, match="max_iter"):
            small(max_iter=1, tol=1e-12).fit(X, y)
