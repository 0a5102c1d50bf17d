"""One-vs-one pairs in parallel: satellite's 15 pairs serial, as joblib jobs and as Dask tasks.

Satellite (6 classes, UCI split, features standardised with the training
statistics); the 2,000 test points are scored. Two estimators:

* ``MKLClassifier`` on ``--per-class`` training points drawn per class
  (seed 0; every one of the 15 pairs has ``2 * per_class`` points) with the
  level-method paper's grid (13 kernels on all
  features and on each of the 36 single features: 481 kernels), Level,
  C = 100, relative gap 1e-2;
* ``MKBoostClassifier`` with its paper's 17 kernels, D1, ``--rounds``
  rounds, random_state 0, on ``--boost-per-class`` points per class
  (default: the whole training set, 4,435 points, pairs of 885-2,110);
  its pairs are cheap, so they need more points to outweigh dispatch.

Each is fitted three ways in the same run, in turn (serial, joblib, Dask,
serial, ...) so that other load on the machine hits all alike:

* **serial**: ``n_jobs=None``, one process (numba's parallel loops, such
  as the kernel build, and BLAS use both cores);
* **serial, 1 thread**: the same with numba and BLAS on one thread
  (threadpoolctl), as each worker below runs;
* **joblib**: ``n_jobs=2``, joblib's process backend (loky);
* **dask**: ``n_jobs=None`` inside ``joblib.parallel_backend("dask")`` with
  a ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``.

Every mode is warmed up first (imports and numba's cache in the workers).
Reported: the median wall time of ``fit`` over ``--repeats``, the speed-up
against serial from the same run, and whether the parallel models equal
the serial one: the largest relative difference of the weights against the
serial fit and against the one-thread serial fit (BLAS rounds as in the
workers), and whether the test predictions are the same.

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
    if per_class <= 0:
        return X, y
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
    elif mode == "serial, 1 thread":
        import numba
        from threadpoolctl import threadpool_limits

        old = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            with threadpool_limits(1):
                est.fit(X, y)
        finally:
            numba.set_num_threads(old)
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
    ap.add_argument(
        "--boost-per-class",
        type=int,
        default=0,
        help="training points per class for MKBoost (default 0: all 4,435)",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--storage",
        default="auto",
        help="kernel storage of both estimators (default: theirs, 'auto')",
    )
    ap.add_argument("--estimators", nargs="+", default=["mkl", "mkboost"])
    args = ap.parse_args(argv)

    X_tr, X_te, y_tr, y_te = datasets.load_split("satellite")
    data = {
        "mkl": subsample(X_tr, y_tr, args.per_class),
        "mkboost": subsample(X_tr, y_tr, args.boost_per_class),
    }
    makers = {
        "mkl": lambda: MKLClassifier(C=100.0, method="level", tol=1e-2, storage=args.storage),
        "mkboost": lambda: MKBoostClassifier(
            variant="D1", n_rounds=args.rounds, random_state=0, storage=args.storage
        ),
    }
    print(
        f"satellite: {data['mkl'][0].shape[0]} training points for MKL, "
        f"{data['mkboost'][0].shape[0]} for MKBoost; os.cpu_count() = {os.cpu_count()}, "
        f"load average {os.getloadavg()}",
        file=sys.stderr,
        flush=True,
    )
    cluster, client = start_cluster(args.workers)
    rows = []
    try:
        modes = ("serial", "serial, 1 thread", "joblib", "dask")
        for key in args.estimators:
            make = makers[key]
            X, y = data[key]
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
            # joblib's and Dask's workers run BLAS on one thread; the serial
            # fit with one thread too is the reference they must equal.
            ref1 = models["serial, 1 thread"]
            for mode in modes:
                est = models[mode]
                diff = float(np.abs(est.weights_ - ref.weights_).max() / np.abs(ref.weights_).max())
                diff1 = float(
                    np.abs(est.weights_ - ref1.weights_).max() / np.abs(ref1.weights_).max()
                )
                rows.append(
                    dict(
                        diff1=diff1,
                        estimator=type(ref).__name__,
                        mode=mode,
                        seconds=statistics.median(times[mode]),
                        all_times=times[mode],
                        speedup=statistics.median(times["serial"]) / statistics.median(times[mode]),
                        speedup1=statistics.median(times["serial, 1 thread"])
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
        "| vs serial, 1 thread "
        "| max rel. weight diff | same, 1 BLAS thread | same test labels | test accuracy |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['estimator']} | {r['mode']} | {r['seconds']:.2f} "
            f"| {', '.join(f'{t:.1f}' for t in r['all_times'])} "
            f"| {r['speedup']:.2f} | {r['speedup1']:.2f} "
            f"| {r['diff']:.1e} | {r['diff1']:.1e} | {'yes' if r['same_pred'] else 'no'} "
            f"| {100 * r['accuracy']:.1f} % |"
        )
    return rows


if __name__ == "__main__":
    main()
