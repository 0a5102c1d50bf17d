"""An exact active-set step for L1-MKL and the mixed-norm formulation (see docs/composing.md).

References
----------
J. S. Nath et al., NIPS 2009, eqs. 4-6 (the mixed-norm dual and its
analytic ``gamma``); Z. Xu et al., NIPS 2008, section 2 (L1-MKL as a
saddle-point problem), both in ``papers/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .._policy import relative_gap
from ..domains import GroupSimplex, Simplex, as_groups
from ..oracles._base import repair_feasible
from ._base import MethodBase, register
from ._restricted import fixed_offset, kernel_factor, solve_restricted

__all__ = ["ActiveSet"]

#: Kernels whose q_k is within this fraction of the (group's) largest join the
#: first active set; near-ties are the kernels most likely to carry weight.
_NEAR_TOP = 1e-2
#: A kernel outside the active set violates the certificate when its q_k
#: exceeds the largest active one by more than rounding.
_VIOLATION_RTOL = 1e-9
#: Relative gap under which a run that finds nothing to add back counts as converged.
_CERTIFIED_RTOL = 1e-6
#: Restricted solutions within this fraction of the bound are put on it, so
#: that SMO sees exact zeros (and the support stays small).
_SNAP = 1e-9
#: A variable held at its upper bound is freed when its KKT residual at the
#: restricted solution exceeds this fraction of the gradient's scale.
_KKT_RTOL = 1e-7
#: Restricted variables strictly inside by this fraction of their box
#: estimate the equality's multiplier.
_INNER = 1e-6


@dataclass
class _State:
    problem: object  # the oracle's DualProblem
    bank: object  # the oracle's kernels (read through bank.blocks)
    kernels: np.ndarray  # active kernels A (sorted)
    variables: np.ndarray  # restricted dual variables S (sorted; the rest are held at 0)
    fixed: np.ndarray  # those of S held at their upper bound (sorted)
    w: np.ndarray  # next query
    warm: np.ndarray | None = None  # the restricted solution, warm start of the next call
    need: str = "full"
    rounds: int = 0  # restricted solves so far
    blocks: dict | None = None  # kernel -> kernel block on the rows R that S reads
    rows: np.ndarray | None = None  # R
    factors: dict | None = None  # kernel -> factor on the rows the free variables read
    free_rows: np.ndarray | None = None  # positions in R the factors are on
    lower: float = -np.inf  # best D(a) of a restricted solution (a dual certificate)
    oracle: object = None  # maps answers' alpha to the problem's variables and back


@register("active_set", "exact")
class ActiveSet(MethodBase):
    r"""Exact active-set step: solve the restricted problem exactly, certify it globally.

    Parameters
    ----------
    groups : list of lists of int, optional
        A partition of the kernels for the mixed (l-inf, l1) formulation of
        Nath et al.; ``None`` (default) solves L1-MKL on the simplex.

    Notes
    -----
    Near the optimum only a few kernels carry weight and only the support
    vectors have ``alpha > 0``. One round of the step:

    1. **restrict**: the active kernels ``A`` (those with weight, and those
       whose ``q_k`` is within 1 % of the largest, per group) and the dual
       variables ``S`` (the support of the current ``alpha``); those of
       ``S`` at their upper bound ``C`` are held there;
    2. **solve exactly** the MKL dual restricted to ``A`` and ``S``, a
       second-order cone program over the free variables of ``S`` (the held
       ones are a constant offset), with ECOS
       (:mod:`mklopt.methods._restricted`); its cone multipliers are the
       kernel weights ``w*``. A KKT check of the held variables against the
       gradient at the solution frees those that want to leave the bound,
       and the program is solved again;
    3. **certify** with one oracle call over all kernels at ``w*``,
       warm-started from the restricted solution and marked ``"exact"``
       (the driver gives it the tolerance of the target gap). Its duality
       gap ``J(w*) - D(alpha)`` is the certificate: when ``A`` and ``S``
       were right, SMO barely moves and ``q_k(alpha) <= max_{A} q`` for
       every kernel, so the gap is at the solvers' precision;
    4. **add back** every kernel whose ``q_k`` exceeds the largest active
       one (in its group) and every variable SMO moved off zero, free every
       held variable SMO moved off its bound, and repeat.

    ``A`` and ``S`` only grow and held variables are only freed, so the
    rounds end; when a certificate shows
    nothing to add, the method stops (reason ``"certified"``): the
    restricted optimum then meets the optimality conditions of the full
    problem to solver precision. Started on its own, the step evaluates the
    uniform point first; in a :class:`~mklopt.methods.Chain` it starts
    from the best point handed over (a bundle method at a gap of 1e-3 has
    found the active kernels, and the restricted problem is small).

    Only the oracle's :class:`~mklopt.oracles.DualProblem` (``oracle.problem``)
    and single-kernel blocks (``oracle.bank.blocks``) are read, so the step
    serves every dual oracle: classification and one-class, whose answers'
    ``alpha`` are the problem's variables, and regression, whose answers
    carry ``beta = alpha - alpha*`` (the oracle's ``to_variables`` and
    ``to_alpha`` map between the two).

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt import solve
    >>> from mklopt.oracles import SVMDual
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3)); y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    >>> d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    >>> K = np.stack([np.exp(-d2 / s) for s in (0.5, 2.0, 8.0)] + [X @ X.T])
    >>> K /= np.trace(K, axis1=1, axis2=2)[:, None, None]
    >>> res = solve(SVMDual(K, y, C=10.0), ActiveSet(), stop=DualityGap(1e-8) | MaxIter(20))
    >>> bool(res.converged and res.rel_gap <= 1e-8)
    True
    """

    #: the estimators' parameters it takes (estimator name: constructor keyword)
    estimator_params = {"groups": "groups"}

    needs_problem = True

    def __init__(self, groups=None):
        self.groups = groups

    def check_params(self, n_kernels=None):
        if self.groups is not None and n_kernels is not None:
            as_groups(self.groups, n_kernels)  # raises, naming groups, if not a partition

    # ---- hooks ---------------------------------------------------------------
    def _start(self, oracle):
        problem = getattr(oracle, "problem", None)
        bank = getattr(oracle, "bank", None)
        if problem is None or not callable(getattr(bank, "blocks", None)):
            raise TypeError(
                "ActiveSet needs an oracle that describes its dual (oracle.problem, a "
                "DualProblem) and its kernels (oracle.bank with blocks()), such as SVMDual; "
                f"got {type(oracle).__name__}"
            )
        m = oracle.n_kernels
        domain = Simplex(m) if self.groups is None else GroupSimplex(self.groups, m)
        empty = np.zeros(0, np.int64)
        mapping = oracle if callable(getattr(oracle, "to_variables", None)) else None
        s = _State(problem=problem, bank=bank, kernels=empty, variables=empty, fixed=empty,
                   w=domain.initial(), oracle=mapping)
        return domain, s

    def _resume(self, oracle, handover):
        domain, s = self._start(oracle)
        self._restrict(s, domain, np.asarray(handover.weights, dtype=np.float64),
                       handover.answer, first=True)
        return domain, s

    def _ask(self, s):
        return s.w

    def _need(self, s):
        return s.need

    def _warm_start(self, s):
        if s.warm is None or s.oracle is None:
            return s.warm
        # Warm starts are given as answers give alpha (SVRDual: beta).
        return s.oracle.to_alpha(s.warm)

    def _tell(self, s, query, answer):
        if s.rounds == 0:  # a cold start's first answer
            self._restrict(s, self.domain, None, answer, first=True)
        elif self._grow(s, self.domain, answer):
            self._restrict(s, self.domain, None, answer, first=False)
        else:
            # Nothing violates the certificate: the restricted optimum is the
            # full one, to the precision of ECOS and SMO.
            # (the report is rebuilt after this hook: take this answer in here)
            rep = self.report()
            upper = min(rep.upper, float(answer.value))
            lower = max(rep.lower, s.lower, self.domain.dual_value(answer))
            rel = relative_gap(upper - lower, upper)
            self._finish("certified", converged=bool(rel <= _CERTIFIED_RTOL))

    def _lower(self, s):
        return s.lower

    def _extra(self, s):
        return {"kernels": s.kernels.copy(), "n_variables": int(s.variables.size),
                "n_fixed": int(s.fixed.size), "rounds": s.rounds}

    # ---- the rounds ------------------------------------------------------------
    def _alpha(self, s, answer):
        a = np.asarray(answer.alpha, dtype=np.float64)
        if a.shape != (s.problem.n_variables,) and s.oracle is not None:
            # answers carry other variables than the problem's (SVRDual: beta)
            a = s.oracle.to_variables(a)
        if a.shape != (s.problem.n_variables,):
            raise TypeError(
                "ActiveSet reads the answer's alpha as the oracle problem's variables, but "
                f"alpha has shape {a.shape} and the problem {s.problem.n_variables} variables"
            )
        return a

    def _restrict(self, s, domain, w, answer, first):
        """Choose (or keep) ``A`` and ``S`` from an answer, then solve the restricted problem.

        ``w`` (the handed-over weights) adds its kernels to the first ``A``;
        a cold start's uniform point would add them all, so it passes None.
        """
        a = self._alpha(s, answer)
        if first:
            q = np.asarray(answer.q, dtype=np.float64)
            near = q >= (1.0 - _NEAR_TOP) * _group_top(domain, q)
            if w is not None:
                near |= w > 0.0
            s.kernels = np.flatnonzero(near).astype(np.int64)
            s.variables = np.flatnonzero(a > 0.0).astype(np.int64)
            s.fixed = _at_upper(s.problem, a, s.variables)
        self._solve(s, domain)

    def _grow(self, s, domain, answer):
        """Add the kernels and variables that violate the certificate; False if none.

        A variable SMO moved off zero joins ``S`` (held at its bound if SMO
        put it there); a variable held at its bound that SMO moved off it
        becomes free.
        """
        q = np.asarray(answer.q, dtype=np.float64)
        a = self._alpha(s, answer)
        active = np.zeros(q.size, dtype=bool)
        active[s.kernels] = True
        top = _group_top(domain, np.where(active, q, -np.inf))
        viol = ~active & (q > top + _VIOLATION_RTOL * np.abs(top))
        new_vars = np.setdiff1d(np.flatnonzero(a > 0.0), s.variables)
        freed = s.fixed[a[s.fixed] < s.problem.upper[s.fixed]]
        if not viol.any() and new_vars.size == 0 and freed.size == 0:
            return False
        s.kernels = np.union1d(s.kernels, np.flatnonzero(viol)).astype(np.int64)
        s.variables = np.union1d(s.variables, new_vars).astype(np.int64)
        s.fixed = np.union1d(np.setdiff1d(s.fixed, freed),
                             _at_upper(s.problem, a, new_vars)).astype(np.int64)
        return True

    def _solve(self, s, domain):
        """Solve the restricted problem; free the held variables its KKT check rejects."""
        P = s.problem
        if s.variables.size == 0:
            # alpha = 0 everywhere: nothing to restrict to; take the first point as it is.
            s.need, s.warm = "exact", None
            return
        rows, local = np.unique(P.rows[s.variables], return_inverse=True)
        rows, local = rows.astype(np.int64), local.ravel().astype(np.int64)
        if s.rows is None or not np.array_equal(rows, s.rows):
            s.rows, s.blocks, s.factors, s.free_rows = rows, {}, {}, None
        missing = [int(k) for k in s.kernels if int(k) not in s.blocks]
        if missing:
            blocks = s.bank.blocks(np.array(missing, dtype=np.int64), rows)
            for k, Kb in zip(missing, blocks):
                s.blocks[k] = np.asarray(Kb, dtype=np.float64)
        group_of = None if isinstance(domain, Simplex) else domain.group_of[s.kernels]
        while True:
            held = np.isin(s.variables, s.fixed)
            if held.any() and not _room(P, s.variables[~held], s.variables[held]):
                s.fixed, held = s.fixed[:0], np.zeros_like(held)
            sol = self._solve_once(s, local, held, group_of)
            s.rounds += 1
            if sol is None:
                self._finish("restricted_solve_failed", converged=False)
                return
            a_S, w_A = sol
            freed = self._kkt_freed(s, local, held, a_S, w_A)
            if freed.size == 0:
                break
            s.fixed = np.setdiff1d(s.fixed, freed)
        w = np.zeros(domain.n_kernels)
        w[s.kernels] = w_A
        if isinstance(domain, Simplex):
            w /= w.sum()
        s.w = w
        s.warm = _feasible(P, s.variables, a_S)
        s.need = "exact"
        # The restricted solution is a feasible dual point of the full problem:
        # D(a) over all kernels is a certificate of its own. Its active q_k tie
        # exactly, whereas SMO's answer at w* (warm-started from it) breaks the
        # ties by its tolerance, so D(a) is usually the sharper lower bound.
        v = P.v(s.warm)
        q = np.asarray(s.bank.quad_forms(v), dtype=np.float64)
        point = SimpleNamespace(q=q, linear_term=P.linear_term(s.warm))
        s.lower = max(s.lower, float(domain.dual_value(point)))

    def _solve_once(self, s, local, held, group_of):
        """One cone program over the free variables, the held ones as a constant offset.

        Returns ``(a_S, w_A)`` with ``a_S`` over all of ``S`` (held variables
        at their bound), or None when ECOS fails.
        """
        P = s.problem
        free, fixed = s.variables[~held], s.variables[held]
        if fixed.size:
            free_rows, free_local = np.unique(local[~held], return_inverse=True)
            free_local = free_local.ravel()
        else:
            free_rows, free_local = np.arange(s.rows.size), local
        if s.free_rows is None or not np.array_equal(free_rows, s.free_rows):
            s.free_rows, s.factors = free_rows, {}
        factors, offsets = [], ([] if fixed.size else None)
        if fixed.size:
            v_fixed = np.bincount(local[held], weights=P.signs[fixed] * P.upper[fixed],
                                  minlength=s.rows.size)
        for k in (int(k) for k in s.kernels):
            if fixed.size:
                L, c = fixed_offset(s.blocks[k], free_rows, v_fixed)
                offsets.append(c)
            else:
                if k not in s.factors:
                    s.factors[k] = kernel_factor(s.blocks[k])
                L = s.factors[k]
            factors.append(L)
        sol = solve_restricted(P, free, factors, free_local.astype(np.int64), group_of,
                               fixed=fixed, offsets=offsets)
        if sol is None:
            return None
        a_S = np.empty(s.variables.size)
        a_S[~held] = sol[0]
        a_S[held] = P.upper[fixed]
        return a_S, sol[1]

    def _kkt_freed(self, s, local, held, a_S, w_A):
        """Held variables whose KKT condition fails at the restricted solution.

        The restricted solution minimises ``1/2 a'Q(w*)a + p'a`` over ``S``
        (``Q(w*)`` with the effective weights of the solve) when, with the
        equality's multiplier ``b``, the gradient ``g`` has ``g_t + b s_t =
        0`` on free variables and ``<= 0`` on those at their upper bound. ``b``
        is the median of ``-g_t s_t`` over the variables strictly inside their
        box (else the middle of the interval that the bound ones allow).
        """
        if not held.any():
            return s.fixed[:0]
        P = s.problem
        S = s.variables
        v = np.bincount(local, weights=P.signs[S] * a_S, minlength=s.rows.size)
        Kv = np.zeros(s.rows.size)
        for k, wk in zip(s.kernels, w_A):
            if wk > 0.0:
                Kv += wk * (s.blocks[int(k)] @ v)
        sign = P.signs[S]
        g = P.linear[S] + sign * Kv[local]
        U = P.upper[S]
        inner = ~held & (a_S > _INNER * U) & (a_S < (1.0 - _INNER) * U)
        if inner.any():
            b = float(np.median(-g[inner] * sign[inner]))
        else:
            b = _multiplier_between(g[~held], sign[~held], a_S[~held] >= 0.5 * U[~held])
        scale = max(float(np.max(np.abs(P.linear[S]))), float(np.max(np.abs(Kv))), 1e-300)
        bad = held & (g + b * sign > _KKT_RTOL * scale)
        return S[bad]


def _group_top(domain, v):
    """The largest ``v`` in each kernel's group (all kernels for L1), per kernel."""
    if isinstance(domain, GroupSimplex):
        return domain.group_max(v)[domain.group_of]
    return np.full(v.shape, np.max(v))


def _at_upper(problem, a, variables):
    """The variables among ``variables`` that ``a`` puts at their upper bound (to snapping)."""
    U = problem.upper[variables]
    return variables[a[variables] >= (1.0 - _SNAP) * U].astype(np.int64)


def _room(problem, free, fixed):
    """True when the free variables can meet the equality with the fixed ones at their bound.

    ``s_F'a_F = total - s_B'u_B`` must hold strictly inside the free box,
    or the cone program has no interior (or no point); the step then holds
    nothing fixed.
    """
    if free.size == 0:
        return False
    s, U = problem.signs[free], problem.upper[free]
    target = problem.total - float(problem.signs[fixed] @ problem.upper[fixed])
    lo, hi = float(np.sum(U[s < 0]) * -1.0), float(np.sum(U[s > 0]))
    margin = 1e-9 * (hi - lo)
    return lo + margin < target < hi - margin


def _multiplier_between(g, sign, at_upper):
    """A multiplier ``b`` with ``g + b s >= 0`` at zero and ``<= 0`` at the bound (middle)."""
    # at zero: s b >= -g;  at the bound: s b <= -g
    lo, hi = -np.inf, np.inf
    for gt, st, up in zip(g, sign, at_upper):
        bound = -gt * st  # b >= bound (s = 1, at zero) etc.
        if (st > 0) != bool(up):
            lo = max(lo, bound)
        else:
            hi = min(hi, bound)
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if np.isfinite(lo) else (hi if np.isfinite(hi) else 0.0)


def _feasible(problem, S, a_S):
    """The restricted solution as a full feasible point: snapped to its bounds, repaired."""
    U = problem.upper[S]
    a_S = np.clip(a_S, 0.0, U)
    a_S[a_S <= _SNAP * U] = 0.0
    a_S[a_S >= (1.0 - _SNAP) * U] = U[a_S >= (1.0 - _SNAP) * U]
    a = np.zeros(problem.n_variables)
    a[S] = a_S
    return repair_feasible(a, problem, name="the restricted solution")
