"""Every method against conic optima: worst relative difference and certified gap, per formulation.

Draws ``--problems`` small problems per loss (seeded NumPy draws: 8-16
points in 2-D, three unit-mean-diagonal kernels, ``C`` log-uniform in
[0.1, 10]) and, for each formulation, runs every configuration of a
registered method that solves it (``tests/_exact_methods.py``) to a
relative duality gap of ``--target`` (inner tolerance 1e-8, budget 3,000
oracle calls). The reference is the primal MKL problem solved by Clarabel
through cvxpy, checked against its conic dual (``tests/_conic_reference.py``).

Per row: the largest ``|value - J*| / |J*|`` over the problems, the largest
certified relative gap the method reported, the largest primal-dual
disagreement of the references, how many runs fell outside their bracket
``lower <= J* <= value <= J* + gap`` (by more than 1e-7 relative), how many
converged, and the median oracle calls. The last rows polish to 1e-6 (Level -> exact active-set step
for the hinge loss, Level alone otherwise).

    python benchmarks/bench_conic_exact.py                      # 10 problems, target 1e-4
    python benchmarks/bench_conic_exact.py --problems 20 --target 1e-6
"""

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' references

from mklopt import solve  # noqa: E402
from mklopt.oracles import CompositeOracle, SVMDual  # noqa: E402
from mklopt.stopping import DualityGap, MaxOracleCalls  # noqa: E402
from tests import _conic_reference as R  # noqa: E402
from tests._exact_methods import configurations  # noqa: E402
from tests.test_conic_exactness import INNER_TOL, make_oracle, polisher  # noqa: E402

FORMULATIONS = [("l1", None), ("lp", 2.0), ("enet", 0.01), ("enet", 0.5), ("enet", 0.99)]


def binary_cases(rng, n_problems):
    for loss in R.LOSSES:
        for _ in range(n_problems):
            n = int(rng.integers(8, 17))
            K, y = R.draw_problem(rng, n, loss)
            C = float(10 ** rng.uniform(-1, 1))
            yield loss, [(K, y)], C, (lambda K=K, y=y, C=C, loss=loss: make_oracle(loss, K, y, C))


def shared_cases(rng, n_problems):
    for _ in range(n_problems):
        n_per = rng.integers(5, 9, size=3)
        lab = np.repeat(np.arange(3), n_per)
        X = np.round(rng.uniform(-3, 3, size=(lab.size, 2)), 3)
        X[:, 0] += 1.5 * (lab == 1)
        X[:, 1] += 1.5 * (lab == 2)
        parts = R.three_class_parts(X, lab)
        C = float(10 ** rng.uniform(-1, 1))

        def make(parts=parts, C=C):
            return CompositeOracle([SVMDual(K, y, C=C, tol=INNER_TOL) for K, y in parts])

        yield "hinge, shared 3-class", parts, C, make


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=10, help="drawn problems per loss")
    ap.add_argument("--target", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = {}

    def record(key, res, ref, acc):
        r = rows.setdefault(key, dict(diff=0.0, gap=0.0, acc=0.0, conv=0, runs=0, out=0,
                                      calls=[]))
        # outside lower <= J* <= value <= J* + gap, beyond the reference's accuracy
        slack = 1e-7 * max(1.0, abs(ref))
        r["out"] += bool(res.lower > ref + slack or res.value < ref - slack
                         or res.value - ref > res.gap + slack)
        r["diff"] = max(r["diff"], abs(res.value - ref) / max(abs(ref), 1e-300))
        r["gap"] = max(r["gap"], res.rel_gap)
        r["acc"] = max(r["acc"], acc)
        r["conv"] += bool(res.converged)
        r["runs"] += 1
        r["calls"].append(res.n_oracle_calls)

    cases = list(binary_cases(rng, args.problems)) + list(shared_cases(rng, args.problems))
    for loss, parts, C, make in cases:
        has_problem = loss == "hinge"
        for form in FORMULATIONS:
            ref, acc = R.reference(parts, C, loss.split(",")[0], form)
            for label, factory in configurations(form, has_problem):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = solve(make(), factory(),
                                stop=DualityGap(args.target) | MaxOracleCalls(3000))
                record((loss, form, label), res, ref, acc)
            if form == ("l1", None):
                res = solve(make(), polisher(has_problem),
                            stop=DualityGap(1e-6) | MaxOracleCalls(3000))
                name = "polish 1e-6: " + ("level -> active_set" if has_problem else "level")
                record((loss, form, name), res, ref, acc)

    print(f"{args.problems} drawn problems per loss, target {args.target:g}, seed {args.seed}\n")
    print("| loss | formulation | method | max rel. diff to J* | max certified rel. gap "
          "| reference primal-dual | outside bracket | converged | median calls |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (loss, form, label), r in rows.items():
        kind, arg = form
        fname = "L1" if kind == "l1" else (
            f"Lp p={arg:g}" if kind == "lp" else f"elastic net λ={arg:g}")
        print(f"| {loss} | {fname} | {label} | {r['diff']:.1e} | {r['gap']:.1e} | {r['acc']:.0e} "
              f"| {r['out']} | {r['conv']}/{r['runs']} | {statistics.median(r['calls']):.0f} |")


if __name__ == "__main__":
    main()
