"""A new outer method and a new oracle, checked by mklopt's conformance kit.

A researcher's two extensions, written on the public bases:

* ``PairwiseFrankWolfe``: Frank-Wolfe on the simplex that moves weight from
  the worst kernel in use (smallest ``q_k``) to the best one (largest
  ``q_k``), with a step that shrinks as ``1 / (t + 2)``;
* ``SquaredHingeOracle``: the squared-hinge SVM with a regularised offset,

      J(w) = max_{a >= 0} 1'a - a'a / (4C) - (1'v)^2 / 2 - v'K(w)v / 2,  v = a * y,

  (offset ``b = 1'v``) solved by projected gradient ascent.

``check_method`` and ``check_oracle`` run them through the kit's checks
(invariants, progress, hand-overs; answers, minorants, subgradients,
tolerance, warm starts, decisions, a cvxpy reference). Then one flawed copy
of each shows what the kit says when a property breaks.
"""

from dataclasses import dataclass

import numpy as np

from mklopt import solve
from mklopt.domains import Simplex
from mklopt.methods import MethodBase
from mklopt.oracles import OracleBase
from mklopt.stopping import DualityGap, MaxOracleCalls
from mklopt.testing import check_method, check_oracle

# ------------------------------------------------------------ the method


@dataclass
class _State:
    w: np.ndarray
    t: int = 0


class PairwiseFrankWolfe(MethodBase):
    """Move weight from the kernel in use with the smallest q_k to the largest q_k."""

    # The kit's default rates hold on smooth toys; on a kink the pairwise steps
    # zigzag, so no rate is promised on piecewise-linear ones (declared, as
    # scikit-learn's estimator tags declare what an estimator supports).
    conformance = {"piecewise": None, "reason": "conditional-gradient steps zigzag at kinks"}

    def _start(self, oracle):
        domain = Simplex(oracle.n_kernels)
        return domain, _State(w=domain.initial())

    def _resume(self, oracle, handover):
        # Continue from the handed-over weights (a Chain, solve(..., initial=...)).
        return Simplex(oracle.n_kernels), _State(w=np.array(handover.weights), t=1)

    def _ask(self, s):
        return s.w

    def _tell(self, s, query, answer):
        w, q = np.array(query, dtype=float), answer.q
        used = np.flatnonzero(w > 0)
        worst, best = used[np.argmin(q[used])], int(np.argmax(q))
        step = min(w[worst], 2.0 / (s.t + 2.0))
        w[worst] -= step
        w[best] += step
        s.w = w / w.sum()
        s.t += 1


# ------------------------------------------------------------ the oracle


class SquaredHingeOracle(OracleBase):
    """Squared-hinge SVM dual with a regularised offset (module notes)."""

    def __init__(self, K, y, C=0.5, tol=1e-6):
        self.y = np.asarray(y, dtype=float)
        self.C = float(C)
        self.kernels = np.asarray(K, dtype=float)
        self._setup(self.kernels, tol)  # max_iter: the base's default

    def _v(self, alpha):
        return alpha * self.y

    def _linear(self, alpha):
        v = alpha * self.y
        return float(alpha.sum() - alpha @ alpha / (4.0 * self.C) - 0.5 * v.sum() ** 2)

    def _solve(self, K, warm_start):
        H = (K + 1.0) * np.outer(self.y, self.y) + np.eye(self.y.size) / (2.0 * self.C)
        step = 1.0 / np.linalg.eigvalsh(H)[-1]
        a = np.zeros(self.y.size) if warm_start is None else np.maximum(warm_start, 0.0)
        for it in range(1, self.max_iter + 1):
            g = 1.0 - H @ a
            if np.abs(a - np.maximum(a + g, 0.0)).max() <= self.tol:  # KKT residual
                return a, float((a * self.y).sum()), it, True
            a = np.maximum(a + step * g, 0.0)
        return a, float((a * self.y).sum()), self.max_iter, False

    def dual_violation(self, alpha):
        """How far alpha is from the dual's constraint alpha >= 0 (read by check_oracle)."""
        return max(0.0, -float(np.min(alpha)))

    def reference_value(self, w):
        """J(w) by cvxpy, an independent solve of the same dual (read by check_oracle)."""
        import cvxpy as cp

        K = np.tensordot(np.asarray(w, dtype=float), self.kernels, axes=1)
        H = (K + 1.0) * np.outer(self.y, self.y)
        a = cp.Variable(self.y.size, nonneg=True)
        obj = cp.sum(a) - cp.sum_squares(a) / (4.0 * self.C) - 0.5 * cp.quad_form(
            a, cp.psd_wrap(H))
        return float(cp.Problem(cp.Maximize(obj)).solve(solver=cp.CLARABEL))


def toy(n=20, m=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    return np.stack([np.exp(-d2 / (2 * s * s)) for s in np.geomspace(0.3, 5.0, m)]), y


K, y = toy()

# ------------------------------------------------------------ the kit
check_method(PairwiseFrankWolfe)
# separable: how to build the oracle on the kit's separable toy (its decision check)
check_oracle(lambda: SquaredHingeOracle(K, y),
             separable=lambda K, y: SquaredHingeOracle(K, y, C=50.0))
print("PairwiseFrankWolfe and SquaredHingeOracle pass the conformance kit")

res = solve(SquaredHingeOracle(K, y), PairwiseFrankWolfe(),
            stop=DualityGap(1e-3) | MaxOracleCalls(500))
print(f"together: relative gap {res.rel_gap:.1e} after {res.n_oracle_calls} calls, "
      f"converged: {res.converged}")


# ------------------------------------------------------------ what it catches
class PairwiseFrankWolfeRestarting(PairwiseFrankWolfe):
    """Flawed: forgets its _resume, so a hand-over restarts it from the centre."""

    def _resume(self, oracle, handover):
        return self._start(oracle)


class SquaredHingeFlippedBias(SquaredHingeOracle):
    """Flawed: returns the offset with its sign flipped."""

    def _solve(self, K, warm_start):
        a, b, it, ok = super()._solve(K, warm_start)
        return a, -b, it, ok


for run in (lambda: check_method(PairwiseFrankWolfeRestarting),
            lambda: check_oracle(lambda: SquaredHingeFlippedBias(K, y),
                                 separable=lambda K, y: SquaredHingeFlippedBias(K, y, C=50.0))):
    try:
        run()
    except AssertionError as exc:
        head, _, rest = str(exc).partition(": ")
        print(f"caught: {head}\n    {rest.split(': ')[0]}")
    else:  # pragma: no cover - the kit would be broken
        raise SystemExit("the kit let a flawed copy through")
