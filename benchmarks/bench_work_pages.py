"""Work matrices written a few rows at a time: NumPy's huge pages against plain ones.

NumPy asks Linux for transparent huge pages on every array of 4 MiB or
more. The SMO solver's work matrix (``n x n`` for a binary problem of
``n`` points) and the row cache are written a few rows at a time, so each
row written first costs a whole 2 MiB page and, where the system compacts
memory to find one (``defrag`` set to ``madvise``), a stall.
:func:`mklopt._memory.empty_by_rows` gives them plain pages instead.

Two measurements, each mode in its own fresh process (the stall depends on
the process's and the system's memory state), alternated over
``--repeats``:

* ``rows``: allocate a 2,312 x 2,312 matrix (a satellite pair at 80 %) and
  write 193 scattered rows (what the pair's first oracle call combines),
  five times in the process; the first time and the median of the next
  four, and the resident memory it added;
* ``fit``: ``MKLClassifier().fit`` on satellite (80 % split, as
  ``bench_multiclass.py`` loads it) after its warm-up fit on digits: the
  whole fit, the sum of the first oracle calls of the 15 pairs
  (``DualSolver.solve``), and the peak RSS of the process.

``numpy`` is the work space allocated with :func:`numpy.empty` (the code
before this change, patched in); ``by_rows`` is the package as it is.

    python benchmarks/bench_work_pages.py --repeats 5
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np


def _rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def child_rows(mode):
    from mklopt._memory import empty_by_rows

    make = np.empty if mode == "numpy" else empty_by_rows
    n = 2312
    rows = np.sort(np.random.default_rng(0).choice(n, 193, replace=False))
    times, added = [], []
    for _ in range(5):
        r0 = _rss_mb()
        t0 = time.perf_counter()
        K = make((n, n))
        K[rows] = 1.0
        times.append(time.perf_counter() - t0)
        added.append(_rss_mb() - r0)
        del K
    return {"first": times[0], "next": float(np.median(times[1:])), "added": added[0]}


def child_fit(mode):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_multiclass import load, warm_up
    from bench_products import _peak_mb

    import mklopt.kernels._rowcache as rc
    import mklopt.oracles._solver as sv
    from mklopt import MKLClassifier

    if mode == "numpy":
        sv.empty_by_rows = rc.empty_by_rows = np.empty
    warm_up()
    X_tr, _, y_tr, _ = load("satellite", 0.8)
    warnings.simplefilter("ignore")
    firsts = []
    solve = sv.DualSolver.solve

    def timed(self, w, a, tol, max_iter):
        t0 = time.perf_counter()
        out = solve(self, w, a, tol, max_iter)
        if not getattr(self, "_bench_seen", False):
            self._bench_seen = True
            firsts.append(time.perf_counter() - t0)
        return out

    sv.DualSolver.solve = timed
    t0 = time.perf_counter()
    MKLClassifier().fit(X_tr, y_tr)
    fit = time.perf_counter() - t0
    peak = _peak_mb()
    return {"fit": fit, "firsts": float(np.sum(firsts)), "n_pairs": len(firsts), "peak": peak}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, mode = args.child
        out = child_rows(mode) if what == "rows" else child_fit(mode)
        print(json.dumps(out))
        return
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as fh:
        thp = fh.read().strip()
    print(f"<!-- transparent huge pages: {thp} -->")
    res = {(w, m): [] for w in ("rows", "fit") for m in ("numpy", "by_rows")}
    for _ in range(args.repeats):
        for what in ("fit", "rows"):
            for mode in ("numpy", "by_rows"):
                out = subprocess.run([sys.executable, __file__, "--child", what, mode],
                                     capture_output=True, text=True, check=True,
                                     env=dict(os.environ))
                res[what, mode].append(json.loads(out.stdout.strip().splitlines()[-1]))

    def med(what, mode, key):
        return float(np.median([r[key] for r in res[what, mode]]))

    print("| work space | 193 rows of 2,312: first write ms (median) | the next four ms "
          "(median) | memory added MB | satellite 80 % fit s (median) | the 15 pairs' first "
          "calls s (median; each run) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for mode in ("numpy", "by_rows"):
        firsts = ", ".join(f"{r['firsts']:.3f}" for r in res["fit", mode])
        print(f"| {mode} | {med('rows', mode, 'first') * 1e3:.1f} | "
              f"{med('rows', mode, 'next') * 1e3:.1f} | {med('rows', mode, 'added'):.1f} | "
              f"{med('fit', mode, 'fit'):.3f} | {med('fit', mode, 'firsts'):.3f} ({firsts}) | "
              f"{med('fit', mode, 'peak'):.0f} |")


if __name__ == "__main__":
    main()
