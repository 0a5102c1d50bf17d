"""The SVM dual oracle of MKL: ``w -> (J(w), -q/2)`` (DESIGN section 2)."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from .._jit.smo import smo_gradient, smo_solve, smo_violation, svm_bias
from .._types import OracleAnswer
from .._validation import check_int, check_labels, check_real, check_vector, check_weights
from ..kernels.bank import as_bank
from ._problem import DualProblem
from ._warnings import ConvergenceWarning

__all__ = ["SVMDual"]

# Relative slack under which a warm start outside Q counts as rounding error
# and is repaired rather than refused.
_WARM_RTOL = 1e-8



class SVMDual:
    r"""SVM dual oracle on a bank of kernels, solved by SMO.

    For kernel weights ``w`` it solves

    .. math:: J(w) = \max_{0 \le \alpha \le C,\ y^T\alpha = 0}
              1^T\alpha - \tfrac12 \sum_k w_k\, q_k(\alpha),
              \qquad q_k(\alpha) = (\alpha \circ y)^T K_k (\alpha \circ y),

    on the combined kernel ``sum_k w_k K_k`` with SMO and second-order
    working-set selection (libsvm's method; see :mod:`mklopt._jit.smo`),
    and returns ``J(w)`` with the subgradient ``-q/2``.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels. Raw matrices are wrapped with
        ``KernelBank.from_matrices`` (which checks them).
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}, both present.
    C : float, default=1.0
        Box constraint, > 0.
    tol : float, default=1e-3
        Stopping tolerance of SMO on the maximal KKT violation
        ``m(alpha) - M(alpha)`` (libsvm's ``eps``, same meaning and default
        as scikit-learn's ``SVC(tol=...)``). See Notes before using the
        default inside MKL.
    max_iter : int, optional
        SMO iteration budget per call; default ``max(10_000_000, 100 n)``
        as libsvm. When it runs out a :class:`ConvergenceWarning` is issued
        and the (feasible, not optimal) point is returned.

    Attributes
    ----------
    n_kernels, n_samples : int
        Bank dimensions.
    n_calls : int
        Number of oracle calls so far.
    problem : DualProblem
        The dual in the SMO form shared by every oracle (signs ``y``,
        linear term ``-1``, upper bounds ``C``, ``y'alpha = 0``).
    bank, y, C, tol, max_iter
        As given (``y`` as a float64 array, ``max_iter`` resolved).

    Notes
    -----
    *Inner versus outer tolerance.* At an SMO point with violation
    ``m - M <= tol`` the concavity of the dual gives, for the optimum
    ``alpha*``,

        ``J(w) - f(w, alpha) <= tol * P``,  ``P <= (1'alpha + 1'alpha*) / 2``

    (``P`` is the mass that must move from ``I_low`` to ``I_up``), while
    ``J(w) >= 1'alpha* / 2`` because every support vector has
    ``y_i f(x_i) <= 1``. The *relative* error of the reported value is
    therefore about ``2 tol`` at most, whatever the scale of ``C`` or of
    the kernels. The reported value underestimates ``J(w)``, so a duality
    gap ``J(w) - D(alpha)`` computed from it can be too optimistic by that
    much (``D(alpha)`` itself stays a valid lower bound for any feasible
    ``alpha``), and cutting-plane models are only as tight as that error.
    For MKL use ``tol`` about a hundredth of the outer relative gap:
    ``tol=1e-4`` for the papers' ``rel_gap < 1e-2`` (inner error <= 2e-4,
    i.e. 2 % of the outer tolerance). With warm starts the extra cost of
    ``1e-4`` over libsvm's ``1e-3`` is small, as SMO converges linearly
    near the solution. Keep ``1e-3`` when the aim is to match
    scikit-learn's ``SVC`` defaults.

    *Warm starts.* Any ``alpha`` in ``Q = {0 <= alpha <= C, y'alpha = 0}``
    is a valid start for any ``w``; the previous answer's ``alpha`` is the
    usual choice. A start outside ``Q`` by no more than rounding error
    (``1e-8 C`` per entry, ``1e-8 C n`` for ``y'alpha``) is repaired: clipped
    to the box, then the heavier class is scaled down so that
    ``y'alpha = 0``. A start further outside ``Q`` is an error
    (``ValueError``) rather than a silent cold start, because it means the
    vector belongs to another problem (other ``y``, other ``C``).

    The combined kernel is written into one n x n float64 buffer allocated
    at construction and reused by every call; ``q`` reads only the rows and
    columns of the support vectors.

    References
    ----------
    R.-E. Fan, P.-H. Chen, C.-J. Lin. Working set selection using second
    order information for training support vector machines. JMLR 6, 2005.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import SVMDual
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> K = np.stack([X @ X.T, np.exp(-(X - X.T) ** 2)])
    >>> oracle = SVMDual(K, [-1, -1, 1, 1], C=10.0)
    >>> ans = oracle(np.array([0.5, 0.5]))
    >>> bool(np.isclose(ans.value, ans.linear_term - 0.5 * ans.w @ ans.q))
    True
    >>> ans2 = oracle(np.array([0.9, 0.1]), warm_start=ans.alpha)
    >>> oracle.n_calls
    2
    """

    def __init__(self, bank, y, C=1.0, tol=1e-3, max_iter=None):
        self.bank = as_bank(bank)
        self.n_kernels = int(self.bank.n_kernels)
        self.n_samples = int(self.bank.n_samples)
        self.y = check_labels(y, self.n_samples, name="y")
        self.C = check_real(C, "C", low=0.0, strict_low=True)
        self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
        n = self.n_samples
        if max_iter is None:
            max_iter = max(10_000_000, 100 * n)
        self.max_iter = check_int(max_iter, "max_iter", low=1)
        self.n_calls = 0
        self._K = np.empty((n, n), dtype=np.float64)
        #: The dual in SMO form (see :class:`~mklopt.oracles._problem.DualProblem`):
        #: ``a = alpha``, signs ``y``, linear term ``-1``, bounds ``C``.
        self.problem = DualProblem.make(
            self.y, np.arange(n), np.full(n, -1.0), self.C, 0.0, n
        )

    #: ``need_q=False`` is supported (see :meth:`__call__`).
    supports_value_only = True

    def __call__(
        self, w: NDArray, warm_start: NDArray | None = None, need_q: bool = True
    ) -> OracleAnswer:
        """Solve the SVM dual at kernel weights ``w``.

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
            Non-negative finite kernel weights, not all zero.
        warm_start : array-like of shape (n_samples,), optional
            A feasible ``alpha`` to start from (see the class Notes).
        need_q : bool, default=True
            When False, only ``J(w)`` is wanted (a line search): ``q`` and
            ``grad`` are None and the value is read off the solver's
            gradient, ``J = 1'alpha - alpha'(G + 1) / 2`` with
            ``G = Q alpha - 1``, so no pass over the kernel bank is made.

        Returns
        -------
        OracleAnswer
            ``value = J(w) = 1'alpha - 1/2 w'q``, ``grad = -q/2``, ``q``,
            ``alpha``, ``bias``, ``support``, ``n_solver_iter``,
            ``linear_term``, ``w``.

        Raises
        ------
        ValueError
            For bad ``w`` or ``warm_start``.

        Warns
        -----
        ConvergenceWarning
            When SMO stops on ``max_iter``.
        """
        w = np.array(check_weights(w, self.n_kernels, name="w"), dtype=np.float64)
        y, C, n = self.y, self.C, self.n_samples
        if warm_start is None:
            alpha = np.zeros(n)
            grad = np.full(n, -1.0)
            K = self._combine(w)
        else:
            alpha = self._check_warm_start(warm_start)
            K = self._combine(w)
            grad = smo_gradient(K, y, alpha, np.empty(n))
        self.n_calls += 1

        n_iter = smo_solve(K, y, C, alpha, grad, self.tol, self.max_iter)
        if n_iter >= self.max_iter and smo_violation(y, alpha, grad, C) > self.tol:
            warnings.warn(
                f"SMO stopped after max_iter={self.max_iter} iterations with KKT violation "
                f"{smo_violation(y, alpha, grad, C):.3g} > tol={self.tol:g}; "
                "raise max_iter or loosen tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        bias = float(svm_bias(y, alpha, grad, C))
        support = np.flatnonzero(alpha > 0.0).astype(np.int64)
        linear_term = float(alpha.sum())
        if not need_q:
            # alpha'Q alpha = v'K(w)v = w'q, and G = Q alpha - 1 is exact on exit.
            value = linear_term - 0.5 * float(alpha[support] @ (grad[support] + 1.0))
            return OracleAnswer(
                w=w, value=value, grad=None, q=None, alpha=alpha, bias=bias,
                support=support, n_solver_iter=int(n_iter), linear_term=linear_term,
            )
        q = np.array(self.bank.quad_forms(alpha * y, support=support), dtype=np.float64)
        value = linear_term - 0.5 * float(w @ q)
        return OracleAnswer(
            w=w,
            value=value,
            grad=-0.5 * q,
            q=q,
            alpha=alpha,
            bias=bias,
            support=support,
            n_solver_iter=int(n_iter),
            linear_term=linear_term,
        )

    def _combine(self, w):
        K = self.bank.combine(w, out=self._K)
        if K is not self._K:
            K = np.ascontiguousarray(K, dtype=np.float64)
        return K

    def _check_warm_start(self, warm_start):
        n, C, y = self.n_samples, self.C, self.y
        alpha = np.array(check_vector(warm_start, "warm_start", size=n), dtype=np.float64)
        slack = _WARM_RTOL * C
        lo, hi = float(alpha.min()), float(alpha.max())
        if lo < -slack or hi > C + slack:
            raise ValueError(
                f"warm_start must lie in the box 0 <= alpha <= C={C:g}; got values in "
                f"[{lo:.6g}, {hi:.6g}]. Pass alpha from an oracle with the same C, or None "
                "for a cold start"
            )
        np.clip(alpha, 0.0, C, out=alpha)
        pos = y > 0
        s_pos = float(alpha[pos].sum())
        s_neg = float(alpha[~pos].sum())
        if abs(s_pos - s_neg) > _WARM_RTOL * C * n:
            raise ValueError(
                f"warm_start must satisfy y'alpha = 0; got y'alpha = {s_pos - s_neg:.6g}. "
                "Pass alpha from an oracle with the same labels y, or None for a cold start"
            )
        # Remove the rounding-level imbalance by shrinking the heavier class:
        # scaling down keeps the box, and the result is exactly balanced up
        # to one more rounding.
        if s_pos > s_neg:
            alpha[pos] *= s_neg / s_pos
        elif s_neg > s_pos:
            alpha[~pos] *= s_pos / s_neg
        return alpha
