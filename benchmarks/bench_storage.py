"""Dense against on-the-fly storage on the bundled sets, and what ``"auto"`` picks.

The level-method paper's protocol (its grid on standardised features,
unit-trace kernels, C = 100, Level to a relative duality gap of 1e-2 or
500 iterations) on half splits. For each storage the bank build
(``KernelBank.from_specs``) and the solve are timed apart; both storages
are exact, so they take the same oracle calls. Storages alternate within
each repeat so that other load on the machine hits both alike; numba is
compiled for both before timing. Reported: medians over splits and
repeats, in milliseconds, and the storage ``"auto"`` chooses.

    python benchmarks/bench_storage.py                     # six sets, 3 splits x 3 repeats
    python benchmarks/bench_storage.py --datasets vote --splits 5
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from mklopt import KernelBank, datasets, solve
from mklopt.bench.runs import warm_up
from mklopt.kernels import grid
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter

STORAGES = ("dense", "on_the_fly")


def standardised(X_tr):
    mean, scale = datasets._scaling(X_tr)
    return (X_tr - mean) / scale


def run(args):
    warm_up(["level"], storages=STORAGES)
    out = []
    for name in args.datasets:
        X, y = datasets.load(name)
        rows = {st: [] for st in STORAGES}
        picked = set()
        for split in range(args.splits):
            X_tr, _, y_tr, _ = datasets.split(X, y, seed=args.seed + split)
            Xs = standardised(X_tr)
            specs = list(grid(X.shape[1]))
            picked.add(KernelBank.from_specs(Xs, specs, normalize="trace").storage.name)
            for _ in range(args.repeats):
                for st in STORAGES:
                    t0 = time.perf_counter()
                    bank = KernelBank.from_specs(Xs, specs, normalize="trace", storage=st)
                    build = time.perf_counter() - t0
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = solve(SVMDual(bank, y_tr.astype(float), C=args.C), LevelBundle(),
                                    stop=DualityGap(1e-2) | MaxIter(500))
                    rows[st].append((build, res.elapsed, res.n_oracle_calls))
        med = {st: [statistics.median(v[i] for v in rows[st]) for i in range(3)]
               for st in STORAGES}
        out.append((name, len(specs), med, "/".join(sorted(picked))))
    return out


def table(out):
    lines = [
        "| data | kernels | dense: build + solve (ms) | on the fly: build + solve (ms) "
        "| calls | `\"auto\"` picks |",
        "|---|---|---|---|---|---|",
    ]
    for name, m, med, picked in out:
        d, f = med["dense"], med["on_the_fly"]
        lines.append(
            f"| {name} | {m} | {d[0] * 1e3:.1f} + {d[1] * 1e3:.1f} | {f[0] * 1e3:.1f} + "
            f"{f[1] * 1e3:.1f} | {d[2]:.0f} / {f[2]:.0f} | {picked.replace('_', ' ')} |"
        )
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(datasets.PAPERS))
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--C", type=float, default=100.0)
    args = ap.parse_args(argv)
    if args.splits < 1 or args.repeats < 1:
        ap.error("--splits and --repeats must be at least 1")
    print(table(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
