"""Kernels of wide feature groups from one matrix product per group (BLAS).

:mod:`mklopt._jit.groups` sums ``(a_f - b_f)^2`` and ``a_f b_f`` over a
group's features in scalar loops: ``O(n^2 |F|)`` scalar work per group. For
a group with enough features (``wide``, see :data:`WIDE_MIN`) this module
forms the group's inner products instead as one matrix product ``A_c B_c'``
through numpy's BLAS, in blocks of rows, and derives from each product

* the squared distance ``|a_c|^2 + |b_c|^2 - 2 a_c.b_c``, clipped at zero,
* the inner product ``a.b = a_c.b_c + a_c.m + b_c.m + m.m``,

where ``x_c = x - m`` are the group's features centred on ``m``, the mean
of the reference points (the training points of a bank). Every width and
degree of the group is then applied to the same product in numba, with the
Gaussian doubling chain of :func:`mklopt._jit.groups._kernel_chunk`.

Accuracy. The product ``a_c.b_c`` is off by at most about ``|F| eps |a_c|
|b_c|``, so a distance ``d`` computed this way is off by up to ``|F| eps
(|a_c|^2 + |b_c|^2)``, and ``exp(-gamma d)`` by that times ``gamma
exp(-gamma d)``. Centring keeps ``|a_c|`` small (distances are translation
invariant; uncentred, points far from the origin would lose every digit of
their distances). Pairs that are close on that scale, ``d < CLOSE (|a_c|^2 +
|b_c|^2)``, where the cancellation still costs digits, have their distance
summed directly from the centred features instead (``O(|F|)`` each; they
are few outside of duplicated points). A duplicated point thus has distance
exactly 0, and every other distance a relative error below ``|F| eps /
CLOSE``: Gaussian values ``exp(-x)`` then differ from the direct scalar sum
by at most ``max_x x e^-x`` times that, ``|F| eps / (e CLOSE)``, about
``1e-14 |F|`` in the worst case (the errors of a product grow like
``sqrt(|F|)`` in practice: measured below 1e-13 relative at ``|F| = 1024``).

Polynomial kernels need the uncentred product. It is recovered from the
centred one by the identity above rather than by a second matrix product:
its error is at most ``|F| eps (|a_c||b_c| + |a_c||m| + |b_c||m| + |m|^2)``,
within a few times the error ``|F| eps |a||b|`` of the direct sum, since
``|a_c| <= |a| + |m|`` (measured: the same 1e-15-1e-14 relative error as a
separate uncentred product, which would double the BLAS work).

The routines here take the product block ``P`` (rows ``r0 ..`` of ``A``,
columns ``c0 ..`` of ``B``), the centred features, their squared norms
``sq`` and projections ``t = x_c.m``, and ``mm = m.m``; the plan arrays are
those of :mod:`mklopt._jit.groups`. Rows are independent: parallel over the
rows of a block, the same answers on any number of threads.
"""

import numpy as np
from numba import njit, prange

from ._options import JIT, JIT_PARALLEL
from .groups import CHUNK, GAUSSIAN, _kernel_chunk

#: A group is evaluated through a matrix product when it has at least this
#: many features. Measured on 2 cores (n = 1000, one Gaussian and one
#: polynomial kernel per group): the direct scalar path is faster up to 2-4
#: features, the product from 8 on (benchmarks/README.md, "Kernels through
#: BLAS").
WIDE_MIN = 8
#: Pairs with ``d < CLOSE (|a_c|^2 + |b_c|^2)`` get their distance summed directly.
CLOSE = 2.0**-6
#: Bytes of one block of the product (rows of ``A`` times all columns of ``B``).
BLOCK_BYTES = 32 * 2**20


# ------------------------------------------------------------------ jitted
@njit(**JIT)
def _chunk_terms(p, ac, Bc, sqa, ta, sqb, tb, mm, b0, L, diag, need_d, need_g, d2, g2):
    """Distances / products of one point to ``L`` columns from a row ``p`` of the product.

    ``p[0:L]`` holds ``a_c.b_c`` for the columns ``b0 .. b0+L-1`` of ``B``;
    ``diag`` is the column where ``b`` is ``a`` itself (distance exactly 0),
    or -1. Close pairs are summed directly from ``ac`` and the rows of ``Bc``.
    """
    if need_d:
        for j in range(L):
            s = sqa + sqb[b0 + j]
            v = s - 2.0 * p[j]
            d2[j] = v if v > 0.0 else 0.0
        # Second pass for the few close pairs (kept out of the loop above, which vectorises).
        for j in range(L):
            if d2[j] < CLOSE * (sqa + sqb[b0 + j]):
                bc = Bc[b0 + j]
                s = 0.0
                for f in range(ac.shape[0]):
                    t = ac[f] - bc[f]
                    s += t * t
                d2[j] = s
        if diag >= 0:
            d2[diag] = 0.0
    if need_g:
        c = ta + mm
        for j in range(L):
            g2[j] = (p[j] + tb[b0 + j]) + c


@njit(**JIT)
def _group_needs(kern_idx, k0, k1, kind, sel):
    """Whether the selected kernels (``sel[k] != 0``) need distances / products."""
    need_d = False
    need_g = False
    for kk in range(k0, k1):
        k = kern_idx[kk]
        if sel[k] != 0.0:
            if kind[k] == GAUSSIAN:
                need_d = True
            else:
                need_g = True
    return need_d, need_g


@njit(**JIT_PARALLEL)
def gram_slices(P, Ac, sqa, ta, Bc, sqb, tb, mm, r0, c0, sym, kern_idx, k0, k1, kind, param,
                offset, inv_scale, slot, out):
    """Single kernels of one group from a product block: ``out[slot[k], a, b] = kappa_k * s_k``.

    ``P`` (r, c) float64 holds ``a_c.b_c`` for the rows ``a = r0 ..
    r0+r-1`` of ``A`` and the columns ``b = c0 .. c0+c-1`` of ``B``; ``Ac``
    (na, f) and ``Bc`` (nb, f) the centred group features, ``sqa``/``sqb``
    their squared norms, ``ta``/``tb`` their projections on the mean, ``mm``
    its squared norm. The group's kernels are ``kern_idx[k0:k1]``; ``slot``
    (m,) int64 maps kernel ``k`` to its output slice (-1: skipped);
    ``inv_scale`` (m,) multiplies. With ``sym`` (``A`` is ``B``), only
    ``b >= a`` is written and ``b = a`` has distance exactly 0; the caller
    mirrors. ``out`` (s, na, nb) float64 or float32.
    """
    nr = P.shape[0]
    nc = P.shape[1]
    sel = np.zeros(slot.shape[0])
    for kk in range(k0, k1):
        if slot[kern_idx[kk]] >= 0:
            sel[kern_idx[kk]] = 1.0
    need_d, need_g = _group_needs(kern_idx, k0, k1, kind, sel)
    for i in prange(nr):
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        e = np.empty(CHUNK)
        scr = np.empty(CHUNK)
        chain = np.zeros(2)
        a = r0 + np.int64(i)
        j0 = a - c0 if sym else 0  # the upper triangle starts at b = a
        if j0 < 0:
            j0 = 0
        p = P[i]
        for jb in range(j0, nc, CHUNK):
            L = min(nc, jb + CHUNK) - jb
            b0 = c0 + jb
            diag = a - b0 if sym and b0 <= a < b0 + L else -1
            _chunk_terms(p[jb:jb + L], Ac[a], Bc, sqa[a], ta[a], sqb, tb, mm, b0, L, diag,
                         need_d, need_g, d2, g2)
            chain[0] = 0.0  # e holds nothing of this group yet
            for kk in range(k0, k1):
                k = kern_idx[kk]
                sk = slot[k]
                if sk < 0:
                    continue
                _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                oc = out[sk, a, b0:b0 + L]
                sc = inv_scale[k]
                for j in range(L):
                    oc[j] = e[j] * sc
    return out


@njit(**JIT_PARALLEL)
def gram_combined(P, Ac, sqa, ta, Bc, sqb, tb, mm, r0, c0, sym, kern_idx, k0, k1, kind, param,
                  offset, wk, out):
    """Add one group's combined kernel from a product block: ``out[a, b] += sum_k wk[k] kappa_k``.

    Arguments as in :func:`gram_slices`; ``wk`` (m,) float64 per-kernel
    factors (0 skips a kernel); ``out`` (na, nb) float64, accumulated (in
    the order of ``kern_idx``). With ``sym`` only ``b >= a`` is touched.
    """
    nr = P.shape[0]
    nc = P.shape[1]
    need_d, need_g = _group_needs(kern_idx, k0, k1, kind, wk)
    for i in prange(nr):
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        e = np.empty(CHUNK)
        scr = np.empty(CHUNK)
        chain = np.zeros(2)
        a = r0 + np.int64(i)
        j0 = a - c0 if sym else 0
        if j0 < 0:
            j0 = 0
        p = P[i]
        o = out[a]
        for jb in range(j0, nc, CHUNK):
            L = min(nc, jb + CHUNK) - jb
            b0 = c0 + jb
            diag = a - b0 if sym and b0 <= a < b0 + L else -1
            _chunk_terms(p[jb:jb + L], Ac[a], Bc, sqa[a], ta[a], sqb, tb, mm, b0, L, diag,
                         need_d, need_g, d2, g2)
            chain[0] = 0.0
            oc = o[b0:b0 + L]
            for kk in range(k0, k1):
                k = kern_idx[kk]
                wv = wk[k]
                if wv == 0.0:
                    continue
                _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                for j in range(L):
                    oc[j] += wv * e[j]
    return out


@njit(**JIT)
def group_norms(Xc, m, sq, t):
    """``sq[i] = |Xc[i]|^2`` and ``t[i] = Xc[i].m``, summed in feature order."""
    for i in range(Xc.shape[0]):
        x = Xc[i]
        s = 0.0
        u = 0.0
        for f in range(x.shape[0]):
            s += x[f] * x[f]
            u += x[f] * m[f]
        sq[i] = s
        t[i] = u
    return sq, t


#: Tile edge of :func:`mirror_slices` (two 64 x 64 float64 tiles fit in L1).
_TILE = 64


@njit(**JIT_PARALLEL)
def mirror_slices(out, which):
    """Copy the upper triangle of ``out[s]`` onto its lower one for ``s`` in ``which``.

    One parallel launch for all the slices (parallel over them), tile by
    tile so that the transposed reads stay in cache.
    """
    n = out.shape[1]
    nt = (n + _TILE - 1) // _TILE
    for si in prange(which.shape[0]):
        o = out[which[si]]
        for ti in range(nt):
            i0 = ti * _TILE
            i1 = min(n, i0 + _TILE)
            for tj in range(ti + 1):
                j0 = tj * _TILE
                j1 = min(n, j0 + _TILE)
                for i in range(i0, i1):
                    for j in range(j0, min(j1, i)):
                        o[i, j] = o[j, i]
    return out


# ------------------------------------------------------------ python side
class Centred:
    """One group's features centred on the reference points' mean.

    Attributes
    ----------
    Xc : ndarray of shape (n, f)
        ``X[:, feats] - m``, C-contiguous.
    sq, t : ndarray of shape (n,)
        ``|Xc[i]|^2`` and ``Xc[i].m``.
    m : ndarray of shape (f,)
    mm : float
        ``m.m``.
    """

    __slots__ = ("Xc", "sq", "t", "m", "mm")

    def __init__(self, X, feats, m=None):
        Xg = X[:, feats] if feats is not None else X
        if m is None:
            m = Xg.mean(axis=0)
        self.m = np.ascontiguousarray(m, dtype=np.float64)
        self.Xc = np.ascontiguousarray(Xg - self.m, dtype=np.float64)
        n = self.Xc.shape[0]
        self.sq, self.t = group_norms(self.Xc, self.m, np.empty(n), np.empty(n))
        self.mm = float(self.m @ self.m)

    def take(self, rows):
        """The same centring for a subset of the points (bitwise the same rows)."""
        c = Centred.__new__(Centred)
        c.Xc = np.ascontiguousarray(self.Xc[rows])
        c.sq, c.t, c.m, c.mm = self.sq[rows], self.t[rows], self.m, self.mm
        return c

    def like(self, X, feats):
        """Other points ``X`` centred on this mean."""
        return Centred(X, feats, self.m)

    @property
    def nbytes(self):
        return int(self.Xc.nbytes + self.sq.nbytes + self.t.nbytes)


def _block_rows(ncols):
    """Rows per product block: ``BLOCK_BYTES`` of float64, at least 64."""
    return max(64, BLOCK_BYTES // (8 * max(1, ncols)))


def _blocks(A, B, sym):
    """Yield ``(r0, c0, P)`` product blocks ``A_c[r0:r1] B_c[c0:]'`` covering the output.

    With ``sym`` (``A`` is ``B``) only the columns ``c0 = r0 ..`` are formed
    (the upper triangle and the diagonal blocks): half the product.
    """
    na, nb = A.Xc.shape[0], B.Xc.shape[0]
    step = _block_rows(nb)
    for r0 in range(0, na, step):
        r1 = min(na, r0 + step)
        c0 = r0 if sym else 0
        yield r0, c0, A.Xc[r0:r1] @ B.Xc[c0:].T


def _group_args(plan_arrays, g):
    _, _, kern_ptr, kern_idx, kind, param, offset = plan_arrays
    return kern_idx, int(kern_ptr[g]), int(kern_ptr[g + 1]), kind, param, offset


def slices(A, B, sym, plan_arrays, g, inv_scale, slot, out):
    """Write one wide group's kernels into ``out`` (see :func:`gram_slices`)."""
    for r0, c0, P in _blocks(A, B, sym):
        gram_slices(P, A.Xc, A.sq, A.t, B.Xc, B.sq, B.t, B.mm, r0, c0, sym,
                    *_group_args(plan_arrays, g), inv_scale, slot, out)
    return out


def combined(A, B, sym, plan_arrays, g, wk, out):
    """Add one wide group's combined kernel into ``out`` (see :func:`gram_combined`)."""
    for r0, c0, P in _blocks(A, B, sym):
        gram_combined(P, A.Xc, A.sq, A.t, B.Xc, B.sq, B.t, B.mm, r0, c0, sym,
                      *_group_args(plan_arrays, g), wk, out)
    return out
