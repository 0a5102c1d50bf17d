"""Every registered mklopt method of the SVM dual, one benchopt solver parametrized by its name.

The names are read from the registry when benchopt imports this file
(:func:`mklopt.bench.runs.dual_methods`: the presets, then every other
registered name, a plugin's included). A method is skipped on an objective
whose feasible set (the simplex for ``p = 1``, the Lp ball otherwise) is not
the one it optimises over, as its first query tells.
"""

import math

from benchopt import BaseSolver

from mklopt import solve
from mklopt.bench.runs import dual_methods, make_method
from mklopt.domains import LpBall, Simplex
from mklopt.methods import PRESETS, estimator_params_of, get_method
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxOracleCalls

#: The SVM tolerance of the runs (the level paper's protocol); the driver tightens it with the gap.
INNER_TOL = 1e-4


def build(key, p):
    """A fresh method: the preset, or the class with ``p`` when it takes one and ``p > 1``."""
    if key in PRESETS:
        return make_method(key)
    cls = get_method(key)
    kw = estimator_params_of(cls)
    return cls(**{kw["p"]: p}) if "p" in kw and p != 1 else cls()


def solves(domain, p):
    """Whether ``domain`` is the feasible set of the objective's formulation."""
    if p == 1:
        return type(domain) is Simplex
    return type(domain) is LpBall and domain.p == p


class Solver(BaseSolver):
    name = "mklopt"
    parameters = {"method": dual_methods()}
    sampling_strategy = "callback"
    requirements = ["pip::mklopt"]

    def skip(self, bank, y, C, p, domain):
        method = build(self.method, p)
        solve(SVMDual(bank, y, C=C, tol=1e-2), method, stop=MaxOracleCalls(1))
        if not solves(method.domain, p):
            return True, f"{self.method} optimises over {method.domain!r}, not this objective's"
        return False, None

    def set_objective(self, bank, y, C, p, domain):
        self.bank, self.y, self.C, self.p, self.domain = bank, y, C, p, domain

    def warm_up(self):
        # numba loads (or compiles) what the runs use
        solve(SVMDual(self.bank, self.y, C=self.C, tol=INNER_TOL), build(self.method, self.p),
              stop=MaxOracleCalls(3))

    def run(self, cb):
        self.weights, self.lower, self.calls, best = self.domain.initial(), -math.inf, 0, math.inf
        if not cb():
            return

        def callback(row):
            nonlocal best
            if row.value <= best:
                best, self.weights = row.value, row.weights.copy()
            self.lower, self.calls = row.lower, row.n_oracle_calls
            return not cb()

        oracle = SVMDual(self.bank, self.y, C=self.C, tol=INNER_TOL)
        solve(oracle, build(self.method, self.p), stop=DualityGap(1e-6) | MaxOracleCalls(20000),
              callback=callback)

    def get_result(self):
        return dict(weights=self.weights, lower=self.lower, oracle_calls=self.calls)
