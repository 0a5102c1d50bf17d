"""Hot path of the MKL oracle: combined kernel and per-kernel quadratic forms.

``K`` may be float64 or float32 (a float32 bank halves memory and traffic);
sums are always accumulated in float64.

Design notes, from timings on 2 cores with n = 175 and m = 455 (a 111 MB
bank; ``benchmarks/bench_kernels.py`` times the public calls):

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
"""

import numpy as np
from numba import njit

from ._options import JIT


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
def combine_kernels(K, w, out):
    """Weighted sum of kernel matrices: ``out = sum_k w[k] K[k]``.

    ``K`` is a C-contiguous (m, n, n) float64 or float32 array, ``w`` is (m,)
    float64 and ``out`` is a C-contiguous (n, n) float64 array, written.
    Kernels with ``w[k] == 0`` are not read. If every ``K[k]`` is exactly
    symmetric, so is ``out``.
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
        k0 = act[a]
        w0 = w[k0]
        r0 = K[k0].reshape(N)
        for j in range(N):
            o[j] += w0 * r0[j]
        a += 1
    return out


@njit(**JIT)
def quad_forms(K, v, support, kernels, out):
    """Quadratic forms over a support: ``out[j] = v_S' K[kernels[j]][S, S] v_S``.

    ``K`` is a C-contiguous (m, n, n) float64 or float32 array of symmetric
    matrices; ``v`` is the full (n,) float64 vector (in the oracle
    ``v = alpha * y``); ``support`` is (s,) int64 of distinct indices ``S``
    (entries of ``v`` outside it are ignored); ``kernels`` (r,) int64 the
    kernels wanted; ``out`` is (r,) float64, written. Uses symmetry,
    ``sum_a v_a^2 K_aa + 2 sum_{a<b} v_a v_b K_ab``, so only the upper
    triangle of ``K[k][S, S]`` is read; sorted support indices keep the row
    reads monotone.
    """
    s = support.shape[0]
    vs = np.empty(s, dtype=np.float64)
    for a in range(s):
        vs[a] = v[support[a]]
    for j in range(kernels.shape[0]):
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
def combine_rows(K, w, idx, out):
    """Rows of the combined kernel: ``out[r] = sum_k w[k] K[k][idx[r]]``.

    ``K`` is (m, n, n) float64 or float32 (a memory map works: each row is
    read once per active kernel); ``w`` is (m,) float64; ``idx`` (r,) int64;
    ``out`` (r, n) float64, written. Kernels with ``w[k] == 0`` are not read;
    four kernels are folded into a row per pass.
    """
    n = K.shape[2]
    act = _active(w)
    na = act.shape[0]
    for r in range(idx.shape[0]):
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
