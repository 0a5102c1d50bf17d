"""Record the golden runs checked by ``test_golden.py`` (run deliberately).

    python -m tests.regression.record

For every bundled data set, split 0 of the level paper's protocol (C = 100),
the level method is run to a relative duality gap of 1e-3 with an inner
tolerance of 1e-6, and its certified bounds on the L1-MKL optimum are
written to ``recorded.csv``: ``lower <= J* <= value``.
"""

import csv
from pathlib import Path

from mklopt import KernelBank, datasets, kernels, solve
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter

HERE = Path(__file__).parent
C, TOL, INNER_TOL = 100.0, 1e-3, 1e-6


def golden_run(name, method=None, seed=0, tol=TOL, max_iter=2000):
    X, y = datasets.load(name)
    X_tr, _, y_tr, _ = datasets.split(X, y, seed=seed)
    bank = KernelBank.from_specs(X_tr, kernels.grid(X_tr.shape[1]))
    oracle = SVMDual(bank, y_tr, C=C, tol=INNER_TOL)
    return solve(oracle, method or LevelBundle(), stop=DualityGap(tol) | MaxIter(max_iter))


def main():
    rows = []
    for name in datasets.names():
        res = golden_run(name)
        rows.append(dict(dataset=name, seed=0, value=repr(res.value),
                         lower=repr(res.value - res.gap), rel_gap=f"{res.rel_gap:.3e}"))
        print(rows[-1])
    with open(HERE / "recorded.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
