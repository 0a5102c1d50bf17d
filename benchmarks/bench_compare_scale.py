"""Scale cases on two trees, alternated: solve times of this tree against a baseline.

    git worktree add /tmp/mklopt-base <commit>
    python benchmarks/bench_compare_scale.py --baseline /tmp/mklopt-base \
        --cases curve-dense-4000 curve-on_the_fly-4000 letter-lp2 --rounds 3

Each round runs every case once per tree, each in its own fresh process
(``python -m mklopt.bench.scale --child CASE``, which warms numba up before
timing), the two trees alternating case by case so that both see the same
machine load. One untimed run per tree and case first fills the numba
caches. The table gives, per case, the median over rounds of each tree's
solve time (and bank build time) and the ratio this tree / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_case(tree, case):
    """One scale case in a fresh process on ``tree``; its JSON figures."""
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run([sys.executable, "-m", "mklopt.bench.scale", "--child", case, "--quiet"],
                          cwd=tree, env=env, stdout=subprocess.PIPE, text=True, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "error" in out:
        raise SystemExit(f"{case} on {tree}: {out['error']}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="source tree of the baseline commit")
    ap.add_argument("--cases", nargs="+", default=["curve-dense-4000", "curve-on_the_fly-4000"])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    trees = {"baseline": os.path.abspath(args.baseline), "this": HERE}
    for case in args.cases:  # untimed: fills each tree's numba cache
        for tree in trees.values():
            run_case(tree, case)
    times = {(c, t): [] for c in args.cases for t in trees}
    for r in range(args.rounds):
        for case in args.cases:
            for name in (("baseline", "this") if r % 2 == 0 else ("this", "baseline")):
                out = run_case(trees[name], case)
                times[case, name].append((out["solve_s"], out.get("build_s", 0.0),
                                          out.get("n_oracle_calls")))
                print(f"round {r + 1} {case} {name}: solve {out['solve_s']:.2f} s, "
                      f"calls {out.get('n_oracle_calls')}", file=sys.stderr, flush=True)
    print("| case | baseline solve (s) | this tree solve (s) | ratio | calls (base / this) |")
    print("|---|---|---|---|---|")
    for case in args.cases:
        b = statistics.median(x[0] for x in times[case, "baseline"])
        t = statistics.median(x[0] for x in times[case, "this"])
        cb = {x[2] for x in times[case, "baseline"]}
        ct = {x[2] for x in times[case, "this"]}
        print(f"| {case} | {b:.2f} | {t:.2f} | {t / b:.3f} | {'/'.join(map(str, sorted(cb)))} "
              f"/ {'/'.join(map(str, sorted(ct)))} |")


if __name__ == "__main__":
    main()
