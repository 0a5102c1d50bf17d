"""Error of the feature-map approximations against the exact kernels, by n_components.

For each data set and random half split (features standardised with the
training statistics), the kernels are the level-method grid's all-feature
part (Gaussian widths 2^-3..2^6 and polynomial degrees 1..3, unit trace; 13
kernels) or, with ``--grid level``, the whole grid (13 (d + 1) kernels).
Each approximation (Nyström, random Fourier features) at each
``n_components`` is compared with the exact (dense) kernels on:

* ``J(w)`` at fixed weights, the oracle value (SVM dual, C = 100, SMO
  tolerance 1e-6): at uniform weights and at the exact MKL solution ``w*``;
  relative error ``|Jtilde(w) - J(w)| / J(w)``;
* the MKL optimum ``min_w J(w)``: Level to a relative duality gap of 1e-3
  (SMO tolerance 1e-5) on both kernel sets, relative error of the values;
* test accuracy of those two MKL fits, and how often they predict the same
  label on the test set.

Times are ``MKLClassifier.fit`` wall-clock seconds, kernel construction
included, as ratios to the exact (dense) fit of the same split.

    PYTHONPATH=. python benchmarks/bench_feature_maps.py     # sonar, ionosphere, pima; 5 splits
    PYTHONPATH=. python benchmarks/bench_feature_maps.py --datasets sonar --grid level
"""

import argparse
import sys
import time
import warnings

import numpy as np

from mklopt import KernelBank, MKLClassifier, datasets
from mklopt.kernels import grid, nystroem, random_fourier
from mklopt.oracles import SVMDual

C = 100.0


def specs_for(d, which):
    specs = grid(d)
    return list(specs) if which == "level" else [s for s in specs if s.features is None]


def fit(X, y, specs, storage):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MKLClassifier(kernels=specs, method="level", C=C, tol=1e-3, inner_tol=1e-5,
                            storage=storage).fit(X, y)
    return clf, time.perf_counter() - t0


def oracle_values(X, y, specs, storage, weights):
    bank = KernelBank.from_specs(X, specs, storage=storage)
    oracle = SVMDual(bank, y, C=C, tol=1e-6)
    return [oracle(w).value for w in weights], bank


def run(name, seed, specs_kind, components):
    X, y = datasets.load(name)
    Xtr, Xte, ytr, yte = datasets.split(X, y, seed=seed)
    specs = specs_for(X.shape[1], specs_kind)
    m = len(specs)
    exact, t_exact = fit(Xtr, ytr, specs, "dense")
    w_star = np.asarray(exact.weights_, dtype=float)
    weights = [np.full(m, 1.0 / m), w_star]
    J_ref, _ = oracle_values(Xtr, ytr, specs, "dense", weights)
    rows = [dict(data=name, n=Xtr.shape[0], m=m, seed=seed, method="exact", nc=0,
                 R=Xtr.shape[0], J_unif=0.0, J_star=0.0, J_opt=0.0,
                 acc=exact.score(Xte, yte), same=1.0, time=1.0, opt=exact.result_.value)]
    labels = exact.predict(Xte)
    for method, make in (("nystroem", nystroem), ("fourier", random_fourier)):
        for nc in components:
            options = make(nc, random_state=seed)
            J, bank = oracle_values(Xtr, ytr, specs, options, weights)
            approx, t = fit(Xtr, ytr, specs, options)
            rows.append(dict(
                data=name, n=Xtr.shape[0], m=m, seed=seed, method=method, nc=nc,
                R=bank.functions.n_components,
                J_unif=abs(J[0] - J_ref[0]) / J_ref[0],
                J_star=abs(J[1] - J_ref[1]) / J_ref[1],
                J_opt=abs(approx.result_.value - exact.result_.value) / exact.result_.value,
                acc=approx.score(Xte, yte), same=float(np.mean(approx.predict(Xte) == labels)),
                time=t / t_exact, opt=approx.result_.value,
            ))
    return rows


def table(rows):
    out = [
        "| data set | n | m | storage | n_components | columns R | rel. error J(1/m) "
        "| rel. error J(w*) | rel. error min J | accuracy (%) | same label (%) | time vs dense |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = []
    for r in rows:
        k = (r["data"], r["method"], r["nc"])
        if k not in keys:
            keys.append(k)
    for data, method, nc in keys:
        sel = [r for r in rows if (r["data"], r["method"], r["nc"]) == (data, method, nc)]
        first = sel[0]

        def mean(key, sel=sel):
            return float(np.mean([r[key] for r in sel]))

        acc = np.array([r["acc"] for r in sel]) * 100
        label = {"exact": "dense (exact)", "nystroem": "Nyström",
                 "fourier": "random Fourier"}[method]
        if method == "exact":
            err = "—"
            out.append(f"| {data} | {first['n']} | {first['m']} | {label} | — | — | {err} | "
                       f"{err} | {err} | {acc.mean():.1f} ± {acc.std():.1f} | 100 | 1 |")
            continue
        out.append(
            f"| {data} | {first['n']} | {first['m']} | {label} | {nc} | {mean('R'):.0f} | "
            f"{mean('J_unif'):.2e} | {mean('J_star'):.2e} | {mean('J_opt'):.2e} | "
            f"{acc.mean():.1f} ± {acc.std():.1f} | {100 * mean('same'):.1f} | "
            f"{mean('time'):.2f} |"
        )
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["sonar", "ionosphere", "pima"])
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--grid", choices=["all-features", "level"], default="all-features")
    ap.add_argument("--components", nargs="+", type=int, default=[10, 25, 50, 100, 200, 400])
    args = ap.parse_args(argv)
    rows = []
    for name in args.datasets:
        for seed in range(args.splits):
            t0 = time.perf_counter()
            rows.extend(run(name, seed, args.grid, args.components))
            print(f"{name} split {seed} done in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
