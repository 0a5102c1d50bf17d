"""Logistic MKL on real data: MKLClassifier(loss="logistic") against scikit-learn.

On the binary bundled sets (ionosphere, sonar, breast, pima) and on
``satellite-grey``, two neighbouring soil classes of satellite ("grey
soil" against "damp grey soil", 600 of their 1,984 rows drawn once with
seed 0), 50 % stratified splits standardised with the training
statistics (``mklopt.datasets.split(..., stratify=True)``), several seeds,
in one run:

* ``MKLClassifier(loss="logistic")``: its defaults (the 17 kernels of
  ``kernels="all_features"``, unit mean diagonal, ``C = 1``, L1-MKL by the
  level method to a relative gap of 1e-2);
* ``MKLClassifier()``: the same with the hinge loss (the SVM; no
  probabilities, so no log-loss);
* the reference, scikit-learn's ``LogisticRegression(C=1)`` (L2 penalty
  ``|theta|^2 / 2``, unpenalised intercept, lbfgs to 1e-8) on the exact
  feature map of the *uniform* combination of the same 17 normalised
  kernels, ``K = (1/17) sum_k K_k`` (the centre of the simplex MKL searches,
  with unit mean diagonal as every base kernel): with ``K_train = U S U'``,
  ``Phi_train = U S^{1/2}`` and ``Phi_test = K_test,train U S^{-1/2}``
  (eigenvalues below ``1e-10 max(S)`` dropped). ``Phi Phi' = K`` on the
  training points, so by the representer theorem this is kernel logistic
  regression with kernel ``K`` and the same ``C``, i.e. the same loss and
  regulariser as the logistic MKL at the fixed uniform weights. Its time
  includes building the kernels, the eigendecomposition and the fit.

Reported per set: test accuracy and log-loss (``sklearn.metrics.log_loss``
on ``predict_proba``), mean ± std over the seeds, and the median fit time.

    python benchmarks/bench_logistic.py                       # 5 sets, 3 seeds
    python benchmarks/bench_logistic.py --datasets sonar --seeds 0
"""

import argparse
import time
import warnings

import numpy as np

SETS = ("ionosphere", "sonar", "breast", "pima", "satellite-grey")
#: Two classes of satellite and the rows drawn from them (fixed for all seeds).
SATELLITE_PAIR, SATELLITE_ROWS = ("grey soil", "damp grey soil"), 600


def load(name):
    """A bundled data set, or ``"satellite-grey"``: a two-class subset of satellite."""
    from mklopt import datasets

    if name != "satellite-grey":
        return datasets.load(name)
    X, y = datasets.load("satellite")
    rows = np.flatnonzero(np.isin(y, SATELLITE_PAIR))
    rows = np.sort(np.random.default_rng(0).choice(rows, SATELLITE_ROWS, replace=False))
    return X[rows], y[rows]


def uniform_kernel_logreg(X_tr, y_tr, X_te, C=1.0):
    """Probabilities and predictions of kernel logistic regression on the mean kernel."""
    from sklearn.linear_model import LogisticRegression

    from mklopt.kernels import KernelBank, grid

    specs = list(grid(X_tr.shape[1], protocol="mkboost2013"))  # kernels="all_features"
    bank = KernelBank.from_specs(X_tr, specs, storage="dense", normalize="diagonal")
    K = np.mean(bank.K, axis=0)
    K_te = np.mean(bank.cross(X_te), axis=0)
    s, U = np.linalg.eigh((K + K.T) / 2)
    keep = s > 1e-10 * s.max()
    s, U = s[keep], U[:, keep]
    phi_tr = U * np.sqrt(s)
    phi_te = K_te @ U / np.sqrt(s)
    lr = LogisticRegression(C=C, tol=1e-8, max_iter=10_000).fit(phi_tr, y_tr)
    return lr.classes_, lr.predict_proba(phi_te), lr.predict(phi_te)


def run(name, seeds):
    from sklearn.metrics import log_loss

    from mklopt import MKLClassifier, datasets
    from mklopt.estimators import ConvergenceWarning

    X, y = load(name)
    rows = {"MKL logistic (defaults)": [], "MKL hinge (defaults)": [],
            "LogisticRegression, uniform kernel": []}
    for seed in seeds:
        X_tr, X_te, y_tr, y_te = datasets.split(X, y, seed=seed, stratify=True)
        for label, loss in (("MKL logistic (defaults)", "logistic"),
                            ("MKL hinge (defaults)", "hinge")):
            clf = MKLClassifier(loss=loss)
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf.fit(X_tr, y_tr)
            elapsed = time.perf_counter() - t
            ll = (log_loss(y_te, clf.predict_proba(X_te), labels=clf.classes_)
                  if loss == "logistic" else np.nan)
            w = np.asarray(clf.weights_).ravel()
            rows[label].append((clf.score(X_te, y_te), ll, elapsed,
                                int(np.sum(w > 1e-3 * w.max()))))
        t = time.perf_counter()
        classes, proba, pred = uniform_kernel_logreg(X_tr, y_tr, X_te)
        elapsed = time.perf_counter() - t
        rows["LogisticRegression, uniform kernel"].append(
            (float(np.mean(pred == y_te)), log_loss(y_te, proba, labels=classes), elapsed, 17))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(SETS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = ap.parse_args(argv)
    print("| data | model | accuracy | log-loss | kernels used | fit time |")
    print("|---|---|---|---|---|---|")
    for name in args.datasets:
        for label, vals in run(name, args.seeds).items():
            a = np.array(vals, dtype=float)
            ll = ("—" if np.all(np.isnan(a[:, 1]))
                  else f"{a[:, 1].mean():.3f} ± {a[:, 1].std():.3f}")
            print(f"| {name} | {label} | {a[:, 0].mean():.3f} ± {a[:, 0].std():.3f} | {ll} "
                  f"| {np.median(a[:, 3]):g} | {np.median(a[:, 2]):.2f} s |", flush=True)


if __name__ == "__main__":
    main()
