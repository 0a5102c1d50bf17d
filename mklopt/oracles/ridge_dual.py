"""The squared-loss (kernel ridge / LS-SVM) dual oracle of MKL."""

from __future__ import annotations

import numpy as np

from .._validation import check_vector
from ..kernels.bank import as_bank
from ._box import check_box
from ._loss_base import LossOracle

__all__ = ["RidgeDual"]


class RidgeDual(LossOracle):
    r"""Squared-loss dual oracle on a bank of kernels, solved exactly.

    With the loss ``V(t, y) = (y - t)^2 / 2``, whose conjugate is
    ``V*(s, y) = s^2 / 2 + s y``, Kloft et al.'s generalised dual
    ``-C sum_i V*(-alpha_i / C, y_i) - 1/2 sum_k w_k alpha' K_k alpha``
    becomes, at kernel weights ``w``,

    .. math:: J(w) = \max_{\alpha\ (1^T\alpha = 0)}\
              y^T\alpha - \frac{\|\alpha\|^2}{2C}
              - \tfrac12 \sum_k w_k\, \alpha^T K_k \alpha,

    the dual of kernel ridge regression (least-squares SVM with an offset)

    .. math:: \min_{f, b}\ \frac{C}{2} \sum_i (y_i - f(x_i) - b)^2
              + \tfrac12 \|f\|^2_{K(w)},

    whose value it equals (strong duality). Setting the gradient to zero
    gives the linear system

    .. math:: (K(w) + I / C)\, \alpha + b\, 1 = y, \qquad 1^T \alpha = 0,

    solved by a Cholesky factorisation of ``K(w) + I/C`` (positive definite
    for every ``C > 0``): ``alpha = u - b z`` with ``(K + I/C) u = y``,
    ``(K + I/C) z = 1`` and ``b = 1'u / 1'z``. Without an offset
    (``fit_intercept=False``) the equality is dropped and
    ``alpha = (K + I/C)^{-1} y``, which is scikit-learn's
    ``KernelRidge(alpha=1/C, kernel="precomputed")``'s ``dual_coef_``.

    The answer has ``linear_term = y'alpha - |alpha|^2 / (2C)``,
    ``q_k = alpha' K_k alpha``, subgradient ``-q/2`` and ``bias = b``; the
    regression function is ``f(x) = sum_i alpha_i K(x_i, x) + b``. Since
    the solve is exact, ``J(w)`` is exact up to rounding and every duality
    gap computed from an answer is certified: for L1-MKL it bounds the
    distance to the optimum of

    .. math:: \min_{f_m, b}\ \frac{C}{2} \sum_i (y_i - \textstyle\sum_m f_m(x_i) - b)^2
              + \tfrac12 \big(\textstyle\sum_m \|f_m\|_{K_m}\big)^2.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels.
    y : array-like of shape (n_samples,)
        Real, finite targets.
    C : float or array-like of shape (n_samples,), default=1.0
        Weight of the squared loss, > 0 (``1/C`` is the ridge), or one
        weight ``C_i >= 0`` per sample (weighted least squares,
        ``sum_i C_i (y_i - f(x_i) - b)^2 / 2``: the ridge ``1/C_i`` on the
        diagonal and ``-sum_i alpha_i^2 / (2 C_i)`` in the linear term). A
        sample with ``C_i = 0`` has ``alpha_i = 0`` and is left out of the
        solve.
    fit_intercept : bool, default=True
        Fit the offset ``b`` (and impose ``1'alpha = 0``).

    Attributes
    ----------
    n_kernels, n_samples : int
        Bank dimensions.
    n_calls : int
        Calls so far.
    n_unconverged : int
        Always 0 (the solve is exact).
    bank, y, C, fit_intercept
        As given (``y`` as a float64 array).
    kept : ndarray of int64 or None
        The samples with ``C_i > 0`` when some have none, else None.

    Notes
    -----
    Each call forms the combined kernel (``n x n`` float64, one buffer
    reused by every call) and factors it, ``O(n^3)``; warm starts are
    accepted and ignored. The oracle has no ``tol``: its values are exact,
    so the driver's adaptation of the inner tolerance leaves it alone.

    References
    ----------
    M. Kloft, U. Brefeld, S. Sonnenburg, A. Zien. Comparing sparse and
    non-sparse multiple kernel learning (generalised dual of problem (1)).
    J. A. K. Suykens, J. Vandewalle. Least squares support vector machine
    classifiers. Neural Processing Letters 9, 1999 (the bordered system).

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import RidgeDual
    >>> X = np.linspace(0.0, 3.0, 8)[:, None]
    >>> K = np.stack([X @ X.T, np.exp(-(X - X.T) ** 2)])
    >>> oracle = RidgeDual(K, np.sin(X[:, 0]), C=10.0)
    >>> ans = oracle(np.array([0.5, 0.5]))
    >>> bool(abs(ans.alpha.sum()) < 1e-12)
    True
    >>> bool(np.isclose(ans.value, ans.linear_term - 0.5 * ans.w @ ans.q))
    True
    """

    c_homogeneous = True  # l = -C sum V*(-alpha/C): see LossOracle

    #: ``C`` may be one bound per sample (class and sample weights; see
    #: :mod:`mklopt.oracles._box`).
    sample_bounds = True

    def __init__(self, bank, y, C=1.0, fit_intercept=True):
        bank = as_bank(bank)
        n = int(bank.n_samples)
        self.y = check_vector(y, "y", size=n)
        self.C, upper, self.kept = check_box(C, n, "C")
        # the ridge 1 / C_i of the samples that have a variable
        self._ridge = 1.0 / (upper if self.kept is None else upper[self.kept])
        if not isinstance(fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
        self.fit_intercept = bool(fit_intercept)
        self._setup(bank)

    def _solve(self, K, warm_start):
        if self.kept is not None:
            # Samples of bound C_i = 0 have alpha_i = 0: solve on the others.
            Kk = K[np.ix_(self.kept, self.kept)]
            alpha_k, b, n_iter, ok = self._solve_on(Kk, self.y[self.kept])
            alpha = np.zeros(self.n_samples)
            alpha[self.kept] = alpha_k
            return alpha, b, n_iter, ok
        return self._solve_on(K, self.y)

    def _solve_on(self, K, y):
        n = K.shape[0]
        ridge = self._ridge
        # K is the oracle's own buffer (or a copy): add the ridge in place on
        # the diagonal, and take it off again.
        import scipy.linalg  # here: slow to import, and only this solve needs it

        K.flat[:: n + 1] += ridge
        try:
            fac = scipy.linalg.cho_factor(K, lower=True, overwrite_a=False, check_finite=False)
            solve = lambda rhs: scipy.linalg.cho_solve(fac, rhs, check_finite=False)  # noqa: E731
        except np.linalg.LinAlgError:
            # Only when rounding makes K + I/C lose definiteness (1/C tiny
            # against the kernels' scale): a symmetric indefinite solve.
            lu = scipy.linalg.lu_factor(K, check_finite=False)
            solve = lambda rhs: scipy.linalg.lu_solve(lu, rhs, check_finite=False)  # noqa: E731
        finally:
            K.flat[:: n + 1] -= ridge
        if not self.fit_intercept:
            return solve(y), 0.0, 1, True
        uz = solve(np.column_stack([y, np.ones(n)]))
        u, z = uz[:, 0], uz[:, 1]
        b = float(u.sum() / z.sum())
        alpha = u - b * z
        return alpha, b, 1, True

    def _v(self, alpha):
        return alpha

    def _linear(self, alpha):
        if self.kept is None:
            return float(self.y @ alpha) - 0.5 * float(self._ridge @ (alpha * alpha))
        a = alpha[self.kept]
        return float(self.y[self.kept] @ a) - 0.5 * float(self._ridge @ (a * a))
