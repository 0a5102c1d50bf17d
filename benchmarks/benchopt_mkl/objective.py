"""The L1-MKL (and Lp-MKL) dual at a given C, with its certified relative gap.

``J(w) = max_{0 <= a <= C, y'a = 0} 1'a - a'Y K(w) Y a / 2`` with ``K(w) =
sum_k w_k K_k`` (Xu et al. 2008, eq. 4; Kloft et al. 2011 for the Lp
ball), minimised over the simplex (``p = 1``) or the unit Lp ball. ``J`` is
evaluated at each solver's weights with mklopt's SVM dual at a tight
tolerance, with the certified gap ``J(w) - D(a(w))`` (:mod:`mklopt.domains`)
or against a better ``lower`` bound the solver returns. The exact reference
(cvxpy with Clarabel) also returns the conic optimum, ``reference_value``.
"""

import math

import numpy as np
from benchopt import BaseObjective
from benchopt.stopping_criterion import SufficientProgressCriterion

from mklopt.domains import LpBall, Simplex
from mklopt.kernels import KernelBank
from mklopt.oracles import SVMDual

#: The SVM tolerance of the evaluation (the methods run at 1e-4, as the paper's protocol).
EVAL_TOL = 1e-6


class Objective(BaseObjective):
    name = "MKL dual"
    url = "https://github.com/mklopt/mklopt"
    min_benchopt_version = "1.5"
    requirements = ["pip::mklopt"]

    # C = 100 on unit-trace kernels (the level paper's protocol); p = 1 is
    # L1-MKL, p > 1 the Lp variant.
    parameters = {"C": [100.0], "p": [1.0, 2.0]}

    sampling_strategy = "callback"
    stopping_criterion = SufficientProgressCriterion(
        strategy="callback", key_to_monitor="rel_gap", eps=1e-7, patience=30)  # SD plateaus

    def set_data(self, X, y, specs, X_test, y_test):
        self.X, self.y, self.specs = X, y, specs
        self.X_test, self.y_test = X_test, y_test
        self.bank = KernelBank.from_specs(X, specs, normalize="trace")
        m = self.bank.n_kernels
        self.domain = Simplex(m) if self.p == 1 else LpBall(m, self.p)
        self.oracle = SVMDual(self.bank, y, C=self.C, tol=EVAL_TOL)
        self._alpha = None

    def get_objective(self):
        return dict(bank=self.bank, y=self.y, C=self.C, p=self.p, domain=self.domain)

    def evaluate_result(self, weights, lower=-math.inf, oracle_calls=math.nan,
                        reference_value=math.nan):
        # scaled onto the feasible set (a no-op for feasible weights; other
        # packages' weights may sum to something else than 1)
        w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
        w = w / (w.sum() if self.p == 1 else np.linalg.norm(w, self.p))
        ans = self.oracle(w, warm_start=self._alpha)
        self._alpha = ans.alpha
        value = float(ans.value)
        dual = max(float(self.domain.dual_value(ans)), float(lower))
        sv = np.flatnonzero(ans.alpha > 0)
        dec = self.bank.combine_cross(self.X_test, w, columns=sv) @ (ans.alpha[sv] * self.y[sv])
        acc = float(np.mean(np.where(dec + ans.bias >= 0, 1, -1) == self.y_test))
        return dict(value=value, rel_gap=max(value - dual, 0.0) / abs(value),
                    oracle_calls=float(oracle_calls), test_accuracy=acc,
                    reference_value=float(reference_value),
                    n_selected=int(np.count_nonzero(w > 1e-6 * w.max())))

    def get_one_result(self):
        return dict(weights=self.domain.initial())
