"""Checks of the data given to the estimators (see the bad-input rules of docs/estimators.md).

``X`` becomes a C-contiguous float64 matrix, class labels a 1-D array and
regression targets a 1-D float64 array, with errors that name the argument
and say what to do. A pandas DataFrame (or any table with a ``columns``
attribute) is read as scikit-learn reads it: its values go through
``numpy.asarray``, and string column names are recorded at ``fit`` as
``feature_names_in_`` and compared at prediction. pandas itself is never
imported.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from ._sklearn import DataConversionWarning, NotFittedError

__all__ = [
    "check_X",
    "check_y",
    "check_X_y",
    "check_targets",
    "check_is_fitted",
    "feature_names",
    "check_feature_names",
]


def _issparse(a):
    """Whether ``a`` is a scipy.sparse matrix or array, without importing scipy.sparse.

    A sparse input can only exist once scipy.sparse is imported, so a process
    that never imported it (predicting from a saved model) does not pay for
    its import here.
    """
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(a)


def check_X(X, estimator_name, *, n_features=None, name="X"):
    """Validate a feature matrix and return it as a C-contiguous float64 array.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Input. Lists, tuples, read-only and Fortran-ordered arrays are fine;
        the caller's array is never written to.
    estimator_name : str
        Used in messages.
    n_features : int, optional
        Expected number of features (at prediction time).
    name : str, default="X"
        Argument name used in messages.

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64, C-contiguous

    Raises
    ------
    TypeError
        For sparse matrices and non-numeric entries.
    ValueError
        For complex numbers, NaN/inf, 1-D or >2-D input, no samples, no
        features, or the wrong number of features.
    """
    if _issparse(X):
        raise TypeError(
            f"{estimator_name} does not accept sparse input {name}: kernel matrices are "
            f"dense anyway; convert with {name}.toarray()"
        )
    if hasattr(X, "dtype") and np.issubdtype(np.asarray(X).dtype, np.complexfloating):
        raise ValueError(f"Complex data not supported in {name}")
    try:
        a = np.asarray(X)
        if a.dtype.kind == "c":
            raise ValueError(f"Complex data not supported in {name}")
        a = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        if "Complex" in str(exc):
            raise
        raise TypeError(f"{name} must hold real numbers: {exc}") from None
    if a.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got a 1-D array of length "
            f"{a.shape[0]}. Reshape your data with {name}.reshape(-1, 1) for a single "
            f"feature or {name}.reshape(1, -1) for a single sample."
        )
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {a.shape}")
    if a.shape[0] < 1:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={a.shape}) while a minimum of 1 is "
            f"required by {estimator_name}: {name} is empty"
        )
    if a.shape[1] < 1:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={a.shape}) while a minimum of 1 is "
            f"required by {estimator_name}: {name} has no features"
        )
    if n_features is not None and a.shape[1] != n_features:
        raise ValueError(
            f"{name} has {a.shape[1]} features, but {estimator_name} is expecting "
            f"{n_features} features as input"
        )
    if not np.all(np.isfinite(a)):
        bad = "NaN" if np.isnan(a).any() else "infinity"
        raise ValueError(
            f"Input {name} contains {bad}; {estimator_name} needs finite values "
            "(impute or drop those entries first)"
        )
    return np.ascontiguousarray(a)


def check_y(y, n_samples, estimator_name):
    """Validate class labels; return them as a 1-D array."""
    if y is None:
        raise ValueError(
            f"{estimator_name} requires y to be passed, but the target y is None; "
            "pass one class label per sample"
        )
    if _issparse(y):
        raise TypeError(f"{estimator_name} does not accept a sparse y; pass a 1-D array")
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change "
            "the shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning,
            stacklevel=3,
        )
        a = a.ravel()
    if a.ndim != 1:
        raise ValueError(
            f"y must be 1-D (n_samples,) with one label per sample, got shape {a.shape}; "
            f"{estimator_name} does not support multi-output targets"
        )
    if a.shape[0] != n_samples:
        raise ValueError(f"y has {a.shape[0]} labels but X has {n_samples} samples")
    if a.dtype.kind == "O":
        # Mixed or unusual objects: allow strings/numbers that sort consistently.
        kinds = {type(v) for v in a}
        if any(v is None for v in a):
            raise ValueError("y contains None; every sample needs a label")
        if len({str in k.__mro__ for k in kinds}) > 1:
            raise ValueError(
                f"y mixes strings and numbers ({sorted(k.__name__ for k in kinds)}); "
                "use labels of one type"
            )
    elif a.dtype.kind == "c":
        raise ValueError("Unknown label type: complex; y must hold class labels")
    elif a.dtype.kind == "f":
        if not np.all(np.isfinite(a)):
            raise ValueError("Input y contains NaN or infinity; every sample needs a label")
        if np.any(a != np.round(a)):
            raise ValueError(
                "Unknown label type: continuous. y looks like a regression target; "
                f"{estimator_name} needs class labels"
            )
    elif a.dtype.kind not in "iubUS":
        raise ValueError(f"Unknown label type: dtype {a.dtype}; y must hold class labels")
    return a


def check_X_y(X, y, estimator_name):
    """Validate training data: ``X`` as in :func:`check_X`, ``y`` as labels.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
        The labels as given (not yet encoded).
    """
    X = check_X(X, estimator_name)
    y = check_y(y, X.shape[0], estimator_name)
    return X, y


def check_is_fitted(estimator, attribute="classes_"):
    """Raise :data:`NotFittedError` unless ``estimator`` has been fitted."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "with appropriate arguments before using this estimator."
        )


def check_targets(y, n, name):
    """Validate real regression targets; return them as a 1-D float64 array."""
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None")
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        warnings.warn(
            "A column-vector y was passed when a 1d array was expected; it is ravelled",
            DataConversionWarning,
            stacklevel=3,
        )
        a = a.ravel()
    if a.ndim != 1:
        raise ValueError(f"y must be 1-D (one target per sample), got shape {a.shape}")
    if a.shape[0] != n:
        raise ValueError(f"y has {a.shape[0]} targets but X has {n} samples")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"Unknown label type: dtype {a.dtype}; y must hold real targets")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError("y contains NaN or infinity; the targets must be finite")
    return a


# --------------------------------------------------------------------------
# column names of tables (pandas DataFrames and the like, duck-typed)
# --------------------------------------------------------------------------
def feature_names(X):
    """String column names of a table ``X``, or None.

    Parameters
    ----------
    X : array-like or table
        Anything; only an object with a ``columns`` attribute (a pandas
        DataFrame, for one) can have names.

    Returns
    -------
    ndarray of object or None
        The column names when every one of them is a string; None for
        arrays, lists and tables with non-string (e.g. integer) names.

    Raises
    ------
    TypeError
        When string and non-string names are mixed: such names can be
        neither recorded nor ignored safely.
    """
    columns = getattr(X, "columns", None)
    if columns is None or isinstance(X, np.ndarray):
        return None
    names = np.asarray(list(columns), dtype=object)
    if names.size == 0:
        return None
    is_str = np.array([isinstance(v, str) for v in names], dtype=bool)
    if is_str.all():
        return names
    if is_str.any():
        kinds = sorted({type(v).__name__ for v in names})
        raise TypeError(
            "Feature names are only supported if all input features have string names, "
            f"but the columns of X mix the types {kinds}. Make them all strings "
            "(X.columns = X.columns.astype(str)) to have them recorded and checked, or "
            "all non-strings to have them ignored"
        )
    return None


def _listed(names, limit=5):
    shown = [f"- {n}\n" for n in names[:limit]]
    if len(names) > limit:
        shown.append("- ...\n")
    return "".join(shown)


def check_feature_names(estimator, X, *, reset):
    """Record (``reset=True``, at ``fit``) or compare (at prediction) the column names of ``X``.

    At ``fit``, ``feature_names_in_`` is set to the string column names of
    ``X`` (see :func:`feature_names`), or removed when ``X`` has none. At
    prediction, as in scikit-learn, a change between named and unnamed
    input is a ``UserWarning`` and different names are a ``ValueError``
    saying which names are new, which are missing, or that the order
    changed.
    """
    names = feature_names(X)
    if reset:
        if names is not None:
            estimator.feature_names_in_ = names
        else:
            estimator.__dict__.pop("feature_names_in_", None)
        return
    fitted = getattr(estimator, "feature_names_in_", None)
    est = type(estimator).__name__
    if names is None and fitted is None:
        return
    if fitted is None:
        warnings.warn(
            f"X has feature names, but {est} was fitted without feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if names is None:
        warnings.warn(
            f"X does not have valid feature names, but {est} was fitted with feature names",
            UserWarning,
            stacklevel=3,
        )
        return
    if names.shape == fitted.shape and bool(np.all(names == fitted)):
        return
    new = sorted(set(names.tolist()) - set(fitted.tolist()))
    gone = sorted(set(fitted.tolist()) - set(names.tolist()))
    message = "The feature names should match those that were passed during fit.\n"
    if new:
        message += "Feature names unseen at fit time:\n" + _listed(new)
    if gone:
        message += "Feature names seen at fit time, yet now missing:\n" + _listed(gone)
    if not new and not gone:
        message += "Feature names must be in the same order as they were in fit.\n"
    raise ValueError(message)
