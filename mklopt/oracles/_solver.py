"""Solving an oracle's dual on a kernel bank: whole-matrix SMO or row-cached blocks.

Every oracle (classification, epsilon-SVR, one-class) hands a
:class:`~mklopt.oracles.DualProblem` and its kernel weights to
:class:`DualSolver`, which picks one of two paths:

* **whole matrix**, for small ``n``: the combined kernel ``K(w)`` is formed
  once per call (``storage.combine``) and :func:`~mklopt._jit.smo.smo_solve`
  runs on it with shrinking. This is the fastest path while ``n x n``
  float64 fits in the row-cache budget and ``n`` is moderate.
* **row-cached blocks**, for large ``n``: nothing ``n x n`` is formed. A
  decomposition method (Joachims 1999; Lin 2001, "On the convergence of the
  decomposition method for support vector machines") repeatedly picks a
  working set ``B`` of at most ``block_size`` variables, fetches the kernel
  rows of ``B`` through an LRU :class:`RowCache` (one batched request to
  the storage for the rows it does not hold), solves the sub-problem on
  ``B`` with the same SMO loop, and updates the gradient of every variable
  with one pass over those rows. ``B`` always contains the maximal
  violating pair, so each block makes progress, and the stop test is the
  same as the whole-matrix path's: ``m(a) - M(a) <= tol`` over all
  variables. Both paths return a point of the same tolerance, so their
  values agree to it, and so do their ``alpha`` where the optimum is unique.

A storage whose kernels live elsewhere (a sharded bank, with its kernels
on the workers of a Dask cluster) takes the block path whatever ``n``, and
answers its two reads itself: the block ``K(w)[B, B]`` of a working set and
the product ``sum_j c_j K(w)[B_j]`` that updates the gradient (and, on the
support, rebuilds it for a warm start). Its shards cache the rows on their
workers, so a block costs ``8 |B|^2`` bytes and a product ``8 n``, never
``8 |B| n``; a call whose blocks would add up to the whole ``n x n`` matrix
fetches that matrix once and finishes on it (``DualSolver._remote_reads``).

Cached rows belong to one weight vector: a call at new weights starts with
an empty cache, and a call at the weights of the call before it reuses the
rows (or the whole matrix) that call computed. They do not depend on the
problem's bounds, so a solver of the same problem on the same storage at
another ``C`` can take them over (:meth:`DualSolver.adopt`): a C path's next
point is first solved at the weights its predecessor ended at. Within a
call, the rows that rebuild the gradient of a warm start (those of the
support vectors) are the ones SMO reads most, so they are cached as they
are computed. The row requests are batched (one per
block, and the gradient in chunks), which keeps the number of round trips
small when the storage is remote.

*Stopping.* Both paths look at the current run's stop flag
(:mod:`mklopt._interrupt`): SMO every few dozen iterations, the block path
before every block, the storage inside its row and matrix loops. A solve
stopped part-way raises :class:`~mklopt._interrupt.Stopped`; its point is
discarded (the caller's ``a`` may hold a feasible but unfinished iterate)
and the row cache is emptied, since a batch of rows may have been cut
short.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np

from .._heartbeat import Beat
from .._interrupt import Stopped, check, current_flag
from .._jit import readonly
from .._jit.products import NO_DIAG, NO_RF, NO_RI, source_diag, source_fill_par
from .._jit.smo import (
    accumulate_rows,
    gather_block,
    smo_gradient,
    smo_gradient_src,
    smo_solve,
    smo_solve_src,
)
from .._memory import empty_by_rows
from .._threads import CallThreads
from ..kernels._rowcache import RowCache, cached_dot

__all__ = ["RowCache", "DualSolver", "SolveStats"]

#: Largest ``n`` solved on the whole combined matrix (if it also fits the budget).
#: Up to here one symmetric ``combine`` per call costs about what the rows of
#: the support vectors cost on the block path (letter, n = 8,000 and 16,000:
#: within 10 % per call, whole matrix ahead at every weight density tried),
#: and SMO on the matrix avoids the block bookkeeping. Beyond it the matrix
#: outgrows the default 2 GiB budget anyway.
FULL_MAX_SAMPLES = 16384
#: Default working-set size of the block path.
BLOCK_SIZE = 256
#: Calls of a remote storage that start on the whole combined matrix after a
#: call whose blocks added up to it (see ``DualSolver._remote_reads``).
MATRIX_CALLS_AFTER_CAP = 4


#: Kernel entries (rows x columns x kernels with a weight) from which the
#: rows a warm start's gradient reads are combined on threads: about a
#: millisecond of work from stored products, against tens of microseconds
#: to start the threads (benchmarks/README.md at commit 89ee8cc, "A warm
#: start's rows on two threads").
FILL_PARALLEL_MIN = 2**18


#: The threads of each such batch, chosen from the times of the last ones
#: (mklopt._threads: on busy cores one thread is faster).
FILL_THREADS = CallThreads("source_fill_par", min_work=FILL_PARALLEL_MIN)


def fill_tasks(n_rows, n_cols, n_kernels):
    """Tasks for a batch of ``n_rows`` combined rows (1: combine them serially).

    Examples
    --------
    >>> fill_tasks(10, 100, 17)
    1
    """
    if n_rows * n_cols * n_kernels < FILL_PARALLEL_MIN or numba.get_num_threads() < 2:
        return 1
    return int(min(n_rows, 8 * numba.get_num_threads()))


@dataclass
class SolveStats:
    """What one solve did.

    Attributes
    ----------
    n_iter : int
        SMO iterations (summed over blocks).
    n_blocks : int
        Working-set blocks of the row path (0 on the whole-matrix path).
    rows_computed, rows_cached : int
        Kernel rows computed by the storage, and served from the cache (0
        for a storage that computes and caches its rows remotely).
    n_requests : int
        Batched row requests made to the storage.
    row_seconds : float
        Wall-clock seconds spent computing rows (or the whole matrix).
    seconds : float
        Wall-clock seconds of the whole solve.
    violation : float
        Maximal KKT violation ``m(a) - M(a)`` of the returned point, over all
        variables (set by the oracle; NaN until then).
    converged : bool
        Whether ``violation <= tol``. False when the iteration budget (or
        the block path's stall test) ended the solve first: the point is
        feasible, so its value is a lower bound of the optimal one, but not
        optimal to ``tol``.
    """

    n_iter: int = 0
    n_blocks: int = 0
    rows_computed: int = 0
    rows_cached: int = 0
    n_requests: int = 0
    row_seconds: float = 0.0
    seconds: float = 0.0
    violation: float = float("nan")
    converged: bool = True

    @property
    def rows_per_second(self):
        """Kernel rows computed per second of row computation."""
        return self.rows_computed / self.row_seconds if self.row_seconds > 0 else float("nan")


class DualSolver:
    """Solve ``min 1/2 a'Q(w)a + p'a`` over the problem's box and equality.

    Parameters
    ----------
    bank : KernelBank
        Kernels; read through ``bank.storage`` (trusted verbs).
    problem : DualProblem
        Signs, kernel rows, linear term, bounds.
    block_size : int, default=256
        Working-set size of the block path.
    cache_bytes : int, optional
        Byte budget for the whole matrix or the row cache; default
        ``bank.cache_bytes()``.

    Attributes
    ----------
    whole_matrix : bool
        Which path is used (see the module notes).
    remote : bool
        Whether the storage answers the block path's reads itself (a
        sharded bank); then there is no client-side cache.
    cache : RowCache or None
        The row cache of the block path.
    """

    def __init__(self, bank, problem, block_size=BLOCK_SIZE, cache_bytes=None):
        self.storage = bank.storage
        self.problem = problem
        n = bank.n_samples
        self.n = n
        budget = bank.cache_bytes() if cache_bytes is None else int(cache_bytes)
        # A storage that keeps its rows where the kernels are (a sharded
        # bank: on the workers) answers the block path's two reads itself,
        # so that only blocks and n-vectors travel (see the module notes).
        self.remote = hasattr(self.storage, "combined_block")
        self._budget = budget
        self._matrix_calls = 0  # calls left that start on the whole matrix
        self.whole_matrix = (
            not self.remote and n <= FULL_MAX_SAMPLES and n * n * 8 <= budget
        )
        self.block_size = int(block_size)
        # Written a row at a time on the lazy path: plain pages (see empty_by_rows).
        self._K = empty_by_rows((n, n)) if self.whole_matrix else None
        self.cache = (
            None if self.whole_matrix or self.remote else RowCache(n, budget // (8 * n))
        )
        # Storages that can combine single rows cheaply (dense banks and
        # their index views) let SMO combine the rows it reads, and no
        # others, on the whole-matrix path.
        self._source = getattr(self.storage, "row_source", None) if self.whole_matrix else None
        self._filled = np.zeros(n, dtype=np.uint8) if self._source is not None else None
        # The weights whose rows _K (whole-matrix path) or the cache (block
        # path) hold; None: nothing held.
        self._w = None
        P = problem
        self._identity = P.n_variables == n and np.array_equal(P.rows, np.arange(n))

    def solve(self, w, a, tol, max_iter):
        """Solve at weights ``w`` from the feasible start ``a`` (overwritten).

        Returns
        -------
        grad : ndarray of shape (n_variables,)
            ``Q(w) a + p`` at the returned ``a``.
        stats : SolveStats
        """
        t0 = time.perf_counter()
        stop = current_flag()
        try:
            if self.whole_matrix:
                grad, stats = self._solve_whole(w, a, tol, max_iter, stop)
            else:
                grad, stats = self._solve_blocks(w, a, tol, max_iter, stop)
            check(stop)
        except Stopped:
            # A batch of rows may have been cut short: start the next call
            # from an empty cache.
            self._w = None
            if self.cache is not None:
                self.cache.clear()
            raise
        stats.seconds = time.perf_counter() - t0
        return grad, stats

    def _holds(self, w):
        """Whether the rows held are those of ``K(w)``."""
        return self._w is not None and np.array_equal(self._w, w)

    def adopt(self, other):
        """Take over ``other``'s computed rows, if they are rows of this solver's kernels.

        ``other`` must solve the same problem's rows on the same storage (the
        same bank view), on the same path; its bounds (``C``) may differ,
        since ``K(w)`` does not depend on them. The rows move: ``other``
        keeps none (it computes afresh if called again). Returns whether
        they were taken.
        """
        if (not isinstance(other, DualSolver) or other is self or other._w is None
                or other.storage is not self.storage or other.n != self.n
                or other.whole_matrix != self.whole_matrix or other.remote or self.remote
                or (other._source is None) != (self._source is None)
                or not np.array_equal(other.problem.rows, self.problem.rows)):
            return False
        self._w, other._w = other._w, None
        if self.whole_matrix:
            self._K, other._K = other._K, empty_by_rows((self.n, self.n))
            if self._filled is not None:
                self._filled, other._filled = other._filled, np.zeros(self.n, dtype=np.uint8)
        else:
            self.cache, other.cache = other.cache, self.cache
            other.cache.clear()
        return True

    # ------------------------------------------------------------ whole matrix
    def _solve_whole(self, w, a, tol, max_iter, stop):
        if self._source is not None:
            return self._solve_lazy(w, a, tol, max_iter, stop)
        P = self.problem
        t0 = time.perf_counter()
        if not self._holds(w):
            self._w = None
            # (What combine returns is held: a user storage may not write ``out``.)
            self._K = self.storage.combine(w, self._K)
            self._w = np.array(w, dtype=np.float64)
        K = self._K
        row_seconds = time.perf_counter() - t0
        if np.any(a != 0.0):
            grad = smo_gradient(K, P.rows, P.signs, P.linear, a, np.empty(a.shape[0]))
        else:
            grad = np.array(P.linear)
        check(stop)
        n_iter = smo_solve(K, P.rows, P.signs, P.upper, a, grad, tol, max_iter, True, stop)
        return grad, SolveStats(
            n_iter=int(n_iter), rows_computed=self.n, n_requests=1, row_seconds=row_seconds
        )

    def _solve_lazy(self, w, a, tol, max_iter, stop):
        """The whole-matrix path, combining each row of ``K(w)`` when SMO first reads it."""
        P = self.problem
        src = self._source(w)
        bank, wv, ks, gidx = src[:4]
        # (A storage of stored products adds the recipes and its kernels' diagonals.)
        ri, rf, diag_raw = src[4:] if len(src) == 7 else (NO_RI, NO_RF, NO_DIAG)
        filled = self._filled
        if not self._holds(w):
            filled[:] = 0
            self._w = np.array(w, dtype=np.float64)
        K = self._K
        # The diagonal summed as the rows are, so that the iterates are those
        # of the whole-matrix path on the same matrix.
        dvar = source_diag(bank, wv, ks, gidx, ri, diag_raw, np.empty(gidx.shape[0]))[P.rows]
        support = a != 0.0
        n_support = int(np.count_nonzero(support))
        if n_support:
            # The warm start's gradient reads the rows of the support. A large
            # batch is combined on threads first (the same rows, bit for bit);
            # the gradient then only sums them. (The count bounds the distinct
            # rows: the small batches of most calls skip the np.unique.)
            if fill_tasks(n_support, gidx.shape[0], ks.size) > 1:
                need = np.unique(P.rows[support])
                need = need[filled[need] == 0]
                tasks = fill_tasks(need.size, gidx.shape[0], ks.size)
                if tasks > 1:
                    with FILL_THREADS(need.size * gidx.shape[0] * ks.size):
                        source_fill_par(bank, wv, ks, gidx, ri, rf, need, K, filled, tasks,
                                        stop)
                    check(stop)
            grad = smo_gradient_src(K, filled, bank, wv, ks, gidx, ri, rf, P.rows, P.signs,
                                    P.linear, a, np.empty(a.shape[0]), stop)
            check(stop)
        else:
            grad = np.array(P.linear)
        n_iter = smo_solve_src(K, filled, bank, wv, ks, gidx, ri, rf, dvar, P.rows, P.signs,
                               P.upper, a, grad, tol, max_iter, True, stop)
        return grad, SolveStats(
            n_iter=int(n_iter), rows_computed=int(np.count_nonzero(filled)), n_requests=1
        )

    # ------------------------------------------------------------ row blocks
    def _rows(self, w, stats):
        storage = self.storage

        def compute(idx, out):
            t0 = time.perf_counter()
            storage.rows(w, idx, out)
            stats.row_seconds += time.perf_counter() - t0
            stats.rows_computed += idx.shape[0]
            stats.n_requests += 1
            return out

        return compute

    def _solve_blocks(self, w, a, tol, max_iter, stop):
        stats = SolveStats()
        if self.remote:
            return self._decompose(a, tol, max_iter, stats, *self._remote_reads(w, stats),
                                   stop=stop)
        cache = self.cache
        hits0 = cache.n_hits
        if not self._holds(w):
            cache.clear()
            self._w = np.array(w, dtype=np.float64)
        compute = self._rows(w, stats)

        def block(kr):
            data, slots = cache.fetch(kr, compute)
            return gather_block(data, slots, kr, np.empty((kr.size, kr.size))), (data, slots)

        def dot(kr, coef, held):
            if held is None:  # the gradient of a warm start: many rows, in chunks
                return cached_dot(cache, compute, kr, coef, np.zeros(self.n))
            data, slots = held
            return accumulate_rows(data, slots, coef, np.zeros(self.n))

        beat = Beat(stats, cache, self.n)  # progress lines during a long call (verbose=2)
        try:
            grad, stats = self._decompose(a, tol, max_iter, stats, block, dot, stop=stop)
        finally:
            beat.stop()
        stats.rows_cached = cache.n_hits - hits0
        return grad, stats

    def _remote_reads(self, w, stats):
        """The two reads of the block path from a storage that keeps its rows remote.

        Blocks and products cost ``8 (|B|^2 + n)`` bytes each from the
        storage. A solve that needs so many blocks that they add up to the
        ``8 n^2`` bytes of the whole combined matrix (ill-conditioned
        problems can need hundreds) fetches that matrix once, when it fits
        the byte budget, and finishes with SMO on it (the whole-matrix path,
        from the current point): a call then never receives much more than
        twice the matrix, and a hard call costs what it costs there. The next
        :data:`MATRIX_CALLS_AFTER_CAP` calls then fetch the matrix at once
        (once each), as hard calls of a run tend to follow each other.
        """
        storage, n = self.storage, self.n
        held = {"K": None, "bytes": 0.0}
        allow = 8.0 * n * n if n * n * 8 <= self._budget else np.inf
        # After a call that hit the cap, the next few start on the matrix:
        # the calls of one run are alike, and a hard one tends to be followed
        # by hard ones, each of which would pay the blocks and the matrix.
        at_once = self._matrix_calls > 0 and allow < np.inf
        self._matrix_calls = max(0, self._matrix_calls - 1)

        def whole(r=0):
            if held["K"] is None:
                # Also when one block would be half the matrix (n near the block size).
                capped = held["bytes"] >= allow
                if at_once or capped or 16.0 * r * r >= allow:
                    if capped:
                        self._matrix_calls = MATRIX_CALLS_AFTER_CAP
                    stats.n_requests += 1
                    held["K"] = storage.combine(w, np.empty((n, n)))
            return held["K"]

        def block(kr):
            K = whole(kr.size)
            if K is not None:
                return K[np.ix_(kr, kr)], None
            stats.n_requests += 1
            held["bytes"] += 8.0 * kr.size * kr.size
            return storage.combined_block(w, kr), None

        def dot(kr, coef, _):
            K = whole()
            if K is not None:
                return coef @ K[kr]
            stats.n_requests += 1
            held["bytes"] += 8.0 * n
            return storage.combined_matvec(w, kr, coef)

        def matrix():
            return whole()

        return block, dot, matrix

    def _decompose(self, a, tol, max_iter, stats, block, dot, matrix=None, stop=None):
        """The decomposition loop over two reads of ``K(w)``.

        ``block(kr)`` returns ``(K[kr][:, kr], held)`` and ``dot(kr, coef,
        held)`` returns ``sum_j coef[j] K[kr[j]]`` (``held`` is what the
        block read left for it, None for the warm start's product).
        ``matrix()``, when given, returns the whole ``K(w)`` once the reads
        have fetched it (else None): the solve then ends with SMO on it,
        from the current point and its exact gradient.
        """
        P = self.problem
        s, rows, upper = P.signs, P.rows, P.upper
        v = P.v(a)
        nz = np.flatnonzero(v).astype(np.int64)
        grad = np.array(P.linear)
        if nz.size:
            h = dot(nz, np.ascontiguousarray(v[nz]), None)
            grad += s * (h if self._identity else h[rows])
        q = self.block_size
        n_iter = 0
        stall = 0
        if stop is None:
            stop = current_flag()
        while n_iter < max_iter:
            check(stop)
            K = None if matrix is None else matrix()
            if K is not None:
                n_iter += int(smo_solve(K, rows, s, upper, a, grad, tol, max_iter - n_iter,
                                        True, stop))
                break
            B, violation = _select_block(s, upper, a, grad, q, tol)
            if B is None:
                break
            kr, local = np.unique(rows[B], return_inverse=True)
            kr = kr.astype(np.int64)
            local = local.ravel().astype(np.int64)
            KB, held = block(kr)
            aB = a[B].copy()
            gB = grad[B].copy()
            # read-only, as the whole problem's rows, signs and bounds are:
            # one build of the SMO for both paths
            sB = readonly(np.ascontiguousarray(s[B]))
            it = smo_solve(KB, readonly(local), sB, readonly(np.ascontiguousarray(upper[B])),
                           aB, gB, tol,
                           max_iter - n_iter, False, stop)
            da = aB - a[B]
            a[B] = aB
            n_iter += int(it)
            stats.n_blocks += 1
            if it == 0 or not np.any(da):
                # The maximal violating pair is in B, so a sub-problem that
                # does not move means tol is at the rounding level of F.
                stall += 1
                if stall >= 3:
                    break
                continue
            stall = 0
            dv = np.zeros(kr.size)
            np.add.at(dv, local, sB * da)
            h = dot(kr, dv, held)
            grad += s * (h if self._identity else h[rows])
        stats.n_iter = n_iter
        return grad, stats


def _select_block(s, upper, a, grad, q, tol):
    """Working set of at most ``q`` variables, or None when ``m(a) - M(a) <= tol``.

    Half of it is the ``I_up`` variables with the largest ``F = -s G`` that
    violate against ``M``, half the ``I_low`` variables with the smallest
    ``F`` that violate against ``m``; so the maximal violating pair is always
    in it.
    """
    F = -s * grad
    pos = s > 0.0
    up = np.where(pos, a < upper, a > 0.0)
    low = np.where(pos, a > 0.0, a < upper)
    if not (up.any() and low.any()):
        return None, -np.inf
    Fu = np.where(up, F, -np.inf)
    Fl = np.where(low, F, np.inf)
    m_up = float(Fu.max())
    M_low = float(Fl.min())
    violation = m_up - M_low
    if violation <= tol:
        return None, violation
    half = max(1, q // 2)
    cand_up = np.flatnonzero(Fu > M_low)
    cand_low = np.flatnonzero(Fl < m_up)
    if cand_up.size > half:
        cand_up = cand_up[np.argpartition(-Fu[cand_up], half - 1)[:half]]
    if cand_low.size > half:
        cand_low = cand_low[np.argpartition(Fl[cand_low], half - 1)[:half]]
    B = np.union1d(cand_up, cand_low).astype(np.int64)
    return B, violation
