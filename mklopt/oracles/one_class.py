"""The one-class (nu) dual oracle of MKL (see the common dual form of docs/new_oracle.md)."""

from __future__ import annotations

import numpy as np

from .._validation import check_real
from ..kernels.bank import as_bank
from ._base import DualOracle
from ._box import check_box
from ._problem import DualProblem

__all__ = ["OneClassDual"]


def _check_nu(nu):
    if np.ndim(nu) > 0:
        raise TypeError(
            "nu must be a real number in (0, 1], got an array; one-class learning takes no "
            "labels or targets (was a y passed where nu goes?)"
        )
    nu = check_real(nu, "nu")
    if not 0.0 < nu <= 1.0:
        raise ValueError(f"nu must lie in (0, 1], got {nu!r}")
    return nu


class OneClassDual(DualOracle):
    r"""nu-one-class dual oracle on a bank of kernels, solved by SMO.

    For kernel weights ``w`` it solves the dual of the nu-one-class SVM
    (Schoelkopf et al. 2001, eq. 6, with the ``1/2`` of their eq. 3)

    .. math:: J(w) = \max_{0 \le \alpha \le 1/(\nu n),\ 1^T\alpha = 1}
              - \tfrac12 \sum_k w_k\, \alpha^T K_k \alpha,

    i.e. the common dual form of docs/new_oracle.md with ``l = 0`` and ``v = alpha``: the outer
    problem picks the kernel combination under which the data's mean
    embedding, restricted to the ``nu`` fraction that may be outliers, is
    smallest. ``bias`` is ``-rho``, libsvm's offset for these scaled
    variables: the decision function is ``f(x) = sum_i alpha_i K(x_i, x) -
    rho``, positive for inliers. scikit-learn's ``OneClassSVM`` (libsvm)
    uses ``alpha`` in ``[0, 1]`` with ``1'alpha = nu n``: its ``dual_coef_``
    and ``-intercept_`` are ``nu n`` times ``alpha`` and ``rho`` here.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels.
    nu : float, default=0.5
        Upper bound on the fraction of training outliers and lower bound on
        the fraction of support vectors, in ``(0, 1]``.
    tol : float, default=1e-3
        SMO stopping tolerance on the maximal KKT violation.
    max_iter : int, optional
        SMO iteration budget per call; default ``max(10_000_000, 100 n)``.
    sample_weight : array-like of shape (n_samples,), optional
        Per-sample weights ``W_i >= 0`` (scikit-learn's ``OneClassSVM.fit(
        sample_weight=)``, libsvm's bounds ``W_i`` with ``1'alpha = nu sum_i
        W_i``): here the bounds ``W_i / (nu sum_j W_j)`` with ``1'alpha = 1``,
        so that weights scaled by a constant give the same problem. A sample
        of weight 0 has no variable (:mod:`mklopt.oracles._box`).

    Attributes
    ----------
    n_kernels, n_samples, n_calls, n_unconverged, problem, last_stats
        As for :class:`~mklopt.oracles.SVMDual`.
    bank, nu, tol, max_iter, sample_weight
        As given.
    kept : ndarray of int64 or None
        The samples of positive weight when some have weight 0, else None.

    Notes
    -----
    The cold start is libsvm's: the first ``floor(nu n)`` variables at the
    bound, one fractional, the rest zero. Since ``J(w) <= 0`` and the value
    scales as ``1/n``, relative gaps behave as for the other oracles.

    References
    ----------
    B. Schoelkopf, J. C. Platt, J. Shawe-Taylor, A. J. Smola, R. C.
    Williamson. Estimating the support of a high-dimensional distribution.
    Neural Computation 13, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import OneClassDual
    >>> X = np.linspace(0.0, 3.0, 8)[:, None]
    >>> K = np.stack([np.exp(-(X - X.T) ** 2), np.exp(-0.1 * (X - X.T) ** 2)])
    >>> ans = OneClassDual(K, nu=0.25)(np.array([0.5, 0.5]))
    >>> bool(np.isclose(ans.alpha.sum(), 1.0)), ans.linear_term == 0.0
    (True, True)
    """

    #: Takes per-sample weights (``sample_weight``; see :mod:`mklopt.oracles._box`).
    sample_bounds = True

    def __init__(self, bank, nu=0.5, tol=1e-3, max_iter=None, sample_weight=None):
        bank = as_bank(bank)
        n = int(bank.n_samples)
        self.nu = _check_nu(nu)
        if sample_weight is None:
            self.sample_weight = None
            upper, rows = np.full(n, 1.0 / (self.nu * n)), np.arange(n)
        else:
            # libsvm's weighted one-class problem (bounds W_i, sum nu sum_i W_i),
            # divided by nu sum_i W_i: the bounds W_i / (nu sum W), sum 1.
            w, _, self.kept = check_box(sample_weight, n, "sample_weight")
            self.sample_weight = w
            rows = np.arange(n) if self.kept is None else self.kept
            upper = w / (self.nu * float(w.sum()))
        m = rows.size
        self.problem = DualProblem.make(np.ones(m), rows, np.zeros(m), upper[rows], 1.0, n)
        self._setup(bank, tol, max_iter)

    def _start(self):
        # libsvm's start: the variables in order, each at its bound, until the
        # mass 1 is placed (the last one fractional). With equal bounds the
        # first floor(nu n) are at 1 / (nu n).
        upper = self.problem.upper
        before = np.concatenate([[0.0], np.cumsum(upper)[:-1]])
        return np.clip(1.0 - before, 0.0, upper)
