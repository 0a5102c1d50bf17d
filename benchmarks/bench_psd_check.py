"""The PSD check of precomputed kernels, before and after (issue 44): 6 kernels at n = 1,000.

*Before* is the check mklopt ran up to this change, copied here: per kernel a
Cholesky factorisation of ``K + 1e-8 trace(K) I``, and a full ``eigvalsh``
when the factorisation fails by rounding (rank-deficient kernels: linear,
low-degree polynomial). *After* is :func:`mklopt.kernels.psd.psd_test`: a
Lanczos estimate of the smallest eigenvalue (exact only for a kernel it
flags). Both run in the same process on the same matrices, interleaved,
and the median of ``--repeats`` runs is reported with their ratio; also
``KernelBank.from_matrices`` as a whole (its symmetry and finiteness scans
included) and an indefinite sigmoid kernel, which both must refuse.

    python benchmarks/bench_psd_check.py --repeats 5
"""

import argparse
import os
import statistics
import time

import numpy as np

from mklopt.kernels import KernelBank, linear, poly, rbf
from mklopt.kernels.psd import psd_test


def old_check(A):
    """The check before this change (mklopt.kernels.bank._check_kernel, PSD part)."""
    tr = float(np.trace(A))
    if tr > 0.0:
        try:
            np.linalg.cholesky(A + (1e-8 * tr) * np.eye(A.shape[0]))
            return True
        except np.linalg.LinAlgError:
            pass
    return float(np.linalg.eigvalsh(A)[0]) >= -1e-8 * abs(tr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, 10))
    specs = [rbf(0.5), rbf(2.0), rbf(8.0), poly(2), poly(3), linear()]
    K = np.ascontiguousarray(KernelBank.from_specs(X, specs, storage="dense",
                                                   normalize="trace").K)
    S = np.tanh(0.5 * X @ X.T / 10 - 1.0)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; "
          f"{len(specs)} kernels at n = {args.n}")
    old_t, new_t, bank_old, bank_new = [], [], [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        assert all(old_check(K[k]) for k in range(len(K)))
        old_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        assert all(psd_test(K[k])[0] for k in range(len(K)))
        new_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        KernelBank.from_matrices(K, psd="check")
        bank_new.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        KernelBank.from_matrices(K, psd="trust")  # the scans without the PSD test
        bank_old.append(time.perf_counter() - t0)
    mo, mn = statistics.median(old_t), statistics.median(new_t)
    print(f"PSD test of the 6 kernels: before (Cholesky) {mo * 1e3:.0f} ms, "
          f"after (Lanczos) {mn * 1e3:.0f} ms, ratio {mo / mn:.1f}x (medians of {args.repeats})")
    print(f"from_matrices(psd='check') {statistics.median(bank_new) * 1e3:.0f} ms, "
          f"of which the scans (psd='trust') {statistics.median(bank_old) * 1e3:.0f} ms")
    assert not old_check(S) and not psd_test(S)[0]
    print(f"sigmoid kernel refused by both (lambda_min {psd_test(S)[1]:.3g})")


if __name__ == "__main__":
    main()
