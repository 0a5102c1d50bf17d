"""Every estimator fitted by two trees of mklopt: is what they learn the same, bit for bit?

    git archive 2c42b16 | tar -x -C /tmp/base      # the tree to compare with
    python benchmarks/bench_core_equal.py --baseline /tmp/base

Each tree fits in a fresh process (``PYTHONPATH=<tree>``) every estimator
in several settings (see :func:`fit_all`) on subsets of satellite and
diabetes; the table compares their weights, test decisions and run counts
array by array.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np


def fit_all(path):
    from mklopt import (
        MKBoostClassifier,
        MKLClassifier,
        MKLClassifierCV,
        MKLOneClass,
        MKLRegressor,
        MKLRegressorCV,
        datasets,
    )
    from mklopt.kernels import rbf

    warnings.simplefilter("ignore")
    out = {}

    def keep(tag, est, Xt, extra=()):
        w = est.weights_ if hasattr(est, "weights_") else est.best_estimator_.weights_
        out[tag + ".weights"] = np.asarray(w)
        f = getattr(est, "decision_function", None) or est.predict
        out[tag + ".decision"] = np.asarray(f(Xt))
        for name in extra:
            out[tag + "." + name] = np.asarray(getattr(est, name), dtype=float)

    X, y = datasets.load("satellite")
    idx = np.random.default_rng(0).permutation(len(y))[:600]
    Xs, ys, Xt = X[idx[:400]], y[idx[:400]], X[idx[400:]]
    three = [rbf(s) for s in (1.0, 4.0, 16.0)]
    two = np.isin(ys, np.unique(ys)[:2])
    keep("clf", MKLClassifier().fit(Xs, ys), Xt, ["n_oracle_calls_", "gap_"])
    keep("clf_shared", MKLClassifier(multiclass="shared", kernels=three).fit(Xs, ys), Xt)
    keep("clf_tight", MKLClassifier(tol=1e-5, kernels=three).fit(Xs[two], ys[two]), Xt)
    keep("clf_logistic", MKLClassifier(loss="logistic", kernels=three).fit(Xs, ys), Xt)
    mean, sd = Xs.mean(0), Xs.std(0)
    A, B = (Xs - mean) / sd, (Xt - mean) / sd

    def gauss(P, Q, s):
        return np.exp(-((P[:, None] - Q[None]) ** 2).sum(-1) / (2 * s * s))

    keep("pre", MKLClassifier(kernels="precomputed").fit(np.stack([gauss(A, A, s) for s in (2, 8)]),
                                                          ys),
         np.stack([gauss(B, A, s) for s in (2, 8)]))
    keep("boost", MKBoostClassifier(random_state=0, n_rounds=10).fit(Xs, ys), Xt)
    keep("cv", MKLClassifierCV(Cs=[0.1, 1, 10], formulations=None).fit(Xs, ys), Xt)
    Xr, yr = datasets.load("diabetes")
    keep("reg", MKLRegressor().fit(Xr[:300], yr[:300]), Xr[300:], ["n_oracle_calls_"])
    keep("reg_squared", MKLRegressor(loss="squared").fit(Xr[:300], yr[:300]), Xr[300:])
    keep("reg_cv", MKLRegressorCV(Cs=[1, 10, 100], formulations=None).fit(Xr[:300], yr[:300]),
         Xr[300:])
    keep("one_class", MKLOneClass(nu=0.2).fit(Xs), Xt, ["n_oracle_calls_"])
    np.savez(path, **out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="source tree of the baseline commit")
    ap.add_argument("--fit", help=argparse.SUPPRESS)  # internal: fit in this process
    args = ap.parse_args(argv)
    if args.fit:
        fit_all(args.fit)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        got = {}
        for name, tree in (("baseline", os.path.abspath(args.baseline)), ("this tree", here)):
            path = os.path.join(tmp, name.replace(" ", "_") + ".npz")
            env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1")
            subprocess.run([sys.executable, __file__, "--baseline", tree, "--fit", path],
                           env=env, check=True, cwd=tmp)
            got[name] = dict(np.load(path))
    a, b = got["baseline"], got["this tree"]
    print("| fit | arrays compared | max abs difference | bit-identical |")
    print("|---|---|---|---|")
    for tag in dict.fromkeys(k.split(".")[0] for k in a):
        keys = [k for k in a if k.split(".")[0] == tag]
        same = [a[k].shape == b[k].shape and np.array_equal(a[k], b[k]) for k in keys]
        diff = max(float(np.max(np.abs(a[k] - b[k]))) if a[k].shape == b[k].shape and a[k].size
                   else (0.0 if a[k].shape == b[k].shape else float("inf")) for k in keys)
        names = ", ".join(k.split(".", 1)[1] for k in keys)
        print(f"| `{tag}` | {names} | {diff:.3g} | {'yes' if all(same) else 'no'} |")


if __name__ == "__main__":
    main()
