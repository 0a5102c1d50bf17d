"""Sequential minimal optimisation for the dual problems of every MKL oracle.

One solver serves classification, epsilon-SVR and one-class (the common
dual form of docs/new_oracle.md). The problem, in libsvm's form (Fan, Chen
and Lin, JMLR 6, 2005, eq. 1; see :class:`mklopt.oracles.DualProblem`), is

    min_a  1/2 a'Qa + p'a   s.t.  s'a = total,  0 <= a_t <= upper_t,
    Q_tu = s_t s_u K[rows_t, rows_u],

with ``K`` a symmetric float64 kernel matrix, signs ``s_t`` in {-1, +1} and
``rows_t`` the kernel row variable ``t`` reads (the identity for
classification and one-class; epsilon-SVR has two variables per row). The
linear term ``p`` enters only through the gradient ``G = Qa + p`` that the
caller passes in (:func:`smo_gradient` builds it), so the loop itself never
sees which problem it solves.

Working-set selection is the second-order rule "WSS 2" of Fan, Chen and
Lin, the rule libsvm uses. With ``F_t = -s_t G_t``:

* ``i = argmax { F_t : t in I_up }``,
  ``I_up = {t : s_t = +1, a_t < U_t} U {t : s_t = -1, a_t > 0}``;
* ``j = argmin { -b_it^2 / a_it : t in I_low, F_t < F_i }`` with
  ``b_it = F_i - F_t``, ``a_it = K_ii + K_tt - 2 K_it`` in kernel rows
  (``TAU`` if <= 0), ``I_low = {t : s_t = +1, a_t > 0} U {t : s_t = -1,
  a_t < U_t}``;
* stop when ``m(a) - M(a) = F_i - min_{I_low} F <= tol`` (libsvm's ``eps``).

The pair moves along ``d = s_i e_i - s_j e_j`` (which keeps ``s'a``) by the
exact line-search step ``b_ij / a_ij`` cut back to the box. In kernel terms
``v = sum_t s_t a_t e_{rows_t}`` then changes by ``step (e_{r_i} - e_{r_j})``
and ``F_t`` by ``-step (K[r_i, r_t] - K[r_j, r_t])``: one fused pass over
two contiguous kernel rows that also reduces the next ``i``'s ``F``. Each
iteration reads two kernel rows and allocates nothing.

Membership of I_up and I_low is kept as additive masks on ``F`` (``0`` or
``-inf`` for I_up, ``0`` or ``+inf`` for I_low), updated for the two
variables a step moves, so the selection passes are branch-free
reductions instead of a data-dependent branch per variable. Each
reduction finds only the extreme value; a short pass from the back then
finds the last index that attains it, so the reductions carry no index
from one element to the next (and the division of WSS 2 no longer stalls
the loop). The choices (ties go to the last index) and iterates are those
of the rules above; measured against the branching passes, the same
iterations in 1.2-2.2x fewer seconds (ionosphere, pima, letter 3,000,
shuttle 4,000, SVR on diabetes), and against one pass that carries the
index, in a third to a half of the time (``benchmarks/README.md`` at
commit ``89ee8cc``, "Larger single-kernel solves; branch-free selection"
and "SMO's selection in two passes").

While no variable is set aside the index list ``act`` is the identity
(``_shrink`` keeps the active ones in ascending order, unshrinking
restores it), so the passes then read ``t`` directly: on MKBoost's weak
SVMs (30-60 variables) that is 1.6-2.2x fewer seconds than through the
list.

Shrinking (optional, on by default) sets aside bound variables that cannot
currently be part of a violating pair, at the start (a warm start is near
the solution, so most bound variables go at once) and every
``min(n, 1000)`` iterations. The ``F`` of the set-aside variables is
brought up to date from the rows of the touched indices only, and the stop
test is always made on all variables.

The same loop solves the sub-problems of the row-cached decomposition
(:mod:`mklopt.oracles._solver`): there ``K`` is the small block of a
working set and ``F`` its part of the global one.

All functions take C-contiguous float64 arrays (int64 for ``rows``).
"""

import numpy as np
from numba import njit

from ._options import JIT
from ._stop import stopped
from .products import source_fill, source_row

#: Curvature used when ``a_ij <= 0`` (non-PD pairs, duplicated points).
TAU = 1e-12
#: Iterations between two looks at the stop flag (an iteration reads two
#: kernel rows: microseconds to milliseconds, so a stop is seen promptly).
STOP_EVERY = 64


@njit(**JIT)
def smo_gradient(K, rows, signs, linear, a, grad):
    """Write ``grad = Q a + p`` using only the kernel rows of nonzero ``a``.

    ``K`` (n_rows, n_rows) symmetric; ``rows`` (N,) int64; ``signs``,
    ``linear`` (``p``), ``a`` and ``grad`` (N,) float64; ``grad`` is
    written. With ``v = sum_t s_t a_t e_{rows_t}``, ``grad_t = p_t + s_t
    (K v)[rows_t]``. Cost O(n_rows |supp v|): each row ``K[r]`` with
    ``v_r != 0`` is read contiguously (symmetry makes it column ``r``),
    four rows per sweep.
    """
    nr = K.shape[0]
    N = a.shape[0]
    v = np.zeros(nr)
    for t in range(N):
        if a[t] != 0.0:
            v[rows[t]] += signs[t] * a[t]
    acc = np.zeros(nr)
    nz = np.empty(nr, dtype=np.int64)
    n_nz = 0
    for r in range(nr):
        if v[r] != 0.0:
            nz[n_nz] = r
            n_nz += 1
    n4 = n_nz - n_nz % 4
    for c in range(0, n4, 4):
        r0, r1, r2, r3 = nz[c], nz[c + 1], nz[c + 2], nz[c + 3]
        c0, c1, c2, c3 = v[r0], v[r1], v[r2], v[r3]
        K0, K1, K2, K3 = K[r0], K[r1], K[r2], K[r3]
        for u in range(nr):
            acc[u] += (c0 * K0[u] + c1 * K1[u]) + (c2 * K2[u] + c3 * K3[u])
    for c in range(n4, n_nz):
        r0 = nz[c]
        c0 = v[r0]
        K0 = K[r0]
        for u in range(nr):
            acc[u] += c0 * K0[u]
    for t in range(N):
        grad[t] = linear[t] + signs[t] * acc[rows[t]]
    return grad


@njit(**JIT)
def _no_source():
    """The row source of a matrix that is already filled (see :func:`_row`)."""
    return (
        np.empty(0, dtype=np.uint8),
        np.empty((0, 0, 0)),
        np.empty(0),
        np.empty(0, dtype=np.int64),
        np.empty(0, dtype=np.int64),
        np.empty((4, 0), dtype=np.int64),
        np.empty((3, 0)),
    )


@njit(**JIT)
def _row(K, src, r):
    """Row ``r`` of ``K``, combined first if the source says it is not yet.

    ``src`` None: ``K`` is filled (the plain solver, compiled without the
    source's code). Else ``src = (filled, bank, w, kernels, gidx, ri, rf)``:
    ``filled`` (n,) uint8 marks the rows of ``K`` already written (length 0:
    all of them); a missing row is combined from ``bank`` by
    :func:`~mklopt._jit.products.source_row` (from a dense bank, or from
    stored products with the recipes ``ri``, ``rf``) and marked. SMO reads a kernel row
    only through here, so a call combines only the rows it reads.
    """
    if src is None:  # a filled matrix: numba prunes the rest, source_row is not compiled
        return K[r]
    filled = src[0]
    if filled.shape[0] != 0 and filled[r] == 0:
        source_row(src[1], src[2], src[3], src[4], src[5], src[6], r, K[r])
        filled[r] = 1
    return K[r]


@njit(**JIT)
def _in_sets(st, at, ut):
    """Memberships (in I_up, in I_low) of a variable with sign st, value at, bound ut."""
    if st > 0.0:
        return at < ut, at > 0.0
    return at > 0.0, at < ut


@njit(**JIT)
def _bound_masks(st, at, ut):
    """``(0 or -inf, 0 or +inf)``: additive masks of I_up and I_low for one variable."""
    up, low = _in_sets(st, at, ut)
    return (0.0 if up else -np.inf), (0.0 if low else np.inf)


@njit(**JIT)
def _select_i(F, pu, act, n_act):
    """``argmax {F_t : t in I_up}`` over ``act[:n_act]`` (the last of ties).

    ``act`` is the identity whenever ``n_act == len(F)`` (nothing set
    aside), and the pass then reads ``t`` directly, without the index list.

    ``pu[t]`` is 0 for ``t`` in I_up and ``-inf`` otherwise, so the
    maximum is a branch-free reduction; a second pass from the back finds
    the last index that attains it. Returns ``(i, gmax)``; ``gmax = -inf``
    when I_up is empty (``i`` is then meaningless and no ``j`` exists).
    """
    gmax = -np.inf
    full = n_act == F.shape[0]  # then act is the identity
    for k in range(n_act):
        t = k if full else act[k]
        gmax = max(gmax, F[t] + pu[t])
    return _last_equal(F, pu, act, n_act, gmax), gmax


@njit(**JIT)
def _last_equal(F, p, act, n_act, value):
    """The last ``t`` of ``act[:n_act]`` with ``F[t] + p[t] == value`` (0 if none).

    The index half of an argmax or argmin whose value a reduction found:
    kept apart from that reduction, which then has no index to carry from
    one element to the next and runs several times faster (the pass here
    usually stops early).
    """
    full = n_act == F.shape[0]
    for k in range(n_act - 1, -1, -1):
        t = k if full else act[k]
        if F[t] + p[t] == value:
            return t
    return 0


@njit(**JIT)
def _select_j(K, dvar, rows, mapped, F, pl, act, n_act, i, gmax, obj):
    """Second-order choice of j for a given i, and M = min over I_low of F.

    Over ``act[:n_act]``: ``j = argmin -b^2/c`` (the last of ties) over
    ``t`` in I_low with ``b = gmax - F_t > 0`` and ``c = K_ii + K_tt - 2
    K_it`` (``TAU`` if <= 0); ``dvar[t] = K[rows_t, rows_t]``; ``pl[t]``
    is 0 for ``t`` in I_low and ``+inf`` otherwise (branch-free pass).
    Returns (-1, inf) when I_low is empty or ``gmax = -inf`` (I_up empty).
    ``act`` is the identity when ``n_act == len(F)``, as in :func:`_select_i`.

    ``obj`` (at least ``n_act``) is work space: the first pass writes each
    ``-b^2/c`` (``+inf`` where ``b <= 0``) and reduces their minimum, and a
    second pass from the back finds the last index that attains it. One
    pass carrying the index along spent most of its time waiting for the
    division of the previous element: 4.5 against 0.9 ns per variable
    (benchmarks/README.md at commit 89ee8cc, "SMO's selection in two
    passes").
    """
    gmin = np.inf
    if gmax == -np.inf:
        return -1, gmin
    Ki = K[rows[i]]
    Kii = dvar[i]
    best = np.inf
    full = n_act == F.shape[0]  # then act is the identity
    for k in range(n_act):
        t = k if full else act[k]
        fl = F[t] + pl[t]
        gmin = min(gmin, fl)
        b = gmax - fl
        c = Kii + dvar[t] - 2.0 * Ki[rows[t] if mapped else t]
        c = c if c > 0.0 else TAU
        o = -(b * b) / c
        o = o if b > 0.0 else np.inf
        obj[k] = o
        best = min(best, o)
    if best == np.inf:
        return -1, gmin
    for k in range(n_act - 1, -1, -1):
        if obj[k] == best:
            return (k if full else act[k]), gmin
    return -1, gmin  # not reached: some obj[k] equals best


@njit(**JIT)
def _take_step(signs, upper, a, pu, pl, i, j, step):
    """Move ``a`` by ``step`` along ``d = s_i e_i - s_j e_j``, cut back to the box.

    Returns the step taken. A step the box stops lands exactly on the
    bound, so that the index sets (and libsvm's bias rule) see clean 0 and
    U values; the masks ``pu``, ``pl`` of ``i`` and ``j`` follow.
    """
    si = signs[i]
    sj = signs[j]
    room_i = upper[i] - a[i] if si > 0.0 else a[i]
    room_j = a[j] if sj > 0.0 else upper[j] - a[j]
    hit_i = False
    hit_j = False
    if step >= room_i:
        step = room_i
        hit_i = True
    if step >= room_j:
        step = room_j
        hit_j = True
        hit_i = room_i == room_j
    if hit_i:
        a[i] = upper[i] if si > 0.0 else 0.0
    else:
        a[i] += si * step
    if hit_j:
        a[j] = 0.0 if sj > 0.0 else upper[j]
    else:
        a[j] -= sj * step
    pu[i], pl[i] = _bound_masks(si, a[i], upper[i])
    pu[j], pl[j] = _bound_masks(sj, a[j], upper[j])
    return step


@njit(**JIT)
def _sync(K, rows, F, dv, touched, is_touched, n_touched, act, n_act, src):
    """Bring ``F`` of the inactive variables ``act[n_act:]`` up to date.

    ``F_t = -s_t p_t - (K v)[rows_t]``, so a change ``dv`` of ``v`` (indexed
    by kernel row) on the touched rows moves ``F_t`` by ``-(K dv)[rows_t]``:
    one contiguous row per touched kernel row. ``dv`` and ``is_touched`` are
    cleared for those rows; returns the new number of touched rows (0).
    """
    N = F.shape[0]
    for r in range(n_touched):
        u = touched[r]
        c = dv[u]
        dv[u] = 0.0
        is_touched[u] = 0
        if c != 0.0:
            Ku = _row(K, src, u)
            for k in range(n_act, N):
                t = act[k]
                F[t] -= c * Ku[rows[t]]
    return 0


@njit(**JIT)
def _shrink(signs, upper, a, F, act):
    """Order ``act`` as (active, inactive); return the number of active ones.

    Needs ``F`` exact for every variable. A variable in only one of I_up and
    I_low is set aside while it cannot be part of a violating pair: in I_up
    only and ``F_t < M``, or in I_low only and ``F_t > m``. Free variables
    always stay active. The final check on all variables catches any that
    start violating later.
    """
    N = signs.shape[0]
    gmax = -np.inf
    gmin = np.inf
    for t in range(N):
        up, low = _in_sets(signs[t], a[t], upper[t])
        if up and F[t] > gmax:
            gmax = F[t]
        if low and F[t] < gmin:
            gmin = F[t]
    # Active indices fill act from the front (ascending), inactive ones
    # from the back.
    n_act = 0
    back = N
    for t in range(N):
        up, low = _in_sets(signs[t], a[t], upper[t])
        if (up and (low or F[t] >= gmin)) or (low and F[t] <= gmax):
            act[n_act] = t
            n_act += 1
        else:
            back -= 1
            act[back] = t
    return n_act


@njit(**JIT)
def _smo_core(K, dvar, rows, signs, upper, a, F, tol, max_iter, shrinking, stop):
    """The SMO loop on a filled matrix ``K`` (see :func:`_smo_core_src`)."""
    # No source (None), not an empty one (_no_source()): the row reads then
    # compile without the source's machinery, which a filled matrix never runs.
    return _smo_core_src(K, dvar, rows, signs, upper, a, F, tol, max_iter, shrinking, None,
                         stop)


@njit(**JIT)
def _smo_core_src(K, dvar, rows, signs, upper, a, F, tol, max_iter, shrinking, src, stop):
    # F_t = -s_t G_t is kept instead of G: the update then needs no sign.
    # stop[0] != 0 (looked at every STOP_EVERY iterations) ends the loop as
    # the budget does: every step kept s'a and the box, so a is feasible,
    # and F is brought up to date below.
    # Passes run over the active indices act[:n_act] (all of them unless
    # shrinking set some aside); dv accumulates the change of v (per kernel
    # row) that the inactive F_t have not seen yet.
    N = signs.shape[0]
    nr = K.shape[0]
    # Classification and one-class read row t for variable t; skipping the
    # map there keeps the hot loops as fast as a map-free solver (LLVM
    # unswitches the loop-invariant test).
    mapped = False
    if N != nr:
        mapped = True
    else:
        for t in range(N):
            if rows[t] != t:
                mapped = True
                break
    act = np.arange(N)
    n_act = N
    # Membership of I_up and I_low as additive masks on F (see _select_i),
    # kept for the two variables each step moves.
    pu = np.empty(N)
    pl = np.empty(N)
    obj = np.empty(N)  # work space of _select_j
    for t in range(N):
        pu[t], pl[t] = _bound_masks(signs[t], a[t], upper[t])
    dv = np.zeros(nr)
    touched = np.empty(nr, dtype=np.int64)
    is_touched = np.zeros(nr, dtype=np.uint8)
    n_touched = 0
    # Shrink at the start (a warm start is near the solution, so most bound
    # variables can be set aside at once) and then every min(N, 1000)
    # iterations, as libsvm does.
    period = min(N, 1000)
    counter = 0 if shrinking else -1

    i, gmax = _select_i(F, pu, act, n_act)
    n_iter = 0
    while True:
        if counter == 0:
            if n_act < N:
                n_touched = _sync(K, rows, F, dv, touched, is_touched, n_touched, act, n_act,
                                  src)
            n_act = _shrink(signs, upper, a, F, act)
            counter = period
            i, gmax = _select_i(F, pu, act, n_act)

        if gmax != -np.inf:
            _row(K, src, rows[i])
        j, gmin = _select_j(K, dvar, rows, mapped, F, pl, act, n_act, i, gmax, obj)
        if j < 0 or gmax - gmin <= tol:
            if n_act == N:
                break
            # Optimal on the active set: make every F exact, then check all.
            n_touched = _sync(K, rows, F, dv, touched, is_touched, n_touched, act, n_act, src)
            n_act = N
            for t in range(N):
                act[t] = t
            counter = period if shrinking else -1
            i, gmax = _select_i(F, pu, act, n_act)
            continue
        if n_iter >= max_iter:
            break
        if n_iter % STOP_EVERY == 0 and stopped(stop):
            break
        n_iter += 1
        if counter > 0:
            counter -= 1

        # Exact step along d = s_i e_i - s_j e_j, cut back to the box.
        ri = rows[i]
        rj = rows[j]
        Ki = _row(K, src, ri)
        c = dvar[i] + dvar[j] - 2.0 * Ki[rj]
        if c <= 0.0:
            c = TAU
        step = _take_step(signs, upper, a, pu, pl, i, j, (gmax - F[j]) / c)
        if n_act < N:
            # v[r_i] changes by +step and v[r_j] by -step.
            dv[ri] += step
            dv[rj] -= step
            for u in (ri, rj):
                if not is_touched[u]:
                    is_touched[u] = 1
                    touched[n_touched] = u
                    n_touched += 1

        # F_t -= step (K[r_i, r_t] - K[r_j, r_t]), fused with the maximum
        # for the next i (whose index a pass from the back then finds, as
        # in _select_i).
        Kj = _row(K, src, rj)
        gmax = -np.inf
        full = n_act == N  # then act is the identity
        for k in range(n_act):
            t = k if full else act[k]
            rt = rows[t] if mapped else t
            ft = F[t] - step * (Ki[rt] - Kj[rt])
            F[t] = ft
            gmax = max(gmax, ft + pu[t])
        i = _last_equal(F, pu, act, n_act, gmax)
    if n_act < N:
        _sync(K, rows, F, dv, touched, is_touched, n_touched, act, n_act, src)
    return n_iter


@njit(**JIT)
def smo_solve(K, rows, signs, upper, a, grad, tol, max_iter, shrinking, stop):
    """Solve ``min 1/2 a'Qa + p'a`` over the box and ``s'a = const`` by SMO.

    Parameters
    ----------
    K : (n_rows, n_rows) float64, C-contiguous, symmetric
        Kernel matrix (a combined MKL kernel, or the block of a working set).
    rows : (N,) int64
        Kernel row of each variable.
    signs : (N,) float64
        ``s_t`` in {-1.0, +1.0}.
    upper : (N,) float64
        Upper bounds (> 0); every lower bound is 0.
    a : (N,) float64, in/out
        A feasible start; overwritten with the solution. ``s'a`` is kept.
    grad : (N,) float64, in/out
        ``Q a + p`` for the starting ``a`` (see :func:`smo_gradient`);
        overwritten with the gradient at the solution.
    tol : float
        Stop when ``m(a) - M(a) <= tol`` over all variables.
    max_iter : int
        Iteration budget.
    shrinking : bool
        Set aside bound variables that cannot currently violate the KKT
        conditions, then check all variables before stopping. The answer
        meets ``tol`` either way.
    stop : (1,) int64
        Stop flag (:mod:`mklopt._interrupt`), read every ``STOP_EVERY``
        iterations; when it is non-zero the loop ends early, as when the
        budget runs out: ``a`` is feasible and ``grad`` is its exact
        gradient, but ``tol`` may not be met.

    Returns
    -------
    n_iter : int
        Iterations done; equal to ``max_iter`` when the budget ran out
        (check :func:`smo_violation` to tell the two apart).
    """
    N = signs.shape[0]
    dvar = np.empty(N)
    F = np.empty(N)
    for t in range(N):
        dvar[t] = K[rows[t], rows[t]]
        F[t] = -signs[t] * grad[t]
    n_iter = _smo_core(K, dvar, rows, signs, upper, a, F, tol, max_iter, shrinking, stop)
    for t in range(N):
        grad[t] = -signs[t] * F[t]
    return n_iter


@njit(**JIT)
def smo_gradient_src(K, filled, bank, w, kernels, gidx, ri, rf, rows, signs, linear, a, grad,
                     stop):
    """:func:`smo_gradient` on a matrix whose rows are combined when first read.

    The row source as in :func:`smo_solve_src`; only the rows of the support of
    ``v`` are combined. The same sums in the same order as
    :func:`smo_gradient` (one row at a time), so the result equals it on
    the filled matrix up to the grouping of four rows there. Once ``stop[0]``
    is non-zero no further row is combined and ``grad`` is not written
    (rows combined so far are whole and marked in ``filled``).
    """
    nr = K.shape[0]
    N = a.shape[0]
    v = np.zeros(nr)
    for t in range(N):
        if a[t] != 0.0:
            v[rows[t]] += signs[t] * a[t]
    # The support's rows first, in one batch, then their sum: combining a row
    # between the additions ran 1.5-2x slower, and a batch from stored
    # products sets up its evaluation once for all rows.
    need = np.empty(nr, dtype=np.int64)
    n_need = 0
    for r in range(nr):
        if v[r] != 0.0 and filled[r] == 0:
            need[n_need] = r
            n_need += 1
    done = source_fill(bank, w, kernels, gidx, ri, rf, need[:n_need], K, stop)
    for t in range(done):
        filled[need[t]] = 1
    if done < n_need:
        return grad
    acc = np.zeros(nr)
    for r in range(nr):
        c0 = v[r]
        if c0 != 0.0:
            K0 = K[r]
            for u in range(nr):
                acc[u] += c0 * K0[u]
    for t in range(N):
        grad[t] = linear[t] + signs[t] * acc[rows[t]]
    return grad


@njit(**JIT)
def smo_solve_src(K, filled, bank, w, kernels, gidx, ri, rf, dvar, rows, signs, upper, a, grad,
                  tol, max_iter, shrinking, stop):
    """:func:`smo_solve` that combines each kernel row the first time it is read.

    Parameters
    ----------
    K : (n, n) float64
        Work matrix; row ``r`` is valid once ``filled[r]`` is set.
    filled, bank, w, kernels, gidx, ri, rf
        The row source: ``filled`` (n,) uint8 marks the rows of ``K``
        already combined (zeros for a new weight vector; updated), ``bank``
        (m, N, N) float64 or float32 base kernels, ``w`` (r,) float64
        weights of ``kernels`` (r,) int64, ``gidx`` (n,) int64 the bank
        rows of the problem's points (see
        :func:`~mklopt._jit.combine.view_row`); with recipes ``ri`` (4, m)
        and ``rf`` (3, m), ``bank`` holds stored products instead
        (:func:`~mklopt._jit.products.product_row`; ``ri`` of shape (4, 0):
        kernels). Separate arguments rather
        than one tuple: a tuple argument costs numba's dispatcher tens of
        microseconds per call to type.
    dvar : (N,) float64
        ``K[rows_t, rows_t]`` (the diagonal is not read from ``K``).
    rows, signs, upper, a, grad, tol, max_iter, shrinking, stop
        As for :func:`smo_solve`.

    Returns
    -------
    n_iter : int

    Notes
    -----
    After a warm start, shrinking sets most bound variables aside and the
    solver reads the rows of the support and of the pairs it moves, often
    a small part of ``K``; the whole-matrix path would combine all ``n``
    rows first. Given the same rows, the iterates are those of
    :func:`smo_solve`.
    """
    src = (filled, bank, w, kernels, gidx, ri, rf)
    N = signs.shape[0]
    F = np.empty(N)
    for t in range(N):
        F[t] = -signs[t] * grad[t]
    n_iter = _smo_core_src(K, dvar, rows, signs, upper, a, F, tol, max_iter, shrinking, src,
                           stop)
    for t in range(N):
        grad[t] = -signs[t] * F[t]
    return n_iter


@njit(**JIT)
def smo_violation(signs, upper, a, grad):
    """Maximal KKT violation ``m(a) - M(a)`` (0 or less at optimum).

    ``m = max_{I_up} -s_t G_t`` and ``M = min_{I_low} -s_t G_t``; returns
    ``-inf`` when either set is empty.
    """
    N = signs.shape[0]
    gmax = -np.inf
    gmin = np.inf
    for t in range(N):
        ft = -signs[t] * grad[t]
        up, low = _in_sets(signs[t], a[t], upper[t])
        if up and ft > gmax:
            gmax = ft
        if low and ft < gmin:
            gmin = ft
    if gmax == -np.inf or gmin == np.inf:
        return -np.inf
    return gmax - gmin


@njit(**JIT)
def smo_rho(signs, upper, a, grad):
    """libsvm's offset ``rho``; the decision function is ``sum_i v_i K(x_i, x) - rho``.

    ``rho`` is the mean of ``s_t G_t`` over the free variables
    (``0 < a_t < U_t``); without free variables it is the midpoint of the
    interval that the bounded variables allow (libsvm's ``calculate_rho``,
    the same rule for all three problems).
    """
    N = signs.shape[0]
    ub = np.inf
    lb = -np.inf
    total = 0.0
    n_free = 0
    for t in range(N):
        yg = signs[t] * grad[t]
        at = a[t]
        if at >= upper[t]:
            if signs[t] < 0.0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        elif at <= 0.0:
            if signs[t] > 0.0:
                ub = min(ub, yg)
            else:
                lb = max(lb, yg)
        else:
            n_free += 1
            total += yg
    if n_free > 0:
        return total / n_free
    if ub == np.inf:
        return lb
    if lb == -np.inf:
        return ub
    return 0.5 * (ub + lb)


@njit(**JIT)
def accumulate_rows(data, slots, coef, out):
    """``out += sum_j coef[j] data[slots[j]]`` (rows of a row cache).

    ``data`` (c, n) float64; ``slots`` (r,) int64 rows of ``data``; ``coef``
    (r,) float64; ``out`` (n,) float64, accumulated in slot order. Rows with
    a zero coefficient are not read.
    """
    n = out.shape[0]
    for j in range(slots.shape[0]):
        c = coef[j]
        if c != 0.0:
            r = data[slots[j]]
            for u in range(n):
                out[u] += c * r[u]
    return out


@njit(**JIT)
def gather_block(data, slots, cols, out):
    """``out[i, j] = data[slots[i], cols[j]]``: the working set's kernel block.

    ``data`` (c, n) float64; ``slots`` (r,) and ``cols`` (r,) int64; ``out``
    (r, r) float64, written.
    """
    r = slots.shape[0]
    for i in range(r):
        row = data[slots[i]]
        o = out[i]
        for j in range(cols.shape[0]):
            o[j] = row[cols[j]]
    return out
