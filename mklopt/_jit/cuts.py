"""The cutting-plane model's per-step arithmetic (Level's projection, eq. 8).

The model holds cuts ``f_j(w) = s_j - q_j'w / 2`` (rows of ``Q``). Each
Level step builds the cone program of the projection onto the level set and
reads the model at a few points. At tens of kernels and cuts these arrays
are tiny, and building them with NumPy costs a dozen array operations of
about a microsecond each; the loops below do the same arithmetic in one
call. :func:`level_socp` computes every entry with the same operations, in
the same order, as the NumPy expressions it replaced, so ECOS gets the same
bits; the others sum in index order, so they agree with NumPy's sums (which
may be pairwise or blocked) to rounding.
"""

import numpy as np
from numba import njit

from ._options import JIT
from .projections import project_simplex

#: An interior-point solver's weight at or below this share of the largest
#: weight is its rendering of an exact zero (the rule of every clearing).
INTERIOR_ZERO = 1e-9


@njit(**JIT)
def level_socp(Q, s, W, w0, level):
    """ECOS's data for ``min t s.t. ||w - w0|| <= t, w >= 0, f_j(w) <= level, 1'w = 1``.

    Over the kernels ``W`` (int64, no repeats; the others fixed at 0), with
    variables ``x = (w_W, t)`` and ``mw = len(W)``, ``J = len(s)``. The cone
    ``h - Gx`` has ``mw`` rows ``w >= 0``, ``J`` cut rows, each divided by
    its scale ``scale_j = max_k |Q[j, W_k]| / 2`` (1 where that is 0), then
    the second-order cone ``(t, w - w0)`` in its ``mw + 1`` rows.

    Returns ``(data, indices, indptr, h, scale)``: ``G`` in compressed
    sparse column form (``mw + 1`` columns; column ``k < mw`` holds -1 at
    row ``k``, ``-Q[j, W_k] * (0.5 / scale_j)`` at rows ``mw + j`` and -1 at
    row ``mw + J + 1 + k``; column ``mw`` holds -1 at row ``mw + J``), the
    right-hand side ``h`` and the scales.
    """
    J = s.shape[0]
    m = W.shape[0]
    scale = np.empty(J)
    neg_inv = np.empty(J)  # -0.5 / scale_j, as NumPy's (-0.5 / scale) computes it
    for j in range(J):
        top = 0.0
        for k in range(m):
            v = abs(Q[j, W[k]])
            if v > top:
                top = v
        sc = 0.5 * top
        if sc <= 0.0:
            sc = 1.0
        scale[j] = sc
        neg_inv[j] = -0.5 / sc
    nnz_col = J + 2
    nnz = m * nnz_col + 1
    indptr = np.empty(m + 2, dtype=np.int64)
    for k in range(m + 1):
        indptr[k] = k * nnz_col
    indptr[m + 1] = nnz
    indices = np.empty(nnz, dtype=np.int64)
    data = np.empty(nnz)
    for k in range(m):
        base = k * nnz_col
        col = W[k]
        indices[base] = k
        data[base] = -1.0
        for j in range(J):
            indices[base + 1 + j] = m + j
            data[base + 1 + j] = Q[j, col] * neg_inv[j]
        indices[base + J + 1] = k + m + J + 1
        data[base + J + 1] = -1.0
    indices[nnz - 1] = m + J
    data[nnz - 1] = -1.0
    h = np.zeros(2 * m + J + 1)
    for j in range(J):
        h[m + j] = (level - s[j]) / scale[j]
    for k in range(m):
        h[m + J + 1 + k] = -w0[W[k]]
    return data, indices, indptr, h, scale


@njit(**JIT)
def model_value(Q, s, w):
    """``max_j s_j - q_j'w / 2``, the model at ``w`` (``-inf`` without cuts).

    Each cut's inner product is summed in index order; NumPy's ``Q @ w``
    may sum in another order, so the two agree to rounding, not bits.
    """
    best = -np.inf
    for j in range(s.shape[0]):
        acc = 0.0
        for k in range(w.shape[0]):
            acc += Q[j, k] * w[k]
        v = s[j] - 0.5 * acc
        if v > best:
            best = v
    return best


@njit(**JIT)
def kkt_grow(Q, mu, w0, in_w):
    """Mark the kernels the projection's KKT point puts weight on outside ``in_w``.

    With cut multipliers ``mu >= 0`` the projection of ``w0`` onto the
    level set is ``P_simplex(w0 + Q'mu / 2)`` (``Q`` of shape ``(J, m)``).
    Sets ``in_w[k]`` for every kernel with weight above ``1e-12`` there that
    was not in ``in_w``, and returns how many it set.
    """
    m = w0.shape[0]
    v = w0.copy()
    for j in range(mu.shape[0]):
        mj = 0.5 * mu[j]
        if mj != 0.0:
            for k in range(m):
                v[k] += Q[j, k] * mj
    project_simplex(v, 1.0, v)
    added = 0
    for k in range(m):
        if v[k] > 1e-12 and not in_w[k]:
            in_w[k] = True
            added += 1
    return added


@njit(**JIT)
def scatter_normalised(x, W, m):
    """The weights ``x`` of the kernels ``W`` as a vector of length ``m`` summing to 1.

    Weights at or below ``INTERIOR_ZERO`` (1e-9) of the largest are an
    interior-point solver's rendering of zeros and are set to 0 first; the others are
    divided by their sum. Returns a zero vector when no weight is positive.
    """
    top = 1e-300
    for k in range(x.shape[0]):
        if x[k] > top:
            top = x[k]
    thr = INTERIOR_ZERO * top
    w = np.zeros(m)
    total = 0.0
    for k in range(x.shape[0]):
        if x[k] > thr:
            w[W[k]] = x[k]
            total += x[k]
    if total > 0.0:
        for k in range(m):
            w[k] /= total
    return w


@njit(**JIT)
def check_cut_lp(x, row_dual, open_, Q, s, q_max, s_max, value, rel_tol):
    """Check HiGHS's answer to the cutting-plane LP; return ``(ok, w, t, lam)``.

    The LP is ``min t s.t. s_j - q_j'w / 2 <= t, w >= 0, 1'w = 1`` over the
    kernels with ``open_[k]`` (the others at their bound 0). ``x = (w, t)``
    is HiGHS's primal answer and ``row_dual`` its duals of the cut rows
    (``<= 0`` for these rows). ``w`` is ``x[:m]`` with the closed kernels
    set to exactly 0 and ``lam = max(-row_dual, 0)``. ``ok`` holds when
    every number is finite, ``1'w = 1``, ``w >= 0``, every cut is at most
    ``t`` and ``-row_dual >= 0``, each to ``rel_tol`` of the problem's scale
    (``q_max = max |Q[:, open]|``, ``s_max = max |s|``), and ``t`` equals
    ``value`` to ``rel_tol`` relative.
    """
    m = open_.shape[0]
    w = np.empty(m)
    w_sum = 0.0
    w_abs = 0.0
    w_min = np.inf
    for k in range(m):
        v = x[k] if open_[k] else 0.0
        w[k] = v
        w_sum += v
        w_abs += abs(v)
        if v < w_min:
            w_min = v
    t = x[m]
    J = row_dual.shape[0]
    lam = np.empty(J)
    lam_sum = 0.0
    lam_min = np.inf
    for j in range(J):
        v = -row_dual[j]
        lam_sum += v
        if v < lam_min:
            lam_min = v
        lam[j] = v if v > 0.0 else 0.0
    if not np.isfinite(w_sum + lam_sum + t + value):  # a NaN or inf anywhere
        return False, w, t, lam
    tol = rel_tol * (1.0 + max(0.5 * q_max, 1.0) * (w_abs + abs(t)) + s_max)
    cut_max = model_value(Q, s, w)  # the largest cut at w (-inf without cuts)
    ok = (w_min >= -tol and abs(w_sum - 1.0) <= tol and cut_max <= t + tol
          and (J == 0 or lam_min >= -tol)
          and abs(t - value) <= rel_tol * (1.0 + abs(value)))
    return ok, w, t, lam


@njit(**JIT)
def price_kernels(Q, s, lam, in_w):
    """Price the kernels outside the LP's working set at its cut multipliers.

    With ``lam >= 0`` normalised to ``lam_n = lam / sum(lam)`` and
    ``u = Q'lam_n``, the LP dual value is ``d = lam_n's - max_k u_k / 2``
    (a lower bound on the model's minimum), and a kernel ``k`` outside the
    working set ``in_w`` can lower the restricted optimum only if ``u_k``
    exceeds ``thr = max_{k in W} u_k`` (by more than ``1e-10`` relative).

    Returns ``(total, d, u, viol)``: ``sum(lam)``, ``d``, ``u`` and the
    kernels that pass that test (int64, ascending). When ``total`` is not
    positive, ``d`` is nan and nothing is priced.
    """
    J, m = Q.shape
    total = 0.0
    for j in range(J):
        total += lam[j]
    u = np.zeros(m)
    if not total > 0.0:
        return total, np.nan, u, np.empty(0, dtype=np.int64)
    d = 0.0
    for j in range(J):
        lj = lam[j] / total
        d += lj * s[j]
        if lj != 0.0:
            for k in range(m):
                u[k] += Q[j, k] * lj
    thr = -np.inf
    top = -np.inf
    for k in range(m):
        if in_w[k] and u[k] > thr:
            thr = u[k]
        if u[k] > top:
            top = u[k]
    d -= 0.5 * top
    cut = thr + 1e-10 * max(1.0, abs(thr))
    n = 0
    for k in range(m):
        if u[k] > cut and not in_w[k]:
            n += 1
    viol = np.empty(n, dtype=np.int64)
    n = 0
    for k in range(m):
        if u[k] > cut and not in_w[k]:
            viol[n] = k
            n += 1
    return total, d, u, viol


@njit(**JIT)
def renormalise(x, near):
    """``(True, x / sum(x))`` when ``x >= 0`` and ``|sum(x) - 1| <= near``; else ``(False, x)``.

    A solver's point on the simplex up to its tolerance is put on it by
    rescaling, which keeps exact zeros at zero (a projection would not).
    A NaN or an infinity anywhere makes the sum fail the test.
    """
    total = 0.0
    low = np.inf
    for k in range(x.shape[0]):
        total += x[k]
        if x[k] < low:
            low = x[k]
    if low >= 0.0 and abs(total - 1.0) <= near and total > 0.0:
        return True, x / total
    return False, x
