"""MKL methods under the level-method paper's protocol on the bundled data sets.

Reproduces the layout of Xu et al. (2008), Tables 1 and 2: seconds, SVM
calls, iterations, test accuracy and selected kernels (mean ± std over random
half splits), plus the time-saving ratios of Level over SILP and SD. Kernel
construction is excluded from the times; each solve is timed as the median
of ``--repeats`` runs.

    python benchmarks/bench_mkl.py                          # all data sets, 5 splits
    python benchmarks/bench_mkl.py --datasets ionosphere --splits 20 --methods sd silp level
"""

import argparse
import json
import os
import sys

from mklopt import datasets
from mklopt.bench import runs as _bench


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the papers' six sets (datasets.names() also lists larger and non-binary ones)
    ap.add_argument("--datasets", nargs="+", default=list(datasets.PAPERS))
    ap.add_argument("--methods", nargs="+", default=["sd", "silp", "level"])
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inner-tol", type=float, default=1e-4,
                    help="SMO KKT tolerance (default 1e-4: 1%% of the outer gap tolerance)")
    ap.add_argument("--out", default=None, help="directory for runs.json and table.md")
    args = ap.parse_args(argv)

    runs = []
    for name in args.datasets:
        for s in range(args.splits):
            r, _ = _bench.run_split(name, args.seed + s, args.methods, repeats=args.repeats,
                                    inner_tol=args.inner_tol)
            runs.extend(r)
            for x in r:
                print(f"{name:>10} split {s:2d} {x.method:>6}: {x.seconds:7.3f}s "
                      f"{x.n_svm_calls:5d} calls {x.n_iter:4d} it acc {x.accuracy:.3f} "
                      f"gap {x.rel_gap:.4f} {x.reason}", file=sys.stderr, flush=True)
    rows = _bench.summarise(runs)
    table = _bench.markdown_table(rows, args.methods)
    print(table)
    for a, b in [("level", "silp"), ("level", "sd")]:
        if a in args.methods and b in args.methods:
            ts = _bench.time_saving(rows, a, b)
            if ts:
                avg = sum(ts.values()) / len(ts)
                cells = ", ".join(f"{k} {v:.1f}" for k, v in ts.items())
                print(f"\ntime saved by {a} over {b} (%): {cells}; average {avg:.1f}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "runs.json"), "w") as fh:
            json.dump([r.as_dict() for r in runs], fh, indent=1)
        with open(os.path.join(args.out, "table.md"), "w") as fh:
            fh.write(table + "\n")


if __name__ == "__main__":
    main()
