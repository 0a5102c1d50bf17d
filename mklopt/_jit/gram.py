"""Kernels of wide feature groups from one matrix product per group (BLAS).

:mod:`mklopt._jit.groups` sums ``(a_f - b_f)^2`` and ``a_f b_f`` over a
group's features in loops (vectorised over a chunk of columns):
``O(n^2 |F|)`` work per group outside of BLAS. For
a group with enough features (``wide``, see :func:`is_wide`) this module
forms the group's inner products instead as one matrix product ``A_c B_c'``
through numpy's BLAS, in blocks of rows, and derives from each product

* the squared distance ``|a_c|^2 + |b_c|^2 - 2 a_c.b_c``, clipped at zero,

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
are few outside of duplicated points: 0.15 % of the pairs of satellite,
none of digits). A duplicated point thus has distance exactly 0, and every
other distance a relative error below ``|F| eps / CLOSE`` (measured: below
``1.7e-15 / CLOSE`` on satellite, digits, digits tiled to 512 features and
Gaussian data on 500 features): Gaussian values ``exp(-x)`` then differ
from the direct scalar sum by at most ``max_x x e^-x = 1/e`` times that,
about 4e-14.

Polynomial kernels need the uncentred product ``a.b``. It is formed by a
second product on the uncentred features, only for groups with polynomial
kernels in use: its error is that of the direct sum, ``|F| eps |a||b|``.
Recovering it from the centred one (``a.b = a_c.b_c + a_c.m + b_c.m +
m.m``) would save that product but costs ``eps |m|^2`` absolute, which is
all of a small value's digits when points near the origin meet a mean far
from it (a linear kernel between ``5e-59`` and ``1`` came out 0). The
second product is cheap next to the kernels' exps and stores: both
products of satellite's group (n = 3218, 36 features) took 0.1-0.2 s of
a 0.6-1.2 s build.

The routines here take the product blocks ``P`` (centred) and ``Q``
(uncentred) for the rows ``r0 ..`` of ``A`` and the columns ``c0 ..`` of
``B``, the centred features and their squared norms ``sq``; the plan
arrays are those of :mod:`mklopt._jit.groups`. Rows are independent:
parallel over the rows of a block for large blocks (serial for small
ones, see :data:`PARALLEL_MIN`), the same answers on any number of
threads.
"""

import numba
import numpy as np
from numba import njit, prange

from ._options import JIT, JIT_PARALLEL
from .groups import CHUNK, GAUSSIAN, _ipow, _kernel_chunk, _needs

#: A group is evaluated through matrix products when it has at least
#: ``WIDE_MIN`` features and at least ``WIDE_PER_KERNEL`` features per kernel
#: (see :func:`is_wide`). The products save the direct path's ``O(|F|)``
#: sums per pair; what they cost is writing and reading back two blocks of
#: products, and a few multi-threaded calls per group, each of which may
#: wait for the second core, while both paths apply the kernels alike.
#: Measured at n = 1000 (benchmarks/README.md at commit 89ee8cc, "Kernels
#: through BLAS"): with a Gaussian and a polynomial kernel the products win
#: from a few features (0.5-0.9x); with the MKBoost grid's 17 kernels they
#: lose up to 128 features on 2 shared cores (1.1-1.6x) and cross near
#: 64-128 features on one thread (1.11x at 16, 0.97x at 64, 0.75x at 256);
#: at 512 features they win whatever the number of kernels (0.4-0.8x).
WIDE_MIN = 16
#: See :data:`WIDE_MIN`.
WIDE_PER_KERNEL = 8


def is_wide(n_features, n_kernels):
    """Whether groups of ``n_features`` features holding ``n_kernels`` kernels take the products.

    Works elementwise on arrays. Reads the module constants on every call
    (tests set them to send every group through the products).
    """
    return (n_features >= WIDE_MIN) & (n_features >= WIDE_PER_KERNEL * n_kernels)


#: Pairs with ``d < CLOSE (|a_c|^2 + |b_c|^2)`` get their distance summed directly.
CLOSE = 2.0**-6
#: Bytes of the product blocks of one pass (rows of ``A`` times all columns of ``B``).
BLOCK_BYTES = 32 * 2**20


# ------------------------------------------------------------------ jitted
@njit(**JIT)
def _chunk_dists(p, ac, Bc, sqa, sqb, b0, L, diag, d2):
    """``d2[0:L]``: squared distances of one point to ``L`` columns, from a row of the product.

    ``p[0:L]`` holds ``a_c.b_c`` for the columns ``b0 .. b0+L-1`` of ``B``;
    ``diag`` is the column where ``b`` is ``a`` itself (distance exactly 0),
    or -1. Close pairs are summed directly from ``ac`` and the rows of ``Bc``.
    """
    for j in range(L):
        v = (sqa + sqb[b0 + j]) - 2.0 * p[j]
        d2[j] = v if v > 0.0 else 0.0
    # A second pass for the few close pairs, kept out of the loop above (which vectorises).
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


@njit(**JIT)
def _rows_slices(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param, offset,
                 inv_scale, slot, out, need_d, need_g, i0, step):
    """The rows ``i = i0, i0 + step, ...`` of a block for :func:`gram_slices`."""
    nr = max(P.shape[0], Q.shape[0])
    nc = max(P.shape[1], Q.shape[1])
    d2 = np.empty(CHUNK)
    e = np.empty(CHUNK)
    scr = np.empty(2 * CHUNK)
    chain = np.zeros(2)
    for i in range(i0, nr, step):
        a = r0 + i
        j0 = max(a - c0, 0) if sym else 0  # the upper triangle starts at b = a
        for jb in range(j0, nc, CHUNK):
            L = min(nc, jb + CHUNK) - jb
            b0 = c0 + jb
            if need_d:
                diag = a - b0 if sym and b0 <= a < b0 + L else -1
                _chunk_dists(P[i, jb:jb + L], Ac[a], Bc, sqa[a], sqb, b0, L, diag, d2)
            g2 = Q[i, jb:jb + L] if need_g else d2
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


@njit(**JIT)
def _rows_combined(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param, offset,
                   wk, out, need_d, need_g, i0, step):
    """The rows ``i = i0, i0 + step, ...`` of a block for :func:`gram_combined`."""
    nr = max(P.shape[0], Q.shape[0])
    nc = max(P.shape[1], Q.shape[1])
    d2 = np.empty(CHUNK)
    e = np.empty(CHUNK)
    scr = np.empty(2 * CHUNK)
    chain = np.zeros(2)
    for i in range(i0, nr, step):
        a = r0 + i
        j0 = max(a - c0, 0) if sym else 0
        o = out[a]
        for jb in range(j0, nc, CHUNK):
            L = min(nc, jb + CHUNK) - jb
            b0 = c0 + jb
            if need_d:
                diag = a - b0 if sym and b0 <= a < b0 + L else -1
                _chunk_dists(P[i, jb:jb + L], Ac[a], Bc, sqa[a], sqb, b0, L, diag, d2)
            g2 = Q[i, jb:jb + L] if need_g else d2
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


@njit(**JIT)
def _slots_of(kern_idx, k0, k1, slot):
    """The selected slices of a group's kernels, and a 0/1 mask of those kernels."""
    which = np.empty(k1 - k0, dtype=np.int64)
    sel = np.zeros(slot.shape[0])
    nw = 0
    for kk in range(k0, k1):
        sk = slot[kern_idx[kk]]
        if sk >= 0:
            which[nw] = sk
            sel[kern_idx[kk]] = 1.0
            nw += 1
    return which[:nw], sel


@njit(**JIT)
def _mirror_one(o):
    """Copy the upper triangle of the square ``o`` onto its lower one.

    Row by row: the column read ``o[b, a]`` for ``b < a`` reuses the cache
    lines of the previous rows (measured 3x faster than 64 x 64 tiles at
    n = 3218, 17 slices).
    """
    n = o.shape[0]
    for a in range(n):
        for b in range(a):
            o[a, b] = o[b, a]


@njit(**JIT)
def gram_slices(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param, offset,
                inv_scale, slot, out, mirror):
    """Single kernels of one group from product blocks: ``out[slot[k], a, b] = kappa_k * s_k``.

    ``P`` (r, c) float64 holds ``a_c.b_c`` and ``Q`` (r, c) ``a.b`` for the
    rows ``a = r0 .. r0+r-1`` of ``A`` and the columns ``b = c0 ..
    c0+c-1`` of ``B`` (either may be empty (0, 0) when no kernel needs it);
    ``Ac`` (na, f) and ``Bc`` (nb, f) are the centred group features,
    ``sqa``/``sqb`` their squared norms. The group's kernels are
    ``kern_idx[k0:k1]``; ``slot`` (m,) int64 maps kernel ``k`` to its
    output slice (-1: skipped); ``inv_scale`` (m,) multiplies. With ``sym``
    (``A`` is ``B``), only ``b >= a`` is written and ``b = a`` has distance
    exactly 0; ``mirror`` then copies the upper triangles of the group's
    slices onto their lower ones at the end (for the last block). ``out``
    (s, na, nb) float64 or float32.

    Serial; :func:`gram_slices_par` is the parallel twin, for large blocks.
    """
    which, sel = _slots_of(kern_idx, k0, k1, slot)
    need_d, need_g = _needs(kern_idx, k0, k1, kind, sel)
    _rows_slices(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param, offset,
                 inv_scale, slot, out, need_d, need_g, 0, 1)
    if mirror:
        for s in range(which.shape[0]):
            _mirror_one(out[which[s]])
    return out


@njit(**JIT_PARALLEL)
def gram_slices_par(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param,
                    offset, inv_scale, slot, out, mirror, n_tasks):
    """:func:`gram_slices` with the rows dealt to ``n_tasks`` parallel tasks.

    Row ``i`` goes to task ``i % n_tasks`` (which balances the triangle);
    every entry is computed as in the serial routine, so the answers are
    the same bits. The mirror is parallel over the slices, in the same call.
    """
    which, sel = _slots_of(kern_idx, k0, k1, slot)
    need_d, need_g = _needs(kern_idx, k0, k1, kind, sel)
    for t in prange(n_tasks):
        _rows_slices(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param,
                     offset, inv_scale, slot, out, need_d, need_g, np.int64(t), n_tasks)
    if mirror:
        for s in prange(which.shape[0]):
            _mirror_one(out[which[s]])
    return out


@njit(**JIT)
def gram_combined(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param, offset,
                  wk, out):
    """Add one group's combined kernel from product blocks: ``out[a, b] += sum_k wk[k] kappa_k``.

    Arguments as in :func:`gram_slices`; ``wk`` (m,) float64 per-kernel
    factors (0 skips a kernel); ``out`` (na, nb) float64, accumulated (in
    the order of ``kern_idx``). With ``sym`` only ``b >= a`` is touched.
    Serial; :func:`gram_combined_par` is the parallel twin.
    """
    need_d, need_g = _needs(kern_idx, k0, k1, kind, wk)
    _rows_combined(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param, offset,
                   wk, out, need_d, need_g, 0, 1)
    return out


@njit(**JIT_PARALLEL)
def gram_combined_par(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param,
                      offset, wk, out, n_tasks):
    """:func:`gram_combined` with the rows dealt to ``n_tasks`` parallel tasks (same bits)."""
    need_d, need_g = _needs(kern_idx, k0, k1, kind, wk)
    for t in prange(n_tasks):
        _rows_combined(P, Q, Ac, sqa, Bc, sqb, r0, c0, sym, kern_idx, k0, k1, kind, param,
                       offset, wk, out, need_d, need_g, np.int64(t), n_tasks)
    return out


@njit(**JIT)
def _rows_quad(P, Q, Ac, sqa, r0, c0, kern_idx, k0, k1, kind, param, offset, inv_scale, slot,
               v, need_d, need_g, i0, step, acc):
    """Rows ``i = i0, i0 + step, ...`` of a symmetric block, added to a quadratic form.

    ``acc[kk - k0] += v_a (v_a kappa(a, a) + 2 sum_{b > a} v_b kappa(a, b)) s_k``
    for each wanted kernel ``kern_idx[kk]`` (the upper triangle of ``v' K
    v``); ``kappa(a, a)`` is 1 for a Gaussian and ``(a.a + offset)^p`` from
    the diagonal of ``Q``.
    """
    nr = max(P.shape[0], Q.shape[0])
    nc = max(P.shape[1], Q.shape[1])
    nk = k1 - k0
    d2 = np.empty(CHUNK)
    e = np.empty(CHUNK)
    scr = np.empty(2 * CHUNK)
    chain = np.zeros(2)
    part = np.empty(nk)
    for i in range(i0, nr, step):
        a = r0 + i
        va = v[a]
        if va == 0.0:
            continue
        for kk in range(nk):
            part[kk] = 0.0
        j0 = a - c0 + 1  # b > a
        for jb in range(j0, nc, CHUNK):
            L = min(nc, jb + CHUNK) - jb
            b0 = c0 + jb
            if need_d:
                _chunk_dists(P[i, jb:jb + L], Ac[a], Ac, sqa[a], sqa, b0, L, -1, d2)
            g2 = Q[i, jb:jb + L] if need_g else d2
            chain[0] = 0.0
            vb = v[b0:b0 + L]
            for kk in range(k0, k1):
                k = kern_idx[kk]
                if slot[k] < 0:
                    continue
                _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                t = 0.0
                for j in range(L):
                    t += vb[j] * e[j]
                part[kk - k0] += t
        for kk in range(k0, k1):
            k = kern_idx[kk]
            if slot[k] < 0:
                continue
            if kind[k] == GAUSSIAN:
                diag = 1.0
            else:
                diag = _ipow(Q[i, a - c0] + offset[k], int(param[k]))
            acc[kk - k0] += va * (va * diag + 2.0 * part[kk - k0]) * inv_scale[k]


@njit(**JIT)
def gram_quad(P, Q, Ac, sqa, r0, c0, kern_idx, k0, k1, kind, param, offset, inv_scale, slot, v,
              parts):
    """One symmetric block's share of ``q_k = v' K_k v`` for one group, serially.

    ``P``/``Q`` are the products of the rows ``r0 ..`` against the columns
    ``c0 = r0 ..`` of the support's centred / uncentred group features
    (``Ac``, ``sqa``); ``v`` (s,) the support's weights; ``parts`` (t, nk)
    float64 accumulates: row ``i`` of the block goes to ``parts[i % t]``,
    so :func:`gram_quad_par` gives the same bits, and the caller adds the
    ``t`` parts in order.
    """
    sel = np.zeros(slot.shape[0])
    for kk in range(k0, k1):
        if slot[kern_idx[kk]] >= 0:
            sel[kern_idx[kk]] = 1.0
    need_d, need_g = _needs(kern_idx, k0, k1, kind, sel)
    n_tasks = parts.shape[0]
    for t in range(n_tasks):
        _rows_quad(P, Q, Ac, sqa, r0, c0, kern_idx, k0, k1, kind, param, offset, inv_scale,
                   slot, v, need_d, need_g, t, n_tasks, parts[t])
    return parts


@njit(**JIT_PARALLEL)
def gram_quad_par(P, Q, Ac, sqa, r0, c0, kern_idx, k0, k1, kind, param, offset, inv_scale, slot,
                  v, parts):
    """:func:`gram_quad` with the parts computed in parallel (the same bits)."""
    sel = np.zeros(slot.shape[0])
    for kk in range(k0, k1):
        if slot[kern_idx[kk]] >= 0:
            sel[kern_idx[kk]] = 1.0
    need_d, need_g = _needs(kern_idx, k0, k1, kind, sel)
    n_tasks = parts.shape[0]
    for t in prange(n_tasks):
        _rows_quad(P, Q, Ac, sqa, r0, c0, kern_idx, k0, k1, kind, param, offset, inv_scale,
                   slot, v, need_d, need_g, np.int64(t), n_tasks, parts[t])
    return parts


@njit(**JIT)
def group_norms(Xc, sq):
    """``sq[i] = |Xc[i]|^2``, summed in feature order."""
    for i in range(Xc.shape[0]):
        x = Xc[i]
        s = 0.0
        for f in range(x.shape[0]):
            s += x[f] * x[f]
        sq[i] = s
    return sq


@njit(**JIT_PARALLEL)
def mirror_slices(out, which):
    """Copy the upper triangle of ``out[s]`` onto its lower one for ``s`` in ``which``.

    Parallel over the slices.
    """
    for si in prange(which.shape[0]):
        _mirror_one(out[which[si]])
    return out


# ------------------------------------------------------------ python side
_EMPTY = np.zeros((0, 0))


class Centred:
    """One group's features, as they are and centred on the reference points' mean.

    Attributes
    ----------
    X : ndarray of shape (n, f)
        The group's features (a view of the points for an all-feature group).
    Xc : ndarray of shape (n, f)
        ``X - m``, C-contiguous.
    sq : ndarray of shape (n,)
        ``|Xc[i]|^2``.
    m : ndarray of shape (f,)
    """

    __slots__ = ("X", "Xc", "sq", "m", "own")

    def __init__(self, X, feats, m=None):
        Xg = np.ascontiguousarray(X[:, feats] if feats is not None else X, dtype=np.float64)
        if m is None:
            m = Xg.mean(axis=0)
        self.m = np.ascontiguousarray(m, dtype=np.float64)
        self.X = Xg
        self.own = Xg is not X  # a copy of a feature subset, counted in nbytes
        self.Xc = Xg - self.m
        self.sq = group_norms(self.Xc, np.empty(self.Xc.shape[0]))

    def take(self, rows):
        """The same centring for a subset of the points (bitwise the same rows)."""
        c = Centred.__new__(Centred)
        c.X, c.Xc, c.sq, c.m = self.X[rows], self.Xc[rows], self.sq[rows], self.m
        c.own = True
        return c

    def like(self, X, feats):
        """Other points ``X`` centred on this mean."""
        return Centred(X, feats, self.m)

    @property
    def nbytes(self):
        return int(self.Xc.nbytes + self.sq.nbytes + (self.X.nbytes if self.own else 0))


def _blocks(A, B, sym, need_d, need_g):
    """Yield ``(r0, c0, P, Q)``: the centred and uncentred products of blocks of rows.

    ``P = A_c[r0:r1] B_c[c0:]'`` when distances are needed, ``Q = A[r0:r1]
    B[c0:]'`` when inner products are (else empty). With ``sym`` (``A`` is
    ``B``) only the columns ``c0 = r0 ..`` are formed (the upper triangle
    and the diagonal blocks): half the product.
    """
    na, nb = A.Xc.shape[0], B.Xc.shape[0]
    step = max(64, BLOCK_BYTES // (8 * max(1, nb) * (int(need_d) + int(need_g))))
    for r0 in range(0, na, step):
        r1 = min(na, r0 + step)
        c0 = r0 if sym else 0
        P = A.Xc[r0:r1] @ B.Xc[c0:].T if need_d else _EMPTY
        Q = A.X[r0:r1] @ B.X[c0:].T if need_g else _EMPTY
        yield r0, c0, P, Q


def _group(plan_arrays, g, sel):
    """The group's kernel arguments, and whether its selected kernels need P / Q."""
    _, _, kern_ptr, kern_idx, kind, param, offset = plan_arrays
    k0, k1 = int(kern_ptr[g]), int(kern_ptr[g + 1])
    ks = kern_idx[k0:k1]
    ks = ks[sel[ks]]
    gauss = kind[ks] == GAUSSIAN
    return (kern_idx, k0, k1, kind, param, offset), bool(gauss.any()), bool((~gauss).any())


#: A block goes parallel when it holds at least this many kernel entries
#: (pairs times kernels); smaller ones stay serial. A parallel launch right
#: after a BLAS call waits for OpenBLAS's spinning threads to free the
#: second core: measured 7-40 ms on 2 cores (more when they are shared),
#: against 3.5 ms for a whole serial 1000 x 1000 block of two kernels. From
#: about 2^25 entries (0.1 s of serial work) the second core pays for it.
PARALLEL_MIN = 2**22


def _n_tasks(nr, nc, n_kernels, sym):
    work = nr * nc * n_kernels // (2 if sym else 1)
    if work < PARALLEL_MIN or numba.get_num_threads() < 2:
        return 1
    return min(nr, 8 * numba.get_num_threads())


def slices(A, B, sym, plan_arrays, g, inv_scale, slot, out, stop):
    """Write one wide group's kernels into ``out`` (see :func:`gram_slices`).

    With ``sym`` the slices come out whole: mirrored after the last block.
    ``stop`` ((1,) int64, :mod:`mklopt._interrupt`) is looked at before each
    block of rows; once it is non-zero no further block is started (the
    rows written are whole, nothing is mirrored) and the caller drops
    ``out``. The same holds for :func:`combined` and :func:`quad`.
    """
    args, need_d, need_g = _group(plan_arrays, g, slot >= 0)
    if not (need_d or need_g):
        return out
    na = A.Xc.shape[0]
    nk = int(np.count_nonzero(slot[args[0][args[1]:args[2]]] >= 0))
    for r0, c0, P, Q in _blocks(A, B, sym, need_d, need_g):
        if stop[0] != 0:
            return out
        nr, nc = max(P.shape[0], Q.shape[0]), max(P.shape[1], Q.shape[1])
        mirror = sym and r0 + nr >= na  # the last block
        call = (P, Q, A.Xc, A.sq, B.Xc, B.sq, r0, c0, sym, *args, inv_scale, slot, out, mirror)
        t = _n_tasks(nr, nc, nk, sym)
        if t > 1:
            gram_slices_par(*call, t)
        else:
            gram_slices(*call)
    return out


def combined(A, B, sym, plan_arrays, g, wk, out, stop):
    """Add one wide group's combined kernel into ``out`` (see :func:`gram_combined`).

    ``stop`` as for :func:`slices`.
    """
    args, need_d, need_g = _group(plan_arrays, g, wk != 0.0)
    if not (need_d or need_g):
        return out
    nk = int(np.count_nonzero(wk[args[0][args[1]:args[2]]]))
    for r0, c0, P, Q in _blocks(A, B, sym, need_d, need_g):
        if stop[0] != 0:
            return out
        nr, nc = max(P.shape[0], Q.shape[0]), max(P.shape[1], Q.shape[1])
        call = (P, Q, A.Xc, A.sq, B.Xc, B.sq, r0, c0, sym, *args, wk, out)
        t = _n_tasks(nr, nc, nk, sym)
        if t > 1:
            gram_combined_par(*call, t)
        else:
            gram_combined(*call)
    return out


def quad(C, v, plan_arrays, g, inv_scale, slot, stop):
    """``q[kk - k0] = v' K_k v`` for the kernels of one wide group on the points of ``C``.

    ``C`` holds the support's centred group features, ``v`` (s,) its
    weights; kernels with ``slot < 0`` are left at 0. The rows are dealt to
    a number of parts that depends only on the support's size, so the sums
    are the same whether the blocks run serially or in parallel. ``stop``
    as for :func:`slices` (a stopped sum is returned incomplete).
    """
    args, need_d, need_g = _group(plan_arrays, g, slot >= 0)
    parts = np.zeros((int(min(64, max(1, C.Xc.shape[0] // 16))), args[2] - args[1]))
    if not (need_d or need_g):
        return parts.sum(axis=0)
    nk = int(np.count_nonzero(slot[args[0][args[1]:args[2]]] >= 0))
    for r0, c0, P, Q in _blocks(C, C, True, need_d, need_g):
        if stop[0] != 0:
            break
        nr, nc = max(P.shape[0], Q.shape[0]), max(P.shape[1], Q.shape[1])
        call = (P, Q, C.Xc, C.sq, r0, c0, *args, inv_scale, slot, v, parts)
        if _n_tasks(nr, nc, nk, True) > 1:
            gram_quad_par(*call)
        else:
            gram_quad(*call)
    q = np.zeros(parts.shape[1])
    for t in range(parts.shape[0]):  # in order: the same sum on any number of threads
        q += parts[t]
    return q
