"""A dense bank larger than one worker, sharded under the workers' memory limits.

letter (standardised, the first ``n`` points, its two classes as given),
the estimators' 17 default kernels (``grid(16, protocol="mkboost2013")``)
on each of ``--halves`` disjoint feature subsets (two by default: features
0-7 and 8-15, so two feature groups; kernels of one group share their
distance evaluation and are never split between shards). Level method to a
relative gap of 1e-2, C = 10, SVM tolerance 1e-3.

* **sharded dense**: ``LocalCluster(n_workers=2, threads_per_worker=1,
  memory_limit=--limit)``, ``storage="dense"``; build and fit time, and the
  peak resident memory of each worker process (``ru_maxrss``).
* **one process, on the fly**: the same fit with ``storage="on_the_fly"``
  in a fresh process (numba threads on all cores); its time and peak
  resident memory.

    python benchmarks/bench_dask_memory.py --n 3200 --limit 2.5e9
    python benchmarks/bench_dask_memory.py --n 8000 --halves 1 --limit 6e9   # refused
    python benchmarks/bench_dask_memory.py --n 8000 --halves 1 --limit 6e9 --dtype float32
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mklopt import KernelBank, datasets, solve
from mklopt.kernels import grid, poly, rbf
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter

GiB = 2.0**30


def problem(n, halves):
    X, y = datasets.load("letter")
    X, y = X[:n], np.asarray(y[:n], dtype=np.float64)
    X = (X - X.mean(0)) / X.std(0)
    d = X.shape[1]
    specs = []
    for part in np.array_split(np.arange(d), halves):
        feats = part.tolist() if halves > 1 else None
        for s in grid(d, protocol="mkboost2013"):
            specs.append(rbf(s.sigma, feats) if hasattr(s, "sigma") else poly(s.degree, feats))
    return X, y, specs


def fit(bank, y):
    t = time.perf_counter()
    r = solve(SVMDual(bank, y, C=10.0, tol=1e-3), LevelBundle(),
              stop=DualityGap(1e-2) | MaxIter(200))
    return r, time.perf_counter() - t


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0


def single(n, halves):
    X, y, specs = problem(n, halves)
    t = time.perf_counter()
    bank = KernelBank.from_specs(X, specs, storage="on_the_fly")
    build = time.perf_counter() - t
    r, secs = fit(bank, y)
    print(json.dumps({"build": build, "fit": secs, "calls": r.n_oracle_calls,
                      "value": r.value, "gap": r.rel_gap, "peak": peak_rss()}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3200)
    ap.add_argument("--halves", type=int, default=2)
    ap.add_argument("--limit", type=float, default=2.5e9, help="memory_limit of each worker")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                    help="storage type of the dense shards")
    ap.add_argument("--single", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.single:
        return single(args.n, args.halves)

    import distributed

    X, y, specs = problem(args.n, args.halves)
    dtype = np.dtype(args.dtype)
    need = len(specs) * args.n**2 * dtype.itemsize
    print(f"n = {args.n}, {len(specs)} kernels in {args.halves} group(s): dense bank "
          f"{need / GiB:.2f} GiB ({dtype}); 2 workers of {args.limit / GiB:.2f} GiB")
    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       memory_limit=int(args.limit), dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        t = time.perf_counter()
        try:
            bank = KernelBank.from_specs(X, specs, storage="dense", dtype=dtype,
                                         client=client)
        except MemoryError as exc:
            print(f"refused after {time.perf_counter() - t:.2f} s: {exc}")
            return
        build = time.perf_counter() - t
        try:
            r, secs = fit(bank, y)
            shards = [(s.worker, s.kernels.size, s.nbytes) for s in bank.storage.shards]
        finally:
            bank.storage.close()
        peaks = client.run(peak_rss)
    finally:
        client.close()
        cluster.close()
    print(f"sharded dense: build {build:.1f} s, fit {secs:.1f} s, {r.n_oracle_calls} calls, "
          f"J = {r.value:.10g}, rel. gap {r.rel_gap:.2g}")
    for (w, k, b) in shards:
        print(f"  shard on {w}: {k} kernels, {b / GiB:.2f} GiB; worker peak RSS "
              f"{peaks[w] / GiB:.2f} GiB")
    out = subprocess.run([sys.executable, __file__, "--single", "--n", str(args.n),
                          "--halves", str(args.halves)], capture_output=True, text=True,
                         check=True)
    s = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"one process, on the fly: build {s['build']:.1f} s, fit {s['fit']:.1f} s, "
          f"{s['calls']} calls, J = {s['value']:.10g}, rel. gap {s['gap']:.2g}, "
          f"peak RSS {s['peak'] / GiB:.2f} GiB")


if __name__ == "__main__":
    main()
