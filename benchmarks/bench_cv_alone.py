"""MKLClassifierCV alone on bench_cv's data and folds: medians of a few fits, to compare trees.

The data, split, folds (``StratifiedKFold(5)``) and the 8 ``Cs`` of
``bench_cv.py``; only the CV estimator is timed (no grid search), so two
trees can be alternated quickly in one session:

    export OPENBLAS_NUM_THREADS=1
    python benchmarks/bench_cv_alone.py --data satellite digits
    python benchmarks/bench_cv_alone.py --data satellite --n-train 2500 --repeats 3
    (cd <other tree> && PYTHONPATH=. python <this tree>/benchmarks/bench_cv_alone.py)

Prints one line: per data set the median and every fit's seconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold

from mklopt import MKLClassifierCV

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cv import DEFAULT_N_TRAIN, load, warm_up  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["satellite", "digits"])
    parser.add_argument("--n-train", type=int, default=None,
                        help="training points of every set (default: the bench_cv sizes)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    Cs = np.logspace(-2, 3, 8)
    warm_up()
    out = []
    for name in args.data:
        X, _, y, _, _ = load(name, args.n_train or DEFAULT_N_TRAIN.get(name))
        folds = list(StratifiedKFold(5).split(X, y))
        secs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                MKLClassifierCV(Cs=Cs, cv=folds).fit(X, y)
            secs.append(time.perf_counter() - t0)
        out.append(f"{name} {np.median(secs):.2f} ({' '.join(f'{t:.2f}' for t in secs)})")
    print("; ".join(out), flush=True)


if __name__ == "__main__":
    main()
