"""Benchmark runs under the papers' protocols (used by ``benchmarks/`` and the CLI).

Protocol "level2008" (Xu et al. 2008, section 4.1): a random half split,
features standardised with the training mean and standard deviation,
Gaussian widths 2^-3..2^6 and polynomial degrees 1..3 on all features and on
each single feature, unit trace, C = 100, stop at a relative duality gap
below 0.01 or after 500 iterations.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from . import datasets
from .driver import solve
from .stopping import DualityGap, MaxIter, TimeLimit

__all__ = ["MethodRun", "make_method", "run_split", "summarise", "METHOD_LABELS"]

#: Benchmark method keys and their table labels.
METHOD_LABELS = {
    "sd": "SD (SimpleMKL)",
    "silp": "SILP",
    "level": "Level",
    "mirror": "MD",
    "lp4/3": "Lp p=4/3",
    "lp2": "Lp p=2",
    "lp4": "Lp p=4",
}


def make_method(key):
    """The outer method behind a benchmark key."""
    from . import methods

    if key == "sd":
        return methods.Subgradient(direction="reduced")
    if key == "silp":
        return methods.CuttingPlane()
    if key == "level":
        return methods.LevelBundle()
    if key == "mirror":
        return methods.MirrorDescent()
    if key.startswith("lp"):
        num = key[2:]
        p = {"4/3": 4.0 / 3.0}.get(num) or float(num)
        return methods.AnalyticLp(p=p)
    raise ValueError(f"unknown benchmark method {key!r}; choose from {', '.join(METHOD_LABELS)}")


@dataclass
class MethodRun:
    """One method on one split."""

    dataset: str
    split: int
    method: str
    seconds: float
    n_iter: int
    n_svm_calls: int
    value: float
    gap: float
    rel_gap: float
    converged: bool
    reason: str
    accuracy: float
    n_selected: int
    n_train: int
    n_kernels: int

    def as_dict(self):
        return asdict(self)


def _protocol_bank(X_train, C, protocol):
    from .kernels import KernelBank, grid

    specs = grid(X_train.shape[1], protocol=protocol)
    return KernelBank.from_specs(X_train, specs, normalize="trace")


def run_split(
    name,
    split,
    method_keys,
    *,
    C=100.0,
    tol=1e-2,
    max_iter=500,
    inner_tol=1e-3,
    repeats=1,
    protocol="level2008",
    time_limit=None,
    keep_history=False,
):
    """Run every method on one random half split of a bundled data set.

    Returns
    -------
    runs : list of MethodRun
    histories : dict
        ``method -> Result.history`` of the last repeat when ``keep_history``.
    """
    from .oracles import SVMDual

    X, y = datasets.load(name)
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=split)
    bank = _protocol_bank(X_tr, C, protocol)
    runs, histories = [], {}
    for key in method_keys:
        times, res = [], None
        for _ in range(repeats):
            oracle = SVMDual(bank, y_tr, C=C, tol=inner_tol)
            stop = DualityGap(tol) | MaxIter(max_iter)
            if time_limit is not None:
                stop = stop | TimeLimit(time_limit)
            t0 = time.perf_counter()
            res = solve(oracle, make_method(key), stop=stop)
            times.append(time.perf_counter() - t0)
        w = res.weights
        sv = np.asarray(res.alpha > 0).nonzero()[0]
        coef = (res.alpha * y_tr)[sv]
        Kx = bank.combine_cross(X_te, w, columns=sv)
        pred = np.where(Kx @ coef + res.bias >= 0, 1, -1)
        runs.append(
            MethodRun(
                dataset=name,
                split=split,
                method=key,
                seconds=statistics.median(times),
                n_iter=res.n_iter,
                n_svm_calls=res.n_oracle_calls,
                value=res.value,
                gap=res.gap,
                rel_gap=res.rel_gap,
                converged=res.converged,
                reason=res.reason,
                accuracy=float(np.mean(pred == y_te)),
                n_selected=int(np.count_nonzero(w > 1e-8 * w.max())),
                n_train=len(y_tr),
                n_kernels=bank.n_kernels,
            )
        )
        if keep_history:
            histories[key] = res.history
    return runs, histories


def _mean_std(values):
    values = list(values)
    if not values:
        return math.nan, math.nan
    m = statistics.fmean(values)
    s = statistics.stdev(values) if len(values) > 1 else 0.0
    return m, s


def summarise(runs):
    """Aggregate runs into rows ``(dataset, method) -> mean/std of each measure``."""
    groups = {}
    for r in runs:
        groups.setdefault((r.dataset, r.method), []).append(r)
    rows = []
    for (ds, meth), rs in groups.items():
        row = {"dataset": ds, "method": meth, "n_splits": len(rs),
               "n_train": rs[0].n_train, "n_kernels": rs[0].n_kernels}
        for field in ("seconds", "n_iter", "n_svm_calls", "accuracy", "n_selected", "rel_gap"):
            row[field], row[field + "_std"] = _mean_std(getattr(r, field) for r in rs)
        row["converged"] = sum(r.converged for r in rs)
        rows.append(row)
    return rows


def time_saving(rows, method, against):
    """Per data set: ``1 - time(method) / time(against)`` in percent (the paper's Table 2)."""
    by = {(r["dataset"], r["method"]): r for r in rows}
    out = {}
    for ds in sorted({r["dataset"] for r in rows}):
        a, b = by.get((ds, method)), by.get((ds, against))
        if a and b and b["seconds"] > 0:
            out[ds] = 100.0 * (1.0 - a["seconds"] / b["seconds"])
    return out


def markdown_table(rows, method_order):
    """The papers' table layout: one line per data set and method, mean ± std."""
    lines = [
        "| data set | n | m | method | time (s) | SVM calls | iterations | accuracy (%) "
        "| #kernels | rel. gap | converged |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {k: i for i, k in enumerate(method_order)}
    for r in sorted(rows, key=lambda r: (r["dataset"], order.get(r["method"], 99))):
        lines.append(
            f"| {r['dataset']} | {r['n_train']} | {r['n_kernels']} "
            f"| {METHOD_LABELS.get(r['method'], r['method'])} "
            f"| {r['seconds']:.3f} ± {r['seconds_std']:.3f} "
            f"| {r['n_svm_calls']:.1f} ± {r['n_svm_calls_std']:.1f} "
            f"| {r['n_iter']:.1f} ± {r['n_iter_std']:.1f} "
            f"| {100 * r['accuracy']:.1f} ± {100 * r['accuracy_std']:.1f} "
            f"| {r['n_selected']:.1f} ± {r['n_selected_std']:.1f} "
            f"| {r['rel_gap']:.4f} | {r['converged']}/{r['n_splits']} |"
        )
    return "\n".join(lines)
