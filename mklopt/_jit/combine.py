"""Hot path of the MKL oracle: combined kernel and per-kernel quadratic forms.

``K`` may be float64 or float32 (a float32 bank halves memory and traffic);
sums are always accumulated in float64.

Design notes, from timings on 2 cores with n = 175 and m = 455 (a 111 MB
bank; ``benchmarks/bench_kernels.py`` (retired; at commit ``89ee8cc``) times the public calls):

- ``combine_kernels`` streams each active ``K[k]`` as one flat contiguous
  vector and folds four kernels into ``out`` per pass, which cuts the
  read-modify-write traffic on ``out`` by four (about 1.4x faster than one
  kernel per pass). Reading only the upper triangle and mirroring was
  *slower* (short, ragged rows vectorise worse than one long stream), and
  ``parallel=True`` gained little and lost on sparse weights, so it is serial.
- ``quad_forms`` is a gather (``K[k, S, S]``) with a reduction; without
  ``fastmath`` reductions do not vectorise, so four independent accumulators
  give the CPU instruction-level parallelism instead (about 1.2x), and
  symmetry halves the reads. A ``parallel=True`` loop over kernels was about
  2x faster on 2 idle cores but 1.5-2x *slower* when the other core was busy
  (the parallel region waits for its slowest thread), which is the normal
  situation under cross-validation with several jobs; so it stays serial.

Every function that can run long takes a stop flag ``stop`` ((1,) int64,
:mod:`mklopt._interrupt`) and looks at ``stop[0]`` between blocks of work:
between passes of four kernels (``combine_kernels``), between kernels
(``quad_forms``) and between rows (the row functions). Once it is non-zero
they return early; what they wrote is whole (a prefix of the kernel
passes, whole entries of ``out``, whole rows) and the rest is left as it
was. The caller then drops the output (:func:`mklopt._interrupt.check`).
"""

import numpy as np
from numba import njit

from ._options import JIT
from ._stop import stopped


@njit(**JIT)
def _active(w):
    """Indices ``k`` with ``w[k] != 0`` as an int64 array."""
    m = w.shape[0]
    idx = np.empty(m, dtype=np.int64)
    n_active = 0
    for k in range(m):
        if w[k] != 0.0:
            idx[n_active] = k
            n_active += 1
    return idx[:n_active]


@njit(**JIT)
def combine_kernels(K, w, out, stop):
    """Weighted sum of kernel matrices: ``out = sum_k w[k] K[k]``.

    ``K`` is a C-contiguous (m, n, n) float64 or float32 array, ``w`` is (m,)
    float64 and ``out`` is a C-contiguous (n, n) float64 array, written.
    Kernels with ``w[k] == 0`` are not read. If every ``K[k]`` is exactly
    symmetric, so is ``out``. A set ``stop[0]`` ends the sum between two
    passes: ``out`` then holds the sum of the first active kernels only.
    """
    n = K.shape[1]
    N = n * n
    o = out.reshape(N)
    for j in range(N):
        o[j] = 0.0
    act = _active(w)
    na = act.shape[0]
    a = 0
    while a + 3 < na:
        if stopped(stop):
            return out
        k0 = act[a]
        k1 = act[a + 1]
        k2 = act[a + 2]
        k3 = act[a + 3]
        w0 = w[k0]
        w1 = w[k1]
        w2 = w[k2]
        w3 = w[k3]
        r0 = K[k0].reshape(N)
        r1 = K[k1].reshape(N)
        r2 = K[k2].reshape(N)
        r3 = K[k3].reshape(N)
        for j in range(N):
            o[j] += w0 * r0[j] + w1 * r1[j] + w2 * r2[j] + w3 * r3[j]
        a += 4
    while a < na:
        if stopped(stop):
            return out
        k0 = act[a]
        w0 = w[k0]
        r0 = K[k0].reshape(N)
        for j in range(N):
            o[j] += w0 * r0[j]
        a += 1
    return out


@njit(**JIT)
def quad_forms(K, v, support, kernels, out, stop):
    """Quadratic forms over a support: ``out[j] = v_S' K[kernels[j]][S, S] v_S``.

    ``K`` is a C-contiguous (m, n, n) float64 or float32 array of symmetric
    matrices; ``v`` is the full (n,) float64 vector (in the oracle
    ``v = alpha * y``); ``support`` is (s,) int64 of distinct indices ``S``
    (entries of ``v`` outside it are ignored); ``kernels`` (r,) int64 the
    kernels wanted; ``out`` is (r,) float64, written. Uses symmetry,
    ``sum_a v_a^2 K_aa + 2 sum_{a<b} v_a v_b K_ab``, so only the upper
    triangle of ``K[k][S, S]`` is read; sorted support indices keep the row
    reads monotone. A set ``stop[0]`` ends the loop between two kernels:
    the entries of ``out`` not reached are left as they were.
    """
    s = support.shape[0]
    vs = np.empty(s, dtype=np.float64)
    for a in range(s):
        vs[a] = v[support[a]]
    for j in range(kernels.shape[0]):
        if stopped(stop):
            return out
        Kk = K[kernels[j]]
        total = 0.0
        for a in range(s):
            r = Kk[support[a]]
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            b = a + 1
            while b + 3 < s:
                a0 += vs[b] * r[support[b]]
                a1 += vs[b + 1] * r[support[b + 1]]
                a2 += vs[b + 2] * r[support[b + 2]]
                a3 += vs[b + 3] * r[support[b + 3]]
                b += 4
            while b < s:
                a0 += vs[b] * r[support[b]]
                b += 1
            total += vs[a] * (vs[a] * r[support[a]] + 2.0 * ((a0 + a1) + (a2 + a3)))
        out[j] = total
    return out


@njit(**JIT)
def combine_rows(K, w, idx, out, stop):
    """Rows of the combined kernel: ``out[r] = sum_k w[k] K[k][idx[r]]``.

    ``K`` is (m, n, n) float64 or float32 (a memory map works: each row is
    read once per active kernel); ``w`` is (m,) float64; ``idx`` (r,) int64;
    ``out`` (r, n) float64, written. Kernels with ``w[k] == 0`` are not read;
    four kernels are folded into a row per pass. A set ``stop[0]`` ends the
    loop between two rows; the rows not reached are left as they were.
    """
    n = K.shape[2]
    act = _active(w)
    na = act.shape[0]
    for r in range(idx.shape[0]):
        if stopped(stop):
            return out
        i = idx[r]
        o = out[r]
        for j in range(n):
            o[j] = 0.0
        a = 0
        while a + 3 < na:
            k0 = act[a]
            k1 = act[a + 1]
            k2 = act[a + 2]
            k3 = act[a + 3]
            w0 = w[k0]
            w1 = w[k1]
            w2 = w[k2]
            w3 = w[k3]
            r0 = K[k0, i]
            r1 = K[k1, i]
            r2 = K[k2, i]
            r3 = K[k3, i]
            for j in range(n):
                o[j] += w0 * r0[j] + w1 * r1[j] + w2 * r2[j] + w3 * r3[j]
            a += 4
        while a < na:
            k0 = act[a]
            w0 = w[k0]
            r0 = K[k0, i]
            for j in range(n):
                o[j] += w0 * r0[j]
            a += 1
    return out


@njit(**JIT)
def gather_blocks(K, kernels, rows, cols, out):
    """Single-kernel blocks: ``out[j, a, b] = K[kernels[j], rows[a], cols[b]]``.

    ``K`` is (m, n, n) float64 or float32 (a memory map works: only the
    requested rows are read); ``kernels`` (r,), ``rows`` (p,) and ``cols``
    (c,) int64 (repeats allowed); ``out`` (r, p, c) float64, written. Each
    requested row is read once, contiguously; the boosting oracle asks for
    the sample's rows against all columns, which is then a row copy.
    """
    n = K.shape[2]
    full = cols.shape[0] == n
    if full:
        for b in range(n):
            if cols[b] != b:
                full = False
                break
    for j in range(kernels.shape[0]):
        Kk = K[kernels[j]]
        for a in range(rows.shape[0]):
            src = Kk[rows[a]]
            dst = out[j, a]
            if full:
                for b in range(n):
                    dst[b] = src[b]
            else:
                for b in range(cols.shape[0]):
                    dst[b] = src[cols[b]]
    return out


@njit(**JIT)
def view_row(K, w, kernels, gidx, i, out):
    """One row of a combined kernel over an index view of a bank.

    ``out[c] = sum_a w[a] K[kernels[a], gidx[i], gidx[c]]`` for every
    ``c < len(gidx)``. ``K`` (m, N, N) float64 or float32 holds the kernels
    of all points; the view is the sub-matrix on the points ``gidx`` ((n,)
    int64, ascending: reads along a row stay monotone), so a binary problem
    of a multiclass fit reads its block of one shared bank without copying
    it. ``w`` (r,) float64 weights of the kernels ``kernels`` (r,) int64
    (those with a non-zero weight); ``out`` (n,) float64, written. Four
    kernels are folded per pass, as in :func:`combine_rows`; the sum order
    is fixed, so a row is the same number whoever asks for it and the
    whole view (:func:`combine_view`) is exactly symmetric.
    """
    n = gidx.shape[0]
    g = gidx[i]
    for c in range(n):
        out[c] = 0.0
    na = kernels.shape[0]
    a = 0
    while a + 3 < na:
        w0 = w[a]
        w1 = w[a + 1]
        w2 = w[a + 2]
        w3 = w[a + 3]
        r0 = K[kernels[a], g]
        r1 = K[kernels[a + 1], g]
        r2 = K[kernels[a + 2], g]
        r3 = K[kernels[a + 3], g]
        for c in range(n):
            u = gidx[c]
            out[c] += w0 * r0[u] + w1 * r1[u] + w2 * r2[u] + w3 * r3[u]
        a += 4
    while a < na:
        w0 = w[a]
        r0 = K[kernels[a], g]
        for c in range(n):
            out[c] += w0 * r0[gidx[c]]
        a += 1
    return out


@njit(**JIT)
def view_rows(K, w, kernels, gidx, idx, out, stop):
    """Rows ``idx`` ((r,) int64, local) of a view's combined kernel into ``out`` (r, n).

    See :func:`view_row`; ``stop`` as for :func:`combine_rows`.
    """
    for r in range(idx.shape[0]):
        if stopped(stop):
            return out
        view_row(K, w, kernels, gidx, idx[r], out[r])
    return out


@njit(**JIT)
def combine_view(K, w, kernels, gidx, out, stop):
    """The whole combined kernel of a view into ``out`` (n, n) float64, row by row.

    Every row by :func:`view_row`, so the matrix is exactly symmetric;
    ``stop`` as for :func:`combine_rows`.
    """
    for i in range(gidx.shape[0]):
        if stopped(stop):
            return out
        view_row(K, w, kernels, gidx, i, out[i])
    return out


@njit(**JIT)
def view_diag(K, w, kernels, gidx, out):
    """Diagonal of a view's combined kernel, ``out`` (n,) float64, written.

    Summed exactly as :func:`view_row` sums entry ``(i, i)`` (four kernels
    folded per pass, in the same order), so the lazy SMO path sees the
    diagonal of the matrix :func:`combine_view` would form, bit for bit.
    """
    n = gidx.shape[0]
    na = kernels.shape[0]
    for i in range(n):
        g = gidx[i]
        o = 0.0
        a = 0
        while a + 3 < na:
            o += (w[a] * K[kernels[a], g, g] + w[a + 1] * K[kernels[a + 1], g, g]
                  + w[a + 2] * K[kernels[a + 2], g, g] + w[a + 3] * K[kernels[a + 3], g, g])
            a += 4
        while a < na:
            o += w[a] * K[kernels[a], g, g]
            a += 1
        out[i] = o
    return out


#: Rows and columns of the tiles :func:`symmetry_scan` pairs ``A[i, j]``
#: and ``A[j, i]`` in: a tile and its mirror stay in cache.
SCAN_TILE = 64


@njit(**JIT)
def symmetry_scan(A, stop):
    """``(finite, amax, asym)`` of a square matrix in one pass.

    ``finite`` says whether every entry is finite; ``amax = max |A_ij|`` and
    ``asym = max |A_ij - A_ji|`` (meaningless when not ``finite``). ``A`` is
    a C-contiguous float64 or float32 matrix; each pair ``i <= j`` is read
    once, in tiles of :data:`SCAN_TILE` whose mirrors stay in cache, where
    ``max(abs(A))`` and ``max(abs(A - A.T))`` in NumPy read the matrix three
    times and the transpose against the cache. A non-finite entry makes
    ``x * 0`` NaN, so one running sum of those detects any. A set
    ``stop[0]`` ends the scan between two tiles (the result is then
    incomplete; the caller drops it).
    """
    n = A.shape[0]
    amax = 0.0
    asym = 0.0
    nan = 0.0
    for i0 in range(0, n, SCAN_TILE):
        if stopped(stop):
            break
        i1 = min(n, i0 + SCAN_TILE)
        for j0 in range(i0, n, SCAN_TILE):
            j1 = min(n, j0 + SCAN_TILE)
            for i in range(i0, i1):
                row = A[i]
                for j in range(max(j0, i), j1):
                    a = np.float64(row[j])
                    b = np.float64(A[j, i])
                    nan += a * 0.0 + b * 0.0
                    d = abs(a - b)
                    if d > asym:
                        asym = d
                    a = max(abs(a), abs(b))
                    if a > amax:
                        amax = a
    return nan == 0.0, amax, asym


@njit(**JIT)
def diagonally_dominant(A, shift, slack):
    """Whether ``A_ii + shift >= (1 + n eps) sum_{j != i} |A_ij| + slack`` for every row ``i``.

    A sufficient test that the symmetric matrix of ``A``'s rows is PSD
    within ``shift``: by Gershgorin's circle theorem every eigenvalue lies
    in a disc centred at some ``A_ii`` of radius ``sum_{j != i} |A_ij|``,
    so ``lambda_min >= min_i (A_ii - sum_{j != i} |A_ij|) >= -shift``. The
    factor ``1 + n eps`` covers the rounding of the float64 sums; the
    caller's ``slack`` covers an asymmetry (``(n - 1) max|A - A'|`` bounds
    the radius of either triangle's symmetric matrix beyond the row's).
    ``A`` is a C-contiguous float64 or float32 matrix. A row that fails
    ends the test: a kernel that is not dominant (a wide Gaussian, any
    polynomial kernel) is rejected after a few entries of its first row.
    """
    n = A.shape[0]
    grow = 1.0 + n * 2.220446049250313e-16
    for i in range(n):
        row = A[i]
        d = np.float64(row[i])
        # The whole row's sum, the diagonal included: |d| + radius <= budget
        # (a row with d + shift - slack < 0 fails by the block holding d).
        budget = abs(d) * grow + d + shift - slack
        s = 0.0
        for j0 in range(0, n, 64):  # the budget is checked between blocks of 64 entries
            t = 0.0
            for j in range(j0, min(n, j0 + 64)):
                t += abs(np.float64(row[j]))
            s += t
            if s * grow > budget:
                return False
    return True
