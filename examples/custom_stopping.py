"""Stopping criteria: built-in ones combined with | and &, and a user's own.

A criterion is any callable on a Progress row; here the run stops when the
relative gap has not improved by 10 % over the last 10 oracle calls, or at
the usual gap / iteration limits.
"""

from collections import deque

import mklopt
from mklopt import datasets, kernels
from mklopt.methods import Subgradient
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter, TimeLimit


class Stalled:
    """Stop when rel_gap improved by less than `factor` over `window` iterations.

    The criterion sees one Progress row per oracle call; a method may call
    the oracle several times per iteration (SimpleMKL's line search), so the
    gap is recorded once per outer iteration.
    """

    __name__ = "stalled"

    def __init__(self, window=10, factor=0.9):
        self.window, self.factor = window, factor
        self.gaps = deque(maxlen=window + 1)
        self.iteration = None

    def __call__(self, progress):
        if progress.iteration != self.iteration:
            self.iteration = progress.iteration
            self.gaps.append(progress.rel_gap)
        return len(self.gaps) > self.window and self.gaps[-1] > self.factor * self.gaps[0]


def main():
    X, y = datasets.load("breast")
    X_tr, _, y_tr, _ = datasets.split(X, y, seed=1)
    bank = mklopt.KernelBank.from_specs(X_tr, kernels.grid(X_tr.shape[1], protocol="mkboost2013"))
    oracle = SVMDual(bank, y_tr, C=100.0)
    rows = []
    stop = DualityGap(1e-3) | Stalled() | MaxIter(100) | TimeLimit(30)
    res = mklopt.solve(oracle, Subgradient(), stop=stop, callback=rows.append)
    for p in rows[:: max(1, len(rows) // 8)]:
        print(f"call {p.n_oracle_calls:4d}  iteration {p.iteration:3d}  J {p.value:9.3f}  "
              f"relative gap {p.rel_gap:.2e}")
    print(f"stopped by {res.reason!r} (converged: {res.converged}) after "
          f"{res.n_oracle_calls} SVM calls; relative gap {res.rel_gap:.2e}")


if __name__ == "__main__":
    main()
