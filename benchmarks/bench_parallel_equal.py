"""Parallel fits against the serial fit, on satellite's half split: are they the same model?

    python benchmarks/bench_parallel_equal.py            # C = 100, defaults otherwise

``MKLClassifier(C=C)`` with every other default is fitted on satellite's
half split (``datasets.split(X, y, 0.5, seed=0)``) three ways in one
process: serial, ``n_jobs=2`` (joblib's process backend) and ``n_jobs=-1``
inside ``joblib.parallel_backend("dask")`` on a two-worker
``LocalCluster``. Printed per way: the fit's wall time, the largest
absolute difference of the kernel weights and of the decision values on
the test half from the serial model's, and the share of test points
predicted differently. The same model bit for bit shows as 0 everywhere.
"""

from __future__ import annotations

import argparse
import time

import joblib
import numpy as np

from mklopt import MKLClassifier, datasets


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--C", type=float, default=100.0)
    args = ap.parse_args()
    X, y = datasets.load("satellite")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=0)
    runs = {}
    t0 = time.perf_counter()
    runs["serial"] = (MKLClassifier(C=args.C).fit(X_tr, y_tr), time.perf_counter() - t0)
    t0 = time.perf_counter()
    runs["n_jobs=2"] = (MKLClassifier(C=args.C, n_jobs=2).fit(X_tr, y_tr),
                        time.perf_counter() - t0)
    try:
        import distributed
    except ImportError:
        distributed = None
    if distributed is not None:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            t0 = time.perf_counter()
            with joblib.parallel_backend("dask"):
                est = MKLClassifier(C=args.C, n_jobs=-1).fit(X_tr, y_tr)
            runs["dask"] = (est, time.perf_counter() - t0)
    ref = runs["serial"][0]
    d_ref = ref.decision_function(X_te)
    print(f"satellite, half split: {X_tr.shape[0]} train, {X_te.shape[0]} test, C={args.C:g}")
    print("| fit | seconds | max |dw| | max |d decision| | test predictions differing |")
    print("|---|---|---|---|---|")
    for name, (est, secs) in runs.items():
        dw = float(np.abs(np.asarray(est.weights_) - np.asarray(ref.weights_)).max())
        dd = float(np.abs(est.decision_function(X_te) - d_ref).max())
        diff = float(np.mean(est.predict(X_te) != ref.predict(X_te)))
        print(f"| {name} | {secs:.2f} | {dw:.3g} | {dd:.3g} | {100 * diff:.2f} % |")


if __name__ == "__main__":
    main()
