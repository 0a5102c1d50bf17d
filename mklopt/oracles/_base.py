"""What every MKL dual oracle shares (see the common dual form of docs/new_oracle.md).

An oracle fixes a :class:`~mklopt.oracles.DualProblem` (signs, kernel rows,
linear term ``p``, bounds, equality) and answers, for kernel weights ``w``,

    J(w) = max_a  l(a) - 1/2 sum_k w_k q_k(a),   l(a) = -p'a,
    q_k(a) = v' K_k v,   v = sum_t s_t a_t e_{rows_t},

with the subgradient ``-q/2``. :class:`DualOracle` does all of it (weight
checks, warm starts, the solve through :class:`~mklopt.oracles._solver.
DualSolver`, the offset, ``q`` through the bank's storage, value-only
answers); a concrete oracle only builds its problem and maps between its
own dual variables and the problem's (epsilon-SVR keeps ``beta = a - a*``
outside and ``(a, a*)`` inside).

*Checked once.* A call checks ``w`` (and a warm start) once, at its start,
making the one copy the answer keeps; the solver then reads the kernels
through the bank's storage, whose verbs trust their arguments (see
:mod:`mklopt.kernels.storage`), never through the bank's public verbs,
which would check ``w`` again.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .._jit.feasible import NO_ROOM, OFF_EQUALITY, OUTSIDE_BOX, repair_box_equality
from .._jit.smo import smo_rho, smo_violation
from .._types import OracleAnswer
from .._validation import check_int, check_real, check_vector, check_weights
from ._solver import DualSolver
from ._warnings import ConvergenceWarning

__all__ = ["DualOracle", "repair_feasible"]


def _kernel_subset(kernels, m):
    ks = np.asarray(kernels)
    if ks.ndim != 1 or ks.size == 0 or ks.dtype.kind not in "iu":
        raise ValueError("kernels must be a non-empty 1-D array of kernel indices")
    if ks.min() < 0 or ks.max() >= m:
        raise ValueError(f"kernels must hold indices in [0, {m})")
    return np.ascontiguousarray(ks, dtype=np.int64)


def check_call_weights(w, kernels, m):
    """An oracle call's ``w`` (checked, and copied: the answer owns it) and kernel subset.

    ``kernels`` (or None) must hold every kernel with ``w_k > 0``; returns
    ``(w, ks)`` with ``ks`` an int64 array or None.
    """
    w = check_weights(w, m, name="w", copy=True)
    if kernels is None:
        return w, None
    ks = _kernel_subset(kernels, m)
    outside = np.ones(m, dtype=bool)
    outside[ks] = False
    if np.any(w[outside] > 0.0):
        raise ValueError(
            "kernels must include every kernel with a positive weight; "
            f"w > 0 on kernel {int(np.flatnonzero(outside & (w > 0))[0])}"
        )
    return w, ks


# Relative slack under which a warm start outside the feasible set counts as
# rounding error and is repaired rather than refused.
WARM_RTOL = 1e-8


def repair_feasible(a, problem, name="warm_start"):
    """Move ``a`` onto the feasible set when it is off by rounding only (in place).

    The box is enforced by clipping (at most ``1e-8 max(upper)`` away). A
    residual ``r = s'a - total`` (at most ``1e-8 max(upper) n``) is then
    removed by moving the free variables (``0 < a_t < upper_t``) in
    proportion to their room in the needed direction, so variables at a
    bound stay exactly there and an optimal start stays optimal; only when
    the free variables lack the room do bound variables move.

    Raises
    ------
    ValueError
        When ``a`` is further from the feasible set: it belongs to another
        problem (other labels, other bounds), and a silent cold start would
        hide that.
    """
    info = np.empty(2)
    code = repair_box_equality(a, problem.upper, problem.signs, float(problem.total), WARM_RTOL,
                               info)
    if code == OUTSIDE_BOX:
        raise ValueError(
            f"{name} must lie in the box 0 <= a <= upper (upper up to "
            f"{float(problem.upper.max()):g}); got values in [{info[0]:.6g}, {info[1]:.6g}]. "
            "Pass the alpha of an oracle of the same problem (same labels and C), or None for "
            "a cold start"
        )
    if code == OFF_EQUALITY:
        raise ValueError(
            f"{name} must satisfy the equality constraint (e.g. y'alpha = 0); it is off by "
            f"{info[0]:.6g}. Pass the alpha of an oracle of the same problem, or None for a "
            "cold start"
        )
    if code == NO_ROOM:
        raise ValueError(
            f"{name} cannot be made feasible (no room to remove a residual of {info[0]:.3g})"
        )
    return a


class DualOracle:
    """Base of the dual oracles: ``w -> OracleAnswer`` for a fixed :class:`DualProblem`.

    Subclasses set ``self.problem`` and call :meth:`_setup`, and may override
    :meth:`_start` (the cold start), :meth:`_from_warm` and :meth:`_to_alpha`
    (their own dual variables against the problem's).
    """

    #: ``need_q=False`` is supported (see :meth:`__call__`).
    supports_value_only = True
    #: ``kernels=...`` is supported: ``q`` for a subset of kernels only.
    supports_kernel_subsets = True
    #: The samples that have variables, when some have none (a per-sample
    #: box ``C_i = 0``, see :mod:`mklopt.oracles._box`); None: all of them.
    #: Answers' ``alpha`` and warm starts still have one entry per sample.
    kept = None

    def _setup(self, bank, tol, max_iter):
        self.bank = bank
        self.n_kernels = int(bank.n_kernels)
        self.n_samples = int(bank.n_samples)
        self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
        N = self.problem.n_variables
        if max_iter is None:
            max_iter = max(10_000_000, 100 * N)
        self.max_iter = check_int(max_iter, "max_iter", low=1)
        self.n_calls = 0
        self.n_unconverged = 0
        self.last_stats = None
        self._solver = DualSolver(bank, self.problem)

    def adopt_rows(self, other):
        """Take over the kernel rows ``other`` computed, when they are this oracle's.

        ``other`` an oracle of the same problem on the same bank view at
        another ``C`` (a C path's previous point): the combined rows of its
        last call's weights do not depend on ``C``, so a first call at those
        weights reuses them (:meth:`~mklopt.oracles._solver.DualSolver.adopt`).
        The answers are those of a fresh oracle, bit for bit. Returns whether
        the rows were taken.
        """
        solver = getattr(other, "_solver", None)
        return solver is not None and self._solver.adopt(solver)

    # ---- hooks ---------------------------------------------------------------
    def _start(self):
        """A feasible cold start (default: zero, feasible when ``total == 0``)."""
        return np.zeros(self.problem.n_variables)

    def _from_warm(self, warm_start):
        """The problem's variables from a warm start given as :meth:`_to_alpha` returns it."""
        # Our own copy (the solver overwrites it), made while checking.
        size = self.problem.n_variables if self.kept is None else self.n_samples
        a = check_vector(warm_start, "warm_start", size=size, copy=True)
        return repair_feasible(self._drop(a, "warm_start"), self.problem)

    def _to_alpha(self, a):
        """The answer's ``alpha`` from the problem's variables (default: ``a`` itself)."""
        return self._spread(a)

    def _drop(self, alpha, name):
        """``alpha`` (one entry per sample) on the samples with variables (:attr:`kept`).

        The other entries must be zero up to rounding: a vector with mass on
        a sample of bound 0 belongs to another problem.
        """
        if self.kept is None:
            return alpha
        out = np.ones(alpha.shape[0], dtype=bool)
        out[self.kept] = False
        big = float(np.max(np.abs(alpha[out]), initial=0.0))
        if big > WARM_RTOL * float(self.problem.upper.max()):
            raise ValueError(
                f"{name} must be 0 on the samples whose bound C_i is 0 (they have no dual "
                f"variable); got {big:.6g}. Pass the alpha of an oracle of the same problem, "
                "or None for a cold start"
            )
        return np.ascontiguousarray(alpha[self.kept])

    def _spread(self, a):
        """The inverse of :meth:`_drop`: zeros on the samples without variables."""
        if self.kept is None:
            return a
        out = np.zeros(self.n_samples)
        out[self.kept] = a
        return out

    def to_variables(self, alpha):
        """The problem's variables (``problem.n_variables``) for an answer's ``alpha``.

        The identity for SVMDual and OneClassDual (the entries of the
        samples with variables, when some bounds are 0: :attr:`kept`);
        SVRDual splits ``beta = alpha - alpha*`` into ``(max(beta, 0),
        max(-beta, 0))``.
        A copy, checked and repaired as a warm start is.
        """
        return self._from_warm(alpha)

    def dual_violation(self, alpha):
        """How far an answer's ``alpha`` is from the dual's constraints (0 inside them).

        The largest violation of ``0 <= a <= upper`` and of ``s'a = total``
        by the problem's variables ``a`` of ``alpha`` (taken as they are,
        not repaired as a warm start is). :func:`mklopt.testing.check_oracle`
        reads it to check that every answer is dual feasible.
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        P = self.problem
        off = 0.0
        if self.kept is not None and alpha.shape == (self.n_samples,):
            # the samples of bound 0 have no variable: their alpha must be 0
            mask = np.ones(self.n_samples, dtype=bool)
            mask[self.kept] = False
            off = float(np.max(np.abs(alpha[mask]), initial=0.0))
            alpha = alpha[self.kept]
        if alpha.shape == (P.n_variables,):
            a = alpha
        else:  # an alpha of n entries for 2n variables (SVR: beta = a - a*)
            a = np.concatenate([np.maximum(alpha, 0.0), np.maximum(-alpha, 0.0)])
        if a.shape != (P.n_variables,):
            return math.inf
        box = max(off, float(np.max(-a, initial=0.0)), float(np.max(a - P.upper, initial=0.0)))
        return max(box, abs(float(P.signs @ a) - P.total))

    def reference_value(self, w):
        """``J(w)`` by an independent conic solve of the same dual (cvxpy, a test extra).

        ``-min_a a'Qa / 2 + p'a`` over ``0 <= a <= upper``, ``s'a = total``,
        with ``Q = (s s') * K(w)[rows][:, rows]`` formed densely: for small
        problems only, as :func:`mklopt.testing.check_oracle`'s reference.
        """
        from .._conic import _cvxpy, _solve_tight

        cp = _cvxpy()
        w = check_weights(w, self.n_kernels)
        P = self.problem
        K = np.asarray(self.bank.combine(w), dtype=np.float64)[np.ix_(P.rows, P.rows)]
        Q = np.outer(P.signs, P.signs) * K
        a = cp.Variable(P.n_variables)
        cons = [a >= 0, a <= P.upper, P.signs @ a == P.total]
        obj = 0.5 * cp.quad_form(a, cp.psd_wrap(0.5 * (Q + Q.T))) + P.linear @ a
        return -_solve_tight(cp.Problem(cp.Minimize(obj), cons))

    def to_alpha(self, a):
        """An answer's ``alpha`` (what warm starts take) from the problem's variables ``a``."""
        a = check_vector(a, "a", size=self.problem.n_variables)
        return np.array(self._to_alpha(a), dtype=np.float64)

    # ---- the call ------------------------------------------------------------
    def __call__(self, w, warm_start=None, need_q=True, kernels=None):
        """Solve the dual at kernel weights ``w``.

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
            Non-negative finite kernel weights, not all zero.
        warm_start : array-like, optional
            A feasible ``alpha`` (as answers return it) to start from.
        need_q : bool, default=True
            When False, only ``J(w)`` is wanted (a line search): ``q`` and
            ``grad`` are None and the value is read off the solver's
            gradient, ``J = -a'(G + p) / 2``, with no pass over the kernels.
        kernels : array-like of int, optional
            Compute ``q`` (and ``grad``) only for these kernels, in this
            order; every kernel with ``w_k > 0`` must be among them. For a
            method working on a subset of a large bank (a kernel working
            set): ``J(w)`` is exact, but the answer has no duality gap over
            the whole bank.

        Returns
        -------
        OracleAnswer
        """
        # The edge of the per-call path: w is checked here, once, and copied
        # once (the answer owns it). From here on it travels the trusted
        # path, the bank's storage verbs through the solver, which check
        # nothing (the bank's public verbs would check w again).
        w, ks = check_call_weights(w, kernels, self.n_kernels)
        P = self.problem
        a = self._start() if warm_start is None else self._from_warm(warm_start)
        self.n_calls += 1
        tol = float(self.tol)
        grad, stats = self._solver.solve(w, a, tol, self.max_iter)
        self.last_stats = stats
        # O(N) on the gradient the solver returns: every answer says whether
        # it met tol, whichever way the solve ended (budget, stall).
        viol = float(smo_violation(P.signs, P.upper, a, grad))
        stats.violation = viol
        stats.converged = viol <= tol
        if not stats.converged:
            self.n_unconverged += 1
            warnings.warn(
                f"SMO stopped after {stats.n_iter} iterations (max_iter={self.max_iter}) with KKT "
                f"violation {viol:.3g} > tol={tol:g} at kernel weights up to "
                f"{float(np.max(w)):.3g}; the answer is feasible but not optimal, so its value "
                "is a lower bound of J(w). Large weights make the dual ill-conditioned and SMO "
                "slow; raise max_iter or loosen tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        bias = -float(smo_rho(P.signs, P.upper, a, grad))
        v = P.v(a)
        support = np.flatnonzero(v).astype(np.int64)
        linear_term = -float(P.linear @ a)
        alpha = self._to_alpha(a)
        if not need_q:
            # a'Qa = v'K(w)v = w'q and G = Qa + p is exact on exit:
            # J = -p'a - a'Qa / 2 = -a'(G + p) / 2.
            value = -0.5 * float(a @ (grad + P.linear))
            return OracleAnswer(
                w=w, value=value, grad=None, q=None, alpha=alpha, bias=bias,
                support=support, n_solver_iter=stats.n_iter, linear_term=linear_term,
                converged=stats.converged,
            )
        q = np.asarray(self.bank.storage.quad_forms(v, support, ks), dtype=np.float64)
        value = linear_term - 0.5 * float((w if ks is None else w[ks]) @ q)
        return OracleAnswer(
            w=w,
            value=value,
            grad=-0.5 * q,
            q=q,
            alpha=alpha,
            bias=bias,
            support=support,
            n_solver_iter=stats.n_iter,
            linear_term=linear_term,
            converged=stats.converged,
        )
