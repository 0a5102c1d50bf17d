"""Many kernels on sonar: a bank sharded over a 2-worker Dask cluster against one process.

Sonar's half split (n = 104, seed 0, standardised), C = 100, SVM tolerance
1e-4. ``m`` Gaussian kernels, each on a seeded random subset of 3-8 of the
60 features with width ``2^U(-3, 6)`` (``mklopt.kernels.random_rbf``, seed
0; nearly every kernel is its own feature group). Both banks compute the
kernels on the fly. The sharded bank lives on a
``LocalCluster(n_workers=2, threads_per_worker=1)``; the single-process
bank uses numba's threads on both cores. Both are measured
in the same run, on the same sequence of oracle calls:

* **dense weights**: every kernel active (``w = 1/m`` perturbed), as in
  Lp-MKL or mirror descent;
* **sparse weights**: 64 active kernels, as L1-MKL has after a few
  iterations.

Each call is warm-started from the previous one's alpha, as the driver
does; the two banks take their calls in turn (single, sharded, single,
...), so that other load on the machine hits both alike. Reported per
oracle call: median wall time, round trips, messages and array bytes sent
and received (counted by the sharded storage).

    python benchmarks/bench_dask.py                       # 1e4 and 1e5 kernels
    python benchmarks/bench_dask.py --kernels 1e6 --calls 3 --weights sparse
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
from mklopt import KernelBank, datasets
from mklopt.kernels import random_rbf
from mklopt.oracles import SVMDual


def weight_sequence(m, calls, sparse, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    active = rng.choice(m, size=min(64, m), replace=False)
    for _ in range(calls):
        w = np.zeros(m)
        if sparse:
            w[active] = rng.random(active.size) + 0.1
        else:
            w[:] = 1.0 + 0.2 * rng.random(m)
        out.append(w / w.sum())
    return out


def run_calls(banks, y, weights, C, tol):
    """The same oracle calls on every bank, in lockstep (so load hits them alike)."""
    oracles = [SVMDual(b, y, C=C, tol=tol) for b in banks]
    alphas = [None] * len(banks)
    rec = [dict(times=[], trips=[], msgs=[], sent=[], recv=[]) for _ in banks]
    for w in weights:
        for i, (bank, oracle) in enumerate(zip(banks, oracles)):
            st = bank.storage
            before = st.traffic.copy() if hasattr(st, "traffic") else None
            t0 = time.perf_counter()
            ans = oracle(w, warm_start=alphas[i])
            rec[i]["times"].append(time.perf_counter() - t0)
            alphas[i] = ans.alpha
            rec[i]["value"] = ans.value
            if before is not None:
                d = st.traffic - before
                rec[i]["trips"].append(d.n_round_trips)
                rec[i]["msgs"].append(d.n_messages)
                rec[i]["sent"].append(d.bytes_sent)
                rec[i]["recv"].append(d.bytes_received)
    out = []
    for r in rec:
        out.append(
            dict(
                seconds=statistics.median(r["times"]),
                value=r["value"],
                trips=statistics.mean(r["trips"]) if r["trips"] else 0,
                messages=statistics.mean(r["msgs"]) if r["msgs"] else 0,
                sent=statistics.mean(r["sent"]) if r["sent"] else 0,
                received=statistics.mean(r["recv"]) if r["recv"] else 0,
            )
        )
    return out


def start_cluster(n_workers):
    from distributed import Client, LocalCluster

    # Workers import the same mklopt as this process (a source checkout
    # may not be the installed copy).
    root = str(Path(mklopt.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,
    )
    return cluster, Client(cluster)


def fmt_bytes(b):
    if b >= 2**20:
        return f"{b / 2**20:.2f} MiB"
    if b >= 2**10:
        return f"{b / 2**10:.1f} KiB"
    return f"{b:.0f} B"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=float, nargs="+", default=[1e4, 1e5])
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--weights",
        choices=["both", "dense", "sparse"],
        default="both",
        help="all kernels active, 64 active, or both (default)",
    )
    ap.add_argument("--C", type=float, default=100.0)
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args(argv)

    X, y = datasets.load("sonar")
    Xtr, _, ytr, _ = datasets.split(X, y, seed=0)
    cluster, client = start_cluster(args.workers)
    rows = []
    try:
        # Compile outside the timed region, here and on the workers.
        warm = random_rbf(50, Xtr.shape[1], seed=99)
        wb = [
            KernelBank.from_specs(Xtr, warm, storage="on_the_fly", client=c) for c in (None, client)
        ]
        run_calls(wb, ytr, weight_sequence(50, 2, False), args.C, args.tol)
        run_calls(wb, ytr, weight_sequence(50, 2, True), args.C, args.tol)
        for mf in args.kernels:
            m = int(mf)
            specs = random_rbf(m, Xtr.shape[1], seed=0)
            t0 = time.perf_counter()
            single = KernelBank.from_specs(Xtr, specs, storage="on_the_fly")
            t_single = time.perf_counter() - t0
            t0 = time.perf_counter()
            sharded = KernelBank.from_specs(Xtr, specs, storage="on_the_fly", client=client)
            t_sharded = time.perf_counter() - t0
            costs = [s.cost for s in sharded.storage.shards]
            print(
                f"m = {m}: build {t_single:.2f} s single, {t_sharded:.2f} s sharded; "
                f"shard costs {costs}",
                file=sys.stderr,
                flush=True,
            )
            kinds = {"both": (False, True), "dense": (False,), "sparse": (True,)}[args.weights]
            for sparse in kinds:
                ws = weight_sequence(m, args.calls, sparse)
                a, b = run_calls([single, sharded], ytr, ws, args.C, args.tol)
                rows.append(
                    dict(m=m, sparse=sparse, single=a, sharded=b, build=(t_single, t_sharded))
                )
                print(
                    f"  {'sparse' if sparse else 'dense '}: single {a['seconds'] * 1e3:.1f} ms, "
                    f"sharded {b['seconds'] * 1e3:.1f} ms, {b['trips']:.1f} trips, "
                    f"sent {fmt_bytes(b['sent'])}, received {fmt_bytes(b['received'])}, "
                    f"|J diff| {abs(a['value'] - b['value']) / abs(a['value']):.1e}",
                    file=sys.stderr,
                    flush=True,
                )
            sharded.storage.close()
    finally:
        client.close()
        cluster.close()

    print(
        "| kernels | weights | build s (single / sharded) | single ms/call | sharded ms/call "
        "| sharded / single | round trips / call | messages / call | sent / call "
        "| received / call |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        a, b = r["single"], r["sharded"]
        print(
            f"| {r['m']:,} | {'64 active' if r['sparse'] else 'all active'} "
            f"| {r['build'][0]:.2f} / {r['build'][1]:.2f} "
            f"| {a['seconds'] * 1e3:.1f} | {b['seconds'] * 1e3:.1f} "
            f"| {b['seconds'] / a['seconds']:.2f} | {b['trips']:.1f} | {b['messages']:.1f} "
            f"| {fmt_bytes(b['sent'])} | {fmt_bytes(b['received'])} |"
        )
    return rows


if __name__ == "__main__":
    main()
