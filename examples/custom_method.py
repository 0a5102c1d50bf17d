"""A new outer method in one file, run by the generic driver.

Frank-Wolfe (conditional gradient) on the simplex: step towards the vertex of
the largest q_k. The base class keeps the best point and the driver certifies
it with the L1 duality gap, so nothing else is needed.
"""

from dataclasses import dataclass

import numpy as np

import mklopt
from mklopt import datasets, kernels
from mklopt.domains import Simplex
from mklopt.methods import MethodBase, register
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter


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

    def _start(self, oracle):
        if not self.step_power > 0:
            raise ValueError(f"step_power must be > 0, got {self.step_power!r}")
        self.domain = Simplex(oracle.n_kernels)
        return _State(w=self.domain.initial())

    def _ask(self, s):
        return s.w

    def _tell(self, s, w, answer):
        self._offer(w, answer)
        vertex = np.zeros_like(s.w)
        vertex[np.argmax(answer.q)] = 1.0
        eta = 2.0 / (s.t + 2.0) ** self.step_power
        s.w = (1.0 - eta) * s.w + eta * vertex
        s.t += 1


def main():
    X, y = datasets.load("sonar")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, seed=0)
    bank = mklopt.KernelBank.from_specs(X_tr, kernels.grid(X_tr.shape[1], protocol="mkboost2013"))
    for method in (FrankWolfe(), mklopt.methods.LevelBundle()):
        oracle = SVMDual(bank, y_tr, C=100.0)
        res = mklopt.solve(oracle, method, stop=DualityGap(1e-2) | MaxIter(300))
        print(f"{type(method).__name__:>12}: J = {res.value:.3f}, relative gap {res.rel_gap:.2e}, "
              f"{res.n_oracle_calls} SVM calls, {res.reason}")


if __name__ == "__main__":
    main()
