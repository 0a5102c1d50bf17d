"""Grouped mirror descent: oracle calls to the first settled point, with and without extrapolation.

At each ``lam`` the grouped method alternates the SVM and the gamma step
until gamma settles (``inner_tol``); only settled points are certified.
The alternation is a linearly contracting fixed-point iteration, which
``MirrorDescent._next_gamma`` extrapolates along its steps. This script
runs ``MirrorDescent(groups=...)`` on random grouped
``SmoothQuadraticOracle`` problems for a fixed budget of oracle calls,
once with the extrapolation and once without it (its factor cap set to
0, the plain alternation), and reports the call of the first settled
(certified) point and the relative gap at the end. Counts, not times:
the figures do not depend on the machine.

    python benchmarks/bench_mirror_settle.py --problems 150 --calls 300
    python benchmarks/bench_mirror_settle.py --data ionosphere sonar

``--data`` fits ``MKLClassifier(kernels="grid", method="mirror",
groups="features", tol=1e-2)`` on a stratified half of each bundled set
instead, both ways alternated twice: oracle calls, seconds and test accuracy.
"""

import argparse
import time
import warnings

import numpy as np

import mklopt.methods.mirror_descent as md
from mklopt import solve
from mklopt.methods import MirrorDescent
from mklopt.stopping import MaxOracleCalls
from mklopt.testing import SmoothQuadraticOracle


def problems(n):
    rng = np.random.default_rng(0)
    for seed in range(n):
        m = int(rng.integers(2, 9))
        labels = rng.integers(0, max(2, m // 2), m)
        groups = [np.flatnonzero(labels == g).tolist() for g in np.unique(labels)]
        if len(groups) >= 2:
            yield SmoothQuadraticOracle.random(m, dim=4, seed=seed), groups


def run(oracle, groups, calls):
    rows = []
    res = solve(oracle, MirrorDescent(groups=groups), stop=MaxOracleCalls(calls),
                callback=rows.append)
    first = next((p.n_oracle_calls for p in rows if np.isfinite(p.gap)), np.inf)
    return first, res.rel_gap


def estimator_runs(names):
    from sklearn.model_selection import train_test_split

    from mklopt import MKLClassifier, datasets

    cap = md._MAX_EXTRAPOLATION
    print("| data | gamma/SVM alternation | oracle calls | fit s (two runs) | test accuracy |")
    print("|---|---|---|---|---|")
    for name in names:
        X, y = datasets.load(name)
        Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=0.5, random_state=0, stratify=y)
        runs = {"plain alternation": [], "extrapolated": []}
        for _ in range(2):
            for label, factor in (("plain alternation", 0.0), ("extrapolated", cap)):
                md._MAX_EXTRAPOLATION = factor
                clf = MKLClassifier(kernels="grid", method="mirror", groups="features", tol=1e-2,
                                    max_iter=2000)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(Xtr, ytr)
                runs[label].append((time.perf_counter() - t0, clf.n_oracle_calls_,
                                    clf.score(Xte, yte)))
        md._MAX_EXTRAPOLATION = cap
        for label, r in runs.items():
            print(f"| {name} | {label} | {r[-1][1]} | {', '.join(f'{t:.2f}' for t, _, _ in r)} "
                  f"| {r[-1][2]:.4f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=150)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--data", nargs="+", default=None,
                    help="bundled sets to fit the estimator on instead (see the module notes)")
    args = ap.parse_args()
    if args.data:
        estimator_runs(args.data)
        return
    cap = md._MAX_EXTRAPOLATION
    out = {}
    for label, factor in (("plain alternation", 0.0), ("extrapolated", cap)):
        md._MAX_EXTRAPOLATION = factor
        out[label] = np.array([run(o, g, args.calls) for o, g in problems(args.problems)])
    md._MAX_EXTRAPOLATION = cap
    print(f"| gamma/SVM alternation | problems | first settled call: median / max | "
          f"rel. gap after {args.calls} calls: median / 90th percentile |")
    print("|---|---|---|---|")
    for label, a in out.items():
        print(f"| {label} | {len(a)} | {np.median(a[:, 0]):.0f} / {a[:, 0].max():.0f} | "
              f"{np.median(a[:, 1]):.2e} / {np.quantile(a[:, 1], 0.9):.2e} |")
    plain, ext = out["plain alternation"][:, 1], out["extrapolated"][:, 1]
    print(f"\nextrapolated gap at least 1.5x smaller: {int(np.sum(ext < plain / 1.5))}, "
          f"at least 1.5x larger: {int(np.sum(ext > 1.5 * plain))}")


if __name__ == "__main__":
    main()
