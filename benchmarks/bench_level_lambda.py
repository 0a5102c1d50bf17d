"""Level's lambda: oracle calls to relative gaps 1e-2, 1e-3, 1e-4 on the six bundled sets.

Level-paper protocol (random half split, level grid on the training half,
C = 100, SMO tolerance 1e-4 that follows the gap as the driver sets it),
splits 0..``--splits``-1. Compares the paper's schedule (0.9, raised to 0.99)
with lambda = 0.7, 0.6 and 0.5 held fixed (0.6 is ``LevelBundle()``'s default). Counts of oracle
calls do not depend on the machine's load.

    python benchmarks/bench_level_lambda.py --splits 3

``--multiclass`` counts the oracle calls of ``MKLClassifier()`` (every
other parameter at its default, C = 1 and 100) with each fixed lambda on
iris, wine, digits (scikit-learn's) and satellite, stratified half splits
``0..--splits-1``; its one-vs-one pairs start from a neighbouring pair's
weights. The test accuracy is printed beside the counts.

    python benchmarks/bench_level_lambda.py --multiclass --splits 3
"""

import argparse

from mklopt import datasets, solve
from mklopt.bench.runs import protocol_bank
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxOracleCalls, TimeLimit

TARGETS = (1e-2, 1e-3, 1e-4)
SCHEDULES = {"paper 0.9 -> 0.99": (0.9, 0.99), "0.7 fixed": (0.7, None),
             "0.6 fixed (default)": (0.6, None), "0.5 fixed": (0.5, None)}
SETS = datasets.PAPERS


def calls_to_targets(bank, y, lam, lam_final, max_calls):
    res = solve(SVMDual(bank, y, C=100.0, tol=1e-4), LevelBundle(lam, lam_final),
                stop=DualityGap(TARGETS[-1]) | MaxOracleCalls(max_calls) | TimeLimit(300))
    return [next((p.n_oracle_calls for p in res.history if p.rel_gap <= t), None)
            for t in TARGETS]


MULTICLASS_LAMBDAS = (0.5, 0.6, 0.7)


def multiclass(splits):
    import warnings

    from sklearn.datasets import load_digits, load_iris, load_wine
    from sklearn.model_selection import train_test_split

    from mklopt import MKLClassifier

    sets = {"iris": load_iris(return_X_y=True), "wine": load_wine(return_X_y=True),
            "digits": load_digits(return_X_y=True), "satellite": datasets.load("satellite")}
    lams = MULTICLASS_LAMBDAS
    print("| data | split | C | " + " | ".join(f"calls, lambda {lam}" for lam in lams) + " | "
          + " | ".join(f"accuracy, {lam}" for lam in lams) + " |")
    print("|---|---|---" + "|---" * (2 * len(lams)) + "|")
    for name, (X, y) in sets.items():
        for seed in range(splits):
            X_tr, X_te, y_tr, y_te = train_test_split(X, y, train_size=0.5, stratify=y,
                                                      random_state=seed)
            for C in (1.0, 100.0):
                calls, acc = [], []
                for lam in lams:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = MKLClassifier(C=C, method=LevelBundle(lam=lam)).fit(X_tr, y_tr)
                    calls.append(str(int(sum(est.n_oracle_calls_))))
                    acc.append(f"{est.score(X_te, y_te):.4f}")
                print(f"| {name} | {seed} | {C:g} | " + " | ".join(calls + acc) + " |",
                      flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--max-calls", type=int, default=400)
    ap.add_argument("--sets", nargs="+", default=list(SETS))
    ap.add_argument("--multiclass", action="store_true",
                    help="count MKLClassifier's calls on four multiclass sets instead")
    args = ap.parse_args(argv)
    if args.multiclass:
        multiclass(args.splits)
        return
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
