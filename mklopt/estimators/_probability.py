"""Class probabilities from decision values: Platt scaling and pairwise coupling, as libsvm.

``probability=True`` on a classifier fits, for every one-vs-one problem, a
sigmoid

    P(+1 | f) = 1 / (1 + exp(A f + B))

to decision values that the problem's own model never saw: those of an
internal 5-fold cross-validation on the problem's training points, the
folds cut from one random permutation (libsvm's ``svm_binary_svc_probability``).
The sigmoid is Platt's (1999), fitted by the Newton method with a
backtracking line search of Lin, Lin and Weng (2007), on the smoothed
targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` that keep it from
over-fitting separable folds (libsvm's ``sigmoid_train``, which this
module follows step for step, tolerances included).

With more than two classes the pairwise probabilities ``r_ij = P(i | i or
j, x)``, clipped to ``[1e-7, 1 - 1e-7]``, are coupled into one distribution
by the second method of Wu, Lin and Weng (2004),

    min_p  sum_i sum_{j != i} (r_ji p_i - r_ij p_j)^2   s.t.  1'p = 1,

whose minimiser solves the bordered linear system ``[Q 1; 1' 0] [p; b] =
[0; 1]`` (``Q_ii = sum_{j != i} r_ji^2``, ``Q_ij = -r_ji r_ij``) and is
non-negative (their Theorem). libsvm reaches it by a fixed-point iteration
stopped at ``0.005 / k``; here it is solved directly, for all samples at
once. With two classes the coupling is the identity: ``p = (r_01, r_10)``.

The sigmoid, the coupling and the folds know nothing of kernels (the
cross-validated decision values come from a callable,
:func:`cv_decision_values`); :func:`kernel_sigmoid` gives that callable for
an MKL problem: the SVMs of the folds are solved on the problem's *learned*
kernel ``K(w)``, the weights of the fit held fixed, with the same oracle
and the same ``C_i``. That is libsvm's procedure applied to the fitted
kernel (five SVM solves per pair, not five MKL fits), which is what
``SVC(kernel=..., probability=True)`` on the combined kernel does.

References
----------
J. Platt. Probabilistic outputs for support vector machines and
comparisons to regularized likelihood methods. Advances in Large Margin
Classifiers, 1999.
H.-T. Lin, C.-J. Lin, R. C. Weng. A note on Platt's probabilistic outputs
for support vector machines. Machine Learning 68, 2007.
T.-F. Wu, C.-J. Lin, R. C. Weng. Probability estimates for multi-class
classification by pairwise coupling. JMLR 5, 2004.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "N_FOLDS",
    "MIN_PROB",
    "sigmoid_train",
    "sigmoid_predict",
    "pairwise_coupling",
    "cv_folds",
    "cv_decision_values",
    "pair_probabilities",
    "kernel_sigmoid",
    "pair_seeds",
]

#: Folds of the internal cross-validation (libsvm's ``nr_fold``).
N_FOLDS = 5
#: Pairwise probabilities are clipped to ``[MIN_PROB, 1 - MIN_PROB]`` (libsvm).
MIN_PROB = 1e-7


def _objective(f, t, A, B):
    """Platt's negative log-likelihood at ``(A, B)``, without overflow (libsvm's form)."""
    z = f * A + B
    pos = z >= 0.0
    out = np.where(pos, t * z + np.log1p(np.exp(-np.abs(z))),
                   (t - 1.0) * z + np.log1p(np.exp(-np.abs(z))))
    return float(out.sum())


def sigmoid_train(decisions, labels, max_iter=100, min_step=1e-10, sigma=1e-12, eps=1e-5):
    """``(A, B)`` of Platt's sigmoid ``P(+1 | f) = 1 / (1 + exp(A f + B))`` (libsvm's fit).

    Parameters
    ----------
    decisions : array-like of shape (n,)
        Decision values, positive for the +1 class (out of fold).
    labels : array-like of shape (n,)
        Labels; ``> 0`` is the +1 class.
    max_iter, min_step, sigma, eps
        libsvm's Newton iterations, smallest line-search step, Hessian
        ridge and gradient tolerance.

    Returns
    -------
    A, B : float

    Examples
    --------
    >>> A, B = sigmoid_train([-2.0, -1.0, 1.0, 2.5], [-1, -1, 1, 1])
    >>> bool(A < 0.0)   # larger decision values, larger P(+1)
    True
    """
    f = np.asarray(decisions, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel() > 0
    prior1 = float(np.count_nonzero(y))
    prior0 = float(y.size) - prior1
    hi, lo = (prior1 + 1.0) / (prior1 + 2.0), 1.0 / (prior0 + 2.0)
    t = np.where(y, hi, lo)
    A, B = 0.0, float(np.log((prior0 + 1.0) / (prior1 + 1.0)))
    fval = _objective(f, t, A, B)
    for _ in range(max_iter):
        z = f * A + B
        # p = P(+1) = 1 / (1 + exp(z)), q = 1 - p, both without overflow
        e = np.exp(-np.abs(z))
        p = np.where(z >= 0.0, e / (1.0 + e), 1.0 / (1.0 + e))
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(f * f @ d2)
        h22 = sigma + float(d2.sum())
        h21 = float(f @ d2)
        d1 = t - p
        g1, g2 = float(f @ d1), float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            nA, nB = A + step * dA, B + step * dB
            nf = _objective(f, t, nA, nB)
            if nf < fval + 1e-4 * step * gd:
                A, B, fval = nA, nB, nf
                break
            step /= 2.0
        if step < min_step:
            break  # the line search failed (libsvm reports it and stops too)
    return float(A), float(B)


def sigmoid_predict(decisions, A, B):
    """``P(+1 | f) = 1 / (1 + exp(A f + B))``, elementwise, without overflow."""
    z = np.asarray(decisions, dtype=np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0.0, e / (1.0 + e), 1.0 / (1.0 + e))


def pairwise_coupling(r):
    """Class probabilities from pairwise ones (Wu, Lin and Weng's second method).

    Parameters
    ----------
    r : ndarray of shape (n_samples, k, k)
        ``r[:, i, j] = P(i | i or j)`` for ``i != j`` (with ``r_ij + r_ji
        = 1``); the diagonal is ignored.

    Returns
    -------
    ndarray of shape (n_samples, k)
        Non-negative rows summing to 1.

    Examples
    --------
    >>> import numpy as np
    >>> r = np.array([[[0, .8, .8], [.2, 0, .5], [.2, .5, 0]]])
    >>> p = pairwise_coupling(r)
    >>> bool(np.isclose(p.sum(), 1.0)), int(p.argmax())
    (True, 0)
    """
    r = np.asarray(r, dtype=np.float64)
    n, k, _ = r.shape
    off = ~np.eye(k, dtype=bool)
    rt = np.swapaxes(r, 1, 2)  # rt[:, i, j] = r_ji
    Q = np.where(off, -rt * r, 0.0)
    Q[:, np.arange(k), np.arange(k)] = np.where(off, rt * rt, 0.0).sum(axis=2)
    M = np.zeros((n, k + 1, k + 1))
    M[:, :k, :k] = Q
    M[:, :k, k] = 1.0
    M[:, k, :k] = 1.0
    rhs = np.zeros((n, k + 1, 1))
    rhs[:, k, 0] = 1.0
    p = np.linalg.solve(M, rhs)[:, :k, 0]
    # non-negative in exact arithmetic; remove rounding below zero
    p = np.clip(p, 0.0, None)
    return p / p.sum(axis=1, keepdims=True)


def pair_probabilities(decisions, sigmoids, pairs, n_classes):
    """Class probabilities from one-vs-one decision values and each pair's sigmoid.

    Parameters
    ----------
    decisions : ndarray of shape (n_samples, n_pairs)
        Column ``p`` is the decision of pair ``pairs[p] = (i, j)``, positive
        for class ``j`` (the pair's +1 class).
    sigmoids : ndarray of shape (n_pairs, 2)
        ``(A, B)`` of each pair (:func:`sigmoid_train`).
    pairs : ndarray of shape (n_pairs, 2)
    n_classes : int

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
    """
    d = np.asarray(decisions, dtype=np.float64)
    n = d.shape[0]
    r = np.zeros((n, n_classes, n_classes))
    for p, (i, j) in enumerate(np.asarray(pairs)):
        pj = np.clip(sigmoid_predict(d[:, p], *sigmoids[p]), MIN_PROB, 1.0 - MIN_PROB)
        r[:, j, i] = pj
        r[:, i, j] = 1.0 - pj
    if n_classes == 2:
        return np.column_stack([r[:, 0, 1], r[:, 1, 0]])
    return pairwise_coupling(r)


def cv_folds(n, rng, n_folds=N_FOLDS):
    """libsvm's folds: one random permutation of ``range(n)``, cut into ``n_folds`` runs.

    Fold ``i`` is ``perm[i n / n_folds : (i + 1) n / n_folds]`` (integer
    division, as libsvm). ``rng`` is a :class:`numpy.random.Generator`.
    """
    perm = rng.permutation(n)
    return [perm[i * n // n_folds:(i + 1) * n // n_folds] for i in range(n_folds)]


def cv_decision_values(y, fit_predict, folds):
    """Out-of-fold decision values of one binary problem.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    fit_predict : callable
        ``fit_predict(train, test) -> ndarray of shape (len(test),)``: fit on
        the points ``train`` and return the decision values at ``test``
        (index arrays into the problem's points).
    folds : list of ndarray
        A partition of ``range(n)`` (:func:`cv_folds`).

    Returns
    -------
    ndarray of shape (n,)
        A fold whose training part holds one class only gets the constant
        decision ``+1`` or ``-1`` of that class, as in libsvm.
    """
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    dec = np.zeros(n)
    for test in folds:
        if test.size == 0:
            continue
        train = np.setdiff1d(np.arange(n), test, assume_unique=True)
        yt = y[train]
        if train.size == 0:
            dec[test] = 0.0
        elif np.all(yt > 0) or np.all(yt < 0):
            dec[test] = 1.0 if yt[0] > 0 else -1.0
        else:
            dec[test] = fit_predict(train, test)
    return dec


def pair_seeds(random_state, n_pairs):
    """One seed per binary problem, drawn in pair order from ``random_state``.

    ``random_state``: None, an int or a :class:`numpy.random.Generator`; the
    same int gives the same folds, and pairs fitted in parallel get the
    seeds of the serial loop.
    """
    rng = np.random.default_rng(random_state)
    return [int(rng.integers(2**63 - 1)) for _ in range(n_pairs)]


def kernel_sigmoid(make_oracle, K, y, C, seed, tol=None):
    """Platt's ``(A, B)`` for one binary problem on its combined kernel ``K``.

    Parameters
    ----------
    make_oracle : callable
        ``make_oracle(bank, y, C) -> oracle`` (the fit's loss, its inner
        tolerance bound in).
    K : ndarray of shape (n, n)
        The learned kernel on the problem's points (prediction's weights).
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    C : float or ndarray of shape (n,)
        The problem's box (per-sample with class or sample weights).
    seed : int
        Seed of the folds' permutation (:func:`pair_seeds`).

    Returns
    -------
    (float, float)
    """
    from ..kernels import KernelBank

    y = np.asarray(y, dtype=np.float64)
    per_sample = np.ndim(C) > 0

    def fit_predict(train, test):
        yt = y[train]
        Ct = C[train] if per_sample else C
        if per_sample:
            # a class whose samples in this part all have weight 0 is absent
            live = yt[Ct > 0.0]
            if live.size == 0 or np.all(live > 0) or np.all(live < 0):
                return np.full(test.size, 0.0 if live.size == 0 else float(np.sign(live[0])))
        bank = KernelBank.from_matrices(np.ascontiguousarray(K[np.ix_(train, train)])[None],
                                        normalize=None, check=False)
        ans = make_oracle(bank, yt, Ct)(np.ones(1))
        return K[np.ix_(test, train)] @ (np.asarray(ans.alpha) * yt) + float(ans.bias)

    folds = cv_folds(y.shape[0], np.random.default_rng(seed))
    return sigmoid_train(cv_decision_values(y, fit_predict, folds), y)
