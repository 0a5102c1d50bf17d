"""Level's tail: oracle calls to relative gaps 1e-2 .. 1e-6 by lambda schedule (ionosphere).

Level-paper protocol (half split, level grid, C = 100); SMO tolerance follows
the gap (the driver's default). Counts of oracle calls do not depend on the
machine's load; seconds do.

    python benchmarks/bench_level_tail.py
    python benchmarks/bench_level_tail.py --dataset sonar --max-calls 1000
"""

import argparse
import time

from mklopt import datasets, solve
from mklopt.bench.runs import protocol_bank
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxOracleCalls, TimeLimit

SCHEDULES = {"0.9 -> 0.99 (paper)": (0.9, 0.99), "0.9 fixed": (0.9, None),
             "0.7 fixed": (0.7, None), "0.6 fixed (default)": (0.6, None),
             "0.5 fixed": (0.5, None)}
TARGETS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ionosphere")
    ap.add_argument("--max-calls", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    X, y = datasets.load(args.dataset)
    X_tr, _, y_tr, _ = datasets.split(X, y, train_fraction=0.5, seed=args.seed)
    bank = protocol_bank(X_tr, "level2008")
    print("| lambda | " + " | ".join(f"calls to {t:g}" for t in TARGETS) + " | seconds |")
    print("|---" * (len(TARGETS) + 2) + "|")
    for label, (lam, lam_final) in SCHEDULES.items():
        t0 = time.perf_counter()
        res = solve(SVMDual(bank, y_tr, C=100.0, tol=1e-3), LevelBundle(lam, lam_final),
                    stop=DualityGap(TARGETS[-1]) | MaxOracleCalls(args.max_calls) | TimeLimit(120))
        secs = time.perf_counter() - t0
        cells = []
        for t in TARGETS:
            hit = next((p.n_oracle_calls for p in res.history if p.rel_gap <= t), None)
            cells.append(str(hit) if hit is not None else f"> {res.n_oracle_calls}")
        print(f"| {label} | " + " | ".join(cells) + f" | {secs:.1f} |", flush=True)


if __name__ == "__main__":
    main()
