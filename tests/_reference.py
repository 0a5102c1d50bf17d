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
    """Block-wise multiplicative-weights update lam * exp(-step g), normalised."""
    out = np.zeros_like(lam)
    for a, b in zip(offsets[:-1], offsets[1:]):
        blk = lam[a:b] * np.exp(-step * (g[a:b] - g[a:b][lam[a:b] > 0].min()))
        out[a:b] = blk / blk.sum()
    return out


# --- kernels and combination (mklopt._jit.kernels, mklopt._jit.combine) ---


def sq_dists(A, B):
    """Squared Euclidean distances by broadcasting: D[i, j] = |A[i] - B[j]|^2."""
    diff = np.asarray(A, float)[:, None, :] - np.asarray(B, float)[None, :, :]
    return np.sum(diff**2, axis=-1)


def gram(A, B):
    """Inner products A B^T."""
    return np.asarray(A, float) @ np.asarray(B, float).T


def rbf_from_sq_dists(D2, sigmas, scales):
    """Stack of exp(-D2 / (2 sigma^2)) * scale, one slice per width."""
    return np.stack([np.exp(-D2 / (2.0 * s**2)) * c for s, c in zip(sigmas, scales)])


def poly_from_gram(G, degrees, offsets, scales):
    """Stack of (G + offset)^degree * scale, one slice per degree."""
    return np.stack([(G + c) ** int(p) * s for p, c, s in zip(degrees, offsets, scales)])


def combine(K, w):
    """sum_k w_k K_k, in float64."""
    return np.tensordot(np.asarray(w, float), np.asarray(K, float), axes=1)


def quad_forms(K, v, support):
    """q_k = v_S' K_k[S, S] v_S."""
    S = np.asarray(support, dtype=np.int64)
    vs = np.asarray(v, float)[S]
    sub = np.asarray(K, float)[:, S][:, :, S]
    return np.einsum("i,kij,j->k", vs, sub, vs)


def combine_block(K, w, rows, cols):
    """sum_k w_k K_k[rows][:, cols] (repeated indices allowed)."""
    return combine(np.asarray(K, float)[:, rows][:, :, cols], w)
