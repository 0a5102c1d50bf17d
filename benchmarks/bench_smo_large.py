"""Cold SMO solves of hundreds to thousands of variables, against libsvm in the same run.

Where ``bench_smo.py`` times the papers' small combined kernels (about 100
iterations, where the gradient and the offset cost as much as the loop),
this times single Gaussian kernels on which the SMO loop itself dominates:
ionosphere, pima, the first 3,000 rows of letter and 4,000 of shuttle
(each the class of its first row against the rest), all features
standardised, and epsilon-SVR on
diabetes (targets standardised, epsilon 0.1). Each problem is solved from
``alpha = 0`` with shrinking at tol 1e-3 by
:func:`mklopt._jit.smo.smo_solve`, and by the bare libsvm call inside
scikit-learn (``sklearn.svm._libsvm.fit``, precomputed kernel) on the same
matrix. Times are medians of ``--repeats`` runs in ms; numba is compiled
before timing.

``--tree PATH`` imports mklopt from another checkout (for example a
``git worktree`` of an older commit), so that two versions can be timed
one after the other on the same problems:

    python benchmarks/bench_smo_large.py
    git worktree add /tmp/old <commit>
    python benchmarks/bench_smo_large.py --tree /tmp/old
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time

import numpy as np

#: A stop flag that is never set (see mklopt._interrupt).
GO = np.zeros(1, dtype=np.int64)


def rbf(X, gamma):
    sq = (X * X).sum(1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    return np.ascontiguousarray(np.exp(-gamma * d2))


def problems(datasets):
    """(name, K, targets, C, kind) for each timed problem."""
    out = []
    for name, n, gamma, C in [
        ("ionosphere", None, 0.05, 100.0),
        ("pima", None, 0.1, 10.0),
        ("letter", 3000, 0.05, 10.0),
        ("shuttle", 4000, 0.1, 100.0),
    ]:
        X, y = datasets.load(name)
        if n is not None:
            X, y = X[:n], y[:n]
        sd = X.std(0)
        X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
        y = np.where(y == y[0], 1.0, -1.0)
        out.append((name, rbf(X, gamma), y, C, "svc"))
    X, t = datasets.load("diabetes")
    X = (X - X.mean(0)) / X.std(0)
    t = (t - t.mean()) / t.std()
    out.append(("diabetes (SVR)", rbf(X, 0.1), t, 10.0, "svr"))
    return out


def ours(smo, K, t, C, kind, tol):
    n = t.size
    if kind == "svr":
        rows = np.r_[np.arange(n), np.arange(n)].astype(np.int64)
        signs = np.r_[np.ones(n), -np.ones(n)]
        linear = np.r_[0.1 - t, 0.1 + t]
    else:
        rows, signs, linear = np.arange(n, dtype=np.int64), t, -np.ones(n)
    N = signs.size
    a = np.zeros(N)
    g = smo.smo_gradient(K, rows, signs, linear, a, np.empty(N))
    t0 = time.perf_counter()
    # Trees from before the stop flag (--tree) take one argument less.
    stop = (GO,) if "stop" in inspect.signature(smo.smo_solve.py_func).parameters else ()
    it = smo.smo_solve(K, rows, signs, np.full(N, C), a, g, tol, 10**7, True, *stop)
    return time.perf_counter() - t0, it


def libsvm(K, t, C, kind, tol):
    from sklearn.svm import _libsvm

    _libsvm.set_verbosity_wrap(0)
    y = (t > 0).astype(np.float64) if kind == "svc" else t
    t0 = time.perf_counter()
    _libsvm.fit(K, y, svm_type=0 if kind == "svc" else 3, kernel="precomputed", C=C,
                tol=tol, epsilon=0.1, cache_size=2000.0)
    return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--tree", default=None, help="import mklopt from this checkout")
    args = ap.parse_args(argv)
    if args.tree:
        sys.path.insert(0, args.tree)
    import mklopt
    from mklopt import datasets
    from mklopt._jit import smo

    print(f"mklopt from {mklopt.__file__}; tol {args.tol:g}, median of {args.repeats} (ms)\n")
    print("| problem | variables | SMO iterations | ours | libsvm core | ours / libsvm |")
    print("|---|---|---|---|---|---|")
    probs = problems(datasets)
    ours(smo, *probs[0][1:], args.tol)  # compile
    for name, K, t, C, kind in probs:
        mine, ref = [], []
        for _ in range(args.repeats):
            dt, it = ours(smo, K, t, C, kind, args.tol)
            mine.append(dt)
            ref.append(libsvm(K, t, C, kind, args.tol))
        a, b = np.median(mine) * 1e3, np.median(ref) * 1e3
        n_var = t.size * (2 if kind == "svr" else 1)
        print(f"| {name} | {n_var} | {it} | {a:.2f} | {b:.2f} | {a / b:.2f} |", flush=True)


if __name__ == "__main__":
    main()
