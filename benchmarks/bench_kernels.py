"""Timing of KernelBank construction and the oracle's hot path.

Ionosphere-size problem: the papers' half split (n = 176 training points) and
the level-method grid (m = 13 (34 + 1) = 455 kernels). Prints the median of a
few repeats (first calls, which compile or load the numba cache, excluded).

    PYTHONPATH=. python benchmarks/bench_kernels.py [--repeats 7]   # from the repository root
"""

import argparse
import time

import numpy as np

from mklopt import datasets
from mklopt.kernels import KernelBank, grid


def median_ms(fn, repeats):
    fn()  # compile / warm caches
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def hot_path(bank, name, w_dense, w_sparse, v, sup_small, repeats):
    """Timings of combine and quad_forms on one bank."""
    n, m = bank.n_samples, bank.n_kernels
    out = np.empty((n, n))
    sup_all = np.arange(n)
    return [
        (
            f"combine, all {m} weights > 0 ({name})",
            median_ms(lambda: bank.combine(w_dense, out), repeats),
        ),
        (
            f"combine, 10 weights > 0 ({name})",
            median_ms(lambda: bank.combine(w_sparse, out), repeats),
        ),
        (
            f"quad_forms, |S| = {sup_small.size} ({name})",
            median_ms(lambda: bank.quad_forms(v, sup_small), repeats),
        ),
        (
            f"quad_forms, |S| = {n} ({name})",
            median_ms(lambda: bank.quad_forms(v, sup_all), repeats),
        ),
    ]


def main(repeats):
    X, y = datasets.load("ionosphere")
    Xtr, Xte, _, _ = datasets.split(X, y, seed=0)
    specs = grid(Xtr.shape[1])
    n, m = Xtr.shape[0], len(specs)
    rng = np.random.default_rng(0)
    print(f"ionosphere: n = {n} training points, m = {m} kernels, {Xte.shape[0]} test points")

    rows = []
    for dt in (np.float64, np.float32):
        rows.append(
            (
                f"from_specs ({np.dtype(dt).name})",
                median_ms(lambda dt=dt: KernelBank.from_specs(Xtr, specs, dtype=dt), repeats),
            )
        )
    banks = {dt: KernelBank.from_specs(Xtr, specs, dtype=dt) for dt in (np.float64, np.float32)}
    w_dense = np.full(m, 1.0 / m)
    w_sparse = np.zeros(m)
    w_sparse[rng.choice(m, 10, replace=False)] = 0.1
    v = rng.standard_normal(n)
    sup_small = np.sort(rng.choice(n, n // 4, replace=False))
    for dt, bank in banks.items():
        rows += hot_path(bank, np.dtype(dt).name, w_dense, w_sparse, v, sup_small, repeats)
    bank = banks[np.float64]
    cols = sup_small
    rows.append(
        (
            f"combine_cross, {Xte.shape[0]} x {cols.size}, 10 kernels",
            median_ms(lambda: bank.combine_cross(Xte, w_sparse, columns=cols), repeats),
        )
    )
    rows.append(
        (
            "numpy reference: tensordot(w, K) (all weights)",
            median_ms(lambda: np.tensordot(w_dense, bank.K, 1), repeats),
        )
    )
    width = max(len(r[0]) for r in rows)
    for name, ms in rows:
        print(f"  {name:<{width}}  {ms:9.3f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    main(ap.parse_args().repeats)
