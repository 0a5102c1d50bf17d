"""The ``mklopt`` command line: ``bench``, ``fit``, ``predict`` and ``compile``.

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
import warnings

import numpy as np

from . import datasets
from ._csvio import CSVError, class_labels, read_csv
from ._optional import optional
from ._parallel import check_n_jobs, parallel_map
from .bench import PROTOCOLS  # the settings only: the runners load when bench runs
from .estimators import MKLClassifier, MKLOneClass, MKLRegressor
from .estimators._names import estimator_kernel_names
from .kernels import grid, parse_kernel
from .methods import PRESETS, estimator_params_of, get_method, method_names
from .persist import ModelFormatError, load_model, save_model
from .plugins import PluginError
from .tasks import estimator_entry, oracle_names

__all__ = ["main"]


class UserError(Exception):
    """An error caused by the user's input, shown as one line."""


# ----------------------------------------------------------------------------
# bench (the protocols are mklopt.bench.PROTOCOLS; the runners load here)
# ----------------------------------------------------------------------------
def _bench_kloft(args):
    """``--protocol kloft2010``: the poster's two experiments (see mklopt.bench.kloft)."""
    from .bench import kloft as _bench_kloft  # imported only here: it needs scikit-learn

    cases = args.cases or ["toy", "times"]
    bad = [c for c in cases if c not in ("toy", "times")]
    if bad:
        raise UserError(f"unknown case(s) {', '.join(bad)}; --protocol kloft2010 runs toy, times")
    repeats = 5 if args.repeats is None else args.repeats
    if repeats < 1:
        raise UserError("--repeats must be at least 1")
    sizes = tuple(args.sizes) if args.sizes else _bench_kloft.TIME_SIZES
    if min(sizes) < 10:
        raise UserError("--sizes must be at least 10 points each")
    _bench_kloft.main(out=os.path.join(args.out, "kloft2010"), repeats=repeats, sizes=sizes,
                      experiments=cases, quiet=args.quiet)
    print(f"wrote {args.out}/kloft2010", file=sys.stderr)
    return 0


def _bench_compare(args):
    """``--protocol compare``: mklopt against SVC, its grid search and MKLpy (bench.compare)."""
    from .bench import compare

    if args.cases or args.sizes:
        raise UserError("--cases and --sizes do not belong to --protocol compare")
    if optional("sklearn") is None:
        raise UserError(compare.SKLEARN_MISSING)
    names = args.datasets or list(compare.DATASETS)
    bad = [n for n in names if n not in compare.DATASETS]
    if bad:
        raise UserError(f"unknown data set(s) {', '.join(bad)} for --protocol compare; choose "
                        f"from {', '.join(compare.DATASETS)}")
    estimators = args.methods or list(compare.ESTIMATORS)
    bad = [e for e in estimators if e not in compare.ESTIMATORS]
    if bad:
        raise UserError(f"unknown estimator(s) {', '.join(bad)} for --protocol compare; choose "
                        f"from {', '.join(compare.ESTIMATORS)}")
    splits = 1 if args.splits is None else args.splits
    repeats = 3 if args.repeats is None else args.repeats
    if splits < 1 or repeats < 1:
        raise UserError("--splits and --repeats must be at least 1")
    command = "mklopt bench --protocol compare" + (
        f" --datasets {' '.join(names)}" if args.datasets else "") + (
        f" --methods {' '.join(estimators)}" if args.methods else "") + (
        f" --splits {splits}" if args.splits is not None else "") + (
        f" --repeats {repeats}" if args.repeats is not None else "")
    return compare.main(names, out=os.path.join(args.out, "compare.json"), splits=splits,
                        seed=args.seed, repeats=repeats, estimators=estimators,
                        quiet=args.quiet, command=command)


def _bench(args):
    from . import _compile
    from .bench import runs as B
    from .bench import scale as _bench_scale

    # A first run after install compiles for a while before its first line: say so.
    _compile.watch()
    with _compile.echo(not args.quiet):
        return _bench_run(args, B, _bench_scale)


def _bench_run(args, B, _bench_scale):
    if args.sizes and args.protocol != "kloft2010":
        raise UserError("--sizes belongs to --protocol kloft2010")
    if args.protocol == "kloft2010":
        return _bench_kloft(args)
    if args.protocol == "compare":
        return _bench_compare(args)
    if args.repeats is None:
        args.repeats = 1
    if args.protocol == "scale":
        bad = _bench_scale.unknown_cases(args.cases or [])
        if bad:
            raise UserError(f"unknown case(s) {', '.join(bad)}; choose from "
                            f"{', '.join(_bench_scale.CASES)} (or sonar-<number of kernels>)")
        argv = ["--out", os.path.join(args.out, "scale")]
        argv += ["--cases", *args.cases] if args.cases else []
        argv += ["--quiet"] if args.quiet else []
        return _bench_scale.main(argv)
    if args.cases:
        raise UserError("--cases belongs to --protocol scale")

    names = args.datasets or ["ionosphere"]
    binary = datasets.names("binary")  # the bench solves binary SVMs
    for n in names:
        if n not in binary:
            bundled = n in datasets.names()
            what = f"{datasets.info(n).task} data set" if bundled else "unknown data set"
            raise UserError(f"{what} {n!r}; the bench runs the binary sets: {', '.join(binary)}")
    proto = PROTOCOLS[args.protocol]
    methods = args.methods or list(proto.methods)
    # presets, and any registered method (entry points included) at its defaults
    known = [*PRESETS, *(n for n in method_names() if n not in PRESETS)]
    bad = [m for m in methods if m not in known]
    if bad:
        raise UserError(
            f"unknown method(s) {', '.join(bad)}; choose from {', '.join(sorted(known))}"
        )
    if args.splits is None:
        args.splits = 3
    if args.splits < 1:
        raise UserError("--splits must be at least 1")

    jobs = [(name, s) for name in names for s in range(args.splits)]
    tasks = [
        (name, args.seed + s, methods, args.protocol, proto.C, args.repeats, s == 0)
        for name, s in jobs
    ]
    t_start = time.perf_counter()
    if args.n_jobs in (None, 1) and args.scheduler is None:
        results = []
        for k, task in enumerate(tasks):
            # the first split also says each method as it ends: after
            # install, its methods compile one after the other
            first = k == 0 and not args.quiet and len(task[2]) > 1
            on_run = (lambda run, _t=task: _bench_method(run, _t, t_start)) if first else None
            # the first split runs the default fit's method first: its kernels
            # are the ones a first run compiles anyway, so a line comes out in
            # seconds (the others compile one after the other behind it)
            order = sorted(methods, key=lambda m: m != _FIRST_METHOD) if first else methods
            split_runs, hist = B.run_split_task(task[0], task[1], order, *task[3:],
                                                on_run=on_run)
            split_runs.sort(key=lambda r: methods.index(r.method))  # the order asked
            results.append((split_runs, hist))
            if not args.quiet:
                _bench_progress(results[-1][0], task, k + 1, len(tasks), t_start)
    else:
        # The splits are independent: run them as joblib jobs, or as tasks
        # on a Dask cluster; each split's solves are timed where they run.
        results = _bench_parallel(B, tasks, args)
        if not args.quiet:
            for k, (task, (split_runs, _)) in enumerate(zip(tasks, results)):
                _bench_progress(split_runs, task, k + 1, len(tasks), t_start)
    runs, first_histories = [], {}
    for (name, s), (split_runs, hist) in zip(jobs, results):
        runs.extend(split_runs)
        if s == 0:
            first_histories[name] = hist

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
                f"time saved by {B.label(a)} over {B.label(b)} (%): {cells}; "
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
    from .bench import results as _results

    _results.write(os.path.join(out, "results.json"), args.protocol,
                   "mklopt bench " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["bench"]
                   else f"mklopt bench --protocol {args.protocol}",
                   B.result_tables(rows, methods, savings), [r.as_dict() for r in runs])
    B.write_csv(os.path.join(out, "summary.csv"), rows)
    with open(os.path.join(out, "table.md"), "w") as fh:
        fh.write(table + "\n")
    figs = B.draw_figures(first_histories, out, methods)
    print(
        f"wrote {out}/runs.json, results.json, summary.csv, table.md"
        + (f" and {len(figs)} figure(s)" if figs else " (install mklopt[plot] for figures)"),
        file=sys.stderr,
    )
    return 0


#: The method of the default fit below 2,000 kernels (``method="auto"``).
_FIRST_METHOD = "level"


def _bench_method(run, task, t_start):
    print(f"[{time.perf_counter() - t_start:5.0f}s] {task[0]} split {task[1]}: {run.method} "
          f"{run.seconds:.2f}s/{100 * run.accuracy:.1f}%", file=sys.stderr, flush=True)


def _bench_progress(split_runs, task, done, total, t_start):
    line = ", ".join(f"{r.method} {r.seconds:.2f}s/{100 * r.accuracy:.1f}%" for r in split_runs)
    print(
        f"[{done}/{total} {time.perf_counter() - t_start:5.0f}s] {task[0]} split {task[1]}: "
        f"{line}",
        file=sys.stderr,
        flush=True,
    )


def _bench_parallel(B, tasks, args):
    """Run the bench's splits with ``--n-jobs`` jobs, or on the Dask scheduler ``--scheduler``."""
    try:
        n_jobs = check_n_jobs(args.n_jobs, "--n-jobs")
    except (TypeError, ValueError) as exc:
        raise UserError(str(exc)) from None
    try:
        if args.scheduler is None:
            return parallel_map(B.run_split_task, tasks, n_jobs, name="--n-jobs")
        joblib, distributed = optional("joblib"), optional("distributed")
        if joblib is None or distributed is None:
            raise UserError(
                '--scheduler needs dask.distributed and joblib; install them with pip install '
                '"mklopt[dask]"'
            )
        try:
            client = distributed.Client(args.scheduler, timeout=10)
        except (OSError, ValueError) as exc:
            raise UserError(
                f"cannot connect to the Dask scheduler {args.scheduler}: {exc}"
            ) from None
        try:
            with joblib.parallel_backend("dask"):
                return parallel_map(B.run_split_task, tasks, n_jobs, name="--n-jobs")
        finally:
            client.close()
    except ImportError as exc:
        raise UserError(str(exc)) from None


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


def _targets(labels, path, label):
    """The label column as real, finite regression targets."""
    try:
        t = np.asarray(labels, dtype=np.float64)
    except ValueError:
        raise UserError(
            f"{path}: the target column {label!r} must hold numbers for --task regression"
        ) from None
    if not np.all(np.isfinite(t)):
        raise UserError(f"{path}: the target column {label!r} holds NaN or infinity")
    return t


def _task_options(args):
    """Refuse options that belong to another task."""
    if args.loss is not None:
        names = oracle_names(args.task)
        if args.loss not in names:
            raise UserError(f"--loss {args.loss!r} is not an oracle of the {args.task} task; "
                            f"choose from {', '.join(names)}")
    if args.task != "regression" and args.epsilon is not None:
        raise UserError("--epsilon is only used with --task regression")
    if args.task != "one-class" and args.nu is not None:
        raise UserError("--nu is only used with --task one-class")
    _check_formulation(args)
    _check_elastic_net(args)


def _takes(method, param):
    """Whether registered ``method`` declares it takes the estimators' ``param``."""
    if method == "auto":
        return False
    return param in estimator_params_of(get_method(method))


def _takers(param):
    return ", ".join(n for n in method_names(oracle_kind="dual") if _takes(n, param))


def _check_formulation(args):
    """``--p`` and ``--groups`` only with a method that declares it takes them."""
    if args.p is not None and not _takes(args.method, "p"):
        raise UserError(f"--p is only used with --method {_takers('p')}")
    if args.groups is not None and not _takes(args.method, "groups"):
        raise UserError(f"--groups is only used with --method {_takers('groups')}")


def _p(args):
    """The Lp norm to pass: --p, or 2 for a method that needs one."""
    if not _takes(args.method, "p"):
        return None
    return 2.0 if args.p is None else args.p


def _check_elastic_net(args):
    """``--method elastic_net`` has no default mixing parameter: ask for it by its flag."""
    if args.method == "elastic_net" and args.elastic_net is None:
        raise UserError("--method elastic_net needs --elastic-net LAM (a number in [0, 1])")


def _kernels(args, mkboost):
    """``--kernels``: ``"grid"``, the mkboost default (``mkboost()``), or parsed specs."""
    if args.kernels == "grid":
        return "grid"
    if args.kernels == "mkboost":
        return mkboost()
    parts = [t for t in args.kernels.split(";") if t.strip()]
    if not parts:
        raise UserError("--kernels is empty; give grid, mkboost or kernel specs such as "
                        "'rbf(1.0); poly(2)'")
    try:
        return [parse_kernel(t) for t in parts]
    except ValueError as exc:
        raise UserError(f"--kernels: {exc}") from None


def _common_options(args, kernels, standardize):
    """The estimator parameters every fit command takes from the same options."""
    return dict(
        kernels=kernels,
        method=args.method,
        tol=args.tol,
        max_iter=args.max_iter,
        p=_p(args),
        groups=args.groups,
        elastic_net=args.elastic_net,
        time_limit=args.time_limit,
        standardize=standardize,
        verbose=args.verbose,
    )


def _classifier(args, kernels, standardize):
    """The :class:`MKLClassifier` that ``mklopt fit`` runs, from the command's options.

    (``_task_options`` has checked the formulation options against the method.)
    """
    return MKLClassifier(
        **({} if args.loss is None else {"loss": args.loss}),
        C=1.0 if args.C is None else args.C,
        **_common_options(args, kernels, standardize),
    )


def _top_kernels(est, feature_names=None, top=5):
    """The line of ``mklopt fit``'s output naming the kernels with the largest weights.

    Kernels are named as in ``kernel_names_``, their columns by the CSV
    file's header (``feature_names``); weights are averaged over the
    one-vs-one pairs.
    """
    names = estimator_kernel_names(est, feature_names)
    w = np.atleast_2d(np.asarray(est.weights_, dtype=np.float64)).mean(axis=0)
    order = [k for k in np.argsort(-w, kind="stable")[:top] if w[k] > 0.0]
    return "largest kernel weights: " + ", ".join(f"{names[k]} {w[k]:.3f}" for k in order)


def _fit_and_save(est, X, y, args, rename=None, **save_kw):
    """Fit ``est`` on ``(X, y)``, print its warnings, save it to ``args.model``; the seconds.

    The estimator's own errors become a :class:`UserError` ("cannot fit: ...");
    ``rename`` may reword them first (e.g. name the data file instead of ``X``).
    """
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(X, y)
        except (ValueError, TypeError, MemoryError) as exc:
            message = str(exc) if rename is None else rename(str(exc))
            raise UserError(f"cannot fit: {message}") from None
    seconds = time.perf_counter() - t0
    for w in caught:
        print(f"mklopt fit: warning: {w.message}", file=sys.stderr)
    try:
        save_model(est, args.model, **save_kw)
    except OSError as exc:
        raise UserError(f"cannot write the model to {args.model}: {exc.strerror or exc}") from None
    return seconds


def _fit_task(args):
    """``fit --task regression|one-class``: the estimators standardise inside."""
    if args.task == "regression":
        X, labels, features = _read_csv_raw(args.data, args.label, need_label=True)
        y = _targets(labels, args.data, args.label)
        label = args.label
    else:
        X, labels, features = _read_csv_raw(args.data, args.label, need_label=False)
        if labels is not None:
            raise UserError(
                f"{args.data}: --task one-class learns from the features alone, but the file "
                f"has the column {args.label!r} given by --label; drop that column, or name "
                "another --label if it is a feature"
            )
        y, label = None, None
    kernels = _kernels(args, lambda: list(grid(X.shape[1], "mkboost2013")))
    common = _common_options(args, kernels, not args.no_standardize)
    if args.task == "regression":
        eps = 0.1 if args.epsilon is None else args.epsilon
        C = {} if args.C is None else {"C": args.C}
        loss = {} if args.loss is None else {"loss": args.loss}
        est = MKLRegressor(epsilon=eps, **C, **loss, **common)
    else:
        loss = {} if args.loss is None else {"loss": args.loss}
        est = MKLOneClass(nu=0.5 if args.nu is None else args.nu, **loss, **common)
    seconds = _fit_and_save(est, X, y, args, feature_names=features, label=label)
    if args.task == "regression":
        quality = f"training R2 {est.score(X, y):.4f}"
    else:
        quality = f"training outlier fraction {float(np.mean(est.predict(X) == -1)):.4f}"
    print(
        f"fitted {args.task} {args.method} on {X.shape[0]} rows, {X.shape[1]} features in "
        f"{seconds:.2f} s: {est.n_kernels_} kernels, {est.n_oracle_calls_} dual solves, "
        f"relative gap {est.gap_:.2e}, {quality}; model saved to {args.model}"
    )
    print(_top_kernels(est, features))
    return 0


# ----------------------------------------------------------------------------
# kernel stacks (.npy / .npz) for kernels="precomputed"
# ----------------------------------------------------------------------------
_STACK_SUFFIXES = (".npy", ".npz")
#: How the estimator names its training kernels in its errors.
_FIT_ARG = "X (precomputed kernels)"


def _is_stack_file(path):
    return os.fspath(path).lower().endswith(_STACK_SUFFIXES)


def _numeric(arr, where):
    if arr.dtype.kind not in "fiu":
        raise UserError(f"{where} holds {arr.dtype} values; kernel matrices must be numbers")
    return arr


def _read_stack(path, label):
    """The kernel matrices of a ``.npy``/``.npz`` file, and the labels an ``.npz`` holds.

    A ``.npy`` file is one array of shape (n_kernels, n_rows, n_cols),
    memory-mapped. An ``.npz`` archive holds either one such 3-D array or
    several 2-D arrays, one kernel each in the archive's order, plus
    optionally a 1-D array named ``label`` (the labels). Returns
    ``(kernels, labels or None)``: an array or a list of 2-D arrays.
    """
    try:
        if path.lower().endswith(".npy"):
            K = np.load(path, mmap_mode="r", allow_pickle=False)
            if K.ndim != 3:
                raise UserError(
                    f"{path} holds an array of shape {K.shape}; a kernel stack has shape "
                    "(n_kernels, n_samples, n_samples)"
                    + (" (one kernel K is saved as K[None])" if K.ndim == 2 else "")
                )
            return _numeric(K, path), None
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
    except UserError:
        raise
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except (ValueError, OSError, EOFError) as exc:
        raise UserError(f"{path} is not a readable NumPy file ({exc})") from None
    labels = arrays.pop(label, None)
    if labels is not None and labels.ndim != 1:
        raise UserError(f"{path}: the labels {label!r} must be a 1-D array, got shape "
                        f"{labels.shape}")
    stacks = {k: v for k, v in arrays.items() if v.ndim == 3}
    mats = {k: v for k, v in arrays.items() if v.ndim == 2}
    other = sorted(set(arrays) - set(stacks) - set(mats))
    if other or (stacks and mats) or len(stacks) > 1 or not (stacks or mats):
        raise UserError(
            f"{path} must hold one array of shape (n_kernels, n_samples, n_samples) or one 2-D "
            f"kernel matrix per array (and optionally the 1-D labels {label!r}); it holds "
            + ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        )
    if stacks:
        return _numeric(next(iter(stacks.values())), path), labels
    shapes = {v.shape for v in mats.values()}
    if len(shapes) != 1:
        raise UserError(f"{path}: the kernel matrices have different shapes: "
                        + ", ".join(f"{k} {v.shape}" for k, v in mats.items()))
    return [_numeric(v, f"{path}[{k!r}]") for k, v in mats.items()], labels


def _read_labels(path, label):
    """Labels from ``--labels``: a 1-D ``.npy`` array, or a CSV column (header row)."""
    if path.lower().endswith(".npy"):
        try:
            y = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise UserError(f"{path} does not exist") from None
        except (ValueError, OSError, EOFError) as exc:
            raise UserError(f"{path} is not a readable NumPy file ({exc})") from None
        if y.ndim != 1:
            raise UserError(f"{path}: labels must be a 1-D array, got shape {y.shape}")
        return y
    try:
        X, y, _ = read_csv(path, label=label, require_label=True)
    except CSVError as exc:
        raise UserError(str(exc)) from None
    if X.shape[1]:
        raise UserError(f"{path}: --labels must be a CSV file of the label column {label!r} "
                        f"alone; it has {X.shape[1]} other column(s)")
    return y


def _stack_labels(args, labels, need):
    """The labels of a stack: from the ``.npz`` or ``--labels`` (not both)."""
    if args.labels is not None:
        if labels is not None:
            raise UserError(f"{args.data} holds labels {args.label!r} and --labels gives more; "
                            "give one of them")
        labels = _read_labels(args.labels, args.label)
    if labels is None and need:
        raise UserError(
            f"{args.data} holds kernels but no labels; give --labels FILE (.npy or a CSV "
            f"column {args.label!r}) or save them in the .npz as {args.label!r}"
        )
    if labels is None:
        return None
    try:
        return class_labels(labels, where=args.labels or args.data, label=args.label)
    except CSVError as exc:
        raise UserError(str(exc)) from None


def _fit_stack(args):
    """``fit KERNELS.npy|.npz``: MKLClassifier(kernels="precomputed")."""
    if args.task != "classification":
        raise UserError("a kernel stack (.npy/.npz) is fitted as a classifier; --task "
                        f"{args.task} needs a CSV file of features")
    if args.kernels != "mkboost":
        raise UserError("--kernels does not apply to a kernel stack: its kernels are given")
    K, labels = _read_stack(args.data, args.label)
    y = _stack_labels(args, labels, need=True)
    n = len(K[0])
    if K[0].shape != (n, n):
        raise UserError(f"{args.data} holds kernels of shape {(len(K), *K[0].shape)}; training "
                        "kernels are square, (n_kernels, n_samples, n_samples)")
    if len(y) != n:
        raise UserError(f"{args.data} holds kernels between {n} samples but there are "
                        f"{len(y)} labels")
    n_classes = len(np.unique(y))
    if n_classes < 2:
        raise UserError(f"the labels {args.label!r} have only one class")
    clf = _classifier(args, "precomputed", standardize=False)
    # The estimator's checks (finite, symmetric, PSD) name its argument X.
    seconds = _fit_and_save(
        clf, K, y, args, label=args.label,
        rename=lambda message: message.replace(_FIT_ARG, f"{args.data} (precomputed kernels)"))
    gaps = np.atleast_1d(clf.gap_)
    calls = int(np.sum(clf.n_oracle_calls_))
    pairs = "" if gaps.size == 1 else f" over {gaps.size} one-vs-one pairs"
    print(
        f"fitted {args.method} on {clf.n_kernels_} precomputed kernels of {n} samples, "
        f"{n_classes} classes in {seconds:.2f} s: {calls} SVM calls{pairs}, relative gap "
        f"{np.max(gaps):.2e}, training accuracy {clf.score(K, y):.4f}; model saved to "
        f"{args.model}"
    )
    print(_top_kernels(clf))
    return 0


def _predict_stack(args, clf, meta):
    """``predict MODEL.npz TEST.npy|.npz`` for a model fitted on precomputed kernels."""
    K, labels = _read_stack(args.data, args.label)
    m, n_train = meta["n_kernels"], meta["n_features"]
    if len(K) != m or K[0].shape[1] != n_train:
        raise UserError(
            f"{args.data} holds kernels of shape {(len(K), *K[0].shape)}; the model needs "
            f"({m}, n_test, {n_train}): its {m} kernels between the new samples and its "
            f"{n_train} training samples"
        )
    y = _stack_labels(args, labels, need=False)
    if y is not None and len(y) != K[0].shape[0]:
        raise UserError(f"{args.data} holds kernels of {K[0].shape[0]} samples but there are "
                        f"{len(y)} labels")
    try:
        pred = clf.predict(K)
    except ValueError as exc:
        raise UserError(f"{args.data}: {exc}") from None
    return pred, y


def _read_csv_raw(path, label, need_label):
    try:
        return read_csv(path, label=label, require_label=need_label)
    except CSVError as exc:
        raise UserError(str(exc)) from None


def _fit(args):
    _task_options(args)
    if _is_stack_file(args.data):
        return _fit_stack(args)
    if args.labels is not None:
        raise UserError("--labels is for a kernel stack (.npy/.npz); a CSV file has its "
                        "label column (--label)")
    if args.task != "classification":
        return _fit_task(args)
    X, y, features = _read_csv(args.data, args.label)
    n_classes = len(np.unique(y))
    if n_classes < 2:
        raise UserError(f"{args.data}: the label column {args.label!r} has only one class")
    if n_classes > max(2, X.shape[0] // 2):
        raise UserError(
            f"{args.data}: the label column {args.label!r} has {n_classes} distinct values "
            f"for {X.shape[0]} rows; is it a class label?"
        )
    clf = _classifier(args, _kernels(args, lambda: "all_features"),
                      standardize=not args.no_standardize)
    seconds = _fit_and_save(clf, X, y, args, feature_names=features, label=args.label)
    gaps = np.atleast_1d(clf.gap_)
    calls = int(np.sum(clf.n_oracle_calls_))
    pairs = "" if gaps.size == 1 else f" over {gaps.size} one-vs-one pairs"
    print(
        f"fitted {args.method} on {X.shape[0]} rows, {X.shape[1]} features, {n_classes} "
        f"classes in {seconds:.2f} s: {clf.n_kernels_} kernels, {calls} SVM calls{pairs}, "
        f"relative gap {np.max(gaps):.2e}, training accuracy {clf.score(X, y):.4f}; "
        f"model saved to {args.model}"
    )
    print(_top_kernels(clf, features))
    return 0


def _predict(args):
    try:
        clf, meta = load_model(args.model)
    except ModelFormatError as exc:
        raise UserError(str(exc)) from None
    task = {"regression": "regression", "one-class": "one-class"}.get(
        estimator_entry(meta["estimator"]).task)
    args.label = meta.get("label") or "label"
    precomputed = meta["params"].get("kernels") == "precomputed"
    if precomputed != _is_stack_file(args.data):
        raise UserError(
            f"the model was fitted on precomputed kernels; give the kernels between the new "
            f"and the training samples as a .npy/.npz stack, not {args.data}" if precomputed
            else f"the model was fitted on features; give a CSV file, not {args.data}"
        )
    if args.labels is not None and not precomputed:
        raise UserError("--labels is for a kernel stack (.npy/.npz); a CSV file has its "
                        "label column")
    if precomputed:
        pred, y = _predict_stack(args, clf, meta)
        return _write_predictions(args, pred, y, task)
    if task is None:
        X, y, _ = _read_csv(
            args.data, meta.get("label"), need_label=False, features=meta.get("feature_names")
        )
    else:
        try:
            X, y, _ = read_csv(args.data, label=meta.get("label"), require_label=False,
                               features=meta.get("feature_names"))
        except CSVError as exc:
            raise UserError(str(exc)) from None
    if X.shape[1] != meta["n_features"]:
        raise UserError(
            f"{args.data}: {X.shape[1]} feature columns, the model expects {meta['n_features']}"
        )
    if meta.get("standardize") is not None:
        mean, scale = meta["standardize"]
        X = (X - mean) / scale
    pred = clf.predict(X)
    return _write_predictions(args, pred, y, task)


def _write_predictions(args, pred, y, task):
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
    if y is not None and task == "regression":
        t = _targets(y, args.data, args.label)
        r2 = 1.0 - float(np.sum((t - pred) ** 2) / max(np.sum((t - t.mean()) ** 2), 1e-300))
        print(f"R2 on {args.data}: {r2:.4f} ({len(t)} rows)", file=sys.stderr)
    elif y is not None:
        acc = float(np.mean(np.asarray(pred).astype(str) == np.asarray(y).astype(str)))
        print(f"accuracy on {args.data}: {acc:.4f} ({len(y)} rows)", file=sys.stderr)
    return 0


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (and exit status 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _compile_cmd(args):
    from . import _compile

    failed = _compile.compile_all()
    if failed:
        raise UserError(f"could not compile the path(s): {', '.join(failed)}")
    return 0


# ----------------------------------------------------------------------------
def build_parser():
    ap = _Parser(prog="mklopt", description="Multiple kernel learning certified by duality gaps.")
    sub = ap.add_subparsers(dest="command", metavar="{bench,fit,predict,compile}")
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
        help="; ".join(f"{k}: {v.help}" for k, v in PROTOCOLS.items()),
    )
    b.add_argument("--splits", type=int, default=None,
                   help="random half splits (default: 3; with --protocol compare 1)")
    b.add_argument("--seed", type=int, default=0, help="seed of the first split (default: 0)")
    b.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats per solve; the median is reported (default: 1); with "
        "--protocol kloft2010 the draws of the toy problem and the timed repeats (default: 5)",
    )
    b.add_argument(
        "--cases", nargs="+", metavar="CASE",
        help="with --protocol scale: the cases to run (default: all), e.g. letter-level "
        "letter-svc curve-on_the_fly-4000 shuttle-level sonar-100000; with --protocol "
        "kloft2010: toy, times or both (default)",
    )
    b.add_argument(
        "--sizes", nargs="+", type=int, metavar="N",
        help="with --protocol kloft2010: training sizes of the timing experiment "
        "(default: 250 500 1000)",
    )
    b.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        metavar="N",
        help="splits run at the same time through joblib (-1: all cores); each split's "
        "solves are timed where they run, so parallel splits share the cores "
        "(default: one after the other)",
    )
    b.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the splits as tasks on the Dask cluster of this scheduler "
        "(e.g. tcp://host:8786; needs mklopt[dask])",
    )
    b.add_argument("--out", default="bench-out", help="output directory (default: bench-out)")
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=_bench)

    f = sub.add_parser(
        "fit",
        help="fit an MKL model on a CSV file and save it",
        description="Fit MKLClassifier (or, with --task, MKLRegressor or "
        "MKLOneClass) on DATA.csv (header row, numeric features, one label or "
        "target column; none for one-class) and save a portable model file.",
    )
    f.add_argument(
        "data", metavar="DATA",
        help="a CSV file of features and labels, or a stack of precomputed kernels: a .npy "
        "array of shape (n_kernels, n_samples, n_samples), or a .npz archive of one such "
        "array or of one 2-D kernel per array (and optionally the labels, named by --label)",
    )
    f.add_argument("--label", default="label",
                   help="label column, or the labels' array in an .npz (default: label)")
    f.add_argument(
        "--labels", default=None, metavar="FILE",
        help="with a .npy/.npz kernel stack: its labels, a 1-D .npy array or a CSV file of "
        "the --label column",
    )
    f.add_argument(
        "--method",
        default="auto",
        choices=["auto", *sorted(method_names(oracle_kind="dual"))],
        help="outer method, any registered one that solves SVM duals, or 'auto': level up "
        "to 2,000 kernels, working_set above (default: auto)",
    )
    f.add_argument(
        "--kernels",
        default="mkboost",
        help="'grid': the level paper's Gaussian and polynomial kernels on all "
        "features and on each single feature (13 (d + 1) kernels); 'mkboost': "
        "the MKBoost paper's 17 kernels on all features (default: mkboost, as MKLClassifier); "
        "or kernel specs of any registered family separated by ';', e.g. "
        "'rbf(1.0); poly(2, features=[0, 3]); linear'",
    )
    f.add_argument(
        "--C",
        type=float,
        default=None,
        help="SVM trade-off C (default: the estimator's: 1 for classification, on kernels of "
        "unit mean diagonal as in SVC; 100 for regression, on unit-trace kernels)",
    )
    f.add_argument(
        "--task",
        default="classification",
        choices=["classification", "regression", "one-class"],
        help="classification (MKLClassifier), regression (MKLRegressor: the --label "
        "column holds real targets) or one-class (MKLOneClass: features only, no "
        "label column) (default: classification)",
    )
    f.add_argument(
        "--loss", default=None, metavar="NAME",
        help="the oracle, by its registered name for the task: "
        + "; ".join(f"{t}: {', '.join(oracle_names(t))}"
                    for t in ("classification", "regression", "one-class"))
        + " (oracles from plugins included; default: the estimator's, hinge, "
        "epsilon_insensitive or nu)",
    )
    f.add_argument(
        "--epsilon", type=float, default=None,
        help="with --task regression: width of the insensitive tube, in units of the "
        "target's standard deviation (default: 0.1)",
    )
    f.add_argument(
        "--nu", type=float, default=None,
        help="with --task one-class: bound on the fraction of training outliers, in "
        "(0, 1] (default: 0.5)",
    )
    f.add_argument(
        "--p", type=float, default=None,
        help="norm of Lp-MKL for --method lp, 1 < p <= inf (default: 2)",
    )
    f.add_argument(
        "--groups",
        choices=["features"],
        default=None,
        help="with --method mirror: one kernel group per feature set (the mixed "
        "l-inf/l1 formulation)",
    )
    f.add_argument(
        "--elastic-net",
        type=float,
        default=None,
        metavar="LAM",
        help="elastic-net MKL with mixing parameter LAM in [0, 1] (0: L1-MKL, 1: the sum "
        "kernel), with --method auto, elastic_net or spg",
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
    f.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="progress on stderr: -v a line per binary problem (a bar with tqdm installed), "
        "-vv also a line per oracle call (default: none)",
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
    p.add_argument(
        "data", metavar="DATA",
        help="a CSV file of the training features, or, for a model fitted on precomputed "
        "kernels, a .npy/.npz stack of shape (n_kernels, n_test, n_train)",
    )
    p.add_argument(
        "--labels", default=None, metavar="FILE",
        help="with a kernel stack: true labels (.npy or a CSV column) to report the accuracy",
    )
    p.add_argument("--out", default=None, help="write predictions here (default: stdout)")
    p.set_defaults(func=_predict)

    c = sub.add_parser(
        "compile",
        help="compile mklopt's numba kernels ahead of time (for images and clusters)",
        description="Compile the numba kernels of every estimator path on a tiny problem, "
        "a line per path, into numba's cache (NUMBA_CACHE_DIR, or __pycache__ beside the "
        "installed package). A first run after install then starts at once.",
    )
    c.set_defaults(func=_compile_cmd)
    return ap


def main(argv=None):
    try:
        # the parser lists registered methods and oracles, plugins included
        parser = build_parser()
    except PluginError as exc:
        print(f"mklopt: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
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
