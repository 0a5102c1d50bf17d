"""Kloft et al.'s interleaved closed-form update for Lp-norm MKL, and its elastic-net twin.

References
----------
M. Kloft, U. Brefeld, S. Sonnenburg and A. Zien, "Comparing Sparse and
Non-Sparse Multiple Kernel Learning", eq. 2
(``papers/kloft-lp-norm-mkl-poster.md``).

R. Tomioka and T. Suzuki, "Sparsity-accuracy trade-off in MKL", 2010
(elastic-net MKL; :class:`AnalyticElasticNet`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_real
from ..domains import ElasticNet, LpBall, check_norm
from ._base import MethodBase, register

__all__ = ["AnalyticLp", "AnalyticElasticNet"]


#: Share of the uniform point mixed into a handed-over start.
_RESUME_MIX = 1e-2


@dataclass
class _State:
    theta: np.ndarray  # next query


@register("lp")
class AnalyticLp(MethodBase):
    r"""Closed-form Lp-norm MKL weight update (Kloft et al., eq. 2).

    Parameters
    ----------
    p : float, default=2.0
        Norm of the weight constraint ``||theta||_p <= 1``; ``1 < p <= inf``
        (``numpy.inf`` is the uniform kernel, see Notes).

    Notes
    -----
    Minimises ``J(theta) = max_{alpha in Q} 1'alpha - theta'q(alpha) / 2``
    over ``{theta >= 0, ||theta||_p <= 1}`` by alternating the SVM (the
    oracle) with the analytic theta-step of Kloft et al.'s eq. 2. In the
    primal, kernel ``k`` carries ``w_k = theta_k sum_i alpha_i y_i phi_k(x_i)``,
    so ``||w_k||^2 = theta_k^2 q_k(alpha)`` and eq. 2 reads

    .. math:: \theta_k \leftarrow
              \frac{(\theta_k^2 q_k)^{1/(p+1)}}
                   {\big(\sum_l (\theta_l^2 q_l)^{p/(p+1)}\big)^{1/p}},

    which puts ``theta`` on the unit sphere ``||theta||_p = 1``. It starts
    from ``theta_0 = m^{-1/p}`` (the uniform point of the sphere). A kernel
    with ``q_k = 0`` gets weight 0 (and keeps it: the update is
    multiplicative). If every ``theta_k^2 q_k`` vanishes (``alpha = 0``), J
    no longer depends on ``theta`` and the method stops itself with reason
    ``"stationary"``. Every answer is offered as a candidate best point; its
    gap ``(||q||_{p*} - theta'q) / 2`` (:class:`~mklopt.domains.LpBall`) is
    non-negative by Hoelder's inequality.

    **p = inf.** The constraint is the box ``0 <= theta <= 1`` and the
    theta-step minimises ``sum_k ||w_k||^2 / theta_k`` over it: every
    ``theta_k`` with ``||w_k|| > 0`` goes to its bound 1, which is also the
    limit of eq. 2 as ``p -> inf`` (its numerator tends to 1 and its
    denominator to ``max_l (theta_l^2 q_l)^0 = 1``). A kernel with
    ``||w_k|| = 0`` could take any weight; it gets 1 too, because ``J`` never
    increases when a weight grows (``q_k >= 0``). So the step is
    ``theta = 1``, the start ``theta_0 = m^0 = 1`` is already the optimum
    (the SVM on the sum kernel ``sum_k K_k``, with the same ``C``) and the
    first answer has gap ``(sum_k q_k - 1'q) / 2 = 0``.

    References
    ----------
    Kloft, Brefeld, Sonnenburg and Zien, eq. 2.

    Examples
    --------
    >>> from mklopt.testing import SmoothQuadraticOracle
    >>> from mklopt import solve
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> oracle = SmoothQuadraticOracle.random(n_kernels=4, seed=1)
    >>> res = solve(oracle, AnalyticLp(p=2.0), stop=DualityGap(1e-8) | MaxIter(500))
    >>> bool(res.converged and abs(np.linalg.norm(res.weights, 2) - 1) < 1e-12)
    True
    """

    #: the estimators' parameters it takes (estimator name: constructor keyword)
    estimator_params = {"p": "p"}

    def __init__(self, p=2.0):
        self.p = p

    def check_params(self, n_kernels=None):
        check_norm(self.p, "p")

    def _start(self, oracle):
        domain = LpBall(oracle.n_kernels, self.p)
        return domain, _State(theta=domain.initial())

    def _resume(self, oracle, handover):
        # The update from the handed-over answer; a little of the uniform
        # point keeps kernels handed over at zero alive (the update is
        # multiplicative).
        domain, s = self._start(oracle)
        theta = self.update(np.maximum(handover.weights, 0.0), handover.answer.q, domain.p)
        if theta is not None:
            theta = (1.0 - _RESUME_MIX) * theta + _RESUME_MIX * s.theta
            s.theta = theta / np.linalg.norm(theta, domain.p)
        return domain, s

    def _ask(self, s):
        return s.theta

    def _tell(self, s, query, answer):
        s.theta = self.update(query, answer.q, self.p)
        if s.theta is None:
            s.theta = _stationary(self, query, answer)

    @staticmethod
    def update(theta, q, p):
        """The theta-step of eq. 2; ``None`` when every ``theta_k^2 q_k`` is 0."""
        # Clip rounding negatives of q (a PSD quadratic form) before the power.
        a = np.square(theta) * np.maximum(np.asarray(q, dtype=np.float64), 0.0)
        top = a.max()
        if not top > 0.0:
            return None
        if p == np.inf:
            # the limit of eq. 2, and the minimiser over the box (class notes)
            return np.ones_like(a)
        # Scale by the largest term first so tiny or huge q cannot under/overflow.
        t = (a / top) ** (1.0 / (p + 1.0))
        return t / np.linalg.norm(t, p)


@register("elastic_net")
class AnalyticElasticNet(MethodBase):
    r"""Interleaved closed-form update for elastic-net MKL (:class:`~mklopt.domains.ElasticNet`).

    Parameters
    ----------
    lam : float, default=0.5
        Mixing parameter in ``[0, 1]``: 0 is L1-MKL, 1 the SVM on the sum
        kernel.

    Notes
    -----
    Minimises ``J(w)`` over ``W_lam = {w >= 0, sum_k beta_k(w) <= 1}``,
    ``beta_k(w) = (1 - lam) w_k / (1 - lam w_k)``, the weight form of the
    block-norm regulariser ``((1 - lam) (sum_k ||f_k||)^2 + lam sum_k
    ||f_k||^2) / 2`` (see :class:`~mklopt.domains.ElasticNet` and the
    formulations page). As :class:`AnalyticLp`, it alternates the SVM with
    the exact minimisation of the primal over the weights at the SVM's
    blocks ``||f_k|| = w_k sqrt(q_k)``: ``sum_k ||f_k||^2 / w_k`` is smallest
    at ``beta_k ∝ ||f_k||``, that is

    .. math:: \beta_k \leftarrow \frac{w_k \sqrt{q_k}}{\sum_l w_l \sqrt{q_l}},
              \qquad w_k \leftarrow \frac{\beta_k}{1 - \lambda + \lambda \beta_k}.

    At ``lam = 0`` this is the p -> 1 limit of Kloft et al.'s eq. 2
    (``w_k ∝ w_k sqrt(q_k)`` on the simplex); at ``lam = 1`` it gives
    ``w = 1`` at once. The start is ``beta`` uniform. A kernel with
    ``q_k = 0`` gets weight 0 and keeps it (the update is multiplicative);
    if every ``w_k q_k`` vanishes the method stops with reason
    ``"stationary"``. Every answer is offered as a candidate best point with
    the gap ``(h(q) - w'q) / 2 >= 0`` of the domain.

    It is registered as ``"elastic_net"``; the estimators run it for
    ``elastic_net=lam`` (e.g. ``MKLClassifier(elastic_net=0.5)``), or take
    an instance, ``MKLClassifier(method=AnalyticElasticNet(0.5))``.

    References
    ----------
    Tomioka and Suzuki (2010), elastic-net MKL; Kloft et al., eq. 2 (the
    interleaved analytic update).

    Examples
    --------
    >>> from mklopt.testing import SmoothQuadraticOracle
    >>> from mklopt import solve
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> oracle = SmoothQuadraticOracle.random(n_kernels=4, seed=1)
    >>> res = solve(oracle, AnalyticElasticNet(0.5), stop=DualityGap(1e-8) | MaxIter(2000))
    >>> bool(res.converged and ElasticNet(4, 0.5).contains(res.weights))
    True
    """

    #: the estimators' parameters it takes (estimator name: constructor keyword)
    estimator_params = {"elastic_net": "lam"}

    def __init__(self, lam=0.5):
        self.lam = lam

    def check_params(self, n_kernels=None):
        check_real(self.lam, "lam", low=0.0, high=1.0)

    def _start(self, oracle):
        domain = ElasticNet(oracle.n_kernels, self.lam)
        return domain, _State(theta=domain.initial())

    def _resume(self, oracle, handover):
        domain, s = self._start(oracle)
        w = domain.analytic_step(domain.project(handover.weights), handover.answer.q)
        if w is not None:
            # a little of the uniform beta keeps kernels handed over at zero alive
            b = (1.0 - _RESUME_MIX) * domain.beta(w) + _RESUME_MIX * domain.beta(s.theta)
            s.theta = domain.weights(b)
        return domain, s

    def _ask(self, s):
        return s.theta

    def _tell(self, s, query, answer):
        w = self.domain.analytic_step(query, answer.q)
        s.theta = _stationary(self, query, answer) if w is None else w


def _stationary(method, query, answer):
    """The next point when the update is undefined (``q_k = 0`` wherever ``theta_k > 0``).

    With a zero gap the point is optimal and the run ends converged. Otherwise
    kernels at zero weight have ``q_k > 0`` and the multiplicative update can
    never revive them (the conformance kit found such a stall claiming
    convergence on a piecewise-linear toy): the point is mixed with a little
    of the uniform one, as after a hand-over, and the run goes on.
    """
    dom = method.domain
    theta = np.array(query, dtype=np.float64)
    if dom.gap(theta, answer) <= 0.0:
        method._finish("stationary", converged=True)
        return theta
    mixed = (1.0 - _RESUME_MIX) * theta + _RESUME_MIX * np.asarray(dom.initial())
    return np.asarray(dom.project(mixed), dtype=np.float64)
