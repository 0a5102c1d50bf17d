"""Solve times on the six bundled sets: this tree against a baseline tree, one run.

    git worktree add /tmp/mklopt-base 2bb3eaf          # the commit to compare with
    python benchmarks/bench_compare.py --baseline /tmp/mklopt-base
    python benchmarks/bench_compare.py --baseline /tmp/mklopt-base --methods level silp sd

Both trees run ``mklopt bench --protocol level2008 --methods level`` (or the
``--methods`` given; 5 half
splits, medians of 3 timed repeats per solve, numba warmed up by the bench)
in fresh processes, alternating baseline / this tree ``--rounds`` times so
that both see the same machine load, after one untimed round per tree that
fills its numba cache. The table gives, per data set and method, the
median over rounds of each tree's mean solve time and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SETS = ["ionosphere", "sonar", "pima", "breast", "wdbc", "vote"]
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_tree(tree, out, splits, repeats, methods=("level",)):
    cmd = [sys.executable, "-m", "mklopt", "bench", "--protocol", "level2008", "--methods",
           *methods, "--datasets", *SETS, "--splits", str(splits), "--repeats", str(repeats),
           "--quiet", "--out", out]
    env = dict(os.environ, PYTHONPATH=tree)
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "runs.json")) as fh:
        runs = json.load(fh)["runs"]
    per = {}
    for r in runs:
        per.setdefault((r["dataset"], r["method"]), []).append(r["seconds"])
    return {k: float(np.mean(v)) for k, v in per.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="source tree of the baseline commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", nargs="+", default=["level"])
    args = ap.parse_args(argv)
    trees = {"baseline": os.path.abspath(args.baseline), "this tree": HERE}
    keys = [(ds, m) for ds in SETS for m in args.methods]
    times = {name: {k: [] for k in keys} for name in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for name, tree in trees.items():  # untimed: fills each tree's numba cache
            run_tree(tree, os.path.join(tmp, f"warm-{name.replace(' ', '_')}"), 1, 1,
                     args.methods)
        for r in range(args.rounds):
            for name, tree in trees.items():
                out = os.path.join(tmp, f"{name.replace(' ', '_')}-{r}")
                for k, t in run_tree(tree, out, args.splits, args.repeats,
                                     args.methods).items():
                    times[name][k].append(t)
                print(f"round {r + 1}/{args.rounds}: {name} done", file=sys.stderr, flush=True)
    print("| data | method | baseline (s) | this tree (s) | ratio |")
    print("|---|---|---|---|---|")
    for ds, m in keys:
        a = float(np.median(times["baseline"][(ds, m)]))
        b = float(np.median(times["this tree"][(ds, m)]))
        print(f"| {ds} | {m} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
