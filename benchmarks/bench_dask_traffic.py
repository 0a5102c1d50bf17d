"""Bytes between the client and the shards per oracle call, against n and m.

A short run of Level (``MaxOracleCalls(--calls)``, warm starts) with a
bank of ``grid(d)`` (``m = 13 (d + 1)`` kernels) on the fly, sharded over
``LocalCluster(n_workers=2, threads_per_worker=1)``, for several training
sizes ``n``. Two counts, per shard and per oracle call:

* **Dask's own**: the bytes Dask's TCP comms wrote (``TCP.write``'s frame
  count, message headers and framing included), on the client to the
  workers ("sent") and on the workers to the client ("received"); the
  workers' messages to the scheduler (heartbeats) are left out;
* **the storage's**: ``bank.storage.traffic`` (array payloads only).

Times per call (the Level step included) are given next to the same run
on one process's bank (on the fly, numba on all its threads) as the
reference measured in the same run (the same method, as many calls).

The first call is cold (``alpha = 0``); the later ones are warm-started, as
in every method's run. Run it on another checkout (``PYTHONPATH=...``) to
compare versions: the cluster's workers import the same mklopt as this
script.

    python benchmarks/bench_dask_traffic.py
    python benchmarks/bench_dask_traffic.py --sizes 1000 2000 --features 1 --calls 6
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import mklopt
from mklopt import KernelBank, solve
from mklopt.kernels import grid
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import MaxOracleCalls


def problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + np.sin(2 * X[:, 1 % d]) > 0.3 * rng.normal(size=n), 1.0, -1.0)
    return X, y


# ------------------------------------------------------------ Dask's counts
# The counts live on distributed's tcp module: the functions below are sent
# to the workers by value, each with its own copy of this script's globals.


def _install_counter(workers=()):
    """Count the bytes each TCP comm of this process writes, by peer (once per process)."""
    from distributed.comm import tcp

    tcp._mklopt_counts = {}  # peer address -> bytes written to it
    tcp._mklopt_locals = set()  # the client's ends of its connections to the workers
    if getattr(tcp.TCP.write, "_mklopt_counting", False):
        return True
    plain = tcp.TCP.write

    async def write(self, msg, serializers=None, on_error="message"):
        nbytes = await plain(self, msg, serializers=serializers, on_error=on_error)
        peer = self.peer_address
        tcp._mklopt_counts[peer] = tcp._mklopt_counts.get(peer, 0) + int(nbytes)
        if peer in workers:
            tcp._mklopt_locals.add(self.local_address)
        return nbytes

    write._mklopt_counting = True
    tcp.TCP.write = write
    return True


def _counts(dask_worker=None):
    from distributed.comm import tcp

    return dict(tcp._mklopt_counts)


def dask_bytes(client, workers):
    """(bytes the client wrote to the workers, bytes the workers wrote to the client).

    A worker's writes count when they go to one of the client's ends of its
    connections to the workers (the actors' requests and answers), not to
    the scheduler or the nanny.
    """
    from distributed.comm import tcp

    sent = sum(v for k, v in tcp._mklopt_counts.items() if k in workers)
    received = sum(
        v for per in client.run(_counts).values() for k, v in per.items()
        if k in tcp._mklopt_locals
    )
    return sent, received


def kib(b):
    return f"{b / 1024:,.1f}"


def measure(client, workers, bank, X, y, d, args):
    """Per call of a Level run on the sharded ``bank``: bytes, trips and ms; and the
    reference, ms per call of the same run on one process's bank."""
    a = bank.storage.n_shards
    rows = []
    # The reference of the same run: the same Level run on one
    # process's bank (numba on all its threads), time per call.
    single = KernelBank.from_specs(X, grid(d), storage="on_the_fly",
                                   cache_size=args.cache)
    ends = [time.perf_counter()]
    solve(SVMDual(single, y, C=10.0, tol=1e-4), LevelBundle(),
          stop=MaxOracleCalls(args.calls),
          callback=lambda p: ends.append(time.perf_counter()))
    ref = 1e3 * np.diff(ends)
    # Each mark: (Dask bytes, storage counts, time the call ended,
    # time the counts were read); the time of a call (with the
    # method's step) runs from the previous mark's reading.
    now = time.perf_counter()
    marks = [(dask_bytes(client, workers), bank.storage.traffic.copy(), now,
              time.perf_counter())]

    def record(progress):
        end = time.perf_counter()
        marks.append((dask_bytes(client, workers), bank.storage.traffic.copy(),
                       end, time.perf_counter()))

    solve(SVMDual(bank, y, C=10.0, tol=1e-4), LevelBundle(),
          stop=MaxOracleCalls(args.calls), callback=record)
    for (d0, t0, _, read0), (d1, t1, end1, _) in zip(marks, marks[1:]):
        t = t1 - t0
        rows.append(((d1[0] - d0[0]) / a, (d1[1] - d0[1]) / a,
                     t.bytes_received / a, t.n_round_trips,
                     1e3 * (end1 - read0)))
    return rows, ref


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--features", type=int, nargs="+", default=[1, 9],
                    help="d: the bank is grid(d), 13 (d + 1) kernels")
    ap.add_argument("--calls", type=int, default=5, help="oracle calls of the Level run")
    ap.add_argument("--cache", type=float, default=None,
                    help="cache_size in MB (small values force the row-cached path)")
    args = ap.parse_args(argv)

    import distributed

    root = str(Path(mklopt.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root + os.pathsep + os.environ.get("PYTHONPATH", "")
    print(f"mklopt from {root}")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    workers = set(client.scheduler_info()["workers"])
    client.run(_install_counter)
    _install_counter(workers)
    print("| n | m | call | Dask sent / shard KiB | Dask received / shard KiB "
          "| received / 8n^2 | received / 8(n + m) | storage received / shard KiB "
          "| round trips | ms | one process ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for d in args.features:
            for n in args.sizes:
                X, y = problem(n, d)
                bank = KernelBank.from_specs(X, grid(d), storage="on_the_fly", client=client,
                                             cache_size=args.cache)
                try:
                    m = bank.n_kernels
                    rows, ref = measure(client, workers, bank, X, y, d, args)
                    for k, (sent, recv, srecv, trips, ms) in enumerate(rows):
                        if k > 1 and k < len(rows) - 1:
                            continue  # first, second and last calls
                        print(f"| {n:,} | {m} | {k + 1}{' (cold)' if k == 0 else ''} | "
                              f"{kib(sent)} | {kib(recv)} | {recv / (8 * n * n):.3f} | "
                              f"{recv / (8 * (n + m)):.1f} | {kib(srecv)} | {trips} | "
                              f"{ms:.0f} | {ref[k]:.0f} |", flush=True)
                    warm = np.array([r[1] for r in rows[1:]])
                    if warm.size:
                        print(f"| {n:,} | {m} | median of warm calls | "
                              f"{kib(np.median([r[0] for r in rows[1:]]))} | "
                              f"{kib(np.median(warm))} | {np.median(warm) / (8 * n * n):.3f} | "
                              f"{np.median(warm) / (8 * (n + m)):.1f} | "
                              f"{kib(np.median([r[2] for r in rows[1:]]))} | "
                              f"{int(np.median([r[3] for r in rows[1:]]))} | "
                              f"{np.median([r[4] for r in rows[1:]]):.0f} | "
                              f"{np.median(ref[1:]):.0f} |", flush=True)
                finally:
                    bank.storage.close()
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
