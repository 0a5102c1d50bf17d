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

from ._csvio import CSVError, class_labels, read_csv

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
    binary = datasets.names("binary")  # the bench solves binary SVMs
    for n in names:
        if n not in binary:
            bundled = n in datasets.names()
            what = f"{datasets.info(n).task} data set" if bundled else "unknown data set"
            raise UserError(f"{what} {n!r}; the bench runs the binary sets: {', '.join(binary)}")
    proto = PROTOCOLS[args.protocol]
    methods = args.methods or proto["methods"]
    known = set(B.METHOD_LABELS) | set(proto["methods"])
    bad = [m for m in methods if m not in known]
    if bad:
        raise UserError(
            f"unknown method(s) {', '.join(bad)}; choose from {', '.join(sorted(known))}"
        )
    if args.splits < 1:
        raise UserError("--splits must be at least 1")

    runs, first_histories = [], {}
    total = len(names) * args.splits
    t_start = time.perf_counter()
    done = 0
    for name in names:
        for s in range(args.splits):
            split_runs, hist = B.run_protocol_split(
                name,
                args.seed + s,
                methods,
                protocol=args.protocol,
                C=proto["C"],
                repeats=args.repeats,
                keep_history=(s == 0),
            )
            runs.extend(split_runs)
            if s == 0:
                first_histories[name] = hist
            done += 1
            if not args.quiet:
                line = ", ".join(
                    f"{r.method} {r.seconds:.2f}s/{100 * r.accuracy:.1f}%" for r in split_runs
                )
                print(
                    f"[{done}/{total} {time.perf_counter() - t_start:5.0f}s] {name} split "
                    f"{args.seed + s}: {line}",
                    file=sys.stderr,
                    flush=True,
                )

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
            print(
                f"time saved by {B.METHOD_LABELS[a]} over {B.METHOD_LABELS[b]} (%): {cells}; "
                f"average {avg:.1f}"
            )

    out = args.out
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "runs.json"), "w") as fh:
        json.dump(
            {
                "protocol": args.protocol,
                "runs": [r.as_dict() for r in runs],
                "summary": rows,
                "time_saving": savings,
            },
            fh,
            indent=1,
        )
    B.write_csv(os.path.join(out, "summary.csv"), rows)
    with open(os.path.join(out, "table.md"), "w") as fh:
        fh.write(table + "\n")
    figs = B.draw_figures(first_histories, out, methods)
    print(
        f"wrote {out}/runs.json, summary.csv, table.md"
        + (f" and {len(figs)} figure(s)" if figs else " (install mklopt[plot] for figures)"),
        file=sys.stderr,
    )
    return 0


# ----------------------------------------------------------------------------
# fit / predict
# ----------------------------------------------------------------------------
def _read_csv(path, label=None, need_label=True, features=None):
    """Read a user's CSV file (header row, numeric features, a label column).

    Returns ``(X, y, feature_names)`` as :func:`mklopt._csvio.read_csv`
    does, with ``y`` turned into class labels (integers when every label is
    an integer, else names). Every problem with the file is a
    :class:`UserError`.
    """
    try:
        X, y, names = read_csv(path, label=label, require_label=need_label, features=features)
        if y is not None:
            y = class_labels(y, where=path, label=label)
    except CSVError as exc:
        raise UserError(str(exc)) from None
    return X, y, names


def _fit(args):
    import warnings

    import numpy as np

    from .estimators import MKLClassifier
    from .persist import save_model

    X, y, features = _read_csv(args.data, args.label)
    n_classes = len(np.unique(y))
    if n_classes < 2:
        raise UserError(f"{args.data}: the label column {args.label!r} has only one class")
    if n_classes > max(2, X.shape[0] // 2):
        raise UserError(
            f"{args.data}: the label column {args.label!r} has {n_classes} distinct values "
            f"for {X.shape[0]} rows; is it a class label?"
        )
    if args.method != "lp" and args.p is not None:
        raise UserError("--p is only used with --method lp")
    if args.method != "mirror" and args.groups is not None:
        raise UserError("--groups is only used with --method mirror")
    kernels = "grid" if args.kernels == "grid" else "all_features"
    p = (2.0 if args.p is None else args.p) if args.method == "lp" else None
    clf = MKLClassifier(
        kernels=kernels,
        method=args.method,
        C=args.C,
        standardize=not args.no_standardize,
        tol=args.tol,
        max_iter=args.max_iter,
        p=p,
        groups=args.groups,
        time_limit=args.time_limit,
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            clf.fit(X, y)
        except (ValueError, TypeError, MemoryError) as exc:
            raise UserError(f"cannot fit: {exc}") from None
    seconds = time.perf_counter() - t0
    for w in caught:
        print(f"mklopt fit: warning: {w.message}", file=sys.stderr)
    try:
        save_model(clf, args.model, feature_names=features, label=args.label)
    except OSError as exc:
        raise UserError(f"cannot write the model to {args.model}: {exc.strerror or exc}") from None
    gaps = np.atleast_1d(clf.gap_)
    calls = int(np.sum(clf.n_oracle_calls_))
    pairs = "" if gaps.size == 1 else f" over {gaps.size} one-vs-one pairs"
    print(
        f"fitted {args.method} on {X.shape[0]} rows, {X.shape[1]} features, {n_classes} "
        f"classes in {seconds:.2f} s: {clf.n_kernels_} kernels, {calls} SVM calls{pairs}, "
        f"relative gap {np.max(gaps):.2e}, training accuracy {clf.score(X, y):.4f}; "
        f"model saved to {args.model}"
    )
    return 0


def _predict(args):
    import numpy as np

    from .persist import ModelFormatError, load_model

    try:
        clf, meta = load_model(args.model)
    except ModelFormatError as exc:
        raise UserError(str(exc)) from None
    X, y, _ = _read_csv(
        args.data, meta.get("label"), need_label=False, features=meta.get("feature_names")
    )
    if X.shape[1] != meta["n_features"]:
        raise UserError(
            f"{args.data}: {X.shape[1]} feature columns, the model expects {meta['n_features']}"
        )
    if meta.get("standardize") is not None:
        mean, scale = meta["standardize"]
        X = (X - mean) / scale
    pred = clf.predict(X)
    try:
        out = sys.stdout if args.out in (None, "-") else open(args.out, "w")
    except OSError as exc:
        raise UserError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    try:
        out.write("prediction\n")
        for p in pred.tolist():
            out.write(f"{p}\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if y is not None:
        acc = float(np.mean(np.asarray(pred).astype(str) == np.asarray(y).astype(str)))
        print(f"accuracy on {args.data}: {acc:.4f} ({len(y)} rows)", file=sys.stderr)
    return 0


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (and exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ----------------------------------------------------------------------------
def build_parser():
    ap = _Parser(prog="mklopt", description="Multiple kernel learning certified by duality gaps.")
    sub = ap.add_subparsers(dest="command", metavar="{bench,fit,predict}")
    sub.required = True

    b = sub.add_parser(
        "bench",
        help="run MKL methods on bundled data under a paper's protocol",
        description="Run methods on bundled UCI data under a paper's protocol; "
        "print a table (mean ± std over random half splits) and write CSV, JSON "
        "and PNG figures.",
    )
    b.add_argument(
        "--datasets", nargs="+", metavar="NAME", help="bundled data sets (default: ionosphere)"
    )
    b.add_argument(
        "--methods", nargs="+", metavar="M", help="methods (default: every method of the protocol)"
    )
    b.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default="level2008",
        help="; ".join(f"{k}: {v['help']}" for k, v in PROTOCOLS.items()),
    )
    b.add_argument("--splits", type=int, default=3, help="random half splits (default: 3)")
    b.add_argument("--seed", type=int, default=0, help="seed of the first split (default: 0)")
    b.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="timed repeats per solve; the median is reported (default: 1)",
    )
    b.add_argument("--out", default="bench-out", help="output directory (default: bench-out)")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_bench)

    f = sub.add_parser(
        "fit",
        help="fit an MKL model on a CSV file and save it",
        description="Fit MKLClassifier on DATA.csv (header row, numeric "
        "features, one label column) and save a portable model file.",
    )
    f.add_argument("data", metavar="DATA.csv")
    f.add_argument("--label", default="label", help="label column (default: label)")
    f.add_argument(
        "--method",
        default="level",
        choices=["level", "cutting_plane", "silp", "subgradient", "simplemkl", "mirror", "lp"],
        help="outer method (default: level)",
    )
    f.add_argument(
        "--kernels",
        default="mkboost",
        choices=["grid", "mkboost"],
        help="'grid': the level paper's Gaussian and polynomial kernels on all "
        "features and on each single feature (13 (d + 1) kernels); 'mkboost': "
        "the MKBoost paper's 17 kernels on all features (default: mkboost, as MKLClassifier)",
    )
    f.add_argument(
        "--C",
        type=float,
        default=1.0,
        help="SVM trade-off C on kernels of unit mean diagonal, as in SVC (default: 1)",
    )
    f.add_argument(
        "--p", type=float, default=None, help="norm of Lp-MKL for --method lp, > 1 (default: 2)"
    )
    f.add_argument(
        "--groups",
        choices=["features"],
        default=None,
        help="with --method mirror: one kernel group per feature set (the mixed "
        "l-inf/l1 formulation)",
    )
    f.add_argument("--tol", type=float, default=1e-2, help="relative duality gap (default: 0.01)")
    f.add_argument("--max-iter", type=int, default=500, help="outer iterations (default: 500)")
    f.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop and keep the best point after this many seconds (default: none)",
    )
    f.add_argument(
        "--no-standardize",
        action="store_true",
        help="use the features as they are; by default each feature is centred and "
        "scaled with its training mean and standard deviation (saved in the model "
        "and applied again by predict)",
    )
    f.add_argument("--model", required=True, metavar="MODEL.npz", help="where to save the model")
    f.set_defaults(func=_fit)

    p = sub.add_parser(
        "predict",
        help="predict labels of a CSV file with a saved model",
        description="Predict with a model saved by 'mklopt fit'. The CSV must "
        "have the training features (a label column, if present, is used to "
        "report accuracy).",
    )
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
        # one line, whatever the underlying message looks like
        message = " ".join(str(exc).split())
        print(f"mklopt {args.command}: error: {message}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. an output directory that cannot be created
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        print(f"mklopt {args.command}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"mklopt {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
