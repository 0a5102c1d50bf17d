"""Kloft et al.'s interleaved closed-form update for Lp-norm MKL.

References
----------
M. Kloft, U. Brefeld, S. Sonnenburg and A. Zien, "Comparing Sparse and
Non-Sparse Multiple Kernel Learning", eq. 2
(``papers/kloft-lp-norm-mkl-poster.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_real
from ..domains import LpBall
from ._base import MethodBase, register

__all__ = ["AnalyticLp"]


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
        Norm of the weight constraint ``||theta||_p <= 1``; must be > 1.

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

    def __init__(self, p=2.0):
        self.p = p

    def check_params(self, n_kernels=None):
        check_real(self.p, "p", low=1.0, strict_low=True)

    def _start(self, oracle):
        domain = LpBall(oracle.n_kernels, self.p)
        return domain, _State(theta=domain.initial())

    def _resume(self, oracle, handover):
        # The update from the handed-over answer; a little of the uniform
        # point keeps kernels handed over at zero alive (the update is
        # multiplicative).
        domain, s = self._start(oracle)
        p = float(self.p)
        theta = self.update(np.maximum(handover.weights, 0.0), handover.answer.q, p)
        if theta is not None:
            theta = (1.0 - _RESUME_MIX) * theta + _RESUME_MIX * s.theta
            s.theta = theta / np.linalg.norm(theta, p)
        return domain, s

    def _ask(self, s):
        return s.theta

    def _tell(self, s, query, answer):
        s.theta = self.update(query, answer.q, float(self.p))
        if s.theta is None:
            s.theta = np.array(query, dtype=np.float64)
            self._finish("stationary", converged=True)

    @staticmethod
    def update(theta, q, p):
        """The theta-step of eq. 2; ``None`` when every ``theta_k^2 q_k`` is 0."""
        # Clip rounding negatives of q (a PSD quadratic form) before the power.
        a = np.square(theta) * np.maximum(np.asarray(q, dtype=np.float64), 0.0)
        top = a.max()
        if not top > 0.0:
            return None
        # Scale by the largest term first so tiny or huge q cannot under/overflow.
        t = (a / top) ** (1.0 / (p + 1.0))
        return t / np.linalg.norm(t, p)
