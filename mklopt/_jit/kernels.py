"""Kernel evaluation: squared distances, Gram matrices, RBF and polynomial values.

Distances and inner products are computed with explicit loops in a fixed
summation order, so that the symmetric (train x train) routines and the
general (new x train) routines give bit-identical values on the same points:
``KernelBank.cross`` on the training points reproduces the stored matrices
exactly. Squared distances are summed as ``sum_f (a_f - b_f)^2`` rather than
expanded as ``|a|^2 + |b|^2 - 2 a.b``: every term is non-negative, so there
is no cancellation and no negative distance to clip, and the diagonal of the
symmetric case is exactly zero.

The kernel writers take a 3-D ``out`` block (one slice per kernel) that may be
float64 or float32 (a float32 bank); all arithmetic is done in float64 and
rounded once on store.
"""

import math

from numba import njit

from ._options import JIT


@njit(**JIT)
def sq_dists(A, B, out):
    """Squared Euclidean distances between the rows of ``A`` and ``B``.

    ``A`` is (na, d), ``B`` is (nb, d), both C-contiguous float64; ``out``
    is (na, nb) float64 and is written: ``out[i, j] = |A[i] - B[j]|^2``.
    """
    na = A.shape[0]
    nb = B.shape[0]
    d = A.shape[1]
    for i in range(na):
        a = A[i]
        o = out[i]
        for j in range(nb):
            b = B[j]
            s = 0.0
            for f in range(d):
                t = a[f] - b[f]
                s += t * t
            o[j] = s
    return out


@njit(**JIT)
def sq_dists_sym(A, out):
    """Squared Euclidean distances between all pairs of rows of ``A``.

    ``A`` is (n, d) C-contiguous float64; ``out`` is (n, n) float64 and is
    written. Only the upper triangle is computed and then mirrored, so the
    result is exactly symmetric with an exactly zero diagonal.
    """
    n = A.shape[0]
    d = A.shape[1]
    for i in range(n):
        a = A[i]
        out[i, i] = 0.0
        for j in range(i + 1, n):
            b = A[j]
            s = 0.0
            for f in range(d):
                t = a[f] - b[f]
                s += t * t
            out[i, j] = s
    for i in range(n):
        for j in range(i):
            out[i, j] = out[j, i]
    return out


@njit(**JIT)
def gram(A, B, out):
    """Inner products between the rows of ``A`` and ``B``: ``out = A B^T``.

    ``A`` is (na, d), ``B`` is (nb, d), C-contiguous float64; ``out`` is
    (na, nb) float64 and is written.
    """
    na = A.shape[0]
    nb = B.shape[0]
    d = A.shape[1]
    for i in range(na):
        a = A[i]
        o = out[i]
        for j in range(nb):
            b = B[j]
            s = 0.0
            for f in range(d):
                s += a[f] * b[f]
            o[j] = s
    return out


@njit(**JIT)
def gram_sym(A, out):
    """Inner products between all pairs of rows of ``A``: ``out = A A^T``.

    ``A`` is (n, d) C-contiguous float64; ``out`` is (n, n) float64 and is
    written; computed on the upper triangle and mirrored (exactly symmetric).
    """
    n = A.shape[0]
    d = A.shape[1]
    for i in range(n):
        a = A[i]
        for j in range(i, n):
            b = A[j]
            s = 0.0
            for f in range(d):
                s += a[f] * b[f]
            out[i, j] = s
    for i in range(n):
        for j in range(i):
            out[i, j] = out[j, i]
    return out


@njit(**JIT)
def rbf_from_sq_dists(D2, sigmas, scales, out):
    """Gaussian kernels for several widths sharing one distance matrix.

    ``out[k, i, j] = exp(-D2[i, j] / (2 sigmas[k]^2)) * scales[k]``.

    ``D2`` is (na, nb) float64, ``sigmas`` and ``scales`` are (s,) float64
    (``scales`` holds the reciprocal normalisation constants), ``out`` is a
    C-contiguous (s, na, nb) float64 or float32 block and is written.
    """
    na = D2.shape[0]
    nb = D2.shape[1]
    for k in range(sigmas.shape[0]):
        c = -0.5 / (sigmas[k] * sigmas[k])
        sc = scales[k]
        ok = out[k]
        for i in range(na):
            d = D2[i]
            o = ok[i]
            for j in range(nb):
                o[j] = math.exp(d[j] * c) * sc
    return out


@njit(**JIT)
def _ipow(x, p):
    """``x ** p`` for a non-negative integer ``p`` by repeated squaring."""
    r = 1.0
    while p > 0:
        if p & 1:
            r *= x
        x *= x
        p >>= 1
    return r


@njit(**JIT)
def poly_from_gram(G, degrees, offsets, scales, out):
    """Polynomial kernels of several degrees sharing one Gram matrix.

    ``out[k, i, j] = (G[i, j] + offsets[k]) ** degrees[k] * scales[k]``.

    ``G`` is (na, nb) float64; ``degrees`` is (s,) int64 (>= 1);
    ``offsets`` and ``scales`` are (s,) float64 (the linear kernel is
    degree 1 with offset 0; ``scales`` holds reciprocal normalisation
    constants); ``out`` is a C-contiguous (s, na, nb) float64 or float32
    block and is written.
    """
    na = G.shape[0]
    nb = G.shape[1]
    for k in range(degrees.shape[0]):
        p = degrees[k]
        c = offsets[k]
        sc = scales[k]
        ok = out[k]
        for i in range(na):
            g = G[i]
            o = ok[i]
            for j in range(nb):
                o[j] = _ipow(g[j] + c, p) * sc
    return out


@njit(**JIT)
def rbf_accumulate(D2, sigmas, weights, out):
    """Add a weighted sum of Gaussian kernels to ``out``.

    ``out[i, j] += sum_k weights[k] exp(-D2[i, j] / (2 sigmas[k]^2))``.

    Used at prediction time, where only the combined kernel is needed and
    the per-kernel blocks are never stored. ``D2`` and ``out`` are (na, nb)
    float64; ``sigmas`` and ``weights`` are (s,) float64. Widths with a zero
    weight are skipped.
    """
    na = D2.shape[0]
    nb = D2.shape[1]
    for k in range(sigmas.shape[0]):
        wk = weights[k]
        if wk == 0.0:
            continue
        c = -0.5 / (sigmas[k] * sigmas[k])
        for i in range(na):
            d = D2[i]
            o = out[i]
            for j in range(nb):
                o[j] += wk * math.exp(d[j] * c)
    return out


@njit(**JIT)
def poly_accumulate(G, degrees, offsets, weights, out):
    """Add a weighted sum of polynomial kernels to ``out``.

    ``out[i, j] += sum_k weights[k] (G[i, j] + offsets[k]) ** degrees[k]``.

    Shapes and dtypes as in :func:`poly_from_gram`; degrees with a zero
    weight are skipped.
    """
    na = G.shape[0]
    nb = G.shape[1]
    for k in range(degrees.shape[0]):
        wk = weights[k]
        if wk == 0.0:
            continue
        p = degrees[k]
        c = offsets[k]
        for i in range(na):
            g = G[i]
            o = out[i]
            for j in range(nb):
                o[j] += wk * _ipow(g[j] + c, p)
    return out
