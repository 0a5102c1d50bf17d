"""The exact reference: the MKL dual as a conic program, solved by Clarabel through cvxpy.

``max_a 1'a - t/2`` over ``0 <= a <= C``, ``y'a = 0``, ``q_k(a) = ||L_k' Y a||^2 <= s_k``
and ``t >= max_k s_k`` (L1; Lanckriet et al. 2004, Xu et al. 2008 eq. 6) or
``t >= ||s||_{p*}`` (Lp, ``p* = p / (p - 1)``), with ``K_k = L_k L_k'`` from an
eigendecomposition that drops eigenvalues below 1e-12 of the largest.
The kernel weights are the multipliers of ``s_k <= t`` (L1), or ``w_k
proportional to q_k^(p*-1)`` (Hoelder's equality case, Lp). Dense and
one-shot: for the bundled sets' sizes.
"""

import numpy as np
from benchopt import BaseSolver
from benchopt.stopping_criterion import SingleRunCriterion

try:
    import cvxpy as cp
except ImportError:  # pragma: no cover - the bench extra has it
    cp = None


class Solver(BaseSolver):
    name = "cvxpy-clarabel"
    sampling_strategy = "run_once"
    stopping_criterion = SingleRunCriterion()
    requirements = ["pip::cvxpy", "pip::clarabel"]

    def skip(self, bank, y, C, p, domain):
        if cp is None:
            return True, 'cvxpy is not installed: pip install "mklopt[bench]"'
        return False, None

    def set_objective(self, bank, y, C, p, domain):
        self.bank, self.y, self.C, self.p = bank, y, C, p

    def run(self, _):
        n, m = len(self.y), self.bank.n_kernels
        blocks = self.bank.blocks(np.arange(m), np.arange(n))
        a = cp.Variable(n)
        ya = cp.multiply(self.y, a)
        t, s = cp.Variable(), cp.Variable(m)
        cons = [a >= 0, a <= self.C, self.y @ a == 0]
        quad = []
        for k in range(m):
            lam, V = np.linalg.eigh(blocks[k])
            keep = lam > 1e-12 * max(lam[-1], 1e-300)
            L = V[:, keep] * np.sqrt(lam[keep])
            quad.append(cp.sum_squares(L.T @ ya) <= s[k])
        if self.p == 1:
            tops = [s[k] <= t for k in range(m)]
        else:
            tops = [cp.norm(s, self.p / (self.p - 1)) <= t]
        prob = cp.Problem(cp.Maximize(cp.sum(a) - t / 2), cons + quad + tops)
        prob.solve(solver=cp.CLARABEL)
        if self.p == 1:
            w = np.maximum([float(c.dual_value) for c in tops], 0.0)
        else:
            q = np.maximum(s.value, 0.0)
            w = q ** (self.p / (self.p - 1) - 1)
        self.weights, self.value = w, float(prob.value)

    def get_result(self):
        return dict(weights=self.weights, reference_value=self.value)
