"""Multiple kernel boosting classifier (scikit-learn compatible)."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._interrupt import fit_run
from ..driver import solve
from ..kernels import KernelBank
from ..methods import Boosting
from ..oracles import WeakLearners
from ..stopping import MaxIter, TimeLimit
from ._core import NORMALIZE, POSITIVE, RUN_PARAMS, STANDARDIZE, STORAGE_PARAMS
from ._fit import ClassifierBase
from ._ovo import pair_label, set_pair_attributes
from ._params import KernelSpecs, check_estimator_client, resolve_kernel_specs
from ._progress import call_lines
from ._sklearn import ConvergenceWarning, SharedClientMixin

__all__ = ["MKBoostClassifier"]


@dataclass
class _BoostPlan:
    """Validated parameters of one ``fit`` (lives only as long as the fit)."""

    C: float
    tol: float
    specs: list
    seeds: np.random.Generator
    verbose: int = 0
    #: Wall-clock deadline of the whole fit (``time.time()``), or None.
    deadline: float | None = None
    #: Binary problems not yet started: each gets an equal share of the
    #: time left when it starts.
    pairs_left: int = 1


@dataclass
class _BinaryBoost:
    """One binary problem after fitting: the ensemble and how to evaluate it.

    ``rows[k]`` is a one-kernel bank on the training points that kernel
    ``k``'s learners use as support vectors, so prediction evaluates only
    those kernels at only those points.
    """

    ensemble: object
    rows: dict
    constant: float
    result: object


def _decision(model, X):
    ens = model.ensemble
    if len(ens) == 0:
        return np.full(X.shape[0], model.constant)
    values = {k: bank.cross(X, [0])[0].T for k, bank in model.rows.items()}
    return ens.decision(values)


class MKBoostClassifier(SharedClientMixin, ClassifierBase):
    """Multiple kernel boosting classifier (MKBoost-D1, -D2, -S1, -S2).

    AdaBoost over single-kernel SVMs: every round draws a sample of the
    training set from the boosting distribution, trains one SVM per kernel
    on it (all kernels, or a random subset for the stochastic variants) and
    adds the best of them (D1, S1) or their weighted vote (D2, S2) to the
    ensemble. It runs :class:`mklopt.methods.Boosting` against the
    :class:`mklopt.oracles.WeakLearners` oracle with :func:`mklopt.solve`.

    Parameters
    ----------
    kernels : "grid" or list of kernel specs, default="grid"
        The base kernels. ``"grid"`` is the MKBoost paper's 17 kernels
        (:func:`mklopt.kernels.grid` with ``protocol="mkboost2013"``:
        Gaussian widths ``2**-6 .. 2**7`` and polynomial degrees 1..3, on all
        features). Otherwise a non-empty list of specs such as
        ``[rbf(1.0), rbf(4.0), poly(2)]``.
    variant : {"D1", "D2", "S1", "S2"}, default="D1"
        Deterministic (D: every kernel every round) or stochastic (S: kernel
        ``j`` drawn with probability ``S_t(j)``, decayed by ``decay`` with
        its error); best learner per round (1) or weighted vote of all
        learners of the round (2). See :class:`mklopt.methods.Boosting`.
    n_rounds : int, default=100
        Boosting rounds ``T``.
    sample_ratio : float, default=0.2
        Examples drawn per round, as a fraction of the training set, in
        (0, 1].
    decay : float, default=2**-5
        Kernel sampling decay ``beta`` of S1/S2, in (0, 1]; ``1`` makes them
        train every kernel every round.
    C : float, default=1.0
        Box constraint of every weak SVM, > 0. The Gaussian kernels have a
        unit diagonal, so ``C`` means what it means in ``sklearn.svm.SVC``
        (whose default it shares); the paper used ``C = 50``, which on the
        bundled sets fits the 20 % samples too closely (pima: 0.71 against
        0.74 with ``C = 1``).
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the example and kernel draws; an int gives the same model on
        every fit.
    normalize : {None, "trace", "diagonal"}, default=None
        None uses the kernels as they are (the paper trains LIBSVM on them);
        ``"trace"`` scales each to unit trace on the training set, which for
        a weak SVM on a sample of size ``r N`` acts like a smaller ``C``;
        ``"diagonal"`` to a unit mean diagonal, as for
        :class:`~mklopt.MKLClassifier`.
    tol : float, default=1e-3
        KKT tolerance of the SMO solver of each weak SVM (libsvm's default).
    storage : str or FeatureMap, default="auto"
        ``"auto"``, ``"dense"``, ``"on_the_fly"``, ``"feature_map"``, a name
        registered with :func:`mklopt.kernels.register_storage`, or a
        feature map. Where the training kernels live (see
        :meth:`mklopt.KernelBank.from_specs`): ``"dense"`` stores all
        ``n_kernels * n_samples**2`` entries, ``"on_the_fly"`` stores only the
        features and computes kernel rows as the solver reads them, skipping
        kernels with zero weight. ``"auto"`` keeps dense while it fits under
        ``max_memory``, so large training sets just work. Feature maps
        (``"feature_map"``, :func:`mklopt.kernels.nystroem`,
        :func:`mklopt.kernels.random_fourier`) train and predict on
        ``Phi_k Phi_k'``, exact for linear kernels, approximate for Gaussian ones.
    cache_size : float, optional
        Megabytes for the weak SVMs' row cache (used only
        when a sample is too large for its kernel block) (libsvm's
        ``cache_size``); default 2048 or a quarter of the memory limit.
    max_memory : int, optional
        Bytes the kernel storage may use. By default 80 % of the memory
        available when ``fit`` starts; a storage that would not fit is
        refused with a ``MemoryError`` before anything is allocated, naming
        the option that would.
    n_jobs : int, optional
        One-vs-one pairs fitted at the same time, through joblib (needed
        only for ``n_jobs`` other than None and 1). ``None`` means 1 unless
        a ``joblib.parallel_backend`` context says otherwise, ``-1`` all
        cores; inside ``joblib.parallel_backend("dask")`` the pairs run as
        tasks on a Dask cluster. Every pair runs the serial code on the
        same inputs; the model can differ only where BLAS rounds
        differently on another number of threads (the workers use one).
        In other processes, warnings raised while solving a pair are not
        shown.
    client : distributed.Client, optional
        A running Dask client (``pip install "mklopt[dask]"``): the weak
        SVMs of every boosting round are sent to its workers as tasks, one
        per chunk of kernels (:class:`mklopt.oracles.WeakLearners`). The
        model is the same as without a client. Cannot be combined with
        ``n_jobs``. Clones (``sklearn.base.clone``) share the client.
    time_limit : float, optional
        Wall-clock budget in seconds for the whole ``fit``, as for
        :class:`~mklopt.MKLClassifier`: kernel construction and all
        one-vs-one problems together, each problem with an equal share of
        the time left when it starts. It also stops a boosting round in
        progress (between its weak SVMs), so ``fit`` returns at most 10 %
        or 2 s after it; the rounds finished by then make the ensemble, and
        a :class:`ConvergenceWarning` says the limit ended the fit. When no
        round had finished, :class:`mklopt.stopping.NoPointError` is raised.
    verbose : int, default=0
        Progress on standard error, as for :class:`~mklopt.MKLClassifier`:
        1 a line (or a tqdm bar) as each binary problem ends, 2 also a line
        per boosting round (the exponential loss). See :doc:`/progress`.

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
    kernel_specs_ : list
        The base kernels used.
    n_kernels_ : int
        Their number ``m``.
    weights_ : ndarray of shape (n_kernels,) or (n_pairs, n_kernels)
        Share of the ensemble's vote each kernel carries (sums to 1; one row
        per one-vs-one pair with more than two classes).
    ensemble_ : Ensemble or list of Ensemble
        The boosted classifier(s) (:class:`mklopt.methods.boosting.Ensemble`):
        rounds, their weights and errors, the single-kernel SVMs.
    n_iter_ : int or ndarray of shape (n_pairs,)
        Rounds kept in the ensemble.
    n_fits_ : int or ndarray of shape (n_pairs,)
        Weak SVMs trained.
    stop_reason_ : str or list of str
        Why boosting stopped: ``"n_rounds"``, ``"zero_error"`` (a perfect
        weak learner) or ``"weak_learner_error"`` (a round's weighted error
        reached 1/2).
    history_ : tuple of Progress or list of them
        One row per round (see :class:`mklopt.methods.Boosting`).
    result_ : Result or list of Result
        The full record of each run.
    pairs_ : ndarray of shape (n_pairs, 2)
        Class indices of each binary problem (the second is its +1 class).
    models_ : list
        Internal per-pair models used by ``predict``.

    See Also
    --------
    mklopt.MKLClassifier : convex MKL over the same kernels.

    Notes
    -----
    ``decision_function`` (two classes) is the normalised vote
    ``sum_t alpha_t h_t(x) / sum_t alpha_t`` in ``[-1, 1]``; positive means
    ``classes_[1]``. Prediction evaluates only the kernels the ensemble
    uses, between the new points and the training points that are support
    vectors of some learner on that kernel. If the very first round is no
    better than chance the ensemble is empty and the model predicts the
    majority class (with a :class:`ConvergenceWarning`).

    *Multiclass.* One boosted ensemble per pair of classes, each on the
    samples of its two classes and seeded from ``random_state`` in turn;
    ``predict`` takes a majority vote, ties broken by the summed decision
    values (one-vs-one, as in the paper).

    References
    ----------
    H. Xia and S. C. H. Hoi. MKBoost: a framework of multiple kernel
    boosting. IEEE TKDE 25(7), 2013.

    Examples
    --------
    >>> from mklopt import MKBoostClassifier, datasets
    >>> X, y = datasets.load("sonar")
    >>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
    >>> clf = MKBoostClassifier(variant="S1", n_rounds=20, random_state=0)
    >>> clf = clf.fit(X_train, y_train)
    >>> clf.weights_.shape
    (17,)
    >>> bool(clf.score(X_test, y_test) > 0.7)
    True
    """

    _parameter_constraints = {
        "kernels": [KernelSpecs()],
        # The boosting method's own parameters, as the method declares them.
        **Boosting._parameter_constraints,
        "C": [POSITIVE],
        "normalize": NORMALIZE,
        "standardize": STANDARDIZE,
        "tol": [POSITIVE],
        **STORAGE_PARAMS,
        **RUN_PARAMS,
    }

    def __init__(
        self,
        kernels="grid",
        variant="D1",
        n_rounds=100,
        sample_ratio=0.2,
        decay=2**-5,
        C=1.0,
        random_state=None,
        normalize=None,
        standardize="auto",
        tol=1e-3,
        storage="auto",
        cache_size=None,
        max_memory=None,
        n_jobs=None,
        client=None,
        verbose=0,
        time_limit=None,
    ):
        self.kernels = kernels
        self.variant = variant
        self.n_rounds = n_rounds
        self.sample_ratio = sample_ratio
        self.decay = decay
        self.C = C
        self.random_state = random_state
        self.normalize = normalize
        self.standardize = standardize
        self.tol = tol
        self.storage = storage
        self.cache_size = cache_size
        self.max_memory = max_memory
        self.n_jobs = n_jobs
        self.client = client
        self.verbose = verbose
        self.time_limit = time_limit

    # ---- parameter validation ----------------------------------------------
    def _resolve_specs(self, n_features):
        return resolve_kernel_specs(self.kernels, n_features, protocol="mkboost2013")

    def _method(self, seed):
        return Boosting(
            variant=self.variant,
            n_rounds=self.n_rounds,
            sample_ratio=self.sample_ratio,
            decay=self.decay,
            random_state=seed,
        )

    def _prepare_fit(self, X):
        # The parameters, each checked by the constraint table when fit began.
        check_estimator_client(self.client, self.n_jobs)
        specs = self._resolve_specs(X.shape[1])
        deadline = None
        if self.time_limit is not None:
            deadline = time.time() + float(self.time_limit)  # wall clock: pairs may run elsewhere
        # One stream of seeds, one per binary problem in turn: the same
        # random_state gives the same model, pairs get different draws.
        return _BoostPlan(float(self.C), float(self.tol), specs,
                          np.random.default_rng(self.random_state),
                          verbose=int(self.verbose), deadline=deadline)

    def _prepare_problems(self, plan, X, problems, targets, labels):
        plan.pairs_left = len(problems)
        return plan, problems

    def _parents(self, plan, task, problems):
        # Boosting runs have no weights to start from: the pairs are independent.
        return None

    def _stop(self, plan):
        # The method stops itself after n_rounds; MaxIter only guards the loop.
        stop = MaxIter(int(self.n_rounds) + 1)
        if plan.deadline is not None:
            share = (plan.deadline - time.time()) / max(1, plan.pairs_left)
            plan.pairs_left = max(1, plan.pairs_left - 1)
            stop = stop | TimeLimit(max(share, 1e-9))
        return stop

    def _pair_extras(self, plan, n_pairs):
        # Every pair's seed is drawn here, in pair order, so that pairs
        # fitted in parallel get the seeds of the serial loop.
        return [(int(plan.seeds.integers(2**63 - 1)),) for _ in range(n_pairs)]

    # ---- one binary problem ------------------------------------------------
    def _fit_problem(self, plan, X, problem, seed):
        y = problem.y
        bank = KernelBank.from_specs(
            X,
            plan.specs,
            storage=self.storage,
            normalize=self.normalize,
            cache_size=self.cache_size,
            max_memory=self.max_memory,
        )
        oracle = WeakLearners(bank, y, C=plan.C, tol=plan.tol, client=self.client)
        method = self._method(seed)
        result = solve(oracle, method, stop=self._stop(plan),
                       callback=call_lines(plan.verbose, type(self).__name__, oracle,
                                           value_label=method.value_label))
        ens = result.extra["ensemble"]
        rows = {
            int(k): bank.functions.take(ens.support[int(k)]).subset([int(k)])
            for k in ens.kernels
            if ens.support[int(k)].size > 0
        }
        # A learner without support vectors (one-class sample) is constant:
        # an empty bank would do, a zero-row block is what it needs.
        for k in ens.kernels:
            if int(k) not in rows:
                rows[int(k)] = _EmptyRows()
        return _BinaryBoost(ens, rows, float(np.mean(y)), result)

    def _decision_binary(self, model, X):
        return _decision(model, X)

    def fit(self, X, y):
        """Fit one boosted ensemble per pair of classes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes.

        Returns
        -------
        self
        """
        self._validate_params()
        # Stoppable as a whole (time_limit, Ctrl-C), kernel construction included.
        with fit_run(type(self).__name__, self.time_limit, self.verbose):
            return self._fit_task(X, y)

    def _finish_fit(self, plan, models, problems):
        self.kernel_specs_ = list(plan.specs)
        self.n_kernels_ = len(plan.specs)
        results = [mdl.result for mdl in models]
        ensembles = [mdl.ensemble for mdl in models]
        set_pair_attributes(
            self,
            weights_=np.vstack([np.asarray(r.weights, dtype=np.float64) for r in results]),
            ensemble_=ensembles,
            n_iter_=np.array([len(e) for e in ensembles], dtype=np.int64),
            n_fits_=np.array([r.extra["n_fits"] for r in results], dtype=np.int64),
            stop_reason_=[r.reason for r in results],
            history_=[r.history for r in results],
            result_=results,
        )
        timed_out = [
            pair_label(self.classes_, i, j)
            for (i, j), r in zip(self.pairs_, results, strict=True)
            if r.reason == "time_limit"
        ]
        if timed_out:
            warnings.warn(
                f"{type(self).__name__}: time_limit={self.time_limit:g} s ended the boosting of "
                f"{', '.join(timed_out)} before n_rounds; those ensembles keep the rounds that "
                "finished. Raise time_limit or lower n_rounds",
                ConvergenceWarning,
                stacklevel=3,
            )
        empty = [
            pair_label(self.classes_, i, j)
            for (i, j), e in zip(self.pairs_, ensembles, strict=True)
            if len(e) == 0
        ]
        if empty:
            warnings.warn(
                f"{type(self).__name__}: the first weak learner was no better than chance for "
                f"{', '.join(empty)}; that model predicts the majority class. Raise "
                "sample_ratio or C, or use other kernels",
                ConvergenceWarning,
                stacklevel=3,
            )


class _EmptyRows:
    """Stands in for a one-kernel bank when no learner on it has support vectors."""

    def cross(self, X, kernels):
        return np.zeros((1, X.shape[0], 0))
