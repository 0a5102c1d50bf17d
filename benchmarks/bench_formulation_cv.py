"""The formulation CV target (issue 44): ``MKLClassifierCV()`` against its references, one process.

    python benchmarks/bench_formulation_cv.py [--repeats 3] [--datasets digits satellite ...]
        [--out benchmarks/results/formulation_cv.json]

The data, split and references of ``mklopt bench --protocol compare``
(``svc``, ``svc-grid``, ``average``; :mod:`mklopt.bench.compare`), with
``mkl-cv`` (``MKLClassifierCV()``, successive halving) and
``mkl-cv-exhaustive`` (``search="exhaustive"``, the earlier default). One
BLAS/OpenMP/numba thread, ``repeats`` interleaved fits after
:func:`mklopt.bench.compare.warm_up`; times are medians. A last table says
where each search's time went (the last repeat): per formulation, the
(fold, C) points solved, the SVM solves and the seconds of its path points;
``other`` is the bank, the scores and the refit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from mklopt import datasets
from mklopt.bench import compare
from mklopt.bench import results as R
from mklopt.estimators import MKLClassifierCV

HERE = Path(__file__).resolve().parent
DATASETS = ("digits", "satellite", "satellite-bands")
ESTIMATORS = ("svc", "svc-grid", "average", "mkl-cv-exhaustive", "mkl-cv")
REFERENCES = compare.FORMULATION_REFERENCES


def _makers(kernels, d):
    make = compare.factories(kernels, d)
    out = {e: make[e] for e in ("svc", "svc-grid", "average")}
    out["mkl-cv-exhaustive"] = lambda: MKLClassifierCV(kernels=kernels, search="exhaustive")
    out["mkl-cv"] = lambda: MKLClassifierCV(kernels=kernels)
    return out


def _fit(make, X, y):
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
    return est, time.perf_counter() - t0


def _profile(name, e, est, seconds):
    """Rows of the profile table: where one search's time went."""
    rows, spent = [], 0.0
    forms = getattr(est, "formulations_", [{}])
    for form, paths in zip(forms, est.paths_, strict=True):
        solved = paths.get("evaluated", np.ones(paths["value"].shape, dtype=bool))
        points = int(solved.any(axis=2).sum())
        secs = float(np.nansum(paths["fit_time"]))
        spent += secs
        label = f"p={form.get('p', 1.0):g}" + (" shared" if form.get("multiclass") == "shared"
                                               else "")
        rows.append([name, e, label, str(points), str(int(paths["n_oracle_calls"].sum())),
                     f"{secs:.2f}"])
    rows.append([name, e, "other (bank, scores, refit)", "", "", f"{seconds - spent:.2f}"])
    return rows


def run(names, repeats, log):
    compare.warm_up()
    records, profile = [], []
    for name in names:
        X, y, kernels = compare.load(name)
        X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=0, stratify=True)
        make = _makers(kernels, X.shape[1])
        recs, last = {}, {}
        with R.blas_threads(1):
            for e in ESTIMATORS:
                recs[e] = {"dataset": name, "split": 0, "estimator": e, "n_train": len(y_tr),
                           "n_test": len(y_te), "n_points": len(y), "seconds_1": []}
            for _ in range(repeats):
                for e in ESTIMATORS:
                    est, secs = _fit(make[e], X_tr, y_tr)
                    recs[e]["seconds_1"].append(secs)
                    recs[e]["accuracy"] = float(est.score(X_te, y_te))
                    last[e] = (secs, est)
                    if log:
                        log(f"{name} {e}: {secs:.2f} s, {100 * recs[e]['accuracy']:.1f} %")
        for e in ESTIMATORS:
            rec = recs[e]
            rec["fit_1"] = statistics.median(rec["seconds_1"])
            if e.startswith("mkl-cv"):
                est = last[e][1]
                rec["best_params"] = {k: float(v) if isinstance(v, float) else v
                                      for k, v in est.best_params_.items()}
                profile += _profile(name, e, est, last[e][0])
            records.append(rec)
    return records, profile


def tables(records, profile):
    """The results file's tables: fits, targets and where the time went (from :func:`_profile`'s
    rows, one column per formulation)."""
    by = {(r["dataset"], r["estimator"]): r for r in records}
    main, targets, where = [], [], []
    for r in records:
        grid_ = by[(r["dataset"], "svc-grid")]
        main.append([r["dataset"], f"{r['n_train']:,}", r["estimator"],
                     f"{100 * r['accuracy']:.1f}", f"{r['fit_1']:.2f}",
                     f"{r['fit_1'] / grid_['fit_1']:.2f}x",
                     " ".join(f"{s:.1f}" for s in r["seconds_1"])])
    parts = list(dict.fromkeys(row[2] for row in profile))
    for ds in dict.fromkeys(r["dataset"] for r in records):
        refs = [(e, by[(ds, e)]) for e in REFERENCES]
        best_e, best = max(refs, key=lambda er: er[1]["accuracy"])
        grid_ = by[(ds, "svc-grid")]
        for e in ("mkl-cv-exhaustive", "mkl-cv"):
            cv = by[(ds, e)]
            short = 100 * (best["accuracy"] - cv["accuracy"]) - 0.5
            row = [ds, e, f"{100 * cv['accuracy']:.1f} / {100 * best['accuracy']:.1f} ({best_e})",
                   "met" if short <= 1e-9 else f"not met by {short:.1f} pt"]
            if cv["n_points"] >= 1000:
                ratio = cv["fit_1"] / grid_["fit_1"]
                row += [f"{ratio:.2f}x",
                        "met" if ratio <= 0.5 else f"not met by {ratio / 0.5:.2f}x"]
            else:
                row += ["", "(under 1,000 points)"]
            targets.append(row)
            cells = {row[2]: row[3:] for row in profile if row[0] == ds and row[1] == e}
            where.append([ds, e] + [
                "" if part not in cells else
                (f"{cells[part][2]}" if cells[part][0] == "" else
                 f"{cells[part][0]} / {cells[part][1]} / {cells[part][2]}")
                for part in parts])
    return [
        R.table("Accuracy and fit time (1 thread, median of the repeats); ratio to svc-grid of "
                "the same run",
                ["data", "n train", "estimator", "test accuracy %", "fit s", "/ svc-grid",
                 "each repeat, s"], main),
        R.table("Targets (mkl-cv-exhaustive: before, every candidate on every fold; mkl-cv: "
                "after, successive halving): accuracy >= best reference - 0.5 pt; fit <= 0.5x "
                "svc-grid's on 1,000 points or more",
                ["data", "search", "accuracy / best reference", "status", "fit / svc-grid",
                 "status"], targets),
        R.table("Where a search's time went (last repeat): per formulation, (fold, C) points "
                "solved / SVM solves / seconds of its path points",
                ["data", "search", *parts], where),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "formulation_cv.json")
    args = ap.parse_args(argv)
    env = R.environment()
    records, profile = run(args.datasets, args.repeats,
                           lambda s: print(s, file=sys.stderr, flush=True))
    env["load_average_end"] = R.environment()["load_average"]
    command = (f"python benchmarks/bench_formulation_cv.py --repeats {args.repeats} "
               f"--datasets {' '.join(args.datasets)}")
    data_tables = tables(records, profile)
    R.write(args.out, "formulation_cv", command, data_tables, records, env=env)
    print(R.render_markdown(R.read(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
