"""One-vs-one pairs in parallel: satellite's 15 pairs serial, as joblib jobs and as Dask tasks.

Satellite (6 classes, UCI split, features standardised with the training
statistics), ``--per-class`` training points drawn per class (seed 0), so
every one of the 15 one-vs-one problems has ``2 * per_class`` points; the
2,000 test points are scored. Two estimators:

* ``MKLClassifier`` with the level-method paper's grid (13 kernels on all
  features and on each of the 36 single features: 481 kernels), Level,
  C = 100, relative gap 1e-2;
* ``MKBoostClassifier`` with its paper's 17 kernels, D1, ``--rounds``
  rounds, random_state 0.

Each is fitted three ways in the same run, in turn (serial, joblib, Dask,
serial, ...) so that other load on the machine hits all alike:

* **serial**: ``n_jobs=None``, one process (numba may use both cores);
* **joblib**: ``n_jobs=2``, joblib's process backend (loky);
* **dask**: ``n_jobs=None`` inside ``joblib.parallel_backend("dask")`` with
  a ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``.

Every mode is warmed up first (imports and numba's cache in the workers).
Reported: the median wall time of ``fit`` over ``--repeats``, the speed-up
against serial from the same run, and whether the parallel models equal
the serial one (largest relative difference of the weights and the same
test predictions).

    python benchmarks/bench_parallel_fits.py --per-class 150 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import mklopt
from mklopt import MKBoostClassifier, MKLClassifier, datasets


def subsample(X, y, per_class, seed=0):
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in np.unique(y)]
    )
    return X[idx], y[idx]


def start_cluster(n_workers):
    from distributed import Client, LocalCluster

    root = str(Path(mklopt.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        silence_logs=50,
    )
    return cluster, Client(cluster)


def fit(make, mode, X, y, n_jobs):
    import joblib

    est = make()
    t0 = time.perf_counter()
    if mode == "serial":
        est.fit(X, y)
    elif mode == "joblib":
        est.set_params(n_jobs=n_jobs).fit(X, y)
    else:
        with joblib.parallel_backend("dask"):
            est.fit(X, y)
    return time.perf_counter() - t0, est


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--estimators", nargs="+", default=["mkl", "mkboost"])
    args = ap.parse_args(argv)

    X_tr, X_te, y_tr, y_te = datasets.load_split("satellite")
    X, y = subsample(X_tr, y_tr, args.per_class)
    makers = {
        "mkl": lambda: MKLClassifier(C=100.0, method="level", tol=1e-2, storage="dense"),
        "mkboost": lambda: MKBoostClassifier(
            variant="D1", n_rounds=args.rounds, random_state=0, storage="dense"
        ),
    }
    print(
        f"satellite: {X.shape[0]} training points ({args.per_class} per class), "
        f"{len(np.unique(y))} classes; os.cpu_count() = {os.cpu_count()}, "
        f"load average {os.getloadavg()}",
        file=sys.stderr,
        flush=True,
    )
    cluster, client = start_cluster(args.workers)
    rows = []
    try:
        modes = ("serial", "joblib", "dask")
        for key in args.estimators:
            make = makers[key]
            small = subsample(X, y, 10, seed=1)
            for mode in modes:  # warm up: imports, numba cache, worker start
                fit(make, mode, *small, args.workers)
            times = {m: [] for m in modes}
            models = {}
            for r in range(args.repeats):
                for mode in modes:
                    t, est = fit(make, mode, X, y, args.workers)
                    times[mode].append(t)
                    models[mode] = est
                    print(f"  {key} {mode} repeat {r}: {t:.2f} s", file=sys.stderr, flush=True)
            ref = models["serial"]
            pred = ref.predict(X_te)
            for mode in modes:
                est = models[mode]
                diff = float(
                    np.abs(est.weights_ - ref.weights_).max() / np.abs(ref.weights_).max()
                )
                rows.append(
                    dict(
                        estimator=type(ref).__name__,
                        mode=mode,
                        seconds=statistics.median(times[mode]),
                        all_times=times[mode],
                        speedup=statistics.median(times["serial"])
                        / statistics.median(times[mode]),
                        diff=diff,
                        same_pred=bool(np.array_equal(est.predict(X_te), pred)),
                        accuracy=float(np.mean(est.predict(X_te) == y_te)),
                    )
                )
    finally:
        client.close()
        cluster.close()
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)
    print(
        "| estimator | mode | fit s (median) | all repeats s | speed-up vs serial "
        "| max rel. weight diff | same test labels | test accuracy |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['estimator']} | {r['mode']} | {r['seconds']:.2f} "
            f"| {', '.join(f'{t:.1f}' for t in r['all_times'])} | {r['speedup']:.2f} "
            f"| {r['diff']:.1e} | {'yes' if r['same_pred'] else 'no'} "
            f"| {100 * r['accuracy']:.1f} % |"
        )
    return rows


if __name__ == "__main__":
    main()
