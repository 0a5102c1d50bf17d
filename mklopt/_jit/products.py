"""Kernels applied on demand to stored squared distances and inner products.

A bank of ``m`` kernels over a few feature groups (the MKBoost grid: 14
Gaussian widths and 3 polynomial degrees on all features) needs only two
``n x n`` matrices per group: the squared distances ``D_g`` (every width
of the group is ``exp(-gamma D_g)``) and the inner products ``G_g`` (every
degree is ``(G_g + c)^p``). :class:`mklopt.kernels.products.ProductStorage`
stores those matrices, the *products* ``P``, and the routines here apply the
kernels to them whenever a row, a diagonal, a quadratic form or a block is
read.

Exactness. The products are summed by the very routines the dense build
uses (:func:`mklopt._jit.groups._pairs` for narrow groups, the centred
BLAS product and :func:`mklopt._jit.gram._chunk_dists` for wide ones), and
each kernel is applied with the operations of
:func:`mklopt._jit.groups._kernel_chunk`: a Gaussian is ``exp(-gamma_b d)``
at the base ``gamma_b`` the dense build's doubling chain took an exp at,
squared ``s`` times (the chain's squarings, with the same flush of values
below ``_SQ_MIN``), and a polynomial is the same repeated squaring of ``g +
c``. So every kernel value equals the stored value of a dense bank bit for
bit. The rows, diagonals and quadratic forms are then summed in the order
of :mod:`mklopt._jit.combine`'s view routines (four kernels folded per pass,
four accumulators per row of a quadratic form), so each verb returns what a
:class:`~mklopt.kernels.views.ViewStorage` of a dense bank returns, bit for
bit, and a fit takes the same path on either storage.

The recipe of kernel ``k`` is ``ri[:, k] = (matrix, kind, squarings or
degree, rank)`` and ``rf[:, k] = (gamma_b, offset, scale)``: ``P[matrix]``
holds its group's distances (Gaussian, ``kind`` 0) or inner products
(polynomial, ``kind`` 1); ``rank`` is its position in the plan's order (a
group's Gaussians by increasing ``gamma``), in which kernels sharing a base
exp are evaluated together; ``scale`` multiplies the value as the dense
build does (its ``1 / s_k``).
"""

import numpy as np
from numba import njit, prange

from ._options import JIT, JIT_PARALLEL
from ._stop import stopped
from .combine import view_diag, view_row
from .gram import _chunk_dists
from .groups import CHUNK, GAUSSIAN, _pairs, gauss_chunk, poly_chunk, square_chunk


@njit(**JIT)
def _eval_order(ri, kernels):
    """Positions of ``kernels`` sorted by their plan rank (insertion sort; r is small)."""
    r = kernels.shape[0]
    order = np.empty(r, dtype=np.int64)
    for a in range(r):
        order[a] = a
    for a in range(1, r):
        t = order[a]
        key = ri[3, kernels[t]]
        b = a - 1
        while b >= 0 and ri[3, kernels[order[b]]] > key:
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = t
    return order


@njit(**JIT)
def _eval_chunk(P, ri, rf, kernels, order, g, cols, c0, L, vals, x, e, scr, pe):
    """``vals[a, 0:L]`` = kernel ``kernels[a]`` between bank point ``g`` and ``cols[c0:c0+L]``.

    Kernels are visited in ``order`` (plan rank), so that the Gaussians of
    one base share its exp; each value is the dense build's stored value.
    """
    cur_mat = -1
    cur_base = -1.0
    cur_s = 0
    for t in range(order.shape[0]):
        a = order[t]
        k = kernels[a]
        mk = ri[0, k]
        if mk != cur_mat:
            row = P[mk, g]
            for j in range(L):
                x[j] = row[cols[c0 + j]]
            cur_mat = mk
            cur_base = -1.0
        va = vals[a]
        sc = rf[2, k]
        if ri[1, k] == GAUSSIAN:
            gb = rf[0, k]
            s = ri[2, k]
            if gb != cur_base or s < cur_s:
                gauss_chunk(x, gb, L, e, scr)
                cur_base = gb
                cur_s = 0
            square_chunk(e, L, s - cur_s)
            cur_s = s
            for j in range(L):
                va[j] = e[j] * sc
        else:
            poly_chunk(x, rf[1, k], ri[2, k], L, pe, scr)
            for j in range(L):
                va[j] = pe[j] * sc


@njit(**JIT)
def _work(r, L):
    """The work vectors of :func:`_eval_chunk` for ``r`` kernels and chunks of ``L``.

    ``(vals, x, e, scr, pe)``; ``scr`` holds two vectors (see
    :func:`mklopt._jit.groups.gauss_chunk`).
    """
    return np.empty((r, L)), np.empty(L), np.empty(L), np.empty(2 * L), np.empty(L)


@njit(**JIT)
def _row_into(P, ri, rf, w, kernels, gidx, i, out, order, work):
    """Row ``i`` into ``out``, given the evaluation order and work vectors (:func:`product_row`)."""
    vals, x, e, scr, pe = work
    n = gidx.shape[0]
    g = gidx[i]
    na = kernels.shape[0]
    for c0 in range(0, n, CHUNK):
        L = min(n, c0 + CHUNK) - c0
        _eval_chunk(P, ri, rf, kernels, order, g, gidx, c0, L, vals, x, e, scr, pe)
        oc = out[c0:c0 + L]
        for c in range(L):
            oc[c] = 0.0
        a = 0
        while a + 3 < na:
            w0 = w[a]
            w1 = w[a + 1]
            w2 = w[a + 2]
            w3 = w[a + 3]
            r0 = vals[a]
            r1 = vals[a + 1]
            r2 = vals[a + 2]
            r3 = vals[a + 3]
            for c in range(L):
                oc[c] += w0 * r0[c] + w1 * r1[c] + w2 * r2[c] + w3 * r3[c]
            a += 4
        while a < na:
            w0 = w[a]
            r0 = vals[a]
            for c in range(L):
                oc[c] += w0 * r0[c]
            a += 1
    return out


@njit(**JIT)
def product_row(P, ri, rf, w, kernels, gidx, i, out):
    """Row ``i`` of the combined kernel of a view: ``out[c] = sum_a w[a] K_a(gidx[i], gidx[c])``.

    As :func:`mklopt._jit.combine.view_row` on a dense bank holding these
    kernels, with the same sums: ``P`` (p, N, N) float64 the products;
    ``ri`` (4, m) int64 and ``rf`` (3, m) float64 the recipes (module notes);
    ``w`` (r,) float64 weights of ``kernels`` (r,) int64; ``gidx`` (n,)
    int64 the view's bank points; ``out`` (n,) float64, written.
    """
    return _row_into(P, ri, rf, w, kernels, gidx, i, out, _eval_order(ri, kernels),
                     _work(kernels.shape[0], CHUNK))


@njit(**JIT)
def product_fill(P, ri, rf, w, kernels, gidx, idx, K, stop):
    """Rows ``idx`` ((r,) int64, local) of a view's combined kernel into ``K[idx[t]]``.

    :func:`product_row` for each, with one evaluation order and one set of
    work vectors for all of them. A set ``stop[0]`` ends the loop between
    rows. Returns the number of rows written (a prefix of ``idx``).
    """
    order = _eval_order(ri, kernels)
    work = _work(kernels.shape[0], CHUNK)
    for t in range(idx.shape[0]):
        if stopped(stop):
            return t
        _row_into(P, ri, rf, w, kernels, gidx, idx[t], K[idx[t]], order, work)
    return idx.shape[0]


@njit(**JIT)
def product_rows(P, ri, rf, w, kernels, gidx, idx, out, stop):
    """Rows ``idx`` ((r,) int64, local) of a view's combined kernel into ``out`` (r, n).

    See :func:`product_row`; a set ``stop[0]`` ends the loop between rows.
    """
    order = _eval_order(ri, kernels)
    work = _work(kernels.shape[0], CHUNK)
    for r in range(idx.shape[0]):
        if stopped(stop):
            return out
        _row_into(P, ri, rf, w, kernels, gidx, idx[r], out[r], order, work)
    return out


@njit(**JIT)
def product_combine(P, ri, rf, w, kernels, gidx, out, stop):
    """The whole combined kernel of a view into ``out`` (n, n), row by row (exactly symmetric)."""
    return product_rows(P, ri, rf, w, kernels, gidx, np.arange(gidx.shape[0]), out, stop)


@njit(**JIT)
def product_diag(D, w, kernels, gidx, out):
    """Diagonal of a view's combined kernel from the kernels' diagonals ``D`` (m, N).

    Summed as :func:`product_row` (and :func:`mklopt._jit.combine.view_diag`)
    sum entry ``(i, i)``: the same bits.
    """
    na = kernels.shape[0]
    for i in range(gidx.shape[0]):
        g = gidx[i]
        o = 0.0
        a = 0
        while a + 3 < na:
            o += (w[a] * D[kernels[a], g] + w[a + 1] * D[kernels[a + 1], g]
                  + w[a + 2] * D[kernels[a + 2], g] + w[a + 3] * D[kernels[a + 3], g])
            a += 4
        while a < na:
            o += w[a] * D[kernels[a], g]
            a += 1
        out[i] = o
    return out


@njit(**JIT)
def source_row(bank, w, kernels, gidx, ri, rf, i, out):
    """Row ``i`` of a view's combined kernel from a dense bank (``ri`` empty) or from products.

    The row source of the SMO solver's lazy path: :func:`mklopt._jit.combine.view_row`
    when ``ri`` has no columns, else :func:`product_row` with ``bank`` the products.
    """
    if ri.shape[1] == 0:
        view_row(bank, w, kernels, gidx, i, out)
    else:
        product_row(bank, ri, rf, w, kernels, gidx, i, out)
    return out


@njit(**JIT)
def source_fill(bank, w, kernels, gidx, ri, rf, idx, K, stop):
    """Rows ``idx`` of a view's combined kernel into ``K[idx[t]]``, as :func:`source_row` gives.

    The batch of the SMO solver's first gradient: from products, one
    evaluation order and one set of work vectors serve every row. A set
    ``stop[0]`` ends the loop between rows; returns the number written.
    """
    if ri.shape[1] != 0:
        return product_fill(bank, ri, rf, w, kernels, gidx, idx, K, stop)
    for t in range(idx.shape[0]):
        if stopped(stop):
            return t
        view_row(bank, w, kernels, gidx, idx[t], K[idx[t]])
    return idx.shape[0]


@njit(**JIT_PARALLEL)
def source_fill_par(bank, w, kernels, gidx, ri, rf, idx, K, filled, n_tasks, stop):
    """:func:`source_fill` on threads: row ``idx[t]`` dealt to task ``t % n_tasks``.

    Each row is computed by the code :func:`source_fill` runs for it
    (:func:`product_fill`'s rows from stored products, :func:`view_row`
    from a dense bank), so its bits are the same whatever the number of
    tasks. Each written row is marked ``filled[idx[t]] = 1`` ((N,) uint8);
    a set ``stop[0]`` ends each task between rows, so the rows written
    are those marked (not necessarily a prefix of ``idx``). Returns
    ``filled``.
    """
    r = idx.shape[0]
    for task in prange(n_tasks):
        if ri.shape[1] != 0:
            order = _eval_order(ri, kernels)
            work = _work(kernels.shape[0], CHUNK)
            for t in range(task, r, n_tasks):
                if stopped(stop):
                    break
                _row_into(bank, ri, rf, w, kernels, gidx, idx[t], K[idx[t]], order, work)
                filled[idx[t]] = 1
        else:
            for t in range(task, r, n_tasks):
                if stopped(stop):
                    break
                view_row(bank, w, kernels, gidx, idx[t], K[idx[t]])
                filled[idx[t]] = 1
    return filled


@njit(**JIT)
def source_diag(bank, w, kernels, gidx, ri, diag_raw, out):
    """The diagonal that :func:`source_row`'s rows hold, bit for bit.

    From the dense bank's diagonal entries when ``ri`` has no columns, else
    from ``diag_raw`` (m, N), the stored kernels' diagonals.
    """
    if ri.shape[1] == 0:
        view_diag(bank, w, kernels, gidx, out)
    else:
        product_diag(diag_raw, w, kernels, gidx, out)
    return out


#: The recipe arguments of a dense bank's row source (no recipe).
NO_RI = np.zeros((4, 0), dtype=np.int64)
NO_RF = np.zeros((3, 0))
NO_DIAG = np.zeros((0, 0))


@njit(**JIT)
def product_diagonals(P, ri, rf, gidx, out):
    """``out[k, i]`` = kernel ``k`` at ``(gidx[i], gidx[i])`` for every kernel: (m, n) float64."""
    m = out.shape[0]
    kernels = np.arange(m)
    order = _eval_order(ri, kernels)
    vals, x, e, scr, pe = _work(m, 1)
    for i in range(gidx.shape[0]):
        _eval_chunk(P, ri, rf, kernels, order, gidx[i], gidx, i, 1, vals, x, e, scr, pe)
        for k in range(m):
            out[k, i] = vals[k, 0]
    return out


@njit(**JIT)
def product_quad_forms(P, ri, rf, v, support, kernels, out, stop):
    """``out[j] = v_S' K[kernels[j]][S, S] v_S`` over bank points ``support`` (s,) int64.

    As :func:`mklopt._jit.combine.quad_forms` on a dense bank holding these
    kernels, with the same sums (the upper triangle, four accumulators per
    row, the rows in order). ``v`` (N,) float64 on the bank's points.
    ``stop`` is looked at before each row of the support; a stopped sum is
    not written.
    """
    s = support.shape[0]
    r = kernels.shape[0]
    vs = np.empty(s)
    for a in range(s):
        vs[a] = v[support[a]]
    order = _eval_order(ri, kernels)
    vals, x, e, scr, pe = _work(r, CHUNK)
    dv = np.empty((r, 1))
    total = np.zeros(r)
    acc = np.empty((r, 4))
    for a in range(s):
        if stopped(stop):
            return out
        g = support[a]
        for j in range(r):
            for t in range(4):
                acc[j, t] = 0.0
        # The columns b > a: groups of four into the four accumulators, the
        # rest into the first, as the dense routine sums them. A chunk starts
        # a multiple of four (CHUNK) after a + 1, so its entry t goes to
        # accumulator t % 4 up to the last whole group (``full``).
        full = a + 1 + 4 * ((s - a - 1) // 4)
        for c0 in range(a + 1, s, CHUNK):
            L = min(s, c0 + CHUNK) - c0
            _eval_chunk(P, ri, rf, kernels, order, g, support, c0, L, vals, x, e, scr, pe)
            grouped = min(L, full - c0)
            vc = vs[c0:c0 + L]
            for j in range(r):
                vj = vals[j]
                a0 = acc[j, 0]
                a1 = acc[j, 1]
                a2 = acc[j, 2]
                a3 = acc[j, 3]
                t = 0
                while t < grouped:
                    a0 += vc[t] * vj[t]
                    a1 += vc[t + 1] * vj[t + 1]
                    a2 += vc[t + 2] * vj[t + 2]
                    a3 += vc[t + 3] * vj[t + 3]
                    t += 4
                while t < L:
                    a0 += vc[t] * vj[t]
                    t += 1
                acc[j, 0] = a0
                acc[j, 1] = a1
                acc[j, 2] = a2
                acc[j, 3] = a3
        _eval_chunk(P, ri, rf, kernels, order, g, support, a, 1, dv, x, e, scr, pe)
        for j in range(r):
            total[j] += vs[a] * (vs[a] * dv[j, 0]
                                 + 2.0 * ((acc[j, 0] + acc[j, 1]) + (acc[j, 2] + acc[j, 3])))
    for j in range(r):
        out[j] = total[j]
    return out


@njit(**JIT)
def product_blocks(P, ri, rf, kernels, rows, cols, out):
    """``out[j] = K[kernels[j]][rows][:, cols]`` (the dense build's values), (r, a, b) float64."""
    r = kernels.shape[0]
    nb = cols.shape[0]
    order = _eval_order(ri, kernels)
    vals, x, e, scr, pe = _work(r, CHUNK)
    for i in range(rows.shape[0]):
        for c0 in range(0, nb, CHUNK):
            L = min(nb, c0 + CHUNK) - c0
            _eval_chunk(P, ri, rf, kernels, order, rows[i], cols, c0, L, vals, x, e, scr, pe)
            for j in range(r):
                o = out[j, i]
                vj = vals[j]
                for t in range(L):
                    o[c0 + t] = vj[t]
    return out


# ---------------------------------------------------------------- the build
#: Rows of one block of :func:`products_sym`: their lower-triangle writes
#: (rows ``b`` of a column chunk, columns of the block) stay in cache.
SYM_BLOCK = 32


@njit(**JIT_PARALLEL)
def products_sym(X, XT, feat_ptr, feat_idx, groups, mat_d, mat_g, P, stop):
    """Squared distances and inner products of narrow groups on one point set, symmetric.

    For group ``groups[t]``, ``P[mat_d[g]]`` gets the squared distances and
    ``P[mat_g[g]]`` the inner products (a negative index: not stored),
    summed by :func:`mklopt._jit.groups._pairs` exactly as the dense build
    sums them. Each pair ``a <= b`` is evaluated once and written to both
    ``(a, b)`` and ``(b, a)``, so the matrices come out whole and exactly
    symmetric. The rows go in blocks of :data:`SYM_BLOCK`, dealt to threads
    in pairs ``(r, n_blocks-1-r)`` (equal shares of the triangle); within a
    block, one column chunk of :data:`~mklopt._jit.groups.CHUNK` at a time,
    so that the lower-triangle writes of a chunk (``CHUNK`` rows, the
    block's columns) stay in cache. ``stop`` as in
    :mod:`mklopt._jit.groups`.
    """
    n = X.shape[0]
    nb = (n + SYM_BLOCK - 1) // SYM_BLOCK
    half = (nb + 1) // 2
    for r in prange(half):
        if stopped(stop):
            continue
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        for side in range(2):
            blk = r if side == 0 else nb - 1 - r
            if side == 1 and blk == r:
                break
            a0 = blk * SYM_BLOCK
            a1 = min(n, a0 + SYM_BLOCK)
            for b0 in range(a0, n, CHUNK):
                b1 = min(n, b0 + CHUNK)
                for a in range(a0, a1):
                    lo = max(a, b0)
                    if lo >= b1:
                        continue
                    L = b1 - lo
                    xa = X[a]
                    for gi in range(groups.shape[0]):
                        g = groups[gi]
                        md = mat_d[g]
                        mg = mat_g[g]
                        _pairs(xa, XT, feat_idx, feat_ptr[g], feat_ptr[g + 1], lo, b1, md >= 0,
                               mg >= 0, d2, g2)
                        if md >= 0:
                            _both_triangles(P[md], a, lo, L, d2)
                        if mg >= 0:
                            _both_triangles(P[mg], a, lo, L, g2)
    return P


@njit(**JIT)
def _both_triangles(M, a, lo, L, vals):
    """``M[a, lo:lo+L] = vals[:L]`` and the same values down column ``a`` from row ``lo``."""
    row = M[a]
    for j in range(L):
        row[lo + j] = vals[j]
    for j in range(L):
        M[lo + j, a] = vals[j]


@njit(**JIT)
def _block_rows(Pb, Qb, Ac, sqa, r0, c0, md, mg, P, i0, step):
    """The rows ``i = i0, i0 + step, ...`` of a block for :func:`products_block`."""
    nr = max(Pb.shape[0], Qb.shape[0])
    nc = max(Pb.shape[1], Qb.shape[1])
    d2 = np.empty(CHUNK)
    for i in range(i0, nr, step):
        a = r0 + i
        j0 = max(a - c0, 0)
        for jb in range(j0, nc, CHUNK):
            L = min(nc, jb + CHUNK) - jb
            b0 = c0 + jb
            if md >= 0:
                diag = a - b0 if b0 <= a < b0 + L else -1
                _chunk_dists(Pb[i, jb:jb + L], Ac[a], Ac, sqa[a], sqa, b0, L, diag, d2)
                od = P[md, a, b0:b0 + L]
                for j in range(L):
                    od[j] = d2[j]
            if mg >= 0:
                og = P[mg, a, b0:b0 + L]
                qr = Qb[i, jb:jb + L]
                for j in range(L):
                    og[j] = qr[j]


@njit(**JIT)
def products_block(Pb, Qb, Ac, sqa, r0, c0, md, mg, P):
    """One block of a wide group's products into ``P`` (the upper triangle).

    ``Pb`` (rows, cols) the centred product ``A_c[r0:] A_c[c0:]'`` and
    ``Qb`` the uncentred one (either may be empty when not stored), as
    :func:`mklopt._jit.gram._blocks` yields them; distances are derived by
    :func:`mklopt._jit.gram._chunk_dists` exactly as in the dense build.
    ``md`` / ``mg`` the slices of ``P`` written (negative: none). Serial;
    :func:`products_block_par` is the parallel twin (the same bits).
    """
    _block_rows(Pb, Qb, Ac, sqa, r0, c0, md, mg, P, 0, 1)
    return P


@njit(**JIT_PARALLEL)
def products_block_par(Pb, Qb, Ac, sqa, r0, c0, md, mg, P, n_tasks):
    """:func:`products_block` with row ``i`` dealt to task ``i % n_tasks``."""
    for t in prange(n_tasks):
        _block_rows(Pb, Qb, Ac, sqa, r0, c0, md, mg, P, np.int64(t), n_tasks)
    return P
