"""The epsilon-SVR dual oracle of MKL (see the common dual form of docs/new_oracle.md)."""

from __future__ import annotations

import numpy as np

from .._validation import check_real, check_vector
from ..kernels.bank import as_bank
from ._base import DualOracle, repair_feasible
from ._box import check_box
from ._problem import DualProblem

__all__ = ["SVRDual"]


class SVRDual(DualOracle):
    r"""epsilon-SVR dual oracle on a bank of kernels, solved by SMO.

    For kernel weights ``w`` it solves the epsilon-insensitive regression
    dual (Smola and Schoelkopf 2004, eq. 10, with ``beta = alpha - alpha*``)

    .. math:: J(w) = \max_{-C \le \beta \le C,\ 1^T\beta = 0}
              y^T\beta - \varepsilon \|\beta\|_1
              - \tfrac12 \sum_k w_k\, \beta^T K_k \beta,

    i.e. the common dual form of docs/new_oracle.md with ``l(beta) = y'beta - epsilon |beta|_1`` and
    ``v = beta``. As libsvm does, SMO works on the ``2n`` variables
    ``(alpha, alpha*)`` in ``[0, C]`` with signs ``(+1, -1)`` and linear term
    ``p = (epsilon - y, epsilon + y)`` (both read kernel row ``i``; see
    :class:`~mklopt.oracles.DualProblem`); answers carry ``beta``. At the
    optimum ``alpha_i alpha*_i = 0``, so ``p'a`` is ``-l(beta)``.

    The returned subgradient is ``-q/2`` with ``q_k = beta' K_k beta``, and
    ``bias`` is the offset of the regression function
    ``f(x) = sum_i beta_i K(x_i, x) + bias`` (``-rho`` in libsvm's notation,
    ``intercept_`` of scikit-learn's ``SVR``). Every outer method and
    every storage works unchanged (see :class:`~mklopt.oracles.SVMDual`,
    whose notes on tolerances and warm starts apply here too).

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels.
    y : array-like of shape (n_samples,)
        Real, finite targets.
    C : float or array-like of shape (n_samples,), default=1.0
        Box constraint: a number > 0, or one bound ``C_i >= 0`` per sample
        (``-C_i <= beta_i <= C_i``, scikit-learn's ``SVR`` with
        ``sample_weight``); a sample with ``C_i = 0`` has no variables
        (:mod:`mklopt.oracles._box`).
    epsilon : float, default=0.1
        Width of the insensitive tube, >= 0.
    tol : float, default=1e-3
        SMO stopping tolerance on the maximal KKT violation (libsvm's
        ``eps``).
    max_iter : int, optional
        SMO iteration budget per call; default ``max(10_000_000, 200 n)``.

    Attributes
    ----------
    n_kernels, n_samples, n_calls, n_unconverged, problem, last_stats
        As for :class:`~mklopt.oracles.SVMDual`.
    bank, y, C, epsilon, tol, max_iter
        As given (``y`` as a float64 array).
    kept : ndarray of int64 or None
        The samples with ``C_i > 0`` when some have none, else None.

    Notes
    -----
    *Warm starts* are given as ``beta`` (what answers return) and are split
    into ``(max(beta, 0), max(-beta, 0))``; a start outside
    ``[-C, C]^n, 1'beta = 0`` by more than rounding error is refused.

    References
    ----------
    A. J. Smola, B. Schoelkopf. A tutorial on support vector regression.
    Statistics and Computing 14, 2004.
    C.-C. Chang, C.-J. Lin. LIBSVM: a library for support vector machines.
    ACM TIST 2, 2011, section 2.3.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import SVRDual
    >>> X = np.linspace(0.0, 3.0, 8)[:, None]
    >>> K = np.stack([X @ X.T, np.exp(-(X - X.T) ** 2)])
    >>> oracle = SVRDual(K, np.sin(X[:, 0]), C=10.0, epsilon=0.05)
    >>> ans = oracle(np.array([0.5, 0.5]))
    >>> bool(abs(ans.alpha.sum()) < 1e-9)
    True
    >>> bool(np.isclose(ans.value, ans.linear_term - 0.5 * ans.w @ ans.q))
    True
    """

    #: ``C`` may be one bound per sample (class and sample weights; see
    #: :mod:`mklopt.oracles._box`).
    sample_bounds = True

    def __init__(self, bank, y, C=1.0, epsilon=0.1, tol=1e-3, max_iter=None):
        bank = as_bank(bank)
        n = int(bank.n_samples)
        self.y = check_vector(y, "y", size=n)
        self.C, upper, self.kept = check_box(C, n, "C")
        self.epsilon = check_real(epsilon, "epsilon", low=0.0)
        kept = np.arange(n) if self.kept is None else self.kept
        m = kept.size
        y = self.y[kept]
        rows = np.concatenate([kept, kept])
        signs = np.concatenate([np.ones(m), -np.ones(m)])
        linear = np.concatenate([self.epsilon - y, self.epsilon + y])
        self.problem = DualProblem.make(signs, rows, linear, np.tile(upper[kept], 2), 0.0, n)
        self._setup(bank, tol, max_iter)

    def _from_warm(self, warm_start):
        beta = self._drop(check_vector(warm_start, "warm_start", size=self.n_samples),
                          "warm_start")
        a = np.concatenate([np.maximum(beta, 0.0), np.maximum(-beta, 0.0)])
        return repair_feasible(a, self.problem)

    def _to_alpha(self, a):
        m = a.shape[0] // 2
        return self._spread(a[:m] - a[m:])
