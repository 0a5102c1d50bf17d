"""Cross-validated choice of C for :class:`MKLRegressor` (scikit-learn's ``...CV`` convention)."""

from __future__ import annotations

import functools

import numpy as np

from .._constraints import NO_VALIDATION, Check
from ..datasets import _scaling
from ._checks import check_feature_names, check_is_fitted, check_targets, check_X
from ._core import RUN_PARAMS, EstimatorCore
from ._losses import check_sample_bounds, oracle_entry
from ._params import check_estimator_client
from ._sklearn import (
    HAS_SKLEARN,
    BaseEstimator,
    RegressorMixin,
    SharedClientMixin,
)
from ._weights import check_sample_weight
from .mkl_cv import (
    SEARCH_PARAMS,
    SearchSetup,
    _check_formulations_of,
    _Formulation,
    _splits,
    _StopFactory,
    check_Cs,
    check_exact_storage,
    formulation_plan,
    one_bank,
    prepare_formulation,
    resolve_formulations,
    run_search,
    search,
)
from .mkl_tasks import MKLRegressor, target_scaling

__all__ = ["MKLRegressorCV"]

_SHARED = (
    "kernels", "method", "epsilon", "loss", "p", "groups", "elastic_net", "tol", "max_iter",
    "inner_tol", "normalize", "standardize", "weight_threshold", "time_limit", "storage",
    "cache_size", "max_memory", "callback", "verbose",
)


class _FoldRegressor(RegressorMixin, BaseEstimator):
    """A fold's model at one C, as a scorer sees it (``X``: positions of validation points)."""

    def __init__(self, predictions=None):
        self.predictions = predictions

    def predict(self, X):
        return self.predictions[np.asarray(X, dtype=np.int64).ravel()]


def _scorer(scoring):
    if scoring is None or (scoring == "r2" and not HAS_SKLEARN):
        return lambda est, X, y: est.score(X, y)
    if not HAS_SKLEARN:
        raise ImportError(
            f"scoring={scoring!r} needs scikit-learn's scorers (pip install scikit-learn); "
            "without it only scoring=None (R^2) is available"
        )
    from sklearn.metrics import check_scoring

    return check_scoring(MKLRegressor(), scoring=scoring)


class MKLRegressorCV(SharedClientMixin, RegressorMixin, EstimatorCore, BaseEstimator):
    """Multiple kernel learning regression with C and the norm chosen by cross-validation.

    The regression counterpart of :class:`MKLClassifierCV`: scores every
    ``C`` of ``Cs`` and every norm ``p`` of ``formulations`` by
    cross-validation as ``GridSearchCV(MKLRegressor(), [{"C": Cs, "p":
    [p]} for each p], cv=cv)`` does, from one kernel
    bank for all folds and a warm-started path over ``C`` in each fold
    (the epsilon-SVR's dual variables scale into the larger box as the
    SVM's do), every point certified to the relative gap ``tol``; then
    refits :class:`MKLRegressor` with the best ``C`` and ``p`` on all the
    data.

    Parameters
    ----------
    Cs : int or list of float, default=6
        The grid; an int ``k`` is ``k`` values log-spaced from ``1e-2`` to
        ``1e3``.
    cv : int, cross-validation splitter or iterable, default=5
        As in scikit-learn (an int is ``KFold``, not shuffled).
    scoring : str or callable, optional
        A scikit-learn scorer; default the coefficient of determination
        R^2.
    formulations : "auto", None, dict or list of dict, default="auto"
        As for :class:`MKLClassifierCV`, with the one key ``"p"`` (a
        regressor has no ``multiclass``): ``"auto"`` is ``p`` in 1, 2 and
        ``inf`` when ``method="auto"`` and ``p``, ``elastic_net`` and
        ``groups`` are unset (otherwise the estimator's own formulation);
        ``None`` is ``C`` alone.
    search : {"halving", "exhaustive"}, default="halving"
        As for :class:`MKLClassifierCV`: with several formulations, every
        (formulation, ``C``) candidate on the first fold, then the best
        ``ceil(n / factor)`` on the next folds; ``"exhaustive"``: every
        candidate on every fold. One formulation is searched exhaustively.
    factor : int, default=3
        One candidate in ``factor`` goes on to the next round.
    kernels, method, epsilon, loss, p, groups, elastic_net, tol, max_iter, inner_tol, normalize
        As for :class:`MKLRegressor`: the fold problems and the refit are the
        estimator's formulation. With ``loss="squared"`` (kernel ridge
        regression) each path point's oracle solves its dual exactly, and the
        path hands over the previous weights and cuts scaled by ``C1 / C0``
        (see :class:`MKLClassifierCV`).
    standardize, weight_threshold, storage, cache_size, max_memory, callback
        As for :class:`MKLRegressor`. ``standardize=True`` scales the
        features and the targets once, with the statistics of all the
        training data (``GridSearchCV`` would scale each fold with its own
        training part).
    time_limit : float, optional
        Seconds for each point of a fold's path, and for the refit as in
        :class:`MKLRegressor` (see :class:`MKLClassifierCV`).
    n_jobs : int, optional
        Folds fitted at the same time (through joblib).
    verbose : int, default=0
        Progress on standard error: 1 a line (or a tqdm bar) as each point
        of the path ends, one per (fold, C) and pair of classes, with its
        rank of all, the elapsed time and an estimate of the time left,
        then the refit's own lines; 2 also a line per oracle call. Folds
        run in parallel report their points as each fold ends. See
        :doc:`/progress`.
    client : distributed.Client, optional
        As for :class:`MKLClassifierCV`: each fold's C path but the first
        (which guides the others, in this process) is a Dask task named
        ``mklopt-fold-<k>``, the bank is scattered once, and the refit runs
        in this process. Cannot be combined with ``n_jobs``.

    Attributes
    ----------
    Cs_, cv_results_, best_index_, best_params_, best_C_, best_score_, best_estimator_, refit_time_
        As for :class:`MKLClassifierCV` (``param_p``, no
        ``param_multiclass``); ``best_estimator_`` is an
        :class:`MKLRegressor`, ``MKLRegressor(**best_params_)`` with this
        estimator's other parameters.
    formulations_, best_formulation_, paths_
        As for :class:`MKLClassifierCV`.
    n_candidates_, n_resources_, n_iterations_
        After a halving search, as for :class:`MKLClassifierCV`.
    n_splits_ : int
    path_rel_gap_, path_value_, path_n_oracle_calls_, path_converged_ : ndarray
        Of the chosen formulation, shape (n_splits, n_Cs, 1), as for
        :class:`MKLClassifierCV`.
    n_features_in_, feature_names_in_
        As for :class:`MKLRegressor`.

    See Also
    --------
    MKLClassifierCV : the classifier, with the details of the path.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt import MKLRegressorCV
    >>> from mklopt.kernels import rbf, linear
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-2, 2, (80, 2))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(80)
    >>> reg = MKLRegressorCV(Cs=[0.1, 1.0, 10.0], cv=3, kernels=[rbf(1.0), linear()]).fit(X, y)
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    _parameter_constraints = {
        "Cs": [Check(check_Cs, "an int >= 1 or a list of C values > 0", pass_name=False,
                     converts=True)],
        # scikit-learn's check_cv and check_scoring (or the fallbacks without
        # scikit-learn) check these where they are used, naming them.
        "cv": NO_VALIDATION,
        "scoring": NO_VALIDATION,
        "formulations": [Check(functools.partial(_check_formulations_of, ("p",)),
                               "'auto', None or a list of dicts of 'p'")],
        **SEARCH_PARAMS,
        # Every parameter of MKLRegressor but C, which the grid replaces ...
        **{k: v for k, v in MKLRegressor._parameter_constraints.items() if k != "C"},
        # ... (every registered regression loss, as MKLRegressor),
        # and the folds run in parallel or on a cluster.
        "n_jobs": RUN_PARAMS["n_jobs"],
        "client": RUN_PARAMS["client"],
    }

    def __init__(
        self,
        Cs=6,
        cv=5,
        scoring=None,
        kernels="grid",
        method="auto",
        epsilon=0.1,
        loss="epsilon_insensitive",
        p=None,
        groups=None,
        elastic_net=None,
        tol=1e-2,
        max_iter=500,
        inner_tol=None,
        normalize="trace",
        standardize=True,
        weight_threshold=1e-6,
        time_limit=None,
        storage="auto",
        cache_size=None,
        max_memory=None,
        callback=None,
        n_jobs=None,
        verbose=0,
        client=None,
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
        self.epsilon = epsilon
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
        self.client = client

    def _estimator(self, C, **formulation):
        params = {name: getattr(self, name) for name in _SHARED}
        params.update(formulation)
        return MKLRegressor(C=C, **params)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "best_estimator_")

    def fit(self, X, y, sample_weight=None):
        """Cross-validate every ``C`` of ``Cs``, then refit at the best one.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Real targets.
        sample_weight : float or array-like of shape (n_samples,), optional
            As for :meth:`MKLRegressor.fit`: every fold's problem and the
            refit take them (the fold scores are not weighted).

        Returns
        -------
        self

        Raises
        ------
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
        check_feature_names(self, X, reset=True)
        X = check_X(X, name)
        t = check_targets(y, X.shape[0], name)
        check_estimator_client(self.client, self.n_jobs)
        scorer = _scorer(self.scoring)
        # the first formulation's estimator: the search's checks and its one bank
        first = resolve_formulations(self)[0]
        base = self._estimator(float(Cs[0]), **first)
        if hasattr(self, "feature_names_in_"):
            base.feature_names_in_ = self.feature_names_in_  # specs may name columns
        plan = prepare_formulation(base, X, first)
        eps = float(self.epsilon)
        entry = oracle_entry("regression", self.loss)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
            check_sample_bounds(entry, name)
        check_exact_storage(name, self.storage)
        if self.standardize:
            mean, scale = _scaling(X)
            Xs = (X - mean) / scale
        else:
            Xs = X
        # The same rule as MKLRegressor's for the targets.
        y_mean, y_scale = target_scaling(t, self.standardize)
        ts = (t - y_mean) / y_scale
        splits = _splits(self.cv, X, t, None, classifier=False)
        bank = one_bank(self, Xs, plan)
        # The classifier's search with one problem per fold: the loss's
        # oracle from the registry, with the estimator's epsilon.
        def formulation(params):
            """What the path of one formulation solves (its own plan: method, p)."""
            est, fplan = formulation_plan(self, base, plan, X, Cs, params)
            form = _Formulation(self.loss, False, self.normalize, fplan.new_method,
                                _StopFactory(est, fplan, self.time_limit), fplan.inner_tol,
                                fplan.threshold, self.callback, fplan.verbose, name,
                                entry, (("epsilon", eps),), factors=sample_weight)
            return params, form, 1

        forms = [formulation(params) for params in resolve_formulations(self)]
        form = forms[0][1]
        n_s = len(splits)

        def score(k, decisions):
            test = splits[k][1]
            model = _FoldRegressor(decisions[:, 0] * y_scale + y_mean)
            return scorer(model, np.arange(test.size)[:, None], t[test])

        setup = SearchSetup(bank, ts, splits, splits, None, form, score,
                            lambda params: self._estimator(**params).fit(
                                X_given, y_given, sample_weight=sample_weight),
                            lambda k: [f"fold {k + 1} of {n_s}"], 1, forms)
        search(self, Cs, setup, plan, t.shape[0])
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        """``best_estimator_.predict(X)``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def combined_kernel(self, X, Y=None, pair=None):
        """``best_estimator_.combined_kernel(X, Y)``: the refit's learned kernel."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.combined_kernel(X, Y, pair=pair)

    @property
    def kernel_(self):
        """``best_estimator_.kernel_``: the refit's learned kernel as a function."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.kernel_

    def score(self, X, y, sample_weight=None):
        """``best_estimator_.score(X, y)``: the coefficient of determination R^2."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, sample_weight=sample_weight)
