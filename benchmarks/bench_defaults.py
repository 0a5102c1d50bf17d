"""Accuracy of the estimators with every default against SVC, on raw features.

For each data set and each of ``--splits`` seeded, stratified half splits of the
raw features (seed ``0..splits-1``), fits ``make_pipeline(StandardScaler(), SVC())``,
``MKLClassifier()`` and ``MKBoostClassifier(random_state=seed)`` on the raw
training features and reports the mean test accuracy, the majority-class rate
and the fit times. SVC is the reference measured in the same run.

    python benchmarks/bench_defaults.py                       # six binary sets
    python benchmarks/bench_defaults.py --data satellite --max-train 1000

``--max-train`` caps the training half (a seeded subsample) for the large
multiclass sets; the test half is kept whole.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mklopt import MKBoostClassifier, MKLClassifier, datasets

BINARY = datasets.PAPERS


def half_split(name, seed, max_train=None):
    """Raw (unstandardised) seeded half split of a bundled set."""
    X, y = datasets.load(name)
    rng = np.random.default_rng(seed)
    train = np.zeros(y.shape[0], dtype=bool)
    for c in np.unique(y):  # stratified: half of every class
        rows = rng.permutation(np.flatnonzero(y == c))
        train[rows[: rows.shape[0] // 2]] = True
    X_tr, X_te, y_tr, y_te = X[train], X[~train], y[train], y[~train]
    if max_train is not None and X_tr.shape[0] > max_train:
        keep = np.random.default_rng(seed).choice(X_tr.shape[0], max_train, replace=False)
        X_tr, y_tr = X_tr[keep], y_tr[keep]
    return X_tr, X_te, y_tr, y_te


def estimators(seed, **mkl_params):
    return {
        "svc": make_pipeline(StandardScaler(), SVC()),
        "mkl": MKLClassifier(**mkl_params),
        "mkboost": MKBoostClassifier(random_state=seed),
    }


def run(name, splits, max_train=None, only=None, **mkl_params):
    """Accuracies and fit seconds per estimator, one entry per split."""
    acc, secs, major = {}, {}, []
    for seed in range(splits):
        X_tr, X_te, y_tr, y_te = half_split(name, seed, max_train)
        _, counts = np.unique(y_te, return_counts=True)
        major.append(counts.max() / y_te.shape[0])
        for key, est in estimators(seed, **mkl_params).items():
            if only and key not in only:
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X_tr, y_tr)
            secs.setdefault(key, []).append(time.perf_counter() - t0)
            acc.setdefault(key, []).append(float(np.mean(est.predict(X_te) == y_te)))
    return acc, secs, float(np.mean(major))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=list(BINARY))
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--max-train", type=int, default=None)
    ap.add_argument("--only", nargs="+", default=None, choices=("svc", "mkl", "mkboost"))
    ap.add_argument("--normalize", default=None, help="MKLClassifier normalize (default: its own)")
    ap.add_argument("--C", type=float, default=None, help="MKLClassifier C (default: its own)")
    args = ap.parse_args()
    params = {}
    if args.normalize is not None:
        params["normalize"] = None if args.normalize == "none" else args.normalize
    if args.C is not None:
        params["C"] = args.C
    print(
        "| data | majority | SVC | MKLClassifier() | MKBoostClassifier() | fit s SVC/MKL/MKBoost |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.data:
        acc, secs, major = run(name, args.splits, args.max_train, args.only, **params)
        cells = [f"{np.mean(acc[k]):.3f}" if k in acc else "-" for k in ("svc", "mkl", "mkboost")]
        times = " / ".join(
            f"{np.median(secs[k]):.2f}" if k in secs else "-" for k in ("svc", "mkl", "mkboost")
        )
        print(f"| {name} | {major:.3f} | " + " | ".join(cells) + f" | {times} |", flush=True)


if __name__ == "__main__":
    main()
