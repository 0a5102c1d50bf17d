"""The decision function of a fitted kernel model, and nothing more.

``f(x) = sum_s coef_s sum_k w_k K_k(x_s, x) + bias`` over the support points
``x_s``: a :class:`KernelExpansion` holds the kernel functions of the selected
kernels on the support rows only (:class:`~mklopt.kernels.KernelFunctions`),
their weights, the coefficients and the bias. It never holds a kernel
matrix, so a model of a problem trained on kernels computed on the fly is as
small to keep and to save as any other.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_matrix, check_real, check_vector
from .feature_maps import FeatureMapFunctions
from .functions import KernelFunctions

__all__ = ["KernelExpansion"]


class KernelExpansion:
    """``f(x) = sum_s coef_s sum_k weights_k K_k(x_s, x) + bias``.

    Parameters
    ----------
    functions : KernelFunctions or FeatureMapFunctions or None
        The kernels used, evaluated against the support points (``n_support``
        rows; a model trained on feature maps keeps its maps). None for a
        model without support points (then ``coef`` is empty and ``f`` is
        the constant ``bias``).
    weights : array-like of shape (functions.n_kernels,)
        Non-negative kernel weights.
    coef : array-like of shape (n_support,)
        Dual coefficients of the support points (``alpha_s y_s`` for a
        classifier, ``beta_s`` for a regressor).
    bias : float
        Offset.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelFunctions, KernelExpansion, rbf
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> fn = KernelFunctions.from_data(X, [rbf(1.0)], normalize=None)
    >>> f = KernelExpansion(fn.take([0, 2]), [1.0], [1.0, -1.0], 0.5)
    >>> f(np.array([[0.0]])).round(4).tolist()
    [1.4889]
    """

    def __init__(self, functions, weights, coef, bias):
        coef = check_vector(coef, "coef")
        self.bias = check_real(bias, "bias")
        if functions is None:
            if coef.size:
                raise ValueError("coef must be empty when there are no kernel functions")
            self.functions, self.weights, self.coef = None, np.zeros(0), coef
            return
        if not isinstance(functions, (KernelFunctions, FeatureMapFunctions)):
            raise TypeError(
                "functions must be a KernelFunctions, a FeatureMapFunctions or None, got "
                f"{type(functions).__name__}"
            )
        if functions.n_samples != coef.size:
            raise ValueError(
                f"coef has {coef.size} entries for {functions.n_samples} support points"
            )
        weights = check_vector(weights, "weights", size=functions.n_kernels)
        if np.any(weights < 0.0):
            raise ValueError("weights must be non-negative")
        self.functions, self.weights, self.coef = functions, weights, coef

    @classmethod
    def from_solution(cls, functions, weights, v, bias, threshold=0.0, support=None):
        """The expansion of a solved problem on all training points.

        Keeps only the points with ``v_i != 0`` and the kernels with
        ``weights_k > threshold * max(weights)``.

        Parameters
        ----------
        functions : KernelFunctions or FeatureMapFunctions
            The bank's kernel functions on the training points.
        weights : array-like of shape (n_kernels,)
        v : array-like of shape (n_samples,)
            Coefficient of every training point.
        bias : float
        threshold : float, default=0.0
            Relative weight below which a kernel is dropped, in ``[0, 1)``.
        support : array-like of int, optional
            The points with ``v_i != 0`` in the order the expansion keeps
            them; default ascending.

        Returns
        -------
        KernelExpansion
        """
        w = check_vector(weights, "weights", size=functions.n_kernels)
        v = check_vector(v, "v", size=functions.n_samples)
        if support is None:
            support = np.flatnonzero(v)
        else:
            support = np.asarray(support, dtype=np.int64)
            if not np.array_equal(np.sort(support), np.flatnonzero(v)):
                raise ValueError("support must hold exactly the points with v != 0")
        keep = np.flatnonzero(w > threshold * w.max()) if w.max() > 0 else np.zeros(0, int)
        if support.size == 0 or keep.size == 0:
            return cls(None, [], [], bias)
        fn = functions.subset(keep).take(support)
        return cls(fn, w[keep], v[support], bias)

    @property
    def n_support(self):
        """Number of support points."""
        return int(self.coef.size)

    def __call__(self, X):
        """Decision values ``f(X)``, shape (n_points,)."""
        X = check_matrix(X, "X")
        if self.functions is None:
            return np.full(X.shape[0], self.bias)
        if isinstance(self.functions, FeatureMapFunctions):
            # A linear function of the features: independent of n_support.
            return self.functions.expand(X, self.weights, self.coef) + self.bias
        return self.functions.combine_cross(X, self.weights) @ self.coef + self.bias

    decision_function = __call__

    def __repr__(self):
        k = 0 if self.functions is None else self.functions.n_kernels
        return f"KernelExpansion(n_support={self.n_support}, n_kernels={k}, bias={self.bias:.6g})"
