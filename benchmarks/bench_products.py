"""One-vs-one banks held as stored products against dense banks: fit time and memory.

``MKLClassifier()`` (every default; its one multiclass bank is then held
as squared distances and inner products, ``storage="products"``) against
``MKLClassifier(storage="dense")`` and ``make_pipeline(StandardScaler(),
SVC())`` on the same stratified split.

Two measurements, each repeated with the storages alternated:

* ``fresh``: every fit in a new Python process, as a user's script runs it:
  numba's compiled code is loaded from its cache and warmed on a small fit
  first, then the timed MKL fit and the SVC fit run once each; the child
  reports its peak resident memory (``VmHWM``) before and after the
  MKL fit.
* ``warm``: fits repeated in one process (the second and later fits reuse
  memory the process already touched), as ``bench_multiclass.py`` times them.

Usage::

    python benchmarks/bench_products.py --repeats 5
    python benchmarks/bench_products.py --build --repeats 7   # the build alone

``--build`` times ``ProductStorage.build`` alone on each case's training
points (scaled and with the kernels ``MKLClassifier()`` uses): the first
build of the process, then the median of ``--repeats`` more. Run it with
``PYTHONPATH=<another tree>`` to time another commit's build.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CASES = (("digits", 0.5), ("satellite", 0.5), ("satellite", 0.8))


def _peak_mb():
    """This process's resident high-water mark (``VmHWM``), in MB.

    Not ``ru_maxrss``: Linux carries a parent's peak across ``fork`` and
    ``exec`` into it, so a child started by a large parent would report the
    parent's.
    """
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(name, frac, storage):
    from bench_multiclass import load, warm_up
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from mklopt import MKLClassifier

    warm_up()
    X_tr, X_te, y_tr, y_te = load(name, frac)
    # The MKL fit first, so that the peak resident memory after it is the
    # process's before it (numba's code, the data) plus what the fit used.
    before = _peak_mb()
    est = MKLClassifier(storage=storage)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X_tr, y_tr)
    t_mkl = time.perf_counter() - t0
    peak = _peak_mb()
    t0 = time.perf_counter()
    svc = make_pipeline(StandardScaler(), SVC()).fit(X_tr, y_tr)
    t_svc = time.perf_counter() - t0
    print(json.dumps({"svc": t_svc, "mkl": t_mkl, "acc": est.score(X_te, y_te),
                      "acc_svc": svc.score(X_te, y_te), "rss_before_mb": before,
                      "rss_peak_mb": peak}))


def fresh(name, frac, storage):
    out = subprocess.run([sys.executable, __file__, "--child", name, str(frac), storage],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def warm(name, frac, storage, repeats):
    from bench_multiclass import load

    from mklopt import MKLClassifier

    X_tr, _, y_tr, _ = load(name, frac)
    secs = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            MKLClassifier(storage=storage).fit(X_tr, y_tr)
        secs.append(time.perf_counter() - t0)
    return secs[1:]  # the first fit of the process touches fresh memory


def build_times(repeats):
    from bench_multiclass import load

    import mklopt
    from mklopt.datasets import _scaling
    from mklopt.estimators._params import resolve_kernel_specs
    from mklopt.kernels.functions import KernelFunctions
    from mklopt.kernels.products import ProductStorage

    print(f"<!-- mklopt from {os.path.dirname(mklopt.__file__)} -->")
    print("| data | n | matrices | MB | first build s | build s: median (each) |")
    print("|---|---|---|---|---|---|")
    for name, frac in CASES:
        X = load(name, frac)[0]
        mean, scale = _scaling(X)
        X = (X - mean) / scale
        specs = resolve_kernel_specs("all_features", X.shape[1], protocol="level2008")
        functions = KernelFunctions.from_data(X, specs, normalize=None)
        secs = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            storage = ProductStorage.build(functions)
            secs.append(time.perf_counter() - t0)
            count, mb = storage.P.shape[0], storage.P.nbytes / 2**20
            del storage
        each = ", ".join(f"{t:.3f}" for t in secs[1:])
        print(f"| {name} ({int(100 * frac)} %) | {X.shape[0]:,} | {count} | {mb:.0f} | "
              f"{secs[0]:.3f} | {np.median(secs[1:]):.3f} ({each}) |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--build", action="store_true",
                    help="time ProductStorage.build alone (see the module notes)")
    args = ap.parse_args(argv)
    if args.build:
        from bench_multiclass import warm_up

        warm_up()
        build_times(args.repeats)
        return
    if args.child:
        name, frac, storage = args.child
        _child(name, float(frac), storage)
        return
    from bench_multiclass import warm_up

    warm_up()
    storages = ("auto", "dense")
    print("| data | storage | fresh: SVC s | fresh: MKL s (median; each) | ratio | "
          "peak RSS MB (before the fit) | "
          "warm: MKL s (median) | ratio to fresh SVC | accuracy SVC / MKL |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, frac in CASES:
        runs = {s: [] for s in storages}
        for _ in range(args.repeats):
            for s in storages:
                runs[s].append(fresh(name, frac, s))
        warm_s = {s: warm(name, frac, s, args.repeats) for s in storages}
        svc = float(np.median([r["svc"] for s in storages for r in runs[s]]))
        for s in storages:
            mkl = float(np.median([r["mkl"] for r in runs[s]]))
            rss = float(np.median([r["rss_peak_mb"] for r in runs[s]]))
            rss0 = float(np.median([r["rss_before_mb"] for r in runs[s]]))
            w = float(np.median(warm_s[s]))
            label = "auto (products)" if s == "auto" else s
            each = ", ".join(f"{r['mkl']:.2f}" for r in runs[s])
            print(f"| {name} ({int(100 * frac)} %) | {label} | {svc:.3f} | {mkl:.3f} "
                  f"({each}) | {mkl / svc:.1f}x | "
                  f"{rss:.0f} ({rss0:.0f}) | {w:.3f} | {w / svc:.1f}x | "
                  f"{runs[s][0]['acc_svc']:.3f} / {runs[s][0]['acc']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
