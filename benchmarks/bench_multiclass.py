"""Multiclass fit times of ``MKLClassifier()`` against ``SVC()``, and where the time goes.

Both with their defaults on raw features (``SVC()`` in ``make_pipeline(StandardScaler(), ...)``),
on the same stratified split in one process; medians over ``--repeats`` fits after a small
warm-up fit; accuracy on the held-out part.

    python benchmarks/bench_multiclass.py                    # digits 50 %, satellite 50 / 80 %
    python benchmarks/bench_multiclass.py --curve satellite  # ratio against training size
    python benchmarks/bench_multiclass.py --profile digits satellite
    python benchmarks/bench_multiclass.py --profile satellite --warm  # the second fit
    python benchmarks/bench_multiclass.py --profile satellite --fraction 0.8
    python benchmarks/bench_multiclass.py --threads 1 2 default --busy 1  # beside a busy process
    python benchmarks/bench_multiclass.py --thread-cpu digits satellite  # CPU of each thread

``--profile`` sums one cProfile'd fit into the parts of ``_PARTS`` (kernel evaluation, combining,
the quadratic forms ``q``, SMO, the master step) and the rest, and times ``max_iter=1`` fits too
(one outer step: the floor of any fit). ``--thread-cpu`` (Linux) prints the CPU time each thread
(OpenBLAS and numba workers, the main thread) spent in one default fit of each set.
``--threads`` runs every measure with that many BLAS, OpenMP and numba threads (``default``;
several: one column each, interleaved); ``--busy N`` runs it beside N CPU-bound processes.
``PYTHONPATH=<another tree>`` measures another commit.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from mklopt import MKLClassifier, datasets
from mklopt.bench.results import blas_threads, environment

CASES = [("digits", 0.5), ("satellite", 0.5), ("satellite", 0.8)]

#: Profile categories: (label, predicate on "file:function").
_PARTS = [
    # (first: the forms computed from features run in _jit/groups.py too)
    ("q (quadratic forms)", ("quad_forms", "_gram.py:quad", "gram.py:quad")),
    ("kernel evaluation", ("_jit/groups.py", "_jit/gram.py", "kernels/functions.py",
                           "products_sym", "products_block")),
    ("combine (matrix or rows)", ("combine_kernels", "combine_view", "view_rows",
                                  "combine_rows", "storage.py:", "smo_gradient",
                                  "product_rows", "product_combine", "source_diag", "source_fill")),
    ("SMO", ("smo_solve", "_jit/smo.py")),
    ("outer method (master step)", ("mklopt/methods/", "_highspy", "_ecos", "scipy/optimize",
                                    "scipy/sparse")),
]


def load(name, train_fraction, seed=0):
    X, y = load_digits(return_X_y=True) if name == "digits" else datasets.load(name)
    return train_test_split(X, y, train_size=train_fraction, random_state=seed, stratify=y)


def quiet_fit(make, X, y):
    """``(estimator, fit seconds)``, warnings silenced. Here, not imported: this script runs
    on older trees too (``PYTHONPATH``), which need only ``mklopt.bench.results.blas_threads``."""
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        est.fit(X, y)
        return est, time.perf_counter() - t0


@contextlib.contextmanager
def busy(n):
    """``n`` CPU-bound processes running inside (each ended through its own handle after)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5 if n else 0.0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def warm_up():
    X, y = load_digits(return_X_y=True)
    quiet_fit(MKLClassifier, X[:200], y[:200])


def _label(threads):
    return "default threads" if threads is None else f"{threads} thread" + "s" * (threads > 1)


def time_fits(X_tr, y_tr, X_te, y_te, repeats, threads=(None,), floor=False):
    """``{(key, threads): (median s, accuracy, oracle calls)}``, interleaved; floor: max_iter=1."""
    secs, scores = {}, {}
    makers = (("svc", lambda: make_pipeline(StandardScaler(), SVC())), ("mkl", MKLClassifier)) + (
        (("step", lambda: MKLClassifier(max_iter=1)),) if floor else ())
    for _ in range(repeats):
        for t in threads:
            for key, make in makers:
                with blas_threads(t):
                    est, s = quiet_fit(make, X_tr, y_tr)
                secs.setdefault((key, t), []).append(s)
                scores[key, t] = (float(est.score(X_te, y_te)),
                                  int(np.sum(getattr(est, "n_oracle_calls_", 0))))
    return {k: (statistics.median(v), *scores[k]) for k, v in secs.items()}


def _header(title, first, threads):
    """Print a table's title and header: the ``first`` columns, then three per setting."""
    print(f"**{title}**\n")
    print(f"| {' | '.join(first)} |" + "".join(
        f" SVC s ({_label(t)}) | MKL s | ratio |" for t in threads) + " accuracy SVC / MKL |")
    print("|---" * len(first) + "|" + "---|---|---|" * len(threads) + "---|")


def _row(cells, r, threads):
    """Print one row: ``cells``, each setting's SVC and MKL medians and ratio, the accuracies."""
    times = "".join(f" {r['svc', t][0]:.3f} | {r['mkl', t][0]:.3f} | "
                    f"{r['mkl', t][0] / r['svc', t][0]:.1f}x |" for t in threads)
    t = threads[0]
    print(f"| {' | '.join(cells)} |{times} {r['svc', t][1]:.3f} / {r['mkl', t][1]:.3f} |",
          flush=True)


def table(cases, repeats, threads=(None,), note=""):
    _header(f"MKLClassifier() against make_pipeline(StandardScaler(), SVC()), medians of "
            f"{repeats} fits, {', '.join(map(_label, threads))} (interleaved){note}",
            ["data", "n train", "d", "classes"], threads)
    for name, frac in cases:
        X_tr, X_te, y_tr, y_te = load(name, frac)
        r = time_fits(X_tr, y_tr, X_te, y_te, repeats, threads)
        _row([f"{name} ({int(100 * frac)} %)", f"{X_tr.shape[0]:,}", str(X_tr.shape[1]),
              str(len(np.unique(y_tr)))], r, threads)


def curve(name, sizes, repeats, threads=(None,), note=""):
    _header(f"Ratio over training size ({name}, fixed 20 % test part), "
            f"{', '.join(map(_label, threads))}{note}", ["n train"], threads)
    X, y = datasets.load(name)
    X_rest, X_te, y_rest, y_te = train_test_split(X, y, test_size=0.2, random_state=0,
                                                  stratify=y)
    for n in sizes:
        if n < X_rest.shape[0]:
            X_tr, _, y_tr, _ = train_test_split(X_rest, y_rest, train_size=n, random_state=0,
                                                stratify=y_rest)
        else:
            X_tr, y_tr = X_rest, y_rest
        _row([f"{X_tr.shape[0]:,}"], time_fits(X_tr, y_tr, X_te, y_te, repeats, threads),
             threads)


def _profile_one(X_tr, y_tr, threads, warm):
    """Seconds per part of one profiled fit, its wall time and the fitted classifier."""
    with blas_threads(threads):
        if warm:
            # A first fit maps the bank's memory: the profiled fit then does not
            # pay the first touch of a fresh 1.4 GB (up to 1.5 s on this VM).
            quiet_fit(MKLClassifier, X_tr, y_tr)
        prof = cProfile.Profile()
        prof.enable()
        clf, total = quiet_fit(MKLClassifier, X_tr, y_tr)
        prof.disable()
    parts = dict.fromkeys([p for p, _ in _PARTS], 0.0)
    for (fname, _, func), (_, _, tottime, _, _) in pstats.Stats(prof).stats.items():
        key = f"{fname}:{func}"
        for label, needles in _PARTS:
            if any(s_ in key for s_ in needles):
                parts[label] += tottime
                break
    parts["the rest (Python around each call, bookkeeping)"] = total - sum(parts.values())
    return parts, total, clf


def profile(names, frac, warm=False, threads=(None,), repeats=3, note=""):
    """The seconds (and share) of each part of a profiled fit, per data set and threads; below,
    the medians of ``repeats`` unprofiled fits of MKLClassifier() and SVC and their ratio."""
    cols, results = [], []
    for name in names:
        X_tr, X_te, y_tr, y_te = load(name, frac)
        for t in threads:
            parts, total, clf = _profile_one(X_tr, y_tr, t, warm)
            f = time_fits(X_tr, y_tr, X_te, y_te, repeats, (t,), floor=True)
            cols.append(f"{name} ({int(100 * frac)} %), {_label(t)}")
            results.append((parts, total, clf, f["step", t], f["svc", t][0], f["mkl", t][0]))
    print(f"**Where a fit of MKLClassifier() goes (cProfile, one fit{', warm' * warm}); "
          f"fit times are medians of {repeats} unprofiled fits{note}**")
    print()
    print("| part | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for label in results[0][0]:
        print(f"| {label} | " + " | ".join(
            f"{p[label]:.3f} s ({100 * p[label] / tot:.0f} %)" for p, tot, *_ in results) + " |")
    print("| profiled fit | " + " | ".join(f"{tot:.3f} s" for _, tot, *_ in results) + " |")
    print("| pairs, oracle calls | " + " | ".join(
        f"{len(c.models_)}, {int(np.sum(c.n_oracle_calls_))}" for _, _, c, *_ in results) + " |")
    print("| MKLClassifier() fit | " + " | ".join(f"{m:.3f} s" for *_, m in results) + " |")
    print("| SVC fit | " + " | ".join(f"{s_:.3f} s" for *_, s_, _ in results) + " |")
    print("| ratio | " + " | ".join(f"{m / s_:.1f}x" for *_, s_, m in results) + " |")
    print("| max_iter=1 (one outer step): fit, oracle calls, ratio | " + " | ".join(
        f"{f[0]:.3f} s, {f[2]}, {f[0] / s_:.1f}x" for *_, f, s_, _ in results) + " |", flush=True)


def _thread_cpu():
    """``{thread id: CPU seconds}`` of this process's threads (Linux ``/proc``)."""
    out, tick = {}, os.sysconf("SC_CLK_TCK")
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        out[int(t)] = (int(f[11]) + int(f[12])) / tick  # utime + stime
    return out


def thread_cpu(names, note=""):
    """The CPU time of each thread of the process over one default fit of each set."""
    import scipy.linalg  # noqa: F401  (scipy's OpenBLAS copy starts its workers too)

    np.dot(np.ones((500, 500)), np.ones((500, 500)))  # NumPy's pool: started, woken once
    blas = set(_thread_cpu()) - {threading.get_native_id()}
    warm_up()
    data = [load(name, 0.5)[::2] for name in names]
    before = _thread_cpu()
    t0 = time.perf_counter()
    for X_tr, y_tr in data:
        quiet_fit(MKLClassifier, X_tr, y_tr)
    wall = time.perf_counter() - t0
    after = _thread_cpu()
    print(f"**CPU time of each thread over one default fit of {', '.join(names)} "
          f"({wall:.2f} s wall){note}**\n")
    print("| thread | CPU s in the fits |")
    print("|---|---|")
    for t in sorted(after):
        kind = ("main" if t == threading.get_native_id() else
                "OpenBLAS worker" if t in blas else "numba (OpenMP) or other worker")
        print(f"| {kind} | {after[t] - before.get(t, 0.0):.2f} |")


def _commit():
    """The commit of the imported mklopt, with the load average now."""
    return f"mklopt at {environment()['commit']}, load {os.getloadavg()[0]:.1f} at the start"


def _case(v):
    name, _, pct = v.partition(":")
    return name, float(pct or 50) / 100


def _threads_arg(v):
    return None if v == "default" else int(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--curve", metavar="DATA", default=None,
                    help="fit-time ratio against training size on this bundled set")
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 3000, 4000, 5148])
    ap.add_argument("--profile", nargs="+", metavar="DATA", default=None,
                    help="profile one fit of each set (the --fraction split)")
    ap.add_argument("--fraction", type=float, default=0.5,
                    help="with --profile: the training fraction of the split (default 0.5)")
    ap.add_argument("--warm", action="store_true",
                    help="with --profile: profile the second fit of the process")
    ap.add_argument("--threads", type=_threads_arg, nargs="+", default=[None],
                    metavar="N|default", help="thread settings (default: the defaults)")
    ap.add_argument("--cases", type=_case, nargs="+", default=None, metavar="DATA[:PERCENT]",
                    help="the table's splits (default: digits:50 satellite:50 satellite:80)")
    ap.add_argument("--busy", type=int, default=0, metavar="N",
                    help="run beside N CPU-bound processes")
    ap.add_argument("--thread-cpu", nargs="+", metavar="DATA", default=None,
                    help="the CPU time of each thread over one default fit of each set")
    args = ap.parse_args(argv)
    if args.thread_cpu:
        return thread_cpu(args.thread_cpu, f"; {_commit()}")
    warm_up()
    threads = tuple(args.threads)
    with busy(args.busy):
        note = f"; {_commit()}, " + (f"{args.busy} CPU-bound process" + "es" * (args.busy > 1)
                                     + " of its own beside it" if args.busy else "no burner")
        if args.profile:
            profile(args.profile, args.fraction, args.warm, threads, args.repeats, note)
        elif args.curve:
            curve(args.curve, args.sizes, args.repeats, threads, note)
        else:
            table(args.cases or CASES, args.repeats, threads=threads, note=note)


if __name__ == "__main__":
    main()
