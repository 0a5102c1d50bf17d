"""MKLClassifierCV against GridSearchCV(MKLClassifier()): medians over repeats, where the time goes.

``StratifiedKFold(5)`` of a stratified 50 % training half, 8 ``Cs``
log-spaced from 1e-2 to 1e3, default parameters; every search timed
``--repeats`` times (the MKL grid search ``--gs-repeats`` times),
interleaved, medians reported. ``MKLClassifierCV``'s time is split into the
folds' paths, the refit and the rest (the bank, the decisions, scoring),
and the paths' SVM solves are counted per C. ``--floor`` also times
``MKLClassifierCV(tol=1e6)``, where every path point stops at its first
oracle call: the least any outer method could reach at today's cost of a
call. Two versions of mklopt, each against its own grid search:

    python benchmarks/bench_cv_speed.py
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_cv_speed.py
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import mklopt
from mklopt import MKLClassifier, MKLClassifierCV, datasets

#: Training rows kept per data set (None: the whole 50 % half).
DEFAULT_N_TRAIN = {"digits": None, "satellite": 1000, "ionosphere": None}


def load(name, n_train, seed=0):
    """A stratified half split of ``name``, its training half cut to ``n_train`` rows."""
    X, y = load_digits(return_X_y=True) if name == "digits" else datasets.load(name)
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


def quiet_fit(make, X, y):
    """``(estimator, fit seconds)``, warnings silenced (public API only: runs on older trees)."""
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        return est, time.perf_counter() - t0


def run(name, n_train, Cs, repeats, gs_repeats, floor=False):
    X_tr, X_te, y_tr, y_te, full = load(name, n_train)
    folds = list(StratifiedKFold(5).split(X_tr, y_tr))
    makers = {
        "cv": lambda: MKLClassifierCV(Cs=Cs, cv=folds, formulations=None),  # C alone, as the grid
        "gs": lambda: GridSearchCV(MKLClassifier(), {"C": Cs}, cv=folds),
        "svc": lambda: GridSearchCV(make_pipeline(StandardScaler(), SVC()), {"svc__C": Cs},
                                    cv=folds),
    }
    if floor:
        # Any gap is accepted: one oracle call per point not carried over.
        makers["floor"] = lambda: MKLClassifierCV(Cs=Cs, cv=folds, tol=1e6, formulations=None)
    times = {k: [] for k in makers}
    last = {}
    parts = []
    for r in range(max(repeats, gs_repeats)):
        for key, make in makers.items():
            if r >= (gs_repeats if key == "gs" else repeats):
                continue
            est, secs = quiet_fit(make, X_tr, y_tr)
            times[key].append(secs)
            last[key] = est
            if key == "cv":
                paths = float(np.sum(est.cv_results_["mean_fit_time"]) * est.n_splits_)
                parts.append((paths, est.refit_time_, secs - paths - est.refit_time_))
    med = {k: float(np.median(v)) for k, v in times.items()}
    cv, gs = last["cv"], last["gs"]
    label = f"{name} ({X_tr.shape[0]:,} train)"
    diff = float(np.max(np.abs(cv.cv_results_["mean_test_score"]
                               - gs.cv_results_["mean_test_score"])))
    at = int(np.flatnonzero(np.isclose(Cs, cv.best_C_))[0])
    paths, refit, rest = (float(np.median([p[i] for p in parts])) for i in range(3))
    calls = cv.path_n_oracle_calls_.sum(axis=(0, 2))
    print(f"| {label} | {med['cv']:.2f} ({', '.join(f'{t:.2f}' for t in times['cv'])}) | "
          f"{med['gs']:.2f} ({', '.join(f'{t:.2f}' for t in times['gs'])}) | "
          f"**{med['gs'] / med['cv']:.1f}x** | {med['svc']:.2f} | "
          f"{cv.best_C_:.3g} / {gs.best_params_['C']:.3g} | "
          f"{cv.best_score_:.4f} / {gs.best_score_:.4f} "
          f"({gs.cv_results_['mean_test_score'][at]:.4f}) | "
          f"{cv.score(X_te, y_te):.4f} / {gs.score(X_te, y_te):.4f} | {diff:.4f} |", flush=True)
    print(f"<!-- {label}: MKLClassifierCV median split: paths {paths:.2f} s, refit {refit:.2f} s, "
          f"rest {rest:.2f} s; SVM solves of the paths per C (all folds and pairs): "
          f"{', '.join(str(int(c)) for c in calls)} (total {int(calls.sum())}) -->", flush=True)
    if floor:
        fl = last["floor"]
        print(f"<!-- {label}: floor (tol=1e6, one call per point not carried): "
              f"{med['floor']:.2f} s ({', '.join(f'{t:.2f}' for t in times['floor'])}), "
              f"{int(fl.path_n_oracle_calls_.sum())} path calls, refit {fl.refit_time_:.2f} s; "
              f"grid search / floor = {med['gs'] / med['floor']:.1f}x -->", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["digits", "satellite", "ionosphere"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gs-repeats", type=int, default=2)
    parser.add_argument("--n-train", type=int, default=None,
                        help="training points per set (default: the whole half; satellite 1,000)")
    parser.add_argument("--floor", action="store_true",
                        help="also time the one-call-per-point floor (tol=1e6)")
    args = parser.parse_args()
    Cs = [float(c) for c in np.logspace(-2, 3, 8)]
    warm_up()
    print(f"<!-- mklopt from {os.path.dirname(mklopt.__file__)} -->")
    print("| data | MKLClassifierCV s: median (runs) | GridSearchCV(MKL) s: median (runs) | "
          "speed-up | GridSearchCV(SVC) s | chosen C: CV / GS | CV score: CV / GS (GS's "
          "own at CV's C) | test accuracy: CV / GS | max diff of mean CV scores |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.data:
        run(name, args.n_train or DEFAULT_N_TRAIN.get(name), Cs, args.repeats, args.gs_repeats,
            args.floor)


if __name__ == "__main__":
    main()
