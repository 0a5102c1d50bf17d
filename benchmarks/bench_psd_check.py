"""The PSD check of precomputed kernels against one Cholesky per kernel: 6 kernels at n = 1,000.

    python -m mklopt.bench.results benchmarks/results/psd_check.json -- \
        python benchmarks/bench_psd_check.py --repeats 5

*Cholesky* is the check mklopt ran before the Lanczos test: per kernel a
factorisation of ``K + 1e-8 trace(K) I``, with ``eigvalsh`` when it fails
by rounding. *Lanczos* is :func:`mklopt.kernels.psd.psd_test`. Both run on
the same matrices, interleaved; medians of ``--repeats``. Also
``KernelBank.from_matrices`` whole, with and without the test, and an
indefinite sigmoid kernel, which both must refuse.
"""

import argparse

import numpy as np

from mklopt.bench.results import median_time
from mklopt.kernels import KernelBank, linear, poly, rbf
from mklopt.kernels.psd import psd_test


def cholesky_check(A):
    tr = float(np.trace(A))
    try:
        np.linalg.cholesky(A + (1e-8 * tr) * np.eye(A.shape[0]))
        return True
    except np.linalg.LinAlgError:
        return float(np.linalg.eigvalsh(A)[0]) >= -1e-8 * abs(tr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    X = np.random.default_rng(0).standard_normal((args.n, 10))
    specs = [rbf(0.5), rbf(2.0), rbf(8.0), poly(2), poly(3), linear()]
    K = np.ascontiguousarray(KernelBank.from_specs(X, specs, storage="dense", normalize="trace").K)
    S = np.tanh(0.5 * X @ X.T / 10 - 1.0)
    assert not cholesky_check(S) and not psd_test(S)[0], "the sigmoid kernel must be refused"
    runs = {
        "PSD test, one Cholesky per kernel": lambda: all(cholesky_check(k) for k in K),
        "PSD test, block Lanczos (psd_test)": lambda: all(psd_test(k)[0] for k in K),
        "from_matrices(K), psd='check' (the default)": lambda: KernelBank.from_matrices(K),
        "from_matrices(K, psd='trust')": lambda: KernelBank.from_matrices(K, psd="trust"),
    }
    times = {name: [] for name in runs}
    for _ in range(args.repeats):  # interleaved
        for name, fn in runs.items():
            times[name] += median_time(fn, 1)[1]
    ref = float(np.median(times["PSD test, one Cholesky per kernel"]))
    print(f"**{len(specs)} kernels at n = {args.n}, medians of {args.repeats}; "
          f"the sigmoid kernel refused by both (lambda_min {psd_test(S)[1]:.3g})**\n")
    print("| what | ms | / Cholesky |\n|---|---|---|")
    for name, ts in times.items():
        t = float(np.median(ts))
        print(f"| {name} | {t * 1e3:.0f} | {t / ref:.2f}x |")


if __name__ == "__main__":
    main()
