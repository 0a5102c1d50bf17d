"""Cross-validated choice of C for :class:`MKLClassifier` (scikit-learn's ``...CV`` convention)."""

from __future__ import annotations

import functools
import numbers
import time
import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .._constraints import NO_VALIDATION, Check, Interval, Options
from .._interrupt import fit_run
from .._parallel import client_map, parallel_map
from ..datasets import _scaling
from ..kernels import KernelBank
from ..kernels.factory import shared_storage, storage_traits
from ..oracles import CompositeOracle
from ..stopping import DualityGap, MaxIter, TimeLimit
from ..tasks import Problem, get_task
from ._checks import check_feature_names, check_is_fitted, check_X_y, check_y
from ._core import EstimatorCore
from ._fit import fit_problems
from ._losses import check_sample_bounds, method_for, pair_offset
from ._ovo import (
    class_indices,
    class_order,
    mean_weights,
    pair_label,
)
from ._params import check_estimator_client, resolve_standardize
from ._path import _recording, c_path, recording_oracle
from ._precomputed import (
    _n_labels,
    check_feature_kernel_inputs,
    check_kernel_names,
    is_precomputed,
    kernels_first,
    precomputed_bank,
)
from ._progress import PointTicker, TaskProgress, fold_summary, write
from ._sklearn import (
    HAS_SKLEARN,
    BaseEstimator,
    ClassifierMixin,
    ConvergenceWarning,
    SharedClientMixin,
)
from ._weights import check_sample_weight, sample_bounds
from .mkl import MKLClassifier

__all__ = ["MKLClassifierCV", "GridEdgeWarning"]

#: ``Cs=k`` means ``k`` values log-spaced between these (inclusive).
CS_RANGE = (1e-2, 1e3)

# The MKLClassifier parameters the CV estimator passes through.
_SHARED = (
    "kernels", "method", "loss", "p", "groups", "elastic_net", "tol", "max_iter", "inner_tol",
    "normalize", "standardize", "weight_threshold", "time_limit", "storage", "cache_size",
    "max_memory", "callback", "multiclass", "verbose", "class_weight", "probability",
    "random_state", "kernel_names", "kernel_axis", "psd",
)


def check_Cs(Cs):
    """The sorted, distinct grid of ``C`` an estimator's ``Cs`` stands for.

    Parameters
    ----------
    Cs : int or array-like of float
        An int ``k >= 1``: ``k`` values log-spaced over ``[1e-2, 1e3]``
        (``k = 1``: ``1e-2``). Otherwise positive finite values.

    Returns
    -------
    ndarray of float64, increasing

    Examples
    --------
    >>> check_Cs(6).tolist()
    [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    >>> check_Cs([10, 0.1, 10]).tolist()
    [0.1, 10.0]
    """
    if isinstance(Cs, numbers.Integral) and not isinstance(Cs, bool):
        if Cs < 1:
            raise ValueError(f"Cs must be a positive int or a list of C values, got {Cs!r}")
        lo, hi = np.log10(CS_RANGE)
        return np.logspace(lo, hi, int(Cs))
    if isinstance(Cs, (str, bytes, bool)) or not np.iterable(Cs):
        raise TypeError(
            f"Cs must be an int (that many values from 1e-2 to 1e3) or a list of C values, "
            f"got {type(Cs).__name__}"
        )
    try:
        values = np.asarray(list(Cs), dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise TypeError("Cs must hold real numbers") from None
    if values.size == 0:
        raise ValueError("Cs is empty; give at least one value of C")
    if not np.all(np.isfinite(values)) or np.any(values <= 0.0):
        raise ValueError(f"every C in Cs must be finite and > 0, got {values.tolist()}")
    return np.unique(values)


def _stratified_folds(y_idx, n_splits):
    """Stratified folds without scikit-learn: each class's samples cut into n_splits runs."""
    test = [[] for _ in range(n_splits)]
    for c in np.unique(y_idx):
        members = np.flatnonzero(y_idx == c)
        if members.size < n_splits:
            raise ValueError(
                f"cv={n_splits}: the smallest class has {members.size} samples, fewer than "
                "the number of folds"
            )
        for f, part in enumerate(np.array_split(members, n_splits)):
            test[f].append(part)
    n = y_idx.shape[0]
    out = []
    for parts in test:
        te = np.sort(np.concatenate(parts))
        mask = np.ones(n, dtype=bool)
        mask[te] = False
        out.append((np.flatnonzero(mask), te))
    return out


def _splits(cv, X, y, y_idx, classifier=True):
    """The (train, test) index pairs of ``cv`` (scikit-learn's ``check_cv`` when installed).

    ``y_idx`` are the class indices of a classifier (None for a regressor).
    """
    if HAS_SKLEARN:
        from sklearn.model_selection import check_cv

        splitter = check_cv(cv, y, classifier=classifier)
        splits = list(splitter.split(X, y))
    elif isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}")
        if classifier:
            splits = _stratified_folds(y_idx, int(cv))
        else:  # consecutive runs, as KFold without shuffling
            idx = np.arange(X.shape[0])
            splits = [(np.setdiff1d(idx, te), te) for te in np.array_split(idx, int(cv))]
    elif hasattr(cv, "split"):
        splits = list(cv.split(X, y))
    else:
        splits = list(cv)
    out = []
    for k, (train, test) in enumerate(splits):
        train = np.sort(np.asarray(train, dtype=np.int64))
        test = np.asarray(test, dtype=np.int64)
        if classifier and np.unique(y_idx[train]).size < 2:
            raise ValueError(f"cv: fold {k} has a single class in its training part")
        out.append((train, test))
    if len(out) < 2:
        raise ValueError(f"cv must give at least two splits, got {len(out)}")
    return out


@dataclass(frozen=True)
class _Formulation:
    """What every fold's path solves: the options of the estimator's problems.

    The same for every task: the classifier's folds solve one problem per
    pair of classes (or one shared problem), the regressor's one problem;
    each builds the oracle of ``entry`` (the loss's registry entry) with
    the estimator's ``values`` besides ``C`` and ``tol`` (``epsilon``).
    """

    loss: str
    shared: bool
    normalize: object
    new_method: object
    stop: object
    inner_tol: float
    threshold: float
    callback: object
    verbose: int = 0
    name: str = ""

    #: The registry entry of ``loss`` (resolved once, carried to every fold).
    entry: object = None
    #: Other values the oracle takes, as ``(name, value)`` pairs (``epsilon``).
    values: tuple = ()
    #: Each bank point's box relative to ``C`` (class and sample weights,
    #: ``C_i = C factors_i``), or None: ``C`` for all.
    factors: object = None

    def box(self, rows, C):
        """The box of the problem on bank rows ``rows`` at ``C``."""
        return C if self.factors is None else C * self.factors[rows]

    def oracle(self, view, y, C, tol, rows=None):
        """The oracle of one problem at ``C``, recording cuts for the path."""
        return recording_oracle(self.entry, view, y, C=self.box(rows, C), tol=tol,
                                **dict(self.values))

    def method_factory(self):
        """The outer method of a path point (the estimator's own rule, :func:`method_for`)."""
        return method_for(self.entry, self.new_method)


#: Bytes of kernel blocks one pass of :func:`_decisions` gathers: about a
#: core's L2 cache, so that the product with the coefficients reads the
#: blocks from it. Every decision of a satellite search replayed, one
#: thread (1 MB L2 per core): 2.23 s with 32 MB passes, 1.99 s with 4 MB,
#: 1.64 s with 1 MB, 1.73 s with 0.5 MB, 2.35 s with 0.25 MB (shorter
#: passes pay their per-pass overhead); satellite-bands (68 kernels) 8.80,
#: 7.84, 6.50, 7.70, 9.27 s.
_DECISION_BLOCK_BYTES = 2**20


def _decisions(bank, view, rows, test, models, threshold):
    """Decision values on ``test`` of one problem at several of its solutions.

    ``models`` holds ``(w, coef, bias)`` per solution (the points of a C
    path) of the problem solved on ``view`` (rows ``rows`` of ``bank``);
    ``coef`` are the dual coefficients times the labels (``alpha * y`` for
    an SVM, ``beta = alpha - alpha*`` for an SVR). Each solution's decision
    is ``bias + sum_k w_k f_k sum_j K_k(x, x_j) coef_j`` over its kernels
    above ``threshold`` times its largest weight and its non-zero
    coefficients, ``f_k`` the view's normalisation of kernel ``k`` relative
    to the bank's. The bank's blocks for the union of those kernels and
    points are gathered once for all the solutions (in passes over the test
    points of at most :data:`_DECISION_BLOCK_BYTES`) instead of once per
    solution.

    Returns
    -------
    ndarray of shape (len(models), len(test))
    """
    out = np.empty((len(models), test.size))
    W = np.zeros((len(models), bank.n_kernels))
    A = np.zeros((len(models), rows.size))
    for c, (w, coef, bias) in enumerate(models):
        out[c] = float(bias)
        ks = w > threshold * w.max()
        W[c, ks] = w[ks]
        A[c] = coef
    ks = np.flatnonzero(W.any(axis=0)).astype(np.int64)
    sv = np.flatnonzero(A.any(axis=0))
    if not (ks.size and sv.size and test.size):
        return out
    Wf = W[:, ks] * (bank.scales / view.scales)[ks]
    As = np.ascontiguousarray(A[:, sv].T)
    step = max(1, _DECISION_BLOCK_BYTES // (8 * ks.size * sv.size))
    for t0 in range(0, test.size, step):
        blocks = bank.blocks(ks, test[t0:t0 + step], rows[sv])
        out[:, t0:t0 + step] += np.einsum("ck,ktc->ct", Wf, blocks @ As)
    return out


def path_decisions(bank, view, rows, test, models, carried, threshold):
    """:func:`_decisions` at every point of a C path; a carried point repeats its predecessor's.

    ``carried[c]`` marks a point :func:`~mklopt.estimators._path.c_path`
    carried over from point ``c - 1`` (the same model). Returns an array of
    shape (len(models), len(test)).
    """
    out = np.empty((len(models), test.size))
    solved = [c for c, m in enumerate(carried) if not m]
    out[solved] = _decisions(bank, view, rows, test, [models[c] for c in solved], threshold)
    for c, m in enumerate(carried):
        if m:
            out[c] = out[c - 1]
    return out


def _pair_offsets(oracle, res):
    """Each pair's ``(alpha, bias)`` at a shared point, as :class:`MKLClassifier` finds them.

    The joint run keeps no per-pair bias: each pair is solved again at the
    point's weights from its own ``alpha`` (already optimal there, so SMO
    stops at once), as the estimator's shared fit does.
    """
    w = np.asarray(res.weights, dtype=np.float64)
    out = []
    for part, a in zip(oracle.parts, oracle.split(res.alpha), strict=True):
        ans = pair_offset(part, w, a, getattr(part, "tol", None))
        out.append((np.asarray(ans.alpha, dtype=np.float64), float(ans.bias)))
    return out


_STATS = ("rel_gap", "value", "n_oracle_calls", "n_iter", "fit_time")


def _problems(bank, targets, train, pairs, form):
    """``(problem, view)`` of each problem of a fold, as the estimators' task makes them.

    With ``pairs`` (classification: ``targets`` are class indices) one
    binary problem per pair of classes; with ``pairs=None`` one problem on
    the fold's training rows and their ``targets`` (regression). A
    problem's rows are bank rows; each reads its view of the bank.
    """
    task = get_task(form.entry.task)
    labels = None if pairs is None else np.arange(1 + max(j for _, j in pairs))
    out = []
    for p in task.problems(targets[train], labels, train.size, False):
        rows = train[p.rows]
        out.append((Problem(rows, p.y, p.classes, p.name),
                    bank.view(rows, normalize=form.normalize)))
    return out


def _paths(problems, Cs, form, guide=None, where=(), on_point=None, pairs=None):
    """The C path of each binary problem, or one path of the shared problem.

    ``guide`` holds, per path, the weights of another fold's path at every C
    (see :func:`c_path`), or is None. Without it, each one-vs-one problem
    of ``pairs`` (the classes of each problem, in the order of
    :func:`itertools.combinations`) but the first starts its path from the
    mean weights at the first C of the problems solved before it that share
    a class with it (its parent in
    :func:`~mklopt.estimators._ovo.star_parents` among them): on digits,
    about 1.2 oracle calls at the first C per problem instead of 6.
    ``where`` (a label per path) and ``on_point`` are handed to
    :func:`c_path` for the progress lines.
    """
    progress = dict(verbose=form.verbose, name=form.name, on_point=on_point)
    guide = [None] * len(problems) if guide is None else guide
    if form.shared and len(problems) > 1:
        def make(_, C, tol):
            entry = form.entry
            return _recording(CompositeOracle)(
                [entry.make(view, p.y, C=form.box(p.rows, C), tol=tol)
                 for p, view in problems])

        return [c_path(None, None, Cs, form.method_factory(), form.stop, form.inner_tol,
                       callback=form.callback, make_oracle=make, finish=_pair_offsets,
                       guide=guide[0], where=where[0] if where else "", **progress)]
    # The one core's loop (fit_problems), serially: without another fold's
    # guide (the first fold), each pair's path starts as MKLClassifier's pairs
    # do, from the mean first weights of its parent and of its class-mates of
    # earlier waves (MKLBase._parents).
    task = get_task(form.entry.task)
    probs = [prob for prob, _ in problems]
    parents = task.parents_of(probs) if guide[0] is None else None

    def path(view, y, rows, g, label, start=None):
        return c_path(view, y, Cs, form.method_factory(), form.stop, form.inner_tol,
                      callback=form.callback,
                      make_oracle=functools.partial(_oracle_at, form, y, rows),
                      guide=g, start=start, where=label, **progress)

    def args_of(k):
        return (problems[k][1], probs[k].y, probs[k].rows, guide[k], where[k] if where else "")

    return fit_problems(probs, path, args_of, parents=parents,
                        start=lambda paths: mean_weights([pts[0] for pts in paths]))


def _fit_folds(bank, y_idx, splits, pairs, Cs, form, n_jobs, where=None, ticker=None,
               done=None, client=None, first_guide=None, out_guide=None):
    """Every fold's paths: the first fold's alone, then the others guided by it.

    The folds' training sets overlap (by 3/4 with five folds), so their
    optimal weights at one ``C``, and the way those move from one ``C`` to
    the next, are close. The first fold's path is solved as it is (cold
    at the first ``C``, each later point from its predecessor); every
    other fold's path then starts from the first fold's weights at the
    first ``C`` (instead of a cold start) and follows its steps (see
    :func:`~mklopt.estimators._path.c_path`'s ``guide``). With ``n_jobs``
    those other folds run in parallel, with the serial answers (with a
    Dask ``client``: as tasks on the cluster, see :func:`_map_folds`).

    For the progress lines: ``where(k)`` labels fold ``k``'s paths,
    ``ticker(k)`` is its ``on_point`` and ``done(k, fold)`` is called as
    fold ``k`` ends (all three optional).

    ``first_guide`` (optional) guides the first fold's paths instead of
    nothing: the weights, per path and C, of the first fold of a
    neighbouring formulation (another norm ``p``, see :func:`search`). With
    a list ``out_guide``, the first fold's weights (per path and C) are
    appended to it.
    """
    def labels(k):
        return where(k) if where is not None else ()

    def tick(k):
        return ticker(k) if ticker is not None else None

    (train, test), rest = splits[0], splits[1:]
    first = _fit_fold(bank, y_idx, train, test, pairs, Cs, form, first_guide, labels(0),
                      tick(0))
    if done is not None:
        done(0, first)
    guide = first[2]
    if out_guide is not None:
        out_guide.append(guide)
    tasks = [(y_idx, tr, te, pairs, Cs, form, guide, labels(k + 1), tick(k + 1))
             for k, (tr, te) in enumerate(rest)]
    others = _map_folds(client, n_jobs, _fit_fold, bank, tasks, first=1,
                        on_done=None if done is None else (lambda k, f: done(k + 1, f)))
    return [first[:2]] + [fold[:2] for fold in others]


def _fit_fold(bank, y_idx, train, test, pairs, Cs, form, guide=None, where=(), on_point=None):
    """The C path of every problem of one fold, and its validation decisions.

    ``y_idx`` and ``pairs`` are as for :func:`_problems` (``pairs=None``:
    one problem with real targets, a regressor's).

    Each binary problem (one per pair of classes) reads its rows of the
    shared ``bank`` through a view with its own normalisation. Its decision
    values on the validation points use blocks of the same bank
    (validation rows, support-vector columns) scaled the way the view
    scales its kernels, so no kernel is evaluated again. With
    ``form.shared`` the pairs are one problem with one weight vector
    (:class:`~mklopt.oracles.CompositeOracle`) and one path. ``guide``:
    another fold's weights, per path and C (see :func:`_fit_folds`).

    Returns ``(decisions, stats, weights)``: ``decisions`` of shape (n_Cs,
    n_test, n_pairs); ``stats`` a dict of arrays of shape (n_Cs, n_pairs),
    or (n_Cs, 1) for a shared problem; ``weights`` the weights of each
    path at each C (a guide for other folds).
    """
    problems = _problems(bank, y_idx, train, pairs, form)
    n_c, n_p = len(Cs), len(problems)
    decisions = np.empty((n_c, test.size, n_p))
    paths = _paths(problems, Cs, form, guide, where, on_point, pairs)
    task = get_task(form.entry.task)
    for p, (prob, view) in enumerate(problems):
        rows, y = prob.rows, prob.y
        if form.shared and n_p > 1:
            # the pair's (alpha, bias) at every point of the one shared path
            points = paths[0]
            models = [(pt.weights, task.coefficients(pt.extra[p][0], y), pt.extra[p][1])
                      for pt in points]
        else:
            points = paths[p]
            # The task's coefficients: alpha_i y_i for a classifier, a
            # regressor's alpha already signed.
            models = [(pt.weights, task.coefficients(pt.alpha, y), pt.bias) for pt in points]
        decisions[:, :, p] = path_decisions(bank, view, rows, test, models,
                                            [pt.carried for pt in points], form.threshold)
    stats = {name: np.zeros((n_c, len(paths))) for name in _STATS}
    stats["converged"] = np.zeros((n_c, len(paths)), dtype=bool)
    for p, points in enumerate(paths):
        for c, pt in enumerate(points):
            for name in _STATS:
                stats[name][c, p] = getattr(pt, name)
            stats["converged"][c, p] = pt.converged
    return decisions, stats, [[pt.weights for pt in points] for points in paths]


def check_exact_storage(name, storage):
    """Refuse a storage of approximate kernels: every fold reads one bank of exact kernels."""
    if storage_traits(storage)[1]:
        raise ValueError(
            f"{name} reads every fold from one bank of exact kernels; storage="
            f"{storage!r} brings approximate kernels of its own (feature maps), "
            "which the folds cannot share: use 'auto', 'dense', 'on_the_fly' or "
            "'products'"
        )


def one_bank(est, Xs, plan, n_classes=None):
    """The search's one bank: raw kernels of all points, each problem normalising its view.

    Its storage follows :func:`~mklopt.kernels.factory.shared_storage`:
    ``reads="many"`` when every candidate is scored on every fold (a path
    over every ``C`` per fold and problem), ``reads="few"`` under
    successive halving with several formulations, where most candidates
    are solved on one fold only: there the stored distances and inner
    products (one to two matrices per feature group) cost less than
    writing, and first touching, a dense bank of every kernel. Measured in
    fresh processes, one thread, at satellite's 50 % split: 14.2-16.6 s
    against 15.9-18.1 s for the default search (17 kernels: 0.17 GB
    against 1.4 GB), and 31.6 s against 41.9 s with 68 kernels on four
    views (0.66 GB against 5.6 GB). The values are the same bit for bit.
    """
    halving = _halving_factor(est, len(resolve_formulations(est, n_classes))) is not None
    storage = shared_storage(est.storage, Xs, plan.specs, est.max_memory,
                             reads="few" if halving else "many")
    return KernelBank.from_specs(Xs, plan.specs, storage=storage, normalize=None,
                                 cache_size=est.cache_size, max_memory=est.max_memory)


def run_search(est, X, y, sample_weight=None):
    """``est._search(X, y[, sample_weight])`` as one stoppable run: a CV estimator's ``fit``.

    Ctrl-C ends the whole search, whichever solve it lands in, with
    ``KeyboardInterrupt`` and nothing fitted; ``time_limit`` stays a budget
    per path point (no deadline for the run).
    """
    name = type(est).__name__
    with fit_run(name, None, est.verbose):
        try:
            if sample_weight is None:
                return est._search(X, y)
            return est._search(X, y, sample_weight)
        except KeyboardInterrupt:
            raise KeyboardInterrupt(f"{name}.fit interrupted; nothing was fitted") from None


def _oracle_at(form, y, rows, view, C, tol):
    return form.oracle(view, y, C, tol, rows)


def _map_folds(client, n_jobs, fit_fold, bank, rest, first=0, on_done=None):
    """``[fit_fold(bank, *args) for args in rest]``: one fold (its C path) per call.

    With a Dask ``client`` each fold is a task named ``mklopt-fold-<k>``
    (``k`` counted from ``first``), and the bank, every fold's input, is
    scattered to the workers once; otherwise the folds go through
    :func:`~mklopt._parallel.parallel_map`. ``on_done(k, fold)`` as fold
    ``k`` of ``rest`` ends (on a cluster: when all are gathered).
    """
    if client is not None:
        out = client_map(client, fit_fold, bank, rest,
                         [f"fold-{first + k}" for k in range(len(rest))])
        if on_done is not None:
            for k, fold in enumerate(out):
                on_done(k, fold)
        return out
    return parallel_map(fit_fold, ((bank, *args) for args in rest), n_jobs, n_tasks=len(rest),
                        on_done=on_done)


class _FoldModel(ClassifierMixin, BaseEstimator):
    """A fold's model at one C, as a scorer sees it.

    Scorers call ``scorer(estimator, X, y)``; here ``X`` is the column of
    positions ``0 .. n_test - 1`` of the validation points, and the
    decision values were computed already from the shared bank.
    """

    def __init__(self, classes=None, decisions=None):
        self.classes = classes
        self.decisions = decisions
        self.classes_ = classes
        self._d = decisions  # (n_test, n_pairs)

    def _rows(self, X):
        return np.asarray(X, dtype=np.int64).ravel()

    def decision_function(self, X):
        d = self._d[self._rows(X)]
        pairs = np.array(list(combinations(range(self.classes_.shape[0]), 2)))
        return get_task("classification").decisions(d, pairs, self.classes_)

    def predict(self, X):
        d = self.decision_function(X)
        if d.ndim == 1:
            return self.classes_[(d > 0).astype(np.int64)]
        return self.classes_[np.argmax(d, axis=1)]

    def score(self, X, y, sample_weight=None):
        correct = (self.predict(X) == np.asarray(y)).astype(np.float64)
        if sample_weight is None:
            return float(correct.mean())
        sw = np.asarray(sample_weight, dtype=np.float64)
        return float(np.sum(sw * correct) / np.sum(sw))


def _scorer(scoring):
    if scoring is None or (scoring == "accuracy" and not HAS_SKLEARN):
        return lambda est, X, y: est.score(X, y)
    if not HAS_SKLEARN:
        raise ImportError(
            f"scoring={scoring!r} needs scikit-learn's scorers (pip install scikit-learn); "
            "without it only scoring=None (accuracy) is available"
        )
    from sklearn.metrics import check_scoring

    # check_scoring wants an estimator to check a string against; the
    # fold models below have what classifier scorers call.
    return check_scoring(MKLClassifier(), scoring=scoring)


def _rank(mean):
    """GridSearchCV's ranks: 1 for the best mean score, ties share the smallest rank."""
    filled = np.where(np.isnan(mean), -np.inf, mean)
    return np.array([1 + int(np.sum(filled > s)) for s in filled], dtype=np.int32)


def _param_column(values):
    """``GridSearchCV``'s ``param_<name>`` column: a masked array, masked where a row has none."""
    present = [v is not None for v in values]
    floats = all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                 for v, h in zip(values, present, strict=True) if h)
    data = np.array([(v if h else (np.nan if floats else "")) for v, h in zip(values, present,
                                                                            strict=True)],
                    dtype=np.float64 if floats else object)
    return np.ma.MaskedArray(data, mask=~np.asarray(present, dtype=bool))


def set_cv_results(est, Cs, scores, fit_time, score_time, folds, formulations=({},),
                   n_calls=None, halving=None):
    """Set ``cv_results_`` (GridSearchCV's format), the best (C, formulation), the path statistics.

    ``scores`` (and the times) have one row per (formulation, C), the
    formulations' rows one after the other, each over ``Cs``; ``folds``
    holds, per formulation, the folds of :func:`_fit_folds` (or, with
    ``halving``, the path statistics of :func:`_halving_search`);
    ``n_calls`` (optional) the oracle calls of each row, summed over the
    paths of a fold (shape as ``scores``). ``halving`` (optional): the
    :class:`_Halving` record of a successive-halving search, whose rows are
    NaN on the folds a dropped candidate was not scored on; the means are
    then over the folds scored, the ranks those of :func:`_halving_rank`,
    and ``iter`` and ``n_resources`` are added.
    """
    n_c = Cs.size
    params = [{"C": float(c), **form} for form in formulations for c in Cs]
    if halving is None:
        mean = scores.mean(axis=1)
        rank = _rank(mean)
        mean_of, std_of = np.mean, np.std
    else:
        mean = np.nanmean(scores, axis=1)
        rank = _halving_rank(mean, halving.iters)
        mean_of, std_of = np.nanmean, np.nanstd
    results = {
        "mean_fit_time": mean_of(fit_time, axis=1),
        "std_fit_time": std_of(fit_time, axis=1),
        "mean_score_time": mean_of(score_time, axis=1),
        "std_score_time": std_of(score_time, axis=1),
    }
    names = ["C"] + sorted({k for form in formulations for k in form})
    for key in names:
        results[f"param_{key}"] = _param_column([pr.get(key) for pr in params])
    results["params"] = params
    for k in range(scores.shape[1]):
        results[f"split{k}_test_score"] = scores[:, k].copy()
    results["mean_test_score"] = mean
    results["std_test_score"] = std_of(scores, axis=1)
    results["rank_test_score"] = rank
    if n_calls is not None:
        results["mean_n_oracle_calls"] = mean_of(n_calls, axis=1)
    if halving is not None:
        # HalvingGridSearchCV's columns: the last round a candidate ran in,
        # and the folds it was scored on by then
        results["iter"] = halving.iters.copy()
        results["n_resources"] = np.isfinite(scores).sum(axis=1).astype(np.int64)
        est.n_candidates_ = list(halving.n_candidates)
        est.n_resources_ = list(halving.n_resources)
        est.n_iterations_ = len(halving.n_candidates)
    est.Cs_ = Cs
    est.cv_results_ = results
    est.n_splits_ = scores.shape[1]
    est.best_index_ = int(np.flatnonzero(rank == 1)[0])
    est.best_params_ = dict(params[est.best_index_])
    est.best_C_ = float(est.best_params_["C"])
    est.best_score_ = float(mean[est.best_index_])
    f_best = est.best_index_ // n_c
    if len(formulations) > 1 or formulations[0]:
        est.formulations_ = [dict(form) for form in formulations]
        est.best_formulation_ = dict(formulations[f_best])
    # Every formulation's path statistics, and the chosen one's as the
    # path_* attributes (their shape as with C alone).
    est.paths_ = (list(folds) if halving is not None
                  else [_path_stats(form_folds) for form_folds in folds])
    for key, value in est.paths_[f_best].items():
        setattr(est, f"path_{key}_", value)


def _path_stats(folds):
    """The path statistics (gap, value, oracle calls, convergence, time) of one search's folds.

    Each of shape (n_splits, n_Cs, n_paths).
    """
    stats = [s for _, s in folds]
    return {"rel_gap": np.stack([s["rel_gap"] for s in stats]),
            "value": np.stack([s["value"] for s in stats]),
            "n_oracle_calls": np.stack([s["n_oracle_calls"] for s in stats]).astype(np.int64),
            "converged": np.stack([s["converged"] for s in stats]),
            "fit_time": np.stack([s["fit_time"] for s in stats])}


#: ``search``'s values: successive halving (with several formulations), or every
#: candidate on every fold.
SEARCHES = ("halving", "exhaustive")


def _halving_factor(est, n_formulations):
    """The halving factor of ``est``'s search, or None for the exhaustive search.

    Halving needs candidates to drop between rounds: with one formulation
    (``formulations=None`` among them) every ``C`` is scored on every fold,
    as before, the warm path making each ``C`` cost little more than its
    neighbour.
    """
    if n_formulations < 2 or getattr(est, "search", "exhaustive") == "exhaustive":
        return None
    return int(est.factor)


def halving_schedule(n_splits, factor):
    """The folds scored by the end of each round of successive halving.

    Round ``r`` ends with ``min(factor**r, n_splits)`` folds scored; the
    last round ends with all of them.

    Examples
    --------
    >>> halving_schedule(5, 3)
    [1, 3, 5]
    >>> halving_schedule(10, 2)
    [1, 2, 4, 8, 10]
    >>> halving_schedule(2, 3)
    [1, 2]
    """
    out, r = [], 0
    while not out or out[-1] < n_splits:
        out.append(min(factor**r, n_splits))
        r += 1
    return out


@dataclass(frozen=True)
class _Halving:
    """What a successive-halving search did: each row's last round, each round's size."""

    #: per row of ``cv_results_``: the last round (0-based) its candidate ran in
    iters: np.ndarray
    #: candidates run in each round
    n_candidates: tuple
    #: folds scored by the end of each round
    n_resources: tuple


def _halving_rank(mean, iters):
    """The ranks of a halving search: later rounds first, then the mean score.

    A candidate that reached a later round ranks above every candidate
    dropped earlier (its score is over more folds, and it beat them on the
    folds they share); within a round the ranks are :func:`_rank`'s, ties
    sharing the smallest rank. Rank 1 is therefore a candidate of the last
    round, scored on every fold.
    """
    filled = np.where(np.isnan(mean), -np.inf, mean)
    better = (iters[None, :] > iters[:, None]) | (
        (iters[None, :] == iters[:, None]) & (filled[None, :] > filled[:, None]))
    return (1 + better.sum(axis=1)).astype(np.int32)


def _halving_search(est, Cs, setup, forms, progress, where_of, done_of, tick_of, factor):
    """Successive halving over the (formulation, C) candidates, the folds the resource.

    Round 0 scores every candidate on the first fold: each formulation's
    first-fold path over every ``C``, exactly as the exhaustive search
    solves it (a finite ``1 < p < inf`` from its neighbour's weights). The
    best ``ceil(n / factor)`` of the ``n`` candidates by their mean score
    on the folds scored so far (ties: the earlier row, as ``GridSearchCV``
    breaks them) go on to the next round, which scores them on the next
    folds (:func:`halving_schedule`); the last round scores the survivors
    on every remaining fold. In later rounds a formulation solves one path
    per fold over its surviving values of ``C`` only, guided by its first
    fold's weights at those values (:func:`_fit_folds`'s guide); a
    formulation with no survivor costs nothing more.

    Returns ``(scores, fit_time, score_time, n_calls, paths, halving)``:
    the first four of shape ``(n_formulations * n_Cs, n_splits)``, NaN
    where a candidate was not scored; ``paths`` per formulation the path
    statistics of :func:`_path_stats` (NaN, 0 or False where not solved)
    plus ``evaluated``, which marks the (fold, C) points solved; ``halving``
    a :class:`_Halving`.
    """
    n_s, n_c, n_f = len(setup.splits), Cs.size, len(forms)
    formulations = [params for params, _, _ in forms]
    shape = (n_f * n_c, n_s)
    scores, fit_time, score_time, n_calls = (np.full(shape, np.nan) for _ in range(4))
    paths = []
    for _, _, n_paths in forms:
        at = (n_s, n_c, n_paths)
        paths.append({"rel_gap": np.full(at, np.nan), "value": np.full(at, np.nan),
                      "n_oracle_calls": np.zeros(at, dtype=np.int64),
                      "converged": np.zeros(at, dtype=bool), "fit_time": np.full(at, np.nan),
                      "evaluated": np.zeros(at, dtype=bool)})
    schedule = halving_schedule(n_s, factor)
    alive = np.arange(n_f * n_c)
    iters = np.zeros(n_f * n_c, dtype=np.int64)
    n_candidates = []
    guides = {}
    most_paths = max(n_paths for _, _, n_paths in forms)
    lo = 0
    for r, hi in enumerate(schedule):
        n_candidates.append(int(alive.size))
        iters[alive] = r
        ks = list(range(lo, hi))
        # what is left to do: this round's path points exactly, the later
        # rounds' at most (their survivors are not known yet)
        paths_of = np.repeat([n_paths for _, _, n_paths in forms], n_c)
        left, n = (hi - lo) * int(paths_of[alive].sum()), -(-alive.size // factor)
        for a, b in zip(schedule[r:-1], schedule[r + 1:], strict=True):
            left += (b - a) * n * most_paths
            n = -(-n // factor)
        progress.total = progress.done + left
        if progress.bar is not None:
            progress.bar.total = progress.total
        for f, (_, form, _) in enumerate(forms):
            cidx = alive[(alive >= f * n_c) & (alive < (f + 1) * n_c)] - f * n_c
            if cidx.size == 0:
                continue
            done = done_of(f, cidx.size)
            if r == 0:
                train, test = setup.bank_splits[0]
                fold = _fit_fold(setup.bank, setup.targets, train, test, setup.pairs, Cs[cidx],
                                 form, _first_guide(formulations, f, guides), where_of(f)(0),
                                 tick_of(f, 0))
                if done is not None:
                    done(0, fold)
                guides[f] = fold[2]
                solved = [(0, fold)]
            else:
                # the first fold's weights at the surviving values of C
                guide = [[points[c] for c in cidx] for points in guides[f]]
                tasks = [(setup.targets, *setup.bank_splits[k], setup.pairs, Cs[cidx], form,
                          guide, where_of(f)(k), tick_of(f, k)) for k in ks]
                out = _map_folds(est.client, est.n_jobs, _fit_fold, setup.bank, tasks,
                                 first=ks[0], on_done=None if done is None else
                                 (lambda j, fold, done=done, k0=ks[0]: done(k0 + j, fold)))
                solved = list(zip(ks, out, strict=True))
            rows = f * n_c + cidx
            for k, (decisions, stats, _) in solved:
                fit_time[rows, k] = stats["fit_time"].sum(axis=1)
                n_calls[rows, k] = stats["n_oracle_calls"].sum(axis=1)
                for j, row in enumerate(rows):
                    t0 = time.perf_counter()
                    scores[row, k] = setup.score(k, decisions[j])
                    score_time[row, k] = time.perf_counter() - t0
                for key in ("rel_gap", "value", "n_oracle_calls", "converged", "fit_time"):
                    paths[f][key][k, cidx] = stats[key]
                paths[f]["evaluated"][k, cidx] = True
        if hi < n_s:
            keep = -(-alive.size // factor)
            mean = scores[alive, :hi].mean(axis=1)
            order = np.argsort(np.where(np.isnan(mean), np.inf, -mean), kind="stable")
            alive = np.sort(alive[order[:keep]])
        lo = hi
    halving = _Halving(iters, tuple(n_candidates), tuple(schedule))
    return scores, fit_time, score_time, n_calls, paths, halving


class GridEdgeWarning(UserWarning):
    """The cross-validated choice sits on the edge of its grid: the grid may be too narrow.

    Raised by :class:`MKLClassifierCV` and :class:`MKLRegressorCV` when the
    best ``C`` is the smallest or the largest of ``Cs``, or the best norm
    ``p`` is the smallest or largest finite ``p > 1`` of ``formulations``
    (``p = 1`` and ``p = inf`` are the ends of the range itself, so no
    warning there). The message names the grid and how to widen it.
    """


def _edge_warnings(est, formulations, name):
    """Warn (:class:`GridEdgeWarning`) when the best C or p is on the edge of its grid."""
    Cs, C = est.Cs_, est.best_C_
    if Cs.size > 1 and C in (Cs[0], Cs[-1]):
        low = C == Cs[0]
        side = "smallest" if low else "largest"
        wider = C / 100.0 if low else C * 100.0
        warnings.warn(
            f"{name}: the best C={C:g} is the {side} of Cs (from {Cs[0]:g} to {Cs[-1]:g}); "
            f"the best may lie beyond it: widen Cs, e.g. add {wider:g} "
            f"(Cs=np.logspace({np.log10(min(Cs[0], wider)):.3g}, "
            f"{np.log10(max(Cs[-1], wider)):.3g}, {Cs.size + 2}))",
            GridEdgeWarning, stacklevel=7)
    p = est.best_params_.get("p")
    ps = sorted({_p_of(f) for f in formulations})
    if p is None or len(ps) < 2 or p in (1, np.inf):
        return
    finite = [v for v in ps if 1 < v < np.inf]
    if p in (finite[0], finite[-1]):
        low = p == finite[0]
        side = "smallest" if low else "largest"
        lower = max([v for v in ps if v < p], default=1.0)
        upper = min([v for v in ps if v > p], default=np.inf)
        hint = (f"a p between {lower:g} and {p:g}" if low
                else f"a p between {p:g} and {upper:g}")
        warnings.warn(
            f"{name}: the best p={p:g} is the {side} finite p > 1 of formulations "
            f"(p = {', '.join(f'{v:g}' for v in ps)}); the best may lie beyond it: add "
            f"{hint} to formulations",
            GridEdgeWarning, stacklevel=7)


def _p_of(formulation):
    """A formulation's norm: ``p``, 1 (L1-MKL) when it has none."""
    p = formulation.get("p")
    return 1.0 if p is None else float(p)


def check_formulations(formulations, keys, name="formulations"):
    """A CV estimator's ``formulations``: None, ``"auto"`` or a checked list of dicts.

    Parameters
    ----------
    formulations : None, "auto", dict or list of dict
        Each dict takes estimator parameters among ``keys`` (``"p"``, and
        ``"multiclass"`` for a classifier).
    keys : tuple of str

    Returns
    -------
    None, "auto" or list of dict
        The dicts copied, ``p`` as a float.
    """
    if formulations is None or (isinstance(formulations, str) and formulations == "auto"):
        return formulations
    if isinstance(formulations, dict):
        formulations = [formulations]
    if isinstance(formulations, (str, bytes)) or not np.iterable(formulations):
        raise TypeError(
            f"{name} must be 'auto', None (C alone, with the estimator's own formulation) "
            f"or a list of dicts of {', '.join(repr(k) for k in keys)}, got "
            f"{formulations!r}"
        )
    out = []
    for i, form in enumerate(formulations):
        if not isinstance(form, dict):
            raise TypeError(f"{name}[{i}] must be a dict (e.g. {{'p': 2.0}}), got "
                            f"{type(form).__name__}")
        unknown = sorted(set(form) - set(keys), key=str)
        if unknown:
            extra = (" (a regressor has no multiclass)" if "multiclass" in unknown
                     and "multiclass" not in keys else "")
            raise ValueError(
                f"{name}[{i}] has unknown key(s) {', '.join(repr(k) for k in unknown)}"
                f"{extra}; a formulation takes {', '.join(repr(k) for k in keys)}"
            )
        form = dict(form)
        if "p" in form:
            p = form["p"]
            if (not isinstance(p, numbers.Real) or isinstance(p, bool) or np.isnan(p)
                    or p < 1):
                raise ValueError(
                    f"{name}[{i}]: p={p!r} must be a real 1 <= p <= inf (1: L1-MKL, "
                    "inf: the uniform sum of the kernels)"
                )
            form["p"] = float(p)
        if "multiclass" in form and form["multiclass"] not in ("ovo", "shared"):
            raise ValueError(f"{name}[{i}]: multiclass={form['multiclass']!r} must be 'ovo' "
                             "or 'shared'")
        if form in out:
            raise ValueError(f"{name}[{i}] repeats {name}[{out.index(form)}]: {form!r}")
        out.append(form)
    if not out:
        raise ValueError(f"{name} is empty; give at least one formulation (e.g. [{{'p': 1}}]) "
                         "or None for C alone")
    return out


def prepare_formulation(est, X, params):
    """``est._prepare_fit(X)``; an error of a formulation's ``params`` says which one."""
    try:
        return est._prepare_fit(X)
    except (TypeError, ValueError) as exc:
        if not params:
            raise
        raise type(exc)(f"formulations: {params!r} with this estimator's parameters: "
                        f"{exc}") from None


def formulation_plan(cv, base, plan, X, Cs, params):
    """``(estimator, plan)`` of one formulation of a CV search: the base's for ``{}``.

    Otherwise a new estimator at ``params`` (the search's feature names
    passed on) and its own plan (method, p, shared), an error naming the
    formulation (:func:`prepare_formulation`).
    """
    if not params:
        return base, plan
    est = cv._estimator(float(Cs[0]), **params)
    if hasattr(cv, "feature_names_in_"):
        est.feature_names_in_ = cv.feature_names_in_
    return est, prepare_formulation(est, X, params)


def _check_formulations_of(keys, value, name):
    check_formulations(value, keys, name)


#: ``formulations="auto"``: the norms searched (L1, Lp with p = 2, the uniform sum).
AUTO_PS = (1.0, 2.0, np.inf)

#: The parameters ``formulations="auto"`` needs at their defaults (it
#: searches them); with any of them set it is the estimator's own formulation.
_FORMULATION_PARAMS = ("p", "elastic_net", "groups")


def resolve_formulations(est, n_classes=None):
    """The formulations a search runs: a list of parameter overrides (``[{}]``: C alone).

    ``"auto"``: p in :data:`AUTO_PS` (at the estimator's ``multiclass``), and
    with more than two classes and ``multiclass="ovo"`` also L1 with shared
    weights, when ``method="auto"`` and ``p``, ``elastic_net`` and
    ``groups`` are unset; otherwise the estimator's own formulation alone.
    A formulation's missing keys take the estimator's values.
    """
    keys = ("p", "multiclass") if n_classes is not None else ("p",)
    given = check_formulations(est.formulations, keys)
    if given is None:
        return [{}]
    if given == "auto":
        own = (isinstance(est.method, str) and est.method == "auto"
               and all(getattr(est, k, None) is None for k in _FORMULATION_PARAMS))
        if not own:
            return [{}]
        given = [{"p": p} for p in AUTO_PS]
        if n_classes is not None and n_classes > 2 and est.multiclass == "ovo":
            given.append({"p": 1.0, "multiclass": "shared"})
    out = []
    for form in given:
        full = {"p": form.get("p", est.p if est.p is not None else 1.0)}
        if n_classes is not None:
            full["multiclass"] = form.get("multiclass", est.multiclass)
        out.append(full)
    return out


def _neighbour(formulations, f, solved):
    """The formulation whose first fold guides formulation ``f``'s, or None.

    The nearest norm ``1 < q < inf`` already solved, with the same
    ``multiclass`` (the same paths), when ``1 < p < inf``. Not ``p = inf``,
    whose cold start (the uniform weights) is its optimum, nor from L1:
    L1's sparse weights are a poor start for the multiplicative Lp update
    (measured on 600 satellite points, 5 folds: p = 2 took 102 oracle calls
    per fold from L1's weights against 75 from its own uniform start).
    """
    if not _WARM_OVER_P:
        return None
    p = _p_of(formulations[f])
    if not 1 < p < np.inf:
        return None
    mc = formulations[f].get("multiclass")
    near = [g for g in solved if formulations[g].get("multiclass") == mc
            and 1 < _p_of(formulations[g]) < np.inf]
    if not near:
        return None
    return min(near, key=lambda g: abs(np.log(_p_of(formulations[g])) - np.log(p)))


#: Whether a finite p > 1 starts its first fold from a neighbouring norm's weights.
_WARM_OVER_P = True
#: Whether shared weights start their first fold from the per-pair weights' mean.
_WARM_SHARED = True


def _first_guide(formulations, f, guides):
    """The guide of formulation ``f``'s first fold (see :func:`_fit_folds`), or None.

    ``guides`` holds the first-fold weights (per path, per C) of the
    formulations solved so far. A finite ``1 < p < inf`` follows its
    nearest solved norm (:func:`_neighbour`). Shared weights
    (``multiclass="shared"``) follow, at every C, the mean of the per-pair
    weights of the same norm when those are solved: the shared vector is
    one weight vector for every pair, and the per-pair optima of the same
    fold bracket it.
    """
    g = _neighbour(formulations, f, list(guides))
    if g is not None:
        return guides[g]
    form = formulations[f]
    if not _WARM_SHARED or form.get("multiclass") != "shared":
        return None
    same = [h for h in guides if formulations[h].get("multiclass") == "ovo"
            and _p_of(formulations[h]) == _p_of(form)]
    if not same:
        return None
    paths = guides[same[0]]
    return [[np.mean([path[c] for path in paths], axis=0) for c in range(len(paths[0]))]]


@dataclass
class SearchSetup:
    """What a cross-validated estimator's task hands the one search (:func:`search`).

    Attributes
    ----------
    bank : KernelBank
        The raw kernels of all training points, which every fold's problems
        read through views.
    targets : ndarray
        Per bank point: class indices (with ``pairs``) or standardised
        real targets (without).
    splits, bank_splits : list of (train, test)
        The folds in the order of ``X``, and the same folds in the bank's
        order of points.
    pairs : list of (int, int) or None
        The one-vs-one problems of a fold, or None for one problem.
    form : _Formulation
        What every path point solves (the first formulation's, with several).
    score : callable
        ``score(k, decisions)``: fold ``k``'s score of the decision values
        (shape ``(n_test, n_problems)``) of one C on its validation points.
    refit : callable
        ``refit(params)``: the estimator with ``params`` (``C`` and the
        formulation's overrides) fitted on all the data.
    labels : callable
        ``labels(k)``: the progress labels of fold ``k``'s paths.
    n_paths : int
        Paths per fold (pairs, or 1).
    forms : list of (dict, _Formulation, int), optional
        The formulations searched: each one's parameter overrides, what its
        path points solve and its paths per fold; default ``[({}, form,
        n_paths)]`` (C alone).
    """

    bank: object
    targets: object
    splits: list
    bank_splits: list
    pairs: object
    form: object
    score: object
    refit: object
    labels: object
    n_paths: int
    forms: list = None


def _label(form):
    """A formulation's name in the progress lines: ``p=2``, ``p=1 shared``."""
    if not form:
        return ""
    text = f"p={_p_of(form):g}"
    return f"{text} shared" if form.get("multiclass") == "shared" else text


def search(est, Cs, setup, plan, n_samples, point="(fold, C)"):
    """The one cross-validated search over ``Cs`` (and formulations) of both CV estimators.

    For each formulation (norm ``p``, ``multiclass``; one with C alone)
    every fold's paths (:func:`_fit_folds`) on the one bank; a finite norm
    ``1 < p < inf`` starts its first fold from the first fold of its
    nearest solved norm (:func:`_neighbour`, the same C path guide the
    other folds follow). With several formulations and
    ``est.search == "halving"`` the candidates meet the folds by successive
    halving instead (:func:`_halving_search`: all of them on the first fold,
    the same first-fold paths, then fewer on each round of folds). Then the
    scores of every (formulation, C, fold) solved, ``cv_results_`` and the
    best (C, formulation) (:func:`set_cv_results`),
    the refit with those on all ``n_samples`` samples
    (``best_estimator_``, ``refit_time_``, ``weights_``), a
    :class:`GridEdgeWarning` when the choice is on the edge of a grid, and
    a ``ConvergenceWarning`` naming the path points that stopped short of
    ``tol`` (``point`` says what a point is).
    """
    name = type(est).__name__
    n_s = len(setup.splits)
    forms = setup.forms or [({}, setup.form, setup.n_paths)]
    formulations = [params for params, _, _ in forms]
    n_c = Cs.size
    all_folds = []
    guides = {}
    factor = _halving_factor(est, len(forms))
    total = n_s * n_c * sum(n_paths for _, _, n_paths in forms)

    def where_of(f):
        params, _, n_paths = forms[f]
        tag = _label(params) if len(forms) > 1 else ""

        def where(k):
            labels = setup.labels(k)
            if len(labels) != n_paths:  # one shared path of the pairs
                labels = [f"fold {k + 1} of {n_s}"]
            return [f"{lab} {tag}".strip() for lab in labels]

        return where

    with TaskProgress(plan.verbose, name, total, "path point") as progress:
        def done_of(f, n_cs):
            n_paths = forms[f][2]

            def done(k, fold):
                PointTicker.rest(progress, (f, k), n_paths * n_cs, f"fold {k + 1} of {n_s}",
                                 fold_summary(fold[1]))

            return done if progress.on else None

        def tick_of(f, k):
            return PointTicker(progress, (f, k)) if progress.on else None

        if factor is not None:
            scores, fit_time, score_time, n_calls, paths, halving = _halving_search(
                est, Cs, setup, forms, progress, where_of, done_of, tick_of, factor)
        for f, (_, form, _) in enumerate(forms if factor is None else ()):
            out_guide = []
            folds = _fit_folds(setup.bank, setup.targets, setup.bank_splits, setup.pairs, Cs,
                               form, est.n_jobs, where_of(f),
                               (lambda k, f=f: tick_of(f, k)) if progress.on else None,
                               done_of(f, n_c), est.client,
                               first_guide=_first_guide(formulations, f, guides),
                               out_guide=out_guide)
            guides[f] = out_guide[0]
            all_folds.append(folds)
    if factor is not None:
        set_cv_results(est, Cs, scores, fit_time, score_time, paths, formulations, n_calls,
                       halving)
        converged = np.concatenate([P["converged"][P["evaluated"]] for P in paths])
        return _finish_search(est, setup, plan, n_samples, formulations, converged, point)
    n_f = len(forms)
    scores = np.empty((n_f * n_c, n_s))
    fit_time = np.empty((n_f * n_c, n_s))
    score_time = np.empty((n_f * n_c, n_s))
    n_calls = np.empty((n_f * n_c, n_s))
    for f, folds in enumerate(all_folds):
        rows = slice(f * n_c, (f + 1) * n_c)
        for k, (decisions, stats) in enumerate(folds):
            fit_time[rows, k] = stats["fit_time"].sum(axis=1)
            n_calls[rows, k] = stats["n_oracle_calls"].sum(axis=1)
            for c in range(n_c):
                t0 = time.perf_counter()
                scores[f * n_c + c, k] = setup.score(k, decisions[c])
                score_time[f * n_c + c, k] = time.perf_counter() - t0
    set_cv_results(est, Cs, scores, fit_time, score_time, all_folds, formulations, n_calls)
    converged = np.concatenate([np.stack([s["converged"] for _, s in folds]).ravel()
                                for folds in all_folds])
    return _finish_search(est, setup, plan, n_samples, formulations, converged, point)


def _finish_search(est, setup, plan, n_samples, formulations, converged, point):
    """The refit at ``best_params_``, then the edge and convergence warnings."""
    name = type(est).__name__
    if plan.verbose:
        chosen = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in est.best_params_.items())
        write(f"[{name}] best {chosen}; refitting on all {n_samples} samples")
    t0 = time.perf_counter()
    est.best_estimator_ = setup.refit(dict(est.best_params_))
    est.refit_time_ = time.perf_counter() - t0
    est.weights_ = est.best_estimator_.weights_
    _edge_warnings(est, formulations, name)
    if not converged.all():
        bad = int((~converged).sum())
        warnings.warn(
            f"{name}: {bad} of {converged.size} path points {point} did "
            f"not reach the relative gap tol={plan.tol:g}; raise max_iter or loosen tol",
            ConvergenceWarning,
            stacklevel=6,
        )
    return est


#: The constraints of the search's own parameters (both CV estimators).
SEARCH_PARAMS = {
    "search": [Options(SEARCHES, help="how candidates are dropped between folds")],
    "factor": [Interval(numbers.Integral, 2, None, closed="left",
                        help="candidates kept per round: 1 in factor")],
}


class MKLClassifierCV(SharedClientMixin, ClassifierMixin, EstimatorCore, BaseEstimator):
    """Multiple kernel learning classifier with C and the formulation chosen by cross-validation.

    Scores every ``C`` of the grid ``Cs`` and every formulation of
    ``formulations`` (the norm ``p`` of the kernel weights, per-pair or
    shared weights) by cross-validation, as ``GridSearchCV(MKLClassifier(),
    [{"C": Cs, "p": [p], "multiclass": [m]} for each formulation], cv=cv)``
    does (by default with successive halving over the candidates, as
    ``HalvingGridSearchCV`` with the folds as the resource; ``search``),
    then refits :class:`MKLClassifier` with the best of them on all the
    data. By default the formulations are L1-MKL (sparse weights),
    Lp-MKL with ``p = 2`` (Kloft et al. 2011, eq. 2), ``p = inf`` (the SVM
    on the uniform sum of the kernels, the baseline MKL must beat) and,
    with more than two classes, L1 with one weight vector shared by all
    pairs. Four things make it much faster than the grid search, the first
    three with the same answers:

    * **one kernel bank.** The base kernels are evaluated once, on all
      training points, without normalisation. Every binary problem of every
      fold (one per pair of classes with more than two classes) reads its
      index block of that bank through a view carrying its own
      normalisation, computed on its own training points; the validation
      kernels are blocks of the same bank (validation rows, support-vector
      columns). Nothing is evaluated twice.
    * **a warm-started path over C.** In each fold the problems are solved
      for increasing ``C``, each from the previous solution: SMO from the
      previous dual vector scaled into the new box (the best feasible point
      on that ray), the outer method from the previous kernel weights, and
      the level and cutting-plane methods with the previous cuts, which
      stay valid lower bounds under a larger ``C``. Every point of the path
      still stops at a certified relative duality gap ``tol``, as
      :class:`MKLClassifier` does. Once no dual variable of a solution is
      at its bound ``C`` (hinge loss; a separable pair at large ``C``) a
      larger box changes nothing, and the point is carried over to the
      next ``C`` with its certificate and without an oracle call (the
      objective only grows with ``C``, so the lower bound holds, and the
      dual vector passes SMO's optimality test as before).
    * **folds that share their steps.** The first fold's path is solved
      alone; the others start from its weights at the first ``C`` and
      follow its steps from one ``C`` to the next (their training sets
      overlap), so the whole search has one cold start besides the refit.
      Every formulation runs this same search on the same bank; a finite
      ``1 < p < inf`` starts its first fold from the first fold of the
      nearest finite ``p > 1`` already searched (its weights at every
      ``C``), and ``p = inf`` costs one SVM per (fold, C, pair): its start,
      the uniform weights, is its optimum.
    * **successive halving over the candidates** (``search="halving"``,
      with several formulations). Every (formulation, ``C``) candidate is
      scored on the first fold; only the best third goes on to the next
      two folds, and the best third of those to the rest. Most candidates
      cost one fold instead of five; the chosen one is scored on every
      fold, and the refit is the same.

    Parameters
    ----------
    Cs : int or list of float, default=6
        The grid of ``C``. An int ``k``: ``k`` values log-spaced from
        ``1e-2`` to ``1e3`` (6: one per decade). Duplicates are dropped and
        the values sorted (``Cs_``).
    cv : int, cross-validation splitter or iterable, default=5
        As in scikit-learn (``sklearn.model_selection.check_cv``): an int
        is that many stratified folds (``StratifiedKFold``, not shuffled);
        a splitter or an iterable of ``(train, test)`` index pairs is used
        as given. Without scikit-learn an int cuts each class into that many
        consecutive runs.
    formulations : "auto", None, dict or list of dict, default="auto"
        The formulations searched with ``C``, each a dict of
        :class:`MKLClassifier` parameters among ``"p"`` (``1 <= p <= inf``,
        see :class:`MKLClassifier`: 1 is L1-MKL, ``inf`` the uniform sum)
        and ``"multiclass"`` (``"ovo"`` or ``"shared"``); a missing key
        takes this estimator's value. ``"auto"``: ``[{"p": 1}, {"p": 2},
        {"p": inf}]`` at this estimator's ``multiclass``, plus ``{"p": 1,
        "multiclass": "shared"}`` with more than two classes and
        ``multiclass="ovo"``, when ``method="auto"`` and ``p``,
        ``elastic_net`` and ``groups`` are unset; with any of those set it
        is the estimator's own formulation alone. ``None``: ``C`` alone,
        with the estimator's own formulation (the search of earlier
        versions, exactly). A formulation the estimator's other parameters
        cannot run (``p = 2`` with ``method="mirror"``, ``p = 1`` with
        ``method="lp"`` or ``elastic_net``) is refused naming it.
    search : {"halving", "exhaustive"}, default="halving"
        How the (formulation, ``C``) candidates meet the folds when more
        than one formulation is searched. ``"halving"``: successive halving
        with the folds as the resource, as scikit-learn's
        ``HalvingGridSearchCV(factor=factor)`` does with samples. Every
        candidate is scored on the first fold (each formulation's path over
        every ``C``, exactly as the exhaustive search solves it); the best
        ``ceil(n / factor)`` of the ``n`` candidates by their mean score so
        far (ties: the earlier row) go on to the next folds, until the
        ``min(factor**r, n_splits)`` folds of round ``r`` reach all of
        them (5 folds, ``factor=3``: 24 candidates on fold 1, 8 on folds
        2-3, 3 on folds 4-5). A later round solves, per fold and
        formulation, one path over the surviving values of ``C`` only. The
        choice is among the candidates of the last round, scored on every
        fold. ``"exhaustive"``: every candidate on every fold (the search of
        earlier versions). With one formulation (``formulations=None``
        among them) the search is exhaustive either way: the warm path makes
        each further ``C`` of a fold cheap.
    factor : int, default=3
        With ``search="halving"``: one candidate in ``factor`` goes on to
        the next round, which scores ``factor`` times as many folds.
    scoring : str or callable, optional
        A scikit-learn scorer name or ``scorer(estimator, X, y)``; default
        accuracy. A callable receives a fold model with ``predict`` and
        ``decision_function`` whose ``X`` is the column of positions of
        the validation points (the scorers of scikit-learn only pass ``X``
        on, so they all work; a hand-written one must not read ``X``
        itself).
    kernels, method, loss, p, groups, elastic_net, tol, max_iter, inner_tol, normalize, standardize
        As for :class:`MKLClassifier`: every fold problem, and the refit,
        is the estimator's own formulation (the logistic loss, elastic-net
        MKL, ...), on the same warm-started path. With ``kernels="precomputed"``,
        ``fit`` takes the base kernels between the training samples, shape
        ``(n_kernels, n_samples, n_samples)``, which are then the one bank
        (see :doc:`/precomputed`), and ``predict`` the kernels between new
        and training samples.
    class_weight, probability, random_state
        As for :class:`MKLClassifier`: the class weights enter every fold's
        problems and the refit; ``probability`` and ``random_state`` are
        the refit's (its Platt sigmoids; :meth:`predict_proba` delegates to
        it).
    kernel_names, kernel_axis, psd
        As for :class:`MKLClassifier` (precomputed kernels: their names, the
        axis that holds them, ``(n, n, m)`` with ``kernel_axis=-1``, and the
        repair of kernels that are not PSD, done once on the one bank).
    weight_threshold, storage, cache_size, max_memory, callback
        As for :class:`MKLClassifier`. ``storage`` must have views of an
        index block (``"auto"``, ``"dense"`` or ``"on_the_fly"``; feature
        maps are refused).
    time_limit : float, optional
        Seconds for each point of a fold's path (one ``C``, one binary
        problem, or all pairs together with ``multiclass="shared"``); a
        point out of time keeps its best weights and counts as not
        converged (``path_converged_``, a :class:`ConvergenceWarning`). The
        refit gets ``time_limit`` as :class:`MKLClassifier` does, for the
        whole fit.
    multiclass : {"ovo", "shared"}, default="ovo"
        As for :class:`MKLClassifier`. With ``"shared"`` and more than two
        classes each fold's pairs are one problem with one weight vector,
        solved along one path over ``C``; the ``path_*`` attributes then
        have one column instead of one per pair.
    n_jobs : int, optional
        Folds fitted at the same time (through joblib), and the pairs of
        the final refit. ``None`` means 1 unless a
        ``joblib.parallel_backend`` context says otherwise.
    verbose : int, default=0
        Progress on standard error: 1 a line (or a tqdm bar) as each point
        of the path ends, one per (fold, C) and pair of classes (one per
        (fold, C) with ``multiclass="shared"``), with its rank of all, the
        elapsed time and an estimate of the time left, then the refit's own
        lines; 2 also a line per oracle call. Folds run in parallel report
        their points as each fold ends. See :doc:`/progress`.
    client : distributed.Client, optional
        A running Dask client: every fold but the first (its warm-started
        C path over all pairs) is a task named ``mklopt-fold-<k>``, and the
        kernel bank is scattered to the workers once. The first fold runs in
        this process: its path guides the others' starts. A fold whose worker dies is run again
        by Dask. The scores equal those without a client; the refit at the
        best ``C`` runs in this process. Cannot be combined with ``n_jobs``;
        clones share the client.

    Attributes
    ----------
    Cs_ : ndarray of shape (n_Cs,)
        The grid, increasing.
    cv_results_ : dict of ndarrays
        In ``GridSearchCV``'s format, one entry per (formulation, ``C``):
        the rows of ``formulations_[0]`` over ``Cs_``, then those of
        ``formulations_[1]``, ...; ``params`` (dicts of ``C``, ``p``,
        ``multiclass``), ``param_C``, ``param_p`` and ``param_multiclass``
        (masked arrays; only ``param_C`` with ``formulations=None``),
        ``split{k}_test_score``, ``mean_test_score``, ``std_test_score``,
        ``rank_test_score``, ``mean_fit_time``, ``std_fit_time`` (seconds
        of the path point in a fold, all pairs together),
        ``mean_score_time``, ``std_score_time``, and
        ``mean_n_oracle_calls`` (the SVM solves of the point in a fold, all
        pairs together; a shared point's joint call counts once). After a
        halving search (``search="halving"``, several formulations) a
        dropped candidate's ``split{k}_test_score`` is NaN on the folds it
        was not scored on, the means and standard deviations are over the
        folds scored, and two columns of ``HalvingGridSearchCV`` say how
        far each got: ``iter`` (the last round it ran in, from 0) and
        ``n_resources`` (the folds it was scored on); ``rank_test_score``
        ranks the candidates of later rounds first, so rank 1 is
        ``best_index_``.
    n_candidates_, n_resources_, n_iterations_ : list of int, list of int, int
        After a halving search only: the candidates of each round, the
        folds scored by the end of each round, and the number of rounds
        (as ``HalvingGridSearchCV``'s).
    best_index_ : int
        Index of the best row of ``cv_results_``; on ties the first (the
        earlier formulation, then the smaller ``C``, as ``GridSearchCV``
        gives on an increasing grid).
    best_params_ : dict
        ``cv_results_["params"][best_index_]``: ``C`` and the formulation's
        ``p`` and ``multiclass``, so that ``MKLClassifier(**best_params_)``
        with this estimator's other parameters is ``best_estimator_``.
    best_C_ : float
        ``best_params_["C"]``.
    best_score_ : float
        Mean cross-validated score of ``best_params_``.
    formulations_, best_formulation_ : list of dict, dict
        The formulations searched, each with its ``p`` and ``multiclass``
        filled in, and the chosen one (not set with ``formulations=None``
        or an ``"auto"`` that meant the estimator's own formulation).
    paths_ : list of dict
        Per formulation (as ``formulations_``, or one entry): the path
        statistics ``rel_gap``, ``value``, ``n_oracle_calls``,
        ``converged`` and ``fit_time`` of every (fold, C, path), arrays of
        shape (n_splits, n_Cs, n_paths). After a halving search also
        ``evaluated`` (bool, same shape), the points solved; the others are
        NaN (``rel_gap``, ``value``, ``fit_time``), 0 (``n_oracle_calls``)
        and False (``converged``).
    best_estimator_ : MKLClassifier
        Refitted with ``best_params_`` on all the data; ``predict``,
        ``decision_function`` and ``score`` delegate to it.
    refit_time_ : float
        Seconds of that refit.
    n_splits_ : int
    path_rel_gap_, path_value_, path_n_oracle_calls_ : ndarray of shape (n_splits, n_Cs, n_pairs)
        Of the chosen formulation (``paths_`` has them all), for every
        fold, ``C`` and binary problem: the certified relative
        duality gap, the objective ``J(w)`` and the SVM solves of the path
        point (including the one that evaluates the previous weights under
        the new ``C``; 0 for a point carried over from the previous ``C``).
    path_converged_ : ndarray of bool, same shape
        Whether the point reached ``tol``.
    classes_, n_features_in_, feature_names_in_
        As for :class:`MKLClassifier`.
    weights_ : ndarray
        ``best_estimator_.weights_``.
    kernel_names_, kernel_weights_
        ``best_estimator_``'s names of the kernels and table of their
        weights (see :doc:`/weights`).

    Warns
    -----
    GridEdgeWarning
        When the best ``C`` is the smallest or the largest of ``Cs`` (more
        than one value), or the best ``p`` is the smallest or the largest
        finite ``p > 1`` of ``formulations`` (``p = 1`` and ``p = inf`` are
        the ends of the range itself): the message names the grid and how
        to widen it.
    ConvergenceWarning
        When path points stopped short of ``tol``.

    See Also
    --------
    MKLClassifier : the estimator refitted with the chosen ``C`` and formulation.

    Notes
    -----
    *C across formulations.* With ``normalize="diagonal"`` every base
    kernel has a unit mean diagonal; the combined kernel ``sum_k theta_k
    K_k`` has mean diagonal ``sum_k theta_k``: 1 for L1 (the simplex), up
    to ``m^(1 - 1/p)`` for Lp and ``m`` (the number of kernels) for
    ``p = inf``, the plain sum. So ``p = inf`` at ``C`` is the SVM on the
    uniform average ``sum_k K_k / m`` at ``C m``; one ``Cs`` grid serves
    all formulations because it spans five decades.

    *Standardisation.* With ``standardize`` on (the default for the named
    kernel grids) the features are standardised once, with the mean and
    standard deviation of all the training data, before the bank is built:
    one bank needs one feature scaling. ``GridSearchCV`` around
    :class:`MKLClassifier` standardises each fold with its own training
    part instead, so its fold problems differ slightly and its scores may
    differ by a validation sample here and there. With ``standardize=False``
    (the default for a list of kernel specs) the fold problems are exactly
    those of the grid search.

    *Agreement with the grid search.* Both certify every fold problem to a
    relative gap ``tol``; two certified solutions of one problem can still
    classify a validation point near the boundary differently. So the
    chosen ``C`` is the grid search's wherever their scores are further
    apart than those few points; tighten ``tol`` to narrow that margin.

    *Not passed through.* ``client`` here runs the folds on a cluster (the
    bank is scattered to its workers); the refit runs in this process.

    Examples
    --------
    >>> from mklopt import MKLClassifierCV, datasets
    >>> from mklopt.kernels import rbf, linear
    >>> X, y = datasets.load("sonar")
    >>> clf = MKLClassifierCV(Cs=[0.1, 1.0, 10.0], cv=3, kernels=[rbf(8.0), linear()],
    ...                       standardize=True).fit(X, y)
    >>> clf.best_C_ in clf.Cs_
    True
    >>> sorted(clf.cv_results_)[:3]
    ['iter', 'mean_fit_time', 'mean_n_oracle_calls']
    >>> sorted(clf.best_params_)
    ['C', 'multiclass', 'p']
    """

    _parameter_constraints = {
        "Cs": [Check(check_Cs, "an int >= 1 or a list of C values > 0", pass_name=False,
                     converts=True)],
        # scikit-learn's check_cv and check_scoring (or the fallbacks without
        # scikit-learn) check these where they are used, naming them.
        "cv": NO_VALIDATION,
        "scoring": NO_VALIDATION,
        "formulations": [Check(functools.partial(_check_formulations_of, ("p", "multiclass")),
                               "'auto', None or a list of dicts of 'p' and 'multiclass'")],
        **SEARCH_PARAMS,
        # Every parameter of MKLClassifier but C, which the grid replaces.
        **{k: v for k, v in MKLClassifier._parameter_constraints.items() if k != "C"},
    }

    def __init__(
        self,
        Cs=6,
        cv=5,
        scoring=None,
        kernels="all_features",
        method="auto",
        loss="hinge",
        p=None,
        groups=None,
        elastic_net=None,
        tol=1e-2,
        max_iter=500,
        inner_tol=None,
        normalize="diagonal",
        standardize="auto",
        weight_threshold=1e-6,
        time_limit=None,
        storage="auto",
        cache_size=None,
        max_memory=None,
        callback=None,
        n_jobs=None,
        multiclass="ovo",
        verbose=0,
        client=None,
        class_weight=None,
        probability=False,
        random_state=None,
        kernel_names=None,
        kernel_axis=0,
        psd="check",
        formulations="auto",
        search="halving",
        factor=3,
    ):
        self.Cs = Cs
        self.formulations = formulations
        self.search = search
        self.factor = factor
        self.cv = cv
        self.scoring = scoring
        self.kernels = kernels
        self.method = method
        self.loss = loss
        self.p = p
        self.groups = groups
        self.elastic_net = elastic_net
        self.tol = tol
        self.max_iter = max_iter
        self.inner_tol = inner_tol
        self.normalize = normalize
        self.standardize = standardize
        self.weight_threshold = weight_threshold
        self.time_limit = time_limit
        self.storage = storage
        self.cache_size = cache_size
        self.max_memory = max_memory
        self.callback = callback
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.multiclass = multiclass
        self.client = client
        self.class_weight = class_weight
        self.probability = probability
        self.random_state = random_state
        self.kernel_names = kernel_names
        self.kernel_axis = kernel_axis
        self.psd = psd

    def _estimator(self, C, **formulation):
        """The :class:`MKLClassifier` of this grid at ``C`` and a formulation's overrides."""
        params = {name: getattr(self, name) for name in _SHARED}
        params.update(formulation)
        return MKLClassifier(C=C, n_jobs=self.n_jobs, **params)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "best_estimator_")

    def fit(self, X, y, sample_weight=None):
        """Cross-validate every ``C`` of ``Cs``, then refit at the best one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes.
        sample_weight : float or array-like of shape (n_samples,), optional
            Per-sample weights, as for :meth:`MKLClassifier.fit`: every
            fold's problems and the refit take them (the fold scores are
            not weighted, as ``GridSearchCV``'s).

        Returns
        -------
        self

        Raises
        ------
        ValueError, TypeError
            On bad data or parameters (named), a fold whose training part
            has a single class, or a storage without views.
        KeyboardInterrupt
            On Ctrl-C (in the main thread): the search is one stoppable
            run, and a search stopped part way chooses nothing.
        """
        return run_search(self, X, y, sample_weight)

    def _search(self, X, y, sample_weight=None):
        """:meth:`fit`'s work, inside its stoppable run."""
        Cs = self._validate_params()["Cs"]
        name = type(self).__name__
        X_given, y_given = X, y
        check_estimator_client(self.client, self.n_jobs)
        scorer = _scorer(self.scoring)
        # the first formulation's estimator: the search's checks and its one bank
        first = resolve_formulations(self, 2)[0]
        base = self._estimator(float(Cs[0]), **first)
        if is_precomputed(self.kernels):
            if self.standardize not in ("auto", False):
                raise ValueError(
                    f"standardize={self.standardize!r} has no features to scale with "
                    "kernels='precomputed'; leave it 'auto' or False"
                )
            K = kernels_first(X, self.kernel_axis, "X", n_samples=_n_labels(y))
            n = K[0].shape[0]
            y = check_y(y, n, name)
            check_kernel_names(self.kernel_names, len(K), self.kernels)
            # the one bank: the user's raw matrices (repaired once, in a copy, by psd)
            bank = precomputed_bank(K, n, psd=self.psd)
            plan_X = np.empty((0, bank.n_kernels))
            plan = prepare_formulation(base, plan_X, first)
            X = np.zeros((n, 1))  # what the splitters see: only the number of samples
            n_features = n
        else:
            check_feature_kernel_inputs(self)
            check_feature_names(self, X, reset=True)
            if hasattr(self, "feature_names_in_"):
                base.feature_names_in_ = self.feature_names_in_  # specs may name columns
            X, y = check_X_y(X, y, name)
            n_features = X.shape[1]
            if resolve_standardize(self.standardize, self.kernels):
                mean, scale = _scaling(X)
                Xs = (X - mean) / scale
            else:
                Xs = X
            plan_X = Xs
            # the rules that tie the parameters together
            plan = prepare_formulation(base, Xs, first)
            check_exact_storage(name, self.storage)
        classes, y_idx = class_indices(y, name)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, y_idx.shape[0])
        # Each sample's box relative to C (class and sample weights), or 1.
        factors = sample_bounds(1.0, classes, y_idx, self.class_weight, sample_weight)
        if np.ndim(factors) > 0:
            check_sample_bounds(plan.entry, name)
        else:
            factors = None
        position = None
        if not is_precomputed(self.kernels):
            if classes.shape[0] > 2:
                # The samples class by class, as MKLClassifier holds its shared
                # bank: each (fold, pair) problem reads two contiguous ranges
                # of every bank row (see MKLBase._prepare_problems).
                order, position = class_order(y_idx)
                Xs = Xs[order]
            bank = one_bank(self, Xs, plan, classes.shape[0])
        splits = _splits(self.cv, X, y, y_idx)
        if position is None:
            bank_y, bank_splits = y_idx, splits
        else:
            # The folds in the bank's order: each training part ascending (so a
            # pair's rows are its first class's, then its second's), each
            # validation part in the order of the split (its decisions are
            # scored against y[test]).
            bank_y = y_idx[order]
            bank_splits = [(np.sort(position[tr]), position[te]) for tr, te in splits]
        pairs = list(combinations(range(classes.shape[0]), 2))
        # in the bank's order, as the problems' rows
        bank_factors = factors if factors is None or position is None else factors[order]

        def formulation(params):
            """What the paths of one formulation solve (its own plan: method, p, shared)."""
            est, fplan = formulation_plan(self, base, plan, plan_X, Cs, params)
            form = _Formulation(self.loss, fplan.shared, self.normalize, fplan.new_method,
                                _StopFactory(est, fplan, self.time_limit), fplan.inner_tol,
                                fplan.threshold, self.callback, fplan.verbose, name,
                                fplan.entry, factors=bank_factors)
            return params, form, 1 if fplan.shared and len(pairs) > 1 else len(pairs)

        forms = [formulation(params)
                 for params in resolve_formulations(self, classes.shape[0])]
        form = forms[0][1]
        n_s = len(splits)

        def labels(k):
            fold = f"fold {k + 1} of {n_s}"
            if len(pairs) == 1:
                return [fold]
            return [f"{fold}, {pair_label(classes, i, j)}," for i, j in pairs]

        def score(k, decisions):
            test = splits[k][1]
            return scorer(_FoldModel(classes, decisions), np.arange(test.size)[:, None],
                          y[test])

        def refit(params):
            refit = self._estimator(**params)
            # The refit reads the kernels of all points from the one bank too,
            # where a direct fit would build this same bank (more than two
            # classes, or precomputed kernels); its model is the direct fit's.
            refit._given_bank = bank
            refit._given_position = position
            try:
                return refit.fit(X_given, y_given, sample_weight=sample_weight)
            finally:
                del refit._given_bank, refit._given_position

        setup = SearchSetup(bank, bank_y, splits, bank_splits, pairs, form, score, refit,
                            labels, forms[0][2], forms)
        search(self, Cs, setup, plan, y.shape[0], point="(fold, C, pair)")
        self.classes_ = classes
        self.n_features_in_ = n_features
        return self

    def __sklearn_tags__(self):
        # Pairwise input: scikit-learn's splitters cut rows and columns of X.
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = is_precomputed(self.kernels)
        return tags

    # ---- delegation to the refitted estimator ---------------------------------
    def _best(self):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_

    def decision_function(self, X):
        """``best_estimator_.decision_function(X)``."""
        return self._best().decision_function(X)

    def pairwise_decision_function(self, X):
        """``best_estimator_.pairwise_decision_function(X)``."""
        return self._best().pairwise_decision_function(X)

    def predict(self, X):
        """``best_estimator_.predict(X)``."""
        return self._best().predict(X)

    @property
    def predict_proba(self):
        """``best_estimator_.predict_proba`` (``probability=True``, or the logistic loss)."""
        if hasattr(self, "best_estimator_"):
            return self.best_estimator_.predict_proba
        # before fit: there when the refit will have it
        return self._estimator(1.0).predict_proba

    @property
    def predict_log_proba(self):
        """``best_estimator_.predict_log_proba``."""
        if hasattr(self, "best_estimator_"):
            return self.best_estimator_.predict_log_proba
        return self._estimator(1.0).predict_log_proba

    def combined_kernel(self, X, Y=None, pair=None):
        """``best_estimator_.combined_kernel(X, Y, pair)``: the refit's learned kernel."""
        return self._best().combined_kernel(X, Y, pair=pair)

    @property
    def kernel_(self):
        """``best_estimator_.kernel_``: the refit's learned kernel as a function."""
        return self._best().kernel_

    @property
    def kernel_names_(self):
        """``best_estimator_.kernel_names_``."""
        return self._best().kernel_names_

    @property
    def kernel_weights_(self):
        """``best_estimator_.kernel_weights_``: the refitted weights as a table."""
        return self._best().kernel_weights_

    def score(self, X, y, sample_weight=None):
        """``best_estimator_.score(X, y)``: mean accuracy.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        float
        """
        return self._best().score(X, y, sample_weight=sample_weight)


class _StopFactory:
    """A fresh stopping criterion per path point, the one :class:`MKLClassifier` uses.

    With a ``time_limit`` each point gets its own budget of that many
    seconds (the estimator's deadline is for one whole fit).
    """

    def __init__(self, estimator, plan, time_limit=None):
        self.estimator = estimator
        self.plan = plan
        self.time_limit = time_limit

    def __call__(self):
        if self.time_limit is None:
            return self.estimator._stop(self.plan)
        return (DualityGap(self.plan.tol) | MaxIter(self.plan.max_iter)
                | TimeLimit(float(self.time_limit)))
