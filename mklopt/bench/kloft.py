"""The two experiments of Kloft, Brefeld, Sonnenburg and Zien's Lp-norm MKL poster.

``mklopt bench --protocol kloft2010`` runs both (the CLI imports this module
only then):

*Toy experiment (sparsity against accuracy).* Two 50-dimensional isotropic
Gaussians ``N(+rho theta, I)`` and ``N(-rho theta, I)`` with a binary
``theta``: ``k`` of the 50 features are relevant, the other ``50 - k`` are
noise, and the *noise fraction* is ``nu = 1 - k / 50`` (the poster's
``nu(theta)``, counted in noise kernels). Every feature is standardised on
the training set and gets one linear kernel, so a kernel weight says how
much a feature is used. 50 training points, 5,000 validation points that
choose ``C`` from a grid, 10,000 test points; Lp-MKL with
``p in {1, 4/3, 2, 4, inf}``, ``p = 1`` by the level method (L1-MKL, the
simplex; the analytic update of the poster's eq. 2 needs ``p > 1``) and
the others by the analytic update (``method="lp"``; ``p = inf`` is the
uniform sum of the kernels, a plain SVM on all standardised features).

*Choice of rho.* The Bayes classifier of the two Gaussians errs with
probability ``Phi(-rho sqrt(k))``, ``rho sqrt(k)`` being the distance of each
mean to the optimal hyperplane. A fixed ``rho`` would make the sparse
problems (small ``k``) hopeless and the dense ones trivial, so that the
curves would mostly show the change of difficulty. ``rho`` is therefore set
per noise level so that the Bayes error is the same, :data:`BAYES_ERROR`
= 10 %, at every ``k``: ``rho = Phi^{-1}(0.9) / sqrt(k)``. What varies
along the curve is then only how the signal is spread over the features.

*Execution times against n.* 50 Gaussian kernels (widths
``2^-2 .. 2^5`` geometric, on standardised features) on the first ``n``
points of a random permutation of letter (UCI, A-M against N-Z); a plain
SVM (scikit-learn's ``SVC`` on the one kernel of median width), SimpleMKL
(``method="simplemkl"``) and interleaved Lp-MKL (``method="lp"``,
``p in {4/3, 2, 3, inf}``, and ``p = 1`` by the level method), all with
``C = 1`` on unit-diagonal kernels and the same stopping rule, a relative
duality gap of 1e-2 (``MKLClassifier``'s default); mean and standard error
of the fit time over the repeats.

Outputs in the output folder: ``toy.csv``, ``toy.md``, ``toy.png``,
``times.csv``, ``times.md``, ``times.png`` and ``summary.md`` (figures
only when matplotlib is installed).

References
----------
M. Kloft, U. Brefeld, S. Sonnenburg, A. Zien. Comparing sparse and
non-sparse multiple kernel learning. NIPS workshop poster, 2009 (eq. 1:
the Lp-constrained primal; eq. 2: the analytic weight update).
M. Kloft, U. Brefeld, S. Sonnenburg, A. Zien. Lp-norm multiple kernel
learning. JMLR 12, 2011 (the same experiments in full).
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import sys
import time
import warnings
from statistics import NormalDist

import numpy as np

from .. import datasets
from .._optional import pyplot, require
from ..estimators import MKLClassifier
from ..kernels import linear, rbf

__all__ = [
    "BAYES_ERROR", "NOISE_LEVELS", "TOY_P", "TIME_P", "TIME_SIZES", "FULL_TIME_SIZES",
    "toy_data", "run_toy", "run_times", "main",
]

#: Noise fractions of the toy experiment (the poster's x axis): 50, 28, 18,
#: 9, 4 and 1 relevant features of 50.
NOISE_LEVELS = (0.0, 0.44, 0.64, 0.82, 0.92, 0.98)
#: Norms of the toy experiment.
TOY_P = (1.0, 4 / 3, 2.0, 4.0, math.inf)
#: Norms of the timing experiment.
TIME_P = (1.0, 4 / 3, 2.0, 3.0, math.inf)
#: Bayes error kept fixed along the toy curve (see the module notes on rho).
BAYES_ERROR = 0.10
#: C grid chosen from on the validation set. The Lp constraint changes the
#: scale of the combined kernel with p (its diagonal is ~ ||w||_1, from 1 at
#: p = 1 to 50 at p = inf), hence the wide grid.
TOY_C = (0.01, 0.1, 1.0, 10.0, 100.0)
#: Default training sizes of the timing experiment (minutes on 2 cores) and
#: the full grid (``--sizes``; the command is in benchmarks/README.md at
#: commit 89ee8cc, "Kloft et al. 2010: sparse against non-sparse MKL").
TIME_SIZES = (250, 500, 1000)
FULL_TIME_SIZES = (250, 500, 1000, 2000, 4000)
#: The timing experiment's 50 Gaussian widths (standardised features).
TIME_WIDTHS = tuple(np.geomspace(2.0**-2, 2.0**5, 50).tolist())


def p_label(p):
    """``"1"``, ``"4/3"``, ``"2"``, ``"inf"``: a norm as the tables print it."""
    if math.isinf(p):
        return "inf"
    if abs(p - 4 / 3) < 1e-12:
        return "4/3"
    return f"{p:g}"


def _estimator(p, **kw):
    # p = 1 is L1-MKL on the simplex: the level method (the analytic update
    # of eq. 2 is defined for p > 1 only).
    if p == 1.0:
        return MKLClassifier(method="level", **kw)
    return MKLClassifier(method="lp", p=p, **kw)


# ----------------------------------------------------------------------------
# toy experiment
# ----------------------------------------------------------------------------
def toy_data(n, noise, d=50, rng=None, relevant=None, bayes_error=BAYES_ERROR):
    """Samples of the poster's two Gaussians ``N(+-rho theta, I)`` in ``d`` dimensions.

    Parameters
    ----------
    n : int
        Number of points; labels are +1 and -1 with probability 1/2 each.
    noise : float
        Fraction of irrelevant features, in ``[0, 1)``; ``k = round(d (1 -
        noise))`` features (at least one) are relevant.
    d : int, default=50
        Dimension.
    rng : numpy.random.Generator, optional
    relevant : ndarray of int, optional
        The relevant features; drawn at random (``k`` of ``d``) when None.
        Pass the same set to draw training and test points of one problem.
    bayes_error : float, default=0.1
        ``rho = Phi^{-1}(1 - bayes_error) / sqrt(k)``, so that the Bayes
        classifier errs with this probability whatever ``k``.

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), in {-1, +1}
    theta : ndarray of shape (d,)
        The binary vector of relevant features (``mu_+- = +-rho theta``).
    rho : float
    """
    rng = np.random.default_rng(rng)
    if relevant is None:
        k = max(1, int(round(d * (1.0 - noise))))
        relevant = np.sort(rng.choice(d, size=k, replace=False))
    theta = np.zeros(d)
    theta[relevant] = 1.0
    k = int(theta.sum())
    rho = NormalDist().inv_cdf(1.0 - bayes_error) / math.sqrt(k)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = rng.standard_normal((n, d)) + rho * y[:, None] * theta[None, :]
    return X, y, theta, rho


def run_toy(repeats=5, noise_levels=NOISE_LEVELS, ps=TOY_P, n_train=50, n_val=5000,
            n_test=10000, C_grid=TOY_C, seed=0, log=None):
    """Test error of Lp-MKL against the noise fraction (one row per noise, p, repeat)."""
    kernels = [linear(features=[j]) for j in range(50)]
    rows = []
    rng = np.random.default_rng(seed)
    for r in range(repeats):
        for noise in noise_levels:
            Xtr, ytr, theta, rho = toy_data(n_train, noise, rng=rng)
            relevant = np.flatnonzero(theta)
            # Both classes in the training set (50 fair coin flips nearly always are).
            while np.unique(ytr).size < 2:  # pragma: no cover
                Xtr, ytr, _, _ = toy_data(n_train, noise, rng=rng, relevant=relevant)
            Xva, yva, _, _ = toy_data(n_val, noise, rng=rng, relevant=relevant)
            Xte, yte, _, _ = toy_data(n_test, noise, rng=rng, relevant=relevant)
            for p in ps:
                best = None
                for C in C_grid:
                    clf = _estimator(p, kernels=kernels, C=C, standardize=True)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        clf.fit(Xtr, ytr)
                    val_err = 1.0 - clf.score(Xva, yva)
                    if best is None or val_err < best[0]:
                        best = (val_err, C, clf)
                val_err, C, clf = best
                w = np.asarray(clf.weights_)
                rows.append({
                    "repeat": r, "noise": noise, "relevant": int(theta.sum()), "rho": rho,
                    "p": p_label(p), "C": C, "val_error": val_err,
                    "test_error": 1.0 - clf.score(Xte, yte),
                    # Share of the weight on the relevant features.
                    "weight_on_relevant": float(w[theta > 0].sum() / w.sum()),
                })
        if log:
            log(f"toy: repeat {r + 1}/{repeats} done")
    return rows


def _mean_se(values):
    values = list(values)
    m = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return m, se


def toy_summary(rows):
    """``{(noise, p): (mean test error, standard error)}``."""
    out = {}
    for key in {(r["noise"], r["p"]) for r in rows}:
        out[key] = _mean_se(r["test_error"] for r in rows if (r["noise"], r["p"]) == key)
    return out


def toy_table(rows):
    summ = toy_summary(rows)
    noises = sorted({k[0] for k in summ})
    ps = list(dict.fromkeys(r["p"] for r in rows))
    lines = ["| noise (relevant of 50) | " + " | ".join(f"p = {p}" for p in ps) + " |",
             "|---" * (len(ps) + 1) + "|"]
    for nu in noises:
        k = next(r["relevant"] for r in rows if r["noise"] == nu)
        best = min(ps, key=lambda p: summ[(nu, p)][0])
        cells = []
        for p in ps:
            m, se = summ[(nu, p)]
            cell = f"{100 * m:.1f} ± {100 * se:.1f}"
            cells.append(f"**{cell}**" if p == best else cell)
        lines.append(f"| {100 * nu:.0f} % ({k}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def toy_verdict(rows):
    """Whether the poster's two claims hold on these runs, in words."""
    summ = toy_summary(rows)
    noises = sorted({k[0] for k in summ})
    ps = list(dict.fromkeys(r["p"] for r in rows))
    avg = {p: statistics.fmean(summ[(nu, p)][0] for nu in noises) for p in ps}
    best = min(avg, key=avg.get)
    wins = {p: sum(min(ps, key=lambda q: summ[(nu, q)][0]) == p for nu in noises) for p in ps}
    lines = [
        "Mean test error over the noise levels: "
        + ", ".join(f"p = {p}: {100 * avg[p]:.1f} %" for p in ps) + ".",
        f"Best on average: p = {best}; lowest error at "
        + ", ".join(f"p = {p}: {wins[p]}" for p in ps if wins[p]) + f" of {len(noises)} levels.",
        f"Claim 'p = 2 is the best model': {'holds' if best == '2' else 'does not hold'} here.",
    ]
    if "1" in ps and "2" in ps:
        below = [nu for nu in noises if nu < 0.92]
        worse = [nu for nu in below if summ[(nu, "1")][0] > summ[(nu, "2")][0]]
        # Worse by more than the two standard errors together: not noise.
        clear = [nu for nu in worse
                 if summ[(nu, "1")][0] - summ[(nu, "2")][0]
                 > summ[(nu, "1")][1] + summ[(nu, "2")][1]]
        above = [nu for nu in noises if nu >= 0.92]
        better_above = [nu for nu in above if summ[(nu, "1")][0] <= summ[(nu, "2")][0]]
        lines.append(
            f"Claim 'sparse MKL (p = 1) is worse below 92 % noise': p = 1 errs more than p = 2 "
            f"at {len(worse)} of the {len(below)} levels below 92 % ({len(clear)} by more than "
            f"the summed standard errors), and errs at most as much at {len(better_above)} of "
            f"the {len(above)} levels from 92 % on: "
            + ("holds" if len(worse) == len(below) else "does not hold") + " here."
        )
    return "\n".join(lines)


def toy_figure(rows, path):
    plt = pyplot()
    if plt is None:
        return False
    summ = toy_summary(rows)
    noises = sorted({k[0] for k in summ})
    ps = list(dict.fromkeys(r["p"] for r in rows))
    fig, ax = plt.subplots(figsize=(6, 4))
    for p in ps:
        m = np.array([summ[(nu, p)][0] for nu in noises])
        se = np.array([summ[(nu, p)][1] for nu in noises])
        ax.errorbar(100 * np.array(noises), 100 * m, yerr=100 * np.nan_to_num(se),
                    marker="o", capsize=3, label=f"p = {p}")
    ax.axhline(100 * BAYES_ERROR, color="grey", lw=0.8, ls=":", label="Bayes error")
    ax.set_xlabel("noise fraction: irrelevant features of 50 [%]")
    ax.set_ylabel("test error [%]")
    ax.set_title("Lp-MKL on the two-Gaussian toy problem (50 training points)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------
# execution times
# ----------------------------------------------------------------------------
def _time_methods(ps):
    """Row label -> p (None: SVC or SimpleMKL)."""
    out = {"SVM": None, "SimpleMKL": None}
    for p in ps:
        out[f"Lp p = {p_label(p)}" + (" (level)" if p == 1.0 else "")] = p
    return out


def _warm_up():
    """Compile numba's functions on a small problem before anything is timed."""
    X, y, _, _ = toy_data(40, 0.5, d=5, rng=0)
    for p in (1.0, 2.0, math.inf):
        _estimator(p, kernels=[rbf(1.0), rbf(2.0)], C=1.0).fit(X, y)
    MKLClassifier(method="simplemkl", kernels=[rbf(1.0), rbf(2.0)]).fit(X, y)


def run_times(sizes=TIME_SIZES, repeats=5, ps=TIME_P, data="letter", seed=0, time_limit=600.0,
              log=None):
    """Fit times against n (one row per size, method, repeat)."""
    svm_lib = require("sklearn.svm", "the SVM baseline of the timing experiment")
    X, y = datasets.load(data)
    kernels = [rbf(s) for s in TIME_WIDTHS]
    mid = TIME_WIDTHS[len(TIME_WIDTHS) // 2]
    _warm_up()
    rows = []
    for r in range(repeats):
        perm = np.random.default_rng(seed + r).permutation(len(y))
        for n in sizes:
            idx = perm[:n]
            Xn, yn = X[idx], y[idx]
            # The standardisation MKLClassifier applies, for SVC too.
            Xs = (Xn - Xn.mean(0)) / np.where(Xn.std(0) > 0, Xn.std(0), 1.0)
            for name, p in _time_methods(ps).items():
                if name == "SVM":
                    clf = svm_lib.SVC(C=1.0, kernel="rbf", gamma=1.0 / (2.0 * mid**2))
                    t0 = time.perf_counter()
                    clf.fit(Xs, yn)
                    info = {"converged": True, "n_oracle_calls": 1, "gap": 0.0}
                else:
                    if name == "SimpleMKL":
                        clf = MKLClassifier(method="simplemkl", kernels=kernels, C=1.0,
                                            standardize=True, time_limit=time_limit)
                    else:
                        clf = _estimator(p, kernels=kernels, C=1.0, standardize=True,
                                         time_limit=time_limit)
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        clf.fit(Xn, yn)
                    info = {"converged": bool(clf.converged_),
                            "n_oracle_calls": int(clf.n_oracle_calls_), "gap": float(clf.gap_)}
                elapsed = time.perf_counter() - t0
                rows.append({"repeat": r, "n": n, "method": name, "seconds": elapsed, **info})
                if log:
                    log(f"times: repeat {r + 1}/{repeats}, n = {n}, {name}: {elapsed:.2f} s")
    return rows


def times_summary(rows):
    out = {}
    for key in {(r["n"], r["method"]) for r in rows}:
        sel = [r for r in rows if (r["n"], r["method"]) == key]
        out[key] = (*_mean_se(r["seconds"] for r in sel), all(r["converged"] for r in sel),
                    statistics.fmean(r["n_oracle_calls"] for r in sel))
    return out


def times_table(rows):
    summ = times_summary(rows)
    sizes = sorted({k[0] for k in summ})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    lines = ["| method | " + " | ".join(f"n = {n}" for n in sizes) + " |",
             "|---" * (len(sizes) + 1) + "|"]
    for mth in methods:
        cells = []
        for n in sizes:
            m, se, conv, calls = summ[(n, mth)]
            cells.append(f"{m:.3g} ± {se:.2g} s ({calls:.0f} calls)"
                         + ("" if conv else " (not converged)"))
        lines.append(f"| {mth} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def times_ratios(rows):
    """SimpleMKL's mean fit time over each Lp's, at the largest n."""
    summ = times_summary(rows)
    n = max(k[0] for k in summ)
    simple = summ[(n, "SimpleMKL")][0]
    methods = [m for m in dict.fromkeys(r["method"] for r in rows) if m.startswith("Lp")]
    parts = [f"{m}: {simple / summ[(n, m)][0]:.1f}" for m in methods]
    return f"SimpleMKL / Lp-MKL fit time at n = {n}: " + ", ".join(parts)


def times_figure(rows, path):
    plt = pyplot()
    if plt is None:
        return False
    summ = times_summary(rows)
    sizes = sorted({k[0] for k in summ})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, ax = plt.subplots(figsize=(6, 4))
    for mth in methods:
        m = np.array([summ[(n, mth)][0] for n in sizes])
        se = np.nan_to_num(np.array([summ[(n, mth)][1] for n in sizes]))
        ax.errorbar(sizes, m, yerr=se, marker="o", capsize=3, label=mth)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training points n (letter)")
    ax.set_ylabel("fit time [s]")
    ax.set_title("50 Gaussian kernels: fit time against n")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------
# both, with files
# ----------------------------------------------------------------------------
def _write_csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main(out="bench-out/kloft2010", repeats=5, sizes=TIME_SIZES, experiments=("toy", "times"),
         noise_levels=NOISE_LEVELS, toy_sizes=(50, 5000, 10000), quiet=False):
    """Run the experiments, write their tables, figures and summary to ``out``.

    Returns
    -------
    dict
        ``{"toy": rows, "times": rows}`` for the experiments run.
    """
    os.makedirs(out, exist_ok=True)

    def log(msg):
        if not quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    results, summary = {}, ["# Kloft et al. 2010 (poster): Lp-norm MKL", ""]
    missing_plot = pyplot() is None
    if missing_plot:
        summary.append("matplotlib is not installed (pip install \"mklopt[plot]\"): "
                       "no figures written.\n")
    if "toy" in experiments:
        n_tr, n_va, n_te = toy_sizes
        rows = run_toy(repeats=repeats, noise_levels=noise_levels, n_train=n_tr, n_val=n_va,
                       n_test=n_te, log=log)
        results["toy"] = rows
        _write_csv(os.path.join(out, "toy.csv"), rows)
        table = toy_table(rows)
        with open(os.path.join(out, "toy.md"), "w") as fh:
            fh.write(table + "\n")
        toy_figure(rows, os.path.join(out, "toy.png"))
        summary += [f"## Toy: test error [%] (mean ± s.e. over {repeats} draws)", "", table, "",
                    toy_verdict(rows), ""]
    if "times" in experiments:
        rows = run_times(sizes=sizes, repeats=repeats, log=log)
        results["times"] = rows
        _write_csv(os.path.join(out, "times.csv"), rows)
        table = times_table(rows)
        with open(os.path.join(out, "times.md"), "w") as fh:
            fh.write(table + "\n")
        times_figure(rows, os.path.join(out, "times.png"))
        summary += [f"## Fit time against n (mean ± s.e. over {repeats} repeats)", "", table, "",
                    times_ratios(rows), ""]
    text = "\n".join(summary)
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write(text + "\n")
    print(text)
    return results
