"""Do the stop-flag checks slow the jitted loops? Each loop timed on two trees.

One tree (the mklopt that ``import mklopt`` finds; BASE a worktree of the
commit to compare with)::

    cd BASE && PYTHONPATH=BASE python /path/to/bench_stop_overhead.py --out start.json
    PYTHONPATH=. python benchmarks/bench_stop_overhead.py --out this.json
    python benchmarks/bench_stop_overhead.py --compare start.json this.json

or both at once, alternating fresh processes so that both see the same
machine load (one untimed round per tree first fills its numba cache)::

    PYTHONPATH=. python benchmarks/bench_stop_overhead.py --baseline /work/wt-start --rounds 3

Every jitted loop that takes a stop flag is called directly on fixed random
inputs (the same seed on both trees), with a clear flag where the tree's
function has a ``stop`` argument and without it where it does not (the
start commit): SMO (whole matrix), combine (whole matrix and rows), ``q``
(stored kernels and from features), kernel evaluation (rows, symmetric
combined and single kernels), a boosting round and the logistic solver.
Each is timed ``--repeats`` times after a warm-up call; the median is kept.
The comparison gives, per loop, the median over rounds of each tree's
median and the ratio this tree / baseline (1.00 = no change).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def _takes_stop(fn):
    return "stop" in inspect.signature(getattr(fn, "py_func", fn)).parameters


def _call(fn, *args):
    """``fn(*args)``, with a clear stop flag appended when this tree's ``fn`` takes one."""
    if _takes_stop(fn):
        return fn(*args, np.zeros(1, dtype=np.int64))
    return fn(*args)


def _cases(seed=0):
    from mklopt._jit import boost as jb
    from mklopt._jit import combine as jc
    from mklopt._jit import groups as jg
    from mklopt._jit import smo as js

    try:  # not in every tree
        from mklopt._jit import logistic as jl
    except ImportError:
        jl = None
    from mklopt.kernels import rbf
    from mklopt.kernels.functions import _Plan

    rng = np.random.default_rng(seed)
    cases = {}

    # SMO on a whole matrix (classification, cold start, shrinking).
    n = 2000
    X = rng.standard_normal((n, 5))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    K = np.ascontiguousarray(np.exp(-d2 / 10.0))
    rows = np.arange(n, dtype=np.int64)

    def smo():
        a, g = np.zeros(n), np.full(n, -1.0)
        _call(js.smo_solve, K, rows, y, np.full(n, 10.0), a, g, 1e-6, 10**7, True)

    cases["smo_solve (n=2000)"] = smo

    # Stored kernels: combine, rows, q.
    m, nb = 8, 1500
    F = rng.standard_normal((m, nb, 20))
    B = np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F) / 20.0)
    w = rng.random(m)
    outK = np.empty((nb, nb))
    idx = rng.permutation(nb).astype(np.int64)
    outR = np.empty((nb, nb))
    v = rng.standard_normal(nb)
    S = np.sort(rng.choice(nb, 600, replace=False)).astype(np.int64)
    ks = np.arange(m, dtype=np.int64)
    cases["combine_kernels (8 x 1500^2)"] = lambda: _call(jc.combine_kernels, B, w, outK)
    cases["combine_rows (1500 rows)"] = lambda: _call(jc.combine_rows, B, w, idx, outR)
    cases["quad_forms (|S|=600)"] = lambda: _call(jc.quad_forms, B, v, S, ks, np.empty(m))

    # Kernels from features (on-the-fly storage, dense build).
    specs = [rbf(s) for s in np.logspace(-1, 1, 20)]
    plan = _Plan(specs, 7)
    A = rng.standard_normal((2000, 7))
    AT = np.ascontiguousarray(A.T)
    wk = rng.random(20)
    groups = plan.groups_of(np.arange(20, dtype=np.int64))
    outC = np.empty((2000, 2000))
    codes, tables = np.zeros((0, 1), dtype=np.int64), np.zeros((0, 1, 1))
    A10 = np.ascontiguousarray(A[:1000])
    A10T = np.ascontiguousarray(A10.T)
    slot = np.arange(20, dtype=np.int64)
    outS = np.empty((20, 1000, 1000))
    vS = rng.standard_normal(1500)
    AS = np.ascontiguousarray(A[:1500])
    AST = np.ascontiguousarray(AS.T)
    cases["combined_cross (2000^2, 20 kernels)"] = lambda: _call(
        jg.combined_cross, A, AT, *plan.arrays(), wk, groups, outC)
    cases["combined_sym (2000^2, 20 kernels)"] = lambda: _call(
        jg.combined_sym, A, AT, *plan.arrays(), wk, groups, codes, tables, outC, True)
    cases["kernel_sym (20 x 1000^2)"] = lambda: _call(
        jg.kernel_sym, A10, A10T, *plan.arrays(), np.ones(20), slot, groups, outS)
    cases["quad_forms_by_rows (|S|=1500, 20 kernels)"] = lambda: _call(
        jg.quad_forms_by_rows, AS, AST, vS, *plan.arrays(), np.ones(20), slot, groups, 64,
        np.zeros(20))

    # A boosting round: 8 weak SVMs on 300 distinct points, judged on 1500.
    u, r = 300, 8
    uniq = np.sort(rng.choice(nb, u, replace=False)).astype(np.int64)
    yb = np.where(rng.standard_normal(nb) > 0, 1.0, -1.0)
    Kb = np.ascontiguousarray(np.exp(-np.abs(B) / 4.0))

    def round_():
        out = (np.empty((r, u)), np.empty(r), np.empty((r, nb)), np.empty(r, dtype=np.int64),
               np.empty(r))
        _call(jb.weak_svm_round, Kb, np.arange(r, dtype=np.int64), np.ones(r), uniq, uniq,
              yb[uniq], np.full(u, 1.0), 1e-3, 10**5, *out)

    cases["weak_svm_round (8 SVMs, u=300)"] = round_

    if jl is None:
        return cases
    # The logistic dual solver (no offset).
    nl = 800
    Kl = np.ascontiguousarray(K[:nl, :nl])
    yl = y[:nl]

    def logistic():
        a = np.full(nl, 1e-3)
        f = jl.logistic_init_f(Kl, yl, a, np.empty(nl))
        _call(jl.logistic_solve, Kl, yl, 1.0, a, f, False, 1e-8, 10**6, nl)

    cases["logistic_solve (n=800)"] = logistic
    return cases


def measure(repeats):
    out = {}
    for name, fn in _cases().items():
        fn()  # compile (or load from the cache) and warm
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    return out


def _table(base, this, label="baseline"):
    print(f"{'loop':44s} {label:>10s} {'this tree':>10s} {'ratio':>7s}")
    for k in [k for k in base if k in this]:  # loops missing from a tree are left out
        b = statistics.median(base[k]) if isinstance(base[k], list) else base[k]
        t = statistics.median(this[k]) if isinstance(this[k], list) else this[k]
        print(f"{k:44s} {b * 1e3:8.1f}ms {t * 1e3:8.1f}ms {t / b:7.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None, help="write this tree's medians as JSON")
    ap.add_argument("--compare", nargs=2, metavar=("BASE", "THIS"))
    ap.add_argument("--baseline", default=None, help="source tree to alternate with")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.compare:
        with open(args.compare[0]) as fa, open(args.compare[1]) as fb:
            _table(json.load(fa), json.load(fb))
        return
    if args.baseline is None:
        res = measure(args.repeats)
        for k, v in res.items():
            print(f"{k:44s} {v * 1e3:8.1f} ms", flush=True)
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(res, fh, indent=1)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"baseline": os.path.abspath(args.baseline), "this": here}
    script = os.path.abspath(__file__)
    got = {"baseline": {}, "this": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(-1, args.rounds):  # round -1: untimed, fills the numba caches
            for name, tree in trees.items():
                path = os.path.join(tmp, f"{name}-{r}.json")
                env = dict(os.environ, PYTHONPATH=tree)
                subprocess.run([sys.executable, script, "--repeats",
                                str(1 if r < 0 else args.repeats), "--out", path],
                               cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
                if r >= 0:
                    with open(path) as fh:
                        for k, v in json.load(fh).items():
                            got[name].setdefault(k, []).append(v)
    print(f"{args.rounds} rounds, medians of {args.repeats} repeats each; "
          f"baseline {trees['baseline']}")
    _table(got["baseline"], got["this"])


if __name__ == "__main__":
    main()
