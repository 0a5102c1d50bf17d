"""Shared kernel weights for all one-vs-one pairs against per-pair weights and SVC.

``MKLClassifier(multiclass="shared")`` (one weight vector ``w`` minimising
the sum of the pairs' MKL objectives) beside ``MKLClassifier()`` (one
weight vector per pair, ``multiclass="ovo"``) and
``make_pipeline(StandardScaler(), SVC())``, all with their defaults on the
same stratified 50 % split, in the same process (numba warmed up on a small
fit first). Reports test accuracy, the median fit time over ``--repeats``
fits, its ratio to SVC's, and the shared weight vector's largest entries.

    python benchmarks/bench_shared.py --repeats 3
    python benchmarks/bench_shared.py --sets digits --repeats 1   # quick

Satellite's training half (3,217 points) is subsampled to
``--satellite-train`` points (default 1,500, stratified) so that the per-pair
fits take seconds, not minutes.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mklopt import MKLClassifier, datasets


def load(name, n_train=None, seed=0):
    """50 % stratified split; the training half optionally cut to ``n_train`` points."""
    if name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = datasets.load(name)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
    if n_train is not None and n_train < len(ytr):
        Xtr, _, ytr, _ = train_test_split(Xtr, ytr, train_size=n_train, stratify=ytr,
                                          random_state=seed)
    return Xtr, Xte, ytr, yte


def models():
    return {
        "MKL shared": lambda: MKLClassifier(multiclass="shared"),
        "MKL ovo": lambda: MKLClassifier(),
        "SVC": lambda: make_pipeline(StandardScaler(), SVC()),
    }


def top_kernels(clf, k=4):
    w = np.asarray(clf.weights_)
    order = np.argsort(-w)[:k]
    return ", ".join(f"{clf.kernel_specs_[i]!r}: {w[i]:.2f}" for i in order if w[i] > 0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=["digits", "satellite"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--satellite-train", type=int, default=1500)
    args = ap.parse_args(argv)

    # Warm numba up (compilation would otherwise land in the first fit).
    Xw, _, yw, _ = load("digits", n_train=200)
    MKLClassifier(multiclass="shared").fit(Xw, yw)
    MKLClassifier().fit(Xw, yw)

    print("| data (n_train, classes) | model | accuracy | fit time (median) | ratio to SVC |"
          " gap | oracle calls |")
    print("|---|---|---|---|---|---|---|")
    weights = []
    for name in args.sets:
        n_train = args.satellite_train if name == "satellite" else None
        Xtr, Xte, ytr, yte = load(name, n_train)
        rows = {}
        for label, make in models().items():
            times = []
            for _ in range(args.repeats):
                clf = make()
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(Xtr, ytr)
                times.append(time.perf_counter() - t0)
            rows[label] = (clf, float(np.median(times)), clf.score(Xte, yte))
        t_svc = rows["SVC"][1]
        for label, (clf, t, acc) in rows.items():
            if label == "SVC":
                gap = calls = "-"
            else:
                g, c = np.atleast_1d(clf.gap_), np.atleast_1d(clf.n_oracle_calls_)
                gap = f"{g.max():.1e}" + ("" if g.size == 1 else " (max)")
                calls = f"{c.sum()}" + ("" if c.size == 1 else f" ({c.size} runs)")
            print(f"| {name} ({len(ytr)}, {len(np.unique(ytr))}) | {label} | {acc:.3f} | "
                  f"{t:.2f} s | {t / t_svc:.1f} | {gap} | {calls} |")
        shared = rows["MKL shared"][0]
        ovo = rows["MKL ovo"][0]
        n_used = int(np.sum(shared.weights_ > 1e-6 * shared.weights_.max()))
        per_pair = np.sum(ovo.weights_ > 1e-6 * ovo.weights_.max(axis=1, keepdims=True), axis=1)
        weights.append(
            f"{name}: shared weights use {n_used} of {shared.n_kernels_} kernels "
            f"({top_kernels(shared)}); per-pair weights use {per_pair.min()}-{per_pair.max()} "
            f"kernels, {int(np.sum(ovo.weights_.max(axis=0) > 1e-6))} distinct over "
            f"{len(ovo.pairs_)} pairs"
        )
    print()
    for line in weights:
        print(line)


if __name__ == "__main__":
    main()
