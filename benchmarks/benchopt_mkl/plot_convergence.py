"""Convergence figure and time-to-gap table from a benchopt result file of this benchmark.

Per data set (one row): the certified gap and ``(J(w) - J*) / J*`` (``J*``:
the cvxpy + Clarabel reference) against time, and the gap against oracle
calls. One-shot solvers are single markers, the reference a star with a
dotted line at its time. Prints each solver's time and oracle calls to a
gap of 1e-2 (the level paper's tolerance).

    python benchmarks/benchopt_mkl/plot_convergence.py RESULT.parquet docs/figures/FIG.png
"""

import argparse
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

REFERENCE = "cvxpy-clarabel"
TARGET = 1e-2


def label(solver):
    return solver.replace("mklopt[method=", "").replace("mklpy[algorithm=", "MKLpy ").rstrip("]")


def first_below(run, target=TARGET):
    hit = run[run["objective_rel_gap"] <= target]
    if hit.empty:
        return math.nan, math.nan
    row = hit.iloc[0]
    return row["time"], row["objective_oracle_calls"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", help="a .parquet or .csv written by benchopt run")
    ap.add_argument("figure", help="the PNG to write")
    args = ap.parse_args(argv)
    df = pd.read_parquet(args.result) if args.result.endswith(".parquet") else pd.read_csv(
        args.result)
    sets = list(dict.fromkeys(zip(df["dataset_name"], df["objective_name"])))
    fig, axes = plt.subplots(len(sets), 3, figsize=(16, 4.6 * len(sets)), squeeze=False)
    solvers = list(dict.fromkeys(df["solver_name"]))
    colors = {s: plt.cm.tab20(i % 20) for i, s in enumerate(solvers)}
    print("| data set | solver | time to gap 1e-2 (s) | oracle calls | final gap | J | test acc. |")
    print("|---|---|---|---|---|---|---|")
    for row, (name, objective) in zip(axes, sets):
        d = df[(df["dataset_name"] == name) & (df["objective_name"] == objective)]
        ref = d[d["solver_name"] == REFERENCE]
        j_star = float(ref["objective_reference_value"].iloc[-1]) if len(ref) else math.nan
        for solver, run in d.groupby("solver_name", sort=False):
            run = run[run["idx_rep"] == run["idx_rep"].min()].sort_values("time")
            c, lab = colors[solver], label(solver)
            sub = ((run["objective_value"] - j_star) / abs(j_star)).clip(lower=1e-9)
            gap = run["objective_rel_gap"].clip(lower=1e-9)
            t = run["time"].clip(lower=1e-4)
            if str(run["sampling_strategy"].iloc[0]).lower() == "run_once":
                star = solver == REFERENCE
                kw = dict(marker="*" if star else "s", s=220 if star else 50, color=c, label=lab,
                          zorder=5, edgecolor="k")
                row[0].scatter(t, gap, **kw)
                row[1].scatter(t, sub, **kw)
                if star:
                    for ax in row[:2]:
                        ax.axvline(t.iloc[-1], color=c, ls=":", lw=1)
            else:
                row[0].plot(t, gap, color=c, label=lab, marker=".", ms=3)
                row[1].plot(t, sub, color=c, label=lab, marker=".", ms=3)
                row[2].plot(run["objective_oracle_calls"].clip(lower=1), gap, color=c, label=lab,
                            marker=".", ms=3)
            t1, n1 = first_below(run)
            last = run.iloc[-1]
            print(f"| {name} {objective} | {lab} | {t1:.3g} | {n1:.0f} "
                  f"| {last['objective_rel_gap']:.2e} | {last['objective_value']:.6g} "
                  f"| {last['objective_test_accuracy']:.3f} |")
        title = f"{name}, {objective}".replace("bundled[data=", "").replace(
            ",n_features=None,split=0]", "")
        for ax, (xl, yl) in zip(row, [("time (s)", "certified relative gap"),
                                      ("time (s)", f"(J(w) - J*) / J*,  J* = {j_star:.6g}"),
                                      ("oracle calls (SVM solves)", "certified relative gap")]):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(xl)
            ax.set_ylabel(yl)
            ax.set_title(title, fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
        for ax in (row[0], row[2]):
            ax.axhline(TARGET, color="grey", ls="--", lw=1)
        row[0].legend(fontsize=7, ncol=2)
    fig.suptitle("L1-MKL dual, level paper's grid, C = 100: every solver's certified gap "
                 "(star: exact reference, cvxpy + Clarabel; dashed: gap 1e-2)")
    fig.tight_layout()
    fig.savefig(args.figure, dpi=110)
    print(f"wrote {args.figure}")


if __name__ == "__main__":
    main()
