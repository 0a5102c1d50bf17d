"""Bytes between the client and the shards in one oracle call, against n and m.

One ``SVMDual`` call at uniform weights (every kernel active) on a bank
sharded over ``LocalCluster(n_workers=2, threads_per_worker=1)``, on the
fly, for several training sizes ``n`` and kernel counts ``m`` (13 kernels
per feature group: ``m = 13 (d + 1)`` for ``grid(d)``). The counts are the
sharded storage's own (``bank.storage.traffic``: array payloads, without
Dask's message framing of a few hundred bytes per message), per shard and
per oracle call, next to ``n``, ``m`` and ``n^2``, so that the growth can
be read off.

    python benchmarks/bench_dask_traffic.py
    python benchmarks/bench_dask_traffic.py --sizes 500 1000 --features 1 9 --cache 1
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from mklopt import KernelBank
from mklopt.kernels import grid
from mklopt.oracles import SVMDual


def problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + np.sin(2 * X[:, 1 % d]) > 0.3 * rng.normal(size=n), 1.0, -1.0)
    return X, y


def kib(b):
    return f"{b / 1024:,.1f} KiB"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--features", type=int, nargs="+", default=[1, 9],
                    help="d: the bank is grid(d), 13 (d + 1) kernels")
    ap.add_argument("--cache", type=float, default=None,
                    help="cache_size in MB (small values force the row-cached path)")
    args = ap.parse_args(argv)

    import distributed

    root = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    print("| n | m | path | round trips | sent / shard | received / shard "
          "| sent / (8 (n + m)) | received / (8 n^2) |")
    print("|---|---|---|---|---|---|---|---|")
    try:
        for d in args.features:
            for n in args.sizes:
                X, y = problem(n, d)
                specs = grid(d)
                bank = KernelBank.from_specs(X, specs, storage="on_the_fly", client=client,
                                             cache_size=args.cache)
                try:
                    m = bank.n_kernels
                    oracle = SVMDual(bank, y, C=10.0, tol=1e-4)
                    w = np.full(m, 1.0 / m)
                    before = bank.storage.traffic.copy()
                    oracle(w)
                    t = bank.storage.traffic - before
                    a = bank.storage.n_shards
                    path = "whole matrix" if oracle._solver.whole_matrix else "rows"
                    sent, recv = t.bytes_sent / a, t.bytes_received / a
                    print(f"| {n:,} | {m} | {path} | {t.n_round_trips} | {kib(sent)} | "
                          f"{kib(recv)} | {sent / (8 * (n + m)):.2f} | "
                          f"{recv / (8 * n * n):.2f} |", flush=True)
                finally:
                    bank.storage.close()
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
