"""Wall time from ``fit`` to return under ``time_limit``, on a problem far too large for it.

    python benchmarks/bench_time_limit.py                        # n = 200,000, 100 kernels
    python benchmarks/bench_time_limit.py --n 50000 --limit 5    # smaller

Random data (``n`` points, ``d`` standard normal features, labels from a
noisy linear rule) and ``m`` Gaussian kernels with widths log-spaced over
[0.1, 10] on all features; ``MKLClassifier(kernels=..., time_limit=limit)``
with its defaults otherwise (``storage="auto"``, which picks the storage
under the memory limit). Each repeat is a fresh estimator; the table gives
every repeat's seconds from ``fit`` to its return (a model, or the error
saying that no oracle call finished), the median, and how it ended.

The reference, measured in the same run, is the speed of the chosen
storage: seconds for ``--ref-rows`` rows of the combined kernel at uniform
weights (what the first oracle call spends most of its time on), from
which the seconds of one pass over all ``n`` rows follow.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=7)
    ap.add_argument("--m", type=int, default=100)
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-rows", type=int, default=32)
    args = ap.parse_args(argv)

    from mklopt import MKLClassifier
    from mklopt._memory import fmt_bytes, memory_limit
    from mklopt.kernels import KernelBank, rbf
    from mklopt.stopping import NoPointError

    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, args.d))
    y = np.where(X @ rng.standard_normal(args.d) + 0.5 * rng.standard_normal(args.n) > 0, 1, -1)
    kernels = [rbf(s) for s in np.logspace(-1, 1, args.m)]

    # Warm numba's cache on a small problem (a compile is not what is timed).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        MKLClassifier(kernels=kernels[:3], max_iter=2).fit(X[:200], y[:200])

    # The reference: the storage the estimator picks, and its row speed.
    bank = KernelBank.from_specs(X, kernels)
    storage = bank.storage.name
    w = np.full(args.m, 1.0 / args.m)
    idx = np.arange(args.ref_rows, dtype=np.int64)
    out = np.empty((args.ref_rows, args.n))
    bank.storage.rows(w, idx, out)
    t0 = time.perf_counter()
    bank.storage.rows(w, idx, out)
    ref = time.perf_counter() - t0
    del bank, out

    limit, source = memory_limit(None)
    print(f"n={args.n:,} d={args.d} m={args.m} time_limit={args.limit:g} s; "
          f"storage={storage!r} (memory limit {fmt_bytes(limit or 0)}, {source})")
    print(f"reference: {args.ref_rows} combined rows in {ref:.3f} s "
          f"({args.ref_rows / ref:,.0f} rows/s; all {args.n:,} rows once: "
          f"{ref * args.n / args.ref_rows:,.0f} s)")
    seconds, ends = [], []
    for r in range(args.repeats):
        clf = MKLClassifier(kernels=kernels, time_limit=args.limit)
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf.fit(X, y)
            end = f"fitted ({clf.result_.reason}, {clf.n_oracle_calls_} oracle calls)"
        except NoPointError as exc:
            end = f"NoPointError: {str(exc)[:70]}..."
        dt = time.perf_counter() - t0
        seconds.append(dt)
        ends.append(end)
        print(f"repeat {r + 1}: {dt:.2f} s  {end}", flush=True)
    med = statistics.median(seconds)
    bound = args.limit + max(2.0, 0.1 * args.limit)
    print(f"median {med:.2f} s (limit {args.limit:g} s, promised bound {bound:g} s); "
          f"overshoot {med - args.limit:+.2f} s")


if __name__ == "__main__":
    main()
