"""The ``mklopt`` command line: ``bench``, ``fit`` and ``predict``.

Every failure a user can cause (a bad option, a missing or malformed file, a
corrupt model) is reported as one line on stderr with exit status 2, never
as a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

__all__ = ["main"]


class UserError(Exception):
    """An error caused by the user's input, shown as one line."""


# ----------------------------------------------------------------------------
# bench
# ----------------------------------------------------------------------------
PROTOCOLS = {
    "level2008": dict(
        methods=["sd", "silp", "level", "mirror", "lp4/3", "lp2", "lp4"],
        C=100.0,
        help="Xu et al. 2008: Gaussian widths 2^-3..2^6 and polynomial degrees 1..3 on all "
        "features and on each single feature, unit trace, C = 100, relative gap 0.01",
    ),
    "mkboost2013": dict(
        methods=["level", "mkboost-d1", "mkboost-d2", "mkboost-s1", "mkboost-s2"],
        C=50.0,
        help="Xia & Hoi 2013: 17 kernels (widths 2^-6..2^7, degrees 1..3) on all features, "
        "C = 50, T = 100 rounds, sampling ratio 0.2, decay 2^-5",
    ),
}


def _bench(args):
    from . import _bench as B
    from . import datasets

    names = args.datasets or ["ionosphere"]
    for n in names:
        if n not in datasets.names():
            raise UserError(f"unknown data set {n!r}; choose from {', '.join(datasets.names())}")
    proto = PROTOCOLS[args.protocol]
    methods = args.methods or proto["methods"]
    known = set(B.METHOD_LABELS) | set(proto["methods"])
    bad = [m for m in methods if m not in known]
    if bad:
        raise UserError(f"unknown method(s) {', '.join(bad)}; choose from {', '.join(sorted(known))}")
    if args.splits < 1:
        raise UserError("--splits must be at least 1")

    runs, first_histories = [], {}
    total = len(names) * args.splits
    t_start = time.perf_counter()
    done = 0
    for name in names:
        for s in range(args.splits):
            split_runs, hist = B.run_protocol_split(
                name, args.seed + s, methods, protocol=args.protocol, C=proto["C"],
                repeats=args.repeats, keep_history=(s == 0),
            )
            runs.extend(split_runs)
            if s == 0:
                first_histories[name] = hist
            done += 1
            if not args.quiet:
                line = ", ".join(
                    f"{r.method} {r.seconds:.2f}s/{100 * r.accuracy:.1f}%" for r in split_runs
                )
                print(f"[{done}/{total} {time.perf_counter() - t_start:5.0f}s] {name} split "
                      f"{args.seed + s}: {line}", file=sys.stderr, flush=True)

    rows = B.summarise(runs)
    table = B.markdown_table(rows, methods)
    print(table)
    savings = []
    for a, b in (("level", "silp"), ("level", "sd")):
        ts = B.time_saving(rows, a, b)
        if ts:
            avg = sum(ts.values()) / len(ts)
            savings.append({"method": a, "against": b, "per_dataset": ts, "average": avg})
            cells = ", ".join(f"{k} {v:.1f}" for k, v in ts.items())
            print(f"time saved by {B.METHOD_LABELS[a]} over {B.METHOD_LABELS[b]} (%): {cells}; "
                  f"average {avg:.1f}")

    out = args.out
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "runs.json"), "w") as fh:
        json.dump({"protocol": args.protocol, "runs": [r.as_dict() for r in runs],
                   "summary": rows, "time_saving": savings}, fh, indent=1)
    B.write_csv(os.path.join(out, "summary.csv"), rows)
    with open(os.path.join(out, "table.md"), "w") as fh:
        fh.write(table + "\n")
    figs = B.draw_figures(first_histories, out, methods)
    print(f"wrote {out}/runs.json, summary.csv, table.md" + (f" and {len(figs)} figure(s)" if figs
          else " (install mklopt[plot] for figures)"), file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------
# fit / predict
# ----------------------------------------------------------------------------
def _read_csv(path, label=None, need_label=True):
    import numpy as np

    if not os.path.isfile(path):
        raise UserError(f"no such file: {path}")
    try:
        with open(path, newline="") as fh:
            header = fh.readline().strip().split(",")
        data = np.genfromtxt(path, delimiter=",", skip_header=1, dtype=str, ndmin=2)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"cannot read {path} as CSV: {exc}") from None
    header = [h.strip() for h in header]
    if data.size == 0 or data.shape[1] != len(header):
        raise UserError(f"{path}: expected {len(header)} columns per row as in its header")
    y = None
    if label is not None:
        if label not in header:
            if need_label:
                raise UserError(f"{path}: no column named {label!r} (columns: {', '.join(header)})")
        else:
            j = header.index(label)
            y = data[:, j]
            data = np.delete(data, j, axis=1)
            header = header[:j] + header[j + 1:]
    try:
        X = data.astype(float)
    except ValueError:
        raise UserError(f"{path}: feature columns must be numeric") from None
    if not np.all(np.isfinite(X)):
        raise UserError(f"{path}: feature columns contain missing or infinite values")
    if y is not None:
        try:
            yf = y.astype(float)
            if np.all(yf == np.round(yf)):
                y = yf.astype(int)
        except ValueError:
            pass
    return X, y, header


def _fit(args):
    from .estimators import MKLClassifier
    from .persist import save_model

    X, y, features = _read_csv(args.data, args.label)
    kernels = args.kernels
    if kernels not in ("grid", "mkboost"):
        raise UserError("--kernels must be 'grid' or 'mkboost'")
    clf = MKLClassifier(kernels="grid" if kernels == "grid" else "mkboost", method=args.method,
                        C=args.C, tol=args.tol, max_iter=args.max_iter,
                        p=args.p if args.method == "lp" else None)
    try:
        clf.fit(X, y)
    except (ValueError, TypeError, MemoryError) as exc:
        raise UserError(f"cannot fit: {exc}") from None
    save_model(clf, args.model, feature_names=features, label=args.label)
    r = clf.result_
    print(f"fitted {args.method} on {X.shape[0]} rows, {X.shape[1]} features: "
          f"{clf.n_oracle_calls_} SVM calls, relative gap {r.rel_gap:.2e}, "
          f"training accuracy {clf.score(X, y):.4f}; model saved to {args.model}")
    return 0


def _predict(args):
    import numpy as np

    from .persist import ModelFormatError, load_model

    try:
        clf, meta = load_model(args.model)
    except ModelFormatError as exc:
        raise UserError(str(exc)) from None
    X, y, features = _read_csv(args.data, meta.get("label"), need_label=False)
    if features != meta["feature_names"]:
        raise UserError(f"{args.data}: columns {features} differ from the model's "
                        f"{meta['feature_names']}")
    pred = clf.predict(X)
    out = sys.stdout if args.out in (None, "-") else open(args.out, "w")
    try:
        out.write("prediction\n")
        for p in pred:
            out.write(f"{p}\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if y is not None:
        acc = float(np.mean(np.asarray(pred).astype(str) == np.asarray(y).astype(str)))
        print(f"accuracy on {args.data}: {acc:.4f}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------
def build_parser():
    ap = argparse.ArgumentParser(
        prog="mklopt", description="Multiple kernel learning certified by duality gaps."
    )
    sub = ap.add_subparsers(dest="command", metavar="{bench,fit,predict}")
    sub.required = True

    b = sub.add_parser("bench", help="run MKL methods on bundled data under a paper's protocol",
                       description="Run methods on bundled UCI data under a paper's protocol; "
                       "print a table (mean ± std over random half splits) and write CSV, JSON "
                       "and PNG figures.")
    b.add_argument("--datasets", nargs="+", metavar="NAME",
                   help="bundled data sets (default: ionosphere)")
    b.add_argument("--methods", nargs="+", metavar="M",
                   help="methods (default: every method of the protocol)")
    b.add_argument("--protocol", choices=sorted(PROTOCOLS), default="level2008",
                   help="; ".join(f"{k}: {v['help']}" for k, v in PROTOCOLS.items()))
    b.add_argument("--splits", type=int, default=3, help="random half splits (default: 3)")
    b.add_argument("--seed", type=int, default=0, help="seed of the first split (default: 0)")
    b.add_argument("--repeats", type=int, default=1,
                   help="timed repeats per solve; the median is reported (default: 1)")
    b.add_argument("--out", default="bench-out", help="output directory (default: bench-out)")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_bench)

    f = sub.add_parser("fit", help="fit an MKL model on a CSV file and save it",
                       description="Fit MKLClassifier on DATA.csv (header row, numeric "
                       "features, one label column) and save a portable model file.")
    f.add_argument("data", metavar="DATA.csv")
    f.add_argument("--label", default="label", help="label column (default: label)")
    f.add_argument("--method", default="level",
                   choices=["level", "cutting_plane", "silp", "subgradient", "simplemkl",
                            "mirror", "lp"], help="outer method (default: level)")
    f.add_argument("--kernels", default="grid",
                   help="'grid' (level paper) or 'mkboost' (17 kernels) (default: grid)")
    f.add_argument("--C", type=float, default=100.0, help="SVM trade-off C (default: 100)")
    f.add_argument("--p", type=float, default=2.0, help="norm for --method lp (default: 2)")
    f.add_argument("--tol", type=float, default=1e-2, help="relative duality gap (default: 0.01)")
    f.add_argument("--max-iter", type=int, default=500, help="outer iterations (default: 500)")
    f.add_argument("--model", required=True, metavar="MODEL.npz", help="where to save the model")
    f.set_defaults(func=_fit)

    p = sub.add_parser("predict", help="predict labels of a CSV file with a saved model",
                       description="Predict with a model saved by 'mklopt fit'. The CSV must "
                       "have the training features (a label column, if present, is used to "
                       "report accuracy).")
    p.add_argument("model", metavar="MODEL.npz")
    p.add_argument("data", metavar="DATA.csv")
    p.add_argument("--out", default=None, help="write predictions here (default: stdout)")
    p.set_defaults(func=_predict)
    return ap


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"mklopt {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mklopt {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
