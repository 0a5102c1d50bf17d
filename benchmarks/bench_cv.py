"""Choosing C by cross-validation: ``MKLClassifierCV`` against two grid searches.

For each data set, in the same process and on the same stratified 50 %
split (the other half is the test set):

* ``MKLClassifierCV(Cs=Cs, cv=folds)``: one kernel bank, a warm-started
  path over C in each fold, refit at the best C;
* ``GridSearchCV(MKLClassifier(), {"C": Cs}, cv=folds)``: one cold fit per
  (C, fold), each evaluating its own kernels, then the refit;
* ``GridSearchCV(make_pipeline(StandardScaler(), SVC()), {"svc__C": Cs},
  cv=folds)``: the single-kernel reference.

``folds`` is one ``StratifiedKFold(5)`` for all three, ``Cs`` 8 values
log-spaced from 1e-2 to 1e3. Reported: fit time (grid search and refit),
the chosen C, its cross-validated score, the test accuracy, and the
largest gap between the two MKL searches' mean CV scores over the grid.
numba is warmed up on a small fit first.

    python benchmarks/bench_cv.py                       # digits, satellite (1,000), ionosphere
    python benchmarks/bench_cv.py --data ionosphere --n-train 0   # 0: the whole half
    python benchmarks/bench_cv.py --scale-once   # features standardised once, for both
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mklopt import MKLClassifier, MKLClassifierCV, datasets

#: Training rows kept per data set (None: the whole 50 % half).
DEFAULT_N_TRAIN = {"digits": None, "satellite": 1000, "ionosphere": None}


def load(name, n_train, seed=0):
    if name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = datasets.load(name)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=0.5, random_state=seed,
                                              stratify=y)
    full = X_tr.shape[0]
    if n_train and n_train < full:
        X_tr, _, y_tr, _ = train_test_split(X_tr, y_tr, train_size=n_train,
                                            random_state=seed, stratify=y_tr)
    return X_tr, X_te, y_tr, y_te, full


def warm_up():
    X, y = load_digits(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifierCV(Cs=3, cv=3).fit(X[:150], y[:150])
        MKLClassifier().fit(X[:150], y[:150])


def run(name, n_train, Cs, once=False):
    X_tr, X_te, y_tr, y_te, full = load(name, n_train)
    folds = list(StratifiedKFold(5).split(X_tr, y_tr))
    kw = {}
    if once:
        # Standardised once with the training statistics, for both MKL
        # searches: their fold problems are then the same problems.
        mean, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
        sd[sd == 0] = 1.0
        X_tr, X_te = (X_tr - mean) / sd, (X_te - mean) / sd
        kw = {"standardize": False}
    searches = {
        "MKLClassifierCV": lambda: MKLClassifierCV(Cs=Cs, cv=folds, **kw),
        "GridSearchCV(MKL)": lambda: GridSearchCV(MKLClassifier(**kw), {"C": Cs}, cv=folds),
        "GridSearchCV(SVC)": lambda: GridSearchCV(
            make_pipeline(StandardScaler(), SVC()), {"svc__C": Cs}, cv=folds),
    }
    rows = {}
    for key, make in searches.items():
        est = make()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X_tr, y_tr)
        secs = time.perf_counter() - t0
        if key == "MKLClassifierCV":
            C, score = est.best_C_, est.best_score_
            refit = est.refit_time_
        else:
            C, score = next(iter(est.best_params_.values())), est.best_score_
        rows[key] = dict(secs=secs, C=float(C), cv=float(score),
                         test=float(est.score(X_te, y_te)),
                         mean=np.asarray(est.cv_results_["mean_test_score"], dtype=float),
                         fit_times=np.asarray(est.cv_results_["mean_fit_time"], dtype=float))
    diff = float(np.max(np.abs(rows["MKLClassifierCV"]["mean"]
                               - rows["GridSearchCV(MKL)"]["mean"])))
    ref = rows["GridSearchCV(MKL)"]["secs"]
    gs_fit = rows["GridSearchCV(MKL)"]["fit_times"]
    label = f"{name} ({X_tr.shape[0]:,} of {full:,} train{', scaled once' if once else ''})"
    for key, r in rows.items():
        print(f"| {label} | {key} | {r['secs']:.2f} | {ref / r['secs']:.1f}x | {r['C']:.3g} | "
              f"{r['cv']:.4f} | {r['test']:.4f} |", flush=True)
    at = int(np.flatnonzero(np.isclose(Cs, rows["MKLClassifierCV"]["C"]))[0])
    print(f"| {label} | max abs diff of the MKL mean CV scores over the grid; the grid "
          f"search's own score at MKLClassifierCV's C | | | | {diff:.4f}; "
          f"{rows['GridSearchCV(MKL)']['mean'][at]:.4f} | |", flush=True)
    cv_fit = rows["MKLClassifierCV"]["fit_times"]
    print(f"<!-- {label}: MKLClassifierCV refit {refit:.2f} s; mean fit s per C (fold, all "
          f"pairs), CV path / grid search: "
          + ", ".join(f"{a:.3f}/{b:.3f}" for a, b in zip(cv_fit, gs_fit, strict=True))
          + " -->", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["digits", "satellite", "ionosphere"])
    parser.add_argument("--n-train", type=int, default=None,
                        help="training rows kept (default per data set; 0: all of the half)")
    parser.add_argument("--n-cs", type=int, default=8)
    parser.add_argument("--scale-once", action="store_true",
                        help="standardise once with the training statistics (standardize=False)")
    args = parser.parse_args()
    Cs = [float(c) for c in np.logspace(-2, 3, args.n_cs)]
    warm_up()
    print("| data | search | fit s | speed-up vs GridSearchCV(MKL) | chosen C | CV score | "
          "test accuracy |")
    print("|---|---|---|---|---|---|---|")
    for name in args.data:
        n = DEFAULT_N_TRAIN.get(name) if args.n_train is None else args.n_train
        run(name, n, Cs, once=args.scale_once)


if __name__ == "__main__":
    main()
