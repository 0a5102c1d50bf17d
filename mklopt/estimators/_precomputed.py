"""``kernels="precomputed"``: fitting and predicting from kernel matrices the user has.

Semantics follow scikit-learn's ``SVC(kernel="precomputed")``, with one
axis more for the base kernels:

* ``fit(X, y)``: ``X`` of shape ``(n_kernels, n_samples, n_samples)``, the
  base kernels between the training samples (an array, a memory map or a
  list of matrices; checked for shape, finiteness, symmetry and positive
  semi-definiteness, errors naming ``X``);
* ``predict(X)``: ``X`` of shape ``(n_kernels, n_test, n_samples)``, the
  same kernels between new samples and all the training samples.

The kernels are held in one raw bank (:meth:`KernelBank.from_matrices`,
without copying an array or memory map); every one-vs-one pair reads its
index block through a view with its own normalisation, and keeps the
indices of its support vectors into the training samples, which is all
prediction needs. Every formulation of :class:`MKLClassifier` runs on
them: the hinge and logistic losses, one-vs-one or shared kernel weights
(one problem over all pairs' views), elastic-net MKL.
:class:`~mklopt.KernelStack` presents such stacks
samples first, for scikit-learn's cross-validation.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .._parallel import parallel_map
from ..driver import solve
from ..kernels import KernelBank
from ..kernels.stack import KernelStack, PrecomputedKernel, _as_stack
from ..oracles import CompositeOracle
from ._checks import check_y
from ._losses import method_for, pair_offset
from ._ovo import (
    class_indices,
    mean_weights,
    pair_label,
    pair_rows,
    relatives,
    star_parents,
    waves,
)
from ._progress import TaskProgress, call_lines, labelled, run_summary

__all__ = [
    "PRECOMPUTED",
    "PrecomputedKernel",
    "PrecomputedExpansion",
    "is_precomputed",
    "precomputed_bank",
    "check_test_kernels",
    "fit_precomputed",
]

PRECOMPUTED = "precomputed"


def is_precomputed(kernels):
    """Whether an estimator's ``kernels`` parameter is ``"precomputed"``."""
    return isinstance(kernels, str) and kernels == PRECOMPUTED


def precomputed_specs(n_kernels):
    """One :class:`PrecomputedKernel` per kernel of the stack."""
    return [PrecomputedKernel(k) for k in range(int(n_kernels))]


def precomputed_bank(X, n_samples=None, name="X"):
    """The raw bank of training kernels ``X`` (no copy of an array or memory map).

    Raises
    ------
    ValueError, TypeError
        Naming ``X``: not a stack of square matrices, a sample count other
        than ``n_samples``, NaN/inf, a non-symmetric or indefinite kernel.
    """
    K = _as_stack(X, name)
    m = len(K)
    rows, cols = K[0].shape
    if rows != cols:
        raise ValueError(
            f"{name} must hold square kernel matrices, shape (n_kernels, n_samples, n_samples), "
            f"with kernels='precomputed'; got shape {(m, rows, cols)}"
        )
    if n_samples is not None and rows != n_samples:
        raise ValueError(
            f"{name} holds kernels between {rows} samples but y has {n_samples} labels"
        )
    try:
        return KernelBank.from_matrices(K, normalize=None, check=True)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} (precomputed kernels): {exc}") from None


def check_test_kernels(X, n_kernels, n_train, name="X"):
    """Validate kernels between new and training samples; return a :class:`KernelStack`.

    Raises
    ------
    ValueError
        When ``X`` is not ``(n_kernels, n_test, n_train)``.
    """
    K = _as_stack(X, name)
    m = len(K)
    n_test, cols = K[0].shape
    if m != n_kernels or cols != n_train:
        raise ValueError(
            f"{name} must have shape (n_kernels, n_test, n_train) = ({n_kernels}, n_test, "
            f"{n_train}): the {n_kernels} kernels between the new samples and the {n_train} "
            f"training samples; got shape {(m, n_test, cols)}"
        )
    return KernelStack(K)


class PrecomputedExpansion:
    """Decision function of one binary problem on precomputed kernels.

    ``f(x) = sum_a weights[a] * K_test[kernels[a]][x, support] @ coef + bias``,
    where ``weights`` already include the problem's normalisation of each
    kernel.

    Parameters
    ----------
    kernels : ndarray of int
        The kernels kept (weight above the threshold).
    weights : ndarray of float
        Their weights times their normalisation factors.
    support : ndarray of int
        Indices of the support vectors among the training samples.
    coef : ndarray of float
        ``alpha_i y_i`` on the support vectors.
    bias : float
    """

    def __init__(self, kernels, weights, support, coef, bias):
        self.kernels = np.asarray(kernels, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.support = np.asarray(support, dtype=np.int64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.bias = float(bias)

    def __call__(self, stack):
        mats = stack.kernels if isinstance(stack, KernelStack) else stack
        n_test = mats[0].shape[0]
        out = np.full(n_test, self.bias)
        if self.support.size == 0:
            return out
        for k, wk in zip(self.kernels, self.weights, strict=True):
            block = np.asarray(mats[k][:, self.support], dtype=np.float64)
            if not np.all(np.isfinite(block)):
                raise ValueError(f"X[{k}] (precomputed kernels) contains NaN or infinity")
            out += wk * (block @ self.coef)
        return out


def _model(bank, view, rows, y, w, alpha, bias, result, threshold):
    """The binary model of a solution on ``view`` (rows ``rows`` of ``bank``)."""
    from .mkl import _BinaryMKL

    w = np.asarray(w, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.float64)
    support = np.flatnonzero(alpha > 0.0).astype(np.int64)
    # In ascending training rows, whatever order the pair's points took.
    support = support[np.argsort(rows[support], kind="stable")]
    coef = alpha[support] * y[support]
    keep = np.flatnonzero(w > threshold * w.max())
    factors = bank.scales / view.scales
    predictor = PrecomputedExpansion(keep, w[keep] * factors[keep], rows[support], coef,
                                     float(bias))
    return _BinaryMKL(predictor=predictor, weights=w, support=support, dual_coef=coef,
                      bias=float(bias), result=result)


def _fit_pair(bank, rows, y, normalize, plan, stop, callback, name="", start=None):
    """One binary problem on the view of ``rows``; its model keeps training indices.

    The oracle is the one the estimator's ``loss`` names in the task
    registry (``plan.entry``), as on features. ``start``: kernel weights to
    evaluate first (a neighbouring pair's, as :class:`MKLClassifier`
    starts its pairs).
    """
    view = bank.view(rows, normalize=normalize)
    entry = plan.entry
    oracle = entry.make(view, y, C=plan.C, tol=plan.inner_tol)
    callback = call_lines(plan.verbose, name, oracle, callback)
    result = solve(oracle, method_for(entry, plan.new_method)(), stop=stop, callback=callback,
                   initial=start)
    return _model(bank, view, rows, y, result.weights, result.alpha, result.bias, result,
                  plan.threshold)


def _fit_shared(bank, all_rows, ys, normalize, plan, stop, callback):
    """All pairs as one problem with one weight vector (``multiclass="shared"``).

    As :class:`MKLClassifier`'s shared fit: the outer method runs against the
    :class:`~mklopt.oracles.CompositeOracle` of the pairs' SVM duals, then
    each pair is solved again at the joint weights from its own ``alpha``
    (already optimal there) for the offset of its decision function.
    """
    views = [bank.view(rows, normalize=normalize) for rows in all_rows]
    entry = plan.entry
    parts = [entry.make(v, y, C=plan.C, tol=plan.inner_tol) for v, y in zip(views, ys,
                                                                             strict=True)]
    oracle = CompositeOracle(parts)
    result = solve(oracle, method_for(entry, plan.new_method)(), stop=stop, callback=callback)
    w = np.asarray(result.weights, dtype=np.float64)
    models = []
    for part, view, rows, y, a in zip(parts, views, all_rows, ys, oracle.split(result.alpha),
                                      strict=True):
        ans = pair_offset(part, w, a, plan.inner_tol)
        models.append(_model(bank, view, rows, y, w, ans.alpha, ans.bias, result,
                             plan.threshold))
    return models


def fit_precomputed(est, X, y):
    """``MKLClassifier.fit`` with ``kernels="precomputed"`` (see the module notes)."""
    name = type(est).__name__
    if est.standardize not in ("auto", False):
        raise ValueError(
            f"standardize={est.standardize!r} has no features to scale with "
            "kernels='precomputed'; leave it 'auto' or False"
        )
    if est.client is not None:
        raise ValueError("client cannot be combined with kernels='precomputed'")
    K = _as_stack(X, "X")
    n = K[0].shape[0]
    y = check_y(y, n, name)
    given = getattr(est, "_given_bank", None)
    # MKLClassifierCV's refit hands over the bank it checked and used.
    bank = precomputed_bank(K, n) if given is None else given
    classes, y_idx = class_indices(y, name)
    # The plan reads only the number of kernels from its input's columns.
    plan = est._prepare_fit(np.empty((0, bank.n_kernels)))
    pairs = np.array(list(combinations(range(classes.shape[0]), 2)), dtype=np.int64)
    # Class by class, as MKLClassifier orders the pairs' rows of a shared
    # bank: the same problems, point for point, as a fit on features.
    all_rows = pair_rows(y_idx, pairs, by_class=True)
    ys = [np.where(y_idx[rows] == j, 1.0, -1.0) for rows, (_, j) in zip(all_rows, pairs)]
    # time_limit: each problem gets an equal share of the time left (est._stop)
    plan.pairs_left = 1 if plan.shared else len(pairs)

    def label(k):
        return "" if len(pairs) == 1 else pair_label(classes, *pairs[k])

    if plan.shared and len(pairs) > 1:
        models = _fit_shared(bank, all_rows, ys, est.normalize, plan, est._stop(plan),
                             est.callback)
    else:
        # As MKLClassifier: each pair starts from the mean weights of the
        # pairs of earlier waves sharing a class, fixed by the waves whatever
        # n_jobs, so that parallel fits give the serial model.
        parents = star_parents(np.asarray(pairs)) if len(pairs) > 1 else None
        models = [None] * len(pairs)

        def tasks(wave):
            for k in wave:
                done = [m is not None for m in models]
                starts = [] if parents is None else relatives(pairs, parents, done, k)
                start = mean_weights([models[q] for q in starts]) if starts else None
                yield (label(k), bank, all_rows[k], ys[k], est.normalize, plan, est._stop(plan),
                       est.callback, name, start)

        with TaskProgress(plan.verbose, name, len(pairs),
                          "problem" if len(pairs) == 1 else "pair") as progress:
            for wave in waves(parents, len(pairs)):

                def done(i, model, wave=wave):
                    progress.advance(label(wave[i]) or "the binary problem",
                                     run_summary(model.result))

                fitted = parallel_map(labelled(_fit_pair), tasks(wave), est.n_jobs,
                                      n_tasks=len(wave), on_done=done if progress.on else None)
                for k, model in zip(wave, fitted, strict=True):
                    models[k] = model
    est.classes_ = classes
    est.n_features_in_ = n  # as SVC(kernel="precomputed"): the training samples
    est.scaler_mean_ = est.scaler_scale_ = None
    est.pairs_ = pairs
    est.models_ = models
    est._finish_fit(plan, models, all_rows)
    return est
