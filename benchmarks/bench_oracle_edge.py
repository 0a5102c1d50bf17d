"""What checking the kernel weights costs per oracle call, against the call itself.

Protocol: a seeded half of a bundled data set, features standardised, the
level-method grid (``13 (d + 1)`` kernels) in dense storage at unit trace,
``SVMDual(C=100, tol=1e-4)``, the level method run to a relative gap of
1e-2. The run's queries and warm starts are then replayed, and for each
query the same process times, interleaved:

* ``call``: one warm-started oracle call (what a method pays per query);
* ``edge``: the oracle's check of ``w`` as it is now, one check making the
  answer's one copy (``check_weights(w, m, copy=True)``);
* ``edge_before``: the same check followed by a second copy, as the oracle
  did before (``np.array(check_weights(w, m), dtype=float64)``);
* ``bank_check``: the check the bank's public verbs (``combine``, ``rows``,
  ``diag``) would repeat if the solver went through them rather than the
  storage's trusted verbs.

Every figure is the median over queries of the median of ``--repeats``
timings, numba warmed up first (one full run before timing). Ratios are
against ``call`` of the same run. Usage::

    python benchmarks/bench_oracle_edge.py [--data ionosphere] [--repeats 25] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mklopt import KernelBank, datasets, solve
from mklopt._validation import check_weights
from mklopt.kernels import grid
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter


def _median_time(f, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="ionosphere")
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    X, y = datasets.load(args.data)
    X, _, y, _ = datasets.split(X, y, seed=args.seed)
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    specs = grid(X.shape[1], protocol="level2008")
    bank = KernelBank.from_specs(X, specs, storage="dense", normalize="trace")
    m = bank.n_kernels

    def run():
        oracle = SVMDual(bank, y, C=100.0, tol=1e-4)
        return solve(oracle, LevelBundle(), stop=DualityGap(1e-2) | MaxIter(200))

    run()  # numba compiled and caches warm before anything is timed
    result = run()
    queries = [np.array(row.weights) for row in result.history]
    oracle = SVMDual(bank, y, C=100.0, tol=1e-4)
    warm = [None]
    for w in queries[:-1]:
        warm.append(oracle(w, warm_start=warm[-1]).alpha)

    rows = {"call": [], "edge": [], "edge_before": [], "bank_check": []}
    for w, a in zip(queries, warm, strict=True):
        rows["call"].append(_median_time(lambda w=w, a=a: oracle(w, warm_start=a), 3))
        rows["edge"].append(_median_time(lambda w=w: check_weights(w, m, copy=True),
                                         args.repeats))
        rows["edge_before"].append(_median_time(
            lambda w=w: np.array(check_weights(w, m), dtype=np.float64), args.repeats))
        rows["bank_check"].append(_median_time(lambda w=w: bank._weights(w), args.repeats))

    call = float(np.median(rows["call"]))
    print(f"{args.data}: n = {X.shape[0]}, m = {m} kernels, {len(queries)} oracle calls "
          "of the level run (shared machine)\n")
    print("| per call | median | ratio to the call |")
    print("|---|---|---|")
    for name, values in rows.items():
        t = float(np.median(values))
        print(f"| `{name}` | {t * 1e6:.1f} us | {t / call:.2e} |")


if __name__ == "__main__":
    main()
