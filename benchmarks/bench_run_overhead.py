"""What a stoppable run costs its caller: entering and leaving, and a small ``solve``.

Every ``solve`` and every estimator ``fit`` is a :class:`mklopt._interrupt.Run`
(time limits, Ctrl-C). Timed here, in the main thread, per run: the thread
CPU time (what the caller's core spends) and the wall-clock time, medians
over ``--repeats`` batches of ``--runs`` runs after a warm-up:

* ``Run()``: a run that only catches SIGINT (what ``solve`` without a time
  limit opens), entered and left;
* ``Run(deadline)``: the same with a deadline (``time_limit``);
* ``solve, 3 calls``: :func:`mklopt.solve` with Level on
  ``SmoothQuadraticOracle.random(17, dim=20)``, stopped after 3 oracle
  calls: a small problem solved many times in a user's loop.

Run it on two versions with the same script to compare them:

    python benchmarks/bench_run_overhead.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_run_overhead.py
"""

import argparse
import os
import time

import numpy as np

import mklopt
from mklopt import solve
from mklopt._interrupt import Run
from mklopt.methods import LevelBundle
from mklopt.stopping import MaxIter
from mklopt.testing import SmoothQuadraticOracle


def _batch(fn, runs):
    c0, w0 = time.thread_time(), time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.thread_time() - c0) / runs, (time.perf_counter() - w0) / runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=500)
    args = parser.parse_args()
    oracle = SmoothQuadraticOracle.random(17, dim=20, seed=0)

    def plain():
        with Run():
            pass

    def deadline():
        with Run(time.time() + 60.0):
            pass

    def small_solve():
        solve(oracle, LevelBundle(), stop=MaxIter(3))

    cases = [("Run()", plain, args.runs), ("Run(deadline)", deadline, args.runs),
             ("solve, 3 calls", small_solve, max(1, args.runs // 5))]
    print(f"<!-- mklopt from {os.path.dirname(mklopt.__file__)} -->")
    print("| case | thread CPU µs per run | wall-clock µs per run |")
    print("|---|---|---|")
    for name, fn, runs in cases:
        _batch(fn, max(1, runs // 10))  # warm-up
        got = np.array([_batch(fn, runs) for _ in range(args.repeats)])
        cpu, wall = np.median(got, axis=0) * 1e6
        print(f"| {name} | {cpu:.0f} | {wall:.0f} |", flush=True)


if __name__ == "__main__":
    main()
