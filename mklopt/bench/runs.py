"""Benchmark runs under the papers' protocols (used by ``benchmarks/`` and the CLI).

Every protocol's facts (default methods, C, tolerances) are in
:data:`PROTOCOLS`; its kernel grid is :func:`mklopt.kernels.grid` of the same
name. The methods are the presets of :mod:`mklopt.methods` (keys such as
``"sd"`` or ``"lp4/3"``, with their table labels).

Protocol "level2008" (Xu et al. 2008, section 4.1): a random half split,
features standardised with the training mean and standard deviation,
Gaussian widths 2^-3..2^6 and polynomial degrees 1..3 on all features and on
each single feature, unit trace, C = 100, stop at a relative duality gap
below 0.01 or after 500 iterations.
"""

from __future__ import annotations

import csv
import math
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from .. import _compile, datasets
from .._jit.projections import project_simplex
from .._optional import pyplot
from ..driver import solve
from ..estimators import MKBoostClassifier
from ..kernels import KernelBank, grid
from ..methods import PRESETS, get_method, get_preset, method_names
from ..oracles import SVMDual
from ..oracles.weak_learners import _round_blocks, _run_round
from ..stopping import DualityGap, MaxIter, TimeLimit
from ._protocols import PROTOCOLS, Protocol

__all__ = [
    "Protocol",
    "PROTOCOLS",
    "MethodRun",
    "protocol_bank",
    "run_split",
    "run_protocol_split",
    "run_split_task",
    "summarise",
    "markdown_table",
    "result_tables",
    "time_saving",
    "write_csv",
    "draw_figures",
    "label",
    "dual_methods",
    "make_method",
    "warm_up",
]


def label(key):
    """How tables and figures name the method ``key`` (its preset's label)."""
    return PRESETS[key].label if key in PRESETS else key


def dual_methods():
    """Every registered method of the SVM dual: the preset keys, then the other names.

    A name whose class an earlier entry already has (``"silp"`` for
    ``"cutting_plane"``) is left out, so a method a plugin registers (see
    :func:`mklopt.methods.register`) is listed with no edit. The asv suite
    and the benchopt benchmark of ``benchmarks/`` run this list.

    Returns
    -------
    list of str
        Keys that :func:`make_method` takes.
    """
    keys, seen = [], set()
    for key, preset in PRESETS.items():
        if getattr(preset.cls, "oracle_kind", "dual") == "dual":
            keys.append(key)
            seen.add(preset.cls)
    for name in method_names(oracle_kind="dual"):
        cls = get_method(name)
        if cls not in seen:
            keys.append(name)
            seen.add(cls)
    return keys


def make_method(key):
    """A new method for a preset key or a registered name, with its defaults.

    Parameters
    ----------
    key : str
        A key of :data:`mklopt.methods.PRESETS` or a registered method name.

    Returns
    -------
    object
        The method, ready for :func:`mklopt.solve`.
    """
    return get_preset(key).make() if key in PRESETS else get_method(key)()


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


def protocol_bank(X_train, protocol="level2008"):
    """The unit-trace kernel bank of ``protocol``'s grid on the training features."""
    specs = grid(X_train.shape[1], protocol=protocol)
    return KernelBank.from_specs(X_train, specs, normalize="trace")


#: (preset key, storage, cache_size) this process has already run (see warm_up).
_WARMED = set()


def warm_up(method_keys, storages=("auto",), cache_size=None):
    """Run every method once on a tiny problem, so that no timing includes numba.

    numba compiles a jitted routine (or loads it from its cache) on first
    use; without this, the first split of a benchmark would time that too.
    Each key is warmed once per process and storage (``storages``, with
    ``cache_size`` for the SMO's row cache: a tiny one exercises the
    row-cached solver); the timed runs start afterwards. The first split's
    plan (:func:`mklopt._compile.prepare` with ``"bench"``) comes first: it
    holds what a tiny warm-up never reaches but a protocol's solves do (the
    level projection's working-set check runs only once the model has more
    kernels than a tiny bank; banks above ``SERIAL_SYM_ENTRIES`` take the
    threaded builder).
    """
    _compile.prepare("bench")
    todo = [(k, st) for k in method_keys for st in storages
            if (k, st, cache_size) not in _WARMED]
    if not todo:
        return
    rng = np.random.default_rng(0)
    # 80 points, the first feature coded on 3 values: on the fly, its
    # kernels are read from tables (the path "auto" takes on coded data).
    X = rng.normal(size=(80, 3))
    X[:, 0] = np.clip(np.round(X[:, 0]), -1, 1)
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, 1.0, -1.0)
    for key, storage in todo:
        preset = get_preset(key)
        # "auto" may pick either exact storage, depending on the data
        for st in ("dense", "on_the_fly") if storage == "auto" else (storage,):
            if getattr(preset.cls, "oracle_kind", "dual") == "dual":
                bank = KernelBank.from_specs(X, grid(3), storage=st, cache_size=cache_size)
                solve(SVMDual(bank, y, C=10.0, tol=1e-3), preset.make(), stop=MaxIter(3))
                _warm_verbs(bank, X, rng)
            else:
                MKBoostClassifier(kernels=list(grid(3, protocol="mkboost2013")), n_rounds=2,
                                  storage=st, cache_size=cache_size, random_state=0,
                                  **dict(preset.params)).fit(X, y)
                _warm_parallel_round(X, y)
        _WARMED.add((key, storage, cache_size))


def _warm_parallel_round(X, y):
    """Compile the parallel boosting round, which only long rounds take.

    Both forms the oracle passes: a dense bank read in place with the
    query's read-only kernel indices, and computed blocks.
    """
    n = X.shape[0]
    K = np.ascontiguousarray(np.stack([X @ X.T + 1.0, np.eye(n)]))
    uniq = np.arange(0, n, 4, dtype=np.int64)
    r, u = K.shape[0], uniq.size
    kernels = np.arange(r, dtype=np.int64)
    kernels.flags.writeable = False  # as a BoostQuery holds them
    args = (uniq, y[uniq], np.ones(u), 1e-3, 1000)

    def out():
        return (np.empty((r, u)), np.empty(r), np.empty((r, n)), np.empty(r, dtype=np.int64),
                np.empty(r))

    bank = K.view()
    bank.flags.writeable = False  # as a dense storage reads its bank
    _run_round(np.ones(r), bank, kernels, np.ones(r), uniq, *args, *out())
    _round_blocks(np.ascontiguousarray(K[:, uniq, :]), *args, *out(), costs=np.ones(r))


def _warm_verbs(bank, X, rng):
    """Compile what a tiny run can skip but a real one takes.

    On 80 points the support of an SVM is a large share of the points and
    a few iterations leave most weights non-zero, so ``quad_forms`` and
    ``combine`` take their BLAS paths; real problems have smaller supports
    and sparse weights and take the jitted ones. The projection onto the
    simplex and the cross kernels of prediction are compiled here too. Measured on a
    fresh install: the first ionosphere split of ``mklopt bench`` took 4.5 s
    for Level instead of 0.35 s without this.
    """
    n, m = bank.n_samples, bank.n_kernels
    v = rng.normal(size=n)
    S = np.arange(0, n, max(1, n // 5), dtype=np.int64)[:5]
    bank.quad_forms(v, S)
    bank.quad_forms(v, S, kernels=np.arange(min(2, m), dtype=np.int64))
    w = np.full(m, 1.0 / m)
    bank.combine_cross(X[:4], w, S)
    sparse = np.zeros(m)
    sparse[: max(1, m // 10)] = 1.0  # few active kernels: the jitted combine
    bank.combine(sparse)
    project_simplex(rng.normal(size=m), 1.0, np.empty(m))


def run_split(
    name,
    split,
    method_keys,
    *,
    C=None,
    tol=None,
    max_iter=None,
    inner_tol=None,
    repeats=1,
    protocol="level2008",
    time_limit=None,
    keep_history=False,
    on_run=None,
):
    """Run every method on one random half split of a bundled data set.

    ``C``, ``tol``, ``max_iter`` and ``inner_tol`` default to the
    protocol's (:data:`PROTOCOLS`). Each method is warmed up
    (:func:`warm_up`) just before its timed runs, and ``on_run(run)``, when
    given, receives its :class:`MethodRun` as soon as it is done, so that a
    first split after install shows its first method while the others still
    compile.

    Returns
    -------
    runs : list of MethodRun
    histories : dict
        ``method -> Result.history`` of the last repeat when ``keep_history``.
    """
    proto = PROTOCOLS[protocol]
    C = proto.C if C is None else C
    tol = proto.tol if tol is None else tol
    max_iter = proto.max_iter if max_iter is None else max_iter
    inner_tol = proto.inner_tol if inner_tol is None else inner_tol
    X, y = datasets.load(name)
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=split)
    # a first run after install: the bank builder and the first method's
    # primitives compile in two processes before the bank is built
    _compile.prepare("bench")
    bank = protocol_bank(X_tr, protocol)
    runs, histories = [], {}
    for key in method_keys:
        # only the storage this split's bank has: a first run after install
        # then compiles one storage's kernels, not both that "auto" can pick
        warm_up([key], storages=(bank.storage.name,))
        times, res = [], None
        for _ in range(repeats):
            oracle = SVMDual(bank, y_tr, C=C, tol=inner_tol)
            stop = DualityGap(tol) | MaxIter(max_iter)
            if time_limit is not None:
                stop = stop | TimeLimit(time_limit)
            t0 = time.perf_counter()
            res = solve(oracle, get_preset(key).make(), stop=stop)
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
        if on_run is not None:
            on_run(runs[-1])
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
            f"| {label(r['method'])} "
            f"| {r['seconds']:.3f} ± {r['seconds_std']:.3f} "
            f"| {r['n_svm_calls']:.1f} ± {r['n_svm_calls_std']:.1f} "
            f"| {r['n_iter']:.1f} ± {r['n_iter_std']:.1f} "
            f"| {100 * r['accuracy']:.1f} ± {100 * r['accuracy_std']:.1f} "
            f"| {r['n_selected']:.1f} ± {r['n_selected_std']:.1f} "
            f"| {r['rel_gap']:.4f} | {r['converged']}/{r['n_splits']} |"
        )
    return "\n".join(lines)


def result_tables(rows, method_order, savings=()):
    """The tables of :func:`markdown_table` and the time savings, as results-file tables."""
    from .results import table

    def cells(line):
        return [c.strip() for c in line.strip().strip("|").split("|")]

    md = markdown_table(rows, method_order).splitlines()
    out = [table("Solver time, mean ± std over splits", cells(md[0]), [cells(x) for x in md[2:]])]
    if savings:
        sets = sorted({d for s in savings for d in s["per_dataset"]})
        out.append(table("Time saved (%, the level paper's Table 2)",
                         ["method", "against", *sets, "average"],
                         [[label(s["method"]), label(s["against"]),
                           *(f"{s['per_dataset'][d]:.1f}" if d in s["per_dataset"] else ""
                             for d in sets), f"{s['average']:.1f}"] for s in savings]))
    return out


def run_protocol_split(name, split, method_keys, *, protocol="level2008", C=None, repeats=1,
                       keep_history=False, **kw):
    """Run methods on one split under ``protocol`` ("level2008" or "mkboost2013").

    MKL methods go through :func:`run_split`; the boosting presets (keys
    ``mkboost-d1`` ... ``mkboost-s2``) are fitted with
    :class:`mklopt.MKBoostClassifier` on the same split and kernels.
    """
    if C is None:
        C = PROTOCOLS[protocol].C
    boosting = {k for k in method_keys if get_preset(k).cls.oracle_kind == "weak_learners"}
    mkl = [k for k in method_keys if k not in boosting]
    boost = [k for k in method_keys if k in boosting]
    runs, hist = [], {}
    if mkl:
        runs, hist = run_split(name, split, mkl, C=C, repeats=repeats, protocol=protocol,
                               keep_history=keep_history, **kw)
    if boost:
        runs.extend(_run_boost(name, split, boost, C=C, repeats=repeats, protocol=protocol))
    order = {k: i for i, k in enumerate(method_keys)}
    runs.sort(key=lambda r: order[r.method])
    return runs, hist


def run_split_task(name, split, method_keys, protocol, C, repeats, keep_history, on_run=None):
    """:func:`run_protocol_split` with positional arguments: one bench split as a task."""
    kw = {} if on_run is None else {"on_run": on_run}
    return run_protocol_split(
        name, split, method_keys, protocol=protocol, C=C, repeats=repeats,
        keep_history=keep_history, **kw,
    )


def _run_boost(name, split, keys, *, C, repeats, protocol):
    X, y = datasets.load(name)
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=split)
    specs = grid(X_tr.shape[1], protocol=protocol)
    warm_up(keys)
    out = []
    for key in keys:
        params = dict(get_preset(key).params)  # the variant
        times = []
        for _ in range(repeats):
            clf = MKBoostClassifier(kernels=list(specs), C=C, random_state=split, **params)
            t0 = time.perf_counter()
            clf.fit(X_tr, y_tr)
            times.append(time.perf_counter() - t0)
        w = np.atleast_2d(clf.weights_)
        out.append(
            MethodRun(
                dataset=name, split=split, method=key, seconds=statistics.median(times),
                n_iter=int(np.max(np.atleast_1d(clf.n_iter_))),
                n_svm_calls=int(np.sum(np.atleast_1d(clf.n_fits_))),
                value=math.nan, gap=math.nan, rel_gap=math.nan, converged=False,
                reason=str(np.atleast_1d(clf.stop_reason_)[0]),
                accuracy=float(clf.score(X_te, y_te)),
                n_selected=int(np.count_nonzero(w.max(axis=0) > 0)),
                n_train=len(y_tr), n_kernels=len(specs),
            )
        )
    return out


def write_csv(path, rows):
    """Write summary rows (dicts with the same keys) as CSV."""
    if not rows:
        return
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def draw_figures(histories, out_dir, method_order, n_weights=5):
    """Figures like Xu et al. (2008), Figures 1 and 2, from one split's histories.

    Per data set: the objective's upper and lower bounds (log10) against time
    for every method, and the evolution of the ``n_weights`` largest kernel
    weights per method. Returns the written paths (none without matplotlib).
    """
    plt = pyplot()
    if plt is None:
        return []
    paths = []
    for ds, hist in histories.items():
        keys = [k for k in method_order if k in hist]
        if not keys:
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for k in keys:
            h = hist[k]
            t = [p.elapsed for p in h]
            (line,) = ax.plot(t, [math.log10(max(p.upper, 1e-300)) for p in h],
                              label=f"{label(k)} upper")
            lows = [max(p.lower, p.upper - p.gap) if p.gap == p.gap else p.lower for p in h]
            ax.plot(t, [math.log10(v) if v > 0 else math.nan for v in lows], ls="--",
                    color=line.get_color(), label=f"{label(k)} lower")
        ax.set_xscale("log")  # the fast methods finish in a fraction of the slow ones' time
        ax.set_xlabel("time (s, log scale)")
        ax.set_ylabel("log10 of the MKL objective")
        ax.set_title(f"{ds}: objective bounds against time")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        path = f"{out_dir}/{ds}_objective.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)

        fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.2), squeeze=False)
        for ax, k in zip(axes[0], keys):
            W = np.array([p.weights for p in hist[k]])
            top = np.argsort(W[-1])[::-1][:n_weights]
            for j in top:
                ax.plot(np.arange(1, len(W) + 1), W[:, j], label=f"kernel {j}")
            ax.set_title(label(k), fontsize=9)
            ax.set_xlabel("oracle call")
            ax.set_ylim(bottom=0)
        axes[0][0].set_ylabel("kernel weight")
        fig.suptitle(f"{ds}: evolution of the {n_weights} largest kernel weights", fontsize=10)
        fig.tight_layout()
        path = f"{out_dir}/{ds}_weights.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
