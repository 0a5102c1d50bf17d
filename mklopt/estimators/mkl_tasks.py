"""MKL regression and one-class estimators (scikit-learn compatible).

Both run the outer methods of :mod:`mklopt.methods` unchanged, against the
:class:`~mklopt.oracles.SVRDual` and :class:`~mklopt.oracles.OneClassDual`
oracles (any dual oracle runs under any outer method), and share the parameters of
:class:`~mklopt.MKLClassifier` (kernels, method, p, groups, elastic_net,
tolerances, storage). Unlike the classifier they standardise the features with the
training statistics by default, so that the default kernel grid (whose
widths are meant for standardised features) gives a real model on raw data.
"""

from __future__ import annotations

import time
import warnings
from numbers import Real

import numpy as np

from .._constraints import Boolean, Check, Interval
from .._interrupt import fit_run
from .._policy import default_inner_tol
from ..datasets import _scaling
from ..driver import solve
from ..kernels import KernelBank, KernelExpansion, rbf
from ..oracles.one_class import _check_nu
from ._checks import check_feature_names, check_is_fitted, check_targets, check_X
from ._core import MKL_PARAMS, POSITIVE, EstimatorCore, loss_of
from ._losses import oracle_entry
from ._names import NamedKernels
from ._ovo import set_pair_attributes
from ._params import resolve_kernel_specs
from ._progress import TaskProgress, call_lines, run_summary
from ._sklearn import BaseEstimator, ConvergenceWarning, OutlierMixin, RegressorMixin
from .mkl import (
    MKLClassifier,
    _BinaryMKL,
    _Plan,
    _run_attributes,
)

__all__ = ["MKLRegressor", "MKLOneClass"]

# Default one-class kernels: Gaussians on all (standardised) features with
# widths sigma = s * sqrt(n_features); s = 1 is about scikit-learn's
# gamma="scale" (gamma = 1 / (2 sigma^2) = 1 / (2 n_features)).
_ONE_CLASS_WIDTHS = (0.125, 0.25, 0.5, 1.0)


#: The parameters the regressor and the one-class model share with the
#: classifier (one problem: no n_jobs, client or multiclass). Their
#: features are standardised or not: no "auto".
_TASK_PARAMS = {
    **{k: v for k, v in MKL_PARAMS.items() if k not in ("n_jobs", "client")},
    "standardize": [Boolean()],
}


def _renamed(old, new):
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  FutureWarning, stacklevel=3)


class _TaskMKL(NamedKernels, EstimatorCore, BaseEstimator):
    """One MKL problem on one oracle: parameters, fit loop, prediction."""

    _oracle_name = ""

    # Borrowed from the classifier: the same parameters mean the same thing.
    _resolve_groups = MKLClassifier._resolve_groups
    _method_factory = MKLClassifier._method_factory
    _stop = MKLClassifier._stop

    def _grid(self, n_features):
        return resolve_kernel_specs("grid", n_features, protocol="level2008")

    def _check_common(self, X):
        """The plan of a fit; the parameters were checked by the table when fit began."""
        tol = float(self.tol)
        max_iter = int(self.max_iter)
        if self.inner_tol is None:
            inner_tol = default_inner_tol(tol)
        else:
            inner_tol = float(self.inner_tol)
        threshold = float(self.weight_threshold)
        deadline = None
        if self.time_limit is not None:
            # Wall-clock time, the clock MKLClassifier._stop reads.
            deadline = time.time() + float(self.time_limit)
        if isinstance(self.kernels, str) and self.kernels == "grid":
            specs = self._grid(X.shape[1])
        else:
            specs = resolve_kernel_specs(self.kernels, X.shape[1], protocol="level2008",
                                         feature_names=getattr(self, "feature_names_in_", None))
        new_method = self._method_factory(specs)
        return _Plan(None, tol, max_iter, inner_tol, threshold, deadline, specs, new_method,
                     verbose=int(self.verbose))

    def _fit_oracle(self, X, make_oracle, plan):
        # Stoppable as a whole (time_limit, Ctrl-C), kernel construction included.
        with fit_run(type(self).__name__, self.time_limit, self.verbose):
            self._fit_oracle_run(X, make_oracle, plan)

    def _fit_oracle_run(self, X, make_oracle, plan):
        if self.standardize:
            self.scaler_mean_, self.scaler_scale_ = _scaling(X)
            X = (X - self.scaler_mean_) / self.scaler_scale_
        else:
            self.scaler_mean_ = self.scaler_scale_ = None
        bank = KernelBank.from_specs(
            X,
            plan.specs,
            storage=self.storage,
            normalize=self.normalize,
            cache_size=self.cache_size,
            max_memory=self.max_memory,
        )
        oracle = make_oracle(bank, plan.inner_tol)
        name = type(self).__name__
        with TaskProgress(plan.verbose, name, 1, "problem") as progress:
            result = solve(oracle, plan.new_method(), stop=self._stop(plan),
                           callback=call_lines(plan.verbose, name, oracle, self.callback))
            progress.advance("the MKL problem", run_summary(result))
        w = np.asarray(result.weights, dtype=np.float64)
        coef_all = np.asarray(result.alpha, dtype=np.float64)  # v: beta or alpha
        support = np.flatnonzero(coef_all != 0.0).astype(np.int64)
        bias = float(result.bias)
        predictor = KernelExpansion.from_solution(
            bank.functions, w, coef_all, bias, threshold=plan.threshold
        )
        model = _BinaryMKL(predictor, w, support, coef_all[support], bias, result)
        self.models_ = [model]
        self.n_features_in_ = X.shape[1]
        self.kernel_specs_ = list(plan.specs)
        self.n_kernels_ = len(plan.specs)
        self.intercept_ = np.array([bias])
        set_pair_attributes(self, **_run_attributes([model]))
        if not result.converged:
            warnings.warn(
                f"{type(self).__name__} did not reach the relative gap tol={plan.tol:g} "
                f"({result.reason}, rel. gap {result.rel_gap:.3g}); raise max_iter or "
                "time_limit, or loosen tol",
                ConvergenceWarning,
                stacklevel=4,
            )

    def __sklearn_is_fitted__(self):
        return hasattr(self, "models_")

    def _raw_decision(self, X):
        check_is_fitted(self, "models_")
        check_feature_names(self, X, reset=False)
        X = check_X(X, type(self).__name__, n_features=self.n_features_in_)
        if getattr(self, "scaler_mean_", None) is not None:
            X = (X - self.scaler_mean_) / self.scaler_scale_
        return self.models_[0].predictor(X)

    # The standardisation had other names here than on the classifiers
    # (scaler_mean_, scaler_scale_); the old ones read the same arrays and
    # warn, for one release.
    @property
    def x_mean_(self):
        """Deprecated alias of ``scaler_mean_`` (removed in the next release)."""
        _renamed("x_mean_", "scaler_mean_")
        return self.scaler_mean_

    @x_mean_.setter
    def x_mean_(self, value):
        self.scaler_mean_ = value

    @property
    def x_scale_(self):
        """Deprecated alias of ``scaler_scale_`` (removed in the next release)."""
        _renamed("x_scale_", "scaler_scale_")
        return self.scaler_scale_

    @x_scale_.setter
    def x_scale_(self, value):
        self.scaler_scale_ = value


_COMMON_DOC = """
    kernels : "grid" or list of kernel specs, default="grid"
        The base kernels, as for :class:`~mklopt.MKLClassifier` (the default
        is the level-method grid, ``13 * (n_features + 1)`` kernels).
    method : str or outer-method instance, default="auto"
        ``"auto"`` (Level up to 2,000 kernels, the kernel working set above,
        as for :class:`~mklopt.MKLClassifier`) or any outer method of
        :data:`mklopt.methods.METHODS` working on dual
        oracles (``"level"``, ``"silp"``, ``"simplemkl"``, ``"mirror"``,
        ``"lp"``, ...), as for :class:`~mklopt.MKLClassifier`.
    p, groups, elastic_net
        Lp norm (with ``method="lp"``), kernel groups (with
        ``method="mirror"``) and the elastic-net mixing parameter ``lam`` in
        ``[0, 1]`` (with ``method="auto"``, ``"elastic_net"`` or ``"spg"``),
        as for :class:`~mklopt.MKLClassifier`.
    tol : float, default=1e-2
        Relative duality gap at which the run counts as converged.
    max_iter : int, default=500
        Outer iterations.
    inner_tol : float, optional
        SMO tolerance; default ``min(1e-3, tol / 100)``.
    normalize : {"trace", "diagonal"} or None, default="trace"
        Unit-trace scaling of every base kernel on the training set
        (``"diagonal"``: unit mean diagonal, as for
        :class:`~mklopt.MKLClassifier`).
    standardize : bool, default=True
        Centre and scale every feature with its training mean and standard
        deviation before the kernels see it (constant features are only
        centred); prediction applies the same transform.
    weight_threshold, time_limit, storage, cache_size, max_memory, callback, verbose
        As for :class:`~mklopt.MKLClassifier` (``verbose=1``: one line when the
        problem is solved; 2: also one per oracle call)."""

_COMMON_ATTRS = """
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str objects, shape (n_features,)
        Column names of ``X`` in ``fit``, set only when ``X`` is a table
        (a pandas DataFrame) whose column names are all strings; prediction
        then checks that its input has the same names in the same order.
    kernel_specs_ : list
        The base kernels used; ``n_kernels_`` their number.
    weights_ : ndarray of shape (n_kernels,)
        Kernel weights found.
    support_ : ndarray of int
        Training indices of the support vectors.
    intercept_ : ndarray of shape (1,)
        Offset of the decision function (``-rho``).
    scaler_mean_, scaler_scale_ : ndarray of shape (n_features,) or None
        The training standardisation (None with ``standardize=False``), as
        on the classifiers. ``x_mean_`` and ``x_scale_`` are deprecated
        aliases.
    n_iter_, n_oracle_calls_, gap_, converged_, history_, result_
        The run record, as for :class:`~mklopt.MKLClassifier`."""


class MKLRegressor(RegressorMixin, _TaskMKL):
    __doc__ = f"""Multiple kernel learning epsilon-support vector regression.

    Learns kernel weights ``w`` together with an epsilon-SVR on
    ``sum_k w_k K_k`` by minimising ``J(w)`` of
    :class:`~mklopt.oracles.SVRDual` with an outer method, until the
    relative duality gap is below ``tol`` (SimpleMKL's regression
    formulation, Rakotomamonjy et al. 2008, section 5.1, generalised to
    every formulation of the formulations page). With ``loss="squared"`` the
    model is kernel ridge regression with an offset instead
    (:class:`~mklopt.oracles.RidgeDual`, solved exactly at every weight
    vector). ``predict`` returns ``f(x) = sum_i beta_i K(x_i, x) + b``,
    mapped back to the targets' units.

    Parameters
    ----------{_COMMON_DOC}
    C : float, default=100.0
        Box constraint of the SVR dual, > 0. The default suits unit-trace
        kernels (``normalize="trace"``), whose entries are about
        ``1 / n_samples``, as the papers' ``C = 100`` for classification:
        scaling every kernel by ``1 / n`` is the same model as dividing
        ``C`` by ``n`` on the unscaled kernels, so ``C`` here corresponds to
        ``C / n_samples`` of scikit-learn's ``SVR`` on unit-diagonal
        (Gaussian) kernels.
    epsilon : float, default=0.1
        Width of the insensitive tube, >= 0, in units of the targets'
        standard deviation when ``standardize=True`` (the targets are then
        standardised too), in units of ``y`` otherwise. Not used with
        ``loss="squared"``.
    loss : str, default="epsilon_insensitive"
        The oracle, by its name in the registry of :mod:`mklopt.tasks`
        (task ``"regression"``): ``"epsilon_insensitive"``: epsilon-SVR.
        ``"squared"``: kernel ridge
        regression, ``(C/2) sum_i (y_i - f(x_i) - b)^2 + |f|^2 / 2`` per
        kernel combination (ridge ``1/C``; see the losses page of the
        documentation); ``inner_tol`` is then not used. An oracle
        registered with :func:`mklopt.tasks.register_oracle` is taken by
        its name.

    Attributes
    ----------{_COMMON_ATTRS}
    dual_coef_ : ndarray
        ``beta_i = alpha_i - alpha*_i`` on the support vectors (with
        ``loss="squared"``, the ridge dual's ``beta``: every point).
    y_mean_, y_scale_ : float
        Target standardisation (0 and 1 with ``standardize=False``).

    References
    ----------
    A. Rakotomamonjy, F. Bach, S. Canu, Y. Grandvalet. SimpleMKL.
    JMLR 9, 2008.
    A. J. Smola, B. Schoelkopf. A tutorial on support vector regression.
    Statistics and Computing 14, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt import MKLRegressor, datasets
    >>> X, y = datasets.load("diabetes")
    >>> idx = np.random.default_rng(0).permutation(len(y))
    >>> train, test = idx[:300], idx[300:]
    >>> reg = MKLRegressor().fit(X[train], y[train])   # 143 kernels, raw features
    >>> reg.weights_.shape
    (143,)
    >>> bool(reg.converged_ and reg.score(X[test], y[test]) > 0.3)
    True
    """

    _parameter_constraints = {
        **_TASK_PARAMS,
        "C": [POSITIVE],
        "epsilon": [Interval(Real, 0.0, None)],
        "loss": loss_of("regression"),
    }

    def __init__(
        self,
        kernels="grid",
        method="auto",
        C=100.0,
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
        verbose=0,
    ):
        self.kernels = kernels
        self.method = method
        self.C = C
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
        self.verbose = verbose

    def fit(self, X, y):
        """Fit the kernel weights and the SVR.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite).
        y : array-like of shape (n_samples,)
            Real, finite targets.

        Returns
        -------
        self
        """
        self._validate_params()
        name = type(self).__name__
        check_feature_names(self, X, reset=True)
        X = check_X(X, name)
        t = check_targets(y, X.shape[0], name)
        C, eps = float(self.C), float(self.epsilon)
        oracle = oracle_entry("regression", self.loss)
        plan = self._check_common(X)
        if self.standardize:
            self.y_mean_ = float(t.mean())
            sd = float(t.std())
            self.y_scale_ = sd if sd > 1e-12 * max(1.0, abs(self.y_mean_)) else 1.0
        else:
            self.y_mean_, self.y_scale_ = 0.0, 1.0
        t = (t - self.y_mean_) / self.y_scale_
        # The oracle of self.loss from the registry (mklopt.tasks), given
        # the values it declares it takes.
        self._fit_oracle(X, lambda bank, tol: oracle.make(bank, t, C=C, epsilon=eps, tol=tol),
                         plan)
        return self

    def predict(self, X):
        """Predicted targets, shape (n_samples,)."""
        return self._raw_decision(X) * self.y_scale_ + self.y_mean_


class MKLOneClass(OutlierMixin, _TaskMKL):
    __doc__ = f"""Multiple kernel learning nu-one-class SVM (novelty detection).

    Learns kernel weights ``w`` together with a one-class SVM on
    ``sum_k w_k K_k`` by minimising ``J(w)`` of
    :class:`~mklopt.oracles.OneClassDual` with an outer method, until the
    relative duality gap is below ``tol`` (Schoelkopf et al. 2001, eq. 6,
    as the inner problem of the MKL formulation). The decision function is
    ``f(x) = sum_i alpha_i K(x_i, x) - rho``: positive for inliers.

    Parameters
    ----------{_COMMON_DOC}
        For this estimator ``kernels="grid"`` means four Gaussian kernels
        on all features, ``rbf(s * sqrt(n_features))`` for ``s`` in
        ``1/8, 1/4, 1/2, 1`` (see Notes).
    nu : float, default=0.5
        In ``(0, 1]``: an upper bound on the fraction of training points
        outside the estimated support and a lower bound on the fraction of
        support vectors.
    loss : str, default="nu"
        The one-class oracle, by its name in the task registry
        (:func:`mklopt.tasks.register_oracle`): ``"nu"`` is
        :class:`~mklopt.oracles.OneClassDual`; an oracle registered for the
        ``"one-class"`` task is fitted, saved and loaded the same way.

    Attributes
    ----------{_COMMON_ATTRS}
    dual_coef_ : ndarray
        ``alpha_i`` on the support vectors (they sum to 1).
    offset_ : float
        ``rho``, so that ``decision_function = score_samples - offset_``.

    Notes
    -----
    *Which kernels.* At ``w = e_k`` the objective is ``-min_alpha q_k(alpha)
    / 2``, so L1-MKL prefers the kernel under which the data's (trimmed)
    mean embedding is longest: among Gaussians of one family, the widest;
    a near-constant kernel (a very wide Gaussian, a polynomial on
    standardised data) wins outright and detects nothing. The level-method
    grid of the classifier is therefore not this estimator's default; give
    kernels whose widths are all plausible for the data.

    As every scikit-learn outlier detector, ``fit`` accepts and ignores a
    ``y`` so that pipelines and cross-validation with labelled data work;
    the model learns from ``X`` alone.

    References
    ----------
    B. Schoelkopf, J. C. Platt, J. Shawe-Taylor, A. J. Smola, R. C.
    Williamson. Estimating the support of a high-dimensional distribution.
    Neural Computation 13, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt import MKLOneClass
    >>> from mklopt.kernels import rbf
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> oc = MKLOneClass(kernels=[rbf(0.5), rbf(2.0)], nu=0.1).fit(X)
    >>> oc.predict([[0.0, 0.0], [6.0, 6.0]]).tolist()
    [1, -1]
    """

    _parameter_constraints = {
        **_TASK_PARAMS,
        # The one-class oracle owns the rule for nu.
        "nu": [Check(_check_nu, "a real number in (0, 1]", pass_name=False)],
        "loss": loss_of("one-class"),
    }

    def __init__(
        self,
        kernels="grid",
        method="auto",
        nu=0.5,
        loss="nu",
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
        verbose=0,
    ):
        self.kernels = kernels
        self.method = method
        self.nu = nu
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
        self.verbose = verbose

    def _grid(self, n_features):
        root = float(np.sqrt(n_features))
        return [rbf(s * root) for s in _ONE_CLASS_WIDTHS]

    def fit(self, X, y=None):
        """Fit the kernel weights and the one-class SVM on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite), taken as inliers.
        y : ignored
            Accepted for API compatibility (see Notes).

        Returns
        -------
        self
        """
        self._validate_params()
        check_feature_names(self, X, reset=True)
        X = check_X(X, type(self).__name__)
        nu = float(self.nu)
        plan = self._check_common(X)
        # The oracle of self.loss from the registry (mklopt.tasks).
        oracle = oracle_entry("one-class", self.loss)
        self._fit_oracle(X, lambda bank, tol: oracle.make(bank, nu=nu, tol=tol), plan)
        self.offset_ = -float(self.intercept_[0])
        return self

    def decision_function(self, X):
        """``score_samples(X) - offset_``: positive for inliers, shape (n_samples,)."""
        return self._raw_decision(X)

    def score_samples(self, X):
        """``sum_i alpha_i K(x_i, x)``, the unshifted score (higher: more normal)."""
        return self._raw_decision(X) + self.offset_

    def predict(self, X):
        """+1 for inliers, -1 for outliers."""
        return np.where(self.decision_function(X) >= 0.0, 1, -1)
