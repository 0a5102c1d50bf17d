"""MKBoost rounds on numba's threads against serial rounds, in one run.

``MKBoostClassifier`` (D1, 100 rounds, its defaults otherwise) on the first
``--n`` rows of letter's training split, fitted with serial rounds
(``PARALLEL_ROUND_SECONDS`` set to infinity) and with the default rule
(rounds of 20 ms and more spread their SVMs over the threads), alternated
``--repeats`` times. Two kernel sets: the MKBoost paper's 17 kernels (the
default), and its 14 Gaussian widths alone, whose SVMs take similar
numbers of iterations. The models are the same either way; the table
gives the median fit times, the ratio, and the largest share of a round's
SMO iterations that one kernel's SVM took (a round cannot finish before
its longest SVM).

    python benchmarks/bench_parallel_rounds.py --n 2000 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numba
import numpy as np

import mklopt.oracles.weak_learners as wl
from mklopt import MKBoostClassifier, datasets
from mklopt.kernels import grid


def letter(n):
    X_tr, _, y_tr, _ = datasets.load_split("letter")
    return X_tr[:n], y_tr[:n]


def dominant_share(X, y, kernels):
    """Median over rounds of the largest share of a round's iterations one SVM took."""
    shares = []
    real = wl._run_round

    def spy(costs, *args):
        real(costs, *args)
        it = args[-2]
        shares.append(it.max() / max(1, it.sum()))

    wl._run_round = spy
    try:
        MKBoostClassifier(kernels=kernels, random_state=0).fit(X, y)
    finally:
        wl._run_round = real
    return statistics.median(shares)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    X, y = letter(args.n)
    specs = list(grid(X.shape[1], protocol="mkboost2013"))
    sets = {"17 kernels (default)": specs, "14 Gaussian widths": specs[:14]}
    warnings.simplefilter("ignore")
    default_limit = wl.PARALLEL_ROUND_SECONDS
    print(f"letter, first {args.n} training rows, numba threads: {numba.get_num_threads()}")
    print("| kernels | serial rounds s | default rule s | ratio | longest SVM's share of a round |")
    print("|---|---|---|---|---|")
    for label, kernels in sets.items():
        MKBoostClassifier(kernels=kernels, n_rounds=3, random_state=0).fit(X, y)  # compile
        times = {np.inf: [], default_limit: []}
        models = {}
        try:
            for _ in range(args.repeats):
                for limit in times:
                    wl.PARALLEL_ROUND_SECONDS = limit
                    t0 = time.perf_counter()
                    clf = MKBoostClassifier(kernels=kernels, random_state=0).fit(X, y)
                    times[limit].append(time.perf_counter() - t0)
                    models[limit] = clf.decision_function(X)
        finally:
            wl.PARALLEL_ROUND_SECONDS = default_limit
        assert np.array_equal(models[np.inf], models[default_limit]), "models differ"
        s = statistics.median(times[np.inf])
        p = statistics.median(times[default_limit])
        share = dominant_share(X, y, kernels)
        print(f"| {label} | {s:.2f} | {p:.2f} | {s / p:.2f} | {share:.0%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
