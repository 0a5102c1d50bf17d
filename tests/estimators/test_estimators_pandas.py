"""Tables as input: pandas DataFrames (and anything with ``columns``) as scikit-learn reads them.

The estimators never import pandas: a table's values go through
``numpy.asarray`` and its string column names are recorded at ``fit`` as
``feature_names_in_`` and compared at prediction. scikit-learn's own check
of that contract is the reference.
"""

import warnings

import numpy as np
import pytest

from mklopt import MKBoostClassifier, MKLClassifier, MKLOneClass, MKLRegressor
from mklopt.estimators._checks import feature_names
from mklopt.kernels import linear, rbf

KERNELS = [rbf(1.0), rbf(4.0), linear()]


def _estimators():
    return [
        MKLClassifier(kernels=KERNELS, method="subgradient", C=10.0, max_iter=30),
        MKBoostClassifier(kernels=KERNELS, n_rounds=4, random_state=0),
        MKLRegressor(kernels=KERNELS, method="subgradient", max_iter=30),
        MKLOneClass(kernels=[rbf(1.0), rbf(4.0)], method="subgradient", max_iter=30),
    ]


def _ids(est):
    return type(est).__name__


def _data(est, n=60, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if isinstance(est, MKLRegressor):
        y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    else:
        y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    return X, y


def _scores(est, X):
    if isinstance(est, MKLRegressor):
        return est.predict(X)
    return est.decision_function(X)


class _Table:
    """A minimal table without pandas: ``columns`` and ``__array__``."""

    def __init__(self, values, columns):
        self.values = np.asarray(values, dtype=np.float64)
        self.columns = list(columns)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def __len__(self):
        return self.values.shape[0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", _estimators(), ids=_ids)
def test_sklearn_column_name_check(est):
    pytest.importorskip("pandas")
    from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency

    check_dataframe_column_names_consistency(type(est).__name__, est)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", _estimators(), ids=_ids)
def test_dataframe_fit_equals_array_fit(est):
    pd = pytest.importorskip("pandas")
    X, y = _data(est)
    names = [f"f{j}" for j in range(X.shape[1])]
    df, ys = pd.DataFrame(X, columns=names), pd.Series(y, name="target")
    on_table = type(est)(**est.get_params()).fit(df, ys)
    on_array = type(est)(**est.get_params()).fit(X, y)
    assert on_table.feature_names_in_.dtype == object
    assert on_table.feature_names_in_.tolist() == names
    assert not hasattr(on_array, "feature_names_in_")
    X_new, _ = _data(est, n=20, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        got = _scores(on_table, pd.DataFrame(X_new, columns=names))
    np.testing.assert_allclose(got, _scores(on_array, X_new), rtol=1e-10, atol=1e-12)
    if not isinstance(est, (MKLRegressor, MKLOneClass)):
        assert on_table.predict(pd.DataFrame(X_new, columns=names)).tolist() == (
            on_array.predict(X_new).tolist()
        )
        assert on_table.score(pd.DataFrame(X, columns=names), ys) == on_array.score(X, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("est", _estimators(), ids=_ids)
def test_predict_checks_the_column_names(est):
    pd = pytest.importorskip("pandas")
    X, y = _data(est)
    names = ["a", "b", "c", "d"]
    fitted = est.fit(pd.DataFrame(X, columns=names), y)
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        _scores(fitted, X)
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        _scores(fitted, pd.DataFrame(X, columns=names[::-1]))
    with pytest.raises(ValueError, match="(?s)unseen at fit time:\n- e\n.*now missing:\n- d\n"):
        _scores(fitted, pd.DataFrame(X, columns=["a", "b", "c", "e"]))
    # Refitting on an array forgets the names, and then a table gets a warning.
    fitted.fit(X, y)
    assert not hasattr(fitted, "feature_names_in_")
    with pytest.warns(UserWarning, match="X has feature names, but .* fitted without"):
        _scores(fitted, pd.DataFrame(X, columns=names))


def test_integer_and_mixed_column_names():
    pd = pytest.importorskip("pandas")
    X = np.arange(6.0).reshape(3, 2)
    assert feature_names(pd.DataFrame(X)) is None  # integer names are not recorded
    assert feature_names(pd.DataFrame(X, columns=["x", "y"])).tolist() == ["x", "y"]
    with pytest.raises(TypeError, match="all input features have string names"):
        feature_names(pd.DataFrame(X, columns=["x", 1]))


def test_tables_are_duck_typed():
    # No pandas needed: any object with columns and __array__ is a table.
    est = MKLClassifier(kernels=KERNELS, method="subgradient", C=10.0, max_iter=30)
    X, y = _data(est)
    table = _Table(X, ["p", "q", "r", "s"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short run
        est.fit(table, y)
    assert est.feature_names_in_.tolist() == ["p", "q", "r", "s"]
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        plain = est.predict(X)
    np.testing.assert_array_equal(est.predict(_Table(X, ["p", "q", "r", "s"])), plain)
    with pytest.raises(ValueError, match="unseen at fit time"):
        est.predict(_Table(X, ["p", "q", "r", "t"]))


@pytest.mark.parametrize("cls", [MKLClassifier, MKLRegressor])
def test_saved_models_keep_the_column_names(tmp_path, cls):
    from mklopt.persist import load_model, save_model

    est = cls(kernels=KERNELS, method="subgradient", max_iter=30)
    X, y = _data(est)
    names = ["p", "q", "r", "s"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of the short run
        est.fit(_Table(X, names), y)
    save_model(est, tmp_path / "m.npz")
    loaded, meta = load_model(tmp_path / "m.npz")
    assert loaded.feature_names_in_.tolist() == names and meta["feature_names"] == names
    np.testing.assert_array_equal(_scores(loaded, _Table(X, names)),
                                  _scores(est, _Table(X, names)))
    with pytest.raises(ValueError, match="unseen at fit time"):
        loaded.predict(_Table(X, ["p", "q", "r", "t"]))
    # A model fitted on an array has no names to restore.
    est.fit(X, y)
    save_model(est, tmp_path / "plain.npz", feature_names=names)
    plain, meta = load_model(tmp_path / "plain.npz")
    assert not hasattr(plain, "feature_names_in_") and meta["feature_names"] == names


def test_package_does_not_import_pandas():
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "import mklopt, mklopt.estimators, mklopt.persist\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
