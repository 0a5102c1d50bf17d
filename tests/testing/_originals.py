"""Correct originals the flawed copies of test_flaws.py are made from.

``FrankWolfe``: conditional-gradient steps on the simplex. ``SquaredHinge``:
the squared-hinge SVM with a regularised offset, whose dual is

    max_{a >= 0} 1'a - a'a / (4C) - (1'v)^2 / 2 - v'K(w)v / 2,   v = a * y,

(offset ``b = 1'v``), solved by projected gradient ascent to a KKT residual
of ``tol``. Both written as a user of the kit would, on the public bases.
"""

from dataclasses import dataclass

import numpy as np

from mklopt.domains import Simplex
from mklopt.methods import MethodBase
from mklopt.oracles._loss_base import LossOracle


@dataclass
class _FWState:
    w: np.ndarray
    t: int = 0


class FrankWolfe(MethodBase):
    """Frank-Wolfe on the simplex: step ``2 / (t + 2)`` towards the vertex of the largest q_k."""

    conformance = {"piecewise": None,
                   "reason": "Frank-Wolfe needs a smooth J: on a kink its vertex steps zigzag"}

    def __init__(self, power=1.0):
        self.power = power

    def _start(self, oracle):
        domain = Simplex(oracle.n_kernels)
        return domain, _FWState(w=domain.initial())

    def _resume(self, oracle, handover):
        domain = Simplex(oracle.n_kernels)
        # one step already made: the next one mixes the vertex into the hand-over
        return domain, _FWState(w=np.array(handover.weights, dtype=float), t=1)

    def _ask(self, s):
        return s.w

    def _step(self, s, answer):
        vertex = np.zeros_like(s.w)
        vertex[np.argmax(answer.q)] = 1.0
        return 2.0 / (s.t + 2.0) ** self.power, vertex

    def _tell(self, s, query, answer):
        eta, vertex = self._step(s, answer)
        s.w = (1.0 - eta) * np.asarray(query) + eta * vertex
        s.t += 1


class SquaredHinge(LossOracle):
    """Squared-hinge SVM dual with a regularised offset (module notes)."""

    def __init__(self, K, y, C=0.5, tol=1e-6, max_iter=None):
        self.y = np.asarray(y, dtype=float)
        self.C = float(C)
        self.kernels = np.asarray(K, dtype=float)  # kept for the reference solve
        self._setup(self.kernels, tol, max_iter)

    def _v(self, alpha):
        return alpha * self.y

    def _linear(self, alpha):
        v = alpha * self.y
        return float(alpha.sum() - alpha @ alpha / (4.0 * self.C) - 0.5 * v.sum() ** 2)

    def _hessian(self, K):
        return (K + 1.0) * np.outer(self.y, self.y) + np.eye(self.y.size) / (2.0 * self.C)

    def _stop_at(self):
        return self.tol

    def _solve(self, K, warm_start):
        H = self._hessian(K)
        step = 1.0 / np.linalg.eigvalsh(H)[-1]
        a = np.zeros(self.y.size) if warm_start is None else np.maximum(warm_start, 0.0)
        stop_at = self._stop_at()
        for it in range(1, self.max_iter + 1):
            g = 1.0 - H @ a
            residual = np.abs(a - np.maximum(a + g, 0.0)).max()
            if residual <= stop_at:
                return a, self._bias(a), it, True
            a = np.maximum(a + step * g, 0.0)
        return a, self._bias(a), self.max_iter, False

    def _bias(self, a):
        return float((a * self.y).sum())

    def dual_violation(self, alpha):
        """How far ``alpha`` is from ``alpha >= 0`` (0 when feasible)."""
        return max(0.0, -float(np.min(alpha)))

    def reference_value(self, w):
        """``J(w)`` by cvxpy (an independent conic solve of the same dual)."""
        import cvxpy as cp

        from mklopt.testing import _solve_tight

        K = np.tensordot(np.asarray(w, dtype=float), self.kernels, axes=1)
        H = (K + 1.0) * np.outer(self.y, self.y)
        a = cp.Variable(self.y.size, nonneg=True)
        obj = cp.sum(a) - cp.sum_squares(a) / (4.0 * self.C) - 0.5 * cp.quad_form(
            a, cp.psd_wrap(H))
        return _solve_tight(cp.Problem(cp.Maximize(obj)))


def kernels(n_kernels=6, n_samples=20, seed=0):
    """``(K, y)``: a small noisy problem, RBF kernels of several widths on drawn features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n_samples) > 0, 1.0, -1.0)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = np.stack([np.exp(-d2 / (2.0 * s * s)) for s in np.geomspace(0.3, 5.0, n_kernels)])
    return K, y
