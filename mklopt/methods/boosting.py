"""Multiple kernel boosting: MKBoost-D1, -D2, -S1, -S2 (Xia & Hoi).

The method runs AdaBoost with single-kernel SVMs as weak learners. Each
round it asks the :class:`~mklopt.oracles.WeakLearners` oracle for SVMs
trained on a sample drawn from the example distribution ``D_t``, one per
kernel of a kernel set (all kernels for the deterministic variants, a
random subset drawn with probabilities ``S_t`` for the stochastic ones),
combines them into the round's classifier ``h_t`` and reweights the
examples. There is no kernel-weight optimum and no duality gap here: the
"value" the method reports is the ensemble's exponential loss on the
training set, ``(1/N) sum_i exp(-y_i F(x_i)) = prod_t Z_t``, which AdaBoost
decreases every round and which bounds the training error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
from numpy.typing import NDArray

from .._constraints import InstanceOf, Interval, Options, validate_params
from .._jit.boost import reweight, weighted_error
from ..oracles.weak_learners import BoostQuery
from ._base import MethodBase, register

__all__ = ["Boosting", "BoostRound", "Ensemble"]

#: Weighted errors are clipped to ``[_ERR_FLOOR, 1 - _ERR_FLOOR]`` inside
#: ``1/2 ln((1 - e) / e)``: a perfect learner gets the finite weight
#: ``1/2 ln((1 - 1e-10) / 1e-10) ~ 11.5`` instead of infinity.
_ERR_FLOOR = 1e-10

_VARIANTS = ("D1", "D2", "S1", "S2")


def _learner_weight(err):
    e = np.clip(err, _ERR_FLOOR, 1.0 - _ERR_FLOOR)
    return 0.5 * np.log((1.0 - e) / e)


def _round_weight(err):
    """:func:`_learner_weight` of one float, without NumPy's per-call cost."""
    e = min(max(err, _ERR_FLOOR), 1.0 - _ERR_FLOOR)
    return 0.5 * math.log((1.0 - e) / e)


def _draw(rng, p, size):
    """``size`` indices drawn with replacement with probabilities ``p``.

    The draws of ``rng.choice(p.size, size, replace=True, p=p)`` (the same
    cumulative sums searched with the same uniform numbers) without its
    checks of ``p``, which the method keeps a distribution by construction.
    """
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return cdf.searchsorted(rng.random(size), side="right")


def _shares(weights):
    """Split of a round's weight over its learners: ``|alpha_t^j|`` normalised.

    Evenly when every ``alpha_t^j`` is 0 (all learners exactly at chance).
    """
    a = np.abs(np.asarray(weights, dtype=np.float64))
    total = a.sum()
    return a / total if total > 0.0 else np.full(a.shape, 1.0 / a.size)


def _vote(weights, predictions):
    """``sign(sum_j weights_j predictions_j)`` with 0 mapped to -1 (as ``> 0``)."""
    return np.where(weights @ predictions > 0.0, 1.0, -1.0)


@dataclass(frozen=True, slots=True, eq=False)
class BoostRound:
    """One boosting round kept in the ensemble.

    Attributes
    ----------
    alpha : float
        Weight ``alpha_t`` of the round's classifier ``h_t``.
    learners : tuple of WeakLearner
        The single-kernel SVMs that make up ``h_t`` (one for D1/S1).
    weights : ndarray of shape (len(learners),)
        Their vote weights ``alpha_t^j`` inside ``h_t`` (``[1.0]`` for D1/S1).
    error : float
        Weighted error ``e_t`` of ``h_t`` under ``D_t``.
    Z : float
        Normaliser of the distribution update, ``sum_i D_t(i) exp(-alpha_t y_i h_t(x_i))``.
    """

    alpha: float
    learners: tuple
    weights: NDArray[np.float64]
    error: float
    Z: float


class Ensemble:
    """The boosted classifier ``F(x) = sum_t alpha_t h_t(x)``.

    It records which kernels and which training points (support vectors) it
    needs, so that prediction evaluates only those kernel values.

    Parameters
    ----------
    rounds : sequence of BoostRound
    n_kernels : int
        Size of the kernel bank the learners index into.

    Attributes
    ----------
    rounds : tuple of BoostRound
    kernels : ndarray of int64
        Sorted indices of the kernels the ensemble uses.
    support : dict of int to ndarray of int64
        For each used kernel, the sorted training indices whose kernel
        values prediction needs (union of its learners' support vectors).
    """

    def __init__(self, rounds, n_kernels):
        self.rounds = tuple(rounds)
        self.n_kernels = int(n_kernels)
        sets = {}
        for rnd in self.rounds:
            for lrn in rnd.learners:
                sets.setdefault(lrn.kernel, []).append(lrn.support)
        self.support = {
            k: np.unique(np.concatenate(v)).astype(np.int64) for k, v in sorted(sets.items())
        }
        self.kernels = np.array(sorted(self.support), dtype=np.int64)
        # Position of each learner's support vectors inside its kernel's union.
        self._pos = [
            [np.searchsorted(self.support[lrn.kernel], lrn.support) for lrn in rnd.learners]
            for rnd in self.rounds
        ]

    def __len__(self):
        return len(self.rounds)

    def __repr__(self):
        n_sv = sum(s.shape[0] for s in self.support.values())
        return (
            f"Ensemble({len(self.rounds)} rounds, kernels {self.kernels.tolist()}, "
            f"{n_sv} kernel rows)"
        )

    @property
    def alphas(self):
        """Round weights ``alpha_t``, shape ``(n_rounds,)``."""
        return np.array([r.alpha for r in self.rounds], dtype=np.float64)

    @property
    def errors(self):
        """Weighted errors ``e_t`` of the rounds, shape ``(n_rounds,)``."""
        return np.array([r.error for r in self.rounds], dtype=np.float64)

    def kernel_weights(self):
        """Share of the vote each kernel carries, shape ``(n_kernels,)``, sums to 1.

        Round ``t`` contributes ``alpha_t`` split over its learners in
        proportion to ``|alpha_t^j|`` (evenly if all are 0). All zeros for an
        empty ensemble.
        """
        w = np.zeros(self.n_kernels)
        for rnd in self.rounds:
            for lrn, share in zip(rnd.learners, _shares(rnd.weights), strict=True):
                w[lrn.kernel] += rnd.alpha * share
        s = w.sum()
        return w / s if s > 0 else w

    def decision(self, kernel_values):
        """Normalised vote ``F(x) / sum_t alpha_t``, in ``[-1, 1]``.

        Parameters
        ----------
        kernel_values : mapping of int to ndarray of shape (len(support[k]), n_points)
            For every ``k`` in ``kernels``, kernel ``k`` between the training
            points ``support[k]`` and the points to classify.

        Returns
        -------
        ndarray of shape (n_points,)
            Zeros for an empty ensemble.
        """
        n_points = None
        for k in self.kernels:
            n_points = np.shape(kernel_values[int(k)])[1]
            break
        if n_points is None:
            raise ValueError("an empty ensemble cannot tell how many points to classify")
        F = np.zeros(n_points)
        total = 0.0
        for rnd, positions in zip(self.rounds, self._pos, strict=True):
            preds = np.empty((len(rnd.learners), n_points))
            for j, (lrn, pos) in enumerate(zip(rnd.learners, positions, strict=True)):
                Kv = np.asarray(kernel_values[lrn.kernel])
                d = lrn.coef @ Kv[pos] + lrn.bias
                preds[j] = np.where(d > 0.0, 1.0, -1.0)
            F += rnd.alpha * _vote(rnd.weights, preds)
            total += rnd.alpha
        return F / total if total > 0 else F

    def decision_on_training(self, K):
        """:meth:`decision` on the training points, from the bank's ``K`` (m, n, n)."""
        K = np.asarray(K)
        return self.decision({int(k): K[k][self.support[int(k)]] for k in self.kernels})


@dataclass(frozen=True, slots=True)
class _Score:
    """The record the driver reads as ``best``: the ensemble's exponential loss."""

    value: float


@dataclass
class _State:
    rng: np.random.Generator
    y: NDArray[np.float64]
    D: NDArray[np.float64]  # example distribution D_t
    S: NDArray[np.float64]  # kernel sampling probabilities S_t
    n_draw: int  # examples drawn per round
    F: NDArray[np.float64]  # sum_t alpha_t h_t(x_i) on the training set
    log_loss: float = 0.0  # sum_t log Z_t
    rounds: list = field(default_factory=list)
    round_errors: list = field(default_factory=list)  # e_t of every round asked
    n_fits: int = 0  # SVMs trained
    n_solver_iter: int = 0  # their SMO iterations
    svm_seconds: float = 0.0  # seconds the oracle spent training them
    kernel_w: NDArray[np.float64] | None = None


@register("mkboost", "boosting")
class Boosting(MethodBase):
    """MKBoost: AdaBoost over single-kernel SVMs (Xia & Hoi, Algorithms 1-4).

    Parameters
    ----------
    variant : {"D1", "D2", "S1", "S2"}, default="D1"
        ``"D1"``: each round trains one SVM per kernel and keeps the one with
        the smallest weighted error (Algorithm 1). ``"D2"``: keeps all of
        them, combined as ``sign(sum_j alpha_t^j h_t^j)`` with
        ``alpha_t^j = 1/2 ln((1 - e_t^j) / e_t^j)`` (Algorithm 2, eq. 2.8).
        ``"S1"``/``"S2"``: as D1/D2 but each round trains only a random subset
        of kernels, kernel ``j`` drawn with probability ``S_t(j)``
        (Algorithms 3 and 4).
    n_rounds : int, default=100
        Boosting rounds ``T``; the method stops itself after them.
    sample_ratio : float, default=0.2
        Examples drawn (with replacement, from ``D_t``) per round, as a
        fraction of the training set size; in (0, 1].
    decay : float, default=2**-5
        Sampling decay ``beta`` of the stochastic variants, in (0, 1]:
        ``S_{t+1}(j) = S_t(j) beta^{e_t^j}`` for the kernels trained, then
        ``S_{t+1} / max(S_{t+1})`` (eq. 2.10). ``1`` trains every kernel every
        round. Ignored by D1 and D2.
    random_state : None, int or numpy.random.Generator, default=None
        Source of the example and kernel draws; an int makes runs
        reproducible (each ``start`` reseeds).

    The report's best point is the ensemble so far: its ``value`` is the
    exponential training loss ``prod_t Z_t`` (1 for the empty ensemble) and
    its weights the share of the vote each kernel carries (see
    :meth:`Ensemble.kernel_weights`).

    Notes
    -----
    A round ``t`` with distribution ``D_t`` (``D_1 = 1/N``):

    1. draw ``n = round(sample_ratio N)`` indices from ``D_t``; choose the
       kernel set (all kernels, or each ``j`` with probability ``S_t(j)``,
       and at least one: if the draw is empty one kernel is drawn with
       probabilities proportional to ``S_t``);
    2. the oracle trains one SVM per kernel on the sample and returns the
       weighted errors ``e_t^j`` (eq. 2.4);
    3. ``h_t`` is the best learner (D1, S1) or the weighted vote (D2, S2);
       ``e_t`` its weighted error, ``alpha_t = 1/2 ln((1 - e_t) / e_t)``;
    4. ``D_{t+1}(i) = D_t(i) exp(-alpha_t y_i h_t(x_i)) / Z_t``.

    Edge cases: a weighted error of 0 would give an infinite weight; it is
    capped at ``1/2 ln((1 - 1e-10) / 1e-10) ~ 11.5`` (also for the vote
    weights ``alpha_t^j``), the round is kept and the run stops (reason
    ``"zero_error"``, converged: the ensemble has nothing left to learn on
    the training set). A round whose ``e_t >= 1/2`` breaks the weak-learning
    assumption (``e_t >= 1/2 - 1e-10``, so that rounding does not let a
    learner at chance through); it is discarded and the run stops with the
    ensemble so far
    (reason ``"weak_learner_error"``, not converged). Otherwise the run
    ends after ``n_rounds`` (reason ``"n_rounds"``, converged: the
    algorithm has run as specified).

    The distribution and the kernel probabilities are the method's own
    state; the driver's history records per round the oracle's ``value``
    (the smallest weighted error of the round's learners), the exponential
    loss as ``upper`` and the vote shares as ``weights``. There is
    no lower bound (``-inf``) and no duality gap (``nan``).

    References
    ----------
    H. Xia and S. C. H. Hoi. MKBoost: a framework of multiple kernel
    boosting. IEEE TKDE 25(7), 2013 (``shared/papers/xia-hoi2013-mkboost.md``).

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt import solve
    >>> from mklopt.methods import Boosting
    >>> from mklopt.oracles import WeakLearners
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = np.where(X[:, 0] > 0, 1, -1)
    >>> K = np.stack([X @ X.T + 1.0, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    >>> res = solve(WeakLearners(K, y, C=10.0), Boosting("D1", n_rounds=5, random_state=0))
    >>> res.reason in ("n_rounds", "zero_error"), res.value < 1.0
    (True, True)
    """

    oracle_kind = "weak_learners"
    query_is_array = False
    value_label = "exp loss"

    def __init__(
        self, variant="D1", n_rounds=100, sample_ratio=0.2, decay=2**-5, random_state=None
    ):
        self.variant = variant
        self.n_rounds = n_rounds
        self.sample_ratio = sample_ratio
        self.decay = decay
        self.random_state = random_state

    #: What each hyper-parameter may be (see :mod:`mklopt._constraints`);
    #: :class:`~mklopt.MKBoostClassifier` declares its own with these entries.
    _parameter_constraints = {
        "variant": [Options(_VARIANTS)],
        "n_rounds": [Interval(Integral, 1, None)],
        "sample_ratio": [Interval(Real, 0.0, 1.0, closed="right")],
        "decay": [Interval(Real, 0.0, 1.0, closed="right")],
        "random_state": [None, Interval(Integral, 0, None),
                         InstanceOf(np.random.Generator, "a numpy.random.Generator")],
    }

    def check_params(self, n_kernels=None):
        """Validate the hyper-parameters; raise ``TypeError``/``ValueError`` naming the bad one."""
        validate_params(self._parameter_constraints, self.get_params(), type(self).__name__)

    # ---- hooks ---------------------------------------------------------------
    def _start(self, oracle):
        ratio = float(self.sample_ratio)
        rs = self.random_state
        if not hasattr(oracle, "y") or not hasattr(oracle, "n_kernels"):
            raise TypeError(
                "Boosting needs a weak-learner oracle (mklopt.oracles.WeakLearners) with "
                f"labels y and n_kernels; got {type(oracle).__name__}"
            )
        y = np.asarray(oracle.y, dtype=np.float64)
        N, m = y.shape[0], int(oracle.n_kernels)
        state = _State(
            rng=np.random.default_rng(rs),
            y=y,
            D=np.full(N, 1.0 / N),
            S=np.ones(m),
            n_draw=max(2, int(round(ratio * N))),
            F=np.zeros(N),
            kernel_w=np.zeros(m),
        )
        self._mb_offer(np.zeros(m), _Score(1.0))  # the empty ensemble: F = 0, exp loss 1
        return None, state

    def _ask(self, s):
        m = s.S.shape[0]
        sample = _draw(s.rng, s.D, s.n_draw)
        if self.variant[0] == "D":
            kernels = np.arange(m)
        else:
            # rng.random() < 1 always, so S(j) = 1 means "always drawn".
            kernels = np.flatnonzero(s.rng.random(m) < s.S)
            if kernels.shape[0] == 0:
                kernels = np.array([s.rng.choice(m, p=s.S / s.S.sum())])
        return BoostQuery.make(sample, kernels, s.D)

    def _tell(self, s, query, answer):
        errors = np.asarray(answer.errors, dtype=np.float64)
        P = np.asarray(answer.predictions, dtype=np.float64)
        kernels = np.asarray(answer.kernels, dtype=np.int64)
        # Read only the learners kept: the oracle may build them on access.
        learners = answer.learners
        s.n_fits += kernels.shape[0]
        s.n_solver_iter += int(getattr(answer, "n_solver_iter", 0))
        s.svm_seconds += float(getattr(answer, "seconds", 0.0))
        if self.variant[0] == "S":
            # eq. 2.10, then rescale so that the best kernel has S = 1
            s.S[kernels] *= float(self.decay) ** errors
            s.S /= s.S.max()

        if self.variant[1] == "1":
            j = int(np.argmin(errors))
            h = P[j]
            members, weights = (learners[j],), np.ones(1)
        else:
            weights = _learner_weight(errors)
            h = _vote(weights, P)
            members = tuple(learners)
        h = np.ascontiguousarray(h, dtype=np.float64)
        err = weighted_error(s.D, s.y, h)
        s.round_errors.append(err)

        # "reaches 1/2" up to rounding: a sum of D over half the points of a
        # balanced set can land a hair below 0.5 and would give alpha ~ 1e-16.
        if err >= 0.5 - _ERR_FLOOR:
            self._finish("weak_learner_error", converged=False)
            return None
        alpha = _round_weight(err)
        # D_{t+1} = D_t exp(-alpha y h) / Z_t and F += alpha h, in place (the
        # query holds its own copy of D_t).
        Z = reweight(s.D, s.y, h, s.F, alpha)
        s.log_loss += math.log(Z)
        s.rounds.append(BoostRound(alpha, members, np.array(weights, dtype=np.float64), err, Z))
        for lrn, share in zip(members, _shares(weights), strict=True):
            s.kernel_w[lrn.kernel] += alpha * share
        if err <= _ERR_FLOOR:
            self._finish("zero_error", converged=True)
        elif len(s.rounds) >= self.n_rounds:
            self._finish("n_rounds", converged=True)
        return None

    def _candidate(self, s, query, answer):
        # The ensemble after the round, scored by its exponential loss (which
        # every kept round lowers); a discarded round offers nothing.
        if not s.rounds or s.kernel_w.sum() <= 0.0:
            return None
        return s.kernel_w / s.kernel_w.sum(), _Score(math.exp(s.log_loss))

    # ---- reporting -------------------------------------------------------------

    @property
    def distribution(self):
        """The current example distribution ``D_t`` (a copy)."""
        return self._mb_require_started().state.D.copy()

    @property
    def kernel_probabilities(self):
        """The current kernel sampling probabilities ``S_t`` (a copy)."""
        return self._mb_require_started().state.S.copy()

    def _extra(self, s):
        """The ensemble and the boosting state, for ``Result.extra``.

        Returns
        -------
        dict
            ``ensemble`` (:class:`Ensemble`), ``alphas`` and ``errors`` of the
            kept rounds, ``round_errors`` (every round asked, the discarded
            last one included), ``distribution`` (``D`` after the last
            round), ``kernel_probabilities`` (``S``), ``n_fits`` (SVMs
            trained), ``n_solver_iter`` (their SMO iterations),
            ``svm_seconds`` (wall-clock seconds the oracle spent training and
            evaluating them: the rest of a fit is the boosting loop around
            them), ``train_margin`` (``F(x_i) / sum_t alpha_t`` on the
            training points) and ``exp_loss`` (``prod_t Z_t``).
        """
        ens = Ensemble(s.rounds, s.S.shape[0])
        total = float(sum(r.alpha for r in s.rounds))
        return {
            "ensemble": ens,
            "alphas": ens.alphas,
            "errors": ens.errors,
            "round_errors": np.array(s.round_errors, dtype=np.float64),
            "distribution": s.D.copy(),
            "kernel_probabilities": s.S.copy(),
            "n_fits": s.n_fits,
            "n_solver_iter": s.n_solver_iter,
            "svm_seconds": s.svm_seconds,
            "train_margin": s.F / total if total > 0 else s.F.copy(),
            "exp_loss": math.exp(s.log_loss),
        }
