"""Level's lambda: oracle calls to relative gaps 1e-2, 1e-3, 1e-4 on the six bundled sets.

Level-paper protocol (random half split, level grid on the training half,
C = 100, SMO tolerance 1e-4 that follows the gap as the driver sets it),
splits 0..``--splits``-1. Compares the paper's schedule (0.9, raised to 0.99)
with lambda = 0.7 held fixed (``LevelBundle()``'s default). Counts of oracle
calls do not depend on the machine's load.

    python benchmarks/bench_level_lambda.py --splits 3
"""

import argparse

from mklopt import datasets, solve
from mklopt.bench.runs import protocol_bank
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxOracleCalls, TimeLimit

TARGETS = (1e-2, 1e-3, 1e-4)
SCHEDULES = {"paper 0.9 -> 0.99": (0.9, 0.99), "0.7 fixed (default)": (0.7, None)}
SETS = datasets.PAPERS


def calls_to_targets(bank, y, lam, lam_final, max_calls):
    res = solve(SVMDual(bank, y, C=100.0, tol=1e-4), LevelBundle(lam, lam_final),
                stop=DualityGap(TARGETS[-1]) | MaxOracleCalls(max_calls) | TimeLimit(300))
    return [next((p.n_oracle_calls for p in res.history if p.rel_gap <= t), None)
            for t in TARGETS]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--max-calls", type=int, default=400)
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    args = ap.parse_args(argv)
    head = " | ".join(f"{lab}: calls to {t:g}" for lab in SCHEDULES for t in TARGETS)
    print(f"| data | split | {head} |")
    print("|---|---" + "|---" * (len(TARGETS) * len(SCHEDULES)) + "|")
    for name in args.sets:
        X, y = datasets.load(name)
        for seed in range(args.splits):
            X_tr, _, y_tr, _ = datasets.split(X, y, train_fraction=0.5, seed=seed)
            bank = protocol_bank(X_tr, "level2008")
            cells = []
            for lam, lam_final in SCHEDULES.values():
                got = calls_to_targets(bank, y_tr, lam, lam_final, args.max_calls)
                cells += [str(c) if c is not None else f"> {args.max_calls}" for c in got]
            print(f"| {name} | {seed} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
