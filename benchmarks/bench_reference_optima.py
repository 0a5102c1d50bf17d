"""How accurate are the toy oracles' reference L1 optima (mklopt.testing)?

For drawn toys of both kinds the script reports the certified relative
error bound of ``certified_l1_optimum()`` (J at a point of the simplex minus
a dual value), and, for the smooth toy, how far the conic solve alone
(cvxpy + Clarabel at 1e-9 tolerances, what the reference was before
polishing) lies from the certified value, and the seconds each takes
(medians; wall-clock, noisy on a shared machine).

    python benchmarks/bench_reference_optima.py [--draws 60]
"""

import argparse
import time
import warnings

import numpy as np

from mklopt.testing import PiecewiseLinearOracle, SmoothQuadraticOracle, _cvxpy, _solve_tight


def conic_l1(oracle):
    cp = _cvxpy()
    a = cp.Variable(oracle.n_samples)
    t = cp.Variable()
    cons = [cp.quad_form(a, cp.psd_wrap(Mk)) <= t for Mk in oracle.M]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _solve_tight(cp.Problem(cp.Maximize(oracle.s @ a - t / 2), cons))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=60)
    args = ap.parse_args(argv)
    rows = {"smooth": [], "piecewise": []}
    conic_err, t_cert, t_conic = [], [], []
    for seed in range(args.draws):
        m = 1 + seed % 10
        sq = SmoothQuadraticOracle.random(m, 2 + seed % 6, seed=seed)
        t0 = time.perf_counter()
        value, bound = sq.certified_l1_optimum()
        t_cert.append(time.perf_counter() - t0)
        rows["smooth"].append(bound / abs(value))
        t0 = time.perf_counter()
        conic = conic_l1(sq)
        t_conic.append(time.perf_counter() - t0)
        conic_err.append(abs(conic - value) / abs(value))
        pl = PiecewiseLinearOracle.random(2 + seed % 8, 3 + seed % 9, seed=seed)
        v2, b2 = pl.certified_l1_optimum()
        rows["piecewise"].append(b2 / abs(v2))
    print(f"{args.draws} draws per toy (n_kernels 1-10 smooth, 2-9 piecewise)")
    print("| toy | certified relative bound: median | max |")
    print("|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {np.median(v):.1e} | {np.max(v):.1e} |")
    print(f"conic solve alone vs the certified value (smooth): median {np.median(conic_err):.1e}, "
          f"max {np.max(conic_err):.1e}")
    print(f"seconds per optimum (smooth): certified {np.median(t_cert):.4f}, "
          f"conic {np.median(t_conic):.4f} (medians)")


if __name__ == "__main__":
    main()
