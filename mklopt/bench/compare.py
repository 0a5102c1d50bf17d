"""``mklopt bench --protocol compare``: mklopt against what a user would pick instead.

Every estimator is fitted on the same stratified half split (seeds
``seed .. seed + splits - 1``), in this one process, and scored on the
other half:

- ``svc``: ``make_pipeline(StandardScaler(), SVC())``, the reference of
  every ratio;
- ``svc-grid``: ``GridSearchCV`` of it over ``C`` (5 values, 0.1 .. 1e3)
  and ``gamma`` (5 values, 0.01 .. 100 over the number of features),
  5-fold;
- ``average``: ``SVC(kernel="precomputed")`` on the uniform average of
  the kernels ``MKLClassifier`` uses (standardised features, each kernel
  with a unit mean diagonal), ``C`` by 5-fold ``GridSearchCV`` over the
  same 5 values;
- ``easymkl`` and ``averagemkl``: MKLpy's ``EasyMKL`` and ``AverageMKL``
  (their defaults, one-vs-one) on the same kernels, given as the list of
  kernel matrices MKLpy takes, when MKLpy imports (skipped with the
  reason otherwise); torch, which MKLpy computes with, gets the same
  thread setting;
- ``mkl``: ``MKLClassifier()``; ``mkl-cv``: ``MKLClassifierCV()``;
- ``mkl-precomputed``: ``MKLClassifier(kernels="precomputed")`` on the
  kernel matrices EasyMKL gets, built inside its fit as EasyMKL's are (so
  the PSD check of each matrix is timed too).

Data: digits (scikit-learn's copy), satellite, the six binary sets of the
level-method paper, and ``satellite-bands``, a multi-view set: satellite's
36 features are 9 pixels times 4 spectral bands, and each band is a view
with the 17 kernels of the default grid on its 9 features (68 kernels;
SVC sees all features).

Each fit is timed ``repeats`` times (``search_repeats`` for the two
searches) with one BLAS, OpenMP and numba thread — the like-for-like
figure, since libsvm runs on one core — and as many times with the default
threads, interleaved; times are medians. A first, untimed fit of each
estimator gives the peak memory it adds to the process (the resident
high-water mark on Linux, :func:`mklopt.bench.results.peak_memory_mb`)
and leaves the caches warm. Ratios are fit times over ``svc``'s of the
same run, split and thread setting.

Needs scikit-learn (``pip install scikit-learn`` or ``pip install
"mklopt[test]"``); MKLpy is optional (``pip install MKLpy``, which pulls
torch and cvxopt).
"""

from __future__ import annotations

import contextlib
import io
import statistics
import warnings
from functools import partial

import numpy as np

from .. import datasets
from ..kernels import KernelBank, grid, poly, rbf
from ..kernels.specs import GRID_PROTOCOLS
from . import results as R

__all__ = ["DATASETS", "ESTIMATORS", "SKLEARN_MISSING", "load", "factories", "warm_up", "run",
           "summarise", "tables", "main"]

DATASETS = ("digits", "satellite", "ionosphere", "sonar", "pima", "breast", "wdbc", "vote",
            "satellite-bands")
ESTIMATORS = ("svc", "svc-grid", "average", "easymkl", "averagemkl", "mkl", "mkl-precomputed",
              "mkl-cv")
SEARCHES = ("svc-grid", "mkl-cv")
CS = (0.1, 1.0, 10.0, 100.0, 1000.0)
GAMMAS = (0.01, 0.1, 1.0, 10.0, 100.0)  # over n_features: 1 is SVC's "scale" on standardised data
SKLEARN_MISSING = ('the compare protocol needs scikit-learn for its references: pip install '
                   'scikit-learn (or pip install "mklopt[test]")')


def _sklearn():
    try:
        import sklearn  # noqa: F401
        import threadpoolctl  # noqa: F401
    except ImportError as exc:
        raise ImportError(SKLEARN_MISSING) from exc


def load(name):
    """``(X, y, kernels)`` of a compare data set; ``kernels`` is ``"all_features"`` or specs."""
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y, "all_features"
    if name == "satellite-bands":
        X, y = datasets.load("satellite")
        widths, degrees, _ = GRID_PROTOCOLS["mkboost2013"]
        specs = []
        for band in range(4):
            view = tuple(range(band, 36, 4))  # pixel-major: 9 pixels x 4 bands
            specs += [rbf(s, features=view) for s in widths]
            specs += [poly(p, features=view) for p in degrees]
        return X, y, specs
    X, y = datasets.load(name)
    return X, y, "all_features"


def _specs(kernels, d):
    return list(grid(d, protocol="mkboost2013")) if kernels == "all_features" else list(kernels)


class _Bank:
    """The kernel bank of a training set, as ``MKLClassifier(kernels=kernels)`` builds it.

    ``MKLClassifier``'s ``standardize="auto"``: the named grid on the
    standardised features, a list of specs on the features as given; every
    kernel with a unit mean diagonal on the training set. (``MKLClassifier``
    normalises each one-vs-one pair's kernels on the pair's rows; this bank
    on all training rows, which for a polynomial kernel of a multiclass set
    is the same kernel times one positive factor per pair.)
    """

    def __init__(self, X, kernels):
        from sklearn.preprocessing import StandardScaler

        self.scaler = StandardScaler().fit(X) if isinstance(kernels, str) else None
        self.bank = KernelBank.from_specs(self._features(X), _specs(kernels, X.shape[1]),
                                          normalize="diagonal")
        self.m = self.bank.n_kernels

    def _features(self, X):
        return X if self.scaler is None else self.scaler.transform(X)

    def combine_cross(self, X_new, w):
        """The combination ``w`` of the kernels between ``X_new`` and the training set."""
        return self.bank.combine_cross(self._features(X_new), w)

    def stack(self, X_new=None):
        """Each kernel alone, ``(m, rows, n_train)``: on the training set, or from ``X_new`` to it.

        Written into one array, so that :class:`PrecomputedMKL` gets its
        ``(m, n, n)`` input without a copy and MKLpy its list (:meth:`single`)
        as views of the same matrices.
        """
        rows = self.bank.n_samples if X_new is None else len(X_new)
        out = np.empty((self.m, rows, self.bank.n_samples))
        Z = None if X_new is None else self._features(X_new)  # standardised once, not per kernel
        for k in range(self.m):
            w = np.zeros(self.m)
            w[k] = 1.0
            if Z is None:
                self.bank.combine(w, out[k])
            else:
                out[k] = self.bank.combine_cross(Z, w)
        return out

    def single(self, X_new=None):
        """:meth:`stack` as a list of ``m`` matrices, the input MKLpy takes."""
        return list(self.stack(X_new))


class UniformAverage:
    """SVC on the uniform average of the kernels, C by 5-fold grid search."""

    def __init__(self, kernels):
        self.kernels = kernels

    def fit(self, X, y):
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC

        self.bank_ = _Bank(X, self.kernels)
        self.w_ = np.full(self.bank_.m, 1.0 / self.bank_.m)
        K = np.array(self.bank_.bank.combine(self.w_))
        self.search_ = GridSearchCV(SVC(kernel="precomputed"), {"C": list(CS)}, cv=5).fit(K, y)
        return self

    def score(self, X, y):
        Kx = self.bank_.combine_cross(X, self.w_)
        return float(np.mean(self.search_.predict(Kx) == y))


class _ScoredByPredict:
    """``score``: the accuracy of ``predict``, for the protocol's wrappers."""

    def score(self, X, y):
        return float(np.mean(self.predict(X) == np.asarray(y)))


class MKLpyModel(_ScoredByPredict):
    """MKLpy's EasyMKL or AverageMKL (their defaults, one-vs-one) on the same kernels.

    MKLpy takes a list of kernel matrices: at fit, the ``m`` training
    kernels (``n_train x n_train`` each) of :class:`_Bank`; at prediction,
    the ``m`` cross kernels (``n_test x n_train``). The labels go to MKLpy
    as ``0 .. k-1`` and come back as the classes: MKLpy's one-vs-one vote
    returns the index of a class, not its label. Each fit gets a fresh base
    learner (MKLpy's default one is a single object shared by every
    instance), and MKLpy's ``print`` in its vote is kept off the output.
    """

    def __init__(self, kernels, algorithm):
        self.kernels, self.algorithm = kernels, algorithm

    def fit(self, X, y):
        from MKLpy import algorithms
        from sklearn.base import clone

        self.bank_ = _Bank(X, self.kernels)
        self.classes_, codes = np.unique(y, return_inverse=True)
        cls = getattr(algorithms, self.algorithm)
        model = cls(learner=clone(cls().learner), multiclass_strategy="ovo")
        with contextlib.redirect_stdout(io.StringIO()):
            self.model_ = model.fit(self.bank_.single(), codes)
        return self

    def predict(self, X):
        with contextlib.redirect_stdout(io.StringIO()):
            codes = np.asarray(self.model_.predict(self.bank_.single(X)))
        return self.classes_[codes.astype(np.intp)]


class PrecomputedMKL(_ScoredByPredict):
    """``MKLClassifier(kernels="precomputed")`` on the kernel matrices :class:`MKLpyModel` gets.

    At fit, the ``m`` training kernels of :class:`_Bank` stacked as an
    ``(m, n_train, n_train)`` array; at prediction, the ``m`` cross kernels.
    """

    def __init__(self, kernels):
        self.kernels = kernels

    def fit(self, X, y):
        from ..estimators import MKLClassifier

        self.bank_ = _Bank(X, self.kernels)
        self.model_ = MKLClassifier(kernels="precomputed").fit(self.bank_.stack(), y)
        return self

    def predict(self, X):
        return self.model_.predict(self.bank_.stack(X))


def _mklpy_reason():
    try:
        import MKLpy  # noqa: F401
    except Exception as exc:  # ImportError, or torch failing to load
        return f"MKLpy not importable ({type(exc).__name__}: {exc}); pip install MKLpy"
    return None


def factories(kernels, d):
    """One constructor per estimator of the protocol, on these kernels.

    Parameters
    ----------
    kernels : str or list
        What ``MKLClassifier`` and the kernel-based references (``average``,
        ``easymkl``, ``averagemkl``) use: ``"all_features"`` or a list of
        specs, as :func:`load` returns them.
    d : int
        The number of features: ``svc-grid``'s gammas are ``GAMMAS`` over ``d``.

    Returns
    -------
    dict
        ``{name: callable}`` for every name of :data:`ESTIMATORS`; each call
        returns a new, unfitted estimator.
    """
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from ..estimators import MKLClassifier, MKLClassifierCV

    def svc():
        return make_pipeline(StandardScaler(), SVC())

    grid_ = {"svc__C": list(CS), "svc__gamma": [g / d for g in GAMMAS]}
    return {
        "svc": svc,
        "svc-grid": lambda: GridSearchCV(svc(), grid_, cv=5),
        "average": lambda: UniformAverage(kernels),
        "easymkl": lambda: MKLpyModel(kernels, "EasyMKL"),
        "averagemkl": lambda: MKLpyModel(kernels, "AverageMKL"),
        "mkl": lambda: MKLClassifier(kernels=kernels),
        "mkl-precomputed": lambda: PrecomputedMKL(kernels),
        "mkl-cv": lambda: MKLClassifierCV(kernels=kernels),
    }


def _fit(make, X, y):
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est


def warm_up():
    """Fit ``MKLClassifier()`` and ``MKLClassifierCV()`` once on 200 points of digits.

    numba then compiles (or loads from its cache) the fits' primitives
    before anything is measured; :func:`run` calls it first.

    Returns
    -------
    None
    """
    from ..estimators import MKLClassifier, MKLClassifierCV

    X, y, _ = load("digits")
    for make in (MKLClassifier, MKLClassifierCV):
        _fit(make, X[:200], y[:200])


def run(names=DATASETS, estimators=ESTIMATORS, splits=1, seed=0, repeats=3, search_repeats=1,
        log=None):
    """Run the protocol; returns ``(records, skipped)``.

    ``records``: one dict per data set, split and estimator (accuracy,
    peak memory, fit times with one thread and with the default threads);
    ``skipped``: ``{estimator: reason}``.
    """
    _sklearn()
    skipped = {}
    reason = _mklpy_reason()
    if reason:
        skipped.update({e: reason for e in ("easymkl", "averagemkl") if e in estimators})
    active = [e for e in estimators if e not in skipped]
    warm_up()
    records = []
    for name in names:
        X, y, kernels = load(name)
        for split in range(seed, seed + splits):
            X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=split,
                                                    stratify=True)
            make = factories(kernels, X.shape[1])
            recs = {}
            for e in active:
                try:
                    peak, how, _ = R.peak_memory_mb(partial(_fit, make[e], X_tr, y_tr))
                except Exception as exc:  # a reference that fails on this set
                    skipped[f"{e} on {name}"] = f"{type(exc).__name__}: {exc}"
                    continue
                recs[e] = {"dataset": name, "split": split, "estimator": e,
                           "n_train": len(y_tr), "n_test": len(y_te),
                           "n_features": X.shape[1],
                           "n_classes": len(np.unique(y_tr)), "peak_mb": peak, "memory": how,
                           "seconds_1": [], "seconds_default": []}
            for r in range(max(repeats, search_repeats)):
                for threads, key in ((1, "seconds_1"), (None, "seconds_default")):
                    for e, rec in recs.items():
                        if r >= (search_repeats if e in SEARCHES else repeats):
                            continue
                        with R.blas_threads(threads):
                            secs, _, est = R.median_time(partial(_fit, make[e], X_tr, y_tr), 1)
                        rec[key].append(secs)
                        rec["accuracy"] = float(est.score(X_te, y_te))
            for rec in recs.values():
                rec["fit_1"] = statistics.median(rec["seconds_1"])
                rec["fit_default"] = statistics.median(rec["seconds_default"])
                records.append(rec)
                if log:
                    log(f"{name} split {split} {rec['estimator']}: {rec['fit_1']:.3f} s "
                        f"(1 thread), {rec['fit_default']:.3f} s (default), "
                        f"{100 * rec['accuracy']:.1f} %, {rec['peak_mb']:.0f} MB")
    return records, skipped


def summarise(records):
    """Per data set and estimator: medians over splits, ratios to ``svc`` in both settings."""
    groups = {}
    for r in records:
        groups.setdefault((r["dataset"], r["estimator"]), []).append(r)
    out = []
    for (ds, e), rs in groups.items():
        ref = {r["split"]: r for r in groups.get((ds, "svc"), [])}
        row = {"dataset": ds, "estimator": e, "n_train": rs[0]["n_train"],
               "n_points": rs[0]["n_train"] + rs[0].get("n_test", rs[0]["n_train"]),
               "n_classes": rs[0]["n_classes"]}
        for f in ("accuracy", "peak_mb", "fit_1", "fit_default"):
            row[f] = statistics.median(r[f] for r in rs)
        for s in ("1", "default"):
            ratios = [r[f"fit_{s}"] / ref[r["split"]][f"fit_{s}"] for r in rs if r["split"] in ref]
            row[f"ratio_{s}"] = statistics.median(ratios) if ratios else float("nan")
        out.append(row)
    return out


def tables(records, skipped):
    """The protocol's tables (results-file form)."""
    rows = summarise(records)
    order = {e: i for i, e in enumerate(ESTIMATORS)}
    dsorder = {d: i for i, d in enumerate(DATASETS)}
    rows.sort(key=lambda r: (dsorder.get(r["dataset"], 99), order.get(r["estimator"], 99)))
    cells = [[r["dataset"], f"{r['n_train']:,}", r["estimator"], f"{100 * r['accuracy']:.1f}",
              f"{r['fit_1']:.3f}", f"{r['ratio_1']:.1f}x", f"{r['fit_default']:.3f}",
              f"{r['ratio_default']:.1f}x", f"{r['peak_mb']:.1f}"] for r in rows]
    notes = "; ".join(f"{k} skipped: {v}" for k, v in skipped.items())
    main_table = R.table(
        "Accuracy, fit time (median) and the peak memory a fit adds; ratios to svc of the same run",
        ["data", "n train", "estimator", "test accuracy %", "fit s (1 thread)",
         "/ svc (1 thread)", "fit s (default threads)", "/ svc (default)",
         f"peak MB ({records[0]['memory'] if records else '-'})"],
        cells, notes)
    by = {(r["dataset"], r["estimator"]): r for r in rows}
    targets = []
    for ds in sorted({r["dataset"] for r in rows}, key=lambda d: dsorder.get(d, 99)):
        mkl = by.get((ds, "mkl"))
        if mkl is None:
            targets.extend(_formulation_targets(ds, by))
            continue
        if ds in ("digits", "satellite"):
            targets.append([ds, "mkl within 5x of svc (1 thread)", f"{mkl['ratio_1']:.1f}x",
                            "met" if mkl["ratio_1"] <= 5 else
                            f"not met by {mkl['ratio_1'] / 5:.2f}x"])
        easy = by.get((ds, "easymkl"))
        for e in ("mkl", "mkl-precomputed"):
            if easy is not None and (ds, e) in by and mkl["n_train"] >= 200:
                t = by[ds, e]["fit_1"]
                targets.append([ds, f"{e} faster than EasyMKL (1 thread)",
                                f"{t / easy['fit_1']:.2f}x",
                                "met" if t < easy["fit_1"] else "not met"])
        if easy is not None:
            targets.append([ds, "mkl accuracy >= EasyMKL's",
                            f"{100 * mkl['accuracy']:.1f} / {100 * easy['accuracy']:.1f}",
                            "met" if mkl["accuracy"] >= easy["accuracy"] else "not met"])
        targets.extend(_formulation_targets(ds, by))
    out = [main_table]
    if targets:
        out.append(R.table("Targets", ["data", "target", "figure", "status"], targets))
    return out


#: The references of the formulation-CV target (issue 44): mkl-cv's accuracy
#: at least the best of them minus 0.5 points, and on sets of 1,000 points or
#: more at most half of svc-grid's fit time.
FORMULATION_REFERENCES = ("svc", "svc-grid", "average")


def _formulation_targets(ds, by):
    """The formulation-CV target rows of data set ``ds`` (none without mkl-cv and a reference)."""
    cv = by.get((ds, "mkl-cv"))
    refs = [(e, by[(ds, e)]) for e in FORMULATION_REFERENCES if (ds, e) in by]
    if cv is None or not refs:
        return []
    best_e, best = max(refs, key=lambda er: er[1]["accuracy"])
    short = 100 * (best["accuracy"] - cv["accuracy"]) - 0.5
    rows = [[ds, "mkl-cv accuracy >= best reference - 0.5 pt",
             f"{100 * cv['accuracy']:.1f} / {100 * best['accuracy']:.1f} ({best_e})",
             "met" if short <= 1e-9 else f"not met by {short:.1f} pt"]]
    grid_ = by.get((ds, "svc-grid"))
    if grid_ is not None and cv["n_points"] >= 1000:
        ratio = cv["fit_1"] / grid_["fit_1"]
        rows.append([ds, "mkl-cv fit <= 0.5x svc-grid's (1 thread)", f"{ratio:.2f}x",
                     "met" if ratio <= 0.5 else f"not met by {ratio / 0.5:.2f}x"])
    return rows


def main(names=DATASETS, out=None, splits=1, seed=0, repeats=3, search_repeats=1,
         estimators=ESTIMATORS, quiet=False, command="mklopt bench --protocol compare"):
    """Run, print the tables and write ``out`` (a results file) when given."""
    import sys

    env = R.environment()  # the load when the run starts
    log = None if quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    records, skipped = run(names, estimators, splits, seed, repeats, search_repeats, log)
    env["load_average_end"] = R.environment()["load_average"]
    data = {"schema": R.SCHEMA, "name": "compare", "command": command, "environment": env,
            "source": "measured", "tables": tables(records, skipped), "records": records}
    print(R.render_markdown(data))
    if out:
        R.write(out, "compare", command, data["tables"], records, env=env)
        print(f"wrote {out}", file=sys.stderr)
    return 0
