"""A new outer method, twice: from the protocol alone, and on MethodBase.

Frank-Wolfe (conditional gradient) on the simplex: step towards the vertex of
the largest q_k. The first version implements the five members of
``mklopt.OuterMethod`` itself and certifies its best point with the simplex's
duality gap; the second writes three hooks on ``MethodBase``, which keeps the
best point and its gap. Both run under the same driver, next to the level
method.
"""

import math
from dataclasses import dataclass

import numpy as np

import mklopt
from mklopt import MethodReport, datasets, kernels
from mklopt.domains import Simplex
from mklopt.methods import MethodBase, register
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter


class ProtocolFrankWolfe:
    """Frank-Wolfe written from the ``OuterMethod`` protocol alone (no base class)."""

    def start(self, oracle):
        self.domain = Simplex(oracle.n_kernels)
        self.w = self.domain.initial()
        self.t = 0
        self.best, self.best_w, self.dual = None, None, -math.inf

    def ask(self):
        return self.w

    def tell(self, w, answer):
        if self.best is None or answer.value < self.best.value:
            self.best, self.best_w = answer, np.array(w)
        self.dual = max(self.dual, self.domain.dual_value(answer))
        vertex = np.zeros_like(self.w)
        vertex[np.argmax(answer.q)] = 1.0
        eta = 2.0 / (self.t + 2.0)
        self.w = (1.0 - eta) * self.w + eta * vertex
        self.t += 1

    def report(self):
        gap = math.nan if self.best is None else self.domain.gap(self.best_w, self.best)
        return MethodReport(best=self.best, weights=self.best_w, gap=gap,
                            lower=self.dual, n_iter=self.t)

    def extra(self):
        return {}


@dataclass
class _State:
    w: np.ndarray
    t: int = 0


@register("frank_wolfe")
class FrankWolfe(MethodBase):
    """Conditional-gradient steps towards the vertex of the largest q_k.

    Parameters
    ----------
    step_power : float, default=1.0
        Step ``eta_t = 2 / (t + 2) ** step_power``.
    """

    def __init__(self, step_power=1.0):
        self.step_power = step_power

    def check_params(self, n_kernels=None):
        if not self.step_power > 0:
            raise ValueError(f"step_power must be > 0, got {self.step_power!r}")

    def _start(self, oracle):
        domain = Simplex(oracle.n_kernels)
        return domain, _State(w=domain.initial())

    def _ask(self, s):
        return s.w

    def _tell(self, s, w, answer):
        vertex = np.zeros_like(s.w)
        vertex[np.argmax(answer.q)] = 1.0
        eta = 2.0 / (s.t + 2.0) ** self.step_power
        s.w = (1.0 - eta) * s.w + eta * vertex
        s.t += 1


def main():
    X, y = datasets.load("sonar")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, seed=0)
    bank = mklopt.KernelBank.from_specs(X_tr, kernels.grid(X_tr.shape[1], protocol="mkboost2013"))
    for method in (ProtocolFrankWolfe(), FrankWolfe(), mklopt.methods.LevelBundle()):
        oracle = SVMDual(bank, y_tr, C=100.0)
        res = mklopt.solve(oracle, method, stop=DualityGap(1e-2) | MaxIter(300))
        print(f"{type(method).__name__:>18}: J = {res.value:.3f}, relative gap {res.rel_gap:.2e}, "
              f"{res.n_oracle_calls} SVM calls, {res.reason}")


if __name__ == "__main__":
    main()
