"""MKBoost (D1, D2, S1, S2) beside L1-MKL under the MKBoost paper's protocol.

Xia & Hoi (2013), section 3.3: 17 kernels on all features (Gaussian widths
2^-6..2^7, polynomial degrees 1..3), C = 50, T = 100 boosting rounds,
sampling ratio 0.2, decay 2^-5, random half splits with the features
standardised by the training statistics. L1-MKL is the level method
(``MKLClassifier(method="level")``, relative duality gap 1e-2 or 500
iterations, unit-trace kernels as in the MKL toolboxes) on the same 17
kernels and the same C. Times are wall-clock seconds of ``fit`` (kernel
construction included, for every method alike); numba is compiled before
timing. Each split seeds the boosting draws with its own index. For the
MKBoost variants the table also gives the part of ``fit`` spent training
and evaluating the weak SVMs (``result_.extra["svm_seconds"]``); the rest
is the kernel build and the boosting loop around the rounds.

    python benchmarks/bench_mkboost.py                      # all data sets, 5 splits
    python benchmarks/bench_mkboost.py --datasets sonar --splits 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np

from mklopt import MKBoostClassifier, MKLClassifier, datasets
from mklopt.kernels import grid

METHODS = ("D1", "D2", "S1", "S2", "L1-MKL")


def make(method, n_features, seed, args):
    specs = list(grid(n_features, protocol="mkboost2013"))
    if method == "L1-MKL":
        return MKLClassifier(kernels=specs, method=args.mkl_method, C=args.C, normalize="trace")
    return MKBoostClassifier(
        kernels=specs,
        variant=method,
        n_rounds=args.rounds,
        sample_ratio=args.ratio,
        decay=args.decay,
        C=args.C,
        random_state=seed,
    )


def warm_up(args):
    """Compile the jitted code outside the timed region."""
    X, y = datasets.load("sonar")
    Xtr, _, ytr, _ = datasets.split(X[::3], y[::3], seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in METHODS:
            make(m, X.shape[1], 0, args).set_params(
                **({"max_iter": 3} if m == "L1-MKL" else {"n_rounds": 2})
            ).fit(Xtr, ytr)


def run(args):
    rows = []
    for name in args.datasets:
        X, y = datasets.load(name)
        for s in range(args.splits):
            Xtr, Xte, ytr, yte = datasets.split(X, y, seed=args.seed + s)
            for m in args.methods:
                clf = make(m, X.shape[1], args.seed + s, args)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    t0 = time.perf_counter()
                    clf.fit(Xtr, ytr)
                    seconds = time.perf_counter() - t0
                acc = float(clf.score(Xte, yte))
                if m == "L1-MKL":
                    extra = dict(
                        n_svm=int(clf.n_oracle_calls_),
                        n_iter=int(clf.n_iter_),
                        reason=clf.result_.reason,
                    )
                else:
                    extra = dict(
                        n_svm=int(clf.n_fits_),
                        n_iter=int(clf.n_iter_),
                        reason=clf.stop_reason_,
                        svm_seconds=float(clf.result_.extra["svm_seconds"]),
                        n_smo_iter=int(clf.result_.extra["n_solver_iter"]),
                    )
                row = dict(
                    dataset=name,
                    split=s,
                    method=m,
                    accuracy=acc,
                    seconds=seconds,
                    n_warnings=len(caught),
                    **extra,
                )
                rows.append(row)
                print(
                    f"{name:>10} split {s:2d} {m:>6}: acc {acc:.4f}  {seconds:7.3f}s  "
                    f"{row['n_svm']:5d} SVMs  {row['n_iter']:4d} it  {row['reason']}",
                    file=sys.stderr,
                    flush=True,
                )
    return rows


def _cell_acc(v):
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.mean(v):.4f} ± {sd:.4f}"


def _cell_time(v):
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return f"{statistics.median(v):.3f} ({statistics.mean(v):.3f} ± {sd:.3f})"


def table(rows, methods, names):
    by = {}
    for r in rows:
        by.setdefault((r["dataset"], r["method"]), []).append(r)
    head = "| data set | metric | " + " | ".join(methods) + " |"
    sep = "|---|---|" + "---|" * len(methods)
    out = [head, sep]

    def cells(name, f):
        return [f(by.get((name, m), [])) for m in methods]

    for name in names:
        out.append(
            f"| {name} | accuracy | "
            + " | ".join(
                cells(name, lambda rs: _cell_acc([r["accuracy"] for r in rs]) if rs else "")
            )
            + " |"
        )
        out.append(
            "|  | time s, median (mean ± std) | "
            + " | ".join(
                cells(name, lambda rs: _cell_time([r["seconds"] for r in rs]) if rs else "")
            )
            + " |"
        )
        out.append(
            "|  | SVMs trained (mean) | "
            + " | ".join(
                cells(
                    name, lambda rs: f"{statistics.mean(r['n_svm'] for r in rs):.0f}" if rs else ""
                )
            )
            + " |"
        )
        out.append(
            "|  | of which training the weak SVMs, s (median) | "
            + " | ".join(
                cells(
                    name,
                    lambda rs: f"{statistics.median(r['svm_seconds'] for r in rs):.3f}"
                    if rs and "svm_seconds" in rs[0]
                    else "",
                )
            )
            + " |"
        )
    return "\n".join(out)


def ratios(rows, names):
    """Per data set: median time ratios and mean accuracy differences."""
    med = {}
    acc = {}
    for r in rows:
        med.setdefault((r["dataset"], r["method"]), []).append(r["seconds"])
        acc.setdefault((r["dataset"], r["method"]), []).append(r["accuracy"])
    lines = [
        "| data set | L1-MKL / D1 time | L1-MKL / D2 time | S1 / D1 time | S2 / D2 time "
        "| S1 - D1 acc | S2 - D2 acc | best MKBoost - L1-MKL acc |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def t(n, m):
        return statistics.median(med[(n, m)]) if (n, m) in med else float("nan")

    def a(n, m):
        return statistics.mean(acc[(n, m)]) if (n, m) in acc else float("nan")

    for n in names:
        best = max(a(n, m) for m in ("D1", "D2", "S1", "S2"))
        lines.append(
            f"| {n} | {t(n, 'L1-MKL') / t(n, 'D1'):.1f} | {t(n, 'L1-MKL') / t(n, 'D2'):.1f} "
            f"| {t(n, 'S1') / t(n, 'D1'):.2f} | {t(n, 'S2') / t(n, 'D2'):.2f} "
            f"| {a(n, 'S1') - a(n, 'D1'):+.4f} | {a(n, 'S2') - a(n, 'D2'):+.4f} "
            f"| {best - a(n, 'L1-MKL'):+.4f} |"
        )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the papers' six sets (datasets.names() also lists larger and non-binary ones)
    ap.add_argument("--datasets", nargs="+", default=list(datasets.PAPERS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--ratio", type=float, default=0.2)
    ap.add_argument("--decay", type=float, default=2.0**-5)
    ap.add_argument("--C", type=float, default=50.0)
    ap.add_argument("--mkl-method", default="level", help="outer method of the L1-MKL baseline")
    ap.add_argument("--out", default=None, help="directory for runs.json and table.md")
    args = ap.parse_args(argv)
    if args.splits < 1:
        ap.error("--splits must be >= 1")

    warm_up(args)
    rows = run(args)
    main_table = table(rows, args.methods, args.datasets)
    print(main_table)
    if set(METHODS) <= set(args.methods):
        print()
        print(ratios(rows, args.datasets))
    warned = sum(r["n_warnings"] > 0 for r in rows)
    if warned:
        print(f"\n{warned} of {len(rows)} fits issued warnings", file=sys.stderr)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "runs.json"), "w") as fh:
            json.dump(rows, fh, indent=1)
        with open(os.path.join(args.out, "table.md"), "w") as fh:
            fh.write(main_table + "\n")
    return rows


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
