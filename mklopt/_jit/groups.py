"""Kernel evaluation over a columnar plan of feature groups, in parallel.

A bank's specs are grouped by feature subset (``KernelFunctions`` builds the
plan): group ``g`` reads the features ``feat_idx[feat_ptr[g]:feat_ptr[g+1]]``
and holds the kernels ``kern_idx[kern_ptr[g]:kern_ptr[g+1]]``. Kernel ``k``
has ``kind[k]`` 0 (Gaussian, width ``param[k]``) or 1 (polynomial
``(x.z + offset[k]) ** param[k]``; the linear kernel is degree 1, offset 0).
All Gaussian widths of a group share one squared-distance evaluation per
pair, and all degrees one inner product.

Points come as ``XA`` (rows, C-contiguous ``(na, d)``) and ``XBT`` (the other
side transposed, C-contiguous ``(d, nb)``), so that the innermost loops run
over contiguous columns and vectorise.

Every routine sums the squared distance as ``sum_f (a_f - b_f)^2`` and the
inner product as ``sum_f a_f b_f`` in the group's feature order, starting
from 0.0: a kernel value is the same number
whichever routine computes it and in whichever orientation, so the dense
bank, the on-the-fly rows and the prediction-time cross kernels agree
exactly entry by entry.

Parallel loops (``prange``) run over independent output rows or groups, and
every reduction has a fixed order that does not depend on the number of
threads: the answers are the same on one thread or many.

The long routines take a stop flag ``stop`` ((1,) int64,
:mod:`mklopt._interrupt`) and look at ``stop[0]`` before each row (or row
pair) of the output, and before each row of a quadratic form. Once it is
non-zero the remaining rows are skipped, so every row is either written
whole or left as it was (a symmetric routine then does not mirror, and a
quadratic form not summed to the end is not written). The caller drops
the output (:func:`mklopt._interrupt.check`).
"""

import numpy as np
from numba import njit, prange

from ._options import JIT, JIT_CONTRACT, JIT_PARALLEL
from ._stop import stopped

#: ``kind`` codes.
GAUSSIAN = 0
POLY = 1


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


# exp by range reduction (x = k ln2 + r, |r| <= ln2 / 2), a degree-13 Taylor
# polynomial for exp(r) in Estrin form, and k added to the exponent bits: no
# branch and no call, so LLVM vectorises it (the libm exp is a scalar call).
# Max error about 2 ulp; exp(0) = 1 exactly.
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: t + _SHIFT holds round(t) in its low bits
_SHIFT_BITS = 0x4338000000000000  # the bits of _SHIFT
_EXP_MIN = -708.0  # below e^-708 (~3e-308) results are flushed to zero
_SHIFT_FLUSH = _SHIFT - 1100.0  # marks a flushed input (no valid input rounds to k = -1100)
_EXP_MAX = 709.0


@njit(**JIT_CONTRACT)
def exp_into(x, out, scratch, lo, hi):
    """``out[j] = exp(x[j])`` for ``lo <= j < hi``, vectorised.

    ``x``, ``out`` and ``scratch`` are (n,) float64 (``out`` may be ``x``);
    ``scratch`` is overwritten. Inputs below -708 give 0 (the true value is
    below 3e-308); inputs above 709 are clamped. Within 2 ulp of the libm
    exp elsewhere, and exactly 1 at 0. Compiled with ``JIT_CONTRACT``: the
    polynomial's multiply-adds may be fused (a third faster).
    """
    # Loops over slices from 0: loops from a variable start did not vectorise
    # (3x slower).
    xs = x[lo:hi]
    os = out[lo:hi]
    ts = scratch[lo:hi]
    m = xs.shape[0]
    for j in range(m):
        v = xs[j]
        flush = v < _EXP_MIN
        if flush:
            v = _EXP_MIN
        if v > _EXP_MAX:
            v = _EXP_MAX
        t = v * _LOG2E + _SHIFT
        k = t - _SHIFT
        r = (v - k * _LN2_HI) - k * _LN2_LO
        r2 = r * r
        r4 = r2 * r2
        q0 = (1.0 + r) + r2 * (0.5 + r * 0.16666666666666666)
        q1 = (0.041666666666666664 + r * 0.008333333333333333) + r2 * (
            0.001388888888888889 + r * 0.0001984126984126984
        )
        q2 = (2.48015873015873e-05 + r * 2.7557319223985893e-06) + r2 * (
            2.755731922398589e-07 + r * 2.505210838544172e-08
        )
        q3 = 2.08767569878681e-09 + r * 1.6059043836821613e-10
        # A flushed input is marked in the scratch (out may be x itself).
        ts[j] = _SHIFT_FLUSH if flush else t
        os[j] = (q0 + r4 * q1) + (r4 * r4) * (q2 + r4 * q3)
    tb = ts.view(np.int64)
    ob = os.view(np.int64)
    for j in range(m):
        ob[j] = ob[j] + ((tb[j] - _SHIFT_BITS) << 52)
    for j in range(m):
        if ts[j] == _SHIFT_FLUSH:
            os[j] = 0.0
    return out


@njit(**JIT)
def _needs(kern_idx, k0, k1, kind, wk):
    """Whether the kernels ``kern_idx[k0:k1]`` with ``wk != 0`` need distances / products."""
    need_d = False
    need_g = False
    for kk in range(k0, k1):
        k = kern_idx[kk]
        if wk[k] != 0.0:
            if kind[k] == GAUSSIAN:
                need_d = True
            else:
                need_g = True
    return need_d, need_g


@njit(**JIT)
def _pairs(xa, XBT, feat_idx, f0, f1, b0, b1, need_d, need_g, d2, g2):
    """Distances / products of one point ``xa`` to the columns ``b0..b1-1`` of ``XBT``.

    Written to ``d2[0:b1-b0]`` / ``g2[0:b1-b0]`` (a chunk that stays in cache).
    Both at once in one pass over the features (each column read once; the
    same operations in the same order as two passes, so the same bits): a
    fifth less time on satellite's 36 features.
    """
    L = b1 - b0
    if need_d and need_g:
        for j in range(L):
            d2[j] = 0.0
            g2[j] = 0.0
        for ff in range(f0, f1):
            f = feat_idx[ff]
            x = xa[f]
            col = XBT[f, b0:b1]
            for j in range(L):
                c = col[j]
                t = x - c
                d2[j] += t * t
                g2[j] += x * c
        return
    if need_d:
        for j in range(L):
            d2[j] = 0.0
        for ff in range(f0, f1):
            f = feat_idx[ff]
            x = xa[f]
            col = XBT[f, b0:b1]
            for j in range(L):
                t = x - col[j]
                d2[j] += t * t
    if need_g:
        for j in range(L):
            g2[j] = 0.0
        for ff in range(f0, f1):
            f = feat_idx[ff]
            x = xa[f]
            col = XBT[f, b0:b1]
            for j in range(L):
                g2[j] += x * col[j]


#: Gaussian values are derived by squaring from an exp computed at most this
#: many times smaller in ``gamma`` (relative error below ``2.5 * _POW_MAX`` ulp).
_POW_MAX = 1024.0
#: Values below this are set to 0 before squaring (their square would be subnormal).
_SQ_MIN = 1.4916681462400413e-154


@njit(**JIT)
def _doublings(prev, base, gam):
    """Squarings that turn ``exp(-prev d)`` into ``exp(-gam d)``, or -1 if none do.

    Derivable when ``gam = 2^s prev`` exactly (``s >= 0``) and ``gam`` is at
    most ``_POW_MAX`` times ``base``, the ``gamma`` of the last exp computed.
    """
    if prev <= 0.0 or gam > base * _POW_MAX:
        return -1
    t = prev
    s = 0
    while t < gam and s < 64:
        t *= 2.0
        s += 1
    return s if t == gam else -1


@njit(**JIT)
def gauss_chunk(d2, gam, L, e, scr):
    """``e[0:L] = exp(-gam d2[0:L])``; ``scr`` holds at least ``2 L`` entries.

    The exponent goes to the second half of the work vector and the exp's
    own scratch is the first: input, output and scratch in separate memory,
    which lets :func:`exp_into`'s loops vectorise (in place, ``exp_into(e,
    e, ...)``, they ran about 4x slower, with the same values).
    """
    c = -gam
    h = scr.shape[0] // 2
    t = scr[h:h + L]
    for j in range(L):
        t[j] = d2[j] * c
    exp_into(t, e, scr, 0, L)


@njit(**JIT)
def square_chunk(e, L, s):
    """Square ``e[0:L]`` ``s`` times, values below ``_SQ_MIN`` set to 0 first."""
    for _ in range(s):
        for j in range(L):
            v = e[j]
            if v < _SQ_MIN:
                v = 0.0
            e[j] = v * v


@njit(**JIT)
def poly_chunk(g2, ok, p, L, e, scr):
    """``e[0:L] = (g2[0:L] + ok) ** p`` by repeated squaring (as :func:`_ipow`)."""
    for j in range(L):
        scr[j] = g2[j] + ok
        e[j] = 1.0
    while p > 0:
        if p & 1:
            for j in range(L):
                e[j] *= scr[j]
        p >>= 1
        if p > 0:
            for j in range(L):
                scr[j] *= scr[j]


@njit(**JIT)
def _kernel_chunk(kd, pk, ok, d2, g2, L, e, scr, chain):
    """``e[0:L]`` = one kernel (kind ``kd``, parameter ``pk``, offset ``ok``) on a chunk.

    Gaussian: ``exp(-gamma d2)`` with ``gamma = 1 / (2 pk^2)``; polynomial:
    ``(g2 + ok) ** pk`` by the repeated squaring of :func:`_ipow`, run over
    the chunk so it vectorises and gives the same bits as the scalar routine.

    ``scr`` is a work vector of at least ``2 L`` entries.

    ``chain`` (2,) float64 carries ``(gamma of e's current values, gamma of
    the last exp)`` from the previous kernel of the same group and chunk
    (``chain[0] = 0``: none; callers reset it per group and chunk). A
    Gaussian whose ``gamma`` is ``2^s`` times the previous one's is computed
    as that kernel's values squared ``s`` times: the plan orders a group's
    Gaussians by increasing ``gamma``, so a grid of widths ``2^e`` costs one
    exp per factor ``_POW_MAX`` of ``gamma`` instead of one per kernel.
    Values below ``_SQ_MIN`` square to 0, as exp flushes its results below
    ``e^-708``. Squaring doubles the relative error, so a derived value is
    within ``2.5 gamma / gamma_base`` ulp (at most about 6e-13 relative).
    """
    if kd == GAUSSIAN:
        gam = 0.5 / (pk * pk)
        s = _doublings(chain[0], chain[1], gam)
        if s < 0:
            gauss_chunk(d2, gam, L, e, scr)
            chain[1] = gam
        else:
            square_chunk(e, L, s)
        chain[0] = gam
    else:
        chain[0] = 0.0
        poly_chunk(g2, ok, int(pk), L, e, scr)


#: Columns per chunk: four float64 work vectors of this length fit in L1.
CHUNK = 512


@njit(**JIT_PARALLEL)
def combined_cross(XA, XBT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, wk,
                   groups, out, stop):
    """Combined kernel between two point sets: ``out = sum_k wk[k] kappa_k(XA, XB)``.

    ``XA`` (na, d) and ``XBT`` (d, nb) C-contiguous float64; plan arrays as in
    the module notes; ``wk`` (m,) float64 per-kernel factors (weight over
    normalisation constant; 0 skips the kernel); ``groups`` (G',) int64 the
    groups to visit (those with a non-zero ``wk``); ``out`` (na, nb) float64,
    written. Parallel over the rows of ``XA``, in column chunks; ``stop``
    as in the module notes.
    """
    na = XA.shape[0]
    nb = XBT.shape[1]
    for a in prange(na):
        if stopped(stop):
            continue
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        e = np.empty(CHUNK)
        scr = np.empty(2 * CHUNK)
        chain = np.zeros(2)
        xa = XA[a]
        o = out[a]
        for b0 in range(0, nb, CHUNK):
            b1 = min(nb, b0 + CHUNK)
            L = b1 - b0
            oc = o[b0:b1]
            for j in range(L):
                oc[j] = 0.0
            for gi in range(groups.shape[0]):
                g = groups[gi]
                k0 = kern_ptr[g]
                k1 = kern_ptr[g + 1]
                need_d, need_g = _needs(kern_idx, k0, k1, kind, wk)
                if not (need_d or need_g):
                    continue
                _pairs(xa, XBT, feat_idx, feat_ptr[g], feat_ptr[g + 1], b0, b1, need_d, need_g,
                       d2, g2)
                chain[0] = 0.0  # e holds nothing of this group yet
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
def _slot_needs(kern_idx, k0, k1, kind, slot):
    """Whether the wanted kernels (``slot >= 0``) of a group need distances / products."""
    need_d = False
    need_g = False
    for kk in range(k0, k1):
        k = kern_idx[kk]
        if slot[k] >= 0:
            if kind[k] == GAUSSIAN:
                need_d = True
            else:
                need_g = True
    return need_d, need_g


@njit(**JIT_PARALLEL)
def kernel_cross(XA, XBT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, inv_scale,
                 slot, groups, out, stop):
    """Single kernels between two point sets: ``out[slot[k]] = kappa_k(XA, XB) * inv_scale[k]``.

    ``slot`` (m,) int64 gives the output slice of kernel ``k`` (-1: not
    wanted); ``groups`` (G',) the groups holding wanted kernels; ``out``
    (s, na, nb) float64 or float32, written at the wanted slices. Arithmetic
    is float64, rounded once on store. Parallel over the rows of ``XA``;
    ``stop`` as in the module notes.
    """
    na = XA.shape[0]
    nb = XBT.shape[1]
    for a in prange(na):
        if stopped(stop):
            continue
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        e = np.empty(CHUNK)
        scr = np.empty(2 * CHUNK)
        chain = np.zeros(2)
        xa = XA[a]
        for b0 in range(0, nb, CHUNK):
            b1 = min(nb, b0 + CHUNK)
            L = b1 - b0
            for gi in range(groups.shape[0]):
                g = groups[gi]
                k0 = kern_ptr[g]
                k1 = kern_ptr[g + 1]
                need_d, need_g = _slot_needs(kern_idx, k0, k1, kind, slot)
                if not (need_d or need_g):
                    continue
                _pairs(xa, XBT, feat_idx, feat_ptr[g], feat_ptr[g + 1], b0, b1, need_d, need_g,
                       d2, g2)
                chain[0] = 0.0  # e holds nothing of this group yet
                for kk in range(k0, k1):
                    k = kern_idx[kk]
                    sk = slot[k]
                    if sk < 0:
                        continue
                    _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                    oc = out[sk, a, b0:b1]
                    sc = inv_scale[k]
                    for j in range(L):
                        oc[j] = e[j] * sc
    return out


@njit(**JIT)
def _sym_pair(X, XT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, inv_scale,
              slot, groups, out, rr):
    """Rows ``rr`` and ``n-1-rr`` of :func:`kernel_sym`'s upper triangle."""
    n = X.shape[0]
    d2 = np.empty(CHUNK)
    g2 = np.empty(CHUNK)
    e = np.empty(CHUNK)
    scr = np.empty(2 * CHUNK)
    chain = np.zeros(2)
    for side in range(2):
        a = rr if side == 0 else n - 1 - rr
        if side == 1 and a == rr:
            break
        xa = X[a]
        for b0 in range(a, n, CHUNK):
            b1 = min(n, b0 + CHUNK)
            L = b1 - b0
            for gi in range(groups.shape[0]):
                g = groups[gi]
                k0 = kern_ptr[g]
                k1 = kern_ptr[g + 1]
                need_d, need_g = _slot_needs(kern_idx, k0, k1, kind, slot)
                if not (need_d or need_g):
                    continue
                _pairs(xa, XT, feat_idx, feat_ptr[g], feat_ptr[g + 1], b0, b1, need_d,
                       need_g, d2, g2)
                chain[0] = 0.0  # e holds nothing of this group yet
                for kk in range(k0, k1):
                    k = kern_idx[kk]
                    sk = slot[k]
                    if sk < 0:
                        continue
                    _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                    oc = out[sk, a, b0:b1]
                    sc = inv_scale[k]
                    for j in range(L):
                        oc[j] = e[j] * sc


@njit(**JIT)
def _sym_written(kern_ptr, kern_idx, slot, groups, n_slices):
    """Which output slices :func:`kernel_sym` writes (the others are left as they were)."""
    written = np.zeros(n_slices, dtype=np.bool_)
    for gi in range(groups.shape[0]):
        g = groups[gi]
        for kk in range(kern_ptr[g], kern_ptr[g + 1]):
            if slot[kern_idx[kk]] >= 0:
                written[slot[kern_idx[kk]]] = True
    return written


@njit(**JIT)
def _mirror(o):
    """Copy the upper triangle of the square ``o`` onto its strict lower triangle."""
    n = o.shape[0]
    for a in range(n):
        for b in range(a):
            o[a, b] = o[b, a]


@njit(**JIT_PARALLEL)
def kernel_sym(X, XT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, inv_scale,
               slot, groups, out, stop):
    """Single kernels on one point set, exactly symmetric: ``out[slot[k]] = kappa_k(X, X) * s``.

    As :func:`kernel_cross` with ``XA = X`` (n, d) and ``XBT = XT`` (d, n),
    but only the upper triangle is evaluated and then mirrored, so every
    slice is exactly symmetric. Rows are dealt to threads in pairs
    ``(r, n-1-r)`` so that the triangle's work is balanced. ``stop`` as in
    the module notes: stopped, the upper triangle holds whole rows and
    nothing is mirrored. :func:`kernel_sym_serial` gives the same bits on
    one thread.
    """
    n = X.shape[0]
    half = (n + 1) // 2
    for r in prange(half):
        if stopped(stop):
            continue
        # the prange index may be unsigned; keep index arithmetic signed
        _sym_pair(X, XT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset,
                  inv_scale, slot, groups, out, np.int64(r))
    if stopped(stop):
        return out
    # Mirror the strict lower triangle of the slices written here (others may
    # be filled by the product path of _jit.gram), parallel over slices.
    written = _sym_written(kern_ptr, kern_idx, slot, groups, out.shape[0])
    for s in prange(out.shape[0]):
        if written[s]:
            _mirror(out[s])
    return out


@njit(**JIT)
def kernel_sym_serial(X, XT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset,
                      inv_scale, slot, groups, out, stop):
    """:func:`kernel_sym` on one thread, for banks too small to pay for threads.

    The same rows in the same order of operations, so the same bits; it
    compiles in about half the time of the parallel loop, which is what a
    first fit after install on a small problem waits for.
    """
    n = X.shape[0]
    half = (n + 1) // 2
    for r in range(half):
        if stopped(stop):
            continue
        _sym_pair(X, XT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset,
                  inv_scale, slot, groups, out, np.int64(r))
    if stopped(stop):
        return out
    written = _sym_written(kern_ptr, kern_idx, slot, groups, out.shape[0])
    for s in range(out.shape[0]):
        if written[s]:
            _mirror(out[s])
    return out


@njit(**JIT_PARALLEL)
def combined_sym(X, XT, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, wk, groups,
                 codes, tables, out, mirror, stop):
    """The combined kernel on one point set, ``out = sum_k wk[k] kappa_k(X, X)``, symmetric.

    As :func:`combined_cross` with ``XA = X`` (n, d), ``XBT = XT`` (d, n), but
    only the upper triangle is evaluated (half the work) and then mirrored,
    so ``out`` is exactly symmetric; with ``mirror=False`` the lower triangle
    is left as it was. Rows are dealt to threads in pairs ``(r, n-1-r)``.

    Coded groups are added in the same pass: ``codes`` (G, n) int64 and
    ``tables`` (G, u, u) float64 (padded to the largest ``u``; G = 0 for
    none) add ``sum_g T_g[c_ga, c_gb]`` to entry ``(a, b)`` after the direct
    groups, in the order of ``g``, while the chunk of the row is in cache
    (one pass over the output instead of two). ``stop`` as in the module
    notes: stopped, nothing is mirrored.
    """
    n = X.shape[0]
    G = codes.shape[0]
    half = (n + 1) // 2
    for r in prange(half):
        if stopped(stop):
            continue
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        e = np.empty(CHUNK)
        scr = np.empty(2 * CHUNK)
        chain = np.zeros(2)
        rr = np.int64(r)
        for side in range(2):
            a = rr if side == 0 else n - 1 - rr
            if side == 1 and a == rr:
                break
            xa = X[a]
            o = out[a]
            for b0 in range(a, n, CHUNK):
                b1 = min(n, b0 + CHUNK)
                L = b1 - b0
                oc = o[b0:b1]
                for j in range(L):
                    oc[j] = 0.0
                for gi in range(groups.shape[0]):
                    g = groups[gi]
                    k0 = kern_ptr[g]
                    k1 = kern_ptr[g + 1]
                    need_d, need_g = _needs(kern_idx, k0, k1, kind, wk)
                    if not (need_d or need_g):
                        continue
                    _pairs(xa, XT, feat_idx, feat_ptr[g], feat_ptr[g + 1], b0, b1, need_d,
                           need_g, d2, g2)
                    chain[0] = 0.0  # e holds nothing of this group yet
                    for kk in range(k0, k1):
                        k = kern_idx[kk]
                        wv = wk[k]
                        if wv == 0.0:
                            continue
                        _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                        for j in range(L):
                            oc[j] += wv * e[j]
                for t in range(G):
                    trow = tables[t, codes[t, a]]
                    cc = codes[t, b0:b1]
                    for j in range(L):
                        oc[j] += trow[cc[j]]
    if mirror and not stopped(stop):
        mirror_upper(out)
    return out


#: Tile edge of :func:`mirror_upper` (two 64 x 64 float64 tiles fit in L1).
_TILE = 64


@njit(**JIT_PARALLEL)
def mirror_upper(out):
    """Copy the upper triangle of the square ``out`` onto its lower triangle.

    Tile by tile, so that the transposed reads stay in cache; tile rows are
    dealt to threads in pairs ``(r, nt-1-r)`` to balance the triangle.
    """
    n = out.shape[0]
    nt = (n + _TILE - 1) // _TILE
    half = (nt + 1) // 2
    for r in prange(half):
        rr = np.int64(r)
        for side in range(2):
            ti = rr if side == 0 else nt - 1 - rr
            if side == 1 and ti == rr:
                break
            i0 = ti * _TILE
            i1 = min(n, i0 + _TILE)
            for tj in range(ti + 1):
                j0 = tj * _TILE
                j1 = min(n, j0 + _TILE)
                for i in range(i0, i1):
                    o = out[i]
                    for j in range(j0, min(j1, i)):
                        o[j] = out[j, i]
    return out


@njit(**JIT_PARALLEL)
def tables_rows(codes, tables, idx, out):
    """Add rows of coded groups: ``out[r, b] += sum_g T_g[c_g[idx[r]], c_gb]``.

    The coded groups of :func:`combined_sym` for the rows ``idx`` (r,) only;
    ``out`` (r, n), accumulated. One pass over each output row for all groups.
    """
    n = codes.shape[1]
    G = codes.shape[0]
    for r in prange(idx.shape[0]):
        o = out[r]
        i = idx[r]
        for g in range(G):
            trow = tables[g, codes[g, i]]
            cg = codes[g]
            for b in range(n):
                o[b] += trow[cg[b]]
    return out


@njit(**JIT_PARALLEL)
def combined_diag(X, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, wk, groups,
                  out):
    """Diagonal of the combined kernel: ``out[i] = sum_k wk[k] kappa_k(x_i, x_i)``.

    Gaussian kernels contribute ``wk[k]`` (``exp(0) = 1``), polynomial ones
    ``wk[k] (|x_F|^2 + offset)^degree``. ``X`` (n, d); ``out`` (n,), written.
    """
    n = X.shape[0]
    for i in prange(n):
        x = X[i]
        total = 0.0
        for gi in range(groups.shape[0]):
            g = groups[gi]
            sq = -1.0
            for kk in range(kern_ptr[g], kern_ptr[g + 1]):
                k = kern_idx[kk]
                wv = wk[k]
                if wv == 0.0:
                    continue
                if kind[k] == GAUSSIAN:
                    total += wv
                else:
                    if sq < 0.0:
                        sq = 0.0
                        for ff in range(feat_ptr[g], feat_ptr[g + 1]):
                            f = feat_idx[ff]
                            sq += x[f] * x[f]
                    total += wv * _ipow(sq + offset[k], int(param[k]))
        out[i] = total
    return out


@njit(**JIT)
def raw_traces(X, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset, out):
    """Traces of the raw (unnormalised) kernels on ``X``: ``out[k] = sum_i kappa_k(x_i, x_i)``.

    Gaussian kernels have trace ``n``; polynomial ones ``sum_i (|x_iF|^2 +
    offset)^degree``. ``out`` (m,), written.

    Serial: the work is ``O(n |F|)`` per group, tens of microseconds for a
    grid on a thousand points, while a parallel launch right after a BLAS
    call waited milliseconds for OpenBLAS's spinning threads to give up the
    second core (measured: 7.5 ms against 0.03 ms serial, 45 such calls made
    up the 80 ms of a 10-class digits fit spent here).
    """
    n = X.shape[0]
    G = kern_ptr.shape[0] - 1
    for g in range(G):
        sq = np.empty(n)
        have_sq = False
        for kk in range(kern_ptr[g], kern_ptr[g + 1]):
            k = kern_idx[kk]
            if kind[k] == GAUSSIAN:
                out[k] = float(n)
                continue
            if not have_sq:
                for i in range(n):
                    s = 0.0
                    for ff in range(feat_ptr[g], feat_ptr[g + 1]):
                        f = feat_idx[ff]
                        s += X[i, f] * X[i, f]
                    sq[i] = s
                have_sq = True
            p = int(param[k])
            c0 = offset[k]
            t = 0.0
            for i in range(n):
                t += _ipow(sq[i] + c0, p)
            out[k] = t
    return out


@njit(**JIT)
def _group_quad(XS, XST, vS, feat_idx, f0, f1, kern_idx, k0, k1, kind, param, offset,
                inv_scale, slot, a0, a1, step, d2, g2, e, scr, acc, stop):
    """Add the pairs ``a = a0, a0 + step, ... < a1`` of one group to ``acc[kk - k0]``.

    For each wanted kernel of the group, ``acc += v_a (v_a kappa(a, a) + 2 sum_{b > a}
    v_b kappa(a, b)) * inv_scale``: the upper triangle of ``v' K v``. Columns
    are visited in chunks; the work vectors hold one chunk. Returns False
    if ``stop[0]`` was found set before the last row (``acc`` incomplete).
    """
    s = XS.shape[0]
    need_d, need_g = _slot_needs(kern_idx, k0, k1, kind, slot)
    if not (need_d or need_g):
        return True
    nk = k1 - k0
    part = np.empty(nk)
    chain = np.zeros(2)
    for a in range(a0, a1, step):
        if stopped(stop):
            return False
        va = vS[a]
        if va == 0.0:
            continue
        xa = XS[a]
        for kk in range(nk):
            part[kk] = 0.0
        for b0 in range(a + 1, s, CHUNK):
            b1 = min(s, b0 + CHUNK)
            L = b1 - b0
            _pairs(xa, XST, feat_idx, f0, f1, b0, b1, need_d, need_g, d2, g2)
            chain[0] = 0.0  # e holds nothing of this group yet
            for kk in range(k0, k1):
                k = kern_idx[kk]
                if slot[k] < 0:
                    continue
                _kernel_chunk(kind[k], param[k], offset[k], d2, g2, L, e, scr, chain)
                vb = vS[b0:b1]
                t = 0.0
                for j in range(L):
                    t += vb[j] * e[j]
                part[kk - k0] += t
        sq = 0.0
        if need_g:
            for ff in range(f0, f1):
                f = feat_idx[ff]
                sq += xa[f] * xa[f]
        for kk in range(k0, k1):
            k = kern_idx[kk]
            if slot[k] < 0:
                continue
            diag = 1.0 if kind[k] == GAUSSIAN else _ipow(sq + offset[k], int(param[k]))
            acc[kk - k0] += va * (va * diag + 2.0 * part[kk - k0]) * inv_scale[k]
    return True


@njit(**JIT_PARALLEL)
def quad_forms_by_group(XS, XST, vS, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset,
                        inv_scale, slot, groups, out, stop):
    """Quadratic forms ``out[slot[k]] = v_S' K_k[S, S] v_S`` computed from the features.

    ``XS`` (s, d) and ``XST`` (d, s) hold the support points, ``vS`` (s,)
    their ``v``. Parallel over ``groups`` (the right split when there are
    many groups, e.g. one kernel per random feature subset); each group is
    summed serially over its upper triangle. ``stop`` as in the module
    notes: a group stopped part-way writes nothing.
    """
    s = XS.shape[0]
    for gi in prange(groups.shape[0]):
        g = groups[gi]
        k0 = kern_ptr[g]
        k1 = kern_ptr[g + 1]
        acc = np.zeros(k1 - k0)
        d2 = np.empty(CHUNK)
        g2 = np.empty(CHUNK)
        e = np.empty(CHUNK)
        scr = np.empty(2 * CHUNK)
        done = _group_quad(XS, XST, vS, feat_idx, feat_ptr[g], feat_ptr[g + 1], kern_idx, k0, k1,
                           kind, param, offset, inv_scale, slot, 0, s, 1, d2, g2, e, scr, acc,
                           stop)
        if not done:
            continue
        for kk in range(k0, k1):
            k = kern_idx[kk]
            if slot[k] >= 0:
                out[slot[k]] = acc[kk - k0]
    return out


@njit(**JIT_PARALLEL)
def quad_forms_by_rows(XS, XST, vS, feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset,
                       inv_scale, slot, groups, n_chunks, out, stop):
    """As :func:`quad_forms_by_group`, parallel over rows of the support instead.

    The right split for a few groups on many points. Rows are dealt to
    ``n_chunks`` interleaved chunks (row ``a`` to chunk ``a % n_chunks``,
    which balances the triangle); each chunk sums into its own
    accumulator, and the chunks are added in order afterwards, so the
    result does not depend on the number of threads. ``stop`` as in the
    module notes: a group stopped part-way writes nothing, and the groups
    after it are not started.
    """
    s = XS.shape[0]
    for gi in range(groups.shape[0]):
        g = groups[gi]
        k0 = kern_ptr[g]
        k1 = kern_ptr[g + 1]
        parts = np.zeros((n_chunks, k1 - k0))
        done = np.ones(n_chunks, dtype=np.bool_)
        for c in prange(n_chunks):
            d2 = np.empty(CHUNK)
            g2 = np.empty(CHUNK)
            e = np.empty(CHUNK)
            scr = np.empty(2 * CHUNK)
            done[c] = _group_quad(XS, XST, vS, feat_idx, feat_ptr[g], feat_ptr[g + 1], kern_idx,
                                  k0, k1, kind, param, offset, inv_scale, slot, c, s, n_chunks,
                                  d2, g2, e, scr, parts[c], stop)
        if not done.all():
            return out
        for kk in range(k0, k1):
            k = kern_idx[kk]
            if slot[k] >= 0:
                t = 0.0
                for c in range(n_chunks):
                    t += parts[c, kk - k0]
                out[slot[k]] = t
    return out
