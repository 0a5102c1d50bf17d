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
