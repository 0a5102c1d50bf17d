"""Closed-form projections onto simplexes and products of simplexes."""

import numpy as np
from numba import njit

from ._options import JIT


@njit(**JIT)
def project_simplex(x, radius, out):
    """Euclidean projection of ``x`` onto ``{w >= 0, sum(w) = radius}``.

    Sort-based algorithm (Held, Wolfe and Crowder 1974): find the threshold
    ``tau`` with ``sum(max(x - tau, 0)) = radius``. ``x`` and ``out`` are
    C-contiguous float64 of the same length; ``out`` is written and may alias
    ``x``.
    """
    n = x.shape[0]
    u = np.sort(x)[::-1]
    css = 0.0
    tau = 0.0
    for i in range(n):
        css += u[i]
        t = (css - radius) / (i + 1)
        if u[i] - t > 0.0:
            tau = t
    for i in range(n):
        v = x[i] - tau
        out[i] = v if v > 0.0 else 0.0
    return out


@njit(**JIT)
def project_simplex_product(x, offsets, out):
    """Project each block ``x[offsets[j]:offsets[j+1]]`` onto the unit simplex.

    ``offsets`` is int64 of length ``n_blocks + 1``, starting at 0 and ending
    at ``len(x)``; ``out`` is written.
    """
    for j in range(offsets.shape[0] - 1):
        a = offsets[j]
        b = offsets[j + 1]
        project_simplex(x[a:b], 1.0, out[a:b])
    return out


@njit(**JIT)
def entropic_step(lam, g, step, offsets, out):
    """Entropic mirror step on a product of simplexes (Nath et al. 2009, eq. 8).

    ``out[jk] = lam[jk] exp(-step g[jk]) / sum_k lam[jk] exp(-step g[jk])``
    within each block, computed with the block maximum subtracted so that
    large steps neither overflow nor underflow to an all-zero block. Entries
    with ``lam = 0`` stay zero. All arrays are float64 of one length except
    ``offsets`` (int64, ``n_blocks + 1``); ``out`` is written.
    """
    for j in range(offsets.shape[0] - 1):
        a = offsets[j]
        b = offsets[j + 1]
        zmax = -np.inf
        for i in range(a, b):
            if lam[i] > 0.0:
                z = np.log(lam[i]) - step * g[i]
                if z > zmax:
                    zmax = z
        total = 0.0
        for i in range(a, b):
            if lam[i] > 0.0:
                e = np.exp(np.log(lam[i]) - step * g[i] - zmax)
                out[i] = e
                total += e
            else:
                out[i] = 0.0
        for i in range(a, b):
            out[i] /= total
    return out
