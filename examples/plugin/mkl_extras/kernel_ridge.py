"""A user's oracle: squared loss (kernel ridge regression with an offset).

Written against mklopt's public API only (``OracleBase`` and
``register_oracle``), in one file. At kernel weights ``w`` the dual is

    J(w) = max_{1'a = 0}  y'a - |a|^2 / (2C) - 1/2 sum_k w_k a'K_k a,

the dual of ``min_{f, b} C/2 sum_i (y_i - f(x_i) - b)^2 + |f|^2 / 2``.
Its maximiser solves the bordered system ``(K(w) + I/C) a + b 1 = y``,
``1'a = 0``, here by one Cholesky factorisation. ``OracleBase`` does the
rest: checks ``w``, counts calls, computes ``q_k = a'K_k a`` through the
bank and builds the answer (``value = l(a) - w'q/2``, ``grad = -q/2``).

Importing this module registers it for the regression task as
``"kernel_ridge"``, so ``MKLRegressor(loss="kernel_ridge")`` fits with it
(and, through the ``mklopt.oracles`` entry point of this package,
``mklopt fit --task regression --loss kernel_ridge``).
"""

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from mklopt.oracles import OracleBase
from mklopt.tasks import register_oracle


class KernelRidgeOracle(OracleBase):
    """Squared-loss MKL dual oracle, solved exactly.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels.
    y : array-like of shape (n_samples,)
        Real targets.
    C : float, default=1.0
        Weight of the squared loss, > 0 (``1/C`` is the ridge).
    """

    def __init__(self, bank, y, C=1.0):
        self._setup(bank)
        y = np.asarray(y, dtype=float)
        if y.shape != (self.n_samples,) or not np.all(np.isfinite(y)):
            raise ValueError(f"y must hold {self.n_samples} finite numbers")
        if not float(C) > 0:
            raise ValueError(f"C must be > 0, got {C!r}")
        self.y, self.C = y, float(C)

    def _solve(self, K, warm_start):
        n = self.n_samples
        A = K + np.eye(n) / self.C  # the base's buffer K stays untouched
        fac = cho_factor(A, lower=True)
        u, z = cho_solve(fac, np.column_stack([self.y, np.ones(n)])).T
        b = float(u.sum() / z.sum())  # makes 1'a = 0
        return u - b * z, b, 1, True

    def _linear(self, a):
        return float(self.y @ a) - float(a @ a) / (2.0 * self.C)


register_oracle("kernel_ridge", "regression", KernelRidgeOracle, ("C",), replace=True)
