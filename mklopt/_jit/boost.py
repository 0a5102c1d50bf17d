"""All the weak SVMs of one boosting round in one call (MKBoost, Xia & Hoi).

A round trains one SVM per kernel on the same sample of training indices
(drawn with replacement, so a point may appear several times) and judges
each on all ``n`` training points. Everything a weak SVM needs is in one
block per kernel: the kernel rows of the sample's *distinct* points against
all training points, ``K_j[uniq, :]`` of shape ``(u, n)``. Its training
block is ``K_j[uniq, uniq]``, and its decision on all points needs the
rows of its support vectors, which are among those rows. A dense bank is
read in place; other storages compute the rows as one block.

*Copies are merged.* The dual of an SVM on a sample where point ``i`` is
drawn ``c_i`` times depends on the copies' multipliers only through their
sum (the copies share their kernel row, label and linear term), and the
sum ranges over ``[0, c_i C]``. So the SVM on the sample is the SVM on its
``u`` distinct points with upper bounds ``c_i C``: the same decision
function and offset (up to solver tolerance), a smaller problem, and none
of the zero-curvature pairs that copies create. Boosting concentrates its
distribution on hard points, so late rounds draw many copies of few
points and this matters (breast: 2-3x fewer SMO iterations).

:func:`weak_svm_round` runs, for every kernel in turn: read the training
block, SMO from ``alpha = 0`` (the same :func:`~mklopt._jit.smo.smo_solve`
as every oracle, with shrinking above ``SHRINK_ABOVE`` distinct points),
libsvm's offset, and the decision values
on all points. No Python runs per weak SVM.

The loop over kernels is serial in :func:`weak_svm_round`. A round's SVMs
are often small (a sample of 0.2 N points solves in tens of microseconds),
and a parallel loop measured 0.4 ms serial against 24 ms on two threads for
breast's 17 SVMs when the second core was busy, the usual case on a shared
machine. :func:`weak_svm_round_parallel` runs the same per-SVM code
(:func:`_weak_svm`) over numba's threads, for rounds long enough that
waiting for a thread costs little (the oracle decides, see
:class:`~mklopt.oracles.WeakLearners`); the answers are the serial ones,
bit for bit. Parallelism across machines belongs to Dask tasks (the
oracle's ``client``), or to independent fits.
"""

import numpy as np
from numba import njit, prange

from ._options import JIT, JIT_PARALLEL
from ._stop import stopped
from .smo import smo_rho, smo_solve, smo_violation

#: Samples of more distinct points than this are solved with shrinking,
#: smaller ones without: on weak SVMs of 20-70 points setting variables
#: aside costs more than it saves (a weak SVM inside its round went from
#: 0.98-1.69x one bare shrinking solve to about 1x; benchmarks/README.md
#: at commit 89ee8cc, "Time per weak SVM").
SHRINK_ABOVE = 1000


@njit(**JIT)
def _weak_svm(Kj, f, rows, uniq, yu, upper, tol, max_iter, ident, Ku, alpha, grad, cj, dj,
              stop):
    """One weak SVM of a round: kernel ``f * Kj``, trained and evaluated on all points.

    ``ident``, ``Ku``, ``alpha`` and ``grad`` are scratch of sizes ``u``,
    ``(u, u)``, ``u``, ``u``; ``cj`` (u,) and ``dj`` (n,) are written (see
    :func:`weak_svm_round`). Returns ``(bias, n_iter, violation)``.
    """
    u = rows.shape[0]
    n = Kj.shape[1]
    for a in range(u):
        row = Kj[rows[a]]
        Ka = Ku[a]
        for b in range(u):
            Ka[b] = f * row[uniq[b]]
    for a in range(u):
        alpha[a] = 0.0
        grad[a] = -1.0
    it = smo_solve(Ku, ident, yu, upper, alpha, grad, tol, max_iter, u > SHRINK_ABOVE, stop)
    viol = -np.inf
    if it >= max_iter:
        viol = smo_violation(yu, upper, alpha, grad)
    bj = -smo_rho(yu, upper, alpha, grad)
    for p in range(n):
        dj[p] = bj
    for a in range(u):
        c = alpha[a] * yu[a]
        cj[a] = c
        if c != 0.0:
            row = Kj[rows[a]]
            cf = c * f
            for p in range(n):
                dj[p] += cf * row[p]
    return bj, it, viol


@njit(**JIT)
def weak_svm_round(K, kernels, scale, rows, uniq, yu, upper, tol, max_iter, coef, bias, decision,
                   n_iter, violation, stop):
    """Train one SVM per kernel on a sample and evaluate it on all training points.

    Kernel ``j`` of the round is ``scale[j] * K[kernels[j]]`` and its rows
    of the sample's distinct points are ``K[kernels[j], rows[a]]``. Two
    callers: a dense bank passes its ``(m, n, n)`` array with ``rows =
    uniq`` (nothing is copied: the training block and the support rows are
    read in place), and a storage that computes blocks passes them,
    ``K = B`` of shape ``(r, u, n)`` with ``kernels = rows = arange``.

    ``K`` float64 or float32, C-contiguous; ``kernels`` (r,) int64;
    ``scale`` (r,) float64; ``rows`` (u,) int64; ``uniq`` (u,) int64: the
    training indices of the sample's distinct points (the columns of the
    training block); ``yu`` (u,) float64: their labels in {-1, +1};
    ``upper`` (u,) float64: ``C`` times the number of draws of each point;
    ``tol`` and ``max_iter``: SMO's stop test and budget per SVM. Written:
    ``coef`` (r, u) float64, ``alpha_t yu_t`` (0 off the support); ``bias``
    (r,) the offsets; ``decision`` (r, n) ``scale[j] coef[j] @ K[kernels[j],
    rows] + bias[j]``; ``n_iter`` (r,) int64 SMO iterations; ``violation``
    (r,) the final KKT violation of the SVMs that used their whole budget
    (``-inf`` for the others).

    ``stop`` (1,) int64, the stop flag (:mod:`mklopt._interrupt`): once it
    is non-zero no further SVM is started (their ``n_iter`` is set to -1
    and nothing else of theirs is written) and the one running ends early
    (feasible, maybe not optimal; its outputs are written). Returns the
    number of SVMs started.
    """
    u = rows.shape[0]
    ident = np.arange(u)
    Ku = np.empty((u, u))
    alpha = np.empty(u)
    grad = np.empty(u)
    r = kernels.shape[0]
    for j in range(r):
        if stopped(stop):
            for jj in range(j, r):
                n_iter[jj] = -1
            return j
        bias[j], n_iter[j], violation[j] = _weak_svm(
            K[kernels[j]], scale[j], rows, uniq, yu, upper, tol, max_iter, ident, Ku, alpha,
            grad, coef[j], decision[j], stop)
    return r


@njit(**JIT_PARALLEL)
def weak_svm_round_parallel(K, kernels, scale, rows, uniq, yu, upper, tol, max_iter, coef, bias,
                            decision, n_iter, violation, order, stop):
    """:func:`weak_svm_round` with the round's SVMs spread over numba's threads.

    Each SVM is solved by the same code on its own scratch, so the answers
    are those of the serial loop, bit for bit, whatever the number of
    threads and the order. ``order`` (r,) int64, a permutation of
    ``range(r)``: the SVMs are started in this order, the longest expected
    first (an SVM on a raw linear kernel may take ten times the iterations
    of a Gaussian one). Call it inside ``numba.parallel_chunksize(1)`` so
    that they are handed out one at a time as threads free up. ``stop``
    as for :func:`weak_svm_round`: SVMs not started have ``n_iter = -1``.
    """
    u = rows.shape[0]
    r = kernels.shape[0]
    for jj in prange(r):
        j = order[jj]
        if stopped(stop):
            n_iter[j] = -1
            continue
        ident = np.arange(u)
        Ku = np.empty((u, u))
        alpha = np.empty(u)
        grad = np.empty(u)
        b, it, v = _weak_svm(
            K[kernels[j]], scale[j], rows, uniq, yu, upper, tol, max_iter, ident, Ku, alpha,
            grad, coef[j], decision[j], stop)
        bias[j] = b
        n_iter[j] = it
        violation[j] = v


@njit(**JIT)
def weighted_error(D, y, h):
    """``sum_i D_i [h_i != y_i]``: the error of predictions ``h`` under ``D`` (eq. 2.4)."""
    e = 0.0
    for p in range(D.shape[0]):
        if h[p] != y[p]:
            e += D[p]
    return e


@njit(**JIT)
def round_errors(decision, y, dist, predictions, errors):
    """Each learner's ``+-1`` predictions and weighted error (MKBoost eq. 2.4).

    ``decision`` (r, n) float64; ``y`` (n,) labels in {-1, +1}; ``dist``
    (n,) the example distribution. Written: ``predictions`` (r, n),
    ``+1`` where the decision is positive and ``-1`` elsewhere (as
    scikit-learn predicts), and ``errors`` (r,), ``sum_i dist_i [pred_i !=
    y_i]``.
    """
    r, n = decision.shape
    for j in range(r):
        dj = decision[j]
        pj = predictions[j]
        for p in range(n):
            pj[p] = 1.0 if dj[p] > 0.0 else -1.0
        errors[j] = weighted_error(dist, y, pj)


@njit(**JIT)
def distinct_points(sample, y, C):
    """The sample's distinct points, their labels and their SVM bounds.

    ``sample`` (s,) int64 training indices drawn with replacement, each in
    ``[0, n)`` with ``n = y.shape[0]``. Returns ``uniq`` (u,) int64, the
    distinct indices in increasing order; ``yu = y[uniq]``; ``upper`` (u,)
    ``C`` times the number of draws of each (copies merged, see the module
    notes).
    """
    n = y.shape[0]
    counts = np.zeros(n, dtype=np.int64)
    for t in sample:
        counts[t] += 1
    u = 0
    for p in range(n):
        if counts[p] > 0:
            u += 1
    uniq = np.empty(u, dtype=np.int64)
    yu = np.empty(u)
    upper = np.empty(u)
    a = 0
    for p in range(n):
        if counts[p] > 0:
            uniq[a] = p
            yu[a] = y[p]
            upper[a] = C * counts[p]
            a += 1
    return uniq, yu, upper


@njit(**JIT)
def query_fault(sample, kernels, dist, n, m):
    """The first problem of a boosting query, as a code (0: none).

    ``sample`` and ``kernels`` non-empty 1-D int64, ``dist`` (n,) float64.
    Codes: 1 a sample index outside ``[0, n)``; 2 a kernel index outside
    ``[0, m)``; 3 a kernel repeated; 4 a distribution entry negative or
    not finite; 5 a distribution whose sum is more than 1e-8 from 1.
    """
    for t in sample:
        if t < 0 or t >= n:
            return 1
    seen = np.zeros(m, dtype=np.uint8)
    for k in kernels:
        if k < 0 or k >= m:
            return 2
        if seen[k]:
            return 3
        seen[k] = 1
    total = 0.0
    for p in range(dist.shape[0]):
        v = dist[p]
        if not (v >= 0.0 and v < np.inf):
            return 4
        total += v
    if abs(total - 1.0) > 1e-8:
        return 5
    return 0


@njit(**JIT)
def reweight(D, y, h, F, alpha):
    """AdaBoost's update in place: ``D_i *= exp(-alpha y_i h_i)``, then ``D /= Z``.

    Also ``F += alpha h``. Returns ``Z``, the sum before normalising
    (MKBoost Algorithm 1, step 4; ``prod_t Z_t`` is the exponential loss).
    """
    n = D.shape[0]
    Z = 0.0
    for p in range(n):
        v = D[p] * np.exp(-alpha * y[p] * h[p])
        D[p] = v
        Z += v
        F[p] += alpha * h[p]
    for p in range(n):
        D[p] /= Z
    return Z
