"""Oracles that run the outer methods in milliseconds, with known optima.

``PiecewiseLinearOracle`` has ``J(w) = max_j f(w, alpha_j)`` over a few fixed
"dual points", each given by ``s_j = 1'alpha_j`` and ``q_j >= 0``, so that
``f(w, alpha_j) = s_j - w'q_j / 2`` and ``J`` is a convex piecewise-linear
function; its minimum over the simplex is an LP (``exact_l1_optimum``).
"""

import numpy as np
from scipy.optimize import linprog

from mklopt import OracleAnswer


class PiecewiseLinearOracle:
    def __init__(self, s, Q):
        self.s = np.asarray(s, dtype=float)
        self.Q = np.asarray(Q, dtype=float)  # (n_pieces, n_kernels)
        self.n_kernels = self.Q.shape[1]
        self.n_samples = self.Q.shape[0]
        self.n_calls = 0

    @classmethod
    def random(cls, n_kernels, n_pieces, seed=0):
        rng = np.random.default_rng(seed)
        Q = rng.uniform(0.5, 3.0, size=(n_pieces, n_kernels)) ** 2
        s = rng.uniform(5.0, 6.0, size=n_pieces)
        return cls(s, Q)

    def __call__(self, w, warm_start=None):
        self.n_calls += 1
        vals = self.s - 0.5 * self.Q @ w
        j = int(np.argmax(vals))
        alpha = np.zeros(self.n_samples)
        alpha[j] = 1.0
        q = self.Q[j].copy()
        return OracleAnswer(
            w=np.array(w, dtype=float),
            value=float(vals[j]),
            grad=-0.5 * q,
            q=q,
            alpha=alpha,
            bias=0.0,
            support=np.array([j], dtype=np.int64),
            n_solver_iter=1,
            sum_alpha=float(self.s[j]),
        )

    def exact_l1_optimum(self):
        """min over the simplex of max_j (s_j - q_j'w / 2), by an LP in (w, t)."""
        m = self.n_kernels
        c = np.r_[np.zeros(m), 1.0]
        A_ub = np.c_[-0.5 * self.Q, -np.ones(len(self.s))]
        b_ub = -self.s
        A_eq = np.r_[np.ones(m), 0.0][None, :]
        res = linprog(
            c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0],
            bounds=[(0, None)] * m + [(None, None)], method="highs",
        )
        assert res.status == 0
        return float(res.fun), res.x[:m]
