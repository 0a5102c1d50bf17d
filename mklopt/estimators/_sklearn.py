"""The optional scikit-learn layer of the estimators.

This is the only module of mklopt that imports scikit-learn, and it does so
in one guarded ``try`` (see the bottom of the module):

* When scikit-learn is installed, the estimators derive from its mixins and
  ``BaseEstimator`` (mixins first, as scikit-learn requires), so they are
  genuine scikit-learn estimators: ``clone``, ``Pipeline``,
  ``GridSearchCV``, tags and the HTML repr work, and errors and warnings are
  scikit-learn's own ``NotFittedError``, ``ConvergenceWarning`` and
  ``DataConversionWarning``.
* Without it, they derive from the small stand-ins defined here:
  :class:`ParamsMixin` (``get_params``/``set_params``/``repr`` read from the
  ``__init__`` signature) and the ``score`` mixins of classifiers,
  regressors and outlier detectors. ``sklearn.base.clone`` needs only
  ``get_params`` and a constructor that stores its arguments verbatim, so
  estimators built this way stay clonable if scikit-learn is imported later
  in the same process.

The top-level package resolves the estimators on first access, so ``import
mklopt`` alone never imports scikit-learn.
"""

from __future__ import annotations

import copy
import inspect

import numpy as np

from ..oracles import ConvergenceWarning as _MklConvergenceWarning

__all__ = [
    "HAS_SKLEARN",
    "BaseEstimator",
    "ClassifierMixin",
    "RegressorMixin",
    "OutlierMixin",
    "ParamsMixin",
    "SharedClientMixin",
    "ClassifierScoreMixin",
    "RegressorScoreMixin",
    "OutlierFitPredictMixin",
    "ConvergenceWarning",
    "DataConversionWarning",
    "NotFittedError",
]


# --------------------------------------------------------------------------
# stand-ins (always defined; the bases when scikit-learn is absent)
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


class SharedClientMixin:
    """Clones share the ``client`` parameter instead of copying it.

    ``sklearn.base.clone`` deep-copies every parameter that is not an
    estimator, and a live ``distributed.Client`` (a connection, with its
    event loop) cannot be copied. An estimator with a ``client`` parameter
    lists this mixin first: its clones get copies of every other parameter
    and the same client, so ``clone``, ``GridSearchCV`` and
    ``cross_val_score`` work with it.
    """

    def __sklearn_clone__(self):
        params = self.get_params(deep=False)
        for name, value in params.items():
            if name != "client":
                params[name] = _clone_param(value)
        return type(self)(**params)


def _clone_param(value):
    if HAS_SKLEARN:
        return _sk_clone(value, safe=False)
    return copy.deepcopy(value)


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


class RegressorScoreMixin:
    """Coefficient of determination ``score`` of regressors, without scikit-learn."""

    _estimator_type = "regressor"

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination R^2 of ``predict(X)`` against ``y``."""
        y = np.asarray(y, dtype=np.float64).ravel()
        sw = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, float)
        r = y - self.predict(X)
        mean = np.sum(sw * y) / np.sum(sw)
        return float(1.0 - np.sum(sw * r**2) / np.sum(sw * (y - mean) ** 2))


class OutlierFitPredictMixin:
    """``fit_predict`` of outlier detectors, without scikit-learn."""

    _estimator_type = "outlier_detector"

    def fit_predict(self, X, y=None):
        """``fit(X).predict(X)``."""
        return self.fit(X).predict(X)


class _MklNotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted estimator (sklearn's if installed)."""


class _MklDataConversionWarning(UserWarning):
    """Issued when input data is converted in a way the user may not expect."""


# --------------------------------------------------------------------------
# The one optional import of scikit-learn in mklopt. Everything above works
# without it; with it, the estimators take scikit-learn's bases and its
# exception and warning classes, so that its tools recognise them.
# --------------------------------------------------------------------------
try:
    from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin, RegressorMixin
    from sklearn.base import clone as _sk_clone
    from sklearn.exceptions import ConvergenceWarning as _SkConvergenceWarning
    from sklearn.exceptions import DataConversionWarning, NotFittedError
except ImportError:  # scikit-learn is optional
    HAS_SKLEARN = False
    BaseEstimator = ParamsMixin
    ClassifierMixin = ClassifierScoreMixin
    RegressorMixin = RegressorScoreMixin
    OutlierMixin = OutlierFitPredictMixin
    ConvergenceWarning = _MklConvergenceWarning  # mklopt's own, shared with the oracles
    DataConversionWarning = _MklDataConversionWarning
    NotFittedError = _MklNotFittedError
else:
    HAS_SKLEARN = True

    class ConvergenceWarning(_MklConvergenceWarning, _SkConvergenceWarning):
        """An estimator's convergence warning: scikit-learn's and mklopt's at once.

        A filter on either class (``sklearn.exceptions.ConvergenceWarning``,
        ``mklopt.oracles.ConvergenceWarning``) catches it.
        """
# An estimator lists a mixin before BaseEstimator, as scikit-learn requires:
# ``class MKLRegressor(RegressorMixin, BaseEstimator)``.
