"""SimpleMKL's reduced-gradient descent and projected subgradient descent.

References
----------
A. Rakotomamonjy, F. Bach, S. Canu and Y. Grandvalet, "SimpleMKL", JMLR 9,
2008 (the "SD" method of Xu et al. 2008, section 2, eq. 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._jit.projections import project_simplex
from .._validation import check_choice, check_real
from ..domains import ElasticNet, LpBall, Simplex, check_norm
from ._base import MethodBase, register

__all__ = ["Subgradient"]

_GOLD = (math.sqrt(5.0) - 1.0) / 2.0  # 0.618...


@dataclass
class _State:
    steps: object  # the generator that runs the method, one query per yield
    query: np.ndarray | None = None
    need_q: bool = True  # False while the pending query is a line-search point
    iteration_done: bool = False


@register("subgradient", "simplemkl")
class Subgradient(MethodBase):
    r"""Gradient descent for MKL: SimpleMKL's reduced gradient or projected subgradient.

    Minimises ``J(w) = max_{alpha in Q} f(w, alpha)`` over the simplex (L1-MKL)
    using the subgradient ``grad J(w) = -q(alpha*(w)) / 2`` (SimpleMKL's
    gradient, Rakotomamonjy et al. 2008; see the formulations page). The
    projected variant also runs on the Lp ball and on the elastic-net set,
    through their Euclidean projections.

    Parameters
    ----------
    direction : {"reduced", "projected"}, default="reduced"
        ``"reduced"``: SimpleMKL's reduced-gradient direction with its
        descent-direction update and golden-section line search (every SVM
        solve of the line search is an oracle call). ``"projected"``:
        projected subgradient descent ``w <- P(w - eta_t g_t)`` with
        ``eta_t = step_scale * sqrt(2) / (||g_t|| sqrt(t))``.
    line_search_tol : float, default=0.1
        Golden-section search stops when the bracket is shorter than this
        fraction of the maximal step (SimpleMKL's ``goldensearch_deltmax``).
    step_scale : float, default=1.0
        Scale of the projected-subgradient step (``direction="projected"``).
    zero_tol : float, default=1e-10
        Weights below ``zero_tol * max(w)`` are set to zero after a step
        (SimpleMKL's numerical clean-up), then ``w`` is renormalised.
    norm : float, default=1.0
        1 is L1-MKL (the simplex). With ``direction="projected"`` it may be
        an Lp norm ``1 < p <= inf`` (:class:`~mklopt.domains.LpBall`).
    elastic_net : float, optional
        With ``direction="projected"``: elastic-net MKL with this mixing
        parameter in ``[0, 1]`` (:class:`~mklopt.domains.ElasticNet`;
        ``norm`` must then be 1).

    Notes
    -----
    Reduced gradient (Rakotomamonjy et al. 2008, section 3.2): with ``g`` the
    gradient and ``mu = argmax_k w_k``, the direction is
    ``D_k = g_mu - g_k`` for ``k != mu`` (set to 0 when ``w_k = 0`` and
    ``D_k < 0``) and ``D_mu = -sum_{k != mu} D_k``, so that ``sum(D) = 0``.
    While the largest feasible step ``gamma_max`` along ``D`` still decreases
    ``J``, the method moves there, zeroes the kernel that hit 0 and updates
    ``D``; then a golden-section search on ``[0, gamma_max]`` picks the step.
    One outer iteration is one direction with its whole line search
    (:class:`~mklopt.stopping.MaxIter` counts these).

    Every line search evaluates ``J`` alone (value-only oracle calls where
    the oracle supports them); the accepted point is then solved with its
    gradient. When no step along the direction lowers ``J`` (near the
    optimum the decrease drops below the noise that the inner solver's
    tolerance leaves in ``J``), the run stops with reason
    ``"line_search_stalled"``; tighten the oracle's ``tol`` to go further.

    The projected variant keeps the best point found; its iterates need not
    decrease ``J``. Its step uses the norm of the gradient in the set's
    tangent directions: ``g - mean(g)`` on the simplex (whose points keep
    ``sum(w) = 1``), ``g`` itself on the Lp ball and the elastic-net set,
    which are full-dimensional. The reduced gradient needs the simplex's
    single equality constraint and runs on it alone; for the other
    formulations with line searches see :class:`~mklopt.methods.SPG`.

    Examples
    --------
    The reduced gradient needs a smooth objective (as the SVM dual's optimum
    is when the SVM solution is unique); on a piecewise-linear one its line
    search stalls at a kink.

    >>> from mklopt.testing import SmoothQuadraticOracle
    >>> from mklopt import solve
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> oracle = SmoothQuadraticOracle.random(n_kernels=4, dim=3, seed=1)
    >>> res = solve(oracle, Subgradient(), stop=DualityGap(1e-6) | MaxIter(200))
    >>> res.converged
    True
    >>> bool(abs(res.value - oracle.exact_l1_optimum()) <= res.gap + 1e-12)
    True
    """

    #: What the conformance kit holds it to (:func:`mklopt.testing.check_method`):
    #: no rate on a non-smooth J (measured on the kit's piecewise-linear toys,
    #: the best value stalls at 0.1 to 0.8 of its first excess within 200 calls).
    conformance = {"piecewise": None,
                   "reason": "a descent method with a line search: it stalls at the kinks of a "
                             "non-smooth J, so no rate is promised there"}

    def __init__(self, direction="reduced", line_search_tol=0.1, step_scale=1.0, zero_tol=1e-10,
                 norm=1.0, elastic_net=None):
        self.direction = direction
        self.line_search_tol = line_search_tol
        self.step_scale = step_scale
        self.zero_tol = zero_tol
        self.norm = norm
        self.elastic_net = elastic_net

    # ---- hooks ---------------------------------------------------------------
    def check_params(self, n_kernels=None):
        check_choice(self.direction, "direction", ("reduced", "projected"))
        check_real(self.line_search_tol, "line_search_tol", low=0.0, high=1.0, strict_low=True)
        check_real(self.step_scale, "step_scale", low=0.0, strict_low=True)
        check_real(self.zero_tol, "zero_tol", low=0.0, high=1.0)
        l1 = (isinstance(self.norm, (int, float, np.number)) and not isinstance(self.norm, bool)
              and self.norm == 1)
        if not l1:
            check_norm(self.norm, "norm")
        if self.elastic_net is not None:
            check_real(self.elastic_net, "elastic_net", low=0.0, high=1.0)
            if not l1:
                raise ValueError(
                    "elastic_net is a formulation of its own; leave norm at 1 "
                    f"(got norm={self.norm!r})"
                )
        if self.direction == "reduced" and (not l1 or self.elastic_net is not None):
            raise ValueError(
                "the reduced gradient runs on the simplex only (L1-MKL); use "
                "direction='projected' for norm or elastic_net"
            )

    def _domain(self, m):
        if self.elastic_net is not None:
            return ElasticNet(m, self.elastic_net)
        if self.norm == 1:
            return Simplex(m)
        return LpBall(m, self.norm)

    def _start(self, oracle, w0=None, answer=None):
        domain = self._domain(oracle.n_kernels)
        s = _State(steps=None)
        if self.direction == "reduced":
            s.steps = self._reduced(s, domain.initial() if w0 is None else self._clean(w0), answer)
        else:
            s.steps = self._projected(s, domain, domain.initial() if w0 is None else w0, answer)
        s.query = next(s.steps)
        return domain, s

    def _resume(self, oracle, handover):
        # Descend from the handed-over point, whose answer gives the first
        # gradient; the projected variant first projects it onto its own set
        # (and then needs the answer there).
        w = np.array(handover.weights, dtype=np.float64)
        if self.direction == "reduced":
            return self._start(oracle, w, handover.answer)
        w0 = self._domain(oracle.n_kernels).project(w)
        same = float(np.max(np.abs(w0 - w))) <= 1e-12
        return self._start(oracle, w0, handover.answer if same else None)

    def _ask(self, s):
        return s.query

    def _need(self, s):
        return "full" if s.need_q else "value"

    def _tell(self, s, query, answer):
        s.iteration_done = False
        s.query = s.steps.send(answer)
        return s.iteration_done

    # ---- helpers -------------------------------------------------------------
    def _clean(self, w):
        """Clip rounding negatives and SimpleMKL's tiny weights; renormalise."""
        w = np.maximum(w, 0.0)
        w[w < self.zero_tol * w.max()] = 0.0
        return w / w.sum()

    @staticmethod
    def _direction(w, g):
        """SimpleMKL's reduced-gradient descent direction (sum zero)."""
        mu = int(np.argmax(w))
        D = g[mu] - g
        D[(w <= 0.0) & (D < 0.0)] = 0.0
        D[mu] = 0.0
        D[mu] = -D.sum()
        return D, mu

    # ---- the two algorithms as generators (yield a query, receive its answer) --
    def _reduced(self, s, w, ans):
        # Points of the descent-direction update and of the line search need
        # J alone (value-only oracle calls); the accepted point is then solved
        # again with its gradient (warm-started, so the SVM is nearly free),
        # as SimpleMKL does at the start of each iteration.
        def value_at(x):
            s.need_q = False
            return (yield x)

        if ans is None:
            ans = yield w
        while True:
            D, mu = self._direction(w, ans.grad)
            if not np.any(D < 0.0) or float(np.max(np.abs(D))) <= 1e-14 * max(
                1.0, float(np.max(np.abs(ans.grad)))
            ):
                # Stationary: no feasible descent direction exists.
                self._finish("stationary", converged=True)
                s.iteration_done = True
                yield w
                return
            J0 = ans.value
            moved = False  # whether the update loop below already lowered J
            # Descent-direction update: jump to the largest feasible step while
            # that still decreases J (Rakotomamonjy et al. 2008, Algorithm 1).
            while True:
                neg = D < 0.0
                ratios = np.full(D.shape, np.inf)
                ratios[neg] = -w[neg] / D[neg]
                nu = int(np.argmin(ratios))
                gamma_max = float(ratios[nu])
                w_max = w + gamma_max * D
                w_max[nu] = 0.0
                w_max = self._clean(w_max)
                if float(np.max(np.abs(w_max - w))) <= 1e-9:
                    # A weight already at rounding level hits zero at once:
                    # drop that kernel from the direction without an SVM call
                    # (comparing two equal values of J would only see noise).
                    w = w_max
                    D[mu] += D[nu]
                    D[nu] = 0.0
                    mu = int(np.argmax(w))
                    if not np.any(D < 0.0):
                        J_max = math.inf
                        break
                    continue
                J_max = (yield from value_at(w_max)).value
                if J_max < J0 and np.count_nonzero(w_max) > 1:
                    w, J0, moved = w_max, J_max, True
                    D[mu] += D[nu]
                    D[nu] = 0.0
                    mu = int(np.argmax(w))
                    if not np.any(D < 0.0):
                        break
                    continue
                break
            if J_max < J0:
                # Only one kernel left: that corner is the new point.
                w_new = w_max
            else:
                # Golden-section line search on [0, gamma_max] along D.
                vals = {0.0: J0, gamma_max: J_max}
                a, b = 0.0, gamma_max
                c = b - _GOLD * (b - a)
                d = a + _GOLD * (b - a)
                vals[c] = (yield from value_at(self._clean(w + c * D))).value
                vals[d] = (yield from value_at(self._clean(w + d * D))).value
                # SimpleMKL's bracket tolerance, extended: in an iteration that
                # has not lowered J yet, while no evaluated step beats step 0
                # the bracket keeps shrinking towards 0 (a coarse bracket alone
                # can stall at 0), down to 1e-6 of the maximal step.
                while (b - a) > self.line_search_tol * gamma_max or (
                    not moved and min(vals, key=vals.get) == 0.0 and (b - a) > 1e-6 * gamma_max
                ):
                    if vals[c] < vals[d]:
                        b, d = d, c
                        c = b - _GOLD * (b - a)
                        new = c
                    else:
                        a, c = c, d
                        d = a + _GOLD * (b - a)
                        new = d
                    vals[new] = (yield from value_at(self._clean(w + new * D))).value
                step = min(vals, key=vals.get)
                if step == 0.0 and not moved:
                    # No step along a descent direction lowers J: the decrease
                    # is below the noise of J left by the inner solver's
                    # tolerance. Going on would repeat the same search, so the
                    # run stops here with its best point and gap.
                    self._finish("line_search_stalled", converged=False)
                    s.iteration_done = True
                    yield w
                    return
                w_new = self._clean(w + step * D) if step > 0.0 else w
            # Gradient at the accepted point (a full oracle call).
            s.need_q = True
            w = w_new
            ans = yield w
            s.iteration_done = True

    def _projected(self, s, domain, w, ans):
        simplex = isinstance(domain, Simplex)
        t = 0
        while True:
            if ans is None:
                ans = yield w
            t += 1
            g = np.asarray(ans.grad, dtype=np.float64)
            # On the simplex only moves with sum zero are feasible, so the
            # step is scaled by the gradient's part in that hyperplane.
            gn = float(np.linalg.norm(g - g.mean() if simplex else g))
            if gn <= 0.0:
                self._finish("stationary", converged=True)
                s.iteration_done = True
                yield w
                return
            # eta_t = R / (||g_t|| sqrt(t)) with R = sqrt(2), the diameter of
            # the simplex. The other sets lie in the unit box of the positive
            # orthant; the same R keeps one scale for all of them (step_scale
            # tunes it), and the projection keeps every iterate feasible.
            eta = self.step_scale * math.sqrt(2.0) / (gn * math.sqrt(t))
            x = np.ascontiguousarray(w - eta * g)
            if simplex:
                w = project_simplex(x, 1.0, np.empty_like(x))
            else:
                w = domain.project(x)
            s.iteration_done = True
            ans = None
