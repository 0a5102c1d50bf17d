"""Time per weak SVM of an MKBoost round against one bare SMO solve of the same size.

On each bundled data set (half split, seed 0, standardised): the MKBoost
paper's 17 kernels (``grid(d, "mkboost2013")``, no normalisation as in
``MKBoostClassifier``), C = 50, tol = 1e-3, samples of ``0.2 N`` training
points drawn with replacement (seeded). Measured in the same run:

* **round**: ``WeakLearners(bank, y)(query)`` for all 17 kernels: the
  kernel block request, the 17 SVMs in one jitted call and their decision
  values on all ``N`` training points, divided by 17;
* **bare SMO**: :func:`mklopt._jit.smo.smo_solve` from ``alpha = 0`` on the
  same 17 precomputed ``0.2 N x 0.2 N`` blocks, one call each, averaged
  over the kernels.

Each figure is the median over ``--samples`` samples x ``--repeats``
repeats.

    python benchmarks/bench_weak_svms.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from mklopt import KernelBank, datasets
from mklopt._jit.smo import smo_solve
from mklopt.kernels import grid
from mklopt.oracles import WeakLearners
from mklopt.oracles.weak_learners import BoostQuery

#: A stop flag that is never set (see mklopt._interrupt).
GO = np.zeros(1, dtype=np.int64)


def measure(name, args):
    X, y = datasets.load(name)
    Xtr, _, ytr, _ = datasets.split(X, y, seed=0)
    ytr = np.where(ytr == np.unique(ytr)[1], 1.0, -1.0)
    bank = KernelBank.from_specs(Xtr, grid(Xtr.shape[1], "mkboost2013"), normalize=None)
    oracle = WeakLearners(bank, ytr, C=args.C, tol=args.tol)
    N, m = bank.n_samples, bank.n_kernels
    s = max(2, int(round(0.2 * N)))
    rng = np.random.default_rng(0)
    budget = max(100_000, 100 * s)
    rounds, bares, iters = [], [], []
    for _ in range(args.samples):
        sample = rng.choice(N, size=s, replace=True)
        query = BoostQuery.make(sample, np.arange(m))
        blocks = [np.ascontiguousarray(bank.K[k][np.ix_(sample, sample)]) for k in range(m)]
        ys = np.ascontiguousarray(ytr[sample])
        ident = np.arange(s)
        upper = np.full(s, args.C)
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            ans = oracle(query)
            rounds.append((time.perf_counter() - t0) / m)
            per = []
            for Ks in blocks:
                a, g = np.zeros(s), np.full(s, -1.0)
                t0 = time.perf_counter()
                smo_solve(Ks, ident, ys, upper, a, g, args.tol, budget, True, GO)
                per.append(time.perf_counter() - t0)
            bares.append(sum(per) / m)
        iters.append(ans.n_solver_iter / m)
    r, b = statistics.median(rounds), statistics.median(bares)
    return dict(name=name, n=N, s=s, iters=statistics.mean(iters), round=r, bare=b)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the papers' six sets (datasets.names() also lists letter, shuttle,
    # satellite and diabetes, whose dense 17-kernel banks do not fit)
    ap.add_argument("--datasets", nargs="+", default=list(datasets.PAPERS))
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--C", type=float, default=50.0)
    ap.add_argument("--tol", type=float, default=1e-3)
    args = ap.parse_args(argv)
    # compile outside the timed region
    warm = argparse.Namespace(**{**vars(args), "samples": 1, "repeats": 1})
    measure("sonar", warm)
    print(
        "| data set | N | sample | SMO iterations / SVM | round, us / SVM | bare SMO, us "
        "| round / bare |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = []
    for name in args.datasets:
        r = measure(name, args)
        rows.append(r)
        print(
            f"| {name} | {r['n']} | {r['s']} | {r['iters']:.0f} | {r['round'] * 1e6:.1f} "
            f"| {r['bare'] * 1e6:.1f} | {r['round'] / r['bare']:.2f} |",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()
