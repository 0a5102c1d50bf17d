"""The logistic-loss (kernel logistic regression) dual oracle of MKL."""

from __future__ import annotations

import warnings

import numpy as np

from .._interrupt import check, current_flag
from .._jit.logistic import logistic_init_f, logistic_solve
from .._validation import check_int, check_labels, check_real, check_vector
from ..kernels.bank import as_bank
from ._loss_base import LossOracle
from ._warnings import ConvergenceWarning

__all__ = ["LogisticDual"]

# A warm start may sit on the boundary of [0, C] (an SVM's alpha, say); it is
# moved this far inside, relative to C, since the logistic dual's optimum is
# interior and its gradient is infinite on the boundary.
_INSIDE = 1e-12
# Relative slack of y'alpha = 0 under which a warm start is repaired.
_WARM_RTOL = 1e-8


def _binary_entropy_sum(a):
    """``sum_i H(a_i)``, ``H(a) = -a log a - (1 - a) log(1 - a)``, for ``a`` in (0, 1)."""
    return float(-(a @ np.log(a)) - ((1.0 - a) @ np.log1p(-a)))


class LogisticDual(LossOracle):
    r"""Logistic-loss dual oracle on a bank of kernels, solved by dual coordinate Newton.

    With the loss ``V(t, y) = log(1 + e^{-y t})``, whose conjugate gives
    ``-C V*(-beta_i / C, y_i) = C H(a_i)`` for ``a_i = beta_i y_i / C`` in
    ``[0, 1]`` (``H`` the binary entropy in nats), Kloft et al.'s
    generalised dual at kernel weights ``w`` is

    .. math:: J(w) = \max_{0 \le \alpha \le C,\ (y^T\alpha = 0)}\
              -C \sum_i \big[a_i \log a_i + (1 - a_i) \log(1 - a_i)\big]
              - \tfrac12 \sum_k w_k\, q_k(\alpha),
              \qquad a_i = \alpha_i / C,

    with ``q_k = (alpha * y)' K_k (alpha * y)``: here, as in
    :class:`~mklopt.oracles.SVMDual`, ``alpha`` is the non-negative dual
    variable and Kloft et al.'s signed ``beta`` is ``alpha * y``. ``J(w)``
    is the optimal value of regularised kernel logistic regression

    .. math:: \min_{f, b}\ C \sum_i \log\big(1 + e^{-y_i (f(x_i) + b)}\big)
              + \tfrac12 \|f\|^2_{K(w)},

    with the decision function ``f(x) + b = sum_i alpha_i y_i K(x_i, x) +
    bias`` and ``P(y = 1 | x) = 1 / (1 + e^{-(f(x) + b)})``. The optimum
    is interior (``0 < alpha_i < C``), and so is every iterate.

    The dual is solved on the combined kernel by the dual coordinate Newton
    method of Yu, Huang and Lin (2011) (see :mod:`mklopt._jit.logistic`):
    one coordinate at a time without an offset, two (keeping
    ``y'alpha = 0``) with one. Answers carry ``linear_term = C sum_i
    H(a_i)``, ``q``, subgradient ``-q/2``, and ``bias``, the offset ``b``
    minimising the primal for the answer's ``f``.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}, both present.
    C : float, default=1.0
        Weight of the loss, > 0 (scikit-learn's ``LogisticRegression(C=...)``).
    fit_intercept : bool, default=True
        Fit the offset ``b`` (and impose ``y'alpha = 0``).
    tol : float, default=1e-4
        Relative primal-dual gap at which a solve stops (see Notes).
    max_iter : int, optional
        Budget of coordinate steps per call; default ``max(1_000_000, 100 n)``.

    Attributes
    ----------
    n_kernels, n_samples : int
        Bank dimensions.
    n_calls, n_unconverged : int
        Calls so far, and calls that ended above ``tol`` (each warned with a
        :class:`ConvergenceWarning`).
    last_gap : float
        Primal-dual gap of the last solve (absolute).
    bank, y, C, fit_intercept, tol, max_iter
        As given. ``tol`` may be changed between calls (the driver
        tightens it as the outer gap closes).

    Notes
    -----
    *Stopping rule and certified values.* The solver computes the exact
    primal-dual gap ``P(f, b) - D(alpha)`` of its iterate, a sum of
    non-negative Fenchel-Young terms, one per point, and stops when it is at
    most ``tol * P``. The returned value ``D(alpha) = l(alpha) - w'q / 2``
    is a lower bound of ``J(w)`` within a relative ``tol / (1 - tol)`` of it,
    whatever ``C`` or the scale of the kernels: this is the inner error an
    outer duality gap inherits. ``D`` itself is a valid lower bound of the
    MKL optimum for any feasible ``alpha``. For MKL keep ``tol`` about a
    hundredth of the outer relative gap (the driver does so by itself).

    *Warm starts* are an answer's ``alpha``. A start on or within rounding
    of the box's boundary (an SVM's alpha, say) is moved ``1e-12 C`` inside;
    a start off ``y'alpha = 0`` by rounding only is repaired by rescaling
    the class in excess; anything further is a ``ValueError``.

    Each call forms the combined kernel (``n x n`` float64, one buffer
    reused by every call); a step costs ``O(n)``.

    References
    ----------
    H.-F. Yu, F.-L. Huang, C.-J. Lin. Dual coordinate descent methods for
    logistic regression and maximum entropy models. Machine Learning 85,
    2011.
    M. Kloft, U. Brefeld, S. Sonnenburg, A. Zien. Comparing sparse and
    non-sparse multiple kernel learning (generalised dual of problem (1)).

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import LogisticDual
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> K = np.stack([X @ X.T, np.exp(-(X - X.T) ** 2)])
    >>> oracle = LogisticDual(K, [-1, -1, 1, 1], C=10.0, tol=1e-10)
    >>> ans = oracle(np.array([0.5, 0.5]))
    >>> bool(np.all((ans.alpha > 0) & (ans.alpha < 10.0)))
    True
    >>> bool(np.isclose(ans.value, ans.linear_term - 0.5 * ans.w @ ans.q))
    True
    """

    c_homogeneous = True  # l = -C sum V*(-alpha/C): see LossOracle
    #: The decision function is the model's log-odds: estimators offer predict_proba.
    log_odds = True

    def __init__(self, bank, y, C=1.0, fit_intercept=True, tol=1e-4, max_iter=None):
        bank = as_bank(bank)
        n = int(bank.n_samples)
        self.y = check_labels(y, n, name="y")
        if np.ndim(C) > 0:
            raise ValueError(
                "LogisticDual takes one C for all samples; per-sample bounds (class or sample "
                "weights) are supported by the hinge loss (SVMDual), not the logistic loss"
            )
        self.C = check_real(C, "C", low=0.0, strict_low=True)
        if not isinstance(fit_intercept, (bool, np.bool_)):
            raise TypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
        self.fit_intercept = bool(fit_intercept)
        if max_iter is None:
            max_iter = max(1_000_000, 100 * n)
        self._setup(bank, tol, max_iter)
        self.last_gap = float("nan")

    # ---- starts --------------------------------------------------------------
    def _cold(self):
        """liblinear's start, ``alpha_i = min(1e-3 C, 1e-8)`` (Yu et al., section 5).

        With an offset each class gets that mass times ``2 n_{-y_i} / n``
        (at most twice it), so that ``y'alpha = 0``. A small start keeps
        ``f = K (alpha * y)`` small, whatever the scale of the kernel.
        """
        y, n = self.y, self.n_samples
        eps = min(1e-3 * self.C, 1e-8)
        if not self.fit_intercept:
            return np.full(n, eps)
        n_pos = float(np.count_nonzero(y > 0))
        return np.where(y > 0, 2.0 * (n - n_pos) / n, 2.0 * n_pos / n) * eps

    def _from_warm(self, warm_start):
        a = check_vector(warm_start, "warm_start", size=self.n_samples, copy=True)
        C = self.C
        if a.min() < -_WARM_RTOL * C or a.max() > C * (1.0 + _WARM_RTOL):
            raise ValueError(
                f"warm_start must lie in the box 0 <= alpha <= C (C = {C:g}); got values in "
                f"[{float(a.min()):.6g}, {float(a.max()):.6g}]. Pass the alpha of an oracle of "
                "the same problem, or None for a cold start"
            )
        np.clip(a, _INSIDE * C, C * (1.0 - _INSIDE), out=a)
        if self.fit_intercept:
            r = float(self.y @ a)
            if abs(r) > _WARM_RTOL * C * a.size:
                raise ValueError(
                    f"warm_start must satisfy y'alpha = 0; it is off by {r:.6g}. Pass the alpha "
                    "of an oracle of the same problem, or None for a cold start"
                )
            # Shrink the class in excess (the sign of r) by |r|: stays inside (0, C).
            cls = self.y == np.sign(r)
            if r != 0.0:
                a[cls] *= 1.0 - abs(r) / float(a[cls].sum())
        return a

    # ---- the solve -----------------------------------------------------------
    def _solve(self, K, warm_start):
        a = self._cold() if warm_start is None else self._from_warm(warm_start)
        y = self.y
        f = logistic_init_f(K, y, a, np.empty(self.n_samples))
        tol = check_real(self.tol, "tol", low=0.0, strict_low=True)
        max_iter = check_int(self.max_iter, "max_iter", low=1)
        stop = current_flag()
        n_iter, gap, primal, b = logistic_solve(
            K, y, self.C, a, f, self.fit_intercept, tol, max_iter, max(1, self.n_samples), stop
        )
        check(stop)  # a solve stopped part-way is dropped: the call raises
        self.last_gap = float(gap)
        converged = gap <= tol * primal
        if not converged:
            warnings.warn(
                f"logistic dual solve stopped after {n_iter} steps (max_iter={max_iter}) with "
                f"primal-dual gap {gap:.3g} > tol * primal = {tol * primal:.3g}; the value is a "
                "lower bound of J(w), not within tol of it. Raise max_iter or loosen tol",
                ConvergenceWarning,
                stacklevel=3,
            )
        return a, float(b), int(n_iter), bool(converged)

    def _v(self, alpha):
        return alpha * self.y

    def _linear(self, alpha):
        return self.C * _binary_entropy_sum(alpha / self.C)
