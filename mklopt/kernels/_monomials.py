"""The exact feature map of the polynomial kernel: monomials of ``(x.z + 1)^degree``.

Shared by the polynomial family (:mod:`mklopt.kernels.families`, its
``feature_map``) and the feature-map storage (:mod:`mklopt.kernels.feature_maps`),
which both import it from here.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations_with_replacement

import numpy as np

__all__ = ["_monomials", "_poly_map_T"]

#: Bytes of one block of monomial rows built at once.
_CHUNK_BYTES = 32 * 2**20


@lru_cache(maxsize=64)
def _monomials(p, degree):
    """Multi-indices of ``(x.z + 1)^degree`` on ``p`` features and their sqrt coefficients.

    Returns ``idx`` of shape ``(C(p + degree, degree), degree)`` with entries
    in ``0..p`` (``p`` stands for the constant 1) and ``coef`` such that
    ``phi_j(x) = coef[j] * prod_t x~[idx[j, t]]`` with ``x~ = (x, 1)``.
    """
    combos = list(combinations_with_replacement(range(p + 1), degree))
    idx = np.array(combos, dtype=np.int64).reshape(len(combos), degree)
    fact = math.factorial(degree)
    coef = np.empty(len(combos))
    for j, c in enumerate(combos):
        den = 1
        for v in set(c):
            den *= math.factorial(c.count(v))
        coef[j] = math.sqrt(fact // den)
    idx.flags.writeable = False
    coef.flags.writeable = False
    return idx, coef



def _poly_map_T(Xf, degree, out):
    """Exact monomial map of ``(x.z + 1)^degree`` on the columns of ``Xf``, into ``out`` (r, n)."""
    n, p = Xf.shape
    idx, coef = _monomials(p, degree)
    Xa = np.empty((n, p + 1))
    Xa[:, :p] = Xf
    Xa[:, p] = 1.0
    XaT = np.ascontiguousarray(Xa.T)
    step = max(1, _CHUNK_BYTES // (8 * max(n, 1) * degree))
    for c0 in range(0, idx.shape[0], step):
        sel = idx[c0 : c0 + step]
        block = XaT[sel[:, 0]].copy()
        for t in range(1, degree):
            block *= XaT[sel[:, t]]
        block *= coef[c0 : c0 + step, None]
        out[c0 : c0 + sel.shape[0]] = block
