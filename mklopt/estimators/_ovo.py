"""One-vs-one classification: the fit loop over pairs of classes and the vote.

:class:`ClassifierBase` validates ``X`` and ``y``, maps any two labels to
-1/+1, and for more than two classes trains one binary problem per pair of
classes and predicts by majority vote, breaking ties with the summed
decision values, as the MKL papers do. A concrete classifier implements a
few hooks (see :class:`ClassifierBase`). :func:`set_pair_attributes` gives
the fitted attributes their "one pair or many" form.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from .._parallel import parallel_map, task_names
from ..datasets import _scaling
from ._checks import check_feature_names, check_is_fitted, check_X, check_X_y
from ._core import EstimatorCore
from ._params import resolve_standardize
from ._progress import TaskProgress, labelled, run_summary
from ._sklearn import BaseEstimator, ClassifierMixin, ClassifierScoreMixin
from ._weights import check_sample_weight

__all__ = ["ClassifierBase", "ovo_vote", "pair_label", "set_pair_attributes", "pair_values"]


def ovo_vote(decisions, pairs, n_classes):
    """Combine pairwise decision values into per-class scores.

    Parameters
    ----------
    decisions : ndarray of shape (n_samples, n_pairs)
        Decision value of each binary problem; positive favours the second
        class of the pair.
    pairs : ndarray of shape (n_pairs, 2)
        Class indices ``(i, j)``, ``i < j``, of each binary problem.
    n_classes : int
        Number of classes.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Number of votes of each class plus a tie-break term in
        ``(-1/3, 1/3)`` that grows with the summed decision values in favour
        of the class. The term is too small to overturn a vote, so the
        ``argmax`` is the majority vote with ties broken by confidence.
    """
    n = decisions.shape[0]
    votes = np.zeros((n, n_classes))
    conf = np.zeros((n, n_classes))
    for k, (i, j) in enumerate(pairs):
        d = decisions[:, k]
        pos = d > 0
        votes[:, j] += pos
        votes[:, i] += ~pos
        conf[:, j] += d
        conf[:, i] -= d
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def star_parents(pairs):
    """Warm-start parents of one-vs-one problems: each shares a class with its parent.

    For the pairs ``(i, j)``, ``i < j``, of :func:`itertools.combinations`,
    ``(0, j)`` starts from ``(0, j - 1)`` and ``(i, j)`` from ``(0, j)``;
    ``(0, 1)`` is the root. Pairs that share a class tend to have similar
    optimal kernel weights, and the tree is shallow: ``(i, j)`` is
    ``j - 1 + [i > 0]`` steps from the root, so the waves of independent
    pairs grow quickly.

    Parameters
    ----------
    pairs : ndarray of shape (n_pairs, 2)

    Returns
    -------
    list of int
        The parent's index of each pair, -1 for the root (and for any pair
        whose parent is not among ``pairs``).
    """
    index = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    parents = []
    for i, j in pairs:
        i, j = int(i), int(j)
        parent = (0, j) if i > 0 else (0, j - 1)
        parents.append(index.get(parent, -1) if parent != (i, j) else -1)
    return parents


def relatives(pairs, parents, fitted, p):
    """The problems a one-vs-one problem starts from: its parent, then its fitted class-mates.

    ``fitted[q]`` says whether problem ``q`` is fitted; when problem ``p``
    runs (in its wave, see :func:`waves`) the fitted ones are exactly those
    of the earlier waves, whatever ``n_jobs``. Returns the indices of the
    parent and of the other fitted problems that share a class with ``p``
    (in pair order), or ``[]`` for a root.
    """
    parent = parents[p]
    if parent < 0:
        return []
    pairs = np.asarray(pairs)
    mates = np.isin(pairs, pairs[p]).any(axis=1) & np.asarray(fitted, dtype=bool)
    mates[parent] = False
    return [int(parent), *np.flatnonzero(mates).tolist()]


def mean_weights(models):
    """The mean of the models' kernel weights (a point of the simplex when theirs are)."""
    return np.mean([np.asarray(m.weights, dtype=np.float64) for m in models], axis=0)


def waves(parents, n):
    """Problem indices in waves: each wave after the waves of its problems' parents."""
    if parents is None:
        return [list(range(n))]
    depth = [None] * n

    def settle(p):
        chain = []
        while depth[p] is None and parents[p] >= 0:
            chain.append(p)
            p = parents[p]
            if len(chain) > n:
                raise ValueError("the problems' parents form a cycle")
        d = 0 if depth[p] is None else depth[p]
        depth[p] = d
        for q in reversed(chain):
            d += 1
            depth[q] = d

    for p in range(n):
        settle(p)
    out = [[] for _ in range(max(depth) + 1)]
    for p in range(n):
        out[depth[p]].append(p)
    return out


def class_indices(y, name):
    """``(classes, y_idx)``: the distinct labels and each sample's index among them.

    Raises ``ValueError`` naming the estimator ``name`` when ``y`` has a
    single class.
    """
    classes, y_idx = np.unique(y, return_inverse=True)
    if classes.shape[0] < 2:
        raise ValueError(
            f"y has only one class ({classes[0].tolist()!r}); {name} needs at least two "
            "classes to train a classifier"
        )
    return classes, y_idx.ravel()


def class_order(y_idx):
    """``(order, position)``: the samples class by class, and where each one goes.

    ``order`` is the stable sort of the samples by class (``X[order]`` holds
    them class by class, each class in the order of ``X``) and ``position``
    its inverse (sample ``i`` is at ``position[i]`` of ``X[order]``).
    """
    order = np.argsort(y_idx, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return order, position


def pair_rows(y_idx, pairs, by_class=False):
    """The training rows of each binary problem.

    Parameters
    ----------
    y_idx : ndarray of shape (n_samples,), int
        Class index of each training sample.
    pairs : ndarray of shape (n_pairs, 2)
        The class indices of each problem (one-vs-one pairs ``i < j``).
    by_class : bool, default=False
        Order each pair's rows class by class (those of class ``i``, then
        those of class ``j``, each ascending) instead of ascending.

    Returns
    -------
    list of ndarray of int64
        With one pair (two classes), all rows in ascending order.
    """
    if len(pairs) == 1:
        return [np.arange(y_idx.shape[0], dtype=np.int64)]
    if by_class:
        members = [np.flatnonzero(y_idx == c) for c in range(int(np.max(pairs)) + 1)]
        return [np.concatenate((members[i], members[j])) for i, j in pairs]
    return [np.flatnonzero((y_idx == i) | (y_idx == j)) for i, j in pairs]


def pair_label(classes, i, j):
    """``"'a' vs 'b'"``: classes ``i`` and ``j`` as the user wrote them (no NumPy scalar reprs)."""
    a, b = np.asarray(classes)[[i, j]].tolist()
    return f"{a!r} vs {b!r}"


def _one(value):
    """The single pair's entry, as a Python scalar when it is a NumPy one."""
    return value.item() if isinstance(value, np.generic) else value


def set_pair_attributes(estimator, **per_pair):
    """Set fitted attributes given one value per one-vs-one pair.

    With one pair (two classes, or a regressor or one-class model) each
    attribute is that pair's value itself, a NumPy scalar becoming the
    Python ``int``/``float``/``bool``; with several pairs it is the whole
    array or list, one entry per pair. This is the form of ``weights_``,
    ``n_iter_``, ``gap_``, ``result_`` and the like in every estimator and
    in models loaded from files.

    Parameters
    ----------
    estimator : object
        Receives the attributes.
    **per_pair : ndarray or list, each of length n_pairs
        Attribute name mapped to its values, in pair order (an ndarray of
        shape (n_pairs, m) gives rows of shape (m,)).

    Examples
    --------
    >>> import numpy as np
    >>> class Fitted: pass
    >>> one, many = Fitted(), Fitted()
    >>> set_pair_attributes(one, n_iter_=np.array([7]), weights_=np.ones((1, 3)))
    >>> one.n_iter_, one.weights_.shape
    (7, (3,))
    >>> set_pair_attributes(many, n_iter_=np.array([7, 9]))
    >>> many.n_iter_.tolist()
    [7, 9]
    """
    for name, values in per_pair.items():
        if len(values) == 0:
            raise ValueError(f"{name} has no value: a fitted model has at least one pair")
        setattr(estimator, name, _one(values[0]) if len(values) == 1 else values)



def pair_values(estimator, name):
    """The inverse of :func:`set_pair_attributes`: attribute ``name`` as a list, one per pair.

    The number of pairs is ``len(estimator.models_)``.
    """
    value = getattr(estimator, name)
    return [value] if len(estimator.models_) == 1 else list(value)

class ClassifierBase(ClassifierMixin, EstimatorCore, BaseEstimator):
    """Base class of the mklopt classifiers: validation, labels and one-vs-one.

    Subclasses declare ``_parameter_constraints`` (one entry per
    constructor parameter; see :class:`~mklopt.estimators._core.EstimatorCore`),
    call ``self._validate_params()`` first thing in their ``fit``, and
    implement

    ``_prepare_fit(self, X) -> plan``
        Optional. Check the rules that tie parameters together and build
        whatever every binary problem shares (for example the kernel specs),
        returned as one object, the *plan* of this fit, which the other
        hooks receive. Called once per ``fit``, after ``X`` and ``y`` are
        validated and before any binary problem is solved, so that bad
        parameters fail fast. The plan lives only as long as ``fit``:
        nothing of it is kept on the estimator unless ``_finish_fit``
        stores it.
    ``_prepare_weights(self, plan, classes, y_idx, sample_weight) -> plan``
        Optional. Turn ``class_weight`` and the checked ``sample_weight``
        (None, or one weight per sample) into what the binary problems
        read (per-sample box constraints). The default refuses weights.
    ``_pair_extras(self, plan, n_pairs) -> list of tuples``
        Optional. Per-pair extra arguments of ``_fit_binary`` drawn before
        any pair is fitted (for example seeds from one random stream).
    ``_fit_binary(self, plan, X, y, *extra) -> model``
        Train one binary problem; ``y`` is a float64 array of -1/+1 with both
        signs present, ``extra`` what ``_pair_extras`` gave for the pair
        (preceded by the problem's training rows when the class sets
        ``_fit_binary_takes_rows = True``).
        Return any object. It must not change ``self``: with ``n_jobs`` the
        pairs run in other processes or on a Dask cluster, on copies.
    ``_decision_binary(self, model, X) -> ndarray of shape (n_samples,)``
        Decision values of a model returned by ``_fit_binary``; positive
        means the +1 class.
    ``_pair_rows(self, plan, y_idx, pairs) -> list of ndarray``
        Optional. The training rows of each binary problem, in the order its
        points take in the problem (``y_idx`` are the class indices of the
        training samples). By default the rows of the pair's two classes in
        ascending order; a subclass may order them otherwise (one class's
        rows, then the other's) when that makes reading a shared bank
        cheaper.
    ``_check_fit_input(self, X, y) -> (X, y)``, ``_standardizes(self)``,
    ``_n_features(self, X)``, ``_pair_inputs(self, X, rows)``
        Optional. The input kind: how the training input is checked,
        whether it is standardised, what ``n_features_in_`` is, and what a
        binary problem receives of it (by default features: the rows of
        ``X``; a precomputed stack gives nothing, its problems read views
        of one bank).
    ``_prepare_pairs(self, plan, X, rows) -> plan``
        Optional. Called once the binary problems are known (``rows[k]``
        are the training rows of problem ``k``), before any is solved: the
        place to build what all of them read, such as one kernel bank for
        all pairs. Returns the plan the problems receive.
    ``_fit_pairs(self, tasks, n_jobs, n_tasks, on_done) -> list of models``
        Optional. Fit all binary problems from the argument tuples of
        ``_fit_binary`` that ``tasks`` yields (each preceded by the
        problem's name), returning the models in the same order and calling
        ``on_done(k, model)`` (when not None) as problem ``k`` ends; by
        default each tuple goes to ``_fit_binary``, in parallel with
        ``n_jobs``. Overridden when the problems are solved
        together (shared kernel weights).
    ``_pair_parents(self, plan, pairs) -> list or None``
        Optional. For each problem, the index of the problem whose model
        it starts from (or -1), as :func:`star_parents` gives; None (the
        default) fits the problems independently. Problems run in waves,
        each after its parent, and ``_fit_binary`` receives
        ``_pair_start(models)`` as its last argument (None for a root),
        where ``models`` are the parent's model and those of the other
        problems of earlier waves sharing a class (:func:`relatives`). The
        order does not depend on ``n_jobs``, so parallel fits give the
        serial models.
    ``_finish_fit(self, plan, models, rows)``
        Optional. Set the estimator-specific fitted attributes (for example
        ``weights_`` with one row per pair, see :func:`set_pair_attributes`)
        from the list of models; ``rows[k]`` are the training rows of pair
        ``k`` (indices into the ``X`` given to ``fit``).

    A subclass with ``standardize`` and ``kernels`` parameters has its
    features standardised with the training mean and standard deviation
    (``scaler_mean_``, ``scaler_scale_``; both None when not standardising)
    before the hooks see them, at fit and at prediction time.

    Fitted attributes set here: ``classes_``, ``n_features_in_``,
    ``feature_names_in_`` (only when ``X`` is a table with string column
    names, such as a pandas DataFrame), ``pairs_`` (ndarray of shape
    (n_pairs, 2): the class indices of each binary problem; the second class
    of a pair is its +1 class) and ``models_`` (one binary model per pair).
    With two classes there is one pair, ``(0, 1)``, and ``classes_[1]`` is
    the +1 class, as in scikit-learn.
    """

    # ---- hooks -----------------------------------------------------------
    def _check_fit_input(self, X, y):
        """``(X, y)`` checked (default: features, their names kept; see ``fit``)."""
        check_feature_names(self, X, reset=True)
        return check_X_y(X, y, type(self).__name__)

    def _standardizes(self):
        """Whether the features are standardised (the ``standardize`` rule, default)."""
        return resolve_standardize(getattr(self, "standardize", False),
                                   getattr(self, "kernels", None))

    def _n_features(self, X):
        """``n_features_in_`` of the checked training input (default: its columns)."""
        return X.shape[1]

    def _pair_inputs(self, X, rows):
        """What ``_fit_binary`` receives of the inputs of the problem on ``rows`` (its rows)."""
        return np.ascontiguousarray(X[rows])

    def _prepare_fit(self, X):
        """Validate parameters and build the plan of this fit (default: None)."""

    def _fit_binary(self, plan, X, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def _decision_binary(self, model, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _prepare_weights(self, plan, classes, y_idx, sample_weight):
        """Per-sample weights into the plan (default: none are taken)."""
        if sample_weight is not None:
            raise TypeError(f"{type(self).__name__}.fit takes no sample_weight")
        return plan

    def _pair_extras(self, plan, n_pairs):
        """Extra arguments of ``_fit_binary`` for each pair (default: none).

        Drawn in the calling process, in pair order, before any pair is
        fitted, so that pairs fitted in parallel get what the serial loop
        would give them (e.g. seeds from one random stream).
        """
        return [()] * n_pairs

    def _pair_rows(self, plan, y_idx, pairs):
        """The training rows of each binary problem (default: :func:`pair_rows`)."""
        return pair_rows(y_idx, pairs)

    def _prepare_pairs(self, plan, X, rows):
        """Build what every binary problem reads (default: the plan as it is)."""
        return plan

    def _pair_parents(self, plan, pairs):
        """The problem each problem starts from, or None (default: independent)."""
        return None

    def _pair_start(self, models):
        """What a problem receives from the models it starts from (default: the parent's)."""
        return models[0]

    #: Whether ``_fit_binary`` receives the problem's training rows before its extras.
    _fit_binary_takes_rows = False

    def _fit_pairs(self, tasks, n_jobs, n_tasks, on_done=None):
        """Models of all binary problems, in the order of ``tasks`` (default: one by one).

        ``tasks`` yields the argument tuples of ``_fit_binary``, each
        preceded by the problem's name (for the progress lines). The default
        fits them independently, in parallel with ``n_jobs``, calling
        ``on_done(k, model)`` as problem ``k`` ends; a subclass whose
        problems are coupled (one weight vector for all pairs) overrides it
        to solve them together.
        """
        return parallel_map(labelled(self._fit_binary), tasks, n_jobs, n_tasks=n_tasks,
                            on_done=on_done)

    @staticmethod
    def _run_summary(model):
        """How a binary problem's run went, for the progress lines."""
        result = getattr(model, "result", None)
        return "" if result is None else run_summary(result)

    def _finish_fit(self, plan, models, rows):
        """Set estimator-specific fitted attributes (default: nothing)."""

    # ---- scikit-learn contract ---------------------------------------------
    def __sklearn_is_fitted__(self):
        return hasattr(self, "models_")

    def fit(self, X, y, sample_weight=None):
        """Fit one binary model per pair of classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training samples (finite reals); a pandas DataFrame's string
            column names are kept as ``feature_names_in_``.
        y : array-like of shape (n_samples,)
            Labels: any two or more distinct values (numbers or strings).
        sample_weight : float or array-like of shape (n_samples,), optional
            Per-sample weights ``>= 0``, for the estimators that take them
            (see ``_prepare_weights``).

        Returns
        -------
        self
            The fitted estimator.

        Raises
        ------
        ValueError
            On NaN/inf, wrong shapes, fewer than two classes, continuous
            targets or invalid parameters.
        TypeError
            On sparse or non-numeric ``X`` and parameters of the wrong type.
        """
        name = type(self).__name__
        X, y = self._check_fit_input(X, y)
        classes, y_idx = class_indices(y, name)
        if self._standardizes():
            mean, scale = _scaling(X)
            X = (X - mean) / scale
        else:
            mean = scale = None
        # (the parameters were checked by the subclass's table when its fit began)
        n_jobs = getattr(self, "n_jobs", None)
        verbose = int(getattr(self, "verbose", 0))
        plan = self._prepare_fit(X)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, y_idx.shape[0])
        plan = self._prepare_weights(plan, classes, y_idx, sample_weight)
        pairs = np.array(list(combinations(range(classes.shape[0]), 2)), dtype=np.int64)
        extras = self._pair_extras(plan, len(pairs))
        all_rows = self._pair_rows(plan, y_idx, pairs)
        plan = self._prepare_pairs(plan, X, all_rows)
        takes_rows = self._fit_binary_takes_rows

        parents = self._pair_parents(plan, pairs) if len(pairs) > 1 else None
        models = [None] * len(pairs)

        def label(p):
            return "" if len(pairs) == 1 else pair_label(classes, *pairs[p])

        def tasks(order):
            # Lazily: a serial fit holds one pair's copy of X at a time.
            for p in order:
                rows = all_rows[p]
                y_pm1 = np.where(y_idx[rows] == pairs[p][1], 1.0, -1.0)
                head = (label(p), plan, self._pair_inputs(X, rows), y_pm1)
                args = (*head, rows, *extras[p]) if takes_rows else (*head, *extras[p])
                if parents is not None:
                    done = [m is not None for m in models]
                    starts = [models[q] for q in relatives(pairs, parents, done, p)]
                    args = (*args, self._pair_start(starts) if starts else None)
                yield args

        unit = "problem" if len(pairs) == 1 else "pair"
        with TaskProgress(verbose, name, len(pairs), unit) as progress:
            # Each wave's pairs are independent (all of them, without
            # parents): with n_jobs (or a joblib backend such as Dask) they
            # run as parallel tasks, with the same results. Largest pairs
            # first: the longest tasks then start early and the short ones
            # fill the gaps at the end (the makespan of this order is within
            # 4/3 of the best when cost grows with size). On a Dask cluster
            # the tasks are named after their pair (class indices).
            for wave in waves(parents, len(pairs)):
                order = sorted(wave, key=lambda p: -all_rows[p].size)

                def done(k, model, order=order):
                    progress.advance(label(order[k]) or "the binary problem",
                                     self._run_summary(model))

                with task_names(f"pair-{pairs[p][0]}-vs-{pairs[p][1]}" for p in order):
                    fitted = self._fit_pairs(tasks(order), n_jobs, len(order),
                                             done if progress.on else None)
                for p, model in zip(order, fitted):
                    models[p] = model
        self.classes_ = classes
        self.n_features_in_ = self._n_features(X)
        self.scaler_mean_, self.scaler_scale_ = mean, scale
        self.pairs_ = pairs
        self.models_ = models
        self._finish_fit(plan, models, all_rows)
        return self

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
        if self.classes_.shape[0] == 2:
            return d[:, 0]
        return ovo_vote(d, self.pairs_, self.classes_.shape[0])

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
