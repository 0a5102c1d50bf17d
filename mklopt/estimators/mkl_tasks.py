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

import warnings
from numbers import Real

import numpy as np

from .._constraints import Boolean, Check, Interval
from ..kernels import rbf
from ..oracles.one_class import _check_nu
from ._checks import check_feature_names, check_is_fitted, check_targets, check_X
from ._core import MKL_PARAMS, POSITIVE, loss_of
from ._sklearn import OutlierMixin, RegressorMixin
from .mkl import MKLBase

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


def target_scaling(t, standardize):
    """``(mean, scale)`` of regression targets (``(0, 1)`` without standardising).

    A constant target keeps scale 1, so that its standardised form is 0
    rather than a division by (nearly) zero.
    """
    if not standardize:
        return 0.0, 1.0
    mean, sd = float(t.mean()), float(t.std())
    return mean, sd if sd > 1e-12 * max(1.0, abs(mean)) else 1.0


def _renamed(old, new):
    warnings.warn(f"{old} is deprecated and will be removed in the next release; use {new}",
                  FutureWarning, stacklevel=3)


class _TaskMKL(MKLBase):
    """One MKL problem on one oracle: the regressor's and the one-class model's prediction.

    They fit through the estimators' one core (:class:`~mklopt.estimators.mkl.MKLBase`),
    as the classifier does; their task (``_task``) makes one problem of all
    points.
    """

    def _check_predict_input(self, X):
        """``X`` checked against the fit and standardised as the fit's features were."""
        check_is_fitted(self, "models_")
        check_feature_names(self, X, reset=False)
        X = check_X(X, type(self).__name__, n_features=self.n_features_in_)
        if getattr(self, "scaler_mean_", None) is not None:
            X = (X - self.scaler_mean_) / self.scaler_scale_
        return X

    def _raw_decision(self, X):
        X = self._check_predict_input(X)
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
    _task = "regression"

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

    def fit(self, X, y, sample_weight=None):
        """Fit the kernel weights and the SVR.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite).
        y : array-like of shape (n_samples,)
            Real, finite targets.
        sample_weight : float or array-like of shape (n_samples,), optional
            Per-sample weights ``s_i >= 0``: sample ``i``'s box is ``C_i = C
            s_i`` (``SVR.fit(sample_weight=)``; for the squared loss, the
            weight of its squared residual). A sample of weight 0 is left
            out. The standardisation of ``X`` and ``y`` is not weighted.

        Returns
        -------
        self
        """
        return super().fit(X, y, sample_weight=sample_weight)

    def _oracle_values(self):
        return {"C": float(self.C), "epsilon": float(self.epsilon)}

    def _check_fit_input(self, X, y):
        # The targets standardised as the features are (standardize=True).
        X, _ = super()._check_fit_input(X, None)
        t = check_targets(y, X.shape[0], type(self).__name__)
        self.y_mean_, self.y_scale_ = target_scaling(t, self.standardize)
        return X, (t - self.y_mean_) / self.y_scale_

    def predict(self, X):
        """Predicted targets, shape (n_samples,)."""
        return self._raw_decision(X) * self.y_scale_ + self.y_mean_


class MKLOneClass(OutlierMixin, _TaskMKL):
    _task = "one-class"

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

    def _resolve_specs(self, n_features):
        if isinstance(self.kernels, str) and self.kernels == "grid":
            root = float(np.sqrt(n_features))
            return [rbf(s * root) for s in _ONE_CLASS_WIDTHS]
        return super()._resolve_specs(n_features)

    def fit(self, X, y=None, sample_weight=None):
        """Fit the kernel weights and the one-class SVM on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (finite), taken as inliers.
        y : ignored
            Accepted for API compatibility (see Notes).
        sample_weight : float or array-like of shape (n_samples,), optional
            Per-sample weights ``W_i >= 0``, as ``OneClassSVM.fit(
            sample_weight=)`` (libsvm's bounds ``W_i``; scaling all of them
            changes nothing). A sample of weight 0 is left out.

        Returns
        -------
        self
        """
        super().fit(X, y, sample_weight=sample_weight)
        self.offset_ = -float(self.intercept_[0])
        return self

    def _oracle_values(self):
        return {"nu": float(self.nu)}

    def decision_function(self, X):
        """``score_samples(X) - offset_``: positive for inliers, shape (n_samples,)."""
        return self._raw_decision(X)

    def score_samples(self, X):
        """``sum_i alpha_i K(x_i, x)``, the unshifted score (higher: more normal)."""
        return self._raw_decision(X) + self.offset_

    def predict(self, X):
        """+1 for inliers, -1 for outliers."""
        return np.where(self.decision_function(X) >= 0.0, 1, -1)
