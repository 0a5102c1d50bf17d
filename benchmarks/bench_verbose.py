"""What ``verbose`` costs: fit time at each level against a reference commit, same run.

Each timed fit runs in a child process with ``PYTHONPATH`` set to one source
tree: this one (at ``verbose=0``, 1 and 2) or the reference commit's
(exported with ``git archive``, which has no ``verbose``). A child warms
numba up with one untimed fit, then times ``--repeats`` fits of
``MKLClassifier()`` (the defaults: 17 kernels, 45 one-vs-one pairs) on
scikit-learn's digits (1,797 points, 64 features), stderr discarded; the
trees take turns, so drift of the machine spreads over all of them. Reported:
the median wall-clock and CPU (``time.process_time``, the child's own
threads; less moved by other processes on a shared machine) fit time per
tree and level, with their ranges and ratios to the reference.

With ``--example`` it instead prints the ``verbose=2`` output of one fit on
random data whose kernels are computed on the fly, through a row cache
smaller than the matrix (so the row path, its rate and its hit rate show).

    python benchmarks/bench_verbose.py --ref fa28060 --rounds 5
    python benchmarks/bench_verbose.py --overhead
    python benchmarks/bench_verbose.py --example --plain --n 20000 --cache-mb 200 --max-iter 6
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import sys, time, warnings
from sklearn.datasets import load_digits
from mklopt import MKLClassifier
X, y = load_digits(return_X_y=True)
kw = {} if sys.argv[1] == "none" else {"verbose": int(sys.argv[1])}
warnings.simplefilter("ignore")
MKLClassifier(**kw).fit(X[:300], y[:300])  # numba warm-up
times = []
for _ in range(int(sys.argv[2])):
    t0, c0 = time.perf_counter(), time.process_time()
    MKLClassifier(**kw).fit(X, y)
    times.append((time.perf_counter() - t0, time.process_time() - c0))
print(" ".join(f"{w!r}/{c!r}" for w, c in times))
"""


def _export(ref, dest):
    """The source tree of commit ``ref`` of this repository, in ``dest``."""
    archive = subprocess.run(["git", "-C", HERE, "archive", ref], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return dest


def _times(tree, level, repeats):
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", CHILD, level, str(repeats)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return [tuple(float(x) for x in t.split("/")) for t in out.split()]


def compare(ref, repeats, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        ref_tree = _export(ref, tmp)
        runs = [("reference " + ref, ref_tree, "none"), ("this tree, verbose=0", HERE, "0"),
                ("this tree, verbose=1", HERE, "1"), ("this tree, verbose=2", HERE, "2")]
        times = {label: [] for label, _, _ in runs}
        for r in range(rounds):
            for label, tree, level in runs:
                t = _times(tree, level, repeats)
                times[label].extend(t)
                print(f"round {r + 1}: {label}: wall/CPU s "
                      + ", ".join(f"{w:.2f}/{c:.2f}" for w, c in t), file=sys.stderr, flush=True)
    ref = times[runs[0][0]]
    wall0 = statistics.median(w for w, _ in ref)
    cpu0 = statistics.median(c for _, c in ref)
    print("| tree | fits | median wall s (min-max) | ratio | median CPU s (min-max) | ratio |")
    print("|---|---|---|---|---|---|")
    for label, _, _ in runs:
        wall = [w for w, _ in times[label]]
        cpu = [c for _, c in times[label]]
        mw, mc = statistics.median(wall), statistics.median(cpu)
        print(f"| {label} | {len(wall)} | {mw:.2f} ({min(wall):.2f}-{max(wall):.2f}) | "
              f"{mw / wall0:.2f} | {mc:.2f} ({min(cpu):.2f}-{max(cpu):.2f}) | {mc / cpu0:.2f} |")


def silent_overhead(n_pairs=45, number=2000):
    """Seconds of the work ``verbose=0`` adds to one fit of ``n_pairs`` pairs, best of 5.

    What the estimators run at level 0 that they did not before: the
    progress object (off), the per-pair name wrapper and the check that
    installs no per-call callback.
    """
    import timeit

    from mklopt.estimators._progress import TaskProgress, call_lines, labelled

    named = labelled(lambda: None)

    def one_fit():
        with TaskProgress(0, "MKLClassifier", n_pairs, "pair"):
            for _ in range(n_pairs):
                named("'0' vs '1'")
                call_lines(0, "MKLClassifier", None, None)

    return min(timeit.repeat(one_fit, number=number, repeat=5)) / number


def example(n, d, n_kernels, cache_mb, max_iter):
    import numpy as np

    from mklopt import MKLClassifier
    from mklopt.kernels import rbf

    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    widths = np.geomspace(0.5, 8.0, n_kernels) * np.sqrt(d)
    clf = MKLClassifier(kernels=[rbf(float(s)) for s in widths], storage="on_the_fly",
                        cache_size=cache_mb, max_iter=max_iter, verbose=2)
    print(f"n={n}, d={d}, {n_kernels} Gaussian kernels, storage='on_the_fly', "
          f"cache_size={cache_mb} MB, max_iter={max_iter}", file=sys.stderr, flush=True)
    clf.fit(X, y)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="fa28060", help="reference commit (default: fa28060)")
    ap.add_argument("--repeats", type=int, default=1, help="timed fits per child (default: 1)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="turns of all trees (default: 3; fits per tree = rounds x repeats)")
    ap.add_argument("--example", action="store_true", help="print a verbose=2 on-the-fly fit")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=7)
    ap.add_argument("--kernels", type=int, default=10)
    ap.add_argument("--cache-mb", type=float, default=200.0)
    ap.add_argument("--max-iter", type=int, default=8)
    ap.add_argument("--overhead", action="store_true",
                    help="time the Python work verbose=0 adds to a 45-pair fit")
    ap.add_argument("--plain", action="store_true",
                    help="with --example: plain lines even when tqdm is installed")
    args = ap.parse_args()
    if args.plain:
        sys.modules["tqdm"] = None  # as if it were not installed
    if args.overhead:
        print(f"verbose=0 adds {silent_overhead() * 1e6:.1f} us to a 45-pair fit")
    elif args.example:
        example(args.n, args.d, args.kernels, args.cache_mb, args.max_iter)
    else:
        compare(args.ref, args.repeats, args.rounds)


if __name__ == "__main__":
    main()
