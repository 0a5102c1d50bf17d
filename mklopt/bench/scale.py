"""The scale benchmark: kernels that are never stored (see docs/large.md).

Cases (each runs in its own process, so that its peak resident memory is its
own; numba is warmed up on a small problem before anything is timed):

``letter-level``, ``letter-level-paper``, ``letter-lp2``
    letter's UCI split (first 16,000 rows train, last 4,000 test), the
    level paper's grid (221 kernels), Level (L1; ``LevelBundle()``, or the
    paper's lambda schedule 0.9 -> 0.99) and Lp (p = 2) to a certified
    relative gap of 1e-2; ``letter-svc`` is scikit-learn's ``SVC(rbf)`` on
    the same split.
``curve-<storage>-<n>``
    the first ``n`` training rows of letter, Level with storage ``dense`` or
    ``on_the_fly``; ``curve-svc-<n>`` the ``SVC`` floor.
``shuttle-level``, ``shuttle-svc``
    shuttle's first 50,000 rows for training (the other 8,000 for testing),
    ten Gaussian widths on all features.
``sonar-<m>``
    sonar's half split with ``m`` Gaussian kernels on seeded random 3-8
    feature subsets (widths ``2^U(-3, 6)``), a kernel working set around
    Level.

The SVM tolerance starts at 1e-3 (``SVMDual``'s default) and follows the
gap down to 1e-4 at the 1e-2 target (the driver's rule). MKL runs use C
equal to the number of training points on unit-trace
kernels, which means what ``SVC(C=1)`` means on unit-diagonal ones, except
sonar, which keeps the level paper's C = 100. Times are wall-clock seconds
on the machine at hand; the bank build is timed apart from the solve.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time

import numpy as np

from .. import datasets
from .._optional import pyplot, require
from ..driver import solve
from ..kernels import KernelBank, KernelExpansion, grid, random_rbf, rbf
from ..methods import AnalyticLp, KernelWorkingSet, LevelBundle
from ..oracles import SVMDual
from ..stopping import DualityGap, MaxIter, TimeLimit
from ._protocols import PROTOCOLS
from .runs import warm_up

__all__ = ["CASES", "run_case", "run_isolated", "unknown_cases", "main"]

CURVE_SIZES = (1000, 2000, 4000, 8000, 16000)
#: Every case name, in the order a full run goes through them.
CASES = (
    ["letter-svc", "letter-level", "letter-level-paper", "letter-lp2"]
    + [f"curve-{kind}-{n}" for n in CURVE_SIZES for kind in ("svc", "dense", "on_the_fly")]
    + ["shuttle-svc", "shuttle-level", "sonar-100000", "sonar-1000000"]
)
_PROTOCOL = PROTOCOLS["scale"]
#: sonar's C: the level paper's (its other facts are the scale protocol's).
_SONAR_C = PROTOCOLS["level2008"].C
TIME_LIMIT = 1800.0


def unknown_cases(names):
    """The names in ``names`` that are not cases (``sonar-<m>`` takes any ``m``)."""
    return [c for c in names
            if c not in CASES and not (c.startswith("sonar-") and c[6:].isdigit() and int(c[6:]))]


def _peak_rss_gib():
    """Peak resident memory of this process in GiB (NaN where ``resource`` is missing).

    ``resource`` is POSIX only: imported here, not at module level, so that
    the ``mklopt`` command (which imports this module) works on Windows.
    """
    try:
        import resource
    except ImportError:  # Windows
        return float("nan")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _letter(n=None):
    X_tr, X_te, y_tr, y_te = datasets.load_split("letter", standardize=False)
    if n is not None:
        X_tr, y_tr = X_tr[:n], y_tr[:n]
    return _standardised(X_tr, X_te, y_tr, y_te)


def _standardised(X_tr, X_te, y_tr, y_te):
    """Features standardised with the training statistics (the grids' widths assume it)."""
    mean, scale = datasets._scaling(X_tr)
    return (X_tr - mean) / scale, (X_te - mean) / scale, y_tr.astype(float), y_te.astype(float)


def _shuttle():
    X, y = datasets.load("shuttle")
    return _standardised(X[:50000], X[50000:], y[:50000], y[50000:])


def _svc_case(X_tr, X_te, y_tr, y_te):
    svm = require("sklearn.svm", "the SVC cases of the scale benchmark")
    t0 = time.perf_counter()
    clf = svm.SVC(C=1.0, kernel="rbf", gamma="scale", cache_size=1000).fit(X_tr, y_tr)
    fit = time.perf_counter() - t0
    return {
        "solve_s": fit,
        "build_s": 0.0,
        "accuracy": float(clf.score(X_te, y_te)),
        "n_support": int(clf.n_support_.sum()),
    }


def _mkl_case(X_tr, X_te, y_tr, y_te, specs, method, storage="auto", C=None):
    n = X_tr.shape[0]
    C = float(n) if C is None else C
    t0 = time.perf_counter()
    bank = KernelBank.from_specs(X_tr, specs, storage=storage)
    build = time.perf_counter() - t0
    oracle = SVMDual(bank, y_tr, C=C, tol=_PROTOCOL.inner_tol)
    stop = DualityGap(_PROTOCOL.tol) | MaxIter(_PROTOCOL.max_iter) | TimeLimit(TIME_LIMIT)
    res = solve(oracle, method, stop=stop)
    f = KernelExpansion.from_solution(bank.functions, res.weights, res.alpha * y_tr, res.bias)
    acc = float(np.mean(np.where(f(X_te) > 0, 1.0, -1.0) == y_te))
    return {
        "build_s": build,
        "solve_s": res.elapsed,
        "n_oracle_calls": res.n_oracle_calls,
        "rel_gap": res.rel_gap,
        "converged": res.converged,
        "reason": res.reason,
        "accuracy": acc,
        "storage": bank.storage.name,
        "n_kernels": bank.n_kernels,
        "n_kernels_used": int(np.count_nonzero(res.weights)),
        "n_support": int(np.count_nonzero(res.alpha)),
        "extra": {k: v for k, v in res.extra.items() if k == "n_pricings"},
    }


def run_case(name):
    """Run one case in this process; return its figures (a JSON-able dict)."""
    # every jitted routine of these runs, the row-cached SMO included
    warm_up(["level", "lp2"], storages=("dense", "on_the_fly"), cache_size=0.01)
    out = {"case": name}
    if name.startswith("letter-"):
        data = _letter()
        d = data[0].shape[1]
        if name == "letter-svc":
            out.update(_svc_case(*data))
        else:
            method = {
                "letter-level": LevelBundle(),
                "letter-level-paper": LevelBundle(lam=0.9, lam_final=0.99),
                "letter-lp2": AnalyticLp(p=2.0),
            }.get(name)
            if method is None:
                raise ValueError(f"unknown case {name!r}; known: {', '.join(CASES)}")
            out.update(_mkl_case(*data, grid(d), method))
    elif name.startswith("curve-"):
        _, kind, n = name.split("-", 2)
        data = _letter(int(n))
        if kind == "svc":
            out.update(_svc_case(*data))
        else:
            out.update(_mkl_case(*data, grid(data[0].shape[1]), LevelBundle(), storage=kind))
        out["n"] = int(n)
    elif name.startswith("shuttle-"):
        data = _shuttle()
        if name == "shuttle-svc":
            out.update(_svc_case(*data))
        else:
            specs = [rbf(2.0**e) for e in range(-3, 7)]
            out.update(_mkl_case(*data, specs, LevelBundle()))
    elif name.startswith("sonar-"):
        m = int(name.split("-")[1])
        X, y = datasets.load("sonar")
        X_tr, X_te, y_tr, y_te = datasets.split(X, y, seed=0)
        t0 = time.perf_counter()
        specs = random_rbf(m, X.shape[1], seed=0)
        out["specs_s"] = time.perf_counter() - t0
        out.update(_mkl_case(X_tr, X_te, y_tr.astype(float), y_te.astype(float), specs,
                             KernelWorkingSet("level"), C=_SONAR_C))
    else:
        raise ValueError(f"unknown case {name!r}; known: {', '.join(CASES)}")
    out["peak_rss_gib"] = _peak_rss_gib()
    out["load_avg_1min"] = os.getloadavg()[0]  # other work on the machine during the case
    return out


def run_isolated(name, log_progress=True):
    """Run one case in a fresh Python process; its progress lines go to stderr."""
    cmd = [sys.executable, "-m", "mklopt.bench.scale", "--child", name]
    if not log_progress:
        cmd.append("--quiet")
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        return {"case": name, "error": f"exit code {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _table(results):
    rows = [
        "| case | storage | n kernels | build (s) | solve (s) | oracle calls | rel. gap "
        "| accuracy | peak RSS (GiB) | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            rows.append(f"| {r['case']} | {r['error']} ||||||||")
            continue
        gap = r.get("rel_gap")
        rows.append(
            f"| {r['case']} | {r.get('storage', 'libsvm')} | {r.get('n_kernels', 1)} "
            f"| {r['build_s']:.1f} | {r['solve_s']:.1f} | {r.get('n_oracle_calls', '')} "
            f"| {'' if gap is None else f'{gap:.2g}'} | {100 * r['accuracy']:.2f} % "
            f"| {r['peak_rss_gib']:.2f} | {r.get('load_avg_1min', float('nan')):.1f} |"
        )
    return "\n".join(rows)


def _curve_figure(results, path):
    """Draw the scale curves to ``path``; return the fitted slopes (none without matplotlib)."""
    plt = pyplot()
    if plt is None:
        return []
    fig, ax = plt.subplots(figsize=(6, 4.2))
    lines = []
    # letter-level / letter-svc are the n = 16,000 points of the curves.
    alias = {"letter-level": "curve-on_the_fly-16000", "letter-svc": "curve-svc-16000"}
    have = {r["case"] for r in results}
    results = list(results) + [
        dict(r, case=alias[r["case"]], n=16000) for r in results
        if r["case"] in alias and alias[r["case"]] not in have and "error" not in r
    ]
    for kind, label in (("dense", "Level, dense"), ("on_the_fly", "Level, on the fly"),
                        ("svc", "SVC(rbf), one kernel")):
        pts = sorted((r["n"], r["build_s"] + r["solve_s"]) for r in results
                     if r["case"].startswith(f"curve-{kind}-") and "error" not in r)
        if len(pts) < 2:
            continue
        n, t = np.array(pts, dtype=float).T
        slope = np.polyfit(np.log(n), np.log(t), 1)[0]
        ax.loglog(n, t, "o-", label=f"{label} (slope {slope:.2f})")
        lines.append((kind, float(slope)))
    ax.set_xlabel("training points n (letter)")
    ax.set_ylabel("seconds (bank build + solve)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return lines


def main(argv=None):
    """``python -m mklopt.bench.scale [--cases ...] [--out DIR]``."""
    parser = argparse.ArgumentParser(description="mklopt scale benchmark")
    parser.add_argument("--cases", nargs="+", default=list(CASES),
                        help="cases to run (default: all); see the module docstring")
    parser.add_argument("--out", default="bench-out/scale", help="output folder")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    if args.child:
        if not args.quiet:
            logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                                format="  [%(asctime)s] %(message)s", datefmt="%H:%M:%S")
        try:
            out = run_case(args.child)
        except MemoryError as exc:  # a dense bank that does not fit is a result too
            out = {"case": args.child, "error": f"refused: {str(exc).split('. ')[0]}"}
        print(json.dumps(out, default=float))
        return 0
    unknown = unknown_cases(args.cases)
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    os.makedirs(args.out, exist_ok=True)
    results = []
    for name in args.cases:
        print(f"== {name}", file=sys.stderr, flush=True)
        results.append(run_isolated(name, log_progress=not args.quiet))
        with open(os.path.join(args.out, "results.json"), "w") as fh:
            json.dump(results, fh, indent=1, default=float)
    table = _table(results)
    with open(os.path.join(args.out, "table.md"), "w") as fh:
        fh.write(table + "\n")
    print(table)
    if any(r["case"].startswith("curve-") for r in results):
        slopes = _curve_figure(results, os.path.join(args.out, "scale_curves.png"))
        for kind, slope in slopes:
            print(f"fitted slope ({kind}): {slope:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
