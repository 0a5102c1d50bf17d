"""Multiple kernel learning classifier (scikit-learn compatible)."""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass
from functools import partial
from itertools import combinations

import numpy as np

from .._constraints import Boolean, Options
from .._interrupt import fit_run
from .._policy import INNER_TOL_MAX, default_inner_tol
from ..driver import solve
from ..kernels import KernelBank, KernelExpansion
from ..kernels.factory import shared_storage, storage_traits
from ..kernels.sharded import ShardLostError
from ..methods import Chain, LevelBundle, estimator_params_of, get_method, method_names
from ..oracles import CompositeOracle
from ..stopping import DualityGap, MaxIter, TimeLimit
from ..tasks import get_task
from ._checks import check_is_fitted, check_y
from ._combined import CombinedKernelMixin
from ._core import CLASS_WEIGHT, MKL_PARAMS, POSITIVE, PRECOMPUTED_PARAMS, SEED, loss_of
from ._fit import ClassifierBase, TaskEstimator
from ._losses import (
    check_sample_bounds,
    gives_probabilities,
    method_for,
    oracle_entry,
    pair_offset,
)
from ._names import NamedKernels
from ._ovo import class_order, pair_label, set_pair_attributes
from ._params import KERNEL_GRIDS, KernelSpecs, check_estimator_client, resolve_kernel_specs
from ._precomputed import (
    PrecomputedExpansion,
    _n_labels,
    check_feature_kernel_inputs,
    check_kernel_names,
    check_test_kernels,
    is_precomputed,
    kernels_first,
    precomputed_bank,
    precomputed_specs,
)
from ._probability import kernel_sigmoid, pair_probabilities, pair_seeds
from ._progress import call_lines
from ._sklearn import ConvergenceWarning, SharedClientMixin
from ._weights import sample_bounds

__all__ = ["MKLBase", "MKLClassifier"]

# The default inner (SMO) tolerance follows tol (mklopt._policy.default_inner_tol).
# Below this tol the default method="level" runs as Chain("level", "active_set"):
# Level to a gap of _CHAIN_SWITCH, then the exact step certifies tol
# (see docs/composing.md). The SMO tolerance then follows the gap (the driver's
# inner tolerance), so it starts at INNER_TOL_MAX.
_CHAIN_BELOW = 1e-4
_CHAIN_SWITCH = 1e-2
#: ``method="auto"`` runs Level up to this many kernels and the kernel
#: working set (Level on a working set, the whole bank priced now and then)
#: above. On sonar with random Gaussian kernels the two cross between 1,000
#: and 3,000 kernels (Level 0.43 / 0.93 / 2.8 s at 1,000 / 3,000 / 10,000
#: kernels, the working set 0.49 / 0.54 / 0.93 s; added with commit 0b4aacb,
#: in docs/large.md, "Many kernels: a working set"; no results file has them).
AUTO_WORKING_SET_ABOVE = 2000


def resolve_method_name(method, n_kernels):
    """The registry name ``method="auto"`` stands for with ``n_kernels`` kernels.

    ``"level"`` up to :data:`AUTO_WORKING_SET_ABOVE` kernels, ``"working_set"``
    above; any other value is returned as it is.
    """
    if isinstance(method, str) and method == "auto":
        return "working_set" if n_kernels > AUTO_WORKING_SET_ABOVE else "level"
    return method


def _elastic_net_methods():
    """Registered methods that declare they take the estimators' ``elastic_net``."""
    return [n for n in method_names(oracle_kind="dual")
            if "elastic_net" in estimator_params_of(get_method(n))]


def _method_name_for(method, n_kernels, elastic_net, p=None):
    """The registry name to run.

    ``"auto"`` with ``elastic_net`` set is the analytic elastic-net step;
    ``"auto"`` with a norm ``1 < p <= inf`` is Lp-MKL's analytic step
    (``"lp"``); ``"auto"`` otherwise (``p`` None or 1: L1-MKL) is
    :func:`resolve_method_name`'s choice.
    """
    if elastic_net is not None and isinstance(method, str) and method == "auto":
        # Level and the working set only know the simplex; the analytic
        # step is the elastic-net method that needs no tuning.
        return "elastic_net"
    if p is not None and p != 1 and isinstance(method, str) and method == "auto":
        return "lp"
    return resolve_method_name(method, n_kernels)


@dataclass
class _Plan:
    """Validated parameters of one ``fit`` (scratch state, dropped after it)."""

    C: float
    tol: float
    max_iter: int
    inner_tol: float
    threshold: float
    deadline: float | None
    specs: list
    new_method: object
    #: One bank of raw kernels on all training points that every binary
    #: problem reads its block of (``KernelBank.view``), or None: each
    #: problem builds its own.
    bank: object = None
    #: Where each training sample sits in ``bank`` when the bank holds the
    #: samples class by class (see :meth:`MKLClassifier._pair_rows`), or
    #: None: in the order of ``X``.
    position: object = None
    #: ``X[order]`` is what the bank holds, when this fit builds it class by
    #: class (the inverse of ``position``), or None.
    order: object = None
    #: One weight vector for all binary problems (``multiclass="shared"``).
    shared: bool = False
    #: The estimator's ``verbose``, checked (see ``_progress.py``).
    verbose: int = 0
    #: Binary problems not yet started: each gets an equal share of the
    #: time left when it starts (see :meth:`MKLClassifier._stop`).
    pairs_left: int = 1
    #: The registry entry of the estimator's ``loss``, resolved once when
    #: the fit starts and carried to every problem (in other processes or
    #: machines too, where the user's registration may not have run).
    entry: object = None
    #: The estimator's values its oracle may take (``C``, ``epsilon``, ``nu``).
    values: dict = None
    #: The estimator's task entry (:class:`mklopt.tasks.TaskEntry`), carried
    #: to every problem as ``entry`` is.
    task: object = None
    #: Each training sample's weight in its box, ``C_i = C * bounds_i``
    #: (class and sample weights, see ``_weights.py``; for the one-class
    #: oracle, its ``sample_weight``), or None: no weights.
    bounds: object = None
    #: Fit Platt's sigmoid of every binary problem (``probability=True``).
    probability: bool = False
    #: The seed of each problem's internal CV folds, by its classes.
    seeds: dict = None

    def values_of(self, rows):
        """The oracle's values for the problem on training rows ``rows`` (its samples' boxes)."""
        values = dict(self.values)
        if self.bounds is not None:
            w = np.ascontiguousarray(self.bounds[rows])
            if "C" in values:
                values["C"] = values["C"] * w
            else:
                values["sample_weight"] = w
        return values


@dataclass
class _BinaryMKL:
    """What one binary problem keeps after fitting.

    ``predictor`` is a :class:`~mklopt.kernels.KernelExpansion` over the
    support vectors and the kernels whose weight survived pruning; the
    training bank is dropped after ``fit``.
    """

    predictor: KernelExpansion
    weights: np.ndarray
    support: np.ndarray
    dual_coef: np.ndarray
    bias: float
    result: object
    #: ``(A, B)`` of Platt's sigmoid ``P(+1 | f) = 1 / (1 + exp(A f + B))``
    #: (``probability=True``), or None.
    sigmoid: object = None


class _BestPoint:
    """A callback that remembers the best point of a sharded run, then calls the user's.

    A sharded run that loses a worker for good ends with
    :class:`~mklopt.kernels.ShardLostError`; this row (the lowest ``J``
    evaluated, with its weights) goes with the error so that the work done
    is not lost.
    """

    def __init__(self, callback):
        self.callback = callback
        self.row = None

    def __call__(self, row):
        if self.row is None or row.value < self.row.value:
            self.row = row
        if self.callback is not None:
            return self.callback(row)
        return None

    def lost(self, exc):
        """``exc`` as the fit's error, with the best point in its ``best`` attribute."""
        r = self.row
        where = ("before the first oracle call ended" if r is None else
                 f"after {r.n_oracle_calls} oracle calls; the best point so far (J = "
                 f"{r.value:.6g}, relative gap {r.rel_gap:.3g}) is the error's best "
                 "attribute, a mklopt.Progress row with its weights")
        err = ShardLostError(f"{exc} The fit stopped {where}.")
        err.best = r
        return err


def _run_attributes(models, rows=None):
    """Fitted attributes of MKL runs, one entry per pair (for :func:`set_pair_attributes`).

    ``rows[k]`` maps pair ``k``'s sample indices to the training ``X``
    (default: the identity, one problem on all of ``X``).
    """
    results = [mdl.result for mdl in models]
    if rows is None:
        supports = [mdl.support for mdl in models]
    else:
        supports = [r[mdl.support] for r, mdl in zip(rows, models, strict=True)]
    return {
        "weights_": np.vstack([mdl.weights for mdl in models]),
        "support_": supports,
        "dual_coef_": [mdl.dual_coef for mdl in models],
        "n_iter_": np.array([r.n_iter for r in results], dtype=np.int64),
        "n_oracle_calls_": np.array([r.n_oracle_calls for r in results], dtype=np.int64),
        "gap_": np.array([r.rel_gap for r in results], dtype=np.float64),
        "converged_": np.array([r.converged for r in results], dtype=bool),
        "history_": [r.history for r in results],
        "result_": results,
    }


#: Fitted attributes that describe a run (one per pair, or one for a shared fit).
_RUN_KEYS = ("n_iter_", "n_oracle_calls_", "gap_", "converged_", "history_", "result_")


def _problem_label(est, problem):
    """``"a vs b: "`` for a one-vs-one problem (its classes as given), else nothing."""
    if problem.classes is None:
        return ""
    return f"{pair_label(est.classes_, *problem.classes)}: "


def _check_oracle_kind(cls, label):
    """MKLClassifier runs methods of the SVM-dual oracle; boosting has its own estimator."""
    kind = getattr(cls, "oracle_kind", "dual")
    if kind != "dual":
        raise ValueError(
            f"method {label} works with the {kind} oracle, not the SVM dual; "
            "use mklopt.MKBoostClassifier for boosting"
        )


def _fresh_method(method):
    """A new, unstarted copy of a user's outer-method instance."""
    if hasattr(method, "get_params"):
        try:
            return type(method)(**method.get_params(deep=False))
        except TypeError:
            pass
    return copy.deepcopy(method)


class MKLBase(CombinedKernelMixin, TaskEstimator):
    """The MKL estimators' problem solver: one outer method run per problem, on one oracle.

    Shared by :class:`MKLClassifier`, :class:`~mklopt.MKLRegressor` and
    :class:`~mklopt.MKLOneClass` (and their cross-validated refits): the
    same parameters mean the same thing on each. A subclass gives the
    values its task's oracles take (``_oracle_values``: ``C``,
    ``epsilon``, ``nu``) and, through ``_task``, how ``y`` becomes
    problems and how a dual vector becomes expansion coefficients.
    """

    def _oracle_values(self):
        """The estimator's values the oracle factories may take (default: ``C``)."""
        return {"C": float(self.C)}

    # ---- parameter validation ----------------------------------------------
    def _resolve_specs(self, n_features):
        return resolve_kernel_specs(self.kernels, n_features, protocol="level2008",
                                    feature_names=getattr(self, "feature_names_in_", None))

    def _resolve_groups(self, specs):
        g = self.groups  # "features" or a list of lists (checked by the table)
        if isinstance(g, str):
            index = {}
            for k, spec in enumerate(specs):
                feats = getattr(spec, "features", None)
                key = None if feats is None else tuple(np.atleast_1d(feats).tolist())
                index.setdefault(key, []).append(k)
            groups = list(index.values())
        else:
            groups = [list(np.atleast_1d(gi).tolist()) for gi in g]
        return groups

    def _method_factory(self, specs):
        """Check how method, p, groups and elastic_net go together; return a method factory.

        Each of them on its own is checked by the constraint table.
        """
        enet = getattr(self, "elastic_net", None)
        if enet is not None:
            enet = float(enet)
        m = _method_name_for(self.method, len(specs), enet, self.p)
        # p = 1 is L1-MKL, what every method without a norm solves
        p = None if self.p is not None and self.p == 1 and not (
            isinstance(m, str) and "p" in estimator_params_of(get_method(m))) else self.p
        if p is None and self.p is not None and (enet is not None or self.groups is not None):
            raise ValueError(
                f"p={self.p!r} (L1-MKL) cannot be combined with "
                f"{'elastic_net' if enet is not None else 'groups'}, which solve another "
                "formulation; remove p"
            )
        if isinstance(m, str):
            cls = get_method(m)
            _check_oracle_kind(cls, repr(m))
            # the estimator parameters the method declares it takes
            accepted = estimator_params_of(cls)
            label = f"method={m!r}"
            kwargs = {}
            if "p" in accepted:
                if p is None:
                    raise ValueError(f"p is required with {label} (the Lp norm, 1 < p <= inf)")
                if p == 1:
                    raise ValueError(
                        f"p must be > 1 with {label}; p=1 is L1-MKL: use method='auto' "
                        "(or any method without a norm)"
                    )
                kwargs[accepted["p"]] = p
            elif p is not None:
                raise ValueError(
                    f"p={self.p!r} is only used by Lp-MKL (method='lp', or 'auto' with "
                    f"1 < p <= inf); remove it, or set p=1 (L1-MKL), for {label}"
                )
            if "groups" in accepted:
                if self.groups is not None:
                    kwargs[accepted["groups"]] = self._resolve_groups(specs)
            elif self.groups is not None:
                raise ValueError(
                    "groups is only used by the grouped formulation (method='mirror'); "
                    f"remove it for {label}"
                )
            enet_arg = accepted.get("elastic_net")
            if enet is not None:
                if enet_arg is None:
                    names = ", ".join(repr(n) for n in _elastic_net_methods())
                    raise ValueError(
                        f"elastic_net={self.elastic_net!r} needs a method that runs elastic-net "
                        f"MKL ({names}, or 'auto' for 'elastic_net'); {label} solves another "
                        "formulation"
                    )
                kwargs[enet_arg] = enet
            elif cls.name == "elastic_net":
                raise ValueError(
                    f"elastic_net is required with {label} (the mixing parameter lam in [0, 1])"
                )
            try:
                # The method owns its parameters' checks (1 < p <= inf, groups a partition).
                cls(**kwargs).check_params(n_kernels=len(specs))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"method {m!r}: {exc}") from None
            return lambda: cls(**kwargs)
        _check_oracle_kind(type(m), type(m).__name__)
        for name in ("p", "groups", "elastic_net"):
            if (p if name == "p" else getattr(self, name, None)) is not None:
                raise ValueError(
                    f"{name} cannot be combined with a method instance; set it on the "
                    f"instance itself (e.g. {type(m).__name__}({name}=...))"
                )
        return lambda: _fresh_method(m)

    def _n_specs_of(self, X):
        """The number of columns the kernel specs are resolved for."""
        return X.shape[1]

    def _prepare_fit(self, X):
        # The parameters, each checked by the constraint table when fit began.
        tol = float(self.tol)
        max_iter = int(self.max_iter)
        if self.inner_tol is None:
            inner_tol = default_inner_tol(tol)
        else:
            inner_tol = float(self.inner_tol)
        threshold = float(self.weight_threshold)
        deadline = None
        if self.time_limit is not None:
            # Wall-clock time, not perf_counter: with n_jobs the problems may
            # run on other machines, whose monotonic clocks differ.
            deadline = time.time() + float(self.time_limit)
        check_estimator_client(getattr(self, "client", None), getattr(self, "n_jobs", None))
        shared = getattr(self, "multiclass", "ovo") == "shared"
        specs = self._resolve_specs(self._n_specs_of(X))
        new_method = self._method_factory(specs)
        if shared and getattr(new_method(), "needs_problem", False):
            raise ValueError(
                "multiclass='shared' cannot run a method with the exact active-set step "
                "(it solves one dual with one equality constraint; the shared problem has "
                "one per pair); use e.g. method='level'"
            )
        if (_method_name_for(self.method, len(specs), self.elastic_net, self.p) == "level"
                and tol < _CHAIN_BELOW and not shared and deadline is None):
            # (With a time_limit Level runs alone: the exact step's QP is one
            # ECOS call, which no time limit can cut short.)
            # A tight tol: Level finds the active kernels, the exact step certifies.
            new_method = partial(Chain, LevelBundle(), "active_set",
                                 switch=max(_CHAIN_SWITCH, tol))

            if self.inner_tol is None:
                inner_tol = INNER_TOL_MAX
        values = self._oracle_values()
        return _Plan(values.get("C"), tol, max_iter, inner_tol, threshold, deadline, specs,
                     new_method, shared=shared, verbose=int(self.verbose),
                     entry=oracle_entry(self._task, self.loss), values=values,
                     task=get_task(self._task))

    # ---- class and sample weights (see _weights.py) -----------------------------
    def _prepare_weights(self, plan, targets, labels, sample_weight):
        """The boxes ``C_i = C s_i c_{y_i}`` from ``sample_weight`` and ``class_weight``."""
        class_weight = getattr(self, "class_weight", None)
        if labels is not None:
            bounds = sample_bounds(1.0, labels, targets, class_weight, sample_weight)
        else:
            bounds = sample_weight
        if bounds is not None and np.ndim(bounds) > 0:
            check_sample_bounds(plan.entry, type(self).__name__)
            plan.bounds = bounds
        return plan

    # ---- probabilities (see _probability.py) -----------------------------------
    def _calibrate(self, plan, bank, problem, w):
        """Platt's ``(A, B)`` of a solved binary problem on its learned kernel, or None."""
        if not plan.probability:
            return None
        # the kernels prediction keeps (weight_threshold), on the problem's points
        wk = np.where(w > plan.threshold * w.max(), w, 0.0)
        K = np.asarray(bank.combine(wk), dtype=np.float64)
        entry, tol = plan.entry, plan.inner_tol
        values = plan.values_of(problem.rows)
        C = values.pop("C")

        def make(b, y, C):
            return entry.make(b, y, **values, C=C, tol=tol)

        return kernel_sigmoid(make, K, problem.y, C, plan.seeds[tuple(problem.classes)])

    # ---- one problem ---------------------------------------------------------
    def _stop(self, plan):
        stop = DualityGap(plan.tol) | MaxIter(plan.max_iter)
        if plan.deadline is not None:
            # The limit is for the whole fit: a problem gets an equal share of
            # the time left when it starts (with n_jobs, problems that run at
            # once each get their share: they finish early, not late).
            share = (plan.deadline - time.time()) / max(1, plan.pairs_left)
            plan.pairs_left = max(1, plan.pairs_left - 1)
            stop = stop | TimeLimit(max(share, 1e-9))
        return stop

    def _shares_bank(self, n_problems):
        """Whether the problems read one bank (built here, or given by the CV refit).

        On features, for two problems or more without a ``client``, under
        any joblib backend too (threads, processes, Dask): the problems
        then solve the same problems, point for point, as a serial fit.
        """
        return not (n_problems < 2 or getattr(self, "client", None) is not None)

    def _prepare_problems(self, plan, X, problems, targets, labels):
        """One bank for all problems, the kernels of all points evaluated once, and its layout.

        Each problem then reads its index block through a view with its own
        normalisation (:meth:`KernelBank.view`), which gives the kernels of
        a bank built on the problem's points (with feature maps: maps fitted
        once on all points). Skipped with one problem and with a ``client``
        (each problem's kernels are sharded over the cluster).

        With a bank of a built-in storage the bank holds the training
        samples class by class, and pair ``(i, j)`` takes the rows of class
        ``i`` and then those of class ``j`` (each in the order of ``X``):
        its block of the bank is then two contiguous ranges of each row
        instead of rows scattered over all samples, so combining a row and
        the quadratic forms read whole cache lines. The problem is the same
        (its points in another order); the support vectors are kept in
        ascending training rows (:meth:`_model`). Storages registered by
        users and feature maps keep the order of ``X``.
        """
        plan.pairs_left = 1 if plan.shared else len(problems)
        if not self._shares_bank(len(problems)):
            return plan, problems
        given = getattr(self, "_given_bank", None)
        task = plan.task
        if given is not None:
            # MKLClassifierCV's refit: its one bank is this very bank (the
            # same standardised X, specs and storage), already evaluated, its
            # samples class by class too (or in the order of X, for
            # precomputed kernels: no position).
            plan.bank = given
            plan.position = getattr(self, "_given_position", None)
            return plan, task.problems(targets, labels, len(targets), True)
        if storage_traits(self.storage)[0] and labels is not None:
            plan.order, plan.position = class_order(targets)
            problems = task.problems(targets, labels, len(targets), True)
            X = X[plan.order]  # the samples class by class
        plan.bank = KernelBank.from_specs(
            X,
            plan.specs,
            storage=shared_storage(self.storage, X, plan.specs, self.max_memory),
            normalize=None,
            cache_size=self.cache_size,
            max_memory=self.max_memory,
        )
        return plan, problems

    def _parents(self, plan, task, problems):
        """Problems fitted one by one start from the weights of problems sharing a class.

        The optimal weights of pairs that share a class are often close,
        and a run started there certifies its gap in fewer oracle calls
        (on digits, 3.5 calls per pair from a parent's weights instead of
        9.4 cold). Each pair starts from the mean weights of its parent and
        of the other pairs of earlier waves that share a class with it. The
        start changes the path only, not the certificate. The parents are
        fixed before any pair runs, whatever ``n_jobs`` or the joblib
        backend, so a parallel fit gives the serial model bit for bit. The
        shared-weight formulation solves all pairs at once and has none.
        """
        return None if plan.shared else task.parents_of(problems)

    def _joint(self, plan):
        return self._fit_shared if plan.shared else None

    def _problem_bank(self, plan, X, rows):
        """The kernels of one problem: a view of the shared bank, or its own."""
        if plan.bank is not None:
            if plan.position is not None:
                rows = plan.position[rows]  # ascending: the problem's order is the bank's
            return plan.bank.view(rows, normalize=self.normalize)
        return KernelBank.from_specs(
            X,
            plan.specs,
            storage=self.storage,
            normalize=self.normalize,
            cache_size=self.cache_size,
            max_memory=self.max_memory,
            client=getattr(self, "client", None),
        )

    def _model(self, plan, bank, problem, w, alpha, bias, result):
        """The model of a solved problem.

        Its expansion coefficients are the task's (``alpha_i y_i`` for a
        classification dual, ``alpha_i`` for the others). On features the
        predictor is a kernel expansion over the support vectors' features;
        a bank of the user's matrices has no kernel functions, and its
        predictor reads the test kernels at the support vectors' training
        indices (:class:`PrecomputedExpansion`).
        """
        alpha = np.asarray(alpha, dtype=np.float64)
        coef = plan.task.coefficients(alpha, problem.y)
        support = np.flatnonzero(coef != 0.0).astype(np.int64)
        rows = problem.rows
        # Support vectors in ascending training rows, whatever order the
        # problem's points took (class by class, see _prepare_problems).
        support = support[np.argsort(rows[support], kind="stable")]
        if bank.functions is None:
            keep = np.flatnonzero(w > plan.threshold * w.max())
            factors = plan.bank.scales / bank.scales
            predictor = PrecomputedExpansion(keep, w[keep] * factors[keep], rows[support],
                                             coef[support], float(bias))
        else:
            predictor = KernelExpansion.from_solution(
                bank.functions, w, coef, float(bias), threshold=plan.threshold,
                support=support,
            )
        return _BinaryMKL(predictor=predictor, weights=w, support=support,
                          dual_coef=coef[support], bias=float(bias), result=result)

    def _oracle(self, plan, bank, problem):
        return plan.entry.make(bank, problem.y, **plan.values_of(problem.rows),
                               tol=plan.inner_tol)

    def _fit_problem(self, plan, X, problem, start=None):
        bank = self._problem_bank(plan, X, problem.rows)
        client = getattr(self, "client", None)
        try:
            oracle = self._oracle(plan, bank, problem)
            new_method = method_for(plan.entry, plan.new_method)
            callback = call_lines(plan.verbose, type(self).__name__, oracle, self.callback)
            best = _BestPoint(callback) if client is not None else None
            try:
                result = solve(oracle, new_method(), stop=self._stop(plan),
                               callback=callback if best is None else best,
                               initial=start)
            except ShardLostError as exc:
                raise best.lost(exc) from exc
            w = np.asarray(result.weights, dtype=np.float64)
            model = self._model(plan, bank, problem, w, result.alpha, result.bias, result)
            model.sigmoid = self._calibrate(plan, bank, problem, w)
        finally:
            if client is not None:
                bank.storage.close()  # the model keeps only the kernel functions
        return model

    def _fit_shared(self, tasks, on_done=None):
        """One joint run for all pairs (``multiclass="shared"``): one weight vector."""
        tasks = [t[1:] for t in tasks]  # no per-pair progress names: one joint run
        plan = tasks[0][0]
        client = getattr(self, "client", None)
        banks = []
        try:
            # Built inside the try: if one pair's bank fails, the sharded
            # banks built before it are still closed below.
            for _, Xp, problem in tasks:
                banks.append(self._problem_bank(plan, Xp, problem.rows))
            parts = [self._oracle(plan, bank, problem)
                     for bank, (_, _, problem) in zip(banks, tasks, strict=True)]
            # One w for all pairs: the outer method minimises sum_p J_p(w).
            oracle = CompositeOracle(parts)
            result = solve(oracle, method_for(plan.entry, plan.new_method)(),
                           stop=self._stop(plan),
                           callback=call_lines(plan.verbose, type(self).__name__, oracle,
                                               self.callback, where="shared"))
            w = np.asarray(result.weights, dtype=np.float64)
            models = []
            for part, bank, a, (_, _, problem) in zip(
                parts, banks, oracle.split(result.alpha), tasks, strict=True
            ):
                # The run keeps the best point's alpha but no per-pair bias:
                # re-solve each pair at w from its alpha (already optimal there,
                # so SMO stops at once) for the bias of its decision function.
                ans = pair_offset(part, w, a, plan.inner_tol)
                model = self._model(plan, bank, problem, w, ans.alpha, ans.bias, result)
                model.sigmoid = self._calibrate(plan, bank, problem, w)
                models.append(model)
            if on_done is not None:
                # The pairs end together, with the joint run.
                for k, model in enumerate(models):
                    on_done(k, model)
        finally:
            if client is not None:
                for bank in banks:
                    bank.storage.close()
        return models

    def _finish_fit(self, plan, models, problems):
        self.kernel_specs_ = list(plan.specs)
        self.n_kernels_ = len(plan.specs)
        results = [mdl.result for mdl in models]
        self.intercept_ = np.array([mdl.bias for mdl in models])
        attrs = _run_attributes(models, [p.rows for p in problems])
        shared = plan.shared and len(models) > 1
        if shared:
            # One joint run: its weights and record once, the pairs' SVMs per pair.
            results = results[:1]
            set_pair_attributes(
                self, **{k: attrs[k][:1] for k in ("weights_", *_RUN_KEYS)}
            )
            self.support_ = attrs["support_"]
            self.dual_coef_ = attrs["dual_coef_"]
        else:
            set_pair_attributes(self, **attrs)
        if not all(r.converged for r in results):
            if shared:
                r = results[0]
                what = "the shared problem of all pairs"
                bad = [f"{r.reason}, rel. gap {r.rel_gap:.3g}"]
            else:
                bad = [
                    f"{_problem_label(self, p)}{r.reason}, rel. gap {r.rel_gap:.3g}"
                    for p, r in zip(problems, results, strict=True)
                    if not r.converged
                ]
                what = ("the MKL problem" if len(models) == 1
                        else f"{len(bad)} of {len(models)} pairs")
            warnings.warn(
                f"{type(self).__name__} did not reach the relative gap tol={plan.tol:g} for "
                f"{what} ({'; '.join(bad)}); raise max_iter or time_limit, or loosen tol",
                ConvergenceWarning,
                stacklevel=4,
            )

    def fit(self, X, y=None, sample_weight=None):
        """Fit the kernel weights and the inner model of every problem (see the class).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite).
        y : array-like of shape (n_samples,)
            Targets, as the estimator's task reads them.
        sample_weight : float or array-like of shape (n_samples,), optional
            Per-sample weights ``>= 0``: each sample's box constraint scaled
            by its weight (see :doc:`/practical`).

        Returns
        -------
        self
        """
        self._validate_params()
        # Stoppable as a whole (time_limit, Ctrl-C), kernel construction included.
        with fit_run(type(self).__name__, self.time_limit, self.verbose):
            return self._fit_task(X, y, sample_weight)

    # ---- named weights (see _names.py) ----------------------------------------
    kernel_names_ = NamedKernels.kernel_names_
    kernel_views_ = NamedKernels.kernel_views_
    kernel_weights_ = NamedKernels.kernel_weights_


class MKLClassifier(SharedClientMixin, MKLBase, ClassifierBase):
    """Multiple kernel learning SVM classifier.

    Learns a combination ``K = sum_k w_k K_k`` of base kernels together with
    an SVM on it, by running an outer method of :mod:`mklopt.methods`
    against the SVM dual oracle :class:`mklopt.oracles.SVMDual` until the
    relative duality gap falls below ``tol`` (the stopping rule of the
    papers) or ``max_iter`` outer iterations have run.

    Parameters
    ----------
    kernels : "all_features", "grid", "precomputed", list of specs or dict, default="all_features"
        The base kernels. ``"all_features"`` is the MKBoost paper's 17
        kernels on all features (:func:`mklopt.kernels.grid` with
        ``protocol="mkboost2013"``: Gaussian widths ``2**-6 .. 2**7`` and
        polynomial degrees 1..3); on the bundled data sets it matches
        ``SVC`` where the larger grid below, whose many single-feature
        kernels an L1 combination picks sparsely, falls behind (see
        :doc:`/estimators`). ``"grid"`` is the grid of the level-method paper
        (:func:`mklopt.kernels.grid` with ``protocol="level2008"``: Gaussian
        widths ``2**-3 .. 2**6`` and polynomial degrees 1..3, on all features
        and on every single feature, i.e. ``13 * (n_features + 1)`` kernels).
        Otherwise a non-empty list of specs such as
        ``[rbf(1.0), rbf(4.0), poly(2), linear(features=[0])]``, whose
        ``features`` may be column indices, column names of the DataFrame
        given to ``fit`` or slices; or a dict ``{view: specs}`` of named
        views (:func:`mklopt.kernels.feature_views`), whose names name the
        kernels in ``kernel_names_``, ``kernel_weights_`` and the plots (see
        :doc:`/multiview`).
        ``"precomputed"``: ``fit`` takes the base kernels themselves, shape
        ``(n_kernels, n_samples, n_samples)``, and ``predict`` the kernels
        between new and training samples, ``(n_kernels, n_test,
        n_samples)`` (see :doc:`/precomputed`).
    method : str or outer-method instance, default="auto"
        ``"auto"`` runs ``"level"`` with up to 2,000 kernels and
        ``"working_set"`` (Level on a working set of kernels, the whole bank
        priced now and then, :class:`mklopt.methods.KernelWorkingSet`)
        with more, where pricing every kernel at every call would dominate.
        ``"level"`` (extended level method), ``"cutting_plane"`` / ``"silp"``,
        ``"subgradient"`` / ``"simplemkl"``, ``"mirror"`` (mirror descent,
        optionally on groups), ``"lp"`` (analytic Lp-MKL update),
        ``"elastic_net"`` (analytic elastic-net update, with
        ``elastic_net``), ``"spg"`` (spectral projected gradient), or any
        name in :data:`mklopt.methods.METHODS`; or an instance such as
        ``LevelBundle(lam=0.8)``, which is copied and started afresh for
        every binary problem (the instance you pass is never modified).
    C : float, default=1.0
        SVM box constraint, > 0. With the default ``normalize="diagonal"``
        every base kernel, and so every convex combination of them, has a
        unit mean diagonal on the training set, as a Gaussian kernel has;
        ``C`` then means what it means in ``sklearn.svm.SVC`` (see
        :doc:`/estimators`, "C and the normalisation").
    loss : str, default="hinge"
        The oracle, by its name in the registry of :mod:`mklopt.tasks`
        (task ``"classification"``; ``y`` is passed as -1/+1 per pair).
        ``"hinge"``: the SVM (:class:`~mklopt.oracles.SVMDual`).
        ``"logistic"``: kernel logistic regression,
        ``C sum_i log(1 + exp(-y_i (f(x_i) + b))) + |f|^2 / 2`` per kernel
        combination (:class:`~mklopt.oracles.LogisticDual`, whose ``tol``
        is ``inner_tol``), which gives :meth:`predict_proba` for two
        classes. Every training point is then a support vector.
    p : float, optional
        Norm of the kernel weights, ``1 <= p <= inf`` (Kloft et al. 2011's
        Lp-MKL, ``||theta||_p <= 1``): ``p = 1`` is L1-MKL (sparse weights on
        the simplex, what every method without a norm solves; the same as
        ``None``), ``1 < p < inf`` Lp-MKL, ``np.inf`` the sum of the kernels,
        the uniform-weight baseline. With ``method="auto"`` a ``p > 1`` runs
        ``"lp"`` (the analytic step, Kloft et al.'s eq. 2). Required with
        ``method="lp"`` (where ``p > 1``); a ``p > 1`` is refused with every
        method that has no ``p``. :class:`MKLClassifierCV`'s
        ``formulations`` chooses it by cross-validation.
    groups : list of lists of int or "features", optional
        Only with ``method="mirror"``: a partition of the kernel indices for
        the mixed (l-inf, l1) formulation, or ``"features"`` for one group
        per feature set of the kernel specs (e.g. all kernels on feature 3
        form one group). Without it mirror descent solves L1-MKL.
    elastic_net : float, optional
        Elastic-net MKL with mixing parameter ``lam`` in ``[0, 1]``: the
        block-norm regulariser ``((1 - lam) (sum_k ||f_k||)^2 + lam sum_k
        ||f_k||^2) / 2`` (:class:`~mklopt.domains.ElasticNet`), L1-MKL at
        ``lam = 0`` and the SVM on the sum of the kernels at ``lam = 1``.
        Runs on ``method="auto"`` (which then means ``"elastic_net"``, the
        interleaved analytic step,
        :class:`~mklopt.methods.analytic_lp.AnalyticElasticNet`),
        ``"elastic_net"`` (where it is required) or ``"spg"``; every other
        method is refused. The gap certificate is the elastic-net one.
    tol : float, default=1e-2
        Relative duality gap at which a run counts as converged. With
        ``method="level"`` (or ``"auto"`` resolving to it) and ``tol < 1e-4`` the run is
        ``Chain(LevelBundle(), "active_set", switch=1e-2)``:
        the level method finds
        the active kernels, then the exact active-set step
        (:class:`mklopt.methods.ActiveSet`) certifies ``tol`` with one oracle
        call over all kernels, which is far faster than the level method's
        tail (see :doc:`composing`). With a ``time_limit`` the level method
        runs alone, since the exact step's QP (one ECOS call) cannot be cut
        short.
    max_iter : int, default=500
        Outer iterations per binary problem (a SimpleMKL step with its line
        search counts as one).
    inner_tol : float, optional
        KKT tolerance of the SMO solver inside the oracle. Default
        ``min(1e-3, tol / 100)`` (1e-3 for the chain of a tight ``tol``, whose
        SMO tolerance follows the gap by itself): the value the oracle reports is accurate to
        about ``2 * inner_tol`` relatively, so the gap certificate stays
        meaningful at the level ``tol`` (see Notes).
    normalize : {"diagonal", "trace"} or None, default="diagonal"
        ``"diagonal"`` scales every base kernel to a unit mean diagonal
        (trace ``n_samples``) on the training set; ``"trace"`` to unit trace
        (the papers' choice, under which ``C`` acts as ``C / n_samples``
        would with unit diagonal); None uses the kernels as they are.
    standardize : {"auto", True, False}, default="auto"
        Standardise the features with the training mean and standard
        deviation before evaluating the kernels, at fit and at prediction
        time (``scaler_mean_``, ``scaler_scale_``; constant features are
        only centred). ``"auto"`` does so for the named grids, whose
        Gaussian widths assume standardised features, and not for a list
        of specs, which are evaluated on ``X`` as given.
    weight_threshold : float, default=1e-6
        At prediction time only kernels with
        ``w_k > weight_threshold * max(w)`` are evaluated; the others
        contribute less than this fraction and are skipped. In ``[0, 1)``.
    time_limit : float, optional
        Wall-clock budget in seconds for the whole ``fit`` (kernel
        construction and all one-vs-one problems together; each problem
        gets an equal share of the time left when it starts). It also stops
        an oracle call in progress, so ``fit`` returns at most 10 % or 2 s
        after it. When it runs out the best point so far is kept and a
        :class:`ConvergenceWarning` is issued; when no oracle call had
        finished, :class:`mklopt.stopping.NoPointError` is raised (see the
        user guide's page on long runs).
    storage : str or FeatureMap, default="auto"
        ``"auto"``, ``"dense"``, ``"on_the_fly"``, ``"products"``,
        ``"feature_map"``, a name registered with
        :func:`mklopt.kernels.register_storage`, or a feature map. Where the
        training kernels live (see :meth:`mklopt.KernelBank.from_specs`):
        ``"dense"`` stores all ``n_kernels * n_samples**2`` entries,
        ``"on_the_fly"`` stores only the features and computes kernel rows as
        the solver reads them, skipping kernels with zero weight,
        ``"products"`` stores each feature group's squared distances and
        inner products and applies the kernels to them when read (the dense
        values, bit for bit). ``"auto"`` keeps dense while it fits under
        ``max_memory``, so large training sets just work; the one bank that
        all one-vs-one pairs read is held as products when they are at most
        half as many matrices as the kernels (2 for the default's 17:
        :func:`mklopt.kernels.factory.shared_storage`; the cross-validation
        estimators only where a dense bank does not fit). Feature maps
        (``"feature_map"``, :func:`mklopt.kernels.nystroem`,
        :func:`mklopt.kernels.random_fourier`) train and predict on
        ``Phi_k Phi_k'``, exact for linear kernels, approximate for Gaussian ones.
    cache_size : float, optional
        Megabytes for the SMO solver's cache of kernel rows (libsvm's
        ``cache_size``); default 2048 or a quarter of the memory limit.
    max_memory : int, optional
        Bytes the kernel storage may use. By default 80 % of the memory
        available when ``fit`` starts; a storage that would not fit is
        refused with a ``MemoryError`` before anything is allocated, naming
        the option that would.
    callback : callable, optional
        ``callback(progress)`` after every oracle call with a
        :class:`mklopt.Progress` row; raise ``StopIteration`` to stop the
        current binary problem early.
    n_jobs : int, optional
        One-vs-one pairs fitted at the same time, through joblib (needed
        only for ``n_jobs`` other than None and 1). ``None`` means 1 unless
        a ``joblib.parallel_backend`` context says otherwise, ``-1`` all
        cores; inside ``joblib.parallel_backend("dask")`` the pairs run as
        tasks on a Dask cluster. Every pair runs the serial code on the
        same inputs; the model can differ only where BLAS rounds
        differently on another number of threads (the workers use one).
        In other processes a ``callback`` runs there, and warnings raised
        while solving a pair are not shown.
    client : distributed.Client, optional
        A running Dask client (``pip install "mklopt[dask]"``). Each binary
        problem's kernels are then sharded over its workers
        (``KernelBank.from_specs(..., client=client)``, see
        :doc:`/distributed`) and the workers' memory is freed when the
        problem is solved; the fitted model needs no cluster to predict.
        The answers equal the single-process ones. Cannot be combined with
        ``n_jobs``. Clones (``sklearn.base.clone``) share the client.
    multiclass : {"ovo", "shared"}, default="ovo"
        How more than two classes are learnt; both train one binary SVM per
        pair of classes and predict by their vote. ``"ovo"``: every pair
        learns its own kernel weights, independently (``weights_`` has one
        row per pair). ``"shared"``: one weight vector ``w`` for all pairs,
        minimising the sum ``J(w) = sum_p J_p(w)`` of the pairs' MKL
        objectives, solved as one problem by the outer method against
        :class:`mklopt.oracles.CompositeOracle` (``weights_`` has shape
        ``(n_kernels,)``; ``gap_``, ``n_iter_`` and the like describe the one
        joint run). ``"shared"`` solves the pairs one after the other at
        every step, so ``n_jobs`` does not apply to it, and it cannot run the
        exact active-set step (``method="active_set"`` or a chain ending in
        it): with ``tol < 1e-4`` the level method runs alone. With two
        classes both are the same problem.
    verbose : int, default=0
        Progress on standard error, as scikit-learn's ``verbose``: 0 prints
        nothing; 1 a line (a tqdm bar when tqdm is installed) as each
        binary problem ends, with its rank of all, the elapsed time and an
        estimate of the time left; 2 also a line per oracle call (value,
        relative gap, calls and, for kernels computed on the fly, kernel
        rows per second and row-cache hit rate). See :doc:`/progress`.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the hinge loss: sample ``i``'s box is
        ``C_i = C * class_weight[y_i]`` (times its ``sample_weight``), as
        ``SVC(class_weight=...)``. A dict maps labels to weights (classes
        not named get 1); ``"balanced"`` is ``n_samples / (n_classes *
        n_c)`` from the class counts of ``y``. Every pair uses the weights
        of the whole training set. The dual keeps its form with a box per
        sample, so the gap is certified as without weights. Only with a
        loss whose oracle takes per-sample bounds (the hinge loss; see
        :doc:`/practical`).
    probability : bool, default=False
        Fit each one-vs-one problem's Platt sigmoid on an internal 5-fold
        cross-validation (libsvm's procedure, the SVMs of the folds solved
        on the problem's learned kernel), so that :meth:`predict_proba`
        exists for every loss; more than two classes are coupled (Wu, Lin
        and Weng 2004). Five SVM solves per pair more. The logistic loss
        keeps its own probabilities with two classes.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the folds of ``probability=True`` (one seed per pair, drawn
        in pair order): the same int gives the same probabilities.
    kernel_names : list of str, optional
        With ``kernels="precomputed"``: one distinct name per kernel of the
        stack (``["ch0", "ch1", ...]``), used in ``kernel_names_``,
        ``kernel_weights_``, saved models and plots; default
        ``"precomputed[k]"``.
    kernel_axis : {0, -1}, default=0
        With ``kernels="precomputed"``: the axis of ``X`` that holds the
        kernels. 0 reads ``(n_kernels, n_samples, n_samples)`` (and lists
        of matrices, memory maps, :class:`~mklopt.KernelStack`); -1 (or 2)
        reads scikit-learn's samples-first layout ``(n_samples, n_samples,
        n_kernels)``, which ``cross_val_score`` and ``GridSearchCV`` split
        as they split ``SVC(kernel="precomputed")`` input (the estimator is
        tagged pairwise). ``predict`` takes the test kernels in the same
        layout. A stack that fits ``y`` only in the other layout is refused
        with a message naming ``kernel_axis``.
    psd : {"check", "clip", "shift", "trust"}, default="check"
        With ``kernels="precomputed"``: what to do with a kernel that is not
        positive semi-definite (see :mod:`mklopt.kernels.psd`).
        ``"check"`` refuses it, naming the kernel and its most negative
        eigenvalue (a Lanczos estimate per kernel, not a factorisation).
        ``"clip"`` projects the training kernel on the PSD cone,
        :math:`\\tilde K = V_+ \\Lambda_+ V_+^\\top`, and maps test kernels
        through the same projection, :math:`\\tilde K_{test} = K_{test} V_+
        V_+^\\top`. ``"shift"`` adds :math:`-\\lambda_{min} I` to the
        training kernel and uses test kernels as given (the added term is
        zero between distinct points). ``"trust"`` skips the test. The
        maps are kept in ``psd_maps_``. Kernels computed from features
        are PSD by construction and never tested.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; with two classes ``classes_[1]`` is the positive one.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str objects, shape (n_features,)
        Column names of ``X`` in ``fit``, set only when ``X`` is a table
        (a pandas DataFrame) whose column names are all strings; prediction
        then checks that its input has the same names in the same order.
    scaler_mean_, scaler_scale_ : ndarray of shape (n_features,) or None
        The standardisation applied to the features (None without one).
    kernel_specs_ : list
        The base kernels used (the resolved grid when ``kernels="grid"``).
    n_kernels_ : int
        Their number ``m``.
    weights_ : ndarray of shape (n_kernels,) or (n_pairs, n_kernels)
        Effective kernel weights found (one row per one-vs-one pair when
        there are more than two classes and ``multiclass="ovo"``; one vector
        for all pairs with ``multiclass="shared"``).
    pairs_ : ndarray of shape (n_pairs, 2)
        Class indices of each binary problem (the second is its +1 class).
    support_ : ndarray of int or list of them
        Indices (into the training ``X``) of the support vectors; one array
        per pair with more than two classes.
    dual_coef_ : ndarray or list of ndarrays
        ``alpha_i * y_i`` on the support vectors, aligned with ``support_``.
    intercept_ : ndarray of shape (n_pairs,)
        Bias of each binary decision function.
    n_iter_ : int or ndarray of shape (n_pairs,)
        Outer iterations run (one number for the joint run of
        ``multiclass="shared"``, as for the four attributes below).
    n_oracle_calls_ : int or ndarray of shape (n_pairs,)
        Oracle calls run (with ``multiclass="shared"`` each call solves
        every pair once).
    gap_ : float or ndarray of shape (n_pairs,)
        Final relative duality gap (of the summed objective when shared).
    converged_ : bool or ndarray of shape (n_pairs,)
        Whether the gap criterion was met.
    history_ : tuple of Progress or list of them
        One row per oracle call.
    result_ : Result or list of Result
        The full record of each run (see :class:`mklopt.Result`; a shared
        run's ``alpha`` is the pairs' dual vectors concatenated in pair
        order and its ``bias`` NaN, the pairs' biases being ``intercept_``).
    models_ : list
        Internal per-pair models used by ``predict``.

    See Also
    --------
    mklopt.solve : the driver this estimator runs.
    mklopt.MKBoostClassifier : boosting over the same kernels.

    Notes
    -----
    *Tolerances.* The certificate ``gap = J(w) - D(alpha)`` uses the value
    ``J(w)`` reported by SMO, which underestimates the exact one by at most
    about ``2 * inner_tol`` relatively. With the default
    ``inner_tol = tol / 100`` that error is 2 % of ``tol``; an
    ``inner_tol`` close to ``tol`` makes the gap unreliable (runs may stop
    too early, and bundle methods' cutting-plane models become inexact).

    *Multiclass.* With ``c > 2`` classes one binary MKL problem is solved
    per pair of classes (``c (c - 1) / 2`` of them, each on the samples of
    its two classes; with ``multiclass="ovo"`` each with its own kernel
    weights, with ``"shared"`` all with one), and ``predict`` takes a
    majority vote, breaking ties by the summed decision values. The base
    kernels are evaluated once on all training points and every pair reads
    its block of them, normalised on the pair's own points.

    *Prediction cost.* Each binary decision evaluates only the selected
    kernels between the new points and that problem's support vectors:
    ``O(n_new * n_support * n_selected * n_features)``, not the full
    bank.

    References
    ----------
    Z. Xu, R. Jin, I. King, M. R. Lyu. An extended level method for
    efficient multiple kernel learning. NIPS 2008.
    A. Rakotomamonjy, F. Bach, S. Canu, Y. Grandvalet. SimpleMKL.
    JMLR 9, 2008.
    S. Sonnenburg, G. Raetsch, C. Schaefer, B. Schoelkopf. Large scale
    multiple kernel learning. JMLR 7, 2006.
    M. Kloft, U. Brefeld, S. Sonnenburg, A. Zien. Lp-norm multiple kernel
    learning. JMLR 12, 2011.
    J. S. Nath et al. On the algorithmics and applications of a mixed-norm
    based kernel learning formulation. NIPS 2009.

    Examples
    --------
    >>> from mklopt import MKLClassifier, datasets
    >>> from mklopt.kernels import rbf, linear
    >>> X, y = datasets.load("sonar")
    >>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
    >>> clf = MKLClassifier(kernels=[rbf(1.0), rbf(8.0), linear()], method="simplemkl", C=100.0)
    >>> clf = clf.fit(X_train, y_train)
    >>> clf.weights_.shape
    (3,)
    >>> bool(clf.score(X_test, y_test) > 0.7)
    True
    """

    _parameter_constraints = {
        **MKL_PARAMS,
        **PRECOMPUTED_PARAMS,
        "kernels": [KernelSpecs(KERNEL_GRIDS, extra={"precomputed": "kernel matrices"})],
        "C": [POSITIVE],
        "loss": loss_of("classification"),
        "multiclass": [Options(("ovo", "shared"), help="kernel weights per pair of classes, "
                                                       "or one weight vector for all pairs")],
        "class_weight": CLASS_WEIGHT,
        "probability": [Boolean()],
        "random_state": SEED,
    }

    def __init__(
        self,
        kernels="all_features",
        method="auto",
        C=1.0,
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
        client=None,
        multiclass="ovo",
        verbose=0,
        class_weight=None,
        probability=False,
        random_state=None,
        kernel_names=None,
        kernel_axis=0,
        psd="check",
    ):
        self.kernels = kernels
        self.method = method
        self.C = C
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
        self.client = client
        self.multiclass = multiclass
        self.verbose = verbose
        self.class_weight = class_weight
        self.probability = probability
        self.random_state = random_state
        self.kernel_names = kernel_names
        self.kernel_axis = kernel_axis
        self.psd = psd

    # ---- probabilities (see _probability.py) ---------------------------------
    def _native_probabilities(self):
        """Whether the model's own sigmoid is its probability: a log-odds loss, two classes."""
        return (gives_probabilities("classification", self.loss)
                and len(getattr(self, "classes_", ())) <= 2)

    @property
    def predict_proba(self):
        """Class probabilities, shape (n_samples, n_classes), columns in ``classes_`` order.

        With ``probability=True``: each one-vs-one problem's Platt sigmoid
        (fitted on internal 5-fold cross-validation, as libsvm does) and,
        for more than two classes, pairwise coupling (Wu, Lin and Weng
        2004, their second method); see :doc:`/practical`. With a loss
        whose decision function is the log-odds (``loss="logistic"``) and
        two classes: the sigmoid of :meth:`decision_function`, with or
        without ``probability``. Otherwise the attribute does not exist, as
        for ``SVC(probability=False)``. As with ``SVC``, the most probable
        class can differ from :meth:`predict` near the boundary.
        """
        if not (self.probability or gives_probabilities("classification", self.loss)):
            raise AttributeError(
                f"predict_proba needs probability=True (Platt scaling), or a loss whose "
                f"decision function is the log-odds such as loss='logistic' (loss={self.loss!r})"
            )
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """``log(predict_proba(X))``; exists when :meth:`predict_proba` does."""
        self.predict_proba  # noqa: B018 (raises AttributeError when there is none)
        return lambda X: np.log(self._predict_proba(X))

    def _predict_proba(self, X):
        check_is_fitted(self, "models_")
        if self._native_probabilities():
            d = np.asarray(self.decision_function(X), dtype=np.float64)
            p1 = np.empty_like(d)
            # the sigmoid without overflow on either side
            pos = d >= 0.0
            p1[pos] = 1.0 / (1.0 + np.exp(-d[pos]))
            e = np.exp(d[~pos])
            p1[~pos] = e / (1.0 + e)
            return np.column_stack([1.0 - p1, p1])
        sigmoids = [m.sigmoid for m in self.models_]
        if any(sg is None for sg in sigmoids):
            if not self.probability:
                raise ValueError(
                    f"predict_proba of loss={self.loss!r} supports two classes; this model has "
                    f"{len(self.classes_)}. Fit with probability=True for the coupled "
                    "probabilities of the one-vs-one pairs"
                )
            raise ValueError("this model has no probability sigmoids; refit it with "
                             "probability=True")
        d = self.pairwise_decision_function(X)
        return pair_probabilities(d, np.asarray(sigmoids, dtype=np.float64), self.pairs_,
                                  len(self.classes_))

    def _prepare_weights(self, plan, targets, labels, sample_weight):
        plan = super()._prepare_weights(plan, targets, labels, sample_weight)
        # The logistic loss's own probabilities serve two classes; more are coupled.
        plan.probability = bool(self.probability) and not (
            gives_probabilities("classification", self.loss) and len(labels) == 2)
        if plan.probability:
            # The seeds of the pairs' internal CV folds, drawn in pair order,
            # so that pairs fitted in parallel get the serial loop's folds.
            pairs = list(combinations(range(len(labels)), 2))
            plan.seeds = dict(zip(pairs, pair_seeds(self.random_state, len(pairs)),
                                  strict=True))
        return plan

    # ---- the input kind: features, or precomputed kernels -----------------
    def _resolve_specs(self, n_features):
        if is_precomputed(self.kernels):
            # A precomputed fit plans with one column per kernel (_precomputed.py).
            return precomputed_specs(n_features)
        return super()._resolve_specs(n_features)

    def _n_specs_of(self, X):
        # A precomputed stack has one column per kernel, features their own.
        return len(X) if is_precomputed(self.kernels) else X.shape[1]

    def _check_fit_input(self, X, y):
        """Features, or with ``kernels="precomputed"`` the stack of training kernels."""
        if not is_precomputed(self.kernels):
            check_feature_kernel_inputs(self)
            return super()._check_fit_input(X, y)
        if self.standardize not in ("auto", False):
            raise ValueError(
                f"standardize={self.standardize!r} has no features to scale with "
                "kernels='precomputed'; leave it 'auto' or False"
            )
        if self.client is not None:
            raise ValueError("client cannot be combined with kernels='precomputed'")
        K = kernels_first(X, self.kernel_axis, "X", n_samples=_n_labels(y))
        check_kernel_names(self.kernel_names, len(K), self.kernels)
        return K, check_y(y, K[0].shape[0], type(self).__name__)

    def _standardizes(self):
        return not is_precomputed(self.kernels) and super()._standardizes()

    def _n_samples(self, X):
        return X[0].shape[0] if is_precomputed(self.kernels) else X.shape[0]

    def _n_features(self, X):
        # as SVC(kernel="precomputed"): the training samples
        return X[0].shape[0] if is_precomputed(self.kernels) else X.shape[1]

    def _problem_inputs(self, X, rows):
        # Precomputed kernels: every problem reads its view of the one bank.
        return None if is_precomputed(self.kernels) else super()._problem_inputs(X, rows)

    def _shares_bank(self, n_problems):
        # Always for precomputed kernels (the user's matrices, never copied).
        return is_precomputed(self.kernels) or super()._shares_bank(n_problems)

    def _prepare_problems(self, plan, X, problems, targets, labels):
        given = getattr(self, "_given_bank", None)
        if not is_precomputed(self.kernels) or given is not None:
            if given is not None and is_precomputed(self.kernels):
                self.psd_maps_ = given.psd_maps
            return super()._prepare_problems(plan, X, problems, targets, labels)
        # The bank holds the user's matrices in the order of X.
        plan.pairs_left = 1 if plan.shared else len(problems)
        plan.bank = precomputed_bank(X, X[0].shape[0], psd=self.psd)
        self.psd_maps_ = plan.bank.psd_maps
        problems = plan.task.problems(targets, labels, len(targets), True)
        return plan, problems

    def _decision_binary(self, model, X):
        return model.predictor(X)

    # ---- kernels="precomputed" (see _precomputed.py) --------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the kernel weights and the SVM of every pair of classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or the kernels
            With ``kernels="precomputed"``: the base kernels between the
            training samples, shape ``(n_kernels, n_samples, n_samples)``
            (an array, a memory map, a list of matrices or a
            :class:`~mklopt.KernelStack`).
        y : array-like of shape (n_samples,)
            Labels: any two or more distinct values.
        sample_weight : float or array-like of shape (n_samples,), optional
            Per-sample weights ``s_i >= 0``: sample ``i``'s box is ``C_i =
            C s_i c_{y_i}`` (with ``class_weight``'s ``c``), as
            ``SVC.fit(sample_weight=)``. A sample of weight 0 is left out.
            Only with a loss whose oracle takes per-sample bounds (the
            hinge loss). See :doc:`/practical`.

        Returns
        -------
        self
        """
        return super().fit(X, y, sample_weight=sample_weight)

    def _check_predict_input(self, X):
        if is_precomputed(self.kernels):
            check_is_fitted(self, "models_")
            return check_test_kernels(X, self.n_kernels_, self.n_features_in_,
                                      kernel_axis=self.kernel_axis,
                                      psd_maps=getattr(self, "psd_maps_", None))
        return super()._check_predict_input(X)

    def __sklearn_tags__(self):
        # Pairwise input: scikit-learn's splitters cut rows and columns of X.
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = is_precomputed(self.kernels)
        return tags
