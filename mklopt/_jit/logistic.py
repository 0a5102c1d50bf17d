"""Dual coordinate Newton method for kernel logistic regression.

The dual of ``min_f C sum_i log(1 + exp(-y_i (f(x_i) + b))) + 1/2 |f|^2``
(Yu, Huang and Lin 2011, "Dual coordinate descent methods for logistic
regression and maximum entropy models", Machine Learning 85, eq. 5 with
their ``alpha`` and ``Q_ij = y_i y_j K_ij``) is

    min_{0 < alpha < C}  D(alpha) = 1/2 alpha'Q alpha
                         + sum_i [alpha_i log alpha_i + (C - alpha_i) log(C - alpha_i)]

with ``y'alpha = 0`` added when there is an offset ``b``. Its gradient
``G_i = y_i f_i + log(alpha_i / (C - alpha_i))`` (``f = K (alpha * y)``)
goes to ``-inf`` and ``+inf`` at the two ends of each coordinate, so the
optimum is interior and every iterate is kept strictly inside ``(0, C)``:
in ``[FLOOR C, CEIL C]``, the closed box the sub-problems are solved on
(a coordinate is only picked if it may move in the direction that lowers
``D``, as SMO picks variables at a bound).

Without an offset the method picks the coordinate with the largest
``|G_i|`` and minimises ``D`` along it exactly (Yu et al.'s sub-problem,
their eq. 17) by Newton's method safeguarded by a bracket. With an offset
(the multiplier of ``y'alpha = 0``; at the optimum every ``F_i = -y_i G_i``
equals ``b``) it picks a pair as libsvm's second-order working-set
selection does (Fan, Chen and Lin 2005), one end the maximal violator of
``F`` and the other the largest Newton decrease, with the entropy's
curvature in the denominator, and minimises exactly along the direction
that keeps ``y'alpha`` fixed (a two-variable sub-problem, as in Yu et
al.'s section 4 for maximum entropy). The maximal violating pair is solved
too, and taken instead when its exact decrease is clearly larger: each
choice alone stalls in some case (a pair with one variable next to its end
of the box barely moves; a variable pinned at its end looks worthless to
the quadratic model that rates the second-order pair), see the comments in
:func:`logistic_solve`. Each step updates ``f`` with one or two columns of
``K``: ``O(n)``.

*Stopping rule.* Every ``check_every`` steps the primal-dual gap of the
current point is computed exactly (:func:`logistic_gap`): with
``m_i = y_i (f_i + b)`` and ``a_i = alpha_i / C``,

    gap = sum_i C log(1 + e^{-m_i}) - C H(a_i) + alpha_i m_i >= 0,

each term a Fenchel-Young gap of the logistic loss (``H`` the binary
entropy), and ``b`` the best offset for ``f`` (:func:`logistic_intercept`).
It bounds ``J - D_value`` (the distance of the dual value to the optimum)
from above, so the solver stops once ``gap <= tol * P`` with ``P`` the
primal value: the dual value is then within a relative ``tol`` of the
optimum, certified, whatever ``C`` or the scale of the kernel.
"""

import numpy as np
from numba import njit

from ._options import JIT
from ._stop import stopped


@njit(**JIT)
def _softplus(t):
    """``log(1 + e^t)`` without overflow or loss of small values."""
    if t > 0.0:
        return t + np.log1p(np.exp(-t))
    return np.log1p(np.exp(t))


@njit(**JIT)
def _sigmoid(t):
    """``1 / (1 + e^{-t})`` without overflow."""
    if t >= 0.0:
        return 1.0 / (1.0 + np.exp(-t))
    e = np.exp(t)
    return e / (1.0 + e)


@njit(**JIT)
def logistic_gap(y, f, alpha, C, b):
    """Primal-dual gap and primal value of the point ``(alpha, f, b)``.

    ``f = K (alpha * y)`` (without the offset), ``alpha`` strictly inside
    ``(0, C)``. Returns ``(gap, primal)`` with ``primal = C sum_i
    log(1 + e^{-m_i}) + 1/2 (alpha * y)'f`` and ``gap`` the sum of the
    non-negative Fenchel-Young terms of the module notes (the offset's
    contribution ``b y'alpha`` is dropped: it is zero on the feasible set).
    """
    n = y.shape[0]
    gap = 0.0
    loss = 0.0
    quad = 0.0
    for i in range(n):
        m = y[i] * (f[i] + b)
        sp = _softplus(-m)
        a = alpha[i] / C
        ent = -a * np.log(a) - (1.0 - a) * np.log1p(-a)
        loss += sp
        # the term of point i: C softplus(-m) - C H(a) + alpha m, >= 0
        gap += C * (sp - ent) + alpha[i] * y[i] * f[i]
        quad += alpha[i] * y[i] * f[i]
    return max(gap, 0.0), C * loss + 0.5 * quad


@njit(**JIT)
def _intercept_slope(y, f, b):
    """Derivative and second derivative in ``b`` of ``sum_i log(1 + exp(-y_i (f_i + b)))``."""
    g = 0.0
    h = 0.0
    for i in range(y.shape[0]):
        s = _sigmoid(-y[i] * (f[i] + b))
        g -= y[i] * s
        h += s * (1.0 - s)
    return g, h


@njit(**JIT)
def logistic_intercept(y, f, b0, max_iter):
    """The offset ``b`` minimising ``sum_i log(1 + exp(-y_i (f_i + b)))``, from ``b0``.

    The derivative ``g(b) = -sum_i y_i sigma(-y_i (f_i + b))`` increases
    from ``-n_+`` to ``n_-``, so with both labels present it has one root,
    inside ``[-max f - R, -min f + R]`` for ``R = log(n) + 40`` (there every
    term is saturated). Newton's method from ``b0`` with that bracket,
    updated at every point, and bisection when a Newton step leaves it (the
    loss is nearly linear far from the root, where Newton overshoots).
    Returns ``b``.
    """
    n = y.shape[0]
    fmin = f[0]
    fmax = f[0]
    for i in range(n):
        fmin = min(fmin, f[i])
        fmax = max(fmax, f[i])
    R = np.log(n) + 40.0
    lo = -fmax - R
    hi = -fmin + R
    b = min(max(b0, lo), hi)
    for _ in range(max_iter):
        g, h = _intercept_slope(y, f, b)
        if g == 0.0:
            break
        if g > 0.0:
            hi = b
        else:
            lo = b
        bn = b - g / h if h > 0.0 else 0.5 * (lo + hi)
        if not lo < bn < hi:
            bn = 0.5 * (lo + hi)
            if not lo < bn < hi:
                break
        if abs(bn - b) <= 1e-15 * (1.0 + abs(b)):
            b = bn
            break
        b = bn
    return b


#: The box every iterate is kept in, relative to C: [FLOOR C, CEIL C]. Below
#: FLOOR C a point's share of the gap is under 1e-277 C; above CEIL C the
#: distance to C is below what float64 resolves near C (about 2e-16 C), i.e.
#: a log-odds margin of about -34.7, a limit documented by the oracle.
FLOOR = 1e-280
CEIL = 1.0 - 2.0**-50


@njit(**JIT)
def _dphi(x, A, g, C, xp0, xo0, s, other, lb, ub):
    """``(phi'(x), phi''(x))`` of :func:`newton_1d`'s sub-problem."""
    d = x - xp0
    gv = A * d + g + np.log(x) - np.log(C - x)
    hv = A + C / (x * (C - x))
    if other:
        # at an end of the bracket set by the other variable, xo0 + s d
        # cancels: it is held in the box it is exactly at
        xo = min(max(xo0 + s * d, lb), ub)
        gv += s * (np.log(xo) - np.log(C - xo))
        hv += C / (xo * (C - xo))
    return gv, hv


@njit(**JIT)
def _split(lo, hi, C):
    """A point strictly between ``lo < hi``: the midpoint, or the geometric
    midpoint of the distances to 0 (or to C) when the bracket spans decades
    there, so that a root near an end is found in O(log decades) steps."""
    if lo > 0.0 and hi > 16.0 * lo and hi <= 0.5 * C:
        return np.sqrt(lo) * np.sqrt(hi)
    if lo >= 0.5 * C and C - lo > 16.0 * (C - hi) and C - hi > 0.0:
        return C - np.sqrt(C - lo) * np.sqrt(C - hi)
    return 0.5 * (lo + hi)


@njit(**JIT)
def newton_1d(A, g, C, xp0, xo0, s, other, lb, ub):
    """Exact minimiser over ``x`` of the one- or two-variable sub-problem.

    With ``d = x - xp0`` and ``xo = xo0 + s d`` (``s = +-1``, only when
    ``other``), minimises

        phi(x) = A d^2 / 2 + g d + e(x) [+ e(xo)],
        e(x) = x log x + (C - x) log(C - x),

    over ``lb <= x <= ub`` (and ``lb <= xo <= ub``), ``0 < lb < ub < C``,
    ``A >= 0``, from the feasible ``xp0``. ``phi'`` is increasing, so the
    minimiser is an end of the interval when ``phi'`` has no root inside,
    and otherwise the root: Newton's method with a bracket updated at every
    point, a Newton point outside the bracket replaced by the bracket's
    (geometric, near an end) midpoint (:func:`_split`). Returns ``x``.
    """
    lo = lb
    hi = ub
    if other:
        if s > 0.0:
            lo = max(lo, xp0 - (xo0 - lb))
            hi = min(hi, xp0 + (ub - xo0))
        else:
            lo = max(lo, xp0 - (ub - xo0))
            hi = min(hi, xp0 + (xo0 - lb))
    if not lo < hi:
        return xp0
    gl, _ = _dphi(lo, A, g, C, xp0, xo0, s, other, lb, ub)
    if gl >= 0.0:
        return lo
    gh, _ = _dphi(hi, A, g, C, xp0, xo0, s, other, lb, ub)
    if gh <= 0.0:
        return hi
    x = min(max(xp0, lo), hi)
    for _ in range(200):
        gv, hv = _dphi(x, A, g, C, xp0, xo0, s, other, lb, ub)
        if gv == 0.0:
            break
        if gv > 0.0:
            hi = x
        else:
            lo = x
        xn = x - gv / hv
        if not lo < xn < hi:
            xn = _split(lo, hi, C)
            if not lo < xn < hi:
                break  # the bracket is at the resolution of float64
        # converged when the step is below the resolution of both variables
        # (a tiny partner sets the scale: its curvature makes the steps small)
        scale = min(xn, C - xn)
        if other:
            xo = min(max(xo0 + s * (xn - xp0), lb), ub)
            scale = min(scale, xo, C - xo)
        if abs(xn - x) <= 1e-15 * scale:
            x = xn
            break
        x = xn
    return x


@njit(**JIT)
def _ent(z, C):
    """``z log z + (C - z) log(C - z)``."""
    return z * np.log(z) + (C - z) * np.log(C - z)


@njit(**JIT)
def _pair_solve(K, y, f, alpha, C, i_up, i_low, lb, ub):
    """Exact step on the pair ``(i_up, i_low)``: ``(p, o, x, xo, decrease)``.

    ``alpha_up`` moves by ``+y_up t`` and ``alpha_low`` by ``-y_low t``
    (``y'alpha`` fixed). The pivot ``p`` (the variable solved for) is the
    one heading for 0 with the smaller value, so that a root near 0 is
    resolved without cancellation; ``decrease`` is the exact drop of the
    dual objective.
    """
    p, o = i_up, i_low
    down_p = y[i_up] < 0.0
    down_o = y[i_low] > 0.0
    if down_o and (not down_p or alpha[i_low] < alpha[i_up]):
        p, o = i_low, i_up
    s = -y[p] * y[o]
    A = K[p, p] + K[o, o] - 2.0 * K[p, o]
    if A < 0.0:
        A = 0.0
    g = y[p] * (f[p] - f[o])
    x = newton_1d(A, g, C, alpha[p], alpha[o], s, True, lb, ub)
    d = x - alpha[p]
    xo = min(max(alpha[o] + s * d, lb), ub)
    dec = -(0.5 * A * d * d + g * d + _ent(x, C) - _ent(alpha[p], C)
            + _ent(xo, C) - _ent(alpha[o], C))
    return p, o, x, xo, dec


@njit(**JIT)
def logistic_init_f(K, y, alpha, f):
    """``f = K (alpha * y)`` into ``f``."""
    n = y.shape[0]
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += K[i, j] * y[j] * alpha[j]
        f[i] = s
    return f


@njit(**JIT)
def logistic_solve(K, y, C, alpha, f, with_offset, tol, max_iter, check_every, stop):
    """Minimise the dual of the module notes from the interior point ``alpha``.

    Parameters
    ----------
    K : float64 (n, n), C-contiguous
        The combined kernel (symmetric PSD).
    y : float64 (n,)
        Labels in {-1, +1} (both present when ``with_offset``).
    C : float
        > 0.
    alpha : float64 (n,)
        Start, inside ``[FLOOR C, CEIL C]`` (and ``y'alpha = 0`` with an
        offset); overwritten by the solution.
    f : float64 (n,)
        ``K (alpha * y)`` at the start; kept equal to it.
    with_offset : bool
        Impose ``y'alpha = 0`` (two-variable steps) and fit ``b``.
    tol : float
        Stop when ``gap <= tol * primal`` (module notes).
    max_iter : int
        Budget of coordinate (or pair) steps.
    check_every : int
        Steps between two gap computations.
    stop : (1,) int64
        Stop flag (:mod:`mklopt._interrupt`), read between two gap
        computations; when non-zero the loop ends there, with ``alpha``
        feasible and ``f`` (and the returned gap) exact for it.

    Returns
    -------
    n_iter : int
    gap, primal, b : float
        At the returned point.
    """
    n = y.shape[0]
    lb = FLOOR * C
    ub = CEIL * C
    L = np.empty(n)  # log-odds log(alpha / (C - alpha)), kept with alpha
    Fv = np.empty(n)  # pair selection: F = -y G, curvature, movable sets
    H = np.empty(n)
    up = np.zeros(n, dtype=np.bool_)
    low = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        L[i] = np.log(alpha[i]) - np.log(C - alpha[i])
    b = 0.0
    if with_offset:
        bs = 0.0
        for i in range(n):
            bs -= y[i] * (y[i] * f[i] + L[i])
        b = logistic_intercept(y, f, bs / n, 200)
    gap, primal = logistic_gap(y, f, alpha, C, b)
    it = 0
    while gap > tol * primal and it < max_iter and not stopped(stop):
        moved = False
        for _ in range(check_every):
            if it >= max_iter:
                break
            it += 1
            if not with_offset:
                # the largest |G_i| among coordinates free to move against it
                p = -1
                best = 0.0
                for i in range(n):
                    gi = y[i] * f[i] + L[i]
                    if (gi > best and alpha[i] > lb) or (-gi > best and alpha[i] < ub):
                        best = abs(gi)
                        p = i
                if p < 0:
                    break
                x = newton_1d(K[p, p], y[p] * f[p], C, alpha[p], 0.0, 0.0, False, lb, ub)
                dv = y[p] * (x - alpha[p])
                if dv == 0.0:
                    break
                moved = True
                alpha[p] = x
                L[p] = np.log(x) - np.log(C - x)
                for k in range(n):
                    f[k] += K[k, p] * dv
            else:
                # The pair, as libsvm's second-order working-set selection
                # (Fan, Chen and Lin 2005, WSS 2) with the entropy's
                # curvature h_t = C / (alpha_t (C - alpha_t)) added to the
                # kernel's: the maximal violator of F = -y G on one side, and
                # on the other the variable with the largest Newton decrease
                # (F_up - F_t)^2 / (K_uu + K_tt - 2 K_ut + h_u + h_t); both
                # orientations are tried and the larger decrease kept. Each
                # choice alone can stall: the maximal violating pair when one
                # of its two is next to its end and cannot move (it is
                # limited by the other's room), the second-order pair when a
                # variable at its end (h ~ 1 / alpha, huge) violates strongly:
                # the quadratic model rates its move as worthless while the
                # exact step moves it by decades. So both pairs are solved
                # exactly (O(1) each) and their exact decreases compared.
                i_up = -1
                i_low = -1
                f_up = -np.inf
                f_low = np.inf
                for t in range(n):
                    Ft = -y[t] * (y[t] * f[t] + L[t])
                    Fv[t] = Ft
                    H[t] = C / (alpha[t] * (C - alpha[t]))
                    can_rise = alpha[t] < ub
                    can_fall = alpha[t] > lb
                    up[t] = can_rise if y[t] > 0.0 else can_fall
                    low[t] = can_fall if y[t] > 0.0 else can_rise
                    if up[t] and Ft > f_up:
                        f_up = Ft
                        i_up = t
                    if low[t] and Ft < f_low:
                        f_low = Ft
                        i_low = t
                if i_up < 0 or i_low < 0 or f_up <= f_low:
                    break
                best = 0.0
                pair_u = i_up
                pair_l = i_low
                # the second-order pair
                for t in range(n):
                    if low[t] and Fv[t] < f_up:
                        den = K[i_up, i_up] + K[t, t] - 2.0 * K[i_up, t] + H[i_up] + H[t]
                        dec = (f_up - Fv[t]) ** 2 / den
                        if dec > best:
                            best = dec
                            pair_u = i_up
                            pair_l = t
                    if up[t] and Fv[t] > f_low:
                        den = K[i_low, i_low] + K[t, t] - 2.0 * K[i_low, t] + H[i_low] + H[t]
                        dec = (Fv[t] - f_low) ** 2 / den
                        if dec > best:
                            best = dec
                            pair_u = t
                            pair_l = i_low
                # Both candidates solved exactly: the second-order pair unless
                # the maximal violating pair drops the objective clearly more
                # (by more than the rounding of the decreases, ~1e-16 C per
                # entropy term, which near the optimum is all they are).
                p, o, x, xo, dec = _pair_solve(K, y, f, alpha, C, pair_u, pair_l, lb, ub)
                if pair_u != i_up or pair_l != i_low:
                    p2, o2, x2, xo2, dec2 = _pair_solve(K, y, f, alpha, C, i_up, i_low,
                                                        lb, ub)
                    if dec2 > 2.0 * dec and dec2 > 1e-12 * C:
                        p, o, x, xo = p2, o2, x2, xo2
                d = x - alpha[p]
                if d == 0.0:
                    break
                moved = True
                alpha[p] = x
                alpha[o] = xo
                L[p] = np.log(x) - np.log(C - x)
                L[o] = np.log(xo) - np.log(C - xo)
                dv = y[p] * d  # v_p += dv, v_o -= dv
                for k in range(n):
                    f[k] += (K[k, p] - K[k, o]) * dv
        if with_offset:
            b = logistic_intercept(y, f, b, 200)
        gap, primal = logistic_gap(y, f, alpha, C, b)
        if not moved:
            # the chosen step no longer changes alpha: tol is below what
            # float64 resolves here (the caller reports the gap reached)
            break
    return it, gap, primal, b
