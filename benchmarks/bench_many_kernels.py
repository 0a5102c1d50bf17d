"""``MKLClassifier`` with many random kernels and every other default (item 5, multiclass issue).

On sonar (a seeded, stratified half split of the raw features), fits
``MKLClassifier(kernels=random_rbf(m, 60, seed=0))`` with every other
parameter at its default, so ``method="auto"`` picks the method by itself
(Level up to 2,000 kernels, the kernel working set above), and reports the
fit time, the certified relative gap, the oracle calls, the kernels with
non-zero weight, the test accuracy and the process's peak resident memory.
Each ``m`` runs in a new process (so the peak memory is its own), after a
small fit that compiles numba; ``make_pipeline(StandardScaler(), SVC())``
is fitted on the same split in the same process as the reference.

    python benchmarks/bench_many_kernels.py                         # m = 1e3 ... 1e6
    python benchmarks/bench_many_kernels.py --kernels 100000 --method level

``--method`` passes another method to the estimator (``"level"`` is Level on
every kernel: the issue measured 79 s at 1e5 kernels and no end within 20
minutes at 1e6).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_products import _peak_mb  # noqa: E402  (VmHWM, as the other memory figures)


def one(m, method, seed):
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from mklopt import MKLClassifier, datasets
    from mklopt.kernels import random_rbf

    X, y = datasets.load("sonar")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=0.5, random_state=seed,
                                              stratify=y)
    extra = {} if method == "auto" else {"method": method}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifier(kernels=random_rbf(50, X.shape[1], seed=99), **extra).fit(X_tr, y_tr)
        t0 = time.perf_counter()
        svc = make_pipeline(StandardScaler(), SVC()).fit(X_tr, y_tr)
        t_svc = time.perf_counter() - t0
        t0 = time.perf_counter()
        specs = random_rbf(m, X.shape[1], seed=0)
        t_specs = time.perf_counter() - t0
        est = MKLClassifier(kernels=specs, **extra)
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr)
        t_fit = time.perf_counter() - t0
    res = est.result_
    return {
        "m": m, "method": method, "specs_s": t_specs, "fit_s": t_fit, "svc_s": t_svc,
        "rel_gap": float(res.rel_gap), "converged": bool(res.converged),
        "calls": int(res.n_oracle_calls),
        "active": int(np.count_nonzero(np.asarray(est.weights_) > 0)),
        "acc": float(est.score(X_te, y_te)), "svc_acc": float(svc.score(X_te, y_te)),
        "peak_mb": _peak_mb(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    ap.add_argument("--method", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.kernels[0], args.method, args.seed)))
        return
    print("| kernels | method | specs s | fit s | rel gap | converged | oracle calls "
          "| kernels used | accuracy MKL / SVC | SVC fit s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in args.kernels:
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--kernels", str(m), "--method", args.method,
             "--seed", str(args.seed)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {r['m']:,} | {r['method']} | {r['specs_s']:.1f} | **{r['fit_s']:.1f}** "
              f"| {r['rel_gap']:.1e} | {r['converged']} | {r['calls']} | {r['active']} "
              f"| {r['acc']:.3f} / {r['svc_acc']:.3f} | {r['svc_s']:.3f} | {r['peak_mb']:,.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
