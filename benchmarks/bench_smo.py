"""Time mklopt's SMO against libsvm (scikit-learn) on the bundled data sets.

Protocol of the level-method paper: a random half of each data set for
training, features standardised with the training mean and deviation, a
bank of Gaussian kernels (widths 2^-3 .. 2^6) and polynomial kernels
(degrees 1 .. 3) on all features and on each single feature, each scaled
to unit trace, C = 100. The SVM is solved on the combined kernel at the
uniform weights w = 1/m:

* ``cold``: our SMO from alpha = 0 (gradient, solve and bias) versus
  ``SVC(kernel="precomputed", C=100, tol=1e-3).fit`` (``svc``) and the
  bare libsvm call inside it (``libsvm``, without scikit-learn's input
  checks), all on the same float64 matrix;
* ``warm``: after perturbing w by 5 % (multiplicative uniform noise,
  renormalised), our SMO warm-started from the previous alpha (gradient
  from the support vectors plus solve) versus our cold solve at the new w.

Times are medians of ``--repeats`` runs (default 9). Output is a markdown
table on stdout. Usage::

    python benchmarks/bench_smo.py [--repeats 9] [--seed 0] [--tol 1e-3]
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

import numpy as np

from mklopt._jit.smo import smo_gradient, smo_rho, smo_solve

#: A stop flag that is never set (see mklopt._interrupt).
GO = np.zeros(1, dtype=np.int64)

DATA = Path(__file__).resolve().parents[1] / "mklopt" / "datasets" / "data"
WIDTHS = 2.0 ** np.arange(-3, 7)
DEGREES = (1, 2, 3)
C = 100.0


def load_split(path, seed):
    data = np.loadtxt(path, delimiter=",", skiprows=1)
    X, y = data[:, :-1], data[:, -1].astype(np.float64)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(y.size)[: y.size // 2]
    X, y = X[idx], y[idx]
    sd = X.std(0)
    X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    return X, y


def feature_sets(d):
    yield slice(None)
    for f in range(d):
        yield slice(f, f + 1)


def combined_kernels(X, weight_sets):
    """Sum_k w_k K_k / trace(K_k) for each weight vector, one kernel at a time."""
    n, d = X.shape
    outs = [np.zeros((n, n)) for _ in weight_sets]
    k = 0
    for cols in feature_sets(d):
        Z = X[:, cols]
        G = Z @ Z.T
        sq = np.maximum(np.diag(G)[:, None] + np.diag(G)[None, :] - 2.0 * G, 0.0)
        mats = [np.exp(-sq / (2.0 * s * s)) for s in WIDTHS]
        mats += [(G + 1.0) ** p for p in DEGREES]
        for K in mats:
            K /= np.trace(K)
            for out, w in zip(outs, weight_sets, strict=True):
                if w[k] != 0.0:
                    out += w[k] * K
            k += 1
    return [np.ascontiguousarray(out) for out in outs]


def n_kernels(d):
    return (len(WIDTHS) + len(DEGREES)) * (d + 1)


def _problem(y):
    """Classification in the SMO core's form: kernel rows, bounds, linear term."""
    n = y.size
    return np.arange(n), np.full(n, C), np.full(n, -1.0)


def cold(K, y, tol):
    rows, upper, _ = _problem(y)
    alpha = np.zeros(y.size)
    grad = np.full(y.size, -1.0)
    it = smo_solve(K, rows, y, upper, alpha, grad, tol, 10**7, True, GO)
    return alpha, -smo_rho(y, upper, alpha, grad), it


def warm(K, y, alpha0, tol):
    rows, upper, linear = _problem(y)
    alpha = alpha0.copy()
    grad = smo_gradient(K, rows, y, linear, alpha, np.empty(y.size))
    it = smo_solve(K, rows, y, upper, alpha, grad, tol, 10**7, True, GO)
    return alpha, -smo_rho(y, upper, alpha, grad), it


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def bench_one(path, seed, tol, reps):
    """Timings and agreement figures for one data set (one table row)."""
    from sklearn.svm import SVC, _libsvm

    X, y = load_split(path, seed)
    n, d = X.shape
    m = n_kernels(d)
    rng = np.random.default_rng(seed + 1)
    w1 = np.full(m, 1.0 / m)
    w2 = w1 * (1.0 + 0.05 * rng.uniform(-1.0, 1.0, m))
    w2 /= w2.sum()
    K1, K2 = combined_kernels(X, [w1, w2])
    y01 = (y > 0).astype(np.float64)  # scikit-learn hands libsvm class indices

    cold(K1, y, tol)  # compile outside the timings
    t_ours, (alpha1, b1, it1) = median_time(partial(cold, K1, y, tol), reps)
    svc = SVC(kernel="precomputed", C=C, tol=tol, cache_size=2000)
    t_svc, clf = median_time(partial(svc.fit, K1, y), reps)
    bare = partial(
        _libsvm.fit, K1, y01, svm_type=0, kernel="precomputed", C=C, tol=tol, cache_size=2000.0
    )
    t_lib, _ = median_time(bare, reps)
    a_ref = np.zeros(n)
    a_ref[clf.support_] = np.abs(clf.dual_coef_[0])
    dalpha = float(np.abs(alpha1 - a_ref).max()) / C
    dbias = abs(b1 - float(clf.intercept_[0]))

    t_cold2, (_, _, it_c) = median_time(partial(cold, K2, y, tol), reps)
    t_warm2, (_, _, it_w) = median_time(partial(warm, K2, y, alpha1, tol), reps)
    return (
        path.stem,
        n,
        m,
        it1,
        int(clf.n_iter_[0]),
        t_ours,
        t_svc,
        t_lib,
        dalpha,
        dbias,
        it_c,
        it_w,
        t_cold2,
        t_warm2,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tol", type=float, default=1e-3)
    args = parser.parse_args(argv)

    tol, reps = args.tol, max(7, args.repeats)
    rows = [bench_one(path, args.seed, tol, reps) for path in sorted(DATA.glob("*.csv"))]

    print(f"SMO vs libsvm, C = {C:g}, tol = {tol:g}, median of {reps} runs (times in ms)\n")
    print(
        "| data | n | m | iter ours | iter libsvm | ours cold | SVC.fit | libsvm core "
        "| ours/SVC | ours/libsvm core | max|dalpha|/C | |dbias| "
        "| iter cold' | iter warm' | cold' | warm' | warm speed-up |"
    )
    print("|" + "---|" * 17)
    for r in rows:
        name, n, m, it1, itl, t_o, t_s, t_l, da, db, itc, itw, tc, tw = r
        print(
            f"| {name} | {n} | {m} | {it1} | {itl} | {1e3 * t_o:.3f} | {1e3 * t_s:.3f} "
            f"| {1e3 * t_l:.3f} | {t_o / t_s:.2f} | {t_o / t_l:.2f} | {da:.1e} | {db:.1e} "
            f"| {itc} | {itw} | {1e3 * tc:.3f} | {1e3 * tw:.3f} | {tc / tw:.1f}x |"
        )
    ratios = np.array([r[5] / r[6] for r in rows])
    core = np.array([r[5] / r[7] for r in rows])
    speed = np.array([r[12] / r[13] for r in rows])
    print(
        f"\nmedian cold ratio ours/SVC.fit = {np.median(ratios):.2f}, "
        f"ours/libsvm core = {np.median(core):.2f}; "
        f"median warm speed-up = {np.median(speed):.1f}x"
    )


if __name__ == "__main__":
    main()
