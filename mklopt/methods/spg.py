"""Spectral projected gradient (SPG) for MKL on any domain with a projection.

References
----------
A. Jain, S. V. N. Vishwanathan and M. Varma, "SPG-GMKL: Generalized Multiple
Kernel Learning with a Million Kernels", KDD 2012, Algorithm 1.

E. G. Birgin, J. M. Martinez and M. Raydan, "Nonmonotone Spectral Projected
Gradient Methods on Convex Sets", SIAM J. Optim. 10(4), 2000 (SPG2: the
spectral step, the non-monotone line search and its safeguards).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_real
from ..domains import ElasticNet, LpBall, Simplex, check_norm
from ._base import MethodBase, register

__all__ = ["SPG"]

# Bounds of the spectral step (Birgin et al.'s lambda_min and lambda_max): wide
# enough never to bind on a well-scaled problem, they only keep the step finite.
_STEP_MIN = 1e-30
_STEP_MAX = 1e30
# Every domain here lies in [0, 1]^m, so a move lambda * ||g||_inf beyond this
# projects to the same point as a shorter one; longer moves would only cost
# the projection its accuracy (x - tau cancels in the simplex projection).
_MAX_MOVE = 1e6
# Safeguards of the quadratic-interpolation backtracking (Birgin et al.'s
# sigma_1, sigma_2): the new trial step stays within [0.1, 0.9] of the old.
_SIGMA1 = 0.1
_SIGMA2 = 0.9


@dataclass
class _State:
    steps: object  # the generator that runs the method, one query per yield
    query: np.ndarray | None = None
    iteration_done: bool = False
    step: float = math.nan  # current spectral step (for Result.extra)
    n_backtracks: int = 0  # trial points rejected by the line search, in total


def _unit_step_norm(domain, w, g):
    """``||P_W(w - g) - w||_inf``: zero exactly at a stationary point (SPG2's test)."""
    return float(np.max(np.abs(domain.project(w - g) - w)))


def _first_step(n1):
    """Birgin et al.'s first step ``1 / ||P_W(w - g) - w||_inf``, within the step bounds."""
    return _STEP_MAX if n1 == 0.0 else min(max(1.0 / n1, _STEP_MIN), _STEP_MAX)


@register("spg")
class SPG(MethodBase):
    r"""Spectral projected gradient with a non-monotone line search (SPG-GMKL).

    Parameters
    ----------
    norm : float, default=1.0
        The formulation: ``1`` is L1-MKL on the simplex
        (:class:`~mklopt.domains.Simplex`), ``1 < norm <= inf`` Lp-MKL on
        ``{theta >= 0, ||theta||_p <= 1}`` (:class:`~mklopt.domains.LpBall`).
    elastic_net : float, optional
        If given, elastic-net MKL with this mixing parameter in ``[0, 1]``
        (:class:`~mklopt.domains.ElasticNet`); ``norm`` must then be 1.
    memory : int, default=10
        Number ``M`` of past values the non-monotone line search compares
        with (Birgin et al.'s ``M``; 1 makes it the monotone Armijo rule).
    sufficient_decrease : float, default=1e-4
        Armijo constant ``gamma`` in ``(0, 1)``.
    max_backtracks : int, default=30
        Trial points one line search may reject before the run stops with
        reason ``"line_search_stalled"``.

    Notes
    -----
    Minimises ``J(w)`` over the domain ``W`` with the gradient
    ``g = -q(alpha*(w)) / 2`` of the oracle's answers. One iteration at the
    current point ``w`` (Jain et al., Algorithm 1; Birgin et al., SPG2):

    1. **Direction.** ``d = P_W(w - lambda g) - w`` with the Euclidean
       projection ``P_W`` of the domain and the spectral step ``lambda``.
       ``g'd <= -||d||^2 / lambda < 0`` unless ``d = 0``, where ``w`` is
       stationary.
    2. **Non-monotone line search.** Trial points ``w + t d`` (feasible: a
       convex combination of two points of ``W``) from ``t = 1``, accepted
       when

       .. math:: J(w + t d) \le \max_{0 \le j < M} J(w_{k-j}) + \gamma\, t\, g'd,

       the largest of the last ``M`` accepted values in place of the current
       one, so that a long spectral step may raise ``J`` for a while (the
       property that makes SPG robust to the noise of an inexact SVM). A
       rejected ``t`` is replaced by the minimiser of the quadratic through
       ``J(w)``, ``g'd`` and ``J(w + t d)``, kept in ``[0.1 t, 0.9 t]``.
    3. **Spectral (Barzilai-Borwein) step** for the next iteration, from
       ``s = w_new - w`` and ``y = g_new - g``:
       ``lambda = s's / s'y`` clipped to ``[1e-30, 1e30]``, and the upper
       bound when ``s'y <= 0``. The first step is
       ``1 / ||P_W(w_0 - g_0) - w_0||_inf`` (Birgin et al.). Every domain
       lies in the unit box, so ``lambda ||g||_inf`` is also kept below
       ``1e6``: a longer move projects to the same point, and would only cost
       the projection its accuracy.

    Every trial point is a full oracle call (its gradient is needed if it is
    accepted); each is offered as a candidate best point, so the reported
    point is the lowest ``J`` seen and its gap ``(h(q) - w'q) / 2`` is that
    of the domain. An iteration with its whole line search is one outer
    iteration for :class:`~mklopt.stopping.MaxIter`. The run stops itself
    with reason ``"stationary"`` (converged) when the projected gradient of
    a unit step, ``P_W(w - g) - w``, vanishes (SPG2's test; ``d`` itself
    also vanishes when the spectral step collapses at a kink of ``J``, and
    the step then restarts as at the first iteration), and with
    ``"line_search_stalled"`` when ``max_backtracks`` trial points fail in a
    row: near the optimum the decrease asked for drops below the noise that
    the inner solver's tolerance leaves in ``J``; tighten the oracle's
    ``tol`` to go further. Jain et al. also tighten the SVM's precision as
    the run proceeds; here the oracle keeps the tolerance it was given.

    ``J`` is differentiable where the SVM's solution is unique, which is
    the usual case; at a kink ``-q/2`` is a subgradient only, and the
    spectral step may then stall where a bundle method
    (:class:`~mklopt.methods.LevelBundle`) does not.

    References
    ----------
    Jain, Vishwanathan and Varma, KDD 2012, Algorithm 1; Birgin, Martinez
    and Raydan, SIAM J. Optim. 2000, Algorithm SPG2.

    Examples
    --------
    >>> from mklopt.testing import SmoothQuadraticOracle
    >>> from mklopt import solve
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> oracle = SmoothQuadraticOracle.random(n_kernels=5, seed=1)
    >>> res = solve(oracle, SPG(), stop=DualityGap(1e-8) | MaxIter(500))
    >>> bool(res.converged and abs(res.weights.sum() - 1) < 1e-12)
    True
    >>> res = solve(oracle, SPG(norm=2.0), stop=DualityGap(1e-8) | MaxIter(500))
    >>> bool(res.converged and abs(np.linalg.norm(res.weights) - 1) < 1e-9)
    True
    """

    #: the estimators' parameters it takes (estimator name: constructor keyword)
    estimator_params = {"elastic_net": "elastic_net"}
    #: What the conformance kit holds it to (:func:`mklopt.testing.check_method`):
    #: no rate on a non-smooth J (on the kit's piecewise-linear toy with 30
    #: kernels the best value kept a third of its first excess after 200 calls).
    conformance = {"piecewise": None,
                   "reason": "spectral steps assume a smooth J; at kinks the non-monotone line "
                             "search stalls, so no rate is promised there"}

    def __init__(self, norm=1.0, elastic_net=None, memory=10, sufficient_decrease=1e-4,
                 max_backtracks=30):
        self.norm = norm
        self.elastic_net = elastic_net
        self.memory = memory
        self.sufficient_decrease = sufficient_decrease
        self.max_backtracks = max_backtracks

    # ---- hooks ---------------------------------------------------------------
    def check_params(self, n_kernels=None):
        # norm = 1 selects the simplex; any other value must be an Lp norm, 1 < p <= inf
        if not (isinstance(self.norm, (int, float, np.number)) and not isinstance(self.norm, bool)
                and self.norm == 1):
            check_norm(self.norm, "norm")
        if self.elastic_net is not None:
            check_real(self.elastic_net, "elastic_net", low=0.0, high=1.0)
            if self.norm != 1:
                raise ValueError(
                    "elastic_net is a formulation of its own; leave norm at 1 "
                    f"(got norm={self.norm!r})"
                )
        check_int(self.memory, "memory", low=1)
        check_real(self.sufficient_decrease, "sufficient_decrease", low=0.0, high=1.0,
                   strict_low=True, strict_high=True)
        check_int(self.max_backtracks, "max_backtracks", low=1)

    def _domain(self, m):
        if self.elastic_net is not None:
            return ElasticNet(m, self.elastic_net)
        if self.norm == 1:
            return Simplex(m)
        return LpBall(m, self.norm)

    def _start(self, oracle, w0=None, answer=None):
        domain = self._domain(oracle.n_kernels)
        s = _State(steps=None)
        s.steps = self._descend(s, domain, domain.initial() if w0 is None else w0, answer)
        s.query = next(s.steps)
        return domain, s

    def _resume(self, oracle, handover):
        # Descend from the handed-over point; its answer gives the first
        # gradient unless the point must be projected onto this domain first.
        domain = self._domain(oracle.n_kernels)
        w = np.asarray(handover.weights, dtype=np.float64)
        w0 = domain.project(w)
        same = float(np.max(np.abs(w0 - w))) <= 1e-12
        return self._start(oracle, w0, handover.answer if same else None)

    def _ask(self, s):
        return s.query

    def _tell(self, s, query, answer):
        s.iteration_done = False
        s.query = s.steps.send(answer)
        return s.iteration_done

    def _extra(self, s):
        return {"step": s.step, "n_backtracks": s.n_backtracks}

    # ---- the method, as a generator (yield a query, receive its answer) --------
    def _descend(self, s, domain, w, ans):
        gamma = float(self.sufficient_decrease)
        w = np.array(w, dtype=np.float64)
        if ans is None:
            ans = yield w
        g = -0.5 * np.asarray(ans.q, dtype=np.float64)
        J = float(ans.value)
        recent = deque([J], maxlen=int(self.memory))
        n1 = _unit_step_norm(domain, w, g)
        step = _first_step(n1)
        while True:
            gmax = float(np.max(np.abs(g)))
            if gmax > 0.0:
                step = min(step, _MAX_MOVE / gmax)
            s.step = step
            d = domain.project(w - step * g) - w
            dmax = float(np.max(np.abs(d)))
            tiny = 1e-15 * max(1.0, float(np.max(np.abs(w))))
            if dmax <= tiny:
                # A step this short may not move w in floating point (the
                # spectral step collapses at a kink of J); stationarity is
                # judged on the unit step, P(w - g) = w (SPG2's test).
                n1 = _unit_step_norm(domain, w, g)
                if n1 <= tiny:
                    # w is a stationary point, the optimum.
                    self._finish("stationary", converged=True)
                    s.iteration_done = True
                    yield w
                    return
                # Restart the spectral step as at the first iteration.
                step = min(_first_step(n1), _MAX_MOVE / gmax)
                s.step = step
                d = domain.project(w - step * g) - w
                dmax = float(np.max(np.abs(d)))
            gd = float(g @ d)
            if dmax <= tiny:
                self._finish("line_search_stalled", converged=False)
                s.iteration_done = True
                yield w
                return
            if not gd < 0.0:
                # Only a projection off by rounding gives an ascent direction.
                self._finish("line_search_stalled", converged=False)
                s.iteration_done = True
                yield w
                return
            J_ref = max(recent)
            t = 1.0
            for _ in range(int(self.max_backtracks) + 1):
                w_t = w + t * d
                ans_t = yield w_t
                J_t = float(ans_t.value)
                if J_t <= J_ref + gamma * t * gd:
                    break
                s.n_backtracks += 1
                # Minimiser of the quadratic through J(w), slope g'd and J(w + t d),
                # kept inside [sigma_1 t, sigma_2 t].
                curv = J_t - J - t * gd
                t_new = -0.5 * t * t * gd / curv if curv > 0.0 else 0.5 * t
                t = min(max(t_new, _SIGMA1 * t), _SIGMA2 * t)
            else:
                # No step along a descent direction was accepted: the decrease
                # asked for is below the noise of J left by the inner solver.
                self._finish("line_search_stalled", converged=False)
                s.iteration_done = True
                yield w
                return
            g_t = -0.5 * np.asarray(ans_t.q, dtype=np.float64)
            sk = w_t - w
            yk = g_t - g
            sy = float(sk @ yk)
            step = _STEP_MAX if sy <= 0.0 else min(max(float(sk @ sk) / sy, _STEP_MIN), _STEP_MAX)
            w, g, J = w_t, g_t, J_t
            recent.append(J)
            s.iteration_done = True
