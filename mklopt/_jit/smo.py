"""Sequential minimal optimisation for the SVM dual on a precomputed kernel.

The problem is

    max_a  1'a - 1/2 a'Qa   s.t.  0 <= a <= C,  y'a = 0,   Q_ij = y_i y_j K_ij,

with ``K`` any symmetric n x n float64 matrix (a combined MKL kernel, or a
sub-kernel ``K[np.ix_(idx, idx)]`` of a bootstrap sample: repeated points
are fine, their zero curvature is handled by the ``TAU`` safeguard).

Working-set selection is the second-order rule "WSS 2" of Fan, Chen and Lin
(JMLR 6, 2005), the rule libsvm uses. With ``G = Qa - 1`` and
``F_t = -y_t G_t``:

* ``i = argmax { F_t : t in I_up }``,
  ``I_up = {t : y_t = +1, a_t < C} U {t : y_t = -1, a_t > 0}``;
* ``j = argmin { -b_it^2 / a_it : t in I_low, F_t < F_i }`` with
  ``b_it = F_i - F_t``, ``a_it = K_ii + K_tt - 2 K_it`` (``TAU`` if <= 0),
  ``I_low = {t : y_t = +1, a_t > 0} U {t : y_t = -1, a_t < C}``;
* stop when ``m(a) - M(a) = F_i - min_{I_low} F <= tol`` (libsvm's ``eps``).

The pair moves along ``d = y_i e_i - y_j e_j`` (which keeps ``y'a = 0``) by
the exact line-search step ``b_ij / a_ij`` cut back to the box, and ``F``
follows with one fused pass over the contiguous rows ``K[i]`` and ``K[j]``
that also picks the next ``i``. Each iteration therefore reads two kernel
rows in two passes and allocates nothing.

Shrinking (optional, on by default) sets aside bound variables that cannot
currently be part of a violating pair, at the start (a warm start is near
the solution, so most bound variables go at once) and every
``min(n, 1000)`` iterations. The gradient of the set-aside variables is
brought up to date from the rows of the touched indices only, and the stop
test is always made on all variables.

All functions take C-contiguous float64 arrays; ``y`` holds -1.0/+1.0.
"""

import numpy as np
from numba import njit

from ._options import JIT

#: Curvature used when ``a_ij <= 0`` (non-PD pairs, duplicated points).
TAU = 1e-12


@njit(**JIT)
def smo_gradient(K, y, alpha, grad):
    """Write ``grad = Q alpha - 1`` using only the rows of nonzero ``alpha``.

    ``K`` (n, n) symmetric, ``y``, ``alpha`` and ``grad`` (n,); ``grad`` is
    written. Cost O(n |S|) with ``S = {s : alpha_s != 0}``; each row
    ``K[s]`` is read contiguously (symmetry makes it column ``s``), four
    rows per sweep so that the accumulator is loaded and stored once per
    four rows.
    """
    n = y.shape[0]
    acc = np.zeros(n)
    rows = np.empty(n, dtype=np.int64)
    n_sv = 0
    for s in range(n):
        if alpha[s] != 0.0:
            rows[n_sv] = s
            n_sv += 1
    n4 = n_sv - n_sv % 4
    for r in range(0, n4, 4):
        s0, s1, s2, s3 = rows[r], rows[r + 1], rows[r + 2], rows[r + 3]
        c0 = alpha[s0] * y[s0]
        c1 = alpha[s1] * y[s1]
        c2 = alpha[s2] * y[s2]
        c3 = alpha[s3] * y[s3]
        K0, K1, K2, K3 = K[s0], K[s1], K[s2], K[s3]
        for t in range(n):
            acc[t] += (c0 * K0[t] + c1 * K1[t]) + (c2 * K2[t] + c3 * K3[t])
    for r in range(n4, n_sv):
        s0 = rows[r]
        c0 = alpha[s0] * y[s0]
        K0 = K[s0]
        for t in range(n):
            acc[t] += c0 * K0[t]
    for t in range(n):
        grad[t] = y[t] * acc[t] - 1.0
    return grad


@njit(**JIT)
def _in_sets(yt, at, C):
    """Memberships (in I_up, in I_low) of a variable with label yt, value at."""
    if yt > 0.0:
        return at < C, at > 0.0
    return at > 0.0, at < C


@njit(**JIT)
def _select_i(y, C, alpha, F, act, n_act):
    """``argmax {F_t : t in I_up}`` over ``act[:n_act]``; (-1, -inf) if empty."""
    gmax = -np.inf
    i = -1
    for k in range(n_act):
        t = act[k]
        at = alpha[t]
        if ((at < C) if y[t] > 0.0 else (at > 0.0)) and F[t] >= gmax:
            gmax = F[t]
            i = t
    return i, gmax


@njit(**JIT)
def _select_j(K, diag, y, C, alpha, F, act, n_act, i, gmax):
    """Second-order choice of j for a given i, and M = min over I_low of F.

    Over ``act[:n_act]``: ``j = argmin -b^2/a`` over ``t`` in I_low with
    ``b = gmax - F_t > 0`` and ``a = K_ii + K_tt - 2 K_it`` (``TAU`` if
    <= 0). Returns (-1, inf) when I_low is empty or ``i < 0``.
    """
    j = -1
    gmin = np.inf
    if i < 0:
        return j, gmin
    Ki = K[i]
    Kii = diag[i]
    best = np.inf
    for k in range(n_act):
        t = act[k]
        at = alpha[t]
        if (at > 0.0) if y[t] > 0.0 else (at < C):
            ft = F[t]
            if ft < gmin:
                gmin = ft
            b = gmax - ft
            if b > 0.0:
                a = Kii + diag[t] - 2.0 * Ki[t]
                if a <= 0.0:
                    a = TAU
                obj = -(b * b) / a
                if obj <= best:
                    best = obj
                    j = t
    return j, gmin


@njit(**JIT)
def _sync(K, F, dv, touched, is_touched, n_touched, act, n_act):
    """Bring ``F`` of the inactive variables ``act[n_act:]`` up to date.

    Since ``F_t = y_t - (K v)_t`` with ``v = alpha * y``, a change ``dv`` of
    ``v`` on the touched indices moves ``F`` by ``-K dv``: one contiguous row
    per touched index. ``dv`` and ``is_touched`` are cleared for those
    indices; returns the new number of touched indices (0).
    """
    n = F.shape[0]
    for r in range(n_touched):
        u = touched[r]
        c = dv[u]
        dv[u] = 0.0
        is_touched[u] = 0
        if c != 0.0:
            Ku = K[u]
            for k in range(n_act, n):
                t = act[k]
                F[t] -= c * Ku[t]
    return 0


@njit(**JIT)
def _shrink(y, C, alpha, F, act):
    """Order ``act`` as (active, inactive); return the number of active ones.

    Needs ``F`` exact for every variable. A variable in only one of I_up and
    I_low is set aside while it cannot be part of a violating pair: in I_up
    only and ``F_t < M``, or in I_low only and ``F_t > m``. Free variables
    always stay active. The final check on all variables catches any that
    start violating later.
    """
    n = y.shape[0]
    gmax = -np.inf
    gmin = np.inf
    for t in range(n):
        up, low = _in_sets(y[t], alpha[t], C)
        if up and F[t] > gmax:
            gmax = F[t]
        if low and F[t] < gmin:
            gmin = F[t]
    # Active indices fill act from the front (ascending), inactive ones
    # from the back.
    n_act = 0
    back = n
    for t in range(n):
        up, low = _in_sets(y[t], alpha[t], C)
        if (up and (low or F[t] >= gmin)) or (low and F[t] <= gmax):
            act[n_act] = t
            n_act += 1
        else:
            back -= 1
            act[back] = t
    return n_act


@njit(**JIT)
def _smo_core(K, diag, y, C, alpha, F, tol, max_iter, shrinking):
    # F_t = -y_t G_t is kept instead of G: the update then needs no sign.
    # Passes run over the active indices act[:n_act] (all of them unless
    # shrinking set some aside); dv accumulates the change of v = alpha * y
    # that the inactive F_t have not seen yet.
    n = y.shape[0]
    act = np.arange(n)
    n_act = n
    dv = np.zeros(n)
    touched = np.empty(n, dtype=np.int64)
    is_touched = np.zeros(n, dtype=np.uint8)
    n_touched = 0
    # Shrink at the start (a warm start is near the solution, so most bound
    # variables can be set aside at once) and then every min(n, 1000)
    # iterations, as libsvm does.
    period = min(n, 1000)
    counter = 0 if shrinking else -1

    i, gmax = _select_i(y, C, alpha, F, act, n_act)
    n_iter = 0
    while True:
        if counter == 0:
            if n_act < n:
                n_touched = _sync(K, F, dv, touched, is_touched, n_touched, act, n_act)
            n_act = _shrink(y, C, alpha, F, act)
            counter = period
            i, gmax = _select_i(y, C, alpha, F, act, n_act)

        j, gmin = _select_j(K, diag, y, C, alpha, F, act, n_act, i, gmax)
        if j < 0 or gmax - gmin <= tol:
            if n_act == n:
                break
            # Optimal on the active set: make every F exact, then check all.
            n_touched = _sync(K, F, dv, touched, is_touched, n_touched, act, n_act)
            n_act = n
            for t in range(n):
                act[t] = t
            counter = period if shrinking else -1
            i, gmax = _select_i(y, C, alpha, F, act, n_act)
            continue
        if n_iter >= max_iter:
            break
        n_iter += 1
        if counter > 0:
            counter -= 1

        # Exact step along d = y_i e_i - y_j e_j, cut back to the box.
        Ki = K[i]
        a = diag[i] + diag[j] - 2.0 * Ki[j]
        if a <= 0.0:
            a = TAU
        step = (gmax - F[j]) / a
        yi = y[i]
        yj = y[j]
        room_i = C - alpha[i] if yi > 0.0 else alpha[i]
        room_j = alpha[j] if yj > 0.0 else C - alpha[j]
        hit_i = False
        hit_j = False
        if step >= room_i:
            step = room_i
            hit_i = True
        if step >= room_j:
            step = room_j
            hit_j = True
            hit_i = room_i == room_j
        # Land exactly on a bound when the box stops the step, so that the
        # index sets (and libsvm's bias rule) see clean 0 and C values.
        if hit_i:
            alpha[i] = C if yi > 0.0 else 0.0
        else:
            alpha[i] += yi * step
        if hit_j:
            alpha[j] = 0.0 if yj > 0.0 else C
        else:
            alpha[j] -= yj * step
        if n_act < n:
            # v_i changes by +step and v_j by -step.
            dv[i] += step
            dv[j] -= step
            for u in (i, j):
                if not is_touched[u]:
                    is_touched[u] = 1
                    touched[n_touched] = u
                    n_touched += 1

        # F_t -= step (K_it - K_jt), fused with the choice of the next i.
        Kj = K[j]
        gmax = -np.inf
        i = -1
        for k in range(n_act):
            t = act[k]
            ft = F[t] - step * (Ki[t] - Kj[t])
            F[t] = ft
            at = alpha[t]
            if ((at < C) if y[t] > 0.0 else (at > 0.0)) and ft >= gmax:
                gmax = ft
                i = t
    if n_act < n:
        _sync(K, F, dv, touched, is_touched, n_touched, act, n_act)
    return n_iter


@njit(**JIT)
def smo_solve(K, y, C, alpha, grad, tol, max_iter, shrinking=True):
    """Solve the SVM dual by SMO with second-order working-set selection.

    Parameters
    ----------
    K : (n, n) float64, C-contiguous, symmetric
        Kernel matrix (any n; a sub-kernel of a sample works as well).
    y : (n,) float64
        Labels in {-1.0, +1.0}.
    C : float
        Upper bound of every ``alpha_t``.
    alpha : (n,) float64, in/out
        A feasible start (``0 <= alpha <= C``, ``y'alpha = 0``); overwritten
        with the solution.
    grad : (n,) float64, in/out
        ``Q alpha - 1`` for the starting ``alpha`` (see :func:`smo_gradient`);
        overwritten with the gradient at the solution.
    tol : float
        Stop when ``m(alpha) - M(alpha) <= tol`` over all variables.
    max_iter : int
        Iteration budget.
    shrinking : bool, default=True
        Set aside bound variables that cannot currently violate the KKT
        conditions (at the start and every ``min(n, 1000)`` iterations),
        then check all variables before stopping. The answer meets ``tol``
        either way.

    Returns
    -------
    n_iter : int
        Iterations done; equal to ``max_iter`` when the budget ran out
        (check :func:`smo_violation` to tell the two apart).
    """
    n = y.shape[0]
    diag = np.empty(n)
    F = np.empty(n)
    for t in range(n):
        diag[t] = K[t, t]
        F[t] = -y[t] * grad[t]
    n_iter = _smo_core(K, diag, y, C, alpha, F, tol, max_iter, shrinking)
    for t in range(n):
        grad[t] = -y[t] * F[t]
    return n_iter


@njit(**JIT)
def smo_violation(y, alpha, grad, C):
    """Maximal KKT violation ``m(alpha) - M(alpha)`` (0 or less at optimum).

    ``m = max_{I_up} -y_t G_t`` and ``M = min_{I_low} -y_t G_t``; returns
    ``-inf`` when either set is empty.
    """
    n = y.shape[0]
    gmax = -np.inf
    gmin = np.inf
    for t in range(n):
        at = alpha[t]
        ft = -y[t] * grad[t]
        if y[t] > 0.0:
            up = at < C
            low = at > 0.0
        else:
            up = at > 0.0
            low = at < C
        if up and ft > gmax:
            gmax = ft
        if low and ft < gmin:
            gmin = ft
    if gmax == -np.inf or gmin == np.inf:
        return -np.inf
    return gmax - gmin


@njit(**JIT)
def svm_bias(y, alpha, grad, C):
    """Bias ``b = -rho`` of the decision function ``sum_i a_i y_i K(x_i, x) + b``.

    libsvm's rule: ``rho`` is the mean of ``y_t G_t`` over the free
    variables (``0 < alpha_t < C``); without free variables it is the
    midpoint of the interval that the bounded variables allow.
    """
    n = y.shape[0]
    ub = np.inf
    lb = -np.inf
    total = 0.0
    n_free = 0
    for t in range(n):
        yg = y[t] * grad[t]
        at = alpha[t]
        if at >= C:
            if y[t] < 0.0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        elif at <= 0.0:
            if y[t] > 0.0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        else:
            n_free += 1
            total += yg
    if n_free > 0:
        rho = total / n_free
    elif ub == np.inf:
        rho = lb
    elif lb == -np.inf:
        rho = ub
    else:
        rho = 0.5 * (ub + lb)
    return -rho
