"""The boosting oracle: one SVM per kernel on a weighted sample (see docs/mkboost.md).

MKBoost (Xia & Hoi) does not move kernel weights. Each boosting round asks
for a *sample* of training indices, drawn with replacement from the current
example distribution ``D_t``, and a *set of kernels*; the oracle trains one
SVM per kernel on that sample and reports how each one classifies the whole
training set and its error under ``D_t`` (the paper's eq. 2.4). Everything
else (which learners to keep, their weights, the next distribution) is the
outer method's business (:class:`mklopt.methods.Boosting`).
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from .._interrupt import check, current_flag
from .._jit.boost import (
    distinct_points,
    query_fault,
    round_errors,
    weak_svm_round,
    weak_svm_round_parallel,
)
from .._parallel import run_on_scattered
from .._validation import check_int, check_labels, check_real
from ..kernels.bank import as_bank
from ..kernels.sharded import check_client
from ..kernels.storage import DenseStorage
from ._warnings import ConvergenceWarning

__all__ = ["WeakLearners", "WeakLearner", "WeakLearnersAnswer", "BoostQuery"]

#: Largest kernel block (bytes) a round reads at once: the rows of the
#: sample's distinct points against all training points, for as many
#: kernels as fit.
_BLOCK_BYTES = 256 * 2**20
#: A round's SVMs are spread over numba's threads once a round has taken at
#: least this long. Measured on 2 cores: 1.4-1.6x on rounds of 0.3-110 ms
#: when the other core is idle; when it is busy, rounds of 20 ms and more
#: lose nothing, while rounds of 1-6 ms took 2-5x longer (the parallel
#: region waits for a thread the busy core has not scheduled yet).
PARALLEL_ROUND_SECONDS = 0.02


def _frozen(a, dtype):
    a = np.array(a, dtype=dtype, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True, eq=False)
class BoostQuery:
    """One boosting round's request to :class:`WeakLearners`.

    Attributes
    ----------
    sample : ndarray of int64, shape (n_draws,)
        Training indices to train on; repeats allowed (a draw with
        replacement counts a point once per copy).
    kernels : ndarray of int64, shape (n_selected,)
        Distinct kernel indices, one SVM each.
    distribution : ndarray of float64, shape (n_samples,) or None
        ``D_t`` under which the weighted errors are measured; ``None`` means
        uniform.
    """

    sample: NDArray[np.int64]
    kernels: NDArray[np.int64]
    distribution: NDArray[np.float64] | None = None

    @classmethod
    def make(cls, sample, kernels, distribution=None):
        """Build a query whose arrays are read-only copies."""
        dist = None if distribution is None else _frozen(distribution, np.float64)
        return cls(_frozen(sample, np.int64), _frozen(kernels, np.int64), dist)


@dataclass(frozen=True, slots=True, eq=False)
class WeakLearner:
    """A trained single-kernel SVM, reduced to what prediction needs.

    The decision function is ``sum_s coef_s K_kernel(x_support_s, x) + bias``
    and the prediction is ``+1`` where it is positive, ``-1`` elsewhere
    (scikit-learn's rule).

    Attributes
    ----------
    kernel : int
        Index of the kernel in the bank.
    support : ndarray of int64
        Distinct training indices of the support vectors, sorted.
    coef : ndarray of float64, same shape as ``support``
        ``alpha_s * y_s`` summed over the copies of each support vector in
        the sample.
    bias : float
        Offset of the decision function.
    """

    kernel: int
    support: NDArray[np.int64]
    coef: NDArray[np.float64]
    bias: float

    def decision(self, K_support):
        """Decision values from the kernel rows of the support vectors.

        Parameters
        ----------
        K_support : ndarray of shape (n_support, n_points)
            ``K_kernel(x_support_s, x_p)``.

        Returns
        -------
        ndarray of shape (n_points,)
        """
        return self.coef @ K_support + self.bias


@dataclass(frozen=True, slots=True, eq=False)
class WeakLearnersAnswer:
    """What :class:`WeakLearners` returns for one :class:`BoostQuery`.

    Attributes
    ----------
    value : float
        Smallest weighted error of the round (the oracle's objective).
    kernels : ndarray of int64, shape (n_selected,)
        The kernels trained, in the order of the query.
    errors : ndarray of float64, shape (n_selected,)
        Weighted error ``sum_i D(i) [h_j(x_i) != y_i]`` of each learner.
    predictions : ndarray of float64, shape (n_selected, n_samples)
        Each learner's ``+-1`` predictions on all training points.
    decision : ndarray of float64, shape (n_selected, n_samples)
        The decision values behind them.
    learners : sequence of WeakLearner
        The trained learners, one per kernel, in the order of ``kernels``
        (each is built when first read, then kept).
    n_solver_iter : int
        SMO iterations summed over the learners.
    seconds : float
        Wall-clock seconds spent training the round's SVMs and evaluating
        them on all points: the jitted round, with the kernel blocks it
        reads when the storage computes them, or its Dask tasks from
        submission to gathering. The rest of a call is the query checks
        and the bookkeeping around them.
    """

    value: float
    kernels: NDArray[np.int64]
    errors: NDArray[np.float64]
    predictions: NDArray[np.float64]
    decision: NDArray[np.float64]
    learners: Sequence
    n_solver_iter: int = 0
    seconds: float = 0.0


class _Learners(Sequence):
    """The learners of one round, built from its arrays when first read.

    A round trains its SVMs in one jitted call; the per-learner records are
    only made for the learners a method keeps (MKBoost-D1 keeps one).
    """

    def __init__(self, kernels, uniq, coef, bias):
        self._kernels, self._uniq, self._coef, self._bias = kernels, uniq, coef, bias
        self._made = [None] * kernels.shape[0]

    def __len__(self):
        return len(self._made)

    def __getitem__(self, j):
        if isinstance(j, slice):
            return tuple(self[i] for i in range(len(self))[j])
        lrn = self._made[j]
        if lrn is None:
            c = self._coef[j]
            nz = np.flatnonzero(c)
            lrn = WeakLearner(
                int(self._kernels[j]),
                _frozen(self._uniq[nz], np.int64),
                _frozen(c[nz], np.float64),
                float(self._bias[j]),
            )
            self._made[j] = lrn
        return lrn


def _run_round(costs, K, kernels, scale, rows, *rest):
    """:func:`weak_svm_round`, or given the kernels' expected ``costs`` its parallel twin.

    The twin gives the same answers; it starts the costliest SVMs first and
    hands them out one at a time. ``costs=None`` (or one kernel) is serial.
    A round stopped part-way (:mod:`mklopt._interrupt`) raises ``Stopped``:
    its outputs are incomplete and are dropped.
    """
    stop = current_flag()
    if costs is None or kernels.shape[0] < 2:
        weak_svm_round(K, kernels, scale, rows, *rest, stop)
    else:
        order = np.argsort(-np.asarray(costs), kind="stable").astype(np.int64)
        with numba.parallel_chunksize(1):
            weak_svm_round_parallel(K, kernels, scale, rows, *rest, order, stop)
    check(stop)


def _round_blocks(B, uniq, yu, upper, tol, max_iter, *out, costs=None):
    """A round's weak SVMs on computed blocks ``B`` (r, u, n) (see :func:`weak_svm_round`)."""
    r, u = B.shape[0], B.shape[1]
    ar = np.arange(max(r, u), dtype=np.int64)
    _run_round(costs, B, ar[:r], np.ones(r), ar[:u], uniq, yu, upper, tol, max_iter, *out)


def _round_chunk_from(storage, kernels, uniq, yu, upper, tol, max_iter):
    """:func:`_round_chunk` reading its blocks from a bank's storage scattered to the worker."""
    everyone = np.arange(storage.n_samples, dtype=np.int64)
    return _round_chunk(storage.blocks(kernels, uniq, everyone), uniq, yu, upper, tol, max_iter)


def _round_chunk(B, uniq, yu, upper, tol, max_iter):
    """A chunk of a round's weak SVMs as one Dask task (see :func:`weak_svm_round`)."""
    r, n = B.shape[0], B.shape[2]
    out = (np.empty((r, B.shape[1])), np.empty(r), np.empty((r, n)),
           np.empty(r, dtype=np.int64), np.empty(r))
    _round_blocks(B, uniq, yu, upper, tol, max_iter, *out)
    return out



class WeakLearners:
    """Boosting oracle: one SVM per kernel on a sample, judged on all points.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        The base kernels on the training set. Raw matrices are wrapped with
        ``KernelBank.from_matrices`` (which checks them).
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}, both present.
    C : float, default=50
        Box constraint of every SVM, > 0 (the MKBoost paper's value).
    tol : float, default=1e-3
        SMO tolerance on the maximal KKT violation (libsvm's ``eps``).
    max_iter : int, optional
        SMO iteration budget per SVM; default ``max(100_000, 100 n_draws)``
        for a sample of ``n_draws`` points. A weak SVM needs a few hundred
        iterations on well-scaled data; the budget only matters for badly
        scaled kernels (e.g. polynomial kernels on unstandardised features,
        where the tolerance is below the rounding error of the gradient).
        A learner cut off by it is still a feasible SVM and is used; a
        :class:`ConvergenceWarning` says so.
    client : dask.distributed.Client, optional
        Train the SVMs of a round as Dask tasks, one per chunk of kernels
        (default: one chunk per worker). The answers are the same as
        without a client. Worth it when a round's SVMs are large (a task
        costs a few milliseconds and carries its kernel blocks).
    chunk_size : int, optional
        Kernels per task with a ``client`` (default: the kernels of the
        round divided evenly over the workers).

    Attributes
    ----------
    n_kernels, n_samples : int
        Bank dimensions.
    n_calls : int
        Rounds answered so far.
    n_fits : int
        SVMs trained so far (a deterministic MKBoost round trains
        ``n_kernels``, a stochastic one fewer).
    n_unconverged : int
        Those of them stopped by ``max_iter`` above ``tol``.

    Notes
    -----
    A call trains, for each kernel ``k`` of the query, the SVM dual on the
    sub-kernel ``K_k[idx][:, idx]`` of the sample ``idx`` (a point drawn
    twice appears twice, as in a bootstrap; SMO copes with the zero
    curvature between copies), then evaluates it on all ``n`` training
    points through the rows of its support vectors only. The copies of a
    point are merged into one variable bounded by ``C`` times its number of
    draws, which is the same SVM (see :mod:`mklopt._jit.boost`). All the SVMs of a
    round are trained in one jitted call
    (:func:`mklopt._jit.boost.weak_svm_round`), from one request to the
    storage: the rows of the sample's distinct points against all training
    points (``bank.storage.blocks(kernels, unique(idx), all)``), which hold
    both the training blocks and the support rows. The copies of a
    support vector are merged, so a learner stores each training index at
    most once. A sample holding one class only gives the constant
    classifier of that class (``alpha = 0``, bias of its sign).

    Once a round's SVMs have taken ``PARALLEL_ROUND_SECONDS`` (20 ms) or
    more, the next rounds spread them over numba's threads, one kernel at a
    time, those whose SVMs took the most SMO iterations in the last round
    first (:func:`mklopt._jit.boost.weak_svm_round_parallel`). Each SVM is
    solved by the same code either way, so the learners are the same, bit
    for bit. Shorter rounds stay serial: on a machine whose other cores are
    busy, a parallel loop waits for threads to be scheduled, which costs
    more than a short round gains.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.oracles import WeakLearners
    >>> from mklopt.oracles.weak_learners import BoostQuery
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> K = np.stack([X @ X.T + 1.0, np.exp(-(X - X.T) ** 2)])
    >>> oracle = WeakLearners(K, [-1, -1, 1, 1], C=10.0)
    >>> ans = oracle(BoostQuery.make([0, 1, 2, 3, 3], [0, 1]))
    >>> ans.predictions.astype(int).tolist()
    [[-1, -1, 1, 1], [-1, -1, 1, 1]]
    >>> ans.errors.tolist(), oracle.n_fits
    ([0.0, 0.0], 2)
    """

    def __init__(self, bank, y, C=50.0, tol=1e-3, max_iter=None, client=None, chunk_size=None):
        self.bank = as_bank(bank)
        self.n_kernels = int(self.bank.n_kernels)
        self.n_samples = int(self.bank.n_samples)
        self.y = check_labels(y, self.n_samples, name="y")
        self.C = check_real(C, "C", low=0.0, strict_low=True)
        self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
        self.max_iter = None if max_iter is None else check_int(max_iter, "max_iter", low=1)
        self.chunk_size = None if chunk_size is None else check_int(chunk_size, "chunk_size",
                                                                    low=1)
        self.client = client
        self._n_workers = 1
        if client is not None:
            self._n_workers = len(check_client(client))
        self.n_calls = 0
        self.n_fits = 0
        self.n_unconverged = 0
        # The last round's SVM time and loop, which pick the next one's loop,
        # and each kernel's last SMO iterations, which order a parallel one.
        self._last_seconds, self._last_parallel = 0.0, False
        self._last_iters = np.zeros(self.n_kernels, dtype=np.int64)
        # With a client: the bank scattered to the workers (once), and the
        # token of this oracle's task names.
        self._scattered = None
        self._token = None

    # ---- public -----------------------------------------------------------
    def __call__(self, query, warm_start=None) -> WeakLearnersAnswer:
        """Train one SVM per kernel of ``query`` on its sample.

        Parameters
        ----------
        query : BoostQuery
            Sample, kernels and distribution of the round.
        warm_start : None
            Ignored: every round has a new sample, so no dual vector carries
            over. Accepted for the driver's calling convention.

        Returns
        -------
        WeakLearnersAnswer

        Raises
        ------
        TypeError, ValueError
            For a malformed query (indices out of range, an empty sample or
            kernel set, repeated kernels, a distribution that is not one).
        """
        sample, kernels, dist = self._check_query(query)
        self.n_calls += 1
        N = self.n_samples
        y = self.y
        # The sample's distinct points, each with C times its number of
        # draws as its bound (copies merged, see mklopt._jit.boost).
        uniq, yu, upper = distinct_points(sample, y, self.C)
        s = sample.shape[0]
        budget = self.max_iter if self.max_iter is not None else max(100_000, 100 * s)
        r, u = kernels.shape[0], uniq.shape[0]
        coef = np.empty((r, u))
        bias = np.empty(r)
        decision = np.empty((r, N))
        n_iter = np.empty(r, dtype=np.int64)
        violation = np.empty(r)
        args = (uniq, yu, upper, self.tol, int(budget))
        storage = self.bank.storage
        # Long rounds spread their SVMs over numba's threads (the answers
        # are the serial ones, bit for bit); short ones stay serial.
        # Once parallel, rounds stay so down to half the threshold, so that
        # a round made faster by the threads does not flip the next back.
        # A parallel round starts the kernels whose SVMs took the most SMO
        # iterations last round first, so that a long one does not start last.
        limit = PARALLEL_ROUND_SECONDS * (0.5 if self._last_parallel else 1.0)
        parallel = r > 1 and self._last_seconds >= limit and numba.get_num_threads() > 1
        costs = self._last_iters[kernels] if parallel else None
        t0 = time.perf_counter()
        if self.client is None and isinstance(storage, DenseStorage):
            # A stored bank is read in place: the training blocks and the
            # support rows are rows of K[k] (no copy of the u x n rows).
            scale = np.ones(r) if storage.factors is None else storage.factors[kernels]
            _run_round(costs, storage.K, kernels, scale, uniq, *args, coef, bias, decision,
                       n_iter, violation)
        elif self.client is None:
            everyone = np.arange(N, dtype=np.int64)
            for c0, c1 in self._chunks(r, u):
                # The rows of the sample's distinct points against every
                # training point: the training blocks and the support rows.
                B = storage.blocks(kernels[c0:c1], uniq, everyone)
                _round_blocks(B, *args, coef[c0:c1], bias[c0:c1], decision[c0:c1],
                              n_iter[c0:c1], violation[c0:c1],
                              costs=None if costs is None else costs[c0:c1])
        else:
            for (c0, c1), part in self._on_cluster(storage, kernels, uniq, args):
                coef[c0:c1], bias[c0:c1], decision[c0:c1], n_iter[c0:c1], violation[c0:c1] = part
        seconds = time.perf_counter() - t0
        self._last_seconds, self._last_parallel = seconds, parallel
        self._last_iters[kernels] = n_iter
        n_bad = int(np.count_nonzero(violation > self.tol))
        if n_bad:
            self.n_unconverged += n_bad
            # One fixed message, so that the default filter shows it once
            # rather than once per weak learner.
            warnings.warn(
                f"some weak SVMs stopped on their SMO iteration budget before reaching "
                f"tol={self.tol:g} (see WeakLearners.n_unconverged); they are used as they "
                "are. Standardise the features, normalise the kernels, or raise max_iter",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.n_fits += r
        predictions = np.empty((r, N))
        errors = np.empty(r)
        round_errors(decision, y, dist, predictions, errors)
        return WeakLearnersAnswer(
            value=float(errors.min()),
            kernels=kernels,
            errors=errors,
            predictions=predictions,
            decision=decision,
            learners=_Learners(kernels, uniq, coef, bias),
            n_solver_iter=int(n_iter.sum()),
            seconds=seconds,
        )

    # ---- internals ----------------------------------------------------------
    def _on_cluster(self, storage, kernels, uniq, args):
        """A round's chunks as named Dask tasks: ``[((c0, c1), answers), ...]``.

        A bank held in this process is scattered to every worker once, on
        the first round (a copy per worker, so a task retried after its
        worker died finds it on a survivor), and each task computes its
        blocks there from the sample's indices. Should the last worker
        holding it die (one restarted after a crash holds no copy), Dask
        cancels the chunks that read it, and they run again on a new
        scatter (:func:`~mklopt._parallel.run_on_scattered`). Dask's
        Active Memory Manager, on by default, drops the extra copies between
        rounds, when no task waits on them: a later round's tasks then fetch
        the bank from a worker that still holds it (turn its ReduceReplicas
        policy off to keep a copy on every worker). A sharded bank's blocks
        come from its shards and travel with the task.
        """
        client = self.client
        chunks = self._chunks(kernels.shape[0], uniq.shape[0])
        if self._token is None:
            self._token = uuid.uuid4().hex[:8]
        everyone = np.arange(self.n_samples, dtype=np.int64)

        def scatter():
            return client.scatter(storage, broadcast=True, hash=False)

        def submit(c, big, attempt):
            c0, c1 = chunks[c]
            # "mklopt-round-3-chunk-1-<oracle>": what runs, on the dashboard.
            key = f"mklopt-round-{self.n_calls}-chunk-{c}-{self._token}"
            if attempt:
                key += f"-again-{attempt}"
            if big is not None:
                return client.submit(_round_chunk_from, big, kernels[c0:c1], *args, key=key,
                                     pure=False)
            blocks = storage.blocks(kernels[c0:c1], uniq, everyone)
            return client.submit(_round_chunk, blocks, *args, key=key, pure=False)

        sharded = getattr(storage, "name", "") == "sharded"
        # Held here only while valid: a round that raises may have released it.
        big, self._scattered = self._scattered, None
        answers, self._scattered = run_on_scattered(
            client, submit, [f"round-{self.n_calls}-chunk-{c}" for c in range(len(chunks))],
            scatter=None if sharded else scatter, big=big)
        return list(zip(chunks, answers))

    def _chunks(self, r, u):
        """Kernel ranges ``[c0, c1)`` handled together (one block request each)."""
        per = int(max(1, _BLOCK_BYTES // max(1, u * self.n_samples * 8)))
        if self.client is not None:
            per = min(per, self.chunk_size or -(-r // self._n_workers))
        return [(c0, min(r, c0 + per)) for c0 in range(0, r, per)]

    def _check_query(self, query):
        for attr in ("sample", "kernels"):
            if not hasattr(query, attr):
                raise TypeError(
                    "query must be a BoostQuery (sample, kernels, distribution), got "
                    f"{type(query).__name__}"
                )
        n, m = self.n_samples, self.n_kernels
        sample = self._check_indices(query.sample, "query.sample")
        kernels = self._check_indices(query.kernels, "query.kernels")
        dist = getattr(query, "distribution", None)
        if dist is None:
            dist = np.full(n, 1.0 / n)
        else:
            dist = np.ascontiguousarray(dist, dtype=np.float64)
            if dist.shape != (n,):
                raise ValueError(f"query.distribution must have shape ({n},), got {dist.shape}")
        # One jitted pass over the three arrays; the messages are made here.
        fault = query_fault(sample, kernels, dist, n, m)
        if fault in (1, 2):
            name, a, upper = (("query.sample", sample, n) if fault == 1
                              else ("query.kernels", kernels, m))
            raise ValueError(
                f"{name} must hold indices in [0, {upper}), got [{a.min()}, {a.max()}]"
            )
        if fault == 3:
            raise ValueError("query.kernels must not repeat a kernel")
        if fault == 4:
            raise ValueError("query.distribution must be finite and non-negative")
        if fault == 5:
            raise ValueError(f"query.distribution must sum to 1, got {dist.sum():.12g}")
        return sample, kernels, dist

    @staticmethod
    def _check_indices(idx, name):
        a = np.asarray(idx)
        if a.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
        if a.shape[0] == 0:
            raise ValueError(f"{name} is empty")
        if a.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integer indices, got dtype {a.dtype}")
        return np.ascontiguousarray(a, dtype=np.int64)
