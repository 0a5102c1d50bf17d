"""Plain NumPy twins of the jitted primitives in ``mklopt._jit``.

Each function is written for clarity, not speed; the tests compare every
jitted kernel against its twin here.
"""

import numpy as np


def project_simplex(x, radius=1.0):
    """Sort-based Euclidean projection onto {w >= 0, sum w = radius}."""
    x = np.asarray(x, dtype=float)
    u = np.sort(x)[::-1]
    css = np.cumsum(u)
    k = np.arange(1, x.size + 1)
    rho = np.nonzero(u - (css - radius) / k > 0)[0][-1]
    tau = (css[rho] - radius) / (rho + 1)
    return np.maximum(x - tau, 0.0)


def entropic_step(lam, g, step, offsets):
    """Block-wise multiplicative-weights update lam * exp(-step g), normalised.

    Entries with ``lam = 0`` stay zero (their exponential is never formed, so
    it cannot overflow to ``0 * inf``).
    """
    out = np.zeros_like(lam)
    for a, b in zip(offsets[:-1], offsets[1:]):
        pos = np.flatnonzero(lam[a:b] > 0) + a
        blk = lam[pos] * np.exp(-step * (g[pos] - g[pos].min()))
        out[pos] = blk / blk.sum()
    return out


# --- kernels from specs (mklopt._jit.groups) and combination (mklopt._jit.combine) ---


def sq_dists(A, B):
    """Squared Euclidean distances by broadcasting: D[i, j] = |A[i] - B[j]|^2."""
    diff = np.asarray(A, float)[:, None, :] - np.asarray(B, float)[None, :, :]
    return np.sum(diff**2, axis=-1)


def spec_matrix(spec, A, B):
    """The raw kernel of one spec (rbf, poly, linear) between the rows of A and B."""
    cols = slice(None) if spec.features is None else list(spec.features)
    a, b = np.asarray(A, float)[:, cols], np.asarray(B, float)[:, cols]
    kind = type(spec).__name__
    if kind == "RBF":
        return np.exp(-sq_dists(a, b) / (2.0 * spec.sigma**2))
    if kind == "Poly":
        return (a @ b.T + 1.0) ** spec.degree
    return a @ b.T


def centred_terms(A, B, m):
    """The twin of ``gram._chunk_terms``: distances and inner products of A's and B's rows.

    Distances are summed directly over the features centred on ``m``
    (``(a - m) - (b - m)``, the scalar formula); inner products on the
    uncentred rows. Returns ``(D, G)``.
    """
    Ac, Bc = np.asarray(A, float) - m, np.asarray(B, float) - m
    return sq_dists(Ac, Bc), np.asarray(A, float) @ np.asarray(B, float).T


def mirror(out, which):
    """out[s] = triu(out[s]) + triu(out[s], 1)' for s in which (a copy)."""
    out = np.array(out, copy=True)
    for s in which:
        out[s] = np.triu(out[s]) + np.triu(out[s], 1).T
    return out


def kernel_matrices(specs, A, B, scales):
    """Stack of raw_k(A, B) / scales[k]."""
    return np.stack([spec_matrix(s, A, B) / c for s, c in zip(specs, scales)])


def combined(specs, A, B, w, scales):
    """sum_k w_k raw_k(A, B) / scales[k]."""
    return np.tensordot(np.asarray(w, float), kernel_matrices(specs, A, B, scales), axes=1)


def raw_traces(specs, X):
    """Trace of each raw kernel on X."""
    return np.array([np.trace(spec_matrix(s, X, X)) for s in specs])


def quad_forms_from_specs(specs, X, scales, v, support):
    """q_k = v_S' K_k[S, S] v_S with K_k = raw_k / scales[k] evaluated on X."""
    S = np.asarray(support, dtype=np.int64)
    vs = np.asarray(v, float)[S]
    return np.array([vs @ (spec_matrix(s, X[S], X[S]) / c) @ vs for s, c in zip(specs, scales)])


def table_rows(codes, table, idx):
    """table[codes[idx]][:, codes]."""
    return np.asarray(table)[np.ix_(np.asarray(codes)[idx], np.asarray(codes))]


def combine(K, w):
    """sum_k w_k K_k, in float64."""
    return np.tensordot(np.asarray(w, float), np.asarray(K, float), axes=1)


def combine_rows(K, w, idx):
    """Rows idx of sum_k w_k K_k."""
    return combine(K, w)[np.asarray(idx)]


def quad_forms(K, v, support, kernels=None):
    """q_k = v_S' K_k[S, S] v_S (for the given kernels, default all)."""
    S = np.asarray(support, dtype=np.int64)
    vs = np.asarray(v, float)[S]
    K = np.asarray(K, float)
    ks = np.arange(K.shape[0]) if kernels is None else np.asarray(kernels)
    sub = K[ks][:, S][:, :, S]
    return np.einsum("i,kij,j->k", vs, sub, vs)


# --- boosting rounds (mklopt._jit.boost) ---


def svm_dual(K, y, C, tol=1e-10, max_iter=100_000):
    """SVM dual by first-order SMO (maximal violating pair), from alpha = 0.

    Returns ``alpha`` and the gradient ``G = Q alpha - 1``.
    """
    K = np.asarray(K, float)
    y = np.asarray(y, float)
    a = np.zeros(y.size)
    G = -np.ones(y.size)
    for _ in range(max_iter):
        F = -y * G
        up = ((y > 0) & (a < C)) | ((y < 0) & (a > 0))
        low = ((y > 0) & (a > 0)) | ((y < 0) & (a < C))
        if not (up.any() and low.any()):
            break
        i = int(np.argmax(np.where(up, F, -np.inf)))
        j = int(np.argmin(np.where(low, F, np.inf)))
        if F[i] - F[j] <= tol:
            break
        c = max(K[i, i] + K[j, j] - 2.0 * K[i, j], 1e-12)
        room_i = C - a[i] if y[i] > 0 else a[i]
        room_j = a[j] if y[j] > 0 else C - a[j]
        t = min((F[i] - F[j]) / c, room_i, room_j)
        a[i] += y[i] * t
        a[j] -= y[j] * t
        G += t * y * (K[:, i] - K[:, j])
    return a, G


def svm_rho(y, C, a, G):
    """libsvm's offset: mean of y G over free variables, else the midpoint of the bounds."""
    yg = y * G
    free = (a > 0) & (a < C)
    if free.any():
        return float(yg[free].mean())
    ub = np.r_[yg[(a >= C) & (y < 0)], yg[(a <= 0) & (y > 0)]]
    lb = np.r_[yg[(a >= C) & (y > 0)], yg[(a <= 0) & (y < 0)]]
    hi = ub.min() if ub.size else np.inf
    lo = lb.max() if lb.size else -np.inf
    if hi == np.inf:
        return float(lo)
    if lo == -np.inf:
        return float(hi)
    return 0.5 * (hi + lo)


def weak_svm_round(B, uniq, sample, ys, C, tol=1e-10):
    """One SVM per kernel on the sample *with its copies*, judged on all points.

    ``B[j]`` holds kernel ``j``'s rows of the distinct points ``uniq``; the
    SVM is trained on ``B[j][pos][:, sample]`` (every draw a variable, as
    libsvm would see the sample). Returns ``coef`` (r, u) (``alpha y`` summed
    over copies), ``bias`` (r,) and ``decision`` (r, n) = ``coef[j] @ B[j] +
    bias[j]``.
    """
    B = np.asarray(B, float)
    r, u, n = B.shape
    pos = np.searchsorted(uniq, sample)
    coef, bias, dec = np.zeros((r, u)), np.zeros(r), np.zeros((r, n))
    for j in range(r):
        a, G = svm_dual(B[j][pos][:, sample], ys, C, tol)
        bias[j] = -svm_rho(ys, C, a, G)
        np.add.at(coef[j], pos, a * ys)
        dec[j] = coef[j] @ B[j] + bias[j]
    return coef, bias, dec


def gather_blocks(K, kernels, rows, cols):
    """K[kernels[j]][rows][:, cols], in float64."""
    K = np.asarray(K)
    return np.stack([K[k][np.ix_(rows, cols)] for k in kernels]).astype(float)


# --- dual logistic regression (mklopt._jit.logistic) ---


def _softplus(t):
    return np.logaddexp(0.0, t)


def logistic_gap(y, f, alpha, C, b):
    """(gap, primal) of the point: the Fenchel-Young sum and the primal value, vectorised."""
    m = y * (f + b)
    a = alpha / C
    ent = -a * np.log(a) - (1 - a) * np.log1p(-a)
    loss = _softplus(-m)
    gap = np.sum(C * (loss - ent) + alpha * y * f)
    return max(float(gap), 0.0), float(C * loss.sum() + 0.5 * np.sum(alpha * y * f))


def logistic_intercept(y, f):
    """argmin_b sum log(1 + exp(-y (f + b))) by scipy's bounded scalar search."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda b: _softplus(-y * (f + b)).sum(), bracket=(-1.0, 1.0),
                          method="brent", options={"xtol": 1e-14})
    return float(res.x)


def newton_1d(A, g, C, xp0, xo0, s, other, lb, ub):
    """The sub-problem's minimiser by bracketing phi' (Brent's root finder)."""
    from scipy.optimize import brentq

    lo, hi = lb, ub
    if other:
        if s > 0:
            lo, hi = max(lo, xp0 - (xo0 - lb)), min(hi, xp0 + (ub - xo0))
        else:
            lo, hi = max(lo, xp0 - (ub - xo0)), min(hi, xp0 + (xo0 - lb))

    def dphi(x):
        d = x - xp0
        out = A * d + g + np.log(x) - np.log(C - x)
        if other:
            xo = min(max(xo0 + s * d, lb), ub)
            out += s * (np.log(xo) - np.log(C - xo))
        return out

    if dphi(lo) >= 0:
        return lo
    if dphi(hi) <= 0:
        return hi
    return brentq(dphi, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)


def logistic_dual(K, y, C, with_offset):
    """(alpha, b) of the dual logistic problem by full Newton on its optimality system.

    ``alpha = C sigmoid(-y (K (alpha y) + b))`` (and ``y'alpha = 0`` with an
    offset), solved with the Jacobian ``[[I + D Q, D y], [y', 0]]``,
    ``D = C sigma (1 - sigma)``, and a step-halving search on the residual.
    """
    from scipy.special import expit

    n = y.size
    Q = (y[:, None] * y[None, :]) * K
    z = np.zeros(n + 1)  # (alpha, b)

    def resid(z):
        a, b = z[:n], z[n]
        r = a - C * expit(-y * (K @ (a * y) + b))
        return np.r_[r, y @ a] if with_offset else r

    for _ in range(200):
        a, b = z[:n], z[n]
        s = expit(-y * (K @ (a * y) + b))
        D = C * s * (1 - s)
        r = resid(z)
        if with_offset:
            J = np.zeros((n + 1, n + 1))
            J[:n, :n] = np.eye(n) + D[:, None] * Q
            J[:n, n] = D * y
            J[n, :n] = y
        else:
            J = np.eye(n) + D[:, None] * Q
        step = np.linalg.solve(J, -r)
        if not with_offset:
            step = np.r_[step, 0.0]
        t, nr = 1.0, np.linalg.norm(r)
        while t > 1e-10 and np.linalg.norm(resid(z + t * step)) >= nr:
            t *= 0.5
        if t <= 1e-10:
            break
        z = z + t * step
        if np.linalg.norm(t * step) <= 1e-15 * (1 + np.linalg.norm(z)):
            break
    return z[:n], float(z[n])
