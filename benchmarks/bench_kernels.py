"""Timing of KernelBank construction and the oracle's hot path.

Ionosphere-size problem: the papers' half split (n = 176 training points) and
the level-method grid (m = 13 (34 + 1) = 455 kernels). Prints the median of a
few repeats (first calls, which compile or load the numba cache, excluded).

    PYTHONPATH=. python benchmarks/bench_kernels.py [--repeats 7]   # from the repository root

``blas`` times kernel evaluation through BLAS products (``mklopt._jit.gram``)
and prints markdown tables: per-Gaussian-kernel time against scikit-learn's
``rbf_kernel`` on 512 features, the direct / product threshold in features
per group, and whole ``KernelBank.from_specs`` builds (digits, satellite,
the MKBoost grid) of this tree against another checkout (``--before``,
e.g. the main worktree), each in its own process, alternated::

    PYTHONPATH=. python benchmarks/bench_kernels.py blas [--repeats 5] [--before ../main]
"""

import argparse
import os
import subprocess
import sys
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


# ----------------------------------------------------------------- blas
def _interleaved(fns, repeats):
    """Median seconds of each callable, timed in turns (one warm-up call each first)."""
    for f in fns.values():
        f()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return {k: float(np.median(v)) for k, v in times.items()}


def _tiled_digits(n_features):
    from sklearn.datasets import load_digits

    X = load_digits().data
    X = X[: X.shape[0] // 2]  # 898 points, the size of one side of a split
    reps = -(-n_features // X.shape[1])
    return np.ascontiguousarray(np.tile(X, reps)[:, :n_features], dtype=np.float64)


def _widths(X, count):
    """``count`` Gaussian widths ``2^e`` times the typical distance, e = -6 ...

    As in the MKBoost grid (``2^-6 .. 2^7``), scaled by the root mean squared
    distance so that the kernels are not all zero on unscaled data.
    """
    scale = float(np.sqrt(2.0 * X.var(axis=0).sum()))
    return [scale * 2.0**e for e in range(-6, -6 + count)]


def bench_rbf(repeats):
    """Per-Gaussian-kernel time against ``rbf_kernel``, one width and 14 widths."""
    from sklearn.metrics.pairwise import rbf_kernel

    from mklopt.kernels import KernelFunctions, rbf

    rng = np.random.default_rng(0)
    sets = {
        "random 1000 x 512": rng.standard_normal((1000, 512)),
        "digits 898 x 512 (64 tiled)": _tiled_digits(512),
    }
    from mklopt._jit import gram

    print("| data | kernels | mklopt | rbf_kernel | mklopt / rbf_kernel "
          "| direct sums (before) | mklopt / direct |")
    print("|---|---|---|---|---|---|---|")
    keep = gram.WIDE_MIN, gram.WIDE_PER_KERNEL

    def ours(fn, rule):
        gram.WIDE_MIN, gram.WIDE_PER_KERNEL = rule
        try:
            fn.matrices()
        finally:
            gram.WIDE_MIN, gram.WIDE_PER_KERNEL = keep

    for name, X in sets.items():
        for count in (1, 14):
            sig = _widths(X, count)
            fn = KernelFunctions.from_data(X, [rbf(s) for s in sig], normalize=None)
            gammas = [0.5 / s**2 for s in sig]
            t = _interleaved(
                {
                    "ours": lambda fn=fn: ours(fn, keep),
                    "sk": lambda X=X, gammas=gammas: [rbf_kernel(X, gamma=g) for g in gammas],
                    "direct": lambda fn=fn: ours(fn, (10**9, 0)),
                },
                repeats,
            )
            print(f"| {name} | {count} | {1e3 * t['ours']:.1f} ms | {1e3 * t['sk']:.1f} ms "
                  f"| {t['ours'] / t['sk']:.2f} | {1e3 * t['direct']:.1f} ms "
                  f"| {t['ours'] / t['direct']:.2f} |")


def bench_threshold(repeats, n=1000):
    """Direct sums against BLAS products for one group of f features (n points)."""
    from mklopt._jit import gram
    from mklopt.kernels import KernelFunctions, grid, poly, rbf

    rng = np.random.default_rng(0)
    print("| features per group | kernels | direct | product | product / direct |")
    print("|---|---|---|---|---|")
    keep = gram.WIDE_MIN, gram.WIDE_PER_KERNEL
    try:
        for f in (1, 2, 4, 8, 16, 32, 64, 128):
            X = rng.standard_normal((n, f))
            for label, specs in (
                ("1 Gaussian + poly(2)", [rbf(np.sqrt(f)), poly(2)]),
                ("MKBoost grid (17)", list(grid(f, protocol="mkboost2013"))),
            ):
                fn = KernelFunctions.from_data(X, specs)
                out = fn.matrices()

                def run(rule, fn=fn, out=out):
                    gram.WIDE_MIN, gram.WIDE_PER_KERNEL = rule
                    fn.matrices(out=out)

                t = _interleaved(
                    {"direct": lambda: run((10**9, 0)), "product": lambda: run((1, 0))}, repeats
                )
                print(f"| {f} | {label} | {1e3 * t['direct']:.1f} ms "
                      f"| {1e3 * t['product']:.1f} ms | {t['product'] / t['direct']:.2f} |")
    finally:
        gram.WIDE_MIN, gram.WIDE_PER_KERNEL = keep


_BUILD_CHILD = """
import sys, time
import numpy as np
import mklopt
from mklopt import datasets
from mklopt.kernels import KernelBank, grid
name, repeats, forced = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "products"
if forced:  # every group through the BLAS products, whatever gram.is_wide says
    from mklopt._jit import gram
    gram.WIDE_MIN, gram.WIDE_PER_KERNEL = 1, 0
if name == "digits":
    from sklearn.datasets import load_digits
    X = load_digits().data[:898].astype(float)
else:
    X, y = datasets.load("satellite")
    X = datasets.split(X, y, seed=0)[0]
X = np.ascontiguousarray(X, dtype=float)
specs = grid(X.shape[1], protocol="mkboost2013")
KernelBank.from_specs(X, specs, storage="dense")
ts = []
for _ in range(repeats):
    t0 = time.perf_counter()
    KernelBank.from_specs(X, specs, storage="dense")
    ts.append(time.perf_counter() - t0)
print(float(np.median(ts)), X.shape[0], X.shape[1], len(specs))
"""


def bench_builds(repeats, before):
    """Whole dense builds, this tree against ``before``, alternated in child processes."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs = {
        "before": (os.path.abspath(before), "default"),
        "after": (here, "default"),
        "after, all products": (here, "products"),
    }
    print("| data | n x d, kernels | before | after | after / before "
          "| after, every group through products | that / before |")
    print("|---|---|---|---|---|---|---|")
    for name in ("digits", "satellite"):
        times = {k: [] for k in runs}
        shape = ""
        for _ in range(3):
            for k, (tree, mode) in runs.items():
                env = dict(os.environ, PYTHONPATH=tree)
                res = subprocess.run(
                    [sys.executable, "-c", _BUILD_CHILD, name, str(repeats), mode],
                    env=env, capture_output=True, text=True, check=True,
                )
                t, n, d, m = res.stdout.split()
                times[k].append(float(t))
                shape = f"{n} x {d}, {m}"
        tb, ta, tp = (float(np.median(times[k])) for k in runs)
        print(f"| {name} | {shape} | {1e3 * tb:.0f} ms | {1e3 * ta:.0f} ms | {ta / tb:.2f} "
              f"| {1e3 * tp:.0f} ms | {tp / tb:.2f} |")


def main_blas(repeats, before):
    print("### Gaussian kernels against sklearn.metrics.pairwise.rbf_kernel\n")
    bench_rbf(repeats)
    print("\n### Direct sums against BLAS products, one group, n = 1000\n")
    bench_threshold(repeats)
    if before:
        print(f"\n### KernelBank.from_specs, MKBoost grid, dense (before: {before})\n")
        bench_builds(repeats, before)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", nargs="?", default="hot", choices=("hot", "blas"))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--before", default=None,
                    help="blas: another checkout to time the whole builds against")
    args = ap.parse_args()
    if args.command == "blas":
        main_blas(args.repeats, args.before)
    else:
        main(args.repeats)
