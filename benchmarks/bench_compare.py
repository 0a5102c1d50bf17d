"""Solve times on the six bundled sets: this tree against a baseline tree, one run.

    git worktree add /tmp/mklopt-base 2bb3eaf          # the commit to compare with
    python benchmarks/bench_compare.py --baseline /tmp/mklopt-base
    python benchmarks/bench_compare.py --baseline /tmp/mklopt-base --methods level silp sd
    python benchmarks/bench_compare.py --baseline /tmp/mklopt-base --scale curve-dense-4000

Both trees run ``mklopt bench --protocol level2008`` (``--methods``, default
``level``) in fresh processes, alternating ``--rounds`` times after one
untimed round each that fills its numba cache; per data set and method, the
median over rounds of each tree's mean solve time and their ratio.
``--scale CASE ...``: scale cases instead (each in its own process), with
both trees' oracle calls. ``--out FILE`` writes a results file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from mklopt.bench import results

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
    return {k: (statistics.fmean(v), None) for k, v in per.items()}


def run_case(tree, case):
    """One scale case in a fresh process on ``tree``: ``{(case, ""): (solve s, calls)}``."""
    env = dict(os.environ, PYTHONPATH=tree)
    proc = subprocess.run([sys.executable, "-m", "mklopt.bench.scale", "--child", case, "--quiet"],
                          cwd=tree, env=env, stdout=subprocess.PIPE, text=True, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "error" in out:
        raise SystemExit(f"{case} on {tree}: {out['error']}")
    return {(case, "scale"): (out["solve_s"], out.get("n_oracle_calls"))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", required=True, help="source tree of the baseline commit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", nargs="+", default=["level"])
    ap.add_argument("--scale", nargs="+", metavar="CASE", help="scale cases instead of the sets")
    ap.add_argument("--out", help="write the table to this results file")
    args = ap.parse_args(argv)
    trees = {"baseline": os.path.abspath(args.baseline), "this tree": HERE}
    with tempfile.TemporaryDirectory() as tmp:
        def once(name, tree, r, splits=args.splits, repeats=args.repeats):
            if args.scale:
                return {k: v for c in args.scale for k, v in run_case(tree, c).items()}
            out = os.path.join(tmp, f"{name.replace(' ', '_')}-{r}")
            return run_tree(tree, out, splits, repeats, args.methods)

        for name, tree in trees.items():  # untimed: fills each tree's numba cache
            once(name, tree, "warm", 1, 1)
        times = {name: {} for name in trees}
        for r in range(args.rounds):
            for name in (list(trees) if r % 2 == 0 or not args.scale else list(trees)[::-1]):
                for k, v in once(name, trees[name], r).items():
                    times[name].setdefault(k, []).append(v)
                print(f"round {r + 1}/{args.rounds}: {name} done", file=sys.stderr, flush=True)
    rows = []
    for k in times["baseline"]:
        a = statistics.median(t for t, _ in times["baseline"][k])
        b = statistics.median(t for t, _ in times["this tree"][k])
        calls = ["/".join(sorted({str(c) for _, c in times[n][k]})) for n in trees]
        rows.append([*k, f"{a:.3f}", f"{b:.3f}", f"{b / a:.2f}",
                     *([" / ".join(calls)] if args.scale else [])])
    cols = ["data", "method", "baseline (s)", "this tree (s)", "ratio",
            *(["oracle calls (base / this)"] if args.scale else [])]
    tab = results.table(f"this tree against {args.baseline}", cols, rows)
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    print("\n".join("| " + " | ".join(r) + " |" for r in rows))
    if args.out:
        results.write(args.out, "compare_trees", "python benchmarks/bench_compare.py "
                      + " ".join(argv if argv is not None else sys.argv[1:]), [tab])
    return 0


if __name__ == "__main__":
    sys.exit(main())
