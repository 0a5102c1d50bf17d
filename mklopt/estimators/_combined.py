"""The learned kernel of a fitted estimator, as a matrix and as a kernel function.

A fitted MKL model decides with ``f(x) = sum_i c_i K(x_i, x) + b`` for the
combined kernel

    K(a, b) = sum_k w_k kappa_k(a, b) / s_k,

the base kernels ``kappa_k`` with the fit's normalisation constants ``s_k``
(``normalize=``) on the fit's standardised features (``standardize=``),
and the kernels whose weight fell below ``weight_threshold`` left out. That
kernel is the product of the fit: :func:`model_kernel` evaluates it from
one binary model's predictor, between any two sets of points, so that an
``SVC`` on it (``SVC(kernel=est.kernel_)``) solves the problem of the fit's
last SVM again.

*One-vs-one.* Each pair of classes has its own weights (and its own
normalisation on its own points). :meth:`CombinedKernelMixin.combined_kernel`
gives pair ``k``'s kernel with ``pair=k``, and by default the mean of the
pairs' kernels, ``(1 / P) sum_p K_p``: a positive semi-definite kernel
whose weights on the raw base kernels are the means of the pairs' (each
over its own normalisation). With ``multiclass="shared"`` all pairs share
the weights and differ by their normalisation only.

*No transform.* A scikit-learn transformer's ``transform(X)`` returns a
fixed number of features, here the kernel against the training points; the
fitted model keeps only the support vectors of each pair, not the training
set, and an estimator with ``transform`` is treated as a transformer by
pipelines. ``combined_kernel(X, X_train)`` gives that matrix to whoever
holds ``X_train``.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..kernels import KernelExpansion
from ..kernels.feature_maps import FeatureMapFunctions
from ..kernels.functions import KernelFunctions
from ..kernels.stack import _as_stack
from ._checks import check_is_fitted
from ._precomputed import PrecomputedExpansion, is_precomputed

__all__ = ["model_kernel", "CombinedKernel", "CombinedKernelMixin"]


def model_kernel(predictor, A, B=None):
    """``K(A, B)`` of one binary model's decision function.

    Parameters
    ----------
    predictor : KernelExpansion or PrecomputedExpansion
        A fitted model's predictor.
    A : ndarray of shape (n_a, n_features), or a stack
        Points, standardised as the fit's (features); or, for a
        :class:`~mklopt.estimators._precomputed.PrecomputedExpansion`, the
        base kernels between two sets of samples, shape ``(n_kernels, n_a,
        n_b)`` (``B`` must then be None).
    B : ndarray of shape (n_b, n_features), optional
        Default ``A``.

    Returns
    -------
    ndarray of shape (n_a, n_b)
        Zeros for a model without support vectors (a constant decision
        function, whose kernel does not matter).
    """
    if isinstance(predictor, PrecomputedExpansion):
        if B is not None:
            raise ValueError("with precomputed kernels pass one stack of base kernels, not X, Y")
        mats = A
        out = np.zeros(mats[0].shape, dtype=np.float64)
        if predictor.support.size == 0:
            return out
        for k, wk in zip(predictor.kernels, predictor.weights, strict=True):
            out += wk * np.asarray(mats[int(k)], dtype=np.float64)
        return out
    if not isinstance(predictor, KernelExpansion):
        raise TypeError(f"no combined kernel for a predictor of type {type(predictor).__name__}")
    B = A if B is None else B
    fn = predictor.functions
    if fn is None:
        return np.zeros((A.shape[0], B.shape[0]))
    if isinstance(fn, FeatureMapFunctions):
        # (Phi(a) o omega) . Phi(b): omega repeats w_k over kernel k's columns
        omega = np.repeat(predictor.weights, fn.ranks)
        return (fn.transform(A) * omega) @ fn.transform(B).T
    return KernelFunctions(fn.specs, fn.scales, B).combine_cross(A, predictor.weights)


class CombinedKernel:
    """The learned kernel of a fitted estimator as a function ``(X, Y) -> K(X, Y)``.

    What ``SVC(kernel=...)`` and other scikit-learn estimators with a
    callable kernel take: raw features in, the estimator's standardisation
    applied inside. Holds the estimator (picklable with it).

    Parameters
    ----------
    estimator : fitted MKL estimator
    pair : int, optional
        The one-vs-one pair (default: the mean over pairs, see the module
        notes).
    """

    def __init__(self, estimator, pair=None):
        self.estimator = estimator
        self.pair = pair

    def __call__(self, X, Y=None):
        return self.estimator.combined_kernel(X, Y, pair=self.pair)

    def __repr__(self):
        what = "" if self.pair is None else f", pair={self.pair}"
        return f"CombinedKernel({type(self.estimator).__name__}{what})"


class CombinedKernelMixin:
    """``combined_kernel`` and ``kernel_`` for the estimators with ``models_`` of predictors."""

    def _combined_models(self, pair):
        check_is_fitted(self, "models_")
        models = self.models_
        if pair is None:
            return models
        if isinstance(pair, (bool, np.bool_)) or not isinstance(pair, (Integral, np.integer)):
            raise TypeError(f"pair must be None or an int index into pairs_, got {pair!r}")
        if not 0 <= int(pair) < len(models):
            raise ValueError(
                f"pair must lie in [0, {len(models)}) (the rows of pairs_), got {pair}"
            )
        return [models[int(pair)]]

    def combined_kernel(self, X, Y=None, pair=None):
        """The learned kernel ``sum_k w_k K_k(X, Y)`` of the fit.

        The base kernels with the fit's normalisation, on the fit's
        standardised features, weighted by the fitted weights (kernels
        under ``weight_threshold`` left out, as in prediction).

        Parameters
        ----------
        X : array-like of shape (n_a, n_features)
            With ``kernels="precomputed"``: the base kernels between two
            sets of samples, shape ``(n_kernels, n_a, n_b)``, and no ``Y``.
        Y : array-like of shape (n_b, n_features), optional
            Default ``X``.
        pair : int, optional
            One-vs-one pair ``pairs_[pair]``: its own kernel, with which its
            decision function was fitted. Default: the mean of the pairs'
            kernels (the one kernel of a two-class, regression or one-class
            model).

        Returns
        -------
        ndarray of shape (n_a, n_b)
        """
        models = self._combined_models(pair)
        if is_precomputed(getattr(self, "kernels", None)):
            if Y is not None:
                raise ValueError(
                    "with kernels='precomputed', pass the base kernels between the two sets of "
                    "samples as X, shape (n_kernels, n_a, n_b), and no Y"
                )
            stack = _as_stack(X, "X")
            if len(stack) != self.n_kernels_:
                raise ValueError(
                    f"X must hold the {self.n_kernels_} base kernels, shape (n_kernels, n_a, "
                    f"n_b); got {len(stack)}"
                )
            A, B = stack, None
        else:
            A = self._check_predict_input(X)
            B = None if Y is None else self._check_predict_input(Y)
        out = model_kernel(models[0].predictor, A, B)
        for model in models[1:]:
            out += model_kernel(model.predictor, A, B)
        if len(models) > 1:
            out /= len(models)
        return out

    @property
    def kernel_(self):
        """CombinedKernel: the learned kernel as a function, for ``SVC(kernel=est.kernel_)``.

        ``kernel_(X, Y)`` is :meth:`combined_kernel` (the mean over pairs
        for one-vs-one models). Not with ``kernels="precomputed"``, whose
        kernels are matrices, not functions of features: use
        :meth:`combined_kernel` on the stacks.
        """
        check_is_fitted(self, "models_")
        if is_precomputed(getattr(self, "kernels", None)):
            raise AttributeError(
                "kernel_ is a function of features; with kernels='precomputed' use "
                "combined_kernel(K) on a stack of base kernels"
            )
        return CombinedKernel(self)
