"""The one fit of every estimator: a task's problems, solved with the strategies a fit takes.

:func:`fit_problems` solves the MKL problems a task makes of ``y``
(:class:`mklopt.tasks.TaskEntry`): one-vs-one pairs, one regression
problem, one one-class problem, or a user's. How they are solved is given
by three strategies, not by hooks of a base class:

* ``parents``: the problem each one starts its run from, fixed before any
  run (the task's :meth:`~mklopt.tasks.TaskEntry.parents_of`, or None);
  the problems then run in waves, each after its parents' wave, and a
  problem starts from ``start(models)`` of its parent and the class-mates
  fitted in earlier waves;
* ``n_jobs``: each wave's problems run as parallel tasks (threads,
  processes or any joblib backend, Dask's included); since the waves and
  the starts do not depend on ``n_jobs``, a parallel fit is the serial fit
  bit for bit;
* ``joint``: all problems solved together instead (one weight vector for
  all pairs, ``multiclass="shared"``).

:class:`TaskEstimator` is the estimators' ``fit`` around it: the input
checked once at the edge, the task's targets and problems, the
standardisation, the estimator's plan, then :func:`fit_problems`. The
classifier, the regressor, the one-class model and MKBoost fit through it,
on features and on precomputed kernels; the cross-validated estimators'
refit is one of these fits.
"""

from __future__ import annotations

import numpy as np

from .._parallel import parallel_map, task_names
from ..datasets import _scaling
from ..tasks import get_task
from ._checks import check_feature_names, check_is_fitted, check_X, check_X_y
from ._core import EstimatorCore
from ._ovo import mean_weights, relatives, waves
from ._params import resolve_standardize
from ._progress import TaskProgress, labelled, run_summary
from ._sklearn import BaseEstimator, ClassifierMixin, ClassifierScoreMixin
from ._tasks import pairs_of
from ._weights import check_sample_weight

__all__ = ["fit_problems", "TaskEstimator", "ClassifierBase"]


def _summary(model):
    result = getattr(model, "result", None)
    return "" if result is None else run_summary(result)


def fit_problems(problems, fit_one, args_of, *, parents=None, start=mean_weights, joint=None,
                 n_jobs=None, verbose=0, name=""):
    """The models of ``problems``, in their order.

    Parameters
    ----------
    problems : list of :class:`mklopt.tasks.Problem`
    fit_one : callable
        ``fit_one(*args_of(k)[, start]) -> model`` solves problem ``k``; it
        must not change shared state (with ``n_jobs`` it runs in other
        processes or on a Dask cluster, on copies).
    args_of : callable
        ``args_of(k) -> tuple``: the arguments of problem ``k``, made when
        it is about to run (a serial fit holds one problem's inputs at a
        time).
    parents : list of int, optional
        Each problem's warm-start parent (-1: none). With parents,
        ``fit_one`` receives one more argument: ``start(models)`` of the
        parent's and its fitted class-mates' models
        (:func:`~mklopt.estimators._ovo.relatives`), or None for a root.
    start : callable, default=:func:`~mklopt.estimators._ovo.mean_weights`
        What a problem starts from, given the models it starts from.
    joint : callable, optional
        ``joint(tasks, on_done) -> models`` solves all problems together
        from the argument tuples of every problem (each preceded by its
        name); used when there is more than one problem.
    n_jobs : int, optional
        Parallel problems within each wave (see :mod:`mklopt._parallel`).
    verbose : int
        Progress lines (``name`` is the estimator's).
    """
    n = len(problems)
    models = [None] * n
    pairs = pairs_of(problems) if parents is not None else None

    def tasks(order):
        for k in order:
            args = args_of(k)
            if parents is not None:
                fitted = [m is not None for m in models]
                starts = [models[q] for q in relatives(pairs, parents, fitted, k)]
                args = (*args, start(starts) if starts else None)
            yield (problems[k].name, *args)

    unit = "problem" if n == 1 else "pair" if problems[0].classes is not None else "problem"
    with TaskProgress(verbose, name, n, unit) as progress:
        def ended(order):
            def done(i, model):
                p = problems[order[i]]
                what = "the binary problem" if p.classes is not None else "the MKL problem"
                progress.advance(p.name or what, _summary(model))
            return done if progress.on else None

        if joint is not None and n > 1:
            # The same order as a wave's (largest first), so that the joint
            # problem sums its parts as the independent fits are dispatched.
            order = sorted(range(n), key=lambda k: -problems[k].rows.size)
            for k, model in zip(order, joint(list(tasks(order)), ended(order)), strict=True):
                models[k] = model
            return models
        # Each wave's problems are independent: with n_jobs (or a joblib
        # backend such as Dask) they run as parallel tasks, with the same
        # results. Largest first: the longest tasks then start early and the
        # short ones fill the gaps at the end (the makespan of this order is
        # within 4/3 of the best when cost grows with size). On a Dask
        # cluster the tasks are named after their problem.
        for wave in waves(parents, n):
            order = sorted(wave, key=lambda k: -problems[k].rows.size)
            names = (f"pair-{problems[k].classes[0]}-vs-{problems[k].classes[1]}"
                     if problems[k].classes is not None else f"problem-{k}" for k in order)
            with task_names(names):
                fitted = parallel_map(labelled(fit_one), tasks(order), n_jobs,
                                      n_tasks=len(order), on_done=ended(order))
            for k, model in zip(order, fitted, strict=True):
                models[k] = model
    return models


class TaskEstimator(EstimatorCore, BaseEstimator):
    """The ``fit`` every mklopt estimator shares: a task's problems through :func:`fit_problems`.

    A subclass names its task (``_task``, a name registered with
    :func:`mklopt.tasks.register_task`) and declares its parameter table
    (see :class:`~mklopt.estimators._core.EstimatorCore`). It implements

    ``_prepare_fit(self, X) -> plan``
        Check the rules that tie parameters together and return the plan
        of this fit (scratch state every problem receives).
    ``_fit_problem(self, plan, X, problem, *extra[, start]) -> model``
        Solve one :class:`~mklopt.tasks.Problem` (``X``: what
        ``_problem_inputs`` gives of the training input). It must not change
        ``self``. With warm-start parents (``_parents``) it receives the
        start last.
    ``_finish_fit(self, plan, models, problems)``
        Set the fitted attributes from the models.

    and may override

    ``_check_fit_input(self, X, y) -> (X, y)``, ``_standardizes(self)``,
    ``_n_features(self, X)``, ``_problem_inputs(self, X, rows)``
        The input kind (default: features, whose names are kept; a
        problem receives its rows of ``X``).
    ``_prepare_problems(self, plan, X, problems, targets, labels) -> (plan, problems)``
        Build what every problem reads (one kernel bank for all) and lay
        out their rows for it, once the problems are known.
    ``_prepare_weights(self, plan, targets, labels, sample_weight) -> plan``
        Turn the checked ``sample_weight`` (None, or one weight per
        sample) and any class weights into what the problems read
        (per-sample box constraints). The default refuses weights.
    ``_pair_extras(self, plan, n) -> list of tuples``
        Per-problem extra arguments drawn before any runs (seeds from one
        stream), so parallel fits get the serial ones.
    ``_parents(self, plan, task, problems)``, ``_joint(self, plan)``
        The strategies of :func:`fit_problems` (default: the task's parents,
        no joint solve).

    ``fit`` sets ``n_features_in_``, ``feature_names_in_`` (for a table
    with string column names), ``scaler_mean_``/``scaler_scale_`` (the
    training standardisation, None without) and ``models_``; with classes,
    ``classes_`` too.
    """

    _task = ""

    # ---- the input kind ------------------------------------------------------
    def _check_fit_input(self, X, y):
        """``(X, y)`` with ``X`` checked as features (their names kept)."""
        check_feature_names(self, X, reset=True)
        return check_X(X, type(self).__name__), y

    def _standardizes(self):
        return bool(getattr(self, "standardize", False))

    def _n_features(self, X):
        return X.shape[1]

    def _n_samples(self, X):
        return X.shape[0]

    def _problem_inputs(self, X, rows):
        """What a problem on ``rows`` receives of the training input (its rows)."""
        return np.ascontiguousarray(X[rows])

    # ---- strategies and hooks -------------------------------------------------
    def _prepare_fit(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit_problem(self, plan, X, problem, *extra):  # pragma: no cover - abstract
        raise NotImplementedError

    def _finish_fit(self, plan, models, problems):
        """Set estimator-specific fitted attributes (default: nothing)."""

    def _prepare_problems(self, plan, X, problems, targets, labels):
        return plan, problems

    def _prepare_weights(self, plan, targets, labels, sample_weight):
        if sample_weight is not None:
            raise TypeError(f"{type(self).__name__}.fit takes no sample_weight")
        return plan

    def _pair_extras(self, plan, n):
        return [()] * n

    def _parents(self, plan, task, problems):
        return task.parents_of(problems)

    def _joint(self, plan):
        return None

    # ---- the fit ----------------------------------------------------------------
    def _fit_task(self, X, y, sample_weight=None):
        """Fit ``self`` on ``(X, y)``: the one loop of every estimator (see the class).

        ``sample_weight`` (None, a number or one weight per sample) is
        checked here, at the edge, and handed to ``_prepare_weights``.
        """
        name = type(self).__name__
        task = get_task(self._task)
        X, y = self._check_fit_input(X, y)
        n_samples = self._n_samples(X)
        labels, targets = task.targets(y, n_samples, name)
        if self._standardizes():
            mean, scale = _scaling(X)
            X = (X - mean) / scale
        else:
            mean = scale = None
        plan = self._prepare_fit(X)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, n_samples)
        plan = self._prepare_weights(plan, targets, labels, sample_weight)
        problems = task.problems(targets, labels, n_samples, False)
        plan, problems = self._prepare_problems(plan, X, problems, targets, labels)
        extras = self._pair_extras(plan, len(problems))
        parents = self._parents(plan, task, problems)

        def args_of(k):
            p = problems[k]
            return (plan, self._problem_inputs(X, p.rows), p, *extras[k])

        models = fit_problems(problems, self._fit_problem, args_of, parents=parents,
                              joint=self._joint(plan), n_jobs=getattr(self, "n_jobs", None),
                              verbose=int(getattr(self, "verbose", 0)), name=name)
        if labels is not None:
            self.classes_ = labels
        if problems[0].classes is not None:
            self.pairs_ = pairs_of(problems)
        self.n_features_in_ = self._n_features(X)
        self.scaler_mean_, self.scaler_scale_ = mean, scale
        self.models_ = models
        self._finish_fit(plan, models, problems)
        return self

    def __sklearn_is_fitted__(self):
        return hasattr(self, "models_")


class ClassifierBase(ClassifierMixin, TaskEstimator):
    """The classifiers' base: the ``"classification"`` task and one-vs-one prediction.

    ``fit`` (:class:`TaskEstimator`) maps any labels to class indices and
    solves one binary problem per pair of classes (``y`` of a problem is
    -1/+1, its +1 class the pair's second); with two classes there is one
    pair, ``(0, 1)``, and ``classes_[1]`` is the +1 class, as in
    scikit-learn. A subclass implements ``_decision_binary(model, X)``
    too: the decision values of one problem's model, positive for its +1
    class. Fitted attributes set here: ``classes_`` and ``pairs_`` (ndarray
    of shape (n_pairs, 2), the class indices of each problem), besides those
    of :class:`TaskEstimator`.
    """

    _task = "classification"

    def _check_fit_input(self, X, y):
        """``(X, y)`` checked (features, their names kept)."""
        check_feature_names(self, X, reset=True)
        return check_X_y(X, y, type(self).__name__)

    def _standardizes(self):
        """Whether the features are standardised (the ``standardize`` rule: "auto" for grids)."""
        return resolve_standardize(getattr(self, "standardize", False),
                                   getattr(self, "kernels", None))

    def _decision_binary(self, model, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_predict_input(self, X):
        check_is_fitted(self, "models_")
        check_feature_names(self, X, reset=False)
        X = check_X(X, type(self).__name__, n_features=self.n_features_in_)
        mean = getattr(self, "scaler_mean_", None)
        if mean is not None:
            X = (X - mean) / self.scaler_scale_
        return X

    def pairwise_decision_function(self, X):
        """Decision values of every one-vs-one problem.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_pairs)
            Column ``k`` is the decision value of the problem
            ``pairs_[k] = (i, j)``: positive favours ``classes_[j]``.
        """
        X = self._check_predict_input(X)
        out = np.empty((X.shape[0], len(self.models_)))
        for k, model in enumerate(self.models_):
            out[:, k] = self._decision_binary(model, X)
        return out

    def decision_function(self, X):
        """Confidence scores.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the decision value, positive for ``classes_[1]``.
            More classes: one-vs-one votes per class plus a tie-break term in
            ``(-1/3, 1/3)`` (see :func:`ovo_vote`); ``argmax`` is the
            prediction.
        """
        d = self.pairwise_decision_function(X)
        return get_task(self._task).decisions(d, getattr(self, "pairs_", None), self.classes_)

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels taken from ``classes_`` (majority vote over the pairs when
            there are more than two classes).
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            return self.classes_[(d > 0).astype(np.int64)]
        return self.classes_[np.argmax(d, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Mean accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        float
        """
        return ClassifierScoreMixin.score(self, X, y, sample_weight=sample_weight)
