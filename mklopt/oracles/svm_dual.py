"""The SVM dual oracle of MKL: ``w -> (J(w), -q/2)`` (see docs/new_oracle.md)."""

from __future__ import annotations

import numpy as np

from .._validation import check_labels
from ..kernels.bank import as_bank
from ._base import DualOracle
from ._box import check_box
from ._problem import DualProblem

__all__ = ["SVMDual"]


class SVMDual(DualOracle):
    r"""SVM dual oracle on a bank of kernels, solved by SMO.

    For kernel weights ``w`` it solves

    .. math:: J(w) = \max_{0 \le \alpha \le C,\ y^T\alpha = 0}
              1^T\alpha - \tfrac12 \sum_k w_k\, q_k(\alpha),
              \qquad q_k(\alpha) = (\alpha \circ y)^T K_k (\alpha \circ y),

    on the combined kernel ``sum_k w_k K_k`` with SMO and second-order
    working-set selection (libsvm's method; see :mod:`mklopt._jit.smo`),
    and returns ``J(w)`` with the subgradient ``-q/2``. Kernels are read
    through the bank's storage only: for small ``n`` the combined kernel is
    formed once per call, for large ``n`` SMO reads rows of it through an
    LRU row cache of ``bank.cache_size`` MB (see
    :mod:`mklopt.oracles._solver`), so the oracle works whatever the storage.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels. Raw matrices are wrapped with
        ``KernelBank.from_matrices`` (which checks them).
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}, both present.
    C : float or array-like of shape (n_samples,), default=1.0
        Box constraint: a number > 0, or one bound ``C_i >= 0`` per sample
        (the weighted SVM, ``0 <= alpha_i <= C_i``; the estimators' class
        and sample weights). A sample with ``C_i = 0`` has no dual variable
        (see :mod:`mklopt.oracles._box`).
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
        linear term ``-1``, upper bounds ``C``, ``y'alpha = 0``), on the
        samples with ``C_i > 0``.
    kept : ndarray of int64 or None
        The samples with ``C_i > 0`` when some have none, else None.
    bank, y, C, tol, max_iter
        As given (``y`` as a float64 array, ``max_iter`` resolved). ``tol``
        is read at every call and may be changed between calls (a method
        tightening the inner tolerance as its gap closes).
    last_stats : SolveStats or None
        What the last call did (SMO iterations, row blocks, rows computed
        and served from the cache, the final KKT violation and whether it
        met ``tol``).
    n_unconverged : int
        Calls whose solve ended above ``tol`` (each also issued a
        :class:`ConvergenceWarning`); their values are lower bounds of
        ``J(w)``. Very large kernel weights (a group driven out by mirror
        descent) make the dual ill-conditioned and SMO slow.

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
    to the box, then the residual of ``y'alpha = 0`` is removed by moving
    the free variables only, so that variables at 0 or ``C`` stay there and
    an optimal start re-solves in a few iterations. A start further outside
    ``Q`` is an error
    (``ValueError``) rather than a silent cold start, because it means the
    vector belongs to another problem (other ``y``, other ``C``).

    On the whole-matrix path the combined kernel is written into one n x n
    float64 buffer allocated at construction and reused by every call;
    ``q`` reads only the rows and columns of the support vectors.

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

    #: ``C`` may be one bound per sample (class and sample weights; see
    #: :mod:`mklopt.oracles._box`).
    sample_bounds = True

    def __init__(self, bank, y, C=1.0, tol=1e-3, max_iter=None):
        bank = as_bank(bank)
        n = int(bank.n_samples)
        self.y = check_labels(y, n, name="y")
        self.C, upper, self.kept = check_box(C, n, "C")
        rows = np.arange(n) if self.kept is None else self.kept
        ys = self.y[rows]
        if not (np.any(ys > 0) and np.any(ys < 0)):
            raise ValueError(
                f"C is 0 for every sample of class {-ys[0]:+g}; each class needs a sample with "
                "C_i > 0 (a positive weight)"
            )
        self.problem = DualProblem.make(ys, rows, np.full(rows.size, -1.0), upper[rows], 0.0, n)
        self._setup(bank, tol, max_iter)
