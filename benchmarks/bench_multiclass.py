"""Multiclass fit times of ``MKLClassifier()`` against ``SVC()``, and where the time goes.

Every estimator with its defaults on raw features, against
``make_pipeline(StandardScaler(), SVC())`` fitted on the same stratified
split in the same process; medians over ``--repeats`` fits, numba warmed
up on a small fit first. Accuracy is measured on the held-out part.

    python benchmarks/bench_multiclass.py                    # digits 50 %, satellite 50 / 80 %
    python benchmarks/bench_multiclass.py --curve satellite  # ratio against training size
    python benchmarks/bench_multiclass.py --profile digits satellite
    python benchmarks/bench_multiclass.py --profile satellite --warm  # the second fit
    python benchmarks/bench_multiclass.py --profile satellite --fraction 0.8
    python benchmarks/bench_multiclass.py --tiled 649              # digits, features tiled to d

``--profile`` runs one fit under cProfile and sums its time into the parts
of a fit: kernel evaluation, combining the kernel (whole matrix or rows),
the quadratic forms ``q``, SMO, the outer method's master step, and the
rest. Run it with ``PYTHONPATH=<another tree>`` to profile another commit.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mklopt import MKLClassifier, datasets

CASES = [("digits", 0.5), ("satellite", 0.5), ("satellite", 0.8)]

#: Profile categories: (label, predicate on "file:function").
_PARTS = [
    # (first: the forms computed from features run in _jit/groups.py too)
    ("q (quadratic forms)", ("quad_forms", "_gram.py:quad", "gram.py:quad")),
    ("kernel evaluation", ("_jit/groups.py", "_jit/gram.py", "kernels/functions.py",
                           "products_sym", "products_block")),
    ("combine (matrix or rows)", ("combine_kernels", "combine_view", "view_rows",
                                  "combine_rows", "storage.py:", "smo_gradient",
                                  "product_rows", "product_combine", "source_diag", "source_fill")),
    ("SMO", ("smo_solve", "_jit/smo.py")),
    ("outer method (master step)", ("mklopt/methods/", "_highspy", "_ecos", "scipy/optimize",
                                    "scipy/sparse")),
]


def load(name, train_fraction, seed=0, tile=None):
    if name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = datasets.load(name)
    if tile is not None:
        X = np.tile(X, (1, -(-tile // X.shape[1])))[:, :tile]
    return train_test_split(X, y, train_size=train_fraction, random_state=seed, stratify=y)


def warm_up():
    X, y = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifier().fit(X[:200], y[:200])


def time_fits(X_tr, y_tr, X_te, y_te, repeats):
    out = {}
    for key, make in (("svc", lambda: make_pipeline(StandardScaler(), SVC())),
                      ("mkl", MKLClassifier)):
        secs = []
        for _ in range(repeats):
            est = make()
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X_tr, y_tr)
            secs.append(time.perf_counter() - t0)
        out[key] = (float(np.median(secs)), float(est.score(X_te, y_te)))
    return out


def table(cases, repeats, tile=None):
    print("| data | n train | d | classes | SVC fit s | MKLClassifier() fit s | ratio | "
          "accuracy SVC / MKL |")
    print("|---|---|---|---|---|---|---|---|")
    for name, frac in cases:
        X_tr, X_te, y_tr, y_te = load(name, frac, tile=tile)
        r = time_fits(X_tr, y_tr, X_te, y_te, repeats)
        label = f"{name} ({int(100 * frac)} %)" + (f", tiled to d = {tile}" if tile else "")
        print(f"| {label} | {X_tr.shape[0]:,} | {X_tr.shape[1]} | {len(np.unique(y_tr))} | "
              f"{r['svc'][0]:.3f} | {r['mkl'][0]:.3f} | {r['mkl'][0] / r['svc'][0]:.1f}x | "
              f"{r['svc'][1]:.3f} / {r['mkl'][1]:.3f} |", flush=True)


def curve(name, sizes, repeats):
    print("| n train | SVC fit s | MKLClassifier() fit s | ratio | accuracy SVC / MKL |")
    print("|---|---|---|---|---|")
    X, y = datasets.load(name)
    X_rest, X_te, y_rest, y_te = train_test_split(X, y, test_size=0.2, random_state=0,
                                                  stratify=y)
    for n in sizes:
        if n < X_rest.shape[0]:
            X_tr, _, y_tr, _ = train_test_split(X_rest, y_rest, train_size=n, random_state=0,
                                                stratify=y_rest)
        else:
            X_tr, y_tr = X_rest, y_rest
        r = time_fits(X_tr, y_tr, X_te, y_te, repeats)
        print(f"| {X_tr.shape[0]:,} | {r['svc'][0]:.3f} | {r['mkl'][0]:.3f} | "
              f"{r['mkl'][0] / r['svc'][0]:.1f}x | {r['svc'][1]:.3f} / {r['mkl'][1]:.3f} |",
              flush=True)


def profile(name, frac, warm=False):
    X_tr, _, y_tr, _ = load(name, frac)
    if warm:
        # A first fit maps the bank's memory: the profiled fit then does not
        # pay the first touch of a fresh 1.4 GB (up to 1.5 s on this VM).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            MKLClassifier().fit(X_tr, y_tr)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MKLClassifier().fit(X_tr, y_tr)
    prof.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats
    parts = dict.fromkeys([p for p, _ in _PARTS], 0.0)
    for (fname, _, func), (_, _, tottime, _, _) in stats.items():
        key = f"{fname}:{func}"
        for label, needles in _PARTS:
            if any(s in key for s in needles):
                parts[label] += tottime
                break
    calls = int(np.sum(clf.n_oracle_calls_))
    print(f"{name} ({int(100 * frac)} %): {total:.2f} s, {len(clf.models_)} pairs, "
          f"{calls} oracle calls")
    print("| part | seconds | share |")
    print("|---|---|---|")
    for label, secs in parts.items():
        print(f"| {label} | {secs:.3f} | {100 * secs / total:.0f} % |")
    rest = total - sum(parts.values())
    print(f"| the rest (Python around each call, bookkeeping) | {rest:.3f} | "
          f"{100 * rest / total:.0f} % |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--curve", metavar="DATA", default=None,
                    help="fit-time ratio against training size on this bundled set")
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 3000, 4000, 5148])
    ap.add_argument("--profile", nargs="+", metavar="DATA", default=None,
                    help="profile one fit of each set (the --fraction split)")
    ap.add_argument("--fraction", type=float, default=0.5,
                    help="with --profile: the training fraction of the split (default 0.5)")
    ap.add_argument("--warm", action="store_true",
                    help="with --profile: profile the second fit of the process")
    ap.add_argument("--tiled", type=int, default=None,
                    help="digits with its features tiled to this many columns")
    args = ap.parse_args(argv)
    warm_up()
    if args.profile:
        for name in args.profile:
            profile(name, args.fraction, warm=args.warm)
    elif args.curve:
        curve(args.curve, args.sizes, args.repeats)
    elif args.tiled:
        table([("digits", 0.5)], args.repeats, tile=args.tiled)
    else:
        table(CASES, args.repeats)


if __name__ == "__main__":
    main()
