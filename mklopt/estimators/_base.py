"""Shared machinery of the scikit-learn-style estimators.

This module is the only place in mklopt that touches scikit-learn, and it
does so optionally:

* When scikit-learn is installed, :class:`ClassifierBase` derives from
  ``sklearn.base.ClassifierMixin`` and ``sklearn.base.BaseEstimator`` (in
  that order, as scikit-learn requires), so the estimators are genuine
  scikit-learn classifiers: ``clone``, ``Pipeline``, ``GridSearchCV``, tags
  and the HTML repr all work, and errors are scikit-learn's own
  ``NotFittedError`` / warnings its ``ConvergenceWarning``.
* Without scikit-learn, the same class derives from two small stand-ins,
  :class:`ParamsMixin` and :class:`ClassifierScoreMixin`, that implement the
  parameter contract (``get_params``/``set_params``/``repr`` read from the
  ``__init__`` signature) and accuracy ``score``. ``sklearn.base.clone``
  only needs ``get_params`` and a constructor that stores its arguments
  verbatim, so estimators built this way stay clonable if scikit-learn is
  installed later in the same process.

The top-level package never imports this module eagerly
(``mklopt.MKLClassifier`` is resolved on first access), so ``import
mklopt`` does not pay for importing scikit-learn.

The second half of the module is the label handling and the one-vs-one
scheme shared by every classifier: :class:`ClassifierBase` validates ``X``
and ``y``, maps any two labels to -1/+1, and for more than two classes
trains one binary problem per pair of classes and predicts by majority
vote, breaking ties with the summed decision values, as the MKL papers do.
A concrete estimator only implements a few hooks (see
:class:`ClassifierBase`).
"""

from __future__ import annotations

import inspect
import numbers
import warnings
from itertools import combinations

import numpy as np

from .. import kernels as _kernels
from .._memory import check_max_memory
from .._parallel import check_n_jobs, parallel_map
from .._validation import check_int
from ..datasets import _scaling
from ..kernels.bank import _check_cache_size, check_storage

#: The names an estimator's ``kernels`` parameter accepts besides a list of specs.
KERNEL_GRIDS = ("all_features", "grid")

__all__ = [
    "HAS_SKLEARN",
    "KERNEL_GRIDS",
    "resolve_kernel_specs",
    "check_storage_params",
    "ClassifierBase",
    "ParamsMixin",
    "ClassifierScoreMixin",
    "ConvergenceWarning",
    "DataConversionWarning",
    "NotFittedError",
    "check_X",
    "check_X_y",
    "check_is_fitted",
    "ovo_vote",
]


# --------------------------------------------------------------------------
# scikit-learn-free stand-ins (always defined; used when sklearn is absent)
# --------------------------------------------------------------------------
class ParamsMixin:
    """Parameter contract of scikit-learn estimators, without scikit-learn.

    The parameters are the arguments of ``__init__`` (which must store each
    of them verbatim under its own name and accept no ``*args``/``**kwargs``).
    """

    @classmethod
    def _get_param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        params = inspect.signature(init).parameters.values()
        names = []
        for p in params:
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(
                    f"{cls.__name__}.__init__ must list its parameters explicitly "
                    "(no *args or **kwargs)"
                )
            names.append(p.name)
        return sorted(names)

    def get_params(self, deep=True):
        """Parameters of this estimator.

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of nested objects that have
            ``get_params`` (as ``name__param``).

        Returns
        -------
        dict
            Parameter names mapped to their values.
        """
        out = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                for k, v in value.get_params().items():
                    out[f"{name}__{k}"] = v
            out[name] = value
        return out

    def set_params(self, **params):
        """Set parameters (``name`` or nested ``name__param``); returns ``self``.

        Raises
        ------
        ValueError
            For a name that is not a parameter.
        """
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for estimator {type(self).__name__}; "
                    f"valid parameters are: {sorted(self._get_param_names())}"
                )
            if delim:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        return self

    def __repr__(self):
        # Only the parameters that differ from their defaults, like sklearn.
        sig = inspect.signature(type(self).__init__).parameters
        parts = []
        for name in self._get_param_names():
            value = getattr(self, name)
            default = sig[name].default
            try:
                same = value is default or bool(value == default)
            except Exception:  # arrays and other odd types: show them
                same = False
            if not same:
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)


class ClassifierScoreMixin:
    """Accuracy ``score`` of classifiers, without scikit-learn."""

    _estimator_type = "classifier"

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test samples.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the samples.

        Returns
        -------
        float
            (Weighted) fraction of correct predictions.
        """
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y.ravel()
        correct = (self.predict(X) == y).astype(np.float64)
        if sample_weight is None:
            return float(correct.mean())
        sw = np.asarray(sample_weight, dtype=np.float64)
        return float(np.sum(sw * correct) / np.sum(sw))


class _MklNotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted estimator (sklearn's if installed)."""


class _MklDataConversionWarning(UserWarning):
    """Issued when input data is converted in a way the user may not expect."""


# --------------------------------------------------------------------------
# the optional scikit-learn import (the only one in mklopt)
# --------------------------------------------------------------------------
try:
    from sklearn.base import BaseEstimator as _SkBaseEstimator
    from sklearn.base import ClassifierMixin as _SkClassifierMixin
    from sklearn.exceptions import ConvergenceWarning, DataConversionWarning, NotFittedError
except ImportError:  # scikit-learn is optional
    HAS_SKLEARN = False
    _BASES = (ClassifierScoreMixin, ParamsMixin)
    from ..oracles import ConvergenceWarning  # mklopt's own, shared with the oracles
    DataConversionWarning = _MklDataConversionWarning
    NotFittedError = _MklNotFittedError
else:
    HAS_SKLEARN = True
    # sklearn requires mixins before BaseEstimator in the MRO.
    _BASES = (_SkClassifierMixin, _SkBaseEstimator)


# --------------------------------------------------------------------------
# input validation (DESIGN section 7)
# --------------------------------------------------------------------------
def _is_sparse(X):
    try:
        import scipy.sparse as sp
    except ImportError:  # pragma: no cover - scipy is a hard dependency
        return False
    return sp.issparse(X)


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
    if _is_sparse(X):
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


def _check_y(y, n_samples, estimator_name):
    """Validate class labels; return them as a 1-D array."""
    if y is None:
        raise ValueError(
            f"{estimator_name} requires y to be passed, but the target y is None; "
            "pass one class label per sample"
        )
    if _is_sparse(y):
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
    y = _check_y(y, X.shape[0], estimator_name)
    return X, y


def check_is_fitted(estimator, attribute="classes_"):
    """Raise :data:`NotFittedError` unless ``estimator`` has been fitted."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(
            f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "with appropriate arguments before using this estimator."
        )


# --------------------------------------------------------------------------
# one-vs-one
# --------------------------------------------------------------------------
def ovo_vote(decisions, pairs, n_classes):
    """Combine pairwise decision values into per-class scores.

    Parameters
    ----------
    decisions : ndarray of shape (n_samples, n_pairs)
        Decision value of each binary problem; positive favours the second
        class of the pair.
    pairs : ndarray of shape (n_pairs, 2)
        Class indices ``(i, j)``, ``i < j``, of each binary problem.
    n_classes : int
        Number of classes.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Number of votes of each class plus a tie-break term in
        ``(-1/3, 1/3)`` that grows with the summed decision values in favour
        of the class. The term is too small to overturn a vote, so the
        ``argmax`` is the majority vote with ties broken by confidence.
    """
    n = decisions.shape[0]
    votes = np.zeros((n, n_classes))
    conf = np.zeros((n, n_classes))
    for k, (i, j) in enumerate(pairs):
        d = decisions[:, k]
        pos = d > 0
        votes[:, j] += pos
        votes[:, i] += ~pos
        conf[:, j] += d
        conf[:, i] -= d
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def _check_standardize(value, kernels):
    if value == "auto":
        return isinstance(kernels, str)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"standardize must be 'auto', True or False, got {value!r}")


class ClassifierBase(*_BASES):
    """Base class of the mklopt classifiers: validation, labels and one-vs-one.

    Subclasses implement

    ``_prepare_fit(self, X)``
        Optional. Validate the hyper-parameters and build whatever every
        binary problem shares (for example the kernel specs). Called once per
        ``fit``, after ``X`` and ``y`` are validated and before any binary
        problem is solved, so that bad parameters fail fast. Keep such
        per-fit scratch state in ``self._fit_state``: ``fit`` deletes it
        when it ends (normally or not), so it is never pickled or reused.
    ``_fit_binary(self, X, y, *extra) -> model``
        Train one binary problem; ``y`` is a float64 array of -1/+1 with both
        signs present, ``extra`` what ``_pair_extras`` gave for the pair.
        Return any object. It must not change ``self``: with ``n_jobs`` the
        pairs run in other processes or on a Dask cluster, on copies.
    ``_pair_extras(self, n_pairs) -> list of tuples``
        Optional. Per-pair extra arguments of ``_fit_binary`` drawn before
        any pair is fitted (for example seeds from one random stream).
    ``_decision_binary(self, model, X) -> ndarray of shape (n_samples,)``
        Decision values of a model returned by ``_fit_binary``; positive
        means the +1 class.
    ``_finish_fit(self, models)``
        Optional. Set the estimator-specific fitted attributes (for example
        ``weights_`` with one row per pair) from the list of models. The
        training rows of pair ``k`` are ``self._ovo_rows[k]`` (indices into
        the ``X`` given to ``fit``; deleted after ``_finish_fit``).

    A subclass with ``standardize`` and ``kernels`` parameters has its
    features standardised with the training mean and standard deviation
    (``scaler_mean_``, ``scaler_scale_``; both None when not standardising)
    before the hooks see them, at fit and at prediction time.

    Fitted attributes set here: ``classes_``, ``n_features_in_``,
    ``pairs_`` (ndarray of shape (n_pairs, 2): the class indices of each
    binary problem; the second class of a pair is its +1 class) and
    ``models_`` (one binary model per pair). With two classes there is one
    pair, ``(0, 1)``, and ``classes_[1]`` is the +1 class, as in
    scikit-learn.
    """

    # ---- hooks -----------------------------------------------------------
    def _prepare_fit(self, X):
        """Validate parameters and build shared state (default: nothing)."""

    def _fit_binary(self, X, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def _decision_binary(self, model, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _pair_extras(self, n_pairs):
        """Extra arguments of ``_fit_binary`` for each pair (default: none).

        Drawn in the calling process, in pair order, before any pair is
        fitted, so that pairs fitted in parallel get what the serial loop
        would give them (e.g. seeds from one random stream).
        """
        return [()] * n_pairs

    def _finish_fit(self, models):
        """Set estimator-specific fitted attributes (default: nothing)."""

    # ---- scikit-learn contract ---------------------------------------------
    def __sklearn_is_fitted__(self):
        return hasattr(self, "models_")

    def fit(self, X, y):
        """Fit one binary model per pair of classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples (finite reals).
        y : array-like of shape (n_samples,)
            Labels: any two or more distinct values (numbers or strings).

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        ValueError
            On NaN/inf, wrong shapes, fewer than two classes, continuous
            targets or invalid parameters.
        TypeError
            On sparse or non-numeric ``X`` and parameters of the wrong type.
        """
        name = type(self).__name__
        X, y = check_X_y(X, y, name)
        classes, y_idx = np.unique(y, return_inverse=True)
        y_idx = y_idx.ravel()
        if classes.shape[0] < 2:
            raise ValueError(
                f"y has only one class ({classes[0].tolist()!r}); {name} needs at least two "
                "classes to train a classifier"
            )
        if _check_standardize(getattr(self, "standardize", False), getattr(self, "kernels", None)):
            mean, scale = _scaling(X)
            X = (X - mean) / scale
        else:
            mean = scale = None
        try:
            check_n_jobs(getattr(self, "n_jobs", None))
            self._prepare_fit(X)
            pairs = np.array(list(combinations(range(classes.shape[0]), 2)), dtype=np.int64)
            extras = self._pair_extras(len(pairs))
            all_rows = []
            for i, j in pairs:
                if classes.shape[0] == 2:
                    all_rows.append(np.arange(X.shape[0]))
                else:
                    all_rows.append(np.flatnonzero((y_idx == i) | (y_idx == j)))

            def tasks():
                # Lazily: a serial fit holds one pair's copy of X at a time.
                for (_, j), rows, extra in zip(pairs, all_rows, extras):
                    y_pm1 = np.where(y_idx[rows] == j, 1.0, -1.0)
                    yield (np.ascontiguousarray(X[rows]), y_pm1, *extra)

            # The pairs are independent: with n_jobs (or a joblib backend
            # such as Dask) they run as parallel tasks, with the same results.
            models = parallel_map(
                self._fit_binary, tasks(), getattr(self, "n_jobs", None), n_tasks=len(pairs)
            )
            self.classes_ = classes
            self.n_features_in_ = X.shape[1]
            self.scaler_mean_, self.scaler_scale_ = mean, scale
            self.pairs_ = pairs
            self.models_ = models
            # Training rows of each pair, for hooks that report indices into X.
            self._ovo_rows = all_rows
            self._finish_fit(models)
        finally:
            # Scratch state of this fit only: never pickled with the model.
            for attr in ("_ovo_rows", "_fit_state"):
                self.__dict__.pop(attr, None)
        return self

    def _check_predict_input(self, X):
        check_is_fitted(self, "models_")
        X = check_X(X, type(self).__name__, n_features=self.n_features_in_)
        mean = getattr(self, "scaler_mean_", None)
        if mean is not None:
            X = (X - mean) / self.scaler_scale_
        return X

    def pairwise_decision_function(self, X):
        """Decision values of every one-vs-one problem.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_pairs)
            Column ``k`` is the decision value of the problem
            ``pairs_[k] = (i, j)``: positive favours ``classes_[j]``.
        """
        X = self._check_predict_input(X)
        out = np.empty((X.shape[0], len(self.models_)))
        for k, model in enumerate(self.models_):
            out[:, k] = self._decision_binary(model, X)
        return out

    def decision_function(self, X):
        """Confidence scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the decision value, positive for ``classes_[1]``.
            More classes: one-vs-one votes per class plus a tie-break term in
            ``(-1/3, 1/3)`` (see :func:`ovo_vote`); ``argmax`` is the
            prediction.
        """
        d = self.pairwise_decision_function(X)
        if self.classes_.shape[0] == 2:
            return d[:, 0]
        return ovo_vote(d, self.pairs_, self.classes_.shape[0])

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels taken from ``classes_`` (majority vote over the pairs when
            there are more than two classes).
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            return self.classes_[(d > 0).astype(np.int64)]
        return self.classes_[np.argmax(d, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        float
        """
        return ClassifierScoreMixin.score(self, X, y, sample_weight=sample_weight)


def _as_seed(value, name="random_state"):
    """Validate a seed: None, an int >= 0 or a ``numpy.random.Generator``."""
    if value is None or isinstance(value, np.random.Generator):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(value, name, low=0)
    raise TypeError(
        f"{name} must be None, a non-negative int or a numpy.random.Generator, got "
        f"{type(value).__name__}"
    )


def resolve_kernel_specs(kernels, n_features, protocol):
    """The kernel specs an estimator's ``kernels`` parameter stands for.

    Parameters
    ----------
    kernels : "grid", "all_features" or list of kernel specs
        ``"grid"`` is :func:`mklopt.kernels.grid` under ``protocol``;
        ``"all_features"`` is the grid of the MKBoost paper (``protocol=
        "mkboost2013"``: 17 Gaussian and polynomial kernels, all on every
        feature).
    n_features : int
        Number of features of the training data.
    protocol : {"level2008", "mkboost2013"}
        The grid of the estimator's paper.

    Raises
    ------
    ValueError, TypeError
        Naming ``kernels``.
    """
    if isinstance(kernels, str):
        if kernels not in KERNEL_GRIDS:
            raise ValueError(
                "kernels must be 'all_features', 'grid' or a list of kernel specs, got the "
                f"string {kernels!r}"
            )
        if kernels == "all_features":
            protocol = "mkboost2013"
        return list(_kernels.grid(n_features, protocol=protocol))
    if not isinstance(kernels, (list, tuple)):
        raise TypeError(
            "kernels must be 'all_features', 'grid' or a list of kernel specs "
            f"(e.g. [rbf(1.0), poly(2)]), got {type(kernels).__name__}"
        )
    if len(kernels) == 0:
        raise ValueError("kernels is an empty list; give at least one kernel spec")
    return list(kernels)


def check_storage_params(storage, cache_size, max_memory):
    """Validate the estimators' kernel-storage parameters (TypeError/ValueError naming them)."""
    check_storage(storage)
    _check_cache_size(cache_size)
    check_max_memory(max_memory)
