"""What an estimator keeps: parameters and fitted attributes only, in one shape per pair count."""

import warnings

import numpy as np
import pytest

from mklopt import MKBoostClassifier, MKLClassifier, MKLOneClass, MKLRegressor
from mklopt.estimators import ConvergenceWarning
from mklopt.estimators._ovo import pair_values, set_pair_attributes
from mklopt.kernels import linear, rbf
from mklopt.persist import load_model, save_model

KERNELS = [rbf(1.0), rbf(4.0), linear()]


def _blobs(n_classes, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(n_classes, 3))
    y = np.repeat(np.arange(n_classes), 20)
    return centres[y] + rng.normal(size=(y.size, 3)), y


def _estimators():
    return [
        MKLClassifier(kernels=KERNELS, method="level", C=10.0),
        MKBoostClassifier(kernels=KERNELS, n_rounds=5, random_state=0),
    ]


def _only_params_and_fitted(est):
    params = set(est.get_params(deep=False))
    return sorted(k for k in vars(est) if k not in params and not k.endswith("_"))


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fit_leaves_only_parameters_and_fitted_attributes(est, n_classes):
    X, y = _blobs(n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert _only_params_and_fitted(est) == []


@pytest.mark.parametrize("est", _estimators(), ids=lambda e: type(e).__name__)
def test_a_failed_fit_leaves_no_scratch_state(est):
    X, y = _blobs(2)
    est.set_params(kernels="no such grid")
    with pytest.raises(ValueError, match="kernels"):
        est.fit(X, y)
    assert _only_params_and_fitted(est) == []


def test_task_estimators_keep_no_scratch_state():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    for est in (MKLRegressor(kernels=KERNELS), MKLOneClass(kernels=[rbf(1.0), rbf(4.0)])):
        est.fit(X, X[:, 0])
        assert _only_params_and_fitted(est) == []


def test_set_pair_attributes_one_pair_and_many():
    class Fitted:
        pass

    one, many = Fitted(), Fitted()
    values = {
        "weights_": np.array([[0.25, 0.75]]),
        "n_iter_": np.array([4], dtype=np.int64),
        "gap_": np.array([1e-3]),
        "converged_": np.array([True]),
        "support_": [np.array([0, 2])],
    }
    set_pair_attributes(one, **values)
    assert one.weights_.tolist() == [0.25, 0.75]
    assert type(one.n_iter_) is int and one.n_iter_ == 4
    assert type(one.gap_) is float and type(one.converged_) is bool
    assert one.support_.tolist() == [0, 2]
    set_pair_attributes(many, n_iter_=np.array([4, 5]), support_=[np.array([0]), np.array([1])])
    assert many.n_iter_.tolist() == [4, 5] and len(many.support_) == 2
    with pytest.raises(ValueError, match="n_iter_ has no value"):
        set_pair_attributes(one, n_iter_=[])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_fitted_and_loaded_attributes_have_the_same_shape(tmp_path, n_classes):
    X, y = _blobs(n_classes)
    clf = MKLClassifier(kernels=KERNELS, C=10.0).fit(X, y)
    save_model(clf, tmp_path / "m.npz")
    loaded, _ = load_model(tmp_path / "m.npz")
    for name in ("weights_", "n_iter_", "n_oracle_calls_", "gap_", "converged_"):
        a, b = getattr(clf, name), getattr(loaded, name)
        assert type(a) is type(b) or (isinstance(a, np.ndarray) and isinstance(b, np.ndarray))
        np.testing.assert_array_equal(a, b)
    for s_fit, s_load in zip(pair_values(clf, "support_"), pair_values(loaded, "support_")):
        np.testing.assert_array_equal(s_fit, s_load)
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_task_estimators_without_sklearn():
    # The stand-in bases of _sklearn: parameters, R^2 score, fit_predict.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        sys.modules["sklearn"] = None
        import numpy as np
        from mklopt import MKLOneClass, MKLRegressor
        from mklopt.estimators import _sklearn
        from mklopt.kernels import rbf
        assert not _sklearn.HAS_SKLEARN
        rng = np.random.default_rng(0)
        X = rng.normal(size=(60, 2))
        y = X[:, 0] - X[:, 1]
        reg = MKLRegressor(kernels=[rbf(1.0), rbf(4.0)], C=10.0)
        assert reg.get_params()["C"] == 10.0 and "C=10.0" in repr(reg)
        r2 = reg.fit(X, y).score(X, y)
        resid = y - reg.predict(X)
        assert abs(r2 - (1 - resid @ resid / np.sum((y - y.mean()) ** 2))) < 1e-12
        assert 0.5 < r2 <= 1.0, r2
        labels = MKLOneClass(kernels=[rbf(1.0)], nu=0.2).fit_predict(X)
        assert set(labels.tolist()) <= {-1, 1} and 0.05 < np.mean(labels == -1) < 0.4
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
